"""The launch context, and the observer protocol through which checks watch a launch.

A launch sets one `LaunchContext` for the duration of the kernel; `tl` functions read it through
`current()`. Values inside a kernel carry a leading *program axis*: `pids` holds one row per
program executed together (one row in sequential mode).

Observers (traffic counting, the sanitizers, footprint, padding, the order check: `observe/`)
subclass `Observer` and override the hooks they need; the language layer calls the hooks of
the observers a launch has, through `ctx.hooks`, and never looks at which checks are on. A new
check is one module in `observe/` (its class names the `Settings` field that turns it on) and
that field.
"""
from __future__ import annotations

import contextvars
import math as _math
from dataclasses import dataclass, field

import numpy as np

from .errors import CompilationError
from .lanes import Rows, Shifted
from .memory import offsets_array

_CURRENT: contextvars.ContextVar = contextvars.ContextVar("minitriton_launch", default=None)
OBSERVERS: list = []  # every Observer subclass, in definition order (filled by subclassing)
HOOKS = ("on_load", "after_load", "on_store", "on_atomic", "after_atomic", "on_dot",
         "on_reduce", "on_math", "on_descriptor")


class Divergence(Exception):
    """A scalar that Python control flow depends on differs between the programs executed
    together. `decisions` holds each program's decision (truth value, integer, float); the
    lockstep executor undoes the group's writes and re-runs it split by these decisions."""

    def __init__(self, decisions):
        super().__init__("programs diverge on a Python condition")
        self.decisions = decisions


class Wait(Exception):
    """A program polls memory (an atomic that changes nothing, e.g. a failing atomic_cas) and
    sees again what it saw before: it waits for another program of the launch. Raised where the
    program cannot be suspended (the executors then undo it and run it as a coroutine beside
    the others, `runtime/executors.py`); in a coroutine, `LaunchContext.waiter` suspends it.

    `sites` holds what it polled since it last changed memory: [buffer, element offsets, the
    values it saw, the value an atomic_cas compares with (else None), kernel line]."""

    def __init__(self, sites):
        super().__init__("a program waits for another program of the launch")
        self.sites = sites

    def satisfied(self):
        """Whether memory changed at a polled site since the program saw it."""
        return any(not _same(buf.flat[idx], seen) for buf, idx, seen, _, _ in self.sites)

    def describe(self):
        parts = []
        for buf, idx, seen, cmp, line in self.sites:
            at = f"`{buf.name}`[{', '.join(str(int(i)) for i in idx[:4])}" \
                 f"{', ...' if idx.size > 4 else ''}]"
            held = _values(buf.flat[idx])
            wants = f"waits for {_values(cmp)} (atomic_cas)" if cmp is not None else \
                "waits for it to change"
            parts.append(f"{at} holds {held}, it {wants}, at {line}")
        return "; ".join(parts)


def _same(a, b):
    return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def _values(v):
    v = np.unique(np.asarray(v))
    return str(v[0].item()) if v.size == 1 else str(v[:4].tolist())


