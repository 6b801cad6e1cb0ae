"""The one place where seeds are interpreted (numpy Generator conventions, as in PyMC)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bayes_risk.exceptions import ValidationError

__all__ = ["RandomSeed", "as_generator", "spawn", "seed_sequence", "child_sequence",
           "replicate_rng", "seed_to_json", "replayable_seed", "given_or_fresh"]

type RandomSeed = None | int | Sequence[int] | np.random.SeedSequence | np.random.Generator


def as_generator(random_seed: RandomSeed = None) -> np.random.Generator:
    """Any accepted seed form as a :class:`numpy.random.Generator` (a Generator as is; a legacy
    ``RandomState`` or another type raises ``ValidationError``)."""
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    if isinstance(random_seed, np.random.RandomState):
        raise ValidationError(
            "random_seed must be None, an int, a sequence of ints, a SeedSequence or a "
            "numpy.random.Generator. Got a legacy numpy.random.RandomState, which cannot spawn "
            "independent streams; use numpy.random.default_rng(seed) instead.")
    if isinstance(random_seed, bool) or isinstance(random_seed, float):
        raise ValidationError(f"random_seed must be an integer seed. Got {random_seed!r}.")
    try:
        return np.random.default_rng(random_seed)
    except (TypeError, ValueError) as err:
        raise ValidationError(
            "random_seed must be None, a non-negative int, a sequence of non-negative ints, a "
            f"SeedSequence or a numpy.random.Generator. Got {random_seed!r}."
        ) from err


def spawn(random_seed: RandomSeed, n: int) -> list[np.random.Generator]:
    """``n`` independent child generators (child ``k`` the same whatever the chunking)."""
    return list(as_generator(random_seed).spawn(int(n)))


def seed_sequence(random_seed: RandomSeed) -> np.random.SeedSequence:
    """The ``SeedSequence`` behind any accepted seed form (a Generator gives one integer draw)."""
    if isinstance(random_seed, np.random.SeedSequence):
        return random_seed
    if isinstance(random_seed, np.random.Generator):
        return np.random.SeedSequence(int(random_seed.integers(0, 2**63 - 1)))
    as_generator(random_seed)  # validates the seed form (clear error for bad ones)
    return np.random.SeedSequence(random_seed)


def child_sequence(seq: np.random.SeedSequence, k: int) -> np.random.SeedSequence:
    """Child ``k`` of ``seq`` (as ``seq.spawn`` would make it), without spawning ``k`` others."""
    return np.random.SeedSequence(
        seq.entropy, spawn_key=(*seq.spawn_key, int(k)), pool_size=seq.pool_size)


def replicate_rng(seq: np.random.SeedSequence, r: int) -> np.random.Generator:
    """Generator of replicate ``r``: child ``r`` of ``seq``."""
    return np.random.default_rng(child_sequence(seq, r))


def seed_to_json(random_seed: RandomSeed) -> int | list[int] | str | None:
    """Describe a seed for a JSON manifest (provenance)."""
    if random_seed is None:
        return None
    if isinstance(random_seed, (int, np.integer)):
        return int(random_seed)
    if isinstance(random_seed, np.random.SeedSequence):
        ent = random_seed.entropy
        return int(ent) if isinstance(ent, (int, np.integer)) else str(ent)
    if isinstance(random_seed, np.random.Generator):
        return "<numpy.random.Generator>"
    return [int(s) for s in random_seed]


def replayable_seed(random_seed: RandomSeed) -> int | list[int] | None:
    """The seed as JSON if passing it again reproduces the same stream (integers and their
    sequences), else ``None`` (fresh entropy, a ``Generator``, a spawned ``SeedSequence``)."""
    if random_seed is None or isinstance(random_seed, np.random.Generator):
        return None
    if isinstance(random_seed, (int, np.integer)):
        return int(random_seed)
    if isinstance(random_seed, np.random.SeedSequence):
        ent = random_seed.entropy
        if random_seed.spawn_key or not isinstance(ent, (int, np.integer)):
            return None
        return int(ent)
    try:
        return [int(s) for s in random_seed]
    except (TypeError, ValueError):
        return None


def given_or_fresh(random_seed: int | None) -> int:
    """``random_seed``, else a seed drawn fresh from the operating system's entropy: recorded,
    it makes a run given no seed repeat exactly."""
    if random_seed is not None:
        return int(random_seed)
    return int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])
