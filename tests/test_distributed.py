"""The Dask path (``bayes_risk.distributed``): exactly the in-process numbers, whatever the
partition size or the number of workers, through the library and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

import bayes_risk as br  # noqa: E402
from bayes_risk import distributed as bd  # noqa: E402
from bayes_risk.attribute import EstimatorSpec  # noqa: E402
from bayes_risk.exceptions import ValidationError  # noqa: E402
from bayes_risk.executors import DaskExecutor  # noqa: E402
from bayes_risk.models import Sampling  # noqa: E402

#: Dask's own time limits (30 s to connect, a worker process to come up and register) are
#: bounds against a hang; on a loaded 2-core machine a worker process takes longer to start
#: (its imports), so the tests give them minutes, also to the command lines they start
_DASK_TIMEOUTS = {"distributed.comm.timeouts.connect": "300s",
                  "distributed.comm.timeouts.tcp": "300s"}
_DASK_ENV = {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "300s",
             "DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP": "300s"}


@pytest.fixture(scope="module", autouse=True)
def _patient_dask():
    import dask

    with dask.config.set(_DASK_TIMEOUTS):
        yield


KNOWN_US = ["Age", "Urban", "Marital"]
KNOWN_S = ["Income", "Tenure"]
CE_KW = {
    "categorical": ["Urban", "Marital", "Tenure"],
    "match": br.MatchSpec(radius={"Age": 0.1, "Income": 0.1}),
    "progressbar": False,
}


@pytest.fixture(scope="module")
def client():
    """Two worker processes (one thread each) for the whole module."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def client1():
    """One worker process: results must not depend on the number of workers."""
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster, set_as_default=False) as c:
        yield c


@pytest.fixture(scope="module")
def ce():
    """CE-like table with m = 3 perturbed releases of Income, Expenditure and Tenure."""
    n, m = 400, 3
    y = br.make_ce_like(n, random_seed=0)
    rng = np.random.default_rng(1)
    syn = []
    for _ in range(m):
        z = y.copy()
        z["Income"] = np.round(y["Income"] * np.exp(rng.normal(0, 0.08, n)))
        z["Expenditure"] = np.round(y["Expenditure"] * np.exp(rng.normal(0, 0.08, n)))
        z["Tenure"] = rng.permutation(y["Tenure"].to_numpy())
        syn.append(z)
    return y, syn


@pytest.fixture(scope="module")
def acs():
    """Small DPMPM on six ACS-like columns with m = 3 full syntheses."""
    dpmpm = pytest.importorskip("bayes_risk.models.dpmpm.dpmpm")
    df = br.make_acs_like(300, random_seed=1).iloc[:, :6]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dpmpm.DPMPM(n_components=5, sampling=Sampling(tune=50, draws=60), progressbar=False)
        model.fit(df, random_seed=1)
    return model, df, model.synthesize(3, random_seed=2)


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _assert_same_identification(res, ref):
    pd.testing.assert_frame_equal(res.records, ref.records)
    np.testing.assert_equal(res.to_dict(), ref.to_dict())
    np.testing.assert_equal(res.file, ref.file)
    np.testing.assert_equal(res.per_dataset, ref.per_dataset)
    assert res.settings == ref.settings
    assert res.warnings == ref.warnings and res.warning_details == ref.warning_details
    for name in ("c", "T", "K", "W", "IR", "declared", "record_IR", "p_out"):
        np.testing.assert_array_equal(getattr(res, name), getattr(ref, name))
    if ref.prob is None:
        assert res.prob is None
    else:
        for part in ("data", "indices", "indptr"):
            a, b = getattr(res.prob, part), getattr(ref.prob, part)
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------------------------
# identification risk
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"aggregation": "per_dataset"},
        {"aggregation": "per_dataset",
         "match": br.MatchSpec(radius=[0.1, 0.1], compat="IdentificationRiskCalculation")},
        {"match": br.MatchSpec(radius_type="quantile_sd", radius={"Age": 1.0, "Income": 1.0})},
        {"match": br.MatchSpec(shape="mahalanobis", radius={"Age": 1.0, "Income": 1.0})},
    ],
    ids=["pooled", "per-dataset", "compat", "quantile-sd", "mahalanobis"],
)
def test_identification_equals_in_process(client, client1, ce, extra, monkeypatch):
    from bayes_risk.identification import evaluate

    y, syn = ce
    kw = {**CE_KW, **extra}
    ref = _quiet(br.identification_risk, y, syn, known=[*KNOWN_US, *KNOWN_S],
                 synthesized=KNOWN_S, **kw)
    assert ref.file["expected_match_risk"] > 0
    tasks = []
    split = evaluate.partitions
    monkeypatch.setattr(evaluate, "partitions",
                        lambda *a, **k: (out := split(*a, **k), tasks.append(len(out[0])))[0])
    # None: the default, the 400 targets spread over the workers (issue 70: below 100,001
    # targets a run was one task, so one worker matched it alone)
    for c, ps, n_tasks in ((client, 7, 58), (client, 50, 8), (client1, 1000, 1),
                           (client, None, 2), (client1, None, 1)):
        tasks.clear()
        res = _quiet(bd.identification_risk, y, syn, known=[*KNOWN_US, *KNOWN_S],
                     synthesized=KNOWN_S, client=c,
                     partition_size=ps, **kw)
        _assert_same_identification(res, ref)
        if "compat" not in str(extra):  # per-dataset and pooled: one split of the targets
            assert tasks == [n_tasks], (ps, tasks)


