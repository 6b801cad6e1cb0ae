"""``bayes_risk.audit`` / ``bayes-risk audit``: steps, files, the self-contained report."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk import MatchSpec
from bayes_risk.auditing import Thresholds
from bayes_risk.auditing.measures.attribute import ATTRIBUTE_MEASURE
from bayes_risk.auditing.render import CSP
from bayes_risk.cli import main
from bayes_risk.exceptions import SchemaError, ValidationError

# the package's own warnings (separation on tiny data, …) are expected here
pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.BayesRiskWarning")

KNOWN = ["Age", "Urban", "Marital"]
CATS = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> tuple[Path, Path]:
    """A CE-like table and a CART release of it (m = 2), written as a user would."""
    d = tmp_path_factory.mktemp("release")
    orig = d / "orig.csv"
    br.make_ce_like(240, random_seed=5).to_csv(orig, index=False)
    syn = d / "syn"
    assert main(["synthesize", str(orig), "--method", "cart", "--synthesize", "Tenure",
                 "Income", "--categorical", *CATS, "-m", "2", "--random-seed", "1",
                 "--out", str(syn), "--quiet"]) == 0
    return orig, syn


@pytest.fixture(scope="module")
def audited(release, tmp_path_factory):
    orig, syn = release
    out = tmp_path_factory.mktemp("audit") / "a"
    with pytest.warns(Warning):  # the steps' warnings reach the caller
        # the intruder knows unsynthesized columns only: the identification figures are a
        # baseline of the original; the sweep varies Age as asked (the reference numbers)
        res = br.audit(str(orig), str(syn), known=KNOWN, out=out, random_seed=2, progressbar=False,
                       settings=br.AuditSettings(
                                                 attribute_records=range(25)))
    return res, out


@pytest.fixture(scope="module")
def audited_hh(release, tmp_path_factory):
    """Hornby & Hu's intruder, who also knows the true value of a synthesized key (Income)."""
    orig, syn = release
    out = tmp_path_factory.mktemp("audit_hh") / "a"
    res = br.audit(str(orig), str(syn), known=[*KNOWN, "Income"], out=out, random_seed=2,
                   progressbar=False,
                   settings=br.AuditSettings(skip=["posterior_identification", "attribute"]))
    return res, out


@pytest.fixture(scope="module")
def audited_posterior(release, tmp_path_factory):
    """Hornby & Hu's intruder with the posterior identification step (its 100 to 200 CART
    replicates are the costliest step here, run once for the tests that read it)."""
    orig, syn = release
    out = tmp_path_factory.mktemp("audit_posterior") / "a"
    res = br.audit(str(orig), str(syn), known=[*KNOWN, "Income"], random_seed=3, out=out,
                   progressbar=False, settings=br.AuditSettings(skip=["attribute", "disclosure"]))
    return res, out


#: the identification step alone at the given radius (no search)
IDENTIFICATION_ONLY = br.AuditSettings(sweep=None, skip=["utility", "posterior_identification",
                                                         "attribute", "disclosure"])


@pytest.fixture(scope="module")
def audited_identification(release):
    """Hornby & Hu's intruder, the identification step alone (``IDENTIFICATION_ONLY``)."""
    orig, syn = release
    return br.audit(str(orig), str(syn), known=[*KNOWN, "Income"], random_seed=2,
                    progressbar=False, settings=IDENTIFICATION_ONLY)


@pytest.fixture(scope="module")
def report(audited) -> tuple[Path, Path]:
    """The report of ``audited`` (HTML, Markdown) as ``to_html`` / ``to_markdown`` write it,
    rendered once for the tests that read the unchanged result's report."""
    res, out = audited
    return res.to_html(out / "report.html"), res.to_markdown(out / "report.md")


@pytest.fixture(scope="module")
def report_hh(audited_hh) -> tuple[Path, Path]:
    """The report of ``audited_hh`` (HTML, Markdown), rendered once as ``report``."""
    res, out = audited_hh
    return res.to_html(out / "report.html"), res.to_markdown(out / "report.md")


def _links(html: str) -> list[str]:
    return re.findall(r'(?:src|href)="([^"]*)"', html)


def test_steps_run_or_skip_with_reason(audited):
    res, out = audited
    st = {s.name: s for s in res.steps}
    assert [s.name for s in res.steps] == ["utility", "identification",
                                           "posterior_identification", "attribute",
                                           "membership", "attacks", "disclosure",
                                           "relative_difference", "closest_match"]
    for name in ("utility", "identification", "attribute", "disclosure",
                 "relative_difference", "closest_match"):
        assert st[name].status == "ran", (name, st[name].reason)
    post = st["posterior_identification"]
    assert post.status == "skipped" and "no known column is synthesized" in post.reason
    # the roles came from the release manifest, and the plan says so
    assert res.plan.synthesized == ["Tenure", "Income"]
    assert res.plan.known_synthesized == [] and res.plan.known_unsynthesized == KNOWN
    s = res.plan.settings_frame()
    assert s.loc[s["setting"] == "synthesized columns", "source"].item() == "release manifest"
    # the measures are those of the public functions on the same input
    assert len(st["attribute"].result.records) == 25
    assert st["utility"].result.pmse.incomplete  # partial synthesis: its own null
    assert set(np.atleast_1d(st["identification"].extra["sweep"].r_star)) <= set(res.plan.sweep)


def test_files_as_the_sub_commands_write_them(audited):
    res, out = audited
    for f in ["summary.json", "utility/summary.json", "utility/overlap.csv",
              "utility/marginals.csv", "utility/twoway.csv", "identification/records.csv",
              "identification/summary.json", "identification/radius_search.csv",
              "identification/radius_search.png", "attribute/records.csv",
              "attribute/summary.json", "attribute/p_true_hist.png", "attribute/rank_hist.png",
              # one folder per target: the synthesized columns the intruder does not know
              *[f"disclosure/{t}/{f}" for t in ("Tenure", "Income")
                for f in ("summary.json", "ident.csv", "attrib.csv", "allCAPs.csv",
                          "replicated_uniques.csv")]]:
        assert (out / f).is_file(), f
    top = json.loads((out / "summary.json").read_text())
    assert {s["name"]: s["status"] for s in top["steps"]}["posterior_identification"] == "skipped"
    # every warning of every step is recorded, in the step's summary.json and at the top
    u = json.loads((out / "utility/summary.json").read_text())
    assert u["run_warnings"] == res.step("utility").warnings
    assert len(top["step_warnings"]) == sum(len(s.warnings) for s in res.steps)
    idf = pd.read_csv(out / "identification/records.csv")
    assert len(idf) == res.plan.n_records


def test_html_is_self_contained_and_links_resolve(audited, report):
    res, out = audited
    path, md_path = report
    html = path.read_text()
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in html
    links = _links(html)
    assert links and not [u for u in links if re.match(r"(?i)\s*(https?:)?//", u)]
    assert "<script" not in html and "@import" not in html and "url(" not in html
    imgs = re.findall(r'<img src="([^"]*)"', html)
    assert imgs and all(u.startswith("data:image/png;base64,") for u in imgs)
    # every non-image link is relative and names an existing file of the audit
    files = [u.split("#")[0] for u in links if not u.startswith(("data:", "#"))]
    assert files and all((out / f).exists() for f in files)
    # the first screen: verdicts against the thresholds, then the steps with their status
    assert html.index("Verdict") < html.index("Utility and risk together")
    n_exc = sum(v.exceeds for v in res.verdicts)
    assert f"{n_exc} of {len(res.verdicts)}" in html
    assert "skipped</strong> — no known column is synthesized" in html
    # the attribute section says whether the estimates were compared between MCMC chains
    assert "Between-chain check of the record estimates: not run (the &#39;plugin&#39;" in html \
        or "Between-chain check of the record estimates: not run (the 'plugin'" in html
    # the same content as Markdown, figures beside it
    md = md_path.read_text()
    assert "## Verdict" in md and "| utility |" in md
    figs = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert figs and all((out / f).is_file() for f in figs)


def _with_step(res, name: str, **changes):
    """A shallow copy of ``res`` whose step ``name`` has ``changes`` (the others shared)."""
    import copy

    out = copy.copy(res)
    out.steps = [copy.copy(s) for s in res.steps]
    for k, v in changes.items():
        setattr(out.step(name), k, v)
    return out


def test_attribute_section_states_what_was_computed(audited, report, tmp_path):
    """The CART plug-in computes no importance-sampling diagnostics: the report does not
    describe them as if they had been checked, and the k-hat figure says there is none."""
    import copy

    from matplotlib.axes import Axes

    res, out = audited
    a = res.step("attribute")
    assert a.extra["summary"]["settings"]["estimator"] == "plugin"
    # no column smoothed: the plug-in's likelihood is exact, no replicate drawn
    assert a.extra["summary"]["settings"]["plugin_replicates"] is None
    assert a.result.records["khat_max"].isna().all()
    html = report[0].read_text()
    sec = html[html.index('<section id="attribute">'):html.index('<section id="disclosure">')]
    for col in ("khat_max", "ess_q_min", "ess_omega_min", "max_omega_max", "boot_rank_q05"):
        assert f"({col})</dt>" not in sec, col
    # the glossary names each diagnostic in words, its column beside it
    assert "<dt>flags (flag_codes)</dt>" in sec
    ax = a.result.plot("khat")
    assert isinstance(ax, Axes)
    assert any("no Pareto k-hat" in t.get_text() for t in ax.texts)
    # the report draws no empty k-hat frame: it says why there is none
    assert sec.count("<img ") == 2 and "Pareto k-hat per record" not in sec
    assert "No Pareto k̂ figure: the &#39;plugin&#39; estimator reweights no" in sec
    # a stabilised estimate with heavy tails judged immaterial: the report says how many
    # records are above the k-hat threshold yet unflagged, and that their p_true may overstate
    sm = copy.deepcopy(a.extra["summary"])
    sm["settings"]["khat_threshold"] = 0.7
    sm["pareto_khat"] = {"rule": "material", "tolerance": 0.01, "records_with_high_khat": 7,
                         "records_high_khat_immaterial": 6, "records_p_true_may_overstate": 5}
    res2 = _with_step(res, "attribute", extra={**a.extra, "summary": sm})
    md = res2.to_markdown(tmp_path / "k.md").read_text()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", md)
    assert "Pareto k-hat above the threshold (0.7): 7 record(s), under the posterior" in text
    assert "6 of them are not flagged" in text
    assert "For 5 unflagged record(s) the reported p_true may overstate the risk" in text


def test_attribute_verdict_names_the_flagged_records_left_out(audited, tmp_path):
    """The verdict's share ranked first is over the stable estimates; the flagged records left
    out of it are counted on the line (a release board treats them as at risk)."""
    import copy

    res, _ = audited
    a = res.step("attribute")
    line = ATTRIBUTE_MEASURE
    sm = copy.deepcopy(a.extra["summary"])
    sm["n_flagged"], sm["n_records"] = 0, 25
    v = {x.measure: x for x in _with_step(res, "attribute",
                                          extra={**a.extra, "summary": sm}).verdicts}[line]
    assert "; records with stable estimates; " in v.detail  # then the reading against the null
    assert v.detail.endswith("the release points to the true values of some records")
    sm["n_flagged"] = 3
    sm.pop("flagged_at_worst", None)  # (a hand-made count: no bounds to read, every one counted)
    v = {x.measure: x for x in _with_step(res, "attribute",
                                          extra={**a.extra, "summary": sm}).verdicts}[line]
    assert "3 of 25 record(s) flagged and left out" in v.detail
    # within its threshold with flagged records left out: a caution, never a plain pass; the
    # line says what the share would be with every flagged record ranked first (3 of 25)
    sm["unflagged"] = {**sm["unflagged"], "prop_top": 0.0, "n_records": 22}
    r2 = _with_step(res, "attribute", extra={**a.extra, "summary": sm})
    v = {x.measure: x for x in r2.verdicts}[line]
    assert not v.exceeds and v.status == "caution" and v.flagged == 3
    assert ("Records with unreliable estimates were left out of share ranked first (3 flagged): "
            "they are unassessed, to be treated as at risk") in r2.verdict_text
    assert "counted as ranked first, the share would be 12 %, past the threshold" in v.detail
    assert v.at_worst == pytest.approx(12.0)  # the figure the design judges it by
    html = r2.to_html(tmp_path / "flagged.html").read_text()
    cell = f"<td>{line.replace(chr(39), '&#39;')}</td>"
    row = html.split(cell)[0].rsplit("<tr", 1)[1]
    assert 'class="caution"' in row and 'class="within"' not in row
    assert "⚠</span> within, with a caution" in html.split(cell)[1].split("</tr>")[0]


def test_confidential_values_hidden_by_default(release, report, tmp_path):
    html = report[0].read_text()
    assert "are not shown" in html and "<th>Age</th>" not in html
    orig, syn = release
    # the steps whose tables hold record values (identification, attribute); the utility and
    # disclosure steps show none and are the costliest to draw
    shown = br.audit(str(orig), str(syn), known=KNOWN, random_seed=2, progressbar=False,
                     settings=br.AuditSettings(sweep=None, attribute_records=[0, 1],
                                               show_confidential_values=True,
                                               skip=["utility", "disclosure"]))
    h2 = shown.to_html(tmp_path / "s.html").read_text()
    assert "<th>Age</th>" in h2 and "holds confidential data" in h2
    # without an output folder the numbers link to no file; the one page for release boards,
    # written beside the report, is the only file linked (issue 92)
    assert not [u for u in _links(h2) if not u.startswith(("data:", "#"))
                and u != "reading_the_report.html"]
    assert (tmp_path / "reading_the_report.html").is_file()


def test_plain_files_without_model_skip_attribute(release, tmp_path):
    orig, syn = release
    sd = br.read_synthetic(str(syn))
    files = []
    for l, z in enumerate(sd, start=1):
        files.append(tmp_path / f"s{l}.csv")
        z.to_csv(files[-1], index=False)
    res = br.audit(str(orig), [str(f) for f in files], known=KNOWN,
                   synthesized=["Tenure", "Income"], random_seed=1, progressbar=False,
                   settings=br.AuditSettings(categorical=CATS, sweep=(0.05, 0.1),
                                             targets=["Income"]))
    a = res.step("attribute")
    assert a.status == "skipped" and "(model=...)" in a.reason and "method: external" in a.reason
    assert res.step("disclosure").status == "ran"
    assert list(res.step("disclosure").result) == ["Income"]


