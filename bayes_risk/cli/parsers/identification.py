"""Arguments of ``bayes-risk identification`` (run: :mod:`bayes_risk.cli.identification`)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk.cli._common import add_input_arguments, add_run_arguments, add_type_arguments
from bayes_risk.cli.parsers import add_argument_options, add_spec_options
from bayes_risk.identification.specs import (
    IDENTIFICATION_ARGUMENTS,
    KNOWN_SWEEP_ARGUMENTS,
    MATCHING,
    RADIUS_SEARCH_ARGUMENTS,
    RADIUS_SWEEP_ARGUMENTS,
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
    add_argument_options(p, IDENTIFICATION_ARGUMENTS)  # identification_risk's
    add_spec_options(p, MatchSpec, PopulationSpec)
    add_argument_options(p, RADIUS_SWEEP_ARGUMENTS, RADIUS_SEARCH_ARGUMENTS, KNOWN_SWEEP_ARGUMENTS)
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
