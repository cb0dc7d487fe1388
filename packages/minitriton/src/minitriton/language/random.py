"""Philox random numbers: tl.randint4x, randint, rand, randn and friends, bit-exact with Triton.

Triton's generator (python/triton/language/random.py) is counter-based and stateless: the value
at an offset depends only on (seed, offset), never on which program computes it, so a kernel
draws the same numbers whatever its grid. `randint4x` and the functions built on it run
Philox 4x32 on the counter (offset's low word, its high word, 0, 0) with the seed split into
two 32-bit keys (low word first), and return uint32 for 32- and 64-bit offsets alike (Triton
3.6); `philox` called with 64-bit counters runs Philox 4x64 keyed by (seed, 0).
The integer streams and `rand` are bit-exact with the GPU (wrap-around uint arithmetic, umulhi
through uint64); `randn` goes through log, sqrt, cos, which the GPU evaluates with approximate
instructions, so it agrees to a few ulp, not bit for bit (docs/numerics.md).
"""
from __future__ import annotations

import numpy as np

from .. import types as _t
from ..errors import CompilationError
from ..types import _unwrap
from .arith import maximum
from .core import cast, expand_to_rank, broadcast_shapes, tensor, to_tensor
from .math_ops import cos, log, sin, sqrt

N_ROUNDS_DEFAULT = 10  # Philox4x32-10: ten rounds, as Random123 and Triton use
# (key bump A, key bump B, round multiplier A, round multiplier B) per word size
_CONSTANTS = {
    32: (0x9E3779B9, 0xBB67AE85, 0xD2511F53, 0xCD9E8D57),
    64: (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B, 0xD2E7470EE14C6C93, 0xCA5A826395121157),
}
_LOW32 = np.uint64(0xFFFFFFFF)


def _mulhilo(a, m, bits):
    """(high, low) words of a * m for the array `a` and the constant `m`, without overflow."""
    if bits == 32:
        wide = a.astype(np.uint64) * np.uint64(m)
        return (wide >> np.uint64(32)).astype(np.uint32), wide.astype(np.uint32)
    # 64 x 64 -> 128 bits from four 32 x 32 -> 64 partial products (NumPy has no uint128)
    m_lo, m_hi = np.uint64(m & 0xFFFFFFFF), np.uint64(m >> 32)
    a_lo, a_hi = a & _LOW32, a >> np.uint64(32)
    ll, lh, hl, hh = a_lo * m_lo, a_lo * m_hi, a_hi * m_lo, a_hi * m_hi
    mid = (ll >> np.uint64(32)) + (lh & _LOW32) + (hl & _LOW32)
    hi = hh + (lh >> np.uint64(32)) + (hl >> np.uint64(32)) + (mid >> np.uint64(32))
    return hi, a * np.uint64(m)


def _broadcast(values):
    """The values' data broadcast to one (lanes, *shape) layout, and that shape."""
    shape = []
    for v in values:
        shape = broadcast_shapes(shape, v.shape)
    arrays = [expand_to_rank(v, len(shape)) for v in values]
    lanes = max(a.shape[0] for a in arrays)
    return [np.broadcast_to(a, (lanes, *shape)) for a in arrays], shape


def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS_DEFAULT):
    """`n_rounds` Philox rounds on the counter (c0, c1, c2, c3) with the key (k0, k1).

    The counter's type (uint32 or uint64) picks the variant; the other words take that type."""
    c0 = to_tensor(_unwrap(c0))
    if c0.dtype not in (_t.uint32, _t.uint64):
        raise CompilationError("dtype not supported in philox_impl")
    ty, bits = c0.dtype, c0.dtype.primitive_bitwidth
    words = [cast(to_tensor(_unwrap(w)), ty) for w in (c0, c1, c2, c3, k0, k1)]
    (c0, c1, c2, c3, k0, k1), shape = _broadcast(words)
    key_a, key_b, round_a, round_b = _CONSTANTS[bits]
    with np.errstate(over="ignore"):
        for _ in range(int(_unwrap(n_rounds))):
            hi_b, lo_b = _mulhilo(c2, round_b, bits)
            hi_a, lo_a = _mulhilo(c0, round_a, bits)
            c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
            k0, k1 = k0 + ty.np.type(key_a), k1 + ty.np.type(key_b)  # wraps, like the GPU
    return tuple(tensor(np.ascontiguousarray(c), ty, shape) for c in (c0, c1, c2, c3))


