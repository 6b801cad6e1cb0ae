"""Imports when they are needed: names of a package imported on first use (PEP 562), and
imports done ahead of use on another core (``Background``)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
import threading
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any


def attach(package: str, names: Mapping[str, str],
           public: Sequence[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``: ``names`` maps each lazy
    name to its module, ``public`` is the ``__all__`` that ``dir()`` lists before first use."""
    module = sys.modules[package]
    clashing = {name for name, where in names.items() if where == f"{package}.{name}"}
    if clashing:
        # The import system binds a loaded submodule to its package's attribute of the same
        # name (``disclosure.original_risk``), which would hide the lazy function of that name
        # from every later ``from package import name``: bind the function instead.
        class _Package(types.ModuleType):
            def __setattr__(self, name: str, value: Any) -> None:
                if name in clashing and isinstance(value, types.ModuleType):
                    value = getattr(value, name)
                super().__setattr__(name, value)

        module.__class__ = _Package

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


# --- xarray without dask's import ---------------------------------------------------------------
#
# With dask installed (the ``dask`` extra), xarray imports dask at its first array check
# (``is_dask_collection``, ``array_type("dask")``) and dask.distributed at each NetCDF write
# (``get_dask_scheduler``, to choose a lock: a thread lock, as without dask): 0.4-0.9 s of CPU in
# every ``bayes-risk fit``, whose arrays are all numpy (issue 69). While dask is not imported, no
# array of the process is a dask array and no dask scheduler runs, so xarray's answers are those it
# gives without dask: no dask array type, no scheduler. Once dask is imported
# (``bayes_risk.distributed``, the user), both ask xarray's own.

_LEAN_XARRAY = threading.Lock()


def lean_xarray() -> Any:
    """The ``xarray`` module, made not to import dask until something else has (see above);
    without xarray's internals where this module expects them, xarray as it is."""
    import xarray as xr

    with _LEAN_XARRAY:
        try:
            from xarray.backends import locks, writers
            from xarray.namedarray import pycompat
            from xarray.namedarray import utils as named
        except ImportError:  # pragma: no cover - a later xarray: only slower
            return xr
        named.is_dask_collection = _unless_dask_imported(named.is_dask_collection, False)
        # None and "threaded" (dask installed, not imported) make the same lock
        for module in (locks, writers):
            module.get_dask_scheduler = _unless_dask_imported(module.get_dask_scheduler, None)
        if "dask" not in pycompat._cached_duck_array_modules:
            pycompat._cached_duck_array_modules["dask"] = _dask_module_if_imported(pycompat)
    return xr


def _unless_dask_imported(function: Callable[..., Any], absent: Any) -> Callable[..., Any]:
    """``function``, answering ``absent`` while dask is not imported (wrapped once)."""
    if getattr(function, "_bayes_risk_lean", False):
        return function

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs) if "dask" in sys.modules else absent

    wrapper._bayes_risk_lean = True  # type: ignore[attr-defined]
    return functools.wraps(function)(wrapper)


def _dask_module_if_imported(pycompat: Any) -> Any:
    """xarray's record of the dask module: that of no dask while dask is not imported, xarray's
    own (``DuckArrayModule("dask")``) from the first look after it is."""

    class DaskIfImported(pycompat.DuckArrayModule):
        def __init__(self) -> None:
            self._real: Any = None

        def _get(self, name: str, absent: Any) -> Any:
            if self._real is None:
                if "dask" not in sys.modules:
                    return absent
                self._real = pycompat.DuckArrayModule("dask")
            return getattr(self._real, name)

        module = property(lambda self: self._get("module", None))
        version = property(lambda self: self._get("version", pycompat.Version("0.0.0")))
        type = property(lambda self: self._get("type", ()))
        available = property(lambda self: self._get("available", False))

    return DaskIfImported()
