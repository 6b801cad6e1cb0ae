"""The public signatures speak the vocabulary of the glossary (docs/glossary.md).

Walks every public function and constructor of ``bayes_risk.__all__`` and of the sub-packages'
``__all__`` (dataclasses excepted: their arguments are the fields they hold) and fails on a
parameter name the glossary lists as a banned synonym, and on a parameter after the data
arguments that can be given positionally.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "docs" / "glossary.md"

#: sub-packages whose ``__all__`` is public API (``bayes_risk.models`` imports PyMC lazily)
PACKAGES = (
    "bayes_risk",
    "bayes_risk.data",
    "bayes_risk.utility",
    "bayes_risk.identification",
    "bayes_risk.attribute",
    "bayes_risk.disclosure",
    "bayes_risk.auditing",
    "bayes_risk.distributed",
    "bayes_risk.models",
)

#: the data arguments: the only parameters that may be given positionally. What is evaluated
#: (``original``, ``synthetic``), the object a function acts on (``result``, ``model``) and the
#: one input of a reader, a helper or a combining rule.
DATA_ARGUMENTS = frozenset({
    "original", "synthetic", "result", "model", "data", "df", "path", "paths", "n",
    "q", "u", "U", "Q0", "lo_o", "hi_o", "lo_s", "hi_s", "beta_orig", "beta_syn", "se_orig",
})
#: helpers of ``bayes_risk.data``, ``bayes_risk.disclosure`` and ``bayes_risk.utility`` whose
#: positional arguments are all data: the table or codes they convert and what describes it
EXTRA_DATA = {
    "bayes_risk.ArrayModel": {"loglik_fn", "draws", "schema"},  # the model is made of these
    "bayes_risk.compare_audits": {"before", "after"},  # the two audits compared
    "bayes_risk.data.encode": {"schema", "columns"},
    "bayes_risk.data.decode": {"codes", "schema", "columns"},
    "bayes_risk.data.level_codes": {"values", "levels"},
    "bayes_risk.data.validate_table": {"schema"},
    "bayes_risk.data.check_m": {"m", "argument"},
    "bayes_risk.data.check_probability": {"x", "argument"},
    "bayes_risk.data.record_positions": {"records"},
    "bayes_risk.data.load_demo": {"name", "random_seed"},
    "bayes_risk.data.SyntheticInput": {"datasets", "source"},  # a NamedTuple
    "bayes_risk.disclosure.key_anonymity": {"key_codes", "k_values"},
    "bayes_risk.utility.pmse_null_moments": {"n_original", "n_synthetic"},
    "bayes_risk.distributed.connect": {"scheduler", "n_workers"},
    # the fitted synthesizer is the model a plug-in likelihood is made from
    "bayes_risk.CARTPlugin": {"synthesizer"},
    "bayes_risk.RFPlugin": {"synthesizer"},
    "bayes_risk.models.plugin_likelihood": {"synthesizer"},
    "bayes_risk.models.check_is_fitted": {"attribute"},  # as scikit-learn's check_is_fitted
    "bayes_risk.models.get_synthesizer": {"name"},
    # the table of points a figure draws is its data
    "bayes_risk.plot_utility_risk": {"points"},
    "bayes_risk.plot_prior_sensitivity": {"sensitivity"},
    # the one argument of a context manager, as threadpoolctl's threadpool_limits(limits)
    "bayes_risk.memory_limit": {"limit"},
    # a decorator's one argument: when the method is offered (@available_if(check))
    "bayes_risk.available_if": {"check"},
}


def glossary_banned() -> dict[str, str]:
    """``{banned synonym: the name to use}`` read from the glossary's table of banned names."""
    text = GLOSSARY.read_text(encoding="utf-8")
    section = text.split("## Banned synonyms", 1)[1].split("\n## ", 1)[0]
    banned = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        use = re.findall(r"`([^`]+)`", cells[1])
        for name in re.findall(r"`([^`]+)`", cells[0]):
            banned[name] = use[0] if use else cells[1]
    return banned


def _is_container(cls: type) -> bool:
    # a dataclass's constructor arguments are its fields (results, settings records, specs):
    # they name what they hold, not an argument of an analysis
    return dataclasses.is_dataclass(cls) or hasattr(cls, "_fields")  # or a NamedTuple


def public_callables():
    seen: set[int] = set()
    for pkg in PACKAGES:
        mod = importlib.import_module(pkg)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if id(obj) in seen or not callable(obj):
                continue
            seen.add(id(obj))
            if inspect.isclass(obj):
                if issubclass(obj, BaseException) or _is_container(obj):
                    continue
                if getattr(obj, "_is_protocol", False):
                    continue
                yield f"{pkg}.{name}", obj
            elif inspect.isfunction(obj):
                yield f"{pkg}.{name}", obj


CALLABLES = dict(public_callables())


def _signature(obj):
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        pytest.skip("no signature")


