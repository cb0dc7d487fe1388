"""`tl.dot`: block matrix product with the GPU's numerics, bit for bit.

What an H200 (Triton 3.6) computes, measured with benchmarks/probes/dot_order.py (docs/numerics.md,
"tl.dot"), and followed here:

* fp16/bf16 operands, fp32 accumulator: a chain of tensor-core steps along K, 16 products per
  step (8 for TF32). A step adds its products, exact, to the accumulator: every term is cut
  toward zero to a multiple of 2**(e - 25), where e is the largest exponent among the
  accumulator's and the products' (a product's exponent taken as the sum of its operands'),
  and the sum is rounded toward zero to fp32. The chain starts from `acc`, so a K loop over
  blocks of any BLOCK_K gives the same bits as one dot over all of K.
* fp32 operands: by default (`input_precision="tf32"`) each operand is cut to TF32 (10
  explicit mantissa bits, low bits dropped) first, then summed as above, 8 per step; `"ieee"`
  (or `allow_tf32=False`) is a sequential fused multiply-add along K, as the GPU's FMA loop.
* int8 operands: int32 sums of 32 products per step, exact, each added to the accumulator with
  saturation at the int32 range (the `.satfinite` integer MMA). fp8 operands, fp16 accumulators and fp64: fp32
  (fp64) products summed by NumPy's matmul: within an fp32 rounding of the sum, not bit-exact
  (the H200 accumulates fp8 products with fewer bits; see docs/numerics.md).

Length: over 600 lines because the exact chain's NumPy reference, its compiled dispatch and
the chain summed behind the kernel (`accumulate`, `behind`) share the same private ranges and
operand forms (`_fast_operands`, `_OPERAND_EXP`, `_ACC_EXP`); split, each part would import the
others' private rules. The threads themselves are in dot_threads.py, the compiled loops in
dot_compiled.py.
"""
from __future__ import annotations

import importlib
import os

import numpy as np

from .. import types as _t
from ..context import active, current
from ..errors import CompilationError
from ..settings import current_settings, triton_release
from ..types import _unwrap
from .dot_threads import MIN_PART, WORKERS, chain, pool, run_split
from .shape import reshape
from .core import (_round_toward_zero, cast, deferred, expand_to_rank, mma_layout_record,
                   tensor, to_tensor)

PRECISIONS = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")
# NVIDIA's (M, N, K) >= (1, 1, MIN_K) by operand width: Triton 3.6's, and from 3.8 on (the
# backend's min_dot_size) fp32 from K = 8 and fp64 from K = 4
MIN_K = {8: 32, 16: 16, 32: 16, 64: 16}
MIN_K_38 = {8: 32, 16: 16, 32: 8, 64: 4}


