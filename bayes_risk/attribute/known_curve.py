"""Attribute risk as the intruder's known share of the other records grows.

See :doc:`/user_guide/attribute`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

import pandas as pd

from bayes_risk._constraints import (
    Options,
    check_keywords,
    check_value,
    check_vector,
)
from bayes_risk._specs import cli_option
from bayes_risk._terminal import progress
from bayes_risk.attribute.specs import FRACTIONS, ScenarioSpec
from bayes_risk.exceptions import interruptible
from bayes_risk.results._base import RiskResult, draws, legend_below
from bayes_risk.results._summary import ResultWarning, Summary
from bayes_risk.warning_codes import message

__all__ = ["known_fraction_curve", "KnownFractionResult"]

#: the ``attribute_risk`` arguments :func:`known_fraction_curve` passes on
_OPTIONS = ("records", "candidates", "prior", "estimator", "allow_other_model")


@interruptible
def known_fraction_curve(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    model: Any,
    fractions: Annotated[Sequence[float], cli_option(
        "--known-curve", "also compute the attribute risk as the share of records the intruder "
        "knows grows, at these shares in [0, 1] (1: the worst case; 0: no other record known), "
        "the refits made once (DIR/known_curve.csv and .png)", nargs="+", type=float,
        metavar="F")] = (0.0, 0.25, 0.5, 0.75, 1.0),
    seed: int = 0,
    random_seed: Any = None,
    progressbar: bool = True,
    **kwargs: Any,
) -> KnownFractionResult:
    """Attribute risk as the share of the other records the intruder knows grows.

    Runs :func:`~bayes_risk.attribute.attribute_risk` with
    ``ScenarioSpec("known_records", known_fraction=f, seed=seed)`` for each ``f`` (nested sets,
    refits shared); ``f = 1`` is the worst case.

    Parameters
    ----------
    original, synthetic, model
        As in :func:`~bayes_risk.attribute.attribute_risk` (a class P model).
    fractions : sequence of float
        Known shares in ``[0, 1]`` (sorted, duplicates dropped).
    seed : int
        As ``seed`` of :class:`~bayes_risk.attribute.ScenarioSpec`.
    random_seed : int, Generator or None
        As in ``attribute_risk`` (one seed shared by every fraction).
    progressbar : bool
    **kwargs
        ``records``, ``candidates``, ``prior``, ``estimator``, ``allow_other_model``.

    Returns
    -------
    KnownFractionResult

    Raises
    ------
    ValidationError
        A fraction outside ``[0, 1]``, an empty ``fractions``, an unknown argument.
    NotSupportedError
        A class O or plug-in model.

    Examples
    --------
    >>> curve = known_fraction_curve(orig, syn, model=model,
    ...                              fractions=[0, 0.5, 1])  # doctest: +SKIP
    >>> curve.to_dataframe()[["known_fraction", "mean_p_true", "n_flagged"]]  # doctest: +SKIP
    """
    from bayes_risk.attribute.api import attribute_risk
    from bayes_risk.attribute.knowledge import file_measures, one_seed, with_shared_refits

    check_keywords(kwargs, _OPTIONS, "known_fraction_curve")
    fr = sorted(set(check_vector(fractions, FRACTIONS, "fractions").tolist()))
    seed_all = one_seed(random_seed)
    options = dict(kwargs)
    options["estimator"] = with_shared_refits(
        original, synthetic, model=model, records=options.get("records"), random_seed=seed_all,
        progressbar=progressbar, **{k: v for k, v in options.items() if k != "records"})
    rows, results, codes = [], [], {}
    for f in progress(fr, description="known-records curve", unit="fractions",
                      enabled=progressbar):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = attribute_risk(
                original, synthetic, model=model,
                scenario=ScenarioSpec("known_records", known_fraction=f, seed=seed),
                random_seed=seed_all, progressbar=False, **options)
        row = {"known_fraction": f, "n_known": int(res.settings["n_known"])}
        row.update(file_measures(res))
        p = res.records["p_true"][res.records["flag_codes"] == ""]
        row["mean_p_true_unflagged"] = float(p.mean()) if p.notna().any() else float("nan")
        row["null_mean_p_true_unflagged"] = ((res.null() or {}).get("mean_p_true") or {}).get(
            "expected", float("nan"))
        rows.append(row)
        results.append(res)
        for c in [*res.warnings, *(getattr(w.message, "code", None) for w in caught)]:
            if c:
                codes.setdefault(c, []).append(f)
    settings = {k: results[0].settings.get(k) for k in
                ("estimator", "prior", "candidates", "n_draws", "m") if k in results[0].settings}
    settings.update(seed=seed, random_seed=seed_all, n=len(original))
    return KnownFractionResult(
        table=pd.DataFrame(rows), results=tuple(results), settings=settings,
        warnings=tuple(codes),
        warning_details={c: f"at known fraction(s) {fs}" for c, fs in codes.items()},
    )


@dataclass(frozen=True, repr=False)
class KnownFractionResult(RiskResult):
    """The risk curve of :func:`known_fraction_curve`: a ``table`` row per known fraction."""

    table: pd.DataFrame
    results: tuple[Any, ...]
    settings: dict[str, Any]
    warnings: tuple[str, ...] = ()
    warning_details: dict[str, str] = field(default_factory=dict)

    plot_kinds: ClassVar[tuple[str, ...]] = ("curve",)

    def to_dataframe(self) -> pd.DataFrame:
        """The curve: one row per known fraction."""
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe curve and settings (not the per-fraction results)."""
        from bayes_risk._io import to_jsonable

        return to_jsonable({"table": self.table.to_dict(orient="list"),
                            "settings": self.settings, "warnings": list(self.warnings)})

    @property
    def structured_warnings(self) -> list[ResultWarning]:
        # warning_details says where (the fractions); the meaning is the code's own
        return [ResultWarning(c, message(c), self.warning_details.get(c, ""))
                for c in self.warnings]

    def headline(self) -> str:
        """The mean ``p_true`` at each share of the other records known, in one line."""
        t = self.table
        return "risk by the share of other records known: " + ", ".join(
            f"{f:g}: mean p_true {100 * p:.3g} %"
            for f, p in zip(t["known_fraction"], t["mean_p_true"], strict=True))

    def summary(self) -> Summary:
        """The curve as a table, with the settings and how to read it."""
        s = self.settings
        return Summary(
            "Attribute risk by the share of other records the intruder knows",
            header=[("records", s.get("n")), ("estimator", s.get("estimator")),
                    ("prior", s.get("prior")), ("order seed", s.get("seed"))],
            tables={"risk by known fraction": self.table},
            notes=["known_fraction 1 is the worst case (every other record known); 0 is an "
                   "intruder who knows none. A flagged record's estimate cannot be trusted "
                   "(small effective sample of the reweighted draws): compare "
                   "mean_p_true_unflagged and n_flagged. The risk need not grow "
                   "monotonically with the share known."],
            warnings=self.structured_warnings,
        )

    @draws("curve")
    def _plot_curve(self, ax: Any, measure: str = "mean_p_true") -> Any:
        check_value(measure, Options(("mean_p_true", "prop_top", "mean_p_true_unflagged"),
                                     listed=True), "measure")
        t = self.table
        x = 100 * t["known_fraction"].to_numpy(float)
        ax.plot(x, 100 * t[measure].to_numpy(float), "o-", color="C0", label=measure)
        # what the figure would be if the release said nothing of the records (not 1/G: the
        # share ranked first of such a release is far below it; methods page)
        ax.plot(x, 100 * t[f"null_{measure}"].to_numpy(float), "--", color="k",
                label="if the release said nothing of the records")
        bad = t["n_flagged"].to_numpy() > 0
        if bad.any():
            ax.scatter(x[bad], 100 * t[measure].to_numpy(float)[bad], s=80, facecolors="none",
                       edgecolors="C3", label="some records flagged")
        ax.set_xlabel("other records known to the intruder (%)")
        ax.set_ylabel(f"{measure} (%)")
        ax.set_title("Attribute risk by the share of records known", fontsize=10)
        legend_below(ax)
        return ax
