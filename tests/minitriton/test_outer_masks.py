"""`&` of a row mask and a column mask that are both all true is kept as a read-only view of one
True (language/arith.py, `_outer_all_true`): every use of such a mask must give what the
materialised block gives (NumPy is the reference), on both executors."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import Settings


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
