"""The audit report's figures are drawn once: a figure a step saved is the file the report shows
(not drawn again); the report's own figures are drawn once per result, a second report (HTML or
Markdown, as ``bayes-risk audit`` writes both) reusing their PNGs, byte for byte what drawing them
again gives, and a result that changed draws them again. The verdict lines, which the reports,
the printed verdict and ``summary.json`` read about a hundred times, are computed once in the
same way."""

from __future__ import annotations

import copy
import os
import warnings
from pathlib import Path

import pytest

import bayes_risk as br
from bayes_risk.auditing import plots
from bayes_risk.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.BayesRiskWarning")

CATS = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """A CE-like table, a CART release of it (m = 2) and its audit, its files in a folder:
    marginal figures, the radius sweep and the attribute step's figures (two shown: no k-hat
    under the plug-in)."""
    d = tmp_path_factory.mktemp("release")
    orig = d / "orig.csv"
    br.make_ce_like(160, random_seed=5).to_csv(orig, index=False)
    assert main(["synthesize", str(orig), "--method", "cart", "--synthesize", "Tenure",
                 "Income", "--categorical", *CATS, "-m", "2", "--random-seed", "1",
                 "--out", str(d / "syn"), "--quiet"]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return br.audit(str(orig), str(d / "syn"), known=["Age", "Urban", "Marital"],
                        random_seed=2, progressbar=False, out=d / "audit",
                        settings=br.AuditSettings(attribute_records=range(10),
                                                  skip=["posterior_identification"]))


@pytest.fixture
def drawn(monkeypatch):
    """Counts the figures drawn and encoded (``plots.figure_png``)."""
    calls = []
    real = plots.figure_png

    def counting(fig, dpi=80):
        calls.append(fig)
        return real(fig, dpi)

    monkeypatch.setattr(plots, "figure_png", counting)
    return calls


def test_the_report_shows_the_figures_the_steps_wrote(audited, drawn, tmp_path):
    """A step's figure is drawn once, by the step: the HTML report embeds the PNG it wrote
    (shown at the width the figure has at the report's 80 dpi), the Markdown report links it,
    and the reports draw their own figures alone."""
    res = copy.copy(audited)
    html = res.to_html(tmp_path / "a.html").read_text()
    md = res.to_markdown(tmp_path / "a.md").read_text()
    root = Path(res.root)
    # 6 by 4 inches at 100 dpi; the radius search 6.5 by 4.5 at 120
    for folder, name, width in (("attribute", "p_true_hist.png", 480),
                                ("attribute", "rank_hist.png", 480),
                                ("identification", "radius_search.png", 520)):
        png = (root / folder / name).read_bytes()
        assert f'<img src="{plots.png_data_uri(png)}" width="{width}"' in html, name
        assert f"]({Path(os.path.relpath(root, tmp_path)).as_posix()}/{folder}/{name})" in md
    own = sorted(p.name for p in (tmp_path / "a_figures").iterdir())
    assert len(drawn) == len(own) and "utility_compare.png" in own
    assert not set(own) & {f for s in res.steps for f in s.figures}
    # the figures of record are the report's: the rank figure the step saved draws the
    # threshold of the verdict's line, the radius search that of the expected match rate
    for step, name, text in (("attribute", "rank_hist.png", "threshold of the share ranked"),
                             ("identification", "radius_search.png", "threshold: expected")):
        fig = res.step(step).figures[name].draw()
        assert any(text in t.get_text() for t in _texts(fig)), name


def test_second_report_reuses_the_figures_with_the_same_bytes(audited, drawn, tmp_path):
    res = copy.copy(audited)  # a result of its own (no figures drawn yet)
    res.root = None  # its files not found: the steps' figures are drawn for the report
    first = res.to_html(tmp_path / "a.html").read_bytes()
    n = len(drawn)
    assert n >= 5  # marginals, radius sweep, the attribute step's figures
    # the second report takes the figures the first drew: the same bytes, nothing drawn
    second = res.to_html(tmp_path / "b.html").read_bytes()
    assert len(drawn) == n and second == first
    # the Markdown report of the same result draws nothing either, and its PNG files are what
    # savefig writes
    md = res.to_markdown(tmp_path / "r.md").read_text()
    assert len(drawn) == n
    files = sorted((tmp_path / "r_figures").iterdir())
    assert len(files) == n and all(f"r_figures/{f.name}" in md for f in files)
    # each figure is its own (the attribute step's plots are different figures)
    assert len({f.read_bytes() for f in files}) == n
    # the CART plug-in computes no Pareto k-hat: no empty k-hat frame is drawn
    assert {"p_true_hist.png", "rank_hist.png"} <= {f.name for f in files}
    assert "khat.png" not in {f.name for f in files}
    from bayes_risk.results._base import plot_figure

    fig = plot_figure(res.step("utility").result, "tables")
    fig.savefig(tmp_path / "direct.png", dpi=80)
    plots._plt().close(fig)
    assert (tmp_path / "direct.png").read_bytes() == (tmp_path / "r_figures"
                                                       / "utility_tables.png").read_bytes()


def test_a_changed_result_draws_its_figures_again(audited):
    """The figures kept on a result (``AuditResult._report_figures``) are dropped when the
    objects they are drawn from change: another plan, steps list, step, or a step's status,
    result or extra (as in a copy with one step replaced); kept while nothing changed."""
    res = copy.copy(audited)
    figs = res._report_figures()
    figs[("x.png", 0)] = b"png"
    assert res._report_figures() is figs  # unchanged
    same = copy.copy(res)  # a plain copy: the same objects, the same figures
    assert same._report_figures() is figs

    def changed(fn):
        other = copy.copy(res)
        other.steps = list(res.steps)
        fn(other)
        out = other._report_figures()
        assert out == {} and out is not figs
        assert res._report_figures() is figs  # the original keeps its own

    changed(lambda r: setattr(r, "plan", copy.copy(r.plan)))
    changed(lambda r: r.steps.__setitem__(0, copy.copy(r.steps[0])))
    changed(lambda r: r.steps.pop())
    for attr, value in (("status", "changed"), ("result", object()), ("extra", {})):
        other = copy.copy(res)
        other.steps = [copy.copy(st) for st in res.steps]
        kept = other._report_figures()
        kept[("y.png", 0)] = b"png"
        assert other._report_figures() is kept
        setattr(other.steps[0], attr, value)  # a step of the result changed in place
        assert other._report_figures() == {}, attr


def test_markdown_figures_of_the_same_name_get_files_of_their_own(tmp_path):
    """The identification and attribute steps' knowledge sweeps both make known_sweep.png:
    the Markdown report wrote one file for both (the second figure over the first)."""
    from types import SimpleNamespace

    from bayes_risk.auditing.report_blocks import Links

    figs: dict = {}
    res = SimpleNamespace(root=None, _report_figures=lambda: figs)
    plt = plots._plt()

    def draw(x):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, x])
        return fig

    for fmt in ("md", "html"):
        links = Links(res, tmp_path / "r.md", fmt)
        a = links.figure(lambda: draw(1), "known_sweep.png", "identification")
        b = links.figure(lambda: draw(2), "known_sweep.png", "attribute")
        c = links.figure(lambda: draw(3), "other", "no suffix")
        d = links.figure(lambda: draw(4), "other", "no suffix again")
        if fmt == "md":
            assert [x.file for x in (a, b, c, d)] == [
                "r_figures/known_sweep.png", "r_figures/known_sweep_2.png", "r_figures/other",
                "r_figures/other_2"]
            assert [n for n, _ in links.figures] == ["known_sweep.png", "known_sweep_2.png",
                                                     "other", "other_2"]
            assert len({png for _, png in links.figures}) == 4
        else:  # drawn once: the HTML report takes the PNGs the Markdown one drew
            assert len(figs) == 4 and a.uri == plots.png_data_uri(figs[("known_sweep.png", 0)])
            assert b.uri == plots.png_data_uri(figs[("known_sweep.png", 1)])


