"""``bayes-risk synthesize`` end to end through ``bayes_risk.cli.main`` (both forms)."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pandas as pd
import pytest

import bayes_risk.cli as cli
from bayes_risk.data import SyntheticData, make_ce_like
from bayes_risk.testing import registered_synthesizer


@pytest.fixture(scope="module")
def ce_csv(tmp_path_factory):
    df = make_ce_like(400, random_seed=21)
    p = tmp_path_factory.mktemp("data") / "ce.csv"
    df.to_csv(p, index=False)
    return p, df


def _leftovers(folder):
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


def test_help_lists_both_forms(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["synthesize", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--model" in out and "--method" in out and "--synthesize" in out


def test_cart_end_to_end(ce_csv, tmp_path, capsys):
    path, df = ce_csv
    out = tmp_path / "syn"
    argv = ["synthesize", str(path), "--method", "cart", "--synthesize", "Tenure", "Expenditure",
            "Income", "--categorical", "Urban", "Marital", "Tenure", "-m", "3",
            "--random-seed", "1", "--min-leaf", "5", "--csv", "--out", str(out)]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    # the release's own description (its repr)
    assert printed.startswith("SyntheticData: m = 3 dataset(s) of 400 rows x 7 columns, method "
                              "'cart'")
    assert f"wrote {out}: manifest.json, summary.json, syn_001.csv, ..." in printed
    z = SyntheticData.load(out)
    assert z.m == 3 and z.method == "cart" and z.random_seed == 1
    assert z.schema.synthesized == ["Tenure", "Expenditure", "Income"]
    assert z.schema["Tenure"].type == "categorical"
    assert sorted(p.name for p in out.iterdir()) == [
        "manifest.json", "summary.json", "syn_001.csv", "syn_001.parquet", "syn_002.csv",
        "syn_002.parquet", "syn_003.csv", "syn_003.parquet"]
    for d in z:
        for c in ["Age", "Urban", "Educ", "Marital"]:
            np.testing.assert_array_equal(d[c].to_numpy(), df[c].to_numpy())
    pd.testing.assert_frame_equal(pd.read_csv(out / "syn_002.csv"), z[1], check_dtype=False)
    # same seed → identical release; the folder is refused, then replaced with --overwrite
    assert cli.main(argv + ["--quiet"]) == 2
    assert cli.main(argv + ["--quiet", "--overwrite"]) == 0
    z2 = SyntheticData.load(out)
    for a, b in zip(z, z2, strict=False):
        pd.testing.assert_frame_equal(a, b)
    assert _leftovers(tmp_path) == []


def test_cart_options_and_recorded_seed(ce_csv, tmp_path):
    path, _ = ce_csv
    rec = tmp_path / "records.txt"
    rec.write_text("\n".join(str(i) for i in range(0, 400, 4)))
    out = tmp_path / "syn"
    assert cli.main(["synthesize", str(path), "--method", "cart", "--synthesize", "Income",
                     "--smoothing", "--donor", "uniform", "--unroutable", "random-descent",
                     "--records", str(rec), "-m", "2", "--quiet", "--out", str(out)]) == 0
    z = SyntheticData.load(out)
    assert z.settings["donor"] == "uniform" and z.settings["smoothing"] is True
    assert z.settings["unroutable"] == "random_descent"
    assert isinstance(z.random_seed, int)  # a fresh seed is recorded for reproducibility
    assert z.synthesized_records.sum() == 100


def test_synthpop_style_specification(ce_csv, tmp_path):
    """--method-per-column: synthpop's syn(data, visit.sequence = --synthesize) (the first
    column by "sample", the next on the earlier ones only) or a method per column; the spec is
    recorded in the manifest; --predictor-matrix reads synthpop's matrix from a CSV file."""
    path, df = ce_csv
    out = tmp_path / "syn"
    assert cli.main(["synthesize", str(path), "--method", "cart", "--synthesize", "Tenure",
                     "Income", "--categorical", "Urban", "Marital", "Tenure",
                     "--method-per-column", "cart", "-m", "2", "--random-seed", "1", "--quiet",
                     "--out", str(out)]) == 0
    z = SyntheticData.load(out)
    assert z.settings["spec"] == {"method": "cart", "visit_sequence": None,
                                  "predictor_matrix": None}
    assert z.extra["predictors"] == {"Tenure": [], "Income": ["Tenure"]}
    names = list(df.columns)
    pm = pd.DataFrame(0, index=names, columns=names)
    pm.loc["Income", ["Age", "Tenure"]] = 1
    pm.to_csv(tmp_path / "pm.csv")
    out2 = tmp_path / "syn2"
    assert cli.main(["synthesize", str(path), "--method", "cart", "--synthesize", "Tenure",
                     "Income", "--categorical", "Urban", "Marital", "Tenure",
                     "--method-per-column", "Tenure=sample", "Income=norm", "--predictor-matrix",
                     str(tmp_path / "pm.csv"), "-m", "2", "--quiet", "--out", str(out2)]) == 0
    z2 = SyntheticData.load(out2)
    assert z2.extra["predictors"] == {"Tenure": [], "Income": ["Age", "Tenure"]}
    for d in z2:
        np.testing.assert_array_equal(d["Age"].to_numpy(), df["Age"].to_numpy())
        assert d["Income"].dtype == df["Income"].dtype


