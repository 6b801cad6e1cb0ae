"""The marginal likelihood of a DPMPM regime from its partitions (issue 72).

* ``alpha_log_integrals``: the Ewens partition probabilities with α integrated against its
  Gamma prior sum to 1 over every partition, and match ``scipy.integrate.quad``.
* ``partition_evidence``: on tables small enough to list every partition, its lower and upper
  bounds hold the exact evidence (computed here by enumeration, with α integrated by
  ``quad``: no code of the module), the lower bound within a few tenths of a nat.
* The regime record (``convergence_summary()["regimes"]``) gives a regime the mass only when
  its lower bound is above the others' upper bounds by the margin asked; a chain still moving
  gives no upper bound; a fit whose chains disagree records the bounds and names them in
  ``REGIMES_DISAGREE``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate
from scipy.special import gammaln, logsumexp

from bayes_risk.models import Sampling
from bayes_risk.models._bayesian import regimes
from bayes_risk.models.dpmpm.evidence import alpha_log_integrals, partition_evidence


def _partitions(n: int):
    """Every set partition of ``n`` records as a restricted growth string."""
    a = [0] * n

    def rec(i: int, m: int):
        if i == n:
            yield np.array(a)
            return
        for v in range(m + 1):
            a[i] = v
            yield from rec(i + 1, max(m, v + 1))

    yield from rec(1, 1)


def _log_alpha_integral(k: int, n: int, a0: float, b0: float) -> float:
    """``log ∫ α^k Γ(α) / Γ(α + n) Gamma(α; a0, b0) dα`` by adaptive quadrature in log α."""
    def f(t: float) -> float:
        al = math.exp(t)
        return math.exp(k * t + math.lgamma(al) - math.lgamma(al + n) + a0 * math.log(b0)
                        - math.lgamma(a0) + a0 * t - b0 * al)

    val, _ = integrate.quad(f, -300.0, 20.0, limit=500, points=[-5.0, 0.0, 5.0])
    return math.log(val)


def _exact_log_evidence(codes: np.ndarray, d: np.ndarray, a0: float, b0: float) -> float:
    """``log p(y)`` of the Dirichlet-process mixture of products of multinomials (Dirichlet(1)
    category probabilities, α ~ Gamma(a0, b0), missing entries left out), summed over every
    partition of the records (each block's marginal likelihood computed once per subset)."""
    n, p = codes.shape
    li = [_log_alpha_integral(k, n, a0, b0) if k else 0.0 for k in range(n + 1)]
    block = np.zeros(2**n)  # log Γ(n_b) + log p(y_b) of every subset b of the records
    for mask in range(1, 2**n):
        m = np.array([(mask >> i) & 1 for i in range(n)], dtype=bool)
        lp = gammaln(m.sum())
        for j in range(p):
            c = codes[m, j]
            c = c[c >= 0]
            lp += gammaln(d[j]) - gammaln(d[j] + c.size) + sum(
                gammaln(1 + np.count_nonzero(c == v)) for v in range(d[j]))
        block[mask] = lp
    weights = 1 << np.arange(n)
    out = []
    for rgs in _partitions(n):
        k = int(rgs.max()) + 1
        masks = [int(weights[rgs == b].sum()) for b in range(k)]
        out.append(li[k] + block[masks].sum())
    return float(logsumexp(out))


def test_alpha_integrals_give_a_distribution_over_partitions():
    """Σ_P exp(out[k(P)]) Π_b Γ(n_b) = 1 over the 52 partitions of 5 records, and each
    integral matches adaptive quadrature to 1e-7."""
    n, a0, b0 = 5, 0.25, 0.25
    li = alpha_log_integrals(n, n + 1, a0, b0)
    total = sum(math.exp(li[int(r.max()) + 1] + sum(gammaln(np.bincount(r))))
                for r in _partitions(n))
    assert total == pytest.approx(1.0, abs=1e-9)
    for k in (1, 2, 5):
        assert li[k] == pytest.approx(_log_alpha_integral(k, n, a0, b0), abs=1e-7)
    # a second prior: the Ewens probabilities still sum to 1
    li = alpha_log_integrals(4, 5, 2.0, 0.5)
    assert sum(math.exp(li[int(r.max()) + 1] + sum(gammaln(np.bincount(r))))
               for r in _partitions(4)) == pytest.approx(1.0, abs=1e-9)


def _table(n: int, seed: int, two_groups: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    d = np.array([2, 3, 2])
    if two_groups:  # two well separated groups of records
        h = n // 2
        codes = np.vstack([np.column_stack([np.zeros(h, int), rng.choice(3, h, p=[.8, .1, .1]),
                                            np.zeros(h, int)]),
                           np.column_stack([np.ones(n - h, int),
                                            rng.choice(3, n - h, p=[.1, .1, .8]),
                                            np.ones(n - h, int)])])
    else:
        codes = np.column_stack([rng.integers(0, dj, n) for dj in d])
    codes[rng.random(codes.shape) < 0.1] = -1  # missing entries, integrated out
    return codes.astype(np.int64), d


@pytest.mark.parametrize(("n", "seed", "two_groups"), [(8, 3, False), (9, 1, True),
                                                        (7, 5, True)])
def test_bounds_hold_the_exact_evidence(n, seed, two_groups):
    """Lower ≤ exact ≤ upper within 4 standard errors on tables of 7–9 records (every one of
    their 877–21,147 partitions summed), two seeds each; the lower bound is within 1.5 nats
    of the exact evidence (tighter than the upper, which pays for classes that come and go
    at this size)."""
    codes, d = _table(n, seed, two_groups)
    exact = _exact_log_evidence(codes, d, 0.25, 0.25)
    for s in range(2):
        r = partition_evidence(codes, d, np.zeros(n, np.int64), alpha_prior=(0.25, 0.25),
                               dirichlet_prior=1.0, sweeps=(200, 3000, 3000), random_seed=s)
        assert r["lower"] - 4 * r["lower_se"] <= exact <= r["upper"] + 4 * r["upper_se"], (
            r, exact)
        assert exact - r["lower"] < 1.5, (r, exact)
        # log Z = E[log p(P, y)] + H: the bounds are those of the entropy
        assert r["entropy_lower"] <= exact - r["log_joint"] + 4 * r["lower_se"]


def _attrs(lower, upper, se=1.0, drift=(0.0, 0.0)):
    return {regimes.BOUNDS_ATTR[0]: list(lower), regimes.BOUNDS_ATTR[1]: list(upper),
            regimes.BOUNDS_SE_ATTR[0]: [se] * len(lower),
            regimes.BOUNDS_SE_ATTR[1]: [se] * len(lower),
            regimes.DRIFT_ATTR: list(drift), "evidence_sweeps": [100, 300, 300]}


def _two_regimes(attrs):
    """A regime summary of two chains kept apart on every quantity, with ``attrs``."""
    import xarray as xr

    rng = np.random.default_rng(0)
    a = np.stack([rng.normal(1.0, 0.1, 200), rng.normal(3.0, 0.1, 200)])
    k = np.stack([rng.normal(12.0, 0.5, 200), rng.normal(25.0, 0.5, 200)])
    post = xr.Dataset({"alpha": (("chain", "draw"), a)}, attrs=attrs)
    return regimes.regime_summary(post, {"alpha": a, "k_occupied": k})


def test_the_regime_above_the_others_bounds_holds_the_mass():
    """Regime 2's lower bound 330 nats above regime 1's upper bound: it holds at least
    1 − e^-322 (4 standard errors taken against it), the warning and the regime text say so;
    bounds that overlap, or an upper bound of a chain still moving, settle nothing."""
    s = _two_regimes(_attrs([-144_125.6, -143_680.8], [-144_011.4, -142_735.4]))
    r1, r2 = s["regimes"]
    assert r2["holds_mass"] and not r1["holds_mass"] and regimes.heavy_regime(s) == 2
    assert r1["mass_bounds"][1] == pytest.approx(math.exp(-(-143_680.8 - 4 + 144_011.4 - 4)),
                                                 rel=1e-6)
    assert r2["log_evidence_bounds"] == [-143_680.8, -142_735.4]
    assert "posterior probability at least 1 − 1e-143" in regimes.regime_text(s) or (
        "at least 1 − " in regimes.regime_text(s))
    overlap = _two_regimes(_attrs([-144_125.6, -144_020.0], [-144_011.4, -142_735.4]))
    assert regimes.heavy_regime(overlap) is None and "not settled" in overlap["evidence"]
    # chain 1 still moving (its upper bound's terms drifted 6 standard errors): no upper bound
    moving = _two_regimes(_attrs([-144_125.6, -143_680.8], [-144_011.4, -142_735.4],
                                 drift=(6.0, 0.0)))
    assert regimes.heavy_regime(moving) is None
    assert moving["regimes"][0]["log_evidence_bounds"][1] is None
    # 4 standard errors of 10 nats eat a 70-nat margin
    close = _two_regimes(_attrs([-144_125.6, -143_941.4], [-144_011.4, -142_735.4], se=10.0))
    assert regimes.heavy_regime(close) is None


def test_a_fit_whose_chains_disagree_bounds_each_regime():
    """Two chains kept apart (no warm-up) on 300 records: the fit runs the evidence pass from
    each chain's last draw, records the bounds per chain and names them in REGIMES_DISAGREE;
    chains that agree run no pass."""
    from bayes_risk.data import make_acs_like
    from bayes_risk.models import DPMPM

    df = make_acs_like(300, random_seed=1)[["SEX", "MAR", "MIG", "AGE"]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = DPMPM(n_components=80,
                  sampling=Sampling(tune=0, draws=30, chains=2, cores=1), progressbar=False,
                  alpha_warmup_sweeps=0).fit(df, random_seed=2)
    at = m.posterior_["posterior"].attrs
    lo, up = (np.asarray(at[k]) for k in regimes.BOUNDS_ATTR)
    assert lo.shape == up.shape == (2,) and np.all(lo < up)
    reg = m.convergence_summary()["regimes"]
    assert not reg["agree"] and "collapsed Gibbs" in reg["evidence"]
    assert [c["log_evidence_bounds"][0] for c in reg["chains"]] == list(lo)
    msg = [str(w.message) for w in caught if "REGIMES_DISAGREE" in str(w.message)]
    assert len(msg) == 1 and "log evidence" in msg[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agree = DPMPM(n_components=5, sampling=Sampling(tune=50, draws=50, chains=2, cores=1),
                      progressbar=False).fit(df, random_seed=1)
    assert regimes.BOUNDS_ATTR[0] not in agree.posterior_["posterior"].attrs


@pytest.mark.slow
def test_nyexample_regime_of_many_classes_holds_the_mass():
    """NYexample (20,000 × 10, K = 80; issue 72): the chain started with every class and the
    one started with three (300 warm-up sweeps, 150 draws kept every second sweep) sit in two
    regimes; the one of many classes holds the mass, its lower bound more than 100 nats above
    the other's upper bound, although the other's log p(partition, y) is the larger. CPU ≈ 30 s
    (the evidence passes ≈ 17 s)."""
    import pandas as pd
    from _shared import shared_path

    from bayes_risk.models import DPMPM

    df = pd.read_csv(shared_path("data", "NYexample_X.csv"), dtype=str)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPMPM(n_components=80,
                  sampling=Sampling(tune=300, draws=150, thin=2, max_sweeps=0, chains=2, cores=1),
                  progressbar=False).fit(df, categorical=list(df.columns),
                                                  random_seed=1)
    reg = m.convergence_summary()["regimes"]
    assert not reg["agree"] and regimes.heavy_regime(reg) is not None, reg
    heavy = reg["regimes"][regimes.heavy_regime(reg) - 1]
    light = [r for r in reg["regimes"] if r is not heavy]
    assert heavy["chains"] == [0] and heavy["k_occupied"] > 20, reg  # started 'spread'
    for r in light:
        assert r["k_occupied"] < 16
        assert heavy["log_evidence_bounds"][0] - r["log_evidence_bounds"][1] > 100.0, reg
        assert r["mass_bounds"][1] < 1e-40
