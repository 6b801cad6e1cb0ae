"""The refits ``p(Θ | y, Z_(l))`` and their cache (:doc:`/user_guide/attribute`)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import logging
import platform
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk import _compiling
from bayes_risk._terminal import progress, say
from bayes_risk.attribute.cost import (
    PILOT_DRAWS,
    PILOT_TUNE,
    Pilot,
    distinct_records,
    duration,
    refit_cost,
    refit_sweeps,
    wants_pilot,
)
from bayes_risk.contract import run_setting

__all__ = ["fit_refits", "given_refits", "pilot_refit", "cache_folder"]

_log = logging.getLogger(__name__)

#: the layout of a cache entry ``DIR/<key>/``: the refit saved as a model folder, and the JSON of
#: what its key covers (the entry is complete when both are there: it is renamed into place)
_ENTRY_MODEL, _ENTRY_KEY, _CACHE_FORMAT = "model", "key.json", 1


def cache_folder(value: Any, argument: str, random_seed: Any) -> Path | None:
    """``value`` as the refit cache folder (made if missing; a path, checked by the spec's
    field, ``REFIT_CACHE``); refused without ``random_seed``."""
    from bayes_risk.exceptions import ValidationError, arg_name

    if value is None:
        return None
    if random_seed is None:
        raise ValidationError(
            f"{arg_name(argument)} needs {arg_name('random_seed')}: a refit is reused only by a "
            "run with the same seed, and an unseeded run draws a new one.",
            code="OPTION_REQUIRED")
    folder = Path(value)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValidationError(f"{arg_name(argument)}: {str(folder)!r} cannot be used as a "
                              f"folder ({err.strerror or err}).", code="INVALID_ARGUMENT") from err
    return folder


def given_refits(augmented: Sequence[Any], m: int) -> list[Any]:
    """The refits given as ``augmented=``, checked: one per synthetic dataset (``m``), each a
    :class:`bayes_risk.contract.RiskModel` (the one place this is checked)."""
    from bayes_risk.contract import RiskModel, missing_members
    from bayes_risk.exceptions import ValidationError

    models = list(augmented)
    if len(models) != m:
        raise ValidationError(
            f"augmented must hold one model per synthetic dataset ({m}); got {len(models)}.")
    lacking = [a for a in models if not isinstance(a, RiskModel)]
    if lacking:
        raise ValidationError(
            "every augmented model must implement bayes_risk.contract.RiskModel; "
            f"{type(lacking[0]).__name__} lacks {missing_members(lacking[0], RiskModel)}.")
    return models


def fit_refits(model: Any, original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
               seeds: Sequence[Any], *, refit_draws: int | None = None,
               progressbar: bool = False, cache: Path | None = None) -> list[Any]:
    """``model.fit_augmented(original, Z_(l), random_seed=seeds[l])`` per dataset, from ``cache``
    when an intact entry is there.
    """
    m = len(datasets)
    keys: list[dict[str, Any] | None] = [None] * m
    if cache is not None:
        with _refit_settings(model, refit_draws):  # the keys read the refits' own settings
            keys = _refit_keys(model, original, datasets, seeds, refit_draws)
    models: list[Any] = [None if k is None else _read_entry(cache, k, model) for k in keys]
    todo = [li for li in range(m) if models[li] is None]
    if todo:
        from bayes_risk._memory import check_memory
        from bayes_risk.attribute.cost import refit_bytes
        from bayes_risk.exceptions import arg_name

        # the refits' posteriors, before the first refit (refit_draws=10**9 ran out of memory)
        check_memory(refit_bytes(model, len(todo), len(datasets[0]), refit_draws),
                     arg_name("refit_draws"),
                     what=f"{len(todo)} refit(s) of the model with their posterior draws")
    if cache is not None:
        _log.info("refits: %d of %d read from the cache %s", m - len(todo), m, cache)
        if progressbar and len(todo) < m:
            say(f"{m - len(todo)} of {m} refits read from the cache {cache}")
    if progressbar and todo:  # the cost, stated before the work
        sel = getattr(model, "synthesized_records_", None)
        n_syn = int(np.count_nonzero(sel)) if sel is not None else len(datasets[0])
        distinct = distinct_records(model, original, datasets[0])
        cost = refit_cost(model, n_syn, len(todo), refit_draws=refit_draws, distinct=distinct)
        if wants_pilot(model, cost):  # minutes of refits: time the refit itself first
            pilot = pilot_refit(model, original, datasets[0], refit_draws=refit_draws)
            if pilot is not None:
                cost = refit_cost(model, n_syn, len(todo), refit_draws=refit_draws, pilot=pilot)
        say(cost.line())
    with _refit_settings(model, refit_draws):
        for k, li in enumerate(progress(todo, description="refits of the model",
                                        unit="refits", enabled=progressbar,
                                        label=lambda k, total: f"refit {k} of {total}")):
            t0, c0 = time.perf_counter(), _compiling.seconds()
            models[li] = model.fit_augmented(original, datasets[li], random_seed=seeds[li])
            if keys[li] is not None:
                _write_entry(cache, keys[li], models[li])
            if progressbar and k == 0 and len(todo) > 1:
                # compiling kernels (a first run) is not repeated by the other refits
                compiled = _compiling.seconds() - c0
                took, rest = time.perf_counter() - t0 - compiled, len(todo) - 1
                say(f"refit 1 of {len(todo)} took {duration(took)}"
                    + (f" (and {duration(compiled)} compiling kernels, done once)"
                       if compiled >= 1.0 else "")
                    + f": the other {rest}, about {duration(took * rest)}")
    return models


def _refit_keys(model: Any, original: pd.DataFrame, datasets: Sequence[pd.DataFrame],
                seeds: Sequence[Any], refit_draws: int | None) -> list[dict[str, Any] | None]:
    """What each refit depends on, as JSON (its SHA-256 names the cache entry), or ``None``."""
    from bayes_risk.data.provenance import identity_settings, model_id

    ident = model_id(model)
    if ident is None:
        return [None] * len(datasets)
    # the settings as given; how a setting left at None resolves is the source's (digested)
    settings = model.get_params(deep=False) if hasattr(model, "get_params") else {}
    common = {
        "format": _CACHE_FORMAT, "software": _software(),
        "class": f"{type(model).__module__}.{type(model).__qualname__}", "model_id": ident,
        "settings": identity_settings(settings), "sweeps": refit_sweeps(model, refit_draws),
        "original": _table_sha256(original),
    }
    states = [_seed_state(s) for s in seeds]
    return [None if st is None else {**common, "synthetic": _table_sha256(z), "seed": st}
            for z, st in zip(datasets, states, strict=True)]


def _seed_state(seed: Any) -> dict[str, Any] | None:
    """A refit's seed as JSON (a Generator's state, an int), or ``None``."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return {"int": int(seed)}
    if not isinstance(seed, np.random.Generator):
        return None
    ss = seed.bit_generator.seed_seq
    return {"entropy": str(getattr(ss, "entropy", None)),
            "spawn_key": [int(k) for k in getattr(ss, "spawn_key", ())],
            "pool_size": getattr(ss, "pool_size", None),
            "children": getattr(ss, "n_children_spawned", None),
            "state": json.loads(json.dumps(seed.bit_generator.state, default=str))}


