"""The IS (Hu 2019 §3.2.5) and stabilised attribute-risk estimators, with their draw bootstraps.

See :doc:`/methods/attribute`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bayes_risk._numeric import n_threads, threaded_map, threaded_ufunc
from bayes_risk.attribute.diagnostics import (
    KhatJob,
    kish_ess,
    logsumexp,
    pareto_khat,
    psis_log_mean,
    tail_size,
)

__all__ = [
    "log_ratios",
    "is_estimate",
    "stabilised_estimate",
    "bootstrap_counts",
    "bootstrap_is",
    "bootstrap_stabilised",
    "RatioStats",
    "mean_log_ratio",
    "truncated_log_mean",
    "stabilised_bounds",
    "fast_path_exact",
]


def log_ratios(logp: np.ndarray, g0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``logr = logp − logp[..., g0]`` (dropped draws ``-inf``), and ``n_dropped (R,)``."""
    logp = np.asarray(logp, dtype=np.float64)
    r = logp.shape[0]
    tr = logp[np.arange(r), :, np.asarray(g0)]  # [R, H]
    bad = ~np.isfinite(tr)
    with np.errstate(invalid="ignore"):
        logr = logp - np.where(bad, 0.0, tr)[:, :, None]
    if bad.any():
        logr = np.where(bad[:, :, None], -np.inf, logr)
    return logr, bad.sum(axis=1)


class RatioStats:
    """One exponentiation pass ``E = exp(logr − mx)`` over ``logr[R, H, G]``, and its sums."""

    _logr: np.ndarray | None
    _logp: np.ndarray | None
    _g0: np.ndarray | None
    #: Pareto k̂ tails ``(top, bad)`` of :func:`khat_tails`, when computed by :meth:`from_logp`
    tails: tuple[np.ndarray, np.ndarray] | None = None
    #: ``(W_max_L, num, sq, mxw)`` of the published estimator, when computed by :meth:`from_logp`
    is_sums: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
    #: the k̂ fits of ``tails`` when started in the background (:meth:`start_khat`)
    _khat_job: KhatJob | None = None
    #: ``(groups [H], sums [n_groups, R, G])``: ``E`` summed per group of draws, when
    #: :meth:`from_logp` was given ``groups``
    group_sums: tuple[np.ndarray, np.ndarray] | None = None

    def __init__(self, logr: np.ndarray) -> None:
        logr = np.asarray(logr, dtype=np.float64)
        self._logr = logr
        self._logp = self._g0 = None
        mx = np.max(logr, axis=1)  # [R, G]
        self.finite = np.isfinite(mx)
        self.mx = np.where(self.finite, mx, 0.0)
        # E is stored draws-major ([H, R, G] memory, an [R, H, G] view): the bootstrap's
        # [H, R·G] matrix product needs no transposed copy; nan / +inf (overflow) become 0
        R, H, G = logr.shape
        E = np.empty((H, R, G)).transpose(1, 0, 2)
        with np.errstate(invalid="ignore", over="ignore"):
            np.subtract(logr, self.mx[:, None, :], out=E)
            np.exp(E, out=E)
        np.copyto(E, 0.0, where=~(E < np.inf))
        self.E = E
        self.s1 = self.E.sum(axis=1)
        self.s2 = np.einsum("rhg,rhg->rg", self.E, self.E)
        # draws kept for each record (a dropped draw is -inf for every candidate)
        self.n_ok = np.sum(np.any(np.isfinite(logr), axis=2), axis=1)

    @classmethod
    def from_logp(
        cls, logp_hrg: np.ndarray, g0: np.ndarray, *, tail: int = 0, L: np.ndarray | None = None,
        out: np.ndarray | None = None, groups: np.ndarray | None = None,
    ) -> RatioStats:
        """Statistics of ``logr`` from ``logp[H, R, G]`` in one compiled pass."""
        from bayes_risk.attribute._kernels import ratio_pass, ratio_sums

        # one array layout: the kernel is compiled once, not for C, F and strided views
        logp_hrg = np.ascontiguousarray(logp_hrg, dtype=np.float64)
        g0 = np.ascontiguousarray(g0, dtype=np.int64)
        H, R, G = logp_hrg.shape
        if out is None or out.shape != (H, R, G):
            out = np.empty((H, R, G))
        if L is not None:
            L = np.asarray(L, dtype=np.float64)
            Lmax = np.max(L, axis=0)
            W = np.ascontiguousarray(np.exp(L - Lmax[None, :]))
        else:
            W = np.zeros((H, 0))
        if groups is not None and np.size(groups) == H:
            groups = np.ascontiguousarray(groups, dtype=np.int64)
            n_groups = int(groups.max()) + 1 if H else 0
        else:
            groups, n_groups = np.zeros(0, dtype=np.int64), 0
        mx, n_ok, top, bad = ratio_pass(logp_hrg, g0, out, int(tail))
        threaded_ufunc(np.exp, out, out=out)
        s1, s2, num, sq, mxw, gsum = ratio_sums(out, W, groups, n_groups)
        self = cls.__new__(cls)
        self._logr = None
        self._logp = logp_hrg
        self._g0 = g0
        self.finite = np.isfinite(mx)
        self.mx = np.where(self.finite, mx, 0.0)
        self.E = out.transpose(1, 0, 2)
        self.s1 = s1
        self.s2 = s2
        self.n_ok = n_ok
        self.n_dropped = H - n_ok
        if tail:
            self.tails = (top, bad)
        if L is not None:
            self.is_sums = (Lmax, num, sq, mxw)
        if n_groups:
            self.group_sums = (groups, gsum)
        return self

    def start_khat(self) -> None:
        """Start the k̂ fits of ``tails`` on background threads (:meth:`tail_khat` collects)."""
        if self.tails is not None and self._khat_job is None:
            self._khat_job = KhatJob(*self.tails).start()

    def tail_khat(self) -> np.ndarray:
        """Pareto k̂ ``[R, G]`` from ``tails`` (the background fits when started)."""
        job = self._khat_job if self._khat_job is not None else KhatJob(*self.tails).start()
        self._khat_job = None
        return job.result().reshape(self.mx.shape)

    @property
    def logr(self) -> np.ndarray:
        """``[R, H, G]`` log ratios (formed on first access when built by :meth:`from_logp`)."""
        if self._logr is None:
            self._logr = log_ratios(np.moveaxis(self._logp, 0, 1), self._g0)[0]
        return self._logr

    def log_mean(self) -> np.ndarray:
        """``log mean_h r_h`` ``[R, G]`` (``-inf`` for candidates impossible under every draw)."""
        with np.errstate(divide="ignore"):
            out = np.log(self.s1) + self.mx - np.log(np.maximum(self.n_ok, 1))[:, None]
        return np.where(self.finite, out, -np.inf)

    def ess(self) -> np.ndarray:
        """Kish ESS of the normalised ratios ``[R, G]`` (``nan`` where all ratios are 0)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            out = self.s1 * self.s1 / self.s2
        return np.where(self.finite, out, np.nan)


#: largest spread of log p(Z_(l) | Θ_h) over draws for which the product-space fast path of the
#: IS estimator is exact to double precision (exp underflows below about −745)
_FAST_L_RANGE = 600.0


def fast_path_exact(L: np.ndarray) -> bool:
    """Whether ``L = log p(Z_(l) | Θ_h)`` ``[H, m]`` allows the IS estimator's exact fast path."""
    return bool(np.all(np.ptp(L, axis=0) <= _FAST_L_RANGE))