def test_posterior_identification_on_a_cart_release(audited_posterior, tmp_path):
    """A known synthesized column and a CART (Bayesian bootstrap) release: the posterior step
    draws replicates from the rebuilt synthesizer, within the audit's cap."""
    from bayes_risk.auditing.measures.posterior_identification import AUDIT_REPLICATES

    res, out = audited_posterior
    post = res.step("posterior_identification")
    assert post.status == "ran", post.reason
    r = post.result
    R = r.file["n_replicates"]
    assert AUDIT_REPLICATES["min_replicates"] <= R <= AUDIT_REPLICATES["max_replicates"]
    assert r.settings["posterior_replicates"]["model"] == "CARTSynthesizer"
    d = json.loads((out / "posterior_identification/summary.json").read_text())
    assert d["uncertainty"]["n_replicates"] == R
    assert d["uncertainty"]["expected_match_risk"]["mc_se"] > 0
    assert (out / "posterior_identification/running_estimate.png").is_file()
    html = res.to_html(tmp_path / "report.html").read_text()
    assert "Posterior Monte Carlo identification risk" in html and "MCSE" in html
    # the released datasets' run is unchanged by the posterior step
    assert res.step("identification").result.settings["replicates"] == "released datasets"


def test_posterior_pairs_that_would_not_fit_fail_that_step_alone(release, monkeypatch):
    """The posterior replicates' (target, record) pairs grow with the worst-case radius the
    identification step finds; when they would not fit, that step fails with
    MEMORY_TOO_LARGE before listing them, the other steps run and the audit is incomplete
    (at 10^6 CE-like records a Dask worker was killed instead)."""
    from bayes_risk.identification import _replicate_batches

    monkeypatch.setattr(_replicate_batches, "PAIR_BYTES", 1e15)
    orig, syn = release
    res = br.audit(str(orig), str(syn), known=[*KNOWN, "Income"], random_seed=3,
                   progressbar=False, settings=br.AuditSettings(
                       sweep=None, skip=["utility", "attribute", "disclosure"]))
    post = res.step("posterior_identification")
    assert post.status == "failed"
    assert post.reason.startswith("[MEMORY_TOO_LARGE]")
    assert "pairs of posterior replicates" in post.reason
    assert "AuditSettings(skip=['posterior_identification'])" in post.reason
    assert res.step("identification").status == "ran"
    assert [s.name for s in res.failed_steps] == ["posterior_identification"]


def test_identification_verdicts_are_the_worst_case_over_the_radii(release, audited_hh):
    """Each identification verdict line is the largest figure over the radius search of every
    numeric known column (Age, released unchanged, and Income, synthesized; 0 = exact in each
    grid), the larger of two intruders' (pooled over the m datasets, and the mean over single
    datasets), each measure at its own radii, which the line names; Hornby & Hu's convention
    (0.1 on every numeric key) is reported beside it, never instead."""
    res, out = audited_hh
    ident = res.step("identification")
    sw, star, pooled = ident.extra["sweep"], ident.extra["at_r_star"], ident.extra["pooled"]
    assert list(sw.columns) == list(pooled.search.columns) == ["Age", "Income"]
    assert 0.0 in sw.settings["search"]["values"]
    assert sw.settings["search"]["mode"] == "grid" and sw.grid_points == len(res.plan.sweep) ** 2
    v = {x.measure: x for x in res.verdicts}
    em = v["expected match rate, worst case over the radii"]
    tm = v["true match rate (correct unique matches), worst case over the radii"]
    orig, syn = release
    sd = br.read_synthetic(str(syn))
    data = pd.read_csv(orig)
    n = res.plan.n_records
    rad = dict(zip(sw.columns, map(float, sw.r_star), strict=True))
    per = br.identification_risk(data, sd, known=[*KNOWN, "Income"], synthesized=["Income"],
                                 schema=sd.schema, match=MatchSpec(radius=rad, fallback="none"),
                                 aggregation="per_dataset", progressbar=False)
    assert per.file["expected_match_risk"] == pytest.approx(star.file["expected_match_risk"])
    assert per.file["expected_match_risk"] == pytest.approx(sw.risk_star)
    prad = dict(zip(pooled.search.columns, map(float, pooled.search.r_star), strict=True))
    pool = br.identification_risk(data, sd, known=[*KNOWN, "Income"], synthesized=["Income"],
                                  schema=sd.schema, match=MatchSpec(radius=prad),
                                  progressbar=False)
    assert pool.settings["aggregation"] == "pooled"
    assert pool.file["expected_match_risk"] == pytest.approx(pooled.search.risk_star)
    # the largest over the grid, of each measure separately
    assert em.value == pytest.approx(100 * max(sw.risk_summary.max(),
                                               pooled.search.risk_summary.max()) / n)
    assert tm.value == pytest.approx(100 * max(sw.tmr_summary.max(),
                                               pooled.search.tmr_summary.max()))
    assert tm.value >= 100 * max(pool.file["true_match_rate_targets"],
                                 per.file["true_match_rate_targets"]) - 1e-9
    assert tm.unit == em.unit == "%"
    assert em.threshold == pytest.approx(100 * res.plan.thresholds.expected_match_rate)
    for line in (em, tm):
        assert "pooled over the m = 2 datasets" in line.detail
        assert "Hornby & Hu's convention, Age = 0.1, Income = 0.1" in line.detail
        assert "worst case" in line.worst_case and "Age, Income" in line.worst_case
    # the radii the line names are those that gave its figure
    from bayes_risk.auditing.plan import radius_text
    assert f"({radius_text(prad)})" in em.detail and f"({radius_text(rad)})" in em.detail
    d = json.loads((out / "identification/summary.json").read_text())
    assert d["at_maximising_radius"]["radius"] == rad
    assert d["pooled"]["at_maximising_radius"]["radius"] == prad
    assert d["radius_search"]["settings"]["search"]["values"] == list(res.plan.sweep)
    top = json.loads((out / "summary.json").read_text())
    line = next(x for x in top["verdicts"] if x["measure"] == em.measure)
    assert line["worst_case"] == em.worst_case


def test_identification_verdict_never_below_the_pooled_intruder(audited_identification):
    """The verdict line is never below what an intruder who holds every dataset achieves (on
    the CART release here the pooled true match rate is above the per-dataset mean, which
    the verdict used to report alone)."""
    res = audited_identification
    ident = res.step("identification")
    pooled, per = ident.extra["pooled"].headline.file, ident.result.file
    v = {x.measure: x for x in res.verdicts}
    tm = v["true match rate (correct unique matches)"]
    assert tm.value == pytest.approx(
        100 * max(pooled["true_match_rate_targets"], per["true_match_rate_targets"]))
    assert tm.value >= 100 * pooled["true_match_rate_targets"] - 1e-9
    assert pooled["true_match_rate_targets"] > per["true_match_rate_targets"]


def test_verdict_lines_name_the_warnings_that_question_them(audited, tmp_path):
    """S_pMSE under the theory null with SEPARATION (the package's own warning: the chi-square
    null is not valid) is not shown as a plain pass: the line names the warning."""
    import dataclasses

    res, out = audited
    u = res.step("utility").result
    line = "mean S_pMSE (pMSE / null expectation)"
    clean = dataclasses.replace(u, pmse=dataclasses.replace(u.pmse, warnings=[]))
    v = {x.measure: x for x in _with_step(res, "utility", result=clean).verdicts}[line]
    assert v.warnings == ()
    sep = dataclasses.replace(u, pmse=dataclasses.replace(
        u.pmse, warnings=["EMPTY_LEVELS_DROPPED", "SEPARATION"]))
    r2 = _with_step(res, "utility", result=sep)
    v = {x.measure: x for x in r2.verdicts}[line]
    assert v.warnings == ("SEPARATION",)  # informational codes are not caveats
    assert r2.verdict_frame().set_index("measure").loc[line, "warnings"] == ["SEPARATION"]
    n = sum(bool(x.warnings) for x in r2.verdicts)
    html = r2.to_html(out / "caveat.html").read_text()
    assert f"{n} carries a warning of its measure" in html
    # within its threshold but questioned: a caution, never a plain pass (no green row)
    row = html.split("<td>mean S_pMSE (pMSE / null expectation)</td>")[0].rsplit("<tr", 1)[1]
    assert 'class="caution"' in row
    assert {x.measure: x for x in r2.verdicts}[line].status == "caution"
    assert "<strong class=\"caveat\">SEPARATION</strong>: perfect or quasi-perfect separation" \
        in html
    md = r2.to_markdown(out / "caveat.md").read_text()
    assert "⚠ within, with a caution |  | theory null; **SEPARATION**: perfect or quasi" in md


def test_verdicts_read_the_larger_regime_and_say_so(audited, audited_hh):
    """When the model's chains sit in different regimes (REGIMES_DISAGREE), the attribute line
    reads the larger of the pooled share and each regime's (RISK_BY_REGIME) and names both
    regimes' figures; the identification lines read the larger of their figure and each
    regime's mean per dataset (the datasets grouped by the regime of their draw). A regime
    figure that could not be computed is said, never dropped."""
    res, _ = audited
    att = res.step("attribute")
    base = {x.measure: x for x in res.verdicts}
    line = ATTRIBUTE_MEASURE
    pooled = base[line].value
    regimes = [{"chains": [0], "alpha": 0.56, "k_occupied": 4.7},
               {"chains": [1], "alpha": 3.6, "k_occupied": 15.4}]
    reg = {"status": "computed", "n_records": 25,
           "regimes": [{**regimes[0], "summary": {"prop_top": pooled / 100 / 2}},
                       {**regimes[1], "summary": {"prop_top": pooled / 100 + 0.1}}],
           "largest_prop_top": {"regime": 2, "prop_top": pooled / 100 + 0.1}}
    summary = {**att.extra["summary"], "regimes": reg}
    v = {x.measure: x for x in _with_step(res, "attribute",
                                          extra={**att.extra, "summary": summary}).verdicts}
    assert v[line].value == pytest.approx(pooled + 10)
    assert "2 regimes (REGIMES_DISAGREE)" in v[line].detail
    assert f"regime 2 (chain 2) {pooled + 10:.3g} %" in v[line].detail
    assert "RISK_BY_REGIME, regime 2" in v[line].detail
    low = {**reg, "largest_prop_top": {"regime": 1, "prop_top": pooled / 100 / 2}}
    v = {x.measure: x for x in _with_step(
        res, "attribute", extra={**att.extra, "summary": {**summary, "regimes": low}}).verdicts}
    assert v[line].value == pytest.approx(pooled)  # the pooled figure is the larger
    missing = {"status": "not computed", "reason": "no per-chain estimates (1 chain)",
               "regimes": regimes, "n_records": 0, "largest_prop_top": None}
    v = {x.measure: x for x in _with_step(
        res, "attribute",
        extra={**att.extra, "summary": {**summary, "regimes": missing}}).verdicts}
    assert v[line].value == pytest.approx(pooled)
    assert "could not be computed per regime (no per-chain estimates" in v[line].detail
    # identification: the datasets of regime 2 carry the larger mean
    res_hh, _ = audited_hh
    ide = res_hh.step("identification")
    before = {x.measure: x for x in res_hh.verdicts}
    m = len(ide.result.per_dataset["expected_match_risk"])
    by_ds = {"status": "computed", "regimes": regimes,
             "dataset_regime": [1] * (m - 1) + [2]}
    after = {x.measure: x for x in _with_step(
        res_hh, "identification", extra={**ide.extra, "regimes": by_ds}).verdicts}
    for name, v in after.items():
        if v.step != "identification":
            continue
        assert v.value >= before[name].value
        assert "REGIMES_DISAGREE" in v.warnings and "RISK_BY_REGIME" in v.warnings
        assert "per dataset by the regime of its draw: regime 1:" in v.detail


def test_verdicts_read_the_regime_that_holds_the_mass(audited, audited_hh):
    """When the fit settles which regime holds the posterior mass (``holds_mass``: its lower
    bound of the log evidence above the others' upper bounds, issue 72), the attribute and
    identification lines read that regime's figure, even the smaller one, and show the
    others' beside it."""
    res, _ = audited
    att = res.step("attribute")
    line = ATTRIBUTE_MEASURE
    pooled = {x.measure: x for x in res.verdicts}[line].value
    regimes = [{"chains": [0], "alpha": 3.3, "k_occupied": 29.4, "holds_mass": True,
                "mass_bounds": [1.0 - 1e-9, 1.0]},
               {"chains": [1], "alpha": 1.2, "k_occupied": 12.2, "holds_mass": False,
                "mass_bounds": [0.0, 1e-9]}]
    reg = {"status": "computed", "n_records": 25,
           "regimes": [{**regimes[0], "summary": {"prop_top": pooled / 100 / 2}},
                       {**regimes[1], "summary": {"prop_top": pooled / 100 + 0.1}}],
           "largest_prop_top": {"regime": 2, "prop_top": pooled / 100 + 0.1},
           "mass_prop_top": {"regime": 1, "prop_top": pooled / 100 / 2}}
    summary = {**att.extra["summary"], "regimes": reg}
    v = {x.measure: x for x in _with_step(res, "attribute",
                                          extra={**att.extra, "summary": summary}).verdicts}
    assert v[line].value == pytest.approx(pooled / 2)  # regime 1's, below the others'
    assert ("regime 1 holds the mass (at least 1 − 1e-9 of the mass of the regions the chains "
            "visited") in v[line].detail
    assert f"regime 2 (chain 2) {pooled + 10:.3g} %" in v[line].detail  # beside it
    res_hh, _ = audited_hh
    ide = res_hh.step("identification")
    m = len(ide.result.per_dataset["expected_match_risk"])
    by_ds = {"status": "computed", "regimes": regimes,
             "dataset_regime": [1] * (m - 1) + [2]}
    after = {x.measure: x for x in _with_step(
        res_hh, "identification", extra={**ide.extra, "regimes": by_ds}).verdicts}
    hits = [v for v in after.values() if v.step == "identification"]
    assert hits
    for v in hits:
        assert "regime 1 holds the mass" in v.detail and "regime 2:" in v.detail
        assert "RISK_BY_REGIME" in v.warnings
        # the value read is regime 1's mean, as the line states it
        said = re.search(r"regime 1: ([0-9.e+-]+) % \(mean over its", v.detail).group(1)
        assert f"{v.value:.3g}" == said


