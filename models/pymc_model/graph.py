"""What :class:`~bayes_risk.models.PyMCSynthesizer` reads off a PyMC model's graph, and the checks
that its records are conditionally independent given the parameters Θ.

The contract (:doc:`/user_guide/pymc_models`): the model function takes the table (categorical
columns as pandas Categoricals of the fitted levels) and returns a ``pymc.Model`` in which every
column the model reads is a data container named after it (``pm.Data("income",
data["income"])``, ``pm.Data("area", data["area"].cat.codes)``), one value per record along the
first axis. The observed variables' values are such containers (one, or several stacked along
the last axis); their columns are the synthesized ones, the other containers are covariates.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ValidationError
from bayes_risk.models._bayesian.design import column_values

__all__ = ["LikelihoodGraph", "ModelGraph", "Observed", "build_model", "check_probe",
           "column_arrays", "inspect_model", "likelihood_graph", "model_table", "template_table"]

@dataclass(frozen=True)
class Observed:
    """An observed variable of the model: its name, the columns its values hold (one, or several
    stacked along its last axis: ``stacked``)."""

    name: str
    columns: tuple[str, ...]
    stacked: bool


@dataclass(frozen=True)
class LikelihoodGraph:
    """The records' log-density as a graph of named inputs: ``total`` (``[n]``, the observed
    variables' terms of each record summed), ``columns`` (column → input, one value per record)
    and ``values`` (free variable → input, its constrained value)."""

    total: Any
    columns: dict[str, Any]
    values: dict[str, Any]


@dataclass(frozen=True)
class ModelGraph:
    """What the model's graph shows: the model, its column containers (column → dtype),
    observed variables in an order in which they can be drawn, covariates (columns read, not
    observed), free variables, and the likelihood graph with its digest."""

    model: Any
    containers: dict[str, str]
    observed: tuple[Observed, ...]
    covariates: tuple[str, ...]
    free: tuple[str, ...]
    likelihood: LikelihoodGraph
    digest: str

    @property
    def synthesized(self) -> list[str]:
        """The observed columns, in the order of the observed variables."""
        return [c for o in self.observed for c in o.columns]


def model_table(data: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """The table a model function is given: categorical columns as pandas Categoricals of the
    schema's levels (so ``.cat.codes`` are the codes the likelihood is evaluated at), counts as
    int64, continuous columns as float64."""
    vals = column_values(data, schema, schema.names)
    out = {}
    for spec in schema:
        v = vals[spec.name]
        if spec.is_categorical:
            out[spec.name] = pd.Categorical.from_codes(
                np.nan_to_num(v, nan=-1).astype(np.int64), categories=list(spec.levels),
                ordered=spec.type == "ordinal")
        elif spec.type == "count" and not np.isnan(v).any():
            out[spec.name] = v.astype(np.int64)
        else:
            out[spec.name] = v
    return pd.DataFrame(out, index=pd.RangeIndex(len(data)))


def template_table(schema: Schema, n: int) -> pd.DataFrame:
    """``n`` made-up records of ``schema`` (levels in turn, counts and values 1, 2, ...): what a
    model is built on when only its shapes matter (a loaded model, the synthesis of a release)."""
    i = np.arange(n)
    out = {}
    for spec in schema:
        if spec.is_categorical:
            lv = list(spec.levels)
            out[spec.name] = pd.Categorical.from_codes(i % len(lv), categories=lv,
                                                       ordered=spec.type == "ordinal")
        elif spec.type == "count":
            out[spec.name] = (i % 7 + 1).astype(np.int64)
        else:
            out[spec.name] = (i % 7 + 1).astype(np.float64)
    return pd.DataFrame(out)


def column_arrays(df: pd.DataFrame, schema: Schema, dtypes: Mapping[str, str]
                  ) -> dict[str, np.ndarray]:
    """The values of the columns ``dtypes`` names as their containers hold them (categorical
    columns as codes), in each container's dtype."""
    vals = column_values(df, schema, list(dtypes))
    return {c: vals[c].astype(dt) for c, dt in dtypes.items()}


