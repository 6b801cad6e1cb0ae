"""The cause and remedies of a verdict line on the wrong side of its threshold: ``(cause,
remedies)``, chosen from what the synthesizer declares (its ``ModelInfo``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.auditing.plan import AuditPlan

__all__ = [
    "attacks_cause",
    "attribute_cause",
    "disco_cause",
    "donors_clause",
    "identification_cause",
    "membership_cause",
    "overlap_cause",
    "repu_cause",
    "smoothing_remedy",
    "utility_cause",
]

Cause = tuple[str, list[str]]


def _unsynthesized(plan: AuditPlan, cols: Sequence[str]) -> list[str]:
    return [c for c in cols if c not in plan.synthesized]


def smoothing_remedy(plan: AuditPlan, cols: Sequence[str]) -> list[str]:
    """The remedies against released donor values of ``cols`` (those of ``plan.donor_columns``):
    smoothing where the synthesizer can smooth the column, else a method that draws new
    values; none for a column whose values are not donors'."""
    donors = [c for c in cols if c in plan.donor_columns]
    smooth = [c for c in donors if c in plan.smoothable_columns]
    other = [c for c in donors if c not in smooth]
    out = []
    if smooth:
        every = set(smooth) == set(plan.donor_columns) == set(plan.numeric_synthesized)
        how = ("bayes-risk synthesize --smoothing; smoothing=True" if every else
               f"smoothing={smooth!r} in the Python API: the command line's --smoothing smooths "
               "every numeric column")
        out.append(f"smooth the synthesizer's numeric values of {', '.join(smooth)} ({how}), "
                   "so that donors' original values are not released as they are")
    if other:
        by = ", ".join(f"{c} ({plan.donor_columns[c]})" for c in other)
        out.append(f"synthesize the numeric values of {by} with a method that draws new values "
                   "(CART with smoothing, a parametric model such as norm) instead, as these "
                   "methods release donors' original values as they are")
    return out


def donors_clause(plan: AuditPlan, cols: Sequence[str]) -> str:
    """``", as the release gives donors' original values of Income (cart)"`` for the donor
    columns among ``cols`` (empty when none)."""
    donors = [c for c in cols if c in plan.donor_columns]
    return (", as the release gives donors' original values of "
            + ", ".join(f"{c} ({plan.donor_columns[c]})" for c in donors) if donors else "")


def utility_cause(u: StepOutcome) -> Cause:
    """The variables whose marginal distribution differs most (mean S_pMSE line)."""
    top = u.extra.get("drivers") or []
    if not top:
        return "", []
    names = ", ".join(f"{d['variable']} ({d['points']:.3g} percentage points)" for d in top)
    return (f"the synthesized variables whose marginal distribution differs most from the "
            f"original's (largest difference of a level's share or of the distribution "
            f"functions, pooled datasets): {names}",
            [f"improve the synthesis model of {top[0]['variable']} (predictors, visit "
             "sequence, method) and check its marginal in the comparison section"])


def overlap_cause(u: StepOutcome) -> Cause:
    """The estimands with the smallest interval overlap (mean overlap line)."""
    ov = u.result.overlap
    if not len(ov) or "overlap" not in ov:
        return "", []
    low = ov.sort_values("overlap").head(3)
    names = ", ".join(f"{e} ({o:.2f})" for e, o in zip(low["estimand"], low["overlap"],
                                                       strict=True))
    return (f"the estimands with the smallest interval overlap: {names}",
            ["improve the synthesis model of the variables of those estimands"])


def attribute_cause(plan: AuditPlan, a: StepOutcome) -> Cause:
    """How often a record's true synthesized value is among the released values."""
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
    cause = (f"for {dr['pct_any_true_released']:.3g} % of the {dr['n_records']:,} "
             "records the step evaluated (flagged ones included) a true synthesized value "
             "appears among the values released "
             + ("in the pooled datasets (a fully synthetic release: no record-by-record "
                "correspondence)" if pooled
                else f"for that record across the m = {m} datasets")
             + f" ({per}); a candidate that the "
             "release shows is ranked above one it never shows")
    cause += donors_clause(plan, plan.synthesized)
    rem = [*smoothing_remedy(plan, plan.synthesized),
           f"release fewer synthetic datasets (m = {m} now): each is one more chance "
           "that a record's true value is released",
           "coarsen the synthesized values (bands), so fewer are unique to a record"]
    return cause, rem


def identification_cause(plan: AuditPlan, i: StepOutcome) -> Cause:
    """Sample uniques on the known columns and how often the release keeps their values."""
    dr = i.extra.get("drivers")
    if not dr:
        return "", []
    known = ", ".join(plan.known)
    cause = (f"{dr['n_sample_unique']:,} of {dr['n_targets']:,} targets "
             f"({dr['pct_sample_unique']:.3g} %) are unique in the original on the known "
             f"columns ({known}, exact values)")
    eq = dr.get("pct_released_equal") or {}
    if eq:
        cause += "; the released value equals the original for " + ", ".join(
            f"{c}: {x:.3g} % of records" for c, x in eq.items()) + " (mean over datasets)"
    rem = ["coarsen the known columns (bands of ages, fewer levels), so fewer targets are "
           "unique", *smoothing_remedy(plan, plan.known)]
    fixed = _unsynthesized(plan, plan.known)
    if fixed:
        rem.append(f"synthesize a known column the intruder matches on ({', '.join(fixed)} "
                   "released unchanged)")
    return cause, rem


