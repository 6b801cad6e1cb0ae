"""``bayes-risk utility`` end to end through ``bayes_risk.cli.main``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk import cli
from bayes_risk.data import SyntheticData, infer_schema, make_ce_like

CAT = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("utility_cli")
    d = make_ce_like(n=300, random_seed=21)
    rng = np.random.default_rng(3)
    paths = []
    syn = []
    for l in range(1, 5):
        z = d.copy()
        z["Income"] = np.round(d["Income"].to_numpy() * np.exp(rng.normal(0, 0.3, len(d))), 2)
        syn.append(z)
        p = root / f"syn{l}.csv"
        z.to_csv(p, index=False)
        paths.append(p)
    orig = root / "orig.csv"
    d.to_csv(orig, index=False)
    parquet = root / "orig.parquet"
    d.to_parquet(parquet, index=False)
    folder = SyntheticData(syn, method="test",
                           schema=infer_schema(d, categorical=CAT, synthesized=["Income"])).save(
        root / "synfolder")
    return {"root": root, "orig": orig, "parquet": parquet, "syn": paths, "folder": folder,
            "data": d, "datasets": syn}


def _run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_help(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["utility", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--pmse", "--max-order", "--null", "--formula", "--synthesized", "--out"):
        assert flag in out
    # any order >= 0 is accepted (interactions of up to N + 1 columns): the help said {0,1}
    assert "--max-order N" in out and "{0,1}" not in out


def test_end_to_end_csv(files, tmp_path, capsys):
    out = tmp_path / "util"
    argv = ["utility", str(files["orig"]), *map(str, files["syn"]), "--categorical", *CAT,
            "--max-order", "0", "--out", str(out)]
    code, stdout, _ = _run(argv, capsys)
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["marginals.csv", "overlap.csv", "quality.csv",
                                                     "quality_pairs.csv", "summary.json",
                                                     "tables.csv"]
    s = json.loads((out / "summary.json").read_text())
    assert s["synthesized"] == ["Income"] and s["synthesized_inferred"] is True
    assert len(s["pmse"]["per_dataset"]) == 4
    assert s["pmse"]["mean"] == pytest.approx(np.mean(s["pmse"]["per_dataset"]))
    assert s["s_pmse"]["mean"] == pytest.approx(np.mean(s["s_pmse"]["per_dataset"]))
    assert s["null"] == "theory" and len(set(s["k"])) == 1 and s["k"][0] > 5
    io = s["interval_overlap"]
    assert len(io["per_dataset"]) == 4 and 0 <= io["mean"] <= 1
    assert io["estimands"][0]["estimand"] == "mean(Income)"
    ov = pd.read_csv(out / "overlap.csv")
    assert list(ov["estimand"]) == ["mean(Income)"]
    assert "pMSE" in stdout and "inferred" in stdout and "S_pMSE" in stdout
    assert isinstance(s["settings"]["pmse_random_seed"], int)  # a fresh seed is recorded
    # the numbers are the library's
    from bayes_risk.utility.pmse import PropensitySpec, pmse

    r = pmse(files["data"], files["datasets"], categorical=CAT,
             synthesized=["Income"],
             propensity=PropensitySpec(max_order=0))
    np.testing.assert_allclose(s["pmse"]["per_dataset"], r.pmse, rtol=1e-12)


def test_folder_parquet_formula_and_cart(files, tmp_path, capsys):
    out = tmp_path / "util2"
    argv = ["utility", str(files["parquet"]), str(files["folder"]), "--pmse", "cart",
            "--random-seed", "4", "--formula", "Income ~ Age + Marital",
            "--out", str(out)]
    code, stdout, err = _run(argv, capsys)
    assert code == 0, err
    # the roles come from the folder's manifest, not from --synthesized (it said "given")
    assert "synthesized columns (recorded in the release's manifest): Income" in stdout
    assert (out / "comparison.csv").is_file()
    comp = pd.read_csv(out / "comparison.csv")
    assert "Marital[T.2]" in set(comp["term"])  # folder schema: Marital is categorical
    s = json.loads((out / "summary.json").read_text())
    assert s["synthesized_inferred"] is False and s["null"] == "pairs"
    assert s["interval_overlap"]["kind"] == "formulas"
    # same seed, same numbers; rerun into the same folder is refused unless --overwrite
    code, _, _ = _run(argv, capsys)
    assert code == 2
    code, _, _ = _run(argv + ["--overwrite"], capsys)
    assert code == 0
    s2 = json.loads((out / "summary.json").read_text())
    assert s2["pmse"] == s["pmse"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--categorical", "Maritl"], "Maritl"),
        (["--synthesized", "Incom"], "Incom"),
        (["--null", "pairs", "--max-order", "-1"], "max-order"),
        (["--formula", "Income ~ Nope"], "could not be evaluated"),
        (["--synthesized", "Expenditure"], "US_COLUMNS_DIFFER"),
    ],
)
def test_bad_input_errors(files, tmp_path, capsys, extra, message):
    out = tmp_path / "bad"
    argv = ["utility", str(files["orig"]), *map(str, files["syn"][:2]), *extra, "--quiet",
            "--out", str(out)]
    code, _, err = _run(argv, capsys)
    assert code == 2
    assert message in err and "bayes-risk utility: error" in err
    assert not out.exists()
    assert not any(p.name.startswith(".bad") for p in tmp_path.iterdir())


def test_mismatched_columns_and_missing_file(files, tmp_path, capsys):
    bad = tmp_path / "bad_syn.csv"
    files["data"].drop(columns=["Educ"]).to_csv(bad, index=False)
    out = tmp_path / "o"
    code, _, err = _run(["utility", str(files["orig"]), str(bad), "--quiet", "--out", str(out)],
                        capsys)
    assert code == 2 and "Educ" in err and "MISSING_COLUMN" in err
    assert not out.exists()
    code, _, err = _run(["utility", str(files["orig"]), str(tmp_path / "nope.csv"), "--out",
                         str(out)], capsys)
    assert code == 2 and "nope.csv" in err and not out.exists()


def test_refuses_to_replace_foreign_folder(files, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    code, _, err = _run(["utility", str(files["orig"]), str(files["syn"][0]), "--quiet",
                         "--out", str(out)], capsys)
    assert code == 2 and "not empty" in err and "--overwrite" in err
    assert (out / "notes.txt").read_text() == "keep me"


def test_failure_during_write_leaves_previous_output(files, tmp_path, capsys, monkeypatch):
    out = tmp_path / "util"
    argv = ["utility", str(files["orig"]), *map(str, files["syn"][:2]), "--categorical", *CAT,
            "--max-order", "0", "--quiet", "--out", str(out)]
    assert cli.main(argv) == 0
    before = (out / "summary.json").read_text()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", boom)
    assert cli.main(argv[:-2] + ["--overwrite", "--out", str(out)]) == 2
    assert "disk full" in capsys.readouterr().err
    assert (out / "summary.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["util"]


@pytest.mark.reference
def test_reference_scenario1_through_cli(tmp_path, capsys):
    orig = shared_path("data", "CEdata.csv")
    folder = shared_path("reference", "identification", "synthetic")
    ref = pd.read_csv(shared_path("reference", "utility",
                                  "utility_gen_logit_maxorder0_scenario1.csv"))
    syn = [str(folder / f"scenario1_syn{l}.csv") for l in range(1, 21)]
    out = tmp_path / "ref"
    code, stdout, err = _run(["utility", str(orig), *syn, "--categorical", *CAT, "--max-order",
                              "0", "--null", "pairs", "--quiet", "--out", str(out)], capsys)
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text())
    np.testing.assert_allclose(s["pmse"]["per_dataset"], ref["pMSE"], rtol=1e-8)
    np.testing.assert_allclose(s["s_pmse"]["per_dataset"], ref["S_pMSE"], rtol=1e-8)
    assert s["synthesized"] == ["Income"]


def test_separation_warning_carries_its_code(files, tmp_path, capsys):
    """The pMSE warnings are printed and recorded under their codes (a one-word code such as
    SEPARATION was printed and recorded as 'DataWarning')."""
    d = files["data"]
    z = d.copy()
    z.loc[:149, "Tenure"] = 99  # a level only in the synthetic data: the propensities separate
    syn = tmp_path / "sep.csv"
    z.to_csv(syn, index=False)
    out = tmp_path / "util"
    # the release says it recodes Tenure (else SYNTHETIC_ONLY_LEVEL refuses it, issue 64)
    code, _, err = _run(["utility", str(files["orig"]), str(syn), "--categorical", *CAT,
                         "--max-order", "0", "--recoded", "Tenure", "--out", str(out), "-q"],
                        capsys)
    assert code == 0, err
    assert "warning [SEPARATION]: perfect or quasi-perfect separation" in err
    assert "[DataWarning]" not in err
    s = json.loads((out / "summary.json").read_text())
    codes = [w["code"] for w in s["run_warnings"]]
    assert "SEPARATION" in codes and "DataWarning" not in codes
    assert "DataWarning" not in s["warnings"]


def test_combining_rules_chosen_and_overridden(files, tmp_path, capsys):
    # a partial release (Income synthesized): Reiter's rules, inferred from the roles
    out = tmp_path / "util_rules"
    argv = ["utility", str(files["orig"]), *map(str, files["syn"]), "--categorical", *CAT,
            "--max-order", "0", "--out", str(out)]
    code, stdout, err = _run(argv, capsys)
    assert code == 0, err
    st = json.loads((out / "summary.json").read_text())["settings"]
    assert st["combining_rules"] == "partial" and st["combining_rules_source"] == "inferred"
    assert "combining rules: partial (Reiter (2003))" in stdout
    # --combining-rules overrides, and summary.json says so
    out2 = tmp_path / "util_rules2"
    code, stdout, err = _run([*argv[:-1], str(out2), "--combining-rules", "full-same-n"],
                             capsys)
    assert code == 0, err
    s = json.loads((out2 / "summary.json").read_text())
    assert s["settings"]["combining_rules"] == "full-same-n"
    assert s["settings"]["combining_rules_source"] == "user"
    assert "Raab, Nowok & Dibben (2016)" in stdout
    row = pd.read_csv(out2 / "overlap.csv").iloc[0]
    assert row["se_syn"] ** 2 == pytest.approx(row["within_var"] * (1 + 2 / 4), rel=1e-9)
    with pytest.raises(SystemExit) as exc:
        cli.main([*argv[:-1], str(tmp_path / "x"), "--combining-rules", "fully"])
    assert exc.value.code == 2 and "--combining-rules" in capsys.readouterr().err


def test_type_options_apply_on_top_of_the_manifest(files, tmp_path, capsys):
    """A release's manifest schema is not silently replaced: options naming the manifest's own
    types change nothing (Educ keeps its manifest type; the figures are the ones without
    options), and an option that changes a type is applied with SCHEMA_OVERRIDDEN naming the
    column and both types."""
    d = files["data"]
    folder = SyntheticData(files["datasets"], method="test", schema=infer_schema(
        d, categorical=[*CAT, "Educ"], synthesized=["Income"])).save(tmp_path / "rel")

    def run(name, *opts):
        out = tmp_path / name
        code, _, err = _run(["utility", str(files["orig"]), str(folder), *opts, "--max-order",
                             "0", "--random-seed", "1", "--quiet", "--out", str(out)], capsys)
        assert code == 0, err
        return json.loads((out / "summary.json").read_text()), err

    plain, _ = run("plain")
    same, err = run("same", "--categorical", *CAT)  # Educ left out: the manifest's categorical
    codes = lambda s: {w["code"] for w in s["run_warnings"]}  # noqa: E731
    assert "SCHEMA_OVERRIDDEN" not in err and "SCHEMA_OVERRIDDEN" not in codes(same)
    assert same["pmse"] == plain["pmse"] and same["columns"] == plain["columns"]
    changed, err = run("changed", "--count", "Educ")
    assert "warning [SCHEMA_OVERRIDDEN]" in err and "Educ (categorical -> count)" in err
    assert "SCHEMA_OVERRIDDEN" in codes(changed)
    assert changed["pmse"] != plain["pmse"]  # Educ entered as a number
