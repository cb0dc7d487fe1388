"""`tl.extra.libdevice`: CUDA's libdevice as Triton wraps it (third_party/nvidia/.../libdevice.py).

Each function accepts the dtypes libdevice has entry points for (mostly fp32 `__nv_*f` and fp64
`__nv_*`; fp16/bf16 are a compile error, as on the GPU: cast first) and returns the type
libdevice returns (the predicates isnan/isinf/signbit/finitef/isfinited give int32). Names the
simulator cannot give a NumPy meaning without SciPy (Bessel functions, erfinv, erfcx, normcdf)
are left out; see docs/limitations.md. Rounding-mode suffixes: `_rn` nearest, `_rz` toward
zero, `_rd` down, `_ru` up; those results are exact (see _extern.py).
"""
from __future__ import annotations

import math as _math

import numpy as np

from ..marks import elementwise
from ._extern import (F64, dispatch, exact_add, exact_div, exact_fma, exact_mul, exact_sqrt,
                      round_to)

_NP = {"fp32": np.float32, "fp64": np.float64}
MODES = ("rn", "rz", "rd", "ru")


def _op(name, table):
    def op(*args):
        return dispatch(name, args, table)
    op.__name__ = name
    return elementwise(op)


def _f64(fn):
    return lambda *xs: fn(*(x.astype(F64) for x in xs))


def _float(name, fn, dtypes=("fp32", "fp64"), arity=1):
    """fp32 -> fp32 and fp64 -> fp64, computed in float64."""
    return _op(name, {(d,) * arity: (_f64(fn), d) for d in dtypes})


def _vec(py_fn):
    """A float64 ufunc from a scalar function of Python's math module."""
    def safe(x):
        try:
            return py_fn(x)
        except (ValueError, OverflowError):
            return _math.nan if py_fn not in (_math.gamma, _math.lgamma) else _math.inf
    return np.frompyfunc(safe, 1, 1)


def _round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _ilogb(x):
    m, e = np.frexp(x)
    out = (e - 1).astype(np.int64)
    out = np.where(x == 0, -2**31, np.where(np.isnan(x), -2**31, out))
    return np.where(np.isinf(x), 2**31 - 1, out).astype(np.int32)


# ----- exponentials, logarithms, powers
exp = _float("exp", np.exp)
exp2 = _float("exp2", np.exp2)
exp10 = _float("exp10", lambda x: np.power(10.0, x))
expm1 = _float("expm1", np.expm1)
log = _float("log", np.log)
log2 = _float("log2", np.log2)
log10 = _float("log10", np.log10)
log1p = _float("log1p", np.log1p)
logb = _float("logb", lambda x: np.where(x == 0, -np.inf, np.floor(np.log2(np.abs(x)))))
sqrt = _float("sqrt", np.sqrt)
rsqrt = _float("rsqrt", lambda x: 1.0 / np.sqrt(x))
rsqrt_rn = _float("rsqrt_rn", lambda x: 1.0 / np.sqrt(x))
cbrt = _float("cbrt", np.cbrt)
rcbrt = _float("rcbrt", lambda x: 1.0 / np.cbrt(x))
pow = _op("pow", {("fp32", "fp32"): (_f64(np.power), "fp32"),  # noqa: A001 - libdevice's name
                  ("fp64", "fp64"): (np.power, "fp64"),
                  ("fp32", "int32"): (lambda x, n: np.power(x.astype(F64), n.astype(F64)), "fp32"),
                  ("fp64", "int32"): (lambda x, n: np.power(x, n.astype(F64)), "fp64")})
# ----- trigonometric and hyperbolic
sin = _float("sin", np.sin)
cos = _float("cos", np.cos)
tan = _float("tan", np.tan)
sinpi = _float("sinpi", lambda x: np.sin(np.pi * x))
cospi = _float("cospi", lambda x: np.cos(np.pi * x))
asin = _float("asin", np.arcsin)
acos = _float("acos", np.arccos)
atan = _float("atan", np.arctan)
atan2 = _float("atan2", np.arctan2, arity=2)
sinh = _float("sinh", np.sinh)
cosh = _float("cosh", np.cosh)
tanh = _float("tanh", np.tanh)
asinh = _float("asinh", np.arcsinh)
acosh = _float("acosh", np.arccosh)
atanh = _float("atanh", np.arctanh)
# ----- special functions (Python's math module, element by element)
erf = _float("erf", _vec(_math.erf))
erfc = _float("erfc", _vec(_math.erfc))
lgamma = _float("lgamma", _vec(_math.lgamma))
tgamma = _float("tgamma", _vec(_math.gamma))
# ----- rounding to integers, remainders, sign, min/max
floor = _float("floor", np.floor)
ceil = _float("ceil", np.ceil)
trunc = _float("trunc", np.trunc)
round = _float("round", _round_half_away)  # noqa: A001 - half away from zero, as C's round
rint = _float("rint", np.rint)  # half to even
nearbyint = _float("nearbyint", np.rint)
fmod = _float("fmod", np.fmod, arity=2)
remainder = _float("remainder", lambda x, y: x - y * np.rint(x / y), arity=2)
fmin = _float("fmin", np.fmin, arity=2)
fmax = _float("fmax", np.fmax, arity=2)
fdim = _float("fdim", lambda x, y: np.where(x > y, x - y, np.where(np.isnan(x - y), x - y, 0.0)),
              arity=2)
