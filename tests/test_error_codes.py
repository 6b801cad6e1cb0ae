"""Every error of the package carries a code a script can act on (docs/user_guide/errors.md).

* ``test_every_raise_site_names_a_code_or_its_argument`` (an AST scan of ``bayes_risk/`` and
  ``models/``): a ``SchemaError``, ``NotSupportedError``, ``NotFittedError`` or bare
  ``BayesRiskError`` is raised with ``code=``; a ``ValidationError`` without one is an argument
  error, whose message names an argument of the enclosing function (or a ``self.<attr>`` /
  dataclass field it validates, or interpolates the argument's name, ``f"{name} must be ..."``).
  Anything else — a condition of the data, the model or the release — names a specific code.
* ``test_every_error_code_is_in_the_errors_table``: every code a raise site names (a ``code="..."``
  keyword of a call that is not a warning, a ``code`` parameter's default, a class's
  ``default_code``) is a row of the error tables of the errors page.
* the end-to-end tests below pin a few codes through the command line (``error [CODE]: ...``).
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayes_risk
from bayes_risk import cli
from bayes_risk.exceptions import BayesRiskError, ValidationError

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("bayes_risk", "models")
PAGE = ROOT / "docs" / "user_guide" / "errors.md"

# a variable interpolated into a message that holds the argument's name (f"{name} must be ...")
ARGUMENT_NAME_VARIABLES = {"name", "argument", "arg", "what", "which"}


def _error_classes() -> dict[str, str]:
    """Name -> default code of every BayesRiskError class of the package (with those defined
    outside ``exceptions``: the Dask error, the contract checker's, the neighbourhood's)."""
    for mod in ("bayes_risk.executors", "bayes_risk.testing", "bayes_risk.models"):
        importlib.import_module(mod)
    importlib.import_module("bayes_risk.models._bayesian.design")
    out, todo = {}, [BayesRiskError]
    while todo:
        c = todo.pop()
        out[c.__name__] = c.default_code
        todo.extend(c.__subclasses__())
    return out


def _text(node: ast.expr) -> str:
    """The literal text of a message (a string, an f-string, a concatenation)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "\0" for v in node.values)
    if isinstance(node, ast.BinOp):
        return _text(node.left) + "\0" + _text(node.right)
    return ""


