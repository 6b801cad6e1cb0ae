"""synthpop 1.9-2's regression methods ``norm``, ``normrank``, ``pmm``, ``logreg``, ``polyreg``
and ``polr`` of a :class:`~bayes_risk.models.SynthesisSpec` (``R/functions.syn.r``). See
:doc:`/user_guide/synthesizers`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ConvergenceWarning
from bayes_risk.models.trees.missing import kind_codes

__all__ = ["NUMERIC_METHODS", "REGRESSION_METHODS", "RegressionColumn"]

_RIDGE = 1e-5  # synthpop's .norm.fix.syn / .norm.draw.syn ``ridge``
_PMM_DONORS = 3  # synthpop's .pmm.match ``donors``
#: the regression methods for numeric columns (a least-squares line) and all of them
NUMERIC_METHODS = ("norm", "normrank", "pmm")
REGRESSION_METHODS = (*NUMERIC_METHODS, "logreg", "polyreg", "polr")


class RegressionColumn:
    """One synthesized column drawn by a regression method (``REGRESSION_METHODS``) from its
    ``predictors`` (missing values as synthpop's ``padMis.syn``: a numeric column's kind is
    drawn first, by ``kind_fit``, then its value by ``fit``)."""

    def __init__(self, method: str, column: str, predictors: Sequence[str], schema: Schema,
                 values: dict[str, np.ndarray], decimals: int | None,
                 layout: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.method, self.column, self.predictors = method, column, list(predictors)
        self.schema, self.decimals, self.layout = schema, decimals, dict(layout or {})
        # each numeric column's missingness kinds as synthpop orders its factor's levels:
        # the declared codes present (by value), observed, empty
        self.kinds = {c: _kind_levels(values[c], self.layout[c]["codes"])
                      for c in [*self.predictors, column]
                      if c in self.layout and not schema[c].is_categorical}
        X = self.design(values.__getitem__)
        y = values[column]
        self.kind_fit = None
        if column in self.kinds:
            kind = kind_codes(y, self.layout[column]["codes"])
            levels = np.asarray(self.kinds[column])
            index = np.zeros(levels.max() + 1, dtype=np.int64)
            index[levels] = np.arange(levels.size)
            self.kind_fit = _Fit("logreg" if levels.size == 2 else "polyreg", X, index[kind],
                                 levels.size)
            X, y = X[kind == 0], y[kind == 0]
        n_levels = schema[column].n_levels + (column in self.layout) \
            if schema[column].is_categorical else 0
        self.fit = _Fit(method, X, y, n_levels)

    def design(self, value_of: Callable[[str], np.ndarray]) -> np.ndarray:
        """The predictors as a matrix in synthpop's column order (``padModel.syn``)."""
        numeric, filled, dummies, kind_dummies = [], [], [], []
        for p in self.predictors:
            v = value_of(p)
            if self.schema[p].is_categorical:
                codes = np.asarray(v, dtype=np.int64)
                n_levels = self.schema[p].n_levels + (p in self.layout)
                dummies.extend((codes == k).astype(np.float64) for k in range(1, n_levels))
            elif p in self.kinds:
                x = np.asarray(v, dtype=np.float64)
                kind = kind_codes(x, self.layout[p]["codes"])
                filled.append(np.where(kind > 0, 0.0, x))
                kind_dummies.extend((kind == k).astype(np.float64) for k in self.kinds[p][1:])
            else:
                numeric.append(np.asarray(v, dtype=np.float64))
        cols = [*numeric, *filled, *dummies, *kind_dummies]
        n = len(value_of(self.column)) if not cols else len(cols[0])
        return np.column_stack(cols) if cols else np.zeros((n, 0))

    def draw(self, value_of: Callable[[str], np.ndarray], rng: np.random.Generator,
             proper: bool) -> np.ndarray:
        """Synthetic values (``norm``) or level codes from the predictors' current values."""
        Xp = self.design(value_of)
        if self.kind_fit is None:
            out = self.fit.draw(Xp, rng, proper)
        else:
            codes = self.layout[self.column]["codes"]
            kind = np.asarray(self.kinds[self.column])[self.kind_fit.draw(Xp, rng, proper)]
            # an empty cell is NaN, a declared code its value
            out = np.asarray([np.nan, *codes], dtype=np.float64)[np.maximum(kind - 1, 0)]
            obs = kind == 0
            out[obs] = self.fit.draw(Xp[obs], rng, proper)
        return out if self.method != "norm" or self.decimals is None \
            else np.round(out, self.decimals)


