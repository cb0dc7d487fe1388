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


@triton.jit
def python_error_kernel(x_ptr, CASE: tl.constexpr):
    offs = tl.arange(0, 16)
    if CASE == 0:
        x = tl.load(x_ptr + offs, bogus=1)  # no such keyword
    elif CASE == 1:
        x = tl.load(x_ptr + offs).no_such_method()
    else:
        x = tl.load(x_ptr + offs) + [1, 2][CASE]  # a Python IndexError
    tl.store(x_ptr + offs, x)


@pytest.mark.parametrize("case,kind,text", [
    (0, TypeError, "load() got an unexpected keyword argument 'bogus'"),
    (1, AttributeError, "no_such_method"), (2, IndexError, "list index out of range")])
def test_python_errors_in_a_kernel_line_are_compilation_errors(executor, case, kind, text):
    """A Python error a kernel line raises is Triton's CompilationError at that line (Triton
    compiles every line), and still a `kind`, with the original chained."""
    with pytest.raises(CompilationError) as e:
        python_error_kernel[(2,)](np.zeros(16, np.float32), CASE=case,
                                  minitriton_settings=triton.Settings(executor=executor))
    err = e.value
    assert isinstance(err, kind) and isinstance(err.__cause__, kind)
    assert f"{kind.__name__}: " in str(err) and text in str(err)
    assert "python_error_kernel" in str(err)
    line = {0: "bogus=1", 1: "no_such_method", 2: "[1, 2][CASE]"}[case]
    assert _where(python_error_kernel, line) in str(err)
    # warmup compiles the same way
    with pytest.raises(kind, match="python_error_kernel"):
        python_error_kernel.warmup(np.zeros(16, np.float32), CASE=case, grid=(1,))


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
