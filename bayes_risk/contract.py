"""The model contract: :class:`RiskModel`, the optional ``Supports...`` protocols,
:func:`capabilities` (what a model offers, read off its methods) and :class:`ModelInfo` (what no
method shows). See :doc:`/adding_a_model`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from bayes_risk._constraints import Flag, InstanceOf, SequenceOf, Text, check_value
from bayes_risk.exceptions import NotSupportedError, ValidationError

__all__ = ["ESTIMATORS", "LIKELIHOODS", "MEMBER_CAPABILITIES", "Capabilities", "ModelInfo",
           "RiskModel", "SupportsPersistence", "auto_estimator", "available_if", "capabilities",
           "missing_members", "SupportsAugmentedFit", "SupportsNeighbourhoodLoglik",
           "SupportsNeighbourhoodBuffer", "SupportsCandidateLoglik", "SupportsOwnRecordTerm",
           "SupportsPluginLoglik", "SupportsConvergenceSummary", "SupportsDrawChains",
           "SupportsPosteriorReplicates", "LargestValuePieces", "SupportsLargestValue",
           "run_setting"]

#: likelihood kinds a model may offer, each with the method that shows it
LIKELIHOODS: dict[str, str] = {
    "record": "record_loglik",
    "dataset": "dataset_loglik",
    "neighbourhood": "neighbourhood_loglik",
    "neighbourhood_buffer": "neighbourhood_size",
    "candidate": "candidate_loglik",
    "own_record": "own_record_delta",
    "plugin": "plugin_loglik",
    "largest_value": "largest_value_loglik"}

#: attribute-risk estimators, in order of preference, each with the methods it needs (methods
#: page, Attribute disclosure risk)
ESTIMATORS: dict[str, tuple[str, ...]] = {
    "stabilised": ("record_loglik", "fit_augmented"),
    "is": ("record_loglik", "dataset_loglik"),
    "plugin": ("plugin_loglik",)}

#: further capabilities, each with the methods that show it
MEMBER_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "persistence": ("save", "load"),
    "posterior_replicates": ("posterior_replicates",),
    "convergence": ("convergence_summary",),
    "chains": ("draw_chains",),
    "plugin_likelihood": ("plugin_likelihood",)}


#: ModelInfo.required: what a model needs given, by name
_REQUIRED = SequenceOf(Text("a name", r"[^\W\d]\w*"), "names ('synthesized' or settings of "
                       "the model's __init__)", min_len=0, unique=True)


@dataclass(frozen=True)
class ModelInfo:
    """What a synthesis model declares because no method can show it (``info = ModelInfo(...)``;
    the defaults claim nothing).

    Parameters
    ----------
    imputes : bool
        ``record_loglik`` integrates a record's missing values out.
    holds_missing : bool
        A plug-in likelihood holds a record's missing values at their missingness kind.
    partial_synthesis : bool
        ``fit(records=...)`` may synthesize some records; a fitted model then has
        ``synthesized_records_`` (bool ``[n]``, or ``None`` for every record).
    categorical_only : bool
        Only categorical columns are modelled (the command line reads every column so).
    visit_order : bool
        Columns are synthesized one after another in the order of ``synthesized``
        (:func:`~bayes_risk.compare_visit_orders` compares orders).
    releases_donor_values : bool
        Synthetic values are original values of donor records (CART, PMM).
    result_warnings : tuple of str
        Warning codes that hold for every estimate made with the model.
    required : tuple of str
        What a run must give: ``"synthesized"`` or names of ``__init__`` settings (the command
        line refuses a run without them, ``OPTION_REQUIRED``).
    """

    imputes: bool = False
    holds_missing: bool = False
    partial_synthesis: bool = False
    categorical_only: bool = False
    visit_order: bool = False
    releases_donor_values: bool = False
    result_warnings: tuple[str, ...] = ()
    required: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        name = type(self).__name__
        object.__setattr__(self, "result_warnings", tuple(self.result_warnings))
        object.__setattr__(self, "required", tuple(check_value(
            self.required, _REQUIRED, f"{name}.required", code="BAD_MODEL_INFO")))
        for f in dataclasses.fields(self):
            if f.type in ("bool", bool):
                object.__setattr__(self, f.name, check_value(
                    getattr(self, f.name), Flag(), f"{name}.{f.name}", code="BAD_MODEL_INFO"))

    def replace(self, **changes: Any) -> ModelInfo:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Capabilities(ModelInfo):
    """What a model can do (:func:`capabilities`): its :class:`ModelInfo` and what its methods
    show.

    Parameters
    ----------
    likelihoods : frozenset of str
        Likelihood kinds offered, keys of ``LIKELIHOODS`` (each with the method that shows it).
    estimators : tuple of str
        Attribute-risk estimators supported, in order of preference (keys of ``ESTIMATORS``;
        a plug-in likelihood supports ``"plugin"`` only).
    persistence, posterior_replicates, convergence, chains, plugin_likelihood : bool
        Whether the methods of ``MEMBER_CAPABILITIES`` are there.
    """

    likelihoods: frozenset[str] = frozenset()
    estimators: tuple[str, ...] = ()
    persistence: bool = False
    posterior_replicates: bool = False
    convergence: bool = False
    chains: bool = False
    plugin_likelihood: bool = False

    def has(self, kind: str) -> bool:
        """Whether the likelihood ``kind`` (a key of ``LIKELIHOODS``) is offered."""
        return kind in self.likelihoods


def capabilities(model: Any) -> Capabilities:
    """What ``model`` (an instance or a class) can do: its methods (on an instance, those of
    :func:`available_if` only when their condition holds) and its declared ``info``.

    Raises
    ------
    ValidationError
        If ``model`` shows no method of a model and has no ``info`` (``MODEL_INFO_MISSING``), or
        its ``info`` is not a :class:`ModelInfo` (``BAD_MODEL_INFO``).
    """
    def has(name: str) -> bool:
        return callable(getattr(model, name, None))

    name = model.__name__ if isinstance(model, type) else type(model).__name__
    lik = frozenset(k for k, meth in LIKELIHOODS.items() if has(meth))
    flags = {cap: all(has(m) for m in members) for cap, members in MEMBER_CAPABILITIES.items()}
    info = getattr(model, "info", None)
    if info is None and not lik and not any(flags.values()) and not has("synthesize"):
        further = sorted({m for ms in MEMBER_CAPABILITIES.values() for m in ms})
        raise ValidationError(
            f"{name} is not a model: it has none of the likelihood methods of the RiskModel "
            "protocol (record_loglik, dataset_loglik) or of a plug-in (plugin_loglik), no "
            f"synthesize and none of {', '.join(further)}. Give a fitted bayes-risk model, an "
            "ArrayModel of posterior draws, or a class that implements the protocol (docs: "
            "'Adding a model').",
            code="MODEL_INFO_MISSING")
    info = ModelInfo() if info is None else info
    check_value(info, InstanceOf(ModelInfo, "a bayes_risk.ModelInfo"), f"{name}.info",
                code="BAD_MODEL_INFO")
    if "neighbourhood" not in lik:
        lik -= {"neighbourhood_buffer"}
    est = tuple(e for e, members in ESTIMATORS.items() if all(has(m) for m in members))
    if "plugin" in est:
        est = ("plugin",)  # a plug-in likelihood has no posterior draws
    declared = {f.name: getattr(info, f.name) for f in dataclasses.fields(ModelInfo)}
    return Capabilities(likelihoods=lik, estimators=est, **flags, **declared)


class _NotAvailable(NotSupportedError, AttributeError):
    """A method absent under the model's settings (``hasattr`` is false; a coded error)."""


