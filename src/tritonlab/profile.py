"""Where the time goes (lecture §3): `profile(fn)` over torch.profiler, and `count_ops(fn)`.

`profile` returns a report with one row per operator (aten::...) and per device kernel
(cuBLAS/CUTLASS/Triton kernels on a GPU), with call counts and times, sortable, exportable to CSV
and to a Chrome trace (chrome://tracing or Perfetto). `count_ops` answers "how many kernels?":
the manual GeLU launches 6 aten::mul, 2 aten::add and 1 aten::tanh, the built-in one aten::gelu.
Both keep the profiler's own `USDT: ... profiler_start/stop` lines off stderr.

`memory_lines(fn)` runs Triton kernels on minitriton with `Settings(sectors=True)` and returns
their launch records: for every load and store line, the 32-byte sectors it fetches, its
coalescing efficiency and the reuse across programs (`record.lines`, minitriton's
observe/sectors.py); `lines_table(record)` shows one as a table.
"""
from __future__ import annotations

import collections
import contextlib
import csv
import functools
import os
import re
import sys
import tempfile
import warnings
from dataclasses import dataclass

import minitriton
import torch
from rich.table import Table
from torch.profiler import ProfilerActivity
from torch.profiler import profile as _torch_profile

from .units import format_time

SORT_KEYS = ("device_time_us", "cpu_time_us", "calls", "name")
# torch's C++ profiler (Kineto) writes a line like this to fd 2 at every start and stop:
#   USDT:2026-12-01 21:03:35 21530:21530 SyncActivityProfilerHandler.cpp:52] profiler_start
_PROFILER_CHATTER = re.compile(r"^USDT:.*\] profiler_(start|stop)\s*$")


@dataclass
class ProfileRow:
    name: str
    kind: str  # "op" (a PyTorch operator) or "kernel" (a device kernel)
    calls: int
    cpu_time_us: float
    device_time_us: float


class ProfileReport:
    def __init__(self, prof, rows):
        self._prof = prof
        self.rows = rows

    def sorted(self, by="device_time_us"):
        if by not in SORT_KEYS:
            raise ValueError(f"sort by one of {SORT_KEYS}, not {by!r}")
        reverse = by != "name"
        return sorted(self.rows, key=lambda r: getattr(r, by), reverse=reverse)

    def ops(self):
        return [r for r in self.rows if r.kind == "op"]

    def kernels(self):
        return [r for r in self.rows if r.kind == "kernel"]

    def table(self, by="device_time_us", limit=15, title="profile"):
        t = Table(title=title)
        for col in ("name", "kind", "calls", "CPU time", "device time"):
            t.add_column(col, justify="left" if col in ("name", "kind") else "right")
        for r in self.sorted(by)[:limit]:
            t.add_row(r.name[:70], r.kind, str(r.calls), format_time(r.cpu_time_us / 1e6),
                      format_time(r.device_time_us / 1e6))
        return t

    def to_csv(self, path):
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["name", "kind", "calls", "cpu_time_us", "device_time_us"])
            for r in self.rows:
                w.writerow([r.name, r.kind, r.calls, r.cpu_time_us, r.device_time_us])

    def export_chrome_trace(self, path):
        self._prof.export_chrome_trace(str(path))
        return path


# torch's profiler warns, once per process on CUDA, that it "clears events at the end of each
# cycle": it speaks of profiling schedules with several cycles; these functions profile one
# call in one cycle and report all of its events
_ONE_CYCLE = "Warning: Profiler clears events at the end of each cycle"


def _one_cycle(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_ONE_CYCLE, category=UserWarning)
            return fn(*args, **kwargs)
    return wrapper


@contextlib.contextmanager
def _quiet_profiler():
    """Drop the profiler's start/stop lines from stderr, keep everything else written there.

    They come from C++ straight to file descriptor 2, past `sys.stderr`, so fd 2 itself is
    pointed at a temporary file while the profiler runs; afterwards the file's other lines (real
    warnings) are written to stderr."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no fd 2 to redirect (a closed or detached stderr)
        yield
        return
    with tempfile.TemporaryFile(mode="w+b") as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            kept = [line for line in caught.read().decode(errors="replace").splitlines(True)
                    if not _PROFILER_CHATTER.match(line)]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


def _activities():
    acts = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        acts.append(ProfilerActivity.CUDA)
    return acts


def _device_time(evt):
    for attr in ("self_device_time_total", "self_cuda_time_total"):
        if hasattr(evt, attr):
            return float(getattr(evt, attr))
    return 0.0


@_one_cycle
def profile(fn, warmup=1, activities=None):
    """Run `fn()` (after `warmup` untimed calls) under torch.profiler and summarise."""
    for _ in range(warmup):
        fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    with _quiet_profiler(), _torch_profile(activities=activities or _activities()) as prof:
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    rows = []
    for evt in prof.key_averages():
        is_kernel = str(getattr(evt, "device_type", "")).endswith(("CUDA", "XPU", "MPS"))
        rows.append(ProfileRow(evt.key, "kernel" if is_kernel else "op", evt.count,
                               float(evt.self_cpu_time_total), _device_time(evt)))
    return ProfileReport(prof, rows)


@_one_cycle
def count_ops(fn, prefix="aten::"):
    """How many times each top-level operator runs in one call of `fn()` (operators called by
    other operators, e.g. the aten::empty inside aten::mul, are not counted)."""
    with _quiet_profiler(), _torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    counts = collections.Counter()
    for evt in prof.events():
        if evt.name.startswith(prefix) and _is_top_level(evt, prefix):
            counts[evt.name] += 1
    return counts


def describe_ops(counts):
    """Counter({'aten::mul': 6, 'aten::add': 2}) -> '6 aten::mul, 2 aten::add'."""
    return ", ".join(f"{n} {name}" for name, n in counts.most_common()) or "none"


def _is_top_level(evt, prefix):
    parent = evt.cpu_parent
    while parent is not None:
        if parent.name.startswith(prefix):
            return False
        parent = parent.cpu_parent
    return True


def memory_lines(fn):
    """The minitriton launch records of `fn()`, each with its memory insight per kernel line
    (`record.lines`); `tl.dot` sums with NumPy (Settings.exact_dot off): only the memory counts."""
    with minitriton.configure(sectors=True, exact_dot=False), minitriton.record() as rec:
        fn()
    return list(rec)


def lines_table(record, width=40):
    """A table of one launch's memory insight per kernel line (`width`: of the source)."""
    t = Table(title=f"{record.kernel}: grid {record.grid} = {record.num_programs} programs, "
                    "memory per kernel line",
              caption="eff: useful bytes / (sectors x 32 B), the distinct sectors of each "
                      "program's access; warp: requests of 32 threads along the block's last "
                      "axis, a vector of up to 16 B each; reuse: total / unique bytes (what an "
                      "L2 could serve again)")
    for col in ("line", "kind", "arg", "elements", "sectors", "sec/access", "eff", "sec/req",
                "warp eff", "unique B", "reuse", "source"):
        t.add_column(col, justify="left" if col in ("kind", "arg", "source") else "right",
                     no_wrap=True, overflow="ellipsis",
                     max_width=width if col == "source" else None)
    for r in record.lines or ():
        t.add_row(str(r["line"]), r["kind"], r["arg"], f"{r['elements']:,}",
                  f"{r['sectors']:,}", f"{r['sectors_per_access']:.1f}",
                  f"{r['efficiency']:.3f}", f"{r['sectors_per_request']:.1f}",
                  f"{r['request_efficiency']:.3f}", f"{r['unique_bytes']:,}",
                  f"{r['reuse']:.1f}", r["source"])
    return t
