"""The launch context: what the language layer needs to know about the launch it runs in.

A launch sets one `LaunchContext` for the duration of the kernel; `tl` functions read it through
`current()`. Values inside a kernel carry a leading *program axis*: `pids` holds one row per
program executed together (one row in sequential mode).
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass, field

import numpy as np

from ..errors import CompilationError

_CURRENT: contextvars.ContextVar = contextvars.ContextVar("minitriton_launch", default=None)


@dataclass
class LaunchContext:
    kernel_name: str
    grid: tuple
    memory: object  # minitriton.memory.AddressSpace
    stats: object  # minitriton.observe.traffic.LaunchRecord
    settings: object  # minitriton.settings.Settings
    pids: np.ndarray = field(default=None)  # (P, 3) int32: the programs executed together
    sanitizer: object = None  # minitriton.observe.sanitizers.Sanitizer, when a check is on
    output: list = field(default_factory=list)  # print lines, flushed when programs complete
    max_block: int = 1  # elements of the largest block accessed so far (sizes lockstep chunks)
    spins: dict = field(default_factory=dict)  # consecutive failed atomic_cas per program

    def printer(self, line, row=0):
        pid = self.pids[row]
        gx, gy, _ = self.grid
        self.output.append((int(pid[0]) + gx * (int(pid[1]) + gy * int(pid[2])), line))

    def pid_tuple(self, row=0):
        return tuple(int(v) for v in self.pids[row])

    def note_block(self, numel):
        if numel > self.max_block:
            self.max_block = numel

    # Undo support for the lockstep executor: everything a diverged attempt changed.
    def mark(self):
        return (self.memory.mark(), self.stats.mark(),
                self.sanitizer.mark() if self.sanitizer is not None else None)

    def undo(self, mark):
        self.memory.undo(mark[0])
        self.stats.restore(mark[1])
        if self.sanitizer is not None:
            self.sanitizer.undo(mark[2])
        self.output.clear()

    def commit(self, mark):
        self.memory.forget(mark[0])
        if self.sanitizer is not None:
            self.sanitizer.forget(mark[2])


def current() -> LaunchContext:
    ctx = _CURRENT.get()
    if ctx is None:
        raise CompilationError(
            "this triton.language function can only be called inside a @jit kernel that is "
            "being launched (kernel[grid](...))")
    return ctx


def active():
    return _CURRENT.get()


def enter(ctx):
    return _CURRENT.set(ctx)


def leave(token):
    _CURRENT.reset(token)
