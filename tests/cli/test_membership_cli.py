"""``bayes-risk membership`` end to end on a small ACS extract: outputs, summary, bad options."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest
from _shared import shared_path

from bayes_risk.cli import main


def _main(argv: list[str]) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return main(argv)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    work = tmp_path_factory.mktemp("membership")
    df = pd.read_csv(shared_path("data", "ss16pusa_sample_nozeros.csv")).iloc[:200]
    df.iloc[:150].to_csv(work / "train.csv", index=False)
    df.iloc[150:].to_csv(work / "hold.csv", index=False)
    assert _main(["fit", str(work / "train.csv"), "--method", "dpmpm", "--components", "5",
                  "--tune", "100", "--draws", "150", "--chains", "2", "--random-seed", "1",
                  "-q", "--out", str(work / "model")]) == 0
    assert _main(["synthesize", "--model", str(work / "model"), "-m", "1", "--random-seed", "2",
                  "-q", "--out", str(work / "syn")]) == 0
    return work


def test_membership_cli_writes_outputs(release):
    w = release
    out = w / "mem"
    rc = _main(["membership", str(w / "train.csv"), str(w / "syn"), "--model", str(w / "model"),
                "--holdout", str(w / "hold.csv"), "--bootstrap", "20", "--random-seed", "3",
                "-q", "--out", str(out)])
    assert rc == 0
    assert {p.name for p in out.iterdir()} == {"records.csv", "summary.json",
                                               "p_member_hist.png", "roc.png", "dcr.png"}
    rec = pd.read_csv(out / "records.csv")
    assert (rec["role"] == "member").sum() == 150 and (rec["source"] == "holdout").sum() == 50
    s = json.loads((out / "summary.json").read_text())
    assert s["measure"] == "membership" and s["settings"]["m"] == 1
    assert s["settings"]["normaliser"] == "exact (m = 1)"
    assert s["inputs"]["holdout"].endswith("hold.csv")
    assert len(s["file"]["auc_advantage_interval"]) == 2


def test_membership_cli_bad_prior_is_one_coded_line(release, capsys):
    w = release
    rc = _main(["membership", str(w / "train.csv"), str(w / "syn"), "--model", str(w / "model"),
                "--prior", "often", "-q", "--out", str(w / "bad")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "[BAD_OPTION_VALUE]" in err and "--prior" in err
    assert not (w / "bad").exists()


def test_membership_cli_partial_synthesis_of_a_regression(tmp_path, capsys):
    """A chain of regressions that leaves a categorical column unsynthesized: the command runs
    (partial synthesis), reports which targets' unsynthesized values match their slot's and
    takes the population model's concentration."""
    import numpy as np

    rng = np.random.default_rng(4)
    a = rng.choice(["north", "south", "east"], 80)
    df = pd.DataFrame({"region": a, "income": rng.normal(10, 1, 80) + (a == "north")})
    df.iloc[:60].to_csv(tmp_path / "train.csv", index=False)
    df.iloc[60:].to_csv(tmp_path / "hold.csv", index=False)
    assert _main(["fit", str(tmp_path / "train.csv"), "--method", "regression", "--synthesize",
                  "income", "--draws", "300", "--random-seed", "1", "-q",
                  "--out", str(tmp_path / "model")]) == 0
    assert _main(["synthesize", "--model", str(tmp_path / "model"), "-m", "2",
                  "--random-seed", "2", "-q", "--out", str(tmp_path / "syn")]) == 0
    out = tmp_path / "mem"
    rc = _main(["membership", str(tmp_path / "train.csv"), str(tmp_path / "syn"), "--model",
                str(tmp_path / "model"), "--holdout", str(tmp_path / "hold.csv"),
                "--unsynthesized-concentration", "0.5", "--normaliser-draws", "100",
                "--bootstrap", "10", "--random-seed", "3", "--out", str(out)])
    assert rc == 0
    assert "partial synthesis: the released unsynthesized values (region)" in \
        capsys.readouterr().out
    rec = pd.read_csv(out / "records.csv")
    assert rec.loc[rec["role"] == "member", "unsynthesized_match"].all()
    excluded = ~rec["unsynthesized_match"]
    assert (rec.loc[excluded, "p_member"] == 0).all()
    s = json.loads((out / "summary.json").read_text())
    assert s["settings"]["unsynthesized"] == ["region"]
    assert s["settings"]["unsynthesized_concentration"] == 0.5
    assert s["file"]["unsynthesized"]["n_cells"] == 3


def test_membership_cli_numeric_unsynthesized_column(tmp_path):
    """A numeric unsynthesized column (ages recorded in whole years, 20 to 64): the command
    runs, its cells are the 45 whole years, and the one record aged 64 (no other record's
    age) gets ``p(r | y_{-i}) = (α / 45) / (n − 1 + α)``."""
    import numpy as np

    rng = np.random.default_rng(5)
    age = rng.integers(20, 40, 60)
    age[7] = 64
    df = pd.DataFrame({"age": age, "income": rng.normal(10, 1, 60) + 0.05 * age})
    df.to_csv(tmp_path / "train.csv", index=False)
    hold = pd.DataFrame({"age": [25, 64, 50], "income": [11.0, 12.0, 13.0]})
    hold.to_csv(tmp_path / "hold.csv", index=False)
    assert _main(["fit", str(tmp_path / "train.csv"), "--method", "regression", "--synthesize",
                  "income", "--draws", "300", "--random-seed", "1", "-q",
                  "--out", str(tmp_path / "model")]) == 0
    assert _main(["synthesize", "--model", str(tmp_path / "model"), "-m", "1",
                  "--random-seed", "2", "-q", "--out", str(tmp_path / "syn")]) == 0
    out = tmp_path / "mem"
    rc = _main(["membership", str(tmp_path / "train.csv"), str(tmp_path / "syn"), "--model",
                str(tmp_path / "model"), "--holdout", str(tmp_path / "hold.csv"),
                "--bootstrap", "0", "--random-seed", "3", "-q", "--out", str(out)])
    assert rc == 0
    rec = pd.read_csv(out / "records.csv")
    assert rec.loc[rec["role"] == "member", "unsynthesized_match"].all()
    assert rec.loc[7, "log_p_unsynthesized"] == pytest.approx(np.log((1 / 45) / 60))
    assert not rec.loc[62, "unsynthesized_match"]  # aged 50: no record's age
    s = json.loads((out / "summary.json").read_text())
    assert s["file"]["unsynthesized"]["n_cells"] == 45
    assert s["file"]["unsynthesized"]["resolution"] == {"age": 1.0}


