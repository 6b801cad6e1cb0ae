"""Estimators as strategy objects: :class:`PublishedIS`, :class:`Stabilised`, :class:`PlugIn`.

See :doc:`/methods/attribute`.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from statistics import NormalDist
from typing import Any, NamedTuple

import numpy as np

from bayes_risk.attribute.chains import chain_estimates
from bayes_risk.attribute.diagnostics import pareto_khat, tail_size
from bayes_risk.attribute.estimator import (
    RatioStats,
    bootstrap_is,
    bootstrap_stabilised,
    fast_path_exact,
    is_estimate,
    log_ratios,
    mean_log_ratio,
    stabilised_bounds,
    stabilised_estimate,
    truncated_log_mean,
)
from bayes_risk.attribute.likelihoods import model_logp
from bayes_risk.attribute.plan import (
    AttributePlan,
    CandidateGroup,
    EstimatorStrategy,
    PartitionOutput,
    Workspace,
)
from bayes_risk.attribute.record_table import MC_LEVEL
from bayes_risk.contract import capabilities
from bayes_risk.data.validate import decode_values
from bayes_risk.exceptions import ValidationError

__all__ = ["EstimatorStrategy", "PublishedIS", "Stabilised", "PlugIn", "strategy_for"]


class PlugIn(EstimatorStrategy):
    """The model's own likelihood of the release, summed over datasets (no posterior draws)."""

    name = "plugin"

    def estimate(
        self, plan: AttributePlan, group: CandidateGroup, ws: Workspace, out: PartitionOutput
    ) -> None:
        t_m = time.perf_counter()
        model = plan.model.model
        # the plug-in's method labels (RFPlugin: APPROXIMATE_NONPARAMETRIC) hold for every
        # record alike: result warnings, not record flags
        labels = capabilities(model).result_warnings
        if labels:
            out.add_warnings(labels)
        g = group.n_candidates
        pls, ses = _plugin_logliks(model, plan, group)
        for k, i in enumerate(group.pos):
            i = int(i)
            unk = group.unknown[k]
            pl, se = pls[k], ses[k]
            llk = np.where(unk, -np.inf, pl.sum(axis=0))
            out.skip(i, g)
            out.loglik[i] = llk
            if np.isnan(llk).any():
                # a ratio to a truth under which the release has likelihood zero: the model
                # could not have made this release (another model, an edited release)
                out.flags[i].append("RELEASE_IMPOSSIBLE")
                continue
            if not np.any(np.isfinite(llk)):
                out.flags[i].append("ALL_CANDIDATES_IMPOSSIBLE")
                continue
            # datasets use independent Monte Carlo replicates: variances add; an impossible
            # candidate stays impossible (no Monte Carlo error to report)
            mc = np.sqrt(np.sum(se * se, axis=0))
            mc = np.where(unk | ~np.isfinite(llk), np.nan, mc)
            out.diag[i] = {"mc_se": mc, **mc_bounds(llk, mc)}
        ws.timing["model_likelihood_s"] += time.perf_counter() - t_m


def mc_bounds(loglik: np.ndarray, mc_se: np.ndarray, level: float = MC_LEVEL
              ) -> dict[str, np.ndarray]:
    """Each candidate's log-likelihood at ± ``z`` Monte Carlo standard errors of its difference
    from the truth, ``z`` the Bonferroni point that covers every candidate with an error at once
    with probability ``level`` (``{}`` when no candidate has one: the likelihood is exact).

    The bounds feed the material rule of :func:`~bayes_risk.attribute.record_table.khat_material`
    (``MC_ERROR_HIGH`` where the truth's probability could be understated by more than its
    tolerance, or the truth ranked first), as the k̂ bounds of the stabilised estimator do.
    """
    err = np.nan_to_num(mc_se, nan=0.0)
    j = int(np.count_nonzero(err))
    if not j:
        return {}
    z = NormalDist().inv_cdf(1 - (1 - level) / (2 * j))
    with np.errstate(invalid="ignore"):  # -inf stays -inf
        return {"loglik_lo": loglik - z * err, "loglik_hi": loglik + z * err}


