"""The saved model folder, one format for every family (:doc:`/user_guide/synthesizers`).

A folder holds ``model.json`` (the format and its version, the registered name of the model,
its settings, schema and JSON-ready fitted state, and the SHA-256 of every other file and of its
own fields) beside the family's files: the Bayesian models' posterior draws (``posterior.nc``,
NetCDF), their convergence record (``convergence.json``) and, when synthesis copies records, the
confidential table (``data.parquet``); the tree synthesizers' numeric arrays (``arrays.npz``)
and fitted table (``data.parquet``). Never pickle. A folder is written to a temporary folder
beside its path and renamed over it, ``model.json`` last; it is read only after its version and
checksums are checked. A family declares what it stores (its ``model.json`` fields and files,
a :class:`Layout`); this module writes, checks and reads them.

What this module asks of a model, one protocol for every family (public methods):

- ``saved_settings()``: the JSON-ready settings ``model.json`` holds, which ``from_settings``
  reads back (``release_settings()`` with what a family's settings need written out);
- ``persisted_state()``: the fitted state as ``(state, arrays)``, its JSON-ready fields
  (``model.json``'s ``state``) and its named arrays (``arrays.npz``, each checked on loading by
  :func:`saved_array`); the Bayesian models' draws travel in ``posterior.nc`` besides;
- ``restore_state(state, arrays)``: the same on a new instance of ``from_settings``, whose
  schema (and, for the trees, fitted table) are set; a field that does not fit the others is a
  ``ValueError``, reported as a damaged folder (``MODEL_DAMAGED``) naming the folder, the file
  and the field. The Bayesian models call it from ``adopt(posterior, schema, n_records, data=,
  flags=, state=, arrays=)``, which fits a new instance to read draws; a Bayesian family
  declares its fields (``saved_state``: a :class:`StateField` each) and the base class writes
  and reads them.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bayes_risk.exceptions import ValidationError, on_command_line

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import xarray as xr

__all__ = [
    "ARRAYS_FILE", "BAYESIAN", "CONVERGENCE_FILE", "DATA_FILE", "FORMAT_VERSION", "Layout",
    "POSTERIOR_FILE", "SETTINGS_FILE", "StateField", "TREES", "damaged_on_error",
    "load_bayesian", "load_trees", "read_model_meta", "read_state", "save_bayesian",
    "save_trees", "saved_array", "state_fields", "verify_model_folder", "warm_up_writer",
    "write_folder", "write_model_json",
]

SETTINGS_FILE = "model.json"
POSTERIOR_FILE = "posterior.nc"
#: convergence record of a saved Bayesian model (R-hat / ESS of the diagnosed quantities)
CONVERGENCE_FILE = "convergence.json"
DATA_FILE = "data.parquet"
ARRAYS_FILE = "arrays.npz"
#: ``model.json``'s field of the checksums of the folder's files (and of its own other fields)
CHECKSUMS = "sha256"
#: the version of the folder layout every family writes: 2 since every folder records its
#: checksums (a folder of version 2 without them is damaged, not "older")
FORMAT_VERSION = 2
#: the first version whose folders always record their checksums
CHECKSUMED_SINCE = 2


@dataclasses.dataclass(frozen=True)
class Layout:
    """What a family's folders are, for the checks before reading one.

    Parameters
    ----------
    oldest : int
        The oldest format version read (0: folders written before the version was recorded).
    unverified : bool
        Whether a folder saved before ``model.json`` recorded checksums is read (with warning
        ``MODEL_UNVERIFIED``) rather than refused as damaged.
    """

    oldest: int
    unverified: bool


#: the Bayesian models: every folder they have written since their first release
BAYESIAN = Layout(oldest=0, unverified=True)
#: the tree synthesizers: their folders have always recorded the version and the checksums
TREES = Layout(oldest=1, unverified=False)


# ------------------------------------------------------------------------------- the folder
def write_folder(model: Any, path: str | os.PathLike[str], fields: Mapping[str, Any],
                 files: Mapping[str, Callable[[Path], None]]) -> Path:
    """Write a model's folder atomically: each of ``files`` by its writer (given the file's
    path), then ``model.json`` with the format header, ``fields`` and the checksums.

    Parameters
    ----------
    model : BaseSynthesizer
        The fitted model (its registered ``method_name`` and class name head ``model.json``).
    path : path-like
        The folder (replaced atomically if it exists; nothing is left half-written).
    fields : mapping
        The family's fields of ``model.json``, in their order.
    files : mapping of file name to writer
        The family's files, written in this order.

    Returns
    -------
    Path
        The folder written.
    """
    from bayes_risk._io import atomic_dir

    meta = {"format": "bayes-risk model", "format_version": FORMAT_VERSION,
            "method": model.method_name, "class": type(model).__name__, **fields}
    with atomic_dir(path) as tmp:
        for name, write in files.items():
            write(tmp / name)
        write_model_json(tmp, meta)  # last: the checksums of the files above
    return Path(path)


def open_folder(cls: type, path: str | os.PathLike[str], layout: Layout,
                required: Callable[[dict[str, Any]], Sequence[str]]) -> tuple[Path, dict[str, Any]]:
    """The folder and parsed ``model.json`` of a saved ``cls``, once its version and the
    checksums of the ``required(meta)`` files are checked (``MODEL_UNSUITED``,
    ``MODEL_FORMAT_VERSION``, ``MODEL_DAMAGED``)."""
    p, meta = read_model_meta(path, cls.method_name)
    version = _check_version(p, meta, layout, cls.method_name)
    verify_model_folder(p, meta, required=required(meta), legacy=layout.unverified,
                        checksummed=version >= CHECKSUMED_SINCE)
    return p, meta


def _check_version(p: Path, meta: dict[str, Any], layout: Layout, method: str) -> int:
    """The folder's format version; ``MODEL_FORMAT_VERSION`` unless it is one ``layout``
    reads."""
    version = meta.get("format_version", 0 if layout.oldest == 0 else None)
    whole = isinstance(version, int) and not isinstance(version, bool)
    if whole and layout.oldest <= version <= FORMAT_VERSION:
        return version
    if whole and version > FORMAT_VERSION:
        text = (f"{p} was written by a newer bayes-risk (format version {version}); upgrade "
                "bayes-risk to read it.")
    else:
        read = (f"format version {FORMAT_VERSION} only" if layout.oldest == FORMAT_VERSION
                else f"format versions {layout.oldest} to {FORMAT_VERSION}")
        text = (f"{p} is a saved {method!r} synthesizer of format version {version!r}; this "
                f"bayes-risk reads {read}. Use the bayes-risk release that wrote it, or fit the "
                "synthesizer again.")
    raise ValidationError(text, code="MODEL_FORMAT_VERSION")


def read_model_meta(path: str | os.PathLike[str], method: str | None = None
                    ) -> tuple[Path, dict[str, Any]]:
    """The folder and the parsed ``model.json`` of a saved model (``MODEL_UNSUITED`` unless it
    holds a ``method`` model, when given).

    Raises
    ------
    ValidationError
        ``NOT_A_MODEL`` when the folder has no ``model.json``; ``MODEL_UNSUITED``.
    """
    from bayes_risk._io import read_json

    p = Path(path)
    meta = read_json(p / SETTINGS_FILE,
                     f"{str(p)!r} is not a saved bayes-risk model: {SETTINGS_FILE} not found.",
                     code="NOT_A_MODEL")
    if method is not None and meta.get("method") != method:
        raise ValidationError(
            f"{p} holds a {meta.get('method')!r} model, not {method!r}; use "
            "bayes_risk.models.load_model(path).",
            code="MODEL_UNSUITED")
    return p, meta


def write_model_json(folder: Path, meta: dict[str, Any]) -> None:
    """Write ``model.json`` last, with the SHA-256 of every other file and of its own fields
    (checked by :func:`verify_model_folder`)."""
    from bayes_risk._checksums import folder_checksums
    from bayes_risk._io import to_jsonable, write_json

    body = to_jsonable({k: v for k, v in meta.items() if k != CHECKSUMS})
    write_json(folder / SETTINGS_FILE,
               {**body, CHECKSUMS: folder_checksums(folder, SETTINGS_FILE, body)})


def damaged_folder(p: Path, what: str) -> ValidationError:
    """The error of a model folder whose files are missing, unreadable or changed."""
    return ValidationError(
        f"the model folder {str(p)!r} is damaged: {what}; "
        + ("fit the model again with 'bayes-risk fit'." if on_command_line()
           else "save the model again (or fit it again)."),
        code="MODEL_DAMAGED",
    )


@contextmanager
def damaged_on_error(p: Path, what: str) -> Iterator[None]:
    """Report an error while reading model folder ``p`` as ``MODEL_DAMAGED``: ``what``, with
    the error's text (a ``ValidationError`` with a code passes through)."""
    try:
        yield
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, IndexError,
            AttributeError) as err:
        if isinstance(err, ValidationError) and err.code_given:
            raise
        raise damaged_folder(p, f"{what} ({type(err).__name__}: "
                                f"{' '.join(str(err).split())[:200]})") from err


