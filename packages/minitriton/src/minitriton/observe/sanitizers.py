"""Sanitizers: races between programs, reads of never-written (poisoned) memory.

They watch the loads and stores of a launch through shadow arrays, one entry per element of a
watched buffer: which program last wrote it, which program(s) read it, and where (kernel line).
They never change what a correct kernel computes. The `order` check lives in the launcher
(runtime/launch.py: it re-runs the launch) and shares `compare_outputs` from here.
"""
from __future__ import annotations

import sys

import numpy as np

from ..errors import LaunchError, RaceError, UninitializedReadError
from ..runtime.jit import KERNEL_CODES

MANY = -2  # reader entry: read by more than one program
NOBODY = -1


def _kernel_location():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code in KERNEL_CODES:
            import linecache
            src = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            return f"{frame.f_code.co_filename}:{frame.f_lineno}: {src}"
        frame = frame.f_back
    return "<unknown line>"


def poison_value(dtype):
    if dtype.kind in "fV" and dtype.kind != "b":
        try:
            return np.array(np.nan, dtype=dtype)
        except (ValueError, TypeError):
            pass
    if dtype == np.bool_:
        return np.array(True)
    return np.array(np.iinfo(dtype).min, dtype=dtype)


def compare_outputs(buf, expected, actual):
    """'' if two versions of an output agree (floats to a few ulps: atomics reorder sums)."""
    if expected.dtype.kind in "fV":
        e, a = expected.astype(np.float64), actual.astype(np.float64)
        scale = np.nanmax(np.abs(e)) if e.size and np.isfinite(e).any() else 1.0
        same = np.isclose(a, e, rtol=1e-5, atol=1e-6 * scale, equal_nan=True)
    else:
        same = expected == actual
    if same.all():
        return ""
    bad = np.nonzero(~same)[0]
    shown = ", ".join(f"{int(i)}: {expected[i]} vs {actual[i]}" for i in bad[:4])
    return f"at {bad.size} element(s) [{shown}{', ...' if bad.size > 4 else ''}]"


