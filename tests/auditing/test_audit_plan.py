"""The audit's plan: one settings object (``AuditSettings``, what the user asked) and one
resolved-values object (``AuditPlan``, what the audit decided from the data and the release)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk.auditing.plan import AuditPlan
from bayes_risk.auditing.resolve import audit_inputs, make_plan
from bayes_risk.auditing.thresholds import Thresholds
from bayes_risk.data import SyntheticData

#: the settings table of two audits as the code before the single settings object wrote it
#: (``settings`` of ``summary.json``, the report's settings table): it must not change, but for
#: its order since each measure's record adds its rows (``Measure.settings``, issue 87): the
#: measures' rows in the registry's order, before the options' rows and the thresholds
GOLDEN = Path(__file__).parent / "settings_table"


class _Model:
    """A stand-in for a fitted model: the plan reads only that one is given."""


def _release(n: int = 60) -> tuple[pd.DataFrame, SyntheticData]:
    data = br.make_ce_like(n, random_seed=4)
    rng = np.random.default_rng(7)
    frames = []
    for _ in range(2):
        z = data.copy()
        z["Income"] = rng.permutation(z["Income"].to_numpy())
        z["Tenure"] = rng.permutation(z["Tenure"].to_numpy())
        frames.append(z)
    return data, SyntheticData(frames, method="unknown")


def _plan(settings: br.AuditSettings, **kw) -> AuditPlan:
    data, syn = _release()
    weights = settings.weights
    if weights is not None:
        data = data.assign(**{weights: np.linspace(1.0, 3.0, len(data))})
    data, syn, sch, _ = audit_inputs(data, syn, None, ["Urban", "Marital", "Tenure"], weights)
    return make_plan(data, syn, sch, settings, synthesized=["Income", "Tenure"],
                      thresholds=Thresholds.parse(kw.pop("thresholds", None)), random_seed=11,
                      **kw)


#: every option of ``AuditSettings`` away from its default (and a model, thresholds)
GIVEN = dict(
    match=br.MatchSpec(radius={"Age": 0.2}, radius_type="absolute"),
    sweep=[0.5, 2.0], known_sweep=True, known_fractions=[0.25, 1.0], targets=["Tenure"],
    ngroups_target=4, attribute_records=[0, 3, 5],
    attribute_estimator=br.EstimatorSpec(kind="is", refit_draws=40, refit_cache="cache"),
    combining_rules="partial", propensity="cart", imputed=[], membership_selection="independent",
    weights="w", linkability_columns=(["Age", "Urban"], ["Income"]), skip=["attacks"],
    show_confidential_values=True, allow_other_model=True,
)

CASES = {
    "default": (dict(), dict(known=["Age", "Urban"], model=None)),
    "given": (GIVEN, dict(known=["Age", "Urban", "Income"], model=_Model(),
                          thresholds={"repU": 2})),
}


def _table(plan: AuditPlan) -> list[dict]:
    return json.loads(json.dumps(plan.settings_frame().to_dict(orient="records")))


@pytest.mark.parametrize("case", sorted(CASES))
def test_settings_table_unchanged(case):
    """The settings table (``summary.json``'s ``settings``, the report's table) of the code
    before the plan stopped copying the settings, row for row."""
    settings, kw = CASES[case]
    plan = _plan(br.AuditSettings(**settings), **dict(kw))
    expected = json.loads((GOLDEN / f"{case}.json").read_text())
    assert _table(plan) == expected


def test_the_plan_holds_no_copy_of_a_setting():
    """A new option of ``AuditSettings`` is read where it is used, from ``plan.given``: the
    plan has no field of an option's name but those that hold the option's resolved value
    (``_RESOLVED``, each saying how), and holds the settings object itself, not a copy."""
    from bayes_risk.auditing.plan import _RESOLVED

    options = {f.name for f in dataclasses.fields(br.AuditSettings)}
    shared = {f.name for f in dataclasses.fields(AuditPlan)} & options
    assert shared == set(_RESOLVED), f"copied into AuditPlan: {sorted(shared - set(_RESOLVED))}"
    settings, kw = CASES["given"]
    given = br.AuditSettings(**settings)
    plan = _plan(given, **dict(kw))
    assert plan.given is given
    # the shared fields hold resolved values (0 added, names checked, defaults filled in)
    assert plan.sweep == (0.0, 0.5, 2.0) and plan.skip == ("attacks",)
    assert plan.ngroups_target == {"Tenure": None}
    assert plan.linkability_columns == (["Age", "Urban"], ["Income"])


def test_a_new_option_is_one_declaration(monkeypatch):
    """The one place of a new option: a field of the settings (a subclass here, nothing else
    edited), read by a step from ``ctx.plan.given``, shown in the settings table by its
    ``settings_row`` metadata, and kept by ``replace``; ``AuditPlan`` and ``StepContext`` are
    not touched."""
    from bayes_risk.auditing.outcome import StepOutcome
    from bayes_risk.auditing.settings import settings_row
    from bayes_risk.measures import Measure, measures, register, unregister

    @dataclasses.dataclass(frozen=True, eq=False)
    class MySettings(br.AuditSettings):
        min_share: float = dataclasses.field(
            default=0.5, metadata=settings_row("toy_option", "minimum share", "the toy's cut"))

    seen = []

    def toy_step(ctx):
        seen.append(ctx.plan.given.min_share)
        return StepOutcome(name="toy_option", status="ran", result=None)

    builtin = [m.name for m in measures()]
    given = MySettings(skip=builtin, min_share=0.25).replace(sweep=None)
    assert type(given) is MySettings and given.min_share == 0.25
    data, syn = _release()
    register(Measure("toy_option", "Toy option", step=toy_step))
    try:
        res = br.audit(data, syn, known=["Age", "Urban"], synthesized=["Income", "Tenure"],
                       settings=given, random_seed=1, progressbar=False)
        default = br.audit(data, syn, known=["Age", "Urban"], synthesized=["Income", "Tenure"],
                           settings=MySettings(skip=builtin), random_seed=1, progressbar=False)
    finally:
        unregister("toy_option")
    assert seen == [0.25, 0.5]
    assert res.step("toy_option").status == "ran" and res.plan.given is given
    rows = [(r["step"], r["setting"], r["value"], r["source"], r["note"])
            for r in _table(res.plan) + _table(default.plan) if r["step"] == "toy_option"]
    assert rows == [("toy_option", "minimum share", "0.25", "given", "the toy's cut"),
                    ("toy_option", "minimum share", "0.5", "default", "the toy's cut")]