class _Fit:
    """One synthpop regression (one of ``REGRESSION_METHODS``) on the design ``X``."""

    def __init__(self, method: str, X: np.ndarray, y: np.ndarray, n_levels: int) -> None:
        self.method, self.n_levels = method, n_levels
        self.keep = _independent(X, y)
        X = X[:, self.keep]
        if method in NUMERIC_METHODS:
            y = y.astype(np.float64)
            if method == "normrank":  # the line is fitted to the normal scores of the ranks
                from scipy.special import ndtri
                from scipy.stats import rankdata

                self.y_sorted = np.sort(y)
                y = ndtri(rankdata(y) / (y.size + 1))
            self.coef, self.V, self.rss, self.n, self.p = _ols(X, y)
            if method == "pmm":  # donors: the observed values, by their fitted means
                yhat = X @ self.coef[1:] + self.coef[0]
                order = np.argsort(yhat, kind="stable")
                self.yhat, self.y_obs = yhat[order], y[order]
        elif method == "logreg":
            self.center = X.mean(axis=0)
            self.coef, self.cov = _logit(X - self.center, (y == 1).astype(np.float64))
        else:
            self.X, self.y = X, y.astype(np.int64)
            self.level_probs = (_polr if method == "polr" else _multinom)(X, self.y, n_levels)

    def draw(self, Xp: np.ndarray, rng: np.random.Generator, proper: bool) -> np.ndarray:
        """Draws for the rows of the design ``Xp`` (plug-in, or parameters drawn: ``proper``)."""
        Xp = Xp[:, self.keep]
        n = Xp.shape[0]
        if self.method in NUMERIC_METHODS:
            coef, sigma = self.coef, np.sqrt(self.rss / (self.n - self.p - 1))
            if proper:  # Rubin (1987, p. 167), synthpop's .norm.draw.syn
                sigma = np.sqrt(self.rss / rng.chisquare(self.n - self.p))
                L = np.linalg.cholesky((self.V + self.V.T) / 2)
                coef = coef + L @ rng.standard_normal(self.p) * sigma
            mean = np.column_stack([np.ones(n), Xp]) @ coef
            if self.method == "pmm":  # no noise: the drawn line picks the donors
                return _pmm_match(mean, self.yhat, self.y_obs, rng)
            pred = mean + rng.standard_normal(n) * sigma
            if self.method == "normrank":  # back through the ranks to an observed value
                from scipy.special import ndtr

                m = self.y_sorted.size
                k = np.clip(np.round(ndtr(pred) * (m + 1)), 1, m).astype(np.int64)
                return self.y_sorted[k - 1]
            return pred
        if self.method == "logreg":
            coef = self.coef
            if proper:
                coef = coef + np.linalg.cholesky(self.cov) @ rng.standard_normal(coef.size)
            prob = 1 / (1 + np.exp(-(np.column_stack([np.ones(n), Xp - self.center]) @ coef)))
            return (rng.random(n) <= prob).astype(np.int64)
        fit = self.level_probs
        if proper:  # synthpop refits on a bootstrap sample of the records
            s = rng.integers(0, self.y.size, self.y.size)
            fit = (_polr if self.method == "polr" else _multinom)(self.X[s], self.y[s],
                                                                   self.n_levels)
        prob = fit(Xp)
        u = rng.random(n)
        return np.minimum((u[:, None] > np.cumsum(prob, axis=1)).sum(axis=1), prob.shape[1] - 1)


