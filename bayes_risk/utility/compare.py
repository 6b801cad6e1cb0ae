"""Original vs synthetic comparison of estimates (:doc:`/methods/utility`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import Options, Text, check_value
from bayes_risk.data.levels import normalise_level
from bayes_risk.data.missing import mask_missing_codes
from bayes_risk.data.normalise import as_synthetic_list
from bayes_risk.data.provenance import duplicate_codes
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import check_probability
from bayes_risk.exceptions import CALLER, DataWarning, ValidationError, arg_name, on_command_line
from bayes_risk.utility._inputs import (
    observed_cells,
    resolve_imputed,
    resolve_schema,
    warn_observed_cells,
)
from bayes_risk.utility.combining import COMBINING_RULES, check_rules, combine_scalar, t_quantile
from bayes_risk.utility.overlap import ci_overlap

__all__ = ["Estimate", "estimand_row", "compare_estimates", "with_categorical_dtypes",
           "fit_formula", "CombiningChoice", "choose_rules"]


@dataclass(frozen=True)
class CombiningChoice:
    """The combining rules chosen for a release (``rules``, ``proper``, ``size_ratio`` = k/n)
    and why (``source``: user, manifest or inferred; ``reason``: one sentence)."""

    rules: str
    proper: bool
    size_ratio: float
    source: str
    reason: str

    def to_settings(self) -> dict[str, Any]:
        """The ``combining_*`` entries of a summary's settings."""
        return {
            "combining_rules": self.rules,
            "combining_rules_reference": COMBINING_RULES[self.rules],
            "combining_rules_source": self.source,
            "combining_rules_reason": self.reason,
            "combining_proper": self.proper,
            "combining_size_ratio": self.size_ratio}


def choose_rules(rules: str, source: Any, original: pd.DataFrame,
                 datasets: Sequence[pd.DataFrame], synthesized: Sequence[str] | None,
                 columns: Sequence[str]) -> CombiningChoice:
    """Pick the combining rules of a release (:doc:`/methods/utility`, Combining rules).

    ``rules="auto"``: the manifest's generation scheme, else ``"full-same-n"`` when every
    column (and record) is synthesized, else ``"partial"``.

    Raises
    ------
    ValidationError
        ``UNKNOWN_COMBINING_RULES``; ``NOT_PARTIAL_SYNTHESIS`` (partial rules on datasets of
        another size than the original).
    """
    if rules != "auto":
        rules = check_rules(rules, "rules")
    ratio = float(np.mean([len(z) for z in datasets])) / max(len(original), 1)
    proper_known = getattr(source, "proper", None)
    proper = True if proper_known is None else bool(proper_known)
    recorded = getattr(source, "generation", None)
    if rules != "auto":
        why = f"given by the user (rules={rules!r}"
        if recorded is not None and recorded != rules:
            why += f"; the release records {recorded!r}"
        choice = CombiningChoice(rules, proper, ratio, "user", why + ").")
        partial = "rules='partial' was given"
    elif recorded is not None:
        choice = CombiningChoice(recorded, proper, ratio, "manifest",
                                 f"the release's manifest records generation = {recorded!r}.")
        partial = "the release's manifest records generation = 'partial'"
    elif synthesized is None:
        choice = CombiningChoice(
            "partial", proper, ratio, "inferred",
            "inferred: neither the release nor the schema says how the release was made or "
            "which columns were synthesized; Reiter's partial-synthesis rules are used (give "
            f"{arg_name('rules')} otherwise).")
        partial = ("neither the release nor the schema says how the release was made (the "
                   "partial-synthesis rules would be assumed)")
    else:
        kept = [c for c in columns if c not in synthesized]
        flags = getattr(source, "synthesized_records", None)
        if not kept and (flags is None or bool(np.all(flags))):
            return CombiningChoice(
                "full-same-n", proper, ratio, "inferred",
                "inferred: the release does not record how it was made, and every column is "
                "synthesized; full synthesis of the same units assumed"
                + ("" if proper_known is not None else ", proper (parameters drawn per dataset)")
                + f" (give {arg_name('rules')} for samples from synthetic populations).")
        what = (f"column(s) {', '.join(map(repr, kept))} released unchanged" if kept
                else "only some records synthesized")
        choice = CombiningChoice(
            "partial", proper, ratio, "inferred",
            f"inferred: the release does not record how it was made, and {what}; partial "
            f"synthesis assumed (give {arg_name('rules')} otherwise).")
        partial = f"{what} (partial synthesis would be assumed)"
    n = len(original)
    other = [(l, len(z)) for l, z in enumerate(datasets, start=1) if len(z) != n]
    if choice.rules != "partial" or not other:
        return choice
    l, k = other[0]
    raise ValidationError(
        f"synthetic dataset {l} has {k} records and the original {n}, and {partial}: no partial "
        "synthesis releases another number of records than the original (it replaces values "
        "of the original's records), so Reiter's partial-synthesis combining rules do not "
        "apply (their intervals would be too narrow). Give the generation scheme, "
        "'full-same-n' (every column synthesized; Raab, Nowok & Dibben's variance with k/n, "
        "as synthpop's) or 'full-population' (samples from synthetic populations): "
        + (arg_name("rules") if on_command_line()
           else "rules= (combining_rules= of audit; --combining-rules on the command line)")
        + ".",
        code="NOT_PARTIAL_SYNTHESIS")


