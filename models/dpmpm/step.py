"""The DPMPM blocked-Gibbs sweep (Hu & Savitsky 2018); :func:`pymc_step` makes it a PyMC
``BlockedStep`` for ``pm.sample`` (same seed, same draws)."""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

import bayes_risk.models.dpmpm.kernels as kern
from bayes_risk.models._bayesian.generator import ChainGenerator, uniforms_at
from bayes_risk.models._bayesian.starts import initial_state
from bayes_risk.models._bayesian.sticks import (
    label_switch_moves,
    sample_alpha,
    sample_sticks,
    slice_alpha,
    stick_breaking_log_parts,
    sticks_and_weights_from_variates,
)
from bayes_risk.models.dpmpm.labels import _collapsed_moves_and_variates
from bayes_risk.models.dpmpm.zeros import Augmentation

_PHI_FLOOR = 1e-300  # the DPMPM φ step: floor before logs

__all__ = ["DPMPMGibbs", "SweepSchedule", "pymc_step"]

# merge–split proposals per sweep: about 20,000 / n, 1 to 20 and at most n / 10; five times as
# many in the warm-up (benchmarks/bench_dpmpm_mixing.py of commit 977bc9f)
_SPLIT_MERGE_VISITS = 20_000
_SPLIT_MERGE_WARMUP = 5
# record-columns × classes from which the class step runs on numba's threads (a parallel region
# costs 1–2 ms per sweep), and from which it runs in two halves on a plain thread; the same
# draws either way
_PARALLEL_MIN_WORK = 30_000_000
_SPLIT_MIN_WORK = 4_000_000
# seconds of one sweep (expected_sweep_seconds): a fixed part and one per record × column × class
# (one numba thread, make_acs_like, 200–5,000 records)
_SWEEP_SECONDS_BASE = 3e-4
_SWEEP_SECONDS_PER_CELL = 1e-9


@dataclass(frozen=True)
class SweepSchedule:
    """How a chain of DPMPM sweeps runs, apart from the model and its data.

    Parameters
    ----------
    thin : int, default 1
        Sweeps per kept draw after the warm-up (``Sampling.thin``).
    alpha_warmup_bound : float, default inf
        Upper bound of α in the first ``alpha_warmup_sweeps`` sweeps of the warm-up
        (``DPMPM.alpha_warmup_bound``).
    alpha_warmup_sweeps : int, default 0
        Warm-up sweeps with α bounded.
    starts : tuple of str, default ("spread",)
        How each chain starts, cycled over the chains (``Sampling.starts``).
    """

    thin: int = 1
    alpha_warmup_bound: float = math.inf
    alpha_warmup_sweeps: int = 0
    starts: tuple[str, ...] = ("spread",)