def _table_sha256(df: pd.DataFrame) -> str:
    """SHA-256 of a table's columns, dtypes and typed values in row order."""
    h = hashlib.sha256(f"{len(df)}|{df.shape[1]}".encode())
    for name in df.columns:
        col = df[name]
        h.update(f"|{name!r}|{col.dtype}|".encode())
        if isinstance(col.dtype, np.dtype) and col.dtype.kind in "biuf":
            h.update(np.ascontiguousarray(col.to_numpy()).tobytes())
        else:
            typed = np.array([f"{type(v).__name__}:{v!r}" for v in col.astype(object)],
                             dtype=object)
            h.update(pd.util.hash_array(typed, categorize=False).tobytes())
    return h.hexdigest()


@functools.cache
def _software() -> dict[str, str]:
    """The versions a refit's draws may depend on, and a digest of the package source."""
    from bayes_risk._version import __version__

    out = {"bayes-risk": __version__, "python": platform.python_version(),
           "machine": platform.machine()}
    for dist in ("numpy", "pymc", "pytensor", "numba"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "absent"
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]  # the installed bayes_risk package
    for f in sorted(root.rglob("*.py")):
        h.update(f"{f.relative_to(root).as_posix()}|".encode())
        h.update(f.read_bytes())
    out["source"] = h.hexdigest()
    return out


def _read_entry(cache: Path | None, key: dict[str, Any], model: Any) -> Any | None:
    """The refit stored under ``key``, or ``None`` (a damaged entry warns)."""
    from bayes_risk._checksums import json_sha256
    from bayes_risk.exceptions import CALLER, BayesRiskError, DataWarning

    folder = Path(cache) / json_sha256(key)  # type: ignore[arg-type]
    if not folder.exists():
        return None
    try:
        stored = json.loads((folder / _ENTRY_KEY).read_text())
        if json_sha256(stored) != folder.name or stored != json.loads(json.dumps(key)):
            raise ValueError(f"{_ENTRY_KEY} does not hold the key the entry is named by")
        with warnings.catch_warnings():
            # a missing checksum (MODEL_UNVERIFIED) is damage here: the cache writes them all
            warnings.simplefilter("error", DataWarning)
            # the refitted model's own class reads it back (the engines never import the
            # models); a folder of another class fails its checks
            # (a PyMC model's with its function: never one the entry alone names)
            # (the engines never import the models: the model's own class and function)
            kw = ({"model_function": model.model_function}
                  if getattr(model, "model_function", None) is not None else {})
            refit = type(model).load(folder / _ENTRY_MODEL, **kw)
        if type(refit) is not type(model):
            raise ValueError(f"it holds a {type(refit).__name__}, not a {type(model).__name__}")
        # its seed, a Generator, was saved as a placeholder string (key.json has the seed): the
        # setting a fitted refit no longer uses, cleared so that the refit can be saved again
        refit.random_seed = None
    except (OSError, ValueError, KeyError, TypeError, BayesRiskError, DataWarning) as err:
        warnings.warn(
            f"the cached refit {folder} does not verify ({' '.join(str(err).split())[:200]}): "
            "the refit is made again and the entry replaced (REFIT_CACHE_DAMAGED).",
            DataWarning, skip_file_prefixes=CALLER)
        return None
    return refit


