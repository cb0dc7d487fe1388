"""associative_scan, sort, topk, flip, interleave, histogram, gather against NumPy."""
import ml_dtypes
import numpy as np
import pytest

import minitriton
import minitriton.language as tl

pytestmark = pytest.mark.usefixtures("executor")


@minitriton.jit
def add_combine(a, b):
    return a + b


@minitriton.jit
def max_combine(a, b):
    return tl.maximum(a, b)


@minitriton.jit
def argmax_combine(va, ia, vb, ib):  # running (max, its index): a tuple scan
    take_b = vb > va
    return tl.where(take_b, vb, va), tl.where(take_b, ib, ia)


@minitriton.jit
def affine_combine(a1, b1, a2, b2):  # x -> a*x + b composed: not commutative
    return a1 * a2, b1 * a2 + b2


@minitriton.jit
def scan_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                REVERSE: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.associative_scan(x, AXIS, add_combine, reverse=REVERSE))
    tl.store(out_ptr + M * N + offs, x.associative_scan(AXIS, max_combine, REVERSE))


@minitriton.jit
def tuple_scan_kernel(x_ptr, a_ptr, b_ptr, v_ptr, i_ptr, c_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    v, i = tl.associative_scan((x, offs), 0, argmax_combine)
    tl.store(v_ptr + offs, v)
    tl.store(i_ptr + offs, i)
    a, b = tl.associative_scan((tl.load(a_ptr + offs), tl.load(b_ptr + offs)), 0, affine_combine)
    tl.store(c_ptr + offs, a * 0.5 + b)  # the composed map applied to x0 = 0.5


@pytest.mark.parametrize("axis,reverse", [(0, False), (1, False), (1, True), (-1, True)])
def test_associative_scan_add_and_max(axis, reverse):
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 100, (8, 32)).astype(np.int32)
    out = np.zeros((2, 8, 32), np.int32)
    scan_kernel[(1,)](x, out, M=8, N=32, AXIS=axis, REVERSE=reverse)
    flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
    np.testing.assert_array_equal(out[0], flip(np.cumsum(flip(x), axis)))
    np.testing.assert_array_equal(out[1], flip(np.maximum.accumulate(flip(x), axis)))


def test_tuple_scan_argmax_and_a_non_commutative_combine():
    rng = np.random.default_rng(1)
    n = 64
    x = rng.standard_normal(n).astype(np.float32)
    a = rng.uniform(0.5, 1.5, n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    v, i, c = np.zeros(n, np.float32), np.zeros(n, np.int32), np.zeros(n, np.float32)
    tuple_scan_kernel[(1,)](x, a, b, v, i, c, N=n)
    np.testing.assert_array_equal(v, np.maximum.accumulate(x))
    np.testing.assert_array_equal(i, [int(np.argmax(x[:k + 1])) for k in range(n)])
    want, y = [], 0.5
    for ak, bk in zip(a.astype(np.float64), b.astype(np.float64)):
        y = ak * y + bk
        want.append(y)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


@minitriton.jit
def sort_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.sort(x))
    tl.store(out_ptr + M * N + offs, tl.sort(x, descending=True))
    tl.store(out_ptr + 2 * M * N + offs, tl.flip(x, 1))
    tl.store(out_ptr + 3 * M * N + offs, x.flip(0))
    koffs = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    tl.store(out_ptr + 4 * M * N + koffs, tl.topk(x, K).to(x.dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int32,
                                   np.int8, np.uint32])
@pytest.mark.parametrize("m,n,k", [(1, 64, 8), (4, 16, 16), (2, 2, 1)])
def test_sort_flip_topk(dtype, m, n, k):
    rng = np.random.default_rng(2)
    x = np.clip(rng.standard_normal((m, n)) * 50, -120, 120).astype(np.float32)
    x = (np.abs(x) if dtype in (np.uint32,) else x).astype(dtype)
    out = np.zeros(5 * m * n, dtype)
    sort_kernel[(1,)](x, out, M=m, N=n, K=k)
    out = out.astype(np.float64)
    got = [out[i * m * n:(i + 1) * m * n].reshape(m, n) for i in range(4)]
    xs = x.astype(np.float64)
    np.testing.assert_array_equal(got[0], np.sort(xs, 1))
    np.testing.assert_array_equal(got[1], -np.sort(-xs, 1))
    np.testing.assert_array_equal(got[2], xs[:, ::-1])
    np.testing.assert_array_equal(got[3], xs[::-1])
    np.testing.assert_array_equal(out[4 * m * n:4 * m * n + m * k].reshape(m, k),
                                  -np.sort(-xs, 1)[:, :k])