def test_default_partition_size_spreads_the_targets_over_the_workers():
    from bayes_risk.identification.evaluate import default_partition_size

    class Cluster:
        def __init__(self, slots):
            self.slots = lambda: slots

    # worked: 400 targets over 2 threads: 200 a task; 250,001 over 2: the 100,000 cap; 3 over
    # 4: one a task; an executor without slots (in process, or a user's): one task of all
    assert default_partition_size(400, Cluster(2)) == 200
    assert default_partition_size(401, Cluster(2)) == 201
    assert default_partition_size(250_001, Cluster(2)) == 100_000
    assert default_partition_size(3, Cluster(4)) == 1
    assert default_partition_size(400, object()) == 400


@pytest.mark.parametrize("aggregation", ["pooled", "per_dataset"])
def test_identification_given_the_selection_equals_in_process(client, ce, aggregation):
    """With the selection metadata R (a rule, and the same records as a mask; a dask
    DataFrame original), the cluster gives the in-process numbers and settings."""
    import dask.dataframe as dd

    y, syn = ce
    sel = (y["Age"] >= 60).to_numpy()  # only these records' Income and Tenure are released new
    z = []
    for s in syn:
        r = y.copy()
        r.loc[sel, KNOWN_S] = s.loc[sel, KNOWN_S]
        z.append(r)
    kw = {**CE_KW, "aggregation": aggregation, "known": [*KNOWN_US, *KNOWN_S],
          "synthesized": KNOWN_S}
    for selection in ("Age >= 60", sel):
        pop = br.PopulationSpec(selection=selection)
        ref = _quiet(br.identification_risk, y, z, population=pop, **kw)
        assert ref.settings["selection"]["n_selected"] == int(sel.sum())
        for original in (y, dd.from_pandas(y, npartitions=3)):
            res = _quiet(bd.identification_risk, original, z, population=pop,
                         client=client, partition_size=37, **kw)
            _assert_same_identification(res, ref)


@pytest.mark.parametrize("aggregation", ["pooled", "per_dataset"])
def test_identification_unknown_membership_loglinear(client, ce, aggregation):
    """Population counts are estimated once on the client; the partitions share them."""
    y, syn = ce
    kw = {**CE_KW, "match": br.MatchSpec(strategy="not_if_max"), "aggregation": aggregation,
          "population": br.PopulationSpec(membership="unknown", counts="loglinear_synthetic",
                                          sampling_fraction=0.9)}
    ref = _quiet(br.identification_risk, y, syn, known=["Urban", "Marital", "Tenure"],
                 synthesized=["Tenure"], **kw)
    res = _quiet(bd.identification_risk, y, syn, known=["Urban", "Marital", "Tenure"],
                 synthesized=["Tenure"],
                 client=client, partition_size=37, **kw)
    _assert_same_identification(res, ref)


def test_identification_survey_weights_from_a_dask_dataframe(client, ce):
    """The weight column survives the reduction of a dask DataFrame to the known columns."""
    dd = pytest.importorskip("dask.dataframe")
    y, syn = ce
    y = y.assign(w=np.linspace(5.0, 50.0, len(y)))
    kw = {**CE_KW, "match": None, "known": ["Urban", "Marital", "Tenure"],
          "synthesized": ["Tenure"],
          "population": br.PopulationSpec(membership="unknown", weights="w")}
    ref = _quiet(br.identification_risk, y, syn, **kw)
    assert ref.settings["population_counts"] == "weights"
    res = _quiet(bd.identification_risk, dd.from_pandas(y, npartitions=3), syn, client=client,
                 partition_size=64, **kw)
    _assert_same_identification(res, ref)
    np.testing.assert_array_equal(res.population_counts, ref.population_counts)


