"""DPMPM with structural zeros (Manrique-Vallier & Reiter 2014; Manrique-Vallier & Hu 2018).

Exact checks against brute-force enumeration of a 2 x 3 x 2 table (every likelihood entry point
the attribute engine uses, synthesis), the truncated-multinomial augmentation against a model
whose truncated posterior is known, the ss16pusa structural zeros, errors and persistence.
"""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk.attribute import EstimatorSpec
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models import Sampling, load_model
from bayes_risk.models.dpmpm.coding import encode
from bayes_risk.models.dpmpm.dpmpm import DPMPM
from bayes_risk.models.dpmpm.zeros import StructuralZeros, read_structural_zeros

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.ConvergenceWarning")

D = (2, 3, 2)
NAMES = ["a", "b", "c"]
# three patterns, the third overlapping both others: (2, 3, 2) and (2, 1, 2) are in two of them
ZEROS = pd.DataFrame({"a": [2, None, 2], "b": [3, 1, None], "c": [None, 2, 2]})
CELLS = pd.DataFrame(
    list(itertools.product(*[range(1, d + 1) for d in D])), columns=NAMES
)


def in_zeros(a, b, c):
    return (a == 2 and b == 3) or (b == 1 and c == 2) or (a == 2 and c == 2)


def schema(synthesized=NAMES):
    df = pd.DataFrame({n: pd.Categorical([1, 2], categories=list(range(1, d + 1)))
                       for n, d in zip(NAMES, D, strict=True)})
    return infer_schema(df, synthesized=list(synthesized))


def posterior(H=3, K=2, seed=0):
    rng = np.random.default_rng(seed)
    post = {"pi": rng.dirichlet(np.ones(K), size=(1, H))}
    for j, d in enumerate(D):
        post[f"phi_{j}"] = rng.dirichlet(np.ones(d), size=(1, H, K))
    return post


def brute(post):
    """``[H, 12]`` unrestricted and truncated cell probabilities, and the in-S mask."""
    pi = post["pi"][0]
    H = pi.shape[0]
    p = np.zeros((H, len(CELLS)))
    for r, (a, b, c) in enumerate(CELLS.itertuples(index=False)):
        p[:, r] = np.einsum("hk,hk,hk,hk->h", pi, post["phi_0"][0][:, :, a - 1],
                            post["phi_1"][0][:, :, b - 1], post["phi_2"][0][:, :, c - 1])
    inside = np.array([in_zeros(*row) for row in CELLS.itertuples(index=False)])
    trunc = np.where(inside, 0.0, p)
    return p, trunc / trunc.sum(axis=1, keepdims=True), inside


def model(synthesized=NAMES, **kw):
    kw.setdefault("structural_zeros", ZEROS)
    return DPMPM.from_posterior(posterior(), schema(synthesized), n_records=len(CELLS), **kw)


# ---------------------------------------------------------------------------- the set S
def test_disjoint_boxes_give_the_mass_of_the_union():
    post = posterior()
    p, _, inside = brute(post)
    m = model()
    zs = m._zeros
    assert zs.contains(encode(m.schema_, CELLS)).tolist() == inside.tolist()
    np.testing.assert_allclose(np.exp(zs.log_mass(m.state_.phi, m.state_.log_pi)),
                               p[:, inside].sum(axis=1), rtol=1e-12)
    # disjoint: no cell is covered twice
    rows = encode(m.schema_, CELLS) + zs.offsets
    assert (np.stack([b[rows].all(axis=1) for b in zs.boxes]).sum(axis=0) <= 1).all()


