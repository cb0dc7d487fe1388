"""TMA tensor descriptors: host `TensorDescriptor` arguments, `tl.make_tensor_descriptor`,
`desc.load/store`, and the descriptor reductions (`desc.atomic_add`...)."""
from __future__ import annotations

import numpy as np

from .. import types as _t
from ..context import current, note_descriptor
from ..errors import CompilationError, GPUFaultError
from ..types import _unwrap
from .atomics import _atomic
from .block_pointers import _int_list, block_pointer
from .core import is_tensor, to_tensor, validate_block_shape


class tensor_descriptor:
    """A TMA tensor descriptor inside a kernel: a base pointer, the tensor's shape and strides,
    and the block every load and store moves. What a host `TensorDescriptor` argument becomes,
    and what `tl.make_tensor_descriptor` returns. Like the hardware, loads fill the part of the
    block outside the tensor with zeros (or NaN) and stores drop it: no access is out of bounds
    unless the descriptor claims more than its tensor holds."""

    def __init__(self, base, shape, strides, block_shape, padding="zero", layout=None):
        self.base, self.shape, self.strides = base, shape, strides
        self.block_shape, self.padding = block_shape, padding
        self.layout = layout  # a Gluon descriptor's NVMMASharedLayout

    @property
    def dtype(self):
        return self.base.dtype.element_ty

    @property
    def block_type(self):
        return _t.block_type(self.dtype, self.block_shape)

    @property
    def type(self):
        return tensor_descriptor_type(self.block_type, self.layout)

    def _window(self, offsets, op):
        offsets = list(_unwrap(offsets))
        if len(offsets) != len(self.block_shape):
            raise CompilationError(f"tensor descriptor {op}: expected {len(self.block_shape)} "
                                   f"offsets, but got {len(offsets)}")
        rank = len(self.block_shape)
        return block_pointer(self.base, self.shape, self.strides,
                             _int_list(offsets, "offsets", _t.int32, f"descriptor {op}"),
                             self.block_shape,
                             list(reversed(range(rank))))

    def load(self, offsets):
        note_descriptor("load")  # a TMA copy on the GPU (the register estimate's concern)
        return self._window(offsets, "load")._load(current(), range(len(self.block_shape)),
                                                   self.padding)

    def _value(self, value, op):
        value = to_tensor(_unwrap(value))
        if list(value.shape) != list(self.block_shape):
            raise CompilationError(f"tensor descriptor {op}: expected value shape "
                                   f"{list(self.block_shape)}, got {list(value.shape)}")
        return value

    def store(self, offsets, value):
        value = self._value(value, "store")  # cast to the descriptor's type, as Triton does
        self._window(offsets, "store")._store(current(), value, range(len(self.block_shape)))

    def _reduce(self, op, offsets, value):
        """TMA reductions: every element of the window inside the tensor is updated
        atomically; nothing is returned."""
        value = self._value(value, f"atomic_{op}")
        allowed = _DESCRIPTOR_ATOMIC_TYPES[op]
        if self.dtype.name not in allowed:
            raise CompilationError(f"tensor descriptor atomic_{op}: unsupported dtype "
                                   f"{self.dtype} (supported: {', '.join(sorted(allowed))})")
        if value.dtype != self.dtype:
            raise CompilationError(f"tensor descriptor atomic_{op}: the value is {value.dtype} "
                                   f"but the descriptor holds {self.dtype}; cast it with "
                                   f".to(desc.dtype)")
        window = self._window(offsets, f"atomic_{op}")
        self._check_reduce_offsets(window.offsets, op)
        ptr, mask = window._pointers(range(len(self.block_shape)))
        _atomic(op, ptr, value, mask, None, None)

    # TMA reductions into the window (`desc.atomic_add(offsets, value)`), nothing returned
    def atomic_add(self, offsets, value):
        self._reduce("add", offsets, value)

    def atomic_min(self, offsets, value):
        self._reduce("min", offsets, value)

    def atomic_max(self, offsets, value):
        self._reduce("max", offsets, value)

    def atomic_and(self, offsets, value):
        self._reduce("and", offsets, value)

    def atomic_or(self, offsets, value):
        self._reduce("or", offsets, value)

    def atomic_xor(self, offsets, value):
        self._reduce("xor", offsets, value)

    def _check_reduce_offsets(self, offsets, op):
        """On an H200 with Triton 3.6, a TMA reduction whose window starts at a negative offset,
        or at an inner (last-dimension) offset that is not a multiple of 16 bytes, stops the
        kernel with cudaErrorIllegalInstruction; windows past the end of the tensor are clipped
        and fine (probe of 2026-11-29, docs/limitations.md). Loads take any offset."""
        data = np.broadcast_arrays(*[np.atleast_1d(np.asarray(o.data, dtype=np.int64))
                                     for o in offsets])
        size = self.dtype.primitive_bitwidth // 8
        bad = np.zeros(data[0].shape, dtype=bool)
        for d in data:
            bad |= d < 0
        bad |= data[-1] * size % 16 != 0
        if not bad.any():
            return
        row = int(np.argmax(bad))
        at = [int(d[row]) for d in data]
        err = GPUFaultError(
            f"tensor descriptor atomic_{op} at offsets {at}: on the GPU, TMA reductions need "
            f"offsets >= 0 and a last offset that is a multiple of 16 bytes ({16 // size} "
            f"{self.dtype} elements); this one stops the kernel there with "
            f"cudaErrorIllegalInstruction. Align the window, or use tl.atomic_{op} on pointers")
        err.failing_row = row
        raise err


