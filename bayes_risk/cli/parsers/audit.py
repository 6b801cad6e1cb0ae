"""Arguments of ``bayes-risk audit`` (run: :mod:`bayes_risk.cli.audit`)."""

from __future__ import annotations

import argparse
import textwrap

from bayes_risk._thresholds import builtin_thresholds
from bayes_risk.auditing.settings import SETTINGS_GROUP, AuditSettings
from bayes_risk.cli._common import (
    add_input_arguments,
    add_run_arguments,
    add_type_arguments,
)
from bayes_risk.cli.parsers import add_argument_options, add_spec_options

__all__ = ["add_parser"]


_EPILOG = """\
example (the shared CE data, a CART release of 20 datasets; the intruder of Hornby & Hu
2021 knows Age, Urban and Marital, released unchanged, and the true Income, synthesized):
  bayes-risk synthesize CEdata.csv --method cart --synthesize Tenure Expenditure Income \\
      --categorical Urban Marital Tenure Educ -m 20 --random-seed 1 --out ce_cart
  bayes-risk audit CEdata.csv ce_cart --known Age Urban Marital Income --out ce_audit

steps (each writes the files of its sub-command into a sub-folder of --out):
  utility/         pMSE (null by partial or complete synthesis), interval overlap,
                   per-variable comparisons (marginals.csv, twoway.csv)
  identification/  identification risk (per dataset and pooled) and the radius search
  posterior_identification/
                   identification risk over posterior-predictive replicates of --model
                   or of a rebuilt CART release (skipped otherwise)
  attribute/       attribute risk of every record: --model, or the plug-in likelihood of a
                   CART / random-forest release (skipped, with the reason, otherwise)
  membership/      membership risk: --holdout and --model (skipped otherwise)
  attacks/         anonymeter's singling-out, linkability and inference risk (each
                   synthesized column guessed from the others): --holdout (skipped otherwise)
  disclosure/      synthpop's empirical measures, one run per --target, and sdcMicro's
                   risk of the original on the keys (original_risk/: individual and global
                   re-identification risk, k-anonymity, SUDA2, l-diversity of the targets;
                   --weights for the Benedetti-Franconi risk), a baseline of the original
  relative_difference/
                   relative difference of the largest value of each synthesized numeric
                   column and the intruder's estimate of it (Kim et al. 2018)
  closest_match/   records whose closest released record is their own (Domingo-Ferrer
                   et al. 2001; skipped for a full synthesis)
a step that cannot run is reported as skipped with its reason; every warning is listed.
a figure that cannot depend on the release (the intruder matches on unsynthesized columns
only) is a baseline of the original, listed apart from the verdict (RELEASE_INDEPENDENT).

exit status: 0 the audit ran; 2 bad input, checked before the first step (or a step failed
on the input: nothing is written; --skip STEP audits without it); 1 a step failed for
another reason: the report is written and its verdict opens with "The audit is incomplete".

thresholds of the verdict lines (--threshold NAME=VALUE; defaults):
{defaults}
  (each in the unit of the key it names in the files, named under "units" in summary.json:
  repU and DiSCO in per cent, from 0 to 100; expected_match_rate, true_match_rate,
  prop_top, prop_evidence, membership_share, closest_match and the risks of anonymeter's
  attacks are fractions from 0 to 1, relative_difference a fraction from 0 up (a line
  below it exceeds): the verdict shows every rate and its threshold in per cent,
  expected_match_rate=0.01 as 1 %; membership_advantage is AUC - 0.5, from 0 to 0.5; a
  member counts as exposed when its posterior membership probability exceeds
  membership_probability; a record counts in prop_evidence when the release multiplies the
  intruder's odds on its true values by evidence_factor (above 1) or more. A threshold
  outside its quantity's range is refused: singling_out_risk=5 or expected_match_rate=1
  could never be exceeded, so the verdict would pass the line whatever the release)

each verdict line states its spread over the datasets (min-max, or "pooled, no spread"); a
line past its threshold names its cause, computed from the run, and the remedies that would
move it (in the headline, the report and summary.json); the report's header names the
intruder of every line.
"""

#: the package's measures' thresholds at their defaults, as their records declare them
_DEFAULTS = textwrap.fill(" ".join(f"{t.name}={t.default:g}" for t in builtin_thresholds()),
                          90, initial_indent="  ", subsequent_indent="  ")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``audit`` sub-command."""
    p = subparsers.add_parser("audit", help="full disclosure audit of a release: every measure, "
                              "one HTML report",
                              description="Audit a synthetic release against its confidential "
                              "table: utility, identification risk with a radius sweep, attribute "
                              "risk (with a fitted model or a CART / random-forest release) and "
                              "synthpop's empirical disclosure measures, with a self-contained "
                              "HTML report (and Markdown) whose first screen gives the verdict "
                              "against thresholds. With a fitted Bayesian model the attribute "
                              "step is usually most of the time: it refits the model once per "
                              "synthetic dataset (see --refit-draws; the estimate is printed at "
                              "the step's start).", epilog=_EPILOG.format(defaults=_DEFAULTS),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, synthetic="the release: a SyntheticData folder written by "
                        "'bayes-risk synthesize' (its manifest gives roles and method) or one "
                        "file per dataset", metavar="RELEASE", recoded=True)
    p.add_argument("--model", default=None, metavar="DIR",
                   help="fitted model folder written by 'bayes-risk fit' (attribute risk); "
                   "not needed for a CART or random-forest release")
    add_type_arguments(p)
    p.add_argument_group(SETTINGS_GROUP)
    add_argument_options(p, "bayes_risk.auditing.api:audit")
    add_spec_options(p, AuditSettings, omit=("attribute_records",))
    add_spec_options(p, AuditSettings, fields=("attribute_records",))  # the group's last
    p.add_argument("--before", default=None, metavar="DIR",
                   help="an earlier audit folder of the same ORIGINAL (e.g. of the release "
                   "before 'bayes-risk remedy'): the report and summary.json show its verdict "
                   "lines beside this audit's")
    p.add_argument("--holdout", default=None, metavar="FILE",
                   help="records of the population that were not in ORIGINAL (.csv or "
                   ".parquet): the membership step runs with them and --model (skipped "
                   "otherwise; one refit of the model per dataset), the attacks step "
                   "(anonymeter's singling out and linkability) with them alone")
    add_run_arguments(p, "bayes_risk.cli.audit",
                      "report.html, report.md, summary.json and one folder per step",
                      dask="targets (identification) or records (attribute)",
                      check="the release SYN or the --model", other_model=True)
    return p
