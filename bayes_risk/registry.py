"""Synthesizers by name: the entry-point groups ``bayes_risk.synthesizers`` (``GROUP``) and
``bayes_risk.fit_options`` (``OPTIONS_GROUP``). See :doc:`/adding_a_model`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import replace
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from bayes_risk._constraints import Options, check_value
from bayes_risk._specs import CliOption, cli_arguments, cli_option
from bayes_risk.exceptions import BayesRiskWarning, ValidationError, arg_name, on_command_line

__all__ = ["GROUP", "OPTIONS_GROUP", "ModelOption", "fit_options", "merge_options",
           "get_synthesizer", "list_synthesizers", "synthesizer_entry_points", "setting_names",
           "model_settings", "check_required", "check_option_columns"]

#: the entry-point group synthesizers are registered in
GROUP = "bayes_risk.synthesizers"
#: the entry-point group of the synthesizers' options of ``bayes-risk fit`` (same names)
OPTIONS_GROUP = "bayes_risk.fit_options"


#: the argument group of a command's help listing the models' options
MODEL_GROUP = "model-specific options"
#: the prefix of a model option's destination: no model option can clash with a command's own
#: (``--synthesis-mode`` is stored as ``model_opt_synthesis_mode``)
MODEL_DEST = "model_opt_"


def ModelOption(flag: str, setting: str, help: str,  # a class before: its public name kept
                kwargs: Mapping[str, Any] | None = None) -> tuple[str, dict[str, CliOption]]:
    """An entry of a model's table of options: the setting ``setting`` set by the option
    ``flag`` (the form of the library's own options, ``bayes_risk._specs.cli_option``).

    Parameters
    ----------
    flag : str
        Option string, e.g. ``"--components"``.
    setting : str
        The model's ``__init__`` setting the value is passed to.
    help : str
    kwargs : mapping, optional
        Further ``add_argument`` keywords: ``metavar``, ``type``, ``nargs``, ``action``,
        ``const``, ``required`` or ``choices`` (taken as spelled), never ``default`` (not given:
        the model's default).

    Returns
    -------
    tuple
        ``(setting, {"cli": option})``: a tuple of them, or the ``dict`` of them, is the table
        :func:`fit_options` loads from the entry-point group ``bayes_risk.fit_options``.

    Raises
    ------
    ValidationError
        A keyword of ``kwargs`` that is none of these (``INVALID_ARGUMENT``).

    Examples
    --------
    >>> setting, meta = ModelOption("--n-jobs", "n_jobs", "worker threads", {"type": int})
    >>> setting, meta["cli"].flag
    ('n_jobs', '--n-jobs')
    """
    kw = dict(kwargs or {})
    unknown = sorted(set(kw) - _MODEL_KEYWORDS)
    if unknown:
        raise ValidationError(f"kwargs of {flag}: {', '.join(map(repr, unknown))} not taken; the "
                              f"keywords are {', '.join(sorted(_MODEL_KEYWORDS))}.",
                              code="INVALID_ARGUMENT")
    if "choices" in kw:  # a plug-in's values are shown and taken as it spells them
        kw.update(choices=tuple(kw["choices"]), dashes=False)
    return setting, cli_option(flag, help, **kw)


#: the ``add_argument`` keywords a ``ModelOption`` takes
_MODEL_KEYWORDS = frozenset({"metavar", "type", "nargs", "action", "const", "required",
                             "choices"})


def _merge(a: CliOption, b: CliOption) -> CliOption | None:
    """One option of two models declaring the same flag (their choices united), or ``None``
    when they disagree on anything but the choices and the help."""
    if replace(a, choices=None, help="") != replace(b, choices=None, help="") or (
            (a.choices is None) != (b.choices is None)):
        return None
    if a.choices is None:
        return a
    return replace(a, choices=(*a.choices, *(c for c in b.choices or () if c not in a.choices)))


def _help(texts: dict[str, str]) -> str:
    """The help of an option from each declaring model's text: ``"a, b: text"`` where they
    agree, ``"a: text; b: other"`` where they do not."""
    by_text: dict[str, list[str]] = {}
    for name, text in texts.items():
        by_text.setdefault(text, []).append(name)
    return "; ".join(f"{', '.join(names)}: {text}" for text, names in by_text.items())


def fit_options() -> dict[str, dict[str, Any]]:
    """The model-specific options of ``bayes-risk fit`` (``OPTIONS_GROUP``), imported without
    the models; models declaring the same flag share one option (:func:`merge_options`). An
    entry point that cannot be loaded or is not a table of options is left out with a
    ``SYNTHESIZER_BROKEN`` warning."""
    declared: list[tuple[str, dict[str, Any]]] = []
    for ep in sorted(entry_points(group=OPTIONS_GROUP), key=lambda e: e.name):
        try:
            declared.append((ep.name, _table(ep.load())))
        except Exception as exc:  # a broken distribution must not break every fit
            warnings.warn(BayesRiskWarning(
                f"the fit options of {ep.name!r} (entry point {ep.value!r} of group "
                f"{OPTIONS_GROUP!r}, from {_dist(ep)}) are left out: {type(exc).__name__}: "
                f"{exc}", code="SYNTHESIZER_BROKEN"), stacklevel=2)
    return merge_options(declared)


def _table(loaded: Any) -> dict[str, Any]:
    """A model's table of options, ``{setting: {"cli": option}}``, from what its entry point
    names: that table, or a sequence of ``ModelOption(...)`` (its entries)."""
    table = dict(loaded.items() if isinstance(loaded, Mapping) else tuple(loaded))
    if not all(isinstance(k, str) and isinstance(v, Mapping) and isinstance(v.get("cli"), CliOption)
               for k, v in table.items()):
        raise TypeError("not a table {setting: cli_option(...)} or a tuple of "
                        "bayes_risk.registry.ModelOption(...)")
    return table


def merge_options(declared: Any) -> dict[str, dict[str, Any]]:
    """One option per flag of the options several models declare.

    Parameters
    ----------
    declared : iterable of (str, mapping)
        Each model's name and its table of options (``{setting: {"cli": option}}``:
        :func:`ModelOption`'s entries).

    Returns
    -------
    dict
        ``setting -> {"cli": option, "models": names}``, in the order first declared, as the
        commands declare them (``bayes_risk.cli.parsers.add_argument_options``) and read them
        (``bayes_risk._specs.argument_values``): models declaring the same flag share one
        option (their choices united, ``models`` naming them, the help naming each model's
        text), stored as ``model_opt_<flag>`` and listed under "model-specific options". An
        option declared with another setting or other keywords than the first of its flag, or
        with the setting of another flag, is left out with a ``SYNTHESIZER_BROKEN`` warning.

    Examples
    --------
    >>> a = dict([ModelOption("--n-jobs", "n_jobs", "worker threads", {"type": int})])
    >>> merged = merge_options([("cart", a), ("rf", a)])
    >>> [(s, m["models"], m["cli"].help) for s, m in merged.items()]
    [('n_jobs', ('cart', 'rf'), 'cart, rf: worker threads')]
    """
    merged: dict[str, tuple[str, CliOption, tuple[str, ...]]] = {}  # by flag
    texts: dict[str, dict[str, str]] = {}
    for name, options in declared:
        for setting, meta in options.items():
            opt = meta["cli"]
            other = next((f for f, (s, _, _) in merged.items() if s == setting), opt.flag)
            if opt.flag not in merged and other == opt.flag:
                merged[opt.flag], texts[opt.flag] = (setting, opt, (name,)), {name: opt.help}
                continue
            first, before, models = merged[other]
            if other == opt.flag and name in models:  # the same installation seen twice
                continue
            both = _merge(before, opt) if other == opt.flag and first == setting else None
            if both is None:
                warnings.warn(BayesRiskWarning(
                    f"{opt.flag} of {name!r} is left out: {', '.join(models)} declare(s) "
                    + (f"it with setting {first!r} and other keywords." if other == opt.flag
                       else f"its setting {setting!r} as {other}."),
                    code="SYNTHESIZER_BROKEN"), stacklevel=3)
                continue
            merged[opt.flag] = (setting, both, models + (name,))
            texts[opt.flag][name] = opt.help
    return {setting: {"cli": replace(opt, help=_help(texts[flag]), group=MODEL_GROUP,
                                     dest=MODEL_DEST + flag.lstrip("-").replace("-", "_")),
                      "models": models}
            for flag, (setting, opt, models) in merged.items()}


def synthesizer_entry_points() -> dict[str, list[EntryPoint]]:
    """The registered entry points by name (several when distributions clash), not loaded."""
    out: dict[str, list[EntryPoint]] = {}
    for ep in entry_points(group=GROUP):
        if not any(e.value == ep.value for e in out.get(ep.name, [])):  # same install seen twice
            out.setdefault(ep.name, []).append(ep)
    return out


def list_synthesizers() -> list[str]:
    """Names of the registered synthesizers (the values :func:`get_synthesizer` accepts).

    Nothing is imported: a broken entry point is listed and fails only when it is asked for.
    """
    return sorted(synthesizer_entry_points())


def _dist(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"


def get_synthesizer(name: str, *, argument: str | None = None) -> type:
    """The synthesizer class registered under ``name``; a ``ValidationError`` for an unknown
    name (``UNKNOWN_SYNTHESIZER``; ``argument``: the caller's argument that gave it, named as
    the caller writes it, else "synthesizer method"), one registered twice
    (``SYNTHESIZER_CLASH``) or one that cannot be imported (``SYNTHESIZER_BROKEN``)."""
    eps = synthesizer_entry_points()
    # the entry points of group GROUP
    check_value(name, Options(tuple(sorted(eps))),
                "synthesizer method" if argument is None else arg_name(argument),
                code="UNKNOWN_SYNTHESIZER")
    found = eps[name]
    if len(found) > 1:
        raise ValidationError(
            f"synthesizer {name!r} is registered more than once (group {GROUP!r}): "
            + "; ".join(f"{e.value} from {_dist(e)}" for e in found)
            + ". Uninstall one of the distributions.", code="SYNTHESIZER_CLASH")
    ep = found[0]
    try:
        cls: Any = ep.load()
    except Exception as exc:  # any failure of third-party code is reported, with its cause
        raise ValidationError(
            f"synthesizer {name!r} (entry point {ep.value!r} of group {GROUP!r}, from "
            f"{_dist(ep)}) cannot be loaded: {type(exc).__name__}: {exc}",
            code="SYNTHESIZER_BROKEN",
        ) from exc
    if not isinstance(cls, type) or not callable(getattr(cls, "synthesize", None)):
        raise ValidationError(
            f"synthesizer {name!r} (entry point {ep.value!r} of group {GROUP!r}, from "
            f"{_dist(ep)}) is {type(cls).__name__} {cls!r}, not a synthesizer class with "
            "fit and synthesize (bayes_risk.models.BaseSynthesizer).",
            code="SYNTHESIZER_BROKEN")
    return cls


def setting_names(cls: type) -> set[str]:
    """The settings a synthesizer class takes.

    Parameters
    ----------
    cls : type
        A synthesizer class.

    Returns
    -------
    set of str
        Its ``setting_names()`` (a Bayesian model's sampler settings and a tree model's tree
        options each by its name), else the parameters of its ``__init__``; empty when the
        signature cannot be read.
    """
    import inspect

    try:
        return set(cls.setting_names() if hasattr(cls, "setting_names")
                   else inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return set()


def model_settings(cls: type, method: str, options: Mapping[str, Mapping[str, Any]],
                   given: Mapping[str, Any], *,
                   sampling: Mapping[str, Any] | None = None,
                   run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The model-specific settings given, checked against the synthesizer ``cls``.

    Parameters
    ----------
    cls : type
        The synthesizer class of ``method``.
    method : str
        Its registered name (:func:`get_synthesizer`), as messages name it.
    options : mapping
        The options that set settings, ``setting -> {"cli": option, "models": names}``
        (:func:`merge_options`), which messages name on the command line.
    given : mapping
        The settings given, by the model's own names (:func:`setting_names`; the command line
        gives its options' values by their settings, ``argument_values(options, vars(args))``);
        one given as ``None`` is not given.
    sampling : mapping, optional
        The sampler settings given (``draws=...``: :class:`~bayes_risk.models.Sampling`'s
        fields), refused unless ``cls`` takes each.
    run : mapping, optional
        Settings of the run (``random_seed``, ``progressbar``), each set only if ``cls`` takes
        it.

    Returns
    -------
    dict
        ``setting -> value``: ``sampling``, the settings given (lists as tuples), then ``run``;
        ``method_per_column`` and ``predictor_matrix``
        make one ``spec`` (a synthpop-style specification,
        :class:`~bayes_risk.models.SynthesisSpec`) for a model that takes one.

    Raises
    ------
    ValidationError
        A sampler setting or a setting ``cls`` does not take (``OPTION_CONFLICT``), naming
        the models the option applies to on the command line, the settings ``cls`` takes in
        Python.
    """
    params = setting_names(cls)
    refused = [arg_name(k) for k in sampling or {} if k not in params]
    if refused:
        raise ValidationError(f"{', '.join(refused)}: MCMC options do not apply to "
                              f"{_method(method)} ({cls.__name__} takes no such setting: it is not "
                              "sampled, or its sampler has no such setting); expected them only "
                              "with a model fitted by MCMC whose __init__ takes them.",
                              code="OPTION_CONFLICT")
    if "spec" in params:  # the options that make it
        params |= {"method_per_column", "predictor_matrix"}
    # the run's settings are the caller's own arguments, never options
    takes = params - {"random_seed", "progressbar"}
    out: dict[str, Any] = dict(sampling or {})
    for setting, value in given.items():
        if value is None:
            continue
        if setting not in takes:
            if not on_command_line() or setting not in options:
                raise ValidationError(
                    f"options: {setting!r} is not a setting of {_method(method)}; "
                    f"{cls.__name__} takes {', '.join(map(repr, sorted(takes)))}.",
                    code="OPTION_CONFLICT")
            flag = options[setting]["cli"].flag
            models = options[setting].get("models", ())
            raise ValidationError(f"{flag}: not an option of {_method(method)} "
                                  f"({cls.__name__} takes no setting {setting!r}; the option "
                                  f"applies to {' and '.join(map(_method, models))}).",
                                  code="OPTION_CONFLICT")
        out[setting] = tuple(value) if isinstance(value, list) else value
    if "method_per_column" in out or "predictor_matrix" in out:
        from bayes_risk.models import SynthesisSpec

        # a synthpop-style specification: the synthesized columns are its visit sequence
        out["spec"] = SynthesisSpec(method=out.pop("method_per_column", "cart"),
                                    predictor_matrix=out.pop("predictor_matrix", None))
    out.update({k: v for k, v in (run or {}).items() if k in params})
    return out


def check_required(cls: type, method: str, *, synthesized: Any, settings: Mapping[str, Any],
                   options: Mapping[str, Mapping[str, Any]]) -> None:
    """Refuse settings that leave out what the model cannot default (its
    ``ModelInfo.required``).

    Parameters
    ----------
    cls : type
        The synthesizer class of ``method``.
    method : str
        Its registered name, as messages name it.
    synthesized : sequence of str or None
        The columns to synthesize.
    settings : mapping
        The settings given.
    options : mapping
        The options that give settings, ``setting -> {"cli": option}`` (:func:`merge_options`),
        which messages name.

    Raises
    ------
    ValidationError
        A required setting not given, or one no option gives (``OPTION_REQUIRED``).
    """
    from bayes_risk.contract import capabilities

    # each as the caller gives it: an option with its values (--identifying COL [COL ...]),
    # in Python its key of ``options`` (the model's setting name)
    cli = on_command_line()
    shown = {setting: arg_name(opt.key, cli=opt.usage.removeprefix(opt.flag + " ")) if cli
             else f"options[{setting!r}]" for setting, opt in cli_arguments(options)}
    for name in capabilities(cls).required:
        if name == "synthesized":
            given, usage = bool(synthesized), arg_name("synthesized", cli="COL [COL ...]")
        else:
            value = settings.get(name)
            given = value is not None and not (isinstance(value, (list, tuple)) and not value)
            usage = shown.get(name)
            if usage is None:
                gives = "no option of this command" if cli else "no key of options"
                raise ValidationError(f"{_method(method)}: {cls.__name__} needs its setting "
                                      f"{name!r} (ModelInfo.required), which {gives} gives.",
                                      code="OPTION_REQUIRED")
        if not given:
            raise ValidationError(f"{usage} is required with {_method(method)}.",
                                  code="OPTION_REQUIRED")


def _method(method: str) -> str:
    """``method='cart'``, on the command line ``--method cart``."""
    return arg_name("method", repr(method), cli=method)


def check_option_columns(settings: dict[str, Any], options: Mapping[str, Mapping[str, Any]],
                         schema: Any) -> None:
    """Check the columns that model-specific options name against a table's schema.

    Parameters
    ----------
    settings : dict
        The settings of the options (:func:`model_settings`); an option of columns (metavar
        ``COL``) is replaced by its columns as a list.
    options : mapping
        The options that gave them, ``setting -> {"cli": option}`` (:func:`merge_options`).
    schema : Schema
        The table's schema.

    Raises
    ------
    SchemaError
        A column that is not in ``schema``, naming the option (``UNKNOWN_COLUMN``); a
        specification's ``COL=METHOD`` pairs are checked as its option's.
    """
    for setting, opt in cli_arguments(options):
        if opt.metavar == "COL" and settings.get(setting):
            settings[setting] = schema.check_columns(list(settings[setting]),
                                                     arg_name(opt.key))
    pairs = getattr(settings.get("spec"), "method", None)
    if isinstance(pairs, dict):  # else the spec's own check names it `method`
        key = dict(cli_arguments(options))["method_per_column"].key
        schema.check_columns(pairs, arg_name(key))
