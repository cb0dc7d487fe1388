"""Element-wise math: exp, log, sqrt, sigmoid, erf, fma, clamp, where... with Triton's dtype rules.

Like Triton (libdevice's convention), the transcendental functions accept fp32/fp64 only: call
them on fp16/bf16 and you get the GPU's error, telling you to cast first.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompilationError
from ..types import _unwrap
from .arith import maximum, minimum, operands, where, _arrays, _finish  # noqa: F401
from .core import cast, compute_array, tensor_member, to_tensor
from .marks import elementwise
from .reduce import max as _max, sum as _sum

FP32_64 = ("fp32", "fp64")


def _check(x, allowed, name):
    if x.dtype.name not in allowed:
        raise CompilationError(f"Expected dtype {list(allowed)} but got {x.dtype.name} "
                               f"(in tl.{name}; cast first, e.g. `x.to(tl.float32)`)")


def _erf(x):
    # Numerical Recipes' erfc (Chebyshev fit, fractional error < 1.2e-7), evaluated in float64.
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0)


def _exp(x):
    # Triton lowers an fp32 exp to ex2.approx(x * log2(e)) with the product rounded to fp32
    # (ExpOpConversionApprox): that rounding, amplified by |x log2 e|, is most of the GPU's error
    # (7 ulp at |x| = 10), so compute the same product; ex2 itself is exact here, where the
    # GPU's is within 2 ulp. fp64 goes to libdevice's exp on the GPU: exact here too.
    if x.dtype == np.float32:
        return np.exp2((x * np.float32(1.4426950408889634)).astype(np.float64))
    return np.exp(x)


def _unary(name, fn, allowed=FP32_64):
    def op(x):
        x = to_tensor(_unwrap(x))
        _check(x, allowed, name)
        with np.errstate(all="ignore"):
            out = fn(compute_array(x))
        return _finish(np.asarray(out), x.dtype, x.shape)
    op.__name__ = name
    return tensor_member(elementwise(op))


exp = _unary("exp", _exp)
exp2 = _unary("exp2", np.exp2)
log = _unary("log", np.log)
log2 = _unary("log2", np.log2)
cos = _unary("cos", np.cos)
sin = _unary("sin", np.sin)
sqrt = _unary("sqrt", np.sqrt)
sqrt_rn = _unary("sqrt_rn", np.sqrt, ("fp32",))
rsqrt = _unary("rsqrt", lambda a: 1 / np.sqrt(a))
erf = _unary("erf", _erf)
floor = _unary("floor", np.floor)
ceil = _unary("ceil", np.ceil)


@tensor_member
@elementwise
def abs(x):  # noqa: A001 - Triton's name
    x = to_tensor(_unwrap(x))
    if x.dtype.is_ptr():
        raise CompilationError("tl.abs of a pointer")
    if x.dtype.is_int_unsigned():
        return x
    with np.errstate(all="ignore"):
        return _finish(np.abs(compute_array(x)), x.dtype, x.shape)


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
        if x.dtype.is_floating() and x.dtype.primitive_bitwidth <= 32:
            out = a.astype(np.float64) * b + c  # one rounding, like the fused instruction
        else:
            out = a * b + c
    return _finish(out, x.dtype, shape)


def cdiv(x, div):
    x, div = _unwrap(x), _unwrap(div)
    return (x + div - 1) // div


def clamp(x, min, max, propagate_nan=None):  # noqa: A002 - Triton's names
    x = to_tensor(_unwrap(x))
    if not x.dtype.is_floating():
        raise CompilationError(f"Unexpected dtype {x.dtype}: tl.clamp is for floating point")
    return minimum(maximum(x, min, propagate_nan), max, propagate_nan)


def fdiv(x, y, ieee_rounding=False):
    return x / y


def div_rn(x, y):
    x = to_tensor(_unwrap(x))
    _check(x, ("fp32",), "div_rn")
    return x / y


def umulhi(x, y):
    x, y, shape = operands(x, y)
    _check(x, ("int32", "int64", "uint32", "uint64"), "umulhi")
    a, b = _arrays(x, y, shape)
    bits = x.dtype.int_bitwidth
    if bits == 32:
        wide = a.astype(np.int64 if x.dtype.is_int_signed() else np.uint64) * b
        return _finish((wide >> 32).astype(x.dtype.np), x.dtype, shape)
    hi = np.array([(int(p) * int(q)) >> 64 for p, q in zip(a.ravel(), np.broadcast_to(b, a.shape).ravel())],
                  dtype=object).reshape(a.shape)
    return _finish(hi.astype(x.dtype.np), x.dtype, shape)

