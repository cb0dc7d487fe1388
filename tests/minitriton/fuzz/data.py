"""The inputs of a case: NumPy arrays drawn from the seed and mode its generator chose.

Arrays come back in their *container* dtype (unsigned as signed, bool as int8: types.py), the
bits that both minitriton and real Triton are given. Outputs are pre-filled with a sentinel byte
pattern, so that lanes a masked store leaves alone must match too.
"""
from __future__ import annotations

import numpy as np

from .types import BOOL, FLOAT, INT, TYPES

SENTINEL = 0x5A

# Values where implementations part: zeros of both signs, infinities, NaN, subnormals, the
# largest finite value, the smallest normal one.
SPECIALS = {
    "fp16": [0.0, -0.0, np.inf, -np.inf, np.nan, 6e-8, -3e-6, 65504.0, 6.103515625e-05, 1.0],
    "bf16": [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3e-39, 3.3895e38, 1.1754944e-38, 1.0],
    "fp32": [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3e-39, 3.4028235e38, 1.1754944e-38, 1.0],
    "fp64": [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -1e-310, 1.7976931348623157e308,
             2.2250738585072014e-308, 1.0],
}
WIDE_EXP = {"fp16": 15, "bf16": 60, "fp32": 60, "fp64": 200}


def _floats(rng, ty, n, mode):
    if mode == "std":
        x = rng.standard_normal(n)
    elif mode == "ints":
        x = rng.integers(-8, 9, n).astype(np.float64)
    elif mode == "wide":  # magnitudes from tiny to huge: overflow, underflow, cancellation
        e = WIDE_EXP[ty.name]
        x = np.sign(rng.standard_normal(n)) * np.exp2(rng.uniform(-e, e, n))
    elif mode == "pos":
        x = np.abs(rng.standard_normal(n)) * 4 + 0.01
    elif mode == "unit":  # near 1, so that products of many stay in range
        x = 1 + 0.05 * rng.standard_normal(n)
    else:
        scale = [1.0, 1.0, 10.0, 0.01, 1000.0][rng.integers(0, 5)]
        x = rng.standard_normal(n) * scale
        if mode == "special":
            pick = rng.random(n) < 0.2
            x[pick] = rng.choice(np.array(SPECIALS[ty.name]), int(pick.sum()))
    with np.errstate(over="ignore"):
        return x.astype(ty.np)


def _ints(rng, ty, n, mode):
    info = np.iinfo(ty.np)
    if mode == "small":
        lo = 0 if info.min == 0 else -16
        x = rng.integers(lo, 33 + lo, n)
    elif mode == "edge":
        edges = np.array([info.min, info.max, 0, 1, info.min + 1, info.max - 1, 2, 3],
                         dtype=object)
        if info.min < 0:
            edges = np.concatenate([edges, np.array([-1, -2, -7], dtype=object)])
        x = np.array([int(v) for v in rng.choice(edges, n)], dtype=object)
        full = rng.random(n) < 0.3
        x[full] = _full_range(rng, info, int(full.sum()))
        return np.array([int(v) for v in x], dtype=object).astype(ty.np)
    else:
        return np.array(_full_range(rng, info, n), dtype=object).astype(ty.np)
    return x.astype(ty.np)


def _full_range(rng, info, n):
    bits = info.bits
    raw = rng.integers(0, 2**63, n, dtype=np.int64).astype(object) * 2 + rng.integers(0, 2, n)
    raw = [int(v) % (1 << bits) for v in raw]
    return [v - (1 << bits) if info.min < 0 and v >= (1 << (bits - 1)) else v for v in raw]


def make_input(inp):
    """The array (container dtype) or the Python scalar for one `Input`."""
    if inp.size == 0:
        return inp.value
    ty = TYPES[inp.ty]
    if inp.mode == "b64":  # a regression case's recorded inputs, bit for bit
        import base64
        import ml_dtypes
        dt, text = inp.value
        dt = np.dtype(ml_dtypes.bfloat16) if dt == "bfloat16" else np.dtype(dt)
        return np.frombuffer(base64.b64decode(text), dtype=dt).copy()
    if inp.mode == "values":  # a regression case's own values
        x = np.array(inp.value, dtype=object if ty.kind == INT else None)
        x = (x != 0).astype(np.int8) if ty.kind == BOOL else x.astype(ty.np)
        return x.view(ty.container.np) if ty.container != ty and ty.kind != BOOL else x
    rng = np.random.default_rng(inp.seed)
    n = inp.size
    if ty.kind == BOOL:
        return (rng.random(n) < 0.5).astype(np.int8)
    if ty.kind == FLOAT:
        x = _floats(rng, ty, n, inp.mode)
    else:
        x = _ints(rng, ty, n, inp.mode)
    return x.view(ty.container.np) if ty.container != ty else x


def make_output(out):
    ty = TYPES[out.ty].container
    raw = np.full(out.size * ty.np.itemsize, SENTINEL, np.uint8)
    return raw.view(ty.np).copy()


def logical(array, ty_name):
    """A container array viewed as its logical type (unsigned ints; bool stays int8 0/1)."""
    ty = TYPES[ty_name]
    if ty.kind != BOOL and ty.container != ty:
        return array.view(ty.np)
    return array
