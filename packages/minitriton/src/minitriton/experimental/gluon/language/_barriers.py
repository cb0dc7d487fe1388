"""mbarriers, and the shared memory that asynchronous copies fill and asynchronous MMAs read, in
programs that run in order.

On the GPU an mbarrier counts arrivals and transaction bytes: `init(bar, count)` expects
`count` arrivals per phase; `expect(bar, n)` is one arrival that also announces n bytes; each
TMA copy that names the barrier delivers its box's bytes; when no arrival and no byte is
outstanding the phase completes and the next one begins. `wait(bar, phase)` returns once the
phase of that parity has completed, and blocks while the barrier is in it.

Here a copy lands at once, so a wait that would block can never be released: nothing else runs
in the program meanwhile (Gluon's warp_specialize partitions are not modelled). That is the
GPU's hang, reported with what is missing (arrivals, bytes, or a phase parity that is one
ahead). And a buffer a copy fills is checked on every read: reading it before waiting on the
copy's barrier is a race on the GPU, whatever the order here. Likewise an asynchronous
warpgroup MMA reads its shared-memory operands until a `warpgroup_mma_wait` retires it (the
waits retire the oldest first; a synchronous MMA waits for all): a copy or a store into them
before that is an error (`in_flight`, `retire`, `check_unread`).
"""
from __future__ import annotations

import itertools

import numpy as np

from ....context import current
from ....errors import AsyncRaceError, CompilationError, DeadlockError, GPUFaultError
from ....language.core import to_tensor
from ....types import _unwrap
from . import _partitions


class Barriers:
    """The state of every mbarrier of one allocation, (programs, elements) arrays."""

    def __init__(self, shape):
        self.count = np.zeros(shape, dtype=np.int64)
        self.pending = np.zeros(shape, dtype=np.int64)  # arrivals still missing in this phase
        self.tx = np.zeros(shape, dtype=np.int64)  # bytes announced and not yet delivered
        self.completed = np.zeros(shape, dtype=np.int64)  # phases completed so far
        self.seen = np.zeros(shape, dtype=np.int64)  # completions a wait has returned after
        self.live = np.zeros(shape, dtype=bool)  # initialised and not invalidated


def _element(bar, op):
    """The flat element number of a one-barrier view, and its allocation's state."""
    _check_barrier(bar, op)
    alloc = bar.alloc
    if alloc.barriers is None:
        alloc.barriers = Barriers(alloc.data.shape)
    e = int(bar.flat.ravel()[0])
    if op != "init" and not alloc.barriers.live[:, e].all():
        name = op if "." in op else f"mbarrier.{op}"
        err = GPUFaultError(f"{name} on a barrier that is not initialised (or was "
                            f"invalidated): call mbarrier.init(bar, count=...) first; on the GPU "
                            f"its phases are garbage")
        err.failing_row = int(np.argmin(alloc.barriers.live[:, e]))
        raise err
    return alloc.barriers, e


def _check_barrier(bar, op):
    """What Gluon's compiler checks of a barrier operand (a predicated-off operation too)."""
    if not hasattr(bar, "alloc"):
        raise CompilationError(f"mbarrier.{op}: expected a shared memory descriptor (an "
                               f"allocation of gl.int64 with MBarrierLayout), got {bar!r}")
    if bar.numel != 1:
        raise CompilationError(f"mbarrier.{op}: the descriptor holds {bar.numel} barriers "
                               f"(shape {bar.shape}); pass one, e.g. bars.index(i)")
    if bar.dtype.primitive_bitwidth != 64:
        raise CompilationError(f"mbarrier.{op}: an mbarrier is 64 bits; allocate it as "
                               f"gl.int64, not {bar.dtype}")


def predicate(pred):
    """A scalar predicate's value for the running programs (a value they disagree on regroups
    them: language/core.py, Divergence)."""
    pred = _unwrap(pred)
    return bool(pred) if isinstance(pred, (bool, int, np.bool_)) else bool(to_tensor(pred))


def _advance(s, e):
    """Complete the phase of every program whose barrier has nothing outstanding."""
    done = (s.pending[:, e] == 0) & (s.tx[:, e] == 0)
    s.completed[done, e] += 1
    s.pending[done, e] = s.count[done, e]


def init(bar, count):
    count = int(_unwrap(count))
    if count < 1:
        raise CompilationError(f"mbarrier.init: count must be at least 1, got {count}")
    s, e = _element(bar, "init")
    s.count[:, e] = s.pending[:, e] = count
    s.tx[:, e] = s.completed[:, e] = s.seen[:, e] = 0
    s.live[:, e] = True


def invalidate(bar):
    s, e = _element(bar, "invalidate")
    s.live[:, e] = False


def arrive(bar, count=1, pred=True):
    _check_barrier(bar, "arrive")
    if not predicate(pred):
        return
    s, e = _element(bar, "arrive")
    s.pending[:, e] -= int(_unwrap(count))
    _check_overrun(s, e, "arrive")
    _advance(s, e)