def test_rf_and_pmm_forms(ce_csv, tmp_path):
    path, df = ce_csv
    out = tmp_path / "rf"
    assert cli.main(["synthesize", str(path), "--method", "rf", "--synthesize", "Tenure",
                     "Marital", "--categorical", "Urban", "Marital", "Tenure", "--n-trees", "20",
                     "--probabilities", "leaf-dirichlet", "--alpha", "0.5", "-m", "2",
                     "--random-seed", "3", "--quiet", "--out", str(out)]) == 0
    z = SyntheticData.load(out)
    assert z.method == "rf" and z.m == 2
    assert z.settings["probabilities"] == "leaf_dirichlet" and z.settings["alpha"] == 0.5
    out = tmp_path / "pmm"
    assert cli.main(["synthesize", str(path), "--method", "pmm", "--identifying", "Urban",
                     "Marital", "Tenure", "--categorical", "Urban", "Marital", "Tenure",
                     "--threshold", "3", "--tie", "first", "--random-seed", "1", "--quiet",
                     "--out", str(out)]) == 0
    z = SyntheticData.load(out)
    assert z.method == "pmm" and z.m == 1  # one implicate by default (S001)
    man = json.loads((out / "manifest.json").read_text())
    assert man["extra"]["n_recipients"] == int(z.synthesized_records.sum()) > 0
    assert man["extra"]["min_cell_count_after"][0] >= 1
    # --records gives pmm its recipients, as it gives cart/rf the records to synthesize
    out = tmp_path / "pmm-records"
    assert cli.main(["synthesize", str(path), "--method", "pmm", "--identifying", "Urban",
                     "Marital", "Tenure", "--categorical", "Urban", "Marital", "Tenure",
                     "--records", "0-49", "--random-seed", "1", "--quiet",
                     "--out", str(out)]) == 0
    z = SyntheticData.load(out)
    np.testing.assert_array_equal(np.flatnonzero(z.synthesized_records), np.arange(50))
    original = pd.read_csv(path)
    for c in original.columns:  # the other records are released unchanged
        np.testing.assert_array_equal(z[0][c].iloc[50:].astype(str).to_numpy(),
                                      original[c].iloc[50:].astype(str).to_numpy())


