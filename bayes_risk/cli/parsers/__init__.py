"""The sub-commands' arguments: ``bayes_risk.cli.parsers.NAME.add_parser(sub)`` with the
handler, the command's row of the runner (``RUN``, a ``bayes_risk.cli._runner.Run``) or
``Handler("bayes_risk.cli.NAME")``; only the standard library and light helpers are
imported (a test checks ``sys.modules``). The options of a spec's fields are declared by the spec
(:func:`add_spec_options`; the spec modules import no numpy at module level).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["Handler", "input_arguments", "option_names", "command_line_text", "INPUTS_ATTR",
           "add_spec_options", "add_argument_options"]

#: attribute of the parsed namespace naming the input arguments (set by
#: :func:`bayes_risk.cli.build_parser` from :func:`input_arguments`)
INPUTS_ATTR = "_input_arguments"

#: an argument declared with one of these metavars names input files or folders: an input of its
#: sub-command (recorded in ``summary.json``; ``--out`` may never hold or replace it)
_INPUT_METAVAR = re.compile(r"\b(ORIGINAL|SYN|RELEASE|FILE|DIR|SOURCE)\b")
#: the output itself is declared ``--out DIR``
_NOT_INPUTS = frozenset({"out"})


def input_arguments(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    """Destinations of the arguments of ``parser`` whose metavar names a path
    (:data:`_INPUT_METAVAR`), ``--out`` excepted."""
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


#: arguments of the library set by an option of another name, by the option's destination (the
#: option a message names for them); arguments of one call only are named where it is made
#: (``command_line_options`` around the call); an option declared by a spec field names the
#: field itself (:func:`add_spec_options`)
LIBRARY_NAMES: dict[str, tuple[str, ...]] = {
    "missing_code": ("missing_codes", "missing_labels"),
    "radius_sweep": ("radii",),
    "synthesize": ("synthesized",),
    "known_sweep": ("candidates",),
    "target": ("targets",),
    "membership_selection": ("selection",),
    "combining_rules": ("rules", "OverlapSpec.rules"),
    "pmse": ("pmse_method",),
    "targets": ("PopulationSpec.targets",),
    "method_per_column": ("SynthesisSpec.method",),
    "predictor_matrix": ("SynthesisSpec.predictor_matrix",),
    "threshold": ("thresholds", "AttackSpec.threshold"),
    "prior": ("AttackSpec.prior",),
    "population_size": ("AttackSpec.population_size",),
    "bootstrap": ("AttackSpec.bootstrap", "EstimatorSpec.bootstrap"),
    "workers": ("n_workers",),
    # the scenario's kind: attribute_run's scenario (its kinds: ScenarioSpec's)
    "scenario": ("ScenarioSpec.kind",),
}


def option_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each argument of ``parser`` by its destination, as the user writes it (``--max-order``,
    ``ORIGINAL``), plus the library arguments an option sets under another name
    (:data:`LIBRARY_NAMES`): how the command line's messages name them."""
    out: dict[str, str] = {}
    actions = [a for a in parser._actions if a.help is not argparse.SUPPRESS
               and a.dest not in (argparse.SUPPRESS, "help")]
    for action in actions:
        if action.option_strings:
            longs = [o for o in action.option_strings if o.startswith("--")]
            out.setdefault(action.dest, (longs or action.option_strings)[0])
        else:
            mv = action.metavar
            out.setdefault(action.dest, " ".join(mv) if isinstance(mv, tuple)
                           else str(mv or action.dest.upper()))
    for action in actions:  # then the library's names of the options (a spec's field ...)
        for n in getattr(action, "library_names", ()):
            out.setdefault(n, out[action.dest])
    for dest, names in LIBRARY_NAMES.items():
        if dest in out:
            for n in names:
                out.setdefault(n, out[dest])
    return out


#: a quoted text of a message (a column name or value, ``repr``'d): never rewritten
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
#: what follows an argument a message starts with (``keys contain ...``, ``tune must ...``)
_FIRST_VERB = re.compile(r"\s*(:|\(|(must|is|are|contains?|lists|names|holds|has|have|needs?|"
                         r"gives|selects|applies)\b)")
#: a keyword argument given a list (``skip=['attribute']``)
_LIST_ARG = re.compile(r"(?<![\w.\-])([a-z][a-z0-9]*(?:_[a-z0-9]+)*)=\[([^\]]*)\]")
#: a name of the library in a message: an identifier (an attribute of a settings class,
#: ``MatchSpec.r_min``, too), with ``=VALUE`` when written as a keyword argument (``max_order=0``)
_NAME = re.compile(r"(?<![\w.\-])((?:[A-Z][A-Za-z]*\.)?[a-z][a-z0-9]*(?:_[a-z0-9]+)*)"
                   r"(?![\w(\[])(=(?:\[[^\]]*\]|[^\s,;)]+))?")


