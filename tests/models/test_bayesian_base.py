"""The shared machinery of Bayesian synthesizers (models/_bayesian/base.py): draw bookkeeping,
synthesis from spread-out draws, persistence (NetCDF + JSON), from_posterior, convergence."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ConvergenceWarning, NotFittedError, ValidationError
from bayes_risk.models import Sampling, load_model
from bayes_risk.models._bayesian.base import BayesianSynthesizer
from bayes_risk.models._bayesian.convergence_report import check_convergence
from bayes_risk.models._bayesian.posterior import PosteriorVariable
from bayes_risk.models.dpmpm.dpmpm import DPMPM


class BetaBernoulli(BayesianSynthesizer):
    """Toy model: one binary column, y_i ~ Bernoulli(θ); draws of θ given from outside."""

    method_name = "toy-bernoulli"

    def __init__(self, *, sampling=None, random_seed=None, progressbar=True):
        super().__init__(sampling=sampling, random_seed=random_seed, progressbar=progressbar)

    posterior_variables = (PosteriorVariable("theta", (), "unit_interval"),)

    def convergence_quantities(self):
        return {"theta": np.asarray(self.posterior_["posterior"]["theta"].values)}

    def _synthesize_one(self, draw, rng, data):
        th = self._stacked("theta")[draw]
        return pd.DataFrame({"y": (rng.random(self.n_records) < th).astype(np.int64)})

    def record_loglik(self, records, *, draw_indices=None):
        th = self._stacked("theta", self._draw_indices(draw_indices))[:, None]
        y = records["y"].to_numpy()[None, :]
        return np.where(y == 1, np.log(th), np.log1p(-th))

    def dataset_loglik(self, synthetic, *, draw_indices=None):
        return np.stack([self.record_loglik(z,
            draw_indices=draw_indices).sum(1) for z in synthetic], axis=1)

    def neighbourhood_loglik(self, records, *, draw_indices=None):
        ll1 = self.record_loglik(records, draw_indices=draw_indices)
        ll0 = self.record_loglik(records.assign(y=1 - records["y"]), draw_indices=draw_indices)
        return np.stack([ll1, ll0], axis=-1)

    def fit_augmented(self, data, synthetic, *, random_seed=None):
        raise NotImplementedError


SCHEMA = infer_schema(pd.DataFrame({"y": [0, 1]}), categorical=["y"], synthesized=["y"])


def toy(H=6, chains=None):
    th = np.linspace(0.2, 0.7, H)
    post = {"theta": th if chains is None else th.reshape(chains, -1)}
    with warnings.catch_warnings():
        # a handful of fixed draws: too few for the diagnostics (which are tested below)
        warnings.simplefilter("ignore", ConvergenceWarning)
        return BetaBernoulli.from_posterior(post, SCHEMA, n_records=50)


def test_n_draws_and_chain_major_flattening():
    m = toy(6, chains=2)
    assert m.n_draws == 6
    # chain-major: h = chain * draws + draw
    np.testing.assert_allclose(m._stacked("theta"), np.linspace(0.2, 0.7, 6))
    np.testing.assert_array_equal(m._draw_indices(None), np.arange(6))
    np.testing.assert_array_equal(m._draw_indices([5, 0, 5]), [5, 0, 5])
    np.testing.assert_array_equal(m._draw_indices(np.arange(6) % 2 == 0), [0, 2, 4])
    with pytest.raises(ValidationError, match=r"draw indices in 0\.\.5 .*Got \[6\]"):
        m._draw_indices([6])
    with pytest.raises(ValidationError, match="boolean mask"):
        m._draw_indices(np.ones(3, bool))
    with pytest.raises(ValidationError, match=r"draw_indices must be .*Got \[0\.5\]"):
        m._draw_indices([0.5])


def test_spread_draws_evenly_spaced_and_last_draw():
    assert BayesianSynthesizer._spread_draws(1000, 5).tolist() == [199, 399, 599, 799, 999]
    assert BayesianSynthesizer._spread_draws(10, 1).tolist() == [9]
    assert BayesianSynthesizer._spread_draws(3, 3).tolist() == [0, 1, 2]


def test_synthesize_records_draw_index_and_reproducibility():
    m = toy(6)
    syn = m.synthesize(3, random_seed=1)
    assert syn.draw_index == [1, 3, 5]
    assert syn.method == "toy-bernoulli"
    assert syn.extra["model_class"] == "P"
    again = m.synthesize(3, random_seed=1)
    assert all(a.equals(b) for a, b in zip(syn, again, strict=False))
    other = m.synthesize(3, random_seed=2)
    assert not all(a.equals(b) for a, b in zip(syn, other, strict=False))
    with pytest.raises(ValidationError, match="only H = 6"):
        m.synthesize(7)
    with pytest.raises(ValidationError, match="m must be"):
        m.synthesize(0)


def test_not_fitted_errors():
    m = BetaBernoulli()
    with pytest.raises(NotFittedError, match="not fitted"):
        m.synthesize(1)
    with pytest.raises(NotFittedError):
        _ = m.n_draws
    with pytest.raises(NotFittedError):
        m.save("/tmp/never-written")


def test_from_posterior_shapes_and_errors():
    assert toy(6, chains=3).posterior_["posterior"].sizes["chain"] == 3
    with pytest.raises(ValidationError, match="not a parameter"):
        BetaBernoulli.from_posterior({"beta": np.ones(3)}, SCHEMA, n_records=2)
    with pytest.raises(ValidationError, match="shape"):
        BetaBernoulli.from_posterior({"theta": np.ones((2, 2, 2))}, SCHEMA, n_records=2)
    with pytest.raises(ValidationError, match=r"'theta' must hold values in \[0, 1\]"):
        BetaBernoulli.from_posterior({"theta": np.array([1.5])}, SCHEMA, n_records=2)
    with pytest.raises(ValidationError, match="n_records or data"):
        BetaBernoulli.from_posterior({"theta": np.array([0.5])}, SCHEMA)


def test_save_load_roundtrip_toy(tmp_path):
    m = toy(6, chains=2)
    m.save(tmp_path / "toy")
    meta = json.loads((tmp_path / "toy" / "model.json").read_text())
    assert meta["method"] == "toy-bernoulli" and meta["format_version"] == 2
    assert meta["schema"] == SCHEMA.to_dict() and meta["n_records"] == 50
    assert (tmp_path / "toy" / "posterior.nc").is_file()
    back = BetaBernoulli.load(tmp_path / "toy")
    assert back.n_draws == 6
    np.testing.assert_array_equal(back._stacked("theta"), m._stacked("theta"))
    a, b = m.synthesize(2, random_seed=3), back.synthesize(2, random_seed=3)
    assert all(x.equals(y) for x, y in zip(a, b, strict=False))
    with pytest.raises(ValidationError, match="not 'dpmpm'"):
        DPMPM.load(tmp_path / "toy")


def test_convergence_report_flags_disagreeing_chains():
    rng = np.random.default_rng(0)
    th = np.stack([rng.beta(20, 80, 200), rng.beta(80, 20, 200)])  # two chains, two modes
    with warnings.catch_warnings(record=True) as caught:  # checked when built, too
        warnings.simplefilter("always")
        m = BetaBernoulli.from_posterior({"theta": th}, SCHEMA, n_records=5)
    assert {w.message.code for w in caught} == {"RHAT_HIGH", "LOW_ESS"}
    rep = check_convergence(m)
    assert "RHAT_HIGH" in rep.loc["theta", "flag"]
    with pytest.warns(ConvergenceWarning) as rec:
        check_convergence(m, warn=True)
    # each message gives the values that failed its check
    msgs = {w.message.code: str(w.message) for w in rec}
    assert "theta: R-hat" in msgs["RHAT_HIGH"] and "theta: bulk ESS" in msgs["LOW_ESS"]
    good = BetaBernoulli.from_posterior({"theta": rng.beta(5, 5, (2, 500))}, SCHEMA, n_records=5)
    rep = check_convergence(good)
    assert rep.loc["theta", "flag"] == ""
    assert rep.loc["theta", "rhat"] < 1.01 and rep.loc["theta", "ess_bulk"] > 400


def test_one_chain_split_rhat_detects_drift():
    x = np.linspace(0.1, 0.9, 400)  # a trending chain: its two halves disagree
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = BetaBernoulli.from_posterior({"theta": x}, SCHEMA, n_records=5)
    assert {w.message.code for w in caught} == {"RHAT_HIGH", "LOW_ESS"}
    rep = check_convergence(m)
    assert rep.loc["theta", "rhat"] > 1.1


# ---------------------------------------------------------------------------- DPMPM persistence
@pytest.fixture(scope="module")
def fitted_dpmpm():
    from bayes_risk.data import make_acs_like

    df = make_acs_like(400, random_seed=3)[["SEX", "AGE", "MAR", "MIG"]]
    m = DPMPM(n_components=5, sampling=Sampling(tune=30, draws=40), progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m.fit(df, random_seed=4)
    return m, df


def test_dpmpm_save_load_identical(tmp_path, fitted_dpmpm):
    m, df = fitted_dpmpm
    m.save(tmp_path / "model")
    back = load_model(tmp_path / "model")
    assert isinstance(back, DPMPM) and back.get_params() == m.get_params()
    a, b = m.synthesize(3, random_seed=8), back.synthesize(3, random_seed=8)
    assert all(x.equals(y) for x, y in zip(a, b, strict=False))
    assert a.draw_index == b.draw_index
    np.testing.assert_array_equal(m.record_loglik(df.head(20)), back.record_loglik(df.head(20)))
    np.testing.assert_array_equal(m.dataset_loglik(a), back.dataset_loglik(a))
    # full synthesis needs no confidential data in the folder
    assert not (tmp_path / "model" / "data.parquet").exists()


def test_dpmpm_partial_synthesis_saves_data(tmp_path):
    df = pd.DataFrame({"a": list("xyxyxyxy"), "b": list("ppqqppqq")})
    m = DPMPM(n_components=2, sampling=Sampling(tune=5, draws=10), progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m.fit(df, synthesized=["b"], random_seed=1)
    m.save(tmp_path / "p")
    meta = json.loads((tmp_path / "p" / "model.json").read_text())
    assert meta["confidential"] is True and meta["data_file"] == "data.parquet"
    back = load_model(tmp_path / "p")
    a, b = m.synthesize(2, random_seed=1), back.synthesize(2, random_seed=1)
    assert all(x.equals(y) for x, y in zip(a, b, strict=False))
    assert all(z["a"].equals(df["a"]) for z in b)


# the fixture's short chains: rebuilding from their draws repeats the convergence warning
@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")
def test_dpmpm_from_posterior_equals_fit(fitted_dpmpm):
    m, df = fitted_dpmpm
    post = {name: m.posterior_["posterior"][name].values for name in
            ["alpha", "V"] + [f"phi_{j}" for j in range(4)]}
    rebuilt = DPMPM.from_posterior(post, m.schema_, n_records=len(df))
    np.testing.assert_allclose(rebuilt._stacked("pi"), m._stacked("pi"), rtol=1e-12)
    np.testing.assert_allclose(
        rebuilt.record_loglik(df.head(10)), m.record_loglik(df.head(10)), rtol=1e-12
    )
    # a DataTree works too
    again = DPMPM.from_posterior(m.posterior_, m.schema_, n_records=len(df))
    assert again.n_draws == m.n_draws


def _sigint_at_sweep(monkeypatch, at: int) -> tuple[pd.DataFrame, dict]:
    """A small table and a DPMPM step that sends this process SIGINT at sweep ``at`` (counted
    over all chains, in ``calls["n"]``; ``calls["handler"]`` is the SIGINT handler then)."""
    import os
    import signal

    from bayes_risk.models.dpmpm.step import DPMPMGibbs

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.choice(["x", "y"], 60), "b": rng.choice(["u", "v", "w"], 60)})
    calls = {"n": 0, "handler": None}
    real_step = DPMPMGibbs.step

    def step(self, point):
        calls["n"] += 1
        if calls["n"] == at:
            calls["handler"] = signal.getsignal(signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
        return real_step(self, point)

    monkeypatch.setattr(DPMPMGibbs, "step", step)
    return df, calls


def test_ctrl_c_stops_every_chain_and_returns_no_partial_posterior(monkeypatch):
    """PyMC's sequential sampler catches KeyboardInterrupt per chain and goes on with the next
    one; a fit must instead stop at once and raise, never return a truncated posterior."""
    import signal

    from bayes_risk.models import DPMPM

    df, calls = _sigint_at_sweep(monkeypatch, 50)  # during the first chain's warm-up
    model = DPMPM(n_components=3,
                  sampling=Sampling(tune=200, draws=2000, chains=2, cores=1), progressbar=False)
    with pytest.raises(KeyboardInterrupt):
        model.fit(df, categorical=["a", "b"], random_seed=1)
    assert calls["n"] < 60, calls  # the second chain did not run its 2,200 sweeps
    assert getattr(model, "posterior_", None) is None
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored


@pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")  # tiny run
def test_an_ignored_sigint_stays_ignored(monkeypatch):
    """A fit started with SIGINT ignored (a background job of a script) is not made
    interruptible by it: the signal goes on being ignored and the fit completes."""
    import signal

    from bayes_risk.models import DPMPM

    df, calls = _sigint_at_sweep(monkeypatch, 50)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        model = DPMPM(n_components=3,
                      sampling=Sampling(tune=50, draws=50, chains=2, cores=1), progressbar=False)
        model.fit(df, categorical=["a", "b"], random_seed=1)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert calls["handler"] is signal.SIG_IGN  # ignored during the fit too
    assert calls["n"] == 200 and model.posterior_ is not None