class _FakeModel:
    """A saved 'Bayesian model' standing in for issue 4's models (load + synthesize contract)."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    @classmethod
    def load(cls, path):
        meta = json.loads((path / "model.json").read_text())
        return cls(meta["scale"])

    def synthesize(self, m, random_seed=None):
        from bayes_risk._rng import spawn

        gens = spawn(random_seed, m)
        data = [pd.DataFrame({"x": g.normal(size=5) * self.scale}) for g in gens]
        if self.scale < 0:  # a dataset pyarrow cannot write: the failure happens inside save()
            data[-1] = pd.DataFrame({"x": [object(), 1, "a", 2.0, None]})
        return SyntheticData(data, method="fake", settings={"scale": self.scale},
                             random_seed=random_seed, draw_index=list(range(m)))


@pytest.fixture()
def fake_model(monkeypatch, tmp_path):
    mod = types.ModuleType("_bayes_risk_fake_model")
    mod.FakeModel = _FakeModel
    monkeypatch.setitem(sys.modules, "_bayes_risk_fake_model", mod)

    def make(scale):
        d = tmp_path / f"model_{scale}"
        d.mkdir()
        (d / "model.json").write_text(json.dumps({"method": "fake", "scale": scale}))
        return d

    # registered as an entry point, as a model of another distribution is (docs: Adding a model)
    with registered_synthesizer("fake", "_bayes_risk_fake_model:FakeModel"):
        yield make


def test_model_dir_form(fake_model, tmp_path):
    mdir = fake_model(2.0)
    out = tmp_path / "syn"
    assert cli.main(["synthesize", "--model", str(mdir), "-m", "4", "--random-seed", "2",
                     "--quiet", "--out", str(out)]) == 0
    z = SyntheticData.load(out)
    assert z.m == 4 and z.method == "fake" and z.draw_index == [0, 1, 2, 3]
    ref = _FakeModel(2.0).synthesize(4, random_seed=2)
    for a, b in zip(z, ref, strict=False):
        pd.testing.assert_frame_equal(a, b)


def test_failure_inside_save_leaves_no_folder(fake_model, tmp_path):
    mdir = fake_model(-1.0)
    out = tmp_path / "syn"
    with pytest.raises(Exception):  # noqa: B017 - pyarrow's own error type
        cli.main(["synthesize", "--model", str(mdir), "-m", "2", "--random-seed", "2",
                  "--quiet", "--out", str(out)])
    assert not out.exists()
    assert _leftovers(tmp_path) == []
    # an existing release is left exactly as it was
    out.mkdir()
    (out / "keep.txt").write_text("old")
    with pytest.raises(Exception):  # noqa: B017
        cli.main(["synthesize", "--model", str(mdir), "-m", "2", "--quiet", "--overwrite",
                  "--out", str(out)])
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "give either ORIGINAL"),
        (["ORIG", "--model", "MODEL"], "give either ORIGINAL"),
        (["ORIG", "--synthesize", "Income"],
         "--method (cart, rf, pmm or another registered synthesizer) is required"),
        (["ORIG", "--method", "cart"], "--synthesize COL"),
        (["ORIG", "--method", "cart", "--synthesize", "Incme"], "Did you mean 'Income'"),
        (["ORIG", "--method", "cart", "--synthesize", "Income", "-m", "0"],
         "-m must be an integer >= 1"),
        (["ORIG", "--method", "rf", "--synthesize", "Income", "--min-samples-leaf", "0"],
         "--min-samples-leaf must be an integer >= 1"),
        (["ORIG", "--method", "pmm"], "--identifying COL"),
        (["ORIG", "--method", "cart", "--synthesize", "Income", "--donor", "uniform",
          "--min-leaf", "0"], "--min-leaf must be an integer >= 1"),
        (["--model", "MODEL", "--method", "cart"], "cannot be used with --model"),
        (["--model", "MODEL", "--min-leaf", "5"], "--min-leaf cannot be used with --model"),
        # the sampled path read its own shorter list and ignored a tree option
        (["ORIG", "--model", "MODEL", "--populations", "2", "--sample-fraction", "0.5",
          "--min-leaf", "5"], "--min-leaf cannot be used with --model"),
        (["--model", "NOTAMODEL"], "is not a saved bayes-risk model"),
        (["missing.csv", "--method", "cart", "--synthesize", "Income"], "does not exist"),
        (["ORIG", "--method", "cart", "--synthesize", "Income", "--method-per-column", "Income"],
         "--method-per-column must be one of"),
        (["ORIG", "--method", "cart", "--synthesize", "Tenure", "--method-per-column",
          "Tenure=sample", "Tenure=cart"], "is not a new COL=METHOD pair"),
        (["ORIG", "--method", "cart", "--synthesize", "Income", "--method-per-column",
          "Income=logreg"], "'logreg' is for categorical"),
        (["ORIG", "--method", "cart", "--synthesize", "Income", "--method-per-column",
          "Incme=cart"], "--method-per-column: column 'Incme' is not in the data"),
        (["ORIG", "--method", "rf", "--synthesize", "Tenure", "--method-per-column", "cart"],
         "--method-per-column: not an option of --method rf"),
        (["ORIG", "--method", "cart", "--synthesize", "Income", "--predictor-matrix",
          "missing.csv"], "--predictor-matrix: cannot read"),
    ],
)
def test_bad_input_errors(extra, message, ce_csv, fake_model, tmp_path, capsys):
    path, _ = ce_csv
    mdir = fake_model(1.0)
    argv = ["synthesize"]
    for a in extra:
        argv.append({"ORIG": str(path), "MODEL": str(mdir),
                     "NOTAMODEL": str(tmp_path), "missing.csv": str(tmp_path / "missing.csv")}
                    .get(a, a))
    out = tmp_path / "out"
    assert cli.main(argv + ["--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.startswith("bayes-risk synthesize: error")
    assert not out.exists()
    assert _leftovers(tmp_path) == []


class _MyCART:
    """Source of a model another distribution registers: CART under its own name."""

    source = (
        "from bayes_risk.models import CARTSynthesizer\n\n\n"
        "class MyCART(CARTSynthesizer):\n"
        "    method_name = 'my-cart'\n"
    )


def test_a_registered_synthesizer_reaches_synthesize_rebuild_and_attribute(ce_csv, tmp_path,
                                                                           capsys):
    """A plug-in synthesizer no file of bayes-risk names goes through synthesize (its
    ModelInfo.required, its options by setting, its default_m), and attribute rebuilds it from
    the release's manifest for its plug-in likelihood (ModelInfo.plugin_likelihood)."""
    path, _ = ce_csv
    (tmp_path / "my_cart_model.py").write_text(_MyCART.source)
    syn, att = tmp_path / "syn", tmp_path / "att"
    with registered_synthesizer("my-cart", "my_cart_model:MyCART", path=tmp_path):
        assert cli.main(["synthesize", str(path), "--method", "my-cart", "--quiet",
                         "--out", str(syn)]) == 2
        assert "--synthesize COL [COL ...] is required with --method my-cart" in (
            capsys.readouterr().err)
        assert cli.main(["synthesize", str(path), "--method", "my-cart", "--synthesize",
                         "Income", "--n-trees", "5", "--quiet", "--out", str(syn)]) == 2
        assert "--n-trees: not an option of --method my-cart" in capsys.readouterr().err
        assert cli.main(["synthesize", str(path), "--method", "my-cart", "--synthesize",
                         "Income", "--min-leaf", "10", "--random-seed", "3", "--quiet",
                         "--out", str(syn)]) == 0
        z = SyntheticData.load(syn)
        assert z.method == "my-cart" and z.m == 20 and z.settings["min_leaf"] == 10
        assert cli.main(["attribute", str(path), str(syn), "--records", "1-3",
                         "--random-seed", "1", "--quiet", "--out", str(att)]) == 0
    recs = pd.read_csv(att / "records.csv")
    assert len(recs) == 3 and recs["p_true"].between(0, 1).all()


