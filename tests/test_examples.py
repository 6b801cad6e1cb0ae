"""The example scripts run end to end (at a small scale) and print their results."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.slow
@pytest.mark.example
@pytest.mark.parametrize(
    "script, expect",
    [
        ("hornby_hu_radius.py", "maximising radius"),
        ("caiola_reiter_rf.py", "false match rate"),
        ("hu_reiter_wang_attribute.py", "candidates per record"),
    ],
)
def test_example_runs(script, expect, monkeypatch, capsys):
    if not (EXAMPLES / script).is_file():
        pytest.skip("examples/ is not part of this checkout")
    monkeypatch.setenv("BAYES_RISK_EXAMPLE_SCALE", "0.04")
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings are expected at this tiny scale
        runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    assert expect in capsys.readouterr().out
