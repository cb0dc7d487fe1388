"""Triton 3.2/3.3's experimental host TMA descriptors (`triton.tools.experimental_descriptor`).

    desc = create_2d_tma_descriptor(x.data_ptr(), M, N, BLOCK_M, BLOCK_N, x.element_size())
    kernel[grid](desc, ...)   # in the kernel: tl._experimental_descriptor_load(desc, [m, n],
                              #                    [BLOCK_M, BLOCK_N], tl.float16)

Triton 3.2 and 3.3 filled a 128-byte CUDA tensor map (`CUtensorMap`) in host memory, through
`triton.runtime.driver.active.utils.fill_1d_tma_descriptor` / `fill_2d_tma_descriptor` (under
`python -m minitriton`: standin/target.py, with this module's `encode` and `write`), and passed it
to the kernel, which reads it with `tl._experimental_descriptor_load/store`
(language/experimental.py). Triton 3.4 replaced all of it with `TensorDescriptor`
(tools/tensor_descriptor.py) and `tl.make_tensor_descriptor`; Triton 3.6, the version on our GPU
machine, no longer has this API, so no test compares it with a GPU: what is checked is the
hardware's rules (the CUDA driver's for cuTensorMapEncodeTiled, Triton's fill functions') and
NumPy references.

minitriton's descriptor is not a CUtensorMap: the 128 bytes hold 16 little-endian int64 fields

    field  byte  meaning
      0      0   MAGIC (the bytes b"mtTMAv1\\0"): this is a minitriton TMA descriptor
      1      8   the global address: the tensor's first byte (an integer, as `x.data_ptr()`)
      2     16   rank: 1 or 2
      3     24   element size in bytes: 1, 2 or 4
      4     32   shape[0]   outermost first, as the kernel's offsets: (dim1, dim0) in 2-D,
      5     40   shape[1]     (dim,) in 1-D (field 5 is 0)
      6     48   block[0]   the box every load and store moves, in the same order
      7     56   block[1]
      8     64   stride[0]  in elements: (dim0, 1) in 2-D, (1,) in 1-D (the tensor is dense,
      9     72   stride[1]    as Triton's fill functions assume)
    10-15   80   0 (reserved)

The global tensor is found at run time from its address (memory.py,
`AddressSpace.pointers_from_integers`): a live torch tensor, a launch argument, or a NumPy
array given to `minitriton.register_memory`. This module imports nothing of minitriton.
"""
from __future__ import annotations

import numbers

import numpy as np

TMA_DESC_SIZE = 128
MAGIC = int.from_bytes(b"mtTMAv1\0", "little")
FIELDS = 16  # int64 fields of a descriptor
ADDRESS, RANK, ELEMENT_SIZE, SHAPE, BLOCK, STRIDES = 1, 2, 3, 4, 6, 8
MAX_RANK = 2
DESC_ALIGNMENT = 64  # a CUtensorMap must be 64-byte aligned
GLOBAL_ALIGNMENT = 16  # cuTensorMapEncodeTiled: the global address, and every stride in bytes


def _int(value, what, call):
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        if hasattr(value, "data_ptr") or isinstance(value, np.ndarray):
            raise TypeError(f"{call}: {what} must be an integer address, got a "
                            f"{type(value).__name__}; pass `x.data_ptr()` (torch) or "
                            f"`x.ctypes.data` (NumPy)")
        raise TypeError(f"{call}: {what} must be an int, got {type(value).__name__} {value!r}")
    return int(value)


