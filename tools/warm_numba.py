"""Fill numba's cache of the installed package before the test workers start (``make test``).

From a fresh installation every compiled kernel is compiled by the first process that calls it,
and under pytest-xdist both workers reach the same kernels at the same time and compile them
twice. This script runs small problems through the package's own code paths so that the
workers, the documentation's kernels and every later run load the kernels from the cache. The
groups of each stage run in parallel processes and share no kernel (two processes writing one
kernel's cache index could drop a signature); the second stage uses the first one's DPMPM fit
and compiled kernels. Numba's cache is keyed on each module's content: a kernel whose source
changed is compiled again here, an unchanged one is loaded, so a warm cache costs seconds.
Only numba's cache is written (the fit is saved to a temporary folder). A failed group is
reported and does not stop the tests, which then compile what is missing themselves.

Usage: ``python tools/warm_numba.py`` (``make test`` runs it).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd


def _dpmpm_frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    k = rng.integers(0, 3, 120)
    return pd.DataFrame({f"v{j}": np.where(rng.random(120) < 0.1, rng.integers(0, 3, 120), k)
                         .astype(str) for j in range(3)})


def _risk_frames() -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    rng = np.random.default_rng(1)
    n = 300
    y = pd.DataFrame({"g": rng.integers(0, 4, n), "a": rng.integers(20, 30, n),
                      "s": rng.integers(0, 12, n), "x": rng.lognormal(3, 0.4, n)})
    zs = [y.assign(s=rng.integers(0, 12, n), x=y.x * rng.lognormal(0, 0.2, n))
          for _ in range(3)]
    return y, zs


def dpmpm_fit(folder: Path) -> None:
    """The DPMPM's sweep kernels (class step, collapsed moves, sticks, split-merge): a small
    fit, saved for the second stage, and its synthesis."""
    from bayes_risk.models import DPMPM, Sampling

    # 2 chains of 50 draws: the shortest the attribute estimator's between-chain check takes
    model = DPMPM(n_components=5, sampling=Sampling(tune=20, draws=50, chains=2, cores=1),
                  progressbar=False).fit(_dpmpm_frame(), random_seed=1)
    model.synthesize(2, random_seed=2)
    model.save(folder / "dpmpm")


def attribute_identification(folder: Path) -> None:
    """The attribute estimator's kernels (importance ratios, Pareto tails, prior columns) on
    a model given as arrays, and the identification engine's compiled path (the pooled
    search's pattern count too, ``_pattern_counts``)."""
    from scipy.special import xlog1py, xlogy

    import bayes_risk as br
    from bayes_risk.identification import engine
    from bayes_risk.models import ArrayModel

    def loglik(records: pd.DataFrame, theta: np.ndarray) -> np.ndarray:
        y = records["y"].astype(int).to_numpy()[None, :]
        t = np.asarray(theta, dtype=float)[:, None]
        return xlogy(y, t) + xlog1py(1 - y, -t)

    def frame(values: list[int]) -> pd.DataFrame:
        return pd.DataFrame({"y": pd.Categorical(values, categories=[0, 1])})

    orig = frame([1, 1, 0, 1, 0])
    model = ArrayModel(loglik, np.linspace(0.1, 0.9, 40), br.infer_schema(orig, synthesized=["y"]))
    br.attribute_risk(orig, [frame([1, 1, 1, 1, 0]), frame([1, 1, 1, 0, 0])], model=model,
                      random_seed=1, progressbar=False)
    engine.USE_NUMBA = True
    y, zs = _risk_frames()
    br.identification_risk(y, zs, known=["g", "s", "x"], synthesized=["s", "x"],
                           categorical=["g", "s"], match=br.MatchSpec(radius={"x": 0.1}),
                           progressbar=False)
    from bayes_risk.identification import patterns

    patterns.PAIRS_PER_PATTERN = -1.0  # the pooled search's pattern count, whatever it costs
    br.radius_search(y, zs, known=["g", "a", "x"], synthesized=["x"], categorical=["g"],
                     radii=[0.1], aggregation="pooled", progressbar=False)


