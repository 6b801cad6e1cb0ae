"""Command-line interface: ``bayes-risk SUBCOMMAND ...`` (also ``python -m bayes_risk``).

A thin shell over the library (STYLE.md R18): each sub-command lives in its own module exposing
``add_parser(subparsers)``, which registers the arguments and sets ``handler``; the handler calls
library functions only. User errors print one line to stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main", "SUBCOMMANDS"]

# Order in which sub-commands appear in --help (the data flow).
SUBCOMMANDS: tuple[str, ...] = (
    "fit",
    "synthesize",
    "utility",
    "identification",
    "attribute",
    "disclosure",
    "orders",
    "demo",
)


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every sub-command."""
    from bayes_risk import __version__

    parser = argparse.ArgumentParser(
        prog="bayes-risk",
        description=(
            "Bayesian estimation of the disclosure risk (attribute and identification) and the "
            "utility of synthetic microdata."
        ),
    )
    parser.add_argument("-V", "--version", action="version", version=f"bayes-risk {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        mod = importlib.import_module(f"bayes_risk.cli.{name}")
        mod.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 success, 2 user error)."""
    from bayes_risk.exceptions import BayesRiskError

    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.handler(args) or 0)
    except BayesRiskError as err:
        code = f" [{err.code}]" if getattr(err, "code", None) else ""
        print(f"bayes-risk {args.command}: error{code}: {err}", file=sys.stderr)
        return 2
    except FileNotFoundError as err:
        print(f"bayes-risk {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        print("interrupted", file=sys.stderr)
        return 130
