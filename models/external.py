"""Posterior draws from any software as a risk model (not a synthesizer): :class:`ArrayModel`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._constraints import InstanceOf, Options, Requires, check_params
from bayes_risk.contract import available_if
from bayes_risk.exceptions import ValidationError

__all__ = ["ArrayModel"]

_SETTINGS = {"loglik_fn": InstanceOf(Callable, "callable: f(records, draws) -> [H, n]"),
             "model_class": Options(("P", "O"), listed=True),
             "ratio_form": Options(("joint", "conditional"), listed=True)}
#: the settings against each other
_RELATIONS = (Requires("model_class", "own_record_delta_fn", when=("O",), code="INVALID_ARGUMENT",
                       why="own_record_delta_fn(record_row, candidates, synthetic, draws) -> "
                       "[H, m, G], the own-record term of a class O model"),)


def _take_draws(draws: Any, idx: np.ndarray | None) -> Any:
    if idx is None:
        return draws
    if isinstance(draws, Mapping):
        return {k: np.asarray(v)[idx] for k, v in draws.items()}
    return np.asarray(draws)[idx]


def _n_draws(draws: Any) -> int:
    if isinstance(draws, Mapping):
        bad = [k for k, v in draws.items() if isinstance(v, str) or np.ndim(v) == 0]
        if bad:
            raise ValidationError(
                f"draws[{bad[0]!r}] is not an array of draws (leading dimension H); got "
                f"{type(draws[bad[0]]).__name__}."
            )
        sizes = {int(np.shape(v)[0]) for v in draws.values()}
        if len(sizes) != 1:
            raise ValidationError(
                "every array in draws must have the same leading (draw) dimension; "
                f"got sizes {sorted(sizes)}."
            )
        return sizes.pop()
    if isinstance(draws, str) or np.ndim(draws) == 0:
        raise ValidationError(
            "draws must be an array (leading dimension H, one row per posterior draw) or a "
            f"mapping of parameter name to such arrays; got {type(draws).__name__}."
        )
    return int(np.shape(draws)[0])


def _chain_labels(chains: Any, h: int) -> np.ndarray:
    """``[H]`` chain labels from ``chains`` of :class:`ArrayModel` (a count or the labels)."""
    if chains is None:
        return np.zeros(h, dtype=np.int64)
    arr = np.asarray(chains)
    if arr.ndim == 0 and np.issubdtype(arr.dtype, np.integer):
        c = int(arr)
        if c < 1 or h % c:
            raise ValidationError(
                f"chains = {c} must be a positive divisor of the number of draws H = {h} "
                "(equally long chains, chain-major)."
            )
        return np.repeat(np.arange(c, dtype=np.int64), h // c)
    integer = np.issubdtype(arr.dtype, np.integer)
    if arr.shape != (h,) or not integer or (arr.size and arr.min() < 0):
        raise ValidationError(
            f"chains must be a number of chains or {h} non-negative integer chain labels, one "
            f"per draw. Got {chains!r:.80}."
        )
    return arr.astype(np.int64)


class ArrayModel:
    """A Bayesian synthesis model given by posterior draws and a per-draw record log-likelihood
    (a :class:`bayes_risk.contract.RiskModel` for draws made by any software; it neither fits
    nor synthesizes).

    Parameters
    ----------
    loglik_fn : callable
        ``loglik_fn(records: DataFrame, draws) -> ndarray[H, n]`` with ``log p(record | Θ_h)``
        (joint form) or ``log p(record^s | record^us, Θ_h)`` (conditional form); ``draws`` is
        what was passed below (sliced along the first axis for a subset of draws).
    draws : ndarray or mapping of str to ndarray
        Posterior draws of ``p(Θ | y)``; leading dimension ``H``.
    schema : Schema
        Column types, levels and roles (the synthesized columns are those the intruder guesses).
    model_class : {"P", "O"}
        See :doc:`/methods/attribute` (Two classes of synthesis model). Class O needs
        ``own_record_delta_fn``.
    ratio_form : {"joint", "conditional"}
        Hu 2019 §3.2.5.
    dataset_loglik_fn : callable, optional
        ``f(dataset: DataFrame, draws) -> ndarray[H]`` = ``log p(Z_(l) | Θ_h)`` (default: the sum
        of ``loglik_fn`` over the rows).
    augment_fn : callable, optional
        ``augment_fn(data, synthetic, **kw) -> draws`` of ``p(Θ | y, Z_(l))`` (enables
        :meth:`fit_augmented`, the stabilised estimator).
    own_record_delta_fn : callable, optional
        Class O: ``f(record_row, candidates_df, synthetic, draws) -> ndarray[H, m, G]`` =
        ``ℓ_{hli}(y*_g) − ℓ_{hli}(y_i)``.
    neighbourhood_fn : callable, optional
        Fast path ``f(records_df, draws) -> ndarray[H, n, G]`` of one-variable-different
        candidate log-likelihoods (candidate-set order).
    chains : int or array of int, optional
        A number ``C`` of equally long chains stored chain-major, or ``H`` chain labels
        (default: one chain).

    Examples
    --------
    A Bernoulli synthesizer with three draws of θ (Hu 2019 §3.2.5 fixture ``bern3``):

    >>> import numpy as np, pandas as pd
    >>> from bayes_risk.data import infer_schema
    >>> df = pd.DataFrame({"y": pd.Categorical([1, 1, 0, 1, 0], categories=[0, 1])})
    >>> schema = infer_schema(df, synthesized=["y"])
    >>> def ll(records, theta):
    ...     y = records["y"].astype(int).to_numpy()[None, :]
    ...     t = np.asarray(theta)[:, None]
    ...     return y * np.log(t) + (1 - y) * np.log1p(-t)
    >>> model = ArrayModel(ll, np.array([0.3, 0.5, 0.7]), schema)
    >>> model.record_loglik(df.iloc[:1]).shape
    (3, 1)
    """

    def __init__(
        self,
        loglik_fn: Callable[[pd.DataFrame, Any], np.ndarray],
        draws: Any,
        schema: Any,
        *,
        model_class: Literal["P", "O"] = "P",
        ratio_form: Literal["joint", "conditional"] = "joint",
        dataset_loglik_fn: Callable[[pd.DataFrame, Any], np.ndarray] | None = None,
        augment_fn: Callable[..., Any] | None = None,
        own_record_delta_fn: Callable[..., np.ndarray] | None = None,
        neighbourhood_fn: Callable[[pd.DataFrame, Any], np.ndarray] | None = None,
        chains: int | Sequence[int] | np.ndarray | None = None,
    ) -> None:
        check_params({"loglik_fn": loglik_fn, "model_class": model_class,
                      "ratio_form": ratio_form, "own_record_delta_fn": own_record_delta_fn},
                     _SETTINGS, relations=_RELATIONS)
        self.loglik_fn = loglik_fn
        self.draws = draws
        self.schema_ = schema
        self.model_class = model_class
        self.ratio_form = ratio_form
        self.dataset_loglik_fn = dataset_loglik_fn
        self.augment_fn = augment_fn
        self.own_record_delta_fn = own_record_delta_fn
        self.neighbourhood_fn = neighbourhood_fn
        self._h = _n_draws(draws)
        if self._h < 1:
            raise ValidationError("draws must hold at least one posterior draw.")
        self._chains = _chain_labels(chains, self._h)

    @property
    def n_draws(self) -> int:
        """Number of posterior draws ``H``."""
        return self._h

    @available_if(lambda self: self.neighbourhood_fn is not None)
    def neighbourhood_loglik(
        self, records: pd.DataFrame, *, draw_indices: np.ndarray | None = None
    ) -> np.ndarray:
        """``[H, n, G]`` one-variable-different candidate log-likelihoods (``neighbourhood_fn``)."""
        d = _take_draws(self.draws, draw_indices)
        return np.asarray(self.neighbourhood_fn(records, d), dtype=np.float64)

    @available_if(lambda self: self.own_record_delta_fn is not None)
    def own_record_delta(
        self,
        record: pd.Series,
        candidates: pd.DataFrame,
        synthetic: Sequence[pd.DataFrame],
        *,
        draw_indices: np.ndarray | None = None,
    ) -> np.ndarray:
        """``[H, m, G]`` own-record terms of a class O model (``own_record_delta_fn``)."""
        d = _take_draws(self.draws, draw_indices)
        return np.asarray(self.own_record_delta_fn(record, candidates, synthetic, d),
                          dtype=np.float64)

    def draw_chains(self) -> np.ndarray:
        """``[H]`` chain of each draw (all 0 when ``chains`` was not given)."""
        return self._chains.copy()

    def with_draws(self, draws: Any, *, chains: Any = None) -> ArrayModel:
        """The same model with other draws and their ``chains`` (see the class)."""
        fns = ("model_class", "ratio_form", "dataset_loglik_fn", "augment_fn",
               "own_record_delta_fn", "neighbourhood_fn")
        return ArrayModel(self.loglik_fn, draws, self.schema_, chains=chains,
                          **{k: getattr(self, k) for k in fns})

    def _check(self, out: Any, n: int, what: str, h: int) -> np.ndarray:
        arr = np.asarray(out, dtype=np.float64)
        if arr.shape != (h, n):
            raise ValidationError(
                f"{what} returned shape {arr.shape}; expected (H, n) = ({h}, {n}).",
                code="MODEL_OUTPUT_INVALID"
            )
        if np.any(np.isnan(arr)) or np.any(arr == np.inf):
            raise ValidationError(f"{what} returned nan or +inf log-likelihoods.",
                                  code="MODEL_OUTPUT_INVALID")
        return arr

    def record_loglik(
        self, records: pd.DataFrame, *, draw_indices: np.ndarray | None = None
    ) -> np.ndarray:
        """``[H, n]`` log-likelihood of each record under each draw."""
        d = _take_draws(self.draws, draw_indices)
        h = self._h if draw_indices is None else len(draw_indices)
        return self._check(self.loglik_fn(records, d), len(records), "loglik_fn", h)

    def dataset_loglik(
        self, synthetic: Sequence[pd.DataFrame], *, draw_indices: np.ndarray | None = None
    ) -> np.ndarray:
        """``[H, m]`` log-likelihood of each synthetic dataset under each draw."""
        d = _take_draws(self.draws, draw_indices)
        h = self._h if draw_indices is None else len(draw_indices)
        cols = []
        for z in synthetic:
            if self.dataset_loglik_fn is not None:
                v = np.asarray(self.dataset_loglik_fn(z, d), dtype=np.float64).reshape(h)
            else:
                v = self._check(self.loglik_fn(z, d), len(z), "loglik_fn", h).sum(axis=1)
            cols.append(v)
        return np.stack(cols, axis=1)

    @available_if(lambda self: self.augment_fn is not None)
    def fit_augmented(
        self, data: pd.DataFrame, synthetic: pd.DataFrame, **kwargs: Any
    ) -> ArrayModel:
        """Model with draws of ``p(Θ | y, Z_(l))`` from ``augment_fn``."""
        return self.with_draws(self.augment_fn(data, synthetic, **kwargs))

    def __repr__(self) -> str:
        return f"ArrayModel(H={self._h}, class={self.model_class}, ratio_form={self.ratio_form})"
