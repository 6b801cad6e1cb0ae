"""Persistence of the Bayesian synthesizers: saved files, posteriors read or given."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bayes_risk._lazy import lean_xarray
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.base import damaged_on_error

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr


POSTERIOR_FILE = "posterior.nc"
#: convergence record of a saved model (R-hat / ESS of the diagnosed quantities, warnings)
CONVERGENCE_FILE = "convergence.json"
DATA_FILE = "data.parquet"
FORMAT_VERSION = 1


def warm_up_writer() -> None:
    """Write a one-value DataTree to memory: the one-off costs of xarray's first NetCDF write,
    paid while the sampler runs (``bayes_risk._lazy.overlap``)."""
    import io

    xr = lean_xarray()  # not dask's import with it (issue 69)
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"x": ("draw", np.zeros(1))})})
    tree.to_netcdf(io.BytesIO(), engine="h5netcdf")


def read_posterior(p: Path) -> xr.DataTree:
    """The posterior DataTree of the saved model folder ``p`` (a damaged file named)."""
    xr = lean_xarray()  # not dask's import with it (issue 69)

    with damaged_on_error(p, f"{POSTERIOR_FILE} cannot be read"), \
            xr.open_datatree(p / POSTERIOR_FILE, engine="h5netcdf") as dt:
        return dt.load().copy()


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
