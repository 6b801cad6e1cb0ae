"""Population counts of the targets' keys for unknown membership (Drechsler & Reiter 2008 eqs. 5–7):
given, log-linear estimates or survey weights; see :doc:`/methods/identification`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, check_value
from bayes_risk.data.schema import _level_to_json
from bayes_risk.data.validate import require_columns
from bayes_risk.exceptions import ConvergenceWarning, SchemaError, ValidationError
from bayes_risk.identification import engine as _engine
from bayes_risk.identification.encoding import stack_columns
from bayes_risk.identification.loglinear import (
    expected_inverse,
    fit_all_two_way,
    population_estimate,
)
from bayes_risk.identification.matching import MatchRule
from bayes_risk.identification.plan import PopulationCounts, record_warning
from bayes_risk.identification.problem import Prepared
from bayes_risk.identification.specs import LOGLINEAR_SYNTHETIC, PopulationSpec

__all__ = ["population_counts", "per_replicate_counts"]

_MAX_CELLS = 50_000_000


def per_replicate_counts(source: str | None) -> bool:
    """Whether counts of this ``source`` are refitted on every replicate (intruder's view)."""
    return source in LOGLINEAR_SYNTHETIC


def population_counts(
    population: PopulationSpec,
    *,
    prep: Prepared,
    rule: MatchRule,
    targets: pd.DataFrame,
    known: list[str],
    codes_orig: Mapping[str, np.ndarray],
    warn: dict[str, str],
    original: pd.DataFrame | None = None,
) -> PopulationCounts:
    """``F`` and ``1/F`` per target and replicate (:class:`PopulationCounts`); ``codes_orig``:
    the original's codes of the exact-match columns."""
    given, membership, kind = population.counts, population.membership, population.estimate
    weights = population.weights
    sampling_fraction, population_size = population.sampling_fraction, population.population_size
    n, N_T, R = prep.n, prep.n_targets, prep.R
    # the spec has checked membership, which of counts and weights are given, and the estimate
    if membership == "known":
        return PopulationCounts()
    if given is None and weights is None:
        raise ValidationError(
            "membership='unknown' needs population counts: PopulationSpec(counts=...) with a "
            "mapping/DataFrame of true counts, per-target counts, 'loglinear_original' or "
            "'loglinear_synthetic', or PopulationSpec(weights=...) with survey weights."
        )
    if isinstance(given, str):  # one of the log-linear names (the spec checked it)
        a = _sampling_fraction(sampling_fraction, population_size, n)
        orig_exact = stack_columns([codes_orig[c] for c in rule.exact_cols], n)
        F, inv_f = _loglinear_counts(prep, rule, orig_exact, given in LOGLINEAR_SYNTHETIC, a,
                                     kind, warn)
        return PopulationCounts(F=F, inv_f=inv_f, source=given, estimate=kind)
    if weights is not None:
        Ft, source = _weighted_counts(weights, original, prep, rule, codes_orig, warn), "weights"
    else:
        Ft, source = _user_counts(given, targets, known), "user"
    F = np.broadcast_to(Ft[:, None], (N_T, R)).copy()
    return PopulationCounts(F=F, inv_f=1.0 / F, source=source, estimate=kind)


def _norm(a: np.ndarray) -> np.ndarray:
    """Values comparable across CSV/Parquet round-trips (2.0 and 2 are one key value)."""
    a = np.asarray(a)
    if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
        return a.astype(np.int64)
    if a.dtype.kind in "iub":
        return a.astype(np.int64)
    if a.dtype == object:
        return np.array([_level_to_json(v) for v in a], dtype=object)
    return a


def _key_kind(values: pd.Series) -> str:
    """``"numbers"``, ``"text"`` or pandas' inferred kind: numbers and text never match as key
    values (pandas refuses to merge them); other combinations are left to the merge."""
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind in ("integer", "floating", "mixed-integer-float", "decimal", "boolean"):
        return "numbers"
    if kind == "string":
        return "text"
    return kind


def _sampling_fraction(sampling_fraction, population_size, n) -> float:
    """``a`` (the spec has checked its range and that one of the two is given at most)."""
    if sampling_fraction is None and population_size is None:
        raise ValidationError(
            "log-linear population counts need the sampling fraction a = n / population_size: pass "
            "sampling_fraction= or population_size=."
        )
    if population_size is None:
        return float(sampling_fraction)
    # at least the sample size n
    check_value(population_size, Interval(int, n), "population_size")
    return n / float(population_size)


def _exact_only(rule: MatchRule, what: str) -> None:
    """Population counts of ``what`` are counts of exact keys: no radius column."""
    if rule.radius_cols:
        raise ValidationError(
            f"{what} need every known column to be matched exactly (categorical, or numeric "
            f"without radius); {list(rule.radius_cols)} have a radius.")


def _loglinear_counts(prep, rule, orig_exact, on_synthetic, a, kind, warn):
    _exact_only(rule, "log-linear population counts")
    if on_synthetic and prep.released is not None:
        raise ValidationError(
            "log-linear population counts fitted to the synthetic datasets take each dataset "
            f"as a sample of the original's {prep.n:,} records; rows were removed from this "
            "release after synthesis, so its datasets are not. Fit them to the original "
            "('loglinear_original') or give the counts.", code="ROW_COUNT_MISMATCH")
    cols = list(rule.exact_cols)
    sizes = [prep.exact_sizes[c] for c in cols]
    ncell = float(np.prod(sizes, dtype=np.float64))
    if ncell > _MAX_CELLS:
        raise ValidationError(
            f"the cross-classification of {cols} has {ncell:.3g} cells (> {_MAX_CELLS}); "
            "the log-linear model is not feasible.",
            code="PROBLEM_TOO_LARGE"
        )
    tkey = _engine.mixed_radix(prep.tgt_exact, sizes)
    N_T, R = prep.n_targets, prep.R
    F = np.empty((N_T, R))
    inv = np.empty((N_T, R))
    shape = tuple(reversed(sizes))  # mixed radix: the first column varies fastest
    below = 0
    for r in range(R) if on_synthetic else [None]:
        codes = orig_exact if r is None else \
            np.concatenate([prep.rec_exact_us, prep.rep_exact_s[r]], axis=1)
        key = _engine.mixed_radix(codes, sizes)
        f = np.bincount(key[key >= 0], minlength=int(ncell)).astype(np.float64)
        fit = fit_all_two_way(f.reshape(shape), warn=False)
        if not fit.converged:
            record_warning(warn, "IPF_NOT_CONVERGED",
                  f"IPF stopped after {fit.n_cycles} cycles (max change {fit.max_change:.3g}).",
                  ConvergenceWarning)
        mu = fit.mu.ravel()
        ok = tkey >= 0
        kk = np.where(ok, tkey, 0)
        ft = np.where(ok, f[kk], 0.0)
        mut = np.where(ok, mu[kk], 0.0)
        if kind == "expected_inverse":
            nu = (1.0 - a) * mut / a
            Fh = population_estimate(ft, mut, a, "default")
            iv = expected_inverse(ft, nu)
        else:
            Fh = population_estimate(ft, mut, a, kind)
            iv = None
        below += int((Fh < 1).sum())
        Fc = np.maximum(Fh, 1.0)
        ivv = (1.0 / Fc) if iv is None else np.minimum(iv, 1.0)
        if r is None:  # fixed over replicates
            F[:], inv[:] = Fc[:, None], ivv[:, None]
        else:
            F[:, r], inv[:, r] = Fc, ivv
    if below:
        record_warning(warn, "F_BELOW_ONE",
              f"{below} estimated population count(s) F̂ < 1 were raised to 1 "
              "(Drechsler & Reiter 2008 eqs. 6–7).")
    return F, inv


def _weight_vector(weights: Any, original: pd.DataFrame) -> np.ndarray:
    """The survey weights, one per original record, positive and finite (a column's, or the
    vector given: checked here for both)."""
    n = len(original)
    if isinstance(weights, str):
        if weights not in original.columns:
            raise SchemaError(
                f"weights column {weights!r} is not in the original data (columns: "
                f"{list(original.columns)}).", code="MISSING_COLUMN",
            )
        given, what = original[weights], f"weights column {weights!r}"
        w = pd.to_numeric(given, errors="coerce").to_numpy(dtype=np.float64)
    else:
        given, what = pd.Series(np.ravel(weights)), "weights"
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (n,):
            raise ValidationError(
                f"weights must be one weight per original record ({n}); got {w.shape[0]}."
            )
    bad = np.flatnonzero(~np.isfinite(w) | (w <= 0))
    if bad.size:
        v = given.iloc[int(bad[0])]
        raise ValidationError(
            f"{what} must hold positive, finite numbers; record {int(bad[0])} has "
            f"{v.item() if isinstance(v, np.generic) else v!r} ({bad.size} such value(s))."
        )
    return w


def _weighted_counts(weights: Any, original: pd.DataFrame, prep: Prepared, rule: MatchRule,
                     codes_orig: Mapping[str, np.ndarray], warn: dict[str, str]) -> np.ndarray:
    """Horvitz–Thompson population counts ``F̂_t = Σ_{i: key_i = t} w_i`` (Reiter & Mitra
    2009), never below the sample count ``f_t`` (the population holds the sample) and raised to
    1 with warning ``F_BELOW_ONE`` (a target outside the sample whose key no record has)."""
    w = _weight_vector(weights, original)
    _exact_only(rule, "population counts from survey weights")
    cols = list(rule.exact_cols)
    orig = pd.DataFrame({i: np.asarray(codes_orig[c]) for i, c in enumerate(cols)})
    orig["__w__"], orig["__f__"] = w, 1.0
    by_key = orig.groupby(list(range(len(cols))), sort=False)[["__w__", "__f__"]].sum()
    tgt = pd.DataFrame({i: np.asarray(prep.tgt_exact[:, i]) for i in range(len(cols))})
    at = tgt.merge(by_key, left_on=list(range(len(cols))), right_index=True, how="left")
    W = at["__w__"].fillna(0.0).to_numpy(dtype=np.float64)
    f = at["__f__"].fillna(0.0).to_numpy(dtype=np.float64)
    Fh = np.maximum(W, f)
    below = int((Fh < 1).sum())
    if below:
        record_warning(warn, "F_BELOW_ONE",
                       f"{below} estimated population count(s) F̂ < 1 (targets whose key no "
                       "sample record has) were raised to 1.")
    return np.maximum(Fh, 1.0)


def _user_counts(pc, tdf, known) -> np.ndarray:
    N_T = len(tdf)
    if isinstance(pc, Mapping):
        rows = []
        for k, v in pc.items():
            kt = k if isinstance(k, tuple) else (k,)
            if len(kt) != len(known):
                raise ValidationError(
                    f"population_counts key {k!r} has {len(kt)} value(s); expected one per known "
                    f"column, in the order {known}."
                )
            rows.append((*kt, v))
        pc = pd.DataFrame(rows, columns=[*known, "F"])
    if isinstance(pc, pd.DataFrame):
        require_columns(pc, known, "population_counts table")
        other = [c for c in pc.columns if c not in known]
        fcol = "F" if "F" in pc.columns else (other[0] if len(other) == 1 else None)
        if fcol is None:
            raise SchemaError(
                "population_counts table needs the known columns and one count column "
                f"(named 'F'); got columns {list(pc.columns)}.", code="MISSING_COLUMN"
            )
        left = pd.DataFrame({c: _norm(np.asarray(tdf[c])) for c in known})
        right = pd.DataFrame({c: _norm(np.asarray(pc[c])) for c in known})
        if right.duplicated().any():
            raise ValidationError("population_counts has duplicated keys.", code="INVALID_ARGUMENT")
        for c in known:
            kr, kl = _key_kind(right[c]), _key_kind(left[c])
            if {kr, kl} == {"numbers", "text"}:
                ex_r, ex_l = _level_to_json(right[c].iloc[0]), _level_to_json(left[c].iloc[0])
                raise ValidationError(
                    f"population_counts: the key values of column {c!r} are {kr} (e.g. "
                    f"{ex_r!r}) but the targets' are {kl} (e.g. {ex_l!r}); give the keys as the "
                    "values of the data (e.g. 2, not '2').",
                    code="LEVEL_TYPES_DIFFER"
                )
        right["__F__"] = np.asarray(pc[fcol], dtype=np.float64)
        merged = left.merge(right, on=known, how="left", sort=False)
        Ft = merged["__F__"].to_numpy(dtype=np.float64)
        if np.isnan(Ft).any():
            i = int(np.flatnonzero(np.isnan(Ft))[0])
            raise ValidationError(
                f"population_counts has no count for target {i} with key "
                f"{tuple(left.iloc[i].tolist())} (columns {known}).",
                code="POPULATION_KEY_MISSING"
            )
    else:
        Ft = np.asarray(pc, dtype=np.float64).ravel()
        if Ft.shape != (N_T,):
            raise ValidationError(
                f"population_counts as an array must have one count per target ({N_T}); "
                f"got shape {np.shape(pc)}.",
                code="INVALID_ARGUMENT"
            )
    if not np.all(np.isfinite(Ft)):
        raise ValidationError("population_counts must be finite.", code="INVALID_ARGUMENT")
    if (Ft < 1).any():
        i = int(np.flatnonzero(Ft < 1)[0])
        raise ValidationError(
            f"population_counts: count {Ft[i]!r} for target {i} is < 1; a true population count "
            "of a target's key is at least 1 (the target itself). Estimated counts below 1 are "
            "raised to 1 with warning F_BELOW_ONE; user-given counts must be >= 1.",
            code="INVALID_ARGUMENT"
        )
    return Ft
