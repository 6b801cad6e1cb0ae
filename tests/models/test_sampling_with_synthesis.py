"""Sampling with synthesis (Drechsler & Reiter 2010): a sample of the census released from
synthetic populations (docs/user_guide/synthesizers.md), its combining rules
(docs/methods/utility.md) and its identification risk (docs/methods/identification.md), the
latter checked by brute force on a small census: every possible sample and every pairing of its
units with the released records enumerated."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import bayes_risk as br
import bayes_risk.cli as cli
from bayes_risk.data import SyntheticData
from bayes_risk.exceptions import DataWarning, NotSupportedError, ValidationError
from bayes_risk.models import CARTSynthesizer, DPMultinomial, Sampling, sampling_with_synthesis
from bayes_risk.utility import combine_scalar

KEYS = ["sex", "age", "race"]


def _census(n: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"sex": rng.choice(["M", "F"], n), "age": rng.choice(list("abcd"), n),
                         "race": rng.choice(["W", "B", "O"], n, p=[0.6, 0.3, 0.1]),
                         "inc": rng.normal(50, 10, n).round(1)})


@pytest.fixture(scope="module")
def release():
    census = _census(400)
    schema = br.infer_schema(census, categorical=KEYS)
    cart = CARTSynthesizer().fit(census, schema=schema, synthesized=["race", "inc"],
                                 random_seed=1)
    return census, cart, sampling_with_synthesis(cart, census, populations=4,
                                                 sample_fraction=0.25, random_seed=7)


def test_the_same_units_are_released_from_every_population(release, tmp_path):
    census, cart, rel = release
    rec = rel.extra["sampling"]
    units = np.asarray(rec["sampled_records"])
    assert rel.m == 4 and rel.generation == "partial-sample"
    assert (rec["population_size"], rec["sample_size"], rec["sample_fraction"]) == (400, 100,
                                                                                    0.25)
    assert units.size == 100 and np.all(np.diff(units) > 0)
    for z in rel:  # the unsynthesized columns are the sampled units' own values
        pd.testing.assert_frame_equal(z[["sex", "age"]],
                                      census.iloc[units][["sex", "age"]].reset_index(drop=True))
    assert any(not z["inc"].equals(census["inc"].iloc[units].reset_index(drop=True))
               for z in rel)
    # same seed, same release; another seed, another sample
    again = sampling_with_synthesis(cart, census, populations=4, sample_fraction=0.25,
                                    random_seed=7)
    assert again.extra["sampling"]["sampled_records"] == rec["sampled_records"]
    assert all(a.equals(b) for a, b in zip(again, rel, strict=True))
    other = sampling_with_synthesis(cart, census, populations=4, sample_fraction=0.25,
                                    random_seed=8)
    assert other.extra["sampling"]["sampled_records"] != rec["sampled_records"]
    # the manifest keeps the design
    back = br.read_synthetic(rel.save(tmp_path / "rel"))
    assert back.generation == "partial-sample"
    assert back.extra["sampling"]["sampled_records"] == rec["sampled_records"]


def test_refusals(release):
    census, cart, _ = release
    for bad in (0, 1, 1.5, -0.1, True, "0.5"):
        with pytest.raises(ValidationError, match=r"sample_fraction must be a number in \(0, 1\)"):
            sampling_with_synthesis(cart, census, populations=2, sample_fraction=bad)
    with pytest.raises(ValidationError, match="original must be a pandas DataFrame. Got dict"):
        sampling_with_synthesis(cart, census.to_dict(), populations=2, sample_fraction=0.5)
    with pytest.raises(ValidationError, match="populations must be an integer >= 1"):
        sampling_with_synthesis(cart, census, populations=0, sample_fraction=0.5)
    with pytest.raises(ValidationError, match="draws 0"):
        sampling_with_synthesis(cart, census, populations=2, sample_fraction=0.001)
    with pytest.raises(br.SchemaError) as err:  # another census than the model's
        sampling_with_synthesis(cart, census.assign(inc=census["inc"] + 1), populations=2,
                                sample_fraction=0.5)
    assert err.value.code == "ORIGINAL_DIFFERS"
    binary = census[["sex", "race"]].astype("category")
    dp = DPMultinomial(epsilon=1.0, sampling=Sampling(draws=10, chains=1), random_seed=1)
    with pytest.raises(NotSupportedError, match="full-same-n") as err:
        sampling_with_synthesis(dp.fit(binary), binary, populations=2, sample_fraction=0.5)
    assert err.value.code == "MEASURE_UNDEFINED"


def test_a_damaged_sampling_record_is_refused(release):
    _, _, rel = release
    rec = dict(rel.extra["sampling"], sample_size=99)
    damaged = SyntheticData(rel.datasets, extra={**rel.extra, "sampling": rec})
    with pytest.raises(ValidationError) as err:
        br.identification_risk(release[0], damaged, known=KEYS, progressbar=False)
    assert err.value.code == "MANIFEST_INVALID"


# ------------------------------------------------------------------------ combining rules
def test_partial_sample_rules_by_hand():
    """T_s = (1 − f) ū + b/m, ν = (m − 1)(1 + m(1 − f)ū / b)² (m ≥ 5): Reiter's partial rules
    with the finite-population correction of the sample."""
    q, u, f = [10.2, 9.8, 10.5, 9.9, 10.1], [0.25, 0.24, 0.26, 0.25, 0.25], 0.2
    r = combine_scalar(q, u, rules="partial-sample", size_ratio=f)
    b = np.var(q, ddof=1)
    assert r.total_var == pytest.approx(0.8 * 0.25 + b / 5)
    assert r.df == pytest.approx(4 * (1 + 5 * 0.8 * 0.25 / b) ** 2)
    assert r.rules == "partial-sample"
    half = stats.t.ppf(0.975, r.df) * math.sqrt(r.total_var)
    assert (r.ci_lower, r.ci_upper) == pytest.approx((np.mean(q) - half, np.mean(q) + half))
    with pytest.raises(ValidationError, match="need datasets that are a sample"):
        combine_scalar(q, u, rules="partial-sample", size_ratio=1.0)


def _coverage(f: float, estimand: str, reps: int, seed: int) -> float:
    """Coverage of the census quantity by the partial-sample interval: a normal census of
    2,000 (y = 1 + 2x + e), y synthesized from exact posterior draws of the census's normal
    regression, the same sample of f N units from each of m = 5 synthetic populations."""
    rng = np.random.default_rng(seed)
    N, m, n = 2000, 5, int(round(f * 2000))
    hit = 0
    for _ in range(reps):
        x = rng.normal(0, 1, N)
        y = 1 + 2 * x + rng.normal(0, 1, N)
        X = np.c_[np.ones(N), x]
        XtX = X.T @ X
        beta = np.linalg.solve(XtX, X.T @ y)
        s2 = float(((y - X @ beta) ** 2).sum() / (N - 2))
        L = np.linalg.cholesky(np.linalg.inv(XtX))
        units = rng.choice(N, n, replace=False)
        Xs = X[units]
        q, u = [], []
        for _ in range(m):
            sig2 = s2 * (N - 2) / rng.chisquare(N - 2)
            b = beta + math.sqrt(sig2) * L @ rng.normal(size=2)
            z = Xs @ b + rng.normal(0, math.sqrt(sig2), n)
            if estimand == "mean":
                q.append(z.mean())
                u.append(z.var(ddof=1) / n)
            else:
                bb = np.linalg.lstsq(Xs, z, rcond=None)[0]
                e = z - Xs @ bb
                q.append(bb[1])
                u.append(float(e @ e) / (n - 2) * np.linalg.inv(Xs.T @ Xs)[1, 1])
        r = combine_scalar(q, u, rules="partial-sample", size_ratio=f)
        Q = y.mean() if estimand == "mean" else beta[1]
        hit += r.ci_lower <= Q <= r.ci_upper
    return hit / reps


@pytest.mark.parametrize("f, estimand", [(0.1, "mean"), (0.5, "slope")])
def test_partial_sample_rules_cover(f, estimand):
    """600 replications (Monte Carlo standard error 0.009 at 0.95): the intervals cover the
    census quantity at least 0.95 − 3 MCSE = 0.923 (observed with 1,500 replications: 0.971
    for the mean at f = 0.1, 0.998 for the slope at f = 0.5: conservative, as the methods page
    derives); without the correction's b/m term the slope's would cover about 0.7."""
    assert _coverage(f, estimand, reps=600, seed=int(f * 10)) >= 0.923


# --------------------------------------------------------- identification by brute force
def _brute_force(census: pd.DataFrame, released_keys: list[pd.DataFrame], n: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """For every census unit (target) and released record k, the intruder's probability that
    the target is record k, and that it is in no released record, averaged over the replicates.
    In each, the released keys are taken as the sampled units' keys (Drechsler & Reiter 2008):
    for the target's key t, every choice of which of the F_t census units with key t are the
    n_t released records with key t, and every pairing of them, equally likely (simple random
    sampling), enumerated. Released records with a key more often than the census holds it
    (possible with synthesized keys, impossible for a true sample) leave no such choice: then,
    as the methods page's min(1/F, 1/n_t), each is the target with probability 1/n_t."""
    N = len(census)
    ckeys = ["|".join(map(str, r)) for r in census[KEYS].itertuples(index=False)]
    P = np.zeros((N, n))
    out = np.zeros(N)
    for rk in released_keys:
        zkeys = ["|".join(map(str, r)) for r in rk[KEYS].itertuples(index=False)]
        for t in set(ckeys):
            U = [u for u in range(N) if ckeys[u] == t]
            R = [k for k in range(n) if zkeys[k] == t]
            if len(R) > len(U):
                for u in U:
                    P[u, R] += 1 / len(R)
                continue
            weight = np.zeros((N, n))
            total = 0
            for chosen in itertools.combinations(U, len(R)):
                for perm in itertools.permutations(chosen):
                    total += 1
                    for k, u in zip(R, perm, strict=True):
                        weight[u, k] += 1
            P += weight / total
            out[U] += 1 - weight[U].sum(axis=1) / total
    R_ = len(released_keys)
    return P / R_, out / R_


