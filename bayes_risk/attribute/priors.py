"""Intruder priors over a record's candidate set. See :doc:`/methods/attribute` (Priors)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bayes_risk._constraints import Interval, check_fields, checked
from bayes_risk.attribute.diagnostics import logsumexp
from bayes_risk.attribute.record_table import groups_by_size, ungroup
from bayes_risk.exceptions import CALLER, DataWarning, ValidationError, arg_name

__all__ = [
    "Prior",
    "Uniform",
    "TruthWeighted",
    "UserWeights",
    "Empirical",
    "ModelPredictive",
    "GridUniform",
    "PriorInputs",
    "parse_prior",
    "evaluate_prior",
    "evaluate_prior_groups",
    "silverman_bandwidth",
]


@dataclass
class PriorInputs:
    """What a prior may use for the ``R`` evaluated records (candidates, truths, other records)."""

    records: np.ndarray
    values: list[np.ndarray]
    g0: np.ndarray
    columns: tuple[str, ...]
    categorical: np.ndarray
    others: np.ndarray
    log_mean_r: list[np.ndarray] | None = None
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def sizes(self) -> np.ndarray:
        """``G`` of every record."""
        if "sizes" not in self.cache:
            self.cache["sizes"] = np.array([v.shape[0] for v in self.values], dtype=np.int64)
        return self.cache["sizes"]

    @property
    def groups(self) -> list[np.ndarray]:
        """Indices of records sharing a candidate-set size (for vectorised evaluation)."""
        if "groups" not in self.cache:
            self.cache["groups"] = groups_by_size(self.sizes)
        return self.cache["groups"]


def _ungroup(inp: PriorInputs, mats: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per-record arrays from one matrix per group of ``inp.groups`` (rows are views)."""
    return ungroup(list(mats), inp.groups, len(inp.values))


def _by_group(inp: PriorInputs, make: Callable[[np.ndarray, int], np.ndarray]
              ) -> list[np.ndarray]:
    """``make(idx, G) -> [len(idx), G]`` for every group of ``inp.groups``."""
    return [make(idx, int(inp.sizes[idx[0]])) for idx in inp.groups]


def _stacked(inp: PriorInputs, key: str, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per-record arrays stacked per group, once per sweep (memo ``inp.cache[key]``)."""
    if key not in inp.cache:
        inp.cache[key] = [np.stack([np.asarray(arrays[i], dtype=np.float64) for i in idx])
                          for idx in inp.groups]
    return inp.cache[key]


class Prior:
    """Base class: implement ``log_weights`` or ``log_weight_groups``."""

    name = "prior"

    def log_weights(self, inp: PriorInputs) -> list[np.ndarray]:
        """Unnormalised log weights, one array ``(G_r,)`` per record."""
        if type(self).log_weight_groups is Prior.log_weight_groups:
            raise NotImplementedError(
                f"{type(self).__name__} implements neither log_weights nor log_weight_groups."
            )
        return _ungroup(inp, self.log_weight_groups(inp))

    def log_weight_groups(self, inp: PriorInputs) -> list[np.ndarray]:
        """Unnormalised log weights, one matrix per ``idx`` of ``inp.groups``."""
        lws = self.log_weights(inp)
        return [np.stack([np.asarray(lws[i], dtype=np.float64) for i in idx])
                for idx in inp.groups]

    def label(self) -> str:
        """Short description (used as a column/key in sensitivity tables)."""
        return self.name

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description."""
        return {"prior": self.label()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label()!r})"


class Uniform(Prior):
    """``log(1/G)``; cancels in the posterior (methods, Priors)."""

    name = "uniform"

    def log_weight_groups(self, inp: PriorInputs) -> list[np.ndarray]:
        return _by_group(inp, lambda idx, g: np.full((idx.size, g), -math.log(g)))


class GridUniform(Uniform):
    """Uniform over spatial grid points; identical to :class:`Uniform`."""

    name = "grid-uniform"


@dataclass(repr=False)
class TruthWeighted(Prior):
    """Mass ``κ/(G+κ−1)`` on the truth, ``1/(G+κ−1)`` elsewhere (methods, Priors).

    ``κ > 1``: an intruder leaning towards the truth; ``κ < 1``: leaning away.

    Examples
    --------
    With ``G = 2``, ``κ = 2`` the prior is ``(1/3, 2/3)`` for (other, truth).
    """

    kappa: float = field(default=1.0, metadata=checked(Interval(float, 0, closed="neither")))

    __post_init__ = check_fields  # the field's constraint is the whole check

    def label(self) -> str:
        return f"truth-weighted:{self.kappa:g}"

    def log_weight_groups(self, inp: PriorInputs) -> list[np.ndarray]:
        def make(idx: np.ndarray, g: int) -> np.ndarray:
            lw = np.full((idx.size, g), -math.log(g + self.kappa - 1))
            lw[np.arange(idx.size), inp.g0[idx]] = (math.log(self.kappa)
                                                    - math.log(g + self.kappa - 1))
            return lw

        return _by_group(inp, make)


