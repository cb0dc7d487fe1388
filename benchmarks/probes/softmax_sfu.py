"""Probe: softmax with one SFU operation per element where it had two to four (the online
kernel's update with one exp, exp(-|x - m|); the exchange's exps kept in registers and scaled
by one factor per piece; a reciprocal per row instead of a division per element), against the
kernels before (benchmarks/probes/_softmax_before.py, generated from commit e65e378 where it
exists), Liger-Kernel and torch.softmax, at the default plan's kernel, rows and warps, in bf16
and fp32; the 16-bit long rows also by the new exchange over block and warps. Each checked
against a float64 softmax, then timed by CUDA-graph replays and by do_bench (L2 flushed),
three interleaved repeats (median).
Decides: docs/decisions.md#softmax-sfu."""

from _common import (dtype_name, interleaved, shapes_from_argv, softmax_check, torch,
                     triton)
from softmax_exchange import exchange
from tritonlab.kernels import _exchange
from tritonlab.kernels import softmax as sm
from tritonlab.kernels._checks import num_warps_for
from tritonlab.kernels.tuning import tuning_for

try:
    import _softmax_before as before
except ImportError:  # a checkout without the generated file: the new kernels alone
    before = None
try:
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
except ImportError:
    LigerSoftmaxFunction = None

SHAPES = ((8192, 4096), (4096, 16384), (32768, 1024), (2048, 32768), (1024, 65536),
          (256, 262144), (4096, 512))


def launcher(mod, kind, x, y, block, warps, **kw):
    """The kernel `kind` of module `mod` (softmax.py or the one before) over x into y; `kw`:
    more constexprs of the row kernels (STREAM)."""
    M, N = x.shape
    acc = sm.tl.float32
    if kind == "row":
        return lambda: mod.softmax_kernel[(M,)](x, y, N, N, N, BLOCK_SIZE=block, ACC=acc,
                                                num_warps=warps, **kw)
    if kind == "rows":
        rows = max(1, min(16, 2048 // block))
        return lambda: mod.softmax_rows_kernel[(triton.cdiv(M, rows),)](
            x, y, M, N, N, N, BLOCK_SIZE=block, ROWS=rows, ACC=acc, num_warps=warps, **kw)
    if kind == "online":
        return lambda: mod.softmax_online_kernel[(M,)](x, y, N, N, N, BLOCK_SIZE=block,
                                                       ACC=acc, num_warps=warps)
    return exchange(x, y, block, warps, mod.softmax_exchange_kernel)


def default_plan(x):
    """(kind, block, warps) that sm.softmax takes for x (kernels/softmax.py _plan)."""
    N = x.shape[1]
    t = tuning_for("softmax", x.get_device())
    kind, block, _ = sm._plan(N, x, None, None, None)
    if kind == "row":
        return kind, block, (t.wide_row_warps if block >= t.wide_row_block
                             else num_warps_for(block))
    if kind == "rows":
        return kind, block, num_warps_for(block * max(1, min(t.max_rows,
                                                              t.rows_elements // block)))
    if kind == "online":
        return kind, block, t.online_warps
    return kind, block, t.exchange_warps


def cases(shapes):
    """(M, N, dtype, x, y, check, (kind, block, warps)) per shape and dtype (bf16, fp32): the
    input, an output buffer, its check against float64 and the default plan's kernel."""
    for M, N in shapes:
        for dtype in (torch.bfloat16, torch.float32):
            x = torch.randn(M, N, device="cuda", dtype=dtype) * 3
            y = torch.empty_like(x)
            yield M, N, dtype, x, y, softmax_check(x, y), default_plan(x)


def main(shapes=SHAPES):
    summary = []
    for M, N, dtype, x, y, check, (kind, block, warps) in cases(shapes):
        impls = [("new default", lambda: sm.softmax(x), lambda: check(sm.softmax(x))),
                 (f"new {kind} {block} w{warps}", launcher(sm, kind, x, y, block, warps),
                  check)]
        if before is not None:
            impls.append((f"before {kind} {block} w{warps}",
                          launcher(before, kind, x, y, block, warps), check))
        impls.append(("torch.softmax", lambda: torch.softmax(x, -1), None))
        if LigerSoftmaxFunction is not None:
            impls.append(("Liger", lambda: LigerSoftmaxFunction.apply(x),
                          lambda: check(LigerSoftmaxFunction.apply(x))))
        if N >= 32768 and dtype != torch.float32:  # 16-bit long rows: online blocks, warps
            for b in (4096, 8192, 16384):
                for w in (8, 16, 32):
                    impls.append((f"new online {b} w{w}", launcher(sm, "online", x, y, b, w),
                                  check))
        if N > 32768 and dtype != torch.float32:  # the new exchange for 16-bit long rows
            for b in (8192, 16384, 32768):
                for w in (4, 8, 16):
                    pieces = triton.cdiv(N, b)
                    if 2 <= pieces <= _exchange.max_pieces(x):
                        impls.append((f"new exchange {b} w{w}",
                                      launcher(sm, "exchange", x, y, b, w), check))
        rows = interleaved(impls)
        nbytes = 2 * M * N * x.element_size()
        name = f"{M}x{N} {dtype_name(dtype)}"
        for label, _, err, g, c in sorted(rows, key=lambda r: r[4]):
            print(f"softmax {name:<18} {label:<26} do_bench {c:8.1f} us "
                  f"{nbytes / c / 1e3:6.0f} GB/s  graph {g:8.1f} us "
                  f"{nbytes / g / 1e3:6.0f} GB/s  err {err}", flush=True)
        by = {r[0]: r[4] for r in rows}
        new = by.get("new default")
        parts = [f"{name:<18} new {nbytes / new / 1e3:5.0f} GB/s"]
        for other in ("before", "Liger", "torch.softmax"):
            key = next((k for k in by if k.startswith(other)), None)
            if key:
                parts.append(f"{by[key] / new:.3f}x {other}")
        summary.append("  ".join(parts))
    print("\nsummary (do_bench medians of 3):")
    print("\n".join(summary))


if __name__ == "__main__":  # softmax_sfu.py [MxN ...]: these shapes only
    main(shapes_from_argv(SHAPES))
