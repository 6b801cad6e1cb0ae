"""User-facing membership disclosure risk. See :doc:`/methods/membership`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, checked
from bayes_risk._rng import RandomSeed, as_generator
from bayes_risk._specs import RECORDS_HELP, as_spec, cli_option
from bayes_risk.attribute.refits import cache_folder
from bayes_risk.contract import capabilities
from bayes_risk.data.missing import missing_mask
from bayes_risk.data.provenance import check_release_model
from bayes_risk.exceptions import NotSupportedError, ValidationError, arg_name, on_command_line
from bayes_risk.membership import dcr as _dcr
from bayes_risk.membership import estimator as _est
from bayes_risk.membership import holdout as _holdout
from bayes_risk.membership import partial as _partial
from bayes_risk.membership import selection as _selection
from bayes_risk.membership import trees as _trees
from bayes_risk.membership.assemble import (
    _result_settings,
    record_table,
    result_summary,
    result_warnings,
    selection_summary,
    unsynthesized_summary,
)
from bayes_risk.membership.evaluate import (
    _normalisers,
    diagnostics,
    fit_posteriors,
    log_predictives,
    selection_match,
    target_flags,
)
from bayes_risk.membership.plan import conditional_population_rows, plan, population_rows
from bayes_risk.membership.prepare import check_drawable, check_options, prepare, prior_probability
from bayes_risk.membership.specs import AttackSpec, RatioSpec
from bayes_risk.results.membership import MEMBERSHIP_FLAGS, MembershipRiskResult

__all__ = ["membership_risk", "MembershipRiskResult", "MEMBERSHIP_FLAGS", "check_model",
           "check_inputs"]


#: a selection rule on a record's own values, as messages show one
_RULE = "Income > 150000 or Age >= 90"


def check_inputs(model: Any, original: Any, synthetic: Any, holdout: Any = None,
                 selection: Any = None) -> None:
    """The checks :func:`membership_risk` makes of its inputs before any refit."""
    rule = _selection.as_selection(selection)
    check_model(model, selection=rule)
    tree = _trees.is_tree_model(model)
    synth = _trees.tree_synthesizer(model) if tree else model
    orig, _, hold, _ = prepare(synth, original, synthetic, holdout, None)
    _holdout.screen_holdout(orig, hold)
    if rule is not None and not tree:
        _selection.check_rule(rule, orig, _selected(model, len(orig)))


def _selected(model: Any, n: int) -> np.ndarray:
    """The rows the model synthesized (all for a model of whole records)."""
    flags = getattr(model, "synthesized_records_", None)
    return np.ones(n, dtype=bool) if flags is None else np.asarray(flags, dtype=bool)


def _selected_rows(model: Any, rule: Any, orig: pd.DataFrame
                   ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """With a selection ``rule``, the rows the model synthesized (checked against the rule) as
    a mask and as positions; ``(None, None)`` without one."""
    if rule is None:
        return None, None
    selected = _selected(model, len(orig))
    _selection.check_rule(rule, orig, selected)
    return selected, np.flatnonzero(selected)


def check_model(model: Any, selection: Any = None) -> None:
    """Refuse the models whose membership likelihood is not derived
    (:doc:`/methods/membership`, Models supported and refused).

    Parameters
    ----------
    model : fitted model
    selection : None, "independent", str or callable
        The selection rule of a release of selected records (``None``: not stated).

    Raises
    ------
    NotSupportedError
        ``MEMBERSHIP_MODEL_UNSUPPORTED`` or ``MEMBERSHIP_PARTIAL_SYNTHESIS``.
    """
    name = type(model).__name__
    if _trees.is_tree_model(model):  # the plug-in ratio (methods, CART releases)
        _trees.check_tree_model(model)
        return
    info = capabilities(model)
    if info.releases_donor_values:  # Hawala's PMM (methods, Models supported and refused)
        raise NotSupportedError(
            f"{name} releases donors' observed values by predictive mean matching: its "
            "recipients are the records of small cells of the identifying variables, a selection "
            "that depends on the other records' values, and a recipient's value is the closest "
            "donor's, a deterministic function of the fit, so the release has no density under "
            "the population record that the membership ratio could evaluate. Every record "
            "outside the small cells is released unchanged (its membership is revealed "
            "outright); use the distance baseline (bayes_risk.membership.dcr.closest_distance) "
            "for the recipients.",
            code="MEMBERSHIP_MODEL_UNSUPPORTED")
    has_record = "record" in info.likelihoods
    if not has_record or "stabilised" not in capabilities(type(model)).estimators:  # or augmented=
        raise NotSupportedError(
            f"{name} does not supply posterior draws with record_loglik and fit_augmented; "
            "membership risk needs both (methods, Membership disclosure risk).",
            code="MEMBERSHIP_MODEL_UNSUPPORTED")
    if getattr(model, "model_class", "P") != "P":
        raise NotSupportedError(
            f"{name} is a class O model (its synthetic values depend on the records' own values "
            "given Θ, e.g. DPMPM's posterior_class mode): the membership ratio is derived for "
            "class P models only; refit in marginal mode.",
            code="MEMBERSHIP_MODEL_UNSUPPORTED")
    schema = getattr(model, "schema_", None)
    if schema is None:
        raise ValidationError(f"{name} is not fitted; fit it before membership_risk.",
                              code="NOT_FITTED")
    if getattr(model, "synthesized_records_", None) is not None and selection is None:
        raise NotSupportedError(
            f"the release synthesizes selected records only ({name} fitted with records=...): "
            "under the alternative hypothesis the record of the population in the target's "
            "slot would have been selected, or not, by the same rule as the others, so the "
            "ratio needs the probability of the selection seen given that record, that is the "
            "selection rule as a function of the data; the model knows only which rows were "
            "selected. Leaving that factor out is exact only if the selection does not depend "
            "on the records' values; selecting at-risk records does, and then it understates "
            "a member's ratio (methods, Membership disclosure risk, Releases that synthesize "
            "selected records). State the rule: "
            f"{arg_name('selection', repr('independent'), cli='independent')} (records chosen "
            "without looking at their values) or a rule on a record's own values (e.g. "
            f"{arg_name('selection', repr(_RULE), cli=repr(_RULE))}). A member left "
            "unsynthesized is released whole: its membership is revealed outright.",
            code="MEMBERSHIP_PARTIAL_SYNTHESIS")
    families = getattr(model, "families_", None) or {}
    rounded = [c for c, f in families.items()
               if f == "normal" and c in schema.names and schema[c].type == "count"]
    if rounded:
        raise NotSupportedError(
            f"{name} models the count column(s) {rounded} with the normal family and rounds its "
            "draws: the released counts are not drawn from the density its likelihood and "
            "refits use, so the membership ratio would be approximate. Model them with "
            "poisson_log (the default for counts) or declare them continuous.",
            code="MEMBERSHIP_MODEL_UNSUPPORTED")
    us = list(schema.unsynthesized)
    if us and getattr(model, "ratio_form", "joint") != "conditional":
        raise NotSupportedError(
            f"the release is partially synthetic (unsynthesized columns {us}) and {name} models "
            "whole records: the ratio needs draws of the posterior given the released "
            "synthesized values under their likelihood given the unsynthesized ones, but its "
            "augmented refits append the released rows as whole records, which counts the "
            "unsynthesized values a second time (their probabilities under the latent classes "
            "come out too sharp), and the error this makes in the ratio has no known sign or "
            "bound (methods, Membership disclosure risk, Partially synthetic releases). Fit a "
            "model of the synthesized columns given the unsynthesized ones "
            "(SequentialRegression).",
            code="MEMBERSHIP_PARTIAL_SYNTHESIS")


def _check_tree_options(ratio: RatioSpec, rule: Any) -> None:
    """Refuse the settings of a Bayesian model's ratio given with a CART release."""
    if ratio.augmented is not None:
        raise ValidationError("RatioSpec.augmented applies to models with posterior draws; a "
                              "CART release has none (leave augmented unset).",
                              code="INVALID_ARGUMENT")
    if rule is not None:
        raise ValidationError(
            "selection applies to a Bayesian model's release of selected records; the CART "
            "plug-in ratio covers releases that synthesize every record ("
            + ("give no --selection" if on_command_line() else "leave selection unset")
            + ").",
            code="OPTION_CONFLICT")


