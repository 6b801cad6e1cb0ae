"""Empirical disclosure measures of synthetic data, as synthpop 1.9-2 computes them.

Definitions: :doc:`/methods/disclosure`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import (
    InstanceOf,
    Interval,
    Options,
    SequenceOf,
    Within,
    check_params,
    check_value,
)
from bayes_risk._specs import as_spec, cli_option, is_integer
from bayes_risk.data.coding import coded_as_released
from bayes_risk.data.levels import normalise_level
from bayes_risk.data.normalise import as_synthetic_list
from bayes_risk.data.provenance import duplicate_codes
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import require_frame
from bayes_risk.disclosure._encode import (
    MISSING_LABEL,
    EncodedVar,
    column_names,
    combine_keys,
    encode_var,
    level_labels,
    resolve_inputs,
)
from bayes_risk.disclosure._rcompat import c_sort, r_as_character, r_format
from bayes_risk.disclosure.specs import CONVENTIONS, ExclusionSpec
from bayes_risk.exceptions import CALLER, DataWarning, ValidationError
from bayes_risk.results.disclosure import (
    REPU_MEASURES,
    DisclosureByTarget,
    DisclosureMeasures,
    ReplicatedUniques,
)

#: the measures' treatment of missing values, as recorded in the results' settings
DISCLOSURE_MISSING_POLICY = (
    "synthpop disclosure(): an empty cell is the level 'Missing' of its column (use_target_na / "
    "use_keys_na = False leave its records out of the tables); a declared missing-value code "
    "is a value, and a group of its own when the column is grouped")

__all__ = ["DisclosureMeasures", "DisclosureByTarget", "ReplicatedUniques", "disclosure_measures",
           "ExclusionSpec", "replicated_uniques", "key_anonymity", "IDENT_MEASURES",
           "ATTRIB_MEASURES", "CAP_MEASURES", "REPU_MEASURES"]

IDENT_MEASURES = ("UiO", "UiS", "UiOiS", "repU")
ATTRIB_MEASURES = ("Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO", "max_denom", "mean_denom")
CAP_MEASURES = ("baseCAPd", "CAPd", "CAPs", "DCAP", "TCAP")
_COMPAT = (None, "synthpop")


#: a number of groups of a numeric column (0: not grouped)
_NGROUPS = [Interval(int, 2), Options((0,), listed=True)]

#: the scalar arguments of :func:`disclosure_measures`, checked at its entry
_CHECKS = {
    "ngroups_target": [*_NGROUPS, None],
    "k_anonymity": SequenceOf(Interval(int, 2), "integers >= 2", min_len=0),
    "compat": Options(_COMPAT, listed=True),
    "target": InstanceOf(str, "one column name"),
}
#: :func:`disclosure_measures`'s arguments against each other
_RELATIONS = (Within("target", "keys", apart=True),)


def _key_groups(ngroups_keys: Any, keys: list[str], schema: Schema) -> list[int | None]:
    """Number of groups of every key (``None``: not grouped)."""
    if ngroups_keys is None:
        return [None] * len(keys)

    def one(g: Any, what: str) -> int | None:
        return check_value(g, _NGROUPS, what) or None

    if is_integer(ngroups_keys):
        g = one(ngroups_keys, "ngroups_keys")
        # one number applies to the numeric keys only, as in synthpop
        return [None if schema[k].is_categorical else g for k in keys]
    vals = list(ngroups_keys)
    if len(vals) != len(keys):
        raise ValidationError(
            f"ngroups_keys must be one number or one per key ({len(keys)}). Got {len(vals)} "
            "values.")
    return [one(g, f"ngroups_keys for key {k!r}") for k, g in zip(keys, vals, strict=True)]


def _r_rows(present: np.ndarray, var: EncodedVar) -> list[int]:
    """Rows of R's ``table(target, keys)`` (codes, in R's order) for one table."""
    if var.na_code in present:  # tomissing(): factor(as.character(x)) -> used levels, text order
        return c_sort_codes([int(c) for c in present], var.labels)
    if var.kind in ("categorical", "grouped"):  # factor with fixed levels: all of them
        return list(range(var.na_code))
    return [int(c) for c in present]  # factor(numeric): numeric order (codes are ordered)


def c_sort_codes(codes: list[int], labels: list[str]) -> list[int]:
    order = c_sort([labels[c] for c in codes])
    by_label = {labels[c]: c for c in codes}
    return [by_label[s] for s in order]


def _positions(td: np.ndarray, ts: np.ndarray, var: EncodedVar, compat: bool
               ) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """Row position of every target code in the original's and the synthetic table: one row per
    level, or in compat mode where synthpop puts them (:doc:`/methods/compatibility`)."""
    n = var.n_codes
    if not compat:
        pos = np.arange(n)
        return pos, pos, var.labels, var.labels
    rows_d = _r_rows(np.unique(td), var)
    rows_s = _r_rows(np.unique(ts), var)
    sd, ss = set(rows_d), set(rows_s)
    union = sorted(sd | ss)
    if sd - ss:
        rows_s = c_sort_codes(union, var.labels)
    if ss - sd:
        rows_d = c_sort_codes(union, var.labels)
    posd = np.full(n, -1, dtype=np.int64)
    poss = np.full(n, -1, dtype=np.int64)
    posd[rows_d] = np.arange(len(rows_d))
    poss[rows_s] = np.arange(len(rows_s))
    return posd, poss, [var.labels[c] for c in rows_d], [var.labels[c] for c in rows_s]


def _one_dataset(
    kd: np.ndarray, ks: np.ndarray, td: np.ndarray, ts: np.ndarray, K: int, key_na: np.ndarray,
    var: EncodedVar, *, compat: bool, denom_lim: int, exclude_ov_denom_lim: bool,
    not_targetlev: set[str], use_target_na: bool, use_keys_na: list[bool],
    exclude_cells: list[tuple[np.ndarray, str]],
) -> dict[str, float]:
    Nd, Ns = float(len(kd)), float(len(ks))
    posd, poss, lab_d, lab_s = _positions(td, ts, var, compat)
    P = max(len(lab_d), len(lab_s))
    ud, nd = np.unique(posd[td] * K + kd, return_counts=True)
    us, ns = np.unique(poss[ts] * K + ks, return_counts=True)
    nd = nd.astype(np.float64)
    ns = ns.astype(np.float64)
    kcd, rcd = ud % K, ud // K
    kcs, rcs = us % K, us // K
    kd0 = np.bincount(kcd, weights=nd, minlength=K)
    ks0 = np.bincount(kcs, weights=ns, minlength=K)
    td0 = np.bincount(rcd, weights=nd, minlength=P)
    # the synthetic cell at the same (row position, key) as each original cell
    idx = np.minimum(np.searchsorted(us, ud), max(len(us) - 1, 0))
    match = (us[idx] == ud) if len(us) else np.zeros(len(ud), dtype=bool)

    # cells that enter each measure, from the tables before exclusions (as synthpop)
    did = nd == kd0[kcd]
    dis = ns == ks0[kcs]
    in_s = ks0[kcd] > 0
    anydis = np.bincount(kcs[dis], minlength=K) > 0
    tab_dis = anydis[kcd]
    disco = in_s & match & dis[idx]
    disdio = disco & did

    # exclusions: target levels, missing target / keys, cells over denom_lim
    def keep(rows: np.ndarray, kc: np.ndarray, vals: np.ndarray, labels: list[str]) -> np.ndarray:
        k = np.ones(len(rows), dtype=bool)
        lab = np.asarray(labels, dtype=object)[rows] if len(rows) else np.empty(0, dtype=object)
        if not_targetlev:
            k &= ~np.isin(lab, list(not_targetlev))
        if not use_target_na and bool(np.any(td == var.na_code)):
            k &= lab != MISSING_LABEL
        for i, use in enumerate(use_keys_na):
            if not use:
                k &= ~key_na[kc, i]
        for key_mask, tlab in exclude_cells:
            k &= ~(key_mask[kc] & (lab == tlab))
        if exclude_ov_denom_lim:
            k &= vals <= denom_lim
        return k

    nd_x = np.where(keep(rcd, kcd, nd, lab_d), nd, 0.0)
    ns_x = np.where(keep(rcs, kcs, ns, lab_s), ns, 0.0)
    kd = np.bincount(kcd, weights=nd_x, minlength=K)
    ks = np.bincount(kcs, weights=ns_x, minlength=K)

    out: dict[str, float] = {
        "UiO": np.sum(kd == 1) / Nd * 100,
        "UiS": np.sum(ks == 1) / Ns * 100,
        "UiOiS": np.sum((kd == 1) & (ks0 > 0)) / Nd * 100,
        "repU": np.sum((kd == 1) & (ks == 1)) / Nd * 100,
        "Dorig": nd_x[did].sum() / Nd * 100,
        "Dsyn": ns_x[dis].sum() / Ns * 100,
        "iS": nd_x[in_s].sum() / Nd * 100,
        "DiS": nd_x[tab_dis].sum() / Nd * 100,
        "DiSCO": nd_x[disco].sum() / Nd * 100,
        "DiSDiO": nd_x[disdio].sum() / Nd * 100}
    dv = nd_x[disco]
    out["max_denom"] = float(dv.max()) if dv.size else 0.0
    out["mean_denom"] = float(dv[dv > 0].mean()) if np.any(dv > 0) else math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        p_d = np.where(kd[kcd] > 0, nd_x / kd[kcd], 0.0)
        p_s = np.where(ks[kcs] > 0, ns_x / ks[kcs], 0.0)
    out["baseCAPd"] = float(np.sum((td0 / Nd) ** 2) * 100)
    out["CAPd"] = float(np.sum(p_d * nd_x) / Nd * 100)
    out["CAPs"] = float(np.sum(p_s * ns_x) / Ns * 100)
    out["DCAP"] = float(np.sum(np.where(match, p_s[idx], 0.0) * nd_x) / Nd * 100)
    tcap_den = kd[ks > 0].sum()
    out["TCAP"] = float(dv.sum() / tcap_den * 100) if tcap_den > 0 else math.nan
    out["n_over_denom_lim"] = float(nd[disco & (nd > denom_lim)].sum())
    out["n_excluded_original"] = float(nd.sum() - nd_x.sum())
    out["n_excluded_synthetic"] = float(ns.sum() - ns_x.sum())
    return {k: float(v) for k, v in out.items()}


def _repu_table(orig: np.ndarray, syn: list[np.ndarray]) -> pd.DataFrame:
    n_codes = int(max([orig.max(initial=-1), *[s.max(initial=-1) for s in syn]])) + 1
    cnt_o = np.bincount(orig, minlength=n_codes)
    rows = []
    for l, s in enumerate(syn, start=1):
        cnt_s = np.bincount(s, minlength=n_codes)
        u_s = cnt_s == 1
        rows.append({"syn": l, "Original": int(np.sum(cnt_o == 1)), "Synthetic": int(u_s.sum()),
                     "Synthetic uniques in original": int(np.sum(u_s & (cnt_o > 0))),
                     "Replicated uniques": int(np.sum(u_s & (cnt_o == 1))),
                     "n_original": len(orig), "n_synthetic": len(s)})
    df = pd.DataFrame(rows)
    for name in REPU_MEASURES:
        tot = df["n_original"] if name == "Original" else df["n_synthetic"]
        df[f"{name} %"] = 100.0 * df[name] / tot
    return df


def _synthpop_key_text(tables: list[pd.DataFrame], keys: list[str], schema: Schema
                       ) -> np.ndarray:
    """The pasted key strings of synthpop's ``replicated.uniques()`` for every table: factor
    labels, and numeric keys ``format()``-padded per dataset when some key is a factor (as
    ``as.matrix`` of a data frame does), else R's ``as.character``."""
    any_factor = any(schema[k].is_categorical for k in keys)
    texts = []
    for t in tables:
        joined: pd.Series | None = None
        for k in keys:
            s = t[k]
            if schema[k].is_categorical:
                codes, uniq = pd.factorize(s, use_na_sentinel=True)
                lab = np.asarray([str(normalise_level(v)) for v in uniq] + ["NA"], dtype=object)
                part = lab[codes]  # the sentinel -1 picks "NA"
            else:
                v = s.to_numpy(dtype=np.float64)
                if any_factor:
                    part = np.asarray(["NA" if x is None else x for x in r_format(v)],
                                      dtype=object)
                else:
                    uv, inv = np.unique(v, return_inverse=True)
                    lab = np.asarray([r_as_character(x) for x in uv], dtype=object)
                    part = lab[inv.ravel()]
            col = pd.Series(part, dtype=object)
            joined = col if joined is None else joined + "|" + col
        texts.append(joined.to_numpy(dtype=object))
    return np.concatenate(texts) if texts else np.empty(0, dtype=object)


