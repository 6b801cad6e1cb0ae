"""Hostile and awkward names in the audit's files and reports (issue 46, items 4 and 6).

Column names and levels are the user's strings. In ``report.md`` they must render as the text
they hold under a CommonMark renderer (markdown-it-py, the renderer of the docs and rich stack):
no element, attribute or link made from them; and every file named after a column (the report's
figures, the disclosure step's per-target folders) gets a safe, bounded, collision-free name
(:func:`bayes_risk._io.file_slug`), so that an audit never fails writing them.
"""

from __future__ import annotations

import re
import string
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bayes_risk as br
from bayes_risk._io import file_slug
from bayes_risk.auditing.render import _md_text
from bayes_risk.models import CARTSynthesizer

pytestmark = pytest.mark.filterwarnings("ignore::bayes_risk.exceptions.BayesRiskWarning")

#: what a hostile name may try (each a column name or a level below)
PAYLOADS = [
    '"><img src=x onerror=alert(1)>',
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "![x](javascript:alert(1))",
    "<javascript:alert(1)>",
    "&lt;img src=x onerror=alert(1)&gt;",
    "\\<img src=x onerror=alert(2)>",
    "\\\\<b onmouseover=alert(3)>x</b>",
    "`<svg onload=alert(4)>`",
    "*a* _b_ ~~c~~ a|b #h",
    "[ref]: javascript:alert(5)",
    "line one\n# heading\n<img src=y onerror=alert(6)>",
    "1. item",
    "> quote",
]


def _renderer():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").enable("strikethrough")


