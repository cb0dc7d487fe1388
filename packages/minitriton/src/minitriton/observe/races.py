"""The race sanitizer (`Settings(races=True)`): one program writes what another program of the
same launch reads or writes, without atomics.

Shadow arrays, one entry per element of a watched buffer, say which program last wrote it,
which program(s) read it, and where (kernel line). Accesses made while both programs hold a
common lock (an `atomic_cas` that took it, until the `atomic_xchg` that gives it back) do not
race: Eraser's locksets, so that a correct spin lock is clean.

Nor do accesses ordered by an atomic's release and acquire (a counter that a row's programs
meet at, a flag set after a partial result is stored): a vector clock per program, as in
FastTrack. A scalar atomic with release semantics (Triton's default, acq_rel, or "release";
a compare-and-swap only where it swaps) hands what its program has done so far to the
element's clock; one with acquire semantics (acq_rel, "acquire") takes that clock into its
program's. A write is then no race with a later access of a program that acquired it. Block
atomics (a histogram's) are not followed as synchronisation.
"""
from __future__ import annotations

import numpy as np

from ..context import Observer
from ..errors import RaceError
from ..source import kernel_location
from .journal import Journal

MANY = -2  # reader entry: read by more than one program
NOBODY = -1


def _join(a, b):
    """The vector clock that knows what either of two clocks knows (a new dict)."""
    return a | {q: max(e, a.get(q, -1)) for q, e in b.items()}


