"""Named workloads for the command line: each builds inputs for a size and returns fn()."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def manual_gelu(x):
    return 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def _matmul(n, device, dtype):
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    return lambda: a @ b


def _vector(fn):
    def make(n, device, dtype):
        x = torch.randn(n, n, device=device, dtype=dtype)
        return lambda: fn(x)
    return make


WORKLOADS = {
    "matmul": (_matmul, "a @ b for n x n matrices"),
    "gelu-manual": (_vector(manual_gelu), "GeLU from 9 basic PyTorch operations, on n x n"),
    "gelu": (_vector(lambda x: F.gelu(x, approximate="tanh")), "F.gelu(tanh) on n x n"),
    "softmax": (_vector(lambda x: torch.softmax(x, -1)), "torch.softmax over rows of n x n"),
}


def make(name, n, device, dtype=torch.float32):
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")
    return WORKLOADS[name][0](n, device, dtype)
