"""Probe: why a 1024^3 matmul's do_bench time (L2 flushed before each call) can be several
times its CUDA-graph time. Per dtype, in both orders: do_bench against an event-timed loop
without the flush, the autotuner's choice, and the kernels' GPU durations in a torch.profiler
trace of do_bench-like iterations.
Decided: docs/decisions.md#matmul-small-wall-time."""
from _common import do_bench, dtype_name, torch
from tritonlab.kernels import matmul as mm


def loop_us(fn, calls=1000):
    """Event-timed back-to-back calls, no flush: us per call."""
    start, end = torch.cuda.Event(True), torch.cuda.Event(True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / calls


def kernel_times(fn, flush, calls=50):
    """GPU durations (us, sorted) of the kernels fn launches, each call after an L2 flush."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
    return sorted(e.device_time for e in prof.events() if e.device_type.name == "CUDA"
                  and "zero" not in e.name.lower() and "fill" not in e.name.lower())


def main():
    n = 1024
    inputs = {d: (torch.randn(n, n, device="cuda", dtype=d),
                  torch.randn(n, n, device="cuda", dtype=d))
              for d in (torch.bfloat16, torch.float16)}
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    for order in ((torch.bfloat16, torch.float16), (torch.float16, torch.bfloat16)):
        for dtype in order:
            a, b = inputs[dtype]
            for name, fn in (("tritonlab", lambda: mm.matmul(a, b, "relu")),
                             ("torch", lambda: torch.relu(a @ b))):
                fn()
                ms = do_bench(fn)
                loop = loop_us(fn)
                durs = kernel_times(fn, flush)
                plan = mm.matmul_plan(a, b, "relu") if name == "tritonlab" else ""
                print(f"{dtype_name(dtype):<9} {name:<10} do_bench {ms * 1e3:6.1f} us, loop "
                      f"{loop:6.1f} us/call, kernel time median {durs[len(durs) // 2]:.1f} us "
                      f"(max {durs[-1]:.1f}) over {len(durs)} kernels {plan}", flush=True)


if __name__ == "__main__":
    main()
