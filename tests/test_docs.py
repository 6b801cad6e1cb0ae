"""The documentation: every page builds, every example runs, every reference resolves.

* ``test_docs_code_blocks_are_executed`` (fast): every fenced block in ``docs/`` is an executed
  notebook cell, a Sphinx directive or a shell block (which ``tests/test_doc_commands.py`` runs)
  — no code block that nothing runs.
* ``test_docs_build`` (slow): ``sphinx-build -W -n`` (warnings and unresolved references are
  errors) on a copy of ``docs/``, as a clone without the project's shared/ folder builds it:
  every example page executed but the gallery pages on the shared data (``SHARED_PAGES`` of
  docs/conf.py: ``tests/test_examples.py`` runs their cells where the folder is present); the
  built pages hold the executed outputs, the plots and the generated command-line reference.

The ``>>>`` examples of the installed package's docstrings, which the API pages show, are run by
``tests/test_doctests.py`` (one test per module).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _shared import shared_pages as shared_pages_of_conf

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# what `pip install ".[docs]"` provides (module names)
DOCS_MODULES = (
    "sphinx", "myst_nb", "numpydoc", "pydata_sphinx_theme", "sphinx_design", "ipykernel",
    "sphinx-mathjax-offline",
)

# fenced blocks allowed in the Markdown pages: executed cells and directives, and shell blocks
# (run by tests/test_doc_commands.py, in the order shown)
ALLOWED_FENCES = {
    "{code-cell}",
    "{toctree}",
    "{eval-rst}",
    "{bayes-risk-cli}",
    "{include}",
    "bash", "sh", "shell", "console", "shell-session",
}

needs_docs_tree = pytest.mark.skipif(not DOCS.is_dir(), reason="docs/ is not part of this checkout")


def _missing_docs_modules() -> list[str]:
    return [m for m in DOCS_MODULES if importlib.util.find_spec(m) is None]


@needs_docs_tree
def test_docs_code_blocks_are_executed():
    offenders = []
    for page in sorted(DOCS.rglob("*.md")):
        if "_build" in page.parts:
            continue
        for lineno, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            m = re.match(r"^\s*(```+|~~~+)\s*(\S*)", line)
            if not m or not m.group(2):
                continue  # a closing fence
            kind = m.group(2).split()[0]
            if kind not in ALLOWED_FENCES:
                offenders.append(f"{page.relative_to(ROOT)}:{lineno}: {kind}")
    assert not offenders, (
        "code blocks that nothing runs (use a {code-cell}, or a bash block for commands):\n"
        + "\n".join(offenders)
    )



@needs_docs_tree
@pytest.mark.skipif(not (ROOT / "examples").is_dir(),
                    reason="examples/ is not part of this checkout")
def test_every_example_script_is_on_the_examples_page():
    # "Reproducing the papers" tabulates every script of examples/ (the test suite runs them all)
    page = (DOCS / "examples.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([\w.]+\.py)` \|", page, re.M))
    scripts = {p.name for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_")}
    assert scripts <= listed, f"not on docs/examples.md: {sorted(scripts - listed)}"

@needs_docs_tree
def test_gallery_has_a_page_for_every_paper_script():
    # the reproduction gallery lists every page of docs/gallery/, and every paper script of
    # examples/ (the ones that reproduce a paper: not the audit walkthrough) is run by a page
    gallery = DOCS / "gallery"
    index = (gallery / "index.md").read_text(encoding="utf-8")
    toctree = re.search(r"```\{toctree\}\n(.*?)```", index, re.S).group(1)
    listed = {line.strip() for line in toctree.splitlines()
              if line.strip() and not line.startswith(":")}
    pages = {p.stem for p in gallery.glob("*.md") if p.stem != "index"}
    assert pages == listed, f"gallery pages and index differ: {sorted(pages ^ listed)}"
    assert "not written yet" not in index
    run = " ".join(p.read_text(encoding="utf-8") for p in gallery.glob("*.md"))
    papers = {"caiola_reiter_rf.py", "drechsler_reiter_cps.py", "hu_reiter_wang_attribute.py",
              "weaker_intruders.py"}
    missing = [s for s in sorted(papers) if s not in run]
    assert not missing, f"paper scripts no gallery page runs: {missing}"


@needs_docs_tree
@pytest.mark.skipif(not (ROOT / "examples").is_dir(),
                    reason="examples/ is not part of this checkout")
def test_gallery_pages_running_scripts_on_shared_data_are_shared_pages():
    """A gallery page that runs a script of examples/ reading the project's shared/ folder is
    one of docs/conf.py's ``SHARED_PAGES`` with the files the script reads: a clone has no such
    folder, and ``make docs`` there failed on the Hu (2019) page (its script stopped, the cell
    raised), which the suite's build never executes (a test runs its cells)."""
    shared = shared_pages_of_conf()
    missing = []
    for page in sorted((DOCS / "gallery").glob("*.md")):
        name = f"gallery/{page.stem}"
        for script in sorted(set(re.findall(r"[\"'](\w+\.py)[\"']", page.read_text("utf-8")))):
            path = ROOT / "examples" / script
            if not path.is_file():
                continue
            for args in re.findall(r"shared_file\(([^)]*)\)", path.read_text("utf-8")):
                f = "/".join(ast.literal_eval(f"({args},)"))
                if f not in shared.get(name, []):
                    missing.append(f"{name} runs {script}, which reads shared/{f}")
    assert not missing, "not in SHARED_PAGES of docs/conf.py:\n" + "\n".join(missing)


