"""The remedies of the verdict lines follow what the release's synthesizer declares
(``ModelInfo.releases_donor_values``, a ``smoothing`` setting), not its registered name."""

from __future__ import annotations

import dataclasses

import pytest

import bayes_risk as br
from bayes_risk.auditing import remedies
from bayes_risk.cli import main
from bayes_risk.contract import capabilities
from bayes_risk.models import get_synthesizer
from bayes_risk.testing import registered_synthesizer

# the package's own warnings (separation on tiny data, …) are expected here
pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.BayesRiskWarning")

KNOWN = ["Age", "Urban", "Marital", "Income"]  # Income synthesized: the lines read the release
CATS = ["Urban", "Marital", "Tenure"]

#: two models another distribution registers: CART under its own name, and a CART subclass
#: that declares it does not release donor values (as a smoothing-only variant would)
SOURCE = (
    "from bayes_risk.contract import ModelInfo\n"
    "from bayes_risk.models import CARTSynthesizer\n\n\n"
    "class MyCART(CARTSynthesizer):\n"
    "    method_name = 'my-cart'\n\n\n"
    "class NoDonorCART(CARTSynthesizer):\n"
    "    method_name = 'no-donor-cart'\n"
    "    info = ModelInfo(partial_synthesis=True, required=('synthesized',), visit_order=True)\n"
)


def _audit(tmp_path, method: str):
    """A CART-like release (m = 2) made by ``method``, audited on identification and the
    empirical measures only (the lines whose remedies name smoothing)."""
    orig = tmp_path / "orig.csv"
    if not orig.exists():
        br.make_ce_like(240, random_seed=5).to_csv(orig, index=False)
    syn = tmp_path / f"syn_{method}"
    assert main(["synthesize", str(orig), "--method", method, "--synthesize", "Tenure",
                 "Income", "--categorical", *CATS, "-m", "2", "--random-seed", "1",
                 "--out", str(syn), "--quiet"]) == 0
    return br.audit(str(orig), str(syn), known=KNOWN, random_seed=2, progressbar=False,
                    settings=br.AuditSettings(sweep=None, skip=[
                        "utility", "posterior_identification", "attribute", "membership"]))


@pytest.fixture(scope="module")
def audits(tmp_path_factory):
    """The audits of the same release made by cart, MyCART and NoDonorCART."""
    tmp = tmp_path_factory.mktemp("remedies")
    (tmp / "remedy_models.py").write_text(SOURCE)
    with registered_synthesizer("my-cart", "remedy_models:MyCART", path=tmp), \
            registered_synthesizer("no-donor-cart", "remedy_models:NoDonorCART", path=tmp):
        return {m: _audit(tmp, m) for m in ("cart", "my-cart", "no-donor-cart")}


def _smoothing(res) -> list[str]:
    return [r for v in res.verdicts for r in v.remedies if "--smoothing" in r]


def test_which_builtin_synthesizers_release_donor_values():
    # CART draws a donor's value from the leaf, PMM copies a matched donor's, random forests a
    # leaf donor's for a numeric column (unless smoothed, as CART's); the Bayesian models new
    # values
    flags = {m: capabilities(get_synthesizer(m)).releases_donor_values
             for m in ("cart", "pmm", "rf", "dpmpm")}
    assert flags == {"cart": True, "pmm": True, "rf": True, "dpmpm": False}


def test_a_registered_cart_subclass_gets_the_smoothing_remedy(audits):
    """MyCART declares what CART declares: the plan carries the flag, and the lines past their
    thresholds offer smoothing of the synthesized numeric column the intruder knows (Income),
    exactly as for cart; the identical release gives identical lines."""
    mine, cart = audits["my-cart"], audits["cart"]
    assert mine.plan.method == "my-cart"
    assert mine.plan.releases_donor_values and mine.plan.smoothing_option
    smooth = _smoothing(mine)
    assert smooth and all("Income" in r and "Tenure" not in r for r in smooth)
    em = next(v for v in mine.verdicts if v.measure.startswith("expected match rate"))
    assert em.exceeds and any("--smoothing" in r for r in em.remedies)
    assert [(v.measure, v.value, v.remedies) for v in mine.verdicts] == \
        [(v.measure, v.value, v.remedies) for v in cart.verdicts]


def test_a_model_without_the_flag_gets_no_smoothing_remedy(audits):
    """NoDonorCART synthesizes the same values but declares no donor values: the same lines
    past their thresholds, with their other remedies, and no smoothing."""
    plain, cart = audits["no-donor-cart"], audits["cart"]
    assert not plain.plan.releases_donor_values
    assert _smoothing(plain) == []
    past = [v for v in plain.verdicts if v.exceeds]
    assert past and all(v.remedies for v in past)
    assert [(v.measure, v.value) for v in plain.verdicts] == \
        [(v.measure, v.value) for v in cart.verdicts]


def test_donor_values_without_a_smoothing_setting(audits):
    """A synthesizer that releases donor values and has no smoothing setting (PMM) is told to
    synthesize the numeric columns with a method that draws new values, not to smooth."""
    plan = dataclasses.replace(audits["cart"].plan, smoothing_option=False, method="pmm")
    (rem,) = remedies.smoothing_remedy(plan, ["Income", "Age"])
    assert "--smoothing" not in rem
    assert rem.startswith("synthesize the numeric values of Income with a method that draws "
                          "new values") and "instead of pmm" in rem
    # categorical or unsynthesized columns have nothing to smooth
    assert remedies.smoothing_remedy(plan, ["Tenure", "Age"]) == []
    assert remedies.smoothing_remedy(
        dataclasses.replace(plan, releases_donor_values=False), ["Income"]) == []
