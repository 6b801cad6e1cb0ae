"""Identification risk of a sample of the census released from synthetic populations
(sampling with synthesis, Drechsler & Reiter 2010; :doc:`/methods/identification`,
Sampling with synthesis).

Given the census and such a release, the intruder does not know who is in the sample: every
unit of the census is a target, the match probabilities use the census's count ``F_t`` of the
target's key (``p(k) = 1/F_t`` for a matching released record, ``p(n + 1) = 1 − n_t / F_t``,
Drechsler & Reiter 2008), and a unit not in the sample is never a true match. An intruder who
knows who is in the sample (``membership="known"``) targets the sampled units.
:func:`~bayes_risk.identification_risk` turns its inputs into those of the engine here
(:func:`sampled_inputs`), as it does for the selection metadata.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.synthetic import SAMPLING_DESIGN, sampled_records
from bayes_risk.exceptions import ValidationError, arg_name

__all__ = ["Sampled", "sampled_inputs", "UNIT"]

#: the column that pairs the census's units with the sample's records
UNIT = "_unit"


@dataclass
class Sampled:
    """The engine's inputs for a sampled release, and what the result states of the design."""

    original: pd.DataFrame
    synthetic: list[pd.DataFrame]
    synthesized: list[str] | None
    population: Any
    note: dict[str, Any]

    def annotate(self, result: Any) -> Any:
        """``result`` with the sampling design in its settings."""
        result.settings["sampling"] = self.note
        return result


def sampled_inputs(census: pd.DataFrame, synthetic: Any, *, known: Sequence[str],
                   synthesized: Sequence[str] | None, population: Any) -> Sampled | None:
    """The inputs of the engine for a release that records sampling with synthesis, given its
    census; ``None`` for any other release.

    Parameters
    ----------
    census : DataFrame
        The original given: the census the samples were drawn from (its ``N`` units).
    synthetic : SyntheticData
        The release (``extra["sampling"]``).
    known, synthesized
        As :func:`~bayes_risk.identification_risk`.
    population : PopulationSpec or None
        Its ``membership``, ``counts`` and ``estimate`` are kept (default: membership unknown,
        the census's true counts); the targets are the census's units.

    Raises
    ------
    ValidationError
        The sample's records given instead of the census, or targets given
        (``OPTION_CONFLICT``: the census's units are the targets).
    SchemaError
        ``ORIGINAL_DIFFERS``: another census than the release's.
    """
    from bayes_risk.data.fingerprint import check_original
    from bayes_risk.identification.prepare import known_names
    from bayes_risk.identification.specs import PopulationSpec

    rec = sampled_records(synthetic)
    if rec is None:
        return None
    N, n, units = rec["population_size"], rec["sample_size"], rec["sampled_records"]
    if len(census) == n and n != N:
        raise ValidationError(
            f"the release is a sample of {n:,} of the {N:,} units of a census, released from "
            "synthetic populations: give the census as the original (its units are the "
            "intruder's targets, and the sample's are read from the manifest).",
            code="ORIGINAL_DIFFERS")
    check_original(census, synthetic, what="the sampled release")
    if len(census) != N:
        raise ValidationError(f"the release's census has {N:,} units; the original given has "
                              f"{len(census):,}.", code="ORIGINAL_DIFFERS")
    given = population if population is not None else PopulationSpec(membership="unknown")
    if given.targets is not None:
        raise ValidationError(
            f"{arg_name('population')}: targets given with a sampled release, whose targets are "
            "the census's units (the original given); leave the targets out.",
            code="OPTION_CONFLICT")
    keys = known_names(known)  # a name alone is one column, not its letters
    counts = given.counts
    if given.membership == "unknown" and counts is None:
        # the intruder knows the census's counts of the keys: the worst case (Drechsler & Reiter
        # 2008's true counts), the census being the population
        counts = census.groupby(keys, observed=True, dropna=False).size().rename(
            "F").reset_index()
    unit = UNIT
    while unit in census.columns:
        unit += "_"
    # the intruder who knows who is in the sample targets the sampled units (Drechsler & Reiter
    # 2008's scenario IV); the one who does not, every unit of the census (scenario III)
    known_members = given.membership == "known"
    targets = (census.iloc[units].assign(**{unit: units}) if known_members
               else census.assign(**{unit: np.arange(N)}))
    pop = dataclasses.replace(given, targets=targets, target_id=unit, original_id=unit,
                              counts=counts, sampling_fraction=n / N, population_size=None)
    schema = getattr(synthetic, "schema", None)
    if synthesized is None and schema is not None and schema.synthesized:
        synthesized = [c for c in schema.synthesized if c in keys] or []
    sample = census.iloc[units].reset_index(drop=True).assign(**{unit: units})
    note = {"design": SAMPLING_DESIGN, "population_size": N, "sample_size": n,
            "sample_fraction": n / N,
            "targets": (f"the {n:,} sampled units (the intruder knows who is in the sample)"
                        if known_members else f"every unit of the census ({N:,})"),
            "membership": given.membership,
            "counts": ("the census's true counts of the known values"
                       if given.membership == "unknown" and given.counts is None
                       else "as given" if given.membership == "unknown" else "not used")}
    return Sampled(sample, [z.assign(**{unit: units}) for z in synthetic.datasets],
                   None if synthesized is None else list(synthesized), pop, note)
