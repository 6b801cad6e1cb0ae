"""The measures by name (:class:`Measure`), the one list the audit and the command line iterate
over; records hold import paths, so importing this module imports only the standard library.
See :doc:`/adding_a_measure`.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Any

from bayes_risk.exceptions import ValidationError

__all__ = ["GROUP", "Measure", "get_measure", "load", "measures", "register", "unregister"]

#: the entry-point group third-party measures are registered in
GROUP = "bayes_risk.measures"


@dataclass(frozen=True)
class Measure:
    """One measure of the package: what computes it and what reads it. Code is named by import
    paths ``"package.module:attribute"``, imported when used (:func:`load`); every field is
    described in :doc:`/adding_a_measure`.

    Parameters
    ----------
    name : str
        The audit step's name (``AuditSettings(skip=[name])``, its sub-folder).
    title : str
        The step's heading.
    step : str
        The audit step: ``step(ctx: StepContext) -> StepOutcome``.
    function, result : str, optional
        The public function that computes the measure, and the class it returns.
    verdict : str, optional
        The builder of the step's verdict lines (``None``: no verdict line).
    sections : tuple of str
        The builders of the step's report sections, in order.
    command : str, optional
        The sub-command of ``bayes-risk`` that computes the measure alone.
    parser : str, optional
        The module declaring ``command``'s arguments (default
        ``bayes_risk.cli.parsers.<command>``).
    """

    name: str
    title: str
    step: str
    function: str | None = None
    result: str | None = None
    verdict: str | None = None
    sections: tuple[str, ...] = ()
    command: str | None = None
    parser: str | None = None

    @property
    def parser_module(self) -> str | None:
        """The module declaring the sub-command's arguments (``None`` without a command)."""
        if self.command is None:
            return None
        return self.parser or f"bayes_risk.cli.parsers.{self.command.replace('-', '_')}"


def _builtin(name: str, title: str, function: str, result: str, *, step: str = "steps",
             verdict: bool = True, sections: tuple[str, ...] | None = None,
             command: str | None = None) -> Measure:
    """A measure of the package, its code in ``bayes_risk.auditing`` named after it."""
    a, r = "bayes_risk.auditing", "bayes_risk.auditing.render"
    return Measure(name, title, f"{a}.{step}:{name}_step", function=f"bayes_risk.{function}",
                   result=f"bayes_risk.results.{result}",
                   verdict=f"{a}.verdicts:{name}_lines" if verdict else None,
                   sections=tuple(f"{r}:{x}_section" for x in sections or (name,)),
                   command=command)


#: the measures of the package, in the order the audit runs them
_BUILTIN: tuple[Measure, ...] = (
    _builtin("utility", "Utility", "utility.summary:utility_summary",
             "utility:UtilitySummary", sections=("utility", "comparisons"), command="utility"),
    _builtin("identification", "Identification risk",
             "identification.api:identification_risk",
             "identification:IdentificationResult", command="identification"),
    _builtin("posterior_identification", "Posterior Monte Carlo identification risk",
             "identification.api:identification_risk",
             "identification:IdentificationResult", verdict=False),
    _builtin("attribute", "Attribute risk", "attribute.api:attribute_risk",
             "attribute:AttributeRiskResult", command="attribute"),
    _builtin("membership", "Membership risk", "membership.api:membership_risk",
             "membership:MembershipRiskResult", command="membership"),
    _builtin("attacks", "Singling out, linkability and inference (anonymeter)",
             "attacks.singling_out:singling_out_risk", "attacks:SinglingOutResult",
             step="attacks_step", command="attacks"),
    _builtin("disclosure", "Empirical disclosure measures (synthpop)",
             "disclosure.measures:disclosure_measures", "disclosure:DisclosureByTarget",
             step="disclosure_step", command="disclosure"),
)

#: measures registered for this session (:func:`register`), after the built-in ones
_ADDED: dict[str, Measure] = {}


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
        if not isinstance(m, Measure):
            raise ValidationError(f"measure entry point {ep.name} = {ep.value!r} (group "
                                  f"{GROUP!r}) is a {type(m).__name__}; expected a "
                                  "bayes_risk.measures.Measure.", code="MEASURE_BROKEN")
        out.append(m)
    return tuple(out)


def measures(*, installed: bool = True) -> tuple[Measure, ...]:
    """Every measure, in the order the audit runs them: the package's, then those of the
    entry-point group ``bayes_risk.measures``, then those registered with :func:`register`.

    Parameters
    ----------
    installed : bool, default True
        Include the measures of other distributions (the entry points). ``False`` leaves the
        installed metadata unread: building ``bayes-risk --help`` does so to stay instant, so a
        measure of another distribution has no sub-command of ``bayes-risk`` (it runs in the
        audit all the same).

    Raises
    ------
    ValidationError
        ``MEASURE_CLASH`` when two measures have one name or one sub-command;
        ``MEASURE_BROKEN`` for an entry point that is not a :class:`Measure`.
    """
    out = [*_BUILTIN, *(_entry_point_measures() if installed else ()), *_ADDED.values()]
    _check_unique(out)
    return tuple(out)


def _check_unique(found: list[Measure]) -> None:
    for key in ("name", "command"):
        values = [getattr(m, key) for m in found if getattr(m, key) is not None]
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise ValidationError(f"measure {key} {twice} registered more than once (built in, "
                                  f"entry-point group {GROUP!r} or register()); give each "
                                  "measure its own.", code="MEASURE_CLASH")


def get_measure(name: str) -> Measure:
    """The measure named ``name`` (an audit step's name).

    Raises
    ------
    ValidationError
        For an unknown name, listing the registered ones (``UNKNOWN_MEASURE``).
    """
    for m in measures():
        if m.name == name:
            return m
    raise ValidationError(f"measure must be one of {[m.name for m in measures()]}. Got "
                          f"{name!r}.", code="UNKNOWN_MEASURE")


def register(measure: Measure) -> Measure:
    """Add ``measure`` for this session (after every other); returns it.

    Raises
    ------
    ValidationError
        When ``measure`` is not a :class:`Measure`, or its name or sub-command is taken
        (``MEASURE_CLASH``).
    """
    if not isinstance(measure, Measure):
        raise ValidationError(f"measure must be a bayes_risk.measures.Measure. Got "
                              f"{type(measure).__name__}.", code="INVALID_ARGUMENT")
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


def load(path: str) -> Any:
    """The object at the import path ``"package.module:attribute"`` (imported now).

    Raises
    ------
    ValidationError
        When the module or the attribute does not exist (``MEASURE_BROKEN``).
    """
    module, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ValidationError(f"measure import path {path!r} does not resolve: {exc}",
                              code="MEASURE_BROKEN") from exc
    return obj
