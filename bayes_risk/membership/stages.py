"""The stages of :func:`bayes_risk.membership.membership_risk` shared by its two ratios — the
posterior-draw ratio of the Bayesian models and the plug-in ratio of CART releases: the inputs
and their checks, the targets and their slots, the refits and the log predictives, the
normalisers, the flags, the record table, the file summaries and the settings (methods,
Membership disclosure risk)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._rng import RandomSeed, seed_to_json
from bayes_risk.attribute.refits import fit_refits
from bayes_risk.data.normalise import as_synthetic_list, record_positions
from bayes_risk.data.validate import validate_table
from bayes_risk.exceptions import SchemaError, ValidationError, arg_name
from bayes_risk.membership import dcr as _dcr
from bayes_risk.membership import estimator as _est
from bayes_risk.membership import partial as _partial
from bayes_risk.membership.summaries import file_summary

__all__: list[str] = []  # stages of membership_risk (bayes_risk.membership.api), not a public API

#: population records drawn per posterior-predictive dataset for the normaliser (m > 1)
_ROWS_PER_DRAW = 4


def _table(df: Any, cols: list[str], argument: str) -> pd.DataFrame:
    """``df`` restricted to the model's columns (an error naming what is missing)."""
    if not isinstance(df, pd.DataFrame):
        raise ValidationError(f"{argument} must be a pandas DataFrame. Got {type(df).__name__}.")
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise SchemaError(f"{argument} is missing the model's column(s) {missing}.",
                          code="MISSING_COLUMN")
    return df[cols].reset_index(drop=True)


def _check_levels(df: pd.DataFrame, schema: Any, argument: str) -> None:
    """A value the model was never fitted with has probability 0 under every draw."""
    from bayes_risk.data.levels import normalise_level

    for spec in schema:
        if not spec.is_categorical or spec.levels is None:
            continue
        allowed = {normalise_level(v) for v in spec.levels}
        col = df[spec.name]
        bad = [v for v in pd.unique(col.dropna()) if normalise_level(v) not in allowed]
        if bad:
            first = normalise_level(bad[0])
            row = int(np.flatnonzero([normalise_level(v) == first for v in col])[0])
            raise SchemaError(
                f"{argument} row {row}: column {spec.name!r} holds {bad[0]!r}, a level absent "
                "from the data the model was fitted to; its likelihood is 0 under the model, so "
                "its membership ratio is undefined (UNKNOWN_LEVEL). Drop such rows or refit with "
                "the level declared.",
                code="UNKNOWN_LEVEL",
            )


def _prior(prior: float | str, n: int, population_size: int | None) -> float:
    if isinstance(prior, str):
        if prior == "balanced":
            return 0.5
        if prior == "sampling":
            if population_size is None:
                raise ValidationError(
                    "prior='sampling' (the base rate n/N) needs population_size=N.",
                    code="OPTION_REQUIRED")
            if not (isinstance(population_size, (int, np.integer)) and population_size >= n):
                raise ValidationError(
                    f"population_size must be an integer >= the {n} confidential records. Got "
                    f"{population_size!r}.")
            return n / float(population_size)
        raise ValidationError(
            f"prior must be 'balanced', 'sampling' or a probability in (0, 1). Got {prior!r}.")
    p = float(prior)
    if not (0.0 < p < 1.0) or isinstance(prior, bool):
        raise ValidationError(f"prior must be a probability in (0, 1). Got {prior!r}.")
    return p


def _population_rows(model: Any, k: int, rng: np.random.Generator,
                     rows_: np.ndarray | None = None) -> pd.DataFrame:
    """``k`` records from the posterior predictive ``p(· | y)``: a few rows of each of several
    synthetic datasets, so that many posterior draws are represented (only the synthesized
    rows ``rows_`` when selected records are synthesized: the others are confidential
    records)."""
    sets = max(1, math.ceil(k / _ROWS_PER_DRAW))
    syn = model.synthesize(sets, random_seed=rng)
    rows = []
    for z in syn.datasets:
        if rows_ is not None:
            z = z.iloc[rows_]
        take = rng.choice(len(z), size=min(_ROWS_PER_DRAW, len(z)), replace=False)
        rows.append(z.iloc[np.sort(take)])
    return pd.concat(rows, ignore_index=True).iloc[:k].reset_index(drop=True)


