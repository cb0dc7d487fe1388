"""libdevice's special functions and conversions that kernel libraries use (erfinv, erfcx, normcdf(inv), Bessel I,
byte_perm/mul24/sad, the 64-bit integer conversions in each rounding mode, llrint/llround,
rcp64h), against float64 and exact-integer references that need neither SciPy nor mpmath."""
import math

import numpy as np
import pytest

import minitriton
import minitriton.language as tl
from minitriton import types
from minitriton.errors import CompilationError
from minitriton.language.core import tensor
from minitriton.language.extra import libdevice

FLOATS = {np.float32: types.float32, np.float64: types.float64}
RTOL = {np.float32: 2.4e-7, np.float64: 4e-16}  # within an ulp or two of the exact result


def t(values, ty):
    a = np.array(values, dtype=object).astype(ty.np)
    return tensor(a[None], ty, list(a.shape))


def run(name, *args):
    return getattr(libdevice, name)(*args).data[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erfinv_and_erfcinv_invert_erf_and_erfc(dtype):
    y = np.array([-0.999, -0.7, -0.5, -1e-8, 0.0, 0.25, 0.49, 0.5, 0.9, 0.999999])
    x = run("erfinv", t(y, FLOATS[dtype])).astype(np.float64)
    back = np.array([math.erf(v) for v in x])
    # erf's slope bounds how well any rounded x can reproduce y
    slack = np.abs(2 / math.sqrt(math.pi) * np.exp(-x * x) * x) * RTOL[dtype] * 4
    assert np.all(np.abs(back - y.astype(dtype).astype(np.float64)) <= slack + 1e-16 * 4)
    assert run("erfinv", t([0.5], types.float64))[0] == pytest.approx(0.4769362762044699,
                                                                         rel=1e-15)
    z = np.array([1e-300, 1e-30, 1e-5, 0.05, 0.3, 0.5, 1.0, 1.3, 1.5, 1.9, 1.999])
    if dtype == np.float32:
        z = z[z > 1e-30]
    xc = run("erfcinv", t(z, FLOATS[dtype])).astype(np.float64)
    backc = np.array([math.erfc(v) for v in xc])
    # relative error of erfc(x(1+e)) is about 2x^2 e
    zr = z.astype(dtype).astype(np.float64)
    assert np.all(np.abs(backc - zr) <= zr * RTOL[dtype] * (2 * xc ** 2 + 2)), (backc, zr)


def test_erf_inverses_at_the_edges():
    edges = t([-1.0, 1.0, 1.5, np.nan, -0.0], types.float64)
    out = run("erfinv", edges)
    assert out[0] == -np.inf and out[1] == np.inf and np.isnan(out[2]) and np.isnan(out[3])
    assert out[4] == 0 and np.signbit(out[4])
    outc = run("erfcinv", t([0.0, 2.0, -1.0, 3.0], types.float64))
    assert outc[0] == np.inf and outc[1] == -np.inf and np.isnan(outc[2:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erfcx_normcdf_normcdfinv(dtype):
    x = np.array([-3.0, -0.5, 0.0, 0.3, 2.0, 5.0, 10.0])
    want = np.array([math.exp(v * v) * math.erfc(v) for v in x])
    np.testing.assert_allclose(run("erfcx", t(x, FLOATS[dtype])), want, rtol=RTOL[dtype] * 40)
    big = np.array([1e3, 1e8])  # exp(x^2) overflows: erfcx ~ (1 - 1/2x^2 + 3/4x^4) / x sqrt(pi)
    got = run("erfcx", t(big, FLOATS[dtype])).astype(np.float64)
    np.testing.assert_allclose(got * big * math.sqrt(math.pi),
                               1 - 1 / (2 * big ** 2) + 3 / (4 * big ** 4), rtol=RTOL[dtype] * 4)
    p = run("normcdf", t([-2.0, -0.5, 0.0, 1.0, 3.0], FLOATS[dtype]))
    np.testing.assert_allclose(p, [0.5 * math.erfc(v / math.sqrt(2)) for v in [2, .5, 0, -1, -3]],
                               rtol=RTOL[dtype] * 8)
    q = np.array([1e-20, 1e-3, 0.1, 0.5, 0.8, 0.999])
    xs = run("normcdfinv", t(q, FLOATS[dtype])).astype(np.float64)
    qr = q.astype(dtype).astype(np.float64)
    back = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in xs])
    assert np.all(np.abs(back - qr) <= qr * RTOL[dtype] * (xs ** 2 + 4)), (back, qr)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_modified_bessel_i0_i1(dtype):
    x = np.array([-5.0, 0.0, 0.5, 1.0, 10.0, 50.0])
    np.testing.assert_allclose(run("cyl_bessel_i0", t(x, FLOATS[dtype])), np.i0(x),
                               rtol=RTOL[dtype] * 4)
    known = {1.0: 0.5651591039924851, 10.0: 2670.988303701255, -2.0: -1.590636854637329,
             0.0: 0.0}  # Abramowitz & Stegun, table 9.8
    got = run("cyl_bessel_i1", t(list(known), FLOATS[dtype]))
    np.testing.assert_allclose(got, list(known.values()), rtol=RTOL[dtype] * 4)
    h = 1e-4  # I0' = I1
    np.testing.assert_allclose(run("cyl_bessel_i1", t([3.0], types.float64)),
                               (np.i0(3 + h) - np.i0(3 - h)) / (2 * h), rtol=1e-8)
    assert run("cyl_bessel_i1", t([800.0], types.float64))[0] == np.inf  # overflows as exp(x)


def test_integer_intrinsics_against_python_ints():
    rng = np.random.default_rng(7)
    x, y = (rng.integers(-2**31, 2**31, 64) for _ in range(2))
    sel = rng.integers(0, 2**16, 64)
    got = run("byte_perm", t(x, types.int32), t(y, types.int32), t(sel, types.int32))
    for g, a, b, s in zip(got, x, y, sel):
        pool = ((int(b) & 0xFFFFFFFF) << 32) | (int(a) & 0xFFFFFFFF)
        want = sum(((pool >> (8 * ((int(s) >> (4 * n)) & 7))) & 0xFF) << (8 * n) for n in range(4))
        assert int(g) & 0xFFFFFFFF == want

    def signed24(v):
        v &= 0xFFFFFF
        return v - (1 << 24) if v >> 23 else v

    def wrap32(v):
        v &= 0xFFFFFFFF
        return v - (1 << 32) if v >> 31 else v
    got = run("mul24", t(x, types.int32), t(y, types.int32))
    assert [int(g) for g in got] == [wrap32(signed24(int(a)) * signed24(int(b)))
                                     for a, b in zip(x, y)]
    ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
    got = run("mul24", t(ux, types.uint32), t(uy, types.uint32))
    assert [int(g) for g in got] == [((int(a) & 0xFFFFFF) * (int(b) & 0xFFFFFF)) & 0xFFFFFFFF
                                     for a, b in zip(ux, uy)]
    z = rng.integers(0, 2**32, 64)
    got = run("sad", t(x, types.int32), t(y, types.int32), t(z, types.uint32))
    assert [int(g) for g in got] == [wrap32(abs(int(a) - int(b)) + int(c))
                                     for a, b, c in zip(x, y, z)]


def _ulp_neighbours(v, np_dtype):
    return np.nextafter(np_dtype(v), np_dtype(-np.inf)), np.nextafter(np_dtype(v), np_dtype(np.inf))


@pytest.mark.parametrize("src", ["ll", "ull", "uint"])
@pytest.mark.parametrize("dst", ["float", "double"])
def test_integer_to_float_in_each_rounding_mode(src, dst):
    if (src, dst) == ("uint", "double"):
        pytest.skip("exact: uint2double_rn only")
    ty = {"ll": types.int64, "ull": types.uint64, "uint": types.uint32}[src]
    bits = {"ll": 63, "ull": 64, "uint": 32}[src]
    np_dtype = np.float32 if dst == "float" else np.float64
    rng = np.random.default_rng(3)
    values = [int(v) for v in rng.integers(0, 2**62, 40)] + [
        2**24 + 1, 2**24 + 3, 2**53 + 1, 2**53 + 2**29 + 1, 2**bits - 1, 1, 0]
    if src == "ll":
        values += [-v for v in values[:20]] + [-2**63]
    lo, hi = (0, 2**bits) if src != "ll" else (-2**63, 2**63)
    values = [v for v in values if lo <= v < hi]
    x = t(values, ty)
    out = {m: [int(v) if np.isfinite(v) else v for v in run(f"{src}2{dst}_{m}", x)]
           for m in ("rn", "rz", "rd", "ru")}
    for i, v in enumerate(values):
        rd, ru, rz, rn = out["rd"][i], out["ru"][i], out["rz"][i], out["rn"][i]
        assert rd <= v <= ru, (v, rd, ru)
        assert rz == (rd if v >= 0 else ru)
        if rd != ru:  # neighbours: nothing representable strictly between
            assert _ulp_neighbours(rd, np_dtype)[1] == np_dtype(ru)
            best = rd if (v - rd, rd // 2 ** 100) < (ru - v, 0) or \
                (v - rd == ru - v and int(np.array(rd, np_dtype).view(
                    np.uint32 if dst == "float" else np.uint64)) % 2 == 0) else ru
            assert rn == best, (v, rn, rd, ru)
        else:
            assert rn == rd == v


def test_rn_is_not_rounded_twice():
    # 2^53 + 2^29 + 1: float64 rounds it to 2^53 + 2^29, an fp32 halfway point; the exact
    # value is above it, so fp32 nearest is 2^53 + 2^30 (rounding the float64 gives 2^53)
    v = 2**53 + 2**29 + 1
    assert int(run("ll2float_rn", t([v], types.int64))[0]) == 2**53 + 2**30
    assert int(run("ll2float_rn", t([2**53 + 2**29], types.int64))[0]) == 2**53  # a true tie


def test_llrint_llround_rcp64h():
    x = [2.5, -2.5, 3.5, -0.5, 1e10, 0.49999997]
    assert run("llrint", t(x, types.float32)).tolist() == [2, -2, 4, 0, 10**10, 0]
    out = run("llround", t(x, types.float64))
    assert out.dtype == np.int64 and out.tolist() == [3, -3, 4, -1, 10**10, 0]
    got = run("rcp64h", t([3.0, -0.1, 1e300], types.float64))
    assert np.all(got.view(np.int64) & 0xFFFFFFFF == 0)  # the low word is zero
    np.testing.assert_allclose(got, 1 / np.array([3.0, -0.1, 1e300]), rtol=2**-19)


def test_dtype_rules_and_a_kernel():
    with pytest.raises(CompilationError, match="libdevice.erfinv"):
        libdevice.erfinv(t([0.5], types.float16))
    with pytest.raises(CompilationError, match="libdevice.byte_perm"):
        libdevice.byte_perm(t([1], types.float32), t([1], types.float32), t([1], types.float32))

    @minitriton.jit
    def k(x_ptr, y_ptr, N: tl.constexpr):
        o = tl.arange(0, N)
        x = tl.load(x_ptr + o)
        tl.store(y_ptr + o, tl.extra.libdevice.erfinv(x) + tl.extra.cuda.libdevice.normcdf(x))
    x = np.linspace(-0.9, 0.9, 8).astype(np.float32)
    y = np.empty_like(x)
    k[(1,)](x, y, N=8)
    want = run("erfinv", t(x, types.float32)) + run("normcdf", t(x, types.float32))
    np.testing.assert_array_equal(y, want)


def test_names_left_out_say_so():
    for name in ("j0", "j1", "y0", "y1", "jn", "yn"):
        assert not hasattr(libdevice, name)
        with pytest.raises(AttributeError, match="docs/limitations.md"):
            getattr(libdevice, name)