def test_identification_dask_dataframe_and_external_targets(client, ce):
    dd = pytest.importorskip("dask.dataframe")
    y, syn = ce
    ref = _quiet(br.identification_risk, y, syn, known=[*KNOWN_US, *KNOWN_S],
                 synthesized=KNOWN_S, **CE_KW)
    res = _quiet(bd.identification_risk, dd.from_pandas(y, npartitions=3), syn,
                 known=[*KNOWN_US, *KNOWN_S],
                 synthesized=KNOWN_S, client=client, partition_size=64, **CE_KW)
    _assert_same_identification(res, ref)
    # external targets as a dask DataFrame: half in the sample, half not
    yi = y.assign(pid=np.arange(len(y)))
    tg = yi.iloc[::2][[*KNOWN_US, *KNOWN_S, "pid"]].copy()
    tg.loc[tg.index[::3], "pid"] += 10_000
    ids = {"target_id": "pid", "original_id": "pid"}
    ref = _quiet(br.identification_risk, yi, syn, known=[*KNOWN_US, *KNOWN_S],
                 synthesized=KNOWN_S, population=br.PopulationSpec(targets=tg, **ids), **CE_KW)
    res = _quiet(bd.identification_risk, yi, syn, known=[*KNOWN_US, *KNOWN_S],
                 synthesized=KNOWN_S, client=client, partition_size=30,
                 population=br.PopulationSpec(targets=dd.from_pandas(tg, npartitions=2), **ids),
                 **CE_KW)
    _assert_same_identification(res, ref)


def test_radius_sweep_equals_in_process(client, ce):
    y, syn = ce
    grid = [0.025, 0.05, 0.1, 0.2]
    ref = _quiet(br.radius_sweep, y, syn, known=[*KNOWN_US, "Income"],
                 synthesized=["Income"], radii=grid, **CE_KW)
    res = _quiet(bd.radius_sweep, y, syn, known=[*KNOWN_US, "Income"],
                 synthesized=["Income"], radii=grid, client=client,
                 partition_size=90, **CE_KW)
    np.testing.assert_array_equal(res.risk, ref.risk)
    assert res.r_star == ref.r_star and res.settings == ref.settings


def test_executor_argument_and_one_scatter_per_sweep(client, ce, monkeypatch):
    """``executor=`` of the in-process functions runs on the cluster; a sweep ships the record
    pool once (the partitions of every radius share it)."""
    y, syn = ce
    ref = _quiet(br.identification_risk, y, syn, known=[*KNOWN_US, *KNOWN_S],
                 synthesized=KNOWN_S, **CE_KW)
    res = _quiet(br.identification_risk, y, syn, known=[*KNOWN_US, *KNOWN_S],
                 synthesized=KNOWN_S, executor=client, **CE_KW)
    _assert_same_identification(res, ref)
    grid = [0.05, 0.1, 0.2]
    ref = _quiet(br.radius_sweep, y, syn, known=[*KNOWN_US, "Income"],
                 synthesized=["Income"], radii=grid, **CE_KW)
    scattered = []
    real = client.scatter

    def counting(data, *args, **kw):
        scattered.append(type(data).__name__)
        return real(data, *args, **kw)

    monkeypatch.setattr(client, "scatter", counting)
    ex = DaskExecutor(client, partition_size=90)
    res = _quiet(br.radius_sweep, y, syn, known=[*KNOWN_US, "Income"],
                 synthesized=["Income"], radii=grid, executor=ex, **CE_KW)
    np.testing.assert_array_equal(res.risk, ref.risk)
    assert scattered == ["Prepared"]


@pytest.fixture(scope="module")
def cart_release(ce):
    """CART (Bayesian bootstrap) of Income and Tenure on the CE-like table, m = 2 released."""
    from bayes_risk.data import infer_schema
    from bayes_risk.models.trees.cart import CARTSynthesizer

    y, _ = ce
    schema = infer_schema(y, categorical=["Urban", "Marital", "Tenure"])
    model = CARTSynthesizer(progressbar=False).fit(y, schema=schema,
                                                   synthesized=["Income", "Tenure"],
                                                   random_seed=1)
    return y, model, model.synthesize(2, random_seed=2)


@pytest.mark.parametrize("pr_kw", [
    {"n": 45, "batch_size": 10},
    {"n": "auto", "mcse_tol": 0.05, "batch_size": 5, "min_replicates": 20,
     "max_replicates": 120},
    {"n": 24, "batch_size": 6, "view": "intruder", "refit_dataset": "each"},
], ids=["fixed", "auto", "intruder-each"])
@pytest.mark.slow
def test_posterior_replicates_equal_in_process(client, client1, cart_release, pr_kw):
    """Posterior replicates on the cluster: each task draws and matches a batch; same seed, same
    numbers (and the same stopping point of n="auto") whatever the workers and the chunking."""
    y, model, syn = cart_release
    kn = ["Income", "Tenure"]

    def run(chunk_size, **kw):
        pr = br.PosteriorReplicates(model, random_seed=7, chunk_size=chunk_size, **pr_kw)
        return _quiet(br.identification_risk, y, syn, known=[*KNOWN_US, *kn],
                      synthesized=kn, **CE_KW, replicates=pr,
                      **kw)

    ref = run(50)
    assert ref.file["n_replicates"] >= 20 and np.isfinite(ref.file["mc_se"]["expected_match_risk"])
    for res in (run(3, executor=client), run(50, executor=client1),
                _quiet(bd.identification_risk, y, syn, known=[*KNOWN_US, *kn],
                       synthesized=kn, client=client, **CE_KW,
                       replicates=br.PosteriorReplicates(model, random_seed=7, chunk_size=4,
                                                         **pr_kw))):
        pd.testing.assert_frame_equal(res.records, ref.records)
        np.testing.assert_equal(res.file, ref.file)
        np.testing.assert_equal(res.to_dict(), ref.to_dict())
        assert res.settings == ref.settings and res.warnings == ref.warnings
    if pr_kw["n"] == "auto":
        s = ref.settings["posterior_replicates"]
        assert s["stopped_by_tolerance"] and ref.file["n_replicates"] < 120