def test_marginals_leave_missing_value_codes_out_of_the_numbers():
    """A declared missing-value code (synthpop's cont.na, e.g. SD2011's nociga = -8 for
    non-smokers) is not a number: it is not in the histogram's bins of compare(); it is a group
    of its own (miss.-8), and so are the empty cells (miss.NA), of all records' percentages."""
    from bayes_risk.utility import compare_marginals

    rng = np.random.default_rng(0)
    x = rng.integers(1, 40, 400).astype(float)
    x[:300] = -8.0  # three quarters "not applicable"
    x[300:310] = np.nan
    orig = pd.DataFrame({"x": x, "g": rng.choice(["a", "b"], 400)})
    syn = [orig.sample(frac=1.0, random_state=k).reset_index(drop=True) for k in range(2)]
    m, _ = compare_marginals(orig, syn, schema=br.infer_schema(orig, missing_codes={"x": [-8]}))
    mx = m[m["variable"] == "x"].set_index("value")
    bins = mx.drop(index=["miss.-8", "miss.NA"])
    assert (bins.index.astype(float) >= 0).all()
    assert mx.loc["miss.-8", "original"] == 75.0 and mx.loc["miss.NA", "original"] == 2.5
    assert mx["original"].sum() == pytest.approx(100.0)
    # without the declared code -8 is a number: the first bin starts below it
    m2, _ = compare_marginals(orig, syn, schema=br.infer_schema(orig))
    assert float(m2.loc[m2["variable"] == "x", "value"].iloc[0]) <= -8


def _bars_table():
    age = np.repeat(["1", "2", "3", "4"], [10, 40, 30, 20]).astype(object)
    age[:3] = None
    place = np.resize(["URBAN 100,000-200,000", "URBAN 500,000 AND OVER", "RURAL AREAS",
                       "URBAN BELOW 20,000 INHABITANTS AND MORE WORDS"], 100)
    orig = pd.DataFrame({"age": age, "place": place, "sex": np.resize(["F", "M"], 100)})
    return orig, br.infer_schema(orig, categorical=["age", "place", "sex"])


def test_marginal_bars_in_level_order():
    """compare() bars follow the schema's level order (an ordinal or integer-coded factor drawn
    by frequency reads as another distribution), missing values last."""
    from bayes_risk.utility import compare_marginals

    orig, schema = _bars_table()
    m, _ = compare_marginals(orig, [orig], schema=schema)
    assert m.loc[m["variable"] == "age", "value"].tolist() == ["1", "2", "3", "4", "NA"]


def test_verdict_says_which_steps_have_no_line(audited, report):
    """A step that failed (SD2011: attribute risk refuses records with missing values) or was
    skipped has no verdict line; the verdict's first sentence says so rather than counting
    only the lines that exist."""
    res, out = audited
    assert "(failed)" not in report[0].read_text()
    r2 = _with_step(res, "attribute", status="failed", result=None,
                    reason="MemoryError: out of memory")
    assert "attribute" not in {v.step for v in r2.verdicts}
    html = r2.to_html(out / "failed.html").read_text()
    assert "Not assessed (no verdict line): attribute risk (failed)" in html
    md = r2.to_markdown(out / "failed.md").read_text()
    assert "Not assessed (no verdict line): attribute risk (failed)" in md
    # posterior identification has no verdict line of its own: its skipping is not listed
    assert "posterior monte carlo" not in html.split("Not assessed")[1].split("</p>")[0]


def test_settings_say_where_the_seed_and_sweep_came_from(release, audited):
    """The settings table states whether the seed was given or drawn, the radius search's
    grid (0, exact, added) and columns, and that the search did not run when no known column
    is numeric (it listed the default grid)."""
    res, _ = audited
    s = res.plan.settings_frame().set_index("setting")
    assert s.loc["random seed", "source"] == "given"
    assert s.loc["radius search", "value"] == \
        "0, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1 on each of Age"
    assert s.loc["radius search", "source"] == "default"
    orig, syn = release
    r2 = br.audit(str(orig), str(syn), known=["Urban", "Marital"], progressbar=False,
                  settings=br.AuditSettings(sweep=(0.05, 0.1), attribute_records=[0],
                                            skip=["utility", "disclosure"]))
    s2 = r2.plan.settings_frame().set_index("setting")
    assert s2.loc["random seed", "source"] == "drawn"
    assert s2.loc["radius search", "value"] == "not run"
    assert r2.step("identification").extra["sweep"] is None


def test_utility_risk_figure_at_the_verdict_radius(audited_hh, report_hh):
    """The utility-and-risk figure plots each dataset's expected match risk at the maximising
    radius, the radius of the verdict line, and says which (it plotted the step's radius, 71
    against the verdict's 463 on the CE data, unlabelled)."""
    from bayes_risk.auditing.measures.utility import utility_risk_points

    res, _ = audited_hh
    sw = res.step("identification").extra["sweep"]
    pts = utility_risk_points(res)
    from bayes_risk.auditing.plan import radius_text

    rad = dict(zip(sw.columns, map(float, sw.r_star), strict=True))
    col = f"expected match rate (% of targets), {radius_text(rad)}"
    assert col in pts.columns
    # in the verdict line's unit: per cent of the targets
    np.testing.assert_allclose(pts[col], sw.risk[sw.argmax[0]] / res.plan.n_records * 100)
    v = {x.measure: x for x in res.verdicts}["expected match rate, worst case over the radii"]
    # one point per dataset: their mean is the per-dataset figure the verdict line names; the
    # line reads the larger of it and the pooled figure
    per = pts[col].mean()
    assert pts.attrs["thresholds"][col] == pytest.approx(v.threshold)
    assert pts.attrs["thresholds"]["S_pMSE"] == res.plan.thresholds.s_pmse
    assert f"mean per dataset {per:.3g} % ({radius_text(rad)})" in v.detail
    assert v.value >= per - 1e-9
    html = report_hh[0].read_text()
    assert "Hu 2021, Figs 8 and 9" in html and "Hornby" in html
    assert "seed 002" not in html


def test_utility_risk_figure_names_the_radius_of_the_verdict_among_ties(audited_hh):
    """Where several grid points give the largest figure (1 % of an integer age matches as
    exactly as 0 %), the figure labels the radii the verdict line names, the smallest among the
    ties, whatever order the search lists its maximisers in (it took the first listed: "Age =
    0.01" beside a verdict note "Age exact")."""
    import dataclasses

    from bayes_risk.auditing.measures._identification_lines import worst_case_point
    from bayes_risk.auditing.measures.utility import utility_risk_points
    from bayes_risk.auditing.plan import radius_text

    res, _ = audited_hh
    ident = res.step("identification")
    sw = ident.extra["sweep"]
    j0 = worst_case_point(sw, sw.argmax)
    # a tie at the point of the largest radii, listed first
    last = max(range(len(sw.radii)), key=lambda j: tuple(np.atleast_1d(sw.radii[j])))
    assert tuple(np.atleast_1d(sw.radii[last])) > tuple(np.atleast_1d(sw.radii[j0]))
    risk = np.array(sw.risk, dtype=float)
    risk[last] = risk[j0]
    tied = dataclasses.replace(sw, risk=risk, argmax=(last, *sw.argmax))
    r2 = _with_step(res, "identification", extra={**ident.extra, "sweep": tied})
    cols = [c for c in utility_risk_points(r2).columns if c.startswith("expected match rate")]
    assert cols == [f"expected match rate (% of targets), {radius_text(sw.radii_at(j0))}"]


def test_html_escapes_the_data(audited):
    """Levels, names and messages from the user's data are text: ACS's "Never married or
    age<15", a level "<NA>" (pandas' spelling of a missing value) or "<b>" must not become
    markup (the HTML template was not auto-escaped: its name ends in .j2)."""
    from html.parser import HTMLParser

    res, out = audited
    u = res.step("utility")
    tw = u.extra["twoway"].copy()
    tw.loc[tw.index[:3], "level_1"] = ["<NA>", "<b>bold", "Never married or age<15"]
    r2 = _with_step(res, "utility", extra={**u.extra, "twoway": tw})
    html = r2.to_html(out / "escaped.html").read_text()
    assert "&lt;NA&gt;" in html and "&lt;b&gt;bold" in html and "age&lt;15" in html

    class Tags(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags = set()

        def handle_starttag(self, tag, attrs):
            self.tags.add(tag)

    p = Tags()
    p.feed(html)
    assert not p.tags & {"na", "b"}
    # the Markdown report escapes "<" (CommonMark renders "\\<" as "<"), so that a renderer
    # neither drops "<NA>" as an unknown tag nor turns "<b>bold" into bold
    md = r2.to_markdown(out / "escaped.md").read_text()
    assert "| \\<NA\\> |" in md and "\\<b\\>bold" in md and "age\\<15" in md
    assert "| <NA> |" not in md and "\\\\<" not in md  # escaped once, also in table cells


def test_thresholds_set_the_verdicts(audited):
    res, _ = audited
    v0 = {v.measure: v for v in res.verdicts}
    s = v0["mean S_pMSE (pMSE / null expectation)"]
    assert s.threshold == 10.0
    assert Thresholds.parse(["s_pmse=0"]).s_pmse == 0.0
    res.plan.thresholds = Thresholds.parse({"s_pmse": 0.0})
    try:
        assert {v.measure: v for v in res.verdicts}[s.measure].exceeds
    finally:
        res.plan.thresholds = Thresholds()
    with pytest.raises(ValidationError, match=r"unknown argument\(s\) for thresholds: \['foo'\]"):
        Thresholds.parse(["foo=1"])
    with pytest.raises(ValidationError, match="repU"):
        Thresholds.parse(["repU=-1"])


def test_bad_input_names_the_argument(release, tmp_path):
    orig, syn = release
    with pytest.raises(SchemaError, match="known: column 'Agee'"):
        br.audit(str(orig), str(syn), known=["Agee"], progressbar=False)
    with pytest.raises(ValidationError, match="model"):
        br.audit(str(orig), str(syn), known=KNOWN, model=str(tmp_path), progressbar=False)
    with pytest.raises(ValidationError, match="sweep"):
        br.audit(str(orig), str(syn), known=KNOWN, progressbar=False,
                 settings=br.AuditSettings(sweep=[0.1, -1]))
    # refused before any step runs (the identification step failed and the audit went on)
    for radius in (-1.0, {"Age": float("nan")}):
        with pytest.raises(ValidationError, match=r"radius(\['Age'\])? must be a finite number"):
            br.audit(str(orig), str(syn), known=KNOWN, progressbar=False,
                     settings=br.AuditSettings(match=br.MatchSpec(radius=radius)))
    with pytest.raises(ValidationError, match="attribute_records"):
        br.audit(str(orig), str(syn), known=KNOWN, progressbar=False,
                 settings=br.AuditSettings(attribute_records=[10**6]))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ValidationError, match="out"):
        br.audit(str(orig), str(syn), known=KNOWN, out=tmp_path / "full", progressbar=False)


def test_partial_rules_for_datasets_of_another_size_fail_before_any_step(tmp_path):
    # plain tables of 2n records with a column declared synthesized: the utility step's
    # combining rules would be Reiter's partial ones, which cannot apply (NOT_PARTIAL_SYNTHESIS);
    # refused when the audit is planned, before the steps run and before --out is made
    d = br.make_ce_like(120, random_seed=3)
    rng = np.random.default_rng(1)
    big = [d.sample(240, replace=True, random_state=s).reset_index(drop=True)
           .assign(Income=lambda z: z["Income"] * np.exp(rng.normal(0, 0.1, len(z))))
           for s in (1, 2)]
    out = tmp_path / "a"
    with pytest.raises(ValidationError, match="combining_rules=") as e:
        br.audit(d, big, known=KNOWN, synthesized=["Income"], out=out, progressbar=False,
                 settings=br.AuditSettings(categorical=CATS))
    assert e.value.code == "NOT_PARTIAL_SYNTHESIS"
    assert not out.exists()


