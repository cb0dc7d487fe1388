"""The two executors: sequential (one program at a time) and lockstep (all programs at once).

Lockstep runs a chunk of programs through the kernel once, every value carrying a leading
program axis. When Python control flow needs a scalar that differs between the programs of the
chunk (`if`, `while`, a loop bound depending on `program_id` or on a loaded value, an atomic
steering a spin lock), the chunk's writes are undone and its programs are re-run in groups that
agree on that decision, lowest program ids first, recursively. For kernels whose programs do not
communicate through memory, the result equals the sequential one; racy kernels lose updates as
on a GPU.
"""
from __future__ import annotations

import numpy as np

from ..context import Divergence

BYTES_PER_LANE = 8 * 32  # per element of the largest block: float64/int64, ~32 live temporaries
FIRST_CHUNK = 4  # programs run together before the block size is known


def program_ids(grid, order=None):
    """All program ids (N, 3) of a grid, axis 0 fastest, or in the given permutation."""
    gx, gy, gz = grid
    z, y, x = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
    ids = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1).astype(np.int32)
    return ids if order is None else ids[order]


def _flush(ctx):
    """Print what the programs printed, program by program (as the sequential executor would)."""
    for _, line in sorted(ctx.output, key=lambda item: item[0]):
        print(line)
    ctx.output.clear()


def run_sequential(ctx, fn, values, ids):
    for row in range(len(ids)):
        ctx.pids = ids[row:row + 1]
        fn(*values)
        _flush(ctx)


def _run_group(ctx, fn, values, ids):
    """Run programs `ids` together, splitting them wherever their control flow diverges."""
    pending = [ids]
    while pending:
        group = pending.pop(0)
        ctx.pids = group
        mark = ctx.mark()
        try:
            fn(*values)
        except Divergence as d:
            ctx.undo(mark)
            _, first, inverse = np.unique(d.decisions, return_index=True, return_inverse=True)
            pending = [group[inverse == k] for k in np.argsort(first)] + pending
            continue
        ctx.commit(mark)
        _flush(ctx)


def run_lockstep(ctx, fn, values, ids):
    ctx.memory.journaling = True
    # the first chunk sizes the next ones; it holds more than one program so that two
    # programs racing on the same memory lose updates together, as on a GPU
    start, chunk = 0, FIRST_CHUNK
    while start < len(ids):
        group = ids[start:start + chunk]
        _run_group(ctx, fn, values, group)
        start += len(group)
        per_program = max(ctx.max_block, 1) * BYTES_PER_LANE
        chunk = int(max(1, min(len(ids), ctx.settings.chunk_bytes // per_program)))
