"""What Triton's own test suite and libraries read from `triton` besides kernels: the error
hierarchy, type names and strings, the test helpers (`triton._internal_testing`), the driver,
and an installation that lasts."""
import importlib.util
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


@minitriton.jit
def _bitwise_floats(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr + tl.arange(0, N), x & x)


def test_bitwise_ops_on_floats_say_invalid_operands():
    x = np.ones(4, np.float32)
    with pytest.raises(minitriton.TritonError, match="invalid operands of type"):
        _bitwise_floats[(1,)](x, np.zeros_like(x), 4)


@minitriton.jit
def _int1_arith(x_ptr, y_ptr, sum_ptr, diff_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    tl.store(sum_ptr + offs, x + y)
    tl.store(diff_ptr + offs, x - y)


def test_int1_plus_and_minus_wrap_mod_2():
    x = np.array([False, False, True, True])
    y = np.array([False, True, False, True])
    s, d = np.zeros(4, bool), np.zeros(4, bool)
    _int1_arith[(1,)](x, y, s, d, 4)
    expected = np.mod(x.astype(np.int8) + y.astype(np.int8), 2).astype(bool)
    np.testing.assert_array_equal(s, expected)
    np.testing.assert_array_equal(d, expected)  # x - y = x + y mod 2


@minitriton.jit
def _atomic_add_any(o_ptr):
    tl.atomic_add(o_ptr, tl.load(o_ptr))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.uint16])
def test_atomics_on_narrow_integers_are_refused_as_triton_does(dtype):
    with pytest.raises(minitriton.TritonError, match="does not support"):
        _atomic_add_any[(1,)](np.zeros(1, dtype))


@minitriton.jit
def _poll(flag, out, expected, TIMEOUT: tl.constexpr):
    if TIMEOUT:
        seen = tl.atomic_poll(flag, expected, timeout_ns=0)
    else:
        seen = tl.atomic_poll(flag, expected)
    tl.store(out, seen)


@minitriton.jit
def _poll_for_the_other(flag, payload, out):
    if tl.program_id(0) == 0:
        tl.atomic_poll(flag, 1, sem="acquire")
        tl.store(out, tl.load(payload))
    else:
        tl.store(payload, 42)
        tl.atomic_xchg(flag, 1, sem="release")


@pytest.fixture
def triton39(monkeypatch):
    """The emulated release: 3.9 (tl.atomic_poll, tl.squeeze... are newer than 3.6)."""
    monkeypatch.setenv("MINITRITON_TRITON_VERSION", "3.9.0")


def test_names_newer_than_the_emulated_release_are_missing_as_on_its_gpu(monkeypatch):
    monkeypatch.setenv("MINITRITON_TRITON_VERSION", "3.6.0")
    with pytest.raises(AttributeError, match="tl.squeeze is new in Triton 3.8"):
        tl.squeeze
    assert not hasattr(tl, "atomic_poll")
    monkeypatch.setenv("MINITRITON_TRITON_VERSION", "3.9.0")
    assert callable(tl.squeeze) and callable(tl.atomic_poll)


@pytest.mark.usefixtures("triton39")
@pytest.mark.parametrize("executor", ["lockstep", "sequential"])
def test_atomic_poll_waits_for_another_program(executor):
    flag, payload, out = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    with minitriton.configure(executor=executor, races=True):
        _poll_for_the_other[(2,)](flag, payload, out)
    assert out[0] == 42


@pytest.mark.usefixtures("triton39")
@pytest.mark.parametrize("value, timeout, seen", [(1, True, True), (0, True, False),
                                                   (1, False, True)])
def test_atomic_poll_returns_whether_the_value_was_seen(value, timeout, seen):
    flag, out = np.full(1, value, np.int32), np.zeros(1, bool)
    _poll[(1,)](flag, out, 1, timeout)
    assert out[0] == seen


@pytest.mark.usefixtures("triton39")
def test_atomic_poll_that_nobody_satisfies_is_a_deadlock():
    with pytest.raises(minitriton.DeadlockError):
        _poll[(1,)](np.zeros(1, np.int32), np.zeros(1, bool), 1, False)


@minitriton.jit
def _squeezes(out_ptr, DIM: tl.constexpr):
    a = tl.reshape(tl.arange(0, 8), (2, 1, 4))
    b = tl.unsqueeze(tl.squeeze(a, DIM), DIM)
    tl.store(out_ptr + tl.arange(0, 8), tl.ravel(b))


@pytest.mark.usefixtures("triton39")
def test_squeeze_and_unsqueeze():
    out = np.zeros(8, np.int32)
    _squeezes[(1,)](out, 1)
    np.testing.assert_array_equal(out, np.arange(8))
    with pytest.raises(minitriton.TritonError, match="is not 1"):
        _squeezes[(1,)](out, 0)


@minitriton.jit
def _if_on_one_element(x_ptr):
    cond = tl.load(x_ptr + tl.arange(0, 1)) > 42
    if cond:
        tl.store(x_ptr, 42)


@pytest.mark.parametrize("value, after", [(41, 41), (43, 42)])
def test_if_on_a_one_element_block_unsplats_it_with_a_warning(value, after):
    x = np.full(1, value, np.int32)
    with pytest.warns(UserWarning, match="instead of scalar"):
        _if_on_one_element[(1,)](x)
    assert x[0] == after


