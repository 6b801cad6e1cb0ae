"""Sequential CART synthesizer with a per-leaf Bayesian bootstrap (Reiter 2005).

One tree per synthesized column, fitted on the confidential data; records are routed with their
unsynthesized values and the synthetic values of the columns synthesized before, and each routed
record copies the value of a donor drawn from its leaf with Dirichlet(1, …, 1) weights (Reiter
2005; Drechsler & Reiter 2008; Wang & Reiter 2012). Options cover synthpop's variant (uniform
donor, random descent for unroutable records) and per-leaf truncated Gaussian kernel smoothing.

Also defines the leaf likelihoods used by the attribute-risk engine for tree synthesizers
(methods, Tree synthesizers: plug-in likelihoods): :func:`polya_logprob`,
:func:`truncated_kde_logpdf` and its per-centre terms :func:`kernel_log_terms` (densities, or
probabilities of rounded output values).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import gammaln, log_ndtr

from bayes_risk._numeric import logsumexp
from bayes_risk._progress import progress
from bayes_risk._rng import RandomSeed, as_generator, replayable_seed, seed_to_json, spawn
from bayes_risk.data.schema import Schema, infer_schema
from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.data.validate import check_m, validate_table
from bayes_risk.exceptions import ValidationError
from bayes_risk.models._trees import Design, SeqTree, column_codes, segment_choice
from bayes_risk.models.base import (
    BaseSynthesizer,
    check_is_fitted,
    legacy_call_forms,
    synthesized_columns,
)

__all__ = [
    "CARTSynthesizer",
    "polya_logprob",
    "truncated_kde_logpdf",
    "kernel_log_terms",
    "records_mask",
]


# --------------------------------------------------------------------------------------------
# closed-form leaf likelihoods (Reiter 2005; Wang & Reiter 2012)
# --------------------------------------------------------------------------------------------
def polya_logprob(donor_values: Sequence[Any], synthetic_values: Sequence[Any]) -> float:
    """Log-probability of an ordered sequence of synthetic values drawn from one leaf.

    Under the per-leaf Bayesian bootstrap (Reiter 2005; Wang & Reiter 2012) the synthetic values
    routed to a leaf are a Pólya-urn (Dirichlet–multinomial) sequence:
    ``P = Γ(n_L)/Γ(n_L + u_L) · Π_c Γ(n_c + s_c)/Γ(n_c)`` (Pólya urn probability).

    Parameters
    ----------
    donor_values : sequence
        Confidential values of the leaf's training records (``n_L`` of them; categorical labels
        or numbers, compared exactly).
    synthetic_values : sequence
        Synthetic values of the ``u_L`` records routed to the leaf, as an ordered sequence.

    Returns
    -------
    float
        ``log P``; ``-inf`` when a synthetic value is not among the donors.

    Raises
    ------
    ValidationError
        If there are no donors.

    Examples
    --------
    >>> round(float(np.exp(polya_logprob(["a", "a", "a", "b"], ["a", "b"]))), 6)
    0.15
    """
    donors = np.asarray(donor_values, dtype=object).ravel()
    syn = np.asarray(synthetic_values, dtype=object).ravel()
    if donors.size == 0:
        raise ValidationError("donor_values must hold at least one donor value.")
    if syn.size == 0:
        return 0.0
    levels, n_c = np.unique(np.asarray(donors.tolist()), return_counts=True)
    lookup = {v: k for k, v in enumerate(levels.tolist())}
    s_c = np.zeros(levels.size, dtype=np.int64)
    for v in np.asarray(syn.tolist()).tolist():
        k = lookup.get(v)
        if k is None:
            return float("-inf")
        s_c[k] += 1
    n_l, u_l = donors.size, syn.size
    return float(
        gammaln(n_l) - gammaln(n_l + u_l) + np.sum(gammaln(n_c + s_c) - gammaln(n_c))
    )


def _log_ndtr_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``log(Φ(b) − Φ(a))`` for ``a < b`` (computed stably; mirrored when ``a > 0``)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    flip = a > 0
    lo = np.where(flip, -b, a)
    hi = np.where(flip, -a, b)
    lb = log_ndtr(hi)
    la = log_ndtr(lo)
    with np.errstate(divide="ignore", invalid="ignore"):
        return lb + np.log1p(-np.exp(la - lb))


def _rounding_interval(
    z: np.ndarray, lo: float, hi: float, decimals: int, integer_output: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Interval ``[a, b]`` of kernel draws ``x ∈ [lo, hi]`` that are released as ``z``.

    The synthesizer outputs ``F(clip(round(x, decimals), lo, hi))`` with ``F`` a final rounding to
    integer for integer-dtype columns (:meth:`CARTSynthesizer._synthesize_one`). A value on the
    ``10**-decimals`` grid inside ``[lo, hi]`` comes from its rounding cell; when ``lo`` (``hi``)
    is off the grid (a candidate value, say), the cell that rounds below ``lo`` (above ``hi``) is
    clipped to ``lo`` (``hi``). Empty intervals have ``a >= b``.
    """
    step = 10.0 ** (-decimals)
    tol = 1e-6 * step
    half = 0.5 * step
    k = np.round(z / step)
    on_grid = np.abs(z - k * step) <= tol
    interior = on_grid & (z >= lo - tol) & (z <= hi + tol)
    a = np.where(interior, np.maximum(z - half, lo), np.inf)
    b = np.where(interior, np.minimum(z + half, hi), -np.inf)
    kl = np.round(lo / step)
    if kl * step < lo - tol:  # draws in [lo, (kl + 1/2) step) round below lo and are clipped up
        z_lo = float(np.round(lo)) if integer_output else lo
        hit = np.abs(z - z_lo) <= tol
        a = np.where(hit, np.minimum(a, lo), a)
        b = np.where(hit, np.maximum(b, min((kl + 0.5) * step, hi)), b)
    kh = np.round(hi / step)
    if kh * step > hi + tol:
        z_hi = float(np.round(hi)) if integer_output else hi
        hit = np.abs(z - z_hi) <= tol
        a = np.where(hit, np.minimum(a, max((kh - 0.5) * step, lo)), a)
        b = np.where(hit, np.maximum(b, hi), b)
    return a, b