@needs_docs_tree
def test_mathjax_is_served_from_the_site():
    # offline (where agencies read the docs) a CDN script leaves the formulas as raw TeX: the
    # pages load MathJax from the built site's _static/ folder
    if importlib.util.find_spec("sphinx-mathjax-offline") is None:
        pytest.skip("the docs extra is not installed: pip install '.[docs]'")
    code = ("import json, runpy; c = runpy.run_path('conf.py'); "
            "print(json.dumps([c['mathjax_path'], c['html_static_path'], c['extensions']]))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=DOCS, capture_output=True,
                          text=True, check=True, timeout=120)
    path, static, extensions = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "sphinx.ext.mathjax" in extensions
    assert not re.match(r"(https?:)?//", path), f"mathjax_path {path!r} is not a local file"
    found = [Path(s) / path for s in static if (Path(s) / path).is_file()]
    assert found, f"{path} is in none of html_static_path {static}"
    root = found[0].parent
    # what tex-chtml.js loads at run time: the CommonHTML fonts and the TeX extensions
    assert (root / "output" / "chtml" / "fonts" / "woff-v2" / "MathJax_Main-Regular.woff").is_file()
    assert (root / "input" / "tex" / "extensions" / "ams.js").is_file()


@needs_docs_tree
def test_top_level_pages_have_no_section_sidebar():
    """A top-level page has no sub-pages: the theme's "Section Navigation" sidebar would be
    empty there (issue 66: the glossary's and getting started's were), so none is shown."""
    if importlib.util.find_spec("sphinx-mathjax-offline") is None:
        pytest.skip("the docs extra is not installed: pip install '.[docs]'")
    code = ("import json, runpy; c = runpy.run_path('conf.py'); "
            "print(json.dumps(c['html_sidebars']))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=DOCS, capture_output=True,
                          text=True, check=True, timeout=120)
    sidebars = json.loads(proc.stdout.strip().splitlines()[-1])
    pages = sorted(p.stem for p in DOCS.glob("*.md"))
    assert {"getting_started", "glossary", "adding_a_model", "cli"} <= set(pages)
    assert {p: sidebars.get(p) for p in pages} == dict.fromkeys(pages, [])


@needs_docs_tree
def test_executed_pages_keep_freed_memory():
    # the notebook kernels inherit the build's environment: conf.py asks glibc to keep freed
    # memory (the examples' large temporary arrays are not faulted in again), unless the
    # caller set the variables itself
    code = ("import json, os, runpy; os.environ['MALLOC_TOP_PAD_'] = '1048576'; "
            "runpy.run_path('conf.py'); "
            "print(json.dumps({k: os.environ.get(k) for k in ('MALLOC_MMAP_THRESHOLD_', "
            "'MALLOC_TRIM_THRESHOLD_', 'MALLOC_TOP_PAD_')}))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=DOCS, capture_output=True,
                          text=True, env=env, timeout=120)
    if proc.returncode and "sphinx-mathjax-offline" in proc.stderr:
        pytest.skip("the docs extra is not installed: pip install '.[docs]'")
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
                   "MALLOC_TRIM_THRESHOLD_": str(4 * 2**30), "MALLOC_TOP_PAD_": "1048576"}


