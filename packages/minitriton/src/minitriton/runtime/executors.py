"""The two executors: sequential (one program at a time) and lockstep (all programs at once).

Lockstep runs a chunk of programs through the kernel once, every value carrying a leading
program axis. When Python control flow needs a scalar that differs between the programs of the
chunk (`if`, `while`, a loop bound depending on `program_id` or on a loaded value, an atomic
steering a spin lock), the chunk's writes are undone and its programs are re-run in groups that
agree on that decision, lowest program ids first, recursively. For kernels whose programs do not
communicate through memory, the result equals the sequential one; racy kernels lose updates as
on a GPU.

Programs that wait for each other (a hand-off through a flag, a ticket lock: `context.Wait`)
need the others to run while they wait, as on a GPU where they run concurrently. The program
(or lockstep group) that first waits is undone, and it and the programs that follow run as
coroutines (`_Interleaved`: one thread each, one running at a time): a waiting program is
suspended and the scheduler runs another — one whose polled memory changed, else a program
not started yet, else, when every unfinished program waits, each waiter once more with the
patience to spin a while (a bounded retry loop ends). If none of them gets anywhere, every
unfinished program waits for another: a DeadlockError names each, the address and the value.
Once no program waits, the executor goes back to its own way of running the rest.
"""
from __future__ import annotations

import contextvars
import threading
from collections import deque

import numpy as np

from ..context import Divergence, Wait
from ..errors import DeadlockError

BYTES_PER_LANE = 8 * 32  # per element of the largest block: float64/int64, ~32 live temporaries
FIRST_CHUNK = 4  # programs run together before the block size is known
# lanes of the largest block run together at most, whatever the memory budget allows: a
# chunk's temporaries (a few MiB each) then stay in cache and off fresh pages; 2^19 lanes and
# more were slower on element-wise kernels, 2^17 paid Python's per-operation cost twice as
# often as 2^18 (softmax, row-sum, RMSNorm, matmul 512^3: 1.2-1.4x; benchmarks/sim_speed.py)
CHUNK_LANES = 1 << 18
# polls that see nothing change, shared by the waiters when all wait, before a deadlock is
# reported: a bounded retry loop of up to this many attempts still ends
SPIN_LIMIT = 1_000


def program_ids(grid, order=None):
    """All program ids (N, 3) of a grid, axis 0 fastest, or in the given permutation."""
    gx, gy, gz = grid
    z, y, x = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
    ids = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1).astype(np.int32)
    return ids if order is None else ids[order]


def _flush(ctx):
    """Print what the programs printed, program by program (as the sequential executor would)."""
    for _, line in sorted(ctx.output, key=lambda item: item[0]):
        print(line)
    ctx.output.clear()


class _Queue:
    """The programs of a launch not started yet, in order: groups put back first."""

    def __init__(self, ids):
        self.ids, self.start, self.groups = ids, 0, deque()

    def take(self, n):
        """The next group (one put back, else the next `n` program ids); None when done."""
        if self.groups:
            return self.groups.popleft()
        if self.start >= len(self.ids):
            return None
        group = self.ids[self.start:self.start + n]
        self.start += len(group)
        return group

    def put_back(self, groups):
        self.groups.extendleft(reversed(groups))

    def take_one(self):
        """The next single program, (1, 3), or None."""
        group = self.take(1)
        if group is not None and len(group) > 1:
            self.groups.appendleft(group[1:])
            group = group[:1]
        return group


