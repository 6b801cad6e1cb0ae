"""Why a risk rose after a remedy: the audit's steps run again on the release before the remedy
and with one remedied column undone at a time (:doc:`/user_guide/audit`, Applying a remedy and
auditing again).

A remedy (``bayes_risk.sdc``, ``bayes_risk.sdcmicro``, ``bayes-risk remedy``) records the
release it post-processed (its folder, or its plain files, and the SHA-256 of its dataset
files). When an audit of the
remedied release is read against an earlier audit (``before=``) and a risk line rose, the
line's step is run again, with this audit's settings, on

* the release before the remedy: the line's value there, so that the rise is measured under one
  set of settings, and
* the remedied release with the values of one remedied column taken back from the release
  before (one run per column): how much of the rise undoing that column takes back.

For a measure whose record gives its ``contributions`` (the identification lines) the targets
are compared one by one: those whose contribution (a correct unique match, for the true match
rate) rose, and for each remedied column how many of them fall back when it alone is undone.
Nothing is guessed: a figure that cannot be computed (the release before the remedy moved or
changed, rows removed) is said to be so, and why.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bayes_risk.auditing.outcome import Contributions, StepOutcome
from bayes_risk.data.coding import without_coding

__all__ = ["rise_causes", "remedy_origin", "remedied_columns"]

#: a change smaller than this (in the line's unit) is no rise: the same figure read twice
_TOLERANCE = 1e-9


def remedy_origin(release: Any) -> tuple[Any, list[dict[str, Any]], str | None]:
    """The release the latest remedy was applied to, the remedy's steps, and why the release
    cannot be had (``None`` when it was read back and verified).

    Returns
    -------
    tuple
        ``(release before or None, steps of the latest remedy, reason or None)``.
    """
    done = list((getattr(release, "extra", None) or {}).get("post_processing") or [])
    if not done:
        return None, [], "the release records no remedy (no post-processing after synthesis)"
    origin = done[-1].get("source")
    steps = [s for s in done if s.get("source") == origin] if origin else [done[-1]]
    if not origin:
        return None, steps, ("the remedy was applied to a release made in memory or written "
                             "before remedies recorded their source, so the release before it "
                             "cannot be read back")
    from bayes_risk._checksums import file_sha256
    from bayes_risk.data.synthetic import read_synthetic
    from bayes_risk.exceptions import BayesRiskError

    # a folder, or the plain files the remedy was given (paths as the remedy resolved them)
    folder = Path(origin["folder"]) if origin.get("folder") else None
    where = (f"in {str(folder)!r}" if folder is not None
             else f"in the files {', '.join(map(repr, origin.get('files') or []))}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its own checks warn in its own audit
            before = read_synthetic(folder if folder is not None else origin["files"])
        changed = [f for f, digest in origin["sha256"].items()
                   if file_sha256(folder / f if folder is not None else f) != digest]
    except (BayesRiskError, OSError, KeyError) as err:
        return None, steps, (f"the release before the remedy, {where}, cannot be read "
                             f"({' '.join(str(err).split())[:160]})")
    if changed:
        return None, steps, (f"the release before the remedy, {where}, has changed since the "
                             f"remedy was applied ({', '.join(changed)})")
    return before, steps, None


def remedied_columns(steps: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Column -> what the remedy did to it (``"top coded at 150,000"``, ``"smoothed"``,
    ``"post-randomized (PRAM)"``)."""
    out: dict[str, list[str]] = {}
    for s in steps:
        op = s.get("operation")
        if op == "bottom_top_coding":
            for c, (b, t) in (s.get("bounds") or {}).items():
                parts = ([f"bottom coded at {b:,}"] if b is not None else []) + (
                    [f"top coded at {t:,}"] if t is not None else [])
                out.setdefault(c, []).append(" and ".join(parts))
        elif op == "smoothing":
            for c in s.get("columns") or []:
                out.setdefault(c, []).append("smoothed")
        elif op == "pram":
            for c in s.get("columns") or []:
                out.setdefault(c, []).append("post-randomized (PRAM)")
        elif op == "local_suppression":
            for c, n in (s.get("n_suppressed") or {}).items():
                if sum(n):
                    out.setdefault(c, []).append(f"suppressed to {s.get('k')}-anonymity")
        elif op == "microaggregation":
            for c in s.get("columns") or []:
                out.setdefault(c, []).append(f"microaggregated (groups of {s.get('aggr')})")
        elif op == "add_noise":
            for c in s.get("columns") or []:
                out.setdefault(c, []).append("given noise")
    return {c: ", ".join(v) for c, v in out.items()}


