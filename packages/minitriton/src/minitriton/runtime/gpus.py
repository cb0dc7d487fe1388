"""The emulated GPUs: their properties (the runner's driver answers with them) and rates (the
autotuner ranks configurations by a roofline per launch on one of them).

A launch's predicted time is max(bytes / bandwidth, sum of its tl.dot FLOPs / the tensor-core
rate of their input type): the bytes its programs read and wrote (the LaunchRecord's traffic,
masked lanes not counted) and the FLOPs of its dots. Dense rates, from NVIDIA's data sheets
(SXM parts). fp32 dot inputs count at the TF32 rate, since `tl.dot` rounds them to TF32 by
default; fp64 and `input_precision="ieee"` dots are not told apart from TF32 ones.
"""
from __future__ import annotations

from dataclasses import dataclass


KB, MB, GB = 1024, 1024 ** 2, 1024 ** 3


@dataclass(frozen=True)
class GPU:
    """One emulated GPU: what CUDA reports of it (bytes, kHz, bits), for the runner's driver and
    torch.cuda queries, and its rates, for the autotuner's roofline. SM counts, registers and
    shared memory follow tritonlab's hardware table (src/tritonlab/hardware/specs.py;
    minitriton does not import tritonlab); rates are NVIDIA's dense data-sheet figures (SXM);
    clocks, bus widths and memory sizes are the vendors' figures, rounded."""
    key: str
    name: str  # what torch.cuda.get_device_name() says on the real card
    capability: tuple
    multiprocessor_count: int
    registers_per_sm: int
    registers_per_block: int
    max_threads_per_sm: int
    shared_per_sm: int
    shared_per_block_optin: int  # what Triton calls max_shared_mem: the most a program may use
    l2_bytes: int
    total_memory: int
    sm_clock_khz: int
    mem_clock_khz: int
    mem_bus_width: int
    bandwidth: float  # bytes/s of HBM
    fp16: float  # FLOP/s of dense fp16/bf16 tensor-core dots
    tf32: float
    fp32: float  # CUDA cores, no tensor cores
    fp8: float  # fp8 and int8 dots
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
                mem_bus_width=5120, bandwidth=3.35e12, fp16=989e12, tf32=494e12, fp32=67e12,
                fp8=1979e12, **_HOPPER),
    "H200": GPU("H200", "NVIDIA H200", (9, 0), 132, l2_bytes=60 * MB, total_memory=140 * GB,
                sm_clock_khz=1980000, mem_clock_khz=3201000, mem_bus_width=6144,
                bandwidth=4.8e12, fp16=989e12, tf32=494e12, fp32=67e12, fp8=1979e12,
                **_HOPPER),
    "A100": GPU("A100", "NVIDIA A100-SXM4-80GB", (8, 0), 108, registers_per_sm=65536,
                registers_per_block=65536, max_threads_per_sm=2048, shared_per_sm=164 * KB,
                shared_per_block_optin=163 * KB, l2_bytes=40 * MB, total_memory=80 * GB,
                sm_clock_khz=1410000, mem_clock_khz=1593000, mem_bus_width=5120,
                bandwidth=2.039e12, fp16=312e12, tf32=156e12, fp32=19.5e12, fp8=624e12),
    "B200": GPU("B200", "NVIDIA B200", (10, 0), 148, l2_bytes=126 * MB, total_memory=180 * GB,
                sm_clock_khz=1965000, mem_clock_khz=3996000, mem_bus_width=8192,
                bandwidth=8e12, fp16=2250e12, tf32=1100e12, fp32=75e12, fp8=4500e12,
                **_HOPPER),
}
DEFAULT_GPU = "H100"


def gpu(name, what="GPU"):
    """A GPU of the table by name, case-insensitive; `what` names the setting in the error."""
    key = str(name).upper()
    if key not in GPUS:
        raise ValueError(f"unknown {what} {name!r}; minitriton emulates {', '.join(GPUS)}")
    return GPUS[key]


def dot_rate(g, a_dtype):
    """FLOP/s of a tl.dot whose first operand has this minitriton dtype."""
    name = str(a_dtype)
    if name in ("fp16", "bf16", "float16", "bfloat16"):
        return g.fp16
    if "8" in name and name not in ("fp64", "float64"):  # fp8e4nv, fp8e5, int8, uint8
        return g.fp8
    if name in ("fp32", "float32"):
        return g.tf32
    return g.fp32


def roofline_seconds(g, record, dots):
    """Predicted seconds of one launch: its LaunchRecord and the (a dtype, ..., flops) of its
    dots, as the launch probe saw them."""
    memory = (record.bytes_read + record.bytes_written) / g.bandwidth
    compute = sum(flops / dot_rate(g, a_ty) for a_ty, *_, flops in dots)
    return max(memory, compute)
