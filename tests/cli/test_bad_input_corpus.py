"""Bad-input corpus of the command line: (input defect x sub-command) cases.

Every case runs ``bayes_risk.cli.main([...])`` in process, in a fresh working folder holding
copies of small inputs, and asserts:

* the exit status (2 for bad input, 0 where the input is valid);
* for status 2, exactly one error line on stderr (besides ``warning [CODE]: ...`` lines) that
  names the culprit, and no traceback;
* every input file and an existing ``--out`` unchanged (SHA-256 of every file);
* no stray file or folder left in the working folder (no ``.OUT.tmp-xxxx``).

The interrupt tests send a real SIGINT to a ``bayes-risk`` subprocess at several moments.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli_names import library_leaks

CE_CAT = ["Urban", "Marital", "Tenure"]
ACS_COLS = ["SEX", "RACE", "MAR", "EDU", "HICOV"]


# ----------------------------------------------------------------------------- inputs
@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """Small valid inputs, built once: a CE-like table and its CART release; an ACS-like table,
    a DPMPM model fitted to it and its release."""
    from bayes_risk.cli import main
    from bayes_risk.data import make_acs_like, make_ce_like

    root = tmp_path_factory.mktemp("corpus_base")
    ce = make_ce_like(120, random_seed=3)
    ce.to_csv(root / "ce.csv", index=False)
    acs = make_acs_like(120, random_seed=4)
    cols = [c for c in ACS_COLS if c in acs.columns] or list(acs.columns[:5])
    acs[cols].to_csv(root / "acs.csv", index=False)
    (root / "acs_cols.txt").write_text(" ".join(cols))
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert main(["synthesize", "ce.csv", "--method", "cart", "--synthesize", "Income",
                     "Expenditure", "--categorical", *CE_CAT, "-m", "2", "--random-seed", "1",
                     "-q", "--out", "cesyn"]) == 0
        assert main(["fit", "acs.csv", "--method", "dpmpm", "--categorical", *cols,
                     "--components", "4", "--tune", "30", "--draws", "40",
                     "--random-seed", "1", "-q", "--out", "model"]) == 0
        assert main(["synthesize", "--model", "model", "-m", "2", "--random-seed", "2",
                     "-q", "--out", "acssyn"]) == 0
    finally:
        os.chdir(cwd)
    # synthetic datasets as plain CSV files too (for defects injected into one dataset)
    for i, f in enumerate(sorted((root / "cesyn").glob("syn_*.parquet")), start=1):
        pd.read_parquet(f).to_csv(root / f"cesyn{i}.csv", index=False)
    return root


def _acs_cols(base: Path) -> list[str]:
    return (base / "acs_cols.txt").read_text().split()


# ----------------------------------------------------------------------------- commands
def _cmd(sub: str, base: Path, orig: str | None = None, syn: list[str] | None = None,
         model: str = "model", extra: tuple[str, ...] = (), cols: list[str] | None = None,
         out: str = "out", known: str = "mixed") -> list[str]:
    """The valid command line of ``sub`` (inputs relative to the working folder); ``known``
    "synthesized": identification's intruder knows synthesized columns only."""
    if sub == "fit":
        c = cols or _acs_cols(base)
        return ["fit", orig or "acs.csv", "--method", "dpmpm", "--categorical", *c,
                "--components", "3", "--tune", "10", "--draws", "10", "--random-seed", "1",
                "-q", *extra, "--out", out]
    if sub == "synthesize":
        return ["synthesize", orig or "ce.csv", "--method", "cart", "--synthesize", "Income",
                "--categorical", *CE_CAT, "-m", "2", "--random-seed", "1", "-q", *extra,
                "--out", out]
    if sub == "utility":
        return ["utility", orig or "ce.csv", *(syn or ["cesyn"]), "--categorical", *CE_CAT,
                "--max-order", "0", "--random-seed", "1", "-q", *extra, "--out", out]
    if sub == "identification" and known == "synthesized":
        return ["identification", orig or "ce.csv", *(syn or ["cesyn"]),
                "--known-synthesized", "Income", "Expenditure", "--radius", "Income=0.1",
                "--radius", "Expenditure=0.1", "-q", *extra, "--out", out]
    if sub == "disclosure":
        return ["disclosure", orig or "ce.csv", *(syn or ["cesyn"]), "--keys", "Age", "Urban",
                "Income", "--target", "Tenure", *extra, "--out", out]
    if sub == "audit":
        return ["audit", orig or "ce.csv", *(syn or ["cesyn"]), "--known", "Age", "Urban",
                "Income", "--categorical", *CE_CAT, "--radius-sweep", "none", "-q", *extra,
                "--out", out]
    if sub == "identification":
        return ["identification", orig or "ce.csv", *(syn or ["cesyn"]),
                "--known-unsynthesized", "Age", "Urban", "--known-synthesized", "Income",
                "--categorical", *CE_CAT, "--radius", "Income=0.1", "-q", *extra, "--out", out]
    if sub == "attribute":
        return ["attribute", orig or "acs.csv", *(syn or ["acssyn"]), "--model", model,
                "--records", "0-3", "--bootstrap", "0",
                "--khat", "none", "--random-seed", "1", "-q", *extra, "--out", out]
    if sub == "demo":
        return ["demo", "--part", "ce", "--n-ce", "60", "-m", "1", "-q", *extra, "--out", out]
    raise AssertionError(sub)


def _tree_digest(path: Path) -> dict[str, str]:
    """SHA-256 of every file under ``path`` (or of ``path`` itself)."""
    if path.is_file():
        return {".": hashlib.sha256(path.read_bytes()).hexdigest()}
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def _run_captured(argv: list[str], capsys) -> tuple[int, str, str]:
    """``main(argv)`` in this process: its exit status, stdout and stderr."""
    from bayes_risk.cli import main

    capsys.readouterr()
    try:
        rc = main(argv)
    except SystemExit as err:  # argparse usage errors
        rc = int(err.code or 0)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _run(argv: list[str], capsys) -> tuple[int, str]:
    rc, _, err = _run_captured(argv, capsys)
    return rc, err


# ----------------------------------------------------------------------------- the table
@dataclass
class Case:
    """One defect applied to one sub-command."""

    id: str
    sub: str
    rc: int
    culprit: str = ""  # substring the error line must contain (status 2)
    prepare: object = None  # callable(workdir, base) -> dict of _cmd keyword overrides
    kw: dict = field(default_factory=dict)
    needs_non_root: bool = False  # permissions do not bind root
    check: object = None  # callable(work, out, stderr): further assertions on the outcome


def _csv(work: Path, name: str, text: str, newline: str = "\n") -> str:
    (work / name).write_bytes(text.replace("\n", newline).encode("utf-8"))
    return name


def _edit(src: str, name: str, fn):
    """A prepare function writing ``fn(DataFrame)`` of input ``src`` as ``name``."""

    def prep(work: Path, base: Path) -> dict:
        df = pd.read_csv(work / src)
        fn(df).to_csv(work / name, index=False)
        return {}

    return prep


def _set(col: str, row: int, value):
    def fn(df):
        df = df.astype({col: object}) if isinstance(value, str) else df.copy()
        df.loc[row, col] = value
        return df

    return fn


ORIG_ARG = {"fit": "acs.csv", "synthesize": "ce.csv", "utility": "ce.csv",
            "identification": "ce.csv", "attribute": "acs.csv"}
TABLE_SUBS = ("fit", "synthesize", "utility", "identification", "attribute")
ALL_SUBS = (*TABLE_SUBS, "demo")


def _dup_last_name(src: Path, dst: Path) -> None:
    """``src`` with its last column renamed to its first column's name."""
    df = pd.read_csv(src)
    df.columns = [*df.columns[:-1], df.columns[0]]
    df.to_csv(dst, index=False)


def _orig_cases() -> list[Case]:
    """Defects of the original / confidential table, for every sub-command reading one."""
    cases: list[Case] = []
    for sub in TABLE_SUBS:
        src = ORIG_ARG[sub]
        num = "Income" if src == "ce.csv" else None
        cases += [
            Case("missing-file", sub, 2, "nope.csv", kw={"orig": "nope.csv"}),
            Case("empty-file", sub, 2, "empty.csv",
                 prepare=lambda w, b: {"orig": _csv(w, "empty.csv", "")}),
            Case("header-only", sub, 2, "no records",
                 prepare=lambda w, b, src=src: {
                     "orig": _csv(w, "hdr.csv", (w / src).read_text().splitlines()[0] + "\n")}),
            Case("unknown-column", sub, 2, "Nope",
                 kw={"cols": ["Nope"]} if sub == "fit"
                 else {"extra": ("--known", "Nope")} if sub == "attribute"
                 else {"extra": ("--categorical", "Nope")}),
            Case("bad-extension", sub, 2, ".xlsx",
                 prepare=lambda w, b, src=src: (shutil.copy(w / src, w / "t.xlsx"),
                                                {"orig": "t.xlsx"})[1]),
            Case("windows-line-endings", sub, 0,
                 prepare=lambda w, b, src=src: {
                     "orig": _csv(w, "crlf.csv", (w / src).read_text(), newline="\r\n")}),
            # read with commas, the whole header would be one column (fit would model it)
            Case("semicolon-separated", sub, 2, "semicolons",
                 prepare=lambda w, b, src=src: (
                     pd.read_csv(w / src).to_csv(w / "semi.csv", sep=";", index=False),
                     {"orig": "semi.csv"})[1]),
            # pandas would read the second one as a new column NAME.1
            Case("duplicated-column-name", sub, 2, "more than once",
                 prepare=lambda w, b, src=src: (
                     _dup_last_name(w / src, w / "dup.csv"), {"orig": "dup.csv"})[1]),
        ]
        if num:
            cases += [
                Case("string-in-numeric", sub, 2, "'abc'",
                     prepare=lambda w, b, src=src: (
                         _edit(src, "bad.csv", _set("Income", 7, "abc"))(w, b),
                         {"orig": "bad.csv"})[1]),
                Case("string-in-numeric-declared-continuous", sub, 2, "record 7",
                     prepare=lambda w, b, src=src: (
                         _edit(src, "bad.csv", _set("Income", 7, "sixty"))(w, b),
                         {"orig": "bad.csv", "extra": ("--continuous", "Income")})[1]),
                # CART accepts empty cells (a numeric predictor enters its trees through its
                # missingness and a filled value); the other commands refuse them naming Age
                Case("nan-in-known-column", sub, 0 if sub == "synthesize" else 2,
                     "" if sub == "synthesize" else "Age",
                     prepare=lambda w, b, src=src: (
                         _edit(src, "nan.csv", _set("Age", 3, np.nan))(w, b),
                         {"orig": "nan.csv"})[1]),
            ]
    return cases