def test_orders_takes_any_registered_sequential_synthesizer(tmp_path, capsys, monkeypatch):
    """bayes-risk orders finds --method in the registry, keeps the synthesizers whose ModelInfo
    declares visit_order and passes the settings by name: a registered CART subclass gives the
    numbers of CART itself; pmm (no visit order) and --n-trees for CART are refused by name."""
    from bayes_risk.data import make_acs_like

    monkeypatch.chdir(tmp_path)
    make_acs_like(200, random_seed=5)[["SEX", "AGE", "RACE", "MAR"]].to_csv("acs.csv",
                                                                              index=False)
    (tmp_path / "my_cart_model.py").write_text(_MyCART.source)
    base = ["orders", "acs.csv", "--order", "MAR,RACE,SEX", "--order", "SEX,RACE,MAR",
            "--categorical", "SEX", "AGE", "RACE", "MAR", "--known-unsynthesized", "AGE",
            "-m", "2", "--random-seed", "7", "--quiet"]
    assert cli.main([*base, "--method", "cart", "--min-leaf", "8", "--out", "a"]) == 0
    with registered_synthesizer("my-cart", "my_cart_model:MyCART", path=tmp_path):
        assert cli.main([*base, "--method", "my-cart", "--min-leaf", "8", "--out", "b"]) == 0
        assert cli.main([*base, "--method", "my-cart", "--n-trees", "5", "--out", "c"]) == 2
        assert "--n-trees: not an option of --method my-cart" in capsys.readouterr().err
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "a" / "orders.csv"),
                                  pd.read_csv(tmp_path / "b" / "orders.csv"))
    assert cli.main([*base, "--method", "pmm", "--out", "d"]) == 2
    assert "does not synthesize its columns in a visit order" in capsys.readouterr().err
    assert cli.main([*base, "--method", "nope", "--out", "e"]) == 2
    assert "[UNKNOWN_SYNTHESIZER]" in capsys.readouterr().err
    assert not any((tmp_path / d).exists() for d in "cde")


