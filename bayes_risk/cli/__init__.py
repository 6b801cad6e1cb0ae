"""Command-line interface: ``bayes-risk SUBCOMMAND ...`` (also ``python -m bayes_risk``).

Arguments are declared in the light ``bayes_risk.cli.parsers.NAME``; the run is its row of
the one runner (``bayes_risk.cli._runner.Run``) or ``bayes_risk.cli.NAME`` (imported when it
runs). See :doc:`/cli`.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = ["build_parser", "main", "console_main", "SUBCOMMANDS"]

#: the sub-commands, in the order of --help (the data flow), each with the module declaring its
#: arguments (its ``add_parser``), imported when the parser is built; a table of the command
#: line's own, so that --help imports none of the measures' modules (:doc:`/adding_a_measure`)
_PARSERS: dict[str, str] = {
    "fit": "bayes_risk.cli.parsers.fit",
    "synthesize": "bayes_risk.cli.parsers.synthesize",
    "utility": "bayes_risk.cli.parsers.utility",
    "identification": "bayes_risk.cli.parsers.identification",
    "attribute": "bayes_risk.cli.parsers.attribute",
    "membership": "bayes_risk.cli.parsers.membership",
    "attacks": "bayes_risk.cli.parsers.attacks",
    "disclosure": "bayes_risk.cli.parsers.disclosure",
    "original-risk": "bayes_risk.cli.parsers.original_risk",
    "remedy": "bayes_risk.cli.parsers.remedy",
    "audit": "bayes_risk.cli.parsers.audit",
    "design": "bayes_risk.cli.parsers.design",
    "orders": "bayes_risk.cli.parsers.orders",
    "demo": "bayes_risk.cli.parsers.demo",
}

#: the sub-commands of ``bayes-risk``, in the order of --help
SUBCOMMANDS: tuple[str, ...] = tuple(_PARSERS)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every sub-command; ``command``, the one about to run when known:
    then its sub-command alone, and the models' ``fit`` options are read only for ``fit`` or
    ``None``."""
    from bayes_risk._version import __version__

    parser = _Parser(prog="bayes-risk",
                     description="Bayesian estimation of the disclosure risk (attribute and "
                     "identification) and the utility of synthetic microdata.")
    parser.add_argument("-V", "--version", action="version", version=f"bayes-risk {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # the sub-command about to run: its parser alone (the others' modules and options took
    # 0.04-0.05 s of every command's start, issue 69)
    for name in [command] if command in SUBCOMMANDS else SUBCOMMANDS:
        importlib.import_module(_PARSERS[name]).add_parser(sub)
    from bayes_risk.cli.parsers import INPUTS_ATTR, input_arguments

    if command in (None, "fit"):
        from bayes_risk.cli.parsers.fit import add_model_options

        add_model_options(sub.choices["fit"])
    for name, subparser in sub.choices.items():
        # the inputs of each sub-command, read off its declarations (never listed by hand)
        subparser.set_defaults(**{INPUTS_ATTR: input_arguments(subparser)})
        subparser.add_argument(
            "--memory", metavar="SIZE", default=None,
            help="memory the whole process may use, such as 2GB, 512MB or 1.5GiB (default: "
                 + ("half the memory available on the machine when the audit starts, beside "
                    "what the process holds; the audit prints its plan, each step's least "
                    "memory and chunking, before the first step" if name == "audit" else
                    "the memory available on the machine") + "). Work checked against it is "
                 "refused beforehand (MEMORY_TOO_LARGE) instead of running out of memory; "
                 "identification and attribute risk size their chunks of targets and records "
                 "from it (the numbers do not depend on the chunks).")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 success, 2 user error, 130
    interrupted). Every sub-command runs inside ``bayes_risk.cli._run.command_run``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # the sub-command, when it comes first (the top level's only options, --help and --version,
    # take no value; after one of them, every sub-command is built, for the top level's help)
    parser = build_parser(argv[0] if argv and not argv[0].startswith("-") else "")
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help(sys.stderr)
        return 2
    from bayes_risk._terminal import installed

    # stderr's line state is known for the whole run (what the libraries write included), so
    # that the last line, ``interrupted`` or an error, always stands on a line of its own
    with installed():
        return _main(parser, args)