@pytest.mark.slow
def test_cli_workers_posterior_replicates(tmp_path, ce):
    """``identification --model release --replicates R --workers 2`` writes what the in-process
    run writes (the CLI's ``main`` in this process: the installed package)."""
    from bayes_risk.cli import main

    y, _ = ce
    y.to_csv(tmp_path / "orig.csv", index=False)
    assert main(["synthesize", str(tmp_path / "orig.csv"), "--method", "cart", "--synthesize",
                 "Tenure", "Income", "--categorical", "Urban", "Marital", "Tenure", "-m", "2",
                 "--random-seed", "9", "-q", "--out", str(tmp_path / "syn")]) == 0
    base = ["identification", str(tmp_path / "orig.csv"), str(tmp_path / "syn"),
            "--known-unsynthesized", *KNOWN_US, "--known-synthesized", "Tenure", "Income",
            "--categorical", "Urban", "Marital", "Tenure", "--radius", "Age=0.1",
            "--radius", "Income=0.1", "--model", "release", "--replicates", "40",
            "--random-seed", "4", "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([*base, "--out", str(tmp_path / "in")]) == 0
        assert main([*base, "--workers", "2", "--out", str(tmp_path / "dk")]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "in" / "records.csv"),
                                  pd.read_csv(tmp_path / "dk" / "records.csv"))
    sa = json.loads((tmp_path / "in" / "summary.json").read_text())
    assert sa["uncertainty"]["n_replicates"] == 40
    assert sa == json.loads((tmp_path / "dk" / "summary.json").read_text())


# ----------------------------------------------------------------------------------------------
# attribute risk
# ----------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_attribute_equals_in_process(client, client1, acs):
    model, df, syn = acs
    kw = {"random_seed": 3, "estimator": EstimatorSpec(bootstrap=50), "progressbar": False}
    ref = _quiet(br.attribute_risk, df, syn, model=model, **kw)
    settings_ref = {k: v for k, v in ref.settings.items() if k != "timing"}
    for c, ps in ((client, 7), (client, 50), (client1, 300)):
        res = _quiet(bd.attribute_risk, df, syn, model=model, client=c, partition_size=ps, **kw)
        pd.testing.assert_frame_equal(res.records, ref.records)
        assert {k: v for k, v in res.settings.items() if k != "timing"} == settings_ref
        assert set(res.settings["timing"]) == set(ref.settings["timing"])
        assert res.warnings == ref.warnings
        # the draw-bootstrap sums are one BLAS product per partition, whose last bit depends
        # on the product's width: the Monte Carlo intervals agree to rounding, the rest exactly
        da, db = res.to_dict(), ref.to_dict()
        mc_a, mc_b = da.pop("mc_uncertainty"), db.pop("mc_uncertainty")
        np.testing.assert_equal(
            {k: v for k, v in da.items() if k != "settings"},
            {k: v for k, v in db.items() if k != "settings"},
        )
        assert mc_a.keys() == mc_b.keys()
        for key in mc_a:
            if isinstance(mc_a[key], dict):
                for f in mc_a[key]:
                    np.testing.assert_allclose(mc_a[key][f], mc_b[key][f], rtol=1e-12, atol=0)
            else:
                assert mc_a[key] == mc_b[key], key
        for a, b in zip(res.loglik, ref.loglik, strict=True):
            np.testing.assert_array_equal(a, b)
        pd.testing.assert_frame_equal(res.candidate_posteriors(5), ref.candidate_posteriors(5))
    # the kept log-likelihoods make prior sweeps work on the merged result
    priors = ["uniform", "truth-weighted:2", "empirical:1"]
    pd.testing.assert_frame_equal(
        br.prior_sensitivity(res, priors=priors), br.prior_sensitivity(ref, priors=priors)
    )
    pd.testing.assert_frame_equal(
        br.with_prior(res, prior="truth-weighted:2").records,
        br.with_prior(ref, prior="truth-weighted:2").records,
    )


def test_attribute_selected_records_and_is_estimator(client, acs):
    """Record order is kept; the published estimator (L = dataset_loglik once) too."""
    model, df, syn = acs
    recs = [250, 3, 77, 4, 199, 120]
    kw = {"random_seed": 4, "progressbar": False,
          "estimator": EstimatorSpec("is", bootstrap=20), "candidates": "full"}
    ref = _quiet(br.attribute_risk, df, syn, model=model, records=recs, **kw)
    res = _quiet(bd.attribute_risk, df, syn, model=model, records=recs, client=client,
                 partition_size=4, **kw)
    pd.testing.assert_frame_equal(res.records, ref.records)
    assert res.records.index.tolist() == recs
    assert res.to_dict()["published_estimator"] == ref.to_dict()["published_estimator"]


