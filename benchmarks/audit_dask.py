"""The README's audit on a local Dask cluster (issue 70, item 3): CPU and peak memory of the
driver and of every worker, per step and in all.

The case of ``commands.AuditScale``: ``make_ce_like(n, random_seed=1)``, a CART release of
Tenure, Expenditure and Income (m = 5), the intruder knowing Age, Urban, Marital and Income,
the audit's defaults. Run it from the repository root with the package installed::

    python benchmarks/audit_dask.py 1000000 --workers 2          # the 10^6 audit on Dask
    python benchmarks/audit_dask.py 20000 --workers 0            # in process, for comparison

The driver's figures are this process's (``getrusage(RUSAGE_SELF)``: the audit's own steps, the
gathering of the partitions' outputs, and the ``LocalCluster``'s scheduler, which runs in this
process); each worker's are read in the worker (``client.run``) before and after every step, so
a worker's CPU of a step is what its process spent during that step (its threads included) and
its peak is the worker process's largest resident set so far (``VmHWM``). CPU is user +
system seconds; GB are 10^9 bytes.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import warnings
from typing import Any


def _usage() -> dict[str, float]:
    """This process's CPU seconds (user + system, all threads) and peak resident set (bytes).

    The peak is Linux's ``VmHWM`` where there is one: ``ru_maxrss`` of a worker process started
    by fork and exec keeps the peak of the process it was forked from (the driver's, with its
    data), so it would report the driver's peak for a worker that held less.
    """
    r = resource.getrusage(resource.RUSAGE_SELF)
    peak = r.ru_maxrss * 1024.0
    try:
        with open("/proc/self/status") as f:
            peak = next(float(line.split()[1]) * 1024.0 for line in f
                        if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        pass  # not Linux: ru_maxrss
    return {"cpu": r.ru_utime + r.ru_stime, "peak": peak}


def _workers(client: Any) -> dict[str, dict[str, float]]:
    """Every worker's :func:`_usage`, by worker address (nothing in process)."""
    return {} if client is None else client.run(_usage)


def _cpu(before: dict[str, dict[str, float]], address: str) -> float:
    """A worker's CPU seconds at the start of a span: 0 for a worker process that was not
    there then (Dask's nanny restarts a worker past its memory limit under a new address)."""
    return before[address]["cpu"] if address in before else 0.0


