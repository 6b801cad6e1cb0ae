"""Blocks of DPMPM Gibbs sweeps in one compiled call (:func:`sweep_block`): the label-switch
moves, the merge–split and label-swap moves with α, the sticks, φ, the uniforms and the class
step of ``step.DPMPMGibbs._sweep``, with the same operations in the same order and numpy's own
logarithms (:mod:`bayes_risk.models.dpmpm.numpy_loops`), so the same draws bit for bit without
the Python and numpy calls between the kernels (≈ 0.15 ms a sweep).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bayes_risk.models._bayesian.generator import uniforms_at
from bayes_risk.models._bayesian.stick_kernels import (
    label_switch_draws,
    label_switch_kernel,
    stick_log_parts,
)
from bayes_risk.models.dpmpm.kernels import class_step_serial
from bayes_risk.models.dpmpm.labels import collapsed_moves_and_variates
from bayes_risk.models.dpmpm.numpy_loops import EXP, LOG, LOGADDEXP, apply_loop

__all__ = ["sweep_block", "sweep_parameters"]


@njit(cache=True, inline="always")
def _log(loops, x):  # pragma: no cover - numba
    """numpy's ``log(x)`` of a 1-D contiguous array."""
    out = np.empty_like(x)
    apply_loop(loops, LOG, x, x, out)
    return out


@njit(cache=True)
def _label_switch(nk, log_v, log_1mv, z, c, handle, loops):  # pragma: no cover - numba
    """``sticks.label_switch_moves`` on the class sizes ``nk``, then ``z`` relabelled in place
    and the counts following the labels: returns the new ``(n_k, c)``."""
    K = nk.shape[0]
    nkf = np.empty(K)
    for k in range(K):
        nkf[k] = nk[k]
    j, l, js, r = label_switch_draws(nkf, handle)
    log_u = _log(loops, 1.0 - r)
    new_label = label_switch_kernel(nkf, log_v, log_1mv, j, l, log_u[0], js,
                                    np.ascontiguousarray(log_u[1:]))
    for i in range(z.shape[0]):
        z[i] = new_label[z[i]]
    nk_new = np.empty_like(nk)
    c_new = np.empty_like(c)
    for k in range(K):
        nk_new[new_label[k]] = nk[k]
    for row in range(c.shape[0]):
        for k in range(K):
            c_new[row, new_label[k]] = c[row, k]
    return nk_new, c_new


@njit(cache=True)
def _sticks(a, g_a, b, g_b, u_b, loops):  # pragma: no cover - numba
    """``sticks.sticks_and_weights_from_variates``: ``(log V, log(1 − V), log π)``."""
    lg1 = _log(loops, g_a)
    lg2 = _log(loops, g_b)
    small = False
    for k in range(b.shape[0]):
        if b[k] < 1.0:
            small = True
    if small:  # log_gamma_variates' branch of shapes below 1: log g + log(1 − r) / shape
        log_u = _log(loops, 1.0 - u_b)
        for k in range(b.shape[0]):
            if b[k] < 1.0:
                lg2[k] = lg2[k] + log_u[k] / b[k]
    tot = np.empty_like(lg1)
    apply_loop(loops, LOGADDEXP, lg1, lg2, tot)
    return stick_log_parts(lg1, lg2, tot)


# nogil: as kernels.class_step_serial
@njit(cache=True, nogil=True)
def sweep_parameters(y, z, nk, c, log_v, log_1mv, alpha, d, offsets, prior, n_moves, n_props,
                     a_alpha, b_alpha, log_alpha_max, floor, rec, u_pos, handle,
                     loops):  # pragma: no cover - numba
    """One sweep of ``step.DPMPMGibbs._sweep`` after its first (``K > 1``, no structural zeros,
    β = 1) up to its class step, from the state ``z, y`` (``z`` relabelled in place), the last
    class step's ``n_k, c`` and the last sweep's sticks ``log V, log(1 − V)``; ``handle``: the
    chain's ``generator.generator_handle``, ``loops``: ``numpy_loops.loop_handle()``.

    Returns ``(α, log V, log(1 − V), log π, φ, log φ, u_z, u_y, occupied classes)``: the class
    step's inputs, and the moves' count of occupied classes (the sweep's ``k_occupied``).
    """
    nk, c = _label_switch(nk, log_v, log_1mv, z, c, handle, loops)
    _, alpha, sticks, phi = collapsed_moves_and_variates(
        y, z, c, nk, d, offsets, alpha, prior, n_moves, n_props, a_alpha, b_alpha,
        log_alpha_max, floor, handle)
    a, g_a, _, b, g_b, u_b = sticks
    log_v, log_1mv, log_pi = _sticks(a, g_a, b, g_b, u_b, loops)
    logphi = _log(loops, phi.ravel()).reshape(phi.shape)
    u_z, u_y = uniforms_at(handle, rec, u_pos)
    occupied = 0
    for k in range(nk.shape[0]):
        if nk[k] != 0:
            occupied += 1
    return alpha, log_v, log_1mv, log_pi, phi, logphi, u_z, u_y, occupied


@njit(cache=True, nogil=True)
def sweep_block(count, y, z, nk, c, log_v, log_1mv, alpha, d, offsets, prior, n_moves, n_props,
                a_alpha, b_alpha, log_alpha_max, floor, codes, lcp, rec, u_pos, miss_ptr, miss_j,
                nchunks, handle, loops):  # pragma: no cover - numba
    """``count`` sweeps: :func:`sweep_parameters` and the serial class step
    (``kernels.class_step_serial``, ``nchunks`` parts), ``y`` and ``z`` written in place.

    Returns the last sweep's ``(α, V, log V, log(1 − V), φ, log-likelihood, occupied classes,
    n_k, c)``.
    """
    phi = np.empty((c.shape[0], nk.shape[0]))
    ll = 0.0
    occupied = 0
    for _ in range(count):
        alpha, log_v, log_1mv, log_pi, phi, logphi, u_z, u_y, occupied = sweep_parameters(
            y, z, nk, c, log_v, log_1mv, alpha, d, offsets, prior, n_moves, n_props, a_alpha,
            b_alpha, log_alpha_max, floor, rec, u_pos, handle, loops)
        ll, nk, c = class_step_serial(codes, lcp, rec, offsets, logphi, phi, log_pi, u_z,
                                      miss_ptr, miss_j, u_y, y, z, nchunks)
    V = np.empty_like(log_v)
    apply_loop(loops, EXP, log_v, log_v, V)
    return alpha, V, log_v, log_1mv, phi, ll, occupied, nk, c
