"""The template of the tree synthesizers (CART, random forests, small-cell PMM) and the fit
helpers they share.

:class:`TreeSynthesizer` holds what the three classes do alike: keep the fitted table and its
fingerprint, save the fitted synthesizer as a folder, load it back, check a table against the
fitted one. Each class says only what is its own (``_fitted_attribute``, ``_persisted_state``,
``_restore``); the folder layout is :mod:`bayes_risk.models.trees.io`'s. The module-level helpers
read the arguments of ``fit`` (schema and synthesized columns, record selections) and give the
trees' view of a table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayes_risk.data.fingerprint import fingerprint_record
from bayes_risk.data.schema import Schema, infer_schema
from bayes_risk.data.validate import record_mask, validate_table
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.base import BaseSynthesizer, check_is_fitted, synthesized_columns
from bayes_risk.models.trees.io import check_fitted_fingerprint, load_synthesizer, save_synthesizer
from bayes_risk.models.trees.missing import encoded_values

__all__ = ["TreeSynthesizer", "encoded_values", "prepare_schema", "records_mask"]


def records_mask(records: Any, n: int, argument: str = "records") -> np.ndarray:
    """A record selection (boolean mask, integer positions or ``None``: every record) as a mask,
    checked by :func:`~bayes_risk.data.validate.record_mask`; a selection of no record is
    refused (nothing would be synthesized)."""
    if records is None:
        return np.ones(n, dtype=bool)
    mask = record_mask(records, n, argument=argument)
    if not mask.any():
        raise ValidationError(f"{argument} selects no record; nothing would be synthesized.")
    return mask


def prepare_schema(
    data: pd.DataFrame, schema: Schema | None, synthesized: Sequence[str] | None,
    *, allow_missing: bool = False,
) -> tuple[Schema, list[str]]:
    """Schema with roles set and the ordered list of synthesized columns.

    ``allow_missing``: empty cells are accepted (CART); otherwise refused (``MISSING_VALUES``).
    """
    if not isinstance(data, pd.DataFrame):
        raise ValidationError(f"data must be a pandas DataFrame. Got {type(data).__name__}.")
    if schema is None:
        schema = infer_schema(data)
    elif not isinstance(schema, Schema):
        raise ValidationError(f"schema must be a bayes_risk Schema. Got {type(schema).__name__}.")
    order = synthesized_columns(synthesized, schema)
    if order is None:
        order = schema.synthesized
    if not order:
        raise ValidationError(
            "no column to synthesize: pass synthesize=[...] or a schema with synthesized roles."
        )
    schema = schema.with_roles(order, known=schema.known)
    validate_table(data, schema, name="data", allow_nan=allow_missing)
    return schema, list(order)


class TreeSynthesizer(BaseSynthesizer):
    """Template of the tree synthesizers: the fitted table, saving, loading, the fingerprint.

    A subclass sets ``_fitted_attribute`` (the attribute ``fit`` sets last, checked before
    saving) and implements ``_persisted_state`` (its fitted state as JSON-ready settings and
    named arrays) and ``_restore`` (the reverse, on a new instance); ``fit`` calls
    ``_keep_fitted_table``.
    """

    #: the fitted attribute whose presence means "fitted" (checked by :meth:`save`)
    _fitted_attribute: ClassVar[str] = "schema_"

    def _keep_fitted_table(self, data: pd.DataFrame, schema: Schema) -> None:
        """Keep the fitted table (the donors, and the records released unchanged) and a hash of
        its encoded values: releases carry the hash in their manifest, and every measure checks
        the original it is given against it (never the data)."""
        self.original_fingerprint_ = fingerprint_record(data, schema)
        self._index = data.index
        self._data = data.reset_index(drop=True)

    def _persisted_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The fitted state as JSON-ready settings and named arrays (what :meth:`save` writes)."""
        raise NotImplementedError

    @staticmethod
    def _restore(obj: Any, meta: dict[str, Any], arrays: Mapping[str, np.ndarray],
                 data: pd.DataFrame) -> None:
        """Set the fitted attributes of the new instance ``obj`` from a saved folder."""
        raise NotImplementedError

    # ----- persistence --------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the fitted synthesizer as a folder, atomically (no pickle).

        The folder holds ``model.json`` (format version, settings, schema, the fitted structure
        that is not an array — visit order, predictors, groups —, fingerprint of the fitted
        table, checksums), ``arrays.npz`` (the fitted arrays: every tree's nodes and splits,
        donor blocks or leaf class tables, bandwidths, the synthesized records) and
        ``data.parquet`` (the fitted table: the donors). **The folder is as confidential as the
        data**: release only the synthetic datasets, never the folder. :meth:`load` (or
        :func:`bayes_risk.models.load_model`) reads it back; the loaded synthesizer makes the
        same synthetic data as this one for the same seed (and serves the plug-in likelihoods
        as the fitted one does).

        Parameters
        ----------
        path : path-like
            The folder (replaced atomically if it exists).

        Returns
        -------
        Path
            The folder written.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ValidationError
            ``CONSTRAINTS_NOT_SAVED`` for a small-cell PMM synthesizer with ``constraints``:
            they are Python callables, which the folder cannot hold without pickle.
        """
        check_is_fitted(self, self._fitted_attribute, method="save")
        state, arrays = self._persisted_state()
        return save_synthesizer(self, path, state=state, arrays=arrays,
                                data=self._data.set_axis(self._index))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Any:
        """Load a synthesizer saved with :meth:`save`.

        Parameters
        ----------
        path : path-like
            The folder.

        Returns
        -------
        TreeSynthesizer
            Fitted, of the class that was saved; same seed, same synthetic data as the
            synthesizer that was saved.

        Raises
        ------
        ValidationError
            ``MODEL_FORMAT_VERSION`` for a folder of another format version, ``MODEL_DAMAGED``
            for a missing, unreadable or changed file, or a folder of another model type.
        """
        return load_synthesizer(cls, path, cls._restore)

    def check_fingerprint(self, data: pd.DataFrame) -> str | None:
        """Whether ``data`` is the table this synthesizer was fitted to.

        Compares the SHA-256 fingerprints stored at fit time (also in a saved folder) with those
        of ``data``. Returns ``None`` when they agree, otherwise a short description of the
        difference (missing columns, another number of records, other values or row order).
        """
        return check_fitted_fingerprint(self, data)
