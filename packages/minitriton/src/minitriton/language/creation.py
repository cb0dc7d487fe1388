"""Program ids and block creation: program_id, num_programs, arange, zeros, full."""
from __future__ import annotations

import numpy as np

from ..errors import CompilationError
from ..context import current
from .. import types as _t
from .core import cast, constant, is_tensor, literal, tensor, to_tensor, validate_block_shape
from ..types import _unwrap


def _axis(axis, what):
    axis = _unwrap(axis)
    if axis not in (0, 1, 2):
        raise CompilationError(f"{what} axis must be 0, 1, or 2 but got {axis}")
    return axis


def program_id(axis=0):
    ctx = current()
    axis = _axis(axis, "program_id")
    return tensor(np.ascontiguousarray(ctx.pids[:, axis]), _t.int32, [])


def num_programs(axis=0):
    ctx = current()
    axis = _axis(axis, "num_programs")
    return literal(ctx.grid[axis], _t.int32)


def arange(start, end):
    start, end = _unwrap(start), _unwrap(end)
    bad = [(name, v) for name, v in (("start", start), ("end", end))
           if is_tensor(v) or not isinstance(v, (int, np.integer))]
    if bad:
        raise CompilationError(
            "arange's arguments must be of type tl.constexpr, but "
            + " and ".join(f"`{name}` {_describe(v)}" for name, v in bad)
            + "; annotate the kernel parameter it comes from as `tl.constexpr` "
            "(e.g. `n: tl.constexpr`), or use a constexpr block size and mask the extra lanes")
    if start < -2**31 or end > 2**31:
        raise CompilationError("arange must fit in int32")
    if end <= start:
        raise CompilationError("arange's end argument must be greater than the start argument")
    n = end - start
    if n & (n - 1):
        raise CompilationError(f"arange's range must be a power of 2 (got {start}..{end}, {n} "
                               "elements); use the next power of two and mask the extra lanes")
    validate_block_shape([n])
    out = tensor(np.arange(start, end, dtype=np.int32)[None], _t.int32, [n])
    out.const = n == 1  # MakeRangeOp::fold: a range of one element is the constant `start`
    return out


def _describe(v):
    """What a non-constexpr argument is, without showing a value: a runtime tensor's data is
    whatever the first program held, not something known when the kernel compiles."""
    if is_tensor(v):
        return "is a runtime value, not a constexpr"
    return f"is {v!r} (a {type(v).__name__}), not an integer constexpr"


def _constexpr_shape(shape, op):
    """Reject runtime shape elements with the same words as arange (before validate_block_shape,
    whose message would name the type `tensor`)."""
    for i, d in enumerate(shape):
        if is_tensor(_unwrap(d)):
            raise CompilationError(
                f"tl.{op}: shape element {i} must have type `constexpr[int]`, but it is a "
                "runtime value, not a constexpr; block shapes are compile-time constants: "
                "annotate the kernel parameter it comes from as `tl.constexpr`")
    return shape


def full(shape, value, dtype):
    return _full(shape, value, dtype, "full")


def _full(shape, value, dtype, op):
    shape = _unwrap(shape)
    shape = validate_block_shape(_constexpr_shape(
        shape if isinstance(shape, (list, tuple)) else [shape], op))
    dtype = _unwrap(dtype)
    value = _unwrap(value)
    if dtype is None:
        raise CompilationError("dtype must be specified when value is not a tensor")
    if is_tensor(value):
        if value.shape:
            raise CompilationError("tl.full value must be a scalar")
        v = cast(value, dtype)
    else:
        v = constant(value, dtype)  # Triton's scalar_constant: -0.0 is +0.0
    data = np.broadcast_to(v.data.reshape((-1,) + (1,) * len(shape)), (v.data.shape[0], *shape))
    out = tensor(np.array(data), dtype, shape)
    out.const = v.const  # the splat of a constant is one (SplatOp::fold)
    return out


def zeros(shape, dtype):
    return _full(shape, 0, dtype, "zeros")


def zeros_like(input):
    input = to_tensor(input)
    return zeros(input.shape, input.dtype)


def full_like(input, value):
    input = to_tensor(input)
    return full(input.shape, value, input.dtype)
