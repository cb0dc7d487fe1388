"""The order check (`Settings(order=True)`): run the launch a second time, sequentially in a
shuffled order (seeded by `Settings.seed`), and compare every output. On a GPU the programs of
a launch run in any order, so a result that depends on it is a bug."""
from __future__ import annotations

import numpy as np

from ..context import Observer
from ..errors import OrderError


def compare_outputs(expected, actual):
    """'' if two versions of an output agree (floats to a few ulps: atomics reorder sums)."""
    if expected.dtype.kind in "fV":
        e, a = expected.astype(np.float64), actual.astype(np.float64)
        scale = np.nanmax(np.abs(e)) if e.size and np.isfinite(e).any() else 1.0
        same = np.isclose(a, e, rtol=1e-5, atol=1e-6 * scale, equal_nan=True)
    else:
        same = expected == actual
    if same.all():
        return ""
    bad = np.nonzero(~same)[0]
    shown = ", ".join(f"{int(i)}: {expected[i]} vs {actual[i]}" for i in bad[:4])
    return f"at {bad.size} element(s) [{shown}{', ...' if bad.size > 4 else ''}]"


class Order(Observer):
    setting = "order"
    needs_snapshots = True  # the re-run starts from the memory the launch started from

    def finish(self, rerun):
        ctx = self.ctx
        written = [b for b in ctx.memory.buffers if b.snapshot is not None]
        results = {b.name: b.flat.copy() for b in written}
        for b in written:
            b.flat[...] = b.snapshot
        ids = rerun.program_ids
        rerun(ids[np.random.default_rng(ctx.settings.seed).permutation(len(ids))])
        for b in written:
            report = compare_outputs(results[b.name], b.flat)
            b.flat[...] = results[b.name]
            if report:
                raise OrderError(
                    f"the result depends on the order in which programs run: argument "
                    f"`{b.name}` differs between program-id order and a shuffled order (seed "
                    f"{ctx.settings.seed}) {report}.\nhint: programs of one launch run in any "
                    "order on a GPU; a program must not read what another program of the same "
                    "launch writes (use a second launch, or atomics)")
