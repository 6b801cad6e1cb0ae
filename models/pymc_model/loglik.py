"""Record and dataset log-likelihoods of :class:`~bayes_risk.models.PyMCSynthesizer`: the
observed variables' log-density compiled once with PyTensor, vectorised over posterior draws and
records, evaluated in blocks sized from the memory budget (:doc:`/user_guide/memory`)."""

from __future__ import annotations

import tracemalloc
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayes_risk._memory import check_memory, working_bytes
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import validate_table
from bayes_risk.exceptions import ValidationError

__all__ = ["CompiledLoglik", "check_independent", "compile_loglik", "dataset_loglik",
           "evaluate", "record_values"]

#: the temporary arrays of one block of draws x records: at most this many bytes (less when the
#: memory budget leaves less, bayes_risk._memory.working_bytes)
_BLOCK_CAP = 256 * 2**20
#: the block a function's bytes per (draw, record) cell are measured on
_PROBE_DRAWS, _PROBE_RECORDS = 8, 256


@dataclass
class CompiledLoglik:
    """The compiled ``[H, n]`` log-density: ``fn(*draws, *columns)``, the free variables it reads
    (``params``, each given ``[H, ...]``), the columns (``columns`` → container dtype, each given
    ``[n]``) and the bytes of temporaries per (draw, record) cell, once measured."""

    fn: Any
    params: tuple[str, ...]
    columns: dict[str, str]
    cell_bytes: float | None = field(default=None)


#: compiled likelihoods by the digest of their graph (a refit, a loaded model, the model of
#: another folder with the same likelihood reuse the function instead of compiling it again)
_COMPILED: OrderedDict[str, CompiledLoglik] = OrderedDict()
_KEEP = 8


def compile_loglik(lik: Any, digest: str | None = None) -> CompiledLoglik:
    """Compile a :class:`~bayes_risk.models.pymc_model.graph.LikelihoodGraph` into a function of
    ``[H, ...]`` draws and ``[n]`` columns giving ``[H, n]`` (PyTensor's ``vectorize_graph``
    batches it over the draws); ``digest``: the graph's, under which the function is kept for
    the next likelihood of the same graph."""
    if digest is not None and digest in _COMPILED:
        _COMPILED.move_to_end(digest)
        return _COMPILED[digest]
    comp = _compile(lik)
    if digest is not None:
        _COMPILED[digest] = comp
        while len(_COMPILED) > _KEEP:
            _COMPILED.popitem(last=False)
    return comp


def _compile(lik: Any) -> CompiledLoglik:
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph.replace import vectorize_graph
    from pytensor.graph.traversal import explicit_graph_inputs

    used = set(explicit_graph_inputs([lik.total]))
    params = tuple(name for name, v in lik.values.items() if v in used)
    columns = {c: str(v.dtype) for c, v in lik.columns.items() if v in used}
    batched = {lik.values[p]: pt.tensor(name=f"{p}_draws", dtype=lik.values[p].dtype,
                                        shape=(None, *lik.values[p].type.shape))
               for p in params}
    out = vectorize_graph(lik.total, replace=batched) if batched else lik.total
    fn = pytensor.function([*batched.values(), *[lik.columns[c] for c in columns]],
                           pt.cast(out, "float64"), on_unused_input="ignore")
    return CompiledLoglik(fn=fn, params=params, columns=columns)


def record_values(records: pd.DataFrame, schema: Schema, columns: Mapping[str, str], name: str
                  ) -> dict[str, np.ndarray]:
    """The columns a compiled function reads, checked against ``schema`` (naming ``name``) and
    encoded as their containers hold them."""
    from bayes_risk.models.pymc_model.graph import column_arrays

    validate_table(records, schema, name=name, extra_columns=True,
                   missing_hint="PyMCSynthesizer does not integrate missing values out of a "
                   "record's likelihood.")
    return column_arrays(records, schema, columns)


def _call(comp: CompiledLoglik, draws: Sequence[np.ndarray], cols: Sequence[np.ndarray],
          h: int, n: int) -> np.ndarray:
    out = np.asarray(comp.fn(*draws, *cols), dtype=np.float64)
    if out.shape != (h, n):  # a likelihood that reads no parameter: the same for every draw
        try:
            out = np.broadcast_to(out, (h, n))
        except ValueError as err:
            raise ValidationError(
                f"the model's log-density of {n} records has shape {out.shape}; expected one "
                "value per record (the first axis of every observed variable and data "
                "container is the records').", code="RECORDS_NOT_INDEPENDENT") from err
    return out


