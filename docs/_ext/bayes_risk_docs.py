"""Local Sphinx extension of the bayes-risk documentation.

* ``.. bayes-risk-cli::`` — the command-line reference, generated at build time from
  :func:`bayes_risk.cli.build_parser` (a new sub-command or option appears by itself). Help texts
  are rendered as plain text, never parsed as reST, so ``|x - t|`` or ``*`` in a help string
  cannot break the build.
* Cross-references to a public object through another of its import paths (for example
  ``bayes_risk.attribute_risk``, defined in ``bayes_risk.attribute.api`` and documented as
  ``bayes_risk.attribute.attribute_risk``) resolve to the page where it is documented: the
  referenced name is imported and matched, by identity, against the documented objects. A name
  that imports to nothing documented stays unresolved, and the nitpicky build fails.
* Docstring markup that reST misreads is normalised before numpydoc parses it: a bullet list
  right after a paragraph line gets the blank line reST needs, and ``|name|`` (a size written as
  in the formulas, not a substitution) is escaped.
* numpydoc's docstring template is compiled once per builder, not once per docstring (the same
  pages, a tenth less Sphinx time).
* A parallel build (``-j 2``, as the docs test runs it) spreads the pages with executed notebooks
  evenly over the reading processes, instead of leaving two alphabetical chunks of them to run
  one after the other.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import itertools
import os
import re
import resource
import time
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.util.nodes import make_refnode

# --------------------------------------------------------------------------- CLI reference


def _literal(text: str) -> nodes.literal_block:
    block = nodes.literal_block(text=text)
    block["language"] = "none"  # shell text: no Python highlighting
    return block


def _paragraphs(text: str) -> list[nodes.Node]:
    """Split an argparse description into paragraphs and (indented) literal blocks."""
    out: list[nodes.Node] = []
    for chunk in re.split(r"\n\s*\n", inspect.cleandoc(text or "")):
        lines = chunk.splitlines()
        if not lines:
            continue
        indented = [ln for ln in lines[1:] if ln.startswith((" ", "\t"))]
        if lines[0].rstrip().endswith(":") and indented:
            out.append(nodes.paragraph(text=lines[0].strip()))
            out.append(_literal(inspect.cleandoc("\n".join(lines[1:]))))
        else:
            out.append(nodes.paragraph(text=" ".join(ln.strip() for ln in lines)))
    return out


def _option_term(action: argparse.Action) -> str:
    if not action.option_strings:
        return action.metavar or action.dest
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    metavar = action.metavar or action.dest.upper()
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    if action.nargs in ("+", "*"):
        metavar = f"{metavar} ..."
    return ", ".join(f"{opt} {metavar}" for opt in action.option_strings)


def _option_text(action: argparse.Action) -> str:
    text = (action.help or "").replace("%(default)s", str(action.default))
    if text == argparse.SUPPRESS:
        return ""
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        text += f" (choices: {', '.join(str(c) for c in action.choices)})"
    return text.strip()


def _actions_section(title: str, actions: list[argparse.Action]) -> list[nodes.Node]:
    sec = nodes.rubric(text=title)
    dl = nodes.definition_list()
    for action in actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        item = nodes.definition_list_item()
        item += nodes.term("", "", nodes.literal(text=_option_term(action)))
        item += nodes.definition("", nodes.paragraph(text=_option_text(action)))
        dl += item
    return [sec, dl] if len(dl) else []


def _parser_nodes(parser: argparse.ArgumentParser) -> list[nodes.Node]:
    out: list[nodes.Node] = [_literal(parser.format_usage().strip())]
    out += _paragraphs(parser.description or "")
    for group in parser._action_groups:
        title = group.title or "options"
        if title in ("positional arguments", "options", "optional arguments"):
            title = "arguments" if title.startswith("positional") else "options"
        out += _actions_section(title, list(group._group_actions))
    if parser.epilog:
        out += _paragraphs(parser.epilog)
    return out


class CliReference(Directive):
    """Render ``bayes_risk.cli.build_parser()``: the program and one section per sub-command."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from bayes_risk.cli import build_parser

        parser = build_parser()
        result: list[nodes.Node] = _parser_nodes(parser)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        helps = {c.dest: c.help for c in sub._choices_actions}
        for name, subparser in sub.choices.items():
            section = nodes.section(ids=[f"cli-{name}"], names=[f"bayes-risk {name}"])
            section += nodes.title(text=f"bayes-risk {name}")
            if helps.get(name):
                section += nodes.paragraph("", "", nodes.emphasis(text=helps[name]))
            section += _parser_nodes(subparser)
            self.state.document.note_implicit_target(section)
            result.append(section)
        return result