def _stacked_datasets(model: Any, sets: int, rng: np.random.Generator,
                      rows_: np.ndarray | None) -> tuple[pd.DataFrame, list[int]]:
    """``model.synthesize(sets, random_seed=rng)``'s datasets stacked (only their rows ``rows_``
    when given) and each one's number of rows; a model that can stack them without a DataFrame
    per dataset (``_synthesize_stacked``) does."""
    direct = getattr(model, "_synthesize_stacked", None)
    if direct is not None:
        return direct(sets, random_seed=rng, rows=rows_)
    syn = model.synthesize(sets, random_seed=rng)
    frames = [z if rows_ is None else z.iloc[rows_] for z in syn.datasets]
    return pd.concat(frames, ignore_index=True), [len(z) for z in frames]


def _conditional_population_rows(
    model: Any, original: pd.DataFrame, original_keys: np.ndarray, keys: list[int], k: int,
    rng: np.random.Generator, schema: Any, us: list[str], rows_: np.ndarray | None = None,
) -> dict[int, pd.DataFrame]:
    """For each cell ``r`` of the unsynthesized columns in ``keys``, ``k`` records of
    ``p(· | r, y)``: rows of fresh synthetic datasets whose unsynthesized values are ``r`` (the
    model copies them from the original and draws the synthesized ones given them).

    A cell that few records share needs many datasets: as many as ``k`` over its rows per
    dataset (at most :data:`_ROWS_PER_DRAW`), and never more than the model's draws ``H``; a
    cell then gets fewer than ``k`` records, and the ESS flag of the normaliser says so. (A
    numeric unsynthesized column makes most cells single records: the rows of each dataset are
    grouped by cell once, not searched once per cell.) When selected records are synthesized
    only the synthesized rows ``rows_`` are drawn from.
    """
    if not keys:
        return {}
    uniq, counts = np.unique(original_keys if rows_ is None else original_keys[rows_],
                             return_counts=True)
    fewest = int(counts[np.searchsorted(uniq, keys)].min())
    per = min(_ROWS_PER_DRAW, fewest)
    sets = max(1, math.ceil(k / per))
    sets = min(sets, int(getattr(model, "n_draws", sets)))
    stacked, sizes = _stacked_datasets(model, sets, rng, rows_)
    # positions of each cell's records in the datasets stacked, gathered with one take per cell
    # at the end (a take per cell and dataset is what cost: up to H datasets x the cells)
    take: dict[int, list[np.ndarray]] = {key: [] for key in keys}
    need = np.asarray(keys, dtype=np.int64)
    # the cells of all the datasets' rows at once (a key depends on its row and the reference
    # only): one pass over the stacked table, not one per dataset
    stacked_keys = _partial.cell_keys([stacked], schema, us, reference=original)[0]
    bounds = np.cumsum([0, *sizes])
    for offset, end in zip(bounds[:-1], bounds[1:], strict=True):
        zkeys = stacked_keys[offset:end]
        order = np.argsort(zkeys, kind="stable")
        lo = np.searchsorted(zkeys[order], need, side="left")
        hi = np.searchsorted(zkeys[order], need, side="right")
        for key, a, b in zip(keys, lo, hi, strict=True):
            rows = order[a:b]
            size = min(len(rows), max(1, math.ceil(k / sets)))
            if size:
                take[key].append(offset + np.sort(rng.choice(rows, size=size, replace=False)))
    return {key: stacked.iloc[np.concatenate(v)[:k]].reset_index(drop=True)
            for key, v in take.items()}


