"""Between-chain agreement of the record-level estimates (``CHAINS_DISAGREE``).

See :doc:`/methods/attribute` (Diagnostics).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bayes_risk.contract import capabilities

#: records whose arrays the assembly of a result stacks at a time (bounds its memory)
STACK_RECORDS = 4096

__all__ = [
    "CHAIN_TOLERANCE",
    "CHAIN_RATIO",
    "CHAIN_ALPHA",
    "CHAIN_BATCHES",
    "CHAIN_MIN_BATCH",
    "ChainPlan",
    "chain_plan",
    "chain_estimates",
    "chain_agreement",
    "agreement_columns",
]

#: material difference of the truth's probability between two chains (absolute)
CHAIN_TOLERANCE = 0.02
#: material ratio of the truth's probability between two chains (the floor where p_true < 0.1)
CHAIN_RATIO = 1.2
#: two-sided level of the per-record test between two chains (Bonferroni over the pairs)
CHAIN_ALPHA = 0.001
#: batches per chain for the batch-means standard errors
CHAIN_BATCHES = 20
#: fewest draws per batch (shorter chains: fewer batches; fewer than 5 batches: not run)
CHAIN_MIN_BATCH = 10


@dataclass(frozen=True)
class ChainPlan:
    """Chain and batch group ``c · K + k`` of each used draw (``base``, ``aug``), and ``reason``."""

    run: bool
    reason: str
    n_chains: int = 1
    n_batches: int = 0
    base: np.ndarray | None = None
    aug: list[np.ndarray | None] = field(default_factory=list)

    def to_dict(self, tolerance: float = CHAIN_TOLERANCE, ratio: float = CHAIN_RATIO,
                alpha: float = CHAIN_ALPHA) -> dict[str, Any]:
        """JSON-safe description (the result's ``settings["chain_check"]``)."""
        return {"status": "run" if self.run else "not run", "reason": self.reason,
                "chains": self.n_chains, "batches_per_chain": self.n_batches if self.run else None,
                "tolerance": tolerance, "ratio": ratio, "alpha": alpha}


def _chain_labels(model: Any, idx: np.ndarray | None) -> np.ndarray | None:
    """``[H]`` chain labels ``0..C-1`` of the used draws, or ``None`` (model does not say)."""
    if not capabilities(model).chains:
        return None
    lab = np.asarray(model.draw_chains(), dtype=np.int64)
    if idx is not None:
        lab = lab[idx]
    return np.unique(lab, return_inverse=True)[1].astype(np.int64)


def _groups(labels: np.ndarray, n_chains: int, k: int) -> np.ndarray:
    """Group ``c · k + batch`` of each draw: each chain cut into ``k`` consecutive batches."""
    out = np.empty(labels.size, dtype=np.int64)
    for c in range(n_chains):
        pos = np.flatnonzero(labels == c)
        out[pos] = c * k + (np.arange(pos.size) * k) // pos.size
    return out


def chain_plan(
    model: Any, draw_idx: np.ndarray | None, aug_models: Sequence[Any], estimator: str
) -> ChainPlan:
    """The between-chain check of an analysis, or why it cannot run."""
    if estimator != "stabilised":
        return ChainPlan(False, f"the {estimator!r} estimator (the check covers the stabilised "
                                "estimator)")
    lab = _chain_labels(model, draw_idx)
    n_chains = 1 if lab is None else int(lab.max()) + 1
    if n_chains < 2:
        return ChainPlan(False, "1 chain: the estimates cannot be compared between chains; "
                                "run two or more chains")
    shortest = int(np.bincount(lab).min())
    k = min(CHAIN_BATCHES, shortest // CHAIN_MIN_BATCH)
    if k < 5:
        return ChainPlan(False, f"chains too short ({shortest} draws; at least "
                                f"{5 * CHAIN_MIN_BATCH} needed)", n_chains=n_chains)
    aug: list[np.ndarray | None] = []
    shared = []
    for li, a in enumerate(aug_models):
        la = _chain_labels(a, None)
        ok = la is not None and int(la.max()) + 1 == n_chains
        ok = ok and int(np.bincount(la).min()) // CHAIN_MIN_BATCH >= k
        aug.append(_groups(la, n_chains, k) if ok else None)
        if not ok:
            shared.append(li + 1)
    reason = f"{n_chains} chains, {k} batches per chain"
    if shared:
        reason += (f"; augmented fit(s) {shared} have another number (or length) of chains and "
                   "are used whole by every chain's estimate")
    return ChainPlan(True, reason, n_chains=n_chains, n_batches=k,
                     base=_groups(lab, n_chains, k), aug=aug)


def _group_sums(E: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """``Σ_{h in group} E[r, h, g]`` → ``[n_groups, R, G]``."""
    Eh = np.moveaxis(E, 1, 0)  # [H, R, G], contiguous
    order = np.argsort(groups, kind="stable")
    gs = groups[order]
    if not np.array_equal(order, np.arange(order.size)):
        Eh = Eh[order]
    bounds = np.r_[np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]]), gs.size]
    out = np.zeros((n_groups, *Eh.shape[1:]))
    # one contiguous slice sum per batch: as fast as a single sum over the draws
    # (np.add.reduceat over the leading axis is ~15x slower)
    for a, b in zip(bounds[:-1], bounds[1:], strict=False):
        Eh[a:b].sum(axis=0, out=out[gs[a]])
    return out


