"""bayes_risk.design: the best release of a toy space known by enumeration, the fresh-seed
re-audit where naive selection under-states, interrupt and resume, the space grown from an
audit, and one real design run on a small CE-like table."""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
import bayes_risk.measures as measures
from bayes_risk.auditing.outcome import Measure, StepOutcome
from bayes_risk.auditing.verdict_base import Verdict
from bayes_risk.designing import DesignSpace, SearchSpec
from bayes_risk.designing.space import columns_to_cover, grown_columns

CAT = ["Urban", "Marital", "Tenure"]
REAL_STEPS = ["utility", "identification", "posterior_identification", "attribute",
              "membership", "attacks", "disclosure", "relative_difference", "closest_match"]
SETS = {("Income", "Tenure"): 0.0, ("Expenditure", "Income", "Tenure"): 0.02}


def _truth(cols, m):
    """The toy line's true risk and utility of a candidate: known before any run."""
    extra = SETS[tuple(sorted(cols))]
    return 0.8 + 0.05 * m + extra, 0.5 + 0.04 * m + 5 * extra


#: what the toy measure does: "noise" sd of the risk figure (drawn from the audit's seed),
#: "stop_after": raise KeyboardInterrupt at that call (an interrupt mid-audit),
#: "burn": CPU seconds a dataset from call "burn_from" on
TOY = {"noise": 0.0, "stop_after": None, "calls": 0, "burn": 0.0, "burn_from": 1, "flagged": {}}


def _toy_step(ctx):
    TOY["calls"] += 1
    t0 = time.process_time()
    burn = TOY["burn"] * ctx.plan.m if TOY["calls"] >= TOY["burn_from"] else 0.0
    while time.process_time() - t0 < burn:  # CPU the budget counts
        pass
    if TOY["stop_after"] is not None and TOY["calls"] > TOY["stop_after"]:
        raise KeyboardInterrupt
    return StepOutcome(name="toy", status="ran", result={
        "m": ctx.plan.m, "cols": list(ctx.plan.synthesized), "seed": ctx.plan.random_seed})


def _toy_lines(plan, outcome):
    r = outcome.result
    risk, util = _truth(r["cols"], r["m"])
    risk += TOY["noise"] * np.random.default_rng(r["seed"]).normal()
    lines = [Verdict(step="toy", measure="toy risk", value=risk, threshold=1.0, direction="max",
                     source=None, threshold_name="s_pmse"),
             Verdict(step="toy", measure="toy overlap", value=util, threshold=0.5,
                     direction="min", source=None, threshold_name="overlap")]
    nf = TOY["flagged"].get(tuple(sorted(r["cols"])))
    if nf is not None:  # a share of 90 records, 1 % of them at risk, nf more flagged
        lines.append(Verdict(step="toy", measure="toy share", value=1.0, threshold=5.0,
                             direction="max", source=None, unit="%", flagged=nf,
                             count_of=(90, "records"), threshold_name="prop_top"))
    return lines


@pytest.fixture
def toy_measure():
    TOY.update(noise=0.0, stop_after=None, calls=0, burn=0.0, burn_from=1, flagged={})
    measures.register(Measure(name="toy", title="Toy", step=_toy_step, verdict=_toy_lines))
    yield
    measures.unregister("toy")


@pytest.fixture(scope="module")
def ce():
    return br.make_ce_like(150, random_seed=5)


def _toy_design(ce, *, max_candidates, cpu_budget=None, **kw):
    search = SearchSpec(max_candidates=max_candidates, cpu_budget=cpu_budget,
                        screen_records=None)
    space = DesignSpace(columns=[list(c) for c in SETS], knobs={"cart": {
        "min_leaf": [5], "smoothing": [False]}}, m=[1, 2, 3, 4, 5, 6], remedies=["none"])
    return br.design(ce, known=["Age", "Urban", "Marital", "Income"], categorical=CAT,
                     space=space, settings=br.AuditSettings(skip=REAL_STEPS), search=search,
                     progressbar=False, **kw)


