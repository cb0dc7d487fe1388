"""Block pointers: `tl.make_block_ptr` and `tl.advance`, a window on an N-d tensor that loads and
stores move as a whole, masked by `boundary_check` and filled by `padding_option`."""
from __future__ import annotations

import numpy as np

from .. import types as _t
from ..errors import CompilationError, OutOfBoundsError
from ..bounds import oob_error
from ..types import _unwrap
from .access import Lanes, gather, scatter
from .arith import add as _add
from .core import broadcast_to, cast, is_tensor, tensor, to_tensor, validate_block_shape


class block_pointer:
    """What `tl.make_block_ptr` returns: a base pointer plus a window on an N-d tensor."""

    _is_mt_tensor = True

    def __init__(self, base, shape, strides, offsets, block_shape, order):
        self.base, self.shape, self.strides = base, shape, strides
        self.offsets, self.block_shape, self.order = offsets, block_shape, order

    @property
    def dtype(self):
        return self.base.dtype

    @property
    def type(self):
        return _t.pointer_type(_t.block_type(self.base.dtype.element_ty, self.block_shape))

    def advance(self, offsets):
        return advance(self, offsets)

    def _indices(self):
        """Per-dimension element indices of the window, broadcastable to (L, *block_shape)."""
        rank = len(self.block_shape)
        out = []
        for d, (off, n) in enumerate(zip(self.offsets, self.block_shape)):
            view = [1] * rank
            view[d] = n
            lanes = off.data.shape[0]
            idx = off.data.astype(np.int64).reshape((lanes,) + (1,) * rank) + \
                np.arange(n, dtype=np.int64).reshape([1] + view)
            out.append(idx)
        return out

    def _lanes(self, ctx, boundary_check):
        return Lanes(ctx, *self._pointers(boundary_check))

    def _checks(self, boundary_check):
        checks = tuple(_unwrap(b) for b in (_unwrap(boundary_check) or ()))
        rank = len(self.block_shape)
        for b in checks:
            if not isinstance(b, int) or not 0 <= b < rank:
                raise CompilationError(f"boundary_check dimension {b!r} is out of range for a "
                                       f"block pointer of rank {rank}")
        return checks

    def _pointers(self, boundary_check):
        """(addresses, mask or None) of the window, the mask from `boundary_check`."""
        checks = self._checks(boundary_check)
        rank = len(self.block_shape)
        idxs = self._indices()
        addr = self.base.data.reshape((-1,) + (1,) * rank).astype(np.int64)
        active = True
        for d, idx in enumerate(idxs):
            stride = self.strides[d].data.reshape((-1,) + (1,) * rank)
            addr = addr + idx * stride
            if d in checks:
                dim = self.shape[d].data.reshape((-1,) + (1,) * rank)
                active = active & (idx >= 0) & (idx < dim)
        lanes = addr.shape[0]
        if active is not True:
            lanes = max(lanes, active.shape[0])
        addr = np.broadcast_to(addr, (lanes, *self.block_shape))
        ptr = tensor(addr, self.base.dtype, self.block_shape, self.base.origin)
        mask = None if active is True else tensor(
            np.broadcast_to(active, (lanes, *self.block_shape)), _t.int1, self.block_shape)
        return ptr, mask

    def _load(self, ctx, boundary_check, padding_option):
        padding = _unwrap(padding_option) or ""
        if padding not in ("", "zero", "nan"):
            raise CompilationError(f"Padding option {padding} not supported")
        elt = self.base.dtype.element_ty
        if padding == "nan" and not elt.is_floating():
            raise CompilationError("Padding option `nan` is not supported for integer block "
                                   "pointers")
        other = None
        if padding == "nan":
            other = tensor(np.full((1,), np.nan, dtype=elt.np), elt, [])
        lanes = self._lanes(ctx, boundary_check)
        try:
            return gather(ctx, lanes, other)
        except OutOfBoundsError as e:
            raise self._bounds_error(e, "load", boundary_check) from None

    def _store(self, ctx, value, boundary_check):
        elt = self.base.dtype.element_ty
        value = broadcast_to(cast(to_tensor(value), elt), self.block_shape)
        lanes = self._lanes(ctx, boundary_check)
        try:
            scatter(ctx, lanes, value)
        except OutOfBoundsError as e:
            raise self._bounds_error(e, "store", boundary_check) from None

    def _bounds_error(self, e, op, boundary_check):
        """The out-of-bounds error `e` again, with a block pointer's advice (`boundary_check`
        and `padding_option`, not a mask), naming the dimensions the block overflows."""
        buf = getattr(e, "buffer", None)
        if buf is None:
            return e
        row = getattr(e, "failing_row", 0)
        checks = self._checks(boundary_check)
        over = []
        for d, (off, n) in enumerate(zip(self.offsets, self.block_shape)):
            start = int(off.data[min(row, off.data.shape[0] - 1)])
            size = int(self.shape[d].data[min(row, self.shape[d].data.shape[0] - 1)])
            if d not in checks and (start < 0 or start + n > size):
                over.append((d, f"dimension {d} (the block covers [{start}, {start + n}), the "
                                f"shape is {size})"))
        if over:
            dims = tuple(sorted(set(checks) | {d for d, _ in over}))
            hint = (f"the block overflows the block pointer's shape in "
                    f"{' and '.join(t for _, t in over)}; a block pointer takes no mask: pass "
                    f"`boundary_check={dims}` to tl.{op}")
            hint += (", and `padding_option=\"zero\"` (or `\"nan\"`) for the value of the lanes "
                     "outside (undefined on a GPU without it)" if op == "load" else
                     " (the lanes outside the shape are then not written)")
        else:
            hint = (f"the block lies inside the block pointer's shape but outside `{buf.name}`: "
                    "check the shape, strides and base given to tl.make_block_ptr")
        err = oob_error(buf, e.bad_offsets, op, e.lanes_total, hint=hint)
        err.failing_row = row
        return err


