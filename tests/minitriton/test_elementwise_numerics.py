"""Element-wise numerics as the H200 computes them (Triton 3.6): the values are the
GPU's, recorded in fuzz_seeds.json (the ids name the seeds), or exact references (fractions)."""
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton.language.arith import fma_exact
from minitriton import types as mtypes

pytestmark = pytest.mark.usefixtures("executor")


@triton.jit
def unary_kernel(x_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if OP == "min_lit":
        r = tl.minimum(x, 0.1)
    elif OP == "min_int_lit":
        r = tl.minimum(x, 1)
    elif OP == "mul_neg_zero":
        r = x * (-0.0)
    elif OP == "load_neg_zero":
        r = tl.load(x_ptr + offs, mask=offs < 2, other=-0.0)
    elif OP == "full_neg_zero":
        r = tl.full([BLOCK], -0.0, tl.float32)
    elif OP == "erf":
        r = tl.erf(x)
    elif OP == "sqrt":
        r = tl.sqrt(x)
    elif OP == "rsqrt":
        r = tl.rsqrt(x)
    elif OP == "floor":
        r = tl.floor(x)
    elif OP == "ceil":
        r = tl.ceil(x)
    elif OP == "clip":
        r = tl.clamp(x, -1.0, 1.0)
    elif OP == "clamp":
        r = tl.clamp(x, 0.0, 100.0)
    else:
        r = tl.clamp(x, 0.0, 2.0)
    tl.store(out_ptr + offs, r)


@triton.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "max":
        r = tl.maximum(x, y)
    elif OP == "mod":
        r = x % y
    elif OP == "umulhi":
        r = tl.umulhi(x, y)
    elif OP == "rshift":
        r = x >> (y & 63)
    else:
        r = x * y - 2.0
    tl.store(out_ptr + offs, r)


@triton.jit
def fma_kernel(x_ptr, y_ptr, z_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.load(z_ptr + offs)
    if OP == "contract":
        r = x * y + z
    else:
        r = tl.fma(x, y, z)
    tl.store(out_ptr + offs, r)


@triton.jit
def umulhi_scalar_kernel(x_ptr, out_ptr, s, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.umulhi(s.to(tl.uint64), x))


def unary(op, x, out_dtype):
    out = np.empty(len(x), out_dtype)
    unary_kernel[(1,)](x, out, OP=op, BLOCK=len(x))
    return out


def binary(op, x, y, out_dtype):
    out = np.empty(len(x), out_dtype)
    binary_kernel[(1,)](x, y, out, OP=op, BLOCK=len(x))
    return out


def bits_equal(got, want):
    got, want = np.asarray(got), np.asarray(want, dtype=got.dtype)
    assert got.tobytes() == want.tobytes(), (got, want)


# ----- minmax_promotes, clamp_nan
def test_minimum_with_a_float_literal_is_fp32():  # seed minmax_literal_fp16
    x = np.array([1.0, 2.0, -1.0, 0.05], np.float16)
    bits_equal(unary("min_lit", x, np.float32),
               [0.10000000149011612, 0.10000000149011612, -1.0, 0.04998779296875])


def test_minimum_with_an_int_literal_is_int32():  # seed minmax_int_literal
    bits_equal(unary("min_int_lit", np.array([3, -7, 1, 0], np.int8), np.int32), [1, -7, 1, 0])


def test_maximum_widens_bf16():  # seed minmax_bf16
    x = np.array([1.0, -2.0, 3.0, 0.5], ml_dtypes.bfloat16)
    y = np.array([0.5, -1.0, 4.0, 0.25], ml_dtypes.bfloat16)
    bits_equal(binary("max", x, y, np.float32), [1.0, -1.0, 4.0, 0.5])


def test_clamp_of_bf16_and_fp16_is_fp32():  # seeds clean_run_2134, clean_run_1440
    x = np.array([-3.0, 0.96875, 50.0, 300.0], ml_dtypes.bfloat16)
    bits_equal(unary("clamp", x, np.float32), [0.0, 0.96875, 50.0, 100.0])
    x = np.array([10.0, -1.0, 1.5, 3.0], np.float16)
    bits_equal(unary("clamp2", x, np.float32), [2.0, 0.0, 1.5, 2.0])


def test_clamp_of_nan():
    """clamp(x, -c, c) is the clip pattern (min.xorsign.abs): NaN gives c (seeds
    clean_run_2107, clean_run_1907); other bounds maxnum then minnum: NaN gives lo (seed
    clean_run_2134)."""
    nan = np.float32(np.nan)
    bits_equal(unary("clip", np.array([nan, -nan, -5.0, -0.0], np.float32), np.float32),
               [1.0, 1.0, -1.0, -0.0])
    bits_equal(unary("clamp", np.array([nan, 7.0, -7.0, 1e9], np.float32), np.float32),
               [0.0, 7.0, 0.0, 100.0])


# ----- neg_zero_literal
@pytest.mark.parametrize("op", ["mul_neg_zero", "load_neg_zero", "full_neg_zero"])
def test_a_negative_zero_literal_is_positive_zero(op):  # seeds neg_zero_*
    x = np.array([1.0, -2.0, 3.0, -4.0], np.float32)
    want = {"mul_neg_zero": [0.0, -0.0, 0.0, -0.0], "load_neg_zero": [1.0, -2.0, 0.0, 0.0],
            "full_neg_zero": [0.0, 0.0, 0.0, 0.0]}[op]
    bits_equal(unary(op, x, np.float32), want)


# ----- float_mod
def test_float_mod_is_the_gpus_frem():  # seeds float_mod, float_mod_zero_sign
    x = np.array([847604300.0, 3.4028235e38, 7.5, -7.5, -4.0, 4.0, -6.0, 6.0], np.float32)
    y = np.array([-14.785195, 0.40625, 2.0, 2.0, 2.0, -2.0, 3.0, 3.0], np.float32)
    bits_equal(binary("mod", x, y, np.float32),
               [28.316864013671875, -np.inf, 1.5, -1.5, 0.0, 0.0, 0.0, 0.0])


@triton.jit
def mod_by_constant_kernel(x_ptr, out_ptr, C: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) % C)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_float_mod_by_a_constant_power_of_two_keeps_the_sign_of_x(dtype):
    # seed frem_pow2_literal_1476: `x % -1.0` on the H200 is -0.0 for negative integral x
    x = np.array([-4.0, 4.0, -215.0, -0.0, 0.0, -1.5, 3.171875, -7.0], np.float32).astype(dtype)
    out = np.empty(8, dtype)
    mod_by_constant_kernel[(1,)](x, out, C=-1.0, BLOCK=8)
    bits_equal(out, np.array([-0.0, 0.0, -0.0, -0.0, 0.0, -0.5, 0.171875, -0.0],
                             np.float32).astype(dtype))
    mod_by_constant_kernel[(1,)](x, out, C=2.0, BLOCK=8)
    bits_equal(out, np.array([-0.0, 0.0, -1.0, -0.0, 0.0, -1.5, 1.171875, -1.0],
                             np.float32).astype(dtype))
    mod_by_constant_kernel[(1,)](x, out, C=3.0, BLOCK=8)  # not a power of two: +0.0 zeros
    bits_equal(out, np.array([-1.0, 1.0, -2.0, 0.0, 0.0, -1.5, 0.171875, -1.0],
                             np.float32).astype(dtype))


def test_half_float_mod_divides_in_fp32():
    # 65504 / 3 rounded in fp16 is 21840, and 65504 - 3 * 21840 = -16; in fp32 (the GPU) 2
    x = np.array([65504.0, 1000.0, -3.0, 5.5], np.float32).astype(np.float16)
    y = np.array([3.0, 7.0, 0.75, 2.5], np.float32).astype(np.float16)
    want = np.fmod(x.astype(np.float64), y.astype(np.float64))
    want = np.where(want == 0, 0.0, want)
    bits_equal(binary("mod", x, y, np.float16), want.astype(np.float16))


def test_fp64_fma_with_a_product_near_the_largest_double():
    # seed fma64_large_product_1571: DBL_MAX % 311296 on the H200 is finite
    q = np.trunc(np.float64(1.7976931348623157e308) / 311296.0)
    got = fma_exact(np.array([-q]), np.array([311296.0]), np.array([1.7976931348623157e308]),
                    mtypes.float64)
    bits_equal(got, [_exact_fma(-q, 311296.0, 1.7976931348623157e308)])


def test_float_mod_by_infinity_is_the_dividend():
    x = np.array([1.5, -2.5, 0.0, 3.0], np.float32)
    y = np.array([np.inf, -np.inf, np.inf, 0.0], np.float32)
    got = binary("mod", x, y, np.float32)
    bits_equal(got[:3], x[:3])
    assert np.isnan(got[3])


# ----- umulhi_signed, umulhi64_broadcast, rshift_signed_lhs
def test_umulhi_is_unsigned_for_int32():  # seed umulhi_int32
    x = np.array([-1, -5, 123456789, -2147483648], np.int32)
    y = np.array([2, 7, -3, -1], np.int32)
    bits_equal(binary("umulhi", x, y, np.int32), [1, 6, 123456788, 2147483647])


def test_umulhi_int64_against_python_integers():
    rng = np.random.default_rng(0)
    x = rng.integers(-2**63, 2**63 - 1, 64, dtype=np.int64)
    y = rng.integers(-2**63, 2**63 - 1, 64, dtype=np.int64)
    want = [((int(a) % 2**64) * (int(b) % 2**64)) >> 64 for a, b in zip(x, y)]
    got = binary("umulhi", x, y, np.int64)
    assert [int(v) % 2**64 for v in got] == want


def test_umulhi64_of_a_scalar_and_a_block():  # seed umulhi64_scalar
    x = np.array([9223372036854775813, 1099511627776, 3, 18446744073709551615], np.uint64)
    out = np.empty(4, np.uint64)
    umulhi_scalar_kernel[(1,)](x, out, 100, BLOCK=4)
    bits_equal(out, [50, 0, 0, 99])


def test_rshift_of_a_signed_lhs_is_arithmetic():  # seed rshift_signed_lhs
    x = np.array([-37, -1, 5, -1024], np.int32)
    y = np.array([63, 0, 1, 4], np.uint64)
    got = binary("rshift", x, y, np.uint64)
    bits_equal(got.view(np.int64), [-1, -1, 2, -64])


# ----- contract:fp64, fma:fp64, fma32_tie
FP64_X = [-0.5369532353602852, -0.2756029052993704, -2.7111624789659685, 2.0427716074923303]
FP64_Y = [0.5811181041963531, 1.2940638143982073, -1.8890132459676727, 0.6467029962018469]
FP64_Z = [0.36457239618607573, 1.0067243153057943, -0.17477209205516195, 0.6630633723762617]
FP64_GPU = [0.05253915001140862, 0.6500765684148632, 4.946649742682104, 1.9841298914976149]


@pytest.mark.parametrize("op", ["contract", "fma"])
def test_fp64_fma_rounds_once(op):  # seeds contract_fp64, fma_fp64
    x, y, z = (np.array(v, np.float64) for v in (FP64_X, FP64_Y, FP64_Z))
    out = np.empty(4, np.float64)
    fma_kernel[(1,)](x, y, z, out, OP=op, BLOCK=4)
    bits_equal(out, FP64_GPU)


def _exact_fma(a, b, c):
    return float(Fraction(a) * Fraction(b) + Fraction(c))  # float() rounds to nearest even


def test_fp64_fma_exact_against_fractions():
    rng = np.random.default_rng(1)
    a = rng.standard_normal(2000) * np.exp2(rng.integers(-30, 30, 2000))
    b = rng.standard_normal(2000)
    c = -a * b * (1 + rng.standard_normal(2000) * 1e-12)  # cancellation
    got = fma_exact(a, b, c, mtypes.float64)
    want = [_exact_fma(*v) for v in zip(a, b, c)]
    bits_equal(got, want)


def _round_fp32(exact):
    """The fp32 nearest to the Fraction `exact` (ties to even), by comparing neighbours."""
    c = np.float32(float(exact))
    cands = [np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf))]
    return min(cands, key=lambda v: (abs(Fraction(float(v)) - exact),
                                     int(np.array(v).view(np.int32)) & 1))


