"""DPMPM chains from overdispersed starts, the regime check and the evidence (issue 45).

* The chains start at both ends of the number of classes (``starts``) and the regime check
  (``REGIMES_DISAGREE``) says when they stay apart — and not when short chains merely fail
  R-hat by chance.
* Ground truth on the ACS extract: an independent sampler written here (collapsed Gibbs,
  imports nothing of the package's samplers) and the package, each from both starts, reach the
  same α and ``k*``; neither finds the regime of α ≈ 3–6 and 14–22 classes that plain blocked
  Gibbs started with every class occupied sits in.
* The stepping-stone estimate of the tempered ladders against the exact evidence of small
  tables (``tests/_exact.py``, K = 2, 3), and the kept draws of a tempered fit against the
  exact posterior.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _exact import dpmpm_exact
from _shared import shared_path
from numba import njit
from scipy.special import gammaln

from bayes_risk.exceptions import ValidationError
from bayes_risk.models import DPMPM, Sampling

ACS_COLUMNS = ["AGEP", "MAR", "SCHL", "SEX", "WKL"]
# posterior of DPMPM(n_components=80) on the ACS extract from a long run (4 chains × 8,000
# sweeps; tests/models/test_dpmpm_convergence.py): mean (MCSE)
ACS_ALPHA = (0.5591, 0.0028)
ACS_KOCC = (4.6345, 0.0116)


def _quiet_fit(df: pd.DataFrame, seed: int, **settings) -> DPMPM:
    model = DPMPM.from_settings({"progressbar": False, "cores": 1, **settings})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(df, random_seed=seed)


# ------------------------------------------------------------------ independent sampler
@njit(cache=True)
def _collapsed_sweep(y, z, nk, c, d, off, alpha, la, ld, u):  # pragma: no cover - numba
    """One sweep of single-site collapsed Gibbs on the labelled truncated stick-breaking
    DPMPM: each record's class from ``p(z_i | z_-i, α, y)``, the sticks and φ integrated out
    (``p(z | α) = Π_{k<K} α B(1 + n_k, α + m_k)``, Dirichlet–multinomial classes).
    ``la[x] = log(a + x)``, ``ld[j, x] = log(d_j a + x)`` (counts are integers)."""
    n, p = y.shape
    K = nk.shape[0]
    w = np.empty(K)
    tail = np.empty(K + 1)
    for i in range(n):
        k0 = z[i]
        nk[k0] -= 1.0
        for j in range(p):
            c[off[j] + y[i, j], k0] -= 1.0
        tail[K] = 0.0
        for k in range(K - 1, -1, -1):
            tail[k] = tail[k + 1] + nk[k]
        # adding the record to class k changes n_k and the tail sums of the labels before it
        before = 0.0  # Σ_{h<k} log(α + m_h + 1) − log(α + m_h) collapses to Σ log(α + m_h)
        for k in range(K):
            if k < K - 1:
                lp = math.log(1.0 + nk[k]) - math.log(1.0 + alpha + tail[k]) + before
            else:
                lp = before
            nkk = int(nk[k])
            for j in range(p):
                lp += la[int(c[off[j] + y[i, j], k])] - ld[j, nkk]
            w[k] = lp
            if k < K - 1:
                before += math.log(alpha + tail[k + 1]) - math.log(1.0 + alpha + tail[k])
        mx = w.max()
        tot = 0.0
        for k in range(K):
            w[k] = math.exp(w[k] - mx)
            tot += w[k]
        t = u[i] * tot
        acc = 0.0
        new = K - 1
        for k in range(K):
            acc += w[k]
            if t < acc:
                new = k
                break
        z[i] = new
        nk[new] += 1.0
        for j in range(p):
            c[off[j] + y[i, j], new] += 1.0


@njit(cache=True)
def _log_prior(nk, alpha):  # pragma: no cover - numba
    K = nk.shape[0]
    m = 0.0
    out = 0.0
    for k in range(K - 1, -1, -1):
        if k < K - 1:
            out += (math.lgamma(1.0 + nk[k]) + math.lgamma(alpha + m)
                    - math.lgamma(1.0 + alpha + nk[k] + m) + math.log(alpha))
        m += nk[k]
    return out


@njit(cache=True)
def _label_swaps(z, nk, c, alpha, u):  # pragma: no cover - numba
    """Metropolis swaps of two labels (the likelihood does not depend on them; the prior
    does): accept with the prior ratio."""
    K = nk.shape[0]
    for t in range(u.shape[0]):
        k = int(u[t, 0] * K)
        l = int(u[t, 1] * K)
        if k == l or nk[k] == nk[l]:
            continue
        old = _log_prior(nk, alpha)
        nk[k], nk[l] = nk[l], nk[k]
        if math.log(1.0 - u[t, 2]) < _log_prior(nk, alpha) - old:
            for r in range(c.shape[0]):
                c[r, k], c[r, l] = c[r, l], c[r, k]
            for i in range(z.shape[0]):
                if z[i] == k:
                    z[i] = l
                elif z[i] == l:
                    z[i] = k
        else:
            nk[k], nk[l] = nk[l], nk[k]


@njit(cache=True)
def _log_lik_class(cv, n, d, off, a):  # pragma: no cover - numba
    """Dirichlet–multinomial log marginal likelihood of one class (level counts ``cv``)."""
    out = 0.0
    for j in range(d.shape[0]):
        out += math.lgamma(d[j] * a) - math.lgamma(d[j] * a + n)
        for l in range(d[j]):
            out += math.lgamma(a + cv[off[j] + l]) - math.lgamma(a)
    return out


@njit(cache=True)
def _split_merge(y, z, nk, c, d, off, alpha, a, moves, u):  # pragma: no cover - numba
    """Sequentially allocated split–merge moves (Dahl 2003) on the labelled collapsed target
    ``p(z | α) p(y | z)``: an ordered pair of records ``(i, j)``; in one class, a split in which
    ``j`` starts a uniformly chosen empty label and the other members follow one by one with
    probability ∝ size × predictive; in two classes, ``j``'s class merged into ``i``'s (the
    reverse split must choose that label: probability 1 / empty labels after the merge).
    ``u[moves, 2n + 4]``: each move's uniforms (pair, label, acceptance, shuffle, allocation)."""
    n, p = y.shape
    K = nk.shape[0]
    L = c.shape[0]
    order = np.empty(n, dtype=np.int64)
    to_a = np.zeros(n, dtype=np.bool_)
    for t in range(moves):
        i = int(u[t, 0] * n)
        j = int(u[t, 1] * (n - 1))
        if j >= i:
            j += 1
        ki, kj = z[i], z[j]
        split = ki == kj
        empty = 0
        for k in range(K):
            if nk[k] == 0:
                empty += 1
        if split and empty == 0:
            continue
        if split:  # the new label: the r-th empty one
            r = int(u[t, 2] * empty)
            e = -1
            for k in range(K):
                if nk[k] == 0:
                    if r == 0:
                        e = k
                        break
                    r -= 1
        else:
            e = kj
        m = 0
        for r in range(n):
            if (z[r] == ki or z[r] == kj) and r != i and r != j:
                order[m] = r
                m += 1
        for s in range(m - 1, 0, -1):  # shuffle
            q = int(u[t, 4 + s] * (s + 1))
            order[s], order[q] = order[q], order[s]
        ca = np.zeros(L)
        cb = np.zeros(L)
        for jj in range(p):
            ca[off[jj] + y[i, jj]] += 1.0
            cb[off[jj] + y[j, jj]] += 1.0
        na, nb = 1.0, 1.0
        logq = 0.0
        for s in range(m):
            r = order[s]
            la = math.log(na)
            lb = math.log(nb)
            for jj in range(p):
                row = off[jj] + y[r, jj]
                la += math.log(a + ca[row]) - math.log(d[jj] * a + na)
                lb += math.log(a + cb[row]) - math.log(d[jj] * a + nb)
            mx = max(la, lb)
            pa = math.exp(la - mx) / (math.exp(la - mx) + math.exp(lb - mx))
            if split:
                to_a[s] = u[t, 4 + n + s] < pa
            else:
                to_a[s] = z[r] == ki
            logq += math.log(pa) if to_a[s] else math.log1p(-pa)
            if to_a[s]:
                na += 1.0
                for jj in range(p):
                    ca[off[jj] + y[r, jj]] += 1.0
            else:
                nb += 1.0
                for jj in range(p):
                    cb[off[jj] + y[r, jj]] += 1.0
        old = _log_prior(nk, alpha) + _log_lik_class(c[:, ki], nk[ki], d, off, a)
        if not split:
            old += _log_lik_class(c[:, kj], nk[kj], d, off, a)
        nki, nke = nk[ki], nk[e]
        if split:
            nk[ki], nk[e] = na, nb
            new = (_log_prior(nk, alpha) + _log_lik_class(ca, na, d, off, a)
                   + _log_lik_class(cb, nb, d, off, a))
            log_r = new - old + math.log(empty) - logq
        else:
            nk[ki], nk[e] = na + nb, 0.0
            new = _log_prior(nk, alpha) + _log_lik_class(ca + cb, na + nb, d, off, a)
            log_r = new - old - math.log(empty + 1) + logq
        if math.log(1.0 - u[t, 3]) < log_r:
            if split:
                c[:, ki] = ca
                c[:, e] = cb
                z[j] = e
                for s in range(m):
                    if not to_a[s]:
                        z[order[s]] = e
            else:
                c[:, ki] = ca + cb
                c[:, e] = 0.0
                for r in range(n):
                    if z[r] == e:
                        z[r] = ki
        else:
            nk[ki], nk[e] = nki, nke


