"""Utility against identification risk, per synthetic dataset and over repeated syntheses
(Hornby & Hu 2021, §4.2–4.3, Figs 8–10): the measures of :func:`~bayes_risk.pmse` and
:func:`~bayes_risk.identification_risk`, called here, never re-implemented.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import (
    HasMethods,
    Interval,
    Options,
    SequenceOf,
    check_params,
    check_value,
)
from bayes_risk._rng import RandomSeed, child_sequence, seed_sequence
from bayes_risk._terminal import progress
from bayes_risk.exceptions import BayesRiskWarning, ValidationError, warning_code

__all__ = ["plot_utility_risk", "repeated_syntheses", "utility_risk_points"]

#: identification measures of one dataset kept as columns (per-dataset aggregation)
_RISKS = ("expected_match_risk", "expected_match_rate", "true_match_rate_targets",
          "false_match_rate")


def utility_risk_points(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    known: Sequence[str],
    synthesized: Iterable[str] | None = None,
    label: str = "release",
    categorical: Iterable[str] | None = None,
    schema: Any = None,
    max_order: int = 1,
    utility_method: str = "logit",
    progressbar: bool = False,
    **identification_options: Any,
) -> pd.DataFrame:
    """Utility and identification risk of every synthetic dataset of a release.

    Parameters
    ----------
    original : DataFrame
    synthetic : SyntheticData or sequence of DataFrame
    known : sequence of str
        The intruder's known columns, as in :func:`~bayes_risk.identification_risk`.
    synthesized : iterable of str, optional
        The synthesized columns (default: the manifest's, else the known columns whose released
        values differ from the original's).
    label : str
        The release's name in the ``scenario`` column.
    categorical, schema
        Column types, passed to both measures.
    max_order, utility_method
        The propensity model of :func:`~bayes_risk.pmse` (``PropensitySpec``).
    progressbar : bool
    **identification_options
        Further arguments of :func:`~bayes_risk.identification_risk` (not ``aggregation``).

    Returns
    -------
    DataFrame
        One row per dataset: ``scenario``, ``dataset`` (1-based), ``pmse``, ``s_pmse``,
        ``expected_match_risk``, ``expected_match_rate``, ``true_match_rate_targets``,
        ``false_match_rate``.
    """
    if "aggregation" in identification_options:
        raise ValidationError(
            "utility_risk_points gives one point per dataset: aggregation is 'per_dataset' "
            f"and cannot be set (got aggregation={identification_options['aggregation']!r}).",
            code="OPTION_CONFLICT")
    util, risk = _measures(original, synthetic, known=known, synthesized=synthesized,
                           aggregation="per_dataset", categorical=categorical, schema=schema,
                           max_order=max_order, utility_method=utility_method,
                           progressbar=progressbar, **identification_options)
    per = risk.per_dataset
    m = len(np.atleast_1d(util.pmse))
    out = pd.DataFrame({"scenario": [label] * m, "dataset": np.arange(1, m + 1),
                        "pmse": np.asarray(util.pmse, dtype=float),
                        "s_pmse": np.asarray(util.s_pmse, dtype=float)})
    for c in _RISKS:
        out[c] = np.asarray(per[c], dtype=float)
    return out


def _measures(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    known: Sequence[str],
    aggregation: str,
    synthesized: Iterable[str] | None = None,
    categorical: Iterable[str] | None = None,
    schema: Any = None,
    max_order: int = 1,
    utility_method: str = "logit",
    progressbar: bool = False,
    **identification_options: Any,
) -> tuple[Any, Any]:
    """The pMSE of every dataset and the identification risk of the release (``aggregation``)."""
    from bayes_risk.identification.api import identification_risk
    from bayes_risk.identification.prepare import known_columns
    from bayes_risk.utility.pmse import PropensitySpec, pmse

    syn_cols = None if synthesized is None else list(synthesized)
    if syn_cols is None and not getattr(getattr(synthetic, "schema", None), "synthesized", None):
        # plain tables: no manifest to say which; the known columns found synthesized
        syn_cols = known_columns(original, synthetic, known, None,
                                 identification_options.get("replicates"))[1]
    util = pmse(original, synthetic,
                propensity=PropensitySpec(method=utility_method, max_order=max_order),
                schema=schema, categorical=categorical, synthesized=syn_cols)
    risk = identification_risk(original, synthetic, known=known, synthesized=syn_cols,
                               categorical=categorical, schema=schema, aggregation=aggregation,
                               progressbar=progressbar, **identification_options)
    return util, risk


def repeated_syntheses(
    original: pd.DataFrame,
    *,
    synthesizer: Any,
    known: Sequence[str],
    synthesized: Iterable[str] | None = None,
    m: Sequence[int] = (1, 10, 20),
    n_repeats: int = 100,
    aggregation: Literal["per_dataset", "pooled"] = "per_dataset",
    random_seed: RandomSeed = None,
    progressbar: bool = True,
    **options: Any,
) -> pd.DataFrame:
    """Utility and identification risk over repeated syntheses, for several numbers of datasets.

    Each repetition is a new release (a child seed stream each) measured as by
    :func:`utility_risk_points` (Hornby & Hu 2021, §4.3, Fig. 10; :doc:`/gallery/hornby_hu_2021`).

    Parameters
    ----------
    original : DataFrame
        The confidential data the synthesizer was fitted to.
    synthesizer
        A fitted synthesizer (anything with ``synthesize(m, random_seed=...)``).
    known : sequence of str
    synthesized : iterable of str, optional
        The synthesized columns (default: each release's manifest).
    m : sequence of int
        Numbers of synthetic datasets (default Hornby & Hu's 1, 10 and 20).
    n_repeats : int
        Repetitions per ``m``.
    aggregation : {"per_dataset", "pooled"}
        A repetition's identification measures: the mean over its datasets, or those of the
        pooled release (the pMSE is the mean either way).
    random_seed : RandomSeed
    progressbar : bool
        One progress bar over all repetitions.
    **options
        Arguments of :func:`utility_risk_points` (``match``, ``categorical``, ...).

    Returns
    -------
    DataFrame
        One row per repetition: ``m``, ``repeat`` (0-based) and the columns of
        :func:`utility_risk_points` but ``scenario`` and ``dataset``.
    """
    ms = [int(k) for k in check_value(list(m), SequenceOf(Interval(int, 1), "positive integers",
                                                          unique=True), "m",
                                      code="BAD_OPTION_VALUE")]
    n_repeats = check_params(
        dict(aggregation=aggregation, n_repeats=n_repeats),
        {"aggregation": Options(("per_dataset", "pooled"), listed=True),
         "n_repeats": Interval(int, 1)}, code="BAD_OPTION_VALUE")["n_repeats"]
    check_value(synthesizer, HasMethods(("synthesize",), "a fitted synthesizer with a "
                                        "synthesize(m, random_seed=...) method"),
                "synthesizer", code="MODEL_UNSUITED")
    seq = seed_sequence(random_seed)
    jobs = [(i, k, r) for i, k in enumerate(ms) for r in range(int(n_repeats))]
    rows = []
    # a warning of the measures (NO_MATCH, ...) is raised once, with how many repetitions gave
    # it, instead of once per repetition
    seen: dict[tuple[type, str], list[Any]] = {}
    for i, k, r in progress(jobs, description="repeated syntheses", unit="syntheses",
                            enabled=progressbar,
                            label=lambda j, t: f"synthesis {j} of {t}"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            release = synthesizer.synthesize(
                k, random_seed=child_sequence(child_sequence(seq, i), r))
            if aggregation == "pooled":
                opts = {k_: v for k_, v in options.items() if k_ != "label"}
                util, risk = _measures(original, release, known=known, synthesized=synthesized,
                                       aggregation="pooled", **opts)
                point = {"pmse": float(np.mean(util.pmse)),
                         "s_pmse": float(np.mean(util.s_pmse)),
                         **{c: float(risk.file[c]) for c in _RISKS}}
            else:
                pts = utility_risk_points(original, release, known=known,
                                          synthesized=synthesized, **options)
                point = pts.drop(columns=["scenario", "dataset"]).mean().to_dict()
        for w in caught:
            key = (w.category, warning_code(w.message, w.category))
            seen.setdefault(key, [w.message, set()])[1].add((k, r))
        rows.append({"m": k, "repeat": r, **point})
    for (category, code), (message, where) in seen.items():
        first = " ".join(str(message).split())
        if first.startswith(f"{code}: "):
            first = first[len(code) + 2:]
        text = f"{code}: in {len(where)} of {len(jobs)} repetitions (the first: {first})"
        w = (category(text, code=code) if issubclass(category, BayesRiskWarning)
             else category(text))
        warnings.warn(w, stacklevel=2)
    return pd.DataFrame(rows)


def plot_utility_risk(
    points: pd.DataFrame,
    *,
    utility: str = "pmse",
    risk: str = "expected_match_risk",
    by: str = "scenario",
    whiskers: bool = False,
    ax: Any = None,
) -> Any:
    """Utility against risk, one point per dataset (or repetition), a quartile rectangle per
    group (Hornby & Hu 2021, Figs 8–10).

    Parameters
    ----------
    points : DataFrame
        From :func:`utility_risk_points` or :func:`repeated_syntheses` (``by="m"``).
    utility, risk : str
        Columns on the x and y axes.
    by : str
        Column whose groups get their own colour and rectangle.
    whiskers : bool
        Also draw lines to the minimum and maximum (Hornby & Hu's "2D box plot", Fig. 10).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    for c in (utility, risk, by):
        if c not in points.columns:
            raise ValidationError(f"points has no column {c!r}; columns: "
                                  f"{', '.join(map(str, points.columns))}.",
                                  code="UNKNOWN_COLUMN")
    import matplotlib as mpl
    from matplotlib.patches import Rectangle

    from bayes_risk.results._base import own_figure, pyplot_axes

    if ax is None:
        ax = pyplot_axes((5.6, 4.2))
    colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, (name, g) in enumerate(points.groupby(by, sort=False)):
        col = colours[j % len(colours)]
        x, y = g[utility].to_numpy(float), g[risk].to_numpy(float)
        ax.scatter(x, y, s=14, color=col, alpha=0.7, label=f"{by} {name}" if by == "m"
                   else str(name))
        (x1, x3), (y1, y3) = np.nanquantile(x, [0.25, 0.75]), np.nanquantile(y, [0.25, 0.75])
        ax.add_patch(Rectangle((x1, y1), x3 - x1, y3 - y1, fill=False, edgecolor=col, lw=1.5))
        if whiskers:
            xm, ym = (x1 + x3) / 2, (y1 + y3) / 2
            ax.plot([np.nanmin(x), x1], [ym, ym], color=col, lw=1)
            ax.plot([x3, np.nanmax(x)], [ym, ym], color=col, lw=1)
            ax.plot([xm, xm], [np.nanmin(y), y1], color=col, lw=1)
            ax.plot([xm, xm], [y3, np.nanmax(y)], color=col, lw=1)
    ax.set_xlabel(f"{utility} (lower = more useful)")
    ax.set_ylabel(risk.replace("_", " "))
    # scientific tick labels where the axis has matplotlib's plain number formatter only: an Axes
    # the caller gave (or pyplot's current one) may be log-scaled or carry an earlier plot's
    # formatter, which matplotlib cannot set so
    from matplotlib.ticker import ScalarFormatter

    for axis, mpl_axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        if isinstance(mpl_axis.get_major_formatter(), ScalarFormatter):
            ax.ticklabel_format(axis=axis, style="sci", scilimits=(-3, 4))
    ax.legend(fontsize=8)
    ax.set_title("utility and identification risk: quartile rectangle per "
                 + ("number of datasets" if by == "m" else by), fontsize=9)
    if own_figure(ax):
        ax.figure.tight_layout()
    return ax
