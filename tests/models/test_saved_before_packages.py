"""Models saved before ``models/`` became family packages still load and give the same numbers.

A saved folder names its model by registry name (``"method"`` in ``model.json``), never by module
path, so moving the modules must not change what a folder loads as. The folders in
``saved_before_packages/`` were written by the flat layout (see the README there).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_risk.models import CARTSynthesizer, load_model
from bayes_risk.models.dpmpm import DPMPM

SAVED = Path(__file__).parent / "saved_before_packages"


@pytest.fixture(scope="module")
def data():
    return pd.read_csv(SAVED / "data.csv")


@pytest.mark.parametrize("folder", ["dpmpm", "cart"])
def test_manifest_names_no_module(folder):
    text = (SAVED / folder / "model.json").read_text(encoding="utf-8")
    assert "bayes_risk" not in text
    assert json.loads(text)["method"] == folder


def test_dpmpm_saved_before_loads_with_the_same_numbers(data):
    model = load_model(SAVED / "dpmpm")
    assert type(model) is DPMPM
    assert model.check_fingerprint(data) is None
    expected = pd.read_csv(SAVED / "dpmpm_record_loglik.csv").to_numpy()
    np.testing.assert_array_equal(model.record_loglik(data), expected)
    syn = pd.concat(list(model.synthesize(2, random_seed=3)), ignore_index=True)
    pd.testing.assert_frame_equal(syn, pd.read_csv(SAVED / "dpmpm_syn.csv"))


def test_cart_saved_before_loads_and_synthesizes_the_same(data):
    model = load_model(SAVED / "cart")
    assert type(model) is CARTSynthesizer
    assert model.check_fingerprint(data) is None
    syn = pd.concat(list(model.synthesize(2, random_seed=3)), ignore_index=True)
    pd.testing.assert_frame_equal(syn, pd.read_csv(SAVED / "cart_syn.csv"))


def test_dpmpm_saved_before_gets_its_label_invariant_group(tmp_path):
    # saved before the posterior held the diagnosed quantities: made from the draws when the
    # loaded model is checked (the same figures as its convergence.json) and saved with it
    model = load_model(SAVED / "dpmpm")
    assert "label_invariant" not in model.posterior_.children
    stored = json.loads((SAVED / "dpmpm" / "convergence.json").read_text())
    assert model.convergence_summary()["quantities"] == stored["quantities"]
    assert set(model.posterior_["label_invariant"].data_vars) == set(stored["quantities"])
    model.save(tmp_path / "again")
    again = load_model(tmp_path / "again")
    assert "label_invariant" in again.posterior_.children
    assert again.convergence_summary()["quantities"] == stored["quantities"]
