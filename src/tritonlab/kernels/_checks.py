"""Input validation and the small helpers the kernels' launch functions share."""
from __future__ import annotations

import functools

import torch

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
FLOAT64_DTYPES = FLOAT_DTYPES + (torch.float64,)  # ops whose math runs in fp64 for fp64 inputs


def check_inputs(op, *tensors, device, dtypes=FLOAT_DTYPES, same_shape=True, contiguous=True):
    """Check device, dtype and shapes; return the tensors, made contiguous unless the kernel
    takes strides (`contiguous=False`).

    `device` is where the calling kernel module's backend runs ("cuda" or "cpu")."""
    out = []
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{op}: argument {i} must be a torch.Tensor, got {type(t).__name__}")
        if t.device.type != device:
            raise ValueError(
                f"{op}: argument {i} is on {t.device}, but the backend of these kernels runs on "
                f"{device}; move it with .to('{device}') (or set TRITONLAB_BACKEND)")
        if t.dtype not in dtypes:
            names = ", ".join(str(d).replace("torch.", "") for d in dtypes)
            raise TypeError(f"{op}: argument {i} has dtype {t.dtype}; supported: {names}")
        out.append(t.contiguous() if contiguous else t)
    if same_shape:
        for i, t in enumerate(out[1:], 1):
            if t.shape != out[0].shape:
                raise ValueError(f"{op}: shapes differ: {tuple(out[0].shape)} and "
                                 f"{tuple(t.shape)} (argument {i})")
            if t.dtype != out[0].dtype:
                raise TypeError(f"{op}: dtypes differ: {out[0].dtype} and {t.dtype} "
                                f"(argument {i})")
    return out


@functools.lru_cache(maxsize=None)
def sm_count(device_index):
    """Streaming multiprocessors of a CUDA device (programs of persistent kernels)."""
    return torch.cuda.get_device_properties(device_index).multi_processor_count


@functools.lru_cache(maxsize=None)
def _pdl_capable(device_index, backend):
    if device_index is None or device_index < 0:
        return backend == "sim"  # minitriton: griddepcontrol's no-ops, launch_pdl taken
    return backend == "triton" and torch.cuda.get_device_capability(device_index)[0] >= 9


def pdl_kw(enabled, x, backend):
    """A launch's keywords for programmatic dependent launch: the kernel's PDL constexpr
    (`tl.extra.cuda.gdc_wait()` before it touches memory, then its dependents released) and
    Triton's `launch_pdl` option, where `enabled` and the launch runs on a GPU of compute
    capability 9 or newer (Hopper's griddepcontrol) or on the simulator (`backend`, the
    backend's NAME); none at all elsewhere, so that the launch's key stays as it was
    (docs/decisions.md#rmsnorm-pdl)."""
    if enabled and _pdl_capable(x.get_device(), backend):
        return {"PDL": True, "launch_pdl": True}
    return {}


def grid_1d(n, block):
    return ((n + block - 1) // block,)


def stats_dtype(x):
    """The torch dtype of statistics kept between kernels (RMSNorm's rstd, softmax's chunk
    max and sum): fp64 for fp64 inputs, fp32 otherwise, as `compute_dtype`."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def compute_dtype(x, tl):
    """The dtype kernels compute in: fp64 for fp64 inputs (gradcheck), fp32 otherwise."""
    return tl.float64 if x.dtype == torch.float64 else tl.float32


def num_warps_for(block):
    """Warps for a row-sized block (Triton's softmax tutorial's rule)."""
    return 4 if block < 2048 else 8 if block < 8192 else 16
