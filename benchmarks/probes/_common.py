"""What the probes share: the checkout on sys.path, the backend's Triton, and one helper that
checks a variant and times it, so that a variant that does not compile, fit or run is a row
of the report instead of the end of the probe."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for _src in ("src", "packages/minitriton/src"):  # run from a checkout, installed or not
    sys.path.insert(0, str(ROOT / _src))

import torch  # noqa: E402

from tritonlab import backend  # noqa: E402

triton, tl = backend.triton, backend.tl


def shapes_from_argv(default):
    """The MxN shapes given on the command line (`probe.py 8192x4096 ...`), else `default`."""
    return [tuple(map(int, a.split("x"))) for a in sys.argv[1:]] or default


def do_bench(fn):
    """do_bench's median in ms (warm-up 25 ms, 100 ms of repetitions, L2 flushed)."""
    return triton.testing.do_bench(fn, return_mode="median")


def variant(label, fn, check=None, graph=True):
    """(us, label, check's text) for one variant: run once, check, then time CUDA-graph replays
    (graph=True: the GPU's own time) or do_bench's median; (inf, label, the error) if it fails."""
    try:
        fn()
        err = check() if check else ""
        ms = triton.testing.do_bench_cudagraph(fn, rep=30) if graph else do_bench(fn)
        return ms * 1e3, label, err
    except Exception as e:  # noqa: BLE001 - a variant may not compile, fit in shared memory or run
        return float("inf"), label, f"{type(e).__name__} {str(e)[:80]}".strip()


