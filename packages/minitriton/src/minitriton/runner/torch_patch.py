"""What the runner changes in torch while a program runs (and puts back afterwards).

torch.cuda answers for the emulated GPU where a program asks about the GPU, and stays honest
where it would hand out CUDA tensors:

    is_available()            False: programs that pick `"cuda" if torch.cuda.is_available()
                              else "cpu"` pick the CPU, which is what minitriton's kernels read,
                              and keep off CUDA-only paths (memory statistics, streams, CUDA
                              graphs) that have no CPU stand-in; with --cuda-on-cpu True where
                              the program's own files ask, False for torch and libraries
    get_device_capability()   the emulated GPU's, e.g. (9, 0) for the H100
    get_device_properties()   an object with name, major, minor, multi_processor_count,
                              total_memory, L2_cache_size, warp_size, shared memory, registers
    get_device_name()         e.g. "NVIDIA H100 80GB HBM3"
    current_device()          0; set_device() and synchronize() do nothing
    Event                     timing events on the host clock (elapsed_time in ms)
    _lazy_init                raises CUDATensorError: torch calls it before it makes a CUDA
                              tensor, and torch.cuda's functions that need the device call it
                              (current_stream, memory statistics...), so the program stops
                              with a message that says what to change instead of "Torch not
                              compiled with CUDA enabled"

and on torch.Tensor:

    is_cuda                   True for CPU tensors when the program's own code asks (a file
                              outside site-packages, in the directory of the program run):
                              the driver's active device, the CPU, stands for the GPU there,
                              so checks like tutorial 07's `assert x.is_cuda` hold; torch's and
                              libraries' code still see False

torch.utils._triton's has_triton_package()/has_triton() answer False (torch.compile must not take
minitriton for Triton's GPU code generator), and torch's fp16/bf16 matrix products (and
layer-norm backward) take the GPU's numerics (runner/torch_numerics.py), so that a program's
checks against torch hold as on the GPU.

Tensors a program asks for on CUDA are made on the CPU, the device that stands for the GPU (a
TorchFunctionMode rewrites `device="cuda"` arguments of factories and of `.to(...)`, and
`.cuda()` keeps the CPU tensor), so that programs that hard-code `device="cuda"` (Triton's
tutorials 09-11, the allocators of 06 and 08) run unmodified, and `torch.autocast("cuda")`
casts on the CPU. That is safe by default, as such a
tensor could only be an error otherwise; `is_available()` stays False, as a True would send
programs down torch.cuda paths that have no CPU stand-in. `--strict-cuda` (`strict_cuda=True`)
stops the program at a CUDA tensor instead, with CUDA_HELP, to check that it runs on the device
Triton's driver gives alone; `--cuda-on-cpu` (`cuda_on_cpu=True`) also makes `is_available()`
True for the program's own files.

`--no-torch-patch` leaves torch alone. torch is patched when the program imports it (or at once,
if it is already imported), so a NumPy program does not pay for importing torch.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import os
import sys

from ..standin.target import CPUEvent
from .torch_numerics import mode_class

CUDA_HELP = ("minitriton runs Triton programs on the CPU, so there are no CUDA tensors: make "
             "tensors on the device Triton's driver gives, "
             "`DEVICE = triton.runtime.driver.active.get_active_torch_device()` (the CPU under "
             "minitriton, the GPU under Triton), or write device='cpu' where the program has "
             "device='cuda', .cuda() or .to('cuda'); or run it without --strict-cuda, which "
             "makes such tensors on the CPU.")
CUDA_API_HELP = ("minitriton runs Triton programs on the CPU and emulates only what torch.cuda "
                 "says about the GPU (is_available, get_device_capability, "
                 "get_device_properties, get_device_name, current_device, set_device, "
                 "synchronize, Event); guard the call with `if torch.cuda.is_available():` "
                 "(False under minitriton unless --cuda-on-cpu), or use --no-torch-patch to see "
                 "torch's own error.")


class CUDATensorError(RuntimeError):
    """A program under the runner asked torch for CUDA: a CUDA tensor (under --strict-cuda), or
    a torch.cuda function that needs the device (`api`, e.g. "torch.cuda.current_stream")."""

    def __init__(self, api=None):
        self.api = api
        super().__init__(CUDA_HELP if api is None else
                         f"the program called {api}(), which needs a CUDA device. "
                         f"{CUDA_API_HELP}")


class DeviceProperties:
    """What `torch.cuda.get_device_properties()` returns, for the emulated GPU."""

    def __init__(self, gpu):
        self.name = gpu.name
        self.major, self.minor = gpu.capability
        self.multi_processor_count = gpu.multiprocessor_count
        self.total_memory = gpu.total_memory
        self.L2_cache_size = gpu.l2_bytes
        self.warp_size = gpu.warp_size
        self.max_threads_per_multi_processor = gpu.max_threads_per_sm
        self.regs_per_multiprocessor = gpu.registers_per_sm
        self.shared_memory_per_block = gpu.shared_per_block
        self.shared_memory_per_block_optin = gpu.shared_per_block_optin
        self.shared_memory_per_multiprocessor = gpu.shared_per_sm
        self.is_integrated = False
        self.is_multi_gpu_board = False

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // 2 ** 20}MB, "
                f"multi_processor_count={self.multi_processor_count}, "
                f"L2_cache_size={self.L2_cache_size // 2 ** 20}MB) [emulated by minitriton]")


def _lazy_init():
    caller = sys._getframe(1).f_code  # a torch.cuda function, or the code making a tensor
    module = os.path.normcase(os.path.dirname(caller.co_filename))
    if module.endswith(os.path.join("torch", "cuda")) and not caller.co_name.startswith("_"):
        raise CUDATensorError(f"torch.cuda.{caller.co_name}")
    raise CUDATensorError()


def replacements(gpu):
    """torch.cuda's attribute -> its stand-in."""
    props = DeviceProperties(gpu)
    return {
        "is_available": lambda: False,
        "get_device_capability": lambda device=None: gpu.capability,
        "get_device_properties": lambda device=None: props,
        "get_device_name": lambda device=None: gpu.name,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "synchronize": lambda device=None: None,
        "Event": CPUEvent,
        "_lazy_init": _lazy_init,
    }