class Races(Journal, Observer):
    setting = "races"
    per_program = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.shadow: dict = {}
        self.held: dict = {}  # program -> frozenset of lock addresses it holds
        self.locksets = [frozenset()]  # interned: shadow arrays store indices into this list
        self.clocks: dict = {}  # program -> {program: epoch} it has acquired (its own: now)
        self.released: dict = {}  # (buffer, element) -> the clock its releases handed over

    def _shadow(self, buf):
        s = self.shadow.get(buf.index)
        if s is None:
            n = buf.size
            s = self.shadow[buf.index] = {
                "writer": np.full(n, NOBODY, np.int64), "reader": np.full(n, NOBODY, np.int64),
                "wloc": np.zeros(n, np.int32), "rloc": np.zeros(n, np.int32), "locs": [""],
                "wls": np.zeros(n, np.int32), "rls": np.zeros(n, np.int32),
                "wep": np.zeros(n, np.int64), "rep": np.zeros(n, np.int64)}
        return s

    # ----- release and acquire
    def _epochs(self, progs):
        """Each lane's program's epoch (how many releases it made)."""
        if not self.clocks:
            return np.zeros(progs.size, np.int64)
        return np.array([self.clocks.get(int(p), {}).get(int(p), 0) for p in progs], np.int64)

    def _ordered(self, bad, progs, others, epochs):
        """`bad` less the lanes whose other program's access (at `epochs`) this lane's program
        acquired (happens-before)."""
        if not self.clocks:
            return bad
        for i in np.nonzero(bad)[0]:
            if self.clocks.get(int(progs[i]), {}).get(int(others[i]), -1) >= epochs[i]:
                bad[i] = False
        return bad

    def _synchronise(self, access, op, old, cmp, sem):
        """The release and acquire of a scalar atomic, lane by lane in the order it ran."""
        acquire, release = sem in (None, "acquire", "acq_rel"), sem in (None, "release",
                                                                         "acq_rel")
        if len(access.shape) != 1 or not (acquire or release):
            return
        progs, _ = self.ctx.programs(access.lane_mask())
        key = access.buf.index
        for lane, (p, i) in enumerate(zip(progs.tolist(), access.offsets().ravel().tolist())):
            mine = self.clocks.get(p, {})
            if acquire and (key, i) in self.released:
                mine = _join(mine, self.released[(key, i)])
            if release and (op != "cas" or old[lane] == cmp[lane]):
                now = mine.get(p, 0)
                self.set(self.released, (key, i),
                         _join(self.released.get((key, i), {}), mine | {p: now}))
                mine = mine | {p: now + 1}
            if mine is not self.clocks.get(p):
                self.set(self.clocks, p, mine)

    # ----- locks
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

    def after_atomic(self, access, op, old, cmp, val, sem=None):
        """A successful atomic_cas that changes the value acquires a lock at that address;
        atomic_xchg on a held lock's address releases it. Then the atomic's release and
        acquire (_synchronise)."""
        self._synchronise(access, op, old, cmp, sem)
        if op not in ("cas", "xchg"):
            return
        progs, _ = self.ctx.programs(access.lane_mask())
        key = access.buf.index
        if op == "cas":
            for p, i, o, c, v in zip(progs, access.offsets(), old, cmp, val):
                if o == c and v != c:
                    self.set(self.held, int(p), self.held.get(int(p), frozenset()) | {(key, int(i))})
            return
        for p, i in zip(progs, access.offsets().ravel()):
            held = self.held.get(int(p), frozenset())
            if (key, int(i)) in held:
                self.set(self.held, int(p), held - {(key, int(i))})

    # ----- reports
    def _loc_id(self, s):
        loc = kernel_location(3)
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
        pid_of = self.ctx.pid_of
        i = int(np.argmax(mask))
        offsets = np.unique(idx[mask]) - buf.view_lo  # counted from the view, as the kernel
        shown = ", ".join(str(int(o)) for o in offsets[:8])
        if other[i] == MANY:
            before = f"other programs {what_before} them (last at {s['locs'][loc_before[i]]})"
        else:
            before = f"program {pid_of(other[i])} {what_before} them at {s['locs'][loc_before[i]]}"
        err = RaceError(
            f"data race on argument `{buf.name}` ({buf.description}) at element offsets "
            f"[{shown}{', ...' if offsets.size > 8 else ''}]: {before}; program "
            f"{pid_of(progs[i])} {what_now} them at {s['locs'][loc]}.\n"
            "hint: on a GPU the programs of a launch run concurrently, so this result is "
            "undefined. Give each program its own output (a partial buffer reduced afterwards) "
            "or use tl.atomic_add.")
        err.failing_pid = pid_of(progs[i])
        raise err

    def _begin(self, access):
        """Shadow, offsets, programs, kernel line and locksets of one access."""
        s = self._shadow(access.buf)
        progs, _ = self.ctx.programs(access.lane_mask())
        return s, access.offsets(), progs, self._loc_id(s), self._lockset_ids(progs)

    def _check_writer(self, buf, s, idx, progs, ls, loc, what_now):
        """Race if another program wrote these elements, holding no lock in common with us."""
        w = s["writer"][idx]
        bad = (w >= 0) & (w != progs)
        if bad.any():
            bad &= self._unprotected(s["wls"][idx], ls)
            bad = self._ordered(bad, progs, w, s["wep"][idx])
            if bad.any():
                self._race(buf, s, idx, progs, bad, w, "wrote", s["wloc"][idx], what_now, loc)

    # ----- hooks
    def on_load(self, access):
        buf = access.buf
        s, idx, progs, loc, ls = self._begin(access)
        self._check_writer(buf, s, idx, progs, ls, loc, "read")
        r = s["reader"][idx]
        conflict, _ = self._same_op(idx, progs)
        self.set(s["reader"], idx, np.where(((r == NOBODY) | (r == progs)) & ~conflict, progs,
                                            MANY))
        self.set(s["rloc"], idx, loc)
        self.set(s["rls"], idx, ls)
        self.set(s["rep"], idx, self._epochs(progs))

    def on_store(self, access):
        buf = access.buf
        s, idx, progs, loc, ls = self._begin(access)
        self._check_writer(buf, s, idx, progs, ls, loc, "wrote")
        conflict, partner = self._same_op(idx, progs)
        if conflict.any():
            here = np.full(idx.size, loc)
            self._race(buf, s, idx, progs, conflict, partner, "wrote", here, "wrote", loc)
        r = s["reader"][idx]
        bad = (r == MANY) | ((r >= 0) & (r != progs))
        if bad.any():
            bad &= self._unprotected(s["rls"][idx], ls)
            one = r >= 0  # a single reader's epoch is known; several readers' are not kept
            bad[one] = self._ordered(bad[one], progs[one], r[one], s["rep"][idx][one])
            if bad.any():
                self._race(buf, s, idx, progs, bad, r, "read", s["rloc"][idx], "wrote", loc)
        self.set(s["writer"], idx, progs)
        self.set(s["wloc"], idx, loc)
        self.set(s["wls"], idx, ls)
        self.set(s["wep"], idx, self._epochs(progs))
