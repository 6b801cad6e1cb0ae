"""``bayes-risk disclosure``: synthpop's empirical disclosure measures of synthetic datasets.

::

    bayes-risk disclosure ORIGINAL.csv SYN1.csv [SYN2.csv ...] --keys COL ... --target COL \\
        [--categorical ...] [--ngroups-target N] [--denom-lim 5] [--compat synthpop] --out DIR

Writes ``DIR/summary.json``, ``DIR/ident.csv``, ``DIR/attrib.csv``, ``DIR/allCAPs.csv`` and
``DIR/replicated_uniques.csv``; the folder appears complete or not at all.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bayes_risk.cli._common import add_out_argument, add_quiet_argument, add_type_arguments

__all__ = ["add_parser", "run"]

_EPILOG = """\
examples:
  bayes-risk disclosure CEdata.csv syn/scenario1_syn*.csv --keys Age Urban Marital \\
      --target Income --categorical Urban Marital Tenure --out disc
  bayes-risk disclosure CEdata.csv syn_cart/ --keys Age Urban Marital --target Income \\
      --categorical Urban Marital Tenure --ngroups-target 10 --out disc_grouped

outputs (in --out, written atomically; one row per synthetic dataset, synthpop's names):
  ident.csv               syn, UiO, UiS, UiOiS, repU (percentages)
  attrib.csv              syn, Dorig, Dsyn, iS, DiS, DiSCO, DiSDiO (percentages),
                          max_denom, mean_denom (records per DiSCO key-target cell)
  allCAPs.csv             syn, baseCAPd, CAPd, CAPs, DCAP, TCAP (percentages)
  replicated_uniques.csv  syn and synthpop's replicated.uniques() on the keys and the target:
                          Original, Synthetic, Synthetic uniques in original, Replicated
                          uniques (numbers and percentages)
  summary.json            all of the above, their means over datasets, the original's sample
                          uniques and k-anonymity counts on the keys, per-dataset diagnostics
                          (records over --denom-lim, exclusions), settings and warning codes
"""

_OUTPUT_FILES = ("summary.json", "ident.csv", "attrib.csv", "allCAPs.csv",
                 "replicated_uniques.csv")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``disclosure`` sub-command."""
    p = subparsers.add_parser(
        "disclosure",
        help="empirical disclosure measures of synthpop (repU, DiSCO, TCAP, ...)",
        description=(
            "Compute the identity disclosure measures (UiO, UiS, UiOiS, repU), attribute "
            "disclosure measures (Dorig, Dsyn, iS, DiS, DiSCO, DiSDiO) and correct attribution "
            "probabilities (baseCAPd, CAPd, CAPs, DCAP, TCAP) of synthpop's disclosure() "
            "(Raab, Nowok & Dibben, 'Practical privacy metrics for synthetic data'), and "
            "replicated uniques, for a set of keys (quasi-identifiers) and one target, with "
            "the original's sample uniques and k-anonymity counts on the keys."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("original", metavar="ORIGINAL", help="confidential table (.csv or .parquet)")
    p.add_argument("synthetic", nargs="+", metavar="SYN",
                   help="synthetic datasets (.csv/.parquet, one per dataset) or one SyntheticData "
                   "folder written by 'bayes-risk synthesize'")
    p.add_argument("--keys", nargs="+", required=True, metavar="COL",
                   help="key columns (quasi-identifiers) combined into one key")
    p.add_argument("--target", required=True, metavar="COL",
                   help="the attribute whose disclosure is measured")
    add_type_arguments(p)
    g = p.add_argument_group("conventions (synthpop's disclosure() arguments)")
    g.add_argument("--ngroups-target", type=int, default=None, metavar="N",
                   help="group a numeric target into about N groups (quantiles of the pooled "
                   "original and synthetic values); default: every distinct value is a level")
    g.add_argument("--ngroups-keys", nargs="+", type=int, default=None, metavar="N",
                   help="group numeric keys likewise: one N for every numeric key, or one per "
                   "key (0: not grouped)")
    g.add_argument("--denom-lim", type=int, default=5, metavar="N",
                   help="key-target cells with more than N original records are counted "
                   "(n_over_denom_lim) and, with --exclude-ov-denom-lim, excluded (default 5)")
    g.add_argument("--exclude-ov-denom-lim", action="store_true",
                   help="exclude key-target cells over --denom-lim from every measure")
    g.add_argument("--not-targetlev", nargs="+", default=None, metavar="LEVEL",
                   help="target levels excluded from the measures")
    g.add_argument("--exclude-combination", nargs=3, action="append", default=None,
                   metavar=("KEY", "KEYLEVEL", "TARGETLEVEL"),
                   help="exclude the records with this key level and target level (repeat for "
                   "more combinations)")
    g.add_argument("--no-target-na", action="store_true",
                   help="records with a missing target do not count (default: 'Missing' is a "
                   "level)")
    g.add_argument("--no-keys-na", action="store_true",
                   help="records with a missing key do not count (default: 'Missing' is a level)")
    g.add_argument("--k-anonymity", nargs="+", type=int, default=[2, 3, 5], metavar="K",
                   help="k of the original's k-anonymity counts on the keys (default 2 3 5)")
    g.add_argument("--compat", choices=["synthpop"], default=None,
                   help="reproduce synthpop 1.9-2 exactly, including its misaligned tables for "
                   "an ungrouped numeric target and its text comparison of replicated uniques")
    add_quiet_argument(p)
    add_out_argument(p, "summary.json and one CSV per measure family")
    p.set_defaults(handler=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Compute the measures and write the output folder."""
    from bayes_risk._io import write_json
    from bayes_risk.cli._common import read_records_table, schema_from_args
    from bayes_risk.cli._run import output_dir
    from bayes_risk.data.io import read_synthetic
    from bayes_risk.disclosure import disclosure_measures

    out = Path(args.out)
    original = read_records_table(args.original, "ORIGINAL")
    syn = read_synthetic(args.synthetic, like=original)
    typed = any(getattr(args, a) for a in ("categorical", "ordinal", "count", "continuous"))
    schema = schema_from_args(original, args) if (typed or syn.schema is None) else None
    res = disclosure_measures(
        original,
        syn,
        args.keys,
        args.target,
        schema=schema,
        ngroups_target=args.ngroups_target,
        ngroups_keys=(args.ngroups_keys[0] if args.ngroups_keys and len(args.ngroups_keys) == 1
                      else args.ngroups_keys),
        denom_lim=args.denom_lim,
        exclude_ov_denom_lim=args.exclude_ov_denom_lim,
        not_targetlev=args.not_targetlev,
        exclude_combinations=[tuple(c) for c in args.exclude_combination or ()],
        use_target_na=not args.no_target_na,
        use_keys_na=not args.no_keys_na,
        k_anonymity=args.k_anonymity,
        compat=args.compat,
    )
    d = res.to_dict()
    d["inputs"] = {"original": str(args.original), "synthetic": [str(s) for s in args.synthetic]}
    with output_dir(args) as tmp:
        write_json(tmp / "summary.json", d)
        res.ident.to_csv(tmp / "ident.csv", index=False)
        res.attrib.to_csv(tmp / "attrib.csv", index=False)
        res.allCAPs.to_csv(tmp / "allCAPs.csv", index=False)
        res.replicated_uniques.table.to_csv(tmp / "replicated_uniques.csv", index=False)
    if not args.quiet:
        print(res.summary(), file=sys.stdout)
        print(f"  wrote {', '.join(str(out / f) for f in _OUTPUT_FILES)}", file=sys.stdout)
    return 0
