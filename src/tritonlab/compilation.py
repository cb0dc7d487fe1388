"""What torch.compile did (lecture §10): graphs and graph breaks, recompilations, speed-up, and
the kernels Inductor generated.

    explain(fn, *args)             -> graphs, breaks and their reasons (torch._dynamo.explain)
    count_compiles(fn, inputs)     -> how many graphs a sequence of calls compiled, which calls
                                      triggered recompilation, and the guard that failed
    speedup(fn, *args)             -> eager vs compiled time (tritonlab.bench), compile time apart
    generated_code(fn, *args)      -> Inductor's source (Triton kernels on a GPU, C++ on a CPU)
"""
from __future__ import annotations

import contextlib
import logging
import re
import time
from dataclasses import dataclass, field

import torch
from rich.table import Table

from . import bench


@dataclass
class ExplainResult:
    graphs: int
    graph_breaks: int
    break_reasons: list
    ops_per_graph: list

    def table(self, title="torch._dynamo.explain"):
        t = Table(title=title)
        t.add_column("graphs", justify="right")
        t.add_column("graph breaks", justify="right")
        t.add_column("ops per graph", justify="right")
        t.add_column("why it broke")
        t.add_row(str(self.graphs), str(self.graph_breaks), str(self.ops_per_graph),
                  "\n".join(self.break_reasons) or "-")
        return t


def _first_line(reason):
    return str(reason).strip().splitlines()[0]


def explain(fn, *args, **kwargs):
    """Graphs and graph breaks Dynamo makes of `fn(*args, **kwargs)`."""
    torch._dynamo.reset()
    out = torch._dynamo.explain(fn)(*args, **kwargs)
    reasons = [_first_line(r.reason) for r in out.break_reasons]
    return ExplainResult(out.graph_count, out.graph_break_count, reasons,
                         [len(ops) for ops in out.ops_per_graph])


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _recompile_log():
    handler = _Capture()
    logger = logging.getLogger("torch._dynamo")
    torch._logging.set_logs(recompiles=True)
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        torch._logging.set_logs()


@dataclass
class CompileReport:
    calls: int
    compiles: int
    triggered_by: list  # index of the call that compiled each graph
    reasons: list = field(default_factory=list)  # the failed guard of each recompilation

    def table(self, title="compilations"):
        t = Table(title=title)
        t.add_column("call", justify="right")
        t.add_column("what happened")
        for i, call in enumerate(self.triggered_by):
            why = "first compilation" if i == 0 else (self.reasons[i - 1]
                                                      if i - 1 < len(self.reasons) else "")
            t.add_row(str(call), why)
        return t


def count_compiles(fn, inputs, backend="eager", dynamic=None, mark_dynamic=None):
    """Call a fresh `torch.compile(fn)` on each input (a tuple of arguments or one tensor) and
    report the compilations. `backend="eager"` compiles nothing but still counts graphs, which
    keeps this fast; pass "inductor" for the real thing. `mark_dynamic=(arg, dim)` marks that
    dimension of that argument dynamic before each call."""
    torch._dynamo.reset()
    compiled_at, current = [], [0]

    def counting_backend(gm, example_inputs):
        compiled_at.append(current[0])
        if backend == "eager":
            return gm.forward
        from torch._dynamo.backends.registry import lookup_backend
        return lookup_backend(backend)(gm, example_inputs)

    cf = torch.compile(fn, backend=counting_backend, dynamic=dynamic)
    with _recompile_log() as messages:
        for i, args in enumerate(inputs):
            args = args if isinstance(args, tuple) else (args,)
            if mark_dynamic is not None:
                torch._dynamo.mark_dynamic(args[mark_dynamic[0]], mark_dynamic[1])
            current[0] = i
            cf(*args)
    reasons = []
    for m in messages:
        failures = re.findall(r"- \d+/\d+: (.*)", m)
        if failures:
            reasons.append("; ".join(failures))
    return CompileReport(len(inputs), len(compiled_at), compiled_at, reasons)


@dataclass
class Speedup:
    eager: bench.BenchResult
    compiled: bench.BenchResult
    compile_seconds: float

    @property
    def ratio(self):
        return self.eager.median / self.compiled.median

    def __str__(self):
        return (f"eager {self.eager.median * 1e3:.3f} ms, compiled {self.compiled.median * 1e3:.3f}"
                f" ms ({self.ratio:.2f}x); compiling took {self.compile_seconds:.1f} s")


def speedup(fn, *args, trials=10, warmup=3, device=None, **compile_kwargs):
    """Eager against `torch.compile(fn)` on the same inputs; the first compiled call (which
    compiles) is timed apart and excluded from the comparison."""
    device = device or (args[0].device.type if args and hasattr(args[0], "device") else None)
    compiled = torch.compile(fn, **compile_kwargs)
    sync = bench.synchronizer(device or bench.default_device())
    t0 = time.perf_counter()
    compiled(*args)
    if sync:
        sync()
    compile_seconds = time.perf_counter() - t0
    eager = bench.benchmark(lambda: fn(*args), trials=trials, warmup=warmup, device=device,
                            label="eager")
    comp = bench.benchmark(lambda: compiled(*args), trials=trials, warmup=warmup, device=device,
                           label="compiled")
    return Speedup(eager, comp, compile_seconds)


def generated_code(fn, *args):
    """(output, sources): the code Inductor generated for `fn(*args)`, and how many Triton
    kernels it holds (`@triton.jit` functions; C++ kernels on a CPU)."""
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    out, sources = run_and_get_code(torch.compile(fn), *args)
    return out, sources


def count_triton_kernels(sources):
    return sum(len(re.findall(r"@triton\.jit", s)) for s in sources)