def _chain_means(st: Any, groups: np.ndarray | None, g0: np.ndarray, cp: ChainPlan
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per chain ``log Ê_c[r]`` ``[C, R, G]`` and batch deviations ``[C, K, R, G]``."""
    C, K = cp.n_chains, cp.n_batches
    R, _, G = st.E.shape
    if groups is None:  # used whole by every chain: no difference between chains
        return (np.broadcast_to(st.log_mean(), (C, R, G)), np.zeros((C, K, R, G)))
    gs = getattr(st, "group_sums", None)
    if gs is not None and np.array_equal(gs[0], groups) and gs[1].shape[0] == C * K:
        S = gs[1].reshape(C, K, R, G)  # formed in the ratio pass (RatioStats.from_logp)
    else:
        S = _group_sums(st.E, groups, C * K).reshape(C, K, R, G)
    # the truth's ratio is 1 (E = 1) for every kept draw and 0 for a dropped one: its sums
    # count the kept draws of each batch
    n = S[:, :, np.arange(R), g0]  # [C, K, R]
    tot = S.sum(axis=1)
    ntot = n.sum(axis=1)  # [C, R]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = tot / ntot[:, :, None]
        logm = np.log(mean) + st.mx[None]
        dev = (S - mean[:, None] * n[..., None]) / (mean * (ntot / K)[:, :, None])[:, None]
    logm = np.where(st.finite[None] & (ntot[:, :, None] > 0), logm, -np.inf)
    return logm, np.where(np.isfinite(dev), dev, 0.0)


def chain_estimates(
    cp: ChainPlan, st0: Any, st_aug: Sequence[Any], g0: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each chain's stabilised log-likelihoods ``(R, C, G)`` and batch deviations."""
    m = len(st_aug)
    l0, d0 = _chain_means(st0, cp.base, g0, cp)
    ll = -m * l0
    dev = -m * d0
    bad = np.isneginf(l0)
    for st, grp in zip(st_aug, cp.aug, strict=True):
        la, da = _chain_means(st, grp, g0, cp)
        with np.errstate(invalid="ignore"):
            ll = ll + la
        dev = dev + da
        bad |= np.isneginf(la)
    ll = np.where(bad, -np.inf, ll)
    return np.moveaxis(ll, 0, 1), np.moveaxis(dev, 2, 0).astype(np.float32)


def _critical(alpha: float, n_chains: int, k: int) -> float:
    """Student-t quantile (``k − 1`` df) at two-sided ``alpha``, Bonferroni over the pairs."""
    from scipy.special import stdtrit  # scipy.stats would cost ~0.3 s to import

    pairs = n_chains * (n_chains - 1) // 2
    return float(stdtrit(k - 1, 1.0 - alpha / (2.0 * pairs)))


def chain_agreement(
    diagnostics: Sequence[dict[str, np.ndarray]], logprior: Sequence[np.ndarray], g0: np.ndarray, *,
    tolerance: float = CHAIN_TOLERANCE, ratio: float = CHAIN_RATIO, alpha: float = CHAIN_ALPHA,
) -> dict[str, np.ndarray]:
    """Whether each record's estimate depends on the chain (``CHAINS_DISAGREE``).

    Parameters
    ----------
    diagnostics : sequence of dict
        Per record, ``chain_loglik`` and ``chain_dev`` of :func:`chain_estimates`.
    logprior, g0 : sequence of arrays (G,), int array (R,)
    tolerance, ratio : float
        A difference of ``p_true`` is material beyond ``tolerance`` or ``ratio − 1`` times the
        smaller estimate.
    alpha : float
        Two-sided level of the test of a difference (Bonferroni over the pairs of chains).

    Returns
    -------
    dict of arrays (R,)
        ``p_true_chain_min``, ``p_true_chain_max``, ``chain_z``, ``top_differs`` and ``flag``.
    """
    n = len(diagnostics)
    out = {k: np.full(n, np.nan) for k in ("p_true_chain_min", "p_true_chain_max", "chain_z")}
    out["top_differs"] = np.zeros(n, dtype=bool)
    out["flag"] = np.zeros(n, dtype=bool)
    blocks: dict[tuple[int, ...], list[int]] = {}
    for k, d in enumerate(diagnostics):
        if "chain_loglik" in d:
            blocks.setdefault(tuple(np.shape(d["chain_dev"])), []).append(k)
    g0 = np.asarray(g0, dtype=np.int64)
    # records with the same numbers of chains, batches and candidates, a block at a time
    for part in (np.asarray(idx[a : a + STACK_RECORDS], dtype=np.int64)
                 for idx in blocks.values() for a in range(0, len(idx), STACK_RECORDS)):
        res = agreement_columns(
            np.stack([diagnostics[i]["chain_loglik"] for i in part]),
            np.stack([diagnostics[i]["chain_dev"] for i in part]),
            np.stack([np.asarray(logprior[i], dtype=np.float64) for i in part])[None],
            g0[part], tolerance=tolerance, ratio=ratio, alpha=alpha,
        )
        for key, v in res.items():
            out[key][part] = v[0]
    return out


def agreement_columns(
    ll: np.ndarray, dev: np.ndarray, lp: np.ndarray, g0: np.ndarray, *,
    tolerance: float = CHAIN_TOLERANCE, ratio: float = CHAIN_RATIO, alpha: float = CHAIN_ALPHA,
    dev_t: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """:func:`chain_agreement` of ``R`` records under each of ``P`` priors: columns ``(P, R)``."""
    from bayes_risk.attribute._kernels import chain_columns

    if dev_t is None:
        dev_t = transposed_dev(dev)
    crit = _critical(alpha, dev.shape[1], dev.shape[2])
    res = chain_columns(np.ascontiguousarray(ll, dtype=np.float64), dev_t,
                        np.ascontiguousarray(lp, dtype=np.float64),
                        np.asarray(g0, dtype=np.int64), crit, float(tolerance), float(ratio))
    out = dict(zip(("p_true_chain_min", "p_true_chain_max", "chain_z"), res[:3], strict=True))
    return out | {"top_differs": res[3] > 0, "flag": res[4] > 0}


def transposed_dev(dev: np.ndarray) -> np.ndarray:
    """Batch deviations ``(R, C, K, G)`` as the kernel reads them, ``(R, C, G, K)``."""
    return np.ascontiguousarray(np.swapaxes(dev, 2, 3))
