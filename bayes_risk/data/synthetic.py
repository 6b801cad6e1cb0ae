"""The :class:`SyntheticData` container: m released tables plus their provenance."""

from __future__ import annotations

import math
import os
import warnings
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
from bayes_risk._io import atomic_dir, read_json, to_jsonable, write_json
from bayes_risk.data.manifest import (
    CHECKSUMS,
    FORMAT_VERSION,
    GENERATION_SCHEMES,
    MANIFEST_NAME,
    bad_manifest,
    check_dataset_file,
    check_distinct_files,
    check_tables,
    damaged,
    manifest_schema,
    read_manifest,
)
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


def _restore_categoricals(df: pd.DataFrame, spec: dict[str, Any] | None) -> pd.DataFrame:
    for c, d in (spec or {}).items():
        if c in df.columns:
            df[c] = pd.Categorical(df[c].to_numpy(dtype=object), categories=d["categories"],
                                   ordered=d["ordered"])
    return df


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
        return _read_release(path, load=True)

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
    return _read_release(paths, original=like, allow_different_original=allow_different_original,
                         missing_labels=missing_labels, recoded=recoded)


def _read_release(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str], *,
                  original: pd.DataFrame | None = None, allow_different_original: bool = False,
                  missing_labels: Mapping[str, Sequence[str]] | None = None,
                  recoded: Sequence[str] | None = None, load: bool = False) -> SyntheticData:
    """The one reading of a release, each step once and in this order: what describes it (a
    folder's manifest, an R file's ``syn()`` object, or the files themselves), its tables,
    each aligned as soon as it is read (to the manifest's dtypes, or to ``original``: one
    table's copies alive at a time), then the checks of the whole. ``load``: ``paths`` is the
    folder given to :meth:`SyntheticData.load`, whose manifest is required."""
    source = _manifest_source(Path(paths)) if load else _describe(paths)  # type: ignore[arg-type]
    release = _checked(source, list(_tables(source, original, missing_labels)),
                       allow_different_original)
    return release.declare_recoded(recoded) if recoded else release


@dataclass
class _Source:
    """What describes a release, read before its tables: the dataset files and, for a
    folder, its checked manifest; for an R file, its ``syn()`` object's datasets and
    provenance (R's file holds both)."""

    files: list[Path]
    folder: Path | None = None
    manifest: dict[str, Any] | None = None
    r_object: dict[str, Any] | None = None


def _describe(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str]) -> _Source:
    """The first step of ``_read_release`` for :func:`read_synthetic`'s ``paths``."""
    from bayes_risk.data.synthpop_objects import R_SUFFIXES, read_syn_object

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValidationError("no synthetic dataset given; expected at least one file or folder.",
                              code="OPTION_REQUIRED")
    if len(paths) == 1 and paths[0].suffix.lower() in R_SUFFIXES:  # synthpop's syn() object
        return _Source(paths, r_object=read_syn_object(paths[0]))
    if any(p.suffix.lower() in R_SUFFIXES for p in paths):
        raise ValidationError("an R file holds a whole synthpop release (its syn() object); give "
                              "it alone, not beside other files.", code="NOT_A_RELEASE")
    if len(paths) == 1 and paths[0].is_dir():
        if (paths[0] / MANIFEST_NAME).is_file():
            return _manifest_source(paths[0])
        raise ValidationError(f"{str(paths[0])!r} is a folder without {MANIFEST_NAME}; pass the "
                              "synthetic files themselves or a folder written by `bayes-risk "
                              "synthesize`.", code="NOT_A_RELEASE")
    for p in paths:
        if p.is_dir():
            raise ValidationError(f"{str(p)!r} is a folder; give either one SyntheticData folder "
                                  "or data files.", code="NOT_A_RELEASE")
    check_distinct_files(paths)  # a file given twice, or a link to another's
    return _Source(paths)


