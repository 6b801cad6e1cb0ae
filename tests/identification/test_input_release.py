"""The identification run frees its input tables once encoded (issue 69: peak memory at 10^6
records): the CLI's path hands them over, and the matching runs without them."""

from __future__ import annotations

import gc
import weakref

import pandas as pd
import pytest

from bayes_risk.identification import api


def _tables() -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    y = pd.DataFrame({"sex": ["M", "M", "M", "F", "F"], "race": ["W", "W", "B", "W", "B"]})
    return y, [y.assign(race=["W", "B", "B", "W", "W"]), y.assign(race=["W", "W", "W", "B", "B"])]


def test_tables_freed_before_matching(monkeypatch: pytest.MonkeyPatch) -> None:
    y, zs = _tables()
    refs = [weakref.ref(t) for t in (y, *zs)]
    alive_at_engine: list[int] = []
    real = api.run_engine

    def engine(*a, **k):
        gc.collect()
        alive_at_engine.append(sum(r() is not None for r in refs))
        return real(*a, **k)

    monkeypatch.setattr(api, "run_engine", engine)
    inputs = [y, zs]
    del y, zs
    res = api.identification_risk_of_inputs(inputs, known=["sex", "race"],
                                            synthesized=["race"], progressbar=False)
    assert inputs == []
    assert alive_at_engine == [0]  # none of the three tables is held during the matching
    # the docstring's worked example: 2 + 0.5 (Hu 2019 §4) — unchanged by the hand-over
    assert res.file["expected_match_risk"] == pytest.approx(2.5, abs=1e-12)


def test_public_entry_keeps_callers_tables() -> None:
    y, zs = _tables()
    res = api.identification_risk(y, zs, known=["sex", "race"], synthesized=["race"],
                                  progressbar=False)
    assert res.file["expected_match_risk"] == pytest.approx(2.5, abs=1e-12)
    assert list(y["race"]) == ["W", "W", "B", "W", "B"] and len(zs) == 2


def test_command_frees_its_tables_before_matching(tmp_path, monkeypatch: pytest.MonkeyPatch
                                                  ) -> None:
    """``bayes-risk identification`` holds none of the tables it read while it matches (it held
    all three before issue 69's change); its summary is the worked example's."""
    from bayes_risk.cli import main

    y, zs = _tables()
    files = []
    for name, t in (("orig", y), ("syn1", zs[0]), ("syn2", zs[1])):
        files.append(str(tmp_path / f"{name}.csv"))
        t.rename(columns={"race": "race_t69"}).to_csv(files[-1], index=False)
    held: list[int] = []
    real = api.run_engine

    def engine(*a, **k):
        gc.collect()
        # type(), not isinstance(): the heap may hold weak proxies whose referent is gone,
        # which raise ReferenceError when asked for their class
        held.append(sum(type(o) is pd.DataFrame and "race_t69" in o.columns
                        for o in gc.get_objects()))
        return real(*a, **k)

    monkeypatch.setattr(api, "run_engine", engine)
    out = tmp_path / "out"
    assert main(["identification", *files, "--known-unsynthesized", "sex",
                 "--known-synthesized", "race_t69", "--out", str(out), "-q"]) == 0
    assert held == [0]
    import json

    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"]["expected_match_risk"] == pytest.approx(2.5, abs=1e-12)
