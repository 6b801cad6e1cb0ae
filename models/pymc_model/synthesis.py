"""Synthesis of :class:`~bayes_risk.models.PyMCSynthesizer` datasets: the observed variables drawn
from their distributions at one posterior draw, one after another (a column drawn earlier is a
predictor of a later one at its drawn values), each from its own stream of the dataset's
generator; the covariates at their values in the confidential table."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import NotSupportedError, ValidationError

__all__ = ["CompiledSampler", "compile_samplers", "draw_columns", "released_frame"]


@dataclass(frozen=True)
class CompiledSampler:
    """One observed variable's draw: ``fn(*params, *columns, *generators)``."""

    observed: Any
    fn: Any
    params: tuple[str, ...]
    columns: tuple[str, ...]
    n_generators: int


def compile_samplers(graph: Any) -> list[CompiledSampler]:
    """A compiled draw of each observed variable of ``graph`` (a
    :class:`~bayes_risk.models.pymc_model.graph.ModelGraph` built on a table of as many records
    as a synthetic dataset has), given the free variables' values at one draw, the columns and
    one generator per random variable it draws."""
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph.replace import graph_replace
    from pytensor.graph.traversal import graph_inputs
    from pytensor.tensor.random.type import RandomType

    model = graph.model
    free = {model[name]: pt.tensor(name=name, dtype=model[name].dtype,
                                   shape=model[name].type.shape) for name in graph.free}
    cols = {model[c]: pt.tensor(name=c, dtype=dt, shape=(None,))
            for c, dt in graph.containers.items()}
    out = []
    for o in graph.observed:
        drawn = graph_replace([model[o.name]], replace={**free, **cols}, strict=False)
        rngs = [v for v in graph_inputs(drawn) if isinstance(v.type, RandomType)]
        fresh = [v.type() for v in rngs]
        drawn = graph_replace(drawn, replace=dict(zip(rngs, fresh, strict=True)), strict=False)
        used = set(graph_inputs(drawn))
        params = tuple(v.name for v in free.values() if v in used)
        columns = tuple(v.name for v in cols.values() if v in used)
        inputs = [*(v for v in free.values() if v in used), *(v for v in cols.values()
                                                               if v in used), *fresh]
        with warnings.catch_warnings():
            # a pm.CustomDist without a random function: its draw raises NotImplementedError,
            # reported when a dataset is drawn (draw_columns)
            warnings.filterwarnings("ignore", message=".*object mode.*", category=UserWarning)
            fn = pytensor.function(inputs, drawn[0], on_unused_input="ignore")
        out.append(CompiledSampler(o, fn, params, columns, len(fresh)))
    return out


def _check_drawn(values: np.ndarray, column: str, schema: Schema, name: str) -> None:
    spec = schema[column]
    if spec.is_categorical:
        d = spec.n_levels
        bad = (values < 0) | (values >= d)
        what = f"codes of its {d} levels (0-{d - 1})"
    elif spec.type == "count":
        bad = values < 0
        what = "counts >= 0"
    else:
        bad = ~np.isfinite(values)
        what = "finite numbers"
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValidationError(
            f"observed variable {name!r} drew {values[i]!r} for record {i} of column "
            f"{column!r}; expected {what}: its distribution does not fit the column",
            code="MODEL_FUNCTION_INVALID")


def draw_columns(samplers: Sequence[CompiledSampler], params: Mapping[str, np.ndarray],
                 columns: Mapping[str, np.ndarray], dtypes: Mapping[str, str], schema: Schema,
                 rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The observed columns of one dataset, drawn in turn at the free variables' values
    ``params``; ``columns`` holds the covariates (and any placeholder of the records' number).

    Raises
    ------
    NotSupportedError
        ``MODEL_UNSUITED`` for an observed variable that cannot be drawn (a ``pm.CustomDist``
        with a log-density only).
    """
    vals = dict(columns)
    streams = rng.spawn(sum(s.n_generators for s in samplers))
    k = 0
    for s in samplers:
        gens = streams[k:k + s.n_generators]
        k += s.n_generators
        try:
            drawn = np.asarray(s.fn(*[params[p] for p in s.params],
                                    *[vals[c] for c in s.columns], *gens))
        except NotImplementedError as err:
            raise NotSupportedError(
                f"observed variable {s.observed.name!r} cannot be drawn ({err}): give its "
                "pm.CustomDist a random= or dist= function, so that the model can synthesize",
                code="MODEL_UNSUITED") from err
        for j, c in enumerate(s.observed.columns):
            v = drawn[..., j] if s.observed.stacked else drawn
            _check_drawn(v, c, schema, s.observed.name)
            vals[c] = v.astype(dtypes[c])
    return {c: vals[c] for s in samplers for c in s.observed.columns}


def released_frame(drawn: Mapping[str, np.ndarray], convert: Mapping[str, Any],
                   kept: Mapping[str, pd.Series], names: Sequence[str],
                   mask: np.ndarray | None) -> pd.DataFrame:
    """One released dataset: the drawn columns in their recorded dtypes (``convert``), the
    others as ``kept`` (the confidential table's); with ``mask`` (the synthesized records) the
    other records keep their confidential values in the drawn columns too."""
    frame = pd.DataFrame({c: convert[c](drawn[c]) if c in drawn else kept[c] for c in names})
    if mask is not None:
        keep = pd.Series(np.asarray(mask, dtype=bool))
        for c in drawn:
            frame[c] = frame[c].where(keep, kept[c])
    return frame