def verify_model_folder(p: Path, meta: dict[str, Any], *, required: Sequence[str] = (),
                        legacy: bool = True, checksummed: bool = False) -> None:
    """Check a model folder (``p``, its parsed ``model.json`` ``meta``) against the checksums
    ``model.json`` records: ``MODEL_DAMAGED`` naming a missing ``required`` file or a changed
    one. A folder without checksums is refused unless ``legacy`` (Bayesian models of format
    version 0 or 1, saved before every folder recorded them): it is then loaded with warning
    ``MODEL_UNVERIFIED``; never when ``checksummed`` (a format version whose folders record
    every checksum: one missing is damage). The checksums are unkeyed SHA-256: they detect
    damage, not tampering (whoever can write a folder can write its checksums)."""
    from bayes_risk._checksums import checksum_problem
    from bayes_risk.exceptions import CALLER, DataWarning

    legacy = legacy and not checksummed

    for name in required:
        if not (p / name).is_file():
            raise damaged_folder(p, f"{name} is missing")
    sums = meta.get(CHECKSUMS)
    if not isinstance(sums, dict) or not all(isinstance(v, str) for v in sums.values()):
        if sums is not None or not legacy:
            raise damaged_folder(p, f"{SETTINGS_FILE} has no valid file checksums ({CHECKSUMS!r})"
                                 + (f", which every folder of its format version "
                                    f"{meta.get('format_version')!r} records"
                                    if checksummed and sums is None else ""))
        sums = {}
    unlisted = [n for n in required if sums and n not in sums]
    if unlisted:
        raise damaged_folder(p, f"{SETTINGS_FILE} records no checksum of {', '.join(unlisted)}")
    body = {k: v for k, v in meta.items() if k != CHECKSUMS}
    # model.json's own fields first, then the files it records
    for check in ({"files": False}, {"json_file": False}):
        problem = checksum_problem(p, sums, SETTINGS_FILE, body, **check)
        if problem is not None:
            raise damaged_folder(p, problem)
    own = sums.get(SETTINGS_FILE)
    if own is None and checksummed:
        raise damaged_folder(p, f"{SETTINGS_FILE} records no checksum of its own fields, which "
                             f"every folder of its format version {meta.get('format_version')!r} "
                             "records")
    if own is None:
        covered = [n for n in sums if n != SETTINGS_FILE]
        warnings.warn(DataWarning(
            f"the model folder {str(p)!r} was saved by an older bayes-risk without the "
            f"checksum of {SETTINGS_FILE}"
            + (f" (only {', '.join(covered)} are checked)" if covered else
               " or of its other files") + ": damage to its settings, roles or "
            "fitted state cannot be detected (MODEL_UNVERIFIED). Once you are satisfied "
            "that it is intact, save it again to record them: "
            "bayes_risk.models.load_model(old).save(new).", code="MODEL_UNVERIFIED"),
            skip_file_prefixes=CALLER)


