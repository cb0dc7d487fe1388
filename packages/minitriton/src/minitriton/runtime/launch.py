"""`kernel[grid](*args)`: bind the arguments, build the address space, run the programs.

Binding follows Triton: parameters annotated `tl.constexpr` are compile-time values (they reach
the kernel as plain Python values); tensors become pointers; Python ints become int32 (int64 if
they do not fit), floats fp32, bools int1. Launch options (`num_warps`, `num_stages`...) are
accepted and recorded. If a program fails, every write of the launch is undone and the error
names the kernel, the program and the kernel line.
"""
from __future__ import annotations

import numbers
import time

import numpy as np

from .. import context, types as _t
from ..errors import LaunchError, MiniTritonError
from ..language.core import literal, tensor
from ..language.descriptors import tensor_descriptor
from ..memory import AddressSpace
from ..observe.traffic import LaunchRecord, publish  # the observe package registers them all
from ..settings import current_settings
from ..source import locate
from .executors import program_ids, run_lockstep, run_sequential

LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
                  "launch_cooperative_grid", "launch_pdl", "debug", "stream", "warmup",
                  "enable_reflect_ftz", "minitriton_settings")


def _is_array(x):
    if isinstance(x, np.ndarray):
        return True
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _is_descriptor(x):
    """A host TensorDescriptor, minitriton's or Triton's."""
    return type(x).__name__ == "TensorDescriptor" and hasattr(x, "block_shape") and \
        _is_array(getattr(x, "base", None))


def _bind(kernel, args, kwargs):
    # a launch option that is also a kernel parameter (the tutorials' `num_stages`) is both
    options = {k: (kwargs[k] if k in kernel.arg_names else kwargs.pop(k))
               for k in list(kwargs) if k in LAUNCH_OPTIONS}
    try:
        bound = kernel.signature.bind(*args, **kwargs)
    except TypeError as e:
        params = ", ".join(kernel.arg_names)
        raise LaunchError(f"wrong arguments for kernel `{kernel.__name__}({params})`: {e}") \
            from None
    bound.apply_defaults()
    return bound.arguments, options


def _resolve_grid(kernel, grid, named):
    if callable(grid):
        grid = grid(dict(named))
    if isinstance(grid, (int, np.integer)) or hasattr(grid, "__index__"):
        grid = (grid,)
    try:
        grid = tuple(int(g) for g in grid)
    except TypeError:
        raise LaunchError(f"kernel `{kernel.__name__}`: the grid must be a tuple of 1 to 3 ints "
                          f"or a function of the meta-parameters returning one, got {grid!r}") \
            from None
    if not 1 <= len(grid) <= 3 or any(g < 0 for g in grid):
        raise LaunchError(f"kernel `{kernel.__name__}`: invalid grid {grid}: 1 to 3 "
                          "non-negative sizes")
    return grid


def _kernel_value(kernel, name, value, is_constexpr, memory):
    """What a launch argument becomes inside the kernel."""
    if is_constexpr:
        if _is_array(value):
            raise LaunchError(f"kernel `{kernel.__name__}`: argument `{name}` is annotated "
                              "tl.constexpr but got a tensor")
        return value.value if isinstance(value, _t.constexpr) else value
    if _is_array(value):
        buf = memory.add(value, name)
        return tensor(np.array([buf.base], dtype=np.int64), _t.pointer_type(buf.dtype), [],
                      origin=buf.index)
    if _is_descriptor(value):
        base = _kernel_value(kernel, name, value.base, False, memory)
        return tensor_descriptor(base, [literal(int(d), _t.int32) for d in value.shape],
                                 [literal(int(s), _t.int64) for s in value.strides],
                                 [int(b) for b in value.block_shape], value.padding)
    if value is None or isinstance(value, (str, _t.dtype)):
        return value  # Triton treats these as constexprs
    if isinstance(value, (bool, np.bool_)):
        return literal(bool(value), _t.int1)
    if isinstance(value, numbers.Integral):
        ty = _t.literal_type(int(value))
        return literal(int(value), ty if ty is not _t.uint32 else _t.int64)
    if isinstance(value, numbers.Real):
        return literal(float(value), _t.float32)
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return _kernel_value(kernel, name, value.item(), False, memory)
    raise LaunchError(f"kernel `{kernel.__name__}`: argument `{name}` has unsupported type "
                      f"{type(value).__name__}; pass tensors, numbers, bools or constexprs")


def launch(kernel, grid, args, kwargs):
    named, options = _bind(kernel, args, dict(kwargs))
    settings = options.pop("minitriton_settings", None) or current_settings()
    constexpr_names = {kernel.arg_names[i] for i in kernel.constexprs}
    user_grid = _resolve_grid(kernel, grid, named)
    grid = user_grid + (1,) * (3 - len(user_grid))
    watchers = context.observer_classes(settings)
    memory = AddressSpace(float("inf") if any(w.needs_snapshots for w in watchers)
                          else settings.rollback_limit)
    values = [_kernel_value(kernel, n, v, n in constexpr_names, memory) for n, v in named.items()]
    record = LaunchRecord(kernel.__name__, user_grid,
                          {n: named[n] for n in kernel.arg_names if n in constexpr_names},
                          options, settings.executor)
    for buf in memory.buffers:
        record.add_argument(buf)
    ctx = context.LaunchContext(kernel.__name__, grid, memory, record, settings)
    fn = kernel.compiled
    start = time.perf_counter()
    token = context.enter(ctx)
    try:
        ctx.watch([w(ctx) for w in watchers])
        ids = program_ids(grid)
        if settings.executor == "sequential":
            run_sequential(ctx, fn, values, ids)
        else:
            run_lockstep(ctx, fn, values, ids)
        rerun = _Rerun(ctx, fn, values, ids)
        for observer in ctx.observers:
            observer.finish(rerun)
    except BaseException as e:
        kept = memory.undo_launch()
        locate(e, ctx)
        if kept and isinstance(e, MiniTritonError):
            e.message += (f"\n(memory of {', '.join(kept)} was not restored: larger than "
                          f"Settings.rollback_limit; writes of programs that ran before the "
                          f"error remain)")
            e.args = (e.message,)
        raise
    else:
        memory.commit_launch()
    finally:
        context.leave(token)
    record.seconds = time.perf_counter() - start
    publish(record)
    return record


class _Rerun:
    """Runs programs of the launch again, sequentially, with no observer watching (what an
    observer's `finish` gets: the order check re-runs the launch in a shuffled order)."""

    def __init__(self, ctx, fn, values, program_ids):
        self.ctx, self.fn, self.values, self.program_ids = ctx, fn, values, program_ids

    def __call__(self, ids):
        observers = self.ctx.observers
        self.ctx.watch([])
        try:
            run_sequential(self.ctx, self.fn, self.values, ids)
        finally:
            self.ctx.watch(observers)
