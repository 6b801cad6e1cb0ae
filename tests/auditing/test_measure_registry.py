"""The measure registry (bayes_risk.measures): a measure joins the audit, its verdict, its report
and summary by one registry entry naming its objects and its own module (examples/exact_copies,
the example of the docs page "Adding a measure"), and leaves them when it is unregistered
(issues 47, 65)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import bayes_risk as br
from bayes_risk.exceptions import ValidationError
from bayes_risk.measures import Measure, get_measure, measures, register, unregister

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "exact_copies"
#: the package's steps, skipped in these audits (the toy measure is what is tested)
KNOWN = ["Age", "Urban", "Marital"]
BUILTIN = ["utility", "identification", "posterior_identification", "attribute", "membership",
           "attacks", "disclosure", "relative_difference", "closest_match"]
#: every package step but synthpop's measures (which the toy's tests keep running)
BUT_DISCLOSURE = [s for s in BUILTIN if s != "disclosure"]


@pytest.fixture
def toy(monkeypatch):
    if not EXAMPLE.is_dir():
        pytest.skip("examples/ is not part of this checkout")
    monkeypatch.syspath_prepend(str(EXAMPLE))  # the measure's module, as its install would
    import exact_copies

    yield exact_copies
    with contextlib.suppress(ValidationError):  # a test that failed before unregistering it
        unregister("exact_copies")


@pytest.fixture(scope="module")
def data():
    orig = br.make_ce_like(120, random_seed=3)
    syn = [orig.sample(frac=1.0, random_state=1).reset_index(drop=True),
           orig.assign(Income=orig["Income"] + 1.0)]
    return orig, syn


def test_the_package_measures_are_the_audit_steps():
    """Each of the package's measures is its module's record (``MEASURE``), naming the module's
    own step, verdict and sections, and the engine's function and result class."""
    import inspect

    assert [m.name for m in measures()] == BUILTIN
    for m in measures():
        module = inspect.getmodule(m.step)
        assert module.__name__ == f"bayes_risk.auditing.measures.{m.name}"
        assert module.MEASURE is m
        own = [m.step, *m.sections] + ([m.verdict] if m.verdict is not None else [])
        assert {inspect.unwrap(f).__module__ for f in own} == {module.__name__}, m.name
        assert callable(m.function) and inspect.isclass(m.result), m.name
    assert get_measure("attacks").title == "Singling out, linkability and inference (anonymeter)"


