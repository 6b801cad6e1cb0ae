"""The posterior of a Bayesian family, declared once: its variables as class data
(``BayesianSynthesizer.posterior_variables``: name, dims after ``(chain, draw)``, constraint, as
PyMC and ArviZ name them), the dims' sizes given by the fitted model (``_posterior_dims``;
``level_{j}`` and ``cell`` by its schema, ``schema_dims``), one converter of draws given as
arrays and one validator of every posterior a model adopts (``load``, ``from_posterior``): a
family writes no check of its own draws.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import logsumexp

from bayes_risk._constraints import InstanceOf, check_value
from bayes_risk.exceptions import ValidationError
from bayes_risk.models._bayesian.sticks import stick_breaking_log

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

    from bayes_risk.data.schema import Schema

__all__ = ["PosteriorDims", "PosteriorVariable", "as_datatree", "check_posterior", "concrete",
           "schema_dims"]

SAMPLE_DIMS = ("chain", "draw")
#: each constraint: what it asks of a variable's values (all finite, but a ``fill`` of nan), in
#: the errors' words, and its test given the values and the sizes of the dims
CONSTRAINTS: dict[str, tuple[str, Callable[[np.ndarray, Mapping[str, int]], Any]]] = {
    "real": ("finite values", lambda x, n: True),
    "positive": ("finite values > 0", lambda x, n: np.all(x > 0)),
    "nonnegative": ("finite values >= 0", lambda x, n: np.all(x >= 0)),
    "unit_interval": ("values in [0, 1]", lambda x, n: np.all((x >= 0) & (x <= 1))),
    "simplex": ("probabilities >= 0 summing to 1 over its last dimension",
                lambda x, n: np.all(x >= 0) and np.allclose(x.sum(-1), 1.0, atol=1e-6)),
    "log_simplex": ("log-probabilities whose probabilities sum to 1 over its last dimension",
                    lambda x, n: np.allclose(logsumexp(x, axis=-1), 0.0, atol=1e-9)),
    "label": ("class labels 0..K-1 (K: the size of 'component')",
              lambda x, n: np.all((x == np.floor(x)) & (x >= 0) & (x < n["component"]))),
}


@dataclasses.dataclass(frozen=True)
class PosteriorVariable:
    """One variable of a family's posterior.

    ``name`` and ``dims`` (after ``(chain, draw)``) may hold ``{column}`` and ``{j}``: one
    variable per column of :attr:`PosteriorDims.columns` whose kind is in ``kinds`` (all if
    ``None``). ``constraint`` is a key of ``CONSTRAINTS``. A variable not ``required`` may be
    absent; ``sticks`` makes an absent simplex from the stick proportions of that variable;
    ``fill`` is the value of an absent one (``nan``: not drawn).
    """

    name: str
    dims: tuple[str, ...] = ()
    constraint: str = "real"
    required: bool = True
    kinds: tuple[str, ...] | None = None
    sticks: str | None = None
    fill: float | None = None
    group: str = "posterior"

    def expand(self, columns: Mapping[str, str]) -> list[tuple[PosteriorVariable, str | None]]:
        """The variable, or one per column of the kinds it has (with the column)."""
        if "{" not in self.name:
            return [(self, None)]
        return [(dataclasses.replace(self, name=self.name.format(column=c, j=j), kinds=None,
                                     dims=tuple(d.format(column=c, j=j) for d in self.dims)), c)
                for j, (c, kind) in enumerate(columns.items())
                if self.kinds is None or kind in self.kinds]


@dataclasses.dataclass(frozen=True)
class PosteriorDims:
    """The sizes of a fitted model's posterior dims: ``sizes`` (an int, or the coordinate
    labels, assigned to the posterior; a dim not listed, ``component``, takes the size of the
    first variable holding it, and ``stick`` is ``component - 1``), ``columns`` (the columns of
    the per-column variables and each one's kind), ``about`` (what sets a dim's size, for the
    errors) and ``variables`` (a family whose variables are its user's model's: the PyMC
    model; ``None``: the class's ``posterior_variables``)."""

    sizes: Mapping[str, int | Sequence[Any]] = dataclasses.field(default_factory=dict)
    columns: Mapping[str, str] = dataclasses.field(default_factory=dict)
    about: Mapping[str, str] = dataclasses.field(default_factory=dict)
    variables: tuple[PosteriorVariable, ...] | None = None


def schema_dims(schema: Schema, declared: Sequence[PosteriorVariable]) -> PosteriorDims:
    """The sizes of the dims of ``declared`` that the fitted ``schema`` gives by their names:
    ``level_{j}`` (the levels of the j-th column; a per-column variable has one for each
    column) and ``cell`` (the cells of the table crossing every column)."""
    dims = {d for v in declared for d in v.dims}
    sizes: dict[str, int] = {}
    about: dict[str, str] = {}
    if "level_{j}" in dims:
        for j, c in enumerate(schema):
            sizes[f"level_{j}"] = len(c.levels)
            about[f"level_{j}"] = f"the levels of column {c.name!r}"
    if "cell" in dims:
        sizes["cell"] = math.prod(len(c.levels) for c in schema)
        about["cell"] = "the product of the columns' levels"
    return PosteriorDims(sizes=sizes, columns=dict.fromkeys(schema.names, ""), about=about)


def invalid(message: str) -> ValidationError:
    return ValidationError(message, code="POSTERIOR_INVALID")


def _label(var: PosteriorVariable, column: str | None) -> str:
    return f"posterior variable {var.name!r}" + (f" (column {column!r})" if column else "")


def _shape_text(dims: Sequence[str], sizes: Mapping[str, int]) -> str:
    return "(" + ", ".join(f"{d}={sizes[d]}" if d in sizes else d for d in dims) + ")"


def concrete(spec: PosteriorDims, declared: Sequence[PosteriorVariable]
             ) -> list[tuple[PosteriorVariable, str | None]]:
    """The variables of a posterior of dims ``spec`` (one per column of a per-column one),
    each with its column."""
    return [vc for v in (spec.variables if spec.variables is not None else declared)
            for vc in v.expand(spec.columns)]


def as_datatree(posterior: Any, variables: Callable[[], Sequence[PosteriorVariable]],
                model_name: str) -> xr.DataTree:
    """``posterior`` (a DataTree, or a mapping of arrays ``(chain, draw, ...)`` or
    ``(draw, ...)`` named as the model's concrete ``variables()``) as a posterior DataTree of
    model class ``model_name`` (for messages), each array in the dims declared for it."""
    import xarray as xr

    if isinstance(posterior, xr.DataTree):
        if "posterior" not in posterior.children:
            raise invalid("the posterior DataTree has no 'posterior' group.")
        for d in SAMPLE_DIMS:
            if d not in posterior["posterior"].dims:
                raise invalid(f"the posterior group has no {d!r} dimension.")
        return posterior.copy()
    check_value(posterior, InstanceOf(Mapping, "an xarray.DataTree or a mapping of variable "
                                               "name to array"), "posterior")
    declared = {v.name: v for v in variables() if v.group == "posterior"}
    arrays: dict[str, np.ndarray] = {}
    for name, val in posterior.items():
        if name not in declared:
            raise invalid(f"posterior variable {name!r} is not a parameter of {model_name}; "
                           f"expected some of {sorted(declared)}.")
        var = declared[name]
        a = np.asarray(val, dtype=np.float64)
        if a.ndim == len(var.dims) + 1:
            a = a[None, ...]
        elif a.ndim != len(var.dims) + 2:
            raise invalid(
                f"posterior variable {name!r} must have shape (chain, draw, ...) or (draw, ...) "
                f"with {len(var.dims)} parameter dimension(s) {var.dims}. Got shape {a.shape}.")
        arrays[name] = a
    shapes = {a.shape[:2] for a in arrays.values()}
    if len(shapes) != 1:
        raise invalid(f"posterior variables disagree on (chain, draw): {sorted(shapes)}.")
    ds = xr.Dataset({k: ((*SAMPLE_DIMS, *declared[k].dims), a) for k, a in arrays.items()})
    ds = ds.assign_coords(chain=np.arange(ds.sizes["chain"]), draw=np.arange(ds.sizes["draw"]))
    return xr.DataTree.from_dict({"posterior": ds})


def check_posterior(tree: xr.DataTree, spec: PosteriorDims,
                    declared: Sequence[PosteriorVariable], model_name: str) -> xr.DataTree:
    """Check every variable of ``tree`` that the model declares (``spec.variables`` or
    ``declared``): presence, dims, sizes, values; return it with its dims named as declared,
    the variables a posterior may leave out made (``sticks``, ``fill``) and the coordinate
    labels of ``spec.sizes`` assigned.

    Raises
    ------
    ValidationError
        ``POSTERIOR_INVALID``, naming the variable and what was expected.
    """
    import xarray as xr

    variables = concrete(spec, declared)
    sizes = {d: (s if isinstance(s, int) else len(s)) for d, s in spec.sizes.items()}
    if "component" in sizes:
        sizes.setdefault("stick", sizes["component"] - 1)
    # the variables that fix a free size first, those a posterior may leave out last
    variables.sort(key=lambda vc: (not vc[0].required or vc[0].fill is not None,
                                   vc[0].sticks is not None))
    groups: dict[str, xr.Dataset] = {}
    changed: set[str] = set()
    sample = tuple(tree["posterior"].sizes[d] for d in SAMPLE_DIMS)
    made: list[tuple[PosteriorVariable, str | None]] = []
    for var, column in variables:
        if var.group not in groups:
            if var.group not in tree.children:
                if var.required:
                    raise invalid(f"the posterior has no group {var.group!r}, which holds "
                                   f"{_label(var, column)}.")
                continue
            groups[var.group] = tree[var.group].to_dataset()
        ds = groups[var.group]
        if var.name not in ds.data_vars:
            if var.sticks is not None or var.fill is not None:
                made.append((var, column))
                continue
            if var.required:
                raise invalid(f"the {model_name} posterior needs {_label(var, column)} with dims "
                               f"{_shape_text((*SAMPLE_DIMS, *var.dims), sizes)}; it holds "
                               f"{sorted(map(str, ds.data_vars))}.")
            continue
        checked = _check_variable(ds, var, column, sizes, sample, spec.about)
        if checked is not ds:
            groups[var.group] = checked
            changed.add(var.group)
    for var, column in made:
        ds = groups[var.group]
        if var.sticks is not None:
            weights = _from_sticks(ds, var, column, sizes, sample)
            ds = ds.assign({var.name: ((*SAMPLE_DIMS, *var.dims), weights)})
            ds = _check_variable(ds, var, column, sizes, sample, spec.about)
        else:
            ds = ds.assign({var.name: ((*SAMPLE_DIMS, *var.dims), np.full(sample, var.fill))})
        groups[var.group] = ds
        changed.add(var.group)
    labels = {d: list(s) for d, s in spec.sizes.items() if not isinstance(s, int)}
    for name, ds in groups.items():
        here = {d: v for d, v in labels.items() if d in ds.dims}
        if here:
            ds = ds.assign_coords(here)
        if here or name in changed:
            tree[name] = xr.DataTree(ds)
    return tree


def _check_variable(ds: xr.Dataset, var: PosteriorVariable, column: str | None,
                    sizes: dict[str, int], sample: tuple[int, ...], about: Mapping[str, str]
                    ) -> xr.Dataset:
    """``ds`` with ``var`` checked (the sizes it fixes recorded in ``sizes``) and its dims
    named as declared."""
    da = ds[var.name]
    want = (*SAMPLE_DIMS, *var.dims)
    what = _label(var, column)
    given = tuple(str(d) for d in da.dims)
    moved = [g for i, g in enumerate(given) if i < len(want) and g != want[i] and g in want]
    if len(given) != len(want) or moved:
        raise invalid(f"{what} must have dims {_shape_text(want, sizes)}. Got dims {given} "
                       f"of shape {tuple(da.shape)}.")
    for d, n in zip(want, da.shape, strict=True):
        expect = sample[SAMPLE_DIMS.index(d)] if d in SAMPLE_DIMS else sizes.get(d)
        if expect is None:
            sizes[d] = n
            if d == "component":  # the sticks of K components: K - 1
                sizes.setdefault("stick", n - 1)
        elif n != expect:
            hint = f" ({about[d]})" if d in about else ""
            raise invalid(f"{what} must have dims {_shape_text(want, sizes)}: {expect} along "
                           f"{d!r}{hint}. Got shape {tuple(da.shape)}.")
    values = np.asarray(da.values)
    text, test = CONSTRAINTS[var.constraint]
    x = values[~np.isnan(values)] if var.fill is not None and np.isnan(var.fill) else values
    if not (np.issubdtype(x.dtype, np.number) and np.all(np.isfinite(x)) and test(x, sizes)):
        raise invalid(f"{what} must hold {text}.")
    renamed = {g: w for g, w in zip(given, want, strict=True) if g != w}
    if renamed:  # as the model names them (draws made elsewhere, saved by an older version)
        ds = ds.assign({var.name: (want, values, da.attrs)})
    return ds


def stick_weights(sticks: np.ndarray | None, K: int, sample: tuple[int, ...]) -> np.ndarray:
    """The ``K`` weights of stick proportions ``sticks`` ``[..., K-1]`` (one weight: 1)."""
    if K == 1:
        return np.ones(sample + (1,))
    return np.exp(stick_breaking_log(np.asarray(sticks)))


def _from_sticks(ds: xr.Dataset, var: PosteriorVariable, column: str | None,
                 sizes: Mapping[str, int], sample: tuple[int, ...]) -> np.ndarray:
    """The weights ``var`` of a posterior that holds only their stick proportions."""
    K = sizes[var.dims[-1]]
    if K > 1 and var.sticks not in ds.data_vars:
        raise invalid(f"the posterior needs {_label(var, column)} or its stick proportions "
                      f"{var.sticks!r} (one fewer than {var.dims[-1]!r}).")
    return stick_weights(ds[var.sticks].values if K > 1 else None, K, sample)
