"""What every sub-command shares when it runs: the ``--out`` policy (:func:`output_dir`),
stop signals (exit 130, the final rename never cut) and warnings (``warning [CODE]: ...``,
recorded in ``summary.json``). See :doc:`/cli`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from bayes_risk._terminal import line, quiet
from bayes_risk.cli.parsers import INPUTS_ATTR, command_line_text, input_arguments
from bayes_risk.exceptions import (
    COMMAND_LINE_OPTIONS,
    BayesRiskWarning,
    ValidationError,
    warning_line,
)

__all__ = [
    "CommandRun", "command_run", "command_line_options", "output_dir", "check_out",
    "input_arguments"
]

#: set by the ``bayes-risk`` program (:func:`bayes_risk.cli.console_main`): the process ends
#: with the run, so late signals are ignored instead of restoring Python's handlers
CONSOLE = False
#: the runs in progress, outermost first (a demo and the step it runs): a stop signal
#: interrupts all of them
_ACTIVE: list[CommandRun] = []

#: signals that stop a run (exit 130): Ctrl-C, ``kill``, and a closed terminal or SSH session
_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)

#: seconds that a stop signal leaves the program's run to end in the ordinary way (its
#: clean-up, then ``interrupted``) before the program ends it itself (:class:`_Stopper`)
STOP_GRACE = 3.0

#: held while an output is renamed into place (never cut), and by a program ending itself
_COMMIT = threading.Lock()


class _Stopper:
    """Ends a run within :data:`STOP_GRACE` seconds of a stop signal: a swallowed
    ``KeyboardInterrupt`` is delivered again; with ``watch``, a thread woken by
    ``signal.set_wakeup_fd`` ends the program itself (exit 130) if the run does not."""

    def __init__(self, run: CommandRun, *, watch: bool) -> None:
        self.run = run
        self.watch = watch
        self.done = threading.Event()
        self._hook: Any = None
        self._fds: tuple[int, int] | None = None
        self._previous_fd = -1
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _Stopper:
        self._hook = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        if self.watch:
            r, w = os.pipe()
            os.set_blocking(r, False)
            os.set_blocking(w, False)
            try:
                self._previous_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
            except ValueError:  # not the main thread
                os.close(r)
                os.close(w)
                return self
            self._fds = (r, w)
            self._thread = threading.Thread(target=self._watch, name="bayes-risk-stop",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        sys.unraisablehook = self._hook
        if self._fds is not None:
            r, w = self._fds
            signal.set_wakeup_fd(self._previous_fd)
            with contextlib.suppress(OSError):
                os.write(w, b"\0")  # wakes the thread, which sees ``done``
            if self._thread is not None:
                self._thread.join(timeout=1.0)
            if self._thread is None or not self._thread.is_alive():
                os.close(r)
                os.close(w)

    def _unraisable(self, unraisable: Any) -> None:
        if self.run.interrupted and isinstance(unraisable.exc_value, KeyboardInterrupt):
            from bayes_risk.exceptions import redeliver_interrupt

            redeliver_interrupt()
            return
        self._hook(unraisable)

    def _watch(self) -> None:
        import select

        assert self._fds is not None
        r = self._fds[0]
        stop = {int(s) for s in _STOP_SIGNALS}
        while not self.done.is_set():
            select.select([r], [], [])
            try:
                data = os.read(r, 512)
            except BlockingIOError:
                continue
            except OSError:
                return
            if stop.intersection(data):
                break
        if self.done.wait(STOP_GRACE):
            return
        self._end()

    def _end(self) -> None:
        """End the program now (see the class docstring)."""
        from bayes_risk._io import remove_live_temporaries

        with _COMMIT:  # never while an output is renamed into place
            if self.done.is_set():  # ended meanwhile in the ordinary way
                return
            remove_live_temporaries()
            with contextlib.suppress(Exception):
                say_interrupted(self.run)
            end_process(130)


def say_interrupted(run: Any) -> None:
    """The last lines of an interrupted run: its output, when complete before the interrupt,
    in place; then ``interrupted``, on a line of its own whatever was written before."""
    if getattr(run, "completed", False):
        line(f"the output was complete before the interrupt: {shown(run.out)} is in place")
    line("interrupted")


def end_process(status: int) -> NoReturn:
    """End the process with ``status`` now: worker processes terminated, streams flushed, no
    ``atexit`` handler and no interpreter tear-down."""
    mp = sys.modules.get("multiprocessing")
    if mp is not None:
        for child in mp.active_children():
            with contextlib.suppress(Exception):
                child.terminate()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


@dataclass
class CommandRun:
    """State of one sub-command run (attached to ``args`` as ``args._run``)."""

    command: str
    out: Path | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    #: SHA-256 of every input file (each file of an input folder), by absolute path
    checksums: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False
    out_identity: tuple[int, int] | None = None  # what was at --out when it was checked
    critical: bool = False  # inside the final rename: a signal is deferred
    completed: bool = False  # the output is in place (an interrupt after it still exits 130)
    #: the sub-command's options by the library argument they set (messages name them so)
    options: dict[str, str] = field(default_factory=dict)

    def record_warning(self, message: Warning | str, category: type[Warning]) -> None:
        """Record (repeats counted) and print one warning, in the sub-command's option names."""
        code, text = warning_line(message, category)
        text = command_line_text(text, self.options)
        for w in self.warnings:
            if w["code"] == code and w["message"] == text:
                w["count"] += 1
                return
        self.warnings.append(
            {"code": code, "category": category.__name__, "message": text, "count": 1}
        )
        line(f"warning [{code}]: {text}")

    def summary_fields(self) -> dict[str, Any]:
        """What :func:`output_dir` adds to ``summary.json``."""
        return {
            "command": self.command,
            "inputs": self.inputs,
            "input_sha256": dict(self.checksums),
            "run_warnings": [dict(w) for w in self.warnings],
        }