def _write_entry(cache: Path | None, key: dict[str, Any], refit: Any) -> None:
    """Store ``refit`` under ``key`` atomically; a failure warns ``REFIT_CACHE_UNWRITABLE``."""
    from bayes_risk._checksums import json_sha256
    from bayes_risk._io import atomic_dir, write_json
    from bayes_risk.exceptions import CALLER, DataWarning

    folder = Path(cache) / json_sha256(key)  # type: ignore[arg-type]
    try:
        with atomic_dir(folder) as tmp:
            refit.save(tmp / _ENTRY_MODEL)
            write_json(tmp / _ENTRY_KEY, key)
    except OSError as err:
        warnings.warn(f"the refit could not be stored in the cache {cache} ({err}); the run "
                      "goes on without storing it (REFIT_CACHE_UNWRITABLE).", DataWarning,
                      skip_file_prefixes=CALLER)


def pilot_refit(model: Any, original: pd.DataFrame, synthetic: pd.DataFrame, *,
                refit_draws: int | None = None) -> Pilot | None:
    """Time a short refit (``PILOT_TUNE``, ``PILOT_DRAWS`` sweeps) before the refits run.

    Returns
    -------
    Pilot or None
        ``None`` when the pilot recorded no sweep time.
    """
    import warnings

    from bayes_risk.attribute.cost import _posterior_attrs

    thin = int(refit_sweeps(model, refit_draws)["thin"])
    run = model._run_settings() if hasattr(model, "_run_settings") else {}
    chains = int(run_setting(model, "chains", 1) or 1)
    at_once = int(_posterior_attrs(model).get("chains_at_once", 1) or 1)
    extension = {"thin": thin, "max_sweeps": 0} if "thin" in run else {}
    out = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a pilot's few draws fail every convergence check
        for tune, draws, chains_, cores in ((2, 1, 1, 1),
                                            (PILOT_TUNE, PILOT_DRAWS, chains, at_once)):
            with _refit_settings(model, None, tune=tune, draws=draws, chains=chains_,
                                 cores=cores, **extension):
                started = time.perf_counter()
                new = model.fit_augmented(original, synthetic, random_seed=0)
                wall = time.perf_counter() - started
            sweeps = tune + thin * draws if extension else tune + draws
            t = _posterior_attrs(new).get("sweep_time")
            out = None if t is None else Pilot(
                sweep_time=float(t), setup=max(0.0, wall - (sweeps - 1) * float(t)),
                sweeps=sweeps)
    return out


@contextlib.contextmanager
def _refit_settings(model: Any, refit_draws: int | None, **overrides: Any) -> Iterator[None]:
    """The refits' settings (quiet, ``refit_draws``, ``overrides``), restored afterwards."""
    run = model._run_settings() if hasattr(model, "_run_settings") else {}
    saved = {k: getattr(model, k) for k in ("progressbar", "sampling") if hasattr(model, k)}
    # a filter, not the level: the Gibbs sampler resets the "pymc" logger's level per fit
    pymc_log = logging.getLogger("pymc")
    quiet = _BelowWarning()
    try:
        if "progressbar" in saved:
            model.progressbar = False
        sampler: dict[str, Any] = dict(overrides)
        if refit_draws is not None:
            # the run of the model's settings (those left at None resolved: a DPMPM's default
            # run stays thinned and self-extending) with fewer kept draws
            sampler = {**run, "draws": int(refit_draws), **overrides}
        if sampler and "sampling" in saved:  # the sampler settings: a changed copy
            model.sampling = dataclasses.replace(model.resolved_sampling, **sampler)
        pymc_log.addFilter(quiet)
        yield
    finally:
        for k, v in saved.items():
            setattr(model, k, v)
        pymc_log.removeFilter(quiet)


class _BelowWarning(logging.Filter):
    """Drops the sampler's per-fit INFO lines ("Multiprocess sampling ...")."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING
