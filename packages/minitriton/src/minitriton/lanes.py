"""The forms an access's element offsets take short of an array (memory.AddressSpace.resolve
makes them, context.Access reads and writes through them): a one-base shift (`Shifted`),
evenly spaced rows of consecutive elements (`Rows`); and `all_true`, the test of a mask that
may be a view broadcast along the programs or of one value."""
from __future__ import annotations

import numpy as np


def all_true(arr):
    """arr.all(), at once for a view of one value (an all-true mask of an outer shape) and
    along the programs for a mask the same in every program (a view broadcast along them)."""
    if arr.size and not any(arr.strides):
        return bool(arr.flat[0])
    if arr.ndim and not arr.strides[0]:
        return bool(arr[0].all())
    return bool(arr.all())


class Shifted:
    """The element offsets `start + offsets` of an access, kept apart (`offsets` 1-D, none
    negative, every sum inside the storage): a load reads them from the storage shifted by
    `start`, without the summed array an observer asks for (`offsets()`)."""

    __slots__ = ("start", "_offsets")

    def __init__(self, start, offsets):
        self.start, self._offsets = start, offsets

    @property
    def size(self):
        return self._offsets.size

    def offsets(self):
        return np.add(self._offsets, self.start)

    def take(self, flat):
        # inside the storage (resolve's bounds), so no bounds check: mode="wrap" skips it
        return flat[self.start:].take(self._offsets, mode="wrap")


class Rows:
    """The element offsets of a masked access as `rows` runs of `n` consecutive elements, the
    first at `start`, each `step` after the one before (memory._resolve_rows), the same block
    lanes `cols` (a boolean block) active in every row: read and written as a strided view."""

    __slots__ = ("start", "step", "rows", "n", "cols")

    def __init__(self, start, step, rows, n, cols):
        self.start, self.step, self.rows, self.n = start, step, rows, n
        lanes = np.flatnonzero(cols)
        self.cols = slice(int(lanes[0]), int(lanes[0]) + n) if \
            int(lanes[-1]) - int(lanes[0]) == n - 1 else lanes

    @property
    def size(self):
        return self.rows * self.n

    def offsets(self):
        firsts = self.start + self.step * np.arange(self.rows, dtype=np.int64)
        return (firsts[:, None] + np.arange(self.n, dtype=np.int64)).reshape(-1)

    def view(self, flat):
        """(rows, n): the accessed elements of `flat`, a view (overlapping rows where step < n)."""
        item = flat.itemsize
        return np.lib.stride_tricks.as_strided(flat[self.start:], (self.rows, self.n),
                                               (self.step * item, item))

    def disjoint(self):
        return self.step >= self.n or self.rows == 1
