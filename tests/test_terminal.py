"""What the package writes to stderr (``bayes_risk._terminal``): one owner of the line state,
so that the command line's last line ``interrupted`` stands on a line of its own whatever was
being written when Ctrl-C came (issue 51: ``... is not valid.interrupted``); progress bars
that show in a terminal, a log file and a notebook without ipywidgets; ``--quiet``."""

from __future__ import annotations

import io
import logging
import os
import re
import signal
import sys
import warnings

import pytest

from bayes_risk import _terminal
from bayes_risk._terminal import STDERR, ProgressBar, line, progress


def _frozen_clock(monkeypatch) -> None:
    """The bars' clock stands still: their lines (elapsed time, when the next line is due) do
    not depend on how long a loaded machine takes over the test."""
    import types

    monkeypatch.setattr(_terminal, "time", types.SimpleNamespace(monotonic=lambda: 1000.0))


class _CutStream(io.StringIO):
    """A stderr whose write of the text holding ``cut`` stops half-way: the first half goes out
    and a real SIGINT is sent to this process, whose handler raises KeyboardInterrupt as the
    write returns to Python (a Ctrl-C landing inside a write, deterministically)."""

    def __init__(self, cut: str) -> None:
        super().__init__()
        self.cut, self.done = cut, False

    def isatty(self) -> bool:
        return False

    def write(self, s: str) -> int:
        if not self.done and self.cut in s:
            self.done = True
            k = s.index(self.cut) + len(self.cut)
            super().write(s[:k])
            os.kill(os.getpid(), signal.SIGINT)
            return k
        return super().write(s)


def _warning():
    from bayes_risk.exceptions import BayesRiskWarning

    warnings.warn(BayesRiskWarning(
        "perfect or quasi-perfect separation: some fitted propensities are 0 or 1, so the "
        "chi-square null (theory) is not valid (SEPARATION).", code="SEPARATION"), stacklevel=1)


def _library_print():
    # print() writes its text and its line's end in two calls: a Ctrl-C between them left the
    # line open (the warning path of issue 51 did the same)
    print("Sequential sampling (2 chains in 1 job)", file=sys.stderr)  # noqa: T201


def _bar():
    for _ in progress(range(3), description="pMSE"):
        pass


def _message():
    _terminal.say("[audit] step 1/6: utility (pMSE, interval overlap)")


def _log_record():
    log = logging.getLogger("bayes_risk_test_terminal")
    log.propagate = False
    log.addHandler(logging.StreamHandler())  # bound to sys.stderr as PyMC's logger is
    log.setLevel(logging.INFO)
    try:
        log.info("DPMPMGibbs: [alpha, V, phi_0, phi_1, phi_2]")
    finally:
        log.handlers.clear()


@pytest.mark.parametrize("writer, cut", [
    (_warning, "is not valid"),
    (_library_print, "in 1 job)"),
    (_bar, "pMSE: 3/"),
    (_message, "step 1/6"),
    (_log_record, "phi_0"),
], ids=["warning", "library-print", "progress-bar", "message", "log-record"])
def test_interrupted_is_the_last_line_on_its_own_whatever_was_being_written(
        writer, cut, tmp_path, monkeypatch):
    """A real SIGINT that lands inside each kind of writer of a command's run: exit 130, the
    cut text ends its line, ``interrupted`` is the last line and stands alone."""
    from bayes_risk.cli import main
    from bayes_risk.cli._runner import Run

    monkeypatch.chdir(tmp_path)
    (tmp_path / "o.csv").write_text("a,b\n1,2\n")

    def handler(args):
        writer()
        return 0

    monkeypatch.setattr(Run, "__call__", lambda self, args: handler(args))
    monkeypatch.setattr(_terminal, "PLAIN_INTERVAL", (0.0, 0.0))
    stream = _CutStream(cut)
    monkeypatch.setattr(sys, "stderr", stream)
    rc = main(["utility", "o.csv", "o.csv", "--out", "out"])
    err = stream.getvalue()
    assert stream.done, err  # the signal was sent inside the write
    assert rc == 130, err
    lines = err.splitlines()
    assert lines[-1] == "interrupted" and err.endswith("\n"), err
    assert sum("interrupted" in ln for ln in lines) == 1, err
    assert any(ln.endswith(cut) for ln in lines[:-1]), err  # the cut line, ended
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv"]  # nothing written


