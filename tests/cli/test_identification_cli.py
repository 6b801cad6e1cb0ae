"""``bayes-risk identification`` end to end (through ``bayes_risk.cli.main``)."""

from __future__ import annotations

import argparse
import json
import os
import re

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk import MatchSpec


def _main(argv):
    """``bayes_risk.cli.main``; while sibling sub-commands are still missing from the tree, the
    same error handling is applied to a parser holding only this sub-command."""
    try:
        from bayes_risk.cli import build_parser, main

        build_parser()
    except ModuleNotFoundError as err:
        if "identification" in str(err):
            raise
        from bayes_risk.cli.parsers import identification
        from bayes_risk.exceptions import BayesRiskError

        p = argparse.ArgumentParser(prog="bayes-risk")
        identification.add_parser(p.add_subparsers(dest="command"))
        args = p.parse_args(argv)
        try:
            return args.handler(args)
        except BayesRiskError:
            return 2
    return main(argv)


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(5)
    n = 60
    y = pd.DataFrame({
        "Age": rng.integers(20, 70, n), "Urban": rng.integers(1, 3, n),
        "Marital": rng.integers(1, 4, n), "Income": rng.lognormal(10, 0.6, n).round(0),
    })
    paths = [tmp_path / "orig.csv"]
    y.to_csv(paths[0], index=False)
    for l in range(3):
        z = y.assign(Income=(y.Income * rng.lognormal(0, 0.15, n)).round(0))
        p = tmp_path / f"syn{l + 1}.parquet"
        z.to_parquet(p)
        paths.append(p)
    return y, paths


BASE = ["--known-unsynthesized", "Age", "Urban", "Marital", "--known-synthesized", "Income",
        "--categorical", "Urban", "Marital", "--radius", "Age=0.1", "--radius", "Income=0.1",
        "--radius-type", "percentage", "--quiet"]


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_cli_pooled_with_sweep(files, tmp_path):
    y, paths = files
    out = tmp_path / "out"
    rc = _main(["identification", *map(str, paths), *BASE,
                "--radius-sweep", "0.01,0.025,0.05,0.1,0.2,0.3", "--out", str(out)])
    assert rc == 0
    rec = pd.read_csv(out / "records.csv")
    assert len(rec) == len(y)
    assert {"target", "c", "T", "K", "W", "IR"} <= set(rec.columns)
    summ = json.loads((out / "summary.json").read_text())
    for k in ("expected_match_risk", "expected_match_rate", "true_match_risk", "n_unique",
              "true_match_rate_targets", "true_match_rate_unique", "false_match_rate"):
        assert k in summ["summary"]
    assert summ["settings"]["aggregation"] == "pooled"
    assert summ["radius_sweep"]["r_star"] in [0.01, 0.025, 0.05, 0.1, 0.2, 0.3]
    sw = pd.read_csv(out / "radius_sweep.csv")
    assert len(sw) == 6 * 3 and list(sw.columns) == ["radius", "dataset", "expected_match_risk",
                                                "true_match_rate_targets"]
    assert (out / "radius_sweep.png").stat().st_size > 1000
    from bayes_risk.data.synthetic import read_synthetic
    from bayes_risk.identification.api import identification_risk

    direct = identification_risk(y, read_synthetic(paths[1:]),
                                 known=["Age", "Urban", "Marital", "Income"],
                                 synthesized=["Income"], categorical=["Urban", "Marital"],
                                 match=MatchSpec(radius={"Age": 0.1, "Income": 0.1}),
                                 progressbar=False)
    assert summ["summary"]["expected_match_risk"] == pytest.approx(
        direct.file["expected_match_risk"])


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_cli_per_dataset_unknown_threshold(files, tmp_path):
    y, paths = files
    counts = y.groupby(["Age", "Urban", "Marital"]).size().rename("F").reset_index()
    counts["F"] = counts["F"] * 3
    cfile = tmp_path / "counts.csv"
    counts.to_csv(cfile, index=False)
    out = tmp_path / "o2"
    argv = ["identification", *map(str, paths), "--known-unsynthesized", "Age", "Urban",
            "Marital", "--categorical", "Urban", "Marital", "--aggregation", "per-dataset",
            "--membership", "unknown", "--population-counts", f"true:{cfile}",
            "--strategy", "threshold:0.5", "--records-output", "per-dataset", "--quiet",
            "--out", str(out)]
    assert _main(argv) == 0
    rec = pd.read_csv(out / "records.csv")
    assert len(rec) == len(y) * 3
    assert list(rec.columns[:7]) == ["target", "dataset", "c", "T", "K", "W", "IR"]
    summ = json.loads((out / "summary.json").read_text())
    assert len(summ["summary"]["per_dataset"]["expected_match_risk"]) == 3


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_cli_targets_and_errors(files, tmp_path):
    y, paths = files
    y2 = y.assign(pid=np.arange(len(y)) + 1000)
    y2.to_csv(paths[0], index=False)
    tg = y2.iloc[:5].copy()
    tg.loc[tg.index[0], "pid"] = 1
    tfile = tmp_path / "targets.csv"
    tg.to_csv(tfile, index=False)
    out = tmp_path / "o3"
    assert _main(["identification", *map(str, paths), *BASE, "--targets", str(tfile),
                  "--target-id", "pid", "--out", str(out)]) == 0
    rec = pd.read_csv(out / "records.csv")
    assert rec["in_sample"].tolist() == [False, True, True, True, True]
    bad = tmp_path / "bad"
    rc = _main(["identification", *map(str, paths), "--known-unsynthesized", "Agee",
                "--out", str(bad)])
    assert rc == 2 and not bad.exists()


