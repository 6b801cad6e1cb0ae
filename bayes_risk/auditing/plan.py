"""What an audit runs and with which settings: :class:`AuditPlan`, what the audit resolved
from its :class:`~bayes_risk.AuditSettings`, the data and the release, with its settings table
(:doc:`/user_guide/audit`). The settings and the table's rows are resolved in
``bayes_risk.auditing.resolve``, the thresholds declared by the measures' records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bayes_risk.auditing.settings import AuditSettings

__all__ = ["AuditPlan", "Setting", "ATTACK_OPTIONS", "CONVENTION_RADIUS",
           "cli_step_name", "post_processed", "post_processing", "post_processing_text",
           "radius_text", "reads_likelihood", "skip_arg"]


#: the attacks' options in an audit: anonymeter's defaults
ATTACK_OPTIONS: dict[str, float] = {"n_attacks": 500, "n_cols": 3, "n_neighbors": 1,
                                    "tolerance": 0.05}

#: Hornby & Hu's (2021) convention: one percentage radius on every numeric key, reported
#: beside the worst case, never instead of it
CONVENTION_RADIUS = 0.1


@dataclass(frozen=True)
class Setting:
    """One setting of the audit, with where its value came from."""

    step: str
    name: str
    value: Any
    source: str  # "given", "release manifest", "default", "inferred"
    note: str = ""


#: the fields of :class:`AuditPlan` named as an option of ``AuditSettings``: each holds the
#: value resolved from the option, never a copy of it (the option itself is ``plan.given``)
_RESOLVED: dict[str, str] = {
    "sweep": "the radii searched, 0 (exact matching) added; () when the search does not run",
    "skip": "the steps' names, as measures() spells them, each once",
    "ngroups_target": "the groups of each target (None for a categorical target)",
    "attribute_records": "the records' positions, checked against the original",
    "membership_selection": "the selection rule, parsed (membership.selection.as_selection)",
    "linkability_columns": "the two tables, the default filled in (None: every column known)",
    "thresholds": "every registered measure's threshold, the given ones checked (Thresholds)",
}


@dataclass
class AuditPlan:
    """What the audit decided from its settings, the data and the release
    (``AuditResult.plan``): the columns known and synthesized, the radii, the defaults resolved,
    the steps withheld and why, and the settings table with each value's source.

    What the user asked is :attr:`given`, the audit's one :class:`~bayes_risk.AuditSettings`:
    a step reads an option there (``plan.given.combining_rules``); the plan holds only what
    was resolved from it. The fields named as an option of ``AuditSettings`` hold the resolved
    value (``_RESOLVED`` says how each is resolved; a test refuses any other such field).
    """

    #: what the user asked: the audit's one settings object
    given: AuditSettings
    n_records: int
    m: int
    method: str | None
    synthesized: list[str]
    known_unsynthesized: list[str]
    known_synthesized: list[str]
    radius: dict[str, float]
    sweep: tuple[float, ...]
    disclosure_targets: list[str]
    disclosure_keys: dict[str, list[str]]
    ngroups_target: dict[str, int | None]
    attribute_source: str | None  # "model", "cart plug-in", "rf plug-in" or None
    attribute_records: list[int] | None
    #: the verdict lines' thresholds (``Thresholds``, which reads the registered measures: not
    #: imported here, below them)
    thresholds: Mapping[str, float]
    random_seed: int
    #: steps the caller asked to skip
    skip: tuple[str, ...] = ()
    #: steps that do not apply to this release, with the reason
    withheld: dict[str, str] = field(default_factory=dict)
    #: withheld steps whose lines, measured on the release before the remedy (an earlier audit,
    #: ``before``), bound this release's from above, with why (the data-processing inequality)
    bounded_before: dict[str, str] = field(default_factory=dict)
    #: every column synthesized, no record released unchanged
    fully_synthetic: bool = False
    #: the numeric known columns whose radius the worst-case search varies (every one)
    search_columns: list[str] = field(default_factory=list)
    #: where ``radius`` came from: "default" (Hornby & Hu's convention) or "given"
    radius_source: str = "default"
    #: where ``disclosure_targets`` came from: "default" or "given"
    targets_source: str = "default"
    #: where ``linkability_columns`` came from: "default" or "given"
    linkability_source: str = "default"
    #: some, not all, columns synthesized (the pMSE null's expectation reads only those)
    partial_synthesis: bool = False
    #: the membership step's ``selection``
    membership_selection: Any = None
    #: ``None``: every column is known, linkability is not run
    linkability_columns: tuple[list[str], list[str]] | None = None
    settings: list[Setting] = field(default_factory=list)
    #: the synthesized columns that are numeric (CART's smoothing applies to them)
    numeric_synthesized: list[str] = field(default_factory=list)
    #: the numeric synthesized columns released as donors' original values, each with the
    #: method that draws them (the synthesizer's ``releases_donor_values``, less what its
    #: settings smooth or draw anew)
    donor_columns: dict[str, str] = field(default_factory=dict)
    #: those of them the synthesizer's ``smoothing`` setting can smooth
    smoothable_columns: list[str] = field(default_factory=list)
    #: the numeric synthesized columns the synthesizer's settings smooth (CART's plug-in
    #: likelihood of a smoothed value is a Monte Carlo sum: the attribute step's time)
    smoothed_columns: list[str] = field(default_factory=list)
    #: the columns whose values a remedy suppressed (sdcMicro's local suppression): missing in
    #: the release, where an intruder reads any value (warning ``SUPPRESSED_AS_MISSING``)
    suppressed_columns: list[str] = field(default_factory=list)
    #: the original file's variable labels (a SAS, Stata or SPSS file), shown beside the names
    variable_labels: dict[str, str] = field(default_factory=dict)

    @property
    def known(self) -> list[str]:
        """Every column the intruder knows (unsynthesized first)."""
        return [*self.known_unsynthesized, *self.known_synthesized]

    @property
    def identification_release_independent(self) -> bool:
        """Whether the intruder matches on unsynthesized columns only."""
        return not self.known_synthesized

    def release_independent_keys(self, target: str) -> bool:
        """Whether the keys of the empirical measures of ``target`` are all unsynthesized."""
        return not set(self.disclosure_keys.get(target, ())) & set(self.synthesized)

    def add(self, step: str, name: str, value: Any, source: str, note: str = "") -> None:
        """Record one setting."""
        self.settings.append(Setting(step, name, value, source, note))

    def settings_frame(self) -> pd.DataFrame:
        """Every setting as a table (step, name, value, source, note)."""
        return pd.DataFrame(
            [
                {
                    "step": s.step,
                    "setting": s.name,
                    "value": s.value if isinstance(s.value, str) else repr(s.value),
                    "source": s.source,
                    "note": s.note,
                }
                for s in self.settings
            ],
            columns=["step", "setting", "value", "source", "note"],
        )


def radius_text(radius: dict[str, float]) -> str:
    """``"Age exact, Income = 0.01"``, or ``"exact matching"`` without a radius."""
    return ", ".join(f"{c} exact" if r == 0 else f"{c} = {r:g}"
                     for c, r in radius.items()) or "exact matching"


def post_processing(release: Any) -> list[dict[str, Any]]:
    """What was applied to ``release`` after synthesis (``bayes-risk remedy``), in order, as its
    manifest records it (empty: nothing)."""
    return list((getattr(release, "extra", None) or {}).get("post_processing") or [])


def post_processing_text(done: list[dict[str, Any]]) -> str:
    """The operations of :func:`post_processing` in words: ``"local suppression, smoothing"``."""
    return ", ".join(str(d.get("operation")).replace("_", " ") for d in done)


def post_processed(release: Any) -> str | None:
    """Why no model's likelihood describes ``release``: it was post-processed after synthesis
    (``None``: it was not)."""
    done = post_processing(release)
    if not done:
        return None
    return (f"the release was post-processed after synthesis ({post_processing_text(done)}; "
            "bayes-risk remedy), so no model's likelihood describes it; audit the release as "
            "synthesized for this step")


def reads_likelihood(plan: AuditPlan, original: pd.DataFrame, release: Any,
                     schema: Any) -> str | None:
    """The ``resolve`` of a measure whose step reads the synthesis model's likelihood
    (:class:`~bayes_risk.measures.Measure`): withheld for a post-processed release."""
    why = post_processed(release)
    return None if why is None else why + "."


def cli_step_name(step: str) -> str:
    """A step's name as the command line writes it.

    Parameters
    ----------
    step : str
        The step's name, as its :class:`~bayes_risk.measures.Measure` spells it.

    Returns
    -------
    str
        ``"posterior-identification"`` for ``"posterior_identification"`` (``--skip``).
    """
    return step.replace("_", "-")


def skip_arg(steps: list[str]) -> str:
    """``settings=AuditSettings(skip=['attribute'])``, or ``--skip attribute`` on the CLI."""
    from bayes_risk.exceptions import arg_name

    named = arg_name("skip", repr(steps), cli=" ".join(cli_step_name(s) for s in steps))
    return named if named.startswith("--") else f"settings=AuditSettings({named})"
