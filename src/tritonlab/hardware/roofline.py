"""Roofline time from a simulated launch: how fast could this kernel possibly run on a GPU?

minitriton counts every byte a launch moves and every `tl.dot` FLOP, so it can bound the time on
any GPU without one: bytes / bandwidth against FLOPs / peak rate, whichever is larger. The bound
takes the unique footprint (caches absorb every re-read) when it was recorded; the total traffic
(nothing reused) gives the other end of the range. The label, the time and the intensity all
come from the same bytes, and the output says which bound wins and by how much.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..units import format_bytes, format_flops, format_time
from .occupancy import _spec, occupancy


@dataclass
class Roofline:
    """Roofline bounds of one launch. One definition throughout: the bound (`bound`, `predicted[0]`,
    `intensity`) uses the unique footprint when it was recorded (caches absorb every re-read),
    else the total traffic; the total traffic gives the other end of the range (nothing reused)."""

    gpu: str
    dtype: str
    bytes_total: int
    bytes_unique: int  # None if the footprint was not recorded
    flops: int
    intensity: float  # FLOP per byte of the bytes the bound uses (unique when known)
    ridge: float  # FLOP per byte where the GPU turns compute-bound
    bound: str  # "memory" or "compute": the larger of time_memory_bound and time_compute
    time_memory: float  # s, from total traffic
    time_memory_unique: float  # s, from the unique footprint (None if unknown)
    time_compute: float

    @property
    def time_memory_bound(self):
        """Memory time from the bytes the bound uses: unique when known, else total."""
        return self.time_memory if self.time_memory_unique is None else self.time_memory_unique

    @property
    def bound_without_reuse(self):
        """"memory" or "compute" if nothing were reused from cache (total traffic)."""
        return "compute" if self.time_compute > self.time_memory else "memory"

    @property
    def margin(self):
        """How many times the winning bound exceeds the other (inf when one is zero)."""
        hi = max(self.time_memory_bound, self.time_compute)
        lo = min(self.time_memory_bound, self.time_compute)
        return hi / lo if lo else math.inf

    @property
    def predicted(self):
        """(lower, upper) bound on the kernel time, seconds."""
        return (max(self.time_memory_bound, self.time_compute),
                max(self.time_memory, self.time_compute))

    def why(self):
        """Which bound wins and by how much, e.g. 'compute 2.17 µs > memory 1.88 µs, 1.16x'."""
        if not self.flops:
            return "bytes / bandwidth"
        memory = f"memory {format_time(self.time_memory_bound)}"
        compute = f"compute {format_time(self.time_compute)}"
        first, second = (compute, memory) if self.bound == "compute" else (memory, compute)
        return f"{first} > {second}, {self.margin:.3g}x"

    def __str__(self):
        lo, hi = self.predicted
        unique = self.bytes_unique is not None
        moved = f"{format_bytes(self.bytes_total)} moved" + (
            f", {format_bytes(self.bytes_unique)} unique" if unique else "")
        work = (f"{format_flops(self.flops)}, {self.intensity:.3g} FLOP per "
                f"{'unique byte' if unique else 'byte moved'}" if self.flops else "no tl.dot FLOPs")
        text = (f"{self.gpu}, {self.dtype}: {moved}, {work} (ridge {self.ridge:.0f}): "
                f"{self.bound}-bound, at least {format_time(lo)} ({self.why()})")
        if hi > lo * 1.01:
            text += f"; up to {format_time(hi)} if nothing is reused from cache"
            if self.bound_without_reuse != self.bound:
                text += f" (then {self.bound_without_reuse}-bound)"
        return text


def roofline(record, gpu="H100", dtype="fp32", bandwidth=None):
    """Roofline bounds for a minitriton LaunchRecord (or Recording) on `gpu`.
    `bandwidth` (bytes/s) replaces the datasheet figure, e.g. with a measured copy rate."""
    g = _spec(gpu)
    bw = bandwidth or g.hbm_bandwidth
    peak = g.flops(dtype)
    total = record.bytes_read + record.bytes_written
    unique = getattr(record, "unique_bytes", None)
    flops = record.dot_flops
    t_unique = unique / bw if unique is not None else None
    bound_bytes = total if unique is None else unique
    t_comp = flops / peak
    t_bound = bound_bytes / bw
    return Roofline(g.name, dtype, total, unique, flops,
                    flops / bound_bytes if bound_bytes else 0.0, peak / bw,
                    "compute" if t_comp > t_bound else "memory", total / bw, t_unique, t_comp)


def compiled_occupancy(handle, gpu):
    """Occupancy of a kernel compiled by real Triton, from its metadata (registers per thread,
    shared memory, warps); also returns the register spill count."""
    meta = handle.metadata
    threads = meta.num_warps * 32
    return occupancy(threads, handle.n_regs, meta.shared, gpu), handle.n_spills