def test_pymc_model_carries_the_normaliser():
    post = posterior(H=1)
    free = DPMPM.from_posterior(post, schema(), n_records=len(CELLS))
    m = DPMPM.from_posterior(post, schema(), n_records=len(CELLS), structural_zeros=ZEROS)
    recs = CELLS[[not in_zeros(*r) for r in CELLS.itertuples(index=False)]]
    point = {k: v[0, 0] for k, v in post.items() if k != "pi"}
    pm_z, pm_f = m.pymc_model(recs), free.pymc_model(recs)
    point = {v.name: point[v.name] for v in pm_z.value_vars if v.name in point}
    point["alpha"] = np.asarray(1.0)
    point["V"] = np.asarray(post["pi"][0, 0, :1])
    diff = (pm_z.compile_logp(mode="FAST_COMPILE")(point)
            - pm_f.compile_logp(mode="FAST_COMPILE")(point))
    log_allowed = m._zeros.log_allowed(m.state_.phi, m.state_.log_pi)[0]
    assert diff == pytest.approx(-len(recs) * log_allowed, rel=1e-9)


# ---------------------------------------------------------------------------- likelihoods
def test_record_loglik_is_the_truncated_distribution():
    post = posterior()
    _, trunc, inside = brute(post)
    ll = model().record_loglik(CELLS)
    assert np.all(ll[:, inside] == -np.inf)
    np.testing.assert_allclose(np.exp(ll), trunc, rtol=1e-10, atol=1e-15)
    # a missing value is summed over the allowed cells only
    recs = pd.DataFrame({"a": [None, 1], "b": [2, None], "c": [2, 1]})
    ll = model().record_loglik(recs)
    c = CELLS
    want0 = trunc[:, ((c.b == 2) & (c.c == 2)).to_numpy()].sum(axis=1)
    want1 = trunc[:, ((c.a == 1) & (c.c == 1)).to_numpy()].sum(axis=1)
    np.testing.assert_allclose(np.exp(ll), np.stack([want0, want1], axis=1), rtol=1e-10)


def test_neighbourhood_candidates_in_zeros_get_probability_zero():
    post = posterior()
    _, trunc, inside = brute(post)
    m = model()
    allowed = CELLS[~inside].reset_index(drop=True)
    out = m.neighbourhood_loglik(allowed)
    lookup = {tuple(r): i for i, r in enumerate(CELLS.itertuples(index=False))}
    for i, rec in enumerate(allowed.itertuples(index=False)):
        cands = [tuple(rec)]
        for j, d in enumerate(D):
            for lv in range(1, d + 1):
                if lv != rec[j]:
                    cands.append(tuple(lv if jj == j else rec[jj] for jj in range(3)))
        with np.errstate(divide="ignore"):
            want = np.log(trunc[:, [lookup[c] for c in cands]])
        np.testing.assert_allclose(out[:, i, :], want, rtol=1e-10)
    assert np.isneginf(out).any()


def test_dataset_loglik_in_each_mode():
    post = posterior()
    _, trunc, inside = brute(post)
    ok = ~inside
    rng = np.random.default_rng(3)
    allowed = CELLS[ok].reset_index(drop=True)
    z = allowed.iloc[rng.integers(0, len(allowed), 6)].reset_index(drop=True)
    y = allowed.iloc[rng.integers(0, len(allowed), 6)].reset_index(drop=True)
    idx = {tuple(r): i for i, r in enumerate(CELLS.itertuples(index=False))}
    # marginal, full synthesis
    m = DPMPM.from_posterior(post, schema(), n_records=6, structural_zeros=ZEROS)
    want = sum(np.log(trunc[:, idx[tuple(r)]]) for r in z.itertuples(index=False))
    np.testing.assert_allclose(m.dataset_loglik([z])[:, 0], want, rtol=1e-10)
    bad = z.copy()
    bad.loc[0, ["a", "b"]] = [2, 3]
    assert np.all(m.dataset_loglik([bad]) == -np.inf)
    # conditional_us, c synthesized: p(c | a, b) of the truncated model
    released = y.assign(c=z["c"])
    m = DPMPM.from_posterior(post, schema(["c"]), data=y, structural_zeros=ZEROS)
    want = 0.0
    for r in released.itertuples(index=False):
        den = sum(trunc[:, idx[(r.a, r.b, c)]] for c in (1, 2))
        with np.errstate(divide="ignore"):
            want = want + np.log(trunc[:, idx[tuple(r)]] / den)
    np.testing.assert_allclose(m.dataset_loglik([released])[:, 0], want, rtol=1e-10)
    # posterior_class: class from p(k | y), c from φ_kc truncated to the allowed cells
    m = DPMPM.from_posterior(post, schema(["c"]), data=y, structural_zeros=ZEROS,
                             synthesis_mode="posterior_class")
    pi, phis = post["pi"][0], [post[f"phi_{j}"][0] for j in range(3)]
    want = 0.0
    for t, r in zip(y.itertuples(index=False), released.itertuples(index=False), strict=True):
        pk = pi * phis[0][:, :, t.a - 1] * phis[1][:, :, t.b - 1] * phis[2][:, :, t.c - 1]
        pk /= pk.sum(axis=1, keepdims=True)
        norm = sum(phis[2][:, :, c - 1] for c in (1, 2) if not in_zeros(r.a, r.b, c))
        lik = 0.0 if in_zeros(*r) else phis[2][:, :, r.c - 1] / norm
        want = want + np.log((pk * lik).sum(axis=1))
    np.testing.assert_allclose(m.dataset_loglik([released])[:, 0], want, rtol=1e-10)


