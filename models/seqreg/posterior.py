"""Posterior handling of :class:`~bayes_risk.models.SequentialRegression`: user-supplied draws
and convergence quantities."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.models._bayesian.posterior import invalid as _invalid
from bayes_risk.models.seqreg.draws import NAME_SEP, draw_name
from bayes_risk.models.seqreg.state import SeqRegState


def draws_from_user(c: str, val: Any, fam: str, design: Any) -> dict[str, np.ndarray]:
    """Column ``c``'s draws given as a table or array, as posterior variables ``[H, ...]``."""
    names = list(design.names)
    q = len(names)
    if fam in ("categorical", "multinomial_logit"):  # one variable: its shape as declared
        return {draw_name(c, "probs" if fam == "categorical" else "beta"):
                val.to_numpy() if isinstance(val, pd.DataFrame) else val}
    want = names + (["sigma"] if fam == "normal" else [])
    if isinstance(val, pd.DataFrame):
        cols = [str(x) for x in val.columns]
        miss = [w for w in want if w not in cols]
        extra = [x for x in cols if x not in want]
        if miss or extra:
            raise _invalid(f"draws for {c!r} ({fam}) must have columns {want}; missing {miss}, "
                           f"unexpected {extra}.")
        a = val[want].to_numpy(dtype=np.float64)
    else:
        a = np.asarray(val, dtype=np.float64)
        if a.ndim != 2 or a.shape[1] != len(want):
            raise _invalid(f"draws for {c!r} ({fam}) must be [H, {len(want)}] in the order "
                           f"{want}. Got shape {a.shape}.")
    # their values are checked as every posterior is (SequentialRegression.posterior_variables)
    out = {draw_name(c, "beta"): a[:, :q]}
    if fam == "normal":
        out[draw_name(c, "sigma")] = a[:, q]
    return out


def posterior_methods(state: SeqRegState) -> dict[str, str]:
    """How each column's draws were made (:meth:`SequentialRegression.posterior_methods`)."""
    text = str(state.tree["posterior"].attrs.get("posterior_methods", ""))
    if text == "user-supplied" or not text:
        return {c: "user" for c in state.order}
    return dict(item.split("=", 1) for item in text.split(","))


def convergence_quantities(state: SeqRegState) -> dict[str, np.ndarray]:
    """Coefficients of the columns drawn by MCMC (NUTS or user-supplied draws)."""
    post = state.tree["posterior"]
    methods = posterior_methods(state)
    out: dict[str, np.ndarray] = {}
    for c in state.order:
        if methods.get(c) not in ("nuts", "user"):
            continue
        for v in [x for x in post.data_vars if x.startswith(c + NAME_SEP)]:
            a = np.asarray(post[v].values)
            flat = a.reshape(a.shape[0], a.shape[1], -1)
            names = labels(state, v, flat.shape[2])
            for k in range(min(flat.shape[2], 30)):
                out[f"{v}[{names[k]}]" if flat.shape[2] > 1 else v] = flat[:, :, k]
    return out


def labels(state: SeqRegState, var: str, size: int) -> list[str]:
    """Labels of the ``size`` entries of posterior variable ``var`` (levels or coefficients)."""
    c, name = var.rsplit(NAME_SEP, 1)
    if name == "probs":
        return [str(x) for x in state.schema[c].levels]
    coefs = list(state.designs[c].names)
    if state.families[c] == "multinomial_logit":
        cats = [str(x) for x in state.schema[c].levels[1:]]
        return [f"{a}:{b}" for a in cats for b in coefs]
    return coefs if len(coefs) == size else [str(k) for k in range(size)]
