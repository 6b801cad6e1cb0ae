"""SyntheticData: provenance, atomic save and identical load."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from bayes_risk.data import SyntheticData, infer_schema, make_acs_like, make_ce_like, read_synthetic
from bayes_risk.exceptions import SchemaError, ValidationError


def _release(m=3):
    y = make_ce_like(50, random_seed=1)
    rng = np.random.default_rng(0)
    zs = []
    for _ in range(m):
        z = y.copy()
        z["Income"] = rng.permutation(z["Income"].to_numpy())
        zs.append(z)
    s = infer_schema(y, categorical=["Urban", "Marital", "Tenure"], synthesized=["Income"])
    flags = np.zeros(len(y), dtype=bool)
    flags[[1, 5, 7]] = True
    return SyntheticData(
        zs,
        method="test",
        settings={"a": 1, "b": [1, 2]},
        random_seed=7,
        draw_index=[10, 20, 30][:m],
        schema=s,
        synthesized_records=flags,
        extra={"note": "x", "nan": float("nan")},
    )


def test_save_load_identical(tmp_path):
    z = _release()
    out = z.save(tmp_path / "syn", csv=True)
    files = sorted(os.listdir(out))
    assert files == [
        "manifest.json",
        "syn_001.csv",
        "syn_001.parquet",
        "syn_002.csv",
        "syn_002.parquet",
        "syn_003.csv",
        "syn_003.parquet",
    ]
    back = SyntheticData.load(out)
    assert back.equals(z)
    for a, b in zip(z, back, strict=False):
        pd.testing.assert_frame_equal(a, b)
    assert back.draw_index == [10, 20, 30]
    assert back.schema == z.schema
    np.testing.assert_array_equal(back.synthesized_records, z.synthesized_records)
    man = json.loads((out / "manifest.json").read_text())
    assert man["method"] == "test" and man["random_seed"] == 7 and man["extra"]["nan"] is None
    assert read_synthetic(out).equals(z)
    assert read_synthetic(sorted(out.glob("syn_*.csv"))).m == 3


def test_categorical_dtypes_survive(tmp_path):
    a = make_acs_like(40, random_seed=3)
    z = SyntheticData([a, a], method="copy")
    back = SyntheticData.load(z.save(tmp_path / "acs"))
    assert isinstance(back[0]["SEX"].dtype, pd.CategoricalDtype)
    pd.testing.assert_frame_equal(back[1], a)


def test_failed_save_leaves_nothing(tmp_path, monkeypatch):
    z = _release()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", boom)
    with pytest.raises(OSError, match="disk full"):
        z.save(tmp_path / "syn")
    assert not (tmp_path / "syn").exists()
    assert list(tmp_path.iterdir()) == []


def test_overwrite_replaces_whole_folder(tmp_path):
    z = _release(3)
    z.save(tmp_path / "syn")
    z2 = SyntheticData(list(z)[:2], method="two")
    z2.save(tmp_path / "syn")
    assert SyntheticData.load(tmp_path / "syn").m == 2
    assert not (tmp_path / "syn" / "syn_003.parquet").exists()


def test_errors():
    y = make_ce_like(20, random_seed=1)
    with pytest.raises(ValidationError, match=r"must be an integer >= 1\. Got 0"):
        SyntheticData([])
    with pytest.raises(SchemaError, match="synthetic dataset 2 has columns"):
        SyntheticData([y, y.drop(columns="Age")])
    with pytest.raises(ValidationError, match="draw_index has 1 entries for 2 datasets"):
        SyntheticData([y, y], draw_index=[1])
    with pytest.raises(ValidationError, match="not a SyntheticData folder"):
        SyntheticData.load("/nonexistent/folder")


def test_read_synthetic_shares_unchanged_columns_with_like(tmp_path):
    """Files read with ``like=`` hold the original's bit-identical columns once (copy-on-write
    keeps every table independent); other columns, dtypes, values and order are as read."""
    from bayes_risk.data.io import read_table

    rng = np.random.default_rng(4)
    n = 40
    y = pd.DataFrame({
        "a": rng.integers(0, 5, n), "x": rng.normal(size=n), "z": np.zeros(n),
        "s": rng.choice(["u", "v"], n), "w": rng.integers(0, 9, n),
    })
    y.loc[3, "x"] = np.nan
    y.to_csv(tmp_path / "y.csv", index=False)
    zs = [
        y.assign(w=rng.integers(0, 9, n)),  # synthesized w
        y.assign(z=-y["z"], a=y["a"].astype(float)),  # -0.0 is not 0.0; float is not int
    ]
    paths = []
    for l, z in enumerate(zs, start=1):
        paths.append(tmp_path / f"z{l}.csv")
        z.to_csv(paths[-1], index=False)
    like = read_table(tmp_path / "y.csv")
    syn = read_synthetic(paths, like=like)
    for p, got in zip(paths, syn.datasets, strict=True):
        want = read_table(p)
        pd.testing.assert_frame_equal(got, want)
        for c in want.columns:  # bit for bit, the sign of zero included
            if want[c].dtype.kind == "f":
                np.testing.assert_array_equal(got[c].to_numpy().view(np.int64),
                                              want[c].to_numpy().view(np.int64))
    shares = [{c: np.shares_memory(z[c].to_numpy(), like[c].to_numpy())
               for c in ("a", "x", "z", "s", "w")} for z in syn.datasets]
    assert shares[0] == {"a": True, "x": True, "z": True, "s": False, "w": False}
    assert shares[1] == {"a": False, "x": True, "z": False, "s": False, "w": True}
    # independent tables: writing to one leaves the original (and the others) alone
    z1, z2 = syn.datasets
    z1.loc[0, "x"] = 1e6
    assert like.loc[0, "x"] != 1e6 and z2.loc[0, "x"] != 1e6
    like.loc[1, "w"] = -1
    assert z2.loc[1, "w"] != -1
    # without like nothing is shared
    plain = read_synthetic(paths)
    assert not np.shares_memory(plain[0]["a"].to_numpy(), like["a"].to_numpy())


def test_columns_not_shared_are_copied_only_out_of_a_block_with_a_shared_one():
    # issue 88: a column not shared with the original is taken as read where the array holding
    # it holds nothing else (at 10^6 rows the copies of five datasets' two synthesized columns
    # took 0.13 s of CPU), and copied where a view would keep a shared column's block alive
    from bayes_risk.data.io import share_unchanged_columns

    n = 6
    like = pd.DataFrame({"a": np.arange(n), "x": np.linspace(0.0, 1.0, n)})
    table = pd.DataFrame({"a": np.arange(n), "w": 2 * np.arange(n), "x": np.linspace(0.0, 1.0, n),
                          "u": np.ones(n, dtype=np.float32), "v": np.zeros(n, dtype=np.float32)})
    out = share_unchanged_columns(table, like)
    pd.testing.assert_frame_equal(out, table)

    def shares(a, b, c):
        return np.shares_memory(a[c].to_numpy(), b[c].to_numpy())

    assert shares(out, like, "a") and shares(out, like, "x")
    assert not shares(out, table, "w")  # its block holds the table's own "a"
    assert shares(out, table, "u") and shares(out, table, "v")  # a block of their own
    out.loc[0, "u"] = 5.0  # copy-on-write: the table read is left alone
    assert table.loc[0, "u"] == 1.0


def test_repr_is_compact_in_a_notebook():
    """Issue 92: a release's repr dumped every dataset, the settings and the schema (66 lines,
    6,000 characters); as pandas, xarray and ArviZ, it describes the object in a few lines."""
    from bayes_risk.data import make_ce_like
    from bayes_risk.models import CARTSynthesizer

    ce = make_ce_like(200, random_seed=1)
    schema = infer_schema(ce, categorical=["Urban", "Marital", "Tenure"])
    rel = CARTSynthesizer().fit(ce, schema=schema, synthesized=["Income"],
                                random_seed=1).synthesize(3, random_seed=2)
    text = repr(rel)
    assert text.splitlines()[0] == ("SyntheticData: m = 3 dataset(s) of 200 rows x 7 columns, "
                                    "method 'cart', generation 'partial', proper True"), text
    assert "synthesized: Income" in text and len(text.splitlines()) <= 8 and len(text) < 800
    # what 'bayes-risk synthesize' prints of it (issue 87: the command's lines are its repr's)
    assert "records synthesized: 200 of 200" in text, text
    assert f"model id: {rel.model_id[:16]} (the fitted model that made it" in text, text
    html = rel._repr_html_()
    assert html.startswith("<div><strong>SyntheticData: m = 3")
    assert "<li>synthesized: Income" in html
