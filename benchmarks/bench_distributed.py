"""The Dask path against the in-process functions; prints a table.

1. Attribute risk of all 2,000 records of the 14-variable ACS-like table (DPMPM, K = 20,
   H = 500 draws, m = 5, one-variable candidates, stabilised estimator with every diagnostic and
   a B = 200 bootstrap): in process vs a LocalCluster with 2 worker processes (partitions of 256
   records). The model fit is not timed; both runs include the m augmented fits (done once, on
   the client, in both).
2. Identification risk of 200,000 records (the synthetic table of ``suite/identification.py``:
   three categorical and two continuous known columns, m = 5, percentage radius 0.05), per
   dataset and pooled (``MatchSpec(fallback="none")``): in process vs the LocalCluster
   (partitions of 50,000 targets).

Every Dask result is checked to be identical to the in-process one. Cluster start-up is timed
separately. On a machine with few cores expect no speed-up: the point of the Dask path is to
spread work over the cores of several machines and to bound the memory of each task.

Usage: ``python benchmarks/bench_distributed.py [--quick]`` (``--quick``: 500 ACS-like records,
50,000 identification records).
"""

from __future__ import annotations

import os
import platform
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from suite.identification import _large as make_large  # noqa: E402


def _wall(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    quick = "--quick" in sys.argv
    import distributed

    import bayes_risk as br
    from bayes_risk import distributed as bd
    from bayes_risk.models.dpmpm.dpmpm import DPMPM

    warnings.simplefilter("ignore")
    rows = []
    t_start, cluster = _wall(lambda: distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None))
    client = distributed.Client(cluster)
    rows.append(("LocalCluster(2 workers) start-up", "", "", f"{t_start:.1f} s", ""))

    # ---- attribute risk
    n_a = 500 if quick else 2000
    df = br.make_acs_like(n_a, random_seed=1)
    model = DPMPM(n_components=20, tune=300, draws=500, progressbar=False).fit(df, random_seed=1)
    syn = model.synthesize(5, random_seed=2)
    kw = {"random_seed": 3, "progressbar": False}
    t_in, ref = _wall(lambda: br.attribute_risk(df, syn, model=model, **kw))
    t_dk, res = _wall(lambda: bd.attribute_risk(df, syn, model=model, client=client,
                                                partition_size=256, **kw))
    pd.testing.assert_frame_equal(res.records, ref.records)
    rows.append((f"attribute risk, ACS-like n={n_a:,}, K=20, H=500, m=5", "",
                 f"{t_in:.1f} s", f"{t_dk:.1f} s", "identical"))

    # ---- identification risk
    n_i = 50_000 if quick else 200_000
    y, zs = make_large(n_i, 5)
    ikw = {"known": ["region", "hhsize", "sex", "income", "expend"],
           "synthesized": ["income", "expend"], "categorical": ["region", "hhsize", "sex"],
           "match": br.MatchSpec(radius=0.05, fallback="none"), "progressbar": False}
    for agg in ("per_dataset", "pooled"):
        args = (y, zs)
        t_in, ref = _wall(lambda agg=agg, args=args: br.identification_risk(
            *args, aggregation=agg, **ikw))
        t_dk, res = _wall(lambda agg=agg, args=args: bd.identification_risk(
            *args, aggregation=agg, client=client, partition_size=50_000, **ikw))
        pd.testing.assert_frame_equal(res.records, ref.records)
        rows.append((f"identification risk, {n_i:,} records, m=5, {agg}", "", f"{t_in:.1f} s",
                     f"{t_dk:.1f} s", "identical"))
    client.close()
    cluster.close()

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, dask {distributed.__version__}")
    print(f"{'case':<58} {'in process':>11} {'Dask (2 workers)':>17} {'result':>10}")
    for case, _, t_in, t_dk, same in rows:
        print(f"{case:<58} {t_in:>11} {t_dk:>17} {same:>10}")


if __name__ == "__main__":
    main()
