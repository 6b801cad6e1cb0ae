"""The models' public fitted state ``state_`` (scikit-learn's trailing-``_`` convention): a
frozen dataclass per model family, set by ``fit`` / ``from_posterior`` / ``load``, and
``NotFittedError`` (``NOT_FITTED``) when read before."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from bayes_risk.data import infer_schema
from bayes_risk.exceptions import NotFittedError
from bayes_risk.models import load_model
from bayes_risk.models._bayesian.base import BayesianSynthesizer
from bayes_risk.models.dp_multinomial import DPMultinomial, DPMultinomialState
from bayes_risk.models.dpmpm.dpmpm import DPMPM
from bayes_risk.models.dpmpm.state import DPMPMState
from bayes_risk.models.poisson.poisson_mixture import PoissonMixture
from bayes_risk.models.poisson.state import PoissonState
from bayes_risk.models.pymc_model.pymc_model import PyMCSynthesizer
from bayes_risk.models.pymc_model.state import PyMCState
from bayes_risk.models.seqreg.seqreg import SequentialRegression
from bayes_risk.models.seqreg.state import SeqRegState
from bayes_risk.models.trees.cart import CARTSynthesizer
from bayes_risk.models.trees.cart_state import CARTState
from bayes_risk.models.trees.pmm import SmallCellPMMSynthesizer
from bayes_risk.models.trees.random_forest import RandomForestSynthesizer
from bayes_risk.models.trees.state import ForestState, PMMState

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")

FAMILIES = [(DPMPM, DPMPMState), (PoissonMixture, PoissonState),
            (SequentialRegression, SeqRegState), (PyMCSynthesizer, PyMCState),
            (DPMultinomial, DPMultinomialState),
            (CARTSynthesizer, CARTState), (RandomForestSynthesizer, ForestState),
            (SmallCellPMMSynthesizer, PMMState)]


@pytest.mark.parametrize(("model", "state"), FAMILIES, ids=lambda x: x.__name__)
def test_state_is_a_frozen_dataclass_documented_on_the_class(model, state):
    assert dataclasses.is_dataclass(state) and state.__dataclass_params__.frozen
    # the class attribute is what the API reference shows; it names the state's class
    assert state.__name__ in model.state_.__doc__
    assert "state_ :" in model.__doc__  # numpydoc "Attributes" entry


@pytest.mark.parametrize(("model", "state"), FAMILIES, ids=lambda x: x.__name__)
def test_state_before_fit_is_not_fitted(model, state):
    m = model()
    with pytest.raises(NotFittedError, match="before reading 'state_'") as err:
        _ = m.state_
    assert err.value.code == "NOT_FITTED"
    # NotFittedError is an AttributeError: hasattr and getattr with a default answer "no"
    assert not hasattr(m, "state_") and getattr(m, "state_", None) is None


def test_state_set_by_from_posterior_load_and_dropped_by_clone(tmp_path):
    # 2 draws, K = 2 components, two binary columns: the state holds the given draws
    pi = np.array([[[0.25, 0.75], [0.6, 0.4]]])  # [chain, draw, K]
    phi0 = np.array([[[[0.1, 0.9], [0.8, 0.2]], [[0.5, 0.5], [0.3, 0.7]]]])  # [c, d, K, 2]
    phi1 = np.array([[[[0.4, 0.6], [0.2, 0.8]], [[0.9, 0.1], [0.7, 0.3]]]])
    df = pd.DataFrame({"a": pd.Categorical([1, 2]), "b": pd.Categorical([1, 2])})
    m = DPMPM.from_posterior({"pi": pi, "phi_0": phi0, "phi_1": phi1}, infer_schema(df),
                             n_records=4)
    st = m.state_
    assert isinstance(st, DPMPMState) and "state_" in vars(m)
    np.testing.assert_allclose(np.exp(st.log_pi), pi[0], rtol=1e-12)
    # phi [H, L, K]: column a's two levels then column b's, per component
    np.testing.assert_allclose(st.phi[1, :, 0], [0.5, 0.5, 0.9, 0.1], rtol=1e-12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.schema = None
    loaded = load_model(m.save(tmp_path / "m"))
    np.testing.assert_array_equal(loaded.state_.phi, st.phi)
    # scikit-learn's clone keeps the settings, not the fitted attributes
    with pytest.raises(NotFittedError):
        _ = clone(m).state_


@pytest.mark.parametrize("model", [f[0] for f in FAMILIES], ids=lambda x: x.__name__)
def test_every_family_follows_one_persistence_protocol(model):
    import inspect

    # instance methods of the same parameters, not a static restore of another shape
    assert list(inspect.signature(model.restore_state).parameters) == ["self", "state", "arrays"]
    assert not isinstance(inspect.getattr_static(model, "restore_state"), staticmethod)
    assert list(inspect.signature(model.persisted_state).parameters) == ["self"]


@pytest.mark.parametrize("model", [f[0] for f in FAMILIES
                                   if issubclass(f[0], BayesianSynthesizer)],
                         ids=lambda x: x.__name__)
def test_a_bayesian_family_declares_what_a_saved_folder_keeps(model):
    # its fitted attributes as class data (saved_state), written and read back by the base
    assert "persisted_state" not in vars(model) and "restore_state" not in vars(model)
    assert set(BayesianSynthesizer.saved_state) <= set(model.saved_state)


def test_declared_state_defaults_for_draws_made_elsewhere_and_read_back():
    from bayes_risk.models import DPMultinomial

    df = pd.DataFrame({"a": pd.Categorical(["x", "y"]), "b": pd.Categorical(["u", "v"])})
    log_theta = np.log(np.full((1, 3, 4), 0.25))
    m = DPMultinomial.from_posterior({"log_theta": log_theta}, infer_schema(df), n_records=2,
                                     alpha=2.0)
    # the defaults of what a fit sets (adopted draws are not the model's own exact ones)
    assert m.persisted_state() == ({"dtypes": {}, "alpha": 2.0, "exact_draws": False}, {})
    other = DPMultinomial(alpha=2.0)
    other.restore_state({"alpha": 3, "exact_draws": True}, {})  # kinds read back as declared
    assert (other.alpha_, other.exact_draws_, other.dtypes_) == (3.0, True, {})
    assert isinstance(other.alpha_, float)
    for bad in ({"alpha": 0.0}, {}):  # the check the field declares; a missing one fails it
        with pytest.raises(ValueError, match="state field 'alpha' is .*, not a prior count"):
            other.restore_state(bad, {})


def test_a_bayesian_familys_arrays_are_saved_and_read_back_checked(tmp_path):
    from bayes_risk.exceptions import ValidationError
    from bayes_risk.models import DPMultinomial, Sampling
    from bayes_risk.models.persistence import saved_array

    class WithArrays(DPMultinomial):
        def persisted_state(self):
            state, arrays = super().persisted_state()
            return state, {**arrays, "counts": np.arange(4)}

        def restore_state(self, state, arrays):
            super().restore_state(state, arrays)
            self.counts_back_ = saved_array(arrays, "counts", "iu", (4,))

    df = pd.DataFrame({"a": pd.Categorical(["x", "y", "x", "y"]),
                       "b": pd.Categorical(["u", "u", "v", "v"])})
    model = WithArrays(alpha=1.0, sampling=Sampling(draws=10, chains=1), random_seed=1).fit(df)
    folder = model.save(tmp_path / "m")
    assert (folder / "arrays.npz").is_file()
    np.testing.assert_array_equal(WithArrays.load(folder).counts_back_, np.arange(4))
    np.savez(folder / "arrays.npz", counts=np.zeros(4))  # changed: its checksum refuses it
    with pytest.raises(ValidationError, match="damaged"):
        WithArrays.load(folder)
