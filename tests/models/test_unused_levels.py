"""Declared levels that no record holds (issue 46, item 5).

A pandas ``Categorical`` with an unused category (or a level given in
``infer_schema(levels=...)``) declared a level the data does not hold; a DPMPM, whose prior
covers every level, released it (``'Other'`` 3 times in 600 rows). Every synthesizer that could
release it (DPMPM, the sequential regressions, random forests) drops such a level at ``fit``
with warning ``UNUSED_LEVEL`` unless the schema keeps it (``keep_unused_levels``); CART and
PMM release donors' values only and keep the declared levels, which they never release; a
refit of a fitted model keeps the model's levels.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

from bayes_risk.cli import main
from bayes_risk.data import infer_schema
from bayes_risk.data.schema import ColumnSpec, Schema
from bayes_risk.exceptions import DataWarning
from bayes_risk.models import Sampling, get_synthesizer, list_synthesizers, load_model

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")

_MCMC = {"sampling": Sampling(tune=10, draws=20, chains=1, cores=1), "progressbar": False}
N = 120

#: how each registered synthesizer is fitted here: settings, columns, fit keywords; ``None``:
#: a model of count columns only, which has no levels to declare
CASES: dict[str, tuple[dict[str, Any], list[str], dict[str, Any]] | None] = {
    "cart": ({"min_leaf": 5}, ["sex", "mar", "income"], {"synthesized": ["mar", "income"]}),
    "rf": ({"n_trees": 10}, ["sex", "mar", "income"], {"synthesized": ["mar"]}),
    "pmm": ({"identifying": ["sex", "mar"], "threshold": 2}, ["sex", "mar", "income"], {}),
    "dpmpm": ({"n_components": 3, **_MCMC}, ["sex", "mar"], {}),
    "regression": ({"posterior_method": "laplace", **_MCMC}, ["sex", "mar", "income"],
                   {"synthesized": ["mar", "income"]}),
    "poisson-mixture": None,
    # a model written in PyMC: its categorical columns' levels are the schema's after the fit's
    # check, so the model function sees the levels the records hold
    "pymc": ({"model_function": "_pymc_models:categorical_chain", **_MCMC}, ["sex", "mar"], {}),
    "dp-multinomial": ({"epsilon": 1.0}, ["sex", "mar"], {}),
}


def _table(unused: str | None = "divorced") -> pd.DataFrame:
    rng = np.random.default_rng(46)
    mar = rng.choice(["married", "single", "widowed"], N, p=[0.5, 0.35, 0.15])
    cats = ["married", "single", "widowed"] + ([unused] if unused else [])
    return pd.DataFrame({
        "sex": pd.Categorical(rng.choice(["F", "M"], N)),
        "mar": pd.Categorical(mar, categories=cats),
        "income": np.round(rng.lognormal(10, 0.4, N), 2),
    })


def _fit(name: str, data: pd.DataFrame, **kw: Any) -> tuple[Any, list[warnings.WarningMessage]]:
    settings, cols, fit_kw = CASES[name]  # type: ignore[misc]
    model = get_synthesizer(name)(**settings)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(data[cols], random_seed=1, **{**fit_kw, **kw})
    return model, [w for w in caught if getattr(w.message, "code", None) == "UNUSED_LEVEL"]


def test_every_registered_synthesizer_has_a_case():
    assert set(CASES) == set(list_synthesizers())


#: synthesizers that release donors' values only (``ModelInfo.releases_donor_values``): they
#: cannot release a level no record holds, and keep the declared levels
DONORS = ("cart", "pmm")


#: synthesizers whose privacy guarantee needs a domain fixed before the data are seen: the
#: declared levels are the domain (dropping an unused one would depend on the records)
DECLARED_DOMAIN = ("dp-multinomial",)


@pytest.mark.parametrize("name", [n for n, c in CASES.items()
                                  if c is not None and n not in DONORS + DECLARED_DOMAIN])
def test_fit_drops_a_level_no_record_holds(name):
    model, caught = _fit(name, _table())
    assert len(caught) == 1, [str(w.message) for w in caught]
    msg = str(caught[0].message)
    assert "'mar': 'divorced'" in msg and "keep_unused_levels=['mar']" in msg
    assert model.schema_["mar"].levels == ("married", "single", "widowed")
    syn = model.synthesize(3, random_seed=2)
    assert all(not (z["mar"] == "divorced").any() for z in syn)
    assert "divorced" not in syn.schema["mar"].levels  # the manifest's schema
    # a table whose categories are all used gives no warning
    _, none = _fit(name, _table(unused=None))
    assert not none


@pytest.mark.parametrize("name", DONORS)
def test_donor_synthesizers_keep_the_declared_levels_and_never_release_them(name):
    from bayes_risk.contract import capabilities

    assert capabilities(get_synthesizer(name)).releases_donor_values
    model, caught = _fit(name, _table())
    assert not caught
    assert model.schema_["mar"].levels == ("married", "single", "widowed", "divorced")
    syn = model.synthesize(5, random_seed=2)
    assert all(not (z["mar"] == "divorced").any() for z in syn)


def test_the_dp_synthesizer_keeps_its_declared_domain():
    """ε-DP holds for a domain fixed before the records are seen: every declared level is a
    cell with its prior count, one no record holds included, and is released at that rate."""
    model, caught = _fit("dp-multinomial", _table())
    assert not caught
    assert model.schema_["mar"].levels == ("married", "single", "widowed", "divorced")
    syn = model.synthesize(5, random_seed=2)
    assert sum(int((z["mar"] == "divorced").sum()) for z in syn) > 0


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c is not None])
def test_a_level_is_kept_when_asked(name):
    data = _table()
    settings, cols, fit_kw = CASES[name]  # type: ignore[misc]
    schema = infer_schema(data[cols], keep_unused_levels=["mar"])
    if name == "regression":
        # a regression with 'mar' as a predictor cannot estimate the coefficient of a level
        # no record holds: kept, the level makes the design rank-deficient, and it says so
        from bayes_risk.exceptions import ValidationError

        with pytest.raises(ValidationError, match="level that never occurs"):
            _fit(name, data, schema=schema)
        return
    model, caught = _fit(name, data, schema=schema)
    assert not caught
    spec = model.schema_["mar"]
    assert spec.levels == ("married", "single", "widowed", "divorced") and spec.keep_unused_levels
    assert model.synthesize(1, random_seed=3).schema["mar"].keep_unused_levels


def test_poisson_mixture_has_no_levels_to_declare():
    # count columns only: a categorical column is refused before any level matters
    from bayes_risk.exceptions import SchemaError

    pm = get_synthesizer("poisson-mixture")(n_components=2, **_MCMC)
    with pytest.raises(SchemaError) as info:
        pm.fit(_table(unused=None)[["mar"]])
    assert info.value.code == "WRONG_DTYPE"


def test_the_dpmpm_of_the_issue_releases_no_undeclared_level():
    """600 records, none 'Other': DPMPM released 'Other' 3 times; now never, unless kept."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({
        "A": pd.Categorical(rng.choice(["x", "y"], 600), categories=["x", "y", "Other"]),
        "B": pd.Categorical(rng.choice(["u", "v", "w"], 600)),
    })
    DPMPM = get_synthesizer("dpmpm")
    kw = dict(n_components=5,
              sampling=Sampling(tune=60, draws=60), progressbar=False, random_seed=1)
    with pytest.warns(DataWarning, match="UNUSED_LEVEL"):
        m = DPMPM(**kw).fit(df)
    syn = m.synthesize(5, random_seed=2)
    assert sum(int((z["A"] == "Other").sum()) for z in syn) == 0
    kept = DPMPM(**kw).fit(df, schema=infer_schema(df, keep_unused_levels=True))
    released = sum(int((z["A"] == "Other").sum()) for z in kept.synthesize(5, random_seed=2))
    assert released > 0  # what the default prevents: the prior gives 'Other' probability


