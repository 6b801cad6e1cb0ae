"""Record- and file-level identification-risk measures; see :doc:`/methods/identification`
(``U = 0`` gives ``nan`` rates and warning ``ZERO_UNIQUE``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["MEASURES", "record_measures", "file_measures"]

MEASURES = (
    "expected_match_risk",
    "expected_match_rate",
    "true_match_risk",
    "n_unique",
    "true_match_rate_targets",
    "true_match_rate_unique",
    "false_match_rate",
)


def record_measures(c: np.ndarray, T: np.ndarray) -> dict[str, np.ndarray]:
    """``K``, ``W`` and ``IR`` from ``c`` and ``T`` (any shape; ``T`` is 0 where ``c = 0``).

    ``c`` keeps its integer type (int32 from the per-dataset engine, int64 when given floats);
    ``T``, ``K`` and ``W`` are bool (0/1 tables: at 10^6 targets x 5 datasets 5 MB each, not
    the 40 MB of int64); ``IR`` is float64.
    """
    c = np.asarray(c)
    if c.dtype.kind not in "iu":
        c = c.astype(np.int64)
    matched = c > 0
    T = np.asarray(T).astype(bool) & matched
    unique = c == 1
    # T / c where c > 0, else 0 (the same division), without np.where's three [N_T, m]
    # temporaries: this runs at the identification command's peak memory
    IR = np.zeros(c.shape)
    np.divide(T, c, out=IR, where=matched)
    return {"c": c, "T": T, "K": unique & T, "W": unique & ~T, "IR": IR}


def _counts(flags: np.ndarray) -> np.ndarray:
    """``flags.sum(axis=0)`` of 0/1 flags ``[N_T]`` or ``[N_T, m]``, a column at a time where
    there are columns (numpy's sum walks each row's m flags: 8x slower at m = 5)."""
    if flags.ndim < 2:
        return flags.sum(axis=0)
    return np.array([np.count_nonzero(flags[:, j]) for j in range(flags.shape[1])],
                    dtype=np.int64)


def file_measures(
    c: np.ndarray, T: np.ndarray, rm: dict[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """File-level measures over targets (axis 0); vectors when ``c`` is ``[N_T, m]``.

    Examples
    --------
    >>> out = file_measures(np.array([1, 1, 2, 2, 2]), np.array([1, 0, 1, 1, 1]))
    >>> float(out["expected_match_risk"]), int(out["n_unique"]), float(out["false_match_rate"])
    (2.5, 2, 0.5)
    """
    if rm is None:
        rm = record_measures(c, T)
    N = rm["c"].shape[0]
    ir = rm["IR"].sum(axis=0)
    K = _counts(rm["K"])
    W = _counts(rm["W"])
    U = _counts(rm["c"] == 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {
            "expected_match_risk": ir,
            "expected_match_rate": ir / N if N else np.full(np.shape(ir), np.nan),
            "true_match_risk": K,
            "n_unique": U,
            "true_match_rate_targets": K / N if N else np.full(np.shape(K), np.nan),
            "true_match_rate_unique": np.where(U > 0, K / np.maximum(U, 1), np.nan),
            "false_match_rate": np.where(U > 0, W / np.maximum(U, 1), np.nan),
        }
    return out