def build_model(model_function: Callable[..., Any], data: pd.DataFrame, schema: Schema) -> Any:
    """``model_function(model_table(data, schema))``, checked to be a ``pymc.Model``.

    Raises
    ------
    ValidationError
        ``MODEL_FUNCTION_INVALID`` if the function fails or returns something else.
    """
    import pymc as pm

    from bayes_risk.models.pymc_model.function import function_path

    name = function_path(model_function)
    try:
        model = model_function(model_table(data, schema))
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as err:  # the user's code: any failure is reported with its cause
        raise ValidationError(
            f"model_function {name!r} failed on a table of {len(data)} records: "
            f"{type(err).__name__}: {err}", code="MODEL_FUNCTION_INVALID") from err
    if not isinstance(model, pm.Model):
        raise ValidationError(
            f"model_function {name!r} returned a {type(model).__name__}; expected a pymc.Model "
            "(build it in a `with pm.Model() as model:` block and return model).",
            code="MODEL_FUNCTION_INVALID")
    return model


def _invalid(message: str) -> ValidationError:
    return ValidationError(message + " (docs: user guide, Your own PyMC model)",
                           code="MODEL_FUNCTION_INVALID")


def _dependent(message: str) -> ValidationError:
    return ValidationError(
        message + ". bayes-risk needs records that are independent given the model's parameters "
        "Θ, each record's likelihood p(y_i | Θ) depending on its own values only (methods, Models "
        "written in PyMC)", code="RECORDS_NOT_INDEPENDENT")


def _strip_casts(var: Any) -> Any:
    from pytensor.scalar.basic import Cast
    from pytensor.tensor.elemwise import Elemwise

    while var.owner is not None and isinstance(var.owner.op, Elemwise) \
            and isinstance(var.owner.op.scalar_op, Cast):
        var = var.owner.inputs[0]
    return var


def _inputs(variables: Sequence[Any]) -> list[Any]:
    """The root variables of a graph but its constants (shared variables included)."""
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import graph_inputs

    return [v for v in graph_inputs(list(variables)) if not isinstance(v, Constant)]


def _read_columns(variables: Sequence[Any], by_var: Mapping[Any, str]) -> set[str]:
    """Columns whose containers the values of ``variables`` depend on (not through a shape)."""
    from pytensor.tensor.shape import Shape, Shape_i

    found: set[str] = set()
    seen: set[int] = set()
    stack = list(variables)
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if v in by_var:
            found.add(by_var[v])
        node = v.owner
        if node is None or isinstance(node.op, (Shape, Shape_i)):
            continue
        stack.extend(node.inputs)
    return found


def _observed_columns(model: Any, rv: Any, by_var: Mapping[Any, str],
                      values: Mapping[str, np.ndarray]) -> Observed:
    """The columns the observed variable ``rv`` holds, read off its observed value."""
    import pytensor

    value = model.rvs_to_values[rv]
    base = _strip_casts(value)
    if base in by_var:
        return Observed(rv.name, (by_var[base],), False)
    ins = _inputs([value])
    foreign = [v for v in ins if v not in by_var]
    cols = [by_var[v] for v in ins if v in by_var]
    if not cols:
        raise _invalid(
            f"observed variable {rv.name!r} is given its values as an array, not as a data "
            "container: pass them as pm.Data(COLUMN, data[COLUMN]) (a container named after the "
            "column, categorical columns as data[COLUMN].cat.codes) and observed=that container, "
            "so that bayes-risk can set a record's values")
    if foreign:
        raise _invalid(
            f"observed variable {rv.name!r} takes its values from {foreign[0]}, which is not a "
            "data container named after a column of the table")
    # several columns stacked along the last axis (a whole record): which column is which is
    # found on the values and confirmed on the columns shuffled independently
    from pytensor.graph.replace import graph_replace

    order = [v for v in ins if v in by_var]
    stand = [v.type() for v in order]  # a shared variable cannot be a function's input
    fn = pytensor.function(stand, graph_replace([value], dict(zip(order, stand, strict=True)),
                                                strict=False)[0], mode="FAST_COMPILE")
    n = len(next(iter(values.values())))
    rng = np.random.default_rng(0)
    trials = [{by_var[v]: values[by_var[v]] for v in order},
              {by_var[v]: rng.permutation(values[by_var[v]]) for v in order}]
    mapping: list[str] | None = None
    for trial in trials:
        out = np.asarray(fn(*[trial[by_var[v]] for v in order]))
        if out.ndim != 2 or out.shape != (n, len(order)):
            mapping = None
            break
        found = []
        for j in range(out.shape[1]):
            same = [c for c in trial if np.array_equal(out[:, j], trial[c])]
            found.append(same[0] if len(same) == 1 else None)
        if mapping is None and trial is trials[0]:
            mapping = found
        if None in found or found != mapping:
            mapping = None
            break
    if mapping is None or None in mapping or len(set(mapping)) != len(mapping):
        raise _invalid(
            f"observed variable {rv.name!r} holds {', '.join(repr(c) for c in cols)} in a way "
            "bayes-risk cannot read: its observed value must be one column's container, or "
            "several stacked along the last axis (pt.stack([...], axis=1))")
    return Observed(rv.name, tuple(mapping), True)