_LOG_ALPHA = np.linspace(math.log(1e-3), math.log(100.0), 400)
#: split–merge moves per sweep of the independent sampler
SPLIT_MERGE = 10


def _draw_alpha(nk: np.ndarray, a0: float, b0: float, rng: np.random.Generator) -> float:
    """α from ``p(α | z) ∝ Gamma(α; a0, b0) p(z | α)`` by inverse CDF on a fine grid of log α
    (the labels after the last occupied one add nothing to ``log p(z | α)``)."""
    last = int(np.flatnonzero(nk)[-1]) if nk.any() else 0
    al = np.exp(_LOG_ALPHA)[:, None]
    n = nk[: last + 1]
    m = np.concatenate([np.cumsum(n[::-1])[::-1][1:], [0.0]])
    lp = (gammaln(1 + n) + gammaln(al + m) - gammaln(1 + al + n + m) + np.log(al))
    if last == nk.size - 1:  # the last label has no stick
        lp = lp[:, :-1]
    logp = lp.sum(axis=1) + a0 * _LOG_ALPHA - b0 * al[:, 0]  # a0 log α: the Jacobian of log α
    w = np.exp(logp - logp.max())
    cw = np.cumsum(w)
    return float(al[min(int(np.searchsorted(cw, rng.random() * cw[-1])), len(cw) - 1), 0])


