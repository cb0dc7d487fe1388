"""The exact `tl.dot` chains of dot.py compiled with numba (`pip install minitriton[fast]`).

Imported only when a dot runs and numba is installed (dot.py's `_compiled()`); compiled once per
machine and kept in numba's on-disk cache. Each function computes, bit for bit, what its NumPy
counterpart in dot.py computes (the reference): the same IEEE operations on the same values in
an order whose results cannot differ (a step's scaled terms are integers below 2**26, so their
float64 sum is exact in any order). tests/minitriton/test_dot_compiled.py runs both on the
fuzzer's dot cases and the corpus and compares the bits.

The loops run over rows of outputs (`n` innermost, contiguous; the fp32 chain four rows at a
time), which LLVM turns into SIMD; the caller splits the programs into slices for its threads
(`nogil`).
"""
from __future__ import annotations

import numba
import numpy as np

_ALIGN = 25  # dot.ALIGN_BITS
_NO_EXPONENT = -(1 << 20)  # dot._NO_EXPONENT
_FLOOR = -900  # dot._chain_slices: `np.maximum(top, -900)`
_OPTIONS = dict(nogil=True, cache=True, error_model="numpy", fastmath=False)


@numba.njit(**_OPTIONS)
def _exponent(v):
    """floor(log2 |v|) of a float64 as np.frexp gives it (dot._exponents): _NO_EXPONENT for
    zeros, -1 for infinities and NaNs (frexp's exponent 0, less one)."""
    if v == 0.0:
        return _NO_EXPONENT
    biased = (np.float64(v).view(np.int64) >> 52) & 0x7FF
    if biased == 0x7FF:
        return -1
    if biased == 0:  # a float64 subnormal (never an fp32 value): normalise it first
        return _exponent(v * 2.0 ** 64) - 64
    return biased - 1023


@numba.njit(**_OPTIONS)
def exponents(v, out):
    """dot._exponents of float64 values `v` into the int32 array `out` (same shape, C order)."""
    flat, dst = v.reshape(-1), out.reshape(-1)
    for i in range(flat.size):
        dst[i] = _exponent(flat[i])


@numba.njit(**_OPTIONS)
def fast_exponents(v, out, lo, hi):
    """For fp32 values `v`: whether dot._fast_operand takes them (at most 12 significant bits,
    every nonzero exponent in [lo, hi], so no infinity, NaN or subnormal); their exponents
    into the int32 array `out` (_NO_EXPONENT for zeros), meaningful only if so. One pass
    without branches, so that it vectorizes."""
    flat, dst = v.reshape(-1).view(np.int32), out.reshape(-1)
    bad = np.int32(0)
    for i in range(flat.size):
        bits = flat[i]
        mag = bits & 0x7FFFFFFF
        e = np.int32((mag >> 23) - 127)
        zero = mag == 0
        bad |= (bits & 0xFFF) | np.int32(not zero and (e < lo or e > hi))
        dst[i] = np.int32(_NO_EXPONENT) if zero else e
    return bad == 0


@numba.njit(**_OPTIONS)
def fast_accumulator(v, lo, hi):
    """Whether the fp32 accumulator `v` suits mma_chain_fp32: no -0.0, every nonzero exponent
    in [lo, hi] (dot._fast_chain's test)."""
    flat = v.reshape(-1).view(np.int32)
    bad = np.int32(0)
    for i in range(flat.size):
        bits = flat[i]
        mag = bits & 0x7FFFFFFF
        e = np.int32((mag >> 23) - 127)
        bad |= np.int32(bits == np.int32(-2147483648)) | np.int32(mag != 0 and (e < lo or e > hi))
    return bad == 0


@numba.njit(**_OPTIONS)
def _pow2(e):
    """2.0**e for -1022 <= e <= 1023, built from its bits."""
    return np.int64((e + 1023) << 52).view(np.float64)


