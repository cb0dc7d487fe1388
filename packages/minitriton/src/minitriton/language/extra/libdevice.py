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

from ...context import note_math
from ..core import elementwise  # keeps the operands' layout (core.join_layouts)
from ._extern import (F64, dispatch, exact_add, exact_div, exact_fma, exact_int, exact_mul,
                      exact_sqrt, missing_name, round_to, two_prod)

_NP = {"fp32": np.float32, "fp64": np.float64}
MODES = ("rn", "rz", "rd", "ru")


def _op(name, table):
    def op(*args):
        out = dispatch(name, args, table)
        note_math(name, out.shape)
        return out
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
_ERF, _ERFC = _vec(_math.erf), _vec(_math.erfc)
_SQRT2, _SQRT_PI = np.sqrt(2.0), np.sqrt(np.pi)


def _erfcx(x):
    """exp(x^2) erfc(x) without overflow: x^2 = sq + lo exactly (TwoProduct), so
    exp(x^2) = exp(sq)(1 + lo), while erfc is a normal float64 (x < 25); the asymptotic series
    beyond, whose terms fall under 1e-19 there."""
    x = np.asarray(x, F64)
    sq, lo = two_prod(x, x)
    near = np.where(x < 25, x, 0.0)
    direct = np.exp(sq) * (1.0 + lo) * _ERFC(near).astype(F64)
    big = np.where(x >= 25, x, 30.0)
    inv = 1.0 / (2.0 * big * big)
    series, term = np.ones_like(big), np.ones_like(big)
    for k in range(1, 12):
        term = -term * (2 * k - 1) * inv
        series = series + term
    asym = series / (big * _SQRT_PI)
    return np.where(x >= 25, asym, np.where(np.isnan(x), x, direct))


def _erfinv_small(y):
    """erf^-1 on |y| < 0.5: Newton's method on math.erf from Winitzki's closed form (within
    2e-3); erf is smooth and well conditioned there, 5 steps reach float64 accuracy."""
    w = -np.log((1.0 - y) * (1.0 + y))
    b = 2 / (np.pi * 0.147) - w / 2
    x = np.sign(y) * np.sqrt(np.sqrt(b * b + w / 0.147) - b)
    for _ in range(5):
        x = x - (_ERF(x).astype(F64) - y) * (0.5 * _SQRT_PI) * np.exp(x * x)
    return x


def _erfcinv_tail(y):
    """erfc^-1 on (0, 0.5]: Newton's method on log(erfc), which stays well conditioned down
    to the smallest doubles, from erfc(x) ~ exp(-x^2)."""
    x = np.sqrt(-np.log(y))
    for _ in range(12):
        e = _ERFC(x).astype(F64)
        step = (np.log(e) - np.log(y)) * e * (0.5 * _SQRT_PI) * np.exp(x * x)
        x = np.where(np.isfinite(step), x + step, x)  # erfc underflowing near y = 5e-324
    return x


def _erfinv(y):
    # 1 - |y| is exact for |y| >= 0.5 (Sterbenz), so the tail goes through erfc^-1 and keeps
    # the digits that erf(x) - y would lose near +-1
    y = np.asarray(y, F64)
    a = np.abs(y)
    small = _erfinv_small(np.where(a < 0.5, y, 0.0))
    tail = np.copysign(_erfcinv_tail(np.where((a >= 0.5) & (a < 1), 1.0 - a, 0.5)), y)
    edge = np.where(a == 1, np.copysign(np.inf, y), np.nan)
    return np.where(a < 0.5, np.copysign(small, y), np.where(a < 1, tail, edge))


def _erfcinv(y):
    # erfc^-1(y) = erf^-1(1 - y) = -erfc^-1(2 - y); 1 - y and 2 - y are exact where used
    y = np.asarray(y, F64)
    low = (y > 0) & (y <= 0.5)
    high = (y >= 1.5) & (y < 2)
    mid = (y > 0.5) & (y < 1.5)
    lo_x = _erfcinv_tail(np.where(low, y, 0.5))
    hi_x = -_erfcinv_tail(np.where(high, 2.0 - y, 0.5))
    mid_x = _erfinv_small(np.where(mid, 1.0 - y, 0.0))
    edge = np.where(y == 0, np.inf, np.where(y == 2, -np.inf, np.nan))
    return np.where(low, lo_x, np.where(mid, mid_x, np.where(high, hi_x, edge)))


_RSQRT2 = (0.7071067811865476, -4.833646656726457e-17)  # 1/sqrt(2) as hi + lo


def _normcdf(x):
    # erfc(-x/sqrt 2) magnifies the rounding of its argument by about x^2: take -x/sqrt(2)
    # as t + dt (double-double) and correct to first order, erfc'(t) = -2/sqrt(pi) exp(-t^2)
    x = np.asarray(x, F64)
    t, dt = two_prod(-x, np.full(x.shape, _RSQRT2[0]))
    dt = dt - x * _RSQRT2[1]
    e = _ERFC(t).astype(F64) - 2 / _SQRT_PI * np.exp(-t * t) * dt
    return 0.5 * e


