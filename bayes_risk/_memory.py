"""Memory estimates checked before work starts: a clear error instead of an out-of-memory kill."""

from __future__ import annotations

import os

from bayes_risk.exceptions import ValidationError

__all__ = ["available_memory", "check_memory"]


def available_memory() -> int | None:
    """Bytes of memory available to this process (``None`` if the platform does not say).

    Linux ``MemAvailable`` (free + reclaimable), capped by a cgroup v2 limit when one is set.
    """
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


def check_memory(nbytes: float, argument: str, *, what: str) -> None:
    """Raise if an estimated allocation of ``nbytes`` exceeds the available memory.

    Parameters
    ----------
    nbytes : float
        Estimated bytes the call needs.
    argument : str
        The argument that drives the size (named in the message), e.g. ``"--components"``.
    what : str
        What the memory is for, e.g. ``"the posterior draws"``.

    Raises
    ------
    ValidationError
        With code ``MEMORY_TOO_LARGE``.
    """
    avail = available_memory()
    if avail is None or nbytes <= avail:
        return
    raise ValidationError(
        f"{what} would need about {_fmt(nbytes)} of memory but {_fmt(avail)} is available; "
        f"reduce {argument}.",
        code="MEMORY_TOO_LARGE",
    )


def _fmt(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1024 or unit == "PB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} PB"
