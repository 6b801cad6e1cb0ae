"""The verdict lines in words, as ``bayes-risk audit`` prints them: composed by the line itself
(``Verdict.text_lines``, ``Baseline.text_line``), not by the command (issue 87)."""

from __future__ import annotations

from bayes_risk.auditing.verdict_base import Baseline, Verdict


def test_verdict_text_lines_shorten_the_cause_and_remedies():
    v = Verdict("disclosure", "repU (%), keys Age", 8.3, 1.0, "max", None, unit="%",
                spread="per dataset 7.8–9 % (min–max over 5)", warnings=("SEPARATION",),
                cause="98 % unique (on Age; exact values); the keys' cells are small",
                remedies=("coarsen the keys (Age in 5-year bands), so that cells grow",
                          "synthesize a key: Age"))
    assert v.text_lines() == [
        "EXCEEDS  repU (%), keys Age: 8.3 % (threshold <= 1 %; per dataset 7.8–9 % (min–max "
        "over 5)) [warning: SEPARATION]",
        # the cause up to its first "; " outside parentheses; each remedy up to its details
        "    cause: 98 % unique (on Age; exact values)",
        "    remedies: coarsen the keys; synthesize a key"]


def test_verdict_text_lines_of_a_line_within_and_a_carried_bound():
    within = Verdict("utility", "overlap", 0.9072, 0.5, "min", None, spread="pooled")
    assert within.text_lines() == ["within   overlap: 0.9072 (threshold >= 0.5; pooled)"]
    carried = Verdict("utility", "overlap", 0.4, 0.5, "min", None, spread="pooled",
                      carried="the release before the remedy")
    assert carried.text_lines() == ["EXCEEDS  overlap: 0.4 (threshold >= 0.5; pooled) [not "
                                    "measured on this release: the release before the remedy]"]


def test_baseline_text_line():
    b = Baseline("disclosure", "records violating 3-anonymity (%)", 98.8, None, None,
                 "computed on the original alone", unit="%")
    assert b.text_line() == ("baseline records violating 3-anonymity (%): 98.8 % (computed on "
                             "the original alone)")
