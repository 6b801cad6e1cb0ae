"""What bayes-risk writes to stderr (warnings, errors, messages, progress bars), through one
owner of the line state, :data:`STDERR`, so that a line always starts on a line of its own.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO

from bayes_risk import _compiling

__all__ = ["STDERR", "line", "say", "progress", "ProgressBar", "installed", "quiet",
           "is_quiet", "bar_style", "PLAIN_INTERVAL", "RATE_WINDOW", "STEADY_RATIO"]

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
        _note(text)


def _note(text: str) -> None:
    """A message or a plain bar's line: on stderr, except in a notebook, which shows stderr
    as a red block among the warnings (issue 66: a run extending itself read as an error
    there): its stdout, as ``print``."""
    if _Live.progress is None and "ipykernel" in sys.modules and _console().is_jupyter:
        sys.stdout.write(text.rstrip("\n") + "\n")
        sys.stdout.flush()
        return
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


def _columns() -> list[Any]:
    """The rich bar's columns: what, the bar, done/total in the bar's unit, elapsed, rate,
    time left (the last two read off :class:`ProgressBar`'s estimate, as the plain lines)."""
    from rich.progress import BarColumn, ProgressColumn, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class _Count(ProgressColumn):
        def render(self, task: Any) -> Any:
            unit = task.fields.get("unit", "")
            done = f"{int(task.completed):,}"
            text = done if task.total is None else f"{done}/{int(task.total):,}"
            return Text(f"{text} {unit}".rstrip(), style="progress.download")

    class _Rate(ProgressColumn):
        def render(self, task: Any) -> Any:
            bar = task.fields.get("bar")
            if bar is not None and bar.compiling_since() is not None:
                return Text("")
            return Text(task.fields.get("rate", ""), style="progress.data.speed")

    class _Left(ProgressColumn):
        def render(self, task: Any) -> Any:
            bar = task.fields.get("bar")
            now = time.monotonic()
            since = None if bar is None else bar.compiling_since()
            if since is not None and not task.finished:  # redrawn by rich's own thread
                return Text(f"{COMPILING} {_clock(now - since)}", style="progress.remaining")
            left = None if bar is None or task.finished else bar.seconds_left(now)
            return Text("" if left is None else bar.left_text(left, now),
                        style="progress.remaining")

    return [TextColumn("{task.description}"), BarColumn(), _Count(), TimeElapsedColumn(),
            _Rate(), _Left()]


class _Live:
    """The rich display that every rich bar of the process shares (one at a time can draw):
    a bar started while another runs is a second row of the same display."""

    progress: Any = None
    #: what is written to :data:`STDERR` meanwhile (PyMC's log lines, warnings): printed above
    #: the bars, as rich's own redirection of ``sys.stderr`` does for other writers
    proxy: Any = None
    bars = 0

    @classmethod
    def add(cls, bar: ProgressBar) -> Any:
        if cls.progress is None:
            from rich.progress import Progress

            cls.progress = Progress(*_columns(), console=_console())
            cls.progress.start()
            if _console().is_terminal or _console().is_jupyter:
                from rich.file_proxy import FileProxy

                cls.proxy = FileProxy(_console(), _Through())
        cls.bars += 1
        return cls.progress.add_task(bar.description, total=bar.total, unit=bar.unit, bar=bar,
                                     rate="")

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


#: the bars started and not stopped, told when a compilation starts or ends in this process
_BARS: list[ProgressBar] = []


def _compile_event(started: bool) -> None:
    """This process began (``started``) or ended its outermost compilation."""
    now = time.monotonic()
    for bar in list(_BARS):
        bar._compile_changed(True if not started else bar._remote_since is not None, now)


#: what a bar shows while numba (or PyTensor, which compiles with numba) compiles kernels: no
#: step moves meanwhile, and the time is left out of the bar's rate and time left
COMPILING = "compiling kernels (first run only)"

#: seconds of the latest progress the rate is measured over (at least the last two steps)
RATE_WINDOW = 30.0
#: the rate is steady, and a time left is shown, when the older and the newer half of what it
#: is measured over agree within this factor
STEADY_RATIO = 3.0


class _Rate:
    """The rate of a bar, measured on its steps alone: from the time and count of each step
    that moved the count (the bar's start counted as one), over the last :data:`RATE_WINDOW`
    seconds and at least the last two steps. The time before the first step (a compilation, a
    model's refits) and a stall (a warm-up's first sweeps) never enter a rate that is shown:
    a rate is shown only when the two halves of its span agree (:data:`STEADY_RATIO`)."""

    def __init__(self, t0: float) -> None:
        self.points: deque[tuple[float, int]] = deque([(t0, 0)])

    def add(self, t: float, completed: int) -> None:
        pts = self.points
        if completed < pts[-1][1]:  # set back: measured afresh
            pts.clear()
        if not pts or completed > pts[-1][1]:
            pts.append((t, completed))
        while len(pts) > 3 and pts[0][0] < t - RATE_WINDOW:  # the window, and 3 points
            pts.popleft()

    def per_second(self) -> float | None:
        """Units a second, or ``None`` while there is no steady rate."""
        pts = self.points
        if len(pts) < 3:
            return None
        (t0, c0), (tm, cm), (t1, c1) = pts[0], pts[len(pts) // 2], pts[-1]
        if not (t0 < tm < t1):
            return None
        older, newer = (cm - c0) / (tm - t0), (c1 - cm) / (t1 - tm)
        if max(older, newer) > STEADY_RATIO * min(older, newer):
            return None
        return (c1 - c0) / (t1 - t0)


def _rate_text(per_second: float, unit: str) -> str:
    """``12.3 sweeps/s``, or ``2.1 min/refit`` for slow steps."""
    one = unit[:-1] if unit.endswith("s") and not unit.endswith("ss") else unit
    if per_second >= 1:
        return f"{per_second:,.3g} {unit}/s".replace("e+0", "e")
    seconds = 1 / per_second
    if seconds < 120:
        return f"{seconds:.3g} s/{one}"
    return f"{seconds / 60:.3g} min/{one}"


class ProgressBar:
    """One progress bar on stderr (a context manager, or :meth:`start` and :meth:`stop`).

    The rate counts the units done, at the pace of the latest steps (:class:`_Rate`), and the
    time left is shown only once that pace is steady: not before the second step, not while a
    warm-up stalls the count (issue 66: a fit that took 3 minutes said "about 46:58:21 left"
    after its first two draws).

    Parameters
    ----------
    total : int, optional
        Units of work in all (``None``: unknown, no percentage or time left).
    description : str
        What runs, shown before the count.
    unit : str
        What one unit is, in the plural ("sweeps", "records", "replicates"): the bar, its rate
        and the messages beside it count the same.
    enabled : bool
        ``False`` (or a :func:`quiet` block): nothing is shown.
    """

    def __init__(self, total: int | None = None, description: str = "", *,
                 unit: str = "steps", enabled: bool = True) -> None:
        self.total = None if total is None else int(total)
        self.completed = 0
        self.description = description
        self.unit = unit
        self.enabled = bool(enabled) and not _QUIET
        self._style: str | None = None
        self._task: Any = None
        self._t0 = 0.0
        self._next = 0.0
        self._gap = PLAIN_INTERVAL[0]
        self._rate = _Rate(0.0)
        self._eta: tuple[float, float] | None = None  # (time of the last step, seconds left)
        # compilations while the bar runs: this process's (bayes_risk._compiling), and those of
        # the workers it counts for (reported by its owner, :meth:`compiling`)
        self._compiled0 = 0.0
        self._remote_since: float | None = None
        self._remote_total = 0.0

    def start(self) -> ProgressBar:
        """Show the bar (nothing when disabled, or already shown)."""
        if not self.enabled or self._style is not None:
            return self
        _compiling.watch(_compile_event)
        self._compiled0 = _compiling.seconds()
        self._remote_since, self._remote_total = None, 0.0
        self._style = bar_style()
        _BARS.append(self)
        self._t0 = time.monotonic()
        self._rate = _Rate(self._t0)
        self._eta = None
        self._gap = PLAIN_INTERVAL[0]
        self._next = self._t0 + self._gap
        if self._style == "rich":
            self._task = _Live.add(self)
        return self

    def update(self, completed: int | None = None, *, advance: int = 0,
               total: int | None = None, description: str | None = None) -> None:
        """Set the count (``completed``) or add to it (``advance``), the total, the text."""
        before = self.completed
        if completed is not None:
            self.completed = int(completed)
        self.completed += int(advance)
        if total is not None:
            self.total = int(total)
        if description is not None:
            self.description = description
        if self._style is None:
            return
        _compiling.watch(_compile_event)  # numba may have been imported since the bar started
        now = time.monotonic()
        if self.completed != before or total is not None:
            self._estimate(now)
        if self._style == "rich" and _Live.progress is not None:
            rate = self._rate.per_second()
            _Live.progress.update(self._task, completed=self.completed, total=self.total,
                                  description=self.description,
                                  rate="" if rate is None else _rate_text(rate, self.unit))
        elif self._style == "plain":
            if now >= self._next and not self._done():
                _note(self._text(now))
                self._gap = min(2 * self._gap, PLAIN_INTERVAL[1])
                self._next = now + self._gap

    def compiling(self, since: float | None) -> None:
        """Report a compilation in a worker process the bar counts for: ``since``, its start
        (``time.monotonic()``), or ``None`` once none runs (:func:`bayes_risk._compiling.since_of`).
        This process's own compilations are seen without it."""
        now = time.monotonic()
        if self._remote_since is not None and since is None:
            self._remote_total += now - self._remote_since
        was = self.compiling_since() is not None
        self._remote_since = since
        self._compile_changed(was, now)

    def compiling_since(self) -> float | None:
        """When the compilation running now began, or ``None``."""
        own = _compiling.active_since()
        times = [t for t in (own, self._remote_since) if t is not None]
        return min(times) if times else None

    def compiled_seconds(self, now: float | None = None) -> float:
        """Seconds spent compiling since the bar started (left out of its rate and time left)."""
        now = time.monotonic() if now is None else now
        remote = self._remote_total + (0.0 if self._remote_since is None
                                       else now - self._remote_since)
        return max(0.0, _compiling.seconds() - self._compiled0) + remote

    def _compile_changed(self, was: bool, now: float) -> None:
        """A plain bar says when a compilation starts and ends (no count moves meanwhile)."""
        since = self.compiling_since()
        if self._style != "plain" or was == (since is not None):
            return
        if since is not None:
            _note(f"{self.description}: {COMPILING}...")
        else:
            _note(f"{self.description}: kernels compiled; {_clock(self.compiled_seconds(now))} "
                  "compiling so far, left out of the time left")

    def _clock_now(self, now: float) -> float:
        """The bar's time without its compilations: rates and time left are measured on it."""
        return now - self.compiled_seconds(now)

    def _estimate(self, now: float) -> None:
        self._rate.add(self._clock_now(now), self.completed)
        rate = self._rate.per_second()
        self._eta = None
        if rate and self.total is not None and self.completed < self.total:
            self._eta = (self._rate.points[-1][0], (self.total - self.completed) / rate)

    def seconds_left(self, now: float) -> float | None:
        """Seconds left at the steady rate, counted from the last step; ``None`` without a
        steady rate, while a compilation runs, or once that time has passed (the step runs
        late: no estimate). Time spent compiling is left out."""
        if self._eta is None or self.compiling_since() is not None:
            return None
        left = self._eta[0] + self._eta[1] - self._clock_now(now)
        return left if left >= 0 else None

    def left_text(self, left: float, now: float) -> str:
        """``about 0:01:10 left``, saying so when time spent compiling was left out."""
        compiled = self.compiled_seconds(now)
        return f"about {_clock(left)} left" + (
            f" (after {_clock(compiled)} compiling kernels)" if compiled >= 1.0 else "")

    def stop(self, *, complete: bool | None = None) -> None:
        """End the bar: a plain bar that completed writes its last line; a rich bar keeps its last
        state on screen, an inner one goes."""
        if self in _BARS:
            _BARS.remove(self)
        style, self._style = self._style, None
        if complete is None:
            complete = self._done()
        if style == "rich":
            _Live.remove(self._task)
        elif style == "plain" and complete:
            _note(self._text(time.monotonic()))

    def __enter__(self) -> ProgressBar:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.stop(complete=exc_type is None and (self.total is None or self._done()))

    def _done(self) -> bool:
        return self.total is not None and self.completed >= self.total

    def _text(self, now: float) -> str:
        elapsed = now - self._t0
        unit = f" {self.unit}" if self.unit else ""
        compiled = self.compiled_seconds(now)
        if compiled >= 1.0:  # said beside the elapsed time, which includes it
            elapsed_text = f"{_clock(elapsed)} ({_clock(compiled)} of it compiling kernels)"
        else:
            elapsed_text = _clock(elapsed)
        if self.total is None:
            return f"{self.description}: {self.completed:,}{unit} done in {elapsed_text}"
        if self._done():
            return f"{self.description}: {self.total:,}/{self.total:,}{unit} in {elapsed_text}"
        text = (f"{self.description}: {self.completed:,}/{self.total:,}{unit} "
                f"({100 * self.completed / max(self.total, 1):.0f} %), {elapsed_text} elapsed")
        since = self.compiling_since()
        if since is not None:
            return text + f", {COMPILING} for {_clock(now - since)}"
        rate = self._rate.per_second()
        if rate:
            text += f", {_rate_text(rate, self.unit or 'steps')}"
        left = self.seconds_left(now)
        if left is not None:
            text += f", about {_clock(left)} left"
        return text


def progress[T](
    iterable: Iterable[T],
    *,
    total: int | None = None,
    description: str = "",
    unit: str = "steps",
    size: Callable[[T], int] | None = None,
    enabled: bool = True,
    label: Callable[[int, int | None], str] | None = None,
) -> Iterator[T]:
    """Iterate while a :class:`ProgressBar` counts the work done.

    Parameters
    ----------
    iterable : iterable
        The items, yielded as they are.
    total : int, optional
        The work in all, in ``unit`` (default: the number of items, when it has a length).
    description : str
        What runs.
    unit : str
        What is counted, in the plural.
    size : callable, optional
        ``size(item)``: the units an item holds (a chunk of records counts its records;
        ``total`` is then their sum); default one per item.
    enabled : bool
        ``False``: the items only, no bar.
    label : callable, optional
        ``label(k, n_items)`` replaces the description while item ``k`` (1-based) is worked on.

    Yields
    ------
    object
        The items of ``iterable``.
    """
    if not enabled or _QUIET:
        yield from iterable
        return
    if total is None and size is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    n_items: int | None
    try:
        n_items = len(iterable)  # type: ignore[arg-type]
    except TypeError:
        n_items = total if size is None else None
    with ProgressBar(total, description if label is None else label(1, n_items),
                     unit=unit) as bar:
        for k, item in enumerate(iterable, start=1):
            if label is not None and k > 1:
                bar.update(description=label(k, n_items))
            yield item
            bar.update(advance=1 if size is None else int(size(item)))