def test_orders_matches_by_a_bare_radius_and_by_quantile_groups(tmp_path, capsys, monkeypatch):
    """orders' --radius R applies to every continuous known column (Income here, Age being a
    count), as --radius Income=R; --radius-type quantile-sd and --quantile-groups reach the
    identification risk of each order (other counts than the percentage radius) and its
    settings."""
    monkeypatch.chdir(tmp_path)
    make_ce_like(150, random_seed=5).to_csv("ce.csv", index=False)
    base = ["orders", "ce.csv", "--method", "cart", "--order", "Tenure,Income", "--order",
            "Income,Tenure", "--known-unsynthesized", "Age", "Urban", "--categorical", "Urban",
            "Marital", "Tenure", "Educ", "-m", "2", "--random-seed", "1", "--quiet"]
    runs = {"bare": ["--radius", "0.1"], "named": ["--radius", "Income=0.1"],
            "sd": ["--radius", "0.5", "--radius-type", "quantile-sd"],
            "sd5": ["--radius", "0.5", "--radius-type", "quantile-sd", "--quantile-groups", "5"]}
    for out, options in runs.items():
        assert cli.main([*base, *options, "--out", out]) == 0, capsys.readouterr().err
    table = {out: pd.read_csv(tmp_path / out / "orders.csv") for out in runs}
    pd.testing.assert_frame_equal(table["bare"], table["named"])
    counts = ["expected_match_risk", "true_match_risk", "n_unique"]
    assert not table["sd"][counts].equals(table["bare"][counts])
    assert not table["sd5"][counts].equals(table["sd"][counts])
    match = [json.loads((tmp_path / out / "summary.json").read_text())["settings"]
             ["identification"]["match"] for out in runs]
    assert [(m["radius"], m["radius_type"], m["quantile_groups"]) for m in match] == [
        (0.1, "percentage", 20), ({"Income": 0.1}, "percentage", 20),
        (0.5, "quantile_sd", 20), (0.5, "quantile_sd", 5)]
    # no radius for the continuous synthesized Income: the error names orders' options only
    assert cli.main([*base, "--out", "none"]) == 2
    err = capsys.readouterr().err
    assert "--radius Income=R" in err and "--radius-search" not in err
