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


#: a field of a :class:`Measure` naming code: the object itself, or its import path
#: ``"package.module:attribute"`` written out (imported when used, :func:`load`)
Ref = Any


@dataclass(frozen=True)
class Measure:
    """One measure of the package: what computes it and what reads it. Each field naming code
    holds the object itself (a measure defined in one module names its functions) or its import
    path ``"package.module:attribute"``, written out in full and imported when used
    (:func:`load`): the package's own measures are named by path, so that importing this module
    imports only the standard library and ``bayes-risk --help`` stays instant. Every field is
    described in :doc:`/adding_a_measure`.

    Parameters
    ----------
    name : str
        The audit step's name (``AuditSettings(skip=[name])``, its sub-folder).
    title : str
        The step's heading.
    step : callable or str
        The audit step: ``step(ctx: StepContext) -> StepOutcome``.
    function, result : callable or str, optional
        The public function that computes the measure, and the class it returns.
    verdict : callable or str, optional
        The builder of the step's verdict lines (``None``: no verdict line).
    sections : tuple of callables or str
        The builders of the step's report sections, in order.
    command : str, optional
        The sub-command of ``bayes-risk`` that computes the measure alone.
    parser : callable or str, optional
        ``add_parser(subparsers)``, declaring ``command``'s arguments (needed with a command).
    """

    name: str
    title: str
    step: Ref
    function: Ref | None = None
    result: Ref | None = None
    verdict: Ref | None = None
    sections: tuple[Ref, ...] = ()
    command: str | None = None
    parser: Ref | None = None


#: the measures of the package, in the order the audit runs them: each one's step, verdict and
#: report sections are in its module of bayes_risk.auditing.measures; every path written out,
#: so that a reader (or grep) finds each function's caller here
_BUILTIN: tuple[Measure, ...] = (
    Measure("utility", "Utility",
            step="bayes_risk.auditing.measures.utility:utility_step",
            function="bayes_risk.utility.summary:utility_summary",
            result="bayes_risk.results.utility:UtilitySummary",
            verdict="bayes_risk.auditing.measures.utility:utility_lines",
            sections=("bayes_risk.auditing.measures.utility:utility_section",
                      "bayes_risk.auditing.measures.utility:comparisons_section"),
            command="utility", parser="bayes_risk.cli.parsers.utility:add_parser"),
    Measure("identification", "Identification risk",
            step="bayes_risk.auditing.measures.identification:identification_step",
            function="bayes_risk.identification.api:identification_risk",
            result="bayes_risk.results.identification:IdentificationResult",
            verdict="bayes_risk.auditing.measures.identification:identification_lines",
            sections=("bayes_risk.auditing.measures.identification:identification_section",),
            command="identification",
            parser="bayes_risk.cli.parsers.identification:add_parser"),
    Measure("posterior_identification", "Posterior Monte Carlo identification risk",
            step=("bayes_risk.auditing.measures.posterior_identification:"
                  "posterior_identification_step"),
            function="bayes_risk.identification.api:identification_risk",
            result="bayes_risk.results.identification:IdentificationResult",
            sections=(("bayes_risk.auditing.measures.posterior_identification:"
                       "posterior_identification_section"),)),
    Measure("attribute", "Attribute risk",
            step="bayes_risk.auditing.measures.attribute:attribute_step",
            function="bayes_risk.attribute.api:attribute_risk",
            result="bayes_risk.results.attribute:AttributeRiskResult",
            verdict="bayes_risk.auditing.measures.attribute:attribute_lines",
            sections=("bayes_risk.auditing.measures.attribute:attribute_section",),
            command="attribute", parser="bayes_risk.cli.parsers.attribute:add_parser"),
    Measure("membership", "Membership risk",
            step="bayes_risk.auditing.measures.membership:membership_step",
            function="bayes_risk.membership.api:membership_risk",
            result="bayes_risk.results.membership:MembershipRiskResult",
            verdict="bayes_risk.auditing.measures.membership:membership_lines",
            sections=("bayes_risk.auditing.measures.membership:membership_section",),
            command="membership", parser="bayes_risk.cli.parsers.membership:add_parser"),
    Measure("attacks", "Singling out, linkability and inference (anonymeter)",
            step="bayes_risk.auditing.measures.attacks:attacks_step",
            function="bayes_risk.attacks.singling_out:singling_out_risk",
            result="bayes_risk.results.attacks:SinglingOutResult",
            verdict="bayes_risk.auditing.measures.attacks:attacks_lines",
            sections=("bayes_risk.auditing.measures.attacks:attacks_section",),
            command="attacks", parser="bayes_risk.cli.parsers.attacks:add_parser"),
    Measure("disclosure", "Empirical disclosure measures (synthpop)",
            step="bayes_risk.auditing.measures.disclosure:disclosure_step",
            function="bayes_risk.disclosure.measures:disclosure_measures",
            result="bayes_risk.results.disclosure:DisclosureByTarget",
            verdict="bayes_risk.auditing.measures.disclosure:disclosure_lines",
            sections=("bayes_risk.auditing.measures.disclosure:disclosure_section",),
            command="disclosure", parser="bayes_risk.cli.parsers.disclosure:add_parser"),
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
    """Refuse two measures of one name or one sub-command, and a sub-command without parser."""
    for m in found:
        if m.command is not None and m.parser is None:
            raise ValidationError(f"measure {m.name!r} has command {m.command!r} but no parser: "
                                  "give parser=add_parser (the function declaring its "
                                  "arguments) or its import path.", code="MEASURE_BROKEN")
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


def load(ref: Ref) -> Any:
    """The object a field of a :class:`Measure` names: ``ref`` itself, or the object at the
    import path ``"package.module:attribute"`` (imported now).

    Raises
    ------
    ValidationError
        When the module or the attribute does not exist (``MEASURE_BROKEN``).
    """
    if not isinstance(ref, str):
        return ref
    path = ref
    module, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ValidationError(f"measure import path {path!r} does not resolve: {exc}",
                              code="MEASURE_BROKEN") from exc
    return obj
