"""One TMA reduction (`desc.atomic_add`, fp32, 8x32 blocks, 4x2 programs) into an M x 64
tensor at window offsets (+OM, +ON); prints the tensor's sum, or dies with the GPU's fault.
Run by descriptor_atomics.py, one process per case (a fault poisons the CUDA context).

    python _descriptor_atomic_child.py OM ON M
"""
import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def k(d, a_ptr, N, OM: tl.constexpr, ON: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    r, c = tl.arange(0, 8)[:, None], tl.arange(0, 32)[None, :]
    d.atomic_add([pm * 8 + OM, pn * 32 + ON], tl.load(a_ptr + (pm * 8 + r) * N + pn * 32 + c))


if __name__ == "__main__":
    om, on, M = map(int, sys.argv[1:])
    t = torch.zeros(M, 64, device="cuda")
    k[(4, 2)](TensorDescriptor.from_tensor(t, [8, 32]), torch.ones(32, 64, device="cuda"), 64,
              OM=om, ON=on)
    torch.cuda.synchronize()
    print("sum", t.sum().item())
