"""Timing done right: warm-up outside the clock, a synchronisation before every clock read on
asynchronous devices, CUDA events on CUDA, many trials, and the median.

The lecture's two traps: the first call pays one-time costs (compilation, allocation, algorithm
selection), and stopping the clock without synchronising measures only the time to enqueue the
work (1400x too small in the lecture's MPS example).
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, field

import torch

from ..units import format_time


def quantile(samples, q):
    """The q-quantile of samples, linear interpolation between order statistics (NumPy's
    default, 'linear')."""
    xs = sorted(samples)
    if not xs:
        raise ValueError("quantile of no samples")
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


# p80 / p20 above this: the samples disagree so much that something else on the machine (other
# processes, frequency changes) is in the timings, and a comparison may show the opposite of
# the truth; a quiet machine stays well under it (matmul on an idle CPU: about 1.05)
NOISY_SPREAD = 1.5


def spread(samples):
    """p80 / p20 of the samples: 1.0 when they agree; inf when p20 is 0 and p80 is not."""
    if len(samples) < 2:
        return 1.0
    lo, hi = quantile(samples, 0.2), quantile(samples, 0.8)
    if lo <= 0:
        return 1.0 if hi <= 0 else math.inf
    return hi / lo


def noise_warning(value, what="the timings"):
    """A sentence warning that `value` (a p80/p20 spread) is too large to trust a comparison
    of timings; "" when it is not."""
    if value <= NOISY_SPREAD:
        return ""
    return (f"Noisy: p80/p20 of {what} is {value:.3g} (over {NOISY_SPREAD}), so other work on "
            "this machine is in them and they may contradict the lesson; run again on an idle "
            "machine.")


@dataclass
class BenchResult:
    """Times in seconds, one sample per trial."""

    samples: list
    device: str
    warmup: int
    l2_flushed: bool = False
    label: str = ""
    meta: dict = field(default_factory=dict)

    median = property(lambda self: statistics.median(self.samples))
    mean = property(lambda self: statistics.fmean(self.samples))
    p20 = property(lambda self: quantile(self.samples, 0.2))
    p80 = property(lambda self: quantile(self.samples, 0.8))
    min = property(lambda self: min(self.samples))  # noqa: A003
    max = property(lambda self: max(self.samples))  # noqa: A003
    spread = property(lambda self: spread(self.samples))

    def summary(self):
        return {"label": self.label, "device": self.device, "median_s": self.median,
                "mean_s": self.mean, "p20_s": self.p20, "p80_s": self.p80, "min_s": self.min,
                "max_s": self.max, "trials": len(self.samples), "warmup": self.warmup,
                "l2_flushed": self.l2_flushed}

    def to_dict(self):
        return asdict(self)

    def __str__(self):
        return (f"{self.label or 'result'}: median {format_time(self.median)} "
                f"(p20 {format_time(self.p20)}, p80 {format_time(self.p80)}; "
                f"{len(self.samples)} trials on {self.device})")


def default_device():
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def synchronizer(device):
    """The call that waits for all work queued on `device` (None for the CPU)."""
    kind = torch.device(device).type
    if kind == "cpu":
        return None
    module = getattr(torch, kind, None)
    if module is None or not hasattr(module, "synchronize"):
        raise ValueError(f"do not know how to synchronise device {device!r}")
    return module.synchronize


class _L2Flusher:
    """Overwrites a buffer twice the size of the L2 cache before each trial (CUDA only)."""

    def __init__(self, device):
        props = torch.cuda.get_device_properties(torch.device(device))
        size = max(2 * getattr(props, "L2_cache_size", 64 << 20), 64 << 20)
        self.buffer = torch.empty(size // 4, dtype=torch.int32, device=device)

    def __call__(self):
        self.buffer.zero_()


def benchmark(fn, *, warmup=3, trials=10, device=None, flush_l2=False, label="",
              synchronize=None, clock=time.perf_counter):
    """Time `fn()`: `warmup` untimed calls, then `trials` timed ones; returns a BenchResult.

    On CUDA each trial is bracketed by CUDA events (GPU time, not host time); on other
    asynchronous devices (MPS, XPU...) the device is synchronised before every clock read; on
    the CPU `time.perf_counter` is read directly. `flush_l2` (CUDA) overwrites the L2 cache
    before each trial, so that inputs that fit in it are not measured from cache.
    `synchronize`/`clock` replace the device's (for tests and unusual devices).
    """
    device = str(device or default_device())
    kind = torch.device(device).type
    use_events = kind == "cuda" and synchronize is None
    sync = synchronize if synchronize is not None else synchronizer(device)
    flush = _L2Flusher(device) if (flush_l2 and kind == "cuda") else None
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    samples = []
    for _ in range(trials):
        if flush is not None:
            flush()
        if use_events:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
        else:
            if sync is not None:
                sync()
            t0 = clock()
            fn()
            if sync is not None:
                sync()
            samples.append(clock() - t0)
    return BenchResult(samples, device, warmup, flush is not None, label)