def _syn_cases() -> list[Case]:
    """Defects of the synthetic datasets (utility, identification, attribute)."""

    def one(fn, name="bad1.csv"):
        def prep(w, b):
            df = pd.read_csv(w / "cesyn1.csv")
            fn(df).to_csv(w / name, index=False)
            return {"syn": [name, "cesyn2.csv"]}

        return prep

    cases = []
    for sub in ("utility", "identification"):
        cases += [
            Case("syn-missing-file", sub, 2, "nope.csv", kw={"syn": ["nope.csv"]}),
            Case("syn-header-only", sub, 2, "bad1.csv",
                 prepare=one(lambda d: d.iloc[:0])),
            Case("syn-missing-column", sub, 2, "Tenure", prepare=one(lambda d: d.drop(
                columns="Tenure"))),
            Case("syn-extra-column", sub, 2, "Extra",
                 prepare=one(lambda d: d.assign(Extra=1))),
            Case("syn-reordered-columns", sub, 0, prepare=one(lambda d: d[d.columns[::-1]])),
            Case("syn-string-in-numeric", sub, 2, "'abc'",
                 prepare=one(_set("Income", 5, "abc"))),
            # a missing synthetic value is allowed (user guide, Missing values): a level /
            # indicator in the pMSE, a value that matches no observed known value
            Case("syn-nan", sub, 0, prepare=one(_set("Income", 5, np.nan))),
            # utility reads Marital as categorical: a level the original never holds is
            # refused unless --recoded says the release recodes it (issue 64); identification's
            # intruder does not know Marital
            Case("syn-only-level", sub, 2 if sub == "utility" else 0,
                 "SYNTHETIC_ONLY_LEVEL" if sub == "utility" else "",
                 prepare=one(_set("Marital", 0, 99)),
                 kw={"extra": ("--synthesized", "Income", "Expenditure", "Marital")}
                 if sub == "utility" else {}),
            Case("syn-only-level-recoded", sub, 0, prepare=one(_set("Marital", 0, 99)),
                 kw={"extra": ("--synthesized", "Income", "Expenditure", "Marital",
                               "--recoded", "Marital")}
                 if sub == "utility" else {"extra": ("--recoded", "Marital")}),
            # utility: Age changed in one dataset only contradicts any inferred role
            Case("syn-differing-unsynthesized", sub, 2, "Age",
                 prepare=one(lambda d: d.assign(Age=d["Age"] + 1))),
            Case("syn-fewer-rows", sub, 2 if sub == "identification" else 0, "rows",
                 prepare=one(lambda d: d.iloc[:-10])),
            Case("syn-as-plain-files", sub, 0, kw={"syn": ["cesyn1.csv", "cesyn2.csv"]}),
        ]
    def acs_odd(w, b):
        z = pd.read_parquet(w / "acssyn" / "syn_001.parquet")
        c = z.columns[0]
        z[c] = z[c].astype(object)
        z.loc[0, c] = "Alien"
        z.to_csv(w / "odd1.csv", index=False)
        pd.read_parquet(w / "acssyn" / "syn_002.parquet").to_csv(w / "odd2.csv", index=False)
        return {"syn": ["odd1.csv", "odd2.csv"]}

    cases += [
        Case("syn-only-level", "attribute", 2, "SYNTHETIC_ONLY_LEVEL", prepare=acs_odd),
        Case("syn-missing-folder", "attribute", 2, "nope", kw={"syn": ["nope"]}),
        Case("non-model-dir", "attribute", 2, "not a saved bayes-risk model",
             prepare=lambda w, b: (Path(w / "notmodel").mkdir(), {"model": "notmodel"})[1]),
        Case("truncated-netcdf", "attribute", 2, "damaged",
             prepare=lambda w, b: _damage(w, "posterior.nc", truncate=True)),
        Case("corrupt-model-json", "attribute", 2, "model.json",
             prepare=lambda w, b: _damage(w, "model.json", truncate=True)),
        Case("different-original", "attribute", 2, "--allow-different-original",
             prepare=lambda w, b: (_edit("acs.csv", "flip.csv", _flip)(w, b),
                                   {"orig": "flip.csv"})[1]),
        Case("different-original-allowed", "attribute", 0,
             prepare=lambda w, b: (_edit("acs.csv", "flip.csv", _flip)(w, b),
                                   {"orig": "flip.csv",
                                    "extra": ("--allow-different-original",)})[1]),
        Case("records-out-of-range", "attribute", 2, "outside 0..",
             prepare=lambda w, b: {"extra": ("--records", "0-100000")}),
        Case("known-sums-without-pairs", "attribute", 2,
             "--known-sums needs --scenario two-records",
             prepare=lambda w, b: {"extra": ("--known-sums", "AGEP")}),
    ]
    return cases


def _flip(df: pd.DataFrame) -> pd.DataFrame:
    c = df.columns[0]
    levels = sorted(df[c].unique())
    swap = {a: b for a, b in zip(levels, levels[1:] + levels[:1], strict=True)}
    return df.assign(**{c: df[c].map(swap)})


def _damage(w: Path, fname: str, *, truncate: bool) -> dict:
    shutil.copytree(w / "model", w / "badmodel")
    f = w / "badmodel" / fname
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 3])
    return {"model": "badmodel"}


def _option_cases() -> list[Case]:
    """Bad values of numeric options."""
    cases = []
    for val, rc in (("-1", 2), ("nan", 2), ("inf", 2), ("0", 0)):
        cases.append(Case(f"radius={val}", "identification", rc, "Income",
                          kw={"extra": ("--radius", f"Income={val}")}))
    cases += [
        Case("m=0", "synthesize", 2, "-m", kw={"extra": ("-m", "0")}),
        Case("m=0", "demo", 2, "-m", kw={"extra": ("-m", "0")}),
        # checked by the sampler's spec before any step runs, named as the demo's option
        Case("draws=0", "demo", 2, "--draws must be an integer >= 1", kw={"extra": ("--draws",
                                                                                   "0")}),
        Case("model-dir-not-a-model", "synthesize", 2, "not a saved bayes-risk model",
             prepare=lambda w, b: (Path(w / "notmodel").mkdir(), {})[1]),
        Case("draws=0", "fit", 2, "draws", kw={"extra": ("--draws", "0")}),
        Case("components-too-large", "fit", 2, "--components",
             kw={"extra": ("--components", "1000000000")}),
        Case("records-not-numbers", "fit", 2, "--records",
             kw={"extra": ("--records", "x1")}),
    ]
    # posterior replicates: the error names the option given (--max-replicates 0 was reported
    # as "min_replicates must be a positive integer")
    for opt, val in (("--replicates", "0"), ("--max-replicates", "0"), ("--mcse-tol", "0"),
                     ("--replicates", "abc")):
        cases.append(Case(f"{opt[2:]}={val}", "identification", 2, opt,
                          kw={"extra": ("--model", "release", opt, val)}))
    # their options without --model: refused, each named (they were once silently ignored)
    cases.append(Case("view-without-model", "identification", 2, "--view, --mcse-tol need(s) "
                      "--model", kw={"extra": ("--view", "intruder", "--mcse-tol", "0.1")}))
    return cases


def _out_cases() -> list[Case]:
    """The --out policy, for every sub-command (demo included)."""
    cases = []
    for sub in ALL_SUBS:
        cases += [
            Case("out-is-file", sub, 2, "existing file",
                 prepare=lambda w, b: ((w / "out").write_text("keep me"), {})[1]),
            Case("out-non-empty-folder", sub, 2, "not empty",
                 prepare=lambda w, b: (_keep(w / "out"), {})[1]),
            Case("out-dot", sub, 2, "current folder", kw={"out": "."}),
            Case("out-parent", sub, 2, "current folder", kw={"out": ".."}),
            Case("out-read-only", sub, 2, "cannot be written", needs_non_root=True,
                 prepare=lambda w, b: ((w / "ro").mkdir(), (w / "ro").chmod(0o555),
                                       {"out": "ro/out"})[2]),
            Case("out-under-a-file", sub, 2, "not a folder",
                 prepare=lambda w, b: ((w / "afile").write_text("x"), {"out": "afile/out"})[1]),
        ]
        if sub != "demo":  # the demo reads no input
            cases.append(Case("out-holds-an-input", sub, 2, "holds the input",
                              prepare=lambda w, b, sub=sub: _out_holds_input(w, sub)))
    for sub in ("synthesize", "utility", "identification"):
        cases += [
            Case("out-empty-folder", sub, 0, prepare=lambda w, b: ((w / "out").mkdir(), {})[1]),
            Case("out-new-nested", sub, 0, kw={"out": "a/b/out"}),
            Case("out-file-overwrite", sub, 0, kw={"extra": ("--overwrite",)},
                 prepare=lambda w, b: ((w / "out").write_text("old"), {})[1]),
            Case("out-folder-overwrite", sub, 0, kw={"extra": ("--overwrite",)},
                 prepare=lambda w, b: (_keep(w / "out"), {})[1]),
        ]
    return cases


def _keep(d: Path) -> None:
    d.mkdir()
    (d / "precious.txt").write_text("do not delete")