def test_original_without_a_column_of_the_release(release, tmp_path, capsys):
    """An ORIGINAL lacking a (synthesized) column of the release is refused before any step runs
    (it ran utility and identification, then ended in a KeyError traceback)."""
    orig, syn = release
    short = tmp_path / "short.csv"
    pd.read_csv(orig).drop(columns="Income").to_csv(short, index=False)
    with pytest.raises(SchemaError, match=r"the original lacks the release's columns \['Income'\]"):
        br.audit(str(short), str(syn), known=KNOWN, progressbar=False)
    capsys.readouterr()
    rc = main(["audit", str(short), str(syn), "--known", *KNOWN, "--out", str(tmp_path / "a")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "[audit] step" not in err
    assert err.strip().splitlines()[-1].startswith("bayes-risk audit: error [MISSING_COLUMN]: ")
    assert not (tmp_path / "a").exists()


@pytest.mark.slow
def test_cli_end_to_end(release, tmp_path, cli):
    orig, syn = release
    r = cli(["audit", str(orig), str(syn), "--known", *KNOWN, "--records", "0-19",
              "--radius-sweep", "0.05,0.1", "--threshold", "repU=50", "--out", "aud"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "aud"
    assert (out / "report.html").is_file() and (out / "report.md").is_file()
    assert "[audit] step 1/9: utility" in r.stderr  # progress shown
    assert "repU (%)" in r.stdout and "report:" in r.stdout
    # the headline: each line with its spread; a line past its threshold with its cause, short
    assert "(min–max over 2)" in r.stdout
    assert "    cause: " in r.stdout and "    remedies: " in r.stdout
    top = json.loads((out / "summary.json").read_text())
    assert top["command"] == "audit" and top["thresholds"]["repU"] == 50.0
    assert top["inputs"]["original"] == str(orig)
    # one file to send: the folder zipped beside the report, which names it; its summary.json
    # is the complete one (inputs merged), and every link of the report resolves inside it
    import zipfile

    assert f"send {Path('aud') / 'report.zip'}" in r.stdout
    html = (out / "report.html").read_text()
    assert 'To send this report, send <a href="report.zip">report.zip</a>' in html
    assert "[report.zip](report.zip)" in (out / "report.md").read_text()
    with zipfile.ZipFile(out / "report.zip") as z:
        z.extractall(tmp_path / "unzipped")
        assert json.loads(z.read("report/summary.json"))["inputs"]["original"] == str(orig)
    inner = tmp_path / "unzipped" / "report"
    files = [u.split("#")[0] for u in _links(html) if not u.startswith(("data:", "#"))
             and u != "report.zip"]
    assert files and all((inner / f).exists() for f in files)
    # the first screen links the one-page guide for release boards, sent with the report
    # (issue 92)
    assert '<a href="reading_the_report.html">How to read this report</a>' in html
    assert html.index("reading_the_report.html") < html.index('id="verdict"')
    guide = (inner / "reading_the_report.html").read_text()
    assert "<h1>Reading the audit report: one page for a release board</h1>" in guide
    assert '<a href="report.html">Back to the report</a>' in guide
    # --quiet silences progress; bad input: one line naming the argument, exit 2, nothing written
    q = cli(["audit", str(orig), str(syn), "--known", *KNOWN, "--threshold", "bogus=1",
              "--quiet", "--out", "bad"], tmp_path)
    assert q.returncode == 2 and "bogus" in q.stderr and "[audit]" not in q.stderr
    assert not (tmp_path / "bad").exists()
    q = cli(["audit", str(orig), str(syn), "--known", "Nope", "--quiet", "--out", "bad"],
             tmp_path)
    assert q.returncode == 2 and "known: column 'Nope'" in q.stderr


# ---- a real browser --------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(url: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0", *extra, url],
        capture_output=True, text=True, timeout=180,
    )


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (`make browser` installs it)")
@pytest.mark.slow
def test_report_in_a_real_browser(report, tmp_path):
    from PIL import Image

    path = report[0]
    url = path.resolve().as_uri()
    r = _chromium(url, "--dump-dom")
    assert "Disclosure audit of a synthetic release" in r.stdout
    # console messages (errors, and any blocked fetch: the CSP forbids every one) are logged
    # as CONSOLE lines; the control page shows that such a line would be seen
    assert ":CONSOLE" not in r.stderr, r.stderr
    bad = tmp_path / "bad.html"
    bad.write_text(f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
                   '<img src="http://example.invalid/x.png"><p>x</p>')
    assert ":CONSOLE" in _chromium(bad.resolve().as_uri(), "--dump-dom").stderr
    shot = tmp_path / "report.png"
    _chromium(url, f"--screenshot={shot}", "--window-size=1280,2400")
    img = np.asarray(Image.open(shot).convert("RGB"))
    assert img.shape[0] >= 2000 and len(np.unique(img.reshape(-1, 3), axis=0)) > 50
    # the first screen of a 1280 × 800 window: the verdict sentence (the banner, drawn with a
    # border of its status's colour, #a51d2d for "do not release") ends within it, and the
    # verdict table's header row (#eef1f6) starts within it too
    first = tmp_path / "first.png"
    _chromium(url, f"--screenshot={first}", "--window-size=1280,800")
    top = np.asarray(Image.open(first).convert("RGB")).astype(int)
    assert top.shape[:2] == (800, 1280)
    # the banner's left border (the table's "exceeds" cells use the colour too, further right)
    border = (np.abs(top[:, :200] - (0xa5, 0x1d, 0x2d)).sum(axis=-1) <= 6).sum(axis=1) >= 4
    rows = np.flatnonzero(border)
    assert rows.size > 40, "no banner of the status 'do not release' on the first screen"
    assert rows.max() < 760, f"the verdict banner runs to {rows.max()} px"
    head = np.flatnonzero((np.abs(top - (0xee, 0xf1, 0xf6)).sum(axis=-1) <= 3).sum(axis=1) > 600)
    assert head.size and rows.max() < head.min() < 800
    # the DOM: the banner holds the headline, right under the title
    dom = r.stdout
    banner = dom.split('<div class="banner')[1].split("</div>")[0]
    assert "Do not release as it stands" in banner
    assert dom.index("<h1>") < dom.index('<div class="banner') \
        < dom.index('<table class="verdicts">')
    keep = os.environ.get("BAYES_RISK_SCREENSHOTS")
    if keep:  # for looking at the page: BAYES_RISK_SCREENSHOTS=DIR
        shutil.copy(shot, Path(keep) / "audit_report.png")
        shutil.copy(first, Path(keep) / "audit_report_first_screen.png")


# ---- issue 30: bad input fails the audit; a failed step makes it incomplete ------------------


def test_every_input_checked_before_the_first_step(release, tmp_path, capsys):
    """Duplicated known columns, a target the intruder knows, repeated targets or records, an
    unknown step to skip and a sweep that cannot run are refused before any step runs (the
    audit printed a verdict with the identification and disclosure steps "failed")."""
    orig, syn = release
    cases = [  # (known, fields of the settings, error)
        (["Age", "Age", "Urban"], {}, r"known lists column\(s\) \['Age'\] more than once"),
        (KNOWN, dict(targets=["Income", "Age"]), r"known and targets both name \['Age'\]"),
        ([*KNOWN, "Income"], dict(targets=["Income"]),
         r"known and targets both name \['Income'\]"),
        (KNOWN, dict(targets=["Income", "Income"]), r"targets lists .*'Income'.* more than"),
        (KNOWN, dict(attribute_records=[3, 3]), "attribute_records contains duplicate"),
        (KNOWN, dict(skip=["utilty"]), "skip: unknown step 'utilty'"),
        ([*KNOWN, "Income"], dict(match=br.MatchSpec(radius_type="quantile_sd")),
         "sweep.*radius_type 'percentage' or 'absolute'"),
        (KNOWN, dict(sweep=[0.1, 0.1]), "sweep must be .*, each listed once"),
    ]
    for known, kw, msg in cases:
        with pytest.raises(ValidationError, match=msg):
            br.audit(str(orig), str(syn), known=known, out=tmp_path / "a", progressbar=True,
                     settings=br.AuditSettings(**kw))
        assert "[audit] step" not in capsys.readouterr().err, kw
        assert not (tmp_path / "a").exists()
    # the original of another row order: refused before any step (three steps "failed" and
    # the exit status was 0)
    shuffled = tmp_path / "shuffled.csv"
    pd.read_csv(orig).sample(frac=1, random_state=1).to_csv(shuffled, index=False)
    with pytest.raises(SchemaError) as e:
        br.audit(str(shuffled), str(syn), known=KNOWN, out=tmp_path / "a", progressbar=True)
    assert e.value.code == "ORIGINAL_DIFFERS"
    assert "[audit] step" not in capsys.readouterr().err
    assert not (tmp_path / "a").exists()
    # let through as asked: the synthesizer rebuilt from the manifest does not reproduce the
    # release, which the attribute step needs; refused before any step, naming how to skip it
    wrong = tmp_path / "wrong.csv"
    d = pd.read_csv(orig)
    d["Income"] = d["Income"].sample(frac=1, random_state=2).to_numpy()
    d.to_csv(wrong, index=False)
    lenient = br.read_synthetic(str(syn)).allow_different_original()
    with pytest.raises(ValidationError,
                       match=r"give settings=AuditSettings\(skip=\['attribute'\]\)"):
        br.audit(str(wrong), lenient, known=KNOWN, out=tmp_path / "a", progressbar=True)
    assert "[audit] step" not in capsys.readouterr().err
    # the command line: exit 2, one error line naming the culprit, nothing written
    for args, culprit in ((["--known", "Age", "Age", "Urban"], "['Age']"),
                          (["--known", *KNOWN, "--target", "Age"], "['Age']")):
        rc = main(["audit", str(orig), str(syn), *args, "--quiet", "--out",
                   str(tmp_path / "c")])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and culprit in err[0], err
        assert err[0].startswith("bayes-risk audit: error")
        assert not (tmp_path / "c").exists()


def _boom(exc):
    def step(ctx):
        raise exc

    return step


def test_a_step_failing_on_the_input_fails_the_audit(release, tmp_path, monkeypatch, capsys):
    """A step that raises ValidationError on the input (a case the checks before the first step
    do not cover) fails the audit: the error names the step and how to skip it, nothing is
    written; with skip=[step] the audit runs without it and says it was skipped as asked."""
    from bayes_risk.auditing.measures import disclosure

    orig, syn = release
    # the registry reads each measure's record, which names the step itself
    monkeypatch.setattr(disclosure, "MEASURE", dataclasses.replace(
        disclosure.MEASURE, step=_boom(ValidationError("keys contain duplicated column(s) "
                                                       "['Age']."))))
    kw = dict(known=KNOWN, progressbar=False)
    settings = br.AuditSettings(sweep=None, attribute_records=[0])
    with pytest.raises(ValidationError, match=r"Empirical disclosure measures \(synthpop\) step:"
                       r" keys contain .*give settings=AuditSettings\(skip=\['disclosure'\]\)"):
        br.audit(str(orig), str(syn), out=tmp_path / "a", settings=settings, **kw)
    assert not (tmp_path / "a").exists()
    rc = main(["audit", str(orig), str(syn), "--known", *KNOWN, "--radius-sweep", "none",
               "--records", "0", "--quiet", "--out", str(tmp_path / "c")])
    assert rc == 2 and not (tmp_path / "c").exists()
    assert "--skip disclosure" in capsys.readouterr().err
    res = br.audit(str(orig), str(syn), out=tmp_path / "b",
                   settings=settings.replace(skip=["disclosure"]), **kw)
    d = res.step("disclosure")
    assert d.status == "skipped" and "skipped as asked" in d.reason and res.complete
    assert "disclosure" not in {v.step for v in res.verdicts}
    assert "empirical disclosure measures (synthpop) (skipped)" in res.verdict_text


def test_a_step_failing_otherwise_leaves_the_audit_incomplete(release, tmp_path, monkeypatch,
                                                              capsys):
    """A step that fails for another reason (out of memory, an error of the measure) does not
    stop the others, but the audit is incomplete: the verdict's first sentence says so and
    names the step, summary.json records it, and the command exits 1 with the report written
    (it exited 0 with "1 of 4 exceed")."""
    from bayes_risk.auditing.measures import identification

    orig, syn = release
    monkeypatch.setattr(identification, "MEASURE", dataclasses.replace(
        identification.MEASURE, step=_boom(MemoryError("no memory left"))))
    res = br.audit(str(orig), str(syn), known=KNOWN, progressbar=False, out=tmp_path / "a",
                   settings=br.AuditSettings(sweep=None, attribute_records=[0]))
    assert not res.complete and [s.name for s in res.failed_steps] == ["identification"]
    assert res.verdict_text.startswith("The audit is incomplete: 1 step failed: "
                                       "identification risk (MemoryError: no memory left)")
    assert res.verdict_sentences()[0].startswith("The audit is incomplete")
    assert "INCOMPLETE" in repr(res)
    assert res.step("utility").status == res.step("disclosure").status == "ran"
    top = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert top["complete"] is False and top["failed_steps"] == ["identification"]
    assert top["verdict_text"].startswith("The audit is incomplete")
    assert "MemoryError" in {s["name"]: s for s in top["steps"]}["identification"]["traceback"]
    html = res.to_html(tmp_path / "r.html").read_text()
    banner = html.split('<div class="banner')[1].split("</div>")[0]
    assert '<p class="more incomplete"><strong>The audit is incomplete' in banner
    md = res.to_markdown(tmp_path / "r.md").read_text()
    assert "> **The audit is incomplete" in md.split("## Verdict")[0]
    capsys.readouterr()
    rc = main(["audit", str(orig), str(syn), "--known", *KNOWN, "--radius-sweep", "none",
               "--records", "0", "--out", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert rc == 1 and (tmp_path / "c" / "report.html").is_file()
    assert out.splitlines()[0].startswith("audit of 240 records, m = 2: The audit is incomplete")


# ---- issue 30: release-independent figures are a baseline, not a verdict ---------------------


def test_release_independent_figures_are_a_baseline(audited, report):
    """The intruder knows unsynthesized columns only: the identification figures are the same
    in every dataset and repU equals UiO; they are listed as a baseline of the original
    (RELEASE_INDEPENDENT), never as verdict lines on the release (they added "exceeds" lines)."""
    res, out = audited
    ident = res.step("identification").result
    per = ident.to_dict()["summary"]["per_dataset"]["expected_match_risk"]
    assert len(set(per)) == 1  # it cannot depend on the release
    assert {v.step for v in res.verdicts} == {"utility", "attribute", "disclosure",
                                              "relative_difference", "closest_match"}
    assert not [v for v in res.verdicts if v.measure.startswith("repU")]
    base = {b.measure: b for b in res.baselines}
    assert base["expected match rate, worst case over the radii"].step == "identification"
    # in per cent like the verdict lines, the threshold too
    em = base["expected match rate, worst case over the radii"]
    assert em.unit == "%" and em.threshold == pytest.approx(
        100 * res.plan.thresholds.expected_match_rate)
    for r in res.step("disclosure").result.values():
        b = base[f"repU (%), keys {', '.join(r.keys)}"]
        np.testing.assert_allclose(r.ident["repU"], r.ident["UiO"])
        assert b.value == pytest.approx(r.means()["repU"]) and b.code == "RELEASE_INDEPENDENT"
    assert "RELEASE_INDEPENDENT" in {w["code"] for w in res.warnings}
    assert "identification risk of the release" in res.verdict_text
    top = json.loads((out / "summary.json").read_text())
    assert {b["measure"] for b in top["baseline"]} == set(base)
    assert "RELEASE_INDEPENDENT" in top["warnings"]
    html = report[0].read_text()
    verdict_table = html.split('<table class="verdicts">')[1].split("</table>")[0]
    assert "repU" not in verdict_table and "match rate" not in verdict_table
    assert "Baseline of the original (does not depend on the release)" in html
    md = report[1].read_text()
    assert "### Baseline of the original" in md and "`RELEASE_INDEPENDENT`" in md


def test_sdcmicro_risk_of_the_original_is_a_baseline(release, audited, report):
    """sdcMicro's risk of the original on the disclosure keys (issue 50): global risk,
    3-anonymity, SUDA2 and l-diversity of each target are baselines (no threshold), equal to
    original_risk on the original, with their files; never verdict lines."""
    res, out = audited
    d = res.step("disclosure")
    (keys, r), = d.extra["original_risk"].items()
    assert list(keys) == KNOWN
    orig = pd.read_csv(release[0])
    ref = br.original_risk(orig, keys=KNOWN, sensitive=list(res.plan.disclosure_targets))
    pd.testing.assert_frame_equal(r.records, ref.records)
    base = {b.measure: b for b in res.baselines}
    g = base[f"global re-identification risk (%), keys {', '.join(KNOWN)}"]
    assert g.value == pytest.approx(ref.global_risk["global_risk_pct"])
    assert g.threshold is None and g.code == "RELEASE_INDEPENDENT" and g.unit == "%"
    assert "1/f_k" in g.why and g.source == "disclosure/original_risk/summary.json"
    k3 = base[f"records violating 3-anonymity (%), keys {', '.join(KNOWN)}"]
    assert k3.value == pytest.approx(ref.k_anonymity["3"]["pct_violating"])
    for t in res.plan.disclosure_targets:
        b = base[f"records whose key cell has one value of {t} (%), keys {', '.join(KNOWN)}"]
        assert b.value == pytest.approx(ref.l_diversity[t]["pct_records_l1"])
    assert not [v for v in res.verdicts if "re-identification" in v.measure]
    folder = out / "disclosure" / "original_risk"
    assert sorted(p.name for p in folder.iterdir()) == ["records.csv", "summary.json"]
    assert json.loads((folder / "summary.json").read_text())["keys"] == KNOWN
    html = report[0].read_text()
    assert "sdcMicro&#39;s risk of the original on the keys" in html
    fig = html.split("by sdcMicro&#39;s individual re-identification risk")[0].rsplit("<img", 1)
    assert len(fig) == 2 and 'src="data:image/png;base64,' in fig[1]  # its risk histogram
    base_table = html.split('<table class="baseline">')[1].split("</table>")[0]
    assert "global re-identification risk" in base_table and ">—<" in base_table
    assert ("disclosure", "survey weights", "none") in {
        (x.step, x.name, x.value) for x in res.plan.settings}


def test_audit_survey_weights(release):
    """weights=: a column of the original the release need not carry; the baseline's risk is
    then the Benedetti-Franconi risk with them. Bad weights are refused before any step."""
    orig = pd.read_csv(release[0])
    orig["w"] = 40.0 + 10 * (np.arange(len(orig)) % 4)
    skip = ["utility", "identification", "posterior_identification", "attribute", "membership"]
    res = br.audit(orig, str(release[1]), known=KNOWN, progressbar=False,
                   settings=br.AuditSettings(weights="w", skip=skip))
    (r,) = res.step("disclosure").extra["original_risk"].values()
    ref = br.original_risk(orig, keys=KNOWN, weights="w", suda=False)
    np.testing.assert_allclose(r.records["risk"], ref.records["risk"])
    assert r.settings["weights"] == "w"
    g = next(b for b in res.baselines if b.measure.startswith("global re-identification"))
    assert "Benedetti" in g.why and "survey weights w" in g.why
    with pytest.raises(SchemaError, match="weights column 'x'"):
        br.audit(orig, str(release[1]), known=KNOWN, progressbar=False,
                 settings=br.AuditSettings(weights="x", skip=skip))
    with pytest.raises(ValidationError,
                       match=r"known and weights both name \['Age'\]; survey weights are not"):
        br.audit(orig.drop(columns="w"), str(release[1]), known=KNOWN, progressbar=False,
                 settings=br.AuditSettings(weights="Age", skip=skip))


def test_search_covers_every_numeric_known_column(release, audited_hh):
    """The radius search covers every numeric known column, synthesized (Income) or released
    unchanged (Age), with 0 (exact) in every grid: the intruder who knows Age exactly matches
    it exactly (the audit matched it within ±10 % and understated the README's own intruder 4
    to 6 times). Without a synthesized column it still searches Age (a baseline of the
    original); with sweep=None the verdict reads the radius given and says it is not the
    worst case (RADIUS_NOT_SEARCHED)."""
    res, _ = audited_hh
    sw = res.step("identification").extra["sweep"]
    assert list(sw.columns) == ["Age", "Income"] and res.plan.search_columns == ["Age", "Income"]
    # Age is released unchanged: matching it exactly is the worst case
    assert dict(zip(sw.columns, sw.r_star, strict=True))["Age"] == 0.0
    orig, syn = release
    r2 = br.audit(str(orig), str(syn), known=KNOWN, progressbar=False,
                  settings=br.AuditSettings(sweep=(0.05, 0.1), skip=["attribute", "disclosure"]))
    assert list(r2.step("identification").extra["sweep"].columns) == ["Age"]
    r3 = br.audit(str(orig), str(syn), known=[*KNOWN, "Income"], progressbar=False,
                  settings=br.AuditSettings(sweep=None, skip=["attribute", "disclosure",
                                                              "posterior_identification"]))
    i3 = r3.step("identification")
    assert i3.extra["sweep"] is None and "RADIUS_NOT_SEARCHED" in i3.extra["note"]
    lines = [v for v in r3.verdicts if v.step == "identification"]
    assert lines and all("RADIUS_NOT_SEARCHED" in v.warnings and v.status != "within"
                         for v in lines)
    assert all("not the worst case" in v.worst_case for v in lines)


def test_posterior_step_comparable_with_the_identification_step(audited_posterior):
    """The posterior replicates are matched as the identification step's pooled intruder is at
    its worst case over the radii (its radii and its fallback to the unsynthesized columns;
    with "none" it fell below the docs' own command for the same intruder); the report puts
    that pooled figure beside the replicates' and labels the pooled figure as growing with
    R."""
    res, out = audited_posterior
    post, ident = res.step("posterior_identification"), res.step("identification")
    pooled = ident.extra["pooled"]
    assert post.result.settings["fallback"] == pooled.headline.settings["fallback"] == \
        "unsynthesized"
    assert post.result.settings["match_rule"]["radius"] == pooled.radius_star
    R = post.result.file["n_replicates"]
    md = res.to_markdown(out.parent / "r.md").read_text()  # beside the audit's folder "a"
    sec = md.split("## Posterior Monte Carlo identification risk")[1].split("\n## ")[0]
    assert ("| identification step: pooled over the m = 2 datasets released | replicates "
            "pooled 2 at a time") in sec
    assert f"one at a time (mean over R = {R})" in sec
    assert f"pooled over all R = {R} (grows with R)" in sec
    assert "The figure grows with R" in sec
    # the table in per cent of the targets, as the verdict (issue 66: rows of targets and %)
    row = [ln for ln in sec.splitlines() if ln.startswith("| expected match rate (% of "
                                                          "targets)")][0]
    from bayes_risk.results import format_number

    f = pooled.headline.file
    rate = format_number(100 * f["expected_match_risk"] / f["n_targets"], 3, plain=True)
    assert f"| [{rate} %](a/identification/summary.json) |" in row, row


def test_report_says_which_combining_rules_and_why(audited, report):
    # the CART release records its generation scheme (partial: Tenure and Income synthesized)
    _, out = audited
    st = json.loads((out / "utility" / "summary.json").read_text())["settings"]
    assert st["combining_rules"] == "partial" and st["combining_rules_source"] == "manifest"
    md = report[1].read_text()
    assert ("Combining rules: partial (Reiter (2003)): the release's manifest records "
            "generation = 'partial'.") in md.replace("&#39;", "'")


def test_combining_rules_override_and_bad_value(release, tmp_path):
    orig, syn = release
    with pytest.raises(ValidationError, match="combining_rules must be one of") as e:
        br.audit(str(orig), str(syn), known=KNOWN, progressbar=False,
                 settings=br.AuditSettings(combining_rules="fully"))
    assert e.value.code == "UNKNOWN_COMBINING_RULES"
    res = br.audit(str(orig), str(syn), known=KNOWN, random_seed=1, progressbar=False,
                   settings=br.AuditSettings(sweep=None, combining_rules="full-same-n",
                                             skip=["identification", "posterior_identification",
                                                   "attribute", "disclosure"]))
    st = res.step("utility").result.settings
    assert st["combining_rules"] == "full-same-n" and st["combining_rules_source"] == "user"
    assert "records 'partial'" in st["combining_rules_reason"]
    plan = res.plan.settings_frame()
    row = plan[plan["setting"] == "combining rules"].iloc[0]
    assert row["value"] == "full-same-n" and row["source"] == "given"


def test_pmse_model_options_reach_the_utility_step(release, tmp_path):
    """pmse_method / max_order are the utility step's, recorded in the settings and described
    as used in the report; bad values are refused by name before any step runs."""
    orig, syn = release
    only = dict(random_seed=1, progressbar=False)
    base = br.AuditSettings(sweep=None, skip=["identification", "posterior_identification",
                                              "attribute", "disclosure"])
    for kw, msg in (({"max_order": -1}, "PropensitySpec.max_order must be an integer >= 0"),
                    ({"max_order": True}, "PropensitySpec.max_order must be an integer >= 0"),
                    ({"method": "forest"}, r"PropensitySpec.method must be one of \['logit'")):
        with pytest.raises(ValidationError, match=msg):
            br.audit(str(orig), str(syn), known=KNOWN,
                     settings=base.replace(propensity=br.PropensitySpec(**kw)), **only)
    with pytest.raises(ValidationError, match="the audit reads PropensitySpec's method, "
                                              "max_order only; PropensitySpec.cp is set"):
        br.audit(str(orig), str(syn), known=KNOWN,
                 settings=base.replace(propensity=br.PropensitySpec(cp=0.1)), **only)
    main0 = br.audit(str(orig), str(syn), known=KNOWN,
                     settings=base.replace(propensity=br.PropensitySpec(max_order=0)), **only)
    pm = main0.step("utility").result.pmse
    ref = br.utility_summary(pd.read_csv(orig), br.SyntheticData.load(syn),
                             categorical=CATS, random_seed=1,
                             propensity=br.PropensitySpec(max_order=0)).pmse
    assert pm.max_order == 0 and np.allclose(pm.pmse, ref.pmse)
    row = main0.plan.settings_frame().query("setting == 'pMSE propensity model'").iloc[0]
    assert row["value"] == "logit, main effects only" and row["source"] == "given"
    md = main0.to_markdown(tmp_path / "r.md").read_text()
    assert "a logistic model with main effects telling original from synthetic" in md
    cart = br.audit(str(orig), str(syn), known=KNOWN, settings=base.replace(propensity="cart"),
                    **only)
    assert cart.step("utility").result.pmse.method == "cart"
    assert "of a CART model telling" in cart.to_markdown(tmp_path / "c.md").read_text()


def test_audit_result_is_a_result_like_the_others(audited, tmp_path):
    """summary() / _repr_html_ / str / to_dataframe / plot / structured_warnings, as every
    result of the package (a notebook shows the verdict, not ``AuditResult(n=...)``)."""
    from bayes_risk.results import RiskResult, Summary

    res, out = audited
    assert isinstance(res, RiskResult)
    s = res.summary()
    assert isinstance(s, Summary)
    verdict = s.tables["Verdict lines (value against the release board's threshold)"]
    assert len(verdict) == len(res.verdicts)
    assert list(verdict["exceeds"]) == [v.exceeds for v in res.verdicts]
    assert np.allclose(verdict["value"], [v.value for v in res.verdicts], equal_nan=True)
    steps = s.tables["Steps"]
    assert list(steps["step"]) == [x.name for x in res.steps]
    assert list(steps["status"]) == [x.status for x in res.steps]
    assert res.verdict_text in s.notes
    html = res._repr_html_()
    assert html.startswith('<div class="bayes-risk-summary">') and "Verdict lines" in html
    # printed: the verdict and its lines within 100 columns, and where the rest is (issue 66:
    # the whole summary printed 71 lines of up to 1,020 characters)
    text = str(res)
    assert text == repr(res) == res.brief().as_text()
    assert max(map(len, text.splitlines())) <= 100 and len(text.splitlines()) < 60, text
    assert text.startswith(f"Audit of a synthetic release: {res.headline_parts()[0]}")  # complete
    assert all(f"{v.step}: {v.short}" in text for v in res.verdicts)
    assert "audit.verdict_frame()" in text and "audit.step(NAME).result" in text
    assert max(map(len, s.as_text().splitlines())) <= 100
    pd.testing.assert_frame_equal(res.to_dataframe(), res.verdict_frame())
    codes = {(w["step"], w["code"]) for w in res.warnings}
    got = {(w.where.removesuffix(" step"), w.code) for w in res.structured_warnings}
    assert got == codes and len(res.structured_warnings) == len(got)
    assert all(not w.message.startswith(f"{w.code}:") for w in res.structured_warnings)
    ax = res.plot()
    assert len(ax.patches) == sum(np.isfinite(v.value) and v.value > 0 for v in res.verdicts)
    assert ax.get_xscale() == "log"
    ax.figure.savefig(tmp_path / "verdict.png")
    with pytest.raises(ValidationError, match="must be one of"):
        res.plot("radius")


def test_disclosure_step_result_is_a_result(audited):
    """The disclosure step returns a DisclosureByTarget (was a plain dict): a mapping of target
    to DisclosureMeasures with summary / to_dataframe / to_dict / plot."""
    from bayes_risk.disclosure import DisclosureByTarget, DisclosureMeasures

    res, _ = audited
    d = res.step("disclosure").result
    assert isinstance(d, DisclosureByTarget) and len(d) == len(res.plan.disclosure_targets)
    t = next(iter(d))
    assert isinstance(d[t], DisclosureMeasures) and dict(d.items())[t] is d[t]
    df = d.to_dataframe()
    assert list(df["target"]) == list(d) and df.loc[0, "repU"] == d[t].means()["repU"]
    assert set(d.to_dict()["by_target"]) == set(d)
    assert "Means over datasets" in d._repr_html_()
    assert len(d.plot().patches) == 3 * len(d)
    with pytest.raises(TypeError):
        d[t] = None  # read-only


# ---- failed convergence checks of the fits (issue 35 item 2) ---------------------------------


def test_failed_convergence_checks_in_headline_warnings_and_summary(tmp_path, capsys):
    """A saved DPMPM fit that fails its checks (2 chains x 30 draws: ESS far below 200): the
    audit's headline names the fit, the quantity and the value; the report's "Warnings of every
    step" lists the saved model's LOW_ESS / RHAT_HIGH (they were only on the verdict line) and
    the augmented fits', each naming its fit; summary.json records every failed check (code,
    fit, quantity, statistic, value, threshold) with the values of the model's
    convergence.json."""
    orig = tmp_path / "orig.csv"
    cols = ["SEX", "MAR", "MIG"]
    br.make_acs_like(120, random_seed=5)[cols].astype("int64").to_csv(orig, index=False)
    model, syn, out = tmp_path / "model", tmp_path / "syn", tmp_path / "aud"
    assert main(["fit", str(orig), "--method", "dpmpm", "--components", "4", "--tune", "10",
                 "--draws", "30", "--chains", "2", "--cores", "1", "--random-seed", "1",
                 "--quiet", "--out", str(model)]) == 0
    assert main(["synthesize", "--model", str(model), "-m", "2", "--random-seed", "2",
                 "--quiet", "--out", str(syn)]) == 0
    capsys.readouterr()
    assert main(["audit", str(orig), str(syn), "--model", str(model), "--known", "SEX", "MAR",
                 "--records", "0-3", "--skip", "utility", "identification",
                 "posterior-identification", "disclosure", "--random-seed", "3",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr()
    conv = json.loads((model / "convergence.json").read_text())
    saved = [dict(c, fit="model", step="attribute") for c in conv["failed_checks"]]
    assert {c["code"] for c in saved} == {"RHAT_HIGH", "LOW_ESS"} or \
        {c["code"] for c in saved} == {"LOW_ESS"}
    top = json.loads((out / "summary.json").read_text())
    checks = top["failed_convergence_checks"]
    assert [c for c in checks if c["fit"] == "model"] == saved
    assert {c["fit"] for c in checks} == {"model", "augmented_1", "augmented_2"}
    for c in checks:
        assert set(c) == {"step", "code", "fit", "quantity", "statistic", "value", "threshold"}
    # the list of warnings of every step: the saved model's failed checks, named
    listed = {(w["code"], w.get("fit")) for w in top["step_warnings"]}
    for c in checks:
        assert (c["code"], c["fit"]) in listed
    assert {"LOW_ESS", "RHAT_HIGH"} & set(top["warnings"])
    md = (out / "report.md").read_text()
    section = md[md.index("## Warnings of every step"):]
    assert "`LOW_ESS`: fit model: DPMPM: MCMC may not have converged" in section
    html = (out / "report.html").read_text()
    assert "<code>LOW_ESS</code>: fit model: DPMPM" in html
    # the step's own summary.json and the run's warnings (one line each on stderr)
    step = json.loads((out / "attribute" / "summary.json").read_text())
    assert any(w.get("fit") == "model" and w["checks"] for w in step["run_warnings"])
    assert "warning [LOW_ESS]: fit model: DPMPM: MCMC may not have converged" in printed.err
    # the headline: the fits that failed, and fit, quantity and value of the worst check
    (line,) = [ln for ln in printed.out.splitlines() if "convergence FAILED" in ln]
    low = min((c for c in checks if c["code"] == "LOW_ESS"),
              key=lambda c: c["value"] / c["threshold"])
    stat = {"ess_bulk": "bulk ESS", "ess_tail": "tail ESS"}[low["statistic"]]
    assert "(attribute step)" in line
    assert (f"LOW_ESS (fits model, augmented_1, augmented_2; worst fit {low['fit']}): "
            f"{stat} of {low['quantity']} {low['value']:.0f} < 200") in line
    assert f"({len(checks)} failed check(s) in all: summary.json)" in line


def test_repu_is_one_line_per_set_of_keys(release, tmp_path):
    """repU depends on the keys only: with several targets sharing the keys it is one verdict
    line (three identical lines inflated "n of N" before); DiSCO stays one line per target."""
    orig, syn = release
    res = br.audit(str(orig), str(syn), known=[*KNOWN, "Income"], random_seed=1, progressbar=False,
                   settings=br.AuditSettings(sweep=None, targets=["Tenure", "Expenditure"],
                                             skip=["utility", "identification",
                                                   "posterior_identification", "attribute"]))
    d = res.step("disclosure").result
    keysets = {tuple(r.keys) for r in d.values()}
    lines = [v for v in res.verdicts + res.baselines if v.measure.startswith("repU")]
    assert len(lines) == len(keysets) < len(d)
    assert [v.measure for v in res.verdicts if v.measure.startswith("DiSCO")] == [
        f"DiSCO (%), target {t}" for t in d]


# ---- verdict lines a release board can act on (issue 35, item 1) ------------------------------


def test_verdict_lines_carry_a_computed_cause_and_remedies(release, audited_hh, report_hh):
    """A line on the wrong side of its threshold names one cause computed from the run (numbers
    checked here by brute force) and the remedies that would move it; a line within its
    threshold has neither."""
    res, out = audited_hh
    orig, syn = release
    data = pd.read_csv(orig)
    sd = br.read_synthetic(str(syn))
    known = [*KNOWN, "Income"]
    v = {x.measure: x for x in res.verdicts}
    # identification: targets unique on the known columns, released Income equal to the truth
    n_uniq = int((data.groupby(known, dropna=False)[known[0]].transform("size") == 1).sum())
    eq = np.mean([(data["Income"].to_numpy() == z["Income"].to_numpy()).mean()
                  for z in sd]) * 100
    em = v["expected match rate, worst case over the radii"]
    assert em.exceeds
    assert f"{n_uniq:,} of {len(data):,} targets" in em.cause
    assert f"Income: {eq:.3g} % of records" in em.cause
    assert any("--smoothing" in r for r in em.remedies)
    assert any(r.startswith("synthesize a known column") and "Age, Urban, Marital" in r
               for r in em.remedies)
    # repU: the original's uniques on the keys and the share of them reproduced
    rep = next(x for x in res.verdicts if x.measure.startswith("repU"))
    d = next(iter(res.step("disclosure").result.values()))
    uio, repu = d.ident["UiO"].mean(), d.ident["repU"].mean()
    assert rep.exceeds and f"{repu / uio * 100:.3g} % of them are reproduced" in rep.cause
    # DiSCO of a categorical target: smoothing (numeric values only) is not offered for it
    disco = next(x for x in res.verdicts if x.measure.startswith("DiSCO"))
    assert disco.exceeds and disco.cause.startswith(
        f"for {d.attrib['DiSCO'].mean():.3g} % of records the release shows a single value")
    if disco.measure.endswith("Tenure"):
        assert not any("--smoothing" in r for r in disco.remedies)
    for x in res.verdicts:
        assert bool(x.cause) == bool(x.remedies)
        if not x.exceeds:
            assert x.cause == "" and x.remedies == ()
    # in summary.json's verdicts, and on the report's verdict table
    top = json.loads((out / "summary.json").read_text())
    row = next(r for r in top["verdicts"] if r["measure"] == em.measure)
    assert row["cause"] == em.cause and row["remedies"] == list(em.remedies)
    html = report_hh[0].read_text()
    verdict = html.split('<section id="verdict">')[1].split("</section>")[0]
    assert "<strong>Cause:</strong>" in verdict and "<strong>Remedies:</strong>" in verdict
    md = report_hh[1].read_text()
    assert "**Cause:**" in md
    # the printable summary: the unit beside each value, the causes in a table of their own
    tables = res.summary().tables
    causes = tables["Cause and remedies of each line past its threshold"]
    assert em.measure in set(causes["measure"])
    assert "%" in set(tables["Verdict lines (value against the release board's threshold)"]
                      ["unit"])


def test_attribute_cause_counts_true_values_among_the_released(release, audited):
    """The attribute line's cause: the share of assessed records whose true synthesized value is
    among the m values released for that record, against their ±k % alternatives (brute
    force: the ±10 % grid of 11 points of the attribute step)."""
    res, _ = audited
    orig, syn = release
    data = pd.read_csv(orig)
    sd = [z for z in br.read_synthetic(str(syn))]
    line = next(x for x in res.verdicts if x.step == "attribute")
    assert line.exceeds  # CART, m = 2: the truth is released for most records
    recs = list(range(25))
    true_inc = np.mean([data["Income"][i] in {z["Income"][i] for z in sd} for i in recs])
    grid = np.linspace(-0.1, 0.1, 11)[np.linspace(-0.1, 0.1, 11) != 0]
    alt_inc = np.mean([bool({data["Income"][i] * (1 + g) for g in grid}
                            & {z["Income"][i] for z in sd}) for i in recs])
    true_ten = np.mean([data["Tenure"][i] in {z["Tenure"][i] for z in sd} for i in recs])
    assert (f"Income: truth among the record's 2 released values for {true_inc * 100:.3g} % "
            f"of records, a ±k % alternative for {alt_inc * 100:.3g} %") in line.cause
    assert f"Tenure: truth among the record's 2 released values for {true_ten * 100:.3g} %" \
        in line.cause
    assert "as the release gives donors' original values of Income (cart)" in line.cause
    assert any("--smoothing" in r and "Income" in r for r in line.remedies)
    assert any("fewer synthetic datasets (m = 2 now)" in r for r in line.remedies)


def test_every_verdict_line_has_a_spread_and_one_unit(audited, audited_hh):
    """Each line states the spread over the m datasets (min–max where the measure is per
    dataset) or that it is pooled; rates are in per cent, thresholds in the same unit."""
    for res, _ in (audited, audited_hh):
        for v in res.verdicts:
            assert v.spread, v.measure
    res, _ = audited_hh
    v = {x.measure: x for x in res.verdicts}
    r = res.step("utility").result
    sp = v["mean S_pMSE (pMSE / null expectation)"]
    assert sp.unit == "" and sp.spread.startswith(
        f"per dataset {min(r.pmse.ratio):.3g}–{max(r.pmse.ratio):.3g} ")
    d = next(iter(res.step("disclosure").result.values()))
    rep = next(x for x in res.verdicts if x.measure.startswith("repU"))
    assert rep.spread.startswith(
        f"per dataset {d.ident['repU'].min():.3g}–{d.ident['repU'].max():.3g} %")
    em = v["expected match rate, worst case over the radii"]
    assert em.spread.startswith("pooled over the 2 datasets, no spread; per dataset ")
    res, _ = audited
    a = next(x for x in res.verdicts if x.step == "attribute")
    s = res.step("attribute").extra["summary"]
    assert a.unit == "%" and a.value == pytest.approx(100 * s["unflagged"]["prop_top"])
    assert a.threshold == pytest.approx(100 * res.plan.thresholds.prop_top)
    assert "no spread" in a.spread and "says nothing about the records" in a.detail
    assert " %" in a.detail
    # no fraction beside per cent: every rate line is in per cent
    assert all(x.unit == "%" for x in res.verdicts + audited_hh[0].verdicts
               if x.step != "utility")


def test_each_intruder_in_the_header_is_named_once(audited, report):
    """Two lines of one step whose intruders differ (the attribute lines: the evidence line
    names its factor) are named by measure: the step's name twice would not say which is
    which."""
    import html as html_lib

    res, _ = audited
    html = html_lib.unescape(report[0].read_text())
    items = html.split('<ul class="intruders">')[1].split("</ul>")[0]
    names = re.findall(r"<li><strong>(.*?)</strong>", items)
    assert len(names) == len(set(names)), names
    attribute = [v for v in res.verdicts if v.step == "attribute" and v.intruder]
    assert len({(v.intruder, v.worst_case) for v in attribute}) == 2
    assert all(any(v.measure in n for n in names) for v in attribute), names


def test_report_header_names_the_intruder_of_every_line_and_folds_detail(report_hh):
    """The header says who the intruder of each line is; the step sections' tables sit behind a
    <details> element (caption visible), so the first screen is the verdict."""
    html = report_hh[0].read_text()
    body = html.split('<section id="verdict">')[1]
    verdict, rest = body.split("</section>", 1)
    # under the verdict table (the first screen is the banner and the table)
    who = verdict.split('<table class="verdicts">')[1]
    assert "The intruder of each verdict line" in who
    assert "identification</strong>: knows the true Age, Urban, Marital, Income of every " \
        "target" in who
    assert "repU (%), keys Age, Urban, Marital, Income</strong>: knows the keys" in who
    assert "the intruder knows:" not in who
    assert "<details" not in verdict
    assert rest.count("<details class=\"table\">") >= 3  # per-dataset detail: closed
    # the file-level summary stays open
    assert re.search(r'<details class="table" open><summary>One dataset at a time, at the '
                     r'worst case over the radii', rest)
    assert re.search(r'<details class="table"><summary>identity measures, % of records \(',
                     rest)
    # the two-way tables one click away; the marginals' panel and the heat map of the tables
    # shown in the utility section
    compare = rest.split('<section id="compare">')[1].split("</section>")[0]
    assert re.search(r'<details class="section"><summary>\d+ two-way tables?', compare)
    util = rest.split('<section id="utility">')[1].split("</section>")[0]
    assert "S_pMSE of every pair of columns" in util and "Marginals, original against" in util
    assert '<details class="section">' not in util and "<img" not in compare
    assert "<figure class=\"table\">" not in html
    md = report_hh[1].read_text()
    assert "The intruder of each verdict line" in md
    # one Markdown list item per verdict line's intruder, each on its own line (the template's
    # trimmed blocks once ran them together into one paragraph)
    items = md.split("The intruder of each verdict line")[1].split("\n#")[0]
    lines = [x for x in items.splitlines() if x.startswith("- ")]
    assert len(lines) >= 3 and any(x.startswith("- identification: knows the true") for x in lines)
    assert all(x.count(": knows") + x.count(": none") == 1 for x in lines), lines


def test_cause_figures_by_hand():
    """The figures behind the causes on a table small enough to count by hand."""
    from bayes_risk.attribute import CandidateSpec
    from bayes_risk.auditing.causes import (
        attribute_drivers,
        identification_drivers,
        marginal_discrepancy,
    )

    orig = pd.DataFrame({"a": [1, 1, 2, np.nan, np.nan], "b": ["x", "y", "x", "x", "x"],
                         "y": [100.0, 200.0, 300.0, 400.0, 500.0]})
    s1 = orig.assign(b=["x", "x", "x", "x", "y"], y=[100.0, 220.0, 1.0, 2.0, 3.0])
    s2 = orig.assign(b=["y", "x", "x", "x", "x"], y=[5.0, 6.0, 300.0, 7.0, 8.0])
    # unique on a: only a = 2 (the missing values are one value, twice); on (a, b): 3
    assert identification_drivers(orig, [s1, s2], ["a"], [], aligned=True)["n_sample_unique"] == 1
    d = identification_drivers(orig, [s1, s2], ["a", "b"], ["b"], aligned=True)
    assert d["n_sample_unique"] == 3 and d["pct_sample_unique"] == 60.0
    # b released equal: s1 3 of 5 (x, -, x, x, -), s2 3 of 5 (-, -, x, x, x): 60 %
    assert d["pct_released_equal"] == {"b": pytest.approx(60.0)}
    # y: truth released for records 0 (s1) and 2 (s2): 40 %; 220 = 200 + 10 % is on record 1's
    # ±10 % grid: an alternative released for 20 %
    a = attribute_drivers(orig, [s1, s2], ["y", "b"], range(5), CandidateSpec(), ["y"],
                          aligned=True)
    assert a["columns"]["y"] == {"pct_true_released": pytest.approx(40.0),
                                 "pct_alternative_released": pytest.approx(20.0),
                                 "kind": "numeric"}
    # b: truth among the two released values for every record but 1 ("y": released x, x)
    assert a["columns"]["b"]["pct_true_released"] == pytest.approx(80.0)
    assert a["pct_any_true_released"] == pytest.approx(80.0)
    # not row-aligned: no record-by-record comparison — other lengths, or the same length with
    # no column released unchanged row by row (a fully synthetic release of the original's size)
    assert attribute_drivers(orig, [s1.head(3)], ["y"], range(3), CandidateSpec(), ["y"],
                             aligned=True)["scope"] == "pooled"
    assert attribute_drivers(orig, [s1], ["y"], [], CandidateSpec(), ["y"], aligned=True) is None
    # a fully synthetic release: the truth is looked for among the pooled values — y: 300
    # (record 2) and 100 (record 0) are released; 220 = 200 + 10 % is record 1's alternative;
    # b: both levels are released, so the truth and another level for every record
    f = attribute_drivers(orig, [s1, s2], ["y", "b"], range(5), CandidateSpec(), ["y"],
                          aligned=False)
    assert f["scope"] == "pooled" and a["scope"] == "record"
    assert f["columns"]["y"]["pct_true_released"] == pytest.approx(40.0)
    assert f["columns"]["y"]["pct_alternative_released"] == pytest.approx(20.0)
    assert f["columns"]["b"]["pct_true_released"] == pytest.approx(100.0)
    assert f["columns"]["b"]["pct_alternative_released"] == pytest.approx(100.0)
    assert identification_drivers(orig, [s1, s2], ["a", "b"], ["b"],
                                  aligned=False)["pct_released_equal"] is None
    # b: original x 80 %, pooled 80 %; y: KS distance of the pooled values from the original's
    top = marginal_discrepancy(orig, [s1, s2], ["b", "y"], ["b"])
    assert top[0]["variable"] == "y" and top[1] == {"variable": "b", "points": 0.0,
                                                     "kind": "categorical"}


def test_rows_aligned_needs_a_column_released_unchanged():
    """The causes compare record i with row i only when the release keeps the records' order:
    equal lengths are not enough (a fully synthetic release of the original's size)."""
    from types import SimpleNamespace

    from bayes_risk.auditing.context import RunState, rows_aligned

    rng = np.random.default_rng(3)
    orig = pd.DataFrame({"a": rng.integers(0, 4, 50), "y": rng.normal(size=50)})
    full = [pd.DataFrame({"a": rng.integers(0, 4, 50), "y": rng.normal(size=50)})
            for _ in range(2)]
    partial = [orig.assign(y=rng.normal(size=50)) for _ in range(2)]

    def ctx(syn):
        return SimpleNamespace(original=orig, synthetic=syn, run=RunState(),
                               plan=SimpleNamespace(synthesized=["y"]))

    assert rows_aligned(ctx(partial)) is True
    assert rows_aligned(ctx(full)) is False
    assert rows_aligned(ctx([z.head(40) for z in partial])) is False


def test_known_sweep_section_optional_and_verdict_unchanged(release, audited_identification,
                                                           tmp_path):
    """``known_sweep=True`` adds the frontier, the drivers and the figures to the
    identification step and its report section; the verdict is the same as without it."""
    orig, syn = release
    plain = audited_identification
    assert plain.step("identification").extra["known_sweep"] is None
    out = tmp_path / "ks"
    res = br.audit(str(orig), str(syn), known=[*KNOWN, "Income"], random_seed=2,
                   progressbar=False, out=out,
                   settings=IDENTIFICATION_ONLY.replace(known_sweep=True))
    ks = res.step("identification").extra["known_sweep"]
    assert len(ks.table) == 2 ** 4
    assert ks.synthesized == ("Income",)
    # the full set is the step's own intruder: the same figure
    assert ks.risk([*KNOWN, "Income"]) == pytest.approx(
        res.step("identification").result.file["expected_match_risk"], rel=1e-12)
    assert [(v.measure, v.value, v.threshold, v.detail) for v in res.verdicts] == \
        [(v.measure, v.value, v.threshold, v.detail) for v in plain.verdicts]
    for f in ("known_sweep.csv", "known_sweep_drivers.csv", "known_sweep_levels.csv"):
        assert (out / "identification" / f).is_file()
    summ = json.loads((out / "identification" / "summary.json").read_text())
    assert "known_sweep" in summ and summ["known_sweep"]["candidates"] == [*KNOWN, "Income"]
    html = tmp_path / "r.html"
    res.to_html(html)
    text = html.read_text()
    assert "Sensitivity to the intruder" in text and "Pareto frontier" in text
    assert "Withholding" in text
    md = tmp_path / "r.md"
    res.to_markdown(md)
    assert "Pareto frontier" in md.read_text()


def test_known_sweep_of_the_attribute_step(release, tmp_path):
    """``known_sweep=True`` also sweeps the attribute step over the synthesized known columns
    (known of the record's own values): the empty subset is the step's own worst case."""
    orig, syn = release
    out = tmp_path / "aks"
    res = br.audit(str(orig), str(syn), known=[*KNOWN, "Income"], random_seed=2, out=out,
                   progressbar=False,
                   settings=br.AuditSettings(sweep=None, known_sweep=True,
                                             attribute_records=range(12),
                                             skip=["utility", "posterior_identification",
                                                   "disclosure"]))
    step = res.step("attribute")
    aks = step.extra["known_sweep"]
    assert aks.kind == "attribute" and list(aks.table["known"]) == ["(none)", "Income"]
    summ = step.extra["summary"]["all"]
    assert aks.risk([], "mean_p_true") == pytest.approx(summ["mean_p_true"], rel=1e-12)
    assert aks.risk([], "prop_top") == pytest.approx(summ["prop_top"], rel=1e-12)
    for f in ("known_sweep.csv", "known_sweep_drivers.csv", "known_sweep_levels.csv"):
        assert (out / "attribute" / f).is_file()
    html = tmp_path / "r.html"
    res.to_html(html)
    assert "synthesized known columns the intruder may also know" in html.read_text()


def test_audit_cli_known_sweep_flag_off_by_default():
    from bayes_risk._specs import spec_values
    from bayes_risk.auditing.settings import AuditSettings
    from bayes_risk.cli import build_parser

    def settings(argv):  # as cli/audit.py builds them: an option not given keeps the default
        return AuditSettings(**spec_values(AuditSettings, vars(build_parser().parse_args(argv))))

    base = ["audit", "o.csv", "syn", "--known", "Age", "--out", "o"]
    assert settings(base).known_sweep is False
    assert settings([*base, "--known-sweep"]).known_sweep is True


# ---- issue 48: the report a release board reads ----------------------------------------------


def _text(html: str) -> str:
    """The report's visible text (tags dropped, entities left)."""
    body = html.split("</style>", 1)[-1]
    body = re.sub(r"</?(?:td|th|tr|p|li|dt|dd|h\d|summary|table|ul|ol|dl)\b[^>]*>", " ", body)
    return " ".join(re.sub(r"<[^>]+>", "", body).split())


def test_status_and_headline(audited, tmp_path):
    """One sentence and an overall status open the report: "Do not release as it stands" with
    the lines past their thresholds and their values; "Review before release" when no line
    exceeds but one is questioned (a warning, flagged records); "Within every threshold"
    otherwise; "No release verdict" for an incomplete audit with no line past its threshold."""
    import dataclasses

    res, out = audited
    bad = [v for v in res.verdicts if v.exceeds]
    assert bad and res.status == "do_not_release"
    assert res.headline.startswith(
        f"Do not release as it stands: {len(bad)} of {len(res.verdicts)} measures exceed "
        "their thresholds — ")
    for v in bad:
        assert f"{v.short} {v.value:.3g} %" in res.headline or f"{v.short} " in res.headline
    assert res.verdict_sentences()[0] == res.headline
    top = json.loads((out / "summary.json").read_text())
    assert top["status"] == "do_not_release" and top["headline"] == res.headline
    # with the board's thresholds above every value: the utility line's SEPARATION questions
    # it, so the status is a review, named with its reason
    u = res.step("utility").result
    loose = Thresholds.parse({"s_pmse": 1e9, "overlap": 1e-9, "prop_top": 0.999999,
                              "prop_evidence": 0.999999, "repU": 99.9999, "DiSCO": 99.9999,
                              "relative_difference": 1e-9, "closest_match": 0.999999})
    res.plan.thresholds = loose
    try:
        sep = dataclasses.replace(u, pmse=dataclasses.replace(u.pmse, warnings=["SEPARATION"]))
        r2 = _with_step(res, "utility", result=sep)
        assert r2.status == "review"
        assert r2.headline.startswith(f"Review before release: none of the "
                                      f"{len(r2.verdicts)} measures exceeds its threshold, but "
                                      "1 line needs a second look — mean S_pMSE: SEPARATION")
        clean = dataclasses.replace(u, pmse=dataclasses.replace(u.pmse, warnings=[]),
                                    warnings=[])
        r3 = _with_step(res, "utility", result=clean)
        assert r3.status == "within_thresholds"
        assert r3.headline.startswith("Within every threshold: all ")
        html = r3.to_html(tmp_path / "within.html").read_text()
        assert '<div class="banner within_thresholds"' in html
        assert "✔</span> Within every threshold</span>" in html
        r4 = _with_step(r3, "disclosure", status="failed", result=None, reason="boom")
        assert r4.status == "incomplete" and r4.headline.startswith("No release verdict")
    finally:
        res.plan.thresholds = Thresholds()
    # the report: the sign and the words, so that it reads without colour
    html = res.to_html(tmp_path / "r.html").read_text()
    banner = html.split('<div class="banner do_not_release" role="status">')[1].split("</div>")[0]
    assert '<span aria-hidden="true">✖</span> Do not release as it stands</span>' in banner
    assert res.headline.split(": ", 1)[1] in _text(banner).replace("&#39;", "'")
    assert html.index("banner") < html.index('<table class="verdicts">')
    md = res.to_markdown(tmp_path / "r.md").read_text()
    assert md.split("\n\n")[1].startswith("> **✖ Do not release as it stands:** ")


def test_thresholds_say_where_they_come_from(audited, tmp_path):
    """Each threshold names its source (synthpop's guidance, Karr et al., or the package's
    convention, which the user guide explains), not "defaults"; a threshold given for the
    audit says so."""
    from bayes_risk.auditing.thresholds import THRESHOLD_SOURCES

    res, _ = audited
    import html as html_lib

    html = html_lib.unescape(res.to_html(tmp_path / "r.html").read_text())
    assert "defaults unless set" not in html
    sources = html.split('<ol class="sources">')[1].split("</ol>")[0]
    assert THRESHOLD_SOURCES["s_pmse"] in sources and THRESHOLD_SOURCES["DiSCO"] in sources
    assert "user guide, Auditing a release: Thresholds" in sources
    # every verdict line's threshold points to its source
    table = html.split('<table class="verdicts">')[1].split("</table>")[0]
    assert table.count('<sup><a href="#threshold-') == len(res.verdicts)
    res.plan.thresholds = Thresholds.parse({"DiSCO": 2})
    try:
        given = html_lib.unescape(res.to_html(tmp_path / "g.html").read_text())
    finally:
        res.plan.thresholds = Thresholds()
    # as the caller gave it: in Python the argument (the command line's: --threshold DiSCO=2)
    assert "given for this audit (thresholds={'DiSCO': 2}; the default is 1)" in given


def test_report_one_unit_per_quantity(audited_hh, report_hh):
    """The expected match risk is a count of targets with its per cent of them wherever it
    appears (the verdict line too); rates are in per cent; no number is in exponent notation
    and no number cell wraps."""
    from bayes_risk.results import format_number

    res, _ = audited_hh
    html = report_hh[0].read_text()
    assert "td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: " \
        "nowrap; }" in html
    text = _text(html)
    assert not re.search(r"\d\.?\d*e[-+]\d", text), re.search(r".{40}\d\.?\d*e[-+]\d.{20}", text)
    n = res.plan.n_records
    # the table is at the worst case over the radii, the figure the verdict reads
    f = res.step("identification").extra["at_r_star"].file

    def count(x):  # the verdict's unit first, then the count (issue 66: one unit)
        return (f"{format_number(100 * x / n, 3, plain=True)} % = "
                f"{format_number(x, 4, plain=True)} of {n:,} targets")

    sec = _text(html.split('<section id="identification">')[1].split("</section>")[0])
    assert f"expected match rate: targets expected to be identified (the expected match " \
        f"risk, sum of IR) {count(f['expected_match_risk'])}" in sec
    assert f"true match rate: targets matched to one record, their own " \
        f"{count(f['true_match_risk'])}" in sec
    pooled = res.step("identification").extra["pooled"].headline.file
    assert f"expected match rate {count(pooled['expected_match_risk'])}" in sec
    # the verdict line: the rate in per cent and the count it is of
    v = {x.measure: x for x in res.verdicts}["expected match rate, worst case over the radii"]
    verdict = _text(html.split('<table class="verdicts">')[1].split("</table>")[0])
    assert (f"{format_number(v.value, 4, plain=True)} % = "
            f"{format_number(v.value / 100 * n, 4, plain=True)} of {n:,} targets") in verdict


def test_attribute_section_in_per_cent(audited, report):
    """p_true in per cent everywhere, the 95 % quantile over the records named as such."""
    res, _ = audited
    html = report[0].read_text()
    sec = _text(html.split('<section id="attribute">')[1].split("</section>")[0])
    assert "95 % p_true" not in sec
    assert "95th percentile of p_true over the records (%)" in sec
    s = res.step("attribute").extra["summary"]
    assert f"{100 * s['all']['mean_p_true']:.3g} %" in sec
    assert "read against what a release that says nothing about the records gives" in sec
    assert "share ranked first (prop_top in summary.json)" in sec


def test_attribute_section_reads_each_figure_against_the_null(audited, tmp_path):
    """Issue 63: the share with evidence and the prior's p_true beside the share ranked first,
    and records.csv carries every record's Bayes factor (the figure the top-records table
    shows). Issue 85: the section reads each figure against what a release that says nothing
    about the records gives — observed, expected, the 95 % range and the reading, as
    ``AttributeRiskResult.null`` computes them — and the verdict line says the same."""
    import copy

    from bayes_risk.results.attribute import bayes_factor

    res, out = audited
    a = res.step("attribute")
    sm = copy.deepcopy(a.extra["summary"])
    rec = pd.read_csv(out / "attribute" / "records.csv")
    assert list(rec.columns[rec.columns.get_loc("baseline") + 1:][:2]) == [
        "prior_p_true", "bayes_factor"]
    np.testing.assert_allclose(rec["bayes_factor"], bayes_factor(rec["p_true"],
                                                                 rec["prior_p_true"]))
    assert sm["unflagged"]["prop_evidence"] == pytest.approx(
        np.mean(rec.loc[rec["flag_codes"].isna(), "bayes_factor"] >= 3))
    null = a.result.null()
    assert sm["null"]["prop_top"]["expected"] == pytest.approx(null["prop_top"]["expected"])
    for top, reading in ((0.0, "within"), (1.0, "above")):
        sm["unflagged"]["prop_top"] = top
        sm["null"]["prop_top"] = {"expected": 0.01, "low": 0.0, "high": 0.05}
        res2 = _with_step(res, "attribute", extra={**a.extra, "summary": sm})
        html = res2.to_html(tmp_path / f"{reading}.html").read_text()
        sec = _text(html.split('<section id="attribute">')[1].split("</section>")[0])
        assert "share with evidence: Bayes factor ≥ 3 (%)" in sec
        assert "mean p_true before the release: the intruder&#39;s prior (%)" in sec
        assert "How to read these figures." in sec
        assert "the figures of the stable estimates against the null" in sec
        assert "random guess" not in sec
        line = next(v for v in res2.verdicts if v.threshold_name == "prop_top")
        assert f"; {reading} what a release that says nothing about the records gives" in \
            line.detail


def test_glossaries_in_plain_words(audited, report):
    """Every synthpop column of the disclosure tables is defined where the tables are, with
    synthpop's documentation as the source; the diagnostics are named in words."""
    from bayes_risk.auditing.measures.attribute import DIAGNOSTICS
    from bayes_risk.auditing.measures.disclosure import SYNTHPOP_TERMS

    res, _ = audited
    html = report[0].read_text()
    sec = html.split('<section id="disclosure">')[1].split("</section>")[0]
    defined = {t.strip() for k in SYNTHPOP_TERMS for t in k.split(",")}
    for r in res.step("disclosure").result.values():
        for df in (r.ident, r.attrib, r.allCAPs):
            for c in df.columns:
                assert c == "syn" or c in defined, c
    for k in SYNTHPOP_TERMS:
        assert f"<dt>{k}</dt>" in sec
    assert "Source: synthpop&#39;s disclosure() and replicated.uniques() help pages" in sec
    assert sec.index("<dl>") < sec.index("<table>")
    # the diagnostics: a plain name and the column it explains
    for name, (plain, words) in DIAGNOSTICS.items():
        assert plain.endswith(f"({name})") and len(words.split()) > 8


def test_report_figures_readable_and_honest(audited_hh, report_hh):
    """The utility-and-risk panels span the page with text of at least 10 pt (11 px at the
    report's 80 dpi), draw the thresholds, and start their axes at 0; labels say what each
    measure is of (repU has no target); the radius sweep starts at 0 and says whether its
    maximum stands out; legends sit off the data."""
    import matplotlib.pyplot as plt
    import matplotlib.text

    from bayes_risk.auditing.measures.utility import utility_risk_points
    from bayes_risk.auditing.plots import utility_risk_figure

    res, _ = audited_hh
    pts = utility_risk_points(res)
    fig = utility_risk_figure(pts)
    w = fig.get_size_inches()[0] * 80
    assert w == pytest.approx(1100)
    risks = [c for c in pts.columns if c not in ("dataset", "S_pMSE")]
    assert len(fig.axes) == len(risks)
    for ax, c in zip(fig.axes, risks, strict=True):
        assert ax.get_xlim()[0] == 0 and ax.get_ylim()[0] == 0
        dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
        ys = [ln.get_ydata()[0] for ln in dashed if ln.get_ydata()[0] == ln.get_ydata()[1]]
        xs = [ln.get_xdata()[0] for ln in dashed if ln.get_xdata()[0] == ln.get_xdata()[1]]
        assert pts.attrs["thresholds"][c] in ys and res.plan.thresholds.s_pmse in xs
        assert ax.get_ylim()[1] > pts.attrs["thresholds"][c]
    labels = " ".join(ax.get_ylabel().replace("\n", " ") for ax in fig.axes)
    assert "repU (% of records), keys Age, Urban, Marital, Income" in labels
    assert "repU %" not in labels and "repU (% of records), target" not in labels
    fig.canvas.draw()
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
    assert min(sizes) >= 10
    html = report_hh[0].read_text()
    assert '<figure class="plot wide">' in html
    # the radius sweep: from 0, its title says whether the maximum is distinguishable
    sw = res.step("identification").extra["sweep"]
    ax = sw.plot(ax=plt.figure().add_subplot())
    fig = ax.figure
    assert ax.get_ylim()[0] == 0
    same = sw.indistinguishable()
    assert ("not distinguishable" in ax.get_title()) == bool(same)
    assert "maximum at" not in ax.get_title()
    # its legend under the axes, off the boxes
    fig.canvas.draw()
    leg = ax.get_legend().get_window_extent()
    assert leg.y1 < ax.get_window_extent().y0


def test_radius_indistinguishable_by_hand(audited_hh):
    """Paired differences over the datasets against the maximising radius (t interval, 95 %):
    radius 0 is below the maximum in every dataset by 3 to 3.5 (distinguishable); radius 2
    differs by 3, -6 and 3.5 (not)."""
    import dataclasses

    res, _ = audited_hh
    sw = res.step("identification").extra["sweep"]
    risk = np.array([[10.0, 11.0, 12.0], [13.0, 14.0, 15.5], [10.0, 20.0, 12.0]])
    s3 = dataclasses.replace(sw, radii=np.array([0.01, 0.1, 0.2]), risk=risk,
                             risk_summary=risk.mean(axis=1), argmax=(1,), r_star=0.1,
                             risk_star=float(risk[1].mean()))
    # radius 0: d = (3, 3, 3.5), mean 3.17, half-width t(0.975, 2) 4.303 × 0.289 / √3 = 0.72
    assert s3.indistinguishable() == [2]
    one = dataclasses.replace(s3, risk=risk[:, :1], risk_summary=risk[:, 0])
    assert one.indistinguishable() is None


def test_warnings_name_the_run(audited_hh, report_hh):
    """The identification step runs its measure several times (one dataset at a time and
    pooled, at the step's and the maximising radius): each warning names its run."""
    res, _ = audited_hh
    w = [x for x in res.step("identification").warnings if x["code"] == "NO_MATCH"]
    assert len(w) >= 2 and all("(run: " in x["message"] for x in w)
    assert len({x["message"].split("(run: ")[1] for x in w}) == len(w)
    radius = ", ".join(f"{c} = {r:g}" for c, r in res.plan.radius.items())
    assert any(x["message"].endswith(f"(run: one dataset at a time, radius {radius})")
               for x in w)
    html = report_hh[0].read_text()
    assert "(run: one dataset at a time, maximising radius" in html


def test_disco_and_attribute_risk_reconciled(audited, tmp_path):
    """DiSCO past its threshold while the attribute line (the Bayesian worst case) is within
    it: the report says why both hold (they measure different things)."""
    import copy

    from bayes_risk.auditing.measures.disclosure import reading_together

    res, _ = audited
    assert reading_together(res) == []  # both past their thresholds: nothing to reconcile
    a = res.step("attribute")
    sm = copy.deepcopy(a.extra["summary"])
    sm["unflagged"] = {**sm["unflagged"], "prop_top": 0.0}
    r2 = _with_step(res, "attribute", extra={**a.extra, "summary": sm})
    assert any(v.exceeds for v in r2.verdicts if v.threshold_name == "DiSCO")
    md = r2.to_markdown(tmp_path / "r.md").read_text()
    together = md.split("### Reading the lines together")[1].split("The intruder of each")[0]
    assert "DiSCO exceeds its threshold while the attribute line (0 % of records" in together
    assert "they measure different things" in together and "DiSDiO" in together
    assert md.index("### Reading the lines together") < md.index("## Utility and risk")
    html = r2.to_html(tmp_path / "r.html").read_text()  # the figures the Markdown drew
    assert '<h3 id="together">Reading the lines together</h3>\n<p>DiSCO exceeds' in html


def test_zip_of_the_audit(audited, tmp_path):
    """``to_zip``: the audit folder in one file, every file a number links to inside it; a
    result without files cannot be zipped."""
    import zipfile

    res, out = audited
    html = res.to_html(out / "zipped.html", bundle="zipped.zip")
    assert 'To send this report, send <a href="zipped.zip">zipped.zip</a>' in html.read_text()
    path = res.to_zip(out / "zipped.zip")
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            z.extractall(tmp_path)
        assert "zipped/zipped.html" in names and "zipped/summary.json" in names
        assert "zipped/zipped.zip" not in names
        page = (tmp_path / "zipped" / "zipped.html").read_text()
        files = [u.split("#")[0] for u in _links(page)
                 if not u.startswith(("data:", "#")) and u != "zipped.zip"]
        assert files and all((tmp_path / "zipped" / u).exists() for u in files)
    finally:
        path.unlink()
        html.unlink()
    with pytest.raises(ValidationError, match="to_zip needs the audit's files") as e:
        dataclasses_replace_root(res).to_zip(tmp_path / "x.zip")
    assert e.value.code == "RESULT_UNSUITED"
    plain = res.to_html(tmp_path / "plain.html").read_text()
    assert "send the folder (in Python, result.to_zip(path)" in plain


def dataclasses_replace_root(res):
    import copy

    other = copy.copy(res)
    other.root = None
    return other


def test_format_number_plain():
    from bayes_risk.results import format_number

    assert format_number(4.796e-05, plain=True) == "0.00004796"
    assert format_number(9.695e-04, 3, plain=True) == "0.000969"
    assert format_number(15598.3, plain=True) == "15,598"
    assert format_number(999.96, 3, plain=True) == "1,000"
    assert format_number(0.9359, plain=True) == "0.9359"
    assert format_number(4.796e-05) == "4.796e-05"  # unchanged without plain


def test_before_and_after_count_like_with_like(audited):
    """Issue 85: after a remedy the re-audit withheld both attribute lines and its banner read
    "5 of 7 measures exceed" against "7 of 9" before, a smaller denominator in silence. Every
    line measured before is measured again or counted as not re-measured, with the step's
    reason, and the comparison is called incomplete; with nothing left over that exceeds, the
    status is not a pass but "incomplete"."""
    import copy

    res, _ = audited
    before = copy.deepcopy(res.to_dict())
    lines = [v for v in before["verdicts"] if v["step"] == "attribute"]
    assert lines  # the audited release has both attribute lines
    for v in lines:  # as if they had exceeded their thresholds before
        v["status"], v["exceeds"] = "exceeds", True
    after = _with_step(res, "attribute", status="skipped",
                       reason="the release was post-processed after synthesis")
    after.before = before
    text = after.verdict_text
    eb = sum(v["status"] == "exceeds" for v in before["verdicts"])
    nb, na = len(before["verdicts"]), len(after.verdicts)
    ea = sum(v.exceeds for v in after.verdicts)
    assert na == nb - len(lines)
    assert (f"Against the earlier audit: {eb} of {nb} measures exceeded their thresholds "
            f"before; {ea} of {na} measured now exceed, and {len(lines)} measured before were "
            "not measured again (share ranked first (") in text
    assert ("before): the release was post-processed after synthesis). The comparison is "
            "incomplete: those lines are not assessed, not passed.") in text
    gone = after.unmeasured_since_before(exceeded=True)
    assert [g["step"] for g in gone] == ["attribute"] * len(lines)
    if not any(v.exceeds for v in after.verdicts):
        assert after.status == "incomplete"
        assert "were not measured again" in after.headline
    # the same audit again: every line measured again
    again = copy.copy(res)
    again.before = res.to_dict()
    assert "every line of the earlier audit measured again" in again.verdict_text
