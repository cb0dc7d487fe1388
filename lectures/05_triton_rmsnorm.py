"""Lecture 6 §9: fused RMSNorm, forward and backward, in autograd; exercise 6's data race and
exercise 8c's partial-dg buffer. On a GPU the forward and backward are also timed.
`--out DIR` (or `tritonlab lecture 05 --out DIR`): where the pictures of the backward go (which
program wrote which row of the partial-dg buffer: DIR/pictures/rmsnorm_backward.*, and the
kernel that sums that buffer into dg: DIR/pictures/rmsnorm_backward-2.*).
"""
import torch

from tritonlab.cli.lecture import lecture_options, save_pictures

lecture_options(__file__, __doc__)  # first: a bad TRITONLAB_BACKEND is one line

import minitriton  # noqa: E402
from tritonlab import backend  # noqa: E402
from tritonlab.kernels import rmsnorm as rn  # noqa: E402
from tritonlab.units import format_time  # noqa: E402


sim = backend.with_backend("tritonlab.kernels.rmsnorm", "sim")
print(f"kernels run on: {backend.describe()}\n")


def reference(x, g, dy, eps=1e-6):
    x, g = x.double().requires_grad_(), g.double().requires_grad_()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g
    y.backward(dy.double())
    return y, x.grad, g.grad


dev = backend.DEVICE
print("y, dx, dg against PyTorch autograd in float64 (max |diff|):")
for shape in [(16, 64), (4, 50, 384), (1000, 1024)]:
    x = torch.randn(*shape, device=dev, requires_grad=True)
    g = torch.randn(shape[-1], device=dev, requires_grad=True)
    dy = torch.randn(*shape, device=dev)
    y = rn.rmsnorm(x, g)
    y.backward(dy)
    ry, rdx, rdg = reference(x.detach(), g.detach(), dy)
    print(f"  {str(shape):<14} y {(y - ry).abs().max().item():.1e}   dx "
          f"{(x.grad - rdx).abs().max().item():.1e}   dg {(g.grad - rdg).abs().max().item():.1e}")

x64 = torch.randn(3, 5, 33, dtype=torch.float64, device=dev, requires_grad=True)
g64 = torch.randn(33, dtype=torch.float64, device=dev, requires_grad=True)
print(f"  torch.autograd.gradcheck in float64 (exercise 5): "
      f"{torch.autograd.gradcheck(rn.rmsnorm, (x64, g64))}\n")

# --- exercise 8c: rows per program -> partial dg buffer of one row per program
x, g, dy = torch.randn(4096, 256), torch.randn(256), torch.randn(4096, 256)
_, rstd = sim.rmsnorm_forward(x, g)
for rows in (1, 16, 128):
    with minitriton.record() as rec:
        sim.rmsnorm_backward(dy, x, g, rstd, rows_per_program=rows)
    partial = rec[0].args["dg_partial_ptr"].stored
    print(f"ROWS_PER_PROGRAM = {rows:>3}: {rec[0].num_programs:>4} programs, partial dg buffer "
          f"{partial // 256:>4} x 256 = {partial:,} floats")
x, g, dy = torch.randn(128, 64), torch.randn(64), torch.randn(128, 64)
_, rstd = sim.rmsnorm_forward(x, g)
with minitriton.trace() as traced:  # small, so that every element shows in the pictures
    sim.rmsnorm_backward(dy, x, g, rstd, rows_per_program=16)
save_pictures(traced, "rmsnorm_backward")
print()

# --- exercise 6: the racy backward
x, g, dy = torch.randn(64, 128), torch.randn(128), torch.randn(64, 128)
_, rstd = sim.rmsnorm_forward(x, g)
_, _, true_dg = reference(x, g, dy)
try:
    with minitriton.configure(races=True):
        sim.rmsnorm_backward_racy(dy, x, g, rstd)
except minitriton.RaceError as e:
    print("exercise 6, racy dg (load-add-store by every program), race sanitizer:")
    print("  " + "\n  ".join(str(e).splitlines()[:4]))
for executor in ("sequential", "lockstep"):
    with minitriton.configure(executor=executor):
        _, dg = sim.rmsnorm_backward_racy(dy, x, g, rstd)
    print(f"  {executor:<10} executor: max |dg - true dg| = {(dg - true_dg).abs().max().item():.2e}"
          + ("  (programs one at a time: the race stays hidden)" if executor == "sequential" else
             "  (programs together, as on a GPU: updates are lost)"))

if backend.NAME == "triton":
    bench = backend.triton.testing.do_bench
    print("\nGPU: RMSNorm 8192 x 4096 (median)")
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(8192, 4096, device="cuda", dtype=dtype, requires_grad=True)
        g = torch.ones(4096, device="cuda", dtype=dtype, requires_grad=True)
        dy = torch.randn_like(x)

        def eager(x, g):
            return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * g
        compiled = torch.compile(eager)
        for name, fn in [("torch eager", eager), ("torch.compile", compiled), ("triton", rn.rmsnorm)]:
            fwd = bench(lambda: fn(x, g), return_mode="median")
            both = bench(lambda: torch.autograd.grad(fn(x, g), (x, g), dy), return_mode="median")
            print(f"  {str(dtype)[6:]:<9} {name:<14} forward {format_time(fwd / 1e3):>9}   "
                  f"forward+backward {format_time(both / 1e3):>9}")
