"""Issue 37 (attention's small calls): the split forward (impl "split") against the pointer
forward it would replace, to set the tuning's `split_programs_below` (0, off, until this runs).

A forward of few query blocks (1x1x1024x64: 8 programs of 128 queries) is latency-bound: each
program walks every key one tile after another. The split forward cuts the keys into shares,
one program each, combined by a second launch (tuning `split_combine` "kernel") or by the
last share of a query block to finish ("last", one launch). For each row (batch x heads x seq
x head dim, dtype, causal):
  - the GPU's time of one forward (CUDA-graph replays, no host): the pointer forward, and the
    split forward in 2, 4 and 8 shares (the tuning forced to that many) combined by the last
    share ("last 2" ...), and in 4 shares combined by the second kernel ("kernel 4");
  - the wall time per call of `flash_attention` (2000 back-to-back calls, the native path)
    with the default tuning and with `split_programs_below` = the SM count, either combine,
    next to `F.scaled_dot_product_attention`'s;
each split checked against the pointer forward first (max abs difference of O, and of L);
  and how many of 100 calls took the Python path rather than a native plan (with its reason).

    python benchmarks/probes/attention_split.py [--shapes 1x1x1024x64:fp16:0,...] [--out DIR]
"""
import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from _common import save_rows, triton  # noqa: E402  (the checkout on sys.path)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from attention import DTYPES  # noqa: E402

SHAPES = ",".join(f"1x1x{n}x{d}:{dt}:{c}" for dt in ("fp16", "bf16") for c in (0, 1)
                  for d in (64, 128) for n in (512, 1024, 2048, 4096, 8192))
SHARES = (("last", 2), ("last", 4), ("last", 8), ("kernel", 4))


def wall_us(fn, calls=2000):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def python_forwards(fa, fn, calls=100):
    """How many of `calls` calls of fn ran the Python path's forward (fa._forward), not a
    native plan."""
    seen, forward = [], fa._forward
    fa._forward = lambda *a, **kw: seen.append(1) or forward(*a, **kw)
    try:
        for _ in range(calls):
            fn()
    finally:
        fa._forward = forward
    torch.cuda.synchronize()
    return len(seen)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=SHAPES, help="BxHxNxD:dtype:causal, comma-separated")
    p.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = p.parse_args(argv if argv is not None or __name__ == "__main__" else [])
    if not torch.cuda.is_available():
        print("attention_split.py needs a CUDA GPU", file=sys.stderr)
        return 1
    from tritonlab.kernels import _native
    from tritonlab.kernels import attention as fa
    dev = torch.cuda.current_device()
    if _native.module() is None:  # loaded before anything is timed: the steady state
        print(f"no native path: {_native.why()}")
    default = fa.tuning_for("attention", dev)
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    results = []

    def use(t):  # a tuning for every later call, native plans made again
        fa.tuning_for = lambda kind, device, t=t: t
        fa._native_attention.clear()

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton "
          f"{triton.__version__}; GPU us of a forward (graph replays), then wall us a call")
    for spec in (s for s in args.shapes.split(",") if s):
        dims, dt, causal = spec.split(":")
        b, h, n, d = map(int, dims.split("x"))
        causal = causal == "1"
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=DTYPES[dt]) for _ in range(3))
        row = {"row": spec, "gpu_us": {}, "max_diff": {}}
        use(default)
        o_ref, l_ref = fa.attention_forward(q, k, v, causal, impl="pointers")
        row["gpu_us"]["pointers"] = 1e3 * triton.testing.do_bench_cudagraph(
            lambda: fa.attention_forward(q, k, v, causal, impl="pointers"))
        for combine, shares in SHARES:
            use(dataclasses.replace(default, split_programs_below=1 << 30, split_min_keys=1,
                                    max_splits=shares, split_combine=combine))
            o, lse = fa.attention_forward(q, k, v, causal, impl="split")
            name = f"{combine} {shares}"
            row["max_diff"][name] = [(o.float() - o_ref.float()).abs().max().item(),
                                     (lse - l_ref).abs().max().item()]
            row["gpu_us"][name] = 1e3 * triton.testing.do_bench_cudagraph(
                lambda: fa.attention_forward(q, k, v, causal, impl="split"))
        row["wall_us"], row["python_forwards"] = {}, {}
        on = dataclasses.replace(default, split_programs_below=sms)
        for name, t in (("default", default),
                        ("last SMs", dataclasses.replace(on, split_combine="last")),
                        ("kernel SMs", dataclasses.replace(on, split_combine="kernel"))):
            use(t)
            row["wall_us"][name] = wall_us(lambda: fa.flash_attention(q, k, v, causal))
            row[f"impl {name}"] = fa.forward_impl(q, k, v)
            # calls of the last 100 that took the Python path (not the native plan), and why
            row["python_forwards"][name] = python_forwards(
                fa, lambda: fa.flash_attention(q, k, v, causal))
            row[f"native why {name}"] = str(fa._native_attention.why.get((causal, None)))
        row["wall_us"]["sdpa"] = wall_us(
            lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        use(default)
        results.append(row)
        print(f"{spec:<22} gpu " + " ".join(f"{kk}={vv:.1f}" for kk, vv in row["gpu_us"].items())
              + " | wall " + " ".join(f"{kk}={vv:.1f}" for kk, vv in row["wall_us"].items())
              + " | python " + "/".join(str(n) for n in row["python_forwards"].values())
              + f" | max diff {max(x[0] for x in row['max_diff'].values()):.1e}", flush=True)
    save_rows(args.out, "attention_split.json", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
