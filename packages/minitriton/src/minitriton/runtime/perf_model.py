"""A launch's GPU time from what the simulator counts and what the compiler allocates (issue 38):
the terms that decide it on real hardware, each with a constant fitted on
measurements of that GPU (`CONSTANTS`, one row per GPU; benchmarks/perf_model_fit.py fits them
from a stored configuration sweep and says how well they predict cases left out of the fit).

    time = launch + max(memory, compute) + overlap_loss x min(memory, compute)

the time of the kernel on the GPU (its device time: what CUPTI reports, host gaps left out).

- **occupancy**: programs resident per SM, the fewest that registers (allocated per warp in
  units of 256), shared memory (plus 1 KB reserved per program), threads (2048) or the
  32-program limit allow (NVIDIA's CUDA occupancy rules, as tritonlab.hardware.occupancy).
- **memory**: the slowest of three: the unique bytes at the attainable fraction `mem_eff` of
  the data sheet's bandwidth (DRAM); every byte the programs load and store, re-reads
  included (a matmul's operand tiles, `traffic`), at `l2_ratio` times that (L2 reuse across
  programs); and that traffic at the rate the bytes in flight cover the memory latency
  (Little's law: in flight = resident warps x `warp_bytes`, x the pipeline's stages for
  software-pipelined loops, / `latency`). A grid smaller than the GPU leaves SMs idle and
  falls under the last limit.
- **program start**: each program costs its SM `program_cost` to start and end, whatever it
  moves (programs / SMs x program_cost: many short programs, a row each of a narrow matrix).
- **compute**: tl.dot FLOPs at the tensor-core rate of the operands' type (the data sheet's
  dense rate) x `tc_eff` x tile / (tile + `tile_half`) for a BM x BN output tile (small tiles
  keep the tensor cores waiting on their operands), x the quantization of the programs over
  the SMs (the last round of programs per SM runs as long as a full one: one program keeps an
  SM's tensor cores busy, so the rounds are per SM, not per resident slot).
- **special functions**: the lanes of exp, log, sqrt, erf, libdevice's tanh... (`special`,
  counted by the simulator) at `special_rate` lanes per SM per second, added to the MMAs'
  time (the same warps issue both; NVIDIA's data sheet: 16 special-function results per
  clock per SM, about 2.8e10 a second on an H100; the fits find 2.6-2.7e10).
- **K-loop latency**: a program's K loop takes at least its trips x `step_latency` / the
  stages in flight, per wave (the loads of one trip wait for memory unless earlier stages
  hide it); a trip waits for the longer of its MMAs and its loads and some trips for both,
  so the two combine as a soft maximum ((a^p + b^p)^(1/p), p = `sharpness`).
- **pipeline fill**: a software-pipelined program alone on its SM (one program per SM: a
  large tile's shared memory) leaves its prologue (the first stages' loads) and epilogue
  (the output tile's stores) exposed: `fill` seconds per round of programs per SM; two or
  more programs per SM hide each other's.
- **spills**: a program that spills registers (a large accumulator tile on few warps) runs
  1 + `spill_factor` x spilled registers times slower: its spills sit in the K loop.
- **launch**: a fixed cost per launch on the GPU (the first wave's ramp and the last's drain).

Where it is wrong, and by how much, is in docs/hardware.md ("A performance model").
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

from .compiled import estimate
from .gpus import dot_rate, gpu

MAX_PROGRAMS_PER_SM = 32  # resident thread blocks per SM (sm80, sm90)
REGISTER_GRANULARITY = 256  # registers are allocated per warp in units of 256
SHARED_RESERVED = 1024  # bytes of shared memory the system reserves per block (sm80+)


@dataclass(frozen=True)
class Constants:
    """The fitted constants of one GPU (see the module's docstring for each term)."""
    launch: float  # seconds per launch
    latency: float  # seconds of memory latency to cover
    warp_bytes: float  # bytes a resident warp keeps in flight
    mem_eff: float  # attainable fraction of the data sheet's memory bandwidth
    tc_eff: float  # attainable fraction of the tensor-core rate with a large tile
    tile_half: float  # output-tile elements (BM x BN) at which half of tc_eff is reached
    l2_ratio: float  # L2-to-SM bandwidth over the attainable memory bandwidth
    spill_factor: float  # how much slower a program runs per register it spills
    step_latency: float  # seconds one iteration of a K loop waits for its loads, unhidden
    program_cost: float = 0.0  # seconds an SM spends starting and ending one program
    overlap_loss: float = 0.0  # fraction of the shorter of memory and compute not hidden
    fill: float = 0.0  # seconds a lone program per SM waits to fill its pipeline and drain
    sharpness: float = 64.0  # how sharply a K loop's trips are bound by MMAs or by loads
    special_rate: float = 1e30  # special-function lanes an SM computes per second
    round_latency: float = 0.0  # seconds a program waits for one round of dependent loads

    def as_dict(self):
        return {f.name: getattr(self, f.name) for f in fields(self)}


# fitted by benchmarks/perf_model_fit.py on the configuration sweeps (H100: the kernels' device
# time, docs/results/config-sweep-device-h100-2026-12-05.csv; H200: do_bench less its 2.8 us gap,
# docs/results/config-sweep-{h200,hopper-h200}-2026-12-05.csv) with the simulator's Launches of
# them (docs/results/config-sweep-launches-2026-12-05.json); the fit quality and where the model
# is wrong: docs/hardware.md, "A performance model"
CONSTANTS = {
    "H100": Constants(launch=2.1e-06, latency=2.42e-06, warp_bytes=1.89e+04, mem_eff=0.884,
                      tc_eff=0.697, tile_half=1710.0, l2_ratio=2.97,
                      spill_factor=0.00974, step_latency=7.75e-07, program_cost=7.86e-08,
                      overlap_loss=0.00773, fill=2.09e-06, sharpness=4.32,
                      special_rate=2.75e+10, round_latency=1.08e-06),
    "H200": Constants(launch=2.34e-06, latency=8.24e-07, warp_bytes=6500.0, mem_eff=0.842,
                      tc_eff=0.724, tile_half=1810.0, l2_ratio=2.25,
                      spill_factor=0.00819, step_latency=8.87e-07, program_cost=7.82e-08,
                      overlap_loss=0.007, fill=2.34e-06, sharpness=55.8,
                      special_rate=2.49e+10, round_latency=1.24e-06),
}


# Where the measured time falls around the prediction (measured / predicted, the 10th and 90th
# percentiles) on kernels the constants were not fitted on: `Prediction.low` and `.high`.
# benchmarks/perf_model_validate.py's 43 pairs, the kernels' device time (CUPTI) on each GPU
# (2026-12-05, docs/hardware.md, "Validation")
SPREAD = {"H100": (0.80, 1.25), "H200": (0.79, 1.25)}


@dataclass(frozen=True)
class Launch:
    """What the model needs of one launch: the simulator's counts (bytes moved, dot FLOPs and the
    dots' operand type), the grid, and the compiled program's resources."""
    bytes: int  # the unique bytes (each element once: what DRAM must move)
    programs: int
    num_warps: int = 4
    num_stages: int = 1
    registers: int = 32  # per thread
    shared: int = 0  # bytes per program
    flops: int = 0
    dot_dtype: str = "fp16"
    tile: int = 0  # output elements of one program's dot (BM x BN), 0 if no dot
    pipelined: bool = False  # a K loop whose loads the compiler pipelines over num_stages
    traffic: int = 0  # bytes every program loads and stores, re-reads included (0: `bytes`)
    spills: int = 0  # registers spilled to local memory per thread
    iterations: int = 0  # trips of the program's K loop (K / BLOCK_K), 0 if none
    special: int = 0  # lanes of special functions (exp, log, erf, libdevice's...) computed
    rounds: int = 1  # dependent load rounds of a program (a row loop's rows, a row's passes)


@dataclass(frozen=True)
class Prediction:
    seconds: float
    bound: str  # "memory", "compute" or "launch": the term that decides the time
    memory: float
    compute: float
    launch: float
    programs_per_sm: int
    waves: int
    spread: tuple = (1.0, 1.0)  # the GPU's SPREAD: the range is seconds x each

    @property
    def low(self):
        """The short end of the range the measured time falls in, 8 times in 10 (SPREAD)."""
        return self.seconds * self.spread[0]

    @property
    def high(self):
        return self.seconds * self.spread[1]

    def __str__(self):
        return (f"{self.seconds * 1e6:.1f} us [{self.low * 1e6:.1f}-{self.high * 1e6:.1f}] "
                f"({self.bound}-bound: memory "
                f"{self.memory * 1e6:.1f} us, compute {self.compute * 1e6:.1f} us, launch "
                f"{self.launch * 1e6:.1f} us; {self.programs_per_sm} programs/SM, "
                f"{self.waves} wave{'s' if self.waves != 1 else ''})")


def launch_of(record, dots, max_block, reductions, options, arg_bytes=None, sites=None,
              special=0, rounds=1, tma=False):
    """The `Launch` of a simulated launch, as the autotuner's trials and warmup see it: its
    LaunchRecord (counts scaled to the whole grid where only a sample of programs ran), the
    dots, largest block and reductions a ResourceWatcher noted (runtime/resources.py), the
    registers, spills and shared memory estimated from them (compiled.estimate), and the bytes
    of the launch's array arguments (`arg_bytes`, the unique bytes' upper bound; None: the
    traffic), the first dot of each distinct dot line (`sites`, ResourceWatcher.dot_sites)
    and the lanes of special functions the programs that ran computed (`special`), the most
    dependent load rounds a program made (`rounds`, ResourceWatcher.rounds) and whether its
    tiles came through tensor descriptors (`tma`, ResourceWatcher.tma)."""
    ran, total = record.sampled or (1, 1)
    scale = total / ran
    traffic = int((record.bytes_read + record.bytes_written) * scale)
    regs, spills, shared = estimate(options, max_block, dots, reductions, sites, tma)
    flops = int(record.dot_flops * scale)
    programs = record.num_programs
    tile = iterations = 0
    dot_dtype = "fp16"
    if dots:
        a_ty, _, m, n, k, _ = dots[0]
        tile, dot_dtype = m * n, str(a_ty)
        iterations = max(1, round(flops / programs / (2 * m * n * k)))
    return Launch(bytes=traffic if arg_bytes is None else min(traffic, arg_bytes),
                  programs=programs, num_warps=options.get("num_warps") or 4,
                  num_stages=options.get("num_stages") or 3, registers=regs, shared=shared,
                  flops=flops, dot_dtype=dot_dtype, tile=tile, pipelined=bool(dots),
                  traffic=traffic, spills=spills, iterations=iterations,
                  special=int(special * scale), rounds=rounds)


def programs_per_sm(g, num_warps, registers, shared):
    """Programs resident per SM on the GPU `g` (runtime/gpus.py), at least 1."""
    threads = num_warps * g.warp_size
    per_warp = math.ceil(registers * g.warp_size / REGISTER_GRANULARITY) * REGISTER_GRANULARITY
    limits = [MAX_PROGRAMS_PER_SM, g.max_threads_per_sm // threads]
    if per_warp:
        limits.append(g.registers_per_sm // (per_warp * num_warps))
    if shared:
        limits.append(g.shared_per_sm // (shared + SHARED_RESERVED))
    return max(1, min(limits))


def _soft_max(a, b, p):
    """(a^p + b^p)^(1/p): the larger of a and b where one dominates, more than it where they
    are alike (some steps wait for one, some for the other, some for both)."""
    return (a ** p + b ** p) ** (1 / p)


def rank_key(seconds):
    """What the autotuner ranks configurations by: the time to 9 significant digits.
    Configurations the model cannot tell apart (the same bytes at the same bound in other
    blocks or warps) come out equal but for the last bits of floating-point sums; ranked
    equal, they keep the autotuner's order and the first config wins, as exact ties do."""
    return float(f"{seconds:.9g}")


def predict(launch, gpu_name="H100", constants=None):
    """The predicted `Prediction` of a `Launch` on a GPU of runtime/gpus.py whose constants are
    in CONSTANTS (or the given `Constants`)."""
    g = gpu(gpu_name)
    c = constants or CONSTANTS.get(g.key)
    if c is None:
        raise ValueError(f"no fitted constants for {g.key}: the model is fitted for "
                         f"{', '.join(CONSTANTS)} (benchmarks/perf_model_fit.py)")
    per_sm = programs_per_sm(g, launch.num_warps, launch.registers, launch.shared)
    slots = g.multiprocessor_count * per_sm
    resident = min(launch.programs, slots)
    waves = max(1, math.ceil(launch.programs / slots))
    sms = g.multiprocessor_count
    per_sm_rounds = math.ceil(launch.programs / sms)  # programs an SM runs, one after another
    in_flight = resident * launch.num_warps * c.warp_bytes * \
        (max(1, launch.num_stages - 1) if launch.pipelined else 1)
    attainable = c.mem_eff * g.bandwidth
    traffic = max(launch.traffic, launch.bytes)  # re-reads come from L2, at l2_ratio the rate
    memory = max(launch.bytes / attainable, traffic / (c.l2_ratio * attainable),
                 traffic / (in_flight / c.latency))
    compute = 0.0
    if launch.flops:
        tile = launch.tile or 128 * 128
        rate = dot_rate(g, launch.dot_dtype) * c.tc_eff * tile / (tile + c.tile_half)
        if launch.programs <= slots:  # one wave: only the SMs that got a program work
            compute = launch.flops / rate * sms / min(launch.programs, sms)
        else:  # the last wave of programs per SM takes as long as a full one
            compute = launch.flops / rate * per_sm_rounds * sms / launch.programs
    if launch.special:  # the special-function units, fed by the same warps as the tensor
        # cores (no warp specialization): their time adds to the MMAs'
        compute += launch.special / (sms * c.special_rate)
    if launch.iterations:  # each trip waits for its loads, hidden by the stages in flight
        stages = max(1, launch.num_stages - 1) if launch.pipelined else 1
        latency = waves * launch.iterations * c.step_latency / stages
        # a trip waits for the longer of its MMAs and its loads, some trips for both
        compute = _soft_max(compute, latency, c.sharpness)
    # many short programs: each costs the SM its start and end, whatever it moves
    memory = max(memory, launch.programs / sms * c.program_cost)
    if not launch.pipelined:  # each round of loads waits for memory: a wave of programs takes
        waiting = waves * launch.rounds * c.round_latency  # at least its rounds' latencies
        memory = _soft_max(memory, waiting, c.sharpness)
    if launch.pipelined and per_sm == 1:  # nothing else on the SM hides a program's
        # pipeline fill (its first stages' loads) and drain (its output tile's stores)
        compute += per_sm_rounds * c.fill
    if launch.spills:  # local-memory traffic inside the loop: the whole program waits on it,
        slower = 1 + c.spill_factor * launch.spills  # the longer the more registers spill
        memory, compute = memory * slower, compute * slower
    seconds = c.launch + max(memory, compute) + c.overlap_loss * min(memory, compute)
    bound = "launch" if c.launch > max(memory, compute) else \
        ("compute" if compute > memory else "memory")
    return Prediction(seconds, bound, memory, compute, c.launch, per_sm, waves,
                      SPREAD.get(g.key, (1.0, 1.0)))
