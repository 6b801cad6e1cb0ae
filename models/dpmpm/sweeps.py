"""The parts of a DPMPM Gibbs sweep (``step.DPMPMGibbs._sweep_compiled``) around the compiled
collapsed moves and class step, compiled with numpy's own logarithms
(``bayes_risk.models.dpmpm.numpy_loops``): four compiled calls a sweep and no numpy call
between them, the same operations in the same order, so the same draws bit for bit.

Each part is a kernel of its own: a kernel that called the moves or the class step would
compile them again inside it (≈ 11 s of CPU on a fresh installation at a load of ≈ 20, for a
few per cent of a sweep at 10³ records).
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
from bayes_risk.models.dpmpm.numpy_loops import binary, unary

__all__ = ["label_switch", "sticks_and_uniforms"]


@njit(cache=True, inline="always")
def _log(log_loop, x):  # pragma: no cover - numba
    """numpy's ``log(x)`` of a 1-D contiguous array."""
    out = np.empty_like(x)
    unary(log_loop, x, out)
    return out


@njit(cache=True, nogil=True)
def label_switch(nk, log_v, log_1mv, z, c, handle, log_loop):  # pragma: no cover - numba
    """``sticks.label_switch_moves`` on the class sizes ``nk``, then ``z`` relabelled in place
    and the counts following the labels: returns the new ``(n_k, c)``."""
    K = nk.shape[0]
    nkf = np.empty(K)
    for k in range(K):
        nkf[k] = nk[k]
    j, l, js, r = label_switch_draws(nkf, handle)
    log_u = _log(log_loop, 1.0 - r)
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
def _sticks(a, g_a, b, g_b, u_b, log_loop, logaddexp_loop):  # pragma: no cover - numba
    """``sticks.sticks_and_weights_from_variates``: ``(log V, log(1 − V), log π)``."""
    lg1 = _log(log_loop, g_a)
    lg2 = _log(log_loop, g_b)
    small = False
    for k in range(b.shape[0]):
        if b[k] < 1.0:
            small = True
    if small:  # log_gamma_variates' branch of shapes below 1: log g + log(1 − r) / shape
        log_u = _log(log_loop, 1.0 - u_b)
        for k in range(b.shape[0]):
            if b[k] < 1.0:
                lg2[k] = lg2[k] + log_u[k] / b[k]
    tot = np.empty_like(lg1)
    binary(logaddexp_loop, lg1, lg2, tot)
    return stick_log_parts(lg1, lg2, tot)


# nogil: as kernels.class_step_serial
@njit(cache=True, nogil=True)
def sticks_and_uniforms(sticks, phi, nk, rec, u_pos, handle, log_loop,
                        logaddexp_loop):  # pragma: no cover - numba
    """The part of a sweep between the collapsed moves (``labels._collapsed_moves_and_variates``,
    which give ``sticks`` and ``φ``) and the class step: ``(log V, log(1 − V), log π)``,
    ``log φ``, the class step's uniforms ``(u_z, u_y)`` and the number of occupied classes
    the moves left (the sweep's ``k_occupied``)."""
    a, g_a, _, b, g_b, u_b = sticks
    log_v, log_1mv, log_pi = _sticks(a, g_a, b, g_b, u_b, log_loop, logaddexp_loop)
    logphi = _log(log_loop, phi.ravel()).reshape(phi.shape)
    u_z, u_y = uniforms_at(handle, rec, u_pos)
    occupied = 0
    for k in range(nk.shape[0]):
        if nk[k] != 0:
            occupied += 1
    return log_v, log_1mv, log_pi, logphi, u_z, u_y, occupied

