"""The simulator's fast paths give what the general paths give (NumPy is the reference):
- `&` of a row mask and a column mask that are both all true is a read-only view of one True
  (language/arith.py, `_outer_all_true`): every use of such a mask, on both executors;
- `tl.maximum(x, 0.0)` (ReLU) in one pass (`_positive_zero`): -0.0, NaN, infinities, every float;
- the consecutive-offsets test's spot check (memory.py, `_spot_check`) before its full pass."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import Settings
from minitriton.memory import _as_slice, _ascending, _consecutive


@triton.jit
def outer_mask_kernel(x_ptr, y_ptr, m_ptr, s_ptr, M, N, stride, BM: tl.constexpr,
                      BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-1.0)
    both = mask & (x > 0)  # the view combined again
    y = tl.where(both, x * 2.0, -x)
    tl.store(y_ptr + offs, y, mask=mask)
    tl.store(m_ptr + offs, (~mask).to(tl.int8) + 2 * both.to(tl.int8), mask=mask | True)
    tl.store(s_ptr + tl.program_id(0), tl.sum(mask.to(tl.int32), axis=1).sum())


@pytest.mark.parametrize("executor", ["lockstep", "sequential"])
@pytest.mark.parametrize("M,N", [(128, 64), (100, 64), (128, 40), (0, 64)])
def test_outer_masks_match_numpy(executor, M, N):
    BM, BN, rows = 32, 64, 128
    rng = np.random.default_rng(M * 1000 + N)
    x = rng.standard_normal((rows, BN)).astype(np.float32)
    y = np.full((rows, BN), 7.0, np.float32)
    m = np.full((rows, BN), 9, np.int8)
    s = np.zeros(rows // BM, np.int32)
    outer_mask_kernel[(rows // BM,)](x, y, m, s, M, N, BN, BM=BM, BN=BN,
                                     minitriton_settings=Settings(executor=executor))
    mask = (np.arange(rows)[:, None] < M) & (np.arange(BN)[None, :] < N)
    xs = np.where(mask, x, -1.0)
    both = mask & (xs > 0)
    np.testing.assert_array_equal(y, np.where(mask, np.where(both, xs * 2, -xs), 7.0))
    np.testing.assert_array_equal(m, (~mask).astype(np.int8) + 2 * both.astype(np.int8))
    np.testing.assert_array_equal(s, mask.reshape(rows // BM, -1).sum(axis=1))


@triton.jit
def relu_kernel(x_ptr, y_ptr, z_ptr, w_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0))
    tl.store(z_ptr + offs, tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL))
    tl.store(w_ptr + offs, tl.maximum(x, -0.0))  # not the fast path: -0.0 loses to +0.0


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, "bfloat16"])
def test_relu_matches_the_zeros_rule(dtype):
    import ml_dtypes
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    vals = np.array([-0.0, 0.0, -1.5, 2.25, np.nan, -np.nan, np.inf, -np.inf, 1e-30, -1e-30,
                     3.0, -7.0, 0.5, -0.0, 0.0, 65504.0], np.float64).astype(np_dtype)
    y, z, w = (np.full(16, 9, np_dtype) for _ in range(3))
    relu_kernel[(1,)](vals, y, z, w, N=16)
    f = vals.astype(np.float64)
    # the GPU's max.f32: the non-NaN operand (or NaN with ALL), and +0.0 over -0.0
    want = np.where(np.isnan(f), 0.0, np.where(f > 0, f, 0.0))
    want_all = np.where(np.isnan(f), np.nan, np.where(f > 0, f, 0.0))
    for got, ref in ((y, want), (z, want_all), (w, want)):
        got = got.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        ok = ~np.isnan(ref)
        np.testing.assert_array_equal(got[ok], ref[ok])
        assert not np.signbit(got[ok & (ref == 0)]).any()  # +0.0, never -0.0


@pytest.mark.parametrize("a", [np.arange(5, 5000), np.arange(64).reshape(2, 32).T.reshape(-1),
                               np.concatenate([np.arange(100), np.arange(101, 201)]),
                               np.concatenate([np.arange(0, 30), [29], np.arange(31, 40)]),
                               (np.arange(256)[:, None] * 64 + np.arange(64)).reshape(-1),
                               np.arange(40)[::-1].copy()])
def test_consecutive_tests_agree_with_their_definition(a):
    a = a.astype(np.int64)
    truth = bool(a.size > 1 and np.all(np.diff(a) == 1))
    assert _ascending(a) == (truth or a.size < 2)
    assert _consecutive(a) == (truth and a.size > 16)
    assert isinstance(_as_slice(a), slice) == (truth and a.size > 16)


@triton.jit
def masked_rows_kernel(x_ptr, y_ptr, stride, lo, hi, BLOCK: tl.constexpr, STORE: tl.constexpr):
    """Row `program_id` of x: the lanes lo <= col < hi read (others -2.0), the row doubled and
    stored at the same lanes of y (STORE)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = (cols >= lo) & (cols < hi)
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-2.0)
    tl.store(y_ptr + row * BLOCK + cols, x * 2.0)
    if STORE:
        tl.store(x_ptr + row * stride + cols, x + 1.0, mask=mask)


