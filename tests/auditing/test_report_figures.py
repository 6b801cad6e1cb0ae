"""The audit report's figures are drawn once per result: a second report (HTML or Markdown, as
``bayes-risk audit`` writes both) reuses their PNGs, byte for byte what drawing them again gives,
and a result that changed draws them again."""

from __future__ import annotations

import copy
import warnings

import pytest

import bayes_risk as br
from bayes_risk.auditing import plots
from bayes_risk.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.BayesRiskWarning")

CATS = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """A CE-like table, a CART release of it (m = 2) and its audit: marginal figures,
    the radius sweep and the attribute step's figures (two: no k-hat under the plug-in)."""
    d = tmp_path_factory.mktemp("release")
    orig = d / "orig.csv"
    br.make_ce_like(160, random_seed=5).to_csv(orig, index=False)
    assert main(["synthesize", str(orig), "--method", "cart", "--synthesize", "Tenure",
                 "Income", "--categorical", *CATS, "-m", "2", "--random-seed", "1",
                 "--out", str(d / "syn"), "--quiet"]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return br.audit(str(orig), str(d / "syn"), known=["Age", "Urban", "Marital"],
                        random_seed=2, progressbar=False,
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


def test_second_report_reuses_the_figures_with_the_same_bytes(audited, drawn, tmp_path):
    res = copy.copy(audited)  # a result of its own (no figures drawn yet)
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
    marg = res.step("utility").extra["marginals"]
    v = next(f.name for f in files if f.name.startswith("compare_"))[len("compare_"):-4]
    fig = plots.marginal_figure(marg, v)
    fig.savefig(tmp_path / "direct.png", dpi=80)
    plots._plt().close(fig)
    assert (tmp_path / "direct.png").read_bytes() == (tmp_path / "r_figures"
                                                       / f"compare_{v}.png").read_bytes()


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

    from bayes_risk.auditing.render import _Links

    figs: dict = {}
    res = SimpleNamespace(root=None, _report_figures=lambda: figs)
    plt = plots._plt()

    def draw(x):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, x])
        return fig

    for fmt in ("md", "html"):
        links = _Links(res, tmp_path / "r.md", fmt)
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