@numba.njit(**_OPTIONS)
def _to_f32_toward_zero(v):
    """core._round_toward_zero(v, fp32) of one float64: round to nearest, then one step toward
    zero where that went past |v| (an overflow to infinity becomes the largest finite value)."""
    near = np.float32(v)
    if abs(np.float64(near)) > abs(v):
        return np.int32(near.view(np.int32) - 1).view(np.float32)
    return near


@numba.njit(**_OPTIONS)
def mma_chain(x, y, ex, ey, out, step):
    """dot._chain_slices for step > 0: x (P, M, K) and y (P, K, N) float64 holding the operands'
    values, ex and ey their exponents (dot._exponents), `out` (P, M, N) fp32 the accumulator,
    updated in place: per tensor-core step of `step` products, every term cut toward zero to a
    multiple of 2**(top - 25), summed exactly, rounded toward zero to fp32."""
    P, M, K = x.shape
    N = y.shape[2]
    top = np.empty(N, np.int64)
    scale = np.empty(N, np.float64)
    total = np.empty(N, np.float64)
    for p in range(P):
        for m in range(M):
            row = out[p, m]
            for k0 in range(0, K, step):
                k1 = min(k0 + step, K)
                for n in range(N):
                    top[n] = _exponent(np.float64(row[n]))
                for k in range(k0, k1):
                    e = ex[p, m, k]
                    for n in range(N):
                        top[n] = max(top[n], e + ey[p, k, n])
                for n in range(N):
                    scale[n] = _pow2(_ALIGN - max(top[n], _FLOOR))
                    total[n] = np.trunc(np.float64(row[n]) * scale[n])
                for k in range(k0, k1):
                    xv = x[p, m, k]
                    for n in range(N):
                        total[n] += np.trunc(xv * y[p, k, n] * scale[n])
                for n in range(N):
                    row[n] = _to_f32_toward_zero(total[n] / scale[n])


_FAST_FLOOR = -100  # dot._TOP_FLOOR: below the top of every nonzero term in the fast range


