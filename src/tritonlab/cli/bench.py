"""`tritonlab bench` and `tritonlab profile`: time a named workload, or list what it runs.

The workloads' table lives in tritonlab.bench, which imports torch, so these parsers add their
options on first use (`Parser.on_first_use`) and the handlers import it when they run.
"""
from __future__ import annotations

from rich.console import Console

from .options import (add_device, add_dtype, non_negative_int, output_file, picture_formats,
                      positive_int, resolve_device)


def _workloads():
    from ..bench.workloads import WORKLOADS  # imports torch
    return WORKLOADS


def _listing(workloads):
    return "; ".join(f"{name}: {what}" for name, (_, what) in workloads.items())


def run_bench(args):
    import torch

    from .. import bench  # imports torch
    from ..bench.workloads import make
    console = Console()
    device = resolve_device(args.device, bench.default_device)
    if args.workload == "pitfalls":
        a = torch.randn(args.sizes[0], args.sizes[0], device=device)
        for p in (bench.first_run(lambda: (lambda: a @ a), device=device),
                  bench.no_sync(lambda: a @ a, device=device),
                  bench.item_in_loop(lambda: (a @ a).sum(), steps=10, device=device)):
            console.print(str(p))
        return 0
    dtype = getattr(torch, args.dtype)
    result = bench.sweep(lambda n: make(args.workload, n, device, dtype), args.sizes,
                         trials=args.trials, warmup=args.warmup, device=device,
                         flush_l2=args.flush_l2)
    console.print(result.table(title=f"{args.workload} ({args.dtype}) on {device}"))
    if args.plot:
        console.print(f"plot: {result.plot(args.plot, title=f'{args.workload} on {device}')}")
    result.export(args.csv, args.json)
    return 0


def _bench_options(p):
    workloads = _workloads()
    p.description = ("Time WORKLOAD at each size with warm-up, synchronisation (CUDA events on "
                     "CUDA) and the median of several trials; print a table with the growth "
                     "exponent between sizes, and optionally save a log-log plot and CSV/JSON "
                     f"with the device, versions and date. Workloads: {_listing(workloads)}; or "
                     "'pitfalls' to measure the warm-up, synchronisation and .item() traps.")
    p.add_argument("workload", choices=list(workloads) + ["pitfalls"])
    p.add_argument("--sizes", type=positive_int, nargs="+", default=[64, 256, 1024, 2048],
                   help="matrix sizes n (default: 64 256 1024 2048)")
    add_device(p)
    add_dtype(p)
    p.add_argument("--trials", type=positive_int, default=10,
                   help="timed calls per size (default 10)")
    p.add_argument("--warmup", type=non_negative_int, default=3,
                   help="untimed calls first (default 3)")
    p.add_argument("--flush-l2", action="store_true", help="overwrite the L2 cache before each "
                   "trial (CUDA)")
    p.add_argument("--plot", metavar="PNG", type=output_file(picture_formats),
                   help="save a log-log plot of time against size (x.png; or .pdf, .svg...)")
    p.add_argument("--csv", metavar="FILE", type=output_file(), help="save the rows as CSV "
                   "(x.csv; the device, versions and date go beside it in x.meta.json)")
    p.add_argument("--json", metavar="FILE", type=output_file(), help="save the rows as JSON")


def run_profile(args):
    import torch

    from ..bench import default_device  # imports torch
    from ..bench.workloads import make
    from ..profile import count_ops, describe_ops, profile
    device = resolve_device(args.device, default_device)
    fn = make(args.workload, args.size, device, getattr(torch, args.dtype))
    report = profile(fn)
    Console().print(report.table(by=args.sort, limit=args.limit,
                                 title=f"{args.workload}, n = {args.size}, on {device}"))
    counts = count_ops(fn)
    print(f"operators per call: {sum(counts.values())} ({describe_ops(counts)})")
    if args.lines:
        _print_lines(args)
    if args.csv:
        report.to_csv(args.csv)
    if args.trace:
        report.export_chrome_trace(args.trace)
        print(f"Chrome trace: {args.trace} (open in chrome://tracing or ui.perfetto.dev)")
    return 0


def _lines_call(workload, n, dtype):
    """A call of tritonlab's Triton kernel for a workload, on minitriton (CPU tensors)."""
    import torch

    from .. import backend
    x = torch.randn(n, n, dtype=dtype)
    if workload == "matmul":
        mm = backend.with_backend("tritonlab.kernels.matmul", "sim")
        y = torch.randn(n, n, dtype=dtype)
        return "matmul_relu_lecture (the lecture's kernel, 64x64x32 tiles)", \
            lambda: mm.matmul_relu_lecture(x, y)
    if workload == "softmax":
        sm = backend.with_backend("tritonlab.kernels.softmax", "sim")
        return "softmax", lambda: sm.softmax(x)
    ew = backend.with_backend("tritonlab.kernels.elementwise", "sim")
    return "gelu (one fused kernel)", lambda: ew.gelu(x)


def _print_lines(args):
    import torch

    from ..profile import lines_table, memory_lines
    what, call = _lines_call(args.workload, args.size, getattr(torch, args.dtype))
    console = Console(width=max(Console().width, 150))  # a wide table: not cut at 80 columns
    console.print(f"\ntritonlab's Triton kernel for {args.workload}: {what}, n = {args.size}, "
                  "on minitriton (memory per kernel line, as a GPU's 32-byte sectors see it)")
    for record in memory_lines(call):
        console.print(lines_table(record))


def _profile_options(p):
    workloads = _workloads()
    p.description = ("Run WORKLOAD once under torch.profiler (after a warm-up) and print its "
                     "operators and device kernels with call counts and times, and the operator "
                     f"count per call. Workloads: {_listing(workloads)}.")
    p.add_argument("workload", choices=list(workloads))
    p.add_argument("--size", type=positive_int, default=1024,
                   help="matrix size n (default 1024)")
    add_device(p)
    add_dtype(p)
    p.add_argument("--sort", default="cpu_time_us",
                   choices=["device_time_us", "cpu_time_us", "calls", "name"])
    p.add_argument("--limit", type=positive_int, default=15, help="rows to show (default 15)")
    p.add_argument("--csv", metavar="FILE", type=output_file(), help="save all rows as CSV")
    p.add_argument("--trace", metavar="FILE", type=output_file(),
                   help="save a Chrome trace (JSON)")
    p.add_argument("--lines", action="store_true",
                   help="also run tritonlab's Triton kernel for the workload on minitriton and "
                        "print, per load and store line, the 32-byte sectors it fetches, its "
                        "coalescing efficiency and the reuse across programs")


def register(subparsers):
    p = subparsers.add_parser("bench", help="time a workload over sizes, the right way")
    p.on_first_use(_bench_options)
    p.set_defaults(func=run_bench)
    p = subparsers.add_parser("profile", help="show which operators and kernels a workload runs")
    p.on_first_use(_profile_options)
    p.set_defaults(func=run_profile)
