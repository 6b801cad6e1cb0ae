"""Hawala (2008): partial synthesis of the records in small cells by predictive mean matching.

Reproduces the procedure of Hawala (2008), §4, and its Appendix Tables 1–3 on real survey data. The
identifying variables (IVs) are cross-classified; a record in a non-empty cell with at most
``threshold`` = 5 records is at risk (a recipient). For each IV in turn the recipients' values are
deleted and temporarily filled by a random draw from the other records, a prediction model of the
IV on all other columns is fitted (proportional-odds logit for ordered IVs, baseline-category logit
for unordered ones), and each recipient receives the observed value of the donor whose prediction
is closest. Every other record is released unchanged.

Data. Hawala's example (2,313 Italian census records, AGE × EDU × PRO) is not public; the stand-in
is synthpop's Social Diagnosis 2011 sample ``../shared/data/SD2011.csv`` with the analogous IVs:
``agegr`` (6 ordered age groups), ``edu`` (4 ordered levels of education) and ``socprof``
condensed, as Hawala condenses the IVs before tabulating, to 4 unordered groups of social and
professional status. The non-identifying variables ``sex``, ``placesize``, ``marital`` and
``income`` enter the models as predictors (records with a missing value in any of them or
``income`` coded −8, "not applicable", are left out). The script prints the IV table before and
after synthesis in the layout of Hawala's Tables 1 and 2 (AGE × EDU rows, PRO columns), the
two-way margins and the means and variances of the ordered scores (Table 3), and what comparing
five implicates would reveal (§3.2: the records that differ between implicates are the ones
selected for synthesis, which is why the Census Bureau releases one).

Run: ``python examples/hawala_pmm.py`` (``BAYES_RISK_EXAMPLE_SCALE=0.3`` for a quick run: a
random share of the records).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SCALE, shared_file  # noqa: E402

from bayes_risk.data import infer_schema, read_table  # noqa: E402
from bayes_risk.disclosure import differencing_check  # noqa: E402
from bayes_risk.identification.api import identification_risk  # noqa: E402
from bayes_risk.identification.specs import PopulationSpec  # noqa: E402
from bayes_risk.models import SmallCellPMMSynthesizer  # noqa: E402

IV = ["agegr", "edu", "socprof"]
NON_IV = ["sex", "placesize", "marital", "income"]
THRESHOLD = 5
AGE_LEVELS = ["16-24", "25-34", "35-44", "45-59", "60-64", "65+"]
EDU_LEVELS = ["PRIMARY/NO EDUCATION", "VOCATIONAL/GRAMMAR", "SECONDARY",
              "POST-SECONDARY OR HIGHER"]
#: socprof condensed to 4 groups (Hawala condenses the IVs before tabulating)
SOCPROF = {
    "EMPLOYED IN PRIVATE SECTOR": "EMPLOYEE",
    "EMPLOYED IN PUBLIC SECTOR": "EMPLOYEE",
    "SELF-EMPLOYED": "SELF-EMPLOYED/FARMER",
    "FARMER": "SELF-EMPLOYED/FARMER",
    "RETIRED": "RETIRED/DISABLED",
    "LONG-TERM SICK/DISABLED": "RETIRED/DISABLED",
    "PUPIL OR STUDENT": "NOT WORKING",
    "UNEMPLOYED": "NOT WORKING",
    "OTHER ECONOMICALLY INACTIVE": "NOT WORKING",
}
PRO_LEVELS = ["EMPLOYEE", "SELF-EMPLOYED/FARMER", "RETIRED/DISABLED", "NOT WORKING"]


def load() -> tuple[pd.DataFrame, str]:
    """The SD2011 extract: the three IVs and the non-IV predictors, complete cases."""
    sd = read_table(shared_file("data", "SD2011.csv"))
    df = sd[IV + NON_IV].dropna()
    df = df[df["income"] != -8].copy()
    df["socprof"] = df["socprof"].map(SOCPROF)
    df["income"] = df["income"].astype(np.float64)
    label = f"SD2011 ({len(df):,} of {len(sd):,} persons: complete cases, income reported)"
    if SCALE < 1.0:
        df = df.sample(frac=SCALE, random_state=np.random.default_rng(2011))
        label += f", random {SCALE:.0%} share: {len(df):,} persons"
    return df.reset_index(drop=True), label


def schema_of(df: pd.DataFrame):
    return infer_schema(
        df, ordinal=["agegr", "edu"], categorical=["socprof", "sex", "placesize", "marital"],
        continuous=["income"],
        levels={"agegr": AGE_LEVELS, "edu": EDU_LEVELS, "socprof": PRO_LEVELS},
    )


def iv_table(df: pd.DataFrame) -> pd.DataFrame:
    """AGE × EDU rows, PRO columns, every level shown (empty cells as 0), as Hawala's Table 1."""
    idx = pd.MultiIndex.from_product([AGE_LEVELS, EDU_LEVELS], names=["agegr", "edu"])
    t = df.groupby(IV, observed=True).size().unstack("socprof", fill_value=0)
    return t.reindex(index=idx, columns=PRO_LEVELS, fill_value=0).astype(int)


