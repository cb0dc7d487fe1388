"""Element-wise kernels (lecture §5): vector add, fused GeLU, fused SiLU.

One program handles BLOCK_SIZE consecutive elements; the last program masks the lanes past
the end. Each kernel reads its inputs once and writes its output once: everything in between
stays in registers (that is the point of fusion).
"""
from __future__ import annotations

import torch

from ..backend import DEVICE, tl, triton
from ._checks import check_inputs, grid_1d
from ._launch import launch

DEFAULT_BLOCK = 1024


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)  # read n
    y = tl.load(y_ptr + offsets, mask=mask)  # read n
    tl.store(out_ptr + offsets, x + y, mask=mask)  # write n


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # GeLU, tanh form: 0.5 x (1 + tanh(a)) = x * sigmoid(2a), a = sqrt(2/pi) (x + 0.044715 x^3)
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)  # read n; math in fp32
    a = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = x * tl.sigmoid(2.0 * a)
    tl.store(y_ptr + offsets, y, mask=mask)  # write n (cast back to the output's dtype)


@triton.jit
def silu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)  # read n
    tl.store(y_ptr + offsets, x * tl.sigmoid(x), mask=mask)  # write n


def _launch(kernel, inputs, block_size):
    out = torch.empty_like(inputs[0])
    n = out.numel()
    if n:
        launch(kernel, grid_1d(n, block_size), *inputs, out, n, BLOCK_SIZE=block_size)
    return out


def add(x, y, block_size=DEFAULT_BLOCK):
    """x + y for two tensors of the same shape and dtype (fp32/fp16/bf16)."""
    x, y = check_inputs("add", x, y, device=DEVICE)
    return _launch(add_kernel, (x, y), block_size)


def gelu(x, block_size=DEFAULT_BLOCK):
    """GeLU (tanh approximation), computed in fp32 and stored in x's dtype."""
    (x,) = check_inputs("gelu", x, device=DEVICE)
    return _launch(gelu_kernel, (x,), block_size)


def silu(x, block_size=DEFAULT_BLOCK):
    """SiLU, x * sigmoid(x), computed in fp32 and stored in x's dtype."""
    (x,) = check_inputs("silu", x, device=DEVICE)
    return _launch(silu_kernel, (x,), block_size)
