"""`gluon.language.nvidia.ampere`: cp.async (`async_copy`) and the mbarrier (`mma_v2` is not in
minitriton's Gluon yet: docs/limitations.md)."""
from . import async_copy, mbarrier

__all__ = ["async_copy", "mbarrier"]
