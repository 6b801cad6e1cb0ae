"""Stage 3 of :func:`bayes_risk.membership.membership_risk` (the Bayesian ratio): the refits, the
leave-one-out log predictives, the population normalisers, the selection and the flags."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.attribute.refits import fit_refits, given_refits
from bayes_risk.exceptions import arg_name
from bayes_risk.membership import estimator as _est
from bayes_risk.membership import partial as _partial
from bayes_risk.membership.plan import conditional_population_rows, population_rows

__all__ = ["fit_posteriors", "log_predictives", "diagnostics", "target_flags", "selection_match"]


def fit_posteriors(model: Any, orig: pd.DataFrame, datasets: list[pd.DataFrame],
                augmented: Sequence[Any] | None, rng: np.random.Generator,
                progressbar: bool = False, cache: Path | None = None) -> list[Any]:
    """The model and one augmented refit per synthetic dataset (given, cached or fitted here)."""
    m = len(datasets)
    if augmented is None:
        augmented = fit_refits(model, orig, datasets, rng.spawn(m), progressbar=progressbar,
                               cache=cache)
    else:
        augmented = given_refits(augmented, m)
    return [model, *augmented]


#: bytes a chunk of targets' temporaries may take (fewer when the memory budget is smaller)
CHUNK_BYTES = 256 * 2**20
#: arrays of H doubles a target holds at once in a chunk (measured: 20,000 targets, H = 1,000
#: in one chunk peaked 1.2 GB, about 7.3 such arrays, above the kept slot log-likelihoods):
#: its log-likelihood, its slot's, the ratios and weights, logsumexp's and k-hat's copies
_TARGET_ARRAYS = 10


def log_predictives(posteriors: list[Any], targets: pd.DataFrame, slot_rows: pd.DataFrame,
                     slot_inv: np.ndarray, khat: bool) -> tuple[Any, list[Any], list[np.ndarray],
                                                                list[np.ndarray],
                                                                list[np.ndarray]]:
    """Each posterior's LOO log predictives of the targets, slot log-likelihoods, k-hats, ESS;
    the targets and slots evaluated in chunks sized from the memory budget beside the slot
    log-likelihoods kept (the numbers do not depend on the chunks)."""
    bounds = _chunks(posteriors, len(targets), len(slot_rows))
    lps: list[_est.LogPredictive] = []
    slot_lls = []
    for post in posteriors:
        sll = None
        for a, b in _chunk_bounds(len(slot_rows), bounds[1]):
            part = post.record_loglik(slot_rows.iloc[a:b])
            if sll is None:
                sll = np.empty((part.shape[0], len(slot_rows)), dtype=part.dtype)
            sll[:, a:b] = part
        slot_lls.append(sll)
        value, k, ess = (np.empty(len(targets)) for _ in range(3))
        for a, b in _chunk_bounds(len(targets), bounds[0]):
            lp = _est.loo_log_predictive(post.record_loglik(targets.iloc[a:b]),
                                         sll[:, slot_inv[a:b]], khat=khat)
            value[a:b], k[a:b], ess[a:b] = lp.value, lp.khat, lp.ess
        lps.append(_est.LogPredictive(value=value, khat=k, ess=ess))
    return (lps[0], lps[1:], slot_lls, [lp.khat for lp in lps], [lp.ess for lp in lps])


def _chunks(posteriors: list[Any], T: int, U: int) -> tuple[int, int]:
    """Targets and slot rows per chunk: the slots' log-likelihoods under every posterior are
    kept (the normalisers read them), checked with one chunk's work and reserved first."""
    from bayes_risk._memory import check_memory, working_bytes

    H = max(max(int(getattr(post, "n_draws", 1) or 1) for post in posteriors), 1)
    kept = 8.0 * H * U * len(posteriors) + 24.0 * T * len(posteriors)
    per = 8.0 * H * _TARGET_ARRAYS
    check_memory(kept + 2 * per, f"{arg_name('records')}, {arg_name('holdout')} or the draws",
                 what=f"the log-likelihoods of {U:,} slots under {len(posteriors)} posteriors "
                      f"({H:,} draws) and one chunk of targets")
    size = max(2, int(working_bytes(CHUNK_BYTES, reserve=kept) // per))
    # a slot row holds its log-likelihood and the model's temporaries (about 4 arrays)
    return size, max(2, int(working_bytes(CHUNK_BYTES, reserve=kept) // (4 * 8.0 * H)))


def _chunk_bounds(n: int, size: int) -> list[tuple[int, int]]:
    """``[a, b)`` chunks of ``size`` covering ``n``; never one of a single row beside others
    (a single row's sums over the draws would be added in another order)."""
    starts = list(range(0, n, size)) or [0]  # no rows: one empty call, as a whole one
    if len(starts) > 1 and n - starts[-1] == 1:
        starts.pop()
    return list(zip(starts, [*starts[1:], n], strict=True))


def _normalisers(model: Any, posteriors: list[Any], orig: pd.DataFrame, uslots: np.ndarray,
                 slot_inv: np.ndarray, slot_lls: list[np.ndarray], match: np.ndarray,
                 orig_keys: np.ndarray | None, normaliser_draws: int, rng: np.random.Generator,
                 schema: Any, us: list[str], rule: Any = None, rows_: np.ndarray | None = None,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The population normaliser of every target's slot, with its k-hat and ESS."""
    _, first, rec_inv = np.unique(
        pd.util.hash_pandas_object(orig.iloc[uslots], index=False).to_numpy(),
        return_index=True, return_inverse=True)
    back = rec_inv.ravel()[slot_inv]
    ld = np.full(len(first), np.nan)
    nk = np.full(len(first), np.nan)
    ne = np.full(len(first), np.nan)
    if rows_ is not None and rows_.size == 0:  # nothing synthesized: every slot released whole
        return ld[back], nk[back], ne[back]
    if not us:
        prow = population_rows(model, normaliser_draws, rng, rows_)
        groups = {None: (np.arange(len(first)), prow)}
    else:
        rec_key = orig_keys[uslots[first]]
        need = np.unique(rec_key[np.unique(back[match])]) if match.any() else []
        rows = conditional_population_rows(model, orig, orig_keys, list(need),
                                            normaliser_draws, rng, schema, us, rows_)
        groups = {k: (np.flatnonzero(rec_key == k), rows[k]) for k in need}
    for sel, prow in groups.values():
        pop_ll = [post.record_loglik(prow) for post in posteriors]
        log_s = None
        if rule is not None and rule.kind == "rule":
            log_s = np.where(rule.evaluate(prow, "the population draws"), 0.0, -np.inf)
        ld[sel], nk[sel], ne[sel] = _est.log_normaliser(
            pop_ll, [sl[:, first[sel]] for sl in slot_lls], log_select=log_s)
    return ld[back], nk[back], ne[back]


def diagnostics(match: np.ndarray, log_lr: np.ndarray, khats: list[np.ndarray],
                 ess: list[np.ndarray], norm_khat: np.ndarray, norm_ess: np.ndarray, *, H: int,
                 normalised: bool, normaliser_draws: int, khat: bool, partial: bool,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[float, float]]:
    """Each target's worst k-hat, smallest ESS and flags, and the thresholds for ``H`` draws."""
    khat_thr, ess_thr = _est.thresholds(H)
    khat_max = np.max(np.stack(khats), axis=0)
    ess_min = np.min(np.stack(ess), axis=0)
    if partial:  # no Monte Carlo behind an excluded target
        khat_max = np.where(match, khat_max, np.nan)
        ess_min = np.where(match, ess_min, np.nan)
    norm_thr = _est.thresholds(normaliser_draws)
    flags = target_flags(match, log_lr, khat_max if khat else None, ess_min, norm_khat, norm_ess,
                   khat_thr, ess_thr, norm_thr if normalised else None)
    return khat_max, ess_min, flags, (khat_thr, ess_thr)


def target_flags(match: np.ndarray, log_lr: np.ndarray, khat_max: np.ndarray | None,
           ess_min: np.ndarray, norm_khat: np.ndarray, norm_ess: np.ndarray, khat_thr: float,
           ess_thr: float, norm_thr: tuple[float, float] | None) -> list[list[str]]:
    """Each target's flags (methods, Membership disclosure risk: diagnostics)."""
    flags: list[list[str]] = [[] for _ in range(len(match))]
    for t in range(len(match)):
        if not match[t]:
            continue
        if not np.isfinite(log_lr[t]):
            flags[t].append("LIKELIHOOD_UNDEFINED")
        if khat_max is not None and khat_max[t] > khat_thr:
            flags[t].append("KHAT_HIGH")
        if ess_min[t] < ess_thr:
            flags[t].append("LOW_ESS")
        # an ESS of nan: no population draw the selection rule selects
        if norm_thr is not None and (norm_khat[t] > norm_thr[0]
                                     or not norm_ess[t] >= norm_thr[1]):
            flags[t].append("NORMALISER_UNSTABLE")
    return flags


def selection_match(rule: Any, selected: np.ndarray, targets: pd.DataFrame,
                     orig: pd.DataFrame, slots: np.ndarray, schema: Any, match: np.ndarray,
                     ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """What the selection seen says about each target."""
    in_sel = selected[slots]
    cols = list(schema.names)
    slot_key, target_key = _partial.cell_keys([orig.iloc[slots], targets], schema, cols,
                                              reference=orig)
    released_whole = ~in_sel & (target_key == slot_key) & (target_key >= 0)
    by_rule = rule.evaluate(targets, "the targets")
    new_match = match & in_sel & by_rule
    columns = {"slot_selected": in_sel, "released_whole": released_whole}
    if rule.kind == "rule":
        columns["selected_by_rule"] = by_rule
    return new_match, released_whole, columns
