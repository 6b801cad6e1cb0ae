"""What differencing the implicates of a partially synthetic release reveals (Hawala 2008).

See :doc:`/methods/disclosure`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import SequenceOf, check_value
from bayes_risk.data.alignment import comparable_values
from bayes_risk.data.provenance import check_distinct_datasets
from bayes_risk.data.schema import FRAME
from bayes_risk.data.validate import record_mask, require_columns
from bayes_risk.exceptions import SchemaError
from bayes_risk.results.differencing import DifferencingResult

__all__ = ["differencing_check"]


def _datasets(synthetic: Any) -> list[pd.DataFrame]:
    sets = list(check_value(
        getattr(synthetic, "datasets", synthetic),
        SequenceOf(FRAME, "DataFrames (the implicates; or a SyntheticData)"), "synthetic",
        code="NOT_A_RELEASE"))
    n = len(sets[0])
    bad = [j + 1 for j, z in enumerate(sets) if len(z) != n]
    if bad:
        raise SchemaError(
            f"the implicates must hold the same records in the same order (partial synthesis): "
            f"dataset(s) {bad} have another number of rows than dataset 1 ({n}). Differencing "
            "compares record i of every implicate.", code="ROWS_MISALIGNED")
    return sets


def _differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise inequality, a missing value equal to a missing value."""
    if a.dtype.kind == "f":
        return ~((a == b) | (np.isnan(a) & np.isnan(b)))
    return np.asarray(a != b, dtype=bool)


def differencing_check(
    original: pd.DataFrame | None,
    synthetic: Any,
    *,
    records: Any = None,
    columns: Sequence[str] | None = None,
) -> DifferencingResult:
    """Records and variables an intruder finds by comparing the released implicates (Hawala 2008).

    Parameters
    ----------
    original : DataFrame or None
        The confidential data (the agency's view); ``None`` for the intruder's view.
    synthetic : SyntheticData or sequence of DataFrame
        The ``m`` implicates, record ``i`` of each the same unit.
    records : boolean mask or sequence of int, optional
        The records the agency selected for synthesis; default: the release's
        ``synthesized_records``, else those that differ from the original.
    columns : sequence of str, optional
        Columns compared (default: every column of the first implicate).

    Returns
    -------
    DifferencingResult

    Warns
    -----
    DataWarning
        ``DUPLICATE_DATASETS`` when two implicates are identical.

    Examples
    --------
    >>> import pandas as pd
    >>> y = pd.DataFrame({"a": [1, 2, 3, 4], "b": ["x", "y", "x", "y"]})
    >>> z1, z2 = y.assign(a=[1, 2, 9, 4]), y.assign(a=[1, 2, 8, 4])
    >>> res = differencing_check(y, [z1, z2], records=[2, 3])
    >>> res.n_revealed, res.revealed_columns, round(res.recall, 2)
    (1, ['a'], 0.5)
    """
    sets = _datasets(synthetic)
    dups = check_distinct_datasets(sets)  # a copy of an implicate hides nothing
    n, m = len(sets[0]), len(sets)
    cols = list(columns) if columns is not None else list(sets[0].columns)
    for j, z in enumerate(sets):
        require_columns(z, cols, f"dataset {j + 1}")
    if original is not None:
        if len(original) != n:
            raise SchemaError(
                f"original has {len(original)} rows and the implicates {n}: differencing "
                "compares record i of each.", code="ROWS_MISALIGNED")
        require_columns(original, cols, "original")
    tables = [*sets, *([original] if original is not None else [])]
    varies, changed = {}, {}
    for c in cols:
        # one conversion of every table's column: 2 and 2.0 compare equal after a CSV round
        # trip, a missing value equals a missing value; columns (n records, implicates [+ the
        # original])
        v = comparable_values(pd.concat([t[c] for t in tables], ignore_index=True))
        v = v.reshape(len(tables), n).T
        varies[c] = _differs(v[:, :m], v[:, [0]]).any(axis=1)
        if original is not None:
            changed[c] = _differs(v[:, :m], v[:, [m]]).any(axis=1)
    varies = pd.DataFrame(varies)
    changed = pd.DataFrame(changed) if original is not None else None
    from_release = getattr(synthetic, "synthesized_records", None)
    if records is not None:
        selected, source = record_mask(records, n, code="BAD_OPTION_VALUE"), "given"
    elif from_release is not None:
        selected = record_mask(from_release, n, argument="the release's synthesized_records",
                               code="BAD_OPTION_VALUE")
        source = "release"
    elif changed is not None:
        selected, source = changed.any(axis=1).to_numpy(), "changed records"
    else:
        selected, source = None, None
    return DifferencingResult(m=m, n_records=n, varies=varies, changed=changed,
                              selected=selected, selection_source=source,
                              duplicates=bool(dups))
