"""Compile-time constants, folded as Triton's compiler folds them (core.py, `tensor.const`;
docs/numerics.md, "Constants"): `%` of constants is C's fmod, a product of constants is rounded
and not fused into an add, constant math is the host's libm without the GPU's flushing; loaded
values and scalar arguments keep the runtime rules. Values: the H200's (fuzz_seeds.json, ids
named) or exact references (fractions, np.fmod)."""
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl

pytestmark = pytest.mark.usefixtures("executor")

BLOCK = 4
NP = {tl.float16: np.float16, tl.bfloat16: ml_dtypes.bfloat16, tl.float32: np.float32,
      tl.float64: np.float64}
F32_03 = float(np.float32(0.3))  # 0.3f; 3 * 0.1f is 0.300000004470348 exactly, 0.3f its rounding


@triton.jit
def const_mod_kernel(out_ptr, A: tl.constexpr, B: tl.constexpr, DTYPE: tl.constexpr,
                     BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full([BLOCK], A, DTYPE) % B)


@triton.jit
def runtime_mod_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if OP == "loaded":
        r = x % tl.load(y_ptr + offs)
    elif OP == "full_divisor":
        r = x % tl.full([BLOCK], 2.0, tl.float32)
    else:
        r = x % 2.0
    tl.store(out_ptr + offs, r)