# ----------------------------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_bad_partition_size(client, ce, acs, bad):
    y, syn = ce
    with pytest.raises(ValidationError, match="partition_size must be an integer >= 1"):
        bd.identification_risk(y, syn, known=[*KNOWN_US, *KNOWN_S], synthesized=KNOWN_S,
                               client=client, partition_size=bad,
                               **CE_KW)
    model, df, asyn = acs
    with pytest.raises(ValidationError, match="partition_size"):
        bd.attribute_risk(df, asyn, model=model, client=client, partition_size=bad)


def test_bad_arguments(client, ce):
    y, syn = ce
    with pytest.raises(ValidationError, match="client must be a distributed.Client"):
        bd.identification_risk(y, syn, known=[*KNOWN_US, *KNOWN_S], synthesized=KNOWN_S,
                               client="tcp://x:1", **CE_KW)
    with pytest.raises(ValidationError, match="invalid arguments for identification_risk"):
        bd.identification_risk(y, syn, known=[*KNOWN_US, *KNOWN_S], synthesized=KNOWN_S,
                               client=client, radiuss=0.1)
    # the radius functions go the same way to the in-process one, which names itself
    with pytest.raises(ValidationError, match="for radius_sweep"):
        bd.radius_sweep(y, syn, known=[*KNOWN_US, *KNOWN_S], synthesized=KNOWN_S,
                        client=client, radiuss=0.1)
    with pytest.raises(ValidationError, match="exactly one of scheduler and n_workers"):
        with bd.connect(scheduler="tcp://127.0.0.1:1", n_workers=2):
            pass


def test_provenance_on_the_cluster(client, cart_release):
    """A repeated dataset and a model that did not make the release are found on the client,
    before any partition is sent: the same codes as in process (issue 46)."""
    from bayes_risk.models import CARTSynthesizer, plugin_likelihood

    y, model, rel = cart_release
    copied = [rel[0], rel[1], rel[0].copy()]
    ident = _quiet(bd.identification_risk, y, copied, known=["Age", "Income"],
                   synthesized=["Income"], client=client, **CE_KW)
    sweep = _quiet(bd.radius_sweep, y, copied, known=["Age", "Income"], synthesized=["Income"],
                   radii=[0.05, 0.1], client=client, **CE_KW)
    attr = _quiet(bd.attribute_risk, y, copied, model=plugin_likelihood(model, y),
                  records=[0, 1], client=client, progressbar=False,
                  estimator=EstimatorSpec(bootstrap=0))
    for res in (ident, sweep, attr):
        assert "DUPLICATE_DATASETS" in res.warnings
    other = CARTSynthesizer(progressbar=False).fit(y, schema=model.schema_,
                                                   synthesized=["Income"], random_seed=1)
    with pytest.raises(ValidationError) as err:
        _quiet(bd.attribute_risk, y, rel, model=plugin_likelihood(other, y), records=[0, 1],
               client=client, progressbar=False,
               estimator=EstimatorSpec(bootstrap=0))
    assert err.value.code == "MODEL_DIFFERS"


# ----------------------------------------------------------------------------------------------
# command line
# ----------------------------------------------------------------------------------------------
def _cli(*argv: str) -> subprocess.CompletedProcess:
    # cwd="/": `python -m` puts the working directory first on sys.path, and from the repository
    # root the source tree would shadow the installed package (models/ maps to bayes_risk.models
    # only when installed)
    return subprocess.run([sys.executable, "-m", "bayes_risk", *argv], capture_output=True,
                          text=True, timeout=600, cwd="/", env={**os.environ, **_DASK_ENV})


def _main_quiet(*argv: str) -> int:
    """The CLI's ``main`` in this process (the installed package), warnings silenced."""
    from bayes_risk.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return main(list(argv))


