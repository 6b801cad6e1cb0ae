"""Scale-out with Dask: the engines run with ``executor=DaskExecutor(...)``, the same numbers
(:doc:`/user_guide/dask`); ``import bayes_risk`` never imports Dask.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, OneOf, Requires, check_relations, check_value
from bayes_risk.exceptions import ValidationError, arg_name
from bayes_risk.executors import (
    DaskExecutor,
    DaskNotInstalledError,
    _distributed,
    as_executor,
    check_partition_size,
)

__all__ = ["attribute_risk", "identification_risk", "radius_search", "radius_sweep", "connect",
           "cluster_executor", "DaskNotInstalledError"]


def _bound_call(fn: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, a ``ValidationError`` naming ``name`` if they do not bind."""
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as err:
        raise ValidationError(f"invalid arguments for {name}: {err}.",
                              code="INVALID_ARGUMENT") from err
    return fn(*args, **kwargs)


def check_n_workers(n_workers: Any) -> int:
    """``n_workers`` checked as a local cluster's worker processes: an integer from 1 to 4 per
    CPU (one process each: more only thrash, and may not start).

    Raises
    ------
    ValidationError
        ``INVALID_ARGUMENT`` naming the argument (``--workers`` on the command line).
    """
    most = 4 * (os.cpu_count() or 1)
    # 4 worker processes per CPU at most
    return check_value(n_workers, Interval(int, 1, most), arg_name("n_workers"))


#: ``connect``'s arguments against each other
CONNECT_RELATIONS = (OneOf(("scheduler", "n_workers"), required=True, code="INVALID_ARGUMENT"),)
#: ``cluster_executor``'s arguments against each other
CLUSTER_RELATIONS = (
    Requires("partition_size", ("scheduler", "workers")),
    Requires("dashboard", "workers", why="a running scheduler serves its own"),
)


@contextlib.contextmanager
def connect(scheduler: str | None = None, n_workers: int | None = None, *,
            memory_limit: int | str | None = None, dashboard: bool = False) -> Iterator[Any]:
    """A Dask client for a ``with`` block: of the scheduler at ``scheduler``
    (``"tcp://host:8786"``), or of a ``LocalCluster`` of ``n_workers`` processes.

    Parameters
    ----------
    scheduler : str, optional
        The address of a running scheduler.
    n_workers : int, optional
        Worker processes (one thread each) of a local cluster started for the block.
    memory_limit : int or str, optional
        Each local worker's memory limit (bytes, or a size such as ``"2GB"``); default: Dask's
        (the machine's memory divided among the workers, beside which this process also
        runs). The command line gives each worker its share of the run's budget
        (:doc:`/user_guide/dask`).
    dashboard : bool, default False
        Serve the local cluster's dashboard (on port 8787, or another if taken; its address
        is ``client.dashboard_link``). Off, the scheduler's HTTP endpoints listen on a free
        local port, so that a taken port 8787 neither fails nor warns.

    Raises
    ------
    DaskNotInstalledError
        When ``dask.distributed`` is not installed.
    ValidationError
        When both or neither are given, ``n_workers`` is not from 1 to 4 per CPU, or no
        scheduler answers (``DASK_SCHEDULER_UNREACHABLE``).
    """
    check_relations(dict(scheduler=scheduler, n_workers=n_workers), CONNECT_RELATIONS)
    distributed = _distributed()
    if scheduler is not None:
        try:
            client = distributed.Client(scheduler)
        except (ValueError, OSError) as err:  # a malformed address, or no scheduler there
            _close_failed_client(distributed)
            raise ValidationError(
                f"{arg_name('scheduler')} {scheduler!r}: no Dask scheduler could be reached "
                f"there ({' '.join(str(err).split()) or type(err).__name__}); give the address "
                "of a running scheduler, e.g. tcp://host:8786.",
                code="DASK_SCHEDULER_UNREACHABLE",
            ) from err
        with client:
            yield client
        return
    check_n_workers(n_workers)
    from bayes_risk._memory import parse_memory

    kw: dict[str, Any] = {}
    if memory_limit is not None:
        kw["memory_limit"] = parse_memory(memory_limit, arg_name("memory_limit"))
    # no dashboard: the scheduler still serves its HTTP endpoints (health, metrics), on port
    # 8787 unless told otherwise, so they go to a free local port
    web = ({"dashboard_address": ":8787"} if dashboard else
           {"dashboard_address": None,
            "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"}})
    # one thread per worker process: the engines' own threads and numpy's stay per process
    with distributed.LocalCluster(
        n_workers=int(n_workers), threads_per_worker=1, processes=True, **web, **kw
    ) as cluster, distributed.Client(cluster) as client:
        yield client