def test_own_record_delta_posterior_class():
    post = posterior()
    y = pd.DataFrame({"a": [1], "b": [2], "c": [1]})
    m = DPMPM.from_posterior(post, schema(["b", "c"]), data=y, structural_zeros=ZEROS,
                             synthesis_mode="posterior_class")
    z = pd.DataFrame({"a": [1], "b": [3], "c": [2]})
    cands = pd.DataFrame({"b": [1, 3, 2], "c": [2, 1, 2]})  # (1, 1, 2) is impossible
    got = m.own_record_delta(0, cands, [z])[:, 0, :]
    pi, phis = post["pi"][0], [post[f"phi_{j}"][0] for j in range(3)]

    def ell(b, c):
        pk = pi * phis[0][:, :, 0] * phis[1][:, :, b - 1] * phis[2][:, :, c - 1]
        pk /= pk.sum(axis=1, keepdims=True)
        norm = sum(phis[1][:, :, bb - 1] * phis[2][:, :, cc - 1]
                   for bb in (1, 2, 3) for cc in (1, 2) if not in_zeros(1, bb, cc))
        return np.log((pk * phis[1][:, :, 2] * phis[2][:, :, 1] / norm).sum(axis=1))

    assert np.all(got[:, 0] == -np.inf)
    for g, (b, c) in enumerate(zip(cands.b, cands.c, strict=True)):
        if g:
            np.testing.assert_allclose(got[:, g], ell(b, c) - ell(2, 1), rtol=1e-9)


# ---------------------------------------------------------------------------- synthesis
@pytest.mark.parametrize("mode", ["marginal", "posterior_class"])
def test_synthesis_draws_the_truncated_distribution(mode):
    post = posterior(H=1)
    _, trunc, inside = brute(post)
    n = 20000
    data = pd.DataFrame({"a": [1] * n, "b": [2] * n, "c": [1] * n})
    if mode == "marginal":
        m = DPMPM.from_posterior(post, schema(), n_records=n, structural_zeros=ZEROS)
        want = trunc[0]
    else:  # a, b released as they are; c from the class of (1, 2, 1)
        m = DPMPM.from_posterior(post, schema(["c"]), data=data, structural_zeros=ZEROS,
                                 synthesis_mode="posterior_class")
        pk = post["pi"][0, 0] * post["phi_0"][0, 0][:, 0] * post["phi_1"][0, 0][:, 1] \
            * post["phi_2"][0, 0][:, 0]
        pk /= pk.sum()
        want = np.zeros(len(CELLS))
        want[2], want[3] = pk @ post["phi_2"][0, 0][:, 0], pk @ post["phi_2"][0, 0][:, 1]
    z = m.synthesize(1, random_seed=4)[0]
    codes = encode(m.schema_, z)
    assert not m._zeros.contains(codes).any()
    flat = np.ravel_multi_index(codes.T, D)
    freq = np.bincount(flat, minlength=len(CELLS)) / n
    se = np.sqrt(want * (1 - want) / n)
    assert np.all(np.abs(freq - want) <= 4 * se + 1e-12)


