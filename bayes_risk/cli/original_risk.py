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
    g, kc = res.global_risk, res.key_cells
    lines = [
        f"Risk of the original on the keys {', '.join(res.keys)}: "
        f"{g['expected_reidentifications']:,.4g} expected re-identifications among "
        f"{kc['n_records']:,} records (global risk {g['global_risk_pct']:.3g} %)",
        dict(res.summary().header)["individual risk"],
        "records violating k-anonymity (f_k < k): " + "; ".join(
            f"k = {k}: {v['n_violating']:,} ({v['pct_violating']:.3g} %)"
            for k, v in res.k_anonymity.items()),
    ]
    if res.suda is not None:
        lines.append(f"SUDA2: {res.suda['n_records_with_msu']:,} records with a minimal sample "
                     "unique; contributions " + ", ".join(
                         f"{r.variable} {r.contribution:.3g} %"
                         for r in res.suda["attribute_contributions"].itertuples()))
    for c, s in res.l_diversity.items():
        lines.append(f"l-diversity of {c}: {s['n_records_l1']:,} records in key cells with one "
                     f"value (min distinct l {s['min']:g}, median {s['median']:g})")
    write_run(args, lines, d, tables=tables)
    return 0
