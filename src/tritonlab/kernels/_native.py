"""tritonlab's native autograd node (kernels/_native.cpp): RMSNorm's backward in C++.

An RMSNorm training step on the H200 is host-bound: autograd runs a backward node on its CUDA
worker thread, where a Python node pays the GIL handoff and tens of microseconds for each torch
call (docs/ops.md#host-cost). The native module makes the forward's outputs and a C++ autograd
node whose backward allocates its buffers and launches the Triton kernels the Python plan
compiled, through the driver's cuLaunchKernel (cuLaunchKernelEx for a kernel compiled with
Triton's launch_pdl, launched as Triton launches it), with no Python.

`module()` builds it on first use with the machine's C++ compiler against the installed torch
(once per torch and Python version, cached under $TRITONLAB_CACHE_DIR or
~/.cache/tritonlab/native), or returns None where it cannot: TRITONLAB_NATIVE=0, no compiler,
a failed build (`why()` says which). `launch(bound, args)` describes one of a plan's `Bound`
launches for the module, or says why that launch is not one it can make (before its first
call through Triton, a Triton other than 3.6, Triton's global or profile scratch, clusters,
cooperative launches, a profiler hook listening, argument types other than pointers,
integers and fp32). An exchange kernel's statistics and meeting counters (kernels/_exchange.py)
are the module's own slots ("stats", "counters"): the statistics made per call, the counters
kept per stream and thread as `_launch.scratch` keeps them.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

import torch

from . import _launch, ops

ENABLED = os.environ.get("TRITONLAB_NATIVE", "1") != "0"
SOURCE = Path(__file__).with_name("_native.cpp")
NAME = "_tritonlab_native"
_lock = threading.Lock()
_start_lock = threading.Lock()
_state: dict = {}


class Slot:
    """A launch argument that is one of the call's tensors, by its index in the module's
    table (`module().slots()`)."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


SCALAR = object()  # a launch argument that is the call's float (RMSNorm's eps)


def why():
    """Why `module()` is None (empty while it has not been asked for, or it loaded)."""
    return _state.get("why", "")


def module():
    """The compiled module, built on first use; None where it cannot be (see `why()`)."""
    if "module" not in _state:
        with _lock:
            if "module" not in _state:
                _state["module"] = _load()
    return _state["module"]


def _fail(reason):
    _state["why"] = reason
    return None


def _compiler():
    return os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")


def _command(compiler, output):
    torch_dir = Path(torch.__file__).parent
    include = torch_dir / "include"
    abi = [f"-D{name}=\"{getattr(torch._C, '_' + name)}\""
           for name in ("PYBIND11_COMPILER_TYPE", "PYBIND11_STDLIB", "PYBIND11_BUILD_ABI")
           if getattr(torch._C, "_" + name, None)]
    return [compiler, "-O2", "-std=c++17", "-shared", "-fPIC", "-w",
            f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}", *abi,
            "-I", str(include), "-I", str(include / "torch" / "csrc" / "api" / "include"),
            "-I", sysconfig.get_paths()["include"], str(SOURCE), "-o", str(output),
            "-L", str(torch_dir / "lib"), "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python",
            f"-Wl,-rpath,{torch_dir / 'lib'}", "-ldl"]


def build_dir():
    root = os.environ.get("TRITONLAB_CACHE_DIR") or Path.home() / ".cache" / "tritonlab"
    return Path(root) / "native"


