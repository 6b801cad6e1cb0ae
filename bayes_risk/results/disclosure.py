"""Results of synthpop's ``disclosure()`` and ``replicated.uniques()``."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk.data.coding import coding_text
from bayes_risk.results._base import RiskResult, draws
from bayes_risk.results._summary import ResultWarning, Summary

__all__ = ["DisclosureByTarget", "DisclosureMeasures", "ReplicatedUniques", "REPU_MEASURES"]

#: where the disclosure measures come from, in their summaries' notes
_SOURCE = ("Raab, Nowok & Dibben, 'Practical privacy metrics for synthetic data' (synthpop's "
           "disclosure measures)")

REPU_MEASURES = ("Original", "Synthetic", "Synthetic uniques in original", "Replicated uniques")


@dataclass(frozen=True, repr=False)
class ReplicatedUniques(RiskResult):
    """Unique records of synthetic datasets that replicate unique original records.

    Attributes
    ----------
    keys : list of str
        synthpop's ``keys`` of ``replicated.uniques()``.
    table : DataFrame
        One row per synthetic dataset (``syn``): uniques in the original and the synthetic
        dataset, synthetic uniques found in the original and replicated uniques, each with its
        ``%``, and ``n_original``, ``n_synthetic``.
    compat : str or None
        ``"synthpop"`` when synthpop's text comparison was reproduced.
    warnings : list of str
        Warning codes.
    """

    keys: list[str]
    table: pd.DataFrame
    compat: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_long(self) -> pd.DataFrame:
        """synthpop's layout: one row per dataset and measure, ``pct`` to 2 decimals."""
        rows = []
        for _, r in self.table.iterrows():
            for name in REPU_MEASURES:
                tot = r["n_original"] if name == "Original" else r["n_synthetic"]
                rows.append({"syn": int(r["syn"]), "measure": name, "number": int(r[name]),
                             "from_total": int(tot), "pct": round(100.0 * r[name] / tot, 2)})
        return pd.DataFrame(rows)

    def to_dataframe(self) -> pd.DataFrame:
        """The per-dataset table (a copy)."""
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary."""
        return to_jsonable({"keys": self.keys, "compat": self.compat,
                            "per_dataset": self.table.to_dict(orient="list"),
                            "warnings": list(self.warnings)})

    def summary(self) -> Summary:
        """Printable summary: the per-dataset table."""
        return Summary(
            "Replicated uniques",
            header=[("keys", ", ".join(self.keys)), ("synthetic datasets", len(self.table))],
            tables={"Per synthetic dataset": self.table},
            notes=["Replicated uniques: unique records of a synthetic dataset that are unique "
                   "in the original too (synthpop's replicated.uniques())."],
            warnings=self.structured_warnings,
        )

    plot_kinds = ("per_dataset",)

    @draws("per_dataset")
    def _plot_per_dataset(self, ax: Any) -> Any:
        """Percentage of each synthetic dataset's records that are replicated uniques."""
        t = self.table
        pct = 100.0 * t["Replicated uniques"].to_numpy(dtype=float) / t["n_synthetic"].to_numpy(
            dtype=float)
        pos = t["syn"].to_numpy()
        ax.bar(pos, pct, width=0.6)
        ax.set_xticks(pos)
        ax.set(xlabel="synthetic dataset", ylabel="replicated uniques (% of records)")
        return ax