def _attempt(ctx, fn, values, group, queue, keep_journal=False):
    """Run `group` together; on Divergence put it back split, on Wait run it interleaved; on
    an error of one program of several, run them again as the sequential executor would
    reach that error (`_up_to_failure`). What the programs printed is shown before an error
    leaves."""
    ctx.pids = group
    ctx.spins.clear()
    mark = ctx.mark()
    failed = None
    try:
        fn(*values)
    except Divergence as d:
        ctx.undo(mark)
        _, first, inverse = np.unique(d.decisions, return_index=True, return_inverse=True)
        queue.put_back([group[inverse == k] for k in np.argsort(first)])
        return
    except Wait:
        ctx.undo(mark)
        try:
            _Interleaved(ctx, fn, values, queue).run(group)
        except Exception:
            _flush(ctx)
            raise
    except Exception as e:
        row = _failing_row(e, group)
        if row is None:
            _flush(ctx)
            raise
        failed = e, row
    if failed is not None:  # out of the handler: the re-run's error is not raised "during" it
        ctx.undo(mark)
        _up_to_failure(ctx, fn, values, group, failed[1], failed[0])
    if not keep_journal:
        ctx.commit(mark)
    _flush(ctx)


def _failing_row(e, group):
    """The row of `group` whose program raised `e`, where it is one program's error among
    several programs run together (else None: one program ran, or the error is the group's,
    such as a race between them)."""
    row = getattr(e, "failing_row", None)
    if len(group) < 2 or getattr(e, "failing_pid", None) is not None or \
            not isinstance(row, (int, np.integer)) or not 0 <= row < len(group):
        return None
    return int(row)


def _up_to_failure(ctx, fn, values, group, row, error):
    """Run `group` again as the sequential executor reaches the error that program `row` raised
    when they ran together: the programs before it to their end (together; one of them may fail
    first, with its own error), then that program alone, which prints what it printed and
    raises. The error, the prints and the observers' records (the trace) are then the
    sequential executor's. Should that program pass alone (its error came from running beside
    the others: a lost update), the first error is raised."""
    before = _Queue(group[:row])
    while (part := before.take(row)) is not None:
        _attempt(ctx, fn, values, part, before)
    _attempt(ctx, fn, values, group[row:row + 1], _Queue(group[:0]))
    ctx.pids = group  # where the first error happened
    raise error


def run_sequential(ctx, fn, values, ids):
    memory = ctx.memory
    keep = memory.journaling  # a caller reading the journal (the order check) keeps it
    memory.journaling = True  # a program that waits is undone before it runs interleaved
    try:
        queue = _Queue(ids)
        while (group := queue.take_one()) is not None:
            _attempt(ctx, fn, values, group, queue, keep_journal=keep)
    finally:
        memory.journaling = keep


def run_lockstep(ctx, fn, values, ids, known_block=None):
    """`known_block`: the largest block of an earlier launch of the same kernel and constexprs,
    which sizes the first chunk (without it, FIRST_CHUNK programs run first to see it)."""
    ctx.memory.journaling = True
    # the first chunk sizes the next ones; it holds more than one program so that two
    # programs racing on the same memory lose updates together, as on a GPU
    queue = _Queue(ids)
    chunk = FIRST_CHUNK if known_block is None else max(FIRST_CHUNK, _chunk(ctx, known_block,
                                                                            len(ids)))
    while (group := queue.take(chunk)) is not None:
        _attempt(ctx, fn, values, group, queue)
        chunk = _chunk(ctx, ctx.max_block, len(ids))