@contextlib.contextmanager
def cluster_executor(*, scheduler: str | None = None, workers: int | None = None,
                     partition_size: int | None = None, dashboard: bool = False
                     ) -> Iterator[Any]:
    """The executor of a Dask cluster for a ``with`` block: of the scheduler at ``scheduler``,
    or of a local cluster of ``workers`` processes (the run's memory budget shared equally
    among them and this process; ``dashboard``: served, its address said), its tasks of
    ``partition_size``; ``None`` (in process) without either.

    Raises
    ------
    ValidationError
        ``partition_size`` without a cluster, or ``dashboard`` without ``workers``
        (``OPTION_CONFLICT``).
    """
    check_relations(dict(scheduler=scheduler, workers=workers, partition_size=partition_size,
                         dashboard=dashboard), CLUSTER_RELATIONS)
    if scheduler is None and workers is None:
        yield None
        return
    if scheduler is not None:
        with connect(scheduler=scheduler) as client:
            yield as_executor(client, partition_size=partition_size)
        return
    from bayes_risk.auditing.memory_plan import local_shares

    check_n_workers(workers)  # before its budget share, which a bad count would make absurd
    # Dask's default gives each worker the machine's memory divided among the workers: more
    # than the machine in sum beside this process
    with local_shares(workers) as share, connect(
            n_workers=workers, memory_limit=share, dashboard=dashboard) as client:
        if dashboard:
            from bayes_risk._terminal import say

            say(f"Dask dashboard: {client.dashboard_link}")
        yield as_executor(client, partition_size=partition_size)


def _close_failed_client(distributed: Any) -> None:
    """Close the client that failed to connect: Dask leaves it the default, which sends later
    Dask work (and xarray's netCDF locks) to the bad address."""
    with contextlib.suppress(ValueError):  # ValueError: no client was registered
        failed = distributed.Client.current()
        if failed.status != "running":  # never a working client of the user's
            failed.close()


def attribute_risk(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    model: Any,
    records: Sequence[int] | np.ndarray | None = None,
    client: Any = None,
    partition_size: int = 256,
    progressbar: bool = True,
    **kwargs: Any,
) -> Any:
    """:func:`bayes_risk.attribute_risk` with the records spread over a Dask cluster.

    Parameters
    ----------
    original, synthetic, model, records, progressbar, **kwargs
        As in :func:`bayes_risk.attribute_risk`.
    client : distributed.Client, optional
        The cluster to use (default: the current client, ``distributed.get_client()``).
    partition_size : int
        Records per task.

    Returns
    -------
    AttributeRiskResult
        Identical to the in-process result (:doc:`/user_guide/dask`).

    Raises
    ------
    ValidationError
        Bad ``partition_size`` or ``client``, or any invalid argument of the engine.
    DaskNotInstalledError
        When ``dask.distributed`` is not installed.
    """
    from bayes_risk.attribute.api import attribute_risk as in_process

    if "executor" in kwargs:
        raise ValidationError("executor: give client= (this function builds the executor).")
    executor = DaskExecutor(client, partition_size=check_partition_size(partition_size))
    return _bound_call(in_process, "attribute_risk", original, synthetic, model=model,
                       records=records, progressbar=progressbar, executor=executor, **kwargs)


