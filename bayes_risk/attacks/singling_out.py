"""Singling-out risk as anonymeter defines it (Giomi et al. 2023): :doc:`/methods/attacks`."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from typing import Annotated, Any

import numpy as np
import pandas as pd

from bayes_risk._attack_specs import PredicateSpec, parse_modes
from bayes_risk._constraints import (
    Interval,
    Options,
    SequenceOf,
    check_params,
    check_value,
    checked,
)
from bayes_risk._rng import RandomSeed, as_generator
from bayes_risk._specs import argument_checks, as_spec, cli_option
from bayes_risk.attacks import predicates as pr
from bayes_risk.attacks._inputs import attack_inputs, code_table, group_column, result_fields
from bayes_risk.attacks.rates import (
    group_labels,
    group_rows,
    rate_columns,
    success_rate,
)
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ValidationError, arg_name
from bayes_risk.results.attacks import SinglingOutResult

__all__ = ["singling_out_risk", "MODES", "size_correction"]

#: the two attacks of anonymeter, in the order of their random streams
MODES: tuple[str, ...] = ("univariate", "multivariate")

#: multivariate candidates drawn per batch (a constant: the draws do not depend on it)
_BATCH = 1000

#: anonymeter's design of the control-size correction: 10 subsample sizes, 5 draws each
_SIZES, _REPEATS = 10, 5


def _dedup(X: np.ndarray) -> np.ndarray:
    """Distinct rows in order of first occurrence (a missing cell equals another)."""
    return pd.DataFrame(X).drop_duplicates().to_numpy(np.float64)


def _singles_out(X: np.ndarray, preds: pr.Predicates) -> np.ndarray:
    return pr.count_matches(X, preds) == 1


def _univariate_queries(S: np.ndarray, is_cat: np.ndarray, n: int, rng: np.random.Generator
                        ) -> pr.Predicates:
    cands, counts = pr.univariate_candidates(S, is_cat)
    order = rng.permutation(len(cands))
    return _distinct(cands, order[counts[order] == 1], set(), n)


def _distinct(cands: pr.Predicates, idx: np.ndarray, seen: set[bytes], n: int
              ) -> pr.Predicates:
    """The candidates ``idx`` not in ``seen`` (which they join), in order, at most ``n``."""
    out = []
    for i, key in zip(idx, cands.take(idx).keys(), strict=True):
        if len(out) == n:
            break
        if key not in seen:
            seen.add(key)
            out.append(i)
    return cands.take(np.asarray(out, dtype=np.int64))


def _multivariate_queries(S: np.ndarray, is_cat: np.ndarray, n: int, n_cols: int,
                          max_attempts: int | None, rng: np.random.Generator
                          ) -> tuple[pr.Predicates, int]:
    """Candidates in batches until ``n`` distinct ones single out a row of ``S`` or the search
    stops (:doc:`/methods/attacks`); returns them and the number tried."""
    medians = np.array([np.nan if is_cat[j] or np.isnan(S[:, j]).all()
                        else float(np.nanmedian(S[:, j])) for j in range(S.shape[1])])
    seen: set[bytes] = set()
    found: list[pr.Predicates] = []
    n_combos = S.shape[0] * math.comb(S.shape[1], n_cols)
    limit = math.ceil(n_combos * (math.log(n_combos) + 5.0))
    if max_attempts is not None:
        limit = min(limit, max_attempts)
    n_found = tried = 0
    while n_found < n and tried < limit:
        b = min(_BATCH, limit - tried)
        cand = pr.multivariate_candidates(S, is_cat, medians, b, n_cols, rng)
        tried += b
        found.append(_distinct(cand, np.flatnonzero(_singles_out(S, cand)), seen, n - n_found))
        n_found += len(found[-1])
    if not found:
        empty = np.empty((0, n_cols))
        return pr.Predicates(empty.astype(np.int64), empty.astype(np.int8), empty), tried
    return pr.Predicates(*(np.concatenate([getattr(f, a) for f in found])
                           for a in ("col", "op", "val"))), tried


def predicate_bytes(n_attacks: int, n_cols: int, modes: Sequence[str], m: int, p: int,
                    rows: int) -> float:
    """Bytes the attacks' predicates hold (also the audit's memory plan).

    Per mode and dataset: ``n_attacks`` random predicates of the baseline (a random matrix of
    ``p`` columns and its argsort, five arrays of ``k`` terms: ``16 p + 48 k`` bytes each), and
    the predicates written, at most one per synthetic row and set of columns, each with its
    key, its text and its row of the queries table (about ``300 + 64 k`` bytes).
    """
    need = 0.0
    for md in modes:
        k = n_cols if md == "multivariate" else 1
        written = min(n_attacks, rows * (math.comb(p, k) if md == "multivariate" else 2 * p))
        need += m * (n_attacks * (16.0 * p + 48.0 * k) + written * (300.0 + 64.0 * k))
    return need


def _check_size(n_attacks: int, n_cols: int, modes: Sequence[str], m: int, p: int,
                rows: int) -> None:
    """Refuse, before any predicate is written, attacks whose predicates cannot fit in memory
    (:func:`predicate_bytes`)."""
    from bayes_risk._memory import check_memory

    need = predicate_bytes(n_attacks, n_cols, modes, m, p, rows)
    check_memory(need, arg_name("n_attacks"),
                 what=f"{n_attacks:,} predicates per mode for each of {m} synthetic dataset(s)")


def _integral(n: Any, w: Any) -> Any:
    """∫₀^w P(w', n) dw' of the singling-out probability ``P(w, n) = n w (1 − w)^(n−1)`` of a
    predicate of weight ``w`` in ``n`` records (Cohen & Nissim 2020; anonymeter's
    ``singling_out_probability_integral`` from 0)."""
    return (1.0 - (n * w + 1.0) * (1.0 - w) ** n) / (n + 1.0)


def size_correction(C: np.ndarray, preds: pr.Predicates, n_target: int,
                    rng: np.random.Generator) -> tuple[float, dict[str, Any]]:
    """anonymeter's correction of the control count for a holdout of another size than the
    original (fitted on subsamples of the holdout, from ``min(1000, n_C // 2)`` records where
    anonymeter starts at ``min(1000, n_C)``: :doc:`/methods/attacks`). Returns the factor
    (``nan`` when the fit fails) and the fit's ``sizes``, ``successes``, ``w_eff``, ``norm``."""
    from scipy.optimize import curve_fit

    n_c = C.shape[0]
    lo = min(1000, max(n_c // 2, 1))
    sizes = np.linspace(lo, n_c, _SIZES).astype(int)
    xs, ys = [], []
    for size in sizes:
        for _ in range(_REPEATS):
            sub = C[np.sort(rng.choice(n_c, size=int(size), replace=False))]
            xs.append(int(size))
            ys.append(int(_singles_out(sub, preds).sum()))
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    info: dict[str, Any] = {"sizes": sizes.tolist(),
                            "successes": [float(y[x == s].mean()) for s in sizes]}

    def model(n: Any, w: float, a: float) -> Any:
        return a * _integral(n, w)

    w0 = 1.0 / x.max()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy's OptimizeWarning: judged by the result
            (w, a), _ = curve_fit(model, x, y, p0=(w0, 1.0 / _integral(x.max(), w0)),
                                  bounds=(0, (1, np.inf)))
        factor = float(model(float(n_target), w, a) / model(float(n_c), w, a))
    except (RuntimeError, ValueError, ZeroDivisionError, FloatingPointError):
        w = a = factor = math.nan
    info.update(w_eff=float(w), norm=float(a))
    return (factor if math.isfinite(factor) and factor > 0 else math.nan), info


def _check_modes(mode: Any) -> list[str]:
    modes = check_value([mode] if isinstance(mode, str) else mode,
                        SequenceOf(Options(MODES, listed=True), "modes (one or both)"), "mode")
    return [m for m in MODES if m in modes]


def singling_out_risk(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    holdout: pd.DataFrame | None = None,
    mode: Annotated[str | Sequence[str], cli_option(
        "--singling-out", "modes to run: univariate (one column per predicate), multivariate "
        "(--n-cols columns), or none (default: both)", nargs="+", metavar="MODE",
        choices=("univariate", "multivariate", "none"), parse=parse_modes,
        group="singling out")] = MODES,
    # the checks of every attack's n_attacks and confidence_level (bayes-risk attacks: its
    # options, attacks_run's)
    n_attacks: Annotated[int, checked(Interval(int, 1))] = 500,
    predicates: PredicateSpec | None = None,
    schema: Schema | None = None,
    categorical: Iterable[str] | None = None,
    confidence_level: Annotated[float, checked(Interval(float, 0, 1, closed="neither"))] = 0.95,
    random_seed: RandomSeed = None,
    groups: str | None = None,
) -> SinglingOutResult:
    """Singling-out risk of a synthetic release, as anonymeter measures it.

    Method and references: :doc:`/methods/attacks`; usage: :doc:`/user_guide/attacks`.

    Parameters
    ----------
    original : DataFrame
        The confidential records the release was made from.
    synthetic : DataFrame, list of DataFrame or SyntheticData
        The ``m`` synthetic datasets (each attacked on its own; any number of rows).
    holdout : DataFrame, optional
        Records of the same population the synthesis did not use (anonymeter's control set).
    mode : {"univariate", "multivariate"} or both (default)
        The attacks to run.
    n_attacks : int
        Predicates per dataset and mode (anonymeter's 500).
    predicates : PredicateSpec, optional
        See :class:`~bayes_risk.attacks.PredicateSpec` (default: anonymeter's).
    schema : Schema, optional
    categorical : iterable of str, optional
        Integer-coded factors (compared with ``==`` / ``!=`` only).
    confidence_level : float
        Level of the Wilson intervals and of the risk's interval.
    random_seed : int, Generator or None
    groups : str, optional
        A categorical column among the predicates' ``columns``: the risk of each group of
        predicates too, a predicate belonging to the group of the synthetic row it singles out
        (the row it was written on), in ``by_group``; the queries then name the group of each
        predicate and of the records it singles out.

    Returns
    -------
    SinglingOutResult
        ``table`` (one row per dataset and mode), ``queries``, ``by_group`` (with ``groups``),
        ``settings``, ``warnings``.

    Raises
    ------
    ValidationError
        Invalid options, an empty table, a missing column, a holdout of copies of the
        original, or ``groups`` not a categorical column among the predicates' columns.
    SchemaError
        Values that do not fit the column types.

    Examples
    --------
    >>> res = singling_out_risk(train, syn, holdout=control, random_seed=1)  # doctest: +SKIP
    >>> res.table[["dataset", "mode", "risk", "ci_low", "ci_high"]]  # doctest: +SKIP
    """
    modes = _check_modes(mode)
    given = check_params(dict(n_attacks=n_attacks, confidence_level=confidence_level),
                         argument_checks(singling_out_risk))
    n_attacks, level = given["n_attacks"], given["confidence_level"]
    predicates = as_spec(predicates, PredicateSpec, "predicates")
    n_cols, max_attempts = predicates.n_cols, predicates.max_attempts
    rng = as_generator(random_seed)
    inp = attack_inputs(original, synthetic, holdout, columns=predicates.columns, schema=schema,
                        categorical=categorical)
    sch = inp.schema
    p = len(sch)
    labels = None if groups is None else group_labels(sch, _group_column(groups, sch, original))
    if "multivariate" in modes and n_cols > p:
        raise ValidationError(
            f"n_cols={n_cols} exceeds the {p} column(s) the predicates may use "
            f"({', '.join(sch.names)}); give n_cols <= {p} or more columns.")
    _check_size(n_attacks, n_cols, modes, len(inp.datasets), p,
                max(len(z) for z in inp.datasets))
    is_cat = np.array([s.is_categorical for s in sch])
    O = _dedup(code_table(inp.original, sch))
    C = None if inp.holdout is None else _dedup(code_table(inp.holdout, sch))
    names = list(sch.names)
    levels = [tuple(s.levels) if s.is_categorical else None for s in sch]

    rows: list[dict[str, Any]] = []
    grouped: list[dict[str, Any]] = []
    qframes: list[pd.DataFrame] = []
    flagged: dict[str, list[str]] = {}
    corrections: dict[str, Any] = {}
    for l, (z, ds_rng) in enumerate(zip(inp.datasets, rng.spawn(len(inp.datasets)),
                                        strict=True), start=1):
        S = _dedup(code_table(z, sch))
        mode_rngs = dict(zip(MODES, ds_rng.spawn(len(MODES)), strict=True))
        for md in modes:
            row, preds, main, ctrl, flags, correction = _attack(
                S, O, C, is_cat, md, f"dataset {l} {md}", n_attacks=n_attacks, n_cols=n_cols,
                max_attempts=max_attempts, level=level, rng=mode_rngs[md])
            for code, text in flags:
                flagged.setdefault(code, []).append(text)
            if correction is not None:
                corrections[f"{l}/{md}"] = correction
            rows.append({"dataset": l, "mode": md, **row})
            qframes.append(pd.DataFrame({
                "dataset": l, "mode": md, "query": pr.describe(preds, names, levels),
                "columns": [",".join(names[int(c)] for c in cols) for cols in preds.col],
                "singles_out_original": main >= 0,
                "singles_out_holdout": (ctrl >= 0 if ctrl is not None
                                        else np.full(len(preds), pd.NA, dtype=object))}))
            if labels is not None:
                j = names.index(groups)
                who = _groups_of(S, O, C, preds, main, ctrl, j, labels)
                qframes[-1] = qframes[-1].assign(**who)
                factor = row["control_correction"]
                grouped += _group_table(
                    {"dataset": l, "mode": md}, who, main >= 0,
                    None if ctrl is None else (ctrl >= 0) * (factor if math.isfinite(factor)
                                                              else 1.0),
                    success_rate(row["n_baseline"], n_attacks, level), labels, level)
    queries = pd.concat(qframes, ignore_index=True) if qframes else pd.DataFrame()
    settings = {
        "modes": modes, "n_attacks": n_attacks, "n_cols": n_cols, "columns": names,
        "max_attempts": max_attempts, "n_original_distinct": int(O.shape[0]),
        "n_holdout_distinct": None if C is None else int(C.shape[0]),
        "control_correction": corrections}
    return SinglingOutResult(
        table=pd.DataFrame(rows), queries=queries,
        **result_fields(inp, flagged, _WHY, settings, level=level, random_seed=random_seed,
                        groups=groups, grouped=grouped))


def _group_column(groups: Any, sch: Schema, original: pd.DataFrame) -> str:
    """``groups``, a column the predicates may use, or a ``ValidationError`` naming it."""
    if groups in sch.names:
        return groups
    if isinstance(groups, str) and groups in original.columns:
        raise ValidationError(
            f"groups: {groups!r} is not among the columns the predicates may use "
            f"({', '.join(sch.names)}): the group of a record the predicates single out is "
            "known only on those; add it to columns.")
    return group_column(groups, sch.names)


def _groups_of(S: np.ndarray, O: np.ndarray, C: np.ndarray | None, preds: pr.Predicates,
               main: np.ndarray, ctrl: np.ndarray | None, j: int, labels: list[str]
               ) -> dict[str, Any]:
    """Per predicate, the group (column ``j``) of the synthetic row it singles out
    (``group``, its group) and of the record it singles out in the original and the holdout
    (missing when it singles out none); ``main``, ``ctrl``: those records' rows (``-1``:
    none)."""
    def label(X: np.ndarray, r: np.ndarray) -> np.ndarray:
        out, ok = np.full(len(r), None, dtype=object), r >= 0
        v = X[r[ok], j]
        out[ok] = np.asarray(labels, dtype=object)[
            np.where(np.isnan(v), len(labels) - 1, v).astype(np.int64)]
        return out

    out = {"group": label(S, pr.only_match(S, preds)), "group_original": label(O, main)}
    if C is not None:
        out["group_holdout"] = label(C, ctrl)
    return out


def _group_table(keys: dict[str, Any], who: dict[str, Any], main: np.ndarray,
                 control: np.ndarray | None, baseline: Any, labels: list[str], level: float
                 ) -> list[dict[str, Any]]:
    """The rows of ``by_group`` of one dataset and mode: :func:`group_rows` over the
    predicates' groups, with the successes of each group's predicates that single out a
    record of another group (``n_main_other_group``)."""
    index = {g: i for i, g in enumerate(labels)}
    code = np.array([index[g] for g in who["group"]], dtype=np.float64)
    out = group_rows(keys, (code, main), None if control is None else (code, control),
                     baseline, labels, level)
    other = pd.Series(main & (who["group_original"] != who["group"])).groupby(
        who["group"]).sum()
    lead = [*keys, "group"]
    return [{**{k: r[k] for k in lead}, "n_queries": r["n_attacks"], "n_main": r["n_main"],
             "n_main_other_group": int(other.get(r["group"], 0)),
             **{k: v for k, v in r.items()
                if k not in (*lead, "n_attacks", "n_attacks_control", "n_main")}}
            for r in out]


def _attack(S: np.ndarray, O: np.ndarray, C: np.ndarray | None, is_cat: np.ndarray, md: str,
            where: str, *, n_attacks: int, n_cols: int, max_attempts: int | None,
            level: float, rng: np.random.Generator) -> tuple[Any, ...]:
    """One mode's attack on one dataset's distinct rows ``S``: its row of the table (the
    dataset and mode aside), its predicates and the row of ``O`` (``main``) and of ``C``
    (``ctrl``) each singles out (``-1``: none), the conditions met as (code, text naming
    ``where``) and the control size correction (``None``: not made)."""
    flags: list[tuple[str, str]] = []
    correction = None
    q_rng, b_rng, c_rng = rng.spawn(3)
    k = n_cols if md == "multivariate" else 1
    tried = None
    if md == "univariate":
        preds = _univariate_queries(S, is_cat, n_attacks, q_rng)
    else:
        preds, tried = _multivariate_queries(S, is_cat, n_attacks, n_cols, max_attempts, q_rng)
    q = len(preds)
    main = pr.only_match(O, preds)
    ctrl = None if C is None else pr.only_match(C, preds)
    base = _singles_out(O, pr.random_predicates(S, is_cat, n_attacks, k, b_rng))
    n_main, n_base = int((main >= 0).sum()), int(base.sum())
    n_ctrl_raw = None if ctrl is None else int((ctrl >= 0).sum())
    n_ctrl, factor = n_ctrl_raw, None
    if C is not None and C.shape[0] != O.shape[0] and n_ctrl_raw:
        factor, info = size_correction(C, preds, O.shape[0], c_rng)
        correction = {**info, "factor": factor}
        if math.isfinite(factor):
            n_ctrl = min(n_ctrl_raw * factor, q)
            ratio = O.shape[0] / C.shape[0]
            if ratio > 2 or ratio < 0.5:
                flags.append(("CONTROL_SIZE_CORRECTION",
                              f"{where}: factor {factor:.3g} from a holdout of {C.shape[0]:,} "
                              f"distinct records to an original of {O.shape[0]:,}"))
        else:
            flags.append(("CONTROL_SIZE_CORRECTION",
                          f"{where}: the fit failed, the control count is not corrected"))
    r_main = success_rate(n_main, q, level)
    r_base = success_rate(n_base, n_attacks, level)
    r_ctrl = None if n_ctrl is None else success_rate(n_ctrl, q, level)
    if q < n_attacks:
        flags.append(("FEW_SINGLING_OUT_QUERIES", f"{where}: {q} of {n_attacks}"
                      + (f" after {tried:,} candidates" if tried is not None else "")))
    if q and r_base.rate >= r_main.rate:
        flags.append(("ATTACK_NOT_BETTER_THAN_BASELINE",
                      f"{where}: main {r_main.rate:.3g}, baseline {r_base.rate:.3g}"))
    if r_ctrl is not None and q and n_ctrl >= q:
        flags.append(("CONTROL_ALWAYS_SUCCEEDS", where))
    row = {"n_cols": k, "n_attacks": n_attacks, "n_queries": q, "n_main": n_main,
           "n_control": np.nan if n_ctrl is None else float(n_ctrl),
           "n_control_raw": np.nan if n_ctrl_raw is None else n_ctrl_raw,
           "control_correction": np.nan if factor is None else factor,
           "n_baseline": n_base, **rate_columns(r_main, r_ctrl, r_base)}
    return row, preds, main, ctrl, flags, correction


#: what each condition means (the warning names the datasets and modes it concerns)
_WHY = {
    "FEW_SINGLING_OUT_QUERIES": "fewer predicates that single out a synthetic row than "
    "n_attacks could be written; the rates are over those written (anonymeter divides by "
    "n_attacks, which would understate them), and their intervals are wider",
    "ATTACK_NOT_BETTER_THAN_BASELINE": "the main attack succeeds no more often than random "
    "predicates: the attack may be too weak for these data, and a low risk then says little "
    "(anonymeter: 'Analysis results cannot be trusted')",
    "CONTROL_SIZE_CORRECTION": "the holdout's size differs from the original's by more than a "
    "factor 2, or the fit failed: the control count is extrapolated by anonymeter's model "
    "of how singling out depends on the number of records, and the risk read from it is as "
    "good as that extrapolation; give a holdout about the size of the original",
    "CONTROL_ALWAYS_SUCCEEDS": "every predicate singles out a record of the holdout: the risk "
    "beyond the control attack is undefined (nan)"}

