"""Singling-out predicates: conjunctions of one-column conditions on coded tables.

A set of ``Q`` predicates of ``k`` terms each is three arrays of shape ``[Q, k]`` (column,
operator, value). A comparison with a missing cell is false, as in anonymeter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["OPS", "Predicates", "count_matches", "only_match", "univariate_candidates",
           "multivariate_candidates", "random_predicates", "describe"]

#: operator codes and their text
OPS: dict[int, str] = {0: "==", 1: "!=", 2: ">", 3: "<", 4: ">=", 5: "<=", 6: "is missing",
                       7: "is not missing"}
EQ, NE, GT, LT, GE, LE, ISNA, NOTNA = range(8)

#: cells (predicates × rows) per block of :func:`count_matches` (memory: ~8 bytes a cell)
_BLOCK_CELLS = 1 << 21


@dataclass(frozen=True)
class Predicates:
    """``Q`` predicates of ``k`` terms: ``col``, ``op`` and ``val`` of shape ``[Q, k]``."""

    col: np.ndarray
    op: np.ndarray
    val: np.ndarray

    def __len__(self) -> int:
        return int(self.col.shape[0])

    def take(self, idx: np.ndarray) -> Predicates:
        """The predicates at positions ``idx``, in that order."""
        return Predicates(self.col[idx], self.op[idx], self.val[idx])

    def keys(self) -> list[bytes]:
        """One byte string per predicate, equal for equal predicates (terms in column order)."""
        packed = np.concatenate([self.col.astype(np.float64), self.op.astype(np.float64),
                                 self.val], axis=1)
        packed = np.where(np.isnan(packed), np.inf, packed)  # one key for every nan
        return [row.tobytes() for row in np.ascontiguousarray(packed)]


def _bounds(op: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each comparison but ``!=`` and ``is missing`` as an interval ``lo <= x <= hi`` (a
    missing ``x`` is outside every interval); ``!=`` gets the interval of ``==``."""
    lo = np.full(v.shape, -np.inf)
    hi = np.full(v.shape, np.inf)
    eq = (op == EQ) | (op == NE)
    lo[eq | (op == GE)] = v[eq | (op == GE)]
    hi[eq | (op == LE)] = v[eq | (op == LE)]
    lo[op == GT] = np.nextafter(v[op == GT], np.inf)
    hi[op == LT] = np.nextafter(v[op == LT], -np.inf)
    return lo, hi


