"""The template of the tree synthesizers (fitted table, release, save/load) and their shared
``fit`` argument checks. See :doc:`/user_guide/synthesizers`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayes_risk._rng import RandomSeed, seed_to_json, spawn
from bayes_risk.data.fingerprint import fingerprint_record
from bayes_risk.data.provenance import model_id
from bayes_risk.data.schema import Schema, infer_schema
from bayes_risk.data.synthetic import SyntheticData, generation_from_roles
from bayes_risk.data.validate import check_m, record_mask, validate_table
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.base import BaseSynthesizer, check_is_fitted, synthesized_columns
from bayes_risk.models.persistence import load_trees, save_trees
from bayes_risk.models.trees.io import check_visit_sequence

__all__ = ["TreeSynthesizer", "prepare_schema", "records_mask"]


def records_mask(records: Any, n: int, argument: str = "records") -> np.ndarray:
    """A record selection (mask, positions or ``None``: all) as a mask; an empty one is refused."""
    if records is None:
        return np.ones(n, dtype=bool)
    mask = record_mask(records, n, argument=argument)
    if not mask.any():
        raise ValidationError(f"{argument} selects no record; nothing would be synthesized.")
    return mask


def prepare_schema(data: pd.DataFrame, schema: Schema | None, synthesized: Sequence[str] | None, *,
                   allow_missing: bool = False) -> tuple[Schema, list[str]]:
    """Schema with roles set and the ordered synthesized columns (``allow_missing``: accept
    empty cells, else ``MISSING_VALUES``)."""
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
            "no column to synthesize: pass synthesize=[...] or a schema with synthesized roles.")
    schema = schema.with_roles(order, known=schema.known)
    validate_table(data, schema, name="data", allow_nan=allow_missing)
    return schema, list(order)


class TreeSynthesizer(BaseSynthesizer):
    """Template of the tree synthesizers: subclasses set ``_fitted_attribute`` and implement
    ``_persisted_state`` and ``_restore``."""

    _fitted_attribute: ClassVar[str] = "schema_"

    def _keep_fitted_table(self, data: pd.DataFrame, schema: Schema) -> None:
        """Keep the fitted table and its fingerprint."""
        self.original_fingerprint_ = fingerprint_record(data, schema)
        self._index = data.index
        self._data = data.reset_index(drop=True)

    def _streams(self, m: int, random_seed: RandomSeed) -> tuple[int, RandomSeed, list]:
        """Checked ``m``, the seed of ``synthesize`` and one child stream per dataset."""
        check_is_fitted(self, self._fitted_attribute, method="synthesize")
        m = check_m(m)
        random_seed = self._seed(random_seed)
        return m, random_seed, spawn(random_seed, m)

    def _make_release(self, datasets: list[pd.DataFrame], random_seed: RandomSeed,
                      records: np.ndarray, extra: dict[str, Any], *,
                      proper: bool = False, imputed: list[str] | None = None) -> SyntheticData:
        """The release of ``datasets`` with its provenance (``imputed``: columns with filled
        empty cells)."""
        return SyntheticData(
            datasets=datasets, method=self.method_name, settings=self._release_settings(),
            random_seed=seed_to_json(random_seed), schema=self.schema_,
            synthesized_records=records.copy(), extra=extra,
            original_fingerprint=getattr(self, "original_fingerprint_", None),
            model_id=model_id(self), generation=generation_from_roles(self.schema_, records),
            # CART and forests synthesize missing values as values, never filled in
            imputed_columns=list(imputed or []), proper=proper,
        )

    def _persisted_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The fitted state as JSON-ready settings and named arrays."""
        raise NotImplementedError

    @staticmethod
    def _restore(obj: Any, meta: dict[str, Any], arrays: Mapping[str, np.ndarray],
                 data: pd.DataFrame) -> None:
        """Set the fitted attributes of the new instance ``obj`` from a saved folder."""
        raise NotImplementedError

    def _identity(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What :func:`bayes_risk.data.provenance.model_id` hashes."""
        from bayes_risk.data.provenance import identity_settings

        check_is_fitted(self, self._fitted_attribute, method="model_id")
        state, arrays = self._persisted_state()
        fp = getattr(self, "original_fingerprint_", None) or {}
        settings = self.get_params()
        if settings.get("spec", ...) is None:  # CART's later setting: unset, earlier identities
            del settings["spec"]
        return {"method": self.method_name, "class": type(self).__name__,
                "settings": identity_settings(settings),
                "schema": self.schema_.to_dict(), "state": state,
                "data": fp.get("table")}, dict(arrays)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the fitted synthesizer as a folder (``arrays.npz``, ``data.parquet``,
        ``model.json``), atomically, no pickle (``bayes_risk.models.persistence``); it holds
        the fitted table, so it is **as confidential as the data**.

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
            ``CONSTRAINTS_NOT_SAVED`` for a small-cell PMM synthesizer with ``constraints``.
        """
        check_is_fitted(self, self._fitted_attribute, method="save")
        state, arrays = self._persisted_state()
        return save_trees(self, path, state=state, arrays=arrays,
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
            Fitted, of the class saved; same seed, same synthetic data.

        Raises
        ------
        ValidationError
            ``MODEL_FORMAT_VERSION`` or ``MODEL_DAMAGED``.
        """
        def restore(obj: Any, meta: dict[str, Any], arrays: Mapping[str, np.ndarray],
                    data: pd.DataFrame) -> None:
            cls._restore(obj, meta, arrays, data)
            check_visit_sequence(obj)  # an edited model.json: a damaged folder

        return load_trees(cls, path, restore)

    def check_fingerprint(self, data: pd.DataFrame) -> str | None:
        """``None`` when ``data`` is the fitted table (by fingerprint), else the difference."""
        from bayes_risk.data.fingerprint import fingerprint_problem

        check_is_fitted(self, "schema_", method="check_fingerprint")
        record = getattr(self, "original_fingerprint_", None) or {}
        return fingerprint_problem(data, record.get("table"), self.schema_, len(self._data),
                                   record.get("columns"))