@dataclasses.dataclass(frozen=True)
class StateField:
    """A fitted attribute kept in ``model.json``'s ``state``, declared by a family
    (``BayesianSynthesizer.saved_state``: field name to ``StateField``): the model's
    ``attribute``, the ``kind`` it is written and read back as (``list``, ``dict``, ``bool``,
    ``float``, ``str``; ``None`` stays ``None``), its ``default`` (a model without it: draws
    made elsewhere; a folder saved before the field) and the ``check`` a value read back must
    pass (``None`` fails it), which ``asks`` puts in words."""

    attribute: str
    kind: Callable[[Any], Any]
    default: Any = None
    check: Callable[[Any], bool] | None = None
    asks: str = ""

    def value(self, model: Any) -> Any:
        """The attribute of ``model`` as written (its default when it has none)."""
        raw = getattr(model, self.attribute, self.default)
        return None if raw is None else self.kind(raw)

    def read(self, state: Mapping[str, Any], name: str) -> Any:
        """Field ``name`` of a saved ``state``; a ``ValueError`` when it fails ``check``."""
        raw = state.get(name, self.default)
        value = None if raw is None else self.kind(raw)
        if self.check is not None and (value is None or not self.check(value)):
            raise ValueError(f"{SETTINGS_FILE}'s state field {name!r} is {raw!r}, not "
                             f"{self.asks}")
        return value


