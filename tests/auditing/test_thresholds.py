"""The audit's thresholds: each in its quantity's unit and range, refused outside it (issue 64.2),
so that no verdict line can be switched off by a threshold it could never cross."""

from __future__ import annotations

import numpy as np
import pytest

from bayes_risk.auditing import Thresholds
from bayes_risk.auditing.thresholds import threshold_records
from bayes_risk.exceptions import ValidationError

#: (threshold, value the range refuses, words the error must hold: the unit)
OUT_OF_RANGE = [
    ("singling_out_risk", "5", "a fraction from 0 to 1"),  # 5 meant as 5 % (issue 64)
    ("linkability_risk", "1", "a fraction from 0 to 1"),
    ("expected_match_rate", "1", "a fraction from 0 to 1"),  # issue 64
    ("true_match_rate", "2", "a fraction from 0 to 1"),
    ("prop_top", "10", "a fraction from 0 to 1"),
    ("membership_share", "1", "a fraction from 0 to 1"),
    ("repU", "100", "in per cent, from 0 to 100"),
    ("DiSCO", "250", "in per cent, from 0 to 100"),
    ("membership_advantage", "0.5", "AUC − 0.5, from 0"),
    ("s_pmse", "inf", "from 0 up"),
    ("overlap", "0", "from 0 to 1"),
    ("overlap", "1.5", "from 0 to 1"),
    ("membership_probability", "1", "strictly between 0 and 1"),
    ("repU", "-1", "in per cent"),
    ("s_pmse", "nan", "from 0 up"),
]


@pytest.mark.parametrize(("name", "value", "unit"), OUT_OF_RANGE)
def test_a_threshold_outside_its_range_is_refused_naming_its_unit(name, value, unit):
    # the old check took any number >= 0: singling_out_risk=5 kept a risk of 0.96 within
    with pytest.raises(ValidationError, match="outside its range") as info:
        Thresholds.parse([f"{name}={value}"])
    assert unit in str(info.value) and f"{name}={value}" in str(info.value)
    assert info.value.code == "INVALID_ARGUMENT"
    # every way of making thresholds is checked, not parse alone
    with pytest.raises(ValidationError, match="outside its range"):
        Thresholds(**{name: float(value)})
    with pytest.raises(ValidationError, match="outside its range"):
        Thresholds().replace(**{name: float(value)})


def test_the_ends_a_line_can_cross_are_accepted():
    # a threshold of 0 on an "at most" line: any risk above 0 exceeds it (a strict board)
    t = Thresholds.parse(["repU=0", "singling_out_risk=0", "overlap=1", "s_pmse=0",
                          "expected_match_rate=0.999", "DiSCO=99.5"])
    assert (t.repU, t.singling_out_risk, t.overlap, t.s_pmse) == (0.0, 0.0, 1.0, 0.0)
    assert t.expected_match_rate == 0.999 and t.DiSCO == 99.5
    assert Thresholds.parse({"repU": 2}).repU == 2.0
    with pytest.raises(ValidationError, match="not a number"):
        Thresholds.parse({"repU": True})
    with pytest.raises(ValidationError, match="'abc' is not a number; repU is in per cent"):
        Thresholds.parse(["repU=abc"])


def test_every_threshold_states_its_unit_and_range():
    records = threshold_records()
    assert list(records) == list(Thresholds())  # one value for each registered threshold
    for name, t in records.items():
        assert t.unit and t.side in ("max", "min", "cut") and t.source
        assert t.low <= getattr(Thresholds(), name) <= t.high  # the defaults lie inside


def test_cli_refuses_an_out_of_range_threshold_before_reading(cli, tmp_path):
    # the inputs do not exist: the threshold is checked first, and nothing is written
    r = cli(["audit", "orig.csv", "syn", "--known", "Age", "--threshold",
             "singling_out_risk=5", "--out", "aud"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert ("error [BAD_OPTION_VALUE]: --threshold singling_out_risk=5 is outside its range: "
            "singling_out_risk is anonymeter's risk, a fraction from 0 to 1") in r.stderr
    assert not (tmp_path / "aud").exists()


def test_the_verdict_figure_names_a_line_past_a_threshold_of_zero():
    # value / 0 has no finite ratio: the bar once read "not computed or 0" for a line that
    # exceeds
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bayes_risk.auditing.plots import verdict_figure
    from bayes_risk.auditing.verdicts import Verdict

    lines = [Verdict("disclosure", "repU (%), keys a", 0.5, 0.0, "max", None, unit="%"),
             Verdict("disclosure", "DiSCO (%), target b", 0.0, 0.0, "max", None, unit="%"),
             Verdict("utility", "overlap", np.nan, 0.5, "min", None)]
    fig, ax = plt.subplots()
    verdict_figure(lines, ax)
    texts = [t.get_text() for t in ax.texts]
    plt.close(fig)
    assert texts == ["exceeds a threshold of 0", "0", "not computed"]
