"""Synthesizers by name: the entry-point groups ``bayes_risk.synthesizers`` (``GROUP``) and
``bayes_risk.fit_options`` (``OPTIONS_GROUP``). See :doc:`/adding_a_model`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from bayes_risk.exceptions import BayesRiskWarning, ValidationError

__all__ = ["GROUP", "OPTIONS_GROUP", "ModelOption", "fit_options", "merge_options",
           "get_synthesizer", "list_synthesizers", "synthesizer_entry_points"]

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
