"""The emulated GPUs the autotuner ranks configurations on: a roofline per launch.

A launch's predicted time is max(bytes / bandwidth, sum of its tl.dot FLOPs / the tensor-core
rate of their input type): the bytes its programs read and wrote (the LaunchRecord's traffic,
masked lanes not counted) and the FLOPs of its dots. Dense rates, from NVIDIA's data sheets
(SXM parts). fp32 dot inputs count at the TF32 rate, since `tl.dot` rounds them to TF32 by
default; fp64 and `input_precision="ieee"` dots are not told apart from TF32 ones.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GPU:
    name: str
    bandwidth: float  # bytes/s of HBM
    fp16: float  # FLOP/s of dense fp16/bf16 tensor-core dots
    tf32: float
    fp32: float  # CUDA cores, no tensor cores
    fp8: float  # fp8 and int8 dots
    shared_memory: int  # bytes of shared memory a program may use


GPUS = {g.name: g for g in (
    GPU("H100", 3.35e12, 989e12, 494e12, 67e12, 1979e12, 227 * 1024),
    GPU("H200", 4.8e12, 989e12, 494e12, 67e12, 1979e12, 227 * 1024),
    GPU("A100", 2.039e12, 312e12, 156e12, 19.5e12, 624e12, 163 * 1024),
)}


def gpu(name):
    try:
        return GPUS[name]
    except KeyError:
        raise ValueError(f"unknown autotune_gpu {name!r}; choose one of {sorted(GPUS)}") from None


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
