"""Monte Carlo error (delete-a-group jackknife; Shao & Wu 1989) and replicate spread of
identification-risk measures; see :doc:`/user_guide/posterior_replicates`.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bayes_risk._numeric import TIE_ATOL, TIE_RTOL
from bayes_risk.exceptions import BayesRiskWarning
from bayes_risk.identification import engine as _engine
from bayes_risk.identification.engine import declare
from bayes_risk.identification.summary import MEASURES, file_measures, record_measures

__all__ = [
    "REPLICATE_QUANTILES",
    "PooledSums",
    "candidate_pairs",
    "group_candidates",
    "fallback_cells",
    "row_argmax",
    "top_sets",
    "jackknife_se",
    "replicate_summary",
]

#: quantiles of the per-replicate measures reported as ``replicate_quantiles``
REPLICATE_QUANTILES = (0.025, 0.25, 0.5, 0.75, 0.975)
#: pairs from which merges of pair sums run on the compiled kernels (unless ``USE_NUMBA`` is set)
PAIR_KERNELS_MIN = 200_000


def use_pair_kernels(size: int) -> bool:
    """Whether a merge of ``size`` pairs runs on the compiled kernels (``_pair_kernels``)."""
    return _engine.numba_for(size, PAIR_KERNELS_MIN)


#: pairs from which a jackknife group's pair sums are kept in its spill folder between uses
SPILL_MIN_PAIRS = 1_000_000


class PooledSums:
    """Running sums ``Σ_r p_r(k)`` over blocks of replicates: the direct pairs (sorted keys
    ``target · n + record``, in the fallback set or not) and each target's fallback value
    (``spill``: a folder for the pair arrays from ``SPILL_MIN_PAIRS`` on)."""

    def __init__(self, n_targets: int, n: int, spill: str | None = None) -> None:
        self.N, self.n = int(n_targets), int(n)
        self.spill, self._file = spill, None
        self.keys = np.zeros(0, dtype=np.int64)
        self.vals = np.zeros(0)
        self.in_u = np.zeros(0, dtype=bool)
        self.fb = np.zeros(self.N)
        self.p_out = np.zeros(self.N)
        self.p_un = np.zeros(self.N)
        self.ever = np.zeros(self.N, dtype=bool)
        self.R = 0

    def add(self, batch: Any) -> None:
        """Add a batch's sums (``keys``, ``vals``, ``in_u``, ``fb``, ``p_out``, ``p_un``,
        ``ever``, ``R``; stored pairs include their fallback mass, as here)."""
        if self._file is not None:
            self.keys, self.vals, self.in_u = self._pairs("keys", "vals", "in_u")
            for k in self._NAMES:
                os.remove(f"{self._file}-{k}.npy")
            self._file = None
        self._add(batch)
        for k in ("fb", "p_out", "p_un"):
            setattr(self, k, getattr(self, k) + getattr(batch, k))
        self.ever |= batch.ever
        self.R += int(batch.R)
        if self.spill is not None and self.keys.size >= SPILL_MIN_PAIRS:
            self._spill_out()

    def _spill_out(self) -> None:
        """Move the pair arrays to the spill folder; kept in memory if it cannot be written."""
        file = os.path.join(self.spill, f"sums-{id(self)}")
        try:
            for k in self._NAMES:
                np.save(f"{file}-{k}.npy", getattr(self, k))
        except OSError as err:  # full or unwritable disk: same numbers, more memory
            for k in self._NAMES:
                with contextlib.suppress(OSError):
                    os.remove(f"{file}-{k}.npy")
            warnings.warn(
                f"SPILL_UNAVAILABLE: the jackknife group sums could not be written to "
                f"{self.spill!r} ({err}); they are kept in memory (same numbers, more memory). "
                "Set TMPDIR to a folder with free space to bound the memory.",
                BayesRiskWarning, stacklevel=2)
            self.spill = None
            return
        self._file = file
        self.keys, self.vals, self.in_u = (np.zeros(0, dtype=np.int64), np.zeros(0),
                                           np.zeros(0, dtype=bool))

    _NAMES = ("keys", "vals", "in_u")

    def _pairs(self, *names: str) -> list[np.ndarray]:
        """The pair arrays ``names`` (read back from the spill folder if they are there)."""
        if self._file is None:
            return [getattr(self, k) for k in names]
        return [np.load(f"{self._file}-{k}.npy") for k in names]

    def _add(self, batch: Any) -> None:
        ek, ev, efb = batch.keys, batch.vals, batch.fb
        A = self.keys.size
        if not A and not self.fb.any():  # a new group: the batch's arrays, shared
            self.keys, self.vals, self.in_u = ek, ev, batch.in_u
            return
        if use_pair_kernels(A + ek.size):
            from bayes_risk.identification import _pair_kernels

            self.keys, self.vals, self.in_u = _pair_kernels.add_blocks(
                self.keys, self.vals, self.in_u, self.fb, ek, ev, batch.in_u, efb, self.n)
            return
        # where each batch pair goes among the merged pairs (no re-sort: both sides are sorted)
        pos = np.searchsorted(self.keys, ek)
        both = pos < A
        both[both] = self.keys[pos[both]] == ek[both]
        new = ~both
        at = pos + np.cumsum(new) - new
        del pos
        U = A + int(new.sum())
        keys, vals, in_u = np.empty(U, dtype=np.int64), np.empty(U), np.empty(U, dtype=bool)
        stored = np.ones(U, dtype=bool)
        stored[at[new]] = False
        keys[stored], vals[stored], in_u[stored] = self.keys, self.vals, self.in_u
        keys[at[new]], vals[at[new]] = ek[new], ev[new]
        vals[at[both]] += ev[both]
        in_u[at] = batch.in_u
        # fallback mass of records not stored on one side (the set is the same in every block)
        in_batch = np.zeros(U, dtype=bool)
        in_batch[at] = True
        fix = np.flatnonzero(~in_batch & in_u)
        vals[fix] += efb[keys[fix] // self.n]
        fix = at[new & batch.in_u]
        vals[fix] += self.fb[keys[fix] // self.n]
        self.keys, self.vals, self.in_u = keys, vals, in_u

    def on(self, keys: np.ndarray, in_u: np.ndarray) -> np.ndarray:
        """These sums at the pairs ``keys`` (sorted, unique; stored or not)."""
        sk, sv = self._pairs("keys", "vals")
        if use_pair_kernels(sk.size + keys.size):
            from bayes_risk.identification import _pair_kernels

            return _pair_kernels.sums_at(sk, sv, self.fb, keys, in_u, self.n)
        out = np.where(in_u, self.fb[keys // self.n], 0.0)
        if sk.size and keys.size:
            pos = np.minimum(np.searchsorted(sk, keys), sk.size - 1)
            hit = sk[pos] == keys
            out[hit] = sv[pos[hit]]
        return out


def top_sets(
    keys: np.ndarray,
    vals: np.ndarray,
    in_u: np.ndarray,
    fb: np.ndarray,
    u_size: np.ndarray,
    p_out: np.ndarray,
    *,
    n: int,
    rec: np.ndarray,
    in_sample: np.ndarray,
    strategy: Any,
    contains: Callable | None,
    query: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Declared top sets from pooled probabilities (as the engine's pooled aggregation), per
    target. The rows of ``keys`` (``row · n + record``), ``fb`` (the ``π`` of the other records
    of each row's fallback set), ``u_size`` and ``p_out`` are the targets', or with ``query``
    (each target's row) the queries' that targets share; ``rec``, ``in_sample`` and
    ``contains`` (target rows, records) are the targets'."""
    Q = p_out.size
    rows = keys // n
    cells = fallback_cells(fb, u_size, np.bincount(rows[in_u], minlength=Q))
    pm, tied, c, cell_tied = _engine.pooled_top(rows, vals, np.bincount(rows, minlength=Q), fb,
                                                cells["fallback_extra"])
    dec = declare(pm, p_out, strategy)
    if query is not None:
        cells = {k: v[query] for k, v in cells.items()}
        dec, c, pm, cell_tied = dec[query], c[query], pm[query], cell_tied[query]
    # each target's own record: its pair in its row, stored (and tied) or not
    own_key = (np.arange(Q) if query is None else query) * n + rec
    pos = np.minimum(np.searchsorted(keys, own_key), max(keys.size - 1, 0))
    own_stored = (rec >= 0) & (keys[pos] == own_key) if keys.size else np.zeros(rec.size, bool)
    T = own_stored & tied[pos] if keys.size else own_stored
    chk = np.flatnonzero(cell_tied & ~own_stored & (rec >= 0))
    if chk.size and contains is not None:
        T[chk] |= contains(chk, rec[chk])
    return {
        "c": np.where(dec, c, 0), "T": dec & T & in_sample, "declared": dec, "p_max": pm,
        **cells,
    }


