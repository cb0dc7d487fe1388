"""`triton.experimental.gluon`: `gluon.jit` kernels on minitriton (language: `language`, host
tensor descriptors: `nvidia.hopper.TensorDescriptor`)."""
from . import language, nvidia
from ._runtime import GluonJITFunction, constexpr_function, jit, must_use_result

__all__ = ["constexpr_function", "jit", "must_use_result", "language", "nvidia",
           "GluonJITFunction"]
