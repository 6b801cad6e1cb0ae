"""Result of :func:`bayes_risk.audit`: the plan, one outcome per step, the verdict lines."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.auditing.plan import AuditPlan
from bayes_risk.results._base import RiskResult
from bayes_risk.results._summary import ResultWarning, Summary

__all__ = ["AuditResult", "Baseline", "StepOutcome", "Verdict"]


@dataclass
class StepOutcome:
    """One step of an audit.

    Attributes
    ----------
    name, title : str
        Step identifier (``"identification"``) and heading.
    status : {"ran", "skipped", "failed"}
        ``skipped``: the step cannot run on this release, or the caller asked to skip it
        (``reason`` says which); ``failed``: the measure raised an error that is not about the
        input (``reason`` holds it; ``extra["traceback"]`` the traceback): the audit is then
        incomplete (:attr:`AuditResult.complete`).
    result : object
        The measure's result object (``UtilitySummary``, ``IdentificationResult``,
        ``AttributeRiskResult``, dict of ``DisclosureMeasures`` by target), or ``None``.
    folder : str or None
        Sub-folder of the audit's ``out`` holding the step's files.
    files : list of str
        The files written, relative to ``folder``.
    warnings : list of dict
        Every warning the step raised: ``code``, ``category``, ``message``, ``count``.
    seconds : float
        Wall time of the step.
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
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


#: the steps with verdict lines (a step that did not run has none: the report says so)
VERDICT_STEPS: tuple[str, ...] = ("utility", "identification", "attribute", "membership",
                                   "disclosure")

#: warning codes of a measure that question the value of a verdict line; the line names them
CAVEATS: dict[str, tuple[str, ...]] = {
    "s_pmse": ("SEPARATION", "NOT_CONVERGED", "LARGE_MODEL", "ZERO_DF", "FEW_PAIRS",
               "NO_SPLITS"),
    "overlap": ("M_EQUALS_ONE", "SMALL_T", "DEGENERATE_INTERVAL"),
    "identification": ("IPF_NOT_CONVERGED", "F_BELOW_ONE"),
    "attribute": ("RHAT_HIGH", "LOW_ESS", "TRUNCATION_TOO_SMALL", "H_TOO_SMALL",
                  "APPROXIMATE_NONPARAMETRIC"),
    "DiSCO": ("TARGET_MOSTLY_UNIQUE",),
    "membership": ("MEMBERSHIP_FLAGGED", "H_TOO_SMALL", "RHAT_HIGH", "LOW_ESS",
                   "APPROXIMATE_POSTERIOR"),
}


def _fit_order(fit: Any) -> tuple[int, int]:
    """The saved model first, then the augmented fits in order (``augmented_<l>``)."""
    name = str(fit)
    if name == "model":
        return (0, 0)
    tail = name.removeprefix("augmented_")
    return (1, int(tail)) if tail.isdigit() else (2, 0)


def _caveats(kind: str, codes: Any) -> tuple[str, ...]:
    have = set(codes or ())
    return tuple(c for c in CAVEATS[kind] if c in have)


@dataclass(frozen=True)
class Verdict:
    """One line of the first screen: a measure against its threshold.

    ``warnings`` are the codes of warnings of the measure that question this value (for
    example ``SEPARATION``: the chi-square null of S_pMSE is not valid); the report names them
    on the line. Rates (``unit`` ``"%"``) are in per cent, their threshold too. ``spread`` is
    the range of the measure over the ``m`` datasets, or says that it is pooled. A line on the
    wrong side of its threshold has a ``cause`` (one sentence with numbers from this run: what
    drives the value) and its ``remedies`` (changes to the release that would move it); a line
    within its threshold has neither.
    """

    step: str
    measure: str
    value: float
    threshold: float
    direction: str  # "max": the value should not exceed the threshold; "min": not fall below
    source: str | None  # file (relative to the audit folder) the value comes from
    detail: str = ""
    warnings: tuple[str, ...] = ()
    #: "%" for rates (value and threshold in per cent), "" for ratios
    unit: str = ""
    #: the spread over the m datasets ("per dataset 1.2–3.4 %") or "pooled, no spread"
    spread: str = ""
    #: who the intruder of this line is and what they know
    intruder: str = ""
    #: on the wrong side of the threshold: what drives the value, with numbers from this run
    cause: str = ""
    #: on the wrong side of the threshold: the changes to the release that would move it
    remedies: tuple[str, ...] = ()

    @property
    def exceeds(self) -> bool:
        """Whether the value is on the wrong side of the threshold (NaN counts as exceeding)."""
        if not np.isfinite(self.value):
            return True
        return self.value > self.threshold if self.direction == "max" else (
            self.value < self.threshold
        )


def _pct(x: Any) -> float:
    return float(x) * 100


