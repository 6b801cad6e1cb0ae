"""Every constraint of every table refuses a value derived from it, at the public entry
(scikit-learn's ``generate_invalid_param_val`` and ``check_param_validation`` are the model);
every relation between arguments refuses values derived from it, at the same entry.

The tables are collected, not listed: the fields of every spec dataclass of ``bayes_risk``
that declare a check (``checked``), every function's parameters that declare one
(``param: Annotated[T, checked(...)]``), and every module-level dict of constraints (a
function's ``check_params`` table). For each constraint a value outside it is derived
(:func:`invalid_value`) and given to the table's public entry, which must raise
``ValidationError`` naming the argument. A new table needs its entry in ``ENTRIES`` (or its
required fields in ``REQUIRED``): the test of the collection fails until it has one.

The relations (``Requires``, ``OneOf``, ``AtMost``, ``Within``) are collected the
same way: a spec's class attribute ``RELATIONS``, and every module-level tuple of them (given
to ``check_params`` or ``check_relations``). For each, values that break it are derived
(:func:`breaking_values`) and given to the entry (``RELATION_ENTRIES``), which must raise the
relation's ``ValidationError`` naming each of its arguments.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import pkgutil
import re
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import bayes_risk
from bayes_risk._constraints import (
    AtMost,
    Flag,
    HasMethods,
    InstanceOf,
    Interval,
    OneOf,
    Options,
    Requires,
    SequenceOf,
    Text,
    Within,
)
from bayes_risk._specs import parameter_metadata
from bayes_risk.exceptions import ValidationError

_KINDS = (Interval, Options, Flag, InstanceOf, Text, HasMethods, SequenceOf)


def _modules() -> list[Any]:
    """Every module of ``bayes_risk``, the models' (``models/``, installed as
    ``bayes_risk.models``) included."""
    out = []
    for info in pkgutil.walk_packages(bayes_risk.__path__, "bayes_risk."):
        if info.name.startswith("bayes_risk.__main__"):
            continue
        out.append(importlib.import_module(info.name))
    return out


def _is_constraint(c: Any) -> bool:
    if isinstance(c, list | tuple):
        return bool(c) and all(x is None or isinstance(x, _KINDS) for x in c)
    return isinstance(c, _KINDS)


def _tables() -> dict[str, tuple[str, dict[str, Any]]]:
    """``{"module.NAME": (kind, {argument: constraint})}``, each table once, under the module
    that defines it."""
    found: dict[int, tuple[str, str, dict[str, Any]]] = {}
    for mod in _modules():
        source = inspect.getsource(mod)
        for name, obj in vars(mod).items():
            if not re.search(rf"^{name}\s*(:[^=\n]*)?=", source, re.MULTILINE) and not (
                    (isinstance(obj, type) or inspect.isfunction(obj))
                    and obj.__module__ == mod.__name__):
                continue  # imported: collected where it is defined
            if isinstance(obj, type) and dataclasses.is_dataclass(obj):
                checks = {f.name: f.metadata["check"] for f in dataclasses.fields(obj)
                          if "check" in f.metadata}
                if checks:
                    found.setdefault(id(obj), (f"{mod.__name__}.{name}", "spec", checks))
            elif inspect.isfunction(obj) and any(
                    "Annotated[" in str(a) for a in obj.__annotations__.values()):
                checks = {k: v["check"] for k, v in parameter_metadata(obj).items()
                          if "check" in v}
                if checks:
                    found.setdefault(id(obj), (f"{mod.__name__}.{name}", "arguments", checks))
            elif isinstance(obj, dict) and obj and all(isinstance(k, str) for k in obj) \
                    and all(_is_constraint(v) for v in obj.values()):
                found.setdefault(id(obj), (f"{mod.__name__}.{name}", "check_params",
                                           {k: (v, None, None) for k, v in obj.items()}))
    return {where: (kind, checks) for where, kind, checks in found.values()}


def _alternatives(constraint: Any) -> list[Any]:
    items = list(constraint) if isinstance(constraint, list | tuple) else [constraint]
    return [c for c in items if c is not None]


def _outside(c: Any) -> list[Any]:
    """Values one constraint refuses, the nearest first."""
    if isinstance(c, Interval):
        step = 1 if c.kind is int else 0.5
        near = []
        if c.left is not None:
            near.append(c.left - step if c.closed in ("both", "left") else c.left)
        if c.right is not None:
            near.append(c.right + step if c.closed in ("both", "right") else c.right)
        if c.kind is int:
            near.append(1.5)
        return [*near, math.nan, "1"]
    if isinstance(c, Options):
        return ["__not_an_option__", -987654321]
    if isinstance(c, Flag):
        return ["yes", 2]
    if isinstance(c, Text):
        return [" ", 1]
    if isinstance(c, SequenceOf):
        # empty, then an item outside (if any: an item may be any value), then one name alone
        # (a string is no sequence of names)
        try:
            bad_items = [[invalid_value(c.item)] * max(c.min_len, 1)]
        except AssertionError:
            bad_items = []
        return [*([[]] if c.min_len else []), *bad_items, "ab"]
    return [object()]


def invalid_value(constraint: Any) -> Any:
    """A value no alternative of ``constraint`` takes (never ``None``)."""
    alternatives = _alternatives(constraint)
    pool = [v for c in alternatives for v in _outside(c)] + [object(), math.nan, "__x__"]
    for value in pool:
        if not any(c.accepts(value) for c in alternatives):
            return value
    raise AssertionError(f"no value outside {constraint!r}")


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    from bayes_risk.data import make_ce_like

    return make_ce_like(n=60, random_seed=1)


class _Replicable:
    """A model with a posterior predictive, for ``PosteriorReplicates``'s checks."""

    def posterior_replicates(self, n, *, columns=None, chunk_size=50, random_seed=None,
                             start=0):  # pragma: no cover - never drawn
        raise AssertionError


