"""The intruder who knows some of the other records, not all: ``ScenarioSpec("known_records")``,
and the risk curve as the known share grows (:func:`known_fraction_curve`).

For a class P model the records the intruder does not know drop out of the posterior of ``Θ``;
the engine reweights its draws by ``1 / Π_u p(y_u | Θ_h)`` over those records (a shift of every
log ratio, :meth:`KnownRecords.shift`). See :doc:`/methods/attribute` (Intruders who know some
of the other records).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayes_risk._specs import as_spec
from bayes_risk._terminal import progress
from bayes_risk.attribute.priors import Empirical, ModelPredictive, Prior
from bayes_risk.attribute.specs import ESTIMATORS, EstimatorSpec, ScenarioSpec
from bayes_risk.exceptions import NotSupportedError, ValidationError, interruptible
from bayes_risk.results._base import RiskResult, legend_below
from bayes_risk.results._summary import ResultWarning, Summary
from bayes_risk.warning_codes import message

__all__ = ["KnownRecords", "known_mask", "known_records_plan", "check_known_records",
           "check_known_prior", "known_fraction_curve", "KnownFractionResult"]

#: records whose log-likelihoods are summed per call of ``record_loglik`` (memory ``H × this``)
_BLOCK = 2048


def known_mask(spec: ScenarioSpec, n: int) -> np.ndarray:
    """``[n]`` bool: the records the intruder of ``spec`` knows (before the target's own is
    taken out). A fraction takes the first ``round(f n)`` rows of a permutation seeded by
    ``spec.seed``, so that the sets of one seed are nested as the fraction grows."""
    if spec.known_fraction is not None:
        order = np.random.default_rng(0 if spec.seed is None else spec.seed).permutation(n)
        mask = np.zeros(n, dtype=bool)
        mask[order[: int(round(spec.known_fraction * n))]] = True
        return mask
    arr = np.asarray(spec.known_records)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise ValidationError(
                f"ScenarioSpec.known_records as a boolean mask needs one entry per record of "
                f"original ({n}). Got shape {arr.shape}.")
        return arr.copy()
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValidationError(
            "ScenarioSpec.known_records must be row positions (0-based integers) or a boolean "
            f"mask. Got values of type {arr.dtype}.")
    arr = arr.astype(np.int64).ravel()
    bad = arr[(arr < 0) | (arr >= n)]
    if bad.size:
        raise ValidationError(
            f"ScenarioSpec.known_records holds {int(bad[0])}, outside the rows 0..{n - 1} of "
            "original.", code="RECORD_OUT_OF_RANGE")
    mask = np.zeros(n, dtype=bool)
    mask[arr] = True
    return mask


@dataclass(frozen=True)
class KnownRecords:
    """What the engine needs of the intruder's known records: ``mask [n]`` and, per model
    (the base posterior first, then each augmented one), ``totals[k] [H_k]`` =
    ``Σ_{u not known} log p(y_u | Θ_h)``."""

    mask: np.ndarray
    totals: list[np.ndarray] = field(default_factory=list)
    #: how the mask was chosen (``settings`` of the result)
    description: dict[str, Any] = field(default_factory=dict)

    @property
    def everything(self) -> bool:
        """Whether every record is known (the worst case: no shift)."""
        return bool(self.mask.all())

    def shift(self, model: Any, orig: pd.DataFrame, k: int, pos: np.ndarray,
              draw_indices: np.ndarray | None) -> np.ndarray:
        """``D [R, H]`` subtracted from the log ratios of records ``pos`` under model ``k``:
        the unknown records other than the target, ``totals[k] − [i unknown] log p(y_i | Θ)``."""
        own = _record_loglik(model, orig, pos, draw_indices)  # [H, R]
        unknown = ~self.mask[pos]
        return self.totals[k][None, :] - np.where(unknown[None, :], own, 0.0).T


def _record_loglik(model: Any, orig: pd.DataFrame, pos: np.ndarray,
                   draw_indices: np.ndarray | None) -> np.ndarray:
    """``[H, R]`` log p(y_i | Θ_h) of the rows ``pos`` (the model's record likelihood)."""
    return np.asarray(model.record_loglik(orig.iloc[np.asarray(pos)], draw_indices=draw_indices),
                      dtype=np.float64)


def check_known_records(model: Any, is_plugin: bool, compat: str | None) -> None:
    """What the scenario needs of the model: class P with posterior draws, no compat mode."""
    if is_plugin or getattr(model, "model_class", "O") != "P":
        raise NotSupportedError(
            "scenario='known_records' needs a class P model with posterior draws; "
            f"{type(model).__name__} is {'a plug-in' if is_plugin else 'class O'} (the "
            "unknown records' values enter the release given Θ, so they cannot be integrated "
            "out by reweighting the draws; methods page 'Attribute disclosure risk').",
            code="MODEL_UNSUITED",
        )
    if compat is not None:
        raise ValidationError(
            "compat='AttributeRiskCalculation' reproduces the R package, which has no "
            "known-records scenario; leave compat at None.", code="INVALID_ARGUMENT")


def known_records_plan(plan: Any, mask: np.ndarray, spec: ScenarioSpec) -> KnownRecords:
    """The :class:`KnownRecords` of ``mask`` for a prepared plan: the unknown records'
    log-likelihoods summed under each model's draws."""
    desc = {"n_known": int(mask.sum()), "known_fraction": spec.known_fraction,
            "known_seed": (0 if spec.seed is None else spec.seed)
            if spec.known_fraction is not None else None,
            "known_records": None if spec.known_fraction is not None
            else np.flatnonzero(mask).tolist()}
    if mask.all():
        return KnownRecords(mask, description=desc)
    unknown = np.flatnonzero(~mask)
    models = [(plan.model.model, plan.draws.logp_idx)]
    models += [(a.model, None) for a in plan.augmented.models]
    totals = []
    for mdl, idx in models:
        tot = 0.0
        for a in range(0, unknown.size, _BLOCK):
            tot = tot + _record_loglik(mdl, plan.data.orig, unknown[a : a + _BLOCK],
                                       idx).sum(axis=1)
        totals.append(np.asarray(tot, dtype=np.float64))
    return KnownRecords(mask, totals, desc)


def check_known_prior(prior: Prior) -> None:
    """Refuse a prior that reads every other record (the intruder knows only some)."""
    if isinstance(prior, (Empirical, ModelPredictive)):
        raise NotSupportedError(
            f"prior {prior.label()!r} reads every other record's values, and this intruder "
            "knows only some of them; use 'uniform', 'truth-weighted:K' or user weights.",
            code="OPTION_CONFLICT")


#: the ``attribute_risk`` arguments :func:`known_fraction_curve` passes on
_OPTIONS = ("records", "candidates", "prior", "estimator", "allow_other_model")


@interruptible
def known_fraction_curve(
    original: pd.DataFrame, synthetic: Any, *, model: Any,
    fractions: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0), seed: int = 0,
    random_seed: Any = None, progressbar: bool = True, **kwargs: Any,
) -> KnownFractionResult:
    """Attribute risk as the share of the other records the intruder knows grows.

    Runs :func:`~bayes_risk.attribute.attribute_risk` with
    ``ScenarioSpec("known_records", known_fraction=f, seed=seed)`` for each ``f`` (nested known
    sets; the stabilised estimator's refits are fitted once and shared). ``f = 1`` is the worst
    case; ``f = 0`` the intruder who knows no other record (exact Bayes, not the low-risk
    approximation of ``scenario="empty"``).

    Parameters
    ----------
    original, synthetic, model
        As in :func:`~bayes_risk.attribute.attribute_risk` (a class P model).
    fractions : sequence of float
        Known shares in ``[0, 1]`` (sorted, duplicates dropped).
    seed : int
        Seed of the random order in which records become known.
    random_seed : int, Generator or None
        As in ``attribute_risk`` (one seed shared by every fraction).
    progressbar : bool
    **kwargs
        ``records``, ``candidates``, ``prior``, ``estimator``, ``allow_other_model`` of
        ``attribute_risk``.

    Returns
    -------
    KnownFractionResult
        One row per fraction (``to_dataframe()``), ``summary()``, ``plot()``; the per-fraction
        results in ``results``.

    Raises
    ------
    ValidationError
        A fraction outside ``[0, 1]``, an empty ``fractions``, an unknown argument.
    NotSupportedError
        A class O or plug-in model.

    Examples
    --------
    >>> curve = known_fraction_curve(orig, syn, model=model,
    ...                              fractions=[0, 0.5, 1])  # doctest: +SKIP
    >>> curve.to_dataframe()[["known_fraction", "mean_p_true", "n_flagged"]]  # doctest: +SKIP
    """
    from bayes_risk.attribute.api import attribute_risk
    from bayes_risk.attribute.knowledge import file_measures, one_seed, shared_refits

    unknown = sorted(set(kwargs) - set(_OPTIONS))
    if unknown:
        raise ValidationError(f"unknown argument(s) for known_fraction_curve: {unknown}.",
                              code="INVALID_ARGUMENT")
    try:
        fr = sorted({float(f) for f in fractions})
    except (TypeError, ValueError):
        raise ValidationError(
            f"fractions must be numbers in [0, 1]. Got {fractions!r}.") from None
    if not fr or fr[0] < 0 or fr[-1] > 1 or not np.all(np.isfinite(fr)):
        raise ValidationError(f"fractions must be one or more numbers in [0, 1]. Got {fr}.")
    seed_all = one_seed(random_seed)
    options = dict(kwargs)
    est = as_spec(options.get("estimator", "auto"), EstimatorSpec, "estimator", "kind",
                  ESTIMATORS)
    if est.augmented is None:
        rest = {k: v for k, v in options.items() if k not in ("estimator", "records")}
        fits = shared_refits(original, synthetic, model=model, records=options.get("records"),
                             random_seed=seed_all, progressbar=progressbar, estimator=est,
                             **rest)
        if fits is not None:
            est = est.replace(augmented=fits, refit_draws=None)
    options["estimator"] = est
    rows, results, codes = [], [], {}
    for f in progress(fr, description="known-records curve", enabled=progressbar):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = attribute_risk(
                original, synthetic, model=model,
                scenario=ScenarioSpec("known_records", known_fraction=f, seed=seed),
                random_seed=seed_all, progressbar=False, **options)
        row = {"known_fraction": f, "n_known": int(res.settings["n_known"])}
        row.update(file_measures(res.records))
        p = res.records["p_true"][res.records["flag_codes"] == ""]
        row["mean_p_true_unflagged"] = float(p.mean()) if p.notna().any() else float("nan")
        rows.append(row)
        results.append(res)
        for c in [*res.warnings, *(getattr(w.message, "code", None) for w in caught)]:
            if c:
                codes.setdefault(c, []).append(f)
    settings = {k: results[0].settings.get(k) for k in
                ("estimator", "prior", "candidates", "n_draws", "m") if k in results[0].settings}
    settings.update(seed=seed, random_seed=seed_all, n=len(original))
    return KnownFractionResult(
        table=pd.DataFrame(rows), results=tuple(results), settings=settings,
        warnings=tuple(codes),
        warning_details={c: f"at known fraction(s) {fs}" for c, fs in codes.items()},
    )