def _range(values: Any, unit: str = "") -> str:
    """``"per dataset a–b"`` of the finite ``values`` (one per synthetic dataset)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    if not v.size:
        return "no finite value per dataset"
    u = f" {unit}" if unit else ""
    return f"per dataset {v.min():.3g}–{v.max():.3g}{u} (min–max over {v.size})"


def _caused(v: Verdict, cause: str, remedies: Sequence[str]) -> Verdict:
    """``v`` with its cause and remedies when it is on the wrong side of its threshold."""
    if not v.exceeds or not cause:
        return v
    return replace(v, cause=cause, remedies=tuple(remedies))


@dataclass(frozen=True)
class Baseline:
    """A figure that cannot depend on the release: a baseline of the original.

    The intruder matches on columns the release carries unchanged (no synthesized column), so
    every synthetic dataset gives the same value (warning ``RELEASE_INDEPENDENT``). It is
    reported beside the verdict, never as a verdict line on the release; ``threshold`` is the
    release-board threshold of the measure, for reference.
    """

    step: str
    measure: str
    value: float
    threshold: float
    source: str | None
    why: str
    code: str = "RELEASE_INDEPENDENT"
    #: "%" for rates (value and threshold in per cent), as on the verdict lines
    unit: str = ""


@dataclass(repr=False)
class AuditResult(RiskResult):
    """What :func:`bayes_risk.auditing.audit` returns.

    Like every result of the package it has ``summary()`` (the verdict, the baselines and the
    steps as a printable :class:`~bayes_risk.results.Summary`; a notebook shows it),
    ``to_dataframe()`` (the verdict lines), ``to_dict()`` (what ``summary.json`` holds),
    ``plot(kind="verdict")`` and ``structured_warnings``; ``to_html(path)`` and
    ``to_markdown(path)`` write the full report.

    Attributes
    ----------
    plan : AuditPlan
        Every setting, with where it came from.
    steps : list of StepOutcome
        One per step, in order (run, skipped with the reason, or failed).
    root : Path or None
        The audit folder (``out``) holding the steps' files, or ``None``.
    """

    plan: AuditPlan
    steps: list[StepOutcome]
    root: Path | None = None

    def step(self, name: str) -> StepOutcome:
        """The outcome of step ``name`` (``"utility"``, ``"identification"``, …)."""
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)

    def _src(self, step: str, file: str) -> str | None:
        s = self.step(step)
        return f"{s.folder}/{file}" if s.folder is not None else None

    @property
    def verdicts(self) -> list[Verdict]:
        """The verdict lines: each headline measure of the release against its threshold.

        A measure that cannot depend on the release is not among them: see :attr:`baselines`.
        """
        return [v for v in self._lines() if isinstance(v, Verdict)]

    @property
    def baselines(self) -> list[Baseline]:
        """Headline figures that cannot depend on the release (warning ``RELEASE_INDEPENDENT``):
        baselines of the original, reported apart from the verdict."""
        return [v for v in self._lines() if isinstance(v, Baseline)]

    @property
    def complete(self) -> bool:
        """Whether every step ran or was skipped for a stated reason (none failed)."""
        return not self.failed_steps

    @property
    def failed_steps(self) -> list[StepOutcome]:
        """The steps whose measure raised an error (the audit is incomplete)."""
        return [s for s in self.steps if s.status == "failed"]

    def _lines(self) -> list[Verdict | Baseline]:
        th = self.plan.thresholds
        m = self.plan.m
        out: list[Verdict | Baseline] = []
        u = self.step("utility")
        if u.status == "ran":
            r = u.result
            no_intruder = "none (utility: how closely the release reproduces the original)"
            v = Verdict("utility", "mean S_pMSE (pMSE / null expectation)",
                        float(r.pmse.mean_ratio), th.s_pmse, "max",
                        self._src("utility", "summary.json"),
                        f"{r.pmse.null} null", _caveats("s_pmse", r.pmse.warnings),
                        spread=_range(r.pmse.ratio), intruder=no_intruder)
            out.append(_caused(v, *self._utility_cause(u)))
            v = Verdict("utility", "mean confidence-interval overlap",
                        float(r.mean_overlap), th.overlap, "min",
                        self._src("utility", "overlap.csv"),
                        warnings=_caveats("overlap", r.warnings),
                        spread=_range(r.overlap_per_dataset) + "; the value combines the "
                        f"intervals of the {m} datasets", intruder=no_intruder)
            out.append(_caused(v, *self._overlap_cause(u)))
        i = self.step("identification")
        if i.status == "ran":
            out += self._identification_lines(i)
        a = self.step("attribute")
        if a.status == "ran":
            s = a.extra["summary"]
            un = s.get("unflagged") or {}
            nf = int(s.get("n_flagged") or 0)
            left_out = (f"; {nf} of {s.get('n_records')} record(s) flagged and left out "
                        "(unassessed: treat them as at risk)" if nf else "")
            v = Verdict("attribute",
                        "share of records whose true values are the most probable",
                        _pct(un.get("prop_top", np.nan)), _pct(th.prop_top), "max",
                        self._src("attribute", "summary.json"),
                        f"random guess {_pct(s.get('random_guess_baseline', np.nan)):.3g} %; "
                        f"records with stable estimates{left_out}",
                        _caveats("attribute", a.result.warnings), unit="%",
                        spread=f"pooled: the intruder reads all {m} datasets at once, no spread",
                        intruder="worst case: knows every other record's true values and the "
                        "synthesis model, and guesses this record's synthesized values")
            out.append(_caused(v, *self._attribute_cause(a)))
        mem = self.step("membership")
        if mem.status == "ran":
            out += self._membership_lines(mem)
        d = self.step("disclosure")
        if d.status == "ran":
            seen_keys: set[tuple[str, ...]] = set()
            for t, res in d.result.items():
                sub = f"{t}/" if len(d.result) > 1 else ""
                means = res.means()
                keys = ", ".join(res.keys)
                fixed_keys = self.plan.release_independent_keys(t)
                rep_src = self._src("disclosure", sub + "ident.csv")
                who = f"knows the keys {keys} of every record"
                # repU depends on the keys alone: one line per set of keys, not per target
                if tuple(res.keys) in seen_keys:
                    pass
                elif fixed_keys:
                    out.append(Baseline(
                        "disclosure", f"repU (%), keys {keys}", float(means["repU"]), th.repU,
                        rep_src, f"the keys ({keys}) are not synthesized: repU equals UiO, "
                        "the original's sample uniques on the keys, in every dataset",
                        unit="%"))
                else:
                    v = Verdict("disclosure", f"repU (%), keys {keys}",
                                float(means["repU"]), th.repU, "max", rep_src, unit="%",
                                spread=_range(res.ident["repU"], "%"), intruder=who)
                    out.append(_caused(v, *self._repu_cause(res, t)))
                seen_keys.add(tuple(res.keys))
                dsrc = self._src("disclosure", sub + "attrib.csv")
                if fixed_keys and t not in self.plan.synthesized:
                    out.append(Baseline(
                        "disclosure", f"DiSCO (%), target {t}", float(means["DiSCO"]),
                        th.DiSCO, dsrc, f"neither the keys ({keys}) nor the target are "
                        "synthesized: the release shows the original's values", unit="%"))
                else:
                    v = Verdict("disclosure", f"DiSCO (%), target {t}",
                                float(means["DiSCO"]), th.DiSCO, "max", dsrc,
                                warnings=_caveats("DiSCO", res.warnings), unit="%",
                                spread=_range(res.attrib["DiSCO"], "%"),
                                intruder=f"{who} and reads the target {t} off the release")
                    out.append(_caused(v, *self._disco_cause(res, t)))
        return out

    # ----- causes: one sentence from the run's numbers, and the remedies ---------------------
    def _unsynthesized(self, cols: Sequence[str]) -> list[str]:
        return [c for c in cols if c not in self.plan.synthesized]

    def _smoothing(self, cols: Sequence[str]) -> list[str]:
        """The smoothing remedy, when the release is CART's (which releases donor values) and
        some of ``cols`` are synthesized numeric columns (smoothing applies to those only)."""
        num = [c for c in cols if c in self.plan.numeric_synthesized]
        if (self.plan.method or "").lower() not in ("cart", "ctree") or not num:
            return []
        return [f"smooth CART's numeric values of {', '.join(num)} (bayes-risk synthesize "
                "--smoothing; smoothing=True), so that donors' original values are not "
                "released as they are"]

    def _utility_cause(self, u: StepOutcome) -> tuple[str, list[str]]:
        top = u.extra.get("drivers") or []
        if not top:
            return "", []
        names = ", ".join(f"{d['variable']} ({d['points']:.3g} percentage points)" for d in top)
        return (f"the synthesized variables whose marginal distribution differs most from the "
                f"original's (largest difference of a level's share or of the distribution "
                f"functions, pooled datasets): {names}",
                [f"improve the synthesis model of {top[0]['variable']} (predictors, visit "
                 "sequence, method) and check its marginal in the comparison section"])

    def _overlap_cause(self, u: StepOutcome) -> tuple[str, list[str]]:
        ov = u.result.overlap
        if not len(ov) or "overlap" not in ov:
            return "", []
        low = ov.sort_values("overlap").head(3)
        names = ", ".join(f"{e} ({o:.2f})" for e, o in zip(low["estimand"], low["overlap"],
                                                           strict=True))
        return (f"the estimands with the smallest interval overlap: {names}",
                ["improve the synthesis model of the variables of those estimands"])

    def _attribute_cause(self, a: StepOutcome) -> tuple[str, list[str]]:
        dr = a.extra.get("drivers")
        if not dr:
            return "", []
        m = dr["m"]
        pooled = dr.get("scope") == "pooled"
        among = "the pooled values" if pooled else f"the record's {m} released values"
        per = "; ".join(
            f"{c}: truth among {among} for "
            f"{x['pct_true_released']:.3g} % of records, "
            + (f"a ±k % alternative for {x['pct_alternative_released']:.3g} %"
               if x["kind"] == "numeric" else
               f"another level for {x['pct_alternative_released']:.3g} %")
            for c, x in dr["columns"].items())
        cause = (f"for {dr['pct_any_true_released']:.3g} % of the {dr['n_records']:,} assessed "
                 "records a true synthesized value appears among the values released "
                 + ("in the pooled datasets (a fully synthetic release: no record-by-record "
                    "correspondence)" if pooled
                    else f"for that record across the m = {m} datasets")
                 + f" ({per}); a candidate that the "
                 "release shows is ranked above one it never shows")
        if (self.plan.method or "").lower() in ("cart", "ctree"):
            cause += ", as CART releases original (donor) values"
        rem = [*self._smoothing(self.plan.synthesized),
               f"release fewer synthetic datasets (m = {m} now): each is one more chance "
               "that a record's true value is released",
               "coarsen the synthesized values (bands), so fewer are unique to a record"]
        return cause, rem

    def _identification_cause(self, i: StepOutcome) -> tuple[str, list[str]]:
        dr = i.extra.get("drivers")
        if not dr:
            return "", []
        known = ", ".join(self.plan.known)
        cause = (f"{dr['n_sample_unique']:,} of {dr['n_targets']:,} targets "
                 f"({dr['pct_sample_unique']:.3g} %) are unique in the original on the known "
                 f"columns ({known}, exact values)")
        eq = dr.get("pct_released_equal") or {}
        if eq:
            cause += "; the released value equals the original for " + ", ".join(
                f"{c}: {x:.3g} % of records" for c, x in eq.items()) + " (mean over datasets)"
        rem = ["coarsen the known columns (bands of ages, fewer levels), so fewer targets are "
               "unique", *self._smoothing(self.plan.known)]
        fixed = self._unsynthesized(self.plan.known)
        if fixed:
            rem.append(f"synthesize a known column the intruder matches on ({', '.join(fixed)} "
                       "released unchanged)")
        return cause, rem

    def _repu_cause(self, res: Any, t: str) -> tuple[str, list[str]]:
        uio = float(np.nanmean(res.ident["UiO"]))
        rep = float(np.nanmean(res.ident["repU"]))
        kb = res.key_baseline
        share = rep / uio * 100 if uio > 0 else float("nan")
        cause = (f"{int(kb['n_sample_uniques']):,} records ({uio:.3g} %) have a key combination "
                 f"unique in the original, among {int(kb['n_key_combinations']):,} "
                 f"combinations; {share:.3g} % of them are reproduced, unique in a synthetic "
                 "dataset too (mean over datasets)")
        rem = ["coarsen the keys (fewer levels, bands), so fewer combinations are unique"]
        fixed = self._unsynthesized(res.keys)
        if fixed:
            rem.append(f"synthesize a key ({', '.join(fixed)} released unchanged)")
        rem += self._smoothing(res.keys)
        return cause, rem

    def _disco_cause(self, res: Any, t: str) -> tuple[str, list[str]]:
        mean = {c: float(np.nanmean(res.attrib[c])) for c in ("iS", "DiS", "DiSCO", "DiSDiO")
                if c in res.attrib}
        uio = float(np.nanmean(res.ident["UiO"]))
        rep = float(np.nanmean(res.ident["repU"]))
        cause = (f"for {mean.get('DiSCO', np.nan):.3g} % of records the release shows a "
                 f"single value of {t} for their keys and it is their own (a single value: "
                 f"{mean.get('DiS', np.nan):.3g} %; keys that occur in the release: "
                 f"{mean.get('iS', np.nan):.3g} %; also disclosive in the original: "
                 f"{mean.get('DiSDiO', np.nan):.3g} %); {uio:.3g} % of records are unique on "
                 f"the keys in the original, {rep:.3g} % reproduced (means over datasets)")
        rem = ["coarsen the keys, so each combination holds more records with varied "
               f"values of {t}"]
        if t in self.plan.synthesized:
            rem += self._smoothing([t])
        else:
            rem.append(f"synthesize the target {t}")
        fixed = self._unsynthesized(res.keys)
        if fixed:
            rem.append(f"synthesize a key ({', '.join(fixed)} released unchanged)")
        return cause, rem

    def _membership_lines(self, mem: StepOutcome) -> list[Verdict]:
        """The attack's advantage over the base rate (AUC − 0.5, with its bootstrap interval)
        and the share of members whose posterior membership probability exceeds the board's
        probability, over the records with stable estimates (flagged ones are counted on the
        line and left out, as in the attribute line)."""
        th = self.plan.thresholds
        res = mem.result
        f, st = res.file, res.settings
        src = self._src("membership", "summary.json")
        m = self.plan.m
        nf = int(f.get("n_flagged") or 0)
        left_out = (f"; {nf} of {f['n_targets']} target(s) flagged and left out (unassessed: "
                    "treat flagged members as exposed)" if nf else "")

        def iv(key: str, scale: float = 1.0, unit: str = "") -> str:
            x = f.get(key)
            if not x or not np.all(np.isfinite(x)):
                return "no bootstrap interval"
            return f"95 % bootstrap interval {x[0] * scale:.3g}–{x[1] * scale:.3g}{unit}"

        rec = res.records
        ok = (rec["flag_codes"] == "").to_numpy()
        non = ok & (rec["role"] == "non-member").to_numpy()
        pthr = float(st["threshold"])
        share_non = (float(np.mean(rec["p_member"].to_numpy()[non] > pthr)) if non.any()
                     else float("nan"))
        dcr = (f"; the distance-to-closest-record attack: AUC − 0.5 = "
               f"{f['dcr_auc_advantage']:.3g}" if "dcr_auc_advantage" in f else "")
        who = ("worst case: knows every other record's true values, the synthesis model and "
               f"the release ({m} dataset{'s' if m > 1 else ''}), holds a record and asks "
               "whether it was in the confidential data (prior membership probability "
               f"{st['prior']:.3g})")
        spread = ("one dataset, no spread" if m == 1 else
                  f"pooled: the intruder reads all {m} datasets at once, no spread")
        caveats = _caveats("membership", res.warnings)
        cause = self._membership_cause(mem)
        adv = Verdict("membership", "membership attack's advantage over the base rate "
                      "(AUC − 0.5)", float(f["auc_advantage"]), th.membership_advantage,
                      "max", src,
                      f"{iv('auc_advantage_interval')}; {f['n_members']:,} members against "
                      f"{f['n_non_members']:,} holdout records; TPR − FPR at P(member) > "
                      f"{pthr:g}: {f['tpr_fpr']:.3g}{dcr}{left_out}",
                      caveats, spread=spread, intruder=who)
        share = Verdict("membership", f"share of members with P(member) > {pthr:g}",
                        _pct(f["share_members_above"]), _pct(th.membership_share), "max", src,
                        f"{iv('share_members_above_interval', 100, ' %')}; holdout records "
                        f"above it: {_pct(share_non):.3g} %{left_out}",
                        caveats, unit="%", spread=spread, intruder=who)
        return [_caused(adv, *cause), _caused(share, *cause)]

    def _membership_cause(self, mem: StepOutcome) -> tuple[str, list[str]]:
        f, st = mem.result.file, mem.result.settings
        m = self.plan.m
        cause = (f"the members' mean posterior membership probability is "
                 f"{f['mean_p_member_members']:.3g} against {f['mean_p_member_non_members']:.3g}"
                 " for the holdout records")
        if "dcr_mean_members" in f:
            cause += (f"; the members' mean distance to the closest released record is "
                      f"{f['dcr_mean_members']:.3g} against {f['dcr_mean_non_members']:.3g}")
        ov = f.get("dcr_overfitting")
        if ov:
            cause += (f", and {_pct(ov['share_closer_to_training']):.3g} % of synthetic rows are "
                      "closer to a training record than to a holdout record (50 % when the "
                      "release does not imitate its training records)")
        us = f.get("unsynthesized")
        rem: list[str] = []
        if us:
            cols = ", ".join(us["columns"])
            cause += (f"; the release shows the unsynthesized values ({cols}) of every record: "
                      "alone they multiply a member's likelihood ratio by a median of "
                      f"{us.get('median_factor_members', float('nan')):.3g} (the inverse of "
                      "their share in the population), "
                      f"{_pct(us['share_members_unique']):.3g} % of members are the only record "
                      f"of their cell, and {_pct(us['share_non_members_matching']):.3g} % of "
                      "holdout records have the values of the record they are compared with")
            rem.append(f"synthesize or coarsen the unsynthesized columns ({cols}), so that a "
                       "record's released values are shared by more records of the population")
        rem += [f"release fewer synthetic datasets (m = {m} now): the likelihood ratio of "
                "membership multiplies over the datasets",
                "fit a smoother synthesis model (fewer components or predictors, a stronger "
                f"prior) than the {st['model']}, so that the release depends less on any one "
                "record"]
        return cause, rem

    def _identification_lines(self, i: StepOutcome) -> list[Verdict | Baseline]:
        """Each line reads the larger of two intruders' figures: the one who holds all m
        datasets (probabilities pooled over them, Reiter & Mitra 2009: the defaults of
        ``bayes-risk identification``) and the one who holds one dataset (the mean over the
        datasets, Hornby & Hu 2021), each at its own maximising radius when the sweep ran. The
        pooled intruder is usually the stronger (CEdata, CART, m = 5: true match rate 1.2 %
        against 0.31 %), so the per-dataset mean alone would understate the risk."""
        th = self.plan.thresholds
        iw = _caveats("identification", i.result.warnings)
        pooled = i.extra.get("pooled")
        if pooled is None:  # a result made before the pooled figures existed
            return self._per_dataset_lines(i, iw)
        head = pooled.headline.file
        sw = i.extra.get("sweep")
        per = (i.extra.get("at_r_star") or i.result).file
        n = float(head["n_targets"])
        m = self.plan.m
        at = " at the maximising radius" if pooled.sweep is not None else ""
        r_pool = f" (radius {pooled.sweep.r_star})" if pooled.sweep is not None else ""
        r_per = f" (radius {sw.r_star})" if sw is not None else ""
        per_emr = (float(sw.risk_star) if sw is not None
                   else float(per["expected_match_risk"])) / n
        src = self._src("identification", "summary.json")
        # the per-dataset figures, one per dataset, at the radius the line reads
        pd_src = i.extra.get("at_r_star") or i.result
        pdd = getattr(pd_src, "per_dataset", None) or {}
        per_emr_each = (np.asarray(sw.risk[sw.argmax[0]], dtype=float) / n
                        if sw is not None and sw.argmax else
                        np.asarray(pdd.get("expected_match_risk", []), dtype=float) / n)
        per_tmr_each = np.asarray(pdd.get("true_match_rate_targets", []), dtype=float)
        lines = []
        for label, vp, vd, each in (
                (f"expected match rate{at}", float(head["expected_match_risk"]) / n, per_emr,
                 per_emr_each),
                (f"true match rate (correct unique matches){at}",
                 float(head["true_match_rate_targets"]),
                 float(per["true_match_rate_targets"]), per_tmr_each)):
            use_pooled = not vd > vp  # NaN in the per-dataset figure: the pooled one
            vp, vd = _pct(vp), _pct(vd)
            detail = (f"{'larger' if use_pooled else 'smaller'}: pooled over the m = {m} "
                      f"datasets {vp:.3g} %{r_pool}; {'smaller' if use_pooled else 'larger'}: "
                      f"mean per dataset {vd:.3g} %{r_per}")
            rng = _range(each * 100, "%")
            spread = (f"pooled over the {m} datasets, no spread; {rng}" if use_pooled
                      else rng)
            lines.append((label, vp if use_pooled else vd, detail, spread))
        thr = (_pct(th.expected_match_rate), _pct(th.true_match_rate))
        if self.plan.identification_release_independent:
            why = (f"the intruder knows only unsynthesized columns "
                   f"({', '.join(self.plan.known)}), which the release carries unchanged")
            return [Baseline("identification", lab, v, t, src, f"{why}; {d}", unit="%")
                    for (lab, v, d, _), t in zip(lines, thr, strict=True)]
        who = self._identification_intruder()
        cause = self._identification_cause(i)
        return [_caused(Verdict("identification", lab, v, t, "max", src, d, iw,
                                unit="%", spread=sp, intruder=who), *cause)
                for (lab, v, d, sp), t in zip(lines, thr, strict=True)]

    def _identification_intruder(self) -> str:
        rad = ", ".join(f"{c} within {r:g}" for c, r in self.plan.radius.items())
        return (f"knows {', '.join(self.plan.known)} of every target"
                + (f" ({rad})" if rad else "") + "; holds one or all of the "
                f"{self.plan.m} datasets (the larger figure is read)")

    def _per_dataset_lines(self, i: StepOutcome,
                           iw: tuple[str, ...]) -> list[Verdict | Baseline]:
        th = self.plan.thresholds
        s = i.result.file
        n = float(s["n_targets"])
        sw = i.extra.get("sweep")
        star = i.extra.get("at_r_star")
        lines: list[tuple[str, float, float, str | None, str]] = []
        if sw is not None:
            lines.append(("expected match rate at the maximising radius",
                          float(sw.risk_star) / n, th.expected_match_rate,
                          self._src("identification", "radius_sweep.csv"),
                          f"radius {sw.r_star}"))
        else:
            lines.append(("expected match rate", float(s["expected_match_rate"]),
                          th.expected_match_rate, self._src("identification", "summary.json"),
                          ""))
        if sw is not None and star is not None:  # at the same radius as the line above
            lines.append(("true match rate (correct unique matches) at the maximising radius",
                          float(star.file["true_match_rate_targets"]), th.true_match_rate,
                          self._src("identification", "summary.json"), f"radius {sw.r_star}"))
        else:
            lines.append(("true match rate (correct unique matches)",
                          float(s["true_match_rate_targets"]), th.true_match_rate,
                          self._src("identification", "summary.json"), ""))
        lines = [(lab, _pct(v), _pct(t), src, d) for lab, v, t, src, d in lines]
        if self.plan.identification_release_independent:
            why = (f"the intruder knows only unsynthesized columns "
                   f"({', '.join(self.plan.known)}), which the release carries unchanged")
            return [Baseline("identification", m, v, t, src,
                             why + (f"; {d}" if d else ""), unit="%")
                    for m, v, t, src, d in lines]
        who = self._identification_intruder()
        cause = self._identification_cause(i)
        pdd = getattr(star or i.result, "per_dataset", None) or {}
        nt = float(s["n_targets"])
        each = (np.asarray(sw.risk[sw.argmax[0]], dtype=float) / nt if sw is not None and
                sw.argmax else np.asarray(pdd.get("expected_match_risk", []), dtype=float) / nt,
                np.asarray(pdd.get("true_match_rate_targets", []), dtype=float))
        return [_caused(Verdict("identification", m, v, t, "max", src, d, iw, unit="%",
                                spread=_range(e * 100, "%"), intruder=who), *cause)
                for (m, v, t, src, d), e in zip(lines, each, strict=True)]

    @property
    def not_assessed(self) -> list[str]:
        """What has no verdict line, and why: steps that were skipped or failed, and the
        identification risk of the release when the intruder knows no synthesized column."""
        out = [f"{s.title.lower()} ({s.status})" for s in self.steps
               if s.status != "ran" and s.name in VERDICT_STEPS]
        if self.step("identification").status == "ran" and \
                self.plan.identification_release_independent:
            out.append("identification risk of the release (the intruder knows no synthesized "
                       "column; its figures are a baseline of the original)")
        return out

    @property
    def verdict_text(self) -> str:
        """The verdict in words. When a step failed, the first sentence says the audit is
        incomplete and which steps failed."""
        return " ".join(self.verdict_sentences())

    def verdict_sentences(self) -> list[str]:
        """The sentences of :attr:`verdict_text`."""
        parts = []
        failed = self.failed_steps
        if failed:
            names = ", ".join(f"{s.title.lower()} ({s.reason})" for s in failed)
            parts.append(
                f"The audit is incomplete: {len(failed)} step{'s' if len(failed) > 1 else ''} "
                f"failed: {names}; {'its' if len(failed) == 1 else 'their'} measures are not "
                "assessed and this verdict does not cover them.")
        v = self.verdicts
        n = sum(x.exceeds for x in v)
        parts.append(f"{n} of {len(v)} headline measures of the release are on the wrong side "
                     "of their threshold.")
        nc = sum(bool(x.warnings) for x in v)
        if nc:
            parts.append(f"{nc} {'carries a warning' if nc == 1 else 'carry a warning'} of "
                         f"{'its' if nc == 1 else 'their'} measure that questions the value "
                         f"(named on the line): read {'it' if nc == 1 else 'them'} with the "
                         "warning, not as a pass or a fail alone.")
        na = self.not_assessed
        if na:
            parts.append(f"Not assessed (no verdict line): {', '.join(na)}.")
        nb = len(self.baselines)
        if nb:
            parts.append(f"{nb} figure{'s' if nb > 1 else ''} cannot depend on the release "
                         "(RELEASE_INDEPENDENT) and "
                         f"{'is' if nb == 1 else 'are'} reported as a baseline of the original, "
                         "not as a verdict.")
        return parts

    @property
    def warnings(self) -> list[dict[str, Any]]:
        """Every warning of every step: ``step``, ``code``, ``message``, ``count``."""
        return [{"step": s.name, **w} for s in self.steps for w in s.warnings]

    @property
    def convergence_checks(self) -> list[dict[str, Any]]:
        """The failed MCMC convergence checks of the fits the steps used (the saved model and
        the augmented fits of the attribute step): ``step``, ``code`` (``RHAT_HIGH``,
        ``LOW_ESS``), ``fit``, ``quantity``, ``statistic`` (``rhat``, ``ess_bulk``,
        ``ess_tail``), ``value`` and ``threshold``."""
        out = [{"step": s.name, **c} for s in self.steps for w in s.warnings
               for c in w.get("checks") or []]
        return sorted(out, key=lambda c: _fit_order(c.get("fit")))

    def verdict_frame(self) -> pd.DataFrame:
        """The verdict lines as a table."""
        return pd.DataFrame(
            [{"step": v.step, "measure": v.measure, "value": v.value,
              "threshold": v.threshold, "direction": v.direction, "exceeds": v.exceeds,
              "unit": v.unit, "spread": v.spread, "intruder": v.intruder,
              "source": v.source, "detail": v.detail, "warnings": list(v.warnings),
              "cause": v.cause, "remedies": list(v.remedies)}
             for v in self.verdicts],
            columns=["step", "measure", "value", "threshold", "direction", "exceeds", "unit",
                     "spread", "intruder", "source", "detail", "warnings", "cause",
                     "remedies"],
        )

    def baseline_frame(self) -> pd.DataFrame:
        """The figures that cannot depend on the release (baselines of the original)."""
        return pd.DataFrame(
            [{"step": b.step, "measure": b.measure, "value": b.value,
              "threshold": b.threshold, "unit": b.unit, "source": b.source, "why": b.why,
              "code": b.code}
             for b in self.baselines],
            columns=["step", "measure", "value", "threshold", "unit", "source", "why", "code"],
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: verdicts, steps (status, reason, files, warnings), settings, and
        the failed convergence checks of the fits (:attr:`convergence_checks`)."""
        from bayes_risk._io import to_jsonable

        return to_jsonable({
            "command": "audit",
            "n_records": self.plan.n_records,
            "m": self.plan.m,
            "complete": self.complete,
            "failed_steps": [s.name for s in self.failed_steps],
            "verdict_text": self.verdict_text,
            "verdicts": self.verdict_frame().to_dict(orient="records"),
            "baseline": self.baseline_frame().to_dict(orient="records"),
            "steps": [
                {"name": s.name, "status": s.status, "reason": s.reason, "folder": s.folder,
                 "files": s.files, "seconds": s.seconds, "warnings": s.warnings,
                 **({"traceback": s.extra["traceback"]} if "traceback" in s.extra else {})}
                for s in self.steps
            ],
            "settings": self.plan.settings_frame().to_dict(orient="records"),
            "thresholds": self.plan.thresholds.to_dict(),
            "step_warnings": self.warnings,
            "failed_convergence_checks": self.convergence_checks,
            "warnings": list(dict.fromkeys(w["code"] for w in self.warnings)),
        })

    def write_summary(self, path: str | os.PathLike[str]) -> Path:
        """Write ``to_dict()`` as JSON."""
        from bayes_risk._io import write_json

        write_json(path, self.to_dict())
        return Path(path)

    def to_html(self, path: str | os.PathLike[str]) -> Path:
        """Write the self-contained HTML report (CSS and plots embedded, no network fetch).

        Numbers link to the step files they come from, relative to ``path``.
        """
        from bayes_risk.auditing.render import write_report

        return write_report(self, path, fmt="html")

    def to_markdown(self, path: str | os.PathLike[str]) -> Path:
        """Write the report as Markdown (plots as PNG files in ``<stem>_figures/`` beside it)."""
        from bayes_risk.auditing.render import write_report

        return write_report(self, path, fmt="md")

    # ----- the result family's interface (summary, table, plot, warnings) -------------------
    plot_kinds = ("verdict",)

    def summary(self) -> Summary:
        """Printable summary: the verdict in words, the verdict lines against their thresholds,
        the baselines of the original, every step's status and the warnings of every step."""
        p = self.plan
        header = [("records", p.n_records), ("synthetic datasets (m)", p.m),
                  ("synthesis method", p.method or "unknown"),
                  ("synthesized columns", ", ".join(p.synthesized)),
                  ("intruder knows (identification)", ", ".join(p.known)),
                  ("complete", "yes" if self.complete else
                   "no: " + ", ".join(s.name for s in self.failed_steps) + " failed")]
        verdict = self.verdict_frame()
        tables: dict[str, pd.DataFrame] = {}
        if len(verdict):
            v = verdict[["step", "measure", "value", "unit", "threshold", "direction",
                         "exceeds", "spread"]].copy()
            v["direction"] = v["direction"].map({"max": "at most", "min": "at least"})
            v["questioned by"] = [", ".join(w) for w in verdict["warnings"]]
            tables["Verdict lines (value against the release board's threshold)"] = v
            c = verdict.loc[verdict["cause"] != "", ["measure", "cause", "remedies"]].copy()
            if len(c):
                c["remedies"] = ["; ".join(r) for r in c["remedies"]]
                tables["Cause and remedies of each line past its threshold"] = c
        base = self.baseline_frame()
        if len(base):
            tables["Baseline of the original (cannot depend on the release)"] = base[
                ["step", "measure", "value", "threshold", "why"]]
        tables["Steps"] = pd.DataFrame(
            [{"step": s.name, "status": s.status, "reason": s.reason or "",
              "seconds": round(s.seconds, 1)} for s in self.steps])
        notes = [self.verdict_text]
        if self.root is not None:
            notes.append(f"Files of every step: {self.root}")
        return Summary("Audit of a synthetic release", header=header, tables=tables,
                       notes=notes, warnings=self.structured_warnings)

    def to_dataframe(self) -> pd.DataFrame:
        """The verdict lines (:meth:`verdict_frame`)."""
        return self.verdict_frame()

    @property
    def structured_warnings(self) -> list[ResultWarning]:
        """The warnings of every step, each once per step, with the step as ``where``."""
        seen: dict[tuple[str, str], ResultWarning] = {}
        for w in self.warnings:
            key = (w["step"], str(w.get("code")))
            if key not in seen:
                msg = str(w.get("message", ""))
                code = str(w.get("code"))
                if msg.startswith(f"{code}: "):
                    msg = msg[len(code) + 2:]
                seen[key] = ResultWarning(code, msg, f"{w['step']} step")
        return list(seen.values())

    def _figsize(self, kind: str) -> tuple[float, float]:
        return (8.0, 1.2 + 0.5 * max(len(self.verdicts), 1))

    def _plot_verdict(self, ax: Any) -> Any:
        """Each verdict line's value over its threshold (1 = at the threshold): bars past the
        line are on the wrong side (for an "at least" measure, the ratio is threshold over
        value); hatched bars carry a warning that questions the value."""
        vs = self.verdicts
        if not vs:
            ax.text(0.5, 0.5, "no verdict line (no step with one ran)", ha="center",
                    va="center", transform=ax.transAxes)
            ax.set_axis_off()
            return ax.figure
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.array([v.value / v.threshold if v.direction == "max"
                              else v.threshold / v.value for v in vs], dtype=np.float64)
        shown = np.where(np.isfinite(ratio) & (ratio > 0), ratio, np.nan)
        lo = min(0.5, float(np.nanmin(shown)) / 2) if np.isfinite(shown).any() else 0.5
        pos = np.arange(len(vs))[::-1]
        for y, v, r in zip(pos, vs, shown, strict=True):
            if np.isnan(r):
                ax.text(lo * 1.1, y, "not computed or 0", va="center", fontsize=8)
                continue
            ax.barh(y, r - lo, left=lo, color="#c0392b" if v.exceeds else "#2e86c1",
                    hatch="//" if v.warnings else None, edgecolor="#333333", linewidth=0.5)
        ax.set_xscale("log")
        ax.axvline(1.0, color="black", lw=1)
        labels = [textwrap.fill(f"{v.step}: {v.measure}", 38) for v in vs]
        ax.set_yticks(pos, labels, fontsize=7)
        ax.set_xlabel("value / threshold, log scale (right of 1: wrong side; hatched: "
                      "questioned by a warning)", fontsize=8)
        ax.set_title("Audit verdict lines")
        ax.figure.tight_layout()
        # the wrapped labels need about 2.9 inches whatever the renderer measured
        left = 2.9 / ax.figure.get_size_inches()[0]
        if ax.get_position().x0 < left:
            ax.figure.subplots_adjust(left=left)
        return ax.figure

    def __repr__(self) -> str:
        st = ", ".join(f"{s.name}: {s.status}" for s in self.steps)
        n = sum(v.exceeds for v in self.verdicts)
        inc = "" if self.complete else "INCOMPLETE, "
        nb = len(self.baselines)
        return (f"AuditResult({inc}n={self.plan.n_records}, m={self.plan.m}, {st}; "
                f"{n} of {len(self.verdicts)} verdicts exceed their thresholds"
                + (f"; {nb} baseline figure(s) of the original" if nb else "") + ")")
