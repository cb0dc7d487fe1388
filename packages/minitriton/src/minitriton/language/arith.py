"""Arithmetic, comparison, bitwise and pointer operators on tensors, with Triton's typing.

Each operator: type-check and promote the operands (`dtypes.computation_type`), broadcast the
block shapes, compute in NumPy (half types compute in fp32 and round once, which is what the
GPU's correctly rounded fp16/bf16 instructions give), and round to the result type.
"""
from __future__ import annotations

import numpy as np

from .. import types as _t
from ..context import active
from ..errors import CompilationError
from ..types import _unwrap
from .core import (broadcast_shapes, cast, compute_array, is_tensor, literal, tensor,
                   tensor_member, to_tensor, _convert)
from .dot import mma_chain
from .marks import elementwise


def _literal_operand(value, ty):
    if ty.is_int():
        if value < 0 and ty.is_int_unsigned() and not ty.is_bool():
            raise CompilationError("Cannot perform a binary operation between an unsigned tensor "
                                   "and a negative scalar. Perform a explicit cast on one of them.")
        info = np.iinfo(ty.np) if not ty.is_bool() else None
        if info is not None and not (info.min <= value <= info.max):
            raise CompilationError(f"Scalar {value} is out of range for type {ty}")
    return literal(value, ty)


def _check_ptr(a, b, allow_ptr):
    if a.is_ptr():
        if not allow_ptr or (b.is_ptr() and a != b) or b.is_floating():
            raise CompilationError(f"invalid operands of type {a!r} and {b!r}")


def operands(a, b, allow_lhs_ptr=False, allow_rhs_ptr=False, arithmetic=True, div_or_mod=False):
    """Promote and broadcast two operands; returns (a, b, shape) with a, b tensors."""
    a, b = _unwrap(a), _unwrap(b)
    a_lit, b_lit = not is_tensor(a), not is_tensor(b)
    a_ty = _t.literal_type(a) if a_lit else a.dtype
    b_ty = _t.literal_type(b) if b_lit else b.dtype
    _check_ptr(a_ty, b_ty, allow_lhs_ptr)
    _check_ptr(b_ty, a_ty, allow_rhs_ptr)
    if arithmetic and not a_ty.is_ptr() and not b_ty.is_ptr():
        ty = _t.computation_type(a_ty, a_lit, b_ty, b_lit, div_or_mod)
        a = _literal_operand(a, ty) if a_lit else cast(a, ty)
        b = _literal_operand(b, ty) if b_lit else cast(b, ty)
    else:
        a, b = to_tensor(a), to_tensor(b)
    return a, b, broadcast_shapes(a.shape, b.shape)


def _arrays(a, b, shape):
    rank = len(shape)
    return (_expand(compute_array(a), a, rank), _expand(compute_array(b), b, rank))


def _expand(arr, t, rank):
    pad = rank - len(t.shape)
    return arr if pad == 0 else arr.reshape((arr.shape[0],) + (1,) * pad + tuple(t.shape))


def _finish(result, ty, shape, origin=None):
    if result.dtype != ty.np:
        result = _convert(result, ty) if not ty.is_ptr() else result.astype(np.int64)
    return tensor(result, ty, shape, origin)


def _pointer_offset(ptr, off, shape):
    """ptr + off: offsets are in elements of the pointee type (addptr)."""
    if not off.dtype.is_int():
        raise CompilationError(f"pointer offsets must be integers, got {off.dtype!r}")
    o = off.data
    if off.dtype.is_int_unsigned() and off.dtype.int_bitwidth < 64:
        o = o.astype(np.uint64)
    rank = len(shape)
    p = _expand(ptr.data, ptr, rank)
    o = _expand(o if o.dtype == np.int64 else o.astype(np.int64), off, rank)
    return tensor(p + o, ptr.dtype, shape, ptr.origin)  # addresses count elements (memory.py)


# Float types whose `a * b + c` the GPU contracts into one fused multiply-add (one rounding):
# Triton compiles with enable_fp_fusion=True and NVPTX fuses aggressively (a product with
# several uses too). A product remembers its factors; an add or sub taking it computes the
# exact product in float64 and rounds once. Measured on the H200 (Triton 3.6): in fp32 every
# such sum is fused, and where both operands are products the second is (`x * y + z * x` is
# fma(z, x, round(x * y))); in fp16 and bf16 only a sum of two products is fused (the second),
# `x * y + x` is not. `kernel[grid](..., enable_fp_fusion=False)` turns it off.
FUSED_TYPES = ("fp32", "fp16", "bf16")


def _fusing(ty):
    if ty.name not in FUSED_TYPES:
        return False
    ctx = active()
    return ctx is None or ctx.record.options.get("enable_fp_fusion", True) is not False