def moments(df: pd.DataFrame) -> pd.DataFrame:
    """Means and variances (divisor n − 1) of the ordered scores 1..K of agegr and edu."""
    out = {}
    for c, lv in (("agegr", AGE_LEVELS), ("edu", EDU_LEVELS)):
        s = df[c].map({v: k for k, v in enumerate(lv, start=1)}).astype(np.float64)
        out[c] = {"mean": s.mean(), "variance": s.var(ddof=1)}
    return pd.DataFrame(out).T


def main() -> dict:
    df, label = load()
    schema = schema_of(df)
    model = SmallCellPMMSynthesizer(identifying=IV, threshold=THRESHOLD, tie="random")
    model.fit(df, schema=schema)
    with warnings.catch_warnings():
        # convergence of the logit fits on sparse tables is reported in release.extra
        warnings.simplefilter("ignore")
        release = model.synthesize(1, random_seed=2008)
    syn = release.datasets[0]
    n_rec = int(model.recipients_.sum())
    before, after = iv_table(df), iv_table(syn)
    print(f"data: {label}")
    print(f"identifying variables: {' x '.join(IV)} ({before.size} cells); a non-empty cell with "
          f"<= {THRESHOLD} records is sensitive: {len(model.sensitive_cells_)} cells, "
          f"{n_rec} records synthesized ({n_rec / len(df):.2%})")
    pd.set_option("display.width", 160)
    print("\nTable 1 (original data):")
    print(before.to_string())
    print("\nTable 2 (partially synthetic data):")
    print(after.to_string())
    small_before = int(((before > 0) & (before <= THRESHOLD)).to_numpy().sum())
    small_after = int(((after > 0) & (after <= THRESHOLD)).to_numpy().sum())
    print(f"\nsmallest non-empty cell: {release.extra['min_cell_count_before']} before, "
          f"{release.extra['min_cell_count_after'][0]} after; cells with 1..{THRESHOLD} records: "
          f"{small_before} before, {small_after} after; "
          f"recipients without an allowed donor: {len(release.extra['unmatched'][0])}; "
          f"warnings: {', '.join(release.extra['warnings'][0]) or 'none'}")
    print("\nTable 3 (summary measures): means and variances of the ordered scores")
    mom = pd.concat({"original": moments(df), "synthetic": moments(syn)}, axis=1)
    print(mom.round(6).to_string())
    for a, b in (("agegr", "edu"), ("agegr", "socprof")):
        print(f"\n{a} x {b}: original | synthetic")
        lv = {"agegr": AGE_LEVELS, "edu": EDU_LEVELS, "socprof": PRO_LEVELS}
        t0, t1 = (pd.crosstab(x[a], x[b]).reindex(index=lv[a], columns=lv[b], fill_value=0)
                  for x in (df, syn))
        print(pd.concat({"original": t0, "synthetic": t1}, axis=1).to_string())
    # Hawala §3.2: several implicates, compared, reveal the records (and variables) the agency
    # judged at risk; the Census Bureau releases one. The check on 1 and on 5 implicates:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        five = model.synthesize(5, random_seed=2008)
    diffs = {m: differencing_check(df, r, records=model.recipients_)
             for m, r in ((1, release), (5, five))}
    print("\nDifferencing the implicates (Hawala 2008, section 3.2):")
    for m, d in diffs.items():
        print(f"  m = {m}: {d.n_revealed} of {n_rec} synthesized records revealed "
              f"(recall {d.recall:.2f}, precision {d.precision:.2f}); columns revealed: "
              f"{', '.join(d.revealed_columns) or 'none'}")
    # what the selection R gives an intruder who knows it (Hu 2019 section 4.2.4): the manifest
    # of the release lists its sensitive cells, so the intruder holding a target's IVs knows
    # whether it was synthesized
    ident = {how: identification_risk(df, release, known=[*IV, "sex", "placesize", "marital"],
                                      synthesized=IV, population=PopulationSpec(selection=how),
                                      progressbar=False)
             for how in (None, "release")}
    sel = model.recipients_
    print("\nIdentification risk of the one implicate (known: the IVs, sex, placesize, marital):")
    for how, r in ident.items():
        print(f"  {'given the selection R' if how else 'R unknown':22}: expected match risk "
              f"{r.file['expected_match_risk']:.1f} of {len(df)} targets, of which the "
              f"{int(sel.sum())} synthesized records {r.record_IR[sel].sum():.2f}; true match "
              f"rate {100 * r.file['true_match_rate_targets']:.2f} %")
    return {"data": df, "release": release, "model": model, "before": before, "after": after,
            "moments": mom, "differencing": diffs, "five": five, "identification": ident}


if __name__ == "__main__":
    main()