@numba.njit(**_OPTIONS)
def mma_chain_fp32(x, y, ex, ey, start, out, step):
    """mma_chain in fp32 and int32 (dot._fast_slices' arithmetic), for operands and an
    accumulator in dot._fast_chain's range: x (P, M, K) and y (P, K, N) fp32 of at most 12
    significant bits, ex and ey their exponents (int32, _NO_EXPONENT for zeros), `start`
    (P, M, N) fp32 without -0.0 the accumulator, the sums into `out` (P, M, N), which may be
    `start` itself. Every product is exact in fp32, every scaled term below 2**26 and a step's
    sum below 2**31, so the integer sum is the exact sum. Rows of outputs go four at a time
    where there are four, each y and ey element read once for the four (15-20 % faster than
    one row at a time on an AVX-512 EPYC), the rest one at a time."""
    P, M, K = x.shape
    N = y.shape[2]
    top = np.empty((4, N), np.int32)
    scale = np.empty((4, N), np.float32)
    total = np.empty((4, N), np.int32)
    for p in range(P):
        for m0 in range(0, M, 4):
            rows = min(4, M - m0)
            for r in range(rows):
                out[p, m0 + r, :] = start[p, m0 + r, :]
            for k0 in range(0, K, step):
                k1 = min(k0 + step, K)
                # the step's top: the accumulator's exponent (the floor for 0) and its products'
                # (a zero's is far below the floor), the first k folded into the first pass
                for r in range(rows):
                    bits = out[p, m0 + r].view(np.int32)
                    e = ex[p, m0 + r, k0]
                    for n in range(N):
                        field = bits[n] & np.int32(0x7F800000)
                        acc_e = np.int32((field >> 23) - 127) if field else np.int32(_FAST_FLOOR)
                        top[r, n] = max(acc_e, np.int32(e + ey[p, k0, n]))
                for k in range(k0 + 1, k1):
                    if rows == 4:
                        e0, e1, e2, e3 = ex[p, m0, k], ex[p, m0 + 1, k], ex[p, m0 + 2, k], \
                            ex[p, m0 + 3, k]
                        for n in range(N):
                            v = ey[p, k, n]
                            top[0, n] = max(top[0, n], np.int32(e0 + v))
                            top[1, n] = max(top[1, n], np.int32(e1 + v))
                            top[2, n] = max(top[2, n], np.int32(e2 + v))
                            top[3, n] = max(top[3, n], np.int32(e3 + v))
                    else:
                        for r in range(rows):
                            e = ex[p, m0 + r, k]
                            for n in range(N):
                                top[r, n] = max(top[r, n], np.int32(e + ey[p, k, n]))
                for r in range(rows):  # 2**(25 - top), the accumulator's and first product's terms
                    row = out[p, m0 + r]
                    xv = x[p, m0 + r, k0]
                    for n in range(N):
                        s = np.int32((_ALIGN + 127 - top[r, n]) << 23).view(np.float32)
                        scale[r, n] = s
                        total[r, n] = np.int32(row[n] * s) + np.int32(xv * y[p, k0, n] * s)
                for k in range(k0 + 1, k1):
                    if rows == 4:
                        x0, x1, x2, x3 = x[p, m0, k], x[p, m0 + 1, k], x[p, m0 + 2, k], \
                            x[p, m0 + 3, k]
                        for n in range(N):
                            v = y[p, k, n]
                            total[0, n] += np.int32(x0 * v * scale[0, n])
                            total[1, n] += np.int32(x1 * v * scale[1, n])
                            total[2, n] += np.int32(x2 * v * scale[2, n])
                            total[3, n] += np.int32(x3 * v * scale[3, n])
                    else:
                        for r in range(rows):
                            xv = x[p, m0 + r, k]
                            for n in range(N):
                                total[r, n] += np.int32(xv * y[p, k, n] * scale[r, n])
                for r in range(rows):
                    # the sum toward zero to 24 bits: to nearest, then one step back toward zero
                    # where that went past it (|sum| < 2**31 - 64: the float converts back)
                    row = out[p, m0 + r]
                    for n in range(N):
                        t = total[r, n]
                        f = np.float32(t)
                        if abs(np.int32(f)) > abs(t):
                            f = np.int32(f.view(np.int32) - 1).view(np.float32)
                        row[n] = f * np.int32((top[r, n] - _ALIGN + 127) << 23).view(np.float32)


@numba.njit(**_OPTIONS)
def fma_chain(x, y, out):
    """dot._chain_slices for step 0 (input_precision="ieee"): one multiply-add per k, the
    product exact in float64, the sum rounded to fp32."""
    P, M, K = x.shape
    N = y.shape[2]
    for p in range(P):
        for m in range(M):
            row = out[p, m]
            for k in range(K):
                xv = x[p, m, k]
                for n in range(N):
                    row[n] = np.float32(np.float64(row[n]) + xv * y[p, k, n])


@numba.njit(**_OPTIONS)
def int_mma_chain(x, y, out, step):
    """dot.int_mma_chain: x (P, M, K) and y (P, K, N) int32 (int8 values), `out` (P, M, N)
    int64 the accumulator, in place: each step of `step` products added exactly, the sum
    clamped to the int32 range."""
    P, M, K = x.shape
    N = y.shape[2]
    lo, hi = -(1 << 31), (1 << 31) - 1
    part = np.empty(N, np.int64)
    for p in range(P):
        for m in range(M):
            row = out[p, m]
            for k0 in range(0, K, step):
                part[:] = 0
                for k in range(k0, min(k0 + step, K)):
                    xv = np.int64(x[p, m, k])
                    for n in range(N):
                        part[n] += xv * y[p, k, n]
                for n in range(N):
                    row[n] = min(max(row[n] + part[n], lo), hi)
