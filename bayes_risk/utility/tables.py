"""Per-table utility and per-variable comparison of synthetic data, as synthpop 1.9-2's
``utility.tab()``/``utility.tables()`` and ``compare()`` compute them (:doc:`/methods/utility`,
Per-table utility).

Each table of up to ``order`` columns is tabulated in the original and in each synthetic
dataset; numeric columns are first cut into ``ngroups`` groups at the quantiles of the original
and all synthetic values pooled (``[a, b)``, the last closed; equal-width groups when the
quantiles give fewer than 3), a declared missing-value code and an empty cell being groups of
their own. Over the ``K`` cells that hold a record of either table (counts ``d_k`` original,
``s_k`` synthetic, ``c = Σs / (Σs + Σd)``, ``N = Σs + Σd``)::

    VW     = Σ (s_k − d_k c/(1 − c))² / ((s_k + d_k) c)       (Voas–Williamson chi-square)
    FT     = 4 Σ (√s_k − √(d_k c/(1 − c)))²                     (Freeman–Tukey)
    pMSE   = VW c (1 − c)² / N,   S_pMSE = VW / df,   df = K − 1
    JSD    = ½ Σ p_d log2(p_d / m) + ½ Σ p_s log2(p_s / m),  m = (p_d + p_s)/2
    U      = Mann–Whitney statistic of the cells' propensity s_k/(s_k + d_k), synthetic
             records against original ones (R's wilcox.test W)

with ``S_FT = FT / df`` and ``S_JSD = 2 N JSD / (df log 2)``; a release's figure is the mean
over its datasets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, check_params, check_value
from bayes_risk._io import to_jsonable
from bayes_risk.data.levels import level_codes
from bayes_risk.data.missing import missing_kinds
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ValidationError

__all__ = ["TABLE_STATISTICS", "TableUtility", "table_utility", "compare_marginals",
           "marginal_percentages", "r_pretty"]

#: the statistics of each table, in synthpop's names
TABLE_STATISTICS = ("pMSE", "S_pMSE", "VW", "FT", "S_FT", "JSD", "S_JSD", "U", "df")


@dataclass(frozen=True)
class _Binned:
    """A column's group codes in the original and in each dataset, and the groups' labels."""

    original: np.ndarray
    datasets: list[np.ndarray]
    labels: list[str]


def _r_quantile(x: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """R's ``quantile(x, probs)`` (type 7), computed as R computes it."""
    x = np.sort(x)
    index = (x.size - 1) * probs
    lo, hi = np.floor(index).astype(np.int64), np.ceil(index).astype(np.int64)
    qs = x[lo].astype(np.float64)
    h = index - lo
    i = (index > lo) & (x[hi] != qs)
    qs[i] = (1 - h[i]) * qs[i] + h[i] * x[hi[i]]
    return qs


def _interval_label(a: float, b: float, last: bool) -> str:
    return f"[{a:.8g},{b:.8g}" + ("]" if last else ")")


def _bin_numeric(x: list[np.ndarray], kinds: list[np.ndarray], codes: tuple[float, ...],
                 ngroups: int) -> _Binned:
    """synthpop's ``group_num``: groups at the quantiles of the observed values of the original
    (``x[0]``) and every dataset pooled, equal widths when fewer than 3 groups result."""
    pooled = np.concatenate([v[k == 0] for v, k in zip(x, kinds, strict=True)])
    if pooled.size == 0:
        raise ValidationError("a numeric column has no observed value in the original or the "
                              "synthetic datasets; it cannot be grouped for the tables.",
                              code="TABLE_EMPTY_COLUMN")
    probs = np.arange(ngroups + 1) * (1.0 / ngroups)  # R's seq(0, 1, 1/n)
    breaks = np.unique(_r_quantile(pooled, probs))
    if breaks.size - 1 + len(codes) < 3:
        lo, hi = float(pooled.min()), float(pooled.max())
        by = (hi - lo) / ngroups  # R's seq(min, max, length.out = n + 1)
        breaks = np.unique(np.concatenate([[lo], lo + np.arange(1, ngroups) * by, [hi]]))
    nb = max(breaks.size - 1, 1)
    labels = ([_interval_label(breaks[i], breaks[i + 1], i == nb - 1) for i in range(nb)]
              if breaks.size > 1 else [f"{breaks[0]:.8g}"])
    labels += [f"{c:.8g}" for c in codes] + ["NA"]

    def group(v: np.ndarray, k: np.ndarray) -> np.ndarray:
        # [a, b): the last break's interval closed (R's cut, right = FALSE, include.lowest)
        g = np.clip(np.searchsorted(breaks, v, side="right") - 1, 0, nb - 1)
        return np.where(k == 0, g, np.where(k == 1, nb + len(codes), nb + k - 2))

    return _Binned(group(x[0], kinds[0]), [group(v, k) for v, k in zip(x[1:], kinds[1:],
                                                                        strict=True)], labels)


