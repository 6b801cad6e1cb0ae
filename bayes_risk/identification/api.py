"""Public entry points :func:`identification_risk` and :func:`radius_sweep` (Hu 2019 §4).

See :doc:`/methods/identification`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

import pandas as pd

from bayes_risk._constraints import Options, checked
from bayes_risk._specs import as_spec, cli_option
from bayes_risk.data.schema import Schema
from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.exceptions import ValidationError, interruptible
from bayes_risk.executors import InProcessExecutor, as_executor
from bayes_risk.identification.assemble import assemble
from bayes_risk.identification.engine import use_compiled
from bayes_risk.identification.evaluate import record_pool, run_engine
from bayes_risk.identification.index import code_windows
from bayes_risk.identification.prepare import COMPAT_MODES, known_columns, prepare
from bayes_risk.identification.specs import (
    AGGREGATIONS,
    INTRUDER,
    MatchSpec,
    PopulationSpec,
    spec_options,
)
from bayes_risk.results.identification import IdentificationResult

if TYPE_CHECKING:
    from bayes_risk.identification.replicates import PosteriorReplicates

__all__ = ["IdentificationResult", "identification_risk", "identification_risk_of_inputs",
           "radius_sweep", "COMPAT_MODES", "MatchSpec", "PopulationSpec"]


@interruptible
def identification_risk(
    original: pd.DataFrame,
    synthetic: Sequence[pd.DataFrame] | SyntheticData | None,
    *,
    known: Annotated[Sequence[str], cli_option(
        "--known-unsynthesized", "known columns released unchanged", nargs="+", metavar="COL",
        then=("known_synthesized",))],
    synthesized: Annotated[Sequence[str] | None, cli_option(
        "--known-synthesized", "known columns that were synthesized", nargs="+",
        metavar="COL")] = None,
    categorical: Sequence[str] | None = None,
    schema: Schema | None = None,
    match: MatchSpec | None = None,
    population: PopulationSpec | None = None,
    aggregation: Annotated[
        Literal["pooled", "pooled_measures", "per_dataset"] | None, cli_option(
            "--aggregation", "pooled over datasets (Reiter-Mitra, default) or per dataset "
            "(Hornby-Hu)", choices=AGGREGATIONS, group=INTRUDER)
        | checked(Options(AGGREGATIONS, listed=True))] = None,
    replicates: Sequence[Any] | PosteriorReplicates | None = None,
    progressbar: bool = True,
    executor: Any = None,
) -> IdentificationResult:
    """Identification disclosure risk of partially synthetic data (Hu 2019 §4).

    An intruder holds the ``known`` columns of every target and looks for it among the
    released records; see :doc:`/methods/identification` and
    :doc:`/user_guide/identification`.

    Parameters
    ----------
    original : DataFrame
        Confidential data ``y`` (``n`` rows).
    synthetic : list of DataFrame or SyntheticData
        The ``m`` released datasets, same rows as ``original``. May be ``None`` when
        ``replicates`` are given.
    known : sequence of str
        The intruder's columns (quasi-identifiers), known for every target.
    synthesized : sequence of str, optional
        The columns the synthesizer replaced. Default: the release's manifest, else the known
        columns whose released values differ from the original's. Required with ``replicates``.
    categorical : sequence of str, optional
        Integer-coded factors (schema inference otherwise treats integers as counts).
    schema : Schema, optional
        Column types (overrides inference).
    match : MatchSpec, optional
        See :class:`~bayes_risk.identification.MatchSpec` (default: exact matching).
    population : PopulationSpec, optional
        See :class:`~bayes_risk.identification.PopulationSpec` (default: its defaults).
    aggregation : {"pooled", "pooled_measures", "per_dataset"}, optional
        Default ``"pooled"`` (``MatchSpec(compat=...)``: ``"per_dataset"``).
        ``"pooled_measures"``: the same pooled measures without the match probabilities
        (``.pooled`` and ``.prob`` are ``None``), so their number is not limited
        (:doc:`/user_guide/memory`); not with ``PosteriorReplicates``.
    replicates : list of arrays [n, synthesized known columns] or DataFrames, or PosteriorReplicates
        Replicates of the synthesized known columns on the original scale, instead of the
        released datasets; or a :class:`~bayes_risk.identification.PosteriorReplicates` that
        draws them from a fitted model and adds Monte Carlo errors to the result.
    progressbar : bool
        Show progress over replicates / target chunks.
    executor : None, distributed.Client or Executor, optional
        Where the matching engine runs: ``None`` in process, or a Dask cluster
        (:doc:`/user_guide/dask`); the result is identical.

    Returns
    -------
    IdentificationResult
        ``.records``, ``.summary()``, ``.to_dict()``, ``.prob``, ``.warnings`` (see the class).

    Raises
    ------
    SchemaError
        Unknown or missing columns, unsynthesized columns that differ.
    ValidationError
        Invalid options, named in the message.

    References
    ----------
    Reiter & Mitra (2009); Drechsler & Reiter (2008), eqs. 5–7; Hu (2019) §4; Hornby & Hu (2021).

    Examples
    --------
    >>> import pandas as pd
    >>> y = pd.DataFrame({"sex": ["M", "M", "M", "F", "F"], "race": ["W", "W", "B", "W", "B"]})
    >>> z1 = y.assign(race=["W", "B", "B", "W", "W"])
    >>> z2 = y.assign(race=["W", "W", "W", "B", "B"])
    >>> res = identification_risk(y, [z1, z2], known=["sex", "race"], synthesized=["race"],
    ...                           progressbar=False)
    >>> res.file["expected_match_risk"]
    2.5
    """
    from bayes_risk.identification.sampled import sampled_inputs

    sampled = sampled_inputs(original, synthetic, known=known, synthesized=synthesized,
                             population=population) if replicates is None else None
    if sampled is not None:  # a sample of the census from synthetic populations: the units
        return sampled.annotate(identification_risk(  # of the census are the targets
            sampled.original, sampled.synthetic, known=known, synthesized=sampled.synthesized,
            categorical=categorical, schema=schema, match=match, population=sampled.population,
            aggregation=aggregation, progressbar=progressbar, executor=executor))
    population = as_spec(population, PopulationSpec, "population")
    if population.selection is not None:  # the intruder knows R: one more known column,
        from bayes_risk.identification.selection import conditioned  # matched exactly

        c = conditioned(original, synthetic, population.selection, known=known,
                        synthesized=synthesized, categorical=categorical, schema=schema,
                        match=match, population=dataclasses.replace(population, selection=None),
                        replicates=replicates)
        return c.annotate(identification_risk(
            c.original, c.synthetic, known=c.known, synthesized=c.synthesized, schema=c.schema,
            match=match, population=c.population, aggregation=aggregation,
            replicates=replicates, progressbar=progressbar, executor=executor))
    return identification_risk_of_inputs(
        [original, synthetic], known=known, synthesized=synthesized, categorical=categorical,
        schema=schema, match=match, population=population, aggregation=aggregation,
        replicates=replicates, progressbar=progressbar, executor=executor)


@interruptible
def identification_risk_of_inputs(
        inputs: list[Any], *, known: Sequence[str], synthesized: Sequence[str] | None = None,
        categorical: Sequence[str] | None = None, schema: Schema | None = None,
        match: MatchSpec | None = None, population: PopulationSpec | None = None,
        aggregation: Any = None, replicates: Any = None, progressbar: bool = True,
        executor: Any = None) -> IdentificationResult:
    """:func:`identification_risk` (no selection) of tables the caller hands over.

    Parameters
    ----------
    inputs : list
        ``[original, synthetic]``, emptied once the tables are encoded: a caller holding no
        other reference (the command line) has them freed before the matching (at 10^6
        records, 0.24 GB of the run's peak).
    known, synthesized, categorical, schema, match, population, aggregation, replicates, \
progressbar, executor
        As :func:`identification_risk`.

    Returns
    -------
    IdentificationResult
    """
    original, synthetic = inputs
    keep_prob = str(aggregation).replace("-", "_") != "pooled_measures"
    if not keep_prob:
        aggregation = "pooled"
    known_us, known_s = known_columns(original, synthetic, known, synthesized, replicates)
    options = dict(
        categorical=categorical, schema=schema, **spec_options(match, population),
        aggregation=aggregation, key_order=known,
    )
    if type(replicates).__name__ == "PosteriorReplicates":  # its module not imported here
        if not keep_prob:
            raise ValidationError(
                "aggregation='pooled_measures' applies to released datasets or "
                "replicates as arrays; posterior replicates keep their pooled probabilities.")
        return replicates.run(original, synthetic, known_us, known_s,
                              options, progressbar=progressbar, executor=as_executor(executor))
    plan = prepare(original, synthetic, known_us, known_s, replicates=replicates, **options)
    inputs.clear()  # the plan holds the encoded columns; nothing below reads the tables
    del original, synthetic
    ex = as_executor(executor)
    in_process = isinstance(ex, InProcessExecutor)
    if in_process:  # one run: indexes used once are not kept
        plan.prep.single_run = True
        if plan.settings.aggregation == "per_dataset" and use_compiled(plan.prep):
            code_windows(plan.prep, plan.rule)  # its values as int32 codes: half the memory
    pool = record_pool(plan, shipped=not in_process)
    out = run_engine(plan, plan.rule, ex, pool, progressbar=progressbar,
                     keep_prob=keep_prob)
    if in_process and plan.settings.aggregation == "per_dataset":
        plan.prep.release_encoding()  # the per-dataset measures read the counts only
    elif in_process:
        plan.prep.release_replicates()
    return assemble(plan, plan.rule, out)


# the radius sweep lives in its own module; re-exported here for ``bayes_risk.radius_sweep``
from bayes_risk.identification.radius import radius_sweep  # noqa: E402
