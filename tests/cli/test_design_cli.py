"""``bayes-risk design``: bad inputs (exit 2, one error line naming the culprit, no
traceback, nothing written), as tests/cli/test_bad_input_corpus.py does for the others."""

from __future__ import annotations

import os

import pytest

from bayes_risk.cli import main

BASE = ["design", "ce.csv", "--known", "Age", "Urban", "Income", "--categorical", "Urban",
        "Marital", "Tenure", "--columns", "Tenure,Income", "-q"]


@pytest.fixture
def folder(tmp_path):
    import bayes_risk as br

    br.make_ce_like(60, random_seed=2).to_csv(tmp_path / "ce.csv", index=False)
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "space.json").write_text('{"columns": [["Tenure"]], "colour": 1}')
    cwd = os.getcwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(cwd)


CASES = [
    (["--fix", "cart.minleaf=5"], "BAD_OPTION_VALUE", "cart.minleaf"),
    (["--fix", "m"], "BAD_OPTION_VALUE", "--fix"),
    (["--knob", "min_leaf=5"], "BAD_OPTION_VALUE", "--knob"),
    # a knob no synthesizer takes stopped the search at its first fit (a TypeError traceback)
    (["--knob", "cart.minleaf=5"], "BAD_OPTION_VALUE", "'minleaf'"),
    (["--knob", "gan.x=1"], "UNKNOWN_SYNTHESIZER", "'gan'"),
    (["--remedies", "shuffle"], "BAD_OPTION_VALUE", "shuffle"),
    (["--methods", "gan"], "UNKNOWN_SYNTHESIZER", "gan"),
    (["-m", "0"], "BAD_OPTION_VALUE", "m"),
    (["--columns", "Tenure,Wealth"], "MISSING_COLUMN", "Wealth"),
    (["--screen-records", "many"], "BAD_OPTION_VALUE", "--screen-records"),
    (["--max-candidates", "0"], "BAD_OPTION_VALUE", "--max-candidates"),
    (["--threshold", "repU=500"], "BAD_OPTION_VALUE", "repU"),
    (["--space", "bad.json"], "BAD_OPTION_VALUE", "bad.json"),
    (["--space", "space.json"], "INVALID_ARGUMENT", "colour"),
    (["--resume"], "NOT_A_DESIGN", "--resume"),
    (["--start", "ce.csv"], "NOT_AN_AUDIT", "ce.csv"),
]


@pytest.mark.parametrize(("extra", "code", "names"), CASES,
                         ids=[" ".join(c[0]) for c in CASES])
def test_bad_input(folder, capsys, extra, code, names):
    before = sorted(p.name for p in folder.iterdir())
    status = main([*BASE, *extra, "--out", "out"])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("warning [")]
    assert status == 2, err
    assert len(lines) == 1 and f"[{code}]" in lines[0] and names in lines[0], err
    assert "Traceback" not in err
    # nothing written: no --out, no temporary beside it
    assert sorted(p.name for p in folder.iterdir()) == before


def test_existing_out_needs_resume_or_overwrite(folder, capsys):
    (folder / "out").mkdir()
    (folder / "out" / "keep.txt").write_text("x")
    assert main([*BASE, "--out", "out"]) == 2
    err = capsys.readouterr().err
    assert "[OUT_EXISTS]" in err and (folder / "out" / "keep.txt").read_text() == "x"