def _check_options(population: Any, threshold: float, normaliser_draws: Any, bootstrap: Any,
                   alpha: Any, model: Any = None, n: int = 0) -> None:
    """The numeric options of :func:`membership_risk`, each named in its error; with the
    ``model`` and the records' number ``n``, whether it can draw ``population`` look-alikes
    (:func:`_check_drawable`)."""
    if isinstance(population, bool) or not isinstance(population, (int, np.integer)) or (
            population < 0):
        raise ValidationError(f"population must be an integer >= 0. Got {population!r}.")
    if not (0.0 < float(threshold) < 1.0):
        raise ValidationError(f"threshold must be in (0, 1). Got {threshold!r}.")
    if isinstance(normaliser_draws, bool) or not isinstance(normaliser_draws, (int, np.integer)) \
            or normaliser_draws < 20:
        raise ValidationError(
            f"normaliser_draws must be an integer >= 20. Got {normaliser_draws!r}.")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, (int, np.integer)) or bootstrap < 0:
        raise ValidationError(f"bootstrap must be an integer >= 0. Got {bootstrap!r}.")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.number)) or not (
            np.isfinite(alpha) and alpha > 0):
        raise ValidationError(
            f"unsynthesized_concentration must be a number > 0. Got {alpha!r}.",
            code="INVALID_ARGUMENT")
    if model is not None:
        _check_drawable(model, int(population), "population", n)


def _check_drawable(model: Any, k: int, argument: str, n: int) -> None:
    """Refuse ``k`` records of the posterior predictive (:func:`_population_rows`) that the
    model cannot draw — they come :data:`_ROWS_PER_DRAW` to a synthetic dataset, one dataset per
    posterior draw — or that would not fit in memory (the datasets are drawn at once), before
    any refit: the error names the membership argument, not the synthetic datasets drawn."""
    from bayes_risk._memory import check_memory

    sets = math.ceil(k / _ROWS_PER_DRAW)
    H = getattr(model, "n_draws", None)
    if H is not None and sets > int(H):
        raise ValidationError(
            f"{arg_name(argument, k)}: records of the model's posterior predictive are drawn "
            f"{_ROWS_PER_DRAW} to a synthetic dataset, one dataset per posterior draw, and the "
            f"model has H = {int(H)} draws: at most {_ROWS_PER_DRAW * int(H)} records. Give "
            "fewer, or fit the model with more draws.",
            code="TOO_FEW_DRAWS",
        )
    schema = getattr(model, "schema_", None)
    width = len(schema.names) if schema is not None else 1
    check_memory(8.0 * sets * max(n, 1) * width, arg_name(argument),
                 what=f"the {sets} synthetic datasets the {k} records are drawn from")


def _targets(orig: pd.DataFrame, members: np.ndarray, hold: pd.DataFrame | None,
             look: pd.DataFrame | None) -> tuple[pd.DataFrame, list[str], list[str], list[int]]:
    """The targets (members, then holdout rows, then look-alikes) with their role, source and
    row in that source."""
    parts = [orig.iloc[members]]
    role = ["member"] * len(members)
    source = ["original"] * len(members)
    src_row = list(members)
    for tab, name in ((hold, "holdout"), (look, "population")):
        if tab is not None and len(tab):
            parts.append(tab)
            role += ["non-member"] * len(tab)
            source += [name] * len(tab)
            src_row += list(range(len(tab)))
    return pd.concat(parts, ignore_index=True), role, source, src_row


