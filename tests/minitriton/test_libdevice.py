"""tl.extra.libdevice against float64 NumPy/math references, its dtype rules, and tl.extra.cuda."""
import math

import numpy as np
import pytest

import minitriton
import minitriton.language as tl
from minitriton import types
from minitriton.language.core import tensor
from minitriton.language.extra import libdevice
from minitriton.language.extra.cuda import libdevice as cuda_libdevice

RTOL = {np.float32: 2e-7, np.float64: 1e-15}  # fp32 round once from float64: half an ulp
RNG = np.random.default_rng(0)
POS = RNG.uniform(0.1, 4.0, 64)
ANY = RNG.uniform(-3.0, 3.0, 64)
UNIT = RNG.uniform(-0.95, 0.95, 64)
vec = np.vectorize

UNARY = {  # name: (inputs, float64 reference)
    "exp": (ANY, np.exp), "exp2": (ANY, np.exp2), "exp10": (ANY, lambda x: 10.0 ** x),
    "expm1": (ANY, np.expm1), "log": (POS, np.log), "log2": (POS, np.log2),
    "log10": (POS, np.log10), "log1p": (POS, np.log1p), "sqrt": (POS, np.sqrt),
    "rsqrt": (POS, lambda x: 1 / np.sqrt(x)), "cbrt": (ANY, np.cbrt),
    "rcbrt": (POS, lambda x: 1 / np.cbrt(x)), "sin": (ANY, np.sin), "cos": (ANY, np.cos),
    "tan": (UNIT, np.tan), "sinpi": (ANY, lambda x: np.sin(np.pi * x)),
    "cospi": (ANY, lambda x: np.cos(np.pi * x)), "asin": (UNIT, np.arcsin),
    "acos": (UNIT, np.arccos), "atan": (ANY, np.arctan), "sinh": (ANY, np.sinh),
    "cosh": (ANY, np.cosh), "tanh": (ANY, np.tanh), "asinh": (ANY, np.arcsinh),
    "acosh": (POS + 1, np.arccosh), "atanh": (UNIT, np.arctanh), "erf": (ANY, vec(math.erf)),
    "erfc": (ANY, vec(math.erfc)), "lgamma": (POS, vec(math.lgamma)),
    "tgamma": (POS, vec(math.gamma)), "floor": (ANY, np.floor), "ceil": (ANY, np.ceil),
    "trunc": (ANY, np.trunc), "rint": (ANY, np.rint), "nearbyint": (ANY, np.rint),
    "round": (np.array([-2.5, -0.5, 0.5, 1.5, 2.4]), lambda x: np.array([-3, -1, 1, 2, 2.0])),
    "logb": (POS, lambda x: np.floor(np.log2(x))), "abs": (ANY, np.abs),
}
BINARY = {
    "atan2": np.arctan2, "pow": lambda x, y: np.power(np.abs(x), y), "fmod": np.fmod,
    "remainder": vec(math.remainder), "fmin": np.fmin, "fmax": np.fmax, "copysign": np.copysign,
    "hypot": np.hypot, "rhypot": lambda x, y: 1 / np.hypot(x, y),
    "fdim": lambda x, y: np.maximum(x - y, 0), "div_rn": np.divide, "add_rn": np.add,
    "sub_rn": np.subtract, "mul_rn": np.multiply,
}


def t(a, dtype):
    a = np.asarray(a, dtype)
    return tensor(a[None], types.float32 if dtype == np.float32 else types.float64, list(a.shape))


