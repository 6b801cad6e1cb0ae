"""The warning catalogue: every warning code a result can carry and its explanation
(:data:`MESSAGES`); the errors page lists the same codes. Imports nothing of the package.
"""

from __future__ import annotations

__all__ = ["MESSAGES", "RECORD_FLAGS", "LOW_RISK_FLAG", "MEMBERSHIP_FLAGS", "MEMBERSHIP_MESSAGES",
           "ATTACK_MESSAGES", "message"]

#: attribute risk: the record flags that make a record "flagged" (reported separately, never
#: averaged in silently), in the order a record's ``flag_codes`` lists them
RECORD_FLAGS = (
    "LOW_ESS_Q",
    "KHAT_HIGH",
    "DOMINATED_SUM",
    "DRAW_DROPPED",
    "TRUTH_OUTSIDE_SUPPORT",
    "ALL_CANDIDATES_IMPOSSIBLE",
    "RELEASE_IMPOSSIBLE",
    "MC_ERROR_HIGH",
    "CHAINS_DISAGREE")

#: attribute risk: the code of the low-risk stand-in (Wang & Reiter's, not an
#: importance-sampling estimate)
LOW_RISK_FLAG = "APPROX_LOW_RISK"

MESSAGES: dict[str, str] = {
    # differencing the implicates of a partially synthetic release (Hawala 2008)
    "SELECTION_REVEALED": "comparing the released implicates reveals which records were "
    "selected for synthesis (their values differ between implicates) and which variables were "
    "synthesized: release one implicate, or synthesize every record.",
    # attribute risk: record flags (the records are reported separately, never averaged in)
    "LOW_ESS_Q": "the importance-sampling effective sample size of a candidate's estimate is "
    "below the threshold; the record's estimate is unreliable.",
    "KHAT_HIGH": "the Pareto k-hat of an importance-sampling estimate is above the threshold; "
    "the truth's probability may be understated (see p_true_upper).",
    "DOMINATED_SUM": "one posterior draw carries more than 90 % of a sum the record's estimate "
    "uses (max_weight_share), whatever k-hat says: its Monte Carlo error cannot be read from "
    "the draws.",
    "DRAW_DROPPED": "posterior draws with a non-finite log-likelihood were dropped.",
    "TRUTH_OUTSIDE_SUPPORT": "the record's true value is not among its candidates.",
    "ALL_CANDIDATES_IMPOSSIBLE": "every candidate of the record has likelihood zero.",
    "RELEASE_IMPOSSIBLE": "the model gives the release likelihood zero under the record's "
    "true value, so the likelihood ratios of its candidates are undefined: the model could "
    "not have made this release (another model, or a release edited after synthesis).",
    "CHAINS_DISAGREE": "the record's estimate differs between MCMC chains by more than their "
    "Monte Carlo error and by a material amount, two percentage points or a factor 1.2 (see "
    "p_true_chain_min / p_true_chain_max): treat it as unresolved; run longer or more chains, "
    "or refit.",
    "MC_ERROR_HIGH": "the Monte Carlo error of a plug-in likelihood could hide a higher risk: "
    "within the 95 % simultaneous Monte Carlo bounds of the candidates' likelihoods, p_true "
    "could be higher by more than the material rule's tolerance (0.01 unless set), or the "
    "truth ranked first (p_true_upper); more "
    "Bayesian-bootstrap replicates narrow the bounds (--plugin-replicates of 'bayes-risk "
    "attribute' and 'audit', EstimatorSpec.plugin_replicates).",
    # attribute risk: file level
    "H_TOO_SMALL": "fewer than 20 posterior draws: the importance-sampling estimates are "
    "unreliable.",
    "PRIOR_RENORMALISED": "the prior weights given did not sum to 1 and were renormalised.",
    "HARMONIC_WEIGHTS": "the model-predictive prior uses harmonic-mean weights, which can be "
    "unstable; check khat_max.",
    "UNKNOWN_CATEGORY_IN_CANDIDATES": "some candidates hold categories the model was never "
    "fitted with; they get probability 0.",
    "NO_ALTERNATIVE": "some records are offered no candidate value other than the truth in a "
    "column (e.g. a percent grid that rounds to the truth on a small count): their risk in that "
    "column is not assessed, and a record with G = 1 has p_true = 1 by construction.",
    "RECORDS_RELEASED_UNCHANGED": "some evaluated records were not synthesized and are "
    "released as they are; their true value is disclosed.",
    "APPROXIMATE_NONPARAMETRIC": "the random-forest plug-in likelihood is an approximation "
    "(the forest is not re-grown for each candidate).",
    "TRUTH_ZERO_LIKELIHOOD": "the model gives the true value likelihood zero.",
    "TARGET_NOT_SYNTHESIZED": "the target record was not synthesized.",
    "APPROX_LOW_RISK": "the low-risk intruder's posterior is approximated by the record's m "
    "synthetic values (Wang & Reiter 2012), not estimated by importance sampling.",
    # MCMC
    "RHAT_HIGH": "R-hat of a diagnosed quantity is above its threshold: the chains disagree.",
    "LOW_ESS": "the MCMC effective sample size of a diagnosed quantity is low.",
    "REGIMES_DISAGREE": "the chains of a mixture fit sit in different regimes of the class "
    "structure (they disagree on the concentration α, the number of occupied classes k* or "
    "the log-likelihood; the warning names each chain's values): every risk computed from the "
    "fit depends on which draws are used. A DPMPM fit bounds each regime's marginal likelihood "
    "from its partitions and says which regime holds the mass of the regions the chains visited "
    "when the bounds settle it (a share of those regions' mass, not a posterior probability); "
    "compare refits (other seeds, more chains, longer runs).",
    "REGIMES_NOT_RANKED": "the regimes of a DPMPM fit (REGIMES_DISAGREE) could not be ranked: "
    "the bounds of a region's marginal likelihood hold for a collapsed Gibbs chain at rest in "
    "it, and a chain's log density or entropy terms still drifted after the evidence pass "
    "extended itself; the verdicts read the larger of the regimes' figures. Refit with longer "
    "runs.",
    "RISK_BY_REGIME": "the risk was computed separately from the draws of each regime of the "
    "fit (REGIMES_DISAGREE) and the figures differ: the verdict reads the figure of the regime "
    "that holds the mass of the regions the chains visited when the fit settles which one "
    "does, else the larger; every regime's figure is listed.",
    "TRUNCATION_TOO_SMALL": "the kept posterior draws occupy K - 1 or more of the K classes of "
    "the truncated mixture: the truncation may cut off posterior mass; increase n_components.",
    "DIVERGENCES": "NUTS reported divergent transitions while sampling the posterior of a PyMC "
    "model: the draws may miss part of the posterior, so the risks computed from them may be "
    "biased; raise target_accept (e.g. 0.95) or reparametrise the model (a non-centred random "
    "effect).",
    # identification risk
    "NO_MATCH": "some targets have no matching record in a synthetic dataset.",
    "RADIUS_NOT_SEARCHED": "the radius search was turned off (sweep=None, --radius-sweep "
    "none): the identification figures are at the radius given, not the worst case over the "
    "radii the intruder can choose, and may understate the risk.",
    "RADIUS_COORDINATE_SEARCH": "the grid of radii had more points than max_grid, so a "
    "coordinate search (each column's radii in turn) stood in for it: it may miss the "
    "grid's largest figure.",
    "RADIUS_SEARCH_BOUNDED": "the radius search bounded the figures between the grid's "
    "points but did not pin their largest value down within the points allowed (refine=..., "
    "--radius-refine): the figure is the largest found and the worst case lies at most at the "
    "bound stated; more points narrow it.",
    "RADIUS_GRID_ONLY": "the identification figures are the largest over the grid's points and "
    "were not bounded between them (the reason is stated: population counts, a fallback one "
    "dataset at a time, the memory): a radius between two grid points may give more.",
    "RADIUS_AT_GRID_EDGE": "the largest figure of the radius search lies at the largest radius "
    "searched for some column: an intruder who matches that column more loosely (or not at "
    "all) may find more; widen the search (sweep=..., --radius-sweep) or run the knowledge "
    "sweep.",
    # plain release files (no manifest, so no fingerprint of the original)
    "ROWS_NOT_VERIFIED": "no column of the synthetic data equals the original's row by row, so "
    "the row order of the files cannot be checked: the measures assume that row i of every "
    "dataset is record i of the original.",
    # provenance: the datasets of a release, the model of a release, a model folder's files
    "DUPLICATE_DATASETS": "two synthetic datasets of the release hold the same value in every "
    "record and column (a copy, or a synthesizer that drew the same dataset twice): counted as "
    "separate draws they overstate m and understate the between-dataset variance.",
    "MODEL_DIFFERS": "the fitted model is not the one that made the release, and it was used "
    "as asked (allow_other_model=True, --allow-other-model): the risks are those of this "
    "model, not necessarily of the release's.",
    "MODEL_UNVERIFIED": "the model folder was saved by an older bayes-risk (format version 0 "
    "or 1) without the checksums of (some of) its files, so damage to what they do not cover "
    "cannot be detected; save it again to record them.",
    "SYNTHETIC_ONLY_LEVEL": "a release said to recode a column (--recoded, "
    "SyntheticData.declare_recoded) holds levels of it that the original never holds: each is "
    "kept as a level of its own, which no original record matches.",
    "SPARSE_COLUMN": "a categorical attack column is an identifier or a sparse column (many "
    "of its levels held by one record of the original): the holdout's records hold levels the "
    "original never holds as a rule, which is not taken as a holdout coded otherwise; such a "
    "column singles out or links a record by its level alone.",
    "VALUE_LABELS_DIFFER": "a release said to recode a column (--recoded, "
    "SyntheticData.declare_recoded) labels its codes otherwise than the original's SAS, Stata "
    "or SPSS value labels: its levels are its labels, which an intruder reading the codes "
    "would not see.",
    "RELEASE_UNVERIFIED": "the release folder was written by an older bayes-risk (format "
    "version 1), whose manifest records no checksums of its dataset files, so a dataset "
    "damaged, truncated or replaced by another since cannot be detected; write it again to "
    "record them (SyntheticData.load(old).save(new)).",
    "REFIT_CACHE_DAMAGED": "an entry of the refit cache did not verify (a file missing, edited "
    "or cut short, or not the refit its name says): it was ignored, the refit made again and "
    "the entry replaced.",
    "REFIT_CACHE_UNWRITABLE": "a refit could not be stored in the refit cache (disk full, no "
    "permission): the run went on with the refit made, which a later run makes again.",
    "ORIGINAL_UNCONFIRMED": "a synthesized column of the synthetic data shows no row-by-row "
    "association with the original's: the original's column may not be the one the release "
    "was made from, and a risk measured against it would be understated (the check of plain "
    "release files; a release with its manifest has the original's fingerprint checked).",
    "SUPPRESSED_AS_MISSING": "values of a column the line matches on were suppressed by local "
    "suppression (sdcMicro's localSuppression(), bayes-risk remedy --local-suppression): they "
    "are missing in the release, which the measure counts as a value of its own that no "
    "original value matches, while an intruder who knows the release was suppressed reads a "
    "suppressed value as any value and may match more records. The line can understate the "
    "risk; the k-anonymity the suppression reached counts a missing value as matching every "
    "value (sdcMicro's convention).",
    "ZERO_UNIQUE": "no target is a unique match, so the rates over unique matches are "
    "undefined.",
    "F_BELOW_ONE": "some estimated population counts are below one and were raised to one.",
    "IPF_NOT_CONVERGED": "the log-linear model of the population counts (IPF) did not "
    "converge.",
    "MCSE_NOT_REACHED": "n='auto' stopped at max_replicates before the relative Monte Carlo "
    "standard error of the expected match risk reached mcse_tol.",
    "MCSE_UNAVAILABLE": "the posterior replicates formed a single batch, so no Monte Carlo "
    "standard error could be computed (mc_se is nan); use a batch_size below n.",
    "LEGACY_NONPOSITIVE_NO_MATCH": "compatibility mode: a target without a match is counted "
    "as the R package counts it.",
    # utility
    "SEPARATION": "perfect or quasi-perfect separation: some fitted propensities are 0 or 1, "
    "so the chi-square null (theory) is not valid.",
    "NOT_CONVERGED": "the logistic propensity model did not converge; increase max_iter or "
    "reduce max_order.",
    "LARGE_MODEL": "large propensity model: more than N/5 coefficients; consider max_order=0 "
    "or fewer columns.",
    "FEW_PAIRS": "fewer than 6 pairs of synthetic datasets for the 'pairs' null; m >= 4 is "
    "advisable.",
    "ZERO_DF": "no estimable coefficient involves a synthesized variable; the theory null is "
    "undefined and the ratio is nan.",
    "NO_SPLITS": "some resampled CART fits produced no split; the resampling null may be "
    "unreliable.",
    "EMPTY_LEVELS_DROPPED": "levels absent from both tables were dropped from the propensity "
    "model.",
    "CONSTANT_COLUMN_DROPPED": "a column constant in both tables was dropped from the "
    "propensity model.",
    "M_EQUALS_ONE": "one synthetic dataset: the between-dataset variance is undefined, so the "
    "variance is the dataset's own and the reference is normal.",
    "SMALL_T": "t = k(m - 1) <= 4: the degrees-of-freedom formula is intended for t > 4 and "
    "nu_p = 4 is used.",
    "DEGENERATE_INTERVAL": "an interval has zero length, so its overlap is undefined.",
    "ROLE_INFERENCE_DOUBTFUL": "the synthesized columns were inferred as those that differ "
    "from the original, and the inference is doubtful; give them explicitly.",
    "NO_DIFFERENCES": "no column differs from the original: nothing appears synthesized.",
    "ROW_COUNT_DIFFERS": "the synthetic datasets do not have the original's number of rows.",
    "RELEASE_HOLDS_ORIGINAL": "a release of another size than the original holds at least half "
    "of the original's records unchanged in every column, more than rows drawn from the other "
    "records' combinations would: it looks like the original itself, or a file that contains "
    "it, given in the release's place.",
    # business-data attribute measures (closest match)
    "RECORDS_EXCLUDED": "records with an empty value (or a declared missing-value code) in a "
    "key of the closest match were left out: the share is over the records assessed.",
    # empirical disclosure measures
    "TARGET_MOSTLY_UNIQUE": "the numeric target has mostly distinct values, so the attribute "
    "measures count exact-value disclosure; consider ngroups_target.",
    "TCAP_UNDEFINED": "TCAP is undefined for some dataset: no original record has keys found "
    "in the synthetic data.",
    "RELEASE_INDEPENDENT": "the measure cannot depend on the release (the intruder matches on "
    "unsynthesized columns only, or it is computed on the original alone, as sdcMicro's risk "
    "of the original): a baseline of the original, not a risk of the release.",
    # sdcMicro's risk of the original
    "WEIGHTED_FREQUENCY_BELOW_SAMPLE": "the survey weights of some key cells sum to less than "
    "their numbers of records (weights below 1): the negative binomial risk is undefined "
    "there, and those records get its largest value, 1/f_k.",
    "SENSITIVE_MOSTLY_UNIQUE": "a numeric sensitive column has mostly distinct values, so "
    "l-diversity counts close values as diverse and overstates the protection; group the "
    "column first.",
    "SUDA_FEW_KEYS": "SUDA2 with fewer than three keys: sdcMicro scores the minimal sample "
    "uniques as if there were three (it pads the keys with constant columns); the scores rank "
    "records but are read with care.",
    # singling-out and linkability attacks (anonymeter)
    "NO_HOLDOUT": "no holdout (control set) was given: the risk is the main attack's success "
    "rate, not its excess over the same attack on records the synthesis did not use.",
    "FEW_SINGLING_OUT_QUERIES": "fewer singling-out predicates than n_attacks could be written "
    "on a synthetic dataset: the rates are over those written, with wider intervals.",
    "ATTACK_NOT_BETTER_THAN_BASELINE": "the main attack does no better than the baseline of "
    "random guesses: the attack may be too weak for these data, and a low risk says little.",
    "CONTROL_SIZE_CORRECTION": "the holdout's size differs from the original's by more than a "
    "factor 2 (or the fit failed): the control count of singling out is extrapolated by "
    "anonymeter's model; give a holdout about the size of the original.",
    "CONTROL_ALWAYS_SUCCEEDS": "the control attack succeeds on every holdout record: the risk "
    "beyond it is undefined (nan).",
    # fitting a synthesizer
    "UNUSED_LEVEL": "a declared level of a categorical column that no record holds (an unused "
    "category of a pandas Categorical, a codebook's level) was dropped from the fitted model, "
    "so that it is given no probability and never released; keep it with keep_unused_levels.",
    # reading SAS, Stata and SPSS files (bayes_risk.data.statfiles)
    "VALUE_LABELS_NOT_FOUND": "a column of a SAS, Stata or SPSS file names value labels (a SAS "
    "format, a Stata label set) that were not found (no format catalog beside the file): its "
    "codes are read as numbers; put the catalog beside the file or declare the column's type.",
    "MISSING_LEVELS_UNORDERED": "a column that is ordinal in its SPSS file holds missing-value "
    "levels (user-missing codes), which have no place in its order: it is read as categorical, "
    "unordered; declare those levels missing (--missing-code COL=LABEL) to keep it ordinal.",
    "PREDICTOR_DROPPED": "a predictor_matrix names as a predictor of a column a column "
    "synthesized after it; it was dropped from that column's predictors, as synthpop does "
    "(a column whose predictors are all dropped is drawn by sample): visit it earlier to keep it.",
    "POLR_TO_MULTINOM": "a column a specification draws by polr could not be fitted by the "
    "proportional-odds model (sparse data): it is drawn by the multinomial logit (polyreg) "
    "instead, as synthpop's syn.polr does; merge sparse levels or name polyreg.",
    "SMALL_CELLS_REMAIN": "after small-cell predictive mean matching a cell of the identifying "
    "variables' table still holds no more records than the threshold: the donors or the "
    "constraints did not let every recipient leave the sensitive cells; condense categories or "
    "relax the constraints."}


