"""GPU benchmark of tritonlab's kernels against torch eager and torch.compile, in one run.

    python benchmarks/kernels.py [--out DIR] [--quick]

Times with triton.testing.do_bench (warm-up and repetitions in ms, CUDA events, median with
p20/p80). GB/s counts the fewest bytes the op must move (each input read once, each output
written once); TFLOP/s counts 2*M*N*K. Writes DIR/kernels.json, DIR/kernels.csv and
DIR/kernels.md (a table with the GPU name, versions and date) and prints the table.
"""
import argparse
import csv
import datetime
import json
import os
import sys
from pathlib import Path

for _src in ("src", "packages/minitriton/src"):  # run from a checkout, installed or not
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / _src))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from tritonlab import backend  # noqa: E402
from tritonlab.kernels import elementwise as ew  # noqa: E402
from tritonlab.kernels import matmul as mm  # noqa: E402
from tritonlab.kernels import rmsnorm as rn  # noqa: E402
from tritonlab.kernels import rowsum  # noqa: E402
from tritonlab.kernels import softmax as sm  # noqa: E402


def manual_gelu(t):
    return 0.5 * t * (1 + torch.tanh(0.7978845608028654 * (t + 0.044715 * t * t * t)))


def rms_eager(x, g):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * g


def fwd_bwd(fn, x, g, dy):
    return lambda: torch.autograd.grad(fn(x, g), (x, g), dy)