@dataclass(frozen=True, repr=False)
class DisclosureMeasures(RiskResult):
    """Result of :func:`~bayes_risk.disclosure.disclosure_measures` (:doc:`/methods/disclosure`).

    Attributes
    ----------
    keys : list of str
    target : str
    ident : DataFrame
        One row per synthetic dataset (``syn``): ``UiO, UiS, UiOiS, repU`` (%).
    attrib : DataFrame
        ``Dorig, Dsyn, iS, DiS, DiSCO, DiSDiO`` (%), ``max_denom``, ``mean_denom`` (records).
    allCAPs : DataFrame
        ``baseCAPd, CAPd, CAPs, DCAP, TCAP`` (%).
    replicated_uniques : ReplicatedUniques
        synthpop's ``replicated.uniques()`` on the keys and the target.
    key_baseline : dict
        The original's figures on the keys: ``n_records``, ``n_key_combinations``,
        ``n_sample_uniques``, ``pct_sample_uniques`` and ``k_anonymity``.
    diagnostics : DataFrame
        Per dataset: ``n_synthetic``, ``n_over_denom_lim``, ``n_excluded_original``,
        ``n_excluded_synthetic``.
    target_levels : list of str
        Labels of the target's levels (intervals when grouped).
    settings : dict
    warnings : list of str
        Machine-readable codes.
    """

    keys: list[str]
    target: str
    ident: pd.DataFrame
    attrib: pd.DataFrame
    allCAPs: pd.DataFrame
    replicated_uniques: ReplicatedUniques
    key_baseline: dict[str, Any]
    diagnostics: pd.DataFrame
    target_levels: list[str]
    settings: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def m(self) -> int:
        """Number of synthetic datasets."""
        return len(self.ident)

    def means(self) -> dict[str, float]:
        """Mean of every measure over the synthetic datasets (NaN values skipped)."""
        out: dict[str, float] = {}
        for df in (self.ident, self.attrib, self.allCAPs):
            for c in df.columns:
                if c == "syn":
                    continue
                v = df[c].to_numpy(dtype=np.float64)
                out[c] = float(np.nanmean(v)) if np.any(~np.isnan(v)) else math.nan
        return out

    def to_dataframe(self) -> pd.DataFrame:
        """One row per synthetic dataset with every measure as a column."""
        rep = self.replicated_uniques.table.drop(columns=["syn"])
        return pd.concat(
            [self.ident, self.attrib.drop(columns=["syn"]), self.allCAPs.drop(columns=["syn"]),
             rep, self.diagnostics.drop(columns=["syn", "n_synthetic"])], axis=1)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary (the layout of ``summary.json``)."""
        def cols(df: pd.DataFrame) -> dict[str, list]:
            return {c: df[c].tolist() for c in df.columns if c != "syn"}

        return to_jsonable({
            "m": self.m,
            "keys": self.keys,
            "target": self.target,
            "n_original": self.key_baseline["n_records"],
            "n_synthetic": self.diagnostics["n_synthetic"].tolist(),
            "n_target_levels": len(self.target_levels),
            "ident": cols(self.ident),
            "attrib": cols(self.attrib),
            "allCAPs": cols(self.allCAPs),
            "means": self.means(),
            "replicated_uniques": self.replicated_uniques.to_dict(),
            "key_baseline": self.key_baseline,
            "diagnostics": cols(self.diagnostics),
            "settings": self.settings,
            "warnings": self.warnings,
        })

    def summary(self) -> Summary:
        """Printable summary: the keys' baseline and every measure per dataset, with means."""
        b = self.key_baseline
        levels = f"{len(self.target_levels) - 1} levels" + (
            f", grouped into {self.settings['ngroups_target']}"
            if self.settings.get("ngroups_target") else "")
        per = pd.concat([
            self.ident[["syn", "UiO", "repU"]],
            self.attrib[["Dorig", "DiSCO"]],
            self.allCAPs[["TCAP"]],
            self.replicated_uniques.table[["Replicated uniques"]],
        ], axis=1)
        means = pd.DataFrame(
            [{"measure": k, "mean (%)": v} for k, v in self.means().items()
             if k not in ("max_denom", "mean_denom")]
        )
        return Summary(
            "Empirical disclosure measures",
            header=[
                ("original records", b["n_records"]),
                ("synthetic datasets m", self.m),
                ("keys", ", ".join(self.keys)),
                ("target", f"{self.target} ({levels})"),
                ("sample uniques on the keys", f"{b['n_sample_uniques']} "
                 f"({b['pct_sample_uniques']:.2f}%)"),
                ("k-anonymity violations", ", ".join(
                    f"{v['n_violating']} records for k = {k}"
                    for k, v in b["k_anonymity"].items())),
                *([("keys coded as released", coding_text(coded))]
                  if (coded := self.settings.get("keys_coded_as_released")) else []),
            ],
            tables={"Per synthetic dataset (%)": per, "Means over datasets": means},
            notes=[f"{_SOURCE}; repU: replicated uniques, DiSCO: disclosive in synthetic and "
                   "correct in original."],
            warnings=self.structured_warnings,
        )

    plot_kinds = ("per_dataset",)

    @draws("per_dataset")
    def _plot_per_dataset(self, ax: Any) -> Any:
        """repU, DiSCO and TCAP of each synthetic dataset (percentages)."""
        pos = self.ident["syn"].to_numpy()
        for name, df, marker in (("repU", self.ident, "o"), ("DiSCO", self.attrib, "s"),
                                 ("TCAP", self.allCAPs, "^")):
            ax.plot(pos, df[name].to_numpy(dtype=float), marker, ls="-", lw=1, label=name)
        ax.set_xticks(pos)
        ax.set(xlabel="synthetic dataset", ylabel="%")
        ax.legend(loc="best")
        return ax