@triton.jit
def product_kernel(x_ptr, y_ptr, out_ptr, s, OP: tl.constexpr, C: tl.constexpr,
                   K: tl.constexpr, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    c = tl.full([BLOCK], C, DTYPE)
    if OP == "full":
        r = c * K + x
    elif OP == "chain":  # arithmetic of constants is a constant
        r = ((tl.zeros([BLOCK], DTYPE) + C) * 2.0 * 0.5) * K + x
    elif OP == "loaded":
        r = tl.load(y_ptr + offs) * K + x
    elif OP == "scalar_arg":  # a launch argument is a runtime value
        r = s * K + x
    elif OP == "int_cast":
        r = tl.full([BLOCK], 3, tl.int32).to(DTYPE) * C + x
    elif OP == "arange1":  # a range of one element is a constant (MakeRangeOp::fold)
        r = tl.arange(3, 4).to(DTYPE) * C + x
    elif OP == "fp8_cast":  # through tt.fp_to_fp: the GPU's cvt, not folded
        r = c.to(tl.float8e5).to(DTYPE) * C + x
    elif OP == "rtz_cast":
        r = c.to(tl.float16, fp_downcast_rounding="rtz").to(DTYPE) * C + x
    elif OP == "exp":
        r = tl.exp(c) * C + x
    elif OP == "div":
        r = (c / 3.0) * C + x
    elif OP == "div_rn":  # tt.precise_divf: no folder
        r = tl.math.div_rn(c, 3.0) * C + x
    else:  # both operands products: the runtime one is fused, the constant one folded
        r = x * K + c * K
    tl.store(out_ptr + offs, r)


@triton.jit
def math_kernel(x_ptr, out_ptr, OP: tl.constexpr, A: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    c = tl.full([BLOCK], A, tl.float32)
    x = tl.load(x_ptr + offs)  # A, loaded: the runtime rule beside the folded one
    if OP == "floor":
        r, s = tl.floor(c), tl.floor(x)
    elif OP == "ceil":
        r, s = tl.ceil(c), tl.ceil(x)
    elif OP == "sqrt":
        r, s = tl.sqrt(c), tl.sqrt(x)
    elif OP == "erf":
        r, s = tl.erf(c), tl.erf(x)
    else:
        r, s = tl.exp(c), tl.exp(x)
    tl.store(out_ptr + offs, r)
    tl.store(out_ptr + BLOCK + offs, s)


def _const_mod(a, b, dtype):
    out = np.empty(BLOCK, NP[dtype])
    const_mod_kernel[(1,)](out, A=a, B=b, DTYPE=dtype, BLOCK=BLOCK)
    return out


def _as_type(value, dtype):
    """A literal as Triton makes a constant of `dtype`: rounded to a C float first, except
    fp64 (`get_fp16(float)`, `get_fp32(float)`...)."""
    if dtype == tl.float64:
        return np.float64(value)
    return np.float32(value).astype(NP[dtype])


def test_mod_of_constants_is_fmod_as_on_the_h200():
    """fuzz seed const_mod_901719: tl.full(3.0) % 0.3333333333333333 is 0.33333325 (0x3eaaaaa8)
    on the H200, APFloat's mod; the frem of loaded values rounds the quotient 8.99999973 to 9
    first and gives 3 - 9 * 0.33333334 = -8.94e-08."""
    got = _const_mod(3.0, 0.3333333333333333, tl.float32)
    assert (got.view(np.uint32) == 0x3EAAAAA8).all()
    x, y = np.full(BLOCK, 3.0, np.float32), np.full(BLOCK, 1 / 3, np.float32)
    out = np.empty(BLOCK, np.float32)
    runtime_mod_kernel[(1,)](x, y, out, OP="loaded", BLOCK=BLOCK)
    want = np.float32(3 - 9 * Fraction(float(y[0])))
    np.testing.assert_array_equal(out, want)
    assert want < 0


@pytest.mark.parametrize("dtype", [tl.float32, tl.float16, tl.bfloat16, tl.float64])
@pytest.mark.parametrize("a, b", [
    (3.0, 0.328125),   # fmod 0.046875; the lowered frem agrees here: the quotient is small
    (1e4, 0.328125),   # a quotient of 30476
    (-7.5, 2.0),       # the dividend's sign: -1.5
    (-4.0, 2.0),       # an exact zero keeps the dividend's sign: -0.0
    (5.0, -3.0),       # and the divisor's sign does not matter: 2.0
    (1.0, 0.0),        # NaN
    (1.0, math.inf),   # x
])
def test_mod_of_constants_matches_fmod(dtype, a, b):
    """Every float type: the exact remainder (np.fmod of the operands as Triton makes them)."""
    _same(_const_mod(a, b, dtype), _fmod(a, b, dtype))


def _operands(a, b, dtype):
    """tl.full([4], a, dtype) % b as Triton types it: `%` of fp16 or bf16 computes in fp32,
    the literal an fp32 constant."""
    ct = tl.float32 if dtype in (tl.float16, tl.bfloat16) else dtype
    return np.float64(_as_type(a, dtype)), np.float64(_as_type(b, ct)), ct


def _fmod(a, b, dtype):
    x, y, ct = _operands(a, b, dtype)
    with np.errstate(invalid="ignore"):  # x % 0 is NaN
        return np.fmod(x, y).astype(NP[ct]).astype(NP[dtype])


@pytest.mark.parametrize("dtype, a, b", [
    (tl.float32, 60000.0, 1e-4), (tl.float16, 60000.0, 1e-4), (tl.bfloat16, 60000.0, 1e-4),
    (tl.float64, 1e300, 3.7),
])
def test_mod_of_constants_is_not_the_runtime_frem(dtype, a, b):
    """A quotient beyond the type's (or fp32's, for fp16 and bf16) integers: the runtime frem
    truncates a rounded quotient, the folded `%` is still the exact remainder."""
    want = _fmod(a, b, dtype)
    _same(_const_mod(a, b, dtype), want)
    x, y, ct = _operands(a, b, dtype)
    loaded = np.empty(BLOCK, NP[dtype])
    runtime_mod_kernel[(1,)](np.full(BLOCK, x, NP[dtype]), np.full(BLOCK, y, NP[ct]), loaded,
                             OP="loaded", BLOCK=BLOCK)
    assert (loaded != want).all()


def _same(got, want):
    """Equal values (NaN as NaN), and zeros of the same sign."""
    got, want = (np.broadcast_to(np.asarray(v).astype(np.float64), (BLOCK,)) for v in (got, want))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got) & (got == 0), np.signbit(want) & (want == 0))


