"""Saved CART, random-forest and PMM synthesizers: round trip, format version, damaged folders."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk.data import SyntheticData, infer_schema, make_ce_like
from bayes_risk.exceptions import DataWarning, ValidationError
from bayes_risk.models import (
    CARTSynthesizer,
    RandomForestSynthesizer,
    SmallCellPMMSynthesizer,
    load_model,
)


@pytest.fixture(scope="module")
def ce():
    df = make_ce_like(300, random_seed=1)
    # a non-default index and string labels: both must come back from the folder unchanged
    df.index = pd.RangeIndex(100, 400, name="rid")
    df["Urban"] = df["Urban"].map({1: "urban", 2: "rural"}).astype(object)
    schema = infer_schema(df, categorical=["Urban", "Marital", "Tenure", "Educ"])
    return df, schema


def _same_release(a, b):
    """Bit-identical synthetic data (values, dtypes, index) and the same manifest fields."""
    assert a.m == b.m
    for x, y in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(x, y, check_exact=True)
    assert a.settings == b.settings
    assert a.extra == b.extra
    assert a.original_fingerprint == b.original_fingerprint
    assert np.array_equal(a.synthesized_records, b.synthesized_records)


def _quiet_synthesize(model, m, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # PMM: small cells may remain (expected)
        return model.synthesize(m, random_seed=seed)


CASES = [
    pytest.param(lambda: CARTSynthesizer(random_seed=1), ["Tenure", "Income", "Expenditure"],
                 id="cart"),
    pytest.param(lambda: CARTSynthesizer(smoothing=True, random_seed=1),
                 ["Tenure", "Income", "Expenditure"], id="cart-smoothing"),
    pytest.param(lambda: CARTSynthesizer(donor="uniform", unroutable="random_descent",
                                         min_deviance=1e-3, prune_to_diversity=3, random_seed=1),
                 ["Urban", "Tenure", "Income"], id="cart-synthpop"),
    pytest.param(lambda: RandomForestSynthesizer(n_trees=25, random_seed=1),
                 ["Tenure", "Marital", "Educ"], id="rf"),
    pytest.param(lambda: RandomForestSynthesizer(n_trees=20, oob_only=True, min_oob_trees=4,
                                                 probabilities="leaf_dirichlet", random_seed=1),
                 ["Tenure", "Marital"], id="rf-oob"),
    pytest.param(lambda: RandomForestSynthesizer(n_trees=20, group_by="Urban",
                                                 min_group_size=120, random_seed=1),
                 ["Tenure", "Marital"], id="rf-groups"),
    pytest.param(lambda: RandomForestSynthesizer(n_trees=15, donor="bayes_bootstrap",
                                                 group_by="Urban", min_group_size=120,
                                                 random_seed=1),
                 ["Income", "Tenure", "Expenditure"], id="rf-numeric"),
    pytest.param(lambda: SmallCellPMMSynthesizer(
        identifying=["Urban", "Marital", "Tenure"], threshold=3, random_seed=1), None, id="pmm"),
]


@pytest.mark.parametrize(("make", "cols"), CASES)
def test_release_holds_what_it_reads_back(ce, tmp_path, make, cols):
    """A tree release's manifest is the one a Bayesian model's is (``model_release``): its
    settings as the saved folder holds them, and the same fields after writing and reading."""
    df, schema = ce
    model = make().fit(df, schema=schema, synthesized=cols)
    z = _quiet_synthesize(model, 2, 7)
    assert z.settings == model.saved_settings()
    assert z.random_seed == 7 and z.method == model.method_name and z.model_id
    assert z.synthesized_records is not getattr(model, "records_", None)
    z.save(tmp_path / "release")
    back = SyntheticData.load(tmp_path / "release")
    assert np.array_equal(back.synthesized_records, z.synthesized_records)
    fields = ("settings", "random_seed", "method", "generation", "proper", "imputed_columns",
              "model_id", "original_fingerprint")
    assert [getattr(back, f) for f in fields] == [getattr(z, f) for f in fields]


@pytest.mark.parametrize(("make", "cols"), CASES)
def test_round_trip_is_bit_identical(ce, tmp_path, make, cols):
    df, schema = ce
    model = make().fit(df, schema=schema, synthesized=cols)
    folder = model.save(tmp_path / "model")
    assert sorted(p.name for p in folder.iterdir()) == ["arrays.npz", "data.parquet",
                                                        "model.json"]
    loaded = load_model(folder)
    assert type(loaded) is type(model)
    assert loaded.get_params() == model.get_params() or model.method_name == "cart"
    _same_release(_quiet_synthesize(model, 3, 7), _quiet_synthesize(loaded, 3, 7))
    # the default seed (the setting) is kept too
    _same_release(_quiet_synthesize(model, 1, None), _quiet_synthesize(loaded, 1, None))
    # a loaded synthesizer is saved again unchanged (the same arrays and data)
    again = loaded.save(tmp_path / "again")
    m1 = json.loads((folder / "model.json").read_text())
    m2 = json.loads((again / "model.json").read_text())
    assert m1["sha256"] == m2["sha256"]
    assert m1["state"] == m2["state"]


def test_loaded_forest_routes_as_scikit_learn(ce, tmp_path):
    df, schema = ce
    model = RandomForestSynthesizer(n_trees=15, random_seed=3).fit(
        df, schema=schema, synthesized=["Tenure"])
    loaded = RandomForestSynthesizer.load(model.save(tmp_path / "m"))
    X = np.random.default_rng(0).normal(0, 5, size=(200, len(model.predictors_["Tenure"])))
    X = X.astype(np.float32)
    X[:, 0] = np.round(X[:, 0])  # values on and around the thresholds
    np.testing.assert_array_equal(loaded.forests_["Tenure"].apply(X),
                                  model.forests_["Tenure"].apply(X))


def test_loaded_rf_serves_the_plugin(ce, tmp_path):
    """The plug-in likelihood reads the stored tree arrays and bootstrap samples."""
    from bayes_risk.models import RFPlugin

    df, schema = ce
    model = RandomForestSynthesizer(n_trees=10, random_seed=3).fit(
        df, schema=schema, synthesized=["Tenure", "Marital"])
    loaded = load_model(model.save(tmp_path / "m"))
    a, b = RFPlugin(model, df.reset_index(drop=True)), RFPlugin(loaded, df.reset_index(drop=True))
    for col in ("Tenure", "Marital"):
        key = (col, None)  # the plug-in's forests are keyed by (column, group); None: ungrouped
        np.testing.assert_array_equal(a._forests[key].counts, b._forests[key].counts)
        np.testing.assert_array_equal(a._forests[key].train_leaf, b._forests[key].train_leaf)


def test_pmm_with_constraints_is_not_saved(ce, tmp_path):
    df, schema = ce

    def keep_urban(row, value):
        return True

    model = SmallCellPMMSynthesizer(identifying=["Urban", "Tenure"], threshold=3,
                                    constraints=[keep_urban]).fit(df, schema=schema)
    with pytest.raises(ValidationError, match="constraints") as err:
        model.save(tmp_path / "m")
    assert err.value.code == "CONSTRAINTS_NOT_SAVED"
    assert not (tmp_path / "m").exists()


@pytest.fixture
def saved_cart(ce, tmp_path):
    df, schema = ce
    model = CARTSynthesizer(random_seed=1).fit(df, schema=schema, synthesized=["Tenure", "Income"])
    return model.save(tmp_path / "cart")


@pytest.mark.parametrize("version", [0, 3, None, "1"])
def test_other_format_version_refused(saved_cart, version):
    f = saved_cart / "model.json"
    meta = json.loads(f.read_text())
    meta["format_version"] = version
    f.write_text(json.dumps(meta))
    with pytest.raises(ValidationError, match="format version") as err:
        load_model(saved_cart)
    assert err.value.code == "MODEL_FORMAT_VERSION"


@pytest.mark.parametrize("damage", ["delete-arrays", "delete-data", "truncate-arrays",
                                    "edit-data", "no-checksums", "bad-state"])
def test_damaged_folder_refused(saved_cart, damage):
    what, name = damage.split("-", 1)
    meta_file = saved_cart / "model.json"
    if what == "delete":
        (saved_cart / ("arrays.npz" if name == "arrays" else "data.parquet")).unlink()
    elif what == "truncate":
        f = saved_cart / "arrays.npz"
        f.write_bytes(f.read_bytes()[:200])
    elif what == "edit":
        f = saved_cart / "data.parquet"
        raw = bytearray(f.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        f.write_bytes(bytes(raw))
    else:
        meta = json.loads(meta_file.read_text())
        if name == "checksums":
            del meta["sha256"]
        else:
            meta["state"]["trees"][0]["n_nodes"] += 5
        meta_file.write_text(json.dumps(meta))
    with pytest.raises(ValidationError, match="damaged") as err:
        load_model(saved_cart)
    assert err.value.code == "MODEL_DAMAGED"
    assert str(err.value).endswith("save the model again (or fit it again).")


def test_folder_of_another_model_refused(saved_cart):
    with pytest.raises(ValidationError, match="'cart' model, not 'rf'"):
        RandomForestSynthesizer.load(saved_cart)


def test_save_before_fit_refused(tmp_path):
    from bayes_risk.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="'save'"):
        CARTSynthesizer().save(tmp_path / "m")


def _tamper(folder, arrays=None, state=None):
    """Change the saved arrays (``{name: array}``) or fields of ``model.json``'s state and
    record the checksums again: a folder consistent with itself, but not a fitted model."""
    from bayes_risk.models.persistence import write_model_json

    if arrays is not None:
        with np.load(folder / "arrays.npz") as z:
            saved = {k: z[k] for k in z.files}
        saved.update(arrays)
        np.savez(folder / "arrays.npz", **saved)
    meta = json.loads((folder / "model.json").read_text())
    if state is not None:
        meta["state"].update(state)
    write_model_json(folder, meta)


@pytest.mark.parametrize(("make", "cols", "arrays", "says"), [
    (lambda: CARTSynthesizer(random_seed=1), ["Tenure", "Income"],
     {"records": np.ones(300, dtype=np.int8)}, "field 'records' holds int8 values, not booleans"),
    (lambda: CARTSynthesizer(random_seed=1), ["Tenure", "Income"],
     {"tree0.threshold": np.zeros(2)}, "field 'tree0.threshold' has shape (2,)"),
    (lambda: RandomForestSynthesizer(n_trees=5, random_seed=1), ["Tenure"],
     {"records0": np.ones(299, dtype=bool)}, "field 'records0' has shape (299,), not (300,)"),
    (lambda: RandomForestSynthesizer(n_trees=5, random_seed=1), ["Tenure"],
     {"forest0.left": np.zeros(3)}, "field 'forest0.left' holds float64 values"),
    (lambda: SmallCellPMMSynthesizer(identifying=["Urban", "Marital", "Tenure"], threshold=3),
     None, {"recipients": np.zeros(300)}, "field 'recipients' holds float64 values"),
], ids=["cart-dtype", "cart-shape", "rf-shape", "rf-dtype", "pmm-dtype"])
def test_tampered_arrays_refused_naming_file_and_field(ce, tmp_path, make, cols, arrays, says):
    df, schema = ce
    folder = make().fit(df, schema=schema, synthesized=cols).save(tmp_path / "m")
    _tamper(folder, arrays=arrays)
    with pytest.raises(ValidationError, match="damaged") as err:
        load_model(folder)
    assert err.value.code == "MODEL_DAMAGED"
    assert str(folder) in str(err.value) and "arrays.npz" in str(err.value)
    assert says in str(err.value)


def test_tampered_state_refused_naming_the_field(saved_cart):
    _tamper(saved_cart, state={"n_records": 299})
    with pytest.raises(ValidationError, match="n_records is 299") as err:
        load_model(saved_cart)
    assert err.value.code == "MODEL_DAMAGED"


def test_state_that_is_no_object_refused(saved_cart):
    from bayes_risk.models.persistence import write_model_json

    meta = json.loads((saved_cart / "model.json").read_text())
    meta["state"] = [1, 2]
    write_model_json(saved_cart, meta)
    with pytest.raises(ValidationError, match="field 'state' is not an object") as err:
        load_model(saved_cart)
    assert err.value.code == "MODEL_DAMAGED"


@pytest.mark.parametrize(("make", "cols"), [
    (lambda: RandomForestSynthesizer(n_trees=5, group_by="Urban", min_group_size=120,
                                     random_seed=1), ["Tenure", "Income"]),
    (lambda: SmallCellPMMSynthesizer(identifying=["Urban", "Marital", "Tenure"], threshold=3),
     None)], ids=["rf", "pmm"])
def test_loaded_state_is_the_fitted_one(ce, tmp_path, make, cols):
    import dataclasses

    df, schema = ce
    model = make().fit(df, schema=schema, synthesized=cols)
    loaded = load_model(model.save(tmp_path / "m"))
    # a frozen state_, of the class the fit made, that saves the same fields and arrays
    assert dataclasses.is_dataclass(loaded.state_) and type(loaded.state_) is type(model.state_)
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.state_.schema = None
    (s1, a1), (s2, a2) = model.persisted_state(), loaded.persisted_state()
    assert s1 == s2 and a1.keys() == a2.keys()
    for k in a1:
        np.testing.assert_array_equal(a1[k], a2[k])
