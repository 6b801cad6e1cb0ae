"""The grouped arguments of identification risk (``known=``, ``synthesized=``, ``match=``,
``population=``) and the survey-weighted population counts (Reiter & Mitra 2009)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk import MatchSpec, PopulationSpec, identification_risk, radius_sweep
from bayes_risk.exceptions import DataWarning, SchemaError, ValidationError


def ir(*args, **kw):
    kw.setdefault("progressbar", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return identification_risk(*args, **kw)


# ----------------------------------------------------------------------------------------------
# the specs
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, field", [
    (dict(radius_type="percent"), "MatchSpec.radius_type"),
    (dict(window="half"), "MatchSpec.window"),
    (dict(shape="circle"), "MatchSpec.shape"),
    (dict(quantile_groups=0), "MatchSpec.quantile_groups"),
    (dict(quantile_groups=2.5), "MatchSpec.quantile_groups"),
    (dict(radius=-0.1), "MatchSpec.radius"),
    (dict(radius="0.1"), "MatchSpec.radius"),
    (dict(radius={"x": np.nan}), r"MatchSpec.radius\['x'\]"),
    (dict(radius=[0.1, True]), "MatchSpec.radius"),
    (dict(r_min=-1), "MatchSpec.r_min"),
    (dict(missing_known="unknown"), "MatchSpec.missing_known"),
    (dict(fallback="all"), "MatchSpec.fallback"),
    (dict(compat="synthpop"), "MatchSpec.compat"),
    (dict(strategy=("threshold", 1.5)), r"γ must be a number in \(0, 1\)"),
    (dict(strategy="sometimes"), "strategy must be"),
])
def test_match_spec_errors_name_the_field(kw, field):
    with pytest.raises(ValidationError, match=field):
        MatchSpec(**kw)


def test_match_spec_holds_its_fields():
    m = MatchSpec(radius={"a": 1, "b": 0.5}, r_min=2, window="open")
    assert m.radius == {"a": 1.0, "b": 0.5} and m.r_min == 2.0 and m.quantile_groups == 20
    assert MatchSpec(radius=[0.1, 0.2]).radius == (0.1, 0.2)
    assert m.replace(window="closed").window == "closed" and m.window == "open"
    # the intruder's rule: a strategy given as a list is the tuple it parses to
    assert MatchSpec(strategy=["threshold", 0.5]).strategy == ("threshold", 0.5)
    # and the command line's spelling threshold:GAMMA too (its option passes the text)
    assert MatchSpec(strategy="threshold:0.25").strategy == ("threshold", 0.25)
    assert m.replace(fallback="none").fallback == "none" and m.missing_known == "any"
    assert json.dumps(m.to_dict())
    with pytest.raises(AttributeError):
        m.window = "closed"  # frozen


@pytest.mark.parametrize("kw, pattern", [
    (dict(membership="maybe"), "PopulationSpec.membership"),
    (dict(membership="unknown", estimate="mean"), "PopulationSpec.estimate"),
    (dict(counts="loglinear_original"),
     r"PopulationSpec.counts needs PopulationSpec.membership='unknown'"),
    (dict(weights="w"), r"PopulationSpec.weights needs PopulationSpec.membership='unknown'"),
    (dict(membership="unknown", counts=[1.0], weights=[1.0]), "not both"),
    (dict(membership="unknown", counts="loglinear_original", sampling_fraction=1.5),
     "PopulationSpec.sampling_fraction"),
    (dict(membership="unknown", counts="loglinear_original", population_size=0),
     "PopulationSpec.population_size"),
    (dict(membership="unknown", counts="loglinear_original", sampling_fraction=0.5,
          population_size=100),
     "PopulationSpec.sampling_fraction and PopulationSpec.population_size: give one of them"),
    (dict(membership="unknown", weights=[1.0, -2.0, 3.0]), r"weight 1 is -2.0"),
    (dict(membership="unknown", weights=[1.0, np.nan]), r"weight 1 is nan"),
    (dict(membership="unknown", weights=[[1.0, 2.0]]), "one weight per original record"),
    (dict(membership="unknown", weights=""), "column name is empty"),
    (dict(membership="unknown", weights=[1.0], estimate="scaled"), "log-linear counts only"),
    (dict(target_id=""), "PopulationSpec.target_id must be a column name"),
    (dict(original_id=3), "PopulationSpec.original_id must be a column name"),
    (dict(target_id="id"),
     r"PopulationSpec.target_id needs PopulationSpec.targets \(the id column of the targets"),
    # checked by the spec since the command line's own checks went (issue 65)
    (dict(targets=pd.DataFrame({"id": [1]})),
     "PopulationSpec.targets needs PopulationSpec.target_id"),
    (dict(membership="unknown", counts="loglinear"), "PopulationSpec.counts given as text must be"),
])
def test_population_spec_errors_name_the_field(kw, pattern):
    with pytest.raises(ValidationError, match=pattern):
        PopulationSpec(**kw)


def test_specs_are_exported_and_typed():
    assert br.MatchSpec is MatchSpec and br.PopulationSpec is PopulationSpec
    from bayes_risk.identification import MatchSpec as M
    from bayes_risk.identification import PopulationSpec as P

    assert (M, P) == (MatchSpec, PopulationSpec)


@pytest.fixture
def toy():
    y = pd.DataFrame({"sex": ["M", "M", "M", "F", "F"], "race": ["W", "W", "B", "W", "B"]})
    z = [y.assign(race=["W", "B", "B", "W", "W"]), y.assign(race=["W", "W", "W", "B", "B"])]
    return y, z


@pytest.mark.parametrize("old", [
    dict(known_unsynthesized=["sex"]), dict(known_synthesized=["race"]), dict(radius=0.1),
    dict(radius_type="absolute"), dict(membership="unknown"), dict(population_counts={}),
    dict(population_size=10), dict(window="open"), dict(strategy="not_if_max"),
    dict(fallback="none"), dict(compat="IdentificationRiskCalculation"),
    dict(missing_known="level"), dict(targets=None), dict(target_id="id"),
])
def test_old_keywords_are_refused(toy, old):
    y, z = toy
    with pytest.raises(TypeError, match="unexpected keyword"):
        identification_risk(y, z, known=["sex", "race"], progressbar=False, **old)


def test_match_and_population_must_be_specs(toy):
    y, z = toy
    with pytest.raises(ValidationError, match="match must be a MatchSpec"):
        ir(y, z, known=["sex", "race"], match={"radius": 0.1})
    with pytest.raises(ValidationError, match="population must be a PopulationSpec"):
        ir(y, z, known=["sex", "race"], population="unknown")


# ----------------------------------------------------------------------------------------------
# known and synthesized
# ----------------------------------------------------------------------------------------------
def test_synthesized_found_from_the_release_equals_the_given_split(toy):
    y, z = toy
    given = ir(y, z, known=["sex", "race"], synthesized=["race"])
    found = ir(y, z, known=["sex", "race"])
    assert found.settings["known_unsynthesized"] == ["sex"]
    assert found.settings["known_synthesized"] == ["race"]
    pd.testing.assert_frame_equal(found.records, given.records)
    assert found.file == given.file
    # columns the synthesizer replaced that the intruder does not know are ignored
    y2 = y.assign(inc=[1.0, 2.0, 3.0, 4.0, 5.0])
    more = ir(y2, [d.assign(inc=9.0) for d in z], known=["sex", "race"],
              synthesized=["race", "inc"])
    assert more.file == given.file


def test_known_and_synthesized_errors(toy):
    y, z = toy
    with pytest.raises(ValidationError, match="no known column"):
        ir(y, z, known=[])
    with pytest.raises(ValidationError, match=r"known lists column\(s\) \['sex'\] more than once"):
        ir(y, z, known=["sex", "race", "sex"])
    with pytest.raises(ValidationError, match="synthesized lists"):
        ir(y, z, known=["sex", "race"], synthesized=["race", "race"])
    with pytest.raises(SchemaError, match=r"\['rac'\].*Did you mean 'race'"):
        ir(y, z, known=["sex"], synthesized=["rac"])
    with pytest.raises(ValidationError, match=r"replicates needs synthesized \(the known columns"):
        ir(y, None, known=["sex", "race"], replicates=[d[["race"]] for d in z])


def test_population_keys_follow_the_order_of_known(toy):
    y, z = toy
    F = {("M", "W"): 4, ("M", "B"): 2, ("F", "W"): 3, ("F", "B"): 1}
    swapped = {(r, s): v for (s, r), v in F.items()}
    a = ir(y, z, known=["sex", "race"], synthesized=["race"],
           population=PopulationSpec(membership="unknown", counts=F))
    b = ir(y, z, known=["race", "sex"], synthesized=["race"],
           population=PopulationSpec(membership="unknown", counts=swapped))
    np.testing.assert_array_equal(a.population_counts, b.population_counts)
    assert a.file == b.file


def test_radius_sweep_takes_the_specs():
    y = pd.DataFrame({"x": [100.0, 110.0, 200.0, 400.0]})
    z = pd.DataFrame({"x": [104.0, 100.0, 230.0, 390.0]})
    res = radius_sweep(y, [z], known=["x"], radii=[0.05, 0.1, 0.2, 0.3, 1.0],
                       match=MatchSpec(window="closed"), progressbar=False)
    assert (res.r_star, res.risk_star) == (0.2, 3.0)
    with pytest.raises(ValidationError, match="unknown argument"):
        radius_sweep(y, [z], known=["x"], radius=0.1, progressbar=False)
    with pytest.raises(ValidationError, match="radius_type 'percentage' or 'absolute'"):
        radius_sweep(y, [z], known=["x"], match=MatchSpec(radius_type="quantile_sd"),
                     progressbar=False)


# ----------------------------------------------------------------------------------------------
# survey-weighted population counts (Reiter & Mitra 2009)
# ----------------------------------------------------------------------------------------------
@pytest.fixture
def weighted():
    """Six records with survey weights. By hand, F̂ = sum of the weights of the records with
    the target's (sex, race):

    (M, W): 10 + 20 = 30;  (M, B): 5;  (F, W): 0.5, below its sample count 1, so 1;
    (F, B): 30 + 40 = 70.
    """
    y = pd.DataFrame({
        "sex": ["M", "M", "M", "F", "F", "F"],
        "race": ["W", "W", "B", "W", "B", "B"],
        "w": [10.0, 20.0, 5.0, 0.5, 30.0, 40.0],
    })
    z = [y.assign(race=["W", "B", "B", "W", "B", "W"]), y.assign(race=["W", "W", "B", "B", "B",
                                                                       "B"])]
    return y, z


HAND_F = np.array([30.0, 30.0, 5.0, 1.0, 70.0, 70.0])


def test_weighted_counts_by_hand(weighted):
    y, z = weighted
    res = ir(y, z, known=["sex", "race"], synthesized=["race"],
             population=PopulationSpec(membership="unknown", weights="w"))
    np.testing.assert_array_equal(res.population_counts[:, 0], HAND_F)
    assert res.population_counts.shape == (6, 2)  # fixed over the datasets
    assert res.settings["population_counts"] == "weights"
    assert res.settings["population_weights"] == "w"
    # target 0 (M, W) is matched by record 0 in dataset 1 and by records 0 and 1 in dataset 2:
    # each match gets min(1/F, 1/n_t) = 1/30, and Pr(J = n+1) = 1 − n_t/30, averaged
    assert res.prob[0, 0] == pytest.approx(1 / 30, rel=1e-12)
    assert res.prob[0, 1] == pytest.approx(1 / 60, rel=1e-12)
    assert res.p_out[0] == pytest.approx(1 - 1.5 / 30, rel=1e-12)
    # the same weights as an array give the same run
    arr = ir(y, z, known=["sex", "race"], synthesized=["race"],
             population=PopulationSpec(membership="unknown", weights=y["w"].to_numpy()))
    np.testing.assert_array_equal(arr.population_counts, res.population_counts)
    pd.testing.assert_frame_equal(arr.records, res.records)
    assert arr.settings["population_weights"] == "one weight per record (6)"


@pytest.mark.parametrize("aggregation", ["pooled", "per_dataset"])
@pytest.mark.parametrize("strategy", ["always", ("threshold", 0.5), "not_if_max"])
def test_weighted_counts_equal_the_same_counts_given(weighted, aggregation, strategy):
    y, z = weighted
    kw = dict(known=["sex", "race"], synthesized=["race"], aggregation=aggregation,
              match=MatchSpec(strategy=strategy))
    w = ir(y, z, population=PopulationSpec(membership="unknown", weights="w"), **kw)
    c = ir(y, z, population=PopulationSpec(membership="unknown", counts=HAND_F), **kw)
    pd.testing.assert_frame_equal(w.records, c.records)
    np.testing.assert_equal(w.file, c.file)


def test_weighted_counts_for_targets_outside_the_sample(weighted):
    y, z = weighted
    y = y.assign(id=range(6))
    tg = pd.DataFrame({"id": [0, 100], "sex": ["M", "F"], "race": ["W", "O"]})
    res = ir(y, [d.assign(id=range(6)) for d in z], known=["sex", "race"],
             synthesized=["race"],
             population=PopulationSpec(membership="unknown", weights="w", targets=tg,
                                       target_id="id"))
    assert "F_BELOW_ONE" in res.warnings
    # the outside target's key (F, O) has no sample record: F̂ = 0, raised to 1
    np.testing.assert_array_equal(res.population_counts[:, 0], [30.0, 1.0])


def test_weights_errors_name_the_column(weighted):
    y, z = weighted
    kw = dict(known=["sex", "race"], synthesized=["race"])
    with pytest.raises(SchemaError, match="weights column 'wt' is not in the original"):
        ir(y, z, population=PopulationSpec(membership="unknown", weights="wt"), **kw)
    bad = y.assign(w=[1.0, 2.0, 0.0, 1.0, 1.0, 1.0])
    with pytest.raises(ValidationError, match="weights column 'w'.*record 2 has 0.0"):
        ir(bad, z, population=PopulationSpec(membership="unknown", weights="w"), **kw)
    text = y.assign(w=["1", "2", "x", "1", "1", "1"])
    with pytest.raises(SchemaError, match="column 'w'.*record 2: 'x'"):
        ir(text, z, population=PopulationSpec(membership="unknown", weights="w"), **kw)
    with pytest.raises(ValidationError, match=r"one weight per original record \(6\); got 5"):
        ir(y, z, population=PopulationSpec(membership="unknown", weights=np.ones(5)), **kw)
    num = y.assign(inc=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    with pytest.raises(ValidationError, match="matched exactly"):
        ir(num, [d.assign(inc=num["inc"]) for d in z], known=["sex", "race", "inc"],
           synthesized=["race"], match=MatchSpec(radius={"inc": 0.1}),
           population=PopulationSpec(membership="unknown", weights="w"))
    with pytest.raises(ValidationError, match="uses membership='known'"):
        ir(y, z, match=MatchSpec(compat="IdentificationRiskCalculation"),
           population=PopulationSpec(membership="unknown", weights="w"), **kw)


def test_weights_from_the_command_line(weighted, tmp_path):
    from bayes_risk.cli import main

    y, z = weighted
    paths = [tmp_path / "orig.csv", tmp_path / "syn1.csv", tmp_path / "syn2.csv"]
    for d, p in zip([y, *z], paths, strict=True):
        d.to_csv(p, index=False)
    base = ["identification", *map(str, paths), "--known-unsynthesized", "sex",
            "--known-synthesized", "race", "--quiet"]
    out = tmp_path / "out"
    assert main([*base, "--membership", "unknown", "--weights", "w", "--out", str(out)]) == 0
    summ = json.loads((out / "summary.json").read_text())
    direct = ir(y, z, known=["sex", "race"], synthesized=["race"],
                population=PopulationSpec(membership="unknown", weights="w"))
    assert summ["summary"]["expected_match_risk"] == pytest.approx(
        direct.file["expected_match_risk"], rel=1e-12)
    assert summ["settings"]["population_counts"] == "weights"
    assert main([*base, "--weights", "w", "--out", str(tmp_path / "o2")]) != 0
    assert not (tmp_path / "o2").exists()


def test_knowledge_sweep_takes_survey_weights(weighted):
    y, z = weighted
    pop = PopulationSpec(membership="unknown", weights="w")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        res = br.known_sweep(y, z, candidates=["sex", "race"], synthesized=["race"],
                             population=pop, progressbar=False)
    for known in (["sex"], ["race"], ["sex", "race"]):
        one = ir(y, z, known=known, synthesized=["race"], population=pop)
        row = res.table[res.table["known"] == ", ".join(known)].iloc[0]
        assert row["expected_match_risk"] == pytest.approx(one.file["expected_match_risk"],
                                                           rel=1e-12)
