"""Utility against identification risk (Hornby & Hu 2021, Figs 8-10): the points are the
package's own per-dataset measures, repeated syntheses are reproducible by seed, and the figure
draws the quartile rectangles it claims."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk import MatchSpec
from bayes_risk.exceptions import ValidationError

KNOWN_U, KNOWN_S = ["a", "g"], ["y"]
KNOWN = [*KNOWN_U, *KNOWN_S]


def _table(n: int = 120, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.integers(20, 70, n).astype(float),
                         "g": rng.choice(["u", "v", "w"], n),
                         "y": np.round(rng.lognormal(10, 0.5, n), 0)})


def _release(orig: pd.DataFrame, m: int, seed: int) -> list[pd.DataFrame]:
    rng = np.random.default_rng(seed)
    return [orig.assign(y=orig["y"] * rng.uniform(0.9, 1.1, len(orig))) for _ in range(m)]


class _Shuffler:
    """A synthesizer whose releases permute y within g — enough to exercise the loop."""

    def __init__(self, orig: pd.DataFrame) -> None:
        self.orig = orig

    def synthesize(self, m: int, *, random_seed=None) -> list[pd.DataFrame]:
        rng = np.random.default_rng(random_seed)
        return [self.orig.assign(y=self.orig["y"] * rng.uniform(0.8, 1.2, len(self.orig)))
                for _ in range(m)]


OPTS = dict(categorical=["g"], match=MatchSpec(radius={"a": 0.1, "y": 0.05}))


def test_points_are_the_packages_per_dataset_measures():
    orig = _table()
    syn = _release(orig, 4, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pts = br.utility_risk_points(orig, syn, known=KNOWN, synthesized=KNOWN_S, label="s1",
                                     **OPTS)
        util = br.pmse(orig, syn, categorical=["g"], synthesized=["y"])
        risk = br.identification_risk(orig, syn, known=KNOWN, synthesized=KNOWN_S,
                                      aggregation="per_dataset",
                                      progressbar=False, **OPTS)
    assert list(pts["dataset"]) == [1, 2, 3, 4] and set(pts["scenario"]) == {"s1"}
    np.testing.assert_array_equal(pts["pmse"], util.pmse)
    np.testing.assert_array_equal(pts["s_pmse"], util.s_pmse)
    for c in ("expected_match_risk", "expected_match_rate", "true_match_rate_targets",
              "false_match_rate"):
        np.testing.assert_array_equal(pts[c], risk.per_dataset[c])
    # the rate is the risk per target, the scale of Hornby & Hu's Fig. 10
    np.testing.assert_allclose(pts["expected_match_rate"], pts["expected_match_risk"] / len(orig))
    with pytest.raises(ValidationError, match="aggregation"):
        br.utility_risk_points(orig, syn, known=KNOWN, synthesized=KNOWN_S, aggregation="pooled",
                               **OPTS)


def test_repeated_syntheses_mean_over_each_release_and_reproducible():
    orig = _table()
    synth = _Shuffler(orig)
    kw = dict(m=(1, 3), n_repeats=3, progressbar=False, **OPTS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = br.repeated_syntheses(orig, synthesizer=synth, known=KNOWN, synthesized=KNOWN_S,
                                  random_seed=7,
                                  **kw)
        b = br.repeated_syntheses(orig, synthesizer=synth, known=KNOWN, synthesized=KNOWN_S,
                                  random_seed=7,
                                  **kw)
        c = br.repeated_syntheses(orig, synthesizer=synth, known=KNOWN, synthesized=KNOWN_S,
                                  random_seed=8,
                                  **kw)
    pd.testing.assert_frame_equal(a, b)
    assert not a["pmse"].equals(c["pmse"])
    assert list(a["m"]) == [1, 1, 1, 3, 3, 3] and list(a["repeat"]) == [0, 1, 2] * 2
    # row (m = 3, repeat 2) is the mean over the datasets of the release of its own seed:
    # child 2 of child 1 (the second m) of the seed's sequence
    seq = np.random.SeedSequence(7)
    child = np.random.SeedSequence(7, spawn_key=(1, 2))
    assert child.spawn_key == (*seq.spawn_key, 1, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pts = br.utility_risk_points(orig, synth.synthesize(3, random_seed=child),
                                     known=KNOWN, synthesized=KNOWN_S, **OPTS)
    row = a[(a["m"] == 3) & (a["repeat"] == 2)].iloc[0]
    for col in ("pmse", "expected_match_risk", "false_match_rate"):
        assert row[col] == pytest.approx(pts[col].mean(), rel=1e-12)


def test_repeated_syntheses_pooled_is_the_release_pooled_over_its_datasets():
    """Caiola & Reiter (2010) compare synthesizers over replications of an m = 5 release, the
    match probabilities averaged over its datasets: aggregation="pooled" gives each repetition
    the pooled measures of its release, the pMSE still averaged over the datasets."""
    orig = _table()
    synth = _Shuffler(orig)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = br.repeated_syntheses(orig, synthesizer=synth, known=KNOWN, synthesized=KNOWN_S,
                                  m=(3,), n_repeats=2, aggregation="pooled", random_seed=7,
                                  progressbar=False, **OPTS)
        per = br.repeated_syntheses(orig, synthesizer=synth, known=KNOWN, synthesized=KNOWN_S,
                                    m=(3,), n_repeats=2, random_seed=7, progressbar=False, **OPTS)
        release = synth.synthesize(3, random_seed=np.random.SeedSequence(7, spawn_key=(0, 1)))
        pooled = br.identification_risk(orig, release, known=KNOWN, synthesized=KNOWN_S,
                                        aggregation="pooled",
                                        progressbar=False, **OPTS)
    row = a.iloc[1]
    for c in ("expected_match_risk", "expected_match_rate", "true_match_rate_targets",
              "false_match_rate"):
        assert row[c] == pytest.approx(pooled.file[c], rel=1e-12, nan_ok=True)
    # the same releases (same seeds): the utility is unchanged, the risk is the pooled one
    np.testing.assert_array_equal(a["pmse"], per["pmse"])
    # expected match risk by hand from the pooled record table: sum over targets of T / c
    rec = pooled.records
    assert row["expected_match_risk"] == pytest.approx(
        float(np.sum(np.where(rec["c"] > 0, rec["T"] / rec["c"].clip(lower=1), 0.0))))
    with pytest.raises(ValidationError, match="aggregation"):
        br.repeated_syntheses(orig, synthesizer=synth, known=KNOWN, synthesized=KNOWN_S,
                              aggregation="mean", progressbar=False)


@pytest.mark.parametrize("kw, match", [
    (dict(m=(1, 1)), "each listed once"), (dict(m=(0,)), "positive"),
    (dict(n_repeats=0), "n_repeats"),
])
def test_repeated_syntheses_refuses_bad_options(kw, match):
    orig = _table(30)
    with pytest.raises(ValidationError, match=match):
        br.repeated_syntheses(orig, synthesizer=_Shuffler(orig), known=KNOWN, synthesized=KNOWN_S,
                              progressbar=False, **kw)
    with pytest.raises(ValidationError, match="synthesize"):
        br.repeated_syntheses(orig, synthesizer=object(), known=KNOWN, synthesized=KNOWN_S,
                              progressbar=False)


def test_plot_draws_quartile_rectangles_and_whiskers():
    from matplotlib.patches import Rectangle

    rng = np.random.default_rng(2)
    pts = pd.DataFrame({"scenario": np.repeat(["one", "two"], 9),
                        "pmse": rng.uniform(0, 1, 18),
                        "expected_match_risk": rng.uniform(0, 5, 18)})
    import matplotlib.pyplot as plt

    ax = br.plot_utility_risk(pts)
    assert ax is plt.gca()  # pyplot's current Axes (a new figure: none was open), returned
    rects = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(rects) == 2
    for rect, (_, g) in zip(rects, pts.groupby("scenario", sort=False), strict=True):
        x1, x3 = np.quantile(g["pmse"], [0.25, 0.75])
        y1, y3 = np.quantile(g["expected_match_risk"], [0.25, 0.75])
        assert rect.get_x() == pytest.approx(x1) and rect.get_width() == pytest.approx(x3 - x1)
        assert rect.get_y() == pytest.approx(y1) and rect.get_height() == pytest.approx(y3 - y1)
    assert len(ax.lines) == 0
    _, ax2 = plt.subplots()
    assert br.plot_utility_risk(pts, whiskers=True, ax=ax2) is ax2
    lines = ax2.lines
    assert len(lines) == 8  # four whiskers per group
    # the lower x whisker of the first group runs from its minimum to its first quartile
    g = pts[pts["scenario"] == "one"]
    np.testing.assert_allclose(lines[0].get_xdata(),
                               [g["pmse"].min(), np.quantile(g["pmse"], 0.25)])
    with pytest.raises(ValidationError, match="no column 'nope'"):
        br.plot_utility_risk(pts, risk="nope")
    # on Axes the caller log-scaled: drawn, its scale kept (was matplotlib's bare "This method
    # only works with the ScalarFormatter")
    _, ax3 = plt.subplots()
    ax3.set_yscale("log")
    assert br.plot_utility_risk(pts, ax=ax3) is ax3
    assert ax3.get_yscale() == "log" and len(ax3.patches) == 2
    # on pyplot's current Axes, linear but with an earlier plot's own tick formatter: drawn,
    # the formatter kept (was the same bare matplotlib error)
    from matplotlib.ticker import StrMethodFormatter

    plt.close("all")
    _, ax4 = plt.subplots()
    ax4.xaxis.set_major_formatter(StrMethodFormatter("{x:.0f} %"))
    assert br.plot_utility_risk(pts) is ax4
    assert isinstance(ax4.xaxis.get_major_formatter(), StrMethodFormatter)
    assert len(ax4.patches) == 2
    plt.close("all")


def test_repeated_syntheses_warns_once_per_code():
    """A measure's warning (here NO_MATCH: tight radii) is raised once with the number of
    repetitions that gave it, not once per repetition."""
    orig = _table(60)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        br.repeated_syntheses(orig, synthesizer=_Shuffler(orig), known=KNOWN, synthesized=KNOWN_S,
                              m=(1, 2),
                              n_repeats=3,
                              random_seed=1, progressbar=False, categorical=["g"],
                              match=MatchSpec(radius={"a": 0.01, "y": 0.001}))
    codes = [getattr(w.message, "code", None) for w in caught]
    assert codes.count("NO_MATCH") == 1
    msg = str(next(w.message for w in caught if getattr(w.message, "code", None) == "NO_MATCH"))
    assert "of 6 repetitions" in msg
