"""The converter of every grouped argument (``match=``, ``estimator=``, ``settings=`` ...) to
its spec class and :func:`cli_option`, by which a spec field or a function's parameter
(``param: Annotated[T, cli_option(...)]``, :func:`parameter_metadata`) declares its
command-line option (the checks of a value: :mod:`bayes_risk._constraints`).

Imports only the standard library at module level: the command line builds its parsers from
the spec classes (``bayes-risk --help`` imports no numpy).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import importlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bayes_risk.exceptions import ValidationError


@dataclass(frozen=True)
class CliOption:
    """The command-line option of a spec field, held in the field's ``metadata["cli"]``
    (:func:`cli_option`), of a function's parameter (``Annotated[T, cli_option(...)]``) or of
    a table of a model's settings (``{name: cli_option(...)}``); the sub-commands that take it
    declare it from here.

    ``choices`` are the field's values; the option shows them with ``-`` for ``_``
    (``quantile-sd``) and takes either spelling, unless ``dashes`` is false (shown and taken as
    spelled, ``conditional_us``). ``parse`` turns the option's text into the field's value
    (``None``: the text, or ``type``'s value); the spec checks the value. ``const`` is the value
    of an option given without its value (``nargs="?"``). ``group`` names the argument group of
    the sub-command's help the option is listed in. ``dest`` is where the parsed value is
    stored (default: the flag's name, ``--min-leaf`` → ``min_leaf``). ``then``: the
    destinations of the options whose values follow this option's in the parameter's value (an
    argument assembled from several flags: ``known`` of ``--known-unsynthesized`` then
    ``--known-synthesized``).
    """

    flag: str
    help: str
    metavar: str | tuple[str, ...] | None = None
    choices: tuple[str, ...] | None = None
    type: Callable[[str], Any] | None = None
    parse: Callable[[Any], Any] | None = None
    nargs: str | int | None = None
    action: str | None = None
    group: str | None = None
    required: bool = False
    const: Any = None
    dashes: bool = True
    dest: str | None = None
    then: tuple[str, ...] = ()

    def argparse_keywords(self) -> dict[str, Any]:
        """The keywords of ``add_argument`` the option is declared with (``default`` aside)."""
        kwargs = {k: getattr(self, k)
                  for k in ("metavar", "type", "nargs", "action", "required", "const", "dest")
                  if getattr(self, k)}
        if self.choices is not None:
            kwargs["choices"] = [_shown(c, self.dashes) for c in self.choices]
            if self.dashes and self.type is None and any("_" in c for c in self.choices):
                kwargs["type"] = _dashed  # bayes_bootstrap is taken as bayes-bootstrap
        return kwargs

    def value(self, given: Any) -> Any:
        """The field's value of the option's parsed ``given`` value."""
        if self.choices is not None and isinstance(given, str):
            given = {_shown(c, self.dashes): c for c in self.choices}.get(given, given)
        return given if self.parse is None else self.parse(given)

    @property
    def key(self) -> str:
        """Where argparse stores the option's value (``dest``, else the flag's name)."""
        return self.dest or self.flag.lstrip("-").replace("-", "_")

    @property
    def usage(self) -> str:
        """The option as an error message shows it (``--identifying COL [COL ...]``)."""
        meta = self.metavar or "VALUE"
        meta = " ".join(meta) if isinstance(meta, tuple) else str(meta)
        return (f"{self.flag} {meta} [{meta} ...]" if self.nargs == "+"
                else f"{self.flag} {meta}")


def _shown(choice: str, dashes: bool) -> str:
    return choice.replace("_", "-") if dashes else choice


def _dashed(text: str) -> str:
    """An option's text with ``-`` for ``_``: a choice is taken in either spelling."""
    return text.replace("_", "-")


class GroupedSettings:
    """What a frozen spec grouping a model's settings (``sampling=Sampling(...)``,
    ``trees=TreeOptions(...)``) shares: scikit-learn's ``get_params`` (a model lists the fields
    as ``<setting>__<field>``) and a ``repr`` of the fields given, as scikit-learn prints
    estimators. Declare the dataclass with ``repr=False`` so that this ``repr`` is kept."""

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The fields.

        Parameters
        ----------
        deep : bool
            Unused (the fields hold no estimators); scikit-learn's signature.

        Returns
        -------
        dict
        """
        return {f.name: getattr(self, f.name)
                for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def __repr__(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items() if v is not None)
        return f"{type(self).__name__}({given})"


def cli_option(flag: str, help: str, **kwargs: Any) -> dict[str, CliOption]:
    """``metadata=`` of a spec field set by the command-line option ``flag``, or the metadata of
    a function's parameter, ``param: Annotated[T, cli_option(...)]`` (see :class:`CliOption` for
    ``kwargs``).

    Examples
    --------
    >>> from dataclasses import dataclass, field
    >>> @dataclass(frozen=True)
    ... class Spec:
    ...     size: int = field(default=1, metadata=cli_option("--size", "the size", type=int))
    >>> cli_fields(Spec)[0][1].flag
    '--size'
    """
    return {"cli": CliOption(flag, help, **kwargs)}


def cli_spec(spec: type, **options: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata=`` of a field holding a ``spec`` (a spec class whose fields declare options,
    :func:`cli_option`) of which the command line sets only the fields named in ``options``,
    each by its own option with the attributes of :class:`CliOption` given there replaced.

    Examples
    --------
    >>> from dataclasses import dataclass, field
    >>> @dataclass(frozen=True)
    ... class Inner:
    ...     size: int = field(default=1, metadata=cli_option("--size", "the size", type=int))
    ...     kind: str = field(default="a", metadata=cli_option("--kind", "the kind"))
    >>> @dataclass(frozen=True)
    ... class Outer:
    ...     inner: Inner = field(default=Inner(), metadata=cli_spec(
    ...         Inner, kind={"flag": "--inner-kind"}))
    >>> [(f.name, opt.flag) for f, opt in cli_specs(Outer)[0][2]]
    [('kind', '--inner-kind')]
    >>> spec_values(Outer, {"inner_kind": "b"})
    {'inner': Inner(size=1, kind='b')}
    """
    return {"cli_spec": (spec, options)}


