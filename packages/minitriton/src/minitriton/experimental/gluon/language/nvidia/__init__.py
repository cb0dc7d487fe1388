"""`triton.experimental.gluon.language.nvidia`: NVIDIA's Gluon builtins (ampere, hopper)."""
from . import ampere, hopper

__all__ = ["ampere", "hopper"]
