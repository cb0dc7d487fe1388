"""Issue 36: each kernel's own GPU time in our attention's passes, to say which kernel makes a
row slower than another checkout's (run this file from each checkout on the same card).

benchmarks/attention.py times a pass as a whole (do_bench: the kernels and the host between
them). Here torch.profiler (CUPTI) records every kernel a call launches, the L2 flushed before
each call as do_bench does, and each kernel's median over the calls is printed: the forward,
then D = rowsum(dO * O), dK/dV and dQ of the backward. `--bwd-impls` adds rows for other
backward implementations (attention.py's BWD_IMPLS) where this checkout has them.

    python benchmarks/probes/attention_kernels.py [--shapes 1x1x32768x16:bf16:1,...]
                                                  [--bwd-impls atomic,atomic-tma] [--calls 30]
                                                  [--out DIR]
"""
import argparse
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from _common import parse_shapes, save_rows  # noqa: E402  (the checkout on sys.path)

import torch  # noqa: E402

from attention import DTYPES  # noqa: E402
from device_time import flushed_kernel_events  # noqa: E402
from tritonlab.kernels import attention as fa  # noqa: E402


def per_kernel(call, calls):
    """{kernel name: [µs of each call]} of `calls` calls, the L2 flushed before each."""
    times = defaultdict(list)
    for name, _, us in flushed_kernel_events(call, calls):
        times[name].append(us)
    return times


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="1x1x32768x16:bf16:1,1x1x8192x128:bf16:1")
    p.add_argument("--bwd-impls", default="", help="more backwards, comma-separated")
    p.add_argument("--calls", type=int, default=30)
    p.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = p.parse_args(argv if argv is not None or __name__ == "__main__" else [])
    if not torch.cuda.is_available():
        print("attention_kernels.py needs a CUDA GPU", file=sys.stderr)
        return 1
    impls = [None] + [b for b in args.bwd_impls.split(",") if b]
    has_impls = "bwd_impl" in fa.flash_attention.__code__.co_varnames
    rows = []
    for label, batch, heads, n, d, dt, causal in parse_shapes(args.shapes, DTYPES):
        dtype = DTYPES[dt]
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v, do = (torch.randn(batch, heads, n, d, device="cuda", dtype=dtype, generator=g)
                       .requires_grad_(i < 3) for i in range(4))
        for impl in impls:
            if impl and not has_impls:
                print(f"{label}: this checkout's flash_attention takes no bwd_impl")
                continue
            kw = {"bwd_impl": impl} if impl else {}

            def fwd():
                return fa.flash_attention(q, k, v, causal, **kw)

            def step():
                return torch.autograd.grad(fwd(), (q, k, v), do)
            try:
                step()
                got = {"fwd": per_kernel(fwd, args.calls), "fwd+bwd": per_kernel(step,
                                                                                  args.calls)}
            except Exception as e:  # noqa: BLE001 - an impl may not run on this input
                print(f"{label} {impl}: {type(e).__name__}: {str(e)[:120]}", flush=True)
                continue
            for which, times in got.items():
                med = {name: statistics.median(us) for name, us in times.items()}
                rows.append({"row": label, "bwd_impl": impl or "default", "pass": which,
                             "kernels_us": med, "all_us": times})
                print(f"{label:<24} {impl or 'default':<14} {which:<8} total "
                      f"{sum(med.values()):8.1f} us  "
                      + "  ".join(f"{name.split('_kernel')[0][-22:]} {us:.1f}"
                                  for name, us in med.items()), flush=True)
    save_rows(args.out, "attention_kernels.json", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
