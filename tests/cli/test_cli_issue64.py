"""Issue 64, items 6 and 8: every error names the options of the sub-command that was run (never
a keyword argument or an option it does not have), and every option that multiplies the work
or the memory is inside the budget check, before the work. Each case is one found by running
every sub-command with extreme and bad values; each fails on the code before the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from _cli_names import library_leaks

import bayes_risk as br
from bayes_risk.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.BayesRiskWarning")

CATS = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A CE-like table, its holdout, a CART model and its release; an ACS-like table, a small
    DPMPM model and its release; a table of one record; a table of 25 keys."""
    d = tmp_path_factory.mktemp("issue64")
    cwd = os.getcwd()
    os.chdir(d)
    try:
        ce = br.make_ce_like(400, random_seed=3)
        train, hold = ce.iloc[:200], ce.iloc[200:]
        train.to_csv("ce.csv", index=False)
        # the holdout's levels are the model's (a level it never saw is refused)
        hold[hold[CATS].isin({c: set(train[c]) for c in CATS}).all(axis=1)].to_csv(
            "hold.csv", index=False)
        for name in ("one.csv", "one_s1.csv", "one_s2.csv"):
            ce.iloc[:1].to_csv(name, index=False)
        q = ["-q", "--random-seed", "1"]
        assert main(["fit", "ce.csv", "--method", "cart", "--synthesize", "Tenure", "Income",
                     "--categorical", *CATS, *q, "--out", "cart"]) == 0
        assert main(["synthesize", "--model", "cart", "-m", "2", *q, "--out", "rel"]) == 0
        acs = br.make_acs_like(150, random_seed=4).iloc[:, :4]
        acs.to_csv("acs.csv", index=False)
        assert main(["fit", "acs.csv", "--method", "dpmpm", "--categorical", *acs.columns,
                     "--components", "3", "--tune", "20", "--draws", "20", "--chains", "1",
                     *q, "--out", "dpmpm"]) == 0
        assert main(["synthesize", "--model", "dpmpm", "-m", "2", *q, "--out", "acsrel"]) == 0
        pd.DataFrame({f"k{i}": [i % 2, (i + 1) % 3, 0, 1] * 5 for i in range(25)}).to_csv(
            "wide.csv", index=False)
    finally:
        os.chdir(cwd)
    return d


def _error(cli, argv: list[str], at: Path, code: str, out: Path) -> str:
    """The one error line of a run that fails (exit 2), which names no library argument."""
    r = cli([*argv, "-q", "--out", str(out)], at)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("warning [")]
    assert r.returncode == 2 and len(lines) == 1, (r.returncode, r.stderr)
    line = lines[0]
    assert f"[{code}]" in line, line
    assert not library_leaks(line), (library_leaks(line), line)
    assert "Traceback" not in r.stderr and not out.exists()
    return line


CE_ATTR = ["attribute", "ce.csv", "rel", "--model", "cart", "--records", "0-3"]


