"""The result family: one contract for every result class (bayes_risk.results).

Every result's ``summary()`` is a :class:`~bayes_risk.results.Summary` with non-empty text,
Markdown and HTML; ``to_dict()`` is strict JSON and is what the command line writes to
``summary.json``; ``to_dataframe()`` is a DataFrame; every plot kind draws a figure (Agg, no
pyplot); warnings are structured. Parametrised over every result class, so a new class that is
not built here fails ``test_every_result_class_is_covered``.
"""

from __future__ import annotations

import inspect
import json
import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
import bayes_risk.results as results
from bayes_risk import MatchSpec
from bayes_risk._io import to_jsonable
from bayes_risk._units import units_of
from bayes_risk.attribute.file_summary import file_summary
from bayes_risk.exceptions import ValidationError
from bayes_risk.results import ResultWarning, RiskResult, Summary
from bayes_risk.results._format import text_table
from bayes_risk.results._summary import SHORT_ROWS, TEXT_WIDTH
from bayes_risk.utility import std_coef_diff

matplotlib.use("Agg")

CAT = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def ce():
    d = br.make_ce_like(300, random_seed=1)
    return d[["Age", "Urban", "Marital", "Tenure", "Income"]]


@pytest.fixture(scope="module")
def release(ce):
    """Three CART releases of Tenure and Marital (and the synthesizer)."""
    from bayes_risk.models import CARTSynthesizer

    schema = br.infer_schema(ce, categorical=CAT)
    cart = CARTSynthesizer().fit(ce, schema=schema, synthesized=["Tenure", "Marital"],
                                 random_seed=1)
    return cart, schema, cart.synthesize(3, random_seed=2)


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _attribute(ce, release):
    from bayes_risk.models import CARTPlugin

    cart, _, syn = release
    return _quiet(br.attribute_risk, ce, syn, model=CARTPlugin(cart, ce), records=range(12),
                  random_seed=3, progressbar=False)


def _identification(ce, release, aggregation):
    return _quiet(br.identification_risk, ce, release[2], known=["Age", "Urban", "Marital"],
                  synthesized=["Marital"],
                  aggregation=aggregation, progressbar=False)


def _utility(ce, release):
    return _quiet(br.utility_summary, ce, release[2], schema=release[1], random_seed=1,
                  progressbar=False)


def _disclosure(ce, release):
    return _quiet(br.disclosure_measures, ce, release[2], keys=["Age", "Urban"], target="Marital",
                  schema=release[1])


def _visit_orders(ce, release):
    from bayes_risk.models import CARTSynthesizer

    return _quiet(br.compare_visit_orders, ce, synthesizer=CARTSynthesizer(),
                  orders=[("Tenure", "Marital"), ("Marital", "Tenure")],
                  known=["Age", "Tenure", "Marital"],
                  schema=release[1], m=2, random_seed=4, progressbar=False)


def _membership():
    """A Beta-Bernoulli model with exact posterior draws (tests/membership shows the case)."""
    from scipy import stats

    from bayes_risk.data import infer_schema
    from bayes_risk.models import ArrayModel

    def loglik(records, theta):
        x = records["a"].astype(int).to_numpy()[None, :]
        t = np.asarray(theta)[:, None]
        return x * np.log(t) + (1 - x) * np.log1p(-t)

    y = pd.DataFrame({"a": ["1"] * 5 + ["0"] * 3})
    z = pd.DataFrame({"a": ["1"] * 6 + ["0"] * 2})
    schema = infer_schema(y, categorical=["a"], synthesized=["a"])
    rng = np.random.default_rng(1)
    model = ArrayModel(loglik, stats.beta(6, 4).rvs(400, random_state=rng), schema)
    aug = model.with_draws(stats.beta(12, 6).rvs(400, random_state=rng))
    return _quiet(br.membership_risk, model, y, z, holdout=pd.DataFrame({"a": ["1", "0"]}),
                  ratio=br.RatioSpec(augmented=[aug]), attack=br.AttackSpec(bootstrap=20),
                  random_seed=2)


def _holdout(ce):
    """Records of the same population that the releases did not use."""
    return br.make_ce_like(300, random_seed=9)[list(ce.columns)]


