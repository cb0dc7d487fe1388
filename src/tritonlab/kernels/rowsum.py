"""Row sum with an in-program loop over blocks (lecture §7).

`row_sum_kernel`, the lecture's: one program per row; an accumulator of BLOCK_SIZE lanes lives
in registers while the program walks the row block by block, then one `tl.sum` folds it. The
same skeleton (loop along one dimension, partial results in registers) is that of tiled matmul
and FlashAttention. It runs when a block_size is given. By default `row_sum_rows_kernel` runs:
the same loop over ROWS rows at once (2 for rows of up to 1024 columns), blocks of 2048, its
loads marked evict_first (each element is read once) and one warp per 512 bytes of a block
(1024 for short rows): 1.1-1.2x the lecture kernel's bandwidth on the H200
(docs/decisions.md#rowsum-tiles; `RowSumTuning`).

`row_sum` is a custom operator (kernels/ops.py); its gradient is dy broadcast along the row
(an expand, no kernel), so gradients of any order work.
"""
from __future__ import annotations

import math

import torch

from ..backend import DEVICE, tl, triton
from . import _native, ops
from ._checks import FLOAT64_DTYPES, check_inputs, compute_dtype
from ._launch import Bound, PlanCache
from .tuning import tuning_for


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr,
                   ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK_SIZE], dtype=ACC)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=0.0).to(ACC)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))  # read N per row, write 1


@triton.jit
def row_sum_rows_kernel(x_ptr, out_ptr, n_rows, n_cols, row_stride, BLOCK_SIZE: tl.constexpr,
                        ROWS: tl.constexpr, ACC: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    acc = tl.zeros([ROWS, BLOCK_SIZE], dtype=ACC)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        acc += tl.load(x_ptr + rows[:, None] * row_stride + cols[None, :], mask=mask,
                       other=0.0, eviction_policy="evict_first").to(ACC)  # read once
    tl.store(out_ptr + rows, tl.sum(acc, axis=1), mask=rows < n_rows)  # write ROWS


def _bound(x, n_rows, n_cols, block_size):
    """The launch of a (rows, N) block, and its arguments after x and out: the lecture's kernel
    with its block where one is given, else the tuned rows kernel."""
    acc = compute_dtype(x, tl)
    if block_size is not None:
        return (Bound(row_sum_kernel, (n_rows,), BLOCK_SIZE=block_size, ACC=acc),
                (n_cols, n_cols))
    t = tuning_for("rowsum", x.get_device())
    width = triton.next_power_of_2(n_cols)
    rows = t.short_rows if width <= t.short_cols else 1
    block = min(width, t.block)
    per_warp = t.short_bytes_per_warp if rows > 1 else t.bytes_per_warp
    warps = max(t.min_warps, min(t.max_warps, block * rows * x.element_size() // per_warp))
    return (Bound(row_sum_rows_kernel, (triton.cdiv(n_rows, rows),), BLOCK_SIZE=block,
                  ROWS=rows, ACC=acc, num_warps=warps), (n_rows, n_cols, n_cols))


def _check(x):
    check_inputs("row_sum", x, device=DEVICE, dtypes=FLOAT64_DTYPES, contiguous=False)


class _Plan:
    """One signature of row_sum's input (shape, dtype, device, block): checked, and its launch
    bound, once (`_launch.PlanCache`)."""

    def __init__(self, x, block_size):
        _check(x)
        n_cols = x.shape[-1] if x.dim() else 1
        self.rows2d, self.out_shape = (math.prod(x.shape[:-1]), n_cols), x.shape[:-1]
        self.flat_in, self.flat_out = x.dim() != 2, len(self.out_shape) != 1
        self.kernel, self.tail = (_bound(x, *self.rows2d, block_size)
                                  if self.rows2d[0] and n_cols else (None, ()))


_PLANS = PlanCache()


def _signature(x, block_size):
    return x.shape, x.dtype, x.device, block_size


def _row_sum_impl(x, block_size):
    plan = _PLANS.of(_signature, _Plan, x, block_size)
    x2 = x.contiguous()
    if plan.flat_in:
        x2 = x2.reshape(plan.rows2d)
    out = torch.empty(plan.rows2d[0], dtype=x.dtype, device=x.device)
    if plan.kernel is not None:
        plan.kernel(x2, out, *plan.tail)
    elif plan.rows2d[0]:
        out.zero_()  # the sum of nothing, as torch gives it
    return out.reshape(plan.out_shape) if plan.flat_out else out


def _row_sum_fake(x, block_size):
    _check(x)
    return x.new_empty(x.shape[:-1])


def _setup(ctx, inputs, output):
    ctx.shape = inputs[0].shape


def _backward(ctx, dy):
    shape = ctx.shape
    return (dy.unsqueeze(-1).expand(shape) if len(shape) else dy), None


row_sum_op = ops.define(__name__, "row_sum", "(Tensor x, int? block_size) -> Tensor",
                        _row_sum_impl, _row_sum_fake, _backward, _setup)


def _describe(options, x):
    """The native plan (kernels/_native.py) of row_sum: the kernel's one launch; the gradient
    is dy broadcast over the last dimension."""
    plan = _PLANS.of(_signature, _Plan, x, *options)
    if x.dim() == 0 or plan.kernel is None:
        return "a 0-d or empty x"
    S = _native.Slot
    return _native.plan((x,), [(plan.out_shape, x.dtype)],
                        [(plan.kernel, (S(0), S(1), *plan.tail))], S(1), backward=[],
                        grads=[_native.GRAD_EXPAND_DY])


_native_row_sum = _native.NativeOp("TritonlabRowSumBackward", _describe,
                                   enabled=DEVICE == "cuda")


def row_sum(x, block_size=None):
    """x.sum(-1) for fp32/fp16/bf16/fp64, accumulated in fp32 (fp64 for fp64), returned in x's
    dtype; differentiable (any order). `block_size` runs the lecture's one-row kernel with
    that block (a power of two); by default the tuned kernel runs."""
    out = _native_row_sum((block_size,), x)
    if out is not None:
        return out
    ops.require_tensors("row_sum", x)
    return row_sum_op(x, block_size)
