"""Probe: the exchange (long rows read once, kernels/_exchange.py) for 16-bit rows with each
piece kept in registers in its own 16-bit dtype (half the registers of the fp32 copy the
kernel keeps today, so twice the columns per program, or twice the programs per SM), against
today's exchange and the default (online) kernel, over block and warps, at 2048x32768,
1024x65536 and 256x262144 in bf16 and fp16; checked against a float64 softmax, then timed by
CUDA-graph replays and do_bench (L2 flushed; median of 3 interleaved).
Decides: docs/decisions.md#softmax-exchange (16-bit rows)."""
from _common import dtype_name, interleaved, softmax_check, tl, torch, triton
from softmax_exchange import exchange
from tritonlab.kernels import _exchange
from tritonlab.kernels import softmax as sm


@triton.jit
def exchange16_kernel(x_ptr, y_ptr, stats_ptr, sync_ptr, n_rows, n_cols, row_stride, pieces,
                      BLOCK_SIZE: tl.constexpr, PIECES: tl.constexpr, ACC: tl.constexpr):
    pid = tl.program_id(0)
    p, row = pid % pieces, (pid // pieces).to(tl.int64)
    cols = p * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    xin = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=float("-inf"),
                  eviction_policy="evict_first")  # read N, once, kept in its 16 bits
    x = xin.to(ACC)
    m = tl.max(x, axis=0)
    s = tl.sum(tl.where(x == float("-inf"), 0.0, tl.exp(x - m)), axis=0)
    slot = stats_ptr + (row * pieces + p) * 2
    tl.store(slot, m)
    tl.store(slot + 1, s)
    _exchange.arrive_and_wait(sync_ptr + row, pieces)
    j = tl.arange(0, PIECES)
    mine = stats_ptr + (row * pieces + j) * 2
    mj = tl.load(mine, mask=j < pieces, other=float("-inf"), cache_modifier=".cg")
    sj = tl.load(mine + 1, mask=j < pieces, other=0.0, cache_modifier=".cg")
    m_row = tl.max(mj, axis=0)
    empty = (mj == float("-inf")) & (sj == 0.0)
    s_row = tl.sum(tl.where(empty, 0.0, sj * tl.exp(mj - m_row)), axis=0)
    # converted again after the wait: adding a zero made from m_row (NaN where m_row is not
    # finite, which makes the row NaN as it must be) keeps the compiler from reusing the fp32
    # copy across the wait
    x = (xin + (m_row * 0.0).to(xin.dtype)).to(ACC)
    tl.store(y_ptr + row * row_stride + cols, tl.exp(x - m_row) / s_row, mask=mask,
             cache_modifier=".cs")
    _exchange.leave(sync_ptr + row, sync_ptr + n_rows + row, pieces)


def main():
    summary = []
    for M, N in ((2048, 32768), (1024, 65536), (256, 262144)):
        for dtype in (torch.bfloat16, torch.float16):
            x = torch.randn(M, N, device="cuda", dtype=dtype) * 3
            y = torch.empty_like(x)
            compare = softmax_check(x, y)

            def check():  # and clear y, so that the next variant's check sees its own output
                err = compare()
                y.zero_()
                return err
            impls = [("default", lambda: sm.softmax(x), lambda: compare(sm.softmax(x)))]
            for block in (8192, 16384, 32768):
                for warps in (4, 8, 16, 32):
                    pieces = triton.cdiv(N, block)
                    if block > N or pieces > _exchange.max_pieces(x) or pieces < 2:
                        continue
                    impls.append((f"keep16 {block} w{warps}",
                                  exchange(x, y, block, warps, exchange16_kernel), check))
                    if warps in (8, 16):
                        impls.append((f"today {block} w{warps}",
                                      exchange(x, y, block, warps),
                                      check))
            rows = interleaved(impls)
            nbytes = 2 * M * N * x.element_size()
            name = f"{M}x{N} {dtype_name(dtype)}"
            rows.sort(key=lambda r: r[4])
            for label, _, err, g, c in rows[:8]:
                print(f"softmax {name:<18} {label:<18} do_bench {c:8.1f} us "
                      f"{nbytes / c / 1e3:6.0f} GB/s  graph {g:8.1f} us "
                      f"{nbytes / g / 1e3:6.0f} GB/s  err {err}", flush=True)
            by = {r[0]: r[4] for r in rows}
            best = rows[0]
            summary.append(f"{name:<18} best {best[0]} {nbytes / by[best[0]] / 1e3:5.0f} GB/s "
                           f"({by['default'] / by[best[0]]:.3f}x default "
                           f"{nbytes / by['default'] / 1e3:5.0f})")
    print("\nsummary (do_bench medians of 3):")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
