"""Probe: a softmax exchange whose next rows' loads stay in flight while a row's pieces meet.

The exchange (kernels/softmax.py's `softmax_exchange_kernel`, variant="exchange") keeps no load
in flight while its programs wait for their row-mates, and runs 8-10 % below a copy of the same
bytes whenever the L2 holds lines of another kernel (benchmarks/probes/flush_state.py,
docs/decisions.md#exchange-split-forward). Here `groups` groups of a row's `pieces` programs
walk rows g, g + groups, ... in a loop that Triton software-pipelines (`tl.range(...,
num_stages=STAGES)`): the next rows' pieces are copied into shared memory while this row's
pieces meet. Triton's pipeliner leaves alone a loop that holds another loop or a
`tl.debug_barrier`, so the wait is one PTX statement (`_wait_at_least`: a spin on an acquire
load) and the CTA barrier before the arrival is `bar.sync` in inline PTX. The statistics are
read after the wait by inline PTX too: the pipeliner would issue a `tl.load` of them stages
early, before the wait. GPU only (inline PTX); checked against a float64 softmax before it is timed.

    python benchmarks/probes/exchange_pipelined.py [--shapes 1024x65536,...] [--configs B:W:S:P,...]

Configs: block (columns a piece), warps, stages, programs per SM (the groups: as many as
fit at that many programs per SM, a group's pieces consecutive in the grid so that they start
together). Timed against today's default (sm.softmax), the exchange, the online kernel and a
copy of the same bytes, CUDA-graph replays and do_bench (L2 flushed), interleaved.
"""
import argparse
import itertools
import os
import sys

from _common import ROOT, dtype_name, interleaved, save_rows, softmax_check, tl, torch, triton
from softmax_exchange import exchange
from tritonlab.kernels import _exchange
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import softmax as sm

sys.path.insert(0, str(ROOT / "benchmarks"))
from kernels import same_bytes_copy  # noqa: E402 - benchmarks/kernels.py's ceiling


@triton.jit
def _wait_at_least(count_ptr, target):
    # every thread spins on an acquire load until *count_ptr >= target; returns the count
    return tl.inline_asm_elementwise(
        "{\n.reg .pred p;\nWAIT${:uid}:\nld.acquire.gpu.global.b32 $0, [$1];\n"
        "setp.lt.s32 p, $0, $2;\n@p bra WAIT${:uid};\n}",
        "=r,l,r", [count_ptr, target], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _load_relaxed(ptrs):
    # fp32 loads from L2 (ld.relaxed.gpu: after the acquire above in program order)
    return tl.inline_asm_elementwise("ld.relaxed.gpu.global.f32 $0, [$1];", "=f,l", [ptrs],
                                     dtype=tl.float32, is_pure=False, pack=1)


@triton.jit
def _cta_barrier(v):
    # bar.sync 0 (what tl.debug_barrier emits, which would stop the pipelining), v passed on
    return tl.inline_asm_elementwise("bar.sync 0;\nmov.b32 $0, $1;", "=r,r", [v],
                                     dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def pipelined_exchange_kernel(x_ptr, y_ptr, stats_ptr, sync_ptr, n_rows, n_cols, pieces, groups,
                              BLOCK_SIZE: tl.constexpr, PIECES: tl.constexpr, ACC: tl.constexpr,
                              STAGES: tl.constexpr):
    pid = tl.program_id(0)
    p, g = pid % pieces, pid // pieces
    cols = p * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    j = tl.arange(0, PIECES)
    for r in tl.range(g, n_rows, groups, num_stages=STAGES):
        row = r.to(tl.int64)
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"),
                    eviction_policy="evict_first").to(ACC)
        m = tl.max(x, axis=0)
        s = tl.sum(tl.where(x == float("-inf"), 0.0, tl.exp(x - m)), axis=0)
        slot = stats_ptr + (row * pieces + p) * 2
        tl.store(slot, m)
        tl.store(slot + 1, s)
        one = _cta_barrier(1)  # every thread's statistics stored before the arrival
        tl.atomic_add(sync_ptr + r, one, sem="release")
        _wait_at_least(sync_ptr + r, pieces)
        # the others' statistics, read by inline PTX too: a tl.load here would be one the
        # pipeliner issues stages early, before the wait
        mine = stats_ptr + (row * pieces + tl.minimum(j, pieces - 1)) * 2
        mj = tl.where(j < pieces, _load_relaxed(mine), float("-inf"))
        sj = tl.where(j < pieces, _load_relaxed(mine + 1), 0.0)
        m_row = tl.max(mj, axis=0)
        empty = (mj == float("-inf")) & (sj == 0.0)
        s_row = tl.sum(tl.where(empty, 0.0, sj * tl.exp(mj - m_row)), axis=0)
        y = tl.exp(x - m_row) * (1.0 / s_row)
        tl.store(y_ptr + row * n_cols + cols, y, mask=mask, cache_modifier=".cs")
        _exchange.leave(sync_ptr + r, sync_ptr + n_rows + r, pieces)


@triton.jit
def pipelined_rms_kernel(x_ptr, g_ptr, y_ptr, rstd_ptr, stats_ptr, sync_ptr, n_rows, n_cols, eps,
                         pieces, groups, BLOCK_SIZE: tl.constexpr, PIECES: tl.constexpr,
                         ACC: tl.constexpr, STAGES: tl.constexpr):
    # the RMSNorm forward's exchange (rmsnorm_fwd_exchange_kernel) in the same loop
    pid = tl.program_id(0)
    p, grp = pid % pieces, pid // pieces
    cols = p * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    g = tl.load(g_ptr + cols, mask=mask, other=0.0).to(ACC)
    j = tl.arange(0, PIECES)
    for r in tl.range(grp, n_rows, groups, num_stages=STAGES):
        row = r.to(tl.int64)
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0,
                    eviction_policy="evict_first").to(ACC)
        tl.store(stats_ptr + row * pieces + p, tl.sum(x * x, axis=0))
        one = _cta_barrier(1)
        tl.atomic_add(sync_ptr + r, one, sem="release")
        _wait_at_least(sync_ptr + r, pieces)
        squares = _load_relaxed(stats_ptr + row * pieces + tl.minimum(j, pieces - 1))
        total = tl.sum(tl.where(j < pieces, squares, 0.0), axis=0)
        rstd = 1.0 / tl.sqrt(total / n_cols + eps)
        tl.store(rstd_ptr + row, rstd, mask=p == 0)
        tl.store(y_ptr + row * n_cols + cols, x * rstd * g, mask=mask, cache_modifier=".cs")
        _exchange.leave(sync_ptr + r, sync_ptr + n_rows + r, pieces)


