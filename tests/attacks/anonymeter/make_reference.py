"""Regenerate the anonymeter reference of ``tests/attacks/test_anonymeter_reference.py``.

anonymeter (statice/anonymeter on PyPI) cannot be installed beside bayes-risk: its 1.1.0 pins
``numpy<1.27`` (and numba 0.59+) where bayes-risk needs ``numpy>=2.0`` (numpy 1.26 has no
build for Python 3.13 either). So its outputs are recorded here, once, by anonymeter itself in
an environment of its own, and the test compares bayes-risk with them:

1. ``python make_reference.py release`` (bayes-risk's environment): draws the split of
   ``../shared/data/CEdata.csv`` (training records, holdout, a larger holdout) and makes a CART
   release of the training records with bayes-risk (``release.csv``); writes the row numbers to
   ``split.json``.
2. ``python make_reference.py anonymeter [singling_out|linkability|inference]`` (an
   environment with ``pip install anonymeter==1.1.0``, Python 3.11): runs anonymeter's attacks
   many times with different seeds on those tables (100 runs each; about 40 minutes, mostly the
   multivariate singling out; the inference attack a few minutes) and writes every run's counts
   to ``reference.json``; then the 5 nearest synthetic rows of every holdout record on each of
   linkability's two tables, by anonymeter's ``MixedTypeKNeighbors``, to ``neighbours.json``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
CE = HERE.parents[2].parent / "shared" / "data" / "CEdata.csv"
CATEGORICAL = ["Urban", "Marital", "Tenure"]
SYNTHESIZED = ["Tenure", "Educ", "Marital", "Expenditure", "Income"]
N_TRAIN, N_HOLDOUT, N_BIG = 1000, 1000, 2000
AUX = (["Age", "Expenditure", "Urban"], ["Income", "Educ", "Marital", "Tenure"])
#: the attacks: singling out (mode, n_attacks, n_cols, holdout) and linkability
SINGLING_OUT = {"univariate": ("univariate", 200, 1, "holdout"),
                "multivariate": ("multivariate", 200, 3, "holdout"),
                "multivariate_big_holdout": ("multivariate", 200, 3, "big")}
LINKABILITY = {"n_attacks": 300, "n_neighbors": 5}
#: the inference attacks: secret, anonymeter's ``regression`` (1.1.0's constructor default is
#: False, exact equality, whatever the column), the control set; the other six columns are aux
INFERENCE = {"Income_exact": ("Income", False, "holdout"),
             "Income_tolerance": ("Income", True, "holdout"),
             "Tenure": ("Tenure", False, "holdout"),
             "Age_tolerance_big_holdout": ("Age", True, "big")}
N_INFERENCE = 500
REPS_SO, REPS_LINK, REPS_INF = 100, 100, 100


def tables() -> dict[str, pd.DataFrame]:
    """The training records, the holdouts and the release, as both sides read them."""
    split = json.loads((HERE / "split.json").read_text())
    ce = pd.read_csv(CE)
    out = {k: ce.iloc[split[k]].reset_index(drop=True) for k in ("train", "holdout", "big")}
    out["syn"] = pd.read_csv(HERE / "release.csv")
    return out


def make_release() -> None:
    import bayes_risk as br
    from bayes_risk.models import CARTSynthesizer

    ce = br.read_table(CE)
    idx = np.random.default_rng(2023).permutation(len(ce))
    split = {"train": idx[:N_TRAIN], "holdout": idx[N_TRAIN:N_TRAIN + N_HOLDOUT],
             "big": idx[N_TRAIN + N_HOLDOUT:N_TRAIN + N_HOLDOUT + N_BIG]}
    (HERE / "split.json").write_text(json.dumps({k: v.tolist() for k, v in split.items()}))
    train = ce.iloc[split["train"]].reset_index(drop=True)
    schema = br.infer_schema(train, categorical=CATEGORICAL)
    syn = CARTSynthesizer().fit(train, schema=schema, synthesized=SYNTHESIZED,
                                random_seed=1).synthesize(1, random_seed=2)
    syn.datasets[0].to_csv(HERE / "release.csv", index=False)


def run_anonymeter(parts: tuple[str, ...] = ("singling_out", "linkability", "inference")
                   ) -> None:
    import logging
    from importlib.metadata import version

    from anonymeter.evaluators import LinkabilityEvaluator, SinglingOutEvaluator

    # anonymeter logs a warning when it writes fewer predicates than asked for: the reference
    # must have every one written (the two packages' denominators then agree)
    class Fail(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                raise RuntimeError(record.getMessage())

    logging.getLogger("anonymeter").addHandler(Fail())
    t = tables()
    for df in t.values():  # categorical columns as text: anonymeter compares them with ==/!=
        for c in CATEGORICAL:
            df[c] = df[c].astype(str)
    path = HERE / "reference.json"
    out: dict = json.loads(path.read_text()) if path.is_file() else {}
    out.update({"anonymeter": version("anonymeter"), "numpy": version("numpy"),
                "polars": version("polars")})
    out.setdefault("singling_out", {})
    for name, (mode, n, k, hold) in SINGLING_OUT.items():
        if "singling_out" not in parts:
            break
        runs = []
        t0 = time.time()
        for seed in range(REPS_SO):
            ev = SinglingOutEvaluator(t["train"], t["syn"], n_attacks=n, n_cols=k,
                                      control=t[hold], seed=seed).evaluate(mode=mode)
            r = ev.results()
            runs.append({"n_main": int(r.n_success), "n_control": float(r.n_control),
                         "n_baseline": int(r.n_baseline), "risk": ev.risk().value})
        out["singling_out"][name] = {"mode": mode, "n_attacks": n, "n_cols": k,
                                     "holdout": hold, "runs": runs}
        print(name, f"{time.time() - t0:.0f} s", flush=True)  # noqa: T201 - a script
    if "inference" in parts:
        out["inference"] = run_inference(t)
    if "linkability" not in parts:
        path.write_text(json.dumps(out, indent=1))
        return
    runs = []
    t0 = time.time()
    for seed in range(REPS_LINK):
        np.random.seed(seed)  # noqa: NPY002 - anonymeter's sample() draws from numpy's global
        ev = LinkabilityEvaluator(t["train"], t["syn"], aux_cols=AUX,
                                  n_attacks=LINKABILITY["n_attacks"],
                                  n_neighbors=LINKABILITY["n_neighbors"],
                                  control=t["holdout"]).evaluate(n_jobs=1)
        per_k = {}
        for k in range(1, LINKABILITY["n_neighbors"] + 1):
            r = ev.results(n_neighbors=k)
            per_k[str(k)] = {"n_main": int(r.n_success), "n_control": int(r.n_control),
                             "n_baseline": int(r.n_baseline)}
        runs.append(per_k)
    out["linkability"] = {"aux_columns": AUX, **LINKABILITY, "runs": runs}
    print("linkability", f"{time.time() - t0:.0f} s", flush=True)  # noqa: T201 - a script
    path.write_text(json.dumps(out, indent=1))
    neighbours()


def run_inference(t: dict[str, pd.DataFrame]) -> dict:
    """anonymeter's inference attack, ``REPS_INF`` runs of each of :data:`INFERENCE`."""
    from anonymeter.evaluators import InferenceEvaluator

    out = {}
    for name, (secret, regression, hold) in INFERENCE.items():
        aux = [c for c in t["train"].columns if c != secret]
        runs = []
        t0 = time.time()
        for seed in range(REPS_INF):
            np.random.seed(seed)  # noqa: NPY002 - anonymeter's sample() draws from numpy's global
            ev = InferenceEvaluator(t["train"], t["syn"], aux_cols=aux, secret=secret,
                                    regression=regression, n_attacks=N_INFERENCE,
                                    control=t[hold]).evaluate(n_jobs=1)
            r = ev.results()
            runs.append({"n_main": int(r.n_success), "n_control": int(r.n_control),
                         "n_baseline": int(r.n_baseline), "risk": ev.risk().value})
        out[name] = {"secret": secret, "aux_columns": aux, "regression": regression,
                     "n_attacks": N_INFERENCE, "holdout": hold, "runs": runs}
        print(name, f"{time.time() - t0:.0f} s", flush=True)  # noqa: T201 - a script
    return out


def neighbours() -> None:
    """anonymeter's 5 nearest synthetic rows of every holdout record, on each table."""
    import anonymeter.evaluators  # noqa: F401 - imports the neighbours module without a cycle
    from anonymeter.neighbors.mixed_types_kneighbors import MixedTypeKNeighbors

    t = tables()
    for df in t.values():
        for c in CATEGORICAL:
            df[c] = df[c].astype(str)
    out = {}
    for h, cols in enumerate(AUX):
        nn = MixedTypeKNeighbors(n_jobs=1, n_neighbors=5).fit(t["syn"][cols])
        out[str(h)] = nn.kneighbors(t["holdout"][cols]).tolist()
    (HERE / "neighbours.json").write_text(json.dumps({"aux_columns": AUX, "idx": out}))


if __name__ == "__main__":
    # "anonymeter" runs every attack; "anonymeter singling_out", "anonymeter linkability" or
    # "anonymeter inference" one family (the others' runs in reference.json are kept)
    if sys.argv[1] == "release":
        make_release()
    elif sys.argv[1:] == ["neighbours"]:
        neighbours()
    else:
        run_anonymeter(tuple(sys.argv[2:]) or ("singling_out", "linkability", "inference"))
