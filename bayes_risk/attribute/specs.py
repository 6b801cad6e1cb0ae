"""The grouped arguments of attribute risk: :class:`ScenarioSpec` (what the intruder knows) and
:class:`EstimatorSpec` (how the likelihood is estimated and checked).

Both are validated when built; what depends on the model or the data is checked by
:mod:`bayes_risk.attribute.prepare`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from bayes_risk._specs import check_flag, check_int, check_option, is_number
from bayes_risk.attribute.record_table import KHAT_TOLERANCE
from bayes_risk.exceptions import NotSupportedError, ValidationError

__all__ = ["ScenarioSpec", "EstimatorSpec", "SCENARIOS", "ESTIMATORS"]

#: What the intruder knows (see :class:`ScenarioSpec`).
SCENARIOS = ("worst_case", "partially_known", "empty")

_PAIVA_POINTER = (
    "Other intruder knowledge (e.g. only some other records known) needs the other records' "
    "unknown values to be imputed inside the likelihood; this is out of scope (see the "
    "methods page 'Attribute disclosure risk'). See Paiva, Chakraborty, "
    "Reiter & Gelfand (2014), 'Imputation of confidential data sets with spatial locations using "
    "disease mapping models', Statistics in Medicine 33, for an approach."
)


#: the estimators of ``EstimatorSpec.kind`` (``"auto"``: chosen from the model's capabilities)
ESTIMATORS = ("auto", "stabilised", "is")


@dataclass(frozen=True)
class ScenarioSpec:
    """What the intruder of attribute risk knows (see :doc:`/methods/attribute`).

    Parameters
    ----------
    kind : {"worst_case", "partially_known", "empty", "two_records"}
        Worst case: the intruder knows every other record and guesses all of record ``i``'s
        synthesized values. Partially known: also knows ``known`` of record ``i``'s own
        values. Empty: Wang & Reiter's (2012) low-risk intruder, who knows nothing of the
        other records (see :func:`~bayes_risk.attribute.low_risk.low_risk_attribute_risk`).
        Two records: Wei & Reiter's (2016) intruder who guesses both records of each pair in
        ``pairs`` jointly (one result row per pair).
    known : sequence of str, optional
        Synthesized columns the intruder knows (``partially_known`` only).
    pairs : sequence of (int, int), optional
        ``two_records`` only (and then required): the pairs of records (0-based row
        positions) the intruder does not know; ``records`` does not apply.

    Raises
    ------
    NotSupportedError
        For another ``kind``.
    ValidationError
        ``known`` or ``pairs`` with a scenario that does not take them.

    Examples
    --------
    >>> ScenarioSpec("partially_known", known=["Tenure"]).known
    ('Tenure',)
    """

    kind: Literal["worst_case", "partially_known", "empty", "two_records"] = "worst_case"
    known: Sequence[str] | None = None
    pairs: Sequence[tuple[int, int]] | np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in (*SCENARIOS, "two_records"):
            raise NotSupportedError(
                f"scenario {self.kind!r} is not supported; use one of "
                f"{[*SCENARIOS, 'two_records']} ('two_records' with "
                "ScenarioSpec('two_records', pairs=[(i, j), ...])). "
                + _PAIVA_POINTER,
                code="INVALID_ARGUMENT"
            )
        if self.known is not None:
            known = (self.known,) if isinstance(self.known, str) else tuple(self.known)
            object.__setattr__(self, "known", known)
        if self.pairs is not None and self.kind != "two_records":
            raise ValidationError(
                f"ScenarioSpec.pairs applies to kind='two_records' only (kind={self.kind!r}); "
                "use records= to choose the records of the other scenarios."
            )
        if self.kind == "two_records" and self.known:
            raise ValidationError(
                "ScenarioSpec.known does not apply to kind='two_records': the intruder knows "
                "none of the synthesized values of the two records."
            )


@dataclass(frozen=True)
class EstimatorSpec:
    """How the likelihood of each candidate is estimated from the posterior draws, and the
    Monte Carlo diagnostics of the estimates (see :doc:`/methods/attribute`).

    Parameters
    ----------
    kind : {"auto", "stabilised", "is"}
        ``auto``: the first of the model's ``estimators`` that applies (stabilised for class P
        models that draw from ``p(Θ | y, Z_(l))`` or are given ``augmented``, else IS; the
        plug-in likelihood for plug-in models). ``is`` is the published estimator (Hu 2019).
    augmented : sequence of models, optional
        For the stabilised estimator: one model per synthetic dataset with draws of
        ``p(Θ | y, Z_(l))`` (default: ``model.fit_augmented(original, Z_(l), random_seed=...)``).
    draw_indices : sequence of int, optional
        Indices (0-based) of the model's posterior draws to use (default all ``H``).
    refit_draws : int, optional
        Kept draws per chain of each of the stabilised estimator's ``m`` refits (default: the
        model's ``draws``). The estimated time of the refits is printed before they start
        (:func:`~bayes_risk.attribute.cost.refit_cost`).
    psis : bool
        Pareto-smooth the stabilised estimator's means.
    khat : {"all", "base", "none"}
        Posteriors under which the Pareto k̂ of the ratios is computed: all ``m + 1``
        (default), only ``p(Θ | y)``, or none (no k̂, no bounds, no ``KHAT_HIGH``).
    khat_rule : {"material", "any"}
        When a high k̂ flags a record ``KHAT_HIGH``: ``"any"`` high k̂ (the published
        estimator always uses this rule), or ``"material"`` (default): when the truth's
        probability could be more than ``khat_tolerance`` above ``p_true``, or the truth could
        be the best guess when it is not (``p_true_lower``, ``p_true_upper``).
    khat_tolerance : float
        Tolerance of ``khat_rule="material"`` on the probability scale (default 0.01).
    is_diagnostics : bool
        With the stabilised estimator, also compute the ratio diagnostics of the published
        estimator (needs ``dataset_loglik``).
    compat : {"AttributeRiskCalculation"}, optional
        IS estimator only: copy the R package's prior handling (not Bayes' rule).
    chunk_size : int
        Records processed together (memory ``~ chunk × H × G × 8`` bytes per array); the
        results do not depend on it.
    bootstrap : int
        Draw-bootstrap replicates for the stability of the truth's rank (0 disables).
    refit_cache : str or path, optional
        A folder where the stabilised estimator's refits are stored and read again, by this and
        later runs and by :func:`~bayes_risk.membership_risk` on the same model, release and
        ``random_seed`` (:doc:`/user_guide/attribute`, Refits reused across commands); used
        with a ``random_seed`` only. Default: none.

    Raises
    ------
    ValidationError
        A field out of its range, named in the message.

    Examples
    --------
    >>> EstimatorSpec("is", khat_rule="any").khat
    'all'
    """

    kind: Literal["auto", "stabilised", "is"] = "auto"
    augmented: Sequence[Any] | None = None
    draw_indices: Sequence[int] | np.ndarray | None = None
    refit_draws: int | None = None
    psis: bool = False
    khat: Literal["all", "base", "none"] = "all"
    khat_rule: Literal["material", "any"] = "material"
    khat_tolerance: float = KHAT_TOLERANCE
    is_diagnostics: bool = True
    compat: Literal["AttributeRiskCalculation"] | None = None
    chunk_size: int = 256
    bootstrap: int = 200
    refit_cache: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        check_option(self.kind, "EstimatorSpec.kind", ESTIMATORS)
        check_option(self.khat, "EstimatorSpec.khat", ("all", "base", "none"))
        check_option(self.khat_rule, "EstimatorSpec.khat_rule", ("material", "any"))
        tol = self.khat_tolerance
        if not is_number(tol) or not (math.isfinite(float(tol)) and tol >= 0):
            raise ValidationError(
                f"EstimatorSpec.khat_tolerance must be a finite number >= 0. Got {tol!r}.")
        object.__setattr__(self, "khat_tolerance", float(tol))
        check_option(self.compat, "EstimatorSpec.compat", (None, "AttributeRiskCalculation"))
        for name, minimum in (("chunk_size", 1), ("bootstrap", 0), ("refit_draws", 1)):
            if name != "refit_draws" or self.refit_draws is not None:
                object.__setattr__(self, name, check_int(getattr(self, name),
                                                         f"EstimatorSpec.{name}", minimum))
        for name in ("psis", "is_diagnostics"):
            check_flag(getattr(self, name), f"EstimatorSpec.{name}")

    def replace(self, **changes: Any) -> EstimatorSpec:
        """A copy with ``changes`` applied (validated again)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return EstimatorSpec(**(fields | changes))