#: the arguments a spec needs besides the one refused (fields without a default)
REQUIRED: dict[str, Callable[[pd.DataFrame], dict[str, Any]]] = {
    "bayes_risk.attribute.candidates.SpatialGridSpec":
        lambda d: dict(columns=("x", "y"), spacing=1.0, half_width=1.0),
    "bayes_risk.data.synthetic.SyntheticData": lambda d: dict(datasets=[d]),
    # known_fraction and seed apply to this kind only
    "bayes_risk.attribute.specs.ScenarioSpec":
        lambda d: dict(kind="known_records", known_fraction=0.5),
    "bayes_risk.identification.replicates.PosteriorReplicates":
        lambda d: dict(model=_Replicable()),
}


def _attacks(function: str, **needed: Any) -> Callable[..., Any]:
    def call(d: pd.DataFrame, **bad: Any) -> Any:
        import bayes_risk.attacks as attacks

        return getattr(attacks, function)(d, [d], **needed, **bad)
    return call


def _singling_out(d: pd.DataFrame, **bad: Any) -> Any:
    from bayes_risk.attacks import singling_out_risk

    return singling_out_risk(d, [d], **bad)


#: the public entry of each argument table: called with a valid release and the one argument
#: refused
ENTRIES: dict[str, Callable[..., Any]] = {
    "bayes_risk.attacks.singling_out.singling_out_risk": _singling_out,
    "bayes_risk.attacks.linkability.linkability_risk":
        _attacks("linkability_risk", aux_columns=(["Age"], ["Income"])),
    # delta: relative_difference checks it by largest_value_risk's constraint (needs no model)
    "bayes_risk.attribute.largest_value.largest_value_risk":
        lambda d, **bad: bayes_risk.attribute.business.relative_difference(
            d, [d], columns=["Income"], **bad),
    "bayes_risk.utility.summary.utility_summary":
        lambda d, **bad: bayes_risk.utility_summary(d, [d], **bad),
    "bayes_risk.identification.api.identification_risk":
        lambda d, **bad: bayes_risk.identification_risk(d, [d], known=["Age"],
                                                        progressbar=False, **bad),
    "bayes_risk.membership.api.membership_risk": lambda d, **bad: _membership(d, **bad),
    "bayes_risk.disclosure.original_risk.original_risk":
        lambda d, **bad: bayes_risk.original_risk(d, keys=["Urban", "Marital"], **bad),
    "bayes_risk.disclosure.sdc.sdc":
        lambda d, **bad: bayes_risk.sdc(d, [d], keys=["Urban", "Marital"], **bad),
    "bayes_risk.privacy._ARGUMENT_CHECKS": lambda d, **bad: _privacy(**bad),
    "bayes_risk.disclosure.measures._CHECKS":
        lambda d, **bad: bayes_risk.disclosure_measures(
            d, [d], **{"keys": ["Urban", "Marital"], "target": "Tenure", **bad}),
    "bayes_risk.testing._REGISTERED": lambda d, **bad: _registered(**bad),
    # the known-records curve's shares and seed, checked before the run it follows
    "bayes_risk.attribute.run.attribute_run": lambda d, **bad: _attribute_run(d, **bad),
    "bayes_risk.utility.pmse._MOMENTS": lambda d, **bad: bayes_risk.utility.pmse_null_moments(
        **{"df": 1, "n_original": 10, "n_synthetic": 10, **bad}),
    # a registered synthesizer by name: every argument checked before the table is read
    "bayes_risk.models.fitting._FIT_MODEL": lambda d, **bad: _fitting("fit_model", d, **bad),
    "bayes_risk.models.fitting._FIT_SYNTHESIZER":
        lambda d, **bad: _fitting("fit_synthesizer", d, **bad),
    # the models' settings tables: each model's settings, checked by its constructor or fit
    "bayes_risk.models._replicates._SETTINGS": lambda d, **bad: _replicates(d, **bad),
    "bayes_risk.models.dp_multinomial._SETTINGS":
        lambda d, **bad: _fit("DPMultinomial", d, _CATEGORICAL, **bad),
    "bayes_risk.models.dpmpm.dpmpm._SETTINGS":
        lambda d, **bad: _fit("DPMPM", d, _CATEGORICAL, **bad),
    "bayes_risk.models.poisson.poisson_mixture._SETTINGS":
        lambda d, **bad: _fit("PoissonMixture", d, ["Age", "Educ"], **bad),
    "bayes_risk.models.external._SETTINGS": lambda d, **bad: _array_model(**bad),
    # the grouped arguments: a Bayesian model's sampling, a tree synthesizer's trees
    "bayes_risk.models.settings_group._SETTINGS":
        lambda d, **bad: (_fit("CARTSynthesizer", d, list(d), **bad) if "trees" in bad
                          else _fit("DPMultinomial", d, _CATEGORICAL, alpha=1.0, **bad)),
    "bayes_risk.models.trees.cart_fit._SETTINGS":
        lambda d, **bad: _fit("CARTSynthesizer", d, list(d), **bad),
    "bayes_risk.models.trees.random_forest._SETTINGS":
        lambda d, **bad: _fit("RandomForestSynthesizer", d, _CATEGORICAL, **bad),
    "bayes_risk.models.trees.pmm._SETTINGS":
        lambda d, **bad: _fit("SmallCellPMMSynthesizer", d, list(d),
                              identifying=["Urban", "Marital"], **bad),
}