def test_mod_far_from_the_runtime_frem():
    """3.4e38 % 0.40625: the runtime frem's quotient overflows (-inf on the H200, fuzz seed
    float_mod); folded, the remainder is exact."""
    got = _const_mod(3.4028234663852886e38, 0.40625, tl.float32)
    want = np.fmod(np.float32(3.4028234663852886e38), np.float32(0.40625))
    assert np.isfinite(want)
    np.testing.assert_array_equal(got, want)


def test_a_constant_power_of_two_divisor_copies_the_sign_as_a_literal_does():
    """`x % tl.full([4], 2.0)` is `x % 2.0` once folded into a constant: LLVM's DAG combiner
    sees the same constant divisor (docs/numerics.md, float `%`)."""
    x = np.array([-4.0, 4.0, -6.0, 7.5], np.float32)
    outs = {}
    for op in ("full_divisor", "literal"):
        outs[op] = np.empty(BLOCK, np.float32)
        runtime_mod_kernel[(1,)](x, x, outs[op], OP=op, BLOCK=BLOCK)
    for out in outs.values():
        _same(out, np.array([-0.0, 0.0, -0.0, 1.5]))


def _product(op, x, y=None, s=0.1, c=0.1, k=3.0, dtype=tl.float32, **options):
    out = np.empty(BLOCK, NP[dtype])
    product_kernel[(1,)](x, x if y is None else y, out, s, OP=op, C=c, K=k, DTYPE=dtype,
                         BLOCK=BLOCK, **options)
    return out


def _fused(p, q, r, dtype):
    """p * q + r rounded once to `dtype` (exact rational arithmetic)."""
    exact = Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r))
    return NP[dtype](float(exact))


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
@pytest.mark.parametrize("op", ["full", "chain"])
def test_a_product_of_constants_is_rounded_before_the_add(op, dtype):
    """tl.full(0.1) * 3.0 + x: the compiler folds the product (rounds it), so the add sees a
    constant and nothing is fused: x = -round(0.1 * 3) gives 0, where an fma would give the
    product's rounding error (fuzz seed const_product_fold)."""
    c = _as_type(0.1, dtype)
    prod = c * NP[dtype](3.0)  # rounded in the type
    x = np.full(BLOCK, -prod, NP[dtype])
    np.testing.assert_array_equal(_product(op, x, dtype=dtype), np.zeros(BLOCK))
    assert _fused(c, 3.0, -prod, dtype) != 0  # what contraction would have given


@pytest.mark.parametrize("op", ["loaded", "scalar_arg"])
def test_a_product_of_runtime_values_is_still_fused(op):
    """The same product of a loaded value or a scalar argument is contracted, one rounding."""
    x = np.full(BLOCK, -F32_03, np.float32)
    y = np.full(BLOCK, 0.1, np.float32)
    want = _fused(np.float32(0.1), 3.0, -F32_03, tl.float32)
    assert want == np.float32(-7.450580596923828e-09)
    np.testing.assert_array_equal(_product(op, x, y), np.full(BLOCK, want))


def test_the_runtime_product_is_fused_beside_a_folded_one():
    """x * 3.0 + c * 3.0: the constant product is a plain constant, so the runtime one is
    fused: fma(x, 3, round(0.1f * 3)) (as fuzz seed const_product_fold's y1)."""
    x = np.full(BLOCK, -0.1, np.float32)
    want = _fused(x[0], 3.0, F32_03, tl.float32)
    assert want == np.float32(7.450580596923828e-09)
    np.testing.assert_array_equal(_product("both", x), np.full(BLOCK, want))


