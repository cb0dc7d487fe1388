"""`triton._C.libtriton.nvidia.cublas.CublasLt` under the runner (or install_as_triton): cuBLAS's entry points that
Triton's tutorials call as their baseline (09 `matmul`, 10 `block_scaled_matmul_mxfp8` and
`block_scaled_matmul_nvfp4`), computed with torch on the CPU.

* `matmul(a, b, c)`: c = a @ b.T (b is given as N x K, as the tutorials pass it). fp16/bf16 go
  through torch.matmul, which the runner's dispatch mode computes with the tensor cores' numerics
  (runner/torch_numerics.py); fp8 operands are widened to fp32 and the product cast to c's type.
* `block_scaled_matmul_mxfp8(a, b, out, a_scale, b_scale)`: a (M x K) and b (N x K) in fp8 e4m3,
  one E8M0 scale per 32 elements along K; `block_scaled_matmul_nvfp4`: a (M x K/2) and b
  (N x K/2) uint8 holding two e2m1 codes each (the first in the low 4 bits), one e4m3 scale per
  16 elements. Scales come flattened in cuBLAS's 128 x 4 block layout, the tensor
  (M/128, K/VEC/4, 32, 16) whose element [m0, k0, j, 4i + l] scales row 128 m0 + 32 i + j and
  group 4 k0 + l. The product of the scaled operands is summed in fp32 and written to `out`
  (fp16) - cuBLAS's own accumulation order is not modelled: the tutorials compare it with
  `atol=1e-3, rtol=1e-3`.
"""
from __future__ import annotations

import numpy as np

from ..tools.mxfp import E2M1_VALUES


def _torch():
    import torch
    return torch


def _unswizzle(scales, rows, groups):
    """Scales (flattened, cuBLAS's 128 x 4 layout) as a (rows, groups) float32 tensor."""
    torch = _torch()
    blocks = scales.reshape(-1, groups // 4, 32, 4, 4)  # (m0, k0, j, i, l)
    return blocks.permute(0, 3, 2, 1, 4).reshape(-1, groups)[:rows].to(torch.float32)


def _e8m0(codes):
    torch = _torch()
    e = codes.view(torch.uint8).to(torch.int32)
    values = torch.ldexp(torch.ones_like(e, dtype=torch.float32), e - 127)
    return torch.where(e == 255, torch.full_like(values, float("nan")), values)


def _e2m1(packed):
    """The values of a (rows, K/2) uint8 tensor of packed e2m1 codes, (rows, K) float32."""
    torch = _torch()
    p = packed.to(torch.int32)
    codes = torch.stack([p & 0xF, (p >> 4) & 0xF], dim=-1).reshape(p.shape[0], -1)
    magnitude = torch.from_numpy(np.asarray(E2M1_VALUES, np.float32))[codes & 7]
    return torch.where((codes & 8) != 0, -magnitude, magnitude)


class CublasLt:
    """cuBLASLt's handle, made with its workspace tensor (kept, unused)."""

    def __init__(self, workspace=None):
        self.workspace = workspace

    def matmul(self, a, b, c):
        torch = _torch()
        if a.dtype in (torch.float16, torch.bfloat16):
            c.copy_(torch.matmul(a, b.T))
        else:
            c.copy_(torch.matmul(a.to(torch.float32), b.to(torch.float32).T).to(c.dtype))
        return c

    def _scaled(self, a_values, b_values, out, a_scale, b_scale, vec):
        torch = _torch()
        M, K = a_values.shape
        N = b_values.shape[0]
        sa = _unswizzle(a_scale, M, K // vec).repeat_interleave(vec, dim=1)
        sb = _unswizzle(b_scale, N, K // vec).repeat_interleave(vec, dim=1)
        out.copy_(torch.matmul(a_values * sa, (b_values * sb).T).to(out.dtype))
        return out

    def block_scaled_matmul_mxfp8(self, a, b, out, a_scale, b_scale):
        torch = _torch()
        return self._scaled(a.to(torch.float32), b.to(torch.float32), out, _e8m0(a_scale),
                            _e8m0(b_scale), 32)

    def block_scaled_matmul_nvfp4(self, a, b, out, a_scale, b_scale):
        torch = _torch()
        return self._scaled(_e2m1(a), _e2m1(b), out, a_scale.to(torch.float32),
                            b_scale.to(torch.float32), 16)