def _manifest_source(p: Path) -> _Source:
    """A release folder's manifest, checked before any dataset is read by it."""
    man = read_manifest(p)
    return _Source([p / f for f in man["files"]], folder=p, manifest=man)


def _tables(source: _Source, original: pd.DataFrame | None,
            labels: Mapping[str, Sequence[str]] | None) -> Iterator[pd.DataFrame]:
    """The release's tables, each aligned (``_align``) as soon as it is read: no name
    holds a table as read once it is aligned, so one such table is alive at a time."""
    from bayes_risk.data.io import read_table

    if source.r_object is not None:
        for z in source.r_object["datasets"]:
            yield _align(source, source.files[0], z, original)
        return
    man, p = source.manifest, source.folder
    if man is not None and p is not None:
        for fname in man["files"]:
            f = check_dataset_file(man, p, fname)
            yield _align(source, f, _read_or_damaged(f, man, p), original)
        return
    # a labelled column of a SAS, Stata or SPSS file is read as its codes where the original
    # holds numbers (a column declared numeric there)
    numeric = [] if original is None else [
        str(c) for c in original.columns if pd.api.types.is_numeric_dtype(original[c].dtype)
        and not pd.api.types.is_bool_dtype(original[c].dtype)]
    for f in source.files:
        yield _align(source, f, read_table(f, missing_labels=labels, strict=False,
                                           numeric=numeric), original)


def _align(source: _Source, f: Path, z: pd.DataFrame,
           original: pd.DataFrame | None) -> pd.DataFrame:
    """One table aligned: a folder's to the dtypes and categories its manifest records; a
    file's to ``original`` (numbers stored as text read as numbers where it holds numbers,
    and its unchanged columns sharing the original's memory)."""
    from bayes_risk.data.io import align_text_numbers, share_unchanged_columns

    man = source.manifest
    if man is not None and source.folder is not None:
        cats = man.get("categorical_dtypes") or {}
        for c, t in (man.get("dtypes") or {}).items():
            if c in z.columns and c not in cats and str(z[c].dtype) != t:
                try:
                    z[c] = z[c].astype(t)
                except (TypeError, ValueError) as err:
                    raise bad_manifest(source.folder, f"{f.name}: column {c!r} cannot be read "
                                       f"as {t} ({err})") from err
        return _restore_categoricals(z, cats)
    if original is None:
        return z
    out = share_unchanged_columns(align_text_numbers(z, original), original)
    out.attrs.update(z.attrs)  # the file's value labels, compared with the original's
    return out


def _checked(source: _Source, tables: list[pd.DataFrame],
             allow_different_original: bool) -> SyntheticData:
    """The release of the aligned ``tables``, once they are checked against what describes
    them: the manifest's sizes, columns, schema and checksum, or each other's columns."""
    check = "warn" if allow_different_original else "error"
    if source.r_object is not None:
        return SyntheticData(tables, **{k: v for k, v in source.r_object.items()
                                        if k != "datasets"}, original_check=check)
    man, p = source.manifest, source.folder
    if man is not None and p is not None:
        schema = check_tables(man, p, tables)
        flags = None
        if man.get("synthesized_records") is not None:
            flags = np.zeros(int(man["n_records"]), dtype=bool)
            flags[np.asarray(man["synthesized_records"], dtype=np.int64)] = True
        return SyntheticData(
            datasets=tables, method=man.get("method", "unknown"),
            settings=man.get("settings") or {}, random_seed=man.get("random_seed"),
            draw_index=man.get("draw_index"), schema=schema, synthesized_records=flags,
            extra=man.get("extra") or {}, original_fingerprint=man.get("original_fingerprint"),
            generation=man.get("generation"), proper=man.get("proper"),
            imputed_columns=man.get("imputed_columns"), model_id=man.get("model_id"),
            folder=str(p.resolve()), original_check=check)
    paths = source.files
    cols0 = list(tables[0].columns)
    for f, z in zip(paths, tables, strict=True):
        if len(z) == 0:
            raise ValidationError(f"synthetic file {str(f)!r} has no records; expected one "
                                  "dataset per file.", code="EMPTY_TABLE")
        if set(z.columns) != set(cols0):
            lacks = [c for c in cols0 if c not in z.columns]
            extra = [c for c in z.columns if c not in cols0]
            raise SchemaError(
                f"synthetic file {str(f)!r} "
                + (f"lacks column(s) {lacks}" if lacks else "")
                + (" and " if lacks and extra else "")
                + (f"has extra column(s) {extra}" if extra else "")
                + f" compared with {str(paths[0])!r} (columns {cols0}).",
                code="COLUMNS_DIFFER",
            )
    # columns are matched by name: a file written with another column order is reordered
    tables = [z if list(z.columns) == cols0 else z[cols0] for z in tables]
    return SyntheticData(tables, method="external", extra={"files": [str(f) for f in paths]},
                         original_check=check)


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


