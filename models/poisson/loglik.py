"""Likelihoods of :class:`~bayes_risk.models.PoissonMixture` (record, dataset and candidate
terms), documented on its methods."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

import bayes_risk.models.poisson.kernels as pk
from bayes_risk._constraints import Interval, Options, check_value
from bayes_risk.data.synthetic import SyntheticData, as_frames
from bayes_risk.exceptions import ValidationError
from bayes_risk.models._bayesian.design import NeighbourhoodUnavailable
from bayes_risk.models.poisson.fit import LATENT_GROUP
from bayes_risk.models.poisson.state import PoissonState


def record_loglik(state: PoissonState, records: pd.DataFrame, idx: np.ndarray) -> np.ndarray:
    """The work of :meth:`PoissonMixture.record_loglik` (documented there)."""
    y = state.counts(records, strict=False)
    with np.errstate(invalid="ignore"):  # a missing count (NaN) is summed out, not bad
        bad = np.any((y < 0) | (y % 1 > 0), axis=1)
    log_pi, lam = state.params(idx)
    out = pk.record_loglik(np.where(bad[:, None], 0.0, y), log_pi, lam)
    out[:, bad] = -np.inf  # impossible counts (a candidate grid may produce them)
    return out


def neighbourhood_unavailable() -> NeighbourhoodUnavailable:
    """Why :meth:`PoissonMixture.neighbourhood_loglik` is not defined (documented there)."""
    return NeighbourhoodUnavailable(
        "PoissonMixture models count columns, which have no one-variable-different "
        "neighbourhood (it is for categorical columns); build a candidate grid "
        "(docs: methods, Candidate sets) and call record_loglik on the candidate records "
        "instead.",
        code="WRONG_DTYPE"
    )


def synthetic_counts(state: PoissonState, synthetic: Any) -> list[np.ndarray]:
    """The modelled counts of each released dataset (checked, naming the dataset)."""
    frames = as_frames(synthetic)
    return [state.counts(f, name=f"synthetic dataset {l + 1}") for l, f in enumerate(frames)]


def resolve_memberships(state: PoissonState, memberships: Any, h: int, y: np.ndarray,
                        log_pi: np.ndarray, lam: np.ndarray) -> np.ndarray:
    n = y.shape[0]
    if isinstance(memberships, str):
        if memberships == "map":
            return pk.map_memberships(y, log_pi, lam)
        # 'stored': membership_mode, at the entry, refused every other word
        z = state.memberships_of(h)
        if z is None:
            raise ValidationError(
                "memberships='stored' needs the memberships recorded by the Gibbs "
                "sampler; this model has none (NUTS or external draws): use 'map'.",
                code="MODEL_UNSUITED"
            )
        return z
    z = np.asarray(memberships)
    if z.ndim == 2:
        z = z[h]
    if z.shape != (n,) or not np.issubdtype(z.dtype, np.integer):
        raise ValidationError(
            f"memberships given as an array must be integers of shape ({n},) or (H, {n})."
        )
    if z.min() < 0 or z.max() >= lam.shape[0]:
        raise ValidationError(f"memberships must lie in 0..{lam.shape[0] - 1}.")
    return z.astype(np.int64)


def membership_mode(state: PoissonState, memberships: Any) -> Any:
    if memberships is None:
        if state.variant == "mp":  # posterior_class: memberships are summed out exactly
            return "marginalised"
        return "generating" if state.has_memberships else "map"
    if isinstance(memberships, str) and memberships == "marginalised":
        if state.variant != "mp":
            raise ValidationError(
                "memberships='marginalised' applies to the posterior_class mode of MP only."
            )
        return memberships
    if isinstance(memberships, str):  # else an integer array, checked where it is read
        check_value(memberships, Options(("generating", "map", "stored"), listed=True),
                    "memberships (or an integer array)")
    return memberships


def sums_match(state: PoissonState, zvals: np.ndarray, y: np.ndarray, memb: np.ndarray,
               K: int) -> bool:
    for j in range(y.shape[1]):
        groups, ng = state.groups(y[:, j], memb, K)
        a = group_totals(zvals[:, j], groups, ng)
        b = group_totals(y[:, j], groups, ng)
        if np.any(np.abs(a - b) > 1e-9):
            return False
    return True


def generating_memberships(
    state: PoissonState, datasets: Any, zs: list[np.ndarray], y: np.ndarray
) -> list[np.ndarray]:
    """Memberships that generated each released dataset: those of ``draw_index`` (checked), else
    the first stored draw reproducing every group sum."""
    if not state.has_memberships:
        raise ValidationError(
            "memberships='generating' needs the memberships recorded by the Gibbs sampler; "
            "this model has none (NUTS or external draws): pass memberships='map' or an array.",
            code="MODEL_UNSUITED"
        )
    import hashlib

    stored = np.asarray(state.tree[LATENT_GROUP]["z"].values)
    stored = stored.reshape(-1, stored.shape[-1]).astype(np.int64)
    K = state.n_components
    hint = None
    if isinstance(datasets, SyntheticData) and datasets.draw_index is not None:
        hint = list(datasets.draw_index)
    # the engine asks once per record: remember the answer per (dataset, data) content
    cache = state.generating_cache
    ykey = hashlib.sha1(np.ascontiguousarray(y).tobytes()).hexdigest()
    out = []
    for l, zl in enumerate(zs):
        key = (ykey, hashlib.sha1(np.ascontiguousarray(zl).tobytes()).hexdigest())
        if key in cache:
            out.append(cache[key])
            continue
        found = None
        if hint is not None and 0 <= hint[l] < stored.shape[0]:
            h = hint[l]
            if state.variant == "mp" or sums_match(state, zl, y, stored[h], K):
                found = stored[h]
        if found is None and state.variant != "mp":
            for h in range(stored.shape[0]):
                if sums_match(state, zl, y, stored[h], K):
                    found = stored[h]
                    break
        if found is None:
            raise ValidationError(
                f"synthetic dataset {l + 1}: no stored draw's memberships reproduce its "
                "component totals (it was not synthesized by this model), or, for "
                "posterior_class, its draw_index is unknown; pass memberships='map' or an "
                "array.",
                code="RELEASE_NOT_REPRODUCED"
            )
        cache[key] = found
        out.append(found)
    return out


def class_o_loglik(state: PoissonState, zvals: np.ndarray, y: np.ndarray, memb: np.ndarray,
                   K: int) -> float:
    """Component-total log-likelihood of one synthetic dataset (Hu 2019 §3.3.3, MM/TCMM)."""
    tot = 0.0
    for j in range(y.shape[1]):
        groups, ng = state.groups(y[:, j], memb, K)
        totals = group_totals(y[:, j], groups, ng)
        tot += pk.groups_loglik(zvals[:, j], groups, totals)
        if tot == -np.inf:
            return tot
    return tot


def dataset_loglik(state: PoissonState, synthetic: Any, idx: np.ndarray, memberships: Any,
                   data: pd.DataFrame | None) -> np.ndarray:
    """The work of :meth:`PoissonMixture.dataset_loglik` (documented there); ``data``: the
    confidential table the model keeps."""
    zs = synthetic_counts(state, synthetic)
    log_pi, lam = state.params(idx)
    rows = state.rows
    if state.model_class == "P":
        return np.stack(
            [pk.record_loglik(z[rows], log_pi, lam).sum(axis=1) for z in zs], axis=1
        )
    y = confidential_counts(state, data)
    K = lam.shape[1]
    memberships = membership_mode(state, memberships)
    gen = (generating_memberships(state, synthetic, zs, y)
           if isinstance(memberships, str) and memberships == "generating" else None)
    out = np.empty((idx.size, len(zs)))
    if isinstance(memberships, str) and memberships == "marginalised":
        for r in range(idx.size):
            for l, z in enumerate(zs):
                out[r, l] = pc_terms(z[rows], y[rows], log_pi[r], lam[r]).sum()
        return out
    if gen is not None and state.variant != "mp":
        # given the memberships the MM/TCMM likelihood does not involve Θ_h
        for l, z in enumerate(zs):
            out[:, l] = class_o_loglik(state, z, y, gen[l], K)
        return out
    for r, h in enumerate(idx):
        memb_h = None if gen is not None else resolve_memberships(state,
            memberships, int(h), y, log_pi[r], lam[r])
        for l, z in enumerate(zs):
            memb = gen[l] if gen is not None else memb_h
            out[r, l] = o_loglik(state, z, y, memb, K, lam[r])
    return out


def pc_terms(z: np.ndarray, y: np.ndarray, log_pi: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Per-record ``log Σ_k p(k | y_i, Θ) Π_j Poisson(z_ij | λ_kj)`` (posterior_class, [n])."""
    from scipy.special import logsumexp as lse

    w = pk.class_log_weights(y, log_pi, lam)
    log_post = w - lse(w, axis=1, keepdims=True)
    pz = pk.class_log_weights(z, np.zeros(lam.shape[0]), lam)
    return lse(log_post + pz, axis=1)


