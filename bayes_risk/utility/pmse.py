"""Propensity-score mean squared error (pMSE) and its null distribution (Snoke et al. 2018).

See :doc:`/methods/utility`.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from bayes_risk._constraints import Interval, SequenceOf, check_params
from bayes_risk._rng import RandomSeed, seed_to_json, spawn
from bayes_risk._specs import as_spec
from bayes_risk._terminal import progress
from bayes_risk._utility_specs import PROPENSITY_METHODS, PropensitySpec
from bayes_risk.data.normalise import as_synthetic_list
from bayes_risk.data.provenance import duplicate_codes
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import CALLER, ConvergenceWarning, DataWarning, ValidationError, arg_name
from bayes_risk.results.utility import PMSEResult
from bayes_risk.utility._inputs import (
    ImputedChoice,
    observed_cells,
    resolve_imputed,
    resolve_schema,
    warn_observed_cells,
)
from bayes_risk.utility._propensity import (  # noqa: F401 - re-exported (public import path)
    PMSE_MISSING_POLICY,
    RANK_TOL,
    Prepared,
    _cart_features,
    _cart_prob,
    fit_logit,
    missing_summary,
    prepare_table,
    propensity_design,
)

__all__ = ["PMSEResult", "PropensitySpec", "pmse", "pmse_null_moments", "propensity_design",
           "fit_logit"]

SEPARATION_EPS = 1e-8  # fitted probabilities this close to 0 or 1 flag separation


#: the arguments of pmse_null_moments: a number, or one per synthetic dataset
_MOMENTS = {"df": [Interval(float, 0), SequenceOf(Interval(float, 0), "numbers >= 0")],
            **{n: [Interval(float, 0, closed="neither"),
                   SequenceOf(Interval(float, 0, closed="neither"), "numbers > 0")]
               for n in ("n_original", "n_synthetic")}}


def pmse_null_moments(df: int | np.ndarray, n_original: Any, n_synthetic: Any
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Theoretical null mean and sd of the pMSE of a logistic model (Snoke et al. 2018, eqs. 1–2).

    Parameters
    ----------
    df : int or array of int
        Degrees of freedom ``k − 1`` (complete) or ``k* − 1`` (incomplete synthesis).
    n_original, n_synthetic : int or array of int
        Rows of the original and synthetic tables.

    Returns
    -------
    e0, sd0 : ndarray

    Examples
    --------
    >>> e0, sd0 = pmse_null_moments(55, 5000, 5000)
    >>> round(float(e0), 10), round(float(sd0), 9)
    (0.0006875, 0.000131101)
    """
    check_params(dict(df=df, n_original=n_original, n_synthetic=n_synthetic), _MOMENTS)
    d = np.asarray(df, dtype=np.float64)
    n1 = np.asarray(n_original, dtype=np.float64)
    n2 = np.asarray(n_synthetic, dtype=np.float64)
    N = n1 + n2
    c = n2 / N
    scale = (1 - c) ** 2 * c / N
    return d * scale, np.sqrt(2 * d) * scale


@dataclass(frozen=True)
class _OneFit:
    pmse: float
    k: int
    df: int
    converged: bool
    codes: list[str]


def _pmse_value(prob: np.ndarray, c: float) -> float:
    return float(np.mean((prob - c) ** 2))


