"""Synthesis of :class:`~bayes_risk.models.trees.cart.CARTSynthesizer` from its fitted state:
routing, the donors of a node, one synthesis (Bayesian-bootstrap donors or kernel draws).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, check_value
from bayes_risk._rng import RandomSeed, as_generator
from bayes_risk.data.validate import require_synthesized
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.trees.cart_leaf import log_ndtr_diff
from bayes_risk.models.trees.cart_state import CARTState
from bayes_risk.models.trees.missing import design_inputs, kind_codes
from bayes_risk.models.trees.seqtree import column_codes, segment_choice

#: routed blocks of the trees whose predictors are never synthesized (unroutable="climb": no
#: random draws), per fitted tree: every synthesis routes their records to the same nodes
_FIXED_ROUTES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def route(state: CARTState, records: pd.DataFrame, column: str, random_seed: RandomSeed, *,
          unroutable: str) -> tuple[np.ndarray, np.ndarray]:
    """The work of :meth:`CARTSynthesizer.route` (documented there)."""
    tree = _tree(state, column)
    preds = state.predictors[column]
    if not preds:
        return np.zeros(len(records), dtype=np.int64), np.zeros(len(records), dtype=bool)

    def value_of(p: str) -> np.ndarray:
        if state.schema[p].is_categorical:
            return column_codes(records, state.schema, p)
        return records[p].to_numpy(dtype=np.float64, na_value=np.nan)

    X, codes = tree.design.matrix(design_inputs(state.schema, preds, state.missing, value_of)[3])
    rng = as_generator(random_seed) if unroutable == "random_descent" else None
    return tree.route(X, codes, unroutable, rng)


def donors(state: CARTState, column: str, node: int) -> np.ndarray:
    """The work of :meth:`CARTSynthesizer.donors` (documented there)."""
    tree = _tree(state, column)
    node = check_value(node, Interval(int, 0, tree.n_nodes - 1), "node")
    return tree.donor_rows[tree.node_start[node] : tree.node_stop[node]].copy()


def _tree(state: CARTState, column: str):
    """The tree of a synthesized ``column`` (refused: a column a spec draws by regression)."""
    if column in state.regressions:
        raise ValidationError(f"column {column!r} is drawn by {state.regressions[column].method!r}"
                              " (the spec), not by a tree.")
    require_synthesized([column], state.visit_sequence)
    return state.trees[column]


def output_rounding(state: CARTState, column: str) -> tuple[int | None, bool]:
    """The work of :meth:`CARTSynthesizer.output_rounding` (documented there)."""
    if column not in state.leaf_draw.smoothed:
        raise ValidationError(
            f"column {column!r} is not kernel-smoothed (smoothed: "
            f"{list(state.leaf_draw.smoothed)}).")
    integer = bool(state.leaf_draw.integer.get(column))
    decimals = 0 if integer else state.leaf_draw.decimals.get(column)
    final = integer and pd.api.types.is_integer_dtype(state.table.data[column].dtype)
    return decimals, bool(final)


def synthesize_one(state: CARTState, rng: np.random.Generator, columns: Sequence[str] | None = None,
                   *, unroutable: str, donor: str) -> tuple[pd.DataFrame, dict[str, int]]:
    """One synthetic table (``columns``: only these) and the unroutable records per column."""
    sel = np.flatnonzero(state.table.records)
    cur: dict[str, np.ndarray] = {}  # current values of selected records, per column
    src: dict[str, np.ndarray] = {}  # donor row of each selected record (non-smoothed)
    unrout: dict[str, int] = {}
    bb = donor == "bayes_bootstrap"
    for col in state.visit_sequence:
        reg = state.regressions.get(col)
        if reg is not None:
            regression_draw(state, reg, sel, cur, src, rng, proper=bb)
            continue
        tree = state.trees[col]
        lay = state.missing.get(col)
        if lay is not None and lay["type"] == "two_step":
            two_step(state, col, lay, sel, cur, src, unrout, rng, unroutable=unroutable, bb=bb)
            continue
        n_flag, used, inv, seg_start, sizes, pos_map = _cached_route(state, tree, col, cur, sel,
                                                                     rng, unroutable)
        unrout[col] = n_flag
        if col in state.leaf_draw.smoothed:
            vals = kernel_draw(state, col, tree, used, inv, seg_start, sizes, pos_map, rng, bb)
            cur[col] = vals
            src.pop(col, None)
        else:
            j = segment_choice(seg_start, sizes, inv, rng, bayes_bootstrap=bb)
            rows = tree.donor_rows[pos_map[j]]
            src[col] = rows
            cur[col] = state.table.values[col][rows]
    data = state.table.data
    out = data.copy() if columns is None else data[list(columns)].copy()
    for col in state.visit_sequence if columns is None else columns:
        if col in src:
            new = data[col].take(src[col]).to_numpy()
        else:
            new = cur[col]
            dt = data[col].dtype
            if state.leaf_draw.integer.get(col) and pd.api.types.is_integer_dtype(dt):
                if isinstance(dt, np.dtype):
                    new = np.round(new).astype(dt)
                else:  # a nullable integer column: an empty cell is <NA>
                    new = pd.array(np.round(new), dtype="Float64").astype(dt)
        s = out[col].copy()
        s.iloc[sel] = new
        out[col] = s
    out.index = state.table.index
    return out, unrout


def regression_draw(state: CARTState, reg, sel, cur, src, rng, *, proper: bool) -> None:
    """Draw a column a spec synthesizes by regression (``trees.regression``); a categorical
    one takes its drawn levels from records holding them, so its values keep the data's type;
    synthpop's ``rf`` (``trees.spec_forest``) and ``ctree`` (``trees.spec_ctree``, its tree
    regrown on a bootstrap sample when ``proper``) draw donor records."""
    if reg.method in ("rf", "ctree"):
        def value_of(p: str) -> np.ndarray:
            return cur[p] if p in cur else state.table.values[p][sel]

        src[reg.column] = rows = (reg.draw(value_of, rng) if reg.method == "rf"
                                  else reg.draw(value_of, rng, proper))
        cur[reg.column] = state.table.values[reg.column][rows]
        return
    vals = reg.draw(lambda p: cur[p] if p in cur else state.table.values[p][sel], rng, proper)
    if state.schema[reg.column].is_categorical:
        codes = state.table.values[reg.column]
        # one more code: a missing value, a level of its own (trees.missing)
        lookup = np.full(state.schema[reg.column].n_levels + 1, -1, dtype=np.int64)
        first = np.unique(codes, return_index=True)
        lookup[first[0].astype(np.int64)] = first[1]
        src[reg.column] = lookup[vals]
        vals = codes[src[reg.column]]
    else:
        src.pop(reg.column, None)
    cur[reg.column] = vals


def two_step(state: CARTState, col, lay, sel, cur, src, unrout, rng, *, unroutable: str,
             bb: bool) -> None:
    """Synthesize a numeric column with missing values in two steps (synthpop's ``cont.na``):
    its missingness kind, then the value of the records drawn "observed"."""
    ktree = state.missing_trees[col]
    n_flag, used, inv, seg_start, sizes, pos_map = _cached_route(state, ktree, col, cur, sel, rng,
                                                                 unroutable)
    j = segment_choice(seg_start, sizes, inv, rng, bayes_bootstrap=bb)
    rows = ktree.donor_rows[pos_map[j]]  # donors of the kind: their value is that kind
    obs = np.flatnonzero(kind_codes(state.table.values[col][rows], lay["codes"]) == 0)
    vals = state.table.values[col][rows]
    if obs.size:
        tree = state.trees[col]
        n_f2, used, inv, seg_start, sizes, pos_map = route_blocks(
            state, tree, col, cur, sel, rng, unroutable, subset=obs)
        n_flag += n_f2
        if col in state.leaf_draw.smoothed:
            vals = vals.copy()
            vals[obs] = kernel_draw(state, col, tree, used, inv, seg_start, sizes, pos_map, rng, bb)
        else:
            j = segment_choice(seg_start, sizes, inv, rng, bayes_bootstrap=bb)
            rows = rows.copy()
            rows[obs] = tree.donor_rows[pos_map[j]]
            vals = state.table.values[col][rows]
    unrout[col] = n_flag
    cur[col] = vals
    if col in state.leaf_draw.smoothed:
        src.pop(col, None)
    else:
        src[col] = rows


def _cached_route(state: CARTState, tree, col, cur, sel, rng, unroutable: str):
    """:func:`route_blocks`, kept when no predictor is synthesized yet and routing draws nothing
    (every synthesis routes to the same nodes)."""
    fixed = unroutable == "climb" and not any(p in cur for p in state.predictors[col])
    routed = _FIXED_ROUTES.get(tree) if fixed else None
    if routed is None:
        routed = route_blocks(state, tree, col, cur, sel, rng, unroutable)
        if fixed:  # shared by every later synthesis: read-only
            for a in routed[1:]:
                a.flags.writeable = False
            _FIXED_ROUTES[tree] = routed
    return routed


def route_blocks(state: CARTState, tree, col, cur, sel, rng, unroutable: str, subset=None):
    """Route the selected records through ``tree``: unroutable count, used nodes, each record's
    node among them and the nodes' concatenated donor blocks."""
    preds = state.predictors[col]
    n_rec = sel.size if subset is None else subset.size
    if preds:
        def value_of(p: str) -> np.ndarray:
            v = cur[p] if p in cur else state.table.values[p][sel]
            return v if subset is None else v[subset]

        X, codes = tree.design.matrix(
            design_inputs(state.schema, preds, state.missing, value_of)[3])
    else:
        X = np.zeros((n_rec, 1), dtype=np.float32)
        codes = np.zeros((n_rec, 0), dtype=np.int64)
    node, flag = tree.route(X, codes, unroutable, rng)
    used, inv = np.unique(node, return_inverse=True)
    sizes = tree.node_size[used]
    # concatenated donor blocks of the used nodes (internal nodes overlap their leaves)
    seg_start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    pos_map = np.repeat(tree.node_start[used] - seg_start, sizes) + np.arange(int(sizes.sum()))
    return int(flag.sum()), used, inv, seg_start, sizes, pos_map


def kernel_draw(state: CARTState, col, tree, used, inv, seg_start, sizes, pos_map, rng, bb):
    """Per-leaf truncated Gaussian kernel draws (Wang & Reiter 2012), vectorised; ``bb``:
    Bayesian-bootstrap values (else uniform donors)."""
    from scipy.stats import truncnorm

    yv = tree.y_sorted.astype(np.float64)
    G = used.size
    # 1. n_L bootstrap values per used node (Bayesian bootstrap or uniform donor)
    which_b = np.repeat(np.arange(G), sizes)
    jb = segment_choice(seg_start, sizes, which_b, rng, bayes_bootstrap=bb)
    b = yv[pos_map[jb]]
    h_node = state.leaf_draw.bandwidth[col][used]
    lo_node = np.minimum.reduceat(yv[pos_map], seg_start) if G else np.array([])
    hi_node = np.maximum.reduceat(yv[pos_map], seg_start) if G else np.array([])
    hb, lob, hib = h_node[which_b], lo_node[which_b], hi_node[which_b]
    degenerate = (hib <= lob) | (hb <= 0)
    safe_h = np.where(degenerate, 1.0, hb)
    mass = np.where(degenerate, 1.0, np.exp(log_ndtr_diff((lob - b) / safe_h, (hib - b) / safe_h)))
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
    d = state.leaf_draw.decimals.get(col)
    if state.leaf_draw.integer.get(col):
        vals = np.round(vals)
    elif d is not None:
        vals = np.round(vals, d)
    return np.clip(vals, lo, hi)