@dataclass(frozen=True)
class Estimate:
    """A point estimate, its standard error and reference df (``inf``: normal)."""

    est: float
    se: float
    df: float = math.inf

    def interval(self, alpha: float) -> tuple[float, float]:
        """``est ∓ q_{1−α/2} se`` with the t (or normal) quantile."""
        q = t_quantile(self.df, alpha)
        return self.est - q * self.se, self.est + q * self.se


def warn_single_dataset(codes: Sequence[str]) -> None:
    """One ``M_EQUALS_ONE`` warning for a comparison of one synthetic dataset."""
    if "M_EQUALS_ONE" in codes:
        warnings.warn(DataWarning(
            "one synthetic dataset (m = 1): the between-dataset variance is undefined, so each "
            "synthetic interval uses the dataset's own variance and a normal reference; it "
            "leaves out the variance the synthesis adds, which makes the interval overlap look "
            "better than it is (M_EQUALS_ONE).", code="M_EQUALS_ONE"),
            skip_file_prefixes=CALLER)


def _length_overlap(lo_o: float, hi_o: float, lo_s: float, hi_s: float, kind: str) -> float:
    """Overlap of one pair of intervals; ``nan`` when an interval is degenerate."""
    vals = (lo_o, hi_o, lo_s, hi_s)
    if not all(math.isfinite(v) for v in vals) or hi_o <= lo_o or hi_s <= lo_s:
        return math.nan
    return float(ci_overlap(lo_o, hi_o, lo_s, hi_s, kind=kind).values[0])


def estimand_row(name: str, original: Estimate, synthetic: Sequence[Estimate],
                 alpha: float = 0.05, choice: CombiningChoice | None = None
                 ) -> tuple[dict[str, Any], np.ndarray, list[str]]:
    """Original vs combined-synthetic comparison of one estimand: the table row, the
    per-dataset length overlaps and warning codes (default rules: partial)."""
    codes: list[str] = []
    q = [s.est for s in synthetic]
    u = [s.se**2 for s in synthetic]
    kw: dict[str, Any] = {}
    if choice is not None:
        kw = {"rules": choice.rules, "proper": choice.proper, "size_ratio": choice.size_ratio}
    with warnings.catch_warnings():
        # m = 1 is warned about once by the caller (warn_single_dataset); its code stays
        warnings.simplefilter("ignore", DataWarning)
        comb = combine_scalar(q, u, alpha=alpha, **kw)
    codes.extend(comb.warnings)
    lo_o, hi_o = original.interval(alpha)
    j = _length_overlap(lo_o, hi_o, comb.ci_lower, comb.ci_upper, "length")
    js = _length_overlap(lo_o, hi_o, comb.ci_lower, comb.ci_upper, "signed")
    per = np.array([_length_overlap(lo_o, hi_o, *s.interval(alpha), "length")
                    for s in synthetic])
    if math.isnan(j) or np.any(np.isnan(per)):
        codes.append("DEGENERATE_INTERVAL")
    scd = abs(original.est - comb.estimate) / original.se if original.se > 0 else math.nan
    row = {
        "estimand": name,
        "estimate_orig": original.est,
        "se_orig": original.se,
        "df_orig": original.df,
        "ci_lower_orig": lo_o,
        "ci_upper_orig": hi_o,
        "estimate_syn": comb.estimate,
        "se_syn": comb.se,
        "between_var": comb.between_var,
        "within_var": comb.within_var,
        "df_syn": comb.df,
        "ci_lower_syn": comb.ci_lower,
        "ci_upper_syn": comb.ci_upper,
        "overlap": j,
        "signed_overlap": js,
        "std_coef_diff": scd}
    return row, per, codes