def posterior_class_loglik(state: PoissonState, z: np.ndarray, memb: np.ndarray,
                           lam: np.ndarray) -> float:
    """``Σ_{i∈S} log Poisson(z_i | λ_{memb_i})`` over the synthesized records ``S``."""
    from scipy.stats import poisson

    rows = state.rows
    return float(poisson.logpmf(z[rows], lam[memb[rows]]).sum())


def confidential_counts(state: PoissonState, kept: pd.DataFrame | None,
                        data: pd.DataFrame | None = None) -> np.ndarray:
    """The confidential counts: of ``data`` when given (checked), else of ``kept``, the table
    the model keeps from fit."""
    if data is not None:
        return state.counts(data, name="data")
    if kept is None:
        raise ValidationError(
            "this needs the confidential data: pass data=... (class-O models keep it from "
            "fit; pass data= to from_posterior)."
        )
    return kept[state.columns].to_numpy(dtype=np.float64)


def candidate_dataset_loglik(state: PoissonState, record, candidates, synthetic,
                             idx: np.ndarray, memberships, data: pd.DataFrame | None
                             ) -> np.ndarray:
    """The work of :meth:`PoissonMixture.candidate_dataset_loglik` (documented there); ``data``:
    the confidential table the model keeps."""
    if state.model_class == "P":
        raise ValidationError(
            "candidate_dataset_loglik / own_record_delta apply to class-O models only (MM, "
            "TCMM, posterior_class); a class-P model uses record_loglik ratios.",
            code="MODEL_UNSUITED"
        )
    y = confidential_counts(state, data)
    record = record_position(state, record, y)
    cand = candidate_array(state, candidates, y[record])
    sel = state.synthesized_records
    if sel is not None and not sel[record]:
        # released unchanged: its value enters neither the synthesis nor the likelihood
        L = dataset_loglik(state, synthetic, idx, memberships, data)
        return np.repeat(L[:, :, None], cand.shape[0], axis=2)
    zs = synthetic_counts(state, synthetic)
    log_pi, lam = state.params(idx)
    memberships = membership_mode(state, memberships)
    gen = (generating_memberships(state, synthetic, zs, y)
           if isinstance(memberships, str) and memberships == "generating" else None)
    return replaced_dataset_loglik(state, zs, y, [(record, cand)], idx, log_pi, lam,
                                   memberships, gen)


