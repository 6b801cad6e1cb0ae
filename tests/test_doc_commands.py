"""Every command block of the README and of the documentation runs as written; the Makefile
that the quick start names lists its targets and builds the documentation once.

What runs: the fenced ``bash``, ``sh``, ``shell`` and ``console`` blocks of ``README.md`` and of
every page under ``docs/`` (in a ``console`` block the ``$`` lines, with their continuation
lines; the other lines are output), and the README's ``python`` blocks. The docs' Python is in
``{code-cell}`` cells, which the docs build executes (``tests/test_docs.py``, which also refuses
any other fence in ``docs/``), so it is not run twice.

How: one bash session per page, its blocks in the order shown (files, the working folder and
shell variables carry over from one block to the next, as in a reader's terminal), with
``set -e`` and ``pipefail`` (every command must succeed), started in the root of an empty git
repository that holds the checkout's ``.gitignore`` (a clone, where a reader runs them) beside a
``shared`` folder linked to the project's (``../shared/data/...`` reads the project's data), with
the installed ``bayes-risk`` and ``python`` first on the PATH. Afterwards no file may be left
untracked in that repository: examples write into a folder ``.gitignore`` ignores
(``scratch/``), never into the root of a clone.

A block whose first line is ``# not run in CI: <reason>`` is shown but not run (the convention
is in docs/development.md, "Command blocks"). Such blocks are few (``MAX_NOT_RUN``): their
``make`` targets must exist and their ``bayes-risk`` commands must parse.

Cost (CPU seconds, numba's cache warm, measured 2026-11-27 at a load average of about 10 on two
cores): the README's blocks (1,000 CE-like records, m = 5: a CART release, three audits — two from
the command line, one from Python —, two identification runs, a utility run) 64 s; the PyMC page's
blocks (a fit, a synthesis and an audit whose attribute step refits the model twice) 30 s; the
audit guide's block (two audits of 400 records) 21 s; the other pages' blocks under 6 s each; the
Makefile test about 3 s (five builds of a one-page site). On an empty numba cache the blocks took
195 s (the PyMC page's then 78 s, before its example was shortened): the first command to call a
kernel compiles it, and `make install` empties the cache in effect (new file times).
"""

from __future__ import annotations

import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SHARED = ROOT.parent / "shared"

