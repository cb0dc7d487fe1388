"""Loops in kernels: Python's `range`, `tl.range` and `tl.static_range`; what names hold inside
@jit code (`assigned`) and `min`/`max` on tensors.

With runtime bounds that differ between the programs executed together but give every program
the same trip count (`range(pid * R, pid * R + R)`), the loop variable is a per-program tensor
and the programs stay together; different trip counts diverge (the lockstep executor then
splits the programs by trip count). The types Triton requires of branches and returns:
branches.py.
"""
from __future__ import annotations

import ast
import builtins

import numpy as np

from .. import types as _t
from ..context import Divergence
from ..errors import CompilationError
from ..types import constexpr
from . import arith
from .core import is_tensor, literal, tensor, to_tensor


def _iv_type(args):
    """The type of Triton's induction variable (code_generator's visit_For): the integer
    promotion of the bounds' and step's types, a Python int typed as a literal (int32, uint32
    from 2^31, int64...)."""
    types = [a.dtype if is_tensor(a) else _t.literal_type(int(a)) for a in args]
    ty = types[0]
    for other in types[1:]:
        ty = _t.integer_promote(ty, other)
    return ty


def kernel_range(*args):
    """`range` in a kernel (the `@jit` rewrite sends Python's `range` here). The loop variable
    is a scalar tensor of Triton's induction-variable type (`_iv_type`), as on the GPU
    (`i.to(tl.int64)` works)."""
    if not any(is_tensor(a) and a.data.shape[0] > 1 for a in args):
        ty = _iv_type(args)
        return (literal(i, ty) for i in builtins.range(*[int(a) for a in args]))
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    else:
        start, stop = args[0], args[1]
        step = args[2] if len(args) > 2 else 1
    arr = [np.asarray(a.data if is_tensor(a) else [a], dtype=np.int64) for a in (start, stop, step)]
    if not np.all(arr[2] == arr[2][0]):
        raise Divergence(arr[2])
    step_v = int(arr[2][0])
    if step_v == 0:
        raise ValueError("range() arg 3 must not be zero")
    trips = np.maximum(0, -((arr[0] - arr[1]) // step_v))  # ceil((stop - start) / step)
    trips = np.broadcast_to(trips, np.broadcast_shapes(arr[0].shape, arr[1].shape))
    if not np.all(trips == trips[0]):
        raise Divergence(trips)
    ty = _iv_type(args)
    base = np.broadcast_to(arr[0], trips.shape)
    return (tensor((base + i * step_v).astype(ty.np), ty, []) for i in builtins.range(int(trips[0])))


class range:  # noqa: A001 - Triton's name
    """`tl.range`: a runtime loop; pipelining options are accepted and ignored."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False,
                 disable_licm=False):
        self._range = kernel_range(*[a for a in (arg1, arg2, step) if a is not None])

    def __iter__(self):
        return iter(self._range)


class static_range:
    """`tl.static_range`: a loop unrolled at compile time; its bounds must be constexprs."""

    def __init__(self, arg1, arg2=None, step=None):
        args = [a for a in (arg1, arg2, step) if a is not None]
        for a in args:
            if is_tensor(a):
                raise CompilationError("static_range bounds must be constexprs, got a runtime "
                                       "tensor; use tl.range or range for runtime bounds")
        self._range = builtins.range(*[builtins.int(a) for a in args])

    def __iter__(self):
        return iter(self._range)


def is_static_range(call):
    """Whether a loop's iterable is `tl.static_range(...)` (unrolled at compile time)."""
    if not isinstance(call, ast.Call):
        return False
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr == "static_range") or \
        (isinstance(f, ast.Name) and f.id == "static_range")


# ----- what names hold inside @jit code

_SCALARS = (bool, int, float)


def assigned(value):
    """What a name bound by `x = value` holds inside @jit code: Triton's code generator
    (visit_Assign) makes a constexpr or a Python number a tensor (bool int1, int int32 or
    int64, float fp32), element by element in tuples; None, dtypes, tensors and other objects
    stay as they are. So `B2 = B * 2; tl.arange(0, B2)` fails as on the GPU ("arange's
    arguments must be of type tl.constexpr"), and `B2: tl.constexpr = B * 2` is the way."""
    if is_tensor(value):  # the common case: nothing to do
        return value
    raw = value.value if isinstance(value, constexpr) else value
    if type(raw) in _SCALARS or isinstance(raw, (np.bool_, np.integer, np.floating)):
        return to_tensor(raw.item() if isinstance(raw, np.generic) else raw)
    if type(raw) is tuple:
        return tuple(assigned(v) for v in raw)
    return value


def kernel_min_max(py_fn, tl_name, args, kwargs):
    """`min`/`max` in a kernel: on tensors `tl.minimum`/`tl.maximum`, as in Triton."""
    if len(args) > 1 and any(is_tensor(a) for a in args):
        out = args[0]
        for a in args[1:]:
            out = getattr(arith, tl_name)(out, a)
        return out
    return py_fn(*args, **kwargs)


def kernel_min(*args, **kwargs):
    return kernel_min_max(builtins.min, "minimum", args, kwargs)


def kernel_max(*args, **kwargs):
    return kernel_min_max(builtins.max, "maximum", args, kwargs)
