"""Lecture 6 §5: the first Triton kernels, vector add and fused GeLU.

What it shows: a grid of programs each handling one block; the mask on the last program; that
the fused GeLU reads x once and writes y once (counted by the simulator, whatever the machine);
and GeLU's agreement with PyTorch's tanh approximation. On a GPU it also times the kernels.
"""
import torch
import torch.nn.functional as F

import minitriton
from tritonlab import backend

sim = backend.with_backend("tritonlab.kernels.elementwise", "sim")  # counts need the simulator
print(f"kernels run on: {backend.describe()}\n")

# --- vector add, n = 1000, BLOCK_SIZE = 256 (counted on the simulator)
n, block = 1000, 256
x, y = torch.randn(n), torch.randn(n)
with minitriton.record() as rec:
    out = sim.add(x, y, block_size=block)
assert torch.equal(out, x + y)
launch = rec[0]
masked = launch.num_programs * block - n
print(f"add: n = {n}, BLOCK_SIZE = {block} -> grid {launch.grid} = {launch.num_programs} programs;"
      f" program {launch.num_programs - 1} masks its last {masked} lanes")
print(f"     elements read {launch.elements_read:,}, written {launch.elements_written:,} "
      f"(masked lanes are neither read nor written)")
print(launch.table())

# --- fused GeLU: x * sigmoid(2a) == 0.5 x (1 + tanh(a))
x = torch.randn(1 << 16)
with minitriton.record() as rec:
    y = sim.gelu(x)
diff = (y - F.gelu(x, approximate="tanh")).abs().max().item()
g = rec[0]
print(f"\ngelu: n = {x.numel():,}: max |triton - F.gelu(approximate='tanh')| = {diff:.1e}")
print(f"      fused kernel reads {g.elements_read:,} and writes {g.elements_written:,} elements; "
      f"the manual PyTorch version runs 9 kernels, each reading and writing the whole tensor")

with minitriton.record() as rec:
    sim.silu(x)
print(f"silu (exercise 8a): reads {rec[0].elements_read:,}, writes {rec[0].elements_written:,}")

if backend.NAME == "triton":
    from tritonlab.kernels import elementwise as ew

    def manual_gelu(t):
        return 0.5 * t * (1 + torch.tanh(0.7978845608028654 * (t + 0.044715 * t * t * t)))

    n = 1 << 28
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    bench = backend.triton.testing.do_bench
    rows = [("add", "torch a + b", lambda: a + b, 3), ("add", "triton add", lambda: ew.add(a, b), 3),
            ("gelu", "torch manual", lambda: manual_gelu(a), 2),
            ("gelu", "F.gelu tanh", lambda: F.gelu(a, approximate="tanh"), 2),
            ("gelu", "torch.compile", torch.compile(lambda t: F.gelu(t, approximate="tanh")), 2),
            ("gelu", "triton gelu", lambda: ew.gelu(a), 2)]
    print(f"\nGPU timings, n = 2^28 fp32 (median, GB/s counts each input read once and the "
          f"output written once)")
    for op, name, fn, tensors in rows:
        if name == "torch.compile":
            f, fn = fn, (lambda f=fn: f(a))
        ms = bench(fn, return_mode="median")
        print(f"  {op:<5} {name:<14} {ms * 1e3:9.1f} us  {tensors * 4 * n / ms / 1e6:7.0f} GB/s")
