"""Reductions and scans along a block axis: sum, max, min, argmax, argmin, cumsum, reduce.

Types follow Triton's standard library: `sum` of ints narrower than 32 bits accumulates in
(u)int32; `max`/`min` of fp16/bf16 return fp32 and of narrow ints return int32; arg-reductions
return int32 indices, ties broken toward the lowest index.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import types as _t
from ..context import active
from ..errors import CompilationError
from ..types import _unwrap
from .arith import _finish
from .core import _convert, cast, compute_array, tensor, tensor_member, to_tensor
from .shape import _take, expand_dims, reshape


def _axis(x, axis):
    axis = _unwrap(axis)
    rank = len(x.shape)
    if axis is None:
        return None
    if not isinstance(axis, (int, np.integer)) or not -rank <= axis < builtins.max(rank, 1):
        raise CompilationError(f"invalid axis {axis} for a tensor of shape {x.shape}")
    if rank == 0:
        raise CompilationError("cannot reduce a scalar")
    return int(axis) % rank


def _reduce(x, axis, keep_dims, fn, out_dtype, kind=None):
    x = to_tensor(_unwrap(x))
    ax = _axis(x, axis)
    keep = bool(_unwrap(keep_dims))
    data = compute_array(x)
    lanes = data.shape[0]
    with np.errstate(all="ignore"):
        if ax is None:
            flat = data.reshape(lanes, -1)
            out = fn(flat, 1)
            shape = [1] * len(x.shape) if keep else []
            out = out.reshape((lanes, *shape))
        else:
            out = fn(data, ax + 1)
            shape = list(x.shape)
            if keep:
                shape[ax] = 1
                out = np.expand_dims(out, ax + 1)
            else:
                del shape[ax]
    out = np.asarray(out)
    if out.dtype != out_dtype.np:
        out = _convert(out, out_dtype)
    result = tensor(out, out_dtype, shape)
    if kind is not None:
        ctx = active()
        for hook in (ctx.hooks["on_reduce"] if ctx is not None else ()):
            result = hook(x, ax, kind, result)
    return result


@tensor_member
def sum(input, axis=None, keep_dims=False, dtype=None):  # noqa: A001 - Triton's name
    x = to_tensor(_unwrap(input))
    dtype = _unwrap(dtype)
    if dtype is None:
        dtype = x.dtype
        if x.dtype.is_int() and x.dtype.int_bitwidth < 32:
            dtype = _t.int32 if x.dtype.is_int_signed() else _t.uint32
    x = cast(x, dtype)
    return _reduce(x, axis, keep_dims, lambda a, ax: np.add.reduce(a, axis=ax), dtype, "sum")


def _widen_for_minmax(x):
    if x.dtype.primitive_bitwidth < 32:
        return cast(x, _t.float32 if x.dtype.is_floating() else _t.int32)
    return x


def _minmax(np_fn, arg_fn, name):
    def op(input, axis=None, return_indices=False, return_indices_tie_break_left=True,
           keep_dims=False):
        x = to_tensor(_unwrap(input))
        if _unwrap(return_indices):
            values = op(x, axis, keep_dims=keep_dims)
            return values, _arg(x, axis, keep_dims, arg_fn)
        x = _widen_for_minmax(x)
        return _reduce(x, axis, keep_dims, lambda a, ax: np_fn.reduce(a, axis=ax), x.dtype, name)
    op.__name__ = name
    return tensor_member(op)


def _arg(x, axis, keep_dims, arg_fn):
    x = to_tensor(_unwrap(x))

    def fn(a, ax):
        if a.dtype.kind == "f":
            a = np.where(np.isnan(a), -np.inf if arg_fn is np.argmax else np.inf, a)
        return arg_fn(a, axis=ax)
    return _reduce(x, axis, keep_dims, fn, _t.int32, "max" if arg_fn is np.argmax else "min")


max = _minmax(np.fmax, np.argmax, "max")  # noqa: A001
min = _minmax(np.fmin, np.argmin, "min")  # noqa: A001


@tensor_member
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    return _arg(input, axis, keep_dims, np.argmax)


@tensor_member
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    return _arg(input, axis, keep_dims, np.argmin)


@tensor_member
def xor_sum(input, axis=None, keep_dims=False):
    x = to_tensor(_unwrap(input))
    if not x.dtype.is_int():
        raise CompilationError("xor_sum only supported for integers")
    return _reduce(x, axis, keep_dims, lambda a, ax: np.bitwise_xor.reduce(a, axis=ax), x.dtype)


def _scan(np_fn, name):
    def op(input, axis=0, reverse=False, dtype=None):
        x = to_tensor(_unwrap(input))
        if _unwrap(dtype) is not None:
            x = cast(x, _unwrap(dtype))
        elif x.dtype.is_int() and x.dtype.int_bitwidth < 32:
            x = cast(x, _t.int32 if x.dtype.is_int_signed() else _t.uint32)
        ax = _axis(x, axis) + 1
        data = compute_array(x)
        with np.errstate(all="ignore"):
            if _unwrap(reverse):
                out = np.flip(np_fn(np.flip(data, ax), axis=ax), ax)
            else:
                out = np_fn(data, axis=ax)
        return _finish(np.ascontiguousarray(out), x.dtype, x.shape)
    op.__name__ = name
    return tensor_member(op)


cumsum = _scan(np.cumsum, "cumsum")
cumprod = _scan(np.cumprod, "cumprod")


@tensor_member
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduce with a user @jit combine function, folding pairwise along the axis."""
    x = to_tensor(_unwrap(input))
    if _unwrap(axis) is None:
        x = reshape(x, [x.numel])
        axis = 0
    ax = _axis(x, axis)
    n = x.shape[ax]
    parts = [_take(x, ax, i) for i in range(n)]
    while len(parts) > 1:  # tree order, as a GPU reduction combines
        nxt = [combine_fn(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    out = parts[0]
    if _unwrap(keep_dims):
        out = expand_dims(out, ax)
    return out
