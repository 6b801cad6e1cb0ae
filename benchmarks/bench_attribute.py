"""Benchmark of the attribute-risk engine (issue 5 "Speed").

Worst case, one-variable-different candidates, DPMPM with K = 30 classes, H = 1,000 draws, m = 5,
n = 10,000 records of 14 categorical variables (the ACS-like demo table). Times, separately:

* the DPMPM fit and the m augmented fits (model cost, not engine cost),
* ``attribute_risk`` for all records with diagnostics and a B = 200 draw bootstrap
  (stabilised estimator, the default; the published-estimator diagnostics are included),
* a sweep of 100 priors over the result (``prior_sensitivity``),

and reports the peak resident memory of the process. Prints a table; run with

    .venv/bin/python benchmarks/bench_attribute.py [--n 10000] [--draws 1000] [--m 5] [--k 30]

``--array-model`` replaces the DPMPM by random Dirichlet draws of the same shapes wrapped in an
:class:`~bayes_risk.models.ArrayModel` (engine cost only, no MCMC).
"""

from __future__ import annotations

import argparse
import platform
import resource
import time
import warnings

import numpy as np


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--draws", type=int, default=1_000)
    ap.add_argument("--tune", type=int, default=300)
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--k", type=int, default=30)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--chunk-size", type=int, default=256)
    ap.add_argument("--array-model", action="store_true")
    ap.add_argument("--khat", default="all", choices=["all", "base", "none"])
    ap.add_argument("--seed", type=int, default=2026)
    a = ap.parse_args()

    from bayes_risk.attribute import EstimatorSpec, attribute_risk, prior_sensitivity
    from bayes_risk.data import make_acs_like

    df = make_acs_like(a.n, random_seed=a.seed)
    rows: list[tuple[str, str]] = []
    t0 = time.perf_counter()
    if a.array_model:
        model, syn, aug = _array_setup(df, a)
        rows.append(("setup (random Dirichlet draws)", f"{time.perf_counter() - t0:.1f} s"))
    else:
        from bayes_risk.models.dpmpm.dpmpm import DPMPM

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # H = --draws posterior draws in all: the default two chains of H / 2 each
            model = DPMPM(n_components=a.k, tune=a.tune, draws=a.draws // 2, chains=2,
                          progressbar=False)
            model.fit(df, random_seed=a.seed)
        rows.append(
            (
                f"DPMPM fit (K={a.k}, tune={a.tune}, 2 chains, H={a.draws})",
                f"{time.perf_counter() - t0:.1f} s",
            )
        )
        syn = model.synthesize(a.m, random_seed=a.seed + 1)
        t1 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            aug = [
                model.fit_augmented(df, z, random_seed=a.seed + 10 + li) for li, z in enumerate(syn)
            ]
        rows.append((f"{a.m} augmented fits (n={2 * a.n})", f"{time.perf_counter() - t1:.1f} s"))

    t2, c2 = time.perf_counter(), _cpu_s()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = attribute_risk(
            df,
            syn,
            model=model,
            random_seed=a.seed,
            progressbar=False,
            estimator=EstimatorSpec(augmented=aug, bootstrap=a.bootstrap, khat=a.khat,
                                    chunk_size=a.chunk_size),
        )
    t_att, c_att = time.perf_counter() - t2, _cpu_s() - c2
    rows.append(
        (
            f"attribute_risk, {a.n} records, G={int(res.records['G'].iloc[0])}, "
            f"stabilised + IS diagnostics + k-hat ({a.khat}) + bootstrap B={a.bootstrap}",
            f"{t_att:.1f} s",
        )
    )
    # on a shared machine the process's CPU time (all threads) is the steadier figure
    rows.append(("  attribute_risk CPU time (all threads)", f"{c_att:.1f} s"))
    tm = res.settings["timing"]
    rows.append(
        (
            "  of which model candidate likelihoods (neighbourhood_loglik)",
            f"{tm['model_likelihood_s']:.1f} s",
        )
    )
    rows.append(
        ("  of which engine (estimators, diagnostics, bootstrap)", f"{tm['engine_s']:.1f} s")
    )
    if "chain_check_s" in tm:  # the between-chain agreement check (CHAINS_DISAGREE)
        rows.append(("    of which the between-chain check", f"{tm['chain_check_s']:.1f} s"))
    t3 = time.perf_counter()
    priors = [f"truth-weighted:{k:.3f}" for k in np.linspace(0.2, 10, 100)]
    prior_sensitivity(res, priors=priors)
    rows.append(("prior sweep, 100 priors", f"{time.perf_counter() - t3:.2f} s"))
    rows.append(("peak resident memory", f"{_peak_mb():.0f} MB"))
    s = res.to_dict()
    rows.append(("records flagged", f"{s['n_flagged']} of {s['n_records']}"))
    rows.append(("  flag counts", ", ".join(f"{k} {v}" for k, v in s["flag_counts"].items())))
    pk = s.get("pareto_khat") or {}
    if pk:
        rows.append(
            (
                "records with a high k-hat (all flagged by khat_rule='any')",
                f"{pk['records_with_high_khat']}",
            )
        )
        rows.append(
            (
                f"  of which immaterial (khat_rule='{pk['rule']}', tolerance {pk['tolerance']})",
                f"{pk['records_high_khat_immaterial']}",
            )
        )
    deg = s["published_estimator"].get("share_degenerate_triples")
    if deg is not None:
        rows.append(
            ("published estimator: triples with ESS_w<1.5 & max w>0.9", f"{100 * deg:.1f} %")
        )
    rows.append(("prop_top (unflagged)", f"{s['unflagged'].get('prop_top', float('nan')):.3f}"))
    rows.append(
        (
            "machine",
            f"{platform.processor() or platform.machine()}, {__import__('os').cpu_count()} cores",
        )
    )
    w = max(len(r[0]) for r in rows)
    print(f"{'step'.ljust(w)} | value")  # noqa: T201 - benchmark scripts print a table
    print("-" * w + "-|------")  # noqa: T201
    for k, v in rows:
        print(f"{k.ljust(w)} | {v}")  # noqa: T201