def test_best_of_a_toy_space_is_the_one_enumeration_finds(ce, toy_measure):
    res = _toy_design(ce, random_seed=1, max_candidates=12)
    assert len(res.candidates) == 12  # every candidate of the space
    truth = {(tuple(sorted(c)), m): _truth(c, m) for c, m in itertools.product(SETS, range(1, 7))}
    best = max((k for k, (risk, _) in truth.items() if risk <= 1.0), key=lambda k: truth[k][1])
    chosen = next(r for r in res.candidates if r["key"] == res.chosen)["settings"]
    assert (tuple(sorted(chosen["columns"])), chosen["m"]) == best == (
        ("Expenditure", "Income", "Tenure"), 3)
    # every excluded candidate names the line that excluded it
    frame = res.candidates_frame()
    assert set(frame.loc[~frame["passes"], "excluded_by"]) == {"toy risk"}
    assert frame["passes"].sum() == sum(risk <= 1.0 for risk, _ in truth.values())
    regions = res.excluded_regions()
    assert set(regions.loc[regions["axis"] == "m", "value"]) == {"5", "6"}
    # without noise the fresh re-audit agrees with the search: nothing moved
    sel = res.selection_frame()
    assert np.allclose(sel["moved"], 0.0)


def test_a_line_with_flagged_records_passes_only_at_its_worst_case(ce, toy_measure):
    # the winner's share is 1 % of its 90 assessed records, within 5 %; with 10 records flagged
    # and counted at risk it is 10.9 %: the design must not pass it on the assessed ones alone
    TOY["flagged"] = {("Expenditure", "Income", "Tenure"): 10, ("Income", "Tenure"): 0}
    res = _toy_design(ce, random_seed=1, max_candidates=12)
    chosen = next(r for r in res.candidates if r["key"] == res.chosen)["settings"]
    assert (tuple(sorted(chosen["columns"])), chosen["m"]) == (("Income", "Tenure"), 4)
    frame = res.candidates_frame()
    three = frame["columns"].str.count(",") == 2
    assert frame.loc[three, "excluded_by"].str.contains("toy share").all()
    line = res.frontier_frame().query("line == 'toy share' and flagged == 10").iloc[0]
    assert line["value"] == 1.0 and line["at_worst"] == pytest.approx(1090 / 100)
    assert line["high"] == pytest.approx(10.9) and "flagged" in line["interval"]
    # the fresh re-audit states the figure the verdict judges: its flagged records at worst
    TOY["flagged"] = {("Expenditure", "Income", "Tenure"): 10, ("Income", "Tenure"): 2}
    res = _toy_design(ce, random_seed=1, max_candidates=12)
    sel = res.selection_frame().query("line == 'toy share'").iloc[0]
    assert sel["fresh"] == 1.0 and sel["fresh_flagged"] == 2
    assert sel["fresh_at_worst"] == pytest.approx((0.9 + 2) / 92 * 100)
    assert "toy share: search 1 % → fresh 1 % (moved 0 %; at worst, its 2 flagged records " \
        "counted: search 3.15 % → fresh 3.15 %" in str(res), str(res)
    # every candidate flagged: the line no candidate passes, judged and reported at its worst
    TOY["flagged"] = {("Expenditure", "Income", "Tenure"): 10, ("Income", "Tenure"): 10}
    res = _toy_design(ce, random_seed=1, max_candidates=12)
    assert res.chosen is None
    assert res.headline == ("No release in the space passes every line: no candidate passes "
                            "toy share.")
    u = {x["line"]: x for x in res.unpassable()}["toy share"]
    assert u["best"] == pytest.approx(10.9) and u["flagged"] == 10
    assert u["cause"].startswith("10 of 100 records flagged (unstable estimates), counted at "
                                 "risk: 10.9 %; the 90 assessed give 1 %")
    # a search stopped before the space was audited claims nothing of the rest
    part = _toy_design(ce, random_seed=1, max_candidates=4)
    assert len(part.candidates) == 4 and part.headline.startswith(
        "No release found: none of the 4 candidate(s) audited, of the 12 in the space, passes "
        "every line; no audited candidate passes")
    assert "Excluded regions (no audited candidate with this value passes)" in str(part)
    # the subsample screen excludes on the worst case too: 300 records, every one flagged
    from bayes_risk.designing.evaluate import _lower_bound_past, line_record

    every = Verdict(step="attribute", measure="share", value=float("nan"), threshold=5.0,
                    direction="max", source=None, unit="%", flagged=300,
                    count_of=(0, "records"), threshold_name="prop_top")
    assert every.at_worst == 100.0 and _lower_bound_past(line_record(every, "subsample"))
    few = Verdict(step="attribute", measure="share", value=1.0, threshold=5.0,
                  direction="max", source=None, unit="%", flagged=3,
                  count_of=(297, "records"), threshold_name="prop_top")
    assert few.at_worst == pytest.approx(1.99) and not _lower_bound_past(
        line_record(few, "subsample"))
    # not a share of records (membership's AUC advantage): flagged ones cannot be counted in
    auc = Verdict(step="membership", measure="advantage", value=0.01, threshold=0.05,
                  direction="max", source=None, flagged=2, threshold_name="membership_advantage")
    assert np.isnan(auc.at_worst) and line_record(auc, "all records")["exceeds"]
    assert not line_record(replace(auc, flagged=0), "all records")["exceeds"]


