"""sdcMicro's perturbative remedies of a release: post-randomization (PRAM), local suppression to
k-anonymity, MDAV microaggregation and noise addition (:doc:`/user_guide/disclosure`).

Each follows sdcMicro 5.8.1 (Templ, Kowarik & Meindl 2015): ``pram()``, ``localSuppression()``,
``microaggregation(method = "mdav")`` and ``addNoise()``, applied to each synthetic dataset of a
release and recorded in its manifest as the operations of :func:`~bayes_risk.disclosure.sdc.sdc`
are. Where sdcMicro's code departs from its own description, the departure is named where it is
made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import OneOf, Requires, check_relations
from bayes_risk._rng import RandomSeed, spawn
from bayes_risk._specs import as_spec, cli_option
from bayes_risk.data.missing import missing_kinds
from bayes_risk.data.normalise import as_synthetic_list
from bayes_risk.data.schema import _level_to_json
from bayes_risk.data.validate import require_frame
from bayes_risk.disclosure.sdc import release_columns, released_columns, remedied
from bayes_risk.disclosure.specs import SDCMICRO_REMEDIES, SdcMicroSpec
from bayes_risk.exceptions import ValidationError, arg_name

__all__ = ["sdcmicro"]

#: ``sdcmicro``'s arguments (and ``settings.importance``) against each other
RELATIONS = (
    OneOf(("pram", "local_suppression", "microaggregation", "add_noise"), required=True,
          only=False, code="OPTION_REQUIRED"),
    Requires("importance", "local_suppression"),
    Requires("strata", ("pram", "local_suppression", "microaggregation")),
)


def sdcmicro(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    pram: Annotated[Sequence[str] | None, cli_option(
        "--pram", "categorical synthesized columns post-randomized by sdcMicro's invariant PRAM "
        "(pram()): each dataset's values redrawn from a transition matrix that keeps the "
        "levels' expected frequencies", nargs="+", metavar="COL", group=SDCMICRO_REMEDIES)] = None,
    local_suppression: Annotated[Sequence[str] | None, cli_option(
        "--local-suppression", "key columns (categorical or count, synthesized) made "
        "k-anonymous by suppressing values, as sdcMicro's localSuppression()", nargs="+",
        metavar="COL", group=SDCMICRO_REMEDIES)] = None,
    microaggregation: Annotated[Sequence[str] | None, cli_option(
        "--microaggregation", "continuous synthesized columns microaggregated jointly by MDAV "
        "(sdcMicro's microaggregation(method = 'mdav')): each value replaced by the mean of its "
        "group of --aggr records or more", nargs="+", metavar="COL", group=SDCMICRO_REMEDIES)
    ] = None,
    add_noise: Annotated[Sequence[str] | None, cli_option(
        "--add-noise", "continuous synthesized columns given random normal noise "
        "(sdcMicro's addNoise())", nargs="+", metavar="COL", group=SDCMICRO_REMEDIES)] = None,
    strata: Annotated[Sequence[str] | None, cli_option(
        "--strata", "columns whose combinations --pram, --local-suppression and "
        "--microaggregation treat apart (sdcMicro's strata variables)", nargs="+",
        metavar="COL", group=SDCMICRO_REMEDIES)] = None,
    settings: SdcMicroSpec | None = None,
    random_seed: RandomSeed = None,
) -> Any:
    """Perturb a release as sdcMicro's remedies do, dataset by dataset.

    The operations given run in this order: post-randomization, microaggregation, noise, then
    local suppression (last, so that the k-anonymity it reaches holds in what is released).

    Parameters
    ----------
    original : DataFrame
        The confidential table the release was made from (its release is checked against it).
    synthetic : SyntheticData, DataFrame or list of DataFrame
        The release.
    pram : sequence of str, optional
        Categorical synthesized columns post-randomized by sdcMicro's invariant PRAM
        (``pram()``): each dataset's transition matrix is made from its own frequencies of the
        column's levels (those of the release's schema) and ``settings``' ``pram_pd`` and
        ``pram_alpha``; every value is then drawn from its level's row. Missing values stay
        missing.
    local_suppression : sequence of str, optional
        Key columns (categorical or count, synthesized) made k-anonymous (``settings.k``) by
        suppressing values (set missing), as sdcMicro's ``localSuppression()``; a missing key
        value matches every value (sdcMicro's ``alpha = 1``).
    microaggregation : sequence of str, optional
        Continuous synthesized columns microaggregated jointly by MDAV (sdcMicro's
        ``microaggregation(method = "mdav")``): groups of ``settings.aggr`` records, each value
        replaced by its group's mean. One column is aggregated in groups of consecutive sorted
        values, as sdcMicro then does whatever the method.
    add_noise : sequence of str, optional
        Continuous synthesized columns given random noise (sdcMicro's ``addNoise()``;
        ``settings.noise`` and ``settings.noise_method``).
    strata : sequence of str, optional
        Columns whose combinations are treated apart by ``pram``, ``local_suppression``
        and ``microaggregation`` (sdcMicro's strata variables).
    settings : SdcMicroSpec, optional
        See :class:`~bayes_risk.disclosure.SdcMicroSpec` (default: sdcMicro's).
    random_seed : int, sequence of int, SeedSequence or Generator, optional
        Seed of PRAM's and the noise's draws (same seed, same release). It is not recorded:
        with it and the noise's standard deviation anyone could draw the noise again and take
        it off.

    Returns
    -------
    SyntheticData
        The release after the remedies; ``extra["post_processing"]`` records each operation,
        its settings and what it changed (PRAM's transition matrices, the values suppressed,
        MDAV's groups, the noise's standard deviations).

    Raises
    ------
    ValidationError
        Nothing to do (``OPTION_REQUIRED``), a setting out of range, a column of the wrong type
        (``WRONG_DTYPE``), a column released unsynthesized (``REMEDY_NOT_APPLICABLE``), a
        stratum or dataset smaller than ``k`` or ``aggr`` (``REMEDY_NOT_APPLICABLE``), a
        stratum column the remedies change (``OPTION_CONFLICT``).
    SchemaError
        A column that is not in the release (``MISSING_COLUMN``).

    Examples
    --------
    >>> import pandas as pd
    >>> orig = pd.DataFrame({"x": [1.0, 2, 3, 10, 11, 12], "y": [5.0, 5, 6, 1, 1, 2]})
    >>> syn = pd.DataFrame({"x": [1.0, 2, 4, 10, 12, 13], "y": [5.0, 6, 6, 1, 2, 2]})
    >>> out = sdcmicro(orig, syn, microaggregation=["x", "y"])
    >>> out[0]["x"].round(3).tolist()  # two groups of three records
    [2.333, 2.333, 2.333, 11.667, 11.667, 11.667]
    >>> out.extra["post_processing"][0]["n_groups"]
    [2]
    """
    settings = as_spec(settings, SdcMicroSpec, "settings")
    importance = settings.importance
    # an empty operation is none given
    check_relations(dict(pram=pram or None, local_suppression=local_suppression or None,
                         microaggregation=microaggregation or None, add_noise=add_noise or None,
                         strata=strata, importance=importance), RELATIONS)
    require_frame(original, "original")
    datasets, source = as_synthetic_list(synthetic, original=original, row_order=False)
    datasets = [z.copy() for z in datasets]
    schema = source.schema if source is not None else None
    z0 = datasets[0]
    cols = _operation_columns(dict(pram=pram, local_suppression=local_suppression,
                                   microaggregation=microaggregation, add_noise=add_noise),
                              z0, schema)
    strata = _check_strata(strata, cols, z0)
    if settings.noise_method == "correlated" and cols["add_noise"] and len(cols["add_noise"]) < 2:
        raise ValidationError(f"{arg_name('noise_method', 'correlated')} draws noise with the "
                              "columns' covariance: it needs two columns or more in "
                              f"{arg_name('add_noise')}. Got {cols['add_noise']}.",
                              code="INVALID_ARGUMENT")
    keys = cols["local_suppression"]
    weights = _check_importance(importance, keys) if importance is not None else None
    codes = {c: list(schema[c].missing_codes) if schema is not None and c in schema.names
             else [] for c in [*cols["microaggregation"], *cols["add_noise"]]}
    rngs = spawn(random_seed, len(datasets))
    steps: list[dict[str, Any]] = []
    groups = [_groups(z, strata) for z in datasets]
    if cols["pram"]:
        steps.append(_pram_step(datasets, groups, cols["pram"], schema, settings, strata, rngs))
    if cols["microaggregation"]:
        steps.append(_micro_step(datasets, groups, cols["microaggregation"], codes, settings.aggr,
                                 strata))
    if cols["add_noise"]:
        steps.append(_noise_step(datasets, cols["add_noise"], codes, settings, rngs))
    if keys:
        if weights is None:
            weights = _default_importance(datasets[0], keys, schema)
        steps.append(_suppression_step(datasets, groups, keys, settings.k, weights, schema,
                                       strata))
    return remedied(source, datasets, steps)


# ---------------------------------------------------------------------------- checks
def _operation_columns(given: Mapping[str, Sequence[str] | None], z: pd.DataFrame, schema: Any
                       ) -> dict[str, list[str]]:
    """The columns of each operation (``given``, by argument: ``pram``,
    ``local_suppression``, ``microaggregation``, ``add_noise``), each a synthesized column of
    the release of the kind its operation takes."""
    cols = {argument: released_columns(c, argument, z, schema) for argument, c in given.items()}
    for c in cols["pram"]:
        _check_kind(c, "pram", z, schema, categorical=True)
    for c in cols["local_suppression"]:
        _check_kind(c, "local_suppression", z, schema, categorical=None)
    for c in [*cols["microaggregation"], *cols["add_noise"]]:
        _check_kind(c, "microaggregation" if c in cols["microaggregation"] else "add_noise", z,
                    schema, categorical=False)
    return cols


def _check_kind(col: str, argument: str, z: pd.DataFrame, schema: Any,
                categorical: bool | None) -> None:
    """``categorical=True``: a categorical column (PRAM); ``False``: a continuous one (MDAV,
    noise: a count would hold values that are not counts); ``None``: not continuous (a key)."""
    spec = schema[col] if schema is not None and col in schema.names else None
    kind = spec.type if spec is not None else None
    numeric = (pd.api.types.is_numeric_dtype(z[col])
               and not pd.api.types.is_bool_dtype(z[col]))
    if categorical is True and spec is not None and not spec.is_categorical:
        raise ValidationError(
            f"{arg_name(argument)}: column {col!r} is {kind} in the release's schema; PRAM "
            "redraws the levels of categorical columns (declare it categorical if its numbers "
            "are codes of levels).", code="WRONG_DTYPE")
    if categorical is False:
        if not numeric or (spec is not None and spec.is_categorical):
            raise ValidationError(
                f"{arg_name(argument)}: column {col!r} is "
                f"{kind if spec is not None and spec.is_categorical else z[col].dtype}, not "
                "numeric; only continuous columns can be microaggregated or given noise.",
                code="WRONG_DTYPE")
        if kind == "count":
            raise ValidationError(
                f"{arg_name(argument)}: column {col!r} is a count in the release's schema; a "
                "group mean or added noise is no count. Declare it continuous if fractions "
                "may be released.", code="WRONG_DTYPE")
    if categorical is None and kind == "continuous":
        raise ValidationError(
            f"{arg_name(argument)}: column {col!r} is continuous; k-anonymity on a continuous "
            "key would suppress nearly every value. Band it (or microaggregate it) instead.",
            code="WRONG_DTYPE")
    if categorical is not False and spec is None and numeric:
        x = z[col].to_numpy(dtype=np.float64, na_value=np.nan)
        if np.any(np.isfinite(x) & (x % 1 != 0)):
            raise ValidationError(
                f"{arg_name(argument)}: column {col!r} holds fractional numbers; "
                f"{'PRAM redraws levels' if categorical else 'keys are levels'}, not "
                "continuous values.", code="WRONG_DTYPE")


def _check_strata(strata: Any, cols: Mapping[str, list[str]], z: pd.DataFrame) -> list[str]:
    if strata is None:
        return []
    strata = release_columns(strata, "strata", z)
    changed = sorted({c for cs in cols.values() for c in cs} & set(strata))
    if changed:
        raise ValidationError(f"{arg_name('strata')}: column(s) {changed} are also changed by "
                              "the remedies; strata must be released as they are.",
                              code="OPTION_CONFLICT")
    return strata


def _check_importance(importance: Any, keys: list[str]) -> np.ndarray:
    vals = [importance] if np.isscalar(importance) else list(importance)
    ok = (len(vals) == len(keys)
          and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in vals)
          and all(1 <= v <= len(keys) for v in vals))
    if not ok:
        raise ValidationError(f"{arg_name('importance')} must give each of the "
                              f"{len(keys)} key(s) of {arg_name('local_suppression')} a whole "
                              f"number from 1 (suppressed last) to {len(keys)}. Got {vals!r}.",
                              code="INVALID_ARGUMENT")
    return np.asarray(vals, dtype=np.int64)


def _groups(z: pd.DataFrame, strata: list[str]) -> list[tuple[str | None, np.ndarray]]:
    """The rows of each stratum (its values joined by "-", and its row positions)."""
    if not strata:
        return [(None, np.arange(len(z)))]
    number = z.groupby(strata, dropna=False, sort=True, observed=True).ngroup().to_numpy()
    out = []
    for g in range(int(number.max(initial=-1)) + 1):
        rows = np.flatnonzero(number == g)
        out.append(("-".join(map(str, z[strata].iloc[rows[0]].tolist())), rows))
    return out


def _where(label: str | None, dataset: int, m: int) -> str:
    return ((f"stratum {label!r} of " if label is not None else "")
            + (f"synthetic dataset {dataset}" if m > 1 else "the release"))


# ---------------------------------------------------------------------------- PRAM
def invariant_matrix(counts: np.ndarray, pds: np.ndarray, alpha: float) -> np.ndarray:
    """sdcMicro's invariant PRAM matrix ``R_s = alpha P Q + (1 - alpha) I``.

    ``P`` has diagonal ``pds`` and each row's remaining mass spread evenly; ``Q`` is the
    backward matrix of ``P`` under the levels' frequencies ``counts`` (Bayes' rule), so that
    ``counts @ R_s = counts``: the expected frequencies are those released (Gouweleeuw et al.
    1998). A level no record holds is never drawn.
    """
    counts = np.asarray(counts, dtype=np.float64)
    L = counts.size
    if L == 1:
        return np.ones((1, 1))
    P = np.repeat(((1.0 - pds) / (L - 1))[:, None], L, axis=1)
    np.fill_diagonal(P, pds)
    p = counts / counts.sum()
    s = p @ P  # s[k] = sum_j p_j P[j, k], the probability of k after P
    with np.errstate(invalid="ignore", divide="ignore"):
        Q = np.where(s[:, None] > 0, P.T * p[None, :] / s[:, None], 0.0)
    return alpha * (P @ Q) + (1.0 - alpha) * np.eye(L)


def _codes(col: pd.Series, name: str, schema: Any) -> tuple[np.ndarray, list[Any]]:
    """A categorical column's level codes (-1 missing) and its levels: the schema's, else the
    sorted values held (as R's ``factor``)."""
    if schema is not None and name in schema.names and schema[name].levels is not None:
        from bayes_risk.data.validate import level_codes

        levels = list(schema[name].levels)
        return np.asarray(level_codes(col, levels, unknown="raise", column=name),
                          dtype=np.int64), levels
    codes, uniq = pd.factorize(col, sort=True, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64), list(uniq)


def _pram_step(datasets: list[pd.DataFrame], groups: list[Any], cols: list[str], schema: Any,
               settings: SdcMicroSpec, strata: list[str], rngs: list[Any]) -> dict[str, Any]:
    changed: dict[str, list[int]] = {c: [] for c in cols}
    matrices: dict[str, list[list[dict[str, Any]]]] = {c: [] for c in cols}
    for z, parts, rng in zip(datasets, groups, rngs, strict=True):
        for c in cols:
            code, levels = _codes(z[c], c, schema)
            new = code.copy()
            mats = []
            for label, rows in parts:
                x = code[rows]
                held = x[x >= 0]
                counts = np.bincount(held, minlength=len(levels))
                pds = rng.uniform(settings.pram_pd, 1.0, size=len(levels))
                R = invariant_matrix(counts, pds, settings.pram_alpha)
                out = x.copy()
                for i in np.flatnonzero(counts):
                    at = np.flatnonzero(x == i)
                    out[at] = rng.choice(len(levels), size=at.size, p=R[i] / R[i].sum())
                new[rows] = out
                mats.append({"stratum": label, "matrix": R.tolist()})
            changed[c].append(int((new != code).sum()))
            matrices[c].append(mats)
            z[c] = _recoded(z[c], code, new)
    levels_of = {c: [_level_to_json(v) for v in _codes(datasets[0][c], c, schema)[1]]
                 for c in cols}
    return {"operation": "pram", "columns": cols, "pd": settings.pram_pd,
            "alpha": settings.pram_alpha, "strata": strata or None, "levels": levels_of,
            "transition_matrices": matrices, "n_changed": changed}


def _recoded(col: pd.Series, code: np.ndarray, new: np.ndarray) -> pd.Series:
    """``col`` with level codes ``new``, each level written as the column writes it (a level
    drawn is one the stratum holds, so some record of the dataset shows it)."""
    values = col.to_numpy(dtype=object)
    uniq, first = np.unique(code, return_index=True)
    held = uniq >= 0
    rep = np.empty(int(uniq.max(initial=-1)) + 1, dtype=object)
    rep[uniq[held]] = values[first[held]]
    out = values.copy()
    ok = new >= 0
    out[ok] = rep[new[ok]]
    try:
        return pd.Series(out, index=col.index, name=col.name).astype(col.dtype)
    except (TypeError, ValueError):
        return pd.Series(out, index=col.index, name=col.name)


# ---------------------------------------------------------------------------- MDAV
def _seq_sum(v: np.ndarray) -> float:
    """The sum of ``v`` added left to right, as sdcMicro's loops add (numpy's ``sum`` adds
    pairwise, which differs in the last bits)."""
    return float(np.cumsum(v)[-1]) if v.size else 0.0


def mdav(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """MDAV microaggregation of the rows of ``x`` (NaN: missing), as sdcMicro's ``mdav()``.

    Each round takes the record farthest from the centroid of the records left, ``r``, and
    the one farthest from it, ``s``, and groups each with its ``k - 1`` nearest records left
    (one group around ``r`` when fewer than ``3 k`` remain); the last ``k`` to ``2 k - 1``
    records form one group (Domingo-Ferrer & Torra 2005). Distances are sdcMicro's: squared
    differences scaled by each column's variance, a missing value against an observed one
    counting the squared range, summed in single precision; the farthest record is the first
    in row order, and among records equally near the later row comes first, as sdcMicro's
    hash sort orders them.

    Returns
    -------
    (ndarray, ndarray)
        The aggregated values (the group mean of each column's observed values, NaN where
        ``x`` is) and each row's group number.
    """
    n, p = x.shape
    miss = np.isnan(x)
    x0 = np.where(miss, 0.0, x)  # a zero adds nothing to a sum taken left to right
    w = np.ones(p)
    spread = np.zeros(p, dtype=np.float32)
    for j in range(p):
        v = x[~miss[:, j], j]
        if v.size:
            var = _seq_sum(v * v) / v.size - (_seq_sum(v) / v.size) ** 2
            if var != 0:
                w[j] = 1.0 / var
            spread[j] = np.float32((v.max() - v.min()) ** 2 * w[j])

    def dist(xa: np.ndarray, ma: np.ndarray, ref: np.ndarray, ref_miss: np.ndarray
             ) -> np.ndarray:
        d = np.zeros(len(xa), dtype=np.float32)
        for j in range(p):
            diff = xa[:, j] - ref[j]
            term = (diff * diff * w[j]).astype(np.float32)
            term[ma[:, j] ^ ref_miss[j]] = spread[j]
            term[ma[:, j] & ref_miss[j]] = 0.0
            d += term  # float32 + float32: sdcMicro's single-precision accumulation
        return d

    def mean(xa: np.ndarray, ma: np.ndarray) -> np.ndarray:
        count = (~ma).sum(axis=0)
        total = np.cumsum(xa, axis=0)[-1]  # left to right, column by column
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / count, np.nan)

    res = np.full((n, p), np.nan)
    group = np.full(n, -1, dtype=np.int64)
    idx, xa, ma = np.arange(n), x0, miss
    g = 0
    while idx.size >= 2 * k:
        rounds = 1 if idx.size - 2 * k < k else 2
        centre = mean(xa, ma)
        far = int(idx[np.argmax(dist(xa, ma, np.nan_to_num(centre), np.isnan(centre)))])
        for _ in range(rounds):
            d = dist(xa, ma, x0[far], miss[far])
            nxt = int(idx[np.argmax(d)])
            # the k nearest, nearest first; among equals the later row first
            cut = np.partition(d, k - 1)[k - 1]
            near = np.flatnonzero(d <= cut)
            pos = near[np.lexsort((-idx[near], d[near]))[:k]]
            res[idx[pos]] = mean(xa[pos], ma[pos])
            group[idx[pos]] = g
            g += 1
            keep = np.ones(idx.size, dtype=bool)
            keep[pos] = False
            idx, xa, ma = idx[keep], xa[keep], ma[keep]
            far = nxt
    if idx.size:
        # sdcMicro divides the last group's sums by its size, missing values included (a
        # mean too small in a column with missing values); here by the values observed
        res[idx] = mean(xa, ma)
        group[idx] = g
    res[miss] = np.nan
    return res, group


def _sorted_groups(y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """One column in groups of ``k`` consecutive sorted values, the last taking the rest
    (sdcMicro's ``mafast``, which ``microaggregation()`` runs for one variable whatever the
    method); missing values stay missing and join no group (sdcMicro would sort them last
    and give their group a missing mean)."""
    res = np.full(y.size, np.nan)
    group = np.full(y.size, -1, dtype=np.int64)
    obs = np.flatnonzero(~np.isnan(y))
    order = obs[np.argsort(y[obs], kind="stable")]
    n_groups = order.size // k
    g = np.minimum(np.arange(order.size) // k, n_groups - 1)
    sums = np.bincount(g, weights=y[order], minlength=n_groups)
    sizes = np.bincount(g, minlength=n_groups)
    res[order] = (sums / sizes)[g]
    group[order] = g
    return res, group


def _micro_step(datasets: list[pd.DataFrame], groups: list[Any], cols: list[str],
                codes: Mapping[str, list[float]], k: int, strata: list[str]) -> dict[str, Any]:
    n_groups, smallest = [], []
    for l, (z, parts) in enumerate(zip(datasets, groups, strict=True), start=1):
        x = np.column_stack([z[c].to_numpy(dtype=np.float64, na_value=np.nan) for c in cols])
        kinds = np.column_stack([missing_kinds(x[:, j], codes[c]) for j, c in
                                 enumerate(cols)])
        xs = np.where(kinds == 0, x, np.nan)  # missing values and codes join no mean
        out = x.copy()
        sizes: list[int] = []
        for label, rows in parts:
            held = int((~np.isnan(xs[rows])).any(axis=1).sum()) if len(cols) > 1 else int(
                (~np.isnan(xs[rows, 0])).sum())
            if held < k:
                raise ValidationError(
                    f"{arg_name('microaggregation')}: {_where(label, l, len(datasets))} holds "
                    f"{held} record(s) with a value, fewer than {arg_name('aggr', k)}; its "
                    "group would be smaller than the groups the remedy states. Give fewer "
                    f"{arg_name('strata')} or a smaller {arg_name('aggr')}.",
                    code="REMEDY_NOT_APPLICABLE")
            sub = xs[rows]
            if len(cols) == 1:
                agg, grp = _sorted_groups(sub[:, 0], k)
                agg = agg[:, None]
            else:
                agg, grp = mdav(sub, k)
            done = kinds[rows] == 0
            block = out[rows]
            block[done] = agg[done]
            out[rows] = block
            sizes.extend(np.bincount(grp[grp >= 0]).tolist())
        for j, c in enumerate(cols):
            z[c] = pd.Series(out[:, j], index=z.index, name=c)
        n_groups.append(len(sizes))
        smallest.append(int(min(sizes)))
    return {"operation": "microaggregation", "columns": cols,
            "method": "mdav" if len(cols) > 1 else "sorted groups (one column)",
            "aggr": k, "strata": strata or None, "n_groups": n_groups,
            "smallest_group": smallest}


# ---------------------------------------------------------------------------- noise
def _noise_step(datasets: list[pd.DataFrame], cols: list[str],
                codes: Mapping[str, list[float]], settings: SdcMicroSpec,
                rngs: list[Any]) -> dict[str, Any]:
    share, method = settings.noise / 100.0, settings.noise_method
    sds: dict[str, list[float]] = {c: [] for c in cols}
    for l, (z, rng) in enumerate(zip(datasets, rngs, strict=True), start=1):
        x = np.column_stack([z[c].to_numpy(dtype=np.float64, na_value=np.nan) for c in cols])
        obs = np.column_stack([missing_kinds(x[:, j], codes[c]) == 0
                               for j, c in enumerate(cols)])
        where = "" if len(datasets) == 1 else f" in synthetic dataset {l}"
        if method == "additive":
            for j, c in enumerate(cols):
                v = x[obs[:, j], j]
                if v.size < 2:
                    raise ValidationError(f"{arg_name('add_noise')}: column {c!r} has {v.size} "
                                          f"value(s){where}; its standard deviation needs 2.",
                                          code="REMEDY_NOT_APPLICABLE")
                sd = share * float(np.std(v, ddof=1))
                x[obs[:, j], j] = v + rng.normal(0.0, sd, size=v.size)
                sds[c].append(sd)
        else:
            complete = obs.all(axis=1)
            if complete.sum() < 2:
                raise ValidationError(f"{arg_name('add_noise')}: {int(complete.sum())} record(s) "
                                      f"have every column observed{where}; the covariance "
                                      "needs 2.", code="REMEDY_NOT_APPLICABLE")
            cov = share * np.cov(x[complete], rowvar=False)
            e = rng.multivariate_normal(np.zeros(len(cols)), cov, size=len(z), method="eigh")
            x = np.where(obs, x + e, x)
            for j, c in enumerate(cols):
                sds[c].append(float(np.sqrt(cov[j, j])))
        for j, c in enumerate(cols):
            z[c] = pd.Series(x[:, j], index=z.index, name=c)
    return {"operation": "add_noise", "columns": cols, "method": method,
            "noise": settings.noise, "noise_sd": sds}


# ---------------------------------------------------------------------------- suppression
def _key_codes(z: pd.DataFrame, keys: list[str], schema: Any) -> np.ndarray:
    """The keys as integer codes (-1 missing): levels for categorical keys, values else."""
    out = np.empty((len(z), len(keys)), dtype=np.int64)
    for j, c in enumerate(keys):
        spec = schema[c] if schema is not None and c in schema.names else None
        if spec is not None and spec.is_categorical:
            out[:, j] = _codes(z[c], c, schema)[0]
        else:
            out[:, j] = pd.factorize(z[c], sort=True, use_na_sentinel=True)[0]
    return out


def _default_importance(z: pd.DataFrame, keys: list[str], schema: Any) -> np.ndarray:
    """sdcMicro's default: keys ranked by their number of levels (a factor's levels, or the
    values held), fewest first (most important, suppressed last); ties in key order."""
    sizes = []
    for c in keys:
        spec = schema[c] if schema is not None and c in schema.names else None
        sizes.append(len(spec.levels) if spec is not None and spec.levels is not None
                     else int(z[c].nunique(dropna=True)))
    rank = np.empty(len(keys), dtype=np.int64)
    rank[np.argsort(sizes, kind="stable")] = np.arange(1, len(keys) + 1)
    return rank


def suppress(codes: np.ndarray, k: int, importance: np.ndarray) -> np.ndarray:
    """Which key values sdcMicro's ``localSuppression()`` suppresses to reach k-anonymity.

    ``codes`` holds one integer per record and key (-1 missing, which matches every value).
    Cells of more than ``k`` records (a missing value counting as a value of its own) set
    their later records aside, untouched; among the rest, each record of fewer than ``k``
    matches (sdcMicro's ``freqCalc``), the rarest first, has one value suppressed: in the
    least important key where one of its nearest records (fewest keys observed in both and
    different) differs; and again until every record has ``k`` matches or more.

    Returns
    -------
    ndarray of bool, shape of ``codes``
        The values suppressed.
    """
    from bayes_risk.disclosure.original_risk import _combine, _frequencies

    n, p = codes.shape
    # sdcMicro sets each missing value to unique(key)[1] of the missing values themselves:
    # missing stays missing, a value of its own in this grouping
    cell = _combine(codes + 1)
    order = np.lexsort((np.arange(n), cell))
    start = np.r_[0, np.flatnonzero(np.diff(cell[order])) + 1]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.repeat(start, np.diff(np.r_[start, n]))
    kept = np.flatnonzero(rank < k)  # in row order
    mat = codes[kept].copy()
    out = np.zeros((kept.size, p), dtype=bool)
    tried = np.argsort(-importance, kind="stable")  # the least important key first
    ones = np.ones(kept.size)
    while True:
        miss = mat < 0
        f, _ = _frequencies(np.where(miss, 0, mat), miss, ones, True)
        problem = np.flatnonzero(f < k)
        if not problem.size:
            break
        for i in problem[np.argsort(f[problem], kind="stable")]:
            row = mat[i]
            on = np.flatnonzero(row >= 0)
            # keys observed in both records and different (sdcMicro's cpp_calcSuppInds)
            d = np.count_nonzero((mat[:, on] != row[on]) & (mat[:, on] >= 0), axis=1)
            ids = np.flatnonzero(d == d[d > 0].min())
            for j in tried:
                if row[j] >= 0 and np.any((mat[ids, j] >= 0) & (mat[ids, j] != row[j])):
                    mat[i, j] = -1
                    out[i, j] = True
                    break
    full = np.zeros((n, p), dtype=bool)
    full[kept] = out
    return full


def _suppression_step(datasets: list[pd.DataFrame], groups: list[Any], keys: list[str], k: int,
                      importance: np.ndarray, schema: Any, strata: list[str]
                      ) -> dict[str, Any]:
    n_supp: dict[str, list[int]] = {c: [] for c in keys}
    for l, (z, parts) in enumerate(zip(datasets, groups, strict=True), start=1):
        codes = _key_codes(z, keys, schema)
        hit = np.zeros(codes.shape, dtype=bool)
        for label, rows in parts:
            if rows.size < k:
                raise ValidationError(
                    f"{arg_name('local_suppression')}: {_where(label, l, len(datasets))} holds "
                    f"{rows.size} record(s), fewer than {arg_name('k', k)}: no suppression "
                    f"makes it {k}-anonymous. Give fewer {arg_name('strata')} or a smaller "
                    f"{arg_name('k')}.", code="REMEDY_NOT_APPLICABLE")
            hit[rows] = suppress(codes[rows], k, importance)
        for j, c in enumerate(keys):
            if hit[:, j].any():
                col = z[c].copy()
                if pd.api.types.is_integer_dtype(col) or pd.api.types.is_bool_dtype(col):
                    col = col.astype(np.float64)
                col[hit[:, j]] = None
                z[c] = col
            n_supp[c].append(int(hit[:, j].sum()))
    return {"operation": "local_suppression", "keys": keys, "k": k,
            "importance": importance.tolist(), "strata": strata or None,
            "n_suppressed": n_supp}
