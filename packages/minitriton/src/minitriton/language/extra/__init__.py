"""`tl.extra`: vendor libraries. `libdevice` is CUDA's math library as Triton wraps it
(`triton.language.extra.libdevice`, also `triton.language.extra.cuda.libdevice`); `cuda` holds
the NVIDIA-only intrinsics."""
from . import cuda, libdevice  # noqa: F401