def _panel_points(ax):
    """The (x, y) of every candidate marker of a frontier panel (its scatters)."""
    from matplotlib.collections import PathCollection

    pts = [c.get_offsets() for c in ax.collections
           if isinstance(c, PathCollection) and len(c.get_offsets())]
    return {tuple(map(float, p)) for o in pts for p in np.asarray(o)}


def test_the_frontier_draws_each_disco_line_the_audit_judges():
    """One DiSCO line per target: each is a panel of its own, named by its target, with every
    candidate at that target's figure; a candidate past the threshold on one target only is
    crossed there (the figure never shows one target's DiSCO under another's name)."""
    import matplotlib

    matplotlib.use("Agg")
    from bayes_risk.designing.evaluate import candidate_record, line_record
    from bayes_risk.designing.result import DesignResult

    # (overlap, DiSCO of Tenure, DiSCO of Expenditure or None: not synthesized)
    figures = [(0.8, 2.0, 20.0), (0.7, 5.0, 3.0), (0.6, 12.0, None)]
    cands = []
    for k, (ov, ten, exp) in enumerate(figures, start=1):
        cols = ["Tenure"] + (["Expenditure"] if exp is not None else [])
        vs = [Verdict("utility", "mean confidence-interval overlap", ov, 0.5, "min", None,
                      threshold_name="overlap")]
        vs += [Verdict("disclosure", f"DiSCO (%), target {t}", v, 10.0, "max", None, unit="%",
                       count_of=(200, "records"), threshold_name="DiSCO")
               for t, v in (("Tenure", ten), ("Expenditure", exp)) if v is not None]
        cands.append(candidate_record({"key": f"c{k}", "columns": cols, "method": "cart",
                                       "knobs": {}, "m": 2, "remedy": "none"},
                                      [line_record(v, "first screen") for v in vs], 1.0, 1.0))
    res = DesignResult(space={}, candidates=cands, dropped=[], objective="overlap",
                       thresholds={"overlap": 0.5}, plan=[], stop="", start=None,
                       random_seed=1, known=["Age"], n_fits=0, sampler="grid")
    fig = res.plot()
    panels = {ax.get_xlabel().split(" (")[0]: ax for ax in fig.axes if ax.get_xlabel()}
    assert set(panels) == {"DiSCO of Tenure", "DiSCO of Expenditure"}
    assert _panel_points(panels["DiSCO of Tenure"]) == {(2.0, 0.8), (5.0, 0.7), (12.0, 0.6)}
    # candidate 1 passes on Tenure but is past the threshold on Expenditure: crossed there
    exp = panels["DiSCO of Expenditure"]
    assert _panel_points(exp) == {(20.0, 0.8), (3.0, 0.7)}
    assert "2 of 3 candidates measured" in exp.get_title()
    crossed = next(c for c in exp.collections if c.get_label() == "past this threshold")
    assert [tuple(map(float, p)) for p in crossed.get_offsets()] == [(20.0, 0.8)]
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_fresh_reaudit_is_the_same_wherever_the_design_is_written(ce, toy_measure, tmp_path):
    """Same seed, same numbers: the fresh re-audit's seeds do not depend on ``out``."""
    TOY["noise"] = 0.1
    runs = [_toy_design(ce, random_seed=1, max_candidates=12, out=out)
            for out in (tmp_path / "a", tmp_path / "deeper" / "b", None)]
    fresh = [[(x["measure"], x["value"]) for c in r.confirmations for x in c["record"]["lines"]]
             for r in runs]
    assert fresh[0] and fresh[0] == fresh[1] == fresh[2]


