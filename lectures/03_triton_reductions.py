"""Lecture 6 §6-7: reductions. Fused softmax (one program per row, and several rows per
program), the -inf padding of exercise 3, and the row sum's in-program loop.

Counts come from the simulator whatever the machine; on a GPU the kernels are also timed.
`--out DIR` (or `tritonlab lecture 03 --out DIR`): where the pictures of the rows-per-program
softmax go (DIR/pictures/softmax_rows.*).
"""
import torch

from tritonlab.cli.lecture import lecture_options, save_pictures

lecture_options(__file__, __doc__)  # first: a bad TRITONLAB_BACKEND is one line

import minitriton  # noqa: E402
import minitriton.language as mtl  # noqa: E402
from tritonlab import backend  # noqa: E402
from tritonlab.units import format_time  # noqa: E402


sim = backend.with_backend("tritonlab.kernels.softmax", "sim")
sim_rowsum = backend.with_backend("tritonlab.kernels.rowsum", "sim")
print(f"kernels run on: {backend.describe()}\n")

print("naive PyTorch softmax of an M x N matrix (CS336's count):")
for line, (r, w) in [("x_max = x.max(dim=1)", ("MN", "M")), ("x = x - x_max[:, None]", ("MN + M", "MN")),
                     ("num = torch.exp(x)", ("MN", "MN")), ("den = num.sum(dim=1)", ("MN", "M")),
                     ("y = num / den[:, None]", ("MN + M", "MN"))]:
    print(f"  {line:<26} read {r:<7} write {w}")
print("  total: read ~5MN, write ~3MN; fused: read MN, write MN\n")

# --- §6: one program per row, 300 x 781
M, N = 300, 781
x = torch.randn(M, N)
with minitriton.record() as rec:
    y = sim.softmax(x, variant="row")
launch = rec[0]
print(f"softmax {M}x{N}, BLOCK_SIZE = {minitriton.next_power_of_2(N)}: "
      f"{launch.num_programs} programs, max |diff| vs torch.softmax = "
      f"{(y - torch.softmax(x, 1)).abs().max().item():.1e}")
print(f"  elements read {launch.elements_read:,} = M*N = {M * N:,}: "
      f"{launch.elements_read == M * N}; written {launch.elements_written:,} = M*N: "
      f"{launch.elements_written == M * N}")

# --- exercise 8b: several rows per program
with minitriton.record() as rec:
    sim.softmax(x, variant="rows", rows_per_program=4)
print(f"  4 rows per program (exercise 8b): {rec[0].num_programs} programs instead of {M}, "
      f"same traffic ({rec[0].elements_read:,} read)")
with minitriton.trace() as traced:  # small, so that every element shows in the pictures
    sim.softmax(torch.randn(16, 100), variant="rows", rows_per_program=4)
save_pictures(traced, "softmax_rows")
print()


# --- exercise 3: pad with -inf, not 0
@minitriton.jit
def softmax_padded(x_ptr, y_ptr, n_cols, BLOCK: mtl.constexpr, OTHER: mtl.constexpr):
    row = mtl.program_id(0)
    cols = mtl.arange(0, BLOCK)
    mask = cols < n_cols
    x = mtl.load(x_ptr + row * n_cols + cols, mask=mask, other=OTHER)
    x = x - mtl.max(x, axis=0)
    num = mtl.exp(x)
    mtl.store(y_ptr + row * n_cols + cols, num / mtl.sum(num, axis=0), mask=mask)


neg = -torch.rand(4, 100) - 0.1  # every value negative, N not a power of two
print("exercise 3: all-negative rows of 100 values in a block of 128")
for other in (float("-inf"), 0.0):
    out = torch.empty_like(neg)
    softmax_padded[(4,)](neg, out, 100, BLOCK=128, OTHER=other)
    print(f"  other={other!s:>5}: row sums {[round(v, 4) for v in out.sum(1).tolist()]}")
try:
    softmax_padded[(4,)](neg, torch.empty_like(neg), 100, BLOCK=128, OTHER=0.0,
                         minitriton_settings=minitriton.Settings(padding=True))
except minitriton.PaddingError as e:
    print("  the padding sanitizer says:\n    " + str(e).splitlines()[-2])
print("  28 padded lanes each add e^(0 - 0) = 1 to the denominator: every row sums to less "
      "than 1\n")

# --- §7: row sum with an in-program loop
x = torch.randn(8, 4096)
with minitriton.record() as rec:
    s = sim_rowsum.row_sum(x, block_size=1024)
print(f"row sum of 4096-wide rows, BLOCK_SIZE = 1024: 4096 / 1024 = 4 loop iterations per "
      f"program, {rec[0].num_programs} programs; max |diff| vs x.sum(1) = "
      f"{(s - x.sum(1)).abs().max().item():.1e}; read {rec[0].elements_read:,} "
      f"(= 8 x 4096), written {rec[0].elements_written}")

# --- long rows: online softmax
x = torch.randn(4, 50000)
print(f"online softmax, rows of 50,000 (> one block): max |diff| = "
      f"{(sim.softmax(x) - torch.softmax(x, 1)).abs().max().item():.1e}")

if backend.NAME == "triton":
    from tritonlab.kernels import softmax as gpu_sm
    bench = backend.triton.testing.do_bench
    print("\nGPU: softmax 8192 x 4096 (median; GB/s counts reading x and writing y once)")
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(8192, 4096, device="cuda", dtype=dtype)
        compiled = torch.compile(lambda t: torch.softmax(t, -1))
        nbytes = 2 * x.numel() * x.element_size()
        for name, fn in [("torch.softmax", lambda: torch.softmax(x, -1)),
                         ("torch.compile", lambda: compiled(x)), ("triton", lambda: gpu_sm.softmax(x))]:
            ms = bench(fn, return_mode="median")
            print(f"  {str(dtype)[6:]:<9} {name:<14} {format_time(ms / 1e3):>9} "
                  f"{nbytes / ms / 1e6:7.0f} GB/s")
