"""File-level summaries of membership risk: share of members above a threshold and the attack's
advantage over the base rate (AUC − 0.5, TPR − FPR), with bootstrap intervals over records."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["auc", "file_summary"]


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """ROC AUC of scores ``pos`` against ``neg`` (ties count one half)."""
    # scipy.stats costs ~0.5 s of CPU to import: not paid by an audit that lists the measures
    # (the membership measure's record names membership_risk) without running this one
    from scipy.stats import rankdata

    pos = np.asarray(pos, dtype=np.float64)
    neg = np.asarray(neg, dtype=np.float64)
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    r = rankdata(np.concatenate([pos, neg]))
    u = r[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2.0
    return float(u / (len(pos) * len(neg)))


def _advantage(pm: np.ndarray, pn: np.ndarray, thr: float) -> float:
    if len(pm) == 0 or len(pn) == 0:
        return float("nan")
    return float(np.mean(pm > thr) - np.mean(pn > thr))


def _interval(x: np.ndarray) -> list[float]:
    x = x[np.isfinite(x)]
    if x.size == 0:
        return [float("nan"), float("nan")]
    return [float(np.quantile(x, 0.025)), float(np.quantile(x, 0.975))]


def file_summary(table: pd.DataFrame, *, threshold: float, bootstrap: int, rng: np.random.Generator,
                 dcr: bool) -> dict[str, Any]:
    """Summaries over the unflagged targets: ``auc_advantage``, ``tpr_fpr``, the DCR baseline."""
    codes = table["flag_codes"].to_numpy()
    # a record released whole is not an unstable estimate: its P(member) = 1 counts
    ok = (codes == "") | (codes == "RELEASED_WHOLE")
    mem = (table["role"].to_numpy() == "member") & ok
    non = (table["role"].to_numpy() == "non-member") & ok
    llr = table["log_lr"].to_numpy()
    pmem = table["p_member"].to_numpy()
    out: dict[str, Any] = {
        "n_targets": len(table),
        "n_members": int((table["role"] == "member").sum()),
        "n_non_members": int((table["role"] == "non-member").sum()),
        "n_flagged": int((~ok).sum()),
        "n_flagged_members": int(((table["role"] == "member").to_numpy() & ~ok).sum()),
        "threshold": threshold,
        "share_members_above": float(np.mean(pmem[mem] > threshold)) if mem.any()
        else float("nan"),
        "mean_p_member_members": float(np.mean(pmem[mem])) if mem.any() else float("nan"),
        "mean_p_member_non_members": float(np.mean(pmem[non])) if non.any() else float("nan"),
        "auc": auc(llr[mem], llr[non]),
        "tpr_fpr": _advantage(pmem[mem], pmem[non], threshold),
    }
    out["auc_advantage"] = out["auc"] - 0.5
    scores = {"bayes": llr}
    if dcr and "dcr" in table:
        d = -table["dcr"].to_numpy()
        scores["dcr"] = d
        out["dcr_auc"] = auc(d[mem], d[non])
        out["dcr_auc_advantage"] = out["dcr_auc"] - 0.5
        from scipy.stats import spearmanr

        both = ok & np.isfinite(llr)
        varies = both.sum() > 2 and np.ptp(llr[both]) > 0 and np.ptp(d[both]) > 0
        # undefined when either score is constant (e.g. every target has a copy in the release)
        out["spearman_bayes_dcr"] = (
            float(spearmanr(llr[both], d[both]).statistic) if varies else float("nan"))
        out["dcr_mean_members"] = float(np.mean(-d[mem])) if mem.any() else float("nan")
        out["dcr_mean_non_members"] = float(np.mean(-d[non])) if non.any() else float("nan")
    if bootstrap and mem.any() and non.any():
        im, inn = np.flatnonzero(mem), np.flatnonzero(non)
        boot = {k: np.empty(bootstrap) for k in ("auc", "tpr_fpr", "share", "dcr_auc")}
        for b in range(bootstrap):
            bm = rng.choice(im, size=im.size, replace=True)
            bn = rng.choice(inn, size=inn.size, replace=True)
            boot["auc"][b] = auc(llr[bm], llr[bn])
            boot["tpr_fpr"][b] = _advantage(pmem[bm], pmem[bn], threshold)
            boot["share"][b] = np.mean(pmem[bm] > threshold)
            boot["dcr_auc"][b] = auc(scores["dcr"][bm], scores["dcr"][bn]) if "dcr" in scores \
                else np.nan
        out["auc_advantage_interval"] = [v - 0.5 for v in _interval(boot["auc"])]
        out["tpr_fpr_interval"] = _interval(boot["tpr_fpr"])
        out["share_members_above_interval"] = _interval(boot["share"])
        if "dcr" in scores:
            out["dcr_auc_advantage_interval"] = [v - 0.5 for v in _interval(boot["dcr_auc"])]
    return out
