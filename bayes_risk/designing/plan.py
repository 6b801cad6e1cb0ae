"""What the design reads off its start audit (:func:`start_facts`) and the plan and cost it
states before the first candidate (:func:`plan_lines`). See :doc:`/user_guide/design`."""

from __future__ import annotations

from typing import Any

from bayes_risk._memory import current_limit, format_bytes, parse_memory
from bayes_risk._search_spec import SearchSpec
from bayes_risk.designing.evaluate import SCREEN_CONFIDENCE
from bayes_risk.designing.space import fit_key


def start_facts(start: Any) -> dict[str, Any] | None:
    """What the design reads off the start audit: the release's columns, method and m, the
    lines past their thresholds and each step's time."""
    if start is None:
        return None
    from bayes_risk.auditing.compare import audit_summary

    s = audit_summary(start)
    rows = {r["setting"]: r["value"] for r in s.get("settings", []) if r.get("step") in
            ("release", "identification")}
    cols = [c.strip() for c in str(rows.get("synthesized columns", "")).split(",") if c.strip()]
    known = [c.strip() for c in str(rows.get("known columns", "")).split(",") if c.strip()]
    return {"synthesized": cols, "method": rows.get("synthesis method"),
            "m": int(s.get("m") or 5), "known": known, "status": s.get("status"),
            "headline": s.get("headline"), "n_records": s.get("n_records"),
            "exceeding": [v for v in s.get("verdicts", []) if v.get("exceeds")],
            "seconds": {st["name"]: float(st.get("seconds") or 0) for st in s.get("steps", [])},
            "least_budget": next((parse_memory(r["value"], "least budget") for r in
                                  s.get("settings", []) if r.get("step") == "memory"
                                  and r.get("setting") == "least budget"), None),
            "folder": s.get("folder")}


def plan_lines(facts: Any, cands: list, dropped: list, enumerate_all: bool, search: SearchSpec,
               n: int) -> list[str]:
    """The design's plan and cost, stated before the first candidate."""
    max_candidates, patience, cpu_budget = (search.max_candidates, search.patience,
                                            search.cpu_budget)
    screen, objective = search.screen_records, search.objective
    n_fits = len({fit_key(c) for c in cands})
    k = len(cands) if enumerate_all else max_candidates
    lines = [f"space: {len(cands)} candidate(s) ({n_fits} fit(s))"
             + (f"; {len(dropped)} left out ({'; '.join(sorted({d['reason'] for d in dropped}))})"
                if dropped else ""),
             ("search: every candidate, each release before its remedies" if enumerate_all
              else f"search: Optuna's TPE sampler, the verdict lines as constraints, at most "
              f"{max_candidates} candidates") + (f"; stops after {patience} candidates without "
                                                 "a better release" if patience else "")
             + (f"; within {cpu_budget:g} CPU seconds" if cpu_budget else ""),
             "screens: utility, identification and the empirical measures first (a line past "
             "its threshold excludes the candidate), then the model-based steps"
             + (f" on {screen} random records (excluded when a share's lower "
                f"{SCREEN_CONFIDENCE:.1%} bound is past its threshold), then on all {n:,}"
                if screen and n >= 2 * screen else " on every record"),
             f"objective: the best {objective} among the candidates that pass every line; the "
             "chosen one re-audited with fresh seeds and fresh datasets"]
    # a candidate that synthesizes more columns or smooths can take many times the start
    # audit (the attribute step's candidates and smoothed likelihoods): no bound is claimed
    # from it; the CPU budget bounds the search, stopping the candidate it runs out in
    took = (f"the start audit took {sum(facts['seconds'].values()):.0f} s of wall time (the "
            "budget counts CPU); a candidate that synthesizes more columns or smooths takes "
            "longer; "
            if facts and facts.get("seconds") else "")
    lines.append(f"cost: {took}at most {k} candidate audit(s), each one's time printed as it "
                 "finishes" + (f"; the search ends when its {cpu_budget:g} CPU seconds are "
                               "spent, the candidate then running stopped and not counted"
                               if cpu_budget else "")
                 + "; then the fresh re-audit of the chosen one")
    lines.append(memory_line(facts, cands))
    return lines


def memory_line(facts: Any, cands: list) -> str:
    """What the design holds, from the start audit's least budget (its steps' needs beside
    what its process held), scaled to the candidates' largest ``m`` where it is larger."""
    from bayes_risk.auditing.memory_plan import DEFAULT_SHARE

    limit = current_limit()
    budget = (f"{DEFAULT_SHARE:.0%} of the memory available when it starts, the audit's default "
              "(--memory sets one)" if limit is None else f"{format_bytes(limit)} given (--memory)")
    tail = (f"; each audit checks its own plan within the budget, {budget}, before it starts, "
            "and one that does not fit is recorded as refused (MEMORY_TOO_LARGE); one fitted "
            "model and its release held at a time")
    least = (facts or {}).get("least_budget")
    if not least:
        return "memory: not estimated before the first candidate (no start audit)" + tail
    m0, m_max = int(facts["m"]), max(int(c["m"]) for c in cands)
    # the audit's needs grow with the datasets matched at once (identification's tables)
    need = least * max(1.0, m_max / m0)
    over = (f"; past the {format_bytes(limit)} budget: the candidates of the largest m "
            "may be refused" if limit is not None and need > limit else "")
    return (f"memory: each candidate's audit about {format_bytes(need, up=True)} (the start "
            f"audit's least budget, {format_bytes(least, up=True)} at m = {m0}"
            + (f", scaled to m = {m_max}" if m_max > m0 else "") + ")" + over + tail)