def _business(kind):
    from bayes_risk.attribute.business import closest_match, relative_difference

    if kind == "rd":  # Income is not synthesized here: the measure reads any numeric column
        return lambda ce, rel: relative_difference(ce, rel[2], columns=["Income", "Age"], top=2)
    return lambda ce, rel: closest_match(ce, rel[2], keys=["Age", "Income"])


BUILDERS = {
    "AttributeRiskResult": _attribute,
    "RelativeDifferenceResult": _business("rd"),
    "ClosestMatchResult": _business("cm"),
    "IdentificationResult": lambda ce, rel: _identification(ce, rel, "pooled"),
    "IdentificationResult-per_dataset": lambda ce, rel: _identification(ce, rel, "per_dataset"),
    "RadiusSweepResult": lambda ce, rel: _quiet(
        br.radius_sweep, ce, rel[2], known=["Urban", "Income"], synthesized=["Income"],
        radii=[0.05, 0.1, 0.2],
        progressbar=False),
    "KnowledgeSweepResult": lambda ce, rel: _quiet(
        br.known_sweep, ce, rel[2], candidates=["Age", "Urban", "Marital"],
        match=MatchSpec(radius={"Age": 0.1}),
        schema=rel[1], progressbar=False),
    "PMSEResult": lambda ce, rel: _quiet(br.pmse, ce, rel[2], schema=rel[1], random_seed=1),
    "UtilitySummary": _utility,
    "CombinedScalar": lambda ce, rel: br.combine_scalar([1.0, 1.2, 0.9], [0.04, 0.05, 0.03]),
    "CombinedMultivariate": lambda ce, rel: _quiet(
        br.combine_multivariate, [[1.0, 2.0], [1.1, 2.2], [0.9, 1.9]], [np.eye(2) * 0.05] * 3),
    "OverlapResult": lambda ce, rel: br.ci_overlap([0.0, 1.0], [1.0, 2.0], [0.5, 2.5],
                                                   [1.5, 3.0]),
    "CoefDiffResult": lambda ce, rel: std_coef_diff([1.0, 2.0], [1.1, 1.8], [0.1, 0.2]),
    "DisclosureMeasures": _disclosure,
    "ReplicatedUniques": lambda ce, rel: _disclosure(ce, rel).replicated_uniques,
    "DisclosureByTarget": lambda ce, rel: results.DisclosureByTarget({
        "Marital": _disclosure(ce, rel),
        "Tenure": _quiet(br.disclosure_measures, ce, rel[2], keys=["Age", "Urban"], target="Tenure",
                         schema=rel[1])}),
    "VisitOrderComparison": _visit_orders,
    "DifferencingResult": lambda ce, rel: br.differencing_check(ce, rel[2]),
    "MembershipRiskResult": lambda ce, rel: _membership(),
    "OriginalRisk": lambda ce, rel: br.original_risk(ce, keys=["Age", "Urban", "Marital"],
                                                     weights=np.full(len(ce), 25.0),
                                                     sensitive="Tenure"),
    "SinglingOutResult": lambda ce, rel: _quiet(
        br.singling_out_risk, ce, rel[2], holdout=_holdout(ce), n_attacks=30, schema=rel[1],
        random_seed=5),
    "LinkabilityResult": lambda ce, rel: _quiet(
        br.linkability_risk, ce, rel[2], holdout=_holdout(ce),
        aux_columns=(["Age", "Urban"], ["Marital", "Income"]), n_attacks=30, n_neighbors=2,
        schema=rel[1], random_seed=5),
    "InferenceResult": lambda ce, rel: _quiet(
        br.inference_risk, ce, rel[2], holdout=_holdout(ce), secret=["Income", "Tenure"],
        n_attacks=30, schema=rel[1], random_seed=5),
}

_CACHE: dict[str, RiskResult] = {}


@pytest.fixture(params=sorted(BUILDERS))
def result(request, ce, release):
    name = request.param
    if name not in _CACHE:
        _CACHE[name] = BUILDERS[name](ce, release)
    return _CACHE[name]


def test_every_result_class_is_covered():
    classes = {n for n, c in inspect.getmembers(results, inspect.isclass)
               if issubclass(c, RiskResult) and c is not RiskResult}
    assert classes == {n.split("-")[0] for n in BUILDERS}


def test_public_import_paths_are_the_same_classes():
    import bayes_risk.attribute
    import bayes_risk.attribute.api
    import bayes_risk.disclosure
    import bayes_risk.identification
    import bayes_risk.identification.radius
    import bayes_risk.utility
    import bayes_risk.visit_orders

    assert br.AttributeRiskResult is bayes_risk.attribute.AttributeRiskResult
    assert bayes_risk.attribute.api.AttributeRiskResult is results.AttributeRiskResult
    assert br.IdentificationResult is bayes_risk.identification.IdentificationResult
    assert bayes_risk.identification.radius.RadiusSweepResult is results.RadiusSweepResult
    assert br.KnowledgeSweepResult is bayes_risk.identification.KnowledgeSweepResult \
        is results.KnowledgeSweepResult
    assert br.PMSEResult is bayes_risk.utility.PMSEResult is results.PMSEResult
    assert bayes_risk.utility.UtilitySummary is results.UtilitySummary
    assert bayes_risk.disclosure.DisclosureMeasures is results.DisclosureMeasures
    assert br.OriginalRisk is bayes_risk.disclosure.OriginalRisk is results.OriginalRisk
    assert bayes_risk.visit_orders.VisitOrderComparison is results.VisitOrderComparison


def test_summary_renders_in_every_format(result):
    s = result.summary()
    assert isinstance(s, Summary)
    text, md, html = s.as_text(), s.as_markdown(), s.as_html()
    assert text.startswith(s.title) and str(s) == text
    assert str(result) == repr(result) == s.as_text(max_rows=SHORT_ROWS)
    assert md.startswith("### " + s.title)
    assert html.startswith('<div class="bayes-risk-summary">') and html.endswith("</div>")
    assert s._repr_html_() == html
    assert result._repr_html_() == s.as_html(max_rows=SHORT_ROWS)
    assert s.tables and all(isinstance(t, pd.DataFrame) for t in s.tables.values())
    for name, table in s.tables.items():
        assert name in text and name in md and list(table.columns)[0] in html


def test_a_printed_result_is_a_short_summary_within_100_columns(result):
    """Issue 66: ``print(audit)`` wrote pandas tables with lines of up to 1,020 characters.
    Every result prints (and shows at a prompt) its summary within 100 columns, at most
    SHORT_ROWS rows of a table, with where the rest is; ``summary()`` keeps every row."""
    text = str(result)
    assert max(map(len, text.splitlines())) <= TEXT_WIDTH, text
    s = result.summary()
    assert max(map(len, s.as_text().splitlines())) <= TEXT_WIDTH
    for name, table in s.tables.items():
        if len(table) > SHORT_ROWS:
            assert f"… {len(table) - SHORT_ROWS:,} more rows" in text, name
            assert f'result.summary().tables["{name}"]' in text or \
                s.table_sources.get(name, "§") in text


def test_a_wide_table_wraps_within_its_width():
    """A table wider than the width: headers and text cells wrap within their columns, numbers
    stay whole; one that cannot fit so is cut into blocks of columns, its first repeated."""
    df = pd.DataFrame({"measure": ["expected match rate at the maximising radius", "repU"],
                       "value": [2.2826, 10.0125],
                       "why it matters to the board": ["the intruder holding every dataset "
                                                       "pools them", "unique and reproduced"]})
    lines = text_table(df, 4, width=40).splitlines()
    assert max(map(len, lines)) <= 40 and lines[0].startswith("measure")
    assert any("2.283" in ln for ln in lines) and any("10.01" in ln for ln in lines)
    words = " ".join(ln for ln in lines).split()
    assert {"maximising", "pools", "reproduced", "board"} <= set(words)
    wide = pd.DataFrame({f"column_number_{k}": [float(k)] for k in range(9)})
    blocks = text_table(wide, 4, width=40).split("\n\n")
    assert len(blocks) > 1 and all(b.startswith("column_number_0") for b in blocks)
    assert all(len(ln) <= 40 for b in blocks for ln in b.splitlines())
    assert text_table(df, 4, width=None) == text_table(df, 4)


def test_to_dict_is_strict_json(result):
    d = result.to_dict()
    back = json.loads(json.dumps(d, allow_nan=False))
    assert back == to_jsonable(d)


def test_to_dataframe(result):
    df = result.to_dataframe()
    assert isinstance(df, pd.DataFrame) and len(df) > 0


def test_every_plot_kind_draws_on_pyplot_and_returns_the_axes(result):
    """pandas' and ArviZ's convention: without ``ax`` a plot draws on pyplot's current Axes (a
    new pyplot figure when none is open) and returns the Axes, so ``result.plot();
    plt.savefig(path)`` writes the plot (it wrote a blank PNG when plot made a figure pyplot did
    not know)."""
    import io

    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    for kind in type(result).plot_kinds:
        plt.close("all")
        if kind == "per_dataset" and getattr(result, "per_dataset", True) is None:
            with pytest.raises(ValidationError, match="per_dataset"):
                result.plot(kind)
            continue
        if kind == "running_estimate" and not result.has_uncertainty:
            # posterior replicates only (drawn in identification/test_replicates.py)
            with pytest.raises(ValidationError, match="running_estimate"):
                result.plot(kind)
            continue
        ax = result.plot(kind)
        assert isinstance(ax, Axes) and ax is plt.gca() and ax.figure is plt.gcf()
        assert plt.get_fignums() == [ax.figure.number]
        assert tuple(ax.figure.get_size_inches()) == pytest.approx(result._figsize(kind))
        png = io.BytesIO()
        plt.savefig(png, format="png", dpi=40)
        blank = io.BytesIO()
        plt.figure(figsize=tuple(ax.figure.get_size_inches())).savefig(blank, format="png",
                                                                        dpi=40)
        assert png.getvalue() != blank.getvalue(), f"{kind}: plt.savefig wrote a blank figure"
        if kind == "khat" and result.records["khat_max"].isna().all():
            # a plug-in likelihood has no importance weights: the figure says there is no k-hat
            # rather than drawing empty axes
            assert any("no Pareto k-hat" in t.get_text() for t in ax.texts)
            continue
        if kind == "compare":  # a panel of plots: the host Axes returned, its panels hold data
            assert ax.axison is False and sum(a.has_data() for a in ax.figure.axes) > 1
            continue
        assert ax.has_data()
    with pytest.raises(ValidationError, match="kind of|has no plot"):
        result.plot("no-such-kind")


def test_plot_into_given_axes(result):
    """``ax=`` draws on the Axes given (any figure: here one panel of two, without pyplot) and
    returns them; the other panel is not moved (no ``tight_layout`` of the caller's figure)."""
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from bayes_risk.results._base import plot_figure

    kinds = type(result).plot_kinds
    if not kinds:
        pytest.skip(f"{type(result).__name__} has no plot")
    fig = Figure()
    left, right = fig.subplots(1, 2)
    where = right.get_position().bounds
    assert result.plot(kinds[0], ax=left) is left
    assert right.get_position().bounds == where
    assert not plt.get_fignums()  # nothing drawn on (or opened in) pyplot
    # what the command line and the audit report save: a figure of its own, without pyplot
    own = plot_figure(result, kinds[0])
    assert isinstance(own, Figure) and own.axes and not plt.get_fignums()


def test_a_plot_kind_is_drawn_by_the_method_marked_for_it():
    """``plot(kind)`` calls the method marked ``@draws(kind)`` (no name built from the kind); a
    subclass's mark replaces its base's, and a kind without a marked method fails when the
    class is made, not when a user first plots it."""
    from bayes_risk.results._base import draws

    class Base(RiskResult):
        plot_kinds = ("dots",)

        def summary(self):
            return Summary("x", {})

        def to_dataframe(self):
            return pd.DataFrame()

        @draws("dots")
        def any_name(self, ax, size=1.0):
            ax.plot([0, 1], [0, size])

    class Sub(Base):
        @draws("dots")
        def other_name(self, ax, size=1.0):
            ax.plot([0, 1, 2], [0, size, 0])

    from matplotlib.figure import Figure

    ax = Figure().subplots()
    assert Sub().plot("dots", ax=ax, size=2.0) is ax
    assert list(ax.lines[0].get_xdata()) == [0, 1, 2] and ax.lines[0].get_ydata()[1] == 2.0
    assert Base._drawers["dots"] is Base.__dict__["any_name"]
    with pytest.raises(TypeError, match=r"Broken.plot_kinds \['bars'\] have no method marked"):
        class Broken(RiskResult):
            plot_kinds = ("bars",)

            def _plot_bars(self, ax):  # the old convention: a name is not a mark
                pass


