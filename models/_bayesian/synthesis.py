"""Synthesis of :class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer` from posterior draws.

``m`` datasets from draws far apart in the chain (Hu 2019 §3.2.5), and posterior-predictive
replicates in chunks; each model supplies ``_synthesize_one``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from bayes_risk._io import to_jsonable
from bayes_risk._rng import RandomSeed, seed_to_json, spawn
from bayes_risk.data.synthetic import SyntheticData, generation_from_roles
from bayes_risk.data.validate import check_m
from bayes_risk.exceptions import ValidationError


class _BayesianSynthesis:
    """Mixin of ``BayesianSynthesizer``: ``synthesize`` and ``posterior_replicates``."""

    @staticmethod
    def _spread_draws(H: int, m: int) -> np.ndarray:
        """``m`` flattened draw indices evenly spaced over ``0..H-1``, ending at the last draw:
        ``h_l = floor(l H / m) - 1``, ``l = 1..m`` (spacing ``H/m``; Hu 2019 §3.2.5)."""
        return ((np.arange(1, m + 1, dtype=np.int64) * H) // m - 1).astype(np.int64)

    def synthesize(self, m: int = 1, *, random_seed: RandomSeed = None) -> SyntheticData:
        """Generate ``m`` synthetic datasets, each from its own posterior draw.

        The draws are evenly spaced over the (chain-major) flattened draws, ``floor(l H / m) - 1``
        for ``l = 1..m``, so that they are far apart in the chain (Hu 2019 §3.2.5); each dataset
        gets an independent child random stream of ``random_seed``.

        Parameters
        ----------
        m : int
            Number of synthetic datasets, ``1 <= m <= H``.
        random_seed : RandomSeed
            Seed of the synthesis draws (same seed, same datasets); default: the
            ``random_seed`` setting.

        Returns
        -------
        SyntheticData
            ``datasets`` (same columns and row order as the original), ``draw_index`` (the
            flattened posterior draw behind each dataset), ``schema``, ``settings`` and
            ``synthesized_records``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValidationError
            If ``m`` is not an integer in ``1..H``.
        """
        self._check_fitted("synthesize")
        m = check_m(m)
        random_seed = self._seed(random_seed)
        H = self.n_draws
        if m > H:
            raise ValidationError(
                f"m = {m} synthetic datasets need m distinct posterior draws, but the model has "
                f"only H = {H}; sample more draws."
            )
        idx = self._spread_draws(H, m)
        rngs = spawn(random_seed, m)
        datasets = [
            self._synthesize_one(int(h), rng, self.data_)
            for h, rng in zip(idx, rngs, strict=True)
        ]
        return SyntheticData(
            datasets=datasets,
            method=self.method_name,
            settings=to_jsonable(self._json_settings()),
            random_seed=seed_to_json(random_seed),
            draw_index=[int(h) for h in idx],
            schema=self.schema_,
            synthesized_records=self.synthesized_records_,
            extra={"model_class": self.model_class, "ratio_form": self.ratio_form},
            original_fingerprint=getattr(self, "original_fingerprint_", None),
            generation=generation_from_roles(self.schema_, self.synthesized_records_),
            proper=True,
            imputed_columns=getattr(self, "imputed_columns_", None),
        )

    def posterior_replicates(
        self,
        n: int | None,
        *,
        columns: Sequence[str] | None = None,
        chunk_size: int = 50,
        random_seed: RandomSeed = None,
        start: int = 0,
    ) -> Iterator[list[pd.DataFrame]]:
        """Draw posterior-predictive replicates of synthesized columns, in chunks.

        Replicate ``r`` takes a posterior draw ``θ_h`` uniformly at random among the ``H`` stored
        draws and then synthesizes exactly as :meth:`synthesize` does with that draw (given the
        unsynthesized columns; under partial synthesis only the selected records change), so
        the released datasets are such replicates too (Drechsler & Reiter 2008, eq. 5). Each
        replicate uses its own child stream ``r`` of ``random_seed``: the replicates do not depend
        on ``chunk_size``, and ``start`` continues a run.

        Parameters
        ----------
        n : int or None
            Number of replicates (``None``: chunks until the caller stops).
        columns : sequence of str, optional
            Synthesized columns to return (default: all synthesized columns).
        chunk_size : int
            Replicates per yielded list (memory; the values do not depend on it).
        random_seed : RandomSeed
            Seed of the replicates.
        start : int
            Index of the first replicate.

        Yields
        ------
        list of DataFrame
            Up to ``chunk_size`` tables ``[n_records, len(columns)]`` in record order.
        """
        from bayes_risk.models._replicates import check_replicate_columns, iter_replicates

        self._check_fitted()
        cols = check_replicate_columns(columns, self.schema_.synthesized, type(self).__name__)
        H = self.n_draws

        def draw_one(rng: np.random.Generator) -> pd.DataFrame:
            return self._synthesize_one(int(rng.integers(H)), rng, self.data_)

        return iter_replicates(draw_one, n, columns=cols, chunk_size=chunk_size,
                               random_seed=random_seed, start=start)