def _out_holds_input(w: Path, sub: str) -> dict:
    (w / "inp").mkdir()
    src = ORIG_ARG.get(sub, "ce.csv")
    shutil.copy(w / src, w / "inp" / src)
    return {"orig": f"inp/{src}", "out": "inp", "extra": ("--overwrite",)}


def _unicode_cases() -> list[Case]:
    """Unicode and spaces in column names and levels (valid input)."""

    def prep(w: Path, b: Path) -> dict:
        ren = {"Urban": "Zone urbaine é", "Marital": "État civil"}
        d = pd.read_csv(w / "ce.csv").rename(columns=ren)
        d["État civil"] = d["État civil"].map(lambda v: f"niveau {v} – ü")
        d.to_csv(w / "uni.csv", index=False)
        for i in (1, 2):
            s = pd.read_csv(w / f"cesyn{i}.csv").rename(columns=ren)
            s["État civil"] = s["État civil"].map(lambda v: f"niveau {v} – ü")
            s.to_csv(w / f"unisyn{i}.csv", index=False)
        return {"orig": "uni.csv", "syn": ["unisyn1.csv", "unisyn2.csv"]}

    cat = ["--categorical", "Zone urbaine é", "État civil", "Tenure"]
    return [
        Case("unicode-names-levels", "utility", 0, prepare=prep,
             kw={"extra": (*cat, "--synthesized", "Income", "Expenditure")}),
        Case("unicode-names-levels", "synthesize", 0, prepare=prep, kw={"extra": tuple(cat)}),
    ]


# ------------------------------------------------------------- issue classes: wrong answers
def _shuffle(df: pd.DataFrame) -> pd.DataFrame:
    return df.sample(frac=1.0, random_state=11).reset_index(drop=True)


def _orig_as(name: str, fn):
    """A prepare function: the CE original edited by ``fn`` as ``name``."""

    def prep(w: Path, b: Path) -> dict:
        fn(pd.read_csv(w / "ce.csv")).to_csv(w / name, index=False)
        return {"orig": name}

    return prep


def _release_with_shuffled_dataset(w: Path, b: Path) -> dict:
    """A dataset file of a release shuffled in place: its checksum no longer matches."""
    shutil.copytree(w / "cesyn", w / "shufsyn")
    f = w / "shufsyn" / "syn_001.parquet"
    _shuffle(pd.read_parquet(f)).to_parquet(f)
    return {"syn": ["shufsyn"]}


def _release_written_with_shuffled_dataset(w: Path, b: Path) -> dict:
    """A release written (checksums and all) with one dataset's rows shuffled."""
    from bayes_risk.data import SyntheticData

    rel = SyntheticData.load(w / "cesyn")
    rel.datasets[0] = _shuffle(rel.datasets[0])
    rel.save(w / "shufsyn2")
    return {"syn": ["shufsyn2"]}


def _plain(w: Path, fn=None, orig_fn=None) -> dict:
    syn = []
    for i in (1, 2):
        d = pd.read_csv(w / f"cesyn{i}.csv")
        (fn(d) if (fn and i == 1) else d).to_csv(w / f"p{i}.csv", index=False)
        syn.append(f"p{i}.csv")
    over = {"syn": syn}
    if orig_fn is not None:
        orig_fn(pd.read_csv(w / "ce.csv")).to_csv(w / "o.csv", index=False)
        over["orig"] = "o.csv"
    return over


def _warns(code: str):
    def check(work: Path, out: Path, err: str) -> None:
        assert f"warning [{code}]" in err, err

    return check


def _alignment_cases() -> list[Case]:
    """Row misalignment: an original or synthetic file whose rows are not those of the release
    (shuffled, sorted, another table of the same shape) gave lower risks with exit 0."""
    other = _orig_as("other.csv", lambda d: d.assign(Income=(d["Income"] * 1.5).round()))
    cases = []
    for sub, known in (("utility", "mixed"), ("identification", "mixed"),
                       ("identification", "synthesized"), ("disclosure", "mixed"),
                       ("audit", "mixed")):
        tag = "" if known == "mixed" else "-known-synthesized-only"
        kw = {"known": known}
        # synthpop's disclosure measures never pair record i with row i: the same records in
        # another order are the same table to them (accepted), other values are not
        rc, culprit = (0, "") if sub == "disclosure" else (2, "another row order")
        cases += [
            Case(f"shuffled-original{tag}", sub, rc, culprit,
                 prepare=_orig_as("shuf.csv", _shuffle), kw=kw),
            Case(f"sorted-original{tag}", sub, rc, culprit,
                 prepare=_orig_as("sorted.csv", lambda d: d.sort_values(
                     "Age", kind="stable").reset_index(drop=True)), kw=kw),
            Case(f"other-original-same-shape{tag}", sub, 2, "['Income'] hold other values",
                 prepare=other, kw=kw),
            # the override accepts another table, never misaligned rows
            Case(f"shuffled-original-allowed{tag}", sub, rc, rc and "ROWS_MISALIGNED",
                 prepare=_orig_as("shuf.csv", _shuffle),
                 kw={**kw, "extra": ("--allow-different-original",)}),
            # audit: a CART release is not reproduced from another original, so the steps
            # that rebuild its synthesizer are skipped (their error says so)
            Case(f"other-original-allowed{tag}", sub, 0, prepare=other,
                 kw={**kw, "extra": ("--allow-different-original",) + (
                     ("--skip", "attribute", "posterior-identification") if sub == "audit"
                     else ())},
                 check=_warns("ORIGINAL_DIFFERS")),
        ]
        if sub == "audit":
            cases.append(Case("other-original-allowed-not-reproduced", sub, 2, "--skip",
                              prepare=other,
                              kw={**kw, "extra": ("--allow-different-original",)}))
    for sub, known in (("utility", "mixed"), ("identification", "synthesized")):
        kw = {"known": known}
        cases += [
            Case("release-with-a-shuffled-dataset", sub, 2, "RELEASE_DAMAGED",
                 prepare=_release_with_shuffled_dataset, kw=kw),
            Case("release-written-with-a-shuffled-dataset", sub, 2, "ROWS_MISALIGNED",
                 prepare=_release_written_with_shuffled_dataset, kw=kw),
            Case("plain-files-shuffled-synthetic", sub, 2, "ROWS_MISALIGNED",
                 prepare=lambda w, b: _plain(w, fn=_shuffle), kw=kw),
            Case("plain-files-shuffled-original", sub, 2, "ROWS_MISALIGNED",
                 prepare=lambda w, b: _plain(w, orig_fn=_shuffle), kw=kw),
            Case("plain-files-aligned", sub, 0, prepare=lambda w, b: _plain(w), kw=kw),
        ]
    return cases


_NA_MAP = {1: "NA", 2: "None", 3: "null", 4: "n/a", 5: "married"}


def _na_labels(w: Path, b: Path, *, parquet: bool = False) -> dict:
    d = pd.read_csv(w / "ce.csv")
    d["Marital"] = d["Marital"].map(_NA_MAP)
    if parquet:
        d.to_parquet(w / "na.parquet")
    else:
        d.to_csv(w / "na.csv", index=False)
    syn = []
    for i in (1, 2):
        z = pd.read_csv(w / f"cesyn{i}.csv")
        z["Marital"] = z["Marital"].map(_NA_MAP)
        z.to_csv(w / f"nasyn{i}.csv", index=False)
        syn.append(f"nasyn{i}.csv")
    return {"orig": "na.parquet" if parquet else "na.csv", "syn": syn}


def _labels_kept(work: Path, out: Path, err: str) -> None:
    orig = pd.read_csv(work / "ce.csv")["Marital"].map(_NA_MAP)
    for f in sorted(out.glob("syn_*.parquet")):
        z = pd.read_parquet(f)
        assert z["Marital"].isna().sum() == 0
        assert z["Marital"].value_counts().to_dict() == orig.value_counts().to_dict()


def _acs_na(w: Path, b: Path) -> dict:
    d = pd.read_csv(w / "acs.csv")
    c = d.columns[0]
    levels = sorted(d[c].unique())
    d[c] = d[c].map(dict(zip(levels, ["NA", "None", "null", "n/a", "x", "y"], strict=False)))
    d.to_csv(w / "acsna.csv", index=False)
    return {"orig": "acsna.csv"}


def _lookalike_cases() -> list[Case]:
    """Labels that look like missing values (NA, None, null, n/a) are labels."""
    cat = ("--categorical", *CE_CAT)
    return [
        Case("na-labels", "synthesize", 0, prepare=_na_labels, check=_labels_kept),
        Case("na-labels-parquet", "synthesize", 0,
             prepare=lambda w, b: _na_labels(w, b, parquet=True), check=_labels_kept),
        Case("na-labels", "utility", 0, prepare=_na_labels,
             kw={"extra": ("--synthesized", "Income", "Expenditure")},
             check=_warns("NA_LIKE_LABEL")),
        Case("na-labels", "identification", 0, prepare=_na_labels,
             kw={"extra": ("--known-unsynthesized", "Age", "Urban", "Marital")}),
        Case("na-labels", "disclosure", 0, prepare=_na_labels),
        Case("na-labels", "fit", 0, prepare=_acs_na, check=_warns("NA_LIKE_LABEL")),
        Case("na-declared-missing", "utility", 0, prepare=_na_labels,
             kw={"extra": ("--synthesized", "Income", "Expenditure", "--missing-code",
                           "Marital=NA")}),
        Case("missing-code-unknown-column", "utility", 2, "Nope", prepare=_na_labels,
             kw={"extra": ("--missing-code", "Nope=NA", *cat)}),
    ]


def _text_edit(src: str, name: str, fn):
    def prep(w: Path, b: Path) -> dict:
        (w / name).write_text(fn((w / src).read_text()))
        return {"orig": name}

    return prep


