"""`gluon.nvidia`: host-side objects for NVIDIA kernels (hopper.TensorDescriptor)."""
from . import hopper

__all__ = ["hopper"]
