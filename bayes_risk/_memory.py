"""The memory a run may use (:func:`memory_limit`, ``--memory``, else the machine's), the
chunk sizes made from it and the checks of what cannot be chunked. See :doc:`/user_guide/memory`.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from bayes_risk.exceptions import ValidationError, arg_name

__all__ = ["available_memory", "check_memory", "memory_limit", "parse_memory",
           "release_bytes", "release_free_memory", "resident_memory", "working_bytes",
           "format_bytes", "posterior_bytes", "forest_bytes", "lean_process",
           "fixed_mmap_threshold", "check_release_size", "check_saved_release",
           "check_posterior_memory", "check_forest_memory", "load_what_the_run_loads",
           "check_nuts_memory"]

#: the user's limit in bytes for the run in this context (``None``: the machine's memory)
_LIMIT: ContextVar[int | None] = ContextVar("bayes_risk_memory_limit", default=None)

#: the smallest working size a chunked stage is given, however little of the budget is left
#: (one chunk of a few thousand targets): below it the check of what cannot be chunked decides
MIN_WORKING_BYTES = 16 * 2**20

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9,
          "gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30,
          "tib": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_memory(value: int | float | str | None, argument: str = "memory") -> int | None:
    """Bytes of a memory size (``"2GB"``, ``"1.5GiB"``, a number of bytes; ``None`` stays
    ``None``); ``ValidationError`` for a non-size or one below 1 MB."""
    if value is None:
        return None
    code = "BAD_OPTION_VALUE" if argument.startswith("--") else "INVALID_ARGUMENT"
    nbytes: float | None = None
    if isinstance(value, bool):
        nbytes = None
    elif isinstance(value, (int, float)):
        nbytes = float(value)
    elif isinstance(value, str):
        m = _SIZE.match(value)
        if m and m.group(2).lower() in _UNITS:
            nbytes = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if nbytes is None or not math.isfinite(nbytes):
        raise ValidationError(
            f"{argument} must be a memory size such as 2GB, 512MB or 1.5GiB (or a number of "
            f"bytes). Got {value!r}.", code=code)
    if nbytes < 10**6:
        raise ValidationError(
            f"{argument} must be at least 1MB (the interpreter alone needs more). Got "
            f"{value!r}.", code=code)
    return int(nbytes)


@contextlib.contextmanager
def memory_limit(limit: int | float | str | None) -> Iterator[None]:
    """Limit the memory of the work done inside the ``with`` block, as ``--memory`` does on the
    command line (:doc:`/user_guide/memory`): chunks are sized from what is left, and what cannot
    be chunked is refused beforehand (``MEMORY_TOO_LARGE``). Nested limits keep the smaller.

    Parameters
    ----------
    limit : int, float, str or None
        Bytes, or a size with a unit: ``"2GB"``, ``"512MB"``, ``"1.5GiB"``. ``None`` leaves the
        limit as it is (by default the memory available on the machine; an audit's default is
        half of it: :doc:`/user_guide/memory`, "The audit's memory plan").

    Raises
    ------
    ValidationError
        ``limit`` is not a memory size or is below 1 MB.

    Examples
    --------
    >>> import bayes_risk as br
    >>> with br.memory_limit("2GB"):
    ...     pass  # identification_risk, attribute_risk, ... within 2 GB
    """
    nbytes = parse_memory(limit, "limit")
    if nbytes is None:
        yield
        return
    outer = _LIMIT.get()
    token = _LIMIT.set(nbytes if outer is None else min(outer, nbytes))
    try:
        yield
    finally:
        _LIMIT.reset(token)


def current_limit() -> int | None:
    """The user's limit in this context, in bytes (``None``: none given)."""
    return _LIMIT.get()


def available_memory() -> int | None:
    """Bytes available to this process: Linux ``MemAvailable``, capped by a cgroup v2 limit
    (``None`` if the platform does not say)."""
    avail: int | None = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = None
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            lim = fh.read().strip()
        if lim != "max":
            with open("/sys/fs/cgroup/memory.current") as fh:
                cur = int(fh.read().strip())
            room = int(lim) - cur
            avail = room if avail is None else min(avail, room)
    except (OSError, ValueError):
        pass
    return avail


