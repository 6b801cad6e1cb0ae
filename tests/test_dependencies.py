"""Dependencies run one way: command line → engines → results and protocols ← models, and no
module of ``bayes_risk`` imports itself back through others.

The imports of every module are read from its source (``ast``), including imports inside
functions (which hide a dependency from a reader of the module's header) and
``importlib.import_module("...")`` / ``__import__("...")`` calls with a literal name.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
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


def _import_statements(path: Path) -> Iterator[tuple[str, tuple[str, ...] | None]]:
    """``(module, names)`` of every import in ``path``, anywhere in the file, made absolute:
    ``names`` of a ``from`` import, ``None`` for ``import module`` and for
    ``importlib.import_module("...")`` / ``__import__("...")`` with a literal name."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            yield mod, tuple(alias.name for alias in node.names)
        elif isinstance(node, ast.Call):
            fn = node.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if fname in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    yield arg.value, None


def _imports(path: Path) -> set[str]:
    """Every module name ``path`` imports, anywhere in the file, made absolute."""
    found: set[str] = set()
    for mod, names in _import_statements(path):
        found.add(mod)
        # `from bayes_risk import models` imports the subpackage
        found.update(f"{mod}.{n}" for n in names or ())
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



# --------------------------------------------------------------------------- no import cycle
#: what computes; the results (``bayes_risk.results``) only hold, summarise and show its numbers
ENGINES_AND_CLI = (
    "bayes_risk.attribute", "bayes_risk.identification", "bayes_risk.utility",
    "bayes_risk.disclosure", "bayes_risk.auditing", "bayes_risk.cli", "bayes_risk.distributed",
    "bayes_risk.visit_orders",
)


def _import_graph(root: Path, package: str = "bayes_risk",
                  exclude: tuple[str, ...] = (MODELS,)) -> dict[str, set[str]]:
    """Module → the modules of ``package`` it imports (see :func:`test_no_import_cycle`)."""
    paths = {}
    for p in sorted((root / package).rglob("*.py")):
        rel = p.relative_to(root).with_suffix("").parts
        name = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
        if not any(name == e or name.startswith(e + ".") for e in exclude):
            paths[name] = p
    graph: dict[str, set[str]] = {}
    for name, p in paths.items():
        out: set[str] = set()
        for mod, names in _import_statements(p):
            for n in names or (None,):
                sub = f"{mod}.{n}" if n is not None else None
                out.add(sub if sub in paths else mod)
        if p.name == "__init__.py":  # names imported on first use (the lazy maps)
            out |= {n.value for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
                    if isinstance(n, ast.Constant) and n.value in paths}
        graph[name] = (out & set(paths)) - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each group of modules that import each other (a strongly connected
    component of two or more), as the modules along it, the first repeated at the end."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    comps: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    cycles = []
    for comp in comps:  # a shortest way from the component's first module back to it
        start, inside = comp[0], set(comp)
        prev: dict[str, str] = {start: start}
        queue = [start]
        while start not in graph[queue[0]]:
            v = queue.pop(0)
            for w in sorted(graph[v] & inside):
                if w not in prev:
                    prev[w] = v
                    queue.append(w)
        path = [start, queue[0]]
        while path[-1] != start:
            path.append(prev[path[-1]])
        cycles.append(path[::-1])
    return cycles


@functools.cache
def _package_graph() -> dict[str, set[str]]:
    return _import_graph(ROOT)


