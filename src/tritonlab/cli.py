"""The `tritonlab` command line."""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path

DESCRIPTION = """\
tritonlab: learn, check and measure Triton kernels (CS336 lecture 6).

Kernels run on real Triton when a CUDA GPU and triton are present, else on minitriton, the
NumPy simulator (override with TRITONLAB_BACKEND=triton|sim|interpret)."""


def lectures_dir():
    env = os.environ.get("TRITONLAB_LECTURES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "lectures"


def available_lectures():
    folder = lectures_dir()
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob("[0-9][0-9]_*.py"))}


def _match(name, lectures):
    if name in lectures:
        return [lectures[name]]
    hits = [p for stem, p in lectures.items()
            if stem.startswith(name) or stem.split("_", 1)[1].startswith(name)
            or name in stem.split("_")]
    return hits


def cmd_lecture(args):
    lectures = available_lectures()
    if not lectures:
        print(f"no lecture scripts found in {lectures_dir()}; run from a checkout of the "
              "repository or set TRITONLAB_LECTURES", file=sys.stderr)
        return 2
    if args.name in (None, "list"):
        print("lectures:", ", ".join(lectures))
        if args.name == "list":
            return 0
        args.name = "all"
    paths = list(lectures.values()) if args.name == "all" else _match(args.name, lectures)
    if len(paths) != 1 and args.name != "all":
        what = "matches several" if paths else "matches none"
        print(f"lecture {args.name!r} {what} of: {', '.join(lectures)}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"\n=== {path.stem} ===\n", flush=True)
        runpy.run_path(str(path), run_name="__main__")
    return 0


def cmd_info(args):
    from . import backend
    import numpy
    import torch
    print(f"backend : {backend.NAME} ({backend.describe()})")
    print(f"device  : {backend.DEVICE}")
    print(f"torch   : {torch.__version__}, numpy {numpy.__version__}")
    print(f"lectures: {', '.join(available_lectures()) or 'none found'}")
    return 0


def cmd_bench(args):
    import torch
    from rich.console import Console

    from . import bench
    from .bench.workloads import make
    console = Console()
    device = args.device or bench.default_device()
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


def cmd_profile(args):
    import torch
    from rich.console import Console

    from .bench import default_device
    from .bench.workloads import make
    from .profile import count_ops, profile
    device = args.device or default_device()
    fn = make(args.workload, args.size, device, getattr(torch, args.dtype))
    report = profile(fn)
    Console().print(report.table(by=args.sort, limit=args.limit,
                                 title=f"{args.workload}, n = {args.size}, on {device}"))
    counts = count_ops(fn)
    print(f"operators per call: {sum(counts.values())} ({dict(counts)})")
    if args.csv:
        report.to_csv(args.csv)
    if args.trace:
        report.export_chrome_trace(args.trace)
        print(f"Chrome trace: {args.trace} (open in chrome://tracing or ui.perfetto.dev)")
    return 0


def _parse_shape(text):
    try:
        return tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"tritonlab compile-report: bad shape {text!r}; write it like 8x16")


def cmd_compile_report(args):
    import importlib
    import sys

    import torch
    from rich.console import Console

    from . import compilation
    module_name, _, attr = args.target.partition(":")
    if not attr:
        print("tritonlab compile-report: give the function as module:function", file=sys.stderr)
        return 2
    sys.path.insert(0, os.getcwd())
    fn = getattr(importlib.import_module(module_name), attr)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    inputs = [torch.randn(*_parse_shape(s), device=device, dtype=getattr(torch, args.dtype))
              for s in args.shapes]
    console = Console()
    console.print(compilation.explain(fn, *inputs).table(title=f"{args.target} on {device}"))
    if args.time:
        console.print(str(compilation.speedup(fn, *inputs, device=device)))
    if args.code:
        _, sources = compilation.generated_code(fn, *inputs)
        Path(args.code).write_text("\n\n".join(sources))
        print(f"generated code: {args.code} ({compilation.count_triton_kernels(sources)} Triton "
              "kernels)")
    return 0