def test_fp32_fma_has_no_double_rounding():
    """x * y lands on an fp32 tie; a c far below the float64 ulp of the sum decides (seeds
    clean_run_251, clean_run_1123)."""
    x = np.array([24929.0, 24929.0, 24929.0, 3.0], np.float32)
    y = np.array([673.0, 673.0, 673.0, 1.0], np.float32)  # 2**24 + 1: an fp32 tie
    c = np.array([2.0 ** -40, -2.0 ** -40, 1.0, 2.0 ** -30], np.float32)
    want = [_round_fp32(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(cc)))
            for a, b, cc in zip(x, y, c)]
    assert want[0] != want[1]
    for op in ("contract", "fma"):
        out = np.empty(4, np.float32)
        fma_kernel[(1,)](x, y, c, out, OP=op, BLOCK=4)
        bits_equal(out, want)


def test_fp32_fma_exact_against_fractions():
    rng = np.random.default_rng(2)
    a = rng.integers(-2**12, 2**12, 3000).astype(np.float32)
    b = rng.integers(-2**13, 2**13, 3000).astype(np.float32)
    c = (rng.standard_normal(3000) * 2.0 ** rng.integers(-40, 0, 3000)).astype(np.float32)
    got = fma_exact(a, b, c, mtypes.float32).astype(np.float32)
    want = [_round_fp32(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r)))
            for p, q, r in zip(a, b, c)]
    bits_equal(got, want)