def _binned_columns(original: pd.DataFrame, datasets: list[pd.DataFrame], schema: Schema,
                    columns: list[str], ngroups: int) -> dict[str, _Binned]:
    out = {}
    for c in columns:
        spec = schema[c]
        frames = [original, *datasets]
        if spec.is_categorical:
            levels = list(spec.levels or ())
            g = [level_codes(f[c], levels, column=c) for f in frames]
            g = [np.where(v < 0, len(levels), v) for v in g]
            out[c] = _Binned(g[0], g[1:], [str(v) for v in levels] + ["NA"])
        else:
            codes = tuple(spec.missing_codes or ())
            kinds = [missing_kinds(f[c], codes) for f in frames]
            x = [f[c].to_numpy(dtype=np.float64, na_value=np.nan) for f in frames]
            out[c] = _bin_numeric(x, kinds, codes, ngroups)
    return out


def _cells(groups: list[np.ndarray], sizes: list[int]) -> np.ndarray:
    """One integer per record naming its cell of the table of ``groups``."""
    key = np.zeros(groups[0].size, dtype=np.int64)
    for g, s in zip(groups, sizes, strict=True):
        key = key * s + g
    return key


def _statistics(td: np.ndarray, ts: np.ndarray) -> dict[str, float]:
    """synthpop's ``utility.tab`` statistics of the cell counts ``td`` (original) and ``ts``
    (synthetic), over the cells that hold a record of either."""
    keep = td + ts > 0
    td, ts = td[keep].astype(np.float64), ts[keep].astype(np.float64)
    df = td.size - 1
    N = ts.sum() + td.sum()
    cc = ts.sum() / N
    expect = (ts + td) * cc
    diff = ts - td * cc / (1 - cc)
    vw = float(np.sum(diff ** 2 / expect))
    ft = float(4 * np.sum((np.sqrt(ts) - np.sqrt(cc / (1 - cc) * td)) ** 2))
    pd_, ps = td / td.sum(), ts / ts.sum()
    half = (pd_ + ps) * 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        jsd = float(np.sum(np.where(pd_ > 0, pd_ * np.log2(pd_ / half), 0.0)) / 2
                    + np.sum(np.where(ps > 0, ps * np.log2(ps / half), 0.0)) / 2)
    # R's wilcox.test(rep(score, ts), rep(score, td))$statistic: pairs (syn > orig) + ties / 2
    score = ts / (ts + td)
    u, inv = np.unique(score, return_inverse=True)
    s_at = np.bincount(inv, weights=ts, minlength=u.size)
    d_at = np.bincount(inv, weights=td, minlength=u.size)
    below = np.concatenate([[0.0], np.cumsum(d_at)[:-1]])
    U = float(np.sum(s_at * (below + 0.5 * d_at)))
    nan = math.nan
    return {"pMSE": vw * cc * (1 - cc) ** 2 / N, "S_pMSE": vw / df if df else nan,
            "VW": vw, "FT": ft, "S_FT": ft / df if df else nan, "JSD": jsd,
            "S_JSD": jsd * 2 * N / df / math.log(2) if df else nan, "U": U, "df": float(df)}


@dataclass(frozen=True, repr=False)
class TableUtility:
    """Result of :func:`table_utility`.

    Attributes
    ----------
    tables : DataFrame
        One row per table: ``table`` (its columns joined by ``:``), ``order`` and the
        statistics of ``TABLE_STATISTICS``, means over the synthetic datasets.
    per_dataset : DataFrame
        The same per table and synthetic dataset (``dataset`` 1..m).
    groups : dict
        Each column's groups (labels), as tabulated: a numeric column's outer ends are the
        smallest and largest value of the original and the synthetic data pooled (not written
        to the audit's or the command's files).
    settings : dict
        ``order``, ``ngroups``, ``columns``.
    """

    tables: pd.DataFrame
    per_dataset: pd.DataFrame
    groups: dict[str, list[str]]
    settings: dict[str, Any] = field(default_factory=dict)

    def pairs(self, statistic: str = "S_pMSE") -> pd.DataFrame:
        """The two-way tables' ``statistic`` as a symmetric matrix of the columns (the heat map
        of synthpop's ``utility.tables``); the diagonal holds the one-way tables' values."""
        cols = list(self.settings["columns"])
        mat = pd.DataFrame(np.nan, index=cols, columns=cols)
        for name, order, v in zip(self.tables["table"], self.tables["order"],
                                  self.tables[statistic], strict=True):
            parts = name.split(":")
            if order == 1:
                mat.loc[parts[0], parts[0]] = v
            elif order == 2:
                mat.loc[parts[0], parts[1]] = mat.loc[parts[1], parts[0]] = v
        return mat

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the tables' mean statistics and the settings (not the groups, whose ends
        are records' values)."""
        return to_jsonable({"tables": self.tables.to_dict(orient="records"),
                            "settings": self.settings})


