"""A numpy ``Generator`` for compiled kernels without numba's per-call cost (≈ 15–30 µs) of one:
:func:`generator_handle` reads its ``ctypes`` interface once into an integer array, and
:func:`generator_of` turns it back into numba's ``Generator`` inside the kernel (same draws). The
handle holds no reference: the caller keeps the ``Generator`` alive.
"""

from __future__ import annotations

import ctypes

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.core.extending import intrinsic

__all__ = ["ChainGenerator", "generator_handle", "generator_of", "uniforms_at"]

_GENERATOR = types.NumPyRandomGeneratorType("NumPyRandomGeneratorType")
_BIT_GENERATOR = types.NumPyRandomBitGeneratorType("bit_generator")


def generator_handle(rng: np.random.Generator) -> np.ndarray:
    """The addresses numba reads from ``rng`` at each call, read once: state, ``next_uint64``,
    ``next_uint32``, ``next_double``, bit generator (uint64 array [5])."""
    api = rng.bit_generator.ctypes

    def address(x: object) -> int:
        return int(ctypes.cast(x, ctypes.c_void_p).value or 0)

    return np.array([api.state_address, address(api.next_uint64), address(api.next_uint32),
                     address(api.next_double), address(api.bit_generator)], dtype=np.uint64)


class ChainGenerator:
    """Mixin of a sampler step whose chain's generator is ``self.rng``: :meth:`_generator` gives
    its :func:`generator_handle`, read once per generator (a pickle carries none)."""

    _handle: np.ndarray | None = None
    _handle_of: np.random.Generator | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_handle": None, "_handle_of": None}

    def _generator(self) -> np.ndarray:
        """``self.rng``'s ``generator_handle`` (read again only when ``self.rng`` changes)."""
        if self._handle_of is not self.rng:
            self._handle, self._handle_of = generator_handle(self.rng), self.rng
        return self._handle


@intrinsic
def _generator_at(typingctx, state, next_uint64, next_uint32, next_double, bit_generator):
    # numba's Generator as its unboxing builds it (numba.core.boxing), without the Python
    # object: the methods read only the bit generator's state and function addresses
    sig = _GENERATOR(types.uint64, types.uint64, types.uint64, types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        bits = cgutils.create_struct_proxy(_BIT_GENERATOR)(context, builder)
        bits.state_address = args[0]
        bits.state = args[0]
        bits.fnptr_next_uint64 = args[1]
        bits.fnptr_next_uint32 = args[2]
        bits.fnptr_next_double = args[3]
        bits.bit_generator = args[4]
        gen = cgutils.create_struct_proxy(_GENERATOR)(context, builder)
        gen.bit_generator = bits._getvalue()
        return gen._getvalue()

    return sig, codegen


@njit(cache=True, inline="always")
def generator_of(handle):  # pragma: no cover - numba
    """numba's ``Generator`` of a :func:`generator_handle` (inside a compiled kernel)."""
    return _generator_at(handle[0], handle[1], handle[2], handle[3], handle[4])


@njit(cache=True, inline="always")
def _uniforms_at(rng, positions):  # pragma: no cover - numba
    draws = np.empty(positions.shape[0])
    for i in range(draws.shape[0]):
        draws[i] = rng.random()
    out = np.empty_like(draws)
    for i in range(draws.shape[0]):
        out[i] = draws[positions[i]]
    return out


@njit(cache=True)
def uniforms_at(handle, first, second):  # pragma: no cover - numba
    """``(rng.random(n)[first], rng.random(m)[second])`` with ``n, m`` the lengths of the index
    arrays ``first, second`` (permutations): two numpy calls' uniforms, in their order, each
    put in another order (a sampler's order of records), in one compiled call."""
    rng = generator_of(handle)
    u = _uniforms_at(rng, first)
    return u, _uniforms_at(rng, second)