def cli_fields(spec: type) -> list[tuple[dataclasses.Field, CliOption]]:
    """The fields of the spec class ``spec`` that have a command-line option, in field order."""
    return [(f, f.metadata["cli"]) for f in dataclasses.fields(spec) if "cli" in f.metadata]


def cli_specs(spec: type) -> list[tuple[dataclasses.Field, type,
                                        list[tuple[dataclasses.Field, CliOption]]]]:
    """The fields of ``spec`` holding a spec set by options (:func:`cli_spec`), in field order:
    each with its spec class and the fields of that class it takes, with their options."""
    out = []
    for f in dataclasses.fields(spec):
        if "cli_spec" in f.metadata:
            inner, options = f.metadata["cli_spec"]
            own = {g.name: (g, opt) for g, opt in cli_fields(inner)}
            out.append((f, inner, [(own[name][0], dataclasses.replace(own[name][1], **changes))
                                   for name, changes in options.items()]))
    return out


def spec_values(spec: type, given: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``spec`` set by the options in ``given`` (by the options' destinations,
    as argparse stores them): each given option's value (:meth:`CliOption.value`); an option not
    given (``None``) leaves its field at the spec's default. A field holding a spec
    (:func:`cli_spec`) is that spec of its given options, if any."""
    out = _given([(f.name, opt) for f, opt in cli_fields(spec)], given)
    for f, inner, options in cli_specs(spec):
        values = _given([(g.name, opt) for g, opt in options], given)
        if values:
            out[f.name] = inner(**values)
    return out


#: a function whose parameters declare their options and checks (``Annotated[T, cli_option(...)
#: | checked(...)]``): the function, or ``"module:name"`` (read without importing the module)
Arguments = Mapping[str, Mapping[str, Any]] | Callable[..., Any] | str


def cli_arguments(arguments: Arguments) -> list[tuple[str, CliOption]]:
    """The arguments that have a command-line option, in order: of a table of a model's
    settings (name -> metadata, as a spec field's: :func:`cli_option`, ``checked``), or the
    parameters of a function declared ``param: Annotated[T, cli_option(...)] = default``
    (:func:`parameter_metadata`).

    Examples
    --------
    >>> [(name, opt.flag) for name, opt in cli_arguments(
    ...     "bayes_risk.membership.api:membership_risk")]
    [('records', '--records'), ('population', '--population'), ('selection', '--selection')]
    """
    table = arguments if isinstance(arguments, Mapping) else parameter_metadata(arguments)
    return [(name, meta["cli"]) for name, meta in table.items() if "cli" in meta]


def argument_values(arguments: Arguments, given: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments set by the options in ``given`` (as :func:`spec_values`, for a table of a
    model's settings or a function's parameters, :func:`cli_arguments`): an option not given
    leaves its argument at the function's default."""
    return _given(cli_arguments(arguments), given)


def argument_checks(arguments: Arguments) -> dict[str, Any]:
    """The constraints (``checked`` metadata) of a table of a model's settings or of a
    function's parameters (:func:`cli_arguments`), by name, as
    :func:`bayes_risk._constraints.check_params` takes them."""
    table = arguments if isinstance(arguments, Mapping) else parameter_metadata(arguments)
    return {name: meta["check"][0] for name, meta in table.items() if "check" in meta}


@functools.cache
def parameter_metadata(function: Callable[..., Any] | str) -> dict[str, dict[str, Any]]:
    """The metadata of the parameters of ``function`` declared
    ``param: Annotated[T, cli_option(...) | checked(...)]``, by name in signature order.

    ``function`` is the function or ``"module:name"``. The signature is read off the module's
    source, so that the command line declares the options of a function whose module it does
    not import (``--help`` imports no numpy): the metadata are evaluated with the module's
    names where it is imported, else with the names its imports give (from modules of the
    standard library and the light spec modules, as the ``cli_option`` of a spec field).
    """
    if isinstance(function, str):
        module, _, name = function.partition(":")
    else:
        while hasattr(function, "__wrapped__"):  # a decorated function: its own signature
            function = function.__wrapped__
        module, name = function.__module__, function.__name__
    # found by hand: find_spec would import the parent packages (bayes_risk.utility: numpy)
    top, *parts = module.split(".")
    path = os.path.join(os.path.dirname(importlib.import_module(top).__file__ or ""), *parts)
    path = os.path.join(path, "__init__.py") if os.path.isdir(path) else path + ".py"
    with open(path, encoding="utf-8") as fh:
        lines = fh.readlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith(f"def {name}(")), None)
    if start is None:
        raise AttributeError(f"module {module!r} has no function {name!r} at its top level")
    # the signature alone is parsed (the whole module would cost milliseconds per command)
    node = _parsed(lines[start:], (i + 1 for i, ln in enumerate(lines[start:])
                                   if ln.rstrip().endswith(":")), "    ...\n")[0]
    args = node.args  # type: ignore[attr-defined]
    annotated = {a.arg: a.annotation.slice.elts[1:]  # type: ignore[attr-defined]
                 for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                 if isinstance(a.annotation, ast.Subscript)
                 and isinstance(a.annotation.value, ast.Name)
                 and a.annotation.value.id == "Annotated"}
    loaded = sys.modules.get(module)
    names = vars(loaded) if loaded is not None else {"__builtins__": builtins, **_imported(
        lines[:start], {n.id for meta in annotated.values() for m in meta
                        for n in ast.walk(m) if isinstance(n, ast.Name)})}
    out: dict[str, dict[str, Any]] = {}
    for arg, meta in annotated.items():
        for m in meta:  # cli_option(...) | checked(...): one dict, or several merged
            out.setdefault(arg, {}).update(eval(compile(ast.Expression(m), path, "eval"), names))
    return out