# ---------------------------------------------------------------------------- the sampler
def test_augmentation_recovers_the_truncated_independence_model():
    """Two binary variables, cell (2, 2) impossible, K = 1: the truncated independence model
    ``p ∝ (1-a)(1-b), (1-a)b, a(1-b)`` fits cell shares 0.3 / 0.3 / 0.4 with ``b = 1/2`` and
    ``a = 4/7`` — not the observed margin 0.4 that a fit ignoring the zero would give."""
    df = pd.DataFrame({"x": [1] * 600 + [2] * 400, "y": [1] * 300 + [2] * 300 + [1] * 400})
    zeros = pd.DataFrame({"x": [2], "y": [2]})
    m = DPMPM(n_components=1, sampling=Sampling(tune=100, draws=1500, chains=1), progressbar=False,
              structural_zeros=zeros)
    m.fit(df, categorical=["x", "y"], random_seed=7)
    a = m.posterior_["posterior"]["phi_0"].values[..., 0, 1].ravel()
    b = m.posterior_["posterior"]["phi_1"].values[..., 0, 1].ravel()
    assert a.mean() == pytest.approx(4 / 7, abs=0.02)  # posterior sd about 0.02
    assert b.mean() == pytest.approx(0.5, abs=0.02)
    cells = pd.DataFrame({"x": [1, 1, 2, 2], "y": [1, 2, 1, 2]})
    pp = np.exp(m.record_loglik(cells)).mean(axis=0)
    np.testing.assert_allclose(pp, [0.3, 0.3, 0.4, 0.0], atol=0.02)
    # the convergence report's cells are the truncated model's (P(x = 1) = 0.6, not 1 - a)
    conv = m.convergence_["mean"]
    assert conv["P(x=1)"] == pytest.approx(0.6, abs=0.02)
    assert conv["P(x=1,y=1)"] == pytest.approx(0.3, abs=0.02)
    # without the zero, the margin of x is the observed 0.4
    free = DPMPM(n_components=1,
                 sampling=Sampling(tune=100, draws=500, chains=1), progressbar=False)
    free.fit(df, categorical=["x", "y"], random_seed=7)
    assert free.posterior_["posterior"]["phi_0"].values[..., 0, 1].mean() == pytest.approx(
        0.4, abs=0.02)


def test_missing_values_are_imputed_outside_the_zeros():
    rng = np.random.default_rng(2)
    x = rng.integers(1, 3, 400)
    y = np.where(x == 2, 1, rng.integers(1, 3, 400))
    df = pd.DataFrame({"x": x.astype(float), "y": y.astype(float)})
    df.loc[:99, "y"] = np.nan
    m = DPMPM(n_components=3, sampling=Sampling(tune=50, draws=50, chains=1), progressbar=False,
              structural_zeros=pd.DataFrame({"x": [2], "y": [2]}))
    m.fit(df, categorical=["x", "y"], random_seed=3)
    z = m.synthesize(3, random_seed=1)
    assert all(not ((s["x"] == 2) & (s["y"] == 2)).any() for s in z)
    # the x = 2 records with missing y: P(y = 2 | x = 2) = 0 in the model
    ll = m.record_loglik(pd.DataFrame({"x": [2.0, 2.0], "y": [2.0, np.nan]}))
    assert np.all(ll[:, 0] == -np.inf) and np.all(np.isfinite(ll[:, 1]))


# ---------------------------------------------------------------------------- ss16pusa
@pytest.fixture(scope="module")
def ss16():
    data = pd.read_csv(shared_path("data", "ss16pusa_sample_zeros.csv"))
    return data, shared_path("data", "ss16pusa_ds_MCZ.csv")


