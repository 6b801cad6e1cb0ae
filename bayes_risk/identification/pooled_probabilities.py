"""What the pooled aggregation returns (:class:`PooledOutput`) and its match probabilities in
compact form (:class:`PooledProbabilities`), with the CSR helpers they are built with. See
:doc:`/methods/identification`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bayes_risk.identification import engine as _engine
from bayes_risk.identification.fallback import FallbackSets, GroupedFallbackSets
from bayes_risk.identification.index import spans

if TYPE_CHECKING:  # scipy.sparse is imported where the pooled matrix is built
    import scipy.sparse as sp


__all__ = ["PooledOutput", "PooledProbabilities", "csr", "join_blocks", "row_pointers"]


@dataclass
class PooledOutput:
    """Per-target output of :func:`run_pooled` (``prob``: the directly matched records; the
    ``fallback_extra`` other records of a fallback set share ``fallback_value``, not stored;
    ``rows``: each target's row of ``prob`` where targets share rows, else ``None``)."""

    prob: sp.csr_matrix | None
    p_out: np.ndarray
    p_unassigned: np.ndarray
    p_max: np.ndarray
    c: np.ndarray
    T: np.ndarray
    declared: np.ndarray
    no_match_any: np.ndarray
    fallback_value: np.ndarray
    fallback_extra: np.ndarray
    rows: np.ndarray | None = None


def row_pointers(counts: np.ndarray) -> np.ndarray:
    """The int64 ``indptr`` of rows of ``counts`` entries."""
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr


def csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]
        ) -> sp.csr_matrix:
    """``scipy.sparse.csr_matrix`` with an int32 ``indptr`` where it fits."""
    import scipy.sparse as sp

    if indptr[-1] < 2**31 - 1:
        indptr = indptr.astype(np.int32)
    return sp.csr_matrix((data, indices, indptr), shape=shape)


def join_blocks(blocks: list[np.ndarray], total: int, dtype: Any) -> np.ndarray:
    """The blocks in one array, each released once copied (never two copies of them all).

    Parameters
    ----------
    blocks : list of ndarray
        The blocks, in order; emptied as they are copied.
    total : int
        Their total size.
    dtype : numpy dtype
        The array's type.

    Returns
    -------
    ndarray
        ``np.concatenate(blocks)``, of ``dtype``.
    """
    out = np.empty(total, dtype=dtype)
    at = 0
    blocks.reverse()
    while blocks:
        b = blocks.pop()
        out[at:at + b.size] = b
        at += b.size
    return out


@dataclass(frozen=True)
class PooledProbabilities:
    """Pooled match probabilities ``π_τ(k)`` [N_T, n] in compact form.

    ``explicit`` holds every record matched directly; the ``fallback_extra[τ]`` other records of
    a fallback set have ``fallback_value[τ]``, enumerated only in :meth:`row` and :meth:`tocsr`.
    ``rows``: target ``τ``'s row of ``explicit`` when targets that match alike (the same known
    values) share one (posterior replicates), ``None`` when ``explicit`` has a row per target.
    """

    explicit: sp.csr_matrix
    fallback_value: np.ndarray
    fallback_extra: np.ndarray
    fallback_sets: FallbackSets | GroupedFallbackSets | None
    rows: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        n_rows, n = self.explicit.shape
        return (n_rows if self.rows is None else self.rows.size), n

    @property
    def nnz(self) -> int:
        """Number of records with ``π_τ(k) > 0`` over all targets."""
        per_row = np.diff(self.explicit.indptr)
        explicit = per_row.sum() if self.rows is None else per_row[self.rows].sum()
        return int(explicit + self.fallback_extra.sum())

    def _rows(self, rows: np.ndarray):
        """(indptr, indices, data) of the full rows ``rows`` (ascending columns)."""
        ex = self.explicit
        ip = ex.indptr.astype(np.int64)
        er = rows if self.rows is None else self.rows[rows]
        e_len = ip[er + 1] - ip[er]
        e_tr = np.repeat(np.arange(rows.size), e_len)
        e_pos = spans(ip[er], e_len)
        e_col = ex.indices[e_pos].astype(np.int64)
        e_dat = ex.data[e_pos]
        has = self.fallback_extra[rows] > 0
        if self.fallback_sets is None or not has.any():
            t, col, dat = e_tr, e_col, e_dat
        else:
            sub = np.flatnonzero(has)
            cnt, mem = self.fallback_sets.members(rows[sub])
            f_tr = np.repeat(sub, cnt)
            # members matched directly are already explicit (with their own value)
            n = self.shape[1]
            f_key = f_tr * n + mem
            e_key = e_tr * n + e_col
            keep = ~np.isin(f_key, e_key)
            f_tr, mem = f_tr[keep], mem[keep]
            t = np.concatenate([e_tr, f_tr])
            col = np.concatenate([e_col, mem])
            dat = np.concatenate([e_dat, self.fallback_value[rows][f_tr]])
            o = np.lexsort((col, t))
            t, col, dat = t[o], col[o], dat[o]
        return row_pointers(np.bincount(t, minlength=rows.size)), col, dat

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Records ``k`` with ``π_i(k) > 0`` (ascending) and their probabilities."""
        _, col, dat = self._rows(np.array([int(i)], dtype=np.int64))
        return col, dat

    def tocsr(self, max_nnz: int | None = None) -> sp.csr_matrix:
        """The full matrix as ``scipy.sparse.csr_matrix`` (every fallback set enumerated).

        Raises
        ------
        ValidationError
            If it would hold more than ``max_nnz`` (default ``MAX_NNZ``) non-zero entries.
        """
        from bayes_risk.exceptions import ValidationError

        limit = _engine.MAX_NNZ if max_nnz is None else max_nnz
        N, n = self.shape
        fallback = self.fallback_sets is not None and (self.fallback_extra > 0).any()
        if self.rows is None and not fallback:
            return self.explicit
        if self.nnz > limit:
            raise ValidationError(
                f"the pooled match probabilities hold {self.nnz:,} non-zero entries (more than "
                f"{limit:,}), "
                + ("most of them from the fallback sets; " if fallback else
                   "as every target gets its own copy of the row it shares with the targets of "
                   "the same known values; ")
                + "read them row by row (result.pooled.row(i))"
                + (" or use fallback='none'." if fallback else "."),
                code="PROBLEM_TOO_LARGE"
            )
        indptrs, cols, dats = [], [], []
        step = 65_536
        for a in range(0, N, step):
            ip, col, dat = self._rows(np.arange(a, min(N, a + step), dtype=np.int64))
            indptrs.append(np.diff(ip))
            cols.append(col)
            dats.append(dat)
        indptr = row_pointers(np.concatenate(indptrs) if indptrs else np.zeros(0, np.int64))
        return csr(np.concatenate(dats),
                   np.concatenate(cols).astype(self.explicit.indices.dtype), indptr, (N, n))
