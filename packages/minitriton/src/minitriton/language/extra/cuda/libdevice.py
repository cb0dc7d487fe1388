"""`triton.language.extra.cuda.libdevice`: CUDA's libdevice, where Triton 3 keeps it (the
generic `triton.language.extra.libdevice` dispatches to it on NVIDIA GPUs). The functions are
`tl.extra.libdevice`'s (language/extra/libdevice.py)."""
from ..libdevice import *  # noqa: F401,F403
from ..libdevice import __all__  # noqa: F401
from ..libdevice import __getattr__  # noqa: F401 - the "not in minitriton" error for the rest