def independent_dpmpm(y: np.ndarray, d: np.ndarray, K: int, start: str, seed: int,
                      sweeps: int, burn: int, a0: float = 0.25, b0: float = 0.25,
                      a: float = 1.0) -> np.ndarray:
    """Collapsed Gibbs with split–merge moves for the DPMPM, written from the model's
    definition (Dunson & Xing 2009; truncated stick breaking, α ~ Gamma(a0, b0),
    φ ~ Dirichlet(a)): per sweep ``SPLIT_MERGE`` split–merge moves, one single-site sweep, 2K
    label swaps and α from its conditional given the classes; ``[sweeps - burn, 2]``
    draws of (α, k*). ``start``: ``"few"`` (records uniform on 3 classes, α = 0.5) or
    ``"spread"`` (uniform on all K, α from its prior)."""
    rng = np.random.default_rng(seed)
    n, p = y.shape
    off = np.concatenate([[0], np.cumsum(d)[:-1]]).astype(np.int64)
    if start == "few":
        z, alpha = rng.integers(0, 3, n), 0.5
    else:
        z, alpha = rng.integers(0, K, n), float(rng.gamma(a0, 1 / b0))
    z = z.astype(np.int64)
    nk = np.bincount(z, minlength=K).astype(np.float64)
    c = np.zeros((int(d.sum()), K))
    for j in range(p):
        np.add.at(c, (off[j] + y[:, j], z), 1.0)
    counts = np.arange(n + 1, dtype=np.float64)
    la = np.log(a + counts)
    ld = np.log(d[:, None] * a + counts[None, :])
    out = np.empty((sweeps - burn, 2))
    for s in range(sweeps):
        _split_merge(y, z, nk, c, d, off, alpha, a, SPLIT_MERGE, rng.random((SPLIT_MERGE,
                                                                             2 * n + 4)))
        _collapsed_sweep(y, z, nk, c, d, off, alpha, la, ld, rng.random(n))
        _label_swaps(z, nk, c, alpha, rng.random((2 * K, 3)))
        alpha = _draw_alpha(nk, a0, b0, rng)
        if s >= burn:
            out[s - burn] = alpha, np.count_nonzero(nk)
    return out


