"""One-call utility summary (pMSE and interval overlap) of a synthetic release."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, check_params, checked
from bayes_risk._rng import RandomSeed
from bayes_risk._specs import argument_checks, as_spec, cli_option
from bayes_risk._utility_specs import OverlapSpec, imputed_columns
from bayes_risk.data.alignment import check_rows_aligned
from bayes_risk.data.normalise import as_synthetic_list
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import validate_synthetic
from bayes_risk.exceptions import CALLER, DataWarning, SchemaError, ValidationError, arg_name
from bayes_risk.results.utility import UtilitySummary
from bayes_risk.utility._inputs import (
    differing_share,
    observed_cells,
    resolve_imputed,
    resolve_schema,
)
from bayes_risk.utility.compare import (
    Estimate,
    _compare,
    choose_rules,
    estimand_row,
    warn_single_dataset,
)
from bayes_risk.utility.pmse import PROPENSITY_METHODS, PropensitySpec, pmse
from bayes_risk.utility.quality import quality_report
from bayes_risk.utility.tables import marginal_percentages, table_utility

__all__ = ["UtilitySummary", "OverlapSpec", "utility_summary", "default_estimands"]

#: the default estimands' treatment of missing values, as recorded in the summary's settings
OVERLAP_MISSING_POLICY = (
    "means over observed values (empty cells and declared codes left out); level proportions "
    "over all records; P(c missing) for every column with missing values")


def default_estimands(original: pd.DataFrame, datasets: Sequence[pd.DataFrame], schema: Schema,
                      columns: Sequence[str], observed: Iterable[str] = ()
                      ) -> list[tuple[str, Estimate, list[Estimate]]]:
    """Means of numeric columns and level proportions of categorical ones, with
    ``P(c missing)``; ``observed`` (imputed) columns: proportions over observed cells only."""
    observed = set(observed)
    from bayes_risk.utility.pmse import prepare_table

    def mean_est(x: np.ndarray) -> Estimate:
        x = x[~np.isnan(x)]
        n = x.size
        return Estimate(float(x.mean()), float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else
                        math.nan, float(n - 1))

    def prop_est(codes: np.ndarray, k: int, among: int | None = None) -> Estimate:
        if among is not None:  # over the observed cells (code ``among`` is missing)
            codes = codes[codes != among]
        n = codes.size
        if n == 0:
            return Estimate(math.nan, math.nan)
        p = float(np.mean(codes == k))
        return Estimate(p, math.sqrt(p * (1 - p) / n))

    po = prepare_table(original, schema, columns)
    ps = [prepare_table(z, schema, columns) for z in datasets]
    out: list[tuple[str, Estimate, list[Estimate]]] = []
    for c in columns:
        spec = schema[c]
        if spec.is_categorical:
            among = spec.n_levels if c in observed else None
            for k, lev in enumerate(spec.levels or ()):
                out.append((f"P({c} = {lev})", prop_est(po[c], k, among),
                            [prop_est(z[c], k, among) for z in ps]))
        else:
            out.append((f"mean({c})", mean_est(po[c]), [mean_est(z[c]) for z in ps]))
        if c in observed:
            continue
        miss = [np.isnan(t[c]) if not spec.is_categorical else t[c] == spec.n_levels
                for t in (po, *ps)]
        if any(m.any() for m in miss):
            out.append((f"P({c} missing)", prop_est(miss[0], True),
                        [prop_est(m, True) for m in miss[1:]]))
    return out


def _check_sizes(original: pd.DataFrame, datasets: Sequence[pd.DataFrame]) -> None:
    """Refuse a table of fewer than 2 records (``TOO_FEW_RECORDS``): an estimate of one record
    has no standard error, so neither its interval nor the combining rules are defined."""
    named = [("the original", original), *((f"synthetic dataset {l}", z)
                                           for l, z in enumerate(datasets, start=1))]
    for name, t in named:
        if len(t) < 2:
            raise ValidationError(
                f"{name} has {len(t)} record{'s' if len(t) != 1 else ''}; the utility measures "
                "need at least 2 in every table (an estimate of one record has no standard "
                "error, so its confidence interval and the combining rules are undefined).",
                code="TOO_FEW_RECORDS")


def utility_summary(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    schema: Schema | None = None,
    propensity: PropensitySpec | Literal["logit", "cart"] | None = None,
    overlap: OverlapSpec | None = None,
    categorical: Iterable[str] | None = None,
    random_seed: RandomSeed = None,
    progressbar: bool = False,
    table_order: Annotated[int, cli_option(
        "--table-order", "per-table utility (synthpop's utility.tables): every table of 1 to N "
        "columns, N = 1, 2 or 3 (default 2: every column and every pair)", type=int,
        metavar="N") | checked(Interval(int, 1, 3))] = 2,
    ngroups: Annotated[int, cli_option(
        "--ngroups", "per-table utility: groups of a numeric column, cut at the quantiles of the "
        "original and synthetic values pooled (default 5, synthpop's)", type=int, metavar="K")
        | checked(Interval(int, 2))] = 5,
    synthesized: Annotated[Iterable[str] | None, cli_option(
        "--synthesized", "synthesized columns (default: the roles recorded in a SyntheticData "
        "folder, otherwise the columns that differ from the original in some dataset)",
        nargs="+", metavar="COL")] = None,
    imputed: Annotated[Any, cli_option(
        "--imputed", "columns whose missing values the synthesizer imputed (DPMPM does): "
        "compared on the original's observed cells, proportions among the observed records and "
        "the pMSE with synthetic values masked where the original is missing; 'none' compares "
        "missing values as a level. Default: the imputed_columns recorded in the release's "
        "manifest, else the columns with empty cells in the original and none in any synthetic "
        "dataset (with a warning)", nargs="+", metavar="COL", parse=imputed_columns)] = "auto",
) -> UtilitySummary:
    """pMSE and interval overlap of a synthetic release in one call (methods, Utility measures).

    Parameters
    ----------
    original : DataFrame
    synthetic : DataFrame, list of DataFrame or SyntheticData
    propensity : PropensitySpec, "logit" or "cart", optional
        As :func:`~bayes_risk.utility.pmse.pmse`'s: the propensity model and the null.
    overlap : OverlapSpec, optional
        The interval-overlap figures (default ``OverlapSpec()``).
    categorical : iterable of str, optional
        Integer-coded columns to treat as categorical.
    random_seed : int, Generator or None
    progressbar : bool
    table_order, ngroups : int
        ``order`` and ``ngroups`` of the per-table utility
        (:func:`~bayes_risk.utility.table_utility`; its one-way tables are
        :func:`~bayes_risk.utility.compare_marginals`' per-variable utility).
    synthesized : iterable of str, optional
        Synthesized columns (default: the schema's roles, else inferred from aligned rows).
    imputed : "auto" or iterable of str
        As :func:`~bayes_risk.pmse`'s.

    Returns
    -------
    UtilitySummary
        ``pmse``, ``overlap``, ``comparison``, ``estimand_kind``, ``synthesized``,
        ``synthesized_inferred``, ``settings``, ``warnings``, ``tables`` (per-table utility),
        ``marginals`` (synthpop's ``compare()`` percentages) and ``quality`` (SDMetrics'
        quality report, :func:`~bayes_risk.utility.quality_report`, default thresholds).

    Raises
    ------
    ValidationError, SchemaError
        As :func:`~bayes_risk.utility.pmse.pmse` and
        :func:`~bayes_risk.utility.compare.compare_estimates`; ``US_COLUMNS_DIFFER`` when
        unsynthesized columns differ from the original.

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_risk.data import make_ce_like
    >>> d = make_ce_like(n=400, random_seed=3)
    >>> rng = np.random.default_rng(1)
    >>> syn = [d.assign(Income=d["Income"] + rng.normal(0, 100, len(d))) for _ in range(3)]
    >>> s = utility_summary(d, syn, propensity=PropensitySpec(max_order=0),
    ...                     categorical=["Urban", "Marital", "Tenure"])
    >>> s.synthesized, list(s.overlap["estimand"]), s.pmse.null
    (['Income'], ['mean(Income)'], 'theory')
    """
    checks = argument_checks(utility_summary)
    check_params(dict(table_order=table_order, ngroups=ngroups),
                 {k: checks[k] for k in ("table_order", "ngroups")})
    spec = as_spec(propensity, PropensitySpec, "propensity", "method", PROPENSITY_METHODS)
    ov = as_spec(overlap, OverlapSpec, "overlap")
    estimands, family, alpha, rules = ov.estimands, ov.family, ov.alpha, ov.rules
    datasets, source = as_synthetic_list(synthetic, original=original)
    _check_sizes(original, datasets)
    carried = None if source is None else source.schema
    schema = resolve_schema(original, datasets, schema=schema, carried=carried,
                            categorical=categorical, synthesized=synthesized, same_rows=False,
                            recoded=() if source is None else source.recoded_columns)
    syn_cols, inferred, codes = _roles(original, datasets, schema, synthesized)
    sizes = sorted({len(z) for z in datasets if len(z) != len(original)})
    if sizes:
        codes.append("ROW_COUNT_DIFFERS")
        warnings.warn(
            f"synthetic datasets with {', '.join(map(str, sizes))} rows against the original's "
            f"{len(original)} (ROW_COUNT_DIFFERS): pMSE and the interval overlap are defined "
            "for different sizes, but records cannot be compared"
            + (f"; every column is treated as synthesized (give {arg_name('synthesized')})"
               if inferred else "; the unsynthesized columns could not be checked"),
            DataWarning, skip_file_prefixes=CALLER)
    if syn_cols:
        schema = schema.with_roles(syn_cols)
        if not inferred and all(len(z) == len(original) for z in datasets):
            # declared roles must be true: unsynthesized columns are released unchanged
            validate_synthetic(original, datasets, schema=schema, same_rows=True,
                               check_unsynthesized=True, allow_nan=True)

    choice = choose_rules(rules, source, original, datasets,
                          syn_cols if syn_cols else None, list(schema.names))
    imp = resolve_imputed(imputed, source, original, datasets, schema)
    # pmse masks the imputed columns itself (and warns MISSING_AT_RANDOM_ASSUMED once)
    pm = pmse(original, datasets, propensity=spec, random_seed=random_seed, schema=schema,
              synthesized=syn_cols or None, progressbar=progressbar, imputed=imp)
    codes.extend(pm.warnings)
    original, datasets = observed_cells(original, datasets, imp, for_pmse=False)
    # synthpop's utility.tables and compare() over every column (imputed ones on the original's
    # observed cells, as the overlap)
    tables = table_utility(original, datasets, schema=schema, order=table_order,
                           ngroups=ngroups, observed=imp.columns)
    marginals = marginal_percentages(original, datasets, schema, list(schema.names),
                                     observed=imp.columns)
    quality = quality_report(original, datasets, schema=schema)

    formulas = list(estimands) if estimands is not None else []
    overlap, comparison, kind = _overlap(original, datasets, schema, formulas, family,
                                         float(alpha), choice, syn_cols or list(schema.names),
                                         imp.columns, codes)
    settings = {
        # where the synthesized columns came from (the printed headline says it)
        "synthesized_roles": "given" if synthesized is not None else
        "inferred: columns differing from the original" if inferred else
        "recorded in the release's manifest" if carried is not None and carried.synthesized
        else "the schema's roles",
        "pmse_method": spec.method, "max_order": spec.max_order, "null": pm.null,
        "alpha": float(alpha), "family": family, "formulas": formulas,
        "n_perm": int(spec.n_perm), "table_order": int(table_order), "ngroups": int(ngroups),
        **{f"pmse_{k}": v for k, v in pm.settings.items()
                                  if not k.startswith("imputed_")},
        **choice.to_settings(), **imp.to_settings(),
        "overlap_missing_values": OVERLAP_MISSING_POLICY if kind == "means_and_proportions"
        else "fitted models: records with a missing value in a model's columns are left out "
             "(statsmodels' missing='drop')"}
    warn_single_dataset(codes)
    return UtilitySummary(
        pmse=pm, overlap=overlap, comparison=comparison, estimand_kind=kind,
        synthesized=list(syn_cols), synthesized_inferred=inferred, settings=settings,
        warnings=list(dict.fromkeys(codes)), tables=tables, marginals=marginals,
        quality=quality)


def _overlap(original: pd.DataFrame, datasets: list[pd.DataFrame], schema: Schema,
             formulas: list[str], family: Any, alpha: float, choice: Any, cols: list[str],
             observed: Iterable[str], codes: list[str]
             ) -> tuple[pd.DataFrame, pd.DataFrame | None, str]:
    """The interval overlap of each estimand, one column per dataset: of the terms of the
    fitted ``formulas``, else of the default estimands of ``cols`` (``observed``: imputed
    columns, over the original's observed cells). Returns the overlap table, the fitted
    models' comparison (``None`` without formulas) and the kind of estimands; appends the
    warning codes to ``codes``."""
    comparison = None
    if formulas:
        fitted, pers = [], []
        for f in formulas:
            t, per, c = _compare(original, datasets, schema, f, family, alpha, choice)
            fitted.append(t)
            pers.append(per)
            codes.extend(c)
        comparison = pd.concat(fitted, ignore_index=True)
        per_all = np.vstack(pers)
        overlap = comparison.rename(columns={"term": "estimand"}).copy()
        overlap["estimand"] = [f"{f}: {t}" for f, t in zip(comparison["formula"],
                                                           comparison["term"], strict=False)]
        overlap = overlap.drop(columns=["formula"])
        kind = "formulas"
    else:
        rows, per_rows = [], []
        for name, o, s in default_estimands(original, datasets, schema, cols, observed=observed):
            row, per, c = estimand_row(name, o, s, alpha, choice)
            rows.append(row)
            per_rows.append(per)
            codes.extend(c)
        overlap = pd.DataFrame(rows)
        per_all = np.vstack(per_rows) if per_rows else np.empty((0, len(datasets)))
        kind = "means_and_proportions"
    for l in range(len(datasets)):
        overlap[f"overlap_syn{l + 1}"] = per_all[:, l] if per_all.size else []
    return overlap, comparison, kind


def _roles(
    original: pd.DataFrame, datasets: list[pd.DataFrame], schema: Schema, synthesized: Any
) -> tuple[list[str], bool, list[str]]:
    """``(synthesized columns, inferred, warning codes)``: declared, or read off aligned rows."""
    codes: list[str] = []
    inferred = False
    if synthesized is not None or schema.synthesized:
        syn_cols = list(schema.synthesized)
    elif all(len(z) == len(original) for z in datasets):
        # the roles are read off the rows: shuffled files would make every column "synthesized"
        check_rows_aligned(original, datasets, None)
        shares = differing_share(original, datasets, schema)
        syn_cols = list(shares)
        inferred = True
        def listed(cols: dict[str, list[float]]) -> str:
            return ", ".join(f"{c!r} (differing records per dataset: "
                             + ", ".join(f"{x:.1%}" for x in v) + ")" for c, v in cols.items())

        # unchanged in some dataset and changed in another contradicts any role
        contradicted = {c: v for c, v in shares.items() if min(v) == 0}
        if contradicted:
            raise SchemaError(
                f"column(s) {listed(contradicted)} are unchanged in some synthetic datasets and "
                "changed in others, so their role cannot be inferred (ROLE_CONTRADICTED): if "
                "they were released unchanged the synthetic files were altered. State the "
                f"synthesized columns with {arg_name('synthesized')} or give the release folder "
                "with its manifest.", code="ROLE_CONTRADICTED")
        odd = {c: v for c, v in shares.items() if max(v) < 0.05}
        if odd:
            codes.append("ROLE_INFERENCE_DOUBTFUL")
            warnings.warn(
                f"column(s) {listed(odd)} are inferred as synthesized although they differ "
                "from the original in under 5 % of the records of every dataset "
                "(ROLE_INFERENCE_DOUBTFUL): right when only some records were synthesized; "
                f"otherwise state the roles with {arg_name('synthesized')}.", DataWarning,
                skip_file_prefixes=CALLER)
        if not syn_cols:
            codes.append("NO_DIFFERENCES")
            warnings.warn(
                "every synthetic dataset equals the original; pMSE is 0 and the overlaps are 1 "
                "(NO_DIFFERENCES).", DataWarning, skip_file_prefixes=CALLER)
    else:
        syn_cols = list(schema.names)
        inferred = True
    return syn_cols, inferred, codes