def _inputs(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in getattr(args, INPUTS_ATTR, ()):
        val = getattr(args, name, None)
        if val is None or val is argparse.SUPPRESS:
            continue
        vals = [str(v) for v in val] if isinstance(val, (list, tuple)) else [str(val)]
        kept = [p for p in (_input_path(v) for v in vals) if p is not None]
        if kept:
            out[name] = kept if isinstance(val, (list, tuple)) else kept[0]
    return out


def _input_path(value: str) -> str | None:
    """The existing file or folder a value names (itself, or ``PATH`` of ``KIND:PATH``), or
    ``None`` (``--records 0-199``; a missing file is reported by the sub-command)."""
    if Path(value).exists():
        return os.path.abspath(value)
    if ":" in value:
        rest = value.split(":", 1)[1]
        if rest and Path(rest).exists():
            return os.path.abspath(rest)
    return None


#: inputs that are not hashed: a refit cache is read and written by the run, and its entries
#: are keyed by what each refit depends on (hashing it would make ``input_sha256`` change as
#: it fills, and cost a read of every cached refit)
_NOT_HASHED = frozenset({"refit_cache"})


def _checksums(inputs: dict[str, Any]) -> dict[str, str]:
    """SHA-256 of every input file (each file of an input folder), by absolute path; a pipe,
    device or socket is refused (``NOT_A_REGULAR_FILE``)."""
    from bayes_risk._checksums import file_sha256, special_file
    from bayes_risk.exceptions import arg_name

    out: dict[str, str] = {}
    for name, v in inputs.items():
        if name in _NOT_HASHED:
            continue
        for p in map(Path, v if isinstance(v, list) else [v]):
            for f in sorted(p.rglob("*")) if p.is_dir() else [p]:
                what = special_file(f)
                if what is not None:
                    raise ValidationError(f"{arg_name(name)}: {str(f)!r} is {what}, not a regular "
                                          "file; an input is read more than once (hashed for "
                                          "summary.json, then parsed), which a pipe or a device "
                                          "cannot give. Save it to a file first (e.g. cat PIPE > "
                                          "table.csv) and give that file.",
                                          code="NOT_A_REGULAR_FILE")
                if not f.is_file():
                    continue
                try:
                    out[str(f)] = file_sha256(f)
                except OSError:  # unreadable: the sub-command reports it when it reads the file
                    continue
    return out


#: temporary folder -> the ``--out`` it becomes, while a demo's steps write into it (they print
#: and record the final paths)
_FINAL_NAMES: dict[str, str] = {}


def shown(text: str | Path) -> str:
    """``text`` (a path, or a line naming paths) with a demo's temporary folders under their
    final names (:data:`_FINAL_NAMES`)."""
    s = str(text)
    for tmp, final in _FINAL_NAMES.items():
        s = s.replace(tmp, final)
    return s


def _final_path(value: Any) -> Any:
    """A value with existing paths made absolute and shown under their final names."""
    if isinstance(value, list):
        return [_final_path(v) for v in value]
    if isinstance(value, str):
        return shown(os.path.abspath(value) if value and Path(value).exists() else value)
    return value


def check_out(out: str, *, overwrite: bool, inputs: list[Path] | None = None) -> Path:
    """Apply the ``--out`` policy before any work (``ValidationError`` for an empty, unsafe,
    taken or unwritable ``--out``); return the absolute output path."""
    if not str(out).strip():
        raise ValidationError("--out is empty; give the name of a new folder, e.g. --out results.",
                              code="OUT_INVALID")
    target = Path(os.path.abspath(out))
    cwd = Path.cwd().resolve()
    real = target.resolve()
    if real == cwd or real in cwd.parents:
        raise ValidationError(f"--out {out!r} is the current folder or one holding it; it would "
                              "be replaced. Give a new folder, e.g. --out results.",
                              code="OUT_INVALID")
    for p in inputs or ():
        if p == real or real in p.parents:
            raise ValidationError(f"--out {out!r} holds the input {str(p)!r}; it would be "
                                  "replaced. Give another folder.", code="OUT_INVALID")
    if target.is_symlink() or target.exists():
        if not target.is_dir() or target.is_symlink():
            if not overwrite:
                what = ("a link" + (" to a folder" if target.is_dir() else " to a file"
                                    if target.exists() else " to nothing")
                        if target.is_symlink() else "an existing file")
                raise ValidationError(
                    f"--out {out!r} is {what}; give a new folder, or --overwrite to replace "
                    + ("the link (its target is left as it is)." if target.is_symlink()
                       else "it."),
                    code="OUT_EXISTS",
                )
        elif any(target.iterdir()) and not overwrite:
            raise ValidationError(f"--out {out!r} is a folder that is not empty; give a new "
                                  "folder, or --overwrite to replace it (it is replaced only once "
                                  "the new output is complete).", code="OUT_EXISTS")
    # writability: probe with a temporary folder in the nearest existing ancestor, named as
    # every temporary of the package (a killed run's is recognised and removed by the next)
    anc = target.parent
    while not anc.exists():
        anc = anc.parent
    if not anc.is_dir():
        raise ValidationError(f"--out {out!r}: {str(anc)!r} is a file, not a folder.",
                              code="OUT_INVALID")
    _check_name_lengths(out, target, anc)
    from bayes_risk._io import temporary_name

    probe = temporary_name(anc / target.relative_to(anc).parts[0])
    try:
        probe.mkdir(mode=0o700)
        probe.rmdir()
    except OSError as err:
        raise ValidationError(f"--out {out!r} cannot be written ({str(anc)!r}: "
                              f"{err.strerror or err}).", code="OUT_NOT_WRITABLE") from err
    return target


def _check_name_lengths(out: str, target: Path, anc: Path) -> None:
    """Refuse an ``--out`` whose new folder names are too long for the file system."""
    try:
        name_max = int(os.pathconf(anc, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        name_max = 255
    new = [p.name for p in (*_new_dirs(target), target) if p not in (anc, *anc.parents)]
    tmp = f".{target.name}.tmp-{os.getpid()}-00000000"
    for name in (*new, tmp):
        if len(os.fsencode(name)) > name_max:
            raise ValidationError(f"--out {out!r}: the folder name {name[:40]!r}... is "
                                  f"{len(os.fsencode(name))} bytes long (with the hidden folder "
                                  "'.NAME.tmp-PID-XXXXXXXX' the output is built in), more than "
                                  f"the {name_max} this file system allows; give a shorter name.",
                                  code="OUT_INVALID")


def _new_dirs(path: Path) -> list[Path]:
    """Ancestors of ``path`` that do not exist yet (outermost first)."""
    missing = []
    p = path.parent
    while not p.exists():
        missing.append(p)
        p = p.parent
    return missing[::-1]


@contextlib.contextmanager
def output_dir(args: argparse.Namespace,
               finalize: Callable[[Path], Any] | None = None) -> Iterator[Path]:
    """Yield an empty temporary folder that, complete (``summary.json`` merged, ``finalize``
    run), replaces ``--out`` as checked (else ``OUT_TAKEN``); removed on error or interrupt."""
    from bayes_risk._io import (
        path_identity,
        remove_stale_siblings,
        replace_checked,
        temporary_sibling,
    )

    run: CommandRun | None = getattr(args, "_run", None)
    target = Path(os.path.abspath(args.out)) if run is None or run.out is None else run.out
    expected = run.out_identity if run is not None and run.out is not None else path_identity(
        target
    )
    created = _new_dirs(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    removed, kept = remove_stale_siblings(target)
    if removed:
        warnings.warn(
            BayesRiskWarning(
                f"removed {len(removed)} temporary folder(s) left beside --out by a run that "
                f"was killed ({', '.join(removed)}); they held that run's unfinished output.",
                code="STALE_TEMPORARY_REMOVED",
            ),
            stacklevel=2,
        )
    if kept:
        warnings.warn(
            BayesRiskWarning(
                f"{', '.join(kept)} beside --out is the previous output that a killed run was "
                "replacing; it is kept (rename it back, or delete it).",
                code="STALE_OUTPUT_KEPT",
            ),
            stacklevel=2,
        )
    holds_steps = run is not None and run.command == "demo"
    try:
        with temporary_sibling(target) as tmp:  # removed on any exception, Ctrl-C included
            if holds_steps:
                _FINAL_NAMES[str(tmp)] = str(target)
            yield tmp
            if run is not None:
                if run.interrupted:
                    raise KeyboardInterrupt
                _merge_summary(tmp / "summary.json", run.summary_fields())
            if finalize is not None:
                finalize(tmp)
            with _COMMIT:  # a program that ends itself on a signal waits for the rename
                if run is not None:
                    # from here on a signal only marks the run interrupted: the rename is
                    # never cut
                    run.critical = True
                    if run.interrupted:
                        raise KeyboardInterrupt
                try:
                    replace_checked(tmp, target, expected=expected)
                except FileExistsError as err:
                    raise ValidationError(f"--out {shown(target)!r} was "
                                          f"{'replaced' if expected else 'created'} by another "
                                          "process while this run worked; it is left as it is and "
                                          "this run's output is discarded. Give another --out.",
                                          code="OUT_TAKEN") from err
                if run is not None:
                    run.completed = True  # the output is complete and in place
    except BaseException:
        for d in reversed(created):  # the temporary folder is gone by now
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    finally:
        if run is not None:
            run.critical = False
        if holds_steps:
            for k in [k for k, v in _FINAL_NAMES.items() if v == str(target)]:
                _FINAL_NAMES.pop(k, None)
    if run is not None and run.interrupted:
        # a signal during the rename, which it did not cut: the run stops now, as for any
        # other Ctrl-C (exit 130), with its output in place
        raise KeyboardInterrupt


def _merge_summary(path: Path, extra: dict[str, Any]) -> None:
    from bayes_risk._io import write_json

    d: dict[str, Any] = {}
    if path.is_file():
        d = json.loads(path.read_text())
    d.setdefault("command", extra["command"])
    if "inputs" not in d or not d["inputs"]:
        d["inputs"] = extra["inputs"]
    if isinstance(d["inputs"], dict):  # absolute; the files' final names (a demo's steps)
        d["inputs"] = {k: _final_path(v) for k, v in d["inputs"].items()}
    d["input_sha256"] = {shown(k): v for k, v in extra["input_sha256"].items()}
    d["run_warnings"] = extra["run_warnings"]
    codes = [w["code"] for w in extra["run_warnings"]]
    if isinstance(d.get("warnings"), list):
        d["warnings"] = list(dict.fromkeys([*d["warnings"], *codes]))
    else:
        d["warnings"] = codes
    write_json(path, d)


@contextlib.contextmanager
def command_line_options(options: Mapping[str, str]) -> Iterator[None]:
    """Inside the block, messages name arguments as the command line's options (``options``:
    library argument name -> ``"--max-order"`` or a positional's metavar;
    :func:`bayes_risk.exceptions.arg_name`), added to those of an outer block."""
    outer = COMMAND_LINE_OPTIONS.get()
    token = COMMAND_LINE_OPTIONS.set({**(outer or {}), **options})
    try:
        yield
    finally:
        COMMAND_LINE_OPTIONS.reset(token)


@contextlib.contextmanager
def command_run(args: argparse.Namespace) -> Iterator[CommandRun]:
    """Run context of one sub-command: ``--out`` checks, signal handlers, warning capture."""
    run = CommandRun(command=args.command, inputs=_inputs(args),
                     options=dict(COMMAND_LINE_OPTIONS.get() or {}))
    args._run = run
    if getattr(args, "out", None) is not None:
        # --resume (design) goes on in the --out it names, which must then exist
        run.out = check_out(args.out, overwrite=bool(getattr(args, "overwrite", False)
                                                     or getattr(args, "resume_out", False)),
                            inputs=[Path(p).resolve() for v in run.inputs.values()
                                    for p in (v if isinstance(v, list) else [v])])
        from bayes_risk._io import path_identity

        run.out_identity = path_identity(run.out)
    handlers: dict[int, Any] = {}
    _ACTIVE.append(run)
    if threading.current_thread() is threading.main_thread():

        def on_signal(signum: int, frame: Any) -> None:
            # at any moment, also once the output is in place: a Ctrl-C is never answered
            # with exit status 0. Not cut: the final rename (the signal acts when it ends),
            # and the clean-up of an interrupt being handled (a second Ctrl-C, or one
            # delivered again, would leave a temporary folder half-removed)
            for active in _ACTIVE:  # the demo too, whose stopper holds the unraisable hook
                active.interrupted = True
            if not run.critical and not isinstance(sys.exception(), KeyboardInterrupt):
                raise KeyboardInterrupt

        for sig in _STOP_SIGNALS:
            # a signal ignored by whoever started the program (SIGINT of a background job)
            # stays ignored
            if signal.getsignal(sig) is not signal.SIG_IGN:
                handlers[sig] = signal.signal(sig, on_signal)
    showwarning = warnings.showwarning
    outermost = len(_ACTIVE) == 1 and threading.current_thread() is threading.main_thread()
    stopper = _Stopper(run, watch=CONSOLE) if outermost else contextlib.nullcontext()
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(stopper)
        # hashed once the signal handlers are in place: a large input takes a while to read,
        # and Ctrl-C meanwhile stops the run as it would during the work
        run.checksums = _checksums(run.inputs)
        # --quiet, one rule for every sub-command: the written path(s) on stdout
        # (print_summary), warnings and errors on stderr, nothing else
        with quiet(bool(getattr(args, "quiet", False))), warnings.catch_warnings():
            warnings.simplefilter("always", Warning)
            # pandas/numpy deprecation chatter is not a statement about the user's data
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            # nor are the Dask cluster's housekeeping messages (ports, sockets) about the run
            warnings.simplefilter("ignore", ResourceWarning)
            warnings.filterwarnings("ignore", module=r"(distributed|tornado|bokeh)(\.|$)")

            def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
                run.record_warning(message, category)

            warnings.showwarning = show
            yield run
    finally:
        stack.close()
        _ACTIVE.remove(run)
        warnings.showwarning = showwarning
        for sig, h in handlers.items():
            # the program ends with its outermost run: a late signal changes nothing
            signal.signal(sig, signal.SIG_IGN if (CONSOLE and not _ACTIVE) else h)
