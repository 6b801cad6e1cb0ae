"""The fitted state of the Bayesian synthesizers: the posterior draws and what was fitted with
them, however they were made (``fit``, draws made elsewhere given to ``from_posterior``, a
saved folder read by ``load``), with the bookkeeping of the draws, the model's identity and its
saved state. How the draws are sampled and what is synthesized from them is
:class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer`'s.

Draws are flattened chain-major, ``h = c * draws + d``, in every ``[H, ...]`` array.
"""

from __future__ import annotations

import os
from abc import ABCMeta, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

import numpy as np
import pandas as pd

from bayes_risk._constraints import Interval, Requires, check_relations, check_value
from bayes_risk._io import to_jsonable
from bayes_risk.data.fingerprint import fingerprint_problem, fingerprint_record
from bayes_risk.data.levels import drop_unused_levels
from bayes_risk.data.normalise import check_not_empty
from bayes_risk.data.schema import SCHEMA, Schema, infer_schema
from bayes_risk.data.validate import require_categorical, require_frame, validate_table
from bayes_risk.exceptions import ValidationError
from bayes_risk.models._bayesian import convergence_report
from bayes_risk.models._bayesian.design import record_dtypes
from bayes_risk.models._bayesian.posterior import (
    PosteriorDims,
    PosteriorVariable,
    as_datatree,
    check_posterior,
    concrete,
    schema_dims,
)
from bayes_risk.models._bayesian.records import check_draw_indices, stacked_values, synthesized_part
from bayes_risk.models.base import check_is_fitted, synthesized_columns
from bayes_risk.models.persistence import StateField, load_bayesian, save_bayesian
from bayes_risk.models.settings_group import GroupedSettingsSynthesizer
from bayes_risk.models.trees.missing import refusal_hint

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["FittedPosterior"]

#: :meth:`FittedPosterior.from_posterior`'s arguments against each other
FROM_POSTERIOR_RELATIONS = (Requires("synthesized_records", "data", code="INVALID_ARGUMENT",
                                     why="the records not synthesized are released as they "
                                     "are, from the confidential data"),)