def _int_list(values, what, dtype, op="make_block_ptr"):
    out = []
    for v in values:
        v = _unwrap(v)
        if is_tensor(v):
            if not v.dtype.is_int() or v.shape:
                raise CompilationError(f"{op}: {what} must be integer scalars")
            out.append(cast(v, dtype))
        elif isinstance(v, (int, np.integer)):
            out.append(to_tensor(int(v)) if dtype is None else cast(to_tensor(int(v)), dtype))
        else:
            raise CompilationError(f"{op}: {what} must be integers, got {v!r}")
    return out


def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    base = to_tensor(_unwrap(base))
    if not base.dtype.is_ptr() or base.shape:
        raise CompilationError("Expected `base` to be a scalar pointer (a tensor argument)")
    shape, strides, offsets = (list(_unwrap(v)) for v in (shape, strides, offsets))
    block_shape = validate_block_shape(list(_unwrap(block_shape)))
    order = [int(_unwrap(o)) for o in _unwrap(order)]
    n = len(shape)
    if not (len(strides) == len(offsets) == len(block_shape) == n):
        raise CompilationError("Expected shape/strides/offsets/block_shape to have the same length")
    if sorted(order) != list(range(n)):
        raise CompilationError(f"Expected a permutation of (0, 1, ..., len(order)-1) in order, "
                               f"got {order}")
    return block_pointer(base, _int_list(shape, "shape", _t.int64),
                         _int_list(strides, "strides", _t.int64),
                         _int_list(offsets, "offsets", _t.int32), block_shape, order)


def advance(base, offsets):
    if not isinstance(base, block_pointer):
        raise CompilationError("tl.advance expects a block pointer made by tl.make_block_ptr")
    offsets = list(_unwrap(offsets))
    if len(offsets) != len(base.offsets):
        raise CompilationError(f"tl.advance: expected {len(base.offsets)} offsets, got "
                               f"{len(offsets)}")
    new = [_add(o, cast(to_tensor(_unwrap(d)), _t.int32)) for o, d in zip(base.offsets, offsets)]
    return block_pointer(base.base, base.shape, base.strides, new, base.block_shape, base.order)
