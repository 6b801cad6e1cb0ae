"""synthpop's ``sdc()`` (:func:`bayes_risk.disclosure.sdc`): coding, removal of uniques and
smoothing, checked by hand and against R's smoothing spline; the post-processed release's
provenance (model-based measures refuse it) and its manifest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _shared import shared_path

import bayes_risk as br
from bayes_risk.data import SyntheticData
from bayes_risk.disclosure import replicated_uniques, sdc
from bayes_risk.exceptions import SchemaError, ValidationError
from bayes_risk.models import CARTSynthesizer, plugin_likelihood

HERE = Path(__file__).resolve().parent


def test_bottom_top_coding_by_hand():
    """Values below the bottom / above the top become the bound; excluded values, missing
    values and the other columns are left; an integer column coded at integer bounds stays
    integer; the counts are per column and dataset."""
    orig = pd.DataFrame({"a": [1, 2, 3, 4, 5, 6], "x": [0.0, 1, 2, 3, 4, 5]})
    z1 = pd.DataFrame({"a": [0, 2, 9, 4, -8, 6], "x": [-1.0, 1, 2, np.nan, 40, 5]})
    z2 = pd.DataFrame({"a": [1, 1, 1, 7, 7, 7], "x": [0.5, 1, 2, 3, 4, 5]})
    out = sdc(orig, [z1, z2], bottom_top_coding={"a": (1, 6), "x": (None, 4.5)},
              recode_exclude={"a": [-8]})
    assert out[0]["a"].tolist() == [1, 2, 6, 4, -8, 6]
    assert out[0]["a"].dtype == z1["a"].dtype
    np.testing.assert_array_equal(out[0]["x"], [-1.0, 1, 2, np.nan, 4.5, 4.5])
    assert out[1]["a"].tolist() == [1, 1, 1, 6, 6, 6]
    step = out.extra["post_processing"][0]
    assert step["n_bottom_coded"] == {"a": [1, 0], "x": [0, 0]}
    assert step["n_top_coded"] == {"a": [1, 3], "x": [2, 1]}
    assert z1["a"].tolist() == [0, 2, 9, 4, -8, 6]  # the input is not changed
    # a fractional bound on an integer column: the column becomes float
    # (float64, whichever side is open: a None bound once made it a column of Python objects,
    # which every measure then refused as "numbers stored as text")
    for bounds, coded in (((0.5, None), [0.5, 2, 9, 4, 0.5, 6]),
                          ((None, 5.5), [0, 2, 5.5, 4, -8, 5.5])):
        frac = sdc(orig, z1, bottom_top_coding={"a": bounds})
        assert frac[0]["a"].tolist() == coded
        assert frac[0]["a"].dtype == np.float64


def _uniques_table():
    orig = pd.DataFrame({"k": ["a", "b", "c", "c", "d"], "v": [1, 2, 3, 3, 4]})
    # dataset 1: "a" unique in both (replicated unique), "c" unique here but twice in the
    # original, "e" not in the original, "b" twice here
    z1 = pd.DataFrame({"k": ["a", "c", "e", "b", "b"], "v": [1, 3, 5, 2, 2]})
    z2 = pd.DataFrame({"k": ["d", "d", "a", "c", "e"], "v": [4, 4, 1, 3, 5]})
    return orig, [z1, z2]


# "e" is a level of the release only: an error unless the release says it recodes k, then
# warned (SYNTHETIC_ONLY_LEVEL): a record no original has
@pytest.mark.filterwarnings("ignore:.*SYNTHETIC_ONLY_LEVEL")
def test_removal_of_replicated_uniques_by_hand():
    orig, syn = _uniques_table()
    with pytest.raises(SchemaError, match="SYNTHETIC_ONLY_LEVEL"):
        sdc(orig, syn, remove="replicated_uniques")
    syn = SyntheticData(syn).declare_recoded(["k"])
    rep = sdc(orig, syn, remove="replicated_uniques")
    assert rep[0]["k"].tolist() == ["c", "e", "b", "b"]
    assert rep[1]["k"].tolist() == ["d", "d", "c", "e"]
    assert rep.extra["post_processing"][0]["n_removed"] == [1, 1]
    allu = sdc(orig, syn, remove="uniques_in_original", keys=["k"])
    assert allu[0]["k"].tolist() == ["e", "b", "b"]
    assert allu[1]["k"].tolist() == ["d", "d", "e"]
    # the counts are those of replicated_uniques
    table = replicated_uniques(orig, syn).table
    assert rep.extra["post_processing"][0]["n_removed"] == table["Replicated uniques"].tolist()
    assert allu.extra["post_processing"][0]["n_removed"] == \
        table["Synthetic uniques in original"].tolist()


def test_removal_counts_equal_replicated_uniques_on_cedata():
    """On synthpop's releases of CEdata (scenario 1), the records removed are the replicated
    uniques synthpop counts (the package's replicated_uniques, checked against synthpop's
    outputs in test_disclosure_reference)."""
    orig = pd.read_csv(shared_path("data", "CEdata.csv"))
    rel = shared_path("reference", "identification", "synthetic")
    syn = [pd.read_csv(rel / f"scenario1_syn{i}.csv") for i in (1, 2)]
    keys = ["Age", "Urban", "Marital", "Income"]
    for compat in (None, "synthpop"):
        out = sdc(orig, syn, keys=keys, remove="replicated_uniques", compat=compat)
        table = replicated_uniques(orig, syn, keys=keys, compat=compat).table
        removed = out.extra["post_processing"][0]["n_removed"]
        assert removed == table["Replicated uniques"].tolist()
        assert [len(z) for z in out] == [len(z) - r for z, r in zip(syn, removed, strict=True)]
        after = replicated_uniques(orig, list(out), keys=keys, compat=compat).table
        # removing the replicated uniques can make others unique (synthpop's behaviour too)
        assert (after["Replicated uniques"] < table["Replicated uniques"]).all()


def test_smoothing_against_r():
    """The sorted values' smoothing spline equals R's smooth.spline(all.knots = TRUE) (both
    choose the penalty by GCV; rtol 1e-5 covers their optimisers), each value taking the fitted
    value of its rank; synthpop's reduced knot set differs by at most 0.5 %."""
    ref = pd.read_csv(HERE / "smooth_reference" / "smooth_spline.csv")
    z = pd.DataFrame({"y": ref["y"].astype(np.int64), "c": 1})
    out = sdc(z, z, smooth=["y"])
    rank = ref["y"].rank(method="average").to_numpy()
    expected = ref["all_knots"].to_numpy()[np.floor(rank).astype(int) - 1]
    np.testing.assert_allclose(out[0]["y"], expected, rtol=1e-5)
    assert out[0]["c"].tolist() == [1] * len(z)
    np.testing.assert_allclose(np.sort(out[0]["y"]), ref["synthpop"], rtol=5e-3)


