"""The convergence report's ESS and R-hat are ArviZ's (issue 35 item 2).

A fit's bulk/tail ESS and rank R-hat equal ``arviz_stats.ess`` / ``arviz.rhat`` on the draws the
saved model stores (read back from its NetCDF file), and on arrays of every kind (continuous,
heavy tails, constant and nearly constant, tied integers, rare indicators, chains that disagree,
one and several chains, odd lengths). The tail ESS is ArviZ's with the 5 % and 95 % quantiles of
Vehtari et al. (2021); ArviZ 1.x's default ``prob`` (``rcParams["stats.ci_prob"]`` = 0.89: the
11 % and 89 % quantiles) gives larger values — the 368.2 against 199.9996 of the issue. The
check's decision at the threshold uses the value as computed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_risk.models import DPMPM, Sampling, load_model
from bayes_risk.models._bayesian import convergence_report
from bayes_risk.models._bayesian.convergence import (
    TAIL_PROB,
    check_text,
    ess_bulk,
    ess_tail,
    failed_checks,
    rhat_rank,
    shown_against,
)
from bayes_risk.models._bayesian.convergence_report import check_convergence, convergence_warnings

arviz = pytest.importorskip("arviz")
arviz_stats = pytest.importorskip("arviz_stats")


def _reference(x: np.ndarray) -> list[float]:
    xr_ = x if x.shape[0] > 1 else x[:, : 2 * (x.shape[1] // 2)].reshape(2, -1)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return [float(arviz_stats.ess(x, method="bulk")),
                float(arviz_stats.ess(x, method="tail", prob=(0.05, 0.95))),
                float(arviz_stats.rhat(xr_, method="rank"))]


def _ours(x: np.ndarray) -> list[float]:
    xr_ = x if x.shape[0] > 1 else x[:, : 2 * (x.shape[1] // 2)].reshape(2, -1)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return [ess_bulk(x), ess_tail(x), rhat_rank(xr_)]


def _assert_equal(x: np.ndarray) -> None:
    for a, b in zip(_reference(x), _ours(x), strict=True):
        if np.isnan(a):
            assert np.isnan(b), (a, b)
        else:
            assert b == pytest.approx(a, rel=1e-14, abs=0), (a, b)


def _chains(kind: str, chains: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "normal":
        return rng.normal(size=(chains, draws))
    if kind == "poisson":  # many ties (occupied classes are integers)
        return rng.poisson(3, size=(chains, draws)).astype(float)
    if kind == "walk":  # not converged: R-hat far above 1, tiny ESS
        return np.cumsum(rng.normal(size=(chains, draws)), axis=1)
    if kind == "rare":
        return (rng.random((chains, draws)) < 0.03).astype(float)
    if kind == "cauchy":  # heavy tails: the tail ESS is the one that matters
        return rng.standard_cauchy(size=(chains, draws))
    if kind == "nearly_constant":  # a log-likelihood that moves in its last digits
        return -5.7e3 + 1e-12 * rng.normal(size=(chains, draws))
    if kind == "disagree":  # each chain in its own state
        return rng.normal(size=(chains, draws)) + 3.0 * np.arange(chains)[:, None]
    x = np.empty((chains, draws))  # "ar": autocorrelated
    x[:, 0] = rng.normal(size=chains)
    for t in range(1, draws):
        x[:, t] = 0.9 * x[:, t - 1] + rng.normal(size=chains)
    return x


@pytest.mark.parametrize("kind", ["normal", "poisson", "walk", "rare", "ar", "cauchy",
                                  "nearly_constant", "disagree"])
@pytest.mark.parametrize(("chains", "draws"), [(1, 4), (1, 7), (1, 1000), (2, 5), (2, 501),
                                               (4, 250)])
def test_estimators_are_arviz(kind, chains, draws):
    rng = np.random.default_rng(abs(hash((kind, chains, draws))) % 2**32)
    _assert_equal(_chains(kind, chains, draws, rng))


@settings(max_examples=40, deadline=None)
@given(chains=st.integers(1, 3), draws=st.integers(4, 80), seed=st.integers(0, 2**31),
       levels=st.integers(1, 6))
def test_estimators_equal_arviz_on_tied_chains(chains, draws, seed, levels):
    x = np.random.default_rng(seed).integers(0, levels, size=(chains, draws)).astype(float)
    _assert_equal(x)


def _tiny_fit(draws: int = 40, seed: int = 1) -> DPMPM:
    rng = np.random.default_rng(0)
    k = rng.integers(0, 3, 120)
    df = pd.DataFrame({f"v{j}": np.where(rng.random(120) < 0.1, rng.integers(0, 3, 120), k)
                       .astype(str) for j in range(3)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPMPM(n_components=5, sampling=Sampling(tune=20, draws=draws, chains=2, cores=1),
                     progressbar=False).fit(df, random_seed=seed)


def test_report_equals_arviz_on_the_stored_draws(fitted, tmp_path):
    """Every diagnosed quantity of a saved fit, read back from its NetCDF file through ArviZ's
    own DataTree interface: the bulk ESS, the tail ESS (5 % / 95 %) and R-hat are ArviZ's."""
    m = fitted
    m.save(tmp_path / "m")
    report = check_convergence(load_model(tmp_path / "m"))
    dt = arviz.from_netcdf(tmp_path / "m" / "posterior.nc")
    for q, group in (("loglik", "sample_stats"), ("k_occupied", "sample_stats"),
                     ("alpha", "posterior")):
        row = report.loc[q]
        kw = dict(group=group, var_names=[q])
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            bulk = float(arviz.ess(dt, method="bulk", **kw)[q])
            tail = float(arviz.ess(dt, method="tail", prob=(0.05, 0.95), **kw)[q])
            default_tail = float(arviz.ess(dt, method="tail", **kw)[q])
            rhat = float(arviz.rhat(dt, **kw)[q])
        assert row.ess_bulk == bulk and row.ess_tail == tail and row.rhat == rhat, q
        if q == "loglik":  # the cause of the disagreement: ArviZ's default quantiles
            assert default_tail != tail
    assert m.convergence_summary()["thresholds"]["ess_tail_prob"] == [0.05, 0.95]
    assert TAIL_PROB == (0.05, 0.95)


