"""McClure & Reiter (2012): ε of differential privacy beside the Bayesian attribute risk, on
binary data.

A table of three binary variables (eight cells) whose cells hold 40, 20, 15, 10, 8, 4, 2 and 1
records (n = 100, embedded below: no data are read) is released by the multinomial–Dirichlet
synthesizer of Machanavajjhala et al. (2008), one synthetic dataset of n records per release,
at ε from 0.5 to 20 (prior count α = n / (e^ε − 1) per cell). For each ε, ``R`` releases (their
own fits and seeds) are assessed with the package's attribute risk: the worst-case intruder
(every other record known) with the uniform prior over the eight cells guesses one record of
each cell (the records of a cell share their posterior). Reported per cell size and ε: the mean
over the releases of the probability of the truth (p_true), of the Bayes factor of the truth,
and the largest Bayes factor, beside the bound e^ε that differential privacy puts on it, and the
bound on p_true, e^ε / (e^ε + 7).

McClure & Reiter's finding (Hu 2019, §5): the two paradigms are not easily reconciled — the
Bayesian risk depends on the data, ε does not — and attribute risks can be small even when ε is
large. Here: the records of populated cells stay near the prior (1/8) however large ε is; the
record alone in its cell approaches the bound as ε grows.

Run: ``python examples/mcclure_reiter_dp.py`` (``BAYES_RISK_EXAMPLE_SCALE=0.2`` for a quick run:
fewer releases per ε and fewer posterior draws).
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import gammaln, logsumexp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import scaled  # noqa: E402

import bayes_risk as br  # noqa: E402
from bayes_risk.models import DPMultinomial, Sampling  # noqa: E402

#: records per cell, cell k = (x1, x2, x3) in binary order 000, 001, ..., 111
CELL_COUNTS = (40, 20, 15, 10, 8, 4, 2, 1)
EPSILONS = (0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 15.0, 20.0)
#: releases per ε and posterior draws per fit, at full scale
RELEASES, DRAWS = 10, 500
G = 8  # the intruder's candidates: every cell


def table() -> pd.DataFrame:
    """The confidential table: CELL_COUNTS records in the eight cells, as categorical columns."""
    cells = np.repeat(np.arange(G), CELL_COUNTS)
    bits = (cells[:, None] >> np.arange(2, -1, -1)) & 1
    return pd.DataFrame({f"x{j + 1}": pd.Categorical(bits[:, j].astype(str),
                                                     categories=["0", "1"])
                         for j in range(3)})


def one_record_per_cell(data: pd.DataFrame) -> list[int]:
    """The first record of each cell (the others of the cell have the same posterior)."""
    return list(np.cumsum((0, *CELL_COUNTS[:-1])))


def exact_p_true(counts: np.ndarray, synthetic: np.ndarray, alpha: float) -> np.ndarray:
    """The exact worst-case posterior of the truth for a record of each cell, uniform prior over
    the G cells: post(c) ∝ DirMult(s; α + counts − e_truth + e_c) (methods page, Differential
    privacy), the reference the package's estimates are read against."""
    out = np.empty(G)
    for t in range(G):
        a = alpha + counts - np.eye(G)[t] + np.eye(G)  # row c: the table with the record in c
        ll = (gammaln(a + synthetic) - gammaln(a)).sum(axis=1) - gammaln(
            a.sum(axis=1) + synthetic.sum()) + gammaln(a.sum(axis=1))
        out[t] = np.exp(ll[t] - logsumexp(ll))
    return out


def assess(eps: float, r: int, data: pd.DataFrame, draws: int) -> pd.DataFrame:
    """One release at ε: its fit, its dataset, the package's attribute risk of one record per
    cell and the exact value beside it."""
    model = DPMultinomial(epsilon=eps, sampling=Sampling(draws=draws, chains=2),
                          random_seed=[int(eps * 1000), r]).fit(data)
    release = model.synthesize(1, random_seed=[int(eps * 1000), r, 1])
    res = br.attribute_risk(data, release, model=model, records=one_record_per_cell(data),
                            candidates="full", random_seed=[int(eps * 1000), r, 2],
                            progressbar=False)
    rec = res.to_dataframe().reset_index()
    dp = res.settings["differential_privacy"]
    synthetic = np.bincount(_cells(release[0]), minlength=G)
    return pd.DataFrame({"epsilon": eps, "release": r, "cell_size": CELL_COUNTS,
                         "p_true": rec["p_true"], "bayes_factor": rec["bayes_factor"],
                         "flagged": rec["flag_codes"] != "",
                         "exact": exact_p_true(np.array(CELL_COUNTS), synthetic, model.alpha_),
                         "epsilon_release": dp["epsilon"], "bf_bound": dp["bayes_factor_bound"]})


def _cells(t: pd.DataFrame) -> np.ndarray:
    return np.ravel_multi_index([t[c].cat.codes.to_numpy() for c in ("x1", "x2", "x3")],
                                (2, 2, 2))


def main() -> dict:
    data = table()
    releases, draws = scaled(RELEASES, 3), scaled(DRAWS, 200)
    with warnings.catch_warnings():
        # the records whose estimate cannot be trusted are flagged in the results (shown)
        warnings.simplefilter("ignore", br.ImportanceSamplingWarning)
        runs = pd.concat([assess(e, r, data, draws) for e in EPSILONS for r in range(releases)],
                         ignore_index=True)
    runs["exact_bayes_factor"] = (G - 1) * runs["exact"] / (1 - runs["exact"])
    ok = runs[~runs["flagged"]]
    by = ["cell_size", "epsilon"]
    summary = runs.groupby(by, sort=True).agg(
        exact=("exact", "mean"), largest_exact=("exact", "max"),
        largest_exact_bayes_factor=("exact_bayes_factor", "max"),
        flagged=("flagged", "mean"))
    summary["p_true_unflagged"] = ok.groupby(by)["p_true"].mean()
    summary["largest_error_unflagged"] = (ok["p_true"] - ok["exact"]).abs().groupby(
        [ok["cell_size"], ok["epsilon"]]).max()
    summary["bf_bound"] = [math.exp(e) for e in summary.index.get_level_values("epsilon")]
    summary["p_true_bound"] = summary["bf_bound"] / (summary["bf_bound"] + G - 1)
    print(f"binary table of n = {len(data)} records, cells {CELL_COUNTS}; {releases} releases "
          f"per ε, {2 * draws} posterior draws; exact mean p_true (the prior: {1 / G:.3f}):")
    print(summary["exact"].unstack("epsilon").round(3).to_string())
    print("share of the estimates flagged (the package cannot stand behind them):")
    print(summary["flagged"].unstack("epsilon").round(2).to_string())
    return {"data": data, "runs": runs, "summary": summary, "releases": releases,
            "draws": draws}


def figure(out: dict):
    """Mean p_true against ε per cell size, with the bound of differential privacy."""
    import matplotlib.pyplot as plt

    s = out["summary"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    eps = np.array(EPSILONS)
    bound = np.exp(eps) / (np.exp(eps) + G - 1)
    ax.plot(eps, bound, "k--", label="bound of ε-DP: e^ε / (e^ε + 7)")
    ax.axhline(1 / G, color="grey", lw=0.8, label="prior 1/8")
    for size in sorted(CELL_COUNTS):
        ax.plot(eps, s.loc[size, "exact"].to_numpy(), marker="o", ms=3,
                label=f"record in a cell of {size}")
    ax.set_xscale("log")
    ax.set_xlabel("ε of the release (log scale)")
    ax.set_ylabel("mean p_true over the releases (exact)")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()
