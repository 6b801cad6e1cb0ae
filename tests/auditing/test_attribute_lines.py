"""The attribute step's two verdict lines (issue 63, item 3): the share ranked first and the
share with evidence (Bayes factor of the true values ≥ ``evidence_factor``) beside it, both with
the flagged records counted at worst, each read against what a release that says nothing about
the records gives (issue 85: not against the random guess 1/G)."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

from bayes_risk.auditing import Thresholds
from bayes_risk.auditing.measures.attribute import (
    ATTRIBUTE_MEASURE,
    EVIDENCE_MEASURE,
    attribute_lines,
)
from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.exceptions import ValidationError

#: the demo's ACS-like DPMPM release as the issue reports it: 2,000 records, G = 35, the truth
#: never ranked first, p_true a little above the random guess on average
FLAT = {
    "n_records": 2000, "n_flagged": 0, "random_guess_baseline": 1 / 35,
    "unflagged": {"n_records": 2000, "prop_top": 0.0, "mean_p_true": 0.0301,
                  "mean_prior_p_true": 1 / 35, "prop_evidence": 0.004, "evidence_factor": 3.0,
                  "bayes_factor_quantiles": {"0%": 0.7, "5%": 0.85, "25%": 0.97, "50%": 1.04,
                                             "75%": 1.12, "95%": 1.4, "100%": 3.6}},
    "mc_uncertainty": {"bootstrap": 200, "evidence_factor": 3.0, "mc_interval_90": {
        "prop_top": [0.0, 0.0], "prop_evidence": [0.002, 0.0065]}},
    # the null of a release that says nothing about the records: truth first with probability
    # of the order of the product of 1/d_j, far below 1/G
    "null": {"n_records": 2000, "method": "one variable at a time",
             "prop_top": {"expected": 1.2e-4, "low": 0.0, "high": 0.001},
             "prop_evidence": {"expected": 0.003, "low": 0.001, "high": 0.0055},
             "mean_rank": {"expected": 17.9, "low": 17.6, "high": 18.2},
             "mean_p_true": {"expected": 0.0299, "low": 0.0296, "high": 0.0302}},
}


def _lines(summary, thresholds=None):
    plan = SimpleNamespace(thresholds=thresholds or Thresholds(), m=5)
    step = StepOutcome("attribute", "ran", folder="attribute", extra={"summary": summary},
                       result=SimpleNamespace(warnings=[], settings={"estimator": "stabilised"}))
    return {v.threshold_name: v for v in attribute_lines(plan, step)}


def test_a_flat_posterior_gives_both_lines_read_against_the_null():
    """Issue 85: the demo's 0 of 2,000 ranked first was set against the random guess 2.86 % and
    called "not protection"; it is what a release that says nothing about the records gives."""
    v = _lines(FLAT)
    top, ev = v["prop_top"], v["prop_evidence"]
    assert top.measure == ATTRIBUTE_MEASURE and top.value == 0.0 and top.threshold == 10.0
    assert "random guess" not in top.detail and "not protection" not in top.detail
    assert top.detail.endswith(
        "; within what a release that says nothing about the records gives (expected 0.012 %, "
        "95 % range 0–0.1 %): by this figure the release tells no more of a record than the "
        "other records do")
    assert ev.measure == EVIDENCE_MEASURE.format(factor=3.0)
    assert ev.measure.startswith("share with evidence: ") and ev.short == "share with evidence"
    assert ev.value == pytest.approx(0.4) and ev.threshold == 10.0 and ev.unit == "%"
    assert ev.status == "within" and ev.count_of == (2000, "records")
    assert ev.detail.startswith("mean p_true 3.01 % after the release against 2.86 % before it "
                                "(the intruder's prior); Bayes factor of the true values: "
                                "median 1.04, 95th percentile 1.4, largest 3.6 (1: the "
                                "release tells nothing about the record; counted from 3, where "
                                "Kass & Raftery's scale of evidence begins)")
    assert "90 % Monte Carlo interval 0.2–0.65 % (draw bootstrap, 200 replicates)" in ev.detail
    assert ("; within what a release that says nothing about the records gives (expected 0.3 %, "
            "95 % range 0.1–0.55 %): by this figure the release tells no more of a record than "
            "the other records do; mean p_true: within what a release that says nothing about "
            "the records gives (expected 2.99 %, 95 % range 2.96–3.02 %)") in ev.detail
    # the share ranked first is 0 in (at least 90 % of) every replicate: a zero-width interval
    # is said to be one, not printed as a 90 % interval "0–0 %" (issue 85, item 6)
    assert "Monte Carlo interval 0–0" not in top.detail
    assert top.detail.startswith(
        "no 90 % Monte Carlo interval of any width: at least 90 % of the 200 draw-bootstrap "
        "replicates give 0 % (a degenerate interval: the Monte Carlo error changes the share "
        "in fewer than 10 % of them); ")
    assert ev.intruder == top.intruder and "knows every other record's true values" in ev.intruder


@pytest.mark.parametrize(("top", "reading"), [
    (0.05, "above what a release that says nothing about the records gives (expected 0.012 %, "
           "95 % range 0–0.1 %): the release points to the true values of some records"),
])
def test_a_share_above_its_null_says_the_release_points_to_the_truth(top, reading):
    s = copy.deepcopy(FLAT)
    s["unflagged"]["prop_top"] = top
    assert _lines(s)["prop_top"].detail.endswith(reading)


def test_a_share_below_its_null_is_no_disclosure_by_that_figure():
    s = copy.deepcopy(FLAT)
    s["null"]["prop_top"] = {"expected": 0.05, "low": 0.04, "high": 0.06}
    assert ("below what a release that says nothing about the records gives (expected 5 %, 95 % "
            "range 4–6 %): the release puts other candidates ahead of the truth more often than "
            "chance — no disclosure by this figure") in _lines(s)["prop_top"].detail


def test_without_a_null_the_line_says_nothing_of_one():
    s = copy.deepcopy(FLAT)
    del s["null"]
    assert "says nothing" not in _lines(s)["prop_top"].detail


def test_flagged_records_are_counted_as_given_evidence_at_worst():
    """100 of 2,000 flagged: 5 % of the 1,900 stable estimates plus every flagged record, 9.75 %,
    within 10 %; the line is a caution, never a plain pass."""
    s = copy.deepcopy(FLAT)
    s["n_flagged"] = 100
    s["unflagged"].update(n_records=1900, prop_evidence=0.05)
    ev = _lines(s)["prop_evidence"]
    assert ev.value == pytest.approx(5.0) and ev.flagged == 100 and ev.status == "caution"
    assert ("100 of 2000 record(s) flagged and left out (unassessed: treat them as at risk; "
            "with every one counted as given evidence, the share would be 9.75 %, still within "
            "the threshold)") in ev.detail
    assert ev.at_worst == pytest.approx(9.75)
    s["unflagged"]["prop_evidence"] = 0.06  # 114 + 100 of 2,000: 10.7 %
    assert "the share would be 10.7 %, past the threshold" in _lines(s)["prop_evidence"].detail


def test_flagged_records_whose_bounds_rule_the_line_out_are_not_counted_at_worst():
    """100 of 2,000 flagged, of which the bounds (Monte Carlo or k̂) let 30 give evidence and
    10 be ranked first: at worst (6 % of 1,900 + 30) / 2,000 = 7.2 % and (0 + 10) / 2,000 =
    0.5 % — not 10.7 % and 5 % with every flagged record counted."""
    s = copy.deepcopy(FLAT)
    s["n_flagged"] = 100
    s["flagged_at_worst"] = {"prop_top": 10, "prop_evidence": 30}
    s["unflagged"].update(n_records=1900, prop_evidence=0.06)
    lines = _lines(s)
    ev, top = lines["prop_evidence"], lines["prop_top"]
    assert ev.flagged == 100 and ev.flagged_at_risk == 30 and ev.status == "caution"
    assert ev.at_worst == pytest.approx(7.2) and top.at_worst == pytest.approx(0.5)
    assert ("with 30 of them, those whose Monte Carlo or k̂ bounds do not rule it out (the "
            "other 70 not) counted as given evidence, the share would be 7.2 %, still within "
            "the threshold)") in ev.detail


def test_the_board_sets_the_factor_and_the_share():
    """``--threshold evidence_factor=20 prop_evidence=0.01``: the line names the factor it
    counts from; the summary's share (computed by the step at that factor) is read."""
    th = Thresholds.parse(["evidence_factor=20", "prop_evidence=0.01"])
    assert (th.evidence_factor, th.prop_evidence) == (20.0, 0.01)
    ev = _lines(FLAT, th)["prop_evidence"]
    assert "at least 20 times likelier in odds" in ev.measure and ev.threshold == 1.0
    assert ("(1: the release tells nothing about the record; counted from 20, given for this "
            "audit)") in ev.detail
    assert ev.exceeds is False
    ev = _lines({**FLAT, "unflagged": {**FLAT["unflagged"], "prop_evidence": 0.02}}, th)
    assert ev["prop_evidence"].exceeds and ev["prop_evidence"].status == "exceeds"


