"""`tl.dot_scaled`: the block product of microscaled operands (OCP MX formats, NVIDIA's nvfp4).

    acc = tl.dot_scaled(a, a_scale, "e2m1", b, b_scale, "e2m1", acc)   # (M, K//2) x (K//2, N)

Operands: "e2m1" (fp4) two to a uint8 byte, the first element in the low 4 bits, packed along K
(along M or N with `lhs_k_pack` / `rhs_k_pack` False); "e4m3" and "e5m2" as fp8 or as their
uint8 bits; "bf16" and "fp16" as themselves or as uint16 bits. Scales: e8m0 exponents (uint8,
2**(s - 127), 255 is NaN), one per 32 elements along K, shape [M, K // 32] for lhs and
[N, K // 32] for rhs (not transposed); float8e4nv scales take one per 16 elements (nvfp4); a
None scale leaves its operand unscaled.

The numerics are Triton 3.6's on GPUs without block-scaled MMA instructions (Hopper: the H100,
the H200), which decompose the op (DecomposeScaledBlocked): both operands are upcast to bf16
(fp16 when either format is fp16), multiplied there by their scales, and go to `tl.dot`, which
accumulates in fp32. So a scale byte of 0 multiplies by 0 (its bf16 has a zero exponent
field), not by 2**-127; a scaled value outside bf16's (fp16's) range becomes inf; and unless
`fast_math`, a NaN scale (255, or an e4m3 NaN) makes the elements it scales NaN. Measured on
an H200 against Triton 3.6 (tests/minitriton/test_dot_scaled.py): bit for bit where the fp32
sums are exact, within fp32 rounding of the sum otherwise (the order of `tl.dot`'s sums).

Where minitriton and Triton 3.6 part (found by compiling for sm_90 and sm_100): Triton's
compiler fails with an internal error, not a CompilationError, on bf16 x fp16 for both, and for
sm_90 on e4m3 scales (nvfp4) and on fp4 packed along M or N, which sm_100 compiles for 128-row
tiles (and runs with native instructions that scale inside the MMA, a path minitriton does not
model); minitriton computes all of these as above. And minitriton's `tl.dot` asks K >= 16,
which an unscaled dot_scaled does not need in Triton.
"""
from __future__ import annotations

import numpy as np

from .. import types as _t
from ..errors import CompilationError
from ..types import _unwrap
from .core import cast, tensor, to_tensor
from .dot import dot

FORMATS = {"e2m1": _t.uint8, "e4m3": _t.float8e4nv, "e5m2": _t.float8e5, "bf16": _t.bfloat16,
           "fp16": _t.float16}
BITS = {"e4m3": _t.uint8, "e5m2": _t.uint8, "bf16": _t.uint16, "fp16": _t.uint16}
NOT_YET = ("e2m3", "e3m2")  # Triton names these formats; 3.6's dot_scaled rejects them
# e2m1 by its 4-bit code: sign, 2 exponent bits, 1 mantissa bit
E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
               lhs_k_pack=True, rhs_k_pack=True, out_dtype=_t.float32):
    lhs, rhs = to_tensor(_unwrap(lhs)), to_tensor(_unwrap(rhs))
    lhs_format, rhs_format = _format(lhs_format, "lhs"), _format(rhs_format, "rhs")
    lhs_k_pack, rhs_k_pack = bool(_unwrap(lhs_k_pack)), bool(_unwrap(rhs_k_pack))
    if _unwrap(out_dtype) != _t.float32:
        raise CompilationError(f"Only float32 is supported for out_dtype at the moment (got "
                               f"{_unwrap(out_dtype)}); cast the result with `.to(...)`")
    if not len(lhs.shape) == len(rhs.shape) in (2, 3):
        raise CompilationError(f"Both inputs must be either 2D or 3D; (lhs: {lhs.shape} vs rhs: "
                               f"{rhs.shape})")
    lhs, rhs = _typed(lhs, lhs_format), _typed(rhs, rhs_format)
    for k_pack, fmt, side in ((lhs_k_pack, lhs_format, "lhs"), (rhs_k_pack, rhs_format, "rhs")):
        if not k_pack and fmt != "e2m1":
            raise CompilationError(f"only mxfp4 inputs can be packed along a dimension different "
                                   f"than K; {side}_format is {fmt}: pass {side}_k_pack=True")
    pack_a, pack_b = (2 if f == "e2m1" else 1 for f in (lhs_format, rhs_format))
    M, K = lhs.shape[-2:]
    K_rhs, N = rhs.shape[-2:]
    if lhs_k_pack:
        K *= pack_a
    else:
        M *= pack_a
    if rhs_k_pack:
        K_rhs *= pack_b
    else:
        N *= pack_b
    if K != K_rhs:
        raise CompilationError(f"Reduction dimension should pack the same number of elements; "
                               f"(lhs: {lhs.shape} vs rhs: {rhs.shape}): lhs holds K = {K}, rhs "
                               f"K = {K_rhs} (an e2m1 byte holds two elements)")
    lhs_scale = _scale(lhs_scale, M, K, "lhs", len(lhs.shape))
    rhs_scale = _scale(rhs_scale, N, K, "rhs", len(rhs.shape))
    shape = lhs.shape[:-2] + [M, N]
    if acc is not None:
        acc = to_tensor(_unwrap(acc))
        if acc.shape != shape or acc.dtype != _t.float32:
            raise CompilationError(f"the accumulator must be a {shape} block of fp32 (the "
                                   f"product's shape and out_dtype), got {acc.shape} of "
                                   f"{acc.dtype}")
    compute = _t.float16 if "fp16" in (lhs_format, rhs_format) else _t.bfloat16
    fast_math = bool(_unwrap(fast_math))
    a = _scaled(lhs, lhs_scale, lhs_format, lhs_k_pack, 0, compute, fast_math)
    b = _scaled(rhs, rhs_scale, rhs_format, rhs_k_pack, 1, compute, fast_math)
    with np.errstate(invalid="ignore"):  # NaN scales and inf * 0 make NaN, as on the GPU
        return dot(a, b, acc)


