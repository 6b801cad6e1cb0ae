"""The multinomial–Dirichlet synthesizer and its ε (docs/methods/privacy.md).

* the ε formula against the likelihood ratio, exhaustively: every table of ``n`` records over
  ``K`` cells, every neighbour (one record moved), every release of ``m`` datasets; the release's
  probability written here independently (the Dirichlet–multinomial mass) and checked against
  the synthesizer's own draws;
* attribute risk on a release of it against the exact posterior (closed form), and the bound
  ``e^ε`` on every record's Bayes factor;
* ε beside the attribute risk: ``release_privacy``, the attribute summary, post-processing;
* the model's refusals.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import gammaln, logsumexp

import bayes_risk as br
from bayes_risk.exceptions import NotSupportedError, SchemaError, ValidationError
from bayes_risk.models import DPMultinomial, Sampling
from bayes_risk.privacy import dirichlet_alpha, dirichlet_epsilon, release_privacy


def _log_release(outputs: tuple[np.ndarray, ...], counts: np.ndarray, alpha: float) -> float:
    """log P(release | table): each dataset's cell counts ``s`` ~ DirMult(n, α + counts),
    independently (its own draw of θ); the order of the records adds the multinomial
    coefficient, the same under every table, so the ratio is that of the count vectors."""
    a = alpha + counts
    return sum(gammaln(s.sum() + 1) - gammaln(s + 1).sum() + gammaln(a.sum())
               - gammaln(a.sum() + s.sum()) + (gammaln(a + s) - gammaln(a)).sum()
               for s in outputs)


def _compositions(n: int, k: int) -> list[np.ndarray]:
    """Every vector of ``k`` non-negative counts summing to ``n``."""
    return [np.bincount(c, minlength=k) for c in
            itertools.combinations_with_replacement(range(k), n)]


@pytest.mark.parametrize("K, n, alpha, m", [(2, 1, 0.5, 1), (2, 3, 0.5, 2), (3, 2, 2.0, 1),
                                             (3, 3, 0.3, 2), (4, 2, 1.0, 1), (2, 4, 5.0, 1)])
def test_epsilon_is_the_largest_log_likelihood_ratio_over_all_neighbours_and_releases(
        K, n, alpha, m):
    """max over tables D, neighbours D' (one record's cell changed) and releases Z of
    log P(Z | D) / P(Z | D') equals dirichlet_epsilon(α, n, m) = m log(1 + n/α): the bound
    holds everywhere and is attained."""
    tables = _compositions(n, K)
    releases = list(itertools.product(_compositions(n, K), repeat=m))
    worst = -np.inf
    for d in tables:
        for i, j in itertools.permutations(range(K), 2):
            if d[i] == 0:
                continue
            nb = d.copy()
            nb[i] -= 1
            nb[j] += 1
            for z in releases:
                worst = max(worst, _log_release(z, d, alpha) - _log_release(z, nb, alpha))
    assert worst == pytest.approx(dirichlet_epsilon(alpha=alpha, n_records=n, m=m), rel=1e-12,
                                  abs=1e-12)


def test_alpha_for_epsilon_inverts_the_formula_and_bad_values_are_refused():
    for eps, n in ((0.1, 10), (1.0, 200), (8.0, 5_000)):
        assert dirichlet_epsilon(alpha=dirichlet_alpha(epsilon=eps, n_records=n),
                                 n_records=n) == pytest.approx(eps, rel=1e-12)
    assert dirichlet_epsilon(alpha=1.0, n_records=100, m=3) == pytest.approx(3 * math.log(101))
    for bad in (0, -1.0, math.inf, True, "1"):
        with pytest.raises(ValidationError, match="alpha must be a finite number > 0"):
            dirichlet_epsilon(alpha=bad, n_records=10)
        with pytest.raises(ValidationError, match="epsilon must be a finite number > 0"):
            dirichlet_alpha(epsilon=bad, n_records=10)
    with pytest.raises(ValidationError, match="m must be an integer >= 1"):
        dirichlet_epsilon(alpha=1.0, n_records=10, m=0)


def _binary(n: int, seed: int, p: float = 0.3, columns: str = "ab") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: pd.Categorical(rng.choice(["0", "1"], n, p=[1 - p, p]),
                                           categories=["0", "1"]) for c in columns})


def _cells(t: pd.DataFrame) -> np.ndarray:
    codes = np.stack([t[c].cat.codes.to_numpy() for c in t.columns])
    return np.ravel_multi_index(codes, [2] * t.shape[1])


def test_the_synthesizer_draws_the_release_the_formula_describes():
    """The mechanism whose ε is derived above is the model's: the cell counts of its synthetic
    datasets (each from its own exact posterior draw) follow DirMult(n, α + counts). 1,500
    datasets of 3 records over 4 cells (20 possible count vectors), chi-square at level 0.001."""
    reps = 1500
    data = _binary(3, 1)
    alpha = 0.7
    model = DPMultinomial(alpha=alpha, sampling=Sampling(draws=reps, chains=1),
                          random_seed=5).fit(data)
    counts = np.bincount(_cells(data), minlength=4)
    out = [tuple(np.bincount(_cells(z), minlength=4)) for z in model.synthesize(reps)]
    support = [tuple(s) for s in _compositions(3, 4)]
    observed = np.array([out.count(s) for s in support])
    expected = reps * np.exp([_log_release((np.array(s),), counts, alpha) for s in support])
    assert expected.sum() == pytest.approx(reps) and expected.min() > 5
    assert stats.chisquare(observed, expected).pvalue > 1e-3


@pytest.fixture(scope="module")
def release():
    """30 records of three binary columns (8 cells, several holding one record), α = 1,
    H = 4,000 exact draws, m = 2."""
    data = _binary(30, 4, p=0.25, columns="abc")
    model = DPMultinomial(alpha=1.0, sampling=Sampling(draws=2000, chains=2),
                          random_seed=1).fit(data)
    return data, model, model.synthesize(2, random_seed=3)


def _exact_p_true(data: pd.DataFrame, syn: br.SyntheticData, alpha: float) -> np.ndarray:
    """The worst-case intruder's posterior of each record's true cell over the 8 cells
    (uniform prior), by the closed form: p(Z | y_i = c, y_-i) = Π_l DirMult(s_l; α + n_-i + e_c)."""
    cy = np.bincount(_cells(data), minlength=8)
    outputs = tuple(np.bincount(_cells(z), minlength=8) for z in syn)
    out = []
    for ci in _cells(data):
        others = cy - np.eye(8, dtype=int)[ci]
        ll = np.array([_log_release(outputs, others + np.eye(8, dtype=int)[c], alpha)
                       for c in range(8)])
        out.append(np.exp(ll[ci] - logsumexp(ll)))
    return np.array(out)


def test_attribute_risk_of_its_release_matches_the_exact_posterior(release):
    """Every record's p_true over the full candidate set within 0.015 of the exact value (the
    stabilised estimator from 4,000 exact draws of p(θ | y) and of p(θ | y, Z_(l)); observed
    error at most 0.005 with these seeds)."""
    data, model, syn = release
    res = br.attribute_risk(data, syn, model=model, candidates="full", random_seed=2,
                            progressbar=False)
    exact = _exact_p_true(data, syn, 1.0)
    est = res.records["p_true"].to_numpy()
    assert res.settings["estimator"] == "stabilised"
    np.testing.assert_allclose(est, exact, atol=0.015)
    alone = np.bincount(_cells(data), minlength=8)[_cells(data)] == 1
    assert alone.any()  # records alone in their cell, the ones differential privacy guards
    dp = res.settings["differential_privacy"]
    assert dp["epsilon"] == pytest.approx(2 * math.log(31))
    assert dp["m"] == 2 and dp["n_records"] == 30 and dp["alpha"] == 1.0


def test_no_record_bayes_factor_exceeds_e_to_the_epsilon():
    """A release with ε = 0.9 (e^ε = 2.46): every record's Bayes factor of its true values —
    the exact ones and the estimated ones — is below it, so none counts as evidence (factor 3),
    and the summary says so beside the attribute risk."""
    data = _binary(40, 7, p=0.2, columns="abc")
    model = DPMultinomial(epsilon=0.9, sampling=Sampling(draws=1000, chains=2),
                          random_seed=2).fit(data)
    syn = model.synthesize(1, random_seed=4)
    bound = math.exp(0.9)
    exact = _exact_p_true(data, syn, model.alpha_)
    assert (7 * exact / (1 - exact)).max() < bound  # BF = (G - 1) p / (1 - p), uniform prior
    res = br.attribute_risk(data, syn, model=model, candidates="full", random_seed=1,
                            progressbar=False)
    bf = res.to_dataframe()["bayes_factor"].to_numpy()
    assert bf.max() < bound * 1.02  # Monte Carlo error of the estimate (4 % of the bound's log)
    d = res.to_dict()
    assert d["all"]["prop_evidence"] == 0.0
    summary = res.summary()
    assert ("differential privacy ε of the release", pytest.approx(0.9)) in summary.header
    note = next(n for n in summary.notes if n.startswith("Differential privacy:"))
    assert f"e^ε = {bound:.4g}" in note
    assert f"the largest estimated here is {d['all']['bayes_factor_quantiles']['100%']:.3g}" in note


def test_release_privacy_reads_the_manifest_and_what_ends_it(release, tmp_path):
    data, model, syn = release
    g = release_privacy(syn)
    assert g.epsilon == pytest.approx(2 * math.log(31)) and g.m == 2 and not g.reason
    assert g.bayes_factor_bound == pytest.approx(31.0**2)
    # the manifest keeps it; ε follows the datasets released (one dataset: half)
    back = br.read_synthetic(syn.save(tmp_path / "rel"))
    assert release_privacy(back) == g
    one = br.SyntheticData(syn.datasets[:1], method=syn.method, extra=syn.extra)
    assert release_privacy(one).epsilon == pytest.approx(math.log(31))
    # plain tables and other synthesizers' releases have none
    assert release_privacy(list(syn.datasets)) is None
    assert release_privacy(br.SyntheticData(syn.datasets, method="cart")) is None
    # post-processing that reads the confidential table ends it; one of the release alone not
    ended = br.SyntheticData(syn.datasets, method=syn.method, extra={
        **syn.extra, "post_processing": [{"operation": "smoothing"},
                                         {"operation": "remove_replicated_uniques"}]})
    g2 = release_privacy(ended)
    assert g2.epsilon == math.inf and "remove_replicated_uniques" in g2.reason
    kept = br.SyntheticData(syn.datasets, method=syn.method, extra={
        **syn.extra, "post_processing": [{"operation": "bottom_top_coding"}]})
    assert release_privacy(kept) == g
    damaged = br.SyntheticData(syn.datasets, extra={"differential_privacy": {"alpha": "x"}})
    with pytest.raises(ValidationError) as err:
        release_privacy(damaged)
    assert err.value.code == "MANIFEST_INVALID"
    # draws made elsewhere carry no guarantee: their release records none
    adopted = DPMultinomial(alpha=1.0).from_posterior(
        model.posterior_, model.schema_, n_records=30, alpha=1.0)
    assert release_privacy(adopted.synthesize(1, random_seed=1)) is None


def test_refusals_name_the_setting_and_the_code():
    data = _binary(20, 1)
    for kw, code in (({}, "OPTION_REQUIRED"), ({"epsilon": 1.0, "alpha": 1.0}, "OPTION_CONFLICT")):
        with pytest.raises(ValidationError, match=r"(exactly one of epsilon and alpha|epsilon "
                           r"and alpha: give one of them, not both) \(the ε") as err:
            DPMultinomial(**kw).fit(data)
        assert err.value.code == code
    for bad in (0.0, -2.0, math.inf):
        with pytest.raises(ValidationError, match="epsilon must be a finite number > 0"):
            DPMultinomial(epsilon=bad).fit(data)
    with pytest.raises(NotSupportedError) as err:
        DPMultinomial(epsilon=1.0).fit(data, synthesized=["a"])
    assert err.value.code == "PARTIAL_NOT_PRIVATE" and "['b']" in str(err.value)
    with pytest.raises(NotSupportedError) as err:
        DPMultinomial(epsilon=1.0).fit(data, records=[0, 1])
    assert err.value.code == "PARTIAL_NOT_PRIVATE"
    with pytest.raises(SchemaError) as err:
        DPMultinomial(epsilon=1.0).fit(data.assign(x=np.linspace(0, 1, 20)),
                                       schema=br.infer_schema(data.assign(
                                           x=np.linspace(0, 1, 20))))
    assert err.value.code == "WRONG_DTYPE" and "'x'" in str(err.value)


def test_declared_levels_no_record_holds_are_kept_as_cells():
    """The cells are the guarantee's domain: a declared level without records stays a cell (of
    prior weight only), never dropped because of the data."""
    data = _binary(20, 2).assign(c=pd.Categorical(["x"] * 20, categories=["x", "y", "z"]))
    model = DPMultinomial(alpha=0.5, sampling=Sampling(draws=50, chains=1),
                          random_seed=1).fit(data)
    assert model.schema_["c"].levels == ("x", "y", "z")
    assert model.posterior_["posterior"]["log_theta"].shape == (1, 50, 12)


def test_saved_model_loads_its_state_and_refuses_a_tampered_alpha(tmp_path):
    import json

    from bayes_risk.models import load_model
    from bayes_risk.models.persistence import write_model_json

    df = pd.DataFrame({"a": pd.Categorical(["x", "y", "x", "y"]),
                       "b": pd.Categorical(["u", "u", "v", "v"])})
    model = DPMultinomial(alpha=2.0, sampling=Sampling(draws=20, chains=1),
                          random_seed=1).fit(df)
    folder = model.save(tmp_path / "m")
    loaded = load_model(folder)
    assert loaded.state_.alpha == 2.0 and loaded.state_.exact_draws
    np.testing.assert_array_equal(loaded.state_.log_theta, model.state_.log_theta)
    meta = json.loads((folder / "model.json").read_text())
    meta["state"]["alpha"] = -1.0
    write_model_json(folder, meta)  # checksums recorded again: consistent, but not a model
    with pytest.raises(ValidationError, match="state field 'alpha' is -1.0") as err:
        load_model(folder)
    assert err.value.code == "MODEL_DAMAGED" and str(folder) in str(err.value)
