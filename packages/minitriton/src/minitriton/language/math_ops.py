"""Element-wise math: exp, log, sqrt, sigmoid, erf, fma, clamp, where... with Triton's dtype rules.

Like Triton (libdevice's convention), the transcendental functions accept fp32/fp64 only: call
them on fp16/bf16 and you get the GPU's error, telling you to cast first. On a compile-time
constant (core.py, `tensor.const`) most are folded by MLIR's math dialect with the host's libm
(`_folding`), not computed by the GPU's approximate instructions.
"""
from __future__ import annotations

import math as _math

import numpy as np

from ..context import note_math
from ..errors import CompilationError
from ..types import _unwrap
from .arith import (fma_exact, maximum, minimum, operands, where, _arrays, _factors,  # noqa: F401
                    _finish, _folded, _fusing, _is_propagating, _widen_bf16)
from .core import cast, compute_array, elementwise, tensor_member, to_tensor
from .reduce import max as _max, sum as _sum

FP32_64 = ("fp32", "fp64")


def _check(x, allowed, name):
    if x.dtype.name not in allowed:
        raise CompilationError(f"Expected dtype {list(allowed)} but got {x.dtype.name} "
                               f"(in tl.{name}; cast first, e.g. `x.to(tl.float32)`)")


_ERF = np.frompyfunc(_math.erf, 1, 1)
FP32_TINY = np.float32(2.0 ** -126)  # the smallest normal fp32


def _ftz(x):
    """fp32 subnormals flushed to a zero of their sign, as the GPU's .ftz instructions and
    libdevice (Triton sets nvvm-reflect-ftz) read them; other types unchanged."""
    if x.dtype != np.float32:
        return x
    return np.where(np.abs(x) < FP32_TINY, np.copysign(np.float32(0), x), x)


def _erf(x):
    # libdevice's erf (__nv_erff, __nv_erf) is within 2 ulp; Python's math.erf is within about
    # 1 ulp of float64, so rounding it to fp32 is within 1 ulp of the exact value. erf(0) = 0.
    x = _ftz(x)
    if x.size == 0:
        return x
    return _ERF(x.astype(np.float64)).astype(np.float64)


def _exp(x):
    # Triton lowers an fp32 exp to ex2.approx(x * log2(e)) with the product rounded to fp32
    # (ExpOpConversionApprox): that rounding, amplified by |x log2 e|, is most of the GPU's error
    # (7 ulp at |x| = 10), so compute the same product; ex2 itself is exact here, where the
    # GPU's is within 2 ulp. fp64 goes to libdevice's exp on the GPU: exact here too.
    if x.dtype == np.float32:
        return np.exp2((x * np.float32(1.4426950408889634)).astype(np.float64))
    return np.exp(x)


def _folding(fn, positive=False):
    """What MLIR's math folder of a constant computes (math::ExpOp::fold and the others): the
    host's libm in the operand's type, `expf(x)` for fp32 and `exp(x)` for fp64, here `fn` in
    float64 rounded once, which is the correctly rounded result (glibc's float functions are
    within about 0.5 to 0.8 ulp of it, so a rare value may differ in its last bit), with no
    flushing of subnormal inputs. `positive`: the folder leaves a negative operand (-0.0 too)
    to the GPU (log, log2, sqrt): None there."""
    def fold(arr):
        if positive and np.signbit(arr).any():
            return None
        return fn(arr.astype(np.float64))
    return fold


def _unary(name, fn, allowed=FP32_64, folded=None, special=True):
    """A `tl` function of one float operand computed by `fn`; `folded` (`_folding`) what the
    compiler computes for a constant operand, None where Triton does not fold it; `special`:
    the GPU computes it on its special-function units (the performance model counts those
    lanes: context.note_math), not as one ordinary instruction (floor, ceil)."""
    def op(x):
        x = to_tensor(_unwrap(x))
        _check(x, allowed, name)
        with np.errstate(all="ignore"):
            if x.const and folded is not None:
                out = folded(compute_array(x))
                if out is not None:
                    out = _finish(np.asarray(out), x.dtype, x.shape)
                    out.const = True
                    return out
            out = fn(compute_array(x))
        if special:
            note_math(name, x.shape)
        return _finish(np.asarray(out), x.dtype, x.shape)
    op.__name__ = name
    return tensor_member(elementwise(op))


