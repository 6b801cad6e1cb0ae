"""The :class:`SyntheticData` container: m released tables plus their provenance."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._constraints import (
    COLUMN_NAMES,
    Flag,
    Options,
    SequenceOf,
    Text,
    check_fields,
    check_value,
    checked,
)
from bayes_risk._io import atomic_dir, to_jsonable, write_json
from bayes_risk.data.manifest import CHECKSUMS, FORMAT_VERSION, GENERATION_SCHEMES, MANIFEST_NAME
from bayes_risk.data.release_reader import read_release
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import check_m, require_frame
from bayes_risk.exceptions import SchemaError, ValidationError, arg_name

__all__ = ["SyntheticData", "read_synthetic", "generation_from_roles", "SAMPLING_FIELD",
           "SAMPLING_DESIGN", "sampled_records", "REMOVED_ROWS", "released_records"]


def generation_from_roles(schema: Schema | None,
                          synthesized_records: np.ndarray | None) -> str | None:
    """``"full-same-n"`` when every column of every record is synthesized, ``"partial"`` when
    some column or record is released unchanged, ``None`` without a schema with roles."""
    if schema is None or not schema.synthesized:
        return None
    if schema.unsynthesized or (synthesized_records is not None
                                and not bool(np.all(synthesized_records))):
        return "partial"
    return "full-same-n"


def as_frames(synthetic: Any) -> list[pd.DataFrame]:
    """The datasets of a release, of one DataFrame or of a sequence of them, as a list
    (unchecked: the models' log-likelihoods name a dataset they cannot read)."""
    return [synthetic] if isinstance(synthetic, pd.DataFrame) else list(synthetic)


#: the ``extra`` field of a release's manifest that records sampling with synthesis
#: (:func:`bayes_risk.models.sampling_with_synthesis`)
SAMPLING_FIELD = "sampling"
#: the design of sampling with synthesis, as the manifest and the reports state it
SAMPLING_DESIGN = ("one simple random sample of the census's units without replacement, the "
                   "same units in every released dataset, each dataset from its own synthetic "
                   "population (sampling with synthesis, Drechsler & Reiter 2010)")


def sampled_records(synthetic: Any) -> dict[str, Any] | None:
    """The sampling a release records (``extra["sampling"]``), checked; ``None`` for a release
    that is not a sample of synthetic populations.

    Raises
    ------
    ValidationError
        A damaged record (``MANIFEST_INVALID``).
    """
    extra = getattr(synthetic, "extra", None)
    rec = (extra or {}).get(SAMPLING_FIELD) if isinstance(extra, dict) else None
    if rec is None:
        return None
    try:
        units = np.asarray(rec["sampled_records"], dtype=np.int64)
        N, n = int(rec["population_size"]), int(rec["sample_size"])
        ok = (units.ndim == 1 and units.size == n and n == len(synthetic.datasets[0])
              and np.all(np.diff(units) > 0) and 0 <= units.min() and units.max() < N
              and math.isclose(float(rec["sample_fraction"]), n / N))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        ok = False
    if not ok:
        raise ValidationError("the release's manifest records a sample of synthetic populations "
                              "that does not fit its datasets (population_size, sample_size, "
                              "sampled_records); the manifest is damaged.",
                              code="MANIFEST_INVALID")
    return {**rec, "sampled_records": units}


#: the field of a row-removal step of ``extra["post_processing"]`` (``bayes_risk.sdc``) that
#: lists, per dataset, the positions of the rows it removed
REMOVED_ROWS = "removed_rows"


def released_records(synthetic: Any, n: int) -> list[np.ndarray] | None:
    """The records whose own synthetic rows each dataset still holds, in row order, when rows
    were removed after a synthesis that gave record ``i`` the row ``i`` of every dataset.

    Parameters
    ----------
    synthetic : SyntheticData or any
        The release; its ``extra["post_processing"]`` row-removal steps are read in order.
    n : int
        The original's number of records.

    Returns
    -------
    list of ndarray or None
        Per dataset, the positions (``int64``, increasing) of the records whose rows remain;
        ``None`` when no row was removed, or when a removal does not record its rows (a release
        of another size to begin with, or one written before they were recorded): its rows
        are then paired with no record.

    Raises
    ------
    ValidationError
        A record that does not fit the datasets (``MANIFEST_INVALID``).
    """
    done = (getattr(synthetic, "extra", None) or {}).get("post_processing") or []
    removals = [step for step in done if isinstance(step, dict)
                and str(step.get("operation", "")).startswith("remove_")]
    if not removals or any(REMOVED_ROWS not in step for step in removals):
        return None
    datasets = list(synthetic)
    kept = [np.arange(n, dtype=np.int64) for _ in datasets]
    try:
        for step in removals:
            rows = step[REMOVED_ROWS]
            if len(rows) != len(kept):
                raise ValueError
            for l, gone in enumerate(rows):
                at = np.asarray(gone, dtype=np.int64).reshape(-1)
                if at.size and (at.min() < 0 or at.max() >= len(kept[l])
                                or np.any(np.diff(at) <= 0)):
                    raise ValueError
                kept[l] = np.delete(kept[l], at)
        ok = all(len(k) == len(z) for k, z in zip(kept, datasets, strict=True))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValidationError("the release's manifest records rows removed after synthesis "
                              f"({REMOVED_ROWS}) that do not fit its datasets' sizes; the "
                              "manifest is damaged.", code="MANIFEST_INVALID")
    return kept


def _categorical_dtypes(df: pd.DataFrame) -> dict[str, Any]:
    """Categories and order of the categorical columns (pyarrow loses integer categories)."""
    out = {}
    for c in df.columns:
        dt = df[c].dtype
        if isinstance(dt, pd.CategoricalDtype):
            out[str(c)] = {
                "categories": to_jsonable(list(dt.categories)),
                "ordered": bool(dt.ordered),
            }
    return out


@dataclass
class SyntheticData:
    """m synthetic datasets with the provenance needed to audit them.

    Parameters
    ----------
    datasets : sequence of DataFrame
        The m released tables ``Z_(1), …, Z_(m)``; same columns, same row order as the original.
    method : str
        Synthesizer name (``"cart"``, ``"rf"``, ``"pmm"``, ``"dpmpm"``, …).
    settings : dict
        The synthesizer's settings (its ``get_params()``), JSON-serialisable.
    random_seed : int, list of int or None
        Seed used for synthesis (provenance).
    draw_index : sequence of int, optional
        Posterior draw behind each dataset (Bayesian models); ``None`` for tree synthesizers.
    schema : Schema, optional
        Column types and roles (synthesized / unsynthesized).
    synthesized_records : ndarray of bool, optional
        Record-level flags ``δ_i`` (partial synthesis of selected records; methods, Notation).
    extra : dict
        Further JSON-serialisable information (warnings, diagnostics).
    generation : {"partial", "full-same-n", "full-population", "partial-sample"}, optional
        How the release was generated (chooses the combining rules); ``None``: inferred.
    proper : bool, optional
        Whether each dataset was drawn with its own parameter draw; ``None``: unknown.
    original_fingerprint : dict, optional
        Hashes of the encoded original (never the data), checked against a measure's original.
    imputed_columns : list of str, optional
        Columns whose missing values the synthesizer imputed; ``None``: not recorded.
    model_id : str, optional
        Identity of the fitted model that made the release
        (:func:`bayes_risk.data.provenance.model_id`); ``None``: not recorded.

    Examples
    --------
    >>> import pandas as pd
    >>> z = SyntheticData([pd.DataFrame({"a": [1, 2]})] * 2, method="copy")
    >>> z.m
    2
    """

    datasets: Sequence[pd.DataFrame]
    method: str = "unknown"
    settings: dict[str, Any] = field(default_factory=dict)
    random_seed: Any = None
    draw_index: Sequence[int] | None = None
    schema: Schema | None = None
    synthesized_records: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    original_fingerprint: dict[str, Any] | None = None
    generation: str | None = field(default=None, metadata=checked(
        [Options(GENERATION_SCHEMES), None], code="UNKNOWN_GENERATION"))
    proper: bool | None = field(default=None, metadata=checked([Flag(), None]))
    imputed_columns: list[str] | None = field(default=None, metadata=checked(
        [SequenceOf(COLUMN_NAMES.item, "column names", min_len=0), None]))
    model_id: str | None = field(default=None, metadata=checked(
        [Text("a SHA-256 (64 hexadecimal digits)", "[0-9A-Fa-f]{64}"), None]))
    #: ``"error"``: a different original is refused; ``"warn"``: it is used, with a warning
    original_check: str = field(default="error", compare=False, repr=False)
    #: columns the user says the release recodes: their levels the original never holds are
    #: levels of their own (warning ``SYNTHETIC_ONLY_LEVEL``), not an error
    recoded_columns: tuple[str, ...] = field(default=(), compare=False, repr=False)
    #: the folder the release was loaded from (:meth:`load`; ``None``: made in memory), which a
    #: remedy of it records (``bayes_risk.sdc``)
    folder: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.datasets, pd.DataFrame):
            self.datasets = [self.datasets]
        self.datasets = list(self.datasets)
        check_m(len(self.datasets), "number of synthetic datasets (m)")
        for l, z in enumerate(self.datasets, start=1):
            require_frame(z, f"synthetic dataset {l}")
        cols0 = list(self.datasets[0].columns)
        for l, z in enumerate(self.datasets[1:], start=2):
            if list(z.columns) != cols0:
                raise SchemaError(f"synthetic dataset {l} has columns {list(z.columns)}; dataset "
                                  f"1 has {cols0}.", code="COLUMNS_DIFFER")
        check_fields(self, prefix="")
        if self.imputed_columns is not None:
            cols = [str(c) for c in self.datasets[0].columns]
            unknown = [c for c in self.imputed_columns if c not in cols]
            if unknown:
                raise SchemaError(f"imputed_columns names {unknown}, not columns of the datasets "
                                  f"({cols}).", code="UNKNOWN_COLUMN")
            self.imputed_columns = list(self.imputed_columns)
        if self.draw_index is not None:
            self.draw_index = [int(h) for h in self.draw_index]
            if len(self.draw_index) != len(self.datasets):
                raise ValidationError(f"draw_index has {len(self.draw_index)} entries for "
                                      f"{len(self.datasets)} datasets.")
        if self.synthesized_records is not None:
            self.synthesized_records = np.asarray(self.synthesized_records, dtype=bool)
            if self.synthesized_records.shape != (len(self.datasets[0]),):
                raise ValidationError("synthesized_records must have one flag per record "
                                      f"({len(self.datasets[0])}). Got shape "
                                      f"{self.synthesized_records.shape}.")

    def _summary_lines(self) -> list[str]:
        """The compact description both reprs show: sizes, method, generation, columns."""
        z = self.datasets[0]
        syn = list(self.schema.synthesized) if self.schema is not None else []
        cols = [str(c) for c in z.columns]
        shown = ", ".join(cols[:12]) + (f", … ({len(cols)} in all)" if len(cols) > 12 else "")
        lines = [f"SyntheticData: m = {self.m} dataset(s) of {len(z):,} rows x {len(cols)} "
                 f"columns, method {self.method!r}"
                 + (f", generation {self.generation!r}" if self.generation else "")
                 + ("" if self.proper is None else f", proper {self.proper}"),
                 f"  columns: {shown}"]
        if syn:
            lines.append(f"  synthesized: {', '.join(map(str, syn))}")
        if self.synthesized_records is not None:
            lines.append(f"  records synthesized: {int(self.synthesized_records.sum())} of "
                         f"{len(z):,}")
        sampling = sampled_records(self)
        if sampling is not None:
            lines.append(f"  sampling with synthesis: {self.m} synthetic populations of the "
                         f"census's {sampling['population_size']:,} units, the same simple "
                         f"random sample of {sampling['sample_size']:,} units (fraction "
                         f"{sampling['sample_fraction']:.4g}) released from each; the units "
                         "drawn are recorded in the manifest (confidential: keep it with the "
                         "agency)")
        from bayes_risk.privacy import release_privacy

        dp = release_privacy(self)
        if dp is not None:
            lines.append(f"  {dp.describe()}")
        if self.random_seed is not None:
            lines.append(f"  random_seed: {self.random_seed!r}")
        if self.model_id is not None:
            lines.append(f"  model id: {self.model_id[:16]} (the fitted model that made it; "
                         "checked against any model given with this release)")
        if self.folder is not None:
            lines.append(f"  loaded from: {self.folder}")
        return lines

    def __repr__(self) -> str:
        # compact, as pandas, xarray and ArviZ show their objects: the datasets, the settings
        # and the schema are attributes to look at (``.datasets[0]``, ``.settings``, ``.schema``)
        return "\n".join(self._summary_lines())

    def _repr_html_(self) -> str:
        import html

        head, *rest = self._summary_lines()
        items = "".join(f"<li>{html.escape(r.strip())}</li>" for r in rest)
        return f"<div><strong>{html.escape(head)}</strong><ul>{items}</ul></div>"

    def allow_different_original(self) -> SyntheticData:
        """A copy of this release (datasets shared) whose ``ORIGINAL_DIFFERS`` is a warning.

        Returns
        -------
        SyntheticData
        """
        import dataclasses

        return dataclasses.replace(self, original_check="warn")

    def declare_recoded(self, columns: Sequence[str]) -> SyntheticData:
        """A copy of this release (datasets shared) that recodes ``columns`` on purpose.

        Levels of a release that its original never holds are an error of every measure that
        compares the two (``SYNTHETIC_ONLY_LEVEL``: no released record could match an original
        one on such a column, so the risks would be understated); for these columns they are
        kept as levels of their own, with the warning of the same code.

        Parameters
        ----------
        columns : sequence of str
            Columns of the datasets.

        Returns
        -------
        SyntheticData

        Raises
        ------
        SchemaError
            ``UNKNOWN_COLUMN``: a name that is not a column of the datasets.
        """
        import dataclasses

        if isinstance(columns, str):
            columns = [columns]
        names = [str(c) for c in self.datasets[0].columns]
        unknown = [c for c in columns if c not in names]
        if unknown:
            raise SchemaError(f"{arg_name('recoded')}: column(s) {unknown} are not columns of "
                              f"the release ({names}).", code="UNKNOWN_COLUMN")
        return dataclasses.replace(
            self, recoded_columns=tuple(dict.fromkeys([*self.recoded_columns, *columns])))

    @property
    def m(self) -> int:
        """Number of synthetic datasets."""
        return len(self.datasets)

    @property
    def method_description(self) -> str:
        """The synthesizer's name, with the methods of a synthpop-style specification
        (``"cart; per column: Tenure=ctree, Income=normrank"``; other visited columns take the
        specification's defaults)."""
        spec = (self.settings or {}).get("spec") or {}
        given = spec.get("method") if isinstance(spec, dict) else None
        if isinstance(given, dict) and any(given.values()):
            return f"{self.method}; per column: " + ", ".join(
                f"{c}={v}" for c, v in given.items() if v)
        if isinstance(given, str) and given != self.method:
            return f"{self.method}; every column: {given}"
        return self.method

    def __len__(self) -> int:
        return self.m

    def __iter__(self) -> Iterator[pd.DataFrame]:
        return iter(self.datasets)

    def __getitem__(self, l: int) -> pd.DataFrame:
        return self.datasets[l]

    def manifest(self) -> dict[str, Any]:
        """JSON-ready provenance (what :meth:`save` writes as ``manifest.json``)."""
        width = max(3, len(str(self.m)))
        return {
            "format": "bayes-risk SyntheticData",
            "format_version": FORMAT_VERSION,
            "method": self.method,
            "settings": to_jsonable(self.settings),
            "random_seed": to_jsonable(self.random_seed),
            "m": self.m,
            "n_records": len(self.datasets[0]),
            # after records were removed (bayes_risk.disclosure.sdc) the datasets' sizes differ
            "n_records_per_dataset": None if len({len(z) for z in self.datasets}) == 1
            else [len(z) for z in self.datasets],
            "columns": [str(c) for c in self.datasets[0].columns],
            "files": [f"syn_{l:0{width}d}.parquet" for l in range(1, self.m + 1)],
            "categorical_dtypes": _categorical_dtypes(self.datasets[0]),
            "draw_index": None if self.draw_index is None else list(self.draw_index),
            "schema": None if self.schema is None else self.schema.to_dict(),
            "synthesized_records": None
            if self.synthesized_records is None
            else [int(i) for i in np.flatnonzero(self.synthesized_records)],
            "extra": to_jsonable(self.extra),
            "generation": self.generation,
            "proper": self.proper,
            "imputed_columns": self.imputed_columns,
            # a hash of the encoded original (never the data): checks the original later
            "original_fingerprint": self.original_fingerprint,
            # the identity of the model that made it: checks a model given beside it later
            "model_id": self.model_id,
        }

    def save(self, path: str | os.PathLike[str], *, csv: bool = False,
             file_format: str = "parquet", labels: Any = None) -> Path:
        """Write the folder atomically (one file per dataset + ``manifest.json``).

        Parameters
        ----------
        path : path-like
            Destination folder (replaced if it exists).
        csv : bool
            Also write ``syn_001.csv`` … beside the dataset files, for tools that read CSV.
        file_format : {"parquet", "csv", "sav", "zsav", "dta", "xpt"}
            The datasets' format (recorded in the manifest as ``file_format``): Parquet keeps
            every dtype; SPSS, Stata and SAS transport files are written with the value labels,
            variable labels and missing-value declarations of ``labels``
            (:doc:`/user_guide/data`, Files from SAS, Stata and SPSS).
        labels : FileLabels, optional
            What the original's SAS, Stata or SPSS file declared
            (:func:`~bayes_risk.data.file_labels` of the original as read).

        Returns
        -------
        Path
            The folder written.

        Raises
        ------
        ValidationError
            ``UNSUPPORTED_FILE_TYPE`` for another format; ``FORMAT_CANNOT_HOLD`` when the
            format cannot hold a dataset (nothing is written).
        """
        from bayes_risk._checksums import folder_checksums
        from bayes_risk.data.statfiles import LABELS_FILE, RELEASE_FORMATS
        from bayes_risk.data.statfiles_write import sas_format_program

        check_value(file_format, Options(tuple(RELEASE_FORMATS)), "file_format",
                    code="UNSUPPORTED_FILE_TYPE")
        man = self.manifest()
        suffix = RELEASE_FORMATS[file_format]
        man["files"] = [f.removesuffix(".parquet") + suffix for f in man["files"]]
        man["file_format"] = file_format
        if file_format != "parquet":  # what the files cannot say, restored by load
            man["dtypes"] = {str(c): str(t) for c, t in self.datasets[0].dtypes.items()}
        codes = self.schema.missing_codes if self.schema is not None else {}
        with atomic_dir(path) as tmp:
            for fname, z in zip(man["files"], self.datasets, strict=False):
                _write_dataset(z, tmp / fname, file_format, labels, codes)
                if csv and file_format != "csv":
                    z.to_csv(tmp / (fname.removesuffix(suffix) + ".csv"), index=False)
            if labels is not None and file_format != "parquet":
                # the codebook: how load reads a transport file's codes back as the levels
                write_json(tmp / LABELS_FILE, labels.to_dict())
            if file_format == "xpt" and labels is not None:
                program = sas_format_program(labels, man["columns"])
                if program:
                    (tmp / "formats.sas").write_text(program, encoding="utf-8")
            # last: the SHA-256 of every file written and of the manifest's other fields
            man = to_jsonable(man)
            write_json(tmp / MANIFEST_NAME,
                       {**man, CHECKSUMS: folder_checksums(tmp, MANIFEST_NAME, man)})
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SyntheticData:
        """Load a folder written by :meth:`save`, in any of its formats (the manifest's
        ``file_format``; the datasets' dtypes and levels as saved).

        Raises
        ------
        ValidationError
            If the folder or its manifest is missing or malformed, or the manifest was edited
            (``MANIFEST_INVALID``); ``RELEASE_DAMAGED`` if a dataset file was changed, replaced
            or truncated since it was written (its SHA-256 differs from the manifest's) or
            cannot be read; ``DUPLICATE_DATASETS`` if two of its dataset files are the same
            file (a link to another's).

        Warns
        -----
        DataWarning
            ``RELEASE_UNVERIFIED``: a folder written before the manifest recorded checksums.
        """
        return cls(**read_release(path, load=True))

    def equals(self, other: SyntheticData) -> bool:
        """True when datasets, provenance and schema are identical."""
        if not isinstance(other, SyntheticData) or self.m != other.m:
            return False
        same_data = all(a.equals(b) for a, b in zip(self.datasets, other.datasets, strict=False))
        return same_data and self.manifest() == other.manifest()


