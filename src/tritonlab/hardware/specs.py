"""GPU specifications used by the hardware model. Sources are listed in docs/hardware.md.

Peak rates are dense (no 2:4 sparsity), in FLOP/s; bandwidths in bytes/s; sizes in bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

KB, MB = 1024, 1024 * 1024
T = 1e12


@dataclass(frozen=True)
class GPUSpec:
    name: str
    arch: str
    sm_count: int
    registers_per_sm: int
    max_registers_per_thread: int
    max_warps_per_sm: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    max_threads_per_block: int
    shared_per_sm: int
    shared_per_block: int  # the most one block may opt in to
    shared_reserved_per_block: int  # taken by the system per resident block
    l2_bytes: int
    hbm_bandwidth: float
    peak_flops: dict  # dtype -> dense FLOP/s: fp32, tf32, fp16, bf16, fp8
    register_granularity: int = 256  # registers are allocated per warp in units of this
    warp_size: int = 32

    def flops(self, dtype):
        key = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float8": "fp8"}.get(
            dtype, dtype)
        if key not in self.peak_flops:
            raise ValueError(f"{self.name}: no peak rate for {dtype} (have "
                             f"{', '.join(self.peak_flops)})")
        return self.peak_flops[key]


_HOPPER = dict(registers_per_sm=65536, max_registers_per_thread=255, max_warps_per_sm=64,
               max_threads_per_sm=2048, max_blocks_per_sm=32, max_threads_per_block=1024,
               shared_per_sm=228 * KB, shared_per_block=227 * KB, shared_reserved_per_block=1 * KB)
_ADA = dict(registers_per_sm=65536, max_registers_per_thread=255, max_warps_per_sm=48,
            max_threads_per_sm=1536, max_blocks_per_sm=24, max_threads_per_block=1024,
            shared_per_sm=100 * KB, shared_per_block=99 * KB, shared_reserved_per_block=1 * KB)

GPUS = {
    "A100": GPUSpec("A100-SXM4-80GB", "sm80", 108, 65536, 255, 64, 2048, 32, 1024, 164 * KB,
                    163 * KB, 1 * KB, 40 * MB, 2.039e12,
                    {"fp32": 19.5 * T, "tf32": 156 * T, "fp16": 312 * T, "bf16": 312 * T}),
    "H100": GPUSpec("H100-SXM5-80GB", "sm90", 132, l2_bytes=50 * MB, hbm_bandwidth=3.35e12,
                    peak_flops={"fp32": 66.9 * T, "tf32": 494.7 * T, "fp16": 989.4 * T,
                                "bf16": 989.4 * T, "fp8": 1978.9 * T}, **_HOPPER),
    "H200": GPUSpec("H200-SXM-141GB", "sm90", 132, l2_bytes=60 * MB, hbm_bandwidth=4.8e12,
                    peak_flops={"fp32": 66.9 * T, "tf32": 494.7 * T, "fp16": 989.4 * T,
                                "bf16": 989.4 * T, "fp8": 1978.9 * T}, **_HOPPER),
    "B200": GPUSpec("B200", "sm100", 148, l2_bytes=126 * MB, hbm_bandwidth=8.0e12,
                    peak_flops={"fp32": 80 * T, "tf32": 1100 * T, "fp16": 2250 * T,
                                "bf16": 2250 * T, "fp8": 4500 * T}, **_HOPPER),
    "L4": GPUSpec("L4", "sm89", 58, l2_bytes=48 * MB, hbm_bandwidth=300e9,
                  peak_flops={"fp32": 30.3 * T, "tf32": 60 * T, "fp16": 121 * T, "bf16": 121 * T,
                              "fp8": 242.5 * T}, **_ADA),
    "RTX4090": GPUSpec("GeForce RTX 4090", "sm89", 128, l2_bytes=72 * MB, hbm_bandwidth=1008e9,
                       peak_flops={"fp32": 82.6 * T, "tf32": 82.6 * T, "fp16": 165.2 * T,
                                   "bf16": 165.2 * T, "fp8": 330.3 * T}, **_ADA),
}
ALIASES = {"A100-80GB": "A100", "H100-SXM": "H100", "H200-SXM": "H200", "4090": "RTX4090",
           "RTX-4090": "RTX4090"}


def get(name):
    """A GPU by name (case-insensitive; A100, H100, H200, B200, L4, RTX4090)."""
    key = ALIASES.get(name, name)
    for k, spec in GPUS.items():
        if k.lower() == str(key).lower():
            return spec
    raise ValueError(f"unknown GPU {name!r}; known: {', '.join(GPUS)}")


def current(device=None):
    """The spec of the GPU in use, from torch's device properties (None without CUDA). Counts
    the device reports (SMs, L2, shared memory) override the table's."""
    import torch
    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(device or torch.cuda.current_device())
    base = next((s for k, s in GPUS.items() if k.lower() in props.name.lower().replace(" ", "")),
                None)
    if base is None:
        return None
    return replace(base, sm_count=props.multi_processor_count,
                   l2_bytes=getattr(props, "L2_cache_size", base.l2_bytes))
