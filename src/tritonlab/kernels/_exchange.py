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


# The meeting in inline PTX (PTX=True, GPU only): Triton's software pipeliner leaves alone a
# loop that holds another loop or a tl.debug_barrier, so a row loop whose programs meet can
# keep its next rows' loads in flight through the meeting only where the wait is one PTX
# statement and the CTA barrier is bar.sync in PTX (benchmarks/probes/exchange_pipelined.py).


@triton.jit
def _spin_until(count_ptr, target):
    # every thread loads *count_ptr (acquire, from L2) until it is at least target
    return tl.inline_asm_elementwise(
        "{\n.reg .pred p;\nWAIT${:uid}:\nld.acquire.gpu.global.b32 $0, [$1];\n"
        "setp.lt.s32 p, $0, $2;\n@p bra WAIT${:uid};\n}",
        "=r,l,r", [count_ptr, target], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _cta_barrier(v):
    # bar.sync 0, as tl.debug_barrier, then v
    return tl.inline_asm_elementwise("bar.sync 0;\nmov.b32 $0, $1;", "=r,r", [v],
                                     dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def arrive_and_wait(count_ptr, programs, PTX: tl.constexpr = False):
    """Count this program in at `count_ptr`, then wait until `programs` have: what each stored
    before it arrives is visible to the others after they waited (release, then acquire).
    PTX: the barrier and the wait in inline PTX, so that an enclosing loop can be pipelined
    (read what the others stored with `read_after`)."""
    if PTX:
        tl.atomic_add(count_ptr, _cta_barrier(1), sem="release")
        _spin_until(count_ptr, programs)
    else:
        tl.debug_barrier()  # every thread's stores issued before the program arrives
        tl.atomic_add(count_ptr, 1, sem="release")
        while tl.atomic_cas(count_ptr, programs, programs, sem="acquire") != programs:
            pass


@triton.jit
def read_after(base, index, mask, other, PTX: tl.constexpr = False):
    """base[index] where mask, else other: what the others stored before a meeting, read
    after it from L2 (.cg: not an L1 line older than their stores). PTX: by inline PTX loads
    (fp32 or fp64), which the pipeliner cannot issue stages early, before the wait; base[0]
    is read where mask is false."""
    if PTX:
        ptrs = base + tl.where(mask, index, 0)
        if base.dtype.element_ty == tl.float64:
            got = tl.inline_asm_elementwise("ld.relaxed.gpu.global.f64 $0, [$1];", "=d,l",
                                            [ptrs], dtype=tl.float64, is_pure=False, pack=1)
        else:
            got = tl.inline_asm_elementwise("ld.relaxed.gpu.global.f32 $0, [$1];", "=f,l",
                                            [ptrs], dtype=tl.float32, is_pure=False, pack=1)
        return tl.where(mask, got, other)
    else:
        return tl.load(base + index, mask=mask, other=other, cache_modifier=".cg")


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