def repu_cause(plan: AuditPlan, res: Any) -> Cause:
    """Sample uniques on the keys and the share of them reproduced (repU line)."""
    uio = float(np.nanmean(res.ident["UiO"]))
    rep = float(np.nanmean(res.ident["repU"]))
    kb = res.key_baseline
    share = rep / uio * 100 if uio > 0 else float("nan")
    cause = (f"{int(kb['n_sample_uniques']):,} records ({uio:.3g} %) have a key combination "
             f"unique in the original, among {int(kb['n_key_combinations']):,} "
             f"combinations; {share:.3g} % of them are reproduced, unique in a synthetic "
             "dataset too (mean over datasets)")
    rem = ["coarsen the keys (fewer levels, bands), so fewer combinations are unique"]
    fixed = _unsynthesized(plan, res.keys)
    if fixed:
        rem.append(f"synthesize a key ({', '.join(fixed)} released unchanged)")
    rem += smoothing_remedy(plan, res.keys)
    if plan.fully_synthetic:
        rem.append("remove the replicated uniques from the release (bayes-risk remedy --remove "
                   "replicated-uniques; bayes_risk.sdc), then audit it again")
    return cause, rem


def disco_cause(plan: AuditPlan, res: Any, target: str) -> Cause:
    """The shares behind DiSCO of ``target``: keys seen, single values, their own values."""
    mean = {c: float(np.nanmean(res.attrib[c])) for c in ("iS", "DiS", "DiSCO", "DiSDiO")
            if c in res.attrib}
    uio = float(np.nanmean(res.ident["UiO"]))
    rep = float(np.nanmean(res.ident["repU"]))
    cause = (f"for {mean.get('DiSCO', np.nan):.3g} % of records the release shows a "
             f"single value of {target} for their keys and it is their own (a single value: "
             f"{mean.get('DiS', np.nan):.3g} %; keys that occur in the release: "
             f"{mean.get('iS', np.nan):.3g} %; also disclosive in the original: "
             f"{mean.get('DiSDiO', np.nan):.3g} %); {uio:.3g} % of records are unique on "
             f"the keys in the original, {rep:.3g} % reproduced (means over datasets)")
    rem = ["coarsen the keys, so each combination holds more records with varied "
           f"values of {target}"]
    if target in plan.synthesized:
        rem += smoothing_remedy(plan, [target])
    else:
        rem.append(f"synthesize the target {target}")
    fixed = _unsynthesized(plan, res.keys)
    if fixed:
        rem.append(f"synthesize a key ({', '.join(fixed)} released unchanged)")
    return cause, rem


def membership_cause(plan: AuditPlan, mem: StepOutcome) -> Cause:
    """Members' against holdout records' membership probabilities and distances."""
    f, st = mem.result.file, mem.result.settings
    m = plan.m
    cause = (f"the members' mean posterior membership probability is "
             f"{f['mean_p_member_members']:.3g} against {f['mean_p_member_non_members']:.3g}"
             " for the holdout records")
    if "dcr_mean_members" in f:
        cause += (f"; the members' mean distance to the closest released record is "
                  f"{f['dcr_mean_members']:.3g} against {f['dcr_mean_non_members']:.3g}")
    ov = f.get("dcr_overfitting")
    if ov:
        closer = float(ov["share_closer_to_training"]) * 100
        cause += (f", and {closer:.3g} % of synthetic rows are closer to a training record "
                  "than to a holdout record (50 % when the release does not imitate its "
                  "training records)")
    us = f.get("unsynthesized")
    rem: list[str] = []
    revealed = f.get("share_members_revealed")
    if revealed is not None and revealed == revealed:  # a CART release (the plug-in ratio)
        cause += (f"; {float(revealed) * 100:.3g} % of members are revealed outright: the "
                  "release copies a value of theirs that no other record of its tree node "
                  "holds, which no record of the population could have produced")
        if revealed > 0:
            rem.append("band the finely recorded columns, smooth the numeric ones or grow "
                       "larger leaves (min_leaf), so that released values are shared by "
                       "several records of each node")
    if us:
        cols = ", ".join(us["columns"])
        unique = float(us["share_members_unique"]) * 100
        matching = float(us["share_non_members_matching"]) * 100
        cause += (f"; the release shows the unsynthesized values ({cols}) of every record: "
                  "alone they multiply a member's likelihood ratio by a median of "
                  f"{us.get('median_factor_members', float('nan')):.3g} (the inverse of "
                  f"their share in the population), {unique:.3g} % of members are the only "
                  f"record of their cell, and {matching:.3g} % of holdout records have the "
                  "values of the record they are compared with")
        rem.append(f"synthesize or coarsen the unsynthesized columns ({cols}), so that a "
                   "record's released values are shared by more records of the population")
    sel = f.get("selection")
    if sel and sel["n_members_released_whole"]:
        whole = sel["n_members_released_whole"]
        cause += (f"; only the records selected by {sel['rule']!r} were synthesized "
                  f"({sel['n_selected']} of {sel['n_records']}), so {whole} member(s) are in "
                  "the release as they are: their membership is revealed outright "
                  "(P(member) = 1)")
        rem.append("synthesize every record (or widen the selection): a record released as "
                   "it is reveals its membership")
    rem += [f"release fewer synthetic datasets (m = {m} now): the likelihood ratio of "
            "membership multiplies over the datasets",
            "fit a smoother synthesis model (fewer components or predictors, a stronger "
            f"prior) than the {st['model']}, so that the release depends less on any one "
            "record"]
    return cause, rem


