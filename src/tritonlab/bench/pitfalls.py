"""The lecture's benchmarking pitfalls, measured live (lecture §2.2, exercise 1)."""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..units import format_time
from .timing import benchmark, default_device, noise_warning, spread, synchronizer


@dataclass
class Pitfall:
    name: str
    wrong_s: float
    right_s: float
    explanation: str
    spread: float = 1.0  # the largest p80/p20 of the timings behind wrong_s and right_s

    @property
    def ratio(self):
        return self.wrong_s / self.right_s

    def __str__(self):
        noise = noise_warning(self.spread)
        return (f"{self.name}: wrong {format_time(self.wrong_s)}, right "
                f"{format_time(self.right_s)} (ratio {self.ratio:.3g}). {self.explanation}"
                + (f" {noise}" if noise else ""))


def first_run(make_fn, device=None):
    """Time the very first call (one-time costs included) against the warmed-up median.
    `make_fn()` must build a fresh function whose first call pays the one-time costs."""
    device = device or default_device()
    fn = make_fn()
    sync = synchronizer(device)
    t0 = time.perf_counter()
    fn()
    if sync:
        sync()
    first = time.perf_counter() - t0
    warm = benchmark(fn, warmup=3, trials=10, device=device)
    return Pitfall("no warm-up", first, warm.median,
                   "The first call also pays compilation, allocation and algorithm selection; "
                   "warm up before timing.", warm.spread)


def no_sync(fn, device=None, repeats=10):
    """Stop the clock right after launching, without synchronising, against doing it right."""
    device = device or default_device()
    sync = synchronizer(device)
    for _ in range(3):
        fn()
    if sync:
        sync()
    wrong = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        wrong.append(time.perf_counter() - t0)  # the work may still be running
        if sync:
            sync()
    right = benchmark(fn, warmup=0, trials=repeats, device=device, synchronize=sync or None)
    explanation = ("The GPU runs asynchronously: without a synchronisation the clock stops when "
                   "the work is queued, not when it is done.")
    if sync is None:
        explanation = ("On the CPU, PyTorch runs operations synchronously, so both clocks agree "
                       "here; on a GPU the unsynchronised one measures only the launch.")
    wrong.sort()
    return Pitfall("no synchronisation", wrong[len(wrong) // 2], right.median, explanation,
                   max(spread(wrong), right.spread))


def item_in_loop(step, steps=50, device=None):
    """A loop that calls `.item()` every step (forcing a sync) against one that does not."""
    device = device or default_device()
    sync = synchronizer(device)

    def loop(read):
        total = None
        for _ in range(steps):
            loss = step()
            if read:
                loss.item()
            total = loss if total is None else total + loss
        return total

    with_item = benchmark(lambda: loop(True), warmup=1, trials=3, device=device)
    without = benchmark(lambda: loop(False), warmup=1, trials=3, device=device)
    explanation = (".item() (like print(tensor) or .cpu()) waits for the GPU each step, so the "
                   "CPU can no longer prepare step k+1 while the GPU runs step k.")
    if sync is None:
        explanation = ("On the CPU there is no queue to drain, so .item() costs little here; on "
                       "a GPU it forces a synchronisation every step.")
    return Pitfall(".item() every step", with_item.median, without.median, explanation,
                   max(with_item.spread, without.spread))


EXERCISE_1 = '''\
# wrong: no warm-up, no synchronisation, transfer inside the timing, one sample
t0 = time.time(); y = model(x.cuda()); print(time.time() - t0)

# right:
x = x.cuda()                                   # move the data before timing
for _ in range(3):                             # warm up: compilation, allocation, autotuning
    model(x)
torch.cuda.synchronize()
times = []
for _ in range(20):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(); model(x); end.record()     # events on the GPU's own timeline
    end.synchronize()
    times.append(start.elapsed_time(end))      # milliseconds
print(sorted(times)[len(times) // 2])          # the median
# or simply: tritonlab.bench.benchmark(lambda: model(x))
'''