def command_line_text(text: str, options: Mapping[str, str]) -> str:
    """A message of the library with the arguments it names in Python's words given as the
    sub-command's options (:func:`option_names`): keyword arguments, names with an underscore and
    a leading argument name; quoted texts are left as they are."""
    def listed(m: re.Match[str]) -> str:  # skip=['a', 'b'] -> --skip a b
        opt = options.get(m.group(1))
        if opt is None or text[:m.start()].rstrip().split(" ")[-1].startswith("-"):
            return m.group(0)
        items = [x.strip().strip("'\"") for x in m.group(2).split(",") if x.strip()]
        return f"{opt} {' '.join(items)}"

    text = _LIST_ARG.sub(listed, text)
    out, last = [], 0
    for q in _QUOTED.finditer(text):
        out.append(_rewrite(text[last:q.start()], options, at_start=last == 0))
        out.append(q.group(0))
        last = q.end()
    out.append(_rewrite(text[last:], options, at_start=last == 0))
    return "".join(out)


def _rewrite(part: str, options: Mapping[str, str], *, at_start: bool) -> str:
    def sub(m: re.Match[str]) -> str:
        name, value = m.group(1), m.group(2)
        opt = options.get(name)
        before = part[:m.start()].rstrip()
        if opt is None or before.split(" ")[-1].startswith("-"):
            return m.group(0)
        if value:
            if opt.startswith("--no-") and value[1:] == "False":
                return opt  # suda=False: the flag --no-suda
            return f"{opt} {value[1:]}" if opt.startswith("-") else f"{opt} ({value[1:]})"
        first = at_start and not before
        if "_" in name or "." in name or (first and _FIRST_VERB.match(part[m.end():])
                                          is not None):
            return opt
        return m.group(0)

    return _NAME.sub(sub, part)


def add_spec_options(parser: argparse.ArgumentParser, *specs: type,
                     fields: tuple[str, ...] | None = None, omit: tuple[str, ...] = (),
                     changes: Mapping[str, Any] | None = None) -> None:
    """Declare on ``parser`` the command-line options of the fields of ``specs`` (their
    ``metadata["cli"]``, :func:`bayes_risk._specs.cli_option`, and the options a field holding a
    spec takes of it, :func:`bayes_risk._specs.cli_spec`), in field order, each in the argument
    group its option names (the parser's group of that title, else a new one); ``fields``: only
    those fields' options; ``omit``: not those (declared by a later call, further down the
    help); ``changes``: attributes of the options replaced, as :func:`~bayes_risk._specs.cli_spec`
    replaces them (another command's help of the same option).

    An option not given is ``None``: its field keeps the spec's default
    (:func:`bayes_risk._specs.spec_values`), and the spec checks the values, its messages
    naming the option (the action's ``library_names``: ``MatchSpec.r_min`` and ``r_min`` are
    ``--r-min``; its ``spec_field``: ``MatchSpec.r_min``).
    """
    from bayes_risk._specs import cli_fields, cli_specs

    for spec in specs:
        options = [(spec, f, opt) for f, opt in cli_fields(spec)]
        options += [(inner, f, opt) for _, inner, held in cli_specs(spec) for f, opt in held]
        for owner, f, opt in options:
            if (fields is not None and f.name not in fields) or f.name in omit:
                continue
            action = _declare(parser, dataclasses.replace(opt, **changes or {}))
            action.spec_field = f"{owner.__name__}.{f.name}"
            action.library_names = (action.spec_field, f.name)


def add_argument_options(parser: Any, *functions: Any,
                         fields: tuple[str, ...] | None = None) -> None:
    """Declare on ``parser`` the options of library functions' parameters
    (``"module:name"``, each parameter's ``Annotated[T, cli_option(...)]``, read without
    importing the module: :func:`bayes_risk._specs.cli_arguments`), in signature order (or of
    a table of a model's settings, in table order; ``fields``: only those parameters'), as
    :func:`add_spec_options` declares a spec's (``parser``: a parser or one of its argument
    groups): the run passes the options given
    (:func:`bayes_risk._specs.argument_values`), and the function checks them by the same
    declaration, its messages naming the option."""
    from bayes_risk._specs import cli_arguments

    for function in functions:
        for name, opt in cli_arguments(function):
            if fields is None or name in fields:  # none of an argument's several flags is it
                _declare(parser, opt).library_names = () if opt.then else (name,)


def _declare(parser: argparse.ArgumentParser, opt: Any) -> Any:
    """The argument of the option ``opt`` (a ``CliOption``), in the group its ``group`` names."""
    where = parser
    if opt.group is not None:
        where = next((g for g in parser._action_groups if g.title == opt.group), None) or (
            parser.add_argument_group(opt.group))
    return where.add_argument(opt.flag, default=None, help=opt.help, **opt.argparse_keywords())


class Handler:
    """The ``function`` of a sub-command's ``module``, imported when it is called."""

    def __init__(self, module: str, function: str = "run") -> None:
        self.module = module
        self.function = function

    def __call__(self, args: argparse.Namespace) -> int | None:
        return getattr(importlib.import_module(self.module), self.function)(args)

    def __repr__(self) -> str:
        return f"Handler({self.module!r}, {self.function!r})"
