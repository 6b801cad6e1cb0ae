"""Linkability risk as anonymeter defines it (Giomi et al. 2023): :doc:`/methods/attacks`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any

import numpy as np
import pandas as pd

from bayes_risk._attack_specs import parse_column_lists, two_tables
from bayes_risk._constraints import Interval, check_params, check_value, checked
from bayes_risk._rng import RandomSeed, as_generator
from bayes_risk._specs import argument_checks, cli_option
from bayes_risk.attacks._inputs import (
    AttackInputs,
    attack_inputs,
    code_table,
    group_column,
    result_fields,
)
from bayes_risk.attacks.rates import (
    SuccessRate,
    check_confidence_level,
    group_labels,
    group_rows,
    rate_columns,
    success_rate,
)
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import require_distinct
from bayes_risk.exceptions import ValidationError, arg_name, on_command_line
from bayes_risk.results.attacks import LinkabilityResult

__all__ = ["linkability_risk", "nearest_rows"]

#: distance cells (targets × synthetic rows) per block (memory: ~8 bytes a cell)
_BLOCK_CELLS = 1 << 21


def _distances(T: np.ndarray, S: np.ndarray, is_cat: np.ndarray, scale: np.ndarray
               ) -> np.ndarray:
    """Gower-type distance of every target row to every synthetic row ``[len(T), len(S)]``
    (a missing cell is a value of its own)."""
    d = np.zeros((T.shape[0], S.shape[0]))
    for j in range(T.shape[1]):
        a, b = T[:, j, None], S[None, :, j]
        na, nb = np.isnan(a), np.isnan(b)
        if is_cat[j]:
            diff = (a != b).astype(np.float64)
        else:
            diff = np.abs(a - b) * scale[j]
        d += np.where(na & nb, 0.0, np.where(na | nb, 1.0, diff))
    return d


def nearest_rows(T: np.ndarray, S: np.ndarray, is_cat: np.ndarray, scale: np.ndarray, k: int,
                 seeds: Sequence[np.random.SeedSequence]) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest synthetic rows of each target row, nearest first; equally distant rows
    in the random order of the synthetic rows that target ``i`` draws from ``seeds[i]`` (so that
    the answer depends neither on the blocks nor on the release's row order).

    Returns
    -------
    idx : int array ``[len(T), k]``
    tied : bool array ``[len(T)]``
        Whether equally distant rows were ordered at random (among the ``k``, or the ``k``-th
        and the next): which rows are the ``j`` nearest, for some ``j <= k``, was then drawn.
    """
    n, ns = T.shape[0], S.shape[0]
    idx = np.empty((n, k), dtype=np.int64)
    tied = np.zeros(n, dtype=bool)
    step = max(1, _BLOCK_CELLS // max(ns, 1))
    for s in range(0, n, step):
        d = _distances(T[s:s + step], S, is_cat, scale)
        for r in range(d.shape[0]):
            row = d[r]
            kth = np.partition(row, k - 1)[k - 1]
            cand = np.flatnonzero(row <= kth)
            dist = row[cand]
            if cand.size > k or np.unique(dist).size < cand.size:
                order = np.random.default_rng(seeds[s + r]).random(ns)[cand]
                cand = cand[np.lexsort((order, dist))]
                tied[s + r] = True
            else:
                cand = cand[np.argsort(dist)]
            idx[s + r] = cand[:k]
    return idx, tied


def _first_link(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Smallest ``k`` at which the first ``k`` of ``a[i]`` and of ``b[i]`` share a row (0: none
    within the ``K`` given)."""
    n, K = a.shape
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        pos_a = {int(v): j for j, v in enumerate(a[i])}
        best = K + 1
        for j, v in enumerate(b[i]):
            if int(v) in pos_a:
                best = min(best, max(j, pos_a[int(v)]) + 1)
        out[i] = best if best <= K else 0
    return out


def _check_aux(aux_columns: Any) -> tuple[list[str], list[str]]:
    a, b = two_tables(aux_columns, "aux_columns")
    for part in (a, b):
        require_distinct(part, "aux_columns")
    return a, b


def _scale(X: np.ndarray, is_cat: np.ndarray) -> np.ndarray:
    """``1 / range`` of each numeric column of ``X`` (0 for a constant one, 1 for categorical)."""
    out = np.ones(X.shape[1])
    for j in np.flatnonzero(~is_cat):
        x = X[:, j][~np.isnan(X[:, j])]
        r = float(x.max() - x.min()) if x.size else 0.0
        out[j] = 1.0 / r if r > 0 else 0.0
    return out


def linkability_risk(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    aux_columns: Annotated[tuple[Sequence[str], Sequence[str]], cli_option(
        "--linkability", "the columns of the intruder's two tables, each a comma-separated list, "
        "e.g. Age,Urban,Marital Income,Expenditure (without it linkability is not run)", nargs=2,
        metavar=("COLS_A", "COLS_B"), parse=parse_column_lists, group="linkability")],
    holdout: pd.DataFrame | None = None,
    n_attacks: int | None = 500,
    n_neighbors: Annotated[int, cli_option(
        "--n-neighbors", "nearest synthetic rows that may link the two parts of a record "
        "(default 1); the risk is given for every k up to K", type=int, metavar="K",
        group="linkability") | checked(Interval(int, 1))] = 1,
    schema: Schema | None = None,
    categorical: Iterable[str] | None = None,
    confidence_level: float = 0.95,
    random_seed: RandomSeed = None,
    groups: str | None = None,
) -> LinkabilityResult:
    """Linkability risk of a synthetic release, as anonymeter measures it.

    Method and references: :doc:`/methods/attacks`.

    Parameters
    ----------
    original, synthetic, holdout, schema, categorical, confidence_level
        As in :func:`~bayes_risk.attacks.singling_out_risk`.
    aux_columns : (sequence of str, sequence of str)
        The columns of the intruder's two tables.
    n_attacks : int or None
        Records attacked in each of the main and control attacks (``None``: as many as the
        smaller of the original and the holdout holds).
    n_neighbors : int
        ``K``, the nearest rows that may link; the table gives the risk for every ``k <= K``.
    random_seed : int, Generator or None
        Seeds the records attacked, the order of equally distant rows and the baseline.
    groups : str, optional
        A categorical column: the risk of each group of attacked records with one of its
        levels too (at ``n_neighbors``; anonymeter's ``risk_for_groups``), in ``by_group``.

    Returns
    -------
    LinkabilityResult
        ``table`` (one row per dataset and ``k``), ``records``, ``by_group`` (with ``groups``),
        ``settings``, ``warnings``.

    Raises
    ------
    ValidationError, SchemaError
        As :func:`~bayes_risk.attacks.singling_out_risk`; ``n_attacks`` larger than the
        original or the holdout.

    Examples
    --------
    >>> res = linkability_risk(train, syn, aux_columns=(["Age", "Urban"], ["Income"]),
    ...                        holdout=control, n_neighbors=5, random_seed=1)  # doctest: +SKIP
    >>> res.headline()[["dataset", "n_neighbors", "risk", "ci_low", "ci_high"]]  # doctest: +SKIP
    """
    aux_a, aux_b = _check_aux(aux_columns)
    K = check_params(dict(n_neighbors=n_neighbors),
                     argument_checks(linkability_risk))["n_neighbors"]
    level = check_confidence_level(confidence_level)
    names = list(original.columns) if schema is None else list(schema.names)
    group_column(groups, names)
    cols = list(dict.fromkeys([*aux_a, *aux_b, *([] if groups is None else [groups])]))
    inp = attack_inputs(original, synthetic, holdout, columns=cols, schema=schema,
                        categorical=categorical, argument="aux_columns")
    sch = inp.schema
    labels = None if groups is None else group_labels(sch, groups)
    n_att = _n_attacks(n_attacks, inp)
    small = [l for l, z in enumerate(inp.datasets, start=1) if len(z) < K]
    if small:
        raise ValidationError(
            f"n_neighbors={K} exceeds the rows of synthetic dataset {small[0]} "
            f"({len(inp.datasets[small[0] - 1])}); give n_neighbors <= the rows of every "
            "synthetic dataset.")
    from bayes_risk._memory import check_memory

    # each attacked record's K nearest rows in each table, for the original, the holdout and
    # the random baseline (six [n_attacks, K] arrays), and a row of the table for every k
    check_memory(48.0 * n_att * K + 1000.0 * K * len(inp.datasets),
                 f"{arg_name('n_attacks')} or {arg_name('n_neighbors')}",
                 what=f"the {K:,} nearest synthetic rows of {n_att:,} attacked records")
    is_cat = np.array([s.is_categorical for s in sch])
    part = [np.array([sch.names.index(c) for c in aux]) for aux in (aux_a, aux_b)]

    rng = as_generator(random_seed)
    t_rng, ds_parent = rng.spawn(2)
    roles = [("original", inp.original)] + ([] if inp.holdout is None
                                            else [("holdout", inp.holdout)])
    attacked = {role: np.sort(g.choice(len(t), size=n_att, replace=False))
                for (role, t), g in zip(roles, t_rng.spawn(2), strict=False)}
    coded = {role: code_table(t, sch)[attacked[role]] for role, t in roles}

    rows: list[dict[str, Any]] = []
    grouped: list[dict[str, Any]] = []
    recs: list[pd.DataFrame] = []
    flagged: dict[str, list[str]] = {}
    ds_rngs = ds_parent.spawn(len(inp.datasets))
    for l, (z, ds_rng) in enumerate(zip(inp.datasets, ds_rngs, strict=True), start=1):
        S = code_table(z, sch)
        role_rng = dict(zip(("original", "holdout", "baseline"), ds_rng.spawn(3), strict=True))
        first, tied = {}, {}
        for role, _ in roles:
            first[role], tied[role] = _links(coded[role], S, part, is_cat, K, role_rng[role])
        b_rng = role_rng["baseline"]
        rand = [np.array([b_rng.choice(len(S), size=K, replace=False) for _ in range(n_att)])
                for _ in range(2)]
        first_base = _first_link(*rand)
        for k in range(1, K + 1):
            row, r_base = _k_row(l, k, K, first, first_base, tied, n_att, level, flagged)
            rows.append(row)
        if labels is not None:  # linked within the K nearest rows, against the K baseline
            g = sch.names.index(groups)
            grouped += group_rows(
                {"dataset": l, "n_neighbors": K},
                (coded["original"][:, g], first["original"] >= 1),
                None if "holdout" not in first else (coded["holdout"][:, g],
                                                     first["holdout"] >= 1),
                r_base, labels, level)
        for role, _ in roles:
            recs.append(pd.DataFrame({
                "dataset": l, "role": role, "row": attacked[role],
                "linked_at": pd.Series(first[role], dtype="Int64").mask(first[role] == 0),
                "tied": tied[role]}))
    settings = {"aux_columns": [aux_a, aux_b], "n_attacks": n_att, "n_neighbors": K}
    return LinkabilityResult(
        table=pd.DataFrame(rows), records=pd.concat(recs, ignore_index=True),
        **result_fields(inp, flagged, _WHY, settings, level=level, random_seed=random_seed,
                        groups=groups, grouped=grouped))


def _n_attacks(n_attacks: int | None, inp: AttackInputs) -> int:
    """Records attacked in each of the main and control attacks: ``n_attacks``, at most the
    records of the original and of the holdout (``None``: as many as the smaller holds)."""
    sizes = [len(inp.original)] + ([] if inp.holdout is None else [len(inp.holdout)])
    if n_attacks is None:
        return min(sizes)
    n_att = check_value(n_attacks, Interval(int, 1), "n_attacks")
    if n_att > min(sizes):
        raise ValidationError(
            f"n_attacks={n_att} exceeds the records available: the original has "
            f"{sizes[0]:,}" + ("" if len(sizes) == 1 else f" and the holdout {sizes[1]:,}")
            + f"; give n_attacks <= {min(sizes)} ("
            + ("leave it out" if on_command_line() else "or None") + " for all of them).")
    return n_att


def _k_row(l: int, k: int, K: int, first: dict[str, np.ndarray], first_base: np.ndarray,
           tied: dict[str, np.ndarray], n_att: int, level: float,
           flagged: dict[str, list[str]]) -> tuple[dict[str, Any], SuccessRate]:
    """The table's row of dataset ``l`` at ``k`` neighbours: the records linked within the
    first ``k`` by the main and control attacks (``first``, by role) and by the baseline
    (``first_base``), their rates and the shares of tied rows. At ``k == K``, flags an attack
    no better than the baseline and a control always linked. Also returns the baseline's rate
    (the groups' reference)."""
    def linked(f: np.ndarray) -> int:
        return int(((f >= 1) & (f <= k)).sum())

    n_main, n_base = linked(first["original"]), linked(first_base)
    n_ctrl = linked(first["holdout"]) if "holdout" in first else None
    r_main = success_rate(n_main, n_att, level)
    r_base = success_rate(n_base, n_att, level)
    r_ctrl = None if n_ctrl is None else success_rate(n_ctrl, n_att, level)
    if k == K and r_base.rate >= r_main.rate:
        flagged.setdefault("ATTACK_NOT_BETTER_THAN_BASELINE", []).append(
            f"dataset {l}: main {r_main.rate:.3g}, baseline {r_base.rate:.3g}")
    if k == K and n_ctrl is not None and n_ctrl >= n_att:
        flagged.setdefault("CONTROL_ALWAYS_SUCCEEDS", []).append(f"dataset {l}")
    return {
        "dataset": l, "n_neighbors": k, "n_attacks": n_att, "n_main": n_main,
        "n_control": np.nan if n_ctrl is None else n_ctrl, "n_baseline": n_base,
        **rate_columns(r_main, r_ctrl, r_base),
        "share_tied_main": float(tied["original"].mean()),
        "share_tied_control": (float(tied["holdout"].mean()) if "holdout" in tied
                               else np.nan)}, r_base



def _links(T: np.ndarray, S: np.ndarray, part: list[np.ndarray], is_cat: np.ndarray, K: int,
           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Of each attacked record (``T``, coded), the first of its ``K`` nearest synthetic rows
    (``S``) in both parts of the columns that links it (:func:`_first_link`), and whether a tie
    at the ``K``-th distance was broken in either part."""
    n_att = len(T)
    near = []
    ties = np.zeros(n_att, dtype=bool)
    # a random order of the synthetic rows per record and part: each of the intruder's tables
    # breaks its ties on its own (anonymeter's sorts do, in effect)
    seeds = np.random.SeedSequence(rng.integers(2**63, size=4).tolist()).spawn(2 * n_att)
    for h, cols_h in enumerate(part):
        Th, Sh = T[:, cols_h], S[:, cols_h]
        scale = _scale(np.concatenate([Sh, Th]), is_cat[cols_h])
        idx, t_h = nearest_rows(Th, Sh, is_cat[cols_h], scale, K, seeds[h * n_att:(h + 1) * n_att])
        near.append(idx)
        ties |= t_h
    return _first_link(*near), ties


#: what each condition means (the warning names the datasets it concerns)
_WHY = {
    "ATTACK_NOT_BETTER_THAN_BASELINE": "the main attack links no more records than random "
    "neighbours do: the attack may be too weak for these columns, and a low risk then says "
    "little (anonymeter: 'Analysis results cannot be trusted')",
    "CONTROL_ALWAYS_SUCCEEDS": "every record of the holdout is linked: the risk beyond the "
    "control attack is undefined (nan)"}