def kernel_log_terms(
    z: np.ndarray,
    centres: np.ndarray,
    h: float,
    lo: float,
    hi: float,
    *,
    decimals: int | None = None,
    integer_output: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-centre terms of the truncated kernel mixture of Wang & Reiter 2012.

    The mixture with centre weights ``c_k`` is
    ``p(z) = Σ_k c_k K_k(z) / Σ_k c_k M_k``: ``K_k`` is the Gaussian kernel density
    ``φ((z − b_k)/h)/h`` on ``[lo, hi]`` (``0`` outside) or, when the synthesizer rounds its
    output (``decimals`` given), the kernel's mass over the interval of draws that are output as
    ``z`` (:func:`_rounding_interval`); ``M_k = Φ((hi − b_k)/h) − Φ((lo − b_k)/h)`` is the kernel's
    mass on the support (truncation of the whole mixture). When no smoothing is possible
    (``lo == hi`` or ``h <= 0``) the synthesizer outputs the centres themselves (rounded and
    clipped): ``K_k`` is then the indicator that ``z`` equals that output and ``M_k = 1``.

    Parameters
    ----------
    z : array, shape (n_z,)
        Synthetic values.
    centres : array, shape (n,)
        Kernel centres (bootstrap values or donor values).
    h : float
        Bandwidth.
    lo, hi : float
        Support.
    decimals : int, optional
        Output rounded to this many decimals (0 for integers); ``None``: not rounded (densities).
    integer_output : bool
        The column's dtype is integer: the clipped value is rounded once more to an integer.

    Returns
    -------
    log_k : ndarray, shape (n_z, n)
        ``log K_k(z)`` (``-inf`` where ``z`` cannot come from kernel ``k``).
    log_m : ndarray, shape (n,)
        ``log M_k``.
    """
    z = np.asarray(z, dtype=np.float64).ravel()
    b = np.asarray(centres, dtype=np.float64).ravel()
    if lo >= hi or not h > 0:
        if decimals is not None:
            out = np.clip(np.round(b, decimals), lo, hi)
            out = np.round(out) if integer_output else out
            tol = 1e-6 * 10.0 ** (-decimals)
        else:
            out = b
            tol = 1e-9 * np.maximum(1.0, np.abs(z))[:, None]
        hit = np.abs(z[:, None] - out[None, :]) <= tol
        return np.where(hit, 0.0, -np.inf), np.zeros(b.size)
    log_m = _log_ndtr_diff((lo - b) / h, (hi - b) / h)
    if decimals is None:
        zk = (z[:, None] - b[None, :]) / h
        log_k = -0.5 * zk**2 - 0.5 * np.log(2 * np.pi) - np.log(h)
        inside = (z >= lo) & (z <= hi)
        return np.where(inside[:, None], log_k, -np.inf), log_m
    a, top = _rounding_interval(z, lo, hi, decimals, integer_output)
    empty = ~(a < top)
    a = np.where(empty, lo, a)
    top = np.where(empty, hi, top)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_k = _log_ndtr_diff((a[:, None] - b[None, :]) / h, (top[:, None] - b[None, :]) / h)
    return np.where(empty[:, None], -np.inf, log_k), log_m


def truncated_kde_logpdf(
    x: np.ndarray | float,
    b: Sequence[float],
    h: float,
    lo: float,
    hi: float,
    *,
    weights: Sequence[float] | None = None,
    decimals: int | None = None,
    integer_output: bool = False,
) -> np.ndarray:
    """Log-density of the truncated Gaussian kernel mixture of Wang & Reiter 2012.

    ``f(z) = Σ_k φ((z − b_k)/h)/h / Σ_k [Φ((hi − b_k)/h) − Φ((lo − b_k)/h)]``
    on ``[lo, hi]`` (truncation of the whole mixture, renormalised once), ``0`` outside. With
    ``decimals`` the synthesizer's rounded output is modelled instead and the function returns the
    log-*probability* of each value (the mixture mass of its rounding interval within
    ``[lo, hi]``). The terms come from :func:`kernel_log_terms`.

    Parameters
    ----------
    x : float or array
        Points at which to evaluate.
    b : sequence of float
        Kernel centres (the leaf's bootstrap values).
    h : float
        Bandwidth (> 0).
    lo, hi : float
        Support (``lo <= hi``). When ``lo == hi`` no smoothing is possible: the distribution is
        a point mass and the function returns ``0`` (log of probability 1) at ``lo``.
    weights : sequence of float, optional
        Non-negative centre weights (multiplicities); default all 1.
    decimals : int, optional
        The output is rounded to this many decimals: return log-probabilities.
    integer_output : bool
        With ``decimals``: the clipped value is rounded once more to an integer (integer dtype).

    Returns
    -------
    ndarray
        ``log f(x)``; ``-inf`` outside ``[lo, hi]``.

    Raises
    ------
    ValidationError
        For ``h <= 0``, ``lo > hi`` or no centres.

    Examples
    --------
    >>> round(float(np.exp(truncated_kde_logpdf(11.0, [10, 10, 20], 2.0, 10, 20))), 6)
    0.234716
    """
    b = np.asarray(b, dtype=np.float64).ravel()
    x = np.asarray(x, dtype=np.float64)
    if b.size == 0:
        raise ValidationError("b (kernel centres) must hold at least one value.")
    if not (np.isfinite(h) and h > 0):
        raise ValidationError(f"bandwidth h must be a positive number. Got {h!r}.")
    if not lo <= hi:
        raise ValidationError(f"support must satisfy lo <= hi. Got lo={lo!r}, hi={hi!r}.")
    w = np.ones(b.size) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if w.shape != b.shape or np.any(w < 0) or not np.any(w > 0):
        raise ValidationError(
            f"weights must be {b.size} non-negative numbers, not all 0. Got {weights!r}."
        )
    log_k, log_m = kernel_log_terms(
        x.ravel(), b, h, lo, hi, decimals=decimals, integer_output=integer_output
    )
    with np.errstate(divide="ignore"):
        lw = np.log(w)
    out = logsumexp(log_k + lw, axis=-1) - logsumexp(log_m + lw)
    return out.reshape(x.shape)


# --------------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------------
def records_mask(records: Any, n: int, argument: str = "records") -> np.ndarray:
    """Normalise a record selection (boolean mask, integer positions or ``None``) to a mask."""
    if records is None:
        return np.ones(n, dtype=bool)
    arr = np.asarray(records.to_numpy() if isinstance(records, pd.Series) else records)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise ValidationError(
                f"{argument} as a boolean mask must have one entry per record ({n}). "
                f"Got shape {arr.shape}."
            )
        mask = arr.copy()
    elif arr.size == 0 or np.issubdtype(arr.dtype, np.integer):
        idx = arr.astype(np.int64).ravel()
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = idx[(idx < 0) | (idx >= n)][0]
            raise ValidationError(
                f"{argument} holds record position {int(bad)}; expected positions 0..{n - 1}."
            )
        mask = np.zeros(n, dtype=bool)
        mask[idx] = True
    else:
        raise ValidationError(
            f"{argument} must be a boolean mask or integer record positions. Got dtype {arr.dtype}."
        )
    if not mask.any():
        raise ValidationError(f"{argument} selects no record; nothing would be synthesized.")
    return mask


def prepare_schema(
    data: pd.DataFrame, schema: Schema | None, synthesized: Sequence[str] | None
) -> tuple[Schema, list[str]]:
    """Schema with roles set and the ordered list of synthesized columns."""
    if not isinstance(data, pd.DataFrame):
        raise ValidationError(f"data must be a pandas DataFrame. Got {type(data).__name__}.")
    if schema is None:
        schema = infer_schema(data)
    elif not isinstance(schema, Schema):
        raise ValidationError(f"schema must be a bayes_risk Schema. Got {type(schema).__name__}.")
    order = synthesized_columns(synthesized, schema)
    if order is None:
        order = schema.synthesized
    if not order:
        raise ValidationError(
            "no column to synthesize: pass synthesize=[...] or a schema with synthesized roles."
        )
    schema = schema.with_roles(order, known=schema.known)
    validate_table(data, schema, name="data")
    return schema, list(order)


def data_resolution(values: np.ndarray) -> float:
    """Smallest positive gap between distinct values (the recorded precision); 0 if none."""
    u = np.unique(values[np.isfinite(values)])
    if u.size < 2:
        return 0.0
    return float(np.min(np.diff(u)))


def decimals_of(values: np.ndarray, max_decimals: int = 6) -> int | None:
    """Number of decimals to which every value is recorded (``None`` if more than 6)."""
    v = values[np.isfinite(values)]
    for d in range(max_decimals + 1):
        s = v * 10.0**d
        if np.all(np.abs(s - np.round(s)) <= 1e-6 * np.maximum(1.0, np.abs(s)) * 1e-3 + 1e-9):
            return d
    return None


def silverman(v: np.ndarray) -> float:
    """Silverman's rule of thumb ``0.9 min(sd, IQR/1.34) n^{-1/5}`` (sd alone if IQR is 0)."""
    v = np.asarray(v, dtype=np.float64)
    if v.size < 2:
        return 0.0
    sd = float(np.std(v, ddof=1))
    q75, q25 = np.percentile(v, [75, 25])
    iqr = float(q75 - q25) / 1.34
    a = min(sd, iqr) if iqr > 0 else sd
    return 0.9 * a * v.size ** (-0.2)


# --------------------------------------------------------------------------------------------
# the synthesizer
# --------------------------------------------------------------------------------------------
class CARTSynthesizer(BaseSynthesizer):
    """Sequential CART synthesizer with a per-leaf Bayesian bootstrap (Reiter 2005).

    For the visit order ``v_1 → … → v_S`` (the order of ``synthesized``), the tree for
    ``v_k`` is fitted on the confidential data with predictors = all unsynthesized columns and
    ``v_1..v_{k-1}`` (Reiter 2005): a regression tree (squared error) for count/continuous
    columns, a classification tree (Gini) for categorical/ordinal ones. To synthesize, each
    selected record is routed with its unsynthesized values and its synthetic ``v_1..v_{k-1}``,
    and copies the value of a donor of its leaf drawn with Dirichlet(1, …, 1) leaf weights drawn
    afresh for each dataset (Reiter 2005; Wang & Reiter 2012).

    Categorical predictors: unordered categorical columns enter the trees as one-hot indicators
    (each split is "one level versus the rest"; scikit-learn has no subset splits), ordinal
    columns as their level codes. For every node the set of levels of each unordered predictor
    present among its training records is recorded, so a record whose level was not seen in a
    node that splits on that predictor is detected as unroutable (methods, CART with a Bayesian
    bootstrap) and handled by ``unroutable``.

    Parameters
    ----------
    min_leaf : int, default 5
        Minimum number of training records per leaf (Drechsler & Reiter 2008).
    min_deviance : float, default 0.0
        A node is not split when its deviance is below ``min_deviance`` × the root's deviance
        (R ``tree``'s ``mindev``; W&R 2012 use 1e-4). 0 switches the rule off.
    max_depth : int, optional
        Maximum depth of each tree.
    prune_to_diversity : int, optional
        Collapse leaves into their parent until every leaf holds at least this many distinct
        confidential values (Reiter 2005's diversity criterion).
    donor : {"bayes_bootstrap", "uniform"}
        ``"bayes_bootstrap"`` (default; Reiter): donors drawn with Dirichlet(1..1) weights per leaf
        and dataset. ``"uniform"``: each donor equally likely (synthpop with ``proper=FALSE``).
    unroutable : {"climb", "random_descent"}
        What to do at a node whose split cannot be evaluated for a record (an unordered level not
        seen in the node): stop and use the node's records as donors (``"climb"``, Drechsler &
        Reiter 2008/W&R, default) or continue to a child chosen with probability proportional to its
        training size (``"random_descent"``, synthpop's rule).
    smoothing : bool or sequence of str, default False
        Per-leaf truncated Gaussian kernel smoothing of numeric synthesized columns (Wang & Reiter
        2012): ``True`` for all numeric synthesized columns, or a list of them.
    bandwidth : float or dict, optional
        Kernel bandwidth (one value, or per column). Default: Silverman's rule on each leaf's
        donor values, floored at the column's data resolution (smallest gap between distinct
        values).
    n_jobs : int, default 1
        Threads used to synthesize datasets in parallel. Results do not depend on it: dataset
        ``l`` always uses child stream ``l`` of ``random_seed``.
    progressbar : bool, default False
        Show a progress bar over the datasets.
    random_seed : RandomSeed, optional
        Default seed of :meth:`fit` and :meth:`synthesize` (a seed passed to either takes
        precedence).

    Attributes
    ----------
    schema_ : Schema
        Schema with synthesized roles.
    visit_sequence_ : list of str
        Synthesized columns in visit order.
    predictors_ : dict
        Predictor columns of each tree.
    trees_ : dict
        Fitted trees (:class:`~bayes_risk.models._trees.SeqTree`) per synthesized column.
    records_ : ndarray of bool
        Records that are synthesized (δ_i).
    bandwidth_ : dict
        Per column, the bandwidth of every node (smoothed columns only).

    Examples
    --------
    >>> from bayes_risk.data import make_ce_like, infer_schema
    >>> df = make_ce_like(300, random_seed=1)
    >>> schema = infer_schema(df, categorical=["Urban", "Marital", "Tenure"])
    >>> syn = CARTSynthesizer(random_seed=1).fit(
    ...     df, schema=schema, synthesized=["Tenure", "Income"]
    ... )
    >>> z = syn.synthesize(2, random_seed=2)
    >>> z.m, z.method
    (2, 'cart')

    References
    ----------
    Reiter, J. P. (2005). Using CART to generate partially synthetic public use microdata.
    Journal of Official Statistics 21(3), 441–462.
    Drechsler, J. & Reiter, J. P. (2008). Accounting for intruder uncertainty due to sampling
    when estimating identification disclosure risks in partially synthetic data. PSD 2008.
    """

    method_name = "cart"

    def __init__(
        self,
        min_leaf: int = 5,
        min_deviance: float = 0.0,
        max_depth: int | None = None,
        prune_to_diversity: int | None = None,
        donor: str = "bayes_bootstrap",
        unroutable: str = "climb",
        smoothing: bool | Sequence[str] = False,
        bandwidth: float | dict[str, float] | None = None,
        n_jobs: int = 1,
        progressbar: bool = False,
        random_seed: RandomSeed = None,
    ) -> None:
        self.min_leaf = min_leaf
        self.min_deviance = min_deviance
        self.max_depth = max_depth
        self.prune_to_diversity = prune_to_diversity
        self.donor = donor
        self.unroutable = unroutable
        self.smoothing = smoothing
        self.bandwidth = bandwidth
        self.n_jobs = n_jobs
        self.progressbar = progressbar
        self.random_seed = random_seed

    # ----- validation ---------------------------------------------------------------------
    def _check_settings(self) -> None:
        def _int(name: str, v: Any, lo: int, allow_none: bool = False) -> None:
            if v is None and allow_none:
                return
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise ValidationError(f"{name} must be an integer >= {lo}. Got {v!r}.")

        _int("min_leaf", self.min_leaf, 1)
        _int("max_depth", self.max_depth, 1, allow_none=True)
        _int("prune_to_diversity", self.prune_to_diversity, 1, allow_none=True)
        _int("n_jobs", self.n_jobs, 1)
        if not (isinstance(self.min_deviance, (int, float)) and 0 <= self.min_deviance < 1):
            raise ValidationError(
                f"min_deviance must be a number in [0, 1). Got {self.min_deviance!r}."
            )
        if self.donor not in ("bayes_bootstrap", "uniform"):
            raise ValidationError(
                f"donor must be 'bayes_bootstrap' or 'uniform'. Got {self.donor!r}."
            )
        if self.unroutable not in ("climb", "random_descent"):
            raise ValidationError(
                f"unroutable must be 'climb' or 'random_descent'. Got {self.unroutable!r}."
            )

    def _smoothed_columns(self, schema: Schema, order: list[str]) -> list[str]:
        sm = self.smoothing
        if sm is False or sm is None:
            return []
        numeric = [c for c in order if not schema[c].is_categorical]
        if sm is True:
            return numeric
        cols = [sm] if isinstance(sm, str) else list(sm)
        for c in cols:
            if c not in order:
                raise ValidationError(
                    f"smoothing: column {c!r} is not synthesized (synthesized: {order})."
                )
            if schema[c].is_categorical:
                raise ValidationError(
                    f"smoothing: column {c!r} is {schema[c].type}; kernel smoothing applies to "
                    "numeric (count/continuous) columns only."
                )
        return cols

    # ----- fit ----------------------------------------------------------------------------
    @legacy_call_forms(positional=("schema", "synthesized"))
    def fit(
        self,
        data: pd.DataFrame,
        *,
        schema: Schema | None = None,
        synthesized: Sequence[str] | None = None,
        records: Any = None,
        random_seed: RandomSeed = None,
    ) -> CARTSynthesizer:
        """Fit one tree per synthesized column on the confidential data.

        Parameters
        ----------
        data : DataFrame
            Confidential table (no missing values).
        schema : Schema, optional
            Column types (default: inferred; integer-coded factors must be declared categorical).
        synthesized : sequence of str, optional
            Columns to synthesize, in visit order (default: the schema's synthesized columns).
        records : boolean mask or integer positions, optional
            Records whose synthesized columns are replaced (default: all). Trees are fitted on all
            records; unselected records keep every original value in every dataset.
        random_seed : RandomSeed
            Seeds scikit-learn's tie-breaking between equally good splits (default: the
            ``random_seed`` setting).

        Returns
        -------
        CARTSynthesizer
            ``self``.

        Raises
        ------
        ValidationError, SchemaError
            For invalid settings, unknown columns, missing values or a bad record selection.
        """
        from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

        self._check_settings()
        random_seed = self._seed(random_seed)
        schema, order = prepare_schema(data, schema, synthesized)
        smoothed = self._smoothed_columns(schema, order)
        n = len(data)
        if n < 2:
            raise ValidationError(f"data must have at least 2 records. Got {n}.")
        mask = records_mask(records, n)
        unsyn = [c for c in schema.names if c not in order]
        # encoded views of the confidential data (codes for categorical, floats for numeric)
        values: dict[str, np.ndarray] = {}
        for c in schema.names:
            if schema[c].is_categorical:
                values[c] = column_codes(data, schema, c)
            else:
                values[c] = data[c].to_numpy(dtype=np.float64)
        seeds = spawn(random_seed, len(order))
        trees: dict[str, SeqTree] = {}
        predictors: dict[str, list[str]] = {}
        node_h: dict[str, np.ndarray] = {}
        rows = np.arange(n)
        for k, col in enumerate(order):
            preds = unsyn + order[:k]
            predictors[col] = preds
            design = Design.from_schema(schema, preds)
            if preds:
                X, codes = design.matrix([values[p] for p in preds])
            else:  # nothing to split on: a single-leaf tree
                X, codes = np.zeros((n, 1), dtype=np.float32), np.zeros((n, 0), dtype=np.int64)
                design = Design(["__const__"], ["numeric"], [0])
            y = values[col]
            rs = int(seeds[k].integers(2**31 - 1))
            if schema[col].is_categorical:
                est = DecisionTreeClassifier(
                    criterion="gini", min_samples_leaf=self.min_leaf, max_depth=self.max_depth,
                    random_state=rs,
                )
            else:
                est = DecisionTreeRegressor(
                    criterion="squared_error", min_samples_leaf=self.min_leaf,
                    max_depth=self.max_depth, random_state=rs,
                )
            est.fit(X, y)
            tree = SeqTree(
                est, design, X, codes, rows, y, schema[col].is_categorical,
                n_classes=schema[col].n_levels if schema[col].is_categorical else 0,
            )
            tree.collapse_low_deviance(float(self.min_deviance))
            if self.prune_to_diversity is not None:
                tree.prune_to_diversity(int(self.prune_to_diversity))
            trees[col] = tree
            if col in smoothed:
                node_h[col] = self._node_bandwidths(tree, col, values[col])
        self.schema_ = schema
        self.visit_sequence_ = order
        self.predictors_ = predictors
        self.trees_ = trees
        self.records_ = mask
        # provenance: what a release needs to rebuild this synthesizer from the confidential data
        # (bayes_risk.models.rebuild_synthesizer; None seed = not replayable)
        self.fit_call_ = {"synthesized": list(order), "random_seed": replayable_seed(random_seed)}
        self.smoothed_ = smoothed
        self.bandwidth_ = node_h
        self.n_records_ = n
        self._index = data.index
        self._data = data.reset_index(drop=True)
        self._values = values
        self._decimals = {
            c: decimals_of(values[c]) for c in smoothed
        }
        self._integer = {
            c: schema[c].type == "count" or pd.api.types.is_integer_dtype(data[c].dtype)
            for c in smoothed
        }
        return self

    def _node_bandwidths(self, tree: SeqTree, col: str, y: np.ndarray) -> np.ndarray:
        """Per-node bandwidth: user value or Silverman on the node's donors, floored."""
        bw = self.bandwidth
        if isinstance(bw, dict):
            bw = bw.get(col)
        if bw is not None:
            if not (isinstance(bw, (int, float)) and bw > 0):
                raise ValidationError(
                    f"bandwidth for {col!r} must be a positive number. Got {bw!r}."
                )
            return np.full(tree.n_nodes, float(bw))
        res = data_resolution(y)
        h = np.zeros(tree.n_nodes)
        for k in range(tree.n_nodes):
            v = tree.y_sorted[tree.node_start[k] : tree.node_stop[k]]
            h[k] = max(silverman(v), res)
        return h

    # ----- structure access (plug-in likelihoods, methods, Tree synthesizers: plug-in likelihoods)
    # --------------------------------
    def route(
        self, records: pd.DataFrame, column: str, random_seed: RandomSeed = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Node reached by each row of ``records`` in the fixed tree of ``column``.

        The rows' values of the tree's predictors (``predictors_[column]``) are routed through
        the fitted splits with the ``unroutable`` rule (methods, CART with a Bayesian bootstrap);
        used by the attribute-risk engine to relocate a record with a candidate value ``y*`` in
        later trees (methods, Tree synthesizers: plug-in likelihoods).

        Parameters
        ----------
        records : DataFrame
            Must hold the predictor columns (categorical values among the schema's levels).
        column : str
            A synthesized column.
        random_seed : RandomSeed
            Only used by ``unroutable="random_descent"``.

        Returns
        -------
        node : ndarray of int
            Node id per row (a leaf, or an internal node for records that climbed).
        unroutable : ndarray of bool
            Rows that met an unevaluable split.
        """
        check_is_fitted(self, "trees_")
        if column not in self.trees_:
            raise ValidationError(
                f"column {column!r} is not synthesized (synthesized: {self.visit_sequence_})."
            )
        tree = self.trees_[column]
        preds = self.predictors_[column]
        if not preds:
            return np.zeros(len(records), dtype=np.int64), np.zeros(len(records), dtype=bool)
        vals = [
            column_codes(records, self.schema_, p)
            if self.schema_[p].is_categorical
            else records[p].to_numpy(dtype=np.float64)
            for p in preds
        ]
        X, codes = tree.design.matrix(vals)
        rng = as_generator(random_seed) if self.unroutable == "random_descent" else None
        return tree.route(X, codes, self.unroutable, rng)

    def donors(self, column: str, node: int) -> np.ndarray:
        """Row positions (in the fitted data) of the donors of ``node`` in the tree of ``column``.

        Their values of ``column`` are the leaf's donor multiset (Reiter 2005).
        """
        check_is_fitted(self, "trees_")
        tree = self.trees_[column]
        if not 0 <= int(node) < tree.n_nodes:
            raise ValidationError(f"node must be in 0..{tree.n_nodes - 1}. Got {node!r}.")
        return tree.donor_rows[tree.node_start[node] : tree.node_stop[node]].copy()

    def output_rounding(self, column: str) -> tuple[int | None, bool]:
        """How smoothed values of ``column`` are rounded on output (Wang & Reiter 2012).

        Returns
        -------
        decimals : int or None
            Kernel draws are rounded to this many decimals (0 for count/integer columns);
            ``None`` when they are released unrounded.
        integer_output : bool
            The released column has an integer dtype (the clipped value is rounded to an integer
            once more).
        """
        check_is_fitted(self, "trees_")
        if column not in self.smoothed_:
            raise ValidationError(
                f"column {column!r} is not kernel-smoothed (smoothed: {list(self.smoothed_)})."
            )
        integer = bool(self._integer.get(column))
        decimals = 0 if integer else self._decimals.get(column)
        final = integer and pd.api.types.is_integer_dtype(self._data[column].dtype)
        return decimals, bool(final)

    # ----- synthesize ---------------------------------------------------------------------
    @legacy_call_forms(positional=("random_seed",))
    def synthesize(self, m: int = 1, *, random_seed: RandomSeed = None) -> SyntheticData:
        """Draw ``m`` synthetic datasets, each from its own child stream of ``random_seed``.

        Parameters
        ----------
        m : int
            Number of datasets.
        random_seed : RandomSeed
            Same seed → identical datasets (whatever ``n_jobs``); default: the ``random_seed``
            setting.

        Returns
        -------
        SyntheticData
            ``method="cart"``, ``settings`` = :meth:`get_params`, the schema with roles and the
            record flags; ``extra["unroutable"]`` gives, per dataset and column, how many records
            met an unevaluable split (methods, CART with a Bayesian bootstrap) and
            ``extra["unroutable_rule"]`` the rule used.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        """
        check_is_fitted(self, "trees_", method="synthesize")
        m = check_m(m)
        random_seed = self._seed(random_seed)
        gens = spawn(random_seed, m)

        def one(l: int) -> tuple[pd.DataFrame, dict[str, int]]:
            return self._synthesize_one(gens[l])

        idx = range(m)
        if self.n_jobs > 1 and m > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=int(self.n_jobs)) as ex:
                out = list(progress(ex.map(one, idx), total=m, description="CART synthesis",
                                    enabled=self.progressbar))
        else:
            out = [one(l) for l in progress(idx, total=m, description="CART synthesis",
                                            enabled=self.progressbar)]
        return SyntheticData(
            datasets=[o[0] for o in out],
            method=self.method_name,
            settings=self._release_settings(),
            random_seed=seed_to_json(random_seed),
            schema=self.schema_,
            synthesized_records=self.records_.copy(),
            extra={
                "visit_sequence": list(self.visit_sequence_),
                "predictors": {k: list(v) for k, v in self.predictors_.items()},
                "unroutable": [o[1] for o in out],
                "unroutable_rule": self.unroutable,
                "fit_call": self.fit_call_,
            },
        )

    def posterior_replicates(
        self,
        n: int | None,
        *,
        columns: Sequence[str] | None = None,
        chunk_size: int = 50,
        random_seed: RandomSeed = None,
        start: int = 0,
    ) -> Iterator[list[pd.DataFrame]]:
        """Draw replicates of synthesized columns from the Bayesian-bootstrap predictive, in chunks.

        Each replicate is a fresh synthesis: new Dirichlet(1, …, 1) weights in every leaf (the
        posterior of the leaf distribution under the Bayesian bootstrap, Reiter 2005), then a
        donor per routed record, exactly as :meth:`synthesize`. Replicate ``r`` uses child stream
        ``r`` of ``random_seed`` (independent of ``chunk_size``; ``start`` continues a run).

        Parameters
        ----------
        n : int or None
            Number of replicates (``None``: chunks until the caller stops).
        columns : sequence of str, optional
            Synthesized columns to return (default: all, in visit order).
        chunk_size : int
            Replicates per yielded list.
        random_seed : RandomSeed
            Seed of the replicates.
        start : int
            Index of the first replicate.

        Yields
        ------
        list of DataFrame
            Up to ``chunk_size`` tables ``[n_records, len(columns)]`` in record order.

        Raises
        ------
        ValidationError
            With ``donor="uniform"``: donors drawn with equal weights are not draws from a
            posterior predictive (no Bayesian bootstrap).
        """
        from bayes_risk.models._replicates import check_replicate_columns, iter_replicates

        check_is_fitted(self, "trees_")
        if self.donor != "bayes_bootstrap":
            raise ValidationError(
                f"posterior replicates need donor='bayes_bootstrap' (got donor={self.donor!r}): "
                "with equal donor weights the synthesizer has no posterior over the leaf "
                "distributions, so its syntheses are not posterior-predictive draws."
            )
        cols = check_replicate_columns(columns, self.visit_sequence_, type(self).__name__)
        return iter_replicates(lambda rng: self._synthesize_one(rng, cols)[0], n, columns=cols,
                               chunk_size=chunk_size, random_seed=random_seed, start=start)

    def _synthesize_one(self, rng: np.random.Generator, columns: Sequence[str] | None = None
                        ) -> tuple[pd.DataFrame, dict[str, int]]:
        # columns: return only these synthesized columns (replicates; the same draws)
        sel = np.flatnonzero(self.records_)
        cur: dict[str, np.ndarray] = {}  # current values of selected records, per column
        src: dict[str, np.ndarray] = {}  # donor row of each selected record (non-smoothed)
        unrout: dict[str, int] = {}
        for col in self.visit_sequence_:
            tree = self.trees_[col]
            preds = self.predictors_[col]
            if preds:
                X, codes = tree.design.matrix(
                    [cur[p] if p in cur else self._values[p][sel] for p in preds]
                )
            else:
                X = np.zeros((sel.size, 1), dtype=np.float32)
                codes = np.zeros((sel.size, 0), dtype=np.int64)
            node, flag = tree.route(X, codes, self.unroutable, rng)
            unrout[col] = int(flag.sum())
            used, inv = np.unique(node, return_inverse=True)
            starts = tree.node_start[used]
            sizes = tree.node_size[used]
            # concatenated donor blocks of the used nodes (internal nodes overlap their leaves)
            seg_start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
            pos_map = np.repeat(starts - seg_start, sizes) + np.arange(int(sizes.sum()))
            if col in self.smoothed_:
                vals = self._kernel_draw(col, tree, used, inv, seg_start, sizes, pos_map, rng)
                cur[col] = vals
                src.pop(col, None)
            else:
                j = segment_choice(seg_start, sizes, inv, rng,
                                   bayes_bootstrap=self.donor == "bayes_bootstrap")
                rows = tree.donor_rows[pos_map[j]]
                src[col] = rows
                cur[col] = self._values[col][rows]
        out = self._data.copy() if columns is None else self._data[list(columns)].copy()
        for col in self.visit_sequence_ if columns is None else columns:
            if col in src:
                new = self._data[col].take(src[col]).to_numpy()
            else:
                new = cur[col]
                if self._integer.get(col) and pd.api.types.is_integer_dtype(self._data[col].dtype):
                    new = np.round(new).astype(self._data[col].dtype)
            s = out[col].copy()
            s.iloc[sel] = new
            out[col] = s
        out.index = self._index
        return out, unrout

    def _kernel_draw(self, col, tree, used, inv, seg_start, sizes, pos_map, rng):
        """Per-leaf truncated Gaussian kernel draws (Wang & Reiter 2012), vectorised."""
        from scipy.stats import truncnorm

        yv = tree.y_sorted.astype(np.float64)
        G = used.size
        # 1. n_L bootstrap values per used node (Bayesian bootstrap or uniform donor)
        which_b = np.repeat(np.arange(G), sizes)
        jb = segment_choice(seg_start, sizes, which_b, rng,
                            bayes_bootstrap=self.donor == "bayes_bootstrap")
        b = yv[pos_map[jb]]
        h_node = self.bandwidth_[col][used]
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
        d = self._decimals.get(col)
        if self._integer.get(col):
            vals = np.round(vals)
        elif d is not None:
            vals = np.round(vals, d)
        return np.clip(vals, lo, hi)