def test_without_fp_fusion_nothing_changes():
    """enable_fp_fusion=False rounds every product, folded or not: both give 0."""
    x = np.full(BLOCK, -F32_03, np.float32)
    np.testing.assert_array_equal(_product("full", x, enable_fp_fusion=False), np.zeros(BLOCK))
    np.testing.assert_array_equal(_product("loaded", x, np.full(BLOCK, 0.1, np.float32),
                                           enable_fp_fusion=False), np.zeros(BLOCK))


@pytest.mark.parametrize("op", ["int_cast", "arange1"])
def test_integer_constants_fold_through_casts(op):
    """3 (a tl.full, or tl.arange(3, 4)) converted to fp32 is a constant: 3.0 * 0.1f is
    rounded to 0.3f before the add."""
    x = np.full(BLOCK, -F32_03, np.float32)
    np.testing.assert_array_equal(_product(op, x), np.zeros(BLOCK))


def test_a_quotient_of_constants_is_a_constant():
    """(0.1f / 3) * 0.1f + x: the division is folded (correctly rounded), then the product."""
    c = np.float32(0.1)
    q = c / np.float32(3.0)
    x = np.full(BLOCK, -(q * c), np.float32)
    assert _fused(q, c, x[0], tl.float32) != 0
    np.testing.assert_array_equal(_product("div", x), np.zeros(BLOCK))


@pytest.mark.parametrize("op, narrow", [
    ("fp8_cast", lambda v: np.float32(v).astype(ml_dtypes.float8_e5m2).astype(np.float32)),
    ("rtz_cast", lambda v: np.float32(0.0999755859375)),  # 0.1f toward zero in fp16
    ("div_rn", lambda v: np.float32(v) / np.float32(3.0)),
])
def test_what_triton_does_not_fold_is_a_runtime_value(op, narrow):
    """Casts to and from fp8, and rounding toward zero, are tt.fp_to_fp, which folds only a
    zero, and div_rn is tt.precise_divf, which has no folder: their values are the GPU's
    instructions' at runtime, so the product after them is fused."""
    p = narrow(0.1)
    c = np.float32(0.1)
    x = np.full(BLOCK, -(p * c), np.float32)
    want = _fused(p, c, x[0], tl.float32)
    assert want != 0
    np.testing.assert_array_equal(_product(op, x), np.full(BLOCK, want))


def test_constant_math_is_folded_and_its_product_too():
    """exp of a constant is the host's expf, a constant, so exp(c) * c is folded too."""
    c = np.float32(0.1)
    e = np.float32(math.exp(float(c)))
    prod = e * c
    x = np.full(BLOCK, -prod, np.float32)
    assert _fused(e, c, x[0], tl.float32) != 0
    np.testing.assert_array_equal(_product("exp", x), np.zeros(BLOCK))


@pytest.mark.parametrize("op, a, folded, runtime", [
    # fuzz seed clean_run_85: the H200's floor of a loaded -3e-39 is -0.0 (cvt.rmi.ftz);
    # APFloat's roundToIntegral of the constant does not flush it
    ("floor", -3e-39, -1.0, -0.0),
    ("ceil", 3e-39, 1.0, 0.0),
    ("sqrt", 1e-40, float(np.float32(math.sqrt(float(np.float32(1e-40))))), 0.0),
    ("erf", 1e-40, float(np.float32(math.erf(float(np.float32(1e-40))))), 0.0),
    # expf(2) correctly rounded, 7.389056; the GPU's ex2.approx(x * log2 e), which minitriton
    # follows at runtime, gives 7.3890557 (x * log2 e rounded to fp32 first)
    ("exp", 2.0, float(np.float32(math.exp(2.0))), 7.3890557),
])
def test_math_of_constants(op, a, folded, runtime):
    x = np.full(BLOCK, a, np.float32)
    out = np.empty(2 * BLOCK, np.float32)
    math_kernel[(1,)](x, out, OP=op, A=a, BLOCK=BLOCK)
    _same(out[:BLOCK], np.float32(folded))
    _same(out[BLOCK:], np.float32(runtime))
