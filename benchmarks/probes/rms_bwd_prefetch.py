"""Probe: the whole-row RMSNorm backward (a program per few SMs' worth of rows, a loop over its
rows) with the next row's x and dy loaded before the current row is reduced and written
(PREFETCH: two rows in flight per program), and with Triton's num_stages on the loop,
against the kernel without, over programs per SM and warps, at 8192x4096 and 32768x1024
(bf16, fp32) and 4096x16384 bf16; the backward kernel plus the dg sum, checked against
the kernel without, timed by CUDA-graph replays and do_bench (median of 3 interleaved).
Decides: docs/decisions.md#rmsnorm-backward-prefetch."""
from _common import dtype_name, interleaved, tl, torch, triton
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels.tuning import tuning_for


def launcher(prefetch, x, g, rstd, dy, dx, dg, per_sm, warps, stages):
    M, N = x.shape
    block = triton.next_power_of_2(N)
    programs = min(M, per_sm * torch.cuda.get_device_properties(0).multi_processor_count)
    rows = triton.cdiv(M, programs)
    programs = triton.cdiv(M, rows)
    partial = torch.empty(programs, N, device="cuda", dtype=torch.float32)

    def run():
        rn.rmsnorm_bwd_kernel[(programs,)](x, g, rstd, dy, dx, partial, M, N, rows,
                                           BLOCK_SIZE=block, ACC=tl.float32, PREFETCH=prefetch,
                                           num_warps=warps, num_stages=stages)
        rn.rmsnorm_dg_sum_kernel[(triton.cdiv(N, rn.DG_BLOCK_N),)](
            partial, dg, programs, N, BLOCK_P=rn.DG_BLOCK_P, BLOCK_N=rn.DG_BLOCK_N,
            ACC=tl.float32)
    return run


def main():
    summary = []
    for (M, N), dtype in (((8192, 4096), torch.bfloat16), ((8192, 4096), torch.float32),
                          ((32768, 1024), torch.bfloat16), ((32768, 1024), torch.float32),
                          ((4096, 16384), torch.bfloat16)):
        x = torch.randn(M, N, device="cuda", dtype=dtype)
        g = torch.randn(N, device="cuda", dtype=dtype)
        dy = torch.randn_like(x)
        rstd = torch.rsqrt(x.float().pow(2).mean(-1) + 1e-6)
        dx, dg = torch.empty_like(x), torch.empty_like(g)
        ref_dx, ref_dg = torch.empty_like(x), torch.empty_like(g)
        t = tuning_for("rmsnorm", x.get_device())  # the rule without prefetch, from the code
        base_warps = t.bwd_warps(triton.next_power_of_2(N), x.element_size())
        base_per_sm = min(t.bwd_max_per_sm, max(1, t.bwd_cols_per_sm // N))
        launcher(False, x, g, rstd, dy, ref_dx, ref_dg, base_per_sm,
                 base_warps, 1)()

        def check():
            tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
            torch.testing.assert_close(dx.float(), ref_dx.float(), rtol=tol, atol=tol)
            torch.testing.assert_close(dg.float(), ref_dg.float(), rtol=tol, atol=tol * 10)
            dx.zero_()  # the next variant's check sees its own output
        impls = [(f"today {base_per_sm}/SM w{base_warps}",
                  launcher(False, x, g, rstd, dy, dx, dg, base_per_sm,
                           base_warps, 1))]
        for per_sm in (1, 2, 4):
            for warps in sorted({base_warps, 2 * base_warps, 8}):
                if warps > 32:
                    continue
                impls.append((f"prefetch {per_sm}/SM w{warps}",
                              launcher(True, x, g, rstd, dy, dx, dg, per_sm,
                                       warps, 1)))
            for stages in (2, 3):
                impls.append((f"today {per_sm}/SM w{base_warps} s{stages}",
                              launcher(False, x, g, rstd, dy, dx, dg, per_sm,
                                       base_warps, stages)))
        rows = interleaved([(label, fn, check) for label, fn in impls])
        nbytes = 3 * M * N * x.element_size()
        name = f"{M}x{N} {dtype_name(dtype)}"
        rows.sort(key=lambda r: r[3])
        for label, _, _, gr, c in rows[:8]:
            print(f"rms bwd {name:<18} {label:<22} graph {gr:7.1f} us {nbytes / gr / 1e3:6.0f} "
                  f"GB/s  do_bench {c:7.1f} us {nbytes / c / 1e3:6.0f} GB/s", flush=True)
        today = rows[[r[0] for r in rows].index(impls[0][0])]
        summary.append(f"{name:<18} best (graph) {rows[0][0]} {rows[0][3]:.1f} us, "
                       f"{today[3] / rows[0][3]:.3f}x today ({today[3]:.1f} us)")
    print("\nsummary (backward + dg sum, 3*MN bytes):")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