class Access:
    """One memory operation on one buffer, as the observers see it.

    `lanes` is None when every lane of the (programs, *block) access is active, else a bool
    array of that shape; `idx` the element offsets of the active lanes, in lane order (a slice
    when consecutive; made on first use where resolve gave a lanes.Shifted or lanes.Rows,
    which `read`, `place` and `write` use directly); `repeat` how many programs a shared
    (uniform) load stands for."""

    __slots__ = ("buf", "lanes", "_idx", "shape", "repeat", "_lazy")

    def __init__(self, buf, lanes, idx, shape, repeat=1):
        self.buf, self.lanes, self.shape, self.repeat = buf, lanes, shape, repeat
        if isinstance(idx, (Shifted, Rows)):  # made only where an observer asks for them
            self._idx, self._lazy = None, idx
        else:
            self._idx, self._lazy = idx, None

    @property
    def idx(self):
        if self._idx is None:
            self._idx = self._lazy.offsets()
        return self._idx

    @property
    def count(self):
        """Elements touched, over every program it stands for."""
        idx = self._lazy if self._idx is None else self._idx
        n = idx.stop - idx.start if isinstance(idx, slice) else idx.size
        return n * self.repeat

    def read(self):
        """The values at the active lanes' offsets, in lane order (a view where they are
        consecutive)."""
        if self._idx is None:
            if isinstance(self._lazy, Rows):
                return self._lazy.view(self.buf.flat).reshape(-1)
            return self._lazy.take(self.buf.flat)
        idx = self._idx
        # resolve() kept only offsets inside the storage, so `take` needs no bounds check of
        # its own: mode="wrap" skips it (1.5x faster than `flat[idx]` on 32 K offsets)
        return self.buf.flat[idx] if isinstance(idx, slice) else \
            self.buf.flat.take(idx, mode="wrap")

    def place(self, result):
        """Write the values read into the (lanes, *block) array `result` at the active lanes."""
        rows = self._lazy if self._idx is None else None
        if isinstance(rows, Rows):
            result.reshape(rows.rows, -1)[:, rows.cols] = rows.view(self.buf.flat)
        else:
            result[self.lanes] = self.read()

    def write(self, vals):
        """Store the (lanes, *block) values `vals` (broadcast) at the active lanes."""
        rows = self._lazy if self._idx is None else None
        if isinstance(rows, Rows) and rows.disjoint():
            rows.view(self.buf.flat)[...] = vals.reshape(rows.rows, -1)[:, rows.cols]
        else:
            self.buf.flat[self.idx] = vals.reshape(-1) if self.lanes is None else \
                vals[self.lanes]

    def lane_mask(self):
        return np.ones(self.shape, dtype=bool) if self.lanes is None else self.lanes

    def offsets(self):
        return offsets_array(self.idx)


class Observer:
    """Watches the memory operations, dots and reductions of one launch.

    setting: the `Settings` field that turns the observer on (None: always on).
    per_program: it needs every program's lanes apart, so loads that are the same in every
        program are not done once for all of them.
    needs_snapshots: it needs a copy of every written buffer, whatever its size (to re-run).
    priority: observers with a lower priority see each access first (and report first).

    Hooks (override those you need; the others are never called):
      on_load(access) before a load reads; after_load(accesses, value) once the loaded tensor
      exists; on_store(access) before a store writes; on_atomic(access) before an atomic
      updates; after_atomic(access, op, old, cmp, val, sem) after it, with the values each
      lane saw and the memory semantic (None: Triton's default, acq_rel);
      on_dot(a, b, flops); on_reduce(x, axis, kind, result) returns the result;
      on_math(name, elements) after a special function (exp, log, sqrt, erf, libdevice's
      tanh...) ran on `elements` lanes, summed over the programs running (`note_math`);
      on_descriptor(op) when a tensor descriptor's `op` ("load") ran (`note_descriptor`):
      on the GPU a TMA copy, global memory to shared with no registers on the way.
    Undo (lockstep re-runs diverged programs): mark() -> token, undo(token), commit(token).
    finish(rerun): after every program ran; `rerun(ids)` runs programs again, sequentially,
    with no observer watching (the order check).
    """

    setting = None
    per_program = False
    needs_snapshots = False
    priority = 0

    def __init_subclass__(cls, check=True, **kwargs):
        """A subclass is a check that launches have when its setting is on; `check=False`
        makes a watcher that sees only the launches it is given (`runtime.launch.watching`)."""
        super().__init_subclass__(**kwargs)
        if check:
            OBSERVERS.append(cls)

    def __init__(self, ctx):
        self.ctx = ctx

    @classmethod
    def wanted(cls, settings):
        return cls.setting is None or bool(getattr(settings, cls.setting))

    def mark(self):
        return None

    def undo(self, token):
        pass

    def commit(self, token):
        pass

    def finish(self, rerun):
        pass


def observer_classes(settings):
    """The observers a launch with these settings has."""
    return sorted((cls for cls in OBSERVERS if cls.wanted(settings)), key=lambda c: c.priority)