def _cell_bytes(comp: CompiledLoglik, draws: Sequence[np.ndarray], cols: Sequence[np.ndarray]
                ) -> float:
    """Bytes the function allocates per (draw, record) cell: the growth of its peak between two
    small blocks of records (numpy's allocations, which PyTensor's arrays are, are traced by
    ``tracemalloc``), after a first call, so that neither what the first call sets up nor what
    a call holds whatever its size is counted per cell. The blocks repeat the records and draws
    given, whatever their number."""
    if comp.cell_bytes is None:
        h = _PROBE_DRAWS
        block = [d[np.arange(h) % len(d)] for d in draws] if draws else []
        small, large = _PROBE_RECORDS // 4, _PROBE_RECORDS
        records = [np.resize(c, large) for c in cols]
        _call(comp, block, [c[:small] for c in records], h if draws else 1, small)
        started = not tracemalloc.is_tracing()
        if started:
            tracemalloc.start()
        peaks = []
        try:
            for r in (small, large):
                tracemalloc.reset_peak()
                before = tracemalloc.get_traced_memory()[0]
                _call(comp, block, [c[:r] for c in records], h if draws else 1, r)
                peaks.append(tracemalloc.get_traced_memory()[1] - before)
        finally:
            if started:
                tracemalloc.stop()
        per_cell = max(peaks[1] - peaks[0], 0) / ((h if draws else 1) * (large - small))
        # the output's 8 bytes a cell at least, and a margin for blocks of other shapes
        comp.cell_bytes = max(16.0, 1.5 * per_cell)
    return comp.cell_bytes


def evaluate(comp: CompiledLoglik, draws: Sequence[np.ndarray], cols: Sequence[np.ndarray],
             h: int, *, total: bool = False) -> np.ndarray:
    """``[h, n]`` log-likelihoods at the ``h`` draws ``draws`` (each ``[h, ...]``, in the order
    of ``comp.params``) of the records ``cols`` (in the order of ``comp.columns``); ``total``:
    their sums over the records (``[h]``). Computed in blocks of draws and records whose
    temporaries fit the memory budget.

    Raises
    ------
    ValidationError
        ``MEMORY_TOO_LARGE`` when the ``[H, n]`` output does not fit.
    """
    n = len(cols[0]) if cols else 0
    if not total:
        check_memory(8.0 * h * n, "records",
                     what=f"the log-likelihoods of {n:,} records under {h:,} posterior draws")
    out = np.zeros(h) if total else np.empty((h, n))
    if n == 0 or h == 0:
        return out
    cells = working_bytes(_BLOCK_CAP) / _cell_bytes(comp, draws, cols)
    rec_step = int(min(n, max(1, cells // h)))
    draw_step = h if cells >= h else int(max(1, cells))
    for a in range(0, h, draw_step):
        b = min(h, a + draw_step)
        block = [d[a:b] for d in draws]
        for r in range(0, n, rec_step):
            s = min(n, r + rec_step)
            ll = _call(comp, block, [c[r:s] for c in cols], b - a, s - r)
            if total:
                out[a:b] += ll.sum(axis=1)
            else:
                out[a:b, r:s] = ll
    return out


def dataset_loglik(comp: CompiledLoglik, draws: Sequence[np.ndarray],
                   frames: Sequence[Mapping[str, np.ndarray]], h: int) -> np.ndarray:
    """``[h, m]``: each released dataset's log-likelihood (its records' terms summed)."""
    out = np.empty((h, len(frames)))
    for li, cols in enumerate(frames):
        out[:, li] = evaluate(comp, draws, [cols[c] for c in comp.columns], h, total=True)
    return out


def check_independent(comp: CompiledLoglik, draws: Sequence[np.ndarray],
                      cols: Mapping[str, np.ndarray]) -> None:
    """Each record's log-density depends on its own values only: a few records evaluated
    together, in reverse order and one at a time give the same numbers (at one draw).

    Raises
    ------
    ValidationError
        ``RECORDS_NOT_INDEPENDENT`` otherwise (a lag, a cumulative sum or a mean over the
        records inside the model).
    """
    k = min(5, len(next(iter(cols.values()))) if cols else 0)
    if k < 2:
        return
    arrays = [cols[c][:k] for c in comp.columns]
    together = _call(comp, draws, arrays, 1, k)[0]
    backwards = _call(comp, draws, [a[::-1] for a in arrays], 1, k)[0][::-1]
    alone = np.array([_call(comp, draws, [a[i:i + 1] for a in arrays], 1, 1)[0, 0]
                      for i in range(k)])
    for other in (backwards, alone):
        if not np.allclose(together, other, rtol=1e-9, atol=1e-12, equal_nan=True):
            i = int(np.flatnonzero(~np.isclose(together, other, rtol=1e-9, atol=1e-12,
                                               equal_nan=True))[0])
            raise ValidationError(
                f"the log-density of record {i} is {together[i]:.6g} evaluated with records "
                f"0-{k - 1} and {other[i]:.6g} evaluated "
                + ("in reverse order" if other is backwards else "alone")
                + ": a record's likelihood depends on the other records' values (a lag, a "
                "cumulative sum, a mean or a sort over the records inside the model). "
                "bayes-risk needs records that are independent given the model's parameters "
                "(methods, Models written in PyMC)", code="RECORDS_NOT_INDEPENDENT")