class DPMPMGibbs(ChainGenerator):
    """Blocked Gibbs sweep of the DPMPM (Hu & Savitsky 2018) with a PyMC step method's interface.

    Each sweep: label-switching, merge–split and label-swap moves, then α given ``z``, the
    sticks, φ, and the classes and missing values (:doc:`/methods/models`). A draw is one sweep
    in the warm-up and ``thin`` sweeps after it.
    """

    name = "dpmpm_gibbs"
    stats_dtypes_shapes = {
        "loglik": (np.float64, []),
        "k_occupied": (np.int64, []),
    }

    def __init__(self, vars, *, codes, d, n_components, alpha_prior, dirichlet_prior,
                 zeros=None, schedule: SweepSchedule = SweepSchedule(), model=None,
                 blocked=True, rng=None):
        # ``model`` and ``blocked`` are PyMC's step arguments (pymc_step); the sweep reads neither
        thin, starts = schedule.thin, schedule.starts
        alpha_warmup_bound, alpha_warmup_sweeps = (schedule.alpha_warmup_bound,
                                                   schedule.alpha_warmup_sweeps)
        self.vars = vars
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        self.d = np.asarray(d, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.d)[:-1]]).astype(np.int64)
        self.L = int(self.d.sum())
        self.K = int(n_components)
        self.a_alpha, self.b_alpha = alpha_prior
        self.prior = float(dirichlet_prior)
        self.zeros = zeros  # structural zeros (models.dpmpm.zeros) or None
        self.thin = int(thin)  # sweeps per kept draw after the warm-up (DPMPM.thin)
        # α <= bound in the first sweeps of the warm-up (DPMPM.alpha_warmup_bound)
        self.alpha_warmup_bound = float(alpha_warmup_bound)
        self.alpha_warmup_sweeps = int(alpha_warmup_sweeps)
        # how each chain starts (cycled over the chains; the driver numbers them)
        self.starts = tuple(starts)
        self.chain = 0
        # parallel tempering (models.dpmpm.tempering): the replica's β, and whether it records
        # its complete-data log-likelihood for the swaps
        self.beta = 1.0
        self.ladder = False
        self.complete_ll = math.nan
        self._log_pi = None
        # records sorted by pattern (the class step computes a pattern's class weights once),
        # random numbers drawn in the data's order and mapped; structural zeros keep the data
        # order (runs of equal rows are the patterns then)
        n = len(codes)
        if zeros is None:
            self.rec = kern.sorted_patterns(codes)  # rec[r]: data position of record r
            self.codes = np.ascontiguousarray(codes[self.rec])
        else:
            self.rec, self.codes = np.arange(n, dtype=np.int64), codes
        self._plan = kern.class_step_plan(self.codes, self.d, self.offsets)
        mi, mj = np.nonzero(self.codes < 0)
        self.miss_i = mi.astype(np.int64)
        self.miss_j = mj.astype(np.int64)
        self.miss_ptr = np.searchsorted(self.miss_i, np.arange(n + 1))  # record r's entries
        # missing entry m here is entry u_pos[m] in the data's row-major order of missing entries
        pos = np.full(codes.shape, -1, dtype=np.int64)
        pos[codes < 0] = np.arange(self.miss_i.size)
        self.u_pos = pos[self.rec][self.miss_i, self.miss_j]
        self._blocks = [(int(a), int(a + dj)) for a, dj in zip(self.offsets, self.d, strict=True)]
        self._phi_names = [f"phi_{j}" for j in range(len(self._blocks))]
        self._sorted = zeros is None
        self._y = None
        self._z = None
        self._sticks = None  # (log V, log(1 - V)) of the last sweep, for the label moves
        self._counts = None  # (n_k, c[L, K]) of the current (z, y): _class_step computes them
        self._aug = None
        self._warmup_left = 0  # warm-up sweeps still to run (setup_chain)
        self._bounded_left = 0  # warm-up sweeps still to run with α bounded (setup_chain)
        self._handle = self._handle_of = None  # self.rng's handle (ChainGenerator)
        self._threads = numba.get_num_threads()  # the class step's threads (setup_chain)
        n = max(len(codes), 1)
        self.split_merge_moves = int(np.clip(min(round(_SPLIT_MERGE_VISITS / n), n // 10), 1, 20))

    def expected_sweep_seconds(self) -> float | None:
        """Estimated seconds of one sweep in one process (``None`` with structural zeros)."""
        if self.zeros is not None:
            return None
        return _SWEEP_SECONDS_BASE + _SWEEP_SECONDS_PER_CELL * self.codes.size * self.K

    def set_chain(self, chain: int) -> None:
        """The number of the chain that ``setup_chain`` starts next (its start, ``starts``)."""
        self.chain = int(chain)

    def setup_chain(self, rng, tune, draws):
        """Start a chain with generator ``rng`` (as PyMC's ``BlockedStep.setup_chain``)."""
        self.rng = rng
        self._warmup_left = int(tune)
        # never beyond the warm-up: the kept sweeps' target is the posterior
        self._bounded_left = min(self.alpha_warmup_sweeps, int(tune))
        self._y = None
        self._z = None
        self._sticks = None  # (log V, log(1 - V)) of the last sweep, for the label moves
        self._counts = None
        # read once per chain, not per sweep (≈ 3 µs); a worker process sets its threads first
        self._threads = numba.get_num_threads()

    def _mapped(self, draws: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Per-record draws made in the data's order, in the sweep's order of records."""
        return draws[positions] if self._sorted else draws

    def stop_tuning(self):
        """End of the warm-up (as PyMC's ``BlockedStep.stop_tuning``)."""
        self.tune = False

    def step(self, point):
        """One draw from ``point``: one sweep during the warm-up, ``thin`` sweeps after it (the
        last one's point and ``[stats]`` are returned)."""
        sweeps = self.thin if self._warmup_left <= 0 else 1
        if self._compiled_sweeps():
            return self._sweep_compiled(point, sweeps)
        for _ in range(sweeps - 1):
            point = self._sweep(point)[0]
        return self._sweep(point)

    def _compiled_sweeps(self) -> bool:
        """Whether :meth:`_sweep_compiled` runs the next sweeps: after the chain's first sweep,
        with more than one class, no structural zeros, at β = 1 outside a ladder, and numpy's
        loops callable from compiled code (``numpy_loops.loop_handles``)."""
        if (self._sticks is None or self._counts is None or self.K < 2
                or self._aug is not None or self.beta != 1.0 or self.ladder):
            return False
        from bayes_risk.models.dpmpm.numpy_loops import loop_handles

        return loop_handles() is not None

    def _sweep_compiled(self, point, sweeps: int):
        """``sweeps`` sweeps of :meth:`_sweep` (the same draws) in four compiled calls each,
        without numpy calls between them (``models.dpmpm.sweeps``): the last one's point and
        ``[stats]``."""
        from bayes_risk.models.dpmpm.numpy_loops import loop_handles
        from bayes_risk.models.dpmpm.sweeps import label_switch, sticks_and_uniforms

        nk, c = self._counts
        (log_v, log_1mv), alpha = self._sticks, float(point["alpha"])
        handle, (log_loop, logaddexp_loop) = self._generator(), loop_handles()
        for _ in range(sweeps):
            upper = self.alpha_warmup_bound if self._bounded_left > 0 else math.inf
            moves = self.split_merge_moves * (_SPLIT_MERGE_WARMUP if self._warmup_left > 0
                                              else 1)
            nk, c = label_switch(nk, log_v, log_1mv, self._z, c, handle, log_loop)
            _, alpha, sticks, phi = _collapsed_moves_and_variates(
                self._y, self._z, c, nk, self.d, self.offsets, alpha, self.prior, moves,
                2 * self.K, float(self.a_alpha), float(self.b_alpha), math.log(upper),
                _PHI_FLOOR, handle)
            log_v, log_1mv, log_pi, logphi, u_z, u_y, occupied = sticks_and_uniforms(
                sticks, phi, nk, self.rec, self.u_pos, handle, log_loop, logaddexp_loop)
            ll, nk, c = self._class_step(logphi, phi, log_pi, u_z, u_y)
            self._warmup_left -= 1
            self._bounded_left -= 1
        self._sticks = (log_v, log_1mv)
        self._counts = (nk, c)
        new = dict(point)
        new["V"] = np.exp(log_v)
        new["alpha"] = np.asarray(alpha)
        for name, (a, b) in zip(self._phi_names, self._blocks, strict=True):
            new[name] = phi[a:b].T  # a view: the driver copies what it keeps
        return new, [{"loglik": float(ll), "k_occupied": int(occupied)}]

    def _begin_sweep(self, point) -> float:
        """α at the start of a sweep: the first sweep draws the initial state (imputations,
        classes, α); a later one starts from ``point`` after the label-switch moves."""
        rng = self.rng
        n = self.codes.shape[0]
        K = self.K
        if self._z is None:
            y = self.codes.copy()
            if self.miss_i.size:
                y[self.miss_i, self.miss_j] = np.floor(
                    self._mapped(rng.random(self.miss_i.size), self.u_pos) * self.d[self.miss_j]
                ).astype(np.int64)
            self._y = y
            start = self.starts[self.chain % len(self.starts)]
            z0, alpha = initial_state(start, n, K, self.a_alpha, self.b_alpha, rng)
            if self._bounded_left > 0:  # the restricted update starts inside its support
                alpha = min(alpha, self.alpha_warmup_bound)
            self._z = self._mapped(z0, self.rec)
            self._aug = None if self.zeros is None else Augmentation(self.zeros, self.codes)
            if self._aug is not None:
                self._aug.init_imputations(self._y, rng)
        else:
            alpha = float(point["alpha"])
            if K > 1 and self._sticks is not None:
                if self._counts is not None:
                    nk0 = self._counts[0]
                else:
                    nk0 = np.bincount(self._z, minlength=K)
                if self._aug is not None:
                    nk0 = nk0 + self._aug.class_sizes(K)
                new_label = label_switch_moves(nk0, *self._sticks, self._generator())
                self._z = new_label[self._z]
                if self._counts is not None:  # the counts follow the labels (exact)
                    nk, c = self._counts
                    self._counts = (np.empty_like(nk), np.empty_like(c))
                    self._counts[0][new_label] = nk
                    self._counts[1][:, new_label] = c
                if self._aug is not None:
                    self._aug.relabel(new_label)
        return alpha

    def _sweep(self, point):
        """One sweep from ``point``: returns the new point and ``[stats]``."""
        rng = self.rng
        n = self.codes.shape[0]
        K, L = self.K, self.L
        alpha = self._begin_sweep(point)
        # the counts of the current (z, y): from the last class step (a move that changes z or
        # y must update them or set self._counts = None), else counted afresh
        if self._counts is not None:
            nk, c = self._counts
        else:
            nk, c = kern.counts(self._y, self._z, self.offsets, L, K)
        if self._aug is not None:  # the records the unrestricted model put in S
            self._aug.add_counts(nk, c, self.offsets)
        tempered = self.beta != 1.0
        if tempered:  # φ | z at β: Dirichlet(a + β c_obs + c_mis) (models.dpmpm.tempering)
            c_mis = self._missing_counts()
            c = self.beta * (c - c_mis) + c_mis
        alpha_new = stick_draws = phi = None
        # α's update restricted to α <= upper in the first warm-up sweeps (inf: none)
        upper = self.alpha_warmup_bound if self._bounded_left > 0 else math.inf
        if K > 1 and self._sticks is not None:
            # merge–split moves and 2K label swaps on p(z | α, y), then α given z, in one
            # compiled call
            warm = self._warmup_left > 0
            # a tempered replica makes none (their target is the untempered collapsed one)
            moves = 0 if tempered else self.split_merge_moves * (_SPLIT_MERGE_WARMUP if warm
                                                                  else 1)
            new_label, alpha_new, stick_draws, phi = _collapsed_moves_and_variates(
                self._y, self._z, c, nk, self.d, self.offsets, alpha, self.prior, moves, 2 * K,
                float(self.a_alpha), float(self.b_alpha), math.log(upper), _PHI_FLOOR,
                self._generator())
            if self._aug is not None:
                self._aug.relabel(new_label)
        new = dict(point)
        # step 4 (concentration) first, given z with the sticks integrated out, then step 2
        # (sticks) given z and the new α: a blocked draw of (α, V) | z
        if K > 1:
            if alpha_new is None:  # the first sweep: no moves before it
                alpha_new = slice_alpha(nk, alpha, self.a_alpha, self.b_alpha, rng,
                                        upper=upper)
                log_v, log_1mv = sample_sticks(nk, alpha_new, rng)
                log_pi = stick_breaking_log_parts(log_v, log_1mv)
            else:  # the moves' call drew the sticks' random numbers
                log_v, log_1mv, log_pi = sticks_and_weights_from_variates(*stick_draws)
            # stored V may round to 1 when 1 - V < 1e-16; the sampler uses the exact logs
            new["V"] = np.exp(log_v)
            self._sticks = (log_v, log_1mv)
        else:
            log_pi = np.zeros(1)
            alpha_new = sample_alpha(np.zeros(0), self.a_alpha, self.b_alpha, rng)
        new["alpha"] = np.asarray(alpha_new)
        # step 3: category probabilities (normalised Gamma variates; drawn and normalised with
        # the moves after the first sweep)
        if phi is None:  # the first sweep, or one class
            g = rng.standard_gamma(self.prior + c)  # [L, K]
            if K > 1:  # the kernel sums each class's levels in order, as numpy's axis-0 sum does
                phi = kern.normalise_levels(g, self.offsets, _PHI_FLOOR)
            else:  # one class: numpy's sum of a contiguous column is pairwise; kept as it was
                phi = np.empty_like(g)
                for a, b in self._blocks:
                    tot = g[a:b].sum(axis=0)
                    phi[a:b] = np.maximum(g[a:b] / np.where(tot > 0, tot, 1.0), _PHI_FLOOR)
        for name, (a, b) in zip(self._phi_names, self._blocks, strict=True):
            new[name] = phi[a:b].T  # a view: the driver copies what it keeps
        # step 1 for the next sweep, at the new parameters
        logphi = np.log(phi)
        # rng.random(n), then rng.random(missing entries), each in the sweep's order of records
        u_z, u_y = uniforms_at(self._generator(), self.rec, self.u_pos)
        if tempered:  # classes given φ^β on the observed entries, imputations from φ
            ll, nk_new, c_new = self._class_step(self.beta * logphi, phi ** self.beta, log_pi,
                                                 u_z, u_y)
            if self.miss_i.size:
                from bayes_risk.models.dpmpm.tempering import impute

                impute(self._y, self._z, phi, self.offsets, self.miss_i, self.miss_j, u_y)
                c_new = kern.counts(self._y, self._z, self.offsets, L, K)[1]
            ll = np.nan  # not the observed-data log-likelihood (observed_loglik)
        else:
            ll, nk_new, c_new = self._class_step(logphi, phi, log_pi, u_z, u_y)
        self._counts = (nk_new, c_new)
        if self.ladder:  # log p(y_obs | z, φ) of the new state, for the swaps between replicas
            self.complete_ll = float(np.sum((c_new - self._missing_counts()) * logphi))
            self._log_pi = log_pi
        if self._aug is not None:  # truncation: fix imputations, draw augmented records
            ll -= n * self._aug.step(self._y, self._z, phi, log_pi, rng)
            self._counts = None  # the step may redraw classes and imputations
        self._warmup_left -= 1
        self._bounded_left -= 1
        stats = {"loglik": float(ll), "k_occupied": int(np.count_nonzero(nk))}
        return new, [stats]


    def _missing_counts(self) -> np.ndarray:
        """``[L, K]`` level counts of the imputed entries of the current ``(z, y)``."""
        cm = np.zeros((self.L, self.K))
        if self.miss_i.size:
            rows = self.offsets[self.miss_j] + self._y[self.miss_i, self.miss_j]
            np.add.at(cm, (rows, self._z[self.miss_i]), 1.0)
        return cm

    def observed_loglik(self, point) -> float:
        """``Σ_i log p(y_i,obs | Θ)`` at ``point`` (this replica's last state; missing entries
        marginalised): the ``loglik`` statistic of a state a tempered replica made."""
        from scipy.special import logsumexp

        w = np.broadcast_to(self._log_pi, (self.codes.shape[0], self.K)).copy()
        for j, name in enumerate(self._phi_names):
            c = self.codes[:, j]
            obs = c >= 0
            w[obs] += np.log(np.asarray(point[name]))[:, c[obs]].T
        return float(logsumexp(w, axis=1).sum())

    def _class_step(self, logphi, phi, log_pi, u_z, u_y):
        """Step 1 (classes and imputations) with the quickest kernel for the table's size (all
        three give the same numbers bit for bit)."""
        pat, rows, combos = self._plan
        args = (self.codes, pat, rows)
        rest = (self.offsets, self.d, logphi)
        draws = (u_z, self.miss_ptr, self.miss_j, u_y, self._y, self._z)
        threads = self._threads
        work = self.codes.size * log_pi.shape[0]
        if threads > 1 and work >= _PARALLEL_MIN_WORK:
            return kern._class_step(*args, combos, *rest, phi, log_pi, *draws, 2 * threads)
        if threads < 2 or work < _SPLIT_MIN_WORK:  # one part: one set of counts to clear
            return kern.class_step_serial(*args, combos, *rest, phi, log_pi, *draws, 1)
        L, K = phi.shape
        pi, tab, cdf = kern.class_step_setup(phi, log_pi, self.offsets, combos)
        cuts = kern.class_step_cuts(pat, 2)
        ll = np.empty(cuts[-1])
        nks = np.zeros((2, K), dtype=np.int64)
        cs = np.zeros((2, L, K))
        cgs = np.zeros((2, len(combos), K))
        part = functools.partial(kern._class_step_part, *args, *rest, pi, tab, cdf, log_pi,
                                 *draws)
        other = _helper_thread().submit(part, cuts[1], cuts[2], ll, nks[1], cs[1], cgs[1])
        part(cuts[0], cuts[1], ll, nks[0], cs[0], cgs[0])
        other.result()
        return kern.class_step_finish(ll, nks, cs, cgs, combos)


_HELPER: Any = None


def _helper_thread() -> Any:
    """The process's worker thread for the split class step, started on first use."""
    global _HELPER
    if _HELPER is None:
        from concurrent.futures import ThreadPoolExecutor

        _HELPER = ThreadPoolExecutor(1, thread_name_prefix="dpmpm-class-step")
    return _HELPER


def _stop_helper_thread() -> None:
    """Join the worker thread before a fork (a forked process must not inherit threads)."""
    global _HELPER
    if _HELPER is not None:
        _HELPER.shutdown(wait=True)
        _HELPER = None


os.register_at_fork(before=_stop_helper_thread)


@functools.cache
def _pymc_class() -> type:
    from pymc.step_methods.compound import BlockedStep, Competence

    class DPMPMGibbsStep(DPMPMGibbs, BlockedStep):
        """:class:`DPMPMGibbs` as a PyMC ``BlockedStep`` (for ``pm.sample``)."""

        def setup_chain(self, rng, tune, draws):
            # pm.sample does not number the chains: its sequential loop starts them in turn
            # on this object (in parallel runs each process gets a copy: every chain starts
            # as the first)
            self.set_chain(getattr(self, "_started", 0))
            self._started = self.chain + 1
            BlockedStep.setup_chain(self, rng, tune, draws)
            DPMPMGibbs.setup_chain(self, self.rng, tune, draws)

        @staticmethod
        def competence(var, has_grad):
            return Competence.INCOMPATIBLE

    DPMPMGibbsStep.__name__ = "DPMPMGibbs"  # the name pm.sample logs
    return DPMPMGibbsStep


def pymc_step(vars, *, model, **settings) -> DPMPMGibbs:
    """The sweep as a PyMC ``BlockedStep`` of ``model`` (imports PyMC)."""
    return _pymc_class()(vars, model=model, **settings)
