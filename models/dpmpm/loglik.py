"""Likelihoods of :class:`~bayes_risk.models.dpmpm.dpmpm.DPMPM` on its fitted state, documented
on the model's methods."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import InstanceOf, Interval, check_value
from bayes_risk.data.synthetic import as_frames
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models.dpmpm.coding import (
    class_logw,
    encode,
    encode_dataset,
    refuse_unknown_levels,
)
from bayes_risk.models.dpmpm.state import DPMPMState
from bayes_risk.models.dpmpm.zeros import UNKNOWN


def record_loglik(state: DPMPMState, records: pd.DataFrame, idx: np.ndarray | None
                  ) -> np.ndarray:
    """``[H, n]`` joint record log-likelihoods (:meth:`DPMPM.record_loglik`)."""
    import bayes_risk.models.dpmpm.kernels as kern

    codes = encode(state.schema, records)
    lp, lpi, ph = state.draws(idx)
    p = codes.shape[1]
    unknown = (codes == UNKNOWN).any(axis=1)
    c = np.where(codes == UNKNOWN, -1, codes)
    out = kern.lse_two(c, np.ones(p, bool), c, np.zeros(p, bool), state.offsets, lp, lpi)
    if state.zeros is not None:  # zero on S, normalised over the allowed cells
        import bayes_risk.models.dpmpm.zeros_loglik as zl

        zl.record_loglik(state, c, out, lp, lpi, ph)
    out[:, unknown] = -np.inf
    return out


def dataset_loglik(state: DPMPMState, synthetic: Any, idx: np.ndarray | None, *, mode: str,
                   rows: np.ndarray, n: int, data: pd.DataFrame | None) -> np.ndarray:
    """``[H, m]`` ``log p(Z_(l) | Θ_h)`` (:meth:`DPMPM.dataset_loglik`): ``rows`` the
    synthesized records (int64) of the ``n`` of each dataset, ``data`` the confidential records
    (``posterior_class``)."""
    import bayes_risk.models.dpmpm.kernels as kern

    synthetic = as_frames(synthetic)
    lp, lpi, ph = state.draws(idx)
    if state.zeros is not None:
        import bayes_risk.models.dpmpm.zeros_loglik as zl

        return zl.dataset_loglik(state, synthetic, lp, lpi, ph, mode=mode, rows=rows, n=n,
                                 data=data)
    s_mask, us_mask = state.synthesized, state.unsynthesized
    p = len(s_mask)
    none = np.zeros(p, bool)
    allc = np.ones(p, bool)
    off = state.offsets
    out = np.empty((lp.shape[0], len(synthetic)))
    ycodes = None
    if mode == "posterior_class":
        ycodes = encode(state.schema, data, name="data")
    for l, z in enumerate(synthetic):
        zc = encode_dataset(state.schema, z, l, n)
        if np.any(zc[rows][:, s_mask] == UNKNOWN) or np.any(zc[rows][:, s_mask] < 0):
            out[:, l] = -np.inf
            continue
        zc = np.where(zc == UNKNOWN, -1, zc)
        if mode == "marginal":
            out[:, l] = kern.lse_two_sum(zc, s_mask, zc, none, off, lp, lpi, rows, ph)
        elif mode == "conditional_us":
            num = kern.lse_two_sum(zc, allc, zc, none, off, lp, lpi, rows, ph)
            den = kern.lse_two_sum(zc, us_mask, zc, none, off, lp, lpi, rows, ph)
            out[:, l] = num - den
        else:
            num = kern.lse_two_sum(ycodes, allc, zc, s_mask, off, lp, lpi, rows, ph)
            den = kern.lse_two_sum(ycodes, allc, zc, none, off, lp, lpi, rows, ph)
            out[:, l] = num - den
    return out


def own_record_delta(state: DPMPMState, record: Any, candidates: pd.DataFrame, synthetic: Any,
                     idx: np.ndarray, *, mode: str, n: int,
                     synthesized_records: np.ndarray | None, data: pd.DataFrame | None
                     ) -> np.ndarray:
    """``[H, m, G]`` own-record term (:meth:`DPMPM.own_record_delta`) of the draws ``idx``."""
    synthetic = as_frames(synthetic)
    G = len(candidates)
    out = np.zeros((len(idx), len(synthetic), G))
    if mode != "posterior_class":
        return out
    pos = record.name if isinstance(record, pd.Series) else record
    # a position, or original.iloc[i]
    pos = check_value(pos, Interval(int, 0, n - 1), "record")
    if synthesized_records is not None and not synthesized_records[pos]:
        return out
    check_value(candidates, InstanceOf(pd.DataFrame, "a DataFrame of the varying columns"),
                "candidates")
    vary = state.schema.check_columns(list(candidates.columns), "candidates")
    truth = data.iloc[[pos]].reset_index(drop=True)
    full = pd.concat([truth] * (G + 1), ignore_index=True).astype(object)
    for c in vary:
        full.loc[1:, c] = candidates[c].astype(object).to_numpy()
    codes = encode(state.schema, full, name="candidates")
    lp, lpi = state.logphi[idx], state.log_pi[idx]
    A = class_logw(state, codes, lp, lpi, np.ones(codes.shape[1], bool))  # [H, G+1, K]
    from bayes_risk._numeric import logsumexp

    den = logsumexp(A, axis=-1)  # [H, G+1]
    s_mask = state.synthesized
    for l, z in enumerate(synthetic):
        zc = encode(state.schema, z.iloc[[pos]], name=f"synthetic dataset {l + 1}")[0]
        B = np.zeros((len(idx), lpi.shape[1]))
        if state.zeros is not None:  # the synthesized part's normaliser given the class
            import bayes_risk.models.dpmpm.zeros_loglik as zl

            B, inside = zl.own_record_terms(state, codes, zc, lp, lpi, state.phi[idx])
            den[:, inside] = -np.inf
        for j in np.flatnonzero(s_mask):
            if zc[j] == UNKNOWN:
                B[:] = -np.inf
            elif zc[j] >= 0:
                B += lp[:, state.offsets[j] + zc[j], :]
        with np.errstate(invalid="ignore"):
            ell = logsumexp(A + B[:, None, :], axis=-1) - den  # [H, G+1]
            d = ell[:, 1:] - ell[:, :1]
        d[~np.isfinite(den[:, 1:])] = -np.inf  # candidate impossible under the model
        out[:, l, :] = d
    return out


def neighbourhood_size(state: DPMPMState) -> int:
    """``G = 1 + Σ_{j∈S} (d_j − 1)`` (:meth:`DPMPM.neighbourhood_size`)."""
    return int(1 + np.sum(state.d[state.synthesized] - 1))


def neighbourhood_loglik(
    state: DPMPMState,
    records: pd.DataFrame,
    idx: np.ndarray | None,
    *,
    chunk_size: int | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """``[H, n, G]`` one-variable-different log-likelihoods (:meth:`DPMPM.neighbourhood_loglik`)."""
    import bayes_risk.models.dpmpm.kernels as kern
    from bayes_risk._numeric import threaded_ufunc

    codes = encode(state.schema, records)
    if np.any(codes == -1):
        i, j = np.argwhere(codes == -1)[0]
        raise SchemaError(
            f"records: column {state.schema.names[j]!r} is missing in row {i}; candidate "
            "sets need complete records.",
            code="MISSING_VALUES",
        )
    refuse_unknown_levels(state.schema, codes, code="TRUTH_OUTSIDE_SUPPORT")
    lp, lpi, ph = state.draws(idx)
    syn_cols = np.flatnonzero(state.synthesized).astype(np.int64)
    G = neighbourhood_size(state)
    H, n = lp.shape[0], codes.shape[0]
    if chunk_size is None:
        chunk_size = max(1, int(2e7 // max(1, H * G)))
    if out is None:
        out = np.empty((H, n, G))
    elif out.shape != (H, n, G) or out.dtype != np.float64:
        raise ValidationError(
            f"out must be a float64 array of shape {(H, n, G)}; got {out.dtype} {out.shape}."
        )
    for a in range(0, n, chunk_size):
        b = min(n, a + chunk_size)
        dest = out[:, a:b, :]
        logged = kern.neighbourhood(
            np.ascontiguousarray(codes[a:b]), syn_cols, state.d, state.offsets, lp, ph, lpi,
            dest,
        )
        # the kernel leaves probabilities (logged = False) for numpy's vectorised log
        keep = dest[logged] if logged.any() else None
        # (log-space rows give nan here; they are restored just below)
        threaded_ufunc(np.log, dest, out=dest, divide="ignore", invalid="ignore")
        if keep is not None:
            dest[logged] = keep
    if state.zeros is not None:  # zero on S, normalised over the allowed cells
        import bayes_risk.models.dpmpm.zeros_loglik as zl

        zl.neighbourhood(state, codes, syn_cols, out, lpi, ph)
    return out


def class_probabilities(state: DPMPMState, records: pd.DataFrame, idx: np.ndarray | None
                        ) -> np.ndarray:
    """``[H, n, K]`` ``p(k | y_i, Θ_h)`` (:meth:`DPMPM.class_probabilities`)."""
    codes = encode(state.schema, records)
    lp, lpi, _ = state.draws(idx)
    logw = class_logw(state, codes, lp, lpi, np.ones(codes.shape[1], bool))
    from bayes_risk._numeric import normalise_log

    return normalise_log(logw, axis=-1)
