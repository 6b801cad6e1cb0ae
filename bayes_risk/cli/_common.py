"""Arguments and helpers shared by the sub-commands (standard library only at module level)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bayes_risk.cli.parsers import add_argument_options
from bayes_risk.exceptions import ValidationError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "add_type_arguments", "add_seed_argument", "add_quiet_argument", "add_out_argument",
    "print_summary", "read_records_table",
    "read_inputs", "missing_labels", "numeric_columns", "add_format_argument",
    "schema_from_args",
    "release_schema", "add_dask_arguments",
    "add_input_arguments", "add_run_arguments",
    "write_run", "read_model", "read_holdout",
]

#: ``SYN`` of the sub-commands that read a release
SYN_HELP = ("synthetic datasets (one file each) or one SyntheticData folder written by "
            "'bayes-risk synthesize'")


def add_input_arguments(p: argparse.ArgumentParser, original: str = "",
                        synthetic: str | None = SYN_HELP, metavar: str = "SYN", *,
                        recoded: bool = False) -> None:
    """``ORIGINAL`` and, unless ``synthetic`` is ``None``, the release ``SYN [SYN ...]``;
    ``recoded``: ``--recoded`` too (a command that compares the release's levels with the
    original's)."""
    p.add_argument("original", metavar="ORIGINAL",
                   help="confidential table (.csv, .parquet, .sas7bdat, .xpt, .dta, .sav or .zsav)"
                   + original)
    if synthetic is not None:
        p.add_argument("synthetic", nargs="+", metavar=metavar, help=synthetic)
    if recoded:
        p.add_argument("--recoded", nargs="+", default=None, metavar="COL",
                       help="columns the release recodes on purpose: their levels that the "
                       "original never holds are kept as levels of their own, which no original "
                       "record matches (warning SYNTHETIC_ONLY_LEVEL); without it such a level "
                       "is an error (SYNTHETIC_ONLY_LEVEL), since a release coded otherwise "
                       "than its original (codes against labels) shows every risk as 0")


NO_SEED = object()


def add_run_arguments(p: argparse.ArgumentParser, handler: Any, out: str, *,
                      seed: Any = None, dask: str | None = None, check: str | None = None,
                      other_model: bool = False) -> None:
    """The options every run shares, in this order: ``--random-seed`` (default ``seed``;
    left out for ``NO_SEED``), Dask's (``dask``: the unit of a task), ``--quiet``,
    ``--allow-different-original`` (``check``: what ORIGINAL made), ``--allow-other-model``,
    ``--out`` (``out``: what it holds); ``handler`` runs the sub-command: its ``Run`` (the
    runner's row, ``bayes_risk.cli._runner``), or the module whose ``run(args)`` runs it
    (``"bayes_risk.cli.attribute"``), imported when it runs."""
    from bayes_risk.cli.parsers import Handler

    if seed is not NO_SEED:
        add_seed_argument(p, default=seed)
    if dask is not None:
        add_dask_arguments(p, dask)
    add_quiet_argument(p)
    if check is not None:  # a warning instead of an error for another original
        p.add_argument("--allow-different-original", action="store_true",
                       help=f"accept an ORIGINAL that is not the table {check} was made from (its "
                       "fingerprint, recorded by 'bayes-risk synthesize' and 'fit', differs: a "
                       "shuffled, re-sorted or other table); the run goes on and records warning "
                       "ORIGINAL_DIFFERS in summary.json")
    if other_model:  # the commands that take --model
        add_model_function_argument(p)
        p.add_argument("--allow-other-model", action="store_true",
                       help="accept a --model that is not the one that made SYN (the release's "
                       "manifest records the model that made it; plain files are compared with "
                       "the columns and records the model releases unchanged); the risks are then "
                       "those of --model, and the run records warning MODEL_DIFFERS in "
                       "summary.json")
    add_out_argument(p, out)
    p.set_defaults(handler=Handler(handler) if isinstance(handler, str) else handler)


def add_model_function_argument(p: argparse.ArgumentParser) -> None:
    """``--model-function``: the function of a PyMC model folder given as ``--model``."""
    p.add_argument("--model-function", default=None, metavar="MODULE:FUNCTION",
                   help="the model function of a PyMC model folder given as --model, as its "
                   "model.json names it (required for such a folder, refused for the others): "
                   "loading the folder imports that module and runs the function with the data, "
                   "so the folder alone never decides what runs (docs: user guide, Security). "
                   "MODULE must be importable: installed, or its folder on PYTHONPATH")


#: the function whose parameters declare the column-type options
_INFER = "bayes_risk.data.schema:infer_schema"
_TYPES = ("categorical", "ordinal", "count", "continuous")


def add_type_arguments(p: argparse.ArgumentParser, *, fits: bool = False) -> None:
    """Column-type overrides (``infer_schema``'s) and ``--missing-code``; ``fits``:
    ``--keep-unused-levels``."""
    g = p.add_argument_group("column types (overrides of the types inferred from the data)")
    add_argument_options(g, _INFER, fields=_TYPES)
    # its texts are missing codes of the schema and missing labels of the reader
    g.add_argument("--missing-code", nargs="+", action="extend", default=[], metavar="COL=VALUE",
                   help="a value of a count or continuous column that stands for a missing value "
                   "(synthpop's cont.na), e.g. --missing-code nociga=-8 income=-8; repeat a "
                   "column for several codes")
    if fits:
        add_argument_options(g, _INFER, fields=("keep_unused_levels",))


def _seed(text: str) -> int:
    """A ``--random-seed`` value: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0. Got {text!r}.")
    return value


def add_seed_argument(p: argparse.ArgumentParser, default: int | None = None) -> None:
    """``--random-seed``."""
    p.add_argument("--random-seed", type=_seed, default=default, metavar="INT",
                   help="seed for all random draws (same seed, same numbers)"
                   + (f"; default {default}" if default is not None else ""))


def add_format_argument(p: argparse.ArgumentParser) -> None:
    """``--format``: the format of a release's dataset files (``SyntheticData.save``)."""
    p.add_argument("--format", dest="file_format", default="parquet",
                   choices=["parquet", "csv", "sav", "zsav", "dta", "xpt"],
                   help="format of the dataset files (recorded in manifest.json): parquet "
                   "(default; keeps every dtype), csv, or an agency's format: sav, zsav (SPSS), "
                   "dta (Stata), xpt (SAS transport), written with the value labels, variable "
                   "labels and missing-value declarations of a SAS, Stata or SPSS ORIGINAL (xpt "
                   "holds no value labels: formats.sas beside the files defines them)")


def add_quiet_argument(p: argparse.ArgumentParser) -> None:
    """``--quiet``: the written path(s) and the warnings only (:mod:`bayes_risk.cli._run`)."""
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print only the path(s) written (stdout) and the warnings (stderr): no "
                   "summary, progress bars or messages")


