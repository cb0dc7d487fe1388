"""Probe: cache hints on the two-pass row kernels, whose second pass reads the row again and
should find it in L2: the first pass's loads `evict_last` (keep), the second's `evict_first`
(last use), the output stored `.cs` (streamed past L2's kept rows). Copies of the online
softmax forward (with a persistent grid of 1-4 programs per SM as well) and of the wide-row
RMSNorm forward, each with the hints as constexprs, and the online softmax backward itself
(which has the hints since 2026-12-02: its rows time block and warps only), on long rows in
bf16 and fp32; CUDA-graph replays, each variant checked against torch first; GB/s counts one
read and one write of the rows (three for the backward).
Decided: docs/decisions.md#softmax-online-hints."""
from _common import dtype_name, report, torch, triton, tl, variant
from tritonlab.kernels import softmax as sm

HINTS = [("", "", ""), ("evict_last", "evict_first", ".cs"), ("evict_last", "", ""),
         ("", "", ".cs")]  # first pass's loads, second pass's loads, the store


def hint_label(ev1, ev2, st):
    return f"{ev1 or '-'} {ev2 or '-'} {st or '-'}"


@triton.jit
def online_hinted(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr, ACC: tl.constexpr,
                  EV1: tl.constexpr, EV2: tl.constexpr, ST: tl.constexpr):
    for r in range(tl.program_id(0), n_rows, tl.num_programs(0)):  # persistent where grid < rows
        x_row = x_ptr + r.to(tl.int64) * n_cols
        y_row = y_ptr + r.to(tl.int64) * n_cols
        m = tl.full([BLOCK], float("-inf"), dtype=ACC)
        s = tl.zeros([BLOCK], dtype=ACC)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"),
                        eviction_policy=EV1).to(ACC)
            m_new = tl.maximum(m, x, propagate_nan=tl.PropagateNan.ALL)
            s = tl.where(m_new == float("-inf"), 0.0, s * tl.exp(m - m_new) + tl.exp(x - m_new))
            m = m_new
        m_row = tl.max(m, axis=0)
        s_row = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - m_row)), axis=0)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"),
                        eviction_policy=EV2).to(ACC)
            tl.store(y_row + cols, tl.exp(x - m_row) / s_row, mask=cols < n_cols,
                     cache_modifier=ST)


@triton.jit
def rms_fwd_hinted(x_ptr, g_ptr, y_ptr, rstd_ptr, n_cols, eps, CHUNK: tl.constexpr,
                   ACC: tl.constexpr, EV1: tl.constexpr, EV2: tl.constexpr, ST: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, CHUNK)
    squares = tl.zeros([CHUNK], dtype=ACC)
    for start in range(0, n_cols, CHUNK):
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=start + cols < n_cols, other=0.0,
                    eviction_policy=EV1).to(ACC)
        squares += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    for start in range(0, n_cols, CHUNK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=mask, other=0.0,
                    eviction_policy=EV2).to(ACC)
        g = tl.load(g_ptr + start + cols, mask=mask, other=0.0).to(ACC)
        tl.store(y_ptr + row * n_cols + start + cols, x * rstd * g, mask=mask, cache_modifier=ST)


def max_err(out, want):
    return lambda: f"{(out.float() - want).abs().max().item():.1e}"


def softmax_rows(M, N, dtype, sms):
    x = torch.randn(M, N, device="cuda", dtype=dtype) * 3
    y = torch.empty_like(x)
    check = max_err(y, torch.softmax(x.float(), -1))
    rows = [variant("sm.softmax (default)", lambda: sm.softmax(x))]
    for block, warps in ((8192, 16), (4096, 8), (16384, 16)):
        for grid in (M, sms, 2 * sms, 4 * sms):
            for hints in HINTS[:2] if grid < M else HINTS:
                if grid <= M:
                    rows.append(variant(
                        f"{block}/{warps} grid {grid} {hint_label(*hints)}",
                        lambda: online_hinted[(grid,)](
                            x, y, M, N, BLOCK=block, ACC=tl.float32, EV1=hints[0],
                            EV2=hints[1], ST=hints[2], num_warps=warps), check))
    report("softmax", f"{M}x{N} {dtype_name(dtype)}", rows, 2 * x.numel() * x.element_size(),
           best=len(rows))  # every row: the unhinted ones are the comparison


def softmax_bwd_rows(M, N, dtype):
    y = torch.softmax(torch.randn(M, N, device="cuda", dtype=dtype), -1)
    dy, dx = torch.randn_like(y), torch.empty_like(y)
    check = max_err(dx, y.float() * (dy.float() - (y.float() * dy.float()).sum(-1, keepdim=True)))
    rows = [variant("torch", lambda: torch._softmax_backward_data(dy, y, -1, dtype))]
    for block, warps in ((4096, 8), (8192, 8), (8192, 16), (16384, 16)):
        rows.append(variant(f"online bwd {block}/{warps}", lambda: sm.softmax_bwd_online_kernel[
            (M,)](dy, y, dx, N, N, BLOCK_SIZE=block, ACC=tl.float32, num_warps=warps), check))
    report("softmax bwd", f"{M}x{N} {dtype_name(dtype)}", rows, 3 * y.numel() * y.element_size())


def rmsnorm_rows(M, N, dtype):
    x = torch.randn(M, N, device="cuda", dtype=dtype)
    g = torch.randn(N, device="cuda", dtype=dtype)
    y, rstd = torch.empty_like(x), torch.empty(M, device="cuda")
    check = max_err(y, torch.nn.functional.rms_norm(x.float(), (N,), g.float(), 1e-6))
    rows = []
    for chunk in (4096, 8192, 16384):
        for hints in HINTS[:2]:
            rows.append(variant(f"wide fwd {chunk}/16 {hint_label(*hints)}",
                                lambda: rms_fwd_hinted[(M,)](
                                    x, g, y, rstd, N, 1e-6, CHUNK=chunk, ACC=tl.float32,
                                    EV1=hints[0], EV2=hints[1], ST=hints[2], num_warps=16),
                                check))
    report("rmsnorm fwd", f"{M}x{N} {dtype_name(dtype)}", rows, 2 * x.numel() * x.element_size(),
           best=len(rows))


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for M, N, dtype in ((1024, 65536, torch.bfloat16), (256, 262144, torch.bfloat16),
                        (1024, 65536, torch.float32)):
        softmax_rows(M, N, dtype, sms)
        softmax_bwd_rows(M, N, dtype)
        rmsnorm_rows(M, N, dtype)


if __name__ == "__main__":
    main()
