"""What a launch needs of the GPU, as the simulator sees it: `ResourceWatcher`, the watcher of
`warmup`, the autotuner's trials and `minitriton.predicting` (its largest block, dots,
reductions, special-function lanes and dependent load rounds), which runtime/compiled.py turns
into registers, spills and shared memory and runtime/perf_model.py into a time."""
from __future__ import annotations

from .. import context
from ..source import kernel_site


class ResourceWatcher(context.Observer, check=False):
    """A watcher that notes the largest block, the dots, the reductions, the special
    functions' lanes and the dependent load rounds of a launch, for the resource estimates of
    warmup and the autotuner and for the performance model."""

    def __init__(self):
        self.reset()

    def reset(self):
        """Forget what was seen: the next launch starts afresh."""
        self.dots = []  # (a dtype, b dtype, M, N, K, flops)
        self.sites = {}  # the kernel lines of the dots, (file, line): its first dot's tuple
        self.reductions = []  # (elements of the result, bytes per element)
        self.max_block = 1  # elements of the largest block loaded or stored
        self.special = 0  # lanes of special functions (exp, log, erf, libdevice...) computed
        self.rounds = 1  # the most dependent load rounds one program made (`on_load`)
        self.tma = False  # some tile came through a tensor descriptor (`on_descriptor`)
        self._group, self._fresh, self._group_rounds, self._spans = None, True, 0, {}

    @property
    def dot_sites(self):
        """The distinct tl.dot lines that ran, the first dot of each, in the order they first
        ran: their results live together (compiled.estimate)."""
        return list(self.sites.values())

    def on_dot(self, a, b, flops):
        dot = (a.dtype, b.dtype, a.shape[-2], b.shape[-1], a.shape[-1], flops)
        self.dots.append(dot)
        self.sites.setdefault(kernel_site(), dot)

    def on_reduce(self, x, axis, kind, result):
        self.reductions.append((max(1, getattr(result, "numel", 1)), x.dtype.itemsize))
        self._program_events()
        self._fresh = True
        return result

    def on_math(self, name, elements):
        self.special += elements

    def on_descriptor(self, op):
        """A descriptor load: on the GPU a TMA copy into shared memory, from where the
        tensor cores read the dot operands (compiled.estimate's TMA registers)."""
        self.tma = self.tma or op == "load"

    def _program_events(self):
        """Start counting load rounds again when other programs run (a lockstep group)."""
        pids = getattr(context.active(), "pids", None)
        if pids is not self._group:
            self._group, self._fresh, self._group_rounds, self._spans = pids, True, 0, {}

    def on_load(self, access):
        """A load of data its programs have not loaded before (beyond the span of its
        buffer they read so far, and not one block that every program shares) that follows
        the programs' start, a reduction or a store begins a round: the programs waited for
        what came before and now wait for memory again (a row loop's next row). A second
        pass over rows already read (L1 and L2 keep them) and software-pipelined dot loops
        (their loads run stages ahead) add none."""
        self._program_events()
        if self.dots or access.repeat > 1:
            return
        idx = access.idx
        if isinstance(idx, slice):
            lo, hi = idx.start, idx.stop
        elif idx.size:
            lo, hi = int(idx.min()), int(idx.max()) + 1
        else:
            return
        seen = self._spans.get(id(access.buf))
        self._spans[id(access.buf)] = (lo, hi) if seen is None else \
            (min(lo, seen[0]), max(hi, seen[1]))
        if self._fresh and (seen is None or lo < seen[0] or hi > seen[1]):
            self._group_rounds += 1
            self.rounds = max(self.rounds, self._group_rounds)
            self._fresh = False

    def on_store(self, access):
        self._program_events()
        self._fresh = True

    on_atomic = on_store

    def mark(self):
        return len(self.dots), len(self.reductions), self.special

    def undo(self, token):
        del self.dots[token[0]:]
        del self.reductions[token[1]:]
        self.special = token[2]

    def finish(self, rerun):
        self.max_block = rerun.ctx.max_block