def membership_risk(
    model: Any, original: pd.DataFrame, synthetic: Any, *,
    holdout: pd.DataFrame | None = None,
    records: Annotated[Sequence[int] | np.ndarray | None, cli_option(
        "--records", f"members to evaluate (default: all records): {RECORDS_HELP}",
        metavar="RANGE|FILE")] = None,
    population: Annotated[int | None, cli_option(
        "--population", "look-alike non-members drawn from the model's posterior predictive "
        "(default: as many as the members without --holdout, else 0)", type=int, metavar="N")
        | checked(Interval(int, 0))] = None,
    attack: AttackSpec | None = None, ratio: RatioSpec | None = None,
    selection: Annotated[Any, cli_option(
        "--selection", "release that synthesized selected records only (a model fitted with "
        "--records): how they were selected, 'independent' (without looking at their values, "
        "e.g. a random subset) or a rule on a record's own values as a pandas expression on the "
        "columns, e.g. \"Income > 150000 or Age >= 90\" (it must select exactly the synthesized "
        "records; a rule that looks at other records, such as a quantile, is refused). Members "
        "left unsynthesized are released whole: P(member) = 1, flag RELEASED_WHOLE",
        metavar="RULE")] = None,
    progressbar: bool = True, random_seed: RandomSeed = None, allow_other_model: bool = False,
) -> MembershipRiskResult:
    """Membership disclosure risk: the intruder's posterior probability that a record was in the
    confidential data (Hu 2019, §4.4; :doc:`/methods/membership`).

    Parameters
    ----------
    model : fitted DPMPM, PoissonMixture, SequentialRegression or CARTSynthesizer
        A class P Bayesian model with posterior draws, or an unsmoothed CART synthesizer (or its
        plug-in); others are refused (:func:`check_model`).
    original : DataFrame
        The confidential data ``y`` the model was fitted to (same rows, same order).
    synthetic : SyntheticData, DataFrame or list of DataFrames
        The released datasets ``Z_(1..m)``.
    holdout : DataFrame, optional
        Records of the same population that were not in ``original`` (non-members).
    records : sequence of int, optional
        0-based rows of ``original`` evaluated as members (default all).
    population : int, optional
        Look-alike non-members (default: as many as the members without ``holdout``, else 0).
    attack : AttackSpec, optional
        Prior, threshold, distance baseline and bootstrap (:class:`AttackSpec`).
    ratio : RatioSpec, optional
        How the likelihood ratios are estimated (:class:`RatioSpec`).
    selection : None, "independent", str or callable
        How the records of a release of selected records were selected: ``"independent"``, a
        ``DataFrame.eval`` rule on a record's own values, or a callable returning one bool per
        row (:doc:`/user_guide/membership`, Only selected records synthesized).
    progressbar : bool
        Print the refits' estimated cost and show a progress bar over them.
    random_seed : int, Generator or None
        Seeds the refits, the look-alikes, the non-members' slots and the bootstrap.
    allow_other_model : bool, default False
        Go on, with warning ``MODEL_DIFFERS``, when ``model`` did not make the release.

    Returns
    -------
    MembershipRiskResult

    Raises
    ------
    NotSupportedError
        ``MEMBERSHIP_MODEL_UNSUPPORTED``, ``MEMBERSHIP_PARTIAL_SYNTHESIS``,
        ``MEMBERSHIP_SELECTION_DATA_DEPENDENT``.
    SchemaError
        A column missing, or a holdout level the model was never fitted with (``UNKNOWN_LEVEL``).
    ValidationError
        Invalid options (naming the argument); ``BAD_SELECTION_RULE``,
        ``MEMBERSHIP_SELECTION_MISMATCH``, ``MODEL_DIFFERS``, ``DUPLICATE_DATASETS``.

    Examples
    --------
    >>> res = membership_risk(model, original, syn, holdout=hold, random_seed=1)  # doctest: +SKIP
    >>> res.records[["role", "p_member", "dcr"]].head()  # doctest: +SKIP
    """
    attack, ratio = as_spec(attack, AttackSpec, "attack"), as_spec(ratio, RatioSpec, "ratio")
    rule = _selection.as_selection(selection)
    check_model(model, selection=rule)
    provenance = check_release_model(model, synthetic, original, allow=allow_other_model)
    if _trees.is_tree_model(model):
        _check_tree_options(ratio, rule)
        return provenance.note(_tree_membership_risk(
            model, original, synthetic, holdout, records, population, attack, ratio, random_seed),
            synthetic)
    prior, threshold, bootstrap = attack.prior, attack.threshold, attack.bootstrap
    augmented, normaliser_draws, khat = ratio.augmented, ratio.normaliser_draws, ratio.khat
    alpha = ratio.unsynthesized_concentration
    schema = model.schema_
    orig, datasets, hold, members = prepare(model, original, synthetic, holdout, records)
    copies = _holdout.screen_holdout(orig, hold)  # holdout rows that are records of the original
    n, m = len(orig), len(datasets)
    selected, rows_ = _selected_rows(model, rule, orig)
    if population is None:
        population = len(members) if hold is None else 0
    pi = prior_probability(prior, n, attack.population_size)
    check_options(population, bootstrap, model, n)
    us = list(schema.unsynthesized)
    # a selection rule on the values puts s(x') into the normaliser, which then is not 1 for m = 1
    normalised = m > 1 or (rule is not None and rule.kind == "rule")
    if normalised and not us:
        check_drawable(model, int(normaliser_draws), "normaliser_draws", n)

    fit_rng, pop_rng, slot_rng, norm_rng, boot_rng = as_generator(random_seed).spawn(5)
    cache = cache_folder(ratio.refit_cache, "RatioSpec.refit_cache", random_seed)
    posteriors = fit_posteriors(model, orig, datasets, augmented, fit_rng, progressbar, cache)

    targets, role, source, src_row, slots = plan(model, orig, members, hold, int(population),
                                                 pop_rng, slot_rng, rows_)
    T, n_non = len(targets), len(targets) - len(members)
    uslots, slot_inv = np.unique(slots, return_inverse=True)

    # partial synthesis: the release shows slot i's unsynthesized values r; the target can be
    # the slot's record only if its own are r (methods, Partially synthetic releases)
    match, log_p_us, orig_keys, _ = _partial.slot_match(orig, targets, slots, schema, us, alpha)
    us_match = match.copy()  # what the unsynthesized values alone say (the table's column)
    released_whole = np.zeros(T, dtype=bool)
    sel_columns = None
    if rule is not None:
        match, released_whole, sel_columns = selection_match(rule, selected, targets, orig,
                                                              slots, schema, match)

    base, aug, slot_lls, khats, ess = log_predictives(posteriors, targets, orig.iloc[uslots],
                                                       slot_inv, khat)
    H = min(int(post.n_draws) for post in posteriors)
    log_d, norm_khat, norm_ess = None, np.full(T, np.nan), np.full(T, np.nan)
    if normalised:
        log_d, norm_khat, norm_ess = _normalisers(
            model, posteriors, orig, uslots, slot_inv, slot_lls, match, orig_keys if us else None,
            int(normaliser_draws), norm_rng, schema, us, rule, rows_)
    log_lr = _est.membership_log_lr(base, aug, log_d) - log_p_us
    # a target whose unsynthesized values are not the slot's, or that the selection rules out:
    # membership is excluded exactly; a record released whole is revealed
    log_lr = np.where(match, log_lr, -np.inf)
    log_lr = np.where(released_whole, np.inf, log_lr)
    p_member = _est.posterior_membership(log_lr, pi)

    khat_max, ess_min, flags, mc_thresholds = diagnostics(
        match, log_lr, khats, ess, norm_khat, norm_ess, H=H, normalised=normalised,
        normaliser_draws=int(normaliser_draws), khat=khat, partial=bool(us) or rule is not None)
    for t in np.flatnonzero(released_whole):
        flags[t].append("RELEASED_WHOLE")
    _holdout.flag_copies(flags, source, src_row, copies)
    table = record_table(
        dict(role=role, source=source, row=np.asarray(src_row, dtype=np.int64), slot=slots,
             log_lr=log_lr, p_member=p_member, khat_max=khat_max, ess_min=ess_min),
        partial=(us_match, log_p_us) if us else None,
        normaliser=(log_d, norm_khat, norm_ess) if normalised else None,
        dcr=_dcr.closest_distance(targets, datasets, orig, schema) if attack.dcr else None,
        flags=flags, selection=sel_columns)

    codes, hold, summary = _file(table, schema, orig, hold, datasets, members, copies,
                                 attack=attack, rng=boot_rng, role=role,
                                 partial=(us, orig_keys, log_p_us, us_match),
                                 selection=(rule, selected, sel_columns, released_whole))
    warnings_ = [*result_warnings(table, n_non, H, model, posteriors), *codes]
    settings = _result_settings(
        pi, prior, threshold, mc_thresholds, m=m, H=H, normaliser_draws=int(normaliser_draws),
        n_members=len(members), n_holdout=0 if hold is None else len(hold),
        population=int(population), bootstrap=int(bootstrap), random_seed=random_seed,
        model=model, us=us, alpha=float(alpha), selection=rule,
        n_selected=None if selected is None else int(selected.sum()))
    return provenance.note(MembershipRiskResult(records=table, file=summary, settings=settings,
                                                warnings=warnings_), synthetic)