@dataclass(frozen=True, repr=False)
class KnownFractionResult(RiskResult):
    """The risk curve of :func:`known_fraction_curve`: one row of file-level figures per known
    fraction (``mean_p_true``, ``prop_top``, ``mean_baseline``, ``n_records``, ``n_flagged``,
    ``mean_p_true_unflagged``), the per-fraction results in ``results``."""

    table: pd.DataFrame
    results: tuple[Any, ...]
    settings: dict[str, Any]
    warnings: tuple[str, ...] = ()
    warning_details: dict[str, str] = field(default_factory=dict)

    plot_kinds: ClassVar[tuple[str, ...]] = ("curve",)

    def to_dataframe(self) -> pd.DataFrame:
        """The curve: one row per known fraction."""
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe curve and settings (not the per-fraction results)."""
        from bayes_risk._io import to_jsonable

        return to_jsonable({"table": self.table.to_dict(orient="list"),
                            "settings": self.settings, "warnings": list(self.warnings)})

    @property
    def structured_warnings(self) -> list[ResultWarning]:
        # warning_details says where (the fractions); the meaning is the code's own
        return [ResultWarning(c, message(c), self.warning_details.get(c, ""))
                for c in self.warnings]

    def summary(self) -> Summary:
        """The curve as a table, with the settings and how to read it."""
        s = self.settings
        return Summary(
            "Attribute risk by the share of other records the intruder knows",
            header=[("records", s.get("n")), ("estimator", s.get("estimator")),
                    ("prior", s.get("prior")), ("order seed", s.get("seed"))],
            tables={"risk by known fraction": self.table},
            notes=["known_fraction 1 is the worst case (every other record known); 0 is an "
                   "intruder who knows none. A flagged record's estimate cannot be trusted "
                   "(small effective sample of the reweighted draws): compare "
                   "mean_p_true_unflagged and n_flagged. The risk need not grow "
                   "monotonically with the share known."],
            warnings=self.structured_warnings,
        )

    def _plot_curve(self, ax: Any, measure: str = "mean_p_true") -> Any:
        if measure not in ("mean_p_true", "prop_top", "mean_p_true_unflagged"):
            raise ValidationError(
                "measure must be 'mean_p_true', 'prop_top' or 'mean_p_true_unflagged'. "
                f"Got {measure!r}.")
        t = self.table
        x = 100 * t["known_fraction"].to_numpy(float)
        ax.plot(x, 100 * t[measure].to_numpy(float), "o-", color="C0", label=measure)
        ax.plot(x, 100 * t["mean_baseline"].to_numpy(float), "--", color="k",
                label="random guess 1/G")
        bad = t["n_flagged"].to_numpy() > 0
        if bad.any():
            ax.scatter(x[bad], 100 * t[measure].to_numpy(float)[bad], s=80, facecolors="none",
                       edgecolors="C3", label="some records flagged")
        ax.set_xlabel("other records known to the intruder (%)")
        ax.set_ylabel(f"{measure} (%)")
        ax.set_title("Attribute risk by the share of records known", fontsize=10)
        legend_below(ax)
        return ax