def _thousands(d: pd.DataFrame) -> pd.DataFrame:
    return d.assign(Income=d["Income"].map(lambda v: f"{v:,.0f}"))


def _zeros_kept(work: Path, out: Path, err: str) -> None:
    assert "warning [LEADING_ZEROS]" in err, err
    z = pd.read_parquet(sorted(out.glob("syn_*.parquet"))[0])
    assert z["Tenure"].astype(str).str.startswith("0").all(), z["Tenure"].unique()


def _no_index_column(work: Path, out: Path, err: str) -> None:
    z = pd.read_parquet(sorted(out.glob("syn_*.parquet"))[0])
    assert not [c for c in z.columns if "Unnamed" in c or c == ""], list(z.columns)


def _retype_cases() -> list[Case]:
    """Cells re-typed or columns invented on the way in."""
    cases = []
    for sub in ("synthesize", "utility", "identification"):
        cases += [
            Case("thousands-separator", sub, 2, "'Income'",
                 prepare=_orig_as("thou.csv", _thousands)),
            Case("truncated-last-row", sub, 2, "line 121",
                 prepare=_text_edit("ce.csv", "trunc.csv",
                                    lambda t: t.rstrip("\n").rsplit(",", 2)[0] + "\n")),
            Case("short-row", sub, 2, "line 11",
                 prepare=_text_edit("ce.csv", "short.csv", lambda t: "\n".join(
                     ln.rsplit(",", 1)[0] if k == 10 else ln
                     for k, ln in enumerate(t.splitlines())) + "\n")),
            Case("unnamed-column", sub, 2, "no name",
                 prepare=_text_edit("ce.csv", "unn.csv", lambda t: t.replace(
                     "Tenure", "", 1))),
        ]
    cases += [
        Case("leading-zeros", "synthesize", 0, check=_zeros_kept,
             prepare=_orig_as("zeros.csv", lambda d: d.assign(
                 Tenure=d["Tenure"].map(lambda v: f"{v:02d}")))),
        Case("index-column-with-gaps", "synthesize", 0,
             check=lambda w, o, e: (_no_index_column(w, o, e),
                                    _warns("INDEX_COLUMN")(w, o, e)),
             prepare=lambda w, b: (pd.read_csv(w / "ce.csv").iloc[::2].to_csv(w / "idx.csv"),
                                   {"orig": "idx.csv"})[1]),
        Case("index-column-0..n-1", "synthesize", 0, check=_no_index_column,
             prepare=lambda w, b: (pd.read_csv(w / "ce.csv").to_csv(w / "idx.csv"),
                                   {"orig": "idx.csv"})[1]),
        # saved with the index after shuffling: the index is dropped, the shuffle is caught
        Case("shuffled-with-index", "utility", 2, "another row order",
             prepare=lambda w, b: (_shuffle(pd.read_csv(w / "ce.csv")).set_axis(
                 np.random.default_rng(1).permutation(120)).to_csv(w / "idx.csv"),
                 {"orig": "idx.csv"})[1]),
    ]
    return cases


def _value_cases() -> list[Case]:
    """One validation layer: the same value is refused by every sub-command alike."""
    def inf_syn(w, b):
        d = pd.read_csv(w / "cesyn1.csv")
        d.loc[4, "Income"] = np.inf
        d.to_csv(w / "inf1.csv", index=False)
        return {"syn": ["inf1.csv", "cesyn2.csv"]}

    return [Case("inf-in-synthetic-known-column", sub, 2, "INFINITE_VALUE", prepare=inf_syn)
            for sub in ("utility", "identification", "disclosure")]


def _tamper(edit):
    """A prepare function: a copy of the CE release whose manifest is changed by ``edit``."""

    def prep(w: Path, b: Path) -> dict:
        shutil.copytree(w / "cesyn", w / "tam")
        f = w / "tam" / "manifest.json"
        man = json.loads(f.read_text())
        edit(man, w)
        f.write_text(json.dumps(man))
        return {"syn": ["tam"]}

    return prep


def _set_key(key, value):
    return lambda man, w: man.__setitem__(key, value)


def _manifest_cases() -> list[Case]:
    """A manifest altered by hand: refused by name, never read as another release."""
    one = lambda man, w: man.update(files=[man["files"][0]] * 3, m=3)  # noqa: E731
    out_file = lambda man, w: man.update(files=["../ce.csv", man["files"][1]])  # noqa: E731
    absolute = lambda man, w: man.update(  # noqa: E731
        files=[str(w / "cesyn" / man["files"][0]), man["files"][1]])
    cases = []
    for sub in ("utility", "identification", "disclosure"):
        cases += [
            Case("manifest-one-file-three-times", sub, 2, "more than once", prepare=_tamper(one)),
            Case("manifest-path-outside-folder", sub, 2, "../ce.csv", prepare=_tamper(out_file)),
            Case("manifest-absolute-path", sub, 2, "not a file of the release folder",
                 prepare=_tamper(absolute)),
            Case("manifest-files-not-names", sub, 2, "'files' must be",
                 prepare=_tamper(_set_key("files", [1, 2, 3]))),
            Case("manifest-wrong-n-records", sub, 2, "'n_records' 119",
                 prepare=_tamper(_set_key("n_records", 119))),
            Case("manifest-n-records-text", sub, 2, "'n_records' must be",
                 prepare=_tamper(_set_key("n_records", "120"))),
            Case("manifest-m-differs", sub, 2, "'m' is 5", prepare=_tamper(_set_key("m", 5))),
            Case("manifest-records-out-of-range", sub, 2, "outside 0..119",
                 prepare=_tamper(_set_key("synthesized_records", [0, 500]))),
            Case("manifest-schema-malformed", sub, 2, "'schema'",
                 prepare=_tamper(_set_key("schema", {"columns": 7}))),
        ]

    def text_categories(w, b):
        for i in (1, 2):
            z = pd.read_parquet(w / "cesyn" / f"syn_00{i}.parquet")
            z["Marital"] = z["Marital"].astype(str).astype("category")
            z.to_parquet(w / f"cat{i}.parquet")
        return {"syn": ["cat1.parquet", "cat2.parquet"]}

    def no_syn_only(work, out, err):
        assert "SYNTHETIC_ONLY_LEVEL" not in err, err

    cases.append(Case("parquet-text-categories-vs-integer-codes", "utility", 0,
                      prepare=text_categories, check=no_syn_only,
                      kw={"extra": ("--synthesized", "Income", "Expenditure")}))
    return cases


def _baseline_check(work: Path, out: Path, err: str) -> None:
    """Figures that cannot depend on the release are a baseline, never a verdict line."""
    d = json.loads((out / "summary.json").read_text())
    base = {b["measure"] for b in d["baseline"]}
    assert any("expected match rate" in m for m in base), base
    assert any(m.startswith("repU") for m in base), base
    verdicts = [v["measure"] for v in d["verdicts"]]
    assert not any("match rate" in m or m.startswith("repU") for m in verdicts), verdicts
    assert "RELEASE_INDEPENDENT" in d["warnings"], d["warnings"]


def _baseline_cases() -> list[Case]:
    """The intruder knows unsynthesized columns only: the identification figures and repU
    cannot depend on the release (the README's former audit)."""
    return [
        Case("known-unsynthesized-only", "audit", 0, check=_baseline_check,
             kw={"extra": ("--known", "Age", "Urban", "Marital")}),
        # once a synthesized column is known they are verdicts on the release again (the
        # baselines left are sdcMicro's risk of the original, computed on the original alone)
        Case("known-synthesized-too", "audit", 0,
             check=lambda w, o, e: (
                 not [b for b in json.loads((o / "summary.json").read_text())["baseline"]
                      if "match rate" in b["measure"] or b["measure"].startswith("repU")]
                 or pytest.fail("baseline with a synthesized key")),
             kw={"extra": ("--known", "Age", "Urban", "Marital", "Income", "--radius",
                           "Income=0.1")}),
    ]


def _size_cases() -> list[Case]:
    """Sizes estimated from the inputs before anything is built: refused in a second, naming
    the option, instead of running for minutes into the memory limit."""
    def many_levels(w, b):
        # a 3,000-level identifier in 3,000 records: with two-way interactions about 25,000
        # coefficients for 6,000 stacked rows (it ran for minutes into gigabytes)
        from bayes_risk.data import make_ce_like

        d = make_ce_like(3000, random_seed=5).assign(ID=[f"p{i}" for i in range(3000)])
        d.to_csv(w / "ids.csv", index=False)
        for i in (1, 2):
            d.assign(Income=d["Income"] * (1 + i / 20)).to_csv(w / f"ids{i}.csv", index=False)
        return {"orig": "ids.csv", "syn": ["ids1.csv", "ids2.csv"]}

    huge = ("--records", "0-2000000000")
    return [
        Case("many-levels-with-interactions", "utility", 2, "--max-order 0",
             prepare=many_levels,
             kw={"extra": ("--categorical", "ID", "--synthesized", "Income", "Expenditure",
                           "--max-order", "1")}),
        Case("records-range-of-2e9", "fit", 2, "outside 0..119", kw={"extra": huge}),
        Case("records-range-of-2e9", "synthesize", 2, "outside 0..119", kw={"extra": huge}),
        Case("records-range-of-2e9", "attribute", 2, "outside 0..119", kw={"extra": huge}),
        Case("records-range-of-2e9", "audit", 2, "outside 0..119", kw={"extra": huge}),
    ]


