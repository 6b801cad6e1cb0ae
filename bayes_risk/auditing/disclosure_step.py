"""The audit's step of synthpop's disclosure measures, sdcMicro's risk of the original and
differencing (:doc:`/methods/disclosure`)."""

from __future__ import annotations

import math
from typing import Any

from bayes_risk._io import write_json
from bayes_risk.auditing.context import (
    StepContext,
    release_independent,
    rows_aligned,
    skipped,
    step_folder,
    write_table,
)
from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.exceptions import arg_name

__all__ = ["disclosure_step", "target_folder"]


def target_folder(targets: Any, t: str) -> str:
    """The folder of target ``t``'s files in ``disclosure/``: ``""`` or a bounded ``SLUG/``."""
    from bayes_risk._io import file_slug

    return f"{file_slug(t)}/" if len(targets) > 1 else ""


def disclosure_step(ctx: StepContext) -> StepOutcome:
    """synthpop's identity / attribute / CAP measures and replicated uniques, per target."""
    from bayes_risk.disclosure import disclosure_measures

    p = ctx.plan
    diff = _differencing(ctx)
    if not p.disclosure_targets:
        return skipped("disclosure", "no target: every synthesized column is known to the "
                       f"intruder; give {arg_name('targets', '[...]', cli='COL')}.",
                       differencing=diff)
    results = {}
    files: list[str] = []
    for t in p.disclosure_targets:
        keys = p.disclosure_keys[t]
        if not keys:
            continue
        if p.release_independent_keys(t):
            both = t not in p.synthesized
            release_independent(
                f"{'repU and DiSCO' if both else 'repU (replicated uniques)'} of target {t}",
                f"the keys {', '.join(keys)}{' and the target' if both else ''} are released "
                "unchanged (none is synthesized), so "
                + ("every measure equals the original's." if both else
                   "repU equals UiO, the original's sample uniques on the keys, in every "
                   "dataset."))
        res = disclosure_measures(ctx.original, ctx.synthetic, keys=keys, target=t,
                                  schema=ctx.schema,
                                  ngroups_target=p.ngroups_target[t])
        results[t] = res
        if ctx.root is not None:
            sub = f"disclosure/{target_folder(p.disclosure_targets, t)}".rstrip("/")
            folder = step_folder(ctx, sub)
            write_json(folder / "summary.json", res.to_dict())
            write_table(ctx, res.ident, folder / "ident.csv")
            write_table(ctx, res.attrib, folder / "attrib.csv")
            write_table(ctx, res.allCAPs, folder / "allCAPs.csv")
            write_table(ctx, res.replicated_uniques.table, folder / "replicated_uniques.csv")
            files += [f"{sub}/{f}" for f in ("summary.json", "ident.csv", "attrib.csv",
                                            "allCAPs.csv", "replicated_uniques.csv")]
    if not results:
        return skipped("disclosure", "the only known column is the target: no key is left.",
                       differencing=diff)
    from bayes_risk.results.disclosure import DisclosureByTarget

    if diff is not None and ctx.root is not None:
        write_json(step_folder(ctx, "disclosure") / "differencing.json", diff.to_dict())
        files.append("disclosure/differencing.json")
    baseline = _original_baseline(ctx, results, files)
    return StepOutcome(name="disclosure", status="ran", result=DisclosureByTarget(results),
                       folder="disclosure" if ctx.root is not None else None,
                       files=[f.removeprefix("disclosure/") for f in files],
                       extra={"differencing": diff, "original_risk": baseline,
                              "unconfirmed": _unconfirmed_disclosure_columns(ctx, results)})


def _original_baseline(ctx: StepContext, results: dict[str, Any], files: list[str]
                       ) -> dict[tuple[str, ...], Any]:
    """sdcMicro's risk of the original on each set of keys, a baseline."""
    from bayes_risk.disclosure.original_risk import MAX_SUBSETS, original_risk

    by_keys: dict[tuple[str, ...], list[str]] = {}
    for t, res in results.items():
        by_keys.setdefault(tuple(res.keys), []).append(t)
    out: dict[tuple[str, ...], Any] = {}
    for i, (keys, targets) in enumerate(by_keys.items(), start=1):
        # SUDA2 on many keys: MSUs up to the size that keeps to MAX_SUBSETS subsets
        size, total = 0, 0
        while size < len(keys) and total + math.comb(len(keys), size + 1) <= MAX_SUBSETS:
            size += 1
            total += math.comb(len(keys), size)
        r = original_risk(ctx.original, keys=list(keys), weights=ctx.weights,
                          sensitive=targets, max_size=size)
        weights = ctx.plan.given.weights
        if weights is not None:  # the column's name, not "given (one per record)"
            r.settings["weights"] = weights
        out[keys] = r
        if ctx.root is not None:
            sub = "disclosure/original_risk" + (f"_{i}" if len(by_keys) > 1 else "")
            folder = step_folder(ctx, sub)
            write_json(folder / "summary.json", r.to_dict())
            write_table(ctx, r.records.reset_index(drop=True).rename_axis("record"),
                        folder / "records.csv", index=True)
            files += [f"{sub}/summary.json", f"{sub}/records.csv"]
    return out


def _unconfirmed_disclosure_columns(ctx: StepContext, results: dict[str, Any]) -> list[str]:
    """Synthesized keys and targets of row-aligned files unrelated to the original's."""
    syn = ctx.synthetic
    if getattr(syn, "schema", None) is not None and syn.schema.synthesized:
        return []  # a manifest: the original's fingerprint was checked
    if not rows_aligned(ctx):
        return []
    from bayes_risk.data.alignment import warn_unconfirmed

    used = dict.fromkeys(c for t, res in results.items() for c in (*res.keys, t)
                         if c in ctx.plan.synthesized)
    return warn_unconfirmed(ctx.original, list(syn), list(used),
                            measures="repU and DiSCO computed on it")


def _differencing(ctx: StepContext) -> Any:
    """What comparing the implicates reveals (Hawala 2008); ``None``: not comparable."""
    import warnings

    from bayes_risk.disclosure import differencing_check
    from bayes_risk.exceptions import CALLER, DataWarning

    syn = ctx.synthetic
    if (getattr(syn, "synthesized_records", None) is None or len(list(syn)) < 2
            or not rows_aligned(ctx)):
        return None
    res = differencing_check(ctx.original, syn)
    if res.warnings:
        warnings.warn(DataWarning(
            f"SELECTION_REVEALED: comparing the {res.m} released datasets reveals "
            f"{res.n_revealed:,} of the {int(res.selected.sum()):,} records selected for "
            f"synthesis (of {res.n_records:,}) and the synthesized columns "
            f"({', '.join(res.revealed_columns)}): their values differ between datasets while "
            "every other record's are the same, so an intruder learns which records the "
            "agency judged at risk (Hawala 2008). Release one dataset, or synthesize every "
            "record.", code="SELECTION_REVEALED"), skip_file_prefixes=CALLER)
    return res
