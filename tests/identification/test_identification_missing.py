"""Identification risk with missing known values (user guide, Missing values).

A target's missing known value matches any released value (``missing_known="any"``) or only a
missing one (``"level"``); a released missing value never matches an observed target value.
Worked counts by hand on a five-record file, then the engine (compiled and pure-numpy paths,
per-dataset and pooled) against a brute-force scan on random files with missing values.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk import MatchSpec, PopulationSpec
from bayes_risk.exceptions import ValidationError
from bayes_risk.identification import engine as _engine

# tiny files: no unique match in some dataset is expected (ZERO_UNIQUE)
pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.DataWarning")


def _five():
    y = pd.DataFrame({"sex": ["M", None, "M", "F", "F"], "race": ["W", "W", "B", "W", "B"]})
    z1 = y.assign(race=["W", "B", "B", "W", "W"])
    z2 = y.assign(race=["W", "W", "W", "B", "B"])
    return y, [z1, z2]


@pytest.mark.parametrize("mode, c1, t1", [
    # target 1 (sex missing, race W): "any" matches on race only — z1: records 0, 3, 4 (its own
    # record 1 has race B); z2: records 0, 1, 2. "level": sex must be missing too — z1: none;
    # z2: record 1 only.
    ("any", [3, 3], [0, 1]),
    ("level", [0, 1], [0, 1]),
])
def test_worked_counts_per_dataset(mode, c1, t1):
    y, z = _five()
    r = br.identification_risk(y, z, known=["sex", "race"], synthesized=["race"],
                               aggregation="per_dataset", progressbar=False,
                               match=br.MatchSpec(missing_known=mode))
    rec = r.records.set_index(["target", "dataset"])
    assert [int(rec.loc[(1, l), "c"]) for l in (1, 2)] == c1
    assert [int(rec.loc[(1, l), "T"]) for l in (1, 2)] == t1
    # target 0 (M, W): record 1's missing sex does not match M — z1: record 0; z2: records 0, 2
    assert [int(rec.loc[(0, l), "c"]) for l in (1, 2)] == [1, 2]
    assert r.settings["missing_known"] == mode


def test_worked_pooled_any():
    y, z = _five()
    r = br.identification_risk(y, z, known=["sex", "race"], synthesized=["race"],
                               progressbar=False, match=br.MatchSpec(missing_known="any"))
    # target 1: pi = (1/3 + 1/3)/2 for record 0, 1/6 for records 1..4: record 0 alone on top
    row = r.records.set_index("target").loc[1]
    assert row["p_max"] == pytest.approx(1 / 3)
    assert (int(row["c"]), int(row["T"])) == (1, 0)


def _random(seed: int, n: int = 60):
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({
        "a": rng.choice(["p", "q", "r"], n).astype(object),
        "b": rng.choice([1, 2], n).astype(float),
        "x": np.round(rng.lognormal(3, 0.3, n), 1),
    })
    for c, p in (("a", 0.2), ("b", 0.1), ("x", 0.2)):
        y.loc[rng.random(n) < p, c] = np.nan
    zs = []
    for _ in range(3):
        z = y.copy()
        z["b"] = rng.choice([1.0, 2.0, np.nan], n, p=[0.45, 0.45, 0.1])
        z["x"] = np.where(rng.random(n) < 0.15, np.nan, np.round(rng.lognormal(3, 0.3, n), 1))
        zs.append(z)
    return y, zs


def _brute(y, zs, mode, r=0.1):
    n = len(y)
    c = np.zeros((n, len(zs)), dtype=int)
    T = np.zeros((n, len(zs)), dtype=bool)
    for l, z in enumerate(zs):
        for i in range(n):
            ok = np.ones(n, dtype=bool)
            for col in ("a", "b", "x"):
                t = y[col].iloc[i]
                src = y if col == "a" else z  # a is unsynthesized
                v = src[col].to_numpy()
                vm = pd.isna(v)
                if pd.isna(t):
                    if mode == "level":
                        ok &= vm
                    continue
                if col == "x":
                    vv = np.where(vm, np.inf, v).astype(float)
                    ok &= ~vm & (np.abs(vv - t) <= r * abs(t))
                else:
                    ok &= ~vm & (v == t)
            c[i, l] = ok.sum()
            T[i, l] = ok[i]
    return c, T


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("mode", ["any", "level"])
def test_engine_against_brute_force(monkeypatch, compiled, mode):
    monkeypatch.setattr(_engine, "USE_NUMBA", compiled)
    y, zs = _random(5)
    r = br.identification_risk(y, zs, known=["a", "b", "x"], synthesized=["b", "x"],
                               categorical=["b"],
                               match=MatchSpec(radius={"x": 0.1}, missing_known=mode),
                               aggregation="per_dataset",
                               progressbar=False)
    c, T = _brute(y, zs, mode)
    got = r.records.sort_values(["dataset", "target"])
    np.testing.assert_array_equal(got["c"].to_numpy(), c.T.ravel())
    np.testing.assert_array_equal(got["T"].to_numpy().astype(bool), T.T.ravel())


@pytest.mark.parametrize("mode", ["any", "level"])
def test_pooled_matches_per_record_average(mode):
    """Pooled probabilities: the average over replicates of 1/c on the brute-force match sets."""
    y, zs = _random(7)
    r = br.identification_risk(y, zs, known=["a", "b", "x"], synthesized=["b", "x"],
                               categorical=["b"],
                               match=MatchSpec(radius={"x": 0.1}, missing_known=mode,
                                               fallback="none"), progressbar=False)
    c, T = _brute(y, zs, mode)
    # own record's pooled probability = mean over replicates of T / c
    with np.errstate(divide="ignore", invalid="ignore"):
        own = np.where(c > 0, T / np.maximum(c, 1), 0.0).mean(axis=1)
    got = np.asarray(r.prob.toarray() if hasattr(r.prob, "toarray") else r.prob)
    np.testing.assert_allclose(got[np.arange(len(y)), np.arange(len(y))], own, atol=1e-12)


def test_codes_are_missing_and_clear_errors():
    y, z = _five()
    y2 = y.assign(age=[30.0, -8.0, 50.0, 60.0, 70.0])
    z2 = [d.assign(age=y2["age"]) for d in z]
    s = br.infer_schema(y2, missing_codes={"age": [-8]})
    r = br.identification_risk(y2, z2, known=["sex", "age", "race"],
                               synthesized=["race"], schema=s, match=MatchSpec(radius={"age": 0.0},
                                                                               radius_type="absolute"),
                               aggregation="per_dataset",
                               progressbar=False)
    rec = r.records.set_index(["target", "dataset"])
    # target 1: sex and age (-8) missing: matched on race alone, as in the worked example
    assert [int(rec.loc[(1, l), "c"]) for l in (1, 2)] == [3, 3]
    with pytest.raises(ValidationError, match="'sex'.*membership"):
        br.identification_risk(y, z, known=["sex", "race"], synthesized=["race"],
                               population=PopulationSpec(membership="unknown", counts=np.full(5,
                                                                                              10.0)),
                               progressbar=False)
    with pytest.raises(ValidationError, match="'age'.*mahalanobis"):
        br.identification_risk(y2, z2, known=["sex", "age", "race"],
                               synthesized=["race"], schema=s, match=MatchSpec(radius=1.0,
                                                                               shape="mahalanobis"),
                               progressbar=False)
    with pytest.raises(ValidationError, match="missing_known"):
        br.identification_risk(y, z, known=["sex", "race"], synthesized=["race"],
                               progressbar=False,
                               match=br.MatchSpec(missing_known="ignore"))


# ----------------------------------------------------------------------------------------------
# posterior replicates: later batches encoded as the first (issue 31)
# ----------------------------------------------------------------------------------------------
class _Released:
    """A 'model' whose replicates are given tables, in order (cycled)."""

    def __init__(self, datasets):
        self.datasets = [d.reset_index(drop=True) for d in datasets]

    def posterior_replicates(self, n, *, columns=None, chunk_size=50, random_seed=None, start=0):
        k = start
        while k < start + n:
            hi = min(start + n, k + chunk_size)
            yield [self.datasets[i % len(self.datasets)][list(columns)] for i in range(k, hi)]
            k = hi


def _coded(seed: int, n: int = 80, m: int = 7):
    """Missing values in every known column, ``-8`` codes in the numeric exact-match one; the
    released datasets synthesize missing values and codes (as synthpop's CART does)."""
    rng = np.random.default_rng(seed)
    y = pd.DataFrame({
        "sex": rng.choice(["F", "M"], n).astype(object),
        "race": rng.choice(list("WBA"), n).astype(object),
        "nociga": rng.choice([-8.0, 5.0, 10.0, 20.0], n),
        "income": np.round(rng.lognormal(7, 0.3, n), 0),
    })
    y.loc[rng.random(n) < 0.15, "sex"] = None
    y.loc[rng.random(n) < 0.15, "race"] = None
    y.loc[rng.random(n) < 0.1, "nociga"] = np.nan
    y.loc[rng.random(n) < 0.15, "income"] = np.nan
    zs = []
    for _ in range(m):
        z = y.copy()
        z["race"] = rng.choice(["W", "B", "A", None], n, p=[0.4, 0.3, 0.2, 0.1])
        z["nociga"] = rng.choice([-8.0, 5.0, 10.0, 20.0, np.nan], n, p=[0.3, 0.2, 0.2, 0.2, 0.1])
        z["income"] = np.where(rng.random(n) < 0.15, np.nan,
                               np.round(y["income"] * rng.lognormal(0, 0.05, n), 0))
        zs.append(z)
    schema = br.infer_schema(y, count=["nociga"], missing_codes={"nociga": [-8]})
    return y, zs, schema


@pytest.mark.parametrize("mode", ["any", "level"])
@pytest.mark.parametrize("fallback", ["unsynthesized", "none"])
@pytest.mark.parametrize("complete_replicates", [False, True])
def test_posterior_batches_equal_released_path_with_missing_values(mode, fallback,
                                                                   complete_replicates):
    """Replicates in batches of 3 (the later two encoded into the first batch's plan) give the
    released-dataset run's pooled probabilities and declared matches: missing values (a level,
    ``+inf`` in a radius column) and declared ``-8`` codes are encoded as in ``prepare``, and
    targets missing a known value are matched on the others in every batch (also when only the
    original has missing values, as with a model that imputes them)."""
    y, zs, schema = _coded(11)
    if complete_replicates:
        zs = [z.assign(race=z["race"].fillna("W"),
                       nociga=z["nociga"].fillna(5.0).replace(-8.0, 10.0),
                       income=z["income"].fillna(1000.0)) for z in zs]
    kw = dict(schema=schema, match=MatchSpec(radius={"income": 0.05}, missing_known=mode,
                                             fallback=fallback),
              progressbar=False)
    known = dict(known=["sex", "race", "nociga", "income"], synthesized=["race", "nociga",
                                                                         "income"])
    base = br.identification_risk(y, zs, **known, **kw)
    post = br.identification_risk(
        y, zs, **known, replicates=br.PosteriorReplicates(
            _Released(zs), n=len(zs), batch_size=3, n_groups=2, random_seed=0), **kw)
    np.testing.assert_allclose(post.prob.toarray(), base.prob.toarray(), rtol=1e-12, atol=0)
    for c in ("c", "T", "K", "W", "declared"):
        assert np.array_equal(post.records[c], base.records[c]), c
    # one batch at a time, each prepared in full: the per-replicate measures agree as well
    per = br.identification_risk(y, zs, **known, aggregation="per_dataset",
                                 **dict(kw, match=kw["match"].replace(
                                     fallback=post.settings["fallback"])))
    np.testing.assert_allclose(post.records["IR_replicate_mean"], per.record_IR, rtol=1e-12)
    for r in (base, post):
        assert r.settings["missing_known"] == mode
        assert r.settings["n_missing_known_values"] == int(
            sum(y[c].isna().sum() for c in ["sex", "race", "income"])
            + y["nociga"].isna().sum() + (y["nociga"] == -8).sum())


def test_recoder_encodes_a_batch_as_prepare_does():
    """The codes of a batch encoded into the first batch's plan are ``prepare``'s codes of the
    same replicates (up to the numbering of numbers no target holds, which match nothing)."""
    from bayes_risk.identification._replicate_batches import Recoder
    from bayes_risk.identification.prepare import prepare

    y, zs, schema = _coded(3, m=4)
    cols = ["race", "nociga", "income"]
    opts = dict(schema=schema, match=MatchSpec(radius={"income": 0.05}, missing_known="level"),
                population=PopulationSpec())
    first = prepare(y, [], ["sex"], cols, replicates=[z[cols] for z in zs[:2]], **opts)
    full = prepare(y, [], ["sex"], cols, replicates=[z[cols] for z in zs[2:]], **opts)
    got = Recoder.make(first)([z for z in zs[2:]])
    tgt = first.prep.tgt_exact  # the targets' codes, shared by both encodings
    ftgt = full.prep.tgt_exact
    for r in range(2):
        np.testing.assert_array_equal(got.prep.rep_radius_s[r], full.prep.rep_radius_s[r])
        for j in range(len(first.rule.exact_s)):
            col = len(first.rule.exact_us) + j
            a, b = got.prep.rep_exact_s[r][:, j], full.prep.rep_exact_s[r][:, j]
            # the same records match each target in both encodings
            np.testing.assert_array_equal(a[:, None] == tgt[None, :, col],
                                          b[:, None] == ftgt[None, :, col])
    # a missing value is the missing level; -8 is missing, not the number -8
    j = first.rule.exact_s.index("nociga")
    enc = first.data.exact_encoders["nociga"]
    z = zs[2]
    na = enc.size - 1
    assert (got.prep.rep_exact_s[0][:, j][z["nociga"].isna() | (z["nociga"] == -8)] == na).all()
    assert np.isinf(got.prep.rep_radius_s[0][0][z["income"].isna().to_numpy()]).all()


@pytest.mark.parametrize("mode, c, T", [
    # target 0 (x = a): record 0's released x is missing (synthetic data only): no match; records
    # 2, 3 match. Target 1 (x missing in the original): "any" matches every record, "level" the
    # released missing values only (records 0, 1; both: missing in the original and the
    # synthetic data). Target 3 (x = b): no released b.
    ("any", [2, 4, 2, 0], [0, 1, 1, 0]),
    ("level", [2, 2, 2, 0], [0, 1, 1, 0]),
])
def test_worked_missing_in_original_synthetic_and_both(mode, c, T):
    y = pd.DataFrame({"g": ["u"] * 4, "x": ["a", None, "a", "b"]})
    z = y.assign(x=[None, None, "a", "a"])
    r = br.identification_risk(y, [z], known=["g", "x"], synthesized=["x"],
                               aggregation="per_dataset", progressbar=False,
                               match=br.MatchSpec(missing_known=mode))
    assert r.records["c"].tolist() == c
    assert r.records["T"].astype(int).tolist() == T
    assert r.settings["missing_known"] == mode and r.settings["n_missing_known_values"] == 1


def test_settings_state_the_policy_on_complete_data():
    y, z = _five()
    y = y.assign(sex=y["sex"].fillna("F"))
    z = [d.assign(sex=y["sex"]) for d in z]
    r = br.identification_risk(y, z, known=["sex", "race"], synthesized=["race"],
                               progressbar=False)
    assert r.settings["missing_known"] == "any"
    assert r.settings["n_missing_known_values"] == 0


def test_later_batch_with_missing_radius_values_refused_as_in_prepare():
    """A later batch with missing values in a radius column is refused under a rule that cannot
    treat them (here ``radius_type="quantile_sd"``), as ``prepare`` refuses the same replicates
    given at once: never matched silently with ``+inf``."""
    y, zs, schema = _coded(5, m=6)
    y = y.assign(income=y["income"].fillna(1000.0), sex=y["sex"].fillna("F"))
    full = [z.assign(income=z["income"].fillna(1000.0)) for z in zs[:3]]
    zs = full + [z.assign(sex=y["sex"]) for z in zs[3:]]  # missing incomes from batch 2 on
    kw = dict(schema=schema, match=MatchSpec(radius={"income": 1.0}, radius_type="quantile_sd"),
              progressbar=False)
    known = dict(known=["sex", "race", "income"], synthesized=["race", "income"])
    with pytest.raises(ValidationError, match="'income'.*quantile_sd"):
        br.identification_risk(y, [z.assign(sex=y["sex"]) for z in zs], **known, **kw)
    with pytest.raises(ValidationError, match="'income'.*quantile_sd"):
        br.identification_risk(y, [], **known, replicates=br.PosteriorReplicates(
            _Released(zs), n=6, batch_size=3, random_seed=0), **kw)


def test_external_target_value_first_met_in_a_later_batch():
    """An external target's synthesized value held by neither the original nor the first batch
    but by a later one: that batch is encoded in full, so the target matches there as in the
    run over all replicates at once (the first batch's codes would give it none)."""
    y, zs, schema = _coded(7, m=6)
    y = y.assign(sex=y["sex"].fillna("F"), race=y["race"].fillna("W"))
    zs = [z.assign(sex=y["sex"]) for z in zs]
    for z in zs[3:]:
        z.loc[:9, "race"] = "Z"  # a level of the later batches only
    targets = pd.concat([y.assign(id=np.arange(len(y))),
                         y.iloc[:3].assign(race="Z", id=[1000, 1001, 1002])],
                        ignore_index=True)
    kw = dict(schema=schema, match=MatchSpec(radius={"income": 0.05}, fallback="none"),
              population=PopulationSpec(targets=targets, target_id="id"), progressbar=False)
    known = dict(known=["sex", "race", "nociga", "income"], synthesized=["race", "nociga",
                                                                         "income"])
    # a level of the release only: declared as a recoding (else SYNTHETIC_ONLY_LEVEL)
    release = br.SyntheticData(zs, method="test", schema=schema.with_roles(
        ["race", "nociga", "income"])).declare_recoded(["race"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the synthetic-only level "Z"
        base = br.identification_risk(y, release, **known, **kw)
        post = br.identification_risk(y, release, **known, replicates=br.PosteriorReplicates(
            _Released(zs), n=6, batch_size=3, random_seed=0), **kw)
    np.testing.assert_allclose(post.prob.toarray(), base.prob.toarray(), rtol=1e-12, atol=0)
    rec = base.records.set_index("target")
    assert (rec.loc[[1000, 1001, 1002], "p_max"] > 0).any()