def _synthesis_order(model: Any, observed: list[Observed], by_var: Mapping[Any, str]
                     ) -> list[Observed]:
    """The observed variables in an order in which each is drawn after the columns it reads."""
    from pytensor.tensor.random.type import RandomType

    owner = {c: o.name for o in observed for c in o.columns}
    needs: dict[str, set[str]] = {}
    for o in observed:
        rv = model[o.name]
        params = [v for v in rv.owner.inputs if not isinstance(v.type, RandomType)]
        read = _read_columns(params, by_var)
        own = sorted(read & set(o.columns))
        if own:
            raise _invalid(
                f"the distribution of observed variable {o.name!r} reads its own column "
                f"{own[0]!r}: a column cannot be a predictor of itself")
        needs[o.name] = {owner[c] for c in read if c in owner}
    done: list[Observed] = []
    left = list(observed)
    while left:
        ready = [o for o in left if needs[o.name] <= {d.name for d in done}]
        if not ready:
            names = ", ".join(repr(o.name) for o in left)
            raise _invalid(
                f"the observed variables {names} read each other's columns in a cycle: the "
                "columns must be modelled one after another, each given earlier ones")
        done.extend(ready)
        left = [o for o in left if o not in ready]
    return done


def _check_types(model: Any, observed: Sequence[Observed], schema: Schema) -> None:
    for o in observed:
        discrete = "int" in str(model[o.name].dtype)
        for c in o.columns:
            spec = schema[c]
            if spec.is_categorical and not discrete:
                raise _invalid(f"column {c!r} is {spec.type} but observed variable {o.name!r} is "
                               "continuous: model its codes with a discrete distribution "
                               "(pm.Categorical, a mixture of categoricals)")
            if spec.type == "count" and not discrete:
                raise _invalid(f"column {c!r} is a count but observed variable {o.name!r} is "
                               "continuous: its draws would not be counts (use a discrete "
                               "distribution, or declare the column continuous)")
            if spec.type == "continuous" and discrete:
                raise _invalid(f"column {c!r} is continuous but observed variable {o.name!r} is "
                               "discrete (declare the column a count, or model it with a "
                               "continuous distribution)")


