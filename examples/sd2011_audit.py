"""SD2011 end to end: a CART release of an agency-like table with its missing values, audited.

synthpop's showcase data, the Social Diagnosis 2011 sample (Nowok, Raab & Dibben 2016,
``../shared/data/SD2011.csv``, 5,000 persons), as an agency holds it: empty cells in most columns
and the code ``-8`` ("not applicable / refused") in ``income`` and ``nociga``. Fourteen columns of
mixed types are kept — the demographic keys (sex, age, placesize, region, edu, socprof), marital
status, income, life satisfaction (ls), depression score, smoking and cigarettes a day, height
and weight — and the eight after the keys are synthesized with CART (Bayesian bootstrap donors,
m = 5), which synthesizes the missing values as synthpop's ``syn()`` does: a categorical column's
missing value is a level of its own, a numeric column is synthesized in two steps (empty, ``-8``
or observed, then the value among the observed).

The script prints

1. the marginals of every synthesized column, original against the release (the mean over the m
   datasets), as synthpop's ``compare()`` tabulates them — level shares including the missing
   level for categorical columns; the shares of empty cells and of ``-8`` and the mean, median
   and standard deviation of the observed values for numeric columns;
2. the pMSE and its standardised form ``S_pMSE`` (Snoke et al. 2018; synthpop's ``utility.gen``
   with a main-effects logit model): ``S_pMSE`` is about 1 when the synthesizer reproduces the
   data's distribution as far as the propensity model can tell, and synthpop's documentation reads
   values well above 10 as a poor synthesis;
3. the audit (``bayes_risk.audit``, the function behind ``bayes-risk audit``) with every step
   running — utility, identification with a radius sweep, posterior Monte Carlo identification,
   attribute risk with the plug-in likelihood of the rebuilt CART synthesizer, and synthpop's
   empirical disclosure measures — for Hornby & Hu's intruder, who knows the keys and the person's
   income (matched within a 10 % radius).

Run: ``python examples/sd2011_audit.py`` (``BAYES_RISK_EXAMPLE_SCALE=0.1`` for a quick run; at
full size it writes the audit to ``sd2011-audit/`` beside the current folder unless
``BAYES_RISK_EXAMPLE_OUT`` names another one).
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SCALE, scaled, shared_file  # noqa: E402

import bayes_risk as br  # noqa: E402
from bayes_risk.data import infer_schema, read_table  # noqa: E402
from bayes_risk.models import CARTSynthesizer  # noqa: E402

KEYS = ["sex", "age", "placesize", "region", "edu", "socprof"]
SYNTHESIZED = ["marital", "income", "ls", "depress", "smoke", "nociga", "height", "weight"]
CODES = {"income": [-8], "nociga": [-8]}
KNOWN = ["sex", "age", "placesize", "region", "income"]


def sd2011(n: int) -> pd.DataFrame:
    """The first ``n`` persons of SD2011, the example's 14 columns, as read from the CSV."""
    sd = read_table(shared_file("data", "SD2011.csv"))
    return sd[KEYS + SYNTHESIZED].iloc[:n].reset_index(drop=True)


def _categorical_rows(c: str, orig: pd.Series, syn: list[pd.Series]) -> list[dict]:
    lab = lambda s: s.astype(object).where(s.notna(), "<missing>")  # noqa: E731
    o = lab(orig).value_counts(normalize=True)
    s = pd.concat([lab(z).value_counts(normalize=True) for z in syn], axis=1).fillna(0.0)
    s = s.mean(axis=1)
    levels = list(o.index.union(s.index))
    return [{"column": c, "statistic": f"% {v}", "original": 100 * o.get(v, 0.0),
             "synthetic": 100 * s.get(v, 0.0)} for v in levels]


def _numeric_rows(c: str, orig: pd.Series, syn: list[pd.Series]) -> list[dict]:
    codes = CODES.get(c, [])

    def stats(v: pd.Series) -> dict[str, float]:
        x = pd.to_numeric(v, errors="coerce").astype("float64")
        obs = x[x.notna() & ~x.isin(codes)]
        out = {"% empty": 100 * x.isna().mean()}
        for k in codes:
            out[f"% code {k}"] = 100 * (x == k).mean()
        out |= {"mean (observed)": obs.mean(), "median (observed)": obs.median(),
                "sd (observed)": obs.std()}
        return out

    o = stats(orig)
    s = pd.DataFrame([stats(z) for z in syn]).mean()
    return [{"column": c, "statistic": k, "original": o[k], "synthetic": s[k]} for k in o]


def marginals(original: pd.DataFrame, release: br.SyntheticData,
              schema: br.data.Schema) -> pd.DataFrame:
    """Original against synthetic marginals of every synthesized column (synthpop's
    ``compare()`` layout: shares in per cent, the missing level included)."""
    rows: list[dict] = []
    for c in SYNTHESIZED:
        syn = [z[c] for z in release.datasets]
        if schema[c].is_categorical:
            rows += _categorical_rows(c, original[c], syn)
        else:
            rows += _numeric_rows(c, original[c], syn)
    return pd.DataFrame(rows)


def main() -> dict:
    n = scaled(5000, minimum=300)
    m = 5
    data = sd2011(n)
    schema = infer_schema(data, missing_codes=CODES)
    print(f"data: SD2011 (Social Diagnosis 2011, synthpop), first {n:,} of 5,000 persons, "
          f"{data.shape[1]} columns; empty cells in {int(data.isna().any().sum())} columns; "
          f"code -8 in income ({int((data['income'] == -8).sum()):,}) and nociga "
          f"({int((data['nociga'] == -8).sum()):,})")
    synth = CARTSynthesizer().fit(data, schema=schema, synthesized=SYNTHESIZED,
                                  random_seed=2011)
    release = synth.synthesize(m, random_seed=2012)
    print(f"release: CART (Bayesian bootstrap donors), m = {m}, synthesized: "
          f"{', '.join(SYNTHESIZED)}")

    table = marginals(data, release, schema)
    with pd.option_context("display.width", 120, "display.max_rows", 200,
                           "display.float_format", "{:,.2f}".format):
        print("\nMarginals of the synthesized columns (synthetic: mean over the m datasets)")
        print(table.to_string(index=False))

    util = br.utility_summary(data, release, schema=schema, random_seed=2013,
                              propensity=br.PropensitySpec(max_order=0))
    pm = util.pmse
    print(f"\npMSE (main-effects logit) per dataset: "
          f"{', '.join(f'{v:.5f}' for v in pm.pmse)}; S_pMSE: "
          f"{', '.join(f'{v:.2f}' for v in pm.ratio)} (mean {np.mean(pm.ratio):.2f})")

    out = os.environ.get("BAYES_RISK_EXAMPLE_OUT", "sd2011-audit" if SCALE >= 1 else None)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        result = br.audit(data, release, known=KNOWN, schema=schema, random_seed=2013,
                          progressbar=False, out=out,
                          settings=br.AuditSettings(
                              skip=os.environ.get("SD_SKIP", "").split() or None))
    print()
    print(result.verdict_text)
    statuses = {s.name: s.status for s in result.steps}
    print("steps: " + ", ".join(f"{k} {v}" for k, v in statuses.items()))
    if out is not None:
        print(f"report: {result.to_html(Path(out) / 'report.html')}")
    return {"data": data, "schema": schema, "release": release, "marginals": table,
            "utility": util, "audit": result, "synthesizer": synth}


if __name__ == "__main__":
    main()