def test_fresh_reaudit_corrects_a_winner_whose_risk_was_understated(ce, toy_measure):
    TOY["noise"] = 0.1
    res = _toy_design(ce, random_seed=1, max_candidates=12)
    first = res.confirmations[0]
    rec = next(r for r in res.candidates if r["key"] == first["key"])
    s = rec["settings"]
    true_risk = _truth(s["columns"], s["m"])[0]
    line = next(x for x in rec["lines"] if x["short"] == "toy risk")
    # naive selection picked a candidate whose risk the search under-stated ...
    assert line["value"] < 1.0 < true_risk
    sel = res.selection_frame()
    moved = sel[(sel["candidate"] == res._number(first["key"])) & (sel["line"] == "toy risk")]
    # ... the fresh re-audit shows it past the threshold, and the design does not release it
    assert float(moved["moved"].iloc[0]) > 0 and bool(moved["fresh_exceeds"].iloc[0])
    assert first["key"] != res.chosen
    if res.chosen is not None:
        fresh = res.confirmations[-1]["record"]
        assert fresh["feasible"] and "fresh" in res.headline or "passes" in res.headline
    assert "moved" in str(res)


def test_interrupt_keeps_finished_candidates_and_resume_goes_on(ce, toy_measure, tmp_path):
    out = tmp_path / "design"
    TOY["stop_after"] = 3  # the 4th candidate's audit is interrupted
    with pytest.raises(KeyboardInterrupt):
        _toy_design(ce, random_seed=1, max_candidates=12, out=out)
    assert (out / "design.journal").is_file() and not (out / "design.json").exists()
    TOY.update(stop_after=None, calls=0)
    res = _toy_design(ce, random_seed=1, max_candidates=12, out=out, resume=True)
    # the 3 finished candidates were kept: 9 audited now, then the fresh re-audit
    assert TOY["calls"] == 9 + len(res.confirmations)
    assert len(res.candidates) == 12
    TOY["calls"] = 0
    whole = _toy_design(ce, random_seed=1, max_candidates=12)
    assert res.chosen == whole.chosen
    assert json.loads((out / "design.json").read_text())["chosen"] == res.chosen
    # resume with other settings is refused
    with pytest.raises(br.ValidationError, match="DESIGN_DIFFERS|other settings"):
        _toy_design(ce, random_seed=2, max_candidates=12, out=out, resume=True)
    # a design without a seed draws one; resumed without one, it goes on with the drawn seed
    drawn = tmp_path / "drawn"
    TOY.update(stop_after=3, calls=0)
    with pytest.raises(KeyboardInterrupt):
        _toy_design(ce, random_seed=None, max_candidates=12, out=drawn)
    TOY.update(stop_after=None, calls=0)
    again = _toy_design(ce, random_seed=None, max_candidates=12, out=drawn, resume=True)
    assert TOY["calls"] == 9 + len(again.confirmations)


def test_a_searched_space_resumed_proposes_what_the_whole_run_did(ce, toy_measure, tmp_path):
    # 6 of 12 candidates: TPE proposes them; an interrupt in the 4th, then --resume, must give
    # the same six as an uninterrupted run of the same seed
    whole = [r["key"] for r in _toy_design(ce, random_seed=3, max_candidates=6).candidates]
    TOY.update(stop_after=3, calls=0)
    out = tmp_path / "design"
    with pytest.raises(KeyboardInterrupt):
        _toy_design(ce, random_seed=3, max_candidates=6, out=out)
    TOY.update(stop_after=None, calls=0)
    res = _toy_design(ce, random_seed=3, max_candidates=6, out=out, resume=True)
    assert [r["key"] for r in res.candidates] == whole and len(set(whole)) == 6