@dataclass
class LaunchContext:
    kernel_name: str
    grid: tuple
    memory: object  # minitriton.memory.AddressSpace
    record: object  # minitriton.observe.traffic.LaunchRecord
    settings: object  # minitriton.settings.Settings
    pids: np.ndarray = field(default=None)  # (P, 3) int32: the programs executed together
    observers: list = field(default_factory=list)
    hooks: dict = field(default_factory=dict)  # hook name -> bound methods that override it
    per_program: bool = False  # some observer needs every program's lanes apart
    output: list = field(default_factory=list)  # print lines, flushed when programs complete
    max_block: int = 1  # elements of the largest block accessed so far (sizes lockstep chunks)
    spins: dict = field(default_factory=dict)  # program(s) -> what they polled (see Wait)
    waiter: object = None  # in a coroutine (executors): suspends the running program at a Wait
    patience: int = 1  # times a program may see a polled value again before it waits
    scratch: dict = field(default_factory=dict)  # work arrays reused by the launch's operations

    def watch(self, observers):
        """Attach the launch's observers (a list, possibly empty, to watch nothing)."""
        self.observers = observers
        self.hooks = {name: [getattr(o, name) for o in observers
                             if getattr(type(o), name, None) is not None] for name in HOOKS}
        self.per_program = any(o.per_program for o in observers)

    def printer(self, line, row=0):
        self.output.append((self.linear_pid(self.pids[row]), line))

    def linear_pid(self, pid):
        gx, gy, _ = self.grid
        return int(pid[0]) + gx * (int(pid[1]) + gy * int(pid[2]))

    def pid_tuple(self, row=0):
        return tuple(int(v) for v in self.pids[row])

    def pid_of(self, linear):
        """The (x, y, z) program id of a linear program number."""
        gx, gy, _ = self.grid
        linear = int(linear)
        return (linear % gx, (linear // gx) % gy, linear // (gx * gy))

    def programs(self, lanes):
        """Linear program number of each active lane of an access, and the lanes' rows."""
        rows = np.nonzero(lanes)[0]
        pids = self.pids[rows].astype(np.int64)
        gx, gy, _ = self.grid
        return pids[:, 0] + gx * (pids[:, 1] + gy * pids[:, 2]), rows

    def note_block(self, numel):
        if numel > self.max_block:
            self.max_block = numel

    # Undo support for the lockstep executor: everything a diverged attempt changed.
    def mark(self):
        return self.memory.mark(), [o.mark() for o in self.observers]

    def undo(self, mark):
        self.memory.undo(mark[0])
        for o, token in zip(self.observers, mark[1]):
            o.undo(token)
        self.output.clear()

    def commit(self, mark):
        self.memory.commit(mark[0])
        for o, token in zip(self.observers, mark[1]):
            o.commit(token)


def current() -> LaunchContext:
    ctx = _CURRENT.get()
    if ctx is None:
        raise CompilationError(
            "this triton.language function can only be called inside a @jit kernel that is "
            "being launched (kernel[grid](...))")
    return ctx


def active():
    return _CURRENT.get()


def note_math(name, shape):
    """Tell the launch's on_math observers that the special function `name` ran on a block of
    `shape` in each running program (the GPU's special-function unit, or a libdevice
    polynomial: work the performance model counts apart from additions and products)."""
    ctx = _CURRENT.get()
    hooks = getattr(ctx, "hooks", None)
    if hooks and hooks["on_math"]:
        elements = _math.prod(shape) * max(1, len(ctx.pids))
        for hook in hooks["on_math"]:
            hook(name, elements)


def note_descriptor(op):
    """Tell the launch's on_descriptor observers that a tensor descriptor's `op` ran."""
    hooks = getattr(_CURRENT.get(), "hooks", None)
    if hooks and hooks["on_descriptor"]:
        for hook in hooks["on_descriptor"]:
            hook(op)


def enter(ctx):
    return _CURRENT.set(ctx)


def leave(token):
    _CURRENT.reset(token)
