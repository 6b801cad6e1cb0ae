"""Drechsler & Reiter (2008): identification risk of partially synthetic data when the intruder
may not know who is in the sample.

Reproduces the design of Drechsler & Reiter (2008), §4 (Tables 3–6). A table of household heads is
treated as the population; a simple random sample of it is the confidential survey ``D_obs``. Sex,
age, race and marital status are the quasi-identifiers the intruder knows. Two partial syntheses by
sequential CART with the per-leaf Bayesian bootstrap (minimum leaf size 5, m = 5):

* (A) marital status and race synthesized (visit order M → R), age and sex released unchanged;
* (B) age, marital status and race synthesized (visit order G → M → R), sex unchanged.

Four intruders (Drechsler & Reiter 2008, §4.3):

* I — knows the quasi-identifiers of a random set of population units (10,000 of 51,016 in the
  paper; the same fraction here) but not who is in the sample;
* II — the same units, and knows which of them are in the sample (matches only those);
* III — knows every population unit, not who is in the sample;
* IV — knows every population unit and who is in the sample.

Without membership knowledge the match probabilities use the population count ``F_t`` of the
target's key (true counts from the population, column ``F_t``) or its estimate from the
all-two-way log-linear model refitted on each synthetic dataset (column ``F^_t,i``). Three
intruder strategies: match regardless of ``Pr(J = s+1)`` (Tables 3 and 5), match only when
``Pr(J = s+1) < γ = 0.5`` (Tables 4 and 6), and do not match when ``J = s+1`` is the most
probable outcome (Drechsler & Reiter 2008, the text after Table 4).

Data. The CPS extract of the paper (51,016 heads of household) is not public. The stand-in is
``../shared/data/NYexample_X.csv`` (NPBayesImputeCat's census-style New York extract), whose
variables include exactly the paper's four quasi-identifiers (SEX, AGE, MARST, RACESING) plus six
household and person variables used as CART predictors (OWNERSHP, MORTGAGE, EDUC, EMPSTAT,
DISABWRK, VETSTAT). Its 7,014 complete cases are the population; the sample keeps the paper's
sampling fraction (10,000 / 51,016). Differences that move the levels: AGE is binned in 9 groups
(the CPS has single years), so keys are much coarser (540 possible cells against about 5,000),
uniques are rarer and unique matches far more often wrong. Compare orderings with the paper's,
not levels.

Sampling with synthesis (Drechsler & Reiter 2010), the same stand-in: the population is taken as
the census, age, marital status and race are synthesized on all of it and the paper's sampling
fraction of its units is released from each of m = 5 synthetic populations; the identification
risk of intruders III and IV and the coverage of the census shares are set beside the 2008
design, the synthesis of the same sample by a model fitted to it.

Run: ``python examples/drechsler_reiter_cps.py`` (``BAYES_RISK_EXAMPLE_SCALE=0.3`` for a quick
run: the population is subsampled to that share).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SCALE, shared_file  # noqa: E402

from bayes_risk import MatchSpec, PopulationSpec, identification_risk  # noqa: E402
from bayes_risk.data import infer_schema, read_table  # noqa: E402
from bayes_risk.models import CARTSynthesizer  # noqa: E402

QI = ["SEX", "AGE", "MARST", "RACESING"]
#: the paper's sampling fraction (n = 10,000 of N = 51,016) and intruder's share of the population
FRACTION = 10_000 / 51_016
SYNTHESES = {"A": ["MARST", "RACESING"], "B": ["AGE", "MARST", "RACESING"]}
LABELS = {"A": "marital status and race synthesized",
          "B": "age, marital status and race synthesized"}
STRATEGIES = {"always": "always", "threshold": ("threshold", 0.5), "not_if_max": "not_if_max"}
ROWS = [
    ("Expected match risk", "expected_match_risk", "{:.1f}"),
    ("True match risk", "true_match_risk", "{:.0f}"),
    ("Number of single matches", "n_unique", "{:,.0f}"),
    ("True match rate (%)", "true_match_rate_unique", "{:.2f}"),
]
M = 5


def population() -> tuple[pd.DataFrame, str]:
    """The stand-in population: complete cases of NYexample, every column a factor."""
    path = shared_file("data", "NYexample_X.csv")
    pop = read_table(path).dropna().astype(str).reset_index(drop=True)
    label = f"NYexample_X complete cases ({len(pop):,} persons)"
    if SCALE < 1.0:
        pop = pop.sample(frac=SCALE, random_state=np.random.default_rng(1999))
        pop = pop.reset_index(drop=True)
        label += f", subsampled to {len(pop):,}"
    pop.insert(0, "pid", np.arange(len(pop)))
    return pop, label


def design(pop: pd.DataFrame, random_seed: int = 2008) -> dict:
    """Sample, intruder's random units and the four scenarios' target sets."""
    rng = np.random.default_rng(random_seed)
    N = len(pop)
    n = int(round(FRACTION * N))
    sample = pop.iloc[np.sort(rng.choice(N, n, replace=False))].reset_index(drop=True)
    known_units = pop.iloc[np.sort(rng.choice(N, n, replace=False))].reset_index(drop=True)
    in_sample = known_units["pid"].isin(sample["pid"])
    counts = pop.groupby(QI, observed=True).size().rename("F").reset_index()
    return {
        "N": N, "n": n, "sample": sample, "counts": counts,
        "targets": {"I": known_units, "II": known_units[in_sample].reset_index(drop=True),
                    "III": pop, "IV": sample},
    }


def synthesize(sample: pd.DataFrame, synthesized: list[str], random_seed) -> list[pd.DataFrame]:
    data = sample.drop(columns="pid")
    schema = infer_schema(data, categorical=list(data.columns))
    cart = CARTSynthesizer(min_leaf=5, donor="bayes_bootstrap", unroutable="climb")
    cart.fit(data, schema=schema, synthesized=synthesized, random_seed=random_seed)
    release = cart.synthesize(M, random_seed=random_seed + 1)
    return [z.assign(pid=sample["pid"].to_numpy()) for z in release.datasets]


def run_scenario(d: dict, release, synthesized, scenario, counts, strategy) -> dict:
    """File-level measures of one intruder (scenario, population counts, strategy)."""
    unsyn = [c for c in QI if c not in synthesized]
    unknown = scenario in ("I", "III")
    targets = dict(targets=d["targets"][scenario], target_id="pid", original_id="pid")
    kw = {"population": PopulationSpec(**targets)}
    if unknown:
        kw = {"match": MatchSpec(strategy=STRATEGIES[strategy]),
              "population": PopulationSpec(
                  membership="unknown",
                  counts=d["counts"] if counts == "true" else "loglinear_synthetic",
                  sampling_fraction=d["n"] / d["N"], **targets)}
    with warnings.catch_warnings():
        # expected here: IPF_NOT_CONVERGED (1,000 cycles, last change < 1e-6), F_BELOW_ONE
        # (sparse keys), NO_MATCH (keys absent from a release) and ZERO_UNIQUE (rate shown as nan)
        warnings.simplefilter("ignore")
        res = identification_risk(
            d["sample"], release, known=[*unsyn, *synthesized], synthesized=synthesized,
            categorical=QI,
            aggregation="pooled", progressbar=False, **kw,
        )
    return res.file


COLUMNS = [("I", "true"), ("I", "estimated"), ("II", None), ("III", "true"),
           ("III", "estimated"), ("IV", None)]
HEAD = {"true": "F_t", "estimated": "F^_t,i", None: ""}


def table(d, release, synthesized, strategy) -> pd.DataFrame:
    """Rows = the paper's four measures, columns = scenario × population counts."""
    cols = COLUMNS if strategy == "always" else [c for c in COLUMNS if c[1] is not None]
    out = {}
    for sc, cnt in cols:
        s = run_scenario(d, release, synthesized, sc, cnt, strategy)
        out[(f"Scen. {sc}", HEAD[cnt])] = [s[key] for _, key, _ in ROWS]
    df = pd.DataFrame(out, index=[r[0] for r in ROWS])
    df.loc["True match rate (%)"] *= 100
    return df


