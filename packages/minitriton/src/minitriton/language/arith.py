"""Arithmetic, comparison, bitwise and pointer operators on tensors, with Triton's typing.

Each operator: type-check and promote the operands (`dtypes.computation_type`), broadcast the
block shapes, compute in NumPy (half types compute in fp32 and round once, which is what the
GPU's correctly rounded fp16/bf16 instructions give), and round to the result type. Where
every operand is a compile-time constant the result is one (`tensor.const`, core.py), folded
as Triton's compiler folds it: float `%` is C's fmod, a product is rounded and never fused.

Length: over 600 lines because every operator goes through the same promotion, pointer and
padding rules here (`operands`, `_finish`, the lazy pointer offsets); split by operator, the
pieces would import each other's private rules.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import weakref

import numpy as np

from .. import types as _t
from ..context import active
from ..errors import CompilationError
from ..settings import triton_release
from ..types import _unwrap
from .core import (broadcast_shapes, cast, compute_array, constant, elementwise,
                   is_tensor, lazy_pointer, literal, pointer_parts, tensor, tensor_member,
                   to_int1, to_tensor, _convert)
from .dot import _compiled, accumulate, int_mma_chain


def _literal_operand(value, ty):
    if ty.is_bf16() and not isinstance(value, bool) and value == value and value != 0:
        out = literal(_bf16_literal_value(value), ty)
        out.const = True
        return out
    if ty.is_int():
        if value < 0 and ty.is_int_unsigned() and not ty.is_bool():
            raise CompilationError("Cannot perform a binary operation between an unsigned tensor "
                                   "and a negative scalar. Perform a explicit cast on one of them.")
        info = None if ty.is_bool() else _int_range(ty.np)
        if info is not None and not (info[0] <= value <= info[1]):
            raise CompilationError(f"Scalar {value} is out of range for type {ty}")
    return constant(value, ty)


def _bf16_literal_value(value):
    """A non-zero literal as Triton's `get_bf16(float v)` makes a bf16 constant of it:
    `APFloat(BFloat, std::to_string(v))`, v the literal rounded to a C float, and to_string
    prints six decimals, so literals below 5e-7 become zeros of their sign (`x + 1e-40` adds
    +0.0, `x + (-1e-40)` adds -0.0) and others are rounded to 6 decimals first (measured on
    the H200: `0.0 + 1e-7` is 0.0, `0.0 + 6.1e-05` is 6.1035e-05)."""
    with np.errstate(all="ignore"):
        return float(f"{float(np.float32(float(value))):f}")


_INT_RANGES = {}


def _int_range(np_type):
    """(min, max) of a NumPy integer type (np.iinfo is slow to build at every literal)."""
    found = _INT_RANGES.get(np_type)
    if found is None:
        info = np.iinfo(np_type)
        found = _INT_RANGES[np_type] = (int(info.min), int(info.max))
    return found


def _check_ptr(a, b, allow_ptr):
    if a.is_ptr():
        if not allow_ptr or (b.is_ptr() and a != b) or b.is_floating():
            raise CompilationError(f"invalid operands of type {a!r} and {b!r}")


def operands(a, b, allow_lhs_ptr=False, allow_rhs_ptr=False, arithmetic=True, div_or_mod=False):
    """Promote and broadcast two operands; returns (a, b, shape) with a, b tensors."""
    a, b = _unwrap(a), _unwrap(b)
    a_lit, b_lit = not is_tensor(a), not is_tensor(b)
    a_ty = _t.literal_type(a) if a_lit else a.dtype
    b_ty = _t.literal_type(b) if b_lit else b.dtype
    _check_ptr(a_ty, b_ty, allow_lhs_ptr)
    _check_ptr(b_ty, a_ty, allow_rhs_ptr)
    if arithmetic and not a_ty.is_ptr() and not b_ty.is_ptr():
        ty = _t.computation_type(a_ty, a_lit, b_ty, b_lit, div_or_mod)
        # (a cast to the type it has returns it: skip the call, which every operator makes)
        a = _literal_operand(a, ty) if a_lit else a if a_ty is ty else cast(a, ty)
        b = _literal_operand(b, ty) if b_lit else b if b_ty is ty else cast(b, ty)
    else:
        a, b = to_tensor(a), to_tensor(b)
    return a, b, broadcast_shapes(a.shape, b.shape)


def _arrays(a, b, shape):
    rank = len(shape)
    return (_expand(compute_array(a), a, rank), _expand(compute_array(b), b, rank))


def _expand(arr, t, rank):
    pad = rank - len(t.shape)
    return arr if pad == 0 else arr.reshape((arr.shape[0],) + (1,) * pad + tuple(t.shape))


def _finish(result, ty, shape, origin=None):
    if result.dtype != ty.np:
        result = _convert(result, ty) if not ty.is_ptr() else result.astype(np.int64)
    return tensor(result, ty, shape, origin)


def _folded(out, *operands):
    """`out`, marked a compile-time constant where every operand is one: Triton's compiler
    folds the operation (core.py, "compile-time constants")."""
    for t in operands:
        if not t.const:
            return out
    out.const = True
    return out


def _pointer_offset(ptr, off, shape):
    """ptr + off: offsets are in elements of the pointee type (addptr)."""
    if not off.dtype.is_int():
        raise CompilationError(f"pointer offsets must be integers, got {off.dtype!r}")
    o = off.data
    rank = len(shape)
    if shape and o.dtype.kind == "i":
        lazy = _lazy_offset(ptr, _expand(o, off, rank), shape)
        if lazy is not None:
            return lazy
    if off.dtype.is_int_unsigned() and off.dtype.int_bitwidth < 64:
        o = o.astype(np.uint64)
    p = _expand(ptr.data, ptr, rank)
    o = _expand(o, off, rank)
    # addresses count elements (memory.py); signed offsets widen to int64 inside the add
    total = np.add(p, o) if o.dtype.kind == "i" else np.add(p, o.astype(np.int64))
    return tensor(total, ptr.dtype, shape, ptr.origin)


def _lazy_offset(ptr, o, shape):
    """ptr + o (signed offsets, of the result's `shape`) as a lazy pointer (core.lazy_pointer), or
    None where the sum is made now: the pointer has a block of addresses of its own."""
    rank = len(shape)
    parts = pointer_parts(ptr)
    if parts is not None:
        base, offsets, _ = parts
        pad = (1,) * (rank - len(ptr.shape))
        base = base.reshape((base.shape[0], *pad, *base.shape[1:]))
        offsets = offsets.reshape((offsets.shape[0], *pad, *offsets.shape[1:]))
        stats = ptr.stats
        if all(d == 1 for d in o.shape[1:]):  # one offset per program: the base moves
            base = np.add(base, o)
        else:  # (ptr + a) + b adds in 64 bits, as two addptr: no int32 wrap of a + b
            offsets, stats = np.add(offsets, o, dtype=np.int64), None
        full = np.broadcast_shapes(base.shape, offsets.shape)
        return lazy_pointer(None, ptr.dtype, shape, ptr.origin, base, offsets, full, stats)
    p = _expand(ptr.data, ptr, rank)
    if any(d != 1 for d in p.shape[1:]):
        return None
    full = np.broadcast_shapes(p.shape, o.shape)
    return lazy_pointer(None, ptr.dtype, shape, ptr.origin, p, o, full)


# Float types whose `a * b + c` the GPU contracts into one fused multiply-add (one rounding):
# Triton compiles with enable_fp_fusion=True, and LLVM's DAG combiner (DAGCombiner::
# visitFADDForFMACombine; NVPTX asks for the aggressive form) fuses every fmul that feeds an
# fadd or fsub, whatever the product's other uses, in every float type: where both operands are
# products it fuses the one with fewer uses, the left one (the first) where they have as many.
# A product remembers its factors (`tensor.fused`) and an add or sub taking it computes the
# exact result and rounds once (`fma_exact`). The uses are counted as the kernel runs
# (`_Factors.uses`): the same two blocks multiplied again are one value after the compiler's
# common-subexpression elimination, so every product of them and every add or sub that took
# one counts as a use, and a product broadcast in the add counts once for each element of a
# thread it covers (`_sharing`). LLVM counts the uses of the whole kernel, later ones too: a
# launch that chose between two products with the uses seen so far, where the launch's final
# uses choose the other, runs again deciding with those (`final_uses`, runtime/launch.py; what
# it prints shows once, from the first run). A negative literal factor
# makes the product the right operand (`_Factors.negated`). Measured on the H200 (Triton 3.6,
# benchmarks/probes/fp_contract.py): `x * y + z * w` is fma(x, y, round(z * w)) in fp16, bf16,
# fp32 and fp64, `x * y + z * x` after four other uses of x * y is fma(z, x, round(x * y)),
# `2 - x * y` is fma(-x, y, 2) in fp16. Not modelled (docs/numerics.md): LLVM's SLP vectorizer
# packing fp16/bf16 products into f16x2 multiplies whose lanes are not fused, and operand
# orders that InstCombine and Reassociate change (`c - (a * b - d * e)` is `c + (d * e - a * b)`
# there). A product of two compile-time constants (core.py, `tensor.const`) is folded, rounded,
# long before the DAG combiner runs: it is an ordinary constant operand, never fused.
# `kernel[grid](..., enable_fp_fusion=False)` turns contraction off.
FUSED_TYPES = ("fp32", "fp64", "fp16", "bf16")


def _fusing(ty):
    if ty.name not in FUSED_TYPES:
        return False
    ctx = active()
    return ctx is None or ctx.record.options.get("enable_fp_fusion", True) is not False


class _Factors(tuple):
    """(x, y), the factors of a product a later add may fuse (`tensor.fused`); `uses`, the
    one-element list counting the uses of that product so far, shared by every product of the
    same two operand blocks in the launch; `negated`, whether a factor is a negative literal
    (or a negated product), a sign LLVM takes out of the product."""

    uses = (1,)
    negated = False


def _product_uses(a, b):
    """The use counter of the product of tensors `a` and `b` in this launch, one use more."""
    ctx = active()
    if ctx is None:
        return [1]
    table = ctx.scratch.setdefault("fused_products", {})
    lo, hi = sorted((a.data, b.data), key=id)
    key = (id(lo), id(hi))
    found = table.get(key)
    if found is None or found[0]() is not lo or found[1]() is not hi:
        if len(table) > 4096:  # drop the entries of blocks no longer alive
            for k in [k for k, v in table.items() if v[0]() is None or v[1]() is None]:
                del table[k]
        counters = ctx.scratch.setdefault("product_counters", [])
        found = table[key] = (weakref.ref(lo), weakref.ref(hi), [0, len(counters)])
        counters.append(found[2])
    found[2][0] += 1
    return found[2]


# The uses of every product in the whole launch, by the order its counter was made in: set
# while a launch runs again because a fusion it chose with the uses seen so far goes the
# other way with all of them (final_uses; runtime/launch.py)
_FINAL_USES: contextvars.ContextVar = contextvars.ContextVar("minitriton_final_uses",
                                                             default=None)


def _left_first(left, right, hoisted):
    """Whether LLVM fuses the left of two products with `left` and `right` uses: the one with
    fewer uses, the left on a tie; `hoisted`: the left has a negative constant factor (and the
    right none), so LLVM's `-A + B` is `B - A` with B first."""
    return not right <= left if hoisted else left <= right


def final_uses(ctx):
    """None, or where a fusion this launch chose between two products would go the other way
    with the uses of the whole launch (LLVM counts the uses of a value over the kernel after
    common-subexpression elimination, later ones included): every product's uses by its
    counter's order, for the launch to run again with (`deciding_with`)."""
    if _FINAL_USES.get() is not None:
        return None
    for ua, ub, sa, sb, hoisted, was_left in ctx.scratch.get("fusion_choices", ()):
        if _left_first(ua[0] * sa, ub[0] * sb, hoisted) != was_left:
            return {counter[1]: counter[0] for counter in ctx.scratch["product_counters"]}
    return None


@contextlib.contextmanager
def deciding_with(uses):
    """Launches in the block choose fusions with these uses (final_uses)."""
    token = _FINAL_USES.set(uses)
    try:
        yield
    finally:
        _FINAL_USES.reset(token)


def _two_sum(a, b):
    """s + e == a + b exactly (Knuth's TwoSum), s the rounded sum."""
    s = a + b
    bp = s - a
    return s, (a - (s - bp)) + (b - bp)


_SPLITTER = 134217729.0  # 2**27 + 1, Veltkamp's splitting of a float64


def _two_prod(a, b):
    """p + e == a * b exactly (Dekker), barring overflow and underflow."""
    p = a * b
    t = _SPLITTER * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLITTER * b
    bh = t - (t - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _round_to_odd(s, e):
    """The float64 s + e (e the exact residual of s) rounded to odd: s, or its neighbour toward
    e where e != 0 and s is even. Rounding that to a type of at most 51 significant bits is the
    correct rounding of the exact s + e (no double rounding)."""
    e = np.where(np.isfinite(e), e, 0.0)
    even = (s.view(np.int64) & 1) == 0
    nudge = (e != 0) & even & np.isfinite(s)
    if not nudge.any():
        return s
    return np.where(nudge, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)


# per narrow type: the float64 fraction bits below its own, and its smallest normal number
_NARROW = {"fp32": (29, 2.0 ** -126), "fp16": (42, 2.0 ** -14), "bf16": (45, 2.0 ** -126)}
_TOP_BIT = np.uint64(1 << 63)
_COUNT_COMPILED = 4096  # lanes from which fma_exact checks its sums with fma_compiled


def _unlike(s, ty):
    """The lanes of the float64 sums `s` (each the rounding of an exact a * b + c) that may round
    to `ty` otherwise than the exact sums do: rounding is monotonic and `ty`'s rounding
    boundaries (the midpoints between its neighbours) are float64 numbers, so only an `s` on a
    midpoint can differ; below the type's normal range the midpoints lie elsewhere, so such
    lanes count too."""
    low, tiny = _NARROW[ty.name]
    # the low bits, shifted to the top, are those of a midpoint: 1 then zeros
    mid = np.left_shift(s.view(np.uint64), np.uint64(64 - low)) == _TOP_BIT
    small = np.abs(s) < tiny  # NaN is not, zeros are: dropped below
    if small.any():
        small &= s != 0
        mid |= small
    return mid


def fma_exact(a, b, c, ty):
    """a * b + c with one rounding to the float type `ty`, as a float64 array whose conversion
    to `ty` is that rounding: correctly rounded for fp64 (Boldo and Melquiond's emulated fma,
    a TwoProduct, a TwoSum and a sum rounded to odd), rounded to odd for the narrower types
    (whose products are exact in float64). For fp32 blocks of one shape the compiled pass
    (`_fma32`) returns the fp32 result itself, the same bits."""
    if ty.name == "fp32":
        fast = _fma32(a, b, c)
        if fast is not None:
            return fast
    with np.errstate(all="ignore"):
        if ty.name != "fp64":
            s = np.multiply(a, b, dtype=np.float64)  # exact: no conversions to float64 first
            s = np.add(s, c, dtype=np.float64,
                       out=s if s.shape == np.broadcast_shapes(s.shape, np.shape(c)) else None)
            # the few lanes where the float64 sum may round differently: rounded to odd
            # from the exact sum there (a TwoSum), the others kept
            compiled = _compiled("fma_compiled") if s.size >= _COUNT_COMPILED else None
            if compiled is not None and s.flags.c_contiguous:
                low, tiny = _NARROW[ty.name]
                if not compiled.count_unlike(s, np.uint64(64 - low), tiny):
                    return s  # (one compiled pass instead of _unlike's five)
            unlike = _unlike(s, ty)
            if not unlike.any():  # (np.nonzero of a 2-D block is slow even when none is set)
                return s
            # the few lanes' indices from the flat ones (np.nonzero of an n-D block is slow)
            lanes = np.unravel_index(np.flatnonzero(unlike), s.shape)
            a, b, c = (np.broadcast_to(v, s.shape)[lanes].astype(np.float64) for v in (a, b, c))
            s[lanes] = _round_to_odd(*_two_sum(a * b, c))
            return s
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    with np.errstate(all="ignore"):
        plain = a * b + c
        fa = np.where(np.isfinite(a) & (np.abs(a) >= 2.0 ** 995), 2.0 ** -200, 1.0)
        fb = np.where(np.isfinite(b) & (np.abs(b) >= 2.0 ** 995), 2.0 ** -200, 1.0)
        if (fa != 1).any() or (fb != 1).any():  # TwoProduct's splitting would overflow:
            f = fa * fb                         # scale by powers of two (exact) and back
            scaled = fma_exact(a * fa, b * fb, c * f, ty) / f
            plain = np.where(f != 1, scaled, plain)
            a, b, c = np.where(f != 1, 0.0, a), np.where(f != 1, 0.0, b), np.where(f != 1, plain, c)
        uh, ul = _two_prod(a, b)
        th, tl_ = _two_sum(c, uh)
        v, ve = _two_sum(tl_, ul)
        out = th + _round_to_odd(v, ve)
        # an exact zero has the sign IEEE gives a * b + c (-2.5 * 0 + -0.0 is -0.0), which the
        # sum of the parts loses (-0.0 + 0.0 is +0.0)
        out = np.where(out == 0, plain, out)
        # non-finite values, and products whose splitting overflows or whose error underflows
        safe = np.isfinite(out) & np.isfinite(ul) & (np.abs(a) < 2.0 ** 995) & \
            (np.abs(b) < 2.0 ** 995) & ((uh == 0) | (np.abs(uh) > 2.0 ** -960))
        return np.where(safe, out, plain)


def _fma32(a, b, c):
    """fma_exact of three C-contiguous fp32 blocks of one shape in one compiled pass (numba:
    fma_compiled.fma32), the fp32 result; None where that does not apply or where a lane's
    float64 sum may round otherwise than the exact sum (then NumPy fixes those lanes)."""
    if not all(isinstance(v, np.ndarray) and v.dtype == np.float32 and v.flags.c_contiguous
               for v in (a, b, c)) or not a.shape == b.shape == c.shape or \
            a.size < _COUNT_COMPILED:
        return None
    compiled = _compiled("fma_compiled")
    if compiled is None:
        return None
    out = np.empty(a.shape, np.float32)
    low, tiny = _NARROW["fp32"]
    if compiled.fma32(a.reshape(-1), b.reshape(-1), c.reshape(-1), out.reshape(-1),
                      np.uint64(64 - low), tiny):
        return None
    return out


def _factors(t, rank):
    """The factors of the product `t` stands for, broadcast, with a block part of `rank` dims."""
    x, y = np.broadcast_arrays(*t.fused)
    return _expand(x, t, rank), _expand(y, t, rank)


def _contracted(a, b, x, y, shape, sign):
    """a + sign * b as the GPU computes it when an operand is a product (None: not fused)."""
    if a.fused is None and b.fused is None:
        return None
    ua, ub = (getattr(t.fused, "uses", None) for t in (a, b))
    if isinstance(ua, list) and ua is ub:
        return None  # `x * y + x * y`: one product after CSE, which LLVM never fuses into itself
    uses, share = {}, {}
    for t, counter in ((a, ua), (b, ub)):
        if t.fused is not None:
            if isinstance(counter, list):
                counter[0] += 1
            share[id(t)] = _sharing(t, shape)
            uses[id(t)] = (counter[0] if counter is not None else 1) * share[id(t)]
    if a.fused is None or b.fused is None:
        first = a if b.fused is None else b
    else:
        # LLVM hoists a negative constant factor out of the product (`(x * -3) * y` is
        # `-((x * 3) * y)`) and turns `-A + B` into `B - A`: B is then the left operand
        hoisted = sign > 0 and getattr(a.fused, "negated", False) and \
            not getattr(b.fused, "negated", False)
        left = _left_first(uses[id(a)], uses[id(b)], hoisted)
        if isinstance(ua, list) and isinstance(ub, list):  # two counted products: a choice
            sa, sb = share[id(a)], share[id(b)]
            final = _FINAL_USES.get()
            ctx = active()
            if final is not None:
                left = _left_first(final.get(ua[1], ua[0]) * sa, final.get(ub[1], ub[0]) * sb,
                                   hoisted)
            elif ctx is not None:
                ctx.scratch.setdefault("fusion_choices", []).append((ua, ub, sa, sb, hoisted,
                                                                      left))
        first = a if left else b
    p, q = _factors(first, len(shape))
    if first is a:
        return fma_exact(p, q, -y if sign < 0 else y, a.dtype)
    return fma_exact(p, -q if sign < 0 else q, x, a.dtype)


def _sharing(t, shape):
    """How many of a thread's elements of the sum share one element of the product `t`: a
    product broadcast in the add (a row, a column, a scalar) is computed once per thread and
    used by each of the thread's elements that it covers, one use each on the GPU."""
    if list(t.shape) == list(shape):
        return 1
    total, own = math.prod(shape), math.prod(t.shape)
    ctx = active()
    warps = ctx.record.options.get("num_warps", 4) if ctx is not None else 4
    return max(1, min(total // max(own, 1), total // (32 * (warps or 4))))


@elementwise
def add(a, b):
    a, b, shape = operands(a, b, True, True)
    if a.dtype.is_ptr() and b.dtype.is_ptr():
        raise CompilationError("cannot add pointers together")
    if b.dtype.is_ptr():
        a, b = b, a
    if a.dtype.is_ptr():
        return _pointer_offset(a, b, shape)
    with np.errstate(all="ignore"):
        chained = _dot_accumulating(a, b, shape)
        if chained is not None:
            return chained
        x, y = _arrays(a, b, shape)
        if a.dtype.is_bool():  # a 1-bit integer wraps: True + True is False, as on the GPU
            out = _finish(np.logical_xor(x, y), a.dtype, shape)
        else:
            fused = _contracted(a, b, x, y, shape, 1) if _fusing(a.dtype) else None
            out = _finish(x + y if fused is None else fused, a.dtype, shape)
    return _folded(out, a, b)


def _dot_accumulating(a, b, shape):
    """`d + tl.dot(p, q)` (or `tl.dot(p, q) + d`) as Triton compiles it: its combine pass makes d
    the dot's accumulator, so the tensor cores' chain continues from d instead of the sum
    being rounded on its own (`acc += tl.dot(p, q)` is `acc = tl.dot(p, q, acc)`, bit for bit).
    None where no operand is such a dot. The dot's own sum (from zero) is never computed here:
    its data is deferred until something reads it."""
    for dot_result, d in ((b, a), (a, b)):
        if dot_result.chain is not None and list(dot_result.shape) == list(shape) and \
                a.dtype == b.dtype and a.dtype in (_t.float32, _t.int32):
            p, q, step = dot_result.chain
            if step == "int":
                other = _expand(compute_array(d), d, len(shape))
                return tensor(int_mma_chain(p, q, other), _t.int32, shape)
            out = accumulate(p, q, lambda d=d: _expand(compute_array(d), d, len(shape)), step,
                             shape)
            out.layout = dot_result.layout  # still the dot's accumulator
            return out
    return None


@elementwise
def sub(a, b):
    a, b, shape = operands(a, b, True, False)
    if a.dtype.is_ptr():
        return _pointer_offset(a, neg(b), shape)
    x, y = _arrays(a, b, shape)
    if a.dtype.is_bool():  # mod 2, as `+`
        out = _finish(np.logical_xor(x, y), a.dtype, shape)
    else:
        with np.errstate(all="ignore"):
            fused = _contracted(a, b, x, y, shape, -1) if _fusing(a.dtype) else None
            out = _finish(x - y if fused is None else fused, a.dtype, shape)
    return _folded(out, a, b)


@elementwise
def mul(a, b):
    negated = any(_negative_literal(v) or getattr(getattr(_unwrap(v), "fused", None), "negated",
                                                  False) for v in (a, b))
    a, b, shape = operands(a, b)
    x, y = _arrays(a, b, shape)
    with np.errstate(all="ignore"):
        out = _finish(x * y, a.dtype, shape)
    if a.const and b.const:  # folded by the compiler: a constant, no product left to fuse
        out.const = True
    elif _fusing(a.dtype):
        out.fused = _Factors((x, y))
        out.fused.uses = _product_uses(a, b)
        out.fused.negated = negated
    return out


def _negative_literal(v):
    v = _unwrap(v)
    return not is_tensor(v) and not isinstance(v, bool) and isinstance(v, (int, float)) and v < 0


@elementwise
def truediv(a, b):
    a, b, shape = operands(a, b, div_or_mod=True)
    ty = a.dtype
    if ty.is_int():
        a, b, ty = cast(a, _t.float32), cast(b, _t.float32), _t.float32
    x, y = _arrays(a, b, shape)
    with np.errstate(all="ignore"):  # folded, APFloat's division: correctly rounded, as here
        return _folded(_finish(x / y, ty, shape), a, b)


def _c_div(x, y):
    """Integer division truncating toward zero (sdiv); division by zero gives 0 here."""
    with np.errstate(all="ignore"):
        safe = np.where(y == 0, 1, y)
        q = x // safe
        fix = (q < 0) & (q * safe != x)
        q = np.where(fix, q + 1, q)
        return np.where(y == 0, 0, q).astype(x.dtype, copy=False)


@elementwise
def floordiv(a, b):
    a, b, shape = operands(a, b, div_or_mod=True)
    if not a.dtype.is_int():
        raise CompilationError(f"unexpected type {a.dtype}: `//` is only defined for integers in "
                               "Triton; use `/` (and tl.floor) for floating point")
    x, y = _arrays(a, b, shape)
    if a.dtype.is_int_signed():
        return _folded(_finish(_c_div(x, y), a.dtype, shape), a, b)
    with np.errstate(all="ignore"):
        return _folded(_finish(np.where(y == 0, 0, x // np.where(y == 0, 1, y)), a.dtype, shape),
                       a, b)


@elementwise
def mod(a, b):
    a, b, shape = operands(a, b, div_or_mod=True)
    x, y = _arrays(a, b, shape)
    with np.errstate(all="ignore"):
        if not a.dtype.is_floating():
            safe = np.where(y == 0, 1, y)
            return _folded(_finish(np.where(y == 0, 0, np.fmod(x, safe)), a.dtype, shape), a, b)
        if a.const and b.const:
            # arith.remf of constants, folded with APFloat's mod: the exact remainder with the
            # sign of x (C's fmod), in the computation type (fp32 for fp16 and bf16)
            return _folded(_finish(np.fmod(x, y), a.dtype, shape), a, b)
        return _finish(_frem(x, y, b.const), a.dtype, shape)


def _frem(x, y, by_constant=False):
    """LLVM's frem as NVPTX lowers it (fp16 and bf16 in fp32): x - trunc(x / y) * y, the
    multiply-subtract one fma (so a zero result is +0.0), and x where y is infinite. Far from
    C's fmod where the quotient is large (it is rounded before the trunc), and x / y
    overflowing gives -inf or inf. By a constant power of two (+-2^k: a literal, a constexpr,
    a `tl.full` of one, any compile-time constant, `tensor.const`) LLVM's DAG combiner emits
    the same fma without the infinity test, with the sign of x copied onto the result
    (`-4.0 % 2.0` is -0.0, `-4.0 % y` with y = 2.0 loaded is +0.0)."""
    if x.dtype != np.float64:
        x, y = x.astype(np.float32), y.astype(np.float32)
    ty = _t.float64 if x.dtype == np.float64 else _t.float32
    q = np.trunc(x / y)
    r = fma_exact(-q.astype(np.float64), y, x, ty).astype(x.dtype)
    if by_constant and _power_of_two(y):
        return np.copysign(r, x)
    return np.where(np.isinf(y), x, r)


def _power_of_two(y):
    """Whether the constant divisor `y` (one value, broadcast) is +-2^k."""
    v = np.abs(np.ravel(y)[:1].astype(np.float64))
    if v.size == 0 or not np.isfinite(v[0]) or v[0] == 0:
        return False
    m, _ = np.frexp(v[0])
    return m == 0.5


def _bitwise(fn, name):
    @elementwise
    def op(a, b):
        a, b, shape = operands(a, b)
        if not (a.dtype.is_int() and b.dtype.is_int()):
            raise CompilationError(f"invalid operands of type {a.dtype!r} and {b.dtype!r}: "
                                   f"`{name}` needs integer or boolean operands (for a float's "
                                   f"bits, x.to(tl.int32, bitcast=True) first)")
        x, y = _arrays(a, b, shape)
        outer = _outer_all_true(x, y) if fn is np.bitwise_and and a.dtype.is_bool() else None
        if outer is not None:
            # two all-true masks of a row and a column (`(m[:, None] < M) & (k[None, :] < K)`):
            # the block of their outer shape is a read-only view of one True, not an array
            return _folded(tensor(np.broadcast_to(np.True_, outer), a.dtype, shape), a, b)
        with np.errstate(all="ignore"):
            return _folded(_finish(fn(x, y), a.dtype, shape), a, b)
    return op


def _outer_all_true(x, y):
    """The shape of x & y (booleans) where it is all true and at least twice the size of its
    operands together (testing them is then cheaper than making the block), else None."""
    outer = np.broadcast_shapes(x.shape, y.shape)
    n = math.prod(outer)
    ok = n >= 2 * (x.size + y.size) and n >= 1024 and bool(x.all()) and bool(y.all())
    return outer if ok else None


and_ = _bitwise(np.bitwise_and, "&")
or_ = _bitwise(np.bitwise_or, "|")
xor_ = _bitwise(np.bitwise_xor, "^")


def _logical(op, name):
    """`x.logical_and(y)` / `x.logical_or(y)` (tensor methods only, as in Triton 3.6): each
    operand taken as int1 (`to_int1`: booleans, and pointers as `p != 0`; an int32 operand is
    the GPU's compile error, "Cannot bitcast data-type of size 32 ...")."""
    def method(self, other):
        a, b = (to_int1(to_tensor(_unwrap(t)), f" (in .{name}: compare first, e.g. `x != 0`)")
                for t in (self, other))
        return op(a, b)
    method.__name__ = name
    return tensor_member(method, name=name)


logical_and = _logical(and_, "logical_and")
logical_or = _logical(or_, "logical_or")


def _named(op, name):
    """tl.add / tl.sub / tl.mul: `x + y` and so on. `sanitize_overflow` makes Triton check
    integer overflow where the kernel is compiled with it (debug); minitriton checks none."""
    def fn(x, y, sanitize_overflow=True):
        return op(x, y)
    fn.__name__, fn.__qualname__ = name, name
    return fn


add_fn, sub_fn, mul_fn = _named(add, "add"), _named(sub, "sub"), _named(mul, "mul")


def _shift(left):
    @elementwise
    def op(a, b):
        # Triton's tensor.__rshift__ (and __rrshift__, on the tensor) picks ashr or lshr by the
        # tensor's own signedness, before promotion: int32 >> uint64 shifts arithmetically
        lhs = _unwrap(a) if is_tensor(_unwrap(a)) else _unwrap(b)
        arithmetic = not left and is_tensor(lhs) and lhs.dtype.is_int_signed()
        a, b, shape = operands(a, b)
        if not a.dtype.is_int():
            raise CompilationError(f"unexpected type {a.dtype} for a shift")
        x, y = _arrays(a, b, shape)
        bits = a.dtype.int_bitwidth
        with np.errstate(all="ignore"):
            ok = (y >= 0) & (y < bits)
            ys = np.where(ok, y, 0).astype(x.dtype)
            if left:
                r = np.left_shift(x, ys)
            elif arithmetic and a.dtype.is_int_unsigned() and not a.dtype.is_bool():
                signed = np.dtype(f"int{bits}")
                r = np.right_shift(x.view(signed), ys.view(signed)).view(x.dtype)
            else:
                r = np.right_shift(x, ys)
            return _folded(_finish(np.where(ok, r, 0).astype(x.dtype), a.dtype, shape), a, b)
    return op


lshift = _shift(True)
rshift = _shift(False)


def _compare(fn):
    @elementwise
    def op(a, b):
        # Triton's tensor.__lt__ (and the other comparisons) makes a literal a tensor of its own
        # type first (`to_tensor`), so it is promoted as a tensor: bf16 `x < 1e-40` compares in
        # fp64 with 1e-40, fp16 `x < 0.1` in fp32, int8 `x < 1000` in int32
        a, b = (to_tensor(t) if not is_tensor(t) else t for t in (_unwrap(a), _unwrap(b)))
        a, b, shape = operands(a, b, True, True)
        x, y = _arrays(a, b, shape)
        return _folded(tensor(fn(x, y), _t.int1, shape), a, b)
    return op


eq = _compare(np.equal)
ne = _compare(np.not_equal)
lt = _compare(np.less)
le = _compare(np.less_equal)
gt = _compare(np.greater)
ge = _compare(np.greater_equal)


@elementwise
def neg(a):
    a = to_tensor(a)
    if a.dtype.is_ptr():
        raise CompilationError(f"wrong type argument to unary minus ({a.dtype!r})")
    if a.dtype.is_floating() and triton_release() >= (3, 7):
        # fneg from Triton 3.7 on: the sign flips, -(0.0) is -0.0; 3.6 computes 0 - x
        return _folded(tensor(-a.data, a.dtype, a.shape), a)
    return sub(constant(0, a.dtype), a)


@elementwise
def invert(a):
    a = to_tensor(a)
    if a.dtype.is_ptr() or a.dtype.is_floating():
        raise CompilationError(f"wrong type argument to unary invert ({a.dtype!r})")
    if a.dtype.is_bool():
        return _folded(tensor(~a.data, a.dtype, a.shape), a)
    return _folded(tensor(np.invert(a.data), a.dtype, a.shape), a)


def minmax_operands(x, y):
    """Operands of tl.maximum/minimum/clamp as Triton's core.py makes them: a literal becomes a
    tensor of its own type (fp32, int32...) and bf16 is widened to fp32 before the two are
    promoted as tensors (`tl.minimum(fp16_x, 0.1)` is fp32, `tl.minimum(int8_x, 1)` int32)."""
    x, y = (_widen_bf16(to_tensor(v)) for v in (x, y))
    return operands(x, y)


def _widen_bf16(t):
    return cast(t, _t.float32) if t.dtype.is_bf16() else t


def _is_propagating(propagate_nan):
    prop = _unwrap(propagate_nan)
    return prop not in (None, "none", 0, "NONE") and getattr(prop, "name", None) != "NONE"


def _minmax(np_fn, np_nan_fn, negative_zero_wins):
    @elementwise
    def op(x, y, propagate_nan=None):
        x, y, shape = minmax_operands(x, y)
        a, b = _arrays(x, y, shape)
        fn = np_nan_fn if (x.dtype.is_floating() and not _is_propagating(propagate_nan)) \
            else np_fn
        out = fn(a, b)
        if not negative_zero_wins and x.dtype.is_floating() and _positive_zero(b):
            # max(v, +0.0) (ReLU): where the result is a zero, it is +0.0; v + 0.0 is v for
            # every other v (NaN included) and +0.0 for -0.0: one pass, not the zeros' four
            return _folded(_finish(np.add(out, out.dtype.type(0), out=out), x.dtype, shape),
                           x, y)
        if x.dtype.is_floating():  # the GPU's max.f32/min.f32 order -0.0 below +0.0
            both_zero = (a == 0) & (b == 0)
            if both_zero.any():
                signs = (np.signbit(a) | np.signbit(b)) if negative_zero_wins else \
                    (np.signbit(a) & np.signbit(b))
                out = np.where(both_zero, np.where(signs, -0.0, 0.0).astype(out.dtype), out)
        return _folded(_finish(out, x.dtype, shape), x, y)
    return op


def _positive_zero(b):
    """Whether the operand array `b` is one +0.0 (a literal or a uniform constant)."""
    return b.size == 1 and b.reshape(-1)[0] == 0 and not np.signbit(b.reshape(-1)[0])


# Triton's minimum/maximum return the non-NaN operand unless propagate_nan=ALL (fmin/fmax);
# max(-0.0, +0.0) is +0.0 and min(-0.0, +0.0) is -0.0, as the GPU's max.f32/min.f32
minimum = _minmax(np.minimum, np.fmin, negative_zero_wins=True)
maximum = _minmax(np.maximum, np.fmax, negative_zero_wins=False)


@elementwise
def where(condition, x, y):
    condition = cast(to_tensor(condition), _t.int1)
    x, y, shape = operands(x, y, True, True)
    if x.dtype != y.dtype or x.dtype.is_ptr() != y.dtype.is_ptr():
        raise CompilationError(f"tl.where: incompatible types {x.dtype!r} and {y.dtype!r}")
    shape = broadcast_shapes(condition.shape, shape)
    rank = len(shape)
    c = _expand(condition.data, condition, rank)
    a = _expand(x.data, x, rank)
    b = _expand(y.data, y, rank)
    origin = x.origin if x.origin is y.origin else None
    if x.dtype.is_ptr() and origin is None:
        origin = "mixed"
    return _folded(tensor(np.where(c, a, b), x.dtype, shape, origin), condition, x, y)


# Python's operators on tensors are these functions: `x + y` is add(x, y), `2 + x` add(2, x).
for _name, _fn in {"add": add, "sub": sub, "mul": mul, "truediv": truediv, "floordiv": floordiv,
                   "mod": mod, "and": and_, "or": or_, "xor": xor_, "lshift": lshift,
                   "rshift": rshift}.items():
    tensor_member(_fn, name=f"__{_name}__", reflected=f"__r{_name}__")
for _name, _fn in {"eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "neg": neg,
                   "invert": invert}.items():
    tensor_member(_fn, name=f"__{_name}__")
tensor_member(lambda self: self, name="__pos__")
tensor_member(cast)  # x.cast(tl.int64), as Triton's `_tensor_member_fn` gives tl.cast


@tensor_member(name="__pow__")
def _pow(a, b):
    raise CompilationError("`**` is not supported on Triton tensors; use tl.exp2/tl.log2 or "
                           "repeated multiplication (or tl.extra.libdevice.pow on the GPU)")

