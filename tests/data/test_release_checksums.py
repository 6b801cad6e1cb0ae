"""A release's manifest records the SHA-256 of each dataset file and of its own other fields,
as a model folder's ``model.json`` does, and every reader checks them (issue 64.5).

Before, truncating ``syn_002.parquet`` gave a pyarrow ``ArrowInvalid`` traceback in ``utility``
and a dataset replaced by another went unnoticed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

from bayes_risk.cli import main
from bayes_risk.data import SyntheticData, make_ce_like
from bayes_risk.exceptions import DataWarning, ValidationError


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("checksums")
    d = make_ce_like(120, random_seed=3)
    d.to_csv(root / "ce.csv", index=False)
    rel = SyntheticData([d.assign(Income=d["Income"] * k) for k in (1.1, 0.9)], method="test",
                        random_seed=7)
    rel.save(root / "rel", csv=True)
    return root


def _copy(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder / "rel", tmp_path / "rel"))


def _sha256sum(path: Path) -> str:  # what sha256sum prints, by hand
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_manifest_records_each_file_and_itself(folder):
    man = json.loads((folder / "rel" / "manifest.json").read_text())
    sums = man["sha256"]
    assert set(sums) == {"syn_001.parquet", "syn_002.parquet", "syn_001.csv", "syn_002.csv",
                         "manifest.json"}
    for name in ("syn_001.parquet", "syn_002.parquet", "syn_001.csv"):
        assert sums[name] == _sha256sum(folder / "rel" / name)
    body = {k: v for k, v in man.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert sums["manifest.json"] == hashlib.sha256(text.encode("ascii")).hexdigest()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a verified release loads without a warning
        back = SyntheticData.load(folder / "rel")
    assert back.m == 2


def test_truncated_dataset_is_a_coded_error(folder, tmp_path, capsys):
    p = _copy(folder, tmp_path)
    f = p / "syn_002.parquet"
    f.write_bytes(f.read_bytes()[:400])
    with pytest.raises(ValidationError, match="syn_002.parquet was changed, truncated or "
                       "replaced after it was written") as err:
        SyntheticData.load(p)
    assert err.value.code == "RELEASE_DAMAGED"
    # what writes a release, in the caller's words
    assert "write the release again with SyntheticData.save, or" in str(err.value)
    out = tmp_path / "u"
    assert main(["utility", str(folder / "ce.csv"), str(p), "-q", "--out", str(out)]) == 2
    text = capsys.readouterr().err
    assert "error [RELEASE_DAMAGED]" in text and "syn_002.parquet" in text, text
    assert "write the release again with 'bayes-risk synthesize', or" in text, text
    assert "Traceback" not in text and "ArrowInvalid" not in text
    assert not out.exists()


def test_dataset_replaced_by_another_is_detected(folder, tmp_path):
    """A valid Parquet file of the same shape (the first dataset's) in the second's place."""
    p = _copy(folder, tmp_path)
    shutil.copyfile(p / "syn_001.parquet", p / "syn_002.parquet")
    assert pd.read_parquet(p / "syn_002.parquet").shape == pd.read_parquet(
        p / "syn_001.parquet").shape
    with pytest.raises(ValidationError, match="syn_002.parquet was changed") as err:
        SyntheticData.load(p)
    assert err.value.code == "RELEASE_DAMAGED"


def test_an_edit_the_fields_allow_is_detected(folder, tmp_path):
    """Another model's identity written into the manifest passes its field check, not its
    checksum; an entry missing from ``sha256`` is named."""
    p = _copy(folder, tmp_path)
    f = p / "manifest.json"
    man = json.loads(f.read_text())
    man["model_id"] = "0" * 64
    f.write_text(json.dumps(man))
    with pytest.raises(ValidationError, match="manifest.json was edited after it was written"):
        SyntheticData.load(p)
    del man["model_id"]
    del man["sha256"]["syn_002.parquet"]
    f.write_text(json.dumps(man))
    with pytest.raises(ValidationError, match=r"'sha256' records no checksum of "
                       r"\['syn_002.parquet'\]") as err:
        SyntheticData.load(p)
    assert err.value.code == "MANIFEST_INVALID"
    assert str(err.value).endswith("write the release again with SyntheticData.save.")


def test_release_written_before_the_checksums_reads_with_a_warning(folder, tmp_path, capsys):
    p = _copy(folder, tmp_path)
    f = p / "manifest.json"
    man = json.loads(f.read_text())
    del man["sha256"]  # as written before
    man["format_version"] = 1  # (version 2 records them)
    f.write_text(json.dumps(man))
    with pytest.warns(DataWarning, match="RELEASE_UNVERIFIED") as caught:
        old = SyntheticData.load(p)
    assert {w.message.code for w in caught} == {"RELEASE_UNVERIFIED"}
    assert old.equals(SyntheticData.load(folder / "rel"))
    out = tmp_path / "u"
    assert main(["utility", str(folder / "ce.csv"), str(p), "-q", "--out", str(out)]) == 0
    assert "RELEASE_UNVERIFIED" in {w["code"] for w in json.loads(
        (out / "summary.json").read_text())["run_warnings"]}
    capsys.readouterr()
    # without checksums a truncated file is still no traceback: it cannot be read
    (p / "syn_002.parquet").write_bytes((p / "syn_002.parquet").read_bytes()[:400])
    with pytest.warns(DataWarning, match="RELEASE_UNVERIFIED"):
        with pytest.raises(ValidationError, match="syn_002.parquet cannot be read as Parquet") \
                as err:
            SyntheticData.load(p)
    assert err.value.code == "RELEASE_DAMAGED"
