"""`triton.set_allocator(fn)`: the allocator for memory that kernels ask for at run time.

On the GPU, Triton calls `fn(size, alignment, stream)` for the global scratch of kernels that
build tensor descriptors inside the kernel (`tl.make_tensor_descriptor`) or need profiling
scratch. minitriton's in-kernel descriptors need no scratch, so the allocator is only kept (as
Triton keeps it, per context) for programs that set it and read it back.
"""
from __future__ import annotations

import contextvars

_ALLOCATOR: contextvars.ContextVar = contextvars.ContextVar("minitriton_allocator", default=None)


def set_allocator(allocator):
    """Keep `allocator(size: int, alignment: int, stream) -> buffer` for this context."""
    if allocator is not None and not callable(allocator):
        raise TypeError(f"set_allocator expects a callable (size, alignment, stream) -> buffer, "
                        f"got {type(allocator).__name__}")
    _ALLOCATOR.set(allocator)


def get_allocator():
    """The allocator given to `set_allocator`, or None."""
    return _ALLOCATOR.get()


class NullAllocator:
    """As `triton.runtime._allocation.NullAllocator`, the allocator before any is set: one that
    refuses, saying how to set one."""

    def __call__(self, size, alignment, stream):
        raise RuntimeError("Kernel requires a runtime memory allocation, but no allocator was "
                           "set. Use triton.set_allocator to specify an allocator.")
