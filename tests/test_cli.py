"""The command-line shell: every sub-command is wired, documented and fails cleanly."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bayes_risk.cli import SUBCOMMANDS, build_parser, main


@pytest.mark.parametrize("cmd", SUBCOMMANDS)
def test_every_subcommand_has_help(cmd, capsys):
    with pytest.raises(SystemExit) as e:
        main([cmd, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: bayes-risk {cmd}")


def test_parser_lists_all_subcommands():
    text = build_parser().format_help()
    for cmd in SUBCOMMANDS:
        assert cmd in text


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "usage: bayes-risk" in capsys.readouterr().err


def test_python_dash_m_and_version():
    out = subprocess.run([sys.executable, "-m", "bayes_risk", "--version"], capture_output=True,
                         text=True, check=True, cwd="/")
    assert out.stdout.strip().startswith("bayes-risk 0.")


def test_user_error_is_one_line_without_traceback(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "bayes_risk", "utility", str(tmp_path / "missing.csv"),
         str(tmp_path / "syn.csv"), "--out", str(tmp_path / "o")],
        capture_output=True, text=True, cwd="/",
    )
    assert out.returncode == 2
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "missing.csv" in lines[0] and "Traceback" not in out.stderr
    assert not (tmp_path / "o").exists()