def _replicated(original: pd.DataFrame, datasets: list[pd.DataFrame], keys: list[str],
                schema: Schema, compat: bool,
                encoded: dict[str, EncodedVar] | None = None) -> ReplicatedUniques:
    orig, syn = combined_key_codes(original, datasets, keys, schema, compat, encoded)
    return ReplicatedUniques(keys=list(keys), table=_repu_table(orig, syn),
                             compat="synthpop" if compat else None)


def combined_key_codes(original: pd.DataFrame, datasets: list[pd.DataFrame], keys: list[str],
                       schema: Schema, compat: bool,
                       encoded: dict[str, EncodedVar] | None = None
                       ) -> tuple[np.ndarray, list[np.ndarray]]:
    """One integer code per record of the combined ``keys``, shared by the original and the
    datasets (``compat``: as synthpop's padded text): the original's, and each dataset's."""
    if compat:
        text = _synthpop_key_text([original, *datasets], keys, schema)
        codes = pd.factorize(text)[0].astype(np.int64)
    else:
        encoded = encoded or {}
        enc = [encoded.get(k) or encode_var(k, original, datasets, schema) for k in keys]
        o, s, _, _ = combine_keys(enc)
        codes = np.concatenate([o, *s])
    bounds = np.cumsum([0, len(original), *[len(z) for z in datasets]])
    return codes[: bounds[1]], [codes[bounds[l]: bounds[l + 1]]
                                for l in range(1, len(bounds) - 1)]


