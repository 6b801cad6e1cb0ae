"""Plug-in likelihood of a fitted CART synthesizer for attribute risk.
See :doc:`/methods/attribute`, Tree synthesizers: plug-in likelihoods.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from math import comb
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, check_value
from bayes_risk._memory import working_bytes
from bayes_risk._rng import RandomSeed, as_generator
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.trees.cart_polya import PolyaTables
from bayes_risk.models.trees.missing import design_inputs, kind_codes
from bayes_risk.models.trees.plugins._plugin_terms import (
    atom_hit,
    compositions,
    donor_terms,
    mc_difference_var,
    mc_node_loglik,
    mc_node_loglik_extra,
    mc_node_loglik_many,
)
from bayes_risk.models.trees.plugins.base import PluginBase

__all__ = ["CARTPlugin", "DonorTrees"]

_CACHE_BYTES = 256 << 20  # at most, count matrices and a release's node terms kept
#: a smoothed node's likelihood is exact (every bootstrap multiplicity vector) when there are at
#: most this many times ``n_bootstrap`` vectors: 7 donors (1,716 vectors) at the default 500
EXACT_FACTOR = 4
# candidate-node entries per slab of records in the batched likelihood (about 40 MB of
# [m, entries] float arrays at m = 5)
_SLAB_ROWS = 1 << 17
# log-kernel entries (candidate × synthetic value × donor) of the widened nodes computed at once
# (a few MB of float arrays)
_WIDENED_ENTRIES = 1 << 18


@dataclass(frozen=True)
class DonorTrees:
    """The fitted value trees of a CART release (:meth:`CARTPlugin.donor_trees`) for the
    membership ratio.

    Attributes
    ----------
    visit_sequence : tuple of str
        The synthesized columns in visit order.
    trees : mapping of str to fitted tree
        Each synthesized column's tree.
    values : mapping of str to ndarray
        Each column's encoded values of the original records ``[n]``.
    positions : mapping of str to ndarray
        Each record's position in the donor order of the column's tree (-1: not a donor).
    encode : callable
        ``encode(table, columns)``: the synthesizer's encoding of a table.
    design : callable
        ``design(column, values, rows)``: the design of encoded records in the column's tree.
    """

    visit_sequence: tuple[str, ...]
    trees: Mapping[str, Any]
    values: Mapping[str, np.ndarray]
    positions: Mapping[str, np.ndarray]
    encode: Callable[..., dict[str, np.ndarray]]
    design: Callable[..., tuple[np.ndarray, np.ndarray]]

    def route(self, column: str, values: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """Node of the tree of ``column`` each of ``n`` encoded records routes to (``climb``)."""
        X, codes = self.design(column, values, np.arange(n))
        node, _ = self.trees[column].route(X, codes, "climb", None)
        return np.asarray(node, dtype=np.int64)


class CARTPlugin(PluginBase):
    """Adapter giving a fitted :class:`~bayes_risk.models.trees.cart.CARTSynthesizer` the plug-in
    likelihood ``plugin_loglik`` used by :func:`bayes_risk.attribute_risk`
    (:doc:`/methods/attribute`, Tree synthesizers: plug-in likelihoods).

    Parameters
    ----------
    synthesizer : CARTSynthesizer
        Fitted on ``original`` (same rows, same order); ``unroutable="climb"``.
    original : DataFrame
        The confidential data the synthesizer was fitted to.
    n_bootstrap : int, default 500
        Bootstrap replicates per node for smoothed columns.
    random_seed : RandomSeed
        Seeds the replicates (same seed, same log-likelihoods, in any record order).

    Attributes
    ----------
    model_class : "O"
    schema_ : Schema
        The synthesizer's schema.
    replicates : int or None
        The replicates its likelihood draws: ``n_bootstrap`` when the synthesizer smooths a
        column, else ``None`` (exact: no Monte Carlo terms).

    Raises
    ------
    ValidationError
        For another synthesizer type, random-descent routing, a bad ``n_bootstrap`` or another
        ``original``.
    NotFittedError
        For an unfitted synthesizer.

    Examples
    --------
    >>> res = attribute_risk(CARTPlugin(cart, df, random_seed=1), df, syn)  # doctest: +SKIP
    """

    def __init__(self, synthesizer: Any, original: pd.DataFrame, *, n_bootstrap: int = 500,
                 random_seed: RandomSeed = None) -> None:
        self._bind(synthesizer, original, "bayes_risk.models.trees.cart.CARTSynthesizer")
        if synthesizer.unroutable != "climb":
            raise ValidationError(
                "unroutable='random_descent' routes records at random; the plug-in likelihood is "
                "implemented for unroutable='climb' only.",
                code="MODEL_UNSUITED")
        check_value(n_bootstrap, Interval(int, 1), "n_bootstrap")
        self.n_bootstrap = int(n_bootstrap)
        # the largest exact node (:meth:`_exact`; the vectors' number grows with n)
        self._exact_max = 1
        while comb(2 * self._exact_max + 1, self._exact_max + 1) <= EXACT_FACTOR * n_bootstrap:
            self._exact_max += 1
        self.random_seed = random_seed
        # one integer of entropy; node streams are keyed by (dataset, column, node, n_donors)
        self._entropy = int(as_generator(random_seed).integers(2**63 - 1))
        self._uniform = synthesizer.donor == "uniform"
        self._smoothed = set(getattr(synthesizer, "smoothed_", []) or [])
        self._rounding = {c: synthesizer.output_rounding(c) for c in self._smoothed}
        n = len(self.original)
        # the fitted trees: one per column, and before it the kind tree of a numeric column with
        # missing values (keyed ("kind", col); the value tree keeps the column's name)
        self._trees: dict[Any, Any] = {}
        for col in synthesizer.visit_sequence_:
            if col in (getattr(synthesizer, "missing_trees_", None) or {}):
                self._trees[("kind", col)] = synthesizer.missing_trees_[col]
            self._trees[col] = synthesizer.trees_[col]
        self._parent: dict[Any, np.ndarray] = {}
        self._pos: dict[Any, np.ndarray] = {}  # record -> position in the tree's donor order
        for key, tree in self._trees.items():
            par = np.full(tree.n_nodes, -1, dtype=np.int64)
            internal = np.flatnonzero(tree.left != -1)
            par[tree.left[internal]] = internal
            par[tree.right[internal]] = internal
            self._parent[key] = par
            pos = np.full(n, -1, dtype=np.int64)  # -1: not a donor (a missing value's value tree)
            pos[tree.donor_rows] = np.arange(tree.donor_rows.size)
            self._pos[key] = pos
        # ("exact", n): every multiplicity vector and its log weights; a node's key: its drawn
        # counts, in the narrowest integer type (:meth:`_counts`)
        self._crn: dict[tuple, Any] = {}
        self._crn_bytes = 0
        self._kept_cap = _CACHE_BYTES

    def donor_trees(self) -> DonorTrees:
        """The fitted value trees, encoded values and donor positions (``membership_risk``)."""
        cols = tuple(self.synthesizer.visit_sequence_)
        return DonorTrees(visit_sequence=cols, trees={c: self._trees[c] for c in cols},
                          values=self._vals, positions={c: self._pos[c] for c in cols},
                          encode=self._values, design=self._design)

    @staticmethod
    def _column(key: Any) -> str:
        return key[1] if isinstance(key, tuple) else key

    def _design(self, key: Any, values: dict[str, np.ndarray], rows: np.ndarray):
        """Design of ``rows`` in the tree ``key`` (the synthesizer's missing-value inputs)."""
        col = self._column(key)
        tree = self._trees[key]
        preds = self.synthesizer.predictors_[col]
        if preds:
            def value_of(p: str) -> np.ndarray:
                v = values[p][rows]
                return v.astype(np.int64) if self.schema_[p].is_categorical else v

            return tree.design.matrix(design_inputs(self.schema_, preds, self._layout, value_of)[3])
        return np.zeros((rows.size, 1), dtype=np.float32), np.zeros((rows.size, 0), dtype=np.int64)

    def _path(self, key: Any, node: int) -> list[int]:
        par = self._parent[key]
        out = []
        while node != -1:
            out.append(int(node))
            node = int(par[node])
        return out

    def _drawn(self, key: Any, zv: dict[str, np.ndarray], sel: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """The synthetic records drawn from the tree ``key`` and their values."""
        col = self._column(key)
        z = zv[col][sel]
        if isinstance(key, tuple):
            return sel, kind_codes(z, self._layout[col]["codes"]).astype(np.float64)
        if ("kind", col) in self._trees:
            obs = kind_codes(z, self._layout[col]["codes"]) == 0
            return sel[obs], z[obs]
        return sel, z

    def _dataset_state(self, li: int, z: pd.DataFrame) -> dict[str, Any]:
        """Per tree: synthetic values per node (smoothed) or each record's node and value."""
        if li in self._cache:
            return self._cache[li]
        sel = np.flatnonzero(self.synthesizer.records_)
        zv = self._values(z.reset_index(drop=True))
        state: dict[Any, Any] = {"__values__": zv}
        for key, tree in self._trees.items():
            rows, vals = self._drawn(key, zv, sel)
            X, codes = self._design(key, zv, rows)
            node, _ = tree.route(X, codes, "climb", None)
            if key in self._smoothed:
                state[key] = {
                    int(u): tuple(
                        a.astype(np.float64) for a in np.unique(vals[node == u], return_counts=True)
                    )
                    for u in np.unique(node)
                }
                continue
            state[key] = (node, vals)  # Pólya trees: counted for all datasets by _polya_tables
        self._cache[li] = state
        return state

    def _polya_tables(self, synthetic: Sequence[pd.DataFrame]) -> dict[Any, PolyaTables]:
        """Donor and synthetic counts of the un-smoothed trees, for the release."""
        tables = self._cache.get("__polya__")
        if tables is None:
            states = [self._dataset_state(li, z) for li, z in enumerate(synthetic)]
            tables = {
                key: PolyaTables(
                    tree, self._parent[key], [st[key][0] for st in states],
                    [st[key][1] for st in states], self._uniform,
                )
                for key, tree in self._trees.items() if key not in self._smoothed
            }
            self._cache["__polya__"] = tables
        return tables

    @property
    def replicates(self) -> int | None:
        """``n_bootstrap`` when a column is smoothed, else ``None``: an unsmoothed tree's
        likelihood is exact (Pólya-urn counts), with no replicate drawn."""
        return self.n_bootstrap if self._smoothed else None

    def _exact(self, n: int) -> bool:
        """Whether a node of ``n`` donors averages over every bootstrap multiplicity vector
        (:func:`compositions`, no Monte Carlo error) rather than ``n_bootstrap`` drawn ones:
        when there are at most :data:`EXACT_FACTOR` times as many."""
        return n <= self._exact_max

    def _counts(self, key: tuple[int, int, int, int]
                ) -> tuple[np.ndarray, np.ndarray | None]:
        """Bootstrap multiplicities ``[R, n]`` of a node's ``n`` donors and their log weights,
        keyed by (dataset, column, node, n): every vector, weighted by its probability, for a
        node small enough (:meth:`_exact`), else ``n_bootstrap`` drawn ones."""
        n = key[-1]
        exact = self._exact(n)
        c = self._crn.get(("exact", n) if exact else key)
        if c is not None:
            return c if exact else (c.astype(np.float64), None)
        if exact:
            c = compositions(n, self._uniform) if n > 1 else (np.ones((1, 1)), None)
            return self._keep(self._crn, ("exact", n), c, c[0].nbytes * 2)
        R = self.n_bootstrap
        rng = np.random.Generator(
            np.random.PCG64(np.random.SeedSequence(self._entropy, spawn_key=key)))
        if self._uniform:
            c = rng.multinomial(n, np.full(n, 1.0 / n), size=R)
        else:
            w = rng.standard_exponential((R, n))
            c = rng.multinomial(n, w / w.sum(axis=1, keepdims=True))
        # kept in the narrowest integer type that holds n (a byte a count in most nodes, an
        # eighth of the doubles): drawing them again when the bound drops them costs more
        # than widening them at every use
        c = c.astype(np.min_scalar_type(n))
        self._keep(self._crn, key, c, c.nbytes)
        return c.astype(np.float64), None

    def _release(self, synthetic: Sequence[pd.DataFrame]) -> None:
        if synthetic is not self._cache_owner:
            # what is kept may take a quarter of the memory left (of the limit, else of the
            # machine), as a chunk's working arrays do, up to _CACHE_BYTES; the counts, which
            # do not depend on the release, are drawn again (the same numbers) under the bound
            self._kept_cap = working_bytes(_CACHE_BYTES)
            self._crn.clear()
            self._crn_bytes = 0
        super()._release(synthetic)

    def _keep(self, store: dict, key: Any, value: Any, nbytes: int) -> Any:
        """``value``, kept in ``store`` under ``key``: the count matrices (``_crn``) and the
        release's whole-leaf node terms (``_cache``) share one bound, every kept array dropped
        when it is reached."""
        if self._crn_bytes + nbytes > self._kept_cap:
            self._crn.clear()
            self._cache.get("__leaves__", {}).clear()
            self._crn_bytes = 0
        store[key] = value
        self._crn_bytes += nbytes
        return value

    def _kernel(self, col: str, key: tuple[int, int, int], zu: np.ndarray) -> Callable:
        """``terms(centres, lo, hi)``: the node's synthetic values' log-kernels and the centres'
        log-masses (:func:`~bayes_risk.models.trees.cart_leaf.kernel_log_terms`)."""
        from bayes_risk.models.trees.cart_leaf import kernel_log_terms

        decimals, int_out = self._rounding[col]
        h = float(self.synthesizer.bandwidth_[col][key[2]])
        return lambda centres, lo, hi: kernel_log_terms(zu, centres, h, lo, hi,
                                                        decimals=decimals, integer_output=int_out)

    def _leaf_terms(self, key: tuple[int, int, int], col: str, leaf: np.ndarray,
                    dropped: int | None, zu: np.ndarray
                    ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
        """The donors of a node, ``leaf`` but the one at ``dropped`` (the record's own, in its
        node), and their log-kernels at their own support (``None``: no donor). The node's own
        are computed once for the release; without the record they are its columns but the
        record's where that leaves the support as it was (each column depends only on its
        centre and the support)."""
        donors = leaf if dropped is None else np.delete(leaf, dropped)
        if not donors.size:
            return donors, None
        kept = self._cache.setdefault("__leaves__", {})
        terms = kept.get((key, "terms"))
        if terms is None:
            terms = self._kernel(col, key, zu)(leaf, float(leaf.min()), float(leaf.max()))
            self._keep(kept, (key, "terms"), terms, terms[0].nbytes + terms[1].nbytes)
        if dropped is None:
            return donors, terms
        if donors.min() == leaf.min() and donors.max() == leaf.max():
            return donors, (np.delete(terms[0], dropped, axis=1), np.delete(terms[1], dropped))
        return donors, self._kernel(col, key, zu)(donors, float(donors.min()),
                                                  float(donors.max()))

    def _node_loglik(self, key: tuple[int, int, int], col: str, donors: np.ndarray,
                     extras: np.ndarray | None, zu: np.ndarray, zw: np.ndarray, *,
                     d_terms: tuple[np.ndarray, np.ndarray] | None = None,
                     kept: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Smoothed node log-likelihood with donors ``D`` or ``D ∪ {x}`` per extra value ``x``,
        and the replicates' ``[n_out, R]``. ``d_terms``: ``D``'s log-kernels at its support,
        if known; ``kept``: where to keep what does not depend on the record (``D`` is the
        whole node), if anywhere."""
        terms = self._kernel(col, key, zu)
        decimals = self._rounding[col][0]
        h = float(self.synthesizer.bandwidth_[col][key[2]])
        n_d = donors.size
        # point masses of the dominating measure (methods page): only a node whose other donors
        # are all equal (to v) releases v exactly, under the candidate x = v
        atoms = donors[:1] if n_d and donors.min() == donors.max() else donors[:0]
        R = self.n_bootstrap

        def full(values: np.ndarray, counts: tuple[np.ndarray, np.ndarray | None],
                 lk_lm: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[float, np.ndarray]:
            lo, hi = float(values.min()), float(values.max())
            if decimals is None and lo < hi and h > 0 and atom_hit(zu, atoms):
                return float("-inf"), np.full(counts[0].shape[0], -np.inf)
            return mc_node_loglik(counts[0], *(lk_lm or terms(values, lo, hi)), zw,
                                  log_w=counts[1], return_terms=True)

        if extras is None:
            if n_d == 0:  # synthetic records routed to a node without donors
                return np.array([-np.inf]), np.full((1, R), -np.inf)
            if kept is not None and (key, None) in kept:
                return kept[key, None]
            v, lf = full(donors, self._counts((*key, n_d)), d_terms)
            out = np.array([v]), lf[None, :]
            return out if kept is None else self._keep(kept, (key, None), out, lf.nbytes)
        counts = self._counts((*key, n_d + 1))
        out = np.empty(extras.size)
        lfs = np.empty((extras.size, counts[0].shape[0]))
        if n_d == 0:
            for k, x in enumerate(extras):
                out[k], lfs[k] = full(np.array([x]), counts)
            return out, lfs
        lo, hi = float(donors.min()), float(donors.max())
        inner = (extras >= lo) & (extras <= hi)
        if inner.any():
            # the support stays [min D, max D]: the donors' part is shared (rank-one update);
            # no atoms here (D unequal, or x = v and the node does not smooth)
            d = None if kept is None else kept.get((key, "donors"))
            if d is None:
                d = donor_terms(counts[0], *(d_terms or terms(donors, lo, hi)), counts[1])
                if kept is not None:
                    self._keep(kept, (key, "donors"), d,
                               d.den.nbytes * 2 + sum(b[1].nbytes for b in d.blocks))
            lk_x, lm_x = terms(extras[inner], lo, hi)
            out[inner], lfs[inner] = mc_node_loglik_extra(d, lk_x.T, lm_x, zw,
                                                          return_terms=True)
        outer = np.flatnonzero(~inner)
        if not h > 0:
            for k in outer:
                out[k], lfs[k] = full(np.append(donors, extras[k]), counts)
        elif outer.size and decimals is None and atom_hit(zu, atoms):
            out[outer], lfs[outer] = -np.inf, -np.inf
        else:
            # x outside [min D, max D] widens the support to take it in, which changes every
            # donor's term: the nodes D ∪ {x} of a slab of such x at once, each computed as alone
            from bayes_risk.models.trees.cart_leaf import smooth_log_terms

            step = max(1, _WIDENED_ENTRIES // max(zu.size * (n_d + 1), 1))
            for a in range(0, outer.size, step):
                k = outer[a:a + step]
                x = extras[k]
                centres = np.concatenate([np.broadcast_to(donors, (x.size, n_d)), x[:, None]],
                                         axis=1)
                lk, lm = smooth_log_terms(zu, centres, h, np.minimum(lo, x), np.maximum(hi, x),
                                          decimals, self._rounding[col][1])
                out[k], lfs[k] = mc_node_loglik_many(counts[0], lk, lm, zw, log_w=counts[1])
        return out, lfs

    def _smoothed_loglik(self, li: int, ci: int, col: str, pos: int, old: set[int],
                         paths: list[set[int]], ystar: np.ndarray,
                         zstate: dict[int, tuple[np.ndarray, np.ndarray]],
                         g0: int) -> tuple[np.ndarray, np.ndarray]:
        """``[G]`` log-likelihood of the smoothed column's touched nodes per candidate, and the
        Monte Carlo variance of each one's difference from the truth ``g0``."""
        tree = self.synthesizer.trees_[col]
        G = ystar.size
        ell = np.zeros(G)
        var = np.zeros(G)
        touched = old.union(*paths) & zstate.keys()
        for u in sorted(touched):
            inside = np.array([u in p for p in paths])
            if not inside.any() or (inside.all() and np.all(ystar == ystar[0])):
                continue  # the same donors under every candidate: a common constant
            leaf = tree.y_sorted[tree.node_start[u] : tree.node_stop[u]].astype(np.float64)
            zu, zw = zstate[u]
            key = (li, ci, u)
            d, d_terms = self._leaf_terms(key, col, leaf,
                                          pos - tree.node_start[u] if u in old else None, zu)
            # what a node the record is not in gives is the same for every record: kept
            kept = None if u in old else self._cache["__leaves__"]
            # the node's distinct rows of replicates: one without the candidate's value (if
            # some candidate is not inside), one per distinct value inside; ``row`` maps each
            # candidate to its row of its side (``side``: inside or not)
            lf0 = lf1 = None
            row = np.empty(G, dtype=np.int64)
            if (~inside).any():
                v, lf0 = self._node_loglik(key, col, d, None, zu, zw, d_terms=d_terms,
                                           kept=kept)
                ell[~inside] += v[0]
                row[~inside] = 0
            if inside.any():
                ex, inv = np.unique(ystar[inside], return_inverse=True)
                v, lf1 = self._node_loglik(key, col, d, ex, zu, zw, d_terms=d_terms, kept=kept)
                ell[inside] += v[inv]
                row[inside] = inv
            var += mc_difference_var(lf0, self._exact(d.size), lf1, self._exact(d.size + 1),
                                     row, inside, g0)
        return ell, var

    def _loglik_many(self, recs: np.ndarray, G: int, cand: dict[str, np.ndarray],
                     columns: list[str], synthetic: Sequence[pd.DataFrame]
                     ) -> tuple[np.ndarray, np.ndarray]:
        """``[m, R·G]`` log-likelihoods and variances; records in slabs that bound the Pólya
        tables' ``[m, entries]`` arrays."""
        depth = max((t.anc.shape[1] for t in self._polya_tables(synthetic).values()), default=1)
        step = max(1, _SLAB_ROWS // max(G * depth, 1))
        parts = [self._loglik_slab(recs[a:a + step],
                                   {c: v[a * G:(a + step) * G] for c, v in cand.items()},
                                   columns, synthetic)
                 for a in range(0, recs.size, step)]
        return (np.concatenate([p[0] for p in parts], axis=1),
                np.concatenate([p[1] for p in parts], axis=1))

    def _loglik(self, i: int, cand_vals: dict[str, np.ndarray], columns: list[str],
                synthetic: Sequence[pd.DataFrame]) -> tuple[np.ndarray, np.ndarray]:
        """Record ``i``'s ``[m, G]`` log-likelihoods and variances (:meth:`_loglik_many`)."""
        G = len(cand_vals[columns[0]])
        return self._loglik_many(np.array([int(i)]), G, cand_vals, columns, synthetic)

    def _loglik_slab(self, recs: np.ndarray, cand_vals: dict[str, np.ndarray],
                     columns: list[str], synthetic: Sequence[pd.DataFrame]
                     ) -> tuple[np.ndarray, np.ndarray]:
        syn = self.synthesizer
        R = recs.size
        T = len(cand_vals[columns[0]])
        G = T // R
        out = np.zeros((len(synthetic), T))
        var = np.zeros((len(synthetic), T))
        varying = set(columns)
        # the truth among the candidates: the Monte Carlo error is that of differences from it
        is_truth = np.ones(T, dtype=bool)
        for c in columns:
            t = np.repeat(self._vals[c][recs], G)
            is_truth &= (cand_vals[c] == t) | (np.isnan(cand_vals[c]) & np.isnan(t))
        g0 = np.argmax(is_truth.reshape(R, G), axis=1)
        # each record's donor position and the node it reaches under each candidate, per tree;
        # position -1 where it is no donor (the value tree of a missing value: its kind is held,
        # so it stays out of that tree under every candidate)
        where: dict[Any, tuple[np.ndarray, np.ndarray | None]] = {}
        for key, tree in self._trees.items():
            pos = self._pos[key][recs]
            new_leaf = None
            if any(p in varying for p in syn.predictors_[self._column(key)]):
                X, codes = self._design(key, cand_vals, np.arange(T))
                new_leaf, _ = tree.route(X, codes, "climb", None)
            where[key] = (pos, new_leaf)
        # un-smoothed trees: all records and datasets at once (vectorised Pólya-urn differences)
        tables = self._polya_tables(synthetic)
        for key, tab in tables.items():
            pos, new_leaf = where[key]
            have = pos >= 0
            rows = np.repeat(have, G)
            leaf = None if new_leaf is None else new_leaf[rows]
            if isinstance(key, tuple):  # a kind tree: i's kind is held, only its path moves
                if new_leaf is not None:
                    k = self._trees[key].y_sorted[pos[have]].astype(np.float64)
                    out[:, rows] += tab.delta(pos[have], k, np.repeat(k, G), leaf)
            elif key in varying or new_leaf is not None:
                out[:, rows] += tab.delta(pos[have], self._vals[key][recs[have]],
                                          cand_vals[key][rows], leaf)
        smoothed = [c for c in syn.visit_sequence_ if c in self._smoothed]
        for r, i in enumerate(recs):
            i = int(i)
            if smoothed or not syn.records_[i]:
                sl = slice(r * G, (r + 1) * G)
                self._smoothed_and_as_is(i, {c: v[sl] for c, v in cand_vals.items()}, columns,
                                         synthetic, smoothed, int(g0[r]),
                                         {key: (int(p[r]), None if nl is None else nl[sl])
                                          for key, (p, nl) in where.items()},
                                         out[:, sl], var[:, sl])
        return out, var

    def _smoothed_and_as_is(self, i: int, cand_vals: dict[str, np.ndarray], columns: list[str],
                            synthetic: Sequence[pd.DataFrame], smoothed: list[str], g0: int,
                            where: dict[Any, tuple[int, np.ndarray | None]],
                            out: np.ndarray, var: np.ndarray) -> None:
        """Add record ``i``'s smoothed columns' terms and, for a record that was not replaced,
        its released-as-is term to its ``[m, G]`` ``out`` and ``var`` (in place)."""
        syn = self.synthesizer
        G = out.shape[1]
        paths: dict[str, tuple[int, set[int], list[set[int]]]] = {}
        for col in smoothed:
            pos, new_leaf = where[col]
            if pos < 0:
                continue
            tree = self._trees[col]
            old = set(np.flatnonzero((tree.node_start <= pos) & (pos < tree.node_stop)).tolist())
            paths[col] = pos, old, (
                [set(self._path(col, int(u))) for u in new_leaf] if new_leaf is not None
                else [old] * G
            )
        for li, z in enumerate(synthetic):
            state = self._dataset_state(li, z)
            for ci, col in enumerate(syn.visit_sequence_):
                if col not in paths:
                    continue
                pos, old, new_paths = paths[col]
                ell, v = self._smoothed_loglik(li, ci, col, pos, old, new_paths,
                                               cand_vals[col], state[col], g0)
                out[li] += ell
                var[li] += v
            if not syn.records_[i]:  # a record that was not replaced is released as it is
                zi = {c: v[i] for c, v in state["__values__"].items()}
                out[li] += self._released_as_is(zi, cand_vals, columns)
