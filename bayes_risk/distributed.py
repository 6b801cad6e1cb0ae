"""Scale-out with Dask: the risk engines on a ``dask.distributed`` cluster.

The functions here return exactly what the in-process functions return (same seed, same
numbers, whatever the partition size or the number of workers). They do not re-implement any
measure: each runs the same stages as its in-process twin and only moves the per-record stage
onto the workers.

* :func:`attribute_risk`: :func:`bayes_risk.attribute_risk` with
  ``executor=DaskExecutor(client, partition_size)`` (:mod:`bayes_risk.executors`). The plan is
  prepared once on the client (validation, harmonised data, the ``m`` augmented fits of the
  stabilised estimator with the seeds the in-process path spawns, ``L = dataset_loglik``, the
  draw-bootstrap counts), shipped to every worker once, the partitions of the records run the
  evaluate stage on the workers, and the outputs are assembled once on the client.
* :func:`identification_risk` and :func:`radius_sweep`: thin wrappers of the in-process
  functions with ``executor=DaskExecutor(client, partition_size)`` (the records, replicates,
  population counts and match rule are prepared once on the client; the record pool is shipped
  to every worker once — once for a whole sweep —; partitions of the targets run the matching
  engine on the workers; the measures are assembled once on the client), which also reduce dask
  DataFrames to the columns the engine reads.

``import bayes_risk`` never imports Dask; this module imports it when a function is called.
Install with ``pip install "bayes-risk[dask]"``.
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

from bayes_risk.exceptions import ValidationError, arg_name
from bayes_risk.executors import (
    DaskExecutor,
    DaskNotInstalledError,
    _distributed,
    check_partition_size,
)

__all__ = [
    "attribute_risk",
    "identification_risk",
    "radius_sweep",
    "connect",
    "DaskNotInstalledError",
]

_check_partition_size = check_partition_size


@contextlib.contextmanager
def connect(scheduler: str | None = None, n_workers: int | None = None) -> Iterator[Any]:
    """A Dask client for the duration of a ``with`` block (used by the CLI).

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler, e.g. ``"tcp://host:8786"``.
    n_workers : int, optional
        Start a ``LocalCluster`` with this many worker processes (one thread each) instead.

    Yields
    ------
    distributed.Client

    Raises
    ------
    DaskNotInstalledError
        When ``dask.distributed`` is not installed.
    ValidationError
        When both or neither of ``scheduler`` and ``n_workers`` are given, ``n_workers`` is not
        from 1 to 4 per CPU, or no scheduler answers at ``scheduler``
        (``DASK_SCHEDULER_UNREACHABLE``).
    """
    if (scheduler is None) == (n_workers is None):
        raise ValidationError(f"connect needs exactly one of {arg_name('scheduler')} and "
                              f"{arg_name('n_workers')}.", code="INVALID_ARGUMENT")
    distributed = _distributed()
    if scheduler is not None:
        try:
            client = distributed.Client(scheduler)
        except (ValueError, OSError) as err:  # a malformed address, or no scheduler there
            raise ValidationError(
                f"{arg_name('scheduler')} {scheduler!r}: no Dask scheduler could be reached "
                f"there ({' '.join(str(err).split()) or type(err).__name__}); give the address "
                "of a running scheduler, e.g. tcp://host:8786.",
                code="DASK_SCHEDULER_UNREACHABLE",
            ) from err
        with client:
            yield client
        return
    most = 4 * (os.cpu_count() or 1)  # one process each: more only thrash (and may not start)
    if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)) \
            or not 1 <= n_workers <= most:
        raise ValidationError(f"{arg_name('n_workers')} must be an integer from 1 to {most} "
                              f"(4 worker processes per CPU). Got {n_workers!r}.",
                              code="INVALID_ARGUMENT")
    # one thread per worker process: the engines' own threads and numpy's stay per process
    with distributed.LocalCluster(
        n_workers=int(n_workers), threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        yield client


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
    original, synthetic, model, records
        As in :func:`bayes_risk.attribute_risk`.
    client : distributed.Client, optional
        The cluster to use (default: the current client, ``distributed.get_client()``).
    partition_size : int
        Records per task (default 256). Each task holds about
        ``EstimatorSpec.chunk_size × H × G × 8`` bytes per posterior of temporaries, as in
        process.
    progressbar : bool
        Progress of the augmented fits and of the partitions (on the client).
    **kwargs
        Every other argument of :func:`bayes_risk.attribute_risk` (``candidates``, ``prior``,
        ``scenario``, ``estimator``, ``random_seed``, ...).

    Returns
    -------
    AttributeRiskResult
        Identical to ``bayes_risk.attribute_risk(original, synthetic, model=model,
        records=records, **kwargs)``: record table, candidate posteriors, kept log-likelihoods
        (``with_prior`` and ``prior_sensitivity`` work), warnings, summary and settings;
        ``settings["timing"]`` holds the workers' times summed over partitions.

    Raises
    ------
    ValidationError
        Bad ``partition_size`` or ``client``, or any invalid argument of ``attribute_risk``.
    DaskNotInstalledError
        When ``dask.distributed`` is not installed.

    Notes
    -----
    Computed once on the client: validation, the ``m`` augmented fits (stabilised estimator;
    seeded exactly as in process), ``L = dataset_loglik`` and the draw-bootstrap counts. Shipped
    to each worker once: the model, the augmented models, the original and the synthetic data.
    Per partition on a worker: candidate sets, likelihoods, diagnostics and flags of its
    records. Once on the client: priors, rank summaries, bootstrap quantiles and the record
    table.
    """
    from bayes_risk.attribute.api import attribute_risk as in_process

    if "executor" in kwargs:
        raise ValidationError("executor: give client= (this function builds the executor).")
    executor = DaskExecutor(client, partition_size=_check_partition_size(partition_size))
    try:
        inspect.signature(in_process).bind(
            original, synthetic, model=model, records=records, progressbar=progressbar, **kwargs
        )
    except TypeError as err:
        raise ValidationError(f"invalid arguments for attribute_risk: {err}.",
                              code="INVALID_ARGUMENT") from err
    return in_process(
        original, synthetic, model=model, records=records, progressbar=progressbar,
        executor=executor,
        **kwargs,
    )


