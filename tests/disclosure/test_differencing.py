"""Differencing the implicates of a partially synthetic release (Hawala 2008, §3.2): counted by
hand on small tables, through the Python API and the command line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bayes_risk import cli
from bayes_risk.disclosure import differencing_check
from bayes_risk.exceptions import DataWarning, SchemaError, ValidationError

Y = pd.DataFrame({"a": [1, 2, 3, 4, 5, 6], "b": ["x", "y", None, "y", "x", "y"],
                  "c": [1.5, np.nan, 2.5, 3.5, 4.5, 5.5]})


def _implicates():
    # records 1 and 3 selected; record 1 gets the same synthetic b in both implicates (not
    # revealed), record 3 differs in c; record 2's missing b is missing in both (not a change)
    z1 = Y.assign(b=["x", "x", None, "y", "x", "y"], c=[1.5, np.nan, 2.5, 9.0, 4.5, 5.5])
    z2 = Y.assign(b=["x", "x", None, "y", "x", "y"], c=[1.5, np.nan, 2.5, 8.0, 4.5, 5.5])
    return [z1, z2]


def test_counts_by_hand():
    res = differencing_check(Y, _implicates(), records=[1, 3])
    assert res.m == 2 and res.n_records == 6
    assert res.n_revealed == 1 and np.flatnonzero(res.revealed).tolist() == [3]
    assert res.revealed_columns == ["c"]
    assert res.recall == 0.5 and res.precision == 1.0
    tab = res.to_dataframe().set_index("column")
    # changed by the synthesis: b of record 1 (y -> x), c of record 3
    assert tab["records_varying"].to_dict() == {"a": 0, "b": 0, "c": 1}
    assert tab["records_changed"].to_dict() == {"a": 0, "b": 1, "c": 1}
    assert res.warnings == ["SELECTION_REVEALED"]
    d = res.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["revealed_records"] == [3] and d["n_selected"] == 2
    # without the selection, the changed records are the selection: 1 and 3
    assert differencing_check(Y, _implicates()).selected.nonzero()[0].tolist() == [1, 3]
    # a boolean mask is the same selection
    mask = np.zeros(6, dtype=bool)
    mask[[1, 3]] = True
    assert differencing_check(Y, _implicates(), records=mask).recall == 0.5


def test_one_implicate_reveals_nothing_and_csv_types_compare_equal():
    z = _implicates()[0]
    res = differencing_check(Y, [z])
    assert res.n_revealed == 0 and res.revealed_columns == [] and res.warnings == []
    assert "One implicate" in str(res.summary())
    # 2 and 2.0 (a CSV round trip), a missing value against a missing value: no difference
    z2 = z.assign(a=z["a"].astype(float))
    with pytest.warns(DataWarning, match="DUPLICATE_DATASETS"):  # two copies of one implicate
        same = differencing_check(None, [z, z2])
    assert same.n_revealed == 0 and same.warnings == ["DUPLICATE_DATASETS"]
    # every record varies: nothing singled out, no warning
    full = [Y.assign(a=[7, 8, 9, 10, 11, 12]), Y.assign(a=[1, 1, 1, 1, 1, 1])]
    r = differencing_check(None, full)
    assert r.n_revealed == 6 and r.warnings == [] and np.isnan(r.recall)
    # a selection inferred from the changes is reported, but raises no warning: a record whose
    # synthetic values equal its own in every implicate looks unselected
    inferred = differencing_check(Y, _implicates())
    assert inferred.selection_source == "changed records" and inferred.warnings == []
    # every record selected: nothing singled out
    assert differencing_check(Y, _implicates(), records=np.ones(6, bool)).warnings == []


def test_selection_recorded_by_the_release():
    from bayes_risk.data import SyntheticData

    rel = SyntheticData(_implicates(), method="pmm", synthesized_records=np.isin(range(6), [1, 3]))
    res = differencing_check(Y, rel)
    assert res.selection_source == "release" and res.recall == 0.5
    assert res.warnings == ["SELECTION_REVEALED"]


def test_refuses_bad_inputs():
    z = _implicates()
    with pytest.raises(SchemaError, match="same records in the same order"):
        differencing_check(None, [z[0], z[1].head(4)])
    with pytest.raises(SchemaError, match=r"original has 5 rows"):
        differencing_check(Y.head(5), z)
    with pytest.raises(SchemaError, match="is missing column"):
        differencing_check(Y, z, columns=["a", "zz"])
    with pytest.raises(ValidationError, match="outside 0..5"):
        differencing_check(Y, z, records=[6])
    with pytest.raises(ValidationError, match="records as a boolean mask needs one flag per"):
        differencing_check(Y, z, records=np.ones(3, dtype=bool))
    with pytest.raises(ValidationError, match="sequence of DataFrames"):
        differencing_check(None, [])


def test_plot_and_summary():
    res = differencing_check(Y, _implicates(), records=[1, 3])
    ax = res.plot()
    assert "1 of 6 records revealed" in ax.get_title()
    text = str(res.summary())
    assert "records revealed:" in text and "SELECTION_REVEALED" in text


def test_cli(tmp_path, capsys):
    orig = tmp_path / "orig.csv"
    Y.to_csv(orig, index=False)
    paths = []
    for j, z in enumerate(_implicates(), start=1):
        paths.append(tmp_path / f"syn{j}.csv")
        z.to_csv(paths[-1], index=False)
    sel = tmp_path / "selected.txt"
    sel.write_text("1\n3\n")
    out = tmp_path / "diff"
    assert cli.main(["disclosure", str(orig), *map(str, paths), "--categorical", "b",
                     "--differencing", "--selected", str(sel), "--out", str(out)]) == 0
    assert {"differencing.csv", "differencing.json"} <= {p.name for p in out.iterdir()}
    d = json.loads((out / "differencing.json").read_text())
    assert d["n_revealed"] == 1 and d["recall"] == 0.5 and d["revealed_columns"] == ["c"]
    assert "records revealed:" in capsys.readouterr().out
    # neither the measures' options nor --differencing: a coded error, nothing written
    assert cli.main(["disclosure", str(orig), *map(str, paths), "--out",
                     str(tmp_path / "none")]) == 2
    assert "OPTION_REQUIRED" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()
    bad = tmp_path / "bad.txt"
    bad.write_text("1\nthree\n")
    assert cli.main(["disclosure", str(orig), *map(str, paths), "--differencing", "--selected",
                     str(bad), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "RECORDS_INVALID" in err and f"--selected {str(bad)!r}, line 2: 'three'" in err


def test_audit_warns_when_the_implicates_reveal_the_selection(tmp_path):
    """A small-cell PMM release of 3 implicates: the audit's disclosure step runs the check,
    writes differencing.json and warns SELECTION_REVEALED; one implicate: no check, no code."""
    import warnings

    import bayes_risk as br
    from bayes_risk.data import infer_schema
    from bayes_risk.models import SmallCellPMMSynthesizer

    rng = np.random.default_rng(4)
    n = 300
    d = pd.DataFrame({"g": rng.choice(["a", "b", "c"], n, p=[0.6, 0.38, 0.02]),
                      "h": rng.choice(["u", "v"], n), "x": rng.normal(size=n)})
    schema = infer_schema(d, categorical=["g", "h"])
    model = SmallCellPMMSynthesizer(identifying=["g", "h"], threshold=5).fit(d, schema=schema)
    assert 0 < model.recipients_.sum() < n
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        three = model.synthesize(3, random_seed=1)
        one = model.synthesize(1, random_seed=1)
    kw = dict(known=["h"], progressbar=False,
              settings=br.AuditSettings(skip=["attribute", "posterior_identification"]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = br.audit(d, three, out=tmp_path / "a3", **kw)
    diff = res.step("disclosure").extra["differencing"]
    assert diff.selection_source == "release" and diff.precision == 1.0
    assert np.array_equal(diff.selected, model.recipients_)
    codes = {getattr(w.message, "code", None) for w in caught}
    assert diff.n_revealed > 0 and "SELECTION_REVEALED" in codes
    d3 = json.loads((tmp_path / "a3" / "disclosure" / "differencing.json").read_text())
    assert d3["n_revealed"] == diff.n_revealed
    assert "SELECTION_REVEALED" in res.to_html(tmp_path / "r3.html").read_text()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res1 = br.audit(d, one, out=tmp_path / "a1", **kw)
    assert res1.step("disclosure").extra.get("differencing") is None
    assert "SELECTION_REVEALED" not in {getattr(w.message, "code", None) for w in caught}
