"""Declarations of the sub-commands' arguments: what ``bayes-risk --help`` needs, and no more.

Each sub-command ``NAME`` has a module ``bayes_risk.cli.parsers.NAME`` with ``add_parser(sub)``
that registers its arguments and sets ``handler=Handler("bayes_risk.cli.NAME")``. These modules
import nothing but the standard library and this package's light helpers (never pandas, numpy,
numba, scipy, PyMC or ArviZ), so building the parser costs milliseconds; the module
``bayes_risk.cli.NAME`` holding the sub-command's ``run(args)`` (and whatever it imports) is
imported by :class:`Handler` only when that sub-command runs. A test builds the parser in a
fresh interpreter and checks ``sys.modules``.

"""

from __future__ import annotations

import argparse
import importlib
import re

__all__ = [
    "Handler",
    "input_arguments",
    "INPUTS_ATTR",
]

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
    ``FILE``, ``DIR``, ``RANGE|FILE``, ``SOURCE``), ``--out`` excepted.
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