ROOFLINE_KERNELS = {  # name -> (kernels module, call(module, shape, make_tensor))
    "add": ("tritonlab.kernels.elementwise", lambda m, s, r: m.add(r(s), r(s))),
    "gelu": ("tritonlab.kernels.elementwise", lambda m, s, r: m.gelu(r(s))),
    "softmax": ("tritonlab.kernels.softmax", lambda m, s, r: m.softmax(r(s))),
    "rowsum": ("tritonlab.kernels.rowsum", lambda m, s, r: m.row_sum(r(s))),
    "rmsnorm": ("tritonlab.kernels.rmsnorm", lambda m, s, r: m.rmsnorm_forward(r(s), r(s[-1:]))),
    "matmul": ("tritonlab.kernels.matmul", lambda m, s, r: m.matmul(r(s[:2]), r(s[1:3]))),
}
_DTYPE = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "tf32": "float32"}


def cmd_occupancy(args):
    from .hardware import occupancy
    print(occupancy(args.threads, args.registers, args.shared, args.gpu))
    return 0


def cmd_waves(args):
    from .hardware import waves
    print(waves(args.blocks, args.blocks_per_sm, args.gpu))
    return 0


def cmd_roofline(args):
    import minitriton

    from . import backend
    from .hardware import roofline
    module_name, call = ROOFLINE_KERNELS[args.kernel]
    shape = _parse_shape(args.shape)
    if args.kernel == "matmul" and len(shape) != 3:
        raise SystemExit("tritonlab roofline matmul: give --shape MxKxN")
    import torch
    dtype = getattr(torch, _DTYPE[args.dtype])
    sim = backend.with_backend(module_name, "sim")
    with minitriton.configure(footprint=True), minitriton.record() as rec:
        call(sim, shape, lambda s: torch.randn(*s, dtype=dtype))
    for launch in rec:
        print(f"{launch.kernel}: grid {launch.grid}, read {launch.bytes_read:,} B, written "
              f"{launch.bytes_written:,} B, unique {launch.unique_bytes:,} B, "
              f"{launch.dot_flops:,} FLOP (simulated)")
        print("  " + str(roofline(launch, args.gpu, args.dtype)))
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="tritonlab", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("lecture", help="run a lecture script (or all of them)",
                       description="Run the lecture scripts, which print the lecture's tables. "
                                   "NAME is a number (02), a full name "
                                   "(02_triton_elementwise), a word of it (elementwise), "
                                   "'all' (the default) or 'list'.")
    p.add_argument("name", nargs="?", metavar="NAME|all|list")
    p.set_defaults(func=cmd_lecture)
    p = sub.add_parser("info", help="say which backend and versions are in use")
    p.set_defaults(func=cmd_info)

    from .bench.workloads import WORKLOADS
    listing = "; ".join(f"{k}: {v[1]}" for k, v in WORKLOADS.items())
    p = sub.add_parser("bench", help="time a workload over sizes, the right way",
                       description="Time WORKLOAD at each size with warm-up, synchronisation "
                                   "(CUDA events on CUDA) and the median of several trials; "
                                   "print a table with the growth exponent between sizes, and "
                                   "optionally save a log-log plot and CSV/JSON with the device, "
                                   f"versions and date. Workloads: {listing}; or 'pitfalls' to "
                                   "measure the warm-up, synchronisation and .item() traps.")
    p.add_argument("workload", choices=list(WORKLOADS) + ["pitfalls"])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024, 2048],
                   help="matrix sizes n (default: 64 256 1024 2048)")
    p.add_argument("--device", help="cuda, mps or cpu (default: the best available)")
    p.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    p.add_argument("--trials", type=int, default=10, help="timed calls per size (default 10)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls first (default 3)")
    p.add_argument("--flush-l2", action="store_true", help="overwrite the L2 cache before each "
                   "trial (CUDA)")
    p.add_argument("--plot", metavar="PNG", help="save a log-log plot of time against size")
    p.add_argument("--csv", metavar="FILE", help="save the rows as CSV")
    p.add_argument("--json", metavar="FILE", help="save the rows as JSON")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("profile", help="show which operators and kernels a workload runs",
                       description="Run WORKLOAD once under torch.profiler (after a warm-up) and "
                                   "print its operators and device kernels with call counts and "
                                   f"times, and the operator count per call. Workloads: {listing}.")
    p.add_argument("workload", choices=list(WORKLOADS))
    p.add_argument("--size", type=int, default=1024, help="matrix size n (default 1024)")
    p.add_argument("--device", help="cuda, mps or cpu (default: the best available)")
    p.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    p.add_argument("--sort", default="cpu_time_us",
                   choices=["device_time_us", "cpu_time_us", "calls", "name"])
    p.add_argument("--limit", type=int, default=15, help="rows to show (default 15)")
    p.add_argument("--csv", metavar="FILE", help="save all rows as CSV")
    p.add_argument("--trace", metavar="FILE", help="save a Chrome trace (JSON)")
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser("compile-report", help="what torch.compile makes of your function",
                       description="Import FUNCTION (module:function, the module importable from "
                                   "the current directory), call it on random tensors of the "
                                   "given shapes, and report Dynamo's graphs and graph breaks "
                                   "with their reasons; optionally the eager/compiled times and "
                                   "Inductor's generated code.")
    p.add_argument("target", metavar="module:function")
    p.add_argument("--shapes", nargs="+", required=True, metavar="AxB",
                   help="one shape per tensor argument, e.g. 8x16 16")
    p.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    p.add_argument("--device", help="cuda or cpu (default: cuda when available)")
    p.add_argument("--time", action="store_true", help="also time eager against compiled")
    p.add_argument("--code", metavar="FILE", help="save Inductor's generated code here")
    p.set_defaults(func=cmd_compile_report)

    from .hardware import GPUS
    gpus = ", ".join(GPUS)
    p = sub.add_parser("occupancy", help="blocks and warps resident per SM, and what limits them",
                       description="How many blocks of a kernel fit on one SM, given its threads "
                                   "per block, registers per thread and shared memory per block; "
                                   f"registers are allocated per warp in units of 256. GPUs: {gpus}.")
    p.add_argument("--threads", type=int, required=True, help="threads per block")
    p.add_argument("--registers", type=int, required=True, help="registers per thread")
    p.add_argument("--shared", type=int, default=0, help="shared memory per block, bytes")
    p.add_argument("--gpu", default="H100")
    p.set_defaults(func=cmd_occupancy)
    p = sub.add_parser("waves", help="wave quantisation of a launch",
                       description="Blocks run in waves of (SMs x blocks per SM): how many full "
                                   f"waves, the tail, and the SM time left idle. GPUs: {gpus}.")
    p.add_argument("--blocks", type=int, required=True, help="blocks (programs) in the launch")
    p.add_argument("--blocks-per-sm", type=int, default=1)
    p.add_argument("--gpu", default="H100")
    p.set_defaults(func=cmd_waves)
    p = sub.add_parser("roofline", help="lower bound on a kernel's GPU time, from the simulator",
                       description="Run one of tritonlab's kernels on minitriton, count the "
                                   "bytes it moves (total and unique) and its tl.dot FLOPs, and "
                                   "bound its time on GPU: bytes / bandwidth against FLOPs / "
                                   f"peak rate. Kernels: {', '.join(ROOFLINE_KERNELS)}. GPUs: {gpus}.")
    p.add_argument("kernel", choices=list(ROOFLINE_KERNELS))
    p.add_argument("--shape", required=True, help="input shape, e.g. 4096x1024 (matmul: MxKxN)")
    p.add_argument("--gpu", default="H100")
    p.add_argument("--dtype", default="fp32", choices=list(_DTYPE),
                   help="input dtype; for matmul tf32 means fp32 inputs on TF32 tensor cores")
    p.set_defaults(func=cmd_roofline)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