def _removed(steps: Sequence[Mapping[str, Any]]) -> bool:
    return any(str(s.get("operation", "")).startswith("remove_") for s in steps)


def _undo(after: Any, before: Any, column: str) -> Any:
    """The remedied release with ``column`` taken back from the release before the remedy (and
    from its manifest's coding bounds, which the measures apply to what the intruder knows)."""
    datasets = [z.assign(**{column: b[column].to_numpy()})
                for z, b in zip(after.datasets, before.datasets, strict=True)]
    return dataclasses.replace(after, datasets=datasets, extra=without_coding(after.extra,
                                                                              column))


def _rerun(ctx: Any, step: Any, verdict: Any,
           release: Any) -> tuple[dict[str, float], Any, Any]:
    """The step's lines (measure -> value), outcome and context on ``release`` with ``ctx``'s
    settings; nothing written, nothing shown, its warnings those of the audit's own run. A run
    that fails gives no line (the sentence then says the figure was not computed)."""
    from bayes_risk.auditing.context import RunState

    sub = dataclasses.replace(ctx, synthetic=release, root=None, progressbar=False,
                              run=RunState(worst_radius=ctx.run.worst_radius))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            outcome = step(sub)
            lines = verdict(ctx.plan, outcome) if outcome.status == "ran" else []
        except Exception as err:  # noqa: BLE001 - the audit's own run stands; this is its why
            return {}, StepOutcome(name="", status="failed",
                                   reason=f"{type(err).__name__}: {err}"), sub
    return {v.measure: float(v.value) for v in lines if hasattr(v, "direction")}, outcome, sub


def _digits(*values: float | None) -> int:
    """Significant digits (3 at least) that tell the figures of a sentence apart: a rise of
    27.955 % to 28.003 % is no "28 % to 28 %"."""
    shown = [v for v in values if v is not None and math.isfinite(v)]
    for d in range(3, 9):
        if len({f"{v:.{d}g}" for v in shown}) == len(set(shown)):
            return d
    return 9


def _own_rows_changed(before: Any, after: Any, column: str, records: np.ndarray) -> int:
    """How many of ``records`` had their own released value of ``column`` changed by the
    remedy in at least one dataset (rows paired with records)."""
    if not all(len(a) == len(b) == records.size for a, b in zip(after, before, strict=True)):
        return -1
    changed = np.zeros(records.size, dtype=bool)
    for a, b in zip(after, before, strict=True):
        x = a[column].to_numpy(dtype=float, na_value=np.nan)
        y = b[column].to_numpy(dtype=float, na_value=np.nan)
        changed |= (x != y) & ~(np.isnan(x) & np.isnan(y))
    return int((changed & records).sum())


