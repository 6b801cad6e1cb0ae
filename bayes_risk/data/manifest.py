"""A release folder's ``manifest.json``: its name, format version and fields, and the checks
of the folder by it, in the order the reading of a release (``release_reader.read_release``)
runs them: the manifest before any dataset is read, each dataset file's checksum before it is
read, then the datasets and the manifest's own checksum once every table is read."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bayes_risk._io import read_json
from bayes_risk.data.schema import Schema
from bayes_risk.exceptions import CALLER, DataWarning, ValidationError, on_command_line

__all__ = ["MANIFEST_NAME", "FORMAT_VERSION", "CHECKSUMS", "GENERATION_SCHEMES", "read_manifest",
           "check_manifest", "check_dataset_file", "check_tables", "manifest_schema",
           "bad_manifest", "damaged", "check_distinct_files"]

MANIFEST_NAME = "manifest.json"
#: 2 since every manifest records checksums: a folder of version 2 without them is damaged
FORMAT_VERSION = 2
#: the manifest's field of the SHA-256 of the dataset files (and of its own other fields),
#: as a model folder's ``model.json`` records them
CHECKSUMS = "sha256"
#: how a release was generated (methods, Combining rules): partial synthesis; full synthesis
#: redrawing the same n units; samples from synthetic populations; a sample of the census from
#: partially synthetic populations (sampling with synthesis, Drechsler & Reiter 2010)
GENERATION_SCHEMES = ("partial", "full-same-n", "full-population", "partial-sample")


def read_manifest(p: Path) -> dict[str, Any]:
    """A release folder's manifest, checked before any dataset is read by it.

    Raises
    ------
    ValidationError
        ``NOT_A_RELEASE`` without a bayes-risk manifest; ``MANIFEST_INVALID``
        (:func:`check_manifest`, a newer format version); ``DUPLICATE_DATASETS``;
        ``RELEASE_DAMAGED`` when a manifest of this format version records no checksums.

    Warns
    -----
    DataWarning
        ``RELEASE_UNVERIFIED``: a folder written before the manifest recorded checksums.
    """
    man = read_json(p / MANIFEST_NAME, f"{p} is not a SyntheticData folder: {MANIFEST_NAME} "
                    "not found.", code="NOT_A_RELEASE")
    if not isinstance(man, dict) or man.get("format") != "bayes-risk SyntheticData":
        raise ValidationError(f"{p / MANIFEST_NAME} is not a bayes-risk SyntheticData "
                              "manifest.", code="NOT_A_RELEASE")
    check_manifest(man, p)
    check_distinct_files([p / f for f in man["files"]])  # a link to another dataset's file
    version = man.get("format_version") or 0
    if version > FORMAT_VERSION:
        raise bad_manifest(p, f"its format version {version} is newer than this "
                           f"bayes-risk reads ({FORMAT_VERSION}); upgrade bayes-risk")
    if not man.get(CHECKSUMS) and version >= 2:
        # deleted checksums are damage, not an older release (the checksums detect damage,
        # not tampering: whoever can write a folder can write its checksums)
        raise damaged(p, f"{MANIFEST_NAME} records no checksums, which every release of "
                      f"its format version {version} records")
    if not man.get(CHECKSUMS):
        _warn_unverified(p)
    return man


def check_dataset_file(man: dict[str, Any], p: Path, fname: str) -> Path:
    """The dataset file ``fname`` of the folder ``p``, once it is there and its SHA-256 is the
    manifest's (checked before it is read: a truncated Parquet file is no pyarrow traceback).

    Raises
    ------
    ValidationError
        ``MANIFEST_INVALID`` for a missing file; ``RELEASE_DAMAGED`` for another checksum.
    """
    from bayes_risk._checksums import checksum_problem

    f = p / fname
    if not f.is_file():
        raise ValidationError(f"{p}: dataset file {fname} listed in the manifest is "
                              "missing.", code="MANIFEST_INVALID")
    sums = man.get(CHECKSUMS) or {}
    if sums:
        problem = checksum_problem(p, {fname: sums[fname]}, MANIFEST_NAME,
                                   _manifest_body(man), json_file=False)
        if problem is not None:
            raise damaged(p, problem)
    return f


def check_tables(man: dict[str, Any], p: Path, datasets: list[pd.DataFrame]) -> Schema | None:
    """The manifest's schema, once the ``datasets`` read by it have its sizes and columns and
    the manifest its own checksum.

    Raises
    ------
    ValidationError
        ``MANIFEST_INVALID``, naming the field or dataset file.
    """
    from bayes_risk._checksums import checksum_problem

    _check_datasets_match(man, p, datasets)
    schema = manifest_schema(man, p)
    # last, so that a field's own check names it first: an edit the fields allow (another
    # model_id, fingerprint or role) would otherwise pass as the release's provenance
    problem = checksum_problem(p, man.get(CHECKSUMS) or {}, MANIFEST_NAME, _manifest_body(man),
                               files=False)
    if problem is not None:
        raise bad_manifest(p, problem)
    return schema


def _manifest_body(man: dict[str, Any]) -> dict[str, Any]:
    """The manifest's fields its own checksum covers (all but the checksums)."""
    return {k: v for k, v in man.items() if k != CHECKSUMS}


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_str_list(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(v, str) for v in x)


