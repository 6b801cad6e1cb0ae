"""The report's sections of utility, synthpop's disclosure measures, membership and
anonymeter's attacks (:doc:`/user_guide/audit`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from bayes_risk._io import file_slug
from bayes_risk.auditing.disclosure_step import target_folder
from bayes_risk.auditing.outcome import step_file
from bayes_risk.auditing.report_blocks import (
    TOP_N,
    Block,
    Links,
    Section,
    Span,
    step_section,
    table_block,
)
from bayes_risk.results._base import plot_figure

__all__ = ["utility_section", "comparisons_section", "disclosure_section", "membership_section",
           "attacks_section"]

#: the columns of synthpop's disclosure tables, in plain words
SYNTHPOP_TERMS = {
    "UiO": "unique in the original: records whose key combination occurs once in the original.",
    "UiS": "unique in the synthetic data: synthetic records whose key combination occurs once "
           "in that dataset.",
    "UiOiS": "unique in the original and found in the synthetic data: records unique in the "
             "original whose key combination occurs in the synthetic dataset.",
    "repU": "replicated uniques: records unique in the original whose key combination is also "
            "unique in the synthetic dataset — one an intruder could single out.",
    "Dorig": "disclosive in the original: records whose key combination has a single value of "
             "the target in the original.",
    "Dsyn": "disclosive in the synthetic data: synthetic records whose key combination has a "
            "single value of the target in that dataset.",
    "iS": "in synthetic: records whose key combination occurs in the synthetic dataset.",
    "DiS": "disclosive in synthetic: records whose key combination has a single value of the "
           "target in the synthetic dataset.",
    "DiSCO": "disclosive in synthetic, correct in original: records whose key combination has "
             "a single target value in the synthetic dataset, and that value is their own — "
             "an intruder who knows the keys reads the right value off the release.",
    "DiSDiO": "DiSCO records whose key combination also has a single target value in the "
              "original: their value could be read off the original just as well.",
    "max_denom, mean_denom": "the largest and the mean number of original records in the "
                             "key–target cells behind DiSCO (counts, not percentages): a large "
                             "cell is disclosure one would expect from the relation between "
                             "keys and target alone.",
    "baseCAPd": "baseline: the probability of guessing a record's target right from the "
                "target's overall distribution alone, without the keys.",
    "CAPd": "correct attribution probability in the original: the probability of guessing a "
            "record's target right from the original's distribution of the target within its "
            "key combination.",
    "CAPs": "the same from the synthetic dataset's own distribution within each key "
            "combination.",
    "DCAP": "the probability that an intruder who guesses an original record's target in "
            "proportion to the synthetic dataset's distribution within its key combination "
            "finds its own value.",
    "TCAP": "among the records whose key combination occurs in the synthetic dataset, the "
            "share whose value the release shows as the single one for their keys (DiSCO "
            "over iS).",
}


SYNTHPOP_SOURCE = ("Source: synthpop's disclosure() and replicated.uniques() help pages; Raab, "
                   "Nowok & Dibben, 'Practical privacy metrics for synthetic data'; formulas "
                   "on the methods page, Empirical disclosure measures.")


@step_section("utility", "utility", "Utility")
def utility_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    r = s.result
    p = r.pmse
    src = step_file(s, "summary.json")
    model = ("a CART model" if p.method == "cart" else
             "a logistic model with main effects" + (
                 "" if p.max_order == 0 else " and two-way interactions" if p.max_order == 1
                 else f" and interactions of up to {p.max_order + 1} columns"))
    sec.p(f"Propensity-score mean squared error (pMSE) of {model} telling original from "
          "synthetic records, on the "
          f"synthesized columns ({', '.join(r.synthesized)}); null: {p.null}",
          " (partial synthesis: the null expectation counts only the synthesized columns)"
          if p.incomplete else " (complete synthesis)",
          ". S_pMSE is pMSE over its null expectation: about 1 when the synthetic data are "
          "indistinguishable from the original; synthpop's guidance is below 10, better below 3.")
    tab = pd.DataFrame({
        "dataset": [*range(1, r.m + 1), f"all {r.m}"],
        "pMSE": [*p.pmse, p.mean_pmse], "S_pMSE": [*p.ratio, p.mean_ratio],
        "standardised pMSE": [*p.std, p.mean_std],
        "mean CI overlap": [*r.overlap_per_dataset, r.mean_overlap],
    })
    sec.blocks.append(table_block(tab, links, src,
                                  "pMSE and interval overlap per synthetic dataset"))
    sec.p(f"Last row: the pMSE figures are means over the {r.m} datasets; the interval overlap "
          f"is that of the intervals combined over the {r.m} datasets with the combining rules "
          "for synthetic data, which the verdict uses. It is not the mean of the rows above: "
          "the combined intervals are estimated from all the datasets together.")
    for note in r.comparison_notes():
        sec.p(note)
    ov = r.overlap.sort_values("overlap").head(TOP_N)
    cols = [c for c in ("estimand", "estimate_orig", "estimate_syn", "overlap") if c in ov]
    sec.blocks.append(table_block(ov[cols], links, step_file(s, "overlap.csv"),
                                  f"Estimands with the smallest 95 % interval overlap (top "
                                  f"{TOP_N}; all in overlap.csv)"))


@step_section("utility", "compare", "Original versus synthetic, variable by variable")
def comparisons_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    from bayes_risk.auditing.plots import marginal_figure

    marg = s.extra["marginals"]
    sec.p("Marginal distributions of the original and the pooled synthetic datasets (as "
          "synthpop's compare()): bars of the percentage of records per level, densities for "
          "numeric variables.")
    syn = set(result.plan.synthesized)
    for v in list(dict.fromkeys(marg["variable"]))[:24]:
        tag = " (synthesized)" if v in syn else ""
        sec.blocks.append(links.figure(lambda v=v: marginal_figure(marg, v),
                                       f"compare_{file_slug(v)}.png", f"{v}{tag}"))
    tw = s.extra["twoway"]
    n_fig = sum(b.kind == "figure" for b in sec.blocks)
    n_tab = tw.groupby(["variable_1", "variable_2"], sort=False).ngroups
    sec.fold = (f"{n_fig} figure{'s' if n_fig != 1 else ''} of the marginals and {n_tab} two-way "
                f"table{'s' if n_tab != 1 else ''} (all in marginals.csv and twoway.csv)")
    for (a, b), t in tw.groupby(["variable_1", "variable_2"], sort=False):
        top = t.reindex(t["difference"].abs().sort_values(ascending=False).index).head(10)
        sec.blocks.append(table_block(
            top[["level_1", "level_2", "original", "synthetic", "difference"]].rename(
                columns={"level_1": a, "level_2": b}),
            links, step_file(s, "twoway.csv"),
            f"Two-way table {a} × {b}: % of records, the 10 cells that differ most", digits=3))


@step_section("disclosure", "disclosure", "Empirical disclosure measures (synthpop)")
def disclosure_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    sec.p("The measures of synthpop's disclosure() and replicated.uniques() (Raab, Nowok & "
          "Dibben, 'Practical privacy metrics for synthetic data'), in per cent of the "
          "records, one row per synthetic dataset; with the original's sample uniques and "
          "k-anonymity on the keys. The keys are the columns the intruder knows, the target "
          "the one they want to learn. What the columns mean (synthpop's names):")
    sec.blocks.append(Block("dl", terms=list(SYNTHPOP_TERMS.items()), caption=SYNTHPOP_SOURCE))
    for t, res in s.result.items():
        sub = target_folder(s.result, t)
        sec.p(f"Target {t}, keys {', '.join(res.keys)}.")
        for df, f, cap in ((res.ident, "ident.csv", "identity measures, % of records"),
                           (res.attrib, "attrib.csv", "attribute measures, % of records "
                            "(max_denom, mean_denom: counts)"),
                           (res.allCAPs, "allCAPs.csv", "correct attribution probabilities, "
                            "%")):
            sec.blocks.append(table_block(df, links, step_file(s, sub + f), f"{cap} ({t})"))
        kb = res.key_baseline
        ksrc = step_file(s, sub + "summary.json")
        sec.p("Original data: ", links.num(kb["n_sample_uniques"], ksrc),
              " sample uniques on the keys (", links.num(kb["pct_sample_uniques"], ksrc),
              " %) in ", links.num(kb["n_key_combinations"], ksrc), " key combinations; "
              "records violating k-anonymity: ",
              *[x for i, (k, d) in enumerate(kb["k_anonymity"].items())
                for x in (Span(("; " if i else "") + f"k = {k}: "),
                          links.num(d["n_violating"], ksrc))], ".")
    base = s.extra.get("original_risk") or {}
    for i, (keys, r) in enumerate(base.items(), start=1):
        sfx = f"_{i}" if len(base) > 1 else ""
        osrc = step_file(s, f"original_risk{sfx}/summary.json")
        g = r.global_risk
        sec.p(f"sdcMicro's risk of the original on the keys {', '.join(keys)} (Templ, Kowarik "
              "& Meindl 2015; a baseline, the same for every release): ",
              links.num(g["expected_reidentifications"], osrc),
              " expected re-identifications (global risk ", links.num(g["global_risk_pct"], osrc,
                                                                     unit=" %"),
              "; " + ("Benedetti–Franconi individual risk with the survey weights "
                      f"{r.settings['weights']}" if r.weighted else
                      "no survey weights: each record's risk is 1/f_k, an upper bound") + ")",
              *([", ", links.num(r.suda["n_records_with_msu"], osrc),
                 " records with a SUDA2 minimal sample unique"] if r.suda else []),
              *[x for c, d in r.l_diversity.items()
                for x in (f"; key cells with one value of {c} hold ",
                          links.num(d["n_records_l1"], osrc), " records (l-diversity 1)")],
              ". Per-record risk, SUDA2 scores and l-diversity: records.csv beside it "
              "(methods page, Risk of the original).")
        sec.blocks.append(links.figure(
            lambda r=r: plot_figure(r, "risk"), f"original_risk{sfx}.png",
            f"The original's records by sdcMicro's individual re-identification risk on the keys "
            f"{', '.join(keys)} (logarithmic axis; dashed: the global risk, their mean): a "
            "baseline, the same for every release."))


@step_section("membership", "membership", "Membership risk")
def membership_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    f, st = s.result.file, s.result.settings
    src = step_file(s, "summary.json")
    sec.p("Worst-case intruder (knows every record but one) holding a record of the original "
          "(member) or of the holdout (non-member): the posterior probability that it was in "
          "the confidential data, with prior ", links.num(st.get("prior"), src),
          " (methods page 'Membership disclosure risk'); beside it the distance to the closest "
          "released record (SDMetrics, anonymeter).")
    sec.blocks.append(table_block(s.result.summary().tables["attack"], links, src,
                                  "The attack's advantage over the base rate (unflagged targets; "
                                  "95 % bootstrap intervals over records)"))
    us = f.get("unsynthesized")
    if us:
        sec.p(f"Partially synthetic release: the unsynthesized values ({', '.join(us['columns'])}"
              ") of every record are released as they are, so a record is a member only if its "
              "own are those of the record it is compared with, and their rarity in the "
              "population weighs in (methods page, 'Partially synthetic releases'). Members "
              "alone in their cell of these columns: ",
              links.num(us.get("share_members_unique"), src),
              "; holdout records with the values of the record they are compared with: ",
              links.num(us.get("share_non_members_matching"), src), ".")
    sec.p("Flagged targets (left out of the figures above): ", links.num(f.get("n_flagged"), src),
          ".")
    sec.blocks.append(links.figure(lambda: plot_figure(s.result, "roc"), "membership_roc.png",
                                   "ROC of the Bayesian score and of the distance baseline"))


@step_section("attacks", "attacks", "Singling out, linkability and inference (anonymeter)")
def attacks_section(sec: Section, s: Any, result: Any, links: Links) -> None:
    so, lk = s.result["singling_out"], s.result["linkability"]
    sec.p("anonymeter's attacks (Giomi et al. 2023; methods page 'Singling out, "
          "linkability and inference'), each made on the records of the original (main "
          "attack), on the holdout, records the synthesis did not use (control attack), and at "
          "random (baseline). The risk is the main attack's success beyond the control's, over "
          "what the control leaves: (main − control) / (1 − control), 0 when the release tells no "
          "more about its own records than about others, with its interval (Wilson score), "
          "clipped to [0, 1] as anonymeter does.")
    sec.blocks.append(table_block(so.summary().tables["risk"], links,
                                  step_file(s, "singling_out.csv"),
                                  "Singling out: predicates that match exactly one synthetic row, "
                                  "and how often they single out a record (rates)"))
    sec.blocks.append(links.figure(lambda: plot_figure(so, "risk"), "attacks_singling_out.png",
                                   "Singling-out risk per dataset and mode, with its interval"))
    if lk is None:
        sec.p(f"Linkability was not run: {s.extra.get('linkability_not_run')}.")
    else:
        a, b = lk.settings["aux_columns"]
        sec.p(f"Linkability: the intruder holds one table with {', '.join(a)} and another "
              f"with {', '.join(b)} about the same people, and links a record's two parts when "
              "they share a nearest synthetic row.")
        sec.blocks.append(table_block(lk.summary().tables["risk"], links,
                                      step_file(s, "linkability.csv"),
                                      "Linkability: records relinked through the nearest synthetic "
                                      "rows (rates)"))
        sec.blocks.append(links.figure(lambda: plot_figure(lk, "risk"),
                                       "attacks_linkability.png",
                                       "Linkability risk per dataset and number of neighbours, "
                                       "with its interval"))
    inf = s.result.get("inference")
    if inf is None:
        return
    sec.p("Inference: the intruder knows every other column of a record and guesses each "
          "synthesized column as the value of the nearest synthetic row (a number is guessed "
          f"right within {100 * inf.settings['tolerance']:.3g} % of the guess, a category when "
          "equal). The Bayesian attribute risk (attribute step) asks the same question of the "
          "model's posterior; this is what one concrete intruder achieves (methods page, "
          "'Inference and the Bayesian attribute risk').")
    sec.blocks.append(table_block(inf.summary().tables["risk"], links,
                                  step_file(s, "inference.csv"), "Inference: secrets guessed "
                                  "right from the nearest synthetic row (rates)"))
    sec.blocks.append(links.figure(lambda: plot_figure(inf, "risk"), "attacks_inference.png",
                                   "Inference risk per dataset and secret, with its interval"))
