"""SDMetrics' QualityReport on the synthpop release of tests/utility/synthpop_tables_reference/
(CEdata's first 1000 records, 3 synthetic datasets), for tests/utility/test_quality.py.

Run from the repository root in an environment with SDMetrics (not a dependency of the
package; SDMetrics 0.32.0 made the file):

    python tests/utility/sdmetrics_reference/make_reference.py ../shared/data

Each dataset is one report (`QualityReport().generate(original, dataset, metadata)`, the
single-table report), with SDMetrics' default thresholds (a pair scored when its real
correlation exceeds 0.5 or its Cramér's V 0.3) and with both at 0 (every pair scored); the
cases "missing" repeat them with missing values: Income empty in the records with 0-based row
i % 13 == 2 and Marital in those with i % 17 == 5, in the original and in each dataset.
"""

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import sdmetrics
from sdmetrics.reports.single_table import QualityReport

here = Path(__file__).parent
data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
orig = pd.read_csv(data_dir / "CEdata.csv").iloc[:1000].reset_index(drop=True)
rel = pd.read_csv(here.parent / "synthpop_tables_reference" / "release.csv.gz")
syn = [g.drop(columns="dataset").reset_index(drop=True) for _, g in rel.groupby("dataset")]
cat = ["Urban", "Marital", "Tenure"]
metadata = {"columns": {c: {"sdtype": "categorical" if c in cat else "numerical"}
                        for c in orig.columns}}


def holes(d):
    d = d.copy()
    i = np.arange(len(d))
    d["Income"] = d["Income"].astype(float).mask(i % 13 == 2)
    d["Marital"] = d["Marital"].astype("Int64").mask(i % 17 == 5)
    return d


warnings.simplefilter("ignore", FutureWarning)  # the single-table report's deprecation
out = {"sdmetrics": sdmetrics.__version__, "cases": {}}
for case, transform, threshold in (("complete", lambda d: d, None), ("missing", holes, None),
                                   ("complete_all_pairs", lambda d: d, 0),
                                   ("missing_all_pairs", holes, 0)):
    o = transform(orig)
    reports = []
    for z in syn:
        r = QualityReport()
        if threshold is not None:
            r.real_correlation_threshold = r.real_association_threshold = threshold
        r.generate(o, transform(z), metadata, verbose=False)
        shapes = r.get_details("Column Shapes")
        pairs = r.get_details("Column Pair Trends")
        reports.append({
            "score": r.get_score(),
            "properties": r.get_properties().set_index("Property")["Score"].to_dict(),
            "column_shapes": shapes[["Column", "Metric", "Score"]].to_dict(orient="records"),
            "column_pair_trends": pairs[["Column 1", "Column 2", "Metric", "Score",
                                         "Real Correlation", "Synthetic Correlation",
                                         "Real Association", "Meets Threshold?"]]
            .to_dict(orient="records")})
    out["cases"][case] = reports
(here / "quality_report.json").write_text(json.dumps(out, indent=1, default=float,
                                                     allow_nan=True) + "\n")
