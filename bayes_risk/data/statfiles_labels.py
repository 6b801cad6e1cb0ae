"""What a SAS, Stata or SPSS file declares beyond its values (:class:`FileLabels`: value
labels, missing-value declarations, variable labels), the formats bayes-risk reads and writes,
and the codes of SAS's and Stata's letter missing values: what the reader
(:mod:`bayes_risk.data.statfiles`) and the writer (:mod:`bayes_risk.data.statfiles_write`)
share (:doc:`/user_guide/data`, Files from SAS, Stata and SPSS)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.exceptions import ValidationError

__all__ = ["FileLabels", "STAT_FORMATS", "RELEASE_FORMATS", "LETTER_MISSING", "LABELS_FILE",
           "file_labels"]


#: extension -> name of the formats read through pyreadstat
STAT_FORMATS = {".sav": "sav", ".zsav": "zsav", ".dta": "dta", ".sas7bdat": "sas7bdat",
                ".xpt": "xpt"}


#: the formats a release is written in (``--format``), with the extension of its files
RELEASE_FORMATS = {"parquet": ".parquet", "csv": ".csv", "sav": ".sav", "zsav": ".zsav",
                   "dta": ".dta", "xpt": ".xpt"}


FORMAT_NAMES = {"sav": "an SPSS", "zsav": "an SPSS (compressed)", "dta": "a Stata",
          "sas7bdat": "a SAS", "xpt": "a SAS transport"}


#: the key of a table's :class:`FileLabels` in ``DataFrame.attrs``
ATTRS_KEY = "bayes_risk.file_labels"


#: the file ``bayes-risk fit`` writes beside a model fitted to a SAS, Stata or SPSS file
LABELS_FILE = "file_labels.json"


#: the missing-value code a numeric column holds for SAS's special missing values ``._``,
#: ``.A``-``.Z`` and Stata's ``.a``-``.z`` (the letter, either case): numbers no survey variable
#: takes, one per kind, so that the kinds stay apart as declared codes do
LETTER_MISSING: dict[str, float] = {
    "_": -1e9, **{chr(ord("a") + k): -1e9 - (k + 1) for k in range(26)}}


LETTER_OF = {v: k for k, v in LETTER_MISSING.items()}


@dataclass(frozen=True, eq=True)
class FileLabels:
    """What a SAS, Stata or SPSS file declares beyond its values, as read into the table.

    A table read by :func:`~bayes_risk.data.read_table` from such a file carries it in
    ``df.attrs`` (:func:`file_labels` gives it back); :meth:`SyntheticData.save
    <bayes_risk.data.SyntheticData.save>` writes a release with it. Read-only.

    Parameters
    ----------
    file_format : str
        ``"sav"``, ``"zsav"``, ``"dta"``, ``"sas7bdat"`` or ``"xpt"``.
    variable_labels : dict
        ``{column: label}``.
    value_labels : dict
        ``{column: [(code, label), ...]}``: the file's label set of each column, in declared
        order (codes as the file holds them: numbers, texts, or the letter of a special
        missing value).
    level_codes : dict
        ``{column: [(level, code), ...]}``: for a column read as categorical from its value
        labels, the file's code of each level (how the release is written back).
    user_missing : dict
        ``{column: [...]}``: the missing-value declarations as the file holds them (SPSS:
        ``{"lo": .., "hi": ..}`` ranges; SAS and Stata: the letters of the special missing
        values met).
    missing_codes : dict
        ``{column: (code, ...)}``: the missing-value codes of the numeric columns, which the
        schema takes (:func:`~bayes_risk.data.infer_schema`).
    missing_levels : dict
        ``{column: (level, ...)}``: the levels of a categorical column that the file declares
        missing (each a level of its own).
    measure : dict
        SPSS's measurement level of each column (``"nominal"``, ``"ordinal"``, ``"scale"``).
    dates : dict
        ``{column: "date" | "datetime" | "time"}``: columns read as ISO text from dates.
    text_columns : tuple of str
        The columns the file stores as text (their codes are texts).
    sas_formats : dict
        ``{column: format name}``: the SAS formats that gave columns their value labels.
    file_label : str
        The file's own label.
    """

    file_format: str
    variable_labels: dict[str, str] = field(default_factory=dict)
    value_labels: dict[str, list[tuple[Any, str]]] = field(default_factory=dict)
    level_codes: dict[str, list[tuple[Any, Any]]] = field(default_factory=dict)
    user_missing: dict[str, list[Any]] = field(default_factory=dict)
    missing_codes: dict[str, tuple[float, ...]] = field(default_factory=dict)
    missing_levels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    measure: dict[str, str] = field(default_factory=dict)
    dates: dict[str, str] = field(default_factory=dict)
    text_columns: tuple[str, ...] = ()
    sas_formats: dict[str, str] = field(default_factory=dict)
    file_label: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (round-trips through :meth:`from_dict`)."""
        def pairs(d: Mapping[str, Sequence[tuple[Any, Any]]]) -> dict[str, list[list[Any]]]:
            return {c: [[_plain(a), _plain(b)] for a, b in v] for c, v in d.items()}

        return {
            "file_format": self.file_format,
            "variable_labels": dict(self.variable_labels),
            "value_labels": pairs(self.value_labels),
            "level_codes": pairs(self.level_codes),
            "user_missing": {c: [_plain(v) if not isinstance(v, dict) else
                                 {k: _plain(x) for k, x in v.items()} for v in vs]
                             for c, vs in self.user_missing.items()},
            "missing_codes": {c: list(v) for c, v in self.missing_codes.items()},
            "missing_levels": {c: list(v) for c, v in self.missing_levels.items()},
            "measure": dict(self.measure),
            "dates": dict(self.dates),
            "text_columns": list(self.text_columns),
            "sas_formats": dict(self.sas_formats),
            "file_label": self.file_label,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FileLabels:
        """Inverse of :meth:`to_dict`."""
        def pairs(v: Any) -> dict[str, list[tuple[Any, Any]]]:
            return {c: [(a, b) for a, b in x] for c, x in (v or {}).items()}

        try:
            return cls(
                file_format=str(d["file_format"]),
                variable_labels={str(k): str(v) for k, v in (d.get("variable_labels") or
                                                              {}).items()},
                value_labels=pairs(d.get("value_labels")), level_codes=pairs(d.get("level_codes")),
                user_missing={c: list(v) for c, v in (d.get("user_missing") or {}).items()},
                missing_codes={c: tuple(float(x) for x in v)
                               for c, v in (d.get("missing_codes") or {}).items()},
                missing_levels={c: tuple(v) for c, v in (d.get("missing_levels") or {}).items()},
                measure=dict(d.get("measure") or {}), dates=dict(d.get("dates") or {}),
                text_columns=tuple(d.get("text_columns") or ()),
                sas_formats=dict(d.get("sas_formats") or {}),
                file_label=str(d.get("file_label") or ""))
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ValidationError(f"file labels are malformed ({err!r}); expected the output of "
                                  "FileLabels.to_dict().", code="FILE_LABELS_INVALID") from err


def _plain(v: Any) -> Any:
    """A JSON-ready scalar (numpy numbers as Python numbers, whole floats kept as floats)."""
    if isinstance(v, np.generic):
        return v.item()
    return v


class LabelsAttrs(dict):
    """A :class:`FileLabels` as ``DataFrame.attrs`` holds it: its JSON form (pandas writes
    ``attrs`` into Parquet files as JSON), never deep-copied (pandas copies ``attrs`` at every
    operation that keeps them; this one is read-only)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> LabelsAttrs:
        return self


def file_labels(df: pd.DataFrame) -> FileLabels | None:
    """The :class:`FileLabels` of a table read from a SAS, Stata or SPSS file (``None`` for
    any other table).

    Parameters
    ----------
    df : DataFrame
        A table returned by :func:`~bayes_risk.data.read_table`.

    Returns
    -------
    FileLabels or None
    """
    got = getattr(df, "attrs", {}).get(ATTRS_KEY)
    if isinstance(got, FileLabels):
        return got
    if not isinstance(got, Mapping):
        return None
    try:  # a Parquet file's attrs come back as a plain dict
        return FileLabels.from_dict(got)
    except ValidationError:
        return None


def load_pyreadstat() -> Any:
    import pyreadstat

    return pyreadstat


def pyreadstat_errors(prs: Any) -> tuple[type[BaseException], ...]:
    return (prs.ReadstatError, prs.PyreadstatError, ValueError, OSError, UnicodeError)


def code_text(v: Any) -> str:
    """A code as text: ``8`` for 8.0, ``.a`` for a special missing value."""
    if isinstance(v, str):
        return f".{v}" if len(v) == 1 and (v.isalpha() or v == "_") else v
    f = float(v)
    return str(int(f)) if f.is_integer() else repr(f)
