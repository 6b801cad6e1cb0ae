"""Stage 1 of attribute risk: validate the inputs and build the plan every record shares."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, Options, SequenceOf, check_value
from bayes_risk._rng import RandomSeed, as_generator, seed_to_json
from bayes_risk.attribute.candidates import CandidateSpec, parse_candidates
from bayes_risk.attribute.chains import ChainPlan, chain_plan
from bayes_risk.attribute.diagnostics import khat_threshold, low_ess_threshold
from bayes_risk.attribute.estimator import bootstrap_counts
from bayes_risk.attribute.evaluate import MAX_CHUNK_RECORDS, chunk_records
from bayes_risk.attribute.known_records import (
    check_known_prior,
    check_known_records,
    known_mask,
    known_records_plan,
)
from bayes_risk.attribute.likelihoods import model_access, neighbourhood_index
from bayes_risk.attribute.missing import check_missing_truth
from bayes_risk.attribute.plan import (
    AnalysisData,
    AttributePlan,
    AugmentedFits,
    CandidateRule,
    DiagnosticsSettings,
    DrawPlan,
)
from bayes_risk.attribute.priors import parse_prior
from bayes_risk.attribute.refits import cache_folder, fit_refits, given_refits
from bayes_risk.attribute.specs import EstimatorSpec, ScenarioSpec
from bayes_risk.attribute.strategies import strategy_for
from bayes_risk.contract import (
    RiskModel,
    SupportsPluginLoglik,
    auto_estimator,
    capabilities,
    missing_members,
)
from bayes_risk.data.missing import mask_missing_codes
from bayes_risk.data.normalise import as_synthetic_list, record_positions
from bayes_risk.data.validate import (
    encode,
    harmonise_levels,
    require_frame,
    require_synthesized,
    validate_synthetic,
)
from bayes_risk.exceptions import (
    CALLER,
    ImportanceSamplingWarning,
    NotSupportedError,
    SchemaError,
    ValidationError,
    arg_name,
)

__all__ = ["prepare"]


def prepare(
    model: Any, original: pd.DataFrame, synthetic: Any, records: Sequence[int] | np.ndarray | None,
    *, candidates: Any, prior: Any, scenario: ScenarioSpec, estimator: EstimatorSpec,
    random_seed: RandomSeed, progressbar: bool, size_chunks: bool = True,
) -> AttributePlan:
    """Validate the arguments of :func:`bayes_risk.attribute.attribute_risk` and build its plan."""
    is_plugin = _check_model(model)
    # checked before any expensive work (the scenario is ScenarioSpec's, checked when built)
    pr = parse_prior(prior)
    require_frame(original, "original")
    es = estimator
    augmented, draws, compat, bootstrap = es.augmented, es.draw_indices, es.compat, es.bootstrap
    data = _prepare_data(model, original, synthetic, records, scenario.kind, scenario.known)
    cand_callable = callable(candidates) and not isinstance(candidates, (str, CandidateSpec))
    spec = None if cand_callable else parse_candidates(candidates)  # type: ignore[arg-type]
    est = _estimator_name(model, is_plugin, es)
    draw_idx = None if draws is None else np.asarray(check_value(
        np.ravel(draws).tolist(), SequenceOf(Interval(int, 0, model.n_draws - 1),
                                             f"indices in 0..{model.n_draws - 1}"),
        "EstimatorSpec.draw_indices"), dtype=np.int64)
    H = 0 if is_plugin else (int(model.n_draws) if draw_idx is None else int(draw_idx.size))
    _check_estimator(model, is_plugin, est, compat)
    warn_codes: list[str] = []
    if H < 20 and not is_plugin:
        warn_codes.append("H_TOO_SMALL")
        warnings.warn(
            f"only H = {H} posterior draws: the importance-sampling estimates are unreliable "
            "(H_TOO_SMALL).", ImportanceSamplingWarning, skip_file_prefixes=CALLER,
        )
    if compat is not None and bootstrap:
        bootstrap = 0  # the R package has no bootstrap; its q normalisation is not resampled
    known = None
    if scenario.kind == "known_records":  # checked before the refits
        check_known_records(model, is_plugin, compat)
        check_known_prior(pr)
        known = known_mask(scenario, len(data.orig))
    boot_rng = as_generator(random_seed).spawn(1)[0]
    need_L = est == "is" or (es.is_diagnostics and not is_plugin
                             and capabilities(model).has("dataset"))
    draw_plan = _draw_plan(model, data, compat, draw_idx, H, need_L, is_plugin, bootstrap,
                           boot_rng)
    # the bootstrap stream (child 0 of random_seed) gives the counts of p(Θ | y) first, then
    # those of the augmented fits; its child l seeds the refit of Z_(l), as in membership risk
    # (the same seeds, so that the two share refits: EstimatorSpec.refit_cache)
    cache = cache_folder(es.refit_cache, "EstimatorSpec.refit_cache", random_seed)
    aug = _augmented_fits(model, data, est, augmented, boot_rng.spawn(data.m), progressbar,
                          draw_plan.n_boot, boot_rng, es.refit_draws, cache)
    plan = AttributePlan(
        model=model_access(model), data=data, rule=_candidate_rule(model, data, candidates, spec),
        draws=draw_plan, augmented=aug,
        diagnostics=DiagnosticsSettings(
            khat=es.khat, psis=es.psis, khat_rule=es.khat_rule,
            khat_tolerance=es.khat_tolerance, khat_threshold=khat_threshold(H),
            low_ess_threshold=low_ess_threshold(H),
        ),
        estimator=strategy_for(est), prior=pr, compat=compat,
        chunk_size=MAX_CHUNK_RECORDS,  # sized below, from the candidate sets the plan builds
        random_seed_json=seed_to_json(random_seed), warn_codes=warn_codes,
        chains=chain_plan(model, draw_idx, [a.model for a in aug.models], est),
    )
    plan = dataclasses.replace(plan, chunk_size=chunk_records(plan, es.chunk_size)
                               if size_chunks else es.chunk_size or MAX_CHUNK_RECORDS)
    if scenario.kind == "known_records":
        plan = dataclasses.replace(plan, known=known_records_plan(plan, known, scenario))
        if not plan.known.everything and plan.chains is not None and plan.chains.run:
            # the check counts each batch's draws by the truth's ratio, 1 only without the
            # unknown records' weights
            plan = dataclasses.replace(plan, chains=ChainPlan(
                False, "not run for an intruder who knows only some records (the truth's "
                "ratios are reweighted)"))
    return plan


# checks
def _check_model(model: Any) -> bool:
    """Whether ``model`` is a plug-in model (else it must have posterior draws)."""
    info = capabilities(model)
    if info.has("plugin") and not missing_members(model, SupportsPluginLoglik):
        is_plugin = True
    elif not info.has("plugin") and isinstance(model, RiskModel):
        is_plugin = False
    else:
        raise ValidationError(
            f"model {type(model).__name__} does not implement the attribute-risk protocol: "
            "a model with posterior draws (bayes_risk.contract.RiskModel) lacks "
            f"{missing_members(model, RiskModel)}; a plug-in likelihood "
            "(bayes_risk.contract.SupportsPluginLoglik) lacks "
            f"{missing_members(model, SupportsPluginLoglik)}. Fit a Bayesian synthesis model "
            "(DPMPM, PoissonMixture, SequentialRegression), wrap "
            "posterior draws in bayes_risk.models.ArrayModel, or use a tree plug-in "
            "(bayes_risk.CARTPlugin, bayes_risk.RFPlugin).",
            code="MODEL_UNSUITED"
        )
    check_value(model.model_class, Options(("P", "O"), listed=True), "model.model_class")
    return is_plugin


def _estimator_name(model: Any, is_plugin: bool, es: EstimatorSpec) -> str:
    """The estimator ``auto`` resolves to."""
    if is_plugin:
        plugin = (f"{type(model).__name__} has a plug-in likelihood (methods page 'Attribute "
                  "disclosure risk', section 'Tree synthesizers: plug-in likelihoods'): it has no "
                  "posterior draws")
        if es.kind != "auto":
            raise ValidationError(f"{plugin}, so {arg_name('estimator')} must be 'auto'. Got "
                                  f"{es.kind!r}.", code="OPTION_CONFLICT")
        given = [f for f in ("compat", "augmented", "draw_indices", "refit_draws", "psis")
                 if getattr(es, f) not in (None, False)]
        if given:
            raise ValidationError(f"{', '.join(arg_name('EstimatorSpec.' + f) for f in given)}: "
                                  f"not with a plug-in model ({plugin} to refit or smooth).",
                                  code="OPTION_CONFLICT")
        return "plugin"
    estimator = es.kind
    if estimator == "auto":
        # chosen by what the model can do (its ModelInfo), not by its class
        return auto_estimator(model, augmented_given=es.augmented is not None)
    return estimator


def _check_estimator(model: Any, is_plugin: bool, est: str, compat: str | None) -> None:
    """What the chosen estimator needs from the model."""
    if est == "stabilised" and model.model_class == "O":
        raise ValidationError(
            "the stabilised estimator is derived for class P models only (methods page 'Attribute "
            "disclosure risk', section 'The stabilised estimator'); class O "
            "models use estimator='is' with the own-record term.",
            code="MODEL_UNSUITED"
        )
    if compat is not None and est != "is":
        raise ValidationError("compat='AttributeRiskCalculation' applies to estimator='is' only.")
    info = capabilities(model)
    if model.model_class == "O" and not is_plugin and not info.has("own_record"):
        raise NotSupportedError(
            f"{type(model).__name__} is a class O model (its synthetic values depend on the "
            "record's own confidential values given Θ) but provides no own_record_delta(record, "
            "candidates, datasets, draw_indices=None) -> [H, m, G] (bayes_risk.contract."
            "SupportsOwnRecordTerm); the likelihood of class O models (methods page 'Attribute "
            "disclosure risk') cannot be evaluated without it.",
            code="MODEL_UNSUITED"
        )
    if est == "is" and "is" not in info.estimators:
        raise ValidationError(
            f"estimator='is' needs the likelihood of the released datasets: "
            f"{type(model).__name__} does not support estimator 'is' (its estimators "
            f"({list(info.estimators)}; dataset_loglik(datasets, draw_indices=None) -> [H, m], "
            "bayes_risk.contract.RiskModel).",
            code="MODEL_UNSUITED"
        )


# data, draws, augmented fits, candidate rule
def _prepare_data(
    model: Any, original: pd.DataFrame, synthetic: Any, records: Any, scenario: str,
    known: Sequence[str] | None,
) -> AnalysisData:
    """Harmonised original and release, the varying columns and the records to evaluate."""
    schema0 = model.schema_
    cols = schema0.names
    missing = [c for c in cols if c not in original.columns]
    if missing:
        raise ValidationError(f"original is missing the model's column(s) {missing}.",
                              code="MISSING_COLUMN")
    orig = original[cols].reset_index(drop=True)
    datasets = [
        z[cols].reset_index(drop=True) if all(c in z.columns for c in cols) else z
        for z in as_synthetic_list(synthetic, original=original).datasets
    ]
    _refuse_synthetic_only_levels(datasets, schema0)
    # declared missing-value codes are missing values; a plug-in reads the release as it is
    released = datasets if schema0.missing_codes else None
    orig = mask_missing_codes(orig, schema0.missing_codes)
    datasets = [mask_missing_codes(z, schema0.missing_codes) for z in datasets]
    schema = harmonise_levels(orig, datasets, schema=schema0)
    validate_synthetic(orig, datasets, schema=schema, allow_nan=True)
    vary, known_l = _varying_columns(schema, scenario, known)
    positions = record_positions(records, len(orig))
    # varying columns: codes (categorical) or values (numeric), [n, q]
    is_cat = np.array([schema[c].is_categorical for c in vary])
    values = np.empty((len(orig), len(vary)))
    for j, c in enumerate(vary):
        values[:, j] = encode(orig, schema, [c])[:, 0] if is_cat[j] else orig[c].to_numpy(float)
    check_missing_truth(model, vary, values, is_cat, positions, orig)
    return AnalysisData(
        orig=orig, datasets=datasets, schema=schema, vary=vary, is_cat=is_cat, values=values,
        levels_model={c: (len(schema0[c].levels) if schema0[c].is_categorical else 0)
                      for c in vary},
        levels_harmonised={c: (schema[c].n_levels if schema[c].is_categorical else 0)
                           for c in vary},
        scenario=scenario, known=known_l, positions=positions, released=released,
    )


def _varying_columns(
    schema: Any, scenario: str, known: Sequence[str] | None
) -> tuple[list[str], list[str]]:
    """The synthesized columns the intruder guesses, and those they know."""
    synthesized = schema.synthesized
    if not synthesized:
        raise ValidationError("the model's schema has no synthesized columns: nothing to guess.",
                              code="MODEL_UNSUITED")
    known_l = list(known or [])  # ScenarioSpec: given with partially_known, and only with it
    if scenario == "partially_known":
        require_synthesized(schema.check_columns(known_l, "known"), synthesized, "known",
                            note="; unsynthesized columns are always known to the intruder")
    vary = [c for c in synthesized if c not in known_l]
    if not vary:
        raise ValidationError("every synthesized column is known: nothing left to guess.")
    return vary, known_l


def _refuse_synthetic_only_levels(datasets: list[pd.DataFrame], schema: Any) -> None:
    """Refuse a synthetic level the model was never fitted with (the risk is undefined)."""
    from bayes_risk.data.levels import normalise_level as _normalise_value
    from bayes_risk.data.schema import _level_to_json

    for spec in schema:
        if not spec.is_categorical or spec.levels is None:
            continue
        allowed = {_normalise_value(v) for v in spec.levels}
        for l, z in enumerate(datasets, start=1):
            if spec.name not in z.columns:
                continue
            vals = pd.unique(z[spec.name].dropna())
            bad = [v for v in vals if _normalise_value(v) not in allowed]
            if bad:
                raise SchemaError(
                    f"synthetic dataset {l}: column {spec.name!r} holds "
                    f"{_level_to_json(bad[0])!r}, a level absent from the data the model was "
                    "fitted to (SYNTHETIC_ONLY_LEVEL); it has probability 0 under the model, so "
                    "the attribute risk is undefined. Check that the release comes from this "
                    "model.",
                    code="SYNTHETIC_ONLY_LEVEL",
                )


def _draw_plan(
    model: Any, data: AnalysisData, compat: str | None, draw_idx: np.ndarray | None, H: int,
    need_L: bool, is_plugin: bool, bootstrap: int, boot_rng: np.random.Generator,
) -> DrawPlan:
    """Draws used, ``L = dataset_loglik`` and the bootstrap counts of ``p(Θ | y)``."""
    # AttributeRiskCalculation normalises q_h with all posterior rows but sums over the first H:
    # in compat mode `draws` must be the leading draws 0..H-1
    logp_idx = draw_idx
    n_sum = None
    if compat is not None and draw_idx is not None:
        if not np.array_equal(draw_idx, np.arange(draw_idx.size)):
            raise ValidationError(
                "compat='AttributeRiskCalculation' uses the first H draws: pass "
                "draw_indices=range(H)."
            )
        logp_idx = None
        n_sum = int(draw_idx.size)
    L = (np.asarray(model.dataset_loglik(data.datasets, draw_indices=logp_idx), dtype=float)
         if need_L else None)
    h_L = H if logp_idx is draw_idx else int(model.n_draws)
    if L is not None and L.shape != (h_L, data.m):
        raise ValidationError(
            f"model.dataset_loglik returned shape {L.shape}; expected ({h_L}, {data.m}).",
            code="MODEL_OUTPUT_INVALID"
        )
    B = 0 if is_plugin else int(bootstrap)
    return DrawPlan(
        H=H, logp_idx=logp_idx, n_sum=n_sum, L=L, n_boot=B,
        counts=bootstrap_counts(boot_rng, B, H) if B else None,
    )


def _augmented_fits(
    model: Any, data: AnalysisData, est: str, augmented: Sequence[Any] | None,
    seeds: Sequence[np.random.Generator], progressbar: bool, n_boot: int,
    boot_rng: np.random.Generator, refit_draws: int | None = None, cache: Any = None,
) -> AugmentedFits:
    """The ``m`` models with draws of ``p(Θ | y, Z_(l))`` (stabilised estimator only)."""
    _check_refit_draws(refit_draws, model, est, augmented)
    if est != "stabilised":
        return AugmentedFits()
    m = data.m
    if augmented is not None:
        models = given_refits(augmented, m)
    else:
        if "stabilised" not in capabilities(model).estimators:
            raise ValidationError(
                "the stabilised estimator needs draws of p(Θ | y, Z_(l)): the model has no "
                "fit_augmented (bayes_risk.contract.SupportsAugmentedFit); pass "
                "augmented=[...] or use estimator='is'.",
                code="MODEL_UNSUITED"
            )
        models = fit_refits(model, data.orig, data.datasets, seeds, refit_draws=refit_draws,
                            progressbar=progressbar, cache=cache)
    h_aug = [int(a.n_draws) for a in models]
    return AugmentedFits(
        models=[model_access(a) for a in models], n_draws=h_aug,
        counts=[bootstrap_counts(boot_rng, n_boot, h) for h in h_aug] if n_boot else [],
        khat_thresholds=[khat_threshold(h) for h in h_aug],
    )


def _check_refit_draws(refit_draws: Any, model: Any, est: str, augmented: Any) -> None:
    """``refit_draws`` (an integer >= 1: ``EstimatorSpec`` checked it) applies only to
    refits this function makes."""
    if refit_draws is None:
        return
    if est != "stabilised" or augmented is not None or not (
            hasattr(model, "resolved_sampling") or hasattr(model, "draws")):
        raise ValidationError(
            "refit_draws sets the kept draws per chain of the stabilised estimator's refits of "
            "a Bayesian model (fit_augmented); it does not apply here (estimator "
            f"{est!r}{', augmented given' if augmented is not None else ''}).",
            code="OPTION_CONFLICT",
        )


def _candidate_rule(
    model: Any, data: AnalysisData, candidates: Any, spec: CandidateSpec | None
) -> CandidateRule:
    """The candidate rule and whether the model's one-variable neighbourhood serves it."""
    vary = data.vary
    use_fast = (spec is not None and spec.rule == "one_variable" and spec.spatial is None
                and bool(data.is_cat.all())
                and all(data.levels_model[c] == data.levels_harmonised[c] for c in vary))
    nb_index = None
    if use_fast:
        schema0 = model.schema_
        syn0 = schema0.synthesized
        dd = {c: len(schema0[c].levels) for c in syn0 if schema0[c].is_categorical}
        if len(dd) == len(syn0):
            nb_index = neighbourhood_index(vary, syn0, dd)
    # the candidates are the model's whole neighbourhood in its order (all synthesized vary)
    nb_all = nb_index is not None and np.array_equal(nb_index, np.arange(nb_index.size))
    return CandidateRule(candidates=candidates, spec=spec, nb_index=nb_index, nb_all=nb_all)