_CATEGORICAL = ["Urban", "Marital", "Tenure"]


def _fit(model: str, d: pd.DataFrame, columns: list[str], **settings: Any) -> Any:
    """``model(**settings)`` fitted to ``columns`` of ``d`` (the categorical ones declared)."""
    import bayes_risk.models as models
    from bayes_risk.data.schema import infer_schema

    table = d[columns]
    schema = infer_schema(table, categorical=[c for c in columns if c in _CATEGORICAL])
    return getattr(models, model)(**settings).fit(table, schema=schema, random_seed=1)


def _fitting(function: str, d: pd.DataFrame, **bad: Any) -> Any:
    from bayes_risk.models import fitting

    def read() -> pd.DataFrame:
        raise AssertionError("the table was read before the arguments were checked")

    return getattr(fitting, function)(read, **{"method": "cart", "synthesized": ["Age"], **bad})


def _replicates(d: pd.DataFrame, **bad: Any) -> Any:
    model = _fit("DPMultinomial", d, _CATEGORICAL, alpha=1.0)
    return next(iter(model.posterior_replicates(**{"n": 1, **bad})))


def _array_model(**bad: Any) -> Any:
    import numpy as np

    from bayes_risk.models import ArrayModel

    return ArrayModel(**{"loglik_fn": lambda records, draws: None, "draws": np.zeros((4, 1)),
                         "schema": None, **bad})


def _registered(**bad: Any) -> Any:
    from bayes_risk.testing import registered_synthesizer

    with registered_synthesizer(**{"name": "x", "target": "m:C", **bad}):
        raise AssertionError("not refused")


def _privacy(**bad: Any) -> Any:
    from bayes_risk.privacy import dirichlet_alpha, dirichlet_epsilon

    if "epsilon" in bad:
        return dirichlet_alpha(n_records=10, **bad)
    return dirichlet_epsilon(**{"alpha": 1.0, "n_records": 10, **bad})