def test_glossary_lists_banned_synonyms():
    banned = glossary_banned()
    for name in ("datasets", "syn", "release", "released", "N_pop", "synthesized_records"):
        assert name in banned, name


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_no_banned_parameter_name(name):
    banned = glossary_banned()
    bad = [f"{p} (use {banned[p]})" for p in _signature(CALLABLES[name]).parameters
           if p in banned]
    assert not bad, f"{name}: " + ", ".join(bad)


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_keyword_only_after_the_data_arguments(name):
    positional = [p for p in _signature(CALLABLES[name]).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    allowed = DATA_ARGUMENTS | EXTRA_DATA.get(name, set())
    bad = [p.name for p in positional if p.name not in allowed]
    assert not bad, f"{name}: {bad} may be given positionally; make them keyword-only"


def test_one_argument_order_across_engines():
    # original first, then the synthetic data, in every engine that takes both positionally
    for name, obj in CALLABLES.items():
        params = [p.name for p in _signature(obj).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if "original" in params and "synthetic" in params:
            assert params.index("original") < params.index("synthetic"), name


# ------------------------------------------------------------------ the model protocol methods
def _protocol_methods() -> dict[str, set[str]]:
    """``{protocol class: its methods}`` of the model contract (bayes_risk.contract)."""
    protocols = importlib.import_module("bayes_risk.contract")
    out = {}
    for name in protocols.__all__:
        obj = getattr(protocols, name)
        if inspect.isclass(obj) and getattr(obj, "_is_protocol", False):
            out[name] = {n for n, v in vars(obj).items()
                         if inspect.isfunction(v) and not n.startswith("_")}
    return out


def _example_model() -> type:
    path = ROOT / "examples" / "dirichlet_multinomial" / "dirichlet_multinomial.py"
    spec = importlib.util.spec_from_file_location("_vocabulary_dirichlet_multinomial", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DirichletMultinomial


def protocol_implementations():
    """``(label, function)`` of every protocol method: the protocols' own declarations, every
    built-in model's, ``ArrayModel``'s, the tree plug-ins' and the example model's."""
    methods = set().union(*_protocol_methods().values())
    models = importlib.import_module("bayes_risk.models")
    owners = [getattr(importlib.import_module("bayes_risk.contract"), n)
              for n in _protocol_methods()]
    owners += [getattr(models, n) for n in models.__all__
               if inspect.isclass(getattr(models, n))]
    owners += [importlib.import_module("bayes_risk").ArrayModel, _example_model()]
    for cls in owners:
        for name in sorted(methods):
            fn = inspect.getattr_static(cls, name, None)
            fn = inspect.unwrap(getattr(fn, "__func__", fn))  # available_if: the method
            if inspect.isfunction(fn):
                yield f"{cls.__module__}.{cls.__qualname__}.{name}", fn


PROTOCOL_METHODS = dict(protocol_implementations())


def test_protocol_methods_are_found():
    names = {k.rsplit(".", 1)[1] for k in PROTOCOL_METHODS}
    assert {"record_loglik", "dataset_loglik", "neighbourhood_loglik", "candidate_loglik",
            "own_record_delta", "largest_value_loglik"} <= names
    assert any(".DPMPM." in k for k in PROTOCOL_METHODS)
    assert any(".DirichletMultinomial." in k for k in PROTOCOL_METHODS)


@pytest.mark.parametrize("name", sorted(PROTOCOL_METHODS))
def test_protocol_methods_speak_the_vocabulary(name):
    """In the model protocol ``draws`` is never a subset of draws (the glossary: ``draws`` is a
    number per chain, a subset is ``draw_indices``), and no argument, positional or keyword, is
    a banned synonym."""
    banned = glossary_banned()
    params = _signature(PROTOCOL_METHODS[name]).parameters.values()
    assert "draws" not in [p.name for p in params], f"{name}: draws= (use draw_indices)"
    bad = [f"{p.name} (use {banned[p.name]})" for p in params if p.name in banned]
    assert not bad, f"{name}: " + ", ".join(bad)


#: the protocol methods that take the synthetic data, and where (after ``self``)
SYNTHETIC_ARGUMENT = {"dataset_loglik": 0, "own_record_delta": 2, "plugin_loglik": 2,
                      "largest_value_loglik": 1}


def test_protocol_methods_name_the_synthetic_data_synthetic():
    """The glossary's name for the synthetic data holds in the model protocol too: every
    declaration and implementation of a method taking them names the argument ``synthetic``
    (it was ``datasets``), at the same position."""
    checked = set()
    for name, fn in PROTOCOL_METHODS.items():
        method = name.rsplit(".", 1)[1]
        if method not in SYNTHETIC_ARGUMENT:
            continue
        params = [p.name for p in _signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]
        assert params[SYNTHETIC_ARGUMENT[method]] == "synthetic", f"{name}: {params}"
        checked.add(method)
    assert checked == set(SYNTHETIC_ARGUMENT)


def test_protocol_draw_subsets_are_draw_indices():
    # the methods that return [H, ...] arrays select their rows with draw_indices=
    for name, fn in PROTOCOL_METHODS.items():
        if name.rsplit(".", 1)[1] in ("record_loglik", "dataset_loglik"):
            p = _signature(fn).parameters.get("draw_indices")
            assert p is not None and p.kind == p.KEYWORD_ONLY and p.default is None, name