def _pmm_match(target: np.ndarray, yhat: np.ndarray, y: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
    """synthpop's ``.pmm.match``: per target, one of the ``_PMM_DONORS`` records whose fitted
    mean (``yhat``, sorted; ``y`` their values) is nearest, ties broken at random.

    The donors are the records of the nearest distinct fitted means: whole groups of equal
    means while they fit, then a random part of the next tie class. One donor drawn uniformly
    among them is a group drawn with weight (records of it taken) / donors, then a record of it.
    """
    uniq, start, count = np.unique(yhat, return_index=True, return_counts=True)
    n_don = min(_PMM_DONORS, yhat.size)
    # the nearest groups lie within _PMM_DONORS distinct means on either side
    pos = np.searchsorted(uniq, target)
    cand = pos[:, None] + np.arange(-n_don, n_don)[None, :]
    valid = (cand >= 0) & (cand < uniq.size)
    cand = np.clip(cand, 0, uniq.size - 1)
    dist = np.where(valid, np.abs(uniq[cand] - target[:, None]), np.inf)
    o = np.argsort(dist, axis=1, kind="stable")
    cand, dist = np.take_along_axis(cand, o, 1), np.take_along_axis(dist, o, 1)
    cnt = np.where(np.isfinite(dist), count[cand], 0)
    # tie classes: equal distances (within rounding) share the remaining donor places
    scale = np.maximum(np.abs(target)[:, None], 1.0)
    new = np.ones_like(dist, dtype=bool)
    with np.errstate(invalid="ignore"):  # inf - inf past the table's ends: a class of its own
        new[:, 1:] = ~(np.abs(dist[:, 1:] - dist[:, :-1]) <= 1e-12 * scale)
    cls = np.cumsum(new, axis=1) - 1
    rows = np.arange(len(target))[:, None]
    cls_total = np.zeros_like(cnt)
    np.add.at(cls_total, (np.broadcast_to(rows, cls.shape), cls), cnt)
    size = np.take_along_axis(cls_total, cls, 1)
    before = np.take_along_axis(np.cumsum(cls_total, axis=1) - cls_total, cls, 1)
    take = np.clip(n_don - before, 0, size)
    w = np.where(size > 0, cnt * take / np.maximum(size, 1), 0.0)
    u = rng.random(len(target)) * w.sum(axis=1)
    g = np.minimum((np.cumsum(w, axis=1) <= u[:, None]).sum(axis=1), w.shape[1] - 1)
    grp = cand[np.arange(len(target)), g]
    r = start[grp] + np.minimum((rng.random(len(target)) * count[grp]).astype(np.int64),
                                count[grp] - 1)
    return y[r]


def _kind_levels(values: np.ndarray, codes: Sequence[float]) -> list[int]:
    """The missingness kinds present in ``values``, in the order of synthpop's factor levels
    (``padMis.syn``): the declared codes by value, observed (its large stand-in), empty (last)."""
    present = set(np.unique(kind_codes(values, codes)).tolist())
    by_value = [2 + int(k) for k in np.argsort(np.asarray(codes, dtype=np.float64), kind="stable")]
    return [k for k in [*by_value, 0, 1] if k in present]


def _independent(X: np.ndarray, y: np.ndarray, eps: float = 1e-5,
                 maxcor: float = 0.99999) -> np.ndarray:
    """synthpop's ``remove.lindep.syn``: drop constant predictors, those correlated with ``y``
    above ``maxcor``, then one at a time while the correlation matrix is near singular."""
    if X.shape[1] == 0:
        return np.zeros(0, dtype=bool)
    keep = X.var(axis=0, ddof=1) > eps
    yv = np.asarray(y, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        cor = np.array([np.corrcoef(X[:, j], yv)[0, 1] if keep[j] else np.nan
                        for j in range(X.shape[1])])
    keep &= np.nan_to_num(cor, nan=2.0) < maxcor
    while keep.sum() > 1:
        vals, vecs = np.linalg.eigh(np.corrcoef(X[:, keep], rowvar=False))
        if vals[0] / vals[-1] >= eps:
            break
        idx = np.flatnonzero(keep)
        keep[idx[np.argmax(np.abs(vecs[:, 0]))]] = False
    return keep


def _ols(X: np.ndarray, y: np.ndarray):
    """synthpop's ridge-stabilised least squares: coefficients, (X'X + ridge)^-1, RSS, n, p."""
    X1 = np.column_stack([np.ones(len(y)), X])
    xtx = X1.T @ X1
    V = np.linalg.inv(xtx + np.diag(_RIDGE * np.diag(xtx)))
    coef = V @ (X1.T @ y)
    rss = float(np.sum((y - X1 @ coef) ** 2))
    return coef, V, rss, len(y), X1.shape[1]


def _augment(X: np.ndarray, codes: np.ndarray, y: np.ndarray):
    """synthpop's ``augment.syn`` (White, Daniel & Royston 2010): ``2 p k`` pseudo-records at
    the predictors' mean ± sd/2 (within their range), each outcome level, weight (p+1)/(2pk)."""
    p = X.shape[1]
    if p == 0:
        return X, y, np.ones(len(y))
    k = codes.size
    nr = 2 * p * k
    pattern = np.r_[np.tile([0.5, -0.5], k), np.zeros(nr)]
    b = np.resize(pattern, nr * p).reshape(p, nr).T  # R fills the matrix by column
    d = X.mean(axis=0) + b * X.std(axis=0, ddof=1)
    d = np.clip(d, X.min(axis=0), X.max(axis=0))
    e = np.tile(np.repeat(codes, 2), p)
    w = np.r_[np.ones(len(y)), np.full(nr, (p + 1) / nr)]
    return np.vstack([X, d]), np.r_[y, e], w


def _logit(X: np.ndarray, y: np.ndarray):
    """Weighted logistic regression on the augmented records by IRLS (R's ``glm.fit``): the
    estimate and its unscaled covariance."""
    Xa, ya, w = _augment(X, np.array([0.0, 1.0]), y)
    X1 = np.column_stack([np.ones(len(ya)), Xa])
    beta = np.zeros(X1.shape[1])
    for _ in range(100):
        eta = X1 @ beta
        mu = 1 / (1 + np.exp(-eta))
        W = w * np.clip(mu * (1 - mu), 1e-10, None)
        H = X1.T @ (W[:, None] * X1)
        step = np.linalg.solve(H, X1.T @ (w * (ya - mu)))
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10 * (1 + np.max(np.abs(beta))):
            break
    else:
        import warnings

        warnings.warn(ConvergenceWarning("logreg: the logistic regression did not converge in "
                                         "100 iterations."), stacklevel=3)
    mu = 1 / (1 + np.exp(-(X1 @ beta)))
    H = X1.T @ ((w * mu * (1 - mu))[:, None] * X1)
    return beta, np.linalg.inv(H)


def _multinom(X: np.ndarray, y: np.ndarray, n_levels: int) -> Callable[[np.ndarray], np.ndarray]:
    """Multinomial logit on the augmented records by maximum likelihood (nnet's ``multinom``
    with predictors rescaled to [0, 1]); returns the level probabilities of new rows."""
    from scipy.optimize import minimize

    levels = np.unique(y)  # the observed levels (R's factor(y) after a bootstrap)
    Xa, ya, w = _augment(X, levels, y)
    lo, hi = Xa.min(axis=0), Xa.max(axis=0)
    scale = ((lo < 0) | (hi > 1)) & (hi > lo)

    def rescale(M: np.ndarray) -> np.ndarray:
        M = M.copy()
        M[:, scale] = (M[:, scale] - lo[scale]) / (hi[scale] - lo[scale])
        return np.column_stack([np.ones(len(M)), M])

    X1 = rescale(Xa)
    K, q = levels.size, X1.shape[1]
    Y = (ya[:, None] == levels[None, :]).astype(np.float64)

    def nll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        B = np.column_stack([np.zeros(q), theta.reshape(q, K - 1)])  # first level: baseline
        eta = X1 @ B
        eta -= eta.max(axis=1, keepdims=True)
        logp = eta - np.log(np.exp(eta).sum(axis=1, keepdims=True))
        grad = X1.T @ (w[:, None] * (np.exp(logp) - Y))
        return -float(np.sum(w[:, None] * Y * logp)), grad[:, 1:].ravel()

    theta = np.zeros(q * (K - 1))
    if K > 1:
        theta = minimize(nll, theta, jac=True, method="BFGS",
                         options={"maxiter": 1000, "gtol": 1e-8}).x
    B = np.column_stack([np.zeros(q), theta.reshape(q, K - 1)])

    def probs(Xp: np.ndarray) -> np.ndarray:
        eta = rescale(Xp) @ B
        eta -= eta.max(axis=1, keepdims=True)
        p = np.exp(eta)
        out = np.zeros((len(Xp), n_levels))
        out[:, levels] = p / p.sum(axis=1, keepdims=True)
        return out

    return probs


def _polr(X: np.ndarray, y: np.ndarray, n_levels: int) -> Callable[[np.ndarray], np.ndarray]:
    """Proportional-odds logistic regression on the augmented records by maximum likelihood
    (MASS's ``polr`` as synthpop's ``syn.polr`` calls it: ``logit P(Y <= k) = zeta_k - x'b``,
    the levels in their order); returns the level probabilities of new rows. As synthpop, a
    fit that fails (sparse data) is replaced by the multinomial logit, with a warning."""
    import warnings

    from scipy.optimize import minimize
    from scipy.special import expit

    levels = np.unique(y)
    K = levels.size
    if K == 1:  # one level observed (a bootstrap sample may hold one): it is every draw
        return lambda Xp: np.eye(n_levels)[np.full(len(Xp), levels[0])]
    Xa, ya, w = _augment(X, levels, y)
    # predictors on [0, 1] for the optimiser (the model is invariant: the cut points shift)
    lo, span = Xa.min(axis=0), Xa.max(axis=0) - Xa.min(axis=0)
    span[span == 0] = 1.0
    Xa = (Xa - lo) / span
    k_of = np.searchsorted(levels, ya)
    p = Xa.shape[1]
    # start: no slope, the cut points at the logits of the cumulative proportions
    cum = np.cumsum(np.bincount(k_of, weights=w, minlength=K))[:-1] / w.sum()
    zeta0 = np.log(cum / (1 - cum))
    theta0 = np.r_[np.zeros(p), zeta0[0], np.log(np.maximum(np.diff(zeta0), 1e-8))]

    def unpack(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # increasing cut points through positive increments
        return theta[:p], np.cumsum(np.r_[theta[p], np.exp(theta[p + 1:])])

    def nll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        beta, zeta = unpack(theta)
        eta = Xa @ beta
        cut = np.r_[-np.inf, zeta, np.inf]
        up, lo = cut[k_of + 1] - eta, cut[k_of] - eta
        Fu, Fl = expit(up), expit(lo)
        fu, fl = Fu * (1 - Fu), Fl * (1 - Fl)
        prob = np.maximum(Fu - Fl, 1e-300)
        d_eta = -(fu - fl) / prob
        g_zeta = np.zeros(K - 1)
        inner_u, inner_l = k_of < K - 1, k_of > 0
        np.add.at(g_zeta, k_of[inner_u], (w * fu / prob)[inner_u])
        np.add.at(g_zeta, k_of[inner_l] - 1, -(w * fl / prob)[inner_l])
        # chain rule through the increments: zeta_j = t_0 + sum_{i<=j} exp(t_i)
        g_t = np.r_[g_zeta.sum(), np.cumsum(g_zeta[::-1])[::-1][1:] * np.exp(theta[p + 1:])]
        grad = np.r_[Xa.T @ (w * d_eta), g_t]
        return -float(np.sum(w * np.log(prob))), -grad

    res = minimize(nll, theta0, jac=True, method="BFGS", options={"maxiter": 1000, "gtol": 1e-6})
    # BFGS may stop on precision loss at the optimum: accept a gradient small against n
    if not np.all(np.isfinite(res.x)) or \
            (not res.success and np.abs(res.jac).max() > 1e-5 * w.sum()):
        from bayes_risk.exceptions import CALLER, BayesRiskWarning

        warnings.warn(BayesRiskWarning(
            "polr: the proportional-odds fit failed (sparse data); the column is drawn by the "
            "multinomial logit instead, as synthpop does (POLR_TO_MULTINOM).",
            code="POLR_TO_MULTINOM"), skip_file_prefixes=CALLER)
        return _multinom(X, y, n_levels)
    # back on the predictors' own scale: polr's coefficients and cut points
    beta, zeta = unpack(res.x)
    beta, zeta = beta / span, zeta + lo @ (beta / span)

    def probs(Xp: np.ndarray) -> np.ndarray:
        F = expit(zeta[None, :] - (Xp @ beta)[:, None])
        out = np.zeros((len(Xp), n_levels))
        out[:, levels] = np.diff(np.column_stack([np.zeros(len(Xp)), F, np.ones(len(Xp))]),
                                 axis=1)
        return out

    probs.coefficients = np.r_[beta, zeta]  # R's order: the slopes, then the cut points
    return probs
