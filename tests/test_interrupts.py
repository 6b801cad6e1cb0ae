"""Ctrl-C reaches a library caller as KeyboardInterrupt, also when it arrived inside a compiled
(numba) kernel, which Python reports as ``SystemError: ... returned a result with an exception
set`` caused by the KeyboardInterrupt."""

from __future__ import annotations

import time
from pathlib import Path

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
    p = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 130, (p.returncode, p.stderr)
    assert p.stderr.strip().splitlines()[-1] == "interrupted"


def _utility_with(handler, tmp_path, monkeypatch):
    """``bayes-risk utility`` whose work is ``handler(args)`` (in process)."""
    from bayes_risk.cli._runner import Run

    monkeypatch.chdir(tmp_path)
    (tmp_path / "o.csv").write_text("a,b\n1,2\n")
    monkeypatch.setattr(Run, "__call__", lambda self, args: handler(args))
    return ["utility", "o.csv", "o.csv", "--out", "out"]


def test_an_interrupt_that_python_swallowed_is_delivered_again(tmp_path, monkeypatch, capsys):
    """A Ctrl-C whose handler ran inside a ``__del__`` (xarray's file manager, once: the audit
    went on for 42 s) is dropped by Python ("Exception ignored"). It is delivered again: the
    work stops within a moment, exit 130, nothing left."""
    import os
    import signal
    import time

    from bayes_risk.cli import main
    from bayes_risk.cli._run import output_dir

    done = []

    class Swallowing:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)  # the handler runs here; Python drops its error

    def handler(args):
        with output_dir(args) as tmp:
            (tmp / "part.csv").write_text("confidential")
            Swallowing()  # made and deleted at once
            for k in range(1000):  # 10 s of work in Python, were the interrupt lost
                time.sleep(0.01)
                done.append(k)
        return 0

    rc = main(_utility_with(handler, tmp_path, monkeypatch))
    err = capsys.readouterr().err
    assert rc == 130 and err.splitlines()[-1] == "interrupted", err
    assert "Exception ignored" not in err and "Traceback" not in err, err
    assert len(done) < 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv"]


def test_an_interrupt_swallowed_inside_a_demo_step_is_delivered_again(tmp_path, monkeypatch,
                                                                      capsys):
    """The same inside a run nested in another (a demo's step): the step's signal handler ran
    in a weakref callback, while the unraisable hook is the outer run's. It used to check only
    the outer run, which the signal had not marked: "Exception ignored ... KeyboardInterrupt"
    was printed and the step's audit went on to its end (seen in the demo's Ctrl-C test)."""
    import os
    import signal
    import time
    import weakref

    from bayes_risk.cli import main
    from bayes_risk.cli._run import output_dir

    done, calls = [], []

    class Target:
        pass

    def handler(args):
        calls.append(1)
        if len(calls) == 1:  # the outer run (the demo) runs a step in itself
            return main(argv)
        with output_dir(args) as tmp:
            (tmp / "part.csv").write_text("confidential")
            obj = Target()
            ref = weakref.ref(obj, lambda r: os.kill(os.getpid(), signal.SIGINT))
            del obj  # the callback runs: the handler's KeyboardInterrupt is dropped there
            for k in range(1000):  # 10 s of work in Python, were the interrupt lost
                time.sleep(0.01)
                done.append(k)
            del ref
        return 0

    argv = _utility_with(handler, tmp_path, monkeypatch)
    argv[argv.index("out")] = "inner"
    rc = main([*argv[:-1], "outer"])
    err = capsys.readouterr().err
    assert rc == 130 and err.splitlines()[-1] == "interrupted", err
    assert "Exception ignored" not in err and "Traceback" not in err, err
    assert len(done) < 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv"]


def test_the_program_ends_a_run_that_does_not_stop_on_a_signal(tmp_path):
    """A library that takes Ctrl-C for its own and goes on (or a compiled kernel that does not
    return): the ``bayes-risk`` program ends the run itself a few seconds after the signal
    (``STOP_GRACE``): its temporary folder removed, ``interrupted`` last, exit 130. Without it
    this run would never end."""
    import os
    import signal
    import subprocess
    import sys

    (tmp_path / "o.csv").write_text("a,b\n1,2\n")
    code = (
        "import sys, time\n"
        "import bayes_risk.cli as c, bayes_risk.cli._runner as u\n"
        "from bayes_risk.cli._run import output_dir\n"
        "def run(args):\n"
        "    with output_dir(args) as tmp:\n"
        "        (tmp / 'part.csv').write_text('confidential')\n"
        "        print('ready', file=sys.stderr, flush=True)\n"
        "        while True:\n"
        "            try:\n"
        "                time.sleep(0.05)\n"
        "            except KeyboardInterrupt:\n"
        "                pass\n"
        "u.Run.__call__ = lambda self, args: run(args)\n"
        "sys.argv = ['bayes-risk', 'utility', 'o.csv', 'o.csv', '--out', 'out']\n"
        "c.console_main()\n")
    p = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        assert p.stderr.readline().strip() == "ready"
        p.send_signal(signal.SIGINT)
        err = p.communicate(timeout=120)[1]
    finally:
        if p.poll() is None:  # pragma: no cover - the failure this test guards against
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "interrupted", err
    assert sorted(q.name for q in tmp_path.iterdir()) == ["o.csv"]


@pytest.mark.parametrize("status, atexit_ran", [(7, True), (0, True), (130, False)])
def test_the_program_ends_without_the_interpreters_tear_down(status, atexit_ran):
    """``bayes_risk.cli._exit`` (how the program ends): what was written is flushed, with the
    status given, and a forked worker still alive is ended; the atexit handlers run, unless
    the run was interrupted (130: a library cut short by the interrupt may have left its own
    handlers unsafe to run)."""
    import subprocess
    import sys

    code = ("import atexit, multiprocessing as mp, sys, time\n"
            "atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
            "w = mp.get_context('fork').Process(target=time.sleep, args=(600,), daemon=True)\n"
            "w.start()\n"
            "print(w.pid, file=sys.stderr, flush=True)\n"
            "sys.stdout.write('buffered, no newline')\n"
            "from bayes_risk.cli import _exit\n"
            f"_exit({status})\n"
            "print('not reached')\n")
    p = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                       timeout=120)
    pid, *rest = p.stderr.splitlines()
    assert (p.returncode, p.stdout) == (status, "buffered, no newline")
    assert rest == (["atexit ran"] if atexit_ran else [])
    deadline = time.monotonic() + 30
    while _alive(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(int(pid))


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_second_interrupt_does_not_cut_the_clean_up_of_the_first(tmp_path, monkeypatch,
                                                                   capsys):
    """Users press Ctrl-C twice: the second, arriving while the first one's clean-up removes the
    temporary folder, is not raised there (the folder would be left half-removed)."""
    import os
    import shutil
    import signal

    import bayes_risk._io as bio
    from bayes_risk.cli import main
    from bayes_risk.cli._run import output_dir

    real = shutil.rmtree
    calls = []

    def rmtree(path, *a, **k):
        calls.append(path)
        os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C
        return real(path, *a, **k)

    def handler(args):
        with output_dir(args) as tmp:
            (tmp / "part.csv").write_text("confidential")
            monkeypatch.setattr(bio.shutil, "rmtree", rmtree)
            raise KeyboardInterrupt  # the first
        return 0

    rc = main(_utility_with(handler, tmp_path, monkeypatch))
    err = capsys.readouterr().err
    assert calls and rc == 130 and err.splitlines()[-1] == "interrupted", err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv"]
