"""The grouped arguments of attribute risk: what the intruder knows and how the likelihood is
estimated.

:class:`ScenarioSpec` (``scenario=``) holds the intruder's knowledge (the scenario, the known
own values, the pairs of the two-record intruder), :class:`EstimatorSpec` (``estimator=``) the
estimator's settings and the Monte Carlo diagnostics of its estimates — as
:class:`~bayes_risk.identification.MatchSpec` groups the match rule of identification risk.
Both are validated when built, with errors naming the field; what depends on the model or the
data is checked when the risk is computed (:mod:`bayes_risk.attribute.prepare`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from bayes_risk.attribute.record_table import KHAT_TOLERANCE
from bayes_risk.exceptions import NotSupportedError, ValidationError

__all__ = ["ScenarioSpec", "EstimatorSpec", "SCENARIOS", "ESTIMATORS"]

#: What the intruder knows (methods, The intruder's posterior): every other record
#: (``worst_case``), also some of the target's own values (``partially_known``), or nothing about
#: the other records (``empty``, Wang & Reiter's low-risk intruder).
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


def _int_at_least(value: Any, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValidationError(f"{what} must be an integer >= {minimum}. Got {value!r}.")
    return int(value)


@dataclass(frozen=True)
class ScenarioSpec:
    """What the intruder of attribute risk knows (methods, The intruder's posterior).

    Parameters
    ----------
    kind : {"worst_case", "partially_known", "empty", "two_records"}
        Worst case: the intruder knows every other record (``A = y_{-i}``) and guesses all of
        record ``i``'s synthesized values. Partially known: also knows ``known`` of record
        ``i``'s own synthesized values (fixed at the truth). Empty: Wang & Reiter's (2012)
        low-risk intruder, who knows nothing of the other records (``A = ∅``); the record's
        ``m`` synthetic values stand in for the intruder's posterior (candidates: the truth and
        those values; uniform prior only; warning ``APPROX_LOW_RISK``; the estimator options
        do not apply — see :func:`~bayes_risk.attribute.low_risk.low_risk_attribute_risk`).
        Two records: Wei & Reiter's (2016) intruder who knows every record except the two of
        each pair in ``pairs`` and guesses both jointly, over the product of the two records'
        candidate sets (class P models; methods, Wei & Reiter's two-record intruder; the
        result has one row per pair).
    known : sequence of str, optional
        Synthesized columns the intruder knows (``partially_known`` only).
    pairs : sequence of (int, int), optional
        ``two_records`` only (and then required): the pairs of records (0-based row
        positions) the intruder does not know; ``records`` does not apply.

    Raises
    ------
    NotSupportedError
        (a ``NotImplementedError``) For another ``kind``.
    ValidationError
        ``known`` or ``pairs`` with a scenario that does not take them, named in the message.

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
            if isinstance(self.known, str):
                object.__setattr__(self, "known", (self.known,))
            else:
                object.__setattr__(self, "known", tuple(self.known))
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
    Monte Carlo diagnostics of the estimates.

    Parameters
    ----------
    kind : {"auto", "stabilised", "is"}
        ``auto``: chosen from what the model can do (its
        :func:`~bayes_risk.contract.capabilities`): the first of its ``estimators`` that
        applies — stabilised for class P models that draw from ``p(Θ | y, Z_(l))`` (or are given
        ``augmented``), otherwise IS (methods, The stabilised estimator) — and the closed-form
        plug-in likelihood for plug-in models. ``is`` is the published estimator (Hu 2019
        §3.2.5), needed to reproduce published numbers.
    augmented : sequence of models, optional
        For the stabilised estimator: one model per synthetic dataset with draws of
        ``p(Θ | y, Z_(l))`` (default: ``model.fit_augmented(original, Z_(l), random_seed=...)``).
    draw_indices : sequence of int, optional
        Indices (0-based, in ``0..H-1``) of the model's posterior draws to use (default all
        ``H``).
    refit_draws : int, optional
        Kept draws per chain of each of the stabilised estimator's ``m`` refits (default: the
        model's ``draws``). The refits are most of the run's time: before they start, the
        estimated time is printed (a range: from the seconds per sweep the fit measured once its
        chains ran, scaled by the records and sweeps of a refit, up to that plus the fit's own
        set-up per refit; for refits of half a minute or more of a Gibbs-sampled model, from a
        short pilot of the refit timed just before; :func:`~bayes_risk.attribute.cost.refit_cost`,
        :func:`~bayes_risk.attribute.refits.pilot_refit`), then one progress bar
        "refit k of m" runs over them.
    psis : bool
        Pareto-smooth the stabilised estimator's means (methods, The stabilised estimator).
    khat : {"all", "base", "none"}
        Posteriors under which the Pareto k̂ of the ratios is computed (methods, Diagnostics, The
        stabilised estimator): all ``m + 1`` (default), only ``p(Θ | y)``, or none. k̂ is the
        costliest diagnostic (a generalized-Pareto fit per record, candidate and posterior);
        records are flagged ``KHAT_HIGH`` only from the k̂ values computed.
    khat_rule : {"material", "any"}
        When a high k̂ flags a record ``KHAT_HIGH``. ``"any"``: some candidate's k̂ exceeds the
        threshold under some posterior (the published estimator always uses this rule).
        ``"material"`` (default, stabilised estimator): a mean whose k̂ exceeds the threshold
        is trusted only as far as the draws below its Pareto tail go (its true value may be
        anywhere above their truncated mean), and the record is flagged when, in the worst case
        this allows, the truth's probability could be more than ``khat_tolerance`` above
        ``p_true`` (absolute, on the probability scale), or the truth could be the most
        probable candidate when it is not.
        ``p_true_lower``, ``p_true_upper`` and ``n_khat_high`` (candidates with a mean above
        the threshold) are reported either way (``khat="none"``: no k̂, no bounds, no
        ``KHAT_HIGH``); the bounds are ``NaN`` for a record with no such candidate (its Monte
        Carlo interval is the draw bootstrap's, ``boot_p_true_q05`` / ``boot_p_true_q95``).
    khat_tolerance : float
        Tolerance of ``khat_rule="material"`` on the probability scale (default 0.01: one
        percentage point).
    is_diagnostics : bool
        With the stabilised estimator, also compute the ratio diagnostics of the
        published estimator (needs ``dataset_loglik``) to show how degenerate it would be.
    compat : {"AttributeRiskCalculation"}, optional
        IS estimator only: copy the R package's prior handling (prior probability added to the
        log-likelihood once per dataset) — AttributeRiskCalculation compatibility. Not a
        default: it is not Bayes' rule.
    chunk_size : int
        Records processed together (bounds memory ``~ chunk × H × G × 8`` bytes per array;
        about 2.2 GB of peak memory at the default 256 for 10,000 records with H = 1,000 draws,
        G = 35 candidates and m = 5, against 1.7 GB at 128, which is about 5 % slower). The
        results do not depend on it.
    bootstrap : int
        Draw-bootstrap replicates for the stability of the truth's rank (0 disables).

    Raises
    ------
    ValidationError
        A field out of its range, named in the message (what depends on the model — a plug-in
        model takes ``kind="auto"`` only, draw indices within its draws — is checked when the
        risk is computed).

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

    def __post_init__(self) -> None:
        if self.kind not in ESTIMATORS:
            raise ValidationError(
                f"EstimatorSpec.kind must be 'auto', 'stabilised' or 'is'. Got {self.kind!r}.")
        if self.khat not in ("all", "base", "none"):
            raise ValidationError(
                f"EstimatorSpec.khat must be 'all', 'base' or 'none'. Got {self.khat!r}.")
        if self.khat_rule not in ("material", "any"):
            raise ValidationError(
                f"EstimatorSpec.khat_rule must be 'material' or 'any'. Got {self.khat_rule!r}.")
        tol = self.khat_tolerance
        if (isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating))
                or not (math.isfinite(float(tol)) and tol >= 0)):
            raise ValidationError(
                f"EstimatorSpec.khat_tolerance must be a finite number >= 0. Got {tol!r}.")
        object.__setattr__(self, "khat_tolerance", float(tol))
        if self.compat not in (None, "AttributeRiskCalculation"):
            raise ValidationError(
                "EstimatorSpec.compat must be None or 'AttributeRiskCalculation'. "
                f"Got {self.compat!r}.")
        object.__setattr__(self, "chunk_size",
                           _int_at_least(self.chunk_size, "EstimatorSpec.chunk_size", 1))
        object.__setattr__(self, "bootstrap",
                           _int_at_least(self.bootstrap, "EstimatorSpec.bootstrap", 0))
        if self.refit_draws is not None:
            object.__setattr__(self, "refit_draws",
                               _int_at_least(self.refit_draws, "EstimatorSpec.refit_draws", 1))
        for name in ("psis", "is_diagnostics"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValidationError(
                    f"EstimatorSpec.{name} must be True or False. Got {getattr(self, name)!r}.")

    def replace(self, **changes: Any) -> EstimatorSpec:
        """A copy with ``changes`` applied (validated again), as :meth:`MatchSpec.replace
        <bayes_risk.identification.MatchSpec.replace>`."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields.update(changes)
        return EstimatorSpec(**fields)