def _flags(match: np.ndarray, log_lr: np.ndarray, khat_max: np.ndarray | None,
           ess_min: np.ndarray, norm_khat: np.ndarray, norm_ess: np.ndarray, khat_thr: float,
           ess_thr: float, norm_thr: tuple[float, float] | None) -> list[list[str]]:
    """Each target's flags (methods, Membership disclosure risk: diagnostics); a target whose
    unsynthesized values (or the selection) exclude it has none. ``khat_max`` None: k-hat not
    checked; ``norm_thr`` None: no normaliser (m = 1 without a selection rule)."""
    flags: list[list[str]] = [[] for _ in range(len(match))]
    for t in range(len(match)):
        if not match[t]:
            continue
        if not np.isfinite(log_lr[t]):
            flags[t].append("LIKELIHOOD_UNDEFINED")
        if khat_max is not None and khat_max[t] > khat_thr:
            flags[t].append("KHAT_HIGH")
        if ess_min[t] < ess_thr:
            flags[t].append("LOW_ESS")
        # an ESS of nan: no population draw the selection rule selects
        if norm_thr is not None and (norm_khat[t] > norm_thr[0]
                                     or not norm_ess[t] >= norm_thr[1]):
            flags[t].append("NORMALISER_UNSTABLE")
    return flags


def _result_warnings(table: pd.DataFrame, n_non: int, H: int, model: Any,
                     posteriors: list[Any]) -> list[str]:
    """The result's warning codes: flagged targets, no non-member, few draws, an approximate
    posterior, and the MCMC warnings of the fit and of the refits."""
    warnings_: list[str] = []
    # a record released whole is not an unstable estimate (MEMBERSHIP_RELEASED_WHOLE says so)
    if int((~table["flag_codes"].isin(["", "RELEASED_WHOLE"])).sum()):
        warnings_.append("MEMBERSHIP_FLAGGED")
    if n_non == 0:
        warnings_.append("NO_NON_MEMBERS")
    if H < 20:
        warnings_.append("H_TOO_SMALL")
    methods = getattr(model, "posterior_methods", None)
    if callable(methods) and "laplace" in set(methods().values()):
        warnings_.append("APPROXIMATE_POSTERIOR")
    for post in posteriors:  # MCMC problems of the fit and of the refits (RHAT_HIGH, ...)
        warnings_ += [str(c) for c in getattr(post, "warnings_", []) or []
                      if str(c) not in warnings_]
    return warnings_


def _log_predictives(posteriors: list[Any], targets: pd.DataFrame, slot_rows: pd.DataFrame,
                     slot_inv: np.ndarray, khat: bool) -> tuple[Any, list[Any], list[np.ndarray],
                                                                list[np.ndarray],
                                                                list[np.ndarray]]:
    """Each posterior's leave-one-out log predictive of the targets in their slots (the fit's
    first, then the refits'), the slots' record log-likelihoods, k-hats and ESS."""
    base = None
    aug: list[_est.LogPredictive] = []
    slot_lls, khats, ess = [], [], []
    for p, post in enumerate(posteriors):
        tll = post.record_loglik(targets)
        sll = post.record_loglik(slot_rows)
        slot_lls.append(sll)
        lp = _est.loo_log_predictive(tll, sll[:, slot_inv], khat=khat)
        khats.append(lp.khat)
        ess.append(lp.ess)
        if p == 0:
            base = lp
        else:
            aug.append(lp)
    return base, aug, slot_lls, khats, ess