def fallback_cells(fb: np.ndarray, u_size: np.ndarray, n_u: np.ndarray) -> dict[str, np.ndarray]:
    """Per target, the ``π`` of the fallback-set records not stored and how many they are;
    ``n_u``: the stored pairs in each target's fallback set."""
    n_extra = np.where(fb > 0, u_size - n_u, 0)
    cell = n_extra > 0
    return {"fallback_value": np.where(cell, fb, 0.0), "fallback_extra": np.where(cell, n_extra, 0)}


def candidate_pairs(keys: np.ndarray, vals: np.ndarray, bound: np.ndarray, *, n: int,
                    rows: np.ndarray | None = None, R: int = 1) -> np.ndarray:
    """Mask of the stored pairs that can reach a target's top set: ``vals / R`` (upper bounds)
    not below ``bound`` (a lower bound of the target's largest value) beyond the tie tolerance.
    """
    return _at_least(keys, vals, R, _threshold(bound), n, rows)


def _threshold(bound: np.ndarray) -> np.ndarray:
    return np.where(bound > 0, bound * (1 - 2 * TIE_RTOL) - 2 * TIE_ATOL, -np.inf)


def _at_least(keys: np.ndarray, vals: np.ndarray, R: float, thr: np.ndarray, n: int,
              rows: np.ndarray | None = None) -> np.ndarray:
    """``vals / R >= thr[keys // n]`` (sorted ``keys``; compiled when the pairs are many)."""
    if use_pair_kernels(keys.size):
        from bayes_risk.identification import _pair_kernels

        return _pair_kernels.at_least(keys, vals, float(R), thr, n)
    if rows is None:
        rows = keys // n
    return (vals if R == 1 else vals / R) >= thr[rows]


