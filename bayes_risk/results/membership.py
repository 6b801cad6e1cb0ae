"""The result of :func:`bayes_risk.membership_risk`; it imports no engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk.results._base import RiskResult, draws
from bayes_risk.results._summary import ResultWarning, Summary
from bayes_risk.warning_codes import MEMBERSHIP_FLAGS, MEMBERSHIP_MESSAGES, message

__all__ = ["MembershipRiskResult", "MEMBERSHIP_FLAGS", "MEMBERSHIP_MESSAGES"]



def _unflagged(records: pd.DataFrame) -> np.ndarray:
    """Targets whose estimate stands: no flag, or only ``RELEASED_WHOLE``."""
    return records["flag_codes"].isin(["", "RELEASED_WHOLE"]).to_numpy()


@dataclass(frozen=True, repr=False)
class MembershipRiskResult(RiskResult):
    """Result of :func:`~bayes_risk.membership_risk` (:doc:`/methods/membership`).

    Attributes
    ----------
    records : DataFrame
        One row per target (index ``target``): ``role``, ``source``, ``row``, ``slot``,
        ``log_lr``, ``p_member``, ``khat_max``, ``ess_min``, the columns of partial synthesis,
        selection rules and CART releases (``unsynthesized_match``, ``released_whole``,
        ``log_normaliser``, ``slot_revealed``, …), ``dcr`` and ``flag_codes``.
    file : dict
        File-level summaries (:func:`bayes_risk.membership.summaries.file_summary`).
    settings : dict
        Prior, threshold, m, H, thresholds of the flags, sizes, seed.
    warnings : list of str
        File-level codes.
    """

    records: pd.DataFrame
    file: dict[str, Any]
    settings: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    plot_kinds: ClassVar[tuple[str, ...]] = ("p_member", "roc", "dcr")

    def to_dataframe(self) -> pd.DataFrame:
        """The per-target table (:attr:`records`)."""
        return self.records

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: ``settings``, ``file``, ``flag_counts`` and the warnings."""
        return to_jsonable({
            "measure": "membership",
            "settings": self.settings,
            "file": self.file,
            "flag_counts": self._flag_counts(),
            "warnings": list(self.warnings),
            "structured_warnings": [w.to_dict() for w in self.structured_warnings],
        })

    def _message(self, code: str) -> str:
        return MEMBERSHIP_MESSAGES.get(code) or message(code)

    @property
    def structured_warnings(self) -> list[ResultWarning]:
        """File-level codes and target flags (with the targets they concern)."""
        return super().structured_warnings + self._flag_warnings("target(s)")

    def headline(self) -> str:
        """The members' shares in a few lines, as ``bayes-risk membership`` prints them: above
        the threshold and revealed, the AUC advantage beside the distance baseline, and what
        unsynthesized columns or a selection of records reveal."""
        f = self.file

        def num(x: Any) -> str:
            return "nan" if x is None or x != x else f"{x:.3f}"

        def pct(x: Any) -> str:  # a share in per cent, as the audit's verdict line gives it
            return "nan" if x is None or x != x else f"{100 * x:.3g} %"

        lines = [
            f"membership risk of {f['n_members']} members against {f['n_non_members']} "
            f"non-members ({f['n_flagged']} flagged, counted separately)",
            f"share of members with P(member) > {f['threshold']:g}: "
            f"{pct(f['share_members_above'])} of the members (summary.json: a fraction); "
            f"AUC - 0.5 = {num(f['auc_advantage'])}"
            + (f" (distance baseline {num(f['dcr_auc_advantage'])})"
               if "dcr_auc_advantage" in f else ""),
        ]
        if "share_members_revealed" in f:
            lines.append("CART plug-in: share of members revealed outright (P(member) = 1): "
                         f"{pct(f['share_members_revealed'])}")
        if us := f.get("unsynthesized"):
            lines.append(
                f"partial synthesis: the released unsynthesized values ({', '.join(us['columns'])}"
                f") multiply a member's likelihood ratio by a median of "
                f"{num(us['median_factor_members'])}; non-members whose values match their "
                f"slot's: {pct(us['share_non_members_matching'])} (the others have P(member) = 0)")
        if sel := f.get("selection"):
            lines.append(f"selection {sel['rule']!r}: {sel['n_selected']} of {sel['n_records']} "
                         "records synthesized; members released whole (P(member) = 1, revealed): "
                         f"{sel['n_members_released_whole']}")
        return "\n".join(lines)

    def summary(self) -> Summary:
        """Header, the attack table beside the distance baseline, and notes."""
        f, s = self.file, self.settings

        def ci(key: str) -> str:
            iv = f.get(key)
            return "—" if not iv else f"[{iv[0]:.3f}, {iv[1]:.3f}]"

        rows = [
            (f"share of members with P(member) > {f['threshold']:.2g}",
             f["share_members_above"], ci("share_members_above_interval")),
            ("mean P(member), members", f["mean_p_member_members"], "—"),
            ("mean P(member), non-members", f["mean_p_member_non_members"], "—"),
            ("AUC − 0.5 (Bayesian log LR)", f["auc_advantage"], ci("auc_advantage_interval")),
            ("TPR − FPR at the threshold", f["tpr_fpr"], ci("tpr_fpr_interval")),
        ]
        if "dcr_auc_advantage" in f:
            rows += [
                ("AUC − 0.5 (distance to closest record)", f["dcr_auc_advantage"],
                 ci("dcr_auc_advantage_interval")),
                ("Spearman correlation, log LR vs −DCR", f["spearman_bayes_dcr"], "—"),
            ]
        if "dcr_overfitting" in f:
            rows.append(("synthetic rows closer to training than holdout",
                         f["dcr_overfitting"]["share_closer_to_training"], "—"))
        table = pd.DataFrame(rows, columns=["measure", "value", "95% bootstrap interval"])
        return Summary(
            "Membership disclosure risk",
            header=[
                ("members evaluated", f["n_members"]),
                ("non-members (holdout, look-alikes)", f["n_non_members"]),
                ("flagged targets (counted separately)", f["n_flagged"]),
                ("prior membership probability", s["prior"]),
                ("synthetic datasets m", s["m"]),
                ("posterior draws H", s["n_draws"]),
                *([("selection (records synthesized)",
                    f"{s['selection']} ({f['selection']['n_selected']} of "
                    f"{f['selection']['n_records']})"),
                   ("members released whole (P(member) = 1)",
                    f["selection"]["n_members_released_whole"])]
                  if f.get("selection") else []),
            ],
            tables={"attack": table},
            notes=[
                "P(member) is the intruder's posterior probability that the record was in the "
                "confidential data (methods, Membership disclosure risk); AUC − 0.5 and "
                "TPR − FPR are the attack's advantage over guessing with the base rate.",
                "The distance baseline is SDMetrics' / anonymeter's distance to the closest "
                "record: a member closer to the release than non-members scores as a member.",
            ],
            warnings=self.structured_warnings,
        )

    @draws("p_member")
    def _plot_p_member(self, ax: Any) -> Any:
        """Histograms of the posterior membership probability of members and non-members."""
        df = self.records
        ok = _unflagged(df)
        for role, color in (("member", "tab:red"), ("non-member", "tab:blue")):
            sel = ok & (df["role"] == role).to_numpy()
            ax.hist(df.loc[sel, "p_member"], bins=30, range=(0, 1), alpha=0.6, color=color,
                    label=f"{role}s ({int(sel.sum())})")
        ax.axvline(self.settings["prior"], color="k", ls="--",
                   label=f"prior {self.settings['prior']:.3g}")
        ax.set(xlabel="posterior membership probability", ylabel="targets (unflagged)")
        ax.legend(fontsize=8)
        return ax

    @draws("roc")
    def _plot_roc(self, ax: Any) -> Any:
        """ROC curves of the Bayesian score and of the distance baseline."""
        df = self.records[_unflagged(self.records)]
        y = (df["role"] == "member").to_numpy()
        scores = {"Bayesian log LR": df["log_lr"].to_numpy()}
        if "dcr" in df:
            scores["−DCR"] = -df["dcr"].to_numpy()
        for name, sc in scores.items():
            if y.all() or not y.any():
                break
            order = np.argsort(-sc, kind="stable")
            tpr = np.concatenate([[0.0], np.cumsum(y[order]) / y.sum()])
            fpr = np.concatenate([[0.0], np.cumsum(~y[order]) / (~y).sum()])
            ax.plot(fpr, tpr, label=name)
        ax.plot([0, 1], [0, 1], color="k", ls=":", label="guessing")
        ax.set(xlabel="false positive rate (non-members)", ylabel="true positive rate (members)")
        ax.legend(fontsize=8)
        return ax

    @draws("dcr")
    def _plot_dcr(self, ax: Any) -> Any:
        """The Bayesian log likelihood ratio against the distance to the closest record."""
        df = self.records[_unflagged(self.records)]
        if "dcr" not in df:
            ax.text(0.5, 0.5, "no distance baseline (dcr=False)", ha="center",
                    transform=ax.transAxes)
            return ax
        for role, color in (("member", "tab:red"), ("non-member", "tab:blue")):
            sel = (df["role"] == role).to_numpy()
            ax.scatter(df.loc[sel, "dcr"], df.loc[sel, "log_lr"], s=6, alpha=0.5, color=color,
                       label=role)
        ax.set_xlabel("distance to the closest released record")
        ax.set_ylabel("log likelihood ratio of membership")
        ax.legend(fontsize=8)
        return ax
