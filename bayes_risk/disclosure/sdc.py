"""synthpop's ``sdc()`` post-processing of a release (:doc:`/user_guide/disclosure`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd

from bayes_risk._checksums import file_sha256
from bayes_risk._constraints import (
    InstanceOf,
    OneOf,
    Options,
    Requires,
    Within,
    check_params,
    checked,
)
from bayes_risk._io import read_json
from bayes_risk._specs import argument_checks, cli_option
from bayes_risk.data.coding import code_values
from bayes_risk.data.manifest import MANIFEST_NAME
from bayes_risk.data.missing import missing_kinds
from bayes_risk.data.normalise import as_synthetic_list
from bayes_risk.data.synthetic import REMOVED_ROWS, SyntheticData, generation_from_roles
from bayes_risk.data.validate import require_frame
from bayes_risk.disclosure._encode import resolve_inputs
from bayes_risk.disclosure.measures import combined_key_codes
from bayes_risk.disclosure.specs import parse_bounds, parse_excluded
from bayes_risk.exceptions import SchemaError, ValidationError, arg_name, on_command_line

__all__ = ["sdc"]

#: smallest number of values a smoothing spline is fitted to
MIN_SMOOTH = 5
#: ``sdc``'s arguments against each other
RELATIONS = (
    Requires("keys", "remove"),
    Requires("recode_exclude", "bottom_top_coding"),
    Within("recode_exclude", "bottom_top_coding"),
    OneOf(("bottom_top_coding", "remove", "smooth"), required=True, only=False,
          code="OPTION_REQUIRED"),
)


def sdc(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    remove: Annotated[Literal["replicated_uniques", "uniques_in_original"] | None, cli_option(
        "--remove", "remove the synthetic records unique on --keys in their dataset that are "
        "unique in ORIGINAL (synthpop's rm.replicated.uniques) or occur in it at all "
        "(rm.uniques.in.orig); fully synthetic releases only",
        choices=("replicated_uniques", "uniques_in_original"))
        | checked([Options(("replicated_uniques", "uniques_in_original"), listed=True), None])
    ] = None,
    keys: Annotated[Sequence[str] | None, cli_option(
        "--keys", "columns that define a record for --remove (default: every column of "
        "ORIGINAL)", nargs="+", metavar="COL")] = None,
    bottom_top_coding: Annotated[Mapping[str, tuple[float | None, float | None]] | None, cli_option(
        "--bottom-top", "bottom and top coding of a numeric synthesized column: values below "
        "BOTTOM become BOTTOM, above TOP become TOP; leave a side empty for no bound "
        "(Income=:200000)", nargs="+", metavar="COL=BOTTOM:TOP", parse=parse_bounds)
        | checked([InstanceOf(Mapping, "a mapping {column: (bottom, top)}"), None])] = None,
    recode_exclude: Annotated[Mapping[str, Sequence[float]] | None, cli_option(
        "--exclude", "values of a --bottom-top column left as they are (a missing-value code)",
        nargs="+", metavar="COL=V[,V...]", parse=parse_excluded)] = None,
    smooth: Annotated[Sequence[str] | None, cli_option(
        "--smooth", "numeric synthesized columns replaced by a cubic smoothing spline of their "
        "sorted values (synthpop's smooth.vars), dataset by dataset", nargs="+", metavar="COL")
    ] = None,
    compat: Annotated[Literal["synthpop"] | None, cli_option(
        "--compat", "compare the --keys of --remove as synthpop 1.9-2 does (as padded text)",
        choices=("synthpop",)) | checked([Options(("synthpop",), listed=True), None])] = None,
) -> SyntheticData:
    """Post-process a release as synthpop's ``sdc()`` does: coding, removal, smoothing.

    Parameters
    ----------
    original : DataFrame
        The confidential table (the uniques to remove are found against it).
    synthetic : SyntheticData, DataFrame or list of DataFrame
        The release.
    remove : {"replicated_uniques", "uniques_in_original"}, optional
        Remove the synthetic records unique on ``keys`` that are also unique in the original
        (synthpop's ``rm.replicated.uniques``), or that occur in it at all
        (``rm.uniques.in.orig``). Fully synthetic releases only.
    keys : sequence of str, optional
        Columns that define a record for ``remove`` (default: every column of ``original``).
    bottom_top_coding : mapping, optional
        ``{column: (bottom, top)}`` of numeric synthesized columns (``None``: no bound).
    recode_exclude : mapping, optional
        ``{column: [values]}`` left as they are by the coding (e.g. a missing-value code).
    smooth : sequence of str, optional
        Numeric synthesized columns smoothed by a cubic smoothing spline of their sorted values
        against their ranks (synthpop's ``smooth.vars``; :doc:`/methods/compatibility`).
    compat : {None, "synthpop"}
        How the keys are compared for ``remove`` (as :func:`replicated_uniques`).

    Returns
    -------
    SyntheticData
        The release after post-processing; ``extra["post_processing"]`` records each operation
        and what it changed.

    Raises
    ------
    ValidationError
        Nothing to do (``OPTION_REQUIRED``), ``keys`` without ``remove`` (``OPTION_CONFLICT``), bad
        options, a column that is not numeric or not synthesized, or ``remove`` on a
        partially synthetic release (``REMEDY_NOT_APPLICABLE``).
    SchemaError
        A column that is not in the release (``MISSING_COLUMN``).

    Notes
    -----
    Removal from a release whose datasets hold the original's ``n`` rows (row ``i`` record
    ``i``'s synthetic row) records the positions of the rows removed from each dataset
    (``removed_rows``), so that identification risk can still pair each remaining row with its
    record (``bayes_risk.data.synthetic.released_records``).

    Examples
    --------
    >>> import pandas as pd
    >>> orig = pd.DataFrame({"age": [20, 30, 40, 50], "income": [10.0, 20.0, 30.0, 400.0]})
    >>> syn = pd.DataFrame({"age": [20, 30, 30, 60], "income": [12.0, 18.0, 25.0, 500.0]})
    >>> out = sdc(orig, syn, bottom_top_coding={"income": (None, 100.0)})
    >>> out[0]["income"].tolist()
    [12.0, 18.0, 25.0, 100.0]
    >>> out.extra["post_processing"][0]["n_top_coded"]
    {'income': [1]}
    """
    # an empty operation is none given
    check_params(dict(remove=remove, compat=compat, keys=keys, smooth=smooth or None,
                      bottom_top_coding=bottom_top_coding or None,
                      recode_exclude=recode_exclude or None),
                 argument_checks(sdc), relations=RELATIONS)
    require_frame(original, "original")
    datasets, source = as_synthetic_list(synthetic, original=original, row_order=False)
    datasets = [z.copy() for z in datasets]
    schema = source.schema if source is not None else None
    coding = _check_coding(bottom_top_coding, recode_exclude, datasets[0], schema)
    smooth = _check_columns(smooth, "smooth", datasets[0], schema)
    steps: list[dict[str, Any]] = []
    if coding:
        low: dict[str, list[int]] = {}
        high: dict[str, list[int]] = {}
        for col, (bottom, top, exclude) in coding.items():
            low[col], high[col] = [], []
            for z in datasets:
                z[col], below, above = code_values(z[col], bottom, top, exclude)
                low[col].append(below)
                high[col].append(above)
        steps.append({"operation": "bottom_top_coding",
                      "bounds": {c: [b, t] for c, (b, t, _) in coding.items()},
                      "exclude": {c: list(e) for c, (_, _, e) in coding.items() if len(e)},
                      "n_bottom_coded": low, "n_top_coded": high})
    if remove is not None:
        paired = all(len(z) == len(original) for z in datasets)
        datasets, removed, keys = _remove(datasets, original, keys, remove, source, compat)
        step = {"operation": f"remove_{remove}", "keys": keys, "compat": compat,
                "n_removed": [len(r) for r in removed]}
        if paired:  # row i of each dataset is record i's: which records' rows remain
            step[REMOVED_ROWS] = removed
        steps.append(step)
    if smooth:
        codes = {c: list(schema[c].missing_codes) if schema is not None and c in schema.names
                 else [] for c in smooth}
        for z in datasets:
            for c in smooth:
                z[c] = _smoothed(z[c], codes[c])
        steps.append({"operation": "smoothing", "columns": list(smooth),
                      "method": "cubic smoothing spline of the sorted values on their ranks, "
                      "penalty by generalised cross-validation"})
    return remedied(source, datasets, steps, rows_removed=remove is not None)


def remedied(source: SyntheticData | None, datasets: list[pd.DataFrame],
             steps: list[dict[str, Any]], *, rows_removed: bool = False) -> SyntheticData:
    """The release ``source`` with ``datasets`` after a remedy's ``steps``, which are added to
    its ``extra["post_processing"]``, each with the release it was applied to (its folder or
    files and their SHA-256, read back by an audit of the remedy to say why a risk rose)."""
    origin = _origin(source)
    for step in steps:
        step["source"] = origin
    before = {} if source is None else source.extra or {}
    extra = {**before, "post_processing": [*before.get("post_processing", []), *steps]}
    if source is None:
        return SyntheticData(datasets, method="external", extra=extra)
    if rows_removed:
        # the flags of a full synthesis say every record; the records whose rows remain are
        # the remove step's (``released_records``)
        return dataclasses.replace(source, datasets=datasets, extra=extra,
                                   synthesized_records=None, folder=None)
    return dataclasses.replace(source, datasets=datasets, extra=extra, folder=None)


def _origin(source: SyntheticData | None) -> dict[str, Any] | None:
    """Where the release a remedy post-processes is — its folder, or its plain files — and the
    SHA-256 of its dataset files, so that an audit of the remedy can read it back and say why a
    risk rose; ``None`` for a release made in memory."""
    folder = None if source is None else source.folder
    files = (source.extra or {}).get("files") if source is not None else None
    try:
        if folder is not None:
            names = read_json(Path(folder) / MANIFEST_NAME, "no manifest")["files"]
            return {"folder": folder,
                    "sha256": {f: file_sha256(Path(folder) / f) for f in names}}
        if isinstance(files, list) and files and all(isinstance(f, str) for f in files):
            paths = [str(Path(f).resolve()) for f in files]
            return {"files": paths, "sha256": {f: file_sha256(f) for f in paths}}
    except (OSError, KeyError, TypeError, ValidationError):
        pass  # moved or removed since it was read: nothing to point to
    return None


def _numeric(col: str, z: pd.DataFrame, argument: str) -> None:
    if not (pd.api.types.is_numeric_dtype(z[col]) and not pd.api.types.is_bool_dtype(z[col])):
        raise ValidationError(f"{argument}: column {col!r} is {z[col].dtype}, not numeric; only "
                              "numeric columns can be coded or smoothed.", code="WRONG_DTYPE")


def release_columns(cols: Any, argument: str, z: pd.DataFrame) -> list[str]:
    """The columns ``argument`` names (one name, a sequence of them or ``None``), each in the
    release (the one place this is checked)."""
    cols = [] if cols is None else [cols] if isinstance(cols, str) else list(cols)
    absent = [c for c in cols if c not in z.columns]
    if absent:
        raise SchemaError(f"{arg_name(argument)}: column(s) {absent} are not in the release "
                          f"(columns: {', '.join(map(str, z.columns))}).",
                          code="MISSING_COLUMN")
    return cols


def released_columns(cols: Any, argument: str, z: pd.DataFrame, schema: Any) -> list[str]:
    """The columns a remedy's ``argument`` names, each in the release and synthesized (an
    unsynthesized column holds the original's values row by row, which the measures rely on)."""
    cols = release_columns(cols, argument, z)
    synthesized = set(schema.synthesized) if schema is not None and schema.synthesized else None
    for c in cols:
        if synthesized is not None and c not in synthesized:
            raise ValidationError(
                f"{arg_name(argument)}: column {c!r} is released unsynthesized (the original's "
                "values, row by row); post-processing it would change what the release shows "
                "as the original's. Recode it in the original before synthesis instead.",
                code="REMEDY_NOT_APPLICABLE")
    return cols


def _check_columns(cols: Any, argument: str, z: pd.DataFrame, schema: Any) -> list[str]:
    cols = released_columns(cols, argument, z, schema)
    for c in cols:
        _numeric(c, z, argument)
        # an integer-coded categorical column is numeric to pandas, not to the release's model
        if schema is not None and c in schema.names and schema[c].is_categorical:
            raise ValidationError(
                f"{argument}: column {c!r} is {schema[c].type} in the release's schema (integer "
                "codes of levels); only count and continuous columns can be coded or smoothed. "
                "Coarsen its levels in the original before synthesis instead.",
                code="WRONG_DTYPE")
    return cols


def _coded(column: str) -> str:
    """A column's bounds as the caller gave them: ``bottom_top_coding['x']``, ``--bottom-top x``."""
    if on_command_line():
        return f"{arg_name('bottom_top_coding')} {column}"
    return f"bottom_top_coding[{column!r}]"


def _check_coding(coding: Any, exclude: Any, z: pd.DataFrame, schema: Any
                  ) -> dict[str, tuple[float | None, float | None, np.ndarray]]:
    if coding is None:  # the relations of sdc's arguments refuse an exclusion without it
        return {}
    exclude = dict(exclude or {})
    cols = _check_columns(list(coding), "bottom_top_coding", z, schema)
    out = {}
    for c in cols:
        pair = coding[c]
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValidationError(f"{_coded(c)} must be (bottom, top), None for no "
                                  f"bound on a side. Got {pair!r}.", code="INVALID_ARGUMENT")
        b, t = (None if v is None or (isinstance(v, float) and np.isnan(v)) else v
                for v in pair)
        for v in (b, t):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                                  or not np.isfinite(v)):
                raise ValidationError(f"{_coded(c)} bounds must be finite numbers "
                                      f"or None. Got {pair!r}.", code="INVALID_ARGUMENT")
        if b is None and t is None:
            raise ValidationError(f"{_coded(c)} gives no bound.",
                                  code="INVALID_ARGUMENT")
        if b is not None and t is not None and b > t:
            raise ValidationError(f"{_coded(c)}: bottom {b} is above top {t}.",
                                  code="INVALID_ARGUMENT")
        out[c] = (b, t, np.asarray(list(exclude.get(c, ())), dtype=np.float64))
    return out


def _remove(datasets: list[pd.DataFrame], original: pd.DataFrame, keys: Any, remove: str,
            source: SyntheticData | None, compat: str | None
            ) -> tuple[list[pd.DataFrame], list[list[int]], list[str]]:
    """The datasets without the synthetic uniques (on ``keys``) that are unique in the original
    (``replicated_uniques``) or occur in it (``uniques_in_original``), and the positions of the
    rows removed from each."""
    schema = source.schema if source is not None else None
    # the manifest's scheme, and the roles it records (every record of a full synthesis is
    # listed among the synthesized records: that makes it no partial one)
    if source is not None and "partial" in (
            source.generation, generation_from_roles(schema, source.synthesized_records)):
        raise ValidationError(
            f"{arg_name('remove', repr(remove), cli=remove.replace('_', '-'))} applies to "
            "fully synthetic releases: this one is partially "
            "synthetic, its rows paired with the original's records, which the measures rely "
            "on (a removed row would leave its record without a released row). Coarsen the "
            "keys or synthesize more columns instead.", code="REMEDY_NOT_APPLICABLE")
    keys = (list(original.columns) if keys is None else [keys] if isinstance(keys, str)
            else list(keys))
    sub = resolve_inputs(original, datasets, schema, None, None, keys,
                         recoded=() if source is None else source.recoded_columns)
    orig, syn = combined_key_codes(original, datasets, keys, sub, compat == "synthpop")
    n_codes = int(max([orig.max(initial=-1), *[s.max(initial=-1) for s in syn]])) + 1
    in_orig = np.bincount(orig, minlength=n_codes)
    out, removed = [], []
    for z, s in zip(datasets, syn, strict=True):
        unique_here = np.bincount(s, minlength=n_codes)[s] == 1
        drop = unique_here & ((in_orig[s] == 1) if remove == "replicated_uniques"
                              else (in_orig[s] > 0))
        out.append(z.loc[~drop].reset_index(drop=True))
        removed.append(np.flatnonzero(drop).tolist())
    return out, removed, keys


def _smoothed(col: pd.Series, codes: Sequence[float]) -> pd.Series:
    """synthpop's smoothing: the sorted values fitted by a smoothing spline on their positions
    1..n, each value replaced by the fitted value at its rank (ties: the average rank, truncated
    as R indexes with it)."""
    from scipy.interpolate import make_smoothing_spline
    from scipy.stats import rankdata

    x = col.to_numpy(dtype=np.float64, na_value=np.nan)
    ok = missing_kinds(x, codes) == 0
    y = x[ok]
    if y.size < MIN_SMOOTH:
        raise ValidationError(f"smooth: column {col.name!r} has {y.size} values in a dataset; "
                              f"a smoothing spline needs at least {MIN_SMOOTH}.",
                              code="INVALID_ARGUMENT")
    pos = np.arange(1.0, y.size + 1.0)
    fitted = make_smoothing_spline(pos, np.sort(y))(pos)
    out = x.copy()
    out[ok] = fitted[np.floor(rankdata(y, method="average")).astype(np.int64) - 1]
    return pd.Series(out, index=col.index, name=col.name)
