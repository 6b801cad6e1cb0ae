"""Stage 2 of attribute risk: candidate sets, likelihoods, diagnostics and flags of a partition."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from bayes_risk._terminal import progress
from bayes_risk.attribute.candidates import (
    CandidateSet,
    build_candidates,
    candidates_from_frame,
    one_variable_codes,
    product_codes,
    too_many_candidates,
)
from bayes_risk.attribute.chains import STACK_RECORDS
from bayes_risk.attribute.missing import vary_missing
from bayes_risk.attribute.plan import (
    AttributePlan,
    CandidateGroup,
    PartitionOutput,
    RecordPartition,
    Workspace,
)
from bayes_risk.attribute.record_table import boot_block_records, groups_by_size
from bayes_risk.exceptions import arg_name

__all__ = ["evaluate", "candidate_sets", "chunk_records", "output_bytes", "MAX_CHUNK_RECORDS"]

#: records of a chunk at most (the speed's optimum); fewer when the memory budget is smaller
MAX_CHUNK_RECORDS = 256
#: records whose candidate sets size a chunk's arrays
_SIZING_RECORDS = 64


def evaluate(plan: AttributePlan, partition: RecordPartition) -> PartitionOutput:
    """Likelihoods, diagnostics and flags of the records of one partition."""
    t_loop = time.perf_counter()
    ws, out = Workspace(), PartitionOutput()
    order = np.sort(np.asarray(partition.positions, dtype=np.int64))
    reps, copies = distinct_records(plan, order)
    weight = np.ones(len(plan.data.orig), dtype=np.int64)
    for i, dups in copies.items():
        weight[i] += dups.size
    size = plan.chunk_size
    chunks = [reps[a : a + size] for a in range(0, reps.size, size)]
    # counted in records (distinct ones: a copy takes its original's figures), not in chunks
    for chunk in progress(chunks, total=int(reps.size), description="attribute risk",
                          unit="records", size=len, enabled=partition.progressbar):
        csets = candidate_sets(plan, chunk)
        sizes = np.array([c.size for c in csets])
        for gi in groups_by_size(sizes):
            _evaluate_group(plan, chunk[gi], [csets[k] for k in gi], ws, out, weight)
    for i, dups in copies.items():
        for j in dups:
            _copy_record(out, i, int(j))
    return finish(out, ws, t_loop)


def chunk_records(plan: AttributePlan, chunk_size: int | None) -> int:
    """Records per chunk: ``chunk_size``, or the most the memory budget allows beside the
    outputs every record keeps until the result is assembled (checked first)."""
    from bayes_risk._memory import check_memory, working_bytes

    n = plan.data.positions.size
    if not n:
        return chunk_size or MAX_CHUNK_RECORDS
    # G: the largest candidate set of the first records (the user's order)
    sizes = [c.size for c in candidate_sets(plan, plan.data.positions[:_SIZING_RECORDS])]
    G, m, H = max(max(sizes), 1), plan.data.m, max(plan.draws.H, 1)
    outputs = n * output_bytes(plan, G)
    # a chunk's temporaries per record, measured (10,000 records, H = 1,000, G = 35, m = 5
    # peaked 0.5 GB higher at 256 records a chunk than at 128): about 2 (m + 2) arrays of H x G
    # doubles, and the m + 2 bootstrap arrays of B x G
    B = plan.draws.n_boot
    per = 8.0 * G * (2 * (m + 2) * H + (m + 2) * B)
    after = assembly_bytes(n, G, B)
    # a chunk never holds more than the records there are (chunk_size=10**9 of 4 records: 4)
    given = None if chunk_size is None else min(int(chunk_size), n)
    # what multiplies it: the records, the bootstrap, the candidates (G), a given chunk
    drivers = [arg_name("records"), arg_name("bootstrap"), arg_name("candidates"),
               *([] if given is None else [arg_name("EstimatorSpec.chunk_size")])]
    check_memory(outputs + per * (given or 1) + after,
                 f"{', '.join(drivers[:-1])} or {drivers[-1]}",
                 what=f"the outputs of {n:,} records, the working arrays of one chunk and the "
                      "assembly of the result")
    if given is not None:
        return given
    work = working_bytes(int(MAX_CHUNK_RECORDS * per), reserve=outputs + after)
    return int(min(MAX_CHUNK_RECORDS, max(1, work // per)))


def assembly_bytes(n: int, G: int, B: int) -> float:
    """Bytes the records' loop leaves to what follows it, beside the outputs: the assembly's
    blocks of stacked records, about 24 doubles per candidate, and five arrays of a block's
    bootstrap replicates on each of two threads; the result's own tables, about 1.5 kB a
    record; and the two ``[B, n]`` tables of the summary's Monte Carlo file figures (measured
    at 10^5 records, where the chunks' arrays were still resident)."""
    return (8.0 * (24 * G * STACK_RECORDS + 2 * 6 * boot_block_records(B, G) * B * G)
            + n * (1500 + 16 * B))