def test_fp32_fma_fixes_only_the_lanes_that_need_it_under_broadcasting():
    """Rows of x (4, 1) times columns of y (1, 6) plus c (6,): the ties of x * y (24929 * 673
    = 2**24 + 1) sit in some lanes only, among ordinary ones and one sum below fp32's normal
    range; every lane is the correctly rounded a * b + c."""
    x = np.array([[24929.0], [3.0], [-24929.0], [2.0 ** -70]], np.float32)
    y = np.array([[673.0, 1.5, -673.0, 0.25, 673.0, 2.0 ** -60]], np.float32)
    c = np.array([2.0 ** -40, 1.0, -2.0 ** -40, 2.0 ** -30, -1.0, 0.0], np.float32)
    got = fma_exact(x, y, c, mtypes.float32)
    assert got.shape == (4, 6)
    want = [[_round_fp32(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r)))
             for q, r in zip(y[0], c)] for p in x[:, 0]]
    bits_equal(got.astype(np.float32), want)


# ----- erf
def test_erf_fp32():  # seed erf_zero
    x = np.array([0.0, 1e-40, 1.0, -0.5, -0.0, 3.0, -1e-3, 10.0], np.float32)
    got = unary("erf", x, np.float32)
    bits_equal(got[:4], [0.0, 0.0, 0.8427007794380188, -0.5204998850822449])
    want = np.array([math.erf(float(v)) for v in x[4:]]).astype(np.float32)
    bits_equal(got[4:], want)
    assert np.signbit(got[4])


