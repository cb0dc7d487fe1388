"""The memory model: views and strides, dtypes, NumPy arrays, bounds checks that touch nothing."""
import ml_dtypes
import numpy as np
import pytest
import torch

import minitriton as triton
import minitriton.language as tl
from minitriton import OutOfBoundsError


@triton.jit
def copy2d_kernel(x_ptr, y_ptr, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.arange(0, BN)
    mask = (m[:, None] < M) & (n[None, :] < N)
    x = tl.load(x_ptr + m[:, None] * sxm + n[None, :] * sxn, mask=mask)
    tl.store(y_ptr + m[:, None] * sym + n[None, :] * syn, x, mask=mask)


def _copy(x, y):
    M, N = x.shape
    copy2d_kernel[(triton.cdiv(M, 16),)](x, y, M, N, x.stride(0), x.stride(1), y.stride(0),
                                         y.stride(1), BM=16, BN=64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int8,
                                   torch.int64, torch.bool, torch.uint8, torch.float64])
def test_every_dtype_round_trips(dtype):
    x = (torch.randn(20, 50) * 50).to(dtype)
    y = torch.zeros_like(x)
    _copy(x, y)
    assert torch.equal(x, y)


def test_views_transposes_and_storage_offsets():
    base = torch.randn(40, 70)
    x = base[5:25, 3:53]  # storage offset and row stride 70
    y_base = torch.zeros(60, 30)
    y = y_base[4:54, 2:22].t()  # transposed view into a bigger buffer
    assert y.shape == x.shape and y.stride() == (1, 30)
    _copy(x, y)
    assert torch.equal(y, x)
    assert torch.count_nonzero(y_base).item() == torch.count_nonzero(x).item()  # nothing else


def test_numpy_arrays_and_bf16_arrays():
    x = np.random.default_rng(0).standard_normal((20, 50)).astype(ml_dtypes.bfloat16)
    y = np.zeros_like(x)
    M, N = x.shape
    copy2d_kernel[(2,)](x, y, M, N, N, 1, N, 1, BM=16, BN=64)
    np.testing.assert_array_equal(x, y)


@triton.jit
def oob_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, MASK_LOAD: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MASK_LOAD:
        x = tl.load(x_ptr + offs, mask=offs < n)
    else:
        x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x + 1)


def test_out_of_bounds_load_raises_and_writes_nothing():
    x, y = torch.randn(1000), torch.zeros(1000)
    with pytest.raises(OutOfBoundsError) as e:
        oob_kernel[(4,)](x, y, 1000, BLOCK=256, MASK_LOAD=False)
    msg = str(e.value)
    assert "program (3, 0, 0)" in msg and "`x_ptr`" in msg and "[1000, 1001" in msg
    assert "[0, 999]" in msg and "mask" in msg and "oob_kernel" in msg
    assert torch.count_nonzero(y).item() == 0  # programs 0-2 stored, and were undone


def test_out_of_bounds_store_raises_and_writes_nothing():
    x, y = torch.randn(1000), torch.zeros(1000)
    with pytest.raises(OutOfBoundsError, match="store out of bounds on argument `y_ptr`"):
        oob_kernel[(4,)](x, y, 1000, BLOCK=256, MASK_LOAD=True)
    assert torch.count_nonzero(y).item() == 0


@triton.jit
def negative_kernel(x_ptr, y_ptr):
    tl.store(y_ptr, tl.load(x_ptr - 1))


@triton.jit
def store_one_kernel(y_ptr):
    tl.store(y_ptr, 1.0)


def test_negative_offsets_and_views_are_bounded_by_the_view():
    base = torch.arange(10.0)
    with pytest.raises(OutOfBoundsError, match="offsets \\[-1\\]"):
        negative_kernel[(1,)](base[3:], torch.zeros(1))
    with pytest.raises(OutOfBoundsError, match="empty"):
        store_one_kernel[(1,)](torch.zeros(0))


@triton.jit
def scalar_kernel(x_ptr, out_ptr, alpha, flag, k):
    v = tl.load(x_ptr)
    if flag:
        v = v * alpha + k
    tl.store(out_ptr, v)


def test_scalar_arguments():
    out = torch.zeros(1)
    scalar_kernel[(1,)](torch.tensor([2.0]), out, 1.5, True, 3)
    assert out.item() == 6.0
    scalar_kernel[(1,)](torch.tensor([2.0]), out, 1.5, False, 3)
    assert out.item() == 2.0
