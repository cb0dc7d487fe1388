"""A kernel's time on the GPU without the host: the device durations CUPTI records (through
torch.profiler) of the kernels a call launches, with the L2 flushed before each call as
triton.testing.do_bench flushes it. Shared by benchmarks/config_sweep.py and
benchmarks/perf_model_validate.py (issue 38: the performance model predicts this time).
"""
from __future__ import annotations

import statistics

_FLUSH = {}


def _kernel_events(work, calls):
    """The GPU kernels (name, start, microseconds) that `work` ran, `calls` times, under
    torch.profiler (CUPTI's device timestamps), in order; memory copies and sets left out."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            work()
        torch.cuda.synchronize()
    out = [(e.name, e.time_range.start, e.time_range.elapsed_us()) for e in prof.events()
           if e.device_type == DeviceType.CUDA and not e.name.startswith(("Memcpy", "Memset"))]
    return sorted(out, key=lambda e: e[1])


def flushed_kernel_events(fn, calls):
    """The kernels (name, start, microseconds) of `calls` calls of `fn` (after one unrecorded
    call), the L2 flushed before each call as do_bench does, the flush's own kernel left out."""
    import torch
    if "buf" not in _FLUSH:
        _FLUSH["buf"] = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
        _FLUSH["names"] = {n for n, _, _ in _kernel_events(_FLUSH["buf"].zero_, 3)}
    fn()
    return [e for e in _kernel_events(lambda: (_FLUSH["buf"].zero_(), fn()), calls)
            if e[0] not in _FLUSH["names"]]


def device_times(fn, calls=10):
    """The GPU time (ms) of each of `calls` calls of `fn`: the device durations of the kernels
    it launches, summed per call, with the L2 flushed before each call as do_bench does (its
    kernel left out); one figure, the mean, where the calls launched unequal numbers of
    kernels. Host time between the kernels is not in it."""
    events = flushed_kernel_events(fn, calls)
    if not events:
        raise RuntimeError("the profiler saw no kernel of this call")
    if len(events) % calls:
        return [sum(us for _, _, us in events) / calls / 1e3]
    per = len(events) // calls
    return [sum(us for _, _, us in events[i:i + per]) / 1e3
            for i in range(0, len(events), per)]


def device_ms(fn, calls=10):
    """The median of device_times: the time a kernel takes, which the model predicts."""
    return statistics.median(device_times(fn, calls))