@pytest.mark.parametrize("value", ["1", "0.5", "-3", "nan", "inf"])
def test_an_evidence_factor_of_at_most_one_is_refused_by_name(value):
    """A factor of 1 counts every record the release does not make less likely: no evidence;
    an infinite one counts none, whatever the release."""
    with pytest.raises(ValidationError, match=(
            f"^thresholds: evidence_factor={value} is outside its range: evidence_factor is a "
            r"Bayes factor, above 1 \(1 is no evidence\). Expected 1 < evidence_factor < ∞.$")
    ) as err:
        Thresholds.parse([f"evidence_factor={value}"])
    assert err.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ValidationError, match="evidence_factor=x: 'x' is not a number"):
        Thresholds.parse(["evidence_factor=x"])


def test_the_larger_regime_share_is_read():
    s = copy.deepcopy(FLAT)
    regimes = [{"chains": [0], "summary": {"prop_top": 0.0, "prop_evidence": 0.002}},
               {"chains": [1], "summary": {"prop_top": 0.0, "prop_evidence": 0.15}}]
    s["regimes"] = {"status": "computed", "n_records": 2000, "regimes": regimes,
                    "largest_prop_top": {"regime": 1, "prop_top": 0.0},
                    "largest_prop_evidence": {"regime": 2, "prop_evidence": 0.15}}
    ev = _lines(s)["prop_evidence"]
    assert ev.value == pytest.approx(15.0) and ev.exceeds
    assert "regime 2 (chain 2) 15 %" in ev.detail and "RISK_BY_REGIME, regime 2" in ev.detail
    # a regime that holds the posterior mass: its figure is read, as on the ranked-first line
    regimes[0]["mass_bounds"] = [0.999, 1.0]
    s["regimes"]["mass_prop_evidence"] = {"regime": 1, "prop_evidence": 0.002}
    ev = _lines(s)["prop_evidence"]
    assert ev.value == pytest.approx(0.2) and not ev.exceeds
    assert "regime 1 holds the mass (at least 1 − 0.001 of the mass of the regions the " \
        "chains visited" in ev.detail


