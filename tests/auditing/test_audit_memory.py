"""The audit's memory plan (issue 70): the default budget, the plan stated before the work,
refusal before any step, and the same numbers under a tight budget."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk import _memory
from bayes_risk.auditing import api as audit_api
from bayes_risk.auditing import memory_plan
from bayes_risk.data import SyntheticData

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.BayesRiskWarning")

KNOWN = ["Age", "Urban", "Marital", "Income"]
#: the steps kept cheap: identification at one radius alone runs
CHEAP = br.AuditSettings(categorical=["Urban", "Marital", "Tenure"], sweep=None,
                         skip=["utility", "attribute", "disclosure"])


def _release(n: int = 80) -> tuple[pd.DataFrame, SyntheticData]:
    data = br.make_ce_like(n, random_seed=4)
    rng = np.random.default_rng(7)
    frames = [data.assign(Income=(data["Income"] * rng.lognormal(0, 0.1, n)).round(),
                          Tenure=rng.permutation(data["Tenure"].to_numpy()))
              for _ in range(2)]
    return data, SyntheticData(frames, method="unknown")


def _audit(**kw):
    data, syn = _release()
    return br.audit(data, syn, known=KNOWN, synthesized=["Income", "Tenure"], settings=CHEAP,
                    random_seed=3, **kw)


def test_default_budget_is_half_the_available_memory_beside_what_is_held(monkeypatch):
    # worked: 10 GB available and 0.3 GB held give 0.3 + 5 = 5.3 GB
    monkeypatch.setattr(memory_plan, "available_memory", lambda: 10 * 10**9)
    monkeypatch.setattr(memory_plan, "resident_memory", lambda: 3 * 10**8)
    b = memory_plan.audit_budget()
    assert (b.limit, b.source) == (5_300_000_000, "default")
    assert "50% of the 10.0 GB available" in b.derivation
    assert "the 300.0 MB the process held" in b.derivation
    with br.memory_limit("2GB"):  # a limit given is the budget, as it is
        g = memory_plan.audit_budget()
    assert (g.limit, g.source) == (2 * 10**9, "given")
    monkeypatch.setattr(memory_plan, "available_memory", lambda: None)
    assert memory_plan.audit_budget().limit is None  # the platform says nothing: no limit


def test_the_attribute_steps_least_need():
    from types import SimpleNamespace

    p = SimpleNamespace(n_records=80, attribute_records=None, synthesized=["Income", "Tenure"],
                        m=2, given=br.AuditSettings())
    # worked: a record keeps 8 (2 + 5 + 200) + 2048 + 1500 + 16 x 200 = 8,404 bytes at one
    # candidate; one record's working arrays 8 (2 + 2)(2 + 200) = 6,464
    assert memory_plan._attribute_need(p) == 80 * 8404 + 6464
    p.attribute_records = [0, 3]
    assert memory_plan._attribute_need(p) == 2 * 8404 + 6464


def test_the_steps_run_within_the_default_budget(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(memory_plan, "available_memory", lambda: 8 * 10**9)
    monkeypatch.setattr(memory_plan, "resident_memory", lambda: 3 * 10**8)
    seen = []
    run_step = audit_api._run_step
    monkeypatch.setattr(audit_api, "_run_step",
                        lambda *a: seen.append(_memory.current_limit()) or run_step(*a))
    res = _audit(out=tmp_path / "a", progressbar=True)
    limit = seen[0]
    # worked: 4 GB (half of 8) beside the 0.3 GB held, in force during every step
    assert limit == 4_300_000_000 and set(seen) == {limit}
    assert _memory.current_limit() is None  # the default ends with the audit
    err = capsys.readouterr().err
    plan_at, first_step = err.index("[audit] memory budget"), err.index("[audit] step ")
    assert plan_at < first_step  # stated before the work
    assert ("memory budget 4.3 GB: 50% of the 8.0 GB available on the machine when the audit "
            "started, plus the 300.0 MB the process held then") in err[plan_at:first_step]
    assert re.search(r"identification: at least \d+\.\d MB, then keeps \d+\.\d [kM]B for the "
                     r"steps after it; the per-dataset tables of 80 targets x 2 datasets",
                     err[plan_at:first_step])
    rows = {r["setting"]: r for r in json.loads((tmp_path / "a" / "summary.json").read_text())
            ["settings"] if r["step"] == "memory"}
    assert rows["budget"]["value"] == _memory.format_bytes(limit)
    assert rows["budget"]["source"] == "default"
    assert rows["identification"]["source"] == "planned"
    assert "attribute" not in rows  # skipped: nothing planned
    assert res.plan.settings_frame().query("step == 'memory'").shape[0] == len(rows)


def test_a_step_that_cannot_fit_is_refused_before_any_work(monkeypatch, tmp_path):
    # the kernels counted as loaded (whether an earlier test ran them does not matter)
    monkeypatch.setattr(memory_plan, "_kernels_loaded", lambda mods: True)
    ran = []
    monkeypatch.setattr(audit_api, "_run_step", lambda *a: ran.append(a[2]))
    out = tmp_path / "a"
    # 1 MB beyond what the process holds: identification needs its 16 MB chunk at least
    with br.memory_limit(_memory.resident_memory() + 10**6), \
            pytest.raises(br.ValidationError) as err:
        _audit(out=out)
    assert err.value.code == "MEMORY_TOO_LARGE"
    text = str(err.value)
    assert "the identification step would need at least 16." in text
    assert "the audit's budget is" in text and "given with memory_limit" in text
    assert "skip=['identification']" in text and "Nothing was computed" in text
    assert ran == [] and not out.exists()  # no step ran, no folder written


def test_the_same_numbers_under_a_tight_budget(monkeypatch):
    from bayes_risk.identification import pooled

    chunks = []
    chunk = pooled._pool_chunk
    monkeypatch.setattr(pooled, "_pool_chunk", lambda *a: chunks.append(a[2:]) or chunk(*a))
    free = _audit(progressbar=False)
    n_free = len(chunks)
    # 40 kB left whatever the process holds (the per-dataset tables and indexes of 80 records
    # fit), with a floor of 4 kB a chunk: every pooled run cuts its targets into chunks
    monkeypatch.setattr(_memory, "room", lambda: 40_000)
    monkeypatch.setattr(_memory, "MIN_WORKING_BYTES", 4096)
    chunks.clear()
    tight = _audit(progressbar=False)
    assert n_free == 1 and len(chunks) > 1  # the pooled run cut into chunks
    assert tight.verdict_frame().equals(free.verdict_frame())
    assert tight.baseline_frame().equals(free.baseline_frame())
    a, b = (r.step("identification") for r in (free, tight))
    assert b.result.records.equals(a.result.records)
    assert b.extra["pooled"].headline.records.equals(a.extra["pooled"].headline.records)


def test_a_withheld_step_is_not_planned():
    """A post-processed release withholds the model-based steps: planning the posterior step
    rebuilt its synthesizer, which cannot reproduce the release (RELEASE_NOT_REPRODUCED)."""
    from bayes_risk.models import CARTSynthesizer

    data = br.make_ce_like(80, random_seed=4)
    schema = br.infer_schema(data, categorical=["Urban", "Marital", "Tenure"])
    release = CARTSynthesizer().fit(data, schema=schema, synthesized=["Tenure", "Income"],
                                    random_seed=1).synthesize(2, random_seed=2)
    fixed = br.sdc(data, release, bottom_top_coding={"Income": (1000, None)})
    res = br.audit(data, fixed, known=KNOWN, settings=CHEAP, random_seed=3, progressbar=False)
    planned = set(res.plan.settings_frame().query("step == 'memory'")["setting"])
    assert planned == {"budget", "identification", "least budget"}


def test_what_earlier_steps_keep_is_planned(monkeypatch):
    """Issue 70: each step's need was checked beside what the process held before the first
    step, so an audit of 5,000 records under 450 MB passed the plan and was refused mid-run.
    Worked: 1,000 B held; A needs 10 and keeps 100; B needs 50: B needs 1,150 B in all."""
    S = memory_plan.StepMemory
    plans = [S("a", 10.0, "", keeps=100.0), S("b", 50.0, "")]
    assert memory_plan.least_budget(plans, 1000.0) == (1150.0, plans[1])
    monkeypatch.setattr(memory_plan, "resident_memory", lambda: 1000)
    budget = memory_plan.AuditBudget(1100, "given", "given with memory_limit")
    with pytest.raises(br.ValidationError) as err:  # each need alone fits 1,100 B
        memory_plan.check_steps(plans, budget, lambda step: f"skip {step}")
    assert err.value.code == "MEMORY_TOO_LARGE"
    assert ("the b step would need at least 50 B of memory beside the 1.0 kB the process "
            "holds and the 100 B the steps before it keep") in str(err.value)
    assert "raise the budget to at least 1.2 kB" in str(err.value)  # 1,150 B rounded up
    memory_plan.check_steps(plans, dataclasses.replace(budget, limit=1150), str)  # fits


def test_the_compiled_kernels_first_run_is_planned(monkeypatch):
    # worked: nothing compiled yet: numba's compiler (70 MB) with identification's kernels
    # (75 MB), the attribute step's 12 MB; identification's already run: the attribute's alone
    steps = ["utility", "identification", "posterior_identification", "attribute"]
    monkeypatch.setattr(memory_plan, "_kernels_loaded", lambda mods: False)
    assert memory_plan._kernel_bytes(steps) == {"identification": 145e6, "attribute": 12e6}
    monkeypatch.setattr(memory_plan, "_kernels_loaded",
                        lambda mods: "bayes_risk.identification._kernels" in mods)
    assert memory_plan._kernel_bytes(steps) == {"attribute": 12e6}


def test_an_audit_the_plan_accepts_runs_to_the_end(monkeypatch):
    """The README's audit, small (CART release; identification, attribute risk and the
    disclosure measures), under the least budget its plan states: no step refused mid-run,
    the same numbers as without a limit."""
    from bayes_risk.models import CARTSynthesizer

    data = br.make_ce_like(150, random_seed=1)
    schema = br.infer_schema(data, categorical=["Urban", "Marital", "Tenure"])
    release = CARTSynthesizer().fit(data, schema=schema, synthesized=["Tenure", "Income"],
                                    random_seed=1).synthesize(2, random_seed=2)
    s = br.AuditSettings(sweep=None, attribute_records=[0],
                         skip=["utility", "posterior_identification"])

    def run():
        return br.audit(data, release, known=KNOWN, settings=s, random_seed=3,
                        progressbar=False)

    held = _memory.resident_memory()
    free = run()
    rows = free.plan.settings_frame().query("step == 'memory'").set_index("setting")
    assert {"identification", "attribute", "disclosure"} <= set(rows.index)
    least = _memory.parse_memory(rows.loc["least budget", "value"].replace(" ", ""))
    # the same plan beside what the process holds now (the first run's result too), with
    # 5 MB for what the inputs' checks allocate before the plan is made
    with br.memory_limit(_memory.resident_memory() + least - held + 5 * 10**6):
        tight = run()
    assert [o.status for o in tight.steps] == [o.status for o in free.steps]
    assert "failed" not in {o.status for o in tight.steps}
    assert tight.verdict_frame().equals(free.verdict_frame())


def test_the_steps_left_are_checked_again_before_each_step(monkeypatch, tmp_path):
    """What a step keeps is measured before the next one starts: a step that no longer fits
    beside it is refused before it runs, not in the middle of its work."""
    held = iter([10**8] * 3 + [10**10] * 100)  # the plan, then 10 GB once the first step ran
    monkeypatch.setattr(memory_plan, "resident_memory", lambda: next(held))
    monkeypatch.setattr(memory_plan, "_kernels_loaded", lambda mods: True)
    ran = []
    monkeypatch.setattr(audit_api, "_run_step",
                        lambda *a: ran.append(a[2]) or br.auditing.StepOutcome(name=a[2], status="skipped"))
    out = tmp_path / "a"
    with br.memory_limit("1GB"), pytest.raises(br.ValidationError) as err:
        _audit(out=out)
    assert err.value.code == "MEMORY_TOO_LARGE"
    assert "checked again after the steps before it (utility)" in str(err.value)
    assert ran == ["utility"] and not out.exists()


def test_the_pooled_figures_hold_no_match_probabilities(monkeypatch):
    """The pooled step's runs keep the measures only: at 10^5 CE-like records the README's audit
    stopped after its radius search, the pooled probabilities π of the maximising radius
    passing the engine's limit of 10^8 entries, though neither the verdict nor the report
    reads π. Here the limit is cut to 10 entries: the same figures as without it."""
    from bayes_risk.identification import engine

    free = _audit(progressbar=False)
    monkeypatch.setattr(engine, "MAX_NNZ", 10)
    capped = _audit(progressbar=False)
    pooled = capped.step("identification").extra["pooled"]
    assert pooled.result.pooled is None
    assert capped.verdict_frame().equals(free.verdict_frame())
    assert pooled.headline.records.equals(free.step("identification").extra["pooled"]
                                          .headline.records)
