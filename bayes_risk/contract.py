"""The model contract: one required protocol, one frozen record of capabilities, persistence.

A synthesis model reaches every part of the package — the attribute- and identification-risk
engines, the command line, persistence and the audit — through three things defined here:

:class:`RiskModel`
    The one required protocol: what the attribute-risk engine calls on a model with posterior
    draws (the record and dataset log-likelihoods, the number of draws, the schema, the model
    class and the form of the importance ratios).
:class:`ModelInfo`
    A frozen dataclass of capability flags, declared by a model class as ``info = ModelInfo(...)``:
    which further likelihoods it offers, which estimators it supports (``estimator="auto"``
    chooses from them), whether it integrates missing values out, supports partial synthesis,
    is saved and loaded, draws posterior-predictive replicates, reports MCMC convergence.
:class:`SupportsPersistence`
    ``save(path)`` and the class method ``load(path)``; the folder's ``model.json`` names the
    model under ``"method"``, its registered name (``bayes_risk.registry``).

Optional likelihoods (neighbourhood, candidate, own-record, plug-in, largest-value) keep their
protocols in :mod:`bayes_risk.protocols`; a model offers one by declaring it in
:attr:`ModelInfo.likelihoods` *and* defining its method (``bayes_risk.testing.check_synthesizer``
checks that the two agree). No protocol method takes ``**kwargs``.

Every model declares its ``info``: an object without one is refused (:func:`model_info`, code
``MODEL_INFO_MISSING``) with the declaration its members suggest
(:meth:`ModelInfo.from_members`), to be checked and copied into the class. Members cannot say
what matters most to the estimates — whether ``record_loglik`` integrates missing values out,
whether an estimate carries an approximation's warning, whether a plug-in holds missing values
— and a wrong guess there would misstate the risk quietly.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from bayes_risk.exceptions import NotSupportedError, ValidationError

__all__ = [
    "ESTIMATORS",
    "LIKELIHOODS",
    "ModelInfo",
    "RiskModel",
    "SupportsPersistence",
    "model_info",
    "auto_estimator",
    "instance_info",
]

#: likelihood kinds a model may offer, each with the method that provides it
LIKELIHOODS: dict[str, str] = {
    "record": "record_loglik",
    "dataset": "dataset_loglik",
    "neighbourhood": "neighbourhood_loglik",
    "neighbourhood_buffer": "neighbourhood_size",
    "candidate": "candidate_loglik",
    "own_record": "own_record_delta",
    "plugin": "plugin_loglik",
    "largest_value": "largest_value_loglik",
}

#: attribute-risk estimators a model may support (methods page, Attribute disclosure risk):
#: the stabilised estimator needs draws of p(Θ | y, Z_(l)) (``fit_augmented``), the published
#: importance-sampling one the dataset likelihood, the plug-in one a plug-in likelihood
ESTIMATORS: dict[str, tuple[str, ...]] = {
    "stabilised": ("record_loglik", "fit_augmented"),
    "is": ("record_loglik", "dataset_loglik"),
    "plugin": ("plugin_loglik",),
}

#: boolean capabilities and the members that provide them (``None``: a declaration only)
_FLAG_MEMBERS: dict[str, tuple[str, ...] | None] = {
    "persistence": ("save", "load"),
    "posterior_replicates": ("posterior_replicates",),
    "convergence": ("convergence_summary",),
    "chains": ("draw_chains",),
    "partial_synthesis": None,  # fit(records=...); with a record likelihood: synthesized_records_
    "imputes": None,
    "holds_missing": None,
    "plugin_likelihood": ("plugin_likelihood",),
    "categorical_only": None,
    "visit_order": None,
    "releases_donor_values": None,
}


@dataclass(frozen=True)
class ModelInfo:
    """What a synthesis model can do, declared once per class (``info = ModelInfo(...)``).

    The engines, the command line and the audit read these flags instead of a model's class or
    its registered name, so a new model reaches all of them by declaring what it offers.

    Parameters
    ----------
    likelihoods : frozenset of str
        Likelihood kinds offered, keys of ``bayes_risk.contract.LIKELIHOODS``: ``"record"``
        (``record_loglik``, ``[H, n]``), ``"dataset"`` (``dataset_loglik``, ``[H, m]``),
        ``"neighbourhood"`` (``neighbourhood_loglik``, ``[H, n, G]``),
        ``"neighbourhood_buffer"`` (the same into a caller's ``out=`` buffer, with
        ``neighbourhood_size()``), ``"candidate"``
        (``candidate_loglik``, ``[H, G]``), ``"own_record"`` (``own_record_delta`` of a class O
        model, ``[H, m, G]``), ``"plugin"`` (``plugin_loglik`` of a model without posterior
        draws), ``"largest_value"`` (``largest_value_loglik``, Wei & Reiter 2016).
    estimators : tuple of str
        Attribute-risk estimators supported, in order of preference (keys of
        ``bayes_risk.contract.ESTIMATORS``): ``estimator="auto"`` takes the first one that applies
        (:func:`auto_estimator`). Empty for a synthesizer that is not itself a likelihood.
    imputes : bool
        ``record_loglik`` integrates a record's missing values out (a missing entry leaves the
        record's likelihood), so attribute risk may evaluate records with missing values.
    holds_missing : bool
        A plug-in likelihood that holds a record's missing values at their missingness kind (the
        intruder knows which values are missing and guesses the observed ones).
    partial_synthesis : bool
        The model may synthesize only some records (``fit(records=...)``); a fitted model then
        has ``synthesized_records_`` (bool ``[n]``, or ``None`` for every record).
    persistence : bool
        ``save(path)`` / ``load(path)`` (:class:`SupportsPersistence`).
    posterior_replicates : bool
        ``posterior_replicates(...)``: replicates of the synthesized columns from the posterior
        predictive (identification risk, Drechsler & Reiter 2008, eq. 5).
    convergence : bool
        ``convergence_summary()``: MCMC diagnostics reported with every result using the model.
    chains : bool
        ``draw_chains()``: the chain of each flattened posterior draw.
    plugin_likelihood : bool
        A synthesizer without posterior draws that has a plug-in likelihood for attribute risk,
        built by its method ``plugin_likelihood(original, *, random_seed=None)``
        (:func:`bayes_risk.models.plugin_likelihood` calls it); its releases can be rebuilt from
        their manifests for it (:func:`bayes_risk.models.rebuild_synthesizer`).
    categorical_only : bool
        The model models categorical columns only (DPMPM): the command line reads every column
        not given another type as categorical, integer-coded ones included.
    visit_order : bool
        The model synthesizes its columns one after another in the order of ``fit``'s
        ``synthesized`` (and of a ``visit_sequence`` setting, if it has one), so that order
        changes the release: ``bayes-risk orders`` and
        :func:`~bayes_risk.compare_visit_orders` compare orders of such a model (CART, random
        forests).
    releases_donor_values : bool
        The synthetic values are original values of donor records, released as they are
        (CART draws them from a leaf, PMM copies a matched donor's), so a record's true value
        can appear in the release whatever the model. The audit's remedies read it: smoothing
        (a synthesizer with a ``smoothing`` setting) or another method for numeric columns.
    result_warnings : tuple of str
        Warning codes that hold for every estimate made with the model (e.g. an approximation).
    required : tuple of str
        What the model cannot default, so that a run must give it: ``"synthesized"`` (``fit``'s
        columns to synthesize; CART and random forests) or names of ``__init__`` settings
        (PMM: ``"identifying"``). The command line refuses a run without them
        (``OPTION_REQUIRED``, naming the option), before reading any data.
    """

    likelihoods: frozenset[str] = frozenset()
    estimators: tuple[str, ...] = ()
    imputes: bool = False
    holds_missing: bool = False
    partial_synthesis: bool = False
    persistence: bool = False
    posterior_replicates: bool = False
    convergence: bool = False
    chains: bool = False
    plugin_likelihood: bool = False
    categorical_only: bool = False
    visit_order: bool = False
    releases_donor_values: bool = False
    result_warnings: tuple[str, ...] = ()
    required: tuple[str, ...] = ()

    FLAGS: ClassVar[tuple[str, ...]] = tuple(_FLAG_MEMBERS)

    def __post_init__(self) -> None:
        lik = frozenset(self.likelihoods)
        object.__setattr__(self, "likelihoods", lik)
        object.__setattr__(self, "estimators", tuple(self.estimators))
        object.__setattr__(self, "result_warnings", tuple(self.result_warnings))
        if isinstance(self.required, str):
            raise ValidationError(
                f"ModelInfo.required must be a tuple of names. Got the string {self.required!r}.",
                code="BAD_MODEL_INFO",
            )
        object.__setattr__(self, "required", tuple(self.required))
        bad_req = [r for r in self.required if not (isinstance(r, str) and r.isidentifier())]
        if bad_req or len(set(self.required)) != len(self.required):
            raise ValidationError(
                "ModelInfo.required must be distinct names: 'synthesized' or settings of the "
                f"model's __init__. Got {list(self.required)}.", code="BAD_MODEL_INFO",
            )
        unknown = sorted(lik - set(LIKELIHOODS))
        if unknown:
            raise ValidationError(
                f"ModelInfo.likelihoods: unknown kind(s) {unknown}; expected some of "
                f"{list(LIKELIHOODS)}.", code="BAD_MODEL_INFO",
            )
        bad = [e for e in self.estimators if e not in ESTIMATORS]
        if bad or len(set(self.estimators)) != len(self.estimators):
            raise ValidationError(
                f"ModelInfo.estimators must be distinct names among {list(ESTIMATORS)}. Got "
                f"{list(self.estimators)}.", code="BAD_MODEL_INFO",
            )
        for name in self.FLAGS:
            if not isinstance(getattr(self, name), bool):
                raise ValidationError(
                    f"ModelInfo.{name} must be True or False. Got {getattr(self, name)!r}.",
                    code="BAD_MODEL_INFO",
                )
        needs = {"stabilised": "record", "is": "dataset", "plugin": "plugin"}
        for est in self.estimators:
            if needs[est] not in lik:
                raise ValidationError(
                    f"ModelInfo: estimator {est!r} needs the {needs[est]!r} likelihood, which "
                    f"likelihoods={sorted(lik)} does not list.", code="BAD_MODEL_INFO",
                )
        if "neighbourhood_buffer" in lik and "neighbourhood" not in lik:
            raise ValidationError(
                "ModelInfo: 'neighbourhood_buffer' extends 'neighbourhood', which is not listed.",
                code="BAD_MODEL_INFO",
            )

    def has(self, kind: str) -> bool:
        """Whether the likelihood ``kind`` (a key of ``bayes_risk.contract.LIKELIHOODS``) is
        offered."""
        return kind in self.likelihoods

    def members(self) -> dict[str, tuple[str, ...]]:
        """Members a model declaring this info must have, by the capability that needs them."""
        out: dict[str, tuple[str, ...]] = {
            f"likelihoods={k!r}": (LIKELIHOODS[k],) for k in sorted(self.likelihoods)
        }
        out.update({f"estimators={e!r}": ESTIMATORS[e] for e in self.estimators})
        out.update({
            f"{flag}=True": mem for flag, mem in _FLAG_MEMBERS.items()
            if mem is not None and getattr(self, flag)
        })
        return out

    @classmethod
    def from_members(cls, model: Any) -> ModelInfo:
        """The capabilities the members of an undeclared model (no ``info``) suggest.

        A starting point for a declaration, never a description the package acts on:
        :func:`model_info` refuses a model without ``info`` and shows this suggestion. The
        declaration-only flags are read from the attributes that used to carry them
        (``marginalises_missing``, ``holds_missing``, ``result_warnings``).
        """
        has = _member_test(model)
        lik = frozenset(k for k, meth in LIKELIHOODS.items() if has(meth))
        if "neighbourhood" not in lik:
            lik -= {"neighbourhood_buffer"}
        est = tuple(e for e, mem in ESTIMATORS.items() if all(has(m) for m in mem))
        if "plugin" in est:
            est = ("plugin",)  # a plug-in likelihood has no posterior draws
        flags = {
            f: all(has(m) for m in mem) for f, mem in _FLAG_MEMBERS.items() if mem is not None
        }
        flags["partial_synthesis"] = has("synthesized_records_")
        return cls(
            likelihoods=lik,
            estimators=est,
            imputes=bool(getattr(model, "marginalises_missing", False)),
            holds_missing=bool(getattr(model, "holds_missing", False)),
            result_warnings=tuple(getattr(model, "result_warnings", ()) or ()),
            **flags,
        )

    def replace(self, **changes: Any) -> ModelInfo:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def declaration(self) -> str:
        """The Python expression declaring this info (fields that differ from the defaults)."""
        parts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            if isinstance(value, frozenset):
                value = "{" + ", ".join(repr(v) for v in sorted(value)) + "}"
            else:
                value = repr(value)
            parts.append(f"{f.name}={value}")
        return f"ModelInfo({', '.join(parts)})"


def _member_test(model: Any) -> Any:
    """``has(name)``: whether ``model`` (an instance or a class) has a member ``name``.

    Instance attributes set in ``__init__`` (``synthesized_records_``) are not visible on a
    class; for a class the annotations stand in for them.
    """
    if isinstance(model, type):
        notes: set[str] = set()
        for klass in model.__mro__:
            notes.update(getattr(klass, "__annotations__", {}))
        return lambda name: hasattr(model, name) or name in notes
    return lambda name: hasattr(model, name)


class _InstanceInfo:
    """Descriptor of :func:`instance_info`: the class's default, or the instance's own."""

    def __init__(self, default: ModelInfo, fget: Any) -> None:
        if not isinstance(default, ModelInfo):
            raise TypeError("instance_info needs a ModelInfo default.")
        self.default, self.fget = default, fget
        self.__doc__ = getattr(fget, "__doc__", None)

    def __get__(self, obj: Any, owner: type | None = None) -> ModelInfo:
        return self.default if obj is None else self.fget(obj)


def instance_info(default: ModelInfo) -> Any:
    """Decorator of an ``info`` method for a model whose capabilities depend on its settings.

    On the class, ``info`` is ``default`` (what the class can do at all: the command line and
    the registry read it before a model exists); on an instance, the method's result (e.g.
    CART has posterior replicates only with Bayesian-bootstrap donors)::

        @instance_info(ModelInfo(persistence=True, posterior_replicates=True))
        def info(self) -> ModelInfo:
            return type(self).info.replace(posterior_replicates=self.donor == "bayes_bootstrap")
    """
    return lambda fget: _InstanceInfo(default, fget)


def model_info(model: Any) -> ModelInfo:
    """The :class:`ModelInfo` of a model instance or class: its declared ``info``.

    A class attribute ``info = ModelInfo(...)``, or :func:`instance_info` for models whose
    capabilities depend on their settings. Nothing is read off the members: a model without
    ``info`` is refused, with the declaration its members suggest.

    Raises
    ------
    ValidationError
        If the model declares no ``info`` (code ``MODEL_INFO_MISSING``; the message shows the
        declaration :meth:`ModelInfo.from_members` suggests), or ``info`` is not a
        :class:`ModelInfo` (code ``BAD_MODEL_INFO``).
    """
    info = getattr(model, "info", None)
    name = model.__name__ if isinstance(model, type) else type(model).__name__
    if info is None or (isinstance(model, type) and isinstance(info, property)):
        if not any(hasattr(model, m) for m in ("record_loglik", "dataset_loglik",
                                                "plugin_loglik")):
            raise ValidationError(
                f"{name} is not a model: it declares no info and has none of the likelihood "
                "methods of the RiskModel protocol (record_loglik, dataset_loglik) or of a "
                "plug-in (plugin_loglik). Give a fitted bayes-risk model, an ArrayModel of "
                "posterior draws, or a class that implements the protocol and declares "
                "info = bayes_risk.ModelInfo(...) (docs: 'Adding a model').",
                code="MODEL_INFO_MISSING",
            )
        try:
            hint = f" Its members suggest: info = {ModelInfo.from_members(model).declaration()}."
        except ValidationError:  # members that make no valid ModelInfo: nothing to suggest
            hint = ""
        raise ValidationError(
            f"{name} declares no capabilities: give its class the attribute info = "
            "bayes_risk.ModelInfo(...) (or bayes_risk.instance_info for capabilities that depend "
            "on its settings; docs: 'Adding a model')." + hint + " Check the declaration-only "
            "flags yourself (imputes: does record_loglik integrate missing values out; "
            "result_warnings: approximations); bayes-risk does not guess them, as a wrong guess "
            "would misstate the risk.", code="MODEL_INFO_MISSING",
        )
    if not isinstance(info, ModelInfo):
        raise ValidationError(
            f"{name}.info must be a bayes_risk.ModelInfo. Got {type(info).__name__}.",
            code="BAD_MODEL_INFO",
        )
    return info


def auto_estimator(model: Any, *, augmented_given: bool = False) -> str:
    """The estimator ``estimator="auto"`` resolves to, from what ``model`` can do.

    The first of ``model_info(model).estimators`` that applies: the stabilised estimator only
    for class P models (methods page, The stabilised estimator), and only when the model draws
    from ``p(Θ | y, Z_(l))`` itself or the caller gives those draws (``augmented_given``).

    Raises
    ------
    NotSupportedError
        If no supported estimator applies (code ``NO_ESTIMATOR``).
    """
    info = model_info(model)
    prefs = list(info.estimators)
    if augmented_given and "stabilised" not in prefs and info.has("record"):
        prefs.insert(0, "stabilised")
    for est in prefs:
        if est == "stabilised" and getattr(model, "model_class", "P") != "P":
            continue
        return est
    raise NotSupportedError(
        f"{type(model).__name__} supports no attribute-risk estimator that applies to it "
        f"(ModelInfo.estimators={list(info.estimators)}, model_class="
        f"{getattr(model, 'model_class', None)!r}): a class P model needs fit_augmented "
        "(estimator 'stabilised') or dataset_loglik (estimator 'is'); a class O model needs "
        "dataset_loglik and own_record_delta.", code="NO_ESTIMATOR",
    )


@runtime_checkable
class RiskModel(Protocol):
    """The one protocol a model with posterior draws must satisfy for the risk engines.

    Shapes follow the methods page, Notation: ``H`` posterior draws, ``n`` records, ``m``
    synthetic datasets. Draw ``h`` is the ``h``-th of the draws flattened chain by chain (the
    ArviZ ``(chain, draw)`` order), the same in every method.

    A model also declares ``info`` (its :class:`ModelInfo`, read by :func:`model_info`, which
    refuses a model without it: code ``MODEL_INFO_MISSING``). It is not a protocol member
    because ``runtime_checkable`` protocols check that members exist, not what they hold.

    Attributes
    ----------
    model_class : {"P", "O"}
        Class P: given Θ, a synthetic dataset does not depend on the confidential synthesized
        values; class O: it does (methods, Two classes of synthesis model).
    ratio_form : {"joint", "conditional"}
        Whether importance ratios use ``p(y_i | Θ)`` or ``p(y_i^s | y_i^us, Θ)`` (Hu 2019 §3.2.5).
    schema_ : Schema
        Column types, levels and roles the model was fitted with.
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
        ...

    def dataset_loglik(
        self, synthetic: Sequence[pd.DataFrame], *, draw_indices: np.ndarray | None = None
    ) -> np.ndarray:
        """``[H, m]`` float64 array of ``log p(Z_(l) | Θ_h)`` (up to a constant of ``Θ``)."""
        ...


@runtime_checkable
class SupportsPersistence(Protocol):
    """A fitted model saved to a folder and loaded back (no pickle).

    ``save`` writes ``model.json`` with the model's registered name under ``"method"``, so that
    :func:`bayes_risk.models.load_model` finds the class (``bayes_risk.registry``).
    """

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the fitted model to the folder ``path``; returns it."""
        ...

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Any:
        """The fitted model saved in ``path``."""
        ...
