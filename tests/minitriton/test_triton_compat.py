"""What Triton's own test suite and libraries read from `triton` besides kernels: the error
hierarchy, type names and strings, the test helpers (`triton._internal_testing`), the driver,
and an installation that lasts."""
import subprocess
import sys

import numpy as np
import pytest

import minitriton
import minitriton.language as tl


@minitriton.jit
def _bad_axis(x_ptr, N: tl.constexpr):
    tl.expand_dims(tl.arange(0, N), 3)


@minitriton.jit
def _bad_call(x_ptr, N: tl.constexpr):
    tl.arange(0, N).reshape(N + 1)


@pytest.mark.parametrize("kernel", [_bad_axis, _bad_call])
def test_kernel_errors_are_triton_errors_with_the_language_error_as_cause(kernel):
    with pytest.raises(minitriton.TritonError) as e:
        kernel[(1,)](np.zeros(4, np.float32), 4)
    assert isinstance(e.value, minitriton.CompilationError)
    assert isinstance(e.value, minitriton.InterpreterError)  # what TRITON_INTERPRET=1 raises
    assert isinstance(e.value.__cause__, Exception)
    assert not isinstance(e.value.__cause__, minitriton.TritonError)
    assert str(e.value.__cause__) and str(e.value.__cause__) in str(e.value)


def test_type_names_and_strings():
    assert tl.dtype("fp32") == tl.float32 and tl.dtype("bf16") == tl.bfloat16
    assert tl.str_to_ty("i32") == tl.int32 and tl.str_to_ty("u8") == tl.uint8
    assert tl.str_to_ty("float16") == tl.float16
    ptr = tl.str_to_ty("*fp16")
    assert ptr.is_ptr() and ptr.element_ty == tl.float16
    assert tl.pi32_t.element_ty == tl.int32
    assert [t.exponent_bias for t in (tl.float8e4nv, tl.float8e4b8, tl.float8e5, tl.float8e5b16,
                                      tl.float16, tl.float32)] == [7, 8, 15, 16, 15, 127]
    assert "fp8e4b15" in tl.dtype.FP_TYPES and "int32" in tl.dtype.SINT_TYPES
    # a constexpr holding a dtype compares as the dtype (static_assert(x.dtype == ...))
    assert tl.float32 == tl.constexpr(tl.float32) and tl.int32 != tl.constexpr(tl.float32)
    with pytest.raises(ValueError, match="unknown dtype name"):
        tl.dtype("fp33")


def test_fp8_variants_round_as_their_formats():
    x = np.array([0.3, 1.7, 300.0], dtype=np.float32)
    assert tl.float8e4b8.np.name == "float8_e4m3fnuz"
    assert tl.float8e5b16.np.name == "float8_e5m2fnuz"
    assert x.astype(tl.float8e4b8.np).astype(np.float32)[1] == np.float32(1.75)


def test_runtime_driver_on_a_plain_import():
    target = minitriton.runtime.driver.active.get_current_target()
    assert (target.backend, target.arch, target.warp_size) == ("cuda", 90, 32)


def test_internal_testing_helpers_answer_for_the_emulated_gpu(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with minitriton.install_as_triton():
        from triton._internal_testing import (is_cuda, is_hip, is_hopper, is_interpreter,
                                              numpy_random, to_numpy, to_triton)
        assert is_cuda() and is_hopper() and not is_hip() and not is_interpreter()
        x = numpy_random((4, 5), "uint16")
        assert x.dtype == np.uint16 and (x != 0).all()
        np.testing.assert_array_equal(to_numpy(to_triton(x, "cpu")), x)
        bf = numpy_random(8, "bfloat16")
        assert (bf.view(np.uint32) & 0xFFFF).max() == 0  # representable in bfloat16
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        assert is_interpreter() and not is_cuda()


def test_install_as_a_statement_lasts_until_uninstall():
    program = ("import gc, minitriton\n"
               "minitriton.install_as_triton()\n"
               "gc.collect()\n"
               "import triton, triton.language as tl\n"
               "print(triton.TritonError is minitriton.TritonError, tl is minitriton.language)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
    assert done.stderr == ""  # nothing raised at interpreter exit


def test_uninstall_puts_back_what_was_there():
    before = {k for k in sys.modules if k.split(".")[0] == "triton"}
    installed = minitriton.install_as_triton(triton_version="3.9.0")
    assert sys.modules["triton"].__version__ == "3.9.0"
    installed.uninstall()
    installed.uninstall()  # a second call does nothing
    assert {k for k in sys.modules if k.split(".")[0] == "triton"} == before