class _AvailableIf:
    """Descriptor of :func:`available_if`: the method on the class; on an instance, the bound
    method when ``check(instance)`` holds, else :class:`_NotAvailable`."""

    def __init__(self, fn: Callable[..., Any], check: Callable[[Any], bool]) -> None:
        self.fn, self.check, self.name = fn, check, fn.__name__
        functools.update_wrapper(self, fn)

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self.fn
        if not self.check(obj):
            raise _NotAvailable(
                f"{type(obj).__name__}.{self.name} is not available with this model's settings "
                "(bayes_risk.capabilities(model) lists what it offers).", code="MODEL_UNSUITED")
        return self.fn.__get__(obj, owner)


def available_if(check: Callable[[Any], bool]) -> Callable[[Callable[..., Any]], Any]:
    """Decorator of a method a model offers only when ``check(instance)`` holds (scikit-learn's
    ``available_if``); otherwise the instance lacks it and :func:`capabilities` leaves it out."""
    return lambda fn: _AvailableIf(fn, check)


def missing_members(obj: Any, protocol: type) -> list[str]:
    """Members of the Protocol class ``protocol`` that ``obj`` lacks (sorted)."""
    get = getattr(typing, "get_protocol_members", None)  # Python >= 3.13
    members = get(protocol) if get is not None else protocol.__protocol_attrs__
    return sorted(m for m in members if not hasattr(obj, m))


def auto_estimator(model: Any, *, augmented_given: bool = False) -> str:
    """The estimator ``estimator="auto"`` resolves to: the first of
    ``capabilities(model).estimators`` that applies (the stabilised one for class P models only,
    with ``fit_augmented`` or ``augmented_given``); else ``NotSupportedError`` ``NO_ESTIMATOR``."""
    caps = capabilities(model)
    prefs = list(caps.estimators)
    if augmented_given and "stabilised" not in prefs and caps.has("record"):
        prefs.insert(0, "stabilised")
    for est in prefs:
        if est == "stabilised" and getattr(model, "model_class", "P") != "P":
            continue
        return est
    raise NotSupportedError(
        f"{type(model).__name__} supports no attribute-risk estimator that applies to it "
        f"(estimators={list(caps.estimators)}, model_class="
        f"{getattr(model, 'model_class', None)!r}): a class P model needs fit_augmented "
        "(estimator 'stabilised') or dataset_loglik (estimator 'is'); a class O model needs "
        "dataset_loglik and own_record_delta.", code="NO_ESTIMATOR")


