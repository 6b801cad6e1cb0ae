"""Sampling with synthesis (Drechsler & Reiter 2010): partially synthetic populations of a
census, and one simple random sample of its units released from each
(:doc:`/user_guide/synthesizers`, Sampling with synthesis; :doc:`/methods/utility` and
:doc:`/methods/identification` for the rules and the risk that follow).

The agency holds a census of ``N`` units. It synthesizes the census ``m`` times (a partial
synthesis: the synthesized columns replaced, the others kept), draws one simple random sample
of ``n = round(f N)`` units without replacement, and releases those units' records of each
synthetic population. An intruder cannot tell whether a unit is in the release; the manifest
records the design and the units drawn (it is the agency's: the units drawn are confidential).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import numpy as np
import pandas as pd

from bayes_risk._rng import RandomSeed, as_generator, seed_to_json
from bayes_risk._specs import cli_option
from bayes_risk.data.synthetic import (
    SAMPLING_DESIGN,
    SAMPLING_FIELD,
    SyntheticData,
    generation_from_roles,
)
from bayes_risk.exceptions import NotSupportedError, ValidationError, arg_name

__all__ = ["sampling_with_synthesis"]


def sampling_with_synthesis(
    model: Any,
    original: pd.DataFrame,
    *,
    populations: Annotated[int, cli_option(
        "--populations", "synthetic populations, one released sample each (instead of -m)",
        type=int, metavar="N")],
    sample_fraction: Annotated[float, cli_option(
        "--sample-fraction", "share of the census's units released, strictly between 0 and 1",
        type=float, metavar="F")],
    random_seed: RandomSeed = None,
) -> SyntheticData:
    """Release a sample of the census from each of ``populations`` synthetic populations.

    Parameters
    ----------
    model : fitted synthesizer
        Fitted to ``census`` with some columns unsynthesized (a partial synthesis: its
        ``synthesize(m)`` returns ``m`` tables of the census's rows, row ``i`` unit ``i``).
    original : DataFrame
        The census the model was fitted to (the population; checked by its fingerprint).
    populations : int
        Synthetic populations ``m``, one released dataset each (``>= 1``).
    sample_fraction : float
        ``f`` in ``(0, 1)``: ``n = round(f N)`` units are drawn (at least 2, at most ``N − 1``).
    random_seed : RandomSeed
        Seed of the synthesis and of the sample (the synthesis takes child stream 0, the sample
        child stream 1).

    Returns
    -------
    SyntheticData
        ``m`` datasets of the ``n`` sampled units (in census order), ``generation =
        "partial-sample"``, the census's fingerprint, and ``extra["sampling"]``: the design,
        ``population_size``, ``sample_size``, ``sample_fraction`` (``n / N``) and
        ``sampled_records`` (the units' census positions).

    Raises
    ------
    ValidationError
        Bad ``populations`` or ``sample_fraction``; a census other than the model's.
    NotSupportedError
        A model whose synthesis is not partial (every column synthesized: its rows are no
        census units; samples from fully synthetic populations are ``"full-population"``
        releases), or that synthesizes selected records only (``MEASURE_UNDEFINED``).

    Examples
    --------
    >>> import bayes_risk as br
    >>> from bayes_risk.models import CARTSynthesizer
    >>> census = br.make_ce_like(400, random_seed=1)
    >>> cart = CARTSynthesizer().fit(census, synthesized=["Income"], random_seed=1)
    >>> rel = sampling_with_synthesis(cart, census, populations=3, sample_fraction=0.25,
    ...                               random_seed=2)
    >>> rel.m, len(rel[0]), rel.generation, rel.extra["sampling"]["sample_size"]
    (3, 100, 'partial-sample', 100)
    """
    from bayes_risk._constraints import Interval, check_value
    from bayes_risk.data.fingerprint import check_original
    from bayes_risk.data.validate import require_frame

    m = check_value(populations, Interval(int, 1), arg_name("populations"))
    f = check_value(sample_fraction, Interval(float, 0, 1, closed="neither"),
                    arg_name("sample_fraction"))
    census = require_frame(original, "original")
    N = len(census)
    n = int(round(float(f) * N))
    if not 2 <= n <= N - 1:
        raise ValidationError(f"{arg_name('sample_fraction', f)} of a census of {N:,} units "
                              f"draws {n}; a sample needs at least 2 units and at most N − 1.",
                              code="INVALID_ARGUMENT")
    synth_seed, sample_seed = np.random.SeedSequence(
        None if random_seed is None else _entropy(random_seed)).spawn(2)
    release = model.synthesize(m, random_seed=synth_seed)
    gen = release.generation or generation_from_roles(release.schema,
                                                      release.synthesized_records)
    if gen != "partial" or release.synthesized_records is not None and not bool(
            np.all(release.synthesized_records)):
        raise NotSupportedError(
            "sampling with synthesis releases a sample of the census's units from partially "
            f"synthetic populations; this model's synthesis is {gen!r}"
            + (" of selected records" if gen == "partial" else "") + ": synthesize every record "
            "and keep some columns unsynthesized (a full synthesis's samples are "
            "'full-population' releases).", code="MEASURE_UNDEFINED")
    if any(len(z) != N for z in release):
        raise ValidationError(f"the model synthesizes {len(release[0]):,} records, not the "
                              f"census's {N:,}: original must be the table it was fitted to.",
                              code="ORIGINAL_DIFFERS")
    check_original(census, release, what="the model's synthetic populations")
    units = np.sort(as_generator(sample_seed).choice(N, size=n, replace=False))
    datasets = [z.iloc[units].reset_index(drop=True) for z in release]
    extra = {**release.extra, SAMPLING_FIELD: {
        "design": SAMPLING_DESIGN, "population_size": N, "sample_size": n, "sample_fraction": n / N,
        "sampled_records": [int(u) for u in units]}}
    return dataclasses.replace(release, datasets=datasets, extra=extra,
                               generation="partial-sample", synthesized_records=None,
                               random_seed=seed_to_json(random_seed))


def _entropy(random_seed: RandomSeed) -> Any:
    """A seed as ``SeedSequence`` entropy (a Generator gives one integer draw)."""
    if isinstance(random_seed, np.random.Generator):
        return int(random_seed.integers(0, 2**63 - 1))
    if isinstance(random_seed, np.random.SeedSequence):
        return random_seed.entropy
    as_generator(random_seed)  # the seed's own checks, with their message
    return random_seed