def test_explicit_levels_and_hand_built_schemas_are_declared_levels():
    df = pd.DataFrame({"a": ["x", "y", "x", "y"] * 10, "b": ["u", "v"] * 20})
    s = infer_schema(df, levels={"a": ["x", "y", "z"]})
    assert s["a"].levels == ("x", "y", "z")  # the schema keeps what was declared ...
    RF = get_synthesizer("rf")
    with pytest.warns(DataWarning, match=r"'a': 'z'"):  # ... the fit drops it, saying so
        m = RF(n_trees=5).fit(df, schema=s, synthesized=["a"])
    assert m.schema_["a"].levels == ("x", "y")
    hand = Schema((ColumnSpec("a", "categorical", levels=("x", "y", "z")),
                   ColumnSpec("b", "categorical", levels=("u", "v"))))
    with pytest.warns(DataWarning, match="UNUSED_LEVEL"):
        m = RF(n_trees=5).fit(df, schema=hand, synthesized=["a"])
    assert m.schema_["a"].levels == ("x", "y")
    # a level of a column given as 2 and 2.0 is one level, held by a record
    num = pd.DataFrame({"c": [1.0, 2.0, 1.0, 2.0] * 5, "d": [1, 2] * 10})
    s2 = infer_schema(num, categorical=["c", "d"], levels={"c": [1, 2]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        assert RF(n_trees=5).fit(num, schema=s2, synthesized=["c"]).schema_["c"].levels == (
            1, 2)


def test_a_random_forest_would_release_the_level_it_keeps():
    """The forests' classes are the levels; leaf_dirichlet gives each class prior mass."""
    df = _table()[["sex", "mar"]]
    RF = get_synthesizer("rf")
    kw = dict(n_trees=10, probabilities="leaf_dirichlet", alpha=1.0, random_seed=1)
    kept = RF(**kw).fit(df, schema=infer_schema(df, keep_unused_levels=True),
                        synthesized=["mar"])
    assert sum(int((z["mar"] == "divorced").sum()) for z in kept.synthesize(5, random_seed=2))
    with pytest.warns(DataWarning, match="UNUSED_LEVEL"):
        dropped = RF(**kw).fit(df, synthesized=["mar"])
    assert not any((z["mar"] == "divorced").any() for z in dropped.synthesize(5, random_seed=2))


def test_the_schema_round_trips_the_choice():
    s = infer_schema(_table(), keep_unused_levels=["mar"])
    d = s.to_dict()
    assert d["columns"][1].get("keep_unused_levels") is True
    assert "keep_unused_levels" not in d["columns"][0]  # not written when off (old files read)
    assert Schema.from_dict(json.loads(json.dumps(d))) == s
    with pytest.raises(Exception, match="column 'nope' is not in the data"):
        infer_schema(_table(), keep_unused_levels=["nope"])


def test_a_refit_keeps_the_levels_of_the_model_it_refits():
    """The stabilised estimator refits to the original plus a synthetic dataset: a level the
    combined table happens not to hold must keep its code (the refit's draws must line up with
    the model's)."""
    df = _table(unused=None)[["sex", "mar"]]
    m, _ = _fit("dpmpm", df)
    syn = m.synthesize(1, random_seed=4)[0]
    only_two = df[df["mar"] != "widowed"].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # no UNUSED_LEVEL: nothing is dropped
        new = m.fit_augmented(only_two, syn[syn["mar"] != "widowed"].reset_index(drop=True),
                              random_seed=5)
    assert new.schema_["mar"].levels == m.schema_["mar"].levels


def test_the_command_line_drops_the_unused_categories_of_a_parquet_file(tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    _table()[["sex", "mar"]].to_parquet("orig.parquet")
    base = ["fit", "orig.parquet", "--method", "dpmpm", "--components", "3", "--tune", "10",
            "--draws", "20", "--chains", "1", "--random-seed", "1", "-q"]
    assert main([*base, "--out", "m1"]) == 0
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if "[UNUSED_LEVEL]" in ln)
    assert "'mar': 'divorced'" in line and "--keep-unused-levels mar" in line
    assert "keep_unused_levels" not in line and "infer_schema" not in line
    assert load_model("m1").schema_["mar"].levels == ("married", "single", "widowed")
    assert main([*base, "--keep-unused-levels", "mar", "--out", "m2"]) == 0
    assert "[UNUSED_LEVEL]" not in capsys.readouterr().err
    meta = json.loads((tmp_path / "m2" / "model.json").read_text())
    col = next(c for c in meta["schema"]["columns"] if c["name"] == "mar")
    assert col["levels"][-1] == "divorced" and col["keep_unused_levels"] is True
    # synthesize ORIGINAL --method: the same rule
    assert main(["synthesize", "orig.parquet", "--method", "rf", "--synthesize", "mar",
                 "-m", "1", "--random-seed", "1", "-q", "--out", "rel"]) == 0
    assert "[UNUSED_LEVEL]" in capsys.readouterr().err