def impossible_share(model, zeros_path, syn):
    zs = StructuralZeros(read_structural_zeros(zeros_path), model.schema_.names,
                         [c.levels for c in model.schema_])
    return float(np.mean([zs.contains(encode(model.schema_, s)).mean() for s in syn]))


def test_ss16pusa_no_impossible_record_with_zeros(ss16):
    data, mcz = ss16
    settings = dict(n_components=20,
                    sampling=Sampling(tune=100, draws=50, chains=1), progressbar=False)
    with_z = DPMPM(structural_zeros=mcz, **settings).fit(data, random_seed=1)
    without = DPMPM(**settings).fit(data, random_seed=1)
    assert impossible_share(with_z, mcz, with_z.synthesize(5, random_seed=2)) == 0.0
    assert impossible_share(without, mcz, without.synthesize(5, random_seed=2)) > 0.0
    assert len(with_z._zeros.boxes) == 8


def test_observed_record_in_a_zero_is_an_error(ss16):
    data, mcz = ss16
    bad = data.copy()
    bad.loc[5, ["AGEP", "SCHL"]] = ["16", "Doctorate degree"]
    with pytest.raises(SchemaError, match="row 5 lies in a structural zero") as err:
        DPMPM(n_components=3, sampling=Sampling(tune=5, draws=5, chains=1), progressbar=False,
              structural_zeros=mcz).fit(bad)
    assert err.value.code == "STRUCTURAL_ZERO_OBSERVED"
    # a missing value that only impossible levels could fill is impossible too
    only = pd.DataFrame({"x": [1, 2, 2], "y": [1, 1, None]})
    zeros = pd.DataFrame({"x": [2]})
    with pytest.raises(SchemaError, match="row 1 lies"):
        DPMPM(n_components=2, sampling=Sampling(tune=5, draws=5, chains=1), progressbar=False,
              structural_zeros=zeros).fit(only, categorical=["x", "y"])


@pytest.mark.parametrize(
    ("table", "exc", "match"),
    [
        (pd.DataFrame({"AGE": ["16"]}), SchemaError, r"column\(s\) \['AGE'\] are not columns"),
        (pd.DataFrame({"AGEP": ["15"]}), SchemaError, "'15' is not a level of column 'AGEP'"),
        (pd.DataFrame({"AGEP": [None], "SEX": [None]}), ValidationError, "has no level"),
        (pd.DataFrame(), ValidationError, "has no pattern"),
        (3, ValidationError, "must be a DataFrame, the path"),
        ("/nonexistent/mcz.csv", ValidationError, "does not exist"),
    ],
)
def test_table_errors(ss16, table, exc, match):
    data, _ = ss16
    with pytest.raises(exc, match=match):
        DPMPM(n_components=2, sampling=Sampling(tune=5, draws=5, chains=1), progressbar=False,
              structural_zeros=table).fit(data)


def test_marginal_partial_synthesis_is_refused():
    with pytest.raises(ValidationError, match="conditional_us"):
        model(["c"], data=CELLS, synthesis_mode="marginal")


