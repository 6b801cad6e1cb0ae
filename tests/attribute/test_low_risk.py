"""Wang & Reiter's (2012) low-risk intruder, ``attribute_risk(..., scenario="empty")``.

Worked numbers: the toy table of five records (sex known and released, race synthesized) with
two releases, and a geography example whose R1 / R2 are computed by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_risk.attribute import (
    EstimatorSpec,
    ScenarioSpec,
    attribute_risk,
    prior_sensitivity,
    with_prior,
)
from bayes_risk.attribute.file_summary import file_summary
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ValidationError
from bayes_risk.models import ArrayModel


def _flat_ll(records, draws):
    return np.zeros((np.asarray(draws).shape[0], len(records)))


@pytest.fixture
def toy5():
    y = pd.DataFrame({"sex": list("MMMFF"), "race": list("WWBWB")})
    schema = infer_schema(y, synthesized=["race"])
    model = ArrayModel(_flat_ll, np.zeros(30), schema)
    z1 = y.assign(race=list("WBBWW"))
    z2 = y.assign(race=list("WWWBB"))
    return model, y, [z1, z2]


def test_toy5_numbers(toy5):
    model, y, release = toy5
    res = attribute_risk(y, release, model=model, progressbar=False, scenario="empty")
    r = res.records
    # record 0: released W, W (truth W) -> 1; the others: one of the two releases is the truth
    np.testing.assert_allclose(r["p_true"], [1.0, 0.5, 0.5, 0.5, 0.5])
    np.testing.assert_array_equal(r["G"], [1, 2, 2, 2, 2])
    np.testing.assert_array_equal(r["rank_min"], [1, 1, 1, 1, 1])
    np.testing.assert_array_equal(r["n_tie"], [1, 2, 2, 2, 2])
    np.testing.assert_allclose(r["top_share"], [1.0, 0.5, 0.5, 0.5, 0.5])
    s = res.to_dict()
    assert s["all"]["mean_p_true"] == pytest.approx(0.6)
    assert s["settings"]["scenario"] == "empty"
    # the candidates are the released values: no prior before the release, so no Bayes factor
    # (record 0's truth, released twice, would read as "nothing learned", a factor of 1)
    assert "prop_evidence" not in s["all"] and "bayes_factor" not in res.to_dataframe()
    assert "APPROX_LOW_RISK" in res.warnings
    cp = res.candidate_posteriors(1)
    assert dict(zip(cp["race"], cp["posterior"], strict=True)) == {"W": 0.5, "B": 0.5}


def test_the_p_true_plot_of_released_candidates_draws_no_before_the_release(toy5):
    """Candidates read off the release have no prior before it: the plot's line is 1/G over
    the released candidates, named so, and there is no null line."""
    import matplotlib.pyplot as plt

    model, y, release = toy5
    res = attribute_risk(y, release, model=model, progressbar=False, scenario="empty")
    ax = res.plot("p_true", ax=plt.figure().add_subplot())
    labels = [ln.get_label() for ln in ax.get_lines()]
    plt.close(ax.figure)
    assert labels == ["uniform over the released candidates, 1/G: 60 %"]


def test_truth_never_released_ranks_last(toy5):
    model, y, _ = toy5
    z = y.assign(race=list("BBWBW"))  # every record's race is wrong (the only such dataset)
    res = attribute_risk(y, [z], model=model, progressbar=False, scenario="empty")
    np.testing.assert_array_equal(res.records["p_true"], 0.0)
    np.testing.assert_array_equal(res.records["rank_min"], 2.0)
    assert not res.records["is_top"].any()


def test_wang_reiter_r1_r2_by_hand():
    # one target at (0, 0); its three synthetic locations (3, 4), (0, 5), (6, 8) -> R1 = 20/3;
    # the other records' true locations lie at distances 1.41, 6, 7, 7.07 -> R2 = 2
    y = pd.DataFrame({
        "age": [50, 40, 41, 42, 43],
        "lon": [0.0, 1.0, 6.0, 7.0, 5.0],
        "lat": [0.0, 1.0, 0.0, 0.0, 5.0],
    })
    schema = infer_schema(y, continuous=["lon", "lat"], synthesized=["lon", "lat"])
    model = ArrayModel(_flat_ll, np.zeros(30), schema)
    syn = [(3.0, 4.0), (0.0, 5.0), (6.0, 8.0)]
    release = []
    for lon, lat in syn:
        z = y.copy()
        z.loc[0, ["lon", "lat"]] = [lon, lat]
        release.append(z)
    res = attribute_risk(y, release, model=model, records=[0], progressbar=False, scenario="empty")
    wr = file_summary(res, kind="wang_reiter", original=y, location_columns=["lon", "lat"])
    assert wr["per_record"]["R1"].iloc[0] == pytest.approx(20.0 / 3.0)
    assert wr["per_record"]["R2"].iloc[0] == 2
    assert res.records["p_true"].iloc[0] == 0.0


def test_refuses_options_that_do_not_apply(toy5):
    model, y, release = toy5
    with pytest.raises(ValidationError, match="uniform prior only"):
        attribute_risk(y, release, model=model, prior="truth-weighted:2", scenario="empty")
    with pytest.raises(ValidationError, match=r"\['EstimatorSpec.kind'\] do not apply"):
        attribute_risk(y, release, model=model, scenario="empty", estimator="is")
    with pytest.raises(ValidationError, match="ScenarioSpec.known needs ScenarioSpec.kind="
                       "'partially_known'"):
        attribute_risk(y, release, model=model, scenario=ScenarioSpec(kind="empty", known=["race"]))
    with pytest.raises(ValidationError, match=r"\['EstimatorSpec.psis'\] do not apply"):
        attribute_risk(y, release, model=model, scenario="empty",
                       estimator=EstimatorSpec(psis=True))
    with pytest.raises(NotImplementedError, match="'worst_case', 'partially_known', 'empty'"):
        attribute_risk(y, release, model=model, scenario="nosy_neighbour")



def test_a_new_prior_is_refused_as_in_the_run(toy5):
    # the low-risk posterior already contains the prior: with_prior and prior_sensitivity refuse
    # what attribute_risk( prior=..., scenario="empty") refuses, and keep the uniform prior
    model, y, release = toy5
    res = attribute_risk(y, release, model=model, progressbar=False, scenario="empty")
    with pytest.raises(ValidationError, match="uniform prior only"):
        with_prior(res, prior="truth-weighted:2")
    with pytest.raises(ValidationError, match="uniform prior only"):
        prior_sensitivity(res, priors=["uniform", "truth-weighted:2"])
    same = prior_sensitivity(res, priors=["uniform"])
    np.testing.assert_array_equal(same["p_true"], res.records["p_true"])

@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from("WBA"), min_size=6, max_size=6), min_size=1,
                max_size=6, unique_by=tuple))  # a release holds no dataset twice
def test_p_true_is_the_share_of_releases_reproducing_the_truth(races):
    y = pd.DataFrame({"sex": list("MMMFFF"), "race": list("WBAWBA")})
    schema = infer_schema(y, synthesized=["race"])
    model = ArrayModel(_flat_ll, np.zeros(30), schema)
    release = [y.assign(race=r) for r in races]
    res = attribute_risk(y, release, model=model, progressbar=False, scenario="empty")
    share = np.mean([np.array(r) == y["race"].to_numpy() for r in races], axis=0)
    np.testing.assert_allclose(res.records["p_true"], share)
    assert np.all((res.records["p_true"] >= 0) & (res.records["p_true"] <= 1))
    for k in range(len(y)):
        assert np.exp(res.log_post[k]).sum() == pytest.approx(1.0)