def check(out, want, dtype):
    want = np.asarray(want, np.float64).astype(dtype).astype(np.float64)  # the rounded answer
    np.testing.assert_allclose(out.data[0].astype(np.float64), want, rtol=RTOL[dtype] * 8,
                               atol=1e-300)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype):
    x, ref = UNARY[name]
    x = np.asarray(x, dtype)
    out = getattr(libdevice, name)(t(x, dtype))
    assert out.dtype.np == np.dtype(dtype)
    check(out, ref(x.astype(np.float64)), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, dtype):
    x, y = ANY.astype(dtype), POS.astype(dtype)
    if name == "pow":
        x = np.abs(x)
    out = getattr(libdevice, name)(t(x, dtype), t(y, dtype))
    check(out, BINARY[name](x.astype(np.float64), y.astype(np.float64)), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_rounds_once(dtype):
    x, y, z = ANY.astype(dtype), POS.astype(dtype), UNIT.astype(dtype)
    out = libdevice.fma(t(x, dtype), t(y, dtype), t(z, dtype))
    exact = [float(x[i]) * float(y[i]) + float(z[i]) for i in range(64)]  # exact for fp32
    if dtype == np.float32:
        np.testing.assert_array_equal(out.data[0], np.array(exact).astype(np.float32))
    else:
        np.testing.assert_allclose(out.data[0], exact, rtol=1e-15)


@pytest.mark.parametrize("op,exact", [("div", lambda a, b: a / b), ("add", lambda a, b: a + b),
                                      ("mul", lambda a, b: a * b)])
def test_directed_rounding_brackets_the_exact_fp32_result(op, exact):
    a, b = ANY.astype(np.float32), POS.astype(np.float32)
    got = {m: getattr(libdevice, f"{op}_{m}")(t(a, np.float32), t(b, np.float32)).data[0]
           .astype(np.float64) for m in ("rn", "rz", "rd", "ru")}
    true = exact(a.astype(np.float64), b.astype(np.float64))  # add/mul exact, div within 2**-53
    assert np.all(got["rd"] <= true) and np.all(got["ru"] >= true)
    assert np.all((got["ru"] == got["rd"]) | (np.nextafter(got["rd"].astype(np.float32),
                                                          np.float32(np.inf)) == got["ru"]))
    np.testing.assert_array_equal(got["rz"], np.where(true >= 0, got["rd"], got["ru"]))
    np.testing.assert_array_equal(got["rn"], true.astype(np.float32))


def test_sqrt_rz_and_conversions():
    x = POS.astype(np.float32)
    rz = libdevice.sqrt_rz(t(x, np.float32)).data[0].astype(np.float64)
    assert np.all(rz * rz <= x) and np.all(np.nextafter(rz.astype(np.float32), np.float32(9))
                                           .astype(np.float64) ** 2 > x)
    f = np.array([-2.5, -1.5, 0.5, 1.5, 2.7, np.nan, 1e20], np.float32)
    assert libdevice.float2int_rn(t(f, np.float32)).data[0].tolist() == \
        [-2, -2, 0, 2, 3, 0, 2**31 - 1]
    assert libdevice.float2int_rd(t(f, np.float32)).data[0].tolist()[:5] == [-3, -2, 0, 1, 2]
    d = np.array([1 + 2**-30], np.float64)
    assert libdevice.double2float_ru(t(d, np.float64)).data[0][0] == np.nextafter(
        np.float32(1), np.float32(2))
    assert libdevice.double2float_rd(t(d, np.float64)).data[0][0] == np.float32(1)


def test_predicates_and_integer_intrinsics():
    x = np.array([np.nan, np.inf, -0.0, 1.0], np.float32)
    assert libdevice.isnan(t(x, np.float32)).dtype == types.int32
    assert libdevice.isnan(t(x, np.float32)).data[0].tolist() == [1, 0, 0, 0]
    assert libdevice.isinf(t(x, np.float32)).data[0].tolist() == [0, 1, 0, 0]
    assert libdevice.signbit(t(x, np.float32)).data[0].tolist() == [0, 0, 1, 0]
    assert libdevice.finitef(t(x, np.float32)).data[0].tolist() == [0, 0, 1, 1]
    assert libdevice.isfinited(t(x, np.float64)).data[0].tolist() == [0, 0, 1, 1]
    i = tensor(np.array([[0, 1, -1, 0x00F0]], np.int32), types.int32, [4])
    assert libdevice.clz(i).data[0].tolist() == [32, 31, 0, 24]
    assert libdevice.popc(i).data[0].tolist() == [0, 1, 32, 4]
    assert libdevice.ffs(i).data[0].tolist() == [0, 1, 1, 5]
    assert libdevice.brev(i).data[0].tolist() == [0, -2**31, -1, 0x0F000000]
    assert libdevice.ilogb(t([0.5, 8.0, 0.0], np.float32)).data[0].tolist() == [-1, 3, -2**31]
    assert libdevice.pow(t([2.0], np.float32), 10).data[0].tolist() == [1024.0]  # powi
    assert libdevice.ldexp(t([1.5], np.float32), 4).data[0].tolist() == [24.0]


def test_fp16_and_int_inputs_fail_like_the_gpu():
    h = tensor(np.ones((1, 4), np.float16), types.float16, [4])
    with pytest.raises(minitriton.CompilationError, match="input arg type does not match"):
        libdevice.exp(h)
    with pytest.raises(minitriton.CompilationError, match="input arg type does not match"):
        libdevice.tanh(tensor(np.ones((1, 4), np.int32), types.int32, [4]))
    # mixed fp16/fp32 promotes to fp32 first, as Triton's extern_elementwise does
    assert libdevice.fmax(h, t(np.zeros(4), np.float32)).dtype == types.float32


@minitriton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    tl.store(y_ptr + offs, 0.5 * x * (1 + tl.extra.libdevice.tanh(inner)))
    tl.store(y_ptr + N + offs, cuda_libdevice.erf(x))
    tl.extra.cuda.gdc_wait()
    tl.extra.cuda.gdc_launch_dependents()
    tl.store(y_ptr + 2 * N + tl.program_id(0), tl.extra.cuda.smid().to(tl.float32))


@minitriton.jit
def fp16_tanh_kernel(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, tl.extra.libdevice.tanh(tl.load(x_ptr + offs)))


def test_in_a_kernel_through_tl_extra():
    x = ANY[:32].astype(np.float32)
    y = np.zeros(3 * 32, np.float32)
    gelu_tanh_kernel[(1,)](x, y, N=32)
    x64 = x.astype(np.float64)
    want = 0.5 * x64 * (1 + np.tanh(0.7978845608028654 * (x64 + 0.044715 * x64 ** 3)))
    np.testing.assert_allclose(y[:32], want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(y[32:64], vec(math.erf)(x64), rtol=1e-6, atol=1e-7)
    with pytest.raises(minitriton.CompilationError, match="input arg type does not match"):
        fp16_tanh_kernel[(1,)](np.zeros(16, np.float16))


def test_math_module_imports_like_triton():
    from minitriton.language.math import rsqrt, umulhi  # noqa: F401
    assert tl.math.rsqrt is rsqrt