@minitriton.jit
def interleave_gather_kernel(a_ptr, b_ptr, idx_ptr, out_ptr, g_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(out_ptr + tl.arange(0, 2 * N), tl.interleave(a, b))
    rows = tl.arange(0, 4)[:, None] * N + offs[None, :]
    src = tl.load(a_ptr + offs)[None, :] + tl.zeros([4, N], a.dtype)
    idx = tl.load(idx_ptr + rows)
    tl.store(g_ptr + rows, tl.gather(src, idx, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_interleave_and_gather(dtype):
    n = 32
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(n) * 10).astype(dtype), (rng.standard_normal(n) * 10).astype(dtype)
    idx = rng.integers(0, n, (4, n)).astype(np.int32)
    out, g = np.zeros(2 * n, dtype), np.zeros((4, n), dtype)
    interleave_gather_kernel[(1,)](a, b, idx, out, g, N=n)
    np.testing.assert_array_equal(out, np.stack([a, b], 1).reshape(-1))
    np.testing.assert_array_equal(g, a[idx])


@minitriton.jit
def histogram_kernel(x_ptr, out_ptr, n, N: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    h = tl.histogram(x, BINS, mask=offs < n)
    tl.store(out_ptr + tl.program_id(0) * BINS + tl.arange(0, BINS), h)


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.int64])
def test_histogram_counts_masked_in_range_values(dtype):
    rng = np.random.default_rng(4)
    x = rng.integers(0, 16, 200).astype(dtype)
    out = np.zeros((3, 16), np.int32)
    histogram_kernel[(3,)](x, out, 200, N=256, BINS=16)
    for row in out:
        np.testing.assert_array_equal(row, np.bincount(x, minlength=16))


@minitriton.jit
def bad_sort_axis_kernel(x_ptr):
    offs = tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :]
    tl.store(x_ptr + offs, tl.sort(tl.load(x_ptr + offs), dim=0))


@minitriton.jit
def bad_histogram_float_kernel(x_ptr):
    tl.store(x_ptr + tl.arange(0, 8), tl.histogram(tl.load(x_ptr + tl.arange(0, 8)), 8).to(tl.float32))


@minitriton.jit
def bad_gather_rank_kernel(x_ptr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, tl.gather(x, offs[:, None], 0).reshape(8))


@minitriton.jit
def bad_scan_axis_kernel(x_ptr):
    offs = tl.arange(0, 8)
    tl.store(x_ptr + offs, tl.associative_scan(tl.load(x_ptr + offs), 1, add_combine))


@minitriton.jit
def gather_out_of_range_kernel(x_ptr, i_ptr):
    offs = tl.arange(0, 8)
    tl.store(x_ptr + offs, tl.gather(tl.load(x_ptr + offs), tl.load(i_ptr + offs), 0))


@pytest.mark.parametrize("kernel,match", [
    (bad_sort_axis_kernel, "only minor dimension is currently supported"),
    (bad_histogram_float_kernel, "histogram only supports integer input"),
    (bad_gather_rank_kernel, "same rank"),
    (bad_scan_axis_kernel, "scan axis 1 must be < inputs rank"),
])
def test_rejections(kernel, match):
    with pytest.raises(minitriton.CompilationError, match=match):
        kernel[(1,)](np.zeros(16, np.float32))


def test_gather_index_out_of_range_is_an_error():
    idx = np.arange(8, dtype=np.int32)
    idx[3] = 8
    with pytest.raises(minitriton.OutOfBoundsError, match="out of range"):
        gather_out_of_range_kernel[(1,)](np.zeros(8, np.float32), idx)
