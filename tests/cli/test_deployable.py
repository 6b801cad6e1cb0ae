"""Deployable in an agency (issue 35, item 6): what a colleague on a shared drive, an auditor
reading ``summary.json`` and a reader of the CLI's lines and reports see.

* outputs follow the umask (0644 / 0755 under umask 022), never the 0600 / 0700 of tempfile;
* ``summary.json`` records the inputs as absolute paths and the SHA-256 of every input file;
* every error line of the command line carries a code, every raise site of the CLI names one;
* a warning's code is shown once (``warning [CODE]: text``), not ``CODE: CODE: ...``;
* the audit's settings say partial or complete synthesis as the release is, and name the
  structural zeros of the model (how many, from which file).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import stat
import warnings
from pathlib import Path

import pandas as pd
import pytest

import bayes_risk.cli as cli
from bayes_risk.data import make_ce_like

ROOT = Path(__file__).resolve().parents[2]
CE_CAT = ["Urban", "Marital", "Tenure"]


@pytest.fixture(scope="module")
def ce(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("deployable")
    make_ce_like(150, random_seed=5).to_csv(root / "ce.csv", index=False)
    return root


def _synthesize(original: str, out: str, *extra: str) -> int:
    return cli.main(["synthesize", original, "--method", "cart", "--synthesize", "Income",
                     "Tenure", "--categorical", *CE_CAT, "-m", "2", "--random-seed", "1",
                     "-q", *extra, "--out", out])


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


# --------------------------------------------------------------------------- permissions
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_outputs_follow_the_umask(ce, tmp_path, umask):
    from bayes_risk._io import atomic_dir, atomic_file, current_umask

    old = os.umask(umask)
    try:
        assert current_umask() == umask
        out = tmp_path / "release"
        assert _synthesize(str(ce / "ce.csv"), str(out)) == 0
        # a library save (SyntheticData.save, model folders) and a single file (reports)
        with atomic_dir(tmp_path / "model") as d:
            (d / "model.json").write_text("{}")
        with atomic_file(tmp_path / "report.html") as fh:
            fh.write("<html></html>")
    finally:
        os.umask(old)
    want_dir, want_file = 0o777 & ~umask, 0o666 & ~umask
    assert _mode(out) == want_dir, oct(_mode(out))
    files = sorted(out.iterdir())
    assert {f.name for f in files} >= {"manifest.json", "summary.json", "syn_001.parquet"}
    for f in files:
        assert _mode(f) == want_file, (f.name, oct(_mode(f)))
    assert _mode(tmp_path / "model") == want_dir
    assert _mode(tmp_path / "model" / "model.json") == want_file
    assert _mode(tmp_path / "report.html") == want_file


# --------------------------------------------------------------------------- summary.json
def test_summary_records_absolute_inputs_and_checksums(ce, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "ce.csv").write_bytes((ce / "ce.csv").read_bytes())
    monkeypatch.chdir(work)  # relative paths on the command line, as a user types them
    assert _synthesize("ce.csv", "syn") == 0
    assert cli.main(["utility", "ce.csv", "syn", "--categorical", *CE_CAT, "--max-order", "0",
                     "--null", "theory", "-q", "--out", "util"]) == 0
    for folder, sub in (("syn", "synthesize"), ("util", "utility")):
        d = json.loads((work / folder / "summary.json").read_text())
        assert d["command"] == sub
        assert d["inputs"]["original"] == str(work / "ce.csv")
        sums = d["input_sha256"]
        want = [work / "ce.csv"]
        if sub == "utility":
            assert d["inputs"]["synthetic"] == [str(work / "syn")]
            want += sorted(p for p in (work / "syn").iterdir() if p.is_file())
        assert set(sums) == {str(p) for p in want}
        for p in want:  # the bytes of each file, as sha256sum prints them
            assert sums[str(p)] == hashlib.sha256(p.read_bytes()).hexdigest()
    rel = json.loads((work / "util" / "summary.json").read_text())["input_sha256"]
    assert any(k.endswith("syn_002.parquet") for k in rel) and any(
        k.endswith("manifest.json") for k in rel)


def test_file_sha256_is_the_one_file_hash():
    from bayes_risk._checksums import file_sha256

    path = ROOT / "pyproject.toml"
    assert file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- error codes
CLASSES = {"BayesRiskError", "SchemaError", "ValidationError", "NotFittedError",
           "NotSupportedError"}


def _raise_sites(folder: Path) -> list[tuple[str, int, bool]]:
    sites = []
    for p in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
            if name in CLASSES:
                coded = any(k.arg == "code" for k in node.keywords) or len(node.args) > 1
                sites.append((str(p.relative_to(ROOT)), node.lineno, coded))
    return sites


def test_every_raise_site_of_the_cli_names_its_code():
    sites = _raise_sites(ROOT / "bayes_risk" / "cli")
    assert len(sites) > 20  # the scan finds them (fewer sites is the aim)
    missing = [f"{p}:{n}" for p, n, coded in sites if not coded]
    assert not missing, f"errors raised without code=: {missing}"


def test_every_cli_code_is_documented():
    # the codes the command line names itself, and the fallback codes of the classes
    from bayes_risk import exceptions as ex
    from bayes_risk.cli import _OS_ERROR_CODES

    codes = set()
    for p in sorted((ROOT / "bayes_risk" / "cli").rglob("*.py")):
        codes |= set(re.findall(r'code="([A-Z][A-Z0-9_]+)"', p.read_text(encoding="utf-8")))
    codes |= {c for _, c in _OS_ERROR_CODES}
    codes |= {"OS_ERROR", "DISK_FULL", "OUT_OF_MEMORY", "USAGE"}
    codes |= {getattr(ex, n).default_code for n in CLASSES}
    page = (ROOT / "docs" / "user_guide" / "errors.md").read_text(encoding="utf-8")
    undocumented = sorted(c for c in codes if f"`{c}`" not in page)
    assert not undocumented, f"codes missing from docs/user_guide/errors.md: {undocumented}"


def test_the_errors_page_lists_the_warning_catalogue():
    # the page's table of warning codes is the catalogue, row for row (docs/user_guide/errors.md)
    from bayes_risk.warning_codes import MESSAGES, RECORD_FLAGS

    page = (ROOT / "docs" / "user_guide" / "errors.md").read_text(encoding="utf-8")
    table = page.split("## Warning codes", 1)[1]
    rows = dict(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \| (.+) \|$", table, flags=re.M))
    assert rows == MESSAGES
    assert set(RECORD_FLAGS) <= set(MESSAGES)


def test_an_error_raised_without_a_code_gets_its_class_code():
    from bayes_risk.exceptions import (
        BayesRiskError,
        NotFittedError,
        NotSupportedError,
        SchemaError,
        ValidationError,
    )

    assert ValidationError("x").code == "INVALID_ARGUMENT"
    assert SchemaError("x").code == "SCHEMA_MISMATCH"
    assert NotFittedError("x").code == "NOT_FITTED"
    assert NotSupportedError("x").code == "NOT_SUPPORTED"
    assert BayesRiskError("x").code == "BAYES_RISK_ERROR"
    assert ValidationError("x", code="OUT_TAKEN").code == "OUT_TAKEN"
    assert not ValidationError("x").code_given and ValidationError("x", code="A_B").code_given


@pytest.mark.parametrize("argv, code", [
    (["utility", "nothere.csv", "nosyn", "--out", "u"], "FILE_NOT_FOUND"),
    (["fit", "--bogus"], "USAGE"),
    (["utility", "ce.csv", "syn", "--max-order", "-1", "--out", "u"], "BAD_OPTION_VALUE"),
    (["synthesize", "ce.csv", "--method", "cart", "--out", "u"], "OPTION_REQUIRED"),
    (["synthesize", "ce.csv", "--method", "cart", "--synthesize", "Income", "--out", "."],
     "OUT_INVALID"),
])
def test_error_lines_carry_a_code(ce, tmp_path, monkeypatch, capsys, argv, code):
    monkeypatch.chdir(ce)
    try:
        rc = cli.main(argv)
    except SystemExit as e:  # argparse's own errors exit
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2
    line = [ln for ln in err.splitlines() if "error" in ln][-1]
    assert re.match(rf"bayes-risk( {argv[0]})?: error \[{code}\]: ", line), line


def test_os_errors_are_coded():
    from bayes_risk.cli import _os_error_code

    assert _os_error_code(FileNotFoundError(2, "x")) == "FILE_NOT_FOUND"
    assert _os_error_code(PermissionError(13, "x")) == "PERMISSION_DENIED"
    assert _os_error_code(OSError(28, "No space left on device")) == "DISK_FULL"
    assert _os_error_code(OSError(5, "I/O error")) == "OS_ERROR"


# --------------------------------------------------------------------------- warnings
def test_a_warning_shows_its_code_once(capsys):
    from bayes_risk.cli._run import command_run
    from bayes_risk.exceptions import DataWarning, ImportanceSamplingWarning, warning_line
    from bayes_risk.identification.plan import record_warning

    text = ("the relative Monte Carlo standard error of the expected match risk is still above "
            "0.05 after max_replicates=10 replicates")
    with command_run(argparse.Namespace(command="identification")) as run:
        record_warning({}, "MCSE_NOT_REACHED", text)
        warnings.warn(ImportanceSamplingWarning("20 draws are too few (H_TOO_SMALL)."),
                      stacklevel=1)
    err = capsys.readouterr().err.splitlines()
    assert err == [f"warning [MCSE_NOT_REACHED]: {text}",
                   "warning [H_TOO_SMALL]: 20 draws are too few."]
    assert [w["message"] for w in run.warnings] == [text, "20 draws are too few."]
    assert "MCSE_NOT_REACHED: MCSE_NOT_REACHED" not in "\n".join(err)
    # Python users still read the code in the warning itself
    assert warning_line(DataWarning(f"F_BELOW_ONE: {text}"), DataWarning) == ("F_BELOW_ONE", text)
    # a code inside the text (not in front or at the end) is left alone
    assert warning_line(DataWarning("see NO_MATCH below"), DataWarning)[1] == "see NO_MATCH below"


def test_the_audit_report_shows_a_warning_code_once():
    from bayes_risk.auditing.api import _dedupe

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from bayes_risk.identification.plan import record_warning

        record_warning({}, "ZERO_UNIQUE", "no target is a unique match")
    (d,) = _dedupe(caught)
    assert d["code"] == "ZERO_UNIQUE" and d["message"] == "no target is a unique match"


# --------------------------------------------------------------------------- audit settings
def _audit_plan(original: pd.DataFrame, release, categorical=None, **kw):
    from bayes_risk import AuditSettings, audit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit(original, release, progressbar=False, random_seed=1,
                     settings=AuditSettings(categorical=categorical,
                                            skip=["utility", "posterior_identification",
                                                  "attribute", "disclosure"]),
                     **kw)


@pytest.mark.parametrize("complete", [True, False])
def test_pmse_null_setting_says_partial_or_complete(complete):
    from bayes_risk.data import infer_schema
    from bayes_risk.models import CARTSynthesizer

    df = make_ce_like(120, random_seed=2)
    cols = list(df.columns) if complete else ["Income", "Tenure"]
    schema = infer_schema(df, categorical=CE_CAT, synthesized=cols)
    syn = CARTSynthesizer(min_leaf=10).fit(df, schema=schema, random_seed=1).synthesize(
        2, random_seed=2)
    res = _audit_plan(df, syn, known=["Age", "Urban"], schema=schema)
    s = res.plan.settings_frame().set_index("setting")
    note = s.loc["pMSE null", "note"]
    if complete:
        assert "complete synthesis" in note and "partial" not in note
    else:
        assert "partial synthesis" in note and "complete" not in note


def test_audit_report_names_the_structural_zeros(tmp_path):
    from _shared import shared_path

    data = pd.read_csv(shared_path("data", "ss16pusa_sample_zeros.csv"), dtype=str,
                       keep_default_na=False).iloc[:200]
    mcz = shared_path("data", "ss16pusa_ds_MCZ.csv")
    data.to_csv(tmp_path / "acs.csv", index=False)
    model = tmp_path / "model"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli.main(["fit", str(tmp_path / "acs.csv"), "--method", "dpmpm",
                         "--categorical", *data.columns, "--components", "4", "--tune", "20",
                         "--draws", "20", "--chains", "1", "-q", "--random-seed", "1",
                         "--structural-zeros", str(mcz), "--out", str(model)]) == 0
        assert cli.main(["synthesize", "--model", str(model), "-m", "2", "--random-seed", "2",
                         "-q", "--out", str(tmp_path / "syn")]) == 0
    res = _audit_plan(data, str(tmp_path / "syn"), known=["SEX", "MAR"], model=str(model),
                      categorical=list(data.columns))
    s = res.plan.settings_frame().set_index("setting")
    assert s.loc["structural zeros", "value"] == "8 impossible patterns"
    assert str(mcz) in s.loc["structural zeros", "source"]
    md = res.to_markdown(tmp_path / "report.md").read_text(encoding="utf-8")
    header = md.split("## Verdict")[0]
    assert "8 impossible patterns (structural zeros; see Settings)" in header
    # the release alone (no --model) says so too, from its manifest
    res = _audit_plan(data, str(tmp_path / "syn"), known=["SEX", "MAR"],
                      categorical=list(data.columns))
    s = res.plan.settings_frame().set_index("setting")
    assert s.loc["structural zeros", "value"] == "8 impossible patterns"
    assert s.loc["structural zeros", "source"].startswith("release manifest")
    # a release without structural zeros says nothing of them
    plain = _audit_plan(data, [data.assign(WKL=data["WKL"].sample(frac=1.0, random_state=1)
                                           .to_numpy())],
                        known=["SEX", "MAR"], categorical=list(data.columns),
                        synthesized=["WKL"])
    assert "structural zeros" not in set(plain.plan.settings_frame()["setting"])
