"""Explicit design matrices and GLM log-densities for sequential regressions.

A design is intercept + numeric predictors + treatment coding of categorical ones (R's
``model.matrix`` names, such as ``Urban[T.2]``, as draws exported from Stan/brms have them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import gammaln, log_expit, logsumexp

from bayes_risk._constraints import Text, check_value
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import decode, encode
from bayes_risk.exceptions import SchemaError, ValidationError

__all__ = [
    "NeighbourhoodUnavailable",
    "FAMILIES",
    "DesignSpec",
    "column_values",
    "family_loglik",
    "parse_formula",
    "normal_exact_posterior",
    "output_column",
]

class NeighbourhoodUnavailable(ValidationError, NotImplementedError):
    """The one-variable-different neighbourhood does not exist for this model's columns (the
    attribute engine falls back to candidate records)."""


def row_frame(record_row: pd.DataFrame | pd.Series) -> pd.DataFrame:
    """A one-row DataFrame from a row (a Series taken with ``df.iloc[i]`` has object dtype)."""
    if isinstance(record_row, pd.Series):
        return record_row.to_frame().T.infer_objects()
    if isinstance(record_row, pd.DataFrame) and len(record_row) == 1:
        return record_row
    raise ValidationError("record_row must be a one-row DataFrame or a Series (one record).")


#: families of the sequential regressions and the column types each accepts as outcome
FAMILIES: dict[str, tuple[str, ...]] = {
    "normal": ("continuous", "count"),
    "bernoulli_logit": ("categorical", "ordinal"),
    "multinomial_logit": ("categorical", "ordinal"),
    "poisson_log": ("count",),
    "categorical": ("categorical", "ordinal"),
}


def parse_formula(formula: str, target: str | None = None) -> tuple[str | None, list[str]]:
    """Parse ``"y ~ a + b"`` (or ``"a + b"``) into ``(y, [a, b])``; only sums of column names
    (``"y ~ 1"``: no predictors).

    Raises
    ------
    ValidationError
        For anything else, naming the offending term.
    """
    check_value(formula, Text("a non-empty string like 'y ~ x1 + x2'"), "formula")
    lhs: str | None
    if "~" in formula:
        lhs, rhs = formula.split("~", 1)
        lhs = lhs.strip() or None
    else:
        lhs, rhs = None, formula
    if target is not None and lhs is not None and lhs != target:
        raise ValidationError(f"formula {formula!r} has outcome {lhs!r}; expected {target!r}.")
    terms = [t.strip() for t in rhs.split("+")]
    preds: list[str] = []
    for t in terms:
        if t in ("1", ""):
            if t == "" and len(terms) > 1:
                raise ValidationError(f"formula {formula!r} has an empty term.")
            continue
        if any(ch in t for ch in "*:()^-/|") or " " in t:
            raise ValidationError(
                f"formula {formula!r}: term {t!r} is not a column name; only sums of column "
                "names are supported (intercept + main effects, categorical columns dummy-coded)."
            )
        preds.append(t)
    return lhs, preds


@dataclass(frozen=True)
class DesignSpec:
    """How to build the design row ``x_v`` of one outcome from a record.

    Attributes
    ----------
    predictors : tuple of str
        Predictor columns in order.
    kinds : tuple of {"numeric", "categorical"}
    n_levels : tuple of int
        Levels of categorical predictors (0 for numeric).
    names : tuple of str
        Coefficient names: ``(Intercept)``, numeric names, ``col[T.level]`` dummies, and
        ``col[missing]`` after the columns of a predictor in ``padded``.
    padded : tuple of str
        Predictors with missing values: a missing cell enters as 0 (numeric) or as no dummy
        (categorical), and the indicator ``col[missing]`` tells it apart (synthpop's padding).
    """

    predictors: tuple[str, ...]
    kinds: tuple[str, ...]
    n_levels: tuple[int, ...]
    names: tuple[str, ...]
    padded: tuple[str, ...] = ()

    @classmethod
    def from_schema(cls, schema: Schema, predictors: Sequence[str],
                    padded: Sequence[str] = ()) -> DesignSpec:
        """Design of intercept + predictors, with the schema's levels for dummy coding and an
        indicator column after each predictor in ``padded``."""
        names = ["(Intercept)"]
        kinds, nlev = [], []
        padded = tuple(c for c in predictors if c in set(padded))
        for c in predictors:
            spec = schema[c]
            if spec.is_categorical:
                lv = list(spec.levels or ())
                if len(lv) < 2:
                    raise SchemaError(f"categorical predictor {c!r} has fewer than 2 levels.",
                                      code="CONSTANT_COLUMN")
                kinds.append("categorical")
                nlev.append(len(lv))
                names.extend(f"{c}[T.{v}]" for v in lv[1:])
            else:
                kinds.append("numeric")
                nlev.append(0)
                names.append(c)
            if c in padded:
                names.append(f"{c}[missing]")
        return cls(tuple(predictors), tuple(kinds), tuple(nlev), tuple(names), padded)

    @property
    def n_coef(self) -> int:
        """Number of columns of the design matrix (``q``)."""
        return len(self.names)

    def matrix(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        """Design matrix ``[n, q]`` from per-column arrays (codes for categoricals, floats else).

        ``values[c]`` may have any leading shape ``(..., n)``; the result is ``(..., n, q)``.
        """
        first = np.asarray(values[self.predictors[0]]) if self.predictors else None
        shape = () if first is None else first.shape
        if first is None:
            # intercept-only: need a length from somewhere
            raise ValidationError("use intercept_matrix(n) for an intercept-only design.",
                                  code="INVALID_ARGUMENT")
        out = np.zeros(shape + (self.n_coef,), dtype=np.float64)
        out[..., 0] = 1.0
        col = 1
        for c, kind, d in zip(self.predictors, self.kinds, self.n_levels, strict=False):
            v = np.asarray(values[c])
            if kind == "numeric":
                out[..., col] = np.where(np.isnan(v), 0.0, v) if c in self.padded else v
                col += 1
            else:
                codes = v.astype(np.int64)
                for lev in range(1, d):
                    out[..., col] = codes == lev
                    col += 1
            if c in self.padded:
                out[..., col] = np.isnan(v) if kind == "numeric" else v < 0
                col += 1
        return out

    def build(self, values: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """Like :meth:`matrix` but also handles the intercept-only design (``n`` rows)."""
        if not self.predictors:
            return np.ones((n, 1))
        return self.matrix(values)


def column_values(
    df: pd.DataFrame, schema: Schema, columns: Sequence[str]
) -> dict[str, np.ndarray]:
    """Per-column float arrays: integer codes for categorical columns, values otherwise."""
    out: dict[str, np.ndarray] = {}
    cat = [c for c in columns if schema[c].is_categorical]
    if cat:
        codes = encode(df, schema, cat)
        for j, c in enumerate(cat):
            out[c] = codes[:, j].astype(np.float64)
    for c in columns:
        if c not in out:
            out[c] = df[c].to_numpy(dtype=np.float64, na_value=np.nan)
    return out


def family_loglik(
    family: str,
    y: np.ndarray,
    X: np.ndarray | None,
    params: Mapping[str, np.ndarray],
) -> np.ndarray:
    """``[H, n]`` array of ``log f_v(y_i | x_i, Θ_h)`` for one outcome.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES`.
    y : ndarray [n]
        Outcome: values (normal, poisson_log) or integer codes (the others).
    X : ndarray [n, q] or None
        Design matrix (``None`` for ``categorical``).
    params : dict
        ``beta`` ``[H, q]`` (``[H, d-1, q]`` for multinomial_logit), ``sigma`` ``[H]`` (normal),
        ``probs`` ``[H, d]`` (categorical).
    """
    y = np.asarray(y, dtype=np.float64)
    if family == "normal":
        eta = params["beta"] @ X.T  # [H, n]
        sigma = np.asarray(params["sigma"], dtype=np.float64)[:, None]
        # -0.5 r² - log σ - log √(2π), operation by operation in place: the same values as
        # the expression written out, without its [H, n] temporaries
        r = np.subtract(y[None, :], eta, out=eta)
        r /= sigma
        out = -0.5 * r
        out *= r
        out -= np.log(sigma)
        out -= 0.5 * np.log(2.0 * np.pi)
        return out
    if family == "poisson_log":
        eta = params["beta"] @ X.T
        return y[None, :] * eta - np.exp(eta) - gammaln(y + 1.0)[None, :]
    if family == "bernoulli_logit":
        eta = params["beta"] @ X.T
        yy = y[None, :]
        return np.where(yy == 1, log_expit(eta), np.where(yy == 0, log_expit(-eta), -np.inf))
    if family == "multinomial_logit":
        beta = np.asarray(params["beta"], dtype=np.float64)  # [H, d-1, q]
        H, dm1, _ = beta.shape
        eta = np.einsum("hcq,nq->hnc", beta, X)
        full = np.concatenate([np.zeros((H, X.shape[0], 1)), eta], axis=2)  # [H, n, d]
        lse = logsumexp(full, axis=2)
        codes = y.astype(np.int64)
        ok = (codes >= 0) & (codes <= dm1)
        pick = np.clip(codes, 0, dm1)[None, :, None].repeat(H, 0)
        picked = np.take_along_axis(full, pick, axis=2)[..., 0]
        return np.where(ok[None, :], picked - lse, -np.inf)
    if family == "categorical":
        probs = np.asarray(params["probs"], dtype=np.float64)  # [H, d]
        d = probs.shape[1]
        codes = y.astype(np.int64)
        ok = (codes >= 0) & (codes < d)
        with np.errstate(divide="ignore"):
            lp = np.log(probs)
        out = lp[:, np.clip(codes, 0, d - 1)]
        return np.where(ok[None, :], out, -np.inf)
    raise ValidationError(f"family must be one of {sorted(FAMILIES)}. Got {family!r}.")


def family_sample(
    family: str, X: np.ndarray | None, params: Mapping[str, np.ndarray], h: int, n: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draw ``n`` outcomes from ``f_v(· | x_i, Θ_h)`` for one draw ``h`` (values or codes)."""
    if family == "normal":
        eta = X @ params["beta"][h]
        return eta + params["sigma"][h] * rng.standard_normal(n)
    if family == "poisson_log":
        return rng.poisson(np.exp(X @ params["beta"][h])).astype(np.float64)
    if family == "bernoulli_logit":
        p = 1.0 / (1.0 + np.exp(-(X @ params["beta"][h])))
        return (rng.random(n) < p).astype(np.float64)
    if family == "multinomial_logit":
        eta = X @ params["beta"][h].T  # [n, d-1]
        full = np.concatenate([np.zeros((n, 1)), eta], axis=1)
        pr = np.exp(full - logsumexp(full, axis=1, keepdims=True))
        cum = np.cumsum(pr, axis=1)
        u = rng.random(n)[:, None]
        return np.minimum((u > cum).sum(axis=1), pr.shape[1] - 1).astype(np.float64)
    if family == "categorical":
        pr = params["probs"][h]
        return rng.choice(pr.size, size=n, p=pr / pr.sum()).astype(np.float64)
    raise ValidationError(f"family must be one of {sorted(FAMILIES)}. Got {family!r}.")


def normal_exact_posterior(
    X: np.ndarray, y: np.ndarray, n_draws: int, rng: np.random.Generator,
    weights: np.ndarray | None = None,
) -> dict[str, Any]:
    """Independent draws from ``p(β, σ² | y)`` under ``p(β, σ²) ∝ σ^{-2}`` (methods, Sequential
    Bayesian regressions).

    Returns
    -------
    dict with ``beta`` [H, q], ``sigma`` [H], ``beta_hat``, ``s2``, ``df``.

    Raises
    ------
    ValidationError
        If ``n <= q`` or ``X`` is rank deficient (naming the problem).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, q = X.shape
    if n <= q:
        raise ValidationError(
            f"normal regression with {q} coefficients needs more than {q} records; got {n}.",
            code="TOO_FEW_RECORDS"
        )
    rank = np.linalg.matrix_rank(X)
    if rank < q:
        raise ValidationError(
            f"design matrix has rank {rank} < {q} coefficients (collinear predictors or a "
            "categorical level that never occurs); drop or merge predictors.",
            code="RANK_DEFICIENT",
        )
    Q, R = np.linalg.qr(X)
    beta_hat = np.linalg.solve(R, Q.T @ y)
    resid = y - X @ beta_hat
    df = n - q
    s2 = float(resid @ resid) / df
    sigma2 = df * s2 / rng.chisquare(df, size=n_draws)
    Rinv = np.linalg.solve(R, np.eye(q))  # (XᵀX)^{-1} = R^{-1} R^{-T}
    zz = rng.standard_normal((n_draws, q))
    beta = beta_hat[None, :] + np.sqrt(sigma2)[:, None] * (zz @ Rinv.T)
    return {"beta": beta, "sigma": np.sqrt(sigma2), "beta_hat": beta_hat, "s2": s2, "df": df}


def record_dtypes(df: pd.DataFrame) -> dict[str, str]:
    """JSON-able dtype of every column: ``"category"``, ``"category-ordered"`` or a numpy name."""
    out: dict[str, str] = {}
    for c in df.columns:
        dt = df[c].dtype
        if isinstance(dt, pd.CategoricalDtype):
            out[str(c)] = "category-ordered" if dt.ordered else "category"
        else:
            out[str(c)] = str(dt)
    return out


def apply_dtypes(df: pd.DataFrame, dtypes: Mapping[str, str], schema: Schema) -> pd.DataFrame:
    """Give ``df``'s columns the dtypes recorded by :func:`record_dtypes` (categoricals with the
    schema's levels), so synthetic data look like the original table."""
    out = df.copy()
    for c, dt in dtypes.items():
        if c not in out.columns:
            continue
        if dt.startswith("category"):
            levels = list(schema[c].levels or ())
            vals = out[c]
            if isinstance(vals.dtype, pd.CategoricalDtype):
                vals = vals.astype(object)
            out[c] = pd.Categorical(vals, categories=levels, ordered=dt == "category-ordered")
        else:
            try:
                out[c] = out[c].astype(dt)
            except (TypeError, ValueError):  # keep what we have rather than fail on a dtype
                pass
    return out


def cast_column(values: np.ndarray, dtype: str | None) -> np.ndarray | pd.Series:
    """``values`` as a column of the recorded (non-categorical) dtype, or as they are."""
    if values.dtype.kind in "biuf" and dtype == values.dtype.name:
        # numbers already of the dtype: nothing to cast (the DataFrame copies the array; text
        # goes through the Series, whose dtype pandas infers)
        return values
    s = pd.Series(values)
    if dtype is None:
        return s
    try:
        return s.astype(dtype)
    except (TypeError, ValueError):
        return s


def output_column(schema: Schema, dtypes: Mapping[str, str], c: str
                  ) -> Callable[[np.ndarray], object]:
    """The conversion of column ``c``'s drawn values (codes of a categorical column) to the
    released column in its recorded dtype (:func:`record_dtypes`), set up once for all
    datasets."""
    spec = schema[c]
    dtype = dtypes.get(c)
    if spec.is_categorical:
        if dtype is not None and dtype.startswith("category"):
            cat = pd.CategoricalDtype(list(spec.levels or ()), ordered=dtype == "category-ordered")
            # the codes are the positions of the levels: no lookup of the level values
            return lambda new: pd.Categorical.from_codes(new.astype(np.int64), dtype=cat)
        d = len(spec.levels or ())
        # the level values as decode gives them (objects, or int64 when every level is an int)
        table = decode(np.arange(d, dtype=np.int64)[:, None], schema, [c])[c].to_numpy()

        def other(new: np.ndarray) -> np.ndarray | pd.Series:
            codes = new.astype(np.int64)
            if d and codes.min() >= 0:
                return cast_column(table[codes], dtype)
            # a missing code (-1): decode's own path
            return cast_column(decode(codes[:, None], schema, [c])[c].to_numpy(), dtype)

        return other
    if spec.type == "count":
        # a normal model of a count column draws reals: round, and floor at 0
        return lambda new: cast_column(np.clip(np.rint(new), 0, None).astype(np.int64), dtype)
    return lambda new: cast_column(new, dtype)
