"""Stage 1 of identification risk: validate the inputs and build the :class:`IdentificationPlan`
(options, schema, replicates, match rule, targets, encoding, population counts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Options, Requires, check_params, check_relations, check_value
from bayes_risk._specs import argument_checks
from bayes_risk.data.alignment import check_rows_aligned
from bayes_risk.data.coding import coded_as_released
from bayes_risk.data.missing import mask_missing_codes, missing_mask
from bayes_risk.data.normalise import as_synthetic_list
from bayes_risk.data.provenance import duplicate_codes
from bayes_risk.data.schema import (
    CATEGORICAL_TYPES,
    SCHEMA,
    Schema,
    did_you_mean,
    infer_schema,
)
from bayes_risk.data.synthetic import released_records
from bayes_risk.data.validate import require_distinct, require_frame, validate_table
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.identification import population as _population
from bayes_risk.identification.encoding import encode_problem
from bayes_risk.identification.inputs import released_replicates, user_replicates
from bayes_risk.identification.matching import MatchRule, parse_radius
from bayes_risk.identification.plan import (
    EncodedData,
    IdentificationPlan,
    ReplicateSource,
    RunSettings,
)
from bayes_risk.identification.specs import (
    COMPAT_MODES,
    MISSING_KNOWN,
    MatchSpec,
    PopulationSpec,
)
from bayes_risk.warning_codes import message

__all__ = ["prepare", "known_names", "known_columns", "check_original", "default_fallback",
           "inferred_synthesized", "COMPAT_MODES", "MISSING_KNOWN"]


def _names(cols: Any) -> list[str]:
    if cols is None:
        return []
    if isinstance(cols, str):
        return [cols]
    return [str(c) for c in cols]


def known_names(known: Any) -> list[str]:
    """The intruder's known columns as a list of names (a name alone is one column), the one
    reading of ``known=``: refused when it names none or one twice (``ValidationError``)."""
    names = _names(known)
    if not names:
        raise ValidationError(
            "no known column: give known=[...] (the intruder's quasi-identifiers)."
        )
    return require_distinct(names, "known")


#: the identification entry points' arguments against each other
_RELATIONS = (Requires("replicates", "synthesized", code="INVALID_ARGUMENT",
                       why="the known columns the replicates replace"),)


def known_columns(original: pd.DataFrame, synthetic: Any, known: Any, synthesized: Any,
                  replicates: Any) -> tuple[list[str], list[str]]:
    """The known columns split into those released unchanged and those synthesized (given, the
    release's manifest, else those whose released values differ from the original's); the
    entry points' check of ``original``, before :func:`prepare`."""
    check_original(original)
    check_relations(dict(replicates=replicates, synthesized=synthesized), _RELATIONS)
    known = known_names(known)
    if synthesized is not None:
        syn = _names(synthesized)
        require_distinct(syn, "synthesized")
        # a known column is checked (with a suggestion) with the schema; the others here
        cols = [str(c) for c in original.columns]
        miss = [c for c in syn if c not in cols and c not in known]
        if miss:
            raise SchemaError(
                f"synthesized names column(s) {miss} that are not in the original data."
                + did_you_mean(miss[0], cols), code="UNKNOWN_COLUMN",
            )
        syn_set = set(syn)
    else:
        syn_set = inferred_synthesized(original, synthetic, known)
    return [c for c in known if c not in syn_set], [c for c in known if c in syn_set]


def check_original(original: Any) -> None:
    """Raise a ValidationError unless ``original`` is a DataFrame."""
    require_frame(original, "original")
def inferred_synthesized(original: Any, synthetic: Any, known: list[str]) -> set[str]:
    """The synthesized known columns of the release's manifest, else of the released values."""
    schema = getattr(synthetic, "schema", None)
    roles = set(getattr(schema, "synthesized", ()) or ()) if schema is not None else set()
    if roles:
        return {c for c in known if c in roles}
    datasets = as_synthetic_list(synthetic, allow_none=False, original=original)[0]
    original = original.copy(deep=False)
    original.columns = [str(c) for c in original.columns]
    syn = set()
    for c in known:
        if c not in original.columns:
            continue  # prepare names the missing column
        for z in datasets:
            if c not in z.columns or not _same_values(original[c], z[c]):
                syn.add(c)
                break
    return syn