# ------------------------------------------------------------------ starts and the check
def _small(n: int = 300, seed: int = 1) -> pd.DataFrame:
    from bayes_risk.data import make_acs_like

    return make_acs_like(n, random_seed=seed)[["SEX", "MAR", "MIG", "AGE"]]


def test_starts_are_checked():
    df = _small(60)
    for bad in ("everywhere", ["few", "nowhere"], [], 3):
        with pytest.raises(ValidationError, match="starts must be"):
            DPMPM(sampling=Sampling(starts=bad), progressbar=False).fit(df)
    with pytest.raises(ValidationError, match="temperatures"):
        DPMPM(sampling=Sampling(temperatures=0), progressbar=False).fit(df)
    with pytest.raises(ValidationError, match="structural zeros") as err:
        DPMPM(sampling=Sampling(temperatures=4), structural_zeros=[{"SEX": "1", "MAR": "1"}],
              progressbar=False).fit(df)
    assert err.value.code == "OPTION_CONFLICT"


def test_chains_start_at_both_ends_of_the_number_of_classes():
    """By default chain 1 starts with every class occupied, chain 2 with three, chain 3 from
    the prior; a single kind starts every chain alike."""
    df = _small(300)
    m = _quiet_fit(df, 1, n_components=40, tune=1, draws=5, chains=3)
    first = m.posterior_["warmup_sample_stats"]["k_occupied"].values[:, 0]
    assert first[0] >= 30 and first[1] <= 3 and first[2] < first[0], first
    assert [c["start"] for c in m.convergence_summary()["regimes"]["chains"]] == [
        "spread", "few", "prior"]
    alike = _quiet_fit(df, 1, n_components=40, tune=1, draws=5, chains=2, starts="few")
    assert alike.posterior_["warmup_sample_stats"]["k_occupied"].values[:, 0].max() <= 3


