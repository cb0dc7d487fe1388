"""`kernel[grid](*args)`: bind the arguments, build the address space, run the programs.

Binding follows Triton: parameters annotated `tl.constexpr` are compile-time values (they reach
the kernel as plain Python values); tensors become pointers; Python ints become int32 (int64 if
they do not fit), floats fp32, bools int1. Launch options (`num_warps`, `num_stages`...) are
accepted and recorded (`LaunchRecord.options`). What Triton on a GPU refuses is refused here,
saying what to write instead: a grid that is not a tuple (`kernel[1]`), and, where minitriton
stands in for `triton` (the runner, install_as_triton), a NumPy array beside torch tensors.

If a program fails, every write of the launch is undone and the error names the kernel, the
program and the kernel line; observers that keep a record of what ran (the trace) hear of it
first (`stopped`), and the trace of the failed launch rides on the error (`err.trace`). It
leaves with the user's frames only, the kernel's lines and the user's code
(source.user_frames; MINITRITON_FULL_TRACEBACK=1 keeps minitriton's frames too, for its
developers). `warmup` compiles and binds without launching (it runs the first program
once, its writes undone, to see the block sizes that `CompiledKernel`'s resource estimates come
from).
"""
from __future__ import annotations

import contextlib
import contextvars
import io
import linecache
import numbers
import sys
import time
import warnings

import numpy as np

from .. import context, types as _t
from ..errors import CompilationError, LaunchError, MiniTritonError, OutOfBoundsError
from ..language import arith
from ..language.core import literal, tensor
from ..language.descriptors import tensor_descriptor
from ..language.experimental import descriptor_argument
from ..bounds import outside_view_message
from ..errors import OutsideViewWarning
from ..host import as_numpy
from ..memory import AddressSpace
from ..observe.traffic import LaunchRecord, publish  # the observe package registers them all
from ..settings import current_settings
from ..source import (PYTHON_ERRORS, as_compilation_error, full_traceback, kernel_frame, locate,
                      user_frames)
from .compiled import CompiledKernel
from .resources import ResourceWatcher
from .executors import program_ids, run_lockstep, run_sequential
from .heap import keep_heap

# Triton 3.6's launch keywords: its CUDA backend options (CUDAOptions) and the launcher's own
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
                  "enable_reflect_ftz", "launch_cooperative_grid", "launch_pdl", "clc",
                  "extern_libs", "instrumentation_mode", "ir_override", "ptx_version",
                  "ptx_options", "sanitize_overflow", "max_num_imprecise_acc_default",
                  "default_dot_input_precision", "allowed_dot_input_precisions",
                  "supported_fp8_dtypes", "arch", "backend_name", "warp_size", "debug", "stream",
                  "warmup", "minitriton_settings")
_WATCHERS: contextvars.ContextVar = contextvars.ContextVar("minitriton_watchers", default=())


_SAMPLE: contextvars.ContextVar = contextvars.ContextVar("minitriton_sample", default=0)


@contextlib.contextmanager
def sampling(programs):
    """Launches in this block run only `programs` of their grid's programs (0: all), evenly
    spread over the launch order, the first and the last included; `LaunchRecord.sampled`
    says so and the counts are the sample's. What the autotuner's trials use: counts per
    program, not results."""
    token = _SAMPLE.set(int(programs))
    try:
        yield
    finally:
        _SAMPLE.reset(token)


_SCALED: contextvars.ContextVar = contextvars.ContextVar("minitriton_scaled", default=None)


@contextlib.contextmanager
def scaling():
    """Yields a one-element list that collects, for the sampled launches in the block, the
    seconds their whole grids would have added: each one's run time (compilation and argument
    checks excluded) times (programs - sampled) / sampled. The `--small` benchmarks' estimate
    of a call's full time; an upper bound for the lockstep executor, whose whole grid shares
    per-operation costs that a sample pays alone."""
    extra = [0.0]
    token = _SCALED.set(extra)
    try:
        yield extra
    finally:
        _SCALED.reset(token)


