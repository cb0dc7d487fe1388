"""Occupancy, waves and grids: the arithmetic of lecture §1 and exercises 2 and 4."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .specs import get


_UNLIMITED = 1 << 30  # a resource the kernel does not use limits nothing


def _plural(n, noun):
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _spec(gpu):
    return get(gpu) if isinstance(gpu, str) else gpu


@dataclass
class Occupancy:
    blocks_per_sm: int
    active_warps: int
    occupancy: float  # active warps / maximum warps per SM
    limiter: str  # "registers", "shared memory", "threads", "warps" or "blocks"
    limits: dict  # blocks per SM each resource allows

    def __str__(self):
        allowed = ", ".join(f"{resource} {n}" for resource, n in self.limits.items())
        return (f"{self.blocks_per_sm} blocks/SM, {self.active_warps} warps, occupancy "
                f"{self.occupancy:.0%} (limited by {self.limiter}; blocks per SM each resource "
                f"allows: {allowed})")


def occupancy(threads_per_block, registers_per_thread, shared_bytes_per_block=0, gpu="H100"):
    """Blocks resident per SM and the resource that limits them. Registers are allocated per
    warp in units of `register_granularity` (256); each block also takes the system's reserved
    shared memory (1 KB on sm80+)."""
    g = _spec(gpu)
    if not 1 <= threads_per_block <= g.max_threads_per_block:
        raise ValueError(f"threads per block must be in 1..{g.max_threads_per_block}")
    if registers_per_thread < 0:
        raise ValueError(f"{registers_per_thread} registers per thread: a thread has 0 or more")
    if registers_per_thread > g.max_registers_per_thread:
        raise ValueError(f"{registers_per_thread} registers per thread: at most "
                         f"{g.max_registers_per_thread} on {g.name}")
    if shared_bytes_per_block < 0:
        raise ValueError(f"{shared_bytes_per_block} bytes of shared memory per block: a block "
                         "has 0 or more")
    if shared_bytes_per_block > g.shared_per_block:
        raise ValueError(f"{shared_bytes_per_block} bytes of shared memory per block: at most "
                         f"{g.shared_per_block} on {g.name}")
    warps = math.ceil(threads_per_block / g.warp_size)
    per_warp = math.ceil(registers_per_thread * g.warp_size / g.register_granularity) * \
        g.register_granularity
    limits = {
        "registers": g.registers_per_sm // (per_warp * warps) if per_warp else _UNLIMITED,
        "shared memory": (g.shared_per_sm // (shared_bytes_per_block + g.shared_reserved_per_block)
                          if shared_bytes_per_block else _UNLIMITED),
        "threads": g.max_threads_per_sm // (warps * g.warp_size),
        "warps": g.max_warps_per_sm // warps,
        "blocks": g.max_blocks_per_sm,
    }
    limiter = min(limits, key=lambda k: (limits[k], list(limits).index(k)))
    blocks = limits[limiter]
    shown = {k: v for k, v in limits.items() if v != _UNLIMITED}
    return Occupancy(blocks, blocks * warps, blocks * warps / g.max_warps_per_sm, limiter, shown)


@dataclass
class Waves:
    num_blocks: int
    per_wave: int
    full_waves: int
    tail_blocks: int
    waves: int
    wasted: float  # fraction of SM-slots idle over the launch

    def __str__(self):
        tail = (f" + a tail of {_plural(self.tail_blocks, 'block')}" if self.tail_blocks
                else ", no tail")
        return (f"{_plural(self.num_blocks, 'block')}, {self.per_wave} per wave: "
                f"{_plural(self.full_waves, 'full wave')}{tail} ({_plural(self.waves, 'wave')}, "
                f"{self.wasted:.0%} of the SM time idle)")


def waves(num_blocks, blocks_per_sm=1, gpu="H100"):
    """Wave quantisation: a launch runs in waves of sm_count * blocks_per_sm blocks.
    blocks_per_sm is what occupancy allows, at most the GPU's limit of resident blocks."""
    g = _spec(gpu)
    if num_blocks < 0:
        raise ValueError(f"{num_blocks} blocks: a launch has 0 or more")
    if not 1 <= blocks_per_sm <= g.max_blocks_per_sm:
        raise ValueError(f"{blocks_per_sm} blocks per SM: {g.name} holds 1 to "
                         f"{g.max_blocks_per_sm} resident blocks per SM")
    per_wave = g.sm_count * blocks_per_sm
    full, tail = divmod(num_blocks, per_wave)
    total = full + (1 if tail else 0)
    wasted = 1 - num_blocks / (total * per_wave) if total else 0.0
    return Waves(num_blocks, per_wave, full, tail, total, wasted)


@dataclass
class Grid:
    shape: tuple
    programs: int
    iterations: int  # per program along the reduction dimension

    def __str__(self):
        dims = " x ".join(str(d) for d in self.shape)
        return f"grid ({dims}) = {self.programs} programs, {self.iterations} iterations each"


def grid(M, N, K=None, block_m=64, block_n=64, block_k=32):
    """The launch shape of a tiled matmul (exercise 4)."""
    shape = (math.ceil(M / block_m), math.ceil(N / block_n))
    return Grid(shape, shape[0] * shape[1], math.ceil(K / block_k) if K else 0)
