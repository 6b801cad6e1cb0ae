"""User-facing attribute-risk analysis: :func:`attribute_risk`, :func:`with_prior`,
:func:`prior_sensitivity` and :func:`plot_prior_sensitivity`. See :doc:`/methods/attribute`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import Options, check_value
from bayes_risk._memory import check_memory, working_bytes
from bayes_risk._rng import RandomSeed
from bayes_risk._specs import RECORDS_HELP, as_spec, cli_option
from bayes_risk.attribute import assemble as _assemble
from bayes_risk.attribute.candidates import CandidateSpec
from bayes_risk.attribute.chains import agreement_columns
from bayes_risk.attribute.evaluate import evaluate
from bayes_risk.attribute.low_risk import check_low_risk_prior, low_risk_attribute_risk
from bayes_risk.attribute.pairs import (
    check_pair_plan,
    check_pair_prior,
    check_pairs,
    evaluate_pairs,
    p_true_unordered,
    pair_data,
    sum_columns,
)
from bayes_risk.attribute.plan import RecordPartition, merge_outputs
from bayes_risk.attribute.prepare import prepare
from bayes_risk.attribute.priors import Prior, evaluate_prior_groups, parse_prior
from bayes_risk.attribute.record_table import (
    KHAT_TOLERANCE,
    POINT_COLUMNS,
    RecordStack,
    bootstrap_summaries,
    flag_strings,
    material_flag,
    prior_columns,
    record_stacks,
    set_point_columns,
    ungroup,
)
from bayes_risk.attribute.specs import ESTIMATORS, EstimatorSpec, ScenarioSpec, scenario_arg
from bayes_risk.data.provenance import check_release_model
from bayes_risk.data.validate import require_frame
from bayes_risk.exceptions import NotSupportedError, ValidationError, arg_name, interruptible
from bayes_risk.executors import InProcessExecutor, as_executor
from bayes_risk.results.attribute import AttributeRiskResult
from bayes_risk.warning_codes import RECORD_FLAGS

__all__ = [
    "attribute_risk",
    "with_prior",
    "prior_sensitivity",
    "plot_prior_sensitivity",
    "AttributeRiskResult",
    "RECORD_FLAGS",
    "KHAT_TOLERANCE",
    "PARTITION_SIZE",
]

#: records per task when the records are spread over a cluster and the executor does not say
PARTITION_SIZE = 256


@interruptible
def attribute_risk(
    original: pd.DataFrame, synthetic: Any, *, model: Any,
    records: Annotated[Sequence[int] | np.ndarray | None, cli_option(
        "--records", f"records to evaluate (default: all records): {RECORDS_HELP}",
        metavar="RANGE|FILE")] = None,
    candidates: Annotated[str | CandidateSpec | Callable[..., pd.DataFrame], cli_option(
        "--candidates", "candidate sets: one-variable (default), full, k-different:K, "
        "grid:percent:A[:G], grid:additive:W[:G], grid:fixed:LO:HI[:G]; numeric columns use a "
        "percent grid (default +/-10 %%, 11 points) and, where the true value is 0, an additive "
        "grid of that fraction of the column's median non-zero |value| (recorded in "
        "summary.json)", metavar="RULE")] = "one-variable",
    prior: Annotated[str | Prior | Any, cli_option(
        "--prior", "intruder prior: uniform (default), truth-weighted:K, empirical[:ALPHA], "
        "model-predictive", metavar="PRIOR")] = "uniform",
    scenario: ScenarioSpec | Literal["worst_case", "partially_known", "empty"] = "worst_case",
    estimator: EstimatorSpec | Literal["auto", "stabilised", "is"] = "auto",
    random_seed: RandomSeed = None, progressbar: bool = True, executor: Any = None,
    allow_other_model: bool = False,
) -> AttributeRiskResult:
    """Attribute disclosure risk of every (or selected) confidential record (Hu 2019).

    See :doc:`/user_guide/attribute` and :doc:`/methods/attribute`.

    Parameters
    ----------
    model : RiskModel
        A fitted Bayesian synthesis model, an :class:`~bayes_risk.models.ArrayModel`, or a
        plug-in model (:class:`~bayes_risk.models.CARTPlugin`).
    original : DataFrame
        The confidential data ``y`` (the rows the model was fitted to, same order).
    synthetic : SyntheticData, DataFrame or list of DataFrames
        The released datasets ``Z_(1..m)`` (same row order as ``original``).
    records : sequence of int, optional
        0-based row positions to evaluate (default: all).
    candidates : {"one-variable", "full"}, str, CandidateSpec or callable
        Candidate sets (:func:`~bayes_risk.attribute.candidates.parse_candidates`), or
        ``f(record_row, columns) -> DataFrame`` of a record's candidates.
    prior : str, Prior, weights or callable
        Intruder prior (:func:`~bayes_risk.attribute.priors.parse_prior`; default ``"uniform"``).
    scenario : ScenarioSpec or {"worst_case", "partially_known", "empty"}
        What the intruder knows (:class:`~bayes_risk.attribute.ScenarioSpec`).
    estimator : EstimatorSpec or {"auto", "stabilised", "is"}
        How the likelihoods are estimated (:class:`~bayes_risk.attribute.EstimatorSpec`).
    random_seed : int, Generator or None
        Seeds the bootstrap and the augmented fits.
    progressbar : bool
        Show progress (rich).
    executor : None, distributed.Client or Executor
        Where the per-record stage runs (:func:`bayes_risk.executors.as_executor`).
    allow_other_model : bool, default False
        Go on, with warning ``MODEL_DIFFERS``, when ``model`` did not make the release.

    Returns
    -------
    AttributeRiskResult

    Raises
    ------
    ValidationError
        For inconsistent inputs (naming the argument); ``MODEL_DIFFERS``; ``DUPLICATE_DATASETS``.
    NotSupportedError
        For other scenarios, and for class O models that do not supply the own-record term.

    References
    ----------
    Hu, J. (2019). Bayesian estimation of attribute and identification disclosure risks in
    synthetic data. Transactions on Data Privacy 12, 61–89.
    """
    scenario = as_spec(scenario, ScenarioSpec, "scenario", "kind")
    estimator = as_spec(estimator, EstimatorSpec, "estimator", "kind", ESTIMATORS)
    check_plugin_replicates(model, estimator.plugin_replicates)
    provenance = check_release_model(model, synthetic, original, allow=allow_other_model)
    if scenario.kind == "two_records":
        return _noted(provenance, synthetic=synthetic, result=_two_records(
            original, synthetic, model=model, records=records, pairs=scenario.pairs,
            known_sums=scenario.known_sums, executor=executor, progressbar=progressbar,
            options=dict(candidates=candidates, prior=prior, estimator=estimator,
                         random_seed=random_seed),
        ))
    if scenario.kind == "empty":
        _check_low_risk_options(candidates, estimator)
        return _noted(provenance, low_risk_attribute_risk(model, original, synthetic, records,
                                                          prior=prior), synthetic)
    plan = prepare(
        model,
        original,
        synthetic,
        records,
        candidates=candidates,
        prior=prior,
        scenario=scenario,
        estimator=estimator,
        random_seed=random_seed,
        progressbar=progressbar,
    )
    ex = as_executor(executor)
    outputs = ex.map(
        evaluate,
        plan,
        _partitions(plan.data.positions, ex, progressbar),
        progressbar=progressbar,
        description="attribute risk (partitions)",
    )
    return _noted(provenance, _assemble.assemble(plan, merge_outputs(outputs)), synthetic)


def check_plugin_replicates(model: Any, replicates: int | None,
                            unused: str | None = None) -> None:
    """Refuse an ``EstimatorSpec.plugin_replicates`` that would be ignored: the plug-in's own
    setting, checked by :func:`attribute_risk` and by the audit before its first step.

    Parameters
    ----------
    model : likelihood or None
        What attribute risk reads (a plug-in draws replicates when its ``replicates`` is set).
    replicates : int or None
        The setting (``None``: unset, nothing to check).
    unused : str, optional
        Why no likelihood reads it (the audit's attribute step does not run).

    Raises
    ------
    ValidationError
        ``OPTION_UNUSED`` when no replicate would be drawn (``unused``, or a likelihood
        without them: a random forest's, an unsmoothed CART's, a Bayesian model's);
        ``OPTION_CONFLICT`` when the plug-in given was built with other ``n_bootstrap``.
    """
    if replicates is None:
        return
    if unused is None and getattr(model, "replicates", None) is None:
        unused = (f"the likelihood of {type(model).__name__} has none (exact: no Monte Carlo "
                  "terms to replicate; only a CART synthesizer that smooths a column has them)")
    if unused is not None:
        raise ValidationError(
            f"{arg_name('plugin_replicates', replicates)} sets the Bayesian-bootstrap "
            f"replicates of a smoothed CART release's plug-in likelihood; {unused}. Leave it "
            "unset.", code="OPTION_UNUSED")
    if model.n_bootstrap != replicates:
        raise ValidationError(
            f"{arg_name('plugin_replicates', replicates)} differs from the "
            f"n_bootstrap={model.n_bootstrap} the plug-in given as model was built with; build "
            f"it with CARTPlugin(..., n_bootstrap={replicates}) or leave plugin_replicates unset.",
            code="OPTION_CONFLICT")


def _noted(provenance: Any, result: Any, synthetic: Any) -> Any:
    """``result`` with the model check noted and, where the release has one, its ε of
    differential privacy in ``settings["differential_privacy"]`` (:doc:`/methods/privacy`)."""
    from bayes_risk.privacy import release_privacy

    result = provenance.note(result, synthetic)
    guarantee = release_privacy(synthetic)
    if guarantee is not None and isinstance(getattr(result, "settings", None), dict):
        result.settings["differential_privacy"] = guarantee.to_dict()
    return result


def _two_records(
    original: pd.DataFrame, synthetic: Any, *, model: Any, records: Any, pairs: Any,
    known_sums: bool | Sequence[str] | None, executor: Any, progressbar: bool,
    options: dict[str, Any],
) -> AttributeRiskResult:
    """Wei & Reiter's two-record intruders (:mod:`bayes_risk.attribute.pairs`)."""
    if records is not None:
        raise ValidationError(
            f"{arg_name('records')} does not apply to {scenario_arg('two_records')}: the pairs "
            "name the records.", code="OPTION_CONFLICT"
        )
    if executor is not None:
        raise NotSupportedError(
            f"{scenario_arg('two_records')} runs in this process; leave executor at None.",
            code="OPTION_CONFLICT"
        )
    require_frame(original, "original")
    pair_arr = check_pairs(pairs, len(original))
    check_pair_prior(parse_prior(options["prior"]))
    plan = prepare(model, original, synthetic, np.unique(pair_arr), scenario=ScenarioSpec(),
                   progressbar=progressbar, size_chunks=False, **options)
    check_pair_plan(plan, pair_arr)
    sums = [] if known_sums is None else sum_columns(plan.data, known_sums)
    out = evaluate_pairs(plan, pair_arr, progressbar=progressbar, sums=sums)
    res = _assemble.assemble(pair_data(plan, pair_arr), out)
    df = res.records.copy()
    df.insert(0, "record_1", pair_arr[:, 0])
    df.insert(1, "record_2", pair_arr[:, 1])
    for k, c in enumerate(sums):  # the known sums, as the intruder reads them
        col = plan.data.values[:, plan.data.vary.index(c)]
        df.insert(2 + k, f"sum_{c}", col[pair_arr[:, 0]] + col[pair_arr[:, 1]])
    df.insert(df.columns.get_loc("p_true") + 1, "p_true_unordered",
              p_true_unordered(res.candidates, res.log_post))
    return dataclasses.replace(
        res, records=df, _cache={},
        settings=dict(res.settings, pairs=pair_arr.tolist(), known_sums=sums or None),
    )


def _check_low_risk_options(candidates: Any, estimator: EstimatorSpec) -> None:
    """Options of the likelihood-based scenarios that ``scenario="empty"`` cannot honour
    (``ScenarioSpec`` refuses its own: ``known`` of another scenario)."""
    given = {
        "candidates": not (isinstance(candidates, str) and candidates == "one-variable"),
        "EstimatorSpec.kind": estimator.kind != "auto",
        "EstimatorSpec.augmented": estimator.augmented is not None,
        "EstimatorSpec.draw_indices": estimator.draw_indices is not None,
        "EstimatorSpec.refit_draws": estimator.refit_draws is not None,
        "EstimatorSpec.psis": bool(estimator.psis),
        "EstimatorSpec.compat": estimator.compat is not None,
    }
    bad = [k for k, v in given.items() if v]
    if bad:
        raise ValidationError(
            f"{scenario_arg('empty')} (Wang & Reiter's low-risk intruder) uses the record's "
            "synthetic "
            f"values as posterior draws: {bad} do not apply; leave them at their defaults.",
            code="INVALID_ARGUMENT"
        )


def _partitions(positions: np.ndarray, ex: Any, progressbar: bool) -> list[RecordPartition]:
    """The records split for ``ex``: one partition in process, else ``ex.partition_size``."""
    order = np.sort(np.asarray(positions, dtype=np.int64))
    in_process = isinstance(ex, InProcessExecutor)
    if in_process and ex.partition_size is None:
        return [RecordPartition(order, progressbar=progressbar)]
    size = ex.partition_size or PARTITION_SIZE
    return [RecordPartition(order[a : a + size]) for a in range(0, order.size, size)]


def with_prior(
    result: AttributeRiskResult, *, prior: str | Prior | Any, bootstrap: bool = True
) -> AttributeRiskResult:
    """``result`` under another prior: the kept log-likelihoods are re-normalised.

    Parameters
    ----------
    result : AttributeRiskResult
        Output of :func:`attribute_risk`.
    prior : str, Prior, weights or callable
        See :func:`bayes_risk.attribute.priors.parse_prior`.
    bootstrap : bool
        Recompute the bootstrap rank quantiles (False: those columns become ``nan``).

    Returns
    -------
    AttributeRiskResult
        A new result; ``result`` is unchanged.

    Raises
    ------
    ValidationError
        In compatibility mode; for a prior the result's scenario refuses.

    Examples
    --------
    >>> strong = with_prior(res, prior="truth-weighted:2")  # doctest: +SKIP
    """
    if result.settings.get("compat"):
        raise ValidationError(
            "with_prior is not available in compat='AttributeRiskCalculation' mode (the R "
            "package's prior is folded into the log-likelihood); rerun attribute_risk with "
            "the new prior."
        )
    p = parse_prior(prior)
    _check_sweep_prior(result, p)
    inp = result._prior_inputs
    lp_groups, codes = evaluate_prior_groups(p, inp)
    cols, posts = _reprior(result, [lp_groups], log_post=True)
    n = len(result.loglik)
    df = result.records.copy()
    set_point_columns(df, {k: cols[k][0] for k in POINT_COLUMNS})
    for k in ("p_true_lower", "p_true_upper", "is_top_upper", "p_true_chain_min",
              "p_true_chain_max", "chain_z", "flag_codes"):
        if k in cols:
            df[k] = cols[k][0]
    log_post = ungroup([q[0] for q in posts], inp.groups, n)
    if "p_true_unordered" in df.columns:  # a two-record result
        df["p_true_unordered"] = p_true_unordered(result.candidates, log_post)
    boot = result._boot_loglik if bootstrap else None
    logprior = ungroup(lp_groups, inp.groups, n)
    for k, v in bootstrap_summaries(boot, logprior, result._g0(), len(df),
                                    cols["p_true"][0]).items():
        df[k] = v
    warns = [w for w in result.warnings if w not in ("PRIOR_RENORMALISED", "HARMONIC_WEIGHTS")]
    warns += [c for c in codes if c not in warns]
    return dataclasses.replace(
        result, records=df, logprior=logprior,
        log_post=log_post, warnings=warns,
        settings=dict(result.settings, prior=p.label()), prior=p, _cache={},
    )


#: values of the [P, n, G] temporaries of one block of priors in :func:`prior_sensitivity`
_SWEEP_BLOCK = 1 << 22


def _check_sweep_prior(result: AttributeRiskResult, prior: Prior) -> None:
    """The priors a result of the low-risk or two-record intruder cannot take (as its run)."""
    if result.settings.get("scenario") == "empty":
        check_low_risk_prior(prior)
    if result.settings.get("scenario") == "two_records":
        check_pair_prior(prior)


def _stacks(result: AttributeRiskResult) -> list[RecordStack]:
    """The result's per-candidate quantities stacked per candidate-set size, cached."""
    if "stacks" not in result._cache:
        check_memory(_stack_bytes(result), arg_name("records"),
                     what=f"the stacked likelihoods of the result's {len(result.loglik):,} "
                          "records")
        result._cache["stacks"] = record_stacks(
            result.loglik, result.diagnostics, result._g0(), result._prior_inputs.groups,
            chains="p_true_chain_min" in result.records.columns)
    return result._cache["stacks"]


def _stack_bytes(result: AttributeRiskResult) -> int:
    """Bytes :func:`_stacks` will allocate and keep with the result (0 once it has)."""
    if "stacks" in result._cache:
        return 0
    keys = ("loglik_lo", "loglik_hi") + (
        ("chain_loglik", "chain_dev") if "p_true_chain_min" in result.records.columns else ())
    return sum(8 * np.size(a) for a in result.loglik) + sum(
        np.asarray(d[k]).nbytes for d in result.diagnostics for k in keys if k in d)


def _reprior(
    result: AttributeRiskResult, lp_groups: Sequence[Sequence[np.ndarray]], *,
    log_post: bool = False, alone: bool = False,
) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    """The record columns ``{name: (P, n)}`` that depend on the prior, and the log posteriors."""
    P, n = len(lp_groups), len(result.loglik)
    recs = result.records.columns
    bounds, chains = "p_true_upper" in recs, "p_true_chain_min" in recs
    tol = float(result.settings.get("khat_tolerance", KHAT_TOLERANCE))
    names = [*POINT_COLUMNS, *(("p_true_lower", "p_true_upper", "is_top_upper") if bounds else ()),
             *(("p_true_chain_min", "p_true_chain_max", "chain_z") if chains else ()),
             *(("prior_p_true", "prior_top_share") if alone else ())]
    out: dict[str, np.ndarray] = {k: np.full((P, n), np.nan) for k in names}
    out |= {k: np.zeros((P, n), dtype=bool)
            for k, on in (("khat_material", bounds), ("chain_flag", chains)) if on}
    posts = []
    for gi, st in enumerate(_stacks(result)):
        lp = np.stack([np.asarray(q[gi], dtype=np.float64) for q in lp_groups])  # [P, n_g, G]
        post, cols = prior_columns(st, lp, tolerance=tol, log_post=log_post, alone=alone)
        if log_post:
            posts.append(post)
        for k, v in cols.items():
            if k in out:
                out[k][:, st.idx] = v
        for rows, cll, dev_t in st.chains:
            # (np.take: a C-contiguous copy, as the kernel reads it)
            res = agreement_columns(cll, np.swapaxes(dev_t, 2, 3), np.take(lp, rows, axis=1),
                                    st.g0[rows], dev_t=dev_t)
            for k in ("p_true_chain_min", "p_true_chain_max", "chain_z"):
                out[k][:, st.idx[rows]] = res[k]
            out["chain_flag"][:, st.idx[rows]] = res["flag"]
    # the record flags that depend on the prior, set or cleared under each
    flags = {}
    code = material_flag(result.settings.get("estimator"), result.settings.get("khat_rule"))
    if bounds and code is not None:
        flags[code] = out["khat_material"]
    if chains:
        flags["CHAINS_DISAGREE"] = out["chain_flag"]
    base = result.records["flag_codes"].tolist()
    out["flag_codes"] = (flag_strings(base, flags) if flags
                         else np.broadcast_to(np.asarray(base, dtype=object), (P, n)))
    return out, posts


def prior_sensitivity(
    result: AttributeRiskResult, *, priors: Sequence[Any] | str | Prior, bootstrap: bool = False
) -> pd.DataFrame:
    """Re-normalise a result under several priors (each as :func:`with_prior`).

    Average over the rows whose ``flag_codes`` are empty.

    Parameters
    ----------
    result : AttributeRiskResult
    priors : sequence, or one prior specification
        Prior specifications (see :func:`~bayes_risk.attribute.priors.parse_prior`).
    bootstrap : bool
        Also recompute the bootstrap rank quantiles (slower).

    Returns
    -------
    DataFrame
        One row per prior and record: ``prior`` (a repeated label gets ``#2``, ...), ``record``,
        the point summaries, ``prior_p_true`` and ``prior_top_share`` (the prior alone),
        ``baseline``, the bounds, the bootstrap columns when requested and ``flag_codes``.

    Raises
    ------
    ValidationError
        ``priors`` is empty or not understood; the result was computed in compatibility mode.

    Examples
    --------
    >>> sweep = prior_sensitivity(res, priors=["uniform", "truth-weighted:2"])  # doctest: +SKIP
    >>> sweep[sweep["flag_codes"] == ""].groupby("prior")["p_true"].mean()  # doctest: +SKIP
    """
    if result.settings.get("compat"):
        raise ValidationError("prior_sensitivity is not available in compat mode; rerun per prior.",
                              code="RESULT_UNSUITED")
    try:
        specs = [priors] if isinstance(priors, (str, Prior)) or callable(priors) else list(priors)
    except TypeError as err:
        raise ValidationError(
            f"priors must be a sequence of prior specifications. Got {type(priors).__name__}."
        ) from err
    if not specs:
        raise ValidationError(
            "priors is empty; give at least one prior specification, e.g. "
            "['uniform', 'truth-weighted:2']."
        )
    parsed = [parse_prior(spec) for spec in specs]
    labels, seen = [], {}
    for p in parsed:
        _check_sweep_prior(result, p)
        label = p.label()
        seen[label] = k = seen.get(label, 0) + 1  # e.g. two user priors, both "user"
        labels.append(label if k == 1 else f"{label}#{k}")
    inp = result._prior_inputs
    n = len(result.loglik)
    recs = result.records
    extra = [k for k in ("baseline", "p_true_lower", "p_true_upper", "is_top_upper")
             if k in recs.columns]
    parts: dict[str, list[np.ndarray]] = {}
    # blocks of priors keep the [P, n, G] temporaries to about _SWEEP_BLOCK values (a few
    # arrays of doubles each), fewer when the memory budget is smaller; the table of every
    # prior and record, which is returned, is checked first, with the stacks the result keeps
    check_memory(8.0 * 24 * len(parsed) * n + _stack_bytes(result), arg_name("priors"),
                 what=f"the table of {n:,} records under {len(parsed)} priors and the "
                      "stacked likelihoods of the result")
    size = int(np.sum([np.size(a) for a in result.loglik])) or 1
    step = max(1, working_bytes(32 * _SWEEP_BLOCK) // (32 * size))
    for a in range(0, len(parsed), step):
        block = parsed[a : a + step]
        lps = [evaluate_prior_groups(p, inp)[0] for p in block]
        cols, _ = _reprior(result, lps, alone=True)
        boots: dict[str, list[np.ndarray]] = {}
        if bootstrap:
            for j, lp in enumerate(lps):
                bs = bootstrap_summaries(result._boot_loglik, ungroup(lp, inp.groups, n),
                                         result._g0(), n, cols["p_true"][j])
                for k, v in bs.items():
                    boots.setdefault(k, []).append(v)
        for k in (*POINT_COLUMNS, "prior_p_true", "prior_top_share", "p_true_lower",
                  "p_true_upper", "is_top_upper", "flag_codes"):
            if k in cols:
                parts.setdefault(k, []).append(cols[k].reshape(-1))
        for k, v in boots.items():
            parts.setdefault(k, []).append(np.concatenate(v))
    P = len(parsed)
    key = recs.index.name or "record"
    table = {
        "prior": pd.Series(labels, dtype="str").repeat(n).array,
        key: np.tile(recs.index.to_numpy(), P),
    }
    for k in ("p_true", "rank_min", "rank_avg", "is_top", "n_tie", "top_share",
              "prior_p_true", "prior_top_share"):
        table[k] = np.concatenate(parts[k])
    for k in extra:
        table[k] = (np.tile(recs[k].to_numpy(), P) if k == "baseline"
                    else np.concatenate(parts[k]))
    if bootstrap:
        for k in [c for c in recs.columns if c.startswith("boot_")]:
            table[k] = np.concatenate(parts[k]) if k in parts else np.full(P * n, np.nan)
    table["flag_codes"] = np.concatenate(parts["flag_codes"])
    out = pd.DataFrame(table)
    top = out["is_top"]
    out["is_top"] = top.astype("boolean") if top.isna().any() else top.astype(bool)
    return out


_SENSITIVITY_MEASURES = {
    # measure -> (what the prior alone gives, axis label)
    "is_top": ("prior_top_share", "records whose true values are ranked first (%)"),
    "p_true": ("prior_p_true", "mean probability of the true values, p_true (%)"),
}


def plot_prior_sensitivity(
    sensitivity: pd.DataFrame, *, measure: Literal["is_top", "p_true"] = "is_top", ax: Any = None,
) -> Any:
    """Attribute risk under each intruder prior, beside what the prior alone gives.

    See :doc:`/user_guide/attribute`.

    Parameters
    ----------
    sensitivity : DataFrame
        The table of :func:`prior_sensitivity`.
    measure : {"is_top", "p_true"}
        Share of the records whose truth is the best guess, or mean ``p_true``.
    ax : matplotlib.axes.Axes, optional
        The Axes to draw on (default: pyplot's current Axes, or a new figure).

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ValidationError
        For another ``measure``, or a table without the columns of :func:`prior_sensitivity`.

    Examples
    --------
    >>> sens = prior_sensitivity(res, priors=["uniform", "truth-weighted:1.5",
    ...                                       "truth-weighted:3", "empirical:1"])  # doctest: +SKIP
    >>> ax = plot_prior_sensitivity(sens)  # doctest: +SKIP
    >>> ax.figure.savefig("prior_sensitivity.png")  # doctest: +SKIP
    """
    from bayes_risk.results._base import own_figure, pyplot_axes

    check_value(measure, Options(tuple(_SENSITIVITY_MEASURES)), "measure")
    alone, label = _SENSITIVITY_MEASURES[measure]
    need = ["prior", "flag_codes", "p_true", "baseline", measure, alone]
    missing = [c for c in dict.fromkeys(need) if c not in getattr(sensitivity, "columns", ())]
    if missing:
        raise ValidationError(
            f"sensitivity must be the table of prior_sensitivity(result, priors=...); it has "
            f"no column(s) {missing}.", code="MISSING_COLUMN",
        )
    ok = (sensitivity["flag_codes"].fillna("") == "") & sensitivity["p_true"].notna()
    rows = sensitivity[ok].groupby("prior", sort=False)
    priors = list(dict.fromkeys(sensitivity["prior"]))
    stats = rows.agg(after=(measure, "mean"), before=(alone, "mean"), n=(measure, "size"))
    stats = stats.reindex(priors)
    total = sensitivity.groupby("prior", sort=False).size().reindex(priors)
    if ax is None:
        ax = pyplot_axes((7.0, 1.8 + 0.32 * len(priors)))
    y = np.arange(len(priors))[::-1]
    after, before = 100 * stats["after"].to_numpy(float), 100 * stats["before"].to_numpy(float)
    ax.hlines(y, before, after, color="0.6", lw=1.2, zorder=1)
    ax.scatter(before, y, s=36, facecolors="white", edgecolors="C0", zorder=2,
               label="prior alone (before the release)")
    ax.scatter(after, y, s=36, color="C0", zorder=3, label="after the release")
    # the figures in a column right of the plot (x in axes units, y in data units), where no
    # marker or line can hide them
    column = ax.get_yaxis_transform()
    ax.text(1.03, len(priors) - 0.35, "after · alone", transform=column, fontsize=7,
            ha="left", va="bottom", color="0.3")
    for yi, v, b in zip(y, after, before, strict=True):
        if np.isfinite(v):
            ax.text(1.03, yi, f"{v:.3g} % · {b:.3g} %", transform=column, va="center",
                    fontsize=7)
        else:  # nothing to average: the figure under this prior cannot be reported
            ax.text(1, yi, "every record flagged: no figure", va="center", fontsize=7,
                    color="C3")
    # 1/G averaged over the records: mean p_true under the uniform prior alone (before the
    # release), the null of p_true where the posterior is the prior
    first = sensitivity[sensitivity["prior"] == priors[0]]
    guess = 100 * float(np.nanmean(first["baseline"])) if len(first) else float("nan")
    if np.isfinite(guess):
        ax.axvline(guess, color="k", ls="--", lw=1,
                   label=f"uniform prior alone, 1/G: {guess:.3g} %")
    names = [f"{p} (n = {int(n) if np.isfinite(n) else 0:,}"
             + (f" of {int(t):,})" if np.isfinite(n) and n < t else ")")
             for p, n, t in zip(priors, stats["n"].to_numpy(float), total.to_numpy(float),
                                strict=True)]
    ax.set_yticks(y, names, fontsize=8)
    shown = np.concatenate([after, before, [guess]])
    top = float(np.nanmax(shown)) if np.isfinite(shown).any() else 100.0
    ax.set_xlim(0, min(105.0, max(10.0, 1.15 * top)))
    ax.set_ylim(-0.7, len(priors) - 0.3)
    ax.set_xlabel(label + ", unflagged records")
    ax.set_title("Attribute risk by intruder prior", fontsize=10)
    # below the axes: inside, it would cover a row
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=7,
              frameon=False)
    if own_figure(ax):
        ax.figure.tight_layout()
    return ax