@pytest.mark.slow
def test_cli_workers_identification_and_attribute(tmp_path, ce, acs):
    """``--workers 2`` end to end (``python -m bayes_risk`` in a subprocess, which starts its own
    cluster) writes what the in-process run writes (the reference: ``main`` in this process)."""
    y, syn = ce
    y.to_csv(tmp_path / "orig.csv", index=False)
    files = []
    for l, z in enumerate(syn, start=1):
        z.to_csv(tmp_path / f"syn{l}.csv", index=False)
        files.append(str(tmp_path / f"syn{l}.csv"))
    base = ["identification", str(tmp_path / "orig.csv"), *files,
            "--known-unsynthesized", *KNOWN_US, "--known-synthesized", *KNOWN_S,
            "--categorical", "Urban", "Marital", "Tenure", "--radius", "Age=0.1",
            "--radius", "Income=0.1", "--radius-sweep", "0.05,0.1", "--quiet"]
    assert _main_quiet(*base, "--out", str(tmp_path / "in")) == 0
    b = _cli(*base, "--workers", "2", "--partition-size", "64", "--out", str(tmp_path / "dk"))
    assert b.returncode == 0, b.stderr
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "in" / "records.csv"),
                                  pd.read_csv(tmp_path / "dk" / "records.csv"))
    assert json.loads((tmp_path / "in" / "summary.json").read_text()) == json.loads(
        (tmp_path / "dk" / "summary.json").read_text())
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "in" / "radius_sweep.csv"),
                                  pd.read_csv(tmp_path / "dk" / "radius_sweep.csv"))

    model, df, asyn = acs
    model.save(tmp_path / "model")
    asyn.save(tmp_path / "asyn")
    df.to_csv(tmp_path / "acs.csv", index=False)
    abase = ["attribute", "--model", str(tmp_path / "model"), str(tmp_path / "acs.csv"),
             str(tmp_path / "asyn"), "--records",
             "1-40", "--bootstrap", "20", "--random-seed", "3", "--quiet"]
    assert _main_quiet(*abase, "--out", str(tmp_path / "ain")) == 0
    b = _cli(*abase, "--workers", "2", "--partition-size", "9", "--out", str(tmp_path / "adk"))
    assert b.returncode == 0, b.stderr
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "ain" / "records.csv"),
                                  pd.read_csv(tmp_path / "adk" / "records.csv"))