# What device-generic programs call on `getattr(torch, DEVICE.type)` that torch.cpu lacks
# (Triton's tutorial 02 sets a stream): added for the duration, nothing of torch.cpu replaced
CPU_ADDITIONS = {"set_stream": lambda stream: None}


@contextlib.contextmanager
def patched_module(module, new):
    """Set `new`'s attributes on a module for the duration, then put back what was there."""
    saved = {name: getattr(module, name) for name in new if hasattr(module, name)}
    for name, value in new.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name in new:
            if name in saved:
                setattr(module, name, saved[name])
            else:
                delattr(module, name)


class ProgramFiles:
    """Whether a code file is the program's own: under its directory, not an installed
    package's."""

    def __init__(self, directory):
        self.directory = os.path.join(os.path.normcase(os.path.abspath(directory)), "")
        self.known = {}

    def __contains__(self, filename):
        own = self.known.get(filename)
        if own is None:
            path = os.path.normcase(os.path.abspath(filename))
            own = self.known[filename] = path.startswith(self.directory) and not any(
                part in ("site-packages", "dist-packages") for part in path.split(os.sep))
        return own


def emulated_is_cuda(real, program):
    """`Tensor.is_cuda`: True for CPU tensors seen from the program's own files."""
    def is_cuda(tensor):
        if real.__get__(tensor):
            return True
        return tensor.device.type == "cpu" and sys._getframe(1).f_code.co_filename in program
    return property(is_cuda)


@contextlib.contextmanager
def patched_class(cls, name, value):
    """`cls.name = value` for the duration (an inherited attribute is shadowed, then shown
    again)."""
    own = name in cls.__dict__
    saved = cls.__dict__.get(name)
    setattr(cls, name, value)
    try:
        yield
    finally:
        if own:
            setattr(cls, name, saved)
        else:
            delattr(cls, name)


def _is_cuda_device(value):
    text = str(value) if hasattr(value, "type") or isinstance(value, str) else None
    return text is not None and (text == "cuda" or text.startswith("cuda:"))


