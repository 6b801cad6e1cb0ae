"""Attribute risk with the Poisson-mixture synthesizers (SPEC §2, §3.3): the engine runs on every
model of the protocol, with numeric candidate grids."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk.attribute import attribute_risk
from bayes_risk.models import Sampling

pm_mod = pytest.importorskip("bayes_risk.models.poisson.poisson_mixture")

pytestmark = pytest.mark.filterwarnings(
    "ignore::bayes_risk.exceptions.ConvergenceWarning",
    "ignore::bayes_risk.exceptions.ImportanceSamplingWarning",
)


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(1)
    z = rng.integers(0, 2, 150)
    return pd.DataFrame(
        {"emp": rng.poisson(np.where(z, 40, 8)), "est": rng.poisson(np.where(z, 12, 3))}
    )


def _fit(variant, df):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm_mod.PoissonMixture(
            variant=variant, n_components=5, sampling=Sampling(tune=200, draws=200),
            progressbar=False
        ).fit(df, random_seed=1)


def test_mp_class_p_stabilised_with_grids(counts):
    mp = _fit("mp", counts)
    syn = mp.synthesize(3, random_seed=2)
    kw = dict(records=range(6), candidates="grid:additive:2:5", random_seed=3,
              progressbar=False)
    res = attribute_risk(counts, syn, model=mp, **kw)
    assert mp.model_class == "P" and res.settings["estimator"] == "stabilised"
    assert (res.records["G"] == 25).all()  # 5 grid points per column, product set
    for i in range(6):
        cp = res.candidate_posteriors(i)
        assert cp["posterior"].sum() == pytest.approx(1.0, abs=1e-12)
        assert cp.loc[cp["is_truth"], "emp"].item() == counts["emp"][i]
    assert res.records["p_true"].between(0, 1).all()
    # the release carries little information about one record among 150: near the baseline
    assert res.records["p_true"].mean() == pytest.approx(1 / 25, abs=0.02)
    # same seed (augmented fits included), same numbers
    again = attribute_risk(counts, syn, model=mp, **kw)
    np.testing.assert_array_equal(again.records["p_true"], res.records["p_true"])


def test_mm_preserved_totals_reveal_the_value(counts):
    # MM redistributes every column's confidential total (SPEC §3.3): a worst-case intruder who
    # knows the other records' values and sees any release knows y_i exactly — every candidate
    # that changes a column total is impossible, so the truth gets probability 1
    mm = _fit("mm", counts)
    syn = mm.synthesize(2, random_seed=2)
    res = attribute_risk(counts, syn, model=mm, records=range(4), candidates="grid:additive:2:5",
                         random_seed=3, progressbar=False)
    assert mm.model_class == "O" and res.settings["estimator"] == "is"
    np.testing.assert_array_equal(res.records["p_true"], 1.0)
    np.testing.assert_array_equal(res.records["rank_min"], 1)
