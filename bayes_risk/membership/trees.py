"""Membership risk of a CART release under the plug-in likelihood.

See :doc:`/methods/membership`, CART releases: the plug-in ratio.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._numeric import logsumexp
from bayes_risk.attribute.diagnostics import kish_ess
from bayes_risk.contract import capabilities
from bayes_risk.exceptions import NotSupportedError
from bayes_risk.membership import estimator as _est

__all__ = ["is_tree_model", "check_tree_model", "tree_plugin", "tree_synthesizer",
           "unsynthesized_values", "population_support", "population_routes",
           "population_log_weights", "tree_log_lr"]


def is_tree_model(model: Any) -> bool:
    """A tree synthesizer or its plug-in likelihood (no posterior draws)."""
    info = capabilities(model)
    return bool(info.plugin_likelihood) or ("plugin" in info.likelihoods
                                            and "record" not in info.likelihoods)


def tree_synthesizer(model: Any) -> Any:
    """The synthesizer of a plug-in likelihood (bound to its fitted synthesizer), or ``model``."""
    syn = getattr(model, "synthesizer", None)
    return model if syn is None else syn


def check_tree_model(model: Any) -> None:
    """Refuse the tree releases whose plug-in membership ratio is not derived
    (``MEMBERSHIP_MODEL_UNSUPPORTED``, ``MEMBERSHIP_PARTIAL_SYNTHESIS``).
    """
    name = type(model).__name__
    # the synthesizer says whether its plug-in is exact given the splits (CART) or an
    # approximation (random forest); other plug-in models say neither
    exact = getattr(tree_synthesizer(model), "exact_plugin", None)
    if exact is None:
        raise NotSupportedError(
            f"{name} has a plug-in likelihood, but the membership ratio is derived for CART "
            "releases only (methods, Membership disclosure risk, CART releases).",
            code="MEMBERSHIP_MODEL_UNSUPPORTED")
    if not exact:
        raise NotSupportedError(
            f"{name} is a plug-in likelihood of a random-forest synthesizer: its plug-in is "
            "approximate (each tree's bootstrap sample is marginalised by a Poisson "
            "approximation, methods, Tree synthesizers), so a membership ratio built on it "
            "could not be checked against exact values; membership risk of tree releases is "
            "derived for CART (methods, Membership disclosure risk, CART releases). Use the "
            "distance baseline (bayes_risk.membership.dcr.closest_distance) for a forest.",
            code="MEMBERSHIP_MODEL_UNSUPPORTED")
    syn = tree_synthesizer(model)
    if getattr(syn, "schema_", None) is None:
        raise NotSupportedError(f"{name} is not fitted; fit it before membership_risk.",
                                code="MEMBERSHIP_MODEL_UNSUPPORTED")
    if getattr(syn, "smoothed_", None):
        raise NotSupportedError(
            f"{name} smooths the numeric column(s) {list(syn.smoothed_)} with a kernel: the "
            "plug-in membership ratio needs the synthesizer's predictive of a population record "
            "in a smoothed node (a kernel mixture over bootstrap weights), which is not "
            "implemented and checked yet (methods, Membership disclosure risk, CART releases). "
            "Refit without smoothing to compute it, or use the distance baseline.",
            code="MEMBERSHIP_MODEL_UNSUPPORTED")
    if getattr(syn, "missing_", None):
        raise NotSupportedError(
            f"{name} was fitted to data with missing values (columns "
            f"{sorted(syn.missing_)}): the plug-in holds a record's missingness at the target's, "
            "while a population record in the slot has its own; the membership ratio is derived "
            "for complete data only (methods, Membership disclosure risk, CART releases).",
            code="MEMBERSHIP_MODEL_UNSUPPORTED")
    if getattr(syn, "unroutable", "climb") != "climb":
        raise NotSupportedError(
            f"{name} routes unroutable records at random (unroutable='random_descent'); the "
            "plug-in likelihood is defined for unroutable='climb' only.",
            code="MEMBERSHIP_MODEL_UNSUPPORTED")
    if not np.all(syn.records_):
        raise NotSupportedError(
            f"the release synthesizes selected records only ({name} fitted with records=...): a "
            "record left unsynthesized is released whole, and the ratio needs the selection rule "
            "as a function of the data (methods, Membership disclosure risk, Partially synthetic "
            "releases).",
            code="MEMBERSHIP_PARTIAL_SYNTHESIS")


def tree_plugin(model: Any, original: pd.DataFrame) -> Any:
    """The CART plug-in likelihood of ``model`` (a fitted CARTSynthesizer, or its plug-in)."""
    return model if tree_synthesizer(model) is not model else model.plugin_likelihood(original)


def unsynthesized_values(plugin: Any, i: int) -> dict[str, np.ndarray]:
    """Record ``i``'s encoded unsynthesized values ``r`` (one-element arrays), shown in slot
    ``i``."""
    values = plugin.donor_trees().values
    return {c: values[c][[i]] for c in plugin.schema_.unsynthesized}


def population_support(plugin: Any, limit: float,
                       given: dict[str, np.ndarray] | None = None,
                       ) -> tuple[dict[str, np.ndarray], np.ndarray] | None:
    """Every record ``q(· | y)`` (or ``q(· | r, y)``) can produce, with ``log q``; ``None`` past
    ``limit``.
    """
    donors = plugin.donor_trees()
    vals: dict[str, np.ndarray] = dict(given or {})
    logq = np.zeros(1)
    for col in donors.visit_sequence:
        tree = donors.trees[col]
        node = donors.route(col, vals, logq.size)
        parts, vparts, lparts = [], [], []
        for r in range(logq.size):
            d = tree.y_sorted[tree.node_start[node[r]]:tree.node_stop[node[r]]]
            u, cnt = np.unique(d, return_counts=True)
            parts.append(np.full(u.size, r))
            vparts.append(u.astype(np.float64))
            lparts.append(logq[r] + np.log(cnt) - np.log(d.size))
        rep = np.concatenate(parts)
        if rep.size > limit:
            return None
        vals = {c: v[rep] for c, v in vals.items()}
        vals[col] = np.concatenate(vparts)
        logq = np.concatenate(lparts)
    return vals, logq


def population_routes(plugin: Any, vals: dict[str, np.ndarray]) -> dict[str, tuple[Any, ...]]:
    """Per tree: each encoded record's node, the node's donors with its value, and the node's
    number of donors."""
    S = len(next(iter(vals.values())))
    out = {}
    donors = plugin.donor_trees()
    for col in donors.visit_sequence:
        tree = donors.trees[col]
        node = donors.route(col, vals, S)
        c = [np.count_nonzero(tree.y_sorted[tree.node_start[u]:tree.node_stop[u]] == v)
             for u, v in zip(node, vals[col], strict=True)]
        out[col] = (node, np.asarray(c, dtype=np.float64),
                    (tree.node_stop[node] - tree.node_start[node]).astype(np.float64))
    return out


def population_log_weights(plugin: Any, vals: dict[str, np.ndarray],
                           routes: dict[str, tuple[Any, ...]], i: int,
                           ) -> tuple[np.ndarray, np.ndarray]:
    """``log q(x'_s | y)`` and ``log q(x'_s | y_{-i})`` of encoded records: per tree the share
    of the node's donors with the record's value, with and without record ``i``."""
    S = len(next(iter(vals.values())))
    lq = np.zeros(S)
    lq_i = np.zeros(S)
    donors = plugin.donor_trees()
    for col, (node, c, n) in routes.items():
        tree = donors.trees[col]
        pos = int(donors.positions[col][i])
        inside = (tree.node_start[node] <= pos) & (pos < tree.node_stop[node])
        same = inside & (vals[col] == donors.values[col][i])
        n_i = n - inside
        with np.errstate(divide="ignore"):
            lq += np.log(c) - np.log(n)
            lq_i += np.where(n_i > 0, np.log(c - same) - np.log(np.maximum(n_i, 1)), -np.inf)
    return lq, lq_i


def _decode(plugin: Any, vals: dict[str, np.ndarray]) -> pd.DataFrame:
    """Encoded records as a table of the synthesized columns' values (level labels)."""
    out = {}
    for c in plugin.schema_.synthesized:
        v = vals[c]
        spec = plugin.schema_[c]
        if spec.is_categorical:
            out[c] = pd.Categorical(np.asarray(spec.levels, dtype=object)[v.astype(np.int64)],
                                    categories=list(spec.levels))
        else:
            out[c] = v
    return pd.DataFrame(out)