@pytest.mark.parametrize("argv,code,named,not_named", [
    # 1. the issue's: a flag that turns SUDA2 off
    (["original-risk", "wide.csv", "--keys", *[f"k{i}" for i in range(25)]],
     "BAD_OPTION_VALUE", "give --max-size (the largest MSU searched), fewer keys, or --no-suda",
     "suda=False"),
    # 2. a default that is the option left out
    (["original-risk", "ce.csv", "--keys", "Age", "--max-size", "0"], "BAD_OPTION_VALUE",
     "--max-size must be an integer >= 1. Got 0.", "None"),
    # 3. the issue's: linkability's columns are --linkability's
    (["attacks", "ce.csv", "rel", "--holdout", "hold.csv", "--linkability", "Age,Nope",
      "Income"], "UNKNOWN_COLUMN", "--linkability: column 'Nope'", "--columns"),
    # 4. the issue's: the release size by the options that make it
    (["fit", "acs.csv", "--method", "dpmpm", "--draws", "1000000000", "--memory", "2GB"],
     "MEMORY_TOO_LARGE", "reduce --tune, --draws, --chains or --components", None),
    # 5. a table of one record (the "u[0] is nan")
    (["utility", "one.csv", "one_s1.csv", "one_s2.csv"], "TOO_FEW_RECORDS",
     "the original has 1 record; the utility measures need at least 2", "u[0]"),
    # 6. the targets file is --targets
    (["identification", "ce.csv", "rel", "--known-unsynthesized", "Age", "--target-id", "x"],
     "BAD_OPTION_VALUE", "--target-id needs --targets", None),
    # 7. no grouping is 0 on the command line
    (["disclosure", "ce.csv", "rel", "--keys", "Age", "--target", "Tenure",
      "--ngroups-target", "-1"], "BAD_OPTION_VALUE", "an integer >= 2 or 0. Got -1", "None"),
    # 8. the per-column methods are --method-per-column's
    (["synthesize", "ce.csv", "--method", "cart", "--synthesize", "Income",
      "--method-per-column", "abc"], "BAD_OPTION_VALUE", "--method-per-column must be one of",
     "--method must"),
    # 9. the scenario as the command line writes it
    ([*CE_ATTR, "--known-fraction", "0"], "MODEL_UNSUITED",
     "--scenario known-records needs a class P model", "scenario="),
    # 10. EstimatorSpec's fields are the command's options
    ([*CE_ATTR, "--bootstrap", "-1"], "BAD_OPTION_VALUE", "--bootstrap must be an integer",
     "EstimatorSpec"),
    ([*CE_ATTR, "--chunk-size", "0"], "BAD_OPTION_VALUE", "--chunk-size must be an integer",
     "EstimatorSpec"),
    # 11. leaving a Python argument unset is giving no option
    (["membership", "ce.csv", "rel", "--model", "cart", "--holdout", "hold.csv",
      "--selection", "Age > 50"], "OPTION_CONFLICT", "(give no --selection)", "unset"),
    # 12. the null and the propensity model as options
    (["utility", "ce.csv", "rel", "--null", "perm"], "BAD_OPTION_VALUE",
     "--null perm is valid for complete synthesis only", "null="),
    # 13. a default that is the option left out
    (["fit", "acs.csv", "--method", "dpmpm", "--alpha-warmup-bound", "0"],
     "BAD_OPTION_VALUE", "left out: the 95 % quantile", "None"),
    # 14. the synthesized known columns are --known-synthesized
    (["identification", "acs.csv", "acsrel", "--known-unsynthesized", "AGEP", "--model",
      "dpmpm", "--replicates", "10"], "BAD_OPTION_VALUE", "(--known-synthesized names none)",
     "synthesized="),
    # 15. max_candidates has no option: the advice names what the command has
    ([*CE_ATTR, "--candidates", "grid:percent:10:1000000000"], "TOO_MANY_CANDIDATES",
     "Use --candidates one-variable or fewer grid points", "raise max_candidates"),
])
def test_errors_name_the_options_of_the_command(cli, work, argv, code, named, not_named,
                                                tmp_path):
    line = _error(cli, argv, work, code, tmp_path / "out")
    assert named in line, line
    if not_named is not None:
        assert not_named not in line, line


