"""The fitted state of a :class:`~bayes_risk.models.trees.cart.CARTSynthesizer`: what the
module-level functions of ``trees.cart_synthesis`` read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.data.schema import Schema

__all__ = ["CARTState"]


@dataclass(frozen=True, eq=False)
class CARTState:
    """The fitted state of a CART synthesizer (its fitted attributes of the same names)."""

    schema: Schema
    visit_sequence: Sequence[str]
    predictors: Mapping[str, list[str]]
    trees: Mapping[str, Any]
    missing: Mapping[str, dict]
    missing_trees: Mapping[str, Any]
    smoothed: Sequence[str]
    bandwidth: Mapping[str, np.ndarray]
    integer: Mapping[str, bool]
    decimals: Mapping[str, int | None]
    records: np.ndarray
    data: pd.DataFrame
    index: pd.Index
    values: Mapping[str, np.ndarray]
    #: the columns drawn by a regression method of a spec (``trees.regression``)
    regressions: Mapping[str, Any] = field(default_factory=dict)
