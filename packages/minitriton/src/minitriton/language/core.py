"""`tl.tensor`: a block of values held for every program of the launch at once.

`data` has shape `(L, *shape)`: the leading *program axis* holds one row per program executed
together, or a single row (L == 1) when the value is the same for all of them (constants,
`tl.arange`, kernel arguments). NumPy broadcasting across that axis does the rest.
Pointers are tensors of `pointer_type` whose data are int64 virtual byte addresses; `origin`
remembers which launch argument they were derived from, for error messages and bounds checks.
`layout` records which of the GPU's threads hold which elements, where Triton fixed it (a load,
a tensor-core dot), for the order of a reduction's additions ("the layout record" below).
`glayout` is the layout a Gluon kernel gave the block (`gl.arange(..., layout=)`, `gl.full`,
`gl.convert_layout`, a shared-memory load, an MMA's accumulator): its type's `layout`, carried
and checked as Gluon's compiler does ("Gluon layouts" below), None outside Gluon.

The class holds the type information and Python's protocols (truth value, indexing, `.to`);
the operators and methods (`x + y`, `x.sum()`, `x.T`) are the `tl` functions themselves,
attached where they are defined with `@tensor_member`, as Triton's `_tensor_member_fn` does.
"""
from __future__ import annotations

import functools
import math
import sys
import warnings

import numpy as np

from .. import types as _t
from ..context import Divergence, current
from ..errors import CompilationError
from ..settings import triton_release
from ..source import kernel_location
from ..types import _unwrap, constexpr, constexpr_type  # noqa: F401 - Triton's core has it
from . import marks
from .aggregate import _aggregate  # noqa: F401 - triton.language.core's name
from .glayouts import expanded_glayout, joined_glayout
from .marks import reshaping

TRITON_MAX_TENSOR_NUMEL = 1048576