@pytest.mark.reference
@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_cli_compat_reproduces_reference(tmp_path):
    base = shared_path("reference", "identification")
    syn = [base / "synthetic" / f"scenario1_syn{l}.csv" for l in (1, 2)]
    out = tmp_path / "compat"
    rc = _main(["identification", str(shared_path("data", "CEdata.csv")), *map(str, syn),
                "--known-unsynthesized", "Age", "Urban", "Marital", "--known-synthesized",
                "Income", "--categorical", "Urban", "Marital", "Tenure", "--radius", "0.1",
                "--radius", "0.1", "--compat", "IdentificationRiskCalculation",
                "--records-output", "per-dataset",
                "--quiet", "--out", str(out)])
    assert rc == 0
    rec = pd.read_csv(out / "records.csv")
    ref_c = pd.read_csv(base / "scenario1_r0p1" / "scenario1_r0p1_c.csv")
    ref_T = pd.read_csv(base / "scenario1_r0p1" / "scenario1_r0p1_T.csv")
    for l in (1, 2):
        sub = rec[rec.dataset == l]
        np.testing.assert_array_equal(sub["c"].to_numpy(), ref_c[f"syn{l}"].to_numpy())
        np.testing.assert_array_equal(sub["T"].to_numpy(), ref_T[f"syn{l}"].to_numpy())


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_cli_records_output_modes(files, tmp_path, capsys):
    """--records-output: one row per target (default), per target and dataset, or no file."""
    from bayes_risk.data.io import read_table
    from bayes_risk.data.synthetic import read_synthetic
    from bayes_risk.identification.api import identification_risk

    y, paths = files
    argv = ["identification", *map(str, paths), *BASE, "--aggregation", "per-dataset"]
    direct = identification_risk(read_table(paths[0]), read_synthetic(paths[1:]),
                                 known=["Age", "Urban", "Marital", "Income"],
                                 synthesized=["Income"],
                                 categorical=["Urban", "Marital"], aggregation="per_dataset",
                                 match=MatchSpec(radius={"Age": 0.1, "Income": 0.1}),
                                 progressbar=False)
    # default: per target
    out = tmp_path / "pt"
    assert _main([*argv, "--out", str(out)]) == 0
    rec = pd.read_csv(out / "records.csv")
    assert list(rec.columns) == ["target", "IR", "c_mean", "T_datasets", "K_datasets",
                                 "W_datasets", "declared_datasets"]
    assert len(rec) == len(y)
    np.testing.assert_array_equal(rec["target"], np.arange(len(y)))
    np.testing.assert_allclose(rec["IR"], direct.record_IR, rtol=1e-15)
    np.testing.assert_allclose(rec["c_mean"], direct.c.mean(axis=1), rtol=1e-15)
    np.testing.assert_array_equal(rec["K_datasets"], direct.K.sum(axis=1))
    np.testing.assert_array_equal(rec["W_datasets"], direct.W.sum(axis=1))
    np.testing.assert_array_equal(rec["declared_datasets"], direct.declared.sum(axis=1))
    assert rec["IR"].sum() == pytest.approx(
        json.loads((out / "summary.json").read_text())["summary"]["expected_match_risk"])
    # per target and dataset: the long table, as the library's records
    out = tmp_path / "pd"
    assert _main([*argv, "--records-output", "per-dataset", "--out", str(out)]) == 0
    rec = pd.read_csv(out / "records.csv")
    assert len(rec) == len(y) * 3
    pd.testing.assert_frame_equal(rec[["target", "dataset", "c", "T", "K", "W"]],
                                  direct.records[["target", "dataset", "c", "T", "K", "W"]])
    np.testing.assert_allclose(rec["IR"], direct.records["IR"], rtol=1e-15)
    assert rec["declared"].tolist() == direct.records["declared"].tolist()
    # none: summary only, which records the choice
    out = tmp_path / "none"
    assert _main([*argv, "--records-output", "none", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]
    summ = json.loads((out / "summary.json").read_text())
    assert summ["settings"]["records_output"] == "none"
    # pooled probabilities have no per-dataset table: an error, nothing written
    out = tmp_path / "bad"
    rc = _main(["identification", *map(str, paths), *BASE, "--records-output", "per-dataset",
                "--out", str(out)])
    assert rc == 2 and not out.exists()
    # named by the value the user left as the default, not the command's internal run
    # without probabilities ("pooled_measures")
    assert "Got --aggregation pooled." in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_cli_pooled_records_are_the_library_records(files, tmp_path):
    """Pooled: records.csv (pyarrow's writer) reads back as the library's record table."""
    from bayes_risk.data.io import read_table
    from bayes_risk.data.synthetic import read_synthetic
    from bayes_risk.identification.api import identification_risk

    y, paths = files
    out = tmp_path / "pooled"
    assert _main(["identification", *map(str, paths), *BASE, "--out", str(out)]) == 0
    rec = pd.read_csv(out / "records.csv")
    direct = identification_risk(read_table(paths[0]), read_synthetic(paths[1:]),
                                 known=["Age", "Urban", "Marital", "Income"],
                                 synthesized=["Income"],
                                 categorical=["Urban", "Marital"],
                                 match=MatchSpec(radius={"Age": 0.1, "Income": 0.1}),
                                 progressbar=False).records
    assert list(rec.columns) == list(direct.columns)
    for col in direct.columns:
        a, b = rec[col].to_numpy(), direct[col].to_numpy()
        if col == "record":
            b = b.astype(np.int64)
        np.testing.assert_array_equal(a, b)  # floats round-trip exactly


def _write_two_releases(tmp_path, *, seed: int, n: int) -> None:
    """``y.csv`` (categorical ``a``, continuous ``x``) and two released files ``z1/z2.csv``
    whose ``x`` is perturbed by ~10 %, for the import-footprint runs below."""
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({"a": rng.integers(0, 3, n), "x": rng.lognormal(3, 0.5, n)})
    y.to_csv(tmp_path / "y.csv", index=False)
    for l in (1, 2):
        y.assign(x=y.x * rng.lognormal(0, 0.1, n)).to_csv(tmp_path / f"z{l}.csv", index=False)


def test_identification_path_imports(tmp_path):
    """A small `identification` run imports neither PyMC, ArviZ, scipy.stats, the Bayesian
    models nor numba (numba only for problems large enough to repay loading it)."""
    import subprocess
    import sys

    _write_two_releases(tmp_path, seed=1, n=50)
    code = """
import contextlib, io, sys, warnings
warnings.simplefilter("ignore")
from bayes_risk.cli import main
for agg in ("pooled", "per-dataset"):
    with contextlib.redirect_stdout(io.StringIO()):  # the run's summary
        assert main(["identification", "y.csv", "z1.csv", "z2.csv", "--known-unsynthesized",
                     "a", "--known-synthesized", "x", "--categorical", "a", "--radius", "0.1",
                     "--aggregation", agg, "--quiet", "--out", "out-" + agg]) == 0
heavy = [m for m in ("pymc", "arviz", "scipy.stats", "bayes_risk.models", "numba",
                     "matplotlib") if m in sys.modules]
print(heavy)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_identification_compat_path_imports_stay_lean(tmp_path):
    """The command as the R package's users run it (per dataset, ``--compat``, CSV in, CSV and
    JSON out) imports no SciPy at all, none of the other measures' packages or result classes
    (``bayes_risk.results`` is lazy) and not the posterior-replicate modules
    (``bayes_risk.identification`` is lazy): its start-up is ``import pandas`` plus the
    identification modules. pyarrow allocates with the C library's malloc in that process."""
    import subprocess
    import sys

    _write_two_releases(tmp_path, seed=2, n=40)
    code = """
import contextlib, io, sys, warnings
warnings.simplefilter("ignore")
from bayes_risk.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["identification", "y.csv", "z1.csv", "z2.csv", "--known-unsynthesized", "a",
                 "--known-synthesized", "x", "--categorical", "a", "--radius", "0.1",
                 "--compat", "IdentificationRiskCalculation", "--quiet", "--out", "out"]) == 0
heavy = ("scipy", "sklearn", "dask", "numba", "matplotlib", "pymc", "arviz", "bayes_risk.models",
         "bayes_risk.attribute", "bayes_risk.utility", "bayes_risk.disclosure",
         "bayes_risk.auditing", "bayes_risk.results.attribute", "bayes_risk.results.utility",
         "bayes_risk.results.disclosure", "bayes_risk.results.combining",
         "bayes_risk.results.visit_orders", "bayes_risk.identification.replicates",
         "bayes_risk.identification.uncertainty", "bayes_risk.identification._replicate_batches")
print(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy)))
import os
print(os.environ.get("OPENBLAS_NUM_THREADS"))  # numpy loaded single-threaded, nothing leaked
import pyarrow
print(pyarrow.default_memory_pool().backend_name)  # the C library's allocator
"""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "ARROW_DEFAULT_MEMORY_POOL")}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True, env=env)
    assert out.stdout.split("\n")[:3] == ["[]", "None", "system"], out.stdout + out.stderr
    assert (tmp_path / "out" / "records.csv").is_file()