def test_cpu_budget_stops_the_candidate_running_when_it_is_spent(ce, toy_measure, tmp_path):
    # the first two candidates cost only their fits (well under the 3 s budget); the third
    # burns 3 s or more, so the budget is spent inside it whatever the machine's speed
    TOY.update(burn=3.0, burn_from=3)
    out = tmp_path / "design"
    res = _toy_design(ce, random_seed=1, max_candidates=12, cpu_budget=3.0, out=out)
    assert res.stop.startswith("CPU budget (3 s) spent during candidate 3 ("), res.stop
    assert "not counted" in res.stop and len(res.candidates) == 2
    assert sum(r["cpu_seconds"] for r in res.candidates) <= 3.0
    assert "ends when its 3 CPU seconds are spent" in "".join(res.plan)
    # the candidate cut off is audited, whole, on resume
    TOY.update(burn=0.0, burn_from=1)
    cut = res.stop.split("(", 2)[2].rsplit("), which", 1)[0]
    more = _toy_design(ce, random_seed=1, max_candidates=12, cpu_budget=60.0, out=out,
                       resume=True)
    from bayes_risk.designing.evaluate import describe

    done = [describe({**r["settings"], "key": r["key"]}) for r in more.candidates]
    assert cut in done[len(res.candidates):] and len(more.candidates) == 12
    # a budget spent inside the first candidate: nothing audited, the files still written
    none = _toy_design(ce, random_seed=1, max_candidates=12, cpu_budget=1e-3,
                       out=tmp_path / "none")
    assert not none.candidates and none.chosen is None
    assert "No candidate was audited" in (tmp_path / "none" / "report.md").read_text()


def test_plan_states_the_start_audits_memory_scaled_to_the_largest_m(ce, toy_measure):
    from bayes_risk._memory import memory_limit, resident_memory
    from bayes_risk.designing.plan import memory_line

    # the start audit's summary as the audit records it: its least budget among the settings
    start = {"n_records": len(ce), "m": 3, "verdicts": [], "steps": [],
             "settings": [{"step": "memory", "setting": "least budget", "value": "100.0 MB"}]}
    res = _toy_design(ce, random_seed=1, max_candidates=12, start=start)
    line = next(p for p in res.plan if p.startswith("memory:"))
    # the toy space's largest m is 6: twice the start's 3, twice its need
    assert "about 200.0 MB (the start audit's least budget, 100.0 MB at m = 3, scaled to m = 6)" \
        in line and "50% of the memory available when it starts" in line
    # the measured peak is the process's, in bytes (a unit slip would be 1,024 times off)
    assert res.peak_memory >= 0.5 * resident_memory()
    assert "peak resident memory" in str(res)
    cands = [{"m": 6}, {"m": 3}]
    facts = {"m": 3, "least_budget": 100e6}
    with memory_limit("150MB"):
        assert "the candidates of the largest m may be refused" in memory_line(facts, cands)
    with memory_limit("250MB"):
        assert "may be refused" not in memory_line(facts, cands)
    assert "not estimated before the first candidate" in memory_line(None, cands)


def test_space_grown_from_the_lines_of_the_readme_audit():
    known = ["Age", "Urban", "Marital", "Income"]
    base = ["Tenure", "Expenditure", "Income"]
    lines = [("identification", "expected_match_rate", "expected match rate"),
             ("disclosure", "DiSCO", "DiSCO (%), target Tenure"),
             ("attribute", "prop_top", "share ranked first")]
    covers = [columns_to_cover({"step": s, "threshold_name": t, "measure": m}, known, base)
              for s, t, m in lines]
    assert covers == [["Age", "Urban", "Marital"], ["Age", "Urban", "Marital"], []]
    sets = grown_columns(base, covers, ["Age", "Urban", "Marital"])
    singles = [s for s in sets if len(s) == 4]
    assert {s[-1] for s in singles} == {"Age", "Urban", "Marital"}
    assert len(sets) == 6 and all(set(base) < set(s) for s in sets)


def test_the_first_screen_and_the_columns_to_cover_are_read_off_the_records():
    """The design reads the audit's registry: a measure's ``cheap`` puts its step in the first
    screen and its ``covers`` names the columns a line past its threshold asks to synthesize;
    a measure without them adds neither (a line of an unregistered step covers nothing)."""
    from bayes_risk.designing.evaluate import Evaluator

    def covers(line, known, synthesized):
        return [c for c in known if c not in synthesized and c in line["measure"]]

    mine = Measure(name="mine", title="Mine", step=_toy_step, cheap=True, covers=covers)
    measures.register(mine)
    try:
        ev = Evaluator(None, None, ["Age"], None, None, 1, None, False)
        assert ev.cheap == ["utility", "identification", "disclosure", "relative_difference",
                           "closest_match", "mine"]
        assert "attribute" in ev.expensive and "mine" not in ev.expensive
        line = {"step": "mine", "measure": "share with Urban", "threshold_name": ""}
        assert columns_to_cover(line, ["Age", "Urban"], ["Age"]) == ["Urban"]
    finally:
        measures.unregister("mine")
    assert columns_to_cover(line, ["Age", "Urban"], ["Age"]) == []
    assert columns_to_cover({"step": "attribute", "measure": "share ranked first"},
                            ["Age", "Urban"], ["Age"]) == []