def dpmpm_risk(folder: Path) -> None:
    """The DPMPM's record and neighbourhood log-likelihoods and the attribute estimators'
    kernels (the stabilised one's between-chain check, the Pareto tails), as attribute risk
    runs them."""
    import bayes_risk as br
    from bayes_risk.attribute import EstimatorSpec
    from bayes_risk.models import load_model

    model = load_model(folder / "dpmpm")
    orig = _dpmpm_frame()
    syn = model.synthesize(2, random_seed=3)
    for kind in ("stabilised", "is"):
        br.attribute_risk(orig, syn, model=model, records=[0, 1, 2], random_seed=1,
                          estimator=EstimatorSpec(kind=kind, bootstrap=0), progressbar=False)


def trees_poisson(folder: Path) -> None:
    """The Poisson mixture's kernels and the synthesis trees' routing."""
    import bayes_risk as br
    from bayes_risk.models import CARTSynthesizer, PoissonMixture, Sampling

    y, _ = _risk_frames()
    counts = y[["a", "s"]]
    PoissonMixture(n_components=3, sampling=Sampling(tune=10, draws=10, chains=1),
                   progressbar=False).fit(
        counts, schema=br.infer_schema(counts, count=["a", "s"]), random_seed=1)
    cat = y.astype({"g": str, "s": str})
    cart = CARTSynthesizer().fit(cat, schema=br.infer_schema(cat, synthesized=["s", "x"]),
                                 synthesized=["s", "x"], random_seed=1)
    cart.synthesize(2, random_seed=2)


def search_paths(folder: Path) -> None:
    """The radius search's indexes of a grid (value ranks, rectangle counts), the knowledge
    sweep's subset counts, posterior replicates pooled in batches, and k̂ of arrays of each
    layout the engines pass."""
    import bayes_risk as br
    from bayes_risk.attribute.diagnostics import pareto_khat
    from bayes_risk.identification import engine
    from bayes_risk.models import CARTSynthesizer

    engine.USE_NUMBA = True
    rng = np.random.default_rng(7)
    n = 1000
    y = pd.DataFrame({"age": rng.integers(20, 30, n), "sex": rng.choice(["F", "M"], n),
                      "inc": np.round(rng.lognormal(10, 0.5, n), -2)})
    zs = [y.assign(inc=np.round(y["inc"] * rng.lognormal(0, 0.15, n), -2)) for _ in range(2)]
    for aggregation in ("per_dataset", "pooled"):
        br.radius_search(y, zs, known=["age", "sex", "inc"], categorical=["sex"],
                         radii=[0.05, 0.1, 0.5], aggregation=aggregation, progressbar=False)
    br.known_sweep(y, zs, candidates=["age", "sex", "inc"], synthesized=["inc"],
                   categorical=["sex"], aggregation="per_dataset",
                   match=br.MatchSpec(radius={"inc": 0.1}, fallback="none"), progressbar=False)
    cart = CARTSynthesizer().fit(y, schema=br.infer_schema(y, categorical=["sex"]),
                                 synthesized=["inc"], random_seed=1)
    br.identification_risk(y, cart.synthesize(2, random_seed=2), known=["age", "sex", "inc"],
                           synthesized=["inc"], categorical=["sex"],
                           match=br.MatchSpec(radius={"inc": 0.1}), progressbar=False,
                           replicates=br.PosteriorReplicates(cart, n=6, batch_size=3,
                                                             n_groups=2, random_seed=3))
    lr = rng.normal(size=(2, 200, 3))
    for a in (lr[0, :, 0], lr[0].T, np.moveaxis(lr, 1, -1)):
        pareto_khat(a)