def replaced_dataset_loglik(
    state: PoissonState, zs: list[np.ndarray], y: np.ndarray,
    replace: Sequence[tuple[int, np.ndarray]],
    idx: np.ndarray, log_pi: np.ndarray, lam: np.ndarray, mode: Any, gen: Any,
) -> np.ndarray:
    """``[H', m, G]`` class-O log-likelihood of each dataset with the records of ``replace``
    (pairs ``(record, candidates [G, p])``) set to their ``g``-th candidate (Hu 2019 §3.2.5);
    ``mode`` as :func:`membership_mode` returns it, ``gen`` the generating memberships."""
    K = lam.shape[1]
    G = replace[0][1].shape[0]
    rows = state.rows
    out = np.empty((idx.size, len(zs), G))
    if isinstance(mode, str) and mode == "marginalised":
        for r in range(idx.size):
            for l, z in enumerate(zs):
                t = pc_terms(z, y, log_pi[r], lam[r])
                base = t[rows].sum()
                for rec, _ in replace:
                    base = base - t[rec]
                own = sum(pc_terms(np.repeat(z[[rec]], G, axis=0), c, log_pi[r], lam[r])
                          for rec, c in replace)
                out[r, l, :] = base + own
        return out

    def replaced(g: int) -> np.ndarray:
        y2 = y.copy()
        for rec, c in replace:
            y2[rec] = c[g]
        return y2

    if gen is not None and state.variant != "mp":
        # given the memberships the MM/TCMM likelihood does not involve Θ_h
        for g in range(G):
            y2 = replaced(g)
            for l, z in enumerate(zs):
                out[:, l, g] = class_o_loglik(state, z, y2, gen[l], K)
        return out
    for r, h in enumerate(idx):
        memb_h = None if gen is not None else resolve_memberships(
            state, mode, int(h), y, log_pi[r], lam[r])
        for g in range(G):
            y2 = replaced(g)
            for l, z in enumerate(zs):
                memb = gen[l] if gen is not None else memb_h
                if isinstance(mode, str) and mode == "map":
                    memb = memb.copy()
                    for rec, c in replace:
                        memb[rec] = pk.map_memberships(c[g][None, :], log_pi[r], lam[r])[0]
                out[r, l, g] = o_loglik(state, z, y2, memb, K, lam[r])
    return out


