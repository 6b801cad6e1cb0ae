"""Results of the global utility measures: pMSE and the utility summary."""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk.results._base import RiskResult, draws, own_figure
from bayes_risk.results._summary import Summary

__all__ = ["PMSEResult", "UtilitySummary"]

#: the most columns the ``compare`` panel shows
COMPARE_PANELS = 24


@dataclass(frozen=True, repr=False)
class PMSEResult(RiskResult):
    """Result of :func:`~bayes_risk.utility.pmse` (formulas: :doc:`/methods/utility`).

    Attributes
    ----------
    pmse : ndarray of float, shape (m,)
        ``(1/N) Σ (p̂_i − c)²`` per synthetic dataset.
    e0, sd0 : ndarray of float, shape (m,)
        Null expectation and standard deviation of the pMSE (under ``null``).
    ratio : ndarray of float, shape (m,)
        ``pMSE / e0`` (synthpop's ``S_pMSE``; about 1 under the null).
    std : ndarray of float, shape (m,)
        ``(pMSE − e0) / sd0``.
    k : ndarray of int, shape (m,)
        Estimable coefficients of the logistic model with intercept (``-1`` for CART).
    df : ndarray of int, shape (m,)
        Degrees of freedom of the theory null (``-1`` for CART).
    c : ndarray of float, shape (m,)
        ``n_syn / N``.
    n_original, n_synthetic : int, ndarray of int
        Rows of the original and of each synthetic dataset.
    converged : ndarray of bool, shape (m,)
        Whether each logistic fit converged (always True for CART).
    null_pmse : ndarray of float
        Resampled null pMSEs: ``(m, n_perm)`` for ``perm`` (halved), ``(m (m − 1) / 2,)`` for
        ``pairs``, empty for ``theory``.
    nnosplits : tuple of int or None
        ``(resampled fits with pMSE < 1e-8, resampled fits)``.
    method, max_order, null : str, int, str
        Propensity model (``"logit"``, ``"cart"``), its highest interaction order minus 1 and
        the null used (``"theory"``, ``"perm"``, ``"pairs"``).
    incomplete : bool
        Whether the theory null counted only coefficients involving synthesized variables.
    synthesized, columns : list of str
        Synthesized columns; columns of the propensity model.
    settings : dict
        Further settings (CART parameters, tolerances, seed).
    warnings : list of str
        Machine-readable codes.
    """

    pmse: np.ndarray
    e0: np.ndarray
    sd0: np.ndarray
    ratio: np.ndarray
    std: np.ndarray
    k: np.ndarray
    df: np.ndarray
    c: np.ndarray
    n_original: int
    n_synthetic: np.ndarray
    converged: np.ndarray
    null_pmse: np.ndarray
    nnosplits: tuple[int, int] | None
    method: str
    max_order: int
    null: str
    incomplete: bool
    synthesized: list[str]
    columns: list[str]
    settings: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def m(self) -> int:
        """Number of synthetic datasets."""
        return int(self.pmse.size)

    @property
    def s_pmse(self) -> np.ndarray:
        """Alias of :attr:`ratio` (synthpop's name)."""
        return self.ratio

    @property
    def mean_pmse(self) -> float:
        """Mean pMSE over the synthetic datasets."""
        return float(np.mean(self.pmse))

    @property
    def mean_ratio(self) -> float:
        """Mean pMSE ratio over the synthetic datasets."""
        return float(np.mean(self.ratio))

    @property
    def mean_std(self) -> float:
        """Mean standardised pMSE over the synthetic datasets."""
        return float(np.mean(self.std))

    def to_frame(self) -> pd.DataFrame:
        """One row per synthetic dataset: pmse, e0, sd0, ratio, std, k, df, c, converged."""
        return pd.DataFrame({
            "dataset": np.arange(1, self.m + 1),
            "pmse": self.pmse, "e0": self.e0, "sd0": self.sd0, "ratio": self.ratio,
            "std": self.std, "k": self.k, "df": self.df, "c": self.c,
            "converged": self.converged,
        })

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (arrays as lists, ``nan`` → ``None``), with the means."""
        d = asdict(self)
        d["m"] = self.m
        d["mean"] = {"pmse": self.mean_pmse, "ratio": self.mean_ratio, "std": self.mean_std}
        return to_jsonable(d)

    to_dataframe = to_frame

    def summary(self) -> Summary:
        """Printable summary: the per-dataset pMSE table, its null and the means."""
        model = self.method + (f", max order {self.max_order}" if self.method == "logit" else "")
        return Summary(
            "Propensity-score mean squared error (pMSE)",
            header=[
                ("propensity model", model),
                ("null", self.null + (" (incomplete synthesis)" if self.incomplete else "")),
                ("original records", self.n_original),
                ("synthetic datasets m", self.m),
                ("columns", ", ".join(self.columns)),
                ("synthesized", ", ".join(self.synthesized) or "none"),
                ("mean pMSE", self.mean_pmse),
                ("mean pMSE ratio (S_pMSE)", self.mean_ratio),
                ("mean standardised pMSE", self.mean_std),
            ],
            tables={"Per synthetic dataset": self.to_frame()},
            notes=[
                "pMSE 0: the classifier cannot tell the synthetic from the original rows; the "
                "ratio to its null expectation is about 1 when the synthesis model is right "
                "(Snoke et al. 2018)."
            ],
            warnings=self.structured_warnings,
        )

    plot_kinds = ("ratio",)

    @draws("ratio")
    def _plot_ratio(self, ax: Any) -> Any:
        """pMSE ratio (``S_pMSE``) of each synthetic dataset against its null value 1."""
        v = np.asarray(self.ratio, dtype=float)
        pos = np.arange(1, v.size + 1)
        ax.plot(pos, v, "o", ms=5)
        ax.axhline(1.0, color="k", ls="--", lw=1, label="null value 1")
        ax.set_xticks(pos)
        ax.set(xlabel="synthetic dataset", ylabel="pMSE ratio (S_pMSE)")
        ax.legend(loc="best")
        return ax


@dataclass(frozen=True, repr=False)
class UtilitySummary(RiskResult):
    """Result of :func:`~bayes_risk.utility.utility_summary`.

    Attributes
    ----------
    pmse : PMSEResult
        pMSE, ratio (``S_pMSE``), standardised pMSE, ``k`` per synthetic dataset.
    overlap : DataFrame
        One row per estimand: original and combined synthetic estimates and intervals,
        ``overlap`` (Karr's ``J``), ``signed_overlap``, ``std_coef_diff`` and ``overlap_syn1 …
        overlap_synm`` (each dataset's own interval).
    comparison : DataFrame or None
        The formula comparison tables when formulas were given.
    estimand_kind : str
        ``"formulas"`` or ``"means_and_proportions"``.
    synthesized : list of str
        Synthesized columns used.
    synthesized_inferred : bool
        Whether ``synthesized`` was inferred as the columns that differ from the original.
    settings : dict
        Settings used.
    warnings : list of str
        Machine-readable codes.
    tables : TableUtility or None
        Per-table utility (:func:`~bayes_risk.utility.table_utility`): every table of up to
        ``settings["table_order"]`` columns.
    marginals : DataFrame or None
        synthpop ``compare()``'s percentages per column (``variable``, ``value``,
        ``original``, ``synthetic``; :func:`~bayes_risk.utility.compare_marginals`).
    quality : QualityReport or None
        SDMetrics' quality report (:func:`~bayes_risk.utility.quality_report`).
    """

    pmse: PMSEResult
    overlap: pd.DataFrame
    comparison: pd.DataFrame | None
    estimand_kind: str
    synthesized: list[str]
    synthesized_inferred: bool
    settings: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    tables: Any = None
    marginals: pd.DataFrame | None = None
    quality: Any = None

    @property
    def m(self) -> int:
        """Number of synthetic datasets."""
        return self.pmse.m

    @property
    def variable_utility(self) -> pd.DataFrame | None:
        """The one-way tables' statistics, one row per column (synthpop ``compare()``'s
        ``tab.utility``)."""
        if self.tables is None:
            return None
        t = self.tables.tables
        return t[t["order"] == 1].drop(columns="order").rename(columns={"table": "variable"})

    @property
    def overlap_per_dataset(self) -> np.ndarray:
        """Mean interval overlap over estimands for each synthetic dataset (own intervals)."""
        cols = [f"overlap_syn{l}" for l in range(1, self.m + 1)]
        vals = self.overlap[cols].to_numpy(dtype=np.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(vals, axis=0) if vals.size else np.full(self.m, math.nan)

    @property
    def mean_overlap(self) -> float:
        """Mean over estimands of the overlap of the original and combined intervals."""
        v = self.overlap["overlap"].to_numpy(dtype=np.float64)
        return float(np.nanmean(v)) if np.any(~np.isnan(v)) else math.nan

    def to_dict(self) -> dict[str, Any]:
        """The JSON layout written by ``bayes-risk utility`` as ``summary.json``."""
        p = self.pmse
        est_cols = [c for c in self.overlap.columns if not c.startswith("overlap_syn")]
        estimands = []
        for _, row in self.overlap.iterrows():
            d = {c: row[c] for c in est_cols}
            d["overlap_per_dataset"] = [row[f"overlap_syn{l}"] for l in range(1, self.m + 1)]
            estimands.append(d)
        out = {
            "m": self.m,
            "n_original": p.n_original,
            "n_synthetic": p.n_synthetic,
            "columns": p.columns,
            "synthesized": self.synthesized,
            "synthesized_inferred": self.synthesized_inferred,
            "pmse": {"per_dataset": p.pmse, "mean": p.mean_pmse},
            "s_pmse": {"per_dataset": p.ratio, "mean": p.mean_ratio},
            "pmse_std": {"per_dataset": p.std, "mean": p.mean_std},
            "pmse_e0": p.e0,
            "pmse_sd0": p.sd0,
            "k": p.k,
            "df": p.df,
            "null": p.null,
            "incomplete": p.incomplete,
            "nnosplits": p.nnosplits,
            "interval_overlap": {
                "kind": self.estimand_kind,
                "per_dataset": self.overlap_per_dataset,
                "mean": self.mean_overlap,
                "estimands": estimands,
            },
            "settings": self.settings,
            "warnings": self.warnings,
        }
        if self.tables is not None:
            worst = self.tables.tables.sort_values("S_pMSE", ascending=False, kind="stable")
            out["tables"] = {"order": self.tables.settings["order"],
                             "ngroups": self.tables.settings["ngroups"],
                             "n_tables": len(self.tables.tables),
                             "mean_s_pmse": float(self.tables.tables["S_pMSE"].mean()),
                             "worst": worst.head(5).to_dict(orient="records")}
            out["variables"] = self.variable_utility.to_dict(orient="records")
        if self.quality is not None:
            out["quality"] = self.quality.to_dict()
        return to_jsonable(out)

    def to_dataframe(self) -> pd.DataFrame:
        """The overlap table (one row per estimand; a copy of ``overlap``)."""
        return self.overlap.copy()

    def _labels(self) -> list[str]:
        o = self.overlap
        if "estimand" in o.columns:
            return [str(x) for x in o["estimand"]]
        if "term" in o.columns:
            return [str(x) for x in o["term"]]
        return [str(i + 1) for i in range(len(o))]

    def comparison_notes(self) -> list[str]:
        """How the intervals were combined and imputed columns compared, one sentence each."""
        st = self.settings or {}
        out = []
        if "combining_rules" in st:
            out.append(f"Combining rules: {st['combining_rules']} "
                       f"({st['combining_rules_reference']}): {st['combining_rules_reason']}")
        if st.get("imputed_columns"):
            out.append(f"Imputed columns ({st['imputed_columns_source']}): "
                       f"{', '.join(st['imputed_columns'])}. The synthesizer filled in their "
                       "missing values, so they are compared on the cells observed in the "
                       f"original ({st['imputed_comparison']}); this is like with like when the "
                       "values are missing at random (MISSING_AT_RANDOM_ASSUMED).")
        return out

    def headline(self) -> str:
        """The utility figures in a few lines, as ``bayes-risk utility`` prints them: pMSE,
        S_pMSE, the interval overlap, the quality score, the tables of lowest utility, how the
        intervals were combined and the warnings."""
        p, q, t = self.pmse, self.quality, self.tables.tables
        how = (self.settings or {}).get("synthesized_roles", "given")
        lines = [
            f"utility of m = {self.m} synthetic dataset(s) vs the original (n = {p.n_original})",
            f"synthesized columns ({how}): {', '.join(self.synthesized) or 'none'}",
            f"pMSE ({p.method}" + (f", max order {p.max_order}" if p.method == "logit" else "")
            + f"; null {p.null}): mean {p.mean_pmse:.6g}",
            f"S_pMSE (pMSE / null expectation): mean {p.mean_ratio:.4g}"
            f"  [per dataset {min(p.ratio):.4g} .. {max(p.ratio):.4g}]",
            f"standardised pMSE: mean {p.mean_std:.4g}",
            *([f"k (estimable coefficients): {sorted(set(int(k) for k in p.k))}"]
              if p.method == "logit" else []),
            f"interval overlap ({self.estimand_kind.replace('_', ' ')}, {len(self.overlap)} "
            f"estimands): mean {self.mean_overlap:.4f}",
            f"quality score (SDMetrics' definitions): {q.score:.4f} (column shapes "
            f"{q.column_shapes:.4f}, column pair trends {q.column_pair_trends:.4f})",
            f"per-table utility ({len(t)} tables of 1 to {self.tables.settings['order']} "
            "columns): largest S_pMSE " + ", ".join(
                f"{n} {v:.3g}" for n, v in t.sort_values("S_pMSE", ascending=False,
                                                        kind="stable").head(3)[
                    ["table", "S_pMSE"]].itertuples(index=False)),
            *(n[0].lower() + n[1:] for n in self.comparison_notes()),
        ]
        if self.warnings:
            lines.append(f"warnings: {', '.join(self.warnings)}")
        return "\n".join(lines)

    def summary(self) -> Summary:
        """Printable summary: pMSE per dataset and the interval overlap per estimand."""
        p = self.pmse
        how = "inferred" if self.synthesized_inferred else "given"
        cols = [c for c in ("estimand", "formula", "term", "estimate_orig", "estimate_syn",
                            "overlap", "signed_overlap", "std_coef_diff")
                if c in self.overlap.columns]
        return Summary(
            "Utility of the synthetic data",
            header=[
                ("synthetic datasets m", self.m),
                ("original records", p.n_original),
                (f"synthesized columns ({how})", ", ".join(self.synthesized) or "none"),
                ("pMSE model", p.method + (f", max order {p.max_order}"
                                           if p.method == "logit" else "")),
                ("mean pMSE", p.mean_pmse),
                ("mean pMSE ratio (S_pMSE)", p.mean_ratio),
                ("mean standardised pMSE", p.mean_std),
                (f"mean interval overlap ({self.estimand_kind.replace('_', ' ')})",
                 self.mean_overlap),
                *([] if self.quality is None else [
                    ("quality score (SDMetrics)", self.quality.score),
                    ("column shapes / column pair trends",
                     f"{self.quality.column_shapes:.4f} / "
                     f"{self.quality.column_pair_trends:.4f}")]),
            ],
            tables={"pMSE per synthetic dataset": p.to_frame(),
                    "Interval overlap per estimand": self.overlap[cols],
                    **({} if self.tables is None else {
                        "Tables with the largest S_pMSE (synthpop utility.tables)":
                            self.tables.tables.sort_values("S_pMSE", ascending=False,
                                                           kind="stable").head(5)})},
            notes=["pMSE: Snoke et al. (2018); interval overlap: Karr et al. (2006), synthetic "
                   "intervals combined by the rules below.", *self.comparison_notes()],
            warnings=self.structured_warnings,
        )

    plot_kinds = ("overlap", "pmse", "tables", "compare")

    def _figsize(self, kind: str) -> tuple[float, float]:
        if kind == "overlap":
            return (6.0, max(3.0, 0.35 * len(self.overlap) + 1.5))
        if kind == "tables" and self.tables is not None:
            k = len(self.tables.settings["columns"])
            return (max(5.5, 0.62 * k + 3.2), max(4.5, 0.62 * k + 2.0))
        if kind == "compare" and self.marginals is not None:
            k = min(self.marginals["variable"].nunique(), COMPARE_PANELS)
            return (13.0, 2.9 * -(-k // 4) + 0.6)
        return (6.0, 4.0)

    def _checked_tables(self) -> Any:
        if self.tables is None or self.marginals is None:
            from bayes_risk.exceptions import ValidationError

            raise ValidationError("this summary has no per-table utility (made without it).",
                                  code="RESULT_UNSUITED")
        return self.tables

    @draws("tables")
    def _plot_tables(self, ax: Any, statistic: str = "S_pMSE") -> Any:
        """Heat map of the two-way tables' ``statistic`` (synthpop's ``utility.tables`` plot),
        the one-way tables on the diagonal, each cell's value written in it."""
        from matplotlib.colors import LinearSegmentedColormap

        mat = self._checked_tables().pairs(statistic)
        alone = own_figure(ax)  # the colour bar's axes would stop the plot's own layout
        v = mat.to_numpy(dtype=float)
        cmap = LinearSegmentedColormap.from_list("utility", ["#ebebeb", "#E41A1C"])
        top = float(np.nanmax(v)) if np.isfinite(v).any() else 1.0
        im = ax.imshow(v, cmap=cmap, vmin=0, vmax=max(top, 1e-12))
        k = len(mat)
        ax.set_xticks(range(k), [str(c) for c in mat.columns], rotation=45, ha="right",
                      rotation_mode="anchor")
        ax.set_yticks(range(k), [str(c) for c in mat.index])
        for i in range(k):
            for j in range(k):
                if np.isfinite(v[i, j]):
                    ax.text(j, i, f"{v[i, j]:.2g}", ha="center", va="center", fontsize=8,
                            color="white" if v[i, j] > 0.6 * top else "black")
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label=statistic)
        ax.set_title(f"{statistic} of every pair of columns (diagonal: each column alone)",
                     fontsize=10)
        if alone:
            ax.figure.tight_layout()
        return ax

    @draws("compare")
    def _plot_compare(self, ax: Any, columns: Any = None) -> Any:
        """synthpop's ``compare()`` panel: each column's percentages of records per level or
        histogram bin, original against the datasets pooled, its one-way S_pMSE in the title
        (the first :data:`COMPARE_PANELS` columns, or ``columns``)."""
        self._checked_tables()
        marg, util = self.marginals, self.variable_utility.set_index("variable")
        cols = list(dict.fromkeys(marg["variable"])) if columns is None else list(columns)
        cols = cols[:COMPARE_PANELS]
        fig = ax.figure
        grid = ax.get_subplotspec().subgridspec(-(-len(cols) // 4), 4, hspace=0.55, wspace=0.3)
        ax.set_axis_off()  # the panels take its place
        first = None
        for n, c in enumerate(cols):
            a = fig.add_subplot(grid[n // 4, n % 4])
            first = first or a
            d = marg[marg["variable"] == c]
            x = np.arange(len(d))
            a.bar(x - 0.2, d["original"], width=0.4, color="#1A3C5A", label="original")
            a.bar(x + 0.2, d["synthetic"], width=0.4, color="#4187BF", label="synthetic")
            step = max(1, -(-len(d) // 8))
            a.set_xticks(x[::step], [str(v)[:12] for v in d["value"]][::step], rotation=35,
                         ha="right", rotation_mode="anchor", fontsize=7)
            a.tick_params(axis="y", labelsize=7)
            s_pmse = util["S_pMSE"].get(c, math.nan)
            a.set_title(f"{str(c)[:24]}: S_pMSE = {s_pmse:.2f}", fontsize=9)
            if n % 4 == 0:
                a.set_ylabel("% of records", fontsize=8)
        if first is not None:
            first.legend(fontsize=7, loc="upper right")
        fig.subplots_adjust(left=0.05, right=0.98, bottom=0.08, top=0.95)
        fig.sca(ax)  # the host Axes, returned, stays pyplot's current one (as every plot's)
        return ax

    @draws("overlap")
    def _plot_overlap(self, ax: Any) -> Any:
        """Original and combined synthetic interval of every estimand, with their overlap."""
        o = self.overlap
        y = np.arange(len(o))[::-1].astype(float)
        for col, dy, label, color in (("orig", 0.15, "original", "C0"),
                                      ("syn", -0.15, "synthetic (combined)", "C1")):
            est = o[f"estimate_{col}"].to_numpy(dtype=float)
            lo = o[f"ci_lower_{col}"].to_numpy(dtype=float)
            hi = o[f"ci_upper_{col}"].to_numpy(dtype=float)
            ax.errorbar(est, y + dy, xerr=[est - lo, hi - est], fmt="o", ms=3, capsize=2,
                        color=color, label=label)
        ax.set_yticks(y)
        ax.set_yticklabels(
            [f"{lab} (J = {v:.2f})" for lab, v in zip(self._labels(), o["overlap"], strict=True)]
        )
        ax.set_xlabel("estimate and confidence interval")
        ax.legend(loc="best")
        return ax

    @draws("pmse")
    def _plot_pmse(self, ax: Any) -> Any:
        """pMSE ratio of each synthetic dataset (see :class:`PMSEResult`)."""
        return self.pmse._plot_ratio(ax)
