"""What bayes-risk writes to stderr (warnings, errors, messages, progress bars), through one
owner of the line state, :data:`STDERR`, so that a line always starts on a line of its own.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO

__all__ = ["STDERR", "line", "say", "progress", "ProgressBar", "installed", "quiet",
           "is_quiet", "bar_style", "PLAIN_INTERVAL"]

#: seconds before a plain-text bar's first line, and its longest gap later (the gaps double
#: from the first up to it): a few lines a minute for a long run, none for a short one
PLAIN_INTERVAL: tuple[float, float] = (10.0, 60.0)


class _Stderr:
    """stderr with its line state: whether the last character written ended a line (writes go to
    the stream :func:`installed` replaced, so that a live bar's console never writes into itself).
    """

    def __init__(self) -> None:
        self._target: TextIO | None = None  # set while installed as sys.stderr
        self._ends_line = True
        self._last: int | None = None  # id of the stream written to last

    def stream(self) -> TextIO:
        """The stream the text goes to."""
        s: Any = self._target if self._target is not None else sys.stderr
        for _ in range(8):  # rich's FileProxy wraps the stream while a bar redirects stderr
            inner = getattr(s, "rich_proxied_file", None)
            if s is self:
                s = self._target if self._target is not None else sys.__stderr__
            elif inner is not None:
                s = inner
            else:
                break
        if id(s) != self._last:  # another stream (a test's capture) starts at a line's start
            self._last, self._ends_line = id(s), True
        return s

    @property
    def ends_line(self) -> bool:
        """Whether the last character written ended a line (or nothing was written)."""
        self.stream()
        return self._ends_line

    def write(self, s: str) -> int:
        proxy = _Live.proxy
        if proxy is not None:  # a rich bar is live: the text is printed above it
            return proxy.write(s)
        return self.write_through(s)

    def write_through(self, s: str) -> int:
        """Write ``s`` to the stream itself (what rich's console writes goes here)."""
        target = self.stream()
        if not s:
            return 0
        # "not at a line's start" before the text goes out: an interrupt between the two
        # statements then costs a blank line, never a glued one
        self._ends_line = False
        n = target.write(s)
        self._ends_line = s.endswith("\n")
        return n

    def flush(self) -> None:
        try:
            self.stream().flush()
        except (ValueError, OSError):  # a closed stream has nothing to flush
            pass

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        try:
            return bool(self.stream().isatty())
        except (AttributeError, ValueError):
            return False

    def fileno(self) -> int:
        return self.stream().fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream(), "encoding", None) or "utf-8"

    def __getattr__(self, name: str) -> Any:  # buffer, mode, ... of the real stream
        return getattr(self.stream(), name)


class _Through:
    """The file of the bars' rich console: :data:`STDERR`'s stream and line state, without
    the redirection to the live display that the console itself draws."""

    def write(self, s: str) -> int:
        return STDERR.write_through(s)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...
        return getattr(STDERR, name)


#: the one owner of stderr's line state
STDERR = _Stderr()

_QUIET = False


def line(text: str) -> None:
    """Write ``text`` as a line of its own on stderr (ending a partial line first), and flush."""
    text = text.rstrip("\n")
    live = _Live.progress
    if live is not None:
        from rich.text import Text

        live.console.print(Text(text), soft_wrap=True)
        return
    STDERR.write(("" if STDERR.ends_line else "\n") + text + "\n")  # one write: one line
    STDERR.flush()


def say(text: str) -> None:
    """A message (what runs, what it will cost): a :func:`line`, except when quiet."""
    if not _QUIET:
        line(text)


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """Make :data:`STDERR` ``sys.stderr`` for the block (kept if it already is)."""
    if sys.stderr is STDERR:
        yield
        return
    previous = sys.stderr
    STDERR._target = previous
    sys.stderr = STDERR
    try:
        yield
    finally:
        if sys.stderr is STDERR:
            sys.stderr = previous
        STDERR._target = None


@contextlib.contextmanager
def quiet(flag: bool = True) -> Iterator[None]:
    """While ``flag``: no messages (:func:`say`), no bars and no log records below WARNING
    (PyMC's "Sequential sampling ..." lines); warnings and errors are still written."""
    global _QUIET
    if not flag:
        yield
        return
    import logging

    saved, disabled = _QUIET, logging.root.manager.disable
    _QUIET = True
    logging.disable(max(disabled, logging.INFO))
    try:
        yield
    finally:
        _QUIET = saved
        logging.disable(disabled)


def is_quiet() -> bool:
    """Whether a :func:`quiet` block is running (``bayes-risk ... --quiet``)."""
    return _QUIET


# ----------------------------------------------------------------------------- progress
def bar_style() -> str:
    """How a bar shows here: ``"rich"`` (a terminal; Jupyter with ipywidgets, as PyMC's bars)
    or ``"plain"`` (lines of text: a log file, a pipe, Jupyter without ipywidgets)."""
    console = _console()
    if console.is_jupyter:
        try:
            import ipywidgets  # noqa: F401
        except ImportError:
            return "plain"
        return "rich"
    return "rich" if console.is_terminal and not console.is_dumb_terminal else "plain"


_CONSOLE: Any = None


def _console() -> Any:
    global _CONSOLE
    if _CONSOLE is None:
        from rich.console import Console

        _CONSOLE = Console(file=_Through())
    return _CONSOLE


class _Live:
    """The rich display that every rich bar of the process shares (one at a time can draw):
    a bar started while another runs is a second row of the same display."""

    progress: Any = None
    #: what is written to :data:`STDERR` meanwhile (PyMC's log lines, warnings): printed above
    #: the bars, as rich's own redirection of ``sys.stderr`` does for other writers
    proxy: Any = None
    bars = 0

    @classmethod
    def add(cls, description: str, total: int | None) -> Any:
        if cls.progress is None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            cls.progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TimeRemainingColumn(), console=_console(),
            )
            cls.progress.start()
            if _console().is_terminal or _console().is_jupyter:
                from rich.file_proxy import FileProxy

                cls.proxy = FileProxy(_console(), _Through())
        cls.bars += 1
        return cls.progress.add_task(description, total=total)

    @classmethod
    def remove(cls, task: Any) -> None:
        prog = cls.progress
        if prog is None:
            return
        cls.bars -= 1
        if cls.bars > 0:  # an inner bar: its row goes, the outer one stays
            prog.remove_task(task)
            return
        proxy, cls.proxy = cls.proxy, None
        try:
            if proxy is not None:
                proxy.flush()  # a partial line written meanwhile
        finally:
            cls.progress = None
            prog.stop()  # the last state stays on screen


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class ProgressBar:
    """One progress bar on stderr of ``total`` steps (``None``: unknown) beside ``description``
    (a context manager, or :meth:`start` and :meth:`stop`)."""

    def __init__(self, total: int | None = None, description: str = "", *,
                 enabled: bool = True) -> None:
        self.total = None if total is None else int(total)
        self.completed = 0
        self.description = description
        self.enabled = bool(enabled) and not _QUIET
        self._style: str | None = None
        self._task: Any = None
        self._t0 = 0.0
        self._next = 0.0
        self._gap = PLAIN_INTERVAL[0]

    def start(self) -> ProgressBar:
        """Show the bar (nothing when disabled, or already shown)."""
        if not self.enabled or self._style is not None:
            return self
        self._style = bar_style()
        self._t0 = time.monotonic()
        self._gap = PLAIN_INTERVAL[0]
        self._next = self._t0 + self._gap
        if self._style == "rich":
            self._task = _Live.add(self.description, self.total)
        return self

    def update(self, completed: int | None = None, *, advance: int = 0,
               total: int | None = None, description: str | None = None) -> None:
        """Set the count (``completed``) or add to it (``advance``), the total, the text."""
        if completed is not None:
            self.completed = int(completed)
        self.completed += int(advance)
        if total is not None:
            self.total = int(total)
        if description is not None:
            self.description = description
        if self._style == "rich" and _Live.progress is not None:
            _Live.progress.update(self._task, completed=self.completed, total=self.total,
                                  description=self.description)
        elif self._style == "plain":
            now = time.monotonic()
            if now >= self._next and not self._done():
                line(self._text(now))
                self._gap = min(2 * self._gap, PLAIN_INTERVAL[1])
                self._next = now + self._gap

    def stop(self, *, complete: bool | None = None) -> None:
        """End the bar: a plain bar that completed writes its last line; a rich bar keeps its last
        state on screen, an inner one goes."""
        style, self._style = self._style, None
        if complete is None:
            complete = self._done()
        if style == "rich":
            _Live.remove(self._task)
        elif style == "plain" and complete:
            line(self._text(time.monotonic()))

    def __enter__(self) -> ProgressBar:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.stop(complete=exc_type is None and (self.total is None or self._done()))

    def _done(self) -> bool:
        return self.total is not None and self.completed >= self.total

    def _text(self, now: float) -> str:
        elapsed = now - self._t0
        if self.total is None:
            return f"{self.description}: {self.completed} done in {_clock(elapsed)}"
        if self._done():
            return f"{self.description}: {self.total}/{self.total} in {_clock(elapsed)}"
        text = (f"{self.description}: {self.completed}/{self.total} "
                f"({100 * self.completed / max(self.total, 1):.0f} %), {_clock(elapsed)} elapsed")
        if self.completed:
            left = elapsed * (self.total - self.completed) / self.completed
            text += f", about {_clock(left)} left"
        return text


def progress[T](
    iterable: Iterable[T],
    *,
    total: int | None = None,
    description: str = "",
    enabled: bool = True,
    label: Callable[[int, int | None], str] | None = None,
) -> Iterator[T]:
    """Iterate while a :class:`ProgressBar` counts the items; ``label(k, total)`` replaces the
    description while item ``k`` (1-based) is worked on."""
    if not enabled or _QUIET:
        yield from iterable
        return
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    with ProgressBar(total, description if label is None else label(1, total)) as bar:
        for k, item in enumerate(iterable, start=1):
            if label is not None and k > 1:
                bar.update(description=label(k, total))
            yield item
            bar.update(advance=1)