def test_smoothing_leaves_missing_values_and_codes():
    rng = np.random.default_rng(3)
    x = rng.normal(100, 10, 40)
    x[[3, 7]] = np.nan
    x[[5, 9]] = -9.0
    z = pd.DataFrame({"x": x, "k": 1})
    schema = br.infer_schema(z, missing_codes={"x": [-9.0]})
    rel = SyntheticData([z], method="external", schema=schema)
    out = sdc(z, rel, smooth="x")
    got = out[0]["x"].to_numpy()
    assert np.isnan(got[[3, 7]]).all() and (got[[5, 9]] == -9.0).all()
    ok = ~np.isnan(x) & (x != -9.0)
    assert not np.allclose(got[ok], x[ok])  # smoothed
    # the smoothed values follow the values' order (the fit of the sorted values is monotone
    # here: a smooth increasing curve)
    assert np.all(np.diff(got[ok][np.argsort(x[ok])]) >= 0)


def test_partial_releases_and_bad_input_are_refused():
    data = br.make_ce_like(200, random_seed=1)
    cart = CARTSynthesizer(random_seed=1).fit(data, synthesized=["Income"],
                                                         random_seed=1)
    rel = cart.synthesize(2, random_seed=2)
    with pytest.raises(ValidationError) as err:
        sdc(data, rel, remove="replicated_uniques")
    assert err.value.code == "REMEDY_NOT_APPLICABLE" and "partially synthetic" in str(err.value)
    with pytest.raises(ValidationError) as err:
        sdc(data, rel, bottom_top_coding={"Age": (20, None)})
    assert err.value.code == "REMEDY_NOT_APPLICABLE" and "'Age'" in str(err.value)
    with pytest.raises(SchemaError, match="'Nope'"):
        sdc(data, rel, smooth=["Nope"])
    for bad, text in (({"Income": (5, 1)}, "above top"), ({"Income": (None, None)}, "no bound"),
                      ({"Income": 5}, r"\(bottom, top\)"), ({"Income": ("a", 1)}, "finite")):
        with pytest.raises(ValidationError, match=text):
            sdc(data, rel, bottom_top_coding=bad)
    with pytest.raises(ValidationError, match="remove must be"):
        sdc(data, rel, remove="uniques")
    with pytest.raises(ValidationError, match="recode_exclude"):
        sdc(data, rel, recode_exclude={"Income": [0]})
    with pytest.raises(ValidationError, match="keys needs remove") as err:
        sdc(data, rel, keys=["Age"], smooth=["Income"])
    assert err.value.code == "OPTION_CONFLICT"
    with pytest.raises(ValidationError, match="nothing to do: give bottom_top_coding") as err:
        sdc(data, rel)
    assert err.value.code == "OPTION_REQUIRED"
    with pytest.raises(ValidationError, match="not numeric"):
        sdc(data, data.assign(Urban=data["Urban"].astype(str)), smooth=["Urban"])