def _normaliser(L: np.ndarray, log_w: np.ndarray, exact: bool = False,
                ) -> tuple[float, float, float, float]:
    """``log Σ_s w_s e^{L_s} / Σ_s w_s`` with its k̂, Kish ESS and delta-method standard error
    (an exact sum: no k̂ or ESS, standard error 0)."""
    log_num = logsumexp(log_w + L)
    log_den = logsumexp(log_w)
    log_d = float(log_num - log_den)
    if exact:
        return log_d, float("nan"), float("nan"), 0.0
    if not np.isfinite(log_d):
        return log_d, float("nan"), float("nan"), float("nan")
    a = log_w + L
    k = float(_est.tail_khat(a[None, :])[0]) if a.size > 30 else float("nan")
    ess = float(kish_ess(a[None, :], axis=1)[0])
    wt = np.exp(log_w - log_den)  # normalised weights
    f = np.exp(L - log_num + log_den)  # e^{L_s} / D, mean 1 under the weights
    se = float(np.sqrt(np.sum(wt**2 * (f - 1.0) ** 2)))
    return log_d, k, ess, se


def tree_log_lr(plugin: Any, datasets: list[pd.DataFrame], targets: pd.DataFrame, slots: np.ndarray,
                population: Any, exact: bool, *, match: np.ndarray | None = None,
                slot_cells: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Each target's log membership ratio under the plug-in and its slot's normaliser, from
    ``population`` rows (or per ``slot_cells`` cell) or, with ``exact``, the enumerated support;
    targets not in ``match`` get ``-inf``. Returns ``log_lr``, ``log_normaliser``,
    ``normaliser_khat``, ``normaliser_ess``, ``normaliser_mcse`` and ``slot_revealed``.
    """
    cols = list(plugin.schema_.synthesized)
    us = list(plugin.schema_.unsynthesized)
    T = len(targets)
    match = np.ones(T, dtype=bool) if match is None else np.asarray(match, dtype=bool)
    cells = np.zeros(T, dtype=np.int64) if slot_cells is None else np.asarray(slot_cells)
    # the population records of one cell of the unsynthesized columns (one cell when there is
    # none): their values, encoded values and routes do not depend on the slot
    per_cell: dict[int, tuple[pd.DataFrame, dict[str, np.ndarray], dict[str, Any]]] = {}

    def population_of(key: int, i: int) -> tuple[Any, ...]:
        if key not in per_cell:
            given = unsynthesized_values(plugin, i)
            if exact:
                support = population_support(plugin, np.inf, given)
                assert support is not None
                pvals, _ = support
                prows = _decode(plugin, pvals)
            else:
                rows = population[key] if us else population
                prows = rows[cols].reset_index(drop=True)
                pvals = plugin.donor_trees().encode(prows, cols)
                pvals.update({c: np.repeat(v, len(prows)) for c, v in given.items()})
            per_cell[key] = (prows, pvals, population_routes(plugin, pvals))
        return per_cell[key]

    out = {k: np.full(T, np.nan) for k in ("log_lr", "log_normaliser", "normaliser_khat",
                                           "normaliser_ess", "normaliser_mcse")}
    out["log_lr"][~match] = -np.inf  # excluded exactly by the unsynthesized values
    out["slot_revealed"] = np.zeros(T, dtype=bool)
    tcols = targets[cols].reset_index(drop=True)
    for i in np.unique(slots):
        at_all = np.flatnonzero(slots == i)
        at = at_all[match[at_all]]
        if not at.size:
            continue
        prows, pvals, routes = population_of(int(cells[at[0]]), int(i))
        S = len(prows)
        cand = pd.concat([prows[cols], tcols.iloc[at]], ignore_index=True)
        # one call: the constant the plug-in leaves out is common to all its candidates
        ll = np.asarray(plugin.plugin_loglik(int(i), cand, datasets), dtype=np.float64)
        L = ll.sum(axis=0)  # the m datasets' bootstraps are independent given the data
        L_pop, L_t = L[:S], L[S:]
        lq, lq_i = population_log_weights(plugin, pvals, routes, int(i))
        log_w = lq_i if exact else lq_i - lq  # exact: q(x'|y_{-i}); sampled: its IS weight
        log_d, k, ess, se = _normaliser(L_pop, log_w, exact)
        revealed = log_d == -np.inf
        with np.errstate(invalid="ignore"):
            # a revealed slot: +inf for a target that can produce the release, 0 for one that
            # cannot (methods page); both exact
            lr = np.where(revealed & (L_t == -np.inf), -np.inf, L_t - log_d)
        out["log_lr"][at] = lr
        out["log_normaliser"][at_all] = log_d
        out["normaliser_khat"][at_all] = k
        out["normaliser_ess"][at_all] = ess
        out["normaliser_mcse"][at_all] = se if not revealed else 0.0
        out["slot_revealed"][at_all] = revealed
    return out