def _membership(d: pd.DataFrame, **bad: Any) -> Any:
    from bayes_risk.data.schema import infer_schema
    from bayes_risk.models import DPMultinomial

    cols = ["Urban", "Marital", "Tenure"]
    schema = infer_schema(d[cols], categorical=cols)
    model = DPMultinomial(alpha=1.0).fit(d[cols], schema=schema, random_seed=1)
    syn = model.synthesize(1, random_seed=2)
    return bayes_risk.membership_risk(model, d[cols], syn, progressbar=False, random_seed=3,
                                      **bad)


TABLES = _tables()


def _case_id(where: str, name: str) -> str:
    """``TABLE.argument``; a model's ``_SETTINGS`` by its module (``dpmpm._SETTINGS.sampler``)."""
    module, table = where.rsplit(".", 1)
    return f"{module.rsplit('.', 1)[-1]}.{table}.{name}" if table == "_SETTINGS" \
        else f"{table}.{name}"


CASES = [pytest.param(where, kind, name, check, id=_case_id(where, name))
         for where, (kind, checks) in sorted(TABLES.items())
         for name, check in checks.items()]


def test_tables_are_found_and_each_has_an_entry():
    kinds = {kind for kind, _ in TABLES.values()}
    assert kinds == {"spec", "arguments", "check_params"}
    assert len(CASES) >= 80
    missing = [w for w, (kind, _) in TABLES.items() if kind != "spec" and w not in ENTRIES]
    assert not missing, f"give the public entry of {missing} in ENTRIES"
    assert set(ENTRIES) <= set(TABLES), set(ENTRIES) - set(TABLES)


@pytest.mark.parametrize("constraint", [
    Interval(int, 1), Interval(int, 0, 3), Interval(float, 0, 1, closed="neither"),
    Interval(float, 0), Interval(float, None, 2, closed="left"), Options(("a", "b")), Flag(),
    InstanceOf(str, "a string"), HasMethods(("fit",), "a model"), Text("a name", r"\w+"),
    [Options(("sqrt",)), Interval(int, 1), None],
    [Interval(float, 0, 1, closed="neither"), Options(("balanced", "sampling"))],
    SequenceOf(InstanceOf(str, "a column name"), "column names"),
    [SequenceOf(Interval(float, 0), "radii", min_len=0, unique=True), None],
])
def test_the_derived_value_is_refused_by_every_alternative(constraint):
    value = invalid_value(constraint)
    assert value is not None
    assert not any(c.accepts(value) for c in _alternatives(constraint))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("where, kind, name, check", CASES)
def test_every_constraint_refuses_a_value_outside_it_at_the_entry(where, kind, name, check, data):
    constraint, label, code = check
    bad = invalid_value(constraint)
    if kind == "spec":
        module, cls = where.rsplit(".", 1)
        spec = getattr(importlib.import_module(module), cls)
        required = REQUIRED.get(where, lambda d: {})(data)
        call = lambda: spec(**{**required, name: bad})  # noqa: E731
    else:
        call = lambda: ENTRIES[where](data, **{name: bad})  # noqa: E731
    with pytest.raises(ValidationError) as err:
        call()
    message = str(err.value)
    # the message names the argument (its label, or the option that sets it on the command
    # line is not in play here) and says what it takes
    assert (label or name) in message, message
    assert " must be " in message, message
    assert err.value.code == (code or "INVALID_ARGUMENT")


# ----------------------------------------------------------------------------- the relations

_RELATION_KINDS = (Requires, OneOf, AtMost, Within)


def _relation_tables() -> dict[str, tuple[str, tuple[Any, ...]]]:
    """``{"module.NAME": (kind, relations)}``: a spec's ``RELATIONS`` (``"spec"``) or a
    module-level tuple of relations (``"entry"``), each once, under the module defining it."""
    found: dict[int, tuple[str, str, tuple[Any, ...]]] = {}
    for mod in _modules():
        source = inspect.getsource(mod)
        for name, obj in vars(mod).items():
            if isinstance(obj, type) and obj.__module__ == mod.__name__ and "RELATIONS" in vars(
                    obj):
                found.setdefault(id(obj), (f"{mod.__name__}.{name}", "spec", obj.RELATIONS))
            elif (isinstance(obj, tuple) and obj
                  and all(isinstance(r, _RELATION_KINDS) for r in obj)
                  and re.search(rf"^{name}\s*(:[^=\n]*)?=", source, re.MULTILINE)):
                found.setdefault(id(obj), (f"{mod.__name__}.{name}", "entry", obj))
    return {where: (kind, relations) for where, kind, relations in found.values()}