def show(df: pd.DataFrame, title: str) -> None:
    print(title)
    fmt = {r[0]: r[2] for r in ROWS}
    heads = [f"{a} {b}".strip() for a, b in df.columns]
    print(f"{'':26s}" + "".join(f"{h:>17s}" for h in heads))
    for name, row in df.iterrows():
        cells = ["nan" if not np.isfinite(v) else fmt[name].format(v) for v in row.to_numpy()]
        print(f"{name:26s}" + "".join(f"{c:>17s}" for c in cells))
    print()


#: NYexample's age groups, as bounds of single years (its levels "<15" ... ">70")
NY_AGE_GROUPS = ([0, 14, 15, 16, 17, 24, 35, 50, 70, 200],
                 ["<15", "15", "16", "17", "[18,24]", "[25,35]", "[36,50]", "[51,70]", ">70"])


def age_kept_share(random_seed: int = 1) -> pd.DataFrame:
    """How often CART's synthetic age is a record's own (issue 68, item 6), on the CE sample,
    whose Age has single years: synthesized as the paper does (a regression tree on single
    years, at least 5 records a leaf, the Bayesian bootstrap; then marital status), and with
    the same records' ages in NYexample's groups (a classification tree). A target keeps its
    key, and can be truly matched, only when its synthetic age is its own."""
    ce = read_table(shared_file("data", "CEdata.csv"))
    bounds, labels = NY_AGE_GROUPS
    groups = pd.cut(ce["Age"], bounds, labels=labels).astype(str)
    rows = {}
    for label, data, cat in (
            ("single years (the paper's)", ce, ["Urban", "Marital", "Tenure"]),
            ("NYexample's age groups", ce.assign(Age=groups),
             ["Age", "Urban", "Marital", "Tenure"])):
        schema = infer_schema(data, categorical=cat)
        cart = CARTSynthesizer(min_leaf=5, donor="bayes_bootstrap", unroutable="climb")
        cart.fit(data, schema=schema, synthesized=["Age", "Marital"], random_seed=random_seed)
        kept = [float((z["Age"] == data["Age"]).mean())
                for z in cart.synthesize(M, random_seed=random_seed + 1)]
        rows[label] = {"age values": int(data["Age"].nunique()), "kept (mean)": np.mean(kept),
                       "kept (min)": min(kept), "kept (max)": max(kept)}
    return pd.DataFrame(rows).T