@pytest.mark.filterwarnings("ignore:NO_MATCH")  # units whose key no sampled record has
@pytest.mark.parametrize("synthesize_keys", [False, True])
def test_identification_of_a_sampled_release_matches_brute_force(synthesize_keys):
    """A census of 8 units, 4 released from each of 2 synthetic populations: the package's
    pooled probabilities (Drechsler & Reiter 2008 with the census's counts) equal the
    exhaustive Bayes posterior of the sampling — p(k) = 1/F_t for a released record with the
    target's key and p(not released) = 1 − n_t/F_t, averaged over the replicates — and a unit
    not in the sample is never a true match."""
    census = pd.DataFrame({"sex": list("MMMMFFFF"), "age": list("aabbaabb"),
                           "race": list("WWBWWBWB"), "inc": [10., 20, 30, 40, 50, 60, 70, 80]})
    units = np.array([0, 2, 5, 6])
    z1 = census.iloc[units].reset_index(drop=True)
    z2 = z1.assign(inc=z1["inc"] + 1)
    if synthesize_keys:  # race synthesized: the keys differ between the replicates
        z1 = z1.assign(race=["W", "W", "B", "B"])
        z2 = z2.assign(race=["B", "B", "B", "W"])
    synthesized = ["race", "inc"] if synthesize_keys else ["inc"]
    schema = br.infer_schema(census, categorical=KEYS).with_roles(synthesized)
    from bayes_risk.data.fingerprint import fingerprint_record

    rel = SyntheticData([z1, z2], schema=schema, generation="partial-sample",
                        original_fingerprint=fingerprint_record(census, schema),
                        extra={"sampling": {"design": "srs", "population_size": 8,
                                            "sample_size": 4, "sample_fraction": 0.5,
                                            "sampled_records": units.tolist()}})
    res = br.identification_risk(census, rel, known=KEYS, progressbar=False)
    P, out = _brute_force(census, [z1, z2], 4)
    np.testing.assert_allclose(res.prob.toarray(), P, atol=1e-12)
    np.testing.assert_allclose(res.records["p_out"].to_numpy(), out, atol=1e-12)
    rec = res.records
    assert rec["in_sample"].tolist() == [u in units for u in range(8)]
    assert (rec.loc[~rec["in_sample"], "T"] == 0).all()
    s = res.settings["sampling"]
    assert s["sample_fraction"] == 0.5 and s["membership"] == "unknown"
    if not synthesize_keys:  # one replicate's keys: the closed form, by hand
        F = census.groupby(KEYS).size()
        n_t = z1.groupby(KEYS).size()
        for t, row in census.iterrows():
            key = tuple(row[KEYS])
            assert rec.loc[t, "p_out"] == pytest.approx(1 - n_t.get(key, 0) / F[key])