def expect(bar, nbytes, pred=True):
    """One arrival announcing `nbytes` bytes (PTX's mbarrier.arrive.expect_tx)."""
    _check_barrier(bar, "expect")
    nbytes = _unwrap(nbytes)
    if not isinstance(nbytes, (int, np.integer)) or isinstance(nbytes, bool):
        raise CompilationError(f"mbarrier.expect: the byte count must be a constexpr int (e.g. "
                               f"desc.block_type.nbytes), got {nbytes!r}")
    if not predicate(pred):
        return
    s, e = _element(bar, "expect")
    s.tx[:, e] += int(nbytes)
    s.pending[:, e] -= 1
    _check_overrun(s, e, "expect")
    _advance(s, e)


def deliver(bar, nbytes):
    """A TMA copy naming `bar` has landed its `nbytes` bytes."""
    s, e = _element(bar, "tma.async_copy_global_to_shared")
    s.tx[:, e] -= nbytes
    _advance(s, e)


def _check_overrun(s, e, op):
    over = s.pending[:, e] < 0
    if over.any():
        row = int(np.argmax(over))
        err = GPUFaultError(
            f"mbarrier.{op}: more arrivals than the barrier's count ({int(s.count[row, e])}) "
            f"in one phase; on the GPU the extra arrival corrupts the barrier's phase. Arrive "
            f"once per expected arrival (mbarrier.init(bar, count=...))")
        err.failing_row = row
        raise err


def wait(bar, phase, pred=True):
    _check_barrier(bar, "wait")
    if not predicate(pred):
        return
    s, e = _element(bar, "wait")
    phase = int(_unwrap(phase))

    def blocked():
        return (s.completed[:, e] & 1) == (phase & 1)
    if blocked().any():
        # in a warp-specialized region the other partitions may complete the phase
        released = _partitions.waiting(lambda: not blocked().any())
        if not released:
            row = int(np.argmax(blocked()))
            others = (" (and every other partition of the warp-specialized region waits too)"
                      if released is False else "")
            err = DeadlockError(f"mbarrier.wait(bar, phase={phase}) never returns{others}: "
                                + _why_blocked(s, row, e, phase) + ". On the GPU the kernel "
                                "hangs here")
            err.failing_row = row
            raise err
    s.seen[:, e] = s.completed[:, e]


def _why_blocked(s, row, e, phase):
    count, pending = int(s.count[row, e]), int(s.pending[row, e])
    tx, done = int(s.tx[row, e]), int(s.completed[row, e])
    state = f"the barrier has completed {done} phase{'s' if done != 1 else ''}"
    if tx > 0:
        return (f"{state}, and {tx} bytes announced by mbarrier.expect are still to come: the "
                f"copies naming this barrier bring fewer bytes than were expected")
    if tx < 0:
        return (f"{state}, and its copies brought {-tx} bytes more than mbarrier.expect "
                f"announced (expect the sum of every copy's block bytes)")
    if pending == count:
        return (f"{state}, and nothing was issued on it since: phase {phase} is the one "
                f"after them (wrong phase parity? the k-th completion is waited for with "
                f"phase (k - 1) & 1), or the expect/copies for this phase were skipped")
    return (f"{state}, and {pending} of the {count} arrivals of its current phase are missing "
            f"(mbarrier.expect and mbarrier.arrive each arrive once)")


def filling(view, bar):
    """A TMA copy writes `view` and completes on `bar`: until a wait on `bar` has returned
    after that phase, no read of these elements is safe."""
    s, e = _element(bar, "tma.async_copy_global_to_shared")
    check_unfilled(view, "tma.async_copy_global_to_shared")
    _fill(view, bar, s, e)


def _fill(view, bar, s, e):
    """`view` is being filled by copies that complete `bar`'s current phase."""
    mask = np.zeros(view.alloc.data.shape[1], dtype=bool)
    mask[view.flat.ravel()] = True
    view.alloc.filling.append([bar, s.completed[:, e] + 1, mask])


def _still_filling(view):
    """(phase completions needed, which programs have waited for them) of a copy still filling
    part of `view`, or None; entries every program has waited for are dropped."""
    alloc, found, kept = view.alloc, None, []
    for bar, need, mask in alloc.filling:
        waited = bar.alloc.barriers.seen[:, int(bar.flat.ravel()[0])] >= need
        if waited.all():
            continue
        if found is None and mask[view.flat.ravel()].any():
            found = need, waited
        kept.append([bar, need, mask])
    alloc.filling = kept
    return found


def check_unfilled(view, what):
    """Raise where a write into `view` would meet a copy still filling it (two writers, in an
    order the GPU does not fix)."""
    _check_copies(view, what, True)
    found = _still_filling(view)
    if found is not None:
        err = AsyncRaceError(
            f"{what} writes shared memory that an earlier TMA copy may still be filling: wait "
            f"for that copy's barrier first; on the GPU the two writes land in either order")
        err.failing_row = int(np.argmax(~found[1]))
        raise err


