"""torch CPU tensors as kernel arguments: every dtype, views with storage offsets and strides,
bf16 and descriptors, and the error for a tensor on another device. Skipped without torch
(minitriton does not need it)."""
import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402

import minitriton as triton  # noqa: E402
import minitriton.language as tl  # noqa: E402
from corpus import arrays, load, run_case  # noqa: E402
from minitriton import LaunchError  # noqa: E402

corpus = load(triton, tl)


def copy2d(x, y):
    M, N = x.shape
    corpus.copy2d_kernel[(triton.cdiv(M, 16),)](x, y, M, N, *x.stride(), *y.stride(), BM=16,
                                                BN=64)


@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int8,
                                   torch.int64, torch.bool, torch.uint8, torch.float64])
def test_every_torch_dtype_round_trips(dtype):
    x = (torch.randn(20, 50, generator=torch.Generator().manual_seed(0)) * 50).to(dtype)
    y = torch.zeros_like(x)
    copy2d(x, y)
    assert torch.equal(x, y)


@pytest.mark.usefixtures("executor")
def test_torch_views_transposes_and_storage_offsets():
    base = torch.randn(40, 70, generator=torch.Generator().manual_seed(0))
    x = base[5:25, 3:53]  # storage offset and row stride 70
    y_base = torch.zeros(60, 30)
    y = y_base[4:54, 2:22].t()  # transposed view into a bigger buffer
    assert y.shape == x.shape and y.stride() == (1, 30)
    copy2d(x, y)
    assert torch.equal(y, x)
    assert torch.count_nonzero(y_base).item() == torch.count_nonzero(x).item()  # nothing else


# fp16/bf16/int32 inputs, bool outputs, a column-major view, TMA descriptors over torch tensors
@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("name", ["case_promote", "case_casts", "case_matmul_bf16_transposed",
                                  "case_tensor_descriptor", "case_descriptor_atomics"])
def test_corpus_cases_on_torch_tensors_equal_numpy(name):
    on_torch = run_case(corpus, name, arrays("cpu", backend="torch"))
    on_numpy = run_case(corpus, name, arrays())
    assert on_torch.keys() == on_numpy.keys()
    for key, value in on_numpy.items():
        assert on_torch[key].dtype == value.dtype, key
        np.testing.assert_array_equal(on_torch[key], value)


@triton.jit
def zero_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)


def test_tensor_on_another_device():
    with pytest.raises(LaunchError, match="minitriton runs kernels on the CPU"):
        zero_kernel[(1,)](torch.empty(32, device="meta"), BLOCK=32)