# ----------------------------------------------------------------------------------------------
# identification risk
# ----------------------------------------------------------------------------------------------
def _is_dask_frame(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "dask" and hasattr(obj, "npartitions")


def _collect(frame: Any, columns: Sequence[str]) -> Any:
    """A dask DataFrame reduced to ``columns`` (in its own column order) and computed."""
    if not _is_dask_frame(frame):
        return frame
    keep = [c for c in frame.columns if str(c) in set(columns)]
    return frame[keep].compute()


def _collect_inputs(
    original: Any, synthetic: Any, known: Sequence[str], kwargs: dict[str, Any]
) -> tuple[Any, Any]:
    """Dask DataFrames among the inputs, reduced to the columns the engine reads (the known
    columns, the id columns and a survey-weight column)."""
    known = [known] if isinstance(known, str) else list(known)
    population = kwargs.get("population")
    ids = [c for c in (getattr(population, "original_id", None),
                       getattr(population, "target_id", None)) if c is not None]
    weights = getattr(population, "weights", None)
    need = [*known, *ids, *([weights] if isinstance(weights, str) else [])]
    original = _collect(original, need)
    if getattr(population, "targets", None) is not None:
        kwargs["population"] = dataclasses.replace(
            population, targets=_collect(population.targets, need))
    if isinstance(synthetic, (list, tuple)):
        synthetic = [_collect(z, need) for z in synthetic]
    else:
        synthetic = _collect(synthetic, need)
    return original, synthetic


def identification_risk(
    original: Any,
    synthetic: Any,
    *,
    known: Sequence[str],
    synthesized: Sequence[str] | None = None,
    client: Any = None,
    partition_size: int = 100_000,
    progressbar: bool = True,
    **kwargs: Any,
) -> Any:
    """:func:`bayes_risk.identification_risk` with the targets spread over a Dask cluster.

    Parameters
    ----------
    original : DataFrame or dask DataFrame
        The confidential data. A dask DataFrame is reduced to the known columns (and
        ``original_id`` / ``target_id``, and the survey-weight column of ``population``) on the
        cluster before they are gathered on the client.
    synthetic : list of DataFrame (pandas or dask) or SyntheticData
        The released datasets (dask DataFrames are reduced to the known columns likewise).
    known, synthesized
        As in :func:`bayes_risk.identification_risk`.
    client : distributed.Client, optional
        The cluster to use (default: the current client).
    partition_size : int
        Targets per task (default 100,000).
    progressbar : bool
        Progress of the partitions (on the client).
    **kwargs
        Every other argument of :func:`bayes_risk.identification_risk`; the targets of
        ``PopulationSpec(targets=...)`` may also be a dask DataFrame (reduced to the known
        columns and the id columns).

    Returns
    -------
    IdentificationResult
        Identical to the in-process result (record table, ``prob``, file-level measures,
        warnings, settings), for every aggregation, membership, strategy and compat mode.

    Raises
    ------
    ValidationError
        Bad ``partition_size`` or ``client``, or any invalid argument of
        ``identification_risk``.
    DaskNotInstalledError
        When ``dask.distributed`` is not installed.

    Notes
    -----
    Computed once on the client: validation, level harmonisation, encoding, population counts
    (log-linear fits) and the match rule. Shipped to each worker once: the record pool (the
    encoded known columns of the original and of every replicate, ``n × (R + 1)`` values per
    known column). Per partition on a worker: the windows and matches of its targets (pooled
    probabilities, or per-dataset counts). Once on the client: record- and file-level
    measures, warnings.

    With ``replicates=PosteriorReplicates(...)`` the unit of work is a batch of replicates
    instead: the first batch is drawn and prepared on the client, the model(s) and the plan are
    shipped to each worker once, each task draws, matches and reduces one batch
    (``partition_size`` is not used), and the batches are pooled on the client in batch order
    (same numbers, and the same stopping point of ``n="auto"``, as in process).
    """
    from bayes_risk.identification import api

    executor = DaskExecutor(client, partition_size=_check_partition_size(partition_size))
    original, synthetic = _collect_inputs(original, synthetic, known, kwargs)
    args = (original, synthetic)
    kwargs.update(known=known, synthesized=synthesized)
    try:
        inspect.signature(api.identification_risk).bind(
            *args, progressbar=progressbar, executor=executor, **kwargs
        )
    except TypeError as err:
        raise ValidationError(f"invalid arguments for identification_risk: {err}.",
                              code="INVALID_ARGUMENT") from err
    return api.identification_risk(*args, progressbar=progressbar, executor=executor, **kwargs)


def radius_sweep(
    original: Any,
    synthetic: Any,
    *,
    known: Sequence[str],
    synthesized: Sequence[str] | None = None,
    radii: Sequence[float] | Mapping[str, Sequence[float]] = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3),
    client: Any = None,
    partition_size: int = 100_000,
    **kwargs: Any,
) -> Any:
    """:func:`bayes_risk.radius_sweep` with the targets of every radius spread over a cluster.

    The record pool is shipped to the workers once for the whole sweep. Arguments as
    :func:`bayes_risk.radius_sweep` and :func:`identification_risk`; the result is identical to
    the in-process sweep.
    """
    from bayes_risk.identification.radius import radius_sweep as _sweep

    executor = DaskExecutor(client, partition_size=_check_partition_size(partition_size))
    original, synthetic = _collect_inputs(original, synthetic, known, kwargs)
    return _sweep(original, synthetic, known=known, synthesized=synthesized, radii=radii,
                  executor=executor, **kwargs)