def _term(x: np.ndarray, op: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rows of ``x`` ``[b, n]`` meeting one term per row (``op``, ``v`` of shape ``[b]``)."""
    lo, hi = _bounds(op, v)
    out = (x >= lo[:, None]) & (x <= hi[:, None])
    for code in (NE, ISNA):
        r = np.flatnonzero(op == code)
        if r.size:
            isnan = np.isnan(x[r])
            out[r] = (~out[r] & ~isnan) if code == NE else isnan
    return out


def _match_blocks(X: np.ndarray, preds: Predicates):
    """``(slice, mask)`` per block of predicates: ``mask[i, r]``, predicate ``i`` of the block
    matches row ``r`` of the coded table ``X`` ``[n, p]`` (at most ``_BLOCK_CELLS`` cells)."""
    Q, k = preds.col.shape
    n = X.shape[0]
    if Q == 0 or n == 0:
        return
    XT = np.ascontiguousarray(X.T)
    step = max(1, _BLOCK_CELLS // n)
    for s in range(0, Q, step):
        sl = slice(s, s + step)
        mask = np.ones((len(preds.col[sl]), n), dtype=bool)
        for t in range(k):
            mask &= _term(XT[preds.col[sl, t]], preds.op[sl, t], preds.val[sl, t])
        yield sl, mask


def count_matches(X: np.ndarray, preds: Predicates) -> np.ndarray:
    """Number of rows of the coded table ``X`` ``[n, p]`` each predicate matches."""
    out = np.zeros(len(preds), dtype=np.int64)
    for sl, mask in _match_blocks(X, preds):
        out[sl] = mask.sum(axis=1)
    return out


def only_match(X: np.ndarray, preds: Predicates) -> np.ndarray:
    """The row of ``X`` each predicate singles out (matches and no other row does), ``-1``
    for a predicate that matches no row or several."""
    out = np.full(len(preds), -1, dtype=np.int64)
    for sl, mask in _match_blocks(X, preds):
        out[sl] = np.where(mask.sum(axis=1) == 1, mask.argmax(axis=1), -1)
    return out


def _single(col: list[int], op: list[int], val: list[float]) -> Predicates:
    return Predicates(np.asarray(col, dtype=np.int64).reshape(-1, 1),
                      np.asarray(op, dtype=np.int8).reshape(-1, 1),
                      np.asarray(val, dtype=np.float64).reshape(-1, 1))


def univariate_candidates(S: np.ndarray, is_cat: np.ndarray) -> tuple[Predicates, np.ndarray]:
    """anonymeter's univariate singling-out predicates of the synthetic table ``S``, with the
    number of its rows each matches (:doc:`/methods/attacks`)."""
    col: list[int] = []
    op: list[int] = []
    val: list[float] = []
    cnt: list[int] = []
    for j in range(S.shape[1]):
        x = S[:, j]
        nan = np.isnan(x)
        obs = x[~nan]
        if int(nan.sum()) == 1:
            col.append(j), op.append(ISNA), val.append(np.nan), cnt.append(1)
        if not is_cat[j] and obs.size:
            lo, hi = obs.min(), obs.max()
            col += [j, j]
            op += [LE, GE]
            val += [float(lo), float(hi)]
            cnt += [int((obs == lo).sum()), int((obs == hi).sum())]
        values, counts = np.unique(obs, return_counts=True)
        rare = values[counts == 1]
        col += [j] * rare.size
        op += [EQ] * rare.size
        val += rare.tolist()
        cnt += [1] * rare.size
    return _single(col, op, val), np.asarray(cnt, dtype=np.int64)


def multivariate_candidates(S: np.ndarray, is_cat: np.ndarray, medians: np.ndarray, n: int,
                            n_cols: int, rng: np.random.Generator) -> Predicates:
    """``n`` of anonymeter's multivariate candidates: a random row of ``S`` and ``n_cols``
    random columns, a term per column towards the rarer tail (:doc:`/methods/attacks`)."""
    rows = rng.integers(0, S.shape[0], size=n)
    cols = np.sort(np.argsort(rng.random((n, S.shape[1])), axis=1)[:, :n_cols], axis=1)
    val = S[rows[:, None], cols]
    cat = is_cat[cols]
    op = np.where(cat, EQ, np.where(val > medians[cols], GE, LE)).astype(np.int8)
    op[np.isnan(val)] = ISNA
    return Predicates(cols.astype(np.int64), op, val)


def random_predicates(S: np.ndarray, is_cat: np.ndarray, n: int, n_cols: int,
                      rng: np.random.Generator) -> Predicates:
    """anonymeter's baseline: ``n`` predicates of ``n_cols`` random columns, random values of
    ``S`` and random operators (:doc:`/methods/attacks`)."""
    p = S.shape[1]
    cols = np.sort(np.argsort(rng.random((n, p)), axis=1)[:, :n_cols], axis=1)
    uniq = []
    for j in range(p):
        x = S[:, j]
        u = np.unique(x[~np.isnan(x)])
        uniq.append(np.append(u, np.nan) if np.isnan(x).any() else u)
    pick = rng.random((n, n_cols))
    ops = rng.random((n, n_cols))
    val = np.empty((n, n_cols))
    op = np.empty((n, n_cols), dtype=np.int8)
    for i in range(n):
        for t in range(n_cols):
            u = uniq[cols[i, t]]
            v = u[min(int(pick[i, t] * u.size), u.size - 1)]
            val[i, t] = v
            if np.isnan(v):
                op[i, t] = ISNA if ops[i, t] < 0.5 else NOTNA
            elif is_cat[cols[i, t]]:
                op[i, t] = EQ if ops[i, t] < 0.5 else NE
            else:
                op[i, t] = min(int(ops[i, t] * 6), 5)
    return Predicates(cols.astype(np.int64), op, val)


def describe(preds: Predicates, names: list[str], levels: list[tuple | None]) -> list[str]:
    """The predicates as text: ``"Age >= 63 & Urban == 2"`` (categorical values by label)."""
    out = []
    for i in range(len(preds)):
        terms = []
        for c, o, v in zip(preds.col[i], preds.op[i], preds.val[i], strict=True):
            name = names[int(c)]
            if o in (ISNA, NOTNA):
                terms.append(f"{name} {OPS[int(o)]}")
                continue
            lv = levels[int(c)]
            if lv is None:
                text = f"{float(v):.10g}"
            else:
                x = lv[int(v)]
                text = repr(x) if isinstance(x, str) else str(x)
            terms.append(f"{name} {OPS[int(o)]} {text}")
        out.append(" & ".join(terms))
    return out