def test_listing_the_measures_imports_nothing_only_their_runs_need():
    """The records name the engines' functions, so listing them imports the engines' modules
    (an audit lists them before its first step); the libraries only a run of a measure needs
    stay unimported (scipy.stats alone took about half a second of CPU)."""
    code = ("import sys\nfrom bayes_risk.measures import measures\nmeasures()\n"
            "print([m for m in ('scipy', 'pymc', 'arviz', 'bayes_risk.models', 'numba', "
            "'matplotlib', 'sklearn', 'statsmodels', 'dask', 'xarray') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         cwd="/", check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_audit_help_names_every_step():
    """``bayes-risk audit --help`` names the steps by their folders without importing the
    measures (tests/cli/test_cli.py): the epilog's list keeps up with the registry."""
    from bayes_risk.cli.parsers.audit import _EPILOG

    for name in BUILTIN:
        assert f"  {name}/" in _EPILOG, name


# the disclosure step's baseline of the original warns that Expenditure's l-diversity counts
# close values as diverse: not what this test is about
@pytest.mark.filterwarnings("ignore:SENSITIVE_MOSTLY_UNIQUE")
def test_a_registered_measure_runs_in_the_audit_report_and_summary(toy, data, tmp_path):
    orig, syn = data
    register(toy.MEASURE)
    assert get_measure("exact_copies") is toy.MEASURE
    res = br.audit(orig, syn, known=KNOWN, out=tmp_path / "a", random_seed=1, progressbar=False,
                   settings=br.AuditSettings(skip=BUILTIN))
    step = res.step("exact_copies")
    assert [s.name for s in res.steps][-1] == "exact_copies"
    assert step.status == "ran" and step.title == "Exact copies"
    # dataset 1 is the original shuffled: every record copied; dataset 2 none (Income moved)
    assert step.result.per_dataset == (1.0, 0.0)
    line = next(v for v in res.verdicts if v.step == "exact_copies")
    assert line.value == pytest.approx(50.0) and line.exceeds
    assert res.status == "do_not_release"
    top = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert "exact_copies" in [s["name"] for s in top["steps"]]
    # the measure's settings row, added by its record's hook alone, after the package's
    # measures' rows (registry order) and before the thresholds
    row = {"step": "exact_copies", "setting": "a copy", "value": "every column equal",
           "source": "default", "note": "values compared as text, so 1 and 1.0 differ"}
    steps = [r["step"] for r in top["settings"]]
    assert [r for r in top["settings"] if r["step"] == "exact_copies"] == [row]
    assert steps.index("disclosure") < steps.index("exact_copies") < steps.index("thresholds")
    assert json.loads((tmp_path / "a" / "exact_copies" / "summary.json").read_text())[
        "share"] == pytest.approx(0.5)
    assert "exact_copies" in res.summary().tables["Steps"]["step"].tolist()
    html = res.to_html(tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="exact-copies"' in html and "Exact copies of original records" in html
    assert "records copied exactly" in html and "every column equal" in html
    # the step is skipped by its name like any other
    skipped = br.audit(orig, syn, known=KNOWN, random_seed=1, progressbar=False,
                       settings=br.AuditSettings(skip=[*BUT_DISCLOSURE, "exact_copies"]))
    assert skipped.step("exact_copies").status == "skipped"
    assert "exact copies (skipped)" in skipped.not_assessed

    unregister("exact_copies")
    res = br.audit(orig, syn, known=KNOWN, random_seed=1, progressbar=False,
                   settings=br.AuditSettings(skip=BUT_DISCLOSURE))
    assert "exact_copies" not in [s.name for s in res.steps]
    assert "exact_copies" not in {v.step for v in res.verdicts}
    assert "exact_copies" not in set(res.plan.settings_frame()["step"])
    with pytest.raises(ValidationError, match="unknown step 'exact_copies'"):
        br.audit(orig, syn, known=KNOWN, progressbar=False,
                 settings=br.AuditSettings(skip=["exact_copies"]))


def test_a_measure_declares_its_thresholds_in_its_own_file(toy, data, tmp_path):
    """The record's ``thresholds``: the board sets them by name as it sets the package's (the
    line moves across them), each checked against its range, listed in the settings table and
    under the verdict table with its source; unknown before the measure is registered."""
    orig, syn = data
    with pytest.raises(ValidationError, match=r"for thresholds: \['copied_share'\]"):
        br.Thresholds(copied_share=60)
    register(toy.MEASURE)
    run = dict(known=KNOWN, random_seed=1, progressbar=False,
               settings=br.AuditSettings(skip=BUILTIN))
    assert br.Thresholds().copied_share == 5.0  # its default, beside the package's
    res = br.audit(orig, syn, **run)
    line = next(v for v in res.verdicts if v.step == "exact_copies")
    # hand value: datasets copying all and none of the 120 records -> 50 % > 5 %
    assert (line.value, line.threshold, line.exceeds) == (pytest.approx(50.0), 5.0, True)
    html = res.to_html(tmp_path / "default.html").read_text(encoding="utf-8")
    assert "a convention of this example, not a finding" in html  # the default's source
    loose = br.audit(orig, syn, **{**run, "settings": run["settings"].replace(
        thresholds={"copied_share": 60})}, out=tmp_path / "b")
    line = next(v for v in loose.verdicts if v.step == "exact_copies")
    assert (line.threshold, line.exceeds, loose.status) == (60.0, False, "within_thresholds")
    top = json.loads((tmp_path / "b" / "summary.json").read_text())
    rows = {r["setting"]: r for r in top["settings"] if r["step"] == "thresholds"}
    assert (rows["copied_share"]["value"], rows["copied_share"]["source"]) == ("60.0", "given")
    assert rows["repU"]["source"] == "default"
    html = loose.to_html(tmp_path / "given.html").read_text(encoding="utf-8")
    assert ("given for this audit (thresholds={&#39;copied_share&#39;: 60}; the default is 5)"
            in html)
    with pytest.raises(ValidationError, match="copied_share=150 is outside its range: "
                       "copied_share is in per cent of the records"):
        br.audit(orig, syn, **{**run, "settings": run["settings"].replace(
            thresholds={"copied_share": 150})})


def test_a_bad_threshold_declaration_is_refused(toy):
    from bayes_risk.measures import Threshold

    with pytest.raises(ValidationError, match="its default is not a value it accepts") as info:
        Threshold("share", 150.0, "max", 0.0, 100.0, "per cent")
    assert info.value.code == "MEASURE_BROKEN"
    with pytest.raises(ValidationError, match="side must be one of"):
        Threshold("share", 5.0, "above", 0.0, 100.0, "per cent")
    with pytest.raises(ValidationError, match="thresholds must be a tuple of") as info:
        Measure("m", "M", step=lambda ctx: None, thresholds=[toy.COPIED_SHARE])
    assert info.value.code == "MEASURE_BROKEN"
    # a second measure's threshold of a name taken (the package's DiSCO) is a clash
    clash = Measure("mine", "Mine", step=lambda ctx: None, thresholds=(
        Threshold("DiSCO", 5.0, "max", 0.0, 100.0, "per cent"),))
    with pytest.raises(ValidationError, match=r"threshold name \['DiSCO'\] registered more "
                       "than once") as info:
        register(clash)
    assert info.value.code == "MEASURE_CLASH"
    assert "mine" not in [m.name for m in measures()]


def test_a_line_read_on_the_wrong_side_of_its_threshold_is_refused(toy, data):
    """A line naming its threshold must read it as declared: "min" on a "max" threshold
    would pass every release the line should stop."""
    from dataclasses import replace

    def flipped(plan, outcome):
        return [replace(line, direction="min") for line in toy.exact_copies_lines(plan, outcome)]

    def unknown(plan, outcome):
        return [replace(line, threshold_name="copied") for line in
                toy.exact_copies_lines(plan, outcome)]

    orig, syn = data
    for builder, words in ((flipped, "reads the threshold 'copied_share' as 'min'"),
                           (unknown, "names the threshold 'copied', which no registered")):
        register(replace(toy.MEASURE, verdict=builder))
        try:
            res = br.audit(orig, syn, known=KNOWN, random_seed=1, progressbar=False,
                           settings=br.AuditSettings(skip=BUILTIN))
            with pytest.raises(ValidationError, match=words) as info:
                res.verdicts  # noqa: B018 - read when asked, as the report reads them
            assert info.value.code == "MEASURE_BROKEN"
        finally:
            unregister("exact_copies")


def test_the_example_command_prints_the_measure(toy, data, tmp_path, capsys):
    orig, syn = data
    orig.to_csv(tmp_path / "o.csv", index=False)
    syn[0].to_csv(tmp_path / "s.csv", index=False)
    assert toy.main([str(tmp_path / "o.csv"), str(tmp_path / "s.csv")]) == 0
    assert "records copied exactly: 100.0 %" in capsys.readouterr().out


def test_a_clash_or_a_bad_entry_is_refused(toy):
    from dataclasses import replace

    with pytest.raises(ValidationError, match="measure name.*'utility'") as err:
        register(replace(toy.MEASURE, name="utility"))
    assert err.value.code == "MEASURE_CLASH"
    with pytest.raises(ValidationError, match="Measure"):
        register({"name": "x"})
    with pytest.raises(ValidationError, match="no measure 'utility' was added"):
        unregister("utility")
    with pytest.raises(ValidationError, match="measure must be one of") as err:
        get_measure("nope")
    assert err.value.code == "UNKNOWN_MEASURE"
    # an import path (the spelling before issue 65) is refused when the record is made, naming
    # the field and the fix; so is a step that is missing or not a function
    with pytest.raises(ValidationError, match=r"'exact_copies': verdict must be the function "
                       r"or class itself; got 'exact_copies:exact_copies_lines' \(an import "
                       "path is not read") as err:
        replace(toy.MEASURE, verdict="exact_copies:exact_copies_lines")
    assert err.value.code == "MEASURE_BROKEN"
    with pytest.raises(ValidationError, match=r"sections\[1\] must be the function"):
        replace(toy.MEASURE, sections=(toy.exact_copies_section, "exact_copies:x"))
    with pytest.raises(ValidationError, match=r"settings must be the function or class itself; "
                       "got 'exact_copies:exact_copies_settings'") as err:
        replace(toy.MEASURE, settings="exact_copies:exact_copies_settings")
    assert err.value.code == "MEASURE_BROKEN"
    with pytest.raises(ValidationError, match="sections must be a tuple"):
        replace(toy.MEASURE, sections=[toy.exact_copies_section])
    with pytest.raises(ValidationError, match="step must be the function or class itself; got "
                       "None"):
        Measure("x", "X", step=None)
    assert [m.name for m in measures()][-1] == "closest_match"


#: a whole measure in one file, its registry entry naming its objects (docs: "Adding a measure")
ONE_FILE = '''
from dataclasses import dataclass

from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.auditing.render import step_section
from bayes_risk.auditing.verdicts import Verdict
from bayes_risk.measures import Measure


@dataclass(frozen=True)
class SizeRatio:
    per_dataset: tuple[float, ...]


def size_ratio(original, synthetic):
    return SizeRatio(tuple(len(z) / len(original) for z in synthetic))


def size_step(ctx):
    return StepOutcome(name="size_ratio", status="ran",
                       result=size_ratio(ctx.original, list(ctx.synthetic)))


def size_lines(plan, outcome):
    mean = sum(outcome.result.per_dataset) / len(outcome.result.per_dataset)
    return [Verdict("size_ratio", "synthetic rows per original row", 100 * mean, 90.0, "max",
                    None, unit="%")]


@step_section("size_ratio", "size-ratio", "Sizes of the synthetic datasets")
def size_section(sec, s, result, links):
    sec.p("Rows per original row: ", ", ".join(f"{r:.2f}" for r in s.result.per_dataset))


MEASURE = Measure("size_ratio", "Size ratio", step=size_step, function=size_ratio,
                  result=SizeRatio, verdict=size_lines, sections=(size_section,))
'''


def test_a_measure_added_in_one_file_joins_the_plan_verdicts_and_report(data, tmp_path,
                                                                        monkeypatch):
    """The docs' claim: one file and its registry entry, naming objects, are the whole measure
    (its step in the plan, its verdict line, its report section), nothing else edited."""
    def step_names():
        return [m.name for m in measures()]

    (tmp_path / "size_ratio_measure.py").write_text(ONE_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import size_ratio_measure as mod

    orig, syn = data
    # hand value: datasets of 120 and 60 rows for 120 original ones -> 0.75, 75 % of 90 % max
    release = [syn[0], syn[1].iloc[:60]]
    register(mod.MEASURE)
    try:
        assert step_names()[-1] == "size_ratio"
        res = br.audit(orig, release, known=KNOWN, random_seed=1, progressbar=False,
                       settings=br.AuditSettings(skip=BUILTIN))
        assert [s.name for s in res.steps if s.status == "ran"] == ["size_ratio"]
        assert res.step("size_ratio").result.per_dataset == (1.0, 0.5)
        frame = res.verdict_frame().set_index("step")
        assert frame.loc["size_ratio", "value"] == pytest.approx(75.0, abs=1e-12)
        assert frame.loc["size_ratio", "status"] == "within"
        html = res.to_html(tmp_path / "report.html").read_text(encoding="utf-8")
        assert 'id="size-ratio"' in html and "Rows per original row: 1.00, 0.50" in html
    finally:
        unregister("size_ratio")
    assert "size_ratio" not in step_names()


#: a measure declaring what its step costs in its own file: the rate measured, the sizes it is
#: trusted for, its work count and its memory (docs: "Adding a measure", the record's ``cost``)
TIMED_FILE = '''
from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.measures import Measure, Need, StepCost, Work


def row_step(ctx):
    return StepOutcome(name="row_count", status="ran", result=[len(z) for z in ctx.synthetic])


def row_work(ctx):
    # every original record against every released row
    n, rows = ctx.plan.n_records, sum(len(z) for z in ctx.synthetic)
    return Work(n * rows, n * rows, f"{n:,} x {rows:,}")


def row_need(ctx, left):
    return Need(8_000.0 * ctx.plan.n_records, "one original record at a time")


COST = StepCost(rate=("records x released rows", 0.5e-3, 1e-3), sizes=(1_000, 2_000),
                work=row_work, need=row_need, kept_per_record=100.0)
MEASURE = Measure("row_count", "Row count", step=row_step, cost=COST)
'''


def test_a_measure_declares_its_memory_and_time_in_its_own_file(data, tmp_path, monkeypatch,
                                                                  capsys):
    """The audit's plan reads a measure's costs from its record alone (issue 87): the time and
    memory it states before the work are the measure's own, and without the record the step is
    not estimated. Worked: 120 records x 240 released rows = 28,800 units at 0.5–1 ms, 14.4–28.8
    s; 8 kB a record, 960 kB, and it keeps 100 bytes a record, 12 kB."""
    from dataclasses import replace
    from types import SimpleNamespace

    from bayes_risk.auditing import memory_plan

    (tmp_path / "row_count_measure.py").write_text(TIMED_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import row_count_measure as mod

    orig, syn = data

    def planned(measure):
        register(measure)
        try:
            res = br.audit(orig, syn, known=KNOWN, random_seed=1, progressbar=True,
                           settings=br.AuditSettings(skip=BUILTIN))
        finally:
            unregister("row_count")
        rows = res.plan.settings_frame().query("step == 'memory'").set_index("setting")
        said = next(ln for ln in capsys.readouterr().err.splitlines() if "to run" in ln)
        return rows.loc["row count", "value"], said

    line, said = planned(mod.MEASURE)
    assert line == ("at least 960.0 kB, then keeps 12.0 kB for the steps after it; one "
                    "original record at a time; expected 14–29 s of CPU time (records x "
                    "released rows 120 x 240 at 0.5–1 ms each, 2 cores of an AMD EPYC or Intel "
                    "Xeon as measured; other machines scale with their speed)")
    assert said.startswith("[audit] 1 step(s) to run (row count): expected 14–29 s of CPU "
                           "time"), said
    # beyond the sizes its rate is trusted for, no time is given
    register(mod.MEASURE)
    try:
        big = SimpleNamespace(plan=SimpleNamespace(n_records=2_001), synthetic=syn)
        assert memory_plan._step_time(big, "row_count") == (
            None, "2,001 records, more than the 2,000 its rates are trusted for (measured up "
            "to 1,000)")
    finally:
        unregister("row_count")
    # the record ignored: nothing estimated
    line, said = planned(replace(mod.MEASURE, cost=None))
    assert line == ("not estimated before the step; not chunked; time not estimated: not "
                    "measured on this machine class")
    assert "expected" not in said


def test_a_cost_that_is_not_a_step_cost_is_refused(toy):
    from dataclasses import replace

    from bayes_risk.measures import StepCost

    with pytest.raises(ValidationError, match="cost must be a bayes_risk.measures.StepCost. "
                       "Got 'fast'") as err:
        replace(toy.MEASURE, cost="fast")
    assert err.value.code == "MEASURE_BROKEN"
    with pytest.raises(ValidationError, match=r"cost.work must be the function or class "
                       r"itself; got 'exact_copies:work' \(an import path is not read") as err:
        replace(toy.MEASURE, cost=StepCost(work="exact_copies:work"))
    assert err.value.code == "MEASURE_BROKEN"


#: a measure whose record says how its lines are read (docs: "Adding a measure", the record's
#: caveats, risk, intruders_by_line, not_assessed, contributions and together)
READ_FILE = '''
from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.auditing.verdict_base import Verdict, line_caveats
from bayes_risk.measures import Contributions, Measure

CAVEATS = {"rows": ("FEW_ROWS",)}


def rows_step(ctx):
    return StepOutcome(name="rows", status="ran", result=[len(z) for z in ctx.synthetic])


def rows_lines(plan, outcome):
    caveats = line_caveats(CAVEATS["rows"], ("OTHER", "FEW_ROWS"))
    return [Verdict("rows", f"rows of dataset {i} (%)", 100.0 * n / plan.n_records, 150.0,
                    "max", None, warnings=caveats, unit="%", intruder="counts the rows")
            for i, n in enumerate(outcome.result, start=1)]


def rows_not_assessed(plan, outcome):
    return ["the rows' order (not compared)"]


def rows_together(result):
    return [f"The {len(result.verdicts)} row lines read together."]


def rows_contributions(ctx, outcome, value):  # each target's share, read off the line's value
    import numpy as np

    return Contributions(np.full(4, value / 100), "{up:,} of {n:,} rows rose, {down:,} fell",
                         "every row", "the rows that give the line")


MEASURE = Measure("rows", "Rows", step=rows_step, verdict=rows_lines, caveats=CAVEATS,
                  intruders_by_line=True, not_assessed=rows_not_assessed,
                  contributions=rows_contributions, together=rows_together)
'''


def test_a_measure_says_how_its_lines_are_read(data, tmp_path, monkeypatch):
    """Each field of the record on reading the lines has its effect on a measure of another
    package, and none once the field is left at its default."""
    from dataclasses import replace
    from types import SimpleNamespace

    from bayes_risk.auditing import verdicts
    from bayes_risk.auditing.rises import _line_cause, rise_causes

    (tmp_path / "rows_measure.py").write_text(READ_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import rows_measure as mod

    hash(mod.MEASURE)  # a record with caveats stays hashable
    orig, syn = data
    register(mod.MEASURE)
    try:
        res = br.audit(orig, syn, known=KNOWN, random_seed=1, progressbar=False,
                       settings=br.AuditSettings(skip=BUILTIN))
        assert verdicts.CAVEATS["rows"] == ("FEW_ROWS",)
        assert res.verdicts[0].warnings == ("FEW_ROWS",)
        assert res.not_assessed[-1] == "the rows' order (not compared)"
        html = res.to_html(tmp_path / "read.html").read_text(encoding="utf-8")
        assert "<strong>rows of dataset 1 (%), rows of dataset 2 (%)</strong>" in html
        assert "Reading the lines together" in html and "The 2 row lines read together." in html
        # a risk line that rose against the earlier audit is explained; a utility's is not
        before = {"verdicts": [{"step": "rows", "measure": "rows of dataset 1 (%)",
                                "value": 50.0}]}
        ctx = SimpleNamespace(plan=res.plan, synthetic=syn)
        assert list(rise_causes(ctx, res.steps, before)) == [("rows", "rows of dataset 1 (%)")]
        # the runs before the remedy and with one column undone, compared row by row
        out = res.step("rows")
        rerun = {"before": ({"rows of dataset 1 (%)": 50.0}, out, ctx), "after": ({}, out, ctx),
                 "Income": ({"rows of dataset 1 (%)": 50.0}, out, ctx)}
        text = _line_cause("rows of dataset 1 (%)", "%", 100.0, rerun, {"Income": "noise"},
                           False, contributions=mod.MEASURE.contributions)
        assert ("Target by target: 4 of 4 rows rose, 0 fell (at the rows that give the line, "
                "every row). Of those 4, undoing Income takes 4 back.") in text

        unregister("rows")  # the same measure, its reading fields left at their defaults
        register(replace(mod.MEASURE, caveats={}, intruders_by_line=False, not_assessed=None,
                         together=None, risk=False))
        assert "rows" not in verdicts.CAVEATS
        assert "the rows' order (not compared)" not in res.not_assessed
        html = res.to_html(tmp_path / "plain.html").read_text(encoding="utf-8")
        assert "<strong>rows</strong>" in html and "Reading the lines together" not in html
        assert rise_causes(ctx, res.steps, before) == {}
        assert "Target by target" not in _line_cause(
            "rows of dataset 1 (%)", "%", 100.0, rerun, {"Income": "noise"}, False)
    finally:
        unregister("rows")


def test_a_reading_field_of_the_wrong_kind_is_refused(toy):
    from dataclasses import replace

    for kw, said in [({"caveats": {"rows": ["FEW_ROWS"]}}, "caveats must map each kind"),
                     ({"risk": "yes"}, "risk must be True or False"),
                     ({"intruders_by_line": 1}, "intruders_by_line must be True or False"),
                     ({"together": "mod:together"}, "together must be the function or class"),
                     ({"not_assessed": "x"}, "not_assessed must be the function or class"),
                     ({"contributions": 3}, "contributions must be the function or class")]:
        with pytest.raises(ValidationError, match=said) as err:
            replace(toy.MEASURE, **kw)
        assert err.value.code == "MEASURE_BROKEN"


#: a measure saying when its step is withheld and when it applies, what it checks before the
#: first step and what of it runs on the audit's executor, in its own file (docs: "Adding a
#: measure", the record's ``resolve``, ``applies``, ``preflight`` and ``executor``)
GATED_FILE = '''
from bayes_risk.auditing.outcome import StepOutcome
from bayes_risk.exceptions import ValidationError
from bayes_risk.measures import Measure


def gated_resolve(plan, original, release, schema):
    if any(len(z) != len(original) for z in release):
        return "a dataset holds another number of records than the original."
    return None


def gated_applies(ctx):
    return None if ctx.holdout is not None else "no holdout was given: nothing to compare."


def gated_preflight(ctx):
    if len(ctx.holdout) < 10:
        raise ValidationError(f"holdout: {len(ctx.holdout)} records; give 10 at least.",
                              code="HOLDOUT_SMALL")


def gated_step(ctx):
    return StepOutcome(name="gated", status="ran", result=len(ctx.holdout))


MEASURE = Measure("gated", "Gated", step=gated_step, resolve=gated_resolve, applies=gated_applies,
                  preflight=gated_preflight, executor="the comparison of the holdout")
'''


def test_a_measure_declares_when_it_runs_its_checks_and_its_executor_part(data, tmp_path,
                                                                          monkeypatch, capsys):
    """The audit reads from the record alone (issue 87) whether the step is withheld for the
    release (the plan's reason), whether it applies (left out of the plan of memory and time
    and skipped with the measure's reason), the checks of its inputs before the first step (an
    error naming the step and how to audit without it) and what of it runs on the audit's
    executor; with each field ignored, the step would run (and fail) or run in process."""
    from dataclasses import replace

    (tmp_path / "gated_measure.py").write_text(GATED_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import gated_measure as mod

    class Elsewhere:  # another executor, described by its class name
        partition_size = None

        def map(self, fn, shared, parts, *, progressbar=True, description=""):
            return [fn(shared, part) for part in parts]

    orig, syn = data
    kw = dict(known=KNOWN, random_seed=1, settings=br.AuditSettings(skip=BUILTIN))
    register(mod.MEASURE)
    try:
        res = br.audit(orig, syn, progressbar=True, **kw)
        said = capsys.readouterr().err
        step = res.step("gated")
        assert (step.status, step.reason) == ("skipped", "no holdout was given: nothing to "
                                              "compare.")
        assert "0 step(s) to run ()" in said and "skipped: no holdout was given" in said
        assert "gated" not in set(res.plan.settings_frame().query("step == 'memory'")["setting"])
        with pytest.raises(ValidationError, match=r"^holdout: 5 records; give 10 at least\. "
                           r"\(needed by the gated step; to audit the release without it, give "
                           r"settings=AuditSettings\(skip=\['gated'\]\)\)\.$") as err:
            br.audit(orig, syn, holdout=orig.iloc[:5], out=tmp_path / "a", progressbar=False,
                     **kw)
        assert err.value.code == "HOLDOUT_SMALL" and not (tmp_path / "a").exists()
        elsewhere = {**kw, "settings": kw["settings"].replace(executor=Elsewhere())}
        res = br.audit(orig, syn, holdout=orig.iloc[:20], progressbar=False, **elsewhere)
        assert (res.step("gated").status, res.step("gated").result) == ("ran", 20)
        assert res.step("gated").where == {"kind": "Elsewhere", "text": "by Elsewhere",
                                           "partition_size": None,
                                           "part": "the comparison of the holdout"}
        # a release the measure withholds itself from
        short = br.audit(orig, [syn[0], syn[1].iloc[:60]], holdout=orig.iloc[:20],
                         progressbar=False, **kw)
        why = "a dataset holds another number of records than the original."
        assert short.plan.withheld["gated"] == why
        assert (short.step("gated").status, short.step("gated").reason) == ("skipped", why)
        note = res.plan.settings_frame().query("step == 'executor'")["note"].iloc[0]
        assert note.startswith("the identification, posterior identification, attribute and "
                               "gated steps' engines")
        unregister("gated")
        # without the executor part, the step runs in process and is not named
        register(replace(mod.MEASURE, executor=""))
        res = br.audit(orig, syn, holdout=orig.iloc[:20], progressbar=False, **elsewhere)
        assert res.step("gated").where == {"kind": "in process", "text": "in process"}
    finally:
        unregister("gated")
    with pytest.raises(ValidationError, match="executor must be a string") as err:
        replace(mod.MEASURE, executor=["the comparison"])
    assert err.value.code == "MEASURE_BROKEN"
    with pytest.raises(ValidationError, match="resolve must be the function or class itself"):
        replace(mod.MEASURE, resolve="gated_measure:gated_resolve")
    with pytest.raises(ValidationError, match="applies must be the function or class itself"):
        replace(mod.MEASURE, applies="gated_measure:gated_applies")
    with pytest.raises(ValidationError, match="preflight must be the function or class itself"):
        replace(mod.MEASURE, preflight="gated_measure:gated_preflight")


@pytest.mark.parametrize("applies", ["membership_applies", "attacks_applies"])
def test_a_step_without_holdout_names_it_as_its_caller_writes_it(applies):
    # in Python the argument, on the command line the option: never both at once
    import importlib
    from types import SimpleNamespace

    from bayes_risk.cli._run import command_line_options

    module = importlib.import_module(
        f"bayes_risk.auditing.measures.{applies.removesuffix('_applies')}")
    reason = getattr(module, applies)
    ctx = SimpleNamespace(holdout=None, model=None)
    python = reason(ctx)
    assert python.startswith("no holdout was given (holdout=...: ") and "--" not in python
    with command_line_options({"holdout": "--holdout"}):
        cli = reason(ctx)
    assert cli.startswith("no holdout was given (--holdout FILE: ") and "holdout=" not in cli