def _file(table: pd.DataFrame, schema: Any, orig: pd.DataFrame, hold: pd.DataFrame | None,
          datasets: list, members: np.ndarray, copies: np.ndarray | None, *,
          attack: AttackSpec, rng: np.random.Generator, role: np.ndarray, partial: tuple,
          selection: tuple) -> tuple[list[str], pd.DataFrame | None, dict[str, Any]]:
    """The codes of the data's warnings, the holdout less its copies of original records, and
    the file-level summary, with what the unsynthesized values (``partial``: the columns, the
    original's keys, each target's log-probability and match of them) and the selection
    (``selection``: the rule, the rows selected, the table's columns of it and the targets
    released whole) reveal."""
    us, orig_keys, log_p_us, us_match = partial
    rule, selected, sel_columns, released_whole = selection
    codes = []
    if released_whole[: len(members)].any():
        codes.append("MEMBERSHIP_RELEASED_WHOLE")
    # missing modelled values: the ratio runs (the refits integrate them out) but is not derived
    # nor checked for them (methods, Models supported and refused): never a quiet number
    if any(t is not None and missing_mask(t[c], schema[c].missing_codes).any()
           for t in (orig, hold) for c in schema.names if c not in us):
        codes.append("MEMBERSHIP_MISSING_VALUES")
    if copies is not None:
        codes.append("HOLDOUT_OVERLAPS_ORIGINAL")
        hold = hold[~copies]
    summary = result_summary(table, datasets, orig, hold, schema,
                             threshold=float(attack.threshold), bootstrap=int(attack.bootstrap),
                             rng=rng, dcr=attack.dcr)
    if us:
        # what the released unsynthesized values alone reveal (the audit's cause reads it)
        summary["unsynthesized"] = unsynthesized_summary(orig, schema, us, orig_keys, members,
                                                          log_p_us, us_match, role)
    if rule is not None:
        summary["selection"] = selection_summary(rule, selected, members, released_whole,
                                                  sel_columns, role)
    return codes, hold, summary