class tensor:
    _is_mt_tensor = True
    __slots__ = ("data", "dtype", "shape", "origin", "pad", "fused", "chain", "layout", "const",
                 "glayout")
    __hash__ = object.__hash__

    def __init__(self, data, dtype, shape=None, origin=None):
        self.data = data
        self.dtype = dtype
        self.shape = list(data.shape[1:]) if shape is None else list(shape)
        self.origin = origin
        self.pad = None  # lanes holding masked-out padding (Settings.padding), else None
        self.fused = None  # (x, y) of a float product the GPU may fuse into a later add
        self.chain = None  # (x, y, step) of a tl.dot whose chain a later add may continue
        self.layout = None  # where the GPU's registers hold the block: `elementwise` below
        self.const = False  # a compile-time constant, which Triton's compiler folds: see below
        self.glayout = None  # a Gluon kernel's layout of the block: see "Gluon layouts"

    # ----- type information, as Triton exposes it
    @property
    def type(self):
        if not self.shape:
            return self.dtype
        if self.glayout is not None:
            return _t.distributed_type(self.dtype, self.shape, self.glayout)
        return _t.block_type(self.dtype, self.shape)

    @property
    def numel(self):
        return math.prod(map(int, self.shape))

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        kind = f"block {self.shape} of {self.dtype}" if self.shape else f"scalar {self.dtype}"
        return f"<minitriton tensor: {kind}>"

    # ----- Python control flow on tensors
    def _uniform_scalar(self, what, decide):
        """The value Python control flow needs; raises Divergence if programs disagree."""
        if self.shape and self.numel == 1 and what == "truth value":
            # Triton's visit_If unsplats a one-element block, with a warning
            warnings.warn("If conditional called with multidimensional Tensor instead of "
                          f"scalar; please use \"if (x).item()\" instead (at "
                          f"{kernel_location(3)})", UserWarning, stacklevel=3)
            return tensor(self.data.reshape(self.data.shape[0]), self.dtype, [])._uniform_scalar(
                what, decide)
        if self.shape:
            raise CompilationError(
                f"Boolean value of Tensor with more than one value is ambiguous ({what} of a "
                f"block of shape {self.shape}); reduce it first (tl.sum, tl.max) or use tl.where")
        values = self.data
        if values.shape[0] > 1:
            decisions = decide(values)
            if not np.all(decisions == decisions[0]):
                raise Divergence(decisions)
        return values[0]

    def __bool__(self):
        return bool(self._uniform_scalar("truth value", lambda v: v != 0))

    def __index__(self):
        if not (self.dtype.is_int() and not self.dtype.is_ptr()):
            raise CompilationError(f"a {self.dtype} value cannot be used as an integer index")
        return int(self._uniform_scalar("integer value", lambda v: v.astype(np.int64)))

    __int__ = __index__

    def __float__(self):
        return float(self._uniform_scalar("float value", lambda v: v.astype(np.float64)))

    def __iter__(self):
        raise CompilationError("a Triton tensor cannot be iterated over in Python; use "
                               "tl.static_range or index arithmetic")

    @reshaping
    def __getitem__(self, slices):
        """`x[:, None]`: `None` inserts a dimension of 1, `:` keeps one. Triton 3.6 lets `:`
        run past the rank (a scalar's `c[:, None]` is a block of shape [1]: each `None`
        inserts at its position in the index); 3.8 on raise "too many indices"."""
        if not isinstance(slices, tuple):
            slices = (slices,)
        slices = [_unwrap(s) for s in slices]
        for s in slices:
            if s is not None and not (isinstance(s, slice) and s == slice(None)):
                raise CompilationError(f"unsupported tensor index: {s!r} (only `:` and `None` "
                                       "are allowed, e.g. x[:, None])")
        kept = sum(s is not None for s in slices)
        if kept <= len(self.shape):
            new_shape, src = [], 0
            for s in slices:
                if s is None:
                    new_shape.append(1)
                else:
                    new_shape.append(self.shape[src])
                    src += 1
            new_shape += self.shape[src:]
        elif triton_release() >= (3, 8):
            raise CompilationError(f"too many indices for tensor of rank {len(self.shape)}")
        else:
            new_shape = list(self.shape)
            for dim, s in enumerate(slices):
                if s is None:
                    new_shape.insert(dim, 1)
        data = self.data.reshape((self.data.shape[0], *new_shape))
        out = tensor(data, self.dtype, new_shape, self.origin)
        if new_shape == self.shape:  # `x[:, :]`: the same block, in the same registers
            out.layout = self.layout
            out.glayout = self.glayout
        elif self.glayout is not None:
            out.glayout = expanded_glayout(self.glayout, [d for d, s in enumerate(slices)
                                                          if s is None])
        out.const = self.const  # the expand_dims of a splat constant is one
        return out

    def to(self, dtype, fp_downcast_rounding=None, bitcast=False):
        return cast(self, dtype, fp_downcast_rounding, bitcast)


_DATA = tensor.__dict__["data"]  # the slot, under deferred's property


class deferred(tensor):
    """A tensor whose data is computed when first read: `tl.dot(a, b)` without an accumulator,
    whose own sum is not needed when a later `acc + tl.dot(a, b)` continues its chain."""
    __slots__ = ("make",)

    def __init__(self, data, dtype, shape=None, origin=None, make=None):
        self.make = make
        tensor.__init__(self, data, dtype, shape, origin)

    @property
    def data(self):
        data = _DATA.__get__(self)
        if data is None and self.make is not None:
            data, self.make = self.make(), None
            _DATA.__set__(self, data)
        return data

    @data.setter
    def data(self, value):
        _DATA.__set__(self, value)


class lazy_pointer(deferred):
    """`ptr + offsets` with one address per program (or one for all) in `ptr`: the int64 sum
    over every lane is made only when something reads `data`. Loads and stores take the two
    parts instead (`AddressSpace.resolve`): bounds from their minima and maxima, a consecutive
    block from their structure, so an element-wise kernel's pointers cost no pass over the
    block. `base` (rows, 1, ..., 1) int64 and `offsets` (rows or 1, *block) signed integers,
    both of the pointer's rank; `full` the shape of the sum; `stats` what was learnt about
    `offsets` (shared by the pointers moved from this one by a scalar: `ptrs += BLOCK`)."""
    __slots__ = ("base", "offsets", "full", "stats")

    def __init__(self, data, dtype, shape=None, origin=None, base=None, offsets=None,
                 full=None, stats=None):
        self.base, self.offsets, self.full = base, offsets, full
        self.stats = {} if stats is None else stats
        make = None if base is None else (lambda: _lazy_sum(base, offsets, full))
        deferred.__init__(self, data, dtype, shape, origin, make=make)

    def parts(self):
        """(base, offsets, full) while the sum is not made, else None."""
        if self.base is None or _DATA.__get__(self) is not None:
            return None
        return self.base, self.offsets, self.full