def test_write_csv_round_trip_and_mixed_fallback(tmp_path):
    """pyarrow's writer: floats read back bit for bit, booleans and missing values survive;
    a mixed-type object column (pyarrow cannot convert it) is written by pandas."""
    from bayes_risk.data.io import write_csv

    rng = np.random.default_rng(3)
    df = pd.DataFrame({
        "x": np.concatenate([rng.random(50), [1 / 3, 0.1 + 0.2, 1e-300, 2.0, np.nan]]),
        "b": np.arange(55) % 2 == 0,
        "i": np.arange(55, dtype=np.int64),
        "s": pd.array([f"id,{k}" if k % 7 else None for k in range(55)], dtype=object),
    })
    write_csv(df, tmp_path / "a.csv")
    back = pd.read_csv(tmp_path / "a.csv")
    a, b = back["x"].to_numpy(), df["x"].to_numpy()
    assert np.array_equal(a, b, equal_nan=True)
    assert back["b"].tolist() == df["b"].tolist()
    assert back["i"].tolist() == df["i"].tolist()
    assert back["s"].isna().tolist() == df["s"].isna().tolist()
    assert back["s"].dropna().tolist() == df["s"].dropna().tolist()
    mixed = pd.DataFrame({"target": pd.array([1, "a", 2.5], dtype=object), "v": [1.0, 2.0, 3.0]})
    write_csv(mixed, tmp_path / "m.csv")
    assert (tmp_path / "m.csv").read_text().splitlines() == ["target,v", "1,1.0", "a,2.0",
                                                              "2.5,3.0"]


