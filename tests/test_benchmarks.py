"""The benchmarks are a reference: a short README whose table names benchmarks that exist, an asv
suite whose benchmarks asv can collect, and no dated measurement logs in code comments.

Read from the source tree (``ast``, ``tokenize``): nothing here runs a benchmark or needs asv.
"""

from __future__ import annotations

import ast
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
SUITE = BENCH / "suite"
PREFIXES = ("time_", "peakmem_", "track_")


def _suite_benchmarks() -> dict[str, dict[str, ast.ClassDef]]:
    """``{module: {class: ClassDef}}`` of every class with an asv benchmark method."""
    out: dict[str, dict[str, ast.ClassDef]] = {}
    for path in sorted(SUITE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        classes = {
            node.name: node for node in tree.body if isinstance(node, ast.ClassDef)
            and any(isinstance(f, ast.FunctionDef) and f.name.startswith(PREFIXES)
                    for f in node.body)
        }
        if classes:
            out[path.stem] = classes
    return out


def _methods(cls: ast.ClassDef) -> set[str]:
    return {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}


def _class_constant(cls: ast.ClassDef, name: str) -> ast.expr | None:
    for node in cls.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
    return None


def test_readme_is_short_with_one_table_of_suite_benchmarks():
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    suite = _suite_benchmarks()
    # the figures table: the one whose rows name a benchmark of the suite
    rows = [line for line in text.splitlines() if line.startswith("|") and "`" in line
            and re.search(r"`(\w+)\.(\w+)\.(\w+)`", line)]
    assert len(rows) >= 10, "the table of current figures names the suite's benchmarks"
    for line in rows:
        for module, cls, method in re.findall(r"`(\w+)\.(\w+)\.(\w+)`", line):
            assert module in suite and cls in suite[module], f"{module}.{cls} not in the suite"
            assert method in _methods(suite[module][cls]), f"{module}.{cls}.{method} missing"
    assert "PLACEHOLDER" not in text


def test_suite_benchmarks_are_collectable_by_asv():
    suite = _suite_benchmarks()
    # what issue 32 asks the suite to cover
    for module in ("synthesis", "identification", "utility", "disclosure", "attribute",
                   "commands"):
        assert module in suite, f"benchmarks/suite/{module}.py has no benchmark"
    assert any(m.startswith("peakmem_") for c in suite["identification"].values()
               for m in _methods(c))
    for classes in suite.values():
        for cls in classes.values():
            params, names = _class_constant(cls, "params"), _class_constant(cls, "param_names")
            if params is None:
                assert names is None
                continue
            # asv: one list of values per parameter name; every benchmark method takes them
            names = ast.literal_eval(names)
            assert isinstance(params, ast.Tuple) and len(params.elts) == len(names), cls.name
            for f in cls.body:
                if isinstance(f, ast.FunctionDef) and f.name.startswith(PREFIXES + ("setup",)):
                    assert len(f.args.args) == 1 + len(names), f"{cls.name}.{f.name}"


# a dated measurement: an ISO date, a written date, the load of the machine it ran on
_DATED = re.compile(r"\b20\d\d-\d\d-\d\d\b|\b\d{1,2} (?:January|February|March|April|May|June|"
                    r"July|August|September|October|November|December) 20\d\d\b|load average",
                    re.IGNORECASE)


def test_no_dated_figures_in_code_comments():
    found = []
    for top in ("bayes_risk", "models", "tests", "benchmarks"):
        for path in sorted((ROOT / top).rglob("*.py")):
            with path.open("rb") as fh:
                for tok in tokenize.tokenize(fh.readline):
                    if tok.type == tokenize.COMMENT and _DATED.search(tok.string):
                        found.append(f"{path.relative_to(ROOT)}:{tok.start[0]}: {tok.string}")
    assert not found, "dated figures belong in benchmarks/README.md:\n" + "\n".join(found)
