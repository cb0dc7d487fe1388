"""What torch.compile did (lecture §10): graphs and graph breaks, recompilations, speed-up, and
the kernels Inductor generated.

    explain(fn, *args)             -> graphs, breaks and their reasons (torch._dynamo.explain)
    count_compiles(fn, inputs)     -> how many graphs a sequence of calls compiled, which calls
                                      triggered recompilation, and the guard that failed
    speedup(fn, *args)             -> eager vs compiled time (tritonlab.bench), compile time apart
    generated_code(fn, *args)      -> Inductor's source (Triton kernels on a GPU, C++ on a CPU)
    count_kernels(sources)         -> how many kernels of each kind that source holds

Dynamo's own log lines about what these functions report (the graph-break warning of
`.item()`, the recompilation reasons) are kept off stderr; `TORCH_LOGS=graph_breaks,recompiles`
shows them as well (with TORCH_LOGS set nothing is held back).
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from dataclasses import dataclass, field

import torch
from rich.table import Table

from . import bench
from .units import format_time


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


class _DropReported(logging.Filter):
    """Drops the records that say what this module reports itself: graph breaks (Dynamo warns
    about `.item()` in 11 lines) and recompilations."""

    def filter(self, record):
        name = record.name
        return not (name.endswith((".__graph_breaks", ".__recompiles"))
                    or record.getMessage().lstrip().startswith("Graph break"))


@contextlib.contextmanager
def _quiet_dynamo():
    """Keep Dynamo's log of graph breaks and recompilations off torch's stderr handlers while
    this module collects them; TORCH_LOGS in the environment turns this off."""
    if os.environ.get("TORCH_LOGS"):
        yield
        return
    drop = _DropReported()
    handlers = [h for name in ("torch", "torch._dynamo") for h in logging.getLogger(name).handlers]
    for h in handlers:
        h.addFilter(drop)
    try:
        yield
    finally:
        for h in handlers:
            h.removeFilter(drop)


def explain(fn, *args, **kwargs):
    """Graphs and graph breaks Dynamo makes of `fn(*args, **kwargs)`."""
    torch._dynamo.reset()
    with _quiet_dynamo():
        out = torch._dynamo.explain(fn)(*args, **kwargs)
    reasons = [_first_line(r.reason) for r in out.break_reasons]
    return ExplainResult(out.graph_count, out.graph_break_count, reasons,
                         [len(ops) for ops in out.ops_per_graph])


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

    # the guards that failed, by call: Dynamo hands them to guard_fail_fn (the same text as its
    # "recompiles" log, which other code in the process can redirect or silence)
    failed = {}

    def guard_failed(failure):
        failed.setdefault(current[0], []).append(re.sub(r"^\d+/\d+: ", "", failure.reason))

    cf = torch._dynamo.optimize(counting_backend, dynamic=dynamic,
                                guard_fail_fn=guard_failed)(fn)
    with _quiet_dynamo():
        for i, args in enumerate(inputs):
            args = args if isinstance(args, tuple) else (args,)
            if mark_dynamic is not None:
                torch._dynamo.mark_dynamic(args[mark_dynamic[0]], mark_dynamic[1])
            current[0] = i
            cf(*args)
    reasons = ["; ".join(failed[i]) for i in compiled_at[1:] if i in failed]
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
        return (f"eager {format_time(self.eager.median)}, compiled "
                f"{format_time(self.compiled.median)} ({self.ratio:.2f}x); compiling took "
                f"{format_time(self.compile_seconds)}")


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
    """(output, sources): `fn(*args)` and the code Inductor generated for it (`count_kernels`
    says how many kernels of each kind it holds)."""
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    out, sources = run_and_get_code(torch.compile(fn), *args)
    return out, sources


# Inductor's output module: on a GPU each Triton kernel's source holds one `@triton.jit`; on a
# CPU each C++ kernel is bound to a name, `cpp_fused_add_0 = async_compile.cpp_pybinding(...)`,
# which the call code then uses
_TRITON_KERNEL = re.compile(r"@triton\.jit\b")
_CPP_KERNEL = re.compile(r"^(\w+) = async_compile\.cpp(?:_pybinding)?\(", re.MULTILINE)


def count_kernels(sources):
    """{"Triton": n, "C++": m}: the kernels of each kind in Inductor's generated sources (kinds
    with none are left out; matmuls that stay with the BLAS library are no kernel of its)."""
    text = "\n".join(sources)
    counts = {"Triton": len(_TRITON_KERNEL.findall(text)),
              "C++": len(set(_CPP_KERNEL.findall(text)))}
    return {kind: n for kind, n in counts.items() if n}


def describe_kernels(counts):
    """'3 C++ kernels', '2 Triton kernels and 1 C++ kernel', or 'no kernels'."""
    parts = [f"{n} {kind} kernel" + ("" if n == 1 else "s") for kind, n in counts.items()]
    return " and ".join(parts) or "no kernels"