@dataclass(frozen=True, repr=False)
class DisclosureByTarget(RiskResult, Mapping):
    """synthpop's disclosure measures for several targets: a read-only mapping of target to
    :class:`DisclosureMeasures`, with the result family's methods.

    Attributes
    ----------
    by_target : dict of str to DisclosureMeasures
        One result per target, in the order computed.
    """

    by_target: dict[str, DisclosureMeasures]

    def __getitem__(self, target: str) -> DisclosureMeasures:
        return self.by_target[target]

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_target)

    def __len__(self) -> int:
        return len(self.by_target)

    @property
    def warnings(self) -> list[str]:
        """The codes of every target's result, each once."""
        return list(dict.fromkeys(c for r in self.by_target.values() for c in r.warnings))

    @property
    def structured_warnings(self) -> list[ResultWarning]:
        return [ResultWarning(w.code, w.message, f"target {t}")
                for t, r in self.by_target.items() for w in r.structured_warnings]

    def to_dataframe(self) -> pd.DataFrame:
        """Mean of every measure over the synthetic datasets: one row per target."""
        return pd.DataFrame([{"target": t, "keys": ", ".join(r.keys), **r.means()}
                             for t, r in self.by_target.items()])

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: ``{"targets": [...], "by_target": {target: its to_dict()}}``."""
        return to_jsonable({"targets": list(self.by_target),
                            "by_target": {t: r.to_dict() for t, r in self.by_target.items()}})

    def summary(self) -> Summary:
        """Printable summary: the means of every measure per target."""
        df = self.to_dataframe()
        cols = [c for c in ("target", "keys", "UiO", "repU", "Dorig", "DiSCO", "TCAP")
                if c in df.columns]
        first = next(iter(self.by_target.values()), None)
        return Summary(
            "Empirical disclosure measures by target",
            header=[("targets", ", ".join(self.by_target)),
                    ("synthetic datasets m", first.m if first is not None else 0)],
            tables={"Means over datasets (%)": df[cols]},
            notes=[f"Each target's full result: result[target].summary(). {_SOURCE}."],
            warnings=self.structured_warnings,
        )

    plot_kinds = ("targets",)

    @draws("targets")
    def _plot_targets(self, ax: Any) -> Any:
        """Mean repU, DiSCO and TCAP of each target (percentages)."""
        df = self.to_dataframe()
        x = np.arange(len(df))
        for k, name in enumerate(("repU", "DiSCO", "TCAP")):
            ax.bar(x + (k - 1) * 0.27, df[name].to_numpy(dtype=float), width=0.27, label=name)
        ax.set_xticks(x, df["target"].astype(str))
        ax.set(xlabel="target", ylabel="mean over datasets (%)")
        ax.legend(loc="best")
        return ax