@pytest.fixture(scope="module")
def fitted() -> DPMPM:
    return _tiny_fit()


def test_convergence_summary_equals_the_stored_record(fitted, tmp_path):
    """``convergence_summary()`` is the record written to ``convergence.json``, before and after
    a save and load; its quantities make a table with ``pandas.DataFrame.from_dict``."""
    import json

    fitted.save(tmp_path / "m")
    stored = json.loads((tmp_path / "m" / "convergence.json").read_text())
    summ = fitted.convergence_summary()
    assert isinstance(summ, dict) and len(summ["quantities"]) > 0
    assert summ["quantities"] == stored["quantities"]
    back = load_model(tmp_path / "m").convergence_summary()
    for key in ("quantities", "passed", "thresholds", "failed_checks"):
        assert back[key] == stored[key], key
    frame = pd.DataFrame.from_dict(summ["quantities"], orient="index")
    assert {"mean", "sd", "ess_bulk", "ess_tail", "rhat", "flag"} <= set(frame.columns)
    codes = {c["code"] for c in stored["failed_checks"]}
    assert {c for f in frame["flag"] for c in f.split(",") if c} == codes


def test_label_invariant_group_holds_what_is_checked_and_is_saved(fitted, tmp_path):
    """ArviZ's own summary of the posterior's group ``label_invariant`` shows the figures the
    package checks (tail ESS at the 5 % / 95 % quantiles: ``stats.ci_prob`` 0.95), and the
    group travels with a saved model's NetCDF file."""
    rec = fitted.convergence_summary()["quantities"]
    assert set(fitted.posterior_["label_invariant"].data_vars) == set(rec)
    fitted.save(tmp_path / "m")
    dt = arviz.from_netcdf(tmp_path / "m" / "posterior.nc")
    assert "label_invariant" in dt.children
    back = load_model(tmp_path / "m")
    xr_ = back.posterior_["label_invariant"]
    for q in rec:
        np.testing.assert_array_equal(xr_[q].values, fitted.posterior_["label_invariant"][q].values)
        assert xr_[q].dims == ("chain", "draw") and xr_[q].attrs["quantity"] == q
    with warnings.catch_warnings(), np.errstate(all="ignore"), \
            arviz.rc_context({"stats.ci_prob": 0.95}):
        warnings.simplefilter("ignore")
        table = arviz.summary(dt, group="label_invariant", kind="diagnostics", round_to="none")
    assert list(table.index) == list(rec)
    for q, row in rec.items():
        if row["sd"] == 0:  # a constant: the package passes it, ArviZ's R-hat is NaN
            continue
        assert (table.loc[q, "ess_bulk"], table.loc[q, "ess_tail"], table.loc[q, "r_hat"]) == (
            row["ess_bulk"], row["ess_tail"], row["rhat"]), q
    assert back.convergence_summary()["quantities"] == rec


