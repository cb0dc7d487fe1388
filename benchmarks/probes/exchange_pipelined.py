"""Probe: exchange kernels whose next rows' loads stay in flight while a row's pieces meet.

The exchange kernels (softmax's `softmax_exchange_kernel`, RMSNorm's forward and backward ones)
keep no load in flight while their programs wait for their row-mates, and run 8-10 % below a
copy of the same bytes whenever the L2 holds lines of another kernel
(benchmarks/probes/flush_state.py, docs/decisions.md#exchange-split-forward). Here groups of a
row's pieces walk rows in a loop that Triton software-pipelines (`tl.range(...,
num_stages=STAGES)`): the next rows' pieces are copied into shared memory while this row's
pieces meet. Triton's pipeliner leaves alone a loop that holds another loop or a
`tl.debug_barrier`, so the meeting is in inline PTX (`_exchange.arrive_and_wait(..., PTX=True)`:
bar.sync, the release add, then a spin on an acquire load in one PTX statement) and the
others' statistics are read by PTX loads after it (`_exchange.read_after`): the pipeliner would
issue a `tl.load` of them stages early, before the wait. GPU only; each variant is checked
(against a float64 softmax or RMSNorm, or today's backward) before it is timed.

    python benchmarks/probes/exchange_pipelined.py [--shapes 1024x65536,...] [--ops ...] \
        [--configs B:W:S:P,...] [--bwd-configs S:P,...]

Forward configs (softmax: the library's exchange kernel, SoftmaxTuning.exchange_stages and
exchange_per_sm; rmsnorm: the library's exchange forward, RMSNormTuning.fwd_exchange_stages
and fwd_exchange_per_sm, at every row width given): block (columns a piece), warps,
stages, programs per SM (the groups: as many as fit at that many programs per SM, a group's
pieces consecutive in the grid so that they start together). Backward configs (rmsnorm-bwd:
the library's exchange backward, RMSNormTuning.bwd_exchange_stages, every entry without split
meetings): stages, programs per SM. Timed against today's default, the exchange, the online
kernel and a copy of the same bytes, CUDA-graph replays and do_bench (L2 flushed),
interleaved.
Found (H100, 2026-12-07, session 46, docs/decisions.md#exchange-pipelined): every pipelined
forward loses (0.23-0.83 of the copy against 0.73-0.99); the bf16 backward up to 65536 columns
gains 3-6 % with 3 stages at 2 programs per SM (Hopper's entry now), fp32 loses 8-10 %.
"""
import argparse
import dataclasses
import itertools
import os
import sys

from _common import (ROOT, against_copy, dtype_name, save_rows, softmax_check, tl, torch,
                     triton)
from softmax_exchange import exchange
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import softmax as sm
from tritonlab.kernels.tuning import device_of, exchange_groups, tuning_for

sys.path.insert(0, str(ROOT / "benchmarks"))
from kernels import same_bytes_copy  # noqa: E402 - benchmarks/kernels.py's ceiling


def buffers(x, block, per_sm, n_stats):
    """(pieces, groups, stats, counters) of a pipelined exchange over x: groups of a row's
    pieces, about per_sm programs per SM in all; the counters zero (and left zero)."""
    n_rows, n_cols = x.shape
    pieces = triton.cdiv(n_cols, block)
    groups = exchange_groups(per_sm, 1, pieces, n_rows, device_of(x.get_device()))
    return (pieces, groups, torch.empty(n_rows, pieces, n_stats, device=x.device),
            torch.zeros(2 * n_rows, device=x.device, dtype=torch.int32))


def pipelined(x, y, block, warps, stages, per_sm):
    """The library's softmax exchange kernel with groups walking rows, pipelined
    (SoftmaxTuning.exchange_stages, exchange_per_sm)."""
    pieces, groups, stats, sync = buffers(x, block, per_sm, 2)
    return lambda: sm.softmax_exchange_kernel[(groups * pieces,)](
        x, y, stats, sync, *x.shape, x.shape[1], pieces, groups, BLOCK_SIZE=block,
        PIECES=triton.next_power_of_2(pieces), ACC=tl.float32, STAGES=stages, PTX=True,
        num_warps=warps)