def test_the_cycle_finder_names_a_cycle_and_follows_package_reexports(tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    pkg = tmp_path / "bayes_risk"
    (pkg / "eng").mkdir(parents=True)
    (pkg / "__init__.py").write_text("_API = {'run': 'bayes_risk.eng.api'}\n")
    (pkg / "eng" / "__init__.py").write_text("from bayes_risk.eng.api import run\n")
    (pkg / "eng" / "api.py").write_text("from bayes_risk.eng import plan\n")  # the submodule
    (pkg / "eng" / "plan.py").write_text("def f():\n    from bayes_risk.eng.low import g\n")
    (pkg / "eng" / "low.py").write_text("import numpy\n")
    graph = _import_graph(tmp_path)
    assert graph == {"bayes_risk": {"bayes_risk.eng.api"}, "bayes_risk.eng": {"bayes_risk.eng.api"},
                     "bayes_risk.eng.api": {"bayes_risk.eng.plan"},
                     "bayes_risk.eng.plan": {"bayes_risk.eng.low"}, "bayes_risk.eng.low": set()}
    assert _cycles(graph) == []
    # a function-level import back up closes a cycle; so does a name taken from the package's
    # __init__ (it re-exports api) or from the top-level package (it names every public module)
    (pkg / "eng" / "low.py").write_text("def g():\n    from bayes_risk.eng.api import run\n")
    assert _cycles(_import_graph(tmp_path)) == [
        ["bayes_risk.eng.api", "bayes_risk.eng.plan", "bayes_risk.eng.low", "bayes_risk.eng.api"]]
    (pkg / "eng" / "low.py").write_text("from bayes_risk.eng import run\n")
    assert _cycles(_import_graph(tmp_path)) == [
        ["bayes_risk.eng", "bayes_risk.eng.api", "bayes_risk.eng.plan", "bayes_risk.eng.low",
         "bayes_risk.eng"]]
    (pkg / "eng" / "low.py").write_text("from bayes_risk import __version__\n")
    assert _cycles(_import_graph(tmp_path))[0][0] == "bayes_risk"


def test_no_import_cycle():
    """No module of ``bayes_risk`` (``bayes_risk.models`` aside: tested with ``models/``) imports
    itself back through others.

    The graph: one node per module, a package being its ``__init__``. Its edges are every import
    the module makes, read as :func:`_imports` reads them — inside functions and under
    ``TYPE_CHECKING`` too, since an import deferred to hide a cycle is still one —
    with ``from P import n`` an edge to the submodule ``P.n`` when there is one, else to ``P``
    (a name ``P`` defines or re-exports, so the edge goes on to what ``P`` re-exports). A
    package's ``__init__`` has edges to the modules it re-exports, imported at once or on first
    use (a module named in a string: the lazy maps of ``bayes_risk/__init__.py`` and of
    ``_lazy.attach``). Python's implicit import of the parent packages before a submodule is not
    an edge: an ``__init__`` only collects names, and counting it would make every package that
    re-exports its modules a cycle. So a module inside the package never takes a name from its
    own package's ``__init__`` or from the top-level ``bayes_risk`` (which names every public
    module): it imports the module that defines the name.
    """
    graph = _package_graph()
    assert len(graph) > 100 and "bayes_risk.attribute.plan" in graph["bayes_risk.attribute.api"]
    cycles = [" -> ".join(c) for c in _cycles(graph)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_results_import_nothing_of_the_engines():
    """``bayes_risk.results`` is a leaf: neither it nor anything it imports, directly or through
    other modules, is an engine (functions that compute from a result live in the engine and
    take the result, as ArviZ's functions take ``ELPDData``)."""
    paths = _modules("bayes_risk/results")
    assert len(paths) > 5
    assert _hits(paths, ENGINES_AND_CLI) == {}
    graph = _package_graph()
    seen, todo = set(), [m for m in graph if m.startswith("bayes_risk.results")]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m])
    reached = sorted(m for m in seen if any(m == e or m.startswith(e + ".")
                                            for e in ENGINES_AND_CLI))
    assert not reached, f"bayes_risk.results reaches the engines: {reached}"


def test_the_warning_catalogue_is_a_low_module():
    """Every part of the package may import ``bayes_risk.warning_codes``: it imports nothing of
    the package but the exceptions."""
    own = {m for m in _imports(ROOT / "bayes_risk" / "warning_codes.py")
           if m == "bayes_risk" or m.startswith("bayes_risk.")}
    assert own <= {"bayes_risk.exceptions"} | {f"bayes_risk.exceptions.{n}" for n in dir(
        __import__("bayes_risk.exceptions", fromlist=["x"]))}
    assert not (ROOT / "bayes_risk" / "results" / "_warnings.py").exists()