def inspect_model(model: Any, data: pd.DataFrame, schema: Schema) -> ModelGraph:
    """The :class:`ModelGraph` of ``model`` built on ``data``, checked against the contract.

    Raises
    ------
    ValidationError
        ``MODEL_FUNCTION_INVALID`` naming what does not fit the contract (a container holding
        other values than its column's, an observed variable given an array, a column observed
        twice, a type mismatch, a cycle among the observed columns);
        ``RECORDS_NOT_INDEPENDENT`` for a likelihood that is not one term per record.
    """
    containers = {v.name: v for v in model.data_vars if v.name in schema.names}
    if not containers:
        arrays = [rv.name for rv in model.observed_RVs]
        raise _invalid(
            f"the model has no data container named after a column of the table "
            f"({', '.join(schema.names)})"
            + (f"; observed variable {arrays[0]!r} is given its values as an array" if arrays
               else "")
            + ": give each column the model reads as pm.Data(COLUMN, data[COLUMN]) (categorical "
            "columns as data[COLUMN].cat.codes), and observe the containers")
    n = len(data)
    dtypes = {c: str(v.dtype) for c, v in containers.items()}
    expected = column_values(data, schema, list(schema.names))
    for v in model.data_vars:  # a column under another name: its records are not set by name
        held = np.asarray(v.get_value())
        if v.name in containers or held.shape != (n,) or n < 3:  # not a made-up table
            continue
        same = [c for c in schema.names if np.array_equal(held.astype(np.float64), expected[c])]
        if same:
            raise _invalid(
                f"data container {v.name!r} holds column {same[0]!r} but is not named after it: "
                "bayes-risk sets a record's values in the containers named after its columns, "
                f"so name it {same[0]!r} (pm.Data({same[0]!r}, ...))")
    values: dict[str, np.ndarray] = {}
    for c, v in containers.items():
        held = np.asarray(v.get_value())
        want = expected[c]
        shown = "codes (data[COLUMN].cat.codes)" if schema[c].is_categorical else "values"
        if held.shape != (n,) or not np.array_equal(held.astype(np.float64), want):
            raise _invalid(
                f"data container {c!r} holds {held.shape} values that are not column {c!r}'s "
                f"{shown} ({n} records): a container named after a column must hold that "
                "column as it is, one value per record; transform it inside the model "
                "(pt.log(x)), not before")
        values[c] = held
    by_var = {v: c for c, v in containers.items()}
    observed = [_observed_columns(model, rv, by_var, values) for rv in model.observed_RVs]
    if not observed:
        raise _invalid("the model has no observed variable: nothing would be synthesized")
    seen: dict[str, str] = {}
    for o in observed:
        for c in o.columns:
            if c in seen:
                raise _invalid(f"column {c!r} is observed twice, by {seen[c]!r} and {o.name!r}")
            seen[c] = o.name
    _check_types(model, observed, schema)
    ordered = _synthesis_order(model, observed, by_var)
    lik = likelihood_graph(model, ordered, dtypes)
    used = set(_inputs([lik.total]))
    covariates = tuple(c for c in schema.names
                       if c in containers and c not in seen and lik.columns[c] in used)
    dtypes = {c: dt for c, dt in dtypes.items() if c in seen or c in covariates}
    return ModelGraph(model=model, containers=dtypes, observed=tuple(ordered),
                      covariates=covariates, free=tuple(rv.name for rv in model.free_RVs),
                      likelihood=lik, digest=graph_digest([lik.total]))


def _inline(outputs: list[Any]) -> list[Any]:
    """``outputs`` with the inner graphs of composite operations (``pt.logsumexp``, ...) written
    out, so that vectorising over draws batches their insides instead of looping over draws,
    and without the assertions of fixed shapes (``SpecifyShape``: the records' number at
    build time, which the likelihood of other records must not keep)."""
    from pytensor.compile.builders import OpFromGraph
    from pytensor.compile.rewriting import inline_ofg_node
    from pytensor.graph.fg import FunctionGraph
    from pytensor.graph.rewriting.basic import dfs_rewriter, node_rewriter
    from pytensor.tensor.shape import SpecifyShape

    @node_rewriter([OpFromGraph])
    def inline(fgraph: Any, node: Any) -> Any:
        return inline_ofg_node(node)

    @node_rewriter([SpecifyShape])
    def unspecify(fgraph: Any, node: Any) -> Any:
        return [node.inputs[0]]

    # not cloned: the graph keeps its input variables (the named inputs of the likelihood)
    fg = FunctionGraph(outputs=outputs, clone=False)
    dfs_rewriter(inline).rewrite(fg)
    dfs_rewriter(unspecify).rewrite(fg)
    return list(fg.outputs)


def _record_term(term: Any) -> Any:
    """An observed variable's log-density without the broadcast PyMC gives it to the variable's
    shape (``Alloc`` to the number of records the model was built on, when the variable has
    ``dims``): the terms of the records evaluated, whatever their number."""
    from pytensor.tensor.basic import Alloc
    from pytensor.tensor.shape import SpecifyShape

    while term.owner is not None and isinstance(term.owner.op, (Alloc, SpecifyShape)):
        inner = term.owner.inputs[0]
        if inner.ndim != term.ndim or inner.type.broadcastable[:1] == (True,):
            break
        term = inner
    return term


