"""The singling-out, linkability and inference attacks against anonymeter's own outputs.

anonymeter 1.1.0 (statice/anonymeter on PyPI) pins ``numpy<1.27`` where bayes-risk needs
``numpy>=2.0`` (and numpy 1.26 has no build for Python 3.13), so it cannot be a test
dependency of bayes-risk: its
outputs were recorded once, by anonymeter itself in a Python 3.11 environment, by
``tests/attacks/anonymeter/make_reference.py`` (see its docstring), on shared data: a CART
release made by bayes-risk from 1,000 CE records (``release.csv``), a holdout of 1,000 other CE
records and a larger one of 2,000 (row numbers in ``split.json``). ``reference.json`` holds the
counts of every anonymeter run (100 seeds for each attack; for inference, four settings: Income
guessed exactly and within 5 %, Tenure, and Age against the larger holdout).

The package's mean counts over its own seeds must agree with anonymeter's mean within Monte
Carlo error: 4 standard errors of the difference of the two means, the standard deviation of
one run estimated from anonymeter's runs (the same distribution under agreement).
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

import bayes_risk as br
from bayes_risk.exceptions import DataWarning

HERE = Path(__file__).resolve().parent / "anonymeter"
CATEGORICAL = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def data():
    split = json.loads((HERE / "split.json").read_text())
    ce = br.read_table(shared_path("data", "CEdata.csv"))
    t = {k: ce.iloc[v].reset_index(drop=True) for k, v in split.items()}
    t["syn"] = pd.read_csv(HERE / "release.csv")
    return t, json.loads((HERE / "reference.json").read_text())


def _agree(ours: list[float], theirs: list[float], what: str) -> None:
    a, b = np.asarray(ours, float), np.asarray(theirs, float)
    sd = max(float(b.std(ddof=1)), 0.5)  # a count that hardly varies: half a success
    tol = 4 * sd * math.sqrt(1 / a.size + 1 / b.size)
    assert abs(a.mean() - b.mean()) <= tol, (
        f"{what}: bayes-risk {a.mean():.2f} (runs {a.tolist()}) against anonymeter "
        f"{b.mean():.2f} ± {b.std(ddof=1):.2f} per run; tolerance {tol:.2f}")


@pytest.mark.reference
@pytest.mark.parametrize("name, seeds", [("univariate", 8), ("multivariate", 6),
                                         ("multivariate_big_holdout", 6)])
def test_singling_out_agrees_with_anonymeter(data, name, seeds):
    t, ref = data
    cfg = ref["singling_out"][name]
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        for seed in range(seeds):
            res = br.singling_out_risk(t["train"], t["syn"], holdout=t[cfg["holdout"]],
                                       mode=cfg["mode"], n_attacks=cfg["n_attacks"],
                                       predicates=br.PredicateSpec(n_cols=cfg["n_cols"]),
                                       categorical=CATEGORICAL,
                                       random_seed=seed)
            runs.append(res.table.iloc[0])
    # anonymeter wrote every predicate asked for (the reference run fails otherwise): the same
    # denominators
    assert all(r["n_queries"] == cfg["n_attacks"] for r in runs)
    theirs = cfg["runs"]
    for key in ("n_main", "n_control", "n_baseline"):
        _agree([r[key] for r in runs], [x[key] for x in theirs], f"{name} {key}")
    _agree([r["risk"] for r in runs], [x["risk"] for x in theirs], f"{name} risk")


@pytest.mark.reference
def test_linkability_agrees_with_anonymeter(data):
    t, ref = data
    cfg = ref["linkability"]
    K = cfg["n_neighbors"]
    tables = []
    for seed in range(10):
        res = br.linkability_risk(t["train"], t["syn"], aux_columns=cfg["aux_columns"],
                                  holdout=t["holdout"], n_attacks=cfg["n_attacks"],
                                  n_neighbors=K, categorical=CATEGORICAL, random_seed=seed)
        tables.append(res.table.set_index("n_neighbors"))
    for k in range(1, K + 1):
        for key in ("n_main", "n_control", "n_baseline"):
            _agree([tb.loc[k, key] for tb in tables],
                   [run[str(k)][key] for run in cfg["runs"]], f"linkability k={k} {key}")


@pytest.mark.reference
def test_nearest_rows_are_anonymeters(data):
    """The 5 nearest synthetic rows of each of the 1,000 holdout records, on each of the two
    tables, are anonymeter's ``MixedTypeKNeighbors``' (``neighbours.json``), in the same order,
    for every record whose order no tie decided (equally distant rows: anonymeter's order is
    that of numba's quicksort, the package's a seeded random one)."""
    from bayes_risk.attacks import linkability
    from bayes_risk.attacks._inputs import attack_inputs, code_table

    t, _ = data
    ref = json.loads((HERE / "neighbours.json").read_text())
    aux = ref["aux_columns"]
    inp = attack_inputs(t["train"], t["syn"], t["holdout"], columns=[*aux[0], *aux[1]],
                        schema=None, categorical=CATEGORICAL)
    is_cat = np.array([s.is_categorical for s in inp.schema])
    T, S = code_table(inp.holdout, inp.schema), code_table(inp.datasets[0], inp.schema)
    for h, cols in enumerate(aux):
        ix = np.array([inp.schema.names.index(c) for c in cols])
        scale = linkability._scale(np.concatenate([S[:, ix], T[:, ix]]), is_cat[ix])
        seeds = np.random.SeedSequence(1).spawn(len(T))
        idx, tied = linkability.nearest_rows(T[:, ix], S[:, ix], is_cat[ix], scale, 5, seeds)
        theirs = np.asarray(ref["idx"][str(h)])
        assert (~tied).sum() >= 300  # records whose 5 nearest rows are all at distinct distances
        np.testing.assert_array_equal(idx[~tied], theirs[~tied])
        # a tie only reorders rows at the same distance: the same distances, row by row
        d = linkability._distances(T[tied][:, ix], S[:, ix], is_cat[ix], scale)
        np.testing.assert_allclose(np.take_along_axis(d, idx[tied], 1),
                                   np.take_along_axis(d, theirs[tied], 1), rtol=0, atol=1e-12)


def _expected_baselines(t, secret, regression, n_base):
    """The expected baseline count of the package (a random synthetic row's value for a random
    record of the original: the mean over every pair) and of anonymeter 1.1.0, whose
    ``syn.sample(n)[secret].reindex_like(targets)`` aligns the sampled synthetic rows with the
    targets by row label: a target gets the value of the synthetic row of its own label when
    that row was sampled (probability ``n / N_syn``), else a missing guess, which is wrong."""
    from bayes_risk.attacks.inference import correct_guesses

    orig = t["train"][secret].to_numpy(float)
    syn = t["syn"][secret].to_numpy(float)
    pairs = correct_guesses(syn[None, :], orig[:, None], regression=regression, tolerance=0.05)
    ours = n_base * pairs.mean()
    k = min(len(orig), len(syn))  # labels both tables hold
    own = correct_guesses(syn[:k], orig[:k], regression=regression, tolerance=0.05)
    theirs = n_base * (n_base / len(syn)) * own.sum() / len(orig)
    return ours, theirs


@pytest.mark.reference
@pytest.mark.parametrize("name", ["Income_exact", "Income_tolerance", "Tenure",
                                  "Age_tolerance_big_holdout"])
def test_inference_agrees_with_anonymeter(data, name):
    """The main and control attacks' counts and the risk agree with anonymeter's; the baseline
    differs by anonymeter's label alignment (it does not enter the risk): each package's mean
    baseline agrees with what its own rule predicts exactly."""
    t, ref = data
    cfg = ref["inference"][name]
    n = cfg["n_attacks"]
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        for seed in range(12):
            res = br.inference_risk(t["train"], t["syn"], secret=cfg["secret"],
                                    aux_columns=cfg["aux_columns"], holdout=t[cfg["holdout"]],
                                    n_attacks=n, guess=br.GuessSpec(regression=cfg["regression"]),
                                    categorical=CATEGORICAL, random_seed=seed)
            runs.append(res.table.iloc[0])
    assert all(r["n_attacks"] == n and r["n_attacks_control"] == n for r in runs)
    theirs = cfg["runs"]
    for key in ("n_main", "n_control", "risk"):
        _agree([r[key] for r in runs], [x[key] for x in theirs], f"{name} {key}")
    ours_b, theirs_b = _expected_baselines(t, cfg["secret"], cfg["regression"], n)
    for got, expected, who in (([r["n_baseline"] for r in runs], ours_b, "bayes-risk"),
                               ([x["n_baseline"] for x in theirs], theirs_b, "anonymeter")):
        g = np.asarray(got, float)
        tol = 4 * max(g.std(ddof=1), 0.5) / math.sqrt(g.size)
        assert abs(g.mean() - expected) <= tol, (
            f"{name} {who} baseline {g.mean():.2f}, expected {expected:.2f} ± {tol:.2f}")
