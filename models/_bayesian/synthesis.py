"""Synthesis of :class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer` from posterior draws.

``m`` datasets from draws far apart in the chain (Hu 2019 §3.2.5), and posterior-predictive
replicates in chunks; each model supplies ``_synthesize_one`` (and may supply
``_synthesize_many``, which makes many datasets at once).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk._rng import RandomSeed, seed_to_json, spawn
from bayes_risk.data.provenance import model_id
from bayes_risk.data.synthetic import SyntheticData, generation_from_roles
from bayes_risk.data.validate import check_m
from bayes_risk.exceptions import ValidationError


def spread_draws(H: int, m: int) -> np.ndarray:
    """``m`` flattened draw indices evenly spaced over ``0..H-1``, ending at the last draw:
    ``h_l = floor(l H / m) - 1``, ``l = 1..m`` (spacing ``H/m``; Hu 2019 §3.2.5)."""
    return ((np.arange(1, m + 1, dtype=np.int64) * H) // m - 1).astype(np.int64)


def plan(model, m: int, random_seed: RandomSeed
         ) -> tuple[np.ndarray, list[np.random.Generator], RandomSeed]:
    """The posterior draws and child generators of ``m`` synthetic datasets (the checks of
    :meth:`BayesianSynthesizer.synthesize`), and the seed used."""
    model._check_fitted("synthesize")
    m = check_m(m)
    random_seed = model._seed(random_seed)
    H = model.n_draws
    if m > H:
        raise ValidationError(
            f"m = {m} synthetic datasets need m distinct posterior draws, but the model has "
            f"only H = {H}; sample more draws.",
            code="TOO_FEW_DRAWS"
        )
    return model._spread_draws(H, m), spawn(random_seed, m), random_seed


def synthesize(model, m: int = 1, *, random_seed: RandomSeed = None) -> SyntheticData:
    """The work of :meth:`BayesianSynthesizer.synthesize` (documented there)."""
    idx, rngs, random_seed = plan(model, m, random_seed)
    datasets = model._synthesize_many(idx, rngs, model.data_)
    return SyntheticData(
        datasets=datasets,
        method=model.method_name,
        settings=to_jsonable(model._json_settings()),
        random_seed=seed_to_json(random_seed),
        draw_index=[int(h) for h in idx],
        schema=model.schema_,
        synthesized_records=model.synthesized_records_,
        extra={"model_class": model.model_class, "ratio_form": model.ratio_form},
        original_fingerprint=getattr(model, "original_fingerprint_", None),
        model_id=model_id(model),
        generation=generation_from_roles(model.schema_, model.synthesized_records_),
        proper=True,
        imputed_columns=getattr(model, "imputed_columns_", None),
    )


def posterior_replicates(model, n: int | None, columns: Sequence[str] | None, chunk_size: int,
                         random_seed: RandomSeed, start: int) -> Iterator[list[pd.DataFrame]]:
    """The work of :meth:`BayesianSynthesizer.posterior_replicates` (documented there)."""
    from bayes_risk.models._replicates import check_replicate_columns, iter_replicates

    model._check_fitted()
    cols = check_replicate_columns(columns, model.schema_.synthesized, type(model).__name__)
    H = model.n_draws

    def draw_one(rng: np.random.Generator) -> pd.DataFrame:
        return model._synthesize_one(int(rng.integers(H)), rng, model.data_)

    return iter_replicates(draw_one, n, columns=cols, chunk_size=chunk_size,
                           random_seed=random_seed, start=start)