def _load():
    if not ENABLED:
        return _fail("TRITONLAB_NATIVE=0")
    if not sys.platform.startswith("linux"):
        return _fail(f"the native module is built on Linux only, not {sys.platform}")
    compiler = _compiler()
    if compiler is None:
        return _fail("no C++ compiler (c++, g++ or $CXX) on PATH")
    source = SOURCE.read_bytes()
    key = hashlib.sha256(b"\0".join([source, torch.__version__.encode(),
                                     sys.version.encode(), compiler.encode()])).hexdigest()
    target = build_dir() / f"{NAME}-{key[:16]}{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        print(f"tritonlab: compiling its native autograd node (once per torch version, about "
              f"a minute) into {target.parent}; TRITONLAB_NATIVE=0 skips it", file=sys.stderr)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            built = Path(tmp) / target.name
            try:
                done = subprocess.run(_command(compiler, built), capture_output=True,
                                      text=True)
            except OSError as e:
                return _fail(f"{compiler} did not run: {e}")
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-20:]
                return _fail(f"{compiler} failed ({done.returncode}):\n" + "\n".join(tail))
            os.replace(built, target)  # atomic: a concurrent build writes the same file
    spec = importlib.util.spec_from_file_location(NAME, target)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except ImportError as e:
        return _fail(f"{target} does not load: {e}")
    if _launch.raw_stream is not None:  # a CUDA build of torch
        mod.set_cuda(_launch.current_device, _launch.raw_stream)
    _state["why"] = ""
    return mod


def listening():
    """Whether a Triton launch hook (a profiler such as Proton) listens: calls then take the
    Python path, whose launches Triton reports to it. Asked on every native call."""
    knobs = _state.get("knobs")
    return knobs is not None and any(
        hook is not None and getattr(hook, "calls", True)  # Triton 3.6: a chain, empty or not
        for hook in (knobs.launch_enter_hook, knobs.launch_exit_hook))


_TYPES = {"i32": "i32", "i64": "i64", "fp32": "f32", "f32": "f32"}


def launch(bound, args):
    """A `Launch` for `bound`'s kernel with positional `args` (Slot, SCALAR, int or float
    each), or a string saying why the module cannot make this launch (see the module's
    docstring)."""
    mod, runner = module(), bound.runner
    name = getattr(bound.kernel, "__name__", None) or str(bound.kernel)
    if mod is None:
        return f"no native module: {why()}"
    if type(runner) is not _launch._Direct or runner.inner is None:
        return f"{name}: not launched through Triton 3.6's C launcher ({type(runner).__name__})"
    cooperative, pdl = runner.flags[:2]
    warps, ctas, shared = runner.packed
    _state["knobs"] = runner.knobs
    if cooperative or ctas != 1:
        return f"{name}: a cooperative or cluster launch"
    signature = list(runner.compiled.src.signature.values())
    every = list(args) + list(bound.tail)
    if len(signature) != len(every):
        return f"{name}: {len(signature)} parameters, {len(every)} arguments"
    kinds, values = [], []
    for ty, arg in zip(signature, every):
        if ty == "constexpr":
            continue
        if isinstance(ty, str) and ty.startswith("*") and isinstance(arg, Slot):
            kinds.append(mod.KINDS["slot"]), values.append(arg.index)
        elif _TYPES.get(ty) == "f32" and arg is SCALAR:
            kinds.append(mod.KINDS["scalar"]), values.append(0)
        elif _TYPES.get(ty) == "f32" and isinstance(arg, float):
            kinds.append(mod.KINDS["f32"])
            values.append(struct.unpack("<I", struct.pack("<f", arg))[0])
        elif _TYPES.get(ty) in ("i32", "i64") and type(arg) is int:
            kinds.append(mod.KINDS[_TYPES[ty]]), values.append(arg)
        else:
            return f"{name}: a parameter of type {ty} given {type(arg).__name__}"
    return mod.Launch(name, runner.function, list(bound.grid3), 32 * warps, shared, kinds,
                      values, bool(pdl))


def module_nowait():
    """`module()` where it is built; else None at once, with the build started in a thread
    (once), so that a first call does not wait a minute for the compiler: calls take the
    Python path until it is ready."""
    if "module" in _state:
        return _state["module"]
    with _start_lock:  # not `_lock`, which the build holds for its minute
        if "thread" not in _state:
            _state["thread"] = threading.Thread(target=module, name="tritonlab-native-build",
                                                daemon=True)
            _state["thread"].start()
    return None


