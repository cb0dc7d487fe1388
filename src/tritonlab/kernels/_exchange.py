"""A row's programs meeting in global memory: the exchange that lets long rows be read once.

A row too long for one program's registers is cut into pieces, one program each, that keep
their piece on chip. Each program stores its partial statistics (softmax's max and sum),
`arrive_and_wait`s at its row's counter until all of the row's programs have arrived, reads
theirs, finishes, and `leave`s: the last to leave puts both counters back to zero, so the
buffer (`_launch.scratch(..., zeroed=True)`) is ready for the next launch on its stream.

That waiting needs every program of a row resident at once. A row's programs are consecutive
in the grid and a GPU starts programs in grid order, so the programs that wait have their
row-mates started or about to start, as long as a row has no more programs than the GPU holds
at once: `max_pieces` keeps them to one per SM. The simulator runs waiting programs as
coroutines (minitriton's executors), so the same kernels run there.
"""
from __future__ import annotations

import torch

from ..backend import tl, triton
from ._checks import sm_count
from ._launch import scratch


@triton.jit
def arrive_and_wait(count_ptr, programs):
    """Count this program in at `count_ptr`, then wait until `programs` have: what each stored
    before it arrives is visible to the others after they waited (release, then acquire)."""
    tl.debug_barrier()  # every thread's stores issued before the program arrives
    tl.atomic_add(count_ptr, 1, sem="release")
    while tl.atomic_cas(count_ptr, programs, programs, sem="acquire") != programs:
        pass


@triton.jit
def arrive(count_ptr):
    """Count this program in at `count_ptr` without waiting (the first half of a split
    meeting): what each stored before it arrives is visible to those that see the count."""
    tl.debug_barrier()  # every thread's stores issued before the program arrives
    tl.atomic_add(count_ptr, 1, sem="release")


@triton.jit
def wait_for(count_ptr, target):
    """Wait until `count_ptr` has counted `target` arrivals (the second half): after it, what
    they stored before arriving is visible (acquire)."""
    while tl.atomic_add(count_ptr, 0, sem="acquire") < target:
        pass


@triton.jit
def leave(count_ptr, left_ptr, programs):
    """Count this program out at `left_ptr`; the last of `programs` zeroes both counters (no
    program still waits at `count_ptr`: each left after it stopped waiting)."""
    if tl.atomic_add(left_ptr, 1, sem="relaxed") == programs - 1:
        tl.atomic_xchg(count_ptr, 0, sem="relaxed")
        tl.atomic_xchg(left_ptr, 0, sem="relaxed")


def max_pieces(x):
    """Most programs one row may have: one per SM of x's GPU (all resident at once whatever
    their size), 64 on the simulator."""
    return sm_count(x.get_device()) if x.is_cuda else 64


def counted(name, count, device, run):
    """run(sync): a launch given `count` int32 counters, reused scratch (`_launch.scratch`,
    kept under `name`), zero before the launch and left zero by it; a launch that stopped part
    way may have left counts behind, so they are zeroed again before its error goes on."""
    sync = scratch(name, (count,), torch.int32, device, zeroed=True)
    try:
        return run(sync)
    except BaseException:
        sync.zero_()
        raise


def launch(bound, name, stats_shape, dtype, device, args, tail):
    """`bound(*args, stats, sync, *tail)`: an exchange kernel's launch with its buffers, reused
    scratch (`_launch.scratch`): the statistics, (rows, pieces, ...) of `dtype`, and two
    counters per row (`counted`)."""
    stats = scratch(f"{name} exchange", stats_shape, dtype, device)
    counted(f"{name} exchange counters", 2 * stats_shape[0], device,
            lambda sync: bound(*args, stats, sync, *tail))

