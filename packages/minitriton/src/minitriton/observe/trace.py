"""The access recorder (`Settings(trace=True)`, `with minitriton.trace() as t:`): who touched
what, for the pictures and the HTML report of `minitriton.viz`.

For every memory operation of a launch it keeps, per argument and per element access: the
program (linear id), the step (the number of memory operations the program had made before
this one: the k-th load of a loop is a later step than the (k-1)-th), the kernel line, the kind
(load, store, atomic) and the element, plus the lanes a mask switched off and the offsets they
would have addressed. The record is exact, never sampled: a launch whose trace would hold more
than `Settings.trace_limit` element accesses (masked lanes included) stops with a TraceLimitError
that says so; shrink the problem (a smaller grid shows the same pattern) or raise the limit.
Memory is about 24 bytes per element access.

While the launch runs the recorder only keeps references to each access's offsets (the hooks
cost a few microseconds each); `finish` turns them into columns (`ArgTrace`). The lockstep
executor's re-runs of diverged programs undo what they had recorded, so both executors give
the same record, program by program.

The result is a `Trace`, set on the launch record as `record.trace`.

A launch that fails keeps its trace too: what the programs did up to the error (as the
sequential executor reaches it; the lockstep executor re-runs a failing chunk so: see
runtime/executors.py), with the values the launch had written by then and a `Failure` saying
what stopped it: the error, the program, the kernel line and, for an access, the argument and
the element offsets. The error carries it as `err.trace`, and a `minitriton.trace()` block
keeps it in `Tracing.failed` (and `Tracing.all`, in launch order), so that minitriton.viz can
draw the failing launch. A TraceLimitError's trace holds what was recorded up to the limit.

(Over 600 lines: the record's classes and the recorder share the column layout of `ArgTrace`;
the record, Site to Trace, could move to a module of its own, the recorder importing it.)

Length: over 600 lines because the recorder, the record's columns and the failure it keeps are
one observer's state; the pictures that read them are minitriton/viz.
"""
from __future__ import annotations

import math

import contextlib
import contextvars
import inspect
import linecache
import sys
from dataclasses import dataclass, field

import numpy as np

from ..context import Observer
from ..errors import MiniTritonError
from ..memory import offsets_array
from ..settings import configure
from ..source import KERNEL_CODES
from .traffic import record

LOAD, STORE, ATOMIC = 0, 1, 2
KINDS = ("load", "store", "atomic")


class TraceLimitError(MiniTritonError):
    """A launch would record more element accesses than `Settings.trace_limit`."""


@dataclass
class Site:
    """A kernel line that accessed memory."""

    file: str
    line: int
    text: str
    function: str

    def __str__(self):
        return f"{self.file}:{self.line}: {self.text}"


@dataclass
class SourceBlock:
    """The source of one @jit function the launch ran (the kernel, and the ones it calls)."""

    file: str
    first_line: int
    lines: list
    function: str


_COLUMNS = frozenset(prefix + name for prefix in ("", "masked_")
                    for name in ("program", "step", "site", "kind", "offset", "index"))


