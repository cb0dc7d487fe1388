"""Probe: softmax and RMSNorm forward over whole rows by a few programs per SM that loop over
their rows, loading the next row before the current one is reduced and written (two rows in
flight per program, as the RMSNorm backward does: docs/decisions.md#rmsnorm-backward-prefetch),
against the default kernels (a program per row), Liger-Kernel and torch, over programs per SM
and warps, at 32768x1024, 8192x4096 and 4096x16384 in bf16 and fp32; checked against float64,
timed by CUDA-graph replays and do_bench (median of 3 interleaved).
Decides: docs/decisions.md#rows-prefetch."""
from _common import dtype_name, interleaved, softmax_check, tl, torch, triton
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import softmax as sm

try:
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
except ImportError:
    LigerRMSNormFunction = LigerSoftmaxFunction = None


@triton.jit
def softmax_loop_kernel(x_ptr, y_ptr, n_rows, n_cols, rows_per_program,
                        BLOCK_SIZE: tl.constexpr, ACC: tl.constexpr):
    cols = tl.arange(0, BLOCK_SIZE)
    col_mask = cols < n_cols
    first = tl.program_id(0).to(tl.int64) * rows_per_program
    x_next = tl.load(x_ptr + first * n_cols + cols, mask=col_mask & (first < n_rows),
                     other=float("-inf"))
    for i in range(0, rows_per_program):
        row = first + i
        x = x_next.to(ACC)
        ahead = col_mask & (row + 1 < n_rows) & (i + 1 < rows_per_program)
        x_next = tl.load(x_ptr + (row + 1) * n_cols + cols, mask=ahead, other=float("-inf"))
        num = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_ptr + row * n_cols + cols, num * (1.0 / tl.sum(num, axis=0)),
                 mask=col_mask & (row < n_rows))


@triton.jit
def rms_loop_kernel(x_ptr, g_ptr, y_ptr, rstd_ptr, n_rows, n_cols, eps, rows_per_program,
                    BLOCK_SIZE: tl.constexpr, ACC: tl.constexpr):
    cols = tl.arange(0, BLOCK_SIZE)
    col_mask = cols < n_cols
    g = tl.load(g_ptr + cols, mask=col_mask, other=0.0).to(ACC)
    first = tl.program_id(0).to(tl.int64) * rows_per_program
    x_next = tl.load(x_ptr + first * n_cols + cols, mask=col_mask & (first < n_rows), other=0.0)
    for i in range(0, rows_per_program):
        row = first + i
        x = x_next.to(ACC)
        ahead = col_mask & (row + 1 < n_rows) & (i + 1 < rows_per_program)
        x_next = tl.load(x_ptr + (row + 1) * n_cols + cols, mask=ahead, other=0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        tl.store(rstd_ptr + row, rstd, mask=row < n_rows)
        tl.store(y_ptr + row * n_cols + cols, x * rstd * g, mask=col_mask & (row < n_rows))


def grid_rows(M, per_sm):
    programs = min(M, per_sm * torch.cuda.get_device_properties(0).multi_processor_count)
    rows = triton.cdiv(M, programs)
    return triton.cdiv(M, rows), rows


def main():
    summary = []
    for (M, N) in ((32768, 1024), (8192, 4096), (4096, 16384)):
        for dtype in (torch.bfloat16, torch.float32):
            x = torch.randn(M, N, device="cuda", dtype=dtype) * 3
            g = torch.randn(N, device="cuda", dtype=dtype)
            y = torch.empty_like(x)
            rstd = torch.empty(M, device="cuda")
            block = triton.next_power_of_2(N)
            sm_check = softmax_check(x, y)
            want_rms = (x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6)
                        * g.double())

            def rms_check(out=None):
                got = (y if out is None else out).double()
                err = ((got - want_rms).abs().max() / want_rms.abs().max()).item()
                assert err < (2e-2 if dtype == torch.bfloat16 else 1e-5), err
                return f"{err:.1e}"
            for op in ("softmax", "rmsnorm fwd"):
                if op == "softmax":
                    impls = [("default", lambda: sm.softmax(x), lambda: sm_check(sm.softmax(x))),
                             ("torch", lambda: torch.softmax(x, -1), None)]
                    if LigerSoftmaxFunction is not None:
                        impls.append(("Liger", lambda: LigerSoftmaxFunction.apply(x), None))
                else:
                    impls = [("default", lambda: rn.rmsnorm(x, g),
                              lambda: rms_check(rn.rmsnorm(x, g)))]
                    if LigerRMSNormFunction is not None:
                        impls.append(("Liger", lambda: LigerRMSNormFunction.apply(
                            x, g, 1e-6, 0.0, "llama", False), None))
                for per_sm in (2, 4, 8):
                    programs, rows = grid_rows(M, per_sm)
                    for warps in (4, 8, 16):
                        if op == "softmax":
                            fn = (lambda p=programs, r=rows, w=warps: softmax_loop_kernel[(p,)](
                                x, y, M, N, r, BLOCK_SIZE=block, ACC=tl.float32, num_warps=w))
                            chk = sm_check
                        else:
                            fn = (lambda p=programs, r=rows, w=warps: rms_loop_kernel[(p,)](
                                x, g, y, rstd, M, N, 1e-6, r, BLOCK_SIZE=block, ACC=tl.float32,
                                num_warps=w))
                            chk = rms_check
                        impls.append((f"loop {per_sm}/SM w{warps}", fn, chk))
                rows_ = interleaved(impls)
                nbytes = 2 * M * N * x.element_size()
                name = f"{op} {M}x{N} {dtype_name(dtype)}"
                rows_.sort(key=lambda r: r[4])
                for label, _, err, gr, c in rows_[:6]:
                    print(f"{name:<28} {label:<16} do_bench {c:7.1f} us {nbytes / c / 1e3:6.0f} "
                          f"GB/s  graph {gr:7.1f} us {nbytes / gr / 1e3:6.0f} GB/s  err {err}",
                          flush=True)
                by = {r[0]: r for r in rows_}
                best = next(r for r in rows_ if r[0].startswith("loop"))
                d = by["default"]
                line = (f"{name:<28} best loop {best[0]} {nbytes / best[4] / 1e3:5.0f} GB/s "
                        f"({d[4] / best[4]:.3f}x default, graph {d[3] / best[3]:.3f}x)")
                if "Liger" in by:
                    line += f"; default {by['Liger'][4] / d[4]:.3f}x Liger"
                summary.append(line)
    print("\nsummary (do_bench medians of 3):")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