@needs_docs_tree
def test_landing_page_has_an_audit_entry():
    page = (DOCS / "index.md").read_text(encoding="utf-8")
    card = re.search(r":::\{grid-item-card\} Audit your own release\n:link: (\S+)\n", page)
    assert card, "docs/index.md has no 'Audit your own release' card"
    assert card.group(1) == "user_guide/audit" and (DOCS / "user_guide" / "audit.md").is_file()


def _table_cells(row: str) -> int:
    """Cell separators of a Markdown table row: `|` outside code spans, not escaped."""
    count, i = 0, 0
    while i < len(row):
        if row[i] == "\\":
            i += 2
            continue
        if row[i] == "`":
            ticks = re.match(r"`+", row[i:]).group()
            end = row.find(ticks, i + len(ticks))
            i = end + len(ticks) if end != -1 else i + len(ticks)
            continue
        count += row[i] == "|"
        i += 1
    return count


@needs_docs_tree
def test_markdown_tables_have_one_width():
    # a row with fewer cells than its header renders with its figures under the wrong columns,
    # silently (MyST pads it); an update of one table once cut four rows of another
    offenders = []
    for page in [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines[:-1]):
            if not (line.startswith("|") and re.match(r"\|\s*:?-{3,}", lines[i + 1])):
                continue
            width = _table_cells(line)
            for j in range(i, len(lines)):
                if not lines[j].startswith("|"):
                    break
                if (cells := _table_cells(lines[j])) != width:
                    offenders.append(f"{page.relative_to(ROOT)}:{j + 1}: {cells - 1} cells, "
                                     f"the header has {width - 1}")
    assert not offenders, "\n".join(offenders)


@needs_docs_tree
def test_docs_examples_use_current_call_forms():
    # schema is keyword-only in fit(): a positional one is a TypeError in the built page
    offenders = []
    for page in [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]:
        if "_build" in page.parts or not page.is_file():
            continue
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"```(?:\{code-cell\} ipython3|python)\n(.*?)```", text, re.S):
            block = re.sub(r"\A(?::[\w-]+:.*\n)+", "", block)  # the cell's options (:tags:)
            src = "\n".join(ln for ln in block.splitlines()
                            if not ln.lstrip().startswith(("!", "%")))  # shell/magic lines
            for node in ast.walk(ast.parse(src)):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in ("fit", "fit_augmented") and len(node.args) > 1):
                    offenders.append(f"{page.relative_to(ROOT)}: {ast.unparse(node)[:80]}")
    assert not offenders, "fit() with positional schema (TypeError):\n" + "\n".join(offenders)


@needs_docs_tree
def test_eval_rst_blocks_hold_only_reference_directives():
    # {eval-rst} is for autosummary tables of the API pages, never for code examples
    for page in sorted(DOCS.rglob("*.md")):
        if "_build" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"```\{eval-rst\}\n(.*?)```", text, re.S):
            for line in block.splitlines():
                if line.strip().startswith(".. ") and not line.strip().startswith("..  "):
                    directive = line.strip().split("::")[0]
                    assert directive in (".. autosummary", ".. currentmodule"), (
                        f"{page.relative_to(ROOT)}: unexpected {directive!r} in an eval-rst block"
                    )


