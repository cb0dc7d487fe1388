"""Padding marks: which lanes of a block hold masked-out padding rather than loaded data.

The padding check (observe/padding.py) marks the lanes a masked load did not read; these
helpers (`propagate`, called by core.elementwise, and `reshaping`) carry the marks through the
language's operations, so that a reduction or a dot can tell padding from data. Element-wise
operations keep a mark where every full-size operand is padding (a broadcast operand or a
constant does not clear it); shape operations move the marks along with the values. With the
check off no tensor carries a mark and they cost one attribute test per operand.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import types as _t


def _pad_of(arg, shape, numel):
    """The operand's padding broadcast to `shape`; None if neutral; False array if real data."""
    pad = getattr(arg, "pad", None)
    if pad is not None:
        return pad.reshape((pad.shape[0],) + (1,) * (len(shape) - len(arg.shape)) +
                           tuple(arg.shape))
    if not hasattr(arg, "_is_mt_tensor") or getattr(arg, "numel", numel) < numel:
        return None
    return False


def propagate(out, operands):
    """`out` of an element-wise operation of `operands`, some of them marked: marked where
    every full-size operand is padding."""
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


def reshaping(fn):
    """Move padding marks along with a shape operation (reshape, trans, [:, None]...)."""
    @functools.wraps(fn)
    def wrapper(x, *args, **kwargs):
        out = fn(x, *args, **kwargs)
        pad = getattr(x, "pad", None)
        if pad is not None and hasattr(out, "_is_mt_tensor"):
            marked = fn(type(x)(np.asarray(pad), _t.int1, x.shape), *args, **kwargs)
            out.pad = marked.data
        return out
    return wrapper
