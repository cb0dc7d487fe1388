"""`TensorDescriptor`: a host-side TMA descriptor argument, as `triton.tools.tensor_descriptor`.

    desc = TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K])
    kernel[grid](desc, ...)        # in the kernel: desc.load([m, k]), desc.store([m, n], tile)

The checks are the GPU's (a 16-byte aligned base, 16-byte aligned strides, a contiguous last
dimension, power-of-two block dimensions of at most 256 elements), made when the descriptor is
built, with an error that says which rule failed. Triton's own TensorDescriptor objects are
accepted by minitriton kernels too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List


def _data_ptr(t):
    return t.data_ptr() if hasattr(t, "data_ptr") else t.__array_interface__["data"][0]


def _strides(t):
    if hasattr(t, "stride") and callable(t.stride):
        return list(t.stride())
    return [s // t.itemsize for s in t.strides]  # NumPy: bytes to elements


@dataclass
class TensorDescriptor:
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"
    round_f32_to_tf32: bool = field(default=False)

    def __post_init__(self):
        self.shape, self.strides = [int(s) for s in self.shape], [int(s) for s in self.strides]
        self.block_shape = [int(b) for b in self.block_shape]
        rank = len(self.shape)
        elem = int(self.base.dtype.itemsize)

        def bad(rule):
            raise ValueError(f"TensorDescriptor(shape={self.shape}, strides={self.strides}, "
                             f"block_shape={self.block_shape}): {rule}")
        if not 1 <= rank <= 5:
            bad("the rank must be 1 to 5")
        if len(self.strides) != rank or len(self.block_shape) != rank:
            bad("shape, strides and block_shape must have the same rank")
        if self.strides[-1] != 1:
            bad("Last dimension must be contiguous (stride 1); pass a transposed descriptor "
                "or a contiguous copy")
        if _data_ptr(self.base) % 16:
            bad("base must be 16-byte aligned (TMA); slice so the first element is aligned or "
                "copy the tensor")
        if any(s * elem % 16 for s in self.strides[:-1]):
            bad(f"strides must be 16-byte aligned (TMA): with {elem}-byte elements every stride "
                f"but the last must be a multiple of {16 // elem if elem < 16 else 1}")
        if any(d <= 0 for d in self.shape):
            bad("shape must be positive")
        if any(b <= 0 or b & (b - 1) or b > 256 for b in self.block_shape):
            bad("block dimensions must be powers of two of at most 256 (TMA box)")
        if self.padding not in ("zero", "nan"):
            bad(f"Illegal value for padding: {self.padding!r} (zero or nan)")

    @staticmethod
    def from_tensor(tensor, block_shape, padding="zero", round_f32_to_tf32=False):
        return TensorDescriptor(tensor, list(tensor.shape), _strides(tensor), list(block_shape),
                                padding, round_f32_to_tf32)