# --------------------------------------------------------------------------- aliases


def _import(name: str) -> Any:
    """The object a dotted name imports to, or None.

    Attributes win over sub-modules of the same name (``bayes_risk.utility.pmse`` is the function
    the package exports, ``bayes_risk.utility.pmse.pmse`` the same function through its module).
    """
    parts = name.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except ImportError:
        return None
    for i in range(1, len(parts)):
        try:
            obj = getattr(obj, parts[i])
            continue
        except AttributeError:
            pass
        try:
            obj = getattr(importlib.import_module(".".join(parts[:i])), parts[i])
        except (ImportError, AttributeError):
            try:
                obj = importlib.import_module(".".join(parts[: i + 1]))
            except ImportError:
                return None
    return obj


def _key(obj: Any) -> int:
    return id(getattr(obj, "__func__", obj))


def _documented(env: Any) -> dict[int, tuple[str, str, str]]:
    cache = getattr(env, "_bayes_risk_documented", None)
    if cache is None:
        cache = {}
        for name, entry in env.get_domain("py").objects.items():
            if not name.startswith("bayes_risk"):
                continue
            obj = _import(name)
            if obj is not None and not isinstance(obj, (str, int, float, bool, type(None))):
                cache.setdefault(_key(obj), (name, entry.docname, entry.node_id))
        env._bayes_risk_documented = cache
    return cache


