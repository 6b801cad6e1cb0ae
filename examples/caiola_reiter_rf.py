"""Caiola & Reiter (2010): random-forest synthesis of categorical quasi-identifiers and the
resulting identification risk.

Caiola & Reiter (2010), §4: of 10,000 CPS household heads, sex, race and marital status are
synthesized for every record by random forests (500 trees, leaves grown until pure), m = 5, age
is released as it is, and an intruder who knows who is in the sample matches on the four
quasi-identifiers. They report, for two runs of the synthesis, the true match rate over all
records and the false match rate among unique matches, the same two rates among the sample
uniques (the records unique on the four quasi-identifiers), for the visit orders M → R → X (the
paper's choice) and X → R → M and for their procedure 3.1a–3.3a; and they compare forests with
CART (at least five records per leaf) over ten replications.

Data. The CPS extract is not public. The stand-in is the census-style New York extract shipped
with NPBayesImputeCat (``../shared/data/NYexample_X.csv``; complete cases, 7,014 persons), which
has the paper's four quasi-identifiers (SEX, AGE, MARST, RACESING) and six other categorical
variables. Its AGE has 9 groups where the CPS has single years of age, so far fewer records are
unique on the quasi-identifiers (the paper: 484 of 10,000).

Beyond the paper (which has no attribute-risk analysis): the worst-case attribute risk of a
sample of records under the fixed-forest plug-in likelihood (``RFPlugin``; an approximation,
labelled ``APPROXIMATE_NONPARAMETRIC``; see the docs' methods page "Attribute disclosure risk",
section "Tree synthesizers: plug-in likelihoods"), with one-variable-different candidates.

Run: ``python examples/caiola_reiter_rf.py`` (``BAYES_RISK_EXAMPLE_SCALE=0.1`` for a quick run:
a random share of the records, fewer trees and replications).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SCALE, scaled, shared_file  # noqa: E402

from bayes_risk import (  # noqa: E402
    PopulationSpec,
    PropensitySpec,
    RFPlugin,
    attribute_risk,
    compare_visit_orders,
    identification_risk,
    repeated_syntheses,
)
from bayes_risk.data import infer_schema, read_table  # noqa: E402
from bayes_risk.models import CARTSynthesizer, RandomForestSynthesizer  # noqa: E402

KEYS = ["SEX", "AGE", "MARST", "RACESING"]
#: the paper's visit orders: marital status → race → sex, and the reverse
ORDERS = {"M → R → X": ["MARST", "RACESING", "SEX"], "X → R → M": ["SEX", "RACESING", "MARST"]}
MEASURES = ["true_match_rate", "false_match_rate", "uniques_true_match_rate",
            "uniques_false_match_rate"]


def load() -> tuple[pd.DataFrame, str]:
    """Complete cases of NYexample, every column a factor (a random share below scale 1)."""
    data = read_table(shared_file("data", "NYexample_X.csv")).dropna().astype(str)
    label = f"NYexample_X complete cases ({len(data):,} persons)"
    if SCALE < 1.0:
        data = data.sample(frac=SCALE, random_state=np.random.default_rng(2010))
        label += f", random {SCALE:.0%} share: {len(data):,} persons"
    return data.reset_index(drop=True), label


def sample_uniques(data: pd.DataFrame) -> np.ndarray:
    """Records alone in their cell of the four quasi-identifiers."""
    return data.groupby(KEYS, observed=True)[KEYS[0]].transform("size").to_numpy() == 1


def measures(data: pd.DataFrame, release, order: list[str], uniques: np.ndarray,
             every: dict | None = None) -> dict:
    """Caiola & Reiter's two rates over all records and over the sample uniques.

    The intruder knows who is in the sample and every quasi-identifier; the match probabilities
    are averaged over the m datasets (Caiola & Reiter 2010, eq. 1 with h = m). The sample
    uniques are the intruder's targets in the second call (``targets`` linked to the records by
    their row number). ``every``: the file measures over all records when they are already at
    hand (the row of ``compare_visit_orders``, which computed them with the same intruder).
    """
    kw = dict(known=["AGE", *order], synthesized=order, aggregation="pooled",
              population=PopulationSpec(membership="known"), progressbar=False)
    if every is None:
        every = identification_risk(data, release, **kw).file
    targets = data[uniques].rename_axis("row").reset_index()
    kw["population"] = PopulationSpec(membership="known", targets=targets, target_id="row")
    among = identification_risk(data, release, **kw)
    return {"true_match_rate": every["true_match_rate_targets"],
            "false_match_rate": every["false_match_rate"],
            "uniques_true_match_rate": among.file["true_match_rate_targets"],
            "uniques_false_match_rate": among.file["false_match_rate"],
            "n_unique_matches": every["n_unique"],
            "uniques_n_unique_matches": among.file["n_unique"]}


#: the pMSE of a main-effects logit (two-way interactions of ten categorical columns would
#: need hundreds of coefficients per fit; the paper has no pMSE)
UTILITY = {"max_order": 0}


def prepare() -> dict:
    """The data, its sample uniques and its schema."""
    data, label = load()
    uniques = sample_uniques(data)
    schema = infer_schema(data, categorical=list(data.columns))
    print(f"data: {label}; {int(uniques.sum())} records unique on {' x '.join(KEYS)}")
    return {"data": data, "uniques": uniques, "schema": schema}


def identification_run(setup: dict, run: int, n_trees: int) -> tuple[list[dict], dict]:
    """One run (Caiola & Reiter 2010, §4): procedure 3.1-3.3 in both visit orders and
    3.1a-3.3a in the paper's order, new forests grown with the run's seed; the rows of the
    table and the releases."""
    data, uniques = setup["data"], setup["uniques"]
    rows, kept = [], {}
    for procedure, orders in (("A", ORDERS), ("B", {"M → R → X": ORDERS["M → R → X"]})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pMSE fits on sparse categorical columns
            cmp = compare_visit_orders(
                data, synthesizer=RandomForestSynthesizer(n_trees=n_trees, procedure=procedure),
                orders=list(orders.values()), known=["AGE", *ORDERS["M → R → X"]],
                schema=setup["schema"], m=5,
                utility={"propensity": PropensitySpec(**UTILITY)},
                identification={"aggregation": "pooled",
                                "population": PopulationSpec(membership="known")},
                keep_releases=True, random_seed=2010 + run)
        for name, order in orders.items():
            release = cmp.releases[tuple(order)]
            kept[(run, procedure, name)] = release
            # the comparison's row: its pMSE ratio, and the risk over all records (the same
            # intruder as measures(), so that it is not computed a second time)
            row = cmp.table.loc[cmp.table["order"] == " → ".join(order)].iloc[0].to_dict()
            rows.append({"run": run + 1, "procedure": "3.1-3.3" if procedure == "A"
                         else "3.1a-3.3a", "order": name, "pmse_ratio": float(row["pmse_ratio"]),
                         **measures(data, release, order, uniques, every=row)})
    return rows, kept


def risk_tables(rows: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The table of the runs and its mean over the runs, printed."""
    table = pd.DataFrame(rows)
    pd.set_option("display.width", 160)
    print("\nIdentification risk by run (rates as fractions; 'uniques' = among the records "
          "unique on the quasi-identifiers):")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    mean = table.groupby(["procedure", "order"], sort=False)[MEASURES].mean()
    print("\nMean over the runs:")
    print(mean.to_string(float_format=lambda v: f"{v:.3f}"))
    return table, mean