def _out_input_cases() -> list[Case]:
    """--out naming an input that is not the original: the input is never replaced."""
    recs = lambda w, b: ((w / "recs.txt").write_text("0-3\n"), {})[1]  # noqa: E731
    return [
        Case("out-is-the-model", "identification", 2, "holds the input",
             kw={"extra": ("--model", "model", "--overwrite"), "out": "model"}),
        Case("out-is-the-model", "synthesize", 2, "holds the input"),
        Case("out-is-the-model", "attribute", 2, "holds the input",
             kw={"extra": ("--overwrite",), "out": "model"}),
        Case("out-is-the-targets", "identification", 2, "holds the input",
             prepare=lambda w, b: (shutil.copy(w / "ce.csv", w / "t.csv"), {})[1],
             kw={"extra": ("--targets", "t.csv", "--overwrite"), "out": "t.csv"}),
        Case("out-is-the-population-counts", "identification", 2, "holds the input",
             prepare=lambda w, b: ((w / "pc.csv").write_text("Age,Urban,Income,F\n"), {})[1],
             kw={"extra": ("--population-counts", "true:pc.csv", "--overwrite"),
                 "out": "pc.csv"}),
        Case("out-is-the-structural-zeros", "fit", 2, "holds the input",
             prepare=lambda w, b: ((w / "z.csv").write_text("a\n"), {})[1],
             kw={"extra": ("--structural-zeros", "z.csv", "--overwrite"), "out": "z.csv"}),
        Case("out-is-the-records-file", "audit", 2, "holds the input", prepare=recs,
             kw={"extra": ("--records", "recs.txt", "--overwrite"), "out": "recs.txt"}),
        Case("out-is-the-records-file", "fit", 2, "holds the input", prepare=recs,
             kw={"extra": ("--records", "recs.txt", "--overwrite"), "out": "recs.txt"}),
        Case("out-is-the-release", "audit", 2, "holds the input",
             kw={"extra": ("--overwrite",), "out": "cesyn"}),
    ]


def test_every_path_argument_is_an_input():
    """The inputs are read off the parser (a new option declared with a path metavar is
    covered at once): every option whose help speaks of a file or folder is one."""
    import argparse

    from bayes_risk.cli import build_parser
    from bayes_risk.cli.parsers import INPUTS_ATTR

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    expected = {
        "fit": {"original", "records", "model_opt_structural_zeros",
                "model_opt_predictor_matrix"},
        "synthesize": {"original", "model", "records", "model_opt_predictor_matrix"},
        "identification": {"original", "synthetic", "population_counts", "targets", "model"},
        "attribute": {"model", "original", "synthetic", "records", "pairs", "known_records",
                      "refit_cache"},
        "audit": {"original", "synthetic", "model", "records", "holdout", "refit_cache",
                  "before"},
    }
    for name, parser in sub.choices.items():
        inputs = set(parser.get_default(INPUTS_ATTR))
        if name in expected:
            assert inputs == expected[name], name
        for action in parser._actions:
            text = f"{action.help or ''} {action.metavar or ''}".lower()
            if action.dest in ("out", "help") or action.help is argparse.SUPPRESS:
                continue
            if ("file" in str(action.metavar or "").lower()
                    or "dir" == str(action.metavar or "").lower()):
                assert action.dest in inputs, (name, action.dest, text)



CASES = [*_orig_cases(), *_syn_cases(), *_option_cases(), *_out_cases(), *_unicode_cases(),
         *_alignment_cases(), *_lookalike_cases(), *_retype_cases(), *_out_input_cases(),
         *_value_cases(), *_manifest_cases(), *_size_cases(), *_baseline_cases()]


def _argv(case: Case, base: Path, over: dict) -> list[str]:
    kw = {**case.kw, **over}
    argv = _cmd(case.sub, base, **kw)
    if case.sub == "synthesize" and case.id == "out-is-the-model":
        argv = ["synthesize", "--model", "model", "-m", "1", "-q", "--overwrite", "--out",
                "model"]
    if case.sub in ("synthesize",) and case.id == "model-dir-not-a-model":
        argv = ["synthesize", "--model", "notmodel", "-q", "--out", "out"]
    if case.id.startswith("unicode") and case.sub == "synthesize":
        i = argv.index("--categorical")
        del argv[i: i + 4]
    if case.id.startswith("unicode") and case.sub == "utility":
        i = argv.index("--categorical")
        del argv[i: i + 4]
    return argv


@pytest.mark.parametrize("case", CASES, ids=[f"{c.sub}:{c.id}" for c in CASES])
def test_bad_input_case(case: Case, base: Path, tmp_path: Path, capsys, monkeypatch):
    if case.needs_non_root and hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("file permissions do not bind root")
    work = tmp_path / "work"
    shutil.copytree(base, work)
    monkeypatch.chdir(work)
    over = case.prepare(work, base) if case.prepare else {}
    argv = _argv(case, base, over or {})
    before = _tree_digest(work)
    listing = sorted(p.name for p in work.iterdir())
    rc, stdout, err = _run_captured(argv, capsys)
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("warning [")]
    assert "Traceback" not in err, err
    assert rc == case.rc, f"exit {rc} (expected {case.rc}) for {argv}:\n{err}"
    leaks = {ln: library_leaks(ln) for ln in err.splitlines() if ln.startswith("warning [")}
    assert not {k: v for k, v in leaks.items() if v}, leaks  # warnings name options too
    after = _tree_digest(work)
    out = work / (over.get("out") or case.kw.get("out") or "out")
    rel = str(out.relative_to(work)) if out != work and work in out.parents else None
    new_out = {k for k in after if rel and (k == rel or k.startswith(rel + "/"))} if rc == 0 \
        else set()
    # every input and any pre-existing --out unchanged (the output itself may appear on success)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)} - new_out
    if rc == 0 and "--overwrite" in argv:  # the old --out is replaced as a whole
        changed = {k for k in changed if not (rel and (k == rel or k.startswith(rel + "/")))}
    assert not changed, f"files changed: {sorted(changed)[:5]}"
    top = rel.split("/")[0] if (rel and rc == 0) else None
    stray = sorted(p.name for p in work.iterdir() if p.name not in listing and p.name != top)
    assert not stray, f"stray files in the working folder: {stray}"
    if rc == 2:
        assert len(lines) == 1, f"expected one error line, got:\n{err}"
        assert case.culprit in lines[0], f"{case.culprit!r} not named in: {lines[0]}"
        # every error names its code (docs/user_guide/errors.md): `error [CODE]: ...`
        assert re.match(rf"bayes-risk {case.sub}: error \[[A-Z][A-Z0-9]*(_[A-Z0-9]+)*\]: ",
                        lines[0]), f"no [CODE] in: {lines[0]}"
        assert "np.int64" not in lines[0] and "np.float64" not in lines[0]
        # the error names the command line's options, never the library's arguments
        assert not library_leaks(lines[0]), f"{library_leaks(lines[0])} named in: {lines[0]}"
    else:
        # -q: nothing on stderr but the one-line warnings (no progress display), and on
        # stdout the path written only (test_quiet_prints_the_written_paths_and_warnings_only's
        # rule, checked here for the sub-commands that have valid cases)
        assert not lines, f"stderr with -q holds more than warnings:\n{err}"
        if "-q" in argv:
            assert stdout.splitlines() == [argv[argv.index("--out") + 1]], stdout
        summary = out / "summary.json"
        assert summary.is_file(), sorted(p.name for p in out.iterdir())
        d = json.loads(summary.read_text())
        assert d["command"] == case.sub and "inputs" in d and "run_warnings" in d
        for w in d["run_warnings"]:
            assert w["code"] and w["message"]
    if case.check is not None:
        case.check(work, out, err)


@pytest.mark.parametrize("sub", ["attribute", "identification", "membership"])
def test_a_model_is_refused_with_an_original_it_was_not_fitted_to(sub, base, tmp_path, capsys,
                                                                   monkeypatch):
    """``--model`` with the model's own table in another row order: the datasets given as plain
    files (no manifest to compare ORIGINAL with), so the model's own fingerprint is the only
    check left. Refused (ORIGINAL_DIFFERS, naming the model's folder), nothing written; with
    --allow-different-original the run goes on and records the warning."""
    work = tmp_path / "w"
    shutil.copytree(base, work)
    monkeypatch.chdir(work)
    _shuffle(pd.read_csv("acs.csv")).to_csv("shuf.csv", index=False)
    plain = []
    for i, f in enumerate(sorted((work / "acssyn").glob("syn_*.parquet")), start=1):
        pd.read_parquet(f).to_csv(f"acssyn{i}.csv", index=False)
        plain.append(f"acssyn{i}.csv")
    cols = _acs_cols(base)
    what = {"attribute": ["--records", "0-3", "--bootstrap", "0", "--khat", "none"],
            "identification": ["--known-unsynthesized", cols[0], "--known-synthesized",
                               *cols[1:3], "--categorical", *cols, "--replicates", "2"],
            "membership": ["--records", "0-3", "--normaliser-draws", "100"]}[sub]
    argv = [sub, "shuf.csv", *plain, "--model", "model", *what, "--random-seed", "1", "-q",
            "--out", "out"]
    rc, _, err = _run_captured(argv, capsys)
    assert rc == 2, err
    assert f"bayes-risk {sub}: error [ORIGINAL_DIFFERS]: ORIGINAL is not the table the model " \
           "in 'model' was fitted to" in err, err
    assert "another row order" in err and "--allow-different-original" in err
    assert not (work / "out").exists()
    rc, _, err = _run_captured([*argv, "--allow-different-original"], capsys)
    assert rc == 0, err
    assert "warning [ORIGINAL_DIFFERS]: ORIGINAL is not the table the model in 'model'" in err
    summary = json.loads((work / "out" / "summary.json").read_text())
    assert "ORIGINAL_DIFFERS" in summary["warnings"]


# ----------------------------------------------------------------------------- policies
def test_overwrite_replaces_only_a_complete_output(base, tmp_path, capsys, monkeypatch):
    """A failing run with --overwrite leaves the old --out untouched."""
    work = tmp_path / "w"
    shutil.copytree(base, work)
    monkeypatch.chdir(work)
    _keep(work / "out")
    rc, err = _run(_cmd("synthesize", base, extra=("--overwrite", "--min-leaf", "-3")), capsys)
    assert rc == 2
    assert (work / "out" / "precious.txt").read_text() == "do not delete"
    rc, _ = _run(_cmd("synthesize", base, extra=("--overwrite",)), capsys)
    assert rc == 0 and not (work / "out" / "precious.txt").exists()
    assert (work / "out" / "manifest.json").is_file()
    assert not [p for p in work.iterdir() if p.name.startswith(".")]


