"""What a newcomer meets in the first hour (issue 92): error hints that say what to type, and
a release that is the original itself said so plainly, by the one rule of every measure."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk import cli
from bayes_risk.data import make_ce_like
from bayes_risk.data.alignment import (
    ORIGINAL_COPY_SHARE,
    chance_share,
    warn_release_holds_original,
)
from bayes_risk.data.schema import did_you_mean
from bayes_risk.exceptions import DataWarning


@pytest.mark.parametrize(("typed", "hint"), [
    # the names differ in case only: no baffling "it prints like", the difference named
    ("age", " Did you mean 'Age'? Column names are matched exactly, and the two differ in "
            "case."),
    ("Age ", " Did you mean 'Age'? Column names are matched exactly, and the two differ in "
             "white space."),
    ("agee", " Did you mean 'Age'?"),  # close without case
    ("Аge", " Did you mean 'Age'? It prints like 'Аge': 'Аge' holds U+0410 CYRILLIC CAPITAL "
            "LETTER A where 'Age' has 'A'."),
    ("zzz", ""),
])
def test_did_you_mean_says_what_differs(typed, hint):
    assert did_you_mean(typed, ["Age", "Urban", "Income"]) == hint


@pytest.fixture(scope="module")
def ce_csv(tmp_path_factory):
    work = tmp_path_factory.mktemp("first_hour")
    ce = make_ce_like(120, random_seed=1)
    ce.to_csv(work / "ce.csv", index=False)
    # a larger table that holds the original's records (another wave of the same survey, say)
    pd.concat([ce, ce.sample(180, replace=True, random_state=2).assign(
        Income=lambda d: d["Income"] + 1.0)]).to_csv(work / "big.csv", index=False)
    return work


def test_an_option_of_another_spelling_is_named_by_the_sub_command(ce_csv, capsys):
    """``--synthesise`` was argparse's "unrecognized arguments" under the top level's usage;
    the sub-command's usage now comes with the option it resembles."""
    with pytest.raises(SystemExit) as ex:
        cli.main(["synthesize", str(ce_csv / "ce.csv"), "--synthesise", "Income", "--out",
                  str(ce_csv / "x")])
    err = capsys.readouterr().err
    assert ex.value.code == 2
    assert "usage: bayes-risk synthesize" in err
    assert ("bayes-risk synthesize: error [USAGE]: unrecognized arguments: --synthesise Income "
            "(--synthesise: did you mean --synthesize?)") in err
    assert not (ce_csv / "x").exists()


@pytest.mark.parametrize(("option", "value", "hint"), [
    ("--radius", "Income=10%", "write 10% as 0.1"),
    ("--radius-sweep", "5%,10%", "write 5% as 0.05"),
])
def test_a_percentage_is_answered_with_the_fraction_to_write(ce_csv, capsys, option, value,
                                                             hint):
    rc = cli.main(["identification", str(ce_csv / "ce.csv"), str(ce_csv / "ce.csv"),
                   "--known-unsynthesized", "Age", "--known-synthesized", "Income", option,
                   value, "--out", str(ce_csv / "y")])
    err = capsys.readouterr().err
    assert rc == 2 and "error [BAD_OPTION_VALUE]" in err
    assert f"Percentages are written as fractions here: {hint}." in err
    assert not (ce_csv / "y").exists()


def test_an_original_given_as_the_release_is_said_plainly(ce_csv, capsys):
    """A 300-row table that holds the 120-row original's records, given as the release, ran as
    a fully synthetic release; the first line now says what it looks like."""
    rc = cli.main(["utility", str(ce_csv / "ce.csv"), str(ce_csv / "big.csv"),
                   "--categorical", "Urban", "Marital", "Tenure", "--out", str(ce_csv / "u")])
    err = capsys.readouterr().err
    assert rc == 0
    first = next(ln for ln in err.splitlines() if ln.startswith("warning ["))
    assert first.startswith("warning [RELEASE_HOLDS_ORIGINAL]: synthetic dataset 1 (300 rows) "
                            "holds 100% of the original's 120 records unchanged in every "
                            "column, where rows drawn from the other records' combinations "
                            "would hold about 0%: it looks like the original itself")


def test_the_rule_counts_records_held_unchanged():
    """The share of the original's records that a dataset of another size holds unchanged:
    at the threshold it warns, below it does not; a release of the original's size (partial
    synthesis keeps records unchanged by design) is not checked."""
    ce = make_ce_like(200, random_seed=3)
    other = make_ce_like(400, random_seed=4)
    half = int(ORIGINAL_COPY_SHARE * len(ce))
    holds_half = other.copy()
    holds_half.iloc[:half] = ce.iloc[:half].to_numpy()
    with pytest.warns(DataWarning, match="RELEASE_HOLDS_ORIGINAL"):
        assert warn_release_holds_original(ce, [other, holds_half]) == pytest.approx(0.5)
    fewer = other.copy()
    fewer.iloc[:half - 1] = ce.iloc[:half - 1].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_release_holds_original(ce, [fewer]) == pytest.approx((half - 1) / 200)
        assert warn_release_holds_original(ce, [ce.copy()]) == 0.0  # same size: not checked


def test_chance_share_is_the_share_held_by_rows_drawn_from_the_other_records():
    """The rule's null, against a simulation: rows drawn at random from the original's, where a
    record counts as held when a drawn row of *another* record has its combination, hold on
    average the share chance_share gives (within 4 standard errors of 2,000 draws' mean); its
    standard deviation is not understated, nor more than doubled; sample uniques are never held
    by chance."""
    rng = np.random.default_rng(7)
    codes = rng.choice(12, size=90, p=np.r_[np.full(6, 0.125), np.full(6, 0.25 / 6)])
    codes[:10] = 100 + np.arange(10)  # ten sample uniques
    _, cell, counts = np.unique(codes, return_inverse=True, return_counts=True)
    n, size, reps = len(codes), 70, 2000
    mean, sd = chance_share(counts, size)
    held = np.empty(reps)
    for b in range(reps):
        drawn = np.bincount(rng.integers(0, n, size=size), minlength=n)  # rows per record
        per_cell = np.bincount(cell, weights=drawn, minlength=len(counts))
        held[b] = np.mean(per_cell[cell] - drawn > 0)  # a row of another record in the cell
    assert abs(held.mean() - mean) < 4 * held.std() / np.sqrt(reps)
    assert held.std() <= sd <= 2 * held.std()  # overstated (the cells' rows compete)
    assert chance_share(np.ones(50, int), 500) == (0.0, 0.0)


def test_coarse_data_is_not_taken_for_a_copy():
    """Three coarse columns: an independent release of another size holds most of the
    original's records by chance, which is not a copy; with a continuous column the same
    release holds none, and the original inside a larger file is said."""
    rng = np.random.default_rng(4)

    def coarse(n):
        return pd.DataFrame({"c": rng.integers(0, 2, n), "x": rng.integers(0, 4, n),
                             "y": rng.integers(0, 3, n)})

    o, s = coarse(60), coarse(50)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_release_holds_original(o, [s]) > ORIGINAL_COPY_SHARE
    o["v"], s["v"] = rng.normal(size=60), rng.normal(size=50)
    with pytest.warns(DataWarning, match="RELEASE_HOLDS_ORIGINAL"):
        warn_release_holds_original(o, [pd.concat([s, o], ignore_index=True)])
