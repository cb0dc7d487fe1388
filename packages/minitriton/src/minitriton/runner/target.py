"""The emulated GPU: what `triton.runtime.driver.active` answers under the runner.

A program that asks Triton's driver for its device gets the CPU (`torch.device("cpu")`), and one
that asks for its target or device properties gets a real GPU's numbers (H100 by default), so
that tutorials which size their grids from the SM count or the shared memory run unmodified.

SM counts, registers and shared memory follow tritonlab's hardware table
(src/tritonlab/hardware/specs.py; minitriton does not import tritonlab); clocks, bus widths and
memory sizes are the vendors' figures, rounded: nothing in minitriton's results depends on them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .. import testing

KB, MB, GB = 1024, 1024 ** 2, 1024 ** 3


@dataclass(frozen=True)
class GPU:
    """One emulated GPU, in the units CUDA reports (bytes, kHz, bits)."""
    key: str
    name: str  # what torch.cuda.get_device_name() says on the real card
    capability: tuple
    multiprocessor_count: int
    registers_per_sm: int
    registers_per_block: int
    max_threads_per_sm: int
    shared_per_sm: int
    shared_per_block_optin: int  # what Triton calls max_shared_mem
    l2_bytes: int
    total_memory: int
    sm_clock_khz: int
    mem_clock_khz: int
    mem_bus_width: int
    warp_size: int = 32
    shared_per_block: int = 48 * KB  # without opting in

    @property
    def arch(self):
        """Triton's CUDA arch number: 90 for compute capability 9.0."""
        return self.capability[0] * 10 + self.capability[1]


_HOPPER = dict(registers_per_sm=65536, registers_per_block=65536, max_threads_per_sm=2048,
               shared_per_sm=228 * KB, shared_per_block_optin=227 * KB)

GPUS = {
    "H100": GPU("H100", "NVIDIA H100 80GB HBM3", (9, 0), 132, l2_bytes=50 * MB,
                total_memory=80 * GB, sm_clock_khz=1980000, mem_clock_khz=2619000,
                mem_bus_width=5120, **_HOPPER),
    "H200": GPU("H200", "NVIDIA H200", (9, 0), 132, l2_bytes=60 * MB, total_memory=140 * GB,
                sm_clock_khz=1980000, mem_clock_khz=3201000, mem_bus_width=6144, **_HOPPER),
    "A100": GPU("A100", "NVIDIA A100-SXM4-80GB", (8, 0), 108, registers_per_sm=65536,
                registers_per_block=65536, max_threads_per_sm=2048, shared_per_sm=164 * KB,
                shared_per_block_optin=163 * KB, l2_bytes=40 * MB, total_memory=80 * GB,
                sm_clock_khz=1410000, mem_clock_khz=1593000, mem_bus_width=5120),
    "B200": GPU("B200", "NVIDIA B200", (10, 0), 148, l2_bytes=126 * MB, total_memory=180 * GB,
                sm_clock_khz=1965000, mem_clock_khz=3996000, mem_bus_width=8192, **_HOPPER),
}
DEFAULT_GPU = "H100"


def get_gpu(name):
    """A GPU of the table by name, case-insensitive."""
    key = str(name).upper()
    if key not in GPUS:
        raise ValueError(f"unknown GPU {name!r}; the runner emulates {', '.join(GPUS)}")
    return GPUS[key]


@dataclass(frozen=True)
class GPUTarget:
    """As `triton.backends.compiler.GPUTarget`: what `get_current_target()` returns."""
    backend: str
    arch: object
    warp_size: int


class CPUEvent:
    """`torch.cuda.Event` on the host clock: `elapsed_time` is CPU wall time in ms."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.time = None

    def record(self, stream=None):
        self.time = time.perf_counter()

    def elapsed_time(self, end_event):
        if self.time is None or end_event.time is None:
            raise RuntimeError("elapsed_time: both events must be recorded first")
        return (end_event.time - self.time) * 1e3

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True


class CPUDeviceInterface:
    """What `driver.active.get_device_interface()` returns (torch.cuda on a GPU): the calls
    that benchmarks make, answered for the CPU and the emulated GPU."""
    Event = CPUEvent

    def __init__(self, gpu):
        self.gpu = gpu

    def current_device(self):
        return 0

    def set_device(self, device):
        pass

    def device_count(self):
        return 1

    def synchronize(self, device=None):
        pass

    def get_device_capability(self, device=None):
        return self.gpu.capability

    def get_device_name(self, device=None):
        return self.gpu.name


class EmulatedUtils:
    """`driver.active.utils`."""

    def __init__(self, gpu):
        self.gpu = gpu

    def get_device_properties(self, device=None):
        """The keys Triton's CUDA driver returns. `device` is ignored: tutorials pass
        `DEVICE.index`, which is None for the CPU device."""
        g = self.gpu
        return {"max_shared_mem": g.shared_per_block_optin, "max_num_regs": g.registers_per_block,
                "multiprocessor_count": g.multiprocessor_count, "warpSize": g.warp_size,
                "sm_clock_rate": g.sm_clock_khz, "mem_clock_rate": g.mem_clock_khz,
                "mem_bus_width": g.mem_bus_width}


class EmulatedDriver:
    """`triton.runtime.driver.active` under the runner: a CUDA driver whose device is the CPU."""
    backend = "cuda"

    def __init__(self, gpu):
        self.gpu = gpu
        self.utils = EmulatedUtils(gpu)
        self.device_interface = CPUDeviceInterface(gpu)

    @staticmethod
    def is_active():
        return True

    def get_current_target(self):
        return GPUTarget("cuda", self.gpu.arch, self.gpu.warp_size)

    def get_active_torch_device(self):
        """The CPU: tensors made on it are what minitriton's kernels read and write."""
        try:
            import torch
        except ImportError:  # a NumPy program: there is no torch device to give
            return "cpu"
        return torch.device("cpu")

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_device_interface(self):
        return self.device_interface

    def get_benchmarker(self):
        return testing.do_bench

    def get_empty_cache_for_benchmark(self):
        """A buffer of the L2's size, as Triton's (which do_bench zeroes between runs)."""
        try:
            import torch
        except ImportError:
            return np.zeros(self.gpu.l2_bytes // 4, dtype=np.int32)
        return torch.zeros(self.gpu.l2_bytes // 4, dtype=torch.int32)

    def clear_cache(self, cache):
        cache.fill_(0) if hasattr(cache, "fill_") else cache.fill(0)

    def __repr__(self):
        return f"EmulatedDriver({self.gpu.key}, device=cpu)"


class DriverConfig:
    """`triton.runtime.driver`: `.active`, `.default`, `set_active`, `reset_active`."""

    def __init__(self, default):
        self.default = default
        self._active = None

    @property
    def active(self):
        return self._active if self._active is not None else self.default

    def set_active(self, driver):
        self._active = driver

    def reset_active(self):
        self._active = None