def test_space_fix_exclude_and_remedies(ce):
    sch = br.infer_schema(ce, categorical=CAT)
    space = DesignSpace(columns=[["Tenure", "Income"], ["Tenure"]], m=[2, 5],
                        remedies=["none", "smooth", "bottom_top"],
                        fix={"m": "2"}, exclude={"cart.min_leaf": [5, 20]}).resolved(
        columns=[], methods=["cart"], m=[])
    cands, dropped = space.candidates(ce, sch, ["Age"])
    assert {c["m"] for c in cands} == {2} and {c["knobs"]["min_leaf"] for c in cands} == {50}
    # smoothing and the remedies need a continuous synthesized column: Tenure alone has none
    assert all(c["columns"] == ["Tenure", "Income"] for c in cands
               if c["remedy"] != "none" or c["knobs"]["smoothing"])
    assert {d["reason"] for d in dropped} >= {"no continuous synthesized column"}
    with pytest.raises(br.ValidationError, match="unknown axis"):
        DesignSpace(columns=[["Tenure"]], fix={"cart.minleaf": 5}).resolved(
            columns=[], methods=["cart"], m=[2]).candidates(ce, sch, ["Age"])
    with pytest.raises(br.ValidationError, match="remedies must be one of"):
        DesignSpace(remedies=["sdcmicro_pram"])
    # every knob is a setting its synthesizer takes: the defaults, and no other
    from bayes_risk.designing.space import KNOBS

    DesignSpace(knobs={m: {k: list(v) for k, v in ks.items()} for m, ks in KNOBS.items()})
    with pytest.raises(br.ValidationError, match="'cart' has no setting 'minleaf'"):
        DesignSpace(knobs={"cart": {"minleaf": [5]}})
    with pytest.raises(br.ValidationError, match="the synthesizer must be .*'gan'") as info:
        DesignSpace(knobs={"gan": {"x": [1]}})
    assert info.value.code == "UNKNOWN_SYNTHESIZER"


def test_start_audit_lines_add_the_remedies_their_measures_name():
    """A start audit whose largest value's line is past its threshold adds ``bottom_top`` (the
    remedy its cause names, ``Measure.remedies``) to the default remedies; other lines add
    none; remedies the user gives are kept as given."""
    from bayes_risk.designing.search import _resolved_space

    facts = {"synthesized": ["Tenure"], "method": "cart", "m": 2,
             "exceeding": [{"step": "relative_difference", "measure": "relative difference"},
                           {"step": "utility", "measure": "overlap"}]}
    space = _resolved_space(DesignSpace(columns=[["Tenure"]]), facts, ["Age"])
    assert space.remedies == ["none", "smooth", "bottom_top"]
    facts["exceeding"] = facts["exceeding"][1:]
    assert _resolved_space(DesignSpace(columns=[["Tenure"]]), facts, ["Age"]).remedies == \
        ["none", "smooth"]
    facts["exceeding"].append({"step": "relative_difference", "measure": "x"})
    given = DesignSpace(columns=[["Tenure"]], remedies=["none"])
    assert _resolved_space(given, facts, ["Age"]).remedies == ["none"]
    with pytest.raises(br.ValidationError, match="remedies") as info:
        Measure(name="m", title="M", step=_toy_step, remedies="bottom_top")
    assert info.value.code == "MEASURE_BROKEN"


