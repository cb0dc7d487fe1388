"""arith.fma_exact's check of its float64 sums compiled with numba (`pip install
minitriton[fast]`), imported where dot._compiled("fma_compiled") asks for it.

fma_exact computes a narrow float type's `a * b + c` as a float64 sum (exact product, one
rounding) and must then find the lanes whose float64 sum may round to the narrow type otherwise
than the exact sum would: the sums on a rounding midpoint of the narrow type, and the nonzero
ones below its normal range (arith._unlike). In NumPy that is five passes over the block (a
shift, a compare, an abs, a compare, an any); here it is one, which counts them. Where the count
is not zero fma_exact finds and fixes those lanes with NumPy, as without numba, so the bits are
the reference's by construction (tests/minitriton/test_dot_compiled.py compares them anyway).
"""
from __future__ import annotations

import numba
import numpy as np

from .dot_compiled import _OPTIONS  # the same compile options, cached on disk


@numba.njit(**_OPTIONS)
def count_unlike(s, shift, tiny):
    """How many lanes of the C-contiguous float64 array `s` arith._unlike marks: low bits (the
    bits below the narrow type's mantissa, `shift` = 64 - their count, shifted to the top)
    equal to 1 then zeros, or 0 < |s| < tiny."""
    flat = s.reshape(-1)
    count = 0
    for i in range(flat.size):
        count += _unlike(flat[i], shift, tiny)
    return count


@numba.njit(**_OPTIONS)
def _unlike(v, shift, tiny):
    """arith._unlike of one float64 sum: its low bits those of a midpoint, or 0 < |v| < tiny."""
    bits = np.float64(v).view(np.uint64)
    return ((bits << shift) == (np.uint64(1) << np.uint64(63))) | ((abs(v) < tiny) & (v != 0.0))


@numba.njit(**_OPTIONS)
def fma32(a, b, c, out, shift, tiny):
    """fp32 `a * b + c` of 1-D C-contiguous fp32 arrays into `out` (fp32), rounded once: the
    float64 sum of the exact product (fma_exact's), converted to fp32. Returns how many lanes
    count_unlike would mark (their float64 sum may round to fp32 otherwise than the exact sum
    does); where that is not zero `out` is not the answer and fma_exact takes its NumPy path."""
    count = 0
    for i in range(a.size):
        s = np.float64(a[i]) * np.float64(b[i]) + np.float64(c[i])
        count += _unlike(s, shift, tiny)
        out[i] = np.float32(s)
    return count
