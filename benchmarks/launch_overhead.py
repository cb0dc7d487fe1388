"""GPU: the CPU cost of each layer of a kernel call (Python checks, allocation, Triton's
launcher, the custom-op layer, autograd), to find where small and launch-bound calls lose their
time.

    python benchmarks/launch_overhead.py [--out DIR] [--small | --step | --ops [--small] [--profile]
                                         [--attention-split N|sms]]

Each line is microseconds of CPU per call, averaged over many calls of a small problem (the GPU
keeps up, so the figure is the host's cost). The "layers" table adds one layer per row, from
the bare launch to the custom op with autograd (kernels/ops.py), and sets a forward+backward
step through the custom op against the same launch functions under a plain
autograd.Function (no custom op) and against eager F.rms_norm. Writes
DIR/launch_overhead.txt and a cProfile of one RMSNorm forward+backward step (autograd
multithreading off, so the profiler sees the backward) to DIR/launch_overhead_profile.txt.
`--small` runs only the layers table, a few calls of a tiny problem, on whatever backend is
active (the simulator on a CPU: a check that the script runs, not a measurement). `--step`
runs only the GPU-bound training steps (8192x4096 fp32 and bf16, autograd's worker thread on
and off): our step with its native C++ backward node (kernels/_native.py), the same with the
Python Function (TRITONLAB_NATIVE's switch off for those calls), torch.compile and eager
F.rms_norm, as do_bench medians and as the wall time per step of 200 back-to-back steps.
`--ops` (issue 37's table) times every public op at a small size against torch's equivalent
in the same process: wall time per call of 2000 back-to-back calls synchronised once (the
median of 5 such windows, ours and torch's taken in turn), forward (no gradient) and
forward+backward (`autograd.grad` of the output against a fixed dy), and their ratio (the
median of the paired windows' ratios); `--ops --small` is a few calls on whatever backend
is active (the simulator on a CPU: a check that the table runs). Writes DIR/launch_ops.txt.
"""
import argparse
import cProfile
import io
import os
import pstats
import sys
import threading
import time
from pathlib import Path

for _src in ("src", "packages/minitriton/src"):  # run from a checkout, installed or not
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / _src))

import torch  # noqa: E402

from tritonlab import backend  # noqa: E402
from tritonlab.kernels import _checks, _launch, _native  # noqa: E402
from tritonlab.kernels import matmul as mm  # noqa: E402
from tritonlab.kernels import rmsnorm as rn  # noqa: E402

triton, tl = backend.triton, backend.tl
LINES = []
SMALL = {"calls": 3, "warmup": 1}  # --small
CALLS = {"calls": 2000, "warmup": 50}


def say(line):
    print(line, flush=True)
    LINES.append(line)


def _sync():
    if backend.DEVICE == "cuda":
        torch.cuda.synchronize()


def per_call(fn, n=None):
    n = n or CALLS["calls"]
    for _ in range(CALLS["warmup"]):
        fn()
    _sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    _sync()
    return (t1 - t0) / n * 1e6


def _window(fn, n):
    """Wall us per call of n back-to-back calls of fn, synchronised once at the end."""
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    _sync()
    return (time.perf_counter() - t0) / n * 1e6