def _sample(ids, record):
    """The programs to run: all of `ids`, or an even sample of them under `sampling`."""
    want = _SAMPLE.get()
    if not want or len(ids) <= want:
        return ids
    pick = np.unique(np.linspace(0, len(ids) - 1, want).round().astype(np.int64))
    record.sampled = (len(pick), len(ids))
    return ids[pick]

@contextlib.contextmanager
def watching(*watchers):
    """Every launch inside the block is also watched by these (objects with the Observer
    protocol's methods, not registered as checks: the autotuner's and warmup's probes)."""
    token = _WATCHERS.set(_WATCHERS.get() + watchers)
    try:
        yield
    finally:
        _WATCHERS.reset(token)


def _is_array(x):
    if isinstance(x, np.ndarray):
        return True
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _pointer_carrier(x):
    """An object that passes as a pointer through `data_ptr()` without being a tensor (Triton's
    TensorWrapper, libraries' strided wrappers); its element type from its `dtype`."""
    return not isinstance(x, type) and callable(getattr(x, "data_ptr", None)) and \
        hasattr(x, "dtype")


def _element_type(name, dtype):
    """The Triton type of a pointer carrier's `dtype` (a Triton, torch or NumPy dtype)."""
    if isinstance(dtype, _t.dtype):
        return dtype
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(dtype, torch.dtype):
        return _t.from_numpy(as_numpy(torch.empty(0, dtype=dtype), name).dtype)
    try:
        return _t.from_numpy(dtype)
    except TypeError:
        raise LaunchError(f"argument `{name}`: cannot tell the element type of its dtype "
                          f"{dtype!r}") from None


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
    given = grid
    if callable(grid):
        grid = grid(dict(named))
    try:
        len(grid)
    except TypeError:
        raise _not_a_tuple(kernel, given, grid) from None
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


def _not_a_tuple(kernel, given, grid):
    """The error for a grid that is a single number: Triton on a GPU takes `len(grid)`."""
    name = kernel.__name__
    if callable(given):
        fix = ("return a tuple from the grid function, e.g. `lambda meta: "
               "(triton.cdiv(n, meta['BLOCK']),)` (note the comma)")
    else:
        fix = f"write `{name}[({grid!r},)](...)` (note the comma)"
    return LaunchError(
        f"kernel `{name}`: the grid {'function returned' if callable(given) else 'is'} "
        f"{grid!r} ({type(grid).__name__}), not a tuple; Triton on a GPU takes a tuple of 1 to "
        f"3 ints (or a function of the meta-parameters returning one) and stops at this "
        f"(TypeError: object of type '{type(grid).__name__}' has no len()): {fix}")


def _stands_for_triton():
    """Whether minitriton is `triton` in this process (the runner, install_as_triton): the
    program is written for Triton, and a GPU's rules about its arguments apply."""
    return sys.modules.get("triton.language") is sys.modules.get(
        __name__.rsplit(".", 2)[0] + ".language")


def _check_host_arrays(kernel, named):
    """A NumPy array beside torch tensors in a launch, in a program written for Triton: on a GPU
    Triton stops at it ("failed to specialize argument of type: numpy.ndarray"), host memory
    that a kernel cannot reach. minitriton imported as itself takes NumPy arrays (its documented
    NumPy path), and so does a program that passes NumPy arrays alone (a NumPy program under the
    runner, which cannot be meant for a GPU)."""
    arrays = [n for n, v in named.items() if isinstance(v, np.ndarray)]
    tensors = [n for n, v in named.items() if _is_array(v) and not isinstance(v, np.ndarray)]
    if not arrays or not tensors or not _stands_for_triton():
        return
    named_arrays = ", ".join(f"`{n}`" for n in arrays)
    named_tensors = ", ".join(f"`{n}`" for n in tensors)
    what = "are NumPy arrays" if len(arrays) > 1 else "is a NumPy array"
    raise LaunchError(
        f"kernel `{kernel.__name__}`: {named_arrays} {what}, beside torch tensors "
        f"({named_tensors}): a GPU launch cannot take host NumPy memory (Triton stops with "
        "\"TypeError: failed to specialize argument of type: numpy.ndarray\"). Pass a torch "
        "tensor on the device Triton's driver gives, `DEVICE = "
        "triton.runtime.driver.active.get_active_torch_device()`: `torch.from_numpy(a)."
        "to(DEVICE)` (read results back with `.cpu().numpy()`), or make it with torch, e.g. "
        "`torch.empty_like(x)`. (minitriton takes NumPy arrays where it is imported as itself, "
        "`import minitriton as triton`; here it stands in for `triton`.)")


