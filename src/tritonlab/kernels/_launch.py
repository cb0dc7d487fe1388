"""The fast launch path: `launch(kernel, grid, *args, **kw)` is `kernel[grid](*args, **kw)`
with Triton's per-call dispatch cached.

On a GPU, `kernel[grid](...)` binds the arguments, computes their specialisation and looks the
compiled kernel up on every call: 10-20 us of Python on the H200 machine, as much as a whole
small kernel (benchmarks/launch_overhead.py). We key the compiled kernel on what Triton
specialises on (tensor dtype and 16-byte alignment; integers equal to 1, divisible by 16, and
their width; the constexpr and option values) and call it directly. The first call of each key
goes through Triton as usual (compiling, checking); minitriton and Triton's interpreter always
take the plain path. What Triton reads from the environment at compile time (TRITON_DEBUG and
the other knobs) is not looked at again after the first call of a key.
TRITONLAB_FAST_LAUNCH=0 turns the cache off.
"""
from __future__ import annotations

import numbers
import os

import torch

FAST_LAUNCH = os.environ.get("TRITONLAB_FAST_LAUNCH", "1") != "0"
_COMPILED: dict = {}
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


def _int_spec(value):
    return int, value == 1, value % 16 == 0, -2 ** 31 <= value < 2 ** 31, value < 2 ** 63


def _spec(arg):
    """What Triton's compiled code depends on for one positional argument (None: unknown, so
    the call takes Triton's own path). Exact types first: this runs for every argument of
    every call."""
    kind = type(arg)
    if kind is int:
        return _int_spec(arg)
    if kind is float:
        return float
    if isinstance(arg, torch.Tensor):
        return arg.dtype, arg.data_ptr() % 16 == 0
    if kind is bool:
        return bool, arg
    if isinstance(arg, numbers.Integral):
        return _int_spec(int(arg))
    if isinstance(arg, float):
        return float
    if kind.__name__ == "TensorDescriptor":  # Triton specialises on element type and block
        return ("desc", arg.base.dtype, tuple(arg.block_shape), arg.padding,
                getattr(arg, "round_f32_to_tf32", False))
    if arg is None or isinstance(arg, str):
        return kind, arg
    return None


class _Runner:
    """One compiled kernel, launched through Triton's runner, `compiled[grid](...)`."""

    def __init__(self, compiled, tail):
        self.compiled, self.tail = compiled, tail  # tail: (name, default) of the other params

    def arguments(self, args, kw):
        return (*args, *[kw.get(name, default) for name, default in self.tail])

    def __call__(self, grid, device, args, kw):
        self.compiled[tuple(grid) + (1,) * (3 - len(grid))](*self.arguments(args, kw))


class _Direct(_Runner):
    """One compiled kernel, called the way Triton's JIT calls it after its own lookup:
    `run(grid, stream, function, metadata, launch metadata, hooks, *all arguments)`. Skips the
    per-call work of `compiled[grid](...)` (device and stream lookups through Triton's driver,
    launch metadata built even when no profiler hook listens)."""

    def __init__(self, compiled, tail):
        import triton
        super().__init__(compiled, tail)
        compiled._init_handles()
        self.run, self.function = compiled.run, compiled.function
        self.packed = compiled.packed_metadata
        self.knobs = triton.knobs.runtime
        self.stream = torch._C._cuda_getCurrentRawStream

    def __call__(self, grid, device, args, kw):
        full = self.arguments(args, kw)
        g1 = grid[1] if len(grid) > 1 else 1
        g2 = grid[2] if len(grid) > 2 else 1
        stream = self.stream(device)
        enter, leave = self.knobs.launch_enter_hook, self.knobs.launch_exit_hook
        # A profiler (Proton) listens through the hooks: give it Triton's launch metadata
        meta = (self.compiled.launch_metadata((grid[0], g1, g2), stream, *full)
                if enter is not None and getattr(enter, "calls", True) else None)
        self.run(grid[0], g1, g2, stream, self.function, self.packed, meta, enter, leave, *full)


def _direct_or_runner(compiled, tail):
    """A `_Direct` where this Triton's compiled kernels have the attributes it calls, else
    Triton's own runner (`launch` also switches to it where calling the `_Direct` fails)."""
    try:
        return _Direct(compiled, tail)
    except (AttributeError, ImportError):
        return _Runner(compiled, tail)


def launch(kernel, grid, *args, **kw):
    """`kernel[grid](*args, **kw)`, through a cache of compiled kernels on a GPU."""
    if not FAST_LAUNCH or getattr(kernel, "device_caches", None) is None:
        return kernel[grid](*args, **kw)
    specs = tuple(map(_spec, args))
    if None in specs:
        return kernel[grid](*args, **kw)
    device = _current_device()
    key = (id(kernel), device, specs, tuple(kw.items()))
    hit = _COMPILED.get(key)
    if hit is None:
        compiled = kernel[grid](*args, **kw)  # binds, checks and compiles as usual
        params = list(kernel.signature.parameters.values())[len(args):]
        _COMPILED[key] = _direct_or_runner(compiled, tuple((p.name, p.default) for p in params))
        return compiled
    try:
        hit(grid, device, args, kw)
    except (TypeError, AttributeError):
        # This Triton's compiled kernels take other arguments than `_Direct` passes (raised
        # before the launch): Triton's runner from now on, and this call once more through it
        if type(hit) is not _Direct:
            raise
        hit = _COMPILED[key] = _Runner(hit.compiled, hit.tail)
        hit(grid, device, args, kw)
    return hit.compiled
