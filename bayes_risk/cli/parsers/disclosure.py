"""``bayes-risk disclosure``: its arguments and its run (the runner's row)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk._specs import parse_records
from bayes_risk.cli import _common
from bayes_risk.cli._common import (
    NO_SEED,
    add_input_arguments,
    add_run_arguments,
    add_type_arguments,
)
from bayes_risk.cli._runner import Run
from bayes_risk.cli.parsers import add_argument_options, add_spec_options
from bayes_risk.disclosure.specs import ExclusionSpec

__all__ = ["add_parser", "RUN"]


def _files(res: Any, args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """The measures' tables; the differencing check's files, its inputs with --selected."""
    tables: dict[str, Any] = {}
    if res.measures is not None:
        m = res.measures
        tables = {"ident.csv": m.ident, "attrib.csv": m.attrib, "allCAPs.csv": m.allCAPs,
                  "replicated_uniques.csv": m.replicated_uniques.table}
    if res.differencing is not None:
        from bayes_risk._io import write_json

        d = res.differencing.to_dict()
        d["inputs"] = {"original": str(args.original),
                       "synthetic": [str(s) for s in args.synthetic], "selected": args.selected}
        tables["differencing.json"] = lambda path: write_json(path, d)
        tables["differencing.csv"] = res.differencing.to_dataframe()
    return tables, {}


#: disclosure_run of ORIGINAL and SYN: the measures of --keys, the differencing check (synthpop's
#: measures pair no record with a row: ORIGINAL in another row order is the release's)
RUN = Run("bayes_risk.disclosure.run:disclosure_run",
          specs={"exclude": ExclusionSpec},
          argument_groups={"measures": "bayes_risk.disclosure.measures:disclosure_measures"},
          reads=(("schema", lambda args, v: None if args.keys is None else
                  _common.release_schema(v["original"], v["synthetic"], args)),
                 ("selected", lambda args, v: parse_records(
                     args.selected, len(v["original"]), "--selected"))),
          files=_files, text=lambda res, args: res.summary_text(), row_order=False)


_EPILOG = """\
examples:
  bayes-risk disclosure CEdata.csv syn/scenario1_syn*.csv --keys Age Urban Marital \\
      --target Income --categorical Urban Marital Tenure --out disc
  bayes-risk disclosure CEdata.csv syn_cart/ --keys Age Urban Marital --target Income \\
      --categorical Urban Marital Tenure --ngroups-target 10 --out disc_grouped

outputs (in --out, written atomically; one row per synthetic dataset, synthpop's names):
  ident.csv               syn, UiO, UiS, UiOiS, repU (percentages)
  attrib.csv              syn, Dorig, Dsyn, iS, DiS, DiSCO, DiSDiO (percentages),
                          max_denom, mean_denom (records per DiSCO key-target cell)
  allCAPs.csv             syn, baseCAPd, CAPd, CAPs, DCAP, TCAP (percentages)
  replicated_uniques.csv  syn and synthpop's replicated.uniques() on the keys and the target:
                          Original, Synthetic, Synthetic uniques in original, Replicated
                          uniques (numbers and percentages)
  summary.json            all of the above, their means over datasets, the original's sample
                          uniques and k-anonymity counts on the keys, per-dataset diagnostics
                          (records over --denom-lim, exclusions), settings and warning codes
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``disclosure`` sub-command."""
    p = subparsers.add_parser("disclosure",
                              help="empirical disclosure measures of synthpop (repU, DiSCO, TCAP, "
                              "...)",
                              description="Compute the identity disclosure measures (UiO, UiS, "
                              "UiOiS, repU), attribute disclosure measures (Dorig, Dsyn, iS, DiS, "
                              "DiSCO, DiSDiO) and correct attribution probabilities (baseCAPd, "
                              "CAPd, CAPs, DCAP, TCAP) of synthpop's disclosure() (Raab, Nowok & "
                              "Dibben, 'Practical privacy metrics for synthetic data'), and "
                              "replicated uniques, for a set of keys (quasi-identifiers) and one "
                              "target, with the original's sample uniques and k-anonymity counts "
                              "on the keys.", epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, recoded=True)
    add_type_arguments(p)
    # disclosure_measures' arguments and what its ExclusionSpec leaves out, declared by the library
    add_argument_options(p, "bayes_risk.disclosure.measures:disclosure_measures")
    add_spec_options(p, ExclusionSpec)
    add_argument_options(p, RUN.function)  # disclosure_run's --differencing
    p.add_argument("--selected", default=None, metavar="FILE",
                   help="with --differencing: the records selected for synthesis, one 0-based "
                   "record number per line (default: the records the release changed)")
    add_run_arguments(p, RUN, "summary.json and one CSV per measure family",
                      seed=NO_SEED, check="the release SYN")
    return p