def _frozen(outputs: list[Any], keep: Sequence[Any]) -> list[Any]:
    """``outputs`` with every shared variable but ``keep`` replaced by a constant of its value
    (graphs of two builds then compare by value)."""
    import pytensor.tensor as pt
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.replace import graph_replace

    swap = {v: pt.constant(np.asarray(v.get_value()), name=v.name)
            for v in _inputs(outputs) if isinstance(v, SharedVariable) and v not in keep}
    return list(graph_replace(outputs, replace=swap, strict=False)) if swap else outputs


def likelihood_graph(model: Any, observed: Sequence[Observed], dtypes: Mapping[str, str], *,
                     inputs: LikelihoodGraph | None = None) -> LikelihoodGraph:
    """The observed variables' log-density of each record, its terms summed, as a graph of
    named inputs (``inputs``: reuse those of another build, whose graph it is compared with).

    Raises
    ------
    ValidationError
        ``RECORDS_NOT_INDEPENDENT`` when an observed variable's log-density is one number for
        all records (a distribution over the records jointly).
    """
    import pytensor.tensor as pt
    from pymc.model.transform.conditioning import remove_value_transforms
    from pytensor.graph.replace import graph_replace

    plain = remove_value_transforms(model)  # value variables on the constrained scale
    rvs = [plain[o.name] for o in observed]
    terms = plain.logp(vars=rvs, sum=False)
    if inputs is None:
        cols = {c: pt.tensor(name=c, dtype=dt, shape=(None,)) for c, dt in dtypes.items()}
        vals = {rv.name: pt.tensor(name=rv.name, dtype=rv.dtype,
                                   shape=plain.rvs_to_values[rv].type.shape)
                for rv in plain.free_RVs}
    else:
        cols, vals = inputs.columns, inputs.values
    replace = {plain[c]: cols[c] for c in dtypes if c in plain.named_vars}
    for rv in plain.free_RVs:
        if rv.name in vals:
            replace[plain.rvs_to_values[rv]] = vals[rv.name]
    terms = graph_replace(terms, replace=replace, strict=False)
    terms = _frozen(list(terms), keep=list(replace.values()))
    total = None
    for o, t in zip(observed, terms, strict=True):
        if t.ndim == 0:
            raise _dependent(
                f"the log-density of observed variable {o.name!r} is one number for all records "
                "(a distribution over the records jointly, such as a multivariate normal, a "
                "Gaussian process or an autoregression across them)")
        t = _record_term(t)
        t = t.sum(axis=tuple(range(1, t.ndim))) if t.ndim > 1 else t
        total = t if total is None else total + t
    return LikelihoodGraph(total=_inline([total])[0], columns=cols, values=vals)


def graph_digest(outputs: Sequence[Any]) -> str:
    """SHA-256 of a graph's structure: its operations, their inputs, the inputs' names and
    types, and the constants' values (a model function that builds another likelihood gives
    another digest)."""
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import io_toposort

    h = hashlib.sha256()
    ins = _inputs(list(outputs))
    pos: dict[Any, str] = {}
    for k, v in enumerate(ins):
        pos[v] = f"i{k}"
        if isinstance(v, Constant):
            data = np.asarray(v.data)
            h.update(f"|c{k}:{data.dtype.str}:{data.shape}|".encode())
            h.update(np.ascontiguousarray(data).tobytes())
        else:
            h.update(f"|i{k}:{v.name}:{v.type}|".encode())
    for j, node in enumerate(io_toposort(ins, list(outputs))):
        for i, v in enumerate(node.inputs):
            if v not in pos and isinstance(v, Constant):
                data = np.asarray(v.data)
                pos[v] = f"k{j}.{i}"
                h.update(f"|{pos[v]}:{data.dtype.str}:{data.shape}|".encode())
                h.update(np.ascontiguousarray(data).tobytes())
        op = node.op
        props = op._props_dict() if getattr(op, "__props__", None) else {}
        h.update(f"|n{j}:{type(op).__module__}.{type(op).__qualname__}:{op}:{props!r}:"
                 f"{[pos.get(v, '?') for v in node.inputs]}".encode())
        for o, v in enumerate(node.outputs):
            pos[v] = f"n{j}.{o}"
    h.update(f"|out:{[pos.get(v, '?') for v in outputs]}".encode())
    return h.hexdigest()


