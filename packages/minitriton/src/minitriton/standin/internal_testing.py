"""`triton._internal_testing` as minitriton answers it: the helpers Triton's package ships for its
own test suite (dtype lists, `numpy_random`, `to_triton`/`to_numpy`, the target predicates), so
that Triton's language tests and libraries' suites written against them run unmodified under
`python -m minitriton -m pytest` or the pytest plugin.

The target predicates read the emulated GPU (`triton.runtime.driver.active`): an H100 by default,
so `is_cuda()` and `is_hopper()` are true, as on that GPU. Under `TRITON_INTERPRET=1`, as Triton's
own interpreter does, there is no target: every predicate is false and the tests take their
interpreter branches. Processes are not forked for `run_in_process`: the function runs in this
process and its exception is returned, as the child's would be.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import re

import numpy as np
import pytest
import torch

from .. import language as tl
from .. import runtime as runtime_package
from ..runtime.reinterpret import TensorWrapper, reinterpret

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})

_WARMUP = contextvars.ContextVar("minitriton_compile_warmup", default=False)


def is_interpreter():
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def is_compile_warmup():
    return _WARMUP.get()


def random_int(low, high, *, warmup_value=None, **kwargs):
    if is_compile_warmup():
        return low if warmup_value is None else warmup_value
    return int(torch.randint(low, high, size=(), **kwargs).item())


def random_float(*, warmup_value=0.5, **kwargs):
    if is_compile_warmup():
        return warmup_value
    return float(torch.rand((), **kwargs).item())


def get_current_target():
    """The emulated target, or None under TRITON_INTERPRET=1 (as Triton's helper says)."""
    if is_interpreter():
        return None
    return runtime_package.driver.active.get_current_target()


def _backend_arch():
    target = get_current_target()
    return (None, None) if target is None else (target.backend, str(target.arch))


def is_cuda():
    return _backend_arch()[0] == "cuda"


def _capability():
    """(major, minor) of the emulated NVIDIA GPU, or None off CUDA."""
    backend, arch = _backend_arch()
    if backend != "cuda":
        return None
    digits = int(re.sub(r"\D", "", arch) or 0)
    return digits // 10, digits % 10


def _major_in(*majors):
    cap = _capability()
    return cap is not None and cap[0] in majors


def is_ampere_or_newer():
    cap = _capability()
    return cap is not None and cap[0] >= 8


def is_hopper_or_newer():
    cap = _capability()
    return cap is not None and cap[0] >= 9


def is_hopper():
    return _major_in(9)


def is_blackwell():
    return _major_in(10, 11)


def is_blackwell_ultra():
    return _capability() == (10, 3)


def is_rubin():
    return _capability() == (10, 7)


def is_sm12x():
    return _major_in(12)


def is_hip():
    return _backend_arch()[0] == "hip"


def _hip_arch(*names):
    backend, arch = _backend_arch()
    return backend == "hip" and any(arch.startswith(n) for n in names)


def is_hip_cdna2():
    return _hip_arch("gfx90a")


def is_hip_cdna3():
    return _hip_arch("gfx942")


def is_hip_cdna4():
    return _hip_arch("gfx950")


def is_hip_rdna3():
    return _hip_arch("gfx110", "gfx115")


def is_hip_gfx11():  # Triton 3.6's name
    return _hip_arch("gfx11")


def is_hip_gfx12():  # Triton 3.6's name
    return _hip_arch("gfx12")


def get_arch():
    return _backend_arch()[1] or ""


def is_hip_rdna4m():
    return _hip_arch("gfx1250")


def is_hip_rdna4():
    return _hip_arch("gfx120")


def is_hip_gfx1250():
    return _hip_arch("gfx1250")


def is_hip_cdna3_or_newer():
    return is_hip_cdna3() or is_hip_cdna4()


def is_hip_cdna():
    return is_hip_cdna2() or is_hip_cdna3_or_newer()


def is_hip_rdna():
    return is_hip_rdna3() or is_hip_rdna4()


def get_hip_lds_size():
    return 163840 if is_hip_cdna4() else 65536


def is_xpu():
    return _backend_arch()[0] == "xpu"


def numpy_random(shape, dtype_str, rs=None, low=None, high=None):
    """Random values of `dtype_str` (seed 17 unless `rs` is given): integers over the type's
    range (within low/high) with zeros made 1, fp8 as small int8 codes, floats from N(0, 1),
    bfloat16 as fp32 with the low 16 bits cleared, booleans as N(0, 1) > 0."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    rs = np.random.RandomState(seed=17) if rs is None else rs
    if dtype_str in integral_dtypes:
        info = np.iinfo(dtype_str)
        low = info.min if low is None else max(low, info.min)
        high = info.max if high is None else min(high, info.max)
        x = rs.randint(low, high, shape, dtype=np.dtype(dtype_str))
        x[x == 0] = 1  # tests divide by these
        return x
    if dtype_str and "float8" in dtype_str:
        return rs.randint(20, 40, shape, dtype=np.int8)
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":
        bits = rs.normal(0, 1, shape).astype(np.float32).view(np.uint32)
        return (bits & np.uint32(0xFFFF0000)).view(np.float32)
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise RuntimeError(f"Unknown dtype {dtype_str}")


def to_triton(x, device, dst_type=None):
    """A torch tensor of `x` (NumPy) on `device`; unsigned types and fp8 as a TensorWrapper
    over the signed / int8 storage, fp32 data as bfloat16 when `dst_type` says so."""
    name = x.dtype.name
    if name in uint_dtypes:
        return reinterpret(torch.tensor(x.astype(name[1:]), device=device), getattr(tl, name))
    if dst_type and "float8" in dst_type:
        return reinterpret(torch.tensor(x, device=device), getattr(tl, dst_type))
    if name == "float32" and dst_type == "bfloat16":
        return torch.tensor(x, device=device).bfloat16()
    return torch.tensor(x, device=device)


def str_to_triton_dtype(x):
    return tl.str_to_ty(x)


def torch_dtype_name(dtype):
    if isinstance(dtype, tl.dtype):
        return dtype.name
    if isinstance(dtype, torch.dtype):
        return str(dtype).split(".", 1)[1]
    raise TypeError(f"not a triton or torch dtype: {type(dtype)}")


def to_numpy(x):
    if isinstance(x, TensorWrapper):
        return x.base.cpu().numpy().astype(torch_dtype_name(x.dtype))
    if isinstance(x, torch.Tensor):
        return x.cpu().float().numpy() if x.dtype is torch.bfloat16 else x.cpu().numpy()
    raise ValueError(f"Not a triton-compatible tensor: {x}")


def supports_tma(byval_only=False):
    """The simulator runs tensor descriptors on every emulated target from Hopper up."""
    return is_interpreter() or is_hopper_or_newer()


def supports_ws():
    return is_interpreter() or is_hopper_or_newer()


def supports_clc():
    return is_cuda() and _capability()[0] >= 10


def tma_skip_msg(byval_only=False):
    return "Requires TMA support (an emulated NVIDIA Hopper or newer: python -m minitriton " \
           "--gpu H100)"


requires_tma = pytest.mark.skipif(not supports_tma(), reason=tma_skip_msg())


def default_alloc_fn(size, align, stream):
    return torch.empty(size, dtype=torch.int8)


def unwrap_tensor(t):
    return t.base if isinstance(t, TensorWrapper) else t


@dataclasses.dataclass
class ProcessResult:
    exc: BaseException | None
    stderr: str


def run_in_process(client_fn, args=(), kwargs=None, env=None):
    """`client_fn(*args, **kwargs)` with `env` set, in this process: its exception (or None) is
    returned as a child process's would be; stderr is not captured."""
    if is_compile_warmup():
        return client_fn(*args, **(kwargs or {}))
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        client_fn(*args, **(kwargs or {}))
        exc = None
    except Exception as e:  # the child's failure is the caller's to check
        exc = e
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return ProcessResult(exc, "")


@contextlib.contextmanager
def use_process_pool(preload_module):
    """No pool: `run_in_process` runs here."""
    yield None


def _fresh_knobs_impl(skipped_attr=None):
    """(fresh, reset): the knobs as they are (minitriton reads none of them), put back after."""
    from triton import knobs  # the stand-in's, installed with this module
    saved = dict(vars(knobs))

    def fresh():
        return knobs

    def reset():
        vars(knobs).update(saved)

    return fresh, reset
