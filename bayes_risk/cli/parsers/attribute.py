"""Arguments of ``bayes-risk attribute`` (run: :mod:`bayes_risk.cli.attribute`)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk.attribute.specs import (
    CLOSEST_MATCH_ARGUMENTS,
    KNOWN_CURVE_ARGUMENTS,
    KNOWN_SWEEP_ARGUMENTS,
    LARGEST_VALUE_ARGUMENTS,
    REFIT_COST_HELP,
    RELATIVE_DIFFERENCE_ARGUMENTS,
    EstimatorSpec,
    ScenarioSpec,
)
from bayes_risk.cli._common import RECORDS_HELP, add_input_arguments, add_run_arguments
from bayes_risk.cli.parsers import add_argument_options, add_spec_options

__all__ = ["add_parser", "SCENARIO_CHOICES", "LARGEST_VALUE_CHOICES"]

#: ``--scenario`` values; the last three are the Wei & Reiter largest-value scenarios
SCENARIO_CHOICES = ("worst-case", "partially-known", "empty", "two-records", "known-records",
                    "largest-value", "second-largest", "two-largest-sum")
LARGEST_VALUE_CHOICES = SCENARIO_CHOICES[5:]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bayes-risk attribute``."""
    p = subparsers.add_parser(
        "attribute",
        # ORIGINAL and SYN are required (checked by the run); argparse would show them optional
        usage="%(prog)s ORIGINAL SYN [SYN ...] [--model DIR] [--records RANGE|FILE] "
        "[options] --out DIR",
        help="attribute disclosure risk (intruder's posterior over each record's values)",
        description=(
            "Estimate, for each confidential record, the intruder's posterior probability of the "
            "record's true synthesized values among candidate values (Hu 2019), from a fitted "
            "Bayesian synthesis model and the released synthetic datasets. Default: worst-case "
            "intruder, one-variable-different candidates, uniform prior, stabilised estimator for "
            "class P models. A record's missing synthesized values (empty cells, and the codes "
            "declared when the model was fitted, such as -8) are not guessed: DPMPM and the MP "
            "Poisson mixture integrate them out; the CART and random-forest plug-ins hold them "
            "as released (the intruder knows which values are missing; docs: user guide, Missing "
            "values). "
            + REFIT_COST_HELP + "."
        ),
    )
    p.add_argument("--model", default=None, metavar="DIR",
                   help="fitted model folder written by 'bayes-risk fit'; omit for a CART or "
                   "random-forest release, whose synthesizer is refitted from the release's "
                   "manifest and ORIGINAL and checked to reproduce the release exactly (plug-in "
                   "likelihood; see the methods page, section Tree synthesizers: plug-in "
                   "likelihoods)")
    add_input_arguments(p, " the model was fitted to")
    p.add_argument("--records", default=None, metavar="RANGE|FILE",
                   help=f"records to evaluate (default: all records): {RECORDS_HELP}")
    p.add_argument("--candidates", default="one-variable", metavar="RULE",
                   help="candidate sets: one-variable (default), full, k-different:K, "
                   "grid:percent:A[:G], grid:additive:W[:G], grid:fixed:LO:HI[:G]; numeric "
                   "columns use a percent grid (default +/-10 %%, 11 points) and, where the true "
                   "value is 0, an additive grid of that fraction of the column's median non-zero "
                   "|value| (recorded in summary.json)")
    p.add_argument("--prior", default="uniform", metavar="PRIOR",
                   help="intruder prior: uniform (default), truth-weighted:K, empirical[:ALPHA], "
                   "model-predictive")
    p.add_argument("--scenario", default=None, choices=list(SCENARIO_CHOICES),
                   help="what the intruder knows: worst-case (default: every other record), "
                   "partially-known (also --known of the target's own values; implied by "
                   "--known), empty (Wang & Reiter's low-risk intruder: nothing about the other "
                   "records; the record's synthetic values stand in for the posterior), "
                   "two-records (Wei & Reiter: every record except the two of each --pairs pair, "
                   "guessed jointly; class P models), known-records (only the records of "
                   "--known-records, or a random --known-fraction of them; class P models; "
                   "implied by either option); for the largest value of --column (Wei & "
                   "Reiter; Poisson-mixture models): largest-value (every other record known), "
                   "second-largest (only the second-largest record, plus the column total with "
                   "--total-known), two-largest-sum (every record but the two largest, and their "
                   "sum)")
    p.add_argument("--pairs", default=None, metavar="PAIRS|FILE",
                   help="the pairs of records of --scenario two-records (implied by --pairs), "
                   "such as '0:1,2:5', or a text file with one pair 'I J' (or 'I,J', 'I:J') per "
                   "line; records.csv then has one row per pair, numbered from 0 in the order "
                   "given (column 'pair'), with its record_1 and record_2")
    p.add_argument("--known-records", default=None, metavar="RANGE|FILE",
                   help="the records the intruder knows (--scenario known-records; the target's "
                   f"own record is never among them): {RECORDS_HELP}")
    # the arguments of largest_value_risk, known_fraction_curve and attribute_known_sweep
    add_argument_options(p, KNOWN_CURVE_ARGUMENTS, LARGEST_VALUE_ARGUMENTS, KNOWN_SWEEP_ARGUMENTS)
    # the business-data measures, which read the release alone (no model)
    add_argument_options(p, RELATIVE_DIFFERENCE_ARGUMENTS, CLOSEST_MATCH_ARGUMENTS)
    add_spec_options(p, ScenarioSpec, EstimatorSpec)
    add_run_arguments(p, "bayes_risk.cli.attribute",
                      "records.csv, summary.json and diagnostic plots",
                      dask="records", check="the release SYN or the --model", other_model=True)
    return p