def _parsed(lines: list[str], cuts: Iterable[int], tail: str = "") -> list[ast.stmt]:
    """The statements of the first ``lines[:cut]`` of ``cuts`` that parses (with ``tail``)."""
    for cut in cuts:
        try:
            return ast.parse("".join(lines[:cut]) + tail).body
        except SyntaxError:
            continue
    return ast.parse("".join(lines) + tail).body


def _imported(lines: list[str], wanted: set[str]) -> dict[str, Any]:
    """The names ``wanted`` as the ``from ... import`` statements of a module's ``lines`` give
    them: those before its first function or class (its imports)."""
    out: dict[str, Any] = {}
    top = _parsed(lines, (i for i, ln in enumerate(lines)
                          if ln.startswith(("def ", "class ", "@"))))
    for stmt in top:
        if isinstance(stmt, ast.ImportFrom) and stmt.module is not None:
            for alias in stmt.names:
                if (alias.asname or alias.name) in wanted:
                    out[alias.asname or alias.name] = getattr(
                        importlib.import_module(stmt.module), alias.name)
    return out


def _given(options: list[tuple[str, CliOption]], given: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, opt in options:
        value = given.get(opt.key)
        if opt.then and (value is not None or any(given.get(k) is not None for k in opt.then)):
            value = [*(value or ()), *(v for k in opt.then for v in given.get(k) or ())]
        if value is not None:
            out[name] = opt.value(value)
    return out


def fold_fields(settings: Mapping[str, Any], spec: type, argument: str,
                takes: Sequence[str]) -> dict[str, Any]:
    """Flat ``settings`` (a saved model's ``model.json``, a release's manifest, the command
    line's options) with the fields ``takes`` of the spec class ``spec`` grouped as
    ``argument=spec(...)`` (onto the ``argument`` given, if any)."""
    out = {k: v for k, v in settings.items() if k not in takes}
    given = {k: settings[k] for k in takes if k in settings}
    if given:
        out[argument] = dataclasses.replace(out.get(argument) or spec(), **given)
    return out


def is_default(value: Any, default: Any) -> bool:
    """Whether a saved setting ``value`` is ``default`` (JSON gives lists for tuples): a saved
    model holds its defaults too, and they are left to the defaults again when it is read."""
    if isinstance(value, list):
        value = tuple(value)
    return type(value) is type(default) and value == default


def with_defaults[S](value: S, defaults: Mapping[str, Any], owner: str, kind: str) -> S:
    """The spec ``value`` with its fields left at ``None`` set to ``defaults``; a field set
    that ``defaults`` does not name is refused (``OPTION_CONFLICT``: "``owner`` does not take
    it: its ``kind`` are ...")."""
    names = [f.name for f in dataclasses.fields(value)]  # type: ignore[arg-type]
    extra = [k for k in names if getattr(value, k) is not None and k not in defaults]
    if extra:
        raise ValidationError(f"{owner} does not take {', '.join(extra)}: its {kind} are "
                              f"{', '.join(defaults)}.", code="OPTION_CONFLICT")
    return dataclasses.replace(value, **{k: v for k, v in defaults.items()  # type: ignore[type-var]
                                         if getattr(value, k) is None})


def as_spec[S](value: Any, cls: type[S], name: str, field: str | None = None,
               allowed: Sequence[str] | None = None) -> S:
    """``name=`` as a ``cls``: ``None`` gives the defaults; where ``field`` is given, a string
    sets that field (checked against ``allowed`` here so that the error names ``name``)."""
    from bayes_risk._constraints import InstanceOf, Options, check_value

    if value is None:
        return cls()
    strings = ([] if field is None else [Options(tuple(allowed))] if allowed is not None
               else [InstanceOf(str, f"its {field} (a string)")])
    value = check_value(value, [InstanceOf(cls, _a(cls)), *strings], name)
    return cls(**{field: value}) if isinstance(value, str) else value


def _a(cls: type) -> str:
    """'an OverlapSpec (bayes_risk.OverlapSpec(...))': ``cls`` with its article and maker."""
    article = "an" if cls.__name__[0] in "AEIOU" else "a"
    return f"{article} {cls.__name__} (bayes_risk.{cls.__name__}(...))"


def is_integer(value: Any) -> bool:
    """Whether ``value`` is an integer (not a bool)."""
    import numpy as np

    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real number (not a bool)."""
    import numpy as np

    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


def parse_key_value(items: Sequence[str], argument: str,
                    value_type: type = float) -> dict[str, Any]:
    """An option's ``COLUMN=VALUE`` items, ``["Age=0.1", "Income=0.2"]``, as
    ``{"Age": 0.1, "Income": 0.2}`` (``argument``: the option, named by its messages)."""
    out: dict[str, Any] = {}
    for it in items:
        if "=" not in it:
            raise ValidationError(f"{argument} expects COLUMN=VALUE. Got {it!r}.",
                                  code="BAD_OPTION_VALUE")
        k, v = it.split("=", 1)
        try:
            out[k] = value_type(v)
        except ValueError as err:
            raise ValidationError(f"{argument} {it!r}: value {v!r} is not a valid "
                                  f"{value_type.__name__}.{percent_hint(v)}",
                                  code="BAD_OPTION_VALUE") from err
    return out


def percent_hint(text: str) -> str:
    """`` Write 10% as 0.1 ...`` for an option's value given as a percentage, where a fraction
    is read (empty otherwise)."""
    t = text.strip()
    try:
        share = float(t[:-1]) / 100 if t.endswith("%") else None
    except ValueError:
        share = None
    return ("" if share is None else
            f" Percentages are written as fractions here: write {t} as {share:g}.")


#: how the command line numbers records (the messages of :func:`parse_records`)
RECORDS_NOTE = "records are numbered from 0 (the first data row after the header is record 0)"
#: the help of ``--records`` and the options like it
RECORDS_HELP = ("record numbers such as '0-199' or '0,5,10-20', or a text file of them "
                f"(separated by spaces, commas, semicolons or new lines); {RECORDS_NOTE}")


def parse_records(text: str | None, n: int, argument: str = "--records") -> list[int] | None:
    """Record numbers (0-based, as ``DataFrame.iloc``) of ``--records`` and the options like it:
    ``"0-199"``, ``"0,5,10-20"`` or a file of them; repeats dropped. Raises ``ValidationError``
    for bad ranges or numbers >= ``n``."""
    import re
    from pathlib import Path

    if text is None:
        return None
    p = Path(text)
    if p.is_file():  # tokens by line, so that an error names the file's line
        lines = p.read_text(encoding="utf-8-sig").splitlines()
        where = [f"{argument} {text!r}, line {k}" for k in range(1, len(lines) + 1)]
    elif re.search(r"[^\d\s,;-]", text):
        raise ValidationError(f"{argument}: {text!r} is neither a file nor record numbers like "
                              f"'0-199'; {RECORDS_NOTE}.", code="RECORDS_INVALID")
    else:
        lines, where = [text], [argument]
    out: list[int] = []

    def outside(r: int, at: str) -> ValidationError:
        return ValidationError(f"{at}: record {r} is outside 0..{n - 1}: the data has {n} "
                               f"records; {RECORDS_NOTE}.", code="RECORD_OUT_OF_RANGE")

    for line, at in zip(lines, where, strict=True):
        for t in (t for t in re.split(r"[\s,;]+", line.strip()) if t):
            m = re.fullmatch(r"(\d+)-(\d+)", t)
            if m:
                a, b = int(m.group(1)), int(m.group(2))
                if a > b:
                    raise ValidationError(f"{at}: range {t!r} is empty (start > end).",
                                          code="RECORDS_INVALID")
                if b >= n:  # checked before the range is expanded (0-2000000000 is no list)
                    raise outside(b if a < n else a, at)
                out.extend(range(a, b + 1))
            elif re.fullmatch(r"\d+", t):
                if int(t) >= n:
                    raise outside(int(t), at)
                out.append(int(t))
            else:
                raise ValidationError(f"{at}: {t!r} is not a record number or range like "
                                      f"'0-199'; {RECORDS_NOTE}.", code="RECORDS_INVALID")
    if not out:
        raise ValidationError(f"{argument} selects no record.", code="RECORDS_INVALID")
    return list(dict.fromkeys(out))


def parse_radius(items: list[str] | None, *,
                 vector: bool = True) -> float | list[float] | dict[str, float] | None:
    """``--radius``: ``COL=R`` for every value, or bare numbers (one: a float; several only with
    ``vector``, for ``--compat``); the library checks the values."""
    if not items:
        return None
    keyed = [i for i in items if "=" in i]
    if keyed and len(keyed) != len(items):
        raise ValidationError("--radius: use either COL=R for every value or bare numbers, not "
                              f"both. Got {items}.", code="BAD_OPTION_VALUE")
    if keyed:
        return parse_key_value(items, "--radius", float)
    vals = parse_numbers(",".join(items), "--radius")
    if len(vals) > 1 and not vector:
        raise ValidationError(f"--radius: give COL=R for every value or one bare number. Got "
                              f"{items}.", code="BAD_OPTION_VALUE")
    return vals[0] if len(vals) == 1 else vals


def parse_numbers(text: str | None, option: str, *, none: bool = False) -> list[float] | None:
    """Comma-separated numbers (``--radius-sweep 0.1,0.2``); ``None`` for ``None`` and, with
    ``none``, for ``none``."""
    if text is None or (none and text.strip().lower() == "none"):
        return None
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError as err:
        pct = next((h for x in text.split(",") if (h := percent_hint(x))), "")
        raise ValidationError(f"{option} expects comma-separated numbers"
                              f"{' or none' if none else ''}. Got {text!r}.{pct}",
                              code="BAD_OPTION_VALUE") from err


def split_lists(texts: Sequence[str]) -> list[list[str]]:
    """Each text's comma-separated items, empty ones dropped (``--order MAR,RACE,SEX``, one
    list per text)."""
    return [[c.strip() for c in t.split(",") if c.strip()] for t in texts]


def parse_one_or_pairs(items: list[str] | None, option: str, what: str, *,
                       empty: bool = False) -> str | dict[str, str] | None:
    """One bare value (for every column), or ``COL=WHAT`` pairs of distinct columns (``empty``:
    ``COL=`` allowed), as ``--method-per-column`` and ``--group-by`` take them."""
    if not items:
        return None
    if len(items) == 1 and "=" not in items[0]:
        return items[0]
    out: dict[str, str] = {}
    for i in items:
        c, sep, v = i.partition("=")
        if not sep or not c or c in out or not (v or empty):
            raise ValidationError(f"{option}: {i!r} is not a new COL={what} pair; give one "
                                  f"{what} alone, or one COL={what} pair per column.",
                                  code="BAD_OPTION_VALUE")
        out[c] = v
    return out