class FittedPosterior(GroupedSettingsSynthesizer, metaclass=ABCMeta):
    """The posterior draws of a Bayesian synthesizer and the state fitted with them (the base of
    :class:`~bayes_risk.models._bayesian.base.BayesianSynthesizer`, which documents the fitted
    attributes): set by ``fit``, by ``from_posterior`` or by ``load``, checked against
    the model's declared ``posterior_variables`` and ``saved_state``."""

    #: Model class ("P"/"O") of the default synthesis mode (subclasses may set it per instance).
    model_class: Literal["P", "O"] = "P"
    #: the variables of the model's posterior: names, dims after ``(chain, draw)``,
    #: constraints; the sizes of their dims are the fitted model's (``_posterior_dims``)
    posterior_variables: ClassVar[tuple[PosteriorVariable, ...]] = ()
    #: the fitted attributes a saved folder keeps beside the draws (``model.json``'s
    #: ``state``, :meth:`persisted_state`), by field; draws made elsewhere take the defaults
    saved_state: ClassVar[Mapping[str, StateField]] = MappingProxyType(
        {"dtypes": StateField("dtypes_", dict, ())})

    def _check_fitted(self, method: str | None = None) -> None:
        check_is_fitted(self, ("posterior_", "schema_"), method=method,
                        how="(or build it with 'from_posterior' / 'load')")

    @property
    def n_draws(self) -> int:
        """Number of posterior draws ``H = chains × draws`` (flattened chain-major)."""
        self._check_fitted()
        post = self.posterior_["posterior"]
        return int(post.sizes["chain"] * post.sizes["draw"])

    def draw_chains(self) -> np.ndarray:
        """``[H]`` chain of each flattened draw
        (:class:`~bayes_risk.contract.SupportsDrawChains`)."""
        self._check_fitted()
        post = self.posterior_["posterior"]
        return np.repeat(np.arange(int(post.sizes["chain"])), int(post.sizes["draw"]))

    @property
    def n_records(self) -> int:
        """Number of records of the data the model was fitted to (rows of each synthetic set)."""
        self._check_fitted()
        return int(self._n_records)

    def _draw_indices(self, draw_indices: Any = None) -> np.ndarray:
        """A ``draw_indices=`` argument (``None``, integers or a mask) as int64 draw indices."""
        return check_draw_indices(self.n_draws, draw_indices)

    def _stacked(self, name: str, draw_indices: np.ndarray | None = None) -> np.ndarray:
        self._check_fitted()
        return stacked_values(self.posterior_["posterior"], name, draw_indices)

    def _synthesized_rows(self) -> np.ndarray:
        """Positions of the records whose synthesized columns are replaced (all by default)."""
        if getattr(self, "synthesized_records_", None) is None:
            return np.arange(self.n_records, dtype=np.int64)
        return np.flatnonzero(self.synthesized_records_).astype(np.int64)

    def _synthesized_part(self, z: pd.DataFrame, name: str = "synthetic") -> pd.DataFrame:
        """The synthesized records' rows of a released dataset (all rows under full synthesis)."""
        if self.synthesized_records_ is None:
            return z
        return synthesized_part(z, self._synthesized_rows(), self.n_records, name)

    def _missing_refusal(self) -> str:
        """Why :meth:`fit` refuses empty cells (``""``: it accepts them)."""
        from bayes_risk.contract import capabilities

        return "" if capabilities(self).imputes else refusal_hint(type(self).__name__)

    def _prepare_data(
        self,
        data: pd.DataFrame,
        *,
        schema: Schema | None = None,
        synthesized: Sequence[str] | None = None,
        categorical: Sequence[str] | None = None,
        allow_nan: bool = False,
        fitting: bool = True,
    ) -> tuple[pd.DataFrame, Schema]:
        """Validate the confidential table and settle its schema and roles (none: all
        synthesized); ``fitting`` drops levels no record holds (``UNUSED_LEVEL``)."""
        check_not_empty(require_frame(data, "data"), "data", "a model is fitted to records")
        data = data.copy()
        data.columns = [str(c) for c in data.columns]
        if check_value(schema, [SCHEMA, None], "schema") is None:
            schema = infer_schema(data, categorical=categorical)
        synthesized = synthesized_columns(synthesized, schema)
        if synthesized is not None:
            schema = schema.with_roles(synthesized)
        if not schema.synthesized:
            schema = schema.with_roles(schema.names)
        refusal = "" if allow_nan else self._missing_refusal()
        # a column missing from data or outside the schema: validate_table's
        validate_table(data, schema, name="data", allow_nan=not refusal, missing_hint=refusal)
        data = data[schema.names]
        if fitting:
            schema = drop_unused_levels(data, schema)
        _check_kinds(self, schema)
        return data.reset_index(drop=True), schema

    def _set_fitted(
        self,
        posterior: xr.DataTree,
        schema: Schema,
        n_records: int,
        *,
        data: pd.DataFrame | None = None,
        synthesized_records: np.ndarray | None = None,
        check_convergence: bool = True,
    ) -> None:
        """Store the fitted state and run the convergence checks."""
        self.posterior_ = posterior
        self.schema_ = schema
        self._n_records = int(n_records)
        if data is not None:
            self.original_fingerprint_ = fingerprint_record(data, schema)
            self.data_fingerprint_ = self.original_fingerprint_["table"]
        self.synthesized_records_ = synthesized_records
        # columns whose missing values the sampler fills in (recorded in each release's
        # manifest; the utility measures compare them on the observed cells). None: unknown
        self.imputed_columns_: list[str] | None = None
        if data is not None:
            rows = data if synthesized_records is None else data.loc[
                np.asarray(synthesized_records, dtype=bool)]
            self.imputed_columns_ = [c for c in schema.synthesized
                                     if c in rows.columns and bool(rows[c].isna().any())]
        self.data_ = data if (data is not None and self._needs_data_for_synthesis()) else None
        if not hasattr(self, "dtypes_"):  # draws made elsewhere (from_posterior)
            self.dtypes_ = record_dtypes(self.data_) if self.data_ is not None else {}
        for name, field in self.saved_state.items():  # the others: their defaults
            if not hasattr(self, field.attribute):
                setattr(self, field.attribute, field.read({}, name))
        self._after_posterior()
        self.convergence_ = None
        if check_convergence:
            self.convergence_ = convergence_report.check_convergence(self, warn=True)

    def _after_posterior(self) -> None:
        """Hook called whenever ``posterior_`` is set (fit, load, from_posterior): caches."""

    def _needs_data_for_synthesis(self) -> bool:
        """Whether :meth:`synthesize` needs the confidential records: it copies some, or
        draws from them (class O)."""
        return self.model_class == "O" or bool(
            self.schema_ is not None and self.schema_.unsynthesized) or (
            getattr(self, "synthesized_records_", None) is not None)

    @abstractmethod
    def convergence_quantities(self) -> dict[str, np.ndarray]:
        """Label-invariant scalars to diagnose (the convergence report's), each family's own.

        Returns
        -------
        dict of str to ndarray
            Each an array ``[chain, draw]``.
        """

    def _posterior_dims(self, posterior: xr.DataTree | None, schema: Schema,
                        data: pd.DataFrame | None = None) -> PosteriorDims:
        """The sizes of the dims of ``posterior_variables`` for ``schema`` (``posterior``:
        the draws being adopted, with the fitted table ``data`` when given; ``None`` for draws
        given as arrays), after the model's own checks of a posterior it adopts; by default
        those the schema gives by their names (``posterior.schema_dims``)."""
        _check_kinds(self, schema)
        return schema_dims(schema, self.posterior_variables)

    @classmethod
    def from_posterior(
        cls,
        posterior: xr.DataTree | Mapping[str, Any],
        schema: Schema,
        *,
        n_records: int | None = None,
        data: pd.DataFrame | None = None,
        synthesized_records: np.ndarray | None = None,
        **settings: Any,
    ) -> Self:
        """Build a fitted model from posterior draws made elsewhere (Stan, brms, ...).

        Parameters
        ----------
        posterior : DataTree or mapping of name → array
            A DataTree with a ``posterior`` group, or arrays with leading dimensions
            ``(chain, draw)`` (or ``(draw,)``); names and shapes are model specific.
        schema : Schema
            Columns, types, levels and roles of the data the draws were fitted to.
        n_records : int, optional
            Records per synthetic dataset (default: ``len(data)``).
        data : DataFrame, optional
            The confidential data, needed for partial synthesis and class-O modes.
        synthesized_records : array of bool, optional
            Records to synthesize (default all).
        **settings
            Model settings (``__init__`` arguments).

        Returns
        -------
        BayesianSynthesizer
        """
        check_relations(dict(synthesized_records=synthesized_records, data=data),
                        FROM_POSTERIOR_RELATIONS)
        model = cls(**settings)
        check_value(schema, SCHEMA, "schema")
        if not schema.synthesized:  # no roles given: full synthesis, as in fit
            schema = schema.with_roles(schema.names)
        dt = as_datatree(posterior, lambda: [v for v, _ in concrete(
            model._posterior_dims(None, schema), model.posterior_variables)], cls.__name__)
        if data is not None:
            data, _ = model._prepare_data(data, schema=schema, allow_nan=True, fitting=False)
        if n_records is None:
            if data is None:
                raise ValidationError("from_posterior needs n_records or data (the number of "
                                      "records per synthetic dataset).")
            n_records = len(data)
        n_records = check_value(n_records, Interval(int, 1), "n_records")
        flags = None
        if synthesized_records is not None:
            flags = np.asarray(synthesized_records, dtype=bool)
            if flags.shape != (n_records,):
                raise ValidationError(
                    f"synthesized_records must have one flag per record ({n_records}).")
        return model.adopt(dt, schema, n_records, data=data, flags=flags)

    def adopt(self, posterior: xr.DataTree, schema: Schema, n_records: int, *,
               data: pd.DataFrame | None, flags: np.ndarray | None,
               state: Mapping[str, Any] | None = None,
               arrays: Mapping[str, np.ndarray] | None = None) -> Self:
        """Fit this new instance to checked draws (of :meth:`from_posterior`, or with the
        ``state`` of a saved folder, whose convergence table is not remade).

        Parameters
        ----------
        posterior : DataTree
            The draws, checked against ``posterior_variables``.
        schema : Schema
        n_records : int
            Records of the fitted table.
        data : DataFrame or None
            The fitted table, when synthesis copies records from it.
        flags : ndarray of bool or None
            The synthesized records (``None``: all).
        state : mapping, optional
            A saved folder's fitted state (:meth:`persisted_state`'s fields).
        arrays : mapping of str to ndarray, optional
            Its arrays (:meth:`persisted_state`'s arrays).

        Returns
        -------
        BayesianSynthesizer
            ``self``, fitted.
        """
        if state is not None:
            self.restore_state(state, arrays or {})
        posterior = check_posterior(posterior, self._posterior_dims(posterior, schema, data),
                                    self.posterior_variables, type(self).__name__)
        self.schema_ = schema  # read by _needs_data_for_synthesis (a new instance: no clean-up)
        if data is None and self._needs_data_for_synthesis():
            raise ValidationError(
                "this model's synthesis mode needs the confidential data: pass data=..."
            )
        self._set_fitted(posterior, schema, n_records, data=data, synthesized_records=flags,
                         check_convergence=state is None)
        return self

    def check_fingerprint(self, data: pd.DataFrame) -> str | None:
        """Whether ``data`` is the table this model was fitted to (SHA-256 fingerprints).

        Returns ``None`` when they agree (or none was stored), else what differs.
        """
        self._check_fitted()
        record = getattr(self, "original_fingerprint_", None) or {}
        return fingerprint_problem(data, getattr(self, "data_fingerprint_", None), self.schema_,
                                   self._n_records, record.get("columns"))

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the fitted model as a folder (``posterior.nc``, ``convergence.json``,
        ``model.json``), atomically (``bayes_risk.models.persistence``).

        When synthesis needs them the confidential records are saved too (``data.parquet``):
        **the folder is then as confidential as the data**.

        Returns
        -------
        Path
            The folder written.
        """
        self._check_fitted()
        return save_bayesian(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        """Load a model saved with :meth:`save` (no pickle: NetCDF + JSON + Parquet).

        Raises
        ------
        ValidationError
            If the folder is not a saved model of this class or a file is missing
            (``MODEL_UNSUITED``, ``MODEL_FORMAT_VERSION``, ``MODEL_DAMAGED``).
        """
        return load_bayesian(cls, path)

    def _identity(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What :func:`bayes_risk.data.provenance.model_id` hashes."""
        from bayes_risk.data.provenance import identity_settings

        self._check_fitted()
        flags = self.synthesized_records_
        post = self.posterior_["posterior"]
        state, arrays = self.persisted_state()
        parts = {
            "method": self.method_name, "class": type(self).__name__,
            # as its releases record them (DPMPM: the table of structural zeros, not its path)
            "settings": identity_settings(self.saved_settings()),
            "schema": self.schema_.to_dict(), "n_records": int(self._n_records),
            "synthesized_records": None if flags is None else
            [int(i) for i in np.flatnonzero(flags)],
            "state": to_jsonable(state),
            "data": getattr(self, "data_fingerprint_", None),
        }
        return parts, {**{str(k): np.asarray(post[k].values) for k in post.data_vars}, **arrays}

    def persisted_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The fitted state a saved folder keeps besides the draws (the attributes
        ``saved_state`` declares), read back by :meth:`restore_state`
        (``bayes_risk.models.persistence``: the protocol of every synthesizer).

        Returns
        -------
        state : dict
            JSON-ready (``model.json``'s ``state``).
        arrays : dict of str to ndarray
            Named arrays (``arrays.npz``); none of the package's families has any beyond its
            draws, which ``posterior.nc`` holds.
        """
        return {name: field.value(self) for name, field in self.saved_state.items()}, {}

    def restore_state(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
        """Set the fitted state of :meth:`persisted_state` on this new instance (``load``).

        Parameters
        ----------
        state : mapping
            ``model.json``'s ``state``.
        arrays : mapping of str to ndarray
            The saved arrays (``arrays.npz``; empty without one).

        Raises
        ------
        ValueError
            A field that fails its declared check (the loader: a damaged folder).
        """
        for name, field in self.saved_state.items():
            setattr(self, field.attribute, field.read(state, name))


def _check_kinds(model: FittedPosterior, schema: Schema) -> None:
    """Refuse a column that is not categorical, or has no level, for a model of categorical
    columns only (``info.categorical_only``)."""
    info = getattr(model, "info", None)
    if info is not None and info.categorical_only:
        require_categorical(schema, type(model).__name__)