def key_anonymity(key_codes: np.ndarray, k_values: Sequence[int] = (2, 3, 5)) -> dict[str, Any]:
    """Sample uniques and k-anonymity violations (``f_k = 1``, ``f_k < k``) of records given
    their key-combination codes (sdcMicro's ``freqCalc`` counts; a missing key value is a level
    of its own rather than sdcMicro's wildcard)."""
    codes = np.asarray(key_codes, dtype=np.int64)
    n = int(codes.size)
    cnt = np.bincount(codes) if n else np.zeros(0, dtype=np.int64)
    fk = cnt[codes] if n else np.zeros(0, dtype=np.int64)
    su = int(np.sum(fk == 1))
    return {
        "n_records": n,
        "n_key_combinations": int(np.sum(cnt > 0)),
        "n_sample_uniques": su,
        "pct_sample_uniques": 100.0 * su / n if n else math.nan,
        "k_anonymity": {
            str(int(k)): {"n_violating": int(np.sum(fk < k)),
                          "pct_violating": 100.0 * float(np.sum(fk < k)) / n if n else math.nan}
            for k in k_values}}


def disclosure_measures(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    keys: Annotated[Sequence[str], cli_option(
        "--keys", "key columns (quasi-identifiers) combined into one key (required unless only "
        "--differencing is asked for)", nargs="+", metavar="COL")],
    target: Annotated[str, cli_option(
        "--target", "the attribute whose disclosure is measured (required with --keys)",
        metavar="COL")],
    schema: Schema | None = None,
    categorical: Iterable[str] | None = None,
    ngroups_target: Annotated[int | None, cli_option(
        "--ngroups-target", "group a numeric target into about N groups (quantiles of the pooled "
        "original and synthetic values); default: every distinct value is a level", type=int,
        metavar="N", group=CONVENTIONS)] = None,
    ngroups_keys: Annotated[int | Sequence[int] | None, cli_option(
        "--ngroups-keys", "group numeric keys likewise: one N for every numeric key, or one per "
        "key (0: not grouped)", nargs="+", type=int, metavar="N",
        parse=lambda given: given[0] if len(given) == 1 else given, group=CONVENTIONS)] = None,
    exclude: ExclusionSpec | None = None,
    k_anonymity: Annotated[Sequence[int], cli_option(
        "--k-anonymity", "k of the original's k-anonymity counts on the keys (default 2 3 5)",
        nargs="+", type=int, metavar="K", group=CONVENTIONS)] = (2, 3, 5),
    compat: Annotated[Literal["synthpop"] | None, cli_option(
        "--compat", "reproduce synthpop 1.9-2 exactly, including its misaligned tables for an "
        "ungrouped numeric target and its text comparison of replicated uniques",
        choices=("synthpop",), group=CONVENTIONS)] = None,
) -> DisclosureMeasures:
    """Identity, attribute and CAP disclosure measures of synthpop's ``disclosure()``
    (:doc:`/methods/disclosure`).

    Parameters
    ----------
    original : DataFrame
    synthetic : DataFrame, list of DataFrame or SyntheticData
        The ``m`` synthetic datasets (any number of rows; they need the keys and the target).
    keys : sequence of str
        Quasi-identifiers, combined into one key.
    target : str
        The attribute an intruder wants to learn.
    schema : Schema, optional
    categorical : iterable of str, optional
        Integer-coded columns to treat as categorical.
    ngroups_target : int, optional
        Group a numeric target into about this many groups (synthpop's ``ngroups_target``).
        Default: every distinct value is a level.
    ngroups_keys : int or sequence of int, optional
        The same for numeric keys: one number for all, or one per key (0: not grouped).
    exclude : ExclusionSpec, optional
        What the measures leave out (default: nothing, as synthpop's defaults).
    k_anonymity : sequence of int
        The ``k`` of the k-anonymity counts of ``key_baseline``.
    compat : {None, "synthpop"}
        ``"synthpop"`` reproduces synthpop 1.9-2 exactly (:doc:`/methods/compatibility`).

    Returns
    -------
    DisclosureMeasures
        ``ident``, ``attrib``, ``allCAPs`` (one row per dataset, synthpop's column names),
        ``replicated_uniques``, ``key_baseline``, ``diagnostics``, ``target_levels``,
        ``settings``, ``warnings``.

    Raises
    ------
    ValidationError, SchemaError
        Unknown or duplicated columns, target among the keys, missing columns, values outside
        a categorical column's levels, bad options.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> d = pd.DataFrame({"sex": [1, 1, 2, 2, 2], "age": [30, 30, 40, 40, 50],
    ...                   "inc": [1, 2, 3, 3, 4]})
    >>> s = pd.DataFrame({"sex": [1, 2, 2, 2, 2], "age": [30, 40, 40, 50, 50],
    ...                   "inc": [1, 3, 3, 4, 5]})
    >>> r = disclosure_measures(d, [s], keys=["sex", "age"], target="inc", categorical=["sex"])
    >>> float(r.ident["UiO"][0]), float(r.attrib["DiSCO"][0]), float(r.allCAPs["TCAP"][0])
    (20.0, 60.0, 60.0)
    """
    keys = column_names([keys] if isinstance(keys, str) else keys, "keys")
    ngroups = check_params(dict(ngroups_target=ngroups_target, k_anonymity=k_anonymity,
                                compat=compat, target=target, keys=keys), _CHECKS,
                           relations=_RELATIONS)["ngroups_target"] or None
    ex = as_spec(exclude, ExclusionSpec, "exclude")
    is_compat = compat == "synthpop"
    # record i is never paired with row i: the same records in another order are the same
    datasets, source = as_synthetic_list(synthetic, original=original, row_order=False)
    # the intruder codes the keys they know at the release's published bounds (the target is
    # compared at its true value)
    original, coded = coded_as_released(original, source, keys)
    carried = None if source is None else source.schema
    sub = resolve_inputs(original, datasets, carried, schema, categorical, [*keys, target],
                         target=True, recoded=() if source is None else source.recoded_columns)
    u = ex.use_keys_na
    use_keys = [u] * len(keys) if isinstance(u, bool) else list(u)
    if len(use_keys) != len(keys):
        raise ValidationError(
            f"ExclusionSpec.use_keys_na must be one logical value or one per key "
            f"({len(keys)}). Got {len(use_keys)} values.", code="INVALID_ARGUMENT")

    key_groups = _key_groups(ngroups_keys, keys, sub)
    enc_keys = [encode_var(k, original, datasets, sub, ngroups=g, compat=is_compat,
                           argument=f"ngroups_keys for key {k!r}")
                for k, g in zip(keys, key_groups, strict=True)]
    kd, ks_list, key_na, key_codes = combine_keys(enc_keys)
    K = int(key_na.shape[0])
    tvar = encode_var(target, original, datasets, sub, ngroups=ngroups, compat=is_compat)
    excluded = level_labels(ex.not_targetlev, tvar, "ExclusionSpec.not_targetlev")
    cells = _excluded_cells(ex.exclude_combinations, keys, enc_keys, key_codes, tvar)

    rows = []
    for l, (ks, ts) in enumerate(zip(ks_list, tvar.syn, strict=True), start=1):
        r = _one_dataset(
            kd, ks, tvar.orig, ts, K, key_na, tvar, compat=is_compat, denom_lim=ex.denom_lim,
            exclude_ov_denom_lim=ex.exclude_ov_denom_lim, not_targetlev=excluded,
            use_target_na=ex.use_target_na, use_keys_na=use_keys, exclude_cells=cells)
        r["syn"] = l
        r["n_synthetic"] = len(ks)
        rows.append(r)
    res = pd.DataFrame(rows)
    ident = res[["syn", *IDENT_MEASURES]].reset_index(drop=True)
    attrib = res[["syn", *ATTRIB_MEASURES]].reset_index(drop=True)
    caps = res[["syn", *CAP_MEASURES]].reset_index(drop=True)
    counts = ("n_over_denom_lim", "n_excluded_original", "n_excluded_synthetic")
    diag = res[["syn", "n_synthetic", *counts]].astype(
        {"n_synthetic": int, **dict.fromkeys(counts, np.int64)}).reset_index(drop=True)

    codes = [*duplicate_codes(datasets), *_target_warnings(target, tvar, caps)]

    # replicated uniques compare values: reuse the codes unless grouped / merged as R text
    reuse = {} if is_compat else {v.name: v for v in enc_keys if v.kind != "grouped"}
    if not is_compat and tvar.kind != "grouped":
        reuse[target] = tvar
    repu = _replicated(original, datasets, [*keys, target], sub, is_compat, reuse)
    baseline = key_anonymity(kd, k_anonymity)
    settings = {
        "ngroups_target": ngroups,
        "ngroups_keys": {k: g for k, g in zip(keys, key_groups, strict=True) if g},
        "key_breaks": {v.name: v.breaks.tolist() for v in enc_keys if v.breaks is not None},
        "target_breaks": None if tvar.breaks is None else tvar.breaks.tolist(),
        "denom_lim": ex.denom_lim,
        "exclude_ov_denom_lim": ex.exclude_ov_denom_lim,
        "not_targetlev": sorted(excluded),
        "exclude_combinations": [[str(a), str(b), str(c)] for a, b, c in
                                 ex.exclude_combinations],
        "use_target_na": ex.use_target_na,
        "use_keys_na": use_keys,
        # the missing-value policy, the declared codes and the missing values it met
        "missing_values": DISCLOSURE_MISSING_POLICY,
        "missing_codes": {c: list(sub[c].missing_codes) for c in [*keys, target]
                          if sub[c].missing_codes},
        "n_missing_original": {c: n for c in [*keys, target]
                               if (n := int(original[c].isna().sum()))},
        "k_anonymity": [int(k) for k in k_anonymity],
        "compat": compat,
        "column_types": {c: sub[c].type for c in [*keys, target]},
        "replicated_uniques_keys": [*keys, target],
        "keys_coded_as_released": coded}
    return DisclosureMeasures(
        keys=keys, target=target, ident=ident, attrib=attrib, allCAPs=caps,
        replicated_uniques=repu, key_baseline=baseline, diagnostics=diag,
        target_levels=list(tvar.labels), settings=settings, warnings=codes)


