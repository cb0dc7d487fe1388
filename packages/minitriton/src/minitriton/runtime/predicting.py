"""`minitriton.predicting`: the GPU time of every launch a block of code makes, from the
simulator alone (issue 38), and the ranking of every autotuned kernel's configurations.

    with minitriton.predicting("H200", sample=16) as launches:
        my_operator(x)            # kernels launched as usual, on the CPU
    for p in launches:
        print(p)                  # kernel, grid, config, predicted time and its range, bound

Each launch is watched as the autotuner's trials are (runtime/resources.py's ResourceWatcher: the
dots, the largest block, the reductions), its resources estimated as `warmup()` does
(runtime/compiled.py) and its time predicted by runtime/perf_model.py with the GPU's fitted
constants. Inside the block the autotuner ranks by the same model on the same GPU
(`autotune_rank="model"`, `autotune_gpu`), and its trials are left out of the list: a
prediction for an autotuned kernel carries the ranking of every configuration it tried
(`LaunchPrediction.ranking`). `sample` > 0 runs only that many programs of each launch (as the
trials do) and scales the counts to the grid: fast at a GPU's sizes, but the launches' outputs
are then wrong (a script that checks them fails); 0 runs every program.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field

from ..settings import configure
from .gpus import gpu
from .launch import sampling, watching
from .resources import ResourceWatcher
from .perf_model import CONSTANTS, Launch, Prediction, launch_of, predict, rank_key

# while `predicting` runs: its watcher, which the autotuner tells of each tuning (autotune._tune)
PREDICTING: contextvars.ContextVar = contextvars.ContextVar("minitriton_predicting", default=None)


def config_label(constexprs, options):
    """A configuration as 'BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=3': its integer
    constexprs, then the warps and stages."""
    values = {k: v for k, v in constexprs.items() if isinstance(v, int) and not isinstance(v, bool)}
    values.update((k, options[k]) for k in ("num_warps", "num_stages") if options.get(k))
    return ", ".join(f"{k}={v}" for k, v in values.items())


@dataclass
class LaunchPrediction:
    """One launch: what ran (kernel, grid, configuration), what the model saw (`launch`) and
    what it predicts (`prediction`). `ranking`: for an autotuned kernel's chosen launch, every
    configuration it tried with its predicted seconds, fastest first (None otherwise)."""
    kernel: str
    grid: tuple
    config: str
    launch: Launch
    prediction: Prediction
    record: object = field(repr=False, default=None)
    ranking: list = None  # [(config label, seconds)], fastest first
    ranked_launches: dict = None  # config label -> the Launch the model saw of it

    @property
    def seconds(self):
        return self.prediction.seconds

    def __str__(self):
        p = self.prediction
        head = (f"{self.kernel} grid {self.grid} [{self.config}]: "
                f"{p.seconds * 1e6:.1f} us (range {p.low * 1e6:.1f}-{p.high * 1e6:.1f} us), "
                f"{p.bound}-bound")
        detail = (f"  memory {p.memory * 1e6:.1f} us, compute {p.compute * 1e6:.1f} us, launch "
                  f"{p.launch * 1e6:.1f} us; {p.programs_per_sm} programs/SM, {p.waves} "
                  f"wave{'s' if p.waves != 1 else ''}; {self.launch.registers} registers/thread"
                  f"{f' ({self.launch.spills} spilled)' if self.launch.spills else ''}, "
                  f"{self.launch.shared:,} B shared")
        lines = [head, detail]
        if self.ranking:
            lines.append(f"  autotuned: {len(self.ranking)} configurations, by predicted time:")
            for label, seconds in self.ranking:
                mark = "  <- chosen" if (label, seconds) == self.ranking[0] else ""
                lines.append(f"    {seconds * 1e6:10.1f} us  {label}{mark}")
        return "\n".join(lines)


class _Launches(ResourceWatcher, check=False):
    """A ResourceWatcher that keeps what it saw of each launch apart: at each launch's end,
    its record with what the watcher noted of it and the bytes of its array arguments."""

    def __init__(self):
        super().__init__()
        # (record, dots, max_block, reductions, arg bytes, sites, special, rounds, tma)
        self.seen = []
        # (launches seen before it, kernel, ([(config label, seconds)], {label: Launch}))
        self.tunings = []

    def tuned(self, kernel, timings, launches):
        """The autotuner ranked `kernel`'s configurations: {Config: [ms, ms, ms]}, and the
        Launch the model saw of each. Fastest first; among equal times the autotuner's own
        order, so the first is its choice."""
        rows = sorted(((config_label(c.kwargs, c.all_kwargs()), ms[0] / 1e3)
                       for c, ms in timings.items()), key=lambda r: rank_key(r[1]))
        seen = {config_label(c.kwargs, c.all_kwargs()): launch for c, launch in launches.items()}
        self.tunings.append((len(self.seen), kernel, (rows, seen)))

    def finish(self, rerun):
        super().finish(rerun)
        ctx = rerun.ctx
        arg_bytes = sum((b.view_hi - b.view_lo) * b.dtype.itemsize for b in ctx.memory.buffers)
        self.seen.append((ctx.record, self.dots, self.max_block, self.reductions, arg_bytes,
                          self.dot_sites, self.special, self.rounds, self.tma))
        self.reset()


def _gpu_key(gpu_name):
    key = gpu(gpu_name, "gpu").key  # the canonical key: "h200" -> "H200"
    if key not in CONSTANTS:
        raise ValueError(f"no fitted constants for {key}: the model is fitted for "
                         f"{', '.join(CONSTANTS)} (benchmarks/perf_model_fit.py)")
    return key


@contextlib.contextmanager
def predicting(gpu="H200", sample=0):
    """Yields a list that, when the block ends, holds one LaunchPrediction per launch made in
    it (autotuning trials left out), in launch order; see the module."""
    key = _gpu_key(gpu)
    watcher, out = _Launches(), []
    token = PREDICTING.set(watcher)
    try:
        with configure(autotune_rank="model", autotune_gpu=key), watching(watcher), \
                sampling(sample):
            yield out
    finally:
        PREDICTING.reset(token)
        out.extend(_predictions(watcher.seen, watcher.tunings, key))


def _predictions(seen, tunings, key):
    """LaunchPredictions of the launches that were not trials; the first launch of a kernel
    after its tuning (the chosen configuration's) carries that tuning's ranking."""
    result, pending = [], {}
    tunings = sorted(tunings, key=lambda t: t[0])
    for i, (record, dots, max_block, reductions, arg_bytes, sites, special, rounds, tma) in \
            enumerate(seen):
        while tunings and tunings[0][0] <= i:
            _, kernel, rows = tunings.pop(0)
            pending[kernel] = rows
        if getattr(record, "trial", False):
            continue
        options = {"num_warps": record.options.get("num_warps") or 4,
                   "num_stages": record.options.get("num_stages") or 3}
        launch = launch_of(record, dots, max_block, reductions, options, arg_bytes, sites,
                           special, rounds, tma)
        ranking, launches = pending.pop(record.kernel, (None, None))
        result.append(LaunchPrediction(record.kernel, tuple(record.grid),
                                       config_label(record.constexprs, options), launch,
                                       predict(launch, key), record, ranking, launches))
    return result
