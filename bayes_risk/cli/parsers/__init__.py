"""Declarations of the sub-commands' arguments: what ``bayes-risk --help`` needs, and no more.

Each sub-command ``NAME`` has a module ``bayes_risk.cli.parsers.NAME`` with ``add_parser(sub)``
that registers its arguments and sets ``handler=Handler("bayes_risk.cli.NAME")``. These modules
import nothing but the standard library and this package's light helpers (never pandas, numpy,
numba, scipy, PyMC or ArviZ), so building the parser costs milliseconds; the module
``bayes_risk.cli.NAME`` holding the sub-command's ``run(args)`` (and whatever it imports) is
imported by :class:`Handler` only when that sub-command runs. A test builds the parser in a
fresh interpreter and checks ``sys.modules``.

A renamed option keeps its old spelling for one release through :func:`add_deprecated_alias`:
hidden from ``--help``, its value goes to the new option's destination (:func:`apply_deprecated`,
called by :func:`bayes_risk.cli.main`) and the run prints ``warning [DEPRECATED_OPTION]: ...``
(recorded in ``summary.json``).
"""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "Handler",
    "add_deprecated_alias",
    "apply_deprecated",
    "input_arguments",
    "DEPRECATED_ATTR",
    "INPUTS_ATTR",
]

#: attribute of the parsed namespace listing the deprecated spellings used (old, new)
DEPRECATED_ATTR = "_deprecated_options"
#: attribute of the parsed namespace naming the input arguments (set by
#: :func:`bayes_risk.cli.build_parser` from :func:`input_arguments`)
INPUTS_ATTR = "_input_arguments"

#: an argument declared with one of these metavars names input files or folders: it is an input
#: of its sub-command (recorded in ``summary.json``; ``--out`` may never hold or replace it).
#: The set of inputs is derived from the parser declarations (:func:`input_arguments`), so an
#: option added later is covered as soon as it is declared with such a metavar.
_INPUT_METAVAR = re.compile(r"\b(ORIGINAL|SYN|RELEASE|FILE|DIR|SOURCE)\b")
#: the output itself is declared ``--out DIR``
_NOT_INPUTS = frozenset({"out"})


def input_arguments(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    """Destinations of the arguments of ``parser`` that name input files or folders.

    An argument is an input when its metavar names a path (``ORIGINAL``, ``SYN``, ``RELEASE``,
    ``FILE``, ``DIR``, ``RANGE|FILE``, ``SOURCE``), ``--out`` excepted; hidden deprecated
    spellings are covered by the option they stand for.
    """
    dests: list[str] = []
    for action in parser._actions:
        mv = action.metavar
        text = " ".join(mv) if isinstance(mv, tuple) else str(mv or "")
        if (
            action.dest not in _NOT_INPUTS
            and action.help is not argparse.SUPPRESS
            and _INPUT_METAVAR.search(text)
            and action.dest not in dests
        ):
            dests.append(action.dest)
    return tuple(dests)




class Handler:
    """The ``run(args)`` function of a sub-command, imported when it is called.

    Parameters
    ----------
    module : str
        Dotted name of the module defining the function, e.g. ``"bayes_risk.cli.fit"``.
    function : str, default "run"
        Name of the function in ``module``.
    """

    def __init__(self, module: str, function: str = "run") -> None:
        self.module = module
        self.function = function

    def __call__(self, args: argparse.Namespace) -> int | None:
        return getattr(importlib.import_module(self.module), self.function)(args)

    def __repr__(self) -> str:
        return f"Handler({self.module!r}, {self.function!r})"


class _DeprecatedAlias(argparse.Action):
    """Note the value given under an old spelling; :func:`apply_deprecated` moves it to the new
    option's destination once parsing is done (a positional's default, set late by argparse,
    would otherwise overwrite it)."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, target: str,
                 store_true: bool = False, **kwargs: Any) -> None:
        self.new = new
        self.target = target
        self.store_true = store_true
        if store_true:
            kwargs["nargs"] = 0
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        used = list(getattr(namespace, DEPRECATED_ATTR, []))
        used.append((option_string, self.new, self.target, True if self.store_true else values))
        setattr(namespace, DEPRECATED_ATTR, used)


def add_deprecated_alias(
    p: argparse.ArgumentParser | Any, old: str, new: str, dest: str, **kwargs: Any
) -> None:
    """Register ``old`` as a hidden, deprecated spelling of the option (or positional) ``new``.

    Parameters
    ----------
    p : argparse.ArgumentParser or argument group
    old : str
        The old option string, e.g. ``"--model-dir"``.
    new : str
        How the current spelling is written in messages, e.g. ``"--model"`` or ``"ORIGINAL"``.
    dest : str
        Destination of ``new``; the value given under ``old`` ends up there.
    **kwargs
        ``nargs``, ``type``, ``choices``, ``metavar`` as for ``new``; ``store_true=True`` for a
        flag without value.
    """
    p.add_argument(old, dest=f"_deprecated_{dest}", action=_DeprecatedAlias, new=new,
                   target=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)


def apply_deprecated(args: argparse.Namespace) -> list[str]:
    """Move the values given under deprecated spellings to their destinations.

    Returns
    -------
    list of str
        One message per deprecated spelling used (for the run's ``DEPRECATED_OPTION`` warning).

    Raises
    ------
    ValidationError
        If both the old and the new spelling were given.
    """
    from bayes_risk.exceptions import ValidationError

    messages = []
    for old, new, dest, value in getattr(args, DEPRECATED_ATTR, ()):
        if getattr(args, dest, None) not in (None, [], False):
            raise ValidationError(
                f"{old} is the deprecated spelling of {new}: give only {new}.",
                code="OPTION_CONFLICT",
            )
        setattr(args, dest, value)
        messages.append(
            f"{old} is deprecated and will be removed in the next release; use {new} "
            "(same meaning)."
        )
    return list(dict.fromkeys(messages))