def read_synthetic(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str], *,
                   like: pd.DataFrame | None = None, allow_different_original: bool = False,
                   missing_labels: Mapping[str, Sequence[str]] | None = None,
                   recoded: Sequence[str] | None = None) -> SyntheticData:
    """Read a synthetic release: a :class:`SyntheticData` folder, a synthpop ``syn()`` object
    saved by R (``.rds``, ``.RData``: :func:`~bayes_risk.data.synthpop_rds.read_synthpop`), or
    one file per dataset.

    Parameters
    ----------
    paths : path or sequence of paths
        Either a single folder written by :meth:`SyntheticData.save`, or CSV/Parquet files (one
        per synthetic dataset, in release order).
    like : DataFrame, optional
        The original table: numbers stored as text where ``like`` is numeric are read as
        numbers, and columns equal to ``like``'s share its memory.
    allow_different_original : bool
        A warning instead of an error for another original
        (:meth:`SyntheticData.allow_different_original`).
    missing_labels : mapping of str to sequence of str, optional
        Texts that stand for a missing value, per column (:func:`read_table`).
    recoded : sequence of str, optional
        Columns the release recodes on purpose (:meth:`SyntheticData.declare_recoded`).
    """
    release = SyntheticData(**read_release(
        paths, original=like, allow_different_original=allow_different_original,
        missing_labels=missing_labels))
    return release.declare_recoded(recoded) if recoded else release


def _write_dataset(z: pd.DataFrame, f: Path, file_format: str, labels: Any,
                   codes: dict[str, tuple[float, ...]]) -> None:
    """One dataset of a release in ``file_format`` (inside the release's atomic folder)."""
    if file_format == "parquet":
        z.to_parquet(f, index=False)
    elif file_format == "csv":
        z.to_csv(f, index=False)
    else:
        from bayes_risk.data.statfiles_write import write_stat_file

        write_stat_file(z, f, file_format, labels=labels, missing_codes=codes)