def _leaking_columns(so: Any, mode: str, dataset: int) -> tuple[int, list[tuple[str, int]]]:
    """Columns of the predicates singling out an original record but no holdout one."""
    q = so.queries
    q = q[(q["dataset"] == dataset) & (q["mode"] == mode)]
    hold = q["singles_out_holdout"].astype("boolean").fillna(False).to_numpy(bool)
    leak = q[q["singles_out_original"].to_numpy(bool) & ~hold]
    counts: dict[str, int] = {}
    for cols in leak["columns"]:
        for c in str(cols).split(","):
            counts[c] = counts.get(c, 0) + 1
    return len(leak), sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def attacks_cause(plan: AuditPlan, a: StepOutcome) -> dict[str, Cause]:
    """The columns of the leaking predicates per singling-out mode; linkability's relinks;
    the secret most at risk of inference."""
    so, lk = a.result["singling_out"], a.result["linkability"]
    out: dict[str, Cause] = {}
    for _, r in so.headline().iterrows():
        mode, ds = str(r["mode"]), int(r["dataset"])
        n_leak, cols = _leaking_columns(so, mode, ds)
        if not cols:
            out[mode] = ("", [])
            continue
        top = [c for c, _ in cols[:3]]
        names = ", ".join(f"{c} ({k})" for c, k in cols[:3])
        kind = ("a value that one synthetic row holds, or the smallest or largest value"
                if mode == "univariate" else "conditions on several columns")
        cause = (f"{n_leak} of the {int(r['n_queries'])} predicates written on synthetic "
                 f"dataset {ds} ({kind}) single out a record of the original but none of "
                 f"the holdout; the columns they use most: {names}")
        cause += donors_clause(plan, top)
        unsyn = _unsynthesized(plan, top)
        rem = [*smoothing_remedy(plan, top),
               f"coarsen or top- and bottom-code {', '.join(top)} (bands, rounding), so that "
               "a value a single synthetic row holds is shared by several records"]
        if unsyn:
            rem.append(f"synthesize {', '.join(unsyn)}: the release carries their values "
                       "unchanged")
        out[mode] = (cause, rem)
    if lk is not None:
        r = lk.headline().iloc[0]
        ca, cb = lk.settings["aux_columns"]
        cols = [*ca, *cb]
        unsyn = _unsynthesized(plan, cols)
        cause = (f"{int(r['n_main'])} of {int(r['n_attacks'])} records of the original are "
                 "relinked through a synthetic row nearest to both of their parts, against "
                 f"{int(r['n_control'])} of the holdout"
                 + (f"; the release carries {', '.join(unsyn)} unchanged" if unsyn else ""))
        rem = [*smoothing_remedy(plan, cols)]
        if unsyn:
            rem.append(f"synthesize {', '.join(unsyn)}, so that no synthetic row keeps a "
                       "record's values on both tables")
        num = [c for c in cols if c in plan.numeric_synthesized]
        rem.append("coarsen the columns of the two tables"
                   + (f" (bands of {', '.join(num)})" if num else "")
                   + ", so that a record's nearest synthetic rows are many")
        out["linkability"] = (cause, rem)
    inf = a.result.get("inference")
    if inf is not None:
        h = inf.headline()
        r = h.iloc[int(np.argmax(h["risk"].fillna(np.inf).to_numpy()))]
        secret = str(r["secret"])
        cause = (f"{secret} is guessed right from the nearest synthetic row for "
                 f"{int(r['n_main'])} of {int(r['n_attacks'])} records of the original against "
                 f"{r['n_control']:.4g} of {r['n_attacks_control']:.4g} of the holdout"
                 + donors_clause(plan, [secret]))
        rem = [*smoothing_remedy(plan, [secret]),
               f"coarsen {secret}" + (" (bands, rounding)" if secret in plan.numeric_synthesized
                                      else " (merge rare categories)")
               + ", so that a record's nearest synthetic row tells less about it"]
        out["inference"] = (cause, rem)
    return out
