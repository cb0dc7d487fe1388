"""`tma`: asynchronous copies of a tensor descriptor's box between global and shared memory.

A copy lands at once here; the barrier it names is told its bytes, and the shared memory it
fills may not be read (or written) until a wait on that barrier has returned; a store reads its
shared memory until `store_wait` retires it, so nothing may write there before
(language/_barriers.py). A box
partly outside the tensor is filled with zeros (or NaN) on a load and clipped on a store, as
the hardware does: minitriton's tensor descriptors (language/descriptors.py) move the data.
"""
from __future__ import annotations

from ... import _barriers
from ......errors import CompilationError
from ......language.core import tensor
from ......language.descriptors import make_tensor_descriptor as _make_tensor_descriptor
from ......language.descriptors import tensor_descriptor  # noqa: F401 - Gluon's name
from ......types import _unwrap

__all__ = ["async_copy_global_to_shared", "async_copy_shared_to_global",
           "async_reduce_shared_to_global", "store_wait", "make_tensor_descriptor",
           "tensor_descriptor"]


def _box(tensor_desc, smem, op):
    if list(smem.shape) != list(tensor_desc.block_shape) or smem.dtype != tensor_desc.dtype:
        raise CompilationError(
            f"tma.{op}: the shared memory ({smem.shape} of {smem.dtype}) must match the "
            f"descriptor's block ({list(tensor_desc.block_shape)} of {tensor_desc.dtype})")
    layout = getattr(tensor_desc, "layout", None)
    if layout is not None and smem.layout != layout:
        raise CompilationError(f"tma.{op}: the shared memory's layout {smem.layout} is not the "
                               f"descriptor's {layout}; allocate it with desc.layout")


def async_copy_global_to_shared(tensor_desc, coord, barrier, result, pred=True):
    """The box at `coord` into `result`; `barrier` receives its bytes."""
    if not _barriers.predicate(pred):
        return
    _box(tensor_desc, result, "async_copy_global_to_shared")
    _barriers.check_unread(result, "tma.async_copy_global_to_shared")
    block = tensor_desc.load(coord)
    result.write(block.data)
    _barriers.filling(result, barrier)
    _barriers.deliver(barrier, tensor_desc.block_type.nbytes)


def async_copy_shared_to_global(tensor_desc, coord, src):
    """`src` into the box at `coord` (clipped at the tensor's edges)."""
    _box(tensor_desc, src, "async_copy_shared_to_global")
    tensor_desc.store(coord, tensor(src.read("tma.async_copy_shared_to_global"), src.dtype,
                                    src.shape))
    _barriers.in_flight("store", [src])  # it reads `src` until a store_wait retires it


_REDUCE_KINDS = ("add", "min", "max", "and", "or", "xor")


def async_reduce_shared_to_global(tensor_desc, coord, src, kind="add"):
    """The box at `coord` combined with `src` by `kind` in global memory (the TMA unit's bulk
    reduction, `cp.reduce.async.bulk.tensor`, done in L2 and atomic per element), clipped at
    the tensor's edges; it reads `src` until a `store_wait` retires it, as a store.

    Not a name of Triton 3.6's Gluon: its builder has the operation
    (`GluonOpBuilder.create_async_tma_reduce`, what later Gluon versions call through their
    `tma` module) but its Python module does not expose it, so a kernel for both binds its own
    builtin on real Triton (tritonlab: backend.GLUON.tma_reduce)."""
    kind = _unwrap(kind)
    if kind not in _REDUCE_KINDS:
        raise CompilationError(f"tma.async_reduce_shared_to_global: kind {kind!r} is not one of "
                               f"{', '.join(_REDUCE_KINDS)}")
    _box(tensor_desc, src, "async_reduce_shared_to_global")
    value = tensor(src.read("tma.async_reduce_shared_to_global"), src.dtype, src.shape)
    getattr(tensor_desc, f"atomic_{kind}")(coord, value)
    _barriers.in_flight("store", [src])


def store_wait(pendings):
    """Wait until at most `pendings` TMA stores are in flight (the oldest retire first)."""
    _barriers.retire("store", int(_unwrap(pendings)))


def make_tensor_descriptor(base, shape, strides, block_shape, layout, padding_option="zero"):
    desc = _make_tensor_descriptor(base, shape, strides, block_shape, padding_option)
    desc.layout = _unwrap(layout)
    return desc
