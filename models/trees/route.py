"""Compiled (numba) routing of records down a fitted synthesis tree and a stored forest."""

from __future__ import annotations

import numba as _nb
import numpy as np

__all__ = ["forest_apply", "route_climb"]


@_nb.njit(cache=True, nogil=True)
def route_climb(X, codes, is_leaf, feature, threshold, left, right, feature_pred, nominal_index,
                nominal_offset, seen):
    """Node of each record and whether it met an unevaluable split (then: that node)."""
    n = X.shape[0]
    node = np.zeros(n, dtype=np.int64)
    flag = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        k = 0
        while not is_leaf[k]:
            f = feature[k]
            slot = nominal_index[feature_pred[f]]
            if slot >= 0 and not seen[k, nominal_offset[slot] + codes[i, slot]]:
                flag[i] = True
                break
            if X[i, f] <= threshold[k]:
                k = left[k]
            else:
                k = right[k]
        node[i] = k
    return node, flag


@_nb.njit(cache=True, nogil=True)
def forest_apply(X, left, right, feature, threshold, missing_left, offsets):
    """Local leaf id ``(n, n_trees)`` of every record in every tree of a stored forest, as
    scikit-learn's ``apply`` (tree ``b``'s nodes at ``offsets[b]..``)."""
    n = X.shape[0]
    B = offsets.shape[0]
    out = np.zeros((n, B), dtype=np.int64)
    for b in range(B):
        o = offsets[b]
        for i in range(n):
            k = 0
            while left[o + k] != -1:
                x = X[i, feature[o + k]]
                if x != x:
                    go_left = missing_left[o + k]
                else:
                    go_left = x <= threshold[o + k]
                k = left[o + k] if go_left else right[o + k]
            out[i, b] = k
    return out