#: the dtype kinds ``saved_array`` names in its error
_KINDS = {"b": "booleans", "i": "integers", "u": "integers", "f": "floats"}


def saved_array(arrays: Mapping[str, np.ndarray], name: str, kind: str,
                shape: tuple[int | None, ...] | None = None) -> np.ndarray:
    """The array ``name`` of a saved fitted state, checked as PyMC's ``sampling_state`` setter
    checks a state it is given: present, of dtype kind ``kind`` (numpy's letters: ``"b"``,
    ``"iu"``, ``"f"``, ``"fiu"`` ...) and, where given, of ``shape`` (``None``: any size).

    Parameters
    ----------
    arrays : mapping of str to ndarray
        The saved arrays (``arrays.npz``).
    name : str
        The field.
    kind : str
        The dtype kinds accepted.
    shape : tuple, optional
        The shape (a ``None`` entry: any size on that axis).

    Returns
    -------
    ndarray
        The array, as stored (its dtype unchanged: the numbers are read back as written).

    Raises
    ------
    ValueError
        Naming the file and the field; reported as ``MODEL_DAMAGED`` by the loader.
    """
    if name not in arrays:
        raise ValueError(f"{ARRAYS_FILE} has no field {name!r}")
    a = np.asarray(arrays[name])
    if a.dtype.kind not in kind:
        want = " or ".join(dict.fromkeys(_KINDS[k] for k in kind))
        raise ValueError(f"{ARRAYS_FILE} field {name!r} holds {a.dtype} values, not {want}")
    if shape is not None and (a.ndim != len(shape) or any(
            w is not None and n != w for n, w in zip(a.shape, shape, strict=True))):
        want_shape = tuple("any" if w is None else w for w in shape)
        raise ValueError(f"{ARRAYS_FILE} field {name!r} has shape {a.shape}, not {want_shape}")
    return a


def state_fields(model: Any) -> tuple[dict[str, Any], dict[str, Callable[[Path], None]]]:
    """A fitted model's ``persisted_state()`` as its ``model.json`` fields (``state``, and
    ``arrays_file`` when it has arrays) and the writer of ``arrays.npz``."""
    from bayes_risk._io import to_jsonable

    state, arrays = model.persisted_state()
    for k, a in arrays.items():
        if np.asarray(a).dtype == object:  # pragma: no cover - guarded by the families
            raise ValidationError(
                f"array {k!r} has dtype object; it cannot be saved without pickle.",
                code="MODEL_NOT_SAVABLE")
    fields: dict[str, Any] = {"arrays_file": ARRAYS_FILE} if arrays else {}
    files: dict[str, Callable[[Path], None]] = {ARRAYS_FILE: lambda f: np.savez(
        f, **{k: np.asarray(v) for k, v in arrays.items()})} if arrays else {}
    return {**fields, "state": to_jsonable(state)}, files


def read_state(p: Path, meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The ``(state, arrays)`` that :func:`state_fields` wrote in folder ``p`` (``meta``: its
    ``model.json``), for the model's ``restore_state``."""
    state = meta.get("state") or {}
    if not isinstance(state, dict):
        raise damaged_folder(p, f"{SETTINGS_FILE}'s field 'state' is not an object")
    arrays: dict[str, np.ndarray] = {}
    if meta.get("arrays_file") is not None:
        with damaged_on_error(p, f"{ARRAYS_FILE} cannot be read"), \
                np.load(p / ARRAYS_FILE, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    return state, arrays


# ------------------------------------------------------------------ the Bayesian models' files
def warm_up_writer() -> None:
    """Write a one-value DataTree to memory: the one-off costs of xarray's first NetCDF write,
    paid while the sampler runs (``bayes_risk._lazy.overlap``)."""
    import io

    from bayes_risk._lazy import lean_xarray

    xr = lean_xarray()  # not dask's import with it (issue 69)
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"x": ("draw", np.zeros(1))})})
    tree.to_netcdf(io.BytesIO(), engine="h5netcdf")