def _lazy_sum(base, offsets, full):
    total = np.add(base, offsets)  # addresses count elements: signed offsets widen to int64
    return total if total.shape == tuple(full) else np.broadcast_to(total, full)


_TENSOR_TYPES = frozenset((tensor, deferred, lazy_pointer))


def pointer_parts(t):
    """A lazy pointer's (base, offsets, full), None for any other tensor."""
    return t.parts() if isinstance(t, lazy_pointer) else None


# ----- the layout record: which of the GPU's threads hold which elements of a block
#
# Triton fixes a block's layout where the block is made and carries it along (docs/numerics.md,
# "Reductions and scans: the GPU's order"); the order of a reduction's additions follows it.
# `tensor.layout` records it where minitriton knows it:
#   None         not known: a reduction takes the blocked layout of the block's own element
#                width (a block loaded in its own type, the common case)
#   bits (int)   the blocked layout of a load of `bits`-bit elements (language/access.py), kept
#                through casts: `x.to(tl.float32)` of an fp16 load keeps its 8 per thread
#   ("mma", M, N) the accumulator layout of a tensor-core `tl.dot`'s (M, N) result
#                (language/dot.py), kept by whatever is computed from it
# Element-wise operations keep it (`elementwise`); shape operations (reshape, trans, permute,
# expand_dims, broadcast, join, split, cat...) make new tensors, which start from None, as
# Triton lays their results out afresh.


def mma_layout_record(shape):
    """The record of a tensor-core dot's result of `shape`."""
    return ("mma", *shape)


def join_layouts(a, b):
    """The layout of an element-wise result whose full-size operands have layouts `a` and `b`
    (Triton's RemoveLayoutConversions and Coalesce passes, simplified): the MMA layout wins over
    a blocked one (`resolveConflicts` prefers NvidiaMmaEncodingAttr for a non-memory op; the
    H200's TTGIR reduces `acc.to(tl.float16)` and `acc * 0.5 + 1.0` in #mma); of two loads, the
    narrower element's, with more elements per thread (the coalesce pass gives every load of
    the same shape that the op connects the largest `perThread` among them: Triton's source,
    not yet probed); a value of no known layout (a constant, `tl.arange`'s, a broadcast
    operand) takes the other's."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if type(a) is tuple:
        return a
    if type(b) is tuple:
        return b
    return a if a < b else b


def elementwise(fn):
    """An element-wise operation: padding marks (marks.propagate) and the layout record, kept
    from the operands of the result's full shape (`join_layouts`); an operation that sets its
    result's record itself, or returns an operand, is left as it is."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        operands = (*args, *kwargs.values()) if kwargs else args
        for a in operands:  # marked operands: marks.propagate
            if getattr(a, "pad", None) is not None:
                out = marks.propagate(out, operands)
                break
        if out.__class__ not in _TENSOR_TYPES or not out.shape:
            return out
        if out.glayout is None:
            out.glayout = joined_glayout(operands, out)
        if out.layout is not None:
            return out
        layout = None
        for a in operands:
            if a.__class__ in _TENSOR_TYPES:
                if a is out:
                    return out
                own = a.layout
                if own is not None and a.shape == out.shape:
                    layout = own if layout is None else join_layouts(layout, own)
        out.layout = layout
        return out
    return wrapper


def tensor_member(fn=None, *, name=None, reflected=None, as_property=False):
    """Attach a `tl` function to the tensor type: `x.name(...)` calls `fn(x, ...)`.

    `reflected` also attaches `__rname__`-style methods with the operands swapped (`2 + x`);
    `as_property` attaches a read-only property (`x.T`). Returns `fn` unchanged."""
    def attach(f):
        method = property(f) if as_property else f
        setattr(tensor, name or f.__name__, method)
        if reflected:
            setattr(tensor, reflected, lambda self, other: f(other, self))
        return f
    return attach(fn) if fn is not None else attach


