"""``bayes_risk._lazy.Background`` and ``overlap``: work ahead of use in a daemon thread (issue
15, goal 4: the output stack's imports run while the sampler's kernels run).

The waits on events and threads are bounds against a hang, set at 60 s: an event set at once
on an idle machine can take seconds to be seen on a loaded one."""

from __future__ import annotations

import sys
import threading

import pytest

from bayes_risk._lazy import SWITCH_INTERVAL, Background, overlap


def test_tasks_run_in_order_on_another_thread_and_are_joined():
    seen = []
    interval = sys.getswitchinterval()
    go = threading.Event()
    with Background(lambda: go.wait(60), lambda: seen.append(("a", threading.current_thread())),
                    lambda: seen.append(("b", threading.current_thread()))) as bg:
        assert sys.getswitchinterval() <= SWITCH_INTERVAL  # short while the tasks run
        go.set()
    assert [s[0] for s in seen] == ["a", "b"]
    assert all(t is not threading.main_thread() for _, t in seen)
    assert not bg._thread.is_alive() and bg.error is None
    assert sys.getswitchinterval() == interval  # restored by the thread when it ends


def test_a_failing_task_is_kept_not_raised_and_stops_the_rest(capsys):
    hooked = []
    old_hook = threading.excepthook
    threading.excepthook = hooked.append
    ran = []

    def fail() -> None:
        raise ImportError("no module named 'h5netcdf'")

    try:
        interval = sys.getswitchinterval()
        with Background(fail, lambda: ran.append(1)) as bg:
            pass
    finally:
        threading.excepthook = old_hook
    assert isinstance(bg.error, ImportError) and "h5netcdf" in str(bg.error)
    assert ran == [] and hooked == []  # nothing printed by the thread machinery
    assert capsys.readouterr().err == ""
    assert sys.getswitchinterval() == interval


def test_the_main_threads_exception_passes_without_waiting_for_the_thread():
    """Ctrl-C during a fit: the interrupt is not held up by the imports in the background."""
    started = threading.Event()
    release = threading.Event()

    def slow() -> None:
        started.set()
        release.wait(60)

    with pytest.raises(KeyboardInterrupt):
        with Background(slow) as bg:
            started.wait(60)
            raise KeyboardInterrupt
    assert bg._thread.is_alive() and bg._thread.daemon  # not waited for; ends with the process
    release.set()
    bg._thread.join(60)
    assert not bg._thread.is_alive() and bg.error is None


def test_overlap_adds_tasks_to_the_background_work_of_its_context_only():
    seen = []
    with overlap(lambda: seen.append("cli")):
        with overlap(lambda: seen.append("inner")):
            with Background(lambda: seen.append("own")):
                pass
        with Background():
            pass
    with Background() as bg:  # nothing to do: no thread
        assert bg._thread is None
    assert seen == ["own", "cli", "inner", "cli"]


def test_a_smaller_switch_interval_of_the_caller_is_kept():
    interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL / 2)
    smaller = sys.getswitchinterval()
    try:
        with Background(lambda: None):
            assert sys.getswitchinterval() == smaller
        assert sys.getswitchinterval() == smaller
    finally:
        sys.setswitchinterval(interval)
