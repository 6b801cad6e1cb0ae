"""The structural counts of the package, read from its source by ``ast`` (issue 65).

Run from the repository's root (or pass it): ``python tools/structure_counts.py [ROOT]
[--json] [--list]``. It counts, for ``bayes_risk/`` and ``models/`` together and apart:

lines
    Physical lines of the ``.py`` files.
code_lines
    Lines holding code: blank lines, comment-only lines and docstrings (of modules, classes and
    functions) left out.
docstring_lines
    Lines of those docstrings.
forwarding_methods
    Methods whose body (docstring aside) is one call, returned or not, that passes on exactly
    the method's own parameters in order (``def f(self, x): return g(self, x)``): a second name
    for another function.
private_reads_across_modules
    Names with a leading underscore taken from another module: ``from m import _x``, and
    ``obj._x`` where ``obj`` is not ``self``/``cls`` and no class or function of the reading
    module defines ``_x`` (namedtuple's ``_replace``/``_asdict``/``_fields``/``_make`` are
    public API, and are not counted).
functions_over_12_parameters, constructors_over_12_parameters
    Functions with more than 12 parameters (``self``/``cls`` aside); constructors are
    ``__init__`` methods and dataclass fields (a dataclass's generated ``__init__``).
constructors_outside_records_over_12_parameters
    Of those constructors, the hand-written ``__init__`` methods: what issue 65 calls a
    constructor outside grouped specs. A dataclass is a record of the values it groups (a
    settings spec, a resolved plan, a result), built whole; ``--list`` names each.
max_parameters
    The most parameters of one function or constructor.
modules_over_600_lines, functions_over_150_lines
    As their names say (a function's lines run from its ``def`` to its last line, the lines of
    its parameters' declarations after their first, ``Annotated[T, cli_option(...)]``, aside:
    the options' help texts, not the function's code).
name_built_dispatch_strings
    Strings built from names (f-strings, ``+``, ``%`` or ``.format``) used to find code: passed
    to ``getattr``/``hasattr``/``setattr``/``import_module``/``__import__``, used as a key of
    ``globals()``/``vars()``/``locals()``/``__dict__``, or shaped as an import path
    (``"pkg.mod:attr"`` with a name or a dot written in it — ``f"{a}:{b}"`` joins two values
    —, or a dotted ``bayes_risk.…``/``models.…`` path); a string with a formatted number or a
    ``!r`` is text.
cli_imports_below_cli
    Imports of ``bayes_risk.cli`` (anywhere in a file) by modules outside ``bayes_risk/cli/``
    (``bayes_risk/__main__.py``, the entry point above it, aside).

The counts of issue 87 (each fact stated once):

cli_lines
    Lines of ``bayes_risk/cli/``.
public_functions_over_12_parameters
    Module-level functions whose name has no leading underscore, over 12 parameters.
measure_names_in_auditing
    String constants equal to a built-in measure's name (a module of
    ``bayes_risk/auditing/measures/``) in ``bayes_risk/auditing/`` outside that folder.
cli_option_calls, model_option_calls, arguments_tables, add_argument_calls
    The option mechanisms: calls of ``cli_option(...)`` (the one option record, ``CliOption``)
    and ``ModelOption(...)`` (a plug-in's constructor of it, kept public: no declaration of the
    package calls it since the models' options are tables of ``cli_option``), module-level
    names ending in ``_ARGUMENTS`` (tables restating a function's parameters with their
    options, replaced by options declared on the parameters themselves,
    ``param: Annotated[T, cli_option(...)]``), calls of ``.add_argument(...)``.
hand_options_outside_files_terminal
    Of those ``.add_argument(...)`` calls, the hand-written ones (the option's flag or
    destination written in the call, not read off a declaration) whose option (its long flag,
    else its first) is not one of the files and the terminal (:data:`FILES_TERMINAL_OPTIONS`):
    every other option is declared by the library (``cli_option``) and added by
    ``add_argument_options`` / ``add_spec_options``.
specs_check_calls
    Calls of ``check_int``, ``check_flag`` or ``check_option`` (``bayes_risk._specs``).
dataframe_message_sites
    String constants holding "must be a pandas DataFrame".
hand_guard_blocks
    ``if`` statements whose own body raises (``if …: raise …``).

The figures are recorded in ``docs/development.md``; ``tests/test_structure_counts.py`` checks
the counter on a small hand-counted package and its invariants on the repository.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

FOLDERS = ("bayes_risk", "models")
#: the limits the counts of "over" are taken against
MAX_PARAMETERS, MAX_MODULE_LINES, MAX_FUNCTION_LINES = 12, 600, 150
#: underscored names that are public API (namedtuple's)
PUBLIC_UNDERSCORED = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})
_LOOKUP_FUNCTIONS = frozenset({"getattr", "hasattr", "setattr", "delattr", "import_module",
                               "__import__"})
_NAMESPACE_CALLS = frozenset({"globals", "vars", "locals"})
_IMPORT_PATH = re.compile(r"^[A-Za-z_]\w*(\.\w+)*:\w+(\.\w+)*$")
_PACKAGE_PATH = re.compile(r"^(bayes_risk|models)(\.\w+)+$")
_PLACEHOLDER = "X"
#: the options a parser may declare by hand (issue 87): those of the files and the terminal,
#: the run's inputs, outputs and the run itself (a positional by its destination); the others
#: are the library's, declared with ``cli_option`` on the function or spec the run calls
FILES_TERMINAL_OPTIONS = frozenset({
    # inputs: the tables, the release, a fitted model, earlier outputs, and how they are read
    "original", "synthetic", "--model", "--model-function", "--holdout", "--before", "--space",
    "--selected", "--recoded", "--missing-code", "--allow-different-original",
    "--allow-other-model",
    # outputs
    "--out", "--overwrite", "--resume", "--format", "--csv",
    # the run itself: its seed, terminal, memory and Dask cluster
    "--random-seed", "--quiet", "--version", "--memory", "--scheduler", "--workers",
    "--partition-size", "--dashboard",
})


@dataclass
class Counts:
    """The counts of a set of files, with where each counted item is (``--list``)."""

    files: int = 0
    lines: int = 0
    code_lines: int = 0
    docstring_lines: int = 0
    forwarding_methods: list[str] = field(default_factory=list)
    private_reads_across_modules: list[str] = field(default_factory=list)
    functions_over_12_parameters: list[str] = field(default_factory=list)
    constructors_over_12_parameters: list[str] = field(default_factory=list)
    constructors_outside_records_over_12_parameters: list[str] = field(default_factory=list)
    max_parameters: int = 0
    modules_over_600_lines: list[str] = field(default_factory=list)
    functions_over_150_lines: list[str] = field(default_factory=list)
    name_built_dispatch_strings: list[str] = field(default_factory=list)
    cli_imports_below_cli: list[str] = field(default_factory=list)
    cli_lines: int = 0
    public_functions_over_12_parameters: list[str] = field(default_factory=list)
    measure_names_in_auditing: list[str] = field(default_factory=list)
    cli_option_calls: list[str] = field(default_factory=list)
    model_option_calls: list[str] = field(default_factory=list)
    arguments_tables: list[str] = field(default_factory=list)
    add_argument_calls: list[str] = field(default_factory=list)
    hand_options_outside_files_terminal: list[str] = field(default_factory=list)
    specs_check_calls: list[str] = field(default_factory=list)
    dataframe_message_sites: list[str] = field(default_factory=list)
    hand_guard_blocks: list[str] = field(default_factory=list)

    def add(self, other: Counts) -> None:
        """Add ``other``'s counts to these."""
        for name, value in vars(other).items():
            if name == "max_parameters":
                self.max_parameters = max(self.max_parameters, value)
            elif isinstance(value, list):
                getattr(self, name).extend(value)
            else:
                setattr(self, name, getattr(self, name) + value)

    def figures(self) -> dict[str, int]:
        """Each count as a number (a list counts its items)."""
        return {k: len(v) if isinstance(v, list) else v for k, v in vars(self).items()}


