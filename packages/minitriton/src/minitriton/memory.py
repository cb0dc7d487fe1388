"""The address space of one launch: every tensor argument becomes a bounded buffer.

A buffer is a flat NumPy view over the argument's memory span (storage offset and strides
respected, no copy), so stores land in the caller's tensor. Each buffer gets a virtual base
address far from the others. Addresses count elements of the buffer's type, not bytes (a
pointer keeps its element type, so `ptr + k` is `address + k` and the element offset is
`address - base`: no multiply or divide on the hot path).

Bounds are the storage's, not the view's: a buffer covers the whole memory the argument's
view lies in (a torch tensor's untyped storage, a NumPy view's base array), as a GPU kernel
may read any of it (`base[1:]` read at offset -1, a column block read past its last column).
An access outside the storage raises `OutOfBoundsError` before anything is touched; one
outside the view but inside the storage is reported to `AddressSpace.on_outside_view` (a
warning, or an error under `Settings.view_bounds`). Element offsets inside the address space
count from the storage's start; messages count them from the view's first element, as the
kernel's pointer arithmetic does.

Pointers made from integers (`tl.load(addrs + g).to(tl.pointer_type(tl.float16))`, with
`addrs` a tensor of `t.data_ptr()` values, as Triton's grouped GEMM does) are resolved against
real memory: a launch argument whose bytes hold the address, else a live torch tensor's storage
(found once through the garbage collector, then remembered) or a NumPy array handed to
`register_memory` (host.py finds them; bounds.py words the errors). The memory found becomes one more buffer of the launch, bounded by the whole
storage, so bounds checking, traffic counts and the sanitizers keep working. `ptr.to(tl.int64)`
gives the real byte address, as on the GPU.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import types as _t
from .bounds import oob_error
from .errors import LaunchError, OutOfBoundsError
from .host import (as_numpy, byte_address, describe, flat_span, host_bytes, host_owner,
                   host_span, storage_of)
from .lanes import Rows, Shifted, all_true

_REGION_SHIFT = 36  # 2**36 elements between two buffers' base addresses
# where pointers made from integers that no known memory holds go: below every buffer, so that
# dereferencing them fails ("outside every buffer"), while arithmetic on them stays exact
_UNKNOWN = -(1 << 62)


@dataclass
class Buffer:
    index: int  # position among the launch's buffers
    name: str  # the kernel parameter it was passed as
    flat: np.ndarray  # 1-D view over the storage, in the element type
    dtype: object  # triton element type
    description: str
    base: int = 0  # virtual address of flat[0]; the argument's pointer is base + view_lo
    view_lo: int = 0  # the span of the view passed in, as offsets into flat: [view_lo, view_hi)
    view_hi: int = None
    shape: tuple = None  # the view's shape and strides (in elements); None: one flat span
    strides: tuple = None
    snapshot: np.ndarray = field(default=None, repr=False)  # flat[snapshot_lo:...] before
    snapshot_lo: int = 0
    too_big_to_restore: bool = False
    outside_view: bool = False  # some access fell outside the view: snapshots take it all

    def __post_init__(self):
        if self.view_hi is None:
            self.view_hi = self.size

    @property
    def size(self):
        return self.flat.shape[0]

    @property
    def expanded(self):
        """The dimensions of size > 1 whose stride is 0 (an `expand`ed tensor)."""
        if self.shape is None:
            return ()
        return tuple(d for d, (n, s) in enumerate(zip(self.shape, self.strides))
                     if s == 0 and n > 1)

    def view_index(self):
        """The offsets (into `flat`) of the view's elements, in C order: a slice when the view
        is contiguous."""
        shape, strides = self.shape, self.strides
        if shape is None:
            return slice(self.view_lo, self.view_hi)
        numel = int(np.prod(shape, dtype=np.int64))
        contiguous, step = True, 1
        for n, st in zip(reversed(shape), reversed(strides)):
            if n > 1 and st != step:
                contiguous = False
            step *= n
        if contiguous:
            return slice(self.view_lo, self.view_lo + numel)
        idx = np.full((1,) * len(shape), self.view_lo, dtype=np.int64)
        for d, (n, st) in enumerate(zip(shape, strides)):
            axis = [1] * len(shape)
            axis[d] = n
            idx = idx + (np.arange(n, dtype=np.int64) * st).reshape(axis)
        return np.broadcast_to(idx, shape).reshape(-1)

    def take_snapshot(self, limit):
        """Copy what a launch may write before it first writes: the view's span, or all of
        the storage once an access strayed outside the view."""
        lo, hi = (0, self.size) if self.outside_view else (self.view_lo, self.view_hi)
        if self.snapshot is not None:
            if self.snapshot_lo == lo and self.snapshot.shape[0] == hi - lo:
                return
            wide = self.flat[lo:hi].copy()  # widen: keep the older copy of the span
            wide[self.snapshot_lo - lo:self.snapshot_lo - lo + self.snapshot.shape[0]] = \
                self.snapshot
            self.snapshot, self.snapshot_lo = wide, lo
            return
        if (hi - lo) * self.flat.itemsize <= limit:
            self.snapshot, self.snapshot_lo = self.flat[lo:hi].copy(), lo
        else:
            self.too_big_to_restore = True

    def restore(self):
        """Put the snapshot back (memory as before the launch's first write)."""
        self.flat[self.snapshot_lo:self.snapshot_lo + self.snapshot.shape[0]] = self.snapshot

    def written_region(self):
        """The part of `flat` the snapshot covers (what the launch may have written)."""
        return self.flat[self.snapshot_lo:self.snapshot_lo + self.snapshot.shape[0]]

    @property
    def nbytes(self):
        return self.flat.nbytes

    @property
    def address(self):
        """The real byte address of the buffer's first element."""
        return byte_address(self.flat)


class AddressSpace:
    """The buffers of one launch, with the means to undo writes.

    Two levels of undo, with the same words as the observers' (`mark`/`undo`/`commit`): a
    journal of the writes since a mark, so that the lockstep executor can re-run programs
    whose control flow diverged; and the whole launch (each written buffer is copied before its
    first write, up to `rollback_limit` bytes per buffer: `undo_launch`/`commit_launch`), so
    that a failing launch leaves memory as it was.
    """

    def __init__(self, rollback_limit=256 << 20):
        self.buffers: list[Buffer] = []
        self.rollback_limit = rollback_limit
        self.journal: list = []
        self.journaling = False
        self.on_new_buffer = []  # called with each buffer made during the launch
        self.scanned = False  # whether the garbage collector was searched for tensors
        # called with (buffer, offsets, op, lanes, row) for lanes outside the view but inside
        # the storage; None: such lanes pass silently
        self.on_outside_view = None
        self.snapshotted: list[Buffer] = []  # in the order their snapshots were taken

    def add(self, obj, name):
        arr = as_numpy(obj, name)
        flat = flat_span(arr, name)
        span = flat.shape[0]
        start = 0
        found = storage_of(obj, arr, flat) if span else None
        if found is not None:
            flat, start = found
        item = arr.itemsize
        buf = Buffer(len(self.buffers), name, flat, _t.from_numpy(arr.dtype), describe(obj),
                     view_lo=start, view_hi=start + span, shape=tuple(arr.shape),
                     strides=tuple(s // item for s in arr.strides))
        buf.base = (buf.index + 1) << _REGION_SHIFT
        self.buffers.append(buf)
        return buf

    def add_pointer(self, obj, name, element_ty):
        """A buffer for an object that is not a tensor but carries a pointer (`data_ptr()`),
        as Triton's `TensorWrapper` and libraries' strided wrappers do: the memory of the
        tensor or array it holds (or any live one) that holds the address, typed
        `element_ty`; the view is what its `shape` and `stride()` reach, if it has them."""
        address = int(obj.data_ptr())
        held = [v for v in vars(obj).values() if isinstance(v, np.ndarray)
                or hasattr(v, "untyped_storage")] if hasattr(obj, "__dict__") else []
        owner = None
        for v in held:
            begin, n = host_span(v)
            if begin <= address < begin + n or (n == 0 and begin == address):
                owner = begin, v
                break
        if owner is None:
            owner = host_owner(address, scan=not self.scanned) if address >= 4096 else None
            self.scanned |= owner is None
        if owner is None:
            raise LaunchError(
                f"argument `{name}` ({type(obj).__name__}) has data_ptr() 0x{address:x}, which "
                "is in no memory minitriton knows: it must point into a live torch tensor, or "
                "a NumPy array the object holds or that was given to "
                "`minitriton.register_memory`")
        start, holder = owner
        item = element_ty.itemsize
        if (address - start) % item:
            raise LaunchError(f"argument `{name}` ({type(obj).__name__}): data_ptr() 0x"
                              f"{address:x} is not a multiple of {item} bytes from the start "
                              f"of its memory")
        raw = host_bytes(holder)
        flat = raw[: raw.size - raw.size % item].view(element_ty.np)
        lo = (address - start) // item
        shape, strides, hi = None, None, flat.shape[0]
        try:
            shape = tuple(int(n) for n in obj.shape)
            strides = tuple(int(st) for st in obj.stride())
        except (AttributeError, TypeError):
            shape = None
        if shape is not None and all(st >= 0 for st in strides):
            hi = lo + (1 + sum((n - 1) * st for n, st in zip(shape, strides))
                       if all(shape) else 0)
            if hi > flat.shape[0]:
                shape, strides, hi = None, None, flat.shape[0]
        else:
            shape, strides = None, None
        what = (f"{type(obj).__name__} of {element_ty} at data_ptr() 0x{address:x}, over "
                f"{describe(holder)}")
        buf = Buffer(len(self.buffers), name, flat, element_ty, what, view_lo=lo, view_hi=hi,
                     shape=shape, strides=strides)
        buf.base = (buf.index + 1) << _REGION_SHIFT
        self.buffers.append(buf)
        return buf

    def pointers_from_integers(self, addresses, element_ty):
        """Virtual addresses (and origin) for integer byte `addresses` used as pointers to
        `element_ty` (`int_to_ptr`). Memory nobody knows gives pointers that fail when used."""
        addresses = np.asarray(addresses, dtype=np.int64)
        out = np.full(addresses.shape, _UNKNOWN, dtype=np.int64) + addresses
        todo = np.ones(addresses.shape, bool)
        origins = set()
        item = element_ty.itemsize
        while todo.any():
            address = int(addresses[todo].flat[0])
            buf = self._buffer_holding(address, element_ty)
            if buf is None:
                todo &= addresses != address
                origins.add(None)  # lanes in memory nobody knows
                continue
            begin = buf.address
            lanes = todo & (addresses >= begin) & (addresses < begin + buf.nbytes)
            if not lanes.any():  # memory too small for one element of this type
                todo &= addresses != address
                origins.add(None)
                continue
            offsets = addresses[lanes] - begin
            if np.any(offsets % item):
                bad = int(addresses[lanes][offsets % item != 0][0])
                raise OutOfBoundsError(
                    f"pointer to {element_ty} made from the integer 0x{bad:x}, which is not a "
                    f"multiple of {item} bytes from the start of `{buf.name}` "
                    f"({buf.description}): a misaligned address")
            out[lanes] = buf.base + offsets // item
            todo &= ~lanes
            origins.add(buf.index)
        origin = origins.pop() if len(origins) == 1 else None
        return out, origin

    def _buffer_holding(self, address, element_ty):
        """The launch's buffer of type `element_ty` holding byte `address`; a new one over the
        host memory holding it if need be; None if no known memory holds it."""
        for buf in self.buffers:
            if buf.dtype == element_ty and buf.address <= address < buf.address + buf.nbytes:
                return buf
        # an argument's own memory (its whole storage), seen as another type: no need to look
        # for the host object (a scan of the garbage collector, slow in a large process)
        arg = next((b for b in self.buffers if b.address <= address < b.address + b.nbytes),
                   None)
        if arg is not None:
            start, raw, what = arg.address, arg.flat.view(np.uint8), f"argument `{arg.name}`"
        else:
            found = host_owner(address, scan=not self.scanned) if address >= 4096 else None
            self.scanned |= found is None
            if found is None:
                return None
            start, obj = found
            raw, what = host_bytes(obj), describe(obj)
        raw = raw[: raw.size - raw.size % element_ty.itemsize]
        for buf in self.buffers:  # already made, seen from another launch argument's address
            if buf.dtype == element_ty and buf.address == start and buf.nbytes == raw.size:
                return buf
        flat = raw.view(element_ty.np)
        name = f"[0x{start:x}]"
        buf = Buffer(len(self.buffers), name, flat, element_ty,
                     f"{what}, reached through an integer address")
        buf.base = (buf.index + 1) << _REGION_SHIFT
        self.buffers.append(buf)
        for listener in self.on_new_buffer:
            listener(buf)
        return buf

    def integers_from_pointers(self, pointers):
        """The real byte addresses of virtual `pointers` (`ptr_to_int`)."""
        pointers = np.asarray(pointers, dtype=np.int64)
        out = pointers - _UNKNOWN  # memory no buffer holds: the integer it was made from
        owners = self.owner(pointers)
        for i in np.unique(owners):
            if 0 <= i < len(self.buffers):
                buf = self.buffers[i]
                lanes = owners == i
                out[lanes] = buf.address + (pointers[lanes] - buf.base) * buf.dtype.itemsize
        return out

    def owner(self, addresses):
        """The buffer index each address falls in (for pointers of mixed origin)."""
        return (addresses >> _REGION_SHIFT) - 1

    def before_write(self, buf, idx):
        """Called before every store or atomic, with the element offsets it will write."""
        if (buf.snapshot is None or (buf.outside_view and buf.snapshot.shape[0] < buf.size)) \
                and not buf.too_big_to_restore:
            if not buf.flat.flags.writeable:
                raise LaunchError(f"argument `{buf.name}` ({buf.description}) is read-only and "
                                  "cannot be stored to")
            if buf.snapshot is None:
                self.snapshotted.append(buf)
            buf.take_snapshot(self.rollback_limit)
        if self.journaling:
            old = buf.flat[idx]
            self.journal.append((buf, idx, old.copy() if isinstance(idx, slice) else old))

    def mark(self):
        return len(self.journal)

    def undo(self, mark):
        while len(self.journal) > mark:
            buf, idx, old = self.journal.pop()
            buf.flat[idx] = old

    def commit(self, mark):
        del self.journal[mark:]

    def undo_launch(self):
        """Undo the whole launch; returns the names of buffers too big to have been copied."""
        self.undo(0)
        for buf in reversed(self.snapshotted):  # buffers may share storage: the oldest last
            if buf.snapshot is not None:
                buf.restore()
                buf.snapshot = None
        self.snapshotted.clear()
        return [buf.name for buf in self.buffers if buf.too_big_to_restore]

    def commit_launch(self):
        self.journal.clear()
        for buf in self.buffers:
            buf.snapshot = None
        self.snapshotted.clear()

    def resolve(self, ptr, active, op, check_bounds=True):
        """Map the active lanes of a pointer tensor to (buffer, lanes, offsets).

        `ptr.data` is the (lanes, *shape) array of addresses, `active` a bool array of the same
        shape or None (all active). Returns a list of (buffer, lane_mask, offsets): one entry,
        unless the pointer mixes buffers. `lane_mask` is None when every lane is active, and
        `offsets` (in elements, in lane order) is a slice when they are consecutive. With
        `check_bounds=False`, out-of-range lanes are dropped (read as 0 / not written).
        """
        if active is not None and all_true(active):
            active = None  # an all-true mask is no mask: no boolean gathers
        parts = ptr.parts() if hasattr(ptr, "parts") else None
        if parts is not None and isinstance(ptr.origin, int):
            found = self._resolve_parts(ptr, *parts) if active is None else \
                self._resolve_rows(ptr, active, *parts)
            if found is not None:
                return [found]
        addrs = ptr.data
        if isinstance(ptr.origin, int):
            groups = [(self.buffers[ptr.origin], active)]
        else:
            owners = self.owner(addrs)
            live = np.ones(addrs.shape, bool) if active is None else active
            groups = []
            for i in np.unique(owners[live]):
                if 0 <= i < len(self.buffers):
                    groups.append((self.buffers[i], live & (owners == i)))
                else:
                    raise oob_error(None, addrs[live & (owners == i)], op)
        elem = ptr.dtype.element_ty.itemsize
        out = []
        for buf, lanes in groups:
            if elem != buf.dtype.itemsize:
                raise OutOfBoundsError(
                    f"{op}: pointer to {ptr.dtype.element_ty} used on argument `{buf.name}` of "
                    f"type {buf.dtype}; minitriton only supports pointers of the argument's type")
            a = addrs.reshape(-1) if lanes is None else addrs[lanes]
            if not a.size:
                out.append((buf, lanes, a - buf.base))
                continue
            consecutive = _consecutive(a)  # then its ends are its bounds: no min, no max
            low, high = ((int(a[0]), int(a[-1])) if consecutive else
                         (int(a.min()), int(a.max())))
            low, high = low - buf.base, high - buf.base
            if low < buf.view_lo or high >= buf.view_hi:
                lanes, idx = self._outside_view(buf, addrs, lanes, a - buf.base, op,
                                                check_bounds, low < 0 or high >= buf.size)
                out.append((buf, lanes, _as_slice(idx)))
            elif consecutive:
                out.append((buf, lanes, slice(low, high + 1)))  # a view instead of a gather
            else:
                out.append((buf, lanes, a - buf.base))
        return out

    def _resolve_parts(self, ptr, base, offsets, full):
        """`resolve` of a lazy pointer (language/core.py) with every lane active, from its two
        parts, when they show the lanes inside the view: (buffer, None, offsets), the same as
        from the summed addresses. None where only those can tell (an error or a warning to
        give, an arrangement of the parts not handled here)."""
        buf = self.buffers[ptr.origin]
        n = math.prod(full)
        if not n or ptr.dtype.element_ty.itemsize != buf.dtype.itemsize or \
                offsets.shape[1:] != tuple(full[1:]):
            return None
        stats = ptr.stats
        if "bounds" not in stats:  # consecutive offsets' ends are their bounds: no min, no max
            flat = offsets.reshape(-1)
            stats["bounds"] = (int(flat[0]), int(flat[-1])) if \
                _ascending_once(offsets, stats) else (int(flat.min()), int(flat.max()))
        low, high = stats["bounds"]
        low, high = low + int(base.min()) - buf.base, high + int(base.max()) - buf.base
        if low < buf.view_lo or high >= buf.view_hi:
            return None  # bounds of the sum, not its own: the summed addresses decide
        if base.size == 1:  # one base: the block is the offsets'
            consecutive = offsets.shape[0] == full[0] and n > 16 and _ascending_once(offsets,
                                                                                     stats)
        elif base.shape[0] == full[0] and offsets.shape[0] == 1:  # a base per program
            block = n // full[0]
            consecutive = n > 16 and _ascending_once(offsets, stats) and \
                bool(np.all(np.diff(base.reshape(-1)) == block))
        else:
            return None
        if consecutive:  # ascending: its ends are its bounds
            return buf, None, slice(low, high + 1)
        if base.size == 1 and stats["bounds"][0] >= 0 and offsets.shape == tuple(full) and \
                offsets.flags.c_contiguous:  # one base, offsets from it: no sum made to read
            return buf, None, Shifted(int(base.reshape(-1)[0]) - buf.base, offsets.reshape(-1))
        idx = np.add(base - buf.base, offsets)
        if idx.shape != tuple(full):
            idx = np.broadcast_to(idx, full)
        return buf, None, idx.reshape(-1)

    def _resolve_rows(self, ptr, active, base, offsets, full):
        """`resolve` of a masked access through a lazy pointer of one base per program and
        offsets shared by all, whose mask is the same in every program (`active` broadcast
        along the programs: `cols < n`) and picks consecutive offsets, at evenly spaced bases
        inside the view: (buffer, active, Rows), a strided view of memory instead of a
        boolean gather of summed addresses. None where another arrangement or a lane outside
        the view needs the general path."""
        buf, programs = self.buffers[ptr.origin], full[0]
        if active.ndim < 2 or active.strides[0] != 0 or programs < 2 or \
                offsets.shape[0] != 1 or base.size != programs or \
                ptr.dtype.element_ty.itemsize != buf.dtype.itemsize:
            return None
        row = active[0]
        off = np.broadcast_to(offsets[0], row.shape)[row]  # the active offsets, in lane order
        if off.size < 2 or not _ascending(off):
            return None
        starts = base.reshape(-1) - buf.base + int(off[0])
        step = int(starts[1] - starts[0])
        if step < 0 or not np.all(starts[1:] - starts[:-1] == step) or \
                int(starts[0]) < buf.view_lo or int(starts[-1]) + off.size > buf.view_hi:
            return None
        return buf, active, Rows(int(starts[0]), step, programs, off.size, row)

    def _outside_view(self, buf, addrs, lanes, idx, op, check_bounds, outside_storage):
        """Lanes outside the view: an error outside the storage; inside it, the listener's
        (a warning or an error). Returns the (lanes, idx) to access."""
        if outside_storage:
            bad = (idx < 0) | (idx >= buf.size)
            if not check_bounds:
                lanes = np.ones(addrs.shape, bool) if lanes is None else lanes.copy()
                lanes[lanes] = ~bad
                idx = idx[~bad]
            else:
                # report the first failing program alone, so that both executors say the same
                rows = np.nonzero(np.ones(addrs.shape, bool) if lanes is None else lanes)[0]
                row = rows[np.argmax(bad)]
                bad &= rows == row
                err = oob_error(buf, idx[bad], op, lanes_total=int(bad.sum()))
                err.failing_row = int(row)
                raise err
        if not idx.size:
            return lanes, idx
        buf.outside_view = True
        if check_bounds and self.on_outside_view is not None:
            bad = (idx < buf.view_lo) | (idx >= buf.view_hi)
            if bad.any():
                rows = np.nonzero(np.ones(addrs.shape, bool) if lanes is None else lanes)[0]
                row = rows[np.argmax(bad)]
                bad &= rows == row
                self.on_outside_view(buf, idx[bad], op, int(bad.sum()), int(row))
        return lanes, idx


def _consecutive(a):
    """Whether the addresses `a` (1-D, not empty) are consecutive and ascending, as _as_slice
    decides: the ends first, then one comparison pass (strictly ascending integers whose ends
    are n - 1 apart are consecutive)."""
    n = a.size
    return n > 16 and _spot_check(a) and bool(np.all(a[1:] > a[:-1]))


def _spot_check(a):
    """Whether the 1-D integers `a` may be consecutive and ascending: a[k] - a[0] == k at the
    end and at a few points between (O(log n) scalar reads), so that a block of rows, whose
    ends may still be n - 1 apart, fails before the full comparison pass."""
    n, first = a.size, int(a[0])
    k = n - 1
    while k:
        if int(a[k]) - first != k:
            return False
        k >>= 2
    return True


def _ascending(a):
    """Whether the 1-D integers `a` are consecutive and ascending (`_consecutive` without its
    minimum length)."""
    return a.size < 2 or (_spot_check(a) and bool(np.all(a[1:] > a[:-1])))


def _ascending_once(offsets, stats):
    """_ascending of the flattened `offsets`, remembered in `stats`."""
    found = stats.get("ascending")
    if found is None:
        found = stats["ascending"] = _ascending(offsets.reshape(-1))
    return found


def _as_slice(idx):
    """Consecutive offsets as a slice (a view instead of a gather), else the array."""
    n = idx.size
    if n > 16 and _spot_check(idx) and np.all(idx[1:] > idx[:-1]):
        return slice(int(idx[0]), int(idx[0]) + n)
    return idx


def offsets_array(idx):
    return np.arange(idx.start, idx.stop) if isinstance(idx, slice) else idx


def count(idx):
    return idx.stop - idx.start if isinstance(idx, slice) else idx.size
