"""Simulator speed: minitriton against Triton's own interpreter, same kernels, same inputs.

    TRITON_INTERPRET=1 python benchmarks/sim_speed.py   (triton installed: adds its column)

Kernels are the lecture's, loaded from tests/corpus/kernels.py for each implementation.
Prints a table of median wall times over a few runs and the ratio.
"""
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

import minitriton  # noqa: E402
import minitriton.language as mtl  # noqa: E402
from corpus import load  # noqa: E402


def implementations():
    impls = {"minitriton (sequential)": load(minitriton, mtl)}
    try:
        import triton
        import triton.language as tl
        impls[f"triton {triton.__version__} interpreter"] = load(triton, tl)
    except ImportError:
        pass
    return impls


def add_2_20(k):
    n = 1 << 20
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    return lambda: k.add_kernel[(n // 1024,)](x, y, out, n, BLOCK=1024)


def softmax_4096x1024(k):
    x = torch.randn(4096, 1024)
    y = torch.empty_like(x)
    return lambda: k.softmax_kernel[(4096,)](x, y, x.stride(0), 1024, BLOCK=1024)


def main(repeats=3):
    impls = implementations()
    rows = [("add n=2^20, BLOCK 1024 (1024 programs)", add_2_20),
            ("softmax 4096x1024, row per program (4096 programs)", softmax_4096x1024)]
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs; median of {repeats} runs")
    for label, make in rows:
        times = {}
        for name, module in impls.items():
            fn = make(module)
            fn()  # warm-up (compilation, caches)
            samples = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                fn()
                samples.append(time.perf_counter() - t0)
            times[name] = statistics.median(samples)
        text = ", ".join(f"{n}: {t:.3f} s" for n, t in times.items())
        if len(times) == 2:
            a, b = times.values()
            text += f"  -> minitriton is {b / a:.2f}x the interpreter's speed"
        print(f"{label}: {text}")


if __name__ == "__main__":
    main()
