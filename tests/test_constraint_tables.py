"""Every constraint of every table refuses a value derived from it, at the public entry
(scikit-learn's ``generate_invalid_param_val`` and ``check_param_validation`` are the model).

The tables are collected, not listed: the fields of every spec dataclass of ``bayes_risk``
that declare a check (``checked``), every function's parameters that declare one
(``param: Annotated[T, checked(...)]``), and every module-level dict of constraints (a
function's ``check_params`` table). For each constraint a value outside it is derived
(:func:`invalid_value`) and given to the table's public entry, which must raise
``ValidationError`` naming the argument. A new table needs its entry in ``ENTRIES`` (or its
required fields in ``REQUIRED``): the test of the collection fails until it has one.
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
    Flag,
    HasMethods,
    InstanceOf,
    Interval,
    Options,
    SequenceOf,
    Text,
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
        lambda d, **bad: bayes_risk.disclosure_measures(d, [d], keys=["Urban", "Marital"],
                                                        target="Tenure", **bad),
    "bayes_risk.testing._REGISTERED": lambda d, **bad: _registered(**bad),
    "bayes_risk.utility.pmse._MOMENTS": lambda d, **bad: bayes_risk.utility.pmse_null_moments(
        **{"df": 1, "n_original": 10, "n_synthetic": 10, **bad}),
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
