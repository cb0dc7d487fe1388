"""`gluon.language.nvidia.ampere`: the mbarrier (`async_copy` and `mma_v2` are not in
minitriton's Gluon yet: docs/limitations.md)."""
from . import mbarrier

__all__ = ["mbarrier"]