def read_posterior(p: Path) -> xr.DataTree:
    """The posterior DataTree of the saved model folder ``p`` (a damaged file named)."""
    from bayes_risk._lazy import lean_xarray

    xr = lean_xarray()  # not dask's import with it (issue 69)
    with damaged_on_error(p, f"{POSTERIOR_FILE} cannot be read"), \
            xr.open_datatree(p / POSTERIOR_FILE, engine="h5netcdf") as dt:
        return dt.load().copy()


def save_bayesian(model: Any, path: str | os.PathLike[str]) -> Path:
    """Write a fitted Bayesian model's folder: ``posterior.nc`` (its draws, with the group
    ``label_invariant`` that ArviZ reads), ``data.parquet`` when synthesis copies records,
    ``convergence.json`` and ``model.json`` (see
    :meth:`~bayes_risk.models._bayesian.fitted.FittedPosterior.save`)."""
    from bayes_risk._io import write_json
    from bayes_risk._lazy import lean_xarray
    from bayes_risk.data.provenance import model_id
    from bayes_risk.models._bayesian.convergence_report import label_invariant

    flags, data = model.synthesized_records_, model.data_
    state, state_files = state_fields(model)
    fields = {
        "settings": model.saved_settings(),
        "schema": model.schema_.to_dict(),
        "n_records": model.n_records,
        "n_draws": model.n_draws,
        "draw_order": "chain-major: h = chain * draws_per_chain + draw",
        "synthesized_records": None if flags is None else
        [int(i) for i in np.flatnonzero(flags)],
        "data_file": DATA_FILE if data is not None else None,
        "confidential": data is not None,
        **state,
        # a hash of the encoded fitted table (never the data): checks the original later
        "data_fingerprint": getattr(model, "data_fingerprint_", None),
        "imputed_columns": getattr(model, "imputed_columns_", None),
        "data_column_fingerprints": (getattr(model, "original_fingerprint_", None)
                                     or {}).get("columns"),
        "model_id": model_id(model),
    }
    label_invariant(model)  # the diagnosed quantities travel with the draws
    lean_xarray()  # the NetCDF write without dask's import (issue 69)
    files: dict[str, Callable[[Path], None]] = {
        POSTERIOR_FILE: lambda f: model.posterior_.to_netcdf(f, engine="h5netcdf"),
        **state_files}
    if data is not None:
        files[DATA_FILE] = lambda f: data.to_parquet(f, index=False)
    files[CONVERGENCE_FILE] = lambda f: write_json(f, model.convergence_summary())
    return write_folder(model, path, fields, files)


def load_bayesian(cls: type, path: str | os.PathLike[str],
                  approve: Callable[[Path, dict[str, Any]], dict[str, Any]] | None = None
                  ) -> Any:
    """Read a folder written by :func:`save_bayesian` into a new fitted ``cls`` (its
    convergence table read, not remade) — see
    :meth:`~bayes_risk.models._bayesian.fitted.FittedPosterior.load`.
    ``approve(folder, settings)`` gives the settings the model is built with, once the folder's
    version and checksums are checked and before anything else is read (the PyMC model's
    function named by the user, :func:`~bayes_risk.models.pymc_model.function.approve_function`)."""
    import pandas as pd

    from bayes_risk.data.schema import Schema

    p, meta = open_folder(cls, path, BAYESIAN, lambda meta: [POSTERIOR_FILE] + [
        meta[k] for k in ("data_file", "arrays_file") if isinstance(meta.get(k), str)])
    # JSON has no tuples: sequence settings come back as tuples (as the defaults are)
    settings = meta.get("settings", {})
    if not isinstance(settings, dict):
        raise damaged_folder(p, f"{SETTINGS_FILE}'s settings are not an object")
    settings = {k: tuple(v) if isinstance(v, list) else v for k, v in settings.items()}
    if approve is not None:
        settings = approve(p, settings)
    posterior = read_posterior(p)
    state, arrays = read_state(p, meta)
    # a folder without checksums (an older bayes-risk) whose model.json was edited
    with damaged_on_error(p, f"{SETTINGS_FILE} does not describe a fitted {cls.__name__}"):
        data = pd.read_parquet(p / meta["data_file"]) if meta.get("data_file") else None
        flags = None
        if meta.get("synthesized_records") is not None:
            flags = np.zeros(int(meta["n_records"]), dtype=bool)
            flags[np.asarray(meta["synthesized_records"], dtype=np.int64)] = True
        obj = cls.from_settings(settings).adopt(
            posterior, Schema.from_dict(meta["schema"]), int(meta["n_records"]), data=data,
            flags=flags, state=state, arrays=arrays)
    imputed = meta.get("imputed_columns")
    if isinstance(imputed, list):  # a model saved before it was recorded keeps its own
        obj.imputed_columns_ = [str(c) for c in imputed if c in obj.schema_.names]
    obj.data_fingerprint_ = meta.get("data_fingerprint")
    obj.original_fingerprint_ = None if obj.data_fingerprint_ is None else {
        "table": obj.data_fingerprint_, "columns": meta.get("data_column_fingerprints")}
    return obj