def test_a_missing_share_is_a_line_past_its_threshold():
    """No stable estimate (every record flagged, no figure): nan, which a board must not read
    as a pass."""
    s = {"n_records": 3, "n_flagged": 3, "random_guess_baseline": 0.1,
         "unflagged": {"n_records": 0, "n_excluded_nan": 0}}
    v = _lines(s)
    assert v["prop_evidence"].exceeds and v["prop_top"].exceeds


def test_an_infinite_factor_reads_as_certainty():
    """A CART release of CEdata gives p_true = 1, an infinite factor, for most records; the
    summary writes it "inf" and the line says what it means."""
    s = copy.deepcopy(FLAT)
    s["unflagged"]["bayes_factor_quantiles"].update({"50%": "inf", "95%": "inf", "100%": "inf"})
    detail = _lines(s)["prop_evidence"].detail
    words = "unbounded (p_true 100 %: the model's likelihood leaves no other candidate possible)"
    assert f"median {words}, 95th percentile {words}, largest {words}" in detail
    assert "∞" not in detail  # issue 85: what an infinite factor means, not the symbol


def test_the_report_table_says_a_degenerate_interval_is_one():
    """The report's Monte Carlo table (issue 85, item 6): an interval of zero width reads "0 % in
    at least 90 % of the replicates (degenerate)", a proper one "4.5 % – 6.1 %"."""
    from pathlib import Path

    from bayes_risk.auditing.measures.attribute import _mc_block
    from bayes_risk.auditing.report_blocks import Links

    mc = {"bootstrap": 200, "n_flagged_excluded": 0, "evidence_factor": 3.0,
          "value": {"mean_p_true": 0.05, "prop_top": 0.0},
          "mc_se": {"mean_p_true": 0.004, "prop_top": 0.0},
          "mc_interval_90": {"mean_p_true": [0.045, 0.061], "prop_top": [0.0, 0.0]}}
    links = Links(SimpleNamespace(root=None, _report_figures=dict), Path("r.md"), "md")
    block = _mc_block(mc, links, None)
    cells = {row[0].text: "".join(s.text for s in row[3]) for row in block.rows}
    assert block.columns[3] == "90 % Monte Carlo interval"
    assert cells == {"mean p_true (%)": "4.5 % – 6.1 %",
                     "share ranked first (%)": "0 % in at least 90 % of the replicates "
                                               "(degenerate)"}