def pipelined_rms(x, g, block, warps, stages, per_sm):
    """The library's RMSNorm exchange forward with groups walking rows, pipelined
    (RMSNormTuning.fwd_exchange_stages, fwd_exchange_per_sm), for rows of any width here."""
    t = tuning_for("rmsnorm", x.get_device())
    plan = rn._Plan(x, g, tuning=dataclasses.replace(
        t, fwd_register_max=0, fwd_exchange=((x.element_size(), 0),), exchange_block=block,
        exchange_warps=warps, fwd_exchange_stages=stages, fwd_exchange_per_sm=per_sm))
    assert plan.exchange is not None and plan.fwd.kw["STAGES"] == stages
    return lambda: plan.forward(x, g, 1e-6)


def bwd_variants(x, g, dy, rstd, configs):
    """(label, fn, check) rows of RMSNorm's backward: today's plan, then the exchange backward
    (every entry without split meetings) with its step loop pipelined over `stages` and
    `per_sm` programs per SM, for each (stages, per_sm) of configs."""
    t = tuning_for("rmsnorm", x.get_device())
    today = rn._Plan(x, g)
    want = today.backward(dy, x, g, rstd)
    rows = [("default (rn backward)", lambda: today.backward(dy, x, g, rstd), None)]
    unsplit = tuple(e[:4] for e in t.bwd_exchange)
    for stages, per_sm in [(None, t.bwd_exchange_per_sm)] + configs:
        plan = rn._Plan(x, g, tuning=dataclasses.replace(
            t, bwd_exchange=unsplit, bwd_exchange_stages=stages, bwd_exchange_per_sm=per_sm))
        if plan.bwd_exchange is None:
            continue

        def check(plan=plan):
            dx, dg = plan.backward(dy, x, g, rstd)
            tol = 1e-4 if x.dtype == torch.float32 else 2e-2
            torch.testing.assert_close(dx, want[0], rtol=tol, atol=tol)
            torch.testing.assert_close(dg, want[1], rtol=tol, atol=tol * x.shape[0] ** 0.5)
            return "ok"
        rows.append((f"exchange s{stages} {per_sm}/SM",
                     lambda plan=plan: plan.backward(dy, x, g, rstd), check))
    return rows


def rms_check(x, g, run):
    """check(): the relative max error of run()'s y against a float64 RMSNorm of x, as
    text."""
    xd = x.double()
    want = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * g.double()
    tol = 1e-5 if x.dtype == torch.float32 else 2e-2

    def check():
        err = ((run().double() - want).abs().max() / want.abs().max()).item()
        assert err < tol, err
        return f"{err:.1e}"
    return check


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="1024x65536,256x262144,4096x16384")
    # stages of 3 and more: Triton issues a row's copy at the end of the loop's body, so 2
    # stages keep no copy in flight through the meeting (benchmarks/probes/meeting_order.py)
    parser.add_argument("--configs", default="8192:8:3:2,8192:8:4:1,4096:4:3:4,4096:8:4:3,"
                        "8192:16:3:2,2048:4:4:6")
    parser.add_argument("--ops", default="softmax,rmsnorm,rmsnorm-bwd")
    parser.add_argument("--bwd-configs", default="3:1,4:1,3:2",
                        help="stages:per_sm,... of the pipelined exchange backward")
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = parser.parse_args(argv or [])
    configs = [tuple(map(int, c.split(":"))) for c in args.configs.split(",")]
    bwd_configs = [tuple(map(int, c.split(":"))) for c in args.bwd_configs.split(",")]
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
        elif op == "rmsnorm":
            g = torch.randn(N, device="cuda", dtype=dtype)
            impls = [("default (rn.rmsnorm)", lambda: rn.rmsnorm(x, g), None), copy]
        else:  # the backward: x, dy read, dx written
            g = torch.randn(N, device="cuda", dtype=dtype)
            _, rstd = rn._forward(x, g, 1e-6)
            impls = bwd_variants(x, g, torch.randn_like(x), rstd, bwd_configs)
            impls.append(("copy", same_bytes_copy(x, 3 * x.numel() * x.element_size()), None))
        for block, warps, stages, per_sm in configs if op != "rmsnorm-bwd" else ():
            if block > N:
                continue
            if op == "softmax":
                fn, ok = pipelined(x, y, block, warps, stages, per_sm), check
            else:
                fn = pipelined_rms(x, g, block, warps, stages, per_sm)
                ok = rms_check(x, g, lambda fn=fn: fn()[0])
            impls.append((f"pipelined {block} w{warps} s{stages} {per_sm}/SM", fn, ok))
        results += against_copy(f"{op} {M}x{N} {dtype_name(dtype)}", impls, op=op,
                                shape=f"{M}x{N}", dtype=dtype_name(dtype))
        save_rows(args.out, "exchange_pipelined.json", results)  # so far: a timeout keeps them
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:])