def _docstring_nodes(nodes: list[ast.AST]) -> list[ast.Constant]:
    out = []
    for node in nodes:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                out.append(body[0].value)
    return out


def _code_lines(source: str, nodes: list[ast.AST]) -> tuple[int, int]:
    """``(code lines, docstring lines)``: a line is code when it holds a token other than a
    comment and lies outside every docstring."""
    doc = set()
    for node in _docstring_nodes(nodes):
        doc.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    code = 0
    for i, line in enumerate(source.splitlines(), start=1):
        text = line.strip()
        if text and not text.startswith("#") and i not in doc:
            code += 1
    return code, len(doc)


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef, *, method: bool) -> list[str]:
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if a.vararg:
        names.append("*" + a.vararg.arg)
    if a.kwarg:
        names.append("**" + a.kwarg.arg)
    if method and names and names[0] in ("self", "cls") and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list):
        names = names[1:]
    return names


def _declaration_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines of ``fn``'s ``Annotated[...]`` parameters after their first (their options)."""
    args = fn.args
    return sum((a.annotation.end_lineno or a.annotation.lineno) - a.annotation.lineno
               for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
               if isinstance(a.annotation, ast.Subscript)
               and isinstance(a.annotation.value, ast.Name)
               and a.annotation.value.id == "Annotated")