def validate_block_shape(shape):
    numel = 1
    for i, d in enumerate(shape):
        d = _unwrap(d)
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise CompilationError(f"Shape element {i} must have type `constexpr[int]`, got "
                                   f"`{type(d).__name__}`; block shapes are compile-time "
                                   "constants (pass them as tl.constexpr)")
        if d <= 0 or d & (d - 1) != 0:
            raise CompilationError(f"Shape element {i} must be a power of 2 (got {d})")
        numel *= int(d)
    if numel > TRITON_MAX_TENSOR_NUMEL:
        raise CompilationError(f"numel ({numel}) exceeds triton maximum tensor numel "
                               f"({TRITON_MAX_TENSOR_NUMEL})")
    return [int(_unwrap(d)) for d in shape]


def is_tensor(x):
    return isinstance(x, tensor)


# ----- compile-time constants: what Triton's compiler folds
#
# Triton makes a Python number in the kernel (a literal, a constexpr) an `arith.constant`
# (`scalar_constant`), and `tl.full` of one a splat of it; its canonicalizer then folds every
# operation whose operands are all constants (MLIR's arith and math folders, on APFloat; a splat
# through broadcast, expand_dims, reshape, trans), and LLVM folds what reaches it as constants,
# all before the DAG combiner contracts products into adds. `tensor.const` marks such values: set
# by `constant` (so by `to_tensor` and every literal operand), `tl.full`, `tl.zeros`,
# `tl.arange(s, s + 1)`, and by each operation that Triton folds when all its operands are
# marked (arith.py's operators, math_ops.py's functions, `cast`, `x[:, None]`, `broadcast_to`).
# Folding changes results where the runtime instruction is not the correctly rounded operation
# (docs/numerics.md, "Constants"): float `%` is APFloat's mod (C's fmod), a product of constants
# is rounded before any add sees it (never contracted: arith.py's FUSED_TYPES), exp, log,
# sqrt... are the host's libm, without the GPU's approximations and flushed subnormals. Never
# marked: scalar launch arguments (`literal`), program ids, loaded values, and what Triton does
# not fold (reductions, dots, casts through tt.fp_to_fp, rsqrt, sqrt_rn, div_rn, clamp).

_LITERALS = {}  # (type, value, dtype) -> the read-only array of `literal`, for ints and floats
_LITERALS_MAX = 4096


def literal(value, dtype):
    """A uniform scalar tensor holding a Python value converted to `dtype`."""
    kind = type(value)
    # 0.0 == -0.0 (so a zero's key holds its sign) and NaN != NaN (converted every time)
    if kind is int:
        key = (kind, value, dtype)
    elif kind is float and value == value:
        key = (kind, value, dtype) if value else (kind, value, dtype, math.copysign(1.0, value))
    else:
        key = None
    arr = None if key is None else _LITERALS.get(key)
    if arr is None:
        with np.errstate(all="ignore"):
            if dtype.is_bool():
                arr = np.array([bool(value)])
            else:
                arr = np.array([value], dtype=np.float64 if dtype.is_floating() else None)
                arr = _convert(arr, dtype)
        if key is not None and len(_LITERALS) < _LITERALS_MAX:
            arr.flags.writeable = False  # shared by every tensor of this literal
            _LITERALS[key] = arr
    return tensor(arr, dtype, [])


def constant(value, dtype):
    """A Python number in the kernel made a constant of `dtype` as Triton's `scalar_constant`
    does, marked a compile-time constant (`tensor.const`; `literal` is for runtime values, such
    as scalar launch arguments): a value equal to 0 is the type's null value, so `-0.0` is
    +0.0; `get_fp32`, `get_fp16`... take a C float, so the value is first rounded to fp32.
    (Not modelled: `get_bf16` builds its constant from `std::to_string` of that float in
    Triton's source, but the H200's results for a bf16 `x < 1e-40`, fuzz seed clean_run_1765,
    are those of a constant above the smallest bf16 subnormal, not of 0.)"""
    value = _unwrap(value)
    if isinstance(value, tensor):
        return literal(value, dtype)
    if dtype.is_floating():
        if value == 0:
            value = 0.0
        elif not dtype.is_fp64():
            with np.errstate(all="ignore"):
                value = float(np.float32(float(value)))
    out = literal(value, dtype)
    out.const = True
    return out


