"""Probe: the host cost of work inside a Python autograd node's backward, with autograd's CUDA
worker thread on (the default) and off, against the same work on the main thread: an identity
Function, backwards making k allocations, k Triton launches, k data_ptr() calls or a pure-Python
loop, the smallest RMSNorm Function (3 allocations and 2 launches in its backward), tritonlab's
rmsnorm and eager F.rms_norm (64x4096 fp32: the GPU keeps up, so CPU us per step).
Decided: docs/ops.md#host-cost (why the step's goal is out of reach with the worker thread).

    python benchmarks/probes/autograd_threads.py
"""
import sys
import threading
import time
from pathlib import Path

for _src in ("src", "packages/minitriton/src"):  # run from a checkout, installed or not
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / _src))

import torch  # noqa: E402
from tritonlab import backend  # noqa: E402
from tritonlab.kernels import _launch  # noqa: E402
from tritonlab.kernels import rmsnorm as rn  # noqa: E402
triton, tl = backend.triton, backend.tl
DEV, M, N = "cuda", 64, 4096


def per_call(fn, n=1000, warm=50):
    """(best, median) CPU us per call over three timed loops of n calls."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - t0) / n * 1e6)
        torch.cuda.synchronize()
    return min(runs), sorted(runs)[1]


@triton.jit
def noop_kernel(x_ptr, n, B: tl.constexpr):
    pass


def backward_doing(k_empty=0, k_launch=0, k_ptr=0, k_py=0, launch=None):
    """An identity Function whose backward also makes k allocations, k launches, k data_ptr()
    calls and a Python loop of k_py steps."""
    class Work(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a.view_as(a)

        @staticmethod
        def backward(ctx, d):
            for _ in range(k_empty):
                torch.empty(16, device=DEV)
            for _ in range(k_launch):
                launch()
            for _ in range(k_ptr):
                d.data_ptr()
            total = 0
            for i in range(k_py):
                total += i
            return d, None
    return Work


def smallest_rmsnorm():
    """RMSNorm as a bare Function: the fewest host steps for its three launches."""
    fwd = _launch.Bound(rn.rmsnorm_fwd_kernel, (M,), BLOCK_SIZE=N, ACC=tl.float32, num_warps=8)
    bwd = _launch.Bound(rn.rmsnorm_bwd_kernel, (M,), BLOCK_SIZE=N, ACC=tl.float32, num_warps=8)
    dg_sum = _launch.Bound(rn.rmsnorm_dg_sum_kernel, (N // 32,), BLOCK_P=64, BLOCK_N=32,
                           ACC=tl.float32, num_warps=4)

    class Smallest(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            y, r = torch.empty_like(a), torch.empty(M, device=DEV)
            fwd(a, b, y, r, N, 1e-6)
            ctx.save_for_backward(a, b, r)
            return y

        @staticmethod
        def backward(ctx, d):
            a, b, r = ctx.saved_tensors
            dx, partial = torch.empty_like(a), torch.empty(M, N, device=DEV)
            dg = torch.empty(N, device=DEV)
            bwd(a, b, r, d, dx, partial, M, N, 1)
            dg_sum(partial, dg, M, N)
            return dx, dg
    return Smallest


def main():
    print(torch.__version__, triton.__version__, torch.cuda.get_device_name(), flush=True)
    print("Python threads:", [t.name for t in threading.enumerate()])
    x, g = torch.randn(M, N, device=DEV), torch.randn(N, device=DEV)
    dy = torch.randn_like(x)
    xg, gg = x.clone().requires_grad_(), g.clone().requires_grad_()
    small = torch.empty(16, device=DEV)
    direct = _launch._Direct(noop_kernel[(1,)](small, 16, B=16), (("B", 16),))

    def noop_launch():
        direct((1,), torch.cuda.current_device(), (small, 16), {})
    works = {
        "identity": backward_doing(),
        "8 torch.empty": backward_doing(k_empty=8),
        "32 torch.empty": backward_doing(k_empty=32),
        "8 noop launches": backward_doing(k_launch=8, launch=noop_launch),
        "32 data_ptr": backward_doing(k_ptr=32),
        "py loop 2000": backward_doing(k_py=2000),
    }
    smallest = smallest_rmsnorm()
    rows = []
    for threads in (True, False):
        torch.autograd.set_multithreading_enabled(threads)
        for name, work in works.items():
            rows.append((name, threads, per_call(
                lambda: torch.autograd.grad(work.apply(xg, gg), (xg,), dy))))
        rows.append(("smallest RMSNorm Function step", threads, per_call(
            lambda: torch.autograd.grad(smallest.apply(xg, gg), (xg, gg), dy))))
        rows.append(("tritonlab rmsnorm step", threads, per_call(
            lambda: torch.autograd.grad(rn.rmsnorm(xg, gg), (xg, gg), dy))))
        rows.append(("eager F.rms_norm step", threads, per_call(
            lambda: torch.autograd.grad(torch.nn.functional.rms_norm(xg, (N,), gg, 1e-6),
                                        (xg, gg), dy))))
    torch.autograd.set_multithreading_enabled(True)
    rows += [  # the same pieces on the main thread
        ("main: 8 torch.empty", None, per_call(
            lambda: [torch.empty(16, device=DEV) for _ in range(8)])),
        ("main: 8 noop launches", None, per_call(lambda: [noop_launch() for _ in range(8)])),
        ("main: py loop 2000", None, per_call(lambda: sum(range(2000)))),
    ]
    print(f"{'CPU us per call':<34}{'threads':<9}{'best':>8}{'median':>9}")
    for name, threads, (best, median) in rows:
        where = "main" if threads is None else "on" if threads else "off"
        print(f"{name:<34}{where:<9}{best:8.1f}{median:9.1f}")


if __name__ == "__main__":
    main()
