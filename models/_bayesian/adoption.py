"""Adoption: a Bayesian synthesizer fitted to posterior draws made elsewhere (Stan, brms, R,
another PyMC run), checked as the model's own (:meth:`BayesianSynthesizer.from_posterior`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from bayes_risk._specs import check_int
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ValidationError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import xarray as xr

__all__ = ["as_datatree", "from_posterior"]


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
    dt = model._as_datatree(posterior, schema)
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


def as_datatree(posterior: Any, ev: Mapping[str, int], model_name: str) -> xr.DataTree:
    """``posterior`` (a DataTree, or a mapping of arrays whose variables have the parameter
    dimensions ``ev``) as a posterior DataTree of model class ``model_name`` (for messages)."""
    import xarray as xr

    if isinstance(posterior, xr.DataTree):
        if "posterior" not in posterior.children:
            raise ValidationError("the posterior DataTree has no 'posterior' group.",
                                  code="POSTERIOR_INVALID")
        post = posterior["posterior"]
        for d in ("chain", "draw"):
            if d not in post.dims:
                raise ValidationError(f"the posterior group has no {d!r} dimension.",
                                      code="POSTERIOR_INVALID")
        return posterior.copy()
    if not isinstance(posterior, Mapping):
        raise ValidationError(
            "posterior must be an xarray.DataTree or a mapping of variable name to array. "
            f"Got {type(posterior).__name__}."
        )
    arrays: dict[str, np.ndarray] = {}
    for name, val in posterior.items():
        a = np.asarray(val, dtype=np.float64)
        if name not in ev:
            raise ValidationError(
                f"posterior variable {name!r} is not a parameter of {model_name}; "
                f"expected some of {sorted(ev)}.",
                code="POSTERIOR_INVALID"
            )
        if a.ndim == ev[name] + 1:
            a = a[None, ...]
        elif a.ndim != ev[name] + 2:
            raise ValidationError(
                f"posterior variable {name!r} must have shape (chain, draw, ...) or "
                "(draw, ...) "
                f"with {ev[name]} parameter dimension(s). Got shape {a.shape}.",
                code="POSTERIOR_INVALID"
            )
        arrays[name] = a
    shapes = {a.shape[:2] for a in arrays.values()}
    if len(shapes) != 1:
        raise ValidationError(
            f"posterior variables disagree on (chain, draw): {sorted(shapes)}.",
            code="POSTERIOR_INVALID"
        )
    ds = xr.Dataset(
        {
            k: (["chain", "draw", *[f"{k}_dim_{i}" for i in range(v.ndim - 2)]], v)
            for k, v in arrays.items()
        }
    )
    ds = ds.assign_coords(chain=np.arange(ds.sizes["chain"]), draw=np.arange(ds.sizes["draw"]))
    return xr.DataTree.from_dict({"posterior": ds})