def _specialized_one(kernel, name, value):
    """Triton specialises an int argument equal to 1 as the constexpr 1 (strides of 1, sizes
    of 1), unless `do_not_specialize` names it: inside the kernel it is a Python int, so
    `n.to(tl.float32)` fails there as on the GPU ("'int' object has no attribute 'to'")."""
    return type(value) is int and value == 1 and name not in getattr(kernel, "unspecialized", ())


def _kernel_value(kernel, name, value, is_constexpr, memory):
    """What a launch argument becomes inside the kernel."""
    if is_constexpr:
        if _is_array(value):
            raise LaunchError(f"kernel `{kernel.__name__}`: argument `{name}` is annotated "
                              "tl.constexpr but got a tensor")
        return value.value if isinstance(value, _t.constexpr) else value
    if _is_array(value) or _pointer_carrier(value):
        buf = memory.add(value, name) if _is_array(value) else \
            memory.add_pointer(value, name, _element_type(name, value.dtype))
        const = name in getattr(kernel, "const_params", ())  # `x: tl.const`
        return tensor(np.array([buf.base + buf.view_lo], dtype=np.int64),
                      _t.pointer_type(buf.dtype, const=const), [], origin=buf.index)
    if callable(getattr(value, "tma_desc_cpu_ptr", None)):  # Triton 3.2's TmaDescKernelParam
        return descriptor_argument(value, name, memory)
    if _is_descriptor(value):
        base = _kernel_value(kernel, name, value.base, False, memory)
        return tensor_descriptor(base, [literal(int(d), _t.int32) for d in value.shape],
                                 [literal(int(s), _t.int64) for s in value.strides],
                                 [int(b) for b in value.block_shape], value.padding,
                                 getattr(value, "layout", None))
    if value is None or isinstance(value, (str, _t.dtype)):
        return value  # Triton treats these as constexprs
    if isinstance(value, (bool, np.bool_)):
        return literal(bool(value), _t.int1)
    if isinstance(value, numbers.Integral):
        if not -2**63 <= int(value) < 2**64:  # what Triton's launcher says when it packs it
            raise OverflowError(f"kernel `{kernel.__name__}`: argument `{name}` = {int(value)} "
                                f"does not fit in 64 bits (int64 or uint64)")
        ty = _t.literal_type(int(value))
        return literal(int(value), ty if ty is not _t.uint32 else _t.int64)
    if isinstance(value, numbers.Real):
        return literal(float(value), _t.float32)
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return _kernel_value(kernel, name, value.item(), False, memory)
    raise LaunchError(f"kernel `{kernel.__name__}`: argument `{name}` has unsupported type "
                      f"{type(value).__name__}; pass tensors, numbers, bools or constexprs")