class ArgTrace:
    """The element accesses of one argument, as columns (one entry per element access).

    program, step, site, kind: who, when (the program's step), where (an index into
    `Trace.sites`) and how (LOAD, STORE, ATOMIC); offset: the element's offset in the
    argument's storage; index: its position in the view, C order over `shape` (-1 when it lies
    outside the view but inside the storage). `masked_*`: the same for the lanes a mask
    switched off (`masked_offset` what they would have addressed, possibly outside the
    storage); `masked_unknown`: masked lanes whose addresses could not be told (a pointer
    spanning several arguments).
    """

    def __init__(self, name, dtype, shape, values, columns, masked, masked_unknown, view_lo=0,
                 strides=None):
        self.name, self.dtype, self.shape, self.values = name, dtype, tuple(shape), values
        self.view_lo = view_lo  # storage offset of the view's first element
        self.strides = tuple(strides) if strides is not None else (1,)
        self.masked_unknown = masked_unknown
        self._summary = None
        if callable(columns):  # built on first use (the launch only keeps its events)
            self._build = lambda: (columns(), masked())
        else:
            self._set(columns, masked)

    def _set(self, columns, masked):
        (self.program, self.step, self.site, self.kind, self.offset, self.index) = columns
        (self.masked_program, self.masked_step, self.masked_site, self.masked_kind,
         self.masked_offset, self.masked_index) = masked

    def __getattr__(self, name):
        # only for attributes not set yet: the columns of a record whose columns are lazy
        if name in _COLUMNS and "_build" in self.__dict__:
            self._set(*self.__dict__.pop("_build")())
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def numel(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self):
        return int(self.program.size)

    def _summarise(self):
        """Per element of the view: the last writer, the first reader, whether several
        programs wrote or read it, and whether it raced (linear time: no sort)."""
        if self._summary is not None:
            return self._summary
        n = self.numel
        inside = self.index >= 0
        idx, prog, kind = self.index[inside], self.program[inside], self.kind[inside]
        if inside.all():
            idx, prog, kind = self.index, self.program, self.kind
        wrote = kind != LOAD
        read = kind != STORE
        writer = np.full(n, -1, np.int64)
        writer[idx[wrote]] = prog[wrote]  # in record order: the last write wins
        reader = np.full(n, -1, np.int64)
        reader[idx[read][::-1]] = prog[read][::-1]  # the first read wins
        self._summary = {"writer": writer, "reader": reader,
                         "several_writers": _several(n, idx[wrote], prog[wrote], writer),
                         "several_readers": _several(n, idx[read], prog[read], reader)}
        anyone = np.where(writer >= 0, writer, reader)
        other = _several(n, idx, prog, anyone)  # touched by two programs or more
        plain = np.zeros(n, bool)
        plain[idx[kind == STORE]] = True
        self._summary["race"] = plain & other  # a plain store, and another program
        return self._summary

    def writer(self):
        """The program that wrote each element last (C order over the view; -1: none)."""
        return self._summarise()["writer"]

    def reader(self):
        """The first program that read each element (-1: none)."""
        return self._summarise()["reader"]

    def writers(self):
        """How many distinct programs wrote each element (sorts: for tests and reports)."""
        keep = (self.index >= 0) & (self.kind != LOAD)
        return _distinct_per_element(self.numel, self.index[keep], self.program[keep])

    def readers(self):
        """How many distinct programs read each element."""
        keep = (self.index >= 0) & (self.kind != STORE)
        return _distinct_per_element(self.numel, self.index[keep], self.program[keep])

    def several_writers(self):
        """Bool per element: written by two programs or more."""
        return self._summarise()["several_writers"]

    def several_readers(self):
        """Bool per element: read by two programs or more."""
        return self._summarise()["several_readers"]

    def races(self):
        """Bool per element: a plain store by one program, and an access by another (atomics
        among themselves do not race). Locks are not considered: the race sanitizer is."""
        return self._summarise()["race"]

    @property
    def written(self):
        return bool((self.kind != LOAD).any())

    @property
    def read(self):
        return bool((self.kind != STORE).any())

    def touched(self, index):
        """Who touched one element (an int index in C order, or a tuple in the view's shape):
        {"read": [programs], "wrote": [...], "atomic": [...]}."""
        if isinstance(index, tuple):
            index = int(np.ravel_multi_index(index, self.shape))
        hit = self.index == index
        return {name: sorted({int(p) for p in self.program[hit & (self.kind == k)]})
                for k, name in ((LOAD, "read"), (STORE, "wrote"), (ATOMIC, "atomic"))}

    def masked_count(self):
        return int(self.masked_program.size) + self.masked_unknown


def _several(n, idx, prog, ref):
    """Bool per element: some access by a program other than `ref[element]` (one program
    that accessed it)."""
    out = np.zeros(n, bool)
    out[idx[prog != ref[idx]]] = True
    return out