# ------------------------------------------------------------------- the tree synthesizers'
def save_trees(model: Any, path: str | os.PathLike[str], *, data: pd.DataFrame) -> Path:
    """Write a fitted tree synthesizer's folder: its settings and fitted state
    (``persisted_state()``: ``model.json``'s ``state`` and ``arrays.npz``) and the fitted table
    ``data`` (``data.parquet``) — see :meth:`TreeSynthesizer.save`."""
    from bayes_risk._io import to_jsonable
    from bayes_risk.data.provenance import model_id

    fp = getattr(model, "original_fingerprint_", None) or {}
    state, state_files = state_fields(model)
    fields: dict[str, Any] = {
        "settings": model.saved_settings(),
        "schema": model.schema_.to_dict(),
        "confidential": True,
        "data_file": DATA_FILE,
        **state,
        # Parquet reads text columns back as pandas' string dtype: object columns are restored
        "object_columns": [str(c) for c in data.columns if data[c].dtype == object],
        # hashes of the encoded fitted table (never the data): checks the original later
        "data_fingerprint": fp.get("table"),
        "original_fingerprint": to_jsonable(fp) if fp else None,
        # the identity its releases record (bayes_risk.data.provenance.model_id)
        "model_id": model_id(model),
    }
    return write_folder(model, path, fields, {
        **state_files, DATA_FILE: lambda f: data.to_parquet(f, index=True)})


def load_trees(
    cls: type,
    path: str | os.PathLike[str],
    restore: Callable[[Any, dict[str, Any], Mapping[str, np.ndarray], pd.DataFrame], None],
) -> Any:
    """Read a folder written by :func:`save_trees` into a new fitted ``cls`` (its fitted
    table and state set by ``restore(model, state, arrays, data)``, which calls the model's
    ``restore_state``; a ``ValueError`` there means a damaged folder)."""
    import pandas as pd

    from bayes_risk.data.schema import Schema

    p, meta = open_folder(cls, path, TREES, lambda meta: (ARRAYS_FILE, DATA_FILE))
    state, arrays = read_state(p, {**meta, "arrays_file": ARRAYS_FILE})  # always written
    with damaged_on_error(p, f"{DATA_FILE} cannot be read"):
        data = pd.read_parquet(p / DATA_FILE)
        for c in meta.get("object_columns") or []:
            data[c] = data[c].astype(object)
    settings = dict(meta.get("settings") or {})
    seed = settings.get("random_seed")
    if not isinstance(seed, (int, list)) or isinstance(seed, bool):
        settings["random_seed"] = None  # e.g. "<numpy.random.Generator>": not replayable
    with damaged_on_error(p, f"{SETTINGS_FILE} and {ARRAYS_FILE} do not describe a fitted "
                             f"{cls.__name__}"):
        # as load_bayesian: flat settings grouped again (the tree options), defaults left out
        model = cls.from_settings(settings)
        model.schema_ = Schema.from_dict(meta["schema"])
        restore(model, state, arrays, data)
    model.original_fingerprint_ = meta.get("original_fingerprint")
    return model
