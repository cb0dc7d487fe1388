"""Which Triton the kernels run on: real Triton on a CUDA GPU, else minitriton.

    from tritonlab.backend import triton, tl

`TRITONLAB_BACKEND=triton|sim|interpret` overrides the choice (`interpret` is Triton's own
interpreter, `TRITON_INTERPRET=1`, on CPU tensors). `DEVICE` is where kernel inputs must live.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import types

import minitriton
import minitriton.language
from minitriton.experimental import gluon as sim_gluon
from minitriton.tools.tensor_descriptor import TensorDescriptor as SimTensorDescriptor

from .errors import BACKENDS, BackendError


def _cuda_triton_available():
    try:
        import torch
        if not torch.cuda.is_available():
            return False
        import triton  # noqa: F401
        return True
    except Exception:  # pragma: no cover - any import failure means "not available"
        return False


def _choose():
    env = os.environ.get("TRITONLAB_BACKEND", "").strip().lower()
    if env:
        if env not in BACKENDS:
            raise BackendError.unknown(env)
        return env
    return "triton" if _cuda_triton_available() else "sim"


def _load(name):
    """(triton module, triton.language module, device) for a backend name."""
    if name == "sim":
        return minitriton, minitriton.language, "cpu"
    if name == "interpret":
        os.environ["TRITON_INTERPRET"] = "1"
    import triton
    import triton.language
    return triton, triton.language, "cuda" if name == "triton" else "cpu"


def _descriptor_class(name):
    """The host TensorDescriptor of a backend (TMA descriptors; None on a Triton without them)."""
    if name == "sim":
        return SimTensorDescriptor
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
        return TensorDescriptor
    except ImportError:  # pragma: no cover - Triton before 3.3
        return None


def _gluon(name):
    """Gluon (Triton's lower-level language) of a backend, as a namespace: `gluon` (its jit),
    `gl` (its language), `hopper` (nvidia.hopper's language module) and `TensorDescriptor`
    (the host descriptor with a shared layout); None where the backend has none (Triton's
    interpreter does not run Gluon; a Triton before 3.5 has none)."""
    if name == "interpret":
        return None
    if name == "sim":
        hopper = sim_gluon.language.nvidia.hopper
        return types.SimpleNamespace(gluon=sim_gluon, gl=sim_gluon.language, hopper=hopper,
                                     TensorDescriptor=sim_gluon.nvidia.hopper.TensorDescriptor,
                                     tma_reduce=hopper.tma.async_reduce_shared_to_global)
    try:
        from triton.experimental import gluon
        from triton.experimental.gluon import language as gl
        from triton.experimental.gluon.language.nvidia import hopper
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    except ImportError:  # pragma: no cover - a Triton without Gluon
        return None
    return types.SimpleNamespace(gluon=gluon, gl=gl, hopper=hopper,
                                 TensorDescriptor=TensorDescriptor,
                                 tma_reduce=_gluon_tma_reduce())


def _gluon_tma_reduce():  # pragma: no cover - real Triton's Gluon
    """`tma_reduce(tensor_desc, coord, src, kind="add")`: the TMA unit's bulk reduction of the
    shared-memory block `src` into the descriptor's box at `coord` (`cp.reduce.async.bulk
    .tensor`), retired like a TMA store by `tma.store_wait`. Triton 3.6's Gluon builder has
    the operation (`create_async_tma_reduce`) but its `tma` module does not expose it, so this
    builtin calls the builder; minitriton's is `tma.async_reduce_shared_to_global`."""
    from triton._C.libtriton import ir
    from triton.experimental.gluon.language._core import builtin, _unwrap_if_constexpr

    @builtin
    def tma_reduce(tensor_desc, coord, src, kind="add", _semantic=None):
        kind = getattr(ir.DESCRIPTOR_REDUCE_KIND, str(_unwrap_if_constexpr(kind)).upper())
        coord = _semantic._convert_to_ir_values(coord, require_i64=False)
        _semantic.builder.create_async_tma_reduce(kind, tensor_desc.handle, coord, src.handle)

    return tma_reduce


NAME = _choose()
triton, tl, DEVICE = _load(NAME)
TensorDescriptor = _descriptor_class(NAME)
GLUON = _gluon(NAME)



def require_gluon():
    """GLUON, for a module of Gluon kernels to import; ImportError where this backend has none
    (Triton's interpreter does not run Gluon)."""
    if GLUON is None:
        raise ImportError("this backend has no Gluon (Triton's interpreter does not run it; "
                          "Triton 3.5 or newer, or minitriton, does)")
    return GLUON

def describe():
    """One line saying what runs the kernels."""
    if NAME == "sim":
        return f"minitriton {minitriton.__version__} (simulator on the CPU)"
    import torch
    where = torch.cuda.get_device_name() if NAME == "triton" else "CPU, Triton's interpreter"
    return f"triton {triton.__version__} on {where}"


@contextlib.contextmanager
def _swapped(name):
    module = sys.modules[__name__]
    saved = (module.NAME, module.triton, module.tl, module.DEVICE, module.TensorDescriptor,
             module.GLUON)
    module.NAME = name
    module.triton, module.tl, module.DEVICE = _load(name)
    module.TensorDescriptor = _descriptor_class(name)
    module.GLUON = _gluon(name)
    try:
        yield
    finally:
        (module.NAME, module.triton, module.tl, module.DEVICE, module.TensorDescriptor,
         module.GLUON) = saved


_COPIES: dict = {}


def with_backend(module_name, name):
    """A copy of a kernels module bound to another backend (e.g. "sim" on a GPU machine, to
    count a kernel's traffic on the simulator next to timing it on the GPU)."""
    if name == NAME:
        return importlib.import_module(module_name)
    key = (module_name, name)
    if key not in _COPIES:
        spec = importlib.util.find_spec(module_name)
        copy_spec = importlib.util.spec_from_file_location(f"{module_name}__{name}", spec.origin)
        module = importlib.util.module_from_spec(copy_spec)
        with _swapped(name):
            copy_spec.loader.exec_module(module)
        _COPIES[key] = module
    return _COPIES[key]
