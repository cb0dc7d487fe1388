"""Probe: the row kernels' loops software-pipelined by Triton (`tl.range(..., num_stages=S)`,
which is what makes Triton's pipeliner issue loads that feed no dot ahead, as cp.async into
shared memory; a launch's num_stages does not: docs/decisions.md#row-loop-stages), and
persistent whole-row forwards (a few programs per SM stepping through rows), against today's
kernels and a copy of the same bytes, for issue 37's rows:

  * softmax forward: whole rows persistent (variant "loop": programs per SM x stages), long
    rows online with staged loops; softmax backward: long rows online, staged;
  * RMSNorm forward: whole rows persistent, wide rows staged chunk loops or the exchange
    (read once: a row's pieces meeting in memory, over piece width and warps);
  * RMSNorm backward (its kernel(s) and the dg sum): whole rows with a staged row loop over
    programs per SM (in place of PREFETCH), or tiled, or the exchange; wide rows staged or
    the exchange (x and dy read once, a row's pieces meeting in memory every r rows, over
    piece width, r, warps, programs per SM, and meetings split around the next rows' loads
    or not);
    and the dg sum alone.

Shapes: benchmarks/kernels.py's (8192x4096, 32768x1024, 4096x16384, 1024x65536) and
256x262144, bf16 and fp32. Each variant checked first (forwards against float64, backwards
against today's kernels), then timed by CUDA-graph replays and by do_bench (median of 3
interleaved); a variant that does not compile or fit is printed and left out.

    python benchmarks/probes/row_stages.py [--ops softmax,softmax-bwd,rms-fwd,rms-bwd]
        [--shapes 8192x4096,...] [--dtypes bf16,fp32] [--per-sm 1,2,4] [--stages 2,3,4]
        [--out DIR]

All of it is about 400 variants, some 15-20 minutes of GPU time: split it over calls with
--ops, --shapes or fewer --per-sm and --stages.

Prints, per op and shape, the fastest variants and today's, as GB/s and as a fraction of the
same-bytes copy timed the same way, and the best by each timing; writes DIR/row_stages.json
with every row. The exchange rows' graph replays also zero their counters (a buffer made
during capture is a new one: `_launch.scratch`), a few us the other rows do not pay: read
them on the do_bench column. Stages are capped where their buffers would not fit in shared
memory (`tuning.fit_stages`), so two labels may run the same kernel.
Decides: docs/decisions.md#row-loop-stages."""
import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

from _common import ROOT, dtype_name, interleaved, torch
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import softmax as sm
from tritonlab.kernels import tuning

sys.path.insert(0, str(ROOT / "benchmarks"))
from kernels import same_bytes_copy  # noqa: E402 - benchmarks/kernels.py's ceiling

DEVICE = "cuda"  # the CPU for a smoke run on the simulator (tests do not time)
SHAPES = ((8192, 4096), (32768, 1024), (4096, 16384), (1024, 65536), (256, 262144))
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
OPS = ("softmax", "softmax-bwd", "rms-fwd", "rms-bwd")
STAGES = (2, 3, 4)
PER_SM = (1, 2, 4)
# the exchange backward's (piece width, rows per meeting)
EXCHANGE_TILES = ((8192, 1), (4096, 1), (4096, 2), (2048, 2), (2048, 4), (1024, 4))


def softmax_launch(name, tun, *tensors):
    """softmax's plan (`_Launch`) of `tensors` made under the tuning `tun`."""
    real = sm.tuning_for
    sm.tuning_for = lambda kind, device: tun
    try:
        return sm._Launch(name, -1, None, None, None, *tensors)
    finally:
        sm.tuning_for = real


def softmax_variants(x, t):
    """(label, tuning) of the softmax forward: today's, then the persistent whole-row kernel
    (rows that take the one-row kernel) or the staged online loops (long rows)."""
    out = [("today", t)]
    plan = softmax_launch("softmax", t, x)
    if plan.kernel.kernel is sm.softmax_kernel:
        out += [(f"loop {p}/SM" + (f" s{s}" if s else " plain"),
                 dataclasses.replace(t, loop=True, loop_per_sm=p, loop_stages=s))
                for p in PER_SM for s in (None,) + STAGES]
    elif plan.kernel.kernel is sm.softmax_online_kernel:
        out += [(f"online s{s}", dataclasses.replace(t, online_stages=s)) for s in STAGES]
    return out


