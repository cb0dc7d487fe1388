"""`triton.experimental.gluon.language` (`gl`): Triton 3.6's Gluon language on minitriton.

Gluon is Triton's lower-level language: the kernel chooses each block's layout, allocates shared
memory, and drives mbarriers, TMA copies and warpgroup MMAs itself. minitriton runs such a
kernel as it runs a `tl` kernel (the same jit, executors, bounds checks and observers): the
`tl` operations are minitriton's own, the layouts are carried and checked
(language/glayouts.py), shared memory and mbarriers are modelled per program (`_core`, `_barriers`)
and nvidia.hopper's copies and MMAs run in program order. What is not here yet raises the
"not in minitriton" error (docs/limitations.md, "Gluon").
"""
from __future__ import annotations

from ....language import (abs, add, associative_scan, assume, atomic_add, atomic_and,  # noqa: A004
                          atomic_cas, atomic_max, atomic_min, atomic_or, atomic_xchg, atomic_xor,
                          broadcast, cast, cdiv, ceil, cos, device_assert, device_print, div_rn,
                          erf, exp, exp2, expand_dims, fdiv, floor, fma, gather, join, log,
                          log2, max, max_constancy, max_contiguous, maximum, min, minimum, mul,
                          multiple_of, num_programs, permute, program_id, ravel, reduce,
                          reduce_or, reshape, rsqrt, sin, split, sqrt, sqrt_rn, static_assert,
                          static_print, static_range, sub, sum, umulhi, where, xor_sum)
from ....language import load as _tl_load, store as _tl_store
from ....language.core import is_tensor, tensor, to_tensor
from ....language.glayouts import joined_glayout
from ....language.extra._extern import missing_name
from ....types import (bfloat16, block_type, constexpr, distributed_type, dtype, float16,
                       float32, float64, float8e4b8, float8e4b15, float8e4nv, float8e5,
                       float8e5b16, int1, int8, int16, int32, int64, pointer_type, uint8, uint16,
                       uint32, uint64)
from . import nvidia
from ._core import (allocate_shared_memory, arange, convert_layout, full, full_like, num_ctas,
                    num_warps, set_auto_layout, shared_memory_descriptor,
                    shared_memory_descriptor_type, thread_barrier, zeros, zeros_like)
from ._partitions import warp_specialize
from ._layouts import (AutoLayout, BlockedLayout, CoalescedLayout, DistributedLayout,
                       DistributedLinearLayout, DotOperandLayout, NVMMADistributedLayout,
                       NVMMASharedLayout, PaddedSharedLayout, SharedLayout, SharedLinearLayout,
                       SliceLayout, SwizzledSharedLayout)


__all__ = ["AutoLayout", "BlockedLayout", "CoalescedLayout", "DistributedLayout",
           "DistributedLinearLayout", "DotOperandLayout", "NVMMADistributedLayout",
           "NVMMASharedLayout", "PaddedSharedLayout", "SharedLayout", "SharedLinearLayout",
           "SliceLayout", "SwizzledSharedLayout", "abs", "add", "allocate_shared_memory",
           "arange", "associative_scan", "assume", "atomic_add", "atomic_and", "atomic_cas",
           "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "bfloat16",
           "block_type",
           "broadcast", "cast", "cdiv", "ceil", "constexpr", "convert_layout", "cos",
           "device_assert", "device_print", "distributed_type", "div_rn", "dtype", "erf", "exp",
           "exp2", "expand_dims", "fdiv", "float16", "float32", "float64", "float8e4b15",
           "float8e4b8", "float8e4nv", "float8e5", "float8e5b16", "floor", "fma", "full",
           "full_like", "gather", "int1", "int16", "int32", "int64", "int8", "join", "load",
           "log", "log2", "max", "max_constancy", "max_contiguous", "maximum", "min", "minimum",
           "mul", "multiple_of", "num_ctas", "num_programs", "num_warps",
           "nvidia", "permute", "pointer_type", "program_id", "ravel", "reduce", "reduce_or",
           "reshape", "rsqrt", "set_auto_layout", "shared_memory_descriptor",
           "shared_memory_descriptor_type", "sin", "split", "sqrt", "sqrt_rn", "static_assert",
           "static_print", "static_range", "store", "sub", "sum", "tensor", "thread_barrier",
           "warp_specialize",
           "to_tensor", "uint16", "uint32", "uint64", "uint8", "umulhi", "where", "xor_sum",
           "zeros", "zeros_like"]


def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    """`tl.load`; the block keeps the layout of its pointers, as Gluon infers it (the mask's
    and `other`'s must agree with it)."""
    joined_glayout([x for x in (pointer, mask, other) if is_tensor(x)], None)
    out = _tl_load(pointer, mask, other, boundary_check, padding_option, cache_modifier,
                   eviction_policy, volatile)
    if isinstance(out, tensor) and out.shape and out.glayout is None:
        out.glayout = getattr(pointer, "glayout", None)
    return out


def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    """`tl.store`; the pointers', the value's and the mask's layouts must agree, as Gluon's
    broadcast requires."""
    joined_glayout([x for x in (pointer, value, mask) if is_tensor(x)], None)
    return _tl_store(pointer, value, mask, boundary_check, cache_modifier, eviction_policy)


def __getattr__(name):
    """Gluon names minitriton does not have yet: the "not in minitriton" error."""
    raise missing_name(__name__, name)