def _normalisers(model: Any, posteriors: list[Any], orig: pd.DataFrame, uslots: np.ndarray,
                 slot_inv: np.ndarray, slot_lls: list[np.ndarray], match: np.ndarray,
                 orig_keys: np.ndarray | None, normaliser_draws: int, rng: np.random.Generator,
                 schema: Any, us: list[str], rule: Any = None, rows_: np.ndarray | None = None,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The population normaliser of every target's slot when m > 1 or a selection rule is
    stated (methods, Membership disclosure risk), with its k-hat and ESS: one per distinct slot
    record, from population draws (given the slot's unsynthesized values ``r`` for a partial
    release, for the cells of matching targets only; from the synthesized rows ``rows_`` only,
    each weighted by whether ``rule`` selects it)."""
    _, first, rec_inv = np.unique(
        pd.util.hash_pandas_object(orig.iloc[uslots], index=False).to_numpy(),
        return_index=True, return_inverse=True)
    back = rec_inv.ravel()[slot_inv]
    ld = np.full(len(first), np.nan)
    nk = np.full(len(first), np.nan)
    ne = np.full(len(first), np.nan)
    if rows_ is not None and rows_.size == 0:  # nothing synthesized: every slot released whole
        return ld[back], nk[back], ne[back]
    if not us:
        prow = _population_rows(model, normaliser_draws, rng, rows_)
        groups = {None: (np.arange(len(first)), prow)}
    else:
        rec_key = orig_keys[uslots[first]]
        need = np.unique(rec_key[np.unique(back[match])]) if match.any() else []
        rows = _conditional_population_rows(model, orig, orig_keys, list(need),
                                            normaliser_draws, rng, schema, us, rows_)
        groups = {k: (np.flatnonzero(rec_key == k), rows[k]) for k in need}
    for sel, prow in groups.values():
        pop_ll = [post.record_loglik(prow) for post in posteriors]
        log_s = None
        if rule is not None and rule.kind == "rule":
            log_s = np.where(rule.evaluate(prow, "the population draws"), 0.0, -np.inf)
        ld[sel], nk[sel], ne[sel] = _est.log_normaliser(
            pop_ll, [sl[:, first[sel]] for sl in slot_lls], log_select=log_s)
    return ld[back], nk[back], ne[back]


def _unsynthesized_summary(orig: pd.DataFrame, schema: Any, us: list[str],
                           orig_keys: np.ndarray, members: np.ndarray, log_p_us: np.ndarray,
                           match: np.ndarray, role: list[str]) -> dict[str, Any]:
    """What the released unsynthesized values alone reveal (the audit's cause reads it)."""
    uniq, counts = np.unique(orig_keys, return_counts=True)
    alone = counts[np.searchsorted(uniq, orig_keys[members])] == 1
    is_non = np.asarray(role) == "non-member"
    return {
        "columns": us,
        "n_cells": _partial.n_cells(orig, schema, us),
        # the recorded unit of each numeric column, which sets its cells
        "resolution": {c: _partial.resolution(orig[c]) for c in us
                       if not schema[c].is_categorical},
        "share_members_unique": float(alone.mean()) if len(alone) else float("nan"),
        # 1 / p(r | y_{-i}): what the unsynthesized values alone multiply a member's ratio by
        "median_factor_members": float(np.median(np.exp(-log_p_us[:len(members)])))
        if len(members) else float("nan"),
        "share_non_members_matching": float(match[is_non].mean()) if is_non.any()
        else float("nan"),
    }


def _selection_match(rule: Any, selected: np.ndarray, targets: pd.DataFrame,
                     orig: pd.DataFrame, slots: np.ndarray, schema: Any, match: np.ndarray,
                     ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """What the selection seen says about each target (methods, Releases that synthesize
    selected records): in a synthesized slot the target must be one the rule selects
    (``s(x) = 1``); an unsynthesized slot shows its record whole, so a target equal to it is
    revealed (``released_whole``) and any other is excluded."""
    in_sel = selected[slots]
    cols = list(schema.names)
    slot_key, target_key = _partial.cell_keys([orig.iloc[slots], targets], schema, cols,
                                              reference=orig)
    released_whole = ~in_sel & (target_key == slot_key) & (target_key >= 0)
    by_rule = rule.evaluate(targets, "the targets")
    new_match = match & in_sel & by_rule
    columns = {"slot_selected": in_sel, "released_whole": released_whole}
    if rule.kind == "rule":
        columns["selected_by_rule"] = by_rule
    return new_match, released_whole, columns


def _selection_summary(rule: Any, selected: np.ndarray, members: np.ndarray,
                       released_whole: np.ndarray, columns: dict[str, np.ndarray],
                       role: list[str]) -> dict[str, Any]:
    """The file summary of the selection: the rule, how many records it selected, the members
    released whole and the non-members the rule rules out."""
    is_non = np.asarray(role) == "non-member"
    ruled_out = columns["slot_selected"] & ~columns.get(
        "selected_by_rule", np.ones(len(role), dtype=bool))
    return {
        "rule": rule.description,
        "kind": rule.kind,
        "n_selected": int(selected.sum()),
        "n_records": int(selected.size),
        "n_members_released_whole": int(released_whole[: len(members)].sum()),
        "n_non_members_released_whole": int(released_whole[is_non].sum()),
        "n_non_members_ruled_out": int(ruled_out[is_non].sum()),
    }


def _record_table(columns: dict[str, Any], *, partial: tuple[Any, Any] | None,
                  normaliser: tuple[Any, Any, Any] | None, dcr: np.ndarray | None,
                  flags: list[list[str]], selection: dict[str, Any] | None = None,
                  ) -> pd.DataFrame:
    """The per-target table of :class:`MembershipRiskResult` (index ``target``): the columns
    given, the partial-synthesis columns, the selection's, the normaliser's (m > 1 or a
    selection rule), the distance and the flags."""
    table = pd.DataFrame(columns)
    if partial is not None:
        table["unsynthesized_match"], table["log_p_unsynthesized"] = partial
    for name, col in (selection or {}).items():
        table[name] = col
    if normaliser is not None:
        table["log_normaliser"], table["normaliser_khat"], table["normaliser_ess"] = normaliser
    if dcr is not None:
        table["dcr"] = dcr
    table["flag_codes"] = [";".join(f) for f in flags]
    table.index.name = "target"
    return table


def _inputs(model: Any, original: Any, synthetic: Any, holdout: Any, records: Any,
            ) -> tuple[pd.DataFrame, list[pd.DataFrame], pd.DataFrame | None, np.ndarray]:
    """The original, the synthetic datasets and the holdout as tables of the model's columns,
    checked against its schema and fitted size, and the members' row positions."""
    schema = model.schema_
    cols = list(schema.names)
    orig = _table(original, cols, "original")
    n = len(orig)
    n_fit = getattr(model, "n_records", None)
    if isinstance(n_fit, (int, np.integer)) and int(n_fit) != n:
        raise ValidationError(
            f"original has {n} rows but the model was fitted to {int(n_fit)}; give the table the "
            "model was fitted to.", code="ORIGINAL_DIFFERS")
    datasets = [_table(z, cols, f"synthetic dataset {l}") for l, z in enumerate(
        as_synthetic_list(synthetic, original=original).datasets, start=1)]
    for l, z in enumerate(datasets, start=1):
        _check_levels(z, schema, f"synthetic dataset {l}")
    hold = None if holdout is None else _table(holdout, cols, "holdout")
    if hold is not None:
        # checked on its own so that an error numbers the holdout's rows, not the row after the
        # members that it has in the table of targets; missing values are the model's to judge
        validate_table(hold, schema, name="holdout", allow_nan=True, check_levels=False)
        _check_levels(hold, schema, "holdout")
    return orig, datasets, hold, record_positions(records, n)


def _posteriors(model: Any, orig: pd.DataFrame, datasets: list[pd.DataFrame],
                augmented: Sequence[Any] | None, rng: np.random.Generator,
                progressbar: bool = False) -> list[Any]:
    """The model and one augmented refit per synthetic dataset: ``augmented`` when given (one
    per dataset), otherwise fitted here, each with its own seed from ``rng`` (the cost stated
    first and one bar over the refits, as attribute risk's)."""
    m = len(datasets)
    if augmented is None:
        augmented = fit_refits(model, orig, datasets, rng.spawn(m), progressbar=progressbar)
    else:
        augmented = list(augmented)
        if len(augmented) != m:
            raise ValidationError(
                f"augmented must hold one model per synthetic dataset ({m}); got "
                f"{len(augmented)}.")
    return [model, *augmented]


def _target_slots(model: Any, orig: pd.DataFrame, members: np.ndarray,
                  hold: pd.DataFrame | None, population: int, pop_rng: np.random.Generator,
                  slot_rng: np.random.Generator, rows_: np.ndarray | None = None,
                  ) -> tuple[Any, ...]:
    """The targets — members (their own slot), holdout rows and ``population`` look-alikes
    drawn from the model (from the synthesized rows ``rows_``; a random slot each) — with their
    role, source, source row and slot."""
    look = _population_rows(model, population, pop_rng, rows_) if population else None
    targets, role, source, src_row = _targets(orig, members, hold, look)
    n_non = len(targets) - len(members)
    slots = np.concatenate([members, slot_rng.integers(0, len(orig), size=n_non)])
    return targets, role, source, src_row, slots.astype(np.int64)


def _summary(table: pd.DataFrame, datasets: list[pd.DataFrame], orig: pd.DataFrame,
             hold: pd.DataFrame | None, schema: Any, *, threshold: float, bootstrap: int,
             rng: np.random.Generator, dcr: bool) -> dict[str, Any]:
    """The result's file summary, with the distance-to-closest-record overfitting share when
    there is a holdout."""
    overfit = None
    if dcr and hold is not None and len(hold):
        overfit = _dcr.overfitting_share(datasets, orig, hold, schema, rng.spawn(1)[0])
    summary = file_summary(table, threshold=threshold, bootstrap=bootstrap, rng=rng, dcr=dcr)
    if overfit is not None:
        summary["dcr_overfitting"] = overfit
    return summary


def _diagnostics(match: np.ndarray, log_lr: np.ndarray, khats: list[np.ndarray],
                 ess: list[np.ndarray], norm_khat: np.ndarray, norm_ess: np.ndarray, *, H: int,
                 normalised: bool, normaliser_draws: int, khat: bool, partial: bool,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[float, float]]:
    """Each target's worst Pareto k-hat and smallest ESS over the posteriors, its flags, and
    the k-hat and ESS thresholds for ``H`` draws."""
    khat_thr, ess_thr = _est.thresholds(H)
    khat_max = np.max(np.stack(khats), axis=0)
    ess_min = np.min(np.stack(ess), axis=0)
    if partial:  # no Monte Carlo behind an excluded target
        khat_max = np.where(match, khat_max, np.nan)
        ess_min = np.where(match, ess_min, np.nan)
    norm_thr = _est.thresholds(normaliser_draws)
    flags = _flags(match, log_lr, khat_max if khat else None, ess_min, norm_khat, norm_ess,
                   khat_thr, ess_thr, norm_thr if normalised else None)
    return khat_max, ess_min, flags, (khat_thr, ess_thr)


def _settings(pi: float, prior: float | str, threshold: float,
              mc_thresholds: tuple[float, float], *, m: int, H: int, normaliser_draws: int,
              n_members: int, n_holdout: int, population: int, bootstrap: int,
              random_seed: RandomSeed, model: Any, us: list[str], alpha: float,
              selection: Any = None, n_selected: int | None = None,
              ) -> dict[str, Any]:
    """The settings a :class:`MembershipRiskResult` reports."""
    return {
        "prior": pi,
        "prior_spec": prior if isinstance(prior, str) else "user",
        "threshold": float(threshold),
        "m": m,
        "n_draws": H,
        "khat_threshold": mc_thresholds[0],
        "ess_threshold": mc_thresholds[1],
        "normaliser": "exact (m = 1)" if m == 1 else f"{normaliser_draws} population draws",
        "n_members": n_members,
        "n_holdout": n_holdout,
        "n_population": population,
        "bootstrap": bootstrap,
        "random_seed": seed_to_json(random_seed),
        "model": type(model).__name__,
        "unsynthesized": us,
        "unsynthesized_concentration": alpha if us else None,
        # releases that synthesize selected records: the stated rule and how many it selects
        "selection": None if selection is None else selection.description,
        "n_selected": n_selected,
    }
