"""Re-identification risk of the original on its keys, as sdcMicro computes it.

See :doc:`/methods/original_risk` and :doc:`/user_guide/original_risk`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from itertools import combinations
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, Options, Within, check_params, check_value, checked
from bayes_risk._specs import argument_checks, cli_option
from bayes_risk.data.normalise import check_not_empty
from bayes_risk.data.schema import did_you_mean
from bayes_risk.data.validate import require_frame
from bayes_risk.disclosure._encode import column_names
from bayes_risk.disclosure.specs import SDCMICRO_CONVENTIONS
from bayes_risk.exceptions import (
    CALLER,
    DataWarning,
    SchemaError,
    ValidationError,
    arg_name,
)
from bayes_risk.results.original_risk import OriginalRisk

__all__ = ["original_risk", "OriginalRisk"]

#: sdcMicro's treatments of missing values, as recorded in the results' settings
MISSING_POLICY = {
    None: "a missing key value is a value of its own: it forms key cells of its own, can be "
          "part of a minimal sample unique, and a missing sensitive value is one sensitive "
          "value (the conservative reading: a missing value never widens a key cell)",
    "sdcmicro": "sdcMicro 5.8.1: a missing key value matches every value in f_k and F_k "
                "(freqCalc, alpha = 1), is never part of a minimal sample unique (suda2), is a "
                "value of its own in l-diversity's key cells, and each missing sensitive value "
                "counts as a distinct value (ldiversity)"}

#: :func:`original_risk`'s column arguments against each other
_RELATIONS = (Within("sensitive", "keys", apart=True, why="a column is either a key or sensitive"),
              Within("weights", "keys", apart=True),
              Within("weights", "sensitive", apart=True))

#: the largest number of key subsets SUDA2 examines (2**16: 16 keys, or max_size fewer)
MAX_SUBSETS = 1 << 16

#: sdcMicro's print of a suda2 result: the intervals of the DIS score
DIS_INTERVALS = ("== 0", "(0.0, 0.1]", "(0.1, 0.2]", "(0.2, 0.3]", "(0.3, 0.4]", "(0.4, 0.5]",
                 "(0.5, 0.6]", "(0.6, 0.7]", "> 0.7")


def _check(original: Any, keys: list[str], sensitive: list[str], method: Any, max_size: Any,
           dis_fraction: Any, recursive_c: Any, k_anonymity: Any, compat: Any,
           weights: Any) -> None:
    check_not_empty(require_frame(original, "original"), "original",
                    "the risks are those of its records")
    for argument, cols in (("keys", keys), ("sensitive", sensitive),
                           ("weights", [weights] if isinstance(weights, str) else [])):
        absent = [c for c in cols if c not in original.columns]
        if absent:
            raise SchemaError(
                f"{argument}: column(s) {absent} are not in the original data (columns: "
                f"{list(original.columns)})." + did_you_mean(absent[0], original.columns),
                code="MISSING_COLUMN")
    check_params(dict(method=method, compat=compat, max_size=max_size,
                      dis_fraction=dis_fraction, recursive_c=recursive_c, keys=keys,
                      sensitive=sensitive, weights=weights),
                 argument_checks(original_risk), relations=_RELATIONS)
    for k in k_anonymity:
        check_value(k, Interval(int, 2), "k_anonymity values")


def _codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of a column's values (a value per distinct value) and its missing mask."""
    codes, _ = pd.factorize(col, use_na_sentinel=True)
    codes = np.asarray(codes, dtype=np.int64)
    miss = codes < 0
    return np.where(miss, codes.max(initial=-1) + 1, codes), miss


def _combine(codes: np.ndarray) -> np.ndarray:
    """One code per distinct row of an ``(n, p)`` integer code matrix (``p >= 0``)."""
    n = codes.shape[0]
    out = np.zeros(n, dtype=np.int64)
    for j in range(codes.shape[1]):
        width = int(codes[:, j].max(initial=0)) + 1
        out = pd.factorize(out * width + codes[:, j])[0].astype(np.int64)
    return out