class _Scan(HTMLParser):
    """Every element, attribute and text of an HTML fragment."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


#: what the report's Markdown itself renders to; anything else came from a user's string
ALLOWED = {"h1", "h2", "h3", "p", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td",
           "em", "strong", "code", "a", "img", "blockquote"}


def _scan(md: str) -> _Scan:
    s = _Scan()
    s.feed(_renderer().render(md))
    return s


def _check_html(md: str, base: Path | None) -> _Scan:
    s = _scan(md)
    for tag, attrs in s.tags:
        assert tag in ALLOWED, (tag, attrs)
        for k, v in attrs:
            assert k in {"href", "src", "alt"}, (tag, k, v)
            if k in ("href", "src"):
                assert v and not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", v), v  # no scheme
                if base is not None:  # a link of the report: a file of the audit
                    assert (base / unquote(v)).exists(), v
    return s


@pytest.mark.parametrize("payload", PAYLOADS)
def test_escaped_text_renders_as_the_text_it_holds(payload):
    # as a paragraph, a list item and a table cell, the contexts of report.md
    for md, shown in ((_md_text(payload), None),
                      (f"- {_md_text(payload)}\n", None),
                      (f"| a | b |\n| --- | --- |\n| {_md_text(payload)} | x |\n", None)):
        s = _check_html(md, shown)
        assert not [t for t, _ in s.tags if t not in {"p", "ul", "li", "table", "thead",
                                                      "tbody", "tr", "th", "td"}], (md, s.tags)
        text = "".join(s.text)
        assert " ".join(payload.split()) in " ".join(text.split()), (payload, text)


def test_escaping_is_applied_once():
    # a backslash of the user's is a character, not an escape of the next one
    assert _md_text("\\<b>") == "\\\\\\<b\\>"
    assert "".join(_scan(_md_text("\\<b>")).text).strip() == "\\<b>"


# ---------------------------------------------------------------- file names
def test_file_slugs():
    assert file_slug("Income") == "Income" and file_slug("p_true.v-2") == "p_true.v-2"
    s = file_slug("Income/month")
    assert re.fullmatch(r"Income_month-h[0-9a-f]{12}", s)
    assert file_slug("Income_month") == "Income_month" != s
    long = file_slug("T" * 5000)
    assert len(long) <= 55 and long.startswith("T" * 40)
    assert file_slug("État civil").startswith("Etat_civil-h")
    for odd in ("", ".", "..", ".hidden", "-rf", "CON", "nul.txt", "a" * 65, "x.", "a b",
                "a\nb", "..\\..\\x", "a-h0123456789ab", "original_risk", "original_risk_2"):
        out = file_slug(odd)
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", out) and out != odd, (odd, out)


NAMES = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
                max_size=80) | st.text(alphabet=string.ascii_letters + "_-./ ", max_size=80)


@settings(max_examples=300, deadline=None)
@given(st.lists(NAMES, min_size=2, max_size=6, unique=True))
def test_slugs_are_safe_bounded_and_collision_free(names):
    slugs = [file_slug(n) for n in names]
    assert len(set(slugs)) == len(names)  # distinct names, distinct files
    for n, s in zip(names, slugs, strict=True):
        assert s == file_slug(n)  # the writer and every link agree
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", s) and len(s) <= 64
        assert not s.endswith(".")


# ---------------------------------------------------------------- a whole audit
@pytest.fixture(scope="module")
def hostile_audit(tmp_path_factory):
    """An audit whose column names and levels are the payloads above, with two disclosure
    targets whose names hold '/' (one of them thousands of characters long)."""
    d = tmp_path_factory.mktemp("hostile")
    base = br.make_ce_like(150, random_seed=11)
    ten, inc = "Tenure/type " + "T" * 3000, "Income/month"
    names = {"Urban": PAYLOADS[0], "Marital": PAYLOADS[2], "Tenure": ten, "Income": inc,
             "Educ": PAYLOADS[11]}
    df = base.rename(columns=names)
    levels = {v: PAYLOADS[i % len(PAYLOADS)]
              for i, v in enumerate(sorted(df[PAYLOADS[2]].unique()))}
    df[PAYLOADS[2]] = df[PAYLOADS[2]].map(levels)
    cats = [PAYLOADS[0], PAYLOADS[2], ten]
    schema = br.infer_schema(df, categorical=cats)
    cart = CARTSynthesizer(min_leaf=5, random_seed=1).fit(df, schema=schema,
                                                          synthesized=[ten, inc])
    syn = cart.synthesize(2, random_seed=2)
    out = d / "audit"
    res = br.audit(df, syn, known=["Age", PAYLOADS[0], PAYLOADS[2]], out=out, random_seed=3,
                   progressbar=False,
                   settings=br.AuditSettings(sweep=None, skip=["posterior_identification",
                                                               "attribute", "membership"]))
    return res, out, names


def test_an_audit_with_hostile_names_writes_every_file(hostile_audit):
    res, out, names = hostile_audit
    assert res.complete
    # two targets: one folder each, named from their slugs, under disclosure/
    subs = sorted(p.name for p in (out / "disclosure").iterdir() if p.is_dir())
    assert subs == sorted([*(file_slug(t) for t in res.plan.disclosure_targets),
                           "original_risk"])  # and the risk of the original on the keys
    assert all(len(s) <= 55 for s in subs)
    for t in res.plan.disclosure_targets:
        assert (out / "disclosure" / file_slug(t) / "ident.csv").is_file()
    res.to_markdown(out / "report.md")
    figs = sorted(p.name for p in (out / "report_figures").iterdir())
    # the marginals of every column, hostile names in the panels' titles, in one figure
    assert "utility_compare.png" in figs
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", f) and len(f) < 80 for f in figs), figs
    html = res.to_html(out / "report.html").read_text()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_markdown_report_makes_nothing_live_of_a_name(hostile_audit):
    res, out, names = hostile_audit
    path = res.to_markdown(out / "report2.md")
    md = path.read_text()
    s = _check_html(md, out)  # every element is the report's; every link is a file of it
    assert sum(t == "img" for t, _ in s.tags) >= 4  # the figures, and nothing else
    text = " ".join("".join(s.text).split())
    for p in (PAYLOADS[0], PAYLOADS[2], "Income/month"):
        assert p in text, p  # shown as the characters it holds
    # a report written elsewhere, under a name with spaces and parentheses: its figure folder
    # is named after it, and every link is percent-encoded (it would break the link otherwise)
    other = out.parent / "elsewhere"
    other.mkdir()
    md2 = res.to_markdown(other / "my report (1).md").read_text()
    _check_html(md2, other)
    assert "](my%20report%20%281%29_figures/utility_compare.png" in md2
    assert "](../audit/summary.json)" in md2


def test_the_command_line_audits_names_with_slashes_markup_and_5000_characters(tmp_path,
                                                                               capsys):
    """The issue's command-line case: ``synthesize`` and ``audit`` of a CSV whose columns are
    ``Income/month``, a 5,000-character name holding ``/`` and an HTML payload run every step
    and write every file (exit 0); figures and disclosure folders have safe names, and
    ``report.md`` renders no element or link of a name."""
    from bayes_risk.cli import main

    long = "Tenure/" + "t" * 4993
    names = {"Income": "Income/month", "Tenure": long, "Urban": PAYLOADS[0]}
    df = br.make_ce_like(120, random_seed=5).rename(columns=names)
    df.to_csv(tmp_path / "orig.csv", index=False)
    base = ["--categorical", long, PAYLOADS[0], "--random-seed", "1", "-q"]
    assert main(["synthesize", str(tmp_path / "orig.csv"), "--method", "cart", "--synthesize",
                 "Income/month", long, "-m", "2", "--min-leaf", "5", *base,
                 "--out", str(tmp_path / "rel")]) == 0
    out = tmp_path / "audit"
    assert main(["audit", str(tmp_path / "orig.csv"), str(tmp_path / "rel"), "--known", "Age",
                 PAYLOADS[0], "--radius-sweep", "none", "--skip", "attribute",
                 "posterior-identification", "membership", *base, "--out", str(out)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    every = [p.relative_to(out) for p in out.rglob("*")]
    assert all(len(part) <= 80 for p in every for part in p.parts), every
    figs = {p.name for p in (out / "report_figures").iterdir()}
    assert "utility_compare.png" in figs
    assert {p.name for p in (out / "disclosure").iterdir() if p.is_dir()} == {
        file_slug("Income/month"), file_slug(long), "original_risk"}
    md = (out / "report.md").read_text()
    s = _check_html(md, out)
    assert "Income/month" in " ".join("".join(s.text).split())
    assert "<img src=x" not in (out / "report.html").read_text()