#: the estimands of the utility comparison: the shares of the synthesized columns' levels
SWS_ESTIMANDS = ("AGE", "MARST", "RACESING")


def sampling_with_synthesis(d: dict, random_seed: int = 2010) -> dict:
    """Drechsler & Reiter (2010) on the same stand-in: the population is the census; age,
    marital status and race, the paper's synthesized columns (Hu 2019, Table 6), are
    synthesized on the whole census (CART, m = 5 synthetic populations) and
    the paper's sampling fraction of its units is released from each (the same units). Beside
    it, Drechsler & Reiter's (2008) design on the same sample: the sample synthesized by a model
    fitted to the sample alone. Intruders III (every unit, membership unknown, the true counts)
    and IV (the sampled units, membership known); the census shares of each level of the
    synthesized columns against the 95 % intervals of the two designs' combining rules."""
    from bayes_risk.data import SyntheticData
    from bayes_risk.models import sampling_with_synthesis as sws
    from bayes_risk.utility import combine_scalar

    pop = d["pop"]
    census = pop.drop(columns="pid")
    schema = infer_schema(census, categorical=list(census.columns))
    cart = CARTSynthesizer(min_leaf=5, donor="bayes_bootstrap", unroutable="climb")
    cart.fit(census, schema=schema, synthesized=SYNTHESES["B"], random_seed=random_seed)
    rel = sws(cart, census, populations=M, sample_fraction=d["n"] / d["N"],
              random_seed=random_seed + 1)
    units = np.asarray(rel.extra["sampling"]["sampled_records"])
    sample = pop.iloc[units].reset_index(drop=True)
    # Drechsler & Reiter (2008) on the same units: their synthesis fitted to the sample alone
    of_sample = synthesize(sample, SYNTHESES["B"], random_seed=random_seed + 2)
    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NO_MATCH, ZERO_UNIQUE, as in the tables above
        for scen, membership in (("III", "unknown"), ("IV", "known")):
            rows[("sampling with synthesis", f"Scen. {scen}")] = identification_risk(
                census, rel, known=QI, categorical=QI, aggregation="pooled",
                population=PopulationSpec(membership=membership), progressbar=False).file
            dd = {**d, "sample": sample, "n": len(sample),
                  "targets": {"III": pop, "IV": sample}}
            rows[("synthesis of the sample", f"Scen. {scen}")] = run_scenario(
                dd, of_sample, SYNTHESES["B"], scen, "true", "always")
    risk = pd.DataFrame({k: [v[key] for _, key, _ in ROWS] for k, v in rows.items()},
                        index=[r[0] for r in ROWS])
    risk.loc["True match rate (%)"] *= 100
    # the census shares of the synthesized columns' levels, covered or not
    cover = []
    for design, release, rules in (("sampling with synthesis", rel, "partial-sample"),
                                   ("synthesis of the sample", of_sample, "partial")):
        datasets = list(release) if isinstance(release, SyntheticData) else release
        for col in SWS_ESTIMANDS:
            for level in sorted(census[col].unique()):
                q = [float((z[col] == level).mean()) for z in datasets]
                u = [p * (1 - p) / len(z) for p, z in zip(q, datasets, strict=True)]
                r = combine_scalar(q, u, rules=rules, size_ratio=len(sample) / len(census))
                truth = float((census[col] == level).mean())
                cover.append({"design": design, "estimand": f"P({col} = {level})",
                              "census": truth, "estimate": r.estimate, "lower": r.ci_lower,
                              "upper": r.ci_upper, "covers": r.ci_lower <= truth <= r.ci_upper,
                              "width": r.ci_upper - r.ci_lower})
    return {"release": rel, "risk": risk, "coverage": pd.DataFrame(cover)}