def cuda_on_cpu_mode(torch):
    """A TorchFunctionMode under which tensors asked for on CUDA are made on the CPU."""
    from torch.overrides import TorchFunctionMode

    cuda, to = torch.Tensor.cuda, torch.Tensor.to

    class CUDAOnCPU(TorchFunctionMode):
        # on every torch call of the program (on by default): the common case, no device
        # argument, costs a few checks and no copies
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is cuda:
                return args[0]  # already on the device that stands for the GPU
            if kwargs:
                if "device" in kwargs and _is_cuda_device(kwargs["device"]):
                    kwargs = {**kwargs, "device": "cpu"}
            else:
                kwargs = {}
            if func is to:
                args = tuple("cpu" if _is_cuda_device(a) else a for a in args)
            return func(*args, **kwargs)

    return CUDAOnCPU()


def cpu_autocast(real_init):
    """`torch.autocast("cuda", ...)` (and `torch.cuda.amp.autocast`) casts on the CPU, where the
    tensors that stand for CUDA tensors are; CUDA autocast would leave them alone."""
    def __init__(self, device_type, *args, **kwargs):
        real_init(self, "cpu" if _is_cuda_device(device_type) else device_type, *args, **kwargs)
    return __init__


def program_is_available(program):
    """`torch.cuda.is_available()` under --cuda-on-cpu: True when the program's own files ask
    (their CUDA tensors are made on the CPU, so "cuda if available" holds there; Triton 3.2's
    tutorial 09 builds its cuBLAS baseline only then), False for torch's and libraries' code."""
    def is_available():
        return program is not None and sys._getframe(1).f_code.co_filename in program
    return is_available


def _patch_torch(stack, torch, gpu, program, cuda_on_cpu=False, strict_cuda=False):
    stand_ins = replacements(gpu)
    if cuda_on_cpu:
        stand_ins["is_available"] = program_is_available(program)
    stack.enter_context(patched_module(torch.cuda, stand_ins))
    # torch asks find_spec("triton") whether Triton is installed: here that finds minitriton,
    # which cannot be inductor's GPU code generator; torch.compile keeps to its CPU backend
    stack.enter_context(patched_module(importlib.import_module("torch.utils._triton"),
                                       {"has_triton_package": lambda: False,
                                        "has_triton": lambda: False}))
    stack.enter_context(mode_class(torch)())
    if not strict_cuda:
        stack.enter_context(cuda_on_cpu_mode(torch))
        stack.enter_context(patched_class(torch.amp.autocast, "__init__",
                                          cpu_autocast(torch.amp.autocast.__init__)))
    if program is not None:
        real = next(vars(k)["is_cuda"] for k in type.mro(torch.Tensor) if "is_cuda" in vars(k))
        stack.enter_context(patched_class(torch.Tensor, "is_cuda",
                                          emulated_is_cuda(real, program)))
    stack.enter_context(patched_module(torch.cpu, {name: value for name, value in
                                                   CPU_ADDITIONS.items()
                                                   if not hasattr(torch.cpu, name)}))


class _PatchOnImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `torch` as usual, and patches torch.cuda once torch has been imported."""

    def __init__(self, on_import):
        self.on_import = on_import
        self.spec = None

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch" or self.spec is not None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        self.spec = spec
        self.loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__spec__.loader = module.__loader__ = self.loader
        self.loader.exec_module(module)
        self.on_import(module)


@contextlib.contextmanager
def patched(gpu, program_dir=None, cuda_on_cpu=False, strict_cuda=False):
    """torch patched for `gpu` for the duration: now if torch is imported, else as soon as the
    program imports it. `program_dir`: where the program's own files are (for `is_cuda`;
    None leaves `is_cuda` alone). Tensors asked for on CUDA are made on the CPU, unless
    `strict_cuda` (then they stop the program); `cuda_on_cpu`: is_available() is also True for
    the program's own files."""
    if cuda_on_cpu and strict_cuda:
        raise ValueError("cuda_on_cpu and strict_cuda contradict each other: give one")
    program = None if program_dir is None else ProgramFiles(program_dir)
    with contextlib.ExitStack() as stack:
        if sys.modules.get("torch") is not None:
            _patch_torch(stack, sys.modules["torch"], gpu, program, cuda_on_cpu, strict_cuda)
            yield
            return
        finder = _PatchOnImport(lambda torch: _patch_torch(stack, torch, gpu, program,
                                                           cuda_on_cpu, strict_cuda))
        sys.meta_path.insert(0, finder)
        stack.callback(lambda: finder in sys.meta_path and sys.meta_path.remove(finder))
        yield
