"""Arguments of ``bayes-risk audit`` (run: :mod:`bayes_risk.cli.audit`)."""

from __future__ import annotations

import argparse

from bayes_risk._utility_specs import COMBINING_RULES, RULES_HELP, PropensitySpec
from bayes_risk.cli._common import (
    RECORDS_HELP,
    add_input_arguments,
    add_run_arguments,
    add_type_arguments,
)
from bayes_risk.cli.parsers import add_spec_options
from bayes_risk.cli.parsers.attribute import REFIT_CACHE_HELP, REFIT_COST_HELP
from bayes_risk.measures import measures

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
  attribute/       attribute risk of every record: --model, or the plug-in likelihood of a
                   CART / random-forest release (skipped, with the reason, otherwise)
  membership/      membership risk: --holdout and --model (skipped otherwise)
  attacks/         anonymeter's singling-out, linkability and inference risk (each
                   synthesized column guessed from the others): --holdout (skipped otherwise)
  disclosure/      synthpop's empirical measures, one run per --target, and sdcMicro's
                   risk of the original on the keys (original_risk/: individual and global
                   re-identification risk, k-anonymity, SUDA2, l-diversity of the targets;
                   --weights for the Benedetti-Franconi risk), a baseline of the original
a step that cannot run is reported as skipped with its reason; every warning is listed.
a figure that cannot depend on the release (the intruder matches on unsynthesized columns
only) is a baseline of the original, listed apart from the verdict (RELEASE_INDEPENDENT).

exit status: 0 the audit ran; 2 bad input, checked before the first step (or a step failed
on the input: nothing is written; --skip STEP audits without it); 1 a step failed for
another reason: the report is written and its verdict opens with "The audit is incomplete".

