"""A synthpop release as R saved it: the ``syn()`` object (class ``synds``) in an ``.rds`` file
(``saveRDS``) or an ``.RData``/``.rda`` file (``save``), read with ``rdata`` (a pure-Python
reader of R's serialisation) into the parts of a release: its datasets and provenance, which
the reading of a release (``bayes_risk.data.release_reader``) builds the release from.
See :doc:`/user_guide/data`, synthpop objects.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk.exceptions import ValidationError

__all__ = ["R_SUFFIXES", "read_syn_object"]

#: the file name endings read as R files
R_SUFFIXES = (".rds", ".rdata", ".rda")


class _Synds(dict):
    """A list of class ``synds`` (synthpop's ``syn()`` result), as rdata converts it."""


def _synds(obj: Any, attrs: Any) -> Any:
    return _Synds(obj) if isinstance(obj, dict) else obj


def _named(x: Any, names: list[str] | None = None) -> dict[str, Any]:
    """A named R vector (rdata gives a DataArray with its names, or a bare array) as a dict."""
    if hasattr(x, "coords") and x.dims:
        return {str(k): v for k, v in zip(x.coords[x.dims[0]].values, np.asarray(x), strict=True)}
    if isinstance(x, dict):
        return {str(k): v for k, v in x.items()}
    vals = list(np.atleast_1d(np.asarray(x, dtype=object)))
    if names is None or len(names) != len(vals):
        raise ValueError("unnamed vector")
    return dict(zip(names, vals, strict=True))


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """A data frame of R types as the package's tables hold them: a factor's values as text
    (numbers where every level is one, as R's ``as.numeric(as.character(x))``), R's integers
    as integers (nullable where missing)."""
    out = {}
    for c in df.columns:
        s = df[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            cats = pd.Series(s.cat.categories.astype(str))
            num = pd.to_numeric(cats, errors="coerce")
            if num.notna().all():
                vals = s.cat.rename_categories(num.to_numpy()).astype(object)
                s = pd.to_numeric(vals.where(s.notna(), np.nan))
                if s.notna().all() and (s == np.round(s)).all():
                    s = s.astype(np.int64)
            else:
                s = s.astype(object).where(s.notna(), None)
        elif pd.api.types.is_integer_dtype(s.dtype) and s.notna().all():
            s = s.astype(np.int64)
        out[str(c)] = s.reset_index(drop=True)
    return pd.DataFrame(out)


def read_syn_object(path: str | os.PathLike[str], *,
                    object_name: str | None = None) -> dict[str, Any]:
    """The datasets and provenance of the synthpop ``syn()`` object in an R file, as the
    keyword arguments of a release (``datasets``, ``method``, ``settings``, ``extra``,
    ``proper``, ``schema``); the rules and errors: ``bayes_risk.data.synthpop_rds.read_synthpop``.
    """
    import rdata

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in R_SUFFIXES:
        raise ValidationError(f"{str(p)!r} is not an R file; expected a name ending in "
                              f"{', '.join(R_SUFFIXES)}.", code="NOT_SYNTHPOP")
    cmap = {**rdata.conversion.DEFAULT_CLASS_MAP, "synds": _synds}
    try:
        with warnings.catch_warnings():
            # rdata warns of R classes it has no Python type for (the call, synthpop's models)
            warnings.simplefilter("ignore")
            if suffix == ".rds":
                found = {"": rdata.read_rds(p, constructor_dict=cmap)}
            else:
                found = dict(rdata.read_rda(p, constructor_dict=cmap))
    except Exception as exc:  # rdata's errors of a file it cannot parse
        raise ValidationError(f"{str(p)!r} could not be read as an R file "
                              f"({type(exc).__name__}: {exc}).", code="FILE_UNREADABLE") from exc
    objs = {str(k): v for k, v in found.items() if isinstance(v, _Synds)}
    if object_name is not None:
        if object_name not in objs:
            raise ValidationError(
                f"{str(p)!r} has no synthpop object named {object_name!r} (its syn() objects: "
                f"{sorted(objs) or 'none'}; all its objects: {sorted(map(str, found))}).",
                code="NOT_SYNTHPOP")
        objs = {object_name: objs[object_name]}
    if len(objs) != 1:
        what = ("holds no synthpop syn() object (class 'synds')" if not objs else
                f"holds several synthpop objects {sorted(objs)}; name one (object_name)")
        kinds = {str(k): type(v).__name__ for k, v in found.items()}
        raise ValidationError(
            f"{str(p)!r} {what}. Found: "
            + (", ".join(f"{k or 'the object'} ({v})" for k, v in kinds.items()) or "nothing")
            + ". Save the result of synthpop's syn() with saveRDS() or save().",
            code="NOT_SYNTHPOP")
    name, obj = next(iter(objs.items()))
    return _release(obj, p, name)


def _release(obj: dict[str, Any], path: Path, name: str) -> dict[str, Any]:
    try:
        m = int(np.asarray(obj["m"]).ravel()[0])
        syn = obj["syn"]
        frames = [syn] if isinstance(syn, pd.DataFrame) else list(syn)
        if len(frames) != m or not all(isinstance(f, pd.DataFrame) for f in frames):
            raise ValueError(f"m = {m} but {len(frames)} data frames")
        datasets = [_plain(f) for f in frames]
        cols = list(datasets[0].columns)
        methods = {k: str(v) for k, v in _named(obj["method"], cols).items()}
        visit = list(_named(obj["visit.sequence"]).keys()) if hasattr(
            obj["visit.sequence"], "coords") else [cols[int(i) - 1] for i in
                                                   np.atleast_1d(obj["visit.sequence"])]
        pm = obj["predictor.matrix"]
        rows = [str(v) for v in pm.coords[pm.dims[0]].values]
        pcols = [str(v) for v in pm.coords[pm.dims[1]].values]
        mat = np.asarray(pm)
        predictors = {r: [pcols[j] for j in np.flatnonzero(mat[i] != 0)]
                      for i, r in enumerate(rows) if r in visit}
        seed = obj.get("seed")
        seed = None if seed is None else np.asarray(seed).ravel().tolist()
        proper = bool(np.asarray(obj.get("proper", False)).ravel()[0])
        cont_na = {}
        for c, v in (obj.get("cont.na") or {}).items():
            vals = np.ma.compressed(np.ma.asarray(v)) if v is not None else []
            codes = [float(x) for x in vals if np.isfinite(float(x))]
            if codes:
                cont_na[str(c)] = codes
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ValidationError(
            f"{str(path)!r}: the synthpop object{f' {name!r}' if name else ''} lacks what syn() "
            f"writes or holds it in another form ({type(exc).__name__}: {exc}); expected "
            "syn, m, method, visit.sequence and predictor.matrix.", code="NOT_SYNTHPOP") from exc
    synthesized = [c for c in visit if methods.get(c, "") != ""]
    from bayes_risk.data.schema import infer_schema

    # R's factors are the categorical columns; the roles are synthpop's visited columns
    factors = [str(c) for c in frames[0].columns
               if isinstance(frames[0][c].dtype, pd.CategoricalDtype)]
    schema = infer_schema(pd.concat(datasets, ignore_index=True), categorical=factors,
                          missing_codes={c: v for c, v in cont_na.items() if c in cols} or None
                          ).with_roles(synthesized)
    settings = {"methods": methods, "visit_sequence": visit, "predictor_matrix": predictors,
                "m": m, "proper": proper, "seed": seed, "cont_na": cont_na}
    return {"datasets": datasets, "method": "synthpop", "settings": settings,
            "extra": {"file": str(path), "object": name or None,
                      "synthesized_columns": synthesized},
            "proper": proper, "schema": schema}
