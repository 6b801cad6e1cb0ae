"""The measures by name: one :class:`Measure` record each, the single place a measure is declared.

The audit's plan, step loop, verdict lines, report sections and the command line's sub-commands
all iterate over :func:`measures`. A record holds import paths as strings (:func:`load` imports
one when used), so importing this module imports only the standard library. Another
distribution registers a measure as an entry point of :data:`GROUP`, a session with
:func:`register`. See :doc:`/adding_a_measure`.
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
    """One measure of the package: what computes it and what reads it
    (:doc:`/adding_a_measure` describes every field).

    Every reference to code is an import path ``"package.module:attribute"``, imported by
    :func:`load` when it is used.

    Parameters
    ----------
    name : str
        The audit step's name (``AuditSettings(skip=[name])``, ``AuditResult.step(name)``, its
        sub-folder).
    title : str
        The step's heading in the progress lines, the report and the summary.
    step : str
        The audit step: ``step(ctx: StepContext) -> StepOutcome``.
    function : str, optional
        The public function that computes the measure (what ``step`` calls).
    result : str, optional
        The class of the result ``function`` returns.
    verdict : str, optional
        The builder of the step's verdict lines: ``lines(plan, outcome) -> list[Verdict |
        Baseline]``; ``None``: the step has no verdict line.
    sections : tuple of str
        The builders of the step's report sections, in order: ``section(result, links) ->
        Section`` (:func:`bayes_risk.auditing.render.step_section`).
    command : str, optional
        The sub-command of ``bayes-risk`` that computes the measure alone (``None``: none; not
        added for an entry point's measure).
    parser : str, optional
        The module declaring ``command``'s arguments (``add_parser(subparsers)``). Default:
        ``bayes_risk.cli.parsers.<command>`` (hyphens as underscores).
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


_A = "bayes_risk.auditing"
_R = f"{_A}.render"

#: the measures of the package, in the order the audit runs them
_BUILTIN: tuple[Measure, ...] = (
    Measure("utility", "Utility", f"{_A}.steps:utility_step",
            function="bayes_risk.utility.summary:utility_summary",
            result="bayes_risk.results.utility:UtilitySummary",
            verdict=f"{_A}.verdicts:utility_lines",
            sections=(f"{_R}:utility_section", f"{_R}:comparisons_section"),
            command="utility"),
    Measure("identification", "Identification risk", f"{_A}.steps:identification_step",
            function="bayes_risk.identification.api:identification_risk",
            result="bayes_risk.results.identification:IdentificationResult",
            verdict=f"{_A}.verdicts:identification_lines",
            sections=(f"{_R}:identification_section",), command="identification"),
    Measure("posterior_identification", "Posterior Monte Carlo identification risk",
            f"{_A}.steps:posterior_identification_step",
            function="bayes_risk.identification.api:identification_risk",
            result="bayes_risk.results.identification:IdentificationResult",
            sections=(f"{_R}:posterior_identification_section",)),
    Measure("attribute", "Attribute risk", f"{_A}.steps:attribute_step",
            function="bayes_risk.attribute.api:attribute_risk",
            result="bayes_risk.results.attribute:AttributeRiskResult",
            verdict=f"{_A}.verdicts:attribute_lines",
            sections=(f"{_R}:attribute_section",), command="attribute"),
    Measure("membership", "Membership risk", f"{_A}.steps:membership_step",
            function="bayes_risk.membership.api:membership_risk",
            result="bayes_risk.results.membership:MembershipRiskResult",
            verdict=f"{_A}.verdicts:membership_lines",
            sections=(f"{_R}:membership_section",), command="membership"),
    Measure("attacks", "Singling out and linkability (anonymeter)",
            f"{_A}.attacks_step:attacks_step",
            function="bayes_risk.attacks.singling_out:singling_out_risk",
            result="bayes_risk.results.attacks:SinglingOutResult",
            verdict=f"{_A}.verdicts:attacks_lines",
            sections=(f"{_R}:attacks_section",), command="attacks"),
    Measure("disclosure", "Empirical disclosure measures (synthpop)",
            f"{_A}.disclosure_step:disclosure_step",
            function="bayes_risk.disclosure.measures:disclosure_measures",
            result="bayes_risk.results.disclosure:DisclosureByTarget",
            verdict=f"{_A}.verdicts:disclosure_lines",
            sections=(f"{_R}:disclosure_section",), command="disclosure"),
)

#: measures registered for this session (:func:`register`), after the built-in ones
_ADDED: dict[str, Measure] = {}


@functools.cache
def _entry_point_measures() -> tuple[Measure, ...]:
    """The measures of the entry-point group ``bayes_risk.measures``, each loaded (its module
    declares a :class:`Measure` and imports nothing heavy); read once a session (reading the
    installed distributions' metadata takes tens of milliseconds)."""
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