def test_line_ends_an_open_line_first_and_counts_every_writer(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    with _terminal.installed():
        assert sys.stderr is STDERR and STDERR.ends_line
        sys.stderr.write("0:00:03 ━━━━ 2/2")  # a bar's last line, drawn without its end
        assert not STDERR.ends_line
        line("interrupted")
        assert STDERR.ends_line
        print("complete line", file=sys.stderr)  # noqa: T201
        line("next")
        with _terminal.installed():  # nested runs (the demo's steps) keep it
            assert sys.stderr is STDERR
    assert sys.stderr is out
    assert out.getvalue() == "0:00:03 ━━━━ 2/2\ninterrupted\ncomplete line\nnext\n"


def test_a_write_cut_inside_the_stream_costs_at_most_a_blank_line(monkeypatch):
    """The state says "not at a line's start" before the text goes out: an interrupt inside a
    write that ended its line leaves a blank line before the next, never a glued one."""

    class RaisingOnce(io.StringIO):
        armed = True

        def write(self, s):
            n = super().write(s)
            if self.armed:  # the whole text went out; the interrupt comes as write returns
                self.armed = False
                raise KeyboardInterrupt
            return n

    out = RaisingOnce()
    monkeypatch.setattr(sys, "stderr", out)
    with pytest.raises(KeyboardInterrupt):
        line("warning [X]: text")
    line("interrupted")
    assert out.getvalue() == "warning [X]: text\n\ninterrupted\n"


def test_plain_bars_in_a_log_file(monkeypatch):
    """Not a terminal (a log file, a pipe): no bar drawing, a line now and then and a last line
    when the bar completes; a bar cut short (an interrupt) writes nothing more."""
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    _frozen_clock(monkeypatch)
    monkeypatch.setattr(_terminal, "PLAIN_INTERVAL", (0.0, 0.0))
    assert _terminal.bar_style() == "plain"
    for _ in progress(range(2), description="refits", label=lambda k, n: f"refit {k} of {n}"):
        pass
    got = out.getvalue().splitlines()
    assert got[0] == "refit 1 of 2: 1/2 steps (50 %), 0:00:00 elapsed"
    assert got[-1] == "refit 2 of 2: 2/2 steps in 0:00:00" and "\x1b" not in out.getvalue()
    out.seek(0)
    out.truncate()
    with pytest.raises(KeyboardInterrupt):
        for k in progress(range(5), description="attribute risk"):
            if k == 2:
                raise KeyboardInterrupt
    assert "5/5" not in out.getvalue()
    # the default gaps: nothing before 10 s, a last line at the end
    monkeypatch.setattr(_terminal, "PLAIN_INTERVAL", (10.0, 60.0))
    out.seek(0)
    out.truncate()
    with ProgressBar(None, "Gibbs sweeps", unit="sweeps") as bar:
        bar.update(advance=7)
    assert out.getvalue() == "Gibbs sweeps: 7 sweeps done in 0:00:00\n"
    with ProgressBar(3, "quiet", enabled=False) as bar:
        bar.update(3)
    assert out.getvalue() == "Gibbs sweeps: 7 sweeps done in 0:00:00\n"


class _Clock:
    """The bars' clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def _left(text: str) -> float | None:
    """The seconds of a line's ``about H:MM:SS left``, or ``None``."""
    m = re.search(r"about (\d+):(\d\d):(\d\d) left", text)
    return None if m is None else 3600 * int(m[1]) + 60 * int(m[2]) + int(m[3])


def test_time_left_waits_through_a_warm_up_for_a_steady_rate(monkeypatch):
    """Issue 66: a DPMPM fit's bar said "2/2600 (0 %), 0:02:10 elapsed, about 46:58:21 left"
    and finished at 3 min 15 s: its two first steps came at once, then the workers' warm-up
    (kernels compiled) stalled the count for a minute, and the rate was the count over the
    elapsed time. Driven through that warm-up, the bar shows no rate and no time left until
    the pace is steady, then the time left at the pace of the latest steps (exact here: 100
    sweeps a second), counting down between steps."""
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    clock = _Clock()
    monkeypatch.setattr(_terminal, "time", clock)
    monkeypatch.setattr(_terminal, "PLAIN_INTERVAL", (0.0, 0.0))  # a line at every update
    bar = ProgressBar(5000, "Gibbs sweeps", unit="sweeps").start()
    for t, c in [(5.0, 1), (5.1, 2)] + [(5.1 + 10 * k, 2) for k in range(1, 6)]:
        clock.now = t
        bar.update(c)  # the two chains' first sweeps, then the stall (the count stays)
    clock.now = 65.0
    warm = out.getvalue().splitlines()
    assert len(warm) == 7 and all("left" not in ln and "/s" not in ln for ln in warm), warm
    lines = []
    for k in range(1, 31):  # 100 sweeps a second from 65 s on, an update each 0.1 s
        clock.now = 65.0 + 0.1 * k
        out.seek(0)
        out.truncate()
        bar.update(2 + 10 * k)
        lines.append(out.getvalue().strip())
    assert all("left" not in ln for ln in lines[:2]), lines[:3]
    shown = [(k, _left(ln)) for k, ln in enumerate(lines, start=1) if _left(ln) is not None]
    assert shown and shown[0][0] <= 3, lines
    for k, left in shown:  # the truth: (5000 - count) / 100 s; the clock shows whole seconds
        assert abs(left - (5000 - 2 - 10 * k) / 100) <= 0.51, (k, left, lines[k - 1])
    assert lines[-1] == ("Gibbs sweeps: 302/5,000 sweeps (6 %), 0:01:08 elapsed, 100 sweeps/s, "
                         "about 0:00:47 left"), lines[-1]
    # between steps the time left counts down; once it has passed, none is shown
    assert bar.seconds_left(clock.now + 5.0) == pytest.approx(bar.seconds_left(clock.now) - 5.0)
    assert bar.seconds_left(clock.now + 60.0) is None
    bar.stop(complete=False)


def test_time_left_of_slow_steps_after_the_second(monkeypatch):
    """Refits of a minute each, after four minutes spent before the first (a pilot, the
    set-up): nothing after the first step (its time holds the set-up), the time left at the
    pace of the steps from the second on, as a time per step in the bar's unit."""
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    clock = _Clock()
    monkeypatch.setattr(_terminal, "time", clock)
    monkeypatch.setattr(_terminal, "PLAIN_INTERVAL", (0.0, 0.0))
    with ProgressBar(5, "refits of the model", unit="refits") as bar:
        got = []
        for t in [300.0, 360.0, 420.0, 480.0]:
            clock.now = t
            out.seek(0)
            out.truncate()
            bar.update(advance=1)
            got.append(out.getvalue().strip())
    assert "left" not in got[0] and "left" not in got[1], got
    assert got[2] == ("refits of the model: 3/5 refits (60 %), 0:07:00 elapsed, 60 s/refit, "
                      "about 0:02:00 left"), got[2]
    assert got[3].endswith("about 0:01:00 left"), got[3]


def test_compiling_is_a_phase_of_the_bar_left_out_of_its_time_left(monkeypatch):
    """Issue 92: the ACS demo's fit showed "2/5,000 sweeps (0 %), 0:04:10 elapsed" for four
    minutes while numba compiled its kernels. A compilation (numba's events, here sent by
    hand) is a phase of its own: said when it starts and ends, its time counted beside the
    elapsed time, and left out of the rate and the time left (exact here: 100 sweeps a second
    after it)."""
    from bayes_risk import _compiling

    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    clock = _Clock()
    monkeypatch.setattr(_terminal, "time", clock)
    monkeypatch.setattr(_compiling, "time", clock)
    monkeypatch.setattr(_terminal, "PLAIN_INTERVAL", (0.0, 0.0))
    bar = ProgressBar(5000, "Gibbs sweeps", unit="sweeps").start()
    clock.now = 1.0
    bar.update(2)
    _compiling._begin()
    assert out.getvalue().splitlines()[-1] == "Gibbs sweeps: compiling kernels (first run only)..."
    clock.now = 181.0
    assert bar._text(clock.now).endswith("compiling kernels (first run only) for 0:03:00")
    assert bar.seconds_left(clock.now) is None
    clock.now = 241.0
    _compiling._end()
    assert out.getvalue().splitlines()[-1] == ("Gibbs sweeps: kernels compiled; 0:04:00 "
                                               "compiling so far, left out of the time left")
    for k in range(1, 31):
        clock.now = 241.0 + 0.1 * k
        bar.update(2 + 10 * k)
    last = out.getvalue().splitlines()[-1]
    # the rate and time left of a bar that never waited: 2 sweeps at 1 s, then 100 a second
    assert last == ("Gibbs sweeps: 302/5,000 sweeps (6 %), 0:04:04 (0:04:00 of it compiling "
                    "kernels) elapsed, 75.5 sweeps/s, about 0:01:02 left"), last
    twin = ProgressBar(5000, "Gibbs sweeps", unit="sweeps").start()
    for t, c in [(clock.now + 1.0, 2)] + [(clock.now + 1.0 + 0.1 * k, 2 + 10 * k)
                                          for k in range(1, 31)]:
        twin._estimate(t)
        twin.completed = c
        twin._estimate(t)
    assert twin._rate.per_second() == pytest.approx(bar._rate.per_second())
    bar.stop(complete=False)
    twin.stop(complete=False)
    assert bar.left_text(47.0, clock.now) == "about 0:00:47 left (after 0:04:00 compiling kernels)"
    # the workers of forked chains report theirs through the bar's owner
    out.seek(0)
    out.truncate()
    bar = ProgressBar(100, "Gibbs sweeps", unit="sweeps").start()
    clock.now = 300.0
    bar.compiling(295.0)
    assert out.getvalue() == "Gibbs sweeps: compiling kernels (first run only)...\n"
    assert bar.compiling_since() == 295.0
    clock.now = 355.0
    bar.compiling(None)
    assert bar.compiled_seconds(clock.now) == pytest.approx(60.0)
    assert "kernels compiled; 0:01:00 compiling so far" in out.getvalue()
    bar.stop(complete=False)


def test_a_real_compilation_shows_in_a_bar():
    """numba's own event reaches the bar: a function compiled while a plain bar runs (a new
    one, never cached) is said to compile, and its seconds are counted."""
    numba = pytest.importorskip("numba")
    out = io.StringIO()
    old, sys.stderr = sys.stderr, out
    try:
        bar = ProgressBar(2, "work", unit="steps").start()

        @numba.njit(cache=False)
        def plus(a, b):
            return a + b

        assert plus(1, 2) == 3
        bar.update(2)
        bar.stop()
    finally:
        sys.stderr = old
    text = out.getvalue()
    assert "work: compiling kernels (first run only)..." in text, text
    assert "work: kernels compiled;" in text
    assert bar.compiled_seconds() > 0.0


def test_a_rich_bar_shows_its_unit_rate_and_time_left_as_the_plain_line(monkeypatch):
    """In a terminal the bar's columns read the same estimate: the count in the bar's unit,
    no rate and no time left through the warm-up, then both."""
    from rich.console import Console

    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    clock = _Clock()
    monkeypatch.setattr(_terminal, "time", clock)
    term = Console(file=_terminal._Through(), force_terminal=True, width=150)
    monkeypatch.setattr(_terminal, "_CONSOLE", term)
    bar = ProgressBar(5000, "Gibbs sweeps", unit="sweeps").start()

    def row() -> str:
        _terminal._Live.progress.refresh()
        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()).replace("\r", "\n")
        return [ln for ln in text.split("\n") if "Gibbs sweeps" in ln][-1]

    clock.now = 5.0
    bar.update(2)
    assert "2/5,000 sweeps" in row() and "left" not in row() and "/s" not in row()
    for k in range(1, 11):
        clock.now = 65.0 + 0.1 * k
        bar.update(2 + 10 * k)
    assert "102/5,000 sweeps" in row() and "100 sweeps/s" in row()
    assert "about 0:00:49 left" in row(), row()
    bar.stop(complete=False)


