"""Sphinx configuration of the bayes-risk documentation.

Built by ``make docs`` (``sphinx-build -W -n``: every warning, and every unresolved
cross-reference, is an error). Example pages are MyST-NB text notebooks executed at build time.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import re
import sys
from pathlib import Path

import bayes_risk

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

# The executed notebooks inherit the environment of the build. Figures must reach the pages:
# the inline backend (the Makefile exports MPLBACKEND=Agg for the tests, which would hide them).
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
# numba's workqueue layer (the OpenMP/TBB layers abort in forked PyMC chains).
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
# glibc's allocator keeps freed memory for the next array instead of returning it to the
# system and faulting it in again: the examples allocate and free arrays of tens of megabytes
# (pooled identification of 7,014 records, m = 5): the Caiola & Reiter gallery page spent a
# third of its CPU time in the kernel zeroing fresh pages. Allocation only: every number is the
# same.
for _name, _value in (("MALLOC_MMAP_THRESHOLD_", "33554432"),  # 32 MB, glibc's largest
                      ("MALLOC_TRIM_THRESHOLD_", "4294967296"),
                      ("MALLOC_TOP_PAD_", "268435456")):
    os.environ.setdefault(_name, _value)
# The examples call the installed `bayes-risk` command: the build environment's scripts come first.
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
# The real CE sample sits in the project's shared/ folder next to a checkout; the examples fall
# back to the embedded demo generator when it is absent (a user's clone does not have it).
os.environ.setdefault(
    "BAYES_RISK_SHARED_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")
)
# The reproduction gallery runs the scripts of examples/ (one place for each analysis), and
# "Adding a model" imports the example model from there (the docs test copies the folder beside
# its copy of docs/).
os.environ.setdefault("BAYES_RISK_EXAMPLES", str(Path(__file__).resolve().parents[1] / "examples"))

# "Reading the audit report" shows the one-page guide that every HTML report carries beside it
# (reading_the_report.html): its text lives once, in the package; the page includes a copy made
# here from the installed package (gitignored)
_guide = importlib.resources.files("bayes_risk.auditing").joinpath(
    "templates", "reading_the_report.md")
(Path(__file__).resolve().parent / "_snippets" / "reading_the_report.md").write_text(
    _guide.read_text(encoding="utf-8"), encoding="utf-8")

project = "bayes-risk"
author = "bayes-risk developers"
copyright = "2026, bayes-risk developers"  # noqa: A001 - Sphinx's name
version = release = bayes_risk.__version__

extensions = [
    "myst_nb",  # MyST Markdown + executed text notebooks (includes myst_parser)
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "bayes_risk_docs",  # docs/_ext: generated CLI reference, alias references, docstring markup
    "sphinx_design",  # cards on the front page
]

# .rst first: autosummary writes its generated stubs with the first suffix, and they are reST.
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
# _snippets: text included in several pages ({include}), not pages of their own
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints", "_snippets"]
templates_path = ["_templates"]

# --- MyST / MyST-NB -----------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "substitution"]
myst_heading_anchors = 3
# Every notebook runs at every build: a broken example must fail the build, never show stale
# output from a cache.
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_show_tb = True
# seconds a cell may run before its page fails with the cell named (the docs test lowers it)
nb_execution_timeout = int(os.environ.get("BAYES_RISK_DOCS_CELL_TIMEOUT", "600"))
nb_merge_streams = True
nb_execution_in_temp = True  # examples write their output folders into a temporary directory
#: gallery pages that reproduce a paper on the project's shared data (real data sets, and the R
#: packages' outputs on them), with the files of shared/ each reads. A clone of the repository
#: does not have that folder: a build without them shows such a page's code, not executed, under
#: a note that says why (tests/test_docs.py builds the site so; tests/test_examples.py runs these
#: pages' cells where the files are present).
SHARED_PAGES: dict[str, list[str]] = {
    "gallery/caiola_reiter_2010": ["data/NYexample_X.csv"],
    "gallery/drechsler_reiter_2008": ["data/NYexample_X.csv", "data/CEdata.csv"],
    "gallery/hornby_hu_2021": ["data/CEdata.csv", "reference/identification"],
    "gallery/hu_2019": ["data/CEdata_attribute.csv"],
    "gallery/pymc_ce_income": ["data/CEdata.csv"],
}
_shared_root = Path(os.environ["BAYES_RISK_SHARED_DATA"]).parent
_without_shared = {page: missing for page, files in SHARED_PAGES.items()
                   if (missing := [f for f in files if not (_shared_root / f).exists()])}
nb_execution_excludepatterns = [f"{d}.md" for d in _without_shared]


def _patient_kernels() -> None:
    """A notebook kernel may take as long as a cell to start on a loaded machine: nbclient waits
    60 s ("Kernel didn't respond in 60 seconds" at a load average of 25 on 2 cores). The
    parallel readers are forked from this process, so they inherit the default (myst-nb does not
    pass the setting through)."""
    from nbclient import NotebookClient

    NotebookClient.class_traits()["startup_timeout"].default_value = nb_execution_timeout
    # traitlets keeps the class's immutable defaults apart, read when an instance is made
    NotebookClient._static_immutable_initial_values["startup_timeout"] = nb_execution_timeout


_patient_kernels()

# --- API pages ----------------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "none"  # types are given (and read) in the numpydoc "Parameters" sections
autodoc_member_order = "groupwise"
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# --- nitpicky references ------------------------------------------------------------------------
# Private names that public docstrings mention (not part of the documented API):
nitpick_ignore = [
    # a standard-library base shown in "Bases:" (DisclosureByTarget is a Mapping); the docs are
    # built without network, so without intersphinx to the Python docs
    ("py:class", "collections.abc.Mapping"),
    ("py:class", "unittest.case.SkipTest"),  # base of bayes_risk.testing.CheckSkipped
    # base class of the tree plug-ins
    ("py:class", "bayes_risk.models.trees.plugins.base.PluginBase"),
    ("py:class", "bayes_risk.models.trees.seqtree.SeqTree"),  # CARTSynthesizer.trees_ items
    # the private base of SinglingOutResult and LinkabilityResult (shown in "Bases:")
    ("py:class", "bayes_risk.results.attacks._AttackResult"),
    # the private base of Sampling and TreeOptions (shown in "Bases:")
    ("py:class", "bayes_risk._specs.GroupedSettings"),
    ("py:func", "bayes_risk.models.dpmpm.kernels.neighbourhood"),  # DPMPM.neighbourhood_loglik
    # Members that docstrings name but that are not link targets: dataclass fields listed in an
    # "Attributes" section, and methods without a docstring of their own in the base class.
    ("py:attr", "records"),  # IdentificationResult.to_dataframe
    ("py:attr", "ratio"),  # PMSEResult.s_pmse
    ("py:meth", "fit"),  # BayesianSynthesizer
    ("py:meth", "log_weights"),  # Prior
]

# --- math: MathJax from the built site, never from a CDN ----------------------------------------
# Agencies read the docs offline, where a CDN script leaves the methods pages as raw TeX. The docs
# extra installs the PyPI package sphinx-mathjax-offline, which ships the MathJax 3.2.2 components
# (TeX input, CommonHTML output, its fonts); its files are copied into _static/mathjax/ as static
# files and the pages load them from there. Only its files are used, not its Sphinx extension
# (which copies them only after a build without errors and does not declare itself safe for
# parallel builds, a warning that -W turns into an error).
_mathjax_spec = importlib.util.find_spec("sphinx-mathjax-offline")
if _mathjax_spec is None or _mathjax_spec.origin is None:
    raise RuntimeError(
        "the docs need the MathJax files of sphinx-mathjax-offline: pip install '.[docs]'"
    )
_mathjax_static = Path(_mathjax_spec.origin).parent / "static"  # holds mathjax/
mathjax_path = "mathjax/tex-chtml.js"  # relative: _static/mathjax/tex-chtml.js

# --- HTML ---------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"bayes-risk {release}"
html_static_path: list[str] = [str(_mathjax_static)]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 5,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
# a top-level page is a section of its own, without sub-pages: no "Section Navigation" sidebar,
# which would be empty (issue 66: the glossary, getting started and the "adding a" pages had one)
html_sidebars = {p.stem: [] for p in Path(__file__).resolve().parent.glob("*.md")}
# Option names such as --out must stay as typed: no "smart" dashes or quotes.
smartquotes = False
html_show_sourcelink = False


def _note_without_shared(app, docname: str, source: list[str]) -> None:
    """A page of ``SHARED_PAGES`` whose files are absent opens with a note saying that its code
    is shown without its outputs, and why."""
    missing = _without_shared.get(docname)
    if not missing:
        return
    files = ", ".join(f"`shared/{f}`" for f in missing)
    note = (":::{note}\nThis page reproduces a paper on the project's shared data, which this "
            f"build of the documentation did not have ({files}; a clone of the repository does "
            "not include the folder). Its code is shown without its outputs; the published "
            "documentation runs every cell.\n:::\n\n")
    text = source[0]
    title = re.search(r"^# .*\n", text, re.M)  # the note goes under the page's title
    at = title.end() if title else 0
    source[0] = text[:at] + "\n" + note + text[at:]


def setup(app) -> None:
    """Pages of ``SHARED_PAGES`` without their files are noted as not executed, and on those
    pages a ``{glue:text}`` role shows its key, as ``<key>``; on every other page the role is
    myst-nb's own, and a missing key is still an error under ``-W``."""
    app.connect("source-read", _note_without_shared)
    if not _without_shared:
        return
    from docutils import nodes
    from myst_nb.ext.glue.roles import PasteTextRole

    class _KeyOfNotExecutedPage(PasteTextRole):
        def run(self):
            if self.document.settings.env.docname in _without_shared:
                key = self.text.rsplit(":", 1)[0] if ":" in self.text else self.text
                return [nodes.literal(self.rawtext, f"<{key}>")], []
            return super().run()

    app.add_role_to_domain("glue", "text", _KeyOfNotExecutedPage(), override=True)
