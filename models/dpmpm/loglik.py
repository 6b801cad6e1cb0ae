"""Likelihoods of :class:`~bayes_risk.models.dpmpm.dpmpm.DPMPM` that the risk engines use.

Record, dataset and own-record log-likelihoods, the one-variable-different neighbourhood (chunked
over records, with the numba kernels of ``dpmpm.kernels``) and the class probabilities
``p(k | y_i, Θ)`` (Hu & Savitsky 2018).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models.dpmpm.zeros import _UNKNOWN


def masks(model) -> tuple[np.ndarray, np.ndarray]:
    syn = set(model.schema_.synthesized)
    s = np.array([c in syn for c in model.schema_.names], dtype=bool)
    return s, ~s


def sub(model, draw_indices: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if draw_indices is None:  # all draws: the stored arrays themselves (read only), no copy
        return model._logphi, model._log_pi, model._phi
    idx = model._draw_indices(draw_indices)
    return model._logphi[idx], model._log_pi[idx], model._phi[idx]


def record_loglik(model, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
    """The work of :meth:`DPMPM.record_loglik` (documented there)."""
    import bayes_risk.models.dpmpm.kernels as kern

    model._check_fitted()
    codes = model._encode(records)
    lp, lpi, ph = model._sub(draw_indices)
    p = codes.shape[1]
    unknown = (codes == _UNKNOWN).any(axis=1)
    c = np.where(codes == _UNKNOWN, -1, codes)
    out = kern.lse_two(c, np.ones(p, bool), c, np.zeros(p, bool), model._offsets, lp, lpi)
    if model._zeros is not None:  # zero on S, normalised over the allowed cells
        import bayes_risk.models.dpmpm.zeros_loglik as zl

        zl.record_loglik(model, c, out, lp, lpi, ph)
    out[:, unknown] = -np.inf
    return out


def dataset_loglik(model, synthetic: Any, draw_indices: Any) -> np.ndarray:
    """The work of :meth:`DPMPM.dataset_loglik` (documented there)."""
    import bayes_risk.models.dpmpm.kernels as kern

    model._check_fitted()
    if isinstance(synthetic, pd.DataFrame):
        synthetic = [synthetic]
    synthetic = list(synthetic)
    lp, lpi, ph = model._sub(draw_indices)
    if model._zeros is not None:
        import bayes_risk.models.dpmpm.zeros_loglik as zl

        return zl.dataset_loglik(model, synthetic, lp, lpi, ph)
    s_mask, us_mask = model._masks()
    p = len(s_mask)
    none = np.zeros(p, bool)
    allc = np.ones(p, bool)
    n = model.n_records
    rows = (
        np.arange(n, dtype=np.int64)
        if model.synthesized_records_ is None
        else np.flatnonzero(model.synthesized_records_).astype(np.int64)
    )
    mode = model.synthesis_mode_
    out = np.empty((lp.shape[0], len(synthetic)))
    ycodes = None
    if mode == "posterior_class":
        ycodes = model._encode(model.data_, name="data")
    for l, z in enumerate(synthetic):
        if len(z) != n:
            raise SchemaError(
                f"synthetic dataset {l + 1} has {len(z)} rows; the model synthesizes {n}.",
                code="ROW_COUNT_MISMATCH",
            )
        zc = model._encode(z, name=f"synthetic dataset {l + 1}")
        if np.any(zc[rows][:, s_mask] == _UNKNOWN) or np.any(zc[rows][:, s_mask] < 0):
            out[:, l] = -np.inf
            continue
        zc = np.where(zc == _UNKNOWN, -1, zc)
        if mode == "marginal":
            out[:, l] = kern.lse_two_sum(zc, s_mask, zc, none, model._offsets, lp, lpi, rows, ph)
        elif mode == "conditional_us":
            num = kern.lse_two_sum(zc, allc, zc, none, model._offsets, lp, lpi, rows, ph)
            den = kern.lse_two_sum(zc, us_mask, zc, none, model._offsets, lp, lpi, rows, ph)
            out[:, l] = num - den
        else:
            num = kern.lse_two_sum(ycodes, allc, zc, s_mask, model._offsets, lp, lpi, rows, ph)
            den = kern.lse_two_sum(ycodes, allc, zc, none, model._offsets, lp, lpi, rows, ph)
            out[:, l] = num - den
    return out


def own_record_delta(model, record: Any, candidates: pd.DataFrame, synthetic: Any,
                     draw_indices: Any) -> np.ndarray:
    """The work of :meth:`DPMPM.own_record_delta` (documented there)."""
    model._check_fitted()
    if isinstance(synthetic, pd.DataFrame):
        synthetic = [synthetic]
    synthetic = list(synthetic)
    idx = model._draw_indices(draw_indices)
    G = len(candidates)
    out = np.zeros((len(idx), len(synthetic), G))
    if model.synthesis_mode_ != "posterior_class":
        return out
    pos = record.name if isinstance(record, pd.Series) else record
    if isinstance(pos, bool) or not isinstance(pos, (int, np.integer)) or not (
        0 <= int(pos) < model.n_records
    ):
        raise ValidationError(
            f"record must be a position in 0..{model.n_records - 1} (or original.iloc[i]). "
            f"Got {pos!r}."
        )
    pos = int(pos)
    if model.synthesized_records_ is not None and not model.synthesized_records_[pos]:
        return out
    if not isinstance(candidates, pd.DataFrame):
        raise ValidationError("candidates must be a DataFrame of the varying columns.")
    vary = model.schema_.check_columns(list(candidates.columns), "candidates")
    truth = model.data_.iloc[[pos]].reset_index(drop=True)
    full = pd.concat([truth] * (G + 1), ignore_index=True).astype(object)
    for c in vary:
        full.loc[1:, c] = candidates[c].astype(object).to_numpy()
    codes = model._encode(full, name="candidates")
    lp, lpi = model._logphi[idx], model._log_pi[idx]
    A = model._class_logw(codes, lp, lpi, np.ones(codes.shape[1], bool))  # [H, G+1, K]
    from bayes_risk._numeric import logsumexp

    den = logsumexp(A, axis=-1)  # [H, G+1]
    s_mask, _ = model._masks()
    for l, z in enumerate(synthetic):
        zc = model._encode(z.iloc[[pos]], name=f"synthetic dataset {l + 1}")[0]
        B = np.zeros((len(idx), lpi.shape[1]))
        if model._zeros is not None:  # the synthesized part's normaliser given the class
            import bayes_risk.models.dpmpm.zeros_loglik as zl

            B, inside = zl.own_record_terms(model, codes, zc, lp, lpi, model._phi[idx])
            den[:, inside] = -np.inf
        for j in np.flatnonzero(s_mask):
            if zc[j] == _UNKNOWN:
                B[:] = -np.inf
            elif zc[j] >= 0:
                B += lp[:, model._offsets[j] + zc[j], :]
        with np.errstate(invalid="ignore"):
            ell = logsumexp(A + B[:, None, :], axis=-1) - den  # [H, G+1]
            d = ell[:, 1:] - ell[:, :1]
        d[~np.isfinite(den[:, 1:])] = -np.inf  # candidate impossible under the model
        out[:, l, :] = d
    return out


def neighbourhood_size(model) -> int:
    """The work of :meth:`DPMPM.neighbourhood_size` (documented there)."""
    model._check_fitted()
    s_mask, _ = model._masks()
    return int(1 + np.sum(model._d[s_mask] - 1))


def neighbourhood_loglik(
    model,
    records: pd.DataFrame,
    *,
    draw_indices: Any = None,
    chunk_size: int | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The work of :meth:`DPMPM.neighbourhood_loglik` (documented there)."""
    import bayes_risk.models.dpmpm.kernels as kern
    from bayes_risk._numeric import threaded_ufunc

    model._check_fitted()
    codes = model._encode(records)
    if np.any(codes == -1):
        i, j = np.argwhere(codes == -1)[0]
        raise SchemaError(
            f"records: column {model.schema_.names[j]!r} is missing in row {i}; candidate "
            "sets need complete records.",
            code="MISSING_VALUES",
        )
    if np.any(codes == _UNKNOWN):
        i, j = np.argwhere(codes == _UNKNOWN)[0]
        raise SchemaError(
            f"records: row {i} has a level of column {model.schema_.names[j]!r} the model was "
            "not fitted with.",
            code="TRUTH_OUTSIDE_SUPPORT",
        )
    lp, lpi, ph = model._sub(draw_indices)
    s_mask, _ = model._masks()
    syn_cols = np.flatnonzero(s_mask).astype(np.int64)
    G = model.neighbourhood_size()
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
            np.ascontiguousarray(codes[a:b]), syn_cols, model._d, model._offsets, lp, ph, lpi,
            dest,
        )
        # the kernel leaves probabilities (logged = False) for numpy's vectorised log
        keep = dest[logged] if logged.any() else None
        # (log-space rows give nan here; they are restored just below)
        threaded_ufunc(np.log, dest, out=dest, divide="ignore", invalid="ignore")
        if keep is not None:
            dest[logged] = keep
    if model._zeros is not None:  # zero on S, normalised over the allowed cells
        import bayes_risk.models.dpmpm.zeros_loglik as zl

        zl.neighbourhood(model, codes, syn_cols, out, lpi, ph)
    return out


def class_probabilities(model, records: pd.DataFrame, *, draw_indices: Any = None) -> np.ndarray:
    """The work of :meth:`DPMPM.class_probabilities` (documented there)."""
    model._check_fitted()
    codes = model._encode(records)
    lp, lpi, _ = model._sub(draw_indices)
    logw = model._class_logw(codes, lp, lpi, np.ones(codes.shape[1], bool))
    from bayes_risk._numeric import normalise_log

    return normalise_log(logw, axis=-1)


def class_logw(model, codes, lp, lpi, use) -> np.ndarray:
    """``[H, n, K]`` of ``log π_k + Σ_{j∈use, observed} log φ_kj[y_ij]``."""
    H, K = lpi.shape
    out = np.broadcast_to(lpi[:, None, :], (H, codes.shape[0], K)).copy()
    for j in np.flatnonzero(use):
        c = codes[:, j]
        ok = c >= 0
        out[:, ok, :] += lp[:, model._offsets[j] + c[ok], :]
        bad = c == _UNKNOWN
        out[:, bad, :] = -np.inf
    return out
