"""The memory model on NumPy arrays: views and strides, dtypes, bounds checks that touch nothing
(torch tensors: test_torch_interop.py)."""
import ml_dtypes
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
import references as ref
from corpus import load
from minitriton import OutOfBoundsError, Settings
from minitriton.errors import OutsideViewWarning

pytestmark = pytest.mark.usefixtures("executor")  # every test runs kernels
corpus = load(triton, tl)


def copy2d(x, y):
    M, N = x.shape
    corpus.copy2d_kernel[(triton.cdiv(M, 16),)](x, y, M, N, *ref.strides(x), *ref.strides(y),
                                                BM=16, BN=64)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int8,
                                   np.int64, np.bool_, np.uint8, np.float64])
def test_every_dtype_round_trips(dtype):
    x = ref.rand((20, 50), scale=50, dtype=np.float64).astype(dtype)
    y = np.zeros_like(x)
    copy2d(x, y)
    np.testing.assert_array_equal(x, y)


def test_views_transposes_and_offsets():
    base = ref.rand((40, 70))
    x = base[5:25, 3:53]  # an offset into the buffer and row stride 70
    y_base = np.zeros((60, 30), np.float32)
    y = y_base[4:54, 2:22].T  # transposed view into a bigger buffer
    assert y.shape == x.shape and ref.strides(y) == (1, 30)
    copy2d(x, y)
    np.testing.assert_array_equal(y, x)
    assert np.count_nonzero(y_base) == np.count_nonzero(x)  # nothing else written


@triton.jit
def oob_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, MASK_LOAD: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MASK_LOAD:
        x = tl.load(x_ptr + offs, mask=offs < n)
    else:
        x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x + 1)


def test_out_of_bounds_load_raises_and_writes_nothing():
    x, y = ref.rand(1000), np.zeros(1000, np.float32)
    with pytest.raises(OutOfBoundsError) as e:
        oob_kernel[(4,)](x, y, 1000, BLOCK=256, MASK_LOAD=False)
    msg = str(e.value)
    assert "program (3, 0, 0)" in msg and "`x_ptr`" in msg and "[1000, 1001" in msg
    assert "[0, 999]" in msg and "mask" in msg and "oob_kernel" in msg
    assert np.count_nonzero(y) == 0  # programs 0-2 stored, and were undone


def test_out_of_bounds_store_raises_and_writes_nothing():
    x, y = ref.rand(1000), np.zeros(1000, np.float32)
    with pytest.raises(OutOfBoundsError, match="store out of bounds on argument `y_ptr`"):
        oob_kernel[(4,)](x, y, 1000, BLOCK=256, MASK_LOAD=True)
    assert np.count_nonzero(y) == 0


@triton.jit
def negative_kernel(x_ptr, y_ptr):
    tl.store(y_ptr, tl.load(x_ptr - 1))


@triton.jit
def store_one_kernel(y_ptr):
    tl.store(y_ptr, 1.0)


def test_negative_offsets_are_bounded_by_the_storage_and_the_view_warns():
    # issue 21: a GPU may read the storage before a view (tests/minitriton/test_storage_bounds.py)
    base = np.arange(10, dtype=np.float32)
    with pytest.raises(OutOfBoundsError, match="offsets \\[-1\\]"):
        negative_kernel[(1,)](base, np.zeros(1, np.float32))
    y = np.zeros(1, np.float32)
    with pytest.warns(OutsideViewWarning, match="offsets \\[-1\\]"):
        negative_kernel[(1,)](base[3:], y)
    assert y[0] == 2.0
    with pytest.raises(OutOfBoundsError, match="offsets \\[-1\\]"):
        negative_kernel[(1,)](base[3:], y, minitriton_settings=Settings(view_bounds=True))
    with pytest.raises(OutOfBoundsError, match="empty"):
        store_one_kernel[(1,)](np.zeros(0, np.float32))


@triton.jit
def scalar_kernel(x_ptr, out_ptr, alpha, flag, k):
    v = tl.load(x_ptr)
    if flag:
        v = v * alpha + k
    tl.store(out_ptr, v)


def test_scalar_arguments():
    x, out = np.array([2.0], np.float32), np.zeros(1, np.float32)
    scalar_kernel[(1,)](x, out, 1.5, True, 3)
    assert out.tolist() == [6.0]
    scalar_kernel[(1,)](x, out, 1.5, False, 3)
    assert out.tolist() == [2.0]