def with_categorical_dtypes(df: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Copy of ``df`` whose categorical columns are Categoricals with the schema's levels."""
    out = df.copy()
    for c in schema.categorical:
        if c not in out.columns:
            continue
        levels = list(schema[c].levels or ())
        lookup = {normalise_level(v): v for v in levels}
        vals = [lookup.get(normalise_level(v), v) for v in out[c].tolist()]
        out[c] = pd.Categorical(vals, categories=levels, ordered=schema[c].type == "ordinal")
    return out


def fit_formula(formula: str, data: pd.DataFrame, family: str, label: str) -> pd.DataFrame:
    """Term estimates, SEs and reference df of ``formula`` fitted on ``data`` (OLS: t; GLMs:
    normal)."""
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    try:
        if family == "ols":
            model = smf.ols(formula, data)
        else:
            fam = sm.families.Binomial() if family == "logit" else sm.families.Poisson()
            model = smf.glm(formula, data, family=fam)
    except Exception as err:  # patsy/formulaic raise their own error types
        raise ValidationError(
            f"{arg_name('formula')} {formula!r} could not be evaluated on the {label}: {err}",
            code="INVALID_ARGUMENT",
        ) from err
    X = np.asarray(model.exog, dtype=np.float64)
    if X.shape[0] <= X.shape[1]:
        raise ValidationError(
            f"formula {formula!r} has {X.shape[1]} coefficients but the {label} has only "
            f"{X.shape[0]} rows.",
            code="TOO_FEW_RECORDS")
    if np.linalg.matrix_rank(X) < X.shape[1]:
        raise ValidationError(
            f"formula {formula!r}: the design matrix is rank-deficient on the {label} (a factor "
            "level that does not occur, or collinear terms); simplify the formula.",
            code="RANK_DEFICIENT")
    try:
        res = model.fit()
    except Exception as err:
        raise ValidationError(
            f"fitting formula {formula!r} ({family}) on the {label} failed: {err}",
            code="FIT_FAILED"
        ) from err
    params = np.asarray(res.params, dtype=np.float64)
    bse = np.asarray(res.bse, dtype=np.float64)
    if not (np.all(np.isfinite(params)) and np.all(np.isfinite(bse))):
        raise ValidationError(
            f"fitting formula {formula!r} ({family}) on the {label} gave non-finite estimates "
            "(separation or a degenerate response?).",
            code="FIT_FAILED")
    df = float(res.df_resid) if family == "ols" else math.inf
    return pd.DataFrame({"term": list(model.exog_names), "est": params, "se": bse, "df": df})


def _compare(original: pd.DataFrame, datasets: Sequence[pd.DataFrame], schema: Schema,
             formula: str, family: str, alpha: float, choice: CombiningChoice | None = None
             ) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    def table(df: pd.DataFrame) -> pd.DataFrame:
        # declared missing-value codes are missing values: the fit leaves their records out
        return with_categorical_dtypes(mask_missing_codes(df, schema.missing_codes), schema)

    o = fit_formula(formula, table(original), family, "original data")
    fits = [fit_formula(formula, table(z), family, f"synthetic dataset {l}")
            for l, z in enumerate(datasets, start=1)]
    for l, f in enumerate(fits, start=1):
        if list(f["term"]) != list(o["term"]):
            raise ValidationError(
                f"formula {formula!r} gives terms {list(f['term'])} on synthetic dataset {l} "
                f"but {list(o['term'])} on the original.",
                code="TERMS_DIFFER")
    rows, per, codes = [], [], []
    for i, term in enumerate(o["term"]):
        orig = Estimate(float(o["est"].iloc[i]), float(o["se"].iloc[i]), float(o["df"].iloc[i]))
        syn = [Estimate(float(f["est"].iloc[i]), float(f["se"].iloc[i]), float(f["df"].iloc[i]))
               for f in fits]
        row, p, c = estimand_row(term, orig, syn, alpha, choice)
        row = {"formula": formula, "term": term, **{k: v for k, v in row.items()
                                                     if k != "estimand"}}
        rows.append(row)
        per.append(p)
        codes.extend(c)
    return pd.DataFrame(rows), np.vstack(per), list(dict.fromkeys(codes))


def compare_estimates(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    formula: str,
    family: Literal["ols", "logit", "poisson"] = "ols",
    categorical: Iterable[str] | None = None,
    schema: Schema | None = None,
    alpha: float = 0.05,
    rules: Literal["auto", "partial", "full-same-n", "full-population"] = "auto",
    imputed: Any = "auto",
) -> pd.DataFrame:
    """Fit a formula on the original and on each synthetic dataset and compare.

    See :doc:`/methods/utility`.

    Parameters
    ----------
    original : DataFrame
    synthetic : DataFrame, list of DataFrame or SyntheticData
    formula : str
        A statsmodels formula, e.g. ``"Income ~ Age + C(Marital)"``; categorical columns enter
        as factors even without ``C()``.
    family : {"ols", "logit", "poisson"}
        Linear, logistic or Poisson regression (canonical links).
    categorical : iterable of str, optional
        Integer-coded columns to treat as categorical.
    schema : Schema, optional
    alpha : float
        ``1 −`` confidence level.
    rules : {"auto", "partial", "full-same-n", "full-population", "partial-sample"}
        Combining rules (as ``rules`` of :class:`~bayes_risk.utility.OverlapSpec`).
    imputed : "auto" or iterable of str
        As :func:`~bayes_risk.pmse`'s.

    Returns
    -------
    DataFrame
        One row per term: the original's and the combined synthetic estimate, standard error,
        df and interval, ``overlap``, ``signed_overlap`` and ``std_coef_diff``. ``attrs`` holds
        ``"overlap_per_dataset"``, ``"mean_overlap"``, ``"warnings"``, ``"combining"`` and
        ``"imputed"``.

    Raises
    ------
    ValidationError
        Bad options, a formula that cannot be evaluated, rank-deficient designs, failing fits.
    SchemaError
        Column mismatches between the tables, unknown columns in ``categorical``.

    Examples
    --------
    >>> import warnings
    >>> from bayes_risk.data import make_ce_like
    >>> d = make_ce_like(n=300, random_seed=1)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     t = compare_estimates(d, [d, d], formula="Income ~ Age",
    ...                           categorical=["Urban", "Marital", "Tenure"])
    >>> t["term"].tolist(), t["std_coef_diff"].round(12).tolist()
    (['Intercept', 'Age'], [0.0, 0.0])
    >>> sorted({w.message.code for w in caught})
    ['DUPLICATE_DATASETS']
    >>> t.attrs["warnings"]
    ['DUPLICATE_DATASETS']
    """
    family = check_value(family, Options(("ols", "logit", "poisson")), "family")
    check_value(formula, Text("a string 'response ~ terms'", "(?s).*~.*"), "formula")
    alpha = check_probability(alpha, "alpha")
    datasets, source = as_synthetic_list(synthetic, original=original)
    dups = duplicate_codes(datasets)  # warned by as_synthetic_list; a result code too
    carried = None if source is None else source.schema
    schema = resolve_schema(original, datasets, schema=schema, carried=carried,
                            categorical=categorical, synthesized=None, same_rows=False,
                            recoded=() if source is None else source.recoded_columns)
    syn = list(schema.synthesized) if schema.synthesized else None
    choice = choose_rules(rules, source, original, datasets, syn, list(schema.names))
    imp = resolve_imputed(imputed, source, original, datasets, schema)
    imp_codes = warn_observed_cells(imp)
    original, datasets = observed_cells(original, datasets, imp, for_pmse=False)
    table, per, codes = _compare(original, datasets, schema, formula, family, float(alpha),
                                 choice)
    codes = [*dups, *codes, *imp_codes]
    warn_single_dataset(codes)
    table.attrs["imputed"] = imp.to_settings()
    table.attrs["combining"] = choice.to_settings()
    table.attrs["overlap_per_dataset"] = per
    ok = table["overlap"].notna()
    table.attrs["mean_overlap"] = float(table.loc[ok, "overlap"].mean()) if ok.any() else math.nan
    table.attrs["warnings"] = codes
    return table
