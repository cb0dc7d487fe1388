"""The order check (`Settings(order=True)`): run the launch a second time, sequentially in a
shuffled order (seeded by `Settings.seed`), and compare every output. On a GPU the programs of
a launch run in any order, so a result that depends on it is a bug. The shuffle never ends
with the program that runs last in the launch (`shuffled_order`): where several programs write
the same element without atomics, the last one's value stays, and a shuffle that ends with the
same program would find nothing wrong.

When an output differs, a third run (the same shuffled order, one program per `rerun` call,
with the memory's write journal on) finds the programs that wrote the first differing element:
the re-runs have no observer watching, so the writers come from the journal, and only on the
error path."""
from __future__ import annotations

import numpy as np

from ..context import Observer
from ..errors import OrderError

_SHOWN = 8  # writer programs named in the message


def _differing(expected, actual):
    """Element offsets, ascending, where two versions of an output disagree."""
    if expected.dtype.kind in "fV":
        e, a = expected.astype(np.float64), actual.astype(np.float64)
        finite = np.abs(e[np.isfinite(e)])  # an inf in the output must not make atol inf
        scale = finite.max() if finite.size else 1.0
        same = np.isclose(a, e, rtol=1e-5, atol=1e-6 * scale, equal_nan=True)
    else:
        same = expected == actual
    return np.nonzero(~same)[0]


def _writes(idx, i):
    if idx is None:
        return True
    if isinstance(idx, slice):
        return idx.start <= i < idx.stop
    return bool(np.any(np.asarray(idx) == i))


def shuffled_order(n, seed):
    """A permutation of range(n), seeded, whose last program is not n - 1 (the last one both
    executors run) when there are two programs or more."""
    order = np.random.default_rng(seed).permutation(n)
    if n > 1 and order[-1] == n - 1:
        swap = int(np.random.default_rng(seed).integers(n - 1))
        order[-1], order[swap] = order[swap], order[-1]
    return order


class Order(Observer):
    setting = "order"
    needs_snapshots = True  # the re-run starts from the memory the launch started from

    def finish(self, rerun):
        ctx = self.ctx
        written = [b for b in ctx.memory.buffers if b.snapshot is not None]
        results = {b.name: b.written_region().copy() for b in written}
        for b in written:
            b.restore()
        ids = rerun.program_ids
        shuffled = ids[shuffled_order(len(ids), ctx.settings.seed)]
        rerun(shuffled)
        for b in written:
            now = b.written_region()
            bad = _differing(results[b.name], now)
            if bad.size:
                shift = b.snapshot_lo - b.view_lo  # offsets as the kernel counts them
                shown = ", ".join(f"{int(i) + shift}: {results[b.name][i]} vs {now[i]}"
                                  for i in bad[:4])
                first = int(bad[0]) + b.snapshot_lo
                writers = self._writers(rerun, shuffled, written, b, first)
                for w in written:
                    w.written_region()[...] = results[w.name]
                ctx.pids = ids  # the error is the whole launch's, not the last re-run program's
                raise OrderError(self._message(b, bad.size, shown, first - b.view_lo,
                                               writers))
        for b in written:
            b.written_region()[...] = results[b.name]

    def _writers(self, rerun, shuffled, written, buf, i):
        """The programs (in program-id order) that write element `i` of `buf` when the launch
        runs in the `shuffled` order: re-run one program at a time, reading the write journal."""
        memory = self.ctx.memory
        for b in written:
            b.restore()
        journaling, start = memory.journaling, memory.mark()
        memory.journaling = True
        found = []
        try:
            for row in range(len(shuffled)):
                mark = memory.mark()
                rerun(shuffled[row:row + 1])
                if any(b is buf and _writes(idx, i) for b, idx, _ in memory.journal[mark:]):
                    found.append(tuple(int(v) for v in shuffled[row]))
                memory.commit(mark)
        finally:
            memory.commit(start)
            memory.journaling = journaling
        return sorted(found, key=lambda pid: (pid[2], pid[1], pid[0]))

    def _message(self, buf, n_bad, shown, first, writers):
        settings = self.ctx.settings
        ran = ("lockstep: programs together" if settings.executor == "lockstep"
               else "sequential, program-id order")
        if writers:
            names = ", ".join(str(w) for w in writers[:_SHOWN])
            more = f", ... ({len(writers)} programs)" if len(writers) > _SHOWN else ""
            by = f"written by program(s) {names}{more}"
        else:
            by = "written by no program of the shuffled re-run"
        if len(writers) > 1:
            hint = (f"{len(writers)} programs write element {first}: without atomics the result "
                    "depends on which runs last and on updates lost when they run together; use "
                    "an atomic (tl.atomic_add) or give each program its own elements")
        else:
            hint = ("a program must not read what another program of the same launch writes "
                    "(use a second launch, or atomics)")
        return (
            f"the result depends on the order in which programs run: argument `{buf.name}` "
            f"differs between the launch as it ran ({ran}) and a re-run sequential in a "
            f"shuffled order (seed {settings.seed}), at {n_bad} element(s) "
            f"[{shown}{', ...' if n_bad > 4 else ''}] (as it ran vs shuffled); the first, "
            f"element {first}, is {by}.\nhint: programs of one launch run in any order on a "
            f"GPU, and at the same time; {hint}")