def test_bottom_top_codes_counts_and_a_maximum_many_records_share(ce):
    """``bottom_top`` codes a count at whole numbers inside its percentiles, and where the 1st
    or 99th percentile is the smallest or largest value (held by more than 1 % of records, as
    an original's own top-code) at the 5th or 95th, so the released largest value moves off the
    true one; a candidate whose only numeric synthesized column is a count is coded too."""
    from bayes_risk.designing.space import REMEDIES, _coding_bounds

    x = pd.Series(np.r_[np.repeat(np.arange(16, 88), 13), np.full(30, 88)], dtype=float)
    lo, hi = _coding_bounds(x, count=True)
    assert (lo, hi) == (np.ceil(x.quantile(0.05)), np.floor(x.quantile(0.95))) and hi < 88
    y = pd.Series(np.linspace(0.0, 1.0, 1001) ** 2)  # unique extremes: the 1st and 99th
    assert _coding_bounds(y, count=False) == (y.quantile(0.01), y.quantile(0.99))
    sch = br.infer_schema(ce, categorical=CAT)
    cands, dropped = DesignSpace(columns=[["Age", "Tenure"]], m=[2], remedies=["bottom_top"],
                                 knobs={"cart": {"min_leaf": [20], "smoothing": [False]}}
                                 ).resolved(columns=[], methods=["cart"], m=[]).candidates(
        ce, sch, ["Urban"])
    assert len(cands) == 1 and not dropped
    syn = br.models.CARTSynthesizer(min_leaf=20).fit(
        ce, schema=sch.with_roles(["Age", "Tenure"]), synthesized=["Age", "Tenure"],
        random_seed=1).synthesize(2, random_seed=2)
    out = REMEDIES["bottom_top"].apply(ce, syn, cands[0])
    bounds = out.extra["post_processing"][-1]["bounds"]
    assert list(bounds) == ["Age"] and all(float(b).is_integer() for b in bounds["Age"])
    assert all(z["Age"].max() <= bounds["Age"][1] for z in out.datasets)
    assert all(pd.api.types.is_integer_dtype(z["Age"]) for z in out.datasets)


# ------------------------------------------------------------------ one real design run
@pytest.fixture(scope="module")
def real(tmp_path_factory, ce):
    out = tmp_path_factory.mktemp("real") / "design"
    loose = {"expected_match_rate": 0.9, "true_match_rate": 0.9, "repU": 99, "DiSCO": 99,
             "prop_top": 0.99, "prop_evidence": 0.99, "closest_match": 0.99,
             "relative_difference": 1e-9}
    res = br.design(ce, known=["Age", "Urban", "Income"], categorical=CAT,
                    space=DesignSpace(columns=[["Tenure", "Income"]], knobs={"cart": {
                        "min_leaf": [20], "smoothing": [False]}}, m=[2],
                        remedies=["none", "smooth"]),
                    settings=br.AuditSettings(sweep=[0.1], thresholds=loose),
                    search=SearchSpec(screen_records=None), random_seed=3, out=out,
                    progressbar=False)
    return res, out


def test_real_design_writes_the_release_its_audit_and_the_frontier(real):
    res, out = real
    assert res.chosen is not None, res.headline
    for f in ("design.json", "candidates.csv", "frontier.csv", "frontier.png", "report.md",
              "selection.csv", "release/manifest.json", "release_audit/report.html",
              "release_audit/report.zip", "release_audit/summary.json"):
        assert (out / f).is_file(), f
    audit = json.loads((out / "release_audit/summary.json").read_text())
    assert audit["status"] in ("within_thresholds", "review")
    # the verdict is the fresh re-audit's: its figures are those of the written audit
    fresh = res.confirmations[-1]["record"]["lines"]
    written = {v["measure"]: v["value"] for v in audit["verdicts"]}
    for x in fresh:
        if x["source"] == "this release":
            assert written[x["measure"]] == pytest.approx(x["value"])
    # a remedied release's audit carries the lines of the release before the remedy (the
    # model-based steps it withholds) as upper bounds: the report a board gets has every line
    chosen = next(r for r in res.candidates if r["key"] == res.chosen)
    assert chosen["settings"]["remedy"] == "smooth"
    pre = json.loads((out / "release_before_remedy_audit/summary.json").read_text())
    carried = {v["measure"]: v["value"] for v in audit["verdicts"] if v.get("carried")}
    assert carried and carried == {v["measure"]: v["value"] for v in pre["verdicts"]
                                   if v["step"] == "attribute"}
    # ... and does not list the step whose lines it carries as "not assessed"
    assert "attribute risk (skipped)" not in audit["verdict_text"]
    fr = res.frontier_frame()
    assert {"low", "high", "threshold"} <= set(fr.columns)
    ident = fr[fr["threshold_name"] == "expected_match_rate"]
    assert (ident["low"] <= ident["value"]).all() and (ident["value"] <= ident["high"]).all()