def table_utility(original: pd.DataFrame, synthetic: Any, *, schema: Schema | None = None,
                  order: int = 2, columns: Any = None, ngroups: int = 5,
                  categorical: Any = None, observed: Any = ()) -> TableUtility:
    """synthpop's per-table utility: every table of 1 to ``order`` columns (synthpop's
    ``utility.tables(tables = "oneway"/"twoway"/"threeway")`` with every statistic).

    Parameters
    ----------
    original : DataFrame
    synthetic : DataFrame, list of DataFrame or SyntheticData
    schema : Schema, optional
        Column types and levels (default: the release's, else inferred).
    order : int, default 2
        The largest number of columns in a table (1: each column alone, as ``compare()``'s
        utility; 2: every pair too, synthpop's default; 3: every triple too).
    columns : sequence of str, optional
        The columns (default all, in the original's order).
    ngroups : int, default 5
        Groups of a numeric column (synthpop's ``ngroups``).
    categorical : iterable of str, optional
        Integer-coded columns to treat as categorical.
    observed : iterable of str
        Columns compared on their observed cells (a synthesizer imputed their missing values):
        a record with an empty cell in one of them is left out of the tables holding it.

    Returns
    -------
    TableUtility

    Raises
    ------
    ValidationError
        ``order`` or ``ngroups`` out of range, an unknown column, a numeric column without an
        observed value (``TABLE_EMPTY_COLUMN``).

    Examples
    --------
    >>> from bayes_risk.data import make_ce_like
    >>> d = make_ce_like(n=300, random_seed=1)
    >>> t = table_utility(d, [d.sample(frac=1.0, random_state=2)], order=1,
    ...                   categorical=["Urban", "Marital", "Tenure"])
    >>> float(t.tables["VW"].max())  # the same records in another order: identical tables
    0.0
    """
    from bayes_risk.utility._inputs import release_and_columns

    check_params(dict(order=order, ngroups=ngroups),
                 {"order": Interval(int, 1, 3), "ngroups": Interval(int, 2)})
    datasets, schema, cols = release_and_columns(original, synthetic, schema=schema,
                                                 categorical=categorical, columns=columns)
    binned = _binned_columns(original, datasets, schema, cols, int(ngroups))
    sizes = {c: len(b.labels) for c, b in binned.items()}
    rows, per = [], []
    for k in range(1, int(order) + 1):
        for combo in combinations(cols, k):
            size = [sizes[c] for c in combo]
            if math.prod(size) >= 2**62:
                raise ValidationError(f"the table {':'.join(combo)} has too many cells.",
                                      code="TABLE_TOO_LARGE")
            obs = [c for c in combo if c in set(observed)]

            def kept(groups: list[np.ndarray], obs: list[str] = obs,
                     combo: tuple[str, ...] = combo) -> np.ndarray:
                # the records with no empty cell in an observed column (NA: the last group)
                keep = np.ones(groups[0].size, dtype=bool)
                for c in obs:
                    keep &= groups[combo.index(c)] != sizes[c] - 1
                return _cells([g[keep] for g in groups], [sizes[c] for c in combo])

            ko = kept([binned[c].original for c in combo])
            stats = []
            for j in range(len(datasets)):
                ks = kept([binned[c].datasets[j] for c in combo])
                u, inv = np.unique(np.concatenate([ko, ks]), return_inverse=True)
                td = np.bincount(inv[:ko.size], minlength=u.size)
                ts = np.bincount(inv[ko.size:], minlength=u.size)
                st = _statistics(td, ts)
                stats.append(st)
                per.append({"table": ":".join(combo), "order": k, "dataset": j + 1, **st})
            rows.append({"table": ":".join(combo), "order": k,
                         **{s: float(np.mean([x[s] for x in stats])) for s in TABLE_STATISTICS}})
    return TableUtility(pd.DataFrame(rows), pd.DataFrame(per),
                        {c: b.labels for c, b in binned.items()},
                        {"order": int(order), "ngroups": int(ngroups), "columns": cols,
                         "observed": [c for c in cols if c in set(observed)]})


