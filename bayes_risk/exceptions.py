"""Exception and warning classes of bayes-risk: every error a user can provoke names the
column, value or argument and what was expected, and carries a machine-readable ``.code``
(:doc:`/user_guide/errors`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

#: ``warnings.warn(..., skip_file_prefixes=CALLER)`` attributes a warning to the first frame
#: outside bayes-risk (the user's line), whatever the call depth inside the package
CALLER: tuple[str, ...] = (os.path.dirname(os.path.abspath(__file__)) + os.sep,)

__all__ = ["BayesRiskError", "SchemaError", "ValidationError", "NotFittedError",
           "NotSupportedError", "BayesRiskWarning", "ImportanceSamplingWarning",
           "ConvergenceWarning", "DataWarning", "CALLER", "COMMAND_LINE_OPTIONS", "warning_code",
           "warning_line"]


class BayesRiskError(Exception):
    """Base class of all bayes-risk errors.

    Parameters
    ----------
    message : str
        What went wrong, naming the column/value/argument and what was expected.
    code : str, optional
        Machine-readable code, e.g. ``"US_COLUMNS_DIFFER"`` (default: the class's
        :attr:`default_code`); the command line prints it as ``error [CODE]: ...``.
    """

    #: the code of an error raised without one (each subclass has its own)
    default_code: str = "BAYES_RISK_ERROR"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code if code is not None else type(self).default_code

    @property
    def code_given(self) -> bool:
        """Whether the raise site named a specific code (not the class's default)."""
        return self.code != type(self).default_code


class SchemaError(BayesRiskError, ValueError):
    """A table does not fit its schema: missing/extra column, NaN, wrong dtype, unknown level."""

    default_code = "SCHEMA_MISMATCH"


class ValidationError(BayesRiskError, ValueError):
    """An argument has an invalid value (wrong option, out of range, inconsistent settings)."""

    default_code = "INVALID_ARGUMENT"


class NotFittedError(BayesRiskError, ValueError, AttributeError):
    """A model or synthesizer was used before ``fit``."""

    default_code = "NOT_FITTED"


class NotSupportedError(BayesRiskError, NotImplementedError):
    """A valid request the package does not support (yet) for this model or scenario; the
    message names the alternative."""

    default_code = "NOT_SUPPORTED"


class BayesRiskWarning(UserWarning):
    """Base class of bayes-risk warnings: ``message`` says what deserves attention and what to
    do; ``code`` (e.g. ``"RHAT_HIGH"``) is recorded in output files."""

    def __init__(self, message: str = "", code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class ImportanceSamplingWarning(BayesRiskWarning):
    """Importance-sampling estimate is unreliable (low ESS, high Pareto k-hat, dominated sum)."""


class ConvergenceWarning(BayesRiskWarning):
    """MCMC or an iterative fit (IRLS, IPF) did not converge."""


class DataWarning(BayesRiskWarning):
    """Something in the data deserves attention (renormalised prior, empty level, ...)."""


def _caused_by_interrupt(err: BaseException) -> bool:
    """Whether ``err`` was caused, directly or through a chain of causes, by Ctrl-C."""
    seen: set[int] = set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        # the chain Python's traceback shows: the cause, else the context unless suppressed
        e = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
    return False


def redeliver_interrupt(delay: float = 0.05) -> None:
    """Deliver Ctrl-C to the main thread again ``delay`` seconds from now: an interrupt raised
    where it cannot propagate (``__del__``, a weakref or ``ctypes`` callback) is dropped by
    Python, and the hooks that see it (``sys.unraisablehook``) call this."""
    import _thread
    import signal
    import threading

    timer = threading.Timer(delay, _thread.interrupt_main, args=(signal.SIGINT,))
    timer.daemon = True
    timer.start()


@contextlib.contextmanager
def keyboard_interrupts(interrupted: Callable[[], bool] | None = None) -> Iterator[None]:
    """Re-raise as ``KeyboardInterrupt`` the ``SystemError`` ("returned a result with an
    exception set") that a Ctrl-C during a compiled (numba) kernel surfaces as: one caused by
    the interrupt, or any while ``interrupted()``; other ``SystemError`` is left alone."""
    try:
        yield
    except SystemError as err:
        if (interrupted is not None and interrupted()) or _caused_by_interrupt(err):
            raise KeyboardInterrupt("interrupted") from err
        raise


def interruptible[**P, R](fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator for public functions that run compiled kernels: Ctrl-C reaches the caller as
    :class:`KeyboardInterrupt` (:func:`keyboard_interrupts`)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with keyboard_interrupts():
            return fn(*args, **kwargs)

    return wrapper


#: the running sub-command's options by library argument (``{"max_order": "--max-order"}``);
#: ``None`` outside the command line. The command line sets it
#: (``bayes_risk.cli._run.command_line_options``); the functions below read it, so that a
#: message names an argument as its caller writes it
COMMAND_LINE_OPTIONS: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "bayes_risk_options", default=None)


def on_command_line() -> bool:
    """Whether the running code was called by the command line (:data:`COMMAND_LINE_OPTIONS`)."""
    return COMMAND_LINE_OPTIONS.get() is not None


def has_option(name: str) -> bool:
    """Whether the caller can set the argument ``name``: always in Python; on the command line
    only when the sub-command has an option for it."""
    opts = COMMAND_LINE_OPTIONS.get()
    return opts is None or name in opts


def arg_name(name: str, value: Any = None, *, cli: Any = None) -> str:
    """The argument ``name`` (set to ``value``) as the caller writes it.

    In Python ``name`` or ``name=value``; on the command line the sub-command's option,
    ``--max-order`` or ``--max-order 0`` (``cli``: the value as the option takes it).

    Examples
    --------
    >>> arg_name("max_order", 0)
    'max_order=0'
    >>> from bayes_risk.cli._run import command_line_options  # what the command line does
    >>> with command_line_options({"max_order": "--max-order"}):
    ...     arg_name("max_order", 0)
    '--max-order 0'
    >>> with command_line_options({"suda": "--no-suda"}):  # a flag that turns a setting off
    ...     arg_name("suda", False)
    '--no-suda'
    """
    opts = COMMAND_LINE_OPTIONS.get()
    if opts is None or name not in opts:
        return name if value is None else f"{name}={value}"
    if opts[name].startswith("--no-") and value is False:
        return opts[name]  # suda=False is the flag --no-suda
    shown = cli if cli is not None else value
    return opts[name] if shown is None or shown == "" else f"{opts[name]} {shown}"


_CODE_RE = re.compile(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b")


def warning_code(message: Warning | str, category: type[Warning]) -> str:
    """The machine-readable code of a warning: its ``code`` attribute, else the first
    ``SNAKE_CASE`` word of the message (e.g. ``(H_TOO_SMALL)``), else the class name."""
    code = getattr(message, "code", None)
    if code:
        return str(code)
    m = _CODE_RE.search(str(message))
    return m.group(1) if m else category.__name__


def warning_line(message: Warning | str, category: type[Warning]) -> tuple[str, str]:
    """``(code, text)`` of a warning as shown in ``warning [CODE]: text``: one line, the code
    removed from the message where it carries it (``CODE: ...``, ``(CODE)``)."""
    code = warning_code(message, category)
    text = " ".join(str(message).split())
    if text.startswith(f"{code}: "):
        text = text[len(code) + 2:]
    text = re.sub(rf"\s*\({re.escape(code)}\)", "", text)
    return code, text
