"""The constraint table of the plain checks (``bayes_risk._constraints``): the vocabulary's
boundaries, NaN / infinities / bools, the one message, and the specs that declare their checks
in it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bayes_risk._constraints import (
    AtMost,
    Flag,
    InstanceOf,
    Interval,
    OneOf,
    Options,
    Requires,
    SequenceOf,
    Within,
    check_fields,
    check_params,
    check_relations,
    check_value,
    checked,
)
from bayes_risk._utility_specs import OverlapSpec, PropensitySpec
from bayes_risk.attribute.specs import EstimatorSpec
from bayes_risk.disclosure.specs import ExclusionSpec
from bayes_risk.exceptions import ValidationError
from bayes_risk.identification.specs import MatchSpec, PopulationSpec
from bayes_risk.membership.specs import AttackSpec, RatioSpec
from bayes_risk.models import Sampling


@pytest.mark.parametrize("interval, inside, outside", [
    (Interval(int, 1), [1, 2, np.int64(7), 10**12], [0, -1, 1.0, 1.5, True, "1", None]),
    (Interval(int, 0, 3), [0, 3, np.uint8(2)], [-1, 4, False, np.float64(2.0)]),
    (Interval(float, 0), [0, 0.0, 5, np.float32(0.5), 1e300], [-1e-12, math.inf, math.nan,
                                                               True, np.bool_(True), "0.5"]),
    (Interval(float, 0, 1, closed="neither"), [1e-9, 0.5, 1 - 1e-12], [0, 1, 0.0, 1.0, -0.5,
                                                                     math.nan]),
    (Interval(float, 0, 1, closed="left"), [0, 0.999], [1, 1.0, -math.inf]),
    (Interval(float, 0, 1, closed="right"), [1, 1.0, 0.25], [0, 0.0, 1.0000001]),
    (Interval(float, None, 2, closed="neither"), [-1e9, 1.99], [2, math.inf, -math.inf]),
    (Interval(float), [0.0, -3], [math.nan, math.inf, -math.inf, False]),
])
def test_interval_boundaries_nan_inf_and_bools(interval, inside, outside):
    for v in inside:
        assert interval.accepts(v), v
        out = check_value(v, interval, "x")
        assert type(out) is interval.kind and out == v
    for v in outside:
        assert not interval.accepts(v), v
        with pytest.raises(ValidationError, match=r"^x must be .* Got ") as err:
            check_value(v, interval, "x")
        assert err.value.code == "INVALID_ARGUMENT"


@pytest.mark.parametrize("constraint, text", [
    (Interval(int, 1), "an integer >= 1"),
    (Interval(int), "an integer"),
    (Interval(int, 2, 9), "an integer in [2, 9]"),
    (Interval(float, 0), "a finite number >= 0"),
    (Interval(float, 0, closed="neither"), "a finite number > 0"),
    (Interval(float, None, 1, closed="neither"), "a number < 1"),
    (Interval(float, 0, 1, closed="neither"), "a number in (0, 1)"),
    (Interval(float, 0, 1, closed="right"), "a number in (0, 1]"),
    (Interval(float, 0, 0.5, closed="left"), "a number in [0, 0.5)"),
    (Interval(float), "a finite number"),
    (Options(("a", "b")), "one of ['a', 'b']"),
    (Options(("a", "b", None), listed=True), "'a', 'b' or None"),
    (Options(("sqrt",), listed=True), "'sqrt'"),
    (Flag(), "True or False"),
    (InstanceOf(str, "a string"), "a string"),
])
def test_each_constraint_says_what_it_takes(constraint, text):
    assert constraint.describe() == text


def test_sequences_of_items_refuse_a_string_an_empty_one_bad_items_and_repeats():
    names = SequenceOf(InstanceOf(str, "a column name"), "column names")
    import pandas as pd

    for ok in (["Age"], ("Age", "Income"), np.array(["Age"]), pd.Index(["Age"])):
        assert check_value(ok, names, "keys") is ok
    assert SequenceOf(Interval(int, 0), "indices").accepts(range(3))
    for bad in ("Age", [], ["Age", 3], {"Age"}, {"Age": 1}, np.array([["Age"]]), None):
        assert not names.accepts(bad), bad
    with pytest.raises(ValidationError) as err:
        check_value("Age", names, "keys")
    assert str(err.value) == "keys must be a non-empty sequence of column names. Got 'Age'."
    radii = SequenceOf(Interval(float, 0), "finite numbers >= 0", min_len=0, unique=True)
    assert radii.accepts([]) and radii.accepts(np.array([0.0, 2.5]))
    for bad in ([1.0, 1.0], [-1.0], [math.nan], [True], [[1.0]]):
        assert not radii.accepts(bad), bad
    assert radii.describe() == "a sequence of finite numbers >= 0, each listed once"
    assert SequenceOf(Flag(), "flags", min_len=2).describe() == "a sequence of 2 or more flags"
    pair = SequenceOf(Interval(float), "numbers", min_len=2, max_len=2)
    assert pair.accepts((0, 1.5)) and not pair.accepts([1.0]) and not pair.accepts([1, 2, 3])
    assert SequenceOf(Flag(), "flags", min_len=0, max_len=3).describe() == \
        "a sequence of 0 to 3 flags"


def test_the_message_names_the_argument_the_value_and_every_alternative():
    c = [Options(("sqrt",), listed=True), Interval(int, 1), None]
    assert check_value(None, c, "max_features") is None
    assert check_value("sqrt", c, "max_features") == "sqrt"
    assert check_value(np.int32(3), c, "max_features") == 3
    with pytest.raises(ValidationError) as err:
        check_value(0, c, "max_features")
    # None is the default left out: the message lists what may be given
    assert str(err.value) == "max_features must be 'sqrt' or an integer >= 1. Got 0."
    with pytest.raises(ValidationError) as err:
        check_value(0, Interval(int, 1), "n", code="TOO_FEW_RECORDS")
    assert err.value.code == "TOO_FEW_RECORDS"


def test_the_message_shows_a_scalar_and_names_anything_else_by_its_type():
    import pandas as pd

    from bayes_risk.data.schema import SCHEMA

    with pytest.raises(ValidationError) as err:
        check_value(pd.DataFrame({"a": range(100)}), [SCHEMA, None], "schema")
    assert str(err.value) == "schema must be a bayes_risk Schema. Got DataFrame."
    with pytest.raises(ValidationError, match=r"Got \['a', 1\]\.$"):
        check_value(["a", 1], SequenceOf(InstanceOf(str, "a name"), "names"), "names")
    with pytest.raises(ValidationError, match=r"Got list\.$"):
        check_value([["a"]], SequenceOf(InstanceOf(str, "a name"), "names"), "names")
    with pytest.raises(ValidationError, match=r"Got 'x{56}\.\.\.\.$"):
        check_value("x" * 100, Interval(int, 1), "n")
    with pytest.raises(ValidationError, match=r"Got np\.float64\(2\.5\)\.$|Got 2\.5\.$"):
        check_value(np.float64(2.5), Interval(int, 1), "n")


def test_none_is_refused_unless_listed():
    with pytest.raises(ValidationError, match="Got None"):
        check_value(None, Interval(int, 1), "draws")
    with pytest.raises(ValidationError, match="Got None"):
        check_value(None, Options(("a",)), "kind")


def test_flags_and_options():
    assert check_value(np.bool_(False), Flag(), "psis") is False
    for v in (0, 1, "True", None, np.int64(1)):
        with pytest.raises(ValidationError, match="psis must be True or False"):
            check_value(v, Flag(), "psis")
    # an array compared element-wise is no option (and no numpy error)
    with pytest.raises(ValidationError, match="kind must be one of"):
        check_value(np.array(["a", "b"]), Options(("a", "b")), "kind")
    # a bool compares equal to 1: Options compares by ==, as the checks it replaced
    assert check_value(1.0, Options((1, 2)), "k") == 1.0


def test_check_params_reads_a_mapping_or_attributes():
    table = {"n": Interval(int, 1), "alpha": Interval(float, 0, 1, closed="neither")}
    assert check_params({"n": 2, "alpha": 0.5, "other": "x"}, table) == {"n": 2, "alpha": 0.5}

    class Model:
        n = 3
        alpha = 1.0

    with pytest.raises(ValidationError, match=r"^M\.alpha must be a number in \(0, 1\)\. "
                                              r"Got 1\.0\.$"):
        check_params(Model(), table, owner="M.")


@dataclass(frozen=True)
class _Spec:
    size: int = field(default=1, metadata=checked(Interval(int, 1)))
    rate: float | None = field(default=None, metadata=checked(
        [Interval(float, 0, closed="neither"), None], label="rate (per record)"))
    free: object = None


def test_check_fields_converts_frozen_fields_and_names_them():
    @dataclass(frozen=True)
    class Spec(_Spec):
        def __post_init__(self):
            check_fields(self)

    s = Spec(size=np.int64(4), rate=np.float32(0.5))
    assert type(s.size) is int and type(s.rate) is float
    with pytest.raises(ValidationError, match=r"^Spec\.size must be an integer >= 1\. Got 0\.$"):
        Spec(size=0)
    with pytest.raises(ValidationError, match=r"^rate \(per record\) must be a finite number > 0"):
        Spec(rate=math.inf)


@pytest.mark.parametrize("relation, values, message", [
    (Requires("a", "b"), {"a": 1}, r"^a needs b\.$"),
    (Requires("a", ("b", "c"), why="it reads them"), {"a": [1]}, r"^a needs b or c \(it reads"),
    (Requires("kind", "x", when=("two_records",)), {"kind": "two_records"},
     r"^kind='two_records' needs x\.$"),
    (Requires("x", "kind", equal=("one",)), {"x": 1, "kind": "other"},
     r"^x needs kind='one'\. Got kind='other'\.$"),
    (OneOf(("a", "b")), {"a": 1, "b": 2}, r"^a and b: give one of them, not both\.$"),
    (OneOf(("a", "b"), required=True), {}, r"^give exactly one of a and b\.$"),
    (OneOf(("a", "b"), required=True), {"a": 1, "b": 2}, r"^give exactly one of a and b\.$"),
    (OneOf(("a", "b", "c"), required=True, only=False), {"a": None, "b": False},
     r"^nothing to do: give a, b or c\.$"),
    (AtMost("low", "high"), {"low": 3, "high": 2},
     r"^low must be <= high\. Got low=3 and high=2\.$"),
    (Within("x", "y"), {"x": {"p": 1}, "y": ["q"]},
     r"^x names \['p'\], which y does not name \(it names \['q'\]\)\.$"),
    (Within("x", "y", apart=True), {"x": "p", "y": ("p", "q")},
     r"^x and y both name \['p'\]; a column is one or the other\.$"),
])
def test_a_broken_relation_names_its_arguments_and_what_was_expected(relation, values, message):
    with pytest.raises(ValidationError, match=message) as err:
        check_relations(values, [relation])
    assert err.value.code == relation.code


@pytest.mark.parametrize("relation, values", [
    (Requires("a", "b"), {"a": None}), (Requires("a", "b"), {"a": False}),
    (Requires("a", "b"), {"a": 0, "b": 0}), (Requires("a", "b"), {"a": (), "b": ""}),
    (Requires("a", ("b", "c")), {"a": 1, "c": "x"}),
    (Requires("kind", "x", when=("one",)), {"kind": "two"}),
    (Requires("x", "kind", equal=("one", None)), {"x": 1}),
    (OneOf(("a", "b")), {}), (OneOf(("a", "b"), required=True), {"b": np.zeros(3)}),
    (AtMost("low", "high"), {"low": 3}), (AtMost("low", "high"), {"low": 2, "high": 2}),
    (Within("x", "y"), {"x": ["p"]}), (Within("x", "y"), {"x": ["p"], "y": {"p": 1}}),
    (Within("x", "y", apart=True), {"x": ["p"], "y": ["q"]}),
])
def test_a_relation_that_holds_or_reads_no_given_argument_passes(relation, values):
    check_relations(values, [relation])


def test_the_table_step_checks_the_relations_after_each_argument():
    table = {"low": Interval(int, 1), "high": Interval(int, 1)}
    relations = (AtMost("low", "high"),)
    with pytest.raises(ValidationError, match=r"^low must be an integer >= 1"):
        check_params({"low": 0, "high": 0}, table, relations=relations)
    with pytest.raises(ValidationError, match=r"^M\.low must be <= M\.high\. Got M\.low=3"):
        check_params({"low": np.int64(3), "high": 2}, table, relations=relations, owner="M.")

    @dataclass(frozen=True)
    class Spec:
        RELATIONS: ClassVar[tuple] = (Requires("rate", "size"),)
        size: int | None = field(default=None, metadata=checked([Interval(int, 1), None]))
        rate: float | None = None

        def __post_init__(self):
            check_fields(self)

    with pytest.raises(ValidationError, match=r"^Spec\.rate needs Spec\.size\.$") as err:
        Spec(rate=0.5)
    assert err.value.code == "OPTION_CONFLICT"
    assert Spec(rate=0.5, size=2).size == 2


@given(st.one_of(st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True),
                 st.booleans(), st.none(), st.text(max_size=2)),
       st.sampled_from(["both", "left", "right", "neither"]))
def test_interval_agrees_with_its_definition(value, closed):
    iv = Interval(float, -1, 2, closed=closed)
    number = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value))
    expected = number and (value >= -1 if closed in ("both", "left") else value > -1) and (
        value <= 2 if closed in ("both", "right") else value < 2)
    assert iv.accepts(value) == expected
    if not expected:
        with pytest.raises(ValidationError) as err:
            check_value(value, iv, "v")
        assert str(err.value) == f"v must be a number in {iv.describe()[12:]}. Got {value!r}."


@pytest.mark.parametrize("make, message", [
    (lambda: Sampling(draws=0), "draws must be an integer >= 1. Got 0."),
    (lambda: Sampling(tune=1.5), "tune must be an integer >= 0. Got 1.5."),
    (lambda: EstimatorSpec(bootstrap=True), "EstimatorSpec.bootstrap must be an integer >= 0."),
    (lambda: EstimatorSpec(khat_tolerance=math.nan),
     "EstimatorSpec.khat_tolerance must be a finite number >= 0."),
    (lambda: EstimatorSpec(khat_rule="some"),
     "EstimatorSpec.khat_rule must be 'material' or 'any'."),
    (lambda: MatchSpec(window="half"), "MatchSpec.window must be one of ['closed', 'open']."),
    (lambda: PopulationSpec(sampling_fraction=0),
     "PopulationSpec.sampling_fraction must be a number in (0, 1]."),
    (lambda: AttackSpec(prior=1.0), "AttackSpec.prior must be one of ['balanced', 'sampling'] "
                                    "or a number in (0, 1)."),
    (lambda: RatioSpec(normaliser_draws=19),
     "RatioSpec.normaliser_draws must be an integer >= 20."),
    (lambda: PropensitySpec(cp=-1), "PropensitySpec.cp must be a finite number >= 0."),
    (lambda: OverlapSpec(alpha=1), "OverlapSpec.alpha must be a number in (0, 1)."),
    (lambda: ExclusionSpec(use_target_na=1), "ExclusionSpec.use_target_na must be True or False."),
])
def test_the_specs_check_their_table(make, message):
    with pytest.raises(ValidationError) as err:
        make()
    assert str(err.value).startswith(message)
    assert err.value.code == "INVALID_ARGUMENT"