@minitriton.jit
def _fp8_to_fp32(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.abs(tl.load(x_ptr + offs)).to(tl.float32))


def test_fp8e4b15_is_e4m3_with_bias_15():
    torch = pytest.importorskip("torch")
    bits = torch.arange(-128, 128, dtype=torch.int8)
    out = torch.zeros(256, dtype=torch.float32)
    _fp8_to_fp32[(1,)](minitriton.reinterpret(bits, tl.float8e4b15), out, 256)
    # reference from the bit fields: sign, 4 exponent bits (bias 15), 3 mantissa bits
    b = bits.numpy().view(np.uint8).astype(np.int64)
    exp, frac = (b >> 3) & 0xF, b & 0x7
    ref = np.where(exp == 0, 2.0 ** -14 * frac / 8, 2.0 ** (exp - 15) * (1 + frac / 8))
    ref[(b & 0x7F) == 0x7F] = np.nan
    np.testing.assert_array_equal(out.numpy(), np.abs(ref).astype(np.float32))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit's own, on import
def test_torch_compile_runs_with_minitriton_as_triton():
    """torch's inductor imports triton's names when `import triton` works
    (torch/_inductor/runtime/triton_compat.py: triton.compiler.CompiledKernel,
    runtime.cache.triton_key, language.core.view...); it compiles for the CPU as before."""
    torch = pytest.importorskip("torch")
    with minitriton.install_as_triton():
        fn = torch.compile(lambda x: torch.sin(x) * 2 + 1)
        x = torch.linspace(-3, 3, 17)
        torch.testing.assert_close(fn(x), torch.sin(x) * 2 + 1)


@minitriton.jit
def _negate(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, -tl.load(x_ptr + offs))


@pytest.mark.parametrize("release, signs", [("3.6.0", [False, False]), ("3.9.0", [True, False])])
def test_negation_of_zero_follows_the_release(monkeypatch, release, signs):
    """Triton 3.6 computes -x as 0 - x (-0.0 and 0.0 both give +0.0); 3.7 on flips the sign."""
    monkeypatch.setenv("MINITRITON_TRITON_VERSION", release)
    x, y = np.array([0.0, -0.0], np.float32), np.zeros(2, np.float32)
    _negate[(1,)](x, y, 2)
    assert np.signbit(y).tolist() == signs


@minitriton.jit
def _cat_rows(x_ptr, y_ptr, z_ptr, DIM: tl.constexpr, REORDER: tl.constexpr):
    rows, cols = tl.arange(0, 4)[:, None], tl.arange(0, 8)[None, :]
    x, y = tl.load(x_ptr + rows * 8 + cols), tl.load(y_ptr + rows * 8 + cols)
    z = tl.cat(x, y, can_reorder=REORDER, dim=DIM)
    if DIM == 0:
        tl.store(z_ptr + tl.arange(0, 8)[:, None] * 8 + cols, z)
    else:
        tl.store(z_ptr + rows * 16 + tl.arange(0, 16)[None, :], z)


@pytest.mark.parametrize("dim", [0, 1])
def test_cat_of_blocks_along_a_dim_from_triton_38(monkeypatch, dim):
    x, y = np.arange(32, dtype=np.int32).reshape(4, 8), -np.arange(32, dtype=np.int32).reshape(4, 8)
    z = np.zeros(64, np.int32)
    monkeypatch.setenv("MINITRITON_TRITON_VERSION", "3.6.0")
    with pytest.raises(minitriton.CompilationError, match="1-D blocks only"):
        _cat_rows[(1,)](x, y, z, dim, True)
    monkeypatch.setenv("MINITRITON_TRITON_VERSION", "3.9.0")
    _cat_rows[(1,)](x, y, z, dim, False)
    np.testing.assert_array_equal(z, np.concatenate([x, y], axis=dim).ravel())


@minitriton.jit
def _dot_k4(a_ptr, b_ptr, c_ptr):
    i, k = tl.arange(0, 16), tl.arange(0, 4)
    a = tl.load(a_ptr + i[:, None] * 4 + k[None, :])
    b = tl.load(b_ptr + k[:, None] * 16 + i[None, :])
    tl.store(c_ptr + i[:, None] * 16 + i[None, :], tl.dot(a, b, input_precision="ieee"))


def test_fp64_dot_with_k_4_from_triton_38(monkeypatch):
    a, b = np.arange(64, dtype=np.float64).reshape(16, 4), np.ones((4, 16))
    c = np.zeros(256)
    monkeypatch.setenv("MINITRITON_TRITON_VERSION", "3.6.0")
    with pytest.raises(minitriton.CompilationError, match="K >= 16"):
        _dot_k4[(1,)](a, b, c)
    monkeypatch.setenv("MINITRITON_TRITON_VERSION", "3.9.0")
    _dot_k4[(1,)](a, b, c)
    np.testing.assert_array_equal(c.reshape(16, 16), a @ b)


def test_torch_forgets_that_triton_was_importable_after_uninstall():
    """torch caches `has_triton_package()`; a stale True after uninstall made torch.compile
    import a triton that was gone (dynamo's autograd.Function tracing)."""
    pytest.importorskip("torch")
    from torch.utils import _triton
    real = importlib.util.find_spec("triton") is not None
    with minitriton.install_as_triton():
        assert _triton.has_triton_package()
    assert _triton.has_triton_package() == real
