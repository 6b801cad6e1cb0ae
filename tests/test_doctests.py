"""The docstring examples of the installed package run as tests (``--doctest-modules`` for a
package whose ``models/`` folder installs as ``bayes_risk.models``).

The suite imports the installed package (``--import-mode=importlib``; the source tree has no
``bayes_risk/models``), so the examples are collected from the installed modules rather than
from the source files. One test per module; a failing example prints doctest's report.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import bayes_risk

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _modules() -> list[str]:
    names = [bayes_risk.__name__]
    for info in pkgutil.walk_packages(bayes_risk.__path__, prefix="bayes_risk."):
        names.append(info.name)
    return sorted(names)


def _with_examples() -> list[str]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    out = []
    for name in _modules():
        if name.endswith("__main__"):
            continue
        module = importlib.import_module(name)
        if any(t.examples for t in finder.find(module, name)):
            out.append(name)
    return out


MODULES = _with_examples()


def test_the_examples_are_found():
    # guards against a collection that silently finds nothing (e.g. a packaging change)
    assert {"bayes_risk.models.trees.cart", "bayes_risk.utility.combining"} <= set(MODULES)
    finder = doctest.DocTestFinder(exclude_empty=True)
    n_examples = sum(len(t.examples) for name in MODULES
                     for t in finder.find(importlib.import_module(name), name))
    assert n_examples > 50, "the docstring examples were not found (is the package installed?)"


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report: list[str] = []
    for test in sorted(finder.find(module, name), key=lambda t: t.name):
        # the package's own warnings are errors here too (pytest's filterwarnings setting)
        runner.run(test, out=report.append, clear_globs=True)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)
