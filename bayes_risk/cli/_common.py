"""Arguments and helpers shared by the sub-commands."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import pandas as pd

from bayes_risk.exceptions import ValidationError

__all__ = [
    "add_type_arguments",
    "add_seed_argument",
    "add_quiet_argument",
    "add_out_argument",
    "schema_from_args",
    "parse_key_value",
    "add_dask_arguments",
    "dask_client",
    "dask_kwargs",
]


def add_type_arguments(p: argparse.ArgumentParser) -> None:
    """``--categorical/--ordinal/--count/--continuous`` column-type overrides."""
    g = p.add_argument_group("column types (overrides of the types inferred from the data)")
    g.add_argument("--categorical", nargs="+", default=[], metavar="COL",
                   help="columns to treat as unordered categorical (e.g. integer-coded factors)")
    g.add_argument("--ordinal", nargs="+", default=[], metavar="COL",
                   help="columns to treat as ordered categorical")
    g.add_argument("--count", nargs="+", default=[], metavar="COL",
                   help="columns to treat as non-negative integer counts")
    g.add_argument("--continuous", nargs="+", default=[], metavar="COL",
                   help="columns to treat as continuous")


def add_seed_argument(p: argparse.ArgumentParser, default: int | None = None) -> None:
    """``--random-seed``."""
    p.add_argument("--random-seed", type=int, default=default, metavar="INT",
                   help="seed for all random draws (same seed, same numbers)"
                   + (f"; default {default}" if default is not None else ""))


def add_quiet_argument(p: argparse.ArgumentParser) -> None:
    """``--quiet`` silences progress bars."""
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")


def add_out_argument(p: argparse.ArgumentParser, what: str) -> None:
    """``--out DIR`` (required)."""
    p.add_argument("--out", required=True, metavar="DIR", help=f"output folder ({what})")


def schema_from_args(df: pd.DataFrame, args: argparse.Namespace, **kw: Any):
    """Infer the schema of ``df`` with the type overrides given on the command line."""
    from bayes_risk.data import infer_schema

    return infer_schema(
        df,
        categorical=getattr(args, "categorical", None) or None,
        ordinal=getattr(args, "ordinal", None) or None,
        count=getattr(args, "count", None) or None,
        continuous=getattr(args, "continuous", None) or None,
        **kw,
    )


def parse_key_value(
    items: Sequence[str], argument: str, value_type: type = float
) -> dict[str, Any]:
    """Parse ``["Age=0.1", "Income=0.2"]`` into ``{"Age": 0.1, "Income": 0.2}``."""
    out: dict[str, Any] = {}
    for it in items:
        if "=" not in it:
            raise ValidationError(f"{argument} expects COLUMN=VALUE. Got {it!r}.")
        k, v = it.split("=", 1)
        try:
            out[k] = value_type(v)
        except ValueError as err:
            raise ValidationError(
                f"{argument} {it!r}: value {v!r} is not a valid {value_type.__name__}."
            ) from err
    return out


def add_dask_arguments(p: argparse.ArgumentParser, unit: str) -> None:
    """``--scheduler ADDRESS`` | ``--workers N`` (mutually exclusive) and ``--partition-size``."""
    g = p.add_argument_group(
        "scale-out with Dask (optional; needs bayes-risk[dask]; default: in process)"
    )
    x = g.add_mutually_exclusive_group()
    x.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address of a running Dask scheduler, e.g. tcp://host:8786")
    x.add_argument("--workers", type=int, default=None, metavar="N",
                   help="start a local Dask cluster with N worker processes")
    g.add_argument("--partition-size", type=int, default=None, metavar="N",
                   help=f"{unit} per Dask task (default: the library's)")


@contextlib.contextmanager
def dask_client(args: argparse.Namespace) -> Iterator[Any]:
    """The Dask client asked for by ``--scheduler`` / ``--workers``, or ``None`` (in process)."""
    scheduler = getattr(args, "scheduler", None)
    workers = getattr(args, "workers", None)
    if scheduler is None and workers is None:
        if getattr(args, "partition_size", None) is not None:
            raise ValidationError("--partition-size applies only with --scheduler or --workers.")
        yield None
        return
    from bayes_risk.distributed import connect

    with connect(scheduler=scheduler, n_workers=workers) as client:
        yield client


def dask_kwargs(args: argparse.Namespace, client: Any) -> dict[str, Any]:
    """Keyword arguments for the ``bayes_risk.distributed`` functions (empty in process)."""
    if client is None:
        return {}
    kw: dict[str, Any] = {"client": client}
    if args.partition_size is not None:
        kw["partition_size"] = args.partition_size
    return kw
