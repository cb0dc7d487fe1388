"""minitriton: Triton kernels on NumPy, on any CPU.

    import minitriton as triton
    import minitriton.language as tl

runs unmodified Triton kernel source: bounds-checked, with GPU numerics (fp16/bf16, TF32 dots,
C integer division) and exact traffic counts (`minitriton.record()`).
"""
from __future__ import annotations

import sys

from . import language, runtime, tools, viz
from .errors import (CompilationError, DeadlockError, DeviceAssertionError, GPUFaultError,
                     InterpreterError, LaunchError, MiniTritonError, TritonError, OrderError, OutOfBoundsError,
                     OutsideViewWarning, PaddingError, PartialWriteWarning, RaceError,
                     SanitizerError, UninitializedReadError)
from .errors import missing
from .host import register_memory
from .observe.trace import Trace, TraceLimitError, Tracing, trace
from .observe.traffic import ArgTraffic, LaunchRecord, Recording, record
from .runtime.allocation import set_allocator
from .runtime.autotune import Config, InPlaceAutotuneWarning, autotune, heuristics
from .runtime.jit import JITFunction, jit
from .runtime.predicting import LaunchPrediction, predicting
from .runtime.reinterpret import TensorWrapper, reinterpret
from .runtime.gpus import DEFAULT_GPU, gpu as _gpu
from .settings import Settings, configure, current_settings
from .standin.modules import TRITON_VERSION, Installed
from .standin.target import DriverConfig, EmulatedDriver

__version__ = "0.1.0"


def cdiv(x, y):
    """Ceiling division of two ints: the number of blocks of size `y` that cover `x`."""
    return (x + y - 1) // y


def next_power_of_2(n):
    """The smallest power of two >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


__all__ = ["jit", "JITFunction", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2",
           "language", "record", "Recording", "LaunchRecord", "ArgTraffic", "Settings",
           "configure", "current_settings", "TritonError", "InterpreterError", "MiniTritonError", "CompilationError",
           "OutOfBoundsError", "DeviceAssertionError", "LaunchError", "SanitizerError",
           "RaceError", "OrderError", "DeadlockError", "UninitializedReadError", "PaddingError",
           "GPUFaultError", "set_allocator", "register_memory", "install_as_triton",
           "reinterpret", "TensorWrapper", "OutsideViewWarning", "PartialWriteWarning",
           "InPlaceAutotuneWarning", "trace", "predicting", "LaunchPrediction",
           "Trace", "Tracing", "TraceLimitError", "viz"]


# `triton.runtime.driver` for a plain `import minitriton as triton`, as under the runner: the CPU
# as the device, an emulated GPU as the target
runtime.driver = DriverConfig(EmulatedDriver(_gpu(DEFAULT_GPU)))


def install_as_triton(triton_version=TRITON_VERSION, gpu=DEFAULT_GPU):
    """minitriton as `triton` in this process, without the runner: `import triton`,
    `from triton.language.extra.libdevice import tanh`... give minitriton's modules, and
    `triton.__version__` is `triton_version` (the emulated release; `minitriton.__version__`
    stays minitriton's). Triton's driver reports the emulated `gpu`; torch.cuda is left alone
    (the runner's --cuda-on-cpu and friends are not applied). It lasts until `.uninstall()` on
    what it returns (or the end of a `with` block around it), kept or not."""
    return Installed(sys.modules[__name__], triton_version, EmulatedDriver(_gpu(gpu)))


def __getattr__(name):
    raise missing("triton", name)
