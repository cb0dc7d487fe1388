"""Roofline time from a simulated launch: how fast could this kernel possibly run on a GPU?

minitriton counts every byte a launch moves and every `tl.dot` FLOP, so it can bound the time on
any GPU without one: bytes / bandwidth (from the total traffic, and from the unique footprint,
which assumes caches absorb every re-read: the two make a range) against FLOPs / peak rate.
"""
from __future__ import annotations

from dataclasses import dataclass

from .occupancy import _spec, occupancy


@dataclass
class Roofline:
    gpu: str
    dtype: str
    bytes_total: int
    bytes_unique: int  # None if the footprint was not recorded
    flops: int
    intensity: float  # FLOP per byte of total traffic
    ridge: float  # FLOP per byte where the GPU turns compute-bound
    bound: str  # "memory" or "compute"
    time_memory: float  # s, from total traffic
    time_memory_unique: float  # s, from the unique footprint (None if unknown)
    time_compute: float

    @property
    def predicted(self):
        """(lower, upper) bound on the kernel time, seconds."""
        low_mem = self.time_memory_unique if self.time_memory_unique is not None else \
            self.time_memory
        return max(low_mem, self.time_compute), max(self.time_memory, self.time_compute)

    def __str__(self):
        lo, hi = self.predicted
        unique = (f", {self.bytes_unique / 1e6:.1f} MB unique" if self.bytes_unique is not None
                  else "")
        return (f"{self.gpu}, {self.dtype}: {self.bytes_total / 1e6:.1f} MB moved{unique}, "
                f"{self.flops / 1e9:.2f} GFLOP, intensity {self.intensity:.2f} FLOP/B (ridge "
                f"{self.ridge:.0f}): {self.bound}-bound, at least {lo * 1e6:.1f} us"
                + (f" (up to {hi * 1e6:.1f} us if nothing is reused from cache)" if hi > lo * 1.01
                   else ""))


def roofline(record, gpu="H100", dtype="fp32", bandwidth=None):
    """Roofline bounds for a minitriton LaunchRecord (or Recording) on `gpu`.
    `bandwidth` (bytes/s) replaces the datasheet figure, e.g. with a measured copy rate."""
    g = _spec(gpu)
    bw = bandwidth or g.hbm_bandwidth
    peak = g.flops(dtype)
    total = record.bytes_read + record.bytes_written
    unique = getattr(record, "unique_bytes", None)
    flops = record.dot_flops
    t_mem = total / bw
    t_unique = unique / bw if unique is not None else None
    t_comp = flops / peak
    return Roofline(g.name, dtype, total, unique, flops, flops / total if total else 0.0,
                    peak / bw, "compute" if t_comp > t_mem else "memory", t_mem, t_unique, t_comp)


def compiled_occupancy(handle, gpu):
    """Occupancy of a kernel compiled by real Triton, from its metadata (registers per thread,
    shared memory, warps); also returns the register spill count."""
    meta = handle.metadata
    threads = meta.num_warps * 32
    return occupancy(threads, handle.n_regs, meta.shared, gpu), handle.n_spills