def models_paths(folder: Path) -> None:
    """The random forest's routing of a loaded forest, synthpop's rf column (a forest grown as
    randomForest grows it), CART's compiled routing (its plug-in, and a smoothed CART's: the
    audit of a release made with --smoothing compiled those in the suite), the Poisson mixture's
    record likelihoods and augmented fits (attribute risk), the DPMPM's tempered sweep, its
    sweep with structural zeros and the regime evidence's collapsed chain."""
    import bayes_risk as br
    from bayes_risk.models import (
        DPMPM,
        CARTSynthesizer,
        PoissonMixture,
        RandomForestSynthesizer,
        Sampling,
        SynthesisSpec,
        load_model,
    )
    from bayes_risk.models.dpmpm.evidence import partition_evidence
    from bayes_risk.models.trees import seqtree

    y, _ = _risk_frames()
    cat = y.astype({"g": str, "s": str})
    schema = br.infer_schema(cat, synthesized=["s", "x"])
    RandomForestSynthesizer(n_trees=3).fit(cat, schema=schema, synthesized=["s", "x"],
                                           random_seed=1).save(folder / "rf")
    load_model(folder / "rf").synthesize(1, random_seed=2)
    spec = SynthesisSpec(method={"g": "", "a": "", "s": "rf", "x": "rf"},
                         visit_sequence=["g", "a", "s", "x"])
    CARTSynthesizer(spec=spec).fit(cat, schema=schema, random_seed=1).synthesize(
        1, random_seed=2)
    seqtree.COMPILED_ROUTE = True
    cart = CARTSynthesizer().fit(cat, schema=schema, synthesized=["s", "x"], random_seed=1)
    br.attribute_risk(cat, cart.synthesize(1, random_seed=2), model=br.CARTPlugin(cart, cat),
                      records=[0, 1], random_seed=1, progressbar=False)
    # the Monte Carlo terms of kernel-smoothed leaves, and a rounded column's intervals
    rounded = cat.assign(x=cat["x"].round(1))
    smooth = CARTSynthesizer(smoothing=True).fit(rounded, schema=schema, synthesized=["s", "x"],
                                                 random_seed=1)
    br.attribute_risk(rounded, smooth.synthesize(1, random_seed=2),
                      model=br.CARTPlugin(smooth, rounded), records=[0, 1], random_seed=1,
                      progressbar=False)
    counts = y[["a", "s"]]
    mix = PoissonMixture(n_components=3, sampling=Sampling(tune=10, draws=20, chains=2),
                         progressbar=False).fit(
        counts, schema=br.infer_schema(counts, count=["a", "s"]), random_seed=1)
    for kind in ("stabilised", "is"):
        br.attribute_risk(counts, mix.synthesize(2, random_seed=2), model=mix, records=[0, 1],
                          estimator=br.EstimatorSpec(kind=kind, bootstrap=0), random_seed=1,
                          progressbar=False)
    frame = _dpmpm_frame()
    DPMPM(n_components=4, progressbar=False,
          sampling=Sampling(tune=10, draws=10, chains=1, temperatures=2)).fit(frame,
                                                                             random_seed=1)
    frame = frame[~((frame["v0"] == "0") & (frame["v1"] == "1"))].reset_index(drop=True)
    DPMPM(n_components=4, structural_zeros=[{"v0": "0", "v1": "1"}], progressbar=False,
          sampling=Sampling(tune=10, draws=10, chains=1)).fit(frame, random_seed=1)
    codes = np.stack([frame[c].astype(int).to_numpy() for c in frame], axis=1)
    partition_evidence(codes, [3, 3, 3], np.arange(len(frame)) % 3, alpha_prior=(0.25, 0.25),
                       dirichlet_prior=1.0, sweeps=(5, 5, 5), random_seed=1, extensions=0)


#: stages run one after the other; the groups of a stage in parallel
STAGES = [[dpmpm_fit, attribute_identification], [dpmpm_risk, trees_poisson],
          [search_paths, models_paths]]
GROUPS = {f.__name__: f for stage in STAGES for f in stage}


def main(argv: list[str]) -> int:
    """Run the stages (``GROUP FOLDER``: one group, in this process)."""
    if argv:
        if len(argv) != 2 or argv[0] not in GROUPS:
            raise SystemExit(f"usage: warm_numba.py [GROUP FOLDER], GROUP one of {sorted(GROUPS)}")
        warnings.simplefilter("ignore")
        GROUPS[argv[0]](Path(argv[1]))
        return 0
    start = time.perf_counter()
    failed = []
    with tempfile.TemporaryDirectory(prefix="warm-numba-") as folder:
        for stage in STAGES:
            procs = {f.__name__: subprocess.Popen([sys.executable, __file__, f.__name__, folder])
                     for f in stage}
            failed += [name for name, p in procs.items() if p.wait() != 0]
    note = f"; failed: {', '.join(failed)} (the tests compile what is missing)" if failed else ""
    print(f"warm_numba: kernels compiled or loaded in {time.perf_counter() - start:.0f} s{note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