def _line_cause(measure: str, unit: str, after: float, rerun: Mapping[str, Any],
                columns: Mapping[str, str], removed: bool,
                releases: tuple[Any, Any] | None = None,
                contributions: Callable[..., Contributions | None] | None = None) -> str:
    """The sentence of one risen line from the runs on the release before and the undone
    columns (``rerun``: ``"before"``, ``"after"`` and each column -> (lines, outcome,
    context); ``releases``: the datasets before and after the remedy; ``contributions``: its
    measure's, to compare the runs target by target)."""
    u = f" {unit}" if unit else ""
    lines0, out0, ctx0 = rerun["before"]
    if measure not in lines0:
        why = f" ({out0.reason})" if out0 is not None and out0.status != "ran" else ""
        return ("not computed: the line's step gives no such line on the release before the "
                f"remedy{why}.")
    v0 = lines0[measure]
    undone = {c: rerun[c][0].get(measure) for c in columns if c in rerun}
    d = _digits(v0, after, *undone.values())

    def fmt(x: float) -> str:
        return f"{x:.{d}g}"

    text = (f"recomputed with this audit's settings, {fmt(v0)}{u} on the release before the "
            f"remedy and {fmt(after)}{u} after")
    if removed:
        return (text + "; records were removed, so no column can be undone on its own: the "
                "change is that of the remedy as a whole.")
    if undone:
        text += "; with one remedied column undone: " + "; ".join(
            f"{c} ({what}) undone {fmt(undone[c])}{u}" if undone[c] is not None else
            f"{c} ({what}) undone: no such line" for c, what in columns.items())
        rise = after - v0
        takes = {c: after - v for c, v in undone.items() if v is not None}
        pp = " pp" if unit == "%" else u
        if rise > _TOLERANCE and takes:
            top = max(takes, key=takes.get)
            if takes[top] > _TOLERANCE:
                text += (f". The rise comes from {top} ({columns[top]}): undoing it takes back "
                         f"{takes[top]:.3g}{pp} of the {rise:.3g}{pp}")
            else:
                text += (". No remedied column on its own takes the rise back: it comes from "
                         "the remedies together")
        elif rise <= _TOLERANCE:
            text += (". On the release before the remedy the line is as high: the rise against "
                     "the earlier audit comes from its other settings, not from the remedy")
    _, out1, ctx1 = rerun["after"]
    f0 = f1 = None
    if contributions is not None:
        f0, f1 = contributions(ctx0, out0, v0), contributions(ctx1, out1, after)
    if f0 is not None and f1 is not None and f0.moved == f1.moved:
        t0, t1 = f0.values, f1.values
        up, down = t1 > t0 + _TOLERANCE, t1 < t0 - _TOLERANCE
        text += ". Target by target: " + f1.moved.format(up=int(up.sum()), n=t1.size,
                                                         down=int(down.sum()))
        text += (f" (at {f1.label}: {f0.where} before, {f1.where} after)" if f0.where != f1.where
                 else f" (at {f1.label}, {f1.where})")
        per_col = []
        for c in columns:
            lines_c, out_c, ctx_c = rerun.get(c, ({}, None, None))
            fc = (contributions(ctx_c, out_c, lines_c[measure]) if measure in lines_c
                  else None)
            if fc is not None and fc.moved == f1.moved:
                back = up & (np.abs(fc.values - t0) <= _TOLERANCE)
                part = f"undoing {c} takes {int(back.sum()):,} back"
                own = -1 if releases is None else _own_rows_changed(*releases, c, back)
                if own >= 0 and back.any():
                    part += (f" ({own:,} of them with their own released {c} changed by the "
                             "remedy; the others through the rows that match them or "
                             f"{f1.label}, which {c}'s remedy moved too)")
                per_col.append(part)
        if per_col and up.any():
            text += f". Of those {int(up.sum()):,}, " + "; ".join(per_col)
    return text + "."


def rise_causes(ctx: Any, outcomes: Sequence[StepOutcome],
                before: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """Why each risk line that rose against ``before`` rose, computed: ``(step, measure) ->
    sentence`` (:mod:`bayes_risk.auditing.rises`).

    Parameters
    ----------
    ctx : StepContext
        The audit's context (its release is the remedied one).
    outcomes : sequence of StepOutcome
        The audit's step outcomes.
    before : mapping
        The earlier audit's summary (``load_audit``).

    Returns
    -------
    dict
        One sentence per risk line (of a measure whose record has ``risk``) whose value rose;
        empty when none rose.
    """
    from bayes_risk.measures import measures

    old = {(v["step"], v["measure"]): v.get("value") for v in before.get("verdicts") or []}
    by_name = {o.name: o for o in outcomes}
    risen: list[tuple[Any, Any]] = []
    for m in measures():
        o = by_name.get(m.name)
        if m.verdict is None or not m.risk or o is None or o.status != "ran":
            continue
        for v in m.verdict(ctx.plan, o):
            b = old.get((v.step, v.measure))
            if (getattr(v, "direction", None) == "max" and isinstance(b, (int, float))
                    and math.isfinite(b) and math.isfinite(v.value)
                    and v.value > b + _TOLERANCE):
                risen.append((m, v))
    if not risen:
        return {}
    release, steps, why = remedy_origin(ctx.synthetic)
    if release is None:
        return {(v.step, v.measure): f"not computed: {why}." for _, v in risen}
    columns = remedied_columns(steps)
    removed = _removed(steps) or any(len(a) != len(b) for a, b in
                                     zip(ctx.synthetic.datasets, release.datasets, strict=True))
    out: dict[tuple[str, str], str] = {}
    runs: dict[str, dict[str, Any]] = {}
    for m, v in risen:
        if m.name not in runs:
            step, verdict = m.step, m.verdict
            rerun = {"before": _rerun(ctx, step, verdict, release),
                     "after": ({}, by_name[m.name], ctx)}
            if not removed:
                for c in columns:
                    rerun[c] = _rerun(ctx, step, verdict, _undo(ctx.synthetic, release, c))
            runs[m.name] = rerun
        out[(v.step, v.measure)] = _line_cause(
            v.measure, v.unit, float(v.value), runs[m.name], columns, removed,
            None if removed else (release.datasets, ctx.synthetic.datasets), m.contributions)
    return out
