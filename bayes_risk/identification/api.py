"""Public entry points: :func:`identification_risk` and :func:`radius_sweep` (Hu 2019 §4).

The engine is staged: ``prepare`` (:mod:`~bayes_risk.identification.prepare`) builds a typed plan,
``evaluate`` (:mod:`~bayes_risk.identification.evaluate`) runs the matching engine over
partitions of the targets through an executor (in process, or on a Dask cluster), ``assemble``
(:mod:`~bayes_risk.identification.assemble`) computes the record- and file-level measures.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from bayes_risk.data.schema import Schema
from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.exceptions import interruptible
from bayes_risk.executors import InProcessExecutor, as_executor
from bayes_risk.identification import engine as _engine
from bayes_risk.identification.assemble import assemble
from bayes_risk.identification.evaluate import record_pool, run_engine
from bayes_risk.identification.prepare import COMPAT_MODES, prepare
from bayes_risk.results.identification import IdentificationResult

if TYPE_CHECKING:
    from bayes_risk.identification.replicates import PosteriorReplicates

__all__ = ["IdentificationResult", "identification_risk", "radius_sweep", "COMPAT_MODES"]


def _is_posterior_replicates(obj: Any) -> bool:
    """``isinstance(obj, PosteriorReplicates)`` without importing ``replicates`` (and its
    batches and Monte Carlo error modules) in runs that do not use it: an instance exists only
    once that module has been imported."""
    mod = sys.modules.get("bayes_risk.identification.replicates")
    return mod is not None and isinstance(obj, mod.PosteriorReplicates)


# ----------------------------------------------------------------------------------------------
# result
# ----------------------------------------------------------------------------------------------
@interruptible
def identification_risk(
    original: pd.DataFrame,
    synthetic: Sequence[pd.DataFrame] | SyntheticData | None,
    *,
    known_unsynthesized: Sequence[str] = (),
    known_synthesized: Sequence[str] = (),
    categorical: Sequence[str] | None = None,
    schema: Schema | None = None,
    radius: float | Mapping[str, float] | Sequence[float] | None = None,
    radius_type: Literal["percentage", "absolute", "quantile_sd"] = "percentage",
    r_min: float | Mapping[str, float] | None = None,
    quantile_groups: int = 20,
    window: Literal["closed", "open"] | None = None,
    shape: Literal["rectangle", "ellipse", "mahalanobis", "legacy_hh_euclid"] | None = None,
    aggregation: Literal["pooled", "per_dataset"] | None = None,
    membership: Literal["known", "unknown"] | None = None,
    population_counts: Any = None,
    population_estimate: Literal["default", "scaled", "expected_inverse"] = "default",
    sampling_fraction: float | None = None,
    population_size: int | None = None,
    strategy: Any = "always",
    fallback: Literal["none", "unsynthesized"] | None = None,
    targets: pd.DataFrame | None = None,
    target_id: str | None = None,
    original_id: str | None = None,
    replicates: Sequence[Any] | PosteriorReplicates | None = None,
    compat: Literal["IdentificationRiskCalculation"] | None = None,
    missing_known: Literal["any", "level"] = "any",
    progressbar: bool = True,
    executor: Any = None,
) -> IdentificationResult:
    """Identification disclosure risk of partially synthetic data (Hu 2019 §4).

    An intruder holds the true values of the known columns (``known_unsynthesized`` ∪
    ``known_synthesized``) for every target and looks for the target among the released
    records. In each replicate of the synthesized known columns (by default the ``m`` released
    datasets, Drechsler & Reiter 2008 §3) the matching records get probability ``1/n_t`` (known
    membership) or ``min(1/F_t, 1/n_t)`` (unknown membership, ``Pr(J = n+1) = max(0, 1 − n_t/F_t)``,
    Drechsler & Reiter 2008). ``aggregation="pooled"`` averages these over replicates and
    declares the records tied at the top (Reiter & Mitra 2009); ``"per_dataset"`` evaluates
    every dataset separately and averages the measures (Hornby & Hu 2021).

    Parameters
    ----------
    original : DataFrame
        Confidential data ``y`` (``n`` rows).
    synthetic : list of DataFrame or SyntheticData
        The ``m`` released datasets, same rows as ``original``. May be ``None`` when
        ``replicates`` are given.
    known_unsynthesized, known_synthesized : sequence of str
        Known columns released unchanged / synthesized.
    categorical : sequence of str, optional
        Integer-coded factors (schema inference otherwise treats integers as counts).
    schema : Schema, optional
        Column types (overrides inference).
    radius : float, dict or sequence, optional
        Radius ``r_j`` for continuous columns: a float (every continuous known column), a dict
        ``{column: r}`` (count columns such as age may be given a radius too), or — in compat
        mode only — a vector assigned in data-frame column order. Count columns not named are
        matched exactly (in compat mode a scalar applies to every non-categorical column).
    radius_type : {"percentage", "absolute", "quantile_sd"}
        ``R = r·|t|`` (Hornby & Hu 2021), ``R = r``, or the quantile-group standard deviation (D&R
        2009; ``radius`` then multiplies it, default 1).
    r_min : float or dict, optional
        Floor of the percentage radius (``R = max(r|t|, r_min)``) (a choice of this package).
    quantile_groups : int
        ``Q`` for ``quantile_sd`` (default 20).
    window : {"closed", "open"}, optional
        ``|x − t| ≤ R`` (default, as Hornby & Hu's text) or ``< R`` (the R package).
    shape : {"rectangle", "ellipse", "mahalanobis", "legacy_hh_euclid"}, optional
        How several radius columns combine (methods, Matching rules); ``mahalanobis`` matches when
        ``(x − t)ᵀ S⁻¹ (x − t) ≤ r²`` with ``S`` the covariance of the original's values of the
        radius columns and ``r`` the one ``radius`` (a Mahalanobis distance; Hu 2019 §4.2.2);
        ``legacy_hh_euclid`` reproduces the package's ``euclideanDist=TRUE`` and is meant for
        compatibility only.
    aggregation : {"pooled", "per_dataset"}, optional
        Default ``"pooled"`` (compat: ``"per_dataset"``).
    membership : {"known", "unknown"}, optional
        Whether the intruder knows the targets are in the sample (default ``"known"``).
    population_counts : mapping, DataFrame, array, "loglinear_original" or "loglinear_synthetic"
        Population counts ``F_t`` for ``membership="unknown"``: true counts keyed by the tuple of
        known values (order: unsynthesized then synthesized known columns) or a table of the
        known columns plus a count column ``F``, or one count per target; or estimates from the
        all-two-way log-linear model fitted on the original (agency's view) or on each replicate
        (intruder's view; Hu 2019 §4.2.3). User counts must be ``>= 1`` (``ValidationError``);
        estimates below 1 are raised to 1 with warning ``F_BELOW_ONE``.
    population_estimate : {"default", "scaled", "expected_inverse"}
        ``F̂ = f + (1−a)μ̂/a``, ``μ̂/a``, or ``1/F`` replaced by ``E[1/F | f]`` (provisional:
        Drechsler & Reiter 2008 do not state the conversion).
    sampling_fraction, population_size : float, int
        ``a = n / population_size`` for the log-linear estimates.
    strategy : "always", ("threshold", γ) or "not_if_max"
        When the intruder declares a match (Drechsler & Reiter 2008 §4.3).
    fallback : {None, "none", "unsynthesized"}
        Records matching on the unsynthesized known columns when nothing matches in a replicate.
        ``None``: ``"unsynthesized"`` for pooled known-membership runs with at least one known
        unsynthesized column (Drechsler & Reiter 2008), else ``"none"``.
    targets : DataFrame, optional
        External targets (population units) holding the known columns and ``target_id``; ids
        found among the original's ids (``original_id`` column, the same-named column, or the
        index) are in the sample, the others are not.
    target_id, original_id : str, optional
    replicates : list of arrays [n, |known_synthesized|] or DataFrames, or PosteriorReplicates
        Replicates of the synthesized known columns (e.g. posterior-predictive draws), on the
        original scale (category values, not codes), instead of the released datasets; or a
        :class:`~bayes_risk.identification.PosteriorReplicates` that draws ``R`` of them from a
        fitted synthesis model and adds Monte Carlo standard errors (``mc_se``) and the spread
        over replicates (``replicate_quantiles``) to the result; with ``executor`` each task
        draws and matches one batch of replicates (same numbers as in process).
    compat : {None, "IdentificationRiskCalculation"}
        Reproduce the R package IdentificationRiskCalculation exactly: open windows, signed
        percentage radius, ``T = 1`` when ``c = 0``, per-dataset aggregation, no fallback, radius
        vector in data-frame column order (methods, Compatibility with the R packages).
    missing_known : {"any", "level"}
        A target's missing known value (an empty cell or a declared missing-value code): the
        intruder does not know it, so it matches any released value (``"any"``, default); or
        missing is a value the intruder knows, matching only released missing values
        (``"level"``). A released missing value never matches an observed target value
        (user guide, Missing values). Needs ``membership="known"`` and, for radius columns with
        missing values, ``shape="rectangle"`` (or ``"ellipse"`` with ``"any"``).
    progressbar : bool
        Show progress over replicates / target chunks.
    executor : None, distributed.Client or Executor, optional
        Where the matching engine runs: ``None`` in process; a ``distributed.Client`` (or a
        :class:`~bayes_risk.executors.DaskExecutor`) spreads partitions of the targets over a
        Dask cluster (user guide, Scaling out with Dask); with ``PosteriorReplicates``, batches
        of replicates (drawn on the workers). The result is identical.

    Returns
    -------
    IdentificationResult
        ``.records``, ``.summary()``, ``.to_dict()``, ``.prob``, ``.warnings`` (see the class).

    Raises
    ------
    SchemaError
        Unknown or missing columns, unsynthesized columns that differ.
    ValidationError
        Invalid options (radius for a categorical column, radius given with no continuous column,
        counts < 1, inconsistent compat settings, ...).

    References
    ----------
    Reiter & Mitra (2009); Drechsler & Reiter (2008), eqs. 5–7; Hu (2019) §4; Hornby & Hu (2021).

    Examples
    --------
    >>> import pandas as pd
    >>> y = pd.DataFrame({"sex": ["M", "M", "M", "F", "F"], "race": ["W", "W", "B", "W", "B"]})
    >>> z1 = y.assign(race=["W", "B", "B", "W", "W"])
    >>> z2 = y.assign(race=["W", "W", "W", "B", "B"])
    >>> res = identification_risk(y, [z1, z2], known_unsynthesized=["sex"],
    ...                           known_synthesized=["race"], progressbar=False)
    >>> res.file["expected_match_risk"]
    2.5
    """
    options = dict(
        categorical=categorical, schema=schema, radius=radius, radius_type=radius_type,
        r_min=r_min, quantile_groups=quantile_groups, window=window, shape=shape,
        aggregation=aggregation, membership=membership, population_counts=population_counts,
        population_estimate=population_estimate, sampling_fraction=sampling_fraction,
        population_size=population_size, strategy=strategy, fallback=fallback, targets=targets,
        target_id=target_id,
        original_id=original_id, compat=compat, missing_known=missing_known,
    )
    if _is_posterior_replicates(replicates):
        return replicates.run(original, synthetic, known_unsynthesized, known_synthesized,
                              options, progressbar=progressbar, executor=as_executor(executor))
    plan = prepare(original, synthetic, known_unsynthesized, known_synthesized,
                   replicates=replicates, **options)
    ex = as_executor(executor)
    in_process = isinstance(ex, InProcessExecutor)
    if in_process:
        # one run: indexes used once (per-dataset aggregation) are not kept
        plan.prep._cache[_engine.SINGLE_RUN] = True
    pool = record_pool(plan, shipped=not in_process)
    out = run_engine(plan, plan.rule, ex, pool, progressbar=progressbar)
    if in_process:
        plan.prep.release_replicates()
    return assemble(plan, plan.rule, out)


# the radius sweep lives in its own module; re-exported here for ``bayes_risk.radius_sweep``
from bayes_risk.identification.radius import radius_sweep  # noqa: E402
