"""The leaves of a random forest and their class probabilities (Caiola & Reiter 2010): the
synthesis distribution of :class:`~bayes_risk.models.RandomForestSynthesizer` (the mean over the
trees of the leaves reached) and the plug-in likelihood of :class:`~bayes_risk.models.RFPlugin`
read them from here."""

from __future__ import annotations

from typing import Any

import numpy as np

from bayes_risk.exceptions import ValidationError

__all__ = ["distinct_rows", "forest_apply_distinct", "leaf_probabilities"]


def distinct_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a forest's input (compared as the float32 bytes the trees route) and
    where each row of ``X`` is among them.

    Parameters
    ----------
    X : array, shape (n, p)

    Returns
    -------
    distinct : ndarray of float32, shape (k, p)
    inverse : ndarray of int64, shape (n,)
        ``distinct[inverse]`` has the bytes of ``X`` as float32.

    Examples
    --------
    >>> u, inv = distinct_rows(np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 2.0]]))
    >>> u.tolist(), inv.tolist()
    ([[0.0, 1.0], [1.0, 2.0]], [1, 0, 1])
    """
    Xf = np.ascontiguousarray(X, dtype=np.float32)
    if Xf.ndim != 2 or Xf.shape[1] == 0 or Xf.shape[0] < 2:
        return Xf, np.arange(Xf.shape[0], dtype=np.int64)
    # one opaque bytes value per row: a 1-d sort, ten times faster than np.unique(axis=0)
    rows = Xf.view(np.dtype((np.void, Xf.dtype.itemsize * Xf.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    return Xf[first], inverse.reshape(-1).astype(np.int64, copy=False)


def forest_apply_distinct(forest: Any, X: np.ndarray) -> np.ndarray:
    """``forest.apply(X)`` ``(n, n_trees)`` with each distinct row routed once (the same leaves,
    row for row)."""
    distinct, inverse = distinct_rows(X)
    if distinct.shape[0] == inverse.size:  # nothing shared: route the rows in their order
        return forest.apply(np.ascontiguousarray(X, dtype=np.float32))
    return forest.apply(distinct)[inverse]


def leaf_probabilities(leaf_counts: np.ndarray, probabilities: str = "vote",
                       alpha: float = 1.0) -> np.ndarray:
    """Per-leaf class probabilities from leaf class counts (Caiola & Reiter 2010).

    Parameters
    ----------
    leaf_counts : array, shape (..., d)
        Class counts ``n_{b,c}`` of the training (bootstrap) records in each leaf.
    probabilities : {"vote", "leaf_dirichlet"}
        The leaf's majority vote (ties split equally), or ``(n_{b,c} + α)/(n_b + d α)``.
    alpha : float
        Dirichlet prior count per class (``leaf_dirichlet`` only; ``>= 0``).

    Returns
    -------
    ndarray, same shape as ``leaf_counts``
        Each row sums to 1 (rows of an empty leaf with ``α = 0`` are all-NaN).
    """
    c = np.asarray(leaf_counts, dtype=np.float64)
    d = c.shape[-1]
    if probabilities == "vote":
        top = c.max(axis=-1, keepdims=True)
        win = (c == top) & (top > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return win / win.sum(axis=-1, keepdims=True)
    if probabilities == "leaf_dirichlet":
        if not (np.isfinite(alpha) and alpha >= 0):
            raise ValidationError(f"alpha must be a number >= 0. Got {alpha!r}.")
        with np.errstate(invalid="ignore", divide="ignore"):
            return (c + alpha) / (c.sum(axis=-1, keepdims=True) + d * alpha)
    raise ValidationError(
        f"probabilities must be 'vote' or 'leaf_dirichlet'. Got {probabilities!r}.")