def pmse(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    propensity: PropensitySpec | Literal["logit", "cart"] | None = None,
    incomplete: bool | None = None,
    random_seed: RandomSeed = None,
    schema: Schema | None = None,
    categorical: Iterable[str] | None = None,
    synthesized: Iterable[str] | None = None,
    progressbar: bool = False,
    imputed: Any = "auto",
) -> PMSEResult:
    """Propensity-score mean squared error of each synthetic dataset (Snoke et al. 2018).

    See :doc:`/methods/utility` and :doc:`/methods/compatibility`.

    Parameters
    ----------
    original : DataFrame
    synthetic : DataFrame, list of DataFrame or SyntheticData
    propensity : PropensitySpec, "logit" or "cart", optional
        See :class:`~bayes_risk.utility.PropensitySpec` (a name: its ``method``).
    incomplete : bool, optional
        Incomplete synthesis (theory null on ``k* − 1``). Default: whether some but not all
        modelled columns are synthesized.
    random_seed : int, Generator or None
    schema : Schema, optional
    categorical : iterable of str, optional
        Integer-coded columns to treat as categorical.
    synthesized : iterable of str, optional
        Synthesized columns (overrides the schema's roles).
    progressbar : bool
    imputed : "auto" or iterable of str
        Columns whose missing values the synthesizer imputed, compared on the original's
        observed cells. ``"auto"``: the release's recorded ``imputed_columns``, else those
        read off the data; ``[]``: none.

    Returns
    -------
    PMSEResult
        Per dataset ``pmse``, ``e0``, ``sd0``, ``ratio``, ``std``, ``k``, ``df``, ``converged``.

    Raises
    ------
    ValidationError
        Bad options, or a null the propensity model or the synthesis does not allow.
    SchemaError
        Tables that do not fit the schema, unknown columns.

    Warns
    -----
    DataWarning
        ``SEPARATION``, ``LARGE_MODEL``, ``FEW_PAIRS``, ``ZERO_DF``,
        ``MISSING_AT_RANDOM_ASSUMED``, ``IMPUTED_INFERRED``.
    ConvergenceWarning
        ``NOT_CONVERGED``.

    Examples
    --------
    >>> import warnings
    >>> import pandas as pd
    >>> with warnings.catch_warnings(record=True) as caught:  # 2 coefficients for 8 rows
    ...     warnings.simplefilter("always")
    ...     r = pmse(pd.DataFrame({"x": [0, 0, 1, 1]}), pd.DataFrame({"x": [0, 1, 1, 1]}),
    ...              propensity=PropensitySpec(max_order=0), categorical=["x"])
    >>> [w.category.__name__ for w in caught]
    ['DataWarning']
    >>> round(float(r.pmse[0]), 7), int(r.k[0]), round(float(r.ratio[0]), 6)
    (0.0166667, 2, 1.066667)
    """
    spec = as_spec(propensity, PropensitySpec, "propensity", "method", PROPENSITY_METHODS)
    method, columns, null, n_perm = spec.method, spec.columns, spec.null, spec.n_perm

    datasets, source = as_synthetic_list(synthetic, original=original)
    dups = duplicate_codes(datasets)  # warned by as_synthetic_list; a result code too
    carried = None if source is None else source.schema
    m = len(datasets)
    schema = resolve_schema(original, datasets, schema=schema, carried=carried,
                            categorical=categorical, synthesized=synthesized, same_rows=False,
                            recoded=() if source is None else source.recoded_columns)
    cols = (schema.check_columns(columns, "PropensitySpec.columns") if columns is not None
            else schema.names)
    choice = resolve_imputed(imputed, source, original, datasets, schema)
    # only the modelled columns matter (others would drop records for nothing)
    choice = ImputedChoice([c for c in choice.columns if c in cols], choice.source,
                           choice.aligned)
    imputed_codes = warn_observed_cells(choice)
    original, datasets = observed_cells(original, datasets, choice, for_pmse=True)
    syn_cols = [c for c in schema.synthesized if c in cols]
    if incomplete is None:
        incomplete = 0 < len(syn_cols) < len(cols)
    elif incomplete and not syn_cols:
        raise ValidationError(
            "incomplete=True needs the synthesized columns: pass synthesized=[...] or a schema "
            "with synthesized roles.")
    incomplete = bool(incomplete)
    if not incomplete:
        syn_cols = list(cols) if not syn_cols else syn_cols

    null = _null(null, method, incomplete, m, syn_cols)
    if null == "perm":
        from bayes_risk._memory import check_memory

        # the permutation null's values of every dataset (n_perm=10**9 asked for 8 GB a dataset)
        check_memory(16.0 * m * int(n_perm), arg_name("PropensitySpec.n_perm"),
                     what=f"{int(n_perm):,} permutations of each of {m} synthetic dataset(s)")

    # small matrices (N × k): a multithreaded BLAS is several times slower on a loaded machine
    with threadpool_limits(limits=1, user_api="blas"):
        res = _pmse_values(original, datasets, schema, cols, syn_cols, incomplete, spec, null,
                           int(n_perm), random_seed, progressbar)
    res.settings.update(choice.to_settings())
    res.warnings.extend(c for c in [*imputed_codes, *dups] if c not in res.warnings)
    return res


