"""Write coverage (`Settings(coverage=True)`): which elements of each output the launch wrote.

A kernel that writes only part of an output allocated with `torch.empty` (a store mask that
drops the last columns, an offset that skips the first elements) leaves leftover memory in its
result on every backend, and nothing fails. After the launch, each argument stored to gets a
`WriteCoverage` in the launch record (`record.args[name].coverage`): how many elements of the
view passed in were written, and the first unwritten ranges (C order over the view's shape);
an argument written only partly draws a PartialWriteWarning. One bitmap per written argument.
"""
from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass

import numpy as np

from ..context import Observer
from ..errors import PartialWriteWarning
from .journal import Journal

_RANGES = 4  # unwritten ranges kept and shown


@dataclass
class WriteCoverage:
    """How much of one argument's view a launch wrote."""

    written: int  # elements of the view written (stored to or updated by an atomic)
    total: int  # elements of the view
    unwritten: list  # the first unwritten ranges [start, stop), C order over the view's shape
    unwritten_ranges: int  # how many unwritten ranges there are in all
    first_unwritten: tuple = None  # the index (in the view's shape) of the first one

    @property
    def complete(self):
        return self.written == self.total

    @classmethod
    def of(cls, written, shape):
        """From a bool per element of the view, in C order."""
        edges = np.diff(np.concatenate(([0], (~written).view(np.int8), [0])))
        starts, stops = np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0]
        first = None
        if starts.size:
            first = tuple(int(i) for i in np.unravel_index(int(starts[0]), shape)) \
                if shape else ()
        return cls(int(written.sum()), int(written.size),
                   [(int(a), int(b)) for a, b in zip(starts[:_RANGES], stops[:_RANGES])],
                   int(starts.size), first)

    def ranges_text(self):
        text = ", ".join(f"[{a}, {b})" for a, b in self.unwritten)
        return text + (f", ... ({self.unwritten_ranges} ranges)"
                       if self.unwritten_ranges > len(self.unwritten) else "")

    def __str__(self):
        if self.complete:
            return f"{self.written:,} of {self.total:,} written"
        return (f"{self.written:,} of {self.total:,} written; unwritten (C order) "
                f"{self.ranges_text()}")


class Coverage(Journal, Observer):
    setting = "coverage"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.written = {}  # buffer index -> bool per element of its storage

    def on_store(self, access):
        bitmap = self.written.get(access.buf.index)
        if bitmap is None:
            bitmap = self.written[access.buf.index] = np.zeros(access.buf.size, dtype=bool)
        self.set(bitmap, access.idx, True)

    on_atomic = on_store

    def finish(self, rerun):
        ctx = self.ctx
        for index, bitmap in self.written.items():
            buf = ctx.memory.buffers[index]
            shape = buf.shape if buf.shape is not None else (buf.view_hi - buf.view_lo,)
            coverage = WriteCoverage.of(bitmap[buf.view_index()], shape)
            ctx.record.args[buf.name].coverage = coverage
            if not coverage.complete:
                where = (f"; the first at index {coverage.first_unwritten}"
                         if len(shape) > 1 else "")
                filename, lineno = _caller()
                warnings.warn_explicit(
                    f"kernel `{ctx.kernel_name}` wrote {coverage.written:,} of the "
                    f"{coverage.total:,} elements of argument `{buf.name}` ({buf.description}); "
                    f"unwritten (C order over its shape): {coverage.ranges_text()}{where}. "
                    "They keep what memory held before (garbage after torch.empty, on every "
                    "backend): check the store's mask and offsets, or the grid.",
                    PartialWriteWarning, filename, lineno, registry=_WARNED)


_WARNED: dict = {}  # warnings' registry: the same message from the same line shows once


def _caller():
    """(file, line) of the innermost frame outside minitriton: the launch's caller."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("minitriton"):
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("<launch>", 0)
