"""`triton.experimental.gluon.language.nvidia`: NVIDIA's Gluon builtins (ampere, hopper;
blackwell's names, its tensor memory not yet)."""
from . import ampere, blackwell, hopper

__all__ = ["ampere", "blackwell", "hopper"]
