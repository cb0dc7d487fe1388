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
    printer: object = print

    def pid_tuple(self, row=0):
        return tuple(int(v) for v in self.pids[row])


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
