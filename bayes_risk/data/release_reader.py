"""The one reading of a synthetic release into its parts, the fields of
:class:`~bayes_risk.data.synthetic.SyntheticData` (``read_synthetic``, ``SyntheticData.load``),
each step once and in this order: what describes it (a folder's manifest, checked by
:mod:`bayes_risk.data.manifest`; an R file's ``syn()`` object; the files themselves), its
tables, each aligned as soon as it is read, then the checks of the whole."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._io import read_json
from bayes_risk.data.manifest import (
    MANIFEST_NAME,
    bad_manifest,
    check_dataset_file,
    check_distinct_files,
    check_tables,
    damaged,
    manifest_schema,
    read_manifest,
)
from bayes_risk.exceptions import SchemaError, ValidationError, on_command_line

__all__ = ["read_release"]


def read_release(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str], *,
                 original: pd.DataFrame | None = None, allow_different_original: bool = False,
                 missing_labels: Mapping[str, Sequence[str]] | None = None,
                 load: bool = False) -> dict[str, Any]:
    """The one reading of a release, each step once and in this order: what describes it (a
    folder's manifest, an R file's ``syn()`` object, or the files themselves), its tables,
    each aligned as soon as it is read (to the manifest's dtypes, or to ``original``: one
    table's copies alive at a time), then the checks of the whole; the release's
    ``SyntheticData`` fields, which the caller builds it from (its own checks last).
    ``load``: ``paths`` is the folder given to ``SyntheticData.load``, whose manifest is
    required."""
    source = _manifest_source(Path(paths)) if load else _describe(paths)  # type: ignore[arg-type]
    return _checked(source, list(_tables(source, original, missing_labels)),
                    allow_different_original)


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
    """The first step of ``read_release`` for :func:`read_synthetic`'s ``paths``."""
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
        writer = "'bayes-risk synthesize'" if on_command_line() else "SyntheticData.save"
        raise ValidationError(f"{str(paths[0])!r} is a folder without {MANIFEST_NAME}; pass the "
                              f"synthetic files themselves or a folder written by {writer}.",
                              code="NOT_A_RELEASE")
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
             allow_different_original: bool) -> dict[str, Any]:
    """The release's fields of the aligned ``tables``, once they are checked against what
    describes them: the manifest's sizes, columns, schema and checksum, or each other's
    columns."""
    check = "warn" if allow_different_original else "error"
    if source.r_object is not None:
        return {**source.r_object, "datasets": tables, "original_check": check}
    man, p = source.manifest, source.folder
    if man is not None and p is not None:
        schema = check_tables(man, p, tables)
        flags = None
        if man.get("synthesized_records") is not None:
            flags = np.zeros(int(man["n_records"]), dtype=bool)
            flags[np.asarray(man["synthesized_records"], dtype=np.int64)] = True
        return dict(
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
    return dict(datasets=tables, method="external", extra={"files": [str(f) for f in paths]},
                original_check=check)


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


def _restore_categoricals(df: pd.DataFrame, spec: dict[str, Any] | None) -> pd.DataFrame:
    for c, d in (spec or {}).items():
        if c in df.columns:
            df[c] = pd.Categorical(df[c].to_numpy(dtype=object), categories=d["categories"],
                                   ordered=d["ordered"])
    return df
