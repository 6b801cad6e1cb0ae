"""synthpop's disclosure measures and the differencing of a release's implicates in one run, as
``bayes-risk disclosure`` runs them (:func:`disclosure_run`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from bayes_risk._constraints import OneOf, Requires, check_relations
from bayes_risk._specs import cli_option

__all__ = ["DisclosureRun", "disclosure_run"]

#: the measures' ``keys`` with their ``target``, or the differencing check (``selected``: its)
_RELATIONS = (
    Requires("selected", "differencing", why="the differencing check reads it"),
    Requires("keys", "target", code="OPTION_REQUIRED", why="synthpop's measures"),
    Requires("target", "keys", code="OPTION_REQUIRED", why="synthpop's measures"),
    OneOf(("keys", "differencing"), required=True, only=False, code="OPTION_REQUIRED"),
)


@dataclass(frozen=True)
class DisclosureRun:
    """The measures and the differencing check of :func:`disclosure_run` (``None``: not run).

    Attributes
    ----------
    measures : DisclosureMeasures or None
    differencing : DifferencingResult or None
    """

    measures: Any
    differencing: Any

    def to_dict(self) -> dict[str, Any] | None:
        """The measures' ``to_dict()`` (``None`` without them: the differencing check is a file
        of its own)."""
        return None if self.measures is None else self.measures.to_dict()

    def summary_text(self) -> str:
        """The measures' summary, then the differencing check's, a blank line between."""
        return "\n\n".join(r.summary().as_text().strip() for r in (self.measures,
                                                                    self.differencing)
                           if r is not None)


def disclosure_run(original: Any, synthetic: Any, *, measures: Mapping[str, Any] | None = None,
                   schema: Any = None, exclude: Any = None,
                   differencing: Annotated[bool, cli_option(
                       "--differencing", "also compare the implicates of a partially synthetic "
                       "release: the records whose values differ between them are revealed as "
                       "the ones selected for synthesis (Hawala 2008); writes differencing.json "
                       "and differencing.csv. Alone (without --keys/--target) it runs only this "
                       "check", action="store_true")] = False,
                   selected: Any = None) -> DisclosureRun:
    """:func:`~bayes_risk.disclosure.disclosure_measures` of ``measures`` (not run without their
    ``keys``) and, with ``differencing``, :func:`~bayes_risk.disclosure.differencing_check`
    (``selected``: its ``records``), first.

    Parameters
    ----------
    original, synthetic
        As the measures take them.
    measures : mapping, optional
        Arguments of :func:`~bayes_risk.disclosure.disclosure_measures` (``keys``, ``target``,
        ...); the measures are run when it holds ``keys``.
    schema, exclude : optional
        The measures' schema and :class:`~bayes_risk.disclosure.ExclusionSpec`.
    differencing : bool
        Run the differencing check of the implicates.
    selected : optional
        The records selected for synthesis (the check's ``records``).

    Returns
    -------
    DisclosureRun

    Raises
    ------
    ValidationError
        Nothing to run, ``keys`` without ``target`` (or the reverse), ``selected`` without
        ``differencing`` (:data:`_RELATIONS`), before any work.
    """
    measures = dict(measures or {})
    check_relations({**measures, "selected": selected, "differencing": differencing}, _RELATIONS)
    from bayes_risk.disclosure.differencing import differencing_check
    from bayes_risk.disclosure.measures import disclosure_measures

    diff = differencing_check(original, synthetic, records=selected) if differencing else None
    result = (None if measures.get("keys") is None else
              disclosure_measures(original, synthetic, schema=schema, exclude=exclude,
                                  **measures))
    return DisclosureRun(result, diff)
