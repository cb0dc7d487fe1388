"""What every memory operation shares: broadcasting pointer and mask to the lanes of the
programs running together, bounds-checked resolution to buffers, and the observer hooks.

Every access goes through `AddressSpace.resolve`, which bounds-checks all active lanes before
anything is read or written; the launch's observers (traffic, sanitizers...) see each access
through `ctx.hooks`.
"""
from __future__ import annotations

import numpy as np

from ..context import Access, Wait
from ..errors import CompilationError
from ..lanes import all_true
from ..source import kernel_location
from .core import broadcast_to, expand_to_rank, lazy_pointer, pointer_parts, tensor, to_tensor


def check_mask(mask, shape, what="Mask"):
    mask = to_tensor(mask)
    if not shape and mask.shape:
        raise CompilationError(f"{what} argument cannot be block type if pointer argument is not "
                               "a block")
    if what == "Mask" and not mask.dtype.is_bool():
        raise CompilationError("Mask must have boolean scalar type")
    return broadcast_to(mask, shape)


def full(t, lanes, shape):
    """`t`'s data broadcast to (lanes, *shape)."""
    return np.broadcast_to(expand_to_rank(t, len(shape)), (lanes, *shape))


class Lanes:
    """Pointer addresses and active lanes for one memory operation, already broadcast.

    Every program of the group performs the access, even with a uniform pointer, so that
    traffic, atomics and sanitizers see one access per program. A load that is the same in
    every program (uniform pointer and mask) is done once and counted `repeat` times, unless
    an observer needs every program's lanes apart."""

    def __init__(self, ctx, ptr, mask, extra=(), shared_ok=False):
        self.shape = ptr.shape
        programs = len(ctx.pids)
        parts = pointer_parts(ptr)
        uniform = (ptr.data.shape[0] if parts is None else parts[2][0]) == 1 and \
            all(t.data.shape[0] == 1 for t in (mask, *extra) if t is not None)
        if shared_ok and uniform and not ctx.per_program:
            self.lanes, self.repeat = 1, programs
        else:
            self.lanes, self.repeat = programs, 1
        if parts is None:
            self.ptr = tensor(full(ptr, self.lanes, self.shape), ptr.dtype, self.shape,
                              ptr.origin)
        else:  # the addresses stay unsummed: resolve bounds-checks the parts
            self.ptr = lazy_pointer(None, ptr.dtype, self.shape, ptr.origin, parts[0], parts[1],
                                    (self.lanes, *self.shape), ptr.stats)
        # an all-true mask (a full block) is no mask: no boolean gathers or scatters; one the
        # same in every program stays a read-only view along the programs (lanes.Rows)
        self.active = None if mask is None or all_true(mask.data) else \
            np.asarray(full(mask, self.lanes, self.shape), dtype=bool) if \
            mask.data.shape[0] == 1 and mask.data.dtype == bool else \
            np.array(full(mask, self.lanes, self.shape), dtype=bool)
        self.elt = ptr.dtype.element_ty

    def accesses(self, ctx, op):
        """One `Access` per buffer the active lanes fall in (bounds-checked)."""
        ctx.note_block(max(1, self.ptr.numel))
        shape = (self.lanes, *self.shape)
        return [Access(buf, lanes, idx, shape, self.repeat)
                for buf, lanes, idx in ctx.memory.resolve(self.ptr, self.active, op,
                                                          ctx.settings.bounds)]


def gather(ctx, lanes, other, op="load", accesses=None):
    """Read the active lanes (`other`, or 0, elsewhere) into a tensor; `accesses`: a list
    that receives the accesses made."""
    result = None
    made = lanes.accesses(ctx, op)
    if accesses is not None:
        accesses.extend(made)
    accesses = made
    for acc in accesses:
        for hook in ctx.hooks["on_load"]:
            hook(acc)
        if acc.lanes is None:
            values = acc.read()
            result = values.reshape((lanes.lanes, *lanes.shape))
            if values.base is not None:
                result = result.copy()  # a load is a snapshot, not a view of memory
        else:
            if result is None:
                result = _fill(other, lanes)
            acc.place(result)
    if result is None:
        result = _fill(other, lanes)
    out = tensor(result, lanes.elt, lanes.shape)
    if lanes.shape:  # the coalesced blocked layout of its element width (core.py, `layout`);
        out.layout = max(lanes.elt.primitive_bitwidth, 8)  # Triton loads int1 as int8
    for hook in ctx.hooks["after_load"]:
        hook(accesses, out)
    return out


def _fill(other, lanes):
    """The lanes a masked load does not read: `other`, or zeros."""
    if other is None:
        return np.zeros((lanes.lanes, *lanes.shape), dtype=lanes.elt.np)
    return np.array(full(other, lanes.lanes, lanes.shape), dtype=lanes.elt.np)


def scatter(ctx, lanes, value):
    """Write `value` to the active lanes."""
    vals = np.broadcast_to(expand_to_rank(value, len(lanes.shape)),
                           (lanes.lanes, *lanes.shape))
    for acc in lanes.accesses(ctx, "store"):
        for hook in ctx.hooks["on_store"]:
            hook(acc)
        ctx.memory.before_write(acc.buf, acc.idx if ctx.memory.journaling else None)
        acc.write(vals)


def poll(ctx, buf, idx, old, cmp):
    """Note what the programs running saw at this site (an atomic, or a volatile load). If they see again, changing nothing,
    what they saw at their last poll of it, they wait (`Wait`: raised, or the coroutine
    suspended by `ctx.waiter`) for the sites they polled since (the body of their spin loop)."""
    key, site = ctx.pids.tobytes(), (buf.index, idx.tobytes())
    record = ctx.spins.get(key)
    if record is None:
        record = ctx.spins[key] = [0, {}]
    polls = record[1]
    if not _same(buf.flat[idx], old):  # this atomic changed memory: an update, not a poll
        polls.pop(site, None)
        return
    record[0] += 1
    entry = polls.get(site)
    if entry is None or not _same(entry[2], old):
        polls[site] = [buf, idx.copy(), old.copy(), None if cmp is None else cmp.copy(),
                       kernel_location(2), 0, record[0]]
        return
    since, entry[6] = entry[6], record[0]
    entry[5] += 1
    if entry[5] < ctx.patience:
        return
    entry[5] = 0
    wait = Wait([e[:5] for e in polls.values() if e[6] >= since])
    if ctx.waiter is None:
        raise wait
    ctx.waiter(wait)


def _same(a, b):
    return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
