"""Stage 1 of :func:`bayes_risk.membership.membership_risk`: the original, the synthetic datasets
and the holdout as checked tables of the model's columns, the options and the prior."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, check_params, check_value
from bayes_risk._specs import argument_checks
from bayes_risk.data.normalise import as_synthetic_list, record_positions
from bayes_risk.data.validate import (
    check_value_labels,
    refuse_unknown_levels,
    require_columns,
    require_frame,
    validate_table,
)
from bayes_risk.exceptions import ValidationError, arg_name
from bayes_risk.membership.plan import ROWS_PER_DRAW

__all__ = ["prepare", "prior_probability", "check_options", "check_drawable"]


def prepare(model: Any, original: Any, synthetic: Any, holdout: Any, records: Any,
            ) -> tuple[pd.DataFrame, list[pd.DataFrame], pd.DataFrame | None, np.ndarray]:
    """The tables checked against the model's schema, and the members' row positions."""
    schema = model.schema_
    cols = list(schema.names)
    orig = _table(original, cols, "original")
    n = len(orig)
    n_fit = getattr(model, "n_records", None)
    if isinstance(n_fit, (int, np.integer)) and int(n_fit) != n:
        raise ValidationError(
            f"original has {n} rows but the model was fitted to {int(n_fit)}; give the table the "
            "model was fitted to.", code="ORIGINAL_DIFFERS")
    datasets = [_table(z, cols, f"synthetic dataset {l}") for l, z in enumerate(
        as_synthetic_list(synthetic, original=original).datasets, start=1)]
    for l, z in enumerate(datasets, start=1):
        _check_levels(z, schema, f"synthetic dataset {l}")
    hold = None if holdout is None else _table(holdout, cols, "holdout")
    if hold is not None:
        check_value_labels(original, {"holdout": holdout})
        # checked on its own so that an error numbers the holdout's rows, not the row after the
        # members that it has in the table of targets; missing values are the model's to judge
        validate_table(hold, schema, name="holdout", allow_nan=True, check_levels=False)
        _check_levels(hold, schema, "holdout")
    return orig, datasets, hold, record_positions(records, n)


def _table(df: Any, cols: list[str], argument: str) -> pd.DataFrame:
    """``df`` restricted to the model's columns (an error naming what is missing)."""
    require_columns(require_frame(df, argument), cols, argument)
    return df[cols].reset_index(drop=True)


def _check_levels(df: pd.DataFrame, schema: Any, argument: str) -> None:
    """A value the model was never fitted with has probability 0 under every draw."""
    refuse_unknown_levels(
        df, {s.name: s.levels for s in schema if s.is_categorical and s.levels is not None},
        argument, absent_from="the data the model was fitted to",
        consequence="its likelihood is 0 under the model, so its membership ratio is undefined",
        remedy="Drop such rows or refit with the level declared.")


def prior_probability(prior: float | str, n: int, population_size: int | None) -> float:
    """The prior membership probability of ``AttackSpec``'s ``prior`` (the spec checked
    the value, and that ``"sampling"`` has its ``population_size``); what is left is its
    relation to the data: ``N`` at least the ``n`` confidential records."""
    if prior == "balanced":
        return 0.5
    if prior == "sampling":
        # at least the n confidential records
        check_value(population_size, Interval(int, n), "population_size")
        return n / float(population_size)  # type: ignore[arg-type]
    return float(prior)


def check_options(population: Any, bootstrap: int, model: Any = None, n: int = 0) -> None:
    """The options of ``membership_risk`` its specs do not check: ``population`` (its
    parameter's constraint), the memory of ``bootstrap`` replicates (the number checked by
    ``AttackSpec``) and the look-alikes the model can draw."""
    check_params(dict(population=population),
                 argument_checks("bayes_risk.membership.api:membership_risk"))
    from bayes_risk._memory import check_memory

    # the file summary's four arrays of replicates (bootstrap=10**9 asked for 32 GB)
    check_memory(32.0 * int(bootstrap), arg_name("bootstrap"),
                 what=f"{int(bootstrap):,} bootstrap replicates of the file summaries")
    if model is not None:
        check_drawable(model, int(population), "population", n)


def check_drawable(model: Any, k: int, argument: str, n: int) -> None:
    """Refuse ``k`` population look-alikes the model cannot draw or memory cannot hold."""
    from bayes_risk._memory import check_memory

    sets = math.ceil(k / ROWS_PER_DRAW)
    H = getattr(model, "n_draws", None)
    if H is not None and sets > int(H):
        raise ValidationError(
            f"{arg_name(argument, k)}: records of the model's posterior predictive are drawn "
            f"{ROWS_PER_DRAW} to a synthetic dataset, one dataset per posterior draw, and the "
            f"model has H = {int(H)} draws: at most {ROWS_PER_DRAW * int(H)} records. Give "
            "fewer, or fit the model with more draws.",
            code="TOO_FEW_DRAWS")
    schema = getattr(model, "schema_", None)
    width = len(schema.names) if schema is not None else 1
    check_memory(8.0 * sets * max(n, 1) * width, arg_name(argument),
                 what=f"the {sets} synthetic datasets the {k} records are drawn from")
