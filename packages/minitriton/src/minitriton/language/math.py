"""`triton.language.math`: the module kernels import from (`from triton.language.math import rsqrt`).

Exactly the names Triton's math module exports; the functions live in math_ops.py. The rest of
the CUDA math library (tanh, pow, erfc...) is `tl.extra.libdevice`, as in Triton.
"""
from .math_ops import (abs, ceil, cos, div_rn, erf, exp, exp2, fdiv, floor, fma, log, log2,  # noqa: F401
                       rsqrt, sin, sqrt, sqrt_rn, umulhi)
from .extra import libdevice as _libdevice
from .extra._extern import called_by_from_import as _from_import, missing_name as _missing


def __getattr__(name):
    if name.startswith("__") or not hasattr(_libdevice, name):
        raise _missing("triton.language.math", name)
    text = (f"triton.language.math.{name}: since Triton 3.0 (and on the GPU) {name} is in "
            f"libdevice: `from triton.language.extra.libdevice import {name}`, or "
            f"tl.extra.libdevice.{name} (docs/limitations.md)")
    if _from_import(1):
        raise ImportError(text, name="triton.language.math")
    raise AttributeError(text)
