"""`gluon.nvidia.hopper.TensorDescriptor`: a host TMA descriptor with its shared layout, as
Gluon kernels take it (the box's checks are `triton.tools.tensor_descriptor`'s)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List

from ....tools import tensor_descriptor as _tools
from ..language._layouts import NVMMASharedLayout

__all__ = ["TensorDescriptor"]


@dataclass
class TensorDescriptor:
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    layout: NVMMASharedLayout
    padding: str = "zero"

    def __post_init__(self):
        self.round_f32_to_tf32 = False
        _tools.TensorDescriptor.__post_init__(self)
        if not isinstance(self.layout, NVMMASharedLayout):
            raise ValueError(f"TensorDescriptor: the layout must be an NVMMASharedLayout, got "
                             f"{self.layout!r}")

    @staticmethod
    def from_tensor(tensor, block_shape, layout, padding="zero"):
        return TensorDescriptor(tensor, list(tensor.shape), _tools._strides(tensor),
                                list(block_shape), layout, padding)