def _chunk(ctx, block, programs):
    """Programs per lockstep chunk when the largest block has `block` elements."""
    block = max(block, 1)
    return int(max(1, min(programs, ctx.settings.chunk_bytes // (block * BYTES_PER_LANE),
                          CHUNK_LANES // block)))


class _Cancelled(BaseException):
    """Unwinds a suspended program when the launch ends with an error."""


class _Program:
    """One program run as a coroutine: a thread that runs only while the scheduler waits."""

    def __init__(self, sched, pids):
        self.pids = pids
        self.wait = None  # the Wait it is suspended at
        self.done, self.error, self.cancelled, self.stuck = False, None, False, False
        self.go = threading.Semaphore(0)
        run = contextvars.copy_context().run  # the launch context and settings, in the thread
        self.thread = threading.Thread(target=run, args=(self._main, sched), daemon=True,
                                       name=f"minitriton program {tuple(pids[0].tolist())}")
        self.started = False

    def _main(self, sched):
        self.go.acquire()
        try:
            sched.fn(*sched.values)
        except _Cancelled:
            pass
        except BaseException as e:  # noqa: B036 - handed to the launching thread
            self.error = e
        finally:
            self.done = True
            sched.back.release()


class _Interleaved:
    """Programs run as coroutines, one at a time, switching where one waits (see the module)."""

    def __init__(self, ctx, fn, values, queue):
        self.ctx, self.fn, self.values, self.queue = ctx, fn, values, queue
        self.back = threading.Semaphore(0)
        self.current = None
        self.waiting = []  # suspended programs, in the order they first waited
        self.finished = 0

    def run(self, group):
        ctx = self.ctx
        todo = deque(group[i:i + 1] for i in range(len(group)))
        ctx.waiter = self._suspend
        try:
            while True:
                prog = self._woken()
                forced = False
                if prog is None:
                    if todo or (self.waiting and self._more(todo)):
                        prog = _Program(self, todo.popleft())
                    elif not self.waiting:
                        return
                    else:
                        prog = next((p for p in self.waiting if not p.stuck), None)
                        if prog is None:
                            raise self._deadlock()
                        forced = True
                self._step(prog, forced)
        except BaseException:
            self._cancel()
            raise
        finally:
            ctx.waiter, ctx.patience = None, 1

    def _more(self, todo):
        """Every started program waits: start one more of the launch, if any is left."""
        group = self.queue.take_one()
        if group is None:
            return False
        todo.append(group)
        return True

    def _woken(self):
        for prog in self.waiting:
            if prog.wait.satisfied():
                return prog
        return None

    def _step(self, prog, forced):
        ctx = self.ctx
        if prog in self.waiting:
            self.waiting.remove(prog)
        ctx.pids = prog.pids
        ctx.patience = max(50, SPIN_LIMIT // (len(self.waiting) + 1)) if forced else 1
        self.current = prog
        if not prog.started:
            ctx.spins.pop(prog.pids.tobytes(), None)
            prog.started = True
            prog.thread.start()
        prog.go.release()
        self.back.acquire()
        self.current = None
        if prog.done:
            prog.thread.join()
            if prog.error is not None:
                raise prog.error
            self.finished += 1
            for p in self.waiting:  # it may have changed what they wait for
                p.stuck = False
            return
        prog.stuck = forced  # it spun with patience and still waits
        if not forced:
            for p in self.waiting:
                p.stuck = False
        self.waiting.append(prog)

    def _suspend(self, wait):
        """In a program's thread, at a Wait: hand control back until scheduled again."""
        prog = self.current
        if prog.cancelled:
            raise _Cancelled()
        prog.wait = wait
        self.back.release()
        prog.go.acquire()
        if prog.cancelled:
            raise _Cancelled()

    def _cancel(self):
        running = self.current
        if running is not None and not running.done:  # interrupted (Ctrl-C) while it ran
            running.cancelled = True
            self.back.acquire()  # it ends, or suspends at its next wait
            if not running.done:
                self.waiting.append(running)
        for prog in self.waiting:
            prog.cancelled = True
            prog.go.release()
            self.back.acquire()
            prog.thread.join()
        self.waiting.clear()

    def _deadlock(self):
        ctx = self.ctx
        lines = [f"  program {tuple(p.pids[0].tolist())}: {p.wait.describe()}"
                 for p in self.waiting]
        ctx.pids = self.waiting[0].pids
        return DeadlockError(
            f"every unfinished program of the launch waits for another ({len(self.waiting)} "
            f"waiting, each spins on a lock or flag that no program releases or sets; "
            f"{self.finished} finished while they waited):\n" + "\n".join(lines) +
            "\nNo program left could change those values: on a GPU this launch would hang "
            "(a missing tl.atomic_xchg(lock, 0), or a flag no program sets?).")
