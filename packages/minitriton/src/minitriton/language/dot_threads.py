"""The threads the exact `tl.dot` runs on (dot.py): its slices, and its chains behind the kernel.

- `run_split(kernel, operands, out, ...)`: one dot cut into slices of its programs (or, for one
  program, of its rows) on up to WORKERS threads of one pool for the process (`pool()`), the
  calling thread taking a slice too; the slices are disjoint parts of `out`, so the bits do not
  depend on the threads. The NumPy fast chain (dot._fast_chain) splits on the same pool.
- `chain(fn)`: `acc += tl.dot(a, b)` summed on a thread of its own while the kernel's Python
  goes on (dot.behind): one thread, so a chain's steps run in the order they were asked for.
  That thread sums alone while the kernel's Python runs (which has the other core), steps
  queued behind it or not; while the kernel waits for it, it splits them as `run_split` does.
  (Splitting because steps were queued put three busy threads on two cores and slowed the
  kernel's Python: matmul+ReLU 256^3 6.5 or 9.5 ms a launch by the race, now 6.1-7 ms; 512^3
  30-38 -> 28-30 ms; benchmarks/sim_speed.py, 2026-12-05.)

Pools are per process: a forked child makes its own (the parent's threads are not in it).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

WORKERS = max(1, min(4, os.cpu_count() or 1))
MIN_PART = 1 << 16  # fast chain: below that many outputs a part, one thread with einsum beats two
MIN_SPLIT = 1 << 18  # multiply-adds per thread below which one thread does the whole dot
_POOL = {}  # pid -> the pool of WORKERS threads
_CHAINS = {}  # pid -> the one thread that runs accumulating dots behind the kernel's Python
_BLOCKED = [0]  # threads waiting for a chain's result
_THREAD = threading.local()


def pool():
    found = _POOL.get(os.getpid())
    if found is None:
        found = _POOL[os.getpid()] = ThreadPoolExecutor(WORKERS,
                                                        thread_name_prefix="minitriton dot")
    return found


def _alone():
    """Marks the chain's thread (its pool's initializer)."""
    _THREAD.alone = True


def chain(fn):
    """fn() started on the chain's thread; returns a function that waits for its result."""
    found = _CHAINS.get(os.getpid())
    if found is None:
        found = _CHAINS[os.getpid()] = ThreadPoolExecutor(
            1, thread_name_prefix="minitriton chain", initializer=_alone)
    future = found.submit(fn)

    def result():
        if future.done():
            return future.result()
        _BLOCKED[0] += 1  # the kernel waits: the chain's thread may split its dots
        try:
            return future.result()
        finally:
            _BLOCKED[0] -= 1
    return result


def run_split(kernel, operands, out, *args):
    """kernel(*operands, out, *args) over slices (see the module). The operands are (P, M, ...)
    and (P, ..., N) arrays; extra leading-P arrays (exponents) follow the same slicing."""
    P, M = out.shape[:2]
    work = P * M * out.shape[2] * operands[0].shape[-1]
    parts = min(WORKERS, work // MIN_SPLIT, P if P > 1 else M)
    if parts <= 1 or (getattr(_THREAD, "alone", False) and _BLOCKED[0] <= 0):
        kernel(*operands, out, *args)
        return
    rows = P > 1  # split the programs, else the rows of the one program
    size = -(-(P if rows else M) // parts)
    calls = []
    for lo in range(0, P if rows else M, size):
        cut = slice(lo, lo + size)
        if rows:
            pieces = [a[cut] for a in operands]
            target = out[cut]
        else:  # x-like operands (even positions) and out are cut along M, y-like ones shared
            pieces = [a[:, cut] if i % 2 == 0 else a for i, a in enumerate(operands)]
            target = out[:, cut]
        calls.append((*pieces, target, *args))
    jobs = [pool().submit(kernel, *call) for call in calls[1:]]
    try:
        kernel(*calls[0])  # this thread takes a slice too, instead of waiting idle
    finally:
        wait(jobs)  # no slice still written after an error
    for job in jobs:
        job.result()