def _median(values):
    return sorted(values)[len(values) // 2]


def wall_per_step(fn, n=200, windows=5):
    """Wall time per call of n back-to-back calls, synchronised once at the end: what a training
    loop sees (the host's cost or the GPU's, whichever is larger). The median of `windows`
    such windows, so that one window the host's scheduler interrupted does not decide it."""
    for _ in range(10):
        fn()
    _sync()
    return _median([_window(fn, n) for _ in range(windows)])


def paired_wall(ours, theirs, n, windows=5):
    """(ours us, theirs us, ratio): wall_per_step of two functions on any device (a CPU run
    synchronises nothing), their windows taken in turn (ours first in even windows, theirs
    first in odd ones) so that both see the same stretch of the host's and the GPU's clocks;
    each time the median of its windows, the ratio the median of the windows' own ratios (the
    host's speed moved by a quarter between runs of this table on one machine, 2026-12-07)."""
    fns = (ours, theirs)
    for fn in fns:
        for _ in range(min(10, n)):
            fn()
    _sync()
    times = ([], [])
    for w in range(windows):
        for i in ((0, 1) if w % 2 == 0 else (1, 0)):
            times[i].append(_window(fns[i], n))
    return (_median(times[0]), _median(times[1]),
            _median([a / b for a, b in zip(*times)]))


def public_ops(dev, small):
    """(name, ours, torch's, inputs, grad?) for every public op at a small size (the sizes of
    issue 37; smaller under --small): each fn takes the inputs and returns the output."""
    import torch.nn.functional as F

    from tritonlab.kernels import attention, elementwise, rowsum, softmax
    f = 16 if small else 1
    n, m, k = 4096 // f, 64 // f, 256 // f
    r = lambda *shape: torch.randn(*shape, device=dev)  # noqa: E731
    q = lambda: torch.randn(1, 1, 1024 // f, 64, device=dev, dtype=torch.float16)  # noqa: E731
    return [
        ("add 4096 fp32", elementwise.add, torch.add, (r(n), r(n))),
        ("gelu 4096 fp32", elementwise.gelu, lambda x: F.gelu(x, approximate="tanh"), (r(n),)),
        ("silu 4096 fp32", elementwise.silu, F.silu, (r(n),)),
        (f"softmax {m}x{n} fp32", softmax.softmax, lambda x: torch.softmax(x, -1), (r(m, n),)),
        (f"row_sum {m}x{n} fp32", rowsum.row_sum, lambda x: x.sum(-1), (r(m, n),)),
        (f"rmsnorm {m}x{n} fp32", rn.rmsnorm,
         lambda x, g: F.rms_norm(x, (x.shape[-1],), g, 1e-6), (r(m, n), r(n))),
        (f"matmul+relu {k}^3 fp32", lambda a, b: mm.matmul(a, b, "relu"),
         lambda a, b: torch.relu(a @ b), (r(k, k), r(k, k))),
        (f"attention 1x1x{1024 // f}x64 fp16", attention.flash_attention,
         F.scaled_dot_product_attention, (q(), q(), q())),
    ]


def ops_table(dev, small, profile=None):
    """--ops: wall per call of every public op against torch's, forward and forward+backward;
    `profile`: a list that receives, per op, a cProfile of 200 of our forward and of our
    forward+backward calls (top 25 functions by own time)."""
    calls = 3 if small else 2000
    # the steady state: the native module loaded before the first call is timed (a process's
    # first calls take the Python path while a background thread loads it, _native.module_nowait,
    # which once put the first op's row on the Python path for a whole run)
    native = ("on" if _native.module() else f"off ({_native.why()})") if dev == "cuda" else "n/a"
    say(f"{torch.cuda.get_device_name() if dev == 'cuda' else 'CPU, ' + backend.NAME}, torch "
        f"{torch.__version__}, triton {triton.__version__}; wall us per call of {calls} "
        f"back-to-back calls (median of 5 windows, ours and torch's in turn; ratio: the median "
        f"of the paired windows' ratios); native path {native}")
    say(f"  {'op':<30}{'ours fwd':>10}{'torch fwd':>10}{'ratio':>8}"
        f"{'ours f+b':>10}{'torch f+b':>10}{'ratio':>8}")
    for name, ours, theirs, inputs in public_ops(dev, small):
        fwd = paired_wall(lambda: ours(*inputs), lambda: theirs(*inputs), calls)
        grads = [x.detach().clone().requires_grad_() for x in inputs]
        dy = torch.randn_like(theirs(*inputs))

        def step(fn):
            return lambda: torch.autograd.grad(fn(*grads), grads, dy)
        both = paired_wall(step(ours), step(theirs), max(1, calls // 4))
        say(f"  {name:<30}{fwd[0]:10.1f}{fwd[1]:10.1f}{fwd[2]:8.2f}"
            f"{both[0]:10.1f}{both[1]:10.1f}{both[2]:8.2f}")
        if profile is not None:
            for what, fn in (("forward", lambda: ours(*inputs)), ("forward+backward", step(ours))):
                profile.append(f"=== {name}, ours, {what}: 200 calls\n" + profiled(fn, 200))


def profiled(fn, calls):
    """cProfile of `calls` calls of fn (autograd's worker thread off, so that the profiler
    sees the backward): the top 25 functions by own time."""
    torch.autograd.set_multithreading_enabled(False)
    try:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(calls):
            fn()
        prof.disable()
    finally:
        torch.autograd.set_multithreading_enabled(True)
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
    return text.getvalue()


def in_thread(fn):
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("us", per_call(fn)))
    t.start()
    t.join()
    return box["us"]


def rms_eager(x, g):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * g


class PlainRMSNorm(torch.autograd.Function):
    """The same launch functions as rmsnorm's custom op, under a plain autograd.Function: the
    step without the custom-op layer."""

    @staticmethod
    def forward(ctx, x, g):
        x2, g2 = rn._flatten(x, g)
        y, rstd = rn._forward(x2, g2, 1e-6)
        ctx.save_for_backward(x2, g2, rstd)
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, dy):
        x2, g2, rstd = ctx.saved_tensors
        return rn._backward(dy.contiguous().view(x2.shape), x2, g2, rstd)


def layers(M, N, n):
    """One layer more per row, from the bare launch to the custom op with autograd; then a
    forward+backward step with and without the custom-op layer, and eager torch's."""
    dev = backend.DEVICE
    x = torch.randn(M, N, device=dev)
    g = torch.randn(N, device=dev)
    dy = torch.randn_like(x)
    y = torch.empty_like(x)
    rstd = torch.empty(M, device=dev)
    xg, gg = x.clone().requires_grad_(), g.clone().requires_grad_()
    block = triton.next_power_of_2(N)
    say(f"layers of one call, RMSNorm {M}x{N} fp32 on {backend.describe()}, CPU us per call")
    rows = [
        ("check_inputs(x, g)", lambda: _checks.check_inputs("r", x, g, device=dev,
                                                            same_shape=False)),
        ("+ allocation (y, rstd)", lambda: (torch.empty_like(x), torch.empty(M, device=dev))),
        ("launch(fwd kernel)", lambda: _launch.launch(
            rn.rmsnorm_fwd_kernel, (M,), x, g, y, rstd, N, 1e-6, BLOCK_SIZE=block,
            ACC=tl.float32, num_warps=_checks.num_warps_for(block))),
        ("launch fn: rmsnorm_forward (checks+alloc+launch)", lambda: rn.rmsnorm_forward(x, g)),
        ("+ custom op: rmsnorm_op(x, g), no grad", lambda: rn.rmsnorm_op(x, g, 1e-6)),
        ("+ public fn: rmsnorm(x, g), no grad", lambda: rn.rmsnorm(x, g)),
        ("plain autograd.Function fwd (grad)", lambda: PlainRMSNorm.apply(xg, gg)),
        ("custom op with autograd fwd (grad)", lambda: rn.rmsnorm(xg, gg)),
        ("launch fn: rmsnorm_backward", lambda: rn.rmsnorm_backward(dy, x, g, rstd.abs())),
        ("step fwd+bwd, plain autograd.Function", lambda: torch.autograd.grad(
            PlainRMSNorm.apply(xg, gg), (xg, gg), dy)),
        ("step fwd+bwd, tritonlab rmsnorm", lambda: torch.autograd.grad(
            rn.rmsnorm(xg, gg), (xg, gg), dy)),
        ("step fwd+bwd, eager F.rms_norm", lambda: torch.autograd.grad(
            torch.nn.functional.rms_norm(xg, (N,), gg, 1e-6), (xg, gg), dy)),
    ]
    for name, fn in rows:
        say(f"  {name:<52}{per_call(fn, n):10.1f}")


class Identity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, g):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, dy):
        return dy, None


