"""The main job: `bayes-risk demo` end to end — `bayes-risk audit` on the demo data."""

from __future__ import annotations

import json

import pytest

from bayes_risk.cli import main
from bayes_risk.results._format import format_number


def test_format_number():
    assert format_number(0.000123456) == "1.235e-04"
    assert format_number(12345) == "12,345"
    assert format_number(float("nan")) == "nan"
    assert format_number(None) == "—"


@pytest.mark.slow
def test_demo_end_to_end(tmp_path, capsys):
    out = tmp_path / "demo"
    status = main([
        "demo", "--out", str(out), "-m", "2", "--n-ce", "300", "--n-acs", "300",
        "--components", "8", "--tune", "60", "--draws", "120", "--chains", "1", "--quiet",
    ])
    assert status == 0
    # the summary on stdout (also with --quiet) is the reports' final paths, never the temporary
    # folder that became --out
    cap = capsys.readouterr()
    reports = [str(out / "ce/audit/report.html"), str(out / "acs/audit/report.html")]
    assert cap.out.split() == reports
    assert ".tmp-" not in cap.out + cap.err
    # the demo makes the releases, then each is audited by `bayes-risk audit` (one report writer)
    for f in [
        "ce/synthetic/manifest.json", "ce/audit/report.html", "ce/audit/report.md",
        "ce/audit/summary.json", "ce/audit/utility/summary.json",
        "ce/audit/identification/records.csv", "ce/audit/identification/radius_search.csv",
        "ce/audit/attribute/records.csv", "ce/audit/disclosure/attrib.csv",
        "acs/model/model.json", "acs/model/posterior.nc", "acs/synthetic/manifest.json",
        "acs/audit/report.html", "acs/audit/attribute/records.csv",
        "acs/audit/attribute/summary.json", "acs/audit/identification/summary.json",
        "acs/audit/utility/summary.json", "acs/audit/disclosure/EDUC/attrib.csv",
    ]:
        assert (out / f).is_file(), f
    ce = json.loads((out / "ce/audit/summary.json").read_text())
    assert ce["command"] == "audit"
    st = {s["name"]: s["status"] for s in ce["steps"]}
    assert st["attribute"] == "ran"  # CART plug-in from the release manifest
    a = json.loads((out / "acs/audit/attribute/summary.json").read_text())
    assert a["n_records"] == 300
    report = (out / "acs/audit/report.html").read_text()
    assert "Attribute risk" in report and "Warnings of every step" in report
    # the utility table's last row says what it is (its overlap is the combined intervals')
    assert "combined over the 2 datasets with the combining rules" in report
    # every warning of every step reaches the report and the demo's own summary.json; with 120
    # draws the DPMPM's convergence checks fail, so there is at least that one
    top = json.loads((out / "summary.json").read_text())
    a_codes = {w["code"] for w in a["run_warnings"]}
    assert {"LOW_ESS"} <= a_codes
    assert a_codes <= set(top["warnings"])
    assert top["reports"] == ["ce/audit/report.html", "acs/audit/report.html"]
    for w in json.loads((out / "acs/audit/summary.json").read_text())["step_warnings"]:
        assert f"<code>{w['code']}</code>" in report
    # the steps' recorded inputs name the files where they are now, not the temporary folder
    recorded = sorted(out.rglob("summary.json")) + sorted(out.rglob("manifest.json"))
    assert len(recorded) >= 8
    for f in recorded:
        assert ".tmp-" not in f.read_text(), f
    assert json.loads((out / "acs/audit/summary.json").read_text())["inputs"]["model"] == str(
        out / "acs/model"
    )