def test_membership_cli_selected_records(tmp_path, capsys):
    """A release that synthesized the records at risk only (``fit --records``): without
    --selection it is refused with one coded line and no output; with the rule stated as an
    expression the command runs, records the rule in summary.json, and the member left
    unsynthesized has P(member) = 1 with the flag RELEASED_WHOLE."""
    import numpy as np

    rng = np.random.default_rng(6)
    age = rng.integers(20, 80, 40)
    age[[3, 11]] = [92, 95]
    income = np.round(rng.normal(60000, 15000, 40))
    income[[5, 20]] = [180000, 210000]
    df = pd.DataFrame({"Age": age, "Income": income})
    df.to_csv(tmp_path / "train.csv", index=False)
    rule = "Income > 150000 or Age >= 90"
    selected = np.flatnonzero(df.eval(rule).to_numpy())
    (tmp_path / "rows.txt").write_text("\n".join(str(i) for i in selected) + "\n")
    assert _main(["fit", str(tmp_path / "train.csv"), "--method", "regression", "--synthesize",
                  "Income", "--records", str(tmp_path / "rows.txt"), "--draws", "200",
                  "--random-seed", "1", "-q", "--out", str(tmp_path / "model")]) == 0
    assert _main(["synthesize", "--model", str(tmp_path / "model"), "-m", "1",
                  "--random-seed", "2", "-q", "--out", str(tmp_path / "syn")]) == 0
    base = ["membership", str(tmp_path / "train.csv"), str(tmp_path / "syn"), "--model",
            str(tmp_path / "model"), "--records", "0,3,5", "--population", "0",
            "--normaliser-draws", "100", "--bootstrap", "0", "--random-seed", "3", "-q"]
    assert _main([*base, "--out", str(tmp_path / "refused")]) != 0
    err = capsys.readouterr().err
    assert "[MEMBERSHIP_PARTIAL_SYNTHESIS]" in err and "--selection" in err
    assert not (tmp_path / "refused").exists()
    out = tmp_path / "mem"
    loud = [a for a in base if a != "-q"]  # the summary is read
    assert _main([*loud, "--selection", rule, "--out", str(out)]) == 0
    assert "members released whole (P(member) = 1, revealed): 1" in capsys.readouterr().out
    rec = pd.read_csv(out / "records.csv")
    assert rec["row"].tolist() == [0, 3, 5]
    assert rec["slot_selected"].tolist() == [False, True, True]
    whole = rec.iloc[0]
    assert whole["p_member"] == 1.0 and whole["flag_codes"] == "RELEASED_WHOLE"
    s = json.loads((out / "summary.json").read_text())
    assert s["settings"]["selection"] == rule and s["settings"]["n_selected"] == 4
    assert s["file"]["selection"]["n_members_released_whole"] == 1
    assert "MEMBERSHIP_RELEASED_WHOLE" in s["warnings"]


def test_refit_cache_shared_by_attribute_and_membership(release, monkeypatch, capsys):
    """``bayes-risk attribute --refit-cache DIR`` then ``bayes-risk membership --refit-cache DIR``
    with the same --random-seed: the second command refits nothing and writes what it writes
    without the cache; without --random-seed the option is refused (OPTION_REQUIRED)."""
    from bayes_risk.models import DPMPM

    w = release
    made: list[int] = []
    fit_augmented = DPMPM.fit_augmented

    def counted(self, *args, **kwargs):
        made.append(1)
        return fit_augmented(self, *args, **kwargs)

    monkeypatch.setattr(DPMPM, "fit_augmented", counted)
    common = [str(w / "train.csv"), str(w / "syn"), "--model", str(w / "model"),
              "--random-seed", "3", "-q"]
    member = ["membership", *common, "--holdout", str(w / "hold.csv"), "--bootstrap", "20"]
    assert _main([*member, "--out", str(w / "mem_plain")]) == 0
    assert len(made) == 1
    assert _main(["attribute", *common, "--records", "0-9", "--bootstrap", "20",
                  "--refit-cache", str(w / "refits"), "--out", str(w / "att_cached")]) == 0
    assert len(made) == 2 and len(list((w / "refits").iterdir())) == 1
    assert _main([*member, "--refit-cache", str(w / "refits"),
                  "--out", str(w / "mem_cached")]) == 0
    assert len(made) == 2
    # the cache is not hashed as an input: it changes as it fills
    summary = json.loads((w / "mem_cached" / "summary.json").read_text())
    assert summary["input_sha256"] and not [f for f in summary["input_sha256"] if "refits" in f]
    assert (w / "mem_cached" / "records.csv").read_bytes() == \
        (w / "mem_plain" / "records.csv").read_bytes()
    rc = main(["membership", str(w / "train.csv"), str(w / "syn"), "--model", str(w / "model"),
               "--refit-cache", str(w / "refits"), "-q", "--out", str(w / "unseeded")])
    err = capsys.readouterr().err
    assert rc == 2 and "[OPTION_REQUIRED]" in err and "--refit-cache needs --random-seed" in err