#: fence languages whose blocks are shell commands
SHELL_LANGUAGES = {"bash", "sh", "shell", "console", "shell-session"}
#: the visible mark of a block that is shown but not run (its first line, with a reason)
NOT_RUN = re.compile(r"^#\s*not run in CI:\s*(?P<reason>\S.*)$")
#: blocks marked not run, over the README and every page: few, and each with its reason
MAX_NOT_RUN = 3
#: seconds a page's blocks may run in all before the test stops them and names the block
PAGE_TIMEOUT = 600
#: folders of docs/ that the build writes (not sources)
GENERATED = {"_build", "generated", "jupyter_execute"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    info: str = ""  # what follows the language on the fence line

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def not_run_reason(self) -> str | None:
        first = next((ln.strip() for ln in self.text.splitlines() if ln.strip()), "")
        m = NOT_RUN.match(first)
        return m.group("reason") if m else None

    @property
    def runnable(self) -> bool:
        return self.language in SHELL_LANGUAGES or (
            self.language == "python" and self.page.name == "README.md"
            and self.page.parent == ROOT)

    def commands(self) -> str:
        """The block as bash runs it (a console block: its ``$`` lines)."""
        if self.language != "console":
            return self.text
        out, continued = [], False
        for line in self.text.splitlines():
            if continued or line.startswith("$ "):
                out.append(line[2:] if line.startswith("$ ") and not continued else line)
                continued = line.rstrip().endswith("\\")
        return "\n".join(out) + "\n"


def pages() -> list[Path]:
    """The README, every page of docs/ and the Markdown files the pages include."""
    found = [ROOT / "README.md"]
    if DOCS.is_dir():
        found += sorted(p for p in DOCS.rglob("*.md") if not GENERATED & set(p.parts))
    for page in list(found):
        for b in fenced_blocks(page):
            if b.language == "{include}":  # MyST: ```{include} ../benchmarks/README.md
                included = (page.parent / b.info).resolve()
                if included.suffix == ".md" and included not in found:
                    found.append(included)
    return [p for p in found if p.is_file()]


def fenced_blocks(page: Path) -> list[Block]:
    """Fenced blocks of a Markdown page (CommonMark fences, any indentation)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)(`{3,}|~{3,})\s*(.*)$", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
        body, j = [], i + 1
        while j < len(lines):
            close = re.match(r"^\s*(`{3,}|~{3,})\s*$", lines[j])
            if close and close.group(1)[0] == fence[0] and len(close.group(1)) >= len(fence):
                break
            # the fence's indentation is removed from its lines (at most that much: CommonMark)
            line = lines[j]
            body.append(line[min(indent, len(line) - len(line.lstrip())):])
            j += 1
        language, _, rest = info.partition(" ")
        blocks.append(Block(page, i + 1, language.lower(), "\n".join(body) + "\n",
                            rest.strip()))
        i = j + 1
    return blocks


#: the first word of a shell command shown in an indented block
COMMAND = re.compile(r"^\s*(\$ |bayes-risk\b|make\b|python\b|pip\b|cd\b|git\b|source\b)")


def indented_code(page: Path, commands_only: bool = False) -> list[int]:
    """Lines that open an indented code block (four spaces after a blank line, outside fences
    and lists): Markdown shows them as code that nothing here runs. ``commands_only``: only
    those whose first line is a shell command (a docs page may show a file's lines so)."""
    found, in_fence, prev, prev_text = [], None, "", ""
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        fence = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence and (in_fence is None or fence.group(1)[0] == in_fence):
            in_fence = None if in_fence else fence.group(1)[0]
        elif (in_fence is None and line.startswith("    ") and line.strip() and not prev.strip()
              and not re.match(r"^\s*([*+-]|\d+[.)])\s|^\s{2,}", prev_text)
              and (not commands_only or COMMAND.match(line))):
            found.append(n)
        prev = line
        if line.strip():
            prev_text = line
    return found


def run_blocks() -> dict[Path, list[Block]]:
    by_page: dict[Path, list[Block]] = {}
    for page in pages():
        blocks = [b for b in fenced_blocks(page) if b.runnable and b.not_run_reason is None]
        if blocks:
            by_page[page] = blocks
    return by_page


def _script(blocks: list[Block], marks: Path) -> str:
    """One bash script for a page: each block preceded by a mark with the time it started."""
    out = ["set -eo pipefail",
           f'__block() {{ printf "%s %s\\n" "$1" "$EPOCHREALTIME" >> {shlex.quote(str(marks))}; }}']
    for k, b in enumerate(blocks):
        out.append(f"__block {k}")
        if b.language == "python":
            end = "BAYES_RISK_DOC_BLOCK_END"
            assert end not in b.text
            out += [f"python - <<'{end}'", b.text.rstrip("\n"), end]
        else:
            out.append(b.commands().rstrip("\n"))
    out.append("__block end")
    return "\n".join(out) + "\n"


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                          check=True, timeout=60).stdout


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes of this one."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _tail(path: Path, n: int = 60) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-n:])


RUN = run_blocks()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("page", list(RUN), ids=lambda p: str(p.relative_to(ROOT)))
def test_command_blocks_run_as_written(page, tmp_path):
    blocks = RUN[page]
    if any("../shared" in b.text for b in blocks) and not SHARED.is_dir():
        pytest.skip("../shared is not present beside this checkout")
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED, target_is_directory=True)
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copy(ROOT / ".gitignore", clone / ".gitignore")
    _git(clone, "init", "-q")
    _git(clone, "add", ".gitignore")
    _git(clone, "-c", "user.name=test", "-c", "user.email=test@localhost", "commit", "-q",
         "-m", "a clone")
    marks, log = tmp_path / "marks.txt", tmp_path / "output.txt"
    script = tmp_path / "page.sh"
    script.write_text(_script(blocks, marks), encoding="utf-8")
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    t0, cpu0 = time.perf_counter(), _children_cpu()
    with log.open("w", encoding="utf-8") as fh:
        proc = subprocess.Popen(["bash", str(script)], cwd=clone, env=env, stdin=subprocess.DEVNULL,
                                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            returncode = proc.wait(timeout=PAGE_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # bash and every command it started
            proc.wait()
            returncode = None
    seconds, cpu = time.perf_counter() - t0, _children_cpu() - cpu0

    started = [ln.split() for ln in marks.read_text().splitlines()] if marks.is_file() else []
    times = [float(t) for _, t in started]
    # the cost, shown by `pytest -rP` (or -s)
    print(f"{page.relative_to(ROOT)}: {len(blocks)} blocks in {seconds:.1f} s "  # noqa: T201
          f"({cpu:.1f} s of CPU)")
    for (k, _), a, b in zip(started, times, times[1:], strict=False):
        print(f"  {blocks[int(k)].where}: {b - a:.1f} s")  # noqa: T201
    if returncode != 0:
        failed = blocks[int(started[-1][0])] if started and started[-1][0] != "end" else None
        what = (f"did not finish in {PAGE_TIMEOUT} s" if returncode is None
                else f"exited with status {returncode}")
        where = f"the block at {failed.where}" if failed else "the page's script"
        pytest.fail(f"{where} {what}:\n{failed.text if failed else ''}\n"
                    f"--- output (last lines) ---\n{_tail(log)}")
    if page.name == "README.md":
        _readme_remedy_claims(clone / "scratch")
    untracked = _git(clone, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert not untracked, (
        f"the blocks of {page.relative_to(ROOT)} left files that git would track in the root "
        "of a clone; write outputs into scratch/ (ignored by .gitignore):\n"
        + "\n".join(untracked[:20]))


def _readme_remedy_claims(scratch: Path) -> None:
    """The README's before-and-after sentence of the smoothing remedy, against the audits its
    blocks just wrote: each figure it prints is the run's (to the digits it prints; the flagged
    count within 2 % of the records, as Monte Carlo errors near the cut-off may move)."""
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    got = re.search(r"repU falls from ([\d.]+) % to ([\d.]+) %.*?flags (\d+) of the ([\d,]+) "
                    r"records.*?share ranked first, ([\d.]+) % of the (\d+) records assessed, "
                    r"would be ([\d.]+) % with the flagged records counted at worst", text)
    assert got, "the README's sentence on the smoothing remedy was not found"
    before, after, flagged, n, top, assessed, worst = got.groups()

    def line(audit: str, start: str) -> dict:
        summary = json.loads((scratch / audit / "summary.json").read_text())
        return next(v for v in summary["verdicts"] if v["measure"].startswith(start))

    assert f"{line('ce_audit', 'repU')['value']:.2g}" == before
    assert f"{line('ce_audit_smooth', 'repU')['value']:.1g}" == after
    att = json.loads((scratch / "ce_audit_smooth" / "attribute" / "summary.json").read_text())
    total = int(n.replace(",", ""))
    assert att["n_records"] == total
    assert abs(att["n_flagged"] - int(flagged)) <= 0.02 * total
    share = line("ce_audit_smooth", "share ranked first")
    assert share["status"] == "caution" and abs(share["value"] - float(top)) <= 1.0
    assert abs(att["n_records"] - att["n_flagged"] - int(assessed)) <= 0.02 * total
    from bayes_risk.auditing.verdict_base import counted_at_risk

    bound = counted_at_risk(share["value"], total - att["n_flagged"], att["n_flagged"],
                            att["flagged_at_worst"]["prop_top"])
    assert abs(bound - float(worst)) <= 2.0


def _makefile_targets() -> list[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return re.findall(r"^([a-z][a-z-]*):(?!=)", text, re.M)


def test_command_blocks_are_run_or_marked():
    readme = ROOT / "README.md"
    blocks = {p: fenced_blocks(p) for p in pages()}
    # the README shows commands only in blocks that run (or say why not), never in a fence of
    # another language or an indented block that nothing checks
    stray = [f"{b.where}: ```{b.language}" for b in blocks[readme]
             if not b.runnable and b.language != "text"]
    stray += [f"{p.relative_to(ROOT)}:{n}: indented code block (use a fenced bash block)"
              for p in blocks for n in indented_code(p, commands_only=p != readme)]
    assert not stray, "blocks that no test runs:\n" + "\n".join(stray)
    assert sum(b.runnable and b.not_run_reason is None for b in blocks[readme]) >= 4, (
        "the README's command blocks were not found")

    marked = [b for bs in blocks.values() for b in bs if b.runnable and b.not_run_reason]
    assert len(marked) <= MAX_NOT_RUN, (
        f"{len(marked)} blocks are marked 'not run in CI' (at most {MAX_NOT_RUN}): show a cheap "
        "variant that runs instead\n" + "\n".join(b.where for b in marked))
    from bayes_risk.cli import build_parser

    targets = set(_makefile_targets())
    for b in marked:
        assert len(b.not_run_reason.split()) >= 3, f"{b.where}: say why the block is not run"
        for cmd in b.commands().replace("\\\n", " ").splitlines():
            words = shlex.split(cmd, comments=True)
            if words[:1] == ["make"]:
                named = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
                assert set(named) <= targets, f"{b.where}: no Makefile target {named}"
            elif words[:1] == ["bayes-risk"]:
                try:
                    build_parser().parse_args(words[1:])
                except SystemExit:
                    pytest.fail(f"{b.where}: `{cmd.strip()}` does not parse")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_help_lists_every_target():
    out = subprocess.run(["make", "--no-print-directory", "help"], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=60).stdout
    listed = {}
    for line in out.splitlines():
        m = re.match(r"^make (\S+)\s+(\S.*)$", line)
        assert m, f"`make help` line without a description: {line!r}"
        listed[m.group(1)] = m.group(2)
    assert sorted(listed) == sorted(_makefile_targets())
    assert "source .venv/bin/activate" in listed["install"]
    assert "min" in listed["docs"]  # its cost


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_docs_builds_once_and_names_the_page(tmp_path):
    # the Makefile's docs target on a one-page site, with a stand-in .venv whose python does
    # nothing (`make install` reinstalls the package) and whose sphinx-build records its
    # arguments and runs the real one
    sphinx = Path(sys.executable).parent / "sphinx-build"
    if not sphinx.is_file():
        pytest.skip("the docs extra is not installed: pip install '.[docs]'")
    proj = tmp_path / "proj"
    for d in ("docs", "bayes_risk", "models", "examples", "benchmarks"):
        (proj / d).mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", proj / "Makefile")
    (proj / "pyproject.toml").write_text("")
    (proj / "benchmarks" / "README.md").write_text("")
    (proj / "bayes_risk" / "core.py").write_text("")
    (proj / "docs" / "conf.py").write_text('project = "tiny"\nextensions = ["myst_parser"]\n')
    page = proj / "docs" / "index.md"
    page.write_text("# Tiny\n\nOne page.\n")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    calls = tmp_path / "calls.txt"
    (venv / "bin" / "python").write_text("#!/bin/sh\nexit 0\n")
    (venv / "bin" / "sphinx-build").write_text(
        f'#!/bin/sh\necho "$*" >> {shlex.quote(str(calls))}\n'
        f'exec {shlex.quote(str(sphinx))} "$@"\n')
    for f in ("python", "sphinx-build"):
        (venv / "bin" / f).chmod(0o755)
    (venv / ".deps-stamp").touch()

    def make_docs(check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["make", "--no-print-directory", "docs", f"VENV={venv}"], cwd=proj,
                              capture_output=True, text=True, check=check, timeout=300)

    def builds() -> list[str]:
        return calls.read_text().splitlines() if calls.is_file() else []

    def newer(path: Path) -> None:  # a source edited after the last build
        stamp = (proj / "docs" / "_build" / "html" / ".built").stat().st_mtime
        os.utime(path, (stamp + 10, stamp + 10))

    first = make_docs()
    index = proj / "docs" / "_build" / "html" / "index.html"
    assert index.is_file() and "One page." in index.read_text(encoding="utf-8")
    assert f"file://{proj}/docs/_build/html/index.html" in first.stdout
    assert len(builds()) == 1 and {"-E", "-W", "-n"} <= set(builds()[0].split())
    make_docs()  # nothing changed: no build
    assert len(builds()) == 1
    newer(page)  # a page: Sphinx's incremental build re-reads it
    make_docs()
    assert len(builds()) == 2 and "-E" not in builds()[1].split()
    newer(proj / "bayes_risk" / "core.py")  # the package: every page again
    make_docs()
    assert len(builds()) == 3 and "-E" in builds()[2].split()
    # a removed site is built again (the stamp was inside it)
    shutil.rmtree(proj / "docs" / "_build" / "html")
    make_docs()
    assert len(builds()) == 4 and index.is_file()
    # a failed build leaves no stamp, so the next `make docs` builds again
    page.write_text("# Tiny\n\n{doc}`missing`\n")
    newer(page)
    assert make_docs(check=False).returncode != 0
    assert not (proj / "docs" / "_build" / "html" / ".built").exists()


def test_readme_links_resolve():
    # the front page's links into the guide name files of the checkout (the built site's page
    # exists once `make docs` has run); anchors name a heading of the page, as GitHub and
    # MyST (myst_heading_anchors) make them
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target == "docs/_build/html/index.html":
            continue
        path, _, anchor = target.partition("#")
        page = ROOT / path
        if not page.exists():
            broken.append(target)
        elif anchor:
            headings = re.findall(r"^#+\s+(.+)$", page.read_text(encoding="utf-8"), re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                     for h in headings}
            if anchor not in slugs:
                broken.append(target)
    assert not broken, f"README links to nothing: {broken}"


def test_blocks_are_found_as_a_reader_sees_them(tmp_path):
    # what a page added later may hold: a console block with output lines and a continued
    # command, a block inside a list item, a longer fence around a shorter one, a marked block
    page = tmp_path / "page.md"
    page.write_text(
        "Text.\n\n"
        "```console\n$ bayes-risk --version \\\n    --help\nbayes-risk 0.1\n$ ls\nout/\n```\n\n"
        "* a step:\n\n  ```bash\n  mkdir -p scratch\n    cd scratch\n  ```\n\n"
        "````bash\necho '```'\n````\n\n"
        "```bash\n# not run in CI: it needs the clone's Makefile\nmake demo\n```\n\n"
        "```{code-cell} ipython3\n!ls\n```\n\n"
        "    bayes-risk demo\n",
        encoding="utf-8")
    blocks = fenced_blocks(page)
    assert [(b.line, b.language) for b in blocks] == [
        (3, "console"), (13, "bash"), (18, "bash"), (22, "bash"), (27, "{code-cell}")]
    assert blocks[0].commands() == "bayes-risk --version \\\n    --help\nls\n"
    assert blocks[1].text == "mkdir -p scratch\n  cd scratch\n"
    assert blocks[2].text == "echo '```'\n"
    assert [b.not_run_reason for b in blocks] == [
        None, None, None, "it needs the clone's Makefile", None]
    assert [b.runnable for b in blocks] == [True, True, True, True, False]
    assert indented_code(page, commands_only=True) == [31]