def test_figsize_without_ax_opens_a_new_figure(result):
    import matplotlib.pyplot as plt

    kinds = [k for k in type(result).plot_kinds if k not in ("running_estimate", "per_dataset")]
    if not kinds:
        pytest.skip(f"{type(result).__name__} has no plot that every such result draws")
    first = plt.figure()
    ax = result.plot(kinds[0], figsize=(3.0, 2.0))
    assert ax.figure is not first and tuple(ax.figure.get_size_inches()) == (3.0, 2.0)
    assert result.plot(kinds[0]).figure is ax.figure  # then the current figure is used


def test_warnings_are_structured(result):
    sw = result.structured_warnings
    assert all(isinstance(w, ResultWarning) and w.code and w.message and w.where for w in sw)
    codes = [str(c) for c in getattr(result, "warnings", [])]
    flags = set()
    if isinstance(result, results.AttributeRiskResult):
        flags = {c for f in result.records["flag_codes"] for c in f.split(";") if c}
    assert set(codes) | flags == {w.code for w in sw}
    json.dumps([w.to_dict() for w in sw])


def test_attribute_warnings_name_records_and_fits():
    """Record flags say which records; MCMC warnings say which fit."""
    from bayes_risk.results import AttributeRiskResult

    recs = pd.DataFrame({"flag_codes": ["KHAT_HIGH", "", "KHAT_HIGH;LOW_ESS_Q"]},
                        index=pd.Index([4, 9, 11], name="record"))
    res = AttributeRiskResult.__new__(AttributeRiskResult)
    for k, v in {"records": recs, "warnings": ["H_TOO_SMALL", "RHAT_HIGH"],
                 "mcmc": {"warnings": [{"code": "RHAT_HIGH", "fit": "augmented_2",
                                        "quantities": ["alpha"], "message": "R-hat 1.2"}]}
                 }.items():
        object.__setattr__(res, k, v)
    sw = {(w.code, w.where): w.message for w in res.structured_warnings}
    assert ("KHAT_HIGH", "2 record(s): 4, 11") in sw
    assert ("LOW_ESS_Q", "1 record(s): 11") in sw
    assert sw[("RHAT_HIGH", "fit augmented_2 (alpha)")] == "R-hat 1.2"
    assert ("H_TOO_SMALL", "file") in sw and len(sw) == 4


def test_attribute_to_dict_is_the_file_summary_and_records(ce, release):
    res = _CACHE.get("AttributeRiskResult") or _attribute(ce, release)
    d = res.to_dict()
    fs = file_summary(res, kind="hrw")
    assert {k: fs[k] for k in d} == d and fs["kind"] == "hrw" and d["n_records"] == 12
    assert "records" not in d and res.to_dict(records=True)["records"]["record"] == list(
        range(12))
    two = res.to_dict(thresholds=(0.2, 0.5))
    assert set(two["all"]["n_p_true_above"]) == {"0.2", "0.5"}
    assert res.summary().tables["File-level summary"]["records"].tolist() == [
        "all", "not flagged", "flagged"]


def test_engine_functions_act_on_the_result_and_it_has_none_of_them(ce, release):
    # the result is a leaf (it imports nothing of the engine): what computes from it is the
    # engine's function taking it first, as ArviZ's functions take ELPDData
    res = _CACHE.get("AttributeRiskResult") or _attribute(ce, release)
    assert not hasattr(res, "with_prior") and not hasattr(res, "file_summary")
    assert file_summary(res, kind="hrw", thresholds=(0.3,))["kind"] == "hrw"
    with pytest.raises(ValidationError, match="kind of file_summary"):
        file_summary(res, kind="nope")
    new = br.with_prior(res, prior="truth-weighted:2")
    assert new.settings["prior"] != res.settings["prior"] and new.records is not res.records


def test_identification_summary_holds_the_file_measures(ce, release):
    res = _identification(ce, release, "per_dataset")
    table = res.summary().tables["File-level measures"]
    row = table.set_index("measure").loc["expected match risk (targets, sum of IR)"]
    assert row["value"] == res.file["expected_match_risk"]
    per = res.per_dataset["expected_match_risk"]
    assert (row["min over datasets"], row["max over datasets"]) == (min(per), max(per))
    assert res.to_dict()["summary"]["expected_match_risk"] == pytest.approx(
        res.file["expected_match_risk"])


