"""Persistence of the Bayesian synthesizers: the files of a saved model, reading its posterior
and the fitted state restored from a folder or from draws made elsewhere (``from_posterior``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.base import damaged_folder

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


def read_posterior(p: Path) -> xr.DataTree:
    """The posterior DataTree of the saved model folder ``p`` (a damaged file named)."""
    import xarray as xr

    try:
        with xr.open_datatree(p / POSTERIOR_FILE, engine="h5netcdf") as dt:
            return dt.load().copy()
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as err:
        raise damaged_folder(p, f"{POSTERIOR_FILE} cannot be read ({type(err).__name__}: "
                                f"{' '.join(str(err).split())[:200]})") from err


class PersistenceMixin:
    """The fitted state of :class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer` as saved,
    restored and identified."""

    @classmethod
    def _restore(cls, p: Path, meta: dict[str, Any], posterior: Any) -> Any:
        """A new fitted model from the parsed ``model.json`` and posterior of folder ``p``."""
        # JSON has no tuples: sequence settings come back as tuples (as the defaults are)
        settings = {
            k: tuple(v) if isinstance(v, list) else v for k, v in meta.get("settings", {}).items()
        }
        return cls(**settings)._restore_fitted(p, meta, posterior)

    def _restore_fitted(self, p: Path, meta: dict[str, Any], posterior: Any) -> Any:
        data = None
        if meta.get("data_file"):
            data = pd.read_parquet(p / meta["data_file"])
        flags = None
        if meta.get("synthesized_records") is not None:
            flags = np.zeros(int(meta["n_records"]), dtype=bool)
            flags[np.asarray(meta["synthesized_records"], dtype=np.int64)] = True
        schema = Schema.from_dict(meta["schema"])
        self._state_from_json(meta.get("state") or {})
        self._validate_posterior(posterior, schema)
        self._set_fitted(posterior, schema, int(meta["n_records"]), data=data,
                         synthesized_records=flags, check_convergence=False)
        self.data_ = data
        return self

    def _adopt_posterior(self, posterior: Any, schema: Schema, n_records: int | None,
                         data: pd.DataFrame | None, synthesized_records: Any) -> Any:
        """The work of ``from_posterior`` on a new instance."""
        if not isinstance(schema, Schema):
            raise ValidationError(f"schema must be a Schema. Got {type(schema).__name__}.")
        if not schema.synthesized:  # no roles given: full synthesis, as in fit
            schema = schema.with_roles(schema.names)
        dt = self._as_datatree(posterior)
        if data is not None:
            data, _ = self._prepare_data(data, schema=schema, allow_nan=True, fitting=False)
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
        self._validate_posterior(dt, schema)
        if self._needs_data_for_synthesis_given(schema) and data is None:
            raise ValidationError(
                "this model's synthesis mode needs the confidential data: pass data=..."
            )
        self._set_fitted(dt, schema, n_records, data=data,
                         synthesized_records=synthesized_records)
        self.data_ = data if self._needs_data_for_synthesis() else None
        return self

    def _identity(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What :func:`bayes_risk.data.provenance.model_id` hashes: method, settings, schema,
        records, the fitted table's fingerprint, the state and the posterior draws."""
        from bayes_risk.data.provenance import identity_settings

        self._check_fitted()
        flags = self.synthesized_records_
        post = self.posterior_["posterior"]
        parts = {
            "method": self.method_name, "class": type(self).__name__,
            # as its releases record them (DPMPM: the table of structural zeros, not its path)
            "settings": identity_settings(self._json_settings()),
            "schema": self.schema_.to_dict(), "n_records": int(self._n_records),
            "synthesized_records": None if flags is None else
            [int(i) for i in np.flatnonzero(flags)],
            "state": to_jsonable(self._state_to_json()),
            "data": getattr(self, "data_fingerprint_", None),
        }
        return parts, {str(k): np.asarray(post[k].values) for k in post.data_vars}

    def _json_settings(self) -> dict[str, Any]:
        return to_jsonable(self._release_settings())

    def _state_to_json(self) -> dict[str, Any]:
        """Extra fitted state written to ``model.json`` (JSON-serialisable; none here)."""
        return {}

    def _state_from_json(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`_state_to_json` wrote (nothing here)."""

    def _needs_data_for_synthesis_given(self, schema: Schema) -> bool:
        """``_needs_data_for_synthesis`` before ``schema_`` is set."""
        missing = object()
        old = self.__dict__.get("schema_", missing)
        self.schema_ = schema
        try:
            return self._needs_data_for_synthesis()
        finally:
            if old is missing:  # not fitted: no fitted attribute is left behind
                del self.schema_
            else:
                self.schema_ = old

    def _event_ndims(self) -> dict[str, int]:
        """Number of non-sample dimensions of each posterior variable (for dict input)."""
        return {}

    def _as_datatree(self, posterior: Any) -> xr.DataTree:
        return as_datatree(posterior, self._event_ndims(), type(self).__name__)


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