def _null(null: str, method: str, incomplete: bool, m: int, syn_cols: list[str]) -> str:
    """The null distribution of the pMSE ratio: ``null``, or for ``"auto"`` the one that holds
    for the propensity ``method`` and the synthesis (Snoke et al. 2018, Table 7); a null that
    does not hold is refused."""
    def null_(v: str) -> str:  # PropensitySpec.null='perm', --null perm on the command line
        return arg_name("PropensitySpec.null", repr(v), cli=v)

    def method_(v: str) -> str:  # PropensitySpec.method='cart', --pmse cart
        return arg_name("PropensitySpec.method", repr(v), cli=v)

    if null == "auto":
        null = "theory" if method == "logit" else ("pairs" if incomplete else "perm")
        if null == "pairs" and m < 2:
            raise ValidationError(
                f"{method_('cart')} with incomplete synthesis (synthesized columns "
                f"{syn_cols}) needs the 'pairs' null, which needs m >= 2 synthetic datasets; "
                f"got m = 1. Use {method_('logit')} (theory null) or release more datasets.")
    if null == "perm" and incomplete:
        raise ValidationError(
            f"{null_('perm')} is valid for complete synthesis only (Snoke et al. 2018, Table 7); "
            f"use {null_('pairs')} (or {null_('theory')} with {method_('logit')}) for incomplete "
            "synthesis.")
    if null == "pairs" and m < 2:
        raise ValidationError(
            f"{null_('pairs')} compares synthetic datasets with each other and needs m >= 2. Got "
            "m = 1.")
    return null


def _pmse_values(original: pd.DataFrame, datasets: list[pd.DataFrame], schema: Schema,
                 cols: list[str], syn_cols: list[str], incomplete: bool, spec: PropensitySpec,
                 null: str, n_perm: int, random_seed: RandomSeed, progressbar: bool
                 ) -> PMSEResult:
    m = len(datasets)
    method, max_order, max_iter = spec.method, spec.max_order, spec.max_iter
    cart = {"cp": spec.cp, "min_leaf": spec.min_leaf, "min_split": spec.min_split,
            "max_depth": spec.max_depth}
    columns, synthesized = list(cols), set(syn_cols)

    def features(syn: Prepared, orig: Prepared):
        """Design (logit) or feature matrix (CART) and labels; synthetic rows first (synthpop)."""
        frames = [syn, orig]
        y = np.concatenate([np.ones(len(syn[columns[0]])), np.zeros(len(orig[columns[0]]))])
        if method == "logit":
            X, names, involves, found = propensity_design(frames, schema, columns, max_order)
            return X, y, (names, involves, found)
        return _cart_features(frames, schema, columns), y, None

    def fit_one(X: np.ndarray, y: np.ndarray, meta: Any, seed: int) -> _OneFit:
        c = float(np.mean(y))
        if method == "cart":
            prob = _cart_prob(X, y, seed=seed, **cart)
            return _OneFit(_pmse_value(prob, c), -1, -1, True, [])
        names, involves, found = meta
        fit = fit_logit(X, y, max_iter=max_iter)
        k = int(fit.keep.size)
        if incomplete:
            df = int(sum(1 for j in fit.keep if involves[j] & synthesized))
        else:
            df = k - 1
        p = fit.prob
        found = list(found)
        if np.any(np.minimum(p, 1 - p) < SEPARATION_EPS):
            found.append("SEPARATION")
        if not fit.converged:
            found.append("NOT_CONVERGED")
        if k > len(y) / 5:
            found.append("LARGE_MODEL")
        return _OneFit(_pmse_value(p, c), k, df, fit.converged, found)

    n1 = len(original)
    orig = prepare_table(original, schema, cols)
    prepared = [prepare_table(z, schema, cols) for z in datasets]
    rngs = spawn(random_seed, m + 1)
    codes: list[str] = []

    values = np.empty(m)
    ks = np.full(m, -1, dtype=np.int64)
    dfs = np.full(m, -1, dtype=np.int64)
    conv = np.ones(m, dtype=bool)
    n2 = np.array([len(z) for z in datasets], dtype=np.int64)
    null_vals: np.ndarray = np.empty(0)
    perm = np.empty((m, n_perm)) if null == "perm" else None
    for l in progress(range(m), total=m, description="pMSE", unit="datasets",
                      enabled=progressbar):
        X, y, meta = features(prepared[l], orig)
        seed_l = int(rngs[l].integers(2**31 - 1))
        one = fit_one(X, y, meta, seed_l)
        values[l], ks[l], dfs[l], conv[l] = one.pmse, one.k, one.df, one.converged
        codes.extend(one.codes)
        if perm is not None:
            for b in range(n_perm):
                yb = rngs[l].permutation(y)
                fb = fit_one(X, yb, meta, int(rngs[l].integers(2**31 - 1)))
                perm[l, b] = fb.pmse / 2.0  # synthpop/Snoke: halve permutation pMSEs

    c = n2 / (n1 + n2)
    nnosplits = None
    if null == "theory":
        e0, sd0 = pmse_null_moments(np.maximum(dfs, 0), n1, n2)
        if np.any(dfs == 0):
            codes.append("ZERO_DF")
    elif null == "perm":
        assert perm is not None
        null_vals = perm
        e0 = perm.mean(axis=1)
        sd0 = perm.std(axis=1, ddof=1)
        nnosplits = (int(np.sum(perm < 1e-8)), int(perm.size))
    else:  # pairs
        pairs = list(itertools.combinations(range(m), 2))
        if len(pairs) < 6:
            codes.append("FEW_PAIRS")
        pv = np.empty(len(pairs))
        for i, (a, b) in enumerate(progress(pairs, total=len(pairs), description="pMSE pairs",
                                            unit="pairs", enabled=progressbar)):
            X, y, meta = features(prepared[a], prepared[b])
            pv[i] = fit_one(X, y, meta, int(rngs[m].integers(2**31 - 1))).pmse
        null_vals = pv
        half = pv / 2.0
        e0 = np.full(m, half.mean())
        sd0 = np.full(m, half.std(ddof=1) if half.size > 1 else math.nan)
        nnosplits = (int(np.sum(pv < 1e-8)), int(pv.size))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(e0 > 0, values / np.where(e0 > 0, e0, 1.0), math.nan)
        std = np.where(sd0 > 0, (values - e0) / np.where(sd0 > 0, sd0, 1.0), math.nan)
    if method == "cart" and nnosplits is not None and nnosplits[0] > 0:
        codes.append("NO_SPLITS")

    codes = list(dict.fromkeys(codes))
    _emit_warnings(codes, nnosplits)
    settings = {
        "max_iter": int(max_iter), "rank_tol": RANK_TOL, "n_perm": int(n_perm),
        "random_seed": seed_to_json(random_seed),
        "missing_values": PMSE_MISSING_POLICY,
        "missing_kinds": missing_summary([orig, *prepared], schema, cols)}
    if method == "cart":
        settings.update(cart)
    return PMSEResult(
        pmse=values, e0=np.asarray(e0, dtype=np.float64), sd0=np.asarray(sd0, dtype=np.float64),
        ratio=ratio, std=std, k=ks, df=dfs, c=c, n_original=n1, n_synthetic=n2,
        converged=conv, null_pmse=null_vals, nnosplits=nnosplits, method=method,
        max_order=int(max_order), null=null, incomplete=incomplete, synthesized=list(syn_cols),
        columns=list(cols), settings=settings, warnings=codes)