def _excluded_cells(combinations: Any, keys: list[str], enc_keys: list, key_codes: np.ndarray,
                    tvar: Any) -> list[tuple[np.ndarray, str]]:
    """``ExclusionSpec.exclude_combinations`` as (the original records of the key's level,
    the target's level) pairs (synthpop's ``exclude.keys``, ``exclude.keylevs``,
    ``exclude.targetlevs``)."""
    cells = []
    for kname, klev, tlev in combinations:
        if kname not in keys:
            raise ValidationError(
                f"ExclusionSpec.exclude_combinations: {kname!r} is not one of the keys {keys}.")
        j = keys.index(kname)
        kv = enc_keys[j]
        (klab,) = level_labels([klev], kv, f"ExclusionSpec.exclude_combinations (key {kname!r})")
        (tlab,) = level_labels([tlev], tvar, "ExclusionSpec.exclude_combinations (target)")
        lev_codes = [c for c, lab in enumerate(kv.labels) if lab == klab]
        cells.append((np.isin(key_codes[:, j], lev_codes), tlab))
    return cells


def _target_warnings(target: str, tvar: Any, caps: pd.DataFrame) -> list[str]:
    """Warn, and return the codes, of a numeric target whose values are mostly unique and of
    datasets whose TCAP is undefined."""
    codes = []
    n_levels = int(len(np.unique(tvar.orig)))
    if tvar.kind == "numeric" and n_levels > 0.5 * len(tvar.orig) and n_levels > 20:
        codes.append("TARGET_MOSTLY_UNIQUE")
        warnings.warn(
            f"target {target!r} is numeric with {n_levels} distinct values among "
            f"{len(tvar.orig)} original records; each value is a level, so the attribute "
            "measures count exact-value disclosure. Consider ngroups_target "
            "(TARGET_MOSTLY_UNIQUE).", DataWarning, skip_file_prefixes=CALLER)
    if caps["TCAP"].isna().any():
        codes.append("TCAP_UNDEFINED")
        warnings.warn(
            "TCAP is undefined (NaN) for dataset(s) "
            f"{caps.loc[caps['TCAP'].isna(), 'syn'].tolist()}: no original record has keys "
            "found in the synthetic data (TCAP_UNDEFINED).", DataWarning,
            skip_file_prefixes=CALLER)
    return codes