def _named(fns: list[ast.FunctionDef], cls: ast.ClassDef | None) -> set[str]:
    """Argument names of the enclosing functions, the ``self.<attr>`` they read and the fields
    of the enclosing (data)class."""
    names: set[str] = set()
    for fn in fns:
        a = fn.args
        for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if x is not None and x.arg not in ("self", "cls"):
                names.add(x.arg)
        names |= {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)
                  and isinstance(n.value, ast.Name) and n.value.id == "self"}
    if cls is not None:
        names |= {s.target.id for s in cls.body
                  if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    return names


def _names_an_argument(call: ast.Call, fns: list[ast.FunctionDef],
                       cls: ast.ClassDef | None) -> bool:
    if not call.args:
        return False
    msg = call.args[0]
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _text(msg)))
    if words & _named(fns, cls):
        return True
    return isinstance(msg, ast.JoinedStr) and any(
        isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name)
        and v.value.id in ARGUMENT_NAME_VARIABLES for v in msg.values)


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The parsed source of ``path``: both scans read every file of the package (parsed once;
    the trees are only walked, never changed)."""
    return ast.parse(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module", autouse=True)
def _drop_parsed_trees():
    """The trees (about 100 MB) are not kept for the test files the worker runs next."""
    yield
    _tree.cache_clear()


def _uncoded_sites(root: Path) -> list[str]:
    classes = _error_classes()
    generic = {"ValidationError": "INVALID_ARGUMENT"}
    must_code = {n for n, c in classes.items()
                 if c in ("SCHEMA_MISMATCH", "NOT_SUPPORTED", "NOT_FITTED", "BAYES_RISK_ERROR")}
    validation = {n for n, c in classes.items() if c == classes["ValidationError"]}
    assert generic["ValidationError"] == classes["ValidationError"]
    bad = []
    for folder in FOLDERS:
        for p in sorted((root / folder).rglob("*.py")):
            tree = _tree(p)
            parents = {ch: node for node in ast.walk(tree) for ch in ast.iter_child_nodes(node)}
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                f = node.func
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
                if name not in classes or any(k.arg == "code" for k in node.keywords):
                    continue
                if len(node.args) > 1:  # code given positionally
                    continue
                where = f"{p.relative_to(root)}:{node.lineno} {name}"
                if name in must_code:
                    bad.append(where)
                elif name in validation:
                    fns, cls, x = [], None, node
                    while x in parents:
                        x = parents[x]
                        if isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            fns.append(x)
                        elif isinstance(x, ast.ClassDef) and cls is None:
                            cls = x
                    if not _names_an_argument(node, fns, cls):
                        bad.append(where)
    return bad


def test_every_raise_site_names_a_code_or_its_argument():
    bad = _uncoded_sites(ROOT)
    assert not bad, (
        "errors raised without code= that are not argument errors naming their argument "
        "(give them a specific code, listed in docs/user_guide/errors.md):\n" + "\n".join(bad))


def test_the_scan_finds_what_it_should(tmp_path):
    # the scan itself: an uncoded SchemaError, and a ValidationError naming no argument, are
    # found; an argument error naming its argument and a coded error are not
    pkg = tmp_path / "bayes_risk"
    pkg.mkdir()
    (tmp_path / "models").mkdir()
    (pkg / "m.py").write_text(
        "def f(radius, name):\n"
        "    raise SchemaError('a table does not fit')\n"
        "def g(radius):\n"
        "    raise ValidationError('the release has fewer records than the keys need')\n"
        "def h(radius, name):\n"
        "    raise ValidationError(f'radius must be >= 0. Got {radius!r}.')\n"
        "def i(value, name):\n"
        "    raise ValidationError(f'{name} must be >= 0. Got {value!r}.')\n"
        "def j(radius):\n"
        "    raise NotSupportedError('no', code='MODEL_UNSUITED')\n",
        encoding="utf-8")
    assert [s.split(":")[1] for s in _uncoded_sites(tmp_path)] == ["2 SchemaError",
                                                                    "4 ValidationError"]


def _used_codes() -> dict[str, str]:
    """Every code the package names for an error, with one place that names it."""
    codes: dict[str, str] = {}
    for folder in FOLDERS:
        for p in sorted((ROOT / folder).rglob("*.py")):
            rel = p.relative_to(ROOT)  # once per file (per node it took most of the scan)
            for node in ast.walk(_tree(p)):
                where = f"{rel}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.Call):
                    f = node.func
                    name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                    if name.endswith("Warning") or name in ("warn", "_warn"):
                        continue  # warning codes: the warning table, tested in tests/cli
                    for k in node.keywords:
                        if (k.arg == "code" and isinstance(k.value, ast.Constant)
                                and isinstance(k.value.value, str)):
                            codes.setdefault(k.value.value, where)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    a = node.args
                    pos = [*a.posonlyargs, *a.args]
                    pairs = [*zip(pos[len(pos) - len(a.defaults):], a.defaults, strict=False),
                             *zip(a.kwonlyargs, a.kw_defaults, strict=False)]
                    for arg, d in pairs:
                        if (arg.arg == "code" and isinstance(d, ast.Constant)
                                and isinstance(d.value, str)):
                            codes.setdefault(d.value, where)
    for name, code in _error_classes().items():
        codes.setdefault(code, f"default_code of {name}")
    return codes


def _documented_error_codes() -> set[str]:
    """The codes in the first cell of a row of the page's error tables (before the warnings)."""
    errors = PAGE.read_text(encoding="utf-8").split("## Warning codes", 1)[0]
    out: set[str] = set()
    for line in errors.splitlines():
        if line.startswith("| `"):
            out |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split(" | ", 1)[0]))
    return out


def test_every_error_code_is_in_the_errors_table():
    codes = _used_codes()
    assert {"INVALID_ARGUMENT", "TOO_FEW_RECORDS", "MODEL_UNSUITED", "FILE_NOT_FOUND"} <= set(codes)
    documented = _documented_error_codes()
    missing = sorted(f"{c} ({w})" for c, w in codes.items() if c not in documented)
    assert not missing, (
        "error codes missing from the tables of docs/user_guide/errors.md:\n"
        + "\n".join(missing))


