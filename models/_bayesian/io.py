"""Persistence of a :class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer`: save, load.

A fitted model is saved as a folder (NetCDF posterior, JSON settings and state, Parquet data when
synthesis needs it; never pickle), loaded back, checked against a table by fingerprint, or built
from posterior draws made elsewhere (``from_posterior``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayes_risk._io import atomic_dir, to_jsonable, write_json
from bayes_risk.data.fingerprint import fingerprint_problem
from bayes_risk.data.provenance import model_id
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.base import (
    SETTINGS_FILE,
    damaged_folder,
    read_model_meta,
    verify_model_folder,
    write_model_json,
)

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr


POSTERIOR_FILE = "posterior.nc"
#: convergence record of a saved model (R-hat / ESS of the diagnosed quantities, warnings)
CONVERGENCE_FILE = "convergence.json"
DATA_FILE = "data.parquet"
FORMAT_VERSION = 1


def _check_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < minimum:
        raise ValidationError(f"{name} must be an integer >= {minimum}. Got {value!r}.")
    return int(value)



def warm_up_writer() -> None:
    """Write a one-value DataTree to memory as ``save`` writes a posterior: imports h5netcdf and
    h5py and does once what xarray does on its first NetCDF write (plugin discovery; with dask
    installed, importing ``dask.distributed`` to look for a scheduler, ≈ 0.2 s). ``bayes-risk
    fit`` runs it while the sampler runs (``bayes_risk._lazy.overlap``)."""
    import io

    import xarray as xr

    tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"x": ("draw", np.zeros(1))})})
    tree.to_netcdf(io.BytesIO(), engine="h5netcdf")


def save(model, path: str | os.PathLike[str]) -> Path:
    """The work of :meth:`BayesianSynthesizer.save` (documented there)."""
    model._check_fitted()
    meta = {
        "format": "bayes-risk model",
        "format_version": FORMAT_VERSION,
        "method": model.method_name,
        "class": type(model).__name__,
        "settings": model._json_settings(),
        "schema": model.schema_.to_dict(),
        "n_records": int(model._n_records),
        "n_draws": model.n_draws,
        "draw_order": "chain-major: h = chain * draws_per_chain + draw",
        "synthesized_records": None
        if model.synthesized_records_ is None
        else [int(i) for i in np.flatnonzero(model.synthesized_records_)],
        "data_file": DATA_FILE if model.data_ is not None else None,
        "confidential": model.data_ is not None,
        "state": to_jsonable(model._state_to_json()),
        # a hash of the encoded fitted table (never the data): checks the original later
        "data_fingerprint": getattr(model, "data_fingerprint_", None),
        "imputed_columns": getattr(model, "imputed_columns_", None),
        "data_column_fingerprints": (getattr(model, "original_fingerprint_", None)
                                     or {}).get("columns"),
        # the identity its releases record (bayes_risk.data.provenance.model_id)
        "model_id": model_id(model),
    }
    from bayes_risk.models._bayesian.convergence import label_invariant

    label_invariant(model)  # the diagnosed quantities travel with the draws (ArviZ reads them)
    with atomic_dir(path) as tmp:
        model.posterior_.to_netcdf(tmp / POSTERIOR_FILE, engine="h5netcdf")
        if model.data_ is not None:
            model.data_.to_parquet(tmp / DATA_FILE, index=False)
        write_json(tmp / CONVERGENCE_FILE, model.convergence_summary())
        write_model_json(tmp, meta)  # last: the checksums of the files above
    return Path(path)


def load(cls, path: str | os.PathLike[str]) -> Any:
    """The work of :meth:`BayesianSynthesizer.load` (documented there)."""
    import xarray as xr

    p, meta = read_model_meta(path)
    if meta.get("method") != cls.method_name:
        raise ValidationError(
            f"{p} holds a {meta.get('method')!r} model, not {cls.method_name!r}; use "
            "bayes_risk.models.load_model(path).",
            code="MODEL_UNSUITED"
        )
    if int(meta.get("format_version", 0)) > FORMAT_VERSION:
        raise ValidationError(
            f"{p} was written by a newer bayes-risk (format version "
            f"{meta.get('format_version')}); upgrade bayes-risk to read it.",
            code="MODEL_FORMAT_VERSION"
        )
    required = [POSTERIOR_FILE] + ([meta["data_file"]] if isinstance(meta.get("data_file"), str)
                                   else [])
    verify_model_folder(p, meta, required=required)
    post_file = p / POSTERIOR_FILE
    try:
        with xr.open_datatree(post_file, engine="h5netcdf") as dt:
            posterior = dt.load().copy()
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as err:
        raise damaged_folder(p, f"{POSTERIOR_FILE} cannot be read ({type(err).__name__}: "
                                f"{' '.join(str(err).split())[:200]})") from err
    try:
        obj, schema = _restore(cls, p, meta, posterior)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, OSError) as err:
        if isinstance(err, ValidationError) and err.code_given:
            raise
        # a folder without checksums (an older bayes-risk) whose model.json was edited
        raise damaged_folder(p, f"{SETTINGS_FILE} does not describe a fitted {cls.__name__} "
                                f"({type(err).__name__}: {' '.join(str(err).split())[:200]})"
                             ) from err
    imputed = meta.get("imputed_columns")
    if isinstance(imputed, list):  # a model saved before it was recorded keeps its own
        obj.imputed_columns_ = [str(c) for c in imputed if c in schema.names]
    obj.data_fingerprint_ = meta.get("data_fingerprint")
    obj.original_fingerprint_ = None if obj.data_fingerprint_ is None else {
        "table": obj.data_fingerprint_, "columns": meta.get("data_column_fingerprints")}
    return obj


def _restore(cls, p: Path, meta: dict[str, Any], posterior: Any) -> tuple[Any, Schema]:
    """A new fitted ``cls`` from the parsed ``model.json`` and posterior of a folder."""
    # JSON has no tuples: sequence settings come back as tuples (as the defaults are)
    settings = {
        k: tuple(v) if isinstance(v, list) else v for k, v in meta.get("settings", {}).items()
    }
    obj = cls(**settings)
    data = None
    if meta.get("data_file"):
        data = pd.read_parquet(p / meta["data_file"])
    flags = None
    if meta.get("synthesized_records") is not None:
        flags = np.zeros(int(meta["n_records"]), dtype=bool)
        flags[np.asarray(meta["synthesized_records"], dtype=np.int64)] = True
    schema = Schema.from_dict(meta["schema"])
    obj._state_from_json(meta.get("state") or {})
    obj._validate_posterior(posterior, schema)
    obj._set_fitted(
        posterior,
        schema,
        int(meta["n_records"]),
        data=data,
        synthesized_records=flags,
        check_convergence=False,
    )
    obj.data_ = data
    return obj, schema


def identity(model) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The work of :meth:`BayesianSynthesizer._identity` (documented there)."""
    from bayes_risk.data.provenance import identity_settings

    model._check_fitted()
    flags = model.synthesized_records_
    post = model.posterior_["posterior"]
    parts = {
        "method": model.method_name, "class": type(model).__name__,
        # as its releases record them (DPMPM: the table of structural zeros, not its path)
        "settings": identity_settings(model._json_settings()),
        "schema": model.schema_.to_dict(), "n_records": int(model._n_records),
        "synthesized_records": None if flags is None else
        [int(i) for i in np.flatnonzero(flags)],
        "state": to_jsonable(model._state_to_json()),
        "data": getattr(model, "data_fingerprint_", None),
    }
    return parts, {str(k): np.asarray(post[k].values) for k in post.data_vars}