def test_save_load_round_trip(tmp_path, ss16):
    data, mcz = ss16
    m = DPMPM(n_components=5, sampling=Sampling(tune=20, draws=10, chains=1), progressbar=False,
              structural_zeros=mcz).fit(data.iloc[:300], random_seed=1)
    m.save(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    table = meta["settings"]["structural_zeros"]
    assert len(table) == 8 and table[0]["AGEP"] == "16" and table[0]["MAR"] is None
    back = load_model(tmp_path / "m")
    np.testing.assert_array_equal(back._zeros.boxes, m._zeros.boxes)
    recs = data.iloc[:20]
    np.testing.assert_allclose(back.record_loglik(recs), m.record_loglik(recs))
    syn = back.synthesize(2, random_seed=3)
    assert impossible_share(back, mcz, syn) == 0.0
    for a, b in zip(syn, m.synthesize(2, random_seed=3), strict=True):
        pd.testing.assert_frame_equal(a, b)


def test_attribute_risk_gives_impossible_candidates_probability_zero(ss16):
    from bayes_risk.attribute import attribute_risk

    data, mcz = ss16
    data = data.iloc[:300].reset_index(drop=True)
    m = DPMPM(n_components=5, sampling=Sampling(tune=50, draws=100, chains=1), progressbar=False,
              structural_zeros=mcz).fit(data, random_seed=1)
    syn = m.synthesize(2, random_seed=2)
    recs = [int(i) for i in np.flatnonzero(data["SCHL"].eq("Bachelor's degree"))[:2]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(data, syn, model=m, records=recs, random_seed=3, progressbar=False,
                             estimator=EstimatorSpec(bootstrap=20))
    for k, i in enumerate(recs):
        post = res.candidate_posteriors(i)
        full = post.copy()
        for c in data.columns:
            if c not in full.columns:
                full[c] = data.loc[i, c]
        inside = m._zeros.contains(encode(m.schema_, full[list(data.columns)]))
        assert inside.any()  # AGEP = 16 or 17 with a Bachelor's degree
        assert np.all(res.loglik[k][inside] == -np.inf)
        assert np.all(post["posterior"].to_numpy()[inside] == 0.0)
        assert np.isfinite(res.loglik[k][~inside]).all()
        assert post["posterior"].sum() == pytest.approx(1.0)


def test_cli_fit_with_structural_zeros_then_synthesize(tmp_path, ss16, capsys):
    import bayes_risk.cli as cli
    from bayes_risk.data import SyntheticData

    data, mcz = ss16
    path = tmp_path / "data.csv"
    data.iloc[:300].to_csv(path, index=False)
    base = ["fit", str(path), "--method", "dpmpm", "--components", "4", "--tune", "20",
            "--draws", "20", "--chains", "1", "--quiet", "--random-seed", "1"]
    mdir, sdir = tmp_path / "model", tmp_path / "syn"
    assert cli.main([*base, "--structural-zeros", str(mcz), "--out", str(mdir)]) == 0
    meta = json.loads((mdir / "model.json").read_text())
    assert len(meta["settings"]["structural_zeros"]) == 8
    assert cli.main(["synthesize", "--model", str(mdir), "-m", "3", "--random-seed", "2",
                     "--out", str(sdir)]) == 0
    syn = SyntheticData.load(sdir)
    assert impossible_share(load_model(mdir), mcz, syn) == 0.0
    # a table that does not match the data: a clear error, no model folder
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"AGE": ["16"]}).to_csv(bad, index=False)
    capsys.readouterr()
    rc = cli.main([*base, "--structural-zeros", str(bad), "--out", str(tmp_path / "m2")])
    assert rc == 2 and "['AGE'] are not columns" in capsys.readouterr().err
    assert not (tmp_path / "m2").exists()


def test_enumerated_imputation_is_the_truncated_conditional():
    """The exact fallback of the imputation step (records whose rejection rate is high)."""
    from bayes_risk.models.dpmpm.zeros import Augmentation

    zs = StructuralZeros(pd.DataFrame({"x": [2, 2], "y": [1, 2]}), ["x", "y"], [[1, 2], [1, 2, 3]])
    codes = np.array([[1, -1]] * 4000)
    aug = Augmentation(zs, codes)
    phi = np.array([[0.3, 0.8], [0.7, 0.2], [0.5, 0.1], [0.4, 0.1], [0.1, 0.8]])  # [L=5, K=2]
    log_pi = np.log([0.4, 0.6])
    y, z = codes.copy(), np.zeros(4000, dtype=np.int64)
    left = aug._enumerate(np.arange(4000), y, z, np.log(phi), log_pi, np.random.default_rng(1))
    assert left.size == 0 and (y[:, 1] == 2).all()  # x = 2 allows only y = 3
    w = np.exp(log_pi) * phi[1] * phi[4]
    want = w[1] / w.sum()
    assert z.mean() == pytest.approx(want, abs=4 * np.sqrt(want * (1 - want) / 4000))