def main() -> dict:
    pop, label = population()
    d = design(pop)
    print(f"population: {label}; sample n = {d['n']:,} (fraction {d['n'] / d['N']:.3f}); "
          f"scenarios I/II: {len(d['targets']['I']):,} random population units, "
          f"{len(d['targets']['II']):,} of them in the sample; m = {M}")
    keys = d["sample"].groupby(QI, observed=True).size()
    print(f"sample: {int((keys == 1).sum())} unique and {int((keys == 2).sum())} doubled keys of "
          f"{' x '.join(QI)}\n")
    tables, releases = {}, {}
    for k, syn in SYNTHESES.items():
        release = synthesize(d["sample"], syn, random_seed=2008 + 10 * ord(k))
        releases[k] = release
        for strategy, what in (("always", "matches regardless of Pr(J = s+1)"),
                               ("threshold", "matches only if Pr(J = s+1) < 0.5"),
                               ("not_if_max", "does not match when J = s+1 is the most probable")):
            df = table(d, release, syn, strategy)
            tables[(k, strategy)] = df
            show(df, f"Synthesis {k} ({LABELS[k]}); the intruder {what}")
    d["pop"] = pop
    sws = sampling_with_synthesis(d)
    print("Sampling with synthesis (Drechsler & Reiter 2010) against the synthesis of the "
          "sample (2008), age, marital status and race synthesized, true counts:")
    print(sws["risk"].round(3).to_string())
    cov = sws["coverage"].groupby("design")["covers"].agg(["sum", "size"])
    print("census shares of the synthesized columns' levels covered by the 95 % intervals: "
          + "; ".join(f"{k} {int(r['sum'])} of {int(r['size'])}" for k, r in cov.iterrows()))
    return {"design": d, "releases": releases, "tables": tables, "sampling_with_synthesis": sws}


if __name__ == "__main__":
    main()