#: a valid value of each argument a relation reads, given (as the example data take it)
GIVEN: dict[str, Any] = {
    "partition_size": 10, "dashboard": True, "scheduler": "tcp://127.0.0.1:1", "n_workers": 1,
    "workers": 1, "keys": ["Urban"], "remove": "replicated_uniques", "smooth": ["Income"],
    "bottom_top_coding": {"Income": (None, 1000.0)}, "recode_exclude": {"Income": [0.0]},
    "pram": ["Urban"], "local_suppression": ["Urban"], "microaggregation": ["Income"],
    "add_noise": ["Income"], "strata": ["Marital"], "importance": [1], "target": "Tenure",
    "sensitive": ["Tenure"], "weights": "Age", "secret": "Age", "aux_columns": ["Income"],
    "epsilon": 1.0, "alpha": 1.0, "own_record_delta_fn": lambda *a: None,
    "counts": "loglinear_original", "sampling_fraction": 0.5, "population_size": 100,
    "targets": pd.DataFrame({"id": [1]}), "target_id": "id", "max_replicates": 10,
    "known": ("Age",), "pairs": [(0, 1)], "known_sums": True, "known_records": [0],
    "known_fraction": 0.5, "seed": 0, "replicates": [object()], "synthesized": ["Age"],
    "candidates": ["Income"], "resume": True, "out": "unused", "predictors": {"Income": ["Age"]},
    "formulas": {"Income": "Income ~ Age"}, "selection": "Age > 0", "known_sweep": ["Age"],
    "radius_refine": 2, "radius_search": ["Age"], "max_size": 1, "inference": ["Age"],
    "selected": "0-9", "differencing": True, "r_min": 0.1, "populations": 2,
    "sample_fraction": 0.5, "m": 2, "original": "o.csv", "model_function": "m:f",
    "total_known": True, "top": 2, "synthesized_records": [True], "data": "unused",
    "column": "Income", "upper": 100.0, "delta": 0.1, "known_curve": [0.5], "records": [0],
    "refine": 2, "search": [0.1],
}
#: the values of an option, for a value outside a relation's ``equal``
CHOICES: dict[str, tuple[Any, ...]] = {"kind": ("worst_case", "partially_known"),
                                       "membership": ("known", "unknown"),
                                       "method": ("cart", "logit"),
                                       "radius_type": ("quantile_sd", "percentage"),
                                       "scenario": ("worst_case", "second_largest"),
                                       "aggregation": ("per_dataset", "pooled"),
                                       "variant": ("mp", "mm")}


def breaking_values(relation: Any) -> dict[str, Any]:
    """Values of the arguments of ``relation`` that break it (the others left as they are)."""
    if isinstance(relation, Requires):
        needs = (relation.needs,) if isinstance(relation.needs, str) else relation.needs
        first = relation.when[0] if relation.when else GIVEN[relation.argument]
        return {relation.argument: first, **{
            n: None if relation.equal is None
            else next(v for v in CHOICES[n] if v not in relation.equal) for n in needs}}
    if isinstance(relation, OneOf):
        return {a: None if relation.required else GIVEN[a] for a in relation.arguments}
    if isinstance(relation, AtMost):
        return {relation.argument: GIVEN[relation.bound] + 1,
                relation.bound: GIVEN[relation.bound]}
    if not relation.apart:  # Within
        return {relation.argument: ["__nowhere__"], relation.among: GIVEN[relation.among]}
    value = GIVEN[relation.argument]  # apart: the other argument names the same column(s)
    names = [value] if isinstance(value, str) else list(value)
    return {relation.argument: value,
            relation.among: names[0] if isinstance(GIVEN.get(relation.among), str) else names}


def _entered(context: Callable[..., Any]) -> Callable[..., Any]:
    def call(d: pd.DataFrame, **values: Any) -> Any:
        with context(**values):
            raise AssertionError("not refused")
    return call


def _audit(d: pd.DataFrame, known: Any, **settings: Any) -> Any:
    from bayes_risk.auditing.settings import AuditSettings

    return bayes_risk.audit(d, [d], known=known, settings=AuditSettings(**settings),
                            progressbar=False)


