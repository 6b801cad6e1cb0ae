"""Input files that are not what a table is (issue 46, items 8 and 10).

* a named pipe or a device is refused before anything is read from it (it used to hang while
  the command line hashed it), also inside a release folder;
* a CSV field longer than the ``csv`` module's 128 KiB limit is data, read as pandas reads it;
* column names that print alike (case, white space, invisible characters, look-alike letters
  of other scripts: issue 64) are refused;
* a text label declared missing for a column that holds numbers only is refused.
"""

from __future__ import annotations

import csv
import os
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_risk.cli import main
from bayes_risk.data import infer_schema, read_synthetic, read_table
from bayes_risk.exceptions import BayesRiskError, SchemaError, ValidationError

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.BayesRiskWarning")

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")


def _table(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"Age": rng.integers(20, 70, n), "Sex": rng.choice(["F", "M"], n),
                         "Income": rng.integers(0, 90_000, n)})


def _run(argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    try:
        rc = main(argv)
    except SystemExit as err:  # argparse usage errors
        rc = int(err.code or 0)
    return rc, capsys.readouterr().err


def _error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if not ln.startswith("warning [")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _writer_that_never_comes(path: Path) -> threading.Thread:
    """A thread that would unblock a reader of the pipe ``path`` (so that a test that fails by
    hanging ends): it opens it for writing once the test is over, if nobody did."""
    done = threading.Event()

    def unblock() -> None:
        if not done.wait(20):
            with open(path, "w") as fh:
                fh.write("a\n1\n")

    t = threading.Thread(target=unblock, daemon=True)
    t.done = done  # type: ignore[attr-defined]
    t.start()
    return t


# ---------------------------------------------------------------- pipes and devices
@needs_fifo
def test_a_named_pipe_is_refused_before_it_is_read(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _table().to_csv("syn.csv", index=False)
    fifo = tmp_path / "orig.csv"
    os.mkfifo(fifo)
    guard = _writer_that_never_comes(fifo)
    try:
        with pytest.raises(ValidationError, match="named pipe") as info:
            read_table(fifo)
        assert info.value.code == "NOT_A_REGULAR_FILE"
        for argv in (["utility", "orig.csv", "syn.csv", "--out", "out"],
                     ["synthesize", "orig.csv", "--method", "cart", "--synthesize", "Income",
                      "--out", "out"],
                     ["fit", "orig.csv", "--method", "cart", "--synthesize", "Income",
                      "--out", "out"]):
            rc, err = _run(argv, capsys)
            line = _error_line(err)
            assert rc == 2 and "[NOT_A_REGULAR_FILE]" in line and "ORIGINAL" in line, line
            assert "named pipe (FIFO)" in line and str(fifo) in line
        assert not guard.done.is_set()  # nobody wrote to the pipe: nothing waited for it
        assert not (tmp_path / "out").exists()
    finally:
        guard.done.set()


@needs_fifo
def test_a_pipe_inside_a_release_folder_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = _table()
    df.to_csv("orig.csv", index=False)
    assert main(["synthesize", "orig.csv", "--method", "cart", "--synthesize", "Income",
                 "-m", "2", "--random-seed", "1", "-q", "--out", "rel"]) == 0
    target = tmp_path / "rel" / "syn_002.parquet"
    target.unlink()
    os.mkfifo(target)
    guard = _writer_that_never_comes(target)
    try:
        rc, err = _run(["utility", "orig.csv", "rel", "-q", "--out", "out"], capsys)
        line = _error_line(err)
        assert rc == 2 and "[NOT_A_REGULAR_FILE]" in line and "SYN" in line
        assert "syn_002.parquet" in line
    finally:
        guard.done.set()


@needs_fifo
def test_a_synthetic_file_with_missing_labels_is_checked_before_its_header_is_read(tmp_path):
    # the labels of a CSV release are matched to its header: a file that is missing, or a pipe,
    # is the reader's error, not the header's (FileNotFoundError; a wait for a writer)
    _table().to_csv(tmp_path / "syn.csv", index=False)
    with pytest.raises(ValidationError, match="does not exist") as info:
        read_synthetic([tmp_path / "syn.csv", tmp_path / "nope.csv"],
                       missing_labels={"Income": ["NA"]})
    assert info.value.code == "FILE_NOT_FOUND"
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    guard = _writer_that_never_comes(fifo)
    try:
        with pytest.raises(ValidationError, match="named pipe") as info:
            read_synthetic([tmp_path / "syn.csv", fifo], missing_labels={"Income": ["NA"]})
        assert info.value.code == "NOT_A_REGULAR_FILE"
        assert not guard.done.is_set()
    finally:
        guard.done.set()


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _table().to_csv("syn.csv", index=False)
    rc, err = _run(["utility", "/dev/zero", "syn.csv", "--out", "out"], capsys)
    line = _error_line(err)
    assert rc == 2 and "[NOT_A_REGULAR_FILE]" in line and "character device" in line
    with pytest.raises(ValidationError, match="character device"):
        read_table("/dev/zero")


def test_a_folder_given_as_a_table_says_so(tmp_path):
    with pytest.raises(ValidationError, match="is a folder") as info:
        read_table(tmp_path)
    assert info.value.code == "IS_A_FOLDER"


# ---------------------------------------------------------------- long fields
@pytest.mark.parametrize("size", [131_073, 300_000])
def test_a_field_longer_than_the_csv_module_limit_is_read(tmp_path, size):
    df = _table(12)
    df["note"] = "x"
    df.loc[3, "note"] = "y" * size  # a free-text answer, > csv.field_size_limit() = 131072
    df.to_csv(tmp_path / "long.csv", index=False)
    limit = csv.field_size_limit()
    back = read_table(tmp_path / "long.csv")
    assert csv.field_size_limit() == limit  # the process-wide setting is left as it was
    pd.testing.assert_frame_equal(back, pd.read_csv(tmp_path / "long.csv"))
    assert len(back.loc[3, "note"]) == size
    # the row-length check still refuses a short row after the long one
    text = (tmp_path / "long.csv").read_text()
    (tmp_path / "cut.csv").write_text(text + "1,F\n")
    with pytest.raises(SchemaError, match="line 14 has 2 field") as info:
        read_table(tmp_path / "cut.csv")
    assert info.value.code == "ROW_LENGTH"


def test_a_long_header_name_and_field_through_the_command_line(tmp_path, capsys,
                                                               monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = _table(60)
    df["comment"] = "ok"
    df.loc[5, "comment"] = "z" * 200_000
    df = df.rename(columns={"Sex": "S" * 3000})
    df.to_csv("orig.csv", index=False)
    rc, err = _run(["synthesize", "orig.csv", "--method", "cart", "--synthesize", "Income",
                    "-m", "1", "--random-seed", "1", "-q", "--out", "rel"], capsys)
    assert rc == 0, err
    syn = read_synthetic(tmp_path / "rel")
    assert "S" * 3000 in syn[0].columns


# ---------------------------------------------------------------- confusable names
CONFUSABLE = [
    ("Income", "Income "),  # a trailing space
    ("Income", " Income"),  # a leading one
    ("Income", "income"),  # case
    ("Income", "INCOME"),
    ("Marital status", "Marital  status"),  # inner white space
    ("Marital status", "Marital\tstatus"),
    ("ﬁnal", "final"),  # a ligature, the same text in Unicode's compatibility form
    ("Straße", "STRASSE"),  # case folding
    # issue 64: the confusable skeleton (UTS #39)
    ("Age", "\u0410ge"),  # a Cyrillic capital A
    ("Urban", "Urban\u200b"),  # a zero-width space
    ("Income", "\u0406ncome"),  # a Cyrillic I
    ("Marital", "Mar\u0456tal"),  # a Cyrillic small i
    ("Tenure", "T\u0435nure"),  # a Cyrillic small e
    ("Educ", "Ed\u03c5c"),  # a Greek upsilon
]


@pytest.mark.parametrize("a,b", CONFUSABLE)
def test_names_that_differ_only_in_case_or_space_are_refused(a, b, tmp_path):
    df = pd.DataFrame({a: [1, 2, 3], "x": [1, 1, 2], b: [4, 5, 6]})
    with pytest.raises(ValidationError) as info:
        infer_schema(df)
    assert info.value.code == "CONFUSABLE_COLUMN_NAMES"
    assert repr(a) in str(info.value) and repr(b) in str(info.value)
    df.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ValidationError) as info:
        read_table(tmp_path / "t.csv")
    assert info.value.code == "CONFUSABLE_COLUMN_NAMES"
    df.to_parquet(tmp_path / "t.parquet")
    with pytest.raises(ValidationError, match="names print alike"):
        read_table(tmp_path / "t.parquet")


def test_distinct_names_with_spaces_and_case_are_fine(tmp_path):
    df = pd.DataFrame({"Income ": [1, 2], "Income 2": [3, 4], "income_tax": [5, 6],
                       "AGE": [7, 8]})
    assert infer_schema(df).names == list(df.columns)
    df.to_csv(tmp_path / "t.csv", index=False)
    assert list(read_table(tmp_path / "t.csv").columns) == list(df.columns)


@pytest.mark.parametrize("name", ["Income ", "income"])
def test_confusable_names_on_the_command_line(name, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = _table()
    df[name] = df["Income"] + 1
    df.to_csv("orig.csv", index=False)
    for argv in (["synthesize", "orig.csv", "--method", "cart", "--synthesize", "Income",
                  "--out", "out"],
                 ["utility", "orig.csv", "orig.csv", "--out", "out"]):
        rc, err = _run(argv, capsys)
        line = _error_line(err)
        assert rc == 2 and "[CONFUSABLE_COLUMN_NAMES]" in line and repr(name) in line
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- --missing-code labels
def test_a_label_for_a_numeric_column_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = _table()
    df.to_csv("orig.csv", index=False)
    with pytest.raises(SchemaError, match="holds numbers only") as info:
        read_table("orig.csv", missing_labels={"Income": ["abc"]})
    assert info.value.code == "MISSING_LABEL_NOT_TEXT"
    assert "missing_labels={'Income': ['abc']}" in str(info.value)
    for argv in (["synthesize", "orig.csv", "--method", "cart", "--synthesize", "Income",
                  "--missing-code", "Income=abc", "--out", "out"],
                 ["utility", "orig.csv", "orig.csv", "--missing-code", "Income=NA",
                  "--out", "out"],
                 ["identification", "orig.csv", "orig.csv", "--known-unsynthesized", "Age",
                  "--missing-code", "Age=unknown", "--out", "out"]):
        rc, err = _run(argv, capsys)
        line = _error_line(err)
        assert rc == 2 and "[MISSING_LABEL_NOT_TEXT]" in line, line
        col, lab = argv[argv.index("--missing-code") + 1].split("=")
        assert f"--missing-code {col}={lab}" in line and f"--missing-code {col}=-8" in line
        assert "missing_labels" not in line and "missing_codes" not in line


def test_labels_that_can_apply_are_still_accepted(tmp_path):
    df = _table()
    df["Sex"] = df["Sex"].astype(object)
    df.loc[2, "Sex"] = "NA"
    inc = df["Income"].astype(object)
    inc[4] = "refused"
    df["Income"] = inc
    df.to_csv(tmp_path / "t.csv", index=False)
    out = read_table(tmp_path / "t.csv", missing_labels={"Sex": ["NA", "absent"],
                                                          "Income": ["refused"]})
    assert out["Sex"].isna().sum() == 1 and out["Income"].isna().sum() == 1
    assert pd.api.types.is_numeric_dtype(out["Income"])  # numbers again once the label is gone
    # a synthetic dataset may hold numbers only where the original held the label
    clean = _table()
    clean.to_csv(tmp_path / "s.csv", index=False)
    syn = read_synthetic([tmp_path / "s.csv"], missing_labels={"Income": ["refused"]})
    assert pd.api.types.is_numeric_dtype(syn[0]["Income"])


def test_the_messages_of_this_file_name_python_arguments_in_python(tmp_path):
    df = _table()
    df.to_csv(tmp_path / "t.csv", index=False)
    try:
        read_table(tmp_path / "t.csv", missing_labels={"Age": ["x"]})
    except BayesRiskError as err:
        assert "--missing-code" not in str(err)
    else:  # pragma: no cover - the label must be refused
        raise AssertionError("not refused")


# ---------------------------------------------------------------- row lengths, counted fast
def _csv_module_ok(raw: bytes, width: int) -> bool:
    """The row-length rule read by the csv module: every row has ``width`` fields or is a blank
    line after the header."""
    rows = csv.reader(raw.decode("utf-8-sig").splitlines(keepends=True))
    return all(len(r) == width or (not r and k > 1) for k, r in enumerate(rows, start=1))


@pytest.mark.parametrize("block", [1, 2, 5, 1 << 20])
def test_the_vectorised_row_length_count_agrees_with_the_csv_module(block, monkeypatch):
    # in blocks of whole lines of about ``block`` bytes (issue 88: small reused temporaries)
    from bayes_risk.data import io
    from bayes_risk.data.io import _row_lengths_plain

    monkeypatch.setattr(io, "_BLOCK", block)
    rng = np.random.default_rng(7)
    pieces = [b"1", b"22", b"", b"x y", b"\xc3\xa9"]  # an empty field, a space, UTF-8
    checked = 0
    for _ in range(3000):
        width = int(rng.integers(1, 5))
        lines = []
        for _ in range(int(rng.integers(0, 6))):
            n = width if rng.random() < 0.8 else int(rng.integers(0, 6))
            lines.append(b",".join(pieces[int(rng.integers(len(pieces)))] for _ in range(n)))
        end = [b"\n", b"\r\n"][int(rng.integers(2))]
        raw = (b"\xef\xbb\xbf" if rng.random() < 0.2 else b"") + end.join(lines)
        if rng.random() < 0.7:
            raw += end  # a last newline, or none
        fast, ok = _row_lengths_plain(raw, width), _csv_module_ok(raw, width)
        # the fast count never passes a file the csv module refuses, and passes every good one
        assert fast == ok, raw
        checked += fast
    assert checked > 1000
    # quotes and lone carriage returns are left to the csv module
    assert not _row_lengths_plain(b'a,b\n"1,2",3\n', 2)
    assert not _row_lengths_plain(b"a,b\r1,2\r", 2)


@pytest.mark.parametrize("block", [1, 2, 3, 4, 7, 1 << 20])
def test_the_vectorised_leading_zero_scan_agrees_with_the_regular_expression(block, monkeypatch):
    # the pre-check of LEADING_ZEROS: a field that starts with 0 and a digit (after an opening
    # quote and a sign), found as the expression finds it, on short random texts read in blocks
    # of ``block`` bytes (a field's start may lie up to three bytes before its block)
    import re

    from bayes_risk.data import io
    from bayes_risk.data.io import _has_leading_zero_field

    monkeypatch.setattr(io, "_BLOCK", block)

    pattern = re.compile(rb'(?:^|,)"?[+-]?0\d', re.MULTILINE)
    rng = np.random.default_rng(8)
    alphabet = [b"0", b"0", b"1", b"9", b",", b'"', b"+", b"-", b"\n", b"\r", b"a", b".", b" "]
    found = 0
    for _ in range(20000):
        raw = b"".join(alphabet[int(k)] for k in rng.integers(len(alphabet),
                                                              size=int(rng.integers(0, 9))))
        expected = pattern.search(raw) is not None
        assert _has_leading_zero_field(raw) == expected, raw
        found += expected
    assert 1000 < found < 19000


def test_look_alike_names_name_the_character_that_differs():
    # issue 64: 'Аge' (Cyrillic А) beside 'Age' passed; the error names the code point
    df = pd.DataFrame({"Age": [1, 2], "\u0410ge": [3, 4]})
    with pytest.raises(ValidationError, match="U\\+0410 CYRILLIC CAPITAL LETTER A where "
                                              "'Age' has 'A'") as info:
        infer_schema(df)
    assert info.value.code == "CONFUSABLE_COLUMN_NAMES"
    df = pd.DataFrame({"Urban": [1, 2], "Urban\u200b": [3, 4]})
    with pytest.raises(ValidationError, match="U\\+200B ZERO WIDTH SPACE, an invisible"):
        infer_schema(df)


def test_ascii_names_keep_their_letters():
    # '1' and 'l', '0' and 'O', 'rn' and 'm' print apart in ASCII: not refused
    df = pd.DataFrame({"x1": [1], "xl": [2], "v0": [3], "vO": [4], "rn": [5], "m": [6]})
    assert infer_schema(df).names == list(df.columns)


def test_an_option_naming_a_column_that_prints_alike_names_the_character(tmp_path, capsys):
    # issue 64: a zero-width space in the header gave "no column 'Urban'" with no hint
    from bayes_risk.data import make_ce_like

    df = make_ce_like(60, random_seed=1).rename(columns={"Urban": "Urban\u200b"})
    df.to_csv(tmp_path / "orig.csv", index=False)
    rc, err = _run(["original-risk", str(tmp_path / "orig.csv"), "--keys", "Age", "Urban",
                    "--out", str(tmp_path / "o")], capsys)
    assert rc == 2 and "error [MISSING_COLUMN]" in err
    assert ("Did you mean 'Urban\\u200b'? It prints like 'Urban': 'Urban\\u200b' holds U+200B "
            "ZERO WIDTH SPACE, an invisible character.") in err
    # the same hint wherever a column is named: the schema's check of an option's columns
    with pytest.raises(SchemaError, match="holds U\\+200B ZERO WIDTH SPACE"):
        infer_schema(df).check_columns(["Urban"], "known")
    # a name typed with an invisible character names it too
    schema = infer_schema(make_ce_like(20, random_seed=1))
    with pytest.raises(SchemaError, match="Did you mean 'Age'[?] It prints like 'Age\\\\u200b': "
                                          "'Age\\\\u200b' holds U\\+200B"):
        schema.check_columns(["Age\u200b"], "known")
    with pytest.raises(SchemaError, match="Did you mean 'Age'[?] The name given: 'Agee\\\\u200b' "
                                          "holds U\\+200B ZERO WIDTH SPACE"):
        schema.check_columns(["Agee\u200b"], "known")


@pytest.mark.parametrize("suffix", [".parquet", ".dta"])
def test_a_release_in_another_format_has_its_missing_labels_applied_as_a_csv_one(tmp_path,
                                                                                   suffix):
    # the labels were matched to a CSV header only: a Parquet or Stata release kept 'refused'
    # as a level the original never holds (a level of its own, refused as SYNTHETIC_ONLY_LEVEL)
    df = _table()
    df["Sex"] = df["Sex"].astype(object)
    df.loc[[1, 3], "Sex"] = "refused"
    df.to_csv(tmp_path / "s.csv", index=False)
    if suffix == ".parquet":
        df.to_parquet(tmp_path / f"s{suffix}", index=False)
    else:
        pytest.importorskip("pyreadstat")
        df.to_stata(tmp_path / f"s{suffix}", write_index=False)
    labels = {"Sex": ["refused"], "Absent": ["x"]}  # a column the release lacks: its checks' job
    csv_syn, other = (read_synthetic([tmp_path / f"s{s}"], missing_labels=labels)[0]
                      for s in (".csv", suffix))
    assert other["Sex"].isna().sum() == csv_syn["Sex"].isna().sum() == 2
    assert set(other["Sex"].dropna()) == set(csv_syn["Sex"].dropna()) == {"F", "M"}
    with pytest.raises(SchemaError) as info:  # the original's labels are checked strictly
        read_table(tmp_path / f"s{suffix}", missing_labels=labels)
    assert info.value.code == "UNKNOWN_COLUMN"