def exchange_backwards(x, t, splits):
    """(label, tuning) of the exchange backward on x's rows from the tuning t: every piece
    width and rows per meeting of EXCHANGE_TILES that cuts a row into at least 2 pieces, 4 and
    8 warps, 2 and 4 programs per SM, meetings split or not (`splits`)."""
    N, item = x.shape[1], x.element_size()
    return [(f"exchange {b}x{r} w{w} {p}/SM" + (" split" if split else ""),
             dataclasses.replace(t, bwd_exchange=((item, b, r, N),), bwd_exchange_warps=w,
                                 bwd_exchange_per_sm=p, bwd_exchange_split=split))
            for b, r in EXCHANGE_TILES for w in (4, 8) for p in (2, 4) for split in splits
            if 2 <= -(-N // b) <= rn._exchange.max_pieces(x)]


def rms_variants(x, t, backward):
    """(label, tuning) of RMSNorm's forward or backward: today's, then the staged or
    persistent kernels that the shape takes."""
    out = [("today", t)]
    N, item = x.shape[1], x.element_size()
    chunked = dataclasses.replace(t, fwd_exchange=(), bwd_exchange=())  # no exchange
    if backward and N <= t.bwd_register_max:  # "plain": no stages, PREFETCH by today's rule
        out += [(f"{p}/SM " + (f"s{s}" if s else "plain"),
                 dataclasses.replace(t, bwd_stages=s, bwd_stages_bytes=1 << 30,
                                     bwd_cols_per_sm=1 << 30, bwd_max_per_sm=p))
                for p in PER_SM for s in (None,) + STAGES]
        # and the exchange backward or the tiled one for rows the whole-row kernel takes
        # today (x, dy, g and dg in registers: at 16384 columns it spills, 128 registers on
        # 16 warps, compiled for sm_90 by benchmarks/compile_check.py): pieces of a row
        # meeting every r rows, or the coefficient pass then tiles
        below = dataclasses.replace(t, bwd_register_max=N - 1)
        if N >= 8192:
            out += [(f"tiled s{s}" if s else "tiled plain",
                     dataclasses.replace(below, bwd_exchange=(), wide_stages=s))
                    for s in (None,) + STAGES]
        out += exchange_backwards(x, below, splits=(False,))
    elif backward or N > t.fwd_register_max:  # wide rows: the chunked kernels, the exchange
        out += [(f"wide s{s}" if s else "wide plain",
                 dataclasses.replace(chunked, wide_stages=s)) for s in (None,) + STAGES]
        if not backward:  # the exchange forward: read once, pieces meeting in memory
            out += [(f"exchange {b} w{w}", dataclasses.replace(
                        t, fwd_exchange=((item, 0),), exchange_block=b, exchange_warps=w))
                    for b in (4096, 8192, 16384) for w in (4, 8, 16)
                    if 2 <= -(-N // b) <= rn._exchange.max_pieces(x)]
        else:  # the exchange backward: x and dy read once, pieces meeting every r rows
            out += exchange_backwards(x, t, splits=(False, True))
    else:  # whole rows: the persistent forward
        out += [(f"loop {p}/SM" + (f" s{s}" if s else " plain"),
                 dataclasses.replace(t, fwd_loop=True, fwd_loop_per_sm=p, fwd_loop_stages=s))
                for p in PER_SM for s in (None,) + STAGES]
    return out


def rows_of(op, M, N, dtype):
    """[(label, fn, check)] of one op and shape, the same-bytes copy first, and its bytes."""
    x = torch.randn(M, N, device=DEVICE, dtype=dtype) * 2
    e = x.element_size()
    tol = 2e-2 if dtype == torch.bfloat16 else 2e-5
    if op in ("softmax", "softmax-bwd"):
        t = tuning.tuning_for("softmax", x.get_device())
        y = torch.softmax(x.float(), -1).to(dtype)
        if op == "softmax":
            want, out = torch.softmax(x.double(), -1), torch.empty_like(x)
            nbytes = 2 * M * N * e

            def make(tun):
                plan = softmax_launch("softmax", tun, x)
                return lambda: plan.forward(x, out)
            variants = softmax_variants(x, t)
        else:
            dy = torch.randn_like(x)
            want = (y.double() * (dy.double() - (dy.double() * y.double()).sum(-1, True)))
            out, nbytes = torch.empty_like(x), 3 * M * N * e

            def make(tun):
                plan = softmax_launch("softmax backward", tun, dy, y)
                return lambda: plan.kernel(dy, y, out, *plan.tail)
            if softmax_launch("softmax backward", t, dy, y).kernel.kernel \
                    is not sm.softmax_bwd_online_kernel:
                return [], nbytes  # whole rows: no loop to stage
            variants = [("today", t)] + [
                (f"online s{s}", dataclasses.replace(t, online_stages=s)) for s in STAGES]

        def check():
            err = ((out.double() - want).abs().max() / want.abs().max()).item()
            assert err < tol, err
            out.zero_()
            return f"{err:.1e}"
    else:
        t = tuning.tuning_for("rmsnorm", x.get_device())
        g = torch.randn(N, device=DEVICE, dtype=dtype)
        if op == "rms-fwd":
            nbytes = 2 * M * N * e
            want_rstd = torch.rsqrt(x.double().pow(2).mean(-1) + 1e-6)
            want = x.double() * want_rstd[:, None] * g.double()
            box = {}

            def make(tun):
                plan = rn._Plan(x, g, tuning=tun)
                return lambda: box.__setitem__("y", plan.forward(x, g, 1e-6))

            def check():  # y and the statistic the backward reads
                y, rstd = box["y"]
                err = ((y.double() - want).abs().max() / want.abs().max()).item()
                assert err < tol, err
                torch.testing.assert_close(rstd.double(), want_rstd, rtol=1e-5, atol=0)
                return f"{err:.1e}"
            variants = rms_variants(x, t, False)
        else:
            nbytes = 3 * M * N * e
            dy = torch.randn_like(x)
            _, rstd = rn._Plan(x, g, tuning=t).forward(x, g, 1e-6)
            ref_dx, ref_dg = rn._Plan(x, g, tuning=t).backward(dy, x, g, rstd)
            box = {}

            def make(tun):
                plan = rn._Plan(x, g, tuning=tun)
                return lambda: box.__setitem__("d", plan.backward(dy, x, g, rstd))

            def check():
                dx, dg = box["d"]
                torch.testing.assert_close(dx.float(), ref_dx.float(), rtol=tol, atol=tol)
                torch.testing.assert_close(dg.float(), ref_dg.float(), rtol=tol, atol=tol * 10)
                return "= today's"
            variants = rms_variants(x, t, True)
    rows = [("same bytes: copy", same_bytes_copy(x, nbytes), None)]
    rows += [(label, make(tun), check) for label, tun in variants]
    if op == "rms-bwd":  # the dg sum alone: what fusing it into the backward could save
        plan = rn._Plan(x, g, tuning=t)
        partial = torch.zeros(plan.partial_shape, device=DEVICE, dtype=torch.float32)
        dg = torch.empty_like(g)
        rows.append(("dg sum alone", lambda: plan.dg_sum(partial, dg, plan.partial_shape[0],
                                                         N), None))
    return rows, nbytes


def main(argv=None):
    global PER_SM, STAGES  # the sweep's, from the flags
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--shapes", default=",".join(f"{m}x{n}" for m, n in SHAPES))
    parser.add_argument("--dtypes", default="bf16,fp32")
    parser.add_argument("--per-sm", default=",".join(map(str, PER_SM)),
                        help="programs per SM of the persistent and whole-row backward variants")
    parser.add_argument("--stages", default=",".join(map(str, STAGES)),
                        help="stages of the pipelined loops")
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    # run.py calls main() with its own argv: the defaults then
    args = parser.parse_args(argv if argv is not None or __name__ == "__main__" else [])
    PER_SM = tuple(int(v) for v in args.per_sm.split(","))
    STAGES = tuple(int(v) for v in args.stages.split(","))
    results, summary = [], []
    for op in args.ops.split(","):
        for shape in args.shapes.split(","):
            M, N = map(int, shape.split("x"))
            for dname in args.dtypes.split(","):
                impls, nbytes = rows_of(op, M, N, DTYPES[dname])
                if not impls:
                    continue
                rows = interleaved(impls)
                copy = next((r for r in rows if r[0] == "same bytes: copy"), None)
                name = f"{op} {M}x{N} {dtype_name(DTYPES[dname])}"
                for label, _, err, graph, cold in rows:
                    results.append({"op": op, "shape": shape, "dtype": dname, "variant": label,
                                    "graph_us": graph, "do_bench_us": cold, "check": err,
                                    "bytes": nbytes,
                                    "of_copy_graph": copy[3] / graph if copy else None,
                                    "of_copy_do_bench": copy[4] / cold if copy else None})
                timed = sorted((r for r in rows if r[0] not in ("same bytes: copy",
                                                                "dg sum alone")),
                               key=lambda r: r[3])
                for label, _, _, graph, cold in timed[:6] + [r for r in timed[6:]
                                                             if r[0] == "today"]:
                    print(f"{name:<28} {label:<18} graph {graph:8.1f} us "
                          f"{nbytes / graph / 1e3:5.0f} GB/s"
                          + (f" {copy[3] / graph:.2f} of copy" if copy else "")
                          + f" | do_bench {cold:8.1f} us"
                          + (f" {copy[4] / cold:.2f} of copy" if copy else ""), flush=True)
                today = next((r for r in timed if r[0] == "today"), None)
                if timed and today and copy:
                    cold = min(timed, key=lambda r: r[4])
                    summary.append(
                        f"{name:<28} graph: best {timed[0][0]:<16} {today[3] / timed[0][3]:.3f}x "
                        f"today, of copy {copy[3] / today[3]:.2f} -> {copy[3] / timed[0][3]:.2f}; "
                        f"do_bench: best {cold[0]:<16} {today[4] / cold[4]:.3f}x today, of copy "
                        f"{copy[4] / today[4]:.2f} -> {copy[4] / cold[4]:.2f}")
    print("\nsummary:")
    print("\n".join(summary))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"gpu": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu",
            "torch": torch.__version__,
            "triton": rn.triton.__version__}
    (out / "row_stages.json").write_text(json.dumps({"meta": meta, "rows": results}, indent=1))


if __name__ == "__main__":
    main()