@triton.jit
def masked_tile_kernel(x_ptr, y_ptr, n_cols, BM: tl.constexpr, BN: tl.constexpr):
    """A 2-D tile per program whose column mask is the same in every program (offsets per
    program: the general path)."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = cols[None, :] < n_cols
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.5)
    tl.store(y_ptr + rows[:, None] * BN + cols[None, :], x)
    tl.store(x_ptr + rows[:, None] * n_cols + cols[None, :], -x, mask=mask)


@pytest.mark.parametrize("executor", ["lockstep", "sequential"])
@pytest.mark.parametrize("stride,lo,hi,store", [
    (100, 0, 77, True),      # the softmax shape: a prefix of each row, rows apart
    (100, 5, 60, True),      # consecutive lanes inside the row
    (40, 0, 77, False),      # rows that overlap in memory (a load may; a store goes lane by lane)
    (40, 0, 77, True),
    (0, 0, 50, False),       # every program the same row
    (100, 0, 0, True),       # no lane active
    (100, 0, 1, True),       # one lane
])
def test_masked_rows_match_numpy(executor, stride, lo, hi, store):
    rows, block = 6, 128
    rng = np.random.default_rng(stride + lo + hi)
    x = rng.standard_normal(rows * max(stride, 1) + block).astype(np.float32)
    y = np.zeros((rows, block), np.float32)
    want_x, want_y = x.copy(), y.copy()
    for r in range(rows):  # the programs in order, as the sequential executor runs them; in
        base = r * stride  # lockstep every program loads before any stores (overlapping rows)
        src = x if executor == "lockstep" else want_x
        row = np.where((np.arange(block) >= lo) & (np.arange(block) < hi),
                       src[base:base + block], -2.0)
        want_y[r] = row * 2
        if store:
            want_x[base + lo:base + hi] = row[lo:hi] + 1
    masked_rows_kernel[(rows,)](x, y, stride, lo, hi, BLOCK=block, STORE=store,
                                minitriton_settings=Settings(executor=executor))
    np.testing.assert_array_equal(y, want_y)
    if store and stride >= hi - lo:
        np.testing.assert_array_equal(x, want_x)


@pytest.mark.parametrize("n_cols", [24, 32, 1])
def test_masked_tiles_match_numpy(n_cols):
    BM, BN, programs = 8, 32, 4
    x = np.arange(programs * BM * n_cols, dtype=np.float32)
    y = np.zeros((programs * BM, BN), np.float32)
    want = np.full((programs * BM, BN), 0.5, np.float32)
    want[:, :n_cols] = x.reshape(-1, n_cols)
    masked_tile_kernel[(programs,)](x, y, n_cols, BM=BM, BN=BN)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(x, -np.arange(programs * BM * n_cols, dtype=np.float32))


def test_masked_rows_out_of_bounds_still_reported():
    x = np.zeros(300, np.float32)
    y = np.zeros((4, 128), np.float32)
    with pytest.raises(Exception, match="out of bounds"):
        masked_rows_kernel[(4,)](x, y, 100, 0, 128, BLOCK=128, STORE=False)
