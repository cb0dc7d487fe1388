"""Tier-1 operations of minitriton.language against NumPy references, over random shapes/dtypes."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minitriton as triton
import minitriton.language as tl
import references as ref

pytestmark = pytest.mark.usefixtures("executor")  # every test runs kernels
DTYPES = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16, "i32": np.int32}


@triton.jit
def binop_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    y = tl.load(y_ptr + offs, mask=mask, other=1)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "div":
        r = x / y
    elif OP == "max":
        r = tl.maximum(x, y)
    elif OP == "min":
        r = tl.minimum(x, y)
    elif OP == "where":
        r = tl.where(x > y, x, y)
    else:
        r = (x < y).to(x.dtype)
    tl.store(out_ptr + offs, r, mask=mask)


def _reference(op, x, y):
    compute = np.float32 if x.dtype != np.int32 else np.int64
    a, b = x.astype(compute), y.astype(compute)
    ops = {"add": a + b, "sub": a - b, "mul": a * b, "max": np.maximum(a, b),
           "min": np.minimum(a, b), "where": np.where(a > b, a, b), "lt": (a < b)}
    if op == "div":
        return (x.astype(np.float32) / y.astype(np.float32)).astype(np.float32)
    return ops[op].astype(x.dtype)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 700), block=st.sampled_from([16, 64, 256]),
       dtype=st.sampled_from(list(DTYPES)),
       op=st.sampled_from(["add", "sub", "mul", "div", "max", "min", "where", "lt"]),
       seed=st.integers(0, 2**16))
def test_binary_ops_match_numpy(n, block, dtype, op, seed):
    rng = np.random.default_rng(seed)
    npdt = DTYPES[dtype]
    if npdt == np.int32:
        x = rng.integers(-1000, 1000, n).astype(np.int32)
        y = rng.integers(1, 1000, n).astype(np.int32)
    else:
        x = (rng.standard_normal(n) * 10).astype(npdt)
        y = (rng.standard_normal(n) * 10).astype(npdt)
    ref = _reference(op, x, y)
    out = np.zeros(n, dtype=ref.dtype)
    binop_kernel[(triton.cdiv(n, block),)](x, y, out, n, OP=op, BLOCK=block)
    np.testing.assert_array_equal(out, ref)


@triton.jit
def unary_kernel(x_ptr, out_ptr, OP: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if OP == "exp":
        r = tl.exp(x)
    elif OP == "exp2":
        r = tl.exp2(x)
    elif OP == "log":
        r = tl.log(tl.abs(x) + 1e-3)
    elif OP == "log2":
        r = tl.log2(tl.abs(x) + 1e-3)
    elif OP == "sqrt":
        r = tl.sqrt(tl.abs(x))
    elif OP == "rsqrt":
        r = tl.rsqrt(tl.abs(x) + 1e-3)
    elif OP == "sigmoid":
        r = tl.sigmoid(x)
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "cos":
        r = tl.cos(x)
    elif OP == "sin":
        r = tl.sin(x)
    elif OP == "erf":
        r = tl.erf(x)
    elif OP == "fma":
        r = tl.fma(x, x, x)
    elif OP == "clamp":
        r = tl.clamp(x, -1.0, 2.0)
    else:
        r = tl.cdiv(N, 3) + x
    tl.store(out_ptr + offs, r)


UNARY_REF = {
    "exp": np.exp, "exp2": np.exp2, "log": lambda x: np.log(np.abs(x) + np.float32(1e-3)),
    "log2": lambda x: np.log2(np.abs(x) + np.float32(1e-3)), "sqrt": lambda x: np.sqrt(np.abs(x)),
    "rsqrt": lambda x: 1 / np.sqrt(np.abs(x) + np.float32(1e-3)),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "abs": np.abs, "cos": np.cos, "sin": np.sin,
    "erf": ref.erf,
    "fma": lambda x: x * x + x, "clamp": lambda x: np.clip(x, -1, 2), "cdiv": lambda x: x + -(-x.size // 3),
}


@pytest.mark.parametrize("op", list(UNARY_REF))
@pytest.mark.parametrize("n", [1, 16, 64])
def test_unary_math_fp32(op, n):
    x = (np.random.default_rng(n).standard_normal(n) * 4).astype(np.float32)
    out = np.zeros(n, np.float32)
    unary_kernel[(1,)](x, out, OP=op, N=n)
    ref = UNARY_REF[op](x.astype(np.float64))
    np.testing.assert_allclose(out, ref, rtol=2e-6, atol=2e-7)


@triton.jit
def reduce2d_kernel(x_ptr, out_ptr, OP: tl.constexpr, AXIS: tl.constexpr, KEEP: tl.constexpr,
                    M: tl.constexpr, N: tl.constexpr, OUT: tl.constexpr):
    r = tl.arange(0, M)
    c = tl.arange(0, N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :])
    if OP == "sum":
        y = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        y = tl.max(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "min":
        y = tl.min(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmax":
        y = tl.argmax(x, axis=AXIS, keep_dims=KEEP)
    else:
        y = tl.argmin(x, axis=AXIS, keep_dims=KEEP)
    tl.store(out_ptr + tl.arange(0, OUT), tl.reshape(y, [OUT]))


@settings(max_examples=40, deadline=None)
@given(m=st.sampled_from([1, 2, 16]), n=st.sampled_from([1, 4, 32]), axis=st.sampled_from([0, 1]),
       keep=st.booleans(), op=st.sampled_from(["sum", "max", "min", "argmax", "argmin"]),
       seed=st.integers(0, 1000))
def test_reductions_match_numpy(m, n, axis, keep, op, seed):
    x = np.random.default_rng(seed).standard_normal((m, n)).astype(np.float32)
    ref = getattr(np, op)(x.astype(np.float64), axis=axis)
    out = np.zeros(ref.size, dtype=np.int32 if op.startswith("arg") else np.float32)
    reduce2d_kernel[(1,)](x, out, OP=op, AXIS=axis, KEEP=keep, M=m, N=n, OUT=ref.size)
    if op == "sum":  # an fp32 sum in any order: within (terms - 1) roundings of sum(|x|)
        terms = x.shape[axis]
        bound = (terms - 1) * np.finfo(np.float32).eps * np.abs(x.astype(np.float64)).sum(axis)
        assert np.all(np.abs(out - ref.ravel()) <= bound.ravel() + 1e-30)
    else:
        np.testing.assert_array_equal(out, ref.ravel())


@triton.jit
def fp16_math_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = x * x - x / 3  # fp16 * fp16 -> fp16; fp16 / literal -> fp32 (div promotes)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("npdt", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_arithmetic_matches_ml_dtypes(npdt):
    x = (np.random.default_rng(0).standard_normal(64) * 8).astype(npdt)
    out = np.zeros(64, np.float32)
    fp16_math_kernel[(1,)](x, out, N=64)
    f = x.astype(np.float32)
    sq = (f * f).astype(npdt).astype(np.float32)  # rounded to the half type after the multiply
    ref = sq - (f / np.float32(3))
    np.testing.assert_array_equal(out, ref.astype(np.float32))


@triton.jit
def int_kernel(a_ptr, b_ptr, q_ptr, r_ptr, w_ptr, s_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(q_ptr + offs, a // b)
    tl.store(r_ptr + offs, a % b)
    tl.store(w_ptr + offs, a * 2147483 + 2147483647)
    tl.store(s_ptr + offs, (a << 3) ^ (a >> 1) | (a & 7))


def test_integer_division_truncates_and_int32_wraps():
    rng = np.random.default_rng(5)
    a = rng.integers(-10**6, 10**6, 64).astype(np.int32)
    b = rng.integers(1, 50, 64).astype(np.int32) * rng.choice([-1, 1], 64).astype(np.int32)
    q, r, w, s = (np.zeros(64, np.int32) for _ in range(4))
    int_kernel[(1,)](a, b, q, r, w, s, N=64)
    qt, rt = ref.trunc_divmod(a, b)
    np.testing.assert_array_equal(q, qt)
    np.testing.assert_array_equal(r, rt)
    np.testing.assert_array_equal(w, (a.astype(np.int64) * 2147483 + 2147483647).astype(np.int32))
    np.testing.assert_array_equal(s, ((a << 3) ^ (a >> 1) | (a & 7)))


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               PREC: tl.constexpr):
    m = tl.arange(0, M)
    n = tl.arange(0, N)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    tl.store(c_ptr + m[:, None] * N + n[None, :], tl.dot(a, b, input_precision=PREC))


def test_tf32_vs_ieee_dot():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((32, 64)).astype(np.float32)
    b = rng.standard_normal((64, 16)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    outs = {}
    for prec in ("tf32", "ieee"):
        outs[prec] = np.zeros((32, 16), np.float32)
        dot_kernel[(1,)](a, b, outs[prec], M=32, N=16, K=64, PREC=prec)
    err_ieee = np.abs(outs["ieee"] - exact).max()
    err_tf32 = np.abs(outs["tf32"] - exact).max()
    assert err_ieee < 1e-4 < err_tf32  # TF32 keeps 10 mantissa bits: ~1e-3 relative
    np.testing.assert_allclose(outs["tf32"], ref.f64(ref.tf32(a)) @ ref.tf32(b), rtol=1e-5,
                               atol=1e-5)


@triton.jit
def rtz_kernel(x_ptr, h_ptr, b_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(h_ptr + offs, x.to(tl.float16, fp_downcast_rounding="rtz"))
    tl.store(b_ptr + offs, x.to(tl.bfloat16, fp_downcast_rounding="rtz"))


def test_downcast_round_toward_zero():
    x = (np.random.default_rng(1).standard_normal(64) * 100).astype(np.float32)
    h, b = np.zeros(64, np.float16), np.zeros(64, ml_dtypes.bfloat16)
    rtz_kernel[(1,)](x, h, b, N=64)
    for out in (h, b):
        back = out.astype(np.float64)
        assert np.all(np.abs(back) <= np.abs(x)) and np.all(np.sign(back) == np.sign(x))
        nearest = x.astype(out.dtype).astype(np.float64)
        assert np.all(np.abs(back - x) <= np.abs(nearest - x) + np.abs(nearest) * 2 ** -7)