def test_regime_warning_names_each_chains_alpha_and_kstar():
    """Chains kept apart (no warm-up: the chain started with every class occupied still holds
    many classes) are two regimes: REGIMES_DISAGREE names α and k* of each, in the warnings of
    the fit, mcmc_warnings() and convergence_summary(); short chains that agree (R-hat high by
    chance) are not called regimes."""
    df = _small(300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = DPMPM(n_components=80,
                  sampling=Sampling(tune=0, draws=30, chains=2, cores=1), progressbar=False,
                  alpha_warmup_sweeps=0).fit(df, random_seed=2)
    msg = [str(w.message) for w in caught if "REGIMES_DISAGREE" in str(w.message)]
    assert len(msg) == 1
    summ = m.convergence_summary()
    reg = summ["regimes"]
    assert not reg["agree"] and [r["chains"] for r in reg["regimes"]] == [[0], [1]]
    k0, k1 = (r["k_occupied"] for r in reg["regimes"])
    assert k0 > k1 + 3
    for r in reg["regimes"]:
        assert f"k* {r['k_occupied']:.3g}" in msg[0] and f"α {r['alpha']:.3g}" in msg[0]
    assert "started 'spread'" in msg[0] and "started 'few'" in msg[0]
    codes = [w["code"] for w in m.mcmc_warnings()]
    assert "REGIMES_DISAGREE" in codes and not summ["passed"]
    assert any(w["code"] == "REGIMES_DISAGREE" for w in summ["warnings"])
    # agreeing short chains: RHAT_HIGH / LOW_ESS at most, no regimes
    short = _quiet_fit(_small(300), 1, n_components=5, tune=50, draws=50, chains=2)
    assert short.convergence_summary()["regimes"]["agree"]
    assert "REGIMES_DISAGREE" not in [w["code"] for w in short.mcmc_warnings()]


def test_one_chain_has_no_regime_record():
    m = _quiet_fit(_small(100), 1, n_components=4, tune=20, draws=20, chains=1)
    assert m.convergence_summary()["regimes"] is None
    assert "REGIMES_DISAGREE" not in [w["code"] for w in m.mcmc_warnings()]


# ------------------------------------------------------------------ ground truth: ACS extract
@pytest.mark.slow
def test_acs_extract_both_starts_agree_with_an_independent_sampler():
    """Issue 45's table re-measured on ss16pusa_sample_zeros (K = 80).

    Independent collapsed Gibbs (above; 8 seeds × both starts, 375 sweeps after 125 of
    burn-in) and the package (8 seeds, each fit's two chains started 'spread' and 'few', 250
    warm-up sweeps and 250 kept draws, 2 sweeps each): every chain of both samplers is outside the
    regime of α ≈ 3–6 and 14–22 classes the issue reported for plain blocked Gibbs started with
    every class occupied (chain means α < 1.2 and k* < 7), the two samplers' pooled means of α
    and k* agree with each other and with a long run within Monte Carlo error (the standard
    error of the pooled mean from the spread of the 16 chain means, 4.5 of them: Bonferroni
    over 4 comparisons at family-wise 1e-4), and every package fit either has its chains in one
    regime or warns REGIMES_DISAGREE. CPU ≈ 45 s.
    """
    df = pd.read_csv(shared_path("data", "ss16pusa_sample_zeros.csv"))[ACS_COLUMNS].astype(str)
    y = np.stack([pd.Categorical(df[c]).codes for c in ACS_COLUMNS], 1).astype(np.int64)
    d = np.array([df[c].nunique() for c in ACS_COLUMNS], dtype=np.int64)
    ind = np.array([independent_dpmpm(y, d, 80, start, seed, 500, 125).mean(axis=0)
                    for seed in range(8) for start in ("few", "spread")])
    pkg = []
    for seed in range(1, 9):
        m = _quiet_fit(df, seed, n_components=80, tune=250, draws=250, thin=2, chains=2)
        a = m.posterior_["posterior"]["alpha"].values
        k = m.posterior_["sample_stats"]["k_occupied"].values
        pkg += [(a[c].mean(), k[c].mean()) for c in range(2)]
        reg = m.convergence_summary()["regimes"]
        warned = "REGIMES_DISAGREE" in [w["code"] for w in m.mcmc_warnings()]
        assert reg["agree"] != warned, (seed, reg)
    pkg = np.array(pkg)
    for name, runs in (("independent", ind), ("package", pkg)):
        assert runs[:, 0].max() < 1.2 and runs[:, 1].max() < 7.0, (name, runs)
    bound = 4.5
    for q, (ref, ref_se) in enumerate((ACS_ALPHA, ACS_KOCC)):
        se_i = ind[:, q].std(ddof=1) / math.sqrt(len(ind))
        se_p = pkg[:, q].std(ddof=1) / math.sqrt(len(pkg))
        diff = ind[:, q].mean() - pkg[:, q].mean()
        assert abs(diff) <= bound * math.hypot(se_i, se_p), (q, ind[:, q], pkg[:, q])
        assert abs(pkg[:, q].mean() - ref) <= bound * math.hypot(se_p, ref_se), (q, pkg[:, q])


# ------------------------------------------------------------------ evidence and tempering
def _two_clusters(n: int = 24, seed: int = 5) -> tuple[np.ndarray, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    h = n // 2
    a = np.column_stack([rng.choice(2, h, p=[.85, .15]), rng.choice(3, h, p=[.7, .2, .1])])
    b = np.column_stack([rng.choice(2, h, p=[.15, .85]), rng.choice(3, h, p=[.1, .2, .7])])
    codes = np.vstack([a, b])
    df = pd.DataFrame({"A": codes[:, 0].astype(str), "B": codes[:, 1].astype(str)})
    return codes, df


@pytest.mark.parametrize("K", [2, 3])
def test_stepping_stone_evidence_matches_the_exact_evidence(K):
    """Each chain's stepping-stone estimate of log p(y) over its tempered ladder (12
    temperatures) against the exact evidence (dynamic programme over class counts): within 4
    of its standard errors, which are below 0.1; the regime record carries the estimate and,
    the ladder's swaps being frequent, the regime's posterior probability (1: one regime)."""
    codes, df = _two_clusters()
    exact = dpmpm_exact(codes, np.array([2, 3]), K).log_evidence
    m = _quiet_fit(df, 3, n_components=K, tune=400, draws=1000, chains=2, temperatures=12)
    at = m.posterior_["posterior"].attrs
    for est, se in zip(at["log_evidence"], at["log_evidence_se"], strict=True):
        assert se < 0.1 and abs(est - exact) <= 4 * se, (est, se, exact)
    reg = m.convergence_summary()["regimes"]
    assert reg["agree"] and reg["regimes"][0]["mass"] == 1.0, reg["evidence"]
    assert min(c["min_swap_rate"] for c in reg["chains"]) >= 0.2


def test_tempered_fit_keeps_the_posterior():
    """The kept draws of a tempered fit (the replica at β = 1, states arriving by swaps) have
    the exact posterior means of α and k* (K = 3) within 4 Monte Carlo standard errors."""
    import arviz_stats

    codes, df = _two_clusters()
    ex = dpmpm_exact(codes, np.array([2, 3]), 3)
    m = _quiet_fit(df, 5, n_components=3, tune=300, draws=2000, chains=2, temperatures=6)
    for x, truth in ((m.posterior_["posterior"]["alpha"].values, ex.alpha_mean),
                     (m.posterior_["sample_stats"]["k_occupied"].values * 1.0,
                      ex.k_occupied_mean)):
        se = float(arviz_stats.mcse(x, method="mean"))
        assert abs(float(x.mean()) - truth) <= 4 * se, (float(x.mean()), truth, se)
    rates = m.posterior_["posterior"].attrs["swap_rate"]
    assert np.min(rates) > 0.2


def test_attribute_risk_is_reported_per_regime():
    """A model whose chains sit in two regimes: the attribute-risk result carries
    REGIMES_DISAGREE and RISK_BY_REGIME, and its summary each regime's figures, computed from
    the between-chain estimates (two chains, one per regime: the regimes' mean p_true are the
    means of each record's two chain estimates, p_true_chain_min and p_true_chain_max)."""
    from bayes_risk.attribute import attribute_risk

    df = _small(300)
    # two regimes made on purpose: the draws of two one-chain fits whose α priors put them at
    # α ≈ 0.5 and α ≈ 10, as the two chains of one model
    kw = dict(n_components=10, sampling=Sampling(tune=100, draws=100, chains=1))
    fits = [_quiet_fit(df, 2, **kw), _quiet_fit(df, 3, alpha_prior=(40.0, 4.0), **kw)]
    post = {v: np.concatenate([f.posterior_["posterior"][v].values for f in fits])
            for v in fits[0].posterior_["posterior"].data_vars}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = DPMPM.from_posterior(post, fits[0].schema_, data=df, n_components=10,
                                 sampling=Sampling(tune=100, draws=100, chains=2, cores=1),
                                 progressbar=False)
    assert any("REGIMES_DISAGREE" in str(w.message) for w in caught)
    reg = m.convergence_summary()["regimes"]
    assert not reg["agree"] and reg["quantities"] == ["alpha"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(df, m.synthesize(2, random_seed=1), model=m, records=range(15),
                             random_seed=1, progressbar=False)
    assert {"REGIMES_DISAGREE", "RISK_BY_REGIME"} <= set(res.warnings)
    reg = res.to_dict()["regimes"]
    assert reg["status"] == "computed" and [r["chains"] for r in reg["regimes"]] == [[0], [1]]
    rec = res.records
    ok = rec["flag_codes"].isin(["", "CHAINS_DISAGREE"]).to_numpy()
    assert reg["n_records"] == int(ok.sum()) > 0
    means = sorted(r["summary"]["mean_p_true"] for r in reg["regimes"])
    lo, hi = rec["p_true_chain_min"][ok].mean(), rec["p_true_chain_max"][ok].mean()
    assert lo - 1e-12 <= means[0] <= means[1] <= hi + 1e-12
    assert sum(means) == pytest.approx(lo + hi, rel=1e-9)
    big = reg["largest_prop_top"]
    assert big["prop_top"] == max(r["summary"]["prop_top"] for r in reg["regimes"])
