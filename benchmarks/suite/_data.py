"""Data shared by the benchmarks: the shared CE sample and its synthetic releases.

The shared data folder is ``$BAYES_RISK_SHARED_DATA`` or ``../shared/data`` beside the
repository (as in the tests). Without it the benchmarks of these data are skipped (asv reports
them as skipped, ``NotImplementedError`` in their set-up): a stand-in table would give figures
under CEdata's name that are not CEdata's.
"""

from __future__ import annotations

import os
import warnings
from functools import cache
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = Path(os.environ.get("BAYES_RISK_SHARED_DATA", ROOT.parent / "shared" / "data"))
CE_PATH = SHARED_DATA / "CEdata.csv"
SCENARIO1 = SHARED_DATA.parent / "reference" / "identification" / "synthetic"

CATEGORICAL = ["Urban", "Marital", "Tenure"]
KNOWN = ["Age", "Urban", "Marital"]
# Hornby & Hu's scenario 4: what the CART release synthesizes, in visit order
SYNTHESIZED = ["Tenure", "Expenditure", "Income"]


@cache
def ce() -> pd.DataFrame:
    """CEdata (5,571 records); ``NotImplementedError`` (asv: skipped) without the shared data."""
    if not CE_PATH.is_file():
        raise NotImplementedError(f"{CE_PATH} is needed (the shared data); skipped")
    return pd.read_csv(CE_PATH)


@cache
def nyexample() -> pd.DataFrame:
    """NPBayesImputeCat's NYexample (20,000 × 10, every column read as text, blanks missing);
    ``NotImplementedError`` (asv: skipped) without the shared data."""
    path = SHARED_DATA / "NYexample_X.csv"
    if not path.is_file():
        raise NotImplementedError(f"{path} is needed (the shared data); skipped")
    return pd.read_csv(path, dtype=str)


@cache
def scenario1() -> list[pd.DataFrame]:
    """The 20 synthetic datasets of the reference scenario 1 (Income synthesized)."""
    if not SCENARIO1.is_dir():  # a release of our own would be timed under its name
        raise NotImplementedError(f"{SCENARIO1} is needed (the shared data); skipped")
    return [pd.read_csv(SCENARIO1 / f"scenario1_syn{i}.csv") for i in range(1, 21)]


@cache
def cart_release(m: int) -> list[pd.DataFrame]:
    """``m`` datasets of scenario 4 from the default CART (fixed seed)."""
    from bayes_risk.data import infer_schema
    from bayes_risk.models import CARTSynthesizer

    df = ce()
    schema = infer_schema(df, categorical=CATEGORICAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CARTSynthesizer().fit(df, schema=schema, synthesized=SYNTHESIZED, random_seed=2021)
        return list(model.synthesize(m, random_seed=2021).datasets)
