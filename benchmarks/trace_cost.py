"""What recording a trace costs: a launch with `minitriton.trace()` against the same launch
untraced, at the sizes of lectures 02-05, under both executors (goal: at most 2x).

    python benchmarks/trace_cost.py [--repeats N] [--executor lockstep|sequential] [--json FILE]

Each row times the launch function (tritonlab's kernels on minitriton) `repeats` times, traced
and untraced interleaved, and reports the medians (p20-p80 in brackets) and their ratio. The
traced time includes the record's `finish` (columns per argument); `+ summary` also computes
every argument's writer/reader/race summary that the pictures use (lazily, on first use).
"""
import argparse
import datetime
import json
import platform
import statistics
import sys
import time

import numpy as np
import torch

import minitriton
from tritonlab import backend

elementwise = backend.with_backend("tritonlab.kernels.elementwise", "sim")
softmax = backend.with_backend("tritonlab.kernels.softmax", "sim")
rowsum = backend.with_backend("tritonlab.kernels.rowsum", "sim")
matmul = backend.with_backend("tritonlab.kernels.matmul", "sim")
rmsnorm = backend.with_backend("tritonlab.kernels.rmsnorm", "sim")


def cases():
    """(lecture, name, function): the lectures' launches, at their sizes."""
    torch.manual_seed(0)
    x, y = torch.randn(1000), torch.randn(1000)
    g16 = torch.randn(1 << 16)
    sm = torch.randn(300, 781)
    rs = torch.randn(8, 4096)
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    a4, b4 = torch.randn(1000, 512), torch.randn(512, 700)
    xr, gr, dyr = torch.randn(4096, 256), torch.randn(256), torch.randn(4096, 256)
    _, rstd = rmsnorm.rmsnorm_forward(xr, gr)
    return [
        ("02", "add n=1000 BLOCK 256", lambda: elementwise.add(x, y, block_size=256)),
        ("02", "gelu n=2^16", lambda: elementwise.gelu(g16)),
        ("03", "softmax 300x781 row", lambda: softmax.softmax(sm, variant="row")),
        ("03", "softmax 300x781 4 rows/program",
         lambda: softmax.softmax(sm, variant="rows", rows_per_program=4)),
        ("03", "row sum 8x4096 BLOCK 1024", lambda: rowsum.row_sum(rs, block_size=1024)),
        ("04", "matmul 256^3 16x16x16", lambda: matmul.matmul_relu_lecture(a, b, 16, 16, 16)),
        ("04", "matmul 256^3 64x64x16", lambda: matmul.matmul_relu_lecture(a, b, 64, 64, 16)),
        ("04", "matmul 1000x512x700 64x64x32",
         lambda: matmul.matmul_relu_lecture(a4, b4, 64, 64, 32)),
        ("05", "rmsnorm bwd 4096x256 16 rows/program",
         lambda: rmsnorm.rmsnorm_backward(dyr, xr, gr, rstd, rows_per_program=16)),
        ("05", "rmsnorm bwd 4096x256 1 row/program",
         lambda: rmsnorm.rmsnorm_backward(dyr, xr, gr, rstd, rows_per_program=1)),
    ]


def timed(fn, trace, summary=False):
    start = time.perf_counter()
    if trace:
        with minitriton.trace() as t:
            fn()
        if summary:
            for tr in t:
                for arg in tr.args.values():
                    arg.races()
        accesses = sum(len(a) + a.masked_count() for tr in t for a in tr.args.values())
    else:
        fn()
        accesses = 0
    return time.perf_counter() - start, accesses


def quantiles(xs):
    xs = sorted(xs)
    return statistics.median(xs), xs[int(0.2 * (len(xs) - 1))], xs[int(0.8 * (len(xs) - 1))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--executor", choices=("lockstep", "sequential"), action="append")
    parser.add_argument("--only", help="run the cases whose name contains this")
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args()
    rows = []
    print(f"{'lecture':<8}{'launch':<38}{'executor':<11}{'accesses':>12}{'plain ms':>24}"
          f"{'traced ms':>24}{'ratio':>7}{'+ summary':>10}")
    for executor in args.executor or ("lockstep", "sequential"):
        with minitriton.configure(executor=executor):
            for lecture, name, fn in cases():
                if args.only and args.only not in name:
                    continue
                fn()  # compile, warm caches
                plain, traced, summary = [], [], []
                for _ in range(args.repeats):
                    plain.append(timed(fn, False)[0])
                    seconds, accesses = timed(fn, True)
                    traced.append(seconds)
                    summary.append(timed(fn, True, summary=True)[0])
                p, t, s = quantiles(plain), quantiles(traced), quantiles(summary)
                row = {"lecture": lecture, "launch": name, "executor": executor,
                       "accesses": accesses, "plain_s": p[0], "plain_p20": p[1],
                       "plain_p80": p[2], "traced_s": t[0], "traced_p20": t[1],
                       "traced_p80": t[2], "summary_s": s[0], "ratio": t[0] / p[0],
                       "ratio_summary": s[0] / p[0]}
                rows.append(row)
                print(f"{lecture:<8}{name:<38}{executor:<11}{accesses:>12,}"
                      f"{f'{p[0] * 1e3:.1f} [{p[1] * 1e3:.1f}-{p[2] * 1e3:.1f}]':>24}"
                      f"{f'{t[0] * 1e3:.1f} [{t[1] * 1e3:.1f}-{t[2] * 1e3:.1f}]':>24}"
                      f"{row['ratio']:>7.2f}{row['ratio_summary']:>10.2f}", flush=True)
    if args.json:
        meta = {"date": datetime.date.today().isoformat(), "python": sys.version.split()[0],
                "numpy": np.__version__, "machine": platform.processor() or platform.machine(),
                "minitriton": minitriton.__version__, "repeats": args.repeats}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
