"""What :func:`bayes_risk.design` returns: every candidate's verdict lines, the frontier, the
regions excluded and by which line, and the fresh-seed re-audit of the release chosen."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["DesignResult"]


def _fmt(x: float, unit: str = "") -> str:
    from bayes_risk.results._format import format_value

    return "—" if x is None or not np.isfinite(x) else format_value(x, unit)


def _settings_text(s: dict[str, Any]) -> str:
    knobs = ", ".join(f"{k}={v}" for k, v in s["knobs"].items())
    return (f"{'+'.join(s['columns'])} | {s['method']}" + (f" ({knobs})" if knobs else "")
            + f" | m={s['m']} | {s['remedy']}")


@dataclass(repr=False)
class DesignResult:
    """The outcome of a design (:func:`bayes_risk.design`).

    Attributes
    ----------
    candidates : list of dict
        One per candidate audited: ``key``, ``settings``, ``lines`` (each verdict line with its
        figure, threshold, interval and the screen it came from), ``feasible``,
        ``failed_lines``.
    confirmations : list of dict
        The fresh-seed re-audits, best candidate first, until one passed.
    chosen : str or None
        The key of the recommended candidate (its fresh re-audit passed every line).
    release : SyntheticData or None
        The recommended release (the fresh one, whose audit is the verdict).
    """

    space: dict[str, Any]
    candidates: list[dict[str, Any]]
    dropped: list[dict[str, Any]]
    objective: str
    thresholds: dict[str, float]
    plan: list[str]
    stop: str
    start: dict[str, Any] | None
    random_seed: int
    known: list[str]
    n_fits: int
    sampler: str
    confirmations: list[dict[str, Any]] = field(default_factory=list)
    chosen: str | None = None
    release_folder: str | None = None
    release: Any = None
    #: the process's peak resident memory, in bytes, measured when the design ended
    peak_memory: int | None = None
    #: the candidates of the space (what ``candidates`` were audited from)
    n_space: int | None = None

    # --------------------------------------------------------------- reading the candidates
    def _objective(self, rec: dict[str, Any]) -> float:
        from bayes_risk.designing.space import objective_value

        return objective_value(rec, self.objective)

    def ranked(self) -> list[dict[str, Any]]:
        """The candidates that pass every line, best objective first."""
        from bayes_risk._search_spec import OBJECTIVES

        sign = -1.0 if OBJECTIVES[self.objective] == "max" else 1.0
        ok = [r for r in self.candidates if r["feasible"] and np.isfinite(self._objective(r))]
        return sorted(ok, key=lambda r: sign * self._objective(r))

    def _number(self, key: str) -> int:
        return next(i for i, r in enumerate(self.candidates, start=1) if r["key"] == key)

    def candidates_frame(self) -> pd.DataFrame:
        """One row per candidate: its settings, objective, whether it passes and what
        excluded it."""
        rows = []
        for i, r in enumerate(self.candidates, start=1):
            s = r["settings"]
            rows.append({"candidate": i, "columns": ", ".join(s["columns"]),
                         "method": s["method"],
                         "knobs": ", ".join(f"{k}={v}" for k, v in s["knobs"].items()),
                         "m": s["m"], "remedy": s["remedy"],
                         self.objective: self._objective(r), "passes": r["feasible"],
                         "excluded_by": "; ".join(r["failed_lines"]),
                         "caution": "; ".join(r["caution"]),
                         "screen": _screen(r), "seconds": round(r["seconds"], 1),
                         # with plugin_replicates given: whether its attribute step used them
                         **({"plugin_replicates_used": r["plugin_replicates_used"]}
                            if "plugin_replicates_used" in r else {})})
        return pd.DataFrame(rows)

    def frontier_frame(self) -> pd.DataFrame:
        """Every verdict line of every candidate: figure, interval, threshold."""
        rows = []
        for i, r in enumerate(self.candidates, start=1):
            for x in r["lines"]:
                lo, hi = (x["interval"] or x["spread_range"] or (np.nan, np.nan))
                if x["flagged"] and np.isfinite(x["at_worst"]):  # from the assessed to all
                    hi = max(hi, x["at_worst"]) if np.isfinite(hi) else x["at_worst"]
                    lo = min(lo, x["value"]) if np.isfinite(lo) else x["value"]
                rows.append({"candidate": i, "settings": _settings_text(r["settings"]),
                             "step": x["step"], "line": x["short"],
                             "threshold_name": x["threshold_name"], "value": x["value"],
                             "at_worst": x["at_worst"], "flagged": x["flagged"],
                             "low": lo, "high": hi,
                             "interval": ("Wilson 95 %" if x["interval"] else
                                          "range over the datasets" if x["spread_range"]
                                          else "") + ("; its top: the flagged records "
                                                      "counted at worst" if x["flagged"] else ""),
                             "threshold": x["threshold"], "direction": x["direction"],
                             "unit": x["unit"], "exceeds": x["exceeds"], "stage": x["stage"],
                             "source": x["source"], "passes": r["feasible"],
                             self.objective: self._objective(r)})
        return pd.DataFrame(rows)

    def excluded_regions(self) -> pd.DataFrame:
        """For each value of an axis that no candidate passing every line takes: the lines
        that excluded its candidates (how many each)."""
        rows = []
        axes: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for r in self.candidates:
            s = r["settings"]
            vals = {"columns": ", ".join(s["columns"]), "method": s["method"],
                    "m": str(s["m"]), "remedy": s["remedy"],
                    **{f"{s['method']}.{k}": str(v) for k, v in s["knobs"].items()}}
            for a, v in vals.items():
                axes.setdefault(a, {}).setdefault(v, []).append(r)
        for a, by in axes.items():
            for v, recs in by.items():
                if any(r["feasible"] for r in recs):
                    continue
                counts: dict[str, int] = {}
                for r in recs:
                    for name in r["failed_lines"]:
                        counts[name] = counts.get(name, 0) + 1
                rows.append({"axis": a, "value": v, "candidates": len(recs),
                             "failed": "; ".join(f"{k} ({n} of {len(recs)})" for k, n in
                                                 sorted(counts.items(), key=lambda kv: -kv[1]))})
        return pd.DataFrame(rows, columns=["axis", "value", "candidates", "failed"])

    def unpassable(self) -> list[dict[str, Any]]:
        """The lines no audited candidate passes: the best figure reached, where, and the
        audit's cause of that line for that candidate."""
        by: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
        for r in self.candidates:
            for x in r["lines"]:
                by.setdefault(x["short"], []).append((r, x))
        out = []
        for name, pairs in by.items():
            if any(not x["exceeds"] for _, x in pairs):
                continue
            # judged, as the lines are, with their flagged records counted at risk
            finite = [(r, x) for r, x in pairs if np.isfinite(x["at_worst"])]
            if not finite:
                continue
            r, x = (min if finite[0][1]["direction"] == "max" else max)(
                finite, key=lambda p: p[1]["at_worst"])
            cause = x["cause"]
            if x["flagged"]:
                unit = x["unit"]
                k = x.get("flagged_at_risk", x["flagged"])
                which = ("" if k == x["flagged"] else
                         f" ({k:,} of them: the others' bounds rule the line out)")
                cause = (f"{x['flagged']:,} of {x['flagged'] + (x['n'] or 0):,} records flagged "
                         f"(unstable estimates), counted at risk{which}: "
                         f"{_fmt(x['at_worst'], unit)}; "
                         f"the {x['n'] or 0:,} assessed give {_fmt(x['value'], unit)}"
                         + (f"; {cause}" if cause else ""))
            out.append({"line": name, "best": x["at_worst"], "unit": x["unit"],
                        "flagged": x["flagged"], "threshold": x["threshold"],
                        "measured_in": len(pairs), "candidate": self._number(r["key"]),
                        "settings": _settings_text(r["settings"]), "cause": cause,
                        "remedies": x["remedies"]})
        return out

    def selection_frame(self) -> pd.DataFrame:
        """Each line of the chosen candidate (or of each one re-audited): its figure in the
        search, its figure in the fresh re-audit and how far it moved."""
        rows = []
        for c in self.confirmations:
            search = next(r for r in self.candidates if r["key"] == c["key"])
            before = {x["measure"]: x for x in search["lines"]}
            for x in c["record"]["lines"]:
                b = before.get(x["measure"])
                rows.append({"candidate": self._number(c["key"]), "line": x["short"],
                             "measure": x["measure"], "unit": x["unit"],
                             "search": np.nan if b is None else b["value"],
                             "search_stage": "" if b is None else b["stage"],
                             "fresh": x["value"],
                             "moved": np.nan if b is None else x["value"] - b["value"],
                             # what the verdict judges: flagged records counted at worst
                             "search_at_worst": np.nan if b is None else b["at_worst"],
                             "fresh_at_worst": x["at_worst"], "fresh_flagged": x["flagged"],
                             "threshold": x["threshold"], "direction": x["direction"],
                             "fresh_exceeds": x["exceeds"],
                             "near_threshold": _crosses(x)})
        return pd.DataFrame(rows)

    # --------------------------------------------------------------- the verdict
    @property
    def headline(self) -> str:
        """The design's answer in one sentence."""
        if self.chosen is not None:
            rec = next(r for r in self.candidates if r["key"] == self.chosen)
            fresh = self.confirmations[-1]["record"]
            near = [x["short"] for x in fresh["lines"] if _crosses(x)]
            return (f"Release candidate {self._number(self.chosen)} "
                    f"({_settings_text(rec['settings'])}): its fresh re-audit passes every "
                    "line" + (f", but near the threshold (interval crosses it): "
                              f"{', '.join(near)}" if near else "") + ".")
        if self.confirmations:
            return (f"No release: the {len(self.confirmations)} best candidate(s) that passed "
                    "in the search exceed a line when re-audited with fresh seeds ("
                    + "; ".join(", ".join(c["record"]["failed_lines"])
                                for c in self.confirmations) + ").")
        gone = ", ".join(u["line"] for u in self.unpassable())
        k = len(self.candidates)
        if self.n_space is None or k >= self.n_space:
            return ("No release in the space passes every line"
                    + (f": no candidate passes {gone}" if gone else "") + ".")
        # a search that stopped early says nothing of the candidates it did not audit
        return (f"No release found: none of the {k} candidate(s) audited, of the "
                f"{self.n_space} in the space, passes every line"
                + (f"; no audited candidate passes {gone}" if gone else "") + ".")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary of the design."""
        from bayes_risk._io import to_jsonable

        return to_jsonable({
            "command": "design", "headline": self.headline, "known": self.known,
            "objective": self.objective, "thresholds": self.thresholds,
            "space": self.space, "plan": self.plan, "sampler": self.sampler,
            "stop": self.stop, "random_seed": self.random_seed, "n_fits": self.n_fits,
            "start": None if self.start is None else {
                k: self.start.get(k) for k in ("folder", "status", "headline", "synthesized",
                                               "method", "m")},
            "dropped": self.dropped, "candidates": self.candidates,
            "excluded_regions": self.excluded_regions().to_dict(orient="records"),
            "unpassable": self.unpassable(),
            "confirmations": self.confirmations, "chosen": self.chosen,
            "selection": self.selection_frame().to_dict(orient="records"),
            "release_folder": self.release_folder, "peak_memory_bytes": self.peak_memory})

    def summary_lines(self) -> list[str]:
        """The design's report in lines of text (the terminal and report.md)."""
        out = [self.headline, ""]
        out += [f"- {p}" for p in self.plan]
        out.append(f"- stopped: {self.stop}; {len(self.candidates)} candidate(s) audited, "
                   f"{sum(r['feasible'] for r in self.candidates)} pass every line "
                   f"({self.n_fits} fit(s) in this process: a resume counts its own)")
        used = [i for i, r in enumerate(self.candidates, start=1)
                if r.get("plugin_replicates_used")]
        if any("plugin_replicates_used" in r for r in self.candidates):
            out.append("- plugin_replicates (--plugin-replicates): used by the attribute step of "
                       + (f"candidate(s) {', '.join(map(str, used))}" if used else "no candidate")
                       + " (a smoothed CART plug-in); the others' audits ran without it (their "
                       "likelihood draws no replicate, or their attribute step did not run)")
        if self.peak_memory:
            from bayes_risk._memory import format_bytes

            out.append(f"- memory: the process's peak resident memory, measured at the end, "
                       f"{format_bytes(self.peak_memory)}")
        sel = self.selection_frame()
        if len(sel):
            out += ["", "Selection: each line in the search and in the fresh re-audit (fresh "
                    "seeds, fresh synthetic datasets); the fresh figure is the verdict:"]
            for r in sel.itertuples():
                worst = (f"; at worst, its {r.fresh_flagged:,} flagged records counted: "
                         f"search {_fmt(r.search_at_worst, r.unit)} → fresh "
                         f"{_fmt(r.fresh_at_worst, r.unit)}" if r.fresh_flagged else "")
                out.append(f"- candidate {r.candidate}, {r.line}: search {_fmt(r.search, r.unit)}"
                           f" → fresh {_fmt(r.fresh, r.unit)} (moved {_fmt(r.moved, r.unit)}"
                           f"{worst}; threshold {'≥ ' if r.direction == 'min' else '≤ '}"
                           f"{_fmt(r.threshold, r.unit)})"
                           + (" EXCEEDS" if r.fresh_exceeds else "")
                           + (" — near the threshold" if r.near_threshold else ""))
        for u in self.unpassable():
            out.append(f"- no audited candidate passes {u['line']} (measured in "
                       f"{u['measured_in']}): best {_fmt(u['best'], u['unit'])} "
                       f"(threshold {_fmt(u['threshold'], u['unit'])}), candidate "
                       f"{u['candidate']} ({u['settings']}); why: {u['cause'] or '—'}")
        reg = self.excluded_regions()
        if len(reg):
            some = self.n_space is not None and len(self.candidates) < self.n_space
            out += ["", f"Excluded regions (no {'audited ' if some else ''}candidate with this "
                    "value passes):"]
            out += [f"- {r.axis} = {r.value}: {r.failed}" for r in reg.itertuples()]
        return out

    def __str__(self) -> str:
        return "\n".join(self.summary_lines())

    __repr__ = __str__

    # --------------------------------------------------------------- figures and files
    def plot(self, path: str | os.PathLike[str] | None = None) -> Any:
        """The utility–risk frontier: one panel per risk line (DiSCO: one per target), every
        candidate at its figure with its interval, the threshold drawn, the candidates that
        pass every line filled, the chosen one starred, the non-dominated ones joined."""
        from bayes_risk.designing.plots import frontier_figure

        return frontier_figure(self, path)

    def write(self, root: str | os.PathLike[str]) -> None:
        """Write ``design.json``, ``candidates.csv``, ``frontier.csv``, ``frontier.png`` and
        ``report.md`` into ``root``, each atomically."""
        from bayes_risk._io import atomic_file, write_json

        root = Path(root)
        write_json(root / "design.json", self.to_dict())
        for name, frame in (("candidates.csv", self.candidates_frame()),
                            ("frontier.csv", self.frontier_frame()),
                            ("selection.csv", self.selection_frame())):
            with atomic_file(root / name) as f:
                frame.to_csv(f, index=False)
        if self.candidates:  # none when the budget ran out inside the first
            self.plot(root / "frontier.png")
        lines = ["# Design of a release", "", *self.summary_lines(), "",
                 "![the utility–risk frontier](frontier.png)" if self.candidates else
                 "No candidate was audited: no frontier to draw.", "",
                 "Files: candidates.csv (one row per candidate), frontier.csv (every line of "
                 "every candidate, with its interval), selection.csv (the fresh re-audit), "
                 "design.json (all of it), " + (
                     "release/ (the recommended release) and release_audit/ (its audit, with "
                     "report.html and report.zip)." if self.release_folder else
                     "design.journal (the search, read by --resume).")]
        with atomic_file(root / "report.md") as f:
            f.write("\n".join(lines) + "\n")


def _crosses(x: dict[str, Any]) -> bool:
    """Whether the line's interval reaches across its threshold."""
    iv = x.get("interval") or x.get("spread_range")
    if not iv or not np.isfinite(x["threshold"]):
        return False
    return bool(min(iv) <= x["threshold"] <= max(iv))


def _screen(r: dict[str, Any]) -> str:
    stages = list(dict.fromkeys(x["stage"] for x in r["lines"]))
    return " → ".join(stages)