def to_tensor(x):
    x = _unwrap(x)
    if isinstance(x, tensor):
        return x
    return constant(x, _t.literal_type(x))


def compute_array(t):
    """The data in the NumPy type arithmetic is done in: fp16/bf16/fp8 compute in fp32."""
    if t.dtype.is_floating() and t.dtype.primitive_bitwidth < 32:
        return t.data.astype(np.float32)
    return t.data


def is_float_array(arr):
    return np.issubdtype(arr.dtype, np.floating) or arr.dtype.kind == "V"


def _convert(arr, dst):
    """Numeric conversion of a NumPy array to a Triton type, with GPU semantics."""
    if dst.is_bool():
        return arr != 0
    if dst.is_int():
        if is_float_array(arr):
            info = np.iinfo(dst.np)
            # fptosi/fptoui truncate toward zero; out-of-range values are undefined on the GPU,
            # here they saturate, and NaN gives 0.
            f = np.nan_to_num(np.trunc(arr.astype(np.float64)), nan=0.0,
                              posinf=info.max, neginf=info.min)
            return np.clip(f, info.min, info.max).astype(dst.np)
        return arr.astype(dst.np)  # integer -> integer wraps, as on the GPU
    if not is_float_array(arr):
        # int -> float rounds to nearest once; go through float64 (exact for |x| < 2**53)
        arr = arr.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # to inf, as the GPU's cvt: no warning
        return arr.astype(dst.np)


@elementwise
def cast(x, dst, fp_downcast_rounding=None, bitcast=False):
    x = to_tensor(x)
    dst = _unwrap(dst)
    if isinstance(dst, _t.block_type):
        dst = dst.element_ty
    if not isinstance(dst, _t.dtype):
        raise CompilationError(f"cannot cast to {dst!r}: expected a triton.language dtype")
    src = x.dtype
    if src == dst and src.is_ptr() == dst.is_ptr():
        return x
    if _unwrap(bitcast):
        if src.primitive_bitwidth != dst.primitive_bitwidth:
            raise CompilationError(f"Cannot bitcast data-type of size {src.primitive_bitwidth} to "
                                   f"data-type of size {dst.primitive_bitwidth}")
        out = tensor(np.ascontiguousarray(x.data).view(dst.np), dst, x.shape)
        out.const = x.const  # LLVM folds the bitcast of a constant
        return out
    if src.is_ptr() or dst.is_ptr():
        return _pointer_cast(x, src, dst)
    rounding = _unwrap(fp_downcast_rounding)
    if rounding is not None and rounding not in ("rtne", "rtz"):
        raise CompilationError(f"Invalid rounding mode: {rounding}. Supported rounding modes "
                               "are 'rtne' and 'rtz'.")
    rtz = rounding == "rtz" and dst.is_floating() and src.is_floating() and \
        dst.primitive_bitwidth < src.primitive_bitwidth
    with np.errstate(all="ignore"):
        data = x.data
        if src.value_scale != 1.0 or dst.value_scale != 1.0:  # fp8e4b15 (types.py)
            data = data.astype(np.float32) * np.float32(src.value_scale / dst.value_scale)
        out = tensor(_round_toward_zero(data, dst) if rtz else _convert(data, dst), dst, x.shape)
    if x.const:
        out.const = _cast_folds(src, dst, rtz, x.data)
    return out


def _cast_folds(src, dst, rtz, data):
    """Whether Triton folds the cast of a constant holding `data`: arith's extf, truncf,
    sitofp, fptosi... fold; a cast that Triton makes a tt.fp_to_fp (to or from an fp8 type, or
    rounding toward zero) folds a zero only (FpToFpOp::fold), anything else becoming the GPU's
    cvt instruction."""
    if not (src.is_floating() and dst.is_floating()):
        return True
    if rtz or 8 in (src.primitive_bitwidth, dst.primitive_bitwidth):
        with np.errstate(all="ignore"):
            return bool(np.all(data.astype(np.float32) == 0))
    return True


