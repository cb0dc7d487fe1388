"""GPU benchmark of tritonlab's kernels against torch eager and torch.compile, in one run.

    python benchmarks/kernels.py [--ledger PATH] [--out DIR] [--quick] [--only OP] [--repeats N]

Times with triton.testing.do_bench (warm-up 25 ms, 100 ms of repetitions, L2 flushed, CUDA
events; median with p20/p80) and do_bench_cudagraph (CUDA-graph replays: the GPU's time without
Python launch overhead). GB/s counts the fewest bytes the op must move (each input read once,
each output written once); TFLOP/s counts 2*M*N*K. Each memory-bound row also times a copy of
the same byte count ("same bytes: copy"; for row_sum a read, x.sum()), the ceiling at that size
under the same timing. Appends every row to the results ledger
(docs/results/ledger.csv by default) as soon as its op is measured, so a cut-off run keeps what
it measured; writes DIR/kernels.json with every repeat's median; prints the summary of
benchmarks/ledger_report.py (ratios against torch in the same run, fraction of the ceiling).
"""
import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _src in ("src", "packages/minitriton/src"):  # run from a checkout, installed or not
    sys.path.insert(0, str(ROOT / _src))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from ledger_report import summary  # noqa: E402
from tritonlab import backend  # noqa: E402
from tritonlab.bench import export  # noqa: E402
from tritonlab.kernels import elementwise as ew  # noqa: E402
from tritonlab.kernels import matmul as mm  # noqa: E402
from tritonlab.kernels import rmsnorm as rn  # noqa: E402
from tritonlab.kernels import rowsum  # noqa: E402
from tritonlab.kernels import softmax as sm  # noqa: E402

try:  # Liger-Kernel, where installed (docs/gpu.md): its rows join the softmax and RMSNorm groups
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
except Exception:  # noqa: BLE001 - not installed, or an install that fails on import: no rows
    LigerRMSNormFunction = LigerSoftmaxFunction = None


def liger_rms(x, g):
    """Liger's RMSNorm with our semantics (weight multiplies, no offset, eps 1e-6), its dy left
    alone in the backward."""
    return LigerRMSNormFunction.apply(x, g, 1e-6, 0.0, "llama", False)


# Liger 0.8.5's softmax and RMSNorm take rows of at most 65536 (its calculate_settings
# raises past that; docs/decisions.md#softmax-exchange)
LIGER_MAX_COLS = 65536


def with_liger(impls, liger, n_cols):
    """`impls` with Liger's row added before ours, where Liger is installed and takes rows of
    n_cols."""
    if LigerSoftmaxFunction is None or n_cols > LIGER_MAX_COLS:
        return impls
    mine = impls.pop("triton")
    return {**impls, "Liger": liger, "triton": mine}