def _sdcmicro(d: pd.DataFrame, **values: Any) -> Any:
    from bayes_risk.disclosure.specs import SdcMicroSpec

    settings = SdcMicroSpec(importance=values.pop("importance", None))
    return bayes_risk.sdcmicro(d, [d], settings=settings, **{"add_noise": ["Income"], **values})


def _cli(command: str, check: str, *argv: str) -> Callable[..., Any]:
    """The command line's check ``check`` (``"module:function"``) of ``command``'s options
    parsed from ``argv``, with the values that break one relation set, its messages naming
    the options."""
    def call(d: pd.DataFrame, **values: Any) -> Any:
        from bayes_risk.cli import build_parser
        from bayes_risk.cli._run import command_line_options
        from bayes_risk.cli.parsers import option_names

        parser = build_parser(command)
        args = parser.parse_args([command, *argv, "--out", "unused"])
        vars(args).update(values)
        module, _, name = check.partition(":")
        with command_line_options(option_names(parser._subparsers._group_actions[0].choices[
                command])):
            getattr(importlib.import_module(module), name)(args)
        raise AssertionError("not refused")
    return call


def _attribute_run(d: pd.DataFrame, **values: Any) -> Any:
    """``attribute_run`` refusing ``values`` before any work (no model needed): those of a
    largest-value scenario in its ``largest_value``."""
    from bayes_risk.attribute.run import attribute_run

    largest = {k: values.pop(k) for k in ("column", "upper", "delta", "total_known")
               if k in values}
    return attribute_run(d, [d], model=None, largest_value=largest, **values)


def _identification_run(d: pd.DataFrame, **values: Any) -> Any:
    """``identification_run`` refusing ``values`` before any work (``selection``: the
    population's)."""
    from bayes_risk.identification.run import identification_run
    from bayes_risk.identification.specs import PopulationSpec

    if values.get("selection") is not None:
        values["population"] = PopulationSpec(selection=values.pop("selection"))
    return identification_run([d, [d]], known=["Age"], progressbar=False, **values)


def _disclosure_run(d: pd.DataFrame, **values: Any) -> Any:
    from bayes_risk.disclosure.run import disclosure_run

    measures = {k: values.pop(k) for k in ("keys", "target") if k in values}
    return disclosure_run(d, [d], measures=measures, **values)


