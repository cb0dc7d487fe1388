"""The emulated GPU: what `triton.runtime.driver.active` answers under the runner.

A program that asks Triton's driver for its device gets the CPU (`torch.device("cpu")`), and one
that asks for its target or device properties gets a real GPU's numbers (H100 by default), so
that tutorials which size their grids from the SM count or the shared memory run unmodified.

`driver.active.utils` also fills Triton 3.2/3.3's experimental TMA descriptors in host memory
(`fill_1d_tma_descriptor`, `fill_2d_tma_descriptor`; the 128 bytes' fields are minitriton's own,
tools/experimental_descriptor.py lists them), which `tl._experimental_descriptor_load/store`
read in kernels (language/experimental.py).

The GPUs themselves are minitriton's one table, runtime/gpus.py.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .. import testing, types as _t
from ..memory import AddressSpace
from ..tools import experimental_descriptor

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

    # Triton 3.2/3.3's experimental TMA descriptors (tools/experimental_descriptor.py gives the
    # 128 bytes' fields): the descriptor at host address `desc_address` describes the dense
    # tensor at byte address `ptr`
    def fill_1d_tma_descriptor(self, ptr, dim, block_dim, element_size, desc_address):
        _fill(desc_address, experimental_descriptor.encode(ptr, [dim], [block_dim],
                                                           element_size), "fill_1d")

    def fill_2d_tma_descriptor(self, ptr, dim1, dim0, block_dim1, block_dim0, element_size,
                               desc_address):
        """`dim1` rows of `dim0` contiguous elements, boxes of `block_dim1` x `block_dim0`."""
        _fill(desc_address, experimental_descriptor.encode(ptr, [dim1, dim0],
                                                           [block_dim1, block_dim0],
                                                           element_size), "fill_2d")


def _fill(desc_address, fields, op):
    """Write a descriptor's fields into the live host memory at `desc_address`: a torch CPU
    tensor (found by its address, memory.py) or a NumPy array given to register_memory."""
    size = experimental_descriptor.TMA_DESC_SIZE
    if isinstance(desc_address, bool) or not isinstance(desc_address, (int, np.integer)):
        raise TypeError(f"{op}_tma_descriptor: desc_address must be the descriptor's host "
                        f"address as an int (`desc.data_ptr()`), got {type(desc_address).__name__}")
    desc_address = int(desc_address)
    if desc_address % experimental_descriptor.DESC_ALIGNMENT:
        raise ValueError(f"{op}_tma_descriptor: the descriptor at 0x{desc_address:x} must be "
                         f"{experimental_descriptor.DESC_ALIGNMENT}-byte aligned (a CUtensorMap "
                         f"is); allocate it as torch.empty({size}, dtype=torch.int8)")
    space = AddressSpace()
    data, origin = space.pointers_from_integers(
        np.array([desc_address, desc_address + size - 1], dtype=np.int64), _t.uint8)
    if origin is None or data[1] - data[0] != size - 1:  # (an unknown end keeps the origin)
        raise ValueError(f"{op}_tma_descriptor: the {size} bytes at 0x{desc_address:x} are not "
                         f"all in one live CPU tensor; allocate the descriptor as "
                         f"torch.empty({size}, dtype=torch.int8) and pass its data_ptr() (a "
                         f"NumPy array: give it to minitriton.register_memory first)")
    buf = space.buffers[origin]
    start = int(data[0] - buf.base)
    experimental_descriptor.write(buf.flat[start:start + size].view(np.uint8), fields)


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