#: the fields of ``manifest.json``: (test, what is expected, required). A field the manifest does
#: not hold is ``None``; every check names the field and what was found.
_MANIFEST_FIELDS: dict[str, tuple[Any, str, bool]] = {
    "format_version": (_is_int, "an integer", False),
    "method": (lambda x: isinstance(x, str), "a text", False),
    "settings": (lambda x: isinstance(x, dict), "an object", False),
    "random_seed": (lambda x: _is_int(x) or isinstance(x, list), "an integer", False),
    "m": (lambda x: _is_int(x) and x >= 1, "an integer >= 1", False),
    "n_records": (lambda x: _is_int(x) and x >= 0, "an integer >= 0", True),
    "n_records_per_dataset": (lambda x: isinstance(x, list) and all(_is_int(v) and v >= 0
                                                                    for v in x),
                              "a list of integers >= 0", False),
    "columns": (_is_str_list, "a list of column names", False),
    "files": (lambda x: _is_str_list(x) and len(x) >= 1, "a non-empty list of file names", True),
    "categorical_dtypes": (lambda x: isinstance(x, dict), "an object", False),
    "draw_index": (lambda x: isinstance(x, list) and all(_is_int(v) for v in x),
                   "a list of integers", False),
    "schema": (lambda x: isinstance(x, dict), "an object", False),
    "synthesized_records": (lambda x: isinstance(x, list) and all(_is_int(v) for v in x),
                            "a list of record numbers", False),
    "extra": (lambda x: isinstance(x, dict), "an object", False),
    "original_fingerprint": (lambda x: isinstance(x, (str, dict)), "a fingerprint", False),
    "generation": (lambda x: x in GENERATION_SCHEMES,
                   "one of " + ", ".join(repr(g) for g in GENERATION_SCHEMES), False),
    "proper": (lambda x: isinstance(x, bool), "true or false", False),
    "imputed_columns": (_is_str_list, "a list of column names", False),
    CHECKSUMS: (lambda x: isinstance(x, dict) and all(
        isinstance(k, str) and isinstance(v, str) and len(v) == 64 for k, v in x.items()),
        "an object of SHA-256 checksums by file name", False),
    "file_format": (lambda x: x in ("parquet", "csv", "sav", "zsav", "dta", "xpt"),
                    "one of parquet, csv, sav, zsav, dta, xpt", False),
    "dtypes": (lambda x: isinstance(x, dict) and all(isinstance(v, str) for v in x.values()),
               "an object of dtype names", False),
    "model_id": (lambda x: isinstance(x, str) and len(x) == 64
                 and all(ch in "0123456789abcdef" for ch in x), "a SHA-256 (64 hexadecimal "
                 "digits)", False),
}


def damaged(p: Path, text: str) -> ValidationError:
    """The error of a release folder whose dataset file was changed or cannot be read."""
    return ValidationError(f"the release folder {str(p)!r} is damaged: {text}. A dataset changed "
                           "or replaced after synthesis is not the release its manifest "
                           f"describes; write the release again with {_writer()}, or copy it "
                           "again from where it was written.",
                           code="RELEASE_DAMAGED")


def _warn_unverified(p: Path) -> None:
    warnings.warn(DataWarning(
        f"the release folder {str(p)!r} was written by an older bayes-risk, whose manifest "
        "records no checksums of its dataset files: a dataset changed, truncated or replaced "
        "by another since cannot be detected (RELEASE_UNVERIFIED). Once you are satisfied that "
        "it is intact, write it again to record them: "
        "bayes_risk.SyntheticData.load(old).save(new).", code="RELEASE_UNVERIFIED"),
        skip_file_prefixes=CALLER)


def bad_manifest(p: Path, text: str) -> ValidationError:
    return ValidationError(f"{p / MANIFEST_NAME}: {text}. The manifest was altered or damaged; "
                           f"write the release again with {_writer()}.", code="MANIFEST_INVALID")


def _writer() -> str:
    """What writes a release, in the caller's words."""
    return "'bayes-risk synthesize'" if on_command_line() else "SyntheticData.save"