@pytest.mark.slow
def test_demo_steps_print_the_final_folder(tmp_path, capsys):
    """Without --quiet each step prints its command line and summary (on stderr): the paths
    they name are those of the final --out, which exist once the demo ends."""
    out = tmp_path / "demo"
    status = main(["demo", "--out", str(out), "--part", "ce", "-m", "2", "--n-ce", "100"])
    assert status == 0
    err = capsys.readouterr().err
    assert ".tmp-" not in err
    audit_line = next(ln for ln in err.splitlines() if ln.startswith("[demo] CE: audit:"))
    assert f"--out {out / 'ce/audit'}" in audit_line
    assert f"report: {out / 'ce/audit/report.html'}" in err
    assert (out / "ce/audit/report.html").is_file()


def test_shown_maps_only_a_registered_temporary_folder(tmp_path, monkeypatch):
    from bayes_risk.cli import _run

    tmp, final = str(tmp_path / ".out.tmp-abc123"), str(tmp_path / "out")
    monkeypatch.setattr(_run, "_FINAL_NAMES", {tmp: final})
    assert _run.shown(f"{tmp}/ce/audit") == f"{final}/ce/audit"
    assert _run.shown(f"wrote {tmp}/a and {tmp}/b") == f"wrote {final}/a and {final}/b"
    assert _run.shown(str(tmp_path / "elsewhere")) == str(tmp_path / "elsewhere")
    monkeypatch.setattr(_run, "_FINAL_NAMES", {})
    assert _run.shown(f"{tmp}/ce") == f"{tmp}/ce"


def test_demo_rejects_bad_m(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "d"), "-m", "0", "--quiet"]) == 2
    assert "-m must be an integer >= 1" in capsys.readouterr().err


def test_demo_fits_the_dpmpm_with_300_kept_draws_unless_asked(tmp_path, monkeypatch):
    """The demo's DPMPM fit (and so the audit's augmented fits) is the model's default run with
    300 kept draws instead of 500 (every 5th sweep, extended while its checks fail); options
    given are passed on to ``bayes-risk fit``, and ``--draws`` given is run as asked."""
    import pathlib

    import bayes_risk.cli.demo as demo

    calls: list[list[str]] = []

    def fake_call(argv, quiet):
        calls.append(argv)
        if argv[0] == "audit":
            out = argv[argv.index("--out") + 1]
            pathlib.Path(out).mkdir(parents=True, exist_ok=True)
            (pathlib.Path(out) / "summary.json").write_text('{"step_warnings": []}')

    def option(argv, name):
        return argv[argv.index(name) + 1] if name in argv else None

    monkeypatch.setattr(demo, "_call", fake_call)
    base = ["demo", "--part", "acs", "--n-acs", "50", "-m", "1", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 0
    fit = next(a for a in calls if a[0] == "fit")
    assert not {"--components", "--tune", "--chains"} & set(fit)
    assert [option(fit, o) for o in ("--draws", "--thin", "--max-sweeps")] == [
        "300", "5", "50000"]
    calls.clear()
    assert main([*base, "--chains", "3", "--tune", "7", "--out", str(tmp_path / "b")]) == 0
    fit = next(a for a in calls if a[0] == "fit")
    assert option(fit, "--chains") == "3" and option(fit, "--tune") == "7"
    assert "--components" not in fit and option(fit, "--draws") == "300"
    calls.clear()
    assert main([*base, "--draws", "40", "--out", str(tmp_path / "c")]) == 0
    fit = next(a for a in calls if a[0] == "fit")
    assert option(fit, "--draws") == "40" and fit.count("--draws") == 1
    assert "--thin" not in fit and "--max-sweeps" not in fit


@pytest.mark.parametrize("option,value", [("--chains", "0"), ("--draws", "-1"),
                                          ("--components", "0"), ("--tune", "-5")])
def test_demo_rejects_bad_mcmc_options_before_any_step(tmp_path, capsys, option, value):
    """A bad DPMPM option is named in a one-line error (exit 2) before anything is written."""
    out = tmp_path / "d"
    assert main(["demo", "--part", "acs", "--n-acs", "50", "-m", "1", option, value,
                 "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{option} must be an integer >=" in err and f"Got {value}" in err
    assert ".tmp-" not in err and "Traceback" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []
