"""The closed model contract: ModelInfo, estimator="auto" by capability, the entry-point registry,
bayes_risk.testing.check_synthesizer and the example model of the docs ("Adding a model").

The example model (examples/dirichlet_multinomial) is registered the way the docs describe for
trying a model before packaging it (``bayes_risk.testing.registered_synthesizer``: the metadata
``pip install`` would write, on ``sys.path``), then checked and run through the command line.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_risk import cli
from bayes_risk.contract import Capabilities, ModelInfo, auto_estimator, capabilities
from bayes_risk.exceptions import NotSupportedError, ValidationError
from bayes_risk.models import get_synthesizer, list_synthesizers
from bayes_risk.testing import (
    CHECKS,
    CheckSkipped,
    SynthesizerCheckError,
    check_synthesizer,
    registered_synthesizer,
    synthesizer_checks,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "dirichlet_multinomial"
NAME = "dirichlet-multinomial"
TARGET = "dirichlet_multinomial:DirichletMultinomial"
OPTIONS = "dirichlet_multinomial_options:OPTIONS"


def _table(n: int = 60, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "sex": pd.Categorical(rng.choice(["F", "M"], n)),
        "region": rng.choice(["north", "south", "east"], n, p=[0.5, 0.3, 0.2]),
        "owner": rng.choice(["yes", "no"], n),
    })


@pytest.fixture()
def example():
    """The example model, registered under its name for the test."""
    if not EXAMPLE.is_dir():
        pytest.skip("examples/ is not part of this checkout")
    with registered_synthesizer(NAME, TARGET, path=EXAMPLE, options=OPTIONS):
        yield get_synthesizer(NAME)


# ------------------------------------------------------------------------------ capabilities
def test_model_info_is_frozen_and_validated():
    info = ModelInfo(imputes=True, result_warnings=["APPROX"])
    assert info.imputes and info.result_warnings == ("APPROX",)
    with pytest.raises(AttributeError):
        info.imputes = False  # type: ignore[misc]
    with pytest.raises(ValidationError) as err:
        ModelInfo(imputes="yes")
    assert err.value.code == "BAD_MODEL_INFO"
    # what a method shows is no longer declared (changelog: ModelInfo(likelihoods=...) ->
    # the method itself)
    for shown in (dict(likelihoods={"record"}), dict(estimators=("is",)),
                  dict(persistence=True), dict(posterior_replicates=True)):
        with pytest.raises(TypeError):
            ModelInfo(**shown)


def test_every_builtin_model_has_the_capabilities_of_its_methods():
    """The built-in classes declare only what methods cannot show; the rest is read off them."""
    from bayes_risk.models import CARTPlugin, RFPlugin

    for name in ["cart", "rf", "pmm", "dpmpm", "poisson-mixture", "regression"]:
        assert isinstance(get_synthesizer(name).info, ModelInfo), name
        assert capabilities(get_synthesizer(name)).persistence, name  # save and load
    assert capabilities(RFPlugin).result_warnings == ("APPROXIMATE_NONPARAMETRIC",)
    assert capabilities(CARTPlugin).holds_missing and capabilities(CARTPlugin).estimators == (
        "plugin",)
    dpmpm = capabilities(get_synthesizer("dpmpm"))
    assert dpmpm.imputes and dpmpm.categorical_only and dpmpm.convergence and dpmpm.chains
    assert dpmpm.likelihoods == {"record", "dataset", "neighbourhood", "neighbourhood_buffer",
                                 "own_record"}
    assert dpmpm.estimators == ("stabilised", "is")
    assert capabilities(get_synthesizer("regression")).has("candidate")
    assert capabilities(get_synthesizer("poisson-mixture")).has("largest_value")
    assert capabilities(get_synthesizer("cart")).plugin_likelihood
    assert not capabilities(get_synthesizer("pmm")).plugin_likelihood


def test_cart_capabilities_depend_on_its_donors():
    """CART's posterior predictive is its Bayesian bootstrap: with equal-weight donors the
    instance has no posterior_replicates (available_if), the class has."""
    cart = get_synthesizer("cart")
    assert capabilities(cart).posterior_replicates
    assert capabilities(cart()).posterior_replicates
    uniform = cart(donor="uniform")
    assert not hasattr(uniform, "posterior_replicates")
    assert not capabilities(uniform).posterior_replicates


class _NoAugment:
    """A model written from scratch: record and dataset likelihoods, no fit_augmented, no
    declaration."""

    model_class = "P"
    ratio_form = "joint"

    def __init__(self, schema, theta):
        self.schema_, self.theta = schema, np.asarray(theta, dtype=np.float64)

    @property
    def n_draws(self):
        return self.theta.size

    def record_loglik(self, records, *, draw_indices=None):
        t = self.theta if draw_indices is None else self.theta[draw_indices]
        y = (records["y"].astype(str) == "1").to_numpy()
        return np.where(y[None, :], np.log(t)[:, None], np.log1p(-t)[:, None])

    def dataset_loglik(self, synthetic, *, draw_indices=None):
        return np.stack([self.record_loglik(z,
            draw_indices=draw_indices).sum(axis=1) for z in synthetic], 1)


def test_auto_estimator_chooses_by_capability_not_by_class():
    """A class P model without fit_augmented gets the IS estimator from 'auto' (it used to get
    'stabilised' from its class and fail); with augmented draws given it gets 'stabilised';
    a class O model never gets 'stabilised'."""
    from bayes_risk import attribute_risk, infer_schema

    df = pd.DataFrame({"y": ["0", "1", "1", "0", "1", "0"] * 4})
    schema = infer_schema(df, synthesized=["y"])
    model = _NoAugment(schema, np.random.default_rng(0).beta(5, 5, 60))
    assert capabilities(model).estimators == ("is",)
    assert auto_estimator(model) == "is"
    assert auto_estimator(model, augmented_given=True) == "stabilised"
    syn = [df.sample(frac=1.0, random_state=s).reset_index(drop=True) for s in (1, 2)]
    res = attribute_risk(df, syn, model=model, records=[0, 1], random_seed=0, progressbar=False)
    assert res.settings["estimator"] == "is"
    with pytest.raises(NotSupportedError) as err:
        auto_estimator(type("M", (), {"model_class": "O",
                                      "record_loglik": lambda self, r: None})())
    assert err.value.code == "NO_ESTIMATOR"


def test_a_third_party_model_gets_exactly_what_its_methods_show():
    """A model that declares nothing gets the capabilities of its methods and claims nothing
    that no method shows (conservative defaults); adding a method adds its capability; a member
    set to None is absent; an object with none of the methods is not a model."""

    class Plain(_NoAugment):
        pass

    class Richer(_NoAugment):
        def fit_augmented(self, data, synthetic, *, random_seed=None):
            return self

        def neighbourhood_loglik(self, records, *, draw_indices=None):
            return self.record_loglik(records, draw_indices=draw_indices)[:, :, None]

        def draw_chains(self):
            return np.zeros(self.n_draws, dtype=np.int64)

    class Withdrawn(Richer):
        neighbourhood_loglik = None  # a subclass that no longer offers it

    plain = capabilities(Plain)
    assert plain == Capabilities(likelihoods=frozenset({"record", "dataset"}),
                                 estimators=("is",))
    assert not (plain.imputes or plain.persistence or plain.convergence or plain.result_warnings)
    richer = capabilities(Richer)
    assert richer.likelihoods == {"record", "dataset", "neighbourhood"}
    assert richer.estimators == ("stabilised", "is") and richer.chains
    assert not richer.has("neighbourhood_buffer") and not richer.persistence
    assert capabilities(Withdrawn).likelihoods == {"record", "dataset"}
    for not_a_model in (object(), "a string"):
        with pytest.raises(ValidationError) as err:
            capabilities(not_a_model)
        assert err.value.code == "MODEL_INFO_MISSING"

    class BadInfo(_NoAugment):
        info = {"imputes": True}

    with pytest.raises(ValidationError) as err:
        capabilities(BadInfo)
    assert err.value.code == "BAD_MODEL_INFO"


def test_an_undeclared_model_runs_with_what_its_methods_show():
    """Nothing is guessed that methods cannot show: without a declaration a model does not
    integrate missing values out, and attribute risk refuses the estimator its methods do not
    support (test_auto_estimator_chooses_by_capability_not_by_class runs it with 'is')."""
    from bayes_risk import attribute_risk, infer_schema

    df = pd.DataFrame({"y": ["0", "1"] * 10})
    model = _NoAugment(infer_schema(df, synthesized=["y"]), np.full(30, 0.4))
    assert not capabilities(model).imputes
    with pytest.raises(ValidationError, match="stabilised") as err:
        attribute_risk(df, [df], model=model, records=[0], estimator="stabilised",
                       progressbar=False)
    assert err.value.code == "MODEL_UNSUITED"


# ------------------------------------------------------------------------------ the registry
def test_builtin_entry_points_match_pyproject_and_lazy_exports():
    from bayes_risk import models

    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][
        "bayes_risk.synthesizers"]
    assert set(table) <= set(list_synthesizers())
    exported = set(models.__all__)
    for name, value in table.items():
        module, cls = value.split(":")
        assert module == "bayes_risk.models" and cls in exported, value
        assert get_synthesizer(name).__name__ == cls
        assert get_synthesizer(name).method_name == name  # model.json records this name


def test_unknown_synthesizer_is_a_coded_error():
    with pytest.raises(ValidationError, match="must be one of .*'cart'") as err:
        get_synthesizer("cartt")
    assert err.value.code == "UNKNOWN_SYNTHESIZER"


@pytest.mark.parametrize("target, why", [
    ("_no_such_module_xyz:Model", "ModuleNotFoundError"),
    ("json:dumps", "not a synthesizer class"),
])
def test_broken_entry_point_names_itself_and_harms_nothing_else(target, why, capsys):
    with registered_synthesizer("broken", target):
        assert "broken" in list_synthesizers()  # listed without importing it
        with pytest.raises(ValidationError, match=why) as err:
            get_synthesizer("broken")
        assert err.value.code == "SYNTHESIZER_BROKEN" and target in str(err.value)
        assert get_synthesizer("cart").__name__ == "CARTSynthesizer"
        rc = cli.main(["fit", "whatever.csv", "--method", "broken", "--out", "x"])
        err_text = capsys.readouterr().err
        assert rc == 2 and "SYNTHESIZER_BROKEN" in err_text and "broken" in err_text
    assert "broken" not in list_synthesizers()


def test_name_registered_twice_is_refused():
    with registered_synthesizer("cart", "bayes_risk.models:DPMPM"):
        with pytest.raises(ValidationError) as err:
            get_synthesizer("cart")
        assert err.value.code == "SYNTHESIZER_CLASH"


# ------------------------------------------------------------------------------ check_synthesizer
def test_check_synthesizer_passes_the_example_model(example):
    assert check_synthesizer(example(draws=20, chains=2), _table()) == [
        c.__name__ for c in CHECKS]
    pairs = list(synthesizer_checks(example, _table(), m=3))
    assert [c.__name__ for _, c in pairs] == [c.__name__ for c in CHECKS]
    for model, check in pairs:
        check(model)


def test_check_synthesizer_makes_its_own_data_and_accepts_expected_failures(example):
    """Without data the checks make a table the model can fit (categorical only, as the model
    declares); a check the model is known to fail is named with its reason and not raised,
    every other failure still is; a name that is not a check is refused."""
    from bayes_risk.testing import check_data

    assert capabilities(example) == Capabilities(
        likelihoods=frozenset({"record", "dataset"}), estimators=("stabilised", "is"),
        persistence=True, chains=True, categorical_only=True)
    table = check_data(example)
    assert all(isinstance(table[c].dtype, pd.CategoricalDtype) for c in table)
    assert check_synthesizer(example(draws=20, chains=2)) == [c.__name__ for c in CHECKS]

    class Unseeded(example):
        def synthesize(self, m=1, *, random_seed=None):
            return super().synthesize(m, random_seed=int(np.random.SeedSequence().entropy % 1000))

    with pytest.raises(SynthesizerCheckError) as err:
        check_synthesizer(Unseeded(draws=10, chains=2))
    assert set(err.value.failures) == {"check_same_seed", "check_persistence"}
    why = {"check_same_seed": "draws its seed from the operating system",
           "check_persistence": "a loaded model draws another seed too"}
    with pytest.raises(SynthesizerCheckError) as err:  # one expected, the other still raised
        check_synthesizer(Unseeded(draws=10, chains=2),
                          expected_failed_checks={"check_same_seed": why["check_same_seed"]})
    assert list(err.value.failures) == ["check_persistence"]
    passed = check_synthesizer(Unseeded(draws=10, chains=2), expected_failed_checks=why)
    assert passed == [c.__name__ for c in CHECKS if c.__name__ not in why]
    pairs = dict((c.__name__, c) for _, c in synthesizer_checks(
        Unseeded(draws=10, chains=2), expected_failed_checks=why))
    with pytest.raises(CheckSkipped, match="fails as expected .draws its seed"):
        pairs["check_same_seed"](None)
    pairs["check_record_loglik"](None)
    with pytest.raises(ValidationError, match="check_same_sead") as err:
        check_synthesizer(example(draws=10), expected_failed_checks={"check_same_sead": "x"})
    assert err.value.code == "INVALID_ARGUMENT"


def test_a_model_declares_its_own_fit_options(example, capsys, monkeypatch):
    """The example's option (its own module, entry-point group bayes_risk.fit_options) is in
    fit's parser with the built-in models' ones, named for the model."""
    monkeypatch.setenv("COLUMNS", "1000")  # no line breaks inside a hyphenated name
    with pytest.raises(SystemExit):
        cli.main(["fit", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--alpha A dirichlet-multinomial: concentration of the symmetric Dirichlet" in out
    assert "dpmpm, poisson-mixture: truncation level K" in out
    assert f"Registered models (--method): {', '.join(list_synthesizers())}" in out


def test_check_synthesizer_reports_broken_models(example):
    """The checks bite: a declaration naming a setting the model lacks, float32 likelihoods with
    the wrong shape, a seed that is not used, a load that loses the draws."""

    class Undeclared(example):  # requires a setting its __init__ does not take
        info = ModelInfo(categorical_only=True, required=("no_such_setting",))

    class Float32(example):
        def record_loglik(self, records, *, draw_indices=None):
            return super().record_loglik(records, draw_indices=draw_indices).astype(np.float32)[:,
                :-1]

    class Unseeded(example):
        def synthesize(self, m=1, *, random_seed=None):
            return super().synthesize(m, random_seed=int(np.random.SeedSequence().entropy % 1000))

    class Forgetful(example):
        @classmethod
        def load(cls, path):
            model = super().load(path)
            model.theta_ = model.theta_[:, ::-1]
            return model

    expected = {Undeclared: "check_info", Float32: "check_record_loglik",
                Unseeded: "check_same_seed", Forgetful: "check_persistence"}
    for cls, check in expected.items():
        with pytest.raises(SynthesizerCheckError) as err:
            check_synthesizer(cls(draws=10, chains=2), _table())
        assert check in err.value.failures, (cls.__name__, err.value.failures)
        assert err.value.code == "CONTRACT_VIOLATED"


# ------------------------------------------------------------- the example on the CLI
def test_example_model_runs_through_the_command_line(example, tmp_path, capsys):
    """fit → synthesize → attribute → audit with a model no file of bayes-risk names."""
    data = tmp_path / "data.csv"
    _table(80, seed=3).to_csv(data, index=False)
    mdir, syn, att, aud = (tmp_path / d for d in ("model", "syn", "attribute", "audit"))
    assert cli.main(["fit", str(data), "--method", NAME, "--draws", "40", "--chains", "2",
                     "--alpha", "2", "--random-seed", "1", "--quiet", "--out", str(mdir)]) == 0
    meta = json.loads((mdir / "model.json").read_text())
    assert meta["method"] == NAME and meta["settings"]["alpha"] == 2.0  # its own option
    # --tune is not a setting of the model: refused, by its signature (not by its name)
    assert cli.main(["fit", str(data), "--method", NAME, "--tune", "5", "--quiet",
                     "--out", str(tmp_path / "m2")]) == 2
    assert "--tune: MCMC options do not apply" in capsys.readouterr().err
    assert cli.main(["synthesize", "--model", str(mdir), "-m", "3", "--random-seed", "2",
                     "--quiet", "--out", str(syn)]) == 0
    assert cli.main(["attribute", str(data), str(syn), "--model", str(mdir), "--records", "1-5",
                     "--random-seed", "3", "--quiet", "--out", str(att)]) == 0
    summary = json.loads((att / "summary.json").read_text())
    assert summary["settings"]["estimator"] == "stabilised"  # 'auto', from its fit_augmented
    recs = pd.read_csv(att / "records.csv")
    assert len(recs) == 5 and recs["p_true"].between(0, 1).all()
    assert cli.main(["audit", str(data), str(syn), "--model", str(mdir), "--known", "sex",
                     "region", "--records", "1-4", "--random-seed", "4", "--quiet",
                     "--out", str(aud)]) == 0
    assert (aud / "attribute" / "records.csv").is_file()


def test_example_model_synthesizes_from_the_original_on_the_command_line(example, tmp_path,
                                                                          capsys):
    """synthesize ORIGINAL --method NAME: the options reach the model by its __init__ settings
    (--alpha is its prior's concentration), -m defaults to its default_m; a release it made
    has no plug-in likelihood to rebuild, so attribute asks for --model."""
    from bayes_risk.data import SyntheticData

    data = tmp_path / "data.csv"
    frame = _table(80, seed=3).assign(owner=lambda d: (d["owner"] == "yes").astype(int))
    frame.to_csv(data, index=False)
    syn, mdir = tmp_path / "syn", tmp_path / "model"
    assert cli.main(["synthesize", str(data), "--method", NAME, "--alpha", "2",
                     "--random-seed", "2", "--quiet", "--out", str(syn)]) == 0
    z = SyntheticData.load(syn)
    assert z.method == NAME and z.m == example.default_m == 5 and z.settings["alpha"] == 2.0
    assert cli.main(["synthesize", str(data), "--method", NAME, "--min-leaf", "3", "--quiet",
                     "--out", str(tmp_path / "s2")]) == 2
    assert "--min-leaf: not an option of --method dirichlet-multinomial" in (
        capsys.readouterr().err)
    assert cli.main(["attribute", str(data), str(syn), "--records", "1-3", "--quiet",
                     "--out", str(tmp_path / "att")]) == 2
    assert "--model is required unless SYN is a release of a synthesizer with a plug-in" in (
        capsys.readouterr().err)
    # categorical only (ModelInfo.categorical_only): the 0/1 column is read as categorical
    assert cli.main(["fit", str(data), "--method", NAME, "--draws", "10", "--quiet",
                     "--out", str(mdir)]) == 0
    from bayes_risk.models import load_model

    assert load_model(mdir).schema_["owner"].is_categorical


def test_model_info_required_and_categorical_only_are_validated():
    assert ModelInfo(required=("synthesized", "identifying")).required == (
        "synthesized", "identifying")
    for bad in ("synthesized", ("a", "a"), ("not a name",)):
        with pytest.raises(ValidationError) as err:
            ModelInfo(required=bad)
        assert err.value.code == "BAD_MODEL_INFO"
    with pytest.raises(ValidationError, match="categorical_only must be True or False"):
        ModelInfo(categorical_only=1)
    assert get_synthesizer("pmm").info.required == ("identifying",)
    assert get_synthesizer("dpmpm").info.categorical_only