thresholds of the verdict lines (--threshold NAME=VALUE; defaults):
  s_pmse=10 overlap=0.5 expected_match_rate=0.01 true_match_rate=0.01 prop_top=0.1
  prop_evidence=0.1 evidence_factor=3 repU=1 DiSCO=1 membership_advantage=0.05
  membership_share=0.01 membership_probability=0.9 singling_out_risk=0.05
  linkability_risk=0.05 inference_risk=0.05
  (each in the unit of the key it names in the files, named under "units" in summary.json:
  repU and DiSCO in per cent, from 0 to 100; expected_match_rate, true_match_rate,
  prop_top, prop_evidence, membership_share and the risks of anonymeter's attacks are
  fractions from 0 to 1: the verdict shows every rate and its threshold in per cent,
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
                              "the step's start).", epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, synthetic="the release: a SyntheticData folder written by "
                        "'bayes-risk synthesize' (its manifest gives roles and method) or one "
                        "file per dataset", metavar="RELEASE", recoded=True)
    p.add_argument("--model", default=None, metavar="DIR",
                   help="fitted model folder written by 'bayes-risk fit' (attribute risk); "
                   "not needed for a CART or random-forest release")
    p.add_argument("--known", nargs="+", required=True, metavar="COL",
                   help="columns the intruder knows (identification; keys of the empirical "
                   "measures)")
    p.add_argument("--synthesized", nargs="+", default=None, metavar="COL",
                   help="synthesized columns (default: the release manifest's, else the "
                   "columns that differ from the original)")
    add_type_arguments(p)
    g = p.add_argument_group("settings (each default is stated in the report)")
    g.add_argument("--radius", action="append", default=[], metavar="COL=R|R",
                   help="the radius reported beside the worst case (repeat per column, or one "
                   "number for every numeric known column; default 0.1, Hornby & Hu's "
                   "convention)")
    g.add_argument("--radius-type", choices=["percentage", "absolute", "quantile-sd"],
                   default="percentage", help="how --radius is read (default percentage)")
    g.add_argument("--radius-sweep", default="0.01,0.025,0.05,0.1,0.2,0.3,0.5,1",
                   metavar="R1,R2,...",
                   help="radii of the worst-case radius search (default Hornby & Hu's grid "
                   "widened to 1), or 'none' (the verdict then reads --radius, not the worst "
                   "case); every numeric known column is searched, synthesized or not, with 0 "
                   "(exact matching) added to every grid")
    g.add_argument("--known-sweep", action="store_true",
                   help="add to the identification step the risk for every subset of the "
                   "known columns, the Pareto frontier and the drivers of the risk (Shapley "
                   "values, per-level contributions), and to the attribute step the same over "
                   "the synthesized known columns known of the record's own values; off by "
                   "default (one run per subset)")
    g.add_argument("--known-fractions", nargs="+", type=float, default=None, metavar="F",
                   help="add to the attribute step the risk when the intruder knows only these "
                   "shares in [0, 1] of the other records (1: the worst case; class P models; "
                   "the refits made once); off by default (one run per share)")
    g.add_argument("--target", nargs="+", default=None, metavar="COL",
                   help="targets of the empirical measures (default: the synthesized columns "
                   "the intruder does not know)")
    g.add_argument("--weights", default=None, metavar="COL",
                   help="survey weights of the original's records (a column of ORIGINAL): the "
                   "disclosure step's baseline of the original, sdcMicro's individual risk, is "
                   "the Benedetti-Franconi risk with them; default: none, the risk is 1/f_k")
    g.add_argument("--ngroups-target", default="10", metavar="N|none",
                   help="group a numeric target into about N groups (default 10; none: every "
                   "value is a level)")
    g.add_argument("--records", default=None, metavar="RANGE|FILE",
                   help=f"records for attribute risk (default all): {RECORDS_HELP}")
    g.add_argument("--attribute-estimator", default="auto", choices=["auto", "stabilised", "is"],
                   help="estimator of the attribute step (as 'bayes-risk attribute "
                   "--estimator'; default auto: stabilised for class P models)")
    g.add_argument("--refit-draws", type=int, default=None, metavar="N",
                   help="kept draws per chain of each refit of the attribute step's stabilised "
                   "estimator (default: the model's draws). " + REFIT_COST_HELP)
    g.add_argument("--refit-cache", default=None, metavar="DIR", help=REFIT_CACHE_HELP)
    g.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                   help="verdict threshold (repeat; names and defaults below)")
    # the registered measures' steps (the audit checks the names given: a measure of another
    # distribution is a step too, and --help does not read the installed metadata)
    steps = [m.name.replace("_", "-") for m in measures(installed=False)]
    p.add_argument("--skip", nargs="+", default=None, metavar="STEP",
                   help="steps not to run (reported as skipped): " + ", ".join(steps))
    p.add_argument("--before", default=None, metavar="DIR",
                   help="an earlier audit folder of the same ORIGINAL (e.g. of the release "
                   "before 'bayes-risk remedy'): the report and summary.json show its verdict "
                   "lines beside this audit's")
    p.add_argument("--holdout", default=None, metavar="FILE",
                   help="records of the population that were not in ORIGINAL (.csv or "
                   ".parquet): the membership step runs with them and --model (skipped "
                   "otherwise; one refit of the model per dataset), the attacks step "
                   "(anonymeter's singling out and linkability) with them alone")
    p.add_argument("--linkability", nargs=2, default=None, metavar=("COLS_A", "COLS_B"),
                   help="attacks step: the columns of the intruder's two tables, each a "
                   "comma-separated list (default: the --known columns and the others)")
    p.add_argument("--membership-selection", default=None, metavar="RULE",
                   help="membership step of a release that synthesized selected records only "
                   "(a model fitted with --records): how they were selected, 'independent' or "
                   "a rule on a record's own values such as \"Income > 150000 or Age >= 90\" "
                   "(see bayes-risk membership --help, --selection); recorded in the settings")
    p.add_argument("--combining-rules", choices=("auto", *COMBINING_RULES), default="auto",
                   help=RULES_HELP + " (the utility step)")
    add_spec_options(p, PropensitySpec)
    p.add_argument("--imputed", nargs="+", default=None, metavar="COL",
                   help="columns whose missing values the synthesizer imputed, compared on the "
                   "original's observed cells in the utility step ('none': missing values "
                   "compared as a level; default: recorded in the release's manifest, else "
                   "inferred; see bayes-risk utility --help)")
    p.add_argument("--show-confidential-values", action="store_true",
                   help="show the known (quasi-identifier) values of the records most at risk "
                   "in the report, and write the confidential records' values into its files "
                   "(off by default: record numbers only; every file and report.zip withhold "
                   "them too: the predicates that single out a record of the original or the "
                   "holdout, the original's smallest and largest values)")
    add_run_arguments(p, "bayes_risk.cli.audit",
                      "report.html, report.md, summary.json and one folder per step",
                      dask="targets (identification) or records (attribute)",
                      check="the release SYN or the --model", other_model=True)
    return p