# identification risk
def _is_dask_frame(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "dask" and hasattr(obj, "npartitions")


def _collect(frame: Any, columns: Sequence[str]) -> Any:
    """A dask DataFrame reduced to ``columns`` (in its own column order) and computed."""
    if not _is_dask_frame(frame):
        return frame
    keep = [c for c in frame.columns if str(c) in set(columns)]
    return frame[keep].compute()


def identification_risk(
    original: Any,
    synthetic: Any,
    *,
    known: Sequence[str],
    synthesized: Sequence[str] | None = None,
    client: Any = None,
    partition_size: int | None = None,
    progressbar: bool = True,
    **kwargs: Any,
) -> Any:
    """:func:`bayes_risk.identification_risk` with the targets spread over a Dask cluster.

    Parameters
    ----------
    original : DataFrame or dask DataFrame
        A dask DataFrame is reduced on the cluster to the columns the engine reads (known, id
        and survey-weight columns) before it is gathered.
    synthetic : list of DataFrame (pandas or dask) or SyntheticData
        Dask DataFrames are reduced likewise (so are ``PopulationSpec.targets``).
    known, synthesized, progressbar, **kwargs
        As in :func:`bayes_risk.identification_risk`.
    client : distributed.Client, optional
        As in :func:`attribute_risk`.
    partition_size : int, optional
        Targets per task; default: the targets spread evenly over the cluster's worker
        threads, at most 100,000 a task (:doc:`/user_guide/dask`).

    Returns
    -------
    IdentificationResult
        Identical to the in-process result.

    Raises
    ------
    ValidationError
        Bad ``partition_size`` or ``client``, or any invalid argument of the engine.
    DaskNotInstalledError
        When ``dask.distributed`` is not installed.
    """
    from bayes_risk.identification import api

    return _on_cluster(api.identification_risk, original, synthetic, known, client,
                       partition_size, dict(kwargs, synthesized=synthesized,
                                            progressbar=progressbar))


def _on_cluster(engine: Any, original: Any, synthetic: Any, known: Sequence[str], client: Any,
                partition_size: int | None, kwargs: dict[str, Any]) -> Any:
    """An identification ``engine`` with its targets spread over ``client``: dask DataFrames
    among the inputs reduced to the known, id and weight columns and gathered first; a
    ``ValidationError`` naming the engine if the arguments do not bind."""
    from bayes_risk.identification.prepare import known_names

    executor = DaskExecutor(client, partition_size=partition_size)
    population = kwargs.get("population")
    ids = [c for c in (getattr(population, "original_id", None),
                       getattr(population, "target_id", None)) if c is not None]
    weights = getattr(population, "weights", None)
    need = [*known_names(known), *ids, *([weights] if isinstance(weights, str) else [])]
    original = _collect(original, need)
    if getattr(population, "targets", None) is not None:
        kwargs["population"] = dataclasses.replace(
            population, targets=_collect(population.targets, need))
    if isinstance(synthetic, (list, tuple)):
        synthetic = [_collect(z, need) for z in synthetic]
    else:
        synthetic = _collect(synthetic, need)
    return _bound_call(engine, engine.__name__, original, synthetic, known=known,
                       executor=executor, **kwargs)


def radius_search(
    original: Any,
    synthetic: Any,
    *,
    known: Sequence[str],
    synthesized: Sequence[str] | None = None,
    client: Any = None,
    partition_size: int | None = None,
    **kwargs: Any,
) -> Any:
    """:func:`bayes_risk.radius_search` with the targets of every grid point spread over a
    cluster (arguments as there and in :func:`identification_risk`; the same result)."""
    from bayes_risk.identification.radius import radius_search as _search

    return _on_cluster(_search, original, synthetic, known, client, partition_size,
                       dict(kwargs, synthesized=synthesized))


def radius_sweep(
    original: Any,
    synthetic: Any,
    *,
    known: Sequence[str],
    synthesized: Sequence[str] | None = None,
    radii: Sequence[float] | Mapping[str, Sequence[float]] = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3),
    client: Any = None,
    partition_size: int | None = None,
    **kwargs: Any,
) -> Any:
    """:func:`bayes_risk.radius_sweep` with the targets of every radius spread over a cluster
    (arguments as there and in :func:`identification_risk`; the same result)."""
    from bayes_risk.identification.radius import radius_sweep as _sweep

    return _on_cluster(_sweep, original, synthetic, known, client, partition_size,
                       dict(kwargs, synthesized=synthesized, radii=radii))
