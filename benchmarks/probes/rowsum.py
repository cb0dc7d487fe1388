"""Probe: row sums (issue 17 asks 3.5 TB/s in bf16 and 3.9 in fp32 at 8192x4096, do_bench time)
over block, warps and rows per program, against the lecture's one-row kernel (row_sum.row_sum,
block 1024, 4 warps) and torch's x.sum(-1), at 8192x4096, 32768x1024, 4096x16384 and
1024x65536 in bf16 and fp32; each variant checked against a float64 sum first, then timed
twice: do_bench (L2 flushed before each call: the cold read issue 17 measures) and CUDA-graph
replays (warm L2: part of a 64 MiB input stays in the 50 MiB L2 between replays).
Not yet run (written 2026-12-02, for the next GPU session); decides nothing until it has."""
from _common import do_bench, dtype_name, report, tl, torch, triton, variant
from tritonlab.kernels import rowsum


@triton.jit
def rowsum_tiles_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr, ROWS: tl.constexpr,
                        ACC: tl.constexpr, EV: tl.constexpr):
    # ROWS rows per program, each a BLOCK-wide accumulator walking its row
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    acc = tl.zeros([ROWS, BLOCK], dtype=ACC)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        acc += tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0,
                       eviction_policy=EV).to(ACC)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1), mask=rows < n_rows)


def main():
    for M, N in ((8192, 4096), (32768, 1024), (4096, 16384), (1024, 65536)):
        for dtype in (torch.bfloat16, torch.float32):
            x = torch.randn(M, N, device="cuda", dtype=dtype)
            out = torch.empty(M, device="cuda", dtype=dtype)
            want = x.double().sum(-1)
            tol = 1e-2 if dtype == torch.bfloat16 else 1e-4

            def check():
                err = ((out.double() - want).abs() / (want.abs() + N ** 0.5)).max().item()
                assert err < tol, err
                return f"{err:.1e}"
            cold = []
            rows = [variant("torch x.sum(-1)", lambda: torch.sum(x, -1, out=out), check),
                    variant("row_sum.row_sum (lecture)", lambda: rowsum.row_sum(x))]
            cold.append((do_bench(lambda: torch.sum(x, -1, out=out)) * 1e3, "torch x.sum(-1)", ""))
            cold.append((do_bench(lambda: rowsum.row_sum(x)) * 1e3, "row_sum.row_sum", ""))
            for block in (1024, 2048, 4096):
                for r in (1, 2, 4):
                    for warps in (4, 8, 16):
                        if block * r > 16384 or block > N:
                            continue
                        for ev in ("", "evict_first"):
                            label = f"{block} x {r} rows, w{warps} {ev or '-'}"

                            def fn(block=block, r=r, warps=warps, ev=ev):
                                rowsum_tiles_kernel[(triton.cdiv(M, r),)](
                                    x, out, M, N, BLOCK=block, ROWS=r, ACC=tl.float32, EV=ev,
                                    num_warps=warps)
                            row = variant(label, fn, check)
                            rows.append(row)
                            if row[0] != float("inf"):
                                cold.append((do_bench(fn) * 1e3, label, row[2]))
            name = f"{M}x{N} {dtype_name(dtype)}"
            report("rowsum graph", name, rows, M * N * x.element_size())
            report("rowsum cold", name, cold, M * N * x.element_size(), best=8)


if __name__ == "__main__":
    main()
