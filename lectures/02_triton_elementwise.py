"""Lecture 6 §5: the first Triton kernels, vector add and fused GeLU.

What it shows: a grid of programs each handling one block; the mask on the last program; that
the fused GeLU reads x once and writes y once (counted by the simulator, whatever the machine);
and GeLU's agreement with PyTorch's tanh approximation. On a GPU it also times the kernels.
`--out DIR` (or `tritonlab lecture 02 --out DIR`): where the pictures of the add go (which
program wrote which element, the masked lanes; DIR/pictures/add.*).
"""
import torch
import torch.nn.functional as F

from tritonlab.cli.lecture import lecture_options, save_pictures

lecture_options(__file__, __doc__)  # first: a bad TRITONLAB_BACKEND is one line

import minitriton  # noqa: E402
from tritonlab import backend  # noqa: E402
from tritonlab.units import format_time  # noqa: E402


sim = backend.with_backend("tritonlab.kernels.elementwise", "sim")  # counts need the simulator
print(f"kernels run on: {backend.describe()}\n")

# --- vector add, n = 1000, BLOCK_SIZE = 256 (counted on the simulator)
n, block = 1000, 256
x, y = torch.randn(n), torch.randn(n)
with minitriton.record() as rec, minitriton.trace() as traced:
    out = sim.add(x, y, block_size=block)
assert torch.equal(out, x + y)
launch = rec[0]
masked = launch.num_programs * block - n
print(f"add: n = {n}, BLOCK_SIZE = {block} -> grid {launch.grid} = {launch.num_programs} programs;"
      f" program {launch.num_programs - 1} masks its last {masked} lanes")
print(f"     elements read {launch.elements_read:,}, written {launch.elements_written:,} "
      f"(masked lanes are neither read nor written)")
print(launch.table())
save_pictures(traced, "add")

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
    print("\nGPU timings, n = 2^28 fp32 (median, GB/s counts each input read once and the "
          "output written once)")
    for op, name, fn, tensors in rows:
        if name == "torch.compile":
            f, fn = fn, (lambda f=fn: f(a))
        ms = bench(fn, return_mode="median")
        print(f"  {op:<5} {name:<14} {format_time(ms / 1e3):>9}  "
              f"{tensors * 4 * n / ms / 1e6:7.0f} GB/s")

# --- §4: three abstractions side by side (CUDA C++ needs a CUDA compiler and GPU)
CUDA_SOURCE = r"""
__global__ void gelu_kernel(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;      // which thread am I?
    if (i < n) {                                         // bounds check
        float x = in[i];
        out[i] = 0.5f * x * (1.0f + tanhf(0.79788456f * (x + 0.044715f * x * x * x)));
    }
}
torch::Tensor gelu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    gelu_kernel<<<(n + 1023) / 1024, 1024>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
if backend.NAME != "triton":
    print("\n§4: the CUDA C++ GeLU (one thread per element) needs a CUDA compiler and GPU; its "
          "source:" + CUDA_SOURCE)
else:
    import re
    import shutil

    # PTX highlights of the compiled GeLU kernel
    n = 1 << 20
    xs = torch.randn(n, device="cuda")
    handle = ew.gelu_kernel[(n // 1024,)](xs, torch.empty_like(xs), n, BLOCK_SIZE=1024)
    ptx = handle.asm["ptx"]
    loads = sorted(set(re.findall(r"ld\.global[.\w]*", ptx)))
    stores = sorted(set(re.findall(r"st\.global[.\w]*", ptx)))
    warps = handle.metadata.num_warps
    print(f"\nPTX of gelu_kernel (BLOCK_SIZE 1024, {warps} warps = {warps * 32} threads):")
    print(f"  global loads: {loads}; global stores: {stores}")
    print(f"  %ctaid.x (program id) used: {'%ctaid.x' in ptx}; %tid.x (thread id) used: "
          f"{'%tid.x' in ptx}")
    print(f"  each thread handles 1024 / {warps * 32} = {1024 // (warps * 32)} elements "
          f"(thread coarsening; v4 = 4 floats per instruction)")

    if shutil.which("nvcc"):
        from torch.utils.cpp_extension import load_inline
        ext = load_inline("tritonlab_gelu_cuda", cpp_sources="torch::Tensor gelu(torch::Tensor x);",
                          cuda_sources=CUDA_SOURCE, functions=["gelu"], verbose=False)
        n = 1 << 28
        a = torch.randn(n, device="cuda")
        print("\n§4: the three abstractions, GeLU on 2^28 fp32 (median)")
        for name, fn in [("PyTorch manual", lambda: manual_gelu(a)),
                         ("PyTorch F.gelu", lambda: F.gelu(a, approximate="tanh")),
                         ("CUDA C++", lambda: ext.gelu(a)), ("Triton", lambda: ew.gelu(a))]:
            ms = bench(fn, return_mode="median")
            print(f"  {name:<15} {format_time(ms / 1e3):>9}  {8 * n / ms / 1e6:7.0f} GB/s")
        err = (ext.gelu(a) - F.gelu(a, approximate="tanh")).abs().max().item()
        print(f"  CUDA C++ vs F.gelu: max |diff| {err:.1e}")