def check_manifest(man: dict[str, Any], folder: str | os.PathLike[str]) -> None:
    """Validate a release manifest before anything is read by it.

    Raises
    ------
    ValidationError
        ``MANIFEST_INVALID``, naming the field and what was found.
    """
    p = Path(folder)
    for name, (test, expected, required) in _MANIFEST_FIELDS.items():
        value = man.get(name)
        if value is None:
            if required:
                raise bad_manifest(p, f"field {name!r} is missing")
            continue
        if not test(value):
            raise bad_manifest(p, f"field {name!r} must be {expected}; found {value!r}"[:300])
    files = man["files"]
    dup = sorted({f for f in files if files.count(f) > 1})
    if dup:
        raise bad_manifest(p, f"'files' lists {dup} more than once (each dataset is one file)")
    from bayes_risk.data.statfiles import RELEASE_FORMATS

    fmt = man.get("file_format") or "parquet"
    suffix = RELEASE_FORMATS[fmt]
    root = p.resolve()
    for f in files:
        fp = Path(f)
        if fp.is_absolute() or ".." in fp.parts or not f.strip():
            raise bad_manifest(p, f"dataset file {f!r} is not a file of the release folder")
        if root not in (p / fp).resolve().parents:
            raise bad_manifest(p, f"dataset file {f!r} lies outside the release folder")
        if fp.suffix.lower() != suffix:
            raise bad_manifest(p, f"dataset file {f!r} is not a {fmt} file ('file_format' is "
                                f"{fmt!r})")
    sums = man.get(CHECKSUMS)
    if sums is not None:
        unlisted = [f for f in [*files, MANIFEST_NAME] if f not in sums]
        if unlisted:
            raise bad_manifest(p, f"{CHECKSUMS!r} records no checksum of {unlisted}")
    if man.get("m") is not None and man["m"] != len(files):
        raise bad_manifest(p, f"'m' is {man['m']} but 'files' lists {len(files)} dataset(s)")
    sizes = man.get("n_records_per_dataset")
    if sizes is not None and (len(sizes) != len(files) or sizes[0] != man["n_records"]):
        raise bad_manifest(p, f"'n_records_per_dataset' {sizes} does not give one size per "
                            f"dataset file ({len(files)}) starting with 'n_records' "
                            f"({man['n_records']})")
    imp, cols = man.get("imputed_columns"), man.get("columns")
    if imp is not None and cols is not None and any(c not in cols for c in imp):
        bad = [c for c in imp if c not in cols]
        raise bad_manifest(p, f"'imputed_columns' names {bad}, not among 'columns' {cols}")
    rec = man.get("synthesized_records")
    if rec is not None:
        n = man["n_records"]
        out = [r for r in rec if not 0 <= r < n]
        if out:
            raise bad_manifest(p, f"'synthesized_records' holds {out[0]}, outside 0..{n - 1} "
                                f"('n_records' {n})")
        if len(set(rec)) != len(rec):
            raise bad_manifest(p, "'synthesized_records' lists a record more than once")


def _check_datasets_match(man: dict[str, Any], p: Path, datasets: list[pd.DataFrame]) -> None:
    """Each dataset has the manifest's number of records and columns."""
    sizes = man.get("n_records_per_dataset")
    field = "'n_records_per_dataset' gives" if sizes else "'n_records' is"
    cols = man.get("columns")
    for f, z, n in zip(man["files"], datasets, sizes or [man["n_records"]] * len(datasets),
                       strict=True):
        if len(z) != n:
            raise bad_manifest(p, f"{f} has {len(z)} records but {field} {n}")
        if cols is not None and [str(c) for c in z.columns] != cols:
            raise bad_manifest(p, f"{f} has columns {[str(c) for c in z.columns]}, the manifest "
                                f"lists {cols}")


def manifest_schema(man: dict[str, Any], p: Path) -> Schema | None:
    if man.get("schema") is None:
        return None
    try:
        return Schema.from_dict(man["schema"])
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        if isinstance(err, ValidationError):
            raise
        raise bad_manifest(p, f"field 'schema' is malformed ({err!r})") from err


def check_distinct_files(paths: Sequence[Any], what: str = "synthetic") -> None:
    """Refuse the same file (by file-system identity: a path twice, a link) given as two
    datasets of a release (``DUPLICATE_DATASETS``)."""
    seen: dict[tuple[int, int], int] = {}
    for l, p in enumerate(paths):
        try:
            st = os.stat(p)
        except OSError:
            continue  # the reader reports a missing or unreadable file
        k = seen.setdefault((st.st_dev, st.st_ino), l)
        if k != l:
            raise ValidationError(f"{what} datasets {k + 1} and {l + 1} are the same file "
                                  f"({str(paths[k])!r} and {str(p)!r}: the same path, or a link "
                                  "to the other's file). Counted as two draws of the synthesizer "
                                  "it would make m look larger than it is and understate the "
                                  "between-dataset variance and every combined interval; give "
                                  "each synthetic dataset's file once.", code="DUPLICATE_DATASETS")