def to_int1(x, advice=""):
    """Triton's `bitcast(x, tl.int1)` in logical_and / logical_or / not_ (and Python's `and`,
    `or`, `not` on tensors): int1 stays, a pointer becomes `x != 0`, anything wider is the
    error Triton gives (`advice` follows it)."""
    if x.dtype.is_bool():
        return x
    if x.dtype.is_ptr():
        return cast(x, _t.int1)
    raise CompilationError(f"Cannot bitcast data-type of size {x.dtype.primitive_bitwidth} to "
                           f"data-type of size 1{advice}")


def _pointer_cast(x, src, dst):
    """Casts to and from pointers, as Triton allows them: pointer to pointer; a 64-bit integer
    to a pointer (`int_to_ptr`: the integer is a byte address, resolved against real memory,
    see memory.py); a pointer to int64 (its byte address) or to int1 (`ptr != 0`)."""
    if src.is_ptr() and dst.is_ptr():
        if src.element_ty != dst.element_ty:
            # addresses count elements of one buffer's type: go through the bytes, to the
            # memory seen as the new type
            memory = current().memory
            data, origin = memory.pointers_from_integers(
                memory.integers_from_pointers(x.data), dst.element_ty)
            return tensor(data, dst, x.shape, origin)
        return tensor(x.data, dst, x.shape, x.origin)
    if src.is_ptr() and dst.is_int() and dst.primitive_bitwidth in (1, 64):
        addresses = current().memory.integers_from_pointers(x.data)
        return tensor(addresses != 0 if dst.primitive_bitwidth == 1 else addresses.astype(dst.np),
                      dst, x.shape)
    if dst.is_ptr() and src.is_int() and src.primitive_bitwidth == 64:
        data, origin = current().memory.pointers_from_integers(x.data.astype(np.int64),
                                                               dst.element_ty)
        return tensor(data, dst, x.shape, origin)
    if dst.is_ptr() and src.is_int():
        raise CompilationError(f"cannot cast {src!r} to {dst!r}: a pointer is made from a 64-bit "
                               f"integer; cast to tl.int64 first (`x.to(tl.int64).to(...)`)")
    raise CompilationError(f"cannot cast {src!r} to {dst!r}")


def _round_toward_zero(data, dst):
    """Narrowing float conversion rounding toward zero (`fp_downcast_rounding="rtz"`)."""
    near = data.astype(dst.np)
    too_big = np.abs(near.astype(np.float64)) > np.abs(data.astype(np.float64))
    if dst.is_bf16():  # bf16 is the top half of fp32: truncating the low bits rounds to zero
        cut = (data.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
        return np.where(np.isfinite(data), cut.astype(dst.np), near)
    step = np.nextafter(near, np.zeros_like(near))
    return np.where(too_big, step, near)


def broadcast_shapes(a, b):
    if len(a) < len(b):
        a = [1] * (len(b) - len(a)) + list(a)
    elif len(b) < len(a):
        b = [1] * (len(a) - len(b)) + list(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise CompilationError(f"Cannot make_shape_compatible: incompatible dimensions at "
                                   f"index {i}: {x} and {y}")
    return out


def expand_to_rank(t, rank):
    """A view of `t.data` whose block part has `rank` dimensions (left-padded with ones)."""
    pad = rank - len(t.shape)
    if pad == 0:
        return t.data
    return t.data.reshape((t.data.shape[0],) + (1,) * pad + tuple(t.shape))


@reshaping
def broadcast_to(t, shape):
    t = to_tensor(t)
    shape = list(shape)
    if t.shape == shape:
        return t
    if broadcast_shapes(t.shape, shape) != shape or len(t.shape) > len(shape):
        raise CompilationError(f"Cannot broadcast a block of shape {t.shape} to shape {shape}")
    data = expand_to_rank(t, len(shape))
    data = np.broadcast_to(data, (data.shape[0], *shape))
    out = tensor(data, t.dtype, shape, t.origin)
    out.const = t.const
    out.glayout = t.glayout
    return out


__all__ = ["tensor", "tensor_member", "constexpr", "cast", "to_tensor", "broadcast_to",
           "validate_block_shape"]


def __getattr__(name):
    """Triton defines every language name in triton.language.core (torch's inductor reads
    `triton.language.core.view`): the language's other names, from its package."""
    package = sys.modules.get(__package__)
    if package is None or name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(package, name)
