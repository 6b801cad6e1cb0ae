"""Arguments of ``bayes-risk identification`` (run: :mod:`bayes_risk.cli.identification`)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk.cli._common import add_input_arguments, add_run_arguments, add_type_arguments
from bayes_risk.cli.parsers import add_argument_options, add_spec_options
from bayes_risk.identification.specs import (
    INTRUDER,
    MATCHING,
    REPLICATES,
    REPLICATES_FIELDS,
    MatchSpec,
    PopulationSpec,
)

__all__ = ["add_parser"]


_DESCRIPTION = """\
Estimate how likely an intruder who knows the true quasi-identifiers of the original records (or of
an external target table) is to find them among the released partially synthetic records (Reiter &
Mitra 2009; Hornby & Hu 2021). Writes DIR/records.csv (one row per target; with --aggregation
per-dataset and --records-output per-dataset one row per target and dataset; none with
--records-output none), DIR/summary.json (file-level measures per dataset and averaged, the
settings and warning codes) and, with --radius-sweep, DIR/radius_sweep.csv and
DIR/radius_sweep.png; with --radius-search, DIR/radius_search.csv and DIR/radius_search.png (the
worst case over the radii of every numeric known column, as the audit reads it); with
--known-sweep, DIR/known_sweep.csv (one row per subset of the candidate known columns),
DIR/known_sweep_drivers.csv, DIR/known_sweep_levels.csv, DIR/known_sweep.png (risk against the
number of columns known, the frontier highlighted) and DIR/known_sweep_drivers.png. With --model,
the synthesized known columns are replicated R times from the fitted model's posterior predictive
(Drechsler & Reiter 2008, eq. 5) instead of using the m released datasets: summary.json then holds
each measure's Monte Carlo standard error (mc_se) and its spread over replicates
(replicate_quantiles), and DIR/running_estimate.png the running estimate with its +/- 2 MCSE band.

example:
  bayes-risk identification CEdata.csv syn1.csv syn2.csv \\
      --known-unsynthesized Age Urban Marital --known-synthesized Income \\
      --categorical Urban Marital Tenure --radius Age=0.1 --radius Income=0.1 \\
      --radius-type percentage --out risk/
"""


def add_parser(subparsers: Any) -> None:
    """Register ``bayes-risk identification``."""
    p = subparsers.add_parser("identification",
                              help="identification risk (matching known quasi-identifiers to "
                              "released records)", description=_DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, recoded=True)
    p.add_argument("--known-unsynthesized", nargs="+", default=[], metavar="COL",
                   help="known columns released unchanged")
    p.add_argument("--known-synthesized", nargs="+", default=[], metavar="COL",
                   help="known columns that were synthesized")
    add_type_arguments(p)
    p.add_argument_group(MATCHING)  # listed before the intruder's options
    a = p.add_argument_group(INTRUDER)
    a.add_argument("--aggregation", choices=["pooled", "per-dataset"], default=None,
                   help="pooled over datasets (Reiter-Mitra, default) or per dataset (Hornby-Hu)")
    add_spec_options(p, MatchSpec, PopulationSpec)
    a.add_argument("--selection", default=None, metavar="RULE",
                   help="the intruder knows why records were selected for synthesis (R, Hu "
                   "2019 §4.2.4): 'release' (the rule the release's manifest records, e.g. a "
                   "small-cell PMM release's sensitive cells), 'records' (the manifest's "
                   "synthesized records: the intruder knows which original records were "
                   "selected) or an expression on the known columns ('Income > 150000'); a "
                   "target known to be unselected then matches only unselected records, exactly; "
                   "one known to be selected only synthesized records")
    p.add_argument("--radius-sweep", default=None, metavar="R1,R2,...",
                   help="also compute the risk over these common radii (per dataset) and the "
                        "maximising radius (Hornby & Hu 2021 §4.1)")
    p.add_argument("--radius-search", nargs="?", const="default", default=None,
                   metavar="R1,R2,...",
                   help="the worst case over the intruder's radii, as the audit's verdict "
                        "reads it: every numeric known column searched over these radii "
                        "(default 0.01,0.025,0.05,0.1,0.2,0.3,0.5,1), 0 (exact) added, with the "
                        "run's --aggregation; the run's figures are at the radii of the largest "
                        "expected match risk unless --radius is given; writes "
                        "DIR/radius_search.csv and DIR/radius_search.png")
    k = p.add_argument_group("sensitivity to the intruder's knowledge (Hu 2019 §5)")
    k.add_argument("--known-sweep", nargs="+", default=None, metavar="COL",
                   help="also compute the risk for every subset of these candidate known "
                        "columns (up to --max-size, a greedy path beyond), the Pareto frontier "
                        "of risk against the number of columns known, Shapley values and "
                        "per-level contributions; a candidate listed in --known-synthesized is "
                        "synthesized, one in --known-unsynthesized is not, any other is "
                        "synthesized when its released values differ from the original's")
    k.add_argument("--max-size", type=int, default=None, metavar="K",
                   help="largest subset size evaluated exhaustively by --known-sweep "
                        "(default: every size)")
    p.add_argument("--records-output", choices=["per-target", "per-dataset", "none"],
                   default="per-target", help="records.csv with one row per target (default; "
                   "per-dataset aggregation: the record-level IR and counts over datasets), one "
                   "row per target and dataset (--aggregation per-dataset only), or no records.csv")
    p.add_argument_group(REPLICATES).add_argument(
        "--model", default=None, metavar="DIR",
        help="draw the replicates from this fitted model (a folder written by 'bayes-risk fit'); "
        "the word 'release' instead of DIR refits the CART synthesizer that made a CART release "
        "from its manifest")
    add_argument_options(p, REPLICATES_FIELDS)
    add_run_arguments(p, "bayes_risk.cli.identification",
                      "records.csv, summary.json, radius_sweep.csv/.png, "
                      "radius_search.csv/.png, "
                      "known_sweep*.csv/.png, running_estimate.png", dask="targets",
                      check="the release SYN or the --model", other_model=True)
