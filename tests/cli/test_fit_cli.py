"""``bayes-risk fit`` end to end through ``bayes_risk.cli.main`` (and ``synthesize`` round trip)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import bayes_risk.cli as cli
from bayes_risk.data import make_acs_like
from bayes_risk.models import load_model

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")


def _write_csv(folder):
    df = make_acs_like(300, random_seed=5)[["SEX", "AGE", "MAR", "MIG"]]
    df = df.astype("int64")  # integer-coded factors, as in a CSV
    path = folder / "data.csv"
    df.to_csv(path, index=False)
    return path, df


@pytest.fixture
def csv(tmp_path):
    return _write_csv(tmp_path)


BASE = ["--method", "dpmpm", "--categorical", "SEX", "AGE", "MAR", "MIG",
        "--components", "4", "--tune", "20", "--draws", "30", "--quiet", "--random-seed", "1"]


@pytest.fixture(scope="module")
def base_fit(tmp_path_factory):
    """``bayes-risk fit DATA *BASE --out DIR`` without ``--quiet`` (its summary is read), run
    once for the tests that read that very run: its exit status, the folder it wrote and what it
    printed (stdout, stderr)."""
    folder = tmp_path_factory.mktemp("base_fit")
    path, df = _write_csv(folder)
    out = folder / "model"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        rc = cli.main(["fit", str(path), *[a for a in BASE if a != "--quiet"], "--out",
                       str(out)])
    return SimpleNamespace(rc=rc, path=path, df=df, out=out, stdout=stdout.getvalue(),
                           stderr=stderr.getvalue())


def test_fit_writes_model_dir(base_fit):
    df, out = base_fit.df, base_fit.out
    assert base_fit.rc == 0
    meta = json.loads((out / "model.json").read_text())
    assert meta["method"] == "dpmpm" and meta["settings"]["n_components"] == 4
    assert meta["settings"]["tune"] == 20 and meta["settings"]["draws"] == 30
    assert meta["settings"]["random_seed"] == 1
    assert [c["role"] for c in meta["schema"]["columns"]] == ["synthesized"] * 4
    assert (out / "posterior.nc").is_file()
    conv = json.loads((out / "convergence.json").read_text())
    assert conv["chains"] == 2 and {"alpha", "loglik", "k_occupied"} <= set(conv["quantities"])
    model = load_model(out)
    assert model.n_draws == 2 * 30 and model.n_records == len(df)  # DPMPM: 2 chains by default
    printed = SimpleNamespace(out=base_fit.stdout, err=base_fit.stderr)
    # progress on stderr (into a pipe: the bar's last line), the summary on stdout (with
    # --quiet only the path: tests/cli/test_bad_input_corpus.py)
    assert re.search(r"^Gibbs sweeps \(.*\): 100/100 sweeps in ", printed.err, re.M), printed.err
    assert "Sampling" not in printed.err
    assert printed.out.startswith("fitted dpmpm to 300 records x 4 columns (2 chain(s) x 30")
    assert "convergence: max R-hat" in printed.out and f"wrote {out}" in printed.out


def test_dpmpm_models_every_column_as_categorical(tmp_path, csv, base_fit, capsys):
    """--method dpmpm needs no --categorical list: integer-coded columns are categories (the
    only type DPMPM models); the fit equals the one with the explicit list (``base_fit``)."""
    path, df = csv
    no_list = [a for a in BASE if a not in ("--categorical", "SEX", "AGE", "MAR", "MIG")]
    assert cli.main(["fit", str(path), *no_list, "--out", str(tmp_path / "a")]) == 0
    assert base_fit.rc == 0
    a, b = load_model(tmp_path / "a"), load_model(base_fit.out)
    assert [s.type for s in a.schema_] == ["categorical"] * 4
    np.testing.assert_array_equal(a._stacked("pi"), b._stacked("pi"))
    # told otherwise: DPMPM refuses a column declared another type, by name
    rc = cli.main(["fit", str(path), *no_list, "--count", "AGE", "--out", str(tmp_path / "c")])
    assert rc == 2 and "categorical columns only" in capsys.readouterr().err
    # values that are not whole numbers are not silently turned into thousands of categories
    df.assign(INC=np.linspace(0.5, 99.5, len(df))).to_csv(tmp_path / "inc.csv", index=False)
    rc = cli.main(["fit", str(tmp_path / "inc.csv"), *no_list, "--out", str(tmp_path / "d")])
    err = capsys.readouterr().err
    assert rc == 2 and "column 'INC' has values that are not whole numbers" in err
    assert not (tmp_path / "c").exists() and not (tmp_path / "d").exists()


def test_fit_same_seed_same_posterior(tmp_path, csv, base_fit):
    # a second run of base_fit's command line (on a copy of its data): the same draws
    path, _ = csv
    assert cli.main(["fit", str(path), *BASE, "--out", str(tmp_path / "b")]) == 0
    assert base_fit.rc == 0
    a, b = load_model(base_fit.out), load_model(tmp_path / "b")
    np.testing.assert_array_equal(a._stacked("pi"), b._stacked("pi"))


def test_fit_partial_synthesis_and_model_options(tmp_path, csv):
    path, df = csv
    out = tmp_path / "m"
    argv = ["fit", str(path), *BASE, "--synthesize", "MAR", "--synthesis-mode", "posterior_class",
            "--alpha-prior", "1", "2", "--columns", "SEX", "AGE", "MAR", "MIG", "--out", str(out)]
    assert cli.main(argv) == 0
    model = load_model(out)
    assert model.schema_.synthesized == ["MAR"]
    assert model.synthesis_mode_ == "posterior_class" and model.model_class == "O"
    assert model.alpha_prior == (1.0, 2.0)
    z = model.synthesize(1, random_seed=2)[0]
    assert z["SEX"].equals(df["SEX"]) and z["AGE"].equals(df["AGE"])


@pytest.mark.skipif(
    importlib.util.find_spec("bayes_risk.cli.synthesize") is None,
    reason="bayes-risk synthesize is not in this checkout",
)
def test_fit_then_synthesize_round_trip(tmp_path, base_fit):
    from bayes_risk.data import SyntheticData

    df = base_fit.df
    mdir, sdir = base_fit.out, tmp_path / "syn"
    assert base_fit.rc == 0
    rc = cli.main(["synthesize", "--model", str(mdir), "-m", "3", "--random-seed", "2",
                   "--out", str(sdir)])
    assert rc == 0
    syn = SyntheticData.load(sdir)
    assert syn.m == 3 and syn.method == "dpmpm" and syn.draw_index == [19, 39, 59]
    direct = load_model(mdir).synthesize(3, random_seed=2)
    for a, b in zip(syn, direct, strict=False):
        np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
    assert list(syn[0].columns) == list(df.columns)


def test_fit_errors(tmp_path, csv, capsys):
    path, _ = csv
    rc = cli.main(["fit", str(path), "--quiet", "--out", str(tmp_path / "x")])
    assert rc == 2 and "--method is required" in capsys.readouterr().err
    rc = cli.main(["fit", str(path), *BASE, "--components", "0", "--out", str(tmp_path / "y")])
    assert rc == 2 and "--components (the truncation level K) must be" in capsys.readouterr().err
    rc = cli.main(["fit", str(path), *BASE, "--columns", "SEXX", "--out", str(tmp_path / "z")])
    assert rc == 2 and "Did you mean 'SEX'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
    rc = cli.main(["fit", str(tmp_path / "nope.csv"), *BASE, "--out", str(tmp_path / "w")])
    assert rc == 2
    # a model that takes count columns only: the error gives the command-line options too
    capsys.readouterr()
    cont = tmp_path / "cont.csv"
    pd.DataFrame({"n": [1, 2, 3, 4], "x": [0.5, 1.5, 2.25, 3.0]}).to_csv(cont, index=False)
    rc = cli.main(["fit", str(cont), "--method", "poisson-mixture", "--quiet",
                   "--out", str(tmp_path / "p")])
    err = capsys.readouterr().err
    assert rc == 2 and "count columns only" in err and "--count COL" in err, err


def test_option_of_another_model_is_refused(tmp_path, csv, capsys):
    path, _ = csv
    parser = cli.build_parser()
    fit_help = parser._subparsers._group_actions[0].choices["fit"].format_help()
    if "--variant" not in fit_help:
        pytest.skip("no other model declares --variant in this checkout")
    rc = cli.main(["fit", str(path), *BASE, "--variant", "mm", "--out", str(tmp_path / "v")])
    assert rc == 2
    assert "--variant: not an option of --method dpmpm" in capsys.readouterr().err
    assert not (tmp_path / "v").exists()


def test_convergence_warnings_printed_one_line(base_fit):
    assert base_fit.rc == 0
    err = base_fit.stderr
    # 30 draws cannot give ESS >= 100: the user is told, in one line per warning
    assert "warning [LOW_ESS]: DPMPM: MCMC may not have converged" in err  # coded (issue 10)
    assert "model.fit(" not in err


def test_failed_check_named_in_headline_and_summary(base_fit):
    """Issue 35 item 2: a failed convergence check is named — fit, quantity, value — in the
    headline, and recorded in summary.json with its code, fit, quantity, value and threshold,
    the values of convergence.json."""
    out = base_fit.out
    assert base_fit.rc == 0
    printed = base_fit.stdout
    summ = json.loads((out / "summary.json").read_text())
    conv = json.loads((out / "convergence.json").read_text())
    checks = summ["failed_convergence_checks"]
    assert summ["convergence_passed"] is False and checks
    assert checks == [dict(c, fit="model") for c in conv["failed_checks"]]
    for c in checks:
        assert set(c) == {"code", "fit", "quantity", "statistic", "value", "threshold"}
        assert c["value"] == conv["quantities"][c["quantity"]][c["statistic"]]
        assert c["threshold"] == (1.01 if c["code"] == "RHAT_HIGH" else 200.0)
    (line,) = [ln for ln in printed.splitlines() if "convergence FAILED for the dpmpm fit" in ln]
    low = min((c for c in checks if c["code"] == "LOW_ESS"), key=lambda c: c["value"])
    name = {"ess_bulk": "bulk ESS", "ess_tail": "tail ESS"}[low["statistic"]]
    assert f"LOW_ESS: {name} of {low['quantity']} {low['value']:.0f} < 200" in line
    assert f"({len(checks)} failed check(s) in all: convergence.json)" in line
    assert {"LOW_ESS"} <= set(summ["warnings"])
    # the library says it in the same words (the command prints the model's text)
    from bayes_risk.models import load_model

    text = load_model(out).convergence_text().splitlines()
    shown = [ln.strip() for ln in printed.splitlines()]
    assert text[0] in shown[0] and "draws after" in text[0]
    assert all(t in shown for t in text[1:])
    assert any(t.startswith("convergence: max R-hat") for t in text) and line.strip() in text


def test_passed_checks_leave_no_failed_check(tmp_path, csv, capsys, monkeypatch):
    import bayes_risk.models._bayesian.convergence as bc

    # every check reads the thresholds in their one home when it runs
    monkeypatch.setattr(bc, "ESS_MIN", 0.0)  # every ESS passes; R-hat may still fail
    monkeypatch.setattr(bc, "RHAT_MAX", float("inf"))
    path, _ = csv
    assert cli.main(["fit", str(path), *BASE, "--components", "30", "--out",
                     str(tmp_path / "m")]) == 0
    summ = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert summ["failed_convergence_checks"] == []
    assert "convergence FAILED" not in capsys.readouterr().out


def test_fit_records_selects_the_synthesized_records(tmp_path, csv, capsys):
    path, df = csv
    recs = tmp_path / "recs.txt"
    chosen = [0, 5, 7, 120, 299]
    recs.write_text("\n".join(map(str, chosen)) + "\n")
    out = tmp_path / "m"
    argv = ["fit", str(path), *BASE, "--synthesize", "MAR", "--records", str(recs),
            "--out", str(out)]
    assert cli.main(argv) == 0
    model = load_model(out)
    np.testing.assert_array_equal(np.flatnonzero(model.synthesized_records_), chosen)
    z = model.synthesize(2, random_seed=3)
    keep = np.setdiff1d(np.arange(len(df)), chosen)
    for d in z:
        np.testing.assert_array_equal(d["MAR"].to_numpy()[keep], df["MAR"].to_numpy()[keep])
    # the Poisson mixture (and the regression chain) accept it too
    pm = ["fit", str(path), "--method", "poisson-mixture", "--variant", "mm", "--columns", "AGE",
          "--components", "3", "--tune", "5", "--draws", "5", "--quiet", "--random-seed", "1",
          "--records", str(recs), "--out", str(tmp_path / "p")]
    assert cli.main(pm) == 0
    pmodel = load_model(tmp_path / "p")
    np.testing.assert_array_equal(np.flatnonzero(pmodel.synthesized_records_), chosen)
    for d in pmodel.synthesize(2, random_seed=3):
        np.testing.assert_array_equal(d["AGE"].to_numpy()[keep], df["AGE"].to_numpy()[keep])
        assert d["AGE"].sum() == df["AGE"].sum()
    recs.write_text("1\nx\n")
    assert cli.main(["fit", str(path), *BASE, "--records", str(recs), "--out",
                     str(tmp_path / "q")]) != 0
    assert "--records" in capsys.readouterr().err


def test_fit_starts_temperatures_and_the_regimes_record(tmp_path, csv, capsys):
    """--starts and --temperatures reach the model; summary.json and convergence.json carry the
    regime record (each chain's start and means; the tempered ladders' evidence)."""
    path, _ = csv
    out = tmp_path / "m"
    assert cli.main(["fit", str(path), *BASE, "--chains", "3", "--starts", "few", "spread",
                     "--temperatures", "3", "--out", str(out)]) == 0
    model = load_model(out)
    assert model._starts() == ("few", "spread") and model.resolved_sampling.temperatures == 3
    summary = json.loads((out / "summary.json").read_text())
    reg = summary["regimes"]
    assert [c["start"] for c in reg["chains"]] == ["few", "spread", "few"]
    assert all(c["log_evidence"] is not None for c in reg["chains"])
    assert json.loads((out / "convergence.json").read_text())["regimes"] == reg
    with pytest.raises(SystemExit) as exit_:
        cli.main(["fit", str(path), *BASE, "--starts", "middle", "--out", str(tmp_path / "x")])
    assert exit_.value.code == 2 and "--starts" in capsys.readouterr().err


def test_model_options_match_the_models():
    """The options each model declares for the parser (modules that import no model) name real
    settings of every model declaring them (``__init__``'s, or a field of its ``sampling``),
    with the models' own choices."""
    from bayes_risk.models import get_synthesizer, list_synthesizers
    from bayes_risk.models._bayesian import starts
    from bayes_risk.models._bayesian.design import FAMILIES
    from bayes_risk.models.dpmpm import dpmpm
    from bayes_risk.models.poisson import poisson_mixture
    from bayes_risk.models.seqreg import seqreg
    from bayes_risk.models.trees import random_forest
    from bayes_risk.registry import fit_options, setting_names

    allowed = {  # the models' own constants, per option
        "synthesis_mode": set(dpmpm.MODES) | set(poisson_mixture._MODES),
        "sampler": set(dpmpm.SAMPLERS) | set(poisson_mixture._SAMPLERS),
        "variant": set(poisson_mixture._VARIANTS),
        "posterior_method": set(seqreg._METHODS),
        "starts": {starts.OVERDISPERSED, *starts.START_KINDS},
        "donor": set(random_forest.DONORS),  # CART's too
        # the tree models' documented values (checked by their __init__ or fit)
        "unroutable": {"climb", "random_descent"}, "probabilities": {"vote", "leaf_dirichlet"},
        "procedure": {"A", "B"}, "tie": {"random", "first"},
    }
    options = fit_options()
    assert {m for o in options.values() for m in o["models"]} == set(list_synthesizers())
    for setting, meta in options.items():
        opt, models = meta["cli"], meta["models"]
        assert models and set(models) <= set(list_synthesizers()), opt.flag
        for name in models:
            params = setting_names(get_synthesizer(name))
            # a synthpop-style specification's two options make the setting `spec` together
            assert setting in params or (
                setting in ("method_per_column", "predictor_matrix") and "spec" in params
            ), (opt.flag, name)
        if opt.choices is not None:
            assert set(opt.choices) == allowed[setting], opt.flag
    assert all(f in options["families"]["cli"].help for f in FAMILIES)
    # the sampler's own options are declared by its spec's fields (Sampling)
    from bayes_risk._sampling_spec import Sampling
    from bayes_risk._specs import cli_fields

    declared = {f.name: opt for f, opt in cli_fields(Sampling)}
    assert set(declared["starts"].choices) == allowed["starts"]
    assert not set(options) & set(declared)


def test_fit_output_is_the_same_without_the_background_imports(tmp_path, csv, monkeypatch):
    """``bayes-risk fit`` imports the NetCDF writer on another thread while the sampler runs
    (``bayes_risk._lazy.overlap``): the files it writes are those of a run without it."""
    import contextlib

    import xarray as xr

    import bayes_risk._lazy as lazy
    import bayes_risk.models._bayesian.gibbs as gr

    path, _ = csv
    one = [*BASE, "--chains", "1"]  # one process: the chains run in turn, with the thread
    assert cli.main(["fit", str(path), *one, "--out", str(tmp_path / "a")]) == 0
    monkeypatch.setattr(lazy, "overlap", lambda *tasks: contextlib.nullcontext())
    monkeypatch.setattr(gr, "Background", lambda *tasks: contextlib.nullcontext())
    assert cli.main(["fit", str(path), *one, "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "a" / "convergence.json").read_bytes() == \
        (tmp_path / "b" / "convergence.json").read_bytes()
    # model.json records the checksum of posterior.nc, whose HDF5 bytes carry the time of
    # writing: everything else, the model's identity included, is the same
    meta_a, meta_b = (json.loads((tmp_path / d / "model.json").read_text()) for d in "ab")
    for meta in (meta_a, meta_b):
        del meta["sha256"]["posterior.nc"]
    assert meta_a == meta_b and meta_a["model_id"] is not None
    with (xr.open_datatree(tmp_path / "a" / "posterior.nc", engine="h5netcdf") as a,
          xr.open_datatree(tmp_path / "b" / "posterior.nc", engine="h5netcdf") as b):
        for g in a.children:
            assert list(a[g].data_vars) == list(b[g].data_vars)
            for v in a[g].data_vars:
                assert a[g][v].values.tobytes() == b[g][v].values.tobytes(), (g, v)


def test_fit_reads_with_the_system_allocator(tmp_path, csv):
    """``bayes-risk fit`` loads pyarrow with the C library's allocator before reading the table
    (pyarrow's own pool kept about 8 MiB of the reading's buffers through the fit)."""
    import os
    import subprocess
    import sys

    path, _ = csv
    code = f"""
import contextlib, io, warnings
warnings.simplefilter("ignore")
from bayes_risk.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["fit", {str(path)!r}, *{BASE!r}, "--chains", "1", "--out", "out"]) == 0
import pyarrow
print(pyarrow.default_memory_pool().backend_name)
"""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True, env=env)
    assert out.stdout.split("\n")[0] == "system", out.stdout + out.stderr
    assert (tmp_path / "out" / "posterior.nc").is_file()
