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

from ..backend import tl, triton
from ._checks import sm_count


@triton.jit
def arrive_and_wait(count_ptr, programs):
    """Count this program in at `count_ptr`, then wait until `programs` have: what each stored
    before it arrives is visible to the others after they waited (release, then acquire)."""
    tl.debug_barrier()  # every thread's stores issued before the program arrives
    tl.atomic_add(count_ptr, 1, sem="release")
    while tl.atomic_cas(count_ptr, programs, programs, sem="acquire") != programs:
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