@needs_docs_tree
def test_numpydoc_template_compiled_once_same_text(monkeypatch):
    # the docs extension keeps numpydoc's compiled docstring template (numpydoc compiles it
    # for every docstring); every rendered docstring is the same text as numpydoc's own
    if importlib.util.find_spec("numpydoc") is None:
        pytest.skip("the docs extra is not installed: pip install '.[docs]'")
    import jinja2.sandbox
    from numpydoc import docscrape_sphinx as ds
    from numpydoc import numpydoc as nd

    import bayes_risk
    from bayes_risk.models import CARTSynthesizer

    spec = importlib.util.spec_from_file_location("_br_docs_ext",
                                                  DOCS / "_ext" / "bayes_risk_docs.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    monkeypatch.setattr(nd, "get_doc_object", ds.get_doc_object)
    objects = [(bayes_risk.attribute_risk, "function"), (bayes_risk.identification_risk,
                                                         "function"),
               (CARTSynthesizer, "class"), (CARTSynthesizer.fit, "method")]
    config = {"show_class_members": False}
    expected = [str(ds.get_doc_object(o, what, config=dict(config))) for o, what in objects]
    ext._numpydoc_one_template()
    assert nd.get_doc_object is not ds.get_doc_object
    made = []
    real = jinja2.sandbox.SandboxedEnvironment

    class Counting(real):
        def __init__(self, *a, **kw):
            made.append(1)
            super().__init__(*a, **kw)

    monkeypatch.setattr(ds, "SandboxedEnvironment", Counting)
    for _ in range(3):
        got = [str(nd.get_doc_object(o, what, config=dict(config))) for o, what in objects]
        assert got == expected
    assert len(made) == 1


#: seconds the whole build may take: a bound on a hung kernel, far above a normal build
DOCS_BUILD_TIMEOUT = 1500


def _kill_tree(proc: subprocess.Popen) -> None:
    """Kill sphinx-build, its parallel readers and the notebook kernels they started."""
    try:
        import psutil

        procs = psutil.Process(proc.pid).children(recursive=True)
    except Exception:  # noqa: BLE001 - psutil missing or the process already gone
        procs = []
    for p in procs:
        try:
            p.kill()
        except Exception:  # noqa: BLE001, S110 - it ended by itself meanwhile
            pass
    proc.kill()
    proc.wait()


def _trace_report(trace: Path) -> str:
    """The pages started but never read to the end, and the slowest pages, from the trace."""
    if not trace.is_file():
        return "no page was started"
    start, done = {}, {}
    for line in trace.read_text(encoding="utf-8").splitlines():
        event, doc, t, *rest = line.split()
        cpu = next((float(f[4:]) for f in rest if f.startswith("cpu=")), float("nan"))
        (start if event == "start" else done)[doc] = (float(t), cpu)
    unfinished = sorted(d for d in start if d not in done)
    slowest = sorted(((done[d][0] - start[d][0], done[d][1] - start[d][1], d)
                      for d in done if d in start), reverse=True)[:8]
    return ("pages still being read (their notebooks executing): "
            f"{', '.join(unfinished) or 'none'}; slowest pages (wall, CPU incl. kernel): "
            + ", ".join(f"{d} {t:.0f} s ({c:.0f} s CPU)" for t, c, d in slowest))


def _tail(log: Path, n: int = 120) -> str:
    lines = [ln for ln in log.read_text(encoding="utf-8", errors="replace").splitlines()
             if "Kernel is running over TCP" not in ln]
    return "\n".join(lines[-n:])


#: what the build prints when two notebook kernels were given the same port
KERNEL_PORT_RACE = re.compile(r"Address already in use|Kernel died before replying to kernel_info")


@pytest.mark.slow
@needs_docs_tree
def test_docs_build(tmp_path):
    missing = _missing_docs_modules()
    if missing:
        pytest.skip(f"the docs extra is not installed (missing {missing}): pip install '.[docs]'")
    # Build a copy, so that the checkout is not touched (autosummary writes its stubs into the
    # source folder) and the installed package, not the source tree, is documented.
    src = tmp_path / "src"
    shutil.copytree(DOCS, src / "docs", ignore=shutil.ignore_patterns("_build", "generated"))
    (src / "benchmarks").mkdir()
    shutil.copy(ROOT / "benchmarks" / "README.md", src / "benchmarks" / "README.md")
    # "Adding a model" includes and runs the example model, and the reproduction gallery runs
    # the paper scripts (conf.py: BAYES_RISK_EXAMPLES)
    shutil.copytree(ROOT / "examples", src / "examples",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    out = tmp_path / "html"
    env = dict(os.environ)
    # built as a user's clone builds it: without the project's shared/ folder (issue 92), so
    # that every page that reads it falls back to the embedded data or is noted as not run;
    # tests/test_examples.py runs the cells of the pages that need the folder where it is present
    env["BAYES_RISK_SHARED_DATA"] = str(tmp_path / "no-shared" / "data")
    # every page's start and end of reading (its notebook's execution) goes to a trace file, so
    # that a build that fails or overruns names the pages it was still executing
    trace = tmp_path / "trace.txt"
    env["BAYES_RISK_DOCS_TRACE"] = str(trace)
    # a cell that does not return fails its page (and names it) long before the build's limit
    env.setdefault("BAYES_RISK_DOCS_CELL_TIMEOUT", "300")
    cmd = [
        sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-j", "2",
        "-b", "html", "-d", str(tmp_path / "doctrees"), str(src / "docs"), str(out),
    ]
    log = tmp_path / "sphinx.log"
    for attempt in (1, 2):
        with log.open("w", encoding="utf-8") as fh:
            proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=fh,
                                    stderr=subprocess.STDOUT, text=True)
            try:
                returncode = proc.wait(timeout=DOCS_BUILD_TIMEOUT)
            except subprocess.TimeoutExpired:
                _kill_tree(proc)
                pytest.fail(f"sphinx-build did not finish in {DOCS_BUILD_TIMEOUT} s; "
                            f"{_trace_report(trace)}\n{_tail(log)}")
        # two notebook kernels started at once by the parallel readers can be given the same
        # TCP port by jupyter_client (it binds a free port, releases it, and the kernel binds it
        # later): a race outside the pages, built once more; any other failure fails at once
        if returncode == 0 or attempt == 2 or not KERNEL_PORT_RACE.search(
                log.read_text(encoding="utf-8", errors="replace")):
            break
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(tmp_path / "doctrees", ignore_errors=True)
    assert returncode == 0, f"sphinx-build failed; {_trace_report(trace)}\n{_tail(log)}"

    # the executed examples left their outputs and figures in the pages
    guide = (out / "user_guide" / "synthesizers.html").read_text(encoding="utf-8")
    assert "cell_output" in guide and "<img" in guide
    attr = (out / "user_guide" / "attribute.html").read_text(encoding="utf-8")
    assert "<img" in attr and "p_true" in attr
    # the command-line reference lists every sub-command of the parser it was generated from
    from bayes_risk.cli import SUBCOMMANDS

    cli = (out / "cli.html").read_text(encoding="utf-8")
    for name in SUBCOMMANDS:
        assert f'id="cli-{name}"' in cli, f"sub-command {name!r} missing from the CLI reference"
    # one API page per public name of the data-flow stages
    assert (out / "api" / "generated" / "bayes_risk.attribute.attribute_risk.html").is_file()
    # no page loads a script from the network (offline, MathJax comes from _static/)
    remote = []
    for page in out.rglob("*.html"):
        for src in re.findall(r"<script[^>]*\ssrc=[\"']([^\"']+)", page.read_text("utf-8")):
            if re.match(r"(https?:)?//", src):
                remote.append(f"{page.relative_to(out)}: {src}")
    assert not remote, "scripts loaded from the network:\n" + "\n".join(sorted(remote)[:10])
    assert (out / "_static" / "mathjax" / "tex-chtml.js").is_file()
    methods = (out / "methods" / "attribute.html").read_text(encoding="utf-8")
    assert "_static/mathjax/tex-chtml.js" in methods
    # every page of the reproduction gallery was executed and kept its outputs, but those that
    # need the shared data: they say why they were not run and show their glued values' keys
    shared_pages = shared_pages_of_conf()
    for page in sorted((out / "gallery").glob("*.html")):
        html = page.read_text(encoding="utf-8")
        if f"gallery/{page.stem}" in shared_pages:
            assert "cell_output" not in html, f"{page.name} was executed"
            assert "this build of the documentation did not have" in html, page.name
            keys = set(re.findall(r"\{glue:text\}`([\w]+)", (DOCS / "gallery" / f"{page.stem}.md")
                                  .read_text(encoding="utf-8")))
            assert all(f"&lt;{k}&gt;" in html for k in keys), page.name
        elif page.stem != "index":
            assert "cell_output" in html, page.name
    # no top-level page shows an empty "Section Navigation" sidebar (issue 66)
    for page in sorted(DOCS.glob("*.md")):
        assert "Section Navigation" not in (out / f"{page.stem}.html").read_text("utf-8"), page
    # the audit guide's examples run without a FutureWarning (a legacy call form)
    assert "FutureWarning" not in (out / "user_guide" / "audit.html").read_text(encoding="utf-8")