def _same_values(a: pd.Series, b: pd.Series) -> bool:
    """Whether two columns hold the same values row by row (1 and 1.0 equal, missing alike)."""
    if len(a) != len(b):
        return False
    na, nb = missing_mask(a), missing_mask(b)
    if not np.array_equal(na, nb):
        return False
    x, y = a.to_numpy(dtype=object)[~na], b.to_numpy(dtype=object)[~nb]
    return bool(np.all(x == y))


#: what IdentificationRiskCalculation's mode takes of the options it does not fix: known
#: membership's strategy, a rectangle (or the package's euclideanDist=TRUE), a radius type
_COMPAT_OPTIONS = {"strategy": ("always",), "shape": (None, "rectangle", "legacy_hh_euclid"),
                   "radius_type": ("percentage", "absolute")}


def _compat_options(o: dict[str, Any], *, targets, replicates, population_counts) -> None:
    """Check and fix the options of IdentificationRiskCalculation's mode (in place)."""
    name = "compat='IdentificationRiskCalculation'"
    fixed = {"window": "open", "aggregation": "per_dataset", "membership": "known",
             "fallback": "none"}
    for arg, need in fixed.items():
        given = o[arg]
        if given is not None and str(given).replace("-", "_") != need:
            raise ValidationError(
                f"{name} reproduces the R package, which uses {arg}={need!r}; "
                f"got {arg}={given!r}. Drop the argument or compat."
            )
    for arg, allowed in _COMPAT_OPTIONS.items():
        check_value(o[arg], Options(allowed, listed=True), f"{arg} with {name}")
    if targets is not None or replicates is not None or population_counts is not None:
        raise ValidationError(
            f"{name} uses every original record as a target and the released datasets as "
            "replicates; targets, replicates and population counts or weights are not available "
            "in this mode."
        )
    if o["r_min"]:
        raise ValidationError(f"{name} has no r_min (the package has no floor).")
    o.update(fixed, shape=o["shape"] or "rectangle", strategy="always")


def default_fallback(aggregation: str, membership: str, known_us: list[str]) -> str:
    """``MatchSpec(fallback=None)`` resolved (Drechsler & Reiter 2009): the unsynthesized key
    when pooling under known membership; without a known unsynthesized column the set is the
    file."""
    pooled_known = aggregation == "pooled" and membership == "known" and bool(known_us)
    return "unsynthesized" if pooled_known else "none"


def _resolve_options(o: dict[str, Any], known_us: list[str], *, targets, replicates,
                     population_counts) -> dict[str, Any]:
    """Defaults of the matching and aggregation options (``o``: the ``MatchSpec``'s fields,
    each checked there, with ``aggregation`` and ``membership``)."""
    if o["compat"] is not None:
        _compat_options(o, targets=targets, replicates=replicates,
                        population_counts=population_counts)
    o["window"] = o["window"] or "closed"
    o["shape"] = o["shape"] or "rectangle"
    if o["shape"] == "mahalanobis":
        # the radius is a Mahalanobis distance: one absolute radius on whitened values (a
        # radius_type of another kind is refused by MatchSpec)
        if o["r_min"]:
            raise ValidationError("r_min does not apply to shape='mahalanobis'.",
                                  code="INVALID_ARGUMENT")
        o["radius_type"] = "absolute"
    o["aggregation"] = (o["aggregation"] or "pooled").replace("-", "_")
    check_params(o, argument_checks("bayes_risk.identification.api:identification_risk"))
    if o["fallback"] is None:
        o["fallback"] = default_fallback(o["aggregation"], o["membership"], known_us)
    return o


def _known_schema(original: pd.DataFrame, schema: Any, categorical: Any, known_us: list[str],
                  known_s: list[str]) -> Schema:
    """Schema of the known columns (given or inferred), the original checked against it."""
    known = known_us + known_s
    if check_value(schema, [SCHEMA, None], "schema") is None:
        schema = infer_schema(original, categorical=_names(categorical) or None)
    schema.check_columns(known_us, "known_unsynthesized")
    schema.check_columns(known_s, "known_synthesized")
    # a known column the original lacks: validate_table's MISSING_COLUMN
    sk = schema.select([c for c in schema.names if c in known])
    validate_table(original, sk, name="original", extra_columns=True, allow_nan=True)
    return sk


