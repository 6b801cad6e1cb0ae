"""One normaliser each for the synthetic inputs, record and column selections of a measure."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bayes_risk.data.fingerprint import check_original
from bayes_risk.data.provenance import check_distinct_datasets
from bayes_risk.data.schema import Schema, check_column_labels
from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.data.validate import require_frame
from bayes_risk.exceptions import ValidationError, arg_name

__all__ = ["SyntheticInput", "as_synthetic_list", "check_not_empty", "record_positions",
           "select_columns"]


class SyntheticInput(NamedTuple):
    """Synthetic datasets as a list, and the ``SyntheticData`` they came from (if any)."""

    datasets: list[pd.DataFrame]
    source: SyntheticData | None

    @property
    def schema(self) -> Schema | None:
        """The schema a ``SyntheticData`` carries (``None`` otherwise)."""
        return None if self.source is None else self.source.schema

    @property
    def recoded(self) -> tuple[str, ...]:
        """The columns the release recodes (:meth:`SyntheticData.declare_recoded`)."""
        return () if self.source is None else self.source.recoded_columns


def as_synthetic_list(synthetic: Any, *, argument: str = "synthetic", allow_none: bool = False,
                      original: pd.DataFrame | None = None,
                      row_order: bool = True) -> SyntheticInput:
    """The synthetic datasets as a list of DataFrames, and their ``SyntheticData``.

    Parameters
    ----------
    synthetic : list of DataFrame, SyntheticData or DataFrame
        The ``m`` released datasets (a single DataFrame is ``m = 1``).
    argument : str
        Name of the argument in error messages.
    allow_none : bool
        Accept ``None`` (an empty list).
    original : DataFrame, optional
        The original the release is measured against (checked against its fingerprint).
    row_order : bool, default True
        Whether record i of ``original`` is paired with row i of each dataset.

    Returns
    -------
    SyntheticInput
        ``(datasets, source)``; ``source`` is the ``SyntheticData`` or ``None``.

    Raises
    ------
    ValidationError
        Any other type, an element that is not a DataFrame, or an empty list.
    SchemaError
        ``ORIGINAL_DIFFERS``: ``original`` is not the table the release was made from.

    Warns
    -----
    DataWarning
        ``DUPLICATE_DATASETS``: two datasets are identical.
    """
    if original is not None:
        check_column_labels(original)
        check_not_empty(original, "the original")
    if synthetic is None and allow_none:
        return SyntheticInput([], None)
    if isinstance(synthetic, SyntheticData):
        for l, z in enumerate(synthetic.datasets, start=1):
            check_not_empty(z, f"synthetic dataset {l}")
        if original is not None:
            check_original(original, synthetic, row_order=row_order)
            _check_labels(original, synthetic.datasets, synthetic.recoded_columns,
                          (synthetic.extra or {}).get("files"))
        files = (synthetic.extra or {}).get("files")
        check_distinct_datasets(synthetic.datasets, files if isinstance(files, list) else None)
        return SyntheticInput(list(synthetic.datasets), synthetic)
    if isinstance(synthetic, pd.DataFrame):
        check_column_labels(synthetic, "synthetic dataset 1")
        check_not_empty(synthetic, "synthetic dataset 1")
        if original is not None:
            _check_labels(original, [synthetic])
        return SyntheticInput([synthetic], None)
    if isinstance(synthetic, (list, tuple)):
        out = list(synthetic)
        if not out:
            raise ValidationError(f"{argument} is empty; expected at least one synthetic dataset "
                                  "(m >= 1).")
        for l, z in enumerate(out, start=1):
            require_frame(z, f"synthetic dataset {l}")
            check_column_labels(z, f"synthetic dataset {l}")
            check_not_empty(z, f"synthetic dataset {l}")
        if original is not None:
            _check_labels(original, out)
        check_distinct_datasets(out)
        return SyntheticInput(out, None)
    raise ValidationError(f"{argument} must be a DataFrame, a list of DataFrames or a "
                          f"SyntheticData. Got {type(synthetic).__name__}.")


def check_not_empty(df: pd.DataFrame, name: str,
                    why: str = "every measure compares records of the original with released "
                               "ones") -> None:
    """``EMPTY_TABLE`` for a table without records or columns: said as such, before any check
    of its columns or levels would say something else (``why`` a table needs them; the one
    place this is checked)."""
    if isinstance(df, pd.DataFrame) and (len(df) == 0 or len(df.columns) == 0):
        raise ValidationError(f"{name} has no {'records' if len(df.columns) else 'columns'} "
                              f"(a DataFrame of shape {df.shape}); {why}.", code="EMPTY_TABLE")


def _check_labels(original: pd.DataFrame, datasets: list[pd.DataFrame],
                  recoded: tuple[str, ...] = (), files: Any = None) -> None:
    """The datasets' value labels against the original's (``VALUE_LABELS_DIFFER``), each
    named by its file when the release was read from files."""
    from bayes_risk.data.validate import check_value_labels

    files = files if isinstance(files, list) and len(files) == len(datasets) else None
    check_value_labels(original, {
        f"synthetic dataset {l}" + (f" ({files[l - 1]})" if files else ""): z
        for l, z in enumerate(datasets, start=1)}, recoded)


def select_columns(df: pd.DataFrame, cols: list[str],
                   want: pd.Index | None = None) -> pd.DataFrame:
    """``df[cols].reset_index(drop=True)``; a shallow copy of ``df`` when it already holds
    exactly ``cols`` on rows ``0..n-1`` (pandas' lookup would cost more than a small draw).
    ``want``: ``pd.Index(cols)``, built once by a caller that selects from many tables."""
    ix = df.index
    if (df.columns.equals(pd.Index(cols) if want is None else want)
            and isinstance(ix, pd.RangeIndex) and ix.start == 0 and ix.step == 1):
        # without copy-on-write (pandas 2 by default) a shallow copy would share the values
        return df.copy(deep=not _copy_on_write())
    return df[cols].reset_index(drop=True)


def _copy_on_write() -> bool:
    """Whether pandas copies on write: always from pandas 3, by option before."""
    if int(pd.__version__.split(".")[0]) >= 3:
        return True
    return pd.get_option("mode.copy_on_write") is True


def record_positions(records: Any, n: int, *, argument: str = "records") -> np.ndarray:
    """A record selection as 0-based row positions (``DataFrame.iloc``), in the order given.

    Parameters
    ----------
    records : None, int, sequence of int or boolean mask
        ``None`` selects every record; a boolean array of length ``n`` selects where it is true.
    n : int
        Number of records.
    argument : str
        Name of the argument in error messages.

    Returns
    -------
    ndarray of int64

    Raises
    ------
    ValidationError
        Non-integer positions, an empty selection, a position outside ``0..n-1``, a duplicate,
        or a mask of the wrong length.
    """
    if records is None:
        return np.arange(n, dtype=np.int64)
    argument = arg_name(argument)
    flag = isinstance(records, (bool, np.bool_))  # True is no row position, nor a mask
    if isinstance(records, (int, np.integer)) and not flag:
        records = [int(records)]
    arr = np.asarray(records if isinstance(records, np.ndarray) or flag else list(records))
    if arr.dtype == bool and not flag:
        if arr.shape != (n,):
            raise ValidationError(f"{argument} as a boolean mask needs one flag per record ({n}); "
                                  f"got shape {arr.shape}.")
        arr = np.flatnonzero(arr)
    elif flag or (arr.size and (arr.dtype.kind not in "iu" and not (
            arr.dtype.kind in "fO" and _all_whole(arr)))):
        raise ValidationError(f"{argument} must be row positions (integers). Got {records!r}.")
    arr = arr.astype(np.int64).ravel()
    if arr.size == 0:
        raise ValidationError(f"{argument} is empty; give at least one row position.")
    bad = arr[(arr < 0) | (arr >= n)]
    if bad.size:
        raise ValidationError(f"{argument}: row position {int(bad[0])} is out of range; the "
                              f"original has {n} rows (positions 0..n-1).",
                              code="RECORD_OUT_OF_RANGE")
    if np.unique(arr).size != arr.size:
        raise ValidationError(f"{argument} contains duplicate row positions.")
    return arr


def _all_whole(arr: np.ndarray) -> bool:
    try:
        f = arr.astype(np.float64)
    except (TypeError, ValueError):
        return False
    return bool(np.all(np.isfinite(f)) and np.all(f == np.round(f)))
