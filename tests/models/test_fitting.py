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
