"""Arguments of ``bayes-risk design`` (run: :mod:`bayes_risk.cli.design`)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk._search_spec import SEARCH, SearchSpec
from bayes_risk.attribute.specs import EstimatorSpec
from bayes_risk.auditing.settings import AuditSettings
from bayes_risk.cli._common import add_run_arguments
from bayes_risk.cli.parsers import add_argument_options, add_spec_options
from bayes_risk.designing.space import SPACE, DesignSpace

__all__ = ["add_parser"]

_EPILOG = """\
example (the README's failing audit of the CE sample, then the design that starts from it):
  bayes-risk audit CEdata.csv ce_cart/ --known Age Urban Marital Income --out ce_audit/
  bayes-risk design CEdata.csv --known Age Urban Marital Income --start ce_audit/ \\
      --categorical Urban Marital Tenure --random-seed 1 --out ce_design/

the space (stated in the report): --columns (default: grown from --start's lines past their
thresholds: the minimal sets of released columns whose synthesis their remedies name, each
grown by one), --methods (default: the start release's), each method's knobs (cart.min_leaf,
cart.smoothing, rf.min_samples_leaf, rf.smoothing, dpmpm.n_components, dpmpm.alpha_prior,
pmm.threshold; --knob to change their values), -m, --remedies (none, smooth, bottom_top and
any registered); --fix AXIS=VALUE and --exclude AXIS=VALUE,... on any axis; or all of it in
--space FILE.json.

the search: a space of at most --max-candidates is enumerated in full, a larger one searched
by Optuna's TPE sampler with the verdict lines as constraints. Each candidate is audited by
the audit itself: utility, identification and the empirical measures first (a line past its
threshold excludes it), then the model-based steps on --screen-records random records, then
on every record. The best candidate that passes is re-audited with fresh seeds and fresh
datasets; that audit is the verdict.

outputs (--out): design.journal (the search, appended as each candidate finishes: an
interrupt keeps every finished candidate, --resume goes on), report.md, design.json,
candidates.csv, frontier.csv, frontier.png, selection.csv, and for a release that passes:
release/ (its datasets and manifest) and release_audit/ (report.html, report.zip).

exit status: 0 the design ran (whether or not a release passes: see the first line); 2 bad
input (nothing written); 130 interrupted (the journal keeps the finished candidates).
"""


class _Resume(argparse.Action):
    """``--resume``: go on in the existing --out (which the --out check then accepts)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        namespace.resume = True
        namespace.resume_out = True


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``design`` sub-command."""
    p = subparsers.add_parser(
        "design", help="search a stated space of releases for the most useful one that passes "
        "every verdict line of the audit",
        description="From 'do not release' to the release you can make: audit every candidate "
        "of a stated space of releases (columns to synthesize, synthesizer and knobs, m, "
        "remedies) with the audit's own measures, cheap screens first; recommend the most "
        "useful one that passes every verdict line, re-audited with fresh seeds and fresh "
        "datasets, and draw the utility-risk frontier with the thresholds.", epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("original", metavar="ORIGINAL", help="the confidential table (.csv, "
                   ".parquet, SAS, Stata or SPSS)")
    add_argument_options(p, "bayes_risk.designing.search:design")
    # the space: --space, then DesignSpace's options (given, they override the file's fields)
    g = p.add_argument_group(SPACE)
    g.add_argument("--space", default=None, metavar="FILE.json",
                   help="the space as JSON: columns, methods, knobs, m, remedies, fix, exclude "
                   "(options below override its fields)")
    add_spec_options(p, DesignSpace)
    # the search: SearchSpec's options, then the audit's thresholds and --resume
    s = p.add_argument_group(SEARCH)
    add_spec_options(p, SearchSpec)
    add_spec_options(s, AuditSettings, fields=("thresholds",), changes={
        "group": None, "help": "verdict threshold (repeat; names and defaults: bayes-risk audit "
        "--help)"})  # the audit's option
    # how each candidate's attribute step estimates (the audit's option, declared once)
    add_spec_options(s, EstimatorSpec, fields=("plugin_replicates",))
    s.add_argument("--resume", action=_Resume, nargs=0, default=False,
                   help="go on with the interrupted design in --out (its finished candidates "
                   "kept; the settings must be the same)")
    add_run_arguments(p, "bayes_risk.cli.design", "the design folder, written as the search "
                      "goes (see below)", seed=None)
    # the folder is written as the search goes (its journal is what --resume reads), so an
    # old design cannot be kept until the new one is complete, as the other commands keep theirs
    p._option_string_actions["--overwrite"].help = (
        "replace an existing --out: the old design is deleted when the new one starts (the "
        "folder is written as the search goes)")
    return p
