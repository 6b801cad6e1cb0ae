"""Compare synthesis visit orders by utility and identification risk (Caiola & Reiter 2010 §3.2):
:func:`compare_visit_orders` synthesizes the same data once per order and tabulates pMSE and
identification risk.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import COLUMN_NAMES, HasMethods, SequenceOf, check_value
from bayes_risk._rng import RandomSeed, as_generator, seed_to_json
from bayes_risk._specs import cli_option, split_lists
from bayes_risk._terminal import progress
from bayes_risk.data.validate import check_m, require_distinct, require_frame
from bayes_risk.exceptions import ValidationError, arg_name
from bayes_risk.results.visit_orders import VisitOrderComparison

__all__ = ["VisitOrderComparison", "compare_visit_orders"]

#: identification-risk measures reported per order (keys of ``IdentificationResult.file``)
RISK_COLUMNS = ("expected_match_risk", "true_match_risk", "n_unique", "true_match_rate_targets",
                "false_match_rate")


def _check_orders(orders: Any) -> list[tuple[str, ...]]:
    check_value(orders, SequenceOf(COLUMN_NAMES, "visit orders (each a non-empty sequence of "
                                   "column names)", unique=True), "orders")
    out = []
    for i, o in enumerate(orders):
        t = tuple(o)
        require_distinct(t, f"orders[{i}]")
        out.append(t)
    first = set(out[0])
    for i, t in enumerate(out[1:], start=1):
        if set(t) != first:
            raise ValidationError(
                f"every order must visit the same columns; orders[{i}] = {list(t)} differs from "
                f"orders[0] = {list(out[0])}.")
    return out


def compare_visit_orders(
    original: pd.DataFrame,
    *,
    synthesizer: Annotated[Any, cli_option(
        "--method", "synthesizer: cart, rf, or a synthesizer registered in the entry-point "
        "group bayes_risk.synthesizers whose ModelInfo declares visit_order (docs: 'Adding a "
        "model')", metavar="NAME", required=True)],
    orders: Annotated[Sequence[Sequence[str]], cli_option(
        "--order", "one visit order (comma-separated columns); repeat for every order",
        action="append", metavar="COL,COL,...", required=True, parse=split_lists)],
    known: Sequence[str] | None = None,
    schema: Any = None,
    m: Annotated[int, cli_option("-m", "datasets per order (default 5)", type=int,
                                 metavar="M")] = 5,
    records: Any = None,
    identification: Mapping[str, Any] | None = None,
    utility: Mapping[str, Any] | None = None,
    keep_releases: bool = False,
    random_seed: RandomSeed = None,
    progressbar: bool = False,
) -> VisitOrderComparison:
    """Synthesize once per visit order and tabulate utility and identification risk.

    Every order is fitted and synthesized with the same seeds, so the rows differ by the order
    alone. See :doc:`/user_guide/synthesizers`.

    Parameters
    ----------
    synthesizer : BaseSynthesizer
        A sequential synthesizer (copied, not modified).
    original : DataFrame
    orders : list of list of str
        Visit orders, each listing the same synthesized columns.
    known : sequence of str, optional
        The intruder's columns (default: the synthesized ones).
    schema : Schema, optional
    m : int, default 5
        Datasets per order.
    records : optional
        Records to synthesize, passed to ``fit``.
    identification, utility : mapping, optional
        Further arguments of :func:`bayes_risk.identification_risk` and :func:`bayes_risk.pmse`.
    keep_releases : bool, default False
        Keep every order's :class:`SyntheticData` in the result.
    random_seed : RandomSeed
    progressbar : bool

    Returns
    -------
    VisitOrderComparison

    Raises
    ------
    ValidationError
        Empty or inconsistent orders, a synthesizer without ``fit``/``synthesize``.

    Examples
    --------
    >>> from bayes_risk import PropensitySpec, make_acs_like
    >>> from bayes_risk.models import RandomForestSynthesizer
    >>> acs = make_acs_like(300, random_seed=1)
    >>> cmp = compare_visit_orders(
    ...     acs[["SEX", "AGE", "RACE", "MAR"]], synthesizer=RandomForestSynthesizer(n_trees=20),
    ...     orders=[["MAR", "RACE", "SEX"], ["SEX", "RACE", "MAR"]],
    ...     known=["AGE", "MAR", "RACE", "SEX"], m=2, random_seed=4,
    ...     utility={"propensity": PropensitySpec(max_order=0)})  # main effects: 300 records
    >>> list(cmp.table["order"])
    ['MAR → RACE → SEX', 'SEX → RACE → MAR']
    """
    from bayes_risk.identification.api import identification_risk
    from bayes_risk.identification.prepare import known_names
    from bayes_risk.utility.pmse import pmse

    check_value(synthesizer, HasMethods(("fit", "synthesize"), "a bayes_risk synthesizer (with "
                                        "fit and synthesize)"), "synthesizer")
    require_frame(original, "original")
    ords = _check_orders(orders)
    known = list(ords[0]) if known is None else known_names(known)
    for argument, names in (("orders", ords[0]), ("known", known)):
        missing = [c for c in names if c not in original.columns]
        if missing:
            raise ValidationError(f"{argument}: column(s) {missing} are not in the original "
                                  "data.", code="UNKNOWN_COLUMN")
    ku = [c for c in known if c not in ords[0]]
    ks = [c for c in known if c in ords[0]]
    id_kw = dict(identification or {})
    for k in ("original", "synthetic", "known", "synthesized"):
        if k in id_kw:
            raise ValidationError(f"identification: {k!r} is set by compare_visit_orders.")
    id_kw.setdefault("progressbar", False)
    if schema is not None:
        id_kw.setdefault("schema", schema)
    ut_kw = dict(utility or {})
    if schema is not None:
        ut_kw.setdefault("schema", schema)
    # the releases of an order (of every order when they are kept), fitted in this run: -m
    # 10**9 ran without a check
    from bayes_risk._memory import check_memory, forest_bytes, release_bytes

    table = float(original.memory_usage(deep=True).sum())
    m = check_m(m)
    held = m * (len(ords) if keep_releases else 1)
    check_memory(release_bytes(held, table, fitted=True), arg_name("m"),
                 what=f"{held:,} synthetic datasets of {len(original):,} records")
    forest = forest_bytes(synthesizer, len(original), list(ords[0]))  # fitted once per order
    if forest:
        check_memory(1.5 * forest, arg_name("n_trees"),
                     what=f"the forests of {synthesizer.n_trees:,} trees of each order")
    # one entropy for all orders: common random numbers
    seed = as_generator(random_seed).integers(2**63 - 1)
    has_vs = "visit_sequence" in synthesizer.get_params()
    rows, releases = [], {}
    for order in progress(ords, total=len(ords), description="visit orders", unit="orders",
                          enabled=progressbar):
        model = copy.deepcopy(synthesizer)
        if has_vs:
            model.set_params(visit_sequence=list(order))
        if getattr(model, "random_seed", None) is not None:
            model.set_params(random_seed=None)  # the orders' common seed, given to fit
        fit_kw: dict[str, Any] = {"random_seed": [int(seed), 1]}
        if records is not None:
            fit_kw["records"] = records
        model.fit(original, schema=schema, synthesized=list(order), **fit_kw)
        release = model.synthesize(m, random_seed=[int(seed), 2])
        u = pmse(original, release, random_seed=[int(seed), 3], **ut_kw)
        r = identification_risk(original, release, known=known, synthesized=list(order),
                                **id_kw)
        s = r.file
        row = {"order": " → ".join(order), "pmse": float(np.mean(u.pmse)),
               "pmse_ratio": float(np.mean(u.ratio))}
        row.update({k: s[k] for k in RISK_COLUMNS})
        rows.append(row)
        if keep_releases:
            releases[order] = release
    settings = {
        "synthesizer": type(synthesizer).__name__,
        # flat, as a release's manifest holds them (the tree options by name, not TreeOptions)
        "synthesizer_settings": synthesizer.release_settings(),
        "m": int(m),
        "known_unsynthesized": ku,
        "known_synthesized": ks,
        "identification": {k: (v.to_dict() if k in ("match", "population") else v)
                           for k, v in id_kw.items() if k != "schema"},
        "utility": {k: v for k, v in ut_kw.items() if k != "schema"},
        "common_random_numbers": True,
        "random_seed": seed_to_json(random_seed)}
    return VisitOrderComparison(table=pd.DataFrame(rows), orders=ords, releases=releases,
                                settings=settings)