def suites(quick):
    """(op, shape label, dtype, {impl: fn}, work, unit) rows; work is bytes or FLOPs."""
    dev = "cuda"
    compiled = {}

    def comp(name, fn):
        if name not in compiled:
            compiled[name] = torch.compile(fn)
        return compiled[name]

    for dtype in (torch.float32, torch.bfloat16):
        n = 1 << 28
        a, b = torch.randn(n, device=dev, dtype=dtype), torch.randn(n, device=dev, dtype=dtype)
        e = a.element_size()
        yield ("add", "2^28", dtype, {"torch eager": lambda: a + b,
                                     "torch.compile": lambda: comp("add", torch.add)(a, b),
                                     "triton": lambda: ew.add(a, b)}, 3 * n * e, "GB/s")
        yield ("gelu", "2^28", dtype, {
            "torch eager": lambda: manual_gelu(a),
            "F.gelu": lambda: F.gelu(a, approximate="tanh"),
            "torch.compile": lambda: comp("gelu", lambda t: F.gelu(t, approximate="tanh"))(a),
            "triton": lambda: ew.gelu(a)}, 2 * n * e, "GB/s")
        shapes = [(8192, 4096)] if quick else [(8192, 4096), (32768, 1024), (4096, 16384),
                                               (1024, 65536)]
        for M, N in shapes:
            x = torch.randn(M, N, device=dev, dtype=dtype)
            e = x.element_size()
            yield ("softmax", f"{M}x{N}", dtype, {
                "torch eager": lambda: torch.softmax(x, -1),
                "torch.compile": lambda: comp("softmax", lambda t: torch.softmax(t, -1))(x),
                "triton": lambda: sm.softmax(x)}, 2 * M * N * e, "GB/s")
            yield ("row_sum", f"{M}x{N}", dtype, {
                "torch eager": lambda: x.sum(-1),
                "torch.compile": lambda: comp("sum", lambda t: t.sum(-1))(x),
                "triton": lambda: rowsum.row_sum(x)}, M * N * e, "GB/s")
            xg = x.clone().requires_grad_()
            g = torch.ones(N, device=dev, dtype=dtype, requires_grad=True)
            dy = torch.randn_like(x)
            yield ("rmsnorm fwd", f"{M}x{N}", dtype, {
                "torch eager": lambda: rms_eager(x, g),
                "F.rms_norm": lambda: F.rms_norm(x, (N,), g, 1e-6),
                "torch.compile": lambda: comp("rms", rms_eager)(x, g),
                "triton": lambda: rn.rmsnorm(x, g)}, 2 * M * N * e, "GB/s")
            yield ("rmsnorm fwd+bwd", f"{M}x{N}", dtype, {
                "torch eager": fwd_bwd(rms_eager, xg, g, dy),
                "torch.compile": fwd_bwd(comp("rms", rms_eager), xg, g, dy),
                "triton": fwd_bwd(rn.rmsnorm, xg, g, dy)}, 5 * M * N * e, "GB/s")
    for dtype in (torch.bfloat16, torch.float16):
        for n in ((4096,) if quick else (1024, 4096, 8192)):
            a = torch.randn(n, n, device=dev, dtype=dtype)
            b = torch.randn(n, n, device=dev, dtype=dtype)
            yield ("matmul+relu", f"{n}^3", dtype, {
                "torch eager": lambda: torch.relu(a @ b),
                "torch.compile": lambda: comp("mmrelu", lambda x, y: torch.relu(x @ y))(a, b),
                "triton": lambda: mm.matmul(a, b, "relu")}, 2 * n ** 3, "TFLOP/s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    parser.add_argument("--quick", action="store_true", help="one size per op")
    parser.add_argument("--only", action="append", help="only these ops (repeatable), e.g. "
                        "--only 'rmsnorm fwd+bwd'")
    parser.add_argument("--repeats", type=int, default=1,
                        help="time each row this many times, interleaving implementations, and "
                             "report the median of the medians (the host's noise shows in "
                             "repeat_medians_us)")
    args = parser.parse_args()
    if backend.NAME != "triton":
        sys.exit("benchmarks/kernels.py needs a CUDA GPU and triton")
    bench = backend.triton.testing.do_bench
    bench_graph = backend.triton.testing.do_bench_cudagraph
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "triton": backend.triton.__version__, "date": datetime.date.today().isoformat()}
    rows = []
    print(f"{meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']}")
    for op, shape, dtype, impls, work, unit in suites(args.quick):
        if args.only and op not in args.only:
            continue
        results = {}
        for fn in impls.values():
            fn()  # compile / autotune outside the timing
        runs = {name: [] for name in impls}
        for _ in range(args.repeats):
            for name, fn in impls.items():
                runs[name].append(bench(fn, warmup=25, rep=100, quantiles=[0.5, 0.2, 0.8]))
        for name, fn in impls.items():
            med, p20, p80 = sorted(runs[name])[len(runs[name]) // 2]
            try:  # replays of a CUDA graph: the GPU's time without Python launch overhead
                graph = bench_graph(fn, rep=50, return_mode="median")
            except Exception:  # noqa: BLE001 - some callables cannot be captured
                graph = float("nan")
            results[name] = med
            rate = work / med / (1e6 if unit == "GB/s" else 1e9)
            rows.append({"op": op, "shape": shape, "dtype": str(dtype)[6:], "impl": name,
                         "median_us": med * 1e3, "p20_us": p20 * 1e3, "p80_us": p80 * 1e3,
                         "graph_us": graph * 1e3, "rate": rate, "unit": unit,
                         "repeat_medians_us": [r[0] * 1e3 for r in runs[name]]})
        base, ours = results["torch eager"], results["triton"]
        line = "  ".join(f"{r['impl']} {r['median_us']:8.1f}us ({r['graph_us']:.1f})"
                         for r in rows[-len(results):])
        rate = work / ours / (1e6 if unit == "GB/s" else 1e9)
        print(f"{op:<16}{shape:<12}{str(dtype)[6:]:<9}{line}  triton {rate:6.0f} {unit}, "
              f"{base / ours:.2f}x eager", flush=True)
        graphs = {r["impl"]: r["graph_us"] for r in rows[-len(results):]}
        for r in rows[-len(results):]:
            r["speedup_vs_eager"] = base / r["median_us"] * 1e3
            r["graph_speedup_vs_eager"] = graphs["torch eager"] / r["graph_us"]
            if "torch.compile" in results:
                r["speedup_vs_compile"] = results["torch.compile"] / r["median_us"] * 1e3
                r["graph_speedup_vs_compile"] = graphs["torch.compile"] / r["graph_us"]
        write(Path(args.out), meta, rows, args.repeats)  # after every row: a cut-off run keeps them


def write(out, meta, rows, repeats):
    """kernels.json, kernels.csv, kernels.md and kernels-summary.md under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernels.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    with open(out / "kernels.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = [f"Measured on {meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, "
             f"{meta['date']}; do_bench median (p20-p80)"
             + (f", the median of {repeats} repeats (implementations interleaved)"
                if repeats > 1 else "")
             + ", and the median of CUDA-graph replays (the GPU's time without Python launch "
             "overhead).", "",
             "| op | shape | dtype | implementation | median us (p20-p80) | graph us | rate | "
             "vs eager | vs eager (graph) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['shape']} | {r['dtype']} | {r['impl']} | "
                     f"{r['median_us']:.1f} ({r['p20_us']:.1f}-{r['p80_us']:.1f}) | "
                     f"{r['graph_us']:.1f} | {r['rate']:.0f} {r['unit']} | "
                     f"{r['speedup_vs_eager']:.2f}x | {r['graph_speedup_vs_eager']:.2f}x |")
    (out / "kernels.md").write_text("\n".join(lines) + "\n")
    (out / "kernels-summary.md").write_text(summary(rows) + "\n")


CEILING = {"GB/s": 4300.0, "TFLOP/s": 732.0}  # measured copy bandwidth, cuBLAS bf16 (H200)


def summary(rows):
    """One line per op, shape and dtype: our kernel against torch eager and torch.compile."""
    lines = ["| op | shape | dtype | triton us (graph) | rate | of ceiling | vs torch eager | "
             "vs torch.compile | vs eager, graph | vs compile, graph |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["impl"] != "triton":
            continue
        ratios = [f"{r[k]:.2f}x" if k in r else "-" for k in (
            "speedup_vs_eager", "speedup_vs_compile", "graph_speedup_vs_eager",
            "graph_speedup_vs_compile")]
        lines.append(f"| {r['op']} | {r['shape']} | {r['dtype']} | {r['median_us']:.1f} "
                     f"({r['graph_us']:.1f}) | {r['rate']:.0f} {r['unit']} | "
                     f"{r['rate'] / CEILING[r['unit']]:.2f} | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
