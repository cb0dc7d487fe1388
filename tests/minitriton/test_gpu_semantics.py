"""Triton 3.6 semantics the differential fuzzer found minitriton missing (tests/minitriton/fuzz,
fuzz_seeds.json): cumprod keeps narrow int types, 64-bit random offsets run Philox 4x32 on
(low, high) words, broadcast_to splats a scalar, max/min order -0.0 below +0.0, and kernels
Triton refuses are refused here too."""
import ml_dtypes
import numpy as np
import pytest

import minitriton
import minitriton.language as tl

pytestmark = pytest.mark.usefixtures("executor")

PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_K = (0x9E3779B9, 0xBB67AE85)


def philox4x32(counter, key, rounds=10):
    """Philox 4x32 from the Random123 paper, in Python ints."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(rounds):
        p0, p1 = PHILOX_M[0] * c0, PHILOX_M[1] * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & 0xFFFFFFFF, (p0 >> 32) ^ c3 ^ k1, p0 & 0xFFFFFFFF
        k0, k1 = (k0 + PHILOX_K[0]) & 0xFFFFFFFF, (k1 + PHILOX_K[1]) & 0xFFFFFFFF
    return c0, c1, c2, c3


# ----- scan types


@minitriton.jit
def cumprod_kernel(x_ptr, out_ptr, N: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, N)
    r = tl.cumprod(tl.load(x_ptr + offs), 0, reverse=REVERSE)
    tl.static_assert(r.dtype == x_ptr.dtype.element_ty)
    tl.store(out_ptr + offs, r)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumprod_of_narrow_ints_keeps_the_type_and_wraps(dtype, reverse):
    x = np.array([100, 3, -2, 5, 7, -3, 11, 2], np.int64).astype(dtype)
    out = np.zeros_like(x)
    cumprod_kernel[(1,)](x, out, N=8, REVERSE=reverse)
    flip = (lambda a: a[::-1]) if reverse else (lambda a: a)
    np.testing.assert_array_equal(out, flip(np.multiply.accumulate(flip(x), dtype=dtype)))


def test_cumprod_int8_example_of_the_fuzzer():
    x = np.array([100, 3, -2, 5], np.int8)
    out = np.zeros_like(x)
    cumprod_kernel[(1,)](x, out, N=4, REVERSE=False)
    assert out.tolist() == [100, 44, -88, 72]


@minitriton.jit
def cumsum_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    r = tl.cumsum(tl.load(x_ptr + offs), 0)
    tl.static_assert(r.dtype == tl.int32)  # _pick_sum_dtype widens ints below 32 bits
    tl.store(out_ptr + offs, r)


def test_cumsum_of_int8_still_widens_to_int32():
    x = np.full(8, 100, np.int8)
    out = np.zeros(8, np.int32)
    cumsum_kernel[(1,)](x, out, N=8)
    np.testing.assert_array_equal(out, 100 * np.arange(1, 9))


@minitriton.jit
def bf16_scans_kernel(x_ptr, s_ptr, p_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    s, p = tl.cumsum(x, 0), tl.cumprod(x, 0)
    tl.static_assert(s.dtype == tl.float32)
    tl.static_assert(p.dtype == tl.float32)
    tl.store(s_ptr + offs, s)
    tl.store(p_ptr + offs, p)


def test_bf16_cumsum_and_cumprod_give_fp32():
    x = np.array([1.5, 2, -0.5, 3, 1, 1, 2, 0.25], ml_dtypes.bfloat16)
    s, p = np.zeros(8, np.float32), np.zeros(8, np.float32)
    bf16_scans_kernel[(1,)](x, s, p, N=8)
    np.testing.assert_array_equal(s, np.cumsum(x.astype(np.float32)))
    np.testing.assert_array_equal(p, np.cumprod(x.astype(np.float32)))


# ----- random numbers with 64-bit offsets


@minitriton.jit
def randint64_kernel(seed, out_ptr, u_ptr, BASE: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    r = tl.randint(seed, offs.to(tl.int64) + BASE)
    tl.static_assert(r.dtype == tl.uint32)
    tl.store(out_ptr + offs, r.to(tl.int32, bitcast=True))
    tl.store(u_ptr + offs, tl.rand(seed, offs.to(tl.int64) + BASE))


@pytest.mark.parametrize("base", [0, 2**33, -2**40 - 5])
def test_randint_with_int64_offsets_runs_philox4x32_on_low_and_high_words(base):
    seed, n = 7, 16
    out, u = np.zeros(n, np.int32), np.zeros(n, np.float32)
    randint64_kernel[(1,)](seed, out, u, BASE=base, N=n)
    words = [(base + i) & 0xFFFFFFFFFFFFFFFF for i in range(n)]
    want = np.array([philox4x32((w & 0xFFFFFFFF, w >> 32, 0, 0), (seed, 0))[0] for w in words],
                    np.uint32)
    np.testing.assert_array_equal(out.view(np.uint32), want)
    folded = want.view(np.int32)
    folded = np.where(folded < 0, ~folded, folded)
    np.testing.assert_array_equal(u, folded.astype(np.float32) * np.float32(4.6566127342e-10))


def test_int64_offsets_below_2_to_the_32_equal_int32_offsets():
    seed, n = 11, 32
    a, ua = np.zeros(n, np.int32), np.zeros(n, np.float32)
    randint64_kernel[(1,)](seed, a, ua, BASE=0, N=n)
    want = [philox4x32((i, 0, 0, 0), (seed, 0))[0] for i in range(n)]
    assert a.view(np.uint32).tolist() == want


def test_randint_int64_offsets_match_the_gpu_recorded_values():
    # fuzz_seeds.json "randint_offset64": tl.randint(7, offs.to(tl.int64) + 2**33), H200
    out, u = np.zeros(8, np.int32), np.zeros(8, np.float32)
    randint64_kernel[(1,)](7, out, u, BASE=2**33, N=8)
    gpu = np.frombuffer(bytes.fromhex("cd76c65210edc8b246d3b3ebe2c89b78"
                                      "f4d799e2235c9c4cec96cf96585b7a7e"), np.int32)
    np.testing.assert_array_equal(out, gpu)


# ----- broadcast_to of a scalar


@minitriton.jit
def broadcast_scalar_kernel(s, out_ptr, N: tl.constexpr):
    r = tl.broadcast_to(s + 1, [N])
    tl.static_assert(r.dtype == tl.int32)
    tl.store(out_ptr + tl.arange(0, N), r)


@minitriton.jit
def broadcast_scalar_2d_kernel(s, out_ptr):
    r = tl.broadcast_to(s * 2.0, 4, 8)
    offs = tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :]
    tl.store(out_ptr + offs, r)


def test_broadcast_to_splats_a_scalar():
    out = np.zeros(4, np.int32)
    broadcast_scalar_kernel[(1,)](41, out, N=4)
    assert out.tolist() == [42] * 4
    out2 = np.zeros(32, np.float32)
    broadcast_scalar_2d_kernel[(1,)](1.25, out2)
    np.testing.assert_array_equal(out2, np.full(32, 2.5, np.float32))


@minitriton.jit
def broadcast_rank_kernel(out_ptr):
    x = tl.arange(0, 4)
    tl.store(out_ptr + tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :],
             tl.broadcast_to(x, [4, 4]))


def test_broadcast_to_of_a_block_still_needs_the_same_rank():
    with pytest.raises(minitriton.CompilationError, match="rank mismatch"):
        broadcast_rank_kernel[(1,)](np.zeros(16, np.int32))


# ----- signed zeros in max/min


@minitriton.jit
def minmax_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    rows = tl.arange(0, M)
    tl.store(out_ptr + rows, tl.max(x, axis=1))
    tl.store(out_ptr + M + rows, tl.min(x, axis=1))
    tl.store(out_ptr + 2 * M, tl.max(x))
    tl.store(out_ptr + 2 * M + 1, tl.min(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64])
def test_max_prefers_plus_zero_and_min_minus_zero(dtype):
    z, p = -0.0, 0.0
    rows = [[z, p, z, z], [p, z, z, z], [z, z, z, z], [p, p, p, p], [z, -1, p, -2], [z, 1, p, 2],
            [z, np.nan, p, z], [-3, z, -1, p]]
    x = np.array(rows, dtype)
    out_ty = np.float64 if dtype == np.float64 else np.float32
    out = np.zeros(18, out_ty)
    minmax_kernel[(1,)](x, out, M=8, N=4)
    mx, mn = out[:8], out[8:16]
    want_max = [p, p, z, p, p, 2, p, p]
    want_min = [z, z, z, p, -2, z, z, -3]
    assert [(float(v), bool(np.signbit(v))) for v in mx] == \
        [(float(v), bool(np.signbit(v))) for v in want_max]
    assert [(float(v), bool(np.signbit(v))) for v in mn] == \
        [(float(v), bool(np.signbit(v))) for v in want_min]
    assert out[16] == 2 and out[17] == -3


@minitriton.jit
def max_zeros_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr, tl.max(x, 0))
    tl.store(out_ptr + 1, tl.min(x, 0))
    v, i = tl.max(x, 0, return_indices=True)
    tl.store(out_ptr + 2, v)


def test_all_minus_zeros_stay_minus_zero_and_all_plus_zeros_plus():
    out = np.zeros(3, np.float32)
    max_zeros_kernel[(1,)](np.full(64, -0.0, np.float32), out, N=64)
    assert np.signbit(out).tolist() == [True, True, True]
    max_zeros_kernel[(1,)](np.zeros(64, np.float32), out, N=64)
    assert np.signbit(out).tolist() == [False, False, False]
    x = np.full(64, -0.0, np.float32)
    x[37] = 0.0
    max_zeros_kernel[(1,)](x, out, N=64)
    assert np.signbit(out).tolist() == [False, True, False]


# ----- kernels Triton 3.6 refuses


@minitriton.jit
def argmax_none_kernel(x_ptr, out_ptr, ARG_MIN: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    if ARG_MIN:
        tl.store(out_ptr, tl.argmin(x, axis=None))
    else:
        tl.store(out_ptr, tl.argmax(x, axis=None))


@minitriton.jit
def max_indices_none_kernel(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    v, i = tl.max(x, None, return_indices=True)
    tl.store(out_ptr, i)


@pytest.mark.parametrize("arg_min", [False, True])
def test_argmax_argmin_refuse_axis_none(arg_min):
    with pytest.raises(minitriton.CompilationError, match="needs an axis.*axis=None"):
        argmax_none_kernel[(1,)](np.arange(8, dtype=np.float32), np.zeros(1, np.int32),
                                 ARG_MIN=arg_min)
    with pytest.raises(minitriton.CompilationError, match="needs an axis"):
        max_indices_none_kernel[(1,)](np.arange(8, dtype=np.float32), np.zeros(1, np.int32))


@minitriton.jit
def int8_dot_kernel(a_ptr, acc_ptr, out_ptr, OUT_INT32: tl.constexpr):
    r = tl.arange(0, 32)
    offs = r[:, None] * 32 + r[None, :]
    a = tl.load(a_ptr + offs)
    acc = tl.load(acc_ptr + offs)
    if OUT_INT32:
        tl.store(out_ptr + offs, tl.dot(a, a, acc, out_dtype=tl.int32))
    else:
        tl.store(out_ptr + offs, tl.dot(a, a, acc))


def test_int8_dot_with_an_int32_accumulator_needs_out_dtype_int32():
    rng = np.random.default_rng(0)
    a = rng.integers(-5, 5, (32, 32)).astype(np.int8)
    acc = rng.integers(-100, 100, (32, 32)).astype(np.int32)
    out = np.zeros((32, 32), np.int32)
    with pytest.raises(minitriton.CompilationError, match="out_dtype=tl.int32"):
        int8_dot_kernel[(1,)](a, acc, out, OUT_INT32=False)
    int8_dot_kernel[(1,)](a, acc, out, OUT_INT32=True)
    np.testing.assert_array_equal(out, a.astype(np.int32) @ a.astype(np.int32) + acc)


@minitriton.jit
def widening_combine(a, b):
    return tl.maximum(a, b).to(tl.float32)


@minitriton.jit
def scan_widening_kernel(x_ptr, out_ptr):
    offs = tl.arange(0, 8)
    tl.store(out_ptr + offs, tl.associative_scan(tl.load(x_ptr + offs), 0, widening_combine))


@minitriton.jit
def reduce_widening_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, tl.reduce(tl.load(x_ptr + tl.arange(0, 8)), 0, widening_combine))


def test_a_combine_returning_another_type_is_refused():
    # Triton's verifier of tt.scan / tt.reduce (bf16 in, the combine's fp32 out)
    x = np.arange(8).astype(ml_dtypes.bfloat16)
    with pytest.raises(minitriton.CompilationError, match="type mismatch on combine operation"):
        scan_widening_kernel[(1,)](x, np.zeros(8, ml_dtypes.bfloat16))
    with pytest.raises(minitriton.CompilationError, match="type mismatch on combine operation"):
        reduce_widening_kernel[(1,)](x, np.zeros(1, ml_dtypes.bfloat16))


@minitriton.jit
def _elementwise_minmax(x, y, o, p):
    r = tl.arange(0, 4)
    a = tl.load(x + r)
    b = tl.load(y + r)
    tl.store(o + r, tl.maximum(a, b))
    tl.store(p + r, tl.minimum(a, b))


def test_elementwise_max_orders_signed_zeros_as_the_gpu():
    # the fuzzer's case 990 on the H200: a tl.maximum scan over -0.0 and +0.0 gives +0.0
    x = np.array([-0.0, 0.0, -0.0, 1.0], np.float32)
    y = np.array([0.0, -0.0, -0.0, -0.0], np.float32)
    o, p = np.ones(4, np.float32), np.ones(4, np.float32)
    _elementwise_minmax[(1,)](x, y, o, p)
    assert np.signbit(o).tolist() == [False, False, True, False]
    assert np.signbit(p).tolist() == [True, True, True, True]