def main(argv: list[str] | None = None) -> int:
    """Run the audit and print the figures; exit status 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int, help="records of the CE-like table")
    ap.add_argument("--workers", type=int, default=2,
                    help="worker processes of the LocalCluster, one thread each (0: in process)")
    ap.add_argument("--partition-size", type=int, default=None,
                    help="targets (identification) or records (attribute) per task (default: "
                    "each engine's)")
    ap.add_argument("--memory-limit", default="auto",
                    help="Dask's memory limit per worker (default auto: the machine's memory "
                    "shared among the workers)")
    args = ap.parse_args(argv)

    import bayes_risk as br
    import bayes_risk.auditing.api as api
    from bayes_risk.executors import as_executor
    from bayes_risk.models import CARTSynthesizer

    t_start = time.time()
    ce = br.make_ce_like(args.n, random_seed=1)
    schema = br.infer_schema(ce, categorical=["Urban", "Marital", "Tenure"])
    cart = CARTSynthesizer(progressbar=False).fit(
        ce, schema=schema, synthesized=["Tenure", "Expenditure", "Income"], random_seed=1)
    release = cart.synthesize(5, random_seed=2)
    print(f"n = {args.n:,}: data and release made in {time.time() - t_start:.0f} s wall",
          flush=True)

    client = cluster = None
    if args.workers > 0:
        import dask
        import distributed

        # a worker process starting on a loaded machine takes longer than Dask's 30 s
        dask.config.set({"distributed.comm.timeouts.connect": "300s",
                         "distributed.comm.timeouts.tcp": "300s"})
        cluster = distributed.LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True,
            dashboard_address=None, memory_limit=args.memory_limit)
        client = distributed.Client(cluster)
    executor = (None if client is None else
                as_executor(client, partition_size=args.partition_size))

    steps: dict[str, dict[str, Any]] = {}
    run_step = api._run_step

    def measured(i: int, n: int, name: str, title: str, fn: Any, ctx: Any) -> Any:
        d0, w0, t0 = _usage(), _workers(client), time.time()
        try:
            return run_step(i, n, name, title, fn, ctx)
        finally:
            d1, w1 = _usage(), _workers(client)
            steps[name] = {"wall": time.time() - t0, "driver": d1["cpu"] - d0["cpu"],
                           "workers": {a: w1[a]["cpu"] - _cpu(w0, a) for a in w1}}
            # as it goes: a run stopped part-way still gives the steps done
            peaks = "; ".join(f"{w1[a]['peak'] / 1e9:.2f}" for a in sorted(w1)) or "-"
            print(f"[{time.strftime('%H:%M:%S')}] {name}: {steps[name]['wall']:.0f} s wall, "
                  f"driver {steps[name]['driver']:.1f} s CPU (peak {d1['peak'] / 1e9:.2f} GB), "
                  "workers " + ("; ".join(f"{c:.1f}" for _, c in sorted(
                      steps[name]["workers"].items())) or "-")
                  + f" s CPU (peaks {peaks} GB)", flush=True)

    api._run_step = measured
    d0, w0, t0 = _usage(), _workers(client), time.time()
    if w0:  # what a worker holds before any task (its imports): the base of its peak
        print("workers before the audit: peaks " + "; ".join(
            f"{w0[a]['peak'] / 1e9:.2f}" for a in sorted(w0)) + " GB", flush=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = br.audit(ce, release, known=["Age", "Urban", "Marital", "Income"],
                           random_seed=3, progressbar=False,
                           settings=br.AuditSettings(executor=executor))
        d1, w1, wall = _usage(), _workers(client), time.time() - t0
    finally:
        api._run_step = run_step
        if client is not None:
            client.close()
            cluster.close()

    where = next((s.where["text"] for s in res.steps if s.where.get("kind") == "dask"),
                 "in process")
    print(f"the audit {where}: {wall:.0f} s wall")
    print(f"  driver: {d1['cpu'] - d0['cpu']:.1f} s CPU, peak {d1['peak'] / 1e9:.2f} GB")
    for k, a in enumerate(sorted(w1), start=1):
        print(f"  worker {k} ({a}): {w1[a]['cpu'] - _cpu(w0, a):.1f} s CPU, "
              f"peak {w1[a]['peak'] / 1e9:.2f} GB")
    print("per step (CPU s: driver; each worker):")
    for s in res.steps:
        f = steps.get(s.name)
        if f is None or s.status == "skipped":
            print(f"  {s.name}: {s.status}")
            continue
        ws = "; ".join(f"{c:.1f}" for _, c in sorted(f["workers"].items())) or "-"
        print(f"  {s.name}: {s.status}, {f['wall']:.1f} s wall; driver {f['driver']:.1f}; "
              f"workers {ws} ({s.where.get('kind', '')})")
    post = next((s for s in res.steps if s.name == "posterior_identification"
                 and s.result is not None), None)
    if post is not None:  # the radii the replicates were matched at: the search's worst case
        pooled = post.result.pooled
        print(f"posterior replicates: R = {post.result.file['n_replicates']}, radii "
              f"{post.result.settings['match_rule']['radius']}"
              + ("" if pooled is None else f", {pooled.explicit.nnz:,} pooled pairs in "
                 f"{pooled.explicit.shape[0]:,} query rows"))
    print("verdict figures:")
    for v in res.verdicts:
        print(f"  {v.measure}: {v.value!r}")
    return 0


if __name__ == "__main__":  # the worker processes import this module: start nothing then
    sys.exit(main())
