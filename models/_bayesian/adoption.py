"""Adoption: a Bayesian synthesizer fitted to posterior draws made elsewhere (Stan, brms, R,
another PyMC run), checked as the model's own (:meth:`BayesianSynthesizer.from_posterior`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from bayes_risk._specs import check_int
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ValidationError
from bayes_risk.models._bayesian.posterior import as_datatree

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["from_posterior"]


def from_posterior(cls: type, posterior: Any, schema: Schema, *, n_records: int | None,
                   data: pd.DataFrame | None, synthesized_records: np.ndarray | None,
                   settings: Mapping[str, Any]) -> Any:
    """A new fitted ``cls`` (with ``settings``) adopting ``posterior``: the work of
    :meth:`BayesianSynthesizer.from_posterior`, whose parameters these are."""
    model = cls(**settings)
    if not isinstance(schema, Schema):
        raise ValidationError(f"schema must be a Schema. Got {type(schema).__name__}.")
    if not schema.synthesized:  # no roles given: full synthesis, as in fit
        schema = schema.with_roles(schema.names)
    dt = as_datatree(posterior, lambda: model._declared_variables(schema), cls.__name__)
    if data is not None:
        data, _ = model._prepare_data(data, schema=schema, allow_nan=True, fitting=False)
    if n_records is None:
        if data is None:
            raise ValidationError(
                "from_posterior needs n_records or data (the number of "
                "records per synthetic dataset)."
            )
        n_records = len(data)
    n_records = check_int(n_records, "n_records", 1)
    if synthesized_records is not None:
        synthesized_records = np.asarray(synthesized_records, dtype=bool)
        if synthesized_records.shape != (n_records,):
            raise ValidationError(
                f"synthesized_records must have one flag per record ({n_records})."
            )
        if data is None:
            # the records that are not synthesized are released unchanged: copied from data
            raise ValidationError(
                "synthesized_records (partial synthesis of selected records) needs the "
                "confidential data: pass data=..."
            )
    return model.adopt(dt, schema, n_records, data=data, flags=synthesized_records)
