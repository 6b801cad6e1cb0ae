"""Posterior Monte Carlo replicates for identification risk (Drechsler & Reiter 2008, eq. 5):
:class:`PosteriorReplicates`; see :doc:`/user_guide/posterior_replicates`.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bayes_risk._constraints import AtMost, Interval, Options, Relation, check_fields, checked
from bayes_risk._io import remove_scratch, scratch_folder
from bayes_risk._rng import RandomSeed, child_sequence, seed_sequence
from bayes_risk._terminal import progress
from bayes_risk.contract import capabilities
from bayes_risk.data.normalise import as_synthetic_list
from bayes_risk.data.provenance import check_release_model
from bayes_risk.exceptions import BayesRiskWarning, ValidationError, arg_name, has_option
from bayes_risk.executors import InProcessExecutor, shared_once
from bayes_risk.identification import uncertainty as _unc
from bayes_risk.identification._replicate_batches import (
    BatchJob,
    BatchSums,
    MatchContext,
    Recoder,
    prefetched_batches,
    run_batch,
)
from bayes_risk.identification.assemble import assemble
from bayes_risk.identification.evaluate import record_pool, run_engine
from bayes_risk.identification.plan import IdentificationPlan, ReplicateSource, record_warning
from bayes_risk.identification.pooled_probabilities import PooledOutput
from bayes_risk.identification.population import per_replicate_counts
from bayes_risk.identification.prepare import prepare
from bayes_risk.identification.specs import REPLICATES_FIELDS
from bayes_risk.identification.summary import MEASURES

__all__ = ["PosteriorReplicates"]

@dataclass
class PosteriorReplicates:
    """Replicates of the synthesized known columns drawn from a synthesis model's posterior.

    Pass as ``identification_risk(..., replicates=PosteriorReplicates(model, ...))``.

    Parameters
    ----------
    model : fitted synthesizer
        Any model with a ``posterior_replicates`` method (protocol
        ``bayes_risk.contract.SupportsPosteriorReplicates``).
    n : int or "auto"
        Number of replicates ``R``, or ``"auto"``: draw until the Monte Carlo standard error of
        the pooled expected match risk is below ``mcse_tol`` times the estimate (at least
        ``min_replicates``, at most ``max_replicates``; warning ``MCSE_NOT_REACHED`` at the cap).
    view : {"agency", "intruder"}
        ``"agency"``: draws from ``model`` as fitted on the confidential data. ``"intruder"``:
        the same model class and settings refitted to released data.
    refit_dataset : int or "each"
        Intruder view: which released dataset is refitted (index, default 0 = the first), or
        ``"each"``: one refit per released dataset, replicate ``r`` drawn from refit ``r mod m``.
    chunk_size : int
        Replicates drawn and matched at once, at most ``batch_size`` (memory only: results do
        not depend on it, bit for bit; a run of a single batch matches it whole).
    batch_size : int
        Replicates pooled together: the unit of the jackknife's groups and of the stopping
        rule, so ``n <= batch_size`` gives ``nan`` standard errors (warning
        ``MCSE_UNAVAILABLE``). Each complete batch is also pooled on its own: the figures of a
        release of ``batch_size`` datasets drawn from the model, whose mean over the batches
        (``batch_pooled_mean``, with its standard error) is comparable with the pooled figure
        of a release of as many datasets (the audit sets it to the release's ``m``).
    n_groups : int
        Groups of the delete-a-group jackknife (``G``).
    mcse_tol, min_replicates, max_replicates : float, int, int
        Stopping rule of ``n="auto"`` (checked about every 25 % more replicates).
    random_seed : RandomSeed
        Seed of the replicates (and of the intruder's refits).
    allow_other_model : bool, default False
        Go on, with warning ``MODEL_DIFFERS``, when ``model`` did not make the release
        (refused by default).
    """

    model: Any
    n: int | str = field(default="auto", metadata=REPLICATES_FIELDS["n"])
    view: str = field(default="agency", metadata=REPLICATES_FIELDS["view"])
    refit_dataset: int | str = field(default=0, metadata=checked(
        [Options(("each",), listed=True), Interval(int, 0)],
        label="refit_dataset (a dataset index or 'each')"))
    chunk_size: int = field(default=50, metadata=checked(Interval(int, 1)))
    batch_size: int = field(default=50, metadata=checked(Interval(int, 1)))
    n_groups: int = field(default=20, metadata=checked(Interval(int, 2)))
    mcse_tol: float = field(default=0.01, metadata=REPLICATES_FIELDS["mcse_tol"])
    min_replicates: int = field(default=500, metadata=checked(Interval(int, 1)))
    max_replicates: int = field(default=2000, metadata=REPLICATES_FIELDS["max_replicates"])
    random_seed: RandomSeed = None
    allow_other_model: bool = False

    #: the fields against each other (checked by ``check_fields``)
    RELATIONS: ClassVar[tuple[Relation, ...]] = (AtMost("min_replicates", "max_replicates"),)

    def __post_init__(self) -> None:
        name = type(self.model).__name__
        if not capabilities(self.model).posterior_replicates:
            raise ValidationError(
                f"posterior replicates are not available for {name}: it has no posterior "
                "predictive (it has no method posterior_replicates(n, *, columns, chunk_size, "
                "random_seed, start), or not with its settings). Use the "
                "released datasets as replicates (the default), or a Bayesian synthesizer "
                "(DPMPM, PoissonMixture, SequentialRegression, CARTSynthesizer with "
                "donor='bayes_bootstrap').", code="NO_POSTERIOR_PREDICTIVE",
            )
        check_fields(self, prefix="")

    def _models(self, datasets: Sequence[pd.DataFrame], seq: np.random.SeedSequence) -> list:
        if self.view == "agency":
            return [self.model]
        if not datasets:
            raise ValidationError(
                "view='intruder' refits the model to the released data: give the released "
                "datasets as synthetic."
            )
        idx = range(len(datasets)) if self.refit_dataset == "each" else [int(self.refit_dataset)]
        if max(idx) >= len(datasets):
            raise ValidationError(
                f"refit_dataset={self.refit_dataset} but only {len(datasets)} released dataset(s) "
                "given "
                f"(indices 0..{len(datasets) - 1})."
            )
        return [_refit(self.model, datasets[l], child_sequence(seq, 2**31 + l)) for l in idx]

    def run(self, original: pd.DataFrame, synthetic: Any, known_unsynthesized: Sequence[str],
            known_synthesized: Sequence[str], options: dict[str, Any], *,
            progressbar: bool = True, executor: Any = None) -> Any:
        """``identification_risk`` with these replicates (``options``: for ``prepare``); the
        batches are added in batch order, so nothing depends on ``executor``."""
        ks = _check_mode(options, known_synthesized)
        ex = InProcessExecutor() if executor is None else executor
        seq = seed_sequence(self.random_seed)
        empty = isinstance(synthetic, (list, tuple)) and not synthetic
        datasets = ([] if empty else
                    as_synthetic_list(synthetic, allow_none=True, original=original).datasets)
        provenance_warnings: dict[str, str] = {}
        provenance = check_release_model(self.model, None if empty else synthetic, original,
                                         allow=self.allow_other_model, record=provenance_warnings)
        R_max = int(self.max_replicates) if self.n == "auto" else int(self.n)
        from bayes_risk._memory import check_memory

        # each replicate's file measures are kept for the quantiles and the jackknife
        # (n=10**9 asked for 56 GB while the replicates ran, growing)
        check_memory(8.0 * R_max * (len(MEASURES) + 2),
                     arg_name("max_replicates" if self.n == "auto" else "n"),
                     what=f"the file measures of {R_max:,} posterior replicates")
        n_batches = -(-R_max // int(self.batch_size))
        # one batch: the engine's own pooled output of the whole batch
        job = BatchJob(models=self._models(datasets, seq), columns=ks, seq=seq,
                       chunk_size=int(self.chunk_size), batch_size=int(self.batch_size),
                       n_total=R_max, chunk=0 if n_batches == 1 else int(self.chunk_size))
        points = _checkpoints(n_batches)
        plan = prepare(original, synthetic, known_unsynthesized, ks,
                       replicates=job.draw(*job.spans(0)[0]), **options)
        job.recode = Recoder.make(plan)
        if job.recode is None:
            job.inputs = (original, synthetic, known_unsynthesized, options)
            if len(job.spans(0)) > 1:
                # preparing depends on the replicates (their population counts, metric or
                # levels): a batch is prepared, so drawn and matched, whole
                job.chunk = 0
                plan = prepare(original, synthetic, known_unsynthesized, ks,
                               replicates=job.replicates(0), **options)
        plan.warnings.update(provenance_warnings)
        plan.settings.extra["model_check"] = provenance.how
        # one batch: the engine's own pooled output (bitwise that of the replicates as a list)
        first = (plan, run_engine(plan, plan.rule, InProcessExecutor(),
                                  record_pool(plan, shipped=False), progressbar=False)
                 if n_batches == 1 else None)
        run = _Run(plan, int(self.n_groups), int(self.batch_size))
        job.ctx = run.ctx
        try:
            return _run_batches(self, run, job, first, ex, n_batches, points, progressbar)
        finally:
            run.close()

    def describe(self) -> dict[str, Any]:
        """JSON-safe settings (recorded in the result's settings)."""
        return {
            "model": type(self.model).__name__, "n": self.n, "view": self.view,
            "refit_dataset": self.refit_dataset if self.view == "intruder" else None,
            "batch_size": int(self.batch_size), "n_groups": int(self.n_groups),
            "mcse_tol": float(self.mcse_tol), "min_replicates": int(self.min_replicates),
            "max_replicates": int(self.max_replicates),
        }


def _refit(model: Any, released: pd.DataFrame, seed: np.random.SeedSequence) -> Any:
    """The same model class and settings fitted to a released dataset (intruder's view)."""
    params = dict(model.get_params(deep=False))
    if "progressbar" in params:
        params["progressbar"] = False
    refit_seed = int(seed.generate_state(1)[0])
    if "random_seed" in params:  # the refit's own seed, as its setting (SEED_CONFLICT)
        params["random_seed"] = refit_seed
    new = type(model)(**params)
    schema = getattr(model, "schema_", None)
    synthesized = list(getattr(model, "visit_sequence_", None) or schema.synthesized)
    kw: dict[str, Any] = {"schema": schema, "synthesized": synthesized,
                          "random_seed": refit_seed}
    flags = getattr(model, "synthesized_records_", getattr(model, "records_", None))
    if flags is not None and not np.all(flags):
        kw["records"] = np.asarray(flags)  # every synthesizer's fit takes records=
    data = released[[c for c in schema.names]].reset_index(drop=True)
    return new.fit(data, **kw)


def _checkpoints(max_batches: int) -> set[int]:
    """Batch counts at which the running estimate is evaluated (about 25 % apart)."""
    pts, b = {1}, 2.0
    while b <= max_batches:
        pts.add(int(b))
        b = max(b * 1.25, b + 1)
    return pts


class _Run:
    """Accumulators of one posterior run (pooled sums overall and per group, per replicate)."""

    def __init__(self, plan: IdentificationPlan, n_groups: int, batch_size: int) -> None:
        prep = plan.prep
        self.batch_size = batch_size
        #: each complete batch's own pooled file measures (a release of batch_size datasets)
        self.batch_pooled: dict[str, list[float]] = {k: [] for k in MEASURES}
        self.plan, self.N, self.n = plan, prep.n_targets, prep.n
        self.ctx = MatchContext.of(plan)
        # the pair sums are the queries' (targets that match alike share one)
        self.Q = self.ctx.n_queries
        self.total = _unc.PooledSums(self.Q, self.n)
        # the groups' pair sums wait in a temporary folder between checkpoints
        try:
            self.spill: str | None = scratch_folder("jackknife")
        except OSError as err:  # no writable temporary folder: the groups stay in memory
            warnings.warn(
                f"SPILL_UNAVAILABLE: no temporary folder for the jackknife group sums ({err}); "
                "they are kept in memory (same numbers, more memory). Set TMPDIR to a "
                "writable folder to bound the memory.", BayesRiskWarning, stacklevel=2)
            self.spill = None
        self.groups = [_unc.PooledSums(self.Q, self.n, spill=self.spill)
                       for _ in range(n_groups)]
        self.per: dict[str, list[np.ndarray]] = {k: [] for k in MEASURES}
        self.ir_sum = np.zeros(self.N)
        self.ir_sq = np.zeros(self.N)
        self.trace: dict[str, list] = {"n_replicates": [], "expected_match_risk": [],
                                       "mc_se": []}
        self.n_batches = 0
        self._jk: tuple | None = None  # (n_batches, jackknife()) of the last evaluation
        self._pool: tuple | None = None  # (n_batches, pooled()) of the last evaluation

    @property
    def _query(self) -> np.ndarray | None:
        """Each target's row of the sums (``None``: its own; no two targets share a query)."""
        return self.ctx.query if self.Q < self.N else None

    def add(self, batch: BatchSums) -> None:
        """Add the next batch (batches are added in batch order)."""
        if batch.R == self.batch_size:  # pooled on its own: the figure of a release of R
            fm, _ = _unc.pooled_measures(self._evaluate(batch.keys, batch.vals, batch.in_u,
                                                        batch.fb, batch.p_out, batch.R))
            for k in MEASURES:
                self.batch_pooled[k].append(fm[k])
        self.total.add(batch)
        self.groups[self.n_batches % len(self.groups)].add(batch)
        for k, v in batch.per.items():
            self.per[k].append(v)
        self.ir_sum += batch.ir_sum
        self.ir_sq += batch.ir_sq
        self.n_batches += 1

    def _evaluate(self, keys, vals, in_u, fb, p_out, R) -> dict[str, np.ndarray]:
        prep = self.plan.prep
        ctx = self.ctx
        return _unc.top_sets(keys, vals / R, in_u, fb / R, ctx.u_size, p_out / R, n=self.n,
                             rec=prep.rec, in_sample=prep.in_sample, strategy=ctx.strategy,
                             contains=ctx.contains, query=self._query)

    def pooled(self) -> dict[str, np.ndarray]:
        """Top sets of the pooled sums now, on the pairs that can reach a top set (the
        fallback-set counts are those of these candidates: ``_pooled_output`` recounts them)."""
        if self._pool is not None and self._pool[0] == self.n_batches:
            return self._pool[1]
        t = self.total
        star = _unc.row_argmax(t.keys, t.vals, n=self.n)
        top = np.zeros(self.Q)
        top[t.keys[star] // self.n] = t.vals[star] / t.R
        keep = _unc.candidate_pairs(t.keys, t.vals, top, n=self.n, R=t.R)
        res = self._evaluate(t.keys[keep], t.vals[keep], t.in_u[keep], t.fb, t.p_out, t.R)
        self._pool = (self.n_batches, res)
        return res

    def release_groups(self) -> None:
        """Free the groups' sums once the final jackknife is known (before the output is built)."""
        self.jackknife()
        self.groups = []
        self.close()

    def close(self) -> None:
        """Remove the groups' spill folder."""
        if self.spill is not None:
            remove_scratch(self.spill)

    def jackknife(self) -> tuple[dict[str, float], np.ndarray]:
        """Delete-a-group jackknife standard errors: file-level dict and record ``IR`` [N_T]
        (evaluated on the pairs that can reach a top set once a group is deleted)."""
        if self._jk is not None and self._jk[0] == self.n_batches:  # last checkpoint's
            return self._jk[1]
        self._jk = (self.n_batches, self._jackknife())
        return self._jk[1]

    def _jackknife(self) -> tuple[dict[str, float], np.ndarray]:
        t = self.total
        groups = [g for g in self.groups if g.R > 0]
        if len(groups) < 2:
            return {k: float("nan") for k in MEASURES}, np.full(self.N, np.nan)
        # the pairs that can reach a top set whichever group is deleted
        keep, bounds = _unc.group_candidates(t.keys, t.vals, t.in_u, groups, t.R, n=self.n,
                                             N=self.Q)
        keys, tv, in_u = t.keys[keep], t.vals[keep], t.in_u[keep]
        rows = None if _unc.use_pair_kernels(keys.size) else keys // self.n
        del keep
        thetas, irs = [], []
        for i, g in enumerate(groups):
            R = t.R - g.R
            # this group's candidates (``candidate_pairs`` on the union's pairs)
            sel = _unc.candidate_pairs(keys, tv, bounds[i], n=self.n, rows=rows, R=R)
            kg, tg, ug = keys[sel], tv[sel], in_u[sel]
            vals = tg - g.on(kg, ug)
            # exact zeros where only this group matched (no residue of the subtraction)
            vals[vals <= 1e-9 * tg] = 0.0
            fb = t.fb - g.fb
            fb[fb <= 1e-9 * t.fb] = 0.0
            res = self._evaluate(kg, vals, ug, fb, t.p_out - g.p_out, R)
            fm, ir = _unc.pooled_measures(res)
            thetas.append([fm[k] for k in MEASURES])
            irs.append(ir)
        se = _unc.jackknife_se(np.array(thetas))
        return dict(zip(MEASURES, (float(x) for x in se), strict=True)), \
            _unc.jackknife_se(np.array(irs))

    def checkpoint(self) -> tuple[float, float]:
        """Pooled expected match risk and its jackknife MCSE now (appended to the trace)."""
        fm, _ = _unc.pooled_measures(self.pooled())
        se, _ = self.jackknife()
        est, s = fm["expected_match_risk"], se["expected_match_risk"]
        self.trace["n_replicates"].append(self.total.R)
        self.trace["expected_match_risk"].append(est)
        self.trace["mc_se"].append(s)
        return est, s


def _check_mode(options: dict[str, Any], known_synthesized: Any) -> list[str]:
    """The synthesized known columns, after checking that the options allow posterior replicates."""
    if options["match"].compat is not None:
        raise ValidationError("compat mode reproduces the R package with the released datasets; "
                              "it does not take posterior replicates.", code="INVALID_ARGUMENT")
    if options.get("aggregation") not in (None, "pooled"):
        raise ValidationError(
            "posterior replicates are pooled (Reiter & Mitra 2009); the per-replicate measures "
            "are reported alongside (replicate_quantiles). Leave aggregation at 'pooled'.",
            code="INVALID_ARGUMENT"
        )
    ks = list(known_synthesized)
    if not ks:
        raise ValidationError(
            "posterior replicates replace the synthesized known columns, but no known column is "
            f"synthesized ({arg_name('synthesized')} names none): there is nothing to "
            "replicate.",
            code="INVALID_ARGUMENT"
        )
    return ks


def _run_batches(pr: PosteriorReplicates, run: _Run, job: BatchJob, first: tuple, ex: Any,
                 n_batches: int, points: set[int], progressbar: bool) -> Any:
    """The batches of a run added in order, checkpoints, stopping rule, and the result (in
    process a checkpoint runs in a thread beside the next batch: the same stopping point)."""
    plan, auto, stopped = first[0], pr.n == "auto", False
    overlap = isinstance(ex, InProcessExecutor)

    def stop(est: float, se: float) -> bool:
        return auto and run.total.R >= pr.min_replicates and (
            se <= pr.mcse_tol * abs(est) or (est == 0 and se == 0))

    with shared_once(ex, job) as shared, ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="bayes-risk-checkpoint") as pool:
        pending = None  # the checkpoint evaluated while this batch was matched
        sums = _batch_sums(ex, shared, job, plan, n_batches, points)
        # counted in replicates, as the stopping rule and its warning count them (issue 66:
        # the bar counted batches of them); an "auto" run may stop before the most allowed
        what = ("posterior replicates (stops once the Monte Carlo error is reached)"
                if pr.n == "auto" else "posterior replicates")
        most = int(pr.max_replicates) if pr.n == "auto" else int(pr.n)
        for b, batch in progress(enumerate(sums, start=1), total=most, description=what,
                                 unit="replicates",
                                 size=lambda item: item[1].R, enabled=progressbar):
            if pending is not None:
                at_stop = stop(*pending.result())
                pending = None
                if at_stop:
                    stopped = True
                    break
            run.add(batch)
            if b in points or b == n_batches:
                if overlap and b < n_batches:
                    pending = pool.submit(run.checkpoint)
                elif stop(*run.checkpoint()):
                    stopped = True
                    break
        # the batches' arrays are the groups' (freed before the output is built)
        sums.close()
        batch = None  # noqa: F841
    return _assemble(pr, run, first, stopped)


def _batch_sums(ex: Any, shared: Any, job: BatchJob, first: IdentificationPlan, n_batches: int,
                points: set[int]) -> Iterator[BatchSums]:
    """The batches' sums in batch order (``first``: batch 0's plan; ``shared``: ``job`` as
    ``ex`` passes it to its tasks). On a cluster, in waves that stop at the next checkpoint."""
    client = getattr(ex, "client", None)
    if isinstance(ex, InProcessExecutor):
        yield from prefetched_batches(job, first, n_batches)
        return
    yield run_batch(job, 0, first)
    width = 1 if client is None else max(1, 2 * sum(client.nthreads().values()))
    b = 1
    while b < n_batches:
        nxt = min([p for p in points if p > b] + [n_batches])
        parts = list(range(b, min(nxt, b + width)))
        yield from ex.map(run_batch, shared, parts, progressbar=False,
                          description="posterior replicates")
        b = parts[-1] + 1


_CHUNK = 1 << 22  # pairs converted at a time when building the probability matrix


def _pooled_output(run: _Run) -> PooledOutput:
    """The engine's pooled output, built from (and consuming) the run's pair sums in place:
    the probabilities one row per query (``rows``: each target's), the rest per target."""
    import scipy.sparse as sp

    t, Q, query = run.total, run.Q, run._query
    res = run.pooled()
    keys, data, n = t.keys, t.vals, t.n
    # the fallback-set records not stored, counted over every stored pair
    cells = _unc.fallback_cells(t.fb / t.R, run.ctx.u_size,
                                np.bincount(keys[t.in_u] // n, minlength=Q))
    per_q = {"p_out": t.p_out / t.R, "p_unassigned": t.p_un / t.R, "no_match_any": ~t.ever,
             **cells}
    if query is not None:
        per_q = {k: v[query] for k, v in per_q.items()}
    t.keys, t.vals, t.in_u = (np.zeros(0, dtype=np.int64), np.zeros(0),
                              np.zeros(0, dtype=bool))
    indptr = np.searchsorted(keys, np.arange(Q + 1, dtype=np.int64) * n)
    cols = np.empty(keys.size, dtype=np.int32)
    for s in range(0, keys.size, _CHUNK):
        np.remainder(keys[s:s + _CHUNK], n, out=cols[s:s + _CHUNK], casting="unsafe")
    del keys
    np.divide(data, t.R, out=data)
    prob = sp.csr_matrix((data, cols, indptr), shape=(Q, n))
    return PooledOutput(prob=prob, p_max=res["p_max"], c=res["c"], T=res["T"],
                        declared=res["declared"], rows=query, **per_q)


def _assemble(pr: PosteriorReplicates, run: _Run, first: tuple, stopped: bool) -> Any:
    """The ``IdentificationResult`` of the run, with Monte Carlo errors and replicate spread."""
    plan, pooled = first
    t = run.total
    mc_se, ir_se = run.jackknife()
    run.release_groups()
    out = pooled if pooled is not None else _pooled_output(run)
    warn = dict(plan.warnings)
    if pr.n == "auto" and not stopped:
        record_warning(
            warn, "MCSE_NOT_REACHED",
            f"the relative Monte Carlo standard error of the expected match risk is still "
            f"above {pr.mcse_tol:g} after {pr.max_replicates} replicates, the most allowed; "
            "the estimate is less precise than asked"
            + (f" (raise {arg_name('max_replicates')})" if has_option("max_replicates")
               else "") + ".")
    R = t.R
    if run.n_batches < 2:
        record_warning(
            warn, "MCSE_UNAVAILABLE",
            f"the {R} replicates form a single batch (batch_size={pr.batch_size}), so the "
            "delete-a-group jackknife has nothing to delete: mc_se and IR_mc_se are nan. Give "
            "a batch_size below n (at least two batches; 10 or more for a usable standard "
            "error).")
    plan = dataclasses.replace(plan, warnings=warn,
                               replicates=ReplicateSource(R=R, user=True))
    result = assemble(plan, plan.rule, out)
    rep = _unc.replicate_summary({k: np.concatenate(v) for k, v in run.per.items()})
    ir_mean = run.ir_sum / R
    ir_var = np.maximum(run.ir_sq - R * ir_mean**2, 0.0) / max(R - 1, 1)
    # each complete batch pooled on its own: a release of batch_size datasets from the model
    bp = _unc.replicate_summary(run.batch_pooled)
    file = {**result.file, "n_replicates": R, "mc_se": mc_se,
            **{f"replicate_{k}": v for k, v in rep.items()},
            **{f"batch_pooled_{k}": v for k, v in bp.items() if k != "n_nan"},
            "batch_pooled_size": int(pr.batch_size),
            "n_batches_pooled": len(run.batch_pooled["expected_match_risk"]),
            "mc_trace": run.trace}
    recs = result.records.copy()
    recs["IR_mc_se"] = ir_se
    recs["IR_replicate_mean"] = ir_mean
    recs["IR_replicate_mean_mc_se"] = np.sqrt(ir_var / R) if R > 1 else np.nan
    settings = dict(result.settings)
    settings["replicates"] = f"posterior replicates ({pr.view} view, {type(pr.model).__name__})"
    settings["posterior_replicates"] = {
        **pr.describe(), "n_drawn": R, "stopped_by_tolerance": stopped,
        "mc_method": f"delete-a-group jackknife over {min(run.n_batches, pr.n_groups)} groups "
                     f"of batches of {pr.batch_size} replicates",
    }
    F = result.population_counts
    if F is not None:
        F = None if per_replicate_counts(plan.counts.source) else F[:, :1]
    return dataclasses.replace(result, file=file, _records=recs, settings=settings,
                               population_counts=F)