@runtime_checkable
class RiskModel(Protocol):
    """The one protocol a model with posterior draws must satisfy for the risk engines; draws
    are flattened chain by chain (ArviZ's ``(chain, draw)`` order). See :doc:`/adding_a_model`.

    Attributes
    ----------
    model_class : {"P", "O"}
        Whether a synthetic dataset depends, given Θ, on the confidential synthesized values
        (class O) or not (P; methods, Two classes of synthesis model).
    ratio_form : {"joint", "conditional"}
        Whether importance ratios use ``p(y_i | Θ)`` or ``p(y_i^s | y_i^us, Θ)`` (Hu 2019 §3.2.5).
    schema_ : Schema
    n_draws : int
        Number of posterior draws ``H``.
    """

    model_class: Literal["P", "O"]
    ratio_form: Literal["joint", "conditional"]
    schema_: Any

    @property
    def n_draws(self) -> int: ...

    def record_loglik(
        self, records: pd.DataFrame, *, draw_indices: np.ndarray | None = None
    ) -> np.ndarray:
        """``[H, n]`` float64 array of ``log p(y_i | Θ_h)`` (joint or conditional form);
        ``draw_indices`` selects draws by index (then ``[len(draw_indices), n]``)."""

    def dataset_loglik(
        self, synthetic: Sequence[pd.DataFrame], *, draw_indices: np.ndarray | None = None
    ) -> np.ndarray:
        """``[H, m]`` float64 array of ``log p(Z_(l) | Θ_h)`` (up to a constant of ``Θ``)."""


class SupportsPersistence(Protocol):
    """A fitted model saved to a folder (``model.json`` names its registered ``"method"``, so
    that :func:`bayes_risk.models.load_model` finds the class) and loaded back (no pickle)."""

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the fitted model to the folder ``path``; returns it."""

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Any:
        """The fitted model saved in ``path``."""


class SupportsAugmentedFit(Protocol):
    """Draws of ``p(Θ | y, Z_(l))`` (the stabilised estimator, methods page)."""

    def fit_augmented(
        self, data: pd.DataFrame, synthetic: pd.DataFrame, *, random_seed: Any = None
    ) -> Any:
        """A new fitted model (a :class:`RiskModel`) whose draws come from
        ``p(Θ | y, Z_(l))``, seeded by ``random_seed``."""


class SupportsNeighbourhoodLoglik(Protocol):
    """Record likelihoods of the one-variable-different candidates (methods, Candidate sets) in
    one call: index 0 the truth, then column by column, levels ascending, skipping the true
    level. ``NotImplementedError`` for a setting it cannot serve makes the engine fall back."""

    def neighbourhood_loglik(
        self, records: pd.DataFrame, *, draw_indices: np.ndarray | None = None
    ) -> np.ndarray:
        """``[H, n, G]`` log-likelihoods of each record's neighbourhood."""


class SupportsNeighbourhoodBuffer(SupportsNeighbourhoodLoglik, Protocol):
    """:class:`SupportsNeighbourhoodLoglik` whose ``neighbourhood_loglik`` accepts ``out=``
    (float64 ``[H, n, G]``, ``G = neighbourhood_size()``), a buffer reused across chunks."""

    def neighbourhood_size(self) -> int:
        """``G = 1 + Σ_{j∈S}(d_j − 1)`` of the one-variable-different set."""


class SupportsCandidateLoglik(Protocol):
    """Per-record candidate likelihoods (models whose record likelihood has per-record state)."""

    def candidate_loglik(
        self, record: pd.Series, candidates: pd.DataFrame, *, draw_indices: np.ndarray | None = None
    ) -> np.ndarray:
        """``[H, G]`` log-likelihoods of ``record`` with its varying columns set to each
        candidate (decoded values)."""


class SupportsOwnRecordTerm(Protocol):
    """The own-record term of a class O model (methods, Two classes of synthesis model)."""

    def own_record_delta(
        self,
        record: pd.Series,
        candidates: pd.DataFrame,
        synthetic: Sequence[pd.DataFrame],
        *,
        draw_indices: np.ndarray | None = None,
    ) -> np.ndarray:
        """``[H, m, G]`` array of ``ℓ_{hli}(y*_g) − ℓ_{hli}(y_i)``."""