def test_identification_quiet_prints_the_path_and_warnings_only(tmp_path):
    """``--quiet`` as in every sub-command (docs: command line): the path written (stdout) and
    the run's warnings (stderr, one line each, also in ``summary.json``); progress and the
    summary go."""
    import subprocess
    import sys

    _write_two_releases(tmp_path, seed=3, n=60)
    argv = [sys.executable, "-m", "bayes_risk", "identification", "y.csv", "z1.csv", "z2.csv",
            "--known-unsynthesized", "a", "--known-synthesized", "x", "--categorical", "a",
            "--radius", "0.001", "--fallback", "none"]  # x is perturbed by ~10 %: no match
    runs = {}
    for quiet in (False, True):
        out = f"out-{quiet}"
        runs[quiet] = subprocess.run([*argv, *(["--quiet"] if quiet else []), "--out", out],
                                     cwd=tmp_path, capture_output=True, text=True, check=True)
        summ = json.loads((tmp_path / out / "summary.json").read_text())
        assert [w["code"] for w in summ["run_warnings"]] == ["NO_MATCH"]
    loud, quiet = runs[False], runs[True]
    assert quiet.stdout == "out-True\n"  # --quiet: the path written, no summary
    lines = loud.stdout.splitlines()
    assert lines[0].startswith("identification risk (pooled) of 2 synthetic dataset(s)")
    # the expected match risk is a count of targets, with its per cent of them
    assert re.search(r"expected match rate [\d.]+ % = [\d.]+ of 60 targets \(the expected "
                     r"match risk\)$", lines[0]), lines[0]
    assert lines[-1].startswith("  wrote ") and len(lines) == 3
    warned = [ln for ln in quiet.stderr.splitlines() if ln.strip()]
    assert len(warned) == 1 and warned[0].startswith("warning [NO_MATCH]: "), quiet.stderr
    assert warned[0] in loud.stderr.splitlines()
    assert any(not ln.startswith("warning [") for ln in loud.stderr.splitlines() if ln.strip())