def _exact(t, rank):
    """The unrounded product `t` stands for, in float64, with a block part of `rank` dims."""
    x, y = t.fused
    return _expand(x.astype(np.float64) * y, t, rank)


def _contracted(a, b, x, y, shape, sign):
    """a + sign * b as the GPU computes it when an operand is a product (None: not fused)."""
    if a.dtype.name != "fp32" and (a.fused is None or b.fused is None):
        return None
    if b.fused is not None:
        return x.astype(np.float64) + sign * _exact(b, len(shape))
    if a.fused is not None:
        return _exact(a, len(shape)) + sign * y.astype(np.float64)
    return None


@elementwise
def add(a, b):
    a, b, shape = operands(a, b, True, True)
    if a.dtype.is_ptr() and b.dtype.is_ptr():
        raise CompilationError("cannot add pointers together")
    if b.dtype.is_ptr():
        a, b = b, a
    if a.dtype.is_ptr():
        return _pointer_offset(a, b, shape)
    x, y = _arrays(a, b, shape)
    with np.errstate(all="ignore"):
        chained = _dot_accumulating(a, b, x, y, shape)
        if chained is not None:
            return chained
        fused = _contracted(a, b, x, y, shape, 1) if _fusing(a.dtype) else None
        return _finish(x + y if fused is None else fused, a.dtype, shape)


def _dot_accumulating(a, b, x, y, shape):
    """`d + tl.dot(p, q)` (or `tl.dot(p, q) + d`) as Triton compiles it: its combine pass makes d
    the dot's accumulator, so the tensor cores' chain continues from d instead of the sum
    being rounded on its own (`acc += tl.dot(p, q)` is `acc = tl.dot(p, q, acc)`, bit for bit).
    None where no operand is such a dot."""
    for dot_result, other in ((b, x), (a, y)):
        if dot_result.chain is not None and list(dot_result.shape) == list(shape) and \
                a.dtype == b.dtype == _t.float32:
            p, q, step = dot_result.chain
            return tensor(mma_chain(p, q, other, step), _t.float32, shape)
    return None


@elementwise
def sub(a, b):
    a, b, shape = operands(a, b, True, False)
    if a.dtype.is_ptr():
        return _pointer_offset(a, neg(b), shape)
    x, y = _arrays(a, b, shape)
    with np.errstate(all="ignore"):
        fused = _contracted(a, b, x, y, shape, -1) if _fusing(a.dtype) else None
        return _finish(x - y if fused is None else fused, a.dtype, shape)


@elementwise
def mul(a, b):
    a, b, shape = operands(a, b)
    x, y = _arrays(a, b, shape)
    with np.errstate(all="ignore"):
        out = _finish(x * y, a.dtype, shape)
    if _fusing(a.dtype):
        out.fused = (x, y)
    return out


@elementwise
def truediv(a, b):
    a, b, shape = operands(a, b, div_or_mod=True)
    ty = a.dtype
    if ty.is_int():
        a, b, ty = cast(a, _t.float32), cast(b, _t.float32), _t.float32
    x, y = _arrays(a, b, shape)
    with np.errstate(all="ignore"):
        return _finish(x / y, ty, shape)


def _c_div(x, y):
    """Integer division truncating toward zero (sdiv); division by zero gives 0 here."""
    with np.errstate(all="ignore"):
        safe = np.where(y == 0, 1, y)
        q = x // safe
        fix = (q < 0) & (q * safe != x)
        q = np.where(fix, q + 1, q)
        return np.where(y == 0, 0, q).astype(x.dtype, copy=False)


