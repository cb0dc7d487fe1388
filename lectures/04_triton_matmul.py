"""Lecture 6 §8: tiled matmul with a fused ReLU. The read table of §8.3 (bigger tiles, less
traffic) with each load's coalescing and reuse, exercise 4's grid, the transposed-input check
and what a transposed A or a column-wise load does to the 32-byte sectors a GPU fetches; on a
GPU, timings against cuBLAS. `--out DIR` (or `tritonlab lecture 04 --out DIR`): where the
pictures of one program's A row-panel and B column-panel tiles along K go (DIR/pictures/matmul.*).
"""
import torch

from tritonlab.cli.lecture import lecture_options, save_pictures

lecture_options(__file__, __doc__)  # first: a bad TRITONLAB_BACKEND is one line

import minitriton  # noqa: E402
import minitriton.language as mtl  # noqa: E402
from tritonlab import backend  # noqa: E402


sim = backend.with_backend("tritonlab.kernels.matmul", "sim")
print(f"kernels run on: {backend.describe()}\n")

n = 256
a, b = torch.randn(n, n), torch.randn(n, n)
ref = torch.relu(a.double() @ b.double())


def line(record, text):
    """The memory-insight row (Settings.sectors, LaunchRecord.lines) of a kernel line."""
    return next(r for r in record.lines if text in r["source"])


print(f"n = {n}: elements read and written by the lecture's kernel (BLOCK_K = 16);")
print("  A eff, B eff: useful bytes / bytes of the 32-byte sectors each program access fetches")
print(f"  {'tile':<9}{'programs':>9}{'read':>12}{'written':>10}{'max rel err':>13}{'A eff':>7}"
      f"{'B eff':>7}{'unique/total read':>22}")
for tile in (16, 32, 64, 128):
    with minitriton.configure(sectors=True), minitriton.record() as rec:
        c = sim.matmul_relu_lecture(a, b, tile, tile, 16)
    r = rec[0]
    err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
    la, lb = line(r, "a = tl.load"), line(r, "b = tl.load")
    unique = (la["unique_bytes"] + lb["unique_bytes"]) / 2**10
    total = (la["total_bytes"] + lb["total_bytes"]) / 2**10
    print(f"  {f'{tile}x{tile}':<9}{r.num_programs:>9}{r.elements_read:>12,}"
          f"{r.elements_written:>10,}{err:>13.1e}{la['efficiency']:>7.2f}{lb['efficiency']:>7.2f}"
          f"{f'{unique:,.0f}/{total:,.0f} KiB':>22}")
print("  bigger tiles reuse each input element more: reads = n^3 (1/BM + 1/BN); writes = n^2;")
print("  every load is coalesced (rows of whole sectors); unique/total: an L2 big enough to keep")
print("  A and B would serve all but the first read of each element\n")

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


@minitriton.jit
def column_copy_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK: mtl.constexpr):
    col = mtl.program_id(0)  # one column of a row-major matrix per program
    rows = mtl.arange(0, BLOCK)
    column = mtl.load(x_ptr + rows * n_cols + col, mask=rows < n_rows)  # read n_rows, strided
    mtl.store(y_ptr + col * n_rows + rows, column, mask=rows < n_rows)  # write n_rows, contiguous


n = 256
a, b, at = torch.randn(n, n), torch.randn(n, n), torch.randn(n, n).t()
x = torch.randn(n, n)
with minitriton.configure(sectors=True, exact_dot=False), minitriton.record() as rec:
    sim.matmul_relu_lecture(a, b)
    sim.matmul_relu_lecture(at, b)
    column_copy_kernel[(n,)](x, torch.empty(n, n), n, n, BLOCK=n)
rows = [("A, row-major", line(rec[0], "a = tl.load")),
        ("B, row-major", line(rec[0], "b = tl.load")),
        (f"A, transposed (strides {at.stride()})", line(rec[1], "a = tl.load")),
        ("x[:, j] of a row-major x", line(rec[2], "column = mtl.load")),
        ("its store, contiguous", line(rec[2], "mtl.store"))]
print(f"coalescing, n = {n}, fp32, 64x64x32 tiles (a sector is 32 bytes, 8 fp32):")
print(f"  {'load':<32}{'sectors/access':>15}{'eff block':>11}{'eff warp':>10}"
      f"{'sectors/request':>17}")
for name, r in rows:
    print(f"  {name:<32}{r['sectors_per_access']:>15,.0f}{r['efficiency']:>11.3f}"
          f"{r['request_efficiency']:>10.3f}{r['sectors_per_request']:>17.1f}")
print("  eff block: distinct sectors of each program's access, what Triton's coalescing gets when")
print("  it sees a contiguous axis (a stride of 1 is specialised, so a transposed A gets threads")
print("  along M); eff warp: warps of 32 threads along the tile's last axis (K for A), like a CUDA")
print("  kernel with threadIdx.x on the column: a transposed A then fetches a sector per element.")
print("  A column of a row-major matrix has no contiguous axis: 4 useful bytes of each 32-byte")
print("  sector, whatever the layout. benchmarks/sectors_ncu.py measures them with Nsight "
      "Compute.\n")

# the tiles one program walks along K, drawn (n = 96, 32x32 tiles, BLOCK_K = 16: 3 x 3 programs)
a, b = torch.randn(96, 96), torch.randn(96, 96)
with minitriton.configure(sectors=True, exact_dot=False), minitriton.trace() as traced:
    sim.matmul_relu_lecture(a, b, 32, 32, 16)
print("one program's tiles (n = 96, 32x32 tiles, BLOCK_K = 16):")
save_pictures(traced, "matmul", program=(1, 1))
print()

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
