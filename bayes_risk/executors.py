"""Where the per-partition stage of a risk engine runs: in process, or on a Dask cluster; the
engine fixes partitions and random streams, so the numbers are the same
(:doc:`/user_guide/dask`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from bayes_risk._constraints import InstanceOf, Interval, check_value
from bayes_risk._terminal import progress
from bayes_risk.exceptions import BayesRiskError, ValidationError

__all__ = [
    "Executor", "InProcessExecutor", "DaskExecutor", "as_executor", "shared_once",
    "DaskNotInstalledError", "describe"]

P = TypeVar("P")
R = TypeVar("R")

_INSTALL_HINT = 'install bayes-risk[dask] (pip install "bayes-risk[dask]")'


class DaskNotInstalledError(BayesRiskError, ImportError):
    """``dask.distributed`` is needed but not installed (an optional extra of bayes-risk)."""


def _distributed() -> Any:
    """The ``distributed`` module, imported lazily (``import bayes_risk`` must not import it)."""
    try:
        import distributed
    except ImportError as err:
        raise DaskNotInstalledError(
            f"the Dask path needs dask.distributed, which is not installed; {_INSTALL_HINT}.",
            code="DASK_NOT_INSTALLED",
        ) from err
    return distributed


def check_partition_size(partition_size: Any, argument: str = "partition_size") -> int:
    """``partition_size`` as a positive int, or a :class:`ValidationError` naming it."""
    return check_value(partition_size, Interval(int, 1), argument)


@runtime_checkable
class Executor(Protocol):
    """Runs one engine stage over partitions; ``partition_size`` (records or targets per
    partition) ``None`` lets the engine use its own in-process chunking."""

    partition_size: int | None

    def map(
        self,
        fn: Callable[[Any, P], R],
        shared: Any,
        parts: Sequence[P],
        *,
        progressbar: bool = True,
        description: str = "",
    ) -> list[R]:
        """``[fn(shared, part) for part in parts]``, in the order of ``parts`` (what the
        in-process executor does)."""
        return [fn(shared, part) for part in parts]


class InProcessExecutor(Executor):
    """Runs every partition in this process, one after the other (the default; the protocol's
    ``map``)."""

    partition_size: int | None = None


class DaskExecutor:
    """Runs the partitions as tasks on a ``dask.distributed`` cluster (``client``, default the
    current one; ``partition_size`` records or targets per task): the shared plan is sent to
    every worker once, results are gathered in partition order."""

    def __init__(self, client: Any = None, partition_size: int | None = None) -> None:
        self.client = _resolve_client(client)
        self.partition_size = (
            None if partition_size is None else check_partition_size(partition_size))

    def slots(self) -> int:
        """The tasks the cluster runs at once: its worker threads (1 when none has joined)."""
        return max(1, sum(self.client.nthreads().values()))

    @contextlib.contextmanager
    def share(self, shared: Any) -> Iterator[Any]:
        """``shared`` sent to every worker once for several ``map`` calls (a ``with`` block)."""
        scattered = self.client.scatter(shared, broadcast=True, hash=False)
        try:
            yield _Scattered(scattered)
        finally:
            self.client.cancel([scattered])

    def map(
        self,
        fn: Callable[[Any, P], R],
        shared: Any,
        parts: Sequence[P],
        *,
        progressbar: bool = True,
        description: str = "",
    ) -> list[R]:
        distributed = _distributed()
        own = not isinstance(shared, _Scattered)
        scattered = self.client.scatter(shared, broadcast=True, hash=False) if own \
            else shared.future
        futures = [self.client.submit(fn, scattered, part, pure=False) for part in parts]
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[Any] = [None] * len(futures)
        try:
            for fut in progress(
                distributed.as_completed(futures), total=len(futures),
                description=description or "partitions", unit="partitions",
                enabled=progressbar,
            ):
                out[index[fut.key]] = fut.result()
        finally:
            self.client.cancel([*futures, scattered] if own else futures)
        return out


class _Scattered:
    """A shared object already on the workers (:meth:`DaskExecutor.share`)."""

    def __init__(self, future: Any) -> None:
        self.future = future


@contextlib.contextmanager
def shared_once(executor: Executor, shared: Any) -> Iterator[Any]:
    """``shared`` as it is passed to several ``executor.map`` calls, sent to workers once.

    An executor with a ``share(shared)`` context manager (:class:`DaskExecutor`) ships the object
    on entry and frees it on exit; any other executor gets the object itself.
    """
    share = getattr(executor, "share", None)
    if share is None:
        yield shared
        return
    with share(shared) as handle:
        yield handle


def _resolve_client(client: Any) -> Any:
    distributed = _distributed()
    if client is None:
        try:
            return distributed.get_client()
        except ValueError as err:
            raise ValidationError(
                "client: no Dask client is running; pass client=distributed.Client(...) (a "
                "scheduler address or a LocalCluster) or use bayes_risk.distributed.connect().",
                code="NO_DASK_CLIENT"
            ) from err
    return check_value(client, InstanceOf(distributed.Client, "a distributed.Client or None"),
                       "client")


def as_executor(executor: Any, *, partition_size: int | None = None) -> Executor:
    """The executor an engine's ``executor=`` names: ``None`` in process, a
    ``distributed.Client`` a :class:`DaskExecutor` on it (with ``partition_size``), an
    :class:`Executor` as it is; anything else raises ``ValidationError``."""
    if executor is None:
        return InProcessExecutor()
    if isinstance(executor, Executor):
        return executor
    if type(executor).__module__.split(".")[0] == "distributed":
        return DaskExecutor(executor, partition_size=partition_size)
    raise ValidationError(
        "executor must be None (in process), a distributed.Client or an object with "
        f"partition_size and map(fn, shared, parts); got {type(executor).__name__}.")


def describe(executor: Executor) -> dict[str, Any]:
    """Where ``executor`` runs an engine's partitions, for reports and ``summary.json``.

    Parameters
    ----------
    executor : Executor
        As :func:`as_executor` returns it.

    Returns
    -------
    dict
        ``kind`` (``"in process"``, ``"dask"`` or the executor's class name) and ``text`` (a
        phrase: "in process", "on the Dask cluster at tcp://host:8786 (2 workers)"); for Dask
        also ``scheduler`` (its address), ``n_workers``, ``worker_memory_limit`` (the smallest
        worker's, bytes; ``None`` when a worker has none) and ``partition_size``.
    """
    if isinstance(executor, InProcessExecutor):
        return {"kind": "in process", "text": "in process"}
    if isinstance(executor, DaskExecutor):
        info = executor.client.scheduler_info()
        workers = info.get("workers", {})
        limits = [w.get("memory_limit") for w in workers.values()]
        address = info.get("address") or str(executor.client.scheduler.address)
        n = len(workers)
        return {"kind": "dask", "scheduler": address, "n_workers": n,
                "worker_memory_limit": min(limits) if limits and all(limits) else None,
                "partition_size": executor.partition_size,
                "text": f"on the Dask cluster at {address} ({n} worker{'s' * (n != 1)})"}
    name = type(executor).__name__
    return {"kind": name, "text": f"by {name}",
            "partition_size": getattr(executor, "partition_size", None)}