def test_synthetic_only_level_is_recorded(base, tmp_path, capsys, monkeypatch):
    """Levels present only in synthetic data: refused by utility and identification
    (SYNTHETIC_ONLY_LEVEL, issue 64) unless --recoded names the column, then accepted with the
    coded warning SYNTHETIC_ONLY_LEVEL in summary.json (attribute refuses them: see the
    table)."""
    work = tmp_path / "w"
    shutil.copytree(base, work)
    monkeypatch.chdir(work)
    d = pd.read_csv("cesyn1.csv")
    d.loc[0, "Marital"] = 99
    d.to_csv("odd.csv", index=False)
    cols = _acs_cols(base)
    z = pd.read_parquet(work / "acssyn" / "syn_001.parquet")
    z.loc[0, cols[0]] = 99  # an integer-coded level the original does not have
    z.to_csv("aodd.csv", index=False)
    pd.read_parquet(work / "acssyn" / "syn_002.parquet").to_csv("a2.csv", index=False)
    runs = {
        # the roles are stated: Marital changed in one record of one dataset only would
        # contradict any inferred role (ROLE_CONTRADICTED)
        "utility": _cmd("utility", base, syn=["odd.csv", "cesyn2.csv"], out="utility",
                        extra=("--synthesized", "Income", "Expenditure", "Marital")),
        "identification": ["identification", "acs.csv", "aodd.csv", "a2.csv",
                           "--known-synthesized", *cols[:2], "--categorical", *cols, "-q",
                           "--out", "identification"],
    }
    recoded = {"utility": "Marital", "identification": cols[0]}
    for sub, argv in runs.items():
        rc, err = _run(argv, capsys)
        assert rc == 2 and "error [SYNTHETIC_ONLY_LEVEL]" in err, err
        assert f"--recoded {recoded[sub]}" in err, err
        assert not (work / sub).exists()
        rc, err = _run([*argv, "--recoded", recoded[sub]], capsys)
        assert rc == 0, err
        codes = [w["code"] for w in json.loads((work / sub / "summary.json").read_text())[
            "run_warnings"]]
        assert "SYNTHETIC_ONLY_LEVEL" in codes, (sub, codes)
        assert "warning [SYNTHETIC_ONLY_LEVEL]" in err


def test_summary_records_inputs_in_order(base, tmp_path, capsys, monkeypatch):
    work = tmp_path / "w"
    shutil.copytree(base, work)
    monkeypatch.chdir(work)
    rc, _ = _run(_cmd("identification", base, syn=["cesyn2.csv", "cesyn1.csv"]), capsys)
    assert rc == 0
    d = json.loads((work / "out" / "summary.json").read_text())
    # in the order given, as absolute paths (the record holds wherever the folder is read)
    assert d["inputs"]["synthetic"] == [str(work / "cesyn2.csv"), str(work / "cesyn1.csv")]
    assert d["inputs"]["original"] == str(work / "ce.csv")


def test_fewer_synthetic_rows_warns_in_utility(base, tmp_path, capsys, monkeypatch):
    """pMSE is defined for different row counts; the inferred roles are then stated as a
    warning recorded in summary.json."""
    work = tmp_path / "w"
    shutil.copytree(base, work)
    monkeypatch.chdir(work)
    pd.read_csv("cesyn1.csv").iloc[:-10].to_csv("short.csv", index=False)
    rc, err = _run(_cmd("utility", base, syn=["short.csv", "cesyn2.csv"]), capsys)
    assert rc == 0, err
    d = json.loads((work / "out" / "summary.json").read_text())
    assert "ROW_COUNT_DIFFERS" in [w["code"] for w in d["run_warnings"]]


def test_model_json_has_fingerprint_not_data(base):
    meta = json.loads((base / "model" / "model.json").read_text())
    fp = meta["data_fingerprint"]
    assert isinstance(fp, str) and len(fp) == 64
    text = (base / "acs.csv").read_text().splitlines()[1]
    assert text not in json.dumps(meta)


def test_library_warnings_point_at_the_caller():
    """Whatever the call depth inside the package, a warning is attributed to the user's line."""
    import warnings

    from bayes_risk.utility.combining import combine_scalar

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        combine_scalar(np.array([1.0]), np.array([0.1]))
    assert caught and all(Path(w.filename).resolve() == Path(__file__).resolve() for w in caught)


def test_stray_text_message_names_column_records_values():
    from bayes_risk.data import infer_schema
    from bayes_risk.exceptions import SchemaError

    age = ["63", "81", "40", "55"] * 10
    age[2] = "sixty"
    df = pd.DataFrame({"Age": age, "x": ["a", "b"] * 20})
    with pytest.raises(SchemaError, match=r"'Age'.*record 2: 'sixty'.*categorical=\['Age'\]"):
        infer_schema(df)
    assert infer_schema(df, categorical=["Age"])["Age"].type == "categorical"
    assert infer_schema(df.assign(Age=pd.to_numeric(df["Age"], errors="coerce")))[
        "Age"].type == "continuous"  # a missing value is not a stray text
    # a column of labels stays categorical: many values are not numbers
    labels = df.assign(Age=["63", "x", "y", "z"] * 10)
    assert infer_schema(labels)["Age"].type == "categorical"


# ----------------------------------------------------------------------------- interrupts
def _bayes_risk() -> list[str]:
    exe = Path(sys.executable).with_name("bayes-risk")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "bayes_risk"]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _interrupt(argv: list[str], cwd: Path, *, marker: str | None, delay: float,
               sig: int = signal.SIGINT) -> tuple[int, str]:
    """Start ``bayes-risk argv``; once ``marker`` appears on stderr (or at once), wait
    ``delay`` seconds and send ``sig``."""
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue", "PYTHONUNBUFFERED": "1"}
    p = subprocess.Popen(_bayes_risk() + argv, cwd=cwd, stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, text=True, env=env)
    seen = threading.Event()
    chunks: list[str] = []

    def reader():
        for line in p.stderr:
            chunks.append(line)
            if marker is None or marker in line:
                seen.set()
        seen.set()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    if marker is None:
        seen.set()
    seen.wait(timeout=600)  # a bound against a hang, not a moment: the marker decides
    time.sleep(delay)
    sent = time.monotonic()
    cpu_at_signal = _cpu_seconds(p.pid)
    if p.poll() is None:
        p.send_signal(sig)
    # reaped with wait4 for its CPU time: the CPU seconds spent after the signal measure how
    # promptly it acts whatever the machine's load (wall seconds grow with it)
    guard = threading.Timer(120, p.kill)
    guard.start()
    try:
        if p.returncode is None:
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            _interrupt.cpu_after = usage.ru_utime + usage.ru_stime - cpu_at_signal
        else:  # it ended before the signal
            _interrupt.cpu_after = 0.0
        rc = p.returncode
        _interrupt.exit_after = time.monotonic() - sent  # seconds from the signal to the exit
    finally:
        guard.cancel()
        if p.poll() is None:  # pragma: no cover
            p.kill()
    t.join(timeout=120)  # the reader takes the last lines from the pipe: a bound, not a moment
    return rc, "".join(chunks)


@pytest.mark.parametrize(
    "moment, tune, draws",
    [("burn-in", 200_000, 10), ("sampling", 5, 200_000)],
)
def test_sigint_during_fit_writes_nothing(base, tmp_path, moment, tune, draws):
    work = tmp_path / "w"
    shutil.copytree(base, work)
    cols = _acs_cols(base)
    argv = ["fit", "acs.csv", "--method", "dpmpm", "--categorical", *cols, "--components", "3",
            "--tune", str(tune), "--draws", str(draws), "--random-seed", "1", "--out", "fit"]
    before = sorted(p.name for p in work.iterdir())
    rc, err = _interrupt(argv, work, marker="sampling (", delay=1.5)
    assert rc == 130, err
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    assert lines[-1] == "interrupted" and "Traceback" not in err, err
    assert sorted(p.name for p in work.iterdir()) == before
    # Ctrl-C stops every chain, not only the running one (PyMC's sequential sampler would go on
    # with the next chain): far less than the minute the remaining 200,000 sweeps would take
    assert _interrupt.exit_after < 20, _interrupt.exit_after


