"""The fitted state of :class:`~bayes_risk.models.PyMCSynthesizer`: the model's graph, its draws
as ``[H, ...]`` arrays and the compiled functions, each made once, on first use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import ValidationError
from bayes_risk.models._bayesian.records import stacked_values

__all__ = ["PyMCState"]


@dataclass(frozen=True, eq=False)
class PyMCState:
    """What the likelihoods and the synthesis of a fitted model read: its ``graph`` (a
    ``ModelGraph`` of ``bayes_risk.models.pymc_model.graph``), ``schema``, posterior ``tree``
    and, for synthesis, the ``model_function`` and the records (``data``, or ``None``: made-up
    records of the schema). Frozen; what it compiles or stacks on first use is kept in
    ``_cache`` (``loglik``, ``samplers``, ``released``) and ``_draws``."""

    graph: Any
    schema: Schema
    tree: Any
    model_function: Any
    n_records: int
    data: pd.DataFrame | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _draws: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def loglik(self) -> Any:
        """The compiled record log-density (``loglik.compile_loglik``), compiled once."""
        if self._cache.get("loglik") is None:
            from bayes_risk.models.pymc_model.loglik import compile_loglik

            self._cache["loglik"] = compile_loglik(self.graph.likelihood, self.graph.digest)
        return self._cache["loglik"]

    def draws(self, names: tuple[str, ...], idx: np.ndarray | None) -> list[np.ndarray]:
        """The draws ``[H', ...]`` of the free variables ``names`` (``idx``: flattened draws)."""
        out = []
        for name in names:
            if name not in self._draws:
                dtype = self.graph.model[name].dtype
                self._draws[name] = np.ascontiguousarray(
                    stacked_values(self.tree["posterior"], name), dtype=dtype)
            arr = self._draws[name]
            out.append(arr if idx is None else arr[idx])
        return out

    def samplers(self) -> list[Any]:
        """The compiled draws of the observed variables (``synthesis.compile_samplers``),
        from the model built on a table of the synthetic datasets' number of records."""
        if "samplers" not in self._cache:
            from bayes_risk.models.pymc_model.graph import (
                build_model,
                inspect_model,
                template_table,
            )
            from bayes_risk.models.pymc_model.synthesis import compile_samplers

            table = self.data if self.data is not None else template_table(self.schema,
                                                                            self.n_records)
            graph = inspect_model(build_model(self.model_function, table, self.schema), table,
                                  self.schema)
            if graph.digest != self.graph.digest:
                raise ValidationError(
                    "the model function builds another likelihood on the records of a synthetic "
                    "dataset than on the fitted ones: it depends on the table beyond its data "
                    "containers.", code="MODEL_FUNCTION_CHANGED")
            self._cache["samplers"] = compile_samplers(graph)
        return self._cache["samplers"]

    def released(self, data: pd.DataFrame | None, dtypes: dict[str, str]) -> dict[str, pd.Series]:
        """The confidential table's columns as a release shows them (recorded dtypes): what
        a dataset keeps of it (``{}`` without it)."""
        if data is None:
            return {}
        if "released" not in self._cache:
            from bayes_risk.models._bayesian.design import apply_dtypes

            frame = apply_dtypes(data.reset_index(drop=True), dtypes, self.schema)
            self._cache["released"] = {c: frame[c] for c in frame.columns}
        return self._cache["released"]
