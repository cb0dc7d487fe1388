"""Softmax over the last dimension (lecture §6, exercise 8b, and the online form of §5).

Three kernels, one pattern each:
  * `softmax_kernel`: one program per row, the whole row in one block (read MN, write MN);
  * `softmax_rows_kernel`: ROWS rows per program (thread coarsening for short rows);
  * `softmax_online_kernel`: rows longer than a block, in an in-program loop with a running
    max and sum (online softmax), then a second pass to write (read 2MN, write MN).
Masked lanes load -inf, whose exp is 0, so they change neither the max nor the sum. Math is
fp32 (fp64 for fp64 inputs); the output has the input's dtype. Which kernel a row length
takes, and its rows, block and warps, are the device's `SoftmaxTuning` (kernels/tuning.py).
"""
from __future__ import annotations

import torch

from ..backend import DEVICE, tl, triton
from ._checks import FLOAT_DTYPES, check_inputs, compute_dtype, num_warps_for
from ._launch import launch
from .tuning import tuning_for


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK_SIZE: tl.constexpr,
                   ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf")).to(ACC)  # read N
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(y_ptr + row * y_row_stride + cols, num / tl.sum(num, axis=0), mask=mask)  # write N


@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride,
                        BLOCK_SIZE: tl.constexpr, ROWS: tl.constexpr, ACC: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask,
                other=float("-inf")).to(ACC)  # read ROWS * N
    x = x - tl.max(x, axis=1, keep_dims=True)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=1, keep_dims=True)
    tl.store(y_ptr + rows[:, None] * y_row_stride + cols[None, :], y, mask=mask)  # write ROWS * N


@triton.jit
def softmax_online_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride,
                          BLOCK_SIZE: tl.constexpr, ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    m = tl.full([BLOCK_SIZE], float("-inf"), dtype=ACC)  # running max, per lane
    s = tl.zeros([BLOCK_SIZE], dtype=ACC)  # running sum of exp(x - m), per lane
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(ACC)  # read N
        m_new = tl.maximum(m, x)
        never = m_new == float("-inf")  # nothing finite seen yet: keep exp out of -inf - -inf
        s = tl.where(never, 0.0, s * tl.exp(m - m_new) + tl.exp(x - m_new))
        m = m_new
    m_row = tl.max(m, axis=0)
    s_row = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - m_row)), axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(ACC)  # read N again
        tl.store(y_ptr + row * y_row_stride + cols, tl.exp(x - m_row) / s_row, mask=mask)


def softmax(x, dim=-1, variant=None, block_size=None, rows_per_program=None):
    """softmax(x, dim) for fp32/fp16/bf16/fp64 tensors of any shape.

    `variant` ("row", "rows", "online") and `block_size` force a kernel (for teaching and
    tests); by default rows up to 16384 elements use one program per row (several rows per
    program below 1024), longer rows the online kernel."""
    (x,) = check_inputs("softmax", x, device=DEVICE, dtypes=FLOAT_DTYPES + (torch.float64,))
    x = x.movedim(dim, -1).contiguous()
    shape = x.shape
    n_cols = shape[-1] if x.dim() else 1
    x2 = x.reshape(-1, n_cols)
    y2 = torch.empty_like(x2)
    n_rows = x2.shape[0]
    if x2.numel() == 0:
        return y2.reshape(shape).movedim(-1, dim)
    block = triton.next_power_of_2(n_cols)
    t = tuning_for("softmax", x.get_device())
    if variant is None:
        variant = ("online" if block > t.max_row_block else "rows" if block < t.rows_below
                   else "row")
    acc = compute_dtype(x, tl)
    if variant == "row":
        launch(softmax_kernel, (n_rows,), x2, y2, n_cols, x2.stride(0), y2.stride(0),
               BLOCK_SIZE=block, ACC=acc, num_warps=num_warps_for(block))
    elif variant == "rows":
        rows = rows_per_program or max(1, min(t.max_rows, t.rows_elements // block))
        launch(softmax_rows_kernel, (triton.cdiv(n_rows, rows),),
            x2, y2, n_rows, n_cols, x2.stride(0), y2.stride(0), BLOCK_SIZE=block, ROWS=rows,
            ACC=acc, num_warps=num_warps_for(block * rows))
    elif variant == "online":
        block = block_size or min(block, t.online_block)
        launch(softmax_online_kernel, (n_rows,), x2, y2, n_cols, x2.stride(0), y2.stride(0),
               BLOCK_SIZE=block, ACC=acc, num_warps=t.online_warps)
    else:
        raise ValueError(f"softmax: unknown variant {variant!r} (row, rows, online)")
    return y2.reshape(shape).movedim(-1, dim)