def output_bytes(plan: AttributePlan, G: int) -> float:
    """Bytes a record with ``G`` candidates keeps until the result is assembled (the result
    keeps them too): its candidates, likelihoods, diagnostics and bootstrap replicates."""
    m, est, chains = plan.data.m, plan.estimator.name, plan.chains
    # per candidate, in doubles: the values of the candidate set; the log-likelihood, mean
    # ratio, log prior and log posterior; the bootstrap's replicates
    per = len(plan.data.vary) + 4 + plan.draws.n_boot
    if plan.draws.L is not None:  # the published sums' ESS and largest weight per dataset
        per += 1 + 2 * m
    if est == "stabilised":  # k̂, ESS and the bounds; k̂ and ESS of each augmented fit
        per += 4.125 + 2 * m
    else:  # k̂ or the plug-in's Monte Carlo error
        per += 1
    if chains is not None and chains.run:  # each chain's estimate; its batches' in float32
        per += chains.n_chains * (1 + chains.n_batches / 2)
    # a record's arrays, dictionary and candidate set as Python objects
    return 8.0 * G * per + 2048


def finish(out: PartitionOutput, ws: Workspace, t_loop: float) -> PartitionOutput:
    """``out`` with the partition's timing (the loop since ``t_loop``, the model's share)."""
    timing = ws.timing
    timing["records_loop_s"] = time.perf_counter() - t_loop
    timing["engine_s"] = timing["records_loop_s"] - timing["model_likelihood_s"]
    out.timing = timing
    return out


def _evaluate_group(plan: AttributePlan, pos: np.ndarray, csets: list[CandidateSet],
                    ws: Workspace, out: PartitionOutput, weight: np.ndarray) -> None:
    """Records of a chunk with the same number of candidates ``G``."""
    data = plan.data
    vals = np.stack([c.values for c in csets])
    g0 = np.array([c.g0 for c in csets], dtype=np.int64)
    r, g, _ = vals.shape
    unknown = np.zeros((r, g), dtype=bool)
    for j, c in enumerate(data.vary):
        if data.is_cat[j]:
            unknown |= vals[:, :, j] >= data.levels_model[c]
    out.any_unknown = out.any_unknown or bool(unknown.any())
    # a value missing in the record is integrated out, not guessed
    unknown |= vary_missing(vals, g0, data.is_cat)
    skip = unknown[np.arange(r), g0]
    for k, i in enumerate(pos):
        out.candidates[int(i)] = csets[k]
        out.flags[int(i)] = ["TRUTH_OUTSIDE_SUPPORT"] if skip[k] else []
    for i in pos[skip]:
        out.skip(int(i), g)
    # records with missing values go apart: only they need the slower, marginalising route
    miss = data.orig.iloc[pos].isna().to_numpy().any(axis=1)
    for ok in (~skip & ~miss, ~skip & miss):
        if ok.any():
            group = CandidateGroup(pos=pos[ok], vals=vals[ok], g0=g0[ok], unknown=unknown[ok],
                                   weight=weight[pos[ok]])
            plan.estimator.estimate(plan, group, ws, out)