def test_real_design_remedy_carries_the_lines_of_the_release_before_it(real):
    res, _ = real
    smooth = next(r for r in res.candidates if r["settings"]["remedy"] == "smooth")
    plain = next(r for r in res.candidates if r["settings"]["remedy"] == "none")
    att = [x for x in smooth["lines"] if x["step"] == "attribute"]
    assert att and all(x["source"] == "release before the remedy" for x in att)
    same = {x["measure"]: x["value"] for x in plain["lines"] if x["step"] == "attribute"}
    assert all(same[x["measure"]] == x["value"] for x in att)
    # the largest value and the closest match read the release as it goes out, remedy applied:
    # smoothing Income moves its largest value (carried from before, a remedy could never pass)
    for step in ("relative_difference", "closest_match"):
        line = next(x for x in smooth["lines"] if x["step"] == step)
        assert line["stage"] == "first screen" and line["source"] == "this release"
    rd = {r["settings"]["remedy"]: next(x["value"] for x in r["lines"]
                                        if x["step"] == "relative_difference")
          for r in (smooth, plain)}
    assert rd["smooth"] != rd["none"]


def test_plugin_replicates_reach_the_candidates_that_use_them(ce, monkeypatch):
    """``plugin_replicates`` given to a design of smoothed and unsmoothed CART candidates, with
    a remedy: the smoothed candidates' attribute step uses them (its summary records them);
    the audits that would not (an unsmoothed CART's exact likelihood, the first screen
    without the attribute step, the remedied release's re-audit, where the step is withheld)
    run without them, none failing, and the report says which candidates used them."""
    from bayes_risk.designing import evaluate

    audited = []
    real_audit = evaluate.Evaluator.audit

    def audit(self, release, model, steps, seed, **kw):
        res = real_audit(self, release, model, steps, seed, **kw)
        if getattr(res, "plan", None) is not None and res.plan.attribute_source is not None:
            audited.append((getattr(model, "smoothed_", None), res))
        return res

    monkeypatch.setattr(evaluate.Evaluator, "audit", audit)
    res = br.design(ce, known=["Age", "Urban", "Income"], categorical=CAT,
                    space=DesignSpace(columns=[["Tenure", "Income"]], knobs={"cart": {
                        "min_leaf": [20], "smoothing": [False, True]}}, m=[2],
                        remedies=["none", "smooth"]),
                    settings=br.AuditSettings(
                        thresholds={"prop_top": 0.99, "prop_evidence": 0.99},
                        skip=[s for s in REAL_STEPS if s not in ("utility", "attribute")],
                        attribute_records=range(5),
                        attribute_estimator=br.EstimatorSpec(plugin_replicates=20)),
                    search=SearchSpec(screen_records=None), random_seed=3, progressbar=False)
    assert len(res.candidates) == 4 and not any(r["failed_lines"] for r in res.candidates)
    used = {(r["settings"]["knobs"]["smoothing"], r["settings"]["remedy"]):
            r["plugin_replicates_used"] for r in res.candidates}
    # a remedied candidate's attribute line is its release's before the remedy: used there
    assert used == {(False, "none"): False, (False, "smooth"): False,
                    (True, "none"): True, (True, "smooth"): True}
    ran = [(sm, r.step("attribute").extra["summary"]["settings"]["plugin_replicates"])
           for sm, r in audited if r.step("attribute").status == "ran"]
    assert {(bool(sm), reps) for sm, reps in ran} == {(False, None), (True, 20)}
    frame = res.candidates_frame()
    assert frame["plugin_replicates_used"].tolist() == [
        used[(r["settings"]["knobs"]["smoothing"], r["settings"]["remedy"])]
        for r in res.candidates]
    text = str(res)
    numbers = ", ".join(str(i) for i, r in enumerate(res.candidates, start=1)
                        if r["plugin_replicates_used"])
    assert f"plugin_replicates (--plugin-replicates): used by the attribute step of " \
           f"candidate(s) {numbers}" in text
    assert res.chosen is not None and res.confirmations  # the fresh re-audit ran too
