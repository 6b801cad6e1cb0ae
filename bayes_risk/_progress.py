"""Progress reporting for long risk loops (rich), silenced with ``progressbar=False``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator

__all__ = ["progress"]


def progress[T](
    iterable: Iterable[T],
    *,
    total: int | None = None,
    description: str = "",
    enabled: bool = True,
    label: Callable[[int, int | None], str] | None = None,
) -> Iterator[T]:
    """Iterate while showing a rich progress bar on stderr; a plain pass-through when disabled.

    Parameters
    ----------
    iterable : iterable
        What to iterate over.
    total : int, optional
        Number of items (taken from ``len(iterable)`` when possible).
    description : str
        Label shown beside the bar.
    enabled : bool
        ``False`` silences the bar (tests, ``--quiet``).
    label : callable, optional
        ``label(k, total)`` replaces ``description`` while item ``k`` (1-based) is worked on,
        e.g. ``"refit 2 of 5"``.
    """
    if not enabled:
        yield from iterable
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    try:
        with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
            task = bar.add_task(description if label is None else label(1, total), total=total)
            for k, item in enumerate(iterable, start=1):
                if label is not None:
                    bar.update(task, description=label(k, total))
                yield item
                bar.advance(task)
    except KeyboardInterrupt:
        # an interrupt can land while the bar draws its last line, before that line's end: the
        # command line's "interrupted" must start a line of its own (a blank line at worst)
        sys.stderr.write("\n")
        sys.stderr.flush()
        raise