def _match_rule(o: Mapping[str, Any], sk: Schema, original: pd.DataFrame, known_us: list[str],
                known_s: list[str]) -> MatchRule:
    known = known_us + known_s
    radius_type = o["radius_type"]
    is_compat = o["compat"] is not None
    rad = parse_radius(
        o["radius"], known_us=known_us, known_s=known_s, column_order=list(original.columns),
        categorical={c for c in known if sk[c].type in CATEGORICAL_TYPES},
        continuous={c for c in known if sk[c].type == "continuous"},
        count={c for c in known if sk[c].type == "count"},
        radius_type=radius_type, compat=is_compat,
    )
    r_min = o["r_min"]
    if isinstance(r_min, (int, float)) and not isinstance(r_min, bool):
        r_min = {c: float(r_min) for c in rad}
    r_min = dict(r_min or {})  # of a percentage radius (MatchSpec; mahalanobis: refused above)
    return MatchRule(
        exact_us=tuple(c for c in known_us if c not in rad),
        exact_s=tuple(c for c in known_s if c not in rad),
        radius_us=tuple(c for c in original.columns if c in known_us and c in rad),
        radius_s=tuple(c for c in original.columns if c in known_s and c in rad),
        radius=rad,
        radius_type=radius_type,
        r_min=r_min,
        window=o["window"],
        shape=o["shape"],
        legacy_signed=is_compat and radius_type == "percentage",
        quantile_groups=int(o["quantile_groups"]),
    )


def _original_ids(original: pd.DataFrame, original_id, target_id, external: bool
                  ) -> np.ndarray | pd.Index:
    """The labels of the original's records: a column's values, or its index (a
    ``RangeIndex`` kept unmaterialised: at 10^6 records 7.6 MiB fewer for the run)."""
    if original_id is not None:
        if original_id not in original.columns:
            raise SchemaError(f"original_id column {original_id!r} is not in the original data.",
                              code="MISSING_COLUMN")
        ids = original[original_id].to_numpy()
    elif external and target_id is not None and target_id in original.columns:
        ids = original[target_id].to_numpy()
    else:
        ids = original.index
    if external and pd.Index(ids).has_duplicates:
        raise ValidationError(
            "the ids of the original records are not unique; targets cannot be linked.",
            code="DUPLICATE_ID"
        )
    return ids


def _targets(original: pd.DataFrame, targets: Any, target_id: Any, ids_orig: np.ndarray,
             known: list[str], sk: Schema):
    """The target table, in-sample flags, own-record positions and target labels."""
    n = len(original)
    if targets is None:
        return original, np.ones(n, dtype=bool), np.arange(n, dtype=np.int64), original.index
    tdf = require_frame(targets, "targets").copy(deep=False)
    tdf.columns = [str(c) for c in tdf.columns]
    miss = [c for c in known if c not in tdf.columns]
    if miss:
        raise SchemaError(
            f"targets lack known column(s) {miss}; the target table must hold every known "
            f"column ({known}) and an id column.",
            code="MISSING_COLUMN",
        )
    if target_id is None or target_id not in tdf.columns:
        raise SchemaError(
            f"targets: id column {target_id!r} not found (columns: {list(tdf.columns)}); "
            "pass target_id= naming the column that links targets to sample records.",
            code="MISSING_COLUMN",
        )
    validate_table(tdf, sk.select(known), name="targets", extra_columns=True,
                   check_levels=False, allow_nan=True)
    tid = tdf[target_id].to_numpy()
    if pd.Index(tid).has_duplicates:
        raise ValidationError(f"targets: id column {target_id!r} has duplicated ids.",
                              code="DUPLICATE_ID")
    pos = pd.Index(ids_orig).get_indexer(tid)
    in_sample = pos >= 0
    return tdf, in_sample, np.where(in_sample, pos, -1).astype(np.int64), tid


def _check_missing_membership(o: Mapping[str, Any], prep: Any, original: pd.DataFrame,
                              known: list[str]) -> None:
    """The population counts of unknown membership are for complete keys only."""
    if o["membership"] != "unknown":
        return
    for c in known:
        if original[c].isna().any() or prep.tgt_drop is not None:
            raise ValidationError(
                f"known column {c!r} has missing values; membership='unknown' needs population "
                "counts of complete keys. Use membership='known' or drop the records with "
                "missing known values.",
                code="MISSING_VALUES"
            )