class tensor_descriptor_type:
    """A descriptor's type (`desc.type`): the block it moves, and a Gluon descriptor's shared
    layout."""

    def __init__(self, block_type, layout=None):
        self.block_type, self.layout = block_type, layout

    def __eq__(self, other):
        return isinstance(other, tensor_descriptor_type) and (
            self.block_type, self.layout) == (other.block_type, other.layout)

    def __repr__(self):
        return f"tensor_descriptor<{self.block_type}, {self.layout}>"


_BITWISE = {"uint32", "int32", "uint64", "int64"}
# the element types Triton 3.6 allows for each descriptor reduction (semantic.py)
_DESCRIPTOR_ATOMIC_TYPES = {"add": {"uint32", "int32", "uint64", "fp32", "fp16", "bf16"},
                            "min": _BITWISE | {"fp16", "bf16"}, "max": _BITWISE | {"fp16", "bf16"},
                            "and": _BITWISE, "or": _BITWISE, "xor": _BITWISE}


def load_tensor_descriptor(desc, offsets):
    return desc.load(offsets)


def store_tensor_descriptor(desc, offsets, value):
    return desc.store(offsets, value)


def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """`tl.make_tensor_descriptor`: a descriptor built inside the kernel (Triton's rules: 1 to 5
    dimensions, a contiguous last dimension, at least 16 bytes of it per block)."""
    base = to_tensor(_unwrap(base))
    if not base.dtype.is_ptr() or base.shape:
        raise CompilationError("make_tensor_descriptor: base must be a scalar pointer (a tensor "
                               "argument)")
    shape, strides = list(_unwrap(shape)), list(_unwrap(strides))
    block_shape = validate_block_shape(list(_unwrap(block_shape)))
    n = len(shape)
    if not 1 <= n <= 5 or len(strides) != n or len(block_shape) != n:
        raise CompilationError(f"make_tensor_descriptor: shape, strides and block_shape need the "
                               f"same rank, 1 to 5 (got {n}, {len(strides)}, {len(block_shape)})")
    elem = base.dtype.element_ty.primitive_bitwidth // 8
    if block_shape[-1] * elem < 16:
        raise CompilationError(f"Descriptor block shape must have at least 16 bytes in the last "
                               f"dimension, but got {block_shape[-1]} * {elem} = "
                               f"{block_shape[-1] * elem} bytes")
    last = _unwrap(strides[-1])
    if not is_tensor(last) and int(last) != 1:
        raise CompilationError(f"Tensor descriptor last dim must be 1 but got {last}")
    for i, stride in enumerate(strides[:-1]):  # TMA: 16-byte aligned strides
        stride = _unwrap(stride)
        values = np.unique(stride.data) if is_tensor(stride) else [int(stride)]
        bad = [int(v) for v in values if int(v) * elem % 16]
        if bad:
            # Triton checks constexpr strides when compiling; a runtime one faults on the GPU
            error = CompilationError if not is_tensor(stride) else GPUFaultError
            raise error(f"make_tensor_descriptor: stride {i} is {bad[0]} elements = "
                        f"{bad[0] * elem} bytes; TMA needs every stride but the last to be a "
                        f"multiple of 16 bytes (pad the rows, or use pointers)")
    padding = _unwrap(padding_option)
    if padding not in ("zero", "nan"):
        raise CompilationError(f"Illegal value for padding: {padding!r} (zero or nan)")
    op = "make_tensor_descriptor"
    return tensor_descriptor(base, _int_list(shape, "shape", _t.int32, op),
                             _int_list(strides, "strides", _t.int64, op), block_shape, padding)