def _tree_membership_risk(model: Any, original: Any, synthetic: Any, holdout: Any, records: Any,
                          population: int | None, attack: AttackSpec, ratio: RatioSpec,
                          random_seed: RandomSeed) -> MembershipRiskResult:
    """:func:`membership_risk` of a CART release under the plug-in likelihood."""
    prior, population_size, threshold = attack.prior, attack.population_size, attack.threshold
    dcr, bootstrap, normaliser_draws = attack.dcr, attack.bootstrap, ratio.normaliser_draws
    unsynthesized_concentration = ratio.unsynthesized_concentration
    synth = _trees.tree_synthesizer(model)
    orig, datasets, hold, members = prepare(synth, original, synthetic, holdout, records)
    copies = _holdout.screen_holdout(orig, hold)  # holdout rows that are records of the original
    schema = synth.schema_
    n, m = len(orig), len(datasets)
    if population is None:
        population = len(members) if hold is None else 0
    pi = prior_probability(prior, n, population_size)
    check_options(population, bootstrap, synth, n)
    alpha = float(unsynthesized_concentration)
    us = list(schema.unsynthesized)
    if not us:
        check_drawable(synth, int(normaliser_draws), "normaliser_draws", n)
    plugin = _trees.tree_plugin(model, orig)

    rng = as_generator(random_seed)
    _, pop_rng, slot_rng, norm_rng, boot_rng = rng.spawn(5)
    targets, role, source, src_row, slots = plan(synth, orig, members, hold,
                                                          int(population), pop_rng, slot_rng)
    T = len(targets)
    n_non = T - len(members)
    # partial synthesis: the release shows slot i's unsynthesized values r; the target can be
    # the slot's record only if its own are r, and r enters through the population model of
    # the unsynthesized values (methods, Partially synthetic releases; CART releases)
    match, log_p_us, orig_keys, slot_keys = _partial.slot_match(orig, targets, slots, schema,
                                                                 us, alpha)
    # the normaliser: exact over the synthesizer's predictive (given r, per cell of the
    # unsynthesized columns that a matching target needs) when its support is small
    need = np.unique(slot_keys[match]) if us else np.zeros(1, dtype=np.int64)
    first_slot = {int(k): int(slots[np.flatnonzero(match & (slot_keys == k))[0]])
                  for k in need} if us else {0: 0}
    exact = all(
        _trees.population_support(plugin, int(normaliser_draws),
                                  _trees.unsynthesized_values(plugin, i)) is not None
        for i in first_slot.values())
    prow: Any = None
    if not exact:
        prow = (conditional_population_rows(synth, orig, orig_keys, [int(k) for k in need],
                                             int(normaliser_draws), norm_rng, schema, us)
                if us else population_rows(synth, int(normaliser_draws), norm_rng))
    res = _trees.tree_log_lr(plugin, datasets, targets, slots, prow, exact, match=match,
                             slot_cells=slot_keys)
    # the factor 1{x^us = r} / p(r | y_{-i}); +inf (a revealed slot) stays +inf
    log_lr = np.where(match, res["log_lr"] - log_p_us, -np.inf)
    p_member = _est.posterior_membership(log_lr, pi)

    norm_thr = _est.thresholds(int(normaliser_draws))
    # an infinite ratio of a revealed slot is exact (a result, not a failed estimate)
    checked = np.where(res["slot_revealed"], 0.0, log_lr)
    flags = target_flags(match, checked, None, np.full(T, np.inf), res["normaliser_khat"],
                         res["normaliser_ess"], np.inf, 0.0, None if exact else norm_thr)
    _holdout.flag_copies(flags, source, src_row, copies)
    table = record_table(
        dict(role=role, source=source, row=np.asarray(src_row, dtype=np.int64), slot=slots,
             log_lr=log_lr, p_member=p_member, khat_max=np.full(T, np.nan),
             ess_min=np.full(T, np.nan)),
        partial=(match, log_p_us) if us else None,
        normaliser=(res["log_normaliser"], res["normaliser_khat"], res["normaliser_ess"]),
        dcr=_dcr.closest_distance(targets, datasets, orig, schema) if dcr else None,
        flags=flags)
    table.insert(table.columns.get_loc("normaliser_ess") + 1, "normaliser_mcse",
                 res["normaliser_mcse"])
    table.insert(table.columns.get_loc("slot") + 1, "slot_revealed", res["slot_revealed"])

    warnings_: list[str] = []
    if int((table["flag_codes"] != "").sum()):
        warnings_.append("MEMBERSHIP_FLAGGED")
    if n_non == 0:
        warnings_.append("NO_NON_MEMBERS")
    is_mem = table["role"].to_numpy() == "member"
    if bool((res["slot_revealed"] & is_mem).any()):
        warnings_.append("MEMBERSHIP_REVEALED")
    if copies is not None:
        warnings_.append("HOLDOUT_OVERLAPS_ORIGINAL")
        hold = hold[~copies]
    summary = result_summary(table, datasets, orig, hold, schema, threshold=float(threshold),
                       bootstrap=int(bootstrap), rng=boot_rng, dcr=dcr)
    summary["share_members_revealed"] = (float(np.mean(res["slot_revealed"][is_mem]))
                                         if is_mem.any() else float("nan"))
    if us:
        # what the released unsynthesized values alone reveal (the audit's cause reads it)
        summary["unsynthesized"] = unsynthesized_summary(orig, schema, us, orig_keys, members,
                                                          log_p_us, match, role)
    settings = _result_settings(pi, prior, threshold, (float("nan"), float("nan")), m=m, H=0,
                         normaliser_draws=int(normaliser_draws), n_members=len(members),
                         n_holdout=0 if hold is None else len(hold), population=int(population),
                         bootstrap=int(bootstrap), random_seed=random_seed, model=synth, us=us,
                         alpha=alpha)
    settings.update(
        n_draws=None,
        likelihood="plug-in (fitted splits known)",
        normaliser="exact (the predictive's support enumerated)" if exact
        else f"{int(normaliser_draws)} population draws (importance sampling"
        + (", per cell of the unsynthesized columns)" if us else ")"))
    return MembershipRiskResult(records=table, file=summary, settings=settings, warnings=warnings_)