exp = _unary("exp", _exp, folded=_folding(np.exp))
_exp2 = _unary("exp2", np.exp2, folded=_folding(np.exp2))


@tensor_member
@elementwise
def exp2(x):
    """fp64: libdevice's __nv_exp2 reduces its argument as k = rint(x) (an exact `x + 1.5 2^52`
    and back), r = x - k, then 2^r by a polynomial scaled by 2^k. Inlined into the kernel, that
    `x - k` is contracted with a product that x comes from: r = fma(a, b, -k) takes the exact
    a * b, so `tl.exp2(3.0 * tl.abs(y))` is 2 to the exact product, not to its rounding (20 ulp
    apart at 2^78: fuzz seed 901211 on the H200). fp32 is ex2.approx of x: nothing to fuse."""
    x = to_tensor(_unwrap(x))
    if x.fused is None or not x.dtype.is_fp64() or not _fusing(x.dtype):
        return _exp2(x)  # (a constant's product is folded: never fused)
    a, b = _factors(x, len(x.shape))
    with np.errstate(all="ignore"):
        k = np.rint(x.data)
        r = fma_exact(a, b, -k, x.dtype)
        out = np.where(np.isfinite(k) & (np.abs(k) < 2048), np.ldexp(np.exp2(r), np.where(
            np.isfinite(k), k, 0).astype(np.int64)), np.exp2(x.data))
    note_math("exp2", x.shape)
    return _finish(out, x.dtype, x.shape)
log = _unary("log", np.log, folded=_folding(np.log, positive=True))
log2 = _unary("log2", np.log2, folded=_folding(np.log2, positive=True))
cos = _unary("cos", np.cos, folded=_folding(np.cos))
sin = _unary("sin", np.sin, folded=_folding(np.sin))
# sqrt.approx.ftz.f32, rsqrt.approx.ftz.f32, cvt.rmi/rpi.ftz.f32: subnormal fp32 inputs read as
# zeros of their sign (rsqrt(-1e-43) = -inf, floor(-3e-39) = -0.0, sqrt(1e-40) = 0); folded,
# a constant's are not flushed (floor of a constant -3e-39 is -1.0). Not folded: sqrt_rn
# (tt.precise_sqrt has no folder) and rsqrt (math::RsqrtOp has a folder in later MLIR only).
sqrt = _unary("sqrt", lambda a: np.sqrt(_ftz(a)), folded=_folding(np.sqrt, positive=True))
sqrt_rn = _unary("sqrt_rn", np.sqrt, ("fp32",))
rsqrt = _unary("rsqrt", lambda a: 1 / np.sqrt(_ftz(a)))
erf = _unary("erf", _erf, folded=_folding(lambda a: _ERF(a).astype(np.float64)))
floor = _unary("floor", lambda a: np.floor(_ftz(a)), folded=_folding(np.floor), special=False)
ceil = _unary("ceil", lambda a: np.ceil(_ftz(a)), folded=_folding(np.ceil), special=False)


@tensor_member
@elementwise
def abs(x):  # noqa: A001 - Triton's name
    x = to_tensor(_unwrap(x))
    if x.dtype.is_ptr():
        raise CompilationError("tl.abs of a pointer")
    if x.dtype.is_int_unsigned():
        return x
    with np.errstate(all="ignore"):
        out = _finish(np.abs(compute_array(x)), x.dtype, x.shape)
    return _folded(out, x)  # math.absf / absi fold


@tensor_member
def sigmoid(x):
    x = to_tensor(_unwrap(x))
    return 1 / (1 + exp(-x))  # Triton's definition, so fp16 input fails at exp like on the GPU


@tensor_member
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    dim = _unwrap(dim)
    axis = 0 if dim is None else dim
    z = x - _max(x, axis, keep_dims=True)
    num = exp(z)
    den = _sum(num, axis, keep_dims=True)
    return num / den


@elementwise
def fma(x, y, z):
    x, y, shape = operands(x, y)
    x, z, shape = operands(x, z)
    y = cast(y, x.dtype)
    a, b = _arrays(x, y, shape)
    _, c = _arrays(x, z, shape)
    with np.errstate(all="ignore"):
        if x.dtype.is_floating():
            out = fma_exact(a, b, c, x.dtype)  # one rounding, like the fused instruction
        else:
            out = a * b + c
    return _folded(_finish(out, x.dtype, shape), x, y, z)  # APFloat's fusedMultiplyAdd