def forests_against_cart(setup: dict, n_trees: int, replications: int) -> dict:
    """Random forests against CART over replications (Caiola & Reiter 2010, §4: ten
    replications of the m = 5 release): the forests and the trees are grown once, each
    replication draws a new release from them; risk pooled over each release's datasets, pMSE
    averaged."""
    data, schema = setup["data"], setup["schema"]
    mrx = ORDERS["M → R → X"]
    rf = RandomForestSynthesizer(n_trees=n_trees, visit_sequence=mrx)
    rf.fit(data, schema=schema, synthesized=mrx, random_seed=4)
    cart = CARTSynthesizer(min_leaf=5).fit(data, schema=schema, synthesized=mrx,
                                           random_seed=4)
    reps = {}
    for name, synth in (("random forest", rf), ("CART", cart)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reps[name] = repeated_syntheses(
                data, synthesizer=synth, known=["AGE", *mrx], synthesized=mrx, m=(5,),
                n_repeats=replications, aggregation="pooled",
                population=PopulationSpec(membership="known"), schema=schema, random_seed=5,
                progressbar=False, **UTILITY)
    versus = pd.concat(reps, names=["synthesizer"]).reset_index(level=0)
    cols = ["pmse", "true_match_rate_targets", "false_match_rate"]
    print(f"\nRandom forests against CART ({replications} replications of an m = 5 release; "
          "mean, min, max):")
    print(versus.groupby("synthesizer", sort=False)[cols].agg(["mean", "min", "max"])
          .to_string(float_format=lambda v: f"{v:.4f}"))
    return {"versus": versus, "rf": rf, "cart": cart}


def attribute_part(setup: dict, rf: RandomForestSynthesizer, k: int) -> dict:
    """Attribute risk of ``k`` records for a release of the forests ``rf``: the forests fixed,
    each candidate recounts the leaves the record trains."""
    data = setup["data"]
    release = rf.synthesize(5, random_seed=6)
    attr = attribute_risk(data, release, model=RFPlugin(rf, data), records=range(k),
                          progressbar=False)
    a = attr.to_dict()
    null = a["null"]
    print(f"\nattribute risk ({k} records, {attr.records['G'].iloc[0]} candidates each; "
          f"{', '.join(attr.warnings)}): mean probability of the truth "
          f"{a['unflagged']['mean_p_true']:.3f} vs {null['mean_p_true']['expected']:.3f} if the "
          f"release said nothing about the records, truth ranked first for "
          f"{a['unflagged']['prop_top']:.0%} of records vs {null['prop_top']['expected']:.0%}")
    return {"attribute_release": release, "attribute": attr}


def level_reasons(setup: dict, trees: tuple[int, ...] = (50, 500), run: int = 0) -> pd.DataFrame:
    """Why the true match rate is below the paper's 3.0 % (issue 68, item 6): the same
    synthesis (procedure 3.1-3.3, M -> R -> X, m = 5) with each number of ``trees``, and the
    rate split into the sample uniques' part and the other records' part. With the paper's
    share of sample uniques (484 of 10,000) and this run's rate among the uniques, the uniques
    alone would give ``uniques_part_at_paper_share``."""
    data, uniques = setup["data"], setup["uniques"]
    order = ORDERS["M → R → X"]
    rows = []
    for n_trees in trees:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # as identification_run: sparse categorical cells
            rf = RandomForestSynthesizer(n_trees=n_trees, visit_sequence=order).fit(
                data, schema=setup["schema"], synthesized=order, random_seed=2010 + run)
            m = measures(data, rf.synthesize(5, random_seed=2020 + run), order, uniques)
        share = float(uniques.mean())
        rows.append({"trees": n_trees, "true_match_rate": m["true_match_rate"],
                     "uniques_true_match_rate": m["uniques_true_match_rate"],
                     "share_uniques": share,
                     "uniques_part": share * m["uniques_true_match_rate"],
                     "others_part": m["true_match_rate"] - share * m["uniques_true_match_rate"],
                     "uniques_part_at_paper_share": 0.0484 * m["uniques_true_match_rate"]})
    return pd.DataFrame(rows).set_index("trees")


def main(n_trees: int | None = None, runs: int = 2, replications: int | None = None,
         attribute_records: int | None = None) -> dict:
    """The whole analysis; the keyword arguments shorten it (the docs gallery calls the parts
    with fewer trees and replications than the paper's 500 and 10)."""
    n_trees = n_trees or scaled(500, minimum=20)
    replications = replications or scaled(10, minimum=2)
    setup = prepare()
    print(f"{n_trees} trees per forest, m = 5, {runs} runs")
    rows, kept = [], {}
    for run in range(runs):
        r, k = identification_run(setup, run, n_trees)
        rows += r
        kept.update(k)
    table, mean = risk_tables(rows)
    versus = forests_against_cart(setup, n_trees, replications)
    attr = attribute_part(setup, versus["rf"], attribute_records or scaled(100, minimum=20))
    return {"data": setup["data"], "uniques": setup["uniques"], "table": table, "mean": mean,
            "releases": kept, **versus, **attr}


if __name__ == "__main__":
    main()
