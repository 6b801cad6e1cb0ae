"""Plug-in likelihood of a fitted random-forest synthesizer for attribute risk (forests fixed).
See :doc:`/methods/attribute`, Tree synthesizers: plug-in likelihoods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.contract import ModelInfo
from bayes_risk.exceptions import NotSupportedError, ValidationError
from bayes_risk.models.trees.forest_leaves import forest_apply_distinct
from bayes_risk.models.trees.plugins.base import PluginBase

__all__ = ["RFPlugin", "plugin_likelihood", "release_likelihood"]

_CHUNK = 512  # records per block when gathering leaf shares (bounds memory: chunk × trees)
_DENSE = 1 << 22  # (candidate × record) table size up to which sums use a dense index


class _Forest:
    """One column's forest as stacked arrays (global pre-order node ids: a subtree is
    ``[k, end[k])``), with class counts of every node."""

    def __init__(self, rf: Any, X: np.ndarray, y: np.ndarray, d: int, oob_only: bool) -> None:
        ests = rf.estimators_
        sizes = np.array([e.tree_.node_count for e in ests], dtype=np.int64)
        self.B = len(ests)
        self.offs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        nn = int(sizes.sum())
        ids = np.int32 if nn < 2**31 - 1 else np.int64  # node ids: half the memory when they fit

        def stack(attr: str) -> np.ndarray:
            return np.concatenate([
                np.where(getattr(e.tree_, attr) >= 0, getattr(e.tree_, attr) + o, -1)
                for e, o in zip(ests, self.offs, strict=True)
            ]).astype(ids)

        self.left, self.right = stack("children_left"), stack("children_right")
        self.feature = np.concatenate([e.tree_.feature for e in ests]).astype(ids)
        self.threshold = np.concatenate([e.tree_.threshold for e in ests]).astype(np.float64)
        internal = np.flatnonzero(self.left >= 0)
        if np.any(self.left[internal] != internal + 1):
            raise RuntimeError("scikit-learn tree is not in pre-order; cannot index subtrees")
        self.parent = np.full(nn, -1, dtype=ids)
        self.parent[self.left[internal]] = internal
        self.parent[self.right[internal]] = internal
        levels = []  # node ids by depth
        frontier = self.offs.copy()
        while frontier.size:
            levels.append(frontier)
            kids = frontier[self.left[frontier] >= 0]
            frontier = np.concatenate([self.left[kids], self.right[kids]]).astype(np.int64)
        # training records: leaf per tree and in-bag multiplicity (the bootstrap sample)
        n_t = X.shape[0]
        self.train_leaf = (forest_apply_distinct(rf, X) + self.offs[None, :]).astype(ids)
        K = np.zeros((self.B, n_t), dtype=np.int32)
        for b, s in enumerate(rf.estimators_samples_):
            K[b] = np.bincount(s, minlength=n_t)
        self.inbag = K
        self.d = d
        key = (self.train_leaf.T.astype(np.int64) * d + y[None, :]).ravel()
        N = np.bincount(key, weights=K.ravel(), minlength=nn * d).reshape(nn, d)
        end = np.arange(1, nn + 1, dtype=ids)
        for lev in reversed(levels[1:]):  # children before parents: subtree counts and ends
            is_left = self.left[self.parent[lev]] == lev
            for kids in (lev[is_left], lev[~is_left]):  # one child per parent: no repeats
                N[self.parent[kids]] += N[kids]
            par = np.unique(self.parent[lev])
            end[par] = end[self.right[par]]
        self.counts = N.astype(np.int32)
        self.shares = np.empty((0, d))  # class shares q of every node, set by the plug-in
        self.end = end
        # trees whose leaf enters each training record's synthesis distribution (B_r)
        self.valid = (K == 0) if oob_only else np.ones_like(K, dtype=bool)
        self.n_valid = self.valid.sum(axis=0).astype(np.float64)

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Global leaf id ``[k, B]`` of each row in each tree (scikit-learn's float32 rule)."""
        Xf = np.asarray(X, dtype=np.float32).astype(np.float64)
        # identical rows (candidates often share the routed columns) are routed once
        uniq, back = np.unique(Xf, axis=0, return_inverse=True)
        node = np.tile(self.offs, uniq.shape[0])
        rows = np.repeat(np.arange(uniq.shape[0]), self.B)
        act = np.arange(node.size)
        while act.size:
            nd = node[act]
            inner = self.left[nd] >= 0
            act, nd = act[inner], nd[inner]
            go_left = uniq[rows[act], self.feature[nd]] <= self.threshold[nd]
            node[act] = np.where(go_left, self.left[nd], self.right[nd])
        return node.reshape(uniq.shape[0], self.B)[back.ravel()]


