"""Load the kernel corpus (kernels.py) bound to a Triton implementation, and the arrays its cases
run on: NumPy arrays on the simulator (no torch needed), torch tensors on a CUDA device for real
Triton. Inputs are always drawn with NumPy, so both runs of a case see the same bits."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

PATH = Path(__file__).with_name("kernels.py")
SEMANTICS = Path(__file__).with_name("semantics.py")  # issue 21's GPU semantics


def load(triton, tl, path=PATH, cache=True):
    """The kernels of `path` (default kernels.py) with `triton` and `tl` bound to an
    implementation (loaded once per file name and implementation, unless not `cache`)."""
    name = f"tests_corpus_{Path(path).stem}_{triton.__name__}"
    if cache and name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.triton, module.tl = triton, tl
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def names(prefix, path=PATH):
    text = Path(path).read_text()
    return [line.split("(")[0][4:] for line in text.splitlines()
            if line.startswith(f"def {prefix}")]


def expected_error(triton, name):
    """What the rejected case `name` raises: arguments that do not bind (`bad_launch_*`) are a
    TypeError in Triton, a LaunchError (a TypeError) in minitriton; the rest do not compile."""
    launch = name.startswith("bad_launch_")
    if triton.__name__ == "minitriton":
        return triton.LaunchError if launch else triton.CompilationError
    from triton.compiler.errors import CompilationError
    return TypeError if launch else CompilationError


def make_rng(seed=0):
    """rng(n): n standard-normal fp32 values, NumPy arrays whatever the device."""
    gen = np.random.default_rng(seed)

    def rng(n):
        return gen.standard_normal(n, dtype=np.float32)
    return rng


class NumpyArrays:
    """The cases' arrays on the simulator."""

    device = "cpu"

    def put(self, a):
        return np.array(a, order="K")  # a copy that keeps the layout (a transposed view stays one)

    def empty(self, shape, dtype=np.float32):
        return np.empty(shape, dtype)

    def full(self, shape, value, dtype=np.float32):
        return np.full(shape, value, dtype)

    def strides(self, a):
        return tuple(s // a.itemsize for s in a.strides)

    def numpy(self, a):
        return np.array(a)


class TorchArrays(NumpyArrays):
    """The cases' arrays as torch tensors on `device` (CUDA for real Triton)."""

    def __init__(self, device):
        import torch
        self.torch, self.device = torch, device
        self.dtypes = {np.dtype(np.float32): torch.float32, np.dtype(np.float16): torch.float16,
                       np.dtype(ml_dtypes.bfloat16): torch.bfloat16,
                       np.dtype(np.int32): torch.int32, np.dtype(np.bool_): torch.bool}

    def put(self, a):
        a = np.asarray(a)
        if a.dtype == ml_dtypes.bfloat16:  # torch cannot read ml_dtypes arrays: go through bits
            return self.torch.from_numpy(a.view(np.int16)).view(self.torch.bfloat16).to(self.device)
        return self.torch.from_numpy(a).to(self.device)  # .to keeps the strides

    def empty(self, shape, dtype=np.float32):
        return self.torch.empty(shape, dtype=self.dtypes[np.dtype(dtype)], device=self.device)

    def full(self, shape, value, dtype=np.float32):
        shape = shape if isinstance(shape, tuple) else (shape,)  # torch.full wants a tuple
        return self.torch.full(shape, value, dtype=self.dtypes[np.dtype(dtype)],
                               device=self.device)

    def strides(self, a):
        return a.stride()

    def numpy(self, a):
        a = a.detach().cpu()
        if a.dtype == self.torch.bfloat16:
            return a.view(self.torch.int16).numpy().view(ml_dtypes.bfloat16)
        return a.numpy()


def arrays(device="cpu", backend="numpy"):
    """NumPy on the CPU; torch tensors on a GPU, or on the CPU where `backend="torch"`."""
    return NumpyArrays() if device == "cpu" and backend == "numpy" else TorchArrays(device)


def run_case(module, name, xp, seed=0):
    """The case's outputs as NumPy arrays (bf16 as ml_dtypes.bfloat16)."""
    outs = getattr(module, name)(xp, make_rng(seed))
    return {k: xp.numpy(v) for k, v in outs.items()}
