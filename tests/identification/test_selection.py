"""Identification risk given the selection metadata R (Hu 2019 §4.2.4; issue 68 item 1).

A target known to be unselected matches only unselected released records, exactly on every
known column; one known to be selected only synthesized records. Checked against a table worked
by hand, against brute-force enumeration of the match sets (per dataset and pooled), on a
small-cell PMM release (Hawala 2008) of the shared CE data, and through the command line.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_risk.data import SyntheticData, infer_schema
from bayes_risk.exceptions import DataWarning, NotSupportedError, ValidationError
from bayes_risk.identification.api import identification_risk
from bayes_risk.identification.selection import SELECTION_COLUMN, release_rule
from bayes_risk.identification.specs import MatchSpec, PopulationSpec

TOL = 1e-12
CE = Path("/work/shared/data/CEdata.csv")

# worked by hand (methods page, "Identification given the selection metadata R"): sex is
# released unchanged, age synthesized for the records with age >= 45 (2, 5, 6)
Y = pd.DataFrame({"sex": list("MMMFFFF"), "age": [30.0, 31, 45, 30, 33, 52, 55]})
Z = Y.assign(age=[30.0, 31, 44, 30, 33, 30, 51])
KW = dict(known=["sex", "age"], synthesized=["age"], aggregation="per_dataset",
          match=MatchSpec(radius={"age": 5}, radius_type="absolute"), progressbar=False)


def test_hand_worked_table():
    no_r = identification_risk(Y, [Z], **KW)
    # without R: t0, t1 match {0, 1}; t2 {2}; t3, t4 {3, 4, 5}; t5 {6} (false); t6 {6}
    assert no_r.c[:, 0].tolist() == [2, 2, 1, 3, 3, 1, 1]
    assert no_r.T[:, 0].tolist() == [1, 1, 1, 1, 1, 0, 1]
    assert no_r.file["expected_match_risk"] == pytest.approx(2 / 2 + 1 + 2 / 3 + 1, abs=TOL)
    given = identification_risk(Y, [Z], population=PopulationSpec(selection="age >= 45"), **KW)
    # with R: an unselected target is its own record only (exact age among 0, 1, 3, 4);
    # t2, t5, t6 look among the synthesized 2, 5, 6 only: t5 (F, 52) meets 6 (F, 51), falsely
    assert given.c[:, 0].tolist() == [1] * 7
    assert given.T[:, 0].tolist() == [1, 1, 1, 1, 1, 0, 1]
    f = given.file
    assert f["expected_match_risk"] == pytest.approx(6.0, abs=TOL)
    assert f["true_match_rate_targets"] == pytest.approx(6 / 7, abs=TOL)
    assert f["false_match_rate"] == pytest.approx(1 / 7, abs=TOL)
    assert given.settings["selection"] == {
        "description": "age >= 45", "source": "rule", "n_selected": 3, "n_records": 7,
        "n_targets_selected": 3, "n_targets": 7}
    # the selected records themselves, as a mask or positions: the same figures
    for records in (Y["age"].to_numpy() >= 45, [2, 5, 6]):
        same = identification_risk(Y, [Z], population=PopulationSpec(selection=records), **KW)
        np.testing.assert_array_equal(same.c, given.c)
        np.testing.assert_array_equal(same.T, given.T)


def test_external_targets():
    # the rule on each target's known values: 0 (M 30) unselected, 2 (M 45), 5 (F 52) and the
    # population unit 99 (F 50, not in the sample) selected
    y = Y.assign(id=range(7))
    t = pd.DataFrame({"tid": [0, 2, 5, 99], "sex": ["M", "M", "F", "F"],
                      "age": [30.0, 45, 52, 50]})
    pop = PopulationSpec(targets=t, target_id="tid", original_id="id")
    res = identification_risk(y, [Z.assign(id=range(7))],
                              population=dataclasses.replace(pop, selection="age >= 45"), **KW)
    # 0 sees its own record; 2 sees {2}; 5 and 99 see the synthesized F 51 (record 6), wrongly
    assert res.c[:, 0].tolist() == [1, 1, 1, 1]
    assert res.T[:, 0].tolist() == [1, 1, 0, 0]
    assert res.settings["selection"]["n_targets_selected"] == 3
    with pytest.raises(ValidationError, match="external targets"):
        identification_risk(y, [Z.assign(id=range(7))],
                            population=dataclasses.replace(pop, selection=[2, 5, 6]), **KW)


def _brute(y, zs, flags, status, radius):
    """Per-dataset match sets by enumeration: [targets, datasets, records] booleans."""
    n, m = len(y), len(zs)
    hit = np.zeros((n, m, n), dtype=bool)
    for t in range(n):
        for l, z in enumerate(zs):
            for k in range(n):
                if flags[k] != status[t]:
                    continue  # R: a target is only among records of its own status
                same = z["a"][k] == y["a"][t] and z["b"][k] == y["b"][t]
                if status[t]:
                    close = abs(z["x"][k] - y["x"][t]) <= radius
                else:  # an unselected record is released unchanged: matched exactly
                    close = z["x"][k] == y["x"][t]
                hit[t, l, k] = same and close
    return hit


@pytest.mark.parametrize("seed", [1, 2])
def test_brute_force_enumeration(seed):
    rng = np.random.default_rng(seed)
    n, m, radius = 14, 3, 2.0
    y = pd.DataFrame({"a": rng.choice(["p", "q"], n), "b": rng.choice(["u", "v", "w"], n),
                      "x": rng.integers(0, 8, n).astype(float)})
    status = (y["x"] >= 5).to_numpy()
    zs = []
    for _ in range(m):  # the selected records' b and x synthesized, the others unchanged
        z = y.copy()
        z.loc[status, "x"] = rng.integers(0, 8, status.sum()).astype(float)
        z.loc[status, "b"] = rng.choice(["u", "v", "w"], status.sum())
        zs.append(z)
    hit = _brute(y, zs, status, status, radius)
    match = MatchSpec(radius={"x": radius}, radius_type="absolute", fallback="none")
    kw = dict(known=["a", "b", "x"], synthesized=["b", "x"], match=match, progressbar=False,
              population=PopulationSpec(selection="x >= 5"))
    per = identification_risk(y, zs, aggregation="per_dataset", **kw)
    np.testing.assert_array_equal(per.c, hit.sum(axis=2))
    own = hit[np.arange(n), :, np.arange(n)]
    np.testing.assert_array_equal(per.T, own)
    # pooled: π(k) = mean over datasets of 1 / n_l where k matches in dataset l
    pooled = identification_risk(y, zs, aggregation="pooled", **kw)
    cnt = hit.sum(axis=2, keepdims=True)
    pi = np.where(hit, 1.0 / np.maximum(cnt, 1), 0.0).mean(axis=1)
    np.testing.assert_allclose(pooled.prob.toarray(), pi, atol=TOL)
    top = pi.max(axis=1, keepdims=True)
    in_top = (pi >= top - 1e-12) & (top > 0)
    np.testing.assert_array_equal(pooled.c, in_top.sum(axis=1))
    np.testing.assert_array_equal(pooled.T, in_top[np.arange(n), np.arange(n)])
    # knowing R never lowers a target's per-dataset risk (its candidates only shrink)
    no_r = identification_risk(y, zs, aggregation="per_dataset",
                               **{**kw, "population": None})
    assert (per.record_IR >= no_r.record_IR - TOL).all()
    assert per.file["expected_match_risk"] > no_r.file["expected_match_risk"]


def test_unknown_membership_restricts_the_population_counts():
    # weights 2: F_t = 2 n_t over the records of the target's key and status
    pop = PopulationSpec(membership="unknown", weights=np.full(len(Y), 2.0))
    y, z = Y.assign(age=Y["age"].astype(int)), Z.assign(age=Z["age"].astype(int))
    kw = dict(known=["sex", "age"], synthesized=["age"], aggregation="per_dataset",
              population=pop, progressbar=False)
    with pytest.warns(DataWarning, match="NO_MATCH"):
        given = identification_risk(y, [z], **{**kw, "population": dataclasses.replace(
            pop, selection=[2, 5, 6])})
    # unselected targets: their own record only, of F_t = 2 (weights of the records of their
    # key and status): Pr = 1/2, Pr(not in the file) = 1/2; declared (strategy "always"), T/c
    # = 1. Selected ones: t2 (M, 45), t5 (F, 52) and t6 (F, 55) meet no synthesized record
    # exactly (44, 30, 51)
    assert np.ravel(given.population_counts).tolist() == [2.0] * 7
    un = np.array([0, 1, 3, 4])
    np.testing.assert_allclose(given.p_out[un, 0], 0.5, atol=TOL)
    assert given.file["expected_match_risk"] == pytest.approx(4.0, abs=TOL)
    assert given.c[[2, 5, 6], 0].tolist() == [0, 0, 0]


@pytest.fixture(scope="module")
def pmm_release(tmp_path_factory):
    """A small-cell PMM release (Hawala 2008) of 500 CE records, saved and loaded back."""
    from bayes_risk.models.trees.pmm import SmallCellPMMSynthesizer

    y = pd.read_csv(CE).iloc[:500].reset_index(drop=True)
    cats = ["Urban", "Tenure", "Marital"]
    schema = infer_schema(y, categorical=cats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SMALL_CELLS_REMAIN, convergence chatter
        model = SmallCellPMMSynthesizer(identifying=cats, threshold=5, tie="first").fit(
            y, schema=schema)
        syn = model.synthesize(2, random_seed=68)
    folder = tmp_path_factory.mktemp("pmm") / "release"
    syn.save(folder)
    return y, SyntheticData.load(folder), folder


@pytest.mark.filterwarnings("ignore:NO_MATCH")  # the synthesized small cells
def test_small_cell_pmm_release(pmm_release):
    y, syn, _ = pmm_release
    flags = syn.synthesized_records
    assert 0 < flags.sum() < len(y)
    rule = release_rule(syn)  # read back from the manifest's sensitive cells
    np.testing.assert_array_equal(rule.evaluate(y), flags)
    kw = dict(known=["Age", "Urban", "Tenure", "Marital"],
              synthesized=["Urban", "Tenure", "Marital"], categorical=["Urban", "Tenure",
                                                                         "Marital"],
              aggregation="per_dataset", progressbar=False)
    given = identification_risk(y, syn, population=PopulationSpec(selection="release"), **kw)
    assert given.settings["selection"]["source"] == "release"
    # an unselected target: the unselected records with its exact known values, in every dataset
    key = y[kw["known"]].astype(str).agg("|".join, axis=1).to_numpy()
    un = ~flags
    expect = np.array([np.sum(un & (key == key[t])) for t in range(len(y))])
    np.testing.assert_array_equal(given.c[un], np.repeat(expect[un, None], 2, axis=1))
    assert given.T[un].all()
    # a selected target: the synthesized records only, matched on their released values
    for l, z in enumerate(syn.datasets):
        zkey = z[kw["known"]].astype(str).agg("|".join, axis=1).to_numpy()
        sel = np.flatnonzero(flags)
        exp_sel = np.array([np.sum(flags & (zkey == key[t])) for t in sel])
        np.testing.assert_array_equal(given.c[sel, l], exp_sel)
    same = identification_risk(y, syn, population=PopulationSpec(selection=flags), **kw)
    np.testing.assert_array_equal(same.c, given.c)
    no_r = identification_risk(y, syn, **kw)
    assert (given.record_IR >= no_r.record_IR - TOL).all()
    assert given.file["expected_match_risk"] > no_r.file["expected_match_risk"]


def test_refusals(pmm_release):
    y, syn, _ = pmm_release
    kw = dict(known=["sex", "age"], synthesized=["age"], progressbar=False,
              match=MatchSpec(radius={"age": 5}, radius_type="absolute"))
    with pytest.raises(ValidationError) as e:
        identification_risk(Y, [Z], population=PopulationSpec(selection="release"), **kw)
    assert e.value.code == "SELECTION_NOT_RECORDED"
    release = SyntheticData([Z], synthesized_records=Y["age"].to_numpy() >= 45)
    with pytest.raises(ValidationError) as e:  # selects records 1 and 4, released unchanged
        identification_risk(Y, release, population=PopulationSpec(selection="age >= 31"), **kw)
    assert e.value.code == "SELECTION_MISMATCH"
    with pytest.raises(ValidationError) as e:  # leaves record 6 out, which was synthesized
        identification_risk(Y, [Z], population=PopulationSpec(selection=[2, 5]), **kw)
    assert e.value.code == "SELECTION_MISMATCH"
    with pytest.raises(ValidationError) as e:  # the rule reads a column the intruder lacks
        identification_risk(Y.assign(w=1), [Z.assign(w=1)], known=["sex"], synthesized=[],
                            population=PopulationSpec(selection="age >= 45"), progressbar=False)
    assert e.value.code == "SELECTION_NOT_KNOWN"
    with pytest.raises(ValidationError) as e:  # the manifest's cells need Tenure and Marital
        identification_risk(y, syn, known=["Age", "Urban"],
                            population=PopulationSpec(selection="release"), progressbar=False)
    assert e.value.code == "SELECTION_NOT_KNOWN"
    # the argument as a Python caller writes it (the command line: --selection records)
    assert str(e.value).endswith("the selected records themselves as selection.")
    with pytest.raises(ValidationError, match=r"records themselves; give them as selection \(a "
                       "mask"):
        identification_risk(Y, [Z], population=PopulationSpec(selection="independent"), **kw)
    # the forms named are identification's ('independent' is membership's, refused above), and
    # the rule's columns are named as given (not "the model's columns")
    with pytest.raises(ValidationError, match="give 'release'.*the selected records, a rule") as e:
        identification_risk(Y, [Z], population=PopulationSpec(selection=" "), **kw)
    assert "independent" not in str(e.value)
    with pytest.raises(ValidationError, match=r"on the columns \['sex', 'age'\]") as e:
        identification_risk(Y, [Z], population=PopulationSpec(selection="age >= 45 and 1/"), **kw)
    assert "model" not in str(e.value)
    with pytest.raises(NotSupportedError) as e:
        identification_risk(Y.assign(age=[30.0, np.nan, 45, 30, 33, 52, 55]),
                            [Z.assign(age=[30.0, np.nan, 44, 30, 33, 30, 51])],
                            population=PopulationSpec(selection=[2, 5, 6]), **kw)
    assert e.value.code == "SELECTION_MISSING_KNOWN"
    counts = pd.DataFrame({"sex": ["M", "F"], "age": [30, 30], "F": [5, 5]})
    for given in (counts, "loglinear_original"):
        with pytest.raises(NotSupportedError) as e:
            identification_risk(Y, [Z], population=PopulationSpec(
                membership="unknown", counts=given, sampling_fraction=0.5, selection=[2, 5, 6]),
                **kw)
        assert e.value.code == "SELECTION_NOT_SUPPORTED"


@pytest.mark.filterwarnings("ignore:NO_MATCH")  # the synthesized small cells
def test_command_line(pmm_release, tmp_path, capsys):
    from bayes_risk.cli import main

    y, syn, folder = pmm_release
    orig = tmp_path / "ce.csv"
    y.to_csv(orig, index=False)
    base = ["identification", str(orig), str(folder), "--known-unsynthesized", "Age",
            "--known-synthesized", "Urban", "Tenure", "Marital", "--categorical", "Urban",
            "Tenure", "Marital", "--aggregation", "per-dataset"]
    assert main([*base, "--out", str(tmp_path / "none")]) == 0
    assert "--selection release gives the risk" in capsys.readouterr().out
    for how in ("release", "records"):
        out = tmp_path / how
        assert main([*base, "--selection", how, "--out", str(out)]) == 0
        assert "given the selection R" in capsys.readouterr().out
        s = json.loads((out / "summary.json").read_text())
        assert s["settings"]["selection"]["n_selected"] == int(syn.synthesized_records.sum())
    api = identification_risk(y, syn, known=["Age", "Urban", "Tenure", "Marital"],
                              synthesized=["Urban", "Tenure", "Marital"],
                              categorical=["Urban", "Tenure", "Marital"],
                              population=PopulationSpec(selection="release"),
                              aggregation="per_dataset", progressbar=False)
    assert s["summary"]["expected_match_risk"] == pytest.approx(
        api.file["expected_match_risk"], abs=TOL)
    assert SELECTION_COLUMN not in pd.read_csv(out / "records.csv").columns
    assert main([*base, "--selection", "release", "--known-sweep", "Age", "Urban",
                 "--out", str(tmp_path / "x")]) != 0
    assert "[OPTION_CONFLICT]" in capsys.readouterr().err
    y.to_csv(tmp_path / "syn.csv", index=False)
    assert main(["identification", str(orig), str(tmp_path / "syn.csv"), *base[3:], "--selection",
                 "records", "--out", str(tmp_path / "y")]) != 0
    assert "[SELECTION_NOT_RECORDED]" in capsys.readouterr().err


def test_posterior_replicates():
    from bayes_risk.identification.replicates import PosteriorReplicates
    from bayes_risk.models import CARTSynthesizer

    y = pd.read_csv(CE).iloc[:300].reset_index(drop=True)
    schema = infer_schema(y, categorical=["Urban", "Tenure", "Marital"])
    rule = "Income > 90000"
    sel = y.eval(rule).to_numpy()
    model = CARTSynthesizer(progressbar=False).fit(y, schema=schema, synthesized=["Income"],
                                                   records=sel, random_seed=3)
    syn = model.synthesize(2, random_seed=4)
    known = ["Age", "Urban", "Marital", "Income"]
    res = identification_risk(
        y, syn, known=known, synthesized=["Income"], schema=schema,
        population=PopulationSpec(selection=rule),
        match=MatchSpec(radius={"Income": 0.1}), progressbar=False,
        replicates=PosteriorReplicates(model, n=6, batch_size=3, random_seed=5))
    assert res.file["n_replicates"] == 6
    assert res.settings["selection"]["n_selected"] == int(sel.sum())
    # an unselected target: in every replicate the unselected records with its exact values
    key = y[known].astype(str).agg("|".join, axis=1).to_numpy()
    un = np.flatnonzero(~sel)
    expect = np.array([np.sum(~sel & (key == key[t])) for t in un])
    np.testing.assert_array_equal(res.c[un], expect)
    assert res.T[un].all()


@pytest.mark.filterwarnings("ignore:NO_MATCH")
def test_audit_line_given_the_selection(pmm_release, tmp_path):
    """The audit of a release whose manifest records its selection rule has a line for the
    intruder who knows it: the larger of the per-dataset and pooled figures, each the worst
    case over the radius search, equal to the command's at the radius it names."""
    from bayes_risk.cli import main

    y, syn, folder = pmm_release
    orig = tmp_path / "ce.csv"
    y.to_csv(orig, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["audit", str(orig), str(folder), "--known", "Age", "Urban", "Tenure",
                     "Marital", "--categorical", "Urban", "Tenure", "Marital", "--skip",
                     "utility", "attribute", "posterior-identification", "membership",
                     "attacks", "disclosure", "--quiet", "--out", str(tmp_path / "a")]) == 0
    verdicts = json.loads((tmp_path / "a" / "summary.json").read_text())["verdicts"]
    line = next(v for v in verdicts
                if v["measure"] == "expected match rate given the selection (R)")
    given = json.loads((tmp_path / "a" / "identification" / "summary.json").read_text())[
        "given_selection"]
    figs = {}
    for agg in ("per_dataset", "pooled"):
        radius = given[agg]["radius"]
        res = identification_risk(
            y, syn, known=["Age", "Urban", "Tenure", "Marital"],
            synthesized=["Urban", "Tenure", "Marital"],
            categorical=["Urban", "Tenure", "Marital"],
            population=PopulationSpec(selection=syn.synthesized_records),
            match=MatchSpec(radius={c: r for c, r in radius.items() if r} or None,
                            fallback="none" if agg == "per_dataset" else None),
            aggregation=agg, progressbar=False)
        figs[agg] = 100 * res.file["expected_match_risk"] / len(y)
    assert line["value"] == pytest.approx(max(figs.values()), rel=1e-9)
    plain = next(v for v in verdicts
                 if v["measure"] == "expected match rate, worst case over the radii")
    assert line["value"] >= plain["value"]
