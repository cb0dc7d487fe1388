"""Probe: tile, warps, stages and group size of the pointer matmul (`matmul_kernel`, fused
ReLU) for bf16 4096^3 against torch.relu(a @ b), and at 1024^3 the direct launch against
mm.matmul and torch; do_bench medians.
Decided: docs/decisions.md#matmul-pointer-configs."""
from _common import do_bench, relu_matmul_inputs, tflops, torch, triton, variant
from tritonlab.kernels import matmul as mm

TILES = [(128, 256, 64, 8, 3, 8), (128, 256, 64, 8, 4, 8), (256, 128, 64, 8, 3, 8),
         (256, 128, 64, 8, 4, 8), (128, 128, 64, 8, 4, 8), (128, 256, 32, 8, 4, 8),
         (128, 256, 64, 8, 3, 16), (256, 128, 64, 8, 3, 4)]  # BM, BN, BK, warps, stages, GROUP_M


def main():
    n = 4096
    a, b, c = relu_matmul_inputs(n, torch.bfloat16)
    print(f"torch relu(a@b) {tflops(n, do_bench(lambda: torch.relu(a @ b))):.0f} TFLOP/s",
          flush=True)
    for bm, bn, bk, w, s, gm in TILES:
        grid = (triton.cdiv(n, bm) * triton.cdiv(n, bn),)
        us, _, err = variant("", lambda: mm.matmul_kernel[grid](
            a, b, c, n, n, n, n, 1, n, 1, n, 1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm,
            ACTIVATION="relu", num_warps=w, num_stages=s), graph=False)
        print(f"  {bm}x{bn}x{bk} w{w} s{s} g{gm}: "
              + (err or f"{tflops(n, us / 1e3):.0f} TFLOP/s"), flush=True)
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    direct = do_bench(lambda: mm.matmul_kernel[(64,)](
        a, a, a, 1024, 1024, 1024, 1024, 1, 1024, 1, 1024, 1, BLOCK_M=128, BLOCK_N=128,
        BLOCK_K=64, GROUP_M=8, ACTIVATION="relu", num_warps=8, num_stages=4))
    full = do_bench(lambda: mm.matmul(a, a, "relu"))
    torch_ms = do_bench(lambda: torch.relu(a @ a))
    print(f"1024^3: direct launch {direct * 1e3:.1f} us, mm.matmul {full * 1e3:.1f} us, "
          f"torch {torch_ms * 1e3:.1f} us")


if __name__ == "__main__":
    main()