def interleaved(impls, repeats=3):
    """[label, fn, check's text, graph us, do_bench us] for each (label, fn, check or None) of
    `impls` that runs and passes its check: CUDA-graph replays, then the median of `repeats`
    do_bench medians taken in turn across the variants (the host's drift spread over all);
    a variant that fails is printed and left out."""
    rows = []
    for label, fn, check in impls:
        try:
            fn()
            err = check() if check else ""
            graph = triton.testing.do_bench_cudagraph(fn, rep=30) * 1e3
        except Exception as e:  # noqa: BLE001 - a variant may not compile, fit, run or agree
            print(f"  {label}: {type(e).__name__} {str(e)[:120]}", flush=True)
            continue
        rows.append([label, fn, err, graph, []])
    for _ in range(repeats):
        for r in rows:
            r[4].append(do_bench(r[1]) * 1e3)
    for r in rows:
        r[4] = sorted(r[4])[len(r[4]) // 2]
    return rows


def softmax_check(x, y):
    """check(out=None): the relative max error of out (default y) against a float64 softmax of
    x over its last dimension, as text; raises past bf16's or fp32's tolerance."""
    want = torch.softmax(x.double(), -1)
    tol = 1e-5 if x.dtype == torch.float32 else 2e-2

    def check(out=None):
        got = (y if out is None else out).double()
        err = ((got - want).abs().max() / want.abs().max()).item()
        assert err < tol, err
        return f"{err:.1e}"
    return check


def against_copy(title, impls, **keys):
    """`interleaved(impls)`, printed fastest first under `title` with each row's fraction of
    the "copy" row's time (graph and do_bench); returns the rows as dicts (label, graph_us,
    do_bench_us and `keys`) for the probe's JSON."""
    rows = interleaved(impls)
    copy = next(r for r in rows if r[0] == "copy")
    rows.sort(key=lambda r: r[4])
    print(f"== {title}: graph us, do_bench us, of the copy graph / do_bench", flush=True)
    for label, _, err, graph, cold in rows:
        print(f"  {label:<30} {graph:8.1f} {cold:8.1f}  {copy[3] / graph:5.2f} "
              f"{copy[4] / cold:5.2f}  {err}", flush=True)
    return [{**keys, "label": r[0], "graph_us": r[3], "do_bench_us": r[4]} for r in rows]




def against_same_bytes(x, copies, title, impls, **keys):
    """`against_copy(title, impls + a copy of `copies` times x's bytes, **keys)`: the copy is
    benchmarks/kernels.py's same-bytes ceiling."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    from kernels import same_bytes_copy
    return against_copy(title, impls + [("copy", same_bytes_copy(x, copies * x.nbytes), None)],
                        **keys)

def best_against_today(rows):
    """For each (shape, dtype) of `against_copy`'s rows (with a "today" key naming today's
    label): today's graph / do_bench us and the fastest variant's by do_bench, printed."""
    print("\nsummary: the best by do_bench against today's, graph / do_bench us")
    for key in sorted({(r["shape"], r["dtype"]) for r in rows}):
        group = [r for r in rows if (r["shape"], r["dtype"]) == key and r["label"] != "copy"]
        base = next((r for r in group if r["label"] == r["today"]), None)
        if base is None:  # today's launch failed (printed above)
            continue
        best = min(group, key=lambda r: r["do_bench_us"])
        print(f"{' '.join(key):<20} today {base['graph_us']:.1f} / {base['do_bench_us']:.1f}, "
              f"best {best['label']} {best['graph_us']:.1f} / {best['do_bench_us']:.1f}: "
              f"{base['graph_us'] / best['graph_us']:.3f}x / "
              f"{base['do_bench_us'] / best['do_bench_us']:.3f}x", flush=True)

def report(kind, name, rows, nbytes, best=6):
    """The `best` fastest of (us, label, err) rows, then the register-kernel rows among the
    rest; GB/s = nbytes / (us * 1e-6) / 1e9 = nbytes / us / 1e3."""
    rows.sort(key=lambda r: r[0])
    for us, label, err in rows[:best] + [r for r in rows[best:] if "registers" in r[1]]:
        print(f"{kind} {name:<16} {label:<28} {us:8.1f} us {nbytes / us / 1e3:6.0f} GB/s  "
              f"err {err}", flush=True)


def rms_inputs(M, N, dtype):
    """RMSNorm inputs on the GPU: (x of M rows of N, g of N, dy like x), standard normal."""
    x = torch.randn(M, N, device="cuda", dtype=dtype)
    return x, torch.randn(N, device="cuda", dtype=dtype), torch.randn_like(x)


def wide_inputs(N, dtype):
    """RMSNorm inputs of 2^26 elements in rows of N: (M, x, g, dy, label)."""
    M = (1 << 26) // N
    return (M, *rms_inputs(M, N, dtype), f"{M}x{N} {dtype_name(dtype)}")


def dtype_name(dtype):
    return str(dtype)[6:]  # torch.bfloat16 -> bfloat16


def tflops(n, ms):
    """TFLOP/s of an n^3 matmul in ms: 2 n^3 FLOPs / (ms * 1e-3) / 1e12."""
    return 2 * n ** 3 / ms / 1e9


def relu_matmul_inputs(n, dtype):
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    return a, b, torch.empty(n, n, device="cuda", dtype=dtype)


def parse_shapes(text, dtypes):
    """[(spec, batch, heads, seq, head dim, dtype name, causal)] of `BxHxNxD:dtype:causal,...`
    (attention's rows), the dtype one of `dtypes`' names; a malformed one exits with why."""
    out = []
    for spec in (s for s in text.split(",") if s):
        try:
            dims, dt, causal = spec.split(":")
            batch, heads, n, d = map(int, dims.split("x"))
            if dt not in dtypes or causal not in ("0", "1"):
                raise ValueError
        except ValueError:
            raise SystemExit(f"--shapes: {spec!r} is not BxHxNxD:dtype:causal (dtype one of "
                             f"{', '.join(dtypes)}; causal 0 or 1)") from None
        out.append((spec, batch, heads, n, d, dt, causal == "1"))
    return out


def save_rows(out_dir, name, rows):
    """`rows` into out_dir/name as JSON, with the GPU and the torch and Triton versions."""
    import json
    import os
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, name), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "triton": triton.__version__, "rows": rows}, f, indent=1)
