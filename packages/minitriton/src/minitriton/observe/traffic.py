"""Traffic counting: what each launch read, wrote and computed.

Every launch returns a `LaunchRecord`; `with minitriton.record() as rec:` collects the records
of all launches inside the block. Masked lanes are not counted (they touch no memory); an
atomic counts as one read and one write of its element; `tl.dot` counts 2*M*N*K FLOPs per call
per program. The counting is an observer that every launch has.
"""
from __future__ import annotations

import math

import contextlib
import contextvars
from dataclasses import dataclass, field

from ..context import Observer

_RECORDERS: contextvars.ContextVar = contextvars.ContextVar("minitriton_recorders", default=())


@dataclass
class ArgTraffic:
    name: str
    dtype: str
    itemsize: int
    loaded: int = 0  # elements read by tl.load
    stored: int = 0  # elements written by tl.store
    atomics: int = 0  # elements updated by atomics (each one read and written)
    unique_read: int = None  # distinct elements read (Settings.footprint), else None
    unique_written: int = None
    coverage: object = None  # observe.coverage.WriteCoverage of the view (Settings.coverage)

    @property
    def elements_read(self):
        return self.loaded + self.atomics

    @property
    def elements_written(self):
        return self.stored + self.atomics

    @property
    def bytes_read(self):
        return self.elements_read * self.itemsize

    @property
    def bytes_written(self):
        return self.elements_written * self.itemsize


@dataclass
class LaunchRecord:
    """What one launch did. Totals are over all programs of the grid."""

    kernel: str
    grid: tuple
    constexprs: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    executor: str = "sequential"
    args: dict = field(default_factory=dict)  # parameter name -> ArgTraffic
    dot_flops: int = 0
    seconds: float = 0.0
    lines: list = None  # memory insight per kernel line (Settings.sectors): observe/sectors.py
    trace: object = None  # who touched what (Settings.trace): observe/trace.py's Trace
    # (programs run, programs in the grid) where only a sample ran (the autotuner's trials on
    # the CPU, launch.sampling): the totals are then the sample's
    sampled: tuple = None
    # how many autotune configurations this launch's counts stand for: an autotuner trial is
    # shared by the configs that differ only in num_warps and num_stages (runtime/autotune.py)
    stands_for: int = 1
    # an autotuner's trial launch, not one the program asked for (runtime/autotune.py)
    trial: bool = False

    @property
    def num_programs(self):
        return math.prod(self.grid)

    @property
    def asm(self):
        """What Triton's launch result holds here (`.asm["ptx"]`, TTGIR...): minitriton has none,
        it compiles nothing; an AttributeError, so `hasattr(result, "asm")` is False."""
        raise AttributeError(
            f"minitriton compiles nothing, so the launch of `{self.kernel}` has no PTX, TTGIR or "
            f"other compiler output (`.asm`); a check of the GPU compiler's output needs the GPU")

    def add_argument(self, buf):
        """List a tensor argument, so that arguments with no traffic show too."""
        if buf.name not in self.args:
            self.args[buf.name] = ArgTraffic(buf.name, str(buf.dtype), buf.dtype.itemsize)

    @property
    def unique_bytes(self):
        """Bytes of distinct elements read plus written (None unless recorded)."""
        if any(a.unique_read is None for a in self.args.values()):
            return None
        return sum((a.unique_read + a.unique_written) * a.itemsize for a in self.args.values())

    def _total(self, attr):
        return sum(getattr(a, attr) for a in self.args.values())

    elements_read = property(lambda self: self._total("elements_read"))
    elements_written = property(lambda self: self._total("elements_written"))
    bytes_read = property(lambda self: self._total("bytes_read"))
    bytes_written = property(lambda self: self._total("bytes_written"))

    def table(self):
        """A plain-text table of the launch's traffic."""
        lines = [f"{self.kernel}: grid {self.grid} = {self.num_programs} programs "
                 f"({self.executor}, {self.seconds * 1e3:.1f} ms)",
                 f"  {'argument':<16}{'dtype':>6}{'read':>14}{'written':>14}{'bytes r/w':>24}"]
        for a in self.args.values():
            lines.append(f"  {a.name:<16}{a.dtype:>6}{a.elements_read:>14,}"
                         f"{a.elements_written:>14,}"
                         f"{f'{a.bytes_read:,}/{a.bytes_written:,}':>24}")
        lines.append(f"  {'total':<16}{'':>6}{self.elements_read:>14,}{self.elements_written:>14,}"
                     f"{f'{self.bytes_read:,}/{self.bytes_written:,}':>24}")
        if self.dot_flops:
            lines.append(f"  tl.dot FLOPs: {self.dot_flops:,}")
        for a in self.args.values():
            if a.coverage is not None:
                lines.append(f"  coverage of {a.name}: {a.coverage}")
        if self.lines:
            lines.append(lines_table(self.lines))
        return "\n".join(lines)

    def __str__(self):
        return self.table()