def _resolve_alias(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    module = node.get("py:module")
    klass = node.get("py:class")
    candidates = [target]
    if module:
        candidates.append(f"{module}.{target}")
        if klass:
            candidates.append(f"{module}.{klass}.{target}")
    documented = _documented(env)
    for cand in candidates:
        if not cand.startswith("bayes_risk"):
            continue
        obj = _import(cand)
        if obj is None:
            continue
        hit = documented.get(_key(obj))
        if hit is not None:
            name, docname, node_id = hit
            return make_refnode(app.builder, node["refdoc"], docname, node_id, contnode, name)
    # A short name whose module context does not export it (a docstring naming a sibling by its
    # bare name): accept it when exactly one documented bayes_risk object has that name.
    suffix = "." + (f"{klass}.{target}" if klass and "." not in target else target)
    hits = {v for v in documented.values() if v[0].endswith(suffix)}
    if len(hits) != 1:
        hits = {v for v in documented.values() if v[0].endswith("." + target)}
    if len(hits) == 1:
        name, docname, node_id = hits.pop()
        return make_refnode(app.builder, node["refdoc"], docname, node_id, contnode, name)
    return None


# --------------------------------------------------------------------------- docstrings

_SUBST = re.compile(r"(?<![\\|`])\|([A-Za-z_][\w\- ]*?)\|(?!`)")


def _fix_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    fixed: list[str] = []
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if not stripped.startswith(("|", "+-", "+=")):
            line = _SUBST.sub(r"\\|\1\\|", line)
        if i and stripped.startswith("* ") and fixed and fixed[-1].strip():
            prev = fixed[-1]
            indent = len(line) - len(stripped)
            prev_indent = len(prev) - len(prev.lstrip())
            if prev_indent == indent and not prev.lstrip().startswith("* "):
                fixed.append("")
        fixed.append(line)
    lines[:] = fixed


# --------------------------------------------------------------------------- numpydoc template


def _numpydoc_one_template() -> None:
    """Compile numpydoc's docstring template once per builder instead of once per docstring.

    numpydoc 1.x (``docscrape_sphinx.get_doc_object``) builds a new Jinja environment and
    compiles ``numpydoc_docstring.rst`` for every docstring and signature it renders: some
    1,250 compilations, a tenth of the Sphinx time of a build. The replacement is numpydoc's
    function with the compiled template kept; the template, and so every page, is the same. A
    numpydoc without the names it relies on is left alone.
    """
    from numpydoc import docscrape_sphinx as ds
    from numpydoc import numpydoc as nd

    needed = ("get_doc_object_orig", "SandboxedEnvironment", "BuiltinTemplateLoader",
              "FileSystemLoader", "SphinxClassDoc", "SphinxFunctionDoc", "SphinxObjDoc")
    if not all(hasattr(ds, n) for n in needed) or getattr(nd, "get_doc_object", None) is not \
            ds.get_doc_object:
        return
    templates: dict[int, Any] = {}

    def get_doc_object(obj, what=None, doc=None, config=None, builder=None):
        if config is None:
            config = {}
        template = templates.get(id(builder))
        if template is None:  # as numpydoc does it, once
            dirs = [os.path.join(os.path.dirname(ds.__file__), "templates")]
            if builder is not None:
                loader = ds.BuiltinTemplateLoader()
                loader.init(builder, dirs=dirs)
            else:
                loader = ds.FileSystemLoader(dirs)
            template = ds.SandboxedEnvironment(loader=loader).get_template(
                "numpydoc_docstring.rst")
            templates[id(builder)] = template
        config["template"] = template
        return ds.get_doc_object_orig(obj, what=what, doc=doc, config=config,
                                      class_doc=ds.SphinxClassDoc,
                                      func_doc=ds.SphinxFunctionDoc, obj_doc=ds.SphinxObjDoc)

    nd.get_doc_object = get_doc_object


# --------------------------------------------------------------------------- trace


def _trace(event: str):
    """A Sphinx event handler that appends ``event docname time`` to the file named by
    ``$BAYES_RISK_DOCS_TRACE`` (the docs test sets it). Written directly, not through Sphinx's
    logging: a parallel build replays a reading process's messages only when its chunk of pages is
    done, so a page whose executed notebook never returns would leave no trace there.

    Each line also holds ``cpu=``: the CPU seconds (user + system) of the reading process and of
    the children it has reaped, i.e. its finished notebook kernels; the difference between a
    page's ``start`` and ``read`` lines is the page's CPU cost, kernel start-up included."""

    def handler(app, docname, *args):
        path = os.environ.get("BAYES_RISK_DOCS_TRACE")
        if path:
            cpu = sum(u.ru_utime + u.ru_stime for u in (
                resource.getrusage(resource.RUSAGE_SELF),
                resource.getrusage(resource.RUSAGE_CHILDREN)))
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(f"{event} {docname} {time.time():.1f} pid={os.getpid()} "
                         f"cpu={cpu:.2f}\n")

    return handler


def _trace_read(app, doctree):
    _trace("read")(app, app.env.docname)


# --------------------------------------------------------------------------- parallel reading

#: a page's notebook costs a kernel start-up (interpreter, imports) besides its cells
_KERNEL_CELLS = 3


def _notebook_weight(env: Any, docname: str) -> int:
    """Cost estimate of reading a page: 0 without executed cells, else cells + kernel start-up."""
    try:
        text = env.doc2path(docname).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return 0
    cells = text.count("```{code-cell}")
    return cells + _KERNEL_CELLS if cells else 0


def _balance_read_chunks(app, env, docnames: list[str]) -> None:
    """Reorder the pages of a parallel read so that the executed notebooks are spread evenly.

    Sphinx reads the sorted pages in contiguous chunks, each chunk in one process: the example
    pages (``gallery/``, ``user_guide/``) fell into two chunks executed one notebook after
    the other, while the other process soon ran out of chunks. The notebooks are dealt to the
    chunks heaviest first, each to the chunk with the least so far (the LPT schedule; a tie goes
    to the chunk Sphinx starts first). Only the reading order changes: every page is read and
    executed once, as before.
    """
    from sphinx.util.parallel import make_chunks

    if app.parallel <= 1 or len(docnames) < 2:
        return
    sizes = [len(c) for c in make_chunks(docnames, app.parallel)]
    if len(sizes) <= app.parallel:
        return
    weight = {d: _notebook_weight(env, d) for d in docnames}
    heavy = sorted((d for d in docnames if weight[d]), key=lambda d: -weight[d])
    light = iter([d for d in docnames if not weight[d]])
    # ParallelTasks starts the first `parallel` chunks, then the others last first: a tie in
    # load goes to the chunk started earlier
    starts = [*range(app.parallel), *range(len(sizes) - 1, app.parallel - 1, -1)]
    rank = {c: r for r, c in enumerate(starts)}
    chunks: list[list[str]] = [[] for _ in sizes]
    load = [0] * len(sizes)
    for d in heavy:
        free = [i for i in range(len(sizes)) if len(chunks[i]) < sizes[i]]
        i = min(free, key=lambda k: (load[k], rank[k]))
        chunks[i].append(d)
        load[i] += weight[d]
    for chunk, size in zip(chunks, sizes, strict=True):
        chunk += itertools.islice(light, size - len(chunk))
    # every chunk keeps its size, so make_chunks cuts the new order into these chunks
    docnames[:] = [d for chunk in chunks for d in chunk]


def setup(app):
    app.add_directive("bayes-risk-cli", CliReference)
    app.connect("env-before-read-docs", _balance_read_chunks)
    app.connect("source-read", _trace("start"))
    app.connect("doctree-read", _trace_read)
    app.connect("missing-reference", _resolve_alias)
    app.connect("autodoc-process-docstring", _fix_docstring, priority=100)
    _numpydoc_one_template()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