def group_candidates(keys: np.ndarray, vals: np.ndarray, in_u: np.ndarray, groups: Sequence,
                     R: int, *, n: int, N: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Mask of the stored pairs that can reach a target's top set once any one group is
    deleted, and each group's bound for :func:`candidate_pairs` (the sum without the group at
    the target's largest pair). The mask has a relative margin of 1e-9 (it only adds pairs).
    """
    star = row_argmax(keys, vals, n=n)
    top, rows = keys[star], keys[star] // n
    lim = np.full(N, np.inf)
    bounds = []
    for g in groups:
        Rg = R - g.R
        bound = np.zeros(N)
        bound[rows] = (vals[star] - g.on(top, in_u[star])) / Rg
        bounds.append(bound)
        thr = _threshold(bound) * Rg
        lim[rows] = np.minimum(lim[rows], thr[rows])
    lim = np.where(lim > 0, lim * (1 - 1e-9), lim)
    return _at_least(keys, vals, 1, lim, n), bounds


def row_argmax(keys: np.ndarray, vals: np.ndarray, *, n: int) -> np.ndarray:
    """Position (in ``keys``) of the first largest stored value of each target that has one."""
    if not keys.size:
        return np.zeros(0, dtype=np.int64)
    if use_pair_kernels(keys.size):
        from bayes_risk.identification import _pair_kernels

        return _pair_kernels.row_argmax(keys, vals, n)
    rows = keys // n
    starts = np.flatnonzero(np.concatenate([[True], rows[1:] != rows[:-1]]))
    top = np.maximum.reduceat(vals, starts)
    at_top = vals == np.repeat(top, np.diff(np.append(starts, keys.size)))
    first = np.flatnonzero(at_top)
    # the first position at the top in each target's run of pairs
    return first[np.searchsorted(first, starts)]


def jackknife_se(theta: np.ndarray) -> np.ndarray:
    """Delete-a-group jackknife standard error from leave-one-group-out values ``[G, ...]``."""
    theta = np.asarray(theta, dtype=np.float64)
    G = theta.shape[0]
    if G < 2:
        return np.full(theta.shape[1:], np.nan)
    dev = theta - theta.mean(axis=0)
    return np.sqrt((G - 1) / G * (dev**2).sum(axis=0))


def pooled_measures(res: dict[str, np.ndarray]) -> tuple[dict[str, float], np.ndarray]:
    """File-level measures and record ``IR`` of one pooled evaluation (``top_sets`` output)."""
    rm = record_measures(res["c"], res["T"])
    fm = file_measures(res["c"], res["T"], rm)
    return {k: float(v) for k, v in fm.items()}, rm["IR"]


def replicate_summary(per: dict[str, Sequence[float]]) -> dict[str, dict[str, Any]]:
    """Mean, iid Monte Carlo standard error and quantiles of per-replicate measures (``nan``
    values left out and counted)."""
    out: dict[str, dict[str, Any]] = {"mean": {}, "mean_mc_se": {}, "quantiles": {},
                                      "n_nan": {}}
    for k in MEASURES:
        v = np.asarray(per[k], dtype=np.float64)
        ok = v[np.isfinite(v)]
        R = ok.size
        out["n_nan"][k] = int(v.size - R)
        out["mean"][k] = float(ok.mean()) if R else float("nan")
        out["mean_mc_se"][k] = float(ok.std(ddof=1) / np.sqrt(R)) if R > 1 else float("nan")
        out["quantiles"][k] = (
            {str(q): float(x) for q, x in zip(REPLICATE_QUANTILES,
                                              np.quantile(ok, REPLICATE_QUANTILES), strict=True)}
            if R else {str(q): float("nan") for q in REPLICATE_QUANTILES}
        )
    return out

