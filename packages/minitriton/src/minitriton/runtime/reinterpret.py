"""`triton.reinterpret(t, tl.float8e4nv)`: a tensor's bytes seen as another Triton type.

As Triton's `TensorWrapper` (runtime/jit.py): it keeps the tensor (`base`) and the Triton dtype
(`dtype`), answers `data_ptr()`, `shape`, `stride()`, `element_size()` from the base and passes
to a kernel as a pointer to `dtype` (`*fp8e4nv`). The common use is fp8 and other types that
torch or NumPy lack or name differently: a uint8 tensor filled with e4m3 bytes, reinterpreted.
The base may be a torch tensor or, in minitriton, a NumPy array.
"""
from __future__ import annotations

import numpy as np

from .. import types as _t
from ..host import as_numpy


class TensorWrapper:
    """A tensor (`base`) whose elements a kernel reads as `dtype`, a Triton type."""

    def __init__(self, base, dtype):
        self.dtype = dtype
        self.base = base
        self.data = base.data
        self.device = getattr(base, "device", "cpu")
        self.shape = base.shape

    def data_ptr(self):
        if isinstance(self.base, np.ndarray):
            return self.base.__array_interface__["data"][0] if self.base.size else 0
        return self.base.data_ptr()

    def stride(self, *args):
        if isinstance(self.base, np.ndarray):  # torch's answer: in elements
            strides = tuple(s // self.base.itemsize for s in self.base.strides)
            return strides[args[0]] if args else strides
        return self.base.stride(*args)

    def element_size(self):
        if isinstance(self.base, np.ndarray):
            return self.base.itemsize
        return self.base.element_size()

    def numel(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"

    def cpu(self):
        return TensorWrapper(self.base if isinstance(self.base, np.ndarray) else self.base.cpu(),
                             self.dtype)

    def copy_(self, other):
        if isinstance(self.base, np.ndarray):
            np.copyto(self.base, other.base)
        else:
            self.base.copy_(other.base)

    def clone(self):
        return TensorWrapper(self.base.copy() if isinstance(self.base, np.ndarray)
                             else self.base.clone(), self.dtype)

    def to(self, device):
        if isinstance(self.base, np.ndarray):
            return self
        return TensorWrapper(self.base.to(device), self.dtype)

    def new_empty(self, sizes):
        if isinstance(self.base, np.ndarray):
            return TensorWrapper(np.empty(sizes, self.base.dtype), self.dtype)
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def view_as_numpy(self):
        """The base's memory as a NumPy array of `dtype` (no copy): what a kernel sees."""
        arr = as_numpy(self.base, "tensor") if not isinstance(self.base, np.ndarray) \
            else self.base
        if self.dtype.np is None:
            raise TypeError(f"minitriton has no NumPy type for {self.dtype}")
        return arr.view(self.dtype.np)


def reinterpret(tensor, dtype):
    """Triton's `reinterpret`: `tensor`'s bytes as `dtype`; reinterpreting a wrapper back to
    its base's own type gives the base."""
    if isinstance(tensor, TensorWrapper):
        if dtype == tensor.base.dtype:
            return tensor.base
        return TensorWrapper(tensor.base, dtype)
    if hasattr(tensor, "data_ptr") or isinstance(tensor, np.ndarray):
        if not isinstance(dtype, _t.dtype):
            raise TypeError(f"reinterpret: the type must be a Triton type (tl.float8e4nv...), "
                            f"got {dtype!r}")
        return TensorWrapper(tensor, dtype)
    raise TypeError(f"Cannot reinterpret a {type(tensor)}.")