def launch(kernel, x, block, warps, stages, per_sm, args, n_stats):
    """A launch of a pipelined exchange over x (its counters left zero, as the library's):
    kernel(*args, stats, sync, n_rows, n_cols, *extra, pieces, groups)."""
    n_rows, n_cols = x.shape
    pieces = triton.cdiv(n_cols, block)
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    groups = max(1, min(n_rows, sms * per_sm // pieces))
    stats = torch.empty(n_rows, pieces, n_stats, device=x.device)
    sync = torch.zeros(2 * n_rows, device=x.device, dtype=torch.int32)
    head, tail = args
    return lambda: kernel[(groups * pieces,)](
        *head, stats, sync, n_rows, n_cols, *tail, pieces, groups, BLOCK_SIZE=block,
        PIECES=triton.next_power_of_2(pieces), ACC=tl.float32, STAGES=stages, num_warps=warps)


def pipelined(x, y, block, warps, stages, per_sm):
    return launch(pipelined_exchange_kernel, x, block, warps, stages, per_sm, ((x, y), ()), 2)


def pipelined_rms(x, g, y, rstd, block, warps, stages, per_sm):
    return launch(pipelined_rms_kernel, x, block, warps, stages, per_sm,
                  ((x, g, y, rstd), (1e-6,)), 1)


def rms_check(x, g, y):
    """check(): y's relative max error against a float64 RMSNorm of x, as text."""
    xd = x.double()
    want = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * g.double()
    tol = 1e-5 if x.dtype == torch.float32 else 2e-2

    def check():
        err = ((y.double() - want).abs().max() / want.abs().max()).item()
        assert err < tol, err
        return f"{err:.1e}"
    return check


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="1024x65536,256x262144,4096x16384")
    parser.add_argument("--configs", default="8192:8:2:2,8192:8:3:2,4096:4:3:4,4096:8:3:3,"
                        "8192:16:2:2,2048:4:3:6")
    parser.add_argument("--ops", default="softmax,rmsnorm")
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = parser.parse_args(argv or [])
    configs = [tuple(map(int, c.split(":"))) for c in args.configs.split(",")]
    results = []
    shapes = [tuple(map(int, s.split("x"))) for s in args.shapes.split(",")]
    for (M, N), dtype, op in itertools.product(shapes, (torch.float32, torch.bfloat16),
                                               args.ops.split(",")):
        x = torch.randn(M, N, device="cuda", dtype=dtype) * 3
        y = torch.empty_like(x)
        copy = ("copy", same_bytes_copy(x, 2 * x.numel() * x.element_size()), None)
        if op == "softmax":
            check = softmax_check(x, y)
            impls = [("default (sm.softmax)", lambda: sm.softmax(x), None),
                     ("online", lambda: sm.softmax(x, variant="online"), None),
                     ("exchange 8192 w8", exchange(x, y, 8192, 8), check), copy]
        else:
            g = torch.randn(N, device="cuda", dtype=dtype)
            rstd = torch.empty(M, device="cuda")
            check = rms_check(x, g, y)
            impls = [("default (rn.rmsnorm)", lambda: rn.rmsnorm(x, g), None), copy]
        for block, warps, stages, per_sm in configs:
            if block > N:
                continue
            fn = (pipelined(x, y, block, warps, stages, per_sm) if op == "softmax" else
                  pipelined_rms(x, g, y, rstd, block, warps, stages, per_sm))
            impls.append((f"pipelined {block} w{warps} s{stages} {per_sm}/SM", fn, check))
        rows = interleaved(impls)
        copy = next(r for r in rows if r[0] == "copy")
        rows.sort(key=lambda r: r[4])
        name = f"{M}x{N} {dtype_name(dtype)}"
        print(f"== {op} {name}: graph us, do_bench us, of the copy graph / do_bench",
              flush=True)
        for label, _, err, graph, cold in rows:
            print(f"  {label:<30} {graph:8.1f} {cold:8.1f}  {copy[3] / graph:5.2f} "
                  f"{copy[4] / cold:5.2f}  {err}", flush=True)
            results.append({"op": op, "shape": f"{M}x{N}", "dtype": dtype_name(dtype),
                            "label": label, "graph_us": graph, "do_bench_us": cold})
        torch.cuda.empty_cache()
    save_rows(args.out, "exchange_pipelined.json", results)


if __name__ == "__main__":
    main(sys.argv[1:])