def _prepare(kernel, grid, args, kwargs):
    named, options = _bind(kernel, args, dict(kwargs))
    _check_host_arrays(kernel, named)
    settings = options.pop("minitriton_settings", None) or current_settings()
    if settings.keep_heap:
        keep_heap()
    fn = kernel.compile(settings)
    constexpr_names = {kernel.arg_names[i] for i in kernel.constexprs}
    user_grid = _resolve_grid(kernel, grid, named)
    grid = user_grid + (1,) * (3 - len(user_grid))
    watchers = context.observer_classes(settings)
    memory = AddressSpace(float("inf") if any(w.needs_snapshots for w in watchers)
                          else settings.rollback_limit)
    values = [_kernel_value(kernel, n, v, n in constexpr_names or _specialized_one(kernel, n, v),
                            memory) for n, v in named.items()]
    record = LaunchRecord(kernel.__name__, user_grid,
                          {n: named[n] for n in kernel.arg_names if n in constexpr_names},
                          options, settings.executor)
    for buf in memory.buffers:
        record.add_argument(buf)
    memory.on_new_buffer.append(record.add_argument)  # memory reached through int addresses
    ctx = context.LaunchContext(kernel.__name__, grid, memory, record, settings)
    memory.on_outside_view = _OutsideView(ctx)
    return ctx, fn, values, watchers


class _OutsideView:
    """What an access outside an argument's view but inside its storage becomes: a warning
    (once per argument and launch) naming the kernel line and program, or an OutOfBoundsError
    under `Settings.view_bounds`."""

    def __init__(self, ctx):
        self.ctx, self.warned = ctx, set()

    def __call__(self, buf, offsets, op, lanes, row):
        ctx = self.ctx
        message = outside_view_message(buf, offsets, op, lanes)
        if ctx.settings.view_bounds:
            err = OutOfBoundsError(
                f"{message}.\nhint: a GPU {'reads' if op == 'load' else 'writes'} the storage "
                f"there, but the kernel reaches past the tensor it was given (an error because "
                f"Settings.view_bounds is on); mask the access or pass the wider tensor; "
                f"nothing was read or written.")
            err.failing_row = row
            raise err
        if buf.name in self.warned:
            return
        self.warned.add(buf.name)
        filename, lineno, where = _kernel_line()
        warnings.warn_explicit(
            f"{message}; in kernel `{ctx.kernel_name}`, program {ctx.pid_tuple(row)}, at "
            f"{where}. A GPU {'reads' if op == 'load' else 'writes'} the storage there, as "
            f"minitriton does; Settings(view_bounds=True) makes this an error.",
            OutsideViewWarning, filename, lineno, registry=_WARNED)


_WARNED: dict = {}  # warnings' registry: the same message from the same line shows once


def _kernel_line():
    """(file, line, 'file:line: source') of the innermost kernel frame on the stack."""
    frame = kernel_frame()
    if frame is None:
        return "<kernel>", 0, "<unknown line>"
    src = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return (frame.f_code.co_filename, frame.f_lineno,
            f"{frame.f_code.co_filename}:{frame.f_lineno}: {src}")


def _pytest_hides(excinfo):
    """pytest's `__tracebackhide__` of the launch frame: a failing test's report leaves it out,
    as the user's frames say what failed (and pytest parses each shown frame's whole file)."""
    return not full_traceback()