def _frequencies(codes: np.ndarray, miss: np.ndarray, w: np.ndarray, wildcard: bool
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Sample frequency ``f_k`` and weighted frequency ``F_k`` of every record's key cell;
    ``wildcard``: sdcMicro's ``freqCalc`` (:doc:`/methods/compatibility`, sdcMicro)."""
    n, p = codes.shape
    if not wildcard or not miss.any():
        cell = _combine(codes)
        f = np.bincount(cell).astype(np.float64)
        F = np.bincount(cell, weights=w)
        return f[cell], F[cell]
    pattern = np.where(miss, -1, codes)
    uniq, cell = np.unique(pattern, axis=0, return_inverse=True)
    cell = cell.ravel()
    f0 = np.bincount(cell).astype(np.float64)
    F0 = np.bincount(cell, weights=w)
    na = uniq < 0
    any_na, all_na = na.any(axis=1), na.all(axis=1)
    f, F = f0.copy(), F0.copy()
    if p == 1:
        f[~any_na] += f0[any_na].sum()
        F[~any_na] += F0[any_na].sum()
    else:
        complete = np.flatnonzero(~any_na)
        partial = np.flatnonzero(any_na)
        for h in partial:
            obs = ~na[h]
            if not obs.any():
                continue  # every key missing: set below
            same = np.all(uniq[:, obs] == uniq[h, obs], axis=1)
            # the records with missing keys that agree where h is observed (or miss it there)
            fits = np.all((uniq[:, obs] == uniq[h, obs]) | na[:, obs], axis=1)
            others = partial[fits[partial] & (partial != h)]
            agree = complete[same[complete]]
            f[h] += f0[others].sum() + f0[agree].sum()
            F[h] += F0[others].sum() + F0[agree].sum()
            f[agree] += f0[h]
            F[agree] += F0[h]
    f[all_na] = n
    F[all_na] = w.sum()
    return f[cell], F[cell]


def _risk_approx(f: np.ndarray, z: np.ndarray) -> np.ndarray:
    """sdcMicro's risk (``indivRisk(method = "approx")``) in ``z = F_k/f_k − 1`` (with
    ``log1p`` and a series for small ``z``: :doc:`/methods/original_risk`, Individual risk)."""
    r = np.empty_like(z)
    one, two, more = f == 1, f == 2, f >= 3
    small = z < 1e-3
    with np.errstate(divide="ignore", invalid="ignore"):
        r1 = np.where(small, 1 - z / 2 + z * z / 3 - z ** 3 / 4, np.log1p(z) / z)
        # (z − log(1+z))/z² = Σ_j (−z)^j / (j + 2)
        series = sum((-z) ** j / (j + 2) for j in range(8))
        r2 = np.where(small, series, (z - np.log1p(z)) / (z * z))
    r[one], r[two] = r1[one], r2[two]
    r[more] = 1.0 / (f[more] + (f[more] - 1) * z[more])
    return r


def _risk_exact(f: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``E(1/F | f) = ∫_0^1 s^(f−1) / (1 + z s) ds`` by quadrature, once per distinct (f, z)
    (:doc:`/methods/original_risk`, Individual risk)."""
    from scipy.integrate import quad

    pairs, inv = np.unique(np.column_stack([f, z]), axis=0, return_inverse=True)
    vals = np.empty(len(pairs))
    for i, (fi, zi) in enumerate(pairs):
        if zi == 0:
            vals[i] = 1.0 / fi
            continue
        v, _ = quad(lambda x, fi=fi, zi=zi: math.exp(-x) / (1.0 + zi * math.exp(-x / fi)),
                    0.0, math.inf, epsabs=0.0, epsrel=1e-12, limit=200)
        vals[i] = v / fi
    return vals[inv.ravel()]


def _individual_risk(f: np.ndarray, F: np.ndarray, weighted: bool, method: str
                     ) -> tuple[np.ndarray, int]:
    """The risk of every record and the number of records whose ``F_k < f_k`` (weights below
    one), whose risk is the model's largest, ``1/f_k``."""
    if not weighted:
        return 1.0 / f, 0
    below = F < f
    z = np.maximum(F - f, 0.0) / f  # F − f first: no cancellation when the weights are near 1
    r = _risk_approx(f, z) if method == "approx" else _risk_exact(f, z)
    return r, int(below.sum())


def _suda(codes: np.ndarray, miss: np.ndarray, compat: bool, max_size: int | None,
          dis_fraction: float) -> dict[str, Any]:
    """Minimal sample uniques of every record, SUDA and DIS scores, per-key contributions
    (:doc:`/methods/original_risk`, SUDA2); ``compat``: no missing value in an MSU."""
    from bayes_risk._memory import check_memory

    n, p = codes.shape
    M = max(p, 3)  # sdcMicro pads fewer than 3 keys with constant columns
    K = p if max_size is None else min(int(max_size), p)
    weight = np.array([math.factorial(M - k) for k in range(1, p + 1)], dtype=np.float64)
    full = _combine(codes)
    cnt = np.bincount(full)[full]
    cand = np.flatnonzero(cnt == 1)
    m = cand.size
    # the two largest consecutive layers: cell codes of all records, flags of the candidates
    layer = max(math.comb(p, k) for k in range(K + 1))
    check_memory(2.0 * layer * (4 * n * (K > 1) + m), "max_size",
                 what=f"SUDA2's subsets of {p} keys ({n:,} records)")
    n_msu = np.zeros((m, p), dtype=np.int64)  # per candidate, MSUs of each size
    raw = np.zeros((m, p), dtype=np.float64)  # per candidate and key: Σ weights of its MSUs
    miss_c = miss[cand]
    prev_code: dict[tuple[int, ...], np.ndarray] = {(): np.zeros(n, dtype=np.int32)}
    prev_unique: dict[tuple[int, ...], np.ndarray] = {(): np.full(m, n == 1)}
    for k in range(1, K + 1):
        code: dict[tuple[int, ...], np.ndarray] = {}
        unique: dict[tuple[int, ...], np.ndarray] = {}
        for S in combinations(range(p), k):
            base, last = S[:-1], S[-1]
            width = int(codes[:, last].max(initial=0)) + 1
            c = pd.factorize(prev_code[base].astype(np.int64) * width + codes[:, last])[0]
            u = np.bincount(c)[c[cand]] == 1
            if compat:
                u &= ~miss_c[:, list(S)].any(axis=1)
            idx = np.flatnonzero(u)  # only the unique records can have S as an MSU
            for j in range(k):
                if idx.size:
                    idx = idx[~prev_unique[S[:j] + S[j + 1:]][idx]]
            if idx.size:
                n_msu[idx, k - 1] += 1
                raw[np.ix_(idx, list(S))] += weight[k - 1]
            if k < K:
                code[S] = c.astype(np.int32)
            unique[S] = u
        prev_code, prev_unique = code, unique
    n_msu_all = np.zeros((n, p), dtype=np.int64)
    raw_all = np.zeros((n, p), dtype=np.float64)
    n_msu_all[cand], raw_all[cand] = n_msu, raw
    score = n_msu_all @ weight
    with np.errstate(invalid="ignore", divide="ignore"):
        contribution = np.where(score[:, None] > 0, raw_all / score[:, None], 0.0)
    # DIS (sdcMicro's Suda2.h): records in full-key cells of two (P), sampling fraction f:
    # dis_i = 1 / (1 + P (1 − f) / f / (s_i^Q Σ_j s_j^(−Q))), Q = 1 + (8 − M) / 20
    pairs = int(np.sum(cnt == 2))
    Q = 1.0 + (8.0 - M) / 20.0
    pos = score > 0
    dis = np.zeros(n)
    if pos.any():
        adj = float(np.sum(score[pos] ** -Q))
        X = pairs * (1.0 - dis_fraction) / dis_fraction
        dis[pos] = 1.0 / (1.0 + X / (score[pos] ** Q * adj))
    return {"score": score, "dis": dis, "contribution": contribution, "raw": raw_all,
            "n_msu": n_msu_all, "n_pairs": pairs, "M": M, "max_size": K, "Q": Q}


def _dis_table(dis: np.ndarray) -> pd.DataFrame:
    """sdcMicro's ``print(suda2)`` table: records per interval of the DIS score."""
    eps = np.finfo(np.float64).eps
    breaks = np.r_[-1.0, np.arange(8) / 10 + eps, np.inf]
    idx = np.searchsorted(breaks, dis, side="left") - 1  # R's cut(): (a, b]
    counts = np.bincount(idx, minlength=len(DIS_INTERVALS))[:len(DIS_INTERVALS)]
    return pd.DataFrame({"interval": DIS_INTERVALS, "records": counts.astype(np.int64)})


def _level_contributions(original: pd.DataFrame, keys: list[str], raw: np.ndarray
                         ) -> pd.DataFrame:
    """sdcMicro's ``attribute_level_contributions``: the share (%) of a key's contribution
    that comes from the records at each of its levels (missing values left out, as R's
    ``sort(unique(x))`` leaves them)."""
    rows = []
    for j, k in enumerate(keys):
        col = original[k].reset_index(drop=True)
        tot = raw[:, j].sum()
        by = pd.Series(raw[:, j]).groupby(col, sort=True, dropna=True).sum()
        for level, v in by.items():
            rows.append({"variable": k, "attribute": level,
                         "contribution": 100.0 * v / tot if tot > 0 else math.nan})
    return pd.DataFrame(rows, columns=["variable", "attribute", "contribution"])


def _l_diversity(cell: np.ndarray, values: pd.Series, c: float, compat: bool
                 ) -> dict[str, np.ndarray]:
    """Distinct, entropy and recursive (c, l) l-diversity of every record's key cell
    (:doc:`/methods/original_risk`); ``compat``: each missing sensitive value a value of its own."""
    v, _ = pd.factorize(values, use_na_sentinel=True)
    v = np.asarray(v, dtype=np.int64)
    miss = v < 0
    if compat:  # every missing value a distinct value
        v = np.where(miss, v.max(initial=-1) + 1 + np.cumsum(miss) - 1, v)
    else:
        v = np.where(miss, v.max(initial=-1) + 1, v)
    width = int(v.max(initial=0)) + 1
    pair, cnt = np.unique(cell * width + v, return_counts=True)
    pc = pair // width
    n_cell = np.bincount(cell).astype(np.float64)
    distinct = np.bincount(pc, minlength=len(n_cell)).astype(np.float64)
    prop = cnt / n_cell[pc]
    entropy = np.exp(-np.bincount(pc, weights=prop * np.log(prop), minlength=len(n_cell)))
    # recursive: counts of each cell in decreasing order
    order = np.lexsort((-cnt, pc))
    pcs, cs = pc[order], cnt[order].astype(np.float64)
    starts = np.r_[0, np.flatnonzero(np.diff(pcs)) + 1]
    recursive = np.ones(len(n_cell))
    for s, e in zip(starts, np.r_[starts[1:], len(pcs)], strict=True):
        r = cs[s:e]
        if len(r) > 1:
            tail = np.cumsum(r[::-1])[::-1]  # tail[j] = r_j + … + r_m (0-based j)
            recursive[pcs[s]] = 1 + int(np.sum(c * tail[1:] > r[0]))
    return {"distinct": distinct[cell], "entropy": entropy[cell], "recursive": recursive[cell]}


def _l_summary(d: dict[str, np.ndarray]) -> dict[str, Any]:
    dist = d["distinct"]
    q = np.quantile(dist, [0.25, 0.5, 0.75])
    return {
        "min": float(dist.min()), "first_quartile": float(q[0]), "median": float(q[1]),
        "mean": float(dist.mean()), "third_quartile": float(q[2]), "max": float(dist.max()),
        "n_records_l1": int(np.sum(dist <= 1)),
        "pct_records_l1": 100.0 * float(np.mean(dist <= 1)),
        "min_entropy": float(d["entropy"].min()),
        "min_recursive": float(d["recursive"].min())}


def _mostly_unique(col: pd.Series) -> bool:
    """Whether a sensitive column is numeric with mostly distinct values."""
    k, n = int(col.nunique(dropna=True)), int(col.notna().sum())
    if not (pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
            and k > 20 and k > 0.5 * n):
        return False
    warnings.warn(DataWarning(
        f"SENSITIVE_MOSTLY_UNIQUE: sensitive column {col.name!r} is numeric with {k:,} distinct "
        f"values among {n:,} records; l-diversity counts every distinct value, so close values "
        "(an income of 50,000 and one of 50,100) count as diverse and the l-diversity "
        "overstates the protection. Group the column first (e.g. pandas.qcut(original["
        f"{col.name!r}], 10)) to measure the diversity of ranges.",
        code="SENSITIVE_MOSTLY_UNIQUE"), skip_file_prefixes=CALLER)
    return True


def _suda_part(original: pd.DataFrame, keys: list[str], codes: np.ndarray, miss: np.ndarray,
               records: pd.DataFrame, is_compat: bool, max_size: int | None,
               dis_fraction: float, codes_list: list[str]) -> dict[str, Any]:
    """SUDA2 (sdcMicro's ``suda2``) over the keys: its per-record columns added to ``records``
    and its summary returned; a refusal when the key subsets are too many."""
    p = len(keys)
    K = p if max_size is None else min(int(max_size), p)
    n_subsets = sum(math.comb(p, k) for k in range(1, K + 1))
    if n_subsets > MAX_SUBSETS:
        raise ValidationError(
            f"SUDA2 on {p} keys examines {n_subsets:,} key subsets (more than "
            f"{MAX_SUBSETS:,}); give {arg_name('max_size')} (the largest MSU searched), "
            f"fewer keys, or {arg_name('suda', False)}.")
    if p < 3:
        codes_list.append("SUDA_FEW_KEYS")
        warnings.warn(DataWarning(
            f"SUDA_FEW_KEYS: SUDA2 with {p} key(s): sdcMicro's algorithm needs three, adds "
            "constant columns and scores the MSUs as if there were three keys; the scores "
            "follow it and rank records, but read them with care.", code="SUDA_FEW_KEYS"),
            stacklevel=3)
    s = _suda(codes, miss, is_compat, max_size, float(dis_fraction))
    records["suda_score"] = s["score"]
    records["dis_suda_score"] = s["dis"]
    has = s["n_msu"] > 0  # the fewest keys that single the record out (0: none)
    records["min_msu_size"] = np.where(has.any(axis=1), has.argmax(axis=1) + 1, 0)
    for j, k in enumerate(keys):
        records[f"{k}_contribution"] = s["contribution"][:, j]
    tot = float(s["score"].sum())
    contrib = pd.DataFrame({
        "variable": keys,
        "contribution": (100.0 * s["raw"].sum(axis=0) / tot if tot > 0
                         else np.full(p, math.nan))})
    return {
        "attribute_contributions": contrib,
        "attribute_level_contributions": _level_contributions(original, keys, s["raw"]),
        "dis_table": _dis_table(s["dis"]),
        "n_msu_by_size": {str(k + 1): int(s["n_msu"][:, k].sum()) for k in range(p)},
        "n_records_with_msu": int(np.sum(s["score"] > 0)),
        "n_full_key_pairs": s["n_pairs"],
        "M": s["M"], "max_size": s["max_size"], "Q": s["Q"],
        "dis_fraction": float(dis_fraction)}



def _weights(weights: Any, original: pd.DataFrame) -> np.ndarray:
    """The survey weights (a column's name, or one per record), positive and finite."""
    from bayes_risk.identification.population import _weight_vector

    return _weight_vector(weights, original)


def _k_anonymity(f: np.ndarray, F: np.ndarray | None, k: int) -> dict[str, Any]:
    """The records in key cells of fewer than ``k`` records (sample ``f``), and with weights
    (``F``) those whose estimated population cell is (sdcMicro's ``kAnon_violations``)."""
    row = {"n_violating": int(np.sum(f < k)), "pct_violating": 100.0 * float(np.mean(f < k))}
    if F is not None:  # sdcMicro's kAnon_violations(weighted = TRUE): F_k < k
        row["n_violating_population"] = int(np.sum(F < k))
    return row


def original_risk(
    original: pd.DataFrame,
    *,
    keys: Annotated[Sequence[str], cli_option(
        "--keys", "key columns (quasi-identifiers), combined into one key; values are compared as "
        "they are (an empty cell is a value of its own unless --compat sdcmicro)", nargs="+",
        metavar="COL", required=True)],
    weights: Annotated[str | Sequence[float] | np.ndarray | None, cli_option(
        "--weights", "survey weights of the records (a column of ORIGINAL): the "
        "Benedetti-Franconi risk; default: none, every record's risk is 1/f_k", metavar="COL")
    ] = None,
    sensitive: Annotated[str | Sequence[str] | None, cli_option(
        "--sensitive", "sensitive columns whose l-diversity in the key cells is computed",
        nargs="+", metavar="COL")] = None,
    method: Annotated[Literal["approx", "exact"], cli_option(
        "--method", "with --weights: sdcMicro's approximation of the risk of key cells of 3 or "
        "more records (default; it overstates the exact risk by at most about 4 %%) or the exact "
        "expectation", choices=("approx", "exact"), group=SDCMICRO_CONVENTIONS)
        | checked(Options(("approx", "exact"), listed=True))] = "approx",
    suda: Annotated[bool, cli_option(
        "--no-suda", "skip SUDA2 (it examines every subset of the keys)", action="store_true",
        parse=lambda flag: not flag, group=SDCMICRO_CONVENTIONS)] = True,
    max_size: Annotated[int | None, cli_option(
        "--max-size", "largest minimal sample unique searched by SUDA2 (default: every size)",
        type=int, metavar="K", group=SDCMICRO_CONVENTIONS) | checked([Interval(int, 1), None])
    ] = None,
    dis_fraction: Annotated[float, cli_option(
        "--dis-fraction", "sampling fraction of the DIS score (sdcMicro's DisFraction, default "
        "0.01)", type=float, metavar="F", group=SDCMICRO_CONVENTIONS)
        | checked(Interval(float, 0, 1, closed="neither"))] = 0.01,
    recursive_c: Annotated[float, cli_option(
        "--recursive-c", "constant c of recursive (c, l) l-diversity (default 2)", type=float,
        metavar="C", group=SDCMICRO_CONVENTIONS) | checked(Interval(float, 0, closed="neither"))
    ] = 2.0,
    k_anonymity: Annotated[Sequence[int], cli_option(
        "--k-anonymity", "k of the k-anonymity counts (default 2 3 5)", nargs="+", type=int,
        metavar="K", group=SDCMICRO_CONVENTIONS)] = (2, 3, 5),
    compat: Annotated[Literal["sdcmicro"] | None, cli_option(
        "--compat", "reproduce sdcMicro 5.8.1 exactly, including its missing values: an empty key "
        "cell matches every value in f_k and F_k (lowering the risk), is never part of a minimal "
        "sample unique, and each empty sensitive cell is a distinct value",
        choices=("sdcmicro",), group=SDCMICRO_CONVENTIONS)
        | checked([Options(("sdcmicro",), listed=True), None])] = None,
) -> OriginalRisk:
    """Re-identification risk of the original on its keys, as sdcMicro computes it.

    See :doc:`/methods/original_risk`.

    Parameters
    ----------
    original : DataFrame
    keys : sequence of str
        The key columns (quasi-identifiers), compared as they are.
    weights : str or sequence of float, optional
        Survey weights (a column or one per record): Benedetti–Franconi risk; without, ``1/f_k``.
    sensitive : str or sequence of str, optional
        Sensitive columns whose l-diversity in the key cells is computed (none by default).
    method : {"approx", "exact"}
        Benedetti–Franconi risk: sdcMicro's approximation, or exact integration.
    suda : bool
        Compute the SUDA2 scores (``2**len(keys)`` subsets of keys).
    max_size : int, optional
        The largest MSU searched (default: every size, as sdcMicro).
    dis_fraction : float
        The sampling fraction of the DIS score (sdcMicro's ``DisFraction``).
    recursive_c : float
        The constant ``c`` of recursive (c, l) l-diversity (sdcMicro's ``l_recurs_c``).
    k_anonymity : sequence of int
        The ``k`` of the k-anonymity counts (records with ``f_k < k``).
    compat : {None, "sdcmicro"}
        ``"sdcmicro"`` reproduces sdcMicro 5.8.1 exactly, including its treatment of missing
        values; by default a missing value is a value of its own (:doc:`/methods/compatibility`).

    Returns
    -------
    OriginalRisk
        ``records`` (per record ``fk``, ``Fk``, ``risk``, SUDA and l-diversity columns, with
        sdcMicro's names), ``global_risk``, ``k_anonymity``, ``suda``, ``l_diversity``.

    Raises
    ------
    SchemaError
        A key, sensitive or weights column that is not in ``original`` (``MISSING_COLUMN``).
    ValidationError
        Bad options or weights, a sensitive column among the keys, or more than ``2**16`` key
        subsets for SUDA2 (give ``max_size``).

    Warns
    -----
    DataWarning
        ``WEIGHTED_FREQUENCY_BELOW_SAMPLE``, ``SUDA_FEW_KEYS``, ``SENSITIVE_MOSTLY_UNIQUE``.

    Examples
    --------
    sdcMicro's ``francdat``:

    >>> import pandas as pd
    >>> d = pd.DataFrame({"Key1": [1, 1, 1, 3, 4, 4, 6, 1], "Key2": [2, 2, 2, 3, 3, 3, 2, 2],
    ...                   "Key3": [5, 1, 1, 1, 1, 1, 1, 5], "Key4": [1, 1, 1, 5, 4, 1, 5, 1],
    ...                   "w": [18, 45.5, 39, 17, 541, 8, 5, 92]})
    >>> r = original_risk(d, keys=["Key1", "Key2", "Key3", "Key4"], weights="w")
    >>> r.records[["fk", "Fk"]].T.to_numpy().tolist()
    [[2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 2.0], [110.0, 84.5, 84.5, 17.0, 541.0, 8.0, 5.0, 110.0]]
    >>> round(r.global_risk["expected_reidentifications"], 6)
    0.966526
    >>> r.records["suda_score"].tolist()
    [0.0, 0.0, 0.0, 8.0, 6.0, 4.0, 8.0, 0.0]
    """
    keys = column_names(keys, "keys")
    sens = column_names(sensitive, "sensitive", required=False)
    k_anonymity = [int(k) if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else k
                   for k in k_anonymity]
    _check(original, keys, sens, method, max_size, dis_fraction, recursive_c, k_anonymity,
           compat, weights)
    is_compat, n = compat == "sdcmicro", len(original)
    weighted = weights is not None
    w = _weights(weights, original) if weighted else np.ones(n)
    pairs = [_codes(original[k]) for k in keys]
    codes = np.column_stack([c for c, _ in pairs])
    miss = np.column_stack([m for _, m in pairs])

    codes_list: list[str] = []
    f, F = _frequencies(codes, miss, w, wildcard=is_compat)
    risk, n_below = _individual_risk(f, F, weighted, method)
    if n_below:
        codes_list.append("WEIGHTED_FREQUENCY_BELOW_SAMPLE")
        warnings.warn(DataWarning(
            f"WEIGHTED_FREQUENCY_BELOW_SAMPLE: the weights of the key cells of {n_below} "
            f"record(s) sum to less than the cells' numbers of records (weights below 1), so "
            "the estimated population frequency F_k is below the sample frequency f_k and the "
            "negative binomial model is undefined there; those records get the model's largest "
            "risk, 1/f_k (sdcMicro computes the formula with p_k > 1).",
            code="WEIGHTED_FREQUENCY_BELOW_SAMPLE"), stacklevel=2)
        risk = np.where(F < f, 1.0 / f, risk)
    records = pd.DataFrame({"fk": f, "Fk": F, "risk": risk}, index=original.index)
    er = float(risk.sum())
    mad = 1.482602218505602 * float(np.median(np.abs(risk - np.median(risk))))
    high = int(np.sum((risk > np.median(risk) + 3 * mad) & (risk > 0.1)))
    global_risk = {"expected_reidentifications": er, "global_risk": er / n,
                   "global_risk_pct": 100.0 * er / n, "n_high_risk": high,
                   "max_risk": float(risk.max())}
    kanon = {str(k): _k_anonymity(f, F if weighted else None, k) for k in k_anonymity}
    cell = _combine(codes)
    key_cells = {"n_records": n, "n_key_combinations": int(cell.max()) + 1,
                 "n_sample_uniques": int(np.sum(f == 1)),
                 "pct_sample_uniques": 100.0 * float(np.mean(f == 1))}

    suda_out = (_suda_part(original, keys, codes, miss, records, is_compat, max_size,
                           dis_fraction, codes_list) if suda else None)

    l_out: dict[str, Any] = {}
    if sens:
        for sv in sens:  # the key cells with a missing key as a value, in sdcMicro's too
            d = _l_diversity(cell, original[sv], float(recursive_c), is_compat)
            records[f"{sv}_Distinct_Ldiversity"] = d["distinct"]
            records[f"{sv}_Entropy_Ldiversity"] = d["entropy"]
            records[f"{sv}_Recursive_Ldiversity"] = d["recursive"]
            l_out[sv] = _l_summary(d)
            if _mostly_unique(original[sv]):
                codes_list.append("SENSITIVE_MOSTLY_UNIQUE")

    settings = {
        "keys": keys,
        "weights": (weights if isinstance(weights, str) else
                    "given (one per record)" if weighted else None),
        "weighted": weighted,
        "method": method if weighted else "sample (1/f_k)",
        "sensitive": sens,
        "suda": bool(suda),
        "max_size": None if max_size is None else int(max_size),
        "dis_fraction": float(dis_fraction),
        "recursive_c": float(recursive_c),
        "k_anonymity": [int(k) for k in k_anonymity],
        "compat": compat,
        "missing_values": MISSING_POLICY[compat],
        "n_missing_keys": {k: int(m.sum()) for k, m in zip(keys, miss.T, strict=True)
                           if m.any()}}
    return OriginalRisk(keys=keys, records=records, global_risk=global_risk,
                        k_anonymity=kanon, key_cells=key_cells, suda=suda_out,
                        l_diversity=l_out, settings=settings, warnings=codes_list)