@dataclass(repr=False)
class UserWeights(Prior):
    """Arbitrary non-negative weights, renormalised (methods, Priors).

    Parameters
    ----------
    weights : array of float, or callable
        One weight per candidate, or ``f(record, candidates: ndarray[G, q], g0) -> weights[G]``.
    """

    weights: Any = None

    def label(self) -> str:
        return "user"

    def log_weights(self, inp: PriorInputs) -> list[np.ndarray]:
        out = []
        for r, v, g0 in zip(inp.records, inp.values, inp.g0, strict=False):
            w = self.weights(int(r), v, int(g0)) if callable(self.weights) else self.weights
            w = np.asarray(w, dtype=np.float64)
            if w.shape != (v.shape[0],):
                raise ValidationError(
                    f"user prior weights for record {int(r)} have shape {w.shape}; expected "
                    f"({v.shape[0]},), one weight per candidate."
                )
            if np.any(~np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
                raise ValidationError(
                    f"user prior weights for record {int(r)} must be finite, >= 0 and not all 0."
                )
            with np.errstate(divide="ignore"):
                out.append(np.log(w))
        return out


def silverman_bandwidth(x: np.ndarray) -> float:
    """Silverman's rule ``0.9 min(sd, IQR/1.34) n^(−1/5)`` (falls back to sd or 1 if 0)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    sd = float(np.std(x, ddof=1)) if n > 1 else 0.0
    q75, q25 = np.percentile(x, [75, 25]) if n else (0.0, 0.0)
    spread = min(sd, (q75 - q25) / 1.34) if (q75 - q25) > 0 else sd
    if spread <= 0:
        spread = sd if sd > 0 else 1.0
    return float(0.9 * spread * max(n, 1) ** (-0.2))


@dataclass(repr=False)
class Empirical(Prior):
    """Prior from the other records' true values (methods, Priors) [P for continuous columns].

    Categorical part: ``#{i' ≠ i : y_{i'} = y*} + α``; numeric columns multiply in a product
    Gaussian kernel density of the other records' values (Silverman bandwidths).

    Examples
    --------
    Candidates ``(A, B, C)`` with the other records holding ``A`` three times and ``B`` once:
    ``empirical(1)`` gives ``(4, 2, 1)/7``.
    """

    alpha: float = field(default=1.0, metadata=checked(Interval(float, 0)))

    __post_init__ = check_fields  # the field's constraint is the whole check

    def label(self) -> str:
        return f"empirical:{self.alpha:g}"

    @staticmethod
    def _counts(inp: PriorInputs) -> list[np.ndarray]:
        if "empirical_counts" in inp.cache:
            return inp.cache["empirical_counts"]
        cat = np.asarray(inp.categorical, dtype=bool)
        others = inp.others
        counts: list[np.ndarray] = []
        if cat.any():
            oc = others[:, cat].astype(np.int64)
            uniq, cnt = np.unique(oc, axis=0, return_counts=True)
            table = dict(zip(map(tuple, uniq.tolist()), cnt.tolist(), strict=True))
        for r, v, _g0 in zip(inp.records, inp.values, inp.g0, strict=False):
            if cat.any():
                vc = v[:, cat].astype(np.int64)
                c = np.array([table.get(tuple(row), 0) for row in vc.tolist()], dtype=np.float64)
                own = tuple(others[int(r), cat].astype(np.int64).tolist())
                same = np.all(vc == np.asarray(own)[None, :], axis=1)
                c[same] -= 1.0  # exclude record i itself
            else:
                c = np.zeros(v.shape[0])
            counts.append(c)
        inp.cache["empirical_counts"] = counts
        return counts

    @staticmethod
    def _kde(inp: PriorInputs) -> list[np.ndarray] | None:
        cat = np.asarray(inp.categorical, dtype=bool)
        if cat.all():
            return None
        if "empirical_kde" in inp.cache:
            return inp.cache["empirical_kde"]
        num = ~cat
        others = inp.others[:, num]
        bw = np.array([silverman_bandwidth(others[:, j][~np.isnan(others[:, j])])
                       for j in range(others.shape[1])])
        out = []
        for r, v in zip(inp.records, inp.values, strict=False):
            # a column the record's candidates hold missing is constant (left out); the density
            # is that of the others observed in the columns used
            vn = v[:, num]
            use = ~np.isnan(vn).any(axis=0)
            mask = ~np.isnan(others[:, use]).any(axis=1)
            mask[int(r)] = False
            o = others[mask][:, use]
            z = (vn[:, use][:, None, :] - o[None, :, :]) / bw[use][None, None, :]
            lk = (-0.5 * np.sum(z * z, axis=2) - np.sum(np.log(bw[use]))
                  - 0.5 * use.sum() * math.log(2 * math.pi))
            out.append(logsumexp(lk, axis=1) - math.log(max(o.shape[0], 1)))
        inp.cache["empirical_kde"] = out
        return out

    def log_weight_groups(self, inp: PriorInputs) -> list[np.ndarray]:
        counts = _stacked(inp, "empirical_count_groups", self._counts(inp))
        kde = self._kde(inp)
        kde_g = None if kde is None else _stacked(inp, "empirical_kde_groups", kde)
        out = []
        for k, c in enumerate(counts):
            with np.errstate(divide="ignore"):
                lw = (np.log(c + self.alpha) if np.asarray(inp.categorical).any()
                      else np.zeros_like(c))
            if kde_g is not None:
                lw = lw + kde_g[k]
            out.append(lw)
        return out


class ModelPredictive(Prior):
    """Model-predictive prior ``P0(y*) ∝ mean_h r_h(y*)`` (methods, Priors)."""

    name = "model-predictive"

    def log_weight_groups(self, inp: PriorInputs) -> list[np.ndarray]:
        if inp.log_mean_r is None:
            raise ValidationError(
                "the model-predictive prior needs the per-candidate mean importance ratios, "
                "which this result does not hold (plug-in models have no posterior draws).",
                code="MODEL_UNSUITED"
            )
        return [m.copy() for m in _stacked(inp, "log_mean_r_groups", inp.log_mean_r)]


def parse_prior(prior: str | Prior | Sequence[float] | Callable[..., Any]) -> Prior:
    """Turn a prior specification into a :class:`Prior`.

    Accepted: a :class:`Prior`; ``"uniform"``; ``"truth-weighted:K"``; ``"empirical[:ALPHA]"``;
    ``"model-predictive"``; ``"grid-uniform"``; weights or a callable (:class:`UserWeights`).
    Raises ``ValidationError`` for an unknown string.
    """
    if isinstance(prior, Prior):
        return prior
    if isinstance(prior, str):
        s = prior.strip().lower().replace("_", "-")
        name, _, arg = s.partition(":")
        try:
            if name == "uniform":
                return Uniform()
            if name == "grid-uniform":
                return GridUniform()
            if name == "truth-weighted":
                return TruthWeighted(float(arg) if arg else 1.0)
            if name == "empirical":
                return Empirical(float(arg) if arg else 1.0)
            if name == "model-predictive":
                return ModelPredictive()
        except ValueError as err:
            if isinstance(err, ValidationError):
                raise
            raise ValidationError(f"prior {prior!r}: parameter {arg!r} is not a number.") from err
        raise ValidationError(
            f"{arg_name('prior')} {prior!r} not understood; expected 'uniform', "
            "'truth-weighted:K', 'empirical[:ALPHA]', 'model-predictive', 'grid-uniform', "
            "weights or a callable.",
            code="INVALID_ARGUMENT",
        )
    if callable(prior) or isinstance(prior, (list, tuple, np.ndarray)):
        return UserWeights(prior)
    raise ValidationError(
        f"prior must be a string, Prior, weights or callable. Got {type(prior).__name__}."
    )


def evaluate_prior(prior: Prior, inp: PriorInputs) -> tuple[list[np.ndarray], list[str]]:
    """Normalised ``logprior`` per record plus warning codes (see :func:`evaluate_prior_groups`)."""
    mats, codes = evaluate_prior_groups(prior, inp)
    return _ungroup(inp, mats), codes


def evaluate_prior_groups(prior: Prior, inp: PriorInputs) -> tuple[list[np.ndarray], list[str]]:
    """Normalised ``logprior`` matrices, one per group of ``inp.groups``, and warning codes."""
    lws = prior.log_weight_groups(inp)
    codes: list[str] = []
    out: list[np.ndarray] = []
    renorm = False
    for idx, mat in zip(inp.groups, lws, strict=True):
        mat = np.asarray(mat, dtype=np.float64)
        tot = logsumexp(mat, axis=1)
        if not np.all(np.isfinite(tot)):
            bad = int(inp.records[idx[np.flatnonzero(~np.isfinite(tot))[0]]])
            raise ValidationError(
                f"prior {prior.label()!r} gives zero weight to every candidate of record {bad}.",
                code="PRIOR_ALL_ZERO"
            )
        if isinstance(prior, UserWeights) and np.any(np.abs(tot) > 1e-9):
            renorm = True
        out.append(mat - tot[:, None])
    if renorm:
        codes.append("PRIOR_RENORMALISED")
        warnings.warn(
            "user prior weights did not sum to 1 and were renormalised (PRIOR_RENORMALISED).",
            DataWarning,
            skip_file_prefixes=CALLER,
        )
    if isinstance(prior, ModelPredictive):
        codes.append("HARMONIC_WEIGHTS")
    return out, codes