def add_out_argument(p: argparse.ArgumentParser, what: str, *, required: bool = True,
                     default: str | None = None) -> None:
    """``--out DIR`` and ``--overwrite`` (the policy is applied by :mod:`bayes_risk.cli._run`)."""
    p.add_argument(
        "--out", required=required, default=default, metavar="DIR",
        help=f"output folder ({what}); must not exist or be empty unless --overwrite is given"
        + (f" (default {default})" if default else ""),
    )
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out (file or folder); the old one is replaced only "
                   "once the new output is complete")


def missing_labels(args: argparse.Namespace) -> dict[str, list[str]] | None:
    """The text labels declared missing with ``--missing-code COL=LABEL`` (``None``: none)."""
    from bayes_risk.data.missing import parse_missing_labels

    return parse_missing_labels(getattr(args, "missing_code", None)) or None


def numeric_columns(args: argparse.Namespace) -> list[str]:
    """The columns declared ``--count`` or ``--continuous``: a SAS, Stata or SPSS file's
    labelled column among them is read as its codes."""
    return [*(getattr(args, "count", None) or ()), *(getattr(args, "continuous", None) or ())]


def read_records_table(args: argparse.Namespace, name: str = "original",
                       argument: str = "ORIGINAL") -> pd.DataFrame:
    """Read the input table of ``args.<name>`` (named ``argument`` by its messages), which must
    hold at least one record, with the ``--missing-code`` labels (:func:`missing_labels`) and
    the :func:`numeric_columns` of the run."""
    from bayes_risk.data.io import read_table

    path = getattr(args, name)
    df = read_table(path, missing_labels=missing_labels(args), numeric=numeric_columns(args))
    if len(df.columns) == 0:
        raise ValidationError(f"{argument} {str(path)!r} has no columns.", code="EMPTY_TABLE")
    if len(df) == 0:
        from bayes_risk.data.statfiles import file_labels

        raise ValidationError(f"{argument} {str(path)!r} has a header but no records; expected at "
                              "least one record" + (
                                  " (a SAS, Stata or SPSS file whose header declares no records: "
                                  "empty, or damaged where it counts them; export it again)"
                                  if file_labels(df) is not None else "") + ".",
                              code="EMPTY_TABLE")
    return df


