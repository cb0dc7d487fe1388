"""Probe: RMSNorm backward on rows of 16384-65536 columns (2^26 elements), CUDA-graph replays:
the whole-row kernel against the wide-row path (a chunked coefficient pass, then 2-D tiles
that keep dg per column block) over tile, warps and programs per SM; each variant's dx and dg
checked against float64 first. Both include the dg sum.
Decided: docs/decisions.md#rmsnorm-register-limits and #rmsnorm-wide-backward-tiles."""
from _common import report, tl, torch, triton, variant, wide_inputs
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels.tuning import tuning_for


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    t = tuning_for("rmsnorm", 0)
    for N in (16384, 32768, 65536):
        for dtype in (torch.bfloat16, torch.float32):
            M, x, g, dy, name = wide_inputs(N, dtype)
            _, rstd = rn._forward(x, g, 1e-6)
            x64 = x.double().requires_grad_()
            g64 = g.double().requires_grad_()
            (x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6) * g64).backward(
                dy.double())
            dx = torch.empty_like(x)
            coef = torch.empty_like(rstd)
            rows = []

            def errors(partial):
                """dx's and dg's relative errors against float64."""
                def rel(a, b):
                    return ((a.double() - b).norm() / b.norm()).item()
                return f"{rel(dx, x64.grad):.1e}/{rel(partial.sum(0), g64.grad):.1e}"

            for per_sm in (1, 2, 4):
                programs = min(M, per_sm * sms)
                rpp = triton.cdiv(M, programs)
                partial = torch.empty(triton.cdiv(M, rpp), N, device="cuda")
                if N <= 32768:
                    w = t.bwd_warps(N, x.element_size())
                    rows.append(variant(f"registers {per_sm}/SM w{w}", lambda: (
                        rn.rmsnorm_bwd_kernel[(partial.shape[0],)](
                            x, g, rstd, dy, dx, partial, M, N, rpp, BLOCK_SIZE=N,
                            ACC=tl.float32, num_warps=w), partial.sum(0)),
                        lambda part=partial: errors(part)))
            for bm, bn in ((2, 1024), (4, 1024), (8, 512), (4, 2048)):
                for w in (4, 8):
                    for per_sm in (2, 4, 8):
                        col_blocks = triton.cdiv(N, bn)
                        rpp = triton.cdiv(triton.cdiv(M, max(1, per_sm * sms // col_blocks)),
                                          bm) * bm
                        grid = (triton.cdiv(M, rpp), col_blocks)
                        partial = torch.empty(grid[0], N, device="cuda")

                        def run(grid=grid, partial=partial, rpp=rpp, bm=bm, bn=bn, w=w):
                            rn.rmsnorm_bwd_dot_kernel[(M,)](x, g, dy, rstd, coef, N,
                                                            CHUNK=t.wide_chunk, ACC=tl.float32,
                                                            num_warps=t.wide_warps)
                            rn.rmsnorm_bwd_tiled_kernel[grid](
                                x, g, rstd, coef, dy, dx, partial, M, N, rpp, BLOCK_M=bm,
                                BLOCK_N=bn, ACC=tl.float32, num_warps=w)
                            partial.sum(0)

                        rows.append(variant(f"tiles {bm}x{bn} {per_sm}/SM w{w}", run,
                                            lambda part=partial: errors(part)))
            report("bwd", name, rows, 3 * M * N * x.element_size())


if __name__ == "__main__":
    main()
