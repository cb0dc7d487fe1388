"""Probe: softmax on long rows (1024x65536 and 256x262144, bf16 and fp32), CUDA-graph replays:
the online kernel (one program per row, two passes over the row, the second from L2) over
block and warps, against the split variant (rows cut into chunks: a kernel for each chunk's
max and sum, a second that combines them and writes, rows in reverse so that the first rows it
reads are the last the first kernel read, still in L2) over block, warps and programs per SM;
each checked against torch.softmax first.
Decides: docs/decisions.md#softmax-split (which long rows take the split variant, and its
tuning)."""
from _common import dtype_name, report, torch, triton, variant
from tritonlab.kernels import softmax as sm
from tritonlab.kernels._checks import sm_count


def online(x, y, block, warps):
    n_rows, n_cols = x.shape
    return lambda: sm.softmax_online_kernel[(n_rows,)](x, y, n_cols, n_cols, n_cols,
                                                       BLOCK_SIZE=block, ACC=sm.tl.float32,
                                                       num_warps=warps)


def split(x, y, block, warps, per_sm):
    n_rows, n_cols = x.shape
    target = per_sm * sm_count(x.get_device())
    chunks = max(1, min(triton.cdiv(n_cols, block), triton.cdiv(target, n_rows)))
    chunk = triton.cdiv(triton.cdiv(n_cols, chunks), block) * block
    chunks = triton.cdiv(n_cols, chunk)
    m = torch.empty(n_rows, chunks, device=x.device)
    s = torch.empty_like(m)

    def run():
        sm.softmax_split_stats_kernel[(chunks * n_rows,)](
            x, m, s, n_cols, n_cols, chunk, chunks, BLOCK_SIZE=block, ACC=sm.tl.float32,
            num_warps=warps)
        sm.softmax_split_write_kernel[(chunks * n_rows,)](
            x, y, m, s, n_rows, n_cols, n_cols, chunk, chunks, BLOCK_SIZE=block,
            CHUNKS=triton.next_power_of_2(chunks), ACC=sm.tl.float32, num_warps=warps)
    return run, chunks


def main():
    for n_rows, n_cols in ((1024, 65536), (256, 262144), (4096, 16384)):
        for dtype in (torch.bfloat16, torch.float32):
            x = torch.randn(n_rows, n_cols, device="cuda", dtype=dtype) * 3
            y = torch.empty_like(x)
            want = torch.softmax(x.float(), -1)
            tol = 1e-2 if dtype == torch.bfloat16 else 1e-5

            def check():
                err = ((y.float() - want).norm() / want.norm()).item()
                return f"rel {err:.1e}" + ("" if err < tol else " WRONG")
            rows = [variant("torch.softmax", lambda: torch.softmax(x, -1))]
            rows.append(variant("tritonlab default", lambda: y.copy_(sm.softmax(x)), check))
            for block in (4096, 8192, 16384):
                for warps in (8, 16):
                    rows.append(variant(f"online b{block} w{warps}",
                                        online(x, y, block, warps), check))
            for block in (2048, 4096):
                for warps in (4, 8):
                    for per_sm in (2, 4, 8, 16):
                        run, chunks = split(x, y, block, warps, per_sm)
                        rows.append(variant(f"split b{block} w{warps} c{chunks}", run, check))
            report("softmax", f"{n_rows}x{n_cols} {dtype_name(dtype)}", rows,
                   2 * x.numel() * x.element_size(), best=8)


if __name__ == "__main__":
    main()