def _array_setup(df, a):
    """Random Dirichlet draws with DPMPM shapes and a numpy neighbourhood kernel."""
    import pandas as pd

    from bayes_risk.data import infer_schema
    from bayes_risk.data.validate import encode
    from bayes_risk.models import ArrayModel

    schema = infer_schema(df, synthesized=list(df.columns))
    d = [schema[c].n_levels for c in df.columns]
    rng = np.random.default_rng(a.seed)

    def draws():
        return {
            "pi": rng.dirichlet(np.ones(a.k), size=a.draws),
            **{
                f"phi{j}": rng.dirichlet(np.ones(dj), size=(a.draws, a.k)) for j, dj in enumerate(d)
            },
        }

    def class_terms(codes, dr):
        s = np.log(dr["pi"])[:, None, :] + 0.0
        s = np.broadcast_to(s, (a.draws, codes.shape[0], a.k)).copy()
        for j in range(len(d)):
            s += np.log(dr[f"phi{j}"][:, :, codes[:, j]]).transpose(0, 2, 1)
        return s

    def ll(rec, dr):
        from bayes_risk._numeric import logsumexp

        return logsumexp(class_terms(encode(rec, schema), dr), axis=-1)

    def nb(rec, dr):
        from bayes_risk._numeric import logsumexp

        codes = encode(rec, schema)
        s = class_terms(codes, dr)  # [H, n, K]
        outs = [logsumexp(s, axis=-1)]
        for j, dj in enumerate(d):
            lphi = np.log(dr[f"phi{j}"])  # [H, K, dj]
            own = lphi[:, :, codes[:, j]].transpose(0, 2, 1)  # [H, n, K]
            for c in range(dj - 1):
                lv = c + (c >= codes[:, j])
                new = lphi[:, :, lv].transpose(0, 2, 1)
                outs.append(logsumexp(s - own + new, axis=-1))
        return np.stack(outs, axis=-1)

    model = ArrayModel(ll, draws(), schema, neighbourhood_fn=nb)
    syn = [df.sample(frac=1.0, random_state=li).reset_index(drop=True) for li in range(a.m)]
    aug = [model.with_draws(draws()) for _ in range(a.m)]
    _ = pd
    return model, syn, aug


if __name__ == "__main__":
    main()
