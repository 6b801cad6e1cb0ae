"""``bayes-risk original-risk``: sdcMicro's re-identification risk of the original on its keys."""

from __future__ import annotations

import argparse

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Compute the measures and write the output folder."""
    import pandas as pd

    from bayes_risk._specs import argument_values
    from bayes_risk.cli._common import read_records_table, write_run
    from bayes_risk.disclosure import original_risk
    from bayes_risk.disclosure.specs import ORIGINAL_RISK_ARGUMENTS

    original = read_records_table(args.original, "ORIGINAL")
    res = original_risk(original, **argument_values(ORIGINAL_RISK_ARGUMENTS, vars(args)))
    d = res.to_dict()
    d["inputs"] = {"original": str(args.original)}
    tables = {"records.csv": lambda path: res.records.reset_index(drop=True).to_csv(
        path, index_label="record")}
    if res.suda is not None:
        lev = res.suda["attribute_level_contributions"].rename(columns={"attribute": "level"})
        tot = res.suda["attribute_contributions"].assign(level="(all)")
        tables["suda_contributions.csv"] = pd.concat([tot, lev], ignore_index=True)[
            ["variable", "level", "contribution"]]
    write_run(args, res.headline().splitlines(), d, tables=tables)
    return 0
