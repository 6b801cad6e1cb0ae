"""A Dirichlet–multinomial synthesizer of a categorical table: a complete bayes-risk model.

The model of the docs page "Adding a model". Every record falls in one cell of the table
crossing all its (categorical) columns, ``K = d_1 × … × d_p`` cells. With a symmetric
``Dirichlet(alpha)`` prior on the cell probabilities ``θ``, the posterior given the cell counts
``c`` of the confidential table is ``Dirichlet(alpha + c)``: its draws are exact (no MCMC), so
there is nothing to diagnose. A synthetic dataset takes one posterior draw ``θ_h`` and draws
``n`` records from ``Multinomial(θ_h)`` (full synthesis; a class P model: given ``θ`` the
synthetic data do not depend on the confidential values).

What bayes-risk needs (``bayes_risk.RiskModel``):

* ``record_loglik(records, draw_indices=None)`` → ``[H, n]``: ``log θ_h[cell(y_i)]``;
* ``dataset_loglik(datasets, draw_indices=None)`` → ``[H, m]``: ``Σ_i log θ_h[cell(z_i)]``;
* ``n_draws``, ``schema_``, ``model_class = "P"``, ``ratio_form = "joint"``;

plus ``fit_augmented`` (draws of ``p(θ | y, Z_(l)) = Dirichlet(alpha + c_y + c_Z)``, the
stabilised estimator), ``draw_chains`` and ``save``/``load`` (JSON + NPZ, no pickle): having
them is what offers them (``bayes_risk.capabilities``). ``info`` declares the one thing no method
shows: the model models categorical columns only. It is registered under the name
``dirichlet-multinomial`` by the entry point of ``pyproject.toml`` beside this file, with its
option of ``bayes-risk fit`` (``dirichlet_multinomial_options.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk import ModelInfo, Schema, SyntheticData, infer_schema
from bayes_risk.exceptions import NotFittedError, NotSupportedError, ValidationError
from bayes_risk.models import BaseSynthesizer

__all__ = ["DirichletMultinomial"]

#: the registered name (the entry point in pyproject.toml; ``model.json`` records it)
NAME = "dirichlet-multinomial"
#: the most cells the model accepts (θ has one probability per cell and draw)
MAX_CELLS = 1_000_000


class DirichletMultinomial(BaseSynthesizer):
    """Dirichlet–multinomial model of the cells of a categorical table, with exact posterior
    draws.

    Parameters
    ----------
    alpha : float
        Concentration of the symmetric Dirichlet prior on the cell probabilities (``> 0``).
    draws : int
        Posterior draws per chain.
    chains : int
        Independent chains of draws (exact draws: the chains only follow ArviZ's layout).
    random_seed : int, sequence of int or numpy Generator, optional
        Default seed of :meth:`fit` and :meth:`synthesize`.

    Attributes
    ----------
    schema_ : Schema
        The fitted columns (all categorical, all synthesized).
    theta_ : ndarray (chains, draws, K)
        Posterior draws of the cell probabilities.
    counts_ : ndarray (K,)
        Cell counts of the confidential table.
    """

    method_name = NAME
    #: what no method shows: the command line reads integer-coded columns as categories
    info = ModelInfo(categorical_only=True)
    model_class = "P"
    ratio_form = "joint"

    def __init__(
        self, alpha: float = 1.0, draws: int = 500, chains: int = 2, random_seed: Any = None
    ) -> None:
        self.alpha = alpha
        self.draws = draws
        self.chains = chains
        self.random_seed = random_seed
        self.schema_: Schema | None = None
        self.theta_: np.ndarray | None = None
        self.counts_: np.ndarray | None = None
        self.categorical_: list[str] | None = None

    # ---------------------------------------------------------------------------- fitting
    def fit(
        self,
        data: pd.DataFrame,
        *,
        schema: Schema | None = None,
        synthesized: Sequence[str] | None = None,
        records: Any = None,
        random_seed: Any = None,
    ) -> DirichletMultinomial:
        """Draw ``theta_`` from the posterior ``Dirichlet(alpha + counts)``.

        Raises
        ------
        ValidationError
            For bad settings, a non-categorical column, missing values or too many cells.
        NotSupportedError
            For partial synthesis (``synthesized`` short of every column, or ``records``).
        """
        self._check_settings()
        if not isinstance(data, pd.DataFrame) or data.empty:
            raise ValidationError("data must be a non-empty pandas DataFrame.")
        schema = schema if schema is not None else infer_schema(data)
        if records is not None or (synthesized is not None
                                   and set(synthesized) != set(schema.names)):
            raise NotSupportedError(
                "DirichletMultinomial synthesizes every column of every record (full "
                "synthesis); leave synthesized= and records= out."
            )
        numeric = [c.name for c in schema if not c.is_categorical]
        if numeric:
            raise ValidationError(
                f"DirichletMultinomial models categorical columns only; {numeric} are not "
                "(declare them categorical, or leave them out)."
            )
        empty = [c for c in schema.names if data[c].isna().any()]
        if empty:
            raise ValidationError(f"column(s) {empty} have missing values; expected none.")
        # every column is synthesized: the risk engines vary the synthesized columns
        self.schema_ = schema.with_roles(synthesized=schema.names)
        # the synthetic tables keep the original's dtypes: pandas categoricals stay categorical
        self.categorical_ = [c for c in schema.names
                             if isinstance(data[c].dtype, pd.CategoricalDtype)]
        k = self._n_cells()
        if k > MAX_CELLS:
            raise ValidationError(
                f"the table has {k:,} cells (the product of the columns' levels); at most "
                f"{MAX_CELLS:,} are supported. Model fewer columns."
            )
        self.counts_ = np.bincount(self._cells(data), minlength=k).astype(np.float64)
        rng = np.random.default_rng(self._seed(random_seed))
        self.theta_ = self._posterior(self.counts_, rng)
        return self

    def fit_augmented(
        self, data: pd.DataFrame, synthetic: pd.DataFrame, *, random_seed: Any = None
    ) -> DirichletMultinomial:
        """A copy whose draws come from ``p(θ | y, Z_(l)) = Dirichlet(alpha + c_y + c_Z)``
        (the stabilised estimator)."""
        self._check_fitted()
        new = type(self)(**self.get_params())
        new.schema_, new.categorical_ = self.schema_, self.categorical_
        new.counts_ = self.counts_ + np.bincount(self._cells(synthetic),
                                                 minlength=self.counts_.size)
        new.theta_ = new._posterior(new.counts_, np.random.default_rng(random_seed))
        return new

    def _posterior(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        # log-space safe: Dirichlet draws of cells with tiny counts may be 0.0 in float64;
        # keep them strictly positive so that every log-likelihood is finite
        theta = rng.dirichlet(self.alpha + counts, size=(self.chains, self.draws))
        return np.maximum(theta, np.finfo(np.float64).tiny)

    # ---------------------------------------------------------------------------- synthesis
    def synthesize(self, m: int = 1, *, random_seed: Any = None) -> SyntheticData:
        """``m`` datasets of ``n`` records, dataset ``l`` from the draw ``floor(l H / m) - 1``."""
        self._check_fitted("synthesize")
        H = self.n_draws
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= m <= H:
            raise ValidationError(f"m must be an integer in 1..{self.n_draws}. Got {m!r}.")
        seed = self._seed(random_seed)
        flat = self.theta_.reshape(self.n_draws, -1)
        n = int(self.counts_.sum())
        idx = (np.arange(1, m + 1) * self.n_draws) // m - 1
        rngs = np.random.default_rng(seed).spawn(m)
        datasets = [self._decode(rng.choice(flat.shape[1], size=n, p=flat[h] / flat[h].sum()))
                    for h, rng in zip(idx, rngs, strict=True)]
        return SyntheticData(
            datasets=datasets, method=NAME, settings=self.saved_settings(),
            random_seed=seed if isinstance(seed, int) else None,
            draw_index=[int(h) for h in idx], schema=self.schema_,
        )

    # ---------------------------------------------------------------------------- likelihoods
    @property
    def n_draws(self) -> int:
        """Number of posterior draws ``H = chains × draws``."""
        self._check_fitted("n_draws")
        return int(self.theta_.shape[0] * self.theta_.shape[1])

    @property
    def posterior_(self) -> Any:
        """The draws as an ArviZ ``DataTree`` (group ``posterior``, dims chain, draw, cell)."""
        import arviz as az

        self._check_fitted("posterior_")
        return az.from_dict({"posterior": {"theta": self.theta_}}, dims={"theta": ["cell"]})

    def draw_chains(self) -> np.ndarray:
        """``[H]`` chain of each flattened draw (chain-major, as ArviZ stacks them)."""
        self._check_fitted("draw_chains")
        return np.repeat(np.arange(self.chains, dtype=np.int64), self.draws)

    def _log_theta(self, draw_indices: np.ndarray | None) -> np.ndarray:
        flat = np.log(self.theta_.reshape(self.n_draws, -1))
        return flat if draw_indices is None else flat[np.asarray(draw_indices, dtype=np.int64)]

    def record_loglik(self, records: pd.DataFrame, *, draw_indices: np.ndarray | None = None
                      ) -> np.ndarray:
        """``[H, n]`` array of ``log θ_h[cell(y_i)]``."""
        self._check_fitted("record_loglik")
        return np.ascontiguousarray(self._log_theta(draw_indices)[:, self._cells(records)])

    def dataset_loglik(self, synthetic: Sequence[pd.DataFrame], *,
                       draw_indices: np.ndarray | None = None) -> np.ndarray:
        """``[H, m]`` array of ``Σ_i log θ_h[cell(z_i)] = c_Z · log θ_h``."""
        self._check_fitted("dataset_loglik")
        logt = self._log_theta(draw_indices)
        k = logt.shape[1]
        counts = np.stack([np.bincount(self._cells(z), minlength=k) for z in synthetic], axis=1)
        return logt @ counts.astype(np.float64)

    # ---------------------------------------------------------------------------- persistence
    def save(self, path: str | os.PathLike[str]) -> Path:
        """``model.json`` (name, settings, schema) and ``draws.npz`` (θ and the counts)."""
        self._check_fitted("save")
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        meta = {"method": NAME, "settings": self.saved_settings(), "schema": self.schema_.to_dict(),
                "categorical": self.categorical_}
        np.savez(folder / "draws.npz", theta=self.theta_, counts=self.counts_)
        (folder / "model.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
        return folder

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DirichletMultinomial:
        """The model saved by :meth:`save` in ``path`` (no pickle)."""
        folder = Path(path)
        meta = json.loads((folder / "model.json").read_text(encoding="utf-8"))
        model = cls(**meta["settings"])
        model.schema_ = Schema.from_dict(meta["schema"])
        model.categorical_ = list(meta["categorical"])
        with np.load(folder / "draws.npz", allow_pickle=False) as z:
            model.theta_, model.counts_ = z["theta"], z["counts"]
        return model

    # ---------------------------------------------------------------------------- helpers
    def _check_settings(self) -> None:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) \
                or not self.alpha > 0:
            raise ValidationError(f"alpha must be a number > 0. Got {self.alpha!r}.")
        for name in ("draws", "chains"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValidationError(f"{name} must be an integer >= 1. Got {v!r}.")

    def saved_settings(self) -> dict[str, Any]:
        """The settings as JSON (a saved model, a release's manifest, the model's identity)."""
        settings = self.get_params()
        if not isinstance(settings["random_seed"], (int, type(None))):
            settings["random_seed"] = None  # a Generator is not JSON: the seed is not kept
        return settings

    def _check_fitted(self, method: str = "this method") -> None:
        if self.theta_ is None:
            raise NotFittedError(
                f"This DirichletMultinomial instance is not fitted yet. Call 'fit' with "
                f"appropriate arguments before '{method}'."
            )

    def _levels(self) -> list[tuple[Any, ...]]:
        return [tuple(c.levels) for c in self.schema_]

    def _n_cells(self) -> int:
        return int(np.prod([len(lv) for lv in self._levels()], dtype=np.float64))

    def _cells(self, table: pd.DataFrame) -> np.ndarray:
        """The cell of every row (``ravel_multi_index`` of the columns' level codes)."""
        codes = []
        for c, levels in zip(self.schema_.names, self._levels(), strict=True):
            if c not in table.columns:
                raise ValidationError(f"column {c!r} is missing; expected {self.schema_.names}.")
            code = pd.Categorical(table[c], categories=list(levels)).codes.astype(np.int64)
            if np.any(code < 0):
                bad = sorted({str(v) for v in table[c][code < 0]})[:5]
                raise ValidationError(
                    f"column {c!r} has value(s) {bad} outside the fitted levels {list(levels)}."
                )
            codes.append(code)
        return np.ravel_multi_index(codes, [len(lv) for lv in self._levels()])

    def _decode(self, cells: np.ndarray) -> pd.DataFrame:
        levels = self._levels()
        codes = np.unravel_index(cells, [len(lv) for lv in levels])
        return pd.DataFrame({
            name: pd.Categorical.from_codes(code, categories=list(lv))
            if name in self.categorical_ else np.asarray(lv)[code]
            for name, lv, code in zip(self.schema_.names, levels, codes, strict=True)
        })