def test_cli_missing_radius_names_the_option(files, tmp_path, capsys):
    """A continuous known column without a radius: the error gives the command-line form (it
    gave only the Python argument radius={column: r})."""
    _, paths = files
    capsys.readouterr()
    rc = _main(["identification", *map(str, paths), "--known-unsynthesized", "Age", "Urban",
                "--known-synthesized", "Income", "--categorical", "Urban", "-q",
                "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "need a radius" in err and "--radius Income=R" in err, err


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_cli_per_dataset_says_it_is_the_smaller_intruder(files, tmp_path, capsys):
    """Per-dataset figures are those of the intruder holding one dataset: the headline says
    that the intruder holding every dataset pools them (the audit's verdict reads the larger)."""
    _, paths = files
    base = [b for b in BASE if b != "--quiet"]
    assert _main(["identification", *map(str, paths), *base, "--aggregation", "per-dataset",
                  "--out", str(tmp_path / "pd")]) == 0
    assert "one holding all 3 pools them" in capsys.readouterr().out
    assert _main(["identification", *map(str, paths), *base, "--out",
                  str(tmp_path / "po")]) == 0
    assert "pools them" not in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_cli_known_sweep(files, tmp_path, capsys):
    y, paths = files
    out = tmp_path / "ks"
    rc = _main(["identification", *map(str, paths), *BASE[:-1],  # not --quiet: the lines
                "--known-sweep", "Age", "Urban", "Marital", "Income", "--max-size", "2",
                "--out", str(out)])
    assert rc == 0
    # the run's lines (IdentificationRun.text_lines): the result's headline, the sweep's line
    printed = [ln.strip() for ln in capsys.readouterr().out.splitlines()]
    assert printed[0].startswith("identification risk (pooled) of")
    assert printed[-2].startswith("knowledge sweep over 16 subsets of Age, Urban, Marital, "
                                  "Income: Withholding ")
    tab = pd.read_csv(out / "known_sweep.csv")
    # every subset up to 2 (1 + 4 + 6), the full set minus one (4), the full set; the greedy
    # path adds nothing beyond them at four candidates
    assert len(tab) == 16
    assert {"known", "n_known", "expected_match_risk", "frontier", "greedy_step"} <= set(tab)
    drv = pd.read_csv(out / "known_sweep_drivers.csv")
    assert sorted(drv["variable"]) == ["Age", "Income", "Marital", "Urban"]
    lev = pd.read_csv(out / "known_sweep_levels.csv")
    assert set(lev["variable"]) == {"Age", "Urban", "Marital", "Income"}
    assert (out / "known_sweep.png").stat().st_size > 1000
    assert (out / "known_sweep_drivers.png").stat().st_size > 1000
    summ = json.loads((out / "summary.json").read_text())
    ks = summ["known_sweep"]
    assert ks["synthesized"] == ["Income"]  # the role given by --known-synthesized
    full = [r for r in ks["subsets"] if r["n_known"] == 4][0]
    # the full set is the main run's known set: the same risk
    assert full["expected_match_risk"] == pytest.approx(summ["summary"]["expected_match_risk"],
                                                        rel=1e-12)


def test_cli_known_sweep_bad_max_size(files, tmp_path, capsys):
    _, paths = files
    rc = _main(["identification", *map(str, paths), *BASE, "--known-sweep", "Age", "Urban",
                "--max-size", "5", "--out", str(tmp_path / "bad")])
    assert rc != 0
    assert "--max-size" in capsys.readouterr().err
    assert not (tmp_path / "bad" / "summary.json").exists()


def test_cli_without_known_columns_names_the_options(files, tmp_path, capsys):
    # the sweep is added to a run: without --known-* the error names the command's options,
    # not the Python arguments
    _, paths = files
    rc = _main(["identification", *map(str, paths), "--known-sweep", "Age", "Urban",
                "--out", str(tmp_path / "none")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "[OPTION_REQUIRED]" in err and "--known-unsynthesized" in err
    assert "--known-sweep adds subsets" in err and "known=[" not in err
    assert not (tmp_path / "none").exists()


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")
def test_cli_memory_limit(files, tmp_path, capsys, monkeypatch):
    """``--memory``: a limit the run fits in gives the numbers of a run without it (the pooled
    engine reads its chunk size from the limit); a limit below what the process already holds is
    refused before the matching with MEMORY_TOO_LARGE naming --memory, nothing written; a
    malformed size is BAD_OPTION_VALUE."""
    from bayes_risk import _memory

    _, paths = files
    args = ["identification", *map(str, paths), *BASE]
    assert _main([*args, "--out", str(tmp_path / "free")]) == 0
    limits = []
    real = _memory.working_bytes

    def spy(cap):
        limits.append(_memory.current_limit())
        return real(cap)

    monkeypatch.setattr(_memory, "working_bytes", spy)
    limit = _memory.resident_memory() + 2 * 10**9
    assert _main([*args, "--memory", str(limit), "--out", str(tmp_path / "lim")]) == 0
    assert limits == [limit]
    assert (tmp_path / "free" / "records.csv").read_bytes() == \
        (tmp_path / "lim" / "records.csv").read_bytes()
    assert _memory.current_limit() is None  # the limit ends with the run
    capsys.readouterr()
    assert _main([*args, "--memory", "2MB", "--out", str(tmp_path / "tiny")]) == 2
    err = capsys.readouterr().err
    assert "[MEMORY_TOO_LARGE]" in err and "--memory" in err, err
    assert not (tmp_path / "tiny").exists()
    for bad in ("2XB", "0.5MB", "-1GB"):
        assert _main([*args, f"--memory={bad}", "--out", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err
        assert "[BAD_OPTION_VALUE]" in err and "--memory" in err, err
    assert not (tmp_path / "bad").exists()
