"""The padding sanitizer: masked-out lanes must not change a reduction or a dot.

With `Settings(padding=True)`, a masked `tl.load` marks the lanes it did not read as *padding*
(their value is `other`, or undefined without it); block-pointer loads mark the lanes outside
`boundary_check`. Element-wise operations keep the mark where every full-size operand is padding
(a broadcast operand or a constant does not clear it), shape operations move it along. A
reduction whose group mixes real and padding lanes must get from the padding the same result
it gets without it: 0 for `sum`, nothing above the real maximum for `max` (exercise 3's
`other=0.0` feeding `tl.max` of a negative row fails here), and `tl.dot` needs 0 in padded
lanes along K. Groups made only of padding stay padding (their results are usually masked out
later).
"""
from __future__ import annotations

import functools

import numpy as np

from ..errors import PaddingError


def _pad_of(arg, shape, numel):
    """The operand's padding broadcast to `shape`; None if neutral; False array if real data."""
    pad = getattr(arg, "pad", None)
    if pad is not None:
        return _expand(pad, arg.shape, shape)
    if not hasattr(arg, "_is_mt_tensor") or getattr(arg, "numel", numel) < numel:
        return None
    return False


def _expand(pad, src_shape, shape):
    rank = len(shape)
    pad = pad.reshape((pad.shape[0],) + (1,) * (rank - len(src_shape)) + tuple(src_shape))
    return pad


def elementwise(fn):
    """Propagate padding marks through an element-wise operation."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        operands = list(args) + list(kwargs.values())
        if not any(getattr(a, "pad", None) is not None for a in operands):
            return out
        if not isinstance(out, tuple) and hasattr(out, "_is_mt_tensor") and out.shape:
            pads = [_pad_of(a, out.shape, out.numel) for a in operands]
            pads = [p for p in pads if p is not None]
            if pads and all(p is not False for p in pads):
                result = pads[0]
                for p in pads[1:]:
                    result = result & p
                out.pad = np.broadcast_to(result, (max(result.shape[0], out.data.shape[0]),
                                                   *out.shape))
        return out
    return wrapper


def reshaping(fn):
    """Move padding marks along with a shape operation (reshape, trans, [:, None]...)."""
    @functools.wraps(fn)
    def wrapper(x, *args, **kwargs):
        out = fn(x, *args, **kwargs)
        pad = getattr(x, "pad", None)
        if pad is not None and hasattr(out, "_is_mt_tensor"):
            from ..language import dtypes
            from ..language.core import tensor
            marked = fn(tensor(np.asarray(pad), dtypes.int1, x.shape), *args, **kwargs)
            out.pad = marked.data
        return out
    return wrapper


def check_reduction(x, axis, kind, result):
    """Raise if padding lanes change a reduction over `axis` (None: all) of block `x`."""
    pad = getattr(x, "pad", None)
    if pad is None:
        return result
    lanes = max(pad.shape[0], x.data.shape[0])
    pad = np.broadcast_to(pad, (lanes, *x.shape))
    data = np.broadcast_to(x.data, (lanes, *x.shape)).astype(np.float64)
    axes = tuple(range(1, len(x.shape) + 1)) if axis is None else (axis + 1,)
    mixed = pad.any(axis=axes, keepdims=True) & (~pad).any(axis=axes, keepdims=True)
    if kind == "sum":
        bad = pad & mixed & (data != 0)
        want = "0"
    else:
        fill = -np.inf if kind == "max" else np.inf
        real = np.where(pad, fill, data)
        best = real.max(axis=axes, keepdims=True) if kind == "max" else \
            real.min(axis=axes, keepdims=True)
        bad = pad & mixed & ((data > best) if kind == "max" else (data < best))
        want = "-inf" if kind == "max" else "+inf"
    if bad.any():
        where = np.argwhere(bad)[0]
        value = data[tuple(where)]
        err = PaddingError(
            f"masked-out lanes change a tl.{kind}: lane {tuple(int(i) for i in where[1:])} was "
            f"not loaded (masked) and holds {value:g}, which the {kind} combines with the real "
            f"values of its row.\n"
            f"hint: give the masked load `other={want}` (the identity of {kind}), or mask the "
            f"lanes with tl.where before reducing")
        err.failing_row = int(where[0])
        raise err
    all_pad = pad.all(axis=axes) if axis is not None else pad.all(axis=axes)
    if all_pad.any() and hasattr(result, "_is_mt_tensor") and result.shape:
        result.pad = all_pad.reshape((lanes, *result.shape)) if all_pad.size == lanes * \
            result.numel else None
    return result


def check_dot(a, b):
    for operand, k_axis, name in ((a, -1, "first"), (b, -2, "second")):
        pad = getattr(operand, "pad", None)
        if pad is None:
            continue
        lanes = max(pad.shape[0], operand.data.shape[0])
        pad = np.broadcast_to(pad, (lanes, *operand.shape))
        data = np.broadcast_to(operand.data, (lanes, *operand.shape)).astype(np.float64)
        mixed = pad.any(axis=k_axis, keepdims=True) & (~pad).any(axis=k_axis, keepdims=True)
        bad = pad & mixed & (data != 0)
        if bad.any():
            where = np.argwhere(bad)[0]
            err = PaddingError(
                f"masked-out lanes change a tl.dot: the {name} operand's lane "
                f"{tuple(int(i) for i in where[1:])} was not loaded and holds "
                f"{data[tuple(where)]:g} along K.\nhint: load it with `other=0.0` "
                "(or padding_option=\"zero\")")
            err.failing_row = int(where[0])
            raise err