def test_rich_bars_in_a_terminal_share_one_display_and_lines_go_above(monkeypatch):
    """In a terminal the bars are rich's (one display: an inner bar is a row of it, removed
    when it ends); a line written meanwhile is printed above them, and the last line after an
    interrupt inside a bar stands alone."""
    from rich.console import Console

    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    term = Console(file=_terminal._Through(), force_terminal=True, width=80)
    monkeypatch.setattr(_terminal, "_CONSOLE", term)
    assert _terminal.bar_style() == "rich"
    with pytest.raises(KeyboardInterrupt):
        for k in progress(range(3), description="refits of the model"):
            for _ in progress(range(2), description="Gibbs draws"):
                assert _terminal._Live.bars == 2
            line("refit 1 of 3 took 4 s")
            print("warning [LOW_ESS]: from a library", file=sys.stderr)  # noqa: T201 - not through line()
            if k == 1:
                raise KeyboardInterrupt
    assert _terminal._Live.progress is None and _terminal._Live.bars == 0
    line("interrupted")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()).replace("\r", "\n")
    lines = [ln.rstrip() for ln in text.split("\n") if ln.strip()]
    assert lines[-1] == "interrupted", lines
    assert "refit 1 of 3 took 4 s" in lines and "warning [LOW_ESS]: from a library" in lines
    assert any(ln.startswith("refits of the model") for ln in lines)