def test_integer_coded_categorical_column_is_not_coded_or_smoothed():
    """A synthesized categorical column held as integer codes is numeric to pandas but not to
    the release's schema: smoothing or coding it would turn levels into fractions."""
    data = br.make_ce_like(200, random_seed=1)  # Tenure: int64 codes
    schema = br.infer_schema(data, categorical=["Urban", "Marital", "Tenure"])
    rel = CARTSynthesizer(random_seed=1).fit(data, schema=schema, synthesized=["Tenure", "Income"],
                                             random_seed=1).synthesize(1, random_seed=2)
    for kw in ({"smooth": ["Tenure"]}, {"bottom_top_coding": {"Tenure": (None, 2)}}):
        with pytest.raises(ValidationError, match="'Tenure' is categorical") as err:
            sdc(data, rel, **kw)
        assert err.value.code == "WRONG_DTYPE"
    assert sdc(data, rel, smooth=["Income"])[0]["Tenure"].equals(rel[0]["Tenure"])


def test_model_based_measures_refuse_a_post_processed_release(tmp_path):
    """The model made the release before post-processing: attribute risk with it is refused
    (MODEL_DIFFERS), the manifest keeps the post-processing and different dataset sizes."""
    data = br.make_ce_like(150, random_seed=2)
    cart = CARTSynthesizer(random_seed=1).fit(data, synthesized=["Income"],
                                                         random_seed=1)
    rel = cart.synthesize(2, random_seed=2)
    top = float(data["Income"].quantile(0.9))
    coded = sdc(data, rel, bottom_top_coding={"Income": (None, top)})
    assert coded.model_id == rel.model_id
    plugin = plugin_likelihood(cart, data, random_seed=1)
    with pytest.raises(ValidationError) as err:
        br.attribute_risk(data, coded, model=plugin, records=[0, 1], progressbar=False)
    assert err.value.code == "MODEL_DIFFERS" and "post-processed" in str(err.value)
    coded.save(tmp_path / "coded")
    back = SyntheticData.load(tmp_path / "coded")
    assert back.extra["post_processing"] == json.loads(json.dumps(
        coded.extra["post_processing"]))
    # removal of rows: the datasets' sizes differ and are kept in the manifest
    full = SyntheticData([data.iloc[:100].reset_index(drop=True),
                          data.iloc[30:].reset_index(drop=True)], method="external")
    out = sdc(data, full, remove="replicated_uniques", keys=["Urban", "Marital"])
    out.save(tmp_path / "removed")
    back = SyntheticData.load(tmp_path / "removed")
    assert [len(z) for z in back] == [len(z) for z in out]
    man = json.loads((tmp_path / "removed" / "manifest.json").read_text())
    assert man["n_records_per_dataset"] == [len(z) for z in out] != [len(out[0])] * 2
    man["n_records_per_dataset"][1] += 1
    (tmp_path / "removed" / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(ValidationError) as err:
        SyntheticData.load(tmp_path / "removed")
    assert err.value.code == "MANIFEST_INVALID"


# tables drawn at random: no row order to check, no association with the original's rows
@pytest.mark.filterwarnings("ignore:.*ROWS_NOT_VERIFIED", "ignore:.*ORIGINAL_UNCONFIRMED",
                            "ignore:.*NO_MATCH")
def test_measures_match_known_values_coded_as_the_release_codes_them():
    """A release top-codes a known column: the intruder reads the bounds in its manifest and
    codes what they know before matching. Identification and DiSCO equal the same measures on
    the original coded by hand against the plain coded tables, and exceed the uncoded match
    (which misses every coded record); replicates drawn from a model are not coded."""
    rng = np.random.default_rng(4)
    n = 300
    orig = pd.DataFrame({"age": rng.integers(20, 90, n), "sex": rng.integers(1, 3, n),
                         "inc": rng.integers(1, 6, n)})
    syn = [pd.DataFrame({"age": rng.integers(20, 90, n), "sex": rng.integers(1, 3, n),
                         "inc": rng.integers(1, 6, n)}) for _ in range(2)]
    for t in (orig, *syn):  # the oldest all in the top income group: their cell discloses it
        t.loc[t["age"] >= 80, "inc"] = 5
    coded = sdc(orig, syn, bottom_top_coding={"age": (None, 80)})
    by_hand = orig.assign(age=orig["age"].clip(upper=80))
    plain = [z.copy() for z in coded.datasets]
    kw = dict(known=["age", "sex"], categorical=["sex"], progressbar=False)
    res = br.identification_risk(orig, coded, **kw).to_dict()
    ref = br.identification_risk(by_hand, plain, **kw).to_dict()
    naive = br.identification_risk(orig, plain, **kw).to_dict()
    for k in ("expected_match_risk", "true_match_risk", "false_match_rate"):
        assert res["summary"][k] == pytest.approx(ref["summary"][k], rel=1e-12)
    assert res["summary"]["expected_match_risk"] > naive["summary"]["expected_match_risk"]
    assert res["settings"]["known_coded_as_released"] == {"age": [None, 80]}
    assert "coded at the release's published bounds before matching (as the intruder who " \
        "reads its manifest does): age top 80" in br.identification_risk(
            orig, coded, **kw).headline()
    assert "known_coded_as_released" not in ref["settings"]
    dkw = dict(keys=["age", "sex"], target="inc", categorical=["sex", "inc"])
    d = br.disclosure_measures(orig, coded, **dkw)
    d_ref = br.disclosure_measures(by_hand, plain, **dkw)
    d_naive = br.disclosure_measures(orig, plain, **dkw)
    np.testing.assert_allclose(d.attrib["DiSCO"], d_ref.attrib["DiSCO"], rtol=1e-12)
    assert (d.attrib["DiSCO"] > d_naive.attrib["DiSCO"]).all()
    assert d.settings["keys_coded_as_released"] == {"age": [None, 80]}
    assert ("keys coded as released", "age top 80") in d.summary().header
    assert "keys_coded_as_released" not in d_ref.settings or \
        not d_ref.settings["keys_coded_as_released"]
