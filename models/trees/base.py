"""The template of the tree synthesizers (fitted table, release, save/load) and their shared
``fit`` argument checks. See :doc:`/user_guide/synthesizers`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayes_risk._constraints import check_value
from bayes_risk._rng import RandomSeed, spawn
from bayes_risk._specs import fold_fields
from bayes_risk._tree_spec import TreeOptions
from bayes_risk.contract import ModelInfo
from bayes_risk.data.fingerprint import fingerprint_record
from bayes_risk.data.schema import SCHEMA, Schema, infer_schema
from bayes_risk.data.validate import check_m, record_mask, require_frame, validate_table
from bayes_risk.exceptions import ValidationError
from bayes_risk.models.base import check_is_fitted, synthesized_columns
from bayes_risk.models.persistence import load_trees, save_trees
from bayes_risk.models.settings_group import TREES, GroupedSettingsSynthesizer
from bayes_risk.models.trees.io import check_visit_sequence

__all__ = ["SEQUENTIAL_TREES", "TreeSynthesizer", "prepare_schema", "records_mask"]

#: what CART and random forests declare: a tree per synthesized column in a visit order,
#: chosen records replaced; numeric columns take leaf donors' values unless smoothed (the
#: audit's smoothing remedy)
SEQUENTIAL_TREES = ModelInfo(partial_synthesis=True, required=("synthesized",),
                             visit_order=True, releases_donor_values=True)


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
    require_frame(data, 'data')
    if check_value(schema, [SCHEMA, None], "schema") is None:
        schema = infer_schema(data)
    order = synthesized_columns(synthesized, schema)
    if order is None:
        order = schema.synthesized
    if not order:
        raise ValidationError(
            "no column to synthesize: pass synthesize=[...] or a schema with synthesized roles.")
    schema = schema.with_roles(order, known=schema.known)
    validate_table(data, schema, name="data", allow_nan=allow_missing)
    return schema, list(order)


class TreeSynthesizer(GroupedSettingsSynthesizer):
    """Template of the tree synthesizers: subclasses set ``_fitted_attribute`` and implement
    ``persisted_state`` and ``restore_state`` (the save/load protocol of every synthesizer).

    A synthesizer that grows trees by :class:`~bayes_risk.models.TreeOptions` takes them as
    ``trees=`` and sets ``tree_defaults``; each of its tree options is also a read-only
    attribute of that name (the resolved value: ``model.min_leaf``) and a keyword of its
    constructor, ``set_params`` and ``from_settings`` (folded into ``trees``). Saved folders
    and releases hold the tree options flat, in the order of ``settings_order``.
    """

    _fitted_attribute: ClassVar[str] = "schema_"
    settings_group = TREES
    #: the tree options (:class:`~bayes_risk.models.TreeOptions` fields) the synthesizer grows
    #: its trees by, with its defaults; a field left at ``None`` in ``trees`` takes these
    tree_defaults: ClassVar[Mapping[str, Any]] = MappingProxyType({})

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in cls.tree_defaults:  # model.min_leaf: the resolved tree option, read only
            setattr(cls, name, property(lambda self, n=name: getattr(self.resolved_trees, n),
                                        doc=f"The resolved tree option ``{name}`` (read only)."))

    @property
    def resolved_trees(self) -> TreeOptions:
        """The tree options a fit grows by: ``trees``' fields left at ``None`` set to the
        synthesizer's ``tree_defaults``.

        Raises
        ------
        ValidationError
            ``trees`` is not a :class:`~bayes_risk.models.TreeOptions`, or sets a field this
            synthesizer does not grow by (``OPTION_CONFLICT``).
        """
        return self._resolved_group()

    def _fold_trees(self, trees: TreeOptions | None,
                    given: Mapping[str, Any]) -> TreeOptions | None:
        """``trees`` with the tree options given to the constructor as keywords
        (``min_leaf=5``) set; a keyword that is none of this synthesizer's is Python's
        ``TypeError``, as for any constructor."""
        unknown = [k for k in given if k not in self.tree_defaults]
        if unknown:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument {unknown[0]!r}")
        return fold_fields({"trees": trees, **given}, TreeOptions, "trees",
                           tuple(self.tree_defaults))["trees"]

    def _keep_fitted_table(self, data: pd.DataFrame, schema: Schema
                           ) -> tuple[pd.Index, pd.DataFrame]:
        """Keep the fitted table and its fingerprint; its index and the table, index reset."""
        self.original_fingerprint_ = fingerprint_record(data, schema)
        self._index = data.index
        self._data = data.reset_index(drop=True)
        return self._index, self._data

    def _streams(self, m: int, random_seed: RandomSeed) -> tuple[int, RandomSeed, list]:
        """Checked ``m``, the seed of ``synthesize`` and one child stream per dataset."""
        check_is_fitted(self, self._fitted_attribute, method="synthesize")
        m = check_m(m)
        random_seed = self._seed(random_seed)
        return m, random_seed, spawn(random_seed, m)

    def persisted_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The fitted state a saved folder keeps besides the fitted table (``model.json``'s
        ``state`` and ``arrays.npz``), read back by :meth:`restore_state`; also what the model's
        identity hashes (``bayes_risk.models.persistence``: the protocol of every synthesizer).

        Returns
        -------
        state : dict
            JSON-ready.
        arrays : dict of str to ndarray
        """
        raise NotImplementedError

    def restore_state(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
        """Set the fitted state of :meth:`persisted_state` on this new instance (``load``: its
        settings, ``schema_`` and fitted table already set).

        Parameters
        ----------
        state : mapping
            ``model.json``'s ``state``.
        arrays : mapping of str to ndarray
            ``arrays.npz``.

        Raises
        ------
        ValueError
            A field that does not fit the others (the loader reports ``MODEL_DAMAGED``).
        """
        raise NotImplementedError

    def _identity(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What :func:`bayes_risk.data.provenance.model_id` hashes."""
        from bayes_risk.data.provenance import identity_settings

        check_is_fitted(self, self._fitted_attribute, method="model_id")
        state, arrays = self.persisted_state()
        fp = getattr(self, "original_fingerprint_", None) or {}
        settings = self.flat_settings()
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
        return save_trees(self, path, data=self._data.set_axis(self._index))

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
        def restore(obj: TreeSynthesizer, state: Mapping[str, Any],
                    arrays: Mapping[str, np.ndarray], data: pd.DataFrame) -> None:
            obj._index, obj._data = data.index, data.reset_index(drop=True)  # as fit keeps it
            obj.restore_state(state, arrays)
            check_visit_sequence(obj)  # an edited model.json: a damaged folder

        return load_trees(cls, path, restore)

    def check_fingerprint(self, data: pd.DataFrame) -> str | None:
        """``None`` when ``data`` is the fitted table (by fingerprint), else the difference."""
        from bayes_risk.data.fingerprint import fingerprint_problem

        check_is_fitted(self, "schema_", method="check_fingerprint")
        record = getattr(self, "original_fingerprint_", None) or {}
        return fingerprint_problem(data, record.get("table"), self.schema_, len(self._data),
                                   record.get("columns"))