def resident_memory() -> int:
    """Bytes of this process's resident memory now (0 where the platform does not say)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


def peak_memory() -> int | None:
    """Bytes of this process's peak resident memory since it started (``None`` where the
    platform does not say: no ``resource`` module)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024  # macOS: bytes


def release_free_memory() -> None:
    """Return the memory freed so far to the operating system (glibc's ``malloc_trim``; Linux
    only), so that :func:`resident_memory` counts what is held rather than what the allocator
    kept after a large array was freed."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _worker_room() -> int | None:
    """In a task of a Dask worker with a memory limit, what the worker may still allocate
    before Dask pauses it (``distributed.worker.memory.pause``, 80 % of the limit by default;
    it restarts the worker at 95 %); ``None`` elsewhere."""
    if "distributed" not in sys.modules:  # no Dask in this process: not a worker
        return None
    try:
        from distributed import get_worker

        worker = get_worker()
        limit = worker.memory_manager.memory_limit
        pause = worker.memory_manager.memory_pause_fraction
    except (ImportError, ValueError, AttributeError):
        return None
    if not limit:
        return None
    return max(int(limit * (pause or 1.0)) - resident_memory(), 0)


def room() -> int | None:
    """Bytes the run may still allocate (``None`` if unknown): what is left of the memory limit
    (:func:`memory_limit`), else of the machine's available memory; in a task of a Dask worker,
    no more than the worker's own limit leaves."""
    limit = _LIMIT.get()
    left = max(limit - resident_memory(), 0) if limit is not None else available_memory()
    worker = _worker_room()
    if worker is None:
        return left
    return worker if left is None else min(left, worker)


