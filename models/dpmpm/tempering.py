"""Parallel tempering of the DPMPM Gibbs sampler (Geyer 1991; Syed et al. 2022) and the
stepping-stone marginal likelihood (Xie et al. 2011): :doc:`/methods/models` (DPMPM regimes).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
from numba import njit

__all__ = ["LADDER_POWER", "EVIDENCE_BATCHES", "ladder", "impute",
           "TemperedLadder", "stepping_stone", "record_evidence"]

#: the ladder's spacing: β_t = (1 − t / (T − 1))^(1 / LADDER_POWER) (Xie et al. 2011: 0.3)
LADDER_POWER = 0.3
#: batches per chain for the Monte Carlo error of the stepping-stone estimate
EVIDENCE_BATCHES = 20
#: sweeps of the first round of ladder tuning (rounds double until half the warm-up)
TUNE_FIRST = 25


def ladder(temperatures: int) -> np.ndarray:
    """The inverse temperatures ``β_0 = 1 > β_1 > … > β_{T−1} = 0`` of ``T`` replicas."""
    T = int(temperatures)
    if T < 2:
        return np.ones(1)
    return (1.0 - np.arange(T) / (T - 1)) ** (1.0 / LADDER_POWER)


@njit(cache=True)
def impute(y, z, phi, offsets, miss_i, miss_j, u):  # pragma: no cover - numba
    """Each missing entry ``y[miss_i[m], miss_j[m]]`` drawn from ``φ_{z j}`` (``phi[L, K]``)
    with the uniform ``u[m]`` (inverse CDF over the column's levels)."""
    p = y.shape[1]
    L = phi.shape[0]
    for m in range(miss_i.shape[0]):
        r = miss_i[m]
        j = miss_j[m]
        base = offsets[j]
        d = (offsets[j + 1] if j + 1 < p else L) - base
        k = z[r]
        acc = 0.0
        c_new = d - 1
        for c in range(d):
            acc += phi[base + c, k]
            if acc >= u[m]:
                c_new = c
                break
        y[r, j] = c_new


class TemperedLadder:
    """A chain of ``T >= 2`` tempered replicas of the sweep ``step`` (copied per replica) with
    swaps, with the step interface of ``DPMPMGibbs``. Statistics: the sweep's at ``β = 1``,
    ``tempered_loglik`` ``[T]``, ``swap_accepted``, ``swap_proposed`` ``[T − 1]``, ``beta`` ``[T]``.
    """

    name = "dpmpm_tempered_gibbs"

    def __init__(self, step: Any, temperatures: int) -> None:
        self.template = step
        self.vars = step.vars
        self.betas = ladder(temperatures)
        self.thin = int(step.thin)
        T = self.betas.size
        self.stats_dtypes_shapes = {**step.stats_dtypes_shapes,
                                    "tempered_loglik": (np.float64, [T]),
                                    "swap_accepted": (np.int64, [T - 1]),
                                    "swap_proposed": (np.int64, [T - 1]),
                                    "beta": (np.float64, [T])}
        self.chain = 0
        self.replicas: list[Any] = []
        self.points: list[dict[str, Any]] = []
        self.at: list[int] = []  # at[t]: the replica at temperature t
        self._sweeps = 0
        self._warmup_left = 0

    def expected_sweep_seconds(self) -> float | None:
        """Seconds of one sweep of the ladder (every replica once; a hot replica makes no
        merge–split moves but is counted as a full sweep)."""
        one = self.template.expected_sweep_seconds()
        return None if one is None else one * self.betas.size

    def set_chain(self, chain: int) -> None:
        self.chain = int(chain)

    def setup_chain(self, rng: np.random.Generator, tune: int, draws: int) -> None:
        """Fresh replicas for a chain, all drawing from the chain's generator ``rng``."""
        self.rng = rng
        self.replicas = []
        for beta in self.betas:
            r = copy.copy(self.template)
            r.thin, r.beta, r.ladder = 1, float(beta), True
            r.set_chain(self.chain)
            r.setup_chain(rng, tune, draws)
            self.replicas.append(r)
        self.points = []
        self.at = list(range(self.betas.size))
        self._sweeps = 0
        self._warmup_left = int(tune)
        # the ladder is tuned in rounds of the warm-up's first half (TUNE_FIRST, doubling)
        self.chain_betas = ladder(self.betas.size)
        self._round_end = TUNE_FIRST if tune >= 2 * TUNE_FIRST else 0
        self._tune_until = int(tune) // 2
        self._ell: list[np.ndarray] = []  # ℓ by temperature in the tuning round
        self._accepts = np.zeros(self.betas.size - 1)
        self._proposals = np.zeros(self.betas.size - 1)

    def stop_tuning(self) -> None:
        self.tune = False
        for r in self.replicas:
            r.stop_tuning()

    def step(self, point: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """One draw: one sweep of the ladder during the warm-up, ``thin`` after it (the swap
        counts are those of all its sweeps)."""
        T = self.betas.size
        self._acc, self._prop = np.zeros(T - 1, np.int64), np.zeros(T - 1, np.int64)
        for _ in range(self.thin - 1 if self._warmup_left <= 0 else 0):
            self._sweep(point)
        return self._sweep(point)

    def _retune(self) -> None:
        """Space the ladder so that every pair is rejected about equally often (Syed et al.
        2022, Algorithm 4): the cumulative rejection rate ``Λ(β)`` of the last round,
        interpolated linearly, is cut into equal parts."""
        rej = 1.0 - self._accepts / np.maximum(self._proposals, 1.0)
        rej = np.where(self._proposals > 0, rej, 1.0)
        # a pair rejected (nearly) always says only that its barrier is >= 1: the local
        # barrier λ(β) = E|ℓ − ℓ'| / 2 of each temperature's own draws (Syed et al. 2022,
        # §4), integrated over the pair's interval, measures it beyond that
        ell = np.asarray(self._ell)  # [sweeps, T] by temperature
        lam_t = np.array([_half_mean_abs_diff(ell[:, t]) for t in range(ell.shape[1])])
        gap = -np.diff(self.chain_betas)  # β_t − β_{t+1} > 0
        rej = np.maximum(rej, np.where(rej > 0.9, 0.5 * (lam_t[:-1] + lam_t[1:]) * gap, 0.0))
        self._accepts[:] = 0.0
        self._proposals[:] = 0.0
        self._ell = []
        b = self.chain_betas[::-1]  # increasing, 0 .. 1
        lam = np.concatenate([[0.0], np.cumsum(np.maximum(rej[::-1], 1e-3))])
        target = np.linspace(0.0, lam[-1], b.size)
        new = np.interp(target, lam, b)[::-1]
        new[0], new[-1] = 1.0, 0.0
        self.chain_betas = new
        for t, i in enumerate(self.at):
            self.replicas[i].beta = float(new[t])

    def _sweep(self, point: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        if not self.points:
            self.points = [dict(point) for _ in self.replicas]
        stats = []
        for i, r in enumerate(self.replicas):
            self.points[i], (st,) = r._sweep(self.points[i])
            stats.append(st)
        T = self.betas.size
        u = self.rng.random(T - 1)
        betas = self.chain_betas
        for t in range(self._sweeps % 2, T - 1, 2):
            a, b = self.at[t], self.at[t + 1]
            la, lb = self.replicas[a].complete_ll, self.replicas[b].complete_ll
            log_r = (betas[t] - betas[t + 1]) * (lb - la)
            ok = bool(math.log(1.0 - u[t]) < log_r)  # 1 - u in (0, 1]
            self._acc[t] += ok
            self._prop[t] += 1
            self._accepts[t] += ok
            self._proposals[t] += 1
            if ok:
                self.at[t], self.at[t + 1] = b, a
                self.replicas[a].beta, self.replicas[b].beta = (float(betas[t + 1]),
                                                                 float(betas[t]))
        self._sweeps += 1
        self._warmup_left -= 1
        if self._round_end:
            self._ell.append(np.array([self.replicas[i].complete_ll for i in self.at]))
        if self._round_end and self._sweeps == self._round_end:
            self._retune()
            nxt = 2 * self._round_end
            self._round_end = nxt if nxt <= self._tune_until else 0
        cold = self.at[0]
        st = dict(stats[cold])
        if not np.isfinite(st["loglik"]):  # a state made at β < 1
            st["loglik"] = self.replicas[cold].observed_loglik(self.points[cold])
        st["tempered_loglik"] = np.array([self.replicas[i].complete_ll for i in self.at])
        st["swap_accepted"], st["swap_proposed"] = self._acc.copy(), self._prop.copy()
        st["beta"] = self.chain_betas.copy()
        return self.points[cold], [st]


def _half_mean_abs_diff(x: np.ndarray) -> float:
    """``E|X − X'| / 2`` of iid copies, from a sample (sorted-order formula, O(n log n))."""
    x = np.sort(np.asarray(x, dtype=np.float64))
    n = x.size
    if n < 2:
        return 0.0
    i = np.arange(1, n + 1)
    return float(np.sum((2 * i - n - 1) * x) / (n * (n - 1)))


def stepping_stone(ell: np.ndarray, betas: np.ndarray,
                   batches: int = EVIDENCE_BATCHES) -> tuple[float, float]:
    """Stepping-stone log evidence and its Monte Carlo standard error from one chain's
    ``ell [draw, T]`` (``ℓ`` at each temperature of each kept draw) and the ladder ``betas``.

    Standard error by batch means of the linearised estimate (the rungs are correlated).
    """
    ell = np.asarray(ell, dtype=np.float64)
    D, T = ell.shape
    k = max(2, min(int(batches), D // 5))
    total = 0.0
    dev = np.zeros(k)
    for t in range(T - 1):
        x = (betas[t] - betas[t + 1]) * ell[:, t + 1]
        mx = float(np.max(x))
        w = np.exp(x - mx)
        mean = float(w.mean())
        total += mx + math.log(mean)
        dev += np.array([p.mean() for p in np.array_split(w, k)]) / mean
    return total, float(np.std(dev, ddof=1) / math.sqrt(k))


def record_evidence(dt: Any, temperatures: int) -> None:
    """Record each chain's stepping-stone log evidence, its standard error, ladder and swap
    rates in the posterior group's attributes."""
    from bayes_risk.models._bayesian.regimes import EVIDENCE_ATTR, EVIDENCE_SE_ATTR

    ell = np.asarray(dt["sample_stats"]["tempered_loglik"].values, dtype=np.float64)
    betas = np.asarray(dt["sample_stats"]["beta"].values, dtype=np.float64)[:, -1]  # [C, T]
    est = [stepping_stone(ell[c], betas[c]) for c in range(ell.shape[0])]
    ss = dt["sample_stats"]
    acc = np.asarray(ss["swap_accepted"].values).sum(axis=1)  # [C, T - 1]
    prop = np.asarray(ss["swap_proposed"].values).sum(axis=1)
    attrs = dt["posterior"].attrs
    attrs[EVIDENCE_ATTR] = [float(e[0]) for e in est]
    attrs[EVIDENCE_SE_ATTR] = [float(e[1]) for e in est]
    attrs["temperatures"] = int(temperatures)
    attrs["betas"] = [[float(b) for b in bc] for bc in betas]
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(prop > 0, acc / np.maximum(prop, 1), np.nan)
    attrs["swap_rate"] = [[float(x) for x in r] for r in rate]
