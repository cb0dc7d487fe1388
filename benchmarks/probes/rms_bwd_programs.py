"""Probe: warps and programs of the whole-row RMSNorm backward (kernel + dg sum), CUDA-graph
replays, at 4096x16384, 8192x4096 and 32768x1024 in bf16 and fp32.
Decided: docs/decisions.md#rmsnorm-backward-programs and #rmsnorm-backward-warps."""
from _common import dtype_name, tl, torch, triton, variant
from tritonlab.kernels import rmsnorm as rn


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for M, N in ((4096, 16384), (8192, 4096), (32768, 1024)):
        for dtype in (torch.bfloat16, torch.float32):
            x = torch.randn(M, N, device="cuda", dtype=dtype)
            g = torch.randn(N, device="cuda", dtype=dtype)
            dy = torch.randn_like(x)
            _, rstd = rn.rmsnorm_forward(x, g)
            dx = torch.empty_like(x)
            for programs in (sms, 2 * sms, 4 * sms):
                rows = triton.cdiv(M, programs)
                partial = torch.empty(triton.cdiv(M, rows), N, device="cuda")
                line = []
                for warps in (4, 8, 16, 32):
                    def run(warps=warps):
                        rn.rmsnorm_bwd_kernel[(partial.shape[0],)](
                            x, g, rstd, dy, dx, partial, M, N, rows, BLOCK_SIZE=N, ACC=tl.float32,
                            num_warps=warps)
                        partial.sum(0)
                    us, _, err = variant("", run)
                    line.append(f"w{warps} {err.split()[0]}" if err else f"w{warps} {us:6.1f}")
                print(f"bwd {M}x{N} {dtype_name(dtype):<9} programs {partial.shape[0]:>4}: "
                      + "  ".join(line), flush=True)


if __name__ == "__main__":
    main()