def r_pretty(lo: float, up: float, n: int, min_n: int) -> np.ndarray:
    """R's ``pretty(c(lo, up), n, min.n)`` (its ``R_pretty``, R 4.2): about ``n`` equal
    intervals of width 1, 2 or 5 times a power of 10 covering ``[lo, up]``.

    Examples
    --------
    >>> r_pretty(15, 87, 20, 1).tolist()[:4]
    [15.0, 20.0, 25.0, 30.0]
    """
    h, h5, f_min, shrink = 1.5, 0.5 + 1.5 * 1.5, 2.0 ** -20, 0.75
    eps = np.finfo(float).eps
    dx = up - lo
    if dx == 0 and up == 0:
        cell, small = 1.0, True
    else:
        cell = max(abs(lo), abs(up))
        U = 1 + (1 / (1 + h) if h5 >= 1.5 * h + 0.5 else 1.5 / (1 + h5))
        U *= max(1, n) * eps
        small = dx < cell * U * 3
    if small:
        if cell > 10:
            cell = 9 + cell / 10
        cell *= shrink
        if min_n > 1:
            cell /= min_n
    else:
        cell = dx
        if n > 1:
            cell /= n
    cell = max(cell, f_min * np.finfo(float).tiny)
    base = 10.0 ** math.floor(math.log10(cell))
    unit = base
    if (ns := 2 * base) - cell < h * (cell - unit):
        unit = ns
        if (ns := 5 * base) - cell < h5 * (cell - unit):
            unit = ns
            if (ns := 10 * base) - cell < h * (cell - unit):
                unit = ns
    ns = math.floor(lo / unit + 1e-10)
    nu = math.ceil(up / unit - 1e-10)
    while ns * unit > lo + 1e-10 * unit:
        ns -= 1
    while nu * unit < up - 1e-10 * unit:
        nu += 1
    k = int(0.5 + nu - ns)
    if k < min_n:
        k = min_n - k
        if ns >= 0:
            nu += k // 2
            ns -= k // 2 + k % 2
        else:
            ns -= k // 2
            nu += k // 2 + k % 2
        ndiv = min_n
    else:
        ndiv = k
    lo_b = ns * unit if ns * unit < lo else lo
    up_b = nu * unit if nu * unit > up else up
    s = lo_b + np.arange(ndiv + 1) * ((up_b - lo_b) / ndiv) if ndiv else np.array([lo_b])
    if ndiv:
        s[-1] = up_b
        s[np.abs(s) < 1e-14 * (up_b - lo_b) / ndiv] = 0.0
    return s


def _r_format(v: float) -> str:
    """R's ``format(v, scientific = FALSE, trim = TRUE, drop0trailing = TRUE)`` of a break."""
    text = f"{float(f'{v:.7g}'):f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def compare_marginals(original: pd.DataFrame, synthetic: Any, *, schema: Schema | None = None,
                      columns: Any = None, breaks: int = 20, ngroups: int = 5,
                      categorical: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """synthpop's ``compare()``: each column's distribution in the original and in the
    synthetic datasets pooled, with its one-way utility.

    A categorical column, or a numeric one with fewer than 6 distinct values in the original,
    is tabulated by value; a numeric column by the bins of R's ``hist(breaks = 20)`` over the
    original and synthetic values pooled (``pretty`` breaks; a bin ``(a, b]`` labelled ``a``,
    the first closed), its missing values (empty, each declared code) in groups ``miss.*``
    when the original has any. Percentages are of all records (missing ones too).

    Parameters
    ----------
    original, synthetic, schema, columns, ngroups, categorical
        As :func:`table_utility`.
    breaks : int, default 20
        The number of bins R's ``pretty`` aims at.

    Returns
    -------
    marginals : DataFrame
        ``variable``, ``value`` (a level or a bin's lower break), ``original``, ``synthetic``
        (% of records).
    utility : DataFrame
        One row per column: ``variable`` and the one-way table's statistics
        (``TABLE_STATISTICS``; synthpop's ``tab.utility``).

    Examples
    --------
    >>> from bayes_risk.data import make_ce_like
    >>> d = make_ce_like(n=200, random_seed=1)
    >>> marg, util = compare_marginals(d, [d], categorical=["Urban", "Marital", "Tenure"])
    >>> bool((marg["original"] == marg["synthetic"]).all()), float(util["S_pMSE"].max())
    (True, 0.0)
    """
    from bayes_risk.utility._inputs import release_and_columns

    check_value(breaks, Interval(int, 1), "breaks")
    datasets, schema, columns = release_and_columns(original, synthetic, schema=schema,
                                                    categorical=categorical, columns=columns)
    tu = table_utility(original, datasets, schema=schema, order=1, columns=columns,
                       ngroups=ngroups)
    util = tu.tables.drop(columns=["order"]).rename(columns={"table": "variable"})
    return marginal_percentages(original, datasets, schema, tu.settings["columns"], breaks), util