class RFPlugin(PluginBase):
    """Adapter giving a fitted
    :class:`~bayes_risk.models.trees.random_forest.RandomForestSynthesizer` the fixed-forest
    plug-in likelihood ``plugin_loglik`` (:doc:`/methods/attribute`, Tree synthesizers).

    Parameters
    ----------
    synthesizer : RandomForestSynthesizer
        Fitted on ``original`` (same rows, same order).
    original : DataFrame
        The confidential data the synthesizer was fitted to.

    Attributes
    ----------
    model_class : "O"
    schema_ : Schema
        The synthesizer's schema.
    result_warnings : tuple of str
        ``("APPROXIMATE_NONPARAMETRIC",)``: re-growing the forests would change the splits too.

    Raises
    ------
    ValidationError
        For another synthesizer type or another ``original``.
    NotSupportedError
        For forests grown within groups of a synthesized column, or a numeric column.
    NotFittedError
        For an unfitted synthesizer.

    Examples
    --------
    >>> res = attribute_risk(RFPlugin(rf, df), df, syn, records=range(50))  # doctest: +SKIP
    >>> res.warnings  # doctest: +SKIP
    ['APPROXIMATE_NONPARAMETRIC']
    """

    result_warnings = ("APPROXIMATE_NONPARAMETRIC",)
    info = ModelInfo(holds_missing=True, result_warnings=("APPROXIMATE_NONPARAMETRIC",))

    def __init__(self, synthesizer: Any, original: pd.DataFrame) -> None:
        self._bind(synthesizer, original,
                   "bayes_risk.models.trees.random_forest.RandomForestSynthesizer")
        syn = synthesizer
        numeric = [c for c in syn.visit_sequence_ if not self.schema_[c].is_categorical]
        if numeric:  # methods page, Random forests for numeric columns
            smoothed = syn._smoothed(self.schema_, syn.visit_sequence_)
            why = (" (smoothed: a candidate value moves the kernel centres of every leaf it is "
                   "in bag for, so a synthetic value's likelihood is a mixture over the trees' "
                   "truncated kernels that the plug-in does not evaluate)"
                   if numeric[0] in smoothed else "")
            raise NotSupportedError(
                f"RFPlugin: column {numeric[0]!r} is {self.schema_[numeric[0]].type}{why}; the "
                "fixed-forest plug-in likelihood covers categorical columns only (methods page "
                "'Random forests for numeric columns'). Synthesize the categorical columns only, "
                "or use identification risk.", code="MODEL_UNSUITED")
        bad = {c: g for c, g in syn.groups_.items() if g in set(syn.visit_sequence_)}
        if bad:  # methods page
            c, g = next(iter(bad.items()))
            raise NotSupportedError(
                f"RFPlugin: column {c!r} is synthesized within groups of {g!r}, which is itself "
                "synthesized; a candidate would move the record into another group's forest, in "
                "whose bootstrap samples it has no multiplicity (methods page 'Attribute "
                "disclosure risk'). Group by an unsynthesized column, or drop group_by.",
                code="MODEL_UNSUITED")
        n = len(self.original)
        # one "unit" per forest: (column, None) for a column's forest, (column, level code) for
        # a forest grown within a group (Caiola & Reiter 2010 §5)
        self._units: dict[str, list[tuple[str, int | None]]] = {}
        self._forests: dict[tuple[str, int | None], _Forest] = {}
        self._rf: dict[tuple[str, int | None], Any] = {}
        self._train: dict[tuple[str, int | None], np.ndarray] = {}
        # record -> position among the forest's training records (-1: not among them)
        self._tpos: dict[tuple[str, int | None], np.ndarray] = {}
        # per training record: whether this forest synthesizes it
        self._smask: dict[tuple[str, int | None], np.ndarray] = {}
        for col in syn.visit_sequence_:
            train = np.flatnonzero(syn.records_[col])
            self._units[col] = []
            for key, rf, rows, smask in self._forests_of(col, train):
                X = self._inputs(col, self._vals, rows)
                y = self._vals[col][rows].astype(np.int64)
                # classes: the levels, and the missing level of a column with missing values
                d = syn._n_classes(col, self.schema_, self._layout)
                F = _Forest(rf, X, y, d, bool(syn.oob_only))
                F.shares = self._q(F.counts)
                self._units[col].append(key)
                self._forests[key], self._rf[key], self._train[key] = F, rf, rows
                tpos = np.full(n, -1, dtype=np.int64)
                tpos[rows] = np.arange(rows.size)
                self._tpos[key] = tpos
                self._smask[key] = smask

    def _forests_of(
        self, col: str, train: np.ndarray
    ) -> list[tuple[tuple[str, int | None], Any, np.ndarray, np.ndarray]]:
        """The forests of ``col`` (each group's and the pooled one): ``(key, forest, training
        rows, synthesizes each)``."""
        syn = self.synthesizer
        everyone = np.ones(train.size, dtype=bool)
        if col not in syn.groups_:
            return [((col, None), syn.forests_[col], train, everyone)]
        gcodes = self._vals[syn.groups_[col]][train].astype(np.int64)
        out = []
        own = sorted(int(c) for c in syn.group_forests_[col])
        for code in own:
            rows = train[gcodes == code]
            out.append(((col, code), syn.group_forests_[col][code], rows,
                        np.ones(rows.size, dtype=bool)))
        pooled = ~np.isin(gcodes, own)
        if pooled.any():  # the pooled forest synthesizes nobody otherwise
            out.append(((col, None), syn.forests_[col], train, pooled))
        return out

    def _q(self, counts: np.ndarray) -> np.ndarray:
        from bayes_risk.models.trees.forest_leaves import leaf_probabilities

        syn = self.synthesizer
        return leaf_probabilities(counts, syn.probabilities, float(syn.alpha))

    def _inputs(self, col: str, values: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        """The forest inputs of ``rows`` as the synthesizer builds them."""
        syn = self.synthesizer
        return syn._matrix(syn.predictors_[col], lambda p: values[p][rows], self._layout)

    def _syn_matrix(self, col: str, zv: dict[str, np.ndarray], base: dict[str, np.ndarray],
                    rows: np.ndarray) -> np.ndarray:
        """Synthesis predictors: synthetic values of the columns visited before ``col``."""
        syn = self.synthesizer
        done = set(syn.visit_sequence_[: syn.visit_sequence_.index(col)])
        return self._inputs(col, {p: zv[p] if p in done else base[p]
                                  for p in syn.predictors_[col]}, rows)

    def _dataset_state(self, li: int, z: pd.DataFrame) -> dict[str, Any]:
        """Per forest: base ``log p_r(z_r)``, and the synthetic records of every leaf (CSR)."""
        if li in self._cache:
            return self._cache[li]
        syn = self.synthesizer
        zv = self._values(z.reset_index(drop=True))
        state: dict[str, Any] = {"__values__": zv}
        for col in syn.visit_sequence_:
            kept = np.flatnonzero(~np.asarray(syn.records_[col], dtype=bool))
            bad = kept[zv[col][kept] != self._vals[col][kept]]  # codes (missing: d)
            if bad.size:
                raise ValidationError(
                    f"synthetic dataset {li}: column {col!r} differs from the original for "
                    f"record {int(bad[0])}, which the synthesizer does not replace; the datasets "
                    "were not produced by this synthesizer.",
                    code="RELEASE_NOT_REPRODUCED")
            for key in self._units[col]:
                state[key] = self._unit_state(key, zv)
        self._cache[li] = state
        return state

    def _unit_state(self, key: tuple[str, int | None], zv: dict[str, np.ndarray]) -> dict:
        """One forest's base ``log p_r(z_r)`` and the synthetic records of every leaf (CSR)."""
        col = key[0]
        F, train, smask = self._forests[key], self._train[key], self._smask[key]
        X = self._syn_matrix(col, zv, self._vals, train)
        leaves = forest_apply_distinct(self._rf[key], X) + F.offs[None, :]
        zc = zv[col][train].astype(np.int64)
        valid = F.valid.T  # (n_train, B)
        p = np.empty(train.size)
        npos = np.empty(train.size, dtype=np.int64)
        for a in range(0, train.size, _CHUNK):
            sl = slice(a, a + _CHUNK)
            qz = F.shares[leaves[sl], zc[sl, None]] * valid[sl]  # (chunk, B)
            p[sl] = qz.sum(axis=1) / F.n_valid[sl]
            npos[sl] = (qz > 0).sum(axis=1)
        # synthetic records of every leaf: sort within each tree (tree b's node ids are a
        # block after tree b-1's, so the trees' sorted blocks concatenate to a global sort)
        order = np.argsort(leaves, axis=0)  # (n_train, B)
        cols = np.arange(F.B)[None, :]
        keep = (valid[order, cols] & smask[order]).T
        rec = order.T[keep]
        keys = leaves[order, cols].T[keep]
        ptr = np.concatenate(
            [[0], np.cumsum(np.bincount(keys, minlength=F.counts.shape[0]))]
        ).astype(np.int32 if keys.size < 2**31 - 1 else np.int64)
        with np.errstate(divide="ignore"):
            lp = np.where(npos > 0, np.log(np.where(npos > 0, p, 1.0)), -np.inf)
        lp = np.where(smask, lp, 0.0)  # records another forest synthesizes
        return {"z": zc, "p": p, "npos": npos, "lp": lp,
                "base_sum": float(lp[(npos > 0) & smask].sum()),
                "n_zero": int(((npos == 0) & smask).sum()), "rec": rec.astype(np.int32), "ptr": ptr}

    def _changes(self, key: tuple[str, int | None], i: int, cand: dict[str, np.ndarray],
                 varying: set[str]) -> dict[str, np.ndarray] | None:
        """The (candidate ``g``, tree ``b``, leaf ``node``) entries whose class shares change
        (before ``qb``, after ``qn``); ``None`` when record ``i`` does not train this forest."""
        col = key[0]
        F = self._forests[key]
        t = int(self._tpos[key][i])
        if t < 0:
            return None
        G = len(cand[col])
        c0 = int(self._vals[col][i])
        c1 = cand[col].astype(np.int64) if col in varying else np.full(G, c0)
        preds = self.synthesizer.predictors_[col]
        old = F.train_leaf[t]  # (B,)
        if any(p in varying for p in preds):  # i's genuine predictors move it to other leaves
            new = F.apply(self._inputs(col, cand, np.arange(G)))
        else:
            new = np.broadcast_to(old, (G, F.B))
        k = F.inbag[:, t]
        ch = (k[None, :] > 0) & ((new != old[None, :]) | (c1[:, None] != c0))
        g, b = np.nonzero(ch)
        kk, o, nw, cc = k[b].astype(np.int64), old[b], new[g, b], c1[g]
        same = o == nw
        E = g.size
        r = np.arange(E)
        n_old = F.counts[o].astype(np.int64)
        n_old[r, c0] -= kk
        n_old[same, cc[same]] += kk[same]
        eff = n_old.copy()
        empty = n_old.sum(axis=1) == 0  # i was the only in-bag record of its leaf
        if empty.any():
            par = F.parent[o[empty]]
            n_par = F.counts[par].astype(np.int64)
            n_par[:, c0] -= kk[empty]
            into = (par <= nw[empty]) & (nw[empty] < F.end[par])  # i's new leaf is below par
            n_par[into, cc[empty][into]] += kk[empty][into]
            eff[empty] = n_par
        mv = ~same
        n_new = F.counts[nw[mv]].astype(np.int64)
        n_new[np.arange(int(mv.sum())), cc[mv]] += kk[mv]
        return {"g": np.concatenate([g, g[mv]]), "b": np.concatenate([b, b[mv]]),
                "node": np.concatenate([o, nw[mv]]),
                "qb": np.concatenate([F.shares[o], F.shares[nw[mv]]]),
                "qn": self._q(np.concatenate([eff, n_new]))}

    def _own_logp(self, key: tuple[str, int | None], i: int, cand: dict[str, np.ndarray],
                  zvs: list[dict[str, np.ndarray]], ch: dict[str, np.ndarray]) -> np.ndarray:
        """``[m, G]`` log p_i(z_i) of record ``i``'s own synthetic value (by this forest)."""
        col = key[0]
        F = self._forests[key]
        t = int(self._tpos[key][i])
        G, m = len(cand[col]), len(zvs)
        # synthetic values of the columns visited before col, genuine values (with the
        # candidate's) of the others: one routing call for all datasets
        X = np.concatenate([
            self._syn_matrix(col, {p: np.full(G, v[i]) for p, v in zv.items()}, cand,
                             np.arange(G))
            for zv in zvs
        ])
        leaves = F.apply(X).reshape(m, G, F.B)
        zi = np.array([int(zv[col][i]) for zv in zvs])
        qz = F.shares[leaves, zi[:, None, None]]  # (m, G, B)
        hit = leaves[:, ch["g"], ch["b"]] == ch["node"][None, :]  # (m, E): leaf recounted
        ll, ee = np.nonzero(hit)
        qz[ll, ch["g"][ee], ch["b"][ee]] = ch["qn"][ee, zi[ll]]
        p = (qz * F.valid[:, t]).sum(axis=2) / F.n_valid[t]
        with np.errstate(divide="ignore"):
            return np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), -np.inf)

    def _column_loglik(self, key: tuple[str, int | None], i: int, ch: dict[str, np.ndarray],
                       st: dict[str, Any], own: np.ndarray | None, G: int) -> np.ndarray:
        """``[G]`` log-likelihood of the values this forest drew, per candidate (``own``: record
        ``i``'s own term, if this forest synthesizes it)."""
        F = self._forests[key]
        t = int(self._tpos[key][i])
        lo, hi = st["ptr"][ch["node"]], st["ptr"][ch["node"] + 1]
        lens = hi - lo
        tot = int(lens.sum())
        e = np.repeat(np.arange(lens.size), lens)
        idx = np.repeat(lo - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(tot)
        r = st["rec"][idx].astype(np.int64)
        keep = r != t  # record i's own value is recomputed in full (own)
        r, e = r[keep], e[keep]
        zr = st["z"][r]
        qb, qn = ch["qb"][e, zr], ch["qn"][e, zr]
        n_t = F.n_valid.size
        key = ch["g"][e] * n_t + r
        if G * n_t <= _DENSE:  # (candidate, record) sums in a dense table: no sort
            size = G * n_t
            uk = np.flatnonzero(np.bincount(key, minlength=size))
            inv = np.searchsorted(uk, key)
        else:
            uk, inv = np.unique(key, return_inverse=True)
        dq = np.bincount(inv, weights=(qn - qb) / F.n_valid[r], minlength=uk.size)
        dpos = np.bincount(
            inv, weights=(qn > 0).astype(np.float64) - (qb > 0), minlength=uk.size
        ).round().astype(np.int64)
        gk, rk = uk // n_t, uk % n_t
        p_new = st["p"][rk] + dq
        pos_new = st["npos"][rk] + dpos
        with np.errstate(divide="ignore"):
            lp_new = np.where(pos_new > 0, np.log(np.maximum(p_new, np.finfo(float).tiny)), -np.inf)
        lp_old = st["lp"][rk]
        # affected records: swap their old log p for the new one (zeros counted apart)
        fin = np.full(G, st["base_sum"])
        zeros = np.full(G, st["n_zero"], dtype=np.int64)
        old_ok, new_ok = np.isfinite(lp_old), np.isfinite(lp_new)
        fin -= np.bincount(gk[old_ok], weights=lp_old[old_ok], minlength=G)
        fin += np.bincount(gk[new_ok], weights=lp_new[new_ok], minlength=G)
        zeros += np.bincount(gk[~new_ok], minlength=G) - np.bincount(gk[~old_ok], minlength=G)
        if own is not None:
            if np.isfinite(st["lp"][t]):
                fin -= st["lp"][t]
            else:
                zeros -= 1
            fin += np.where(np.isfinite(own), own, 0.0)
            zeros += ~np.isfinite(own)
        return np.where(zeros > 0, -np.inf, fin)

    def _loglik(self, i: int, cand: dict[str, np.ndarray], columns: list[str],
                synthetic: Sequence[pd.DataFrame]) -> np.ndarray:
        # the full plug-in log-likelihoods Σ_j Σ_r log p_r(z_rj) of the replaced records (the
        # records released as they are contribute 0)
        syn = self.synthesizer
        varying = set(columns)
        G = len(cand[columns[0]])
        out = np.zeros((len(synthetic), G))
        states = [self._dataset_state(li, z) for li, z in enumerate(synthetic)]
        for col in syn.visit_sequence_:
            if col in varying and not syn.records_[col][i]:
                # i is not replaced in col: its value is released as it is
                for li, st in enumerate(states):
                    zi = {col: st["__values__"][col][i]}
                    out[li] += self._released_as_is(zi, cand, [col])
            for key in self._units[col]:
                ch = self._changes(key, i, cand, varying)
                if ch is None:  # i does not train this forest: its leaves do not change
                    for li, st in enumerate(states):
                        out[li] += st[key]["base_sum"] if st[key]["n_zero"] == 0 else -np.inf
                    continue
                t = int(self._tpos[key][i])
                own = (self._own_logp(key, i, cand, [st["__values__"] for st in states], ch)
                       if self._smask[key][t] else None)
                for li, st in enumerate(states):
                    out[li] += self._column_loglik(key, i, ch, st[key],
                                                   None if own is None else own[li], G)
        return out


def plugin_likelihood(synthesizer: Any, original: pd.DataFrame, *, random_seed: Any = None,
                      n_bootstrap: int | None = None) -> Any:
    """The likelihood attribute risk uses for a fitted synthesizer: its plug-in
    (:class:`~bayes_risk.models.CARTPlugin`, :class:`~bayes_risk.models.RFPlugin`; ``random_seed``
    and ``n_bootstrap``, default the plug-in's, are its Monte Carlo terms' seed and replicates),
    or the model itself when it has a record or plug-in likelihood.

    Raises
    ------
    ValidationError
        ``NO_LIKELIHOOD`` for a synthesizer with neither (PMM).
    """
    from bayes_risk.contract import capabilities

    info = capabilities(synthesizer)
    if info.plugin_likelihood:
        # a synthesizer of one's own need not take n_bootstrap unless it is set
        return synthesizer.plugin_likelihood(
            original, random_seed=random_seed,
            **({} if n_bootstrap is None else {"n_bootstrap": n_bootstrap}))
    if info.has("record") or info.has("plugin"):
        return synthesizer
    raise ValidationError(
        f"{type(synthesizer).__name__} has no likelihood of a record's values (neither "
        "record_loglik nor plugin_likelihood), so attribute risk cannot be computed from it; "
        "expected a Bayesian model, or CART or random forests.", code="NO_LIKELIHOOD")


def release_likelihood(original: Any, synthetic: Any, model: Any = None, *,
                       random_seed: Any = None, n_bootstrap: int | None = None) -> Any:
    """The likelihood attribute risk uses for a release: that of a fitted ``model``, else the
    plug-in of the synthesizer that made the release, rebuilt from its manifest.

    Parameters
    ----------
    original : DataFrame
        The confidential table the release was made from.
    synthetic : SyntheticData
        The release.
    model : fitted synthesizer, optional
        The model that made the release (:func:`~bayes_risk.models.load_model`); without it
        the release must be rebuildable (:func:`~bayes_risk.models.rebuildable_synthesizer`).
    random_seed : int, optional
        Seed of a plug-in likelihood (a tree synthesizer's).
    n_bootstrap : int, optional
        Bayesian-bootstrap replicates of a CART plug-in likelihood (default the plug-in's).

    Returns
    -------
    RiskModel
        The model itself (a record likelihood), or its plug-in
        (:func:`~bayes_risk.models.plugin_likelihood`).

    Raises
    ------
    ValidationError
        No ``model`` and a release no synthesizer with a plug-in likelihood made
        (``OPTION_REQUIRED``); a model with no likelihood (``NO_LIKELIHOOD``).
    """
    from bayes_risk.exceptions import arg_name
    from bayes_risk.models.base import rebuild_synthesizer, rebuildable_synthesizer

    if model is None:
        if rebuildable_synthesizer(synthetic) is None:
            raise ValidationError(f"{arg_name('model')} is required unless "
                                  f"{arg_name('synthetic')} is a release of a synthesizer with a "
                                  "plug-in likelihood (CART, random forests: a "
                                  "plugin_likelihood method) written by 'bayes-risk synthesize "
                                  f"--method NAME' (this release: {synthetic.method!r}).",
                                  code="OPTION_REQUIRED")
        model = rebuild_synthesizer(original, synthetic)
    return plugin_likelihood(model, original, random_seed=random_seed, n_bootstrap=n_bootstrap)
