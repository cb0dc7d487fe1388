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

`scratch(name, shape, dtype, device)` is a reused scratch buffer (a backward's partial sums):
one per name, shape, dtype, device and stream, so a backward makes no allocation for it.

`PlanCache` keeps launch plans by their inputs' signature (kernels/rmsnorm.py, softmax.py,
rowsum.py): checks, tuning lookups and the `Bound` launches worked out on a signature's first
call.

`Bound(kernel, grid, **kw)` is the same launch with the grid and keywords fixed, for those
plans, whose cache key holds the arguments' integer specialisations: after its first call it
looks only at the tensors' dtypes and alignment, the other arguments' types and the current
device.
"""
from __future__ import annotations

import numbers
import os
import threading

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
        self.full(_grid3(grid), device, self.arguments(args, kw))

    def full(self, grid, device, arguments):
        """Launch on a 3-D grid with every argument in signature order."""
        self.compiled[grid](*arguments)


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
        # Triton 3.6's CudaLauncher.__call__ only adds its scratch buffers (none for most
        # kernels) and two flags before calling its compiled C launcher: call that directly
        run, self.inner = self.run, None
        if (getattr(triton, "__version__", "").startswith("3.6.")
                and type(run).__name__ == "CudaLauncher"
                and run.global_scratch_size == 0 and run.profile_scratch_size == 0):
            self.inner = run.launch
            self.flags = (run.launch_cooperative_grid, run.launch_pdl, None, None)

    def full(self, grid, device, arguments):
        stream = self.stream(device)
        enter, leave = self.knobs.launch_enter_hook, self.knobs.launch_exit_hook
        # A profiler (Proton) listens through the hooks: give it Triton's launch metadata
        meta = (self.compiled.launch_metadata(grid, stream, *arguments)
                if enter is not None and getattr(enter, "calls", True) else None)
        if self.inner is not None:
            self.inner(grid[0], grid[1], grid[2], stream, self.function, *self.flags,
                       self.packed, meta, enter, leave, *arguments)
        else:
            self.run(grid[0], grid[1], grid[2], stream, self.function, self.packed, meta,
                     enter, leave, *arguments)


def _grid3(grid):
    return tuple(grid) + (1,) * (3 - len(grid))


def _direct_or_runner(compiled, tail):
    """A `_Direct` where this Triton's compiled kernels have the attributes it calls, else
    Triton's own runner (`launch` also switches to it where calling the `_Direct` fails)."""
    try:
        return _Direct(compiled, tail)
    except (AttributeError, ImportError):
        return _Runner(compiled, tail)


def _key(kernel, args, kw):
    """(cache key, current device) of a call, or None where it must take Triton's own path
    (the simulator, Triton's interpreter, the cache off, an argument of unknown type)."""
    if not FAST_LAUNCH or getattr(kernel, "device_caches", None) is None:
        return None
    specs = tuple(map(_spec, args))
    if None in specs:
        return None
    device = _current_device()
    return (id(kernel), device, specs, tuple(kw.items())), device


def launch(kernel, grid, *args, **kw):
    """`kernel[grid](*args, **kw)`, through a cache of compiled kernels on a GPU."""
    return _launch_keyed(kernel, grid, args, kw, _key(kernel, args, kw))


def _launch_keyed(kernel, grid, args, kw, keyed):
    """`launch` with the call's `_key` already worked out."""
    if keyed is None:
        return kernel[grid](*args, **kw)
    key, device = keyed
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


