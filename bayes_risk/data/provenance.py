"""Provenance: does a model belong to a release, and are a release's datasets distinct?

See :doc:`/user_guide/provenance`.
"""

from __future__ import annotations

import hashlib
import json
import warnings
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bayes_risk.data.manifest import check_distinct_files
from bayes_risk.data.synthetic import SyntheticData, generation_from_roles
from bayes_risk.exceptions import CALLER, BayesRiskError, DataWarning, ValidationError, arg_name

__all__ = ["model_release", "model_id", "identity_hash", "identity_settings", "check_release_model",
           "release_model_problem", "ModelCheck", "check_distinct_datasets", "duplicate_pairs",
           "duplicate_codes", "check_distinct_files", "release_schema"]

#: settings that do not change what a model synthesizes or how it scores a release (progress
#: display, the default seed of later calls, parallelism): left out of its identity, so that a
#: model loaded with ``--quiet`` is the model that was saved
_NOT_IDENTITY = frozenset({"progressbar", "random_seed", "n_jobs", "cores"})


def model_release(model: Any, datasets: list[pd.DataFrame], *, random_seed: Any,
                  records: np.ndarray | None, extra: dict[str, Any], proper: bool,
                  imputed_columns: list[str] | None,
                  draw_index: list[int] | None = None) -> SyntheticData:
    """The release of ``datasets``, synthesized by the fitted ``model`` from ``random_seed``,
    with its provenance: the model's method, settings (as its saved folder holds them),
    schema, fitted table's fingerprint and identity, and the ``records`` it replaced."""
    from bayes_risk._io import to_jsonable
    from bayes_risk._rng import seed_to_json

    return SyntheticData(
        datasets=datasets, method=model.method_name, settings=to_jsonable(model.saved_settings()),
        random_seed=seed_to_json(random_seed), draw_index=draw_index, schema=model.schema_,
        synthesized_records=records, extra=extra,
        original_fingerprint=getattr(model, "original_fingerprint_", None),
        model_id=model_id(model), generation=generation_from_roles(model.schema_, records),
        proper=proper, imputed_columns=imputed_columns)