def _format(fmt, side):
    fmt = _unwrap(fmt)
    if not isinstance(fmt, str):
        raise CompilationError(f"{side}_format must be a string such as \"e2m1\", got {fmt!r}")
    if fmt in FORMATS:
        return fmt
    if fmt.lower() in FORMATS or fmt.lower() in NOT_YET:
        raise CompilationError(f"NYI: {side}_format {fmt}; dot_scaled takes "
                               f"{', '.join(FORMATS)} (lower case)")
    raise CompilationError(f"Invalid float format: {fmt}. dot_scaled takes "
                           f"{', '.join(FORMATS)}")


def _typed(x, fmt):
    """The operand as its format's type (bits are bitcast); e2m1 stays packed uint8."""
    if fmt == "e2m1":
        if x.dtype != _t.uint8:
            raise CompilationError(f"e2m1 format must be packed as uint8. Got {x.dtype}; pack "
                                   "two fp4 codes per byte (MXFP4Tensor.to_packed_tensor)")
        return x
    if x.dtype == FORMATS[fmt]:
        return x
    if x.dtype != BITS[fmt]:
        raise CompilationError(f"Unexpected dtype for {fmt}. Got {x.dtype}; pass "
                               f"{FORMATS[fmt]} values or their bits as {BITS[fmt]}")
    return cast(x, FORMATS[fmt], bitcast=True)


def _scale(scale, rows, K, side, rank):
    scale = _unwrap(scale)
    if scale is None:
        return None
    scale = to_tensor(scale)
    if rank == 3:
        raise CompilationError(f"{side}_scale given for 3D operands: Triton 3.6 checks scales "
                               "against [M, K // 32] only, so batched dot_scaled takes no "
                               "scales; loop over the batch with 2D blocks")
    if scale.dtype not in (_t.uint8, _t.int8, _t.float8e4nv):
        raise CompilationError(f"{side}_scale must hold e8m0 exponents as uint8 (or e4m3 scales "
                               f"as float8e4nv, for nvfp4), got {scale.dtype}")
    group = 16 if scale.dtype == _t.float8e4nv else 32
    if scale.shape != [rows, K // group] or K % group:
        raise CompilationError(f"{side}_scale must be a tensor of shape [{rows}, {K // group}]. "
                               f"Got {scale.shape}: one {scale.dtype} scale per {group} "
                               f"elements along K = {K}")
    return scale


def _scaled(x, scale, fmt, k_pack, op_idx, compute, fast_math):
    """The operand upcast to `compute` and multiplied there by its scales (block [M, K] for
    lhs, [K, N] for rhs), as Triton's decomposition does; padding marks travel along."""
    rank = len(x.shape)
    k_axis = rank - 1 if op_idx == 0 else rank - 2
    pad = x.pad
    if fmt == "e2m1":
        axis = k_axis if k_pack else (rank - 2 if op_idx == 0 else rank - 1)
        codes = np.stack([x.data & 0xF, x.data >> 4], axis=axis + 2)  # low bits first
        shape = list(x.shape)
        shape[axis] *= 2
        values = E2M1[codes.reshape((codes.shape[0], *shape))]
        if pad is not None:
            pad = np.repeat(pad, 2, axis=axis + 1)
    else:
        shape, values = list(x.shape), x.data.astype(np.float32)
    values = values.astype(compute.np)  # exact but for bf16 -> fp16, which rounds
    if scale is not None:
        factors, is_nan = _scale_factors(scale, compute)
        if op_idx == 1:  # [N, K / group] scales a [K, N] block
            factors, is_nan = np.swapaxes(factors, -1, -2), np.swapaxes(is_nan, -1, -2)
        group = shape[k_axis] // scale.shape[-1]
        factors = np.repeat(factors, group, axis=k_axis + 1)
        # both are 16-bit floats: their product is exact in fp32, rounded once to `compute`
        with np.errstate(all="ignore"):
            values = (values.astype(np.float32) * factors).astype(compute.np)
        if not fast_math:
            values = np.where(np.repeat(is_nan, group, axis=k_axis + 1),
                              np.array(np.nan, compute.np), values)
    out = tensor(values, compute, shape)
    out.pad = pad
    return out


def _scale_factors(scale, compute):
    """(the scales as `compute` values in fp32, where they are NaN). An e8m0 byte s becomes
    the fp32 with exponent field s (2**(s - 127); 0 for s = 0, inf for s = 255), converted to
    `compute`, as the GPU builds it."""
    if scale.dtype == _t.float8e4nv:
        factors = scale.data.astype(np.float32)
        is_nan = np.isnan(factors)
    else:
        bits = np.ascontiguousarray(scale.data).view(np.uint8)
        factors = (bits.astype(np.uint32) << 23).view(np.float32)
        is_nan = bits == 255
    with np.errstate(all="ignore"):
        return factors.astype(compute.np).astype(np.float32), is_nan
