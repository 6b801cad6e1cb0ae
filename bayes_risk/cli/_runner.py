"""The one runner of the sub-commands whose run is a library call (standard library only at
module level: a parser declares its ``Run``).

Such a run reads ORIGINAL (and the release SYN), builds the function's specs and arguments from
the options (``bayes_risk._specs.spec_values`` / ``argument_values``: the library checks them),
calls the function, and writes the result's ``to_dict`` with the inputs as ``summary.json``, its
tables and figures, then prints the result's own ``headline()``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any

from bayes_risk.cli import _common

__all__ = ["Run"]


#: what a ``Run`` may read besides ORIGINAL and SYN: name -> (the function's keyword, reader of
#: the options and what was read before), read in the order the row lists them
_READS: dict[str, tuple[str, Callable[[argparse.Namespace, dict[str, Any]], Any]]] = {
    "holdout": ("holdout", lambda args, v: _common.read_holdout(args)),
    "model": ("model", lambda args, v: _common.read_model(args, v["original"])),
    "records": ("records", lambda args, v: _common.parse_records(args.records,
                                                                 len(v["original"]))),
    "schema": ("schema", lambda args, v: _common.release_schema(v["original"], v["synthetic"],
                                                                args)),
    "random_seed": ("random_seed", lambda args, v: args.random_seed),
    # the seed given, else a fresh one: recorded in summary.json, the run repeats exactly
    "fresh_seed": ("random_seed", lambda args, v: _common.run_seed(args)),
    "progressbar": ("progressbar", lambda args, v: not args.quiet),
    "allow_other_model": ("allow_other_model", lambda args, v: args.allow_other_model),
}


@dataclasses.dataclass(frozen=True)
class Run:
    """A sub-command run by the runner: what it reads, which function it calls, what it writes.

    Parameters
    ----------
    function : str
        The library function, ``"module:name"`` written out (imported when the run starts).
    specs : mapping
        The function's keyword -> spec class, built from the spec's options before any file is
        read.
    arguments : tuple
        The tables of the function's arguments whose options are passed when given.
    release : bool
        Whether the run reads the release SYN beside ORIGINAL.
    reads : tuple of str
        What else it reads, in order (``_READS``: ``holdout``, ``model``, ``records``,
        ``schema``, ``random_seed``, ``fresh_seed``, ``progressbar``, ``allow_other_model``).
    positional : tuple of str
        The function's leading arguments, by name (``model``, ``original``, ``synthetic``).
    inputs : tuple of str
        The options recorded in ``summary.json``'s ``inputs``, in order, as given.
    tables : mapping
        File name -> the result's attribute path (``"quality.shapes"``) or a function of the
        result giving a DataFrame (written without its index) or a writer of the path; a
        ``None`` table is not written.
    figures : mapping
        File name -> the result's plot kind.
    """

    function: str
    specs: Mapping[str, type] = dataclasses.field(default_factory=dict)
    arguments: tuple[Mapping[str, Any], ...] = ()
    release: bool = True
    reads: tuple[str, ...] = ()
    positional: tuple[str, ...] = ("original", "synthetic")
    inputs: tuple[str, ...] = ("original", "synthetic")
    tables: Mapping[str, str | Callable[[Any], Any]] = dataclasses.field(default_factory=dict)
    figures: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __call__(self, args: argparse.Namespace) -> int:
        """Run the sub-command of ``args``; the exit status."""
        from bayes_risk._specs import argument_values, spec_values

        given = vars(args)
        # the settings' checks before the inputs are read
        keywords: dict[str, Any] = {k: spec(**spec_values(spec, given))
                                    for k, spec in self.specs.items()}
        for table in self.arguments:
            keywords.update(argument_values(table, given))
        values: dict[str, Any] = {}
        if self.release:
            values["original"], values["synthetic"] = _common.read_inputs(args)
        else:
            values["original"] = _common.read_records_table(args.original, "ORIGINAL")
        for name in self.reads:
            keyword, read = _READS[name]
            values[keyword] = read(args, values)
        module, _, name = self.function.partition(":")
        function = getattr(importlib.import_module(module), name)
        leading = [values.pop(k) for k in self.positional]
        result = function(*leading, **values, **keywords)
        summary = result.to_dict()
        summary["inputs"] = {k: _given(given[k]) for k in self.inputs}
        tables = {file: _table(result, how) for file, how in self.tables.items()}
        _common.write_run(args, result.headline().splitlines(), summary,
                  tables={file: t for file, t in tables.items() if t is not None},
                  figures={file: (result, kind) for file, kind in self.figures.items()})
        return 0


def _given(value: Any) -> Any:
    """An input option as ``summary.json`` records it: paths as text, a list of them a list."""
    if value is None:
        return None
    return [str(v) for v in value] if isinstance(value, list | tuple) else str(value)


def _table(result: Any, how: str | Callable[[Any], Any]) -> Any:
    """A table of ``result`` (:attr:`Run.tables`)."""
    if callable(how):
        return how(result)
    for part in how.split("."):
        result = getattr(result, part)
    return result
