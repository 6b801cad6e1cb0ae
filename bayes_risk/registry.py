"""Synthesizers by name: the entry-point group ``bayes_risk.synthesizers``.

Every synthesizer the command line, persistence and the audit can name is registered as an entry
point of the group :data:`GROUP`, the built-in models in the package's own ``pyproject.toml``::

    [project.entry-points."bayes_risk.synthesizers"]
    dpmpm = "bayes_risk.models:DPMPM"

and a model of another distribution in that distribution's metadata, the same way (docs page
"Adding a model"). The name is what ``bayes-risk fit --method NAME`` takes and what a saved
model's ``model.json`` records under ``"method"``.

Entry points are listed without importing them; a class is imported only when its name is asked
for, so a broken third-party entry point affects only the commands that name it, with a
:class:`~bayes_risk.exceptions.ValidationError` of code ``SYNTHESIZER_BROKEN`` naming the
entry point and its distribution.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import Any

from bayes_risk.exceptions import ValidationError

__all__ = ["GROUP", "get_synthesizer", "list_synthesizers", "synthesizer_entry_points"]

#: the entry-point group synthesizers are registered in
GROUP = "bayes_risk.synthesizers"


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
    """The synthesizer class registered under ``name``.

    Raises
    ------
    ValidationError
        For an unknown name (listing the registered ones; code ``UNKNOWN_SYNTHESIZER``), a name
        registered by two distributions (``SYNTHESIZER_CLASH``), or an entry point that cannot
        be imported or is not a class with ``synthesize`` (``SYNTHESIZER_BROKEN``).
    """
    eps = synthesizer_entry_points()
    if not isinstance(name, str) or name not in eps:
        raise ValidationError(
            f"synthesizer method must be one of {sorted(eps)} (the entry points of group "
            f"{GROUP!r}). Got {name!r}.", code="UNKNOWN_SYNTHESIZER",
        )
    found = eps[name]
    if len(found) > 1:
        raise ValidationError(
            f"synthesizer {name!r} is registered more than once (group {GROUP!r}): "
            + "; ".join(f"{e.value} from {_dist(e)}" for e in found)
            + ". Uninstall one of the distributions.", code="SYNTHESIZER_CLASH",
        )
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
            code="SYNTHESIZER_BROKEN",
        )
    return cls
