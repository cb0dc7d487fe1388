"""`gl.warp_specialize`: partitions of a program's warps that run at once and meet at mbarriers.

Each partition (the default one, then the workers) is a function of its own, run here in a
thread of its own, one at a time: a partition runs until it finishes or waits on an mbarrier
phase that is not complete (language/_barriers.py, `wait`), and then the next partition that can
go on runs (round robin from the one after it). When every partition left waits on a phase
nothing can complete any more, the GPU would hang: the first of them gets the DeadlockError. A
partition's error (or a Divergence, which regroups the programs) ends the region: the others
are stopped and the error goes on in the kernel's own thread. The default partition's results
are the region's.
"""
from __future__ import annotations

import contextvars
import threading

from ....errors import CompilationError
from ....types import _unwrap

_REGION: contextvars.ContextVar = contextvars.ContextVar("minitriton_gluon_region",
                                                         default=None)


class _Stopped(BaseException):
    """Ends a parked partition when the region ends without it."""


class _Partition:
    def __init__(self, region, index, fn, args):
        self.region, self.index = region, index
        self.fn, self.args = fn, args
        self.go = threading.Semaphore(0)
        self.until = None  # a parked partition's condition to go on
        self.done = False
        self.result = self.error = None
        self.thread = threading.Thread(target=contextvars.copy_context().run,
                                       args=(self._main,), daemon=True,
                                       name=f"gluon partition {index}")

    def _main(self):
        _REGION.set(self)
        self.go.acquire()
        try:
            self.result = self.fn(*self.args)
        except _Stopped:
            pass
        except BaseException as e:  # noqa: B036 - handed to the kernel's thread
            self.error = e
        finally:
            self.done = True
            self.region.back.release()


class _Region:
    def __init__(self, functions_and_args):
        self.back = threading.Semaphore(0)
        self.stopping = False
        self.partitions = [_Partition(self, i, fn, tuple(args))
                           for i, (fn, args) in enumerate(functions_and_args)]

    def _resume(self, p):
        if not p.thread.is_alive() and not p.done:
            p.thread.start()
        p.go.release()
        self.back.acquire()

    def run(self):
        current = self.partitions[0]
        while True:
            self._resume(current)
            if current.error is not None:
                self._stop()
                raise current.error
            nxt = self._next(current)
            if nxt is None:
                break
            current = nxt
        return self.partitions[0].result

    def _next(self, after):
        """The next partition that can go on, or None when all are done; when every one left
        waits on something that cannot happen, the first of them, told so."""
        n = len(self.partitions)
        order = [self.partitions[(after.index + k) % n] for k in range(1, n + 1)]
        live = [p for p in order if not p.done]
        if not live:
            return None
        for p in live:
            if p.until is None or p.until():
                return p
        stuck = min(live, key=lambda p: p.index)
        stuck.until = None  # its wait, resumed, finds itself stuck and says so
        stuck.stuck = True
        return stuck

    def _stop(self):
        self.stopping = True
        for p in self.partitions:
            if not p.done and p.thread.is_alive():
                self._resume(p)

    def park(self, partition, until):
        """Suspend `partition` until `until()` holds; False when nothing can make it hold."""
        partition.until, partition.stuck = until, False
        self.back.release()
        partition.go.acquire()
        if self.stopping:
            raise _Stopped()
        partition.until = None
        return not partition.stuck


def waiting(until):
    """Inside a warp-specialized region: let the other partitions run until `until()` holds
    (True), or until none can go on (False). Outside one (None): the program has nobody to
    wait for."""
    partition = _REGION.get()
    if partition is None:
        return None
    return partition.region.park(partition, until)


def warp_specialize(functions_and_args, worker_num_warps, worker_num_regs):
    """Run the partitions (`[(default, args), (worker, args), ...]`) until all are done; the
    default partition's results."""
    functions_and_args = list(_unwrap(functions_and_args))
    worker_num_warps = [int(_unwrap(w)) for w in _unwrap(worker_num_warps)]
    worker_num_regs = [int(_unwrap(r)) for r in _unwrap(worker_num_regs)]
    if _REGION.get() is not None:
        raise CompilationError("calling warp_specialize recursively is not supported")
    if not functions_and_args:
        raise CompilationError("expected at least one function for the default partition")
    for _, args in functions_and_args:
        if not isinstance(args, tuple):
            raise CompilationError(f"function arguments must be a tuple of arguments, but got "
                                   f"{type(args)}")
    workers = len(functions_and_args) - 1
    if workers != len(worker_num_warps) or workers != len(worker_num_regs):
        raise CompilationError(f"warp specialize got {workers} partitions but "
                               f"{len(worker_num_warps)} warp counts and "
                               f"{len(worker_num_regs)} register counts")
    return _Region(functions_and_args).run()