#: the attacks' meaning of codes they share with another measure
ATTACK_MESSAGES: dict[str, str] = {
    "HOLDOUT_OVERLAPS_ORIGINAL": "more holdout rows equal a record of the original than the "
    "original's own duplicates explain: those rows were left out of the control attack (a "
    "member in the control set understates the risk)."}


def message(code: str) -> str:
    """The sentence describing ``code`` (a pointer to the run-time warning if unlisted)."""
    return MESSAGES.get(code, f"see the warning with code {code} raised during the computation.")


# membership risk: its codes mean other things than attribute risk's (KHAT_HIGH of a
# leave-one-out mean, not of a candidate), so they have their own table
#: the codes a target can be flagged with (its estimate is then left out of the summaries)
MEMBERSHIP_FLAGS = ("LIKELIHOOD_UNDEFINED", "KHAT_HIGH", "LOW_ESS", "NORMALISER_UNSTABLE",
                    "HOLDOUT_IN_ORIGINAL", "RELEASED_WHOLE")

#: what the membership codes mean (one sentence each)
MEMBERSHIP_MESSAGES: dict[str, str] = {
    "LIKELIHOOD_UNDEFINED": "the target's membership likelihood ratio is not finite (a "
    "likelihood of zero under every draw): no estimate.",
    "KHAT_HIGH": "the Pareto k-hat of a leave-one-out mean behind the target's likelihood ratio "
    "is above the threshold: the estimate is unstable and left out of the summaries.",
    "LOW_ESS": "the effective sample size of a leave-one-out mean behind the target's likelihood "
    "ratio is below the threshold: the estimate is unreliable and left out of the summaries.",
    "NORMALISER_UNSTABLE": "with m > 1 datasets, a selection rule or a CART release, the "
    "population average that normalises the likelihood ratio has a Pareto k-hat above, or an "
    "effective sample size below, its threshold: increase normaliser_draws.",
    "RELEASED_WHOLE": "the target is the record of a slot the release left unsynthesized "
    "(only selected records were synthesized): the release shows it whole, so its membership "
    "is revealed outright; P(member) = 1, counted in the summaries.",
    "MEMBERSHIP_RELEASED_WHOLE": "some members were not selected for synthesis and are released "
    "whole: their membership is revealed outright (P(member) = 1, flag RELEASED_WHOLE).",
    "MEMBERSHIP_FLAGGED": "some targets are flagged; they are counted separately and left out of "
    "the file-level summaries, which may then understate the risk.",
    "MEMBERSHIP_MISSING_VALUES": "the original or the holdout has missing values in the modelled "
    "columns: a target's missing cells are integrated out and it is compared with a complete "
    "record of the population, a case not checked against exact values; read its "
    "probabilities as approximate (methods page, Membership: models supported and refused).",
    "HOLDOUT_IN_ORIGINAL": "the holdout row equals a record of the original on every column, "
    "and the holdout holds more such copies than chance explains: it is likely a member, so it is "
    "left out of the summaries rather than scored as a non-member.",
    "HOLDOUT_OVERLAPS_ORIGINAL": "more holdout rows equal a record of the original than the "
    "original's own duplicates explain: the holdout overlaps the original; those rows are flagged "
    "HOLDOUT_IN_ORIGINAL (all of them: an error).",
    "MEMBERSHIP_REVEALED": "under the CART plug-in, the release shows for some members a value "
    "that no other record of its node holds (the member's own value was copied): no record of "
    "the population could have produced it, so their membership probability is exactly 1 "
    "(column slot_revealed; banding finely recorded columns or larger leaves make released values "
    "shared).",
    "NO_NON_MEMBERS": "no non-members (holdout or population look-alikes): the attack's advantage "
    "over the base rate is undefined.",
    "APPROXIMATE_POSTERIOR": "some regressions of the chain have Laplace draws (a normal "
    "approximation at the posterior mode), in the fit and its refits: the likelihood ratios are "
    "those of that approximation; refit with posterior_method='nuts' for the exact posterior."}