def python_node(fn):
    """fn with rmsnorm's native node switched off: the Python Function's step."""
    def run():
        _native.ENABLED = False
        try:
            return fn()
        finally:
            _native.ENABLED = True
    return run


def training_steps(compiled_rms):
    """GPU-bound sizes: do_bench medians and wall per step of 200 back-to-back steps, autograd's
    worker thread on and off; ours with the native node and with the Python Function."""
    bench = triton.testing.do_bench
    for dtype in (torch.float32, torch.bfloat16):
        xb = torch.randn(8192, 4096, device="cuda", dtype=dtype, requires_grad=True)
        gb = torch.ones(4096, device="cuda", dtype=dtype, requires_grad=True)
        dyb = torch.randn(8192, 4096, device="cuda", dtype=dtype)

        def ours():
            return torch.autograd.grad(rn.rmsnorm(xb, gb), (xb, gb), dyb)

        def eager():
            return torch.autograd.grad(torch.nn.functional.rms_norm(xb, (4096,), gb, 1e-6),
                                       (xb, gb), dyb)

        ours(), ours()  # the first step compiles through the Python Function
        node = rn.rmsnorm(xb, gb).grad_fn.name()
        say(f"8192x4096 {str(dtype)[6:]}: our node {node} (native: {_native.why() or 'built'})")
        for multi in (True, False):
            torch.autograd.set_multithreading_enabled(multi)
            steps = (("tritonlab", ours), ("tritonlab python node", python_node(ours)),
                     ("torch.compile", lambda: torch.autograd.grad(compiled_rms(xb, gb),
                                                                  (xb, gb), dyb)),
                     ("eager F.rms_norm", eager))
            timed = {name: bench(fn) * 1e3 for name, fn in steps}
            wall = {name: wall_per_step(fn) for name, fn in steps if name != "torch.compile"}
            say(f"8192x4096 {str(dtype)[6:]} fwd+bwd mt={multi}: do_bench us "
                + ", ".join(f"{k} {v:.1f}" for k, v in timed.items())
                + "; wall us per step of 200 back-to-back (median of 5): "
                + ", ".join(f"{k} {v:.1f}" for k, v in wall.items())
                + f"; wall ours/eager {wall['tritonlab'] / wall['eager F.rms_norm']:.2f}")
        torch.autograd.set_multithreading_enabled(True)


