"""numpy's own ``log`` and ``logaddexp`` loops called from compiled kernels.

numpy's float64 ``log`` (a SIMD loop) and C's ``log``, which numba calls, differ in the last bit
for some inputs; the DPMPM sweep's draws are pinned to numpy's. A kernel
that takes a logarithm in the middle of a sweep therefore calls numpy's inner loop: its address
is read from the ufunc object (``PyUFuncObject.functions``, numpy's public C API) and called
through :func:`unary` or :func:`binary` with the same bits as numpy's call. :func:`loop_handles`
checks each loop against its ufunc on probe values and gives ``None`` where it cannot be used
(the caller then calls numpy from Python).
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.extending import intrinsic

__all__ = ["binary", "loop_handles", "unary"]

# PyUFuncObject (numpy/ufuncobject.h): PyObject_HEAD; int nin, nout, nargs, identity;
# PyUFuncGenericFunction *functions; void *const *data; int ntypes, reserved1;
# const char *name; const char *types
_HEAD = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)
_INTS = 4 * ctypes.sizeof(ctypes.c_int)
_PTR = ctypes.sizeof(ctypes.c_void_p)
_LOOP = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_ssize_t),
                         ctypes.POINTER(ctypes.c_ssize_t), ctypes.c_void_p)


def _float64_loop(ufunc: np.ufunc) -> tuple[int, int] | None:
    """``(address, data)`` of the ufunc's first all-float64 loop (the one numpy's type
    resolution picks for float64 operands), or ``None`` if the object's layout is not the
    expected one."""
    base = id(ufunc)
    ints = (ctypes.c_int * 4).from_address(base + _HEAD)
    if (ints[0], ints[1], ints[2]) != (ufunc.nin, ufunc.nout, ufunc.nargs):
        return None
    at = base + _HEAD + _INTS
    functions = ctypes.c_void_p.from_address(at).value
    data = ctypes.c_void_p.from_address(at + _PTR).value
    ntypes = ctypes.c_int.from_address(at + 2 * _PTR).value
    name = ctypes.c_char_p.from_address(at + 2 * _PTR + 2 * ctypes.sizeof(ctypes.c_int)).value
    if not functions or ntypes != ufunc.ntypes or name != ufunc.__name__.encode():
        return None
    want = "d" * ufunc.nin + "->" + "d" * ufunc.nout
    if want not in ufunc.types:
        return None
    i = ufunc.types.index(want)
    fn = ctypes.c_void_p.from_address(functions + _PTR * i).value
    dp = ctypes.c_void_p.from_address(data + _PTR * i).value if data else None
    return (int(fn), int(dp or 0)) if fn else None


def _through_loop(address: int, data: int, *operands: np.ndarray) -> np.ndarray:
    """The loop at ``address`` applied to contiguous float64 ``operands`` (via ctypes)."""
    out = np.empty_like(operands[0])
    ops = [*operands, out]
    argv = (ctypes.c_void_p * len(ops))(*[a.ctypes.data for a in ops])
    dims = (ctypes.c_ssize_t * 1)(out.size)
    steps = (ctypes.c_ssize_t * len(ops))(*[8] * len(ops))
    _LOOP(address)(argv, dims, steps, data or None)
    return out


def _probes() -> tuple[np.ndarray, np.ndarray]:
    """Positive values of every magnitude (uniforms and Gamma variates, where numpy's and C's
    ``log`` part in about 0.3 % of the cases on an AVX-512 machine) and log-scale values,
    in a length that reaches the loops' tails."""
    rng = np.random.default_rng(20261127)
    pos = np.concatenate([rng.random(4099), rng.standard_gamma(0.5, 4099),
                          10.0 ** rng.uniform(-300, 300, 4099), [1.0, 2.0, 1e-300, 0.5]])
    return pos, np.concatenate([-rng.random(pos.size - 2) * 700, [0.0, -1e-300]])


@functools.cache
def loop_handles() -> tuple[np.ndarray, np.ndarray] | None:
    """numpy's float64 ``log`` and ``logaddexp`` loops, each as uint64 ``[address, data]`` for
    :func:`unary` and :func:`binary`, checked to give numpy's results bit for bit on probe
    values; ``None`` if either is unavailable or differs."""
    pos, neg = _probes()
    rows = []
    for ufunc, operands in ((np.log, (pos,)), (np.logaddexp, (neg, np.log(pos)))):
        try:
            loop = _float64_loop(ufunc)
            if loop is None:
                return None
            got = _through_loop(*loop, *operands)
        except (ValueError, OSError, TypeError):  # pragma: no cover - another numpy layout
            return None
        want = ufunc(*operands)
        if not np.array_equal(got.view(np.uint64), want.view(np.uint64)):
            return None
        rows.append(np.array(loop, dtype=np.uint64))
    return rows[0], rows[1]


@intrinsic
def _call_loop(typingctx, address, data, first, second, out):
    # numpy's loop signature: void (char **args, npy_intp *dimensions, npy_intp *steps,
    # void *data), on 1-D contiguous float64 operands of out's length (second = first for a
    # unary loop: its pointer is then not passed)
    array = types.Array(types.float64, 1, "C")
    if not all(a == array for a in (first, second, out)):
        return None
    sig = types.void(types.uint64, types.uint64, first, second, out)

    def codegen(context, builder, signature, args):
        fn, dp, a, b, o = args
        i8p = ir.IntType(8).as_pointer()
        i64 = ir.IntType(64)
        arrays = [context.make_array(array)(context, builder, v) for v in (a, b, o)]
        argv = cgutils.alloca_once(builder, i8p, size=3)
        steps = cgutils.alloca_once(builder, i64, size=3)
        for i, arr in enumerate(arrays):
            builder.store(builder.bitcast(arr.data, i8p), builder.gep(argv, [i64(i)]))
            builder.store(i64(8), builder.gep(steps, [i64(i)]))
        dims = cgutils.alloca_once(builder, i64)
        builder.store(builder.extract_value(arrays[2].shape, 0), dims)
        fnty = ir.FunctionType(ir.VoidType(), [i8p.as_pointer(), i64.as_pointer(),
                                               i64.as_pointer(), i8p])
        builder.call(builder.inttoptr(fn, fnty.as_pointer()),
                     [argv, dims, steps, builder.inttoptr(dp, i8p)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, inline="always")
def unary(loop, x, out):  # pragma: no cover - numba
    """``out[:] = f(x)`` with numpy's loop ``loop`` (:func:`loop_handles`); 1-D contiguous
    float64 arrays of the same length (a unary loop reads its input, writes its second
    operand)."""
    _call_loop(loop[0], loop[1], x, out, out)


@njit(cache=True, inline="always")
def binary(loop, a, b, out):  # pragma: no cover - numba
    """``out[:] = f(a, b)`` with numpy's loop ``loop`` (:func:`loop_handles`); 1-D contiguous
    float64 arrays of the same length."""
    _call_loop(loop[0], loop[1], a, b, out)
