"""`minitriton.language`: the `triton.language` API, executed on NumPy.

`import minitriton.language as tl` gives the names kernels use: `tl.program_id`, `tl.arange`,
`tl.load`, `tl.store`, `tl.dot`, `tl.sum`, `tl.exp`, `tl.float32`, `tl.constexpr`...
"""
from __future__ import annotations

import builtins
import enum

from . import math_ops as math  # tl.math.exp and friends
from .arith import maximum, minimum, where
from .core import TRITON_MAX_TENSOR_NUMEL, broadcast_to as _broadcast_to, cast, tensor
from .creation import arange, full, full_like, num_programs, program_id, zeros, zeros_like
from .debug import (assume, debug_barrier, device_assert, device_print, max_constancy,
                    max_contiguous, multiple_of, static_assert, static_print)
from .dot import dot
from .dtypes import (bfloat16, block_type, constexpr, dtype, float8e4nv, float8e5, float16,
                     float32, float64, int1, int8, int16, int32, int64, pointer_type, uint8,
                     uint16, uint32, uint64)
from .math_ops import (abs, cdiv, ceil, clamp, cos, div_rn, erf, exp, exp2, fdiv, floor, fma,
                       log, log2, rsqrt, sigmoid, sin, softmax, sqrt, sqrt_rn, umulhi)
from .memory_ops import (advance, atomic_add, atomic_and, atomic_cas, atomic_max, atomic_min,
                         atomic_or, atomic_xchg, atomic_xor, load, load_tensor_descriptor,
                         make_block_ptr, make_tensor_descriptor, store, store_tensor_descriptor,
                         tensor_descriptor)
from .reduce import argmax, argmin, cumprod, cumsum, max, min, reduce, sum, xor_sum
from .shape import (broadcast, broadcast_to, expand_dims, join, permute, reshape, split, trans,
                    view)

float8e4m3fn = float8e4nv
float8e5m2 = float8e5


class PropagateNan(enum.Enum):
    NONE = "none"
    ALL = "all"


class range:  # noqa: A001 - Triton's name
    """`tl.range`: a runtime loop; pipelining options are accepted and ignored."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False,
                 disable_licm=False):
        from ..runtime.jit import kernel_range
        self._range = kernel_range(*[a for a in (arg1, arg2, step) if a is not None])

    def __iter__(self):
        return iter(self._range)


class static_range:
    """`tl.static_range`: a loop unrolled at compile time; its bounds must be constexprs."""

    def __init__(self, arg1, arg2=None, step=None):
        from .core import is_tensor
        from ..errors import CompilationError
        args = [a for a in (arg1, arg2, step) if a is not None]
        for a in args:
            if is_tensor(a):
                raise CompilationError("static_range bounds must be constexprs, got a runtime "
                                       "tensor; use tl.range or range for runtime bounds")
        self._range = builtins.range(*[builtins.int(a) for a in args])

    def __iter__(self):
        return iter(self._range)


def _methods():
    members = {
        "sum": sum, "max": max, "min": min, "argmax": argmax, "argmin": argmin,
        "cumsum": cumsum, "cumprod": cumprod, "xor_sum": xor_sum, "reduce": reduce,
        "exp": exp, "exp2": exp2, "log": log, "log2": log2, "sqrt": sqrt, "rsqrt": rsqrt,
        "abs": abs, "sigmoid": sigmoid, "softmax": softmax, "erf": erf, "cos": cos, "sin": sin,
        "floor": floor, "ceil": ceil, "reshape": reshape, "view": view, "trans": trans,
        "permute": permute, "expand_dims": expand_dims, "broadcast_to": broadcast_to,
        "split": split, "join": join,
    }
    for name, fn in members.items():
        setattr(tensor, name, fn)


_methods()
