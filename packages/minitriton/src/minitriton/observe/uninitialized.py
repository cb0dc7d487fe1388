"""The uninitialized-read check (`Settings(uninitialized=("y_ptr",))`): the named outputs are
poisoned before the launch (NaN for floats, the minimum value for ints) and loading an element
of them that no program has written raises UninitializedReadError."""
from __future__ import annotations

import numpy as np

from ..context import Observer
from ..errors import LaunchError, UninitializedReadError
from .journal import Journal


def poison_value(dtype):
    if dtype.kind in "fV" and dtype.kind != "b":
        try:
            return np.array(np.nan, dtype=dtype)
        except (ValueError, TypeError):
            pass
    if dtype == np.bool_:
        return np.array(True)
    return np.array(np.iinfo(dtype).min, dtype=dtype)


class Uninitialized(Journal, Observer):
    setting = "uninitialized"
    per_program = True
    priority = -1  # a read of poison is reported before anything else about that read

    def __init__(self, ctx):
        super().__init__(ctx)
        memory = ctx.memory
        self.written = {}  # buffer index -> bool per element of the storage: not poison
        names = {b.name: b for b in memory.buffers}
        for name in ctx.settings.uninitialized:
            if name not in names:
                raise LaunchError(f"Settings.uninitialized names `{name}`, which is not a tensor "
                                  f"argument of kernel `{ctx.kernel_name}` "
                                  f"(tensor arguments: {', '.join(names) or 'none'})")
            buf = names[name]
            memory.before_write(buf, None)
            buf.flat[buf.view_index()] = poison_value(buf.flat.dtype)  # the view, not all
            # of its storage (other arguments may be views of it)
            written = self.written[buf.index] = np.ones(buf.size, dtype=bool)
            written[buf.view_index()] = False

    def on_load(self, access):
        written = self.written.get(access.buf.index)
        if written is None:
            return
        idx = access.offsets()
        if written[idx].all():
            return
        bad = ~written[idx]
        _, rows = self.ctx.programs(access.lane_mask())
        row = rows[np.argmax(bad)]
        bad &= rows == row  # the programs run together: the count and offsets of the one named
        offsets = idx[bad]
        err = UninitializedReadError(
            f"load of argument `{access.buf.name}` reads {offsets.size} element(s) that no "
            f"program has written (poisoned by Settings.uninitialized), at offsets "
            f"{[int(o) - access.buf.view_lo for o in offsets[:8]]}.\nhint: the kernel reads "
            "its output before writing it, or another program's part of it, or past what it "
            "writes")
        err.failing_row = int(row)
        err.buffer, err.bad_offsets = access.buf, np.unique(offsets)
        raise err

    def on_store(self, access):
        written = self.written.get(access.buf.index)
        if written is not None:
            self.set(written, access.offsets(), True)

    def on_atomic(self, access):
        if access.buf.index in self.written:
            self.on_load(access)
            self.on_store(access)
