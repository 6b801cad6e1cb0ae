"""ArrayModel, the external model (models/external.py): where it lives, the capabilities its
arguments give it, and bayes_risk.testing.check_synthesizer on a model that does not synthesize.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayes_risk.contract import Capabilities, capabilities
from bayes_risk.data import infer_schema
from bayes_risk.models import ArrayModel
from bayes_risk.testing import CHECKS, CheckSkipped, check_synthesizer, synthesizer_checks

#: the checks that need a synthesizer (skipped for ArrayModel)
SYNTHESIS_CHECKS = {"check_fit", "check_synthesize", "check_same_seed"}


def _data(n: int = 12) -> pd.DataFrame:
    return pd.DataFrame({"y": pd.Categorical([0, 1] * (n // 2), categories=[0, 1])})


def _ll(records, theta):
    y = records["y"].astype(int).to_numpy()[None, :]
    t = np.asarray(theta)[:, None]
    return y * np.log(t) + (1 - y) * np.log1p(-t)


def _neighbourhood(records, theta):  # [H, n, 2]: the truth first, then the other value
    flipped = records.assign(y=pd.Categorical(1 - records["y"].astype(int), categories=[0, 1]))
    return np.stack([_ll(records, theta), _ll(flipped, theta)], axis=-1)


def _model(**kw) -> ArrayModel:
    schema = infer_schema(_data(), synthesized=["y"])
    return ArrayModel(_ll, np.linspace(0.2, 0.8, 8), schema, **kw)


def test_array_model_lives_in_models_external():
    import bayes_risk.attribute
    import bayes_risk.attribute.estimator

    assert ArrayModel.__module__ == "bayes_risk.models.external"
    assert bayes_risk.ArrayModel is ArrayModel
    # renamed once (changelog): no longer an engine name, and no former-home re-export
    assert not hasattr(bayes_risk.attribute, "ArrayModel")
    assert "ArrayModel" not in bayes_risk.attribute.__all__
    assert not hasattr(bayes_risk.attribute.estimator, "ArrayModel")


def test_array_model_has_the_capabilities_of_its_arguments():
    plain = _model()
    assert capabilities(plain) == Capabilities(
        likelihoods=frozenset({"record", "dataset"}), estimators=("is",), chains=True)
    # an optional method is present exactly when its function is given (available_if); the
    # class has every one it can offer
    assert not hasattr(plain, "own_record_delta") and not hasattr(plain, "neighbourhood_loglik")
    assert not hasattr(plain, "fit_augmented")
    assert capabilities(ArrayModel).estimators == ("stabilised", "is")
    full = _model(neighbourhood_fn=_neighbourhood, augment_fn=lambda data, syn, **kw: None,
                  own_record_delta_fn=lambda rec, cand, sets, d: np.zeros((8, len(sets), 2)))
    info = capabilities(full)
    assert info.likelihoods == {"record", "dataset", "neighbourhood", "own_record"}
    assert info.estimators == ("stabilised", "is")
    assert callable(full.own_record_delta) and callable(full.neighbourhood_loglik)


@pytest.mark.parametrize("kw", [
    {},
    {"neighbourhood_fn": _neighbourhood, "chains": 2},
    {"model_class": "O",
     "own_record_delta_fn": lambda rec, cand, sets, d: np.zeros((len(d), len(sets), len(cand)))},
])
def test_array_model_passes_check_synthesizer(kw):
    """The checks that apply to a model that does not synthesize pass; fitting, synthesis and
    seeds are skipped, each with its reason."""
    passed = check_synthesizer(_model(**kw), _data())
    assert passed == [c.__name__ for c in CHECKS if c.__name__ not in SYNTHESIS_CHECKS]
    # without data: records of its schema's columns and levels (check_data)
    assert check_synthesizer(_model(**kw)) == passed
    skipped = {}
    for model, check in synthesizer_checks(_model(**kw), _data()):
        try:
            check(model)
        except CheckSkipped as why:
            skipped[check.__name__] = str(why)
    assert set(skipped) == SYNTHESIS_CHECKS
    assert all("does not synthesize" in why for why in skipped.values())


def test_check_synthesizer_still_bites_on_an_array_model():
    """A likelihood with the wrong shape fails the record-likelihood check."""
    schema = infer_schema(_data(), synthesized=["y"])
    bad = ArrayModel(_ll, np.linspace(0.2, 0.8, 8), schema,
                     neighbourhood_fn=lambda r, t: _neighbourhood(r, t)[:, :, ::-1])
    with pytest.raises(AssertionError, match="check_optional_likelihoods"):
        check_synthesizer(bad, _data())
