"""Imports when they are needed: names of a package imported on first use (PEP 562), and
imports done ahead of use on another core (``Background``)."""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any


def attach(package: str, names: Mapping[str, str],
           public: Sequence[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``: ``names`` maps each lazy
    name to its module, ``public`` is the ``__all__`` that ``dir()`` lists before first use."""
    module = sys.modules[package]

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(names[name]), name)
            setattr(module, name, value)  # later look-ups skip this function
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(module)) | set(public))

    return __getattr__, __dir__


# --- work ahead of use on another core -----------------------------------------------------------
#
# A Gibbs run spends most of its time in compiled kernels that release the GIL, while the second
# core idles; what follows it (the DataTree, the NetCDF file) first pays for importing xarray,
# arviz_base, h5netcdf (more with dask installed, which xarray then imports).
# ``Background`` runs such imports in a thread during the run, so that they cost no wall time.

#: tasks a caller adds to the next background warm-up in this context (``overlap``)
_OVERLAP: ContextVar[tuple[Callable[[], object], ...]] = ContextVar("bayes_risk_overlap",
                                                                    default=())

#: switch interval while a background task runs (Python's default is 5 ms). A thread coming back
#: from a compiled kernel that released the GIL waits this long before the thread holding the GIL
#: is asked to give it up, once per kernel call: with 5 ms a 2.5 ms sweep would wait longer than
#: the import thread gains. Restored when the task ends.
SWITCH_INTERVAL = 2e-4


@contextlib.contextmanager
def overlap(*tasks: Callable[[], object]) -> Iterator[None]:
    """Add ``tasks`` to the background work of the long computations started in this context;
    a task only prepares what later code does anyway (imports), so it changes no result."""
    token = _OVERLAP.set(_OVERLAP.get() + tasks)
    try:
        yield
    finally:
        _OVERLAP.reset(token)


class Background:
    """Run ``tasks`` one after another in a daemon thread around work that releases the GIL; a
    task's exception is kept in ``error``, never raised; ``__exit__`` joins the thread unless the
    work raised."""

    def __init__(self, *tasks: Callable[[], object]) -> None:
        self.tasks = (*tasks, *_OVERLAP.get())
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        try:
            for task in self.tasks:
                task()
        except BaseException as err:  # noqa: BLE001 - kept, see the class docstring
            self.error = err
        finally:
            # unless it was not changed, or someone changed it meanwhile
            if self._set != self._interval and sys.getswitchinterval() == self._set:
                sys.setswitchinterval(self._interval)

    def __enter__(self) -> Background:
        if self.tasks:
            self._interval = sys.getswitchinterval()
            if self._interval > SWITCH_INTERVAL:  # a shorter one is kept
                sys.setswitchinterval(SWITCH_INTERVAL)
            self._set = sys.getswitchinterval()
            self._thread = threading.Thread(target=self._run, name="bayes-risk-background",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if self._thread is not None and exc_type is None:
            self._thread.join()