def _is_fast(st: RatioStats, L: np.ndarray) -> dict[str, np.ndarray]:
    """Hu 2019 §3.2.5 steps 1–5 without per-dataset exponentiation (see :func:`is_estimate`)."""
    R, H, G = st.E.shape
    m = L.shape[1]
    finite = st.finite & (st.s1 > 0)
    logphat = np.empty((R, m, G))
    ess_w = np.empty((R, m, G))
    max_w = np.empty((R, m, G))
    if st.is_sums is not None and np.array_equal(st.is_sums[0], np.max(L, axis=0)):
        Lmax, num_a, sq_a, mxw_a = st.is_sums
        with np.errstate(divide="ignore", invalid="ignore"):
            logphat[:] = np.log(num_a) - np.log(st.s1)[:, None, :] + Lmax[None, :, None]
            ess_w[:] = num_a * num_a / sq_a
            max_w[:] = mxw_a / num_a
        m = 0  # done
    else:
        E2 = st.E * st.E
    with np.errstate(divide="ignore", invalid="ignore"):
        for li in range(m):
            Lm = np.max(L[:, li])
            w = np.exp(L[:, li] - Lm)  # [H]
            num = np.einsum("rhg,h->rg", st.E, w)
            sq = np.einsum("rhg,h->rg", E2, w * w)
            mxw = np.max(st.E * w[None, :, None], axis=1)
            logphat[:, li, :] = np.log(num) - np.log(st.s1) + Lm
            ess_w[:, li, :] = num * num / sq
            max_w[:, li, :] = mxw / num
    bad = ~finite[:, None, :]
    logphat = np.where(bad, -np.inf, logphat)
    ess_w = np.where(bad, np.nan, ess_w)
    max_w = np.where(bad, np.nan, max_w)
    loglik = np.where(finite, logphat.sum(axis=1), -np.inf)
    return {
        "loglik": loglik,
        "logphat": logphat,
        "ess_q": st.ess(),
        "ess_omega": ess_w,
        "max_omega": max_w,
    }


