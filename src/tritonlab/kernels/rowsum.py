"""Row sum with an in-program loop over blocks (lecture §7).

One program per row; an accumulator of BLOCK_SIZE lanes lives in registers while the program
walks the row block by block, then one `tl.sum` folds it. The same skeleton (loop along one
dimension, partial results in registers) is that of tiled matmul and FlashAttention.
"""
from __future__ import annotations

import torch

from ..backend import DEVICE, tl, triton
from ._checks import FLOAT_DTYPES, check_inputs, compute_dtype
from ._launch import launch


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr,
                   ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK_SIZE], dtype=ACC)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=0.0).to(ACC)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))  # read N per row, write 1


def row_sum(x, block_size=1024):
    """x.sum(-1), accumulated in fp32 (fp64 for fp64), returned in x's dtype."""
    (x,) = check_inputs("row_sum", x, device=DEVICE, dtypes=FLOAT_DTYPES + (torch.float64,))
    n_cols = x.shape[-1] if x.dim() else 1
    x2 = x.reshape(-1, n_cols)
    out = torch.empty(x2.shape[0], dtype=x.dtype, device=x.device)
    if x2.shape[0]:
        if n_cols == 0:
            out.zero_()
        else:
            launch(row_sum_kernel, (x2.shape[0],), x2, out, n_cols, x2.stride(0),
                   BLOCK_SIZE=block_size, ACC=compute_dtype(x, tl))
    return out.reshape(x.shape[:-1])