@elementwise
def floordiv(a, b):
    a, b, shape = operands(a, b, div_or_mod=True)
    if not a.dtype.is_int():
        raise CompilationError(f"unexpected type {a.dtype}: `//` is only defined for integers in "
                               "Triton; use `/` (and tl.floor) for floating point")
    x, y = _arrays(a, b, shape)
    if a.dtype.is_int_signed():
        return _finish(_c_div(x, y), a.dtype, shape)
    with np.errstate(all="ignore"):
        return _finish(np.where(y == 0, 0, x // np.where(y == 0, 1, y)), a.dtype, shape)


@elementwise
def mod(a, b):
    a, b, shape = operands(a, b, div_or_mod=True)
    x, y = _arrays(a, b, shape)
    with np.errstate(all="ignore"):
        if a.dtype.is_floating():
            return _finish(np.fmod(x, y), a.dtype, shape)  # frem: sign of the dividend, like C
        safe = np.where(y == 0, 1, y)
        return _finish(np.where(y == 0, 0, np.fmod(x, safe)), a.dtype, shape)


def _bitwise(fn, name):
    @elementwise
    def op(a, b):
        a, b, shape = operands(a, b)
        if not a.dtype.is_int():
            raise CompilationError(f"unexpected type {a.dtype} for `{name}`: bitwise operators "
                                   "need integer or boolean operands")
        x, y = _arrays(a, b, shape)
        with np.errstate(all="ignore"):
            return _finish(fn(x, y), a.dtype, shape)
    return op


and_ = _bitwise(np.bitwise_and, "&")
or_ = _bitwise(np.bitwise_or, "|")
xor_ = _bitwise(np.bitwise_xor, "^")


def _shift(left):
    @elementwise
    def op(a, b):
        a, b, shape = operands(a, b)
        if not a.dtype.is_int():
            raise CompilationError(f"unexpected type {a.dtype} for a shift")
        x, y = _arrays(a, b, shape)
        bits = a.dtype.int_bitwidth
        with np.errstate(all="ignore"):
            ok = (y >= 0) & (y < bits)
            ys = np.where(ok, y, 0).astype(x.dtype)
            r = np.left_shift(x, ys) if left else np.right_shift(x, ys)
            return _finish(np.where(ok, r, 0).astype(x.dtype), a.dtype, shape)
    return op


lshift = _shift(True)
rshift = _shift(False)


def _compare(fn):
    @elementwise
    def op(a, b):
        a, b, shape = operands(a, b, True, True)
        x, y = _arrays(a, b, shape)
        return tensor(fn(x, y), _t.int1, shape)
    return op


eq = _compare(np.equal)
ne = _compare(np.not_equal)
lt = _compare(np.less)
le = _compare(np.less_equal)
gt = _compare(np.greater)
ge = _compare(np.greater_equal)


@elementwise
def neg(a):
    a = to_tensor(a)
    if a.dtype.is_ptr():
        raise CompilationError(f"wrong type argument to unary minus ({a.dtype!r})")
    return sub(literal(0, a.dtype), a)


@elementwise
def invert(a):
    a = to_tensor(a)
    if a.dtype.is_ptr() or a.dtype.is_floating():
        raise CompilationError(f"wrong type argument to unary invert ({a.dtype!r})")
    if a.dtype.is_bool():
        return tensor(~a.data, a.dtype, a.shape)
    return tensor(np.invert(a.data), a.dtype, a.shape)


def _minmax(np_fn, np_nan_fn):
    @elementwise
    def op(x, y, propagate_nan=None):
        x, y, shape = operands(x, y)
        a, b = _arrays(x, y, shape)
        prop = _unwrap(propagate_nan)
        fn = np_nan_fn if (x.dtype.is_floating() and prop in (None, "none", 0, "NONE")) else np_fn
        if not x.dtype.is_floating():
            fn = np_fn
        return _finish(fn(a, b), x.dtype, shape)
    return op


# Triton's minimum/maximum return the non-NaN operand unless propagate_nan=ALL (fmin/fmax).
minimum = _minmax(np.minimum, np.fmin)
maximum = _minmax(np.maximum, np.fmax)


@elementwise
def where(condition, x, y):
    condition = cast(to_tensor(condition), _t.int1)
    x, y, shape = operands(x, y, True, True)
    if x.dtype != y.dtype or x.dtype.is_ptr() != y.dtype.is_ptr():
        raise CompilationError(f"tl.where: incompatible types {x.dtype!r} and {y.dtype!r}")
    shape = broadcast_shapes(condition.shape, shape)
    rank = len(shape)
    c = _expand(condition.data, condition, rank)
    a = _expand(x.data, x, rank)
    b = _expand(y.data, y, rank)
    origin = x.origin if x.origin is y.origin else None
    if x.dtype.is_ptr() and origin is None:
        origin = "mixed"
    return tensor(np.where(c, a, b), x.dtype, shape, origin)


# Python's operators on tensors are these functions: `x + y` is add(x, y), `2 + x` add(2, x).
for _name, _fn in {"add": add, "sub": sub, "mul": mul, "truediv": truediv, "floordiv": floordiv,
                   "mod": mod, "and": and_, "or": or_, "xor": xor_, "lshift": lshift,
                   "rshift": rshift}.items():
    tensor_member(_fn, name=f"__{_name}__", reflected=f"__r{_name}__")
for _name, _fn in {"eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "neg": neg,
                   "invert": invert}.items():
    tensor_member(_fn, name=f"__{_name}__")
tensor_member(lambda self: self, name="__pos__")


@tensor_member(name="__pow__")
def _pow(a, b):
    raise CompilationError("`**` is not supported on Triton tensors; use tl.exp2/tl.log2 or "
                           "repeated multiplication (or tl.extra.libdevice.pow on the GPU)")

