"""The inputs as given are the inputs measured: reading rules, row alignment, the original's
fingerprint, column labels, and the no-replace output rename (Python API level).

Each test fails on a version that re-typed cells, read ``NA`` as missing, accepted shuffled
rows, or replaced an output another process wrote.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import bayes_risk as br
from bayes_risk import MatchSpec
from bayes_risk.exceptions import BayesRiskError, DataWarning, SchemaError, ValidationError


# ----------------------------------------------------------------------------- reading rules
def _write(tmp_path, text: str, name: str = "t.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("label", ["NA", "None", "null", "n/a", "NaN", "nan", "N/A"])
def test_na_like_labels_are_labels(tmp_path, label):
    p = _write(tmp_path, f"region,x\n{label},1\nEurope,2\n,3\n{label},4\n")
    with pytest.warns(DataWarning, match="NA_LIKE_LABEL"):
        t = br.read_table(p)
    assert t["region"].tolist()[:2] == [label, "Europe"]
    assert t["region"].isna().tolist() == [False, False, True, False]  # only the empty field


def test_declared_missing_label(tmp_path):
    p = _write(tmp_path, "region,x\nNA,1\nEurope,2\nNA,3\n")
    t = br.read_table(p, missing_labels={"region": ["NA"]})
    assert t["region"].isna().tolist() == [True, False, True]


def test_declared_missing_label_restores_numbers(tmp_path):
    p = _write(tmp_path, "age,x\n31,1\nunknown,2\n45,3\n")
    t = br.read_table(p, missing_labels={"age": ["unknown"]})
    assert pd.api.types.is_numeric_dtype(t["age"]) and t["age"].isna().sum() == 1


def test_parquet_labels_are_kept(tmp_path):
    d = pd.DataFrame({"region": ["NA", "None", "Europe"], "x": [1, 2, 3]})
    d.to_parquet(tmp_path / "t.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        t = br.read_table(tmp_path / "t.parquet")
    assert t["region"].tolist() == ["NA", "None", "Europe"]


def test_thousands_separator_is_refused(tmp_path):
    p = _write(tmp_path, 'id,income\n1,"1,234"\n2,"56,000"\n3,800\n')
    with pytest.raises(SchemaError, match="'income'") as err:
        br.read_table(p)
    assert err.value.code == "THOUSANDS_SEPARATOR"


def test_text_with_commas_is_not_a_number(tmp_path):
    p = _write(tmp_path, 'id,place\n1,"Paris, France"\n2,"Rome, Italy"\n')
    assert br.read_table(p)["place"].tolist() == ["Paris, France", "Rome, Italy"]


def test_leading_zeros_kept_as_text(tmp_path):
    p = _write(tmp_path, "code,x\n015,1\n007,2\n120,3\n")
    with pytest.warns(DataWarning, match="LEADING_ZEROS"):
        t = br.read_table(p)
    assert t["code"].tolist() == ["015", "007", "120"]


def test_decimals_below_one_are_numbers(tmp_path):
    p = _write(tmp_path, "share,x\n0.5,1\n0.25,2\n1.0,3\n")
    t = br.read_table(p)
    assert t["share"].dtype == np.float64


@pytest.mark.parametrize("start", [0, 1])
def test_plain_row_index_dropped_silently(tmp_path, start):
    d = pd.DataFrame({"a": [5, 6, 7], "b": ["x", "y", "z"]}, index=range(start, start + 3))
    d.to_csv(tmp_path / "t.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        t = br.read_table(tmp_path / "t.csv")
    assert list(t.columns) == ["a", "b"]


def test_index_with_gaps_dropped_with_warning(tmp_path):
    d = pd.DataFrame({"a": [5, 6, 7], "b": ["x", "y", "z"]}, index=[0, 4, 9])
    d.to_csv(tmp_path / "t.csv")
    with pytest.warns(DataWarning, match="INDEX_COLUMN"):
        t = br.read_table(tmp_path / "t.csv")
    assert list(t.columns) == ["a", "b"]


def test_reordered_index_says_so(tmp_path):
    d = pd.DataFrame({"a": [5, 6, 7], "b": ["x", "y", "z"]}, index=[2, 0, 1])
    d.to_csv(tmp_path / "t.csv")
    with pytest.warns(DataWarning, match="NOT in increasing order"):
        br.read_table(tmp_path / "t.csv")


def test_unnamed_middle_column_refused(tmp_path):
    p = _write(tmp_path, "a,,b\n1,2,3\n4,5,6\n")
    with pytest.raises(SchemaError) as err:
        br.read_table(p)
    assert err.value.code == "UNNAMED_COLUMN" and "column 2" in str(err.value)


@pytest.mark.parametrize("text,line", [("a,b\n1,2\n3\n", 3), ("a,b\n1,2,9\n3,4\n", 2)])
def test_rows_of_the_wrong_length_refused(tmp_path, text, line):
    with pytest.raises(SchemaError, match=f"line {line}") as err:
        br.read_table(_write(tmp_path, text))
    assert err.value.code == "ROW_LENGTH"


def test_blank_last_line_is_no_record(tmp_path):
    assert len(br.read_table(_write(tmp_path, "a,b\n1,2\n3,4\n\n"))) == 2


# ----------------------------------------------------------------------------- column labels
@pytest.mark.parametrize("kind", ["duplicate", "multiindex"])
def test_column_labels_refused_by_every_entry_point(kind):
    ce = br.make_ce_like(80, random_seed=1)
    bad = ce.copy()
    if kind == "duplicate":
        bad.columns = [*ce.columns[:-1], ce.columns[0]]
    else:
        bad.columns = pd.MultiIndex.from_tuples([("a", c) for c in ce.columns])
    code = "DUPLICATE_COLUMN" if kind == "duplicate" else "MULTIINDEX_COLUMNS"
    syn = [ce.assign(Income=ce["Income"] * 1.1)]
    calls = [
        lambda o, s: br.infer_schema(o),
        lambda o, s: br.pmse(o, s, propensity=br.PropensitySpec(max_order=0)),
        lambda o, s: br.utility_summary(o, s,
                                        categorical=["Urban", "Marital", "Tenure"],
                                        propensity=br.PropensitySpec(max_order=0)),
        lambda o, s: br.identification_risk(o, s, known=["Urban", "Income"],
                                            synthesized=["Income"], match=MatchSpec(radius=0.1),
                               progressbar=False),
    ]
    for call in calls:
        for o, s in ((bad, syn), (ce, [bad])):
            if call is calls[0] and o is ce:
                continue
            with pytest.raises(BayesRiskError) as err:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DataWarning)
                    call(o, s)
            assert err.value.code in (code, "MISSING_COLUMN") or "Age" in str(err.value)
            assert isinstance(err.value, (ValidationError, SchemaError))


# ----------------------------------------------------------------------------- alignment
@pytest.fixture(scope="module")
def release():
    from bayes_risk.models import CARTSynthesizer

    ce = br.make_ce_like(150, random_seed=5)
    schema = br.infer_schema(ce, categorical=["Urban", "Marital", "Tenure"],
                             synthesized=["Income", "Expenditure"])
    rel = CARTSynthesizer().fit(ce, schema=schema, random_seed=1).synthesize(2, random_seed=2)
    return ce, rel


def _shuffled(d: pd.DataFrame, seed: int = 3) -> pd.DataFrame:
    return d.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def test_release_records_the_original_fingerprint(release):
    ce, rel = release
    fp = rel.original_fingerprint
    assert set(fp) >= {"table", "rows", "columns"} and len(fp["table"]) == 64
    text = str(fp)
    assert str(ce["Income"].iloc[0]) not in text  # hashes, never a value


@pytest.mark.parametrize("call", ["identification", "utility", "pmse"])
def test_shuffled_original_refused_with_a_release(release, call):
    ce, rel = release
    f = {
        "identification": lambda o: br.identification_risk(o, rel, known=["Income"],
                                                           synthesized=["Income"],
                                                           progressbar=False),
        "utility": lambda o: br.utility_summary(o, rel, propensity=br.PropensitySpec(max_order=0)),
        "pmse": lambda o: br.pmse(o, rel, propensity=br.PropensitySpec(max_order=0)),
    }[call]
    with pytest.raises(SchemaError, match="another row order") as err:
        f(_shuffled(ce))
    assert err.value.code == "ORIGINAL_DIFFERS"


def test_disclosure_measures_accept_the_same_records_in_another_order(release):
    ce, rel = release
    kw = dict(keys=["Age", "Urban"], target="Tenure")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        a = br.disclosure_measures(ce, rel, **kw)
        b = br.disclosure_measures(_shuffled(ce), rel, **kw)
        with pytest.raises(SchemaError) as err:  # other values: another table
            br.disclosure_measures(ce.assign(Income=ce["Income"] + 1), rel, **kw)
    assert err.value.code == "ORIGINAL_DIFFERS"
    pd.testing.assert_frame_equal(a.ident, b.ident)


def test_override_accepts_other_values_not_misaligned_rows(release):
    ce, rel = release
    other = ce.assign(Income=ce["Income"] * 1.5)
    copy = rel.allow_different_original()
    assert rel.original_check == "error"  # a copy: the release itself still refuses
    with pytest.warns(DataWarning, match="ORIGINAL_DIFFERS"):
        br.identification_risk(other, copy, known=["Age", "Income"],
                               synthesized=["Income"], match=MatchSpec(radius=0.1),
                               progressbar=False)
    with pytest.raises(SchemaError) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        br.identification_risk(_shuffled(ce), copy, known=["Income"],
                               synthesized=["Income"], match=MatchSpec(radius=0.1),
                               progressbar=False)
    assert err.value.code == "ROWS_MISALIGNED"


def test_plain_files_shuffled_are_refused(release):
    ce, rel = release
    plain = [_shuffled(z) for z in rel.datasets]
    with pytest.raises(SchemaError) as err:
        br.identification_risk(ce, plain, known=["Income"], synthesized=["Income"],
                               match=MatchSpec(radius=0.1),
                               progressbar=False)
    assert err.value.code == "ROWS_MISALIGNED"
    with pytest.raises(SchemaError) as err:
        br.utility_summary(ce, plain, propensity=br.PropensitySpec(max_order=0))
    assert err.value.code == "ROWS_MISALIGNED"


def test_full_synthesis_matching_counts_by_chance_is_not_misaligned():
    """A fully synthetic binary column may hold exactly the original's counts; with the other
    columns differing in their values, that is no evidence of shuffled rows."""
    from bayes_risk.data.alignment import check_rows_aligned

    rng = np.random.default_rng(0)
    orig = pd.DataFrame({"b": rng.integers(0, 2, 200), "x": rng.normal(size=200),
                         "y": rng.normal(size=200), "z": rng.normal(size=200)})
    syn = pd.DataFrame({"b": rng.permutation(orig["b"].to_numpy()),
                        "x": rng.normal(size=200), "y": rng.normal(size=200),
                        "z": rng.normal(size=200)})
    with pytest.warns(DataWarning, match="ROWS_NOT_VERIFIED"):
        assert check_rows_aligned(orig, [syn]) == []


def test_role_contradicted_is_an_error():
    ce = br.make_ce_like(120, random_seed=2)
    z1 = ce.assign(Income=ce["Income"] * 1.1, Age=ce["Age"] + 1)
    z2 = ce.assign(Income=ce["Income"] * 0.9)  # Age unchanged here, changed in z1
    with pytest.raises(SchemaError, match="'Age'") as err:
        br.utility_summary(ce, [z1, z2], propensity=br.PropensitySpec(max_order=0))
    assert err.value.code == "ROLE_CONTRADICTED"
    s = br.utility_summary(ce, [z1, z2], synthesized=["Income", "Age"],
                           propensity=br.PropensitySpec(max_order=0))
    assert sorted(s.synthesized) == ["Age", "Income"]


# ----------------------------------------------------------------------------- output rename
def test_rename_noreplace_never_replaces(tmp_path):
    from bayes_risk._io import rename_noreplace

    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_text("new")
    for kind in ("empty-dir", "dir", "file"):
        dst = tmp_path / kind
        if kind == "file":
            dst.write_text("other")
        else:
            dst.mkdir()
            if kind == "dir":
                (dst / "g").write_text("other")
        with pytest.raises(FileExistsError):
            rename_noreplace(src, dst)
        assert (src / "f").read_text() == "new"
    rename_noreplace(src, tmp_path / "free")
    assert (tmp_path / "free" / "f").read_text() == "new" and not src.exists()


def test_replace_checked_replaces_only_what_was_checked(tmp_path):
    from bayes_risk._io import path_identity, replace_checked

    dst = tmp_path / "out"
    dst.mkdir()
    (dst / "old").write_text("old")
    seen = path_identity(dst)
    # another process replaces the folder meanwhile
    os.rename(dst, tmp_path / "moved")
    dst.mkdir()
    (dst / "theirs").write_text("theirs")
    src = tmp_path / "src"
    src.mkdir()
    with pytest.raises(FileExistsError):
        replace_checked(src, dst, expected=seen)
    assert (dst / "theirs").read_text() == "theirs"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.old")] == []
    # what was checked is replaced
    seen = path_identity(dst)
    replace_checked(src, dst, expected=seen)
    assert not (dst / "theirs").exists()


def test_stale_temporary_folders_removed_live_ones_kept(tmp_path):
    from bayes_risk._io import remove_stale_siblings

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    # alive until its stdin is closed at the end (a sleep of a fixed length could end before
    # the check on a loaded machine)
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)
    try:
        target = tmp_path / "out"
        names = {f".out.tmp-{dead_pid}-abcd": True, f".out.tmp-{live.pid}-efgh": False,
                 ".out.tmp-x1y2z3": False, f".other.tmp-{dead_pid}-ijkl": False,
                 f".out.old-{dead_pid}": False}
        for n in names:
            (tmp_path / n).mkdir()
            (tmp_path / n / "secret.csv").write_text("x")
        removed, kept = remove_stale_siblings(target)
        assert removed == [f".out.tmp-{dead_pid}-abcd"]
        assert kept == [f".out.old-{dead_pid}"]  # the only copy of an old output: kept
        target.mkdir()
        removed, kept = remove_stale_siblings(target)
        assert removed == [f".out.old-{dead_pid}"] and kept == []
        left = sorted(p.name for p in tmp_path.iterdir())
        assert left == sorted([f".out.tmp-{live.pid}-efgh", ".out.tmp-x1y2z3",
                               f".other.tmp-{dead_pid}-ijkl", "out"])
    finally:
        live.kill()
        live.wait()


# ----------------------------------------------------------------------------- one validation layer
@pytest.mark.parametrize("factor", [1e-300, 1e-200, 1e200, 1e300])
def test_pmse_does_not_depend_on_the_unit_of_a_column(factor):
    """A column in tiny or huge units was dropped as constant (np.std underflowed) or aliased
    without a word; the logit pMSE is invariant to the unit of a continuous column."""
    ce = br.make_ce_like(300, random_seed=1)
    rng = np.random.default_rng(0)
    syn = [ce.assign(Income=ce["Income"] * rng.uniform(0.8, 1.2, len(ce))) for _ in range(2)]
    cat = ["Urban", "Marital", "Tenure"]
    a = br.pmse(ce, syn, categorical=cat, propensity=br.PropensitySpec(max_order=0))
    b = br.pmse(ce.assign(Income=ce["Income"] * factor),
                [z.assign(Income=z["Income"] * factor) for z in syn],
                categorical=cat,
                propensity=br.PropensitySpec(max_order=0))
    np.testing.assert_allclose(b.pmse, a.pmse, rtol=1e-6)
    assert "CONSTANT_COLUMN_DROPPED" not in b.warnings


@pytest.mark.parametrize("radius", [{"Income": True}, {"Income": np.True_}, True, [True],
                                    {"Income": "0.1"}, {"Income": float("nan")},
                                    {"Income": -0.1}])
def test_radius_must_be_a_real_number(radius):
    ce = br.make_ce_like(60, random_seed=1)
    with pytest.raises(ValidationError, match="radius"):
        br.identification_risk(ce, [ce], known=["Age", "Income"], synthesized=["Income"],
                               match=MatchSpec(radius=radius),
                               progressbar=False)


@pytest.mark.parametrize("where", ["synthetic", "original"])
def test_infinity_refused_by_utility_and_identification_alike(where):
    ce = br.make_ce_like(100, random_seed=1)
    z = ce.assign(Income=ce["Income"] * 1.1)
    bad = (z if where == "synthetic" else ce).copy()
    bad.loc[5, "Income"] = -np.inf
    o, s = (ce, [bad]) if where == "synthetic" else (bad, [z])
    for call in (
        lambda: br.identification_risk(o, s, known=["Age", "Income"],
                                       synthesized=["Income"], match=MatchSpec(radius=0.1),
                                       progressbar=False),
        lambda: br.utility_summary(o, s, propensity=br.PropensitySpec(max_order=0)),
    ):
        with pytest.raises(SchemaError, match="record 5") as err:
            call()
        assert err.value.code == "INFINITE_VALUE" and "'Income'" in str(err.value)


def test_same_label_as_number_and_text_is_refused_by_name():
    ce = br.make_ce_like(100, random_seed=1)
    z = ce.assign(Income=ce["Income"] * 1.1)
    z["Marital"] = z["Marital"].astype(str).astype("category")
    with pytest.raises(SchemaError, match="'Marital'") as err:
        br.utility_summary(ce, [z], categorical=["Urban", "Marital", "Tenure"],
                           synthesized=["Income"],
                           propensity=br.PropensitySpec(max_order=0))
    assert err.value.code == "LEVEL_TYPES_DIFFER"


def test_text_categories_read_against_integer_codes_are_reconciled(tmp_path):
    ce = br.make_ce_like(100, random_seed=1)
    z = ce.assign(Income=ce["Income"] * 1.1)
    z["Marital"] = z["Marital"].astype(str).astype("category")
    z.to_parquet(tmp_path / "z.parquet")
    rel = br.read_synthetic([tmp_path / "z.parquet"], like=ce)
    assert rel[0]["Marital"].tolist() == ce["Marital"].tolist()


@pytest.mark.parametrize("edit, match", [
    (lambda m: m.update(files=[m["files"][0]] * 2, m=2), "more than once"),
    (lambda m: m.update(files=["../elsewhere.parquet", m["files"][1]]), "not a file of"),
    (lambda m: m.update(files="syn_001.parquet"), "'files' must be"),
    (lambda m: m.update(n_records=[1]), "'n_records' must be"),
    (lambda m: m.update(n_records=10, synthesized_records=None), "'n_records' is 10"),
    (lambda m: m.update(m=7), "'m' is 7"),
    (lambda m: m.update(synthesized_records=[-1]), "outside"),
    (lambda m: m.update(schema=[1, 2, 3]), "'schema' must be"),
    (lambda m: m.pop("files"), "'files' is missing"),
])
def test_tampered_manifest_refused(release, tmp_path, edit, match):
    import json

    _, rel = release
    path = rel.save(tmp_path / "rel")
    f = path / "manifest.json"
    man = json.loads(f.read_text())
    edit(man)
    f.write_text(json.dumps(man))
    with pytest.raises(ValidationError, match=match) as err:
        br.SyntheticData.load(path)
    assert err.value.code == "MANIFEST_INVALID"
