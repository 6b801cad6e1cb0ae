"""Synthesis of :class:`~bayes_risk.models.trees.cart.CARTSynthesizer` from its fitted trees.

Routing of records through the fixed trees and the donors of a node (also what the tree plug-in
likelihoods read), one synthesis with Bayesian-bootstrap donors or per-leaf truncated Gaussian
kernel draws (Reiter 2005; Wang & Reiter 2012), and posterior-predictive replicates.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from bayes_risk._rng import RandomSeed, as_generator
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.base import check_is_fitted
from bayes_risk.models.trees.cart_leaf import _log_ndtr_diff
from bayes_risk.models.trees.missing import design_inputs, kind_codes
from bayes_risk.models.trees.seqtree import column_codes, segment_choice

#: routed blocks of the trees whose predictors are never synthesized (unroutable="climb": no
#: random draws), per fitted tree: every synthesis routes their records to the same nodes
_FIXED_ROUTES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def route(
    model, records: pd.DataFrame, column: str, random_seed: RandomSeed = None
) -> tuple[np.ndarray, np.ndarray]:
    """The work of :meth:`CARTSynthesizer.route` (documented there)."""
    check_is_fitted(model, "trees_")
    if column not in model.trees_:
        raise ValidationError(
            f"column {column!r} is not synthesized (synthesized: {model.visit_sequence_})."
        )
    tree = model.trees_[column]
    preds = model.predictors_[column]
    if not preds:
        return np.zeros(len(records), dtype=np.int64), np.zeros(len(records), dtype=bool)
    layout = getattr(model, "missing_", {})

    def value_of(p: str) -> np.ndarray:
        if model.schema_[p].is_categorical:
            return column_codes(records, model.schema_, p)
        return records[p].to_numpy(dtype=np.float64, na_value=np.nan)

    X, codes = tree.design.matrix(design_inputs(model.schema_, preds, layout, value_of)[3])
    rng = as_generator(random_seed) if model.unroutable == "random_descent" else None
    return tree.route(X, codes, model.unroutable, rng)


def donors(model, column: str, node: int) -> np.ndarray:
    """The work of :meth:`CARTSynthesizer.donors` (documented there)."""
    check_is_fitted(model, "trees_")
    tree = model.trees_[column]
    if not 0 <= int(node) < tree.n_nodes:
        raise ValidationError(f"node must be in 0..{tree.n_nodes - 1}. Got {node!r}.")
    return tree.donor_rows[tree.node_start[node] : tree.node_stop[node]].copy()


def output_rounding(model, column: str) -> tuple[int | None, bool]:
    """The work of :meth:`CARTSynthesizer.output_rounding` (documented there)."""
    check_is_fitted(model, "trees_")
    if column not in model.smoothed_:
        raise ValidationError(
            f"column {column!r} is not kernel-smoothed (smoothed: {list(model.smoothed_)})."
        )
    integer = bool(model._integer.get(column))
    decimals = 0 if integer else model._decimals.get(column)
    final = integer and pd.api.types.is_integer_dtype(model._data[column].dtype)
    return decimals, bool(final)


def posterior_replicates(model, n: int | None, columns: Sequence[str] | None, chunk_size: int,
                         random_seed: RandomSeed, start: int) -> Iterator[list[pd.DataFrame]]:
    """The work of :meth:`CARTSynthesizer.posterior_replicates` (documented there)."""
    from bayes_risk.models._replicates import check_replicate_columns, iter_replicates

    check_is_fitted(model, "trees_")
    if model.donor != "bayes_bootstrap":
        raise ValidationError(
            f"posterior replicates need donor='bayes_bootstrap' (got donor={model.donor!r}): "
            "with equal donor weights the synthesizer has no posterior over the leaf "
            "distributions, so its syntheses are not posterior-predictive draws.",
            code="NO_POSTERIOR_PREDICTIVE"
        )
    cols = check_replicate_columns(columns, model.visit_sequence_, type(model).__name__)
    return iter_replicates(lambda rng: model._synthesize_one(rng, cols)[0], n, columns=cols,
                           chunk_size=chunk_size, random_seed=random_seed, start=start)


def synthesize_one(model, rng: np.random.Generator, columns: Sequence[str] | None = None
                   ) -> tuple[pd.DataFrame, dict[str, int]]:
    # columns: return only these synthesized columns (replicates; the same draws)
    sel = np.flatnonzero(model.records_)
    cur: dict[str, np.ndarray] = {}  # current values of selected records, per column
    src: dict[str, np.ndarray] = {}  # donor row of each selected record (non-smoothed)
    unrout: dict[str, int] = {}
    layout = getattr(model, "missing_", {})
    for col in model.visit_sequence_:
        tree = model.trees_[col]
        lay = layout.get(col)
        if lay is not None and lay["type"] == "two_step":
            two_step(model, col, lay, sel, cur, src, unrout, rng)
            continue
        # routing without random draws on fixed predictors: the same nodes every synthesis
        fixed = model.unroutable == "climb" and not any(p in cur for p in model.predictors_[col])
        routed = _FIXED_ROUTES.get(tree) if fixed else None
        if routed is None:
            routed = route_blocks(model, tree, col, cur, sel, rng)
            if fixed:  # shared by every later synthesis: read-only
                for a in routed[1:]:
                    a.flags.writeable = False
                _FIXED_ROUTES[tree] = routed
        n_flag, used, inv, seg_start, sizes, pos_map = routed
        unrout[col] = n_flag
        if col in model.smoothed_:
            vals = kernel_draw(model, col, tree, used, inv, seg_start, sizes, pos_map, rng)
            cur[col] = vals
            src.pop(col, None)
        else:
            j = segment_choice(seg_start, sizes, inv, rng,
                               bayes_bootstrap=model.donor == "bayes_bootstrap")
            rows = tree.donor_rows[pos_map[j]]
            src[col] = rows
            cur[col] = model._values[col][rows]
    out = model._data.copy() if columns is None else model._data[list(columns)].copy()
    for col in model.visit_sequence_ if columns is None else columns:
        if col in src:
            new = model._data[col].take(src[col]).to_numpy()
        else:
            new = cur[col]
            dt = model._data[col].dtype
            if model._integer.get(col) and pd.api.types.is_integer_dtype(dt):
                if isinstance(dt, np.dtype):
                    new = np.round(new).astype(dt)
                else:  # a nullable integer column: an empty cell is <NA>
                    new = pd.array(np.round(new), dtype="Float64").astype(dt)
        s = out[col].copy()
        s.iloc[sel] = new
        out[col] = s
    out.index = model._index
    return out, unrout


def two_step(model, col, lay, sel, cur, src, unrout, rng) -> None:
    """Synthesize a numeric column with missing values in two steps (synthpop's ``cont.na``):
    the missingness kind from the kind tree's donors, then, for the records whose synthetic
    kind is "observed", a value from the value tree (fitted on the observed records)."""
    ktree = model.missing_trees_[col]
    fixed = model.unroutable == "climb" and not any(p in cur for p in model.predictors_[col])
    routed = _FIXED_ROUTES.get(ktree) if fixed else None
    if routed is None:
        routed = route_blocks(model, ktree, col, cur, sel, rng)
        if fixed:
            for a in routed[1:]:
                a.flags.writeable = False
            _FIXED_ROUTES[ktree] = routed
    n_flag, used, inv, seg_start, sizes, pos_map = routed
    j = segment_choice(seg_start, sizes, inv, rng,
                       bayes_bootstrap=model.donor == "bayes_bootstrap")
    rows = ktree.donor_rows[pos_map[j]]  # donors of the kind: their value is that kind
    obs = np.flatnonzero(kind_codes(model._values[col][rows], lay["codes"]) == 0)
    vals = model._values[col][rows]
    if obs.size:
        tree = model.trees_[col]
        n_f2, used, inv, seg_start, sizes, pos_map = route_blocks(
            model, tree, col, cur, sel, rng, subset=obs)
        n_flag += n_f2
        if col in model.smoothed_:
            vals = vals.copy()
            vals[obs] = kernel_draw(model, col, tree, used, inv, seg_start, sizes, pos_map,
                                          rng)
        else:
            j = segment_choice(seg_start, sizes, inv, rng,
                               bayes_bootstrap=model.donor == "bayes_bootstrap")
            rows = rows.copy()
            rows[obs] = tree.donor_rows[pos_map[j]]
            vals = model._values[col][rows]
    unrout[col] = n_flag
    cur[col] = vals
    if col in model.smoothed_:
        src.pop(col, None)
    else:
        src[col] = rows


def route_blocks(model, tree, col, cur, sel, rng, subset=None):
    """Route the selected records (``subset``: only these of them) through ``tree``: the
    number of unroutable records, the used nodes, each record's node among them and the
    nodes' concatenated donor blocks."""
    preds = model.predictors_[col]
    n_rec = sel.size if subset is None else subset.size
    if preds:
        layout = getattr(model, "missing_", {})

        def value_of(p: str) -> np.ndarray:
            v = cur[p] if p in cur else model._values[p][sel]
            return v if subset is None else v[subset]

        X, codes = tree.design.matrix(
            design_inputs(model.schema_, preds, layout, value_of)[3]
        )
    else:
        X = np.zeros((n_rec, 1), dtype=np.float32)
        codes = np.zeros((n_rec, 0), dtype=np.int64)
    node, flag = tree.route(X, codes, model.unroutable, rng)
    used, inv = np.unique(node, return_inverse=True)
    sizes = tree.node_size[used]
    # concatenated donor blocks of the used nodes (internal nodes overlap their leaves)
    seg_start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    pos_map = np.repeat(tree.node_start[used] - seg_start, sizes) + np.arange(int(sizes.sum()))
    return int(flag.sum()), used, inv, seg_start, sizes, pos_map


def kernel_draw(model, col, tree, used, inv, seg_start, sizes, pos_map, rng):
    """Per-leaf truncated Gaussian kernel draws (Wang & Reiter 2012), vectorised."""
    from scipy.stats import truncnorm

    yv = tree.y_sorted.astype(np.float64)
    G = used.size
    # 1. n_L bootstrap values per used node (Bayesian bootstrap or uniform donor)
    which_b = np.repeat(np.arange(G), sizes)
    jb = segment_choice(seg_start, sizes, which_b, rng,
                        bayes_bootstrap=model.donor == "bayes_bootstrap")
    b = yv[pos_map[jb]]
    h_node = model.bandwidth_[col][used]
    lo_node = np.minimum.reduceat(yv[pos_map], seg_start) if G else np.array([])
    hi_node = np.maximum.reduceat(yv[pos_map], seg_start) if G else np.array([])
    hb, lob, hib = h_node[which_b], lo_node[which_b], hi_node[which_b]
    degenerate = (hib <= lob) | (hb <= 0)
    safe_h = np.where(degenerate, 1.0, hb)
    mass = np.where(
        degenerate, 1.0,
        np.exp(_log_ndtr_diff((lob - b) / safe_h, (hib - b) / safe_h)),
    )
    # 2. each routed record picks a component with probability ∝ its truncated mass
    k = segment_choice(seg_start, sizes, inv, rng, weights=mass)
    centre, h, lo, hi = b[k], safe_h[k], lob[k], hib[k]
    deg = degenerate[k]
    u = rng.random(k.size)
    a_std, b_std = (lo - centre) / h, (hi - centre) / h
    z = np.zeros(k.size)
    nd = ~deg
    if nd.any():
        z[nd] = truncnorm.ppf(u[nd], a_std[nd], b_std[nd])
    vals = np.where(deg, centre, np.clip(centre + h * z, lo, hi))
    d = model._decimals.get(col)
    if model._integer.get(col):
        vals = np.round(vals)
    elif d is not None:
        vals = np.round(vals, d)
    return np.clip(vals, lo, hi)