def test_label_invariant_names_with_a_slash(monkeypatch):
    # xarray forbids "/" in a variable name: written with U+2215, the name kept in the attrs
    m = _tiny_fit()
    x = np.asarray(m.posterior_["sample_stats"]["loglik"].values, dtype=float)
    monkeypatch.setattr(m, "convergence_quantities", lambda: {"P(a=N/A)": x})
    rep = check_convergence(m)
    assert list(rep.index) == ["P(a=N/A)"]
    var = m.posterior_["label_invariant"]["P(a=N\u2215A)"]
    assert var.attrs["quantity"] == "P(a=N/A)"
    np.testing.assert_array_equal(var.values, x)


def test_decision_at_the_threshold_uses_arviz_value(fitted, monkeypatch):
    """LOW_ESS fires exactly when ArviZ's tail ESS is below the threshold: a threshold equal to
    the value passes, the next float above it fails, and the failed check carries the value."""
    m = fitted
    x = np.asarray(m.posterior_["sample_stats"]["loglik"].values, dtype=float)
    v = float(arviz_stats.ess(x, method="tail", prob=(0.05, 0.95)))
    monkeypatch.setattr(m, "convergence_quantities", lambda: {"loglik": x})
    for threshold, fails in ((v, False), (np.nextafter(v, np.inf), True)):
        monkeypatch.setattr(convergence_report, "ess_min", lambda model, t=threshold: t)
        rep = check_convergence(m)
        tails = [c for c in failed_checks(rep, threshold) if c["statistic"] == "ess_tail"]
        assert bool(tails) == fails
        if fails:
            assert tails[0] == {"code": "LOW_ESS", "quantity": "loglik",
                                "statistic": "ess_tail", "value": v, "threshold": threshold}
            assert "LOW_ESS" in rep.loc["loglik", "flag"].split(",")
            # the message does not round the value onto the threshold
            (w,) = [w for w in convergence_warnings(m, rep) if w["code"] == "LOW_ESS"]
            assert w["checks"] == [c for c in failed_checks(rep, threshold)
                                   if c["code"] == "LOW_ESS"]


def test_values_are_shown_apart_from_their_threshold():
    assert shown_against(199.9996, 200.0, 0) == "199.9996"
    assert shown_against(150.4, 200.0, 0) == "150"
    assert shown_against(1.0100004, 1.01, 3) == "1.0100004"
    assert shown_against(1.3254, 1.01, 3) == "1.325"
    c = {"code": "LOW_ESS", "quantity": "loglik", "statistic": "ess_tail",
         "value": 199.9996, "threshold": 200.0}
    assert check_text(c) == "tail ESS of loglik 199.9996 < 200"
    assert check_text(c, with_quantity=False) == "tail ESS 199.9996"
    r = {"code": "RHAT_HIGH", "quantity": "alpha", "statistic": "rhat", "value": 1.3254,
         "threshold": 1.01}
    assert check_text(r) == "R-hat of alpha 1.325 > 1.01"


def test_constant_quantity_passes(fitted, monkeypatch):
    """A constant (K = 1, or k* stuck at one value): ArviZ's ESS is the number of draws and
    nothing is flagged (ArviZ's R-hat is 0/0 there; the report gives 1)."""
    x = np.full((2, 150), 3.0)
    assert ess_bulk(x) == ess_tail(x) == float(arviz_stats.ess(x, method="bulk")) == 300.0
    monkeypatch.setattr(fitted, "convergence_quantities", lambda: {"k": x})
    row = check_convergence(fitted).loc["k"]
    assert (row.ess_bulk, row.ess_tail, row.rhat, row.flag) == (300.0, 300.0, 1.0, "")