def _series(x, first, ratio):
    """sum of t_k with t_0 = first(x), t_k+1 = t_k * ratio(x, k): positive terms only, so the
    sum is accurate; run until the last term no longer changes any sum."""
    term = first(x)
    total = term
    k = 0
    while k < 5000:
        term = term * ratio(x, k)
        new = total + term
        k += 1
        done = np.all((new == total) | ~np.isfinite(new))
        total = new
        if done:
            break
    return total


def _bessel_i1(x):
    x = np.asarray(x, F64)
    a = np.abs(x)
    q = (a / 2) ** 2
    out = _series(a, lambda v: v / 2, lambda v, k: q / ((k + 1) * (k + 2)))
    return np.copysign(out, x)


erfcx = _float("erfcx", _erfcx)
erfinv = _float("erfinv", _erfinv)
erfcinv = _float("erfcinv", _erfcinv)
normcdf = _float("normcdf", _normcdf)
normcdfinv = _float("normcdfinv", lambda p: -_SQRT2 * _erfcinv(2.0 * np.asarray(p, F64)))
cyl_bessel_i0 = _float("cyl_bessel_i0", np.i0)
cyl_bessel_i1 = _float("cyl_bessel_i1", _bessel_i1)
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


def _byte_perm(x, y, sel):
    """__byte_perm: byte n of the result is byte (sel >> 4n) & 7 of the 8 bytes y:x."""
    pool = (y.view(np.uint32).astype(np.uint64) << np.uint64(32)) | x.view(np.uint32)
    s = sel.view(np.uint32).astype(np.uint64)
    out = np.zeros(pool.shape, np.uint64)
    for n in range(4):
        pick = (s >> np.uint64(4 * n)) & np.uint64(7)
        out |= ((pool >> (pick * np.uint64(8))) & np.uint64(0xFF)) << np.uint64(8 * n)
    return out.astype(np.uint32).view(np.int32)


def _mul24(x, y):
    """mul24.lo: the low 32 bits of the product of the low 24 bits (sign-extended for int32)."""
    if x.dtype == np.int32:
        lo24 = [((v.astype(np.int64) << 40) >> 40) for v in (x, y)]
    else:
        lo24 = [v.astype(np.int64) & 0xFFFFFF for v in (x, y)]
    return (lo24[0] * lo24[1]).astype(np.uint64).astype(np.uint32).view(x.dtype)


def _sad(x, y, z):
    """|x - y| + z, in 32-bit arithmetic (wrapping, as the instruction)."""
    d = np.abs(x.astype(np.int64) - y.astype(np.int64))
    return (d + z.astype(np.int64)).astype(np.uint64).astype(np.uint32).view(x.dtype)


mul24 = _op("mul24", {("int32", "int32"): (_mul24, "int32"),
                      ("uint32", "uint32"): (_mul24, "uint32")})
sad = _op("sad", {("int32", "int32", "uint32"): (_sad, "int32"),
                  ("uint32", "uint32", "uint32"): (_sad, "uint32")})
byte_perm = _op("byte_perm", {("int32", "int32", "int32"): (_byte_perm, "int32")})
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
for _src, _short in (("uint32", "uint"), ("int64", "ll"), ("uint64", "ull")):
    for _dst, _fname in (("fp32", "float"), ("fp64", "double")):
        if _src == "uint32" and _dst == "fp64":
            continue  # exact: uint2double_rn below
        for _mode, _table in _mode_family(exact_int, 1, (_src,), _dst):
            globals()[f"{_short}2{_fname}_{_mode}"] = _op(f"{_short}2{_fname}_{_mode}", _table)
llrint = _op("llrint", {(d,): (np.rint, "int64") for d in ("fp32", "fp64")})
llround = _op("llround", {(d,): (_round_half_away, "int64") for d in ("fp32", "fp64")})


def _rcp64h(x):
    """rcp.approx.ftz.f64: the reciprocal of x with the low 32 bits of its mantissa ignored,
    the low 32 bits of the result zero (the approximation's own error is not modelled)."""
    bits = x.view(np.int64) & np.int64(-(1 << 32))
    r = 1.0 / bits.view(F64)
    return (r.view(np.int64) & np.int64(-(1 << 32))).view(F64)


rcp64h = _op("rcp64h", {("fp64",): (_rcp64h, "fp64")})
int2double_rn = _op("int2double_rn", {("int32",): (lambda x: x.astype(F64), "fp64")})
uint2double_rn = _op("uint2double_rn", {("uint32",): (lambda x: x.astype(F64), "fp64")})

__all__ = sorted(n for n, v in globals().items() if getattr(v, "__module__", None) == __name__
                 and callable(v) and not n.startswith("_"))


def __getattr__(name):
    raise missing_name("triton.language.extra.libdevice", name)