def test_summary_text_layout():
    s = Summary("T", header=[("a", 1.23456789), ("long label", None)],
                tables={"tab": pd.DataFrame({"x": [1, 2], "y": [np.nan, 0.5]})},
                notes=["note"], warnings=[ResultWarning("CODE_X", "m <b>", "dataset 2")])
    assert s.as_text().splitlines() == [
        "T", "=", "a:          1.235", "long label: —", "", "tab", "x   y", "1 nan",
        "2 0.5", "", "note", "", "Warnings:", "  [CODE_X] (dataset 2) m <b>"]
    assert "| x | y |" in s.as_markdown() and "- `CODE_X` (dataset 2): m <b>" in s.as_markdown()
    assert "m &lt;b&gt;" in s.as_html() and "<b>" not in s.as_html()


# ------------------------------------------------------------------ the command line's files
def _cli(argv):
    from bayes_risk.cli import main

    assert main(argv) == 0


def _written(path):
    d = json.loads(path.read_text())
    for k in ("command", "inputs", "input_sha256", "run_warnings"):  # the run's, not the result's
        d.pop(k)
    # the units of what it holds, named beside it (bayes_risk._units): the file's, not the result's
    assert d.pop("units") == units_of(d)
    return d


@pytest.fixture(scope="module")
def files(ce, release, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("results_cli")
    paths = [tmp / "orig.csv"] + [tmp / f"syn{l}.csv" for l in (1, 2, 3)]
    ce.to_csv(paths[0], index=False)
    for p, d in zip(paths[1:], release[2].datasets, strict=True):
        d.to_csv(p, index=False)
    return tmp, [str(p) for p in paths]


def test_cli_identification_summary_json_is_to_dict(ce, release, files, capsys):
    tmp, paths = files
    out = tmp / "ident"
    _cli(["identification", *paths, "--known-unsynthesized", "Urban", "--known-synthesized",
          "Income", "--radius", "Income=0.1", "--radius-sweep", "0.05,0.1", "-q",
          "--out", str(out)])
    written = _written(out / "summary.json")
    res = _quiet(br.identification_risk, ce, [pd.read_csv(p) for p in paths[1:]],
                 known=["Urban", "Income"],
                 synthesized=["Income"], match=MatchSpec(radius={"Income": 0.1}), progressbar=False)
    expected = res.to_dict()
    expected["settings"]["records_output"] = written["settings"]["records_output"]
    sweep = written.pop("radius_sweep")
    assert written == to_jsonable(expected)
    assert sweep["r_star"] is not None and (out / "radius_sweep.png").stat().st_size > 0


def test_cli_disclosure_and_utility_summary_json_is_to_dict(ce, release, files, capsys):
    tmp, paths = files
    syn = [pd.read_csv(p) for p in paths[1:]]
    _cli(["disclosure", *paths, "--keys", "Age", "Urban", "--target", "Marital",
          "--categorical", *CAT, "-q", "--out", str(tmp / "disc")])
    res = _quiet(br.disclosure_measures, ce, syn, keys=["Age", "Urban"], target="Marital",
                 categorical=CAT)
    assert _written(tmp / "disc" / "summary.json") == res.to_dict()
    _cli(["utility", *paths, "--categorical", *CAT, "--random-seed", "5", "--quiet",
          "--out", str(tmp / "util")])
    written = _written(tmp / "util" / "summary.json")
    u = _quiet(br.utility_summary, ce, syn, categorical=CAT, random_seed=5, progressbar=False)
    assert written["pmse"] == u.to_dict()["pmse"]
    assert written["interval_overlap"] == u.to_dict()["interval_overlap"]


def _headline_figures(name: str, r: RiskResult) -> list[str]:
    """What the headline of ``r`` must print: each figure formatted from the result's own
    fields here, not by the headline's code."""
    if name.startswith("IdentificationResult"):
        f, n = r.file, int(r.file["n_targets"])
        out = [f"expected match rate {100 * f['expected_match_rate']:.3g} % = "
               f"{f['expected_match_risk']:.4g} of {n:,} targets",
               f"true match rate {100 * f['true_match_rate_targets']:.3g} % of the targets",
               f"false match rate {100 * f['false_match_rate']:.3g} % of the unique matches",
               "of 3 synthetic dataset(s)"]
        if name.endswith("per_dataset"):  # the smaller figure: says the pooled one is larger
            out.append("one holding all 3 pools them (aggregation='pooled', the default)")
        return out
    if name == "RadiusSweepResult":
        return [f"risk-maximising radius r* = {r.r_star} (varying Income"]
    if name == "AttributeRiskResult":
        d = r.to_dict()
        un = d["unflagged"]
        return [f"attribute risk of {d['n_records']} records ({d['n_flagged']} flagged",
                f"share ranked first {100 * un['prop_top']:.3g} %",
                f"mean p_true {100 * un['mean_p_true']:.3g} %",
                f"share with evidence {100 * un['prop_evidence']:.3g} %",
                "between-chain check not run: "]
    if name == "RelativeDifferenceResult":
        s = r.smallest
        return [f"smallest {s['relative_difference']:.3g} ({s['column']}, rank {int(s['rank'])}",
                f"{100 * r.share_within_delta:.3g} % of the targets within {r.delta:g}"]
    if name == "ClosestMatchResult":
        lo, hi = r.interval
        return [f"closest match: {100 * r.value:.3g} % of {len(r.table):,} records",
                f"95 % interval {100 * lo:.3g}–{100 * hi:.3g} %",
                f"random guess {100 * r.random_guess:.3g} %"]
    if name == "UtilitySummary":
        p = r.pmse
        return ["utility of m = 3 synthetic dataset(s) vs the original (n = 300)",
                "synthesized columns (inferred: columns differing from the original): "
                + ", ".join(r.synthesized),
                f"mean {p.mean_pmse:.6g}",
                f"S_pMSE (pMSE / null expectation): mean {p.mean_ratio:.4g}",
                f"estimands): mean {r.mean_overlap:.4f}",
                f"quality score (SDMetrics' definitions): {r.quality.score:.4f}"]
    if name == "MembershipRiskResult":
        f = r.file
        return [f"membership risk of {f['n_members']} members against {f['n_non_members']}",
                f"{100 * f['share_members_above']:.3g} % of the members",
                f"AUC - 0.5 = {f['auc_advantage']:.3f}"]
    if name == "OriginalRisk":
        g = r.global_risk
        return [f"{g['expected_reidentifications']:,.4g} expected re-identifications",
                f"global risk {g['global_risk_pct']:.3g} %",
                *(f"k = {k}: {v['n_violating']:,} ({v['pct_violating']:.3g} %)"
                  for k, v in r.k_anonymity.items()),
                f"SUDA2: {r.suda['n_records_with_msu']:,} records",
                f"l-diversity of Tenure: {r.l_diversity['Tenure']['n_records_l1']:,} records"]
    return []


#: the results whose ``headline()`` is the text a command prints (issue 87)
_HEADLINED = ["AttributeRiskResult", "ClosestMatchResult", "IdentificationResult",
              "IdentificationResult-per_dataset", "MembershipRiskResult", "OriginalRisk",
              "RadiusSweepResult", "RelativeDifferenceResult", "UtilitySummary"]


@pytest.mark.parametrize("name", _HEADLINED)
def test_headline_prints_the_results_own_figures(name, ce, release):
    """Issue 87: a command prints its result's ``headline()`` (a few lines), and the library
    user gets the same lines; each figure in it is the result's."""
    if name not in _CACHE:
        _CACHE[name] = BUILDERS[name](ce, release)
    text = _CACHE[name].headline()
    assert isinstance(text, str) and text
    for want in _headline_figures(name, _CACHE[name]):
        assert want in text, (want, text)


@pytest.mark.parametrize("name", ["SinglingOutResult", "LinkabilityResult", "InferenceResult"])
def test_attack_headline_text_is_its_headline_rows(name, ce, release):
    """An attack's line: its label, then each headline row's risk [interval] (3 decimals)."""
    if name not in _CACHE:
        _CACHE[name] = BUILDERS[name](ce, release)
    r = _CACHE[name]
    text = r.headline_text()
    label = {"SinglingOutResult": "singling out: ",
             "LinkabilityResult": "linkability of (Age, Urban) with (Marital, Income): ",
             "InferenceResult": "inference from every other column: "}[name]
    assert text.startswith(label), text
    for _, row in r.headline().iterrows():
        assert f"{row['risk']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]" in text, text