class SupportsPluginLoglik(Protocol):
    """A model without posterior draws that gives the likelihood of the release directly (the
    tree synthesizers' plug-in likelihoods, methods page), with ``model_class`` and ``schema_``.
    A model may also offer ``plugin_loglik_many(records, candidates, synthetic)``, the ``[R, m, G]``
    log-likelihoods and standard errors of several records' stacked candidates at once, which the
    attribute engine then calls once per chunk of records."""

    model_class: Literal["P", "O"]
    schema_: Any

    def plugin_loglik(
        self,
        record: int,
        candidates: pd.DataFrame,
        synthetic: Sequence[pd.DataFrame],
        *,
        return_se: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """``[m, G]`` log-likelihood of each dataset under each candidate (up to a constant
        common to the candidates); with ``return_se=True`` also the ``[m, G]`` Monte Carlo
        standard errors of each candidate's difference from the truth (``0`` where exact)."""


class SupportsConvergenceSummary(Protocol):
    """A model fitted by MCMC whose convergence is reported with every result that uses it."""

    def convergence_summary(self) -> dict[str, Any]:
        """R-hat and ESS of the diagnosed quantities and structured ``warnings`` (each a dict
        with ``code``, ``quantities`` and ``message``)."""


class SupportsDrawChains(Protocol):
    """Posterior draws from several MCMC chains: the attribute-risk engine then compares each
    record's estimate between chains (record flag ``CHAINS_DISAGREE``)."""

    def draw_chains(self) -> np.ndarray:
        """``[H]`` int array: the chain of each flattened posterior draw (chains labelled
        ``0..C-1``; draws of one chain in sampling order)."""


@runtime_checkable
class LargestValuePieces(Protocol):
    """Per-candidate likelihood pieces of the Wei & Reiter (2016) largest-value scenario.

    Attributes
    ----------
    candidates : ndarray (G,)
        Candidate values of the largest value; the truth at ``g0``.
    g0 : int
    model_class : {"P", "O"}
    logp_rec : ndarray (H, G)
        Record log-likelihoods of the target with its value set to each candidate.
    L : ndarray (H, m)
        ``log p(Z_(l) | Θ_h)``.
    loglik_candidates : ndarray (H, m, G) or None
        Class O: ``log p(Z_(l) | Θ_h, y*_g, y_{-i})``.
    constraint_loglik : ndarray (H, C, G), optional
        A weaker intruder's knowledge given each candidate (``largest_value.constraint_term``).
    """

    candidates: np.ndarray
    g0: int
    model_class: str
    logp_rec: np.ndarray
    L: np.ndarray | None
    loglik_candidates: np.ndarray | None


class SupportsLargestValue(Protocol):
    """A count model that gives the pieces of the Wei & Reiter (2016) scenario."""

    def largest_value_loglik(
        self,
        column: str,
        synthetic: Sequence[pd.DataFrame],
        *,
        scenario: str = "worst_case",
        total_known: bool = False,
        candidates: np.ndarray | None = None,
        upper: float | None = None,
        step: float = 1.0,
        draw_indices: Any = None,
        memberships: Any = None,
        data: pd.DataFrame | None = None,
    ) -> LargestValuePieces:
        """The :class:`LargestValuePieces` of the record holding the largest value of
        ``column`` (``scenario``: ``"worst_case"``, ``"second_largest"`` or
        ``"two_largest_sum"``; the candidate grid from ``candidates`` or ``upper``/``step``;
        ``data``: the confidential table when the model did not keep it)."""


class SupportsPosteriorReplicates(Protocol):
    """Replicates of the synthesized columns from the posterior predictive given the
    unsynthesized ones (Drechsler & Reiter 2008, eq. 5), in chunks; replicate ``r`` depends only
    on ``random_seed`` and ``r`` (not on ``chunk_size`` or ``start``)."""

    def posterior_replicates(
        self,
        n: int | None,
        *,
        columns: Sequence[str] | None = None,
        chunk_size: int = 50,
        random_seed: Any = None,
        start: int = 0,
    ) -> Iterator[list[pd.DataFrame]]:
        """Yield lists of tables ``[n_records, len(columns)]`` (``n=None``: until stopped)."""


def run_setting(model: Any, name: str, default: Any = None) -> Any:
    """A synthesizer's setting ``name``: a Bayesian model's sampler setting as its fit runs it
    (its ``resolved_sampling``, :class:`~bayes_risk.models.Sampling`), else the model's own
    attribute, else ``default``.

    Parameters
    ----------
    model : object
        A synthesizer.
    name : str
        A setting, e.g. ``"chains"``.
    default : object, optional
        The value of a setting the model does not have.

    Returns
    -------
    object
    """
    run = getattr(model, "resolved_sampling", None)
    if run is not None and hasattr(run, name):
        return getattr(run, name)
    return getattr(model, name, default)
