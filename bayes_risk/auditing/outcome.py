"""What one step of an audit gave: :class:`StepOutcome`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["StepOutcome", "step_file", "where_text"]


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
