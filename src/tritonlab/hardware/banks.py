"""Shared-memory bank conflicts (lecture §1): 32 banks of 4 bytes, one address per bank per
cycle; threads of a warp reading different words of one bank are serialised (same word:
broadcast, no conflict)."""
from __future__ import annotations

from collections import defaultdict

BANKS, BANK_BYTES = 32, 4


def conflict_degree(byte_addresses):
    """How many times the warp's access is serialised (1 = conflict-free)."""
    words = defaultdict(set)
    for a in byte_addresses:
        word = a // BANK_BYTES
        words[word % BANKS].add(word)
    return max((len(w) for w in words.values()), default=1)


def tile_column_read(column=0, width=32, padding=0, swizzle=False, itemsize=4):
    """Byte addresses when the 32 threads of a warp read one column of a width-wide tile (row
    stride width + padding); `swizzle` stores element (r, c) at column c XOR r."""
    stride = width + padding
    cols = [(column ^ r) % width if swizzle else column for r in range(32)]
    return [(r * stride + c) * itemsize for r, c in zip(range(32), cols)]
