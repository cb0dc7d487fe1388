"""The padding sanitizer: masked-out lanes must not change a reduction or a dot.

With `Settings(padding=True)`, a masked `tl.load` marks the lanes it did not read as *padding*
(their value is `other`, or undefined without it); block-pointer loads mark the lanes outside
`boundary_check`. The language carries the marks through element-wise and shape operations
(language/marks.py). A reduction whose group mixes real and padding lanes must get from the
padding the same result it gets without it: 0 for `sum`, nothing above the real maximum for
`max` (exercise 3's `other=0.0` feeding `tl.max` of a negative row fails here), and `tl.dot`
needs 0 in padded lanes along K. Groups made only of padding stay padding (their results are usually masked out
later).
"""
from __future__ import annotations

import numpy as np

from ..context import Observer
from ..errors import PaddingError


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


class Padding(Observer):
    setting = "padding"
    per_program = True

    def after_load(self, accesses, value):
        """Mark the lanes of the loaded block that no access read."""
        if not value.shape:
            return
        read = None
        for access in accesses:
            lanes = access.lane_mask()
            read = lanes if read is None else read | lanes
        if read is None:
            read = np.zeros(value.data.shape, bool)
        if not read.all():
            value.pad = ~read

    def on_reduce(self, x, axis, kind, result):
        return check_reduction(x, axis, kind, result)

    def on_dot(self, a, b, flops):
        if a.pad is not None or b.pad is not None:
            check_dot(a, b)
