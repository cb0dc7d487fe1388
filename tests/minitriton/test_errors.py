"""The common mistakes give Triton's errors, at the kernel line that made them. The corpus's
rejected kernels (corpus/kernels.py, `bad_*`) are the ones real Triton rejects too."""
import inspect
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from corpus import arrays, expected_error, load, make_rng, names
from minitriton import CompilationError, DeviceAssertionError, LaunchError

corpus = load(triton, tl)

# Triton's words (minitriton adds the fix): each rejected corpus case must have its message here
MESSAGES = {
    "bad_arange_not_power_of_two": "power of 2",
    "bad_arange_runtime_bound": "must be of type tl.constexpr",
    "bad_incompatible_shapes": "incompatible dimensions at index 0: 16 and 32",
    "bad_exp_fp16": r"Expected dtype \['fp32', 'fp64'\] but got fp16",
    "bad_dot_k_under_16": "K >= 16",
    "bad_block_as_bool": "Boolean value of Tensor with more than one value",
    "bad_launch_missing_constexpr": "missing a required argument: 'BLOCK'",
    "bad_launch_too_many_arguments": "too many positional arguments",
    "bad_zeros_not_power_of_two": "must be a power of 2",
    "bad_descriptor_store_shape": r"expected value shape \[16, 32\], got \[16, 16\]",
}


@pytest.mark.parametrize("name", names("bad_"))
def test_rejected_corpus_kernels(name):
    with pytest.raises(expected_error(triton, name), match=MESSAGES[name]):
        getattr(corpus, name)(arrays(), make_rng())


def _where(kernel, text):
    """file:line of the kernel's source line holding `text`."""
    src, first = inspect.getsourcelines(kernel.fn)
    line = first + next(i for i, s in enumerate(src) if text in s)
    return f"{Path(inspect.getsourcefile(kernel.fn)).name}:{line}"


def test_compile_error_names_the_kernel_and_line():
    with pytest.raises(CompilationError, match="power of 2") as e:
        corpus.arange3_kernel[(1,)](np.empty(4, np.float32))
    assert _where(corpus.arange3_kernel, "tl.arange(0, 3)") in str(e.value)
    assert "arange3_kernel" in str(e.value)


def test_exp_on_bf16():
    with pytest.raises(CompilationError, match=r"Expected dtype \['fp32', 'fp64'\] but got bf16"):
        corpus.exp_half_kernel[(1,)](np.ones(16, ml_dtypes.bfloat16))


def test_tensor_for_a_constexpr():
    x = np.ones(16, np.float32)
    with pytest.raises(LaunchError, match="annotated tl.constexpr but got a tensor"):
        corpus.add_kernel[(1,)](x, x, x, 16, x)


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


@pytest.mark.usefixtures("executor")  # a runtime failure: each executor must name the program
def test_device_assert_names_the_program():
    x = np.zeros(300, np.float32)
    x[290] = -1
    with pytest.raises(DeviceAssertionError, match="x must be non-negative") as e:
        assert_kernel[(3,)](x, 300, BLOCK=128)
    assert "program (2, 0, 0)" in str(e.value)
    assert "lanes [(34,)]" in str(e.value)


@pytest.mark.usefixtures("executor")
def test_python_assert_becomes_device_assert():
    py_assert_kernel[(1,)](np.ones(16, np.float32), BLOCK=16)
    with pytest.raises(DeviceAssertionError):
        py_assert_kernel[(1,)](np.full(16, 10.0, np.float32), BLOCK=16)


def test_static_assert():
    static_kernel[(1,)](np.empty(32, np.float32), BLOCK=32)
    with pytest.raises(CompilationError, match="BLOCK too small"):
        static_kernel[(1,)](np.empty(32, np.float32), BLOCK=16)


def test_calling_a_kernel_directly_and_bad_grids():
    x = np.empty(32, np.float32)
    with pytest.raises(LaunchError, match="outside of the scope of a kernel"):
        static_kernel(x, 32)
    with pytest.raises(LaunchError, match="grid"):
        static_kernel[(1, 1, 1, 1)](x, BLOCK=32)
    with pytest.raises(LaunchError, match="unsupported type"):
        static_kernel[(1,)]([1.0, 2.0], BLOCK=32)


def test_read_only_numpy_array_cannot_be_stored_to():
    x = np.zeros(32, np.float32)
    x.flags.writeable = False
    with pytest.raises(LaunchError, match="read-only"):
        static_kernel[(1,)](x, BLOCK=32)
