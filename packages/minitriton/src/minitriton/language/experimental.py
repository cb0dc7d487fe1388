"""Triton 3.2/3.3's experimental TMA API in kernels: `tl._experimental_descriptor_load/store`,
`tl._experimental_reinterpret_tensor_descriptor`, `tl._experimental_make_tensor_descriptor` and
`tl.nv_tma_desc_type`, as the old tutorials 06 (fused attention) and 09 (persistent matmul) use
them.

`desc_ptr` points to a 128-byte descriptor filled on the host (tools/experimental_descriptor.py
describes its fields): a `TmaDescKernelParam` argument, or an int8/uint8 tensor filled by
`driver.active.utils.fill_1d/2d_tma_descriptor`. Each load or store reads the fields from
memory, makes the base pointer from the global address (`AddressSpace.pointers_from_integers`)
and moves the box with descriptors.py's `tensor_descriptor`: like TMA, the part of the box
outside the tensor reads as zero and is not written. Reading the descriptor is no traffic (on
the GPU it is a kernel parameter, prefetched once).

Checked with the words Triton 3.3 uses: 2-D boxes of at least 8 rows and 32 bytes per row
(`validate_descriptor_block`), 2 to 5 dimensions for `_experimental_make_tensor_descriptor`. What
the GPU would not catch, minitriton refuses with a GPUFaultError: bytes that are no descriptor, a
box, rank or element size that differ from the kernel's (the TMA unit moves the descriptor's box,
so the kernel would get wrong data). Triton 3.6, on our GPU machine, no longer has this API: no
`gpu` test compares it with the hardware.
"""
from __future__ import annotations

import weakref

import numpy as np

from .. import types as _t
from ..context import current
from ..errors import CompilationError, GPUFaultError, LaunchError, OutOfBoundsError
from ..tools import experimental_descriptor as host
from ..types import _unwrap
from .core import is_tensor, tensor, to_tensor, validate_block_shape
from .descriptors import make_tensor_descriptor, tensor_descriptor

_SIZE = host.TMA_DESC_SIZE
_FILL = ("fill it on the host before the launch with triton.runtime.driver.active.utils."
         "fill_2d_tma_descriptor(ptr, dim1, dim0, block_dim1, block_dim0, element_size, "
         "desc.data_ptr()) (or fill_1d_tma_descriptor), or pass "
         "triton.tools.experimental_descriptor.create_2d_tma_descriptor(...) as the argument")

# per launch (its address space): (global addresses, element type) -> base pointer data, origin
_BASES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class nv_tma_desc_type(_t.pointer_type):
    """The type of a TMA descriptor argument: a constant pointer to its bytes (Triton 3.2's
    `tl.nv_tma_desc_type`; programs test `"nv_tma_desc_type" in dir(tl)` for the API)."""

    def __init__(self, const=True, address_space=0):
        super().__init__(_t.uint8, address_space, const)

    def __repr__(self):
        return "nv_tma_desc_type"


def validate_descriptor_block(shape, dtype):
    """Triton 3.3's rule for experimental descriptor boxes (the TMA box must cover the
    shared-memory swizzle tile): 2-D blocks of at least 8 rows and 32 bytes per row."""
    if len(shape) != 2:
        return
    if shape[0] < 8:
        raise CompilationError(f"tensor descriptor block shape must have at least 8 rows, but "
                               f"got {shape[0]}")
    min_cols = 32 // dtype.primitive_bitwidth * 8
    if shape[1] < min_cols:
        raise CompilationError(f"{dtype} tensor descriptor block shape must have at least "
                               f"{min_cols} columns, but got {shape[1]}")


class experimental_tensor_descriptor(tensor_descriptor):
    """Triton 3.3's `_experimental_tensor_descriptor`: a tensor descriptor whose loads and
    stores check `validate_descriptor_block` first."""

    def load(self, offsets):
        validate_descriptor_block(self.block_shape, self.dtype)
        return super().load(offsets)

    def store(self, offsets, value):
        validate_descriptor_block(self.block_shape, self.dtype)
        return super().store(offsets, value)


def _experimental_make_tensor_descriptor(base, shape, strides, block_shape):
    """`tl._experimental_make_tensor_descriptor` (Triton 3.3): `tl.make_tensor_descriptor`
    with 2 to 5 dimensions and zero padding."""
    n = len(list(_unwrap(shape)))
    if not 2 <= n <= 5:
        raise CompilationError(f"Expected 2 <= ndim <= 5 but got {n} dimensions "
                               f"(_experimental_make_tensor_descriptor; tl.make_tensor_descriptor "
                               f"also takes 1-D tensors)")
    d = make_tensor_descriptor(base, shape, strides, block_shape)
    return experimental_tensor_descriptor(d.base, d.shape, d.strides, d.block_shape, d.padding)


def _dtype(dtype, op):
    dtype = _unwrap(dtype)
    if not isinstance(dtype, _t.dtype) or dtype.is_ptr():
        raise CompilationError(f"{op}: dtype must be an element type such as tl.float16, got "
                               f"{dtype!r}")
    return dtype