def is_estimate(
    logr: np.ndarray | None, L: np.ndarray, *, delta: np.ndarray | None = None,
    compat_r: bool = False, n_sum: int | None = None, stats: RatioStats | None = None,
) -> dict[str, np.ndarray]:
    """The IS estimator of Hu 2019 §3.2.5 (steps 1–5) of ``logr (R, H, G)`` (or ``stats``) and
    ``L (H, m)``; ``delta (R, H, m, G)``: class O own-record term; ``compat_r``, ``n_sum``: the R
    package's sums. Returns ``loglik``, ``logphat``, ``ess_q``, ``ess_omega`` and ``max_omega``.
    """
    L = np.asarray(L, dtype=np.float64)
    if delta is None and not compat_r and fast_path_exact(L):
        return _is_fast(stats if stats is not None else RatioStats(logr), L)
    logr = np.asarray(stats.logr if logr is None else logr, dtype=np.float64)
    lse_r = logsumexp(logr, axis=1)  # [R, G]
    finite = np.isfinite(lse_r)
    with np.errstate(invalid="ignore"):
        logq = logr - np.where(finite, lse_r, 0.0)[:, None, :]
    logq = np.where(finite[:, None, :], logq, -np.inf)
    ess_q = kish_ess(np.moveaxis(logq, 1, -1))
    if compat_r and n_sum is not None:
        logq = logq[:, :n_sum]
        L = L[:n_sum]
    R, H, G = logq.shape
    m = L.shape[1]
    logphat = np.empty((R, m, G))
    ess_w = np.empty((R, m, G))
    max_w = np.empty((R, m, G))
    for li in range(m):
        A = L[None, :, li, None] + logq  # [R, H, G]
        if delta is not None:
            d = delta[:, : A.shape[1], li, :]
            A = A + d
        lp = logsumexp(A, axis=1)
        logphat[:, li, :] = lp
        with np.errstate(invalid="ignore"):
            om = np.exp(A - np.where(np.isfinite(lp), lp, 0.0)[:, None, :])
        om = np.where(np.isfinite(lp)[:, None, :], om, np.nan)
        s2 = np.sum(om * om, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ess_w[:, li, :] = 1.0 / s2
        max_w[:, li, :] = np.max(om, axis=1)
    loglik = logphat.sum(axis=1)
    loglik = np.where(finite, loglik, -np.inf)
    return {
        "loglik": loglik,
        "logphat": logphat,
        "ess_q": np.where(finite, ess_q, np.nan),
        "ess_omega": ess_w,
        "max_omega": max_w,
    }


def stabilised_estimate(
    logr0: np.ndarray | RatioStats, logr_aug: Sequence[np.ndarray | RatioStats], *,
    psis: bool = False, khat: str = "all",
) -> dict[str, np.ndarray]:
    """The stabilised estimator ``Σ_l [log Ê_{y,Z_(l)}[r] − log Ê_y[r]]`` of ``logr0`` and the
    ``m`` ``logr_aug``, PSIS-smoothed with ``psis``, k̂ under the posteriors ``khat`` names.

    Returns ``loglik``, ``log_mean_r``, ``log_mean_aug``, ``khat0``, ``khat_aug``, ``ess_r0``,
    ``ess_aug``.
    """
    # khat is EstimatorSpec.khat, checked when the spec was built

    def mean_khat_ess(lr: np.ndarray | RatioStats, want_k: bool):
        st = lr if isinstance(lr, RatioStats) else RatioStats(lr)
        if psis:
            lm, k = psis_log_mean(np.moveaxis(st.logr, 1, -1))  # [R, G, H]
            return lm, k, st.ess()
        if not want_k:
            k = np.full(st.mx.shape, np.nan)
        elif st.tails is not None and st.tails[0].shape[1] == tail_size(st.E.shape[1]) + 1:
            k = st.tail_khat()
        else:
            k = pareto_khat(np.moveaxis(st.logr, 1, -1))
        return st.log_mean(), k, st.ess()

    lm0, k0, ess0 = mean_khat_ess(logr0, khat != "none")
    lms, ks, esss = [], [], []
    for lr in logr_aug:
        a, k, e = mean_khat_ess(lr, khat == "all")
        lms.append(a)
        ks.append(k)
        esss.append(e)
    lm_aug = np.stack(lms, axis=1)
    with np.errstate(invalid="ignore"):
        loglik = lm_aug.sum(axis=1) - len(logr_aug) * lm0
    # a candidate impossible under every draw has -inf in both terms: it is impossible
    loglik = np.where(np.isneginf(lm0) | np.any(np.isneginf(lm_aug), axis=1), -np.inf, loglik)
    return {
        "loglik": loglik,
        "log_mean_r": lm0,
        "log_mean_aug": lm_aug,
        "khat0": k0,
        "khat_aug": np.stack(ks, axis=1),
        "ess_r0": ess0,
        "ess_aug": np.stack(esss, axis=1),
    }


def truncated_log_mean(st: RatioStats) -> np.ndarray:
    """``log mean_h min(r_h, u)`` minus two standard errors, ``u`` the cut of the Pareto tail."""
    R, H, G = st.E.shape
    m = tail_size(H)
    if H < m + 1:
        return np.full((R, G), -np.inf)
    if st.tails is not None and st.tails[0].shape[1] == m + 1:
        top = st.tails[0].reshape(R, G, m + 1)
    else:
        lw = np.moveaxis(st.logr, 1, -1) - st.mx[:, :, None]  # [R, G, H]
        top = np.sort(np.partition(lw, H - m - 1, axis=-1)[..., H - m - 1 :], axis=-1)
    n = np.maximum(st.n_ok, 1)[:, None].astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        cut = np.exp(top[..., 0])
        et = np.exp(top[..., 1:])
        s1 = np.maximum(st.s1 - et.sum(axis=-1), 0.0) + m * cut
        s2 = np.maximum(st.s2 - (et * et).sum(axis=-1), 0.0) + m * cut * cut
        mean = s1 / n
        # minus two standard errors: the bound must not rest on Monte Carlo luck either
        se = np.sqrt(np.maximum(s2 / n - mean * mean, 0.0) / n)
        out = np.log(np.maximum(mean - 2.0 * se, 0.0)) + st.mx
    return np.where(st.finite & np.isfinite(out), out, -np.inf)


def stabilised_bounds(
    est: Mapping[str, np.ndarray], lo0: np.ndarray, lo_aug: np.ndarray, bad0: np.ndarray,
    bad_aug: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Interval ``(lo, hi)`` of the stabilised log-likelihood where means have a high k̂."""
    ll = est["loglik"]
    b = est["log_mean_r"]
    a = est["log_mean_aug"]
    m = a.shape[1]
    with np.errstate(invalid="ignore"):
        a_lo = np.where(bad_aug, lo_aug, a).sum(axis=1)
        a_hi = np.where(bad_aug.any(axis=1), np.inf, a.sum(axis=1))
        lo = np.where(bad0, -np.inf, a_lo - m * b)
        hi = np.where(bad0, a_hi - m * lo0, a_hi - m * b)
    # a candidate impossible under every draw stays impossible; unflagged candidates keep the
    # estimate exactly (no rounding from the re-summation)
    flagged = bad0 | bad_aug.any(axis=1)
    lo = np.where(flagged, np.minimum(lo, ll), ll)
    hi = np.where(flagged, np.maximum(np.where(np.isnan(hi), np.inf, hi), ll), ll)
    impossible = np.isneginf(ll)
    return np.where(impossible, -np.inf, lo), np.where(impossible, -np.inf, hi)


# draw bootstrap
def bootstrap_counts(rng: np.random.Generator, n_boot: int, n_draws: int) -> np.ndarray:
    """Multinomial resampling counts ``[B, H]`` (resampling draws with replacement)."""
    return rng.multinomial(n_draws, np.full(n_draws, 1.0 / n_draws), size=n_boot).astype(np.float64)


#: OpenBLAS computes an incomplete last block of columns in another order than full blocks
#: (other last bits): products are formed over whole blocks of this many columns
_COL_BLOCK = 16


def _product_by_blocks(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` in whole blocks of ``_COL_BLOCK`` columns on one-threaded BLAS (reproducible)."""
    from threadpoolctl import threadpool_limits

    n = b.shape[1]
    out = np.empty((a.shape[0], n))
    blocks = -(-n // _COL_BLOCK)
    width = -(-blocks // n_threads()) * _COL_BLOCK  # one slab per thread, whole blocks

    def slab(lo: int) -> None:
        hi = min(n, lo + width)
        main = hi - (hi - lo) % _COL_BLOCK
        if main > lo:
            out[:, lo:main] = a @ b[:, lo:main]
        if main < hi:
            tail = np.zeros((b.shape[0], _COL_BLOCK))
            tail[:, : hi - main] = b[:, main:hi]
            out[:, main:hi] = (a @ tail)[:, : hi - main]

    with threadpool_limits(limits=1, user_api="blas"):
        threaded_map(slab, list(range(0, n, width)) if n else [])
    return out


def _log_weighted_sum(
    counts: np.ndarray, logx: np.ndarray | RatioStats, w: np.ndarray | None = None
) -> np.ndarray:
    """``log Σ_h c_bh w_h exp(logx[r, h, g])`` → ``[R, B, G]`` via one matrix product."""
    st = logx if isinstance(logx, RatioStats) else RatioStats(logx)
    cw = counts if w is None else counts * w[None, :]
    R, H, G = st.E.shape
    # [B, H] @ [H, R*G] in one BLAS call
    s = _product_by_blocks(cw, np.moveaxis(st.E, 1, 0).reshape(H, R * G)).reshape(
        cw.shape[0], R, G
    )
    with np.errstate(divide="ignore"):
        np.log(s, out=s)
    return np.moveaxis(s, 0, 1) + st.mx[:, None, :]


def bootstrap_stabilised(
    logr0: np.ndarray | RatioStats, logr_aug: Sequence[np.ndarray | RatioStats],
    counts0: np.ndarray, counts_aug: Sequence[np.ndarray],
) -> np.ndarray:
    """Bootstrap replicates ``[R, B, G]`` of the stabilised log-likelihood (plain means)."""
    sts = [x if isinstance(x, RatioStats) else RatioStats(x) for x in (logr0, *logr_aug)]
    counts = [counts0, *counts_aug]
    sums = []
    for c, st in zip(counts, sts, strict=True):
        R, H, G = st.E.shape
        sums.append(
            _product_by_blocks(c, np.moveaxis(st.E, 1, 0).reshape(H, R * G)).reshape(-1, R, G)
        )
    log_h = [np.log(c.sum(axis=1)) for c in counts]
    m = len(sts) - 1
    B, R, G = sums[0].shape
    out = np.empty((B, R, G))

    def slab(lo_hi: tuple[int, int]) -> None:
        lo, hi = lo_hi
        with np.errstate(divide="ignore", invalid="ignore"):
            # log Ê* under p(Θ | y): (log s + max) − log h, as _log_weighted_sum's terms
            a0 = np.log(sums[0][lo:hi])
            a0 += sts[0].mx
            a0 -= log_h[0][lo:hi, None, None]
            tot = out[lo:hi]
            tot[:] = 0.0
            for li in range(1, m + 1):
                u = np.log(sums[li][lo:hi])
                u += sts[li].mx
                tot += u
                tot -= log_h[li][lo:hi, None, None]
            a0 *= m
            tot -= a0
            tot[np.isnan(tot)] = -np.inf

    # slabs of about 1 MB (in cache), at least one per thread
    step = max(1, min(-(-B // 2), (1 << 17) // max(1, R * G)))
    threaded_map(slab, [(lo, min(B, lo + step)) for lo in range(0, B, step)])
    return np.moveaxis(out, 0, 1)


def bootstrap_is(
    logr: np.ndarray | RatioStats, L: np.ndarray, counts: np.ndarray, *,
    delta: np.ndarray | None = None,
) -> np.ndarray:
    """Bootstrap replicates ``[R, B, G]`` of the Hu 2019 §3.2.5 log-likelihood."""
    st = logr if isinstance(logr, RatioStats) else RatioStats(logr)
    den = _log_weighted_sum(counts, st)  # [R, B, G]
    tot = np.zeros_like(den)
    if delta is None and fast_path_exact(L):
        for li in range(L.shape[1]):
            Lm = np.max(L[:, li])
            tot = tot + _log_weighted_sum(counts, st, np.exp(L[:, li] - Lm)) + Lm - den
        return np.where(np.isnan(tot), -np.inf, tot)
    logr = st.logr
    for li in range(L.shape[1]):
        a = logr + L[None, :, li, None]
        if delta is not None:
            a = a + delta[:, :, li, :]
        tot = tot + _log_weighted_sum(counts, a) - den
    return np.where(np.isnan(tot), -np.inf, tot)


def mean_log_ratio(logr: np.ndarray | RatioStats) -> np.ndarray:
    """``log Ê_y[r]`` per record and candidate ``[R, G]`` (used by the model-predictive prior)."""
    st = logr if isinstance(logr, RatioStats) else RatioStats(logr)
    return st.log_mean()
