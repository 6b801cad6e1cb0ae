"""File-level summaries of an attribute-risk result: :func:`file_summary`, over the measures of
:mod:`bayes_risk.attribute.summaries`. Flagged records are reported separately.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import Options, check_value
from bayes_risk._rng import RandomSeed, spawn
from bayes_risk.attribute.locations import (
    check_location_columns,
    location_xy,
    record_posteriors,
)
from bayes_risk.attribute.summaries import (
    largest_value,
    paiva_measures,
    wang_reiter,
    wang_reiter_file,
)
from bayes_risk.attribute.uncertainty import wang_reiter_uncertainty
from bayes_risk.exceptions import ValidationError

__all__ = ["file_summary"]

KINDS = ("hrw", "wang_reiter", "paiva", "largest_value")
#: the kinds that read the original, and what they read of it
_NEEDS_ORIGINAL = {"wang_reiter": "R2 counts other records",
                   "paiva": "unique patterns of pattern_vars"}


def _refuse_missing_truth(result: Any, cols: Sequence[str], kind: str) -> None:
    """Refuse, by name, a record whose true value of ``cols`` is missing (distances need it)."""
    recs = result.records.index.to_numpy()
    for k, cs in enumerate(result.candidates):
        for c in cols:
            j = list(cs.columns).index(c)
            t = float(cs.values[cs.g0, j])
            if np.isnan(t) or (result.schema[c].is_categorical and t < 0):
                raise ValidationError(
                    f"kind={kind!r}: column {c!r} is missing in record {int(recs[k])}, so its "
                    "distance to the candidates is undefined; leave such records out of the "
                    "result (attribute_risk(records=...)).",
                    code="MISSING_VALUES"
                )


def file_summary(
    result: Any, *, kind: Literal["hrw", "wang_reiter", "paiva", "largest_value"] = "hrw",
    original: pd.DataFrame | None = None, location_columns: Sequence[str] | None = None,
    locations: Mapping[Any, Sequence[float]] | None = None,
    pattern_vars: Sequence[str] | None = None, n_mc: int | None = None, delta: float = 0.05,
    interval: tuple[float, float] | None = None, thresholds: Sequence[float] = (0.5,),
    random_seed: RandomSeed = None,
) -> dict[str, Any]:
    """File-level attribute-risk summary of one kind (see :doc:`/methods/attribute`).

    Parameters
    ----------
    result : AttributeRiskResult
        Output of :func:`bayes_risk.attribute_risk`.
    kind : {"hrw", "wang_reiter", "paiva", "largest_value"}
        Hu, Reiter & Wang (2014) (as ``result.to_dict()``); Wang & Reiter (2012) R1 and R2;
        Paiva et al. (2014) (provisional); Wei & Reiter (2016) largest value (provisional).
    original : DataFrame
        The confidential data (for R2 and the unique patterns of ``"paiva"``).
    location_columns : sequence of str
        Two numeric coordinate columns, or one areal column with ``locations``.
    locations : mapping, optional
        Centroid ``(x, y)`` of every level of an areal ``location_columns`` column.
    pattern_vars : sequence of str, optional
        Columns defining a record's pattern for ``"paiva"`` (default: the unsynthesized columns).
    n_mc : int, optional
        ``"wang_reiter"``: as in :func:`~bayes_risk.attribute.summaries.wang_reiter`.
    delta, interval
        Interval of ``"largest_value"``: ``[y(1−δ), y(1+δ)]`` or an explicit ``(lo, hi)``.
    thresholds : sequence of float
        ``"hrw"``: as in :meth:`~bayes_risk.attribute.AttributeRiskResult.to_dict`.
    random_seed : RandomSeed
        Seed of the Monte Carlo R1 (one independent stream per record).

    Returns
    -------
    dict
        ``kind``, ``n_records``, ``n_flagged``, ``flagged_records``, ``per_record`` and the
        figures for ``"unflagged"`` and ``"all"`` records (and ``mc_uncertainty``, see
        :func:`~bayes_risk.attribute.uncertainty.wang_reiter_uncertainty`).

    Raises
    ------
    ValidationError
        A ``result`` that is not an attribute-risk result, an unknown kind, bad location columns,
        or a missing ``original`` where it is needed.
    """
    check_value(kind, Options(tuple(KINDS)), "kind of file_summary")
    if not isinstance(getattr(result, "records", None), pd.DataFrame):
        raise ValidationError(
            "result of file_summary must be the output of attribute_risk (an "
            f"AttributeRiskResult). Got {type(result).__name__}."
        )
    flagged = result.records["flag_codes"].fillna("").astype(str).to_numpy() != ""
    recs = result.records.index.to_numpy()
    base: dict[str, Any] = {
        "kind": kind,
        "n_records": int(len(recs)),
        "n_flagged": int(flagged.sum()),
        "flagged_records": [int(r) for r in recs[flagged]],
    }
    if kind == "hrw":
        return {**base, **result.to_dict(thresholds=thresholds)}

    if kind in _NEEDS_ORIGINAL:
        cols = check_location_columns(result, location_columns, locations)
        _refuse_missing_truth(result, cols, kind)
        if original is None:
            raise ValidationError(f"kind={kind!r} needs original= ({_NEEDS_ORIGINAL[kind]}).")
    if kind == "wang_reiter":
        all_xy = location_xy(original, cols, locations)
        gens = spawn(random_seed, len(recs)) if n_mc is not None else [None] * len(recs)
        rows = []
        for k, rec, cand, post, g0 in record_posteriors(result):
            cxy = location_xy(cand, cols, locations)
            others = np.delete(all_xy, rec, axis=0)
            r = wang_reiter(post, cxy, cxy[g0], others, n_mc=n_mc, random_seed=gens[k])
            rows.append({"record": rec, "R1": r["R1"], "R2": r["R2"], "flagged": bool(flagged[k])})
        per = pd.DataFrame(rows).set_index("record")
        ok = ~per["flagged"].to_numpy()
        out = {**base, "per_record": per, "all": wang_reiter_file(per["R1"], per["R2"])}
        out["unflagged"] = wang_reiter_file(per["R1"][ok], per["R2"][ok]) if ok.any() else None
        if getattr(result, "_boot_loglik", None):
            out["mc_uncertainty"] = wang_reiter_uncertainty(
                result, original=original, location_columns=cols, locations=locations)
        return out

    if kind == "paiva":
        if pattern_vars is None:
            pattern_vars = list(result.schema.unsynthesized)
            if not pattern_vars:
                raise ValidationError(
                    "kind='paiva': every column is synthesized, so the default pattern (the "
                    "unsynthesized columns) is empty; give pattern_vars=[...]."
                )
        missing = [c for c in pattern_vars if c not in original.columns]
        if missing:
            raise ValidationError(f"pattern_vars {missing} are not columns of original.",
                                  code="UNKNOWN_COLUMN")
        counts = original.groupby(list(pattern_vars), observed=True, dropna=False)[
            list(pattern_vars)[0]
        ].transform("size")
        unique_all = counts.to_numpy() == 1
        posts, g0s, cls, uniq = [], [], [], []
        for _, rec, cand, post, g0 in record_posteriors(result):
            posts.append(post)
            g0s.append(g0)
            cls.append(location_xy(cand, cols, locations))
            uniq.append(bool(unique_all[rec]))
        uniq_a = np.asarray(uniq)
        full = paiva_measures(posts, g0s, cls, uniq_a)
        per = pd.DataFrame({"record": recs, "dist_map": full.pop("dist_map"),
                            "unique_pattern": uniq_a, "flagged": flagged}).set_index("record")
        ok = ~flagged
        unfl = None
        if ok.any():
            sel = np.flatnonzero(ok)
            unfl = paiva_measures(
                [posts[i] for i in sel], [g0s[i] for i in sel], [cls[i] for i in sel], uniq_a[sel]
            )
            unfl.pop("dist_map")
        return {**base, "per_record": per, "all": full, "unflagged": unfl}

    # largest_value
    if len(result.columns) != 1 or result.schema[result.columns[0]].is_categorical:
        raise ValidationError(
            "kind='largest_value' needs a result for one numeric column (the magnitude variable); "
            f"this result guesses {list(result.columns)}."
        )
    col = result.columns[0]
    _refuse_missing_truth(result, [col], kind)
    rows = []
    for k, rec, cand, post, g0 in record_posteriors(result):
        values = cand[col].to_numpy(dtype=np.float64)
        lv = largest_value(post, values, float(values[g0]), delta=delta, interval=interval)
        rows.append({"record": rec, "truth": float(values[g0]), **lv, "flagged": bool(flagged[k])})
    per = pd.DataFrame(rows).set_index("record")
    top_record = per["truth"].idxmax()
    top = {"record": int(top_record), **per.loc[top_record].to_dict()}
    return {**base, "per_record": per, "largest": top}
