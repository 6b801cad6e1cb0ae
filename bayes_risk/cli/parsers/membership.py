"""``bayes-risk membership``: its arguments and its run (the runner's row)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk.cli._common import add_input_arguments, add_run_arguments
from bayes_risk.cli._runner import Run
from bayes_risk.cli.parsers import add_argument_options, add_spec_options
from bayes_risk.membership.specs import AttackSpec, RatioSpec

__all__ = ["add_parser", "RUN"]

_RISK = "bayes_risk.membership.api:membership_risk"
#: membership_risk of --model, ORIGINAL and SYN (records.csv with its index)
RUN = Run(_RISK,
          specs={"attack": AttackSpec, "ratio": RatioSpec},
          reads=("holdout", "model", "records", "progressbar", "random_seed",
                 "allow_other_model"),
          inputs=("model", "original", "synthetic", "holdout", "records"),
          tables={"records.csv": lambda res: res.records.to_csv},
          figures={"p_member_hist.png": "p_member", "roc.png": "roc", "dcr.png": "dcr"})

_EPILOG = """\
examples:
  bayes-risk fit acs_train.csv --method dpmpm --out model
  bayes-risk synthesize acs_train.csv --model model -m 2 --out syn
  bayes-risk membership acs_train.csv syn --model model --holdout acs_holdout.csv \\
      --random-seed 1 --out membership
  # a release that synthesized the records at risk only (fit --records ...):
  bayes-risk membership ce.csv syn --model model --holdout ce_holdout.csv \\
      --selection "Income > 150000 or Age >= 90" --out membership

outputs (in --out, written atomically):
  records.csv       one row per target (members: rows of ORIGINAL; non-members: rows of
                    --holdout and look-alikes drawn from the model): role, source, row, slot,
                    log_lr, p_member, khat_max, ess_min, dcr, flag_codes (partial
                    synthesis: unsynthesized_match, log_p_unsynthesized; --selection:
                    slot_selected, released_whole, selected_by_rule)
  summary.json      share of members above --threshold, the attack's advantage over the base
                    rate (AUC - 0.5, TPR - FPR) with bootstrap intervals, the distance
                    baseline beside it, flag counts, settings and warning codes
  p_member_hist.png, roc.png, dcr.png
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bayes-risk membership``."""
    p = subparsers.add_parser(
        "membership",
        usage="%(prog)s ORIGINAL SYN [SYN ...] --model DIR [--holdout FILE] [options] --out DIR",
        help="membership disclosure risk (posterior probability that a record was in the data)",
        description=(
            "Estimate, for each record of ORIGINAL (members) and of --holdout or look-alikes "
            "drawn from the model (non-members), the intruder's posterior probability that the "
            "record was in the confidential data, from the fitted Bayesian model's posterior "
            "draws and the released datasets (docs: methods page 'Membership disclosure risk'), "
            "with the distance to the closest released record (SDMetrics, anonymeter) beside "
            "it. Fully synthetic releases of DPMPM, Poisson-mixture and sequential-regression "
            "models, partially synthetic releases of sequential regressions (categorical or "
            "numeric unsynthesized columns), also when only selected records were synthesized "
            "and --selection states the rule, and CART releases without smoothing, fully "
            "synthetic or with unsynthesized columns (every record synthesized; the plug-in "
            "likelihood given the fitted splits, no refits; docs: 'CART releases'); other "
            "models and releases are refused "
            "(MEMBERSHIP_MODEL_UNSUPPORTED, MEMBERSHIP_PARTIAL_SYNTHESIS). Cost: for a "
            "Bayesian model one refit per synthetic dataset, as the stabilised attribute-risk "
            "estimator (estimated before they run; --quiet silences it); for CART no refit."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_arguments(p, " the model was fitted to")
    p.add_argument("--model", required=True, metavar="DIR",
                   help="fitted model folder written by 'bayes-risk fit' (DPMPM or Poisson "
                   "mixture, full synthesis; sequential regressions and CART, full or "
                   "partial synthesis)")
    p.add_argument("--holdout", default=None, metavar="FILE",
                   help="records of the same population that were not in ORIGINAL "
                   "(non-members; a file of any format ORIGINAL takes)")
    add_argument_options(p, _RISK, fields=("records",))
    add_spec_options(p, AttackSpec, RatioSpec)
    add_argument_options(p, _RISK, fields=("population", "selection"))
    add_run_arguments(p, RUN, "records.csv, summary.json and plots",
                      check="the --model", other_model=True)
    return p