#: the public entry of each module-level tuple of relations, called with a valid release and
#: the values that break one relation (the command line's: its check of the options)
RELATION_ENTRIES: dict[str, Callable[..., Any]] = {
    "bayes_risk.distributed.CONNECT_RELATIONS":
        lambda d, **v: _entered(bayes_risk.distributed.connect)(d, **v),
    "bayes_risk.distributed.CLUSTER_RELATIONS":
        lambda d, **v: _entered(bayes_risk.distributed.cluster_executor)(d, **v),
    "bayes_risk.disclosure.sdc.RELATIONS": lambda d, **v: bayes_risk.sdc(d, [d], **v),
    "bayes_risk.disclosure.sdcmicro.RELATIONS": _sdcmicro,
    "bayes_risk.disclosure.measures._RELATIONS":
        lambda d, **v: bayes_risk.disclosure_measures(
            d, [d], **{"keys": ["Urban", "Marital"], "target": "Tenure", **v}),
    "bayes_risk.disclosure.original_risk._RELATIONS":
        lambda d, **v: bayes_risk.original_risk(d, **{"keys": ["Urban", "Marital"], **v}),
    "bayes_risk.attacks.inference._RELATIONS":
        lambda d, **v: bayes_risk.attacks.inference_risk(d, [d], **v),
    "bayes_risk.models.dp_multinomial._RELATIONS":
        lambda d, **v: _fit("DPMultinomial", d, _CATEGORICAL, **v),
    "bayes_risk.models.external._RELATIONS": lambda d, **v: _array_model(**v),
    "bayes_risk.designing.search._RELATIONS":
        lambda d, **v: bayes_risk.design(d, known=["Age"], **v),
    "bayes_risk.identification.prepare._RELATIONS":
        lambda d, **v: bayes_risk.identification_risk(d, [d], known=["Age"], progressbar=False,
                                                      **v),
    "bayes_risk.identification.knowledge._RELATIONS":
        lambda d, **v: bayes_risk.known_sweep(d, [d], **{"candidates": ["Age", "Income"],
                                                         "progressbar": False, **v}),
    "bayes_risk.auditing.resolve._RELATIONS": lambda d, **v: _audit(d, **v),
    "bayes_risk.models._bayesian.fitted.FROM_POSTERIOR_RELATIONS":
        lambda d, **v: bayes_risk.models.DPMPM.from_posterior({}, None, **v),
    "bayes_risk.models.poisson.largest._RELATIONS":
        lambda d, **v: _fit("PoissonMixture", d, ["Age", "Educ"]).largest_value_loglik(
            "Age", [d[["Age", "Educ"]]], **v),
    "bayes_risk.models.poisson.poisson_mixture._RELATIONS":
        lambda d, **v: _fit("PoissonMixture", d, ["Age", "Educ"], **v),
    "bayes_risk.models.seqreg.seqreg._RELATIONS":
        lambda d, **v: _fit("SequentialRegression", d, ["Age", "Income"], **v),
    "bayes_risk.attribute.run.RELATIONS": _attribute_run,
    "bayes_risk.identification.run._RELATIONS": _identification_run,
    "bayes_risk.disclosure.run._RELATIONS": _disclosure_run,
    "bayes_risk.disclosure.remedy._RELATIONS":
        lambda d, **v: bayes_risk.disclosure.remedy.remedy_run(d, [d], synthpop=v),
    "bayes_risk.attacks.run._RELATIONS":
        lambda d, **v: bayes_risk.attacks.run.attacks_run(d, [d], inference=v),
    "bayes_risk.cli.parsers.attribute.BUSINESS_RELATIONS":
        _cli("attribute", "bayes_risk.cli.parsers.attribute:_business", "o.csv", "s.csv"),
    "bayes_risk.cli.synthesize.RELATIONS":
        _cli("synthesize", "bayes_risk.cli.synthesize:_sampling", "o.csv", "--sample-fraction",
             "0.5"),
    "bayes_risk.cli.parsers.orders.RELATIONS":
        _cli("orders", "bayes_risk.cli.parsers.orders:_check", "o.csv", "--method", "cart",
             "--order", "a,b"),
}
#: the fields a spec needs besides those a relation reads
RELATION_BASE: dict[str, Callable[[], dict[str, Any]]] = {
    "bayes_risk.identification.specs.PopulationSpec": lambda: dict(membership="unknown"),
    "bayes_risk.identification.replicates.PosteriorReplicates":
        lambda: dict(model=_Replicable()),
    "bayes_risk.attribute.specs.ScenarioSpec": lambda: dict(kind="worst_case"),
}

RELATION_TABLES = _relation_tables()
RELATION_CASES = [pytest.param(where, kind, i, r, id=f"{'.'.join(where.split('.')[-2:])}.{i}")
                  for where, (kind, relations) in sorted(RELATION_TABLES.items())
                  for i, r in enumerate(relations)]


def test_relations_are_found_and_each_has_an_entry():
    kinds = {kind for kind, _ in RELATION_TABLES.values()}
    assert kinds == {"spec", "entry"}
    assert len(RELATION_CASES) >= 30
    missing = [w for w, (kind, _) in RELATION_TABLES.items()
               if kind == "entry" and w not in RELATION_ENTRIES]
    assert not missing, f"give the public entry of {missing} in RELATION_ENTRIES"
    assert set(RELATION_ENTRIES) <= set(RELATION_TABLES), (
        set(RELATION_ENTRIES) - set(RELATION_TABLES))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("where, kind, i, relation", RELATION_CASES)
def test_every_relation_refuses_values_that_break_it_at_the_entry(where, kind, i, relation,
                                                                    data):
    values = breaking_values(relation)
    if kind == "spec":
        module, cls = where.rsplit(".", 1)
        spec = getattr(importlib.import_module(module), cls)
        call = lambda: spec(**{**RELATION_BASE.get(where, dict)(), **values})  # noqa: E731
    else:
        call = lambda: RELATION_ENTRIES[where](data, **values)  # noqa: E731
    with pytest.raises(ValidationError) as err:
        call()
    message = str(err.value)
    # the message names each argument of the relation (an option by its flag on the command
    # line), and the error carries its code
    assert all(name.replace("_", "-") in message.lower().replace("_", "-")
               for name in relation.names()), message
    assert err.value.code == relation.code, message
