"""The common mistakes give Triton's errors, at the kernel line that made them."""
import numpy as np
import pytest
import torch

import minitriton as triton
import minitriton.language as tl
from minitriton import CompilationError, DeviceAssertionError, LaunchError


@triton.jit
def arange_kernel(x_ptr, n, END: tl.constexpr):
    offs = tl.arange(0, END)
    tl.store(x_ptr + offs, 1.0)


@triton.jit
def runtime_arange_kernel(x_ptr, n):
    offs = tl.arange(0, n)
    tl.store(x_ptr + offs, 1.0)


@triton.jit
def shape_kernel(x_ptr):
    tl.store(x_ptr + tl.arange(0, 16), (tl.arange(0, 16) + tl.arange(0, 32)).to(tl.float32))


@triton.jit
def exp_kernel(x_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(x_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


@triton.jit
def dot_kernel(a_ptr, M: tl.constexpr, K: tl.constexpr):
    m = tl.arange(0, M)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    tl.store(a_ptr + m[:, None] * K + k[None, :], tl.dot(a, tl.trans(a)).to(tl.float16))


@triton.jit
def bool_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    if x > 0:
        tl.store(x_ptr, 1.0)


@triton.jit
def assert_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_assert(x >= 0, "x must be non-negative")


@triton.jit
def py_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    assert x.dtype == tl.float32, "wants fp32"
    assert tl.sum(x, axis=0) < 100.0


@triton.jit
def static_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 32, "BLOCK too small")
    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)


def _lineno(kernel, text):
    src, first = __import__("inspect").getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(src) if text in line)


def test_arange_not_power_of_two_names_the_line():
    with pytest.raises(CompilationError, match="power of 2") as e:
        arange_kernel[(1,)](torch.empty(16), 16, END=12)
    assert f"test_errors.py:{_lineno(arange_kernel, 'tl.arange(0, END)')}" in str(e.value)
    assert "arange_kernel" in str(e.value)


def test_arange_runtime_bound():
    with pytest.raises(CompilationError, match="must be of type tl.constexpr"):
        runtime_arange_kernel[(1,)](torch.empty(16), 16)


def test_incompatible_shapes():
    with pytest.raises(CompilationError, match="incompatible dimensions at index 0: 16 and 32"):
        shape_kernel[(1,)](torch.empty(32))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_exp_on_half_types(dtype):
    with pytest.raises(CompilationError, match=r"Expected dtype \['fp32', 'fp64'\] but got"):
        exp_kernel[(1,)](torch.ones(16, dtype=dtype), N=16)


def test_dot_k_under_16():
    with pytest.raises(CompilationError, match="K >= 16"):
        dot_kernel[(1,)](torch.ones(32 * 8, dtype=torch.float16), M=32, K=8)
    dot_kernel[(1,)](torch.ones(16 * 16, dtype=torch.float16), M=16, K=16)  # accepted


def test_block_tensor_as_bool():
    with pytest.raises(CompilationError, match="Boolean value of Tensor with more than one value"):
        bool_kernel[(1,)](torch.ones(16))


def test_missing_constexpr_and_wrong_argument_count():
    with pytest.raises(LaunchError, match="missing a required argument: 'END'"):
        arange_kernel[(1,)](torch.empty(16), 16)
    with pytest.raises(LaunchError, match="too many positional arguments"):
        arange_kernel[(1,)](torch.empty(16), 16, 16, 16)
    with pytest.raises(LaunchError, match="annotated tl.constexpr but got a tensor"):
        arange_kernel[(1,)](torch.empty(16), 16, torch.empty(1))


def test_device_assert_names_the_program():
    x = torch.zeros(300)
    x[290] = -1
    with pytest.raises(DeviceAssertionError, match="x must be non-negative") as e:
        assert_kernel[(3,)](x, 300, BLOCK=128)
    assert "program (2, 0, 0)" in str(e.value)
    assert "lanes [(34,)]" in str(e.value)


def test_python_assert_becomes_device_assert():
    py_assert_kernel[(1,)](torch.ones(16), BLOCK=16)
    with pytest.raises(DeviceAssertionError):
        py_assert_kernel[(1,)](torch.full((16,), 10.0), BLOCK=16)


def test_static_assert():
    static_kernel[(1,)](torch.empty(32), BLOCK=32)
    with pytest.raises(CompilationError, match="BLOCK too small"):
        static_kernel[(1,)](torch.empty(32), BLOCK=16)


def test_calling_a_kernel_directly_and_bad_grids():
    with pytest.raises(LaunchError, match="outside of the scope of a kernel"):
        static_kernel(torch.empty(32), 32)
    with pytest.raises(LaunchError, match="grid"):
        static_kernel[(1, 1, 1, 1)](torch.empty(32), BLOCK=32)
    with pytest.raises(LaunchError, match="unsupported type"):
        static_kernel[(1,)]([1.0, 2.0], BLOCK=32)


def test_cuda_tensor_on_the_simulator():
    meta = torch.empty(32, device="meta")
    with pytest.raises(LaunchError, match="minitriton runs kernels on the CPU"):
        static_kernel[(1,)](meta, BLOCK=32)


def test_read_only_numpy_array_cannot_be_stored_to():
    x = np.zeros(32, np.float32)
    x.flags.writeable = False
    with pytest.raises(LaunchError, match="read-only"):
        static_kernel[(1,)](x, BLOCK=32)