# --------------------------------------------------------------------------- models/: no cycle
def _tree_graph(folder: str) -> dict[str, set[str]]:
    """Module -> the modules of the same source folder it imports, anywhere in the file
    (``models/`` named as installed, ``bayes_risk.models``)."""
    paths = {_module_name(p): p for p in _modules(folder)}
    return {name: {m for m in _imports(p) if m in paths and m != name}
            for name, p in paths.items()}


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
    graph = _tree_graph("models")
    assert graph["bayes_risk.models.fam.b"] == {
        "bayes_risk.models.fam.a", "bayes_risk.models.fam", "bayes_risk.models.fam.c"}
    (cycle,) = _cycles(graph)
    assert set(cycle) == {"bayes_risk.models.fam", "bayes_risk.models.fam.a",
                          "bayes_risk.models.fam.b"}


def test_models_have_no_import_cycle():
    """No module of models/ imports itself back through others, not even from inside a function
    or for type checking only (imports that would merely hide a cycle)."""
    graph = _tree_graph("models")
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


# --------------------------------------------------------------------------- layers
def _below(mod: str, top: str) -> bool:
    return mod == top or mod.startswith(top + ".")


def test_no_module_below_the_command_line_imports_it():
    """The command line (``bayes_risk.cli``) is the top layer: no module outside it imports it,
    anywhere in the file (``bayes_risk/__main__.py``, the entry point that runs it, aside); what
    both need lives below (``warning_line`` in :mod:`bayes_risk.exceptions`)."""
    paths = [p for p in _modules("bayes_risk", "models")
             if not _below(_module_name(p), "bayes_risk.cli") and p.name != "__main__.py"]
    assert len(paths) > 200
    assert _hits(paths, ("bayes_risk.cli",)) == {}


#: what a compiled kernel may import, beside the standard library
KERNEL_IMPORTS = ("numpy", "numba", "scipy")


def _kernel_hits(paths: list[Path]) -> dict[str, list[str]]:
    """``{kernel file: imports outside the standard library, numpy, numba and scipy}``; a module
    of the package is allowed when it imports only those itself (the random-number generator
    the kernels draw with, ``models/_bayesian/generator.py``)."""
    import sys

    def plain(m: str) -> bool:
        return m.split(".")[0] in sys.stdlib_module_names or any(
            _below(m, k) for k in KERNEL_IMPORTS)

    modules = {_module_name(p): p for p in _modules("bayes_risk", "models")}
    modules.update({_module_name(p): p for p in paths})
    out = {}
    for p in paths:
        bad = []
        for m in sorted(_imports(p)):
            if plain(m) or m == "__future__":
                continue
            if m in modules and all(plain(n) or n == "__future__" for n in _imports(modules[m])):
                continue
            if m.rpartition(".")[0] in modules and m.rpartition(".")[2] not in modules:
                continue  # ``from module import name``: the module is judged
            bad.append(m)
        if bad:
            out[str(p.relative_to(ROOT))] = bad
    return out


def test_the_kernel_check_names_a_kernel_importing_the_package(tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "bayes_risk" / "eng").mkdir(parents=True)
    (tmp_path / "bayes_risk" / "eng" / "rng.py").write_text(
        "import ctypes\nfrom numba import njit\n")
    (tmp_path / "bayes_risk" / "eng" / "heavy.py").write_text("import pandas\n")
    k = tmp_path / "bayes_risk" / "eng" / "_kernels.py"
    k.write_text("import math\nimport numpy as np\nfrom scipy.special import gammaln\n"
                 "from bayes_risk.eng.rng import f\n")
    assert _kernel_hits([k]) == {}
    k.write_text("import numpy as np\ndef f():\n    from bayes_risk.eng.heavy import g\n"
                 "    import pandas\n")
    assert _kernel_hits([k]) == {"bayes_risk/eng/_kernels.py": ["bayes_risk.eng.heavy", "pandas"]}


def test_compiled_kernels_import_only_numpy_numba_and_scipy():
    """A compiled kernel (a module named ``*kernels.py``) imports only the standard library,
    numpy, numba and scipy, anywhere in the file: what it computes is a function of arrays, so
    it can be read, compiled and tested alone."""
    paths = [p for p in _modules("bayes_risk", "models") if p.stem.endswith("kernels")]
    assert len(paths) >= 6
    assert _kernel_hits(paths) == {}
