"""Drechsler & Reiter (2008, eq. 5): released-dataset replicates against posterior replicates.

Drechsler & Reiter (2008) approximate the integral over the intruder's uncertainty about the
synthesized values, ``Pr(J = j | t, D, M) = ∫ Pr(J = j | t, D, Y_rep, M) p(Y_rep | t, D, M)
dY_rep``, with the ``m`` released datasets as draws of ``Y_rep`` (their eqs. 6–7), and notes that
ideally ``R`` is large. This script makes that comparison on the CE sample of Hornby & Hu
(``../shared/data/CEdata.csv``):

* design of Drechsler & Reiter's first scenario: marital status and a second categorical
  quasi-identifier (housing tenure) synthesized by sequential CART with the per-leaf Bayesian
  bootstrap (minimum leaf 5, visit order Marital → Tenure, m = 5); age and urban/rural released
  unchanged; the intruder knows Age, Urban, Marital and Tenure of every sampled household and that
  they are in the sample (Drechsler & Reiter's scenario IV), matches regardless of ``Pr(J = s+1)``;
* three ways to draw ``Y_rep``: the m = 5 released datasets; ``R`` posterior replicates from the
  agency's fitted synthesizer (a fresh Bayesian bootstrap in every leaf per replicate); ``R``
  replicates from the same synthesizer refitted to the first released dataset (the intruder who
  knows the method, Drechsler & Reiter's ``M``).

Printed: Drechsler & Reiter's measures (expected match risk, true match risk, number of single
matches, true match rate) for each, with the Monte Carlo standard error of the pooled values and the
median over replicates of the per-replicate values.

Run: ``python examples/posterior_replicates_ce.py`` (``BAYES_RISK_EXAMPLE_SCALE=0.1`` for a quick
run: a tenth of the households and of the replicates).
"""

from __future__ import annotations

import warnings

from _common import ce_data, scaled

KNOWN_US = ["Age", "Urban"]
KNOWN_S = ["Marital", "Tenure"]
CATEGORICAL = ["Urban", "Marital", "Tenure"]
ROWS = (
    ("Expected match risk", "expected_match_risk", "{:.1f}"),
    ("True match risk", "true_match_risk", "{:.0f}"),
    ("Number of single matches", "n_unique", "{:.0f}"),
    ("True match rate (%)", "true_match_rate_unique", "{:.2f}"),
)


def main() -> dict:
    import bayes_risk as br
    from bayes_risk.models import CARTSynthesizer

    data, label = ce_data()
    n = scaled(len(data), 200)
    if n < len(data):
        data = data.sample(n=n, random_state=1).reset_index(drop=True)
    R = scaled(500, 20)
    batch = max(5, R // 20)  # 20 groups of replicates for the jackknife MCSE
    schema = br.infer_schema(data, categorical=CATEGORICAL)
    model = CARTSynthesizer(min_leaf=5, progressbar=False).fit(
        data, schema=schema, synthesized=KNOWN_S, random_seed=2008)
    release = model.synthesize(5, random_seed=5)
    kw = dict(categorical=CATEGORICAL, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NO_MATCH codes stay in the results
        results = {
            "released (m = 5)": br.identification_risk(data, release, known=[*KNOWN_US, *KNOWN_S],
                                                       synthesized=KNOWN_S, **kw),
            f"posterior, agency (R = {R})": br.identification_risk(
                data, release, known=[*KNOWN_US, *KNOWN_S], synthesized=KNOWN_S, **kw,
                replicates=br.PosteriorReplicates(model, n=R, batch_size=batch,
                                                  random_seed=11)),
            f"posterior, intruder (R = {R})": br.identification_risk(
                data, release, known=[*KNOWN_US, *KNOWN_S], synthesized=KNOWN_S, **kw,
                replicates=br.PosteriorReplicates(model, n=R, view="intruder",
                                                  batch_size=batch, random_seed=12)),
        }
    print(f"data: {label}; n = {len(data)}, known {KNOWN_US + KNOWN_S}, "
          f"synthesized {KNOWN_S} (CART, Bayesian bootstrap)")
    print(f"{'':26}" + "".join(f"{k:>32}" for k in results))
    for name, key, fmt in ROWS:
        cells = []
        for res in results.values():
            v = res.file[key] * (100 if key == "true_match_rate_unique" else 1)
            se = res.file.get("mc_se", {}).get(key)
            cell = fmt.format(v)
            if se is not None:
                cell += " ± " + fmt.format(se * (100 if key == "true_match_rate_unique" else 1))
            cells.append(f"{cell:>32}")
        print(f"{name:26}" + "".join(cells))
    print("median over replicates of the per-replicate values (the spread of one release):")
    for name, key, fmt in ROWS:
        cells = [f"{'':>32}"]
        for res in list(results.values())[1:]:
            q = res.file["replicate_quantiles"][key]["0.5"]
            q *= 100 if key == "true_match_rate_unique" else 1
            cells.append(f"{fmt.format(q):>32}")
        print(f"{name:26}" + "".join(cells))
    return {"results": results, "data": data, "model": model, "release": release, "R": R}


if __name__ == "__main__":
    main()
