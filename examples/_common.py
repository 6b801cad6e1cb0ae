"""Shared helpers of the example scripts: scale and data location."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd

#: 1.0 reproduces the paper-sized analysis; the test suite runs the examples at a small scale.
SCALE = float(os.environ.get("BAYES_RISK_EXAMPLE_SCALE", "1.0"))
#: the project's shared/ folder beside the checkout, or the parent of $BAYES_RISK_SHARED_DATA (the
#: docs build runs the scripts from a copy of the tree)
SHARED = (Path(os.environ["BAYES_RISK_SHARED_DATA"]).parent
          if os.environ.get("BAYES_RISK_SHARED_DATA")
          else Path(__file__).resolve().parent.parent.parent / "shared")


def shared_file(*parts: str) -> Path:
    """A file of the project's shared/ folder; without it, the script stops with one line that
    names the file and how to point at it (exit status 2), not a traceback."""
    path = SHARED.joinpath(*parts)
    if not path.is_file():
        sys.stderr.write(
            f"error: this example reads {path}, the project's public data, which is not beside "
            "this checkout. Put the project's shared/ folder beside the clone, or set "
            "BAYES_RISK_SHARED_DATA to its data/ folder; the examples that need no file "
            "(docs/examples.md) run without it.\n")
        raise SystemExit(2)
    return path


def scaled(n: int, minimum: int = 1) -> int:
    """``n`` times the example scale, at least ``minimum``."""
    return max(minimum, int(round(n * SCALE)))


def ce_data() -> tuple[pd.DataFrame, str]:
    """The real CE sample of Hornby & Hu (``../shared/data/CEdata.csv``) when present, else the
    CE-like demo table."""
    from bayes_risk.data import make_ce_like, read_table

    path = SHARED / "data" / "CEdata.csv"
    if path.is_file():
        return read_table(path), "CEdata (U.S. Consumer Expenditure sample, 5,571 households)"
    return make_ce_like(), "CE-like demo table (bayes_risk.data.make_ce_like)"
