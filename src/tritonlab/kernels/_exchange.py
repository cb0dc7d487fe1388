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
# The pipeliner orders a loop's operations by their SSA operands alone, not by their side
# effects: compiled for sm_90 (Triton 3.6.0) it had put the arrival and the wait after the
# reads of the others' statistics and the stores of the output that depend on them. So in PTX
# each step of a meeting returns a token that the next takes as an operand, publish ->
# arrive_and_wait -> read_after and leave, a chain no scheduler may reorder; each step's PTX
# carries a "// meet:" comment, by which benchmarks/probes/meeting_order.py checks the
# order in the compiled kernels.


@triton.jit
def _publish_ptx(ptr, value, keep):
    # every thread stores value where keep (the same value where the layout repeats it), as
    # the pointer's type (fp32 or fp64, as read_after reads it); the value goes in as its bits
    # (the asm's operands broadcast as a binary op's: no pointer beside a float)
    if ptr.dtype.element_ty == tl.float64:
        return tl.inline_asm_elementwise(
            "{\n.reg .pred p;\n// meet:publish\nsetp.ne.s32 p, $3, 0;\n"
            "@p st.global.b64 [$1], $2;\nmov.b32 $0, 0;\n}",
            "=r,l,l,r", [ptr, value.to(tl.float64).to(tl.int64, bitcast=True), keep],
            dtype=tl.int32, is_pure=False, pack=1)
    else:
        return tl.inline_asm_elementwise(
            "{\n.reg .pred p;\n// meet:publish\nsetp.ne.s32 p, $3, 0;\n"
            "@p st.global.b32 [$1], $2;\nmov.b32 $0, 0;\n}",
            "=r,l,r,r", [ptr, value.to(tl.float32).to(tl.int32, bitcast=True), keep],
            dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def publish(ptr, value, mask=None, PTX: tl.constexpr = False):
    """*ptr = value (where mask): what this program shares with its row-mates before it
    arrives. Returns a token for `arrive_and_wait`'s `after` (0, a scalar). PTX: inline-PTX
    stores, which the token keeps before the arrival; a scalar or a 1-D value (a token per
    element would have the meeting's asm run once per element)."""
    if PTX:
        keep = 1 if mask is None else mask.to(tl.int32)
        tokens = _publish_ptx(ptr, value, keep)
        tl.static_assert(len(tokens.shape) <= 1, "publish: a scalar or a 1-D value")
        if len(tokens.shape) > 0:  # a tensor's stores: one token for all of them
            tokens = tl.max(tokens, axis=0)
        return tokens
    else:
        if mask is None:
            tl.store(ptr, value)
        else:
            tl.store(ptr, value, mask=mask)
        return 0


@triton.jit
def _arrive_and_wait_ptx(count_ptr, programs, after):
    # bar.sync (every thread's stores issued), thread 0 counts the program in (release), then
    # every thread spins on an acquire load until `programs` have; returns the count seen
    # (loaded into a register of the asm's own: the output may share the input's register).
    # `after` is an operand only: it keeps this after what produced it
    return tl.inline_asm_elementwise(
        "{\n.reg .pred p, q;\n.reg .b32 t, c;\n// meet:wait\nbar.sync 0;\n"
        "mov.u32 t, %tid.x;\nsetp.eq.u32 q, t, 0;\nmov.u32 t, 1;\n"
        "@q red.release.gpu.global.add.u32 [$1], t;\n"
        "WAIT${:uid}:\nld.acquire.gpu.global.b32 c, [$1];\nsetp.lt.s32 p, c, $2;\n"
        "@p bra WAIT${:uid};\nmov.b32 $0, c;\n}",
        "=r,l,r,r", [count_ptr, programs, after], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def arrive_and_wait(count_ptr, programs, PTX: tl.constexpr = False, after=0):
    """Count this program in at `count_ptr`, then wait until `programs` have: what each stored
    before it arrives is visible to the others after they waited (release, then acquire).
    Returns the count it saw (at least `programs`), the token for `read_after` and `leave`.
    PTX: the barrier, the arrival and the wait in one inline-PTX statement, so that an
    enclosing loop can be pipelined; `after`: `publish`'s token (a scalar)."""
    if PTX:
        return _arrive_and_wait_ptx(count_ptr, programs, after)
    else:
        tl.debug_barrier()  # every thread's stores issued before the program arrives
        tl.atomic_add(count_ptr, 1, sem="release")
        while tl.atomic_cas(count_ptr, programs, programs, sem="acquire") != programs:
            pass
        return programs


@triton.jit
def read_after(base, index, mask, other, PTX: tl.constexpr = False, after=0):
    """base[index] where mask, else other: what the others stored before a meeting, read
    after it from L2 (.cg: not an L1 line older than their stores). PTX: by inline PTX loads
    (fp32 or fp64, predicated by mask) that take `after` (`arrive_and_wait`'s token) as an
    operand, so that the pipeliner keeps them after the wait."""
    if PTX:
        keep = mask.to(tl.int32)
        if base.dtype.element_ty == tl.float64:
            got = tl.inline_asm_elementwise(
                "{\n.reg .pred p;\n// meet:read\nsetp.ne.s32 p, $2, 0;\n"
                "mov.f64 $0, 0d0000000000000000;\n@p ld.relaxed.gpu.global.f64 $0, [$1];\n}",
                "=d,l,r,r", [base + index, keep, after], dtype=tl.float64, is_pure=False,
                pack=1)
        else:
            got = tl.inline_asm_elementwise(
                "{\n.reg .pred p;\n// meet:read\nsetp.ne.s32 p, $2, 0;\n"
                "mov.f32 $0, 0f00000000;\n@p ld.relaxed.gpu.global.f32 $0, [$1];\n}",
                "=f,l,r,r", [base + index, keep, after], dtype=tl.float32, is_pure=False,
                pack=1)
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
def _leave_ptx(count_ptr, left_ptr, last, after):
    # bar.sync (no thread of this program still spins), thread 0 counts the program out; the
    # last (`last` counted before it) zeroes both counters
    return tl.inline_asm_elementwise(
        "{\n.reg .pred q;\n.reg .b32 t;\n// meet:leave\nbar.sync 0;\n"
        "mov.u32 t, %tid.x;\nsetp.ne.u32 q, t, 0;\n@q bra LEFT${:uid};\n"
        "atom.relaxed.gpu.global.add.u32 t, [$2], 1;\nsetp.ne.u32 q, t, $3;\n"
        "@q bra LEFT${:uid};\nst.relaxed.gpu.global.b32 [$1], 0;\n"
        "st.relaxed.gpu.global.b32 [$2], 0;\nLEFT${:uid}:\nmov.b32 $0, 0;\n}",
        "=r,l,l,r,r", [count_ptr, left_ptr, last, after], dtype=tl.int32, is_pure=False,
        pack=1)


@triton.jit
def leave(count_ptr, left_ptr, programs, PTX: tl.constexpr = False, after=0):
    """Count this program out at `left_ptr`; the last of `programs` zeroes both counters (no
    program still waits at `count_ptr`: each left after it stopped waiting). PTX: in one
    inline-PTX statement after a CTA barrier (every thread of the program past its spin),
    `after` (`arrive_and_wait`'s token) keeping it after the wait."""
    if PTX:
        _leave_ptx(count_ptr, left_ptr, programs - 1, after)
    else:
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