def _potentials(model: Any, graph: ModelGraph) -> list[Any]:
    """The model's potentials as graphs of the likelihood's inputs."""
    from pymc.model.transform.conditioning import remove_value_transforms
    from pytensor.graph.replace import graph_replace

    plain = remove_value_transforms(model)
    if not plain.potentials:
        return []
    pots = plain.replace_rvs_by_values(plain.potentials)
    replace = {plain.rvs_to_values[rv]: graph.likelihood.values[rv.name]
               for rv in plain.free_RVs if rv.name in graph.likelihood.values}
    for c in graph.containers:
        if c in plain.named_vars:
            replace[plain[c]] = graph.likelihood.columns[c]
    pots = graph_replace(list(pots), replace=replace, strict=False)
    return _frozen(list(pots), keep=list(replace.values()))


def check_probe(model_function: Callable[..., Any], data: pd.DataFrame, schema: Schema,
                graph: ModelGraph) -> None:
    """The model built on a few of the records must be the same function of the data
    containers as the one built on all of them: the same likelihood graph and potentials, and
    free variables of the same shapes.

    Raises
    ------
    ValidationError
        ``RECORDS_NOT_INDEPENDENT`` naming what changed: a free variable with one value per
        record, a constant computed from the table (a mean, a count of records), a potential
        that holds part of the records' likelihood or reads the data.
    """
    from pytensor.graph.basic import equal_computations

    n = len(data)
    if n < 2:
        return
    probe = build_model(model_function, data.iloc[: min(3, n - 1)].reset_index(drop=True), schema)
    full_shapes = {k: tuple(int(x) for x in v) for k, v in graph.model.eval_rv_shapes().items()}
    probe_shapes = {k: tuple(int(x) for x in v) for k, v in probe.eval_rv_shapes().items()}
    for rv in graph.model.free_RVs:
        a, b = full_shapes.get(rv.name), probe_shapes.get(rv.name)
        if a != b:
            raise _dependent(
                f"free variable {rv.name!r} has shape {a} when the model is built on the "
                f"{n} records and {b} on {min(3, n - 1)} of them: a variable per record (a "
                "latent value of each record, to be integrated out of its likelihood), or "
                "levels taken from the values present "
                "(take them from data[COLUMN].cat.categories)")
    same_obs = [o.name for o in graph.observed if o.name in probe.named_vars]
    if same_obs != [o.name for o in graph.observed]:
        raise _dependent("the model built on a few records has other observed variables")
    other = likelihood_graph(probe, graph.observed, graph.containers, inputs=graph.likelihood)
    if not equal_computations([graph.likelihood.total], [other.total]):
        raise _dependent(
            "the records' log-density is a different function of the data containers when "
            "the model is built on a few of the records: it uses a constant computed from the "
            "table (a mean or standard deviation to centre a column, the number of records, "
            "a container holding a column transformed), so a record's likelihood depends on "
            "the other records given with it. Compute such constants inside the model from "
            "the containers' fixed values, or not at all")
    pots, probe_pots = _potentials(graph.model, graph), _potentials(probe, graph)
    cols = set(graph.likelihood.columns.values())
    for p in pots:
        if cols & set(_inputs([p])):
            raise _dependent(
                f"potential {p.name!r} reads the data containers: a term of the records' "
                "likelihood written as a potential cannot be split by record (write it as the "
                "observed variable's distribution, e.g. pm.CustomDist or pm.Truncated)")
    if len(pots) != len(probe_pots) or not equal_computations(pots, probe_pots):
        raise _dependent(
            "a potential of the model changes with the number of records it is built on: it "
            "holds part of the records' likelihood (such as a normalising term times the "
            "number of records), which bayes-risk cannot split by record")
