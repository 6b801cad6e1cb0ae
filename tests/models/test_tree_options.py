"""The tree options grouped in ``trees=TreeOptions(...)`` (issue 65): the keywords of before
still work, saved folders hold the same flat settings (CART's ``model.json`` byte for byte as
main saved it), and ``fit`` and ``synthesize`` declare the same tree options from the fields."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
import pytest

from bayes_risk._specs import cli_fields
from bayes_risk._tree_spec import CART_TREES, FOREST_TREES
from bayes_risk.cli import build_parser, main
from bayes_risk.data import infer_schema
from bayes_risk.exceptions import ValidationError
from bayes_risk.models import CARTSynthesizer, RandomForestSynthesizer, TreeOptions

SAVED = Path(__file__).parent / "saved_by_main"


@pytest.fixture(scope="module")
def data():
    df = pd.read_csv(SAVED / "data.csv")
    return df, infer_schema(df, categorical=["Urban", "Marital", "Tenure"])


@pytest.mark.parametrize("model", [
    CARTSynthesizer(random_seed=1), CARTSynthesizer(min_leaf=5, random_seed=1),
    CARTSynthesizer(trees=TreeOptions(min_leaf=5), random_seed=1)])
def test_cart_saves_the_folder_main_saved(tmp_path, data, model):
    # the same fit as saved_by_main/cart (main at e52a0609): model.json byte for byte, so the
    # flat settings, their order and the model's identity are those of the old constructor;
    # but for the folder's format version, 2 since issue 86, and the checksum that records it
    df, schema = data
    folder = model.fit(df, schema=schema, synthesized=["Tenure", "Income"]).save(tmp_path / "m")
    new = json.loads((folder / "model.json").read_text())
    old = json.loads((SAVED / "cart" / "model.json").read_text())
    assert (new.pop("format_version"), old.pop("format_version")) == (2, 1)
    assert new["sha256"].pop("model.json") != old["sha256"].pop("model.json")
    assert json.dumps(new) == json.dumps(old)  # every other field, in the same order


def test_forest_settings_flat_in_the_order_main_saved():
    old = json.loads((SAVED / "random_forest" / "model.json").read_text())["settings"]
    for model in (RandomForestSynthesizer(n_trees=5, random_seed=1),
                  RandomForestSynthesizer(trees=TreeOptions(n_trees=5), random_seed=1)):
        assert list(model.release_settings().items()) == list(old.items())
        assert RandomForestSynthesizer.from_settings(old).flat_settings() == \
            model.flat_settings()


def test_keywords_set_params_and_resolved_values():
    cart = CARTSynthesizer(min_leaf=7, max_depth=3)
    assert cart.trees == TreeOptions(min_leaf=7, max_depth=3)
    assert (cart.min_leaf, cart.min_deviance, cart.max_depth) == (7, 0.0, 3)
    cart.set_params(min_leaf=9, trees__prune_to_diversity=2)
    assert cart.trees == TreeOptions(min_leaf=9, max_depth=3, prune_to_diversity=2)
    rf = RandomForestSynthesizer()
    rf.set_params(trees__n_trees=10)  # trees was None
    assert (rf.n_trees, rf.min_samples_leaf, rf.procedure) == (10, 1, "A")
    with pytest.raises(AttributeError):
        rf.n_trees = 3  # read only: a silent instance attribute would be ignored by the fit
    assert repr(TreeOptions(n_trees=10)) == "TreeOptions(n_trees=10)"


def test_refused_tree_options(data):
    with pytest.raises(TypeError, match="unexpected keyword argument 'min_leaf'"):
        RandomForestSynthesizer(min_leaf=3)
    with pytest.raises(ValidationError, match="does not take n_trees") as e:
        CARTSynthesizer(trees=TreeOptions(n_trees=3)).fit(*data[:1], schema=data[1],
                                                           synthesized=["Tenure"])
    assert e.value.code == "OPTION_CONFLICT"
    with pytest.raises(ValidationError, match="trees must be a bayes_risk.models.TreeOptions"):
        _ = CARTSynthesizer(trees={"min_leaf": 3}).min_leaf
    with pytest.raises(ValidationError, match="no setting 'min_leaf'"):
        RandomForestSynthesizer().set_params(min_leaf=3)


def _flags(command, dests):
    sub = next(a for a in build_parser(command)._actions
               if isinstance(a, argparse._SubParsersAction)).choices[command]
    return {a.option_strings[0] for a in sub._actions if a.dest in dests}


def test_fit_and_synthesize_declare_the_same_tree_options():
    fields = {f.name: opt.flag for f, opt in cli_fields(TreeOptions)}
    assert set(fields) == set(CART_TREES) | set(FOREST_TREES)
    synthesize, fit = (_flags(c, {f"model_opt_{name}" for name in fields})
                       for c in ("synthesize", "fit"))
    assert synthesize == fit == set(fields.values())


@pytest.mark.parametrize("command", ["fit", "synthesize"])
def test_tree_options_reach_the_forest(tmp_path, command):
    # --max-features and --procedure were not options of 'fit' before
    out = tmp_path / "out"
    assert main([command, str(SAVED / "data.csv"), "--method", "rf", "--synthesize", "Marital",
                 "Tenure", "--categorical", "Urban", "Marital", "Tenure", "--n-trees", "3",
                 "--max-features", "1", "--procedure", "B", "--random-seed", "1", "--quiet",
                 "--out", str(out)]) == 0
    name = "model.json" if command == "fit" else "manifest.json"
    settings = json.loads((out / name).read_text())["settings"]
    assert (settings["n_trees"], settings["max_features"], settings["procedure"]) == (3, 1, "B")