_call = None  # the module's call(table, *tensors), once a table exists


class _Miss:
    """What an OpTable returns for a signature it has no plan for (or none with a backward
    where a gradient is wanted)."""

    def __repr__(self):
        return "MISS"


MISS = _Miss()
GRAD_DY, GRAD_EXPAND_DY = ("dy",), ("expand_dy",)  # `describe`'s gradients besides a Slot
# Python backwards of a signature's plan without a backward after which its table describes
# it again (NativeOp._backward): an autotuned launch is a launch a plan can describe after its
# second run; later ones leave the plan as it is (no description on every step)
PYTHON_BACKWARDS = 3


class NativeOp:
    """One op's native path (_native.cpp's OpTable): `op(options, *tensors)` is the op's
    result made in C++ (checks, allocation, launches and, where a gradient is wanted, a C++
    autograd node whose backward launches the backward kernels), or None where the call takes
    the Python path. `options` are the op's other arguments (a hashable tuple): one table
    each. A table keys its plans by the tensors' dtypes, devices and shapes; a signature's
    first call misses, and `describe(options, *tensors)` makes its plan from the op's Python
    launch plan: `plan(...)`, or None while its kernels have not run through Triton yet (the
    call takes the Python path, which compiles them), or a string saying why this signature
    never takes the native path. A plan without a backward (its kernels not compiled yet) serves
    every call: one that wants a gradient records a node whose backward runs the Python path
    (the `create_graph(options)` function, which compiles the backward's kernels), after which
    the table describes its signatures again; an op without `create_graph` misses there.
    Calls the table declines (see OpTable::call): tensor subclasses, non-contiguous or
    misaligned inputs, another device than the current one, forward-mode AD, compiled
    autograd, a Triton launch hook listening. `create_graph(options)` gives the backward under
    create_graph: a function (dy, *saved tensors) -> gradients, through the registered ops.
    `enabled`: the kernel module runs on CUDA (not the simulator's copy)."""

    def __init__(self, name, describe, create_graph=None, enabled=True):
        self.name, self.describe, self.create_graph = name, describe, create_graph
        self.enabled = enabled and ENABLED
        self.tables, self.why = {}, {}
        # options whose tables describe their signatures again: a plan without a backward ran
        # the Python one, which compiled its kernels (the first PYTHON_BACKWARDS times per
        # signature: an autotuned launch makes the launch a plan describes on its second run)
        self.stale, self._python_backwards = set(), {}

    def __call__(self, options, *tensors):
        if not self.enabled or torch.compiler.is_compiling():
            return None  # Dynamo traces the Python path: the op is one node in its graph
        table = self.tables.get(options)
        if table is None:
            table = self._table(options)
            if table is None:
                return None
        elif self.stale and options in self.stale:
            self.stale.discard(options)
            table.clear()
        out = _call(table, *tensors)
        if out is MISS:
            out = self._miss(table, options, tensors)
        return out

    def _table(self, options):
        mod = module_nowait()
        if mod is None:
            if "module" in _state:  # it cannot be built: no native path for this op
                self.enabled = False
            return None
        global _call
        _call = mod.call
        try:
            import triton
        except ImportError:  # the table's mechanics without Triton: no launch hook to heed
            triton = None
        knobs = getattr(getattr(triton, "knobs", None), "runtime", None)
        backward = self._backward(options) if self.create_graph else None
        table = self.tables[options] = mod.OpTable(
            self.name, backward, _grad_ok, knobs, MISS)
        return table

    def _backward(self, options):
        """The table's Python backward, (dy, *saved) -> gradients: under create_graph, and for
        a plan whose backward kernels had not compiled (then the table is described again)."""
        backward = self.create_graph(options)

        def run(*args):
            out = backward(*args)
            if not torch.is_grad_enabled():  # not create_graph: a plan without a backward
                signature = (options, *((a.dtype, a.device, tuple(a.shape)) for a in args[1:]
                                        if a is not None))
                runs = self._python_backwards.get(signature, 0)
                if runs < PYTHON_BACKWARDS:
                    self._python_backwards[signature] = runs + 1
                    self.stale.add(options)
            return out
        return run

    def _miss(self, table, options, tensors):
        if not all(t.is_contiguous() for t in tensors):
            return None  # declined by the table anyway: described on a contiguous call
        try:
            plan = self.describe(options, *tensors)
        except Exception as e:  # a bad call: the Python path raises its own error
            self.why[options] = f"describe raised {type(e).__name__}: {e}"
            return None
        if plan is None:
            return None
        if isinstance(plan, str):
            self.why[options] = plan
            table.add(None, *tensors)
            return None
        table.add(plan, *tensors)
        out = _call(table, *tensors)
        return None if out is MISS else out

    def clear(self):
        """Forget every plan (a tuning changed)."""
        for table in self.tables.values():
            table.clear()
        self._python_backwards.clear()