# ------------------------------------------------- what the figures show (issue 66, item 4)
@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    """A release whose identification, attribute, repU and DiSCO lines are past their
    thresholds (CART, the unsynthesized keys released as they are), with two DiSCO targets,
    and the report's figures by file name."""
    from bayes_risk.auditing import report_blocks

    d = tmp_path_factory.mktemp("failing")
    orig = d / "orig.csv"
    br.make_ce_like(400, random_seed=3).to_csv(orig, index=False)
    assert main(["synthesize", str(orig), "--method", "cart", "--synthesize", "Tenure",
                 "Expenditure", "Income", "--categorical", *CATS, "-m", "3", "--random-seed",
                 "1", "--out", str(d / "syn"), "--quiet"]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = br.audit(str(orig), str(d / "syn"), known=["Age", "Urban", "Marital", "Income"],
                       random_seed=2, progressbar=False,
                       settings=br.AuditSettings(attribute_records=range(60),
                                                 targets=["Tenure", "Expenditure"],
                                                 skip=["posterior_identification"]))
    figs: dict = {}
    real = report_blocks.Links.figure

    def keep(self, draw, name, caption):
        def drawn():
            figs[name] = draw()
            return figs[name]
        return real(self, drawn, name, caption)

    report_blocks.Links.figure = keep
    try:
        res.to_html(d / "report.html")
    finally:
        report_blocks.Links.figure = real
    return res, figs


def _texts(fig):
    """Every text of a figure: titles, labels, tick labels, legends, annotations."""
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _hlines(ax):
    """The y values of the axes' horizontal lines (a threshold's, a verdict's)."""
    out = []
    for ln in ax.get_lines():
        y = ln.get_ydata()
        if len(y) == 2 and y[0] == y[1]:
            out.append(float(y[0]))
    for coll in ax.collections:  # hlines
        for seg in getattr(coll, "get_segments", list)():
            if len(seg) == 2 and seg[0][1] == seg[1][1]:
                out.append(float(seg[0][1]))
    return out


def test_every_report_figure_stays_within_its_frame(failing):
    """Nothing a figure writes is cut off by its edge (issue 66: the p_true histogram's legend
    ran past a 6-inch figure, "2.86 %" clipped) and no two dataset labels overlap (issue 66:
    "3 1 5 2 4" printed over each other)."""
    _, figs = failing
    assert {"utility_risk.png", "rank_hist.png", "p_true_hist.png", "radius_search.png"} <= \
        set(figs)
    for name, fig in figs.items():
        fig.draw_without_rendering()
        frame = fig.bbox
        # what is drawn: each axes' ticks, labels, title, legend and texts; the figure's title
        drawn = [(ax.get_title() or "axes", ax.get_tightbbox()) for ax in fig.axes
                 if ax.get_visible() and ax.axison]
        drawn += [(t.get_text(), t.get_window_extent()) for t in fig.texts]
        for what, b in drawn:
            assert b.x0 >= frame.x0 - 1 and b.x1 <= frame.x1 + 1 and b.y0 >= frame.y0 - 1 \
                and b.y1 <= frame.y1 + 1, (name, what, b, frame)
        for ax in fig.axes:
            boxes = [t.get_window_extent() for t in ax.texts if t.get_gid() == "dataset-label"]
            for i, a in enumerate(boxes):
                for b in boxes[i + 1:]:
                    assert not a.overlaps(b), (name, a, b)


def test_the_utility_risk_figure_draws_every_line_past_its_threshold(failing):
    """One panel per verdict line with a value per dataset — every DiSCO target, not the first
    alone (issue 66: the ACS report drew DiSCO of EDUC, 1–2 %, not of DIS, 6.55 %, the line
    past its threshold) — with its threshold drawn, and a line past it marked."""
    res, figs = failing
    fig = figs["utility_risk.png"]
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    per_dataset = [v for v in res.verdicts if v.step in ("identification", "disclosure")]
    assert sum(v.exceeds for v in per_dataset) >= 3
    assert len([v for v in per_dataset if v.threshold_name == "DiSCO"]) == 2
    for v in per_dataset:
        title = next((t for t in panels if v.short in t), None)
        assert title is not None, (v.short, list(panels))
        assert title.startswith("✖") == v.exceeds, title
        assert v.threshold in _hlines(panels[title]), (title, _hlines(panels[title]))
    assert not [v for v in res.verdicts if v.step == "attribute" and any(
        v.short in t for t in panels)]  # pooled only: no value per dataset, no panel


def test_the_rank_and_radius_figures_draw_their_lines_thresholds(failing):
    """The share ranked first is the attribute line: its threshold, in records, over the
    rank-1 bar; the radius sweep (expected match risk in targets) draws the threshold of the
    expected match rate in targets, the rate on its right axis."""
    res, figs = failing
    th = res.plan.thresholds
    att = res.step("attribute").result
    n_rec = int(att.records["rank_min"].notna().sum())
    rank = figs["rank_hist.png"].axes[0]
    assert any(y == pytest.approx(th.prop_top * n_rec) for y in _hlines(rank)), _hlines(rank)
    assert any("threshold of the share ranked first" in t.get_text()
               for t in _texts(figs["rank_hist.png"]))
    sweep = figs["radius_search.png"].axes[0]
    n_targets = int(res.step("identification").result.file["n_targets"])
    assert any(y == pytest.approx(th.expected_match_rate * n_targets) for y in _hlines(sweep))
    assert any("expected match rate (% of targets)" in t.get_text()
               for t in _texts(figs["radius_search.png"]))


@pytest.mark.parametrize("n", [2_000, 100_000])
def test_the_khat_figure_draws_what_the_rule_flags(n):
    """Issue 66: the Pareto k-hat scatter showed about 100 records above the threshold while
    one was flagged (the material rule flags a high k-hat only where it could move p_true by
    more than the tolerance). The flagged records are drawn apart, in red, the high but
    immaterial ones in grey, each counted in the legend and the title; at 10^5 records, where
    a scatter is a smear, a histogram on a log scale (one flagged record still shows)."""
    import dataclasses

    import numpy as np
    from matplotlib.figure import Figure

    from bayes_risk.results._attribute_plots import KHAT_SCATTER_MAX

    rng = np.random.default_rng(1)
    k = rng.gamma(4, 0.08, n)
    high = np.flatnonzero(k > 0.64)
    flagged = high[:3]
    codes = np.full(n, "", dtype=object)
    codes[flagged] = "KHAT_HIGH"
    codes[high[3]] = "LOW_ESS"  # another flag: not a k-hat one
    import pandas as pd

    records = pd.DataFrame({"khat_max": k, "flag_codes": codes}).rename_axis("record")
    base = _plugin_result()
    res = dataclasses.replace(base, records=records, settings={
        **base.settings, "khat_threshold": 0.64, "khat_rule": "material",
        "khat_tolerance": 0.01, "estimator": "stabilised"})
    fig = Figure(figsize=res._figsize("khat"))
    ax = res.plot("khat", ax=fig.add_subplot())
    assert ax.get_title() == f"3 of {n:,} records flagged (k-hat above the threshold and " \
        "material)"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("flagged KHAT_HIGH: p_true may move more (3)") for t in labels)
    assert f"above, not flagged: p_true moves by less than 0.01 ({high.size - 3:,})" in labels
    if n <= KHAT_SCATTER_MAX:
        red = [ln for ln in ax.get_lines() if ln.get_color() == "#c0392b"]
        assert len(red) == 1 and sorted(red[0].get_xdata()) == sorted(flagged)
        assert 0.64 in _hlines(ax)
    else:
        assert ax.get_yscale() == "log"
        # stacked: below, immaterial (each bar its own count on the other); the flagged
        # records one mark each
        counts = [sum(p.get_height() for p in c) for c in ax.containers]
        assert counts == [n - high.size, high.size - 3]
        red = [ln for ln in ax.get_lines() if ln.get_color() == "#c0392b"]
        assert len(red) == 1 and sorted(red[0].get_xdata()) == sorted(k[flagged])
        assert any(line.get_xdata()[0] == 0.64 for line in ax.get_lines())