def prepare(
    original: Any,
    synthetic: Any,
    known_unsynthesized: Any,
    known_synthesized: Any,
    *,
    match: MatchSpec,
    population: PopulationSpec,
    aggregation: str | None = None,
    categorical: Any = None,
    schema: Any = None,
    key_order: Any = None,
    replicates: Any = None,
) -> IdentificationPlan:
    """Validate the data against the options and build the plan (``match`` and ``population``
    already validated, :func:`~bayes_risk.identification.specs.spec_options`; ``key_order``:
    the key order of user counts; ``original`` checked by :func:`known_columns`)."""
    original = original.copy(deep=False)
    original.columns = [str(c) for c in original.columns]
    # no synthetic datasets is fine when replicates= are given
    empty = isinstance(synthetic, (list, tuple)) and not synthetic
    datasets, source = (([], None) if empty else
                        as_synthetic_list(synthetic, allow_none=True, original=original))
    known_us, known_s = list(known_unsynthesized), list(known_synthesized)
    known = known_us + known_s
    weights, targets = population.weights, population.targets
    target_id, original_id = population.target_id, population.original_id
    o = _resolve_options(dict(match.options(), aggregation=aggregation,
                              membership=population.membership), known_us,
                         targets=targets, replicates=replicates,
                         population_counts=population.counts if weights is None else weights)
    sk = _known_schema(original, schema, categorical, known_us, known_s)
    original = mask_missing_codes(original, sk.missing_codes)  # declared codes are missing
    # the intruder codes what they know at the released datasets' published bounds before
    # matching (replicates drawn from a model are not coded)
    coding_of = source if replicates is None else None
    original, coded = coded_as_released(original, coding_of, known)
    if targets is not None and isinstance(targets, pd.DataFrame):
        targets = coded_as_released(mask_missing_codes(targets, sk.missing_codes), coding_of,
                                    known)[0]
    warn: dict[str, str] = {}
    if duplicate_codes(datasets):  # warned by as_synthetic_list: kept among the run's warnings
        warn["DUPLICATE_DATASETS"] = message("DUPLICATE_DATASETS")
    recoded = () if source is None else source.recoded_columns
    # rows removed after synthesis: the records whose own rows each dataset still holds
    released = None if replicates is not None else released_records(source, len(original))
    if replicates is None:
        rep_s, sk = released_replicates(original, datasets, known_us, known, sk, recoded,
                                        released)
        check_rows_aligned(original, datasets, source, synthesized=known_s, record=warn)
    else:
        rep_s, sk = user_replicates(replicates, original, known_s, sk, recoded)
    rule = _match_rule(o, sk, original, known_us, known_s)
    ids_orig = _original_ids(original, original_id, target_id, targets is not None)
    tdf, in_sample, rec, target_ids = _targets(original, targets, target_id, ids_orig, known, sk)
    enc = encode_problem(rule, sk, {c for c in known if sk[c].type in CATEGORICAL_TYPES},
                         known_s, original, tdf, rep_s, in_sample, rec, warn,
                         missing_known=o["missing_known"], released=released)
    _check_missing_membership(o, enc.prep, original, known)
    counts = _population.population_counts(
        population, prep=enc.prep, rule=rule, targets=tdf, known=_names(key_order) or known,
        codes_orig=enc.codes_orig, warn=warn, original=original,
    )
    extra = {} if enc.maha_cov is None else {"mahalanobis_covariance": enc.maha_cov.tolist()}
    if coded:
        extra["known_coded_as_released"] = coded
    # the missing-value policy is stated whether or not this run met a missing value
    extra.update(missing_known=o["missing_known"],
                 n_missing_known_values=int(sum(tdf[c].isna().sum() for c in known)))
    if weights is not None:  # the survey weights the counts come from: a column, or given
        extra["population_weights"] = weights if isinstance(weights, str) else \
            f"one weight per record ({len(weights)})"
    settings = RunSettings(
        known_unsynthesized=known_us, known_synthesized=known_s, aggregation=o["aggregation"],
        membership=o["membership"], fallback=o["fallback"], strategy=o["strategy"],
        compat=o["compat"], external_targets=targets is not None, extra=extra,
    )
    return IdentificationPlan(
        data=EncodedData(prep=enc.prep, schema=sk, target_ids=target_ids,
                         record_labels=ids_orig, exact_encoders=enc.encoders,
                         missing_known=o["missing_known"]),
        rule=rule, counts=counts,
        replicates=ReplicateSource(R=len(rep_s), user=replicates is not None),
        settings=settings, warnings=warn,
    )

