"""Dependencies run one way: command line → engines → protocols ← models.

The imports of every module are read from its source (``ast``), including imports inside
functions (which hide a dependency from a reader of the module's header) and
``importlib.import_module("...")`` / ``__import__("...")`` calls with a literal name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ("bayes_risk.attribute", "bayes_risk.identification")
MODELS = "bayes_risk.models"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "models":  # installed as bayes_risk.models (package-dir in pyproject.toml)
        parts = ["bayes_risk", *parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module name ``path`` imports, anywhere in the file, made absolute."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            found.add(mod)
            # `from bayes_risk import models` imports the subpackage
            found.update(f"{mod}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call):
            fn = node.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if fname in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.add(arg.value)
    return found


def _modules(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def _hits(paths: list[Path], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    out = {}
    for p in paths:
        bad = sorted(
            m for m in _imports(p)
            if any(m == f or m.startswith(f + ".") for f in forbidden)
        )
        if bad:
            out[str(p.relative_to(ROOT))] = bad
    return out


def test_the_import_reader_sees_local_relative_and_dynamic_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "bayes_risk" / "attribute"
    pkg.mkdir(parents=True)
    f = pkg / "x.py"
    f.write_text(
        "import numpy\n"
        "def f():\n"
        "    from bayes_risk.models import cart\n"
        "    from . import api\n"
        "    from ..models import dpmpm\n"
        "    importlib.import_module('bayes_risk.models.pmm')\n"
    )
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    got = _imports(f)
    assert {"numpy", "bayes_risk.models", "bayes_risk.models.cart", "bayes_risk.attribute.api",
            "bayes_risk.models.dpmpm", "bayes_risk.models.pmm"} <= got
    assert _hits([f], (MODELS,)) == {
        "bayes_risk/attribute/x.py": ["bayes_risk.models", "bayes_risk.models.cart",
                                      "bayes_risk.models.dpmpm", "bayes_risk.models.pmm"]
    }


def test_models_do_not_import_the_engines():
    paths = _modules("models")
    assert len(paths) > 5
    assert _hits(paths, ENGINES) == {}


@pytest.mark.parametrize("engine", ["attribute", "identification"])
def test_engines_do_not_import_models(engine):
    paths = _modules(f"bayes_risk/{engine}")
    assert paths
    assert _hits(paths, (MODELS, "models")) == {}


def test_engines_reach_models_through_protocols_only():
    """The attribute engine checks capabilities with the protocols (no signature probing)."""
    for p in _modules("bayes_risk/attribute"):
        src = p.read_text(encoding="utf-8")
        assert "inspect.signature" not in src, p.name


def _import_graph(folder: str) -> dict[str, set[str]]:
    """Module -> the modules of the same tree it imports (anywhere in the file)."""
    paths = {_module_name(p): p for p in _modules(folder)}
    return {name: {m for m in _imports(p) if m in paths and m != name}
            for name, p in paths.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_sees_function_level_and_type_only_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "models" / "fam"
    pkg.mkdir(parents=True)
    (tmp_path / "models" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from bayes_risk.models.fam.a import A\n")
    (pkg / "a.py").write_text("import bayes_risk.models.fam.b as b\nclass A: ...\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from bayes_risk.models.fam.a import A\n"
        "def f():\n    from bayes_risk.models.fam import c\n"
    )
    (pkg / "c.py").write_text("")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    graph = _import_graph("models")
    assert graph["bayes_risk.models.fam.b"] == {
        "bayes_risk.models.fam.a", "bayes_risk.models.fam", "bayes_risk.models.fam.c"}
    assert _cycles(graph) == [["bayes_risk.models.fam", "bayes_risk.models.fam.a",
                               "bayes_risk.models.fam.b"]]


def test_models_have_no_import_cycle():
    """No module of models/ imports itself back through others, not even from inside a function
    or for type checking only (imports that would merely hide a cycle)."""
    graph = _import_graph("models")
    assert len(graph) > 30
    assert _cycles(graph) == []


def test_model_classes_are_not_assembled_from_mixins():
    """Each model class is one class in one file: one base class (the family's template), and no
    class attribute re-binding a method of another class (``record_loglik = _X.record_loglik``).
    Module-level classes only: a PyMC step class built inside a function joins PyMC's
    ``BlockedStep`` to the package's step."""
    for p in _modules("models"):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            bases = [ast.unparse(b) for b in cls.bases]
            if any(b.endswith(("Error", "Exception", "Warning")) for b in bases):
                continue
            where = f"{p.relative_to(ROOT)}: {cls.name}"
            assert len(bases) <= 1, f"{where} has bases {bases}"
            for node in cls.body:
                if isinstance(node, ast.Assign) and isinstance(
                    node.value, (ast.Attribute, ast.Subscript)
                ):
                    value = ast.unparse(node.value)
                    assert not value.lstrip("_")[:1].isupper(), f"{where}: {ast.unparse(node)}"
