"""Every command that reads a release refuses an original that is not the table the release was
made from as the audit does: ``ORIGINAL_DIFFERS`` from the manifest's fingerprint, naming the
columns, before any model is read or rebuilt (``attribute`` said ``RELEASE_NOT_REPRODUCED``
once its rebuilt synthesizer failed to reproduce the release). The commands whose measures pair
no record with a row accept the same records in another order."""

from __future__ import annotations

import warnings

import pytest

import bayes_risk as br
from bayes_risk.cli import main

#: command -> its options besides ORIGINAL SYN --out
COMMANDS = {
    "utility": [],
    "identification": ["--known-unsynthesized", "Age", "Urban", "Marital"],
    "attribute": [],  # the synthesizer rebuilt from the manifest
    "attribute-closest-match": ["--closest-match", "Income"],
    # the model's folder is never read: the original is refused first
    "membership": ["--model", "no-such-model"],
    "attacks": [],
    "disclosure": ["--keys", "Age", "Urban", "Marital", "--target", "Income"],
    "remedy": ["--bottom-top", "Income=:200000"],
    "audit": ["--known", "Age", "Urban", "Marital"],
}
#: the commands whose measures pair no record of the original with a row of a dataset
UNPAIRED = {"attribute-closest-match", "attacks", "disclosure", "remedy"}


def _main(argv: list) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return main([str(a) for a in argv])


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    w = tmp_path_factory.mktemp("original_differs")
    ce = br.make_ce_like(300, random_seed=1)
    ce.to_csv(w / "ce.csv", index=False)
    ce.sample(frac=1.0, random_state=3).to_csv(w / "shuffled.csv", index=False)
    ce.assign(Income=ce["Income"] * 1.5).to_csv(w / "altered.csv", index=False)
    assert _main(["synthesize", w / "ce.csv", "--method", "cart", "--synthesize", "Tenure",
                  "Expenditure", "Income", "--categorical", "Urban", "Marital", "Tenure",
                  "-m", "2", "--random-seed", "1", "--quiet", "--out", w / "syn"]) == 0
    return w


def _argv(work, name: str, original: str, out) -> list:
    return [name.split("-")[0], work / original, work / "syn", *COMMANDS[name], "--quiet",
            "--out", out]


@pytest.mark.parametrize("name, original, culprit", [
    *[(name, "altered.csv", "column(s) ['Income'] hold other values") for name in COMMANDS],
    *[(name, "shuffled.csv", "hold the same values in another row order") for name in COMMANDS
      if name not in UNPAIRED],
])
def test_other_original_refused_by_its_fingerprint(work, tmp_path, capsys, name, original,
                                                   culprit):
    out = tmp_path / "out"
    capsys.readouterr()
    assert _main(_argv(work, name, original, out)) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "error [ORIGINAL_DIFFERS]" in lines[0], err
    assert culprit in lines[0] and "--allow-different-original" in lines[0], err
    assert not out.exists()


@pytest.mark.parametrize("name", sorted(UNPAIRED))
def test_shuffled_original_accepted_where_no_row_is_paired(work, tmp_path, name):
    out = tmp_path / "out"
    assert _main(_argv(work, name, "shuffled.csv", out)) == 0
    assert any(out.iterdir())