def _grad_ok():
    return not ops.compiled_autograd()


def plan(inputs, allocs, forward, result, saved=(), bwd_allocs=(), backward=None,
         grads=(), backward_for=(), counters=None):
    """An OpPlan for `NativeOp.describe`, or a string saying why there is none, or None while
    a kernel has not run through Triton yet. `inputs`: the call's tensors (slots 0..); `allocs`:
    (shape, dtype) of the forward's new tensors (the next slots); `forward`: (Bound, arguments)
    per launch, in order, arguments as `launch` takes them (Slot(i) for slot i); `result`: the
    returned slot. The backward, None where there is none yet: `saved` forward slots, the
    slot of dy next after the forward's, then `bwd_allocs`, the `backward` launches, and per
    input its gradient: Slot(i), GRAD_DY (dy itself), GRAD_EXPAND_DY (dy with a last dimension
    of the input's size) or None; `backward_for`, where given, per backward launch the index
    of the input whose gradient it serves (not launched where that gradient is not wanted),
    or -1. `counters`: the forward allocation (a Slot) that is a kernel's meeting counters,
    one-dimensional int32, zero before the forward and left zero by it: made once per stream
    and thread, as `_launch.scratch(..., zeroed=True)`, not allocated per call."""
    mod = module()
    dtypes = [t.dtype for t in inputs] + [d for _, d in allocs]
    dtypes += [dtypes[result.index]] + [d for _, d in bwd_allocs]  # dy: the result's dtype
    launches = []
    for part in (forward, backward or ()):
        made = []
        for bound, args in part:
            if bound.runner is None:
                return None
            compiled = dict(bound.tensors)  # the runner's tensor arguments and their dtypes
            if any(isinstance(a, Slot) and compiled.get(i) is not dtypes[a.index]
                   for i, a in enumerate(args)):
                return (f"{bound.kernel.__name__}: its launch was compiled for other dtypes "
                        f"than this signature's")
            made.append(launch(bound, args))
            if isinstance(made[-1], str):
                return made[-1]
        launches.append(made)
    kinds = mod.GRADS
    described = []
    for grad in grads:
        if grad is None:
            described.append((kinds["none"], 0))
        elif isinstance(grad, Slot):
            described.append((kinds["slot"], grad.index))
        else:
            described.append((kinds[grad[0]], 0))
    ready = backward is not None
    return mod.OpPlan(
        len(inputs), [(list(s), d) for s, d in allocs], launches[0], result.index, ready,
        [s.index for s in saved],
        [(list(s), d) for s, d in bwd_allocs] if ready else [],
        launches[1] if ready else [], described if ready else [],
        [list(t.shape) for t in inputs] if ready else [],
        list(backward_for) if ready else [],
        -1 if counters is None else counters.index - len(inputs))
