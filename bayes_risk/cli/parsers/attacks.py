"""``bayes-risk attacks``: its arguments and its run (the runner's row)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk._attack_specs import (
    GuessSpec,
    PredicateSpec,
)
from bayes_risk.cli._common import add_input_arguments, add_run_arguments, add_type_arguments
from bayes_risk.cli._runner import Run
from bayes_risk.cli.parsers import add_argument_options, add_spec_options

__all__ = ["add_parser", "RUN"]


def _check(args: argparse.Namespace) -> None:
    """Some attack to run beside ``--singling-out none``."""
    from bayes_risk.exceptions import ValidationError

    chosen = args.singling_out or []  # not given: both modes (the function's default)
    if "none" in chosen and set(chosen) != {"none"}:
        raise ValidationError("--singling-out none cannot be given with a mode.",
                              code="OPTION_CONFLICT")
    if "none" in chosen and args.linkability is None and args.inference is None:
        raise ValidationError("nothing to run: --singling-out none needs --linkability "
                              "COLS_A COLS_B or --inference SECRET.", code="OPTION_REQUIRED")


#: attacks_run of ORIGINAL, SYN and --holdout: the attacks given, each with its own options (no
#: record paired with a row: ORIGINAL in another row order is the release's)
RUN = Run("bayes_risk.attacks.run:attacks_run", check=_check,
          specs={"singling_out.predicates": PredicateSpec, "inference.guess": GuessSpec},
          argument_groups={"singling_out": "bayes_risk.attacks.singling_out:singling_out_risk",
                           "linkability": "bayes_risk.attacks.linkability:linkability_risk",
                           "inference": "bayes_risk.attacks.inference:inference_risk"},
          reads=("holdout", "schema", "random_seed"), inputs=("original", "synthetic", "holdout"),
          files=lambda res, args: res.files(), row_order=False)

_EPILOG = """\
examples:
  bayes-risk attacks ce_train.csv syn --holdout ce_holdout.csv --categorical Urban Marital \\
      Tenure --random-seed 1 --out attacks
  bayes-risk attacks ce_train.csv syn --holdout ce_holdout.csv --categorical Urban Marital \\
      Tenure --singling-out none --linkability Age,Urban,Marital Income,Expenditure \\
      --n-neighbors 5 --random-seed 1 --out linkability
  bayes-risk attacks ce_train.csv syn --holdout ce_holdout.csv --categorical Urban Marital \
      Tenure --singling-out none --inference Income Tenure --random-seed 1 --out inference

outputs (in --out, written atomically):
  singling_out.csv          one row per synthetic dataset and mode: predicates written, the
                            main, control and baseline successes and rates (Wilson), the risk
                            and its interval
  singling_out_queries.csv  every predicate, and whether it singles out a record of ORIGINAL
                            and of --holdout (with --groups: the group of its synthetic row
                            and of the records it singles out)
  linkability.csv           one row per synthetic dataset and k = 1..--n-neighbors: records
                            linked by the three attacks, rates, risk and interval
  linkability_records.csv   per dataset and attacked record: role, row, the smallest k that
                            links it, whether equally distant rows were drawn
  inference.csv             one row per synthetic dataset and secret: secrets guessed right by
                            the three attacks, rates, risk and interval
  inference_records.csv     per dataset, secret and attacked record: role, row, whether the
                            guess was right, whether equally distant rows were drawn
  singling_out_groups.csv,  (with --groups COL) one row per dataset (and mode, secret) and
  linkability_groups.csv,   level of COL: the attempts of that level (predicates written on a
  inference_groups.csv      synthetic row of it; attacked records of it), their successes,
                            rates, risk and interval
  summary.json              all of the above with the settings and warning codes
  singling_out.png, linkability.png, inference.png   the risk with its interval
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bayes-risk attacks``."""
    p = subparsers.add_parser("attacks", usage="%(prog)s ORIGINAL SYN [SYN ...] [--holdout FILE] "
                              "[options] --out DIR",
                              help="singling-out, linkability and inference risk (anonymeter's "
                              "attacks, against a holdout)",
                              description="Run anonymeter's singling-out, linkability and "
                              "inference attacks "
                              "(Giomi et al. 2023) on each synthetic dataset: the attack on the "
                              "records of ORIGINAL (used for the synthesis), the same attack on "
                              "--holdout (records of the population it did not use: the control) "
                              "and a baseline of random guesses. The risk is the main attack's "
                              "success beyond the control's, (r_main - r_control) / (1 - "
                              "r_control), with its Wilson-score interval, clipped to [0, 1] as "
                              "anonymeter does (docs: methods page 'Singling out, "
                              "linkability and inference'). Without --holdout the risk is the "
                              "main attack's success rate (warning NO_HOLDOUT).", epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, " the release was made from", recoded=True)
    p.add_argument("--holdout", default=None, metavar="FILE",
                   help="records of the same population that the synthesis did not use "
                   "(anonymeter's control set; a file of any format ORIGINAL takes), ideally as "
                   "many as ORIGINAL")
    # the attacks' arguments and settings, declared with their checks by the library
    attacks = RUN.argument_groups
    add_argument_options(p, attacks["singling_out"])
    add_spec_options(p, PredicateSpec)
    add_argument_options(p, attacks["linkability"], attacks["inference"])
    add_spec_options(p, GuessSpec)
    add_argument_options(p, RUN.function)  # the arguments every attack takes
    add_type_arguments(p)
    add_run_arguments(p, RUN,
                      "singling_out.csv, linkability.csv, summary.json and plots",
                      check="SYN")
    return p