def same_bytes_copy(like, nbytes):
    """A copy (read nbytes/2, write nbytes/2) of a contiguous buffer of like's dtype: the
    ceiling at the op's own byte count, timed as the op is (benchmarks/probes/ceiling.py)."""
    src = torch.empty(nbytes // 2 // like.element_size(), device=like.device, dtype=like.dtype)
    dst = torch.empty_like(src)  # preallocated: a clone inside a CUDA graph times its pool too
    return lambda: dst.copy_(src)


def same_bytes_read(x):
    """A read of all of x (torch's sum of every element): the ceiling of a reduction that
    reads x once and writes next to nothing."""
    return lambda: x.sum()


def manual_gelu(t):
    return 0.5 * t * (1 + torch.tanh(0.7978845608028654 * (t + 0.044715 * t * t * t)))


def rms_eager(x, g):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * g


def fwd_bwd(fn, x, g, dy):
    return lambda: torch.autograd.grad(fn(x, g), (x, g), dy)


def suites(quick):
    """(op, shape label, dtype, {impl: fn}, work, unit) rows; work is bytes or FLOPs. An impls
    dict may carry a "detail" entry: a function whose text (the matmul's tuned config) goes into
    the triton row's ledger note, not a timed implementation."""
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
                                     "triton": lambda: ew.add(a, b),
                                     "same bytes: copy": same_bytes_copy(a, 3 * n * e)},
               3 * n * e, "GB/s")
        yield ("gelu", "2^28", dtype, {
            "torch eager": lambda: manual_gelu(a),
            "F.gelu": lambda: F.gelu(a, approximate="tanh"),
            "torch.compile": lambda: comp("gelu", lambda t: F.gelu(t, approximate="tanh"))(a),
            "triton": lambda: ew.gelu(a), "same bytes: copy": same_bytes_copy(a, 2 * n * e)},
            2 * n * e, "GB/s")
        shapes = [(8192, 4096)] if quick else [(8192, 4096), (32768, 1024), (4096, 16384),
                                               (1024, 65536), (256, 262144)]
        for M, N in shapes:
            x = torch.randn(M, N, device=dev, dtype=dtype)
            e = x.element_size()
            yield ("softmax", f"{M}x{N}", dtype, with_liger({
                "torch eager": lambda: torch.softmax(x, -1),
                "torch.compile": lambda: comp("softmax", lambda t: torch.softmax(t, -1))(x),
                "triton": lambda: sm.softmax(x),
                "same bytes: copy": same_bytes_copy(x, 2 * M * N * e)},
                lambda: LigerSoftmaxFunction.apply(x), N), 2 * M * N * e, "GB/s")
            yield ("row_sum", f"{M}x{N}", dtype, {
                "torch eager": lambda: x.sum(-1),
                "torch.compile": lambda: comp("sum", lambda t: t.sum(-1))(x),
                "triton": lambda: rowsum.row_sum(x), "same bytes: read": same_bytes_read(x)},
                M * N * e, "GB/s")
            xg = x.clone().requires_grad_()
            g = torch.ones(N, device=dev, dtype=dtype, requires_grad=True)
            dy = torch.randn_like(x)
            yield ("rmsnorm fwd", f"{M}x{N}", dtype, with_liger({
                "torch eager": lambda: rms_eager(x, g),
                "F.rms_norm": lambda: F.rms_norm(x, (N,), g, 1e-6),
                "torch.compile": lambda: comp("rms", rms_eager)(x, g),
                "triton": lambda: rn.rmsnorm(x, g),
                "same bytes: copy": same_bytes_copy(x, 2 * M * N * e)},
                lambda: liger_rms(x, g), N), 2 * M * N * e, "GB/s")
            yield ("rmsnorm fwd+bwd", f"{M}x{N}", dtype, with_liger({
                "torch eager": fwd_bwd(rms_eager, xg, g, dy),
                "torch.compile": fwd_bwd(comp("rms", rms_eager), xg, g, dy),
                "triton": fwd_bwd(rn.rmsnorm, xg, g, dy),
                "same bytes: copy": same_bytes_copy(x, 5 * M * N * e)},
                fwd_bwd(liger_rms, xg, g, dy), N), 5 * M * N * e, "GB/s")
    for dtype in (torch.bfloat16, torch.float16):
        for n in ((4096,) if quick else (1024, 4096, 8192)):
            a = torch.randn(n, n, device=dev, dtype=dtype)
            b = torch.randn(n, n, device=dev, dtype=dtype)
            yield ("matmul+relu", f"{n}^3", dtype, {
                "torch eager": lambda: torch.relu(a @ b),
                "torch.compile": lambda: comp("mmrelu", lambda x, y: torch.relu(x @ y))(a, b),
                "triton": lambda: mm.matmul(a, b, "relu"),
                "detail": lambda: "kernel, config: {} {}; ".format(*mm.matmul_plan(a, b, "relu"))},
                2 * n ** 3, "TFLOP/s")