def test_cli_errors(tmp_path):
    r = _cli("identification", "o.csv", "s.csv", "--known-synthesized", "x", "--workers", "2",
             "--scheduler", "tcp://127.0.0.1:8786", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "not allowed with argument" in r.stderr
    r = _cli("attribute", "--model", "m", "o.csv", "s",
             "--workers", "2", "--scheduler", "tcp://127.0.0.1:8786", "--out", str(tmp_path))
    assert r.returncode == 2 and "not allowed with argument" in r.stderr


def test_local_cluster_shares_the_budget_and_keeps_port_8787_free(monkeypatch):
    """Issue 70: a local cluster the package starts gave each worker Dask's default limit (the
    machine's memory divided among the workers: with this process, more than the machine) and
    bound port 8787 (a warning, or a failure, when taken). Now each worker's limit is its share
    of the run's budget, stated, and without ``dashboard`` no port is taken but a free one."""
    import socket

    from bayes_risk.auditing import memory_plan

    # worked: 10 GB available, 0.3 GB held: the budget 5.3 GB over this process and 2 workers
    monkeypatch.setattr(memory_plan, "available_memory", lambda: 10 * 10**9)
    monkeypatch.setattr(memory_plan, "resident_memory", lambda: 3 * 10**8)
    with memory_plan.local_shares(2) as share:
        assert share == 5_300_000_000 // 3
        b = memory_plan.audit_budget()  # the audit's budget is the driver's share, stated
        assert b.limit == share and "split equally among this process and the 2 local Dask " \
            "workers, 1.8 GB each" in b.derivation and "50% of the 10.0 GB" in b.derivation
    assert memory_plan.audit_budget().limit == 5_300_000_000  # the share ends with the block
    with br.memory_limit("1GB"), pytest.raises(ValidationError) as err:
        with memory_plan.local_shares(2):  # 333 MB each: below what a worker starts with
            pass
    assert err.value.code == "MEMORY_TOO_LARGE" and "500.0 MB a worker holds" in str(err.value)
    monkeypatch.undo()

    taken = socket.socket()
    try:
        taken.bind(("", 8787))
        taken.listen()
    except OSError:  # already taken by another program: the same test
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # "Port 8787 is already in use"
            with bd.connect(n_workers=1, memory_limit=600 * 10**6) as client:
                limits = [w["memory_limit"] for w in client.scheduler_info()["workers"].values()]
                assert limits == [600 * 10**6]
                sched = client.cluster.scheduler
                assert sched.http_server.port != 8787  # its health and metrics endpoints
    finally:
        taken.close()
    from bayes_risk.cli._run import command_line_options

    # the command line's words: its options name the arguments
    with command_line_options({"dashboard": "--dashboard", "workers": "--workers"}):
        with pytest.raises(ValidationError, match=r"--dashboard needs --workers \(a running "
                                                  r"scheduler serves its own\)") as err:
            with bd.cluster_executor(scheduler="tcp://127.0.0.1:1", dashboard=True):
                pass
    assert err.value.code == "OPTION_CONFLICT"
    with pytest.raises(ValidationError, match=r"^partition_size needs scheduler or workers\.$"):
        with bd.cluster_executor(partition_size=10):
            pass


def test_cli_without_dask_says_how_to_install(tmp_path, ce):
    """With dask hidden, --workers fails with one line naming the extra."""
    y, syn = ce
    y.to_csv(tmp_path / "orig.csv", index=False)
    syn[0].to_csv(tmp_path / "s1.csv", index=False)
    code = (
        "import sys; sys.modules['distributed'] = None;"
        "from bayes_risk.cli import main;"
        f"sys.exit(main(['identification', {str(tmp_path / 'orig.csv')!r}, "
        f"{str(tmp_path / 's1.csv')!r}, '--known-unsynthesized', 'Urban', '--workers', '2', "
        f"'--quiet', '--out', {str(tmp_path / 'o')!r}]))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, cwd="/")
    assert r.returncode == 2
    assert "install bayes-risk[dask]" in r.stderr and "Traceback" not in r.stderr


# ----------------------------------------------------------------------------------------------
# the audit
# ----------------------------------------------------------------------------------------------
AUDIT_KW = {"known": ["Age", "Urban", "Marital", "Income"], "random_seed": 3,
            "progressbar": False}
#: the steps whose engines use the executor: the rest run in process
ON_CLUSTER = {"identification", "posterior_identification", "attribute"}


def _untimed(d):
    """A step's summary without its wall times (``timing``)."""
    if isinstance(d, dict):
        return {k: _untimed(v) for k, v in d.items() if k != "timing"}
    return [_untimed(v) for v in d] if isinstance(d, list) else d


def _same_audit(a, b, scheduler: str, on_cluster: set[str] = ON_CLUSTER) -> None:
    """Audit folders ``a`` (in process) and ``b`` (on the cluster at ``scheduler``) hold the same
    figures: ``summary.json`` but for the steps' times and places and the executor's settings,
    and every step's ``summary.json`` and ``records.csv``."""
    sa, sb = (json.loads((f / "summary.json").read_text()) for f in (a, b))
    assert sa.keys() == sb.keys()
    assert {k: v for k, v in sa.items() if k not in ("steps", "settings")} == {
        k: v for k, v in sb.items() if k not in ("steps", "settings")}
    assert sa["verdicts"] and all(np.isfinite(v["value"]) for v in sa["verdicts"])
    for x, y in zip(sa["steps"], sb["steps"], strict=True):
        assert {k: v for k, v in x.items() if k not in ("seconds", "where")} == {
            k: v for k, v in y.items() if k not in ("seconds", "where")}
        ran = x["status"] != "skipped"
        assert x["where"] == ({"kind": "in process", "text": "in process"} if ran else {})
        if not ran:
            assert y["where"] == {}
        elif x["name"] in ON_CLUSTER:
            assert (y["where"]["kind"], y["where"]["scheduler"], y["where"]["n_workers"]) == (
                "dask", scheduler, 2), y
            assert y["where"]["part"]  # what of the step ran there
        else:
            assert y["where"] == x["where"]
    assert {s["name"] for s in sb["steps"] if s["status"] == "ran"} >= on_cluster
    rows = [s for s in sb["settings"] if s["step"] not in ("executor", "memory")]
    assert rows == [s for s in sa["settings"] if s["step"] not in ("executor", "memory")]
    where = {s["setting"]: s["value"] for s in sb["settings"] if s["step"] == "executor"}
    assert where == {"where the engines run": f"on the Dask cluster at {scheduler} (2 workers)"}
    assert any(s["setting"] == "Dask workers" for s in sb["settings"] if s["step"] == "memory")
    for step in sorted(on_cluster):
        assert _untimed(json.loads((a / step / "summary.json").read_text())) == _untimed(
            json.loads((b / step / "summary.json").read_text())), step
        pd.testing.assert_frame_equal(pd.read_csv(a / step / "records.csv"),
                                      pd.read_csv(b / step / "records.csv"))


@pytest.mark.slow
def test_audit_on_the_cluster_equals_in_process(client, cart_release, tmp_path):
    """``AuditSettings(executor=client)``: the identification (per dataset, pooled, the radius
    searches), posterior-replicate and attribute steps on 2 workers give the in-process
    figures, and the report says where each step ran."""
    y, _, syn = cart_release
    # a short search, 12 points refined (each round on a cluster is a round trip): the test
    # stays cheap and still covers the refinement
    settings = br.AuditSettings(sweep=[0.05, 0.1], radius_refine=12)
    _quiet(br.audit, y, syn, settings=settings, out=tmp_path / "in", **AUDIT_KW)
    res = _quiet(br.audit, y, syn, settings=settings.replace(executor=client),
                 out=tmp_path / "dk", **AUDIT_KW)
    _same_audit(tmp_path / "in", tmp_path / "dk", client.scheduler.address)
    html = res.to_html(tmp_path / "report.html").read_text()
    assert f"on the Dask cluster at {client.scheduler.address} (2 workers): the matching" in html
    assert res.step("utility").where == {"kind": "in process", "text": "in process"}
    with pytest.raises(ValidationError, match="executor must be None"):
        br.audit(y, syn, settings=br.AuditSettings(executor="tcp://127.0.0.1:8786"), **AUDIT_KW)


@pytest.mark.slow
def test_cli_audit_scheduler(client, cart_release, tmp_path):
    """``bayes-risk audit --scheduler ADDRESS --partition-size N`` (the cluster of the module,
    the CLI's ``main`` in this process) writes the figures of the run in process."""
    y, _, syn = cart_release
    y.to_csv(tmp_path / "orig.csv", index=False)
    syn.save(tmp_path / "syn")
    base = ["audit", str(tmp_path / "orig.csv"), str(tmp_path / "syn"), "--known", *AUDIT_KW[
        "known"], "--radius-sweep", "0.05,0.1", "--radius-refine", "12", "--random-seed", "3",
            "--quiet",
            # the steps the test above covers, skipped: the test stays cheap
            "--skip", "posterior-identification", "utility", "disclosure"]
    assert _main_quiet(*base, "--out", str(tmp_path / "in")) == 0
    address = client.scheduler.address
    assert _main_quiet(*base, "--scheduler", address, "--partition-size", "150",
                       "--out", str(tmp_path / "dk")) == 0
    _same_audit(tmp_path / "in", tmp_path / "dk", address, {"identification", "attribute"})
    assert _main_quiet(*base, "--partition-size", "150", "--out", str(tmp_path / "x")) == 2
    assert not (tmp_path / "x").exists()


def test_a_task_on_a_worker_sees_the_workers_memory_limit(client):
    """``room()`` in a task is capped by its worker's limit at Dask's pause fraction, so that a
    task's memory checks refuse what would make Dask pause or restart the worker (a posterior
    batch at 10^6 records was listed until its worker was restarted); outside a worker, the
    machine's."""
    from bayes_risk import _memory

    def seen() -> tuple[int | None, float, float, int]:
        from distributed import get_worker

        mm = get_worker().memory_manager
        return (_memory.room(), mm.memory_limit, mm.memory_pause_fraction,
                _memory.resident_memory())

    left, limit, pause, resident = client.submit(seen, pure=False).result()
    assert limit and 0 < pause <= 1
    assert left is not None and left <= limit * pause - resident + 64 * 2**20
    assert _memory._worker_room() is None  # this process is not a worker


@pytest.mark.parametrize("aggregation", ["per_dataset", "pooled"])
def test_radius_search_sends_several_points_a_map(client, ce, aggregation, monkeypatch):
    """On a cluster the search sends ``GRID_POINTS_PER_MAP`` grid points' partitions in one
    map (no wait at each point's last task); the risks equal the in-process search's, bit for
    bit, whatever the number of points a map, the refinement between the grid's points too
    (issue 85)."""
    from bayes_risk.identification import radius

    y, syn = ce
    kw = dict(known=[*KNOWN_US, "Income"], synthesized=["Income"], radii=[0.05, 0.2],
              aggregation=aggregation, categorical=CE_KW["categorical"], progressbar=False)
    refined = _quiet(br.radius_search, y, syn, refine=12, **kw)
    scattered, rounds = [], []
    ex = DaskExecutor(client, partition_size=90)
    scatter, real = client.scatter, ex.map
    monkeypatch.setattr(client, "scatter", lambda data, *a, **k: scattered.append(
        type(data).__name__) or scatter(data, *a, **k))
    monkeypatch.setattr(ex, "map", lambda *a, **k: rounds.append(1) or real(*a, **k))
    on = _quiet(br.radius_search, y, syn, refine=12, executor=ex, **kw)
    np.testing.assert_array_equal(on.radii, refined.radii)
    np.testing.assert_array_equal(on.risk, refined.risk)
    assert on.search == refined.search
    # the record pool is sent once for the grid and every round of the refinement, and a
    # round is one map (pooled: its points one dataset at a time in it too), not one a point
    new = len(on.radii) - 9
    assert scattered == ["Prepared"] and 0 < new and len(rounds) <= 3 + new
    monkeypatch.undo()
    kw["refine"] = 0  # the grid's points only: its maps counted below
    ref = _quiet(br.radius_search, y, syn, **kw)
    maps = []
    ex = DaskExecutor(client, partition_size=90)
    real = ex.map
    monkeypatch.setattr(ex, "map", lambda fn, shared, parts, **k: maps.append(len(parts))
                        or real(fn, shared, parts, **k))
    monkeypatch.setattr(radius, "GRID_POINTS_PER_MAP", 4)
    res = _quiet(br.radius_search, y, syn, executor=ex, **kw)
    np.testing.assert_array_equal(res.risk, ref.risk)
    np.testing.assert_array_equal(res.true_match_rate, ref.true_match_rate)
    # 9 points (3 radii each on Age and Income), 5 targets' partitions a point: 4 + 4 + 1;
    # pooled, each map carries its points one dataset at a time too (the counts the bounds
    # between the grid's points read): one round trip, twice the partitions
    assert [m // 5 for m in maps] == ([4, 4, 1] if aggregation == "per_dataset" else [8, 8, 2])
