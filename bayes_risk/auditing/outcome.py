"""What one step of an audit is and what it gave: :class:`Measure`, the record of a measure's
step, settings rows, verdict and report sections, and :class:`StepOutcome`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bayes_risk.exceptions import ValidationError

if TYPE_CHECKING:  # the plan's module imports pandas; bayes_risk.measures stays light
    from bayes_risk.auditing.plan import AuditPlan

__all__ = ["Measure", "StepOutcome", "step_file", "where_text"]


@dataclass(frozen=True)
class Measure:
    """One measure of the audit: what computes it and what reads it, each named by the object
    itself; listed by :func:`bayes_risk.measures.measures`, added by
    :func:`bayes_risk.measures.register` (import it as ``bayes_risk.measures.Measure``). Defined
    below the measures' own modules, each of which ends with its record (``MEASURE``). Every
    field is described in :doc:`/adding_a_measure`.

    Parameters
    ----------
    name : str
        The audit step's name (``AuditSettings(skip=[name])``, its sub-folder).
    title : str
        The step's heading.
    step : callable
        The audit step: ``step(ctx: StepContext) -> StepOutcome``.
    function : callable, optional
        The public function that computes the measure.
    result : type, optional
        The class ``function`` returns.
    verdict : callable, optional
        The builder of the step's verdict lines (``None``: no verdict line).
    sections : tuple of callables
        The builders of the step's report sections, in order.
    settings : callable, optional
        ``settings(plan: AuditPlan) -> None``: adds the measure's rows to the settings table
        (``plan.add(name, ...)``), called once the plan is resolved (``None``: no row).

    Raises
    ------
    ValidationError
        ``MEASURE_BROKEN`` when a field naming code holds something other than a callable (an
        import path ``"module:attribute"`` included: import the object and name it).
    """

    name: str
    title: str
    step: Callable[..., Any]
    function: Callable[..., Any] | None = None
    result: type | None = None
    verdict: Callable[..., Any] | None = None
    sections: tuple[Callable[..., Any], ...] = ()
    settings: Callable[[AuditPlan], None] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.sections, tuple):
            raise ValidationError(f"Measure {self.name!r}: sections must be a tuple of "
                                  f"functions; got {self.sections!r}.", code="MEASURE_BROKEN")
        named = {"step": self.step, "function": self.function, "result": self.result,
                 "verdict": self.verdict, "settings": self.settings,
                 **{f"sections[{i}]": s for i, s in enumerate(self.sections)}}
        for key, obj in named.items():
            if (obj is not None or key == "step") and not callable(obj):
                raise ValidationError(
                    f"Measure {self.name!r}: {key} must be the function or class itself; got "
                    f"{obj!r}" + (" (an import path is not read: import the object and name "
                                  "it)" if isinstance(obj, str) else "") + ".",
                    code="MEASURE_BROKEN")


@dataclass
class StepOutcome:
    """One step of an audit.

    Attributes
    ----------
    name, title : str
        Step identifier (``"identification"``) and heading.
    status : {"ran", "skipped", "failed"}
        ``reason`` says why a step was skipped or failed (``extra["traceback"]``: its traceback).
    result : object
        The measure's result object, or ``None``.
    folder : str or None
        Sub-folder of the audit's ``out`` holding the step's files.
    files : list of str
        The files written, relative to ``folder``.
    warnings : list of dict
        Every warning the step raised: ``code``, ``category``, ``message``, ``count``.
    seconds : float
        Wall time of the step.
    where : dict
        Where the step ran (:func:`bayes_risk.executors.describe`, and ``part``: what of the
        step ran on the audit's executor, the rest in process); empty for a skipped step.
    """

    name: str
    status: str
    result: Any = None
    reason: str | None = None
    folder: str | None = None
    files: list[str] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    title: str = ""
    where: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


def where_text(s: StepOutcome) -> str:
    """Where step ``s`` ran, as the report says it: "in process", or the executor and what of
    the step ran there ("" for a step that did not run)."""
    if not s.where:
        return ""
    part = s.where.get("part")
    return s.where["text"] + (f": {part}" if part else "")


def step_file(s: StepOutcome, file: str) -> str | None:
    """``file`` of step ``s``, relative to the audit folder (``None``: nothing written)."""
    return f"{s.folder}/{file}" if s.folder else None