def test_erf_fp64():  # seed erf_fp64
    x = np.array([1.0, 0.5, -2.0, 0.1], np.float64)
    got = unary("erf", x, np.float64)
    want = np.array([0.8427007929497149, 0.5204998778130465, -0.9953222650189527,
                     0.1124629160182849])
    ulps = np.abs(got.view(np.int64) - want.view(np.int64))
    assert ulps.max() <= 2


# ----- subnormal_input
def test_subnormal_inputs_are_flushed():  # seeds rsqrt_subnormal, sqrt_subnormal, clean_run_85
    bits_equal(unary("rsqrt", np.array([-5.6e-43, 1e-40, 4.0, 1.0], np.float32), np.float32),
               [-np.inf, np.inf, 0.5, 1.0])
    bits_equal(unary("sqrt", np.array([1e-40, 3e-39, 4.0, -1e-40], np.float32), np.float32),
               [0.0, 0.0, 2.0, -0.0])
    bits_equal(unary("floor", np.array([-3e-39, 3e-39, -1.5, 2.5], np.float32), np.float32),
               [-0.0, 0.0, -2.0, 2.0])
    bits_equal(unary("ceil", np.array([-3e-39, 3e-39, -1.5, 2.5], np.float32), np.float32),
               [-0.0, 0.0, -1.0, 3.0])


def test_fp64_subnormals_are_not_flushed():
    x = np.array([-5e-320, 5e-320, 1e-310, 4.0], np.float64)
    bits_equal(unary("floor", x, np.float64), np.floor(x))
    bits_equal(unary("sqrt", np.abs(x), np.float64), np.sqrt(np.abs(x)))


@triton.jit
def int8_dot_kernel(a_ptr, b_ptr, c_ptr, out_ptr, FORM: tl.constexpr, M: tl.constexpr,
                    N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    if FORM == "added":
        r = tl.dot(a, b) + c
    else:
        r = tl.dot(a, b, c, out_dtype=tl.int32)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], r)


@pytest.mark.parametrize("form", ["added", "acc"])
def test_int8_dot_with_an_accumulator_saturates(form):  # seed int8_dot_saturates_524
    rng = np.random.default_rng(3)
    M = N = 16
    K = 64
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (K, N)).astype(np.int8)
    c = rng.choice(np.array([2**31 - 5, -2**31 + 5, 0, 12345], np.int64), (M, N)).astype(np.int32)
    out = np.empty((M, N), np.int32)
    int8_dot_kernel[(1,)](a, b, c, out, FORM=form, M=M, N=N, K=K)
    acc = c.astype(np.int64)
    for k in range(0, K, 32):  # one integer MMA step: 32 products, then the clamp
        acc = np.clip(acc + a[:, k:k + 32].astype(np.int64) @ b[k:k + 32].astype(np.int64),
                      -2**31, 2**31 - 1)
    bits_equal(out, acc.astype(np.int32))
    assert (out == 2**31 - 1).any() or (out == -2**31).any()
