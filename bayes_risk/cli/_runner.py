"""The one runner of the sub-commands whose run is one library call: a parser declares its
``Run`` (standard library only at module level)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any

from bayes_risk._specs import parse_records
from bayes_risk.cli import _common

__all__ = ["Run", "cluster"]

#: what a ``Run`` may read besides ORIGINAL and SYN, in the order it lists them: name -> (the
#: function's keyword, reader of the options and of what was read before)
_READS: dict[str, tuple[str, Callable[[argparse.Namespace, dict[str, Any]], Any]]] = {
    "holdout": ("holdout", lambda args, v: _common.read_holdout(args)),
    "model": ("model", lambda args, v: _common.read_model(args, v["original"])),
    "records": ("records", lambda args, v: parse_records(args.records, len(v["original"]))),
    "schema": ("schema", lambda args, v: _common.release_schema(v["original"],
                                                                v["synthetic"], args)),
    # ORIGINAL's types with the type options on top (a command that reads no release)
    "types": ("schema", lambda args, v: _common.schema_from_args(v["original"], args)),
    "random_seed": ("random_seed", lambda args, v: args.random_seed),
    # the seed given, else a fresh one: recorded in summary.json, the run repeats exactly
    "fresh_seed": ("random_seed", lambda args, v: _fresh_seed(args)),
    "progressbar": ("progressbar", lambda args, v: not args.quiet),
    "allow_other_model": ("allow_other_model", lambda args, v: args.allow_other_model),
}


def cluster(args: argparse.Namespace) -> Any:
    """The executor of ``--scheduler`` / ``--workers`` (``--partition-size`` its tasks)."""
    from bayes_risk.distributed import cluster_executor

    return cluster_executor(scheduler=args.scheduler, workers=args.workers,
                            partition_size=args.partition_size, dashboard=args.dashboard)


def _fresh_seed(args: argparse.Namespace) -> int:
    from bayes_risk._rng import given_or_fresh  # numpy: imported when a run starts

    return given_or_fresh(args.random_seed)


@dataclasses.dataclass(frozen=True)
class Run:
    """A sub-command that reads ORIGINAL (and SYN, when its ``inputs`` name it), calls
    ``function`` with the options' specs and arguments (the library checks them) and what it
    ``reads``, writes the result's ``to_dict()`` with the ``inputs`` as ``summary.json`` (none
    of its own for ``None``), its ``tables`` and ``figures``, and prints the result's
    ``text_lines()`` (a run of several parts), else its ``headline()``.

    Parameters
    ----------
    function : str
        The library function, ``"module:name"`` (imported when the run starts); its
        parameters that declare an option (``param: Annotated[T, cli_option(...)]``,
        :func:`bayes_risk._specs.cli_arguments`) are passed when their option is given.
    passes : tuple
        The functions ``function`` passes its other keywords to (``**options``), whose
        options given are passed as its own.
    specs : mapping
        Keyword -> spec class, built from its options before any file is read, or a function
        of the options building it; ``"group.keyword"``: that keyword of an argument group's
        mapping.
    argument_groups : mapping
        Keyword -> the function (``"module:name"``) of one of the calls ``function`` makes,
        whose options given are passed together as that one keyword's mapping.
    check : callable, optional
        A check of the options against each other (``ValidationError``), before any file is
        read.
    reads : tuple
        What it reads, in order, after ORIGINAL and SYN: keywords of ``_READS``, or the
        command's own reads, (keyword, function of the options and of what was read before).
    inputs : tuple
        The options recorded in ``summary.json``'s ``inputs``, in order: a name (``"NAME?"``:
        recorded when given), or (name, function of the options and of what was read).
    tables : mapping
        File name -> a function of the result giving a DataFrame (written without its
        index), a writer of the path or ``None`` (nothing written).
    figures : mapping
        File name -> the result's plot kind.
    files : callable, optional
        The result's further tables and figures: a function of the result and the options
        giving them as ``write_run`` takes them (e.g. ``lambda result, args: result.files()``).
    text : callable, optional
        What is printed of the result, a function of the result and the options (default: its
        ``text_lines()``, else its ``headline()``), e.g.
        ``lambda result, args: result.summary().as_text()``.
    save : callable, optional
        A function of the result and the options saving what the result holds (a release)
        into the empty output folder it is given, before the other files.
    dask : bool
        The function's ``executor``: the Dask cluster of ``--scheduler`` / ``--workers``
        (``--partition-size`` its tasks), else ``None`` (in process).
    hand_over : bool
        ORIGINAL and SYN passed as the list ``inputs``, which the function empties once it has
        encoded them (they are freed before its work).
    options : callable, optional
        A function of the options giving library names -> the options that set them, which
        the function's messages use (``command_line_options``) beside the parser's.
    dpi : int
        The figures' resolution.
    row_order : bool
        Whether the function pairs record i of ORIGINAL with row i of each dataset: ORIGINAL
        is checked against the release's fingerprint before anything else is read
        (``read_inputs``), the same records in another order accepted when not.
    """

    function: str
    passes: tuple[str, ...] = ()
    specs: Mapping[str, type | Callable[[argparse.Namespace], Any]] = dataclasses.field(
        default_factory=dict)
    argument_groups: Mapping[str, str] = dataclasses.field(default_factory=dict)
    check: Callable[[argparse.Namespace], None] | None = None
    reads: tuple[str | tuple[str, Callable[[argparse.Namespace, dict[str, Any]], Any]], ...] = ()
    inputs: tuple[str | tuple[str, Callable[[argparse.Namespace, dict[str, Any]], Any]],
                  ...] = ("original", "synthetic")
    tables: Mapping[str, Callable[[Any], Any]] = dataclasses.field(default_factory=dict)
    figures: Mapping[str, str] = dataclasses.field(default_factory=dict)
    files: Callable[[Any, argparse.Namespace], tuple[Mapping[str, Any], Mapping[str, Any]]] | \
        None = None
    text: Callable[[Any, argparse.Namespace], str] | None = None
    save: Callable[[Any, argparse.Namespace, Any], None] | None = None
    dask: bool = False
    hand_over: bool = False
    options: Callable[[argparse.Namespace], Mapping[str, str]] | None = None
    dpi: int = 100
    row_order: bool = True

    def __call__(self, args: argparse.Namespace) -> int:
        """Run the sub-command of ``args``; the exit status."""
        from bayes_risk._specs import argument_values, spec_values
        from bayes_risk.cli._run import command_line_options

        given = vars(args)  # the options' checks come before any file is read
        if self.check is not None:
            self.check(args)
        kw: dict[str, Any] = {k: spec(**spec_values(spec, given)) if isinstance(spec, type)
                              else spec(args) for k, spec in self.specs.items()}
        for function in (self.function, *self.passes):
            kw.update(argument_values(function, given))
        kw.update({k: argument_values(f, given) for k, f in self.argument_groups.items()})
        for k in [k for k in kw if "." in k]:  # a spec of one of the calls: in its mapping
            group, _, keyword = k.partition(".")
            kw[group][keyword] = kw.pop(k)
        if "synthetic" in self.inputs:
            kw["original"], kw["synthetic"] = _common.read_inputs(args, row_order=self.row_order)
        else:
            kw["original"] = _common.read_records_table(args)
        for read in self.reads:
            keyword, reader = _READS[read] if isinstance(read, str) else read
            kw[keyword] = reader(args, kw)
        recorded = {}  # summary.json's inputs
        for entry in self.inputs:
            k, value = entry if isinstance(entry, tuple) else (entry.rstrip("?"), None)
            value = value(args, kw) if value is not None else given[k]
            if value is not None or not (isinstance(entry, str) and entry.endswith("?")):
                recorded[k] = None if value is None else [str(v) for v in value] \
                    if isinstance(value, list) else str(value)
        if self.hand_over:  # the function frees them: this run holds them in the list alone
            kw["inputs"] = [kw.pop("original"), kw.pop("synthetic")]
        module, _, name = self.function.partition(":")
        function = getattr(importlib.import_module(module), name)
        with cluster(args) if self.dask else contextlib.nullcontext() as ex, \
                command_line_options(self.options(args) if self.options else {}):
            if self.dask:
                kw["executor"] = ex
            result = function(**kw)
        del kw  # what the function was given (a model, replicates): freed before the writing
        summary = result.to_dict()
        if summary is not None:
            summary["inputs"] = recorded
        tables = {file: how(result) for file, how in self.tables.items()}
        figures = {file: (result, kind) for file, kind in self.figures.items()}
        if self.files is not None:
            more_tables, more_figures = self.files(result, args)
            tables, figures = {**tables, **more_tables}, {**figures, **more_figures}
        lines = (self.text(result, args).splitlines() if self.text is not None
                 else result.text_lines() if hasattr(result, "text_lines")
                 else result.headline().splitlines())
        save = self.save
        _common.write_run(args, lines, summary,
                          tables={file: t for file, t in tables.items() if t is not None},
                          figures=figures, dpi=self.dpi,
                          extra=None if save is None else lambda tmp: save(result, args, tmp))
        return 0