def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT):
    """Philox keyed by a 64-bit `seed`: 32-bit counters split it into (low, high) keys."""
    seed = cast(to_tensor(_unwrap(seed)), _t.uint64)  # a signed seed sign-extends, as in Triton
    c0 = to_tensor(_unwrap(c0))
    bits = c0.dtype.primitive_bitwidth
    if bits == 32:
        ty = _t.uint32
        k0 = tensor((seed.data & _LOW32).astype(np.uint32), ty, seed.shape)
        k1 = tensor((seed.data >> np.uint64(32)).astype(np.uint32), ty, seed.shape)
    elif bits == 64:
        ty, k0, k1 = _t.uint64, seed, to_tensor(0)
    else:
        raise CompilationError("bitwidth not supported in philox")
    counter = [cast(to_tensor(_unwrap(c)), ty, bitcast=True) for c in (c0, c1, c2, c3)]
    return philox_impl(*counter, k0, k1, n_rounds)


def randint4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for the Philox 4x32 counter (offset's low word, its high
    word, 0, 0): a 32-bit offset's high word is 0, a 64-bit one's is `offset >> 32`."""
    offset = to_tensor(_unwrap(offset))
    if not offset.dtype.is_int() or offset.dtype.primitive_bitwidth not in (32, 64):
        # (Triton 3.6 itself casts narrower int offsets to uint32; refused here for now)
        raise CompilationError(f"bitwidth not supported in philox: offsets must be 32- or "
                               f"64-bit integers, got {offset.dtype}")
    offset_lo = cast(offset, _t.uint32)  # truncates a 64-bit offset, as offset.to(tl.uint32)
    zero = tensor(np.zeros((1,) + (1,) * len(offset.shape), np.uint32), _t.uint32,
                  [1] * len(offset.shape))
    offset_hi = zero
    if offset.dtype.primitive_bitwidth > 32:
        # (offset >> 32).to(tl.uint32): the high word, whatever the shift's kind
        high = (np.ascontiguousarray(offset.data).view(np.uint64) >> np.uint64(32))
        offset_hi = tensor(high.astype(np.uint32), _t.uint32, offset.shape)
    return philox(seed, offset_lo, offset_hi, zero, zero, n_rounds)


def randint(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """The first of randint4x's four blocks."""
    return randint4x(seed, offset, n_rounds)[0]


def uint_to_uniform_float(x):
    """Random 32/64-bit integers to fp32 in [0, 1): fold the sign away, scale by ~2**-31.

    The scale is the largest fp32 below 2**-31 (2**-63) such that the largest folded value
    times it still rounds below 1.0."""
    x = to_tensor(_unwrap(x))
    if x.dtype in (_t.uint32, _t.int32):
        ix, scale = np.ascontiguousarray(x.data).view(np.int32), np.float32(4.6566127342e-10)
    elif x.dtype in (_t.uint64, _t.int64):
        ix, scale = np.ascontiguousarray(x.data).view(np.int64), np.float32(1.0842020432385337e-19)
    else:
        raise CompilationError(f"uint_to_uniform_float expects a 32- or 64-bit integer, got "
                               f"{x.dtype}")
    folded = np.where(ix < 0, np.invert(ix), ix)  # -x - 1 without overflow at the minimum
    # one correctly rounded int->fp32 conversion (cvt.rn), then one fp32 multiply, as on the GPU
    return tensor(folded.astype(np.float32) * scale, _t.float32, x.shape)


def rand(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of fp32 uniformly distributed in [0, 1)."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


def rand4x(seed, offsets, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of fp32 uniform in [0, 1), one per Philox output word."""
    return tuple(uint_to_uniform_float(r) for r in randint4x(seed, offsets, n_rounds))


def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniforms to two independent standard normals (u1 clamped to 1e-7)."""
    u1 = maximum(1.0e-7, u1)
    th = 6.283185307179586 * to_tensor(u2)
    r = sqrt(-2.0 * log(u1))
    return r * cos(th), r * sin(th)


def randn(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of fp32 standard normals: Box-Muller on the first two Philox words."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    n1, _ = pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))
    return n1


def randn4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of fp32 standard normals from one Philox call."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(u1, u2) + pair_uniform_to_normal(u3, u4)