def identity_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A model's settings as its identity and a release's manifest compare them: JSON values
    (tuples as lists), without the settings that change neither its draws nor its scores."""
    from bayes_risk._io import to_jsonable

    return json.loads(json.dumps(to_jsonable(
        {k: v for k, v in settings.items() if k not in _NOT_IDENTITY}), default=str))


def identity_hash(parts: Mapping[str, Any], arrays: Mapping[str, Any]) -> str:
    """SHA-256 of a model's JSON-ready ``parts`` and named arrays (widened dtypes).

    Releases record it: changing what is hashed makes every older release refuse its model."""
    from bayes_risk._checksums import json_sha256
    from bayes_risk._io import to_jsonable

    h = hashlib.sha256(json_sha256(json.loads(json.dumps(to_jsonable(dict(parts)),
                                                         default=str))).encode())
    for name in sorted(arrays):
        a = np.asarray(arrays[name])
        kind = a.dtype.kind
        # no copy of an array already of its widened dtype and contiguous: a posterior's draws
        # are hashed in place (they were copied twice, the fit's peak memory)
        a = a.astype({"b": np.uint8, "i": np.int64, "u": np.int64}.get(kind, np.float64),
                     copy=False) if kind in "biuf" else np.asarray(a.astype(str), dtype=object)
        h.update(f"|{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(np.ascontiguousarray(a) if a.dtype != object
                 else pd.util.hash_array(a.ravel()))
    return h.hexdigest()


def _synthesizer(model: Any) -> Any:
    """The synthesizer behind a model: a plug-in likelihood's (CARTPlugin, RFPlugin), else the
    model itself."""
    return getattr(model, "synthesizer", None) or model


def model_id(model: Any) -> str | None:
    """The identity of a fitted model: a SHA-256 of its content, or ``None`` when it has none.

    Saving and loading keep it (:doc:`/user_guide/provenance`).

    Parameters
    ----------
    model : fitted model
        A synthesizer of the package (or a plug-in likelihood of one); a model without an
        identity (:class:`~bayes_risk.models.ArrayModel`, another package's) gives ``None``.

    Returns
    -------
    str or None
        64 hexadecimal digits.
    """
    synth = _synthesizer(model)
    parts = getattr(synth, "_identity", None)
    if parts is None:
        return None
    try:
        json_parts, arrays = parts()
    except BayesRiskError:  # not fitted, or a state that cannot be described
        return None
    return identity_hash(json_parts, arrays)


def _short(x: Any) -> str:
    text = json.dumps(x, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _model_settings(synth: Any) -> dict[str, Any] | None:
    """The model's settings as its releases record them (``None``: it has none)."""
    for name in ("saved_settings", "release_settings", "get_params"):
        get = getattr(synth, name, None)
        if get is not None:
            try:
                return identity_settings(get())
            except (TypeError, ValueError):
                return None
    return None


def _model_records(synth: Any) -> np.ndarray | None:
    """The records the model synthesizes (``None``: every record, or not known)."""
    for attr in ("synthesized_records_", "records_"):
        flags = getattr(synth, attr, None)
        if isinstance(flags, np.ndarray) and flags.dtype == bool:
            return None if flags.all() else flags
    return None


def _model_n(synth: Any) -> int | None:
    for attr in ("n_records", "n_records_", "_n_records"):
        n = getattr(synth, attr, None)
        if isinstance(n, (int, np.integer)) and not isinstance(n, bool):
            return int(n)
    return None


def _table_fingerprint(record: Any) -> str | None:
    if isinstance(record, str):
        return record
    if isinstance(record, Mapping):
        value = record.get("table")
        return value if isinstance(value, str) else None
    return None


def _typed(spec: Any) -> tuple[Any, ...]:
    """A column as a table fingerprint encodes it (name, type, levels), whatever its role."""
    levels = getattr(spec, "levels", None)
    return (spec.name, spec.type, None if levels is None else tuple(map(str, levels)))


def _manifest_differences(synth: Any, source: Any) -> list[str]:
    """How the provenance a release's manifest records differs from the model's."""
    out: list[str] = []
    method = getattr(synth, "method_name", None)
    if isinstance(method, str) and source.method not in ("unknown", "external") \
            and source.method != method:
        out.append(f"the release was made by {source.method!r}, the model is {method!r}")
        return out  # the settings of two methods do not compare
    mine, theirs = _model_settings(synth), identity_settings(source.settings or {})
    if mine is not None and theirs:
        diff = [k for k in sorted(set(mine) & set(theirs)) if mine[k] != theirs[k]]
        if diff:
            out.append("settings differ: " + ", ".join(
                f"{k} = {_short(theirs[k])} for the release, {_short(mine[k])} for the model"
                for k in diff[:5]) + (" ..." if len(diff) > 5 else ""))
    schema = getattr(synth, "schema_", None)
    same_types = True
    if schema is not None and source.schema is not None:
        if source.schema.synthesized:
            rel, mod = list(source.schema.synthesized), list(schema.synthesized)
            if set(rel) != set(mod):
                out.append(f"the release synthesized {rel}, the model synthesizes {mod}")
        types = [f"{c.name} ({c.type} in the release, {schema[c.name].type} in the model)"
                 for c in source.schema if c.name in schema.names
                 and c.type != schema[c.name].type]
        if types:
            out.append("column types differ: " + ", ".join(types[:5]))
        same_types = [_typed(c) for c in source.schema] == [_typed(c) for c in schema]
    mine_r = _model_records(synth)
    rel_r = source.synthesized_records
    rel_r = None if rel_r is None or bool(np.all(rel_r)) else np.asarray(rel_r, dtype=bool)
    if (mine_r is None) != (rel_r is None) or (
            mine_r is not None and rel_r is not None and not np.array_equal(mine_r, rel_r)):
        def count(f: np.ndarray | None) -> str:
            return "every record" if f is None else f"{int(f.sum())} selected records"
        out.append(f"the release synthesized {count(rel_r)}, the model {count(mine_r)}")
    fp_rel = _table_fingerprint(source.original_fingerprint)
    fp_mod = _table_fingerprint(getattr(synth, "original_fingerprint_", None)) or \
        getattr(synth, "data_fingerprint_", None)
    # a fingerprint encodes the table by its schema: two schemas, two encodings
    if fp_rel and isinstance(fp_mod, str) and same_types and fp_rel != fp_mod:
        out.append("the model was fitted to another table than the release was made from "
                   "(their fingerprints differ)")
    n = _model_n(synth)
    if n is not None and source.datasets and len(source.datasets[0]) != n:
        out.append(f"the release has {len(source.datasets[0])} records, the model was fitted "
                   f"to {n}")
    return out


def _data_differences(synth: Any, datasets: Sequence[pd.DataFrame],
                      original: pd.DataFrame | None) -> list[str]:
    """What plain release files show against the model: their number of records, and the
    columns and records it releases unchanged, which must equal the original's."""
    from bayes_risk.data.alignment import comparable_values, equal_values, same_multiset

    schema = getattr(synth, "schema_", None)
    if schema is None or not datasets:
        return []
    n = _model_n(synth)
    if n is not None and any(len(z) != n for z in datasets):
        l, z = next((l, z) for l, z in enumerate(datasets, start=1) if len(z) != n)
        return [f"synthetic dataset {l} has {len(z)} records, the model was fitted to {n}"]
    if not isinstance(original, pd.DataFrame) or any(len(z) != len(original) for z in datasets):
        return []
    shared = [c for c in schema.names
              if c in original.columns and all(c in z.columns for z in datasets)]
    orig = {c: comparable_values(original[c].reset_index(drop=True)) for c in shared}
    out: list[str] = []
    changed: list[str] = []
    for c in [c for c in schema.unsynthesized if c in shared]:
        for l, z in enumerate(datasets, start=1):
            vals = comparable_values(z[c].reset_index(drop=True))
            eq = equal_values(orig[c], vals)
            if not eq.all():
                how = ("the original's values in another row order" if same_multiset(
                    orig[c], vals) else f"{int((~eq).sum())} of {eq.size} records changed")
                changed.append(f"{c!r} ({how} in synthetic dataset {l})")
                break
    if changed:
        out.append(f"column(s) {', '.join(changed)}, which the model releases unchanged, differ "
                   "from the original: the release synthesized what this model does not")
    flags = _model_records(synth)
    if flags is not None and flags.shape == (len(original),):
        kept = np.flatnonzero(~flags)
        for l, z in enumerate(datasets, start=1):
            bad = [c for c in schema.synthesized if c in shared and not equal_values(
                orig[c][kept], comparable_values(z[c].reset_index(drop=True))[kept]).all()]
            if bad:
                out.append(f"synthetic dataset {l} changes column(s) {bad} of records the model "
                           "releases unchanged (it synthesizes "
                           f"{int(flags.sum())} selected records)")
                break
    return out


def release_model_problem(model: Any, synthetic: Any,
                          original: pd.DataFrame | None = None) -> tuple[str | None, str]:
    """``(difference or None, check)``: how the model was found not to have made the release
    (``"post-processing"``, ``"identity"``, ``"manifest"``, ``"data"`` or ``"none"``)."""
    synth = _synthesizer(model)
    source = synthetic if isinstance(synthetic, SyntheticData) else None
    done = (source.extra or {}).get("post_processing") if source is not None else None
    if done:  # bayes_risk.disclosure.sdc: the model made the release before this
        ops = ", ".join(str(step.get("operation")) for step in done)
        return (f"the release was post-processed after synthesis ({ops}), so the model's "
                "likelihood describes the release before post-processing, not this one; "
                "measure the model-based risks on the release as synthesized (its release-only "
                "measures, identification and the empirical disclosure measures, apply to "
                "this one)"), "post-processing"
    if source is not None and source.model_id is not None:
        mine = model_id(synth)
        if mine is not None:
            if mine == source.model_id:
                return None, "identity"
            diff = _manifest_differences(synth, source)
            return ("; ".join(diff) if diff else
                    f"the release was made by the model {source.model_id[:12]}, this one is "
                    f"{mine[:12]}: another fit of the same method, settings and columns (its "
                    "posterior draws or trees are others)"), "identity"
    provenance = source is not None and (source.method not in ("unknown", "external")
                                         or (source.schema is not None
                                             and bool(source.schema.synthesized)))
    if provenance:
        diff = _manifest_differences(synth, source)
        return ("; ".join(diff) if diff else None), "manifest"
    if synthetic is None or getattr(synth, "schema_", None) is None:
        return None, "none"
    if isinstance(synthetic, pd.DataFrame):
        datasets = [synthetic]
    elif source is not None:
        datasets = list(source.datasets)
    elif isinstance(synthetic, (list, tuple)) and all(isinstance(z, pd.DataFrame)
                                                      for z in synthetic):
        datasets = list(synthetic)
    else:
        return None, "none"
    diff = _data_differences(synth, datasets, original)
    return ("; ".join(diff) if diff else None), "data"


class ModelCheck(NamedTuple):
    """What :func:`check_release_model` found: the warning codes to add to a result and how
    the model was checked (``model_check``)."""

    warnings: list[str]
    how: str

    def note(self, result: Any, synthetic: Any = None) -> Any:
        """``result`` with the codes added to its ``warnings`` and ``model_check`` to its
        settings."""
        codes = getattr(result, "warnings", None)
        if isinstance(codes, list):
            add = [*self.warnings, *duplicate_codes(synthetic)]
            codes.extend(c for c in add if c not in codes)
        settings = getattr(result, "settings", None)
        if isinstance(settings, dict):
            settings["model_check"] = self.how
        return result


def check_release_model(model: Any, synthetic: Any, original: pd.DataFrame | None = None, *,
                        allow: bool = False, record: dict[str, str] | None = None) -> ModelCheck:
    """Refuse a model that did not make the release it is used with (:doc:`/user_guide/provenance`).

    Parameters
    ----------
    model : fitted model
        The model (or a plug-in likelihood of a synthesizer).
    synthetic : SyntheticData, DataFrame or list of DataFrame
        The release.
    original : DataFrame, optional
        The original (for plain files).
    allow : bool, default False
        Go on with another model, with a ``DataWarning`` instead of the error.
    record : dict, optional
        Where to keep the warning's code and message (a result's warnings).

    Returns
    -------
    ModelCheck
        The warning codes (``["MODEL_DIFFERS"]`` when allowed, else ``[]``) and the check made.

    Raises
    ------
    ValidationError
        ``MODEL_DIFFERS``.
    """
    problem, how = release_model_problem(model, synthetic, original)
    if problem is None:
        return ModelCheck([], how)
    if not allow:
        override = arg_name("allow_other_model", True, cli="")  # the command line: the flag
        raise ValidationError(f"the model is not the one that made the release: {problem}. Its "
                              "risks would be those of another release (a column it leaves "
                              "unchanged but the release synthesized is scored as released; "
                              "another fit's posterior draws stand for the release's). Give the "
                              f"model that made the release, or {override} to go on anyway.",
                              code="MODEL_DIFFERS")
    msg = (f"the model is not the one that made the release ({problem}); the risks are "
           "those of this model, as asked (MODEL_DIFFERS).")
    if record is not None:
        record["MODEL_DIFFERS"] = msg
    warnings.warn(DataWarning(msg, code="MODEL_DIFFERS"), skip_file_prefixes=CALLER)
    return ModelCheck(["MODEL_DIFFERS"], how)


#: content keys of the datasets already hashed (by object, while it lives): a knowledge sweep
#: prepares its inputs once per subset of columns
_KEYS: dict[int, tuple[weakref.ref, str]] = {}


#: rows hashed first per dataset (every k-th row): datasets whose rows there differ are not
#: hashed whole (at 10^6 records the whole hash is most of the duplicate check's time)
_SAMPLE_ROWS = 4096


def _hash_cells(z: pd.DataFrame) -> str:
    """A hash of ``z``'s column names, number of rows and cells by value."""
    h = hashlib.sha256(json.dumps([[str(c) for c in z.columns], len(z)]).encode())
    for c in z.columns:
        col = z[c]
        if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(
                col.dtype):
            # numbers as float64 (a copy read back from CSV holds 2 for 2.0), one NaN, no -0
            v = col.to_numpy(dtype=np.float64, na_value=np.nan)
            h.update(b"f" + np.where(np.isnan(v), np.nan, v + 0.0).tobytes())
        else:  # labels, by value whatever the dtype (categorical or text)
            h.update(b"o" + pd.util.hash_pandas_object(col, index=False).to_numpy().tobytes())
    return h.hexdigest()


def _content_key(z: pd.DataFrame) -> str:
    hit = _KEYS.get(id(z))
    if hit is not None and hit[0]() is z:
        return hit[1]
    key = _hash_cells(z)
    ident = id(z)
    _KEYS[ident] = (weakref.ref(z, lambda _: _KEYS.pop(ident, None)), key)
    return key


def _sample_key(z: pd.DataFrame) -> str:
    """:func:`_hash_cells` of every k-th row and the number of rows: equal datasets have
    equal sample keys, so datasets with distinct ones need no whole hash."""
    step = max(1, len(z) // _SAMPLE_ROWS)
    if step == 1:
        return _content_key(z)
    return f"{len(z)}:{_hash_cells(z.iloc[::step])}"


def duplicate_pairs(datasets: Sequence[pd.DataFrame]) -> list[tuple[int, int]]:
    """The pairs ``(k, l)``, ``k < l``, of datasets holding the same value in every cell, each
    later dataset paired with the first it repeats."""
    sample = [_sample_key(z) for z in datasets]
    # only datasets sharing their sample key with another may be equal: those are hashed whole
    keys = [_content_key(z) if sample.count(s) > 1 else s for z, s in zip(datasets, sample,
                                                                            strict=True)]
    first: dict[str, int] = {}
    out = []
    for l, (z, key) in enumerate(zip(datasets, keys, strict=True)):
        k = first.setdefault(key, l)
        a = datasets[k]
        if k != l and a.shape == z.shape and list(a.columns) == list(z.columns):
            out.append((k, l))
    return out


def duplicate_codes(synthetic: Any) -> list[str]:
    """``["DUPLICATE_DATASETS"]`` when two datasets of a release are identical, else ``[]``
    (the warning itself is raised by :func:`~bayes_risk.data.as_synthetic_list`)."""
    datasets = getattr(synthetic, "datasets", synthetic)
    if not isinstance(datasets, (list, tuple)) or len(datasets) < 2 or not all(
            isinstance(z, pd.DataFrame) for z in datasets):
        return []
    return ["DUPLICATE_DATASETS"] if duplicate_pairs(datasets) else []


def check_distinct_datasets(datasets: Sequence[pd.DataFrame], names: Sequence[str] | None = None, *,
                            record: dict[str, str] | None = None) -> list[str]:
    """Warn when a release holds the same synthetic dataset twice (same value in every cell).

    Parameters
    ----------
    datasets : sequence of DataFrame
        The ``m`` datasets.
    names : sequence of str, optional
        Their files (in the message).
    record : dict, optional
        Where to keep the warning's code and message (a result's warnings).

    Returns
    -------
    list of str
        ``["DUPLICATE_DATASETS"]`` when some dataset repeats another, else ``[]``.
    """
    pairs = duplicate_pairs(datasets) if len(datasets) > 1 else []
    if not pairs:
        return []
    named = names is not None and len(names) == len(datasets)
    shown = "; ".join(f"{k + 1} and {l + 1}" + (f" ({names[k]!r} and {names[l]!r})" if named
                                               else "") for k, l in pairs[:5])
    distinct = len(datasets) - len({l for _, l in pairs})
    msg = (f"synthetic datasets {shown} are identical (the same value in every record and "
           f"column): a copy of another dataset's file, or a synthesizer that drew the same "
           f"dataset twice. Counted as separate draws they make m = {len(datasets)} from "
           f"{distinct} distinct dataset{'s' * (distinct > 1)}, which understates the "
           "between-dataset variance and the width of every combined interval and weights "
           "pooled risks towards the repeated draw; give each distinct dataset once "
           "(DUPLICATE_DATASETS).")
    if record is not None:
        record["DUPLICATE_DATASETS"] = msg
    warnings.warn(DataWarning(msg, code="DUPLICATE_DATASETS"), skip_file_prefixes=CALLER)
    return ["DUPLICATE_DATASETS"]


def release_schema(release: SyntheticData, inferred: Any, types: Sequence[str] = (),
                   codes: Sequence[str] = ()) -> Any:
    """The schema of a release's manifest with the column types and missing-value codes a caller
    gives on top.

    Parameters
    ----------
    release : SyntheticData
        The release.
    inferred : Schema
        The original's schema inferred with the types and codes given.
    types, codes : sequence of str
        The columns whose type, and whose missing-value codes, were given.

    Returns
    -------
    Schema
        ``inferred`` for a release without a schema, else the manifest's with the given columns
        taken from ``inferred``
        (``Schema.overridden``), the changed columns named in one
        ``DataWarning`` ``SCHEMA_OVERRIDDEN``: the release was synthesized with the manifest's
        types, so the figures are not comparable with those of another run on it.
    """
    if release.schema is None:
        return inferred
    schema, changed = release.schema.overridden(inferred, types, codes)
    if changed:
        warnings.warn(DataWarning(
            "the column types given replace the release manifest's for "
            f"{', '.join(changed)}; the release was synthesized with the manifest's types, "
            "so these figures are not comparable with those of another command or the audit "
            "on the same release (leave them out to use the manifest's) "
            "(SCHEMA_OVERRIDDEN).", code="SCHEMA_OVERRIDDEN"), skip_file_prefixes=CALLER)
    return schema
