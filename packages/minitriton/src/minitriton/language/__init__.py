"""`minitriton.language`: the `triton.language` API, executed on NumPy.

`import minitriton.language as tl` gives the names kernels use: `tl.program_id`, `tl.arange`,
`tl.load`, `tl.store`, `tl.dot`, `tl.sum`, `tl.exp`, `tl.float32`, `tl.constexpr`...
"""
from __future__ import annotations

import enum


from ..types import (bfloat16, block_type, const, constexpr, constexpr_type, dtype, float8e4b8,
                     float8e4b15, float8e4nv, float8e5, float8e5b16, float16, float32, float64,
                     int1, int8, int16, int32, int64, pointer_type, str_to_ty, uint8, uint16,
                     uint32, uint64)
from . import extra, math  # tl.extra.libdevice, tl.math.exp and friends
from .extra._extern import missing_name
from ..settings import triton_release
from .arith import add_fn as add, maximum, minimum, mul_fn as mul, sub_fn as sub, where
from .atomics import (atomic_add, atomic_and, atomic_cas, atomic_max, atomic_min, atomic_or,
                      atomic_xchg, atomic_xor)
from .atomics import atomic_poll as _atomic_poll
from .block_pointers import advance, make_block_ptr
from .control import range, static_range
from .core import TRITON_MAX_TENSOR_NUMEL, cast, tensor
from .creation import arange, full, full_like, num_programs, program_id, zeros, zeros_like
from .debug import (assume, debug_barrier, device_assert, device_print, max_constancy,
                    max_contiguous, multiple_of, static_assert, static_print)
from .descriptors import (load_tensor_descriptor, make_tensor_descriptor,
                          store_tensor_descriptor, tensor_descriptor)
from .experimental import *  # noqa: F403  tl._experimental_*, nv_tma_desc_type (Triton 3.2/3.3)
from .dot import dot
from .dot_scaled import dot_scaled
from .math_ops import (abs, cdiv, ceil, clamp, cos, div_rn, erf, exp, exp2, fdiv, floor, fma,
                       log, log2, rsqrt, sigmoid, sin, softmax, sqrt, sqrt_rn, swizzle2d,
                       umulhi)
from .pointers import load, store
from .random import (pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint,
                     randint4x, randn, randn4x, uint_to_uniform_float)
from .reduce import (argmax, argmin, cumprod, cumsum, max, min, reduce, reduce_or, sum,
                     xor_sum)
from .scan import (associative_scan, flip, gather, histogram, interleave, map_elementwise, sort,
                   topk)
from .shape import (broadcast, broadcast_to, cat, expand_dims, item, join, permute, ravel,
                    reshape, split, trans, view)
from .shape import squeeze as _squeeze, unsqueeze as _unsqueeze

float8e4m3fn = float8e4nv
float8e5m2 = float8e5
pi32_t = pointer_type(int32)


class PropagateNan(enum.Enum):
    NONE = "none"
    ALL = "all"


# names that Triton added after 3.6: there when the emulated release has them
# (Settings.triton_version, --triton-version), missing as on a GPU with Triton 3.6 otherwise
_SINCE = {"squeeze": ((3, 8), _squeeze), "unsqueeze": ((3, 8), _unsqueeze),
          "atomic_poll": ((3, 8), _atomic_poll)}


def __getattr__(name):
    since = _SINCE.get(name)
    if since is not None and triton_release() >= since[0]:
        return since[1]
    err = missing_name("triton.language", name)  # an ImportError inside `from ... import`
    if since is not None:
        version = ".".join(map(str, since[0]))
        err.args = (f"tl.{name} is new in Triton {version}; the emulated release is "
                    f"{'.'.join(map(str, triton_release()))} (python -m minitriton "
                    f"--triton-version {version}.0, or MINITRITON_TRITON_VERSION)",)
    raise err
