"""Vectorised Pólya-urn bookkeeping of the CART plug-in likelihood (un-smoothed columns). See
:doc:`/methods/attribute`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["PolyaTables"]


def _lookup(keys: np.ndarray, counts: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``counts`` at ``query`` in the sorted ``keys`` (``0`` where absent or ``query < 0``)."""
    if keys.size == 0:
        return np.zeros(query.shape)
    k = np.minimum(np.searchsorted(keys, query), keys.size - 1)
    return np.where((keys[k] == query) & (query >= 0), counts[k], 0.0)


class PolyaTables:
    """Donor and synthetic value counts of every node of one ``tree`` (with each node's
    ``parent``), for all released datasets (per dataset, each synthesized record's node and
    encoded value); ``uniform``: ``donor="uniform"`` (multinomial, not the Pólya urn)."""

    def __init__(self, tree, parent: np.ndarray, syn_nodes: Sequence[np.ndarray],
                 syn_values: Sequence[np.ndarray], uniform: bool) -> None:
        self.uniform = uniform
        self.start, self.stop = tree.node_start, tree.node_stop
        N = self.n_nodes = int(tree.n_nodes)
        m = self.m = len(syn_nodes)
        y = np.asarray(tree.y_sorted, dtype=np.float64)
        allv = np.concatenate([y, *[np.asarray(v, dtype=np.float64) for v in syn_values]])
        self.values = np.unique(allv[~np.isnan(allv)])
        V = self.V = max(int(self.values.size), 1)
        self.n = (self.stop - self.start).astype(np.float64)
        # donors: node u holds the leaf-ordered slice [start, stop) of y
        size = self.stop - self.start
        u_rep = np.repeat(np.arange(N, dtype=np.int64), size)
        offs = np.concatenate([[0], np.cumsum(size)[:-1]])
        idx = np.arange(int(size.sum()), dtype=np.int64) - np.repeat(offs, size)
        idx += np.repeat(self.start, size)
        vid = self.value_ids(y[idx])
        d_keys = (u_rep * V + vid)[vid >= 0]  # a NaN donor counts in n but matches nothing
        self.d_keys, d_cnt = np.unique(d_keys, return_counts=True)
        self.d_cnt = d_cnt.astype(np.float64)
        # synthetic values per (dataset, routed node, value); a NaN value has no donor (key -1)
        s_keys, s_bad = [], []
        self.U = np.zeros((m, N))
        for li, (nodes, vals) in enumerate(zip(syn_nodes, syn_values, strict=True)):
            nodes = np.asarray(nodes, dtype=np.int64)
            self.U[li] = np.bincount(nodes, minlength=N)
            vid = self.value_ids(np.asarray(vals, dtype=np.float64))
            ok = vid >= 0
            s_keys.append((li * N + nodes[ok]) * V + vid[ok])
            s_bad.append(li * N + np.unique(nodes[~ok]))
        self.s_keys, s_cnt = np.unique(np.concatenate(s_keys), return_counts=True)
        self.s_cnt = s_cnt.astype(np.float64)
        # per (dataset, node): distinct synthetic values without a donor (the node's -inf)
        lu, vid = np.divmod(self.s_keys, V)
        no_donor = _lookup(self.d_keys, self.d_cnt, (lu % N) * V + vid) == 0
        bad = np.bincount(lu[no_donor], minlength=m * N)
        bad += np.bincount(np.concatenate(s_bad), minlength=m * N)
        self.nbad = bad.reshape(m, N)
        # ancestors of every node, root last, padded with -1
        anc = [np.arange(N, dtype=np.int64)]
        while True:
            nxt = np.where(anc[-1] >= 0, parent[np.maximum(anc[-1], 0)], -1)
            if not (nxt >= 0).any():
                break
            anc.append(nxt)
        self.anc = np.stack(anc, axis=1)
        # the nodes whose donor slice holds a position are its leaf and the leaf's ancestors
        # when the slices nest (each node's slice is its children's, which do not overlap), as
        # the leaf-ordered slices of a fitted tree do: a path is then found per record, not by
        # comparing it with all N nodes (which grew as n·N)
        kids = np.flatnonzero(parent >= 0)
        par = parent[kids]
        o = np.lexsort((self.start[kids], par))
        kids, par = kids[o], par[o]
        leaf = np.ones(N, dtype=bool)
        leaf[par] = False
        nested = ((self.start[par] <= self.start[kids]) & (self.stop[kids] <= self.stop[par])).all()
        apart = (self.stop[kids[:-1]] <= self.start[kids[1:]])[par[:-1] == par[1:]].all()
        covered = np.array_equal(np.bincount(par, weights=size[kids], minlength=N)[~leaf],
                                 size[~leaf].astype(np.float64))
        self.leaves = np.flatnonzero(leaf & (size > 0))
        self.leaves = self.leaves[np.argsort(self.start[self.leaves], kind="stable")]
        ls = self.start[self.leaves]
        if not (nested and apart and covered and (self.stop[self.leaves][:-1] <= ls[1:]).all()):
            raise RuntimeError("the tree's donor slices do not nest; cannot index donors")

    def donor_paths(self, pos: np.ndarray) -> np.ndarray:
        """``[R, D]`` the nodes whose donor slice holds each position of ``pos``, ascending,
        padded with ``-2`` (``D``: the longest path, at least 1; none for a position no leaf
        holds, such as ``-1``)."""
        pos = np.asarray(pos, dtype=np.int64)
        i = np.searchsorted(self.start[self.leaves], pos, side="right") - 1
        leaf = self.leaves[np.maximum(i, 0)] if self.leaves.size else np.zeros_like(pos)
        held = (i >= 0) & (pos < self.stop[leaf]) & (pos >= self.start[leaf])
        path = np.where(held[:, None], self.anc[leaf], -1)
        big = np.iinfo(np.int64).max
        path = np.sort(np.where(path >= 0, path, big), axis=1)
        d = int((path < big).sum(axis=1).max(initial=0))
        return np.where(path < big, path, -2)[:, :max(d, 1)]

    def value_ids(self, x: np.ndarray) -> np.ndarray:
        """Index of each value in ``values`` (``-1`` for a value no donor or record has)."""
        if self.values.size == 0:
            return np.full(x.shape, -1, dtype=np.int64)
        k = np.minimum(np.searchsorted(self.values, x), self.values.size - 1)
        return np.where(self.values[k] == x, k, -1).astype(np.int64)

    def delta(self, pos: np.ndarray, old_v: np.ndarray, new_v: np.ndarray,
              new_leaf: np.ndarray | None) -> np.ndarray:
        """``[m, R·G]`` change of the tree's log-likelihood when the donor at ``pos[r]`` takes
        value ``new_v[r·G + g]`` and is routed to ``new_leaf[r·G + g]`` (``None``: its donor
        path), for ``R`` records of ``G`` candidates each (each record's sums are added in the
        same order as for the record alone)."""
        pos = np.asarray(pos, dtype=np.int64)
        R, T = pos.size, int(np.asarray(new_v).size)
        G = T // max(R, 1)
        rec = np.repeat(np.arange(R, dtype=np.int64), G)
        # each record's donor path: the nodes whose donor slice holds it, ascending
        old = self.donor_paths(pos)
        old_t = old[rec]  # (T, D); -2 pads (never a node, never an ancestor's -1 pad)
        if new_leaf is None:
            in_new = np.ones(old_t.shape, dtype=bool)
            g_x = u_x = np.zeros(0, dtype=np.int64)
        else:
            P = self.anc[np.asarray(new_leaf, dtype=np.int64)]  # (T, depth)
            in_new = (P[:, :, None] == old_t[:, None, :]).any(axis=1)
            valid = P >= 0
            Pc = np.maximum(P, 0)
            pos_t = pos[rec][:, None]
            extra = valid & ~((self.start[Pc] <= pos_t) & (pos_t < self.stop[Pc]))
            g_x, j_x = np.nonzero(extra)
            u_x = P[g_x, j_x]
        g_o, j_o = np.nonzero(old_t >= 0)  # per candidate, its path's nodes ascending
        g = np.concatenate([g_o, g_x])
        u = np.concatenate([old_t[g_o, j_o], u_x])
        rem = np.concatenate([np.ones(g_o.size, dtype=bool), np.zeros(g_x.size, dtype=bool)])
        add = np.concatenate([in_new[g_o, j_o], np.ones(g_x.size, dtype=bool)])
        V, N = self.V, self.n_nodes
        a = self.value_ids(np.asarray(old_v, dtype=np.float64))[rec[g]]
        b = self.value_ids(np.asarray(new_v, dtype=np.float64))[g]
        d_a = _lookup(self.d_keys, self.d_cnt, np.where(a >= 0, u * V + a, -1))
        rem &= d_a > 0  # a true value absent from the donors removes nothing
        same = rem & add & (b == a)
        keep = (rem | add) & ~same
        g, u, rem, add, a, b, d_a = (g[keep], u[keep], rem[keep], add[keep], a[keep], b[keep],
                                     d_a[keep])
        out = np.zeros((self.m, T))
        if not g.size:
            return out
        d_b = _lookup(self.d_keys, self.d_cnt, np.where(b >= 0, u * V + b, -1))
        base = (np.arange(self.m, dtype=np.int64)[:, None] * N + u[None, :]) * V
        s_a = _lookup(self.s_keys, self.s_cnt, np.where(a >= 0, base + a, -1))  # (m, E)
        s_b = _lookup(self.s_keys, self.s_cnt, np.where(b >= 0, base + b, -1))
        U, nbad, n = self.U[:, u], self.nbad[:, u], self.n[u]
        n_new = n - rem + add
        bad_new = nbad + (rem & (s_a > 0) & (d_a == 1)) - (add & (s_b > 0) & (d_b == 0))
        base_inf = (nbad > 0) | ((n == 0) & (U > 0))
        new_inf = (bad_new > 0) | ((n_new == 0) & (U > 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.uniform:
                dn = np.where(n_new != n, -U * (np.log(n_new) - np.log(n)), 0.0)
                da = np.where(rem & (s_a > 0), s_a * (np.log(d_a - 1) - np.log(d_a)), 0.0)
                db = np.where(add & (s_b > 0), s_b * (np.log(d_b + 1) - np.log(d_b)), 0.0)
            else:  # Γ ratios of neighbouring integers: one logarithm each
                dn = np.where(add & ~rem, np.log(n) - np.log(n + U),
                              np.where(rem & ~add, np.log(n - 1 + U) - np.log(n - 1), 0.0))
                da = np.where(rem & (s_a > 0), np.log(d_a - 1) - np.log(d_a - 1 + s_a), 0.0)
                db = np.where(add & (s_b > 0), np.log(d_b + s_b) - np.log(d_b), 0.0)
        val = np.where(base_inf, np.where(new_inf, np.nan, np.inf),
                       np.where(new_inf, -np.inf, dn + da + db))
        val = np.where(U > 0, val, 0.0)
        np.add.at(out, (slice(None), g), val)
        return out