copysign = _float("copysign", np.copysign, arity=2)
nextafter = _op("nextafter", {("fp32", "fp32"): (np.nextafter, "fp32"),
                              ("fp64", "fp64"): (np.nextafter, "fp64")})
hypot = _float("hypot", np.hypot, arity=2)
rhypot = _float("rhypot", lambda x, y: 1.0 / np.hypot(x, y), arity=2)
norm3d = _float("norm3d", lambda x, y, z: np.sqrt(x * x + y * y + z * z), arity=3)
rnorm3d = _float("rnorm3d", lambda x, y, z: 1.0 / np.sqrt(x * x + y * y + z * z), arity=3)
norm4d = _float("norm4d", lambda a, b, c, d: np.sqrt(a * a + b * b + c * c + d * d), arity=4)
rnorm4d = _float("rnorm4d", lambda a, b, c, d: 1 / np.sqrt(a * a + b * b + c * c + d * d), arity=4)
saturatef = _float("saturatef", lambda x: np.clip(x, 0.0, 1.0), dtypes=("fp32",))
fma = _op("fma", {(d,) * 3: (lambda a, b, c, _d=d: round_to(*exact_fma(a, b, c), "rn", _NP[_d]), d)
                  for d in ("fp32", "fp64")})
ldexp = _op("ldexp", {("fp32", "int32"): (lambda x, n: np.ldexp(x.astype(F64), n), "fp32"),
                      ("fp64", "int32"): (np.ldexp, "fp64")})
scalbn = _op("scalbn", {("fp32", "int32"): (lambda x, n: np.ldexp(x.astype(F64), n), "fp32"),
                        ("fp64", "int32"): (np.ldexp, "fp64")})
ilogb = _op("ilogb", {("fp32",): (_ilogb, "int32"), ("fp64",): (_ilogb, "int32")})
abs = _op("abs", {("int32",): (np.abs, "int32"), ("int64",): (np.abs, "int64"),  # noqa: A001
                  ("fp32",): (np.abs, "fp32"), ("fp64",): (np.abs, "fp64")})
# ----- classification: libdevice answers int32 (0 or 1)
isnan = _op("isnan", {(d,): (np.isnan, "int32") for d in ("fp32", "fp64")})
isinf = _op("isinf", {(d,): (np.isinf, "int32") for d in ("fp32", "fp64")})
signbit = _op("signbit", {(d,): (np.signbit, "int32") for d in ("fp32", "fp64")})
finitef = _op("finitef", {("fp32",): (np.isfinite, "int32")})
isfinited = _op("isfinited", {("fp64",): (np.isfinite, "int32")})
# ----- the fast (approximate) fp32 intrinsics: here as accurate as the others
fast_expf = _float("fast_expf", np.exp, ("fp32",))
fast_exp10f = _float("fast_exp10f", lambda x: np.power(10.0, x), ("fp32",))
fast_logf = _float("fast_logf", np.log, ("fp32",))
fast_log2f = _float("fast_log2f", np.log2, ("fp32",))
fast_log10f = _float("fast_log10f", np.log10, ("fp32",))
fast_sinf = _float("fast_sinf", np.sin, ("fp32",))
fast_cosf = _float("fast_cosf", np.cos, ("fp32",))
fast_tanf = _float("fast_tanf", np.tan, ("fp32",))
fast_powf = _float("fast_powf", np.power, ("fp32",), arity=2)
fast_dividef = _float("fast_dividef", np.divide, ("fp32",), arity=2)


# ----- integer intrinsics
def _clz(x):
    bits = x.dtype.itemsize * 8
    u = x.view(np.uint32 if bits == 32 else np.uint64).astype(np.uint64)
    n = np.zeros(u.shape, np.int32)
    for shift in (32, 16, 8, 4, 2, 1):  # binary search for the highest set bit
        if shift >= bits:
            continue
        big = u >= (np.uint64(1) << np.uint64(shift))
        n = np.where(big, n, n + shift)
        u = np.where(big, u >> np.uint64(shift), u)
    return np.where(u == 0, n + 1, n).astype(np.int32)


def _popc(x):
    u = x.view(np.uint32 if x.dtype.itemsize == 4 else np.uint64)
    return np.bitwise_count(u).astype(np.int32)


def _ffs(x):
    bits = x.dtype.itemsize * 8
    return np.where(x == 0, 0, bits - _clz(x & -x)).astype(np.int32)


def _brev(x):
    bits = x.dtype.itemsize * 8
    u = np.ascontiguousarray(x).view(np.uint32 if bits == 32 else np.uint64)
    out = np.unpackbits(u.view(np.uint8), bitorder="little").reshape(u.shape + (bits,))
    flipped = np.packbits(out[..., ::-1], axis=-1, bitorder="little")
    return np.ascontiguousarray(flipped).view(u.dtype).reshape(u.shape).view(x.dtype)


