"""The sampler settings of the Bayesian models grouped in one spec, ``Sampling`` (issue 65 item 4).

No fit runs here: the spec's checks, the moved keywords' error, the models' defaults, the
nested ``get_params``/``set_params`` names, ``clone`` and the flat settings a saved model holds
(its identity hashes them: they must not move). Loading a folder saved before the change is
``tests/data/test_provenance.py::test_the_identity_of_a_saved_model_does_not_change``.
"""

from __future__ import annotations

import pytest
from sklearn.base import clone

from bayes_risk.exceptions import ValidationError
from bayes_risk.models import (
    DPMPM,
    PoissonMixture,
    PyMCSynthesizer,
    Sampling,
    SequentialRegression,
)

#: the flat sampler settings a DPMPM left at its defaults saved before the change (model.json)
DPMPM_SAVED = {"tune": 1000, "draws": None, "thin": None, "max_sweeps": None,
               "starts": "overdispersed", "temperatures": 1, "chains": 2, "cores": None}


@pytest.mark.parametrize(("field", "bad"), [
    ("draws", 0), ("draws", 2.5), ("tune", -1), ("chains", True), ("cores", 0), ("thin", 0),
    ("max_sweeps", -1), ("temperatures", "2"), ("starts", "everywhere"), ("starts", []),
])
def test_the_spec_checks_each_field_once_naming_it(field, bad):
    with pytest.raises(ValidationError, match=field) as err:
        Sampling(**{field: bad})
    assert err.value.code == "INVALID_ARGUMENT"


def test_the_spec_keeps_what_it_is_given():
    s = Sampling(draws=200, tune=0, starts=["few", "spread"])
    assert (s.draws, s.tune, s.chains, s.starts) == (200, 0, None, ("few", "spread"))
    assert repr(s) == "Sampling(draws=200, tune=0, starts=('few', 'spread'))"
    with pytest.raises(AttributeError):  # frozen: a change is a new spec
        s.draws = 5  # type: ignore[misc]


@pytest.mark.parametrize(("cls", "given", "spelled"), [
    (DPMPM, {"draws": 500, "thin": 2}, "DPMPM(sampling=Sampling(draws=500, thin=2))"),
    (PoissonMixture, {"starts": "few"}, "PoissonMixture(sampling=Sampling(starts='few'))"),
    (SequentialRegression, {"chains": 4}, "SequentialRegression(sampling=Sampling(chains=4))"),
    (PyMCSynthesizer, {"tune": 10}, "PyMCSynthesizer(sampling=Sampling(tune=10))"),
])
def test_an_old_keyword_names_its_new_spelling(cls, given, spelled):
    with pytest.raises(ValidationError, match="MOVED_ARGUMENT|grouped") as err:
        cls(n_components=3, **given) if cls in (DPMPM, PoissonMixture) else cls(**given)
    assert err.value.code == "MOVED_ARGUMENT" and spelled in str(err.value)


def test_each_model_fills_the_fields_left_out_with_its_defaults():
    assert DPMPM(sampling=Sampling(draws=40)).resolved_sampling == Sampling(
        draws=40, tune=1000, chains=2, starts="overdispersed", temperatures=1)
    assert PoissonMixture().resolved_sampling == Sampling(
        draws=1000, tune=500, chains=1, cores=1, starts="overdispersed")
    assert SequentialRegression(sampling=Sampling(chains=3)).resolved_sampling == Sampling(
        draws=1000, tune=500, chains=3, cores=1)
    assert PyMCSynthesizer().resolved_sampling == Sampling(draws=1000, tune=1000, chains=2,
                                                           cores=1)


@pytest.mark.parametrize(("cls", "spec", "code"), [
    (SequentialRegression, Sampling(thin=2), "OPTION_CONFLICT"),
    (PoissonMixture, Sampling(temperatures=2), "OPTION_CONFLICT"),
    (DPMPM, {"draws": 5}, "INVALID_ARGUMENT"),
])
def test_a_spec_the_model_cannot_run_is_refused(cls, spec, code):
    with pytest.raises(ValidationError) as err:
        _ = cls(sampling=spec).resolved_sampling
    assert err.value.code == code


def test_nested_params_clone_and_repr_follow_scikit_learn():
    m = DPMPM(n_components=3, random_seed=1)
    assert m.get_params(deep=False)["sampling"] is None
    m.set_params(sampling__draws=7)  # a field of a spec left at None
    assert m.sampling == Sampling(draws=7)
    m.set_params(sampling__chains=1)
    assert m.sampling == Sampling(draws=7, chains=1)
    assert m.get_params()["sampling__chains"] == 1
    copy = clone(m)
    assert copy.sampling == m.sampling and copy.get_params() == m.get_params()
    assert "sampling=Sampling(draws=7, chains=1)" in repr(m)
    with pytest.raises(ValidationError, match="draws"):
        m.set_params(sampling__draws=0)


def test_saved_settings_stay_flat_and_read_back_as_given():
    default = DPMPM()
    flat = default.release_settings()
    assert "sampling" not in flat
    assert {k: flat[k] for k in DPMPM_SAVED} == DPMPM_SAVED
    # a model saved before or after the change: the defaults go back to the defaults
    again = DPMPM.from_settings(flat)
    assert again.sampling is None and again.get_params() == default.get_params()
    given = DPMPM(n_components=4, sampling=Sampling(draws=40, tune=30, starts=("few",)))
    saved = {**given.release_settings(), "starts": ["few"]}  # JSON: a list
    back = DPMPM.from_settings(saved)
    assert back.sampling == Sampling(draws=40, tune=30, starts=("few",))
    assert back.get_params() == given.get_params()
    with pytest.raises(ValidationError, match="no setting") as err:
        DPMPM.from_settings({"n_components": 4, "burn_in": 10})
    assert err.value.code == "INVALID_ARGUMENT"


def test_one_mechanism_reads_and_writes_the_grouped_settings_flat():
    """The Bayesian models' ``sampling`` and the trees' ``trees`` share
    ``GroupedSettingsSynthesizer`` (issue 87): neither base restates its methods."""
    from bayes_risk.models._bayesian.base import BayesianSynthesizer
    from bayes_risk.models.settings_group import SAMPLING, TREES, GroupedSettingsSynthesizer
    from bayes_risk.models.trees.base import TreeSynthesizer

    for cls, group in ((BayesianSynthesizer, SAMPLING), (TreeSynthesizer, TREES)):
        assert issubclass(cls, GroupedSettingsSynthesizer) and cls.settings_group is group
        assert not {"from_settings", "set_params", "setting_names", "release_settings",
                    "flat_settings"} & set(vars(cls))
    model = DPMPM(sampling=Sampling(draws=40), random_seed=3)
    assert model.flat_settings() == {**model.release_settings(), "random_seed": 3}
    assert DPMPM.from_settings(model.flat_settings()).get_params() == model.get_params()
