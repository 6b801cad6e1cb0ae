"""Plug-in likelihood of a fitted CART synthesizer for attribute risk (SPEC §2.10, §3.4.4, §3.4.6).

Importance sampling over Θ is not available for tree synthesizers: their synthetic values are
resampled confidential values. With the fitted tree structure treated as known (``S_meta``: the
split rules, not the leaf values — Wang & Reiter's "high-risk" assumption), the synthetic values
routed to a leaf are a Pólya-urn sequence given the leaf's donor values (per-leaf Bayesian
bootstrap), so

    log p(Z_(l) | y*, y_{-i}) = Σ_v Σ_nodes log Pólya(donors of node | synthetic values in node)

in closed form. A candidate ``y*`` changes (a) record ``i``'s own donor value in every node that
contains it, for the varying columns, and (b) the node record ``i`` belongs to in each later tree
that uses a varying column as predictor (its confidential predictor vector is re-routed through
the fixed splits). Only nodes containing record ``i`` before or after the change are recomputed.

Supported: ``donor="bayes_bootstrap"`` (Pólya) and ``donor="uniform"`` (multinomial with the donor
frequencies), ``unroutable="climb"``, columns **without** kernel smoothing. Not supported (a clear
error is raised): smoothed columns (SPEC §3.4.5 needs Monte Carlo over bootstrap weights) and
``unroutable="random_descent"`` (random routing would have to be marginalised).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import gammaln

from bayes_risk.exceptions import ValidationError

__all__ = ["CARTPlugin"]


def _polya(donors: Counter, syn: Counter, uniform: bool) -> float:
    n_l = sum(donors.values())
    u_l = sum(syn.values())
    if u_l == 0:
        return 0.0
    if n_l == 0:
        return float("-inf")
    if any(donors.get(v, 0) == 0 for v, s in syn.items() if s > 0):
        return float("-inf")
    if uniform:  # each routed record copies a donor chosen uniformly: multinomial sequence
        return float(sum(s * (np.log(donors[v]) - np.log(n_l)) for v, s in syn.items()))
    out = gammaln(n_l) - gammaln(n_l + u_l)
    for v, s in syn.items():
        out += gammaln(donors[v] + s) - gammaln(donors[v])
    return float(out)


class CARTPlugin:
    """Adapter giving a fitted :class:`~bayes_risk.models.cart.CARTSynthesizer` the plug-in
    likelihood ``plugin_loglik`` used by :func:`bayes_risk.attribute_risk` (SPEC §2.10).

    Parameters
    ----------
    synthesizer : CARTSynthesizer
        Fitted on ``original`` (same rows, same order).
    original : DataFrame
        The confidential data the synthesizer was fitted to.

    Attributes
    ----------
    model_class : "O"
        Synthetic values depend on the record's own confidential values.
    schema_ : Schema
        The synthesizer's schema (synthesized columns = the intruder's unknowns).

    Raises
    ------
    ValidationError
        For smoothed columns, random-descent routing or an unfitted synthesizer.

    Examples
    --------
    >>> res = attribute_risk(CARTPlugin(cart, df), df, syn)  # doctest: +SKIP
    """

    model_class = "O"
    ratio_form = "joint"
    plugin = True

    def __init__(self, synthesizer: Any, original: pd.DataFrame) -> None:
        from bayes_risk.models.base import check_is_fitted

        check_is_fitted(synthesizer, "trees_")
        if getattr(synthesizer, "smoothed_", None):
            raise ValidationError(
                f"columns {sorted(synthesizer.smoothed_)} are kernel-smoothed: their plug-in "
                "likelihood needs Monte Carlo over the bootstrap weights (SPEC §3.4.5), which "
                "is not implemented; refit without smoothing for attribute risk."
            )
        if synthesizer.unroutable != "climb":
            raise ValidationError(
                "unroutable='random_descent' routes records at random; the plug-in likelihood is "
                "implemented for unroutable='climb' only."
            )
        if len(original) != synthesizer.n_records_:
            raise ValidationError(
                f"original has {len(original)} rows; the synthesizer was fitted to "
                f"{synthesizer.n_records_}."
            )
        self.synthesizer = synthesizer
        self.schema_ = synthesizer.schema_
        self.original = original.reset_index(drop=True)
        self._uniform = synthesizer.donor == "uniform"
        self._vals = self._values(self.original)
        # parent of every node, per tree (root has -1)
        self._parent: dict[str, np.ndarray] = {}
        for col, tree in synthesizer.trees_.items():
            par = np.full(tree.n_nodes, -1, dtype=np.int64)
            for k in range(tree.n_nodes):
                if tree.left[k] != -1:
                    par[tree.left[k]] = k
                    par[tree.right[k]] = k
            self._parent[col] = par
        self._cache: dict[int, Any] = {}
        self._cache_owner: Any = None

    # ------------------------------------------------------------------ helpers
    def _values(self, df: pd.DataFrame) -> dict[str, np.ndarray]:
        from bayes_risk.models._trees import column_codes

        out = {}
        for c in self.schema_.names:
            if self.schema_[c].is_categorical:
                out[c] = column_codes(df, self.schema_, c)
            else:
                out[c] = df[c].to_numpy(dtype=np.float64)
        return out

    def _design(self, col: str, values: dict[str, np.ndarray], rows: np.ndarray):
        tree = self.synthesizer.trees_[col]
        preds = self.synthesizer.predictors_[col]
        if preds:
            return tree.design.matrix([values[p][rows] for p in preds])
        return np.zeros((rows.size, 1), dtype=np.float32), np.zeros((rows.size, 0), dtype=np.int64)

    def _path(self, col: str, node: int) -> list[int]:
        par = self._parent[col]
        out = []
        while node != -1:
            out.append(int(node))
            node = int(par[node])
        return out

    def _dataset_state(self, li: int, z: pd.DataFrame) -> dict[str, Any]:
        """Per tree: synthetic value counts per used node, donor counts, base log-likelihood."""
        if li in self._cache:
            return self._cache[li]
        syn = self.synthesizer
        sel = np.flatnonzero(syn.records_)
        zv = self._values(z.reset_index(drop=True))
        state: dict[str, Any] = {}
        for col in syn.visit_sequence_:
            tree = syn.trees_[col]
            X, codes = self._design(col, zv, sel)
            node, _ = tree.route(X, codes, "climb", None)
            syn_counts: dict[int, Counter] = {}
            for u in np.unique(node):
                syn_counts[int(u)] = Counter(zv[col][sel[node == u]].tolist())
            donors = {
                u: Counter(tree.y_sorted[tree.node_start[u] : tree.node_stop[u]].tolist())
                for u in syn_counts
            }
            base = {u: _polya(donors[u], syn_counts[u], self._uniform) for u in syn_counts}
            state[col] = (syn_counts, donors, base)
        self._cache[li] = state
        return state

    # ------------------------------------------------------------------ protocol
    def plugin_loglik(
        self, record: int, candidates: pd.DataFrame, datasets: Sequence[pd.DataFrame]
    ) -> np.ndarray:
        """``[m, G]`` log-likelihood of each dataset under each candidate (up to a constant).

        Parameters
        ----------
        record : int
            Row position of the target record.
        candidates : DataFrame
            ``G`` rows over some synthesized columns (decoded values).
        datasets : sequence of DataFrame
        """
        syn = self.synthesizer
        if datasets is not self._cache_owner:  # per-dataset routing is cached for one release
            self._cache = {}
            self._cache_owner = datasets
        i = int(record)
        cand_vals = self._values(self._candidate_rows(i, candidates))
        G = len(candidates)
        out = np.zeros((len(datasets), G))
        varying = set(candidates.columns)
        for li, z in enumerate(datasets):
            state = self._dataset_state(li, z)
            for col in syn.visit_sequence_:
                tree = syn.trees_[col]
                syn_counts, donors, base = state[col]
                pos = int(np.flatnonzero(tree.donor_rows == i)[0])
                old_nodes = [
                    u for u in range(tree.n_nodes) if tree.node_start[u] <= pos < tree.node_stop[u]
                ]
                preds = syn.predictors_[col]
                reroute = any(p in varying for p in preds)
                if reroute:
                    X, codes = self._design(col, cand_vals, np.arange(G))
                    new_leaf, _ = tree.route(X, codes, "climb", None)
                old_v = self._vals[col][i]
                for g in range(G):
                    new_v = cand_vals[col][g]
                    new_nodes = self._path(col, int(new_leaf[g])) if reroute else old_nodes
                    if new_v == old_v and set(new_nodes) == set(old_nodes):
                        continue
                    delta = 0.0
                    for u in set(old_nodes) | set(new_nodes):
                        if u not in syn_counts:
                            continue  # no synthetic record routed there: factor 1 either way
                        d = Counter(donors[u])
                        if u in old_nodes:
                            d[old_v] -= 1
                        if u in new_nodes:
                            d[new_v] += 1
                        d = Counter({k: v for k, v in d.items() if v > 0})
                        delta += _polya(d, syn_counts[u], self._uniform) - base[u]
                    out[li, g] += delta
        return out

    def _candidate_rows(self, i: int, candidates: pd.DataFrame) -> pd.DataFrame:
        rows = self.original.iloc[[i] * len(candidates)].reset_index(drop=True)
        for c in candidates.columns:
            v = candidates[c].to_numpy()
            if isinstance(rows[c].dtype, pd.CategoricalDtype):
                rows[c] = pd.Categorical(v, dtype=rows[c].dtype)
            else:
                try:
                    rows[c] = pd.Series(v, dtype=rows[c].dtype)
                except (TypeError, ValueError):
                    rows[c] = pd.Series(v)
        return rows