def own_record_delta(state: PoissonState, record, candidates, synthetic, idx: np.ndarray,
                     memberships, data: pd.DataFrame | None) -> np.ndarray:
    """The work of :meth:`PoissonMixture.own_record_delta` (documented there); ``data``: the
    confidential table the model keeps."""
    sel = state.synthesized_records
    if sel is not None and state.model_class == "O":
        y = confidential_counts(state, data)
        pos = record_position(state, record, y)
        if not sel[pos]:
            G = candidate_array(state, candidates, y[pos]).shape[0]
            m = len(as_frames(synthetic))
            return np.zeros((idx.size, m, G))
    full = candidate_dataset_loglik(state, record, candidates, synthetic, idx, memberships, data)
    y = confidential_counts(state, data)
    pos = record_position(state, record, y)
    truth = candidate_dataset_loglik(state, pos, y[pos][None, :], synthetic, idx, memberships,
                                     data)
    with np.errstate(invalid="ignore"):
        d = full - truth
    both = np.isneginf(full) & np.isneginf(truth)
    d[both] = 0.0
    d[np.isneginf(truth) & np.isfinite(full)] = np.inf
    return d


def o_loglik(state: PoissonState, z, y, memb, K, lam) -> float:
    if state.variant == "mp":
        return posterior_class_loglik(state, z, memb, lam)
    return class_o_loglik(state, z, y, memb, K)


def record_position(state: PoissonState, record: Any, y: np.ndarray) -> int:
    """Row position of the target: an integer, or a row (Series) of the confidential data
    (located by its index label, checked against the data's values)."""
    n = y.shape[0]
    if isinstance(record, pd.Series):
        cols = state.columns
        try:
            vals = record[cols].to_numpy(dtype=np.float64)
        except (KeyError, TypeError, ValueError) as err:
            raise ValidationError(
                f"record given as a row must hold the modelled count columns {cols}."
            ) from err
        label = record.name
        if (isinstance(label, (int, np.integer)) and 0 <= int(label) < n
                and np.array_equal(y[int(label)], vals, equal_nan=True)):
            return int(label)
        same = (y == vals[None, :]) | (np.isnan(y) & np.isnan(vals)[None, :])  # missing alike
        hits = np.flatnonzero(np.all(same, axis=1))
        if hits.size == 1:
            return int(hits[0])
        raise ValidationError(
            "record given as a row could not be located in the confidential data (index "
            f"label {label!r}; {hits.size} rows with its values); pass its row position."
        )
    return check_value(record, Interval(int, 0, n - 1), "record")


def candidate_array(state: PoissonState, candidates: Any, truth: np.ndarray | None = None
                    ) -> np.ndarray:
    cols = state.columns
    if isinstance(candidates, pd.DataFrame):
        missing = [c for c in cols if c not in candidates.columns]
        if missing and truth is not None:
            # columns that do not vary keep the target's true values
            candidates = candidates.copy()
            for c in missing:
                candidates[c] = truth[cols.index(c)]
        return state.counts(candidates, name="candidates")
    a = np.asarray(candidates, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != len(cols):
        raise ValidationError(
            f"candidates must be a DataFrame or an array [G, {len(cols)}] over columns {cols}."
        )
    if np.any(a < 0) or np.any(a % 1 > 0):  # NaN (missing, summed out) passes
        raise ValidationError("candidates must be non-negative integer counts.")
    return a


def group_totals(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Sum of ``values`` per group ``0..n_groups-1``; records of group ``-1`` (not synthesized)
    are left out."""
    keep = np.asarray(groups) >= 0
    return np.bincount(np.asarray(groups)[keep], weights=np.asarray(values)[keep],
                       minlength=n_groups).astype(np.float64)
