"""``bayes-risk original-risk``: its arguments and its run (the runner's row)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk.cli._common import NO_SEED, add_input_arguments, add_run_arguments
from bayes_risk.cli._runner import Run
from bayes_risk.cli.parsers import add_argument_options

__all__ = ["add_parser", "RUN"]


def _suda_contributions(res: Any) -> Any:
    """Each key's share of the SUDA2 score, then each level's (``None`` without SUDA2)."""
    if res.suda is None:
        return None
    import pandas as pd

    lev = res.suda["attribute_level_contributions"].rename(columns={"attribute": "level"})
    tot = res.suda["attribute_contributions"].assign(level="(all)")
    return pd.concat([tot, lev], ignore_index=True)[["variable", "level", "contribution"]]


#: original_risk of ORIGINAL alone
RUN = Run("bayes_risk.disclosure.original_risk:original_risk",
          inputs=("original",),
          tables={"records.csv": lambda res: lambda path: res.records.reset_index(
                      drop=True).to_csv(path, index_label="record"),
                  "suda_contributions.csv": _suda_contributions})


_EPILOG = """\
examples:
  bayes-risk original-risk CEdata.csv --keys Age Urban Marital --sensitive Tenure \\
      --out ce_baseline
  bayes-risk original-risk survey.csv --keys sex agegr region --weights w --out baseline

outputs (in --out, written atomically):
  records.csv            one row per record (record = 0-based row number), sdcMicro's names:
                         fk, Fk, risk; suda_score, dis_suda_score, min_msu_size,
                         <key>_contribution; <col>_Distinct_Ldiversity, <col>_Entropy_Ldiversity,
                         <col>_Recursive_Ldiversity per --sensitive column
  suda_contributions.csv each key's share (%) of the total SUDA2 score, and of each level
  summary.json           global risk (expected re-identifications), k-anonymity counts, SUDA2
                         summary (MSUs by size, the DIS-score table), l-diversity summaries,
                         settings and warning codes

every figure is computed on ORIGINAL alone: it is the same for every synthetic release (the
audit lists it as a baseline of the original, RELEASE_INDEPENDENT).
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``original-risk`` sub-command."""
    p = subparsers.add_parser("original-risk",
                              help="sdcMicro's re-identification risk of the original on its keys "
                              "(a baseline)",
                              description="Compute sdcMicro's risk measures of the confidential "
                              "table on a set of keys (quasi-identifiers), the baseline a release "
                              "is compared with: the individual re-identification risk of every "
                              "record (with survey weights the Benedetti-Franconi negative "
                              "binomial risk, F_k the sum of the weights of the key cell; "
                              "without, the sample-based 1/f_k) and the global risk (expected "
                              "re-identifications), the records violating k-anonymity, SUDA2 "
                              "scores (minimal sample uniques, DIS score, the keys' "
                              "contributions; Elliot et al. 2002) and l-diversity of sensitive "
                              "columns (Machanavajjhala et al. 2007), as sdcMicro's measure_risk, "
                              "suda2 and ldiversity.", epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, synthetic=None)
    # the arguments of original_risk, declared with their checks by the library
    add_argument_options(p, "bayes_risk.disclosure.original_risk:original_risk")
    add_run_arguments(p, RUN,
                      "records.csv, suda_contributions.csv and summary.json",
                      seed=NO_SEED)
    return p
