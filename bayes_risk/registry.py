"""Synthesizers by name: the entry-point groups ``bayes_risk.synthesizers`` (``GROUP``) and
``bayes_risk.fit_options`` (``OPTIONS_GROUP``). See :doc:`/adding_a_model`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from bayes_risk.exceptions import BayesRiskWarning, ValidationError

__all__ = ["GROUP", "OPTIONS_GROUP", "ModelOption", "fit_options", "merge_options",
           "get_synthesizer", "list_synthesizers", "synthesizer_entry_points", "setting_names",
           "model_settings", "check_required", "check_option_columns"]

#: the entry-point group synthesizers are registered in
GROUP = "bayes_risk.synthesizers"
#: the entry-point group of the synthesizers' options of ``bayes-risk fit`` (same names)
OPTIONS_GROUP = "bayes_risk.fit_options"


@dataclass(frozen=True)
class ModelOption:
    """A model-specific option of ``bayes-risk fit`` (and, for the tree models and PMM, of
    ``synthesize`` and ``orders``), declared by the model it applies to.

    Parameters
    ----------
    flag : str
        Option string, e.g. ``"--components"``.
    setting : str
        The model's ``__init__`` setting the value is passed to.
    help : str
    kwargs : dict
        Further ``add_argument`` keywords, never ``default`` (not given: the model's default).
    models : tuple of str
        Filled in by :func:`fit_options`, never declared.
    """

    flag: str
    setting: str
    help: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    models: tuple[str, ...] = ()

    @property
    def dest(self) -> str:
        """``argparse`` destination (``--synthesis-mode`` → ``model_opt_synthesis_mode``)."""
        return "model_opt_" + self.flag.lstrip("-").replace("-", "_")

    @property
    def usage(self) -> str:
        """The option as an error message shows it (``--identifying COL [COL ...]``)."""
        meta = self.kwargs.get("metavar", "VALUE")
        meta = " ".join(meta) if isinstance(meta, tuple) else str(meta)
        return (f"{self.flag} {meta} [{meta} ...]" if self.kwargs.get("nargs") == "+"
                else f"{self.flag} {meta}")


def _merge(a: ModelOption, b: ModelOption) -> ModelOption | None:
    """One option of two models declaring the same flag (their choices united), or ``None``
    when they disagree on anything but the choices and the help."""
    ka = {k: v for k, v in a.kwargs.items() if k != "choices"}
    kb = {k: v for k, v in b.kwargs.items() if k != "choices"}
    if a.setting != b.setting or ka != kb or ("choices" in a.kwargs) != ("choices" in b.kwargs):
        return None
    kwargs = dict(a.kwargs)
    if "choices" in a.kwargs:
        kwargs["choices"] = [*a.kwargs["choices"],
                             *(c for c in b.kwargs["choices"] if c not in a.kwargs["choices"])]
    return replace(a, kwargs=kwargs, models=a.models + b.models)


def _help(texts: dict[str, str]) -> str:
    """The help of an option from each declaring model's text: ``"a, b: text"`` where they
    agree, ``"a: text; b: other"`` where they do not."""
    by_text: dict[str, list[str]] = {}
    for name, text in texts.items():
        by_text.setdefault(text, []).append(name)
    return "; ".join(f"{', '.join(names)}: {text}" for text, names in by_text.items())


def fit_options() -> tuple[ModelOption, ...]:
    """The model-specific options of ``bayes-risk fit`` (``OPTIONS_GROUP``), imported without
    the models; models declaring the same flag share one option. An entry point that cannot be
    loaded or clashes is left out with a ``SYNTHESIZER_BROKEN`` warning."""
    declared: list[tuple[str, tuple[ModelOption, ...]]] = []
    for ep in sorted(entry_points(group=OPTIONS_GROUP), key=lambda e: e.name):
        try:
            options = tuple(ep.load())
            if not all(isinstance(o, ModelOption) for o in options):
                raise TypeError("not a tuple of bayes_risk.registry.ModelOption")
        except Exception as exc:  # a broken distribution must not break every fit
            warnings.warn(BayesRiskWarning(
                f"the fit options of {ep.name!r} (entry point {ep.value!r} of group "
                f"{OPTIONS_GROUP!r}, from {_dist(ep)}) are left out: {type(exc).__name__}: "
                f"{exc}", code="SYNTHESIZER_BROKEN"), stacklevel=2)
            continue
        declared.append((ep.name, options))
    return merge_options(declared)


def merge_options(declared: Any) -> tuple[ModelOption, ...]:
    """One option per flag of the options several models declare.

    Parameters
    ----------
    declared : iterable of (str, tuple of ModelOption)
        Each model's name and its options.

    Returns
    -------
    tuple of ModelOption
        In the order first declared; models declaring the same flag share one option (their
        choices united, ``models`` naming them, the help naming each model's text). An option
        declared with another setting or other keywords than the first is left out with a
        ``SYNTHESIZER_BROKEN`` warning.

    Examples
    --------
    >>> a = ModelOption("--n-jobs", "n_jobs", "worker threads", {"type": int})
    >>> [(o.flag, o.models, o.help) for o in merge_options([("cart", (a,)), ("rf", (a,))])]
    [('--n-jobs', ('cart', 'rf'), 'cart, rf: worker threads')]
    """
    merged: dict[str, ModelOption] = {}
    texts: dict[str, dict[str, str]] = {}
    for name, options in declared:
        for opt in options:
            opt = replace(opt, models=(name,))
            if opt.flag not in merged:
                merged[opt.flag], texts[opt.flag] = opt, {name: opt.help}
                continue
            if name in merged[opt.flag].models:  # the same installation seen twice
                continue
            both = _merge(merged[opt.flag], opt)
            if both is None:
                warnings.warn(BayesRiskWarning(
                    f"{opt.flag} of {name!r} is left out: "
                    f"{', '.join(merged[opt.flag].models)} declare(s) it with setting "
                    f"{merged[opt.flag].setting!r} and other keywords.",
                    code="SYNTHESIZER_BROKEN"), stacklevel=3)
                continue
            merged[opt.flag] = both
            texts[opt.flag][name] = opt.help
    return tuple(replace(o, help=_help(texts[o.flag])) for o in merged.values())


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


def get_synthesizer(name: str) -> type:
    """The synthesizer class registered under ``name``; a ``ValidationError`` for an unknown
    name (``UNKNOWN_SYNTHESIZER``), one registered twice (``SYNTHESIZER_CLASH``) or one that
    cannot be imported (``SYNTHESIZER_BROKEN``)."""
    eps = synthesizer_entry_points()
    if not isinstance(name, str) or name not in eps:
        raise ValidationError(
            f"synthesizer method must be one of {sorted(eps)} (the entry points of group "
            f"{GROUP!r}). Got {name!r}.", code="UNKNOWN_SYNTHESIZER")
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


def model_settings(cls: type, method: str, given: Sequence[tuple[ModelOption, Any]], *,
                   convert: Mapping[str, Callable[[Any, str], Any]] | None = None,
                   sampling: Mapping[str, Any] | None = None,
                   run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The model-specific options given, as settings of the synthesizer ``cls``.

    Parameters
    ----------
    cls : type
        The synthesizer class of ``method``.
    method : str
        Its registered name (:func:`get_synthesizer`), as messages name it.
    given : sequence of (ModelOption, value)
        The options given and their values, in order.
    convert : mapping of str to callable, optional
        Per setting, ``convert[setting](value, flag)`` turns an option's value into the
        setting's, applied once the option is found to apply.
    sampling : mapping, optional
        The sampler settings given (``draws=...``: :class:`~bayes_risk.models.Sampling`'s
        fields), refused unless ``cls`` takes each.
    run : mapping, optional
        Settings of the run (``random_seed``, ``progressbar``), each set only if ``cls`` takes
        it.

    Returns
    -------
    dict
        ``setting -> value``: ``sampling``, the options (lists as tuples), then ``run``;
        ``method_per_column`` and ``predictor_matrix``
        make one ``spec`` (a synthpop-style specification,
        :class:`~bayes_risk.models.SynthesisSpec`) for a model that takes one.

    Raises
    ------
    ValidationError
        A sampler setting or an option of a setting ``cls`` does not take
        (``OPTION_CONFLICT``), naming the models the option applies to.
    """
    from bayes_risk.exceptions import arg_name

    params = setting_names(cls)
    refused = [arg_name(k) for k in sampling or {} if k not in params]
    if refused:
        raise ValidationError(f"{', '.join(refused)}: MCMC options do not apply to --method "
                              f"{method} ({cls.__name__} takes no such setting: it is not "
                              "sampled, or its sampler has no such setting); expected them only "
                              "with a model fitted by MCMC whose __init__ takes them.",
                              code="OPTION_CONFLICT")
    if "spec" in params:  # the options that make it
        params |= {"method_per_column", "predictor_matrix"}
    out: dict[str, Any] = dict(sampling or {})
    for opt, value in given:
        if opt.setting not in params:
            raise ValidationError(f"{opt.flag}: not an option of --method {method} "
                                  f"({cls.__name__} takes no setting {opt.setting!r}; the option "
                                  f"applies to --method {' and '.join(opt.models)}).",
                                  code="OPTION_CONFLICT")
        if convert and opt.setting in convert:
            value = convert[opt.setting](value, opt.flag)
        out[opt.setting] = tuple(value) if isinstance(value, list) else value
    if "method_per_column" in out or "predictor_matrix" in out:
        from bayes_risk.models import SynthesisSpec

        # a synthpop-style specification: the synthesized columns are its visit sequence
        out["spec"] = SynthesisSpec(method=out.pop("method_per_column", "cart"),
                                    predictor_matrix=out.pop("predictor_matrix", None))
    out.update({k: v for k, v in (run or {}).items() if k in params})
    return out


def check_required(cls: type, method: str, *, synthesized: Any, settings: Mapping[str, Any],
                   options: Sequence[ModelOption]) -> None:
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
    options : sequence of ModelOption
        The options that give settings, which messages name.

    Raises
    ------
    ValidationError
        A required setting not given, or one no option gives (``OPTION_REQUIRED``).
    """
    from bayes_risk.contract import capabilities

    shown = {o.setting: o.usage for o in options}
    for name in capabilities(cls).required:
        if name == "synthesized":
            given, usage = bool(synthesized), "--synthesize COL [COL ...]"
        else:
            value = settings.get(name)
            given = value is not None and not (isinstance(value, (list, tuple)) and not value)
            usage = shown.get(name)
            if usage is None:
                raise ValidationError(f"--method {method}: {cls.__name__} needs its setting "
                                      f"{name!r} (ModelInfo.required), which this command has no "
                                      "option for.", code="OPTION_REQUIRED")
        if not given:
            raise ValidationError(f"{usage} is required with --method {method}.",
                                  code="OPTION_REQUIRED")


def check_option_columns(settings: dict[str, Any], options: Sequence[ModelOption],
                         schema: Any) -> None:
    """Check the columns that model-specific options name against a table's schema.

    Parameters
    ----------
    settings : dict
        The settings of the options (:func:`model_settings`); an option of columns (metavar
        ``COL``) is replaced by its columns as a list.
    options : sequence of ModelOption
        The options that gave them.
    schema : Schema
        The table's schema.

    Raises
    ------
    SchemaError
        A column that is not in ``schema``, naming the option (``UNKNOWN_COLUMN``); a
        specification's ``COL=METHOD`` pairs are checked as ``--method-per-column``.
    """
    for opt in options:
        if opt.kwargs.get("metavar") == "COL" and settings.get(opt.setting):
            settings[opt.setting] = schema.check_columns(list(settings[opt.setting]), opt.flag)
    pairs = getattr(settings.get("spec"), "method", None)
    if isinstance(pairs, dict):  # else the spec's own check names it `method`
        schema.check_columns(pairs, "--method-per-column")