def _read_dataset(f: Path, man: dict[str, Any], p: Path) -> pd.DataFrame:
    """One dataset file of a release as its format holds it (its dtypes and categories: the
    alignment, ``_align``)."""
    fmt = man.get("file_format") or "parquet"
    if fmt == "parquet":
        return pd.read_parquet(f)
    dtypes = man.get("dtypes") or {}
    cats = man.get("categorical_dtypes") or {}
    if fmt == "csv":
        # texts as texts ("015" stays), categories by their own type; only an empty field is
        # missing, as the CSV reader reads it
        text = {c: str for c, t in dtypes.items()
                if t in ("str", "object", "string") or (c in cats and all(
                    isinstance(v, str) for v in cats[c]["categories"]))}
        z = pd.read_csv(f, dtype=text, keep_default_na=False, na_values=[""])
    else:
        from bayes_risk.data.statfiles import LABELS_FILE, read_stat_file

        schema = manifest_schema(man, p)
        with warnings.catch_warnings():
            # a transport file's formats are mapped back from the release's codebook below
            if fmt == "xpt":
                warnings.filterwarnings("ignore", message=".*VALUE_LABELS_NOT_FOUND")
            z = read_stat_file(f, numeric=schema.numeric if schema is not None else ())
        z.attrs.clear()
        if fmt == "xpt" and (p / LABELS_FILE).is_file():
            z = _levels_from_codes(z, read_json(p / LABELS_FILE, ""))
    return z


def _levels_from_codes(z: pd.DataFrame, labels: dict[str, Any]) -> pd.DataFrame:
    """A transport file's codes read back as the levels the release's codebook names."""
    from bayes_risk.data.statfiles import LETTER_MISSING, FileLabels

    fl = FileLabels.from_dict(labels)
    for c, pairs in fl.level_codes.items():
        if c not in z.columns:
            continue
        text = c in fl.text_columns
        back = {(str(k) if text else LETTER_MISSING[k.lower()] if isinstance(k, str)
                 else float(k)): lv for lv, k in pairs}
        col = z[c].astype(object) if text else pd.to_numeric(z[c], errors="coerce")
        z[c] = col.map(back).astype(object)
    return z


def _read_or_damaged(f: Path, man: dict[str, Any], p: Path) -> pd.DataFrame:
    """One dataset file (:func:`_read_dataset`); a file its reader cannot read (a truncated
    Parquet file, not the format the manifest says) is ``RELEASE_DAMAGED``, naming it."""
    from bayes_risk.exceptions import BayesRiskError

    try:
        return _read_dataset(f, man, p)
    except BayesRiskError:
        raise
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        fmt = man.get("file_format") or "parquet"
        shown = {"parquet": "Parquet", "csv": "CSV"}.get(fmt, f"a {fmt} file")
        raise damaged(p, f"{f.name} cannot be read as {shown} ({type(err).__name__}: "
                         f"{' '.join(str(err).split())[:160]})") from err