def test_the_errors_table_has_meaning_and_remedy():
    # the table of the library's codes: code | meaning | what to do, each cell filled
    errors = PAGE.read_text(encoding="utf-8").split("## Warning codes", 1)[0]
    table = errors.split("### Codes of the data, the models and the measures", 1)[1]
    rows = [ln for ln in table.splitlines() if ln.startswith("| `")]
    assert len(rows) > 50
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) == 3 and all(cells), row
    names = [re.match(r"`([A-Z0-9_]+)`", r[2:]).group(1) for r in rows]
    assert names == sorted(names) and len(set(names)) == len(names)


def test_argument_errors_carry_the_argument_code():
    # the class code says what a code-less ValidationError is: an argument error
    assert ValidationError("radius must be >= 0.").code == "INVALID_ARGUMENT"
    with pytest.raises(ValidationError) as e:
        bayes_risk.MatchSpec(shape="square")
    assert e.value.code == "INVALID_ARGUMENT" and "shape" in str(e.value)
    assert not e.value.code_given


# --------------------------------------------------------------------------- Python, end to end
def test_too_few_records_for_a_normal_regression():
    from bayes_risk.models._bayesian.design import normal_exact_posterior

    with pytest.raises(ValidationError) as e:  # 3 coefficients, 2 records
        normal_exact_posterior(np.ones((2, 3)), np.array([1.0, 2.0]), 5, np.random.default_rng(0))
    assert e.value.code == "TOO_FEW_RECORDS" and e.value.code_given


# --------------------------------------------------------------------------- command line
ORIG = {"a": [5.0] * 6, "c": [1.0, 2.5, 3.1, 4.2, 5.3, 6.9], "d": [2.0, 5.0, 6.2, 8.4, 10.6, 13.8],
        "b": ["x", "y", "x", "y", "x", "y"]}
SYN = {"a": [5.0] * 6, "c": [1.1, 2.4, 3.0, 4.4, 5.1, 7.0], "d": [2.2, 4.8, 6.0, 8.8, 10.2, 14.0],
       "b": ["x", "y", "x", "y", "x", "y"]}


@pytest.mark.parametrize("argv, code", [
    # a CART fit to one record
    (["synthesize", "one.csv", "--method", "cart", "--synthesize", "b"], "TOO_FEW_RECORDS"),
    # a Mahalanobis distance on a constant column, and on two collinear columns (d = 2 c)
    (["identification", "orig.csv", "syn.csv", "--known-synthesized", "a", "c", "--shape",
      "mahalanobis", "--radius-type", "absolute", "--radius", "1"], "CONSTANT_COLUMN"),
    (["identification", "orig.csv", "syn.csv", "--known-synthesized", "c", "d", "--shape",
      "mahalanobis", "--radius-type", "absolute", "--radius", "1"], "SINGULAR_COVARIANCE"),
    # grouping a target with a single value, and a categorical target
    (["disclosure", "orig.csv", "syn.csv", "--keys", "b", "--target", "a",
      "--ngroups-target", "5"], "CONSTANT_COLUMN"),
    (["disclosure", "orig.csv", "syn.csv", "--keys", "a", "--target", "b",
      "--ngroups-target", "5"], "WRONG_DTYPE"),
])
def test_cli_error_lines_name_the_condition(tmp_path, monkeypatch, capsys, argv, code):
    monkeypatch.chdir(tmp_path)
    orig = pd.DataFrame(ORIG)
    orig.loc[:, "d"] = 2 * orig["c"]
    orig.to_csv("orig.csv", index=False)
    pd.DataFrame(SYN).to_csv("syn.csv", index=False)
    orig.iloc[:1][["a", "b"]].to_csv("one.csv", index=False)
    try:
        rc = cli.main([*argv, "-q", "--out", "out"])
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2, err
    line = [ln for ln in err.splitlines() if "error [" in ln][-1]
    assert line.startswith(f"bayes-risk {argv[0]}: error [{code}]: "), line
    assert not (tmp_path / "out").exists()