def check_filled(view, what):
    """Raise where `view` holds elements a copy may still be writing (language/_core.py)."""
    _check_copies(view, what, False)
    found = _still_filling(view) if view.alloc.filling else None
    if found is not None:
        need, waited = found
        row = int(np.argmax(~waited))
        phase = int(need[row]) - 1
        err = AsyncRaceError(
            f"{what} reads shared memory that a TMA copy is still filling: wait for the copy's "
            f"barrier first (mbarrier.wait(bar, phase) with the phase the copy completes, "
            f"{phase} & 1 = {phase & 1}); on the GPU the read may see the old contents")
        err.failing_row = row
        raise err


def _newest(keys, outstanding):
    """The `outstanding` most recent of issue-ordered `keys` (none for 0)."""
    keys = sorted(keys)
    return set(keys[len(keys) - outstanding:]) if outstanding > 0 else set()


_ISSUED = itertools.count()  # the order asynchronous operations were issued in

# what retires each kind of asynchronous reader of shared memory
_RETIRED_BY = {"mma": "warpgroup_mma_wait with num_outstanding low enough, or a synchronous "
                      "warpgroup_mma",
               "store": "tma.store_wait(pendings) with pendings low enough"}
_READER = {"mma": "an asynchronous warpgroup_mma", "store": "a TMA store (async_copy_shared_"
                                                            "to_global)"}


def _readers(kind):
    """The running programs' asynchronous `kind` operations not yet retired: [(order, view),
    ...]. Kept per attempt of the executors, by its programs (a regrouped or re-run attempt
    starts afresh; what an abandoned one left names allocations nothing writes again, and is
    older than all that follows)."""
    ctx = current()
    attempts = ctx.scratch.setdefault(f"gluon_{kind}", {})
    pids, readers = attempts.get(id(ctx.pids), (None, None))
    if pids is not ctx.pids:
        readers = []
        attempts[id(ctx.pids)] = (ctx.pids, readers)
    return readers


def in_flight(kind, views):
    """An asynchronous `kind` operation reading these shared-memory views has been issued:
    its order."""
    order = next(_ISSUED)
    _readers(kind).extend((order, v) for v in views)
    return order


def retire(kind, outstanding=0):
    """All but the `outstanding` most recently issued `kind` operations have completed; the
    orders of those still in flight."""
    readers = _readers(kind)
    keep = _newest({order for order, _ in readers}, outstanding)
    readers[:] = [(order, v) for order, v in readers if order in keep]
    return keep


def check_unread(view, what):
    """Raise where `view` overlaps shared memory an asynchronous MMA or TMA store not yet
    retired reads."""
    flat = None
    for kind in _RETIRED_BY:
        for _, operand in _readers(kind):
            if operand.alloc is not view.alloc:
                continue
            flat = set(view.flat.ravel().tolist()) if flat is None else flat
            if not flat.isdisjoint(operand.flat.ravel().tolist()):
                err = AsyncRaceError(
                    f"{what} overwrites shared memory that {_READER[kind]} issued earlier may "
                    f"still be reading: retire it first ({_RETIRED_BY[kind]}); on the GPU it "
                    f"may read the new contents")
                err.failing_row = 0
                raise err


def _copies():
    """The running programs' cp.async copies not yet retired: [[group or None, view], ...]
    (None: not committed yet), per attempt as `_readers`."""
    return _readers("cp.async")


def copying(view):
    """A cp.async copy into `view` has been issued."""
    _copies().append([None, view])


def commit_copies():
    group = next(_ISSUED)
    for entry in _copies():
        if entry[0] is None:
            entry[0] = group


def wait_copies(outstanding):
    copies = _copies()
    keep = _newest({g for g, _ in copies if g is not None}, outstanding)
    copies[:] = [[g, v] for g, v in copies if g is None or g in keep]


def copies_arrive(bar, increment):
    """cp.async.mbarrier.arrive: every copy issued so far completes the barrier's current
    phase before it can complete (here they have landed: they are filling it until a wait on
    that phase); without `increment` that completion is one of its arrivals."""
    s, e = _element(bar, "async_copy.mbarrier_arrive")
    for _, view in _copies():
        _fill(view, bar, s, e)
    _copies().clear()
    if not increment:
        s.pending[:, e] -= 1
        _check_overrun(s, e, "arrive")
    _advance(s, e)


def _check_copies(view, what, writes):
    for group, operand in _copies():
        if operand.alloc is view.alloc and np.intersect1d(operand.flat.ravel(),
                                                          view.flat.ravel()).size:
            fix = ("commit_group, then wait_group" if group is None else "wait_group with "
                   "num_outstanding low enough")
            then = "land after this write" if writes else "read the old contents"
            err = AsyncRaceError(
                f"{what} {'writes' if writes else 'reads'} shared memory that an "
                f"async_copy.async_copy_global_to_shared may still be writing: {fix} first; "
                f"on the GPU it may {then}")
            err.failing_row = 0
            raise err