def round_to_tf32(x):
    """Reduce fp32 values to TF32 (sign, 8 exponent bits, 10 mantissa bits) by dropping the low
    13 mantissa bits (truncation toward zero). That is what the H200's tensor cores do to fp32
    operands of a Triton 3.6 `tl.dot` in TF32 mode: measured with real Triton, see
    tests/minitriton/corpus/kernels.py::case_tf32_rounding and docs/numerics.md."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    bits = x.view(np.uint32) & np.uint32(0xFFFFE000)
    finite = np.isfinite(x)
    return bits.view(np.float32) if finite.all() else np.where(finite, bits.view(np.float32), x)


def _check_operand(x, side):
    if not x.shape:
        raise CompilationError("dot operands must be block tensors (not scalars)")
    ok = (_t.int8, _t.uint8, _t.float16, _t.bfloat16, _t.float32, _t.float64)
    if not (x.dtype in ok or x.dtype.is_fp8()):
        raise CompilationError(f"Unsupported {side} dtype {x.dtype}")


def dot(input, other, acc=None, input_precision=None, allow_tf32=None,
        max_num_imprecise_acc=None, out_dtype=_t.float32):
    ctx = current()
    a, b = to_tensor(_unwrap(input)), to_tensor(_unwrap(other))
    acc, out_dtype = _unwrap(acc), _unwrap(out_dtype)
    precision = _precision(_unwrap(input_precision), _unwrap(allow_tf32))
    _check_operand(a, "lhs")
    _check_operand(b, "rhs")
    if not (a.dtype.is_fp8() and b.dtype.is_fp8()) and a.dtype != b.dtype:
        raise CompilationError(f"Both operands must be same dtype. Got {a.dtype} and {b.dtype}")
    ra, rb = len(a.shape), len(b.shape)
    if ra >= 4 or rb >= 4:  # Triton 3.6's tl.dot: batch dimensions folded into one
        return _batched_dot(a, b, acc, input_precision, allow_tf32, max_num_imprecise_acc,
                            out_dtype)
    if not (ra == rb == 2 or ra == rb == 3):
        raise CompilationError(f"Both inputs must be either 2D or 3D; (lhs: {a.shape} vs rhs: "
                               f"{b.shape})")
    if a.shape[-1] != b.shape[-2]:
        raise CompilationError(
            f"First input shape ({a.shape}) and second input shape {b.shape} are not compatible "
            f"for matmul (second index of first shape ({a.shape[-1]}) must be equal to first "
            f"index of second shape ({b.shape[-2]})")
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    min_k = (MIN_K_38 if triton_release() >= (3, 8) else MIN_K)[a.dtype.primitive_bitwidth]
    if K < min_k:
        raise CompilationError(f"Input shapes should have M >= 1, N >= 1 and K >= {min_k} "
                               f"(got K = {K}; tl.dot needs K >= {min_k} for {a.dtype} operands)")
    if ra == 3 and a.shape[0] != b.shape[0]:
        raise CompilationError(f"batch dimensions differ: {a.shape} vs {b.shape}")
    if a.dtype.is_int():
        ret = _t.int32
    elif out_dtype == _t.bfloat16:
        raise CompilationError("out_dtype=bfloat16 is unsupported. Please use "
                               "out_dtype=float32/float16 and cast with `.to(tl.bfloat16)`")
    elif a.dtype in (_t.float32, _t.bfloat16):
        ret = _t.float32
    elif a.dtype == _t.float64:
        ret = _t.float64
    else:
        ret = out_dtype
    shape = [a.shape[0], M, N] if ra == 3 else [M, N]
    if acc is not None:
        acc = to_tensor(acc)
        if acc.shape != shape:
            raise CompilationError(f"expected accumulator shape {shape}, got {acc.shape}")
        if acc.dtype != out_dtype:  # also for int8 operands (Triton: an AssertionError)
            raise CompilationError(
                f"expected accumulator dtype {out_dtype}, got {acc.dtype} (Triton 3.6 "
                f"semantic.dot: `assert acc.type.shape == ret_ty.shape and acc.type.element_ty "
                f"== out_dtype`); pass out_dtype={acc.dtype} to use this accumulator dtype"
                + (" (an int8 dot with an int32 accumulator needs out_dtype=tl.int32)"
                   if a.dtype.is_int() else ""))
    flops = 2 * M * N * K * (a.shape[0] if ra == 3 else 1) * len(ctx.pids)
    for hook in ctx.hooks["on_dot"]:
        hook(a, b, flops)
    x, y = _operand_arrays(a, b, precision)
    # the result's layout: the MMA accumulator's, for a 2-D tensor-core dot (core.py, `layout`)
    layout = mma_layout_record(shape) if ra == 2 and _mma_steps(a.dtype, precision, ret) \
        else None
    steps = _mma_steps(a.dtype, precision, ret) if ctx.settings.exact_dot else None
    if steps is not None:
        if acc is None:  # `d + tl.dot(a, b)` continues the chain from d: the sum from 0 waits
            out = deferred(None, _t.float32, shape, make=lambda: mma_chain(x, y, None, steps))
            out.chain = (x, y, steps)
        else:  # as `acc += tl.dot(a, b)`: behind the kernel where it can be
            out = accumulate(x, y, lambda: expand_to_rank(acc, len(shape)), steps, shape)
        out.layout = layout
        return out
    if a.dtype.is_int():  # the integer MMA saturates: one step of 32 products at a time
        start = None if acc is None else expand_to_rank(acc, len(shape))
        out = tensor(int_mma_chain(x, y, start), _t.int32, shape)
        if acc is None:
            out.chain = (x, y, "int")
        return out
    out = np.matmul(x, y)
    if acc is not None:
        out = out + expand_to_rank(cast(acc, ret), len(shape)).astype(out.dtype)
    out = tensor(out, _t.float64 if out.dtype == np.float64 else
                 (_t.int32 if a.dtype.is_int() else _t.float32), shape)
    out.layout = layout
    return cast(out, ret)


def _batched_dot(a, b, acc, input_precision, allow_tf32, max_num_imprecise_acc, out_dtype):
    """tl.dot of rank-4+ blocks as Triton 3.6's language does it: the leading dimensions must
    match and are folded into one batch dimension of a 3-D dot, the result unfolded."""
    if len(a.shape) != len(b.shape):
        raise CompilationError(f"input and other must have equal ranks >= 2 (got {a.shape} "
                               f"and {b.shape})")
    if a.shape[:-2] != b.shape[:-2]:
        raise CompilationError(f"input and other must have equal batch shapes (got {a.shape} "
                               f"and {b.shape})")
    if a.shape[-1] != b.shape[-2]:
        raise CompilationError(f"input and other must have equal reduction dimensions (got "
                               f"{a.shape} and {b.shape})")
    shape = a.shape[:-1] + [b.shape[-1]]
    if acc is not None and list(to_tensor(acc).shape) != shape:
        raise CompilationError(f"accumulator shape is incompatible: {to_tensor(acc).shape}, "
                               f"expected {shape}")
    batch = int(np.prod(shape[:-2]))
    fold = lambda t, tail: reshape(t, [batch] + list(tail))  # noqa: E731
    out = dot(fold(a, a.shape[-2:]), fold(b, b.shape[-2:]),
              None if acc is None else fold(to_tensor(acc), shape[-2:]), input_precision,
              allow_tf32, max_num_imprecise_acc, out_dtype)
    return reshape(out, shape)


ALIGN_BITS = 25  # a tensor-core step keeps the terms' bits down to 2**(e - 25)
_NO_EXPONENT = -(1 << 20)  # the exponent of 0: below every other term's
_STEP_BYTES = 32 << 20  # memory for one step's products, per slice of programs


def _mma_steps(dtype, precision, ret):
    """Products per tensor-core step of this dot, 0 for a sequential FMA loop, None where
    minitriton sums with NumPy (see the module's docstring)."""
    if ret != _t.float32:
        return None
    if dtype in (_t.float16, _t.bfloat16):
        return 16
    if dtype == _t.float32:
        return 8 if precision == "tf32" else 0 if precision == "ieee" else None
    return None


def _exponents(v):
    """floor(log2 |v|) of float64 values, _NO_EXPONENT for zeros."""
    _, e = np.frexp(v)
    return np.where(v != 0, e - 1, _NO_EXPONENT).astype(np.int32)


_ASK = object()


def mma_chain(x, y, acc, step, compiled=_ASK):
    """x (..., M, K) @ y (..., K, N) in the GPU's order, from the fp32 accumulator `acc` (or
    zeros): `step` products per tensor-core step (0: one fused multiply-add per k).
    `compiled`: dot_compiled or None (NumPy), as `_compiled()` answers in the launch (a
    caller on another thread has no launch context to ask)."""
    lead = np.broadcast_shapes(np.shape(x)[:-2], np.shape(y)[:-2],
                               () if acc is None else np.shape(acc)[:-2])
    M, K, N = np.shape(x)[-2], np.shape(x)[-1], np.shape(y)[-1]
    x = np.broadcast_to(x, (*lead, M, K)).reshape(-1, M, K)
    y = np.broadcast_to(y, (*lead, K, N)).reshape(-1, K, N)
    out = (np.zeros((x.shape[0], M, N), np.float32) if acc is None else
           np.broadcast_to(np.asarray(acc, np.float32), (*lead, M, N)).reshape(-1, M, N)
           .copy())
    # inf * 0 and inf - inf: NaN, as on the GPU, without NumPy's warnings
    with np.errstate(invalid="ignore", over="ignore"):
        compiled = _compiled() if compiled is _ASK else compiled
        if compiled is not None:
            fast = _compiled_chain(compiled, x, y, out, step, acc is None)
        else:
            fast = bool(step) and _fast_chain(x, y, out, step, acc is None)
            if not fast:
                x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
                per = max(1, _STEP_BYTES // (8 * M * N * max(step, 1)))
                _chain_slices(x, y, out, per, step, M, N, K)
    if not fast:  # (the fast chains take no infinity or NaN and make none)
        _canonical_nans(out)
    return out.reshape((*lead, M, N))


def _canonical_nans(out):
    """NaNs of fp32 `out` as the GPU's canonical 0x7fffffff, in place: the NaN an x86 FPU makes
    (inf * 0: 0xffc00000) and the one it passes on (the first operand's) depend on the order of
    operations, which the GPU's do not show."""
    nan = np.isnan(out)
    if nan.any():
        out.view(np.uint32)[nan] = np.uint32(0x7FFFFFFF)


def _chain_slices(x, y, out, per, step, M, N, K):
    """The chain of mma_chain over slices of `per` programs, into `out`."""
    for lo in range(0, x.shape[0], per):
        part = slice(lo, lo + per)
        if step == 0:
            for k in range(K):  # one fma per k: the exact product, one rounding
                out[part] = (out[part].astype(np.float64) +
                             x[part, :, k, None] * y[part, None, k, :]).astype(np.float32)
            continue
        xs, ys = x[part], np.swapaxes(y[part], -1, -2)  # (P, M, K), (P, N, K)
        ex, ey = _exponents(xs), _exponents(ys)
        for k in range(0, K, step):
            ks = slice(k, k + step)
            # (P, M, N, step): the step's products, exact in float64, the step axis contiguous
            products = (np.ascontiguousarray(xs[:, :, ks])[:, :, None, :] *
                        np.ascontiguousarray(ys[:, :, ks])[:, None, :, :])
            accum = out[part].astype(np.float64)
            top = np.maximum((ex[:, :, None, ks] + ey[:, None, :, ks]).max(axis=3),
                             _exponents(accum))
            np.maximum(top, -900, out=top)  # all terms zero: any finite scale will do
            scale = np.ldexp(1.0, ALIGN_BITS - top)  # exact powers of two
            products *= scale[..., None]
            total = np.trunc(products, out=products).sum(axis=3) + np.trunc(accum * scale)
            out[part] = _round_toward_zero(total / scale, _t.float32)


# The fast chain (_fast_chain): the same sums as _chain_slices, bit for bit, in fp32 and int32
# where the operands allow it. Operands of at most 12 significant bits (fp16, bf16, TF32) whose
# nonzero exponents lie in [_OPERAND_EXP[0], _OPERAND_EXP[1]] have products exact in fp32 and
# at least 2**-74; an accumulator whose nonzero exponents lie in _ACC_EXP then keeps every
# nonzero partial sum at 2**-99 or more and below 2**110, so the step's scale 2**(25 - top) and
# its inverse are normal fp32 numbers, a scaled term is below 2**27 and the step's sum below
# 2**31 (int32), and the sum's rounding toward zero is its float64 value with the low 29
# mantissa bits cleared. A zero accumulator lane that is -0.0 (whose sign survives only where
# every term is -0.0) goes the float64 way.
_OPERAND_EXP = (-37, 40)
_ACC_EXP = (-99, 100)
_LOW_BITS = np.uint32(0xFFF)  # a 12-bit significand leaves the low 12 fp32 mantissa bits 0
_FAST_ELEMENTS = 1 << 17  # outputs per slice of programs: the step's arrays stay in cache
_TOP_FLOOR = -100  # below every top of a nonzero term (see _log_base_table)
_RTZ_MASK = np.uint64((1 << 64) - (1 << 29))


def _in_range(bits, exps):
    """Whether every nonzero fp32 value (as uint32 `bits`) has its exponent in `exps`: two
    reductions over the magnitudes (a zero's, less one, wraps above every bound)."""
    if not bits.size:
        return False
    mag = bits & np.uint32(0x7FFFFFFF)
    lo, hi = np.uint32((exps[0] + 127) << 23), np.uint32((exps[1] + 128) << 23)
    return bool(mag.max() < hi) and bool(np.subtract(mag, np.uint32(1), out=mag).min() >=
                                         lo - np.uint32(1))


def _fast_operand(v):
    """`v` as fp32 when the fast chain can take it, else None."""
    f = _exact_f32(v)
    if f is None:
        return None
    bits = f.view(np.uint32)
    if (bits & _LOW_BITS).any() or not _in_range(bits, _OPERAND_EXP):
        return None
    return f


def _fast_chain(x, y, out, step, zero=False):
    """mma_chain's sums into `out` (P, M, N), fp32, from x (P, M, K) and y (P, K, N), when the
    operands and the accumulator are in the fast chain's range (`zero`: `out` is all +0.0);
    False (nothing done) if not."""
    base_bits = 4 if step <= 8 else 5  # a sum of `step` powers of the base stays below the next
    xf, yf = _fast_operand(x), _fast_operand(y)
    if xf is None or yf is None:
        return False
    obits = out.view(np.uint32)
    if not zero and (not _in_range(obits, _ACC_EXP) or (obits == np.uint32(0x80000000)).any()):
        return False
    P, M, K = xf.shape
    N = yf.shape[-1]
    if K % step:  # zero products fill the last step: they change neither sums nor tops
        pad = step - K % step
        xf = np.concatenate([xf, np.zeros((P, M, pad), np.float32)], axis=2)
        yf = np.concatenate([yf, np.zeros((P, pad, N), np.float32)], axis=1)
        K += pad
    parts = max(-(-P * M * N // _FAST_ELEMENTS), min(WORKERS, P * M * N // MIN_PART))
    per = -(-P // max(parts, 1))
    slices = [slice(lo, lo + per) for lo in range(0, P, per)]
    ctx = active()  # the launch keeps each part's work arrays from one dot to the next
    work = [{} if ctx is None else ctx.scratch.setdefault(("dot", i), {})
            for i in range(len(slices))]
    if len(slices) == 1 or WORKERS == 1:
        for part, mine in zip(slices, work):
            _fast_slices(xf[part], yf[part], out[part], step, base_bits, mine)
        return True
    done = [pool().submit(_fast_slices_quiet, xf[part], yf[part], out[part], step, base_bits,
                           mine, _outer_broadcast) for part, mine in zip(slices, work)]
    for future in done:
        future.result()
    return True




def _fast_slices_quiet(*args):
    with np.errstate(invalid="ignore", over="ignore"):  # a thread's own NumPy error state
        _fast_slices(*args)


def _pow_exponents(f, base_bits, work, name):
    """b**e (float64, b = 2**base_bits) of the fp32 values' exponents e (normal values), 0 for
    zeros: 2**e is the value with its mantissa bits cleared, then powers of it (exact). In
    arrays of `work` (_work) under `name`."""
    bits = np.bitwise_and(f.view(np.uint32), np.uint32(0x7F800000),
                          out=_work(work, name + " bits", f.shape, np.uint32))
    p = _work(work, name + " p", f.shape, np.float64)
    p[...] = bits.view(np.float32)
    p4 = np.multiply(p, p, out=_work(work, name + " p4", f.shape, np.float64))
    np.multiply(p4, p4, out=p4)
    return p4 if base_bits == 4 else np.multiply(p4, p, out=p4)


def _log_base_table(base_bits):
    """For each biased float64 exponent E of a sum of b**(ex + ey), b = 2**base_bits: the fp32
    exponent field of top = floor((E - 1023) / base_bits), shifted into place (`(top + 127) <<
    23`); that of _TOP_FLOOR for E = 0, a sum of zeros (the scale of lanes whose terms are all
    zero: any finite one will do)."""
    top = (np.arange(2048, dtype=np.int32) - 1023) // base_bits
    top[0] = _TOP_FLOOR  # (an accumulator of 0 has the field of -127, below it)
    return np.maximum(top + 127, 0) << 23


_LOG_BASE = {4: _log_base_table(4), 5: _log_base_table(5)}
_EXPONENT_FIELD = np.int32(0x7F800000)
_SCALE_FIELD = np.uint32((ALIGN_BITS + 254) << 23)  # minus top's field: that of 2**(25 - top)


def _outer_einsum(x, y, out):
    """out[p, m, n] = x[p, m] * y[p, n]: einsum's loop, about 1.7x NumPy's broadcast multiply
    on rows of 64 outputs, but it holds the GIL (docs/performance.md, "Simulator speed")."""
    np.einsum("pm,pn->pmn", x, y, out=out)


def _outer_broadcast(x, y, out):
    """The same with NumPy's broadcast multiply, which releases the GIL: for worker threads."""
    np.multiply(x[:, :, None], y[:, None, :], out=out)


def _work(work, name, shape, dtype):
    """An uninitialised array from `work` (a dict kept by the launch), made if it has none of
    this shape: the dots of a launch reuse the same memory instead of fresh pages (a page
    fault costs as much as several passes over the page)."""
    found = work.get(name)
    if found is None or found.shape != shape or found.dtype != dtype:
        found = work[name] = np.empty(shape, dtype)
    return found


def _fast_slices(xf, yf, out, step, base_bits, work, outer=_outer_einsum):
    """The fast chain for one slice of programs, into `out` (P, M, N) fp32, in place, its
    temporaries taken from `work` (_work). The exponents are handled as fp32 exponent fields
    (`(e + 127) << 23`), so that the scale 2**(25 - top) and its inverse are one integer
    subtraction away from the step's top.

    A step's top among its products comes from one batched float64 matmul of b**e values,
    b = 2**base_bits: the step's sum of b**(ex + ey) lies in [b**top, step * b**top], below
    b**(top + 1) (and float64 rounds that sum by far less than the margin)."""
    P, M, K = xf.shape
    N = yf.shape[-1]
    steps = K // step
    ex = _work(work, "ex", (steps, P, M, step), np.float64)
    ex[...] = _pow_exponents(xf, base_bits, work, "x").reshape(P, M, steps, step).transpose(2, 0, 1, 3)
    ey = _work(work, "ey", (steps, P, step, N), np.float64)
    ey[...] = _pow_exponents(yf, base_bits, work, "y").reshape(P, steps, step, N).transpose(1, 0, 2, 3)
    xk = _work(work, "xk", (K, P, M), np.float32)
    xk[...] = np.moveaxis(xf, 2, 0)
    yk = _work(work, "yk", (K, P, N), np.float32)
    yk[...] = np.moveaxis(yf, 1, 0)
    table = _LOG_BASE[base_bits]
    sums, wide = (_work(work, name, (P, M, N), np.float64) for name in ("sums", "wide"))
    biased = sums.view(np.int64)
    top, field, total, iterm = (_work(work, name, (P, M, N), np.int32)
                                for name in ("top", "field", "total", "iterm"))
    term = _work(work, "term", (P, M, N), np.float32)
    bits = out.view(np.int32)
    for s in range(steps):
        np.matmul(ex[s], ey[s], out=sums)
        np.right_shift(biased, 52, out=biased)
        np.take(table, biased, out=top, mode="clip")  # the products' top
        np.bitwise_and(bits, _EXPONENT_FIELD, out=field)  # the accumulator's exponent
        np.maximum(top, field, out=top)
        np.subtract(_SCALE_FIELD, top.view(np.uint32), out=field.view(np.uint32))  # 2**(25 - top)
        scale = field.view(np.float32)
        np.multiply(out, scale, out=term)
        total[...] = term  # toward zero
        for k in range(s * step, (s + 1) * step):
            outer(xk[k], yk[k], term)  # exact in fp32
            np.multiply(term, scale, out=term)
            iterm[...] = term  # toward zero
            np.add(total, iterm, out=total)
        wide[...] = total
        np.bitwise_and(wide.view(np.uint64), _RTZ_MASK, out=wide.view(np.uint64))  # toward
        term[...] = wide  # zero, to fp32's 24 bits: exact
        np.subtract(top, ALIGN_BITS << 23, out=top)  # 2**(top - 25)
        np.multiply(term, top.view(np.float32), out=out)


INT_STEP = 32  # int8 products per integer MMA step (mma.sync m16n8k32, wgmma k32)


def int_mma_chain(x, y, acc):
    """x (..., M, K) @ y (..., K, N) of int8 values as the GPU's integer MMA computes it (its
    `.satfinite` form, which Triton emits): from the int32 accumulator `acc` (or zeros), each
    step of 32 products is added exactly and the sum clamped to the int32 range, so an
    overflowing `tl.dot(a, b, acc)` (or `tl.dot(a, b) + acc`, which Triton folds into it)
    saturates at 2**31 - 1 or -2**31 instead of wrapping around (fuzz case 524 on the H200)."""
    compiled = _compiled()
    if compiled is not None:
        lead = np.broadcast_shapes(np.shape(x)[:-2], np.shape(y)[:-2],
                                   () if acc is None else np.shape(acc)[:-2])
        M, K, N = np.shape(x)[-2], np.shape(x)[-1], np.shape(y)[-1]
        xs = np.ascontiguousarray(np.broadcast_to(x, (*lead, M, K)).reshape(-1, M, K), np.int32)
        ys = np.ascontiguousarray(np.broadcast_to(y, (*lead, K, N)).reshape(-1, K, N), np.int32)
        out = (np.zeros((xs.shape[0], M, N), np.int64) if acc is None else np.array(
            np.broadcast_to(acc, (*lead, M, N)).reshape(-1, M, N), np.int64))
        run_split(compiled.int_mma_chain, (xs, ys), out, INT_STEP)
        return out.astype(np.int32).reshape((*lead, M, N))
    x, y = np.asarray(x, np.int64), np.asarray(y, np.int64)
    K = x.shape[-1]
    lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    out = None if acc is None else np.asarray(acc, np.int64)
    for k in range(0, K, INT_STEP):
        step = np.matmul(x[..., k:k + INT_STEP], y[..., k:k + INT_STEP, :])
        out = np.clip(step if out is None else out + step, lo, hi)
    return out.astype(np.int32)


# The compiled chains (dot_compiled.py, numba: `pip install minitriton[fast]`): the same bits as
# the NumPy ones above, 5-20 times faster. Settings.dot_engine picks: "auto" (numba when it is
# installed), "numba" (an error when it is not), "numpy" (the reference).
_COMPILED = {}


def _compiled(name="dot_compiled"):
    """The compiled module `name` (imported at the first operation that asks) or None."""
    ctx = active()  # inside a launch its settings, without reading the environment again
    engine = (ctx.settings if ctx is not None else current_settings()).dot_engine
    if engine == "numpy":
        return None
    module = _COMPILED.get(name, False)
    if module is False:
        try:
            module = importlib.import_module(f"{__package__}.{name}")
        except ImportError as err:  # numba missing (or broken): the NumPy path
            module, _COMPILED["why"] = None, err
        _COMPILED[name] = module
    if module is None and engine == "numba":
        raise ImportError(f"Settings.dot_engine='numba' but numba cannot be imported "
                          f"({_COMPILED['why']}); install it with `pip install "
                          f"minitriton[fast]`, or use dot_engine='auto'") from _COMPILED["why"]
    return module


_MIN_BEHIND = 1 << 16  # multiply-adds below which a chain is not worth a thread's hand-off


def accumulate(x, y, start, step, shape):
    """The fp32 block of mma_chain(x, y, start(), step): summed on the chain's thread where
    `behind` takes it (deferred: read when something needs it), else now."""
    result = behind(x, y, start, step)
    if result is None:
        return tensor(mma_chain(x, y, start(), step), _t.float32, shape)
    return deferred(None, _t.float32, shape, make=result)


def behind(x, y, acc, step):
    """`mma_chain(x, y, acc(), step)` started on the chain's thread (dot_threads.chain), for
    `acc += tl.dot(a, b)`: a function that waits for its result, or None where the dot runs
    now (NumPy's chain, which holds the GIL, or a small dot). While the compiled chain sums
    (numba, without the GIL), the kernel's Python goes on to its next loads and masks; the
    result is read when something needs it (the next step's chain, on the same thread, in
    order). `acc` gives the accumulator's array: reading it there waits for the step before."""
    compiled = _compiled()
    if compiled is None or np.size(x) * np.shape(y)[-1] < _MIN_BEHIND:
        return None
    fast = _fast_operands(compiled, x, y) if step else None
    if fast is None:
        return chain(lambda: mma_chain(x, y, acc(), step, compiled))
    return chain(lambda: _fast_step(compiled, x, y, fast, acc(), step))


def _fast_operands(compiled, x, y):
    """x (P, M, K) and y (P, K, N) as the compiled fp32 chain takes them, made on the kernel's
    thread: (xf, yf, ex, ey), or None where that chain cannot take them. The chain's thread
    then runs compiled code alone (no GIL), instead of taking the GIL from the kernel's
    Python for each of a step's NumPy calls."""
    if np.ndim(x) == 3 and np.ndim(y) == 3:
        lead = max(x.shape[0], y.shape[0])
        xf = _exact_f32(np.broadcast_to(x, (lead, *x.shape[1:])))
        yf = _exact_f32(np.broadcast_to(y, (lead, *y.shape[1:])))
        if xf is not None and yf is not None:
            ex, ey = np.empty(xf.shape, np.int32), np.empty(yf.shape, np.int32)
            if compiled.fast_exponents(xf, ex, *_OPERAND_EXP) and \
                    compiled.fast_exponents(yf, ey, *_OPERAND_EXP):
                return xf, yf, ex, ey
    return None


def _fast_step(compiled, x, y, fast, start, step):
    """mma_chain(x, y, start, step) from `_fast_operands`'s arrays, on the chain's thread: the
    sums from `start` into a new array, or mma_chain itself where `start` is outside the fast
    chain's range."""
    xf, yf, ex, ey = fast
    shape = (xf.shape[0], xf.shape[1], yf.shape[2])
    if np.ndim(start) == 3 and np.asarray(start).dtype == np.float32:
        start = np.ascontiguousarray(np.broadcast_to(start, shape))  # (no copy if it is one)
        if compiled.fast_accumulator(start, *_ACC_EXP):
            out = np.empty(shape, np.float32)
            run_split(compiled.mma_chain_fp32, (xf, yf, ex, ey, start), out, step)
            return out
    return mma_chain(x, y, start, step, compiled)


def _compiled_chain(compiled, x, y, out, step, zero):
    """mma_chain's sums into `out` (P, M, N) by the compiled kernels: the fp32 one where
    _fast_chain's range conditions hold (True), else the float64 one or, for step 0, the FMA
    loop (False)."""
    fast = _fast_operands(compiled, x, y) if step else None
    if fast is not None and (zero or compiled.fast_accumulator(out, *_ACC_EXP)):
        run_split(compiled.mma_chain_fp32, (*fast, out), out, step)
        return True
    x64, y64 = np.ascontiguousarray(x, np.float64), np.ascontiguousarray(y, np.float64)
    if not step:
        run_split(compiled.fma_chain, (x64, y64), out)
        return False
    ex, ey = np.empty(x64.shape, np.int32), np.empty(y64.shape, np.int32)
    compiled.exponents(x64, ex)
    compiled.exponents(y64, ey)
    run_split(compiled.mma_chain, (x64, y64, ex, ey), out, step)
    return False


def _exact_f32(v):
    """`v` as a C-contiguous fp32 array if that holds its values exactly, else None."""
    f = np.ascontiguousarray(v, np.float32)
    if f.dtype != np.asarray(v).dtype and not np.array_equal(f, v):
        return None
    return f


def _precision(input_precision, allow_tf32):
    if input_precision is not None and allow_tf32 is not None:
        raise CompilationError("Only one of input_precision and allow_tf32 can be specified")
    if input_precision is None:
        if allow_tf32 is False:
            return "ieee"
        return os.environ.get("TRITON_F32_DEFAULT", "tf32")
    if str(input_precision).lower() not in PRECISIONS:
        raise CompilationError(f"input_precision must be one of {PRECISIONS}. Got "
                               f"{input_precision}")
    return str(input_precision).lower()


def _operand_arrays(a, b, precision):
    if a.dtype.is_int():
        return a.data.astype(np.int32), b.data.astype(np.int32)
    if a.dtype == _t.float64:
        return a.data, b.data
    if a.dtype == _t.float32 and precision == "tf32":  # (rounding makes the copies)
        return round_to_tf32(a.data), round_to_tf32(b.data)
    x, y = a.data.astype(np.float32), b.data.astype(np.float32)
    if a.dtype.value_scale != 1.0 or b.dtype.value_scale != 1.0:  # fp8e4b15 (types.py)
        x, y = x * np.float32(a.dtype.value_scale), y * np.float32(b.dtype.value_scale)
    if a.dtype == _t.float32 and precision != "ieee":
        # the 3/6-pass splits recover (nearly) full fp32 accuracy: compute in float64
        return x.astype(np.float64), y.astype(np.float64)
    return x, y