def test_unassessable_quantity_fails_its_check(fitted, monkeypatch):
    """A quantity with a non-finite draw (a -inf log-likelihood) has no ESS: that is a failed
    check with the value NaN, said in words, never a silent pass."""
    import warnings

    from bayes_risk.exceptions import ConvergenceWarning

    x = np.random.default_rng(0).normal(size=(2, 150))
    x[1, 7] = -np.inf
    monkeypatch.setattr(fitted, "convergence_quantities", lambda: {"loglik": x})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        row = check_convergence(fitted, warn=True).loc["loglik"]
    assert np.isnan(row.ess_bulk) and row.flag == "LOW_ESS"
    msgs = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert any("bulk ESS not computable (non-finite draws" in m for m in msgs), msgs


def test_dpmpm_fit_does_not_import_pymc(tmp_path):
    """Issue 15: a DPMPM fit does not import PyMC; the convergence checks import ArviZ's
    estimators (arviz_stats) during the run, on the other core."""
    code = textwrap.dedent("""
        import sys, warnings
        import numpy as np, pandas as pd
        from bayes_risk.models import DPMPM, Sampling
        rng = np.random.default_rng(0)
        df = pd.DataFrame({"a": rng.choice(["x", "y"], 80), "b": rng.choice(["u", "v"], 80)})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = DPMPM(n_components=3, sampling=Sampling(tune=5, draws=10, chains=1),
                      progressbar=False).fit(df)
        m.convergence_summary()
        m.save(sys.argv[1])
        print([k for k in ("pymc", "pytensor") if k in sys.modules])
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m")], cwd=tmp_path,
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
    assert "Sequential sampling (1 chains in 1 job)" in out.stderr  # pm.sample's line


def test_headline_names_fits_quantity_and_value():
    from bayes_risk.models._bayesian.convergence import checks_headline

    checks = [
        {"code": "LOW_ESS", "fit": "model", "quantity": "loglik", "statistic": "ess_tail",
         "value": 199.9996, "threshold": 200.0},
        {"code": "RHAT_HIGH", "fit": "augmented_1", "quantity": "alpha", "statistic": "rhat",
         "value": 1.02, "threshold": 1.01},
        {"code": "LOW_ESS", "fit": "augmented_1", "quantity": "alpha", "statistic": "ess_bulk",
         "value": 150.0, "threshold": 200.0},
    ]
    assert checks_headline(checks, where="summary.json") == (
        "LOW_ESS (fits model, augmented_1; worst fit augmented_1): bulk ESS of alpha 150 < 200; "
        "RHAT_HIGH (fit augmented_1): R-hat of alpha 1.020 > 1.01 "
        "(3 failed check(s) in all: summary.json)")
    one = [{k: v for k, v in checks[0].items() if k != "fit"}]
    assert checks_headline(one, where="convergence.json") == (
        "LOW_ESS: tail ESS of loglik 199.9996 < 200 (1 failed check(s) in all: convergence.json)")


def test_headline_of_checks_read_back_without_a_value():
    """A statistic that could not be computed (fewer than 4 draws per chain) is NaN in memory
    and null once read back from convergence.json: both are the worst check, in words."""
    from bayes_risk.models._bayesian.convergence import checks_headline

    checks = [
        {"code": "LOW_ESS", "quantity": "alpha", "statistic": "ess_bulk", "value": 150.0,
         "threshold": 200.0},
        {"code": "LOW_ESS", "quantity": "loglik", "statistic": "ess_tail", "value": None,
         "threshold": 100.0},
        {"code": "RHAT_HIGH", "quantity": "alpha", "statistic": "rhat", "value": float("nan"),
         "threshold": 1.01},
    ]
    assert checks_headline(checks, where="convergence.json") == (
        "LOW_ESS: tail ESS of loglik not computable (non-finite draws, or fewer than 4 draws per "
        "chain); RHAT_HIGH: R-hat of alpha not computable (non-finite draws, or fewer than 4 "
        "draws per chain) (3 failed check(s) in all: convergence.json)")