def _fault(message, row):
    err = GPUFaultError(message)
    err.failing_row = row
    return err


def _read_fields(ptr, op):
    """The descriptor's int64 fields, (L, 16): one row per program, or one for all."""
    lanes = ptr.data.shape[0]
    addrs = ptr.data.astype(np.int64).reshape(lanes, 1) + np.arange(_SIZE, dtype=np.int64)
    try:
        groups = current().memory.resolve(tensor(addrs, ptr.dtype, [_SIZE], ptr.origin), None,
                                          op)
    except OutOfBoundsError as e:
        buf = getattr(e, "buffer", None)
        where = (f"runs past the end of `{buf.name}` ({buf.description})" if buf is not None
                 else "is outside every buffer of the launch")
        err = OutOfBoundsError(
            f"{op}: a TMA descriptor is {_SIZE} bytes, and the one at desc_ptr {where}. "
            f"Allocate the descriptor as torch.empty({_SIZE}, dtype=torch.int8) and {_FILL}")
        err.failing_row = getattr(e, "failing_row", None)
        raise err from None
    raw = np.empty((lanes, _SIZE), dtype=np.uint8)
    for buf, mask, offsets in groups:
        values = buf.flat[offsets].view(np.uint8)
        if mask is None:
            raw[...] = values.reshape(lanes, _SIZE)
        else:
            raw[mask] = values
    if lanes > 1 and (raw == raw[0]).all():
        raw = raw[:1]
    return raw.view(np.int64)


def _first(bad):
    return int(np.argmax(bad))


def _check(fields, block_shape, dtype, op):
    bad = fields[:, 0] != host.MAGIC
    if bad.any():
        row = _first(bad)
        raise _fault(f"{op}: the {_SIZE} bytes at desc_ptr are not a TMA descriptor (they "
                     f"start with 0x{int(fields[row, 0]) & (1 << 64) - 1:016x}, a descriptor "
                     f"starts with minitriton's magic 0x{host.MAGIC:016x}); {_FILL}. On a GPU, TMA "
                     f"with such bytes faults or reads garbage", row)
    rank = len(block_shape)
    bad = fields[:, host.RANK] != rank
    if bad.any():
        row = _first(bad)
        raise _fault(f"{op}: the descriptor is {int(fields[row, host.RANK])}-D but the block "
                     f"{block_shape} is {rank}-D; fill the descriptor with "
                     f"fill_{rank}d_tma_descriptor, or pass as many offsets and block "
                     f"dimensions as it has", row)
    size = dtype.primitive_bitwidth // 8
    bad = fields[:, host.ELEMENT_SIZE] != size
    if bad.any():
        row = _first(bad)
        raise _fault(f"{op}: the descriptor was filled for {int(fields[row, host.ELEMENT_SIZE])}"
                     f"-byte elements, but the kernel moves {dtype} ({size} bytes); pass the "
                     f"tensor's element_size() when filling it, or the matching dtype here", row)
    box = fields[:, host.BLOCK:host.BLOCK + rank]
    bad = (box != np.asarray(block_shape, dtype=np.int64)).any(axis=1)
    if bad.any():
        row = _first(bad)
        raise _fault(f"{op}: the descriptor's box is {box[row].tolist()} but the kernel moves a "
                     f"block of {block_shape}; the TMA unit moves the descriptor's box, so the "
                     f"kernel would get the wrong data. Fill the descriptor with the block "
                     f"dimensions the kernel uses (with an autotuner: in the grid function, "
                     f"from META)", row)


def _experimental_reinterpret_tensor_descriptor(desc_ptr, block_shape, dtype):
    """The descriptor that `desc_ptr` points to, as a tensor descriptor moving blocks of
    `block_shape` elements of `dtype`."""
    op = "_experimental_reinterpret_tensor_descriptor"
    block_shape = validate_block_shape(list(_unwrap(block_shape)))
    return _from_memory(desc_ptr, block_shape, _dtype(dtype, op), op)


