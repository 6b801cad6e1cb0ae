"""An attribute-risk run assembled once, for the command line and the audit: the run, the
knowledge sweep and the known-records curve beside it, one seed and one set of refits shared by
all of them (``attribute_run``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bayes_risk.attribute.api import attribute_risk

__all__ = ["AttributeRun", "attribute_run"]


@dataclass
class AttributeRun:
    """What ``attribute_run`` computed.

    Attributes
    ----------
    result : AttributeRiskResult
        The run of the scenario.
    known_sweep : KnowledgeSweepResult or None
        The knowledge sweep over subsets of the known columns.
    known_curve : KnownCurveResult or None
        The run at each share of known records.
    estimator : EstimatorSpec or str
        The estimator every part ran with: holding the refits they shared, when they shared
        them.
    """

    result: Any
    known_sweep: Any = None
    known_curve: Any = None
    estimator: Any = None

    def text_lines(self) -> list[str]:
        """The run in lines of words (``bayes-risk attribute`` prints them): the result's
        headline, the knowledge sweep's line and the curve's headline (those computed)."""
        return [*self.result.headline().splitlines(),
                *(p.text_line() for p in (self.known_sweep,) if p is not None),
                *(p.headline() for p in (self.known_curve,) if p is not None)]


def attribute_run(
    original: Any,
    synthetic: Any,
    *,
    model: Any,
    scenario: Any = "worst_case",
    known_sweep: Sequence[str] | None = None,
    max_size: int | None = None,
    known_curve: Sequence[float] | None = None,
    curve_seed: int = 0,
    share_refits: bool = False,
    risk: Callable[..., Any] | None = None,
    executor: Any = None,
    **options: Any,
) -> AttributeRun:
    """Attribute risk with the knowledge sweep and the known-records curve the caller asks for,
    each with the run's options; with either, one seed and one set of refits serve every run
    (the sweep's empty subset and the curve's share 1 are then the run's own figures).

    Parameters
    ----------
    original, synthetic, model, scenario
        As in ``attribute_risk``.
    known_sweep : sequence of str, optional
        The known columns of ``attribute_known_sweep`` (its ``known``); ``max_size`` its
        largest subset evaluated exhaustively.
    known_curve : sequence of float, optional
        The shares of known records of ``known_fraction_curve`` (its ``fractions``);
        ``curve_seed`` its ``seed``.
    share_refits : bool
        Make the refits once even without a sweep or a curve (the audit: its membership step
        reuses them, ``AttributeRun.estimator``).
    risk : callable, optional
        The engine of the run itself, called without ``executor`` (the command line's Dask
        path: ``bayes_risk.distributed.attribute_risk`` with its client); default
        ``attribute_risk`` with ``executor``.
    executor : optional
        The executor of the run and of the sweep's subsets.
    **options
        The run's other arguments of ``attribute_risk`` (``records``, ``candidates``,
        ``prior``, ``estimator``, ``random_seed``, ``allow_other_model``, ``progressbar``),
        shared by the refits, the sweep and the curve.

    Returns
    -------
    AttributeRun
    """
    if known_sweep or known_curve or share_refits:
        from bayes_risk.attribute.knowledge import one_seed, with_shared_refits

        # one seed and one set of refits for the run and every subset or share of the sweeps
        options["random_seed"] = one_seed(options.get("random_seed"))
        options["estimator"] = with_shared_refits(original, synthetic, model=model,
                                                  **{"records": None, **options})
    run = AttributeRun(None, estimator=options.get("estimator"))
    run.result = (attribute_risk(original, synthetic, model=model, scenario=scenario,
                                 executor=executor, **options) if risk is None else
                  risk(original, synthetic, model=model, scenario=scenario, **options))
    if known_sweep:
        from bayes_risk._lattice import LatticeSpec
        from bayes_risk.attribute.knowledge import attribute_known_sweep

        run.known_sweep = attribute_known_sweep(original, synthetic, model=model,
                                                known=known_sweep,
                                                lattice=LatticeSpec(max_size=max_size),
                                                executor=executor, **options)
    if known_curve:
        from bayes_risk.attribute.known_curve import known_fraction_curve

        run.known_curve = known_fraction_curve(original, synthetic, model=model,
                                               fractions=known_curve, seed=curve_seed,
                                               **options)
    return run