def working_bytes(cap: int, reserve: float = 0) -> int:
    """Bytes a chunked stage may give its temporary arrays: ``cap``, or a quarter of what
    :func:`room` leaves beside ``reserve`` (what the stage will still allocate and keep) when
    less, never below :data:`MIN_WORKING_BYTES` (read it in the thread of the loop)."""
    left = room()
    if left is None:
        return int(cap)
    return int(max(MIN_WORKING_BYTES, min(cap, (left - reserve) // 4)))


def check_memory(nbytes: float, argument: str, *, what: str) -> None:
    """``ValidationError`` ``MEMORY_TOO_LARGE`` if about ``nbytes`` do not fit in what is left,
    naming ``argument`` (driving the size) and ``what`` (what the memory is for)."""
    left = room()
    if left is None or nbytes <= left:
        return
    limit = _LIMIT.get()
    if limit is not None:
        given = arg_name("memory")  # --memory on the command line
        given = "memory_limit" if given == "memory" else given
        where = (f"{format_bytes(left)} of the memory limit ({format_bytes(limit)}, {given}) "
                 "is left")
        # what the process holds now and this allocation: the least limit that passes here
        fix = (f"reduce {argument} or raise the limit to at least "
               f"{format_bytes(resident_memory() + nbytes, up=True)}")
    else:
        where = f"{format_bytes(left)} is available"
        fix = f"reduce {argument}"
    raise ValidationError(
        f"{what} would need about {format_bytes(nbytes)} of memory but {where}; {fix}.",
        code="MEMORY_TOO_LARGE")


def release_bytes(m: int, table: float, *, fitted: bool, forest: float = 0.0) -> float:
    """Bytes a synthesis of ``m`` datasets of a table of ``table`` bytes holds at its peak
    (``fitted``: the model is fitted in the same run; ``forest``: what a random forest's trees
    and leaf arrays add, :func:`forest_bytes`).

    Measured with CART (CE-like 5,000 and 30,000 records x 7 columns, m = 5 and 20): each
    dataset held 1.36 times the table (2.29 MB at 30,000 records), and the fit, the synthesis's
    working arrays and the writing about 16 times the table and 5 MB (26.4 MB at 30,000). From
    a saved model (that CART; a DPMPM of ACS-like 2,000 and 20,000 records x 14 columns): 1.33
    and 1.0 times the table a dataset, and the synthesis's working arrays and the writing up to
    11.4 times the table (19.2 MB at 30,000 records; 13.1 MB for the DPMPM at 20,000). What
    loads after the check (the writer, the datasets' checksums) is 8 MB: with 5 MB, 20 datasets
    of 5,000 CE-like records from a saved CART peaked 1 MB above the least limit named.
    """
    return 1.4 * m * table + (16 if fitted else 12) * table + 8e6 + forest


#: the parameter vectors (position, momentum, gradient, of each edge of the tree and its
#: proposal, and the mass matrix's adaptation) NUTS holds at once while a chain builds its tree,
#: at PyMC's default maximum depth of 10: 3 vectors for each of 2 edges and 1 proposal per
#: level of the recursion, and a few more
NUTS_VECTORS = 42


def posterior_bytes(n: int, p: int, width: int, K: int, *, draws: int, chains: int, tune: int,
                    temperatures: int = 1, nuts: int = 0) -> float:
    """Bytes an MCMC fit of ``n`` records x ``p`` columns holds beyond what is loaded: ``K``
    components of ``width`` parameters each (1 without components), ``chains`` chains of
    ``tune`` warm-up sweeps and ``draws`` kept draws, ``temperatures`` replicas a chain.

    The draws, three ``[n, K]`` tables, and (measured on DPMPM, ACS-like 5,000-40,000 records x
    14 columns: up to 26.4 MB beyond the check where these terms counted 22.3 MB) the coded
    copies of the table and each draw's convergence quantities; each sweep's statistics, kept
    for the warm-up too and copied once into the posterior's DataTree: 16 doubles (DPMPM
    records 2, PyMC's samplers up to 16), and 4 T more for a tempered ladder of T replicas
    (``tune=10**9`` asked for 32 GB before any check counted it); with tempering, every chain
    keeps T replicas of the sweep's state (DPMPM on ACS-like 300 and 1,000 records x 5 columns:
    41 and 84 kB a replica at K = 50, 56 kB at K = 10; counted 49, 104 and 66 kB).

    ``nuts``: a PyMC model's fit by NUTS, ``width`` the values of one draw of its free
    variables and ``nuts`` the chains run at once: PyMC's trace holds the warm-up draws too,
    copied once into the returned DataTree, and each chain running holds
    :data:`NUTS_VECTORS` vectors of ``width`` values (the gradients and the tree's states) —
    PyMC's NUTS as written, not measured (a model of 3,000,000 values a draw: 24 MB a vector).
    """
    n_draws = draws * chains
    need = 8.0 * (n_draws * K * (width + 1) + 3 * n * K + K * width + 2 * n * p
                  + 2 * n_draws * (width + K))
    T = temperatures
    need += 8.0 * 2 * chains * (tune + draws) * (16 + (4 * T if T > 1 else 0))
    if T > 1:
        need += 8.0 * chains * T * (n * (p + 3) + 3 * K * (width + 1))
    if nuts:
        need += 8.0 * width * (2 * chains * tune + NUTS_VECTORS * min(nuts, chains))
    return need


def forest_bytes(model: Any, n: int, synthesized: Any) -> float:
    """What a random forest synthesizer's fit and synthesis hold beyond the table (0 for other
    models): per tree, record and synthesized column, 150 / min_samples_leaf bytes of fitted
    trees and 48 of leaf arrays (the fit's and the synthesis's ``(records, trees)`` leaves and
    in-bag donors), twice with ``group_by`` (a forest per group too).

    Measured on CE-like records, three numeric columns (the larger trees: a regression tree of
    n records had 1.24 n / min_samples_leaf nodes at 1, 104 bytes a node with its donors): 163
    bytes a tree, record and column at min_samples_leaf 1 (1.22 GB beyond the table at 5,000
    records, 500 trees, m = 5; 99 MB at 2,000, 100 trees, m = 20), 41 at 5; categorical
    columns held less (57 at 1). CEdata's Income (heavy-tailed, nearly every value distinct,
    500 trees, m = 5) held 190 bytes at 1, hence the margin. With ``oob_only`` the forest
    grows by 100 trees until every record is out of bag in ``min_oob_trees`` of them (a record
    is out of a tree's bootstrap with probability about e^-1), at most to 20 ``n_trees``: the
    trees counted are ``3 min_oob_trees + 100`` within those bounds.
    """
    from bayes_risk.models.trees.random_forest import RandomForestSynthesizer

    if not isinstance(model, RandomForestSynthesizer):  # imported: a forest was made
        return 0.0
    per = 48.0 + 150.0 / max(int(model.min_samples_leaf), 1)
    columns = len(synthesized) * (2 if model.group_by is not None else 1)
    trees = int(model.n_trees)
    if model.oob_only:
        trees = min(20 * trees, max(trees, 3 * int(model.min_oob_trees) + 100))
    return per * trees * n * columns


def check_release_size(m: int, n: int, width: int, table: float | None = None, *,
                       fitted: bool = False, forest: float = 0.0) -> None:
    """Refuse, before the fit, a release of ``m`` datasets of ``n`` records x ``width`` columns
    too large for memory. ``table``: the bytes of the original table (else 8 a cell);
    ``fitted``: the model is fitted here too; ``forest``: what a random forest's trees and leaf
    arrays add (:func:`forest_bytes`); the measured figures: :func:`release_bytes`."""
    table = 8.0 * max(n, 1) * max(width, 1) if table is None else table
    need = release_bytes(m, table, fitted=fitted, forest=forest)
    # a forest's trees count too: the error names what makes the size
    check_memory(need, f"{arg_name('m')} or {arg_name('n_trees')}" if fitted
                 and forest > m * table else arg_name("m"),
                 what=f"{m:,} synthetic datasets of {n:,} records x {width} columns"
                 + (" and the forests' trees" if forest else ""))


def check_saved_release(model: Any, m: int) -> None:
    """Refuse, before the synthesis, ``m`` datasets of a fitted ``model`` too large for memory
    (read under a limit once the Parquet writer, which the release is written with, is
    loaded)."""
    # the records of a release: a Bayesian model's n_records, a tree model's fitted table (a
    # registered model of another distribution may say neither: one record, one column)
    n = getattr(model, "n_records", None)
    n = n if n is not None else len(getattr(model, "_data", ()))
    schema = getattr(model, "schema_", None)
    if current_limit() is not None:
        import io

        import pandas as pd

        pd.DataFrame({"x": [0]}).to_parquet(io.BytesIO())
    trees = getattr(model, "n_trees_", None)  # a random forest's trees per column
    check_release_size(m, int(n), len(schema.names) if schema is not None else 1,
                       forest=0.0 if trees is None else 40.0 * n * sum(trees.values()))


def check_posterior_memory(model: Any, settings: dict[str, Any], df: Any, schema: Any) -> None:
    """Refuse an MCMC fit of ``model`` (made of ``settings``) to ``df`` whose posterior arrays
    cannot fit in the memory left, read (under a limit) after what the run loads
    (:func:`load_what_the_run_loads`): the least limit the error names is then one that
    passes."""
    from bayes_risk.contract import run_setting

    def setting(name: str, default: int) -> int:  # not an integer: the model refuses it
        try:
            return max(int(run_setting(model, name, default) or default), default)
        except (TypeError, ValueError):
            return default

    try:
        K = max(int(getattr(model, "n_components", 1) or 1), 1)
    except (TypeError, ValueError):
        return
    # a model whose graph says the size of a draw (a PyMC model: every free variable's values),
    # sized before the probe fit too, which would sample it
    values = getattr(model, "draw_values", None)
    P = int(values(schema)) if callable(values) else 0

    def check() -> None:
        width = P or sum((c.n_levels if c.is_categorical else 2) for c in schema)  # a component
        # settings left at None are resolved as the fit resolves them
        run = getattr(model, "_run_settings", None)
        draws = settings.get("draws")
        draws = draws if draws is not None else (run()["draws"] if callable(run) else 1000)
        chains = settings.get("chains")
        chains = chains if chains is not None else setting("chains", 1)
        T = setting("temperatures", 1)
        need = posterior_bytes(len(df), len(df.columns), width, K,
                               draws=max(int(draws or 0), 0), chains=max(int(chains or 1), 1),
                               tune=setting("tune", 0), temperatures=T,
                               nuts=setting("cores", 1) if P else 0)
        check_memory(need, _drivers(K, T, P), what=_fit_what(T, P))

    if P:
        check()
    load_what_the_run_loads(type(model), settings, df, lambda probe, folder: probe.save(folder),
                            schema=schema)
    check()


def _drivers(K: int, T: int, values: int) -> str:
    """What drives the size of a fit: the settings that multiply it (and a PyMC model's free
    variables)."""
    drivers = [arg_name(n) for n in ("tune", "draws", "chains")] + (
        [arg_name("n_components")] if K > 1 else []) + ([arg_name("temperatures")] if T > 1
                                                        else []) + (
        [f"the model's free variables ({values:,} values a draw)"] if values else [])
    return f"{', '.join(drivers[:-1])} or {drivers[-1]}"


def _fit_what(T: int, values: int) -> str:
    """What a fit's memory is for."""
    return ("the posterior draws" + (f" and {T:,} tempered replicas of each chain" if T > 1
                                     else "")
            + (" and NUTS's gradients and trees" if values else ""))


def check_nuts_memory(values: int, n: int, p: int, *, draws: int, chains: int, tune: int,
                      cores: int) -> None:
    """Refuse, before sampling, a NUTS fit whose draws of ``values`` values, warm-up, gradients
    and trees cannot fit in the memory left (:func:`posterior_bytes`): a PyMC model fitted in
    Python, as the command line checks it before the fit."""
    need = posterior_bytes(n, p, values, 1, draws=draws, chains=chains, tune=tune,
                           nuts=max(int(cores), 1))
    check_memory(need, _drivers(1, 1, values), what=_fit_what(1, values))


def check_forest_memory(model: Any, settings: dict[str, Any], df: Any, schema: Any,
                        synthesized: Any) -> None:
    """Refuse a random forest (other models: nothing) whose trees cannot fit in the memory left
    (read under a limit once the run's libraries are loaded): :func:`forest_bytes` and, as
    saving copies the trees' node arrays, half of them again (the fit and save of CE-like 5,000
    records x 3 columns peaked at 175 and 182 bytes a tree, record and column at 100 and 300
    trees), and the table's copies as CART's fit (16 times the table and 5 MB)."""
    columns = synthesized or schema.synthesized or schema.names
    forest = forest_bytes(model, len(df), columns)
    if not forest or current_limit() is None:
        return
    load_what_the_run_loads(type(model), settings, df, lambda probe, folder: probe.save(folder),
                            schema=schema, synthesized=synthesized)
    table = float(df.memory_usage(deep=True).sum())
    check_memory(1.5 * forest + 16 * table + 5e6,
                 f"{arg_name('n_trees')} or {arg_name('min_oob_trees')}" if model.oob_only
                 else arg_name("n_trees"),
                 what=f"{model.n_trees:,} trees a forest of {len(df):,} records for "
                      f"{len(columns)} column(s)")


#: the least values of the size settings a probe fit keeps (:func:`load_what_the_run_loads`)
_PROBE_SIZES: dict[str, int] = {"temperatures": 2, "n_components": 5, "n_trees": 10,
                                "min_oob_trees": 5}


def load_what_the_run_loads(cls: type, settings: dict[str, Any], df: Any, write: Any,
                            **fit_kw: Any) -> None:
    """Under a memory limit, fit ``cls`` once on a few records and draws (warnings dropped) and
    ``write(probe, folder)`` what the run writes into a temporary folder: the libraries and
    compiled kernels the run loads (numba and the sampler's kernels, scikit-learn, pyarrow, the
    NetCDF writer: about 245 MB of a DPMPM fit's 425 MB peak, 80 MB of CART's) are then resident
    when the run's memory check reads what is left."""
    import inspect
    import tempfile
    import warnings
    from pathlib import Path

    if current_limit() is None:
        return
    tiny = {"draws": 2, "tune": 2, "chains": 1, "cores": 1, "max_sweeps": 0,
            "progressbar": False}
    # the settings that multiply the work and the memory, at their least that loads the same
    # code (a tempered ladder of 2, a forest of a few trees): the probe runs before the check
    for name, least in _PROBE_SIZES.items():
        if isinstance(settings.get(name), int) and settings[name] > least:
            tiny[name] = least
    names = getattr(cls, "setting_names", None)  # a Bayesian model's sampler settings by name
    params = set(names() if callable(names) else inspect.signature(cls).parameters)
    probe = cls.from_settings({**settings, **{k: v for k, v in tiny.items() if k in params}})
    with warnings.catch_warnings(), tempfile.TemporaryDirectory() as tmp:
        warnings.simplefilter("ignore")
        seed = settings.get("random_seed")  # a model given its seed refuses another one
        probe.fit(df.iloc[:50], random_seed=0 if seed is None else seed, **fit_kw)
        write(probe, Path(tmp) / "probe")


def lean_process(blas_threads: bool) -> None:
    """Load numpy with a single-threaded OpenBLAS and numba without SciPy's linear algebra
    (unless ``blas_threads``), and pyarrow with the system allocator, if not loaded yet:
    matching needs neither's threads, products or pools."""
    if not blas_threads and "scipy.linalg" not in sys.modules \
            and "numba.np.arraymath" not in sys.modules:
        sys.meta_path.insert(0, _NumbaWithoutBlas())
    if "numpy" not in sys.modules and not blas_threads \
            and "OPENBLAS_NUM_THREADS" not in os.environ:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        try:
            import numpy  # noqa: F401
        finally:
            del os.environ["OPENBLAS_NUM_THREADS"]
    if "pyarrow" not in sys.modules and "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        try:
            import pyarrow
        except ImportError:  # pandas then stores text as Python objects
            return
        pyarrow.set_memory_pool(pyarrow.system_memory_pool())


class _NumbaWithoutBlas:
    """An import finder that refuses ``scipy.linalg`` to numba's array functions while they
    load, then leaves (at the first import of ``scipy.linalg``, whoever makes it). numba loads
    them with the first compiled kernel and imports SciPy's BLAS only to choose how
    ``np.correlate`` and ``np.convolve`` multiply, which no kernel of the package calls; without
    it they multiply in a loop, and the process does not hold SciPy's linear algebra (14 MiB
    and 0.1 s of CPU). Anything importing ``scipy.linalg`` later, numba included, gets it."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name != "scipy.linalg":
            return None
        with contextlib.suppress(ValueError):  # another thread's import took it out
            sys.meta_path.remove(self)
        loading = sys.modules.get("numba.np.arraymath")
        if loading is not None and getattr(loading.__spec__, "_initializing", False):
            raise ImportError("scipy.linalg is not loaded for numba's array functions")
        return None


#: glibc's ``M_MMAP_THRESHOLD`` (``mallopt``), and the size from which the run's arrays are
#: mapped: fixed, so that glibc does not raise it (up to 32 MiB) after freeing an array and then
#: keep the matching threads' freed index arrays in its heaps (at 10^6 records, m = 5: 0.08 GB of
#: the peak). 6 MiB: a column of 10^6 records of 8 bytes (7.6 MiB: a dataset's two radius codes
#: or sort orders) is mapped, and returned as it is freed (8 MiB kept them in the heap: 16 MiB
#: more at that peak, with 0.2 s less system time, within the CPU's noise); smaller thresholds
#: map the per-chunk arrays too, which costs system time (1 MiB: 2 s more CPU for 0.01 GB less)
_M_MMAP_THRESHOLD, _MMAP_THRESHOLD = -3, 6 << 20


def fixed_mmap_threshold() -> None:
    """Map every allocation of :data:`_MMAP_THRESHOLD` bytes or more (glibc only), so that
    freeing it returns it to the operating system at once."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    except (OSError, AttributeError):  # not glibc
        pass


def format_bytes(n: float, up: bool = False) -> str:
    """``n`` bytes in the units :func:`parse_memory` reads (``1.5 GB`` is 1.5 x 10**9);
    ``up``: rounded up (a least size), else to the nearest."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            if unit == "B":
                return f"{math.ceil(n) if up else int(n)} B"
            return f"{math.ceil(n * 10) / 10 if up else n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"