def read_inputs(args: argparse.Namespace, *, row_order: bool = True) -> tuple[pd.DataFrame, Any]:
    """ORIGINAL and the release SYN of a run (``--missing-code`` labels applied), ORIGINAL
    checked against the fingerprint in SYN's manifest (``ORIGINAL_DIFFERS``, as the audit's
    first check) before any model is read or rebuilt; ``row_order``: whether the command pairs
    record i of ORIGINAL with row i of each dataset (else the same records in another order
    are accepted), as :func:`~bayes_risk.data.fingerprint.check_original`."""
    import warnings

    from bayes_risk.data.fingerprint import check_original
    from bayes_risk.data.synthetic import read_synthetic

    if getattr(args, "model_function", None) is not None and getattr(args, "model", None) in (
            None, "release"):
        raise ValidationError("--model-function names the function of a PyMC model folder given "
                              "as --model DIR; give --model DIR, or leave --model-function out.",
                              code="OPTION_REQUIRED")
    # the options first, then the two reads: the original, then the release in one pass
    original = read_records_table(args)
    release = read_synthetic(args.synthetic, like=original, missing_labels=missing_labels(args),
                             allow_different_original=args.allow_different_original,
                             recoded=getattr(args, "recoded", None))
    with warnings.catch_warnings():
        # only the error matters here: the measure warns again under --allow-different-original
        warnings.simplefilter("ignore")
        check_original(original, release, row_order=row_order)
    return original, release


def schema_from_args(df: pd.DataFrame, args: argparse.Namespace, **kw: Any):
    """Infer the schema of ``df`` with the type overrides given on the command line."""
    from bayes_risk._specs import argument_values
    from bayes_risk.data import infer_schema
    from bayes_risk.data.missing import parse_missing_codes

    return infer_schema(df, **argument_values(infer_schema, vars(args)), **kw,
                        missing_codes=parse_missing_codes(getattr(args, "missing_code", None))
                        or None)


def release_schema(original: pd.DataFrame, syn: Any, args: argparse.Namespace):
    """The release manifest's schema with the command line's type options on top
    (:func:`bayes_risk.data.provenance.release_schema`; ``None``: as it is)."""
    from bayes_risk.data.missing import parse_missing_codes
    from bayes_risk.data.provenance import release_schema

    given = [c for a in _TYPES for c in (getattr(args, a, None) or ())]
    codes = getattr(args, "missing_code", None) or []
    if syn.schema is not None and not given and not codes:
        return None
    return release_schema(syn, schema_from_args(original, args), given,
                          list(parse_missing_codes(codes)))


