"""Compiled routing of records down a fitted synthesis tree (numba, ``cache=True``).

Used by ``Tree.route`` for the ``"climb"`` rule (no random numbers): the same nodes and flags as
the vectorised level-by-level loop, one record at a time, which avoids ``depth`` passes of
fancy indexing over all records (the cost of drawing many CART posterior replicates). The
``"random_descent"`` rule keeps the vectorised loop, whose random draws are made level by level.
"""

from __future__ import annotations

import numba as _nb
import numpy as np

__all__ = ["route_climb"]


@_nb.njit(cache=True, nogil=True)
def route_climb(X, codes, is_leaf, feature, threshold, left, right, feature_pred, nominal_index,
                nominal_offset, seen):
    """Node of each record and whether it met an unevaluable split (then: that node).

    ``X [n, features]`` (float32), ``codes [n, n_nominal]`` (nominal level codes), the tree's
    arrays and the design's predictor maps as in ``Tree`` / ``Design``.
    """
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