def test_the_sample_is_not_the_original_to_give(release):
    census, _, rel = release
    sample = census.iloc[rel.extra["sampling"]["sampled_records"]].reset_index(drop=True)
    with pytest.raises(ValidationError, match="give the census as the original") as err:
        br.identification_risk(sample, rel, known=KEYS, progressbar=False)
    assert err.value.code == "ORIGINAL_DIFFERS"


# -------------------------------------------------------------------------- command line
def test_the_command_line_synthesizes_and_measures_a_sampled_release(tmp_path):
    census = _census(300, seed=4)
    census.to_csv(tmp_path / "census.csv", index=False)

    def run(*args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(list(args))
        return rc, " ".join(out.getvalue().split()), err.getvalue()

    rc, out, _ = run("synthesize", str(tmp_path / "census.csv"), "--method", "cart",
                     "--synthesize", "race", "inc", "--categorical", *KEYS, "--populations", "3",
                     "--sample-fraction", "0.2", "--random-seed", "1", "--out",
                     str(tmp_path / "rel"))
    assert rc == 0
    assert ("sampling with synthesis: 3 synthetic populations of the census's 300 units, the "
            "same simple random sample of 60 units (fraction 0.2) released from each") in out
    rel = br.read_synthetic(tmp_path / "rel")
    assert rel.m == 3 and len(rel[0]) == 60 and rel.generation == "partial-sample"
    rc, out, _ = run("identification", str(tmp_path / "census.csv"), str(tmp_path / "rel"),
                     "--known-unsynthesized", "sex", "age", "--known-synthesized", "race",
                     "--out", str(tmp_path / "ident"))
    assert rc == 0
    s = json.loads((tmp_path / "ident" / "summary.json").read_text())
    assert s["settings"]["sampling"]["membership"] == "unknown"
    assert s["summary"]["n_targets"] == 300
    assert ("sampling with synthesis: 60 of the census's 300 units released (a target is in "
            "the release with probability 0.2); membership unknown") in out
    rc, out, _ = run("utility", str(tmp_path / "census.csv"), str(tmp_path / "rel"), "--out",
                     str(tmp_path / "util"))
    assert rc == 0 and "combining rules: partial-sample" in out
    for args, code in ((["--populations", "3"], "OPTION_REQUIRED"),
                       (["--populations", "3", "--sample-fraction", "0.2", "-m", "2"],
                        "OPTION_CONFLICT")):
        rc, _, err = run("synthesize", str(tmp_path / "census.csv"), "--method", "cart",
                         "--synthesize", "race", "--categorical", *KEYS, *args, "--out",
                         str(tmp_path / "x"))
        assert rc == 2 and f"[{code}]" in err


def test_a_known_column_named_alone_is_one_column(release):
    # known="age" is the column age, as elsewhere, not the columns a, g, e
    census, _, rel = release
    with pytest.warns(DataWarning, match="ZERO_UNIQUE"):  # 4 ages, 400 units
        one = br.identification_risk(census, rel, known="age", progressbar=False)
    with pytest.warns(DataWarning, match="ZERO_UNIQUE"):
        listed = br.identification_risk(census, rel, known=["age"], progressbar=False)
    pd.testing.assert_frame_equal(one.records, listed.records)
