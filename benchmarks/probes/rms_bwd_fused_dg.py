"""Probe: RMSNorm's whole-row backward with dg's sum in the same launch
(rmsnorm_bwd_fused_kernel: the last `reducers` programs to finish sum dg's columns), against
today's backward kernel followed by rmsnorm_dg_sum_kernel, at the default plan's programs,
warps and PREFETCH/stages, at 8192x4096 and 32768x1024 in bf16 and fp32, with a copy of the
same 3·MN bytes timed beside them. Each variant is checked against today's (dx bit for bit,
dg within rounding: the same bits only where both kernels run with 4 warps, tl.sum's order
following the layout), then timed by CUDA-graph replays and do_bench (L2 flushed), three
interleaved repeats (median); the largest reducer count is capped at half the SMs by the
plan.
Decides: RMSNormTuning.bwd_fuse_dg (kernels/tuning.py; issue 37's RMSNorm forward+backward
rows, 0.62-0.89 of the copy on the H200 on 2026-12-06, where the dg sum alone took 2.9-4.5 us
of graph time on an H100).

    python benchmarks/probes/rms_bwd_fused_dg.py [MxN ...]
"""
import dataclasses

from _common import dtype_name, interleaved, shapes_from_argv, torch
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels.tuning import tuning_for

SHAPES = ((8192, 4096), (32768, 1024))
REDUCERS = (8, 16, 32, 64)


def main(shapes=SHAPES):
    summary = []
    for M, N in shapes:
        for dtype in (torch.bfloat16, torch.float32):
            x = torch.randn(M, N, device="cuda", dtype=dtype)
            g = torch.randn(N, device="cuda", dtype=dtype)
            dy = torch.randn_like(x)
            rstd = torch.rsqrt(x.float().pow(2).mean(-1) + 1e-6)
            plan = rn._Plan(x, g)
            if plan.dot is not None or plan.bwd_exchange is not None:
                print(f"{M}x{N} {dtype_name(dtype)}: not the whole-row backward")
                continue
            parts, rows = plan.partial_shape[0], plan.rows_per_program
            partial = torch.empty(plan.partial_shape, device="cuda", dtype=torch.float32)
            dx, dg = torch.empty_like(x), torch.empty_like(g)
            want_dx, want_dg = torch.empty_like(x), torch.empty_like(g)
            sync = torch.zeros(2, device="cuda", dtype=torch.int32)

            def today(dx=dx, dg=dg):
                plan.bwd(x, g, rstd, dy, dx, partial, M, N, rows)
                plan.dg_sum(partial, dg, parts, N)
            today(want_dx, want_dg)

            def check():  # dx the same bits; dg within rounding (tl.sum's order: the warps)
                assert torch.equal(dx, want_dx), "dx differs"
                tol = 1e-5 if dtype == torch.float32 else 1e-2
                # relative to the largest column: each is a sum over M rows in another order
                # (fp32 at 8192x4096: 2.3e-5 apart where |dg| reaches about 100)
                diff = (dg.float() - want_dg.float()).abs().max().item()
                big = want_dg.float().abs().max().item()
                assert diff <= tol * max(big, 1.0), f"dg {diff:.1e} apart (max |dg| {big:.1e})"
                assert not sync.any(), "counters not left zero"
                same = torch.equal(dg, want_dg)
                dx.zero_()
                dg.zero_()
                return "same bits" if same else f"dg max diff {diff:.1e}"
            t = tuning_for("rmsnorm", x.get_device())
            impls = [(f"today {parts} programs", today, check)]
            for reducers in REDUCERS:
                fused = rn._Plan(x, g, tuning=dataclasses.replace(t, bwd_fuse_dg=reducers))
                kernel, k = fused.bwd_fused

                def run(kernel=kernel, k=k):
                    kernel(x, g, rstd, dy, dx, partial, dg, sync, M, N, rows, k)
                impls.append((f"fused {k} reducers", run, check))
            src = torch.empty(3 * M * N // 2, device="cuda", dtype=dtype)
            dst = torch.empty_like(src)
            impls.append(("copy", lambda: dst.copy_(src), None))
            measured = interleaved(impls)
            by = {r[0]: (r[3], r[4]) for r in measured}
            copy = by.get("copy")
            name = f"{M}x{N} {dtype_name(dtype)}"
            for label, _, err, gr, c in sorted(measured, key=lambda r: r[3]):
                frac = f"of copy {copy[1] / c:.3f} ({copy[0] / gr:.3f})" if copy else ""
                print(f"rms bwd {name:<18} {label:<20} graph {gr:7.1f} us  do_bench {c:7.1f} us"
                      f"  {frac}  {err}", flush=True)
            base = by[impls[0][0]]
            best = min((v for k, v in by.items() if k.startswith("fused")), default=None,
                       key=lambda v: v[0])
            if best:
                label = next(k for k, v in by.items() if v == best)
                summary.append(f"{name:<18} today {base[0]:.1f} / {base[1]:.1f} us, {label} "
                               f"{best[0]:.1f} / {best[1]:.1f} us: {base[0] / best[0]:.3f}x / "
                               f"{base[1] / best[1]:.3f}x")
    print("\nsummary (graph / do_bench):")
    print("\n".join(summary))


if __name__ == "__main__":  # rms_bwd_fused_dg.py [MxN ...]: these shapes only
    main(shapes_from_argv(SHAPES))