def launch(kernel, grid, args, kwargs):
    """Run the launch; returns its LaunchRecord. An error leaves with the user's frames only:
    the kernel's lines and the user's code, not minitriton's (source.user_frames;
    MINITRITON_FULL_TRACEBACK=1 keeps them all)."""
    __tracebackhide__ = _pytest_hides  # noqa: F841
    try:
        ctx, fn, values, watchers = _prepare(kernel, grid, args, kwargs)
    except BaseException as e:
        raise user_frames(e)
    memory, record, settings = ctx.memory, ctx.record, ctx.settings
    start = time.perf_counter()
    token = context.enter(ctx)
    try:
        outside = list(_WATCHERS.get())
        marks = [w.mark() for w in outside]
        ctx.watch([w(ctx) for w in watchers] + outside)
        ids = _sample(program_ids(ctx.grid), record)
        if settings.executor == "sequential":
            run_sequential(ctx, fn, values, ids)
        else:
            key = _block_key(record.constexprs)
            run_lockstep(ctx, fn, values, ids, kernel.block_sizes.get(key))
            if key is not None:
                kernel.block_sizes[key] = ctx.max_block
        again = _decide_again(ctx, memory)
        if again is None:
            rerun = _Rerun(ctx, fn, values, ids)
            for observer in ctx.observers:
                observer.finish(rerun)
        else:  # the watchers from outside see the launch once: the run to come
            for watcher, mark in zip(outside, marks):
                watcher.undo(mark)
    except BaseException as e:
        message = str(e)  # before locating adds the kernel, program and line
        err = as_compilation_error(e, ctx)
        if err is None:
            locate(e, ctx)
        shown = e if err is None else err
        if isinstance(e, Exception):
            _stopped(ctx, shown, e, message)
        kept = memory.undo_launch()
        if kept and isinstance(shown, MiniTritonError):
            shown.message += (f"\n(memory of {', '.join(kept)} was not restored: larger than "
                              f"Settings.rollback_limit; writes of programs that ran before the "
                              f"error remain)")
            shown.args = (shown.message,)
        if err is None:
            raise user_frames(e)
        kernel_lines = user_frames(e).__traceback__  # where Triton points its error
        raise user_frames(err).with_traceback(kernel_lines) from e
    else:
        if again is None:
            memory.commit_launch()
        else:
            memory.undo_launch()
    finally:
        ctx.scratch.clear()  # the context lives on in reference cycles until a collection
        context.leave(token)
    if again is not None:  # see _decide_again: what it printed, it printed the first time
        with arith.deciding_with(again), contextlib.redirect_stdout(io.StringIO()):
            return launch(kernel, grid, args, kwargs)
    record.seconds = time.perf_counter() - start
    extra = _SCALED.get()
    if record.sampled and extra is not None:
        ran, total = record.sampled
        extra[0] += record.seconds * (total - ran) / ran
    publish(record)
    return record


def _decide_again(ctx, memory):
    """None, or the uses to run the launch again with: where it fused one of two products by
    the uses seen so far and the whole launch's uses would fuse the other, as LLVM counts them
    (language/arith.py, final_uses). Only where every buffer it wrote can be put back; else
    the first run's results stand (the launch wrote more than Settings.rollback_limit)."""
    uses = arith.final_uses(ctx)
    if uses is None or any(b.too_big_to_restore for b in memory.buffers):
        return None
    return uses


def _stopped(ctx, shown, error, message):
    """Tell the observers that keep a record of what ran (the trace: `stopped(error,
    message)`) that the launch failed, before its writes are undone; the error they get is
    the one raised, with the traceback of the one that happened."""
    hooks = [o.stopped for o in ctx.observers if callable(getattr(o, "stopped", None))]
    if not hooks:
        return
    traceback = shown.__traceback__
    shown.__traceback__ = error.__traceback__
    try:
        for hook in hooks:
            hook(shown, message)
    finally:
        shown.__traceback__ = traceback


