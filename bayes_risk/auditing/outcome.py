"""What one step of an audit is and what it gave: :class:`Measure`, the record of a measure's
step, settings rows, verdict and report sections, with what its step costs
(:class:`StepCost`), and :class:`StepOutcome`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bayes_risk._constraints import Flag, InstanceOf, SequenceOf, check_params, check_value
from bayes_risk._thresholds import Threshold
from bayes_risk.exceptions import ValidationError

if TYPE_CHECKING:  # the plan's module imports pandas; bayes_risk.measures stays light
    from bayes_risk.auditing.plan import AuditPlan

__all__ = ["README_SIZES", "Contributions", "Measure", "Need", "StepCost", "StepFigure",
           "StepOutcome", "Work", "step_file", "where_text"]


@dataclass(frozen=True)
class Work:
    """A step's work in its rate's units: ``low`` to ``high`` units and how they were counted
    (``count``: ``"20,000 x 5 x 81–281"``), with ``rate`` when the audit's settings call for
    another rate than the step's own (``(unit, low, high)``, as ``StepCost.rate``)."""

    low: float
    high: float
    count: str
    rate: tuple[str, float, float] | None = None


@dataclass(frozen=True)
class Need:
    """What a step holds at its smallest chunk before its compiled kernels load (``least``
    bytes), its ``chunking`` and ``estimate`` (as
    the plan's ``StepMemory`` states them), what it leaves held
    beyond its results' bytes a record (``keeps``) and the replicates it draws at once
    (``chunk``)."""

    least: float
    chunking: str
    estimate: str = ""
    keeps: float = 0.0
    chunk: int | None = None


@dataclass(frozen=True)
class StepCost:
    """What a measure's audit step costs, as measured: the facts the audit's plan of memory and
    CPU time (``bayes_risk.auditing.memory_plan.step_memory``) reads before the first step,
    declared by the measure's record (``Measure(cost=...)``, :doc:`/adding_a_measure`). A step
    without them is "not estimated before the step", its time "not measured on this machine
    class".

    Parameters
    ----------
    rate : tuple of (str, float, float), optional
        The step's work unit in words (``"records x datasets"``) and the CPU seconds (user +
        system, every thread) a unit took, the lowest and highest measured (``None``: its time
        is not estimated).
    sizes : tuple of (int, int), optional
        The largest original ``rate`` was measured at and the largest it is trusted for: no
        time is given beyond it (``None``: trusted at every size).
    work : callable, optional
        ``work(ctx) -> Work | str``: the step's work in ``rate``'s units from the audit's
        context (``ctx.plan``, ``ctx.synthetic``, ``ctx.model``), or why its time is not
        estimated (``None``: records x datasets).
    need : callable, optional
        ``need(ctx, left) -> Need``: what the step holds at its smallest chunk, ``left`` being
        what the budget leaves beside what the steps before it keep (``None``: no budget);
        ``None``: not estimated before the step.
    kept_per_record : float
        What the step's results leave held for the steps after it, in bytes a record of the
        original.
    kernels : tuple of str
        The modules of the step's compiled kernels.
    kernel_bytes : float
        What loading ``kernels`` adds the first time they run in the process.
    compile_seconds : float
        Compiling ``kernels``: named beside the expected time while they have not run in the
        process, and left out of it.
    """

    rate: tuple[str, float, float] | None = None
    sizes: tuple[int, int] | None = None
    work: Callable[[Any], Work | str] | None = None
    need: Callable[[Any, float | None], Need] | None = None
    kept_per_record: float = 0.0
    kernels: tuple[str, ...] = ()
    kernel_bytes: float = 0.0
    compile_seconds: float = 0.0


@dataclass(frozen=True)
class Contributions:
    """What each target contributes to a verdict line, which the explanation of a rise after a
    remedy compares target by target (``Measure.contributions``).

    Parameters
    ----------
    values : numpy.ndarray
        One contribution a target, whose mean is the line's value (as a fraction).
    moved : str
        The sentence of the targets whose contribution rose and fell, with ``{up}``, ``{n}``
        and ``{down}`` (counts) to fill; two runs are compared when their ``moved`` is one.
    where : str
        The intruder's choices that gave the line, in words (``"Income ±10 %"``).
    label : str
        What ``where`` is, as the sentence names it (``"the radii that give the line"``).
    """

    values: Any
    moved: str
    where: str
    label: str


