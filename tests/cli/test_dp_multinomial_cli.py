"""ε of differential privacy beside the attribute risk, end to end on the command line: ``fit
--method dp-multinomial --epsilon``, ``synthesize --model``, ``attribute --model`` and ``audit
--model`` each show the release's ε (docs/methods/privacy.md); the same numbers everywhere."""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pandas as pd
import pytest

import bayes_risk.cli as cli
from bayes_risk.privacy import dirichlet_alpha

N = 120


def _run(args: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(args) == 0, args
    return " ".join(out.getvalue().split())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """fit (ε = 1 per dataset), a release of m = 2, its attribute risk and its audit."""
    work = tmp_path_factory.mktemp("dp")
    rng = np.random.default_rng(3)
    pd.DataFrame({c: rng.choice(["no", "yes"], N, p=[0.7, 0.3]) for c in "abc"}).to_csv(
        work / "bin.csv", index=False)
    f, m, a, u = (str(work / x) for x in ("model", "rel", "att", "aud"))
    data = str(work / "bin.csv")
    return work, {
        "fit": _run(["fit", data, "--method", "dp-multinomial", "--epsilon", "1", "--draws",
                     "300", "--random-seed", "1", "--out", f]),
        "synthesize": _run(["synthesize", "--model", f, "-m", "2", "--random-seed", "2",
                            "--out", m]),
        "attribute": _run(["attribute", data, m, "--model", f, "--random-seed", "3",
                           "--out", a]),
        "audit": _run(["audit", data, m, "--model", f, "--known", "a", "--random-seed", "4",
                       "--skip", "utility", "identification", "posterior-identification",
                       "disclosure", "--quiet", "--out", u]),
    }


def test_fit_and_synthesize_state_the_epsilon(runs):
    _, out = runs
    alpha = dirichlet_alpha(epsilon=1.0, n_records=N)
    assert (f"differential privacy: ε = 1 per synthetic dataset of {N} records (prior count "
            f"{alpha:.4g} per cell)") in out["fit"]
    assert (f"differential privacy: ε = 2 (2 datasets × 1), α = {alpha:.4g} per cell, n = {N}; "
            f"no record's Bayes factor can exceed e^ε = {math.exp(2):.4g}") in out["synthesize"]


def test_attribute_shows_epsilon_beside_the_bayes_factors(runs):
    work, out = runs
    s = json.loads((work / "att" / "summary.json").read_text())
    dp = s["settings"]["differential_privacy"]
    assert dp["epsilon"] == pytest.approx(2.0) and dp["m"] == 2 and dp["n_records"] == N
    largest = float(s["all"]["bayes_factor_quantiles"]["100%"])
    assert largest < math.exp(2.0)  # the bound holds for every record's estimate
    assert (f"the release is ε-differentially private with ε = 2 (prior count "
            f"{dp['alpha']:.4g} per cell, n = {N}, 2 datasets × 1), which bounds every "
            f"record's Bayes factor of its true values by e^ε = {math.exp(2):.4g}; the largest "
            f"estimated here is {largest:.3g}") in out["attribute"]


def test_audit_report_shows_epsilon_beside_the_attribute_lines(runs):
    work, _ = runs
    s = json.loads((work / "aud" / "summary.json").read_text())
    ev = next(v for v in s["verdicts"] if v["step"] == "attribute"
              and v["measure"].startswith("share with evidence"))
    assert "the release is ε-differentially private with ε = 2" in ev["detail"]
    assert f"by e^ε = {math.exp(2):.4g}" in ev["detail"]
    report = (work / "aud" / "report.md").read_text()
    assert "Differential privacy beside the attribute risk: the release is ε-differentially " \
           "private with ε = 2" in report


def test_audit_without_the_model_still_states_the_epsilon(runs, tmp_path):
    """No --model: the attribute step is skipped, and its reason carries the release's ε."""
    work, _ = runs
    _run(["audit", str(work / "bin.csv"), str(work / "rel"), "--known", "a", "--random-seed",
          "4", "--skip", "utility", "identification", "posterior-identification", "disclosure",
          "--quiet", "--out", str(tmp_path / "aud")])
    s = json.loads((tmp_path / "aud" / "summary.json").read_text())
    reason = next(x for x in s["steps"] if x["name"] == "attribute")["reason"]
    assert "the release is ε-differentially private with ε = 2" in reason
    assert "with no attribute risk beside it (give the fitted model)" in reason