def distinct_records(plan: AttributePlan, order: np.ndarray
                     ) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """The positions of ``order`` to evaluate, and for each the identical records that copy it."""
    from bayes_risk.attribute.strategies import PlugIn

    model = plan.model.model
    # (an intruder who knows some records: a known and an unknown twin differ)
    if (order.size < 2 or plan.rule.spec is None or isinstance(plan.estimator, PlugIn)
            or getattr(model, "model_class", "O") != "P" or plan.known is not None):
        return order, {}
    frame = plan.data.orig.iloc[order]
    cols = []
    for c in frame.columns:
        x = frame[c]
        if isinstance(x.dtype, pd.CategoricalDtype):
            cols.append(x.cat.codes.to_numpy(np.int64))
        elif x.dtype.kind in "iub":
            cols.append(x.to_numpy(np.int64))
        elif x.dtype.kind == "f":
            # bit patterns: 0.0 and -0.0 stay apart, a nan matches the same nan
            cols.append(np.ascontiguousarray(x.to_numpy(np.float64)).view(np.int64))
        else:
            cols.append(pd.factorize(x, use_na_sentinel=True)[0].astype(np.int64))
    key = np.stack(cols, axis=1) if cols else np.zeros((order.size, 0), dtype=np.int64)
    _, first, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inv = inv.ravel()
    if first.size == order.size:
        return order, {}
    rep_of = first[inv]  # position in order of each record's representative
    dup = np.flatnonzero(rep_of != np.arange(order.size))
    dup = dup[np.argsort(rep_of[dup], kind="stable")]
    cut = np.flatnonzero(np.diff(rep_of[dup])) + 1
    copies = {int(order[rep_of[d[0]]]): order[d] for d in np.split(dup, cut)}
    return np.sort(order[first]), copies


def _copy_record(out: PartitionOutput, src: int, dst: int) -> None:
    """Record ``dst`` gets the outputs of the identical record ``src`` (copies, not views)."""
    out.candidates[dst] = out.candidates[src]
    out.flags[dst] = list(out.flags[src])
    out.loglik[dst] = out.loglik[src].copy()
    out.log_mean_r[dst] = out.log_mean_r[src].copy()
    out.diag[dst] = {k: np.copy(v) for k, v in out.diag[src].items()}
    out.n_dropped[dst] = out.n_dropped[src]
    if src in out.boot:
        out.boot[dst] = out.boot[src].copy()


def candidate_sets(plan: AttributePlan, chunk: np.ndarray) -> list[CandidateSet]:
    """The candidate set of every record of ``chunk`` (columns in ``plan.data.vary`` order)."""
    data, rule = plan.data, plan.rule
    vary, spec = data.vary, rule.spec
    if spec is None:
        return [candidates_from_frame(rule.candidates(data.orig.iloc[int(i)], list(vary)),
                                      data.values[i], vary, data.schema) for i in chunk]
    if (spec.spatial is None and bool(data.is_cat.all())
            and spec.rule in ("one_variable", "product")):
        d_list = [data.levels_harmonised[c] for c in vary]
        truth = data.values[chunk].astype(np.int64)
        if spec.rule == "one_variable":
            vals_all = one_variable_codes(truth, d_list).astype(np.float64)
            return [CandidateSet(tuple(vary), vals_all[k], 0) for k in range(len(chunk))]
        if (truth < 0).any():  # a missing true value: its block holds it (build_candidates)
            return _built_candidates(data, chunk, spec)
        gfull = math.prod(d_list)
        if gfull > spec.max_candidates:
            raise too_many_candidates(f"the full candidate set has G = {gfull:,} candidates",
                                      spec.max_candidates)
        pc = product_codes(d_list).astype(np.float64)
        g0s = np.ravel_multi_index(truth.T, d_list)
        return [CandidateSet(tuple(vary), pc, int(g)) for g in g0s]
    return _built_candidates(data, chunk, spec)


def _built_candidates(data, chunk: np.ndarray, spec) -> list[CandidateSet]:
    """Candidate sets built record by record, columns in ``data.vary`` order."""
    vary = data.vary
    csets = []
    for i in chunk:
        cs = build_candidates(dict(zip(vary, data.values[i], strict=False)), vary, data.schema,
                              spec)
        if cs.columns != tuple(vary):  # spatial pair reorders columns
            perm = [cs.columns.index(c) for c in vary]
            cs = CandidateSet(tuple(vary), cs.values[:, perm], cs.g0)
        csets.append(cs)
    return csets
