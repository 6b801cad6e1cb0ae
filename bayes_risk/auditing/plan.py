"""What an audit runs and with which settings: :class:`AuditPlan` and :class:`Thresholds`.

The plan is worked out once, before any measure is computed, from the release's manifest (the
synthesized columns, the replaced records, the method) and the caller's arguments; every setting
records where it came from (given, read from the release, or a default) so that the report can
state it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import pandas as pd

from bayes_risk.exceptions import ValidationError

__all__ = ["AuditPlan", "Setting", "Thresholds", "DEFAULT_SWEEP", "STEP_NAMES",
           "THRESHOLD_SOURCES"]

#: the audit's steps, in order (``skip=`` / ``--skip`` takes these names)
STEP_NAMES: tuple[str, ...] = ("utility", "identification", "posterior_identification",
                               "attribute", "membership", "disclosure")

#: the radius grid of Hornby & Hu (2021, §4.1)
DEFAULT_SWEEP: tuple[float, ...] = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3)


_CONVENTION = ("a convention of bayes-risk, not a finding: the papers behind the measure "
               "leave the acceptable risk to the agency (Hu 2019; Hornby & Hu 2021; Raab, "
               "Nowok & Dibben); a board sets its own (user guide, Auditing a release: "
               "Thresholds)")

#: where each default of :class:`Thresholds` comes from; the report prints it under the
#: verdict table (a threshold the caller set is "given")
THRESHOLD_SOURCES: dict[str, str] = {
    "s_pmse": "synthpop's guidance: S_pMSE below 10 acceptable, below 3 good (methods page, "
              "Utility: null distribution)",
    "overlap": "Karr et al. (2006) define the interval overlap (1: the same interval, 0: "
               "disjoint); 0.5, half of each interval shared on average, is a convention "
               "of bayes-risk; a board sets its own (user guide, Auditing a release: "
               "Thresholds)",
    "expected_match_rate": _CONVENTION,
    "true_match_rate": _CONVENTION,
    "prop_top": _CONVENTION,
    "repU": _CONVENTION,
    "DiSCO": _CONVENTION,
    "membership_advantage": _CONVENTION,
    "membership_share": _CONVENTION,
    "membership_probability": "a posterior membership probability of 0.9 is a likelihood "
                              "ratio of 9 under the balanced prior: " + _CONVENTION,
}


@dataclass(frozen=True)
class Thresholds:
    """Release-board thresholds against which the first screen of the report is read.

    The defaults are conventions to be replaced by the board's own policy, not findings of this
    package. Percentages are in percent (as synthpop reports them), rates are fractions.

    Parameters
    ----------
    s_pmse : float
        Largest acceptable mean S_pMSE (pMSE over its null expectation). Default 10, synthpop's
        guidance (below 10 acceptable, below 3 good).
    overlap : float
        Smallest acceptable mean confidence-interval overlap (Karr et al. 2006). Default 0.5.
    expected_match_rate : float
        Largest acceptable expected match rate (expected match risk over the number of targets)
        at the maximising radius. Default 0.01.
    true_match_rate : float
        Largest acceptable true match rate (correct unique matches over targets). Default 0.01.
    prop_top : float
        Largest acceptable share of records whose true synthesized values are the intruder's
        most probable candidate (attribute risk). Default 0.1.
    repU : float
        Largest acceptable replicated uniques, percent of records (synthpop). Default 1.
    DiSCO : float
        Largest acceptable DiSCO, percent of records (synthpop). Default 1.
    membership_advantage : float
        Largest acceptable advantage of the Bayesian membership attack over the base rate,
        AUC − 0.5 of the members' against the holdout records' likelihood ratios (0: no better
        than guessing, 0.5: perfect). Default 0.05.
    membership_share : float
        Largest acceptable share of members whose posterior membership probability exceeds
        ``membership_probability``. Default 0.01.
    membership_probability : float
        The posterior membership probability above which a member counts as exposed (the
        ``threshold`` of :func:`~bayes_risk.membership_risk`; in (0, 1)). Default 0.9: with the
        balanced prior, a likelihood ratio above 9.
    """

    s_pmse: float = 10.0
    overlap: float = 0.5
    expected_match_rate: float = 0.01
    true_match_rate: float = 0.01
    prop_top: float = 0.1
    repU: float = 1.0  # noqa: N815 - synthpop's name
    DiSCO: float = 1.0  # noqa: N815 - synthpop's name
    membership_advantage: float = 0.05
    membership_share: float = 0.01
    membership_probability: float = 0.9

    @classmethod
    def parse(cls, items: Mapping[str, float] | Sequence[str] | None) -> Thresholds:
        """Thresholds from ``{"repU": 2}`` or ``["repU=2", ...]`` (the others keep defaults).

        Raises
        ------
        ValidationError
            For an unknown name or a value that is not a non-negative number.
        """
        if items is None:
            return cls()
        if isinstance(items, cls):
            return items
        names = [f.name for f in fields(cls)]
        pairs: list[tuple[str, Any]] = []
        if isinstance(items, Mapping):
            pairs = list(items.items())
        else:
            for it in items:
                if "=" not in str(it):
                    raise ValidationError(f"thresholds: expected NAME=VALUE. Got {it!r}.",
                                          code="INVALID_ARGUMENT")
                k, v = str(it).split("=", 1)
                pairs.append((k.strip(), v))
        kw: dict[str, float] = {}
        for k, v in pairs:
            if k not in names:
                raise ValidationError(
                    f"thresholds: unknown name {k!r}; expected one of {', '.join(names)}.",
                    code="INVALID_ARGUMENT"
                )
            try:
                val = float(v)
            except (TypeError, ValueError) as err:
                raise ValidationError(f"thresholds: {k}={v!r} is not a number.",
                                      code="INVALID_ARGUMENT") from err
            if not val >= 0:
                raise ValidationError(f"thresholds: {k} must be >= 0. Got {v!r}.",
                                      code="INVALID_ARGUMENT")
            if k == "membership_probability" and not 0 < val < 1:
                raise ValidationError(
                    f"thresholds: membership_probability must be in (0, 1). Got {v!r}.")
            kw[k] = val
        return cls(**kw)

    def to_dict(self) -> dict[str, float]:
        """The thresholds by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Setting:
    """One setting of the audit, with where its value came from."""

    step: str
    name: str
    value: Any
    source: str  # "given", "release manifest", "default", "inferred"
    note: str = ""


