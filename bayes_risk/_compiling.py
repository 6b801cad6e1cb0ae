"""Time spent compiling numba kernels, read from numba's event API.

The package's compiled kernels, and PyTensor's functions (PyTensor compiles with numba), are
compiled on their first call and cached; a first run waits minutes for it with no step done.
This module tells the progress bars that a compilation runs (:mod:`bayes_risk._terminal` shows a
"compiling kernels" phase) and counts its seconds, which the fits leave out of their times per
sweep and set-up (the refits' estimate, :mod:`bayes_risk.attribute.cost`). A kernel loaded from
numba's cache raises no event. Nothing here imports numba: the listener is installed by
:func:`watch` once numba has been imported by the code that compiles.

A forked worker (the Gibbs chains' processes) reports its compilations through
:func:`share`: shared values that its parent reads (:func:`since_of`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["active_since", "add", "seconds", "share", "since_of", "watch"]

_LOCK = threading.Lock()
_DEPTH = 0  # nested compilations (a kernel compiles the kernels it calls)
_SINCE: float | None = None  # time.monotonic() when the outermost one began
_TOTAL = 0.0  # seconds of finished compilations in this process
_SHARED: tuple[Any, Any] | None = None  # (since, total) values a forked worker's parent reads
_INSTALLED = False
#: called with ``True`` when this process begins its outermost compilation, ``False`` when it
#: ends it (the progress bars: :mod:`bayes_risk._terminal`)
_HOOKS: list[Callable[[bool], None]] = []


def _begin() -> None:
    global _DEPTH, _SINCE
    with _LOCK:
        _DEPTH += 1
        outermost = _DEPTH == 1
        if outermost:
            _SINCE = time.monotonic()
            if _SHARED is not None:
                _SHARED[0].value = _SINCE
    if outermost:
        _call(True)


def _end() -> None:
    global _DEPTH, _SINCE, _TOTAL
    with _LOCK:
        _DEPTH = max(0, _DEPTH - 1)
        outermost = _DEPTH == 0 and _SINCE is not None
        if outermost:
            _TOTAL += time.monotonic() - _SINCE
            _SINCE = None
            if _SHARED is not None:
                _SHARED[0].value = 0.0
                _SHARED[1].value = _TOTAL
    if outermost:
        _call(False)


def _call(started: bool) -> None:
    for hook in list(_HOOKS):
        try:
            hook(started)
        except Exception:  # noqa: BLE001, S110 - a display must never break a compilation
            pass


def watch(hook: Callable[[bool], None] | None = None) -> None:
    """Listen to numba's compilations from now on (once; nothing before numba is imported), and
    call ``hook`` at the start and end of each (once per hook)."""
    global _INSTALLED
    if hook is not None and hook not in _HOOKS:
        _HOOKS.append(hook)
    if _INSTALLED or "numba" not in sys.modules:
        return
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, ev: Any) -> None:
            _begin()

        def on_end(self, ev: Any) -> None:
            _end()

    with _LOCK:
        if _INSTALLED:
            return
        event.register("numba:compile", _Listener())
        _INSTALLED = True


def active_since() -> float | None:
    """``time.monotonic()`` when the compilation running now began, or ``None``."""
    return _SINCE


def seconds() -> float:
    """Seconds this process has spent compiling so far (a running compilation included)."""
    since = _SINCE
    return _TOTAL + (0.0 if since is None else time.monotonic() - since)


def add(more: float) -> None:
    """Count ``more`` seconds of compiling done for this process elsewhere (its forked workers,
    once they are done: :meth:`seconds` includes them)."""
    global _TOTAL
    with _LOCK:
        _TOTAL += max(0.0, float(more))


def share(since: Any, total: Any) -> None:
    """In a forked worker: write its compilations into ``since`` (the start of the one
    running, 0 when none) and ``total`` (seconds), shared values its parent reads."""
    global _SHARED, _DEPTH, _SINCE, _TOTAL
    _SHARED = (since, total)
    _DEPTH, _SINCE, _TOTAL = 0, None, 0.0  # the parent's state is not the worker's
    _HOOKS.clear()  # the parent's bars are drawn by the parent
    watch()


def since_of(values: list[Any]) -> float | None:
    """The earliest start among the workers' running compilations (their ``since`` values),
    or ``None`` when none compiles. ``time.monotonic()`` is the system's clock, the same in
    every process."""
    running = [v.value for v in values if v.value > 0.0]
    return min(running) if running else None