_MESSAGES = {
    "SEPARATION": (DataWarning, "perfect or quasi-perfect separation: some fitted propensities "
                   "are 0 or 1, so the chi-square null (theory) is not valid (SEPARATION)."),
    "NOT_CONVERGED": (ConvergenceWarning, "the logistic propensity model did not converge "
                      "(NOT_CONVERGED); increase max_iter or reduce max_order."),
    "LARGE_MODEL": (DataWarning, "large propensity model: more than N/5 coefficients "
                    "(LARGE_MODEL); consider max_order=0 or fewer columns."),
    "FEW_PAIRS": (DataWarning, "fewer than 6 pairs of synthetic datasets for the 'pairs' null "
                  "(FEW_PAIRS); m >= 4 is advisable."),
    "ZERO_DF": (DataWarning, "no estimable coefficient involves a synthesized variable "
                "(ZERO_DF); the theory null is undefined and the ratio is nan.")}


def _emit_warnings(codes: list[str], nnosplits: tuple[int, int] | None) -> None:
    # each warning carries its code (``.code``): a one-word code such as SEPARATION is not
    # found in the text by the command line's reader of codes
    for code in codes:
        if code in _MESSAGES:
            cls, msg = _MESSAGES[code]
            warnings.warn(cls(msg, code=code), skip_file_prefixes=CALLER)
    if "NO_SPLITS" in codes and nnosplits is not None:
        warnings.warn(
            DataWarning(
                f"{nnosplits[0]} of {nnosplits[1]} resampled fits produced no split "
                "(pMSE < 1e-8) (NO_SPLITS); the resampling null may be unreliable.",
                code="NO_SPLITS"),
            skip_file_prefixes=CALLER)