def replicated_uniques(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    keys: Sequence[str] | None = None,
    schema: Schema | None = None,
    categorical: Iterable[str] | None = None,
    compat: Literal["synthpop"] | None = None,
) -> ReplicatedUniques:
    """synthpop's ``replicated.uniques()``: synthetic uniques that are unique in the original.

    Parameters
    ----------
    original : DataFrame
    synthetic : DataFrame, list of DataFrame or SyntheticData
    keys : sequence of str, optional
        Columns that define a record (default: every column of ``original``).
    schema, categorical
        As in :func:`disclosure_measures`.
    compat : {None, "synthpop"}
        ``"synthpop"`` compares the keys as padded text (:doc:`/methods/compatibility`).

    Returns
    -------
    ReplicatedUniques

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"a": [1, 2, 2, 3], "b": [1, 1, 1, 2]})
    >>> s = pd.DataFrame({"a": [1, 2, 3, 3], "b": [1, 1, 2, 5]})
    >>> replicated_uniques(d, s).table[["Original", "Synthetic", "Replicated uniques"]]
       Original  Synthetic  Replicated uniques
    0         2          4                   2
    """
    check_value(compat, Options(_COMPAT, listed=True), "compat")
    require_frame(original, "original")
    keys = list(original.columns) if keys is None else column_names(keys, "keys")
    # record i is never paired with row i: the same records in another order are the same
    datasets, source = as_synthetic_list(synthetic, original=original, row_order=False)
    carried = None if source is None else source.schema
    sub = resolve_inputs(original, datasets, carried, schema, categorical, keys,
                         recoded=() if source is None else source.recoded_columns)
    res = _replicated(original, datasets, keys, sub, compat == "synthpop")
    res.warnings.extend(duplicate_codes(datasets))  # warned by as_synthetic_list
    return res