def _from_memory(desc_ptr, block_shape, dtype, op):
    validate_descriptor_block(block_shape, dtype)  # what Triton checks compiling comes first
    ptr = _unwrap(desc_ptr)
    if not is_tensor(ptr) or not ptr.dtype.is_ptr():
        what = f"a {ptr.dtype} value" if is_tensor(ptr) else f"{type(ptr).__name__} {ptr!r}"
        raise CompilationError(
            f"{op}: desc_ptr must be a pointer to a {_SIZE}-byte TMA descriptor (a "
            f"TmaDescKernelParam argument, or an int8/uint8 tensor filled by "
            f"fill_1d/2d_tma_descriptor) or a tensor descriptor, got {what}")
    if ptr.shape:
        raise CompilationError(f"{op}: desc_ptr must be a scalar pointer, got a block of "
                               f"pointers of shape {ptr.shape}")
    if ptr.dtype.element_ty not in (_t.int8, _t.uint8):
        raise CompilationError(
            f"{op}: desc_ptr points to {ptr.dtype.element_ty}, but a TMA descriptor is "
            f"{_SIZE} bytes: pass it as an int8/uint8 tensor (torch.empty({_SIZE}, "
            f"dtype=torch.int8), filled by fill_2d_tma_descriptor) or a TmaDescKernelParam, "
            f"not the data tensor itself")
    fields = _read_fields(ptr, op)
    _check(fields, block_shape, dtype, op)
    rank = len(block_shape)
    data, origin = _base(current().memory, fields[:, host.ADDRESS], dtype)
    base = tensor(data, _t.pointer_type(dtype), [], origin)
    shape = [tensor(fields[:, host.SHAPE + i].copy(), _t.int64, []) for i in range(rank)]
    strides = [tensor(fields[:, host.STRIDES + i].copy(), _t.int64, []) for i in range(rank)]
    return experimental_tensor_descriptor(base, shape, strides, block_shape, "zero")


def _base(memory, addresses, dtype):
    """`memory.pointers_from_integers(addresses, dtype)`, remembered for the launch: a kernel
    loads through the same few descriptors in its loops."""
    known = _BASES.setdefault(memory, {})
    key = (addresses.tobytes(), dtype.name)
    if key not in known:
        data, origin = memory.pointers_from_integers(addresses, dtype)
        unknown = memory.owner(data) < 0
        if unknown.any():
            row = _first(unknown)
            err = OutOfBoundsError(
                f"the TMA descriptor's global address 0x{int(addresses[row]):x} is in no memory "
                f"minitriton knows: fill the descriptor with the data_ptr() of a live torch "
                f"tensor (kept alive while the descriptor is used), the address of a launch "
                f"argument, or of a NumPy array given to minitriton.register_memory")
            err.failing_row = row
            raise err
        known[key] = data, origin
    return known[key]


def _experimental_descriptor_load(desc_pointer, offsets, shape, dtype):
    """`tl._experimental_descriptor_load(desc_ptr, offsets, shape, dtype)`: the box of `shape`
    at `offsets` (zeros outside the tensor)."""
    op = "_experimental_descriptor_load"
    shape = validate_block_shape(list(_unwrap(shape)))
    dtype = _dtype(dtype, op)
    desc = _unwrap(desc_pointer)
    if isinstance(desc, tensor_descriptor):  # made in the kernel, or a host TensorDescriptor
        if list(desc.block_shape) != shape:
            raise CompilationError(f"{op}: the descriptor moves blocks of {desc.block_shape}, "
                                   f"not {shape}")
        if desc.dtype.primitive_bitwidth != dtype.primitive_bitwidth:
            raise CompilationError(f"{op}: the descriptor holds {desc.dtype}, which cannot be "
                                   f"read as {dtype}")
        value = desc.load(offsets)
        return value if value.dtype == dtype else value.to(dtype, bitcast=True)
    return _from_memory(desc, shape, dtype, op).load(offsets)


def _experimental_descriptor_store(desc_pointer, value, offsets):
    """`tl._experimental_descriptor_store(desc_ptr, value, offsets)`: `value` into the box at
    `offsets` (what falls outside the tensor is not written)."""
    op = "_experimental_descriptor_store"
    value = to_tensor(_unwrap(value))
    desc = _unwrap(desc_pointer)
    if not isinstance(desc, tensor_descriptor):
        desc = _from_memory(desc, validate_block_shape(value.shape), value.dtype, op)
    desc.store(offsets, value)


def descriptor_argument(param, name, memory):
    """What a TmaDescKernelParam argument (any object with `tma_desc_cpu_ptr()`) becomes in
    the kernel: an `nv_tma_desc_type` pointer to its bytes in host memory. Its `desc`, when it
    is the array holding them, becomes a buffer of the launch named after the parameter."""
    try:
        address = int(param.tma_desc_cpu_ptr())
    except (TypeError, ValueError) as e:
        raise LaunchError(f"argument `{name}`: tma_desc_cpu_ptr() must return the descriptor's "
                          f"host address as an int ({e})") from None
    desc = getattr(param, "desc", None)
    if isinstance(desc, np.ndarray) or hasattr(desc, "data_ptr"):
        buf = memory.add(desc, name)
        if buf.dtype.itemsize == 1 and buf.address <= address < buf.address + buf.nbytes:
            return tensor(np.array([buf.base + address - buf.address], dtype=np.int64),
                          nv_tma_desc_type(), [], origin=buf.index)
    data, origin = memory.pointers_from_integers(np.array([address], dtype=np.int64), _t.uint8)
    return tensor(data, nv_tma_desc_type(), [], origin=origin)


__all__ = ["nv_tma_desc_type", "_experimental_descriptor_load", "_experimental_descriptor_store",
           "_experimental_make_tensor_descriptor", "_experimental_reinterpret_tensor_descriptor"]