def _block_key(constexprs):
    """The constexpr values that fix a launch's block shapes, as a key (None: unhashable)."""
    key = tuple(sorted(constexprs.items(), key=lambda item: item[0]))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def warmup(kernel, grid, args, kwargs):
    """`kernel.warmup(*args, grid=grid, **kwargs)`: a CompiledKernel, nothing launched. The first
    program runs once, sequentially and unobserved, its writes undone, to see its blocks; a
    runtime error there (the arguments of a warmup may be placeholders) only ends that look."""
    __tracebackhide__ = _pytest_hides  # noqa: F841
    try:
        ctx, fn, values, _ = _prepare(kernel, grid, args, kwargs)
    except BaseException as e:
        raise user_frames(e)
    probe = ResourceWatcher()
    ctx.memory.rollback_limit = float("inf")
    token = context.enter(ctx)
    try:
        ctx.watch([probe])
        with contextlib.redirect_stdout(io.StringIO()):  # what it prints is not a launch's
            run_sequential(ctx, fn, values, program_ids(ctx.grid)[:1])
    except CompilationError as e:
        locate(e, ctx)
        raise user_frames(e)
    except MiniTritonError:
        pass
    except PYTHON_ERRORS as e:
        err = as_compilation_error(e, ctx)
        if err is None:
            raise user_frames(e)
        kernel_lines = user_frames(e).__traceback__
        raise user_frames(err).with_traceback(kernel_lines) from e
    finally:
        ctx.memory.undo_launch()
        ctx.scratch.clear()
        context.leave(token)
    compiled = CompiledKernel(kernel, ctx.record, ctx.max_block, probe.dots, probe.reductions,
                              probe.dot_sites, probe.tma)
    if getattr(kernel, "repr", None) is not None:  # @jit(repr=...): the kernel's name
        name = kernel.repr(_specialization(kernel, args, kwargs))
        compiled.name, compiled.metadata = name, compiled.metadata._replace(name=name)
    return compiled


class _Specialization:
    """What `@triton.jit(repr=fn)` hands `fn`: the launch's `signature` (argument name ->
    Triton's type string, "constexpr" for constants) and `constants` (name -> value of the
    constexpr arguments and of the ints equal to 1 that Triton specialises)."""

    def __init__(self, signature, constants):
        self.signature, self.constants = signature, constants


# Triton's canonical names of integer element types (its type_canonicalisation_dict: bools
# are u1); the floating ones are already canonical in minitriton's dtype names (fp32, bf16...)
_CANONICAL = {"int1": "u1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
              "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64"}


def _type_string(name, value, const=False):
    """Triton 3.6's type string of a launch argument (its `mangle_type`): "*k" before the
    element type of a pointer parameter annotated `tl.const`, "tensordesc<fp16[64, 64]>" for
    a host tensor descriptor ("tensordesc<fp16[64, 64],NVMMASharedLayout(...)>" for Gluon's,
    which carries its shared layout)."""
    if isinstance(value, (bool, np.bool_)):
        return "u1"
    if _is_descriptor(value):
        element = _element_type(name, value.base.dtype).name
        layout = getattr(value, "layout", None)
        return (f"tensordesc<{_CANONICAL.get(element, element)}{list(value.block_shape)}"
                + (f",{layout!r}>" if layout is not None else ">"))
    if isinstance(value, numbers.Integral):
        value = int(value)
        return "i32" if -2**31 <= value < 2**31 else "u64" if value >= 2**63 else "i64"
    if isinstance(value, numbers.Real):
        return "fp32"
    if _is_array(value) or _pointer_carrier(value):
        element = _element_type(name, value.dtype).name
        return ("*k" if const else "*") + _CANONICAL.get(element, element)
    return "constexpr" if value is None else type(value).__name__


def _specialization(kernel, args, kwargs):
    named, _ = _bind(kernel, args, {k: v for k, v in kwargs.items() if k != "grid"})
    constexprs = {kernel.arg_names[i] for i in kernel.constexprs}
    signature, constants = {}, {}
    for name, value in named.items():
        if name in constexprs or _specialized_one(kernel, name, value):
            signature[name], constants[name] = "constexpr", value
        else:
            signature[name] = _type_string(name, value, name in kernel.const_params)
    return _Specialization(signature, constants)


class _Rerun:
    """Runs programs of the launch again, sequentially, with no observer watching and what
    they print left unshown (what an observer's `finish` gets: the order check re-runs the
    launch in a shuffled order; the launch has printed already)."""

    def __init__(self, ctx, fn, values, program_ids):
        self.ctx, self.fn, self.values, self.program_ids = ctx, fn, values, program_ids

    def __call__(self, ids):
        observers = self.ctx.observers
        self.ctx.watch([])
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                run_sequential(self.ctx, self.fn, self.values, ids)
        finally:
            self.ctx.watch(observers)
