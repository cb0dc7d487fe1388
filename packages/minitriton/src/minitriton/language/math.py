"""`triton.language.math`: the module kernels import from (`from triton.language.math import rsqrt`).

Exactly the names Triton's math module exports; the functions live in math_ops.py. The rest of
the CUDA math library (tanh, pow, erfc...) is `tl.extra.libdevice`, as in Triton.
"""
from .math_ops import (abs, ceil, cos, div_rn, erf, exp, exp2, fdiv, floor, fma, log, log2,  # noqa: F401
                       rsqrt, sin, sqrt, sqrt_rn, umulhi)