@tensor_member
def cdiv(x, div):
    x, div = _unwrap(x), _unwrap(div)
    return (x + div - 1) // div


def swizzle2d(i, j, size_i, size_j, size_g):
    """(i, j) of a row-major size_i x size_j grid to the column-major order of its groups of
    size_g rows (Triton's tl.swizzle2d): for 4 x 4 and groups of 2, row 0 becomes 0, 2, 4, 6
    and row 1 1, 3, 5, 7. The last group may hold fewer rows. Returns (new_i, new_j)."""
    linear = i * size_j + j  # the element's index in row-major order
    per_group = size_g * size_j  # elements in a group of size_g rows
    first_row = linear // per_group * size_g
    rows = minimum(size_i - first_row, size_g)  # the group's rows: fewer in the last group
    within = linear % per_group
    return first_row + within % rows, within // rows


def clamp(x, min, max, propagate_nan=None):  # noqa: A002 - Triton's names
    """Triton's clamp: literals become tensors of their own type and bf16 fp32 (as in
    tl.maximum), the three promoted pairwise. On the H200, clamp(x, -c, c) with literal bounds
    is Triton's clip pattern, `min.xorsign.abs`: min(|x|, |c|) with the sign of x (a NaN, the
    GPU's canonical positive one, gives +c); other bounds are maxnum(x, lo) then minnum(., hi) (a NaN gives lo). Neither
    propagates NaN unless propagate_nan=ALL."""
    bounds = (_unwrap(min), _unwrap(max))
    clip = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bounds) and \
        bounds[0] == -bounds[1]
    x, lo, hi = (_widen_bf16(to_tensor(_unwrap(v))) for v in (x, min, max))
    lo, hi, _ = operands(lo, hi)
    x, lo, _ = operands(x, lo)
    x, hi, shape = operands(x, hi)
    if not x.dtype.is_floating():
        raise CompilationError(f"Unexpected dtype {x.dtype}: tl.clamp is for floating point")
    lo = cast(lo, x.dtype)
    a, h = _arrays(x, hi, shape)
    _, low = _arrays(x, lo, shape)
    propagate = _is_propagating(propagate_nan)
    with np.errstate(all="ignore"):
        if clip and not propagate:
            # the GPU's NaNs are its canonical 0x7fffffff: positive (NumPy's may be negative)
            sign = (np.signbit(a) & ~np.isnan(a)) ^ np.signbit(h)
            mag = np.fmin(np.abs(a), np.abs(h))
            out = np.where(sign, -mag, mag)
        elif propagate:
            out = np.minimum(np.maximum(a, low), h)
        else:
            out = np.fmin(np.fmax(a, low), h)
        return _finish(out, x.dtype, shape)


def fdiv(x, y, ieee_rounding=False):
    return x / y


def div_rn(x, y):
    x = to_tensor(_unwrap(x))
    _check(x, ("fp32",), "div_rn")
    out = x / y
    out.const = False  # tt.precise_divf has no folder: div.rn.f32 at runtime, a runtime value
    return out


_LOW32 = np.uint64(0xFFFFFFFF)


def umulhi(x, y):
    """The high half of the unsigned product, for signed operands too (Triton's umulhi: the
    literal made a tensor of its own type, then promoted as two tensors)."""
    x, y, shape = operands(to_tensor(_unwrap(x)), to_tensor(_unwrap(y)))
    _check(x, ("int32", "int64", "uint32", "uint64"), "umulhi")
    a, b = _arrays(x, y, shape)
    bits = x.dtype.int_bitwidth
    ua, ub = a.view(f"uint{bits}"), b.view(f"uint{bits}")
    with np.errstate(all="ignore"):
        if bits == 32:
            hi = (ua.astype(np.uint64) * ub.astype(np.uint64)) >> np.uint64(32)
            return _finish(hi.astype(np.uint32).view(x.dtype.np), x.dtype, shape)
        s32 = np.uint64(32)
        al, ah, bl, bh = ua & _LOW32, ua >> s32, ub & _LOW32, ub >> s32
        lh, hl = al * bh, ah * bl
        mid = ((al * bl) >> s32) + (lh & _LOW32) + (hl & _LOW32)
        hi = ah * bh + (lh >> s32) + (hl >> s32) + (mid >> s32)
    return _finish(hi.view(x.dtype.np), x.dtype, shape)
