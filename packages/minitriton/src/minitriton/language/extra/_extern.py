"""How Triton calls an extern library function (core.extern_elementwise), and exact rounding.

Dispatch: the arguments' dtypes must be a key of the function's table; if not, they are
promoted to a common type (Triton's arithmetic check) and looked up again; a miss is the GPU's
compile error (so fp16 fails: libdevice has no fp16 entry points). fp32 functions compute in
float64 and round once, so they are within half an fp32 ulp plus a float64 error, where
libdevice promises 1 to 4 ulp.

The directed-rounding variants (`_rz`, `_rd`, `_ru`) round the exact result: the error-free
transformations (TwoSum, Dekker's TwoProduct) give the sign of what the round-to-nearest value
left out, which decides whether to step one ulp.
"""
from __future__ import annotations

import dis
import sys

import numpy as np

from ...errors import CompilationError, missing
from ...types import _unwrap
from ..arith import operands
from ..core import _convert, broadcast_shapes, cast, expand_to_rank, tensor, to_tensor
from ... import types as _t

F64 = np.float64
_IMPORT_FROM = dis.opmap["IMPORT_FROM"]


def dispatch(name, args, table):
    ts = [to_tensor(_unwrap(a)) for a in args]
    key = tuple(t.dtype.name for t in ts)
    if key not in table and len(ts) > 1:
        common = ts[0]
        for t in ts[1:]:
            common, _, _ = operands(common, t)
        ts = [cast(t, common.dtype) for t in ts]
        key = tuple(t.dtype.name for t in ts)
    if key not in table:
        raise CompilationError(f"input arg type does not match.Expect one of {list(table)}, got "
                               f"{key} (libdevice.{name}; cast first, e.g. `x.to(tl.float32)`)")
    fn, ret = table[key]
    shape = []
    for t in ts:
        shape = broadcast_shapes(shape, t.shape)
    arrays = [expand_to_rank(t, len(shape)) for t in ts]
    with np.errstate(all="ignore"):
        out = np.asarray(fn(*arrays))
        ret = getattr(_t, _t._LONG_NAMES.get(ret, ret))  # "fp32" -> tl.float32
        if out.dtype != ret.np:
            out = _convert(out, ret)
    return tensor(out, ret, shape)


def two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(x):
    c = 134217729.0 * x  # 2**27 + 1: Veltkamp's split into two 26-bit halves
    hi = c - (c - x)
    return hi, x - hi


def two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def round_to(hi, resid, mode, np_dtype):
    """Round the exact value hi + r (r tiny, of sign `resid`) to `np_dtype` in `mode`."""
    c = hi.astype(np_dtype)
    d = np.sign(hi - c.astype(F64))
    d = np.where(d == 0, np.sign(resid), d)  # the sign of (exact - c)
    if mode == "ru":
        return np.where(d > 0, np.nextafter(c, np_dtype(np.inf)), c)
    if mode == "rd":
        return np.where(d < 0, np.nextafter(c, np_dtype(-np.inf)), c)
    if mode == "rz":
        away = ((d < 0) & (c > 0)) | ((d > 0) & (c < 0))
        return np.where(away, np.nextafter(c, np_dtype(0)), c)
    if np_dtype is F64:
        return c
    # nearest: `hi` halfway between two values of the narrow type is a tie only if the residual
    # is zero; otherwise the residual decides (no double rounding)
    err = hi - c.astype(F64)
    other = np.nextafter(c, np.where(err > 0, np_dtype(np.inf), np_dtype(-np.inf)))
    halfway = (err != 0) & (np.abs(other.astype(F64) - hi) == np.abs(err))
    return np.where(halfway & (np.sign(resid) == np.sign(err)), other, c)


def exact_add(a, b):
    return two_sum(a.astype(F64), b.astype(F64))


def exact_mul(a, b):
    return two_prod(a.astype(F64), b.astype(F64))


def exact_div(a, b):
    a, b = a.astype(F64), b.astype(F64)
    q = a / b
    p, e = two_prod(q, b)
    return q, ((a - p) - e) * np.sign(b)


def exact_sqrt(a):
    a = a.astype(F64)
    s = np.sqrt(a)
    p, e = two_prod(s, s)
    return s, (a - p) - e


def exact_fma(a, b, c):
    p, pe = two_prod(a.astype(F64), b.astype(F64))  # pe == 0 for fp32 inputs
    s, se = two_sum(p, c.astype(F64))
    return two_sum(s, se + pe)  # fp64: correctly rounded but for rare double-rounding ties


def exact_int(x):
    """A 64-bit integer as hi + r, both float64 and exact (two 32-bit halves, one TwoSum)."""
    x = np.asarray(x)
    if x.dtype.itemsize < 8:
        return x.astype(F64), np.zeros(x.shape)
    high = (x >> np.array(32, x.dtype)).astype(F64) * 4294967296.0
    low = (x & np.array(0xFFFFFFFF, x.dtype)).astype(F64)
    return two_sum(high, low)


def called_by_from_import(depth):
    """Whether the frame `depth` levels above the caller is executing `from M import name`."""
    frame = sys._getframe(depth + 1)
    return frame.f_code.co_code[frame.f_lasti] == _IMPORT_FROM


def missing_name(module, name):
    """The error for a name of Triton's API that minitriton lacks, raised from a module's
    `__getattr__`. Inside `from M import name` Python replaces an AttributeError by its own
    "cannot import name", losing what to do, so there it is an ImportError that says it;
    elsewhere an AttributeError (so that hasattr probes answer False)."""
    err = missing(module, name)
    if called_by_from_import(2):  # missing_name <- __getattr__ <- the code that asked
        return ImportError(str(err), name=module)
    return err