def marginal_percentages(original: pd.DataFrame, datasets: list[pd.DataFrame], schema: Schema,
                         cols: list[str], breaks: int = 20, observed: Any = ()) -> pd.DataFrame:
    """The percentages of :func:`compare_marginals` (``variable``, ``value``, ``original``,
    ``synthetic``) of the columns ``cols``; ``observed`` columns over their observed cells."""
    pooled_all = pd.concat(datasets, ignore_index=True)
    rows = []
    for c in cols:
        spec = schema[c]
        orig, pooled = original, pooled_all
        if c in set(observed):  # imputed: like with like, on the cells observed
            orig, pooled = original[original[c].notna()], pooled_all[pooled_all[c].notna()]
        codes = tuple(spec.missing_codes or ()) if not spec.is_categorical else ()
        ko, ks = missing_kinds(orig[c], codes), missing_kinds(pooled[c], codes)
        xo = orig[c].to_numpy(dtype=object)
        xs = pooled[c].to_numpy(dtype=object)
        if spec.is_categorical or pd.Series(xo[ko != 1]).nunique() < 6:
            # by value (a numeric column's codes are values here, as R's as.factor makes them)
            if spec.is_categorical:
                values = list(spec.levels or ())
                co = level_codes(orig[c], values, column=c)
                cs = level_codes(pooled[c], values, column=c)
            else:
                values = sorted(set(xo[ko != 1]) | set(xs[ks != 1]))
                co = np.where(ko != 1, np.searchsorted(values, np.where(ko != 1, xo, 0)), -1)
                cs = np.where(ks != 1, np.searchsorted(values, np.where(ks != 1, xs, 0)), -1)
            labels = [str(v) for v in values]
            po = np.bincount(co[co >= 0], minlength=len(values))
            ps = np.bincount(cs[cs >= 0], minlength=len(values))
            if (co < 0).any():  # table(useNA = "always"), kept when the original has any
                labels.append("NA")
                po, ps = np.append(po, (co < 0).sum()), np.append(ps, (cs < 0).sum())
        else:
            vo = np.asarray(xo[ko == 0], dtype=np.float64)
            vs = np.asarray(xs[ks == 0], dtype=np.float64)
            both = np.concatenate([vo, vs])
            b = r_pretty(float(both.min()), float(both.max()), int(breaks), 1)
            nb = b.size - 1
            w = np.diff(b)
            diddle = 1e-7 * (np.median(w) if nb > 5 else (b[-1] - b[0]) / nb if nb > 1 else 0)
            fuzzy = b + np.concatenate([[-diddle], np.full(nb, diddle)])
            labels = [_r_format(v) for v in b[:-1]]
            po = np.bincount(np.searchsorted(fuzzy, vo, side="left") - 1, minlength=nb)[:nb]
            ps = np.bincount(np.searchsorted(fuzzy, vs, side="left") - 1, minlength=nb)[:nb]
            # ggnum's miss.* groups: each code present, then empty cells (when the original
            # has any)
            kinds = [k for k in range(2, 2 + len(codes)) if (ko == k).any() or (ks == k).any()]
            kinds += [1] if (ko == 1).any() else []
            labels += [f"miss.{_r_format(codes[k - 2])}" if k > 1 else "miss.NA" for k in kinds]
            po = np.concatenate([po, [(ko == k).sum() for k in kinds]])
            ps = np.concatenate([ps, [(ks == k).sum() for k in kinds]])
        for lab, a, s in zip(labels, po, ps, strict=True):
            rows.append({"variable": c, "value": lab, "original": 100 * a / len(orig),
                         "synthetic": 100 * s / len(pooled)})
    return pd.DataFrame(rows, columns=["variable", "value", "original", "synthetic"])
