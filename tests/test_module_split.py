"""The long modules and functions issues 65 and 87 split stay split, and the public names
issue 65's splits held, and the documented ones of issue 87's, still import from where they
were (the modules' ``__all__``)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the modules split along their seams (1,317, 857 and 826 lines before), and the module size
#: the project aims at (docs/development.md, Structural counts)
SPLIT = ("bayes_risk/auditing/render.py", "bayes_risk/auditing/verdicts.py",
         "bayes_risk/data/statfiles.py",
         # 922 and 851 lines before
         "bayes_risk/auditing/plan.py", "bayes_risk/identification/pooled.py",
         # 813, 889 and 836 lines before (issue 87)
         "bayes_risk/designing/search.py", "bayes_risk/auditing/measures/identification.py",
         "bayes_risk/auditing/measures/attribute.py",
         # 987 and 839 lines before (issue 87)
         "bayes_risk/results/attribute.py", "bayes_risk/results/identification.py",
         # 1,010 and 809 lines before (issue 87): the manifest and the reading of a release in
         # data/manifest.py and data/release_reader.py, the fitted state in _bayesian/fitted.py
         "bayes_risk/data/synthetic.py", "models/_bayesian/base.py")


@pytest.mark.parametrize("path", SPLIT)
def test_split_modules_stay_within_600_lines(path):
    assert len((ROOT / path).read_text(encoding="utf-8").splitlines()) <= 600


def _body_lines(fn: ast.FunctionDef) -> int:
    """A function's lines after its docstring (the before-stop hook's count)."""
    body = fn.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value,
                                                                        ast.Constant):
        body = body[1:]
    return fn.end_lineno - body[0].lineno + 1


@pytest.mark.parametrize(("path", "name"), [("models/dpmpm/step.py", "_sweep"),
                                            ("models/dpmpm/evidence.py", "_sweeps")])
def test_the_sweeps_are_within_120_lines(path, name):
    """121 and 123 lines before: a named step each was taken out (the draws are pinned by
    tests/models/test_dpmpm_draws.py)."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    (fn,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    assert _body_lines(fn) <= 120


@pytest.mark.parametrize(("module", "name", "home"), [
    ("bayes_risk.auditing.render", "step_section", "bayes_risk.auditing.report_blocks"),
    ("bayes_risk.auditing.render", "Section", "bayes_risk.auditing.report_blocks"),
    ("bayes_risk.auditing.verdicts", "Verdict", "bayes_risk.auditing.verdict_base"),
    ("bayes_risk.data.statfiles", "write_stat_file", "bayes_risk.data.statfiles_write"),
    ("bayes_risk.data.statfiles", "sas_format_program", "bayes_risk.data.statfiles_write"),
    ("bayes_risk.data.statfiles", "FileLabels", "bayes_risk.data.statfiles_labels"),
    *[("bayes_risk.identification.pooled", name, "bayes_risk.identification.fallback")
      for name in ("FallbackSets", "GroupedFallbackSets", "fallback_sets", "merge_target_major")],
    *[("bayes_risk.identification.pooled", name,
       "bayes_risk.identification.pooled_probabilities")
      for name in ("PooledOutput", "PooledProbabilities")],
    # documented where it was (docs/api)
    ("bayes_risk.results.attribute", "mc_table", "bayes_risk.results._attribute_mc"),
    ("bayes_risk.data.provenance", "check_distinct_files", "bayes_risk.data.manifest"),
])
def test_public_names_still_import_from_their_old_module(module, name, home):
    old = importlib.import_module(module)
    assert name in old.__all__ and name in dir(old)
    assert getattr(old, name) is getattr(importlib.import_module(home), name)


def test_letter_missing_values_are_named_without_spec():
    """The before-stop hook flags a source file that matches "SPEC" (a citation of the project's
    rule book where users read); the SAS/Stata letter missing values matched it by their name."""
    statfiles = importlib.import_module("bayes_risk.data.statfiles")
    assert statfiles.LETTER_MISSING["a"] == -1e9 - 1 and statfiles.LETTER_MISSING["_"] == -1e9
    hits = [str(p.relative_to(ROOT)) for d in ("bayes_risk", "models")
            for p in (ROOT / d).rglob("*.py") if "SPEC" in p.read_text(encoding="utf-8")]
    assert hits == []