def _plugin_result():
    """An attribute result of the CART plug-in (its records replaced by the test)."""
    from bayes_risk.models import CARTPlugin, CARTSynthesizer

    ce = br.make_ce_like(120, random_seed=2)[["Age", "Urban", "Marital", "Tenure"]]
    schema = br.infer_schema(ce, categorical=["Urban", "Marital", "Tenure"])
    cart = CARTSynthesizer().fit(ce, schema=schema, synthesized=["Tenure"], random_seed=1)
    syn = cart.synthesize(2, random_seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return br.attribute_risk(ce, syn, model=CARTPlugin(cart, ce), records=range(5),
                                 random_seed=3, progressbar=False)


def test_verdict_lines_are_computed_once_per_state_of_the_result(audited, monkeypatch, tmp_path):
    """The reports, the status and the headline read the lines computed once; another plan,
    threshold set, steps list or step, or a step's status, result, extra, reason or warnings
    changed in place computes them again (the lines of the changed result, not the old ones)."""
    from bayes_risk.auditing import result as result_module

    calls = []
    real = result_module.verdict_lines

    def counting(plan, steps):
        calls.append(1)
        return real(plan, steps)

    monkeypatch.setattr(result_module, "verdict_lines", counting)
    res = copy.copy(audited)
    res.steps = [copy.copy(st) for st in audited.steps]
    res.to_html(tmp_path / "r.html")
    res.to_markdown(tmp_path / "r.md")
    lines = (res.verdicts, res.baselines, res.status, res.headline)
    assert len(calls) == 1
    for change in (
        lambda r: setattr(r, "plan", copy.copy(r.plan)),
        lambda r: setattr(r.plan, "thresholds", br.Thresholds.parse({"s_pmse": 0.0})),
        lambda r: setattr(r, "steps", list(r.steps)),
        lambda r: r.steps.__setitem__(0, copy.copy(r.steps[0])),
        *(lambda r, a=a: setattr(r.steps[0], a, copy.copy(getattr(r.steps[0], a)))
          for a in ("result", "extra", "warnings")),
        lambda r: setattr(r.steps[0], "reason", "changed"),
    ):
        calls.clear()
        change(res)
        _ = res.verdicts, res.baselines, res.status, res.headline
        assert len(calls) == 1
    # the lines are the changed result's: its threshold of 0 decides the S_pMSE line
    assert not any(v.exceeds for v in lines[0] if v.threshold_name == "s_pmse")
    assert any(v.exceeds for v in res.verdicts if v.threshold_name == "s_pmse")
