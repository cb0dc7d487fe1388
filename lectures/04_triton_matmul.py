"""Lecture 6 §8: tiled matmul with a fused ReLU. The read table of §8.3 (bigger tiles, less
traffic), exercise 4's grid, the transposed-input check; on a GPU, timings against cuBLAS.
"""
import torch

import minitriton
from tritonlab import backend

sim = backend.with_backend("tritonlab.kernels.matmul", "sim")
print(f"kernels run on: {backend.describe()}\n")

n = 256
a, b = torch.randn(n, n), torch.randn(n, n)
ref = torch.relu(a.double() @ b.double())
print(f"n = {n}: elements read and written by the lecture's kernel (BLOCK_K = 16)")
print(f"  {'tile':<9}{'programs':>9}{'read':>12}{'written':>10}{'max rel err':>13}")
for tile in (16, 32, 64, 128):
    with minitriton.record() as rec:
        c = sim.matmul_relu_lecture(a, b, tile, tile, 16)
    r = rec[0]
    err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
    print(f"  {f'{tile}x{tile}':<9}{r.num_programs:>9}{r.elements_read:>12,}"
          f"{r.elements_written:>10,}{err:>13.1e}")
print("  bigger tiles reuse each input element more: reads = n^3 (1/BM + 1/BN); writes = n^2\n")

M, K, N = 1000, 512, 700
a, b = torch.randn(M, K), torch.randn(K, N)
with minitriton.record() as rec:
    sim.matmul_relu_lecture(a, b, 64, 64, 32)
r = rec[0]
iterations = r.dot_flops // (2 * 64 * 64 * 32) // r.num_programs
print(f"exercise 4: ({M}x{K}) @ ({K}x{N}) with 64x64x32 tiles -> grid {r.grid} = "
      f"{r.grid[0]} x {r.grid[1]} = {r.num_programs} programs, {iterations} iterations along K "
      f"each")

at = torch.randn(K, M).t()  # a transposed view: strides (1, M)
c = sim.matmul_relu_lecture(at, b)
ref = torch.relu(at.double() @ b.double())
err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
print(f"transposed A (strides {at.stride()}): max relative error vs float64 = {err:.1e} "
      f"(fp32 inputs use TF32 tensor-core precision, ~1e-3)\n")

if backend.NAME == "triton":
    from tritonlab.kernels import matmul as mm
    bench = backend.triton.testing.do_bench
    print("GPU: relu(a @ b), median; TFLOP/s = 2 M N K / time")
    for dtype in (torch.bfloat16, torch.float16):
        for n in (1024, 4096):
            a = torch.randn(n, n, device="cuda", dtype=dtype)
            b = torch.randn(n, n, device="cuda", dtype=dtype)
            mm.matmul(a, b, "relu")  # autotune (large shapes) outside the timing
            torch_ms = bench(lambda: torch.relu(a @ b), return_mode="median")
            ours_ms = bench(lambda: mm.matmul(a, b, "relu"), return_mode="median")
            kernel, cfg = mm.matmul_plan(a, b, "relu")
            best = f"{kernel} kernel, " + " ".join(f"{k}={v}" for k, v in cfg.items()
                                                    if k.startswith(("BLOCK", "num_w", "num_s")))
            flops = 2 * n ** 3
            print(f"  {str(dtype)[6:]:<9} {n}^3  torch {flops / torch_ms / 1e9:6.0f}  triton "
                  f"{flops / ours_ms / 1e9:6.0f} TFLOP/s  ({torch_ms / ours_ms:.2f}x; {best})")