@pytest.mark.parametrize("argv,named", [
    # the issue's: --temperatures multiplies the replicas of every chain
    (["fit", "acs.csv", "--method", "dpmpm", "--temperatures", "100000", "--tune", "20",
      "--draws", "20"], "--temperatures"),
    (["fit", "acs.csv", "--method", "dpmpm", "--tune", "1000000000"], "--tune"),
    (["fit", "acs.csv", "--method", "dpmpm", "--components", "1000000000"], "--components"),
    # the issue's: attacks has neither --draws nor --components
    (["attacks", "ce.csv", "rel", "--holdout", "hold.csv", "--n-attacks", "1000000000"],
     "reduce --n-attacks"),
    (["attacks", "ce.csv", "rel", "--holdout", "hold.csv", "--linkability", "Age", "Income",
      "--n-neighbors", "200", "--n-attacks", "200"], None),
    (["membership", "ce.csv", "rel", "--model", "cart", "--holdout", "hold.csv",
      "--bootstrap", "1000000000"], "reduce --bootstrap"),
    (["disclosure", "ce.csv", "rel", "--keys", "Age", "Urban", "--target", "Tenure",
      "--ngroups-keys", "1000000000"], "reduce --ngroups-keys"),
    (["identification", "acs.csv", "acsrel", "--known-synthesized", "AGEP", "SEX",
      "--model", "dpmpm", "--replicates", "1000000000"], "reduce --replicates"),
    (["utility", "acs.csv", "acsrel", "--pmse", "cart", "--null", "perm", "--n-perm",
      "1000000000"], "reduce --n-perm"),
    (["attribute", "acs.csv", "acsrel", "--model", "dpmpm", "--records", "0-1",
      "--refit-draws", "1000000000"], "reduce --refit-draws"),
    (["orders", "ce.csv", "--method", "cart", "--order", "Tenure,Income", "--known-unsynthesized",
      "Age", "--categorical", *CATS, "-m", "1000000000"], "reduce -m"),
    (["demo", "--n-ce", "1000000000"], "reduce --n-ce or -m"),
    (["fit", "ce.csv", "--method", "rf", "--synthesize", "Income", "--n-trees", "1000000000"],
     "reduce --n-trees"),
])
def test_every_size_is_checked_before_the_work(cli, work, argv, named, tmp_path):
    """Refused at once under --memory 2GB (each of these ran out of memory, or ran on for
    minutes, before)."""
    r = cli([*argv, "--memory", "2GB", "-q", "--out", str(tmp_path / "out")], work)
    if named is None:  # within the budget: it runs
        assert r.returncode == 0, r.stderr
        return
    line = [ln for ln in r.stderr.splitlines() if "error [" in ln][-1]
    assert r.returncode == 2 and "[MEMORY_TOO_LARGE]" in line and named in line, r.stderr
    assert not library_leaks(line), line
    assert not (tmp_path / "out").exists()


def test_out_of_memory_names_only_the_commands_options(cli, work, monkeypatch, tmp_path):
    # the issue's: attacks out of memory advised --draws and --components
    import bayes_risk.attacks.run as attacks

    def oom(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(attacks, "attacks_run", oom)
    line = _error(cli, ["attacks", "ce.csv", "rel", "--holdout", "hold.csv"], work,
                  "OUT_OF_MEMORY", tmp_path / "out")
    assert "--n-attacks" in line and "--max-attempts" in line
    for other in ("--draws", "--components", "--chunk-size", "-m"):
        assert f"{other}," not in line and f"{other})" not in line, line


def test_a_chunk_larger_than_the_records_is_the_records(cli, work, tmp_path):
    # --chunk-size 10**9 of 4 records was counted as 10**9 records' arrays and refused
    r = cli([*CE_ATTR, "--chunk-size", "1000000000", "--memory", "2GB", "-q", "--out",
             str(tmp_path / "out")], work)
    assert r.returncode == 0, r.stderr


def test_convergence_advice_names_the_options(cli, work, tmp_path):
    # a short fit fails its checks: the advice names fit's options and the file it wrote
    r = cli(["fit", str(work / "acs.csv"), "--method", "dpmpm", "--components", "3", "--tune",
             "5", "--draws", "10", "--chains", "1", "--random-seed", "1", "-q", "--out",
             str(tmp_path / "m")], tmp_path)
    assert r.returncode == 0, r.stderr
    warns = [ln for ln in r.stderr.splitlines() if ln.startswith("warning [LOW_ESS]")
             or ln.startswith("warning [RHAT_HIGH]")]
    assert warns, r.stderr
    for w in warns:
        assert "(more --tune, --draws) or more --chains; see convergence.json" in w, w
        assert "convergence_summary()" not in w and "tune/draws" not in w