def check_fingerprint(model, data: pd.DataFrame) -> str | None:
    """The work of :meth:`BayesianSynthesizer.check_fingerprint` (documented there)."""
    model._check_fitted()
    record = getattr(model, "original_fingerprint_", None) or {}
    return fingerprint_problem(data, getattr(model, "data_fingerprint_", None), model.schema_,
                               model._n_records, record.get("columns"))


def from_posterior(cls, posterior: Any, schema: Schema, n_records: int | None,
                   data: pd.DataFrame | None, synthesized_records: Any,
                   settings: Mapping[str, Any]) -> Any:
    """The work of :meth:`BayesianSynthesizer.from_posterior` (documented there)."""
    obj = cls(**settings)
    if not isinstance(schema, Schema):
        raise ValidationError(f"schema must be a Schema. Got {type(schema).__name__}.")
    if not schema.synthesized:  # no roles given: full synthesis, as in fit
        schema = schema.with_roles(schema.names)
    dt = obj._as_datatree(posterior)
    if data is not None:
        data, _ = obj._prepare_data(data, schema=schema, allow_nan=True, fitting=False)
    if n_records is None:
        if data is None:
            raise ValidationError(
                "from_posterior needs n_records or data (the number of "
                "records per synthetic dataset)."
            )
        n_records = len(data)
    n_records = _check_int(n_records, "n_records", 1)
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
    obj._validate_posterior(dt, schema)
    if obj._needs_data_for_synthesis_given(schema) and data is None:
        raise ValidationError(
            "this model's synthesis mode needs the confidential data: pass data=..."
        )
    obj._set_fitted(dt, schema, n_records, data=data, synthesized_records=synthesized_records)
    obj.data_ = data if obj._needs_data_for_synthesis() else None
    return obj


def needs_data_for_synthesis_given(model, schema: Schema) -> bool:
    """Like :meth:`_needs_data_for_synthesis` before ``schema_`` is set."""
    missing = object()
    old = model.__dict__.get("schema_", missing)
    model.schema_ = schema
    try:
        return model._needs_data_for_synthesis()
    finally:
        if old is missing:  # not fitted: no fitted attribute is left behind
            del model.schema_
        else:
            model.schema_ = old


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