def add_dask_arguments(p: argparse.ArgumentParser, unit: str) -> None:
    """``--scheduler ADDRESS`` | ``--workers N`` (mutually exclusive) and ``--partition-size``."""
    g = p.add_argument_group("scale-out with Dask (optional; needs bayes-risk[dask]; default: in "
                             "process)")
    x = g.add_mutually_exclusive_group()
    x.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address of a running Dask scheduler, e.g. tcp://host:8786")
    x.add_argument("--workers", type=int, default=None, metavar="N",
                   help="start a local Dask cluster with N worker processes")
    g.add_argument("--partition-size", type=int, default=None, metavar="N",
                   help=f"{unit} per Dask task (default: the library's; identification "
                   "spreads each run's targets over the workers)")
    g.add_argument("--dashboard", action="store_true",
                   help="with --workers: serve the local cluster's Dask dashboard (port 8787, "
                   "or a free one; its address is printed). Default: off")


def print_summary(lines: Sequence[str], out: str | Path,
                  written: Sequence[str | Path] | None = None) -> None:
    """Print a run's summary on stdout: the headline, indented lines, and the folder written;
    with ``--quiet`` only the path(s) written (``written``, else ``out``)."""
    import sys

    from bayes_risk._terminal import is_quiet
    from bayes_risk.cli._run import shown

    folder = Path(out)
    if is_quiet():
        body = [shown(p) for p in (written or [folder])]
    else:
        names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        if len(names) > 6:  # m synthetic datasets: the first and last few
            names = [*names[:3], "...", *names[-2:]]
        if len(lines) > 1 and set(lines[1].strip()) == {"="}:
            lines = [lines[0], *lines[2:]]  # a summary's title is the headline, not underlined
        # (a demo's steps write into its temporary folder: their lines name the final one)
        body = [shown(lines[0]), *(f"  {shown(ln)}" for ln in lines[1:])]
        body.append(f"  wrote {shown(folder)}" + (f": {', '.join(names)}" if names else ""))
    # one write: a Ctrl-C never leaves half a line for the interrupt line to follow
    sys.stdout.write("\n".join(body) + "\n")
    sys.stdout.flush()


def write_run(args: argparse.Namespace, lines: Sequence[str], summary: Any = None, *,
              tables: Mapping[str, Any] | None = None, figures: Mapping[str, Any] | None = None,
              dpi: int = 100, extra: Any = None) -> None:
    """Write a run's files into ``--out`` at once (:func:`bayes_risk.cli._run.output_dir`:
    nothing half-written), then print its summary ``lines`` (:func:`print_summary`):
    what ``extra(folder)`` writes (a model, a release); ``summary.json``; the ``tables``, file
    name -> a DataFrame (written by pandas without its index) or a function writing that path;
    the ``figures``, file name -> (result, plot kind)."""
    from bayes_risk._io import write_json
    from bayes_risk.cli._run import output_dir

    with output_dir(args) as tmp:
        if extra is not None:  # first: a model or a release is saved into an empty folder
            extra(tmp)
        if summary is not None:
            write_json(tmp / "summary.json", summary)
        for name, table in (tables or {}).items():
            table(tmp / name) if callable(table) else table.to_csv(tmp / name, index=False)
        if figures:
            from bayes_risk.results._base import plot_figure

            for name, (result, kind) in figures.items():
                plot_figure(result, kind).savefig(tmp / name, dpi=dpi)
    print_summary(lines, args.out)


def read_model(args: argparse.Namespace, original: pd.DataFrame) -> Any:
    """The fitted model of ``--model``, checked against ORIGINAL
    (:func:`~bayes_risk.models.load_model`); under ``--quiet`` without its progress bars (those
    of the augmented refits)."""
    from bayes_risk.models import load_model

    model = load_model(args.model, original=original,
                       allow_different_original=args.allow_different_original,
                       model_function=args.model_function)
    if args.quiet and hasattr(model, "progressbar"):
        model.progressbar = False
    return model


def read_holdout(args: argparse.Namespace) -> pd.DataFrame | None:
    """The ``--holdout`` table (``None`` when not given)."""
    if args.holdout is None:
        return None
    return read_records_table(args, "holdout", "--holdout")
