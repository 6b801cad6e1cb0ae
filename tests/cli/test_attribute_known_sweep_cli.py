"""``bayes-risk attribute --known-sweep``: attribute risk over subsets of the synthesized values
the intruder knows (issue 33 item 2), from the command line.

Run in process through ``bayes_risk.cli.main`` (a subprocess would pay a fresh interpreter and
its imports for each run; exit codes and one-line errors of a real process are checked by
tests/cli/test_cli.py).
"""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

from bayes_risk.models import Sampling


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    from bayes_risk.data import make_acs_like
    from bayes_risk.models import DPMPM

    root = tmp_path_factory.mktemp("sweep_dpmpm")
    df = make_acs_like(60, random_seed=5).iloc[:, :3]
    model = DPMPM(n_components=3, sampling=Sampling(tune=20, draws=40), progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df, random_seed=1)
    model.save(root / "model")
    model.synthesize(2, random_seed=2).save(root / "syn")
    df.to_csv(root / "orig.csv", index=False)
    return root, df


@pytest.mark.slow
def test_cli_attribute_known_sweep(saved, tmp_path, cli):
    root, df = saved
    cols = list(df.columns[:2])
    base = ["attribute", "--model", str(root / "model"), str(root / "orig.csv"),
            str(root / "syn"), "--estimator", "is", "--bootstrap", "0", "--records", "0-19",
            "--random-seed", "3"]
    out = tmp_path / "ks"
    r = cli([*base, "--known-sweep", *cols, "--out", str(out)], tmp_path)
    assert r.returncode == 0, r.stderr
    summ = json.loads((out / "summary.json").read_text())
    table = pd.read_csv(out / "known_sweep.csv")
    assert list(table["known"]) == ["(none)", cols[0], cols[1], ", ".join(cols)]
    # the empty subset is the run's own worst case (one seed for both)
    none = table.set_index("known").loc["(none)"]
    assert none["mean_p_true"] == pytest.approx(summ["all"]["mean_p_true"], rel=1e-12)
    assert none["prop_top"] == pytest.approx(summ["all"]["prop_top"], rel=1e-12)
    assert summ["known_sweep"]["kind"] == "attribute"
    for name in ("known_sweep_drivers.csv", "known_sweep_levels.csv", "known_sweep.png",
                 "known_sweep_drivers.png"):
        assert (out / name).is_file(), name
    assert "knowledge sweep over 4 subsets" in r.stdout
    # the sweep sets the known columns itself
    r = cli([*base, "--known-sweep", cols[0], "--known", cols[1], "--out",
              str(tmp_path / "bad")], tmp_path)
    assert r.returncode != 0 and ("--known-sweep needs --scenario worst-case (it sets the "
                                  "known columns") in r.stderr
    r = cli([*base, "--max-size", "1", "--out", str(tmp_path / "bad2")], tmp_path)
    assert r.returncode != 0 and "--max-size needs --known-sweep" in r.stderr
    assert not (tmp_path / "bad").exists() and not (tmp_path / "bad2").exists()
