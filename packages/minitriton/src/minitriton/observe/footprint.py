"""The unique footprint (`Settings(footprint=True)`): how many distinct elements of each
argument a launch read and wrote, for roofline bounds (a matmul reads each input many times
but needs it from DRAM about once). Costs one bitmap per argument and access kind."""
from __future__ import annotations

import numpy as np

from ..context import Observer


class Footprint(Observer):
    setting = "footprint"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.touched = {}  # (argument, "read" | "write") -> bool bitmap

    def _touch(self, access, kind):
        key = (access.buf.name, kind)
        bitmap = self.touched.get(key)
        if bitmap is None:
            bitmap = self.touched[key] = np.zeros(access.buf.size, dtype=bool)
        bitmap[access.idx] = True

    def on_load(self, access):
        self._touch(access, "read")

    def on_store(self, access):
        self._touch(access, "write")

    def finish(self, rerun):
        for arg in self.ctx.record.args.values():
            read, written = self.touched.get((arg.name, "read")), \
                self.touched.get((arg.name, "write"))
            arg.unique_read = 0 if read is None else int(read.sum())
            arg.unique_written = 0 if written is None else int(written.sum())