def ledger_rows(op, shape, dtype, runs, graphs, work, unit, repeats, detail=""):
    """Ledger rows of one suite row: `runs` maps each implementation to its repeats' do_bench
    (median, p20, p80) in ms, `graphs` to its CUDA-graph median in ms (NaN if not capturable).
    The reported repeat is the one with the median median; `detail` starts the triton row's
    note."""
    rows = []
    for name, reps in runs.items():
        med, p20, p80 = sorted(reps)[len(reps) // 2]
        # rate: bytes / s / 1e9 = GB/s, or FLOPs / s / 1e12 = TFLOP/s; med is in ms
        rate = work / (med * 1e-3) / (1e9 if unit == "GB/s" else 1e12)
        note = (detail if name == "triton" else "") + ("" if repeats == 1 else (
            "repeat medians us: " + " ".join(f"{r[0] * 1e3:.1f}" for r in reps) + "; "))
        rows.append({"op": op, "shape": shape, "dtype": str(dtype)[6:], "implementation": name,
                     "median_ms": med, "p20_ms": p20, "p80_ms": p80, "graph_ms": graphs[name],
                     "rate": rate, "unit": unit, "note": note + NOTE.format(repeats=repeats)})
    return rows


NOTE = ("benchmarks/kernels.py --repeats {repeats}; do_bench median (p20-p80), warm-up 25 ms, "
        "rep 100 ms, L2 flushed; graph: do_bench_cudagraph median")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledger", type=Path, default=ROOT / "docs" / "results" / "ledger.csv",
                        help="results ledger to append to (default: %(default)s)")
    parser.add_argument("--out", default=os.environ.get("OUT", "out"),
                        help="directory for kernels.json (every repeat of every row)")
    parser.add_argument("--quick", action="store_true", help="one size per op")
    parser.add_argument("--only", action="append", help="only these ops (repeatable), e.g. "
                        "--only 'rmsnorm fwd+bwd'")
    parser.add_argument("--repeats", type=int, default=1,
                        help="time each row this many times, interleaving implementations, and "
                             "report the median of the medians (the host's noise shows in "
                             "the note and in kernels.json)")
    args = parser.parse_args()
    if backend.NAME != "triton":
        sys.exit("benchmarks/kernels.py needs a CUDA GPU and triton")
    bench = backend.triton.testing.do_bench
    bench_graph = backend.triton.testing.do_bench_cudagraph
    meta = {"run": export.run_label(), "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__, "triton": backend.triton.__version__,
            "commit": export.git_commit(ROOT)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"run {meta['run']}: {meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, "
          f"commit {meta['commit']}; appending to {args.ledger}")
    repeats_json = []
    for op, shape, dtype, impls, work, unit in suites(args.quick):
        if args.only and op not in args.only:
            continue
        detail = impls.pop("detail", None)
        for name, fn in list(impls.items()):
            try:
                fn()  # compile / autotune outside the timing
            except Exception as e:  # noqa: BLE001 - one implementation's failure, not the run's
                if name == "triton":
                    raise
                print(f"  {op} {shape} {str(dtype)[6:]}: {name} left out: {type(e).__name__} "
                      f"{str(e)[:120]}", flush=True)
                del impls[name]
        runs = {name: [] for name in impls}
        for _ in range(args.repeats):
            for name, fn in impls.items():
                runs[name].append(bench(fn, warmup=25, rep=100, quantiles=[0.5, 0.2, 0.8]))
        graphs = {}
        for name, fn in impls.items():
            try:  # replays of a CUDA graph: the GPU's time without Python launch overhead
                graphs[name] = bench_graph(fn, rep=50, return_mode="median")
            except Exception:  # noqa: BLE001 - some callables cannot be captured
                graphs[name] = float("nan")
        rows = ledger_rows(op, shape, dtype, runs, graphs, work, unit, args.repeats,
                           detail() if detail else "")
        export.append_ledger(args.ledger, rows, meta)
        repeats_json += [{**r, "repeats_ms": runs[r["implementation"]]} for r in rows]
        (out / "kernels.json").write_text(json.dumps({"meta": meta, "rows": repeats_json},
                                                     indent=1))
        line = "  ".join(f"{r['implementation']} {r['median_ms'] * 1e3:8.1f}us "
                         f"({r['graph_ms'] * 1e3:.1f})" for r in rows)
        ours = rows[list(impls).index("triton")]
        print(f"{op:<16}{shape:<12}{str(dtype)[6:]:<9}{line}  triton {ours['rate']:6.0f} {unit}, "
              f"{rows[0]['median_ms'] / ours['median_ms']:.2f}x eager", flush=True)
    print(summary(export.read_ledger(args.ledger, run=meta["run"])))


if __name__ == "__main__":
    main()
