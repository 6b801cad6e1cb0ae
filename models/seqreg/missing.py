"""Missing values (empty cells) in :class:`~bayes_risk.models.SequentialRegression`. See
:doc:`/methods/models` (Sequential Bayesian regressions: missing values).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ValidationError

__all__ = ["missing_cells", "padded_columns", "check_missing", "check_indicators",
           "refuse_codes"]


def missing_cells(schema: Schema, values: Mapping[str, np.ndarray], column: str) -> np.ndarray:
    """``[n]`` bool: the empty cells of ``column`` (code ``-1`` or ``NaN``)."""
    v = values[column]
    return v < 0 if schema[column].is_categorical else np.isnan(v)


def padded_columns(schema: Schema, values: Mapping[str, np.ndarray]) -> list[str]:
    """The unsynthesized columns with a missing value: predictors the designs pad."""
    return [c for c in schema.unsynthesized if missing_cells(schema, values, c).any()]


def refuse_codes(schema: Schema, values: Mapping[str, np.ndarray]) -> None:
    """Refuse declared missing-value codes present in ``values``: a regression would model them
    as numbers."""
    for spec in schema:
        codes = list(spec.missing_codes)  # declared for numeric columns only
        hit = np.isin(values[spec.name], codes)
        if hit.any():
            raise ValidationError(
                f"data: column {spec.name!r} holds its declared missing-value code(s) {codes} in "
                f"{int(hit.sum())} record(s); the regressions would model them as numbers. "
                "Make them empty cells (e.g. data[col].replace(codes, np.nan)) or leave the "
                "column out.", code="MISSING_VALUES")


def check_indicators(schema: Schema, column: str, predictors: Sequence[str],
                     values: Mapping[str, np.ndarray], observed: np.ndarray) -> None:
    """Refuse a flat-prior (``exact``) fit of ``column`` when a padded predictor is missing only
    where ``column`` is: its indicator's coefficient has no data and the posterior is improper."""
    for p in predictors:
        if not missing_cells(schema, values, p)[observed].any():
            raise ValidationError(
                f"predictor {p!r} of {column!r} is missing only in records where {column!r} is "
                f"missing too: the coefficient of '{p}[missing]' has no data, and the flat-prior "
                f"('exact') posterior is improper. Use posterior_method 'nuts' for {column!r} (its "
                f"prior identifies it), or leave {p!r} out of its predictors.",
                code="RANK_DEFICIENT")


def check_missing(schema: Schema, predictors: Mapping[str, Sequence[str]],
                  padded: Sequence[str], values: Mapping[str, np.ndarray], name: str) -> None:
    """Refuse the missing values of ``values`` (the table ``name``) that no regression can take,
    naming the column."""
    for c, preds in predictors.items():
        for p in preds:
            miss = missing_cells(schema, values, p)
            if not miss.any():
                continue
            where = (f"{name}: column {p!r} has {int(miss.sum())} missing value(s) (first at "
                     f"row {int(np.flatnonzero(miss)[0])}) and is a predictor of {c!r}")
            if p in schema.synthesized:
                raise ValidationError(
                    where + "; a missing synthesized value that predicts a later column would "
                    "couple the two regressions (its imputation needs both, a data-augmentation "
                    f"sampler that SequentialRegression does not have). Put {p!r} after "
                    f"{c!r} in order, or leave it out of the predictors of {c!r}.",
                    code="MISSING_VALUES")
            if p not in padded:
                raise ValidationError(
                    where + "; the model was fitted without missing values in this column, so "
                    "its regressions have no term for a missing value.",
                    code="MISSING_VALUES")