@dataclass
class AuditPlan:
    """The steps of an audit and every setting they use.

    Built by :func:`bayes_risk.auditing.audit` from its arguments and the release; read it from
    ``AuditResult.plan``.
    """

    n_records: int
    m: int
    method: str | None
    synthesized: list[str]
    known_unsynthesized: list[str]
    known_synthesized: list[str]
    radius: dict[str, float]
    radius_type: str
    sweep: tuple[float, ...]
    disclosure_targets: list[str]
    disclosure_keys: dict[str, list[str]]
    ngroups_target: dict[str, int | None]
    attribute_source: str | None  # "model", "cart plug-in", "rf plug-in" or None
    attribute_records: list[int] | None
    thresholds: Thresholds
    show_confidential_values: bool
    random_seed: int
    #: steps the caller asked to skip (``skip=`` / ``--skip``)
    skip: tuple[str, ...] = ()
    #: radius columns the sweep varies: the synthesized ones unless ``sweep_unsynthesized``
    sweep_columns: list[str] = field(default_factory=list)
    sweep_unsynthesized: bool = False
    #: identification risk over every subset of the known columns, the frontier and the
    #: drivers (``known_sweep=`` / ``--known-sweep``; off by default: one run per subset)
    known_sweep: bool = False
    #: combining rules of the utility step (``"auto"``: chosen from the release)
    combining_rules: str = "auto"
    #: propensity model of the utility step's pMSE and its interaction order (logit)
    pmse_method: str = "logit"
    max_order: int = 1
    #: imputed columns of the utility step (``"auto"``: recorded in the release, else inferred)
    imputed: Any = "auto"
    #: estimator of the attribute step and kept draws per chain of its refits (None: the model's)
    attribute_estimator: str = "auto"
    refit_draws: int | None = None
    #: how the records of a release that synthesizes selected records were selected
    #: (``membership_selection=`` / ``--membership-selection``; the membership step's
    #: ``selection``)
    membership_selection: Any = None
    settings: list[Setting] = field(default_factory=list)
    #: the synthesized columns that are numeric (CART's smoothing applies to them)
    numeric_synthesized: list[str] = field(default_factory=list)
    #: the release's registered synthesizer releases original (donor) values (its
    #: ``ModelInfo.releases_donor_values``); the remedies of the verdict lines read it
    releases_donor_values: bool = False
    #: the release's synthesizer takes a ``smoothing`` setting (the smoothing remedy names it)
    smoothing_option: bool = False

    @property
    def known(self) -> list[str]:
        """Every column the intruder knows (unsynthesized first)."""
        return [*self.known_unsynthesized, *self.known_synthesized]

    @property
    def identification_release_independent(self) -> bool:
        """Whether the identification measures cannot depend on the release: the intruder
        matches on unsynthesized columns only, which the release carries unchanged."""
        return not self.known_synthesized

    def release_independent_keys(self, target: str) -> bool:
        """Whether the keys of the empirical measures of ``target`` are all unsynthesized (then
        replicated uniques equal the original's sample uniques in every dataset)."""
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
