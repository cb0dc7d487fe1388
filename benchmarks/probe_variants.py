"""GPU probe: time variants of the RMSNorm backward and matmul tiles, to choose defaults.

    python benchmarks/probe_variants.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

from tritonlab import backend  # noqa: E402
from tritonlab.kernels import matmul as mm  # noqa: E402
from tritonlab.kernels import rmsnorm as rn  # noqa: E402

bench = backend.triton.testing.do_bench
triton = backend.triton


def rms_bwd():
    for dtype in (torch.bfloat16, torch.float32):
        x = torch.randn(8192, 4096, device="cuda", dtype=dtype)
        g = torch.randn(4096, device="cuda", dtype=dtype)
        dy = torch.randn_like(x)
        _, rstd = rn.rmsnorm_forward(x, g)
        for rows in (1, 2, 4, 8, 16, 32):
            for warps in (4, 8, 16):
                programs = triton.cdiv(8192, rows)
                partial = torch.empty(programs, 4096, device="cuda")
                dx = torch.empty_like(x)

                def run():
                    rn.rmsnorm_bwd_kernel[(programs,)](
                        x, g, rstd, dy, dx, partial, 8192, 4096, BLOCK_SIZE=4096,
                        ROWS_PER_PROGRAM=rows, ACC=backend.tl.float32, num_warps=warps)
                    partial.sum(0)
                ms = bench(run, return_mode="median")
                print(f"rms bwd {str(dtype)[6:]:<9} rows/program {rows:>3} warps {warps:>2}: "
                      f"{ms * 1e3:7.1f} us", flush=True)


def matmul_tiles():
    n = 4096
    for dtype in (torch.bfloat16,):
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        c = torch.empty(n, n, device="cuda", dtype=dtype)
        ref = bench(lambda: torch.relu(a @ b), return_mode="median")
        print(f"torch relu(a@b) {2 * n ** 3 / ref / 1e9:.0f} TFLOP/s", flush=True)
        for bm, bn, bk, w, s, gm in [(128, 256, 64, 8, 3, 8), (128, 256, 64, 8, 4, 8),
                                     (256, 128, 64, 8, 3, 8), (256, 128, 64, 8, 4, 8),
                                     (128, 128, 64, 8, 4, 8), (128, 256, 32, 8, 4, 8),
                                     (128, 256, 64, 8, 3, 16), (256, 128, 64, 8, 3, 4)]:
            grid = (triton.cdiv(n, bm) * triton.cdiv(n, bn),)
            try:
                ms = bench(lambda: mm.matmul_kernel[grid](
                    a, b, c, n, n, n, n, 1, n, 1, n, 1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                    GROUP_M=gm, ACTIVATION="relu", num_warps=w, num_stages=s),
                    return_mode="median")
                print(f"  {bm}x{bn}x{bk} w{w} s{s} g{gm}: {2 * n ** 3 / ms / 1e9:.0f} TFLOP/s",
                      flush=True)
            except Exception as e:  # out of shared memory for some tiles
                print(f"  {bm}x{bn}x{bk} w{w} s{s}: {type(e).__name__}")
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    direct = bench(lambda: mm.matmul_kernel[(64,)](
        a, a, a, 1024, 1024, 1024, 1024, 1, 1024, 1, 1024, 1, BLOCK_M=128, BLOCK_N=128,
        BLOCK_K=64, GROUP_M=8, ACTIVATION="relu", num_warps=8, num_stages=4),
        return_mode="median")
    full = bench(lambda: mm.matmul(a, a, "relu"), return_mode="median")
    torch_t = bench(lambda: torch.relu(a @ a), return_mode="median")
    print(f"1024^3: direct launch {direct * 1e3:.1f} us, mm.matmul {full * 1e3:.1f} us, "
          f"torch {torch_t * 1e3:.1f} us")


if __name__ == "__main__":
    rms_bwd()
    matmul_tiles()
