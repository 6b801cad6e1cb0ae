"""file_summary (SPEC §2.9): wiring of a real attribute-risk result into the §2.9 measures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayes_risk import attribute_risk
from bayes_risk.attribute import EstimatorSpec
from bayes_risk.attribute.file_summary import file_summary
from bayes_risk.attribute.summaries import largest_value, paiva_measures, wang_reiter
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ValidationError
from bayes_risk.models import ArrayModel

CENTROIDS = {"a": (0.0, 0.0), "b": (1.0, 0.0), "c": (0.0, 2.0)}


@pytest.fixture(scope="module")
def areal():
    """Areas a/b/c synthesized by an independent categorical model with Dirichlet draws."""
    rng = np.random.default_rng(11)
    n = 40
    df = pd.DataFrame({
        "area": pd.Categorical(rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2]),
                               categories=["a", "b", "c"]),
        "sex": pd.Categorical(rng.choice(["F", "M"], size=n), categories=["F", "M"]),
    })
    schema = infer_schema(df, synthesized=["area"])
    counts = df["area"].value_counts().reindex(["a", "b", "c"]).to_numpy()
    draws = rng.dirichlet(1 + counts, size=200)

    def ll(records, theta):
        codes = records["area"].cat.codes.to_numpy() if hasattr(records["area"], "cat") else (
            pd.Categorical(records["area"], categories=["a", "b", "c"]).codes)
        return np.log(np.asarray(theta)[:, codes])

    model = ArrayModel(ll, draws, schema)
    zs = []
    for _ in range(2):
        z = df.copy()
        z["area"] = pd.Categorical(rng.choice(["a", "b", "c"], size=n, p=draws[-1]),
                                   categories=["a", "b", "c"])
        zs.append(z)
    res = attribute_risk(df, zs, model=model, random_seed=1,
                         progressbar=False,
                         estimator=EstimatorSpec(kind="is", bootstrap=10))
    return df, res


def test_hrw_is_the_result_summary(areal):
    df, res = areal
    s = file_summary(res, kind="hrw")
    assert s["kind"] == "hrw" and s["n_records"] == len(df)
    assert s["all"] == res.to_dict()["all"]


def test_paiva_matches_the_measure(areal):
    df, res = areal
    s = file_summary(res, kind="paiva", original=df, location_columns=["area"], locations=CENTROIDS)
    posts, g0s, cls = [], [], []
    for k in range(len(df)):
        cp = res.candidate_posteriors(k)
        posts.append(cp["posterior"].to_numpy())
        g0s.append(int(np.flatnonzero(cp["is_truth"])[0]))
        cls.append(np.array([CENTROIDS[v] for v in cp["area"]]))
    unique = df.groupby("sex", observed=True)["sex"].transform("size").to_numpy() == 1
    ref = paiva_measures(posts, g0s, cls, unique)
    assert s["all"]["pct_true_is_map"] == pytest.approx(ref["pct_true_is_map"])
    assert s["all"]["pct_true_is_map_shared"] == pytest.approx(ref["pct_true_is_map_shared"])
    np.testing.assert_allclose(s["per_record"]["dist_map"], ref["dist_map"])
    assert s["n_flagged"] == len(s["flagged_records"])


def test_wang_reiter_matches_the_measure(areal):
    df, res = areal
    s = file_summary(res, kind="wang_reiter", original=df, location_columns=["area"],
                     locations=CENTROIDS)
    allxy = np.array([CENTROIDS[v] for v in df["area"]])
    for k in (0, 7, 19):
        cp = res.candidate_posteriors(k)
        cxy = np.array([CENTROIDS[v] for v in cp["area"]])
        g0 = int(np.flatnonzero(cp["is_truth"])[0])
        ref = wang_reiter(cp["posterior"].to_numpy(), cxy, cxy[g0], np.delete(allxy, k, axis=0))
        row = s["per_record"].iloc[k]
        assert row["R1"] == pytest.approx(ref["R1"]) and row["R2"] == ref["R2"]
    assert set(s["all"]) == {"R1", "R2"}
    # Monte Carlo R1 is reproducible from the seed and close to the exact value
    mc1 = file_summary(res, kind="wang_reiter", original=df, location_columns=["area"],
                       locations=CENTROIDS, n_mc=4000, random_seed=3)
    mc2 = file_summary(res, kind="wang_reiter", original=df, location_columns=["area"],
                       locations=CENTROIDS, n_mc=4000, random_seed=3)
    pd.testing.assert_frame_equal(mc1["per_record"], mc2["per_record"])
    # |MC − exact| ≤ 4 SE, SE ≤ max distance / sqrt(4000) = 2.24 / 63.2
    assert np.max(np.abs(mc1["per_record"]["R1"] - s["per_record"]["R1"])) < 4 * 2.24 / 63.2


def test_largest_value_per_record():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"x": np.round(rng.gamma(5.0, 20.0, size=15), 0)})
    schema = infer_schema(df, continuous=["x"], synthesized=["x"])
    mu = rng.normal(df["x"].mean(), 3.0, size=100)

    def ll(records, draws):
        x = records["x"].to_numpy(dtype=float)[None, :]
        return -0.5 * ((x - np.asarray(draws)[:, None]) / 40.0) ** 2

    model = ArrayModel(ll, mu, schema)
    z = [df.assign(x=df["x"] + rng.normal(0, 5, size=15))]
    res = attribute_risk(df, z, model=model, candidates="grid:percent:0.1:11", random_seed=2,
                         progressbar=False, estimator=EstimatorSpec(kind="is", bootstrap=5))
    s = file_summary(res, kind="largest_value", delta=0.05)
    i = int(np.argmax(df["x"]))
    cp = res.candidate_posteriors(i)
    truth = float(cp["x"][cp["is_truth"]].iloc[0])
    ref = largest_value(cp["posterior"].to_numpy(), cp["x"].to_numpy(float), truth, delta=0.05)
    assert s["largest"]["record"] == i
    assert s["largest"]["P_interval"] == pytest.approx(ref["P_interval"])
    assert s["largest"]["mode"] == ref["mode"]


def test_errors(areal):
    df, res = areal
    with pytest.raises(ValidationError, match="kind of file_summary must be one of"):
        file_summary(res, kind="nope")
    with pytest.raises(ValidationError, match="needs location_columns"):
        file_summary(res, kind="paiva", original=df)
    with pytest.raises(ValidationError, match=r"location_columns \['lat'\] are not among"):
        file_summary(res, kind="wang_reiter", original=df, location_columns=["lat"])
    with pytest.raises(ValidationError, match="no centroid for level 'c'"):
        file_summary(res, kind="paiva", original=df, location_columns=["area"],
                     locations={"a": (0, 0), "b": (1, 1)})
    with pytest.raises(ValidationError, match="needs original="):
        file_summary(res, kind="wang_reiter", location_columns=["area"], locations=CENTROIDS)
    with pytest.raises(ValidationError, match="one numeric column"):
        file_summary(res, kind="largest_value")
    for not_a_result in (None, df):
        with pytest.raises(ValidationError, match="must be the output of attribute_risk"):
            file_summary(not_a_result)
