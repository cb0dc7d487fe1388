"""`gluon.language.nvidia.blackwell`: what a Blackwell kernel imports, so that a program with
Hopper and Blackwell kernels in it (Triton's Gluon tutorials 07 and 08) runs its Hopper ones.

Tensor memory and the tcgen05 MMAs are not in minitriton yet: `TensorMemoryLayout` is built and
checked as Triton builds it, and every operation on tensor memory is the "not in minitriton"
error, raised where a kernel uses it (docs/limitations.md, "Gluon"). The TMA copies, mbarriers,
fences and cp.async Blackwell shares with Hopper and Ampere are theirs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ......errors import CompilationError
from ......types import _unwrap
from ..ampere import async_copy
from ..hopper import fence_async_shared, mbarrier, tma

__all__ = ["allocate_tensor_memory", "async_copy", "fence_async_shared", "get_tmem_reg_layout",
           "mbarrier", "tensor_memory_descriptor", "TensorMemoryLayout", "tma", "tcgen05_mma",
           "tcgen05_commit", "tcgen05_copy"]


@dataclass(frozen=True, eq=True)
class TensorMemoryLayout:
    """Tensor memory's layout: `block` (rows, columns) per CTA, `col_stride` 32-bit columns
    between adjacent columns (a power of two), CTA split, two-CTA mode."""
    block: Tuple[int, int]
    col_stride: int
    cta_split_num: Optional[Tuple[int, int]] = None
    two_ctas: bool = False

    def __post_init__(self):
        for name in ("block", "col_stride", "cta_split_num", "two_ctas"):
            object.__setattr__(self, name, _unwrap(getattr(self, name)))
        if len(self.block) != 2:
            raise AssertionError(f"TensorMemoryLayout: block must be (rows, columns), got "
                                 f"{self.block}")
        if self.cta_split_num is not None and len(self.cta_split_num) != 2:
            raise AssertionError(f"TensorMemoryLayout: cta_split_num must have 2 entries, got "
                                 f"{self.cta_split_num}")
        if self.col_stride < 1 or self.col_stride & (self.col_stride - 1):
            raise AssertionError("tensor memory col_stride must be a power of two")

    def mangle(self):
        cta = (f"CS{self.cta_split_num[0]}x{self.cta_split_num[1]}"
               if self.cta_split_num else "")
        return (f"TL{self.block[0]}x{self.block[1]}C{self.col_stride}{cta}"
                f"{'2CT' if self.two_ctas else ''}TL")


class tensor_memory_descriptor:
    """Tensor memory (Blackwell's accumulator store): not in minitriton yet."""

    def __init__(self, *args, **kwargs):
        raise _missing("tensor_memory_descriptor")


def _missing(what):
    return CompilationError(
        f"gluon.language.nvidia.blackwell.{what}: Blackwell's tensor memory and tcgen05 MMAs "
        f"are not in minitriton yet (docs/limitations.md, \"Gluon\"); minitriton runs Hopper's "
        f"Gluon (warpgroup_mma). This kernel needs a Blackwell GPU")


def allocate_tensor_memory(element_ty, shape, layout, value=None):
    raise _missing("allocate_tensor_memory")


def get_tmem_reg_layout(*args, **kwargs):
    raise _missing("get_tmem_reg_layout")


def tcgen05_mma(a, b, acc, *, use_acc=True, pred=True, mbarriers=None, mbarrier_preds=None):
    raise _missing("tcgen05_mma")


def tcgen05_commit(barrier):
    raise _missing("tcgen05_commit")


def tcgen05_copy(src, dst):
    raise _missing("tcgen05_copy")