def _distinct_per_element(n, idx, prog):
    if not idx.size:
        return np.zeros(n, np.int64)
    pairs = np.unique(idx.astype(np.int64) * (int(prog.max()) + 1) + prog)
    return np.bincount(pairs // (int(prog.max()) + 1), minlength=n)


@dataclass
class Step:
    """One memory operation of one program: `indices` the view elements it touched (C order),
    `masked` the view elements its masked lanes would have addressed, `outside` masked lanes
    that would have addressed no element of the view; `visit` how many times the program had
    run this kernel line before (the k-step of a loop)."""

    step: int
    site: Site
    arg: str
    kind: str
    indices: np.ndarray
    masked: np.ndarray
    outside: int
    visit: int = 0


@dataclass
class ProgramView:
    """What one program read and wrote, step by step."""

    program: int
    pid: tuple
    steps: list

    def cells(self):
        """(argument, element index) pairs the program read or wrote."""
        return {(s.arg, int(i)) for s in self.steps for i in s.indices}

    def of(self, arg, kind=None):
        return [s for s in self.steps if s.arg == arg and (kind is None or s.kind == kind)]


@dataclass
class Failure:
    """What stopped a launch: `error` (the error's class name), `message` (its text, without
    the kernel/program/line prefix), the `program` (linear id; None if not one program's) and
    its `pid`, the kernel line (`site`: a Site or None), the `step` of that program it stopped
    at (its count of memory operations before the error); for an access: the argument (`arg`),
    the `kind` (load, store, atomic), the element `offsets` its failing lanes addressed (as the
    kernel counts them, from the start of the tensor passed), and their `index` in the view (C
    order; -1: outside the tensor)."""

    error: str
    message: str
    program: object = None
    pid: tuple = None
    site: Site = None
    step: int = 0
    arg: str = None
    kind: str = None
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def where(self):
        """'program 2 at file:line: source' (what is known of it)."""
        who = "the launch" if self.pid is None else _program_text(self.pid)
        return who + (f" at {self.site}" if self.site is not None else "")

    def access(self):
        """'load of `x_ptr` at element offsets [10, 11] (2 outside the tensor)', or ''."""
        if self.arg is None:
            return ""
        shown = ", ".join(str(int(o)) for o in self.offsets[:8])
        more = ", ..." if self.offsets.size > 8 else ""
        outside = int((self.index < 0).sum())
        tail = f" ({outside} outside the tensor)" if outside else ""
        return f"{self.kind or 'access'} of `{self.arg}` at element offsets [{shown}{more}]{tail}"

    def headline(self):
        """One line: 'stopped by OutOfBoundsError in program 2 at ...'."""
        return f"stopped by {self.error} in {self.where()}"

    def __str__(self):
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        access = self.access()
        return self.headline() + (f"\n  its {access}" if access else "") + \
            (f"\n  {first}" if first else "")


def _program_text(pid):
    return f"program {pid[0]}" if len(pid) == 1 else f"program {tuple(pid)}"


@dataclass
class Trace:
    """The access record of one launch: `args` (name -> ArgTrace), the kernel `sites` and the
    `source` of the @jit functions it ran."""

    kernel: str
    grid: tuple
    executor: str
    args: dict
    sites: list
    source: list
    constexprs: dict = field(default_factory=dict)
    record: object = field(default=None, repr=False)
    failure: Failure = None  # what stopped the launch; None: it ran to its end

    @property
    def num_programs(self):
        return math.prod(self.grid)

    def pid_of(self, linear):
        gx = self.grid[0]
        gy = self.grid[1] if len(self.grid) > 1 else 1
        linear = int(linear)
        pid = (linear % gx, (linear // gx) % gy, linear // (gx * gy))
        return pid[:len(self.grid)]

    def linear(self, pid):
        if isinstance(pid, (int, np.integer)):
            return int(pid)
        pid = tuple(pid) + (0,) * (3 - len(pid))
        gx = self.grid[0]
        gy = self.grid[1] if len(self.grid) > 1 else 1
        return pid[0] + gx * (pid[1] + gy * pid[2])

    def races(self):
        """name -> element indices (C order) that raced, for the arguments that have some."""
        out = {}
        for name, arg in self.args.items():
            hit = np.nonzero(arg.races())[0]
            if hit.size:
                out[name] = hit
        return out

    def program(self, pid):
        """The `ProgramView` of one program (a linear id or a program id tuple)."""
        p = self.linear(pid)
        rows = []
        for name, arg in self.args.items():
            for kind_col, step_col, site_col, index_col, masked in (
                    (arg.kind, arg.step, arg.site, arg.index, False),
                    (arg.masked_kind, arg.masked_step, arg.masked_site, arg.masked_index, True)):
                mine = np.nonzero((arg.masked_program if masked else arg.program) == p)[0]
                for s in np.unique(step_col[mine]):
                    at = mine[step_col[mine] == s]
                    rows.append((int(s), name, int(kind_col[at[0]]), int(site_col[at[0]]),
                                 masked, index_col[at]))
        steps = {}
        for s, name, kind, site, masked, idx in sorted(rows, key=lambda r: (r[0], r[4])):
            key = (s, name)
            st = steps.get(key)
            if st is None:
                st = steps[key] = Step(s, self.sites[site], name, KINDS[kind],
                                       np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
            if masked:
                st.masked = idx[idx >= 0]
                st.outside = int((idx < 0).sum())
            else:
                st.indices = idx[idx >= 0]
        ordered = sorted(steps.values(), key=lambda st: st.step)
        visits: dict = {}
        for st in ordered:
            key = (st.site.file, st.site.line, st.arg)
            st.visit = visits.get(key, 0)
            visits[key] = st.visit + 1
        return ProgramView(p, self.pid_of(p), ordered)

    def summary(self):
        """A few lines of text: per argument, accesses, programs, masked lanes, races."""
        n = self.num_programs
        lines = [f"trace of {self.kernel}: grid {self.grid} = {n} program{'s' if n != 1 else ''}"
                 f" ({self.executor})"]
        if self.failure is not None:
            lines += ["  " + line for line in str(self.failure).splitlines()]
            lines.append("  what ran up to the error:")
        for name, a in self.args.items():
            if not len(a) and not a.masked_count():
                continue
            lines.append(f"  {name:<16} shape {a.shape}: {len(a):,} element accesses "
                         f"({int((a.kind == LOAD).sum()):,} loads, "
                         f"{int((a.kind == STORE).sum()):,} stores, "
                         f"{int((a.kind == ATOMIC).sum()):,} atomics), {a.masked_count():,} "
                         f"masked lanes, {int(a.races().sum()):,} raced elements")
        return "\n".join(lines)

    def __str__(self):
        return self.summary()


class Tracer(Observer):
    """Records every access of the launch (see the module's docstring)."""

    setting = "trace"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.events = []  # (kind, buffer index, site, programs, lanes, idx, repeat, masked)
        self.count = 0
        self.sites: list = []
        self.site_ids: dict = {}  # (id of the code, line) -> index into sites
        self.codes: dict = {}  # id -> code object of the @jit functions seen (ordered)
        self.limit = ctx.settings.trace_limit
        self.trace = None  # the Trace, once built

    # ----- recording
    def _site(self):
        kernel = _kernel_code_ids()
        frame = sys._getframe(2)
        while frame is not None and id(frame.f_code) not in kernel:
            frame = frame.f_back
        if frame is None:
            return -1
        key = (id(frame.f_code), frame.f_lineno)  # ids: hashing a code object is slow
        sid = self.site_ids.get(key)
        if sid is not None:
            return sid
        code, outer, gap = frame.f_code, frame, 0
        while frame is not None and gap < 8:  # the outermost @jit frame: the kernel itself
            if id(frame.f_code) in kernel:
                outer, gap = frame, 0
            else:
                gap += 1  # nested @jit calls are a few frames apart; the executors beyond
            frame = frame.f_back
        self.codes.setdefault(id(outer.f_code), outer.f_code)
        self.codes.setdefault(id(code), code)
        text = linecache.getline(code.co_filename, key[1]).strip()
        sid = self.site_ids[key] = len(self.sites)
        self.sites.append(Site(code.co_filename, key[1], text, code.co_name))
        return sid

    def _record(self, access, kind):
        ctx = self.ctx
        masked = _masked_lanes(access)
        n = access.count + (masked[1].size * access.repeat if isinstance(masked, tuple) else 0)
        self.count += n
        if self.count > self.limit:
            raise TraceLimitError(
                f"kernel `{ctx.kernel_name}` (grid {ctx.record.grid}): its trace would hold more "
                f"than Settings.trace_limit = {self.limit:,} element accesses (masked lanes "
                f"included; about 24 bytes each); the record is exact, never sampled.\nhint: "
                f"trace a smaller problem (fewer programs show the same pattern), or raise the "
                f"limit: minitriton.trace(limit=...) or Settings(trace_limit=...).")
        gx, gy, _ = ctx.grid
        pids = ctx.pids
        linear = (pids[:, 0] + gx * (pids[:, 1] + gy * pids[:, 2])).astype(np.int32)
        self.events.append((kind, access.buf.index, self._site(), linear, access.lanes,
                            access.idx, access.shape, access.repeat, masked))

    def on_load(self, access):
        self._record(access, LOAD)

    def on_store(self, access):
        self._record(access, STORE)

    def on_atomic(self, access):
        self._record(access, ATOMIC)

    def mark(self):
        return len(self.events), self.count

    def undo(self, token):
        del self.events[token[0]:]
        self.count = token[1]

    # ----- the record
    def finish(self, rerun):
        self._build()

    def stopped(self, error, message):
        """The launch failed with `error` (located: its program and line; `message`: its text
        before that): set the trace of what ran, with the failure, as `error.trace`."""
        ctx = self.ctx
        kernel_frames = [(tb.tb_frame.f_code, tb.tb_lineno) for tb in _walk(error)
                         if id(tb.tb_frame.f_code) in _kernel_code_ids()]
        for code, _ in kernel_frames:
            self.codes.setdefault(id(code), code)
        trace = self.trace if self.trace is not None else self._build()
        site = None
        if kernel_frames:
            code, line = kernel_frames[-1]
            site = next((st for st in self.sites if (st.file, st.line) == (code.co_filename,
                                                                          line)), None) or \
                Site(code.co_filename, line, linecache.getline(code.co_filename, line).strip(),
                     code.co_name)
        pid = getattr(error, "pid", None)
        if pid is None and ctx.pids is not None and len(ctx.pids) == 1:
            pid = ctx.pid_tuple(0)
        program = None if pid is None else ctx.linear_pid(pid)
        failure = Failure(type(error).__name__, message, program,
                          None if pid is None else trace.pid_of(program), site)
        if program is not None:
            failure.step = self._steps(program)
        buf = getattr(error, "buffer", None)
        bad = getattr(error, "bad_offsets", None)
        if buf is not None and bad is not None:
            bad = np.asarray(bad, np.int64)
            op = message.split(" ", 1)[0]
            failure.arg = buf.name
            failure.kind = op if op in ("load", "store") else \
                "atomic" if op.startswith("atomic") else None
            failure.offsets = bad - buf.view_lo
            failure.index = _view_positions(_view_where(buf), bad)
        trace.failure = failure
        error.trace = trace

    def _steps(self, program):
        """The memory operations `program` made (its step count)."""
        return sum(int(np.count_nonzero(event[3] == program)) for event in self.events)

    def _build(self):
        ctx = self.ctx
        counter = np.zeros(max(1, ctx.record.num_programs), np.int32)
        cols: dict = {}
        masked_cols: dict = {}
        unknown: dict = {}
        for kind, b, site, linear, lanes, idx, shape, repeat, masked in self.events:
            steps = counter[linear]
            counter[linear] += 1
            offs = offsets_array(idx)
            shared = repeat > 1 or len(linear) != shape[0]  # one access for every program
            if shared:
                counts = offs.size  # every program the same offsets
            elif lanes is None:
                counts = offs.size // shape[0]
            else:
                counts = np.count_nonzero(lanes.reshape(shape[0], -1), axis=1)
            cols.setdefault(b, []).append((linear, steps, counts, offs, shared, site, kind))
            if masked is None:
                continue
            if masked is _UNKNOWN:
                unknown[b] = unknown.get(b, 0) + 1
                continue
            mrows, moffs = masked
            counts = moffs.size if shared else np.bincount(mrows, minlength=len(linear))
            masked_cols.setdefault(b, []).append((linear, steps, counts, moffs, shared, site,
                                                  kind))
        args = {}
        for buf in ctx.memory.buffers:
            args[buf.name] = _arg_trace(buf, cols.get(buf.index), masked_cols.get(buf.index),
                                        unknown.get(buf.index, 0))
        trace = Trace(ctx.kernel_name, tuple(ctx.record.grid), ctx.settings.executor, args,
                      self.sites, [_source(code) for code in self.codes.values()],
                      dict(ctx.record.constexprs), ctx.record)
        ctx.record.trace = self.trace = trace
        for log in _LOGS.get():
            log.append(trace)
        return trace


def _walk(error):
    """The traceback entries of `error`, outermost first."""
    tb = error.__traceback__
    while tb is not None:
        yield tb
        tb = tb.tb_next


_UNKNOWN = object()
_KERNEL_IDS = [0, frozenset()]  # len(KERNEL_CODES) when made, the ids of its code objects


def _kernel_code_ids():
    """The ids of the kernels' code objects (they live in KERNEL_CODES): hashing a code object
    hashes its bytecode and constants, 100 us a lookup on a kernel frame."""
    if _KERNEL_IDS[0] != len(KERNEL_CODES):
        _KERNEL_IDS[:] = [len(KERNEL_CODES), frozenset(map(id, KERNEL_CODES))]
    return _KERNEL_IDS[1]


def _masked_lanes(access):
    """(rows, storage offsets) of the lanes of this access that a mask switched off, None if
    none were, `_UNKNOWN` if their addresses cannot be told.

    The hook sees the `Access` (active lanes only); the addresses of the masked-off lanes are
    in the memory operation's `Lanes` (language/access.py), a local of the function that calls
    the hooks (gather, scatter, the atomics), found up the stack."""
    frame = sys._getframe(3)
    for _ in range(3):
        if frame is None:
            break
        lanes = frame.f_locals.get("lanes")
        if lanes is not None and hasattr(lanes, "active") and hasattr(lanes, "ptr"):
            break
        frame = frame.f_back
    else:
        return None
    if frame is None or lanes.active is None:
        return None
    off = ~lanes.active
    if not off.any():
        return None
    buf = access.buf
    if lanes.ptr.origin != buf.index:
        return _UNKNOWN if not isinstance(lanes.ptr.origin, int) else None
    rows = np.nonzero(off.reshape(off.shape[0], -1))[0]
    return rows, lanes.ptr.data[off].astype(np.int64) - buf.base


def _view_where(buf):
    """(the view's storage offsets: a slice or an index array, the storage's size)."""
    return (buf.view_index() if buf.shape is not None else slice(buf.view_lo, buf.view_hi),
            buf.size)


def _view_positions(view, offs):
    """C-order position in the view of each storage offset (-1: not in the view)."""
    where, size = view
    if isinstance(where, slice):
        if not offs.size or (offs.min() >= where.start and offs.max() < where.stop):
            return offs - where.start if where.start else offs  # the common case: no copy
        pos = offs - where.start
        return np.where((offs >= where.start) & (offs < where.stop), pos, -1)
    inverse = np.full(size, -1, np.int64)
    inverse[where] = np.arange(where.size)
    ok = (offs >= 0) & (offs < size)
    return np.where(ok, inverse[np.clip(offs, 0, size - 1)], -1)


def _columns(parts, view):
    """The columns of one argument from its events, written in place (no concatenation):
    part = (programs, their steps, accesses per program (an int, or one per program),
    offsets, shared (the same offsets for every program), site, kind)."""
    sizes = [c * len(lin) if isinstance(c, int) else int(c.sum())
             for lin, _, c, _, _, _, _ in parts or ()]
    total = sum(sizes)
    progs, steps = np.empty(total, np.int32), np.empty(total, np.int32)
    offsets, sites, kinds = np.empty(total, np.int64), np.empty(total, np.int32), \
        np.empty(total, np.int8)
    a = 0
    for (lin, st, c, offs, shared, site, kind), n in zip(parts or (), sizes):
        b = a + n
        if isinstance(c, int):
            progs[a:b].reshape(len(lin), c)[:] = lin[:, None]
            steps[a:b].reshape(len(lin), c)[:] = st[:, None]
        else:
            progs[a:b] = np.repeat(lin, c)
            steps[a:b] = np.repeat(st, c)
        if shared:
            offsets[a:b].reshape(len(lin), c)[:] = offs
        else:
            offsets[a:b] = offs
        sites[a:b] = site
        kinds[a:b] = kind
        a = b
    return progs, steps, sites, kinds, offsets, _view_positions(view, offsets)


def _arg_trace(buf, parts, masked_parts, unknown):
    shape = buf.shape if buf.shape is not None else (buf.view_hi - buf.view_lo,)
    values = buf.flat[buf.view_index()].reshape(-1).copy()
    view = _view_where(buf)  # the columns are built on first use, from the events kept
    return ArgTrace(buf.name, str(buf.dtype), shape, values, lambda: _columns(parts, view),
                    lambda: _columns(masked_parts, view), unknown, buf.view_lo, buf.strides)


_SOURCES: dict = {}  # id of a kernel's code object -> SourceBlock (getblock tokenizes: 2 ms)


def _source(code):
    block = _SOURCES.get(id(code))  # the code objects live in KERNEL_CODES: ids stay theirs
    if block is None:
        block = _SOURCES[id(code)] = _read_source(code)
    return block


def _read_source(code):
    lines = linecache.getlines(code.co_filename)
    first = code.co_firstlineno
    try:
        block = inspect.getblock(lines[first - 1:])
    except (IndexError, SyntaxError, inspect.EndOfBlock):
        block = lines[first - 1:first]
    return SourceBlock(code.co_filename, first, [line.rstrip("\n") for line in block],
                       code.co_name)


_LOGS: contextvars.ContextVar = contextvars.ContextVar("minitriton_trace_logs", default=())


class Tracing:
    """The traces of the launches made inside a `minitriton.trace()` block: `launches` (those
    that ran to their end), `failed` (those an error stopped: each has a `failure`), `all`
    (both, in launch order)."""

    def __init__(self, recording, log):
        self._recording = recording
        self._log = log

    @property
    def launches(self):
        return [r.trace for r in self._recording.launches if r.trace is not None]

    @property
    def failed(self):
        return [t for t in self._log if t.failure is not None]

    @property
    def all(self):
        return list(self._log)

    @property
    def last(self):
        launches = self.launches
        if not launches:
            raise LookupError("no launch was traced in this block")
        return launches[-1]

    def __len__(self):
        return len(self.launches)

    def __getitem__(self, i):
        return self.launches[i]

    def __iter__(self):
        return iter(self.launches)


@contextlib.contextmanager
def trace(limit=None):
    """Record who touched what in every minitriton launch inside the block (launches that pass
    their own `minitriton_settings` follow those instead):

        with minitriton.trace() as t:
            kernel[grid](...)
        minitriton.viz.save(t.last, "out/")

    `limit`: Settings.trace_limit for the block (element accesses per launch)."""
    changes = {"trace": True}
    if limit is not None:
        changes["trace_limit"] = int(limit)
    log: list = []
    token = _LOGS.set(_LOGS.get() + (log,))
    try:
        with configure(**changes), record() as rec:
            yield Tracing(rec, log)
    finally:
        _LOGS.reset(token)