@pytest.mark.parametrize("marker", ["[demo] CE: CART synthesis", "[demo] CE: audit"])
def test_sigint_during_the_demo_says_interrupted_once(tmp_path, marker):
    """The demo runs sub-commands inside itself: the interrupted step passes the interrupt on,
    and the line ``interrupted`` is printed once (it was printed by the step and the demo)."""
    argv = ["demo", "--part", "ce", "--n-ce", "400", "-m", "2", "--random-seed", "1",
            "--out", "demo"]
    rc, err = _interrupt(argv, tmp_path, marker=marker, delay=0.3)
    assert rc == 130, err
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    assert lines.count("interrupted") == 1 and lines[-1] == "interrupted", err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_sigterm_is_an_interrupt(base, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(base, work)
    argv = ["fit", "acs.csv", "--method", "dpmpm", "--categorical", *_acs_cols(base),
            "--components", "3", "--tune", "5", "--draws", "200000", "--out", "fit"]
    rc, err = _interrupt(argv, work, marker="sampling (", delay=1.0,
                         sig=signal.SIGTERM)
    assert rc == 130 and err.strip().splitlines()[-1] == "interrupted", err
    assert not (work / "fit").exists()
    assert _interrupt.exit_after < 20, _interrupt.exit_after  # every chain stops


@pytest.mark.parametrize("sub", ["utility", "identification"])
def test_sigint_during_writing_is_honoured_after_it(base, tmp_path, capsys, monkeypatch, sub):
    """A real SIGINT delivered while the output files are being written (deterministic: sent by
    the writer itself): the writing is not cut half-way, the finished temporary folder is
    dropped, the old --out stays, exit 130."""
    work = tmp_path / "w"
    shutil.copytree(base, work)
    monkeypatch.chdir(work)
    _keep(work / "out")
    real = pd.DataFrame.to_csv

    def to_csv(self, *a, **k):
        os.kill(os.getpid(), signal.SIGINT)
        return real(self, *a, **k)

    monkeypatch.setattr(pd.DataFrame, "to_csv", to_csv)
    import bayes_risk.data.io as dio

    real_write_csv = dio.write_csv  # identification writes records.csv with pyarrow

    def write_csv(*a, **k):
        os.kill(os.getpid(), signal.SIGINT)
        return real_write_csv(*a, **k)

    monkeypatch.setattr(dio, "write_csv", write_csv)
    rc, err = _run(_cmd(sub, base, extra=("--overwrite",)), capsys)
    assert rc == 130 and err.strip().splitlines()[-1] == "interrupted", err
    assert sorted(p.name for p in (work / "out").iterdir()) == ["precious.txt"]
    assert not [p for p in work.iterdir() if p.name.startswith(".")]


def test_an_ignored_sigint_stays_ignored(base, tmp_path, capsys, monkeypatch):
    """Started with SIGINT ignored (a background job of a script), the command leaves it
    ignored: a SIGINT while writing changes nothing and the run completes."""
    work = tmp_path / "w"
    shutil.copytree(base, work)
    monkeypatch.chdir(work)
    real = pd.DataFrame.to_csv

    def to_csv(self, *a, **k):
        os.kill(os.getpid(), signal.SIGINT)
        return real(self, *a, **k)

    monkeypatch.setattr(pd.DataFrame, "to_csv", to_csv)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        rc, err = _run(_cmd("utility", base), capsys)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert rc == 0, err
    assert (work / "out" / "summary.json").exists()


@pytest.mark.parametrize("delay", [0.0, 0.5, 1.0])
def test_sigint_while_writing_keeps_old_output(base, tmp_path, delay):
    """SIGINT at spread moments of a run whose last part is writing many files: either the run
    completes (exit 0, complete new output) or exit 130 and the old --out is untouched;
    never a mixture, never a temporary folder left."""
    work = tmp_path / "w"
    shutil.copytree(base, work)
    _keep(work / "out")
    argv = ["synthesize", "ce.csv", "--method", "cart", "--synthesize", "Income",
            "--categorical", *CE_CAT, "-m", "60", "--csv", "--random-seed", "1",
            "--overwrite", "--out", "out"]
    rc, err = _interrupt(argv, work, marker="CART synthesis", delay=delay)
    assert rc in (0, 130), err
    assert "Traceback" not in err
    complete = "the output was complete before the interrupt" in err
    if rc == 130 and not complete:
        assert (work / "out" / "precious.txt").is_file()
        assert sorted(p.name for p in (work / "out").iterdir()) == ["precious.txt"]
    else:  # finished before the signal, or the signal came once the output was in place
        assert len(list((work / "out").glob("syn_*.parquet"))) == 60
        assert not (work / "out" / "precious.txt").exists()
    assert not [p for p in work.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("moment", ["rename", "summary"])
def test_a_signal_once_the_output_is_in_place_still_exits_130(base, tmp_path, capsys,
                                                               monkeypatch, moment):
    """Ctrl-C is never answered with exit status 0 (issue 46: late Ctrl-Cs ended with 0 and a
    complete output). During the final rename it waits for the rename to end (the output is
    never cut); then, as once the output is in place (printing the summary), the run stops
    with 130 and a line saying that the output is complete, before ``interrupted``."""
    import bayes_risk._io as bio
    import bayes_risk.cli._common as common

    work = tmp_path / "w"
    shutil.copytree(base, work)
    monkeypatch.chdir(work)
    _keep(work / "out")
    if moment == "rename":
        real = bio.replace_checked

        def replace_checked(src, dst, **k):
            if Path(dst).name == "out":  # the command's own rename (a release is saved so too)
                os.kill(os.getpid(), signal.SIGINT)
            return real(src, dst, **k)

        monkeypatch.setattr(bio, "replace_checked", replace_checked)
    else:
        def print_summary(*a, **k):
            os.kill(os.getpid(), signal.SIGINT)

        monkeypatch.setattr(common, "print_summary", print_summary)
    rc, err = _run(_cmd("synthesize", base, extra=("--overwrite",)), capsys)
    lines = err.strip().splitlines()
    assert rc == 130 and lines[-1] == "interrupted", err
    assert lines[-2] == ("the output was complete before the interrupt: "
                         f"{work / 'out'} is in place"), err
    assert sorted(p.name for p in (work / "out").iterdir()) == [
        "manifest.json", "summary.json", "syn_001.parquet", "syn_002.parquet"]
    assert not [p for p in work.iterdir() if p.name.startswith(".")]


def test_stray_word_in_integer_coded_synthetic_column(tmp_path, capsys):
    """One stray word in a synthetic CSV makes the whole column text: ``"1"`` must still be the
    original's level ``1`` (only the word is a synthetic-only level), in identification and
    utility alike; before, identification failed with a pandas traceback and utility counted
    every level as new (pMSE at its maximum)."""
    from bayes_risk.cli import main

    rng = np.random.default_rng(3)
    n = 120
    orig = pd.DataFrame({"Age": rng.integers(20, 70, n), "Urban": rng.integers(1, 3, n),
                         "Marital": rng.integers(1, 6, n)})
    syn = orig.copy()
    syn["Marital"] = rng.permutation(syn["Marital"].to_numpy()).astype(object)
    syn.loc[5, "Marital"] = "Alien"
    orig.to_csv(tmp_path / "o.csv", index=False)
    syn.to_csv(tmp_path / "s.csv", index=False)
    out = tmp_path / "id"
    assert main(["identification", str(tmp_path / "o.csv"), str(tmp_path / "s.csv"),
                 "--known-unsynthesized", "Age", "Urban", "--known-synthesized", "Marital",
                 "--categorical", "Urban", "Marital", "--recoded", "Marital", "--out", str(out),
                 "-q"]) == 0
    err = capsys.readouterr().err
    assert "'Alien' (dataset 1)" in err and "'1' (dataset 1)" not in err, err
    d = json.loads((out / "summary.json").read_text())
    assert "SYNTHETIC_ONLY_LEVEL" in d["warnings"]
    u = tmp_path / "u"
    assert main(["utility", str(tmp_path / "o.csv"), str(tmp_path / "s.csv"), "--categorical",
                 "Urban", "Marital", "--synthesized", "Marital", "--max-order", "0",
                 "--recoded", "Marital", "--out", str(u), "-q"]) == 0
    s = json.loads((u / "summary.json").read_text())
    assert s["s_pmse"]["mean"] < 3  # a permutation of the same levels, not 5 new levels


# ----------------------------------------------------------------------------- interrupt latency
def test_sighup_is_an_interrupt(base, tmp_path):
    """A closed terminal or SSH session (SIGHUP) stops a run as Ctrl-C does."""
    work = tmp_path / "w"
    shutil.copytree(base, work)
    argv = ["fit", "acs.csv", "--method", "dpmpm", "--categorical", *_acs_cols(base),
            "--components", "3", "--tune", "5", "--draws", "200000", "--out", "fit"]
    rc, err = _interrupt(argv, work, marker="sampling (", delay=1.0, sig=signal.SIGHUP)
    assert rc == 130 and err.strip().splitlines()[-1] == "interrupted", err
    assert not (work / "fit").exists()
    assert not [p.name for p in work.iterdir() if p.name.startswith(".fit.")]


@pytest.fixture(scope="module")
def audit_base(tmp_path_factory) -> Path:
    """A 2,000-record CE-like table and its CART release: an audit of about 9 s."""
    from bayes_risk.cli import main
    from bayes_risk.data import make_ce_like

    root = tmp_path_factory.mktemp("audit_base")
    make_ce_like(2000, random_seed=3).to_csv(root / "ce.csv", index=False)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert main(["synthesize", "ce.csv", "--method", "cart", "--synthesize", "Income",
                     "Expenditure", "--categorical", *CE_CAT, "-m", "2", "--random-seed", "1",
                     "-q", "--out", "cesyn"]) == 0
    finally:
        os.chdir(cwd)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("marker", ["[audit] checking the inputs", "[audit] step 1/9",
                                    "[audit] step 2/9", "[audit] step 3/9"])
def test_audit_exits_promptly_on_sigterm(audit_base, tmp_path, marker):
    """The whole audit used to run inside the writer's critical section: a signal acted only
    when it had finished. Only the final rename is critical now. Measured in the CPU seconds the
    process spends after the signal (about 0.1; the audit itself needs about 13), since
    wall seconds grow with the machine's load (5.5 s were seen with the cores shared by five
    test runs). The moments are the audit's own messages, not delays after the start, which a
    loaded machine shifts (before the program's handlers exist, or after the audit ended)."""
    work = tmp_path / "w"
    shutil.copytree(audit_base, work)
    argv = ["audit", "ce.csv", "cesyn", "--known", "Age", "Urban", "Income", "--categorical",
            *CE_CAT, "--out", "aud"]
    before = sorted(p.name for p in work.iterdir())
    rc, err = _interrupt(argv, work, marker=marker, delay=0.0, sig=signal.SIGTERM)
    assert marker in err, err
    assert rc == 130, err
    assert err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err, err
    assert _interrupt.cpu_after < 3, (_interrupt.cpu_after, _interrupt.exit_after)
    assert sorted(p.name for p in work.iterdir()) == before  # no output, no temporary folder


# ----------------------------------------------------------------------------- races, left-overs
def test_two_runs_into_one_out_never_replace_each_other(base, tmp_path):
    """Two `synthesize --out two` started at once: one writes `two`, the other fails with
    OUT_TAKEN (or finds it not empty); the output in place is complete."""
    work = tmp_path / "w"
    shutil.copytree(base, work)
    argv = ["synthesize", "ce.csv", "--method", "cart", "--synthesize", "Income",
            "--categorical", *CE_CAT, "-m", "2", "-q", "--out", "two"]
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}
    procs = [subprocess.Popen(_bayes_risk() + [*argv, "--random-seed", str(s)], cwd=work,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for s in (1, 2)]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
    codes = sorted(rc for rc, _, _ in results)
    assert codes == [0, 2], results
    loser = next(err for rc, _, err in results if rc == 2)
    assert "OUT_TAKEN" in loser or "not empty" in loser, loser
    winner_out = next(out for rc, out, _ in results if rc == 0)
    assert winner_out.splitlines() == ["two"]  # --quiet: the path written
    manifest = json.loads((work / "two" / "manifest.json").read_text())
    assert len(manifest["files"]) == 2
    assert not [p.name for p in work.iterdir() if p.name.startswith(".two.")]


def test_out_created_during_the_run_is_never_deleted(base, tmp_path, capsys, monkeypatch):
    """--out is free at the start; another process creates it while the run works: without
    --overwrite the run must fail and leave it, not delete it."""
    import bayes_risk.cli._run as run_mod

    work = tmp_path / "w"
    shutil.copytree(base, work)
    monkeypatch.chdir(work)
    real = run_mod.output_dir

    @contextlib.contextmanager
    def racing(args):
        with real(args) as tmp:
            yield tmp
            _keep(work / "out")  # the other process, just before the final rename

    monkeypatch.setattr(run_mod, "output_dir", racing)  # synthesize imports it when it runs
    rc, err = _run(_cmd("synthesize", base), capsys)
    assert rc == 2 and "OUT_TAKEN" in err, err
    assert (work / "out" / "precious.txt").read_text() == "do not delete"
    assert not [p.name for p in work.iterdir() if p.name.startswith(".out.")]


def test_a_late_interrupt_of_a_dpmpm_membership_ends_at_once(base, tmp_path):
    """Issue 46: under load, Ctrl-Cs late in a DPMPM ``membership`` took 5.5–8.9 s, most of it
    the interpreter's tear-down of PyMC, numba and xarray after ``interrupted`` (2–3 s of CPU).
    The program now ends without it (``bayes_risk.cli._exit``). Measured in CPU seconds after
    the signal (about 0.05 now), which do not grow with the machine's load as wall seconds do."""
    work = tmp_path / "w"
    shutil.copytree(base, work)
    argv = ["membership", "acs.csv", "acssyn", "--model", "model", "--normaliser-draws", "40",
            "--random-seed", "1", "--out", "memb"]
    before = sorted(p.name for p in work.iterdir())
    # the refits' bar has ended: what is left is the scoring and the writing
    rc, err = _interrupt(argv, work, marker="refit 2 of 2: 2/2", delay=0.0)
    assert "refit 2 of 2: 2/2" in err, err
    assert rc == 130 and err.strip().splitlines()[-1] == "interrupted", err
    assert "Traceback" not in err
    assert _interrupt.cpu_after < 1.0, (_interrupt.cpu_after, _interrupt.exit_after)
    assert sorted(p.name for p in work.iterdir()) == before


def test_sigkilled_audit_with_a_model_leaves_nothing_the_next_run_keeps(base, tmp_path,
                                                                         capsys, monkeypatch):
    """A SIGKILLed ``audit --model`` left, beside ``--out``, its temporary folder and the one
    its report writer made beside that (``..aud.tmp-*.tmp-*``, partial CSVs), which the next
    run's clean-up did not recognise. Both are removed by the next run into that ``--out``."""
    work = tmp_path / "w"
    shutil.copytree(base, work)
    cols = _acs_cols(base)
    argv = ["audit", "acs.csv", "acssyn", "--model", "model", "--known", *cols[:2],
            "--categorical", *cols, "--records", "0-3", "--random-seed", "1", "--out", "aud"]
    rc, err = _interrupt(argv, work, marker="[audit] step 2/", delay=0.0, sig=signal.SIGKILL)
    assert rc == -signal.SIGKILL, err
    left = sorted(p.name for p in work.iterdir() if p.name.startswith("."))
    assert any(n.startswith(".aud.tmp-") for n in left), left
    assert any(n.startswith("..aud.tmp-") and ".tmp-" in n[len("..aud.tmp-"):] for n in left), left
    monkeypatch.chdir(work)
    rc, err = _run(_cmd("utility", base, out="aud"), capsys)
    assert rc == 0, err
    assert "warning [STALE_TEMPORARY_REMOVED]" in err and all(n in err for n in left), err
    assert not [p.name for p in work.iterdir() if p.name.startswith(".")]


def test_killed_run_leftovers_are_removed_by_the_next_run(base, tmp_path, capsys, monkeypatch):
    work = tmp_path / "w"
    shutil.copytree(base, work)
    monkeypatch.chdir(work)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = work / f".out.tmp-{int(dead.stdout)}-k9x2"
    stale.mkdir()
    (stale / "syn_001.parquet").write_bytes(b"confidential")
    rc, err = _run(_cmd("synthesize", base), capsys)
    assert rc == 0, err
    assert "warning [STALE_TEMPORARY_REMOVED]" in err and stale.name in err
    assert not stale.exists()
    codes = [w["code"] for w in json.loads((work / "out" / "summary.json").read_text())[
        "run_warnings"]]
    assert "STALE_TEMPORARY_REMOVED" in codes


# ----------------------------------------------------------------------------- --quiet
def _quiet_argv(sub: str, base: Path) -> list[str]:
    """A valid command line of ``sub`` with ``--quiet`` (``_cmd`` where it has one)."""
    cols = _acs_cols(base)
    if sub == "membership":
        return ["membership", "acs.csv", "acssyn", "--model", "model", "--records", "0-9",
                "--normaliser-draws", "40", "--bootstrap", "0", "--random-seed", "1", "-q",
                "--out", "out"]
    if sub == "orders":
        return ["orders", "acs.csv", "--method", "cart", "--order", ",".join(cols[1:3]),
                "--order", ",".join(cols[2:0:-1]), "--categorical", *cols,
                "--known-unsynthesized", cols[0], "-m", "1", "--random-seed", "1", "-q",
                "--out", "out"]
    if sub == "disclosure":
        return [*_cmd(sub, base)[:-2], "-q", "--out", "out"]
    if sub == "attacks":  # no holdout: warning NO_HOLDOUT on stderr
        return ["attacks", "ce.csv", "cesyn", "--categorical", *CE_CAT, "--n-attacks", "20",
                "--random-seed", "1", "-q", "--out", "out"]
    if sub == "original-risk":
        return ["original-risk", "ce.csv", "--keys", "Age", "Urban", "Marital", "-q",
                "--out", "out"]
    if sub == "remedy":
        return ["remedy", "ce.csv", "cesyn", "--bottom-top", "Income=:50000", "--smooth",
                "Expenditure", "-q", "--out", "out"]
    if sub == "design":  # one candidate
        return ["design", "ce.csv", "--known", "Age", "Urban", "Income", "--categorical",
                *CE_CAT, "--columns", "Tenure,Income", "--methods", "cart", "--knob",
                "cart.min_leaf=20", "-m", "2", "--remedies", "none", "--max-candidates", "1",
                "--screen-records", "none", "--random-seed", "1", "-q", "--out", "out"]
    return _cmd(sub, base)


#: sub-commands whose valid cases of the table above run with ``-q`` (test_bad_input_case
#: checks the rule of the test below on them, so it does not run them again)
QUIET_IN_CASES = ("fit", "synthesize", "utility", "identification", "attribute", "audit")


def test_quiet_rule_is_checked_for_every_sub_command(base):
    """Every sub-command meets the ``--quiet`` rule in one of the two tests: a valid case of
    the table (with ``-q``) or test_quiet_prints_the_written_paths_and_warnings_only."""
    from bayes_risk.cli import SUBCOMMANDS

    assert sorted(SUBCOMMANDS) == sorted(
        ["fit", "synthesize", "utility", "identification", "attribute", "membership",
         "attacks", "disclosure", "original-risk", "remedy", "audit", "orders", "demo",
         "design"])
    # a new sub-command joins the test below (or has valid cases with -q)
    assert sorted([*QUIET_IN_CASES, *QUIET_SUBS]) == sorted(SUBCOMMANDS)
    for sub in QUIET_IN_CASES:
        valid = [c for c in CASES if c.sub == sub and c.rc == 0
                 and "-q" in _cmd(sub, base, **c.kw)]
        assert valid, f"no valid case of {sub} runs with -q"


QUIET_SUBS = ("membership", "attacks", "disclosure", "original-risk", "remedy", "orders", "demo",
              "design")


@pytest.mark.parametrize("sub", QUIET_SUBS)
def test_quiet_prints_the_written_paths_and_warnings_only(base, tmp_path, capsys, monkeypatch,
                                                          sub):
    """One rule for every sub-command (issue 48: ``disclosure --quiet`` printed 34 lines,
    ``utility --quiet`` 9, ``fit`` 4): stdout holds the path(s) written, stderr the warnings,
    nothing else (no summary, bar, message or log line). The sub-commands with valid cases in
    the table above are checked there (``QUIET_IN_CASES``)."""
    work = tmp_path / "w"
    shutil.copytree(base, work)
    monkeypatch.chdir(work)
    argv = _quiet_argv(sub, base)
    assert "-q" in argv
    from bayes_risk.cli import main

    capsys.readouterr()
    assert main(argv) == 0
    cap = capsys.readouterr()
    written = (["out/ce/audit/report.html"] if sub == "demo" else ["out"])
    assert cap.out.splitlines() == written, cap.out
    assert (work / written[0]).exists()
    assert all(ln.startswith("warning [") for ln in cap.err.splitlines()), cap.err