#: the sizes the package's own rates were measured at and are trusted for
#: (``StepCost.sizes``): the README's audit (``make_ce_like(n, random_seed=1)``, CART
#: release of Tenure, Expenditure and Income, m = 5, 2 known numeric columns searched over 81
#: grid points) at 5,000, 20,000, 50,000 and 100,000 records on 2 shared cores (2026), trusted
#: up to twice the largest (identification grows faster than its work measure there: 6.7–7.3 µs
#: a unit at 20,000 records, 8.6 µs at 100,000)
README_SIZES = (100_000, 200_000)


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
    thresholds : tuple of Threshold
        The thresholds of the step's verdict lines (``bayes_risk.measures.Threshold``): each
        one's default, side, range and unit, and where its default comes from. The audit's
        ``thresholds=`` and ``--threshold NAME=VALUE`` set them by name; the verdict builder
        reads their values as ``plan.thresholds.<name>`` and names one on a line
        (``Verdict(threshold_name=...)``).
    settings : callable, optional
        ``settings(plan: AuditPlan) -> None``: adds the measure's rows to the settings table
        (``plan.add(name, ...)``), called once the plan is resolved (``None``: no row).
    cost : StepCost, optional
        What the step costs, as measured: its memory and CPU time, which the audit's plan
        states before the first step (``None``: neither is estimated).
    caveats : mapping of str to tuple of str
        The warning codes that question a verdict line of the measure, by the line's kind (the
        name ``line_caveats`` is given); listed by ``bayes_risk.auditing.verdicts.CAVEATS``.
    risk : bool
        Whether the verdict lines measure a risk (``False``: utility); the explanation of a
        rise after a remedy reads the risk lines alone.
    intruders_by_line : bool
        Whether the report's list of intruders names each verdict line by its measure, its
        lines' intruders differing by what they know (``False``: by the step).
    not_assessed : callable, optional
        ``not_assessed(plan, outcome) -> list[str]``: what the verdict does not assess of the
        release although the step ran (``AuditResult.not_assessed``; ``None``: nothing).
    contributions : callable, optional
        ``contributions(ctx, outcome, value) -> Contributions | None``: what each target
        contributes to the step's line of ``value`` (per cent) in ``outcome``, run with
        ``ctx``, for the explanation of a rise after a remedy (``None``: not compared target
        by target).
    together : callable, optional
        ``together(result: AuditResult) -> list[str]``: sentences reading the measure's lines
        with another measure's where they seem to disagree (the report's "Reading the lines
        together"; ``None``: none).
    resolve : callable, optional
        ``resolve(plan: AuditPlan, original, release, schema) -> str | None``: checks the
        measure's options against the inputs as the plan is made, before any step runs
        (raising ``ValidationError``), and says why its step is withheld for this release
        (``plan.withheld``), or ``None``; called for every registered measure in the
        registry's order, whether its step is skipped or not (``plan.skip``).
    applies : callable, optional
        ``applies(ctx: StepContext) -> str | None``: why the step is left out of this audit,
        known before the first step (a missing input), or ``None`` when it runs. A step left
        out is neither checked nor planned, and is skipped with that reason (``None``: it
        always runs).
    preflight : callable, optional
        ``preflight(ctx: StepContext) -> None``: checks the inputs the step reads (the fitted
        model, the rebuilt synthesizer, a holdout) before the first step, raising
        ``ValidationError`` or ``SchemaError``; the audit's error names every step whose
        checks fail alike (``None``: nothing to check).
    executor : str
        What of the step runs on the audit's executor (``audit(executor=...)``), as the report
        says it (``""``: the whole step runs in process).
    cheap : bool
        Whether the step is cheap and reads no fitted model: the design of a release
        (``bayes_risk.design``) runs it in its first screen, where a line past its threshold
        excludes a candidate before the steps that read the model run.
    covers : callable, optional
        ``covers(line, known, synthesized) -> list[str]``: for a verdict line past its
        threshold (a row of ``AuditResult.verdict_frame()`` as a mapping: ``measure``,
        ``threshold_name``, ...), the released columns whose synthesis the measure's remedies
        name for it; the design grows the column sets to synthesize from them (``None``: the
        line's remedies are knobs of the synthesizer, no column).
    remedies : sequence of str
        The design's remedies (by name, ``bayes_risk.designing.REMEDIES``) that the measure's
        remedies name for a line past its threshold: a design started from an audit with such
        a line adds them to its default remedies (``()``: none).

    Raises
    ------
    ValidationError
        ``MEASURE_BROKEN`` when a field naming code holds something other than a callable (an
        import path ``"module:attribute"`` included: import the object and name it), or
        ``thresholds`` something other than a tuple of thresholds, ``cost`` something other
        than a :class:`StepCost`, ``caveats`` something other than
        a mapping of names to tuples of codes, ``risk``, ``intruders_by_line`` or ``cheap``
        something other than a bool, or ``executor`` other than a string.
    """

    name: str
    title: str
    step: Callable[..., Any]
    function: Callable[..., Any] | None = None
    result: type | None = None
    verdict: Callable[..., Any] | None = None
    sections: tuple[Callable[..., Any], ...] = ()
    thresholds: tuple[Threshold, ...] = ()
    settings: Callable[[AuditPlan], None] | None = None
    cost: StepCost | None = None
    # a mapping is not hashable: the record hashes as before, by its other fields
    caveats: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    risk: bool = True
    intruders_by_line: bool = False
    not_assessed: Callable[[AuditPlan, StepOutcome], list[str]] | None = None
    contributions: Callable[[Any, StepOutcome, float], Contributions | None] | None = None
    together: Callable[[Any], list[str]] | None = None
    resolve: Callable[..., str | None] | None = None
    applies: Callable[[Any], str | None] | None = None
    preflight: Callable[[Any], None] | None = None
    executor: str = ""
    cheap: bool = False
    covers: Callable[[Mapping[str, Any], Sequence[str], Sequence[str]], list[str]] | None = None
    remedies: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_params(self, {
            "sections": InstanceOf(tuple, "a tuple of functions"),
            "remedies": SequenceOf(InstanceOf(str, "a remedy's name"), "remedy names",
                                   min_len=0),
            "cost": [InstanceOf(StepCost, "a bayes_risk.measures.StepCost"), None],
            "executor": InstanceOf(str, "a string, what of the step runs on the audit's "
                                        "executor")},
            owner=f"Measure {self.name!r}: ", code="MEASURE_BROKEN")
        object.__setattr__(self, "remedies", tuple(self.remedies))  # the record stays hashable
        if not (isinstance(self.thresholds, tuple)
                and all(isinstance(t, Threshold) and t.measure in ("", self.name)
                        for t in self.thresholds)):
            raise ValidationError(f"Measure {self.name!r}: thresholds must be a tuple of "
                                  "bayes_risk.measures.Threshold (of this measure); got "
                                  f"{self.thresholds!r}.", code="MEASURE_BROKEN")
        if not isinstance(self.caveats, Mapping) or not all(
                isinstance(k, str) and isinstance(v, tuple)
                and all(isinstance(c, str) for c in v) for k, v in self.caveats.items()):
            raise ValidationError(f"Measure {self.name!r}: caveats must map each kind of line "
                                  "to a tuple of warning codes; got "
                                  f"{self.caveats!r}.", code="MEASURE_BROKEN")
        for key in ("risk", "intruders_by_line", "cheap"):
            check_value(getattr(self, key), Flag(), f"Measure {self.name!r}: {key}",
                        code="MEASURE_BROKEN")
        named = {"step": self.step, "function": self.function, "result": self.result,
                 "verdict": self.verdict, "settings": self.settings,
                 "not_assessed": self.not_assessed, "contributions": self.contributions,
                 "together": self.together, "resolve": self.resolve, "applies": self.applies,
                 "preflight": self.preflight, "covers": self.covers,
                 **{f"sections[{i}]": s for i, s in enumerate(self.sections)},
                 **({"cost.work": self.cost.work, "cost.need": self.cost.need}
                    if self.cost is not None else {})}
        for key, obj in named.items():
            if (obj is not None or key == "step") and not callable(obj):
                raise ValidationError(
                    f"Measure {self.name!r}: {key} must be the function or class itself; got "
                    f"{obj!r}" + (" (an import path is not read: import the object and name "
                                  "it)" if isinstance(obj, str) else "") + ".",
                    code="MEASURE_BROKEN")


@dataclass(frozen=True)
class StepFigure:
    """A figure of a step, drawn in one place: ``draw()`` makes the matplotlib Figure, which
    the step saves at ``dpi`` into its folder (``ran(..., figures={file: StepFigure(draw)})``)
    and the report shows from that file (``links.step_figure(s, file, caption)`` in the
    step's section; drawn for the report only when the audit wrote no files)."""

    draw: Callable[[], Any]
    dpi: int = 100

    def save(self, path: Any) -> None:
        """Draw the figure into the PNG file ``path``."""
        self.draw().savefig(path, dpi=self.dpi)


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
    figures : dict of str to StepFigure
        The step's figures by file name in ``folder`` (written there when the audit writes
        files): what the report shows.
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
    figures: dict[str, StepFigure] = field(default_factory=dict, repr=False)


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
