"""Issue 36: where the scatter of benchmarks/attention.py's timings comes from.

On an H100 (2026-12-06) our forward's do_bench times were two-humped (the 20th percentile
10-15 % under the median in some repeats) while cuDNN's were within 1 %; the bars compare
medians.

For each speed row and each implementation (ours, cuDNN; forward, and forward+backward with
--passes), three views of the same calls:
  - do_bench as benchmarks/attention.py takes it (L2 flushed, events around each call): every
    time, not just the median;
  - the kernels' own durations (CUPTI, through torch.profiler; L2 flushed before each call):
    the GPU's time without the host;
  - the host's time to enqueue one call (wall clock, the GPU kept busy).
If do_bench's times scatter where the kernels' do not, the host shows through (the GPU waits
for the launch inside the timed interval); if the kernels' durations scatter too, the GPU
itself varies (clocks, the order programs take tiles).

    python benchmarks/probes/attention_timing.py [--rows 0,1,2,3] [--passes fwd,fwd+bwd]
                                                 [--shapes 1x1x4096x128:bf16:1,...]
                                                 [--calls 50] [--profile] [--out DIR]

`--shapes` adds rows of its own (batch x heads x seq x head dim : dtype : causal), e.g. the
assignment table's batch-1 rows, where the host's time can be the call's. `--profile` writes
DIR/attention_host_profile.txt: a cProfile of 200 of our calls per row and pass (autograd's
worker thread off, so that it sees the backward), the top 30 functions by own time.
"""
import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the speed rows
from _common import parse_shapes, save_rows, triton  # noqa: E402  (the checkout on sys.path)

import torch  # noqa: E402

from attention import DTYPES, SPEED_ROWS, _inputs, implementations  # noqa: E402
from device_time import device_times  # noqa: E402
from launch_overhead import profiled  # noqa: E402

IMPLS = ("ours", "sdpa-cudnn")


def quantiles(xs):
    """p10, p20, median, p80, p90 of xs (ms)."""
    xs = sorted(xs)
    at = [xs[min(len(xs) - 1, int(q * len(xs)))] for q in (0.1, 0.2)]
    return [*at, statistics.median(xs),
            *(xs[min(len(xs) - 1, int(q * len(xs)))] for q in (0.8, 0.9))]


def host_us(fn, calls):
    """Wall microseconds to enqueue one call, the GPU busy all along (a call's first kernel
    queued behind a long one)."""
    torch.cuda._sleep(int(2e9))  # about a second of GPU time ahead of the calls
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    wall = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    return wall


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default="0,1,2,3")
    p.add_argument("--passes", default="fwd,fwd+bwd")
    p.add_argument("--shapes", default="",
                   help="more rows: BxHxNxD:dtype:causal, comma-separated (dtype fp16, bf16)")
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--profile", action="store_true",
                   help="a cProfile of 200 of our calls per row and pass")
    p.add_argument("--out", default=os.environ.get("OUT", "out"))
    # run.py calls main() with its own argv: the defaults then
    args = p.parse_args(argv if argv is not None or __name__ == "__main__" else [])
    if not torch.cuda.is_available():
        print("attention_timing.py needs a CUDA GPU", file=sys.stderr)
        return 1
    passes = [x for x in args.passes.split(",") if x]
    results, profiles = [], []
    for label, batch, heads, n, d, dt, causal in rows(args.rows, args.shapes):
        q, k, v, do = _inputs(batch, heads, n, d, DTYPES[dt])
        for name, (fn, ctx) in implementations(IMPLS).items():
            calls = {"fwd": lambda: fn(q, k, v, causal),
                     "fwd+bwd": lambda: torch.autograd.grad(fn(q, k, v, causal), (q, k, v), do)}
            try:  # a training step's steady state (the native path's own backward), or why not
                with ctx() if ctx else contextlib.nullcontext():
                    calls["fwd+bwd"]()
            except Exception as e:  # SDPA's backends take no fp32, for one
                first = (str(e).splitlines() or [""])[0]
                print(f"{label:<38} {name:<11} n/a: {type(e).__name__}: {first[:100]}",
                      flush=True)
                continue
            for which in passes:
                call = calls[which]
                with ctx() if ctx else contextlib.nullcontext():
                    call()
                    bench = triton.testing.do_bench(call, return_mode="all")
                    kernels = device_times(call, args.calls)
                    host = host_us(call, 20)
                row = {"row": label, "impl": name, "pass": which,
                       "do_bench_ms": quantiles(bench), "kernels_ms": quantiles(kernels),
                       "host_us": host, "do_bench_all": bench, "kernels_all": kernels}
                results.append(row)
                if args.profile and name == "ours":
                    profiles.append(f"=== {label}, ours, {which}: 200 calls\n"
                                    + profiled(call, 200))
                print(f"{label:<38} {name:<11} {which:<8} do_bench p10/p20/med/p80/p90 "
                      + "/".join(f"{x:.3f}" for x in row["do_bench_ms"])
                      + "  kernels " + "/".join(f"{x:.3f}" for x in row["kernels_ms"])
                      + f"  host {host:.0f} us", flush=True)
    save_rows(args.out, "attention_timing.json", results)
    if profiles:
        with open(os.path.join(args.out, "attention_host_profile.txt"), "w") as f:
            f.write("\n".join(profiles))
    return 0


def rows(indices, shapes):
    """The speed rows at `indices` (comma-separated) and the rows `shapes` describes, each
    (label, batch, heads, seq, head dim, dtype name, causal)."""
    return [SPEED_ROWS[int(i)] for i in indices.split(",") if i] + parse_shapes(shapes, DTYPES)


if __name__ == "__main__":
    sys.exit(main())
