"""What the files of an audit withhold: one rule for the report, every file it links to and
``report.zip`` (:doc:`/user_guide/audit`, Confidential values).

The report shows no value of a confidential record unless ``show_confidential_values`` is set:
records are named by their row number. The tables the steps write follow the same rule, here,
where they are written (:func:`~bayes_risk.auditing.context.write_table`); the zip holds those
files. :data:`FILES` lists every table a step writes with what it withholds (``None``: it holds
counts, rates, row numbers and aggregates only, as the report does).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

__all__ = ["FILES", "WITHHELD", "withheld"]

#: the text that stands for a withheld value
WITHHELD = "(withheld: a confidential record's values; --show-confidential-values shows them)"


def _queries(frame: pd.DataFrame) -> pd.DataFrame:
    """anonymeter's predicates that single out a record of the original or of the holdout:
    each is that record's values on its columns (``AGEP == '>70' & MAR == 'Married' & ...``)."""
    hit = np.zeros(len(frame), dtype=bool)
    for col in ("singles_out_original", "singles_out_holdout"):
        if col in frame:
            hit |= frame[col].fillna(False).to_numpy(dtype=bool)
    out = frame.copy()
    out["query"] = out["query"].astype(object).where(~hit, WITHHELD)
    return out


def _largest(frame: pd.DataFrame) -> pd.DataFrame:
    """The largest true values of the relative difference, and the intruder's estimates beside
    them (with the relative difference, an estimate gives the true value back)."""
    out = frame.copy()
    for c in ("true_value", "estimate", "estimate_lo", "estimate_hi"):
        out[c] = WITHHELD
    return out


#: every table an audit step writes, by file name, with the function that withholds the
#: confidential records' values it would hold (``None``: none; a new file must be listed)
FILES: dict[str, Callable[[pd.DataFrame], pd.DataFrame] | None] = {
    # utility
    # (marginals.csv: percentages per level or histogram bin, whose ends are R's pretty breaks,
    # not the original's values)
    "overlap.csv": None, "tables.csv": None, "marginals.csv": None, "twoway.csv": None,
    "quality.csv": None, "quality_pairs.csv": None,
    # identification and its posterior replicates (records by row number)
    "records.csv": None, "radius_search.csv": None, "radius_search_pooled.csv": None,
    "known_sweep.csv": None, "known_sweep_drivers.csv": None, "known_sweep_levels.csv": None,
    # attribute risk
    "known_curve.csv": None,
    # anonymeter's attacks
    "singling_out.csv": None, "singling_out_queries.csv": _queries, "linkability.csv": None,
    "linkability_records.csv": None,
    # inference: rates, and per attacked record its row number and whether the guess was right
    # (no guess, no value: bayes_risk.attacks.inference)
    "inference.csv": None, "inference_records.csv": None,
    # the business-data measures: the largest values are a record's own
    "relative_difference.csv": _largest, "closest_match.csv": None,
    # synthpop's measures and sdcMicro's of the original
    "ident.csv": None, "attrib.csv": None, "allCAPs.csv": None, "replicated_uniques.csv": None,
}


def withheld(frame: pd.DataFrame, name: str, show: bool) -> pd.DataFrame:
    """``frame`` as the audit writes it into file ``name``: the confidential records' values
    withheld unless ``show`` (``show_confidential_values``).

    Raises
    ------
    KeyError
        ``name`` is not in :data:`FILES`: every table an audit writes is classified.
    """
    rule = FILES[name]
    return frame if show or rule is None else rule(frame)
