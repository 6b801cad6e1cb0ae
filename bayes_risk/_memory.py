"""The memory a run may use (:func:`memory_limit`, ``--memory``, else the machine's), the
chunk sizes made from it and the checks of what cannot be chunked. See :doc:`/user_guide/memory`.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
from collections.abc import Iterator
from contextvars import ContextVar

from bayes_risk.exceptions import ValidationError, arg_name

__all__ = ["available_memory", "check_memory", "memory_limit", "parse_memory",
           "release_bytes", "release_free_memory", "resident_memory", "working_bytes", "format_bytes"]

#: the user's limit in bytes for the run in this context (``None``: the machine's memory)
_LIMIT: ContextVar[int | None] = ContextVar("bayes_risk_memory_limit", default=None)

#: the smallest working size a chunked stage is given, however little of the budget is left
#: (one chunk of a few thousand targets): below it the check of what cannot be chunked decides
MIN_WORKING_BYTES = 16 * 2**20

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9,
          "gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30,
          "tib": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_memory(value: int | float | str | None, argument: str = "memory") -> int | None:
    """Bytes of a memory size (``"2GB"``, ``"1.5GiB"``, a number of bytes; ``None`` stays
    ``None``); ``ValidationError`` for a non-size or one below 1 MB."""
    if value is None:
        return None
    code = "BAD_OPTION_VALUE" if argument.startswith("--") else "INVALID_ARGUMENT"
    nbytes: float | None = None
    if isinstance(value, bool):
        nbytes = None
    elif isinstance(value, (int, float)):
        nbytes = float(value)
    elif isinstance(value, str):
        m = _SIZE.match(value)
        if m and m.group(2).lower() in _UNITS:
            nbytes = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if nbytes is None or not math.isfinite(nbytes):
        raise ValidationError(
            f"{argument} must be a memory size such as 2GB, 512MB or 1.5GiB (or a number of "
            f"bytes). Got {value!r}.", code=code)
    if nbytes < 10**6:
        raise ValidationError(
            f"{argument} must be at least 1MB (the interpreter alone needs more). Got "
            f"{value!r}.", code=code)
    return int(nbytes)


@contextlib.contextmanager
def memory_limit(limit: int | float | str | None) -> Iterator[None]:
    """Limit the memory of the work done inside the ``with`` block, as ``--memory`` does on the
    command line (:doc:`/user_guide/memory`): chunks are sized from what is left, and what cannot
    be chunked is refused beforehand (``MEMORY_TOO_LARGE``). Nested limits keep the smaller.

    Parameters
    ----------
    limit : int, float, str or None
        Bytes, or a size with a unit: ``"2GB"``, ``"512MB"``, ``"1.5GiB"``. ``None`` leaves the
        limit as it is (by default the memory available on the machine; an audit's default is
        half of it: :doc:`/user_guide/memory`, "The audit's memory plan").

    Raises
    ------
    ValidationError
        ``limit`` is not a memory size or is below 1 MB.

    Examples
    --------
    >>> import bayes_risk as br
    >>> with br.memory_limit("2GB"):
    ...     pass  # identification_risk, attribute_risk, ... within 2 GB
    """
    nbytes = parse_memory(limit, "limit")
    if nbytes is None:
        yield
        return
    outer = _LIMIT.get()
    token = _LIMIT.set(nbytes if outer is None else min(outer, nbytes))
    try:
        yield
    finally:
        _LIMIT.reset(token)


def current_limit() -> int | None:
    """The user's limit in this context, in bytes (``None``: none given)."""
    return _LIMIT.get()


def available_memory() -> int | None:
    """Bytes available to this process: Linux ``MemAvailable``, capped by a cgroup v2 limit
    (``None`` if the platform does not say)."""
    avail: int | None = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = None
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            lim = fh.read().strip()
        if lim != "max":
            with open("/sys/fs/cgroup/memory.current") as fh:
                cur = int(fh.read().strip())
            room = int(lim) - cur
            avail = room if avail is None else min(avail, room)
    except (OSError, ValueError):
        pass
    return avail


