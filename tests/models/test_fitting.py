"""``bayes_risk.models.fitting``: the runs of ``bayes-risk fit`` and ``synthesize`` as library
calls, whose parameters declare those commands' options."""

import pandas as pd
import pytest

from bayes_risk._specs import RECORDS_HELP, cli_arguments
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models.fitting import fit_model, fit_synthesizer


@pytest.fixture
def table():
    return pd.DataFrame({"a": ["x", "y"] * 30, "b": ["u", "v", "w"] * 20,
                         "c": [float(i % 7) for i in range(60)]})


def test_the_parameters_declare_the_commands_options():
    assert [(n, o.flag) for n, o in cli_arguments(fit_model)] == [
        ("method", "--method"), ("columns", "--columns"), ("synthesized", "--synthesize"),
        ("records", "--records")]
    assert [(n, o.flag) for n, o in cli_arguments(fit_synthesizer)] == [
        ("method", "--method"), ("synthesized", "--synthesize"), ("m", "-m"),
        ("records", "--records")]
    # the record numbers' syntax is stated once, in each --records help
    for function in (fit_model, fit_synthesizer):
        assert dict(cli_arguments(function))["records"].help.endswith(RECORDS_HELP)


def test_fit_synthesizer_reads_the_table_after_checking_the_settings(table):
    def read():
        raise AssertionError("read before the settings were checked")

    with pytest.raises(ValidationError, match="method") as err:
        fit_synthesizer(read, None)
    assert err.value.code == "OPTION_REQUIRED" and "with ORIGINAL" not in str(err.value)
    with pytest.raises(ValidationError, match="m must be an integer >= 1"):
        fit_synthesizer(read, "cart", synthesized=["c"], m=0)
    model, m, df = fit_synthesizer(lambda: table, "cart", synthesized=["c"], records="0-9",
                                   random_seed=1, progressbar=False)
    assert m == 20 and df is table  # CART's default m
    syn = model.synthesize(2, random_seed=2)
    for d in syn:  # records 10.. are released unchanged
        assert d["c"].iloc[10:].tolist() == table["c"].iloc[10:].tolist()


def test_fit_model_models_the_columns_given(table):
    with pytest.raises(SchemaError, match="columns: column 'd' is not in the data"):
        fit_model(table, "cart", columns=["a", "d"], synthesized=["a"])
    model, df = fit_model(table, "cart", columns=["a", "c"], synthesized=["c"], random_seed=1,
                          progressbar=False)
    assert list(df.columns) == ["a", "c"] and list(model.synthesize(1, random_seed=0)[0]) == [
        "a", "c"]


@pytest.mark.parametrize("function", [fit_model, fit_synthesizer])
@pytest.mark.parametrize("options, key", [
    # argparse's destination of --components is not a setting: it fitted with K=50
    ({"model_opt_min_leaf": 3}, "model_opt_min_leaf"),
    ({"n_components": 0}, "n_components"),
    ({"n_trees": 10}, "n_trees"),  # rf's, not cart's
    ({"random_seed": 3}, "random_seed"),  # the entry's own argument
])
def test_an_options_key_the_model_does_not_take_is_refused(function, options, key, table):
    def read():
        raise AssertionError("read before the settings were checked")

    with pytest.raises(ValidationError, match=rf"options: {key!r} is not a setting of method="
                       r"'cart'; CARTSynthesizer takes .*'min_leaf'") as err:
        function(read, "cart", synthesized=["c"], options=options)
    assert err.value.code == "OPTION_CONFLICT"
    assert "'random_seed'" not in str(err.value).split("takes")[1]


def test_the_options_are_the_models_settings_by_name(table):
    model, _ = fit_model(table, "cart", synthesized=["c"], options={"min_leaf": 7},
                         random_seed=1, progressbar=False)
    assert model.min_leaf == 7
    model, _, _ = fit_synthesizer(table, "cart", synthesized=["c"], options={"min_leaf": 9},
                                  random_seed=1, progressbar=False)
    assert model.min_leaf == 9
    # the value is checked by the model itself
    with pytest.raises(ValidationError, match="min_leaf must be an integer >= 1. Got -1"):
        fit_model(table, "cart", synthesized=["c"], options={"min_leaf": -1},
                  progressbar=False)


_BAD = [  # argument, value, the start of the message
    ("options", [1], "options must be a mapping"),
    ("records", 5, "records must be record numbers as text"),
    ("records", [1.5], "records must be"),
    ("records", [1, 1], "records must be .* each listed once"),
    ("infer", 3, "infer must be a function"),
    ("progressbar", "x", "progressbar must be True or False"),
    ("synthesized", [], "synthesized must be"),
    ("method", 3, "method must be a registered synthesizer's name"),
]


@pytest.mark.parametrize("name, value, message", [
    *_BAD, ("sampling", [1], "sampling must be a mapping"),
    ("sampling", {"draw": 10}, r"for sampling: \['draw'\]; it takes .*draws"),
    ("columns", [], "columns must be"), ("columns", ["a", "a"], "columns must be .* once"),
    ("random_seed", -1, "random_seed must be"), ("random_seed", [1], "random_seed must be")])
def test_fit_model_refuses_a_bad_argument_naming_it(name, value, message, table):
    def read():
        raise AssertionError("read before the arguments were checked")

    with pytest.raises(ValidationError, match=message) as err:
        fit_model(read, **{"method": "cart", "synthesized": ["c"], name: value})
    assert err.value.code == "INVALID_ARGUMENT"


@pytest.mark.parametrize("name, value, message", [
    *_BAD, ("probe", 1, "probe must be a function"), ("m", 1.5, "m must be an integer"),
    ("random_seed", "s", "random_seed must be")])
def test_fit_synthesizer_refuses_a_bad_argument_naming_it(name, value, message, table):
    with pytest.raises(ValidationError, match=message) as err:
        fit_synthesizer(table, **{"method": "cart", "synthesized": ["c"], name: value})
    assert err.value.code == "INVALID_ARGUMENT"


@pytest.mark.parametrize("function", [fit_model, fit_synthesizer])
@pytest.mark.parametrize("original, message", [
    (None, "original must be a pandas DataFrame or a function of no arguments"),
    (pd.read_csv, "original, a function, must take no arguments. Got .* needs arguments"),
    (lambda: [1, 2], "original must be a pandas DataFrame. Got"),
])
def test_an_original_that_is_no_table_is_named(function, original, message):
    with pytest.raises(ValidationError, match=message):
        function(original, "cart", synthesized=["c"])