def test_quiet_drops_messages_bars_and_info_logs_not_warnings(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    log = logging.getLogger("pymc.test_terminal")
    with _terminal.quiet():
        assert _terminal.is_quiet()
        _terminal.say("[audit] step 1/6")
        for _ in progress(range(2), description="bar"):
            pass
        assert log.isEnabledFor(logging.WARNING) and not log.isEnabledFor(logging.INFO)
        line("warning [X]: kept")
    assert not _terminal.is_quiet() and logging.root.manager.disable == logging.NOTSET
    assert out.getvalue() == "warning [X]: kept\n"


def test_pymc_bar_is_the_packages_own(monkeypatch):
    """``pm.sample``'s rich bar shows nothing in a log file or a notebook without ipywidgets
    (and warns there at every refresh), and cannot show a compiling phase: it is turned off and
    the draws, counted by the draw callback, feed the package's own bar, plain or rich."""
    from bayes_risk.models._bayesian.sampling import _own_bar

    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    _frozen_clock(monkeypatch)
    seen = []
    kwargs = {"progressbar": True, "chains": 2, "draws": 3, "tune": 1,
              "callback": lambda **kw: seen.append(kw)}
    with _own_bar(kwargs) as bar:
        assert kwargs["progressbar"] is False and bar.total == 8
        for _ in range(8):
            kwargs["callback"](trace=None, draw="d")
    assert len(seen) == 8
    assert out.getvalue() == "pm.sample (warm-up included): 8/8 draws in 0:00:00\n"
    monkeypatch.setattr(_terminal, "bar_style", lambda: "rich")
    kwargs = {"progressbar": True, "chains": 2, "draws": 3, "tune": 1}
    assert _own_bar(kwargs).enabled and kwargs["progressbar"] is False
    kwargs = {"progressbar": False, "chains": 2, "draws": 3, "tune": 1}
    assert not _own_bar(kwargs).enabled and kwargs["progressbar"] is False