def lines_table(rows, width=44):
    """Plain text of `LaunchRecord.lines`: one row per load, store and atomic line."""
    out = [f"  {'line':>5} {'kind':<6} {'arg':<10}{'elements':>12}{'sectors':>11}{'eff':>6}"
           f"{'req eff':>8}{'sec/req':>8}{'unique B':>13}{'reuse':>7}  source"]
    for r in rows:
        source = r["source"] if len(r["source"]) <= width else r["source"][:width - 3] + "..."
        out.append(f"  {r['line']:>5} {r['kind']:<6} {r['arg'][:10]:<10}{r['elements']:>12,}"
                   f"{r['sectors']:>11,}{r['efficiency']:>6.2f}{r['request_efficiency']:>8.2f}"
                   f"{r['sectors_per_request']:>8.1f}{r['unique_bytes']:>13,}"
                   f"{r['reuse']:>7.1f}  {source}")
    out.append("  (eff: bytes / (sectors x 32 B), sectors per program access; req eff and "
               "sec/req: warp requests along the block's last axis; reuse: total / unique "
               "bytes)")
    return "\n".join(out)


class Traffic(Observer):
    """Counts every access into the launch's record (always on)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.record = ctx.record

    def on_load(self, access):
        self.record.args[access.buf.name].loaded += access.count

    def on_store(self, access):
        self.record.args[access.buf.name].stored += access.count

    def on_atomic(self, access):
        self.record.args[access.buf.name].atomics += access.count

    def on_dot(self, a, b, flops):
        self.record.dot_flops += flops

    def mark(self):
        return ({n: (a.loaded, a.stored, a.atomics) for n, a in self.record.args.items()},
                self.record.dot_flops)

    def undo(self, token):
        counts, self.record.dot_flops = token
        for name, (loaded, stored, atomics) in counts.items():
            arg = self.record.args[name]
            arg.loaded, arg.stored, arg.atomics = loaded, stored, atomics


class Recording:
    """The launches recorded inside a `minitriton.record()` block."""

    def __init__(self):
        self.launches: list[LaunchRecord] = []

    def __len__(self):
        return len(self.launches)

    def __getitem__(self, i):
        return self.launches[i]

    def __iter__(self):
        return iter(self.launches)

    def _sum(self, attr):
        return sum(getattr(r, attr) for r in self.launches)

    elements_read = property(lambda self: self._sum("elements_read"))
    elements_written = property(lambda self: self._sum("elements_written"))
    bytes_read = property(lambda self: self._sum("bytes_read"))
    bytes_written = property(lambda self: self._sum("bytes_written"))
    dot_flops = property(lambda self: self._sum("dot_flops"))

    def table(self):
        return "\n".join(r.table() for r in self.launches)


@contextlib.contextmanager
def record():
    """Collect a `LaunchRecord` for every minitriton launch inside the `with` block."""
    rec = Recording()
    token = _RECORDERS.set(_RECORDERS.get() + (rec,))
    try:
        yield rec
    finally:
        _RECORDERS.reset(token)


def publish(launch_record):
    for rec in _RECORDERS.get():
        rec.launches.append(launch_record)