def _main(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from bayes_risk._memory import memory_limit, parse_memory
    from bayes_risk.cli._run import command_line_options, command_run
    from bayes_risk.cli.parsers import command_line_text, option_names
    from bayes_risk.exceptions import BayesRiskError

    run = None
    # the library's messages name its arguments as this sub-command's options
    options = option_names(parser._subparsers._group_actions[0].choices[args.command])
    try:
        # checked before the run starts: a bad --memory writes nothing
        limit = parse_memory(getattr(args, "memory", None), "--memory")
        with command_line_options(options), command_run(args) as run, memory_limit(limit):
            status = int(args.handler(args) or 0)
            if run.interrupted:  # a library swallowed the interrupt
                raise KeyboardInterrupt
            return status
    except Exception as err:
        if run is not None and run.interrupted:
            # the interrupt surfaced as another exception (e.g. SystemError from a numba kernel)
            return _interrupted(run)
        if isinstance(err, BayesRiskError):
            text = command_line_text(_one_line(err), options)
            _print_error(args.command, _option_code(err, text, options), text)
            return 2
        if isinstance(err, OSError):  # missing file, permission, disk full: said in one line
            _print_error(args.command, _os_error_code(err), err)
            return 2
        if isinstance(err, MemoryError):
            # the sizes this sub-command takes, never an option it does not have
            sizes = [o for o in _SIZE_OPTIONS if o in options.values()]
            _print_error(args.command, "OUT_OF_MEMORY",
                         "out of memory; reduce the records or the sizes given"
                         + (f" ({', '.join(sizes)})" if sizes else "") + ".")
            return 2
        raise
    except KeyboardInterrupt:
        return _interrupted(run)


#: options that multiply the work or the memory of a run, named by the out-of-memory error of
#: a sub-command that has them
_SIZE_OPTIONS: tuple[str, ...] = (
    "--records", "-m", "--draws", "--chains", "--components", "--temperatures", "--starts",
    "--n-trees", "--n-attacks", "--max-attempts", "--n-neighbors", "--n-perm", "--bootstrap",
    "--replicates", "--max-replicates", "--population", "--normaliser-draws", "--refit-draws",
    "--max-size", "--known-sweep", "--radius-sweep", "--chunk-size", "--partition-size",
    "--n-ce", "--n-acs")


def _option_code(err: BaseException, text: str, options: dict[str, str]) -> str:
    """The code of an error: the library's argument error (``INVALID_ARGUMENT``) naming one of
    the command's options is an option's bad value (``BAD_OPTION_VALUE``)."""
    code = getattr(err, "code", "")
    if code == "INVALID_ARGUMENT" and any(re.search(rf"{re.escape(o)}\b(?!-)", text)
                                          for o in options.values() if o.startswith("-")):
        return "BAD_OPTION_VALUE"
    return code


def _print_error(command: str, code: str, err: BaseException | str) -> None:
    """The one error line of a run: ``bayes-risk COMMAND: error [CODE]: message``."""
    from bayes_risk._terminal import line

    line(f"bayes-risk {command}: error [{code}]: {_one_line(err)}")


#: codes of the operating system's errors (a file that is missing, unreadable, ...)
_OS_ERROR_CODES: tuple[tuple[type[OSError], str], ...] = (
    (FileNotFoundError, "FILE_NOT_FOUND"),
    (PermissionError, "PERMISSION_DENIED"),
    (IsADirectoryError, "IS_A_FOLDER"),
    (NotADirectoryError, "NOT_A_FOLDER"),
    (FileExistsError, "FILE_EXISTS"),
)


def _os_error_code(err: OSError) -> str:
    """The code of an operating-system error (by class, ``DISK_FULL``, else ``OS_ERROR``)."""
    import errno

    for cls, code in _OS_ERROR_CODES:
        if isinstance(err, cls):
            return code
    if err.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return "DISK_FULL"
    return "OS_ERROR"


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors carry the code ``USAGE`` (exit status 2), and
    which reads an argument that starts with a minus and a digit (``-0.1,0.2``) as a value, not
    an option: the option's own check then says what is wrong with it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error [USAGE]: {message}\n")

    def parse_args(self, args: Sequence[str] | None = None,
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """argparse's, but an option the sub-command does not have is reported by the
        sub-command's parser (its usage, not the top level's), with the option it resembles."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            sub = self._subparsers._group_actions[0].choices.get(  # type: ignore[union-attr]
                getattr(ns, "command", None)) if self._subparsers is not None else None
            parser = sub if sub is not None else self
            known = [o for a in parser._actions for o in a.option_strings]
            hints = []
            for extra in extras:
                flag = extra.split("=", 1)[0]
                close = difflib.get_close_matches(flag, known, n=1) if flag.startswith("-") else []
                if close:
                    hints.append(f"{flag}: did you mean {close[0]}?")
            parser.error(f"unrecognized arguments: {' '.join(extras)}"
                         + (f" ({'; '.join(hints)})" if hints else ""))
        return ns


def _interrupted(run: object = None) -> int:
    """Exit status 130 and the line ``interrupted``, printed once and last (a nested run,
    a demo's step, passes the interrupt on)."""
    from bayes_risk.cli import _run

    if _run._ACTIVE:
        raise KeyboardInterrupt
    _run.say_interrupted(run)
    return 130


def _exit(status: int) -> NoReturn:
    """End the process with ``status`` now, without the interpreter's tear-down. ``atexit``
    handlers run unless the run was interrupted (130): a library the interrupt cut short (a
    compile, an import in a background thread) may leave them unsafe to run (numba's and
    llvmlite's finalizers, multiprocessing's; a crash after ``interrupted`` was seen once in 26
    runs), and the run's own clean-up is done by then."""
    import atexit

    from bayes_risk.cli._run import end_process

    try:
        if status != 130:
            atexit._run_exitfuncs()
    finally:
        end_process(status)


def console_main() -> NoReturn:
    """Entry point of the ``bayes-risk`` program: :func:`main`, then :func:`_exit`."""
    import signal

    def _early(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # until the run installs its own handlers (after the imports and the parsing), SIGTERM and
    # SIGHUP stop the program like Ctrl-C (status 130, "interrupted") instead of killing it
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _early)
    try:
        from bayes_risk.cli import _run

        _run.CONSOLE = True
        status = main()
    except KeyboardInterrupt:  # while importing or parsing, before the run's handlers exist
        from bayes_risk._terminal import line

        line("interrupted")
        status = 130
    _exit(status)


def _one_line(err: BaseException) -> str:
    """The message on one line, numpy scalar reprs (``np.int64(63)``) shown as plain numbers."""
    text = " ".join(str(err).split())
    return re.sub(r"np\.(?:int|uint|float|str_|bool_)\w*\(([^()]*)\)", r"\1", text)
