"""synthpop's disclosure measures and the differencing of a release's implicates in one run, as
``bayes-risk disclosure`` runs them (:func:`disclosure_run`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DisclosureRun", "disclosure_run"]


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


def disclosure_run(original: Any, synthetic: Any, *, keys: Sequence[str] | None = None,
                   schema: Any = None, exclude: Any = None, differencing: bool = False,
                   selected: Any = None, **kwargs: Any) -> DisclosureRun:
    """:func:`~bayes_risk.disclosure.disclosure_measures` of ``keys`` (not run without them)
    and, with ``differencing``, :func:`~bayes_risk.disclosure.differencing_check` (``selected``:
    its ``records``), first.

    Parameters
    ----------
    original, synthetic
        As the measures take them.
    keys : sequence of str, optional
        The measures' keys.
    schema, exclude : optional
        The measures' schema and :class:`~bayes_risk.disclosure.ExclusionSpec`.
    differencing : bool
        Run the differencing check of the implicates.
    selected : optional
        The records selected for synthesis (the check's ``records``).
    **kwargs
        The measures' other arguments (``target``, ``schema``, ``exclude``, ...).

    Returns
    -------
    DisclosureRun
    """
    from bayes_risk.disclosure.differencing import differencing_check
    from bayes_risk.disclosure.measures import disclosure_measures

    diff = differencing_check(original, synthetic, records=selected) if differencing else None
    measures = (None if keys is None else
                disclosure_measures(original, synthetic, keys=keys, schema=schema,
                                    exclude=exclude, **kwargs))
    return DisclosureRun(measures, diff)