class Sanitizer:
    def __init__(self, ctx, memory, settings):
        self.ctx = ctx
        self.races = settings.races
        self.memory = memory
        self.journal: list = []
        self.shadow: dict = {}
        self.poisoned = {}
        self.held: dict = {}  # program -> frozenset of lock addresses it holds
        self.locksets = [frozenset()]  # interned: shadow arrays store indices into this list
        names = {b.name: b for b in memory.buffers}
        for name in settings.uninitialized:
            if name not in names:
                raise LaunchError(f"Settings.uninitialized names `{name}`, which is not a tensor "
                                  f"argument of kernel `{ctx.kernel_name}` "
                                  f"(tensor arguments: {', '.join(names) or 'none'})")
            buf = names[name]
            memory.before_write(buf, None)
            buf.flat[...] = poison_value(buf.flat.dtype)
            self.poisoned[buf.index] = np.zeros(buf.size, dtype=bool)

    # ----- undo support (lockstep re-runs)
    def mark(self):
        return len(self.journal)

    def undo(self, mark):
        while len(self.journal) > mark:
            target, key, old = self.journal.pop()
            target[key] = old

    def forget(self, mark):
        del self.journal[mark:]

    def _set(self, array, idx, values):
        if self.memory.journaling:
            self.journal.append((array, idx, array[idx]))
        array[idx] = values

    # ----- helpers
    def _programs(self, lanes):
        rows = np.nonzero(lanes)[0]
        pids = self.ctx.pids[rows].astype(np.int64)
        gx, gy, _ = self.ctx.grid
        return pids[:, 0] + gx * (pids[:, 1] + gy * pids[:, 2]), rows

    def _pid(self, linear):
        gx, gy, _ = self.ctx.grid
        linear = int(linear)
        return (linear % gx, (linear // gx) % gy, linear // (gx * gy))

    def _shadow(self, buf):
        s = self.shadow.get(buf.index)
        if s is None:
            n = buf.size
            s = self.shadow[buf.index] = {
                "writer": np.full(n, NOBODY, np.int64), "reader": np.full(n, NOBODY, np.int64),
                "wloc": np.zeros(n, np.int32), "rloc": np.zeros(n, np.int32), "locs": [""],
                "wls": np.zeros(n, np.int32), "rls": np.zeros(n, np.int32)}
        return s

    # ----- locks: accesses made while holding a common lock do not race (Eraser's locksets)
    def _lockset_ids(self, progs):
        ids = np.zeros(progs.size, np.int32)
        for p in np.unique(progs):
            held = self.held.get(int(p), frozenset())
            if held:
                if held not in self.locksets:
                    self.locksets.append(held)
                ids[progs == p] = self.locksets.index(held)
        return ids

    def _unprotected(self, ls_a, ls_b):
        """Lanes whose two accesses share no lock."""
        out = np.ones(ls_a.size, bool)
        both = (ls_a > 0) & (ls_b > 0)
        for i in np.nonzero(both)[0]:
            out[i] = not (self.locksets[ls_a[i]] & self.locksets[ls_b[i]])
        return out

    def _set_held(self, prog, locks):
        if self.memory.journaling:
            self.journal.append((self.held, prog, self.held.get(prog, frozenset())))
        self.held[prog] = locks

    def on_cas(self, buf, lanes, idx, old, cmp, val):
        """A successful atomic_cas that changes the value acquires a lock at that address."""
        if not self.races:
            return
        progs, _ = self._programs(lanes)
        for p, i, o, c, v in zip(progs, idx, old, cmp, val):
            if o == c and v != c:
                self._set_held(int(p), self.held.get(int(p), frozenset()) | {(buf.index, int(i))})

    def on_xchg(self, buf, lanes, idx):
        """atomic_xchg on a held lock's address releases it."""
        if not self.races:
            return
        progs, _ = self._programs(lanes)
        for p, i in zip(progs, idx):
            held = self.held.get(int(p), frozenset())
            if (buf.index, int(i)) in held:
                self._set_held(int(p), held - {(buf.index, int(i))})

    def _loc_id(self, s):
        loc = _kernel_location()
        locs = s["locs"]
        if loc not in locs:
            locs.append(loc)
        return locs.index(loc)

    @staticmethod
    def _same_op(idx, progs):
        """Lanes of one operation where another program hits the same element, and that program."""
        if idx.size < 2:
            return np.zeros(idx.size, bool), progs
        lo = np.full(int(idx.max()) + 1, np.iinfo(np.int64).max)
        hi = np.full(int(idx.max()) + 1, -1)
        np.minimum.at(lo, idx, progs)
        np.maximum.at(hi, idx, progs)
        lo, hi = lo[idx], hi[idx]
        return lo != hi, np.where(lo != progs, lo, hi)

    def _race(self, buf, s, idx, progs, mask, other, what_before, loc_before, what_now, loc):
        i = int(np.argmax(mask))
        offsets = np.unique(idx[mask])
        shown = ", ".join(str(int(o)) for o in offsets[:8])
        if other[i] == MANY:
            before = f"other programs {what_before} them (last at {s['locs'][loc_before[i]]})"
        else:
            before = f"program {self._pid(other[i])} {what_before} them at {s['locs'][loc_before[i]]}"
        err = RaceError(
            f"data race on argument `{buf.name}` ({buf.description}) at element offsets "
            f"[{shown}{', ...' if offsets.size > 8 else ''}]: {before}; program "
            f"{self._pid(progs[i])} {what_now} them at {s['locs'][loc]}.\n"
            "hint: on a GPU the programs of a launch run concurrently, so this result is "
            "undefined. Give each program its own output (a partial buffer reduced afterwards) "
            "or use tl.atomic_add.")
        err.failing_pid = self._pid(progs[i])
        raise err

    def _begin(self, buf, lanes):
        """Shadow, programs, kernel line and locksets of one access."""
        s = self._shadow(buf)
        progs, _ = self._programs(lanes)
        return s, progs, self._loc_id(s), self._lockset_ids(progs)

    def _check_writer(self, buf, s, idx, progs, ls, loc, what_now):
        """Race if another program wrote these elements, holding no lock in common with us."""
        w = s["writer"][idx]
        bad = (w >= 0) & (w != progs)
        if bad.any():
            bad &= self._unprotected(s["wls"][idx], ls)
            if bad.any():
                self._race(buf, s, idx, progs, bad, w, "wrote", s["wloc"][idx], what_now, loc)

    # ----- hooks called by tl.load / tl.store
    def on_read(self, buf, lanes, idx):
        written = self.poisoned.get(buf.index)
        if written is not None and not written[idx].all():
            bad = ~written[idx]
            progs, rows = self._programs(lanes)
            err = UninitializedReadError(
                f"load of argument `{buf.name}` reads {int(bad.sum())} element(s) that no "
                f"program has written (poisoned by Settings.uninitialized), at offsets "
                f"{[int(o) for o in idx[bad][:8]]}.\nhint: the kernel reads its output before "
                "writing it, or another program's part of it, or past what it writes")
            err.failing_row = int(rows[np.argmax(bad)])
            raise err
        if not self.races:
            return
        s, progs, loc, ls = self._begin(buf, lanes)
        self._check_writer(buf, s, idx, progs, ls, loc, "read")
        r = s["reader"][idx]
        conflict, _ = self._same_op(idx, progs)
        new = np.where(((r == NOBODY) | (r == progs)) & ~conflict, progs, MANY)
        self._set(s["reader"], idx, new)
        self._set(s["rloc"], idx, loc)
        self._set(s["rls"], idx, ls)

    def on_write(self, buf, lanes, idx):
        written = self.poisoned.get(buf.index)
        if written is not None:
            self._set(written, idx, True)
        if not self.races:
            return
        s, progs, loc, ls = self._begin(buf, lanes)
        self._check_writer(buf, s, idx, progs, ls, loc, "wrote")
        conflict, partner = self._same_op(idx, progs)
        if conflict.any():
            here = np.full(idx.size, loc)
            self._race(buf, s, idx, progs, conflict, partner, "wrote", here, "wrote", loc)
        r = s["reader"][idx]
        bad = (r == MANY) | ((r >= 0) & (r != progs))
        if bad.any():
            bad &= self._unprotected(s["rls"][idx], ls)
            if bad.any():
                self._race(buf, s, idx, progs, bad, r, "read", s["rloc"][idx], "wrote", loc)
        self._set(s["writer"], idx, progs)
        self._set(s["wloc"], idx, loc)
        self._set(s["wls"], idx, ls)

    def on_atomic(self, buf, lanes, idx):
        written = self.poisoned.get(buf.index)
        if written is not None:
            self.on_read(buf, lanes, idx)
            self._set(written, idx, True)
