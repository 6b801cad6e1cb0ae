"""The measures of the audit (:class:`Measure`), the one list the audit, its verdict and its
report iterate over: the package's own, each declared by its module of
``bayes_risk.auditing.measures``, then those of other distributions and of the session; each
record may say what its step costs (:class:`StepCost`, with :class:`Work` and :class:`Need`).
See :doc:`/adding_a_measure`.
"""

from __future__ import annotations

import functools

from bayes_risk._constraints import InstanceOf, check_value
from bayes_risk._thresholds import Threshold
from bayes_risk.auditing.outcome import Contributions, Measure, Need, StepCost, StepFigure, Work
from bayes_risk.exceptions import ValidationError

__all__ = ["GROUP", "Contributions", "Measure", "Need", "StepCost", "StepFigure", "Threshold",
           "Work", "get_measure", "measures", "register", "unregister"]

#: the entry-point group third-party measures are registered in
GROUP = "bayes_risk.measures"

#: measures registered for this session (:func:`register`), after the built-in ones
_ADDED: dict[str, Measure] = {}


def _builtin() -> tuple[Measure, ...]:
    """The package's measures, in the order the audit runs them: each module's record, read
    anew at each call (a test replaces one with ``monkeypatch.setattr(module, "MEASURE", ...)``)."""
    # imported here, not with this module: the measures import numpy and pandas, and a measure
    # of another distribution imports this module for Measure and register alone
    from bayes_risk.auditing.measures import (
        attacks,
        attribute,
        closest_match,
        disclosure,
        identification,
        membership,
        posterior_identification,
        relative_difference,
        utility,
    )

    return (utility.MEASURE, identification.MEASURE, posterior_identification.MEASURE,
            attribute.MEASURE, membership.MEASURE, attacks.MEASURE, disclosure.MEASURE,
            relative_difference.MEASURE, closest_match.MEASURE)


@functools.cache
def _entry_point_measures() -> tuple[Measure, ...]:
    """The measures of the entry-point group ``bayes_risk.measures``, loaded once a session."""
    from importlib.metadata import entry_points

    out = []
    for ep in entry_points(group=GROUP):
        try:
            m = ep.load()
        except Exception as exc:  # any failure of third-party code is reported, with its cause
            raise ValidationError(f"measure entry point {ep.name} = {ep.value!r} (group "
                                  f"{GROUP!r}) cannot be imported: {exc}",
                                  code="MEASURE_BROKEN") from exc
        out.append(check_value(m, InstanceOf(Measure, "a bayes_risk.measures.Measure"),
                               f"measure entry point {ep.name} = {ep.value!r} (group {GROUP!r})",
                               code="MEASURE_BROKEN"))
    return tuple(out)


def measures() -> tuple[Measure, ...]:
    """Every measure, in the order the audit runs them: the package's, then those of the
    entry-point group ``bayes_risk.measures``, then those registered with :func:`register`.

    Raises
    ------
    ValidationError
        ``MEASURE_CLASH`` when two measures have one name; ``MEASURE_BROKEN`` for an entry
        point that is not a :class:`Measure`.
    """
    out = [*_builtin(), *_entry_point_measures(), *_ADDED.values()]
    _check_unique(out)
    return tuple(out)


def _check_unique(found: list[Measure]) -> None:
    """Refuse two measures of one name, and one threshold name declared twice."""
    for what, names in (("measure name", [m.name for m in found]),
                        ("threshold name", [t.name for m in found for t in m.thresholds])):
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValidationError(f"{what} {twice} registered more than once (built in, "
                                  f"entry-point group {GROUP!r} or register()); give each "
                                  "its own.", code="MEASURE_CLASH")


def get_measure(name: str) -> Measure:
    """The measure named ``name`` (an audit step's name).

    Raises
    ------
    ValidationError
        For an unknown name, listing the registered ones (``UNKNOWN_MEASURE``).
    """
    found = measures()
    for m in found:
        if m.name == name:
            return m
    raise ValidationError(f"measure must be one of {[m.name for m in found]}. Got {name!r}.",
                          code="UNKNOWN_MEASURE")


def register(measure: Measure) -> Measure:
    """Add ``measure`` for this session (after every other); returns it.

    Raises
    ------
    ValidationError
        When ``measure`` is not a :class:`Measure`, or its name is taken (``MEASURE_CLASH``).
    """
    check_value(measure, InstanceOf(Measure, "a bayes_risk.measures.Measure"), "measure")
    _check_unique([*measures(), measure])
    _ADDED[measure.name] = measure
    return measure


def unregister(name: str) -> None:
    """Remove the measure ``name`` added by :func:`register` (the package's own and those of
    entry points stay).

    Raises
    ------
    ValidationError
        When no measure of that name was registered this session.
    """
    if name not in _ADDED:
        raise ValidationError(f"name: no measure {name!r} was added with register(); added: "
                              f"{sorted(_ADDED)}.", code="UNKNOWN_MEASURE")
    del _ADDED[name]