def _body_without_docstring(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    body = fn.body
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        body = body[1:]
    return body


def _is_forwarding(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = _body_without_docstring(fn)
    if len(body) != 1 or not isinstance(body[0], (ast.Return, ast.Expr)):
        return False
    call = body[0].value
    if not isinstance(call, ast.Call):
        return False
    own = [x.arg for x in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]
    if fn.args.vararg:
        own.append(fn.args.vararg.arg)
    if fn.args.kwarg:
        own.append(fn.args.kwarg.arg)
    passed = []
    for arg in call.args:
        value = arg.value if isinstance(arg, ast.Starred) else arg
        if not isinstance(value, ast.Name):
            return False
        passed.append(value.id)
    for kw in call.keywords:
        if not isinstance(kw.value, ast.Name):
            return False
        passed.append(kw.value.id)
    # ``self`` may be passed on or be the receiver (``return self._x.f(a)``)
    if own and own[0] in ("self", "cls") and own[0] not in passed:
        own = own[1:]
    return passed == own


def _dataclass_fields(cls: ast.ClassDef) -> int | None:
    decorated = any(
        (isinstance(d, ast.Name) and d.id == "dataclass")
        or (isinstance(d, ast.Attribute) and d.attr == "dataclass")
        or (isinstance(d, ast.Call) and (getattr(d.func, "id", None) == "dataclass"
                                         or getattr(d.func, "attr", None) == "dataclass"))
        for d in cls.decorator_list)
    if not decorated:
        return None
    return sum(1 for n in cls.body
               if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
               and "ClassVar" not in ast.unparse(n.annotation))


def _built_shape(node: ast.AST) -> str | None:
    """The string ``node`` builds with each name replaced by ``X``, or ``None`` when ``node``
    builds no string from names (a constant, or not a string)."""
    if isinstance(node, ast.JoinedStr):
        if not any(isinstance(v, ast.FormattedValue) for v in node.values):
            return None
        if any(isinstance(v, ast.FormattedValue) and (v.conversion != -1 or v.format_spec)
               for v in node.values):
            return None  # a formatted number or repr is text, not a name
        return "".join(v.value if isinstance(v, ast.Constant) else _PLACEHOLDER
                       for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        left, right = (_shape_part(node.left), _shape_part(node.right))
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Mod):
            return re.sub(r"%[sdr]", _PLACEHOLDER, left) if left != _PLACEHOLDER else None
        return left + right if _PLACEHOLDER in left + right and (left + right) != _PLACEHOLDER * 2 \
            else None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format" and isinstance(node.func.value, ast.Constant)
            and isinstance(node.func.value.value, str)):
        return re.sub(r"\{[^}]*\}", _PLACEHOLDER, node.func.value.value)
    return None


def _shape_part(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    built = _built_shape(node)
    if built is not None:
        return built
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        return _PLACEHOLDER
    return None


def _dispatch_strings(nodes: list[ast.AST]) -> list[ast.AST]:
    found: dict[int, ast.AST] = {}
    for node in nodes:
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name in _LOOKUP_FUNCTIONS:
                for arg in node.args[:2]:
                    if _built_shape(arg) is not None:
                        found[id(arg)] = arg
        elif isinstance(node, ast.Subscript):
            target = node.value
            is_namespace = (
                (isinstance(target, ast.Call)
                 and getattr(target.func, "id", "") in _NAMESPACE_CALLS)
                or (isinstance(target, ast.Attribute) and target.attr == "__dict__"))
            if is_namespace and _built_shape(node.slice) is not None:
                found[id(node.slice)] = node.slice
        shape = _built_shape(node)
        if shape is not None and (_PACKAGE_PATH.match(shape) or (
                _IMPORT_PATH.match(shape) and shape.replace(_PLACEHOLDER, "") not in ("", ":"))):
            found[id(node)] = node
    # a string built inside another counted one is one string
    inner = {id(n) for f in found.values() for n in ast.walk(f) if n is not f}
    return [n for k, n in found.items() if k not in inner]


def _defined_private_names(nodes: list[ast.AST]) -> set[str]:
    names = set()
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)  # dataclasses.replace(x, _y=...) and friends
    return {n for n in names if n.startswith("_")}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in PUBLIC_UNDERSCORED


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[0] == "models":
        parts = ["bayes_risk", *parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_module(root: Path, name: str) -> bool:
    parts = name.split(".")
    if parts[:2] == ["bayes_risk", "models"]:  # installed as bayes_risk.models
        parts = parts[1:]
    path = root.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _measure_names(root: Path) -> frozenset[str]:
    """The built-in measures' names: the modules of ``bayes_risk/auditing/measures/``."""
    folder = root / "bayes_risk" / "auditing" / "measures"
    return frozenset(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


def _hand_option(call: ast.Call) -> str | None:
    """The option an ``add_argument`` call declares by hand: its long flag, else its first flag
    or destination, written as strings in the call (``None``: read off a declaration)."""
    names = [a.value for a in call.args
             if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not names:
        return None
    return next((n for n in names if n.startswith("--")), names[0])


def count_file(root: Path, path: Path) -> Counts:
    """The counts of one file of the package below ``root``."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    rel = path.relative_to(root).as_posix()
    c = Counts(files=1, lines=len(source.splitlines()))
    nodes = list(ast.walk(tree))  # walked once: the helpers read this list
    c.code_lines, c.docstring_lines = _code_lines(source, nodes)
    if c.lines > MAX_MODULE_LINES:
        c.modules_over_600_lines.append(f"{rel} ({c.lines})")
    module = _module_name(root, path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    defined = _defined_private_names(nodes)
    in_cli = rel.startswith("bayes_risk/cli/") or rel == "bayes_risk/__main__.py"

    methods = {id(f) for cls in nodes if isinstance(cls, ast.ClassDef) for f in cls.body
               if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    top = {id(f) for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if rel.startswith("bayes_risk/cli/"):
        c.cli_lines = c.lines
    in_auditing = (rel.startswith("bayes_risk/auditing/")
                   and not rel.startswith("bayes_risk/auditing/measures/"))
    measures = _measure_names(root) if in_auditing else frozenset()
    for stmt in tree.body:
        targets = (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                   if isinstance(stmt, ast.AnnAssign) else [])
        for t in targets:
            if isinstance(t, ast.Name) and t.id.endswith("_ARGUMENTS"):
                c.arguments_tables.append(f"{rel}:{stmt.lineno} {t.id}")
    for node in nodes:
        where = f"{rel}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            is_method = id(node) in methods
            n = len(_parameters(node, method=is_method))
            c.max_parameters = max(c.max_parameters, n)
            if n > MAX_PARAMETERS:
                item = f"{where} {node.name} ({n})"
                if node.name == "__init__":
                    c.constructors_over_12_parameters.append(item)
                    c.constructors_outside_records_over_12_parameters.append(item)
                else:
                    c.functions_over_12_parameters.append(item)
                    if id(node) in top and not _private(node.name):
                        c.public_functions_over_12_parameters.append(item)
            span = (node.end_lineno or node.lineno) - node.lineno + 1 - _declaration_lines(node)
            if span > MAX_FUNCTION_LINES:
                c.functions_over_150_lines.append(f"{where} {node.name} ({span})")
            if is_method and _is_forwarding(node):
                c.forwarding_methods.append(f"{where} {node.name}")
        elif isinstance(node, ast.ClassDef):
            n_fields = _dataclass_fields(node)
            if n_fields is not None:
                c.max_parameters = max(c.max_parameters, n_fields)
                if n_fields > MAX_PARAMETERS:
                    c.constructors_over_12_parameters.append(
                        f"{where} {node.name} (dataclass, {n_fields})")
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join([*base, mod] if mod else base)
            for alias in node.names:
                # a package's private module imported by the package itself is its own
                own_module = (mod == package or package.startswith(mod + ".")) and _is_module(
                    root, f"{mod}.{alias.name}")
                if _private(alias.name) and mod != "__future__" and not own_module:
                    c.private_reads_across_modules.append(f"{where} from {mod} import "
                                                          f"{alias.name}")
                full = f"{mod}.{alias.name}"
                if not in_cli and any(m == "bayes_risk.cli" or m.startswith("bayes_risk.cli.")
                                      for m in (mod, full)):
                    c.cli_imports_below_cli.append(f"{where} from {mod} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not in_cli and (alias.name == "bayes_risk.cli"
                                   or alias.name.startswith("bayes_risk.cli.")):
                    c.cli_imports_below_cli.append(f"{where} import {alias.name}")
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            receiver = node.value
            own = isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")
            own = own or (isinstance(receiver, ast.Call)
                          and getattr(receiver.func, "id", "") == "super")
            if _private(node.attr) and not own and node.attr not in defined:
                c.private_reads_across_modules.append(f"{where} {ast.unparse(node)}")
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", "")
            kind = {"cli_option": c.cli_option_calls, "ModelOption": c.model_option_calls,
                    "add_argument": c.add_argument_calls, "check_int": c.specs_check_calls,
                    "check_flag": c.specs_check_calls, "check_option": c.specs_check_calls
                    }.get(name)
            if kind is not None:
                kind.append(f"{where} {name}")
            option = _hand_option(node) if name == "add_argument" else None
            if option is not None and option not in FILES_TERMINAL_OPTIONS:
                c.hand_options_outside_files_terminal.append(f"{where} {option}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "must be a pandas DataFrame" in node.value:
                c.dataframe_message_sites.append(where)
            if node.value in measures:
                c.measure_names_in_auditing.append(f"{where} {node.value!r}")
        elif isinstance(node, ast.If) and any(isinstance(b, ast.Raise) for b in node.body):
            c.hand_guard_blocks.append(where)
    for node in _dispatch_strings(nodes):
        c.name_built_dispatch_strings.append(f"{rel}:{node.lineno} {ast.unparse(node)}")
    return c


def count(root: Path, folders: tuple[str, ...] = FOLDERS) -> dict[str, Counts]:
    """The counts of each folder of ``folders`` below ``root`` and of all of them (``"total"``).

    Parameters
    ----------
    root : Path
        The repository's root.
    folders : tuple of str
        The source folders to count, relative to ``root``.

    Returns
    -------
    dict of str to Counts
        One entry per folder and ``"total"``.
    """
    out: dict[str, Counts] = {}
    total = Counts()
    for folder in folders:
        c = Counts()
        for path in sorted((root / folder).rglob("*.py")):
            c.add(count_file(root, path))
        out[folder] = c
        total.add(c)
    out["total"] = total
    return out


def _table(counts: dict[str, Counts]) -> str:
    figures = {k: v.figures() for k, v in counts.items()}
    keys = list(figures["total"])
    head = "| count | " + " | ".join(f"`{k}/`" if k != "total" else k for k in figures) + " |"
    rule = "| --- |" + " ---: |" * len(figures)
    rows = [f"| {k} | " + " | ".join(f"{figures[f][k]:,}" for f in figures) + " |" for k in keys]
    return "\n".join([head, rule, *rows])


def main(argv: list[str] | None = None) -> int:
    """Print the counts (a Markdown table; ``--json`` for JSON; ``--list`` adds the items)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the repository's root (default: this script's repository)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--list", action="store_true", help="list every counted item too")
    args = parser.parse_args(argv)
    missing = [f for f in FOLDERS if not (args.root / f).is_dir()]
    if missing:
        parser.error(f"root {args.root} has no folder {missing}: give the repository's root")
    counts = count(args.root)
    if args.json:
        print(json.dumps({k: (vars(v) if args.list else v.figures()) for k, v in counts.items()},
                         indent=1))
        return 0
    print(_table(counts))
    if args.list:
        for name, items in vars(counts["total"]).items():
            if isinstance(items, list) and items:
                print(f"\n{name}:")
                print("\n".join(f"  {x}" for x in items))
    return 0


if __name__ == "__main__":
    sys.exit(main())