class Bound:
    """`kernel[grid](*args, **kw)` with the grid and keywords fixed, for a launch plan that
    calls it again and again with arguments of one signature. After the first call it looks
    only at what Triton specialises on and a plan cannot always hold: each tensor's dtype and
    16-byte alignment, each other argument's type, and the current device; any change takes
    `launch`'s full path for that call. What it does not look at again, the plan's key must
    hold: the integers' specialisations (equal to 1, divisible by 16, their width), which is
    why plans pass only integers derived from their key. Saves `launch`'s per-argument
    specialisation and key (a few us of host time per launch on the H200)."""

    __slots__ = ("kernel", "grid", "grid3", "kw", "runner", "device", "tensors", "others",
                 "tail")

    def __init__(self, kernel, grid, **kw):
        self.kernel, self.grid, self.grid3, self.kw = kernel, tuple(grid), _grid3(grid), kw
        self.runner = self.device = None
        self.tensors, self.others, self.tail = (), (), ()

    def __call__(self, *args):
        runner = self.runner
        if runner is not None and _current_device() == self.device:
            for i, dtype in self.tensors:
                if args[i].dtype is not dtype or args[i].data_ptr() % 16:
                    break
            else:
                for i, kind in self.others:
                    if type(args[i]) is not kind:
                        break
                else:
                    try:
                        return runner.full(self.grid3, self.device, args + self.tail)
                    except (TypeError, AttributeError):
                        if type(runner) is not _Direct:
                            raise
                        self.runner = None  # `launch` falls back to Triton's runner
        return self._through_launch(args)

    def _through_launch(self, args):
        keyed = _key(self.kernel, args, self.kw)
        compiled = _launch_keyed(self.kernel, self.grid, args, self.kw, keyed)
        tensors = tuple((i, a.dtype) for i, a in enumerate(args)
                        if isinstance(a, torch.Tensor))
        if keyed is not None and all(args[i].data_ptr() % 16 == 0 for i, _ in tensors):
            hit = _COMPILED.get(keyed[0])
            if hit is not None:  # later calls of this signature go straight to it
                self.runner = None  # `runner` last: another thread sees all or nothing
                self.device, self.tensors = keyed[1], tensors
                self.others = tuple((i, type(a)) for i, a in enumerate(args)
                                    if not isinstance(a, torch.Tensor))
                self.tail = tuple(self.kw.get(name, default) for name, default in hit.tail)
                self.runner = hit
        return compiled


_SCRATCH: dict = {}
_SCRATCH_MAX_BYTES = 256 << 20  # beyond this the kept buffers are dropped and start again
_scratch_bytes = [0]
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None)
current_device, raw_stream = _current_device, _raw_stream  # the native path's (rmsnorm.py)


def scratch(name, shape, dtype, device, zeroed=False):
    """An uninitialised tensor for a kernel's temporary results (`name` tells the callers'
    buffers apart), kept and handed out again to later calls with the same name, shape,
    dtype, device, CUDA stream and thread (`zeroed`: zeros when made, for kernels that leave
    it zero again when they end, as the exchange counters of kernels/_exchange.py). Safe
    because a stream runs its kernels in order: the kernels of one call have read it before
    the next call's kernels write it, on the same stream; another stream or thread (whose
    calls could interleave) gets its own. At most 256 MiB are kept, for the process's life.
    On the CPU (the simulator), or while a CUDA graph is being captured (its memory belongs
    to the graph), a new tensor every call. Saves the allocator call, which on the H200 is
    the backward's largest host cost when autograd runs it on its worker thread
    (docs/ops.md#host-cost)."""
    make = torch.zeros if zeroed else torch.empty
    if device.type != "cuda" or _raw_stream is None or _capturing():
        return make(shape, dtype=dtype, device=device)
    index = device.index if device.index is not None else _current_device()
    # and per thread: two threads on one stream may interleave their calls' kernels
    key = (name, shape, dtype, index, _raw_stream(index), threading.get_ident(), zeroed)
    buffer = _SCRATCH.get(key)
    if buffer is None:
        buffer = make(shape, dtype=dtype, device=device)
        nbytes = buffer.numel() * buffer.element_size()
        if _scratch_bytes[0] + nbytes > _SCRATCH_MAX_BYTES:
            _SCRATCH.clear()
            _scratch_bytes[0] = 0
        _SCRATCH[key] = buffer
        _scratch_bytes[0] += nbytes
    return buffer


class PlanCache:
    """Launch plans keyed by their inputs' signature (shapes, dtypes, devices, options):
    `get(key, build, *args)` is the plan `build(*args)` made on the key's first call, which is
    where the inputs are checked (a bad call raises there and caches nothing). Past `size`
    plans the oldest go first. A plan holds what was decided from the tuning tables when it
    was built: tests that change a tuning start with a new cache."""

    def __init__(self, size=4096):
        self.plans, self.size = {}, size

    def of(self, signature, build, *args):
        """The plan of `args`, keyed by `signature(*args)`; where that fails on an argument
        that is not a tensor (AttributeError), `build(*args)`, whose checks say so."""
        try:
            key = signature(*args)
        except AttributeError:
            return build(*args)
        return self.get(key, build, *args)

    def get(self, key, build, *args):
        plan = self.plans.get(key)
        if plan is None:
            plan = build(*args)
            if len(self.plans) >= self.size:
                del self.plans[next(iter(self.plans))]
            self.plans[key] = plan
        return plan

    def __len__(self):
        return len(self.plans)