def _mulhi32(x, y):
    wide = np.int64 if x.dtype == np.int32 else np.uint64
    return ((x.astype(wide) * y.astype(wide)) >> 32).astype(x.dtype)


clz = _op("clz", {("int32",): (_clz, "int32"), ("int64",): (_clz, "int32")})
popc = _op("popc", {("int32",): (_popc, "int32"), ("int64",): (_popc, "int32")})
ffs = _op("ffs", {("int32",): (_ffs, "int32"), ("int64",): (_ffs, "int32")})
brev = _op("brev", {("int32",): (_brev, "int32"), ("int64",): (_brev, "int64")})
mulhi = _op("mulhi", {("int32", "int32"): (_mulhi32, "int32"),
                      ("uint32", "uint32"): (_mulhi32, "uint32")})
hadd = _op("hadd", {("int32", "int32"): (lambda x, y: (x.astype(np.int64) + y) >> 1, "int32")})
rhadd = _op("rhadd", {("int32", "int32"): (lambda x, y: (x.astype(np.int64) + y + 1) >> 1,
                                            "int32")})
min = _op("min", {(d, d): (np.minimum, d) for d in ("int32", "uint32", "int64", "uint64")})  # noqa: A001
max = _op("max", {(d, d): (np.maximum, d) for d in ("int32", "uint32", "int64", "uint64")})  # noqa: A001


# ----- bit reinterpretation
float_as_int = _op("float_as_int", {("fp32",): (lambda x: x.view(np.int32), "int32")})
int_as_float = _op("int_as_float", {("int32",): (lambda x: x.view(np.float32), "fp32")})
float_as_uint = _op("float_as_uint", {("fp32",): (lambda x: x.view(np.uint32), "uint32")})
uint_as_float = _op("uint_as_float", {("uint32",): (lambda x: x.view(np.float32), "fp32")})
double_as_longlong = _op("double_as_longlong", {("fp64",): (lambda x: x.view(np.int64), "int64")})
longlong_as_double = _op("longlong_as_double", {("int64",): (lambda x: x.view(np.float64), "fp64")})
double2hiint = _op("double2hiint", {("fp64",): (lambda x: (x.view(np.int64) >> 32).astype(np.int32),
                                                "int32")})
double2loint = _op("double2loint", {("fp64",): (lambda x: x.view(np.int64).astype(np.int32),
                                                "int32")})
hiloint2double = _op("hiloint2double", {("int32", "int32"): (
    lambda hi, lo: ((hi.astype(np.int64) << 32) | lo.view(np.uint32).astype(np.int64))
    .view(np.float64), "fp64")})


# ----- arithmetic and conversions in each rounding mode (add_rn, div_rz, double2float_ru...)
def _mode_family(exact, arity, dtypes, ret=None):
    for mode in MODES:
        yield mode, {(d,) * arity: ((lambda *xs, _m=mode, _d=ret or d: round_to(*exact(*xs), _m,
                                                                                 _NP[_d])),
                                    ret or d) for d in dtypes}


_ROUNDED = {"add": (exact_add, 2), "sub": (lambda a, b: exact_add(a, -b), 2),
            "mul": (exact_mul, 2), "div": (exact_div, 2), "fma": (exact_fma, 3),
            "sqrt": (exact_sqrt, 1), "rcp": (lambda x: exact_div(np.ones_like(x), x), 1)}
_INT_ROUND = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}
_TO_INT = {"int": "int32", "uint": "uint32", "ll": "int64", "ull": "uint64"}

for _name, (_exact, _arity) in _ROUNDED.items():
    for _mode, _table in _mode_family(_exact, _arity, ("fp32", "fp64")):
        globals()[f"{_name}_{_mode}"] = _op(f"{_name}_{_mode}", _table)
for _mode, _table in _mode_family(lambda x: (x.astype(F64), np.zeros(x.shape)), 1, ("fp64",),
                                  "fp32"):
    globals()[f"double2float_{_mode}"] = _op(f"double2float_{_mode}", _table)
for _mode, _table in _mode_family(lambda x: (x.astype(F64), np.zeros(x.shape)), 1, ("int32",),
                                  "fp32"):
    globals()[f"int2float_{_mode}"] = _op(f"int2float_{_mode}", _table)
for _src, _fname in (("fp32", "float"), ("fp64", "double")):
    for _short, _dst in _TO_INT.items():
        for _mode, _fn in _INT_ROUND.items():
            globals()[f"{_fname}2{_short}_{_mode}"] = _op(
                f"{_fname}2{_short}_{_mode}", {(_src,): (lambda x, _f=_fn: _f(x), _dst)})
int2double_rn = _op("int2double_rn", {("int32",): (lambda x: x.astype(F64), "fp64")})
uint2double_rn = _op("uint2double_rn", {("uint32",): (lambda x: x.astype(F64), "fp64")})
