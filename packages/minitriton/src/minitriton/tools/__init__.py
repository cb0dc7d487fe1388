"""Host-side helpers with Triton's names (`minitriton.tools.tensor_descriptor.TensorDescriptor`)."""
from . import tensor_descriptor

__all__ = ["tensor_descriptor"]
