"""A release post-processed by synthpop's and sdcMicro's remedies in one run, as ``bayes-risk
remedy`` applies them (:func:`remedy_run`), and what each step did, in words
(:meth:`RemedyRun.lines`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bayes_risk._constraints import OneOf, check_relations
from bayes_risk.disclosure.sdc import sdc
from bayes_risk.disclosure.sdcmicro import sdcmicro
from bayes_risk.disclosure.specs import SdcMicroSpec

__all__ = ["RemedyRun", "remedy_run"]


@dataclass(frozen=True)
class RemedyRun:
    """The release of :func:`remedy_run` and the post-processing steps it added.

    Attributes
    ----------
    release : SyntheticData
    steps : list of dict
        The steps of this run, as ``release.extra["post_processing"]`` records them.
    labels : optional
        The original's value and variable labels (a SAS, Stata or SPSS file's), which the
        release is saved with.
    """

    release: Any
    steps: list[dict[str, Any]]
    labels: Any = None

    def to_dict(self) -> None:
        """``None``: the release records itself (its manifest, :meth:`save`)."""
        return None

    def save(self, folder: Any, *, file_format: str = "parquet") -> None:
        """Save the release into ``folder`` with the original's labels."""
        self.release.save(folder, file_format=file_format, labels=self.labels)

    def lines(self) -> list[str]:
        """What each step did, one line per column or operation."""
        return [line for step in self.steps for line in _step_lines(step)]

    def text_lines(self) -> list[str]:
        """The datasets post-processed and the release they were read from, then :meth:`lines`
        (``bayes-risk remedy`` prints them)."""
        source = (self.steps[0].get("source") if self.steps else None) or {}
        files = source.get("files") or ["a release in memory"]
        where = source.get("folder") or files[0] + (" ..." if len(files) > 1 else "")
        return [f"post-processed {self.release.m} dataset(s) of {where}", *self.lines()]


#: some remedy of ``sdc`` or ``sdcmicro`` to apply
_RELATIONS = (OneOf(("bottom_top_coding", "remove", "smooth", "pram", "local_suppression",
                     "microaggregation", "add_noise"), required=True, only=False,
                    code="OPTION_REQUIRED"),)


def remedy_run(original: Any, synthetic: Any, *, synthpop: Mapping[str, Any] | None = None,
               sdcmicro_options: Mapping[str, Any] | None = None,
               sdcmicro_settings: SdcMicroSpec | None = None,
               random_seed: Any = None) -> RemedyRun:
    """Post-process ``synthetic`` by :func:`~bayes_risk.disclosure.sdc` (``synthpop``'s
    arguments, when any is not ``None``), then :func:`~bayes_risk.disclosure.sdcmicro`
    (``sdcmicro_options`` and ``sdcmicro_settings``, when either is given or not the
    defaults); every step of the run records the release read as its source (one remedy).

    Returns
    -------
    RemedyRun

    Raises
    ------
    ValidationError
        No argument of ``sdc`` nor of ``sdcmicro`` given (``OPTION_REQUIRED``), before any
        work.
    """
    synthpop = {k: v for k, v in (synthpop or {}).items() if v is not None}
    if not (synthpop or sdcmicro_options):  # any argument: sdc and sdcmicro check the others
        check_relations({}, _RELATIONS)
    done = len((getattr(synthetic, "extra", None) or {}).get("post_processing") or [])
    out = synthetic
    if synthpop:
        out = sdc(original, out, **synthpop)
    if sdcmicro_options or sdcmicro_settings not in (None, SdcMicroSpec()):
        out = sdcmicro(original, out, **(sdcmicro_options or {}), settings=sdcmicro_settings,
                       random_seed=random_seed)
    steps = out.extra["post_processing"][done:]
    for step in steps[1:]:
        step["source"] = steps[0]["source"]
    from bayes_risk.data.statfiles import file_labels

    return RemedyRun(out, steps, file_labels(original))


def _per(values: list[int]) -> str:
    """Counts of each dataset: ``12`` or ``12, 9 (per dataset)``."""
    return ", ".join(f"{n:,}" for n in values) + (" (per dataset)" if len(values) > 1 else "")


def _all(values: list[int]) -> str:
    """Counts of each dataset summed: ``21`` (``(all datasets)`` after it when several)."""
    return f"{sum(values):,}" + (" (all datasets)" if len(values) > 1 else "")


def _step_lines(step: dict[str, Any]) -> list[str]:
    """What one post-processing step did."""
    op = step["operation"]
    if op == "bottom_top_coding":
        return [f"{c}: {sum(step['n_bottom_coded'][c]):,} value(s) bottom-coded, "
                f"{sum(step['n_top_coded'][c]):,} top-coded (all datasets)" for c in step["bounds"]]
    if op.startswith("remove_"):
        return [f"{op.removeprefix('remove_').replace('_', ' ')} removed: "
                + _per(step["n_removed"])]
    if op == "smoothing":
        return [f"smoothed: {', '.join(step['columns'])}"]
    if op == "pram":
        return [f"post-randomized {c} (PRAM, pd {step['pd']:g}, alpha {step['alpha']:g}): "
                f"{_all(n)} value(s) changed" for c, n in step["n_changed"].items()]
    if op == "local_suppression":
        counts = step["n_suppressed"]
        return [f"{step['k']}-anonymity on {', '.join(step['keys'])}: value(s) suppressed "
                + ", ".join(f"{c} {sum(n):,}" for c, n in counts.items())
                + (" (all datasets)" if len(next(iter(counts.values()))) > 1 else "")]
    if op == "microaggregation":
        how = "MDAV" if step["method"] == "mdav" else step["method"]
        return [f"microaggregated {', '.join(step['columns'])} ({how}, groups of "
                f"{step['aggr']} or more): {_all(step['n_groups'])} groups"]
    spread = ("standard deviation" if step["method"] == "additive" else "covariance")
    return [f"noise added to {', '.join(step['columns'])} ({step['method']}: its {spread} "
            f"{step['noise']:g} % of the columns')"]
