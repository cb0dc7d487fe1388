"""minitriton: Triton kernels on NumPy, on any CPU.

    import minitriton as triton
    import minitriton.language as tl

runs unmodified Triton kernel source: bounds-checked, with GPU numerics (fp16/bf16, TF32 dots,
C integer division) and exact traffic counts (`minitriton.record()`).
"""
from __future__ import annotations

from . import language, tools, viz
from .errors import (CompilationError, DeadlockError, DeviceAssertionError, GPUFaultError,
                     LaunchError, MiniTritonError, OrderError, OutOfBoundsError,
                     OutsideViewWarning, PaddingError, PartialWriteWarning, RaceError,
                     SanitizerError, UninitializedReadError)
from .errors import missing
from .memory import register_memory
from .observe.trace import Trace, TraceLimitError, Tracing, trace
from .observe.traffic import ArgTraffic, LaunchRecord, Recording, record
from .runtime.allocation import set_allocator
from .runtime.autotune import Config, autotune, heuristics
from .runtime.jit import JITFunction, jit
from .runtime.reinterpret import TensorWrapper, reinterpret
from .runner.modules import install_as_triton  # minitriton as `triton`, without the runner
from .settings import Settings, configure, current_settings

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
           "configure", "current_settings", "MiniTritonError", "CompilationError",
           "OutOfBoundsError", "DeviceAssertionError", "LaunchError", "SanitizerError",
           "RaceError", "OrderError", "DeadlockError", "UninitializedReadError", "PaddingError",
           "GPUFaultError", "set_allocator", "register_memory", "install_as_triton",
           "reinterpret", "TensorWrapper", "OutsideViewWarning", "PartialWriteWarning", "trace",
           "Trace", "Tracing", "TraceLimitError", "viz"]


def __getattr__(name):
    raise missing("triton", name)