def encode(ptr, dims, block_dims, element_size):
    """The 16 int64 fields of a descriptor of the dense tensor at byte address `ptr` with
    `dims` (outermost first), moving boxes of `block_dims`, elements of `element_size` bytes.
    Checks what Triton's fill functions and cuTensorMapEncodeTiled check, with a ValueError
    that names the rule."""
    rank = len(dims)
    call = f"fill_{rank}d_tma_descriptor"
    ptr = _int(ptr, "ptr", call)
    dims = [_int(d, "dim", call) for d in dims]
    block_dims = [_int(b, "block_dim", call) for b in block_dims]
    element_size = _int(element_size, "element_size", call)

    def bad(rule):
        raise ValueError(f"{call}(ptr=0x{ptr:x}, dims={dims}, block_dims={block_dims}, "
                         f"element_size={element_size}): {rule}")
    if not 1 <= rank <= MAX_RANK or len(block_dims) != rank:
        bad("the experimental TMA descriptors have 1 or 2 dimensions, as many as block "
            "dimensions; use TensorDescriptor (triton.tools.tensor_descriptor) for more")
    if element_size not in (1, 2, 4):
        bad("elementSize must be 1, 2, or 4 (Triton's fill functions know no other)")
    if ptr % GLOBAL_ALIGNMENT:
        bad(f"the global address must be {GLOBAL_ALIGNMENT}-byte aligned (TMA; "
            f"cuTensorMapEncodeTiled fails with CUDA_ERROR_INVALID_VALUE); slice so the first "
            f"element is aligned, or copy the tensor")
    if any(not 1 <= d <= 1 << 32 for d in dims):
        bad("every dimension must be between 1 and 2**32")
    if any(not 1 <= b <= 256 for b in block_dims):
        bad("every block dimension must be between 1 and 256 (the TMA box)")
    inner = block_dims[-1] * element_size
    if inner < 32:
        bad(f"block size too small: the last block dimension holds {inner} bytes, Triton's "
            f"fill functions need at least 32 ({32 // element_size} elements)")
    if inner % 16:
        bad(f"the last block dimension holds {inner} bytes; the TMA box needs a multiple of 16")
    if rank == 2 and dims[-1] * element_size % GLOBAL_ALIGNMENT:
        bad(f"rows of {dims[-1]} elements are {dims[-1] * element_size} bytes apart; TMA needs "
            f"the row stride to be a multiple of {GLOBAL_ALIGNMENT} bytes (pad the rows)")
    fields = np.zeros(FIELDS, dtype=np.int64)
    fields[0], fields[ADDRESS], fields[RANK], fields[ELEMENT_SIZE] = MAGIC, ptr, rank, element_size
    strides = [int(np.prod(dims[i + 1:], dtype=np.int64)) for i in range(rank)]
    fields[SHAPE:SHAPE + rank] = dims
    fields[BLOCK:BLOCK + rank] = block_dims
    fields[STRIDES:STRIDES + rank] = strides
    return fields


def write(desc, fields):
    """Store `fields` into `desc`, a writable uint8 NumPy view of the descriptor's 128 bytes."""
    desc[:] = fields.view(np.uint8)


def _aligned_bytes(n, alignment):
    raw = np.zeros(n + alignment, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + n]


class TmaDescKernelParam:
    """A filled descriptor in host memory, passed to a kernel as an argument (the kernel gets
    a pointer to its 128 bytes). `desc` is a 64-byte aligned NumPy uint8 array (Triton's is a
    torch uint8 CPU tensor; minitriton needs no torch)."""
    TMA_DESC_SIZE = TMA_DESC_SIZE

    def __init__(self, ptr, dims, block_dims, element_size):
        self.desc = _aligned_bytes(TMA_DESC_SIZE, DESC_ALIGNMENT)
        write(self.desc, encode(ptr, list(dims), list(block_dims), element_size))

    def tma_desc_cpu_ptr(self):
        """The descriptor's host address (Triton: a CUtensorMap* in host memory)."""
        return self.desc.ctypes.data

    def __repr__(self):
        f = self.desc.view(np.int64)
        rank = int(f[RANK])
        dims, block = f[SHAPE:SHAPE + rank].tolist(), f[BLOCK:BLOCK + rank].tolist()
        return (f"TmaDescKernelParam(ptr=0x{int(f[ADDRESS]):x}, dims={dims}, "
                f"block_dims={block}, element_size={int(f[ELEMENT_SIZE])})")


def create_1d_tma_descriptor(ptr, dim, block_dim, element_size):
    return TmaDescKernelParam(ptr, [dim], [block_dim], element_size)


def create_2d_tma_descriptor(ptr, dim1, dim0, block_dim1, block_dim0, element_size):
    """A descriptor of the `dim1` x `dim0` row-major tensor at `ptr` (dim0 contiguous)."""
    return TmaDescKernelParam(ptr, [dim1, dim0], [block_dim1, block_dim0], element_size)


__all__ = ["TmaDescKernelParam", "create_1d_tma_descriptor", "create_2d_tma_descriptor"]