def _plugin_logliks(model: Any, plan: AttributePlan, group: CandidateGroup
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``[R, m, G]`` plug-in log-likelihoods and standard errors of the group's records: one call
    of the model's ``plugin_loglik_many`` where it has one, else record by record."""
    data = plan.data
    R, m, g = group.size, data.m, group.n_candidates
    # an unknown candidate is evaluated as the truth (then set to -inf by the caller)
    truth = group.vals[np.arange(R), group.g0][:, None, :]
    safe = np.where(group.unknown[:, :, None], truth, group.vals)
    cands = decode_values(safe.reshape(R * g, -1), data.vary, data.schema)
    many = getattr(model, "plugin_loglik_many", None)
    if many is not None:
        pl, se = many(group.pos, cands, data.model_datasets)
    else:
        res = [model.plugin_loglik(int(i), cands.iloc[k * g:(k + 1) * g].reset_index(drop=True),
                                   data.model_datasets, return_se=True)
               for k, i in enumerate(group.pos)]
        pl, se = [np.stack([np.asarray(r[j], dtype=np.float64) for r in res]) if res
                  else np.zeros((0, m, g)) for j in (0, 1)]
    pl, se = np.asarray(pl, dtype=np.float64), np.asarray(se, dtype=np.float64)
    if pl.shape != (R, m, g) or se.shape != (R, m, g):
        raise ValidationError(
            f"model.plugin_loglik returned shape {pl.shape[1:]}; expected ({m}, {g}).",
            code="MODEL_OUTPUT_INVALID"
        )
    return pl, se


class PublishedSums(NamedTuple):
    """The published estimator's log-likelihoods and class O own-record term."""

    loglik: np.ndarray
    delta: np.ndarray | None


def _khat_tail(n_draws: int) -> int:
    """Pareto tail size to select in the ratio pass (0 where k̂ takes the short-tail path)."""
    m = tail_size(n_draws)
    return m if (m >= 5 and n_draws > m) else 0


def _ratio_pass(logp: np.ndarray, group: CandidateGroup, ws: Workspace, slot: int, *,
                tail: bool, L: np.ndarray | None = None, groups: np.ndarray | None = None,
                shift: np.ndarray | None = None) -> RatioStats:
    """``RatioStats.from_logp`` in workspace buffer ``slot``; ratios times ``e^{−shift}``."""
    hh = logp.shape[1]
    if shift is not None:
        logr, ndrop = log_ratios(logp, group.g0)
        with np.errstate(invalid="ignore"):
            st = RatioStats(logr - shift[:, :, None])
        st.n_dropped = ndrop
        return st
    st = RatioStats.from_logp(
        np.moveaxis(logp, 1, 0), group.g0, tail=_khat_tail(hh) if tail else 0,
        L=L if (L is not None and L.shape[0] == hh) else None,
        out=ws.buffer(slot, (hh, group.size, group.n_candidates)), groups=groups,
    )
    # the k̂ fits (numpy, GIL released) run while the next posterior's likelihoods and ratio
    # pass (compiled, GIL released) are computed; the estimator collects them
    st.start_khat()
    return st


def _known_shift(plan: AttributePlan, k: int, group: CandidateGroup) -> np.ndarray | None:
    """``[R, H]`` shift of model ``k``'s log ratios (``None``: every record known)."""
    known = plan.known
    if known is None or known.everything:
        return None
    model = plan.model.model if k == 0 else plan.augmented.models[k - 1].model
    idx = plan.draws.logp_idx if k == 0 else None
    return known.shift(model, plan.data.orig, k, group.pos, idx)


def _known_shift_free(plan: AttributePlan) -> bool:
    """Whether the truth's ratios are identically 1 (no known-records shift)."""
    return plan.known is None or plan.known.everything


def _constant_ratio(st: RatioStats) -> np.ndarray:
    """``[R, G]``: candidates whose ratio to the truth is 1 under every kept draw."""
    n = st.n_ok[:, None].astype(np.float64)
    tol = 1e-12 * n
    return (st.finite & (np.abs(st.mx) <= 1e-12) & (np.abs(st.s1 - n) <= tol)
            & (np.abs(st.s2 - n) <= tol))


def _exact_pair_khat(group: CandidateGroup, khat: np.ndarray, st: RatioStats) -> None:
    """No k̂ (``nan``) for a pair candidate whose ratio to the truth is identically 1."""
    if group.members is not None:
        khat[_constant_ratio(st)] = np.nan


#: ``DOMINATED_SUM``: one posterior draw carries more than this share of a sum the record's
#: estimate uses (the published estimator's ``ω`` sums, the stabilised estimator's means of the
#: ratios under each posterior), whatever k̂ says. Above it the sum is one draw's value give or
#: take a tenth (Kish ESS below 1/0.81 = 1.23): its Monte Carlo error cannot be read from the
#: draws, and a draw bootstrap that keeps that draw (63 % of replicates) repeats the estimate
DOMINATED_SHARE = 0.9


def _max_share(st: RatioStats) -> np.ndarray:
    """``[R, G]``: the largest share one draw carries in each mean ``Σ_h r_h`` (``1 / s1``, the
    largest term being 1); ``nan`` where every ratio is zero."""
    with np.errstate(divide="ignore"):
        return np.where(st.finite & (st.s1 > 0), 1.0 / np.where(st.s1 > 0, st.s1, 1.0), np.nan)


class _DrawEstimator(EstimatorStrategy):
    """Shared steps of the estimators that use posterior draws."""

    def estimate(
        self, plan: AttributePlan, group: CandidateGroup, ws: Workspace, out: PartitionOutput
    ) -> None:
        dr, dg = plan.draws, plan.diagnostics
        logp = model_logp(plan.model, plan.data, plan.rule, group, dr.logp_idx, ws)
        L_fast = (dr.L is not None and plan.model.model.model_class == "P" and dr.n_sum is None
                  and fast_path_exact(dr.L))
        cp = plan.chains if (plan.chains is not None and plan.chains.run) else None
        st0 = _ratio_pass(logp, group, ws, 0, tail=dg.khat != "none" and not dg.psis,
                          L=dr.L if L_fast else None, groups=None if cp is None else cp.base,
                          shift=_known_shift(plan, 0, group))
        del logp
        diag: dict[str, np.ndarray] = {}
        published = self._published_sums(plan, group, st0, diag, out) if dr.L is not None else None
        ll, lmr, ndrop, boot = self._estimate(plan, group, ws, st0, published, diag)
        self._store(plan, group, ll, lmr, ndrop, boot, diag, out)

    @abstractmethod
    def _estimate(
        self, plan: AttributePlan, group: CandidateGroup, ws: Workspace, st0: RatioStats,
        published: PublishedSums | None, diag: dict[str, np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """``(loglik [R, G], log_mean_r [R, G], n_dropped [R], bootstrap [R, B, G] or None)``;
        adds the estimator's diagnostics to ``diag``."""

    def _published_sums(self, plan: AttributePlan, group: CandidateGroup, st0: RatioStats,
                        diag: dict[str, np.ndarray], out: PartitionOutput) -> PublishedSums:
        """The published estimator (Hu 2019 §3.2.5) and its degeneracy diagnostics."""
        dr, data, model = plan.draws, plan.data, plan.model.model
        delta = None
        if model.model_class == "O":
            delta = np.stack([
                np.asarray(model.own_record_delta(
                    data.orig.iloc[int(i)], decode_values(group.vals[k], data.vary, data.schema),
                    data.datasets, draw_indices=dr.logp_idx,
                ), dtype=np.float64)
                for k, i in enumerate(group.pos)
            ])
            delta = np.where(group.unknown[:, None, None, :], -np.inf, delta)
        isr = is_estimate(
            None, dr.L, delta=delta, compat_r=dr.n_sum is not None, n_sum=dr.n_sum, stats=st0
        )
        diag.update({k: isr[k] for k in ("ess_q", "ess_omega", "max_omega")})
        finite = np.isfinite(isr["ess_omega"])
        deg = (isr["ess_omega"] < 1.5) & (isr["max_omega"] > 0.9) & finite
        # identical records evaluated once count once each (CandidateGroup.weight)
        w = np.ones(group.size, dtype=np.int64) if group.weight is None else group.weight
        out.deg_count += int(deg.sum(axis=(1, 2)) @ w)
        out.deg_total += int(finite.sum(axis=(1, 2)) @ w)
        return PublishedSums(loglik=isr["loglik"], delta=delta)

    def _store(self, plan: AttributePlan, group: CandidateGroup, ll: np.ndarray, lmr: np.ndarray,
               ndrop: np.ndarray, boot: np.ndarray | None, diag: dict[str, np.ndarray],
               out: PartitionOutput) -> None:
        """Per-record outputs and flags."""
        dg = plan.diagnostics
        g = group.n_candidates
        # under the "material" rule the stabilised estimator's KHAT_HIGH is decided when the
        # result is assembled, once the prior is known: whether the high-k̂ means can move p_true
        material = self.name == "stabilised" and dg.khat_rule == "material" and dg.khat != "none"
        for k, i in enumerate(group.pos):
            i = int(i)
            out.loglik[i] = ll[k]
            out.log_mean_r[i] = lmr[k]
            out.diag[i] = {key: v[k] for key, v in diag.items()}
            out.n_dropped[i] = int(ndrop[k])
            if boot is not None:
                out.boot[i] = boot[k]
            fl = out.flags[i]
            nt = np.ones(g, dtype=bool)
            # the truth's ratio is 1 under every draw unless unknown records reweight them
            nt[group.g0[k]] = not _known_shift_free(plan)
            ess_pool = [diag["ess_q"][k][nt]]
            k_pool = [diag["khat"][k][nt]]
            if self.name == "stabilised":
                ess_pool.append(diag["ess_aug"][k][:, nt].ravel())
                k_pool.append(diag["khat_aug"][k][:, nt].ravel())
            ess_all = np.concatenate(ess_pool)
            k_all = np.concatenate(k_pool)
            if np.any(ess_all[np.isfinite(ess_all)] < dg.low_ess_threshold):
                fl.append("LOW_ESS_Q")
            if np.any(k_all[~np.isnan(k_all)] > dg.khat_threshold) and not material:
                fl.append("KHAT_HIGH")
            share = diag["max_share"][k] if "max_share" in diag else np.zeros(0)
            if np.any(share[np.isfinite(share)] > DOMINATED_SHARE):
                fl.append("DOMINATED_SUM")
            if ndrop[k] > 0:
                fl.append("DRAW_DROPPED")
            if not np.any(np.isfinite(ll[k])):
                fl.append("ALL_CANDIDATES_IMPOSSIBLE")


class PublishedIS(_DrawEstimator):
    """The published importance-sampling estimator (Hu 2019 §3.2.5), class P and class O."""

    name = "is"

    def _estimate(
        self, plan: AttributePlan, group: CandidateGroup, ws: Workspace, st0: RatioStats,
        published: PublishedSums | None, diag: dict[str, np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        dr, khat = plan.draws, plan.diagnostics.khat
        if khat == "none":
            diag["khat"] = np.full(st0.mx.shape, np.nan)
        elif st0.tails is not None:
            diag["khat"] = st0.tail_khat()
        else:
            diag["khat"] = pareto_khat(np.moveaxis(st0.logr, 1, -1))
        _exact_pair_khat(group, diag["khat"], st0)
        boot = bootstrap_is(st0, dr.L, dr.counts, delta=published.delta) if dr.n_boot else None
        diag["max_share"] = np.fmax.reduce(diag["max_omega"], axis=1)  # [R, m, G] → [R, G]
        return published.loglik, mean_log_ratio(st0), st0.n_dropped, boot


class Stabilised(_DrawEstimator):
    """The stabilised estimator (methods, The stabilised estimator; class P models)."""

    name = "stabilised"

    def _estimate(
        self, plan: AttributePlan, group: CandidateGroup, ws: Workspace, st0: RatioStats,
        published: PublishedSums | None, diag: dict[str, np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        dr, dg, aug = plan.draws, plan.diagnostics, plan.augmented
        cp = plan.chains if (plan.chains is not None and plan.chains.run) else None
        ndrop = st0.n_dropped
        logr_aug = []
        for ai, a in enumerate(aug.models):
            lp_a = model_logp(a, plan.data, plan.rule, group, None, ws)
            st_a = _ratio_pass(lp_a, group, ws, 1 + ai, tail=dg.khat == "all" and not dg.psis,
                               groups=None if cp is None else cp.aug[ai],
                               shift=_known_shift(plan, 1 + ai, group))
            del lp_a
            ndrop = ndrop + st_a.n_dropped
            logr_aug.append(st_a)
        # what does not need k̂ first: the last posterior's k̂ fits run meanwhile
        if cp is not None:
            t_c = time.perf_counter()
            diag["chain_loglik"], diag["chain_dev"] = chain_estimates(cp, st0, logr_aug, group.g0)
            ws.timing["chain_check_s"] = (ws.timing.get("chain_check_s", 0.0)
                                          + time.perf_counter() - t_c)
        boot = bootstrap_stabilised(st0, logr_aug, dr.counts, aug.counts) if dr.n_boot else None
        st = stabilised_estimate(st0, logr_aug, psis=dg.psis, khat=dg.khat)
        _exact_pair_khat(group, st["khat0"], st0)
        for li, st_a in enumerate(logr_aug):
            _exact_pair_khat(group, st["khat_aug"][:, li], st_a)
        diag.update(khat=st["khat0"], khat_aug=st["khat_aug"], ess_r=st["ess_r0"],
                    ess_aug=st["ess_aug"],
                    max_share=np.maximum.reduce([_max_share(x) for x in (st0, *logr_aug)]))
        if dg.khat != "none":
            self._bounds(plan, group, st0, logr_aug, st, diag)
        if "ess_q" not in diag:
            diag["ess_q"] = st["ess_r0"]
        return st["loglik"], st["log_mean_r"], ndrop, boot

    @staticmethod
    def _bounds(plan: AttributePlan, group: CandidateGroup, st0: RatioStats,
                logr_aug: list[RatioStats], st: dict[str, Any], diag: dict[str, np.ndarray]
                ) -> None:
        """Interval of each candidate's log-likelihood where a mean has a high k̂."""
        dg, m = plan.diagnostics, plan.data.m
        thr_aug = plan.augmented.khat_thresholds
        rr = np.arange(group.size)
        thr_a = np.asarray(thr_aug if len(thr_aug) == m else [dg.khat_threshold] * m)
        with np.errstate(invalid="ignore"):
            bad0 = st["khat0"] > dg.khat_threshold
            bad_a = st["khat_aug"] > thr_a[None, :, None]
        if _known_shift_free(plan):
            bad0[rr, group.g0] = False
            bad_a[rr, :, group.g0] = False
        lo0 = truncated_log_mean(st0) if bad0.any() else st["log_mean_r"]
        lo_a = np.stack([truncated_log_mean(s_a) if bad_a[:, li].any()
                         else st["log_mean_aug"][:, li] for li, s_a in enumerate(logr_aug)],
                        axis=1)
        diag["loglik_lo"], diag["loglik_hi"] = stabilised_bounds(st, lo0, lo_a, bad0, bad_a)
        diag["khat_high"] = bad0 | bad_a.any(axis=1)


_STRATEGIES: dict[str, type[EstimatorStrategy]] = {
    "is": PublishedIS, "stabilised": Stabilised, "plugin": PlugIn,
}


def strategy_for(name: str) -> EstimatorStrategy:
    """The estimator strategy of "is", "stabilised" or "plugin"."""
    try:
        return _STRATEGIES[name]()
    except KeyError:
        raise ValidationError(f"estimator must be one of {sorted(_STRATEGIES)}. Got {name!r}."
                              ) from None
