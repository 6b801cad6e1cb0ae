"""Ctrl-C reaches a library caller as KeyboardInterrupt, also when it arrived inside a compiled
(numba) kernel, which Python reports as ``SystemError: ... returned a result with an exception
set`` caused by the KeyboardInterrupt."""

from __future__ import annotations

import pytest

from bayes_risk.exceptions import _caused_by_interrupt, interruptible, keyboard_interrupts


def _nested_system_error(depth: int) -> SystemError:
    """The chain seen from ``attribute_risk``: SystemError > … > SystemError > KeyboardInterrupt."""
    err: BaseException = KeyboardInterrupt()
    for _ in range(depth):
        try:
            raise SystemError("CPUDispatcher(...) returned a result with an exception set") from err
        except SystemError as e:
            err = e
    return err


@pytest.mark.parametrize("depth", [1, 4, 6])
def test_a_system_error_caused_by_ctrl_c_is_reraised_as_keyboard_interrupt(depth):
    @interruptible
    def kernel_call(x: int) -> int:
        raise _nested_system_error(depth)

    with pytest.raises(KeyboardInterrupt) as info:
        kernel_call(1)
    assert isinstance(info.value.__cause__, SystemError)  # the original stays attached


def test_other_system_errors_and_return_values_are_left_alone():
    @interruptible
    def broken() -> None:
        raise SystemError("a genuine interpreter error")

    @interruptible
    def fine(x: int, *, y: int = 2) -> int:
        """Docstring kept."""
        return x + y

    with pytest.raises(SystemError, match="genuine"):
        broken()
    assert fine(1, y=3) == 4 and fine.__doc__ == "Docstring kept." and fine.__name__ == "fine"
    # an implicit chain (an error while handling Ctrl-C) counts too; a cycle ends the walk
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise SystemError("during handling") from None
    except SystemError as e:
        assert not _caused_by_interrupt(e)  # "from None" cuts the chain: not an interrupt
    a, b = SystemError("a"), SystemError("b")
    a.__cause__, b.__cause__ = b, a
    assert not _caused_by_interrupt(a)


def test_a_recorded_signal_turns_any_system_error_into_keyboard_interrupt():
    """The fits pass their guard's flag: a SystemError while a SIGINT was recorded is the
    interrupt, even when its cause chain was lost."""
    with pytest.raises(KeyboardInterrupt):
        with keyboard_interrupts(lambda: True):
            raise SystemError("returned a result with an exception set")
    with pytest.raises(SystemError):
        with keyboard_interrupts(lambda: False):
            raise SystemError("returned a result with an exception set")
    with keyboard_interrupts(lambda: True):  # no error: nothing raised
        pass


def test_the_long_running_entry_points_are_interruptible():
    from bayes_risk.attribute import attribute_risk
    from bayes_risk.identification import identification_risk, radius_sweep

    for fn in (attribute_risk, identification_risk, radius_sweep):
        assert getattr(fn, "__wrapped__", None) is not None, fn.__name__


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_signal_before_the_run_installs_its_handlers_is_an_interrupt(signame):
    """A SIGTERM/SIGHUP while the program still imports or parses (a loaded machine makes that
    window long) stops it like Ctrl-C — status 130, "interrupted" — instead of killing it."""
    import subprocess
    import sys

    code = ("import os, signal, sys, time\n"
            "import bayes_risk.cli as c\n"
            f"c.main = lambda: (os.kill(os.getpid(), signal.{signame}), time.sleep(30))\n"
            "sys.exit(c.console_main())\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 130, (p.returncode, p.stderr)
    assert p.stderr.strip().splitlines()[-1] == "interrupted"


def test_an_interrupt_while_the_bar_draws_its_last_line_ends_that_line(monkeypatch, capsys):
    """A Ctrl-C that lands while a progress bar draws its final line (before the line's end)
    left the command line's ``interrupted`` glued to the bar (``…0:00:00interrupted``): the
    bar's generator ends the line before passing the interrupt on."""
    import sys

    from rich.progress import Progress

    from bayes_risk._progress import progress

    def stop_midline(self):
        sys.stderr.write("pMSE ━━━━ 2/2 0:00:00")  # the last line, drawn without its end
        raise KeyboardInterrupt

    monkeypatch.setattr(Progress, "stop", stop_midline)
    with pytest.raises(KeyboardInterrupt):
        list(progress(range(2), description="pMSE"))
    assert capsys.readouterr().err.endswith("0:00:00\n")