def split_attention(value):
    """Sets attention's tuning (kernels/tuning.py) to split forwards of fewer programs than
    `value` ("sms": the SM count of the current GPU, 1 on the CPU; ":last" or ":kernel" after
    it sets `split_combine`) for the rest of the process, its native plans made again;
    returns what it set, as the header says it."""
    import dataclasses

    from tritonlab.kernels import attention
    dev = torch.cuda.current_device() if backend.DEVICE == "cuda" else -1
    value, _, combine = value.partition(":")
    if combine not in ("", "last", "kernel"):
        raise SystemExit(f"--attention-split: combine {combine!r} is neither 'last' nor "
                         f"'kernel'")
    if value == "sms":
        below = torch.cuda.get_device_properties(dev).multi_processor_count if dev >= 0 else 1
    else:
        try:
            below = int(value)
        except ValueError:
            raise SystemExit(f"--attention-split: {value!r} is neither a number nor 'sms'")
    t = dataclasses.replace(attention.tuning_for("attention", dev), split_programs_below=below)
    t = dataclasses.replace(t, split_combine=combine or t.split_combine)
    attention.tuning_for = lambda kind, device, t=t, real=attention.tuning_for: (
        t if kind == "attention" else real(kind, device))
    attention._native_attention.clear()
    return f"{below} (split_combine {t.split_combine})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    parser.add_argument("--small", action="store_true",
                        help="only the layers table, a few calls of a tiny problem (any backend)")
    parser.add_argument("--step", action="store_true",
                        help="only the GPU-bound training steps (GPU)")
    parser.add_argument("--ops", action="store_true",
                        help="every public op against torch's, wall per call (issue 37)")
    parser.add_argument("--profile", action="store_true",
                        help="with --ops: also a cProfile of each op, DIR/launch_ops_profile.txt")
    parser.add_argument("--attention-split", metavar="N",
                        help="with --ops: attention's split_programs_below set to N ('sms': the "
                             "GPU's SM count; N:last or N:kernel also sets split_combine) for "
                             "the run, to time the split forward's row")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.attention_split is not None:
        say(f"attention's split_programs_below: {split_attention(args.attention_split)}")
    if args.ops:
        profiles = [] if args.profile else None
        ops_table(backend.DEVICE, args.small, profiles)
        (out / "launch_ops.txt").write_text("\n".join(LINES) + "\n")
        if profiles:
            (out / "launch_ops_profile.txt").write_text("\n".join(profiles))
        return
    if args.step:
        say(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton "
            f"{triton.__version__}")
        training_steps(torch.compile(rms_eager))
        (out / "launch_overhead_step.txt").write_text("\n".join(LINES) + "\n")
        return
    if args.small:
        CALLS.update(SMALL)
        layers(4, 64, SMALL["calls"])
        (out / "launch_overhead.txt").write_text("\n".join(LINES) + "\n")
        return
    layers(64, 4096, 2000)
    dev = "cuda"
    M, N = 64, 4096
    x = torch.randn(M, N, device=dev)
    g = torch.randn(N, device=dev)
    dy = torch.randn_like(x)
    y = torch.empty_like(x)
    rstd = torch.empty(M, device=dev)
    xg = x.clone().requires_grad_()
    gg = g.clone().requires_grad_()
    say(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    say(f"CPU us per call, RMSNorm {M}x{N} fp32 unless said")

    def fwd_launch():
        rn.rmsnorm_fwd_kernel[(M,)](x, g, y, rstd, N, 1e-6, BLOCK_SIZE=N, ACC=tl.float32,
                                    num_warps=8)

    compiled = rn.rmsnorm_fwd_kernel[(M,)](x, g, y, rstd, N, 1e-6, BLOCK_SIZE=N,
                                           ACC=tl.float32, num_warps=8)
    runner = compiled[(M, 1, 1)]
    bound = _launch.Bound(rn.rmsnorm_fwd_kernel, (M,), BLOCK_SIZE=N, ACC=tl.float32,
                          num_warps=8)
    stream = torch.cuda.current_stream().cuda_stream
    rows = [
        ("torch.empty_like", lambda: torch.empty_like(x)),
        ("x.contiguous()", lambda: x.contiguous()),
        ("check_inputs(x)", lambda: _checks.check_inputs("r", x, device="cuda")),
        ("torch.add (a launch)", lambda: torch.add(x, x)),
        ("fwd kernel[grid](...)", fwd_launch),
        ("fwd kernel[grid] in a thread", None),
        ("compiled[grid](...)", lambda: runner(x, g, y, rstd, N, 1e-6, N, tl.float32)),
        ("compiled[grid](..., stream=)", lambda: runner(x, g, y, rstd, N, 1e-6, N, tl.float32,
                                                        stream=stream)),
        ("_launch.launch(fwd kernel) (cached)", lambda: _launch.launch(
            rn.rmsnorm_fwd_kernel, (M,), x, g, y, rstd, N, 1e-6, BLOCK_SIZE=N, ACC=tl.float32,
            num_warps=8)),
        ("_launch.Bound(fwd kernel) (a plan's)", lambda: bound(x, g, y, rstd, N, 1e-6)),
        ("rmsnorm_forward", lambda: rn.rmsnorm_forward(x, g)),
        ("rmsnorm_backward", lambda: rn.rmsnorm_backward(dy, x, g, rstd)),
        ("partial.sum(0)", lambda: y.sum(0)),
        ("rmsnorm(x, g) no grad", lambda: rn.rmsnorm(x, g)),
        ("rmsnorm(xg, g) apply", lambda: rn.rmsnorm(xg, gg)),
    ]
    for name, fn in rows:
        us = in_thread(fwd_launch) if fn is None else per_call(fn)
        say(f"  {name:<40}{us:8.1f}")
    compiled_rms = torch.compile(rms_eager)
    steps = {
        "view (C++ autograd) fwd+bwd": lambda: torch.autograd.grad(xg.view_as(xg), (xg,), dy),
        "identity Function fwd+bwd": lambda: torch.autograd.grad(Identity.apply(xg, gg), (xg,),
                                                                 dy),
        "eager F.rms_norm fwd+bwd": lambda: torch.autograd.grad(
            torch.nn.functional.rms_norm(xg, (N,), gg, 1e-6), (xg, gg), dy),
        "tritonlab rmsnorm fwd+bwd": lambda: torch.autograd.grad(rn.rmsnorm(xg, gg), (xg, gg),
                                                                 dy),
        "tritonlab rmsnorm python node": python_node(lambda: torch.autograd.grad(
            rn.rmsnorm(xg, gg), (xg, gg), dy)),
        "torch.compile rmsnorm fwd+bwd": lambda: torch.autograd.grad(compiled_rms(xg, gg),
                                                                     (xg, gg), dy),
    }
    for multi in (True, False):
        torch.autograd.set_multithreading_enabled(multi)
        for name, fn in steps.items():
            say(f"  {name + (' (mt off)' if not multi else ''):<40}{per_call(fn, 500):8.1f}")
    torch.autograd.set_multithreading_enabled(True)
    a = torch.randn(1024, 1024, device=dev, dtype=torch.bfloat16)
    c = torch.empty_like(a)
    cfg = mm._dispatches(a.get_device())[1]["pointers"].fixed  # what matmul() runs at 1024^3
    tiles = (1024 // cfg["BLOCK_M"]) * (1024 // cfg["BLOCK_N"])

    def direct():
        mm.matmul_kernel[(tiles,)](a, a, c, 1024, 1024, 1024, 1024, 1, 1024, 1, 1024, 1,
                                   ACTIVATION="relu", **cfg)
    for name, fn in (("matmul 1024^3 bf16 mm.matmul", lambda: mm.matmul(a, a, "relu")),
                     ("matmul 1024^3 kernel[grid] direct", direct),
                     ("torch.relu(a @ a)", lambda: torch.relu(a @ a))):
        say(f"  {name:<40}{per_call(fn, 500):8.1f}")

    training_steps(compiled_rms)

    torch.autograd.set_multithreading_enabled(False)
    s = io.StringIO()
    for name, fn in (("RMSNorm fwd+bwd step (mt off)", steps["tritonlab rmsnorm fwd+bwd"]),
                     ("mm.matmul 1024^3 bf16 relu", lambda: mm.matmul(a, a, "relu"))):
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(300):
            fn()
        prof.disable()
        s.write(f"===== {name}, 300 calls =====\n")
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(30)
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(30)
    torch.autograd.set_multithreading_enabled(True)
    (out / "launch_overhead_profile.txt").write_text(s.getvalue())
    (out / "launch_overhead.txt").write_text("\n".join(LINES) + "\n")


if __name__ == "__main__":
    main()
