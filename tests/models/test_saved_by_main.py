"""Folders saved by the code before one module owned the model folder format (issue 65) load
with the current code and give the same numbers (written at main's e52a0609: see the README in
``saved_by_main/``)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_risk.exceptions import ValidationError
from bayes_risk.models import load_model

SAVED = Path(__file__).parent / "saved_by_main"


@pytest.mark.parametrize(("folder", "cls"), [
    ("cart", "CARTSynthesizer"), ("random_forest", "RandomForestSynthesizer"),
    ("pmm", "SmallCellPMMSynthesizer"), ("dpmpm", "DPMPM")])
def test_saved_by_main_loads_and_synthesizes_the_same(folder, cls):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every file checksummed: no MODEL_UNVERIFIED
        model = load_model(SAVED / folder)
    assert type(model).__name__ == cls
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PMM: small cells may remain (expected)
        syn = pd.concat(list(model.synthesize(2, random_seed=3)), ignore_index=True)
    # compared as the CSV the old code wrote (the DPMPM's levels are text)
    pd.testing.assert_frame_equal(syn.astype(str), pd.read_csv(SAVED / f"{folder}_syn.csv",
                                                               dtype=str))


def test_dpmpm_saved_by_main_has_the_same_likelihoods():
    model = load_model(SAVED / "dpmpm")
    data = pd.read_csv(SAVED / "data.csv")[["Urban", "Marital", "Tenure"]].astype(str)
    assert model.check_fingerprint(data) is None
    # bit-identical: the draws are read back as written
    np.testing.assert_array_equal(model.record_loglik(data),
                                  np.load(SAVED / "dpmpm_record_loglik.npy"))


@pytest.mark.parametrize(("folder", "version", "says"), [
    ("dpmpm", "one", "reads format versions 0 to 2"),  # not a number: was a bare ValueError
    ("dpmpm", 3, "newer bayes-risk"),
    ("cart", 3, "newer bayes-risk"),
    ("cart", 0, "reads format versions 1 to 2"),
])
def test_format_version_checked_alike_for_every_family(tmp_path, folder, version, says):
    # one check for every family: the version a folder records, before its checksums
    shutil.copytree(SAVED / folder, tmp_path / folder)
    f = tmp_path / folder / "model.json"
    meta = json.loads(f.read_text(encoding="utf-8"))
    meta["format_version"] = version
    f.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ValidationError, match=says) as err:
        load_model(tmp_path / folder)
    assert err.value.code == "MODEL_FORMAT_VERSION"


@pytest.mark.parametrize("folder", ["cart", "random_forest", "pmm", "dpmpm"])
def test_saved_by_main_has_the_identity_it_recorded(folder):
    # the fitted state a loaded model describes (persisted_state) is the one saved: the
    # identity its releases record is unchanged
    from bayes_risk.data.provenance import model_id

    meta = json.loads((SAVED / folder / "model.json").read_text(encoding="utf-8"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert model_id(load_model(SAVED / folder)) == meta["model_id"]
