"""Propensity models of the pMSE: the logistic design matrix (synthpop's ``utility.gen``
``t ~ .^(max_order + 1)``), its IRLS fit and the CART tree.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayes_risk._memory import check_memory
from bayes_risk.data.levels import level_codes
from bayes_risk.data.missing import missing_kinds
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ValidationError, arg_name

#: a design with more coefficients than records is refused (DESIGN_TOO_LARGE) when its
#: rank-revealing QR alone costs more than this many flops (about a minute on one core)
SATURATED_FLOPS = 1e10
RANK_TOL = 1e-7  # relative tolerance of the rank-revealing step (Snoke et al. 2018)
#: a unit-norm column whose residual on the columns before it, computed from their
#: cross-products, is at least this is kept without the QR (the cross-products' rounding,
#: amplified by the kept columns' conditioning, stays far below it)
CLEAR_RESIDUAL = 1e-3


@dataclass(frozen=True)
class _Block:
    name: str
    columns: np.ndarray  # (N, q)
    labels: list[str]


Prepared = dict[str, np.ndarray]


#: key suffix of a numeric column's missingness kinds in a ``Prepared`` table
_KIND = "\x00missing"


def prepare_table(df: pd.DataFrame | Prepared, schema: Schema, columns: Sequence[str]
                  ) -> Prepared:
    """Arrays per column: level codes (a missing value the code ``d_j``, as synthpop's) or
    float64 values, with a numeric column's missingness kinds (``missing_kinds``) beside."""
    if isinstance(df, dict):
        return df
    out: Prepared = {}
    for c in columns:
        spec = schema[c]
        if spec.is_categorical:
            k = level_codes(df[c], spec.levels, column=c)
            out[c] = np.where(k < 0, spec.n_levels, k)
        else:
            kinds = missing_kinds(df[c], spec.missing_codes)
            x = df[c].to_numpy(dtype=np.float64)
            if kinds.any():
                x = np.where(kinds > 0, np.nan, x)
                out[c + _KIND] = kinds
            out[c] = x
    return out


#: the pMSE's treatment of missing values, as recorded in the results' settings
PMSE_MISSING_POLICY = (
    "synthpop utility.gen: a categorical column's missing value is a level of its own; a "
    "numeric column gets one 0/1 indicator per kind of missing value (empty, each declared "
    "code) and its missing values are set to 0")


def missing_summary(frames: Sequence[Prepared], schema: Schema, columns: Sequence[str]
                    ) -> dict[str, list[str]]:
    """The kinds of missing value of every compared column that has some, over the stacked
    tables: ``{column: ["NA", "-8", ...]}``."""
    out: dict[str, list[str]] = {}
    for c in columns:
        spec = schema[c]
        if spec.is_categorical:
            if any((f[c] == spec.n_levels).any() for f in frames):
                out[c] = ["NA"]
            continue
        kinds = np.unique(np.concatenate([f.get(c + _KIND, np.zeros(0, dtype=np.int64))
                                          for f in frames]))
        labels = ["NA" if k == 1 else f"{spec.missing_codes[k - 2]:g}" for k in kinds if k > 0]
        if labels:
            out[c] = labels
    return out


def _missing_blocks(c: str, spec, frames: Sequence[Prepared], x: np.ndarray) -> list[_Block]:
    """0/1 indicators of each kind of missing value of a numeric column (``<col>_NA``)."""
    if not any(c + _KIND in f for f in frames):
        return []
    kinds = np.concatenate([f.get(c + _KIND, np.zeros(len(f[c]), dtype=np.int64))
                            for f in frames])
    x[kinds > 0] = 0.0  # synthpop sets the missing values to 0 beside the indicators
    out = []
    for k in np.unique(kinds[kinds > 0]):
        label = f"{c}_NA" if k == 1 else f"{c}_NA[{spec.missing_codes[k - 2]:g}]"
        out.append(_Block(c, (kinds == k).astype(np.float64)[:, None], [label]))
    return out


def _variable_blocks(
    frames: Sequence[pd.DataFrame | Prepared], schema: Schema, columns: Sequence[str]
) -> tuple[list[_Block], list[str]]:
    """Main-effect columns of each variable over the stacked tables, and warning codes:
    categorical, indicators of the observed levels but the first (as synthpop); numeric,
    centred and scaled (same fit, better conditioned). Constant variables are dropped."""
    blocks: list[_Block] = []
    codes: list[str] = []
    frames = [prepare_table(f, schema, columns) for f in frames]
    for c in columns:
        spec = schema[c]
        if spec.is_categorical:
            k = np.concatenate([f[c] for f in frames])
            observed = np.flatnonzero(np.bincount(k, minlength=spec.n_levels + 1))
            if len(observed) < spec.n_levels:
                codes.append("EMPTY_LEVELS_DROPPED")
            if len(observed) < 2:
                codes.append("CONSTANT_COLUMN_DROPPED")
                continue
            check_memory(8.0 * len(k) * (len(observed) - 1),
                         f"the levels of {c!r} (group them) or the compared columns",
                         what=f"the indicators of {c!r} ({len(observed):,} levels)")
            # the indicators of the observed levels but the first, column by column (Fortran
            # order, as the design): a 1 where the record's level is the column's
            position = np.zeros(spec.n_levels + 1, dtype=np.int64)
            position[observed] = np.arange(len(observed))
            pos = position[k]
            rows = np.flatnonzero(pos)
            cols = np.zeros((len(k), len(observed) - 1), order="F")
            cols[rows, pos[rows] - 1] = 1.0
            labels = [f"{c}[{spec.levels[j] if j < spec.n_levels else 'NA'}]"
                      for j in observed[1:]]
            blocks.append(_Block(c, cols, labels))
        else:
            x = np.concatenate([f[c] for f in frames])
            extra = _missing_blocks(c, spec, frames, x)
            # constant means all values equal, whatever their scale: np.std of values near
            # 1e-300 underflows to 0 (and near 1e300 overflows), so the column is first
            # scaled by a power of two (exact: other columns standardise bit for bit as before)
            x = x / _power_of_two_scale(x[:, None])[0]
            sd = float(np.std(x)) if np.ptp(x) > 0 else 0.0
            if not sd > 0:
                codes.append("CONSTANT_COLUMN_DROPPED")
            else:
                blocks.append(_Block(c, ((x - x.mean()) / sd)[:, None], [c]))
            blocks.extend(extra)
    return blocks, codes


def propensity_design(
    frames: Sequence[pd.DataFrame | Prepared],
    schema: Schema,
    columns: Sequence[str],
    max_order: int,
) -> tuple[np.ndarray, list[str], list[frozenset[str]], list[str]]:
    """Design matrix of the logistic propensity model over stacked tables.

    Intercept, main effects and every interaction of up to ``max_order + 1`` distinct variables
    (R's ``.^(max_order + 1)``; products of the main-effect columns of the variables involved).

    Returns
    -------
    X : ndarray, shape (N, p)
    names : list of str
        Column labels (``"(Intercept)"``, ``"Age"``, ``"Urban[2]"``, ``"Age:Urban[2]"``…).
    involves : list of frozenset of str
        Variables each column involves.
    codes : list of str
        Warning codes (dropped empty levels / constant columns).
    """
    frames = [prepare_table(f, schema, columns) for f in frames]
    blocks, codes = _variable_blocks(frames, schema, columns)
    N = sum(len(f[columns[0]]) for f in frames)
    top = min(max_order + 1, len(blocks))
    # refuse before allocating: interactions of many-level factors grow the design
    # multiplicatively (the design, its rank check and the IRLS working copies: about 4 copies)
    p = 1 + sum(
        math.prod(b.columns.shape[1] for b in combo)
        for order in range(1, top + 1)
        for combo in itertools.combinations(blocks, order))
    if p > N and float(N) * p * min(N, p) > SATURATED_FLOPS:
        # more coefficients than records: the model fits every record (R's glm aliases the
        # surplus, and small designs are fitted so, as synthpop does), and on a large design the
        # rank-revealing pass alone takes minutes to hours
        widest = max(blocks, key=lambda b: b.columns.shape[1])
        raise ValidationError(
            f"the pMSE logistic model would have {p:,} coefficients for {N:,} records "
            f"(column {widest.name!r} alone has {widest.columns.shape[1]:,} indicator(s)"
            + (f"; max_order={max_order} adds the interactions of every "
               f"{max_order + 1} columns" if max_order > 0 else "")
            + "): more coefficients than records, so the model fits every record, the pMSE "
            "says nothing and the fit would take very long. Use "
            f"{arg_name('max_order', 0)}, group the levels of {widest.name!r}, leave it out of "
            "the compared columns, or use the CART propensity model "
            f"({arg_name('pmse_method', repr('cart'), cli='cart')}).",
            code="DESIGN_TOO_LARGE")
    check_memory(32.0 * N * p, f"{arg_name('max_order')} or the levels of the compared columns",
                 what=f"the pMSE logistic design ({N:,} rows x {p:,} columns)")
    # written column by column in the Fortran order the fit's BLAS calls read
    X = np.empty((N, p), order="F")
    X[:, 0] = 1.0
    names = ["(Intercept)"]
    involves: list[frozenset[str]] = [frozenset()]
    for order in range(1, top + 1):
        for combo in itertools.combinations(blocks, order):
            cols = combo[0].columns
            labels = combo[0].labels
            for b in combo[1:]:
                cols = (cols[:, :, None] * b.columns[:, None, :]).reshape(N, -1)
                labels = [f"{a}:{z}" for a in labels for z in b.labels]
            X[:, len(names):len(names) + len(labels)] = cols
            names.extend(labels)
            involves.extend([frozenset(b.name for b in combo)] * len(labels))
    return X, names, involves, codes


def _power_of_two_scale(X: np.ndarray) -> np.ndarray:
    """Per column, the power of two ``2**e`` with ``max|x| / 2**e`` in ``[1, 2)`` (1 for a
    column of zeros or with a non-finite value)."""
    with np.errstate(invalid="ignore"):  # max and -min: max|x| without a copy of abs(X)
        m = (np.maximum(np.max(X, axis=0), -np.min(X, axis=0)) if X.size
             else np.zeros(X.shape[1]))
    _, ex = np.frexp(np.where(np.isfinite(m) & (m > 0), m, 1.0))
    return np.ldexp(1.0, ex - 1)


def _estimable_columns(X: np.ndarray, tol: float = RANK_TOL, G: np.ndarray | None = None
                       ) -> np.ndarray:
    """Indices of the columns kept by a rank-revealing pass in model order, as R's ``dqrdc2``:
    Householder QR of the unit-norm columns, re-checked until every kept column passes. A design
    whose every column is clearly kept or clearly aliased is settled without the QR, from the
    cross-products ``G`` (upper triangle of ``XᵀX``; computed when not given)."""
    from scipy.linalg.blas import dsyrk

    if G is None:
        G = dsyrk(1.0, np.asfortranarray(X), trans=1, lower=0)
    norms = np.sqrt(np.diag(G))
    keep = np.flatnonzero(norms > 0)
    inv = 1.0 / norms[keep]
    Gn = G[np.ix_(keep, keep)] * inv[:, None] * inv[None, :]  # the unit-norm columns'
    clear = _clear_columns(X, keep, norms, Gn, tol)
    if clear is not None:
        return keep[clear].astype(np.int64)
    # the unit-norm columns, written in the Fortran order LAPACK reads, factorised in place
    Xn = np.empty((X.shape[0], keep.size), order="F")
    np.divide(X[:, keep] if keep.size < X.shape[1] else X, norms[keep], out=Xn)
    return keep[_qr_columns(Xn, tol)].astype(np.int64)


def _clear_columns(X: np.ndarray, keep: np.ndarray, norms: np.ndarray, G: np.ndarray,
                   tol: float) -> np.ndarray | None:
    """The columns ``keep`` of ``X`` that the QR keeps (positions in ``keep``), read off the
    unit-norm cross-products ``G`` (upper triangle) in model order: a column is kept when its
    residual on the kept columns before it is at least ``CLEAR_RESIDUAL`` (far above ``tol``:
    the cross-products lose the residual's low digits), aliased when that residual, recomputed
    from the data, is below ``tol / 10``. ``None`` when a column is in between, where only the
    QR decides (its cost is several times a pass of the IRLS: on CEdata's two-way design it was
    a third of the pMSE)."""
    from scipy.linalg.lapack import dpotrf, dtrtrs

    p = G.shape[0]
    if p > X.shape[0]:
        return None
    # every column clearly kept (the usual design): the Cholesky factor of G in one call is
    # the loop below with every column kept
    L, info = dpotrf(G, lower=0, clean=1)
    if info == 0 and np.all(np.diag(L) >= CLEAR_RESIDUAL):
        return np.arange(p, dtype=np.int64)
    L = np.zeros((p, p), order="F")  # upper Cholesky factor of the kept columns
    kept: list[int] = []
    for j in range(p):
        k = len(kept)
        v = dtrtrs(L[:k, :k], G[kept, j], lower=0, trans=1)[0] if k else np.zeros(0)
        d2 = G[j, j] - v @ v
        if d2 >= CLEAR_RESIDUAL**2:
            L[:k, k] = v
            L[k, k] = math.sqrt(d2)
            kept.append(j)
            continue
        xj = X[:, keep[j]] / norms[keep[j]]
        if kept:  # the residual itself: the cross-products cannot tell 0 from 1e-7
            beta = dtrtrs(L[:k, :k], v, lower=0, trans=0)[0]
            if not np.abs(beta).sum() < 1e6:  # its rounding could hide a residual of 1e-8
                return None
            r = xj - (X[:, keep[kept]] / norms[keep[kept]]) @ beta
        else:
            r = xj
        # an upper bound of the least-squares residual, so below tol / 10 the QR's is below tol
        if not float(np.linalg.norm(r)) < tol / 10:
            return None
    return np.asarray(kept, dtype=np.int64)


def _qr_columns(Xn: np.ndarray, tol: float) -> np.ndarray:
    """The columns of the unit-norm ``Xn`` kept by the Householder QR's diagonal, re-checked
    until every kept column passes."""
    from scipy.linalg import LinAlgError, cholesky, qr

    keep = np.arange(Xn.shape[1])
    first = True
    while True:
        if not first:
            Xk = np.ascontiguousarray(Xn[:, keep])
            try:
                L = cholesky(Xk.T @ Xk, lower=True, check_finite=False)
                if np.all(np.diag(L) >= 10 * tol):
                    return keep
            except LinAlgError:
                pass
        first = False
        # a copy in the Fortran order LAPACK reads, factorised in place
        R = qr(np.asfortranarray(Xn[:, keep]), mode="r", check_finite=False,
               overwrite_a=True)[0]
        ok = np.zeros(keep.size, dtype=bool)  # more columns than rows: the last are aliased
        d = np.abs(np.diag(R))
        ok[: d.size] = d >= tol
        if ok.all():
            return keep
        keep = keep[ok]


@dataclass(frozen=True)
class _LogitFit:
    prob: np.ndarray
    beta: np.ndarray
    keep: np.ndarray
    converged: bool
    n_iter: int


def _deviance(eta: np.ndarray, y: np.ndarray) -> float:
    # log(1 + e^η) as log1p(e^-|η|) + max(η, 0): the value of np.logaddexp(0, η) to rounding,
    # in array passes 2.5 times faster than its element-wise loop
    return float(2.0 * np.sum(np.log1p(np.exp(-np.abs(eta))) + np.maximum(eta, 0.0) - y * eta))


def _wls(Xs: np.ndarray, w: np.ndarray, rhs: np.ndarray, H: np.ndarray | None = None,
         buf: np.ndarray | None = None) -> np.ndarray:
    """Solve the IRLS normal equations ``(Xᵀ W X) β = Xᵀ rhs`` (Cholesky, else least squares);
    ``rhs = W η + (y − μ)`` avoids dividing by weights that are 0. ``H``: the upper triangle of
    ``Xᵀ W X`` when the caller has it; ``buf``: room for the weighted design (Fortran order)."""
    from scipy.linalg.blas import dsyrk
    from scipy.linalg.lapack import dpotrf, dpotrs

    if H is None:
        # upper triangle of Xᵀ W X by a symmetric rank-k update (half the flops of a product);
        # the weighted design is written straight in the Fortran order BLAS reads (no
        # transposing copy)
        Xw = np.empty(Xs.shape, order="F") if buf is None else buf
        np.multiply(Xs, np.sqrt(w)[:, None], out=Xw)
        H = dsyrk(1.0, Xw, trans=1, lower=0)
    g = Xs.T @ rhs
    c, info = dpotrf(H, lower=0, clean=0)
    if info == 0:
        out, info = dpotrs(c, g, lower=0)
        if info == 0 and np.all(np.isfinite(out)):
            return out
    H = np.triu(H) + np.triu(H, 1).T
    return np.linalg.lstsq(H, g, rcond=None)[0]


def fit_logit(X: np.ndarray, y: np.ndarray, *, max_iter: int = 100, tol: float = 1e-8,
              rank_tol: float = RANK_TOL) -> _LogitFit:
    """Unpenalised logistic regression by IRLS with step-halving, as R's ``glm.fit``.

    Aliased columns are dropped first (:doc:`/methods/utility`).

    Parameters
    ----------
    X : ndarray, shape (N, p)
        Design matrix whose first column is the intercept.
    y : ndarray, shape (N,)
        0/1 labels.
    max_iter, tol, rank_tol
        Iterations, relative deviance change at which it stops, rank tolerance.

    Returns
    -------
    _LogitFit
        ``prob``, ``beta`` (of the kept columns), ``keep``, ``converged``, ``n_iter``.
    """
    from scipy.linalg.blas import dsyrk
    from scipy.special import expit  # here, not at import: see bayes_risk/utility/__init__.py

    # a column of tiny (1e-300) or huge values would underflow or overflow in the norms and
    # the normal equations and be dropped as aliased without a word: each column is first
    # scaled by a power of two that brings its largest value into [1, 2) (exact in floating
    # point), into the one copy of the design the fit makes, in the Fortran order BLAS reads
    p2 = _power_of_two_scale(X)
    N = X.shape[0]
    Xs = np.empty(X.shape, order="F")
    np.divide(X, p2, out=Xs)
    G = dsyrk(1.0, Xs, trans=1, lower=0)  # cross-products: the rank pass and the first step
    keep = _estimable_columns(Xs, rank_tol, G)
    if keep.size < X.shape[1]:
        Xs = np.asfortranarray(Xs[:, keep])
        G = G[np.ix_(keep, keep)]
    # columns of unit RMS: the fit is invariant, conditioning is better
    scale = np.sqrt(np.diag(G) / N)
    Xs /= scale  # in place: at 10^5 records each copy of the design is 100 MB
    buf = np.empty(Xs.shape, order="F")  # the weighted design of every iteration
    mu = (y + 0.5) / 2.0
    eta = np.log(mu / (1 - mu))
    dev = _deviance(eta, y)
    beta: np.ndarray | None = None
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (reported as n_iter after the loop)
        w = mu * (1 - mu)
        # equal weights (the first step with 0/1 labels): Xᵀ W X from the cross-products
        H = G / np.outer(scale, scale) * w[0] if it == 1 and np.ptp(w) == 0 else None
        new_beta = _wls(Xs, w, w * eta + (y - mu), H, buf)
        new_eta = Xs @ new_beta
        new_dev = _deviance(new_eta, y)
        halvings = 0
        while (beta is not None and halvings < 30
               and (not np.isfinite(new_dev) or new_dev > dev * (1 + 1e-10))):
            new_beta = (new_beta + beta) / 2
            new_eta = Xs @ new_beta
            new_dev = _deviance(new_eta, y)
            halvings += 1
        old_dev = dev
        beta, eta, dev = new_beta, new_eta, new_dev
        mu = expit(eta)
        if abs(dev - old_dev) / (abs(dev) + 0.1) < tol:
            converged = True
            break
    assert beta is not None
    return _LogitFit(prob=mu, beta=beta / scale / p2[keep], keep=keep, converged=converged,
                     n_iter=it)


def _cart_prob(X: np.ndarray, y: np.ndarray, *, cp: float, min_leaf: int, min_split: int,
               max_depth: int, seed: int) -> np.ndarray:
    """Fitted propensities of a classification tree grown by scikit-learn with rpart's growth
    rules and pruned as rpart prunes at ``cp`` (cost-complexity on the misclassification risk,
    ``α = cp · R(root)``); each record gets the label-1 share of its leaf."""
    from sklearn.tree import DecisionTreeClassifier

    tree = DecisionTreeClassifier(
        criterion="gini",
        min_samples_leaf=min_leaf,
        min_samples_split=min_split,
        max_depth=max_depth,
        random_state=seed)
    tree.fit(X, y)
    if len(tree.classes_) == 1:  # cannot happen with both tables non-empty
        return np.full(len(y), float(tree.classes_[0]))
    t = tree.tree_
    left, right = t.children_left, t.children_right
    val = t.value[:, 0, :]
    share1 = val[:, list(tree.classes_).index(1)] / val.sum(axis=1)
    n_node = t.weighted_n_node_samples
    risk = n_node * np.minimum(share1, 1.0 - share1)
    alpha = cp * risk[0]
    n = t.node_count
    best = np.empty(n)
    terminal = np.zeros(n, dtype=bool)
    for node in range(n - 1, -1, -1):  # children have larger ids than their parent
        own = risk[node] + alpha
        if left[node] == -1:
            best[node] = own
            terminal[node] = True
        else:
            sub = best[left[node]] + best[right[node]]
            if own <= sub:
                best[node] = own
                terminal[node] = True
            else:
                best[node] = sub
    # the terminal node of a record is the first terminal node on its root-to-leaf path
    path = tree.decision_path(X).tocsr()
    ids = path.indices.astype(np.int64)
    key = np.where(terminal[ids], ids, n)
    order_ok = np.diff(path.indptr) > 0
    if not order_ok.all():  # pragma: no cover - every record reaches the root
        raise RuntimeError("decision path without nodes")
    first = np.minimum.reduceat(key, path.indptr[:-1])
    return share1[first]


def _cart_features(frames: Sequence[pd.DataFrame | Prepared], schema: Schema,
                   columns: Sequence[str]) -> np.ndarray:
    """Features for the tree: numeric columns as given, categorical columns one-hot."""
    frames = [prepare_table(f, schema, columns) for f in frames]
    cols = []
    for c in columns:
        spec = schema[c]
        if spec.is_categorical:
            k = np.concatenate([f[c] for f in frames])
            observed = np.unique(k)
            if len(observed) < 2:
                continue
            cols.append((k[:, None] == observed[None, :]).astype(np.float64))
        else:
            x = np.concatenate([f[c] for f in frames])
            extra = _missing_blocks(c, spec, frames, x)
            cols.extend(b.columns for b in extra)
            if np.all(x == x[0]):
                continue
            cols.append(x[:, None])
    if not cols:
        raise ValidationError("every column is constant over the stacked tables; pMSE is 0.",
                              code="CONSTANT_COLUMN")
    return np.hstack(cols)