def resident_memory() -> int:
    """Bytes of this process's resident memory now (0 where the platform does not say)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


def release_free_memory() -> None:
    """Return the memory freed so far to the operating system (glibc's ``malloc_trim``; Linux
    only), so that :func:`resident_memory` counts what is held rather than what the allocator
    kept after a large array was freed."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def room() -> int | None:
    """Bytes the run may still allocate (``None`` if unknown)."""
    limit = _LIMIT.get()
    if limit is not None:
        return max(limit - resident_memory(), 0)
    return available_memory()


def working_bytes(cap: int, reserve: float = 0) -> int:
    """Bytes a chunked stage may give its temporary arrays: ``cap``, or a quarter of what
    :func:`room` leaves beside ``reserve`` (what the stage will still allocate and keep) when
    less, never below :data:`MIN_WORKING_BYTES` (read it in the thread of the loop)."""
    left = room()
    if left is None:
        return int(cap)
    return int(max(MIN_WORKING_BYTES, min(cap, (left - reserve) // 4)))


def check_memory(nbytes: float, argument: str, *, what: str) -> None:
    """``ValidationError`` ``MEMORY_TOO_LARGE`` if about ``nbytes`` do not fit in what is left,
    naming ``argument`` (driving the size) and ``what`` (what the memory is for)."""
    left = room()
    if left is None or nbytes <= left:
        return
    limit = _LIMIT.get()
    if limit is not None:
        given = arg_name("memory")  # --memory on the command line
        given = "memory_limit" if given == "memory" else given
        where = (f"{format_bytes(left)} of the memory limit ({format_bytes(limit)}, {given}) "
                 "is left")
        # what the process holds now and this allocation: the least limit that passes here
        fix = (f"reduce {argument} or raise the limit to at least "
               f"{format_bytes(resident_memory() + nbytes, up=True)}")
    else:
        where = f"{format_bytes(left)} is available"
        fix = f"reduce {argument}"
    raise ValidationError(
        f"{what} would need about {format_bytes(nbytes)} of memory but {where}; {fix}.",
        code="MEMORY_TOO_LARGE")


def release_bytes(m: int, table: float, *, fitted: bool, forest: float = 0.0) -> float:
    """Bytes a synthesis of ``m`` datasets of a table of ``table`` bytes holds at its peak
    (``fitted``: the model is fitted in the same run; ``forest``: what a random forest's trees
    and leaf arrays add, ``cli.fit.forest_bytes``).

    Measured with CART (CE-like 5,000 and 30,000 records x 7 columns, m = 5 and 20): each
    dataset held 1.36 times the table (2.29 MB at 30,000 records), and the fit, the synthesis's
    working arrays and the writing about 16 times the table and 5 MB (26.4 MB at 30,000). From
    a saved model (that CART; a DPMPM of ACS-like 2,000 and 20,000 records x 14 columns): 1.33
    and 1.0 times the table a dataset, and the synthesis's working arrays and the writing up to
    11.4 times the table (19.2 MB at 30,000 records; 13.1 MB for the DPMPM at 20,000). What
    loads after the check (the writer, the datasets' checksums) is 8 MB: with 5 MB, 20 datasets
    of 5,000 CE-like records from a saved CART peaked 1 MB above the least limit named.
    """
    return 1.4 * m * table + (16 if fitted else 12) * table + 8e6 + forest


def format_bytes(n: float, up: bool = False) -> str:
    """``n`` bytes in the units :func:`parse_memory` reads (``1.5 GB`` is 1.5 x 10**9);
    ``up``: rounded up (a least size), else to the nearest."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            if unit == "B":
                return f"{math.ceil(n) if up else int(n)} B"
            return f"{math.ceil(n * 10) / 10 if up else n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"
