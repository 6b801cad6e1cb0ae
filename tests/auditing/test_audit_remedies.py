"""The remedies of the verdict lines follow what the release's synthesizer declares
(``ModelInfo.releases_donor_values``, a ``smoothing`` setting) and what its settings did (the
columns smoothed, a specification's methods), not its registered name."""

from __future__ import annotations

import dataclasses

import pytest

import bayes_risk as br
from bayes_risk.auditing import remedies
from bayes_risk.cli import main
from bayes_risk.contract import capabilities
from bayes_risk.measures import measures
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


def _release(tmp_path, method: str, *options: str, name: str | None = None):
    """A CART-like release (m = 2) of Tenure, Income and Expenditure made by ``method``."""
    orig = tmp_path / "orig.csv"
    if not orig.exists():
        br.make_ce_like(240, random_seed=5).to_csv(orig, index=False)
    syn = tmp_path / f"syn_{name or method}"
    assert main(["synthesize", str(orig), "--method", method, "--synthesize", "Tenure",
                 "Income", "Expenditure", "--categorical", *CATS, "-m", "2", "--random-seed",
                 "1", *options, "--out", str(syn), "--quiet"]) == 0
    return orig, syn


def _audit(tmp_path, method: str, *options: str, name: str | None = None, skip=()):
    """The release audited on identification and the empirical measures only (the lines whose
    remedies name smoothing)."""
    orig, syn = _release(tmp_path, method, *options, name=name)
    return br.audit(str(orig), str(syn), known=KNOWN, random_seed=2, progressbar=False,
                    settings=br.AuditSettings(sweep=None, skip=[
                        "utility", "posterior_identification", "attribute", "membership",
                        *skip]))


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
    assert mine.plan.donor_columns == {"Income": "my-cart", "Expenditure": "my-cart"}
    assert sorted(mine.plan.smoothable_columns) == ["Expenditure", "Income"]
    smooth = _smoothing(mine)
    assert any("of Income " in r for r in smooth)
    assert all("Tenure" not in r for r in smooth)  # categorical: nothing to smooth
    em = next(v for v in mine.verdicts if v.measure.startswith("expected match rate"))
    assert em.exceeds and any("--smoothing" in r for r in em.remedies)
    assert [(v.measure, v.value, v.remedies) for v in mine.verdicts] == \
        [(v.measure, v.value, v.remedies) for v in cart.verdicts]


def test_a_model_without_the_flag_gets_no_smoothing_remedy(audits):
    """NoDonorCART synthesizes the same values but declares no donor values: the same lines
    past their thresholds, with their other remedies, and no smoothing."""
    plain, cart = audits["no-donor-cart"], audits["cart"]
    assert plain.plan.donor_columns == {} and plain.plan.smoothable_columns == []
    assert _smoothing(plain) == []
    past = [v for v in plain.verdicts if v.exceeds]
    assert past and all(v.remedies for v in past)
    assert [(v.measure, v.value) for v in plain.verdicts] == \
        [(v.measure, v.value) for v in cart.verdicts]


def test_donor_values_without_a_smoothing_setting(audits):
    """A synthesizer that releases donor values and has no smoothing setting (PMM) is told to
    synthesize the numeric columns with a method that draws new values, not to smooth."""
    plan = dataclasses.replace(audits["cart"].plan, smoothable_columns=[], method="pmm",
                               donor_columns={"Income": "pmm", "Expenditure": "pmm"})
    (rem,) = remedies.smoothing_remedy(plan, ["Income", "Age"])
    assert "--smoothing" not in rem
    assert rem.startswith("synthesize the numeric values of Income (pmm) with a method that "
                          "draws new values")
    # categorical or unsynthesized columns have nothing to smooth
    assert remedies.smoothing_remedy(plan, ["Tenure", "Age"]) == []
    assert remedies.smoothing_remedy(
        dataclasses.replace(plan, donor_columns={}), ["Income"]) == []


def test_a_smoothed_release_is_not_told_to_smooth(tmp_path):
    """A CART release smoothed on Income releases donors' values of Expenditure only: the
    causes and remedies name Expenditure, never Income, and smoothing is offered for
    Expenditure through the API (the command line's --smoothing smooths every column)."""
    orig, syn = _release(tmp_path, "cart", name="cart")
    rel = br.SyntheticData.load(str(syn))
    assert _plan(orig, rel).donor_columns == {"Income": "cart", "Expenditure": "cart"}
    rel.settings["smoothing"] = ["Income"]
    smoothed = _plan(orig, rel)
    assert smoothed.donor_columns == {"Expenditure": "cart"}
    assert smoothed.smoothable_columns == ["Expenditure"]
    (rem,) = remedies.smoothing_remedy(smoothed, ["Income", "Expenditure"])
    assert rem.startswith("smooth the synthesizer's numeric values of Expenditure (smoothing="
                          "['Expenditure'] in the Python API")
    assert remedies.smoothing_remedy(smoothed, ["Income"]) == []
    rel.settings["smoothing"] = True
    assert _plan(orig, rel).donor_columns == {}


def test_a_specification_names_each_column_s_method(tmp_path):
    """synthpop-style per-column methods: norm draws new values (no donor column); normrank
    maps its draws back to observed values (a donor column that smoothing cannot reach)."""
    orig, syn = _release(tmp_path, "cart", "--method-per-column", "Tenure=cart",
                         "Income=norm", "Expenditure=normrank", name="spec")
    plan = _plan(orig, br.SyntheticData.load(str(syn)))
    assert plan.donor_columns == {"Expenditure": "normrank"}
    assert plan.smoothable_columns == []
    (rem,) = remedies.smoothing_remedy(plan, ["Income", "Expenditure"])
    assert rem.startswith("synthesize the numeric values of Expenditure (normrank) with a "
                          "method that draws new values")
    assert remedies.donors_clause(plan, ["Income"]) == ""
    # the settings table and the synthesize summary name each given column's method
    method = "cart; per column: Tenure=cart, Income=norm, Expenditure=normrank"
    assert ("release", "synthesis method", method) in [
        (x.step, x.name, x.value) for x in plan.settings]
    assert br.SyntheticData.load(str(syn)).method_description == method
    assert remedies.donors_clause(plan, ["Expenditure"]) == (
        ", as the release gives donors' original values of Expenditure (normrank)")


def _plan(orig, release):
    """The plan of an audit of ``release`` (its cheapest step only)."""
    skip = [m.name for m in measures() if m.name != "identification"]
    return br.audit(str(orig), release, known=KNOWN, random_seed=2, progressbar=False,
                    settings=br.AuditSettings(sweep=None, skip=skip)).plan
