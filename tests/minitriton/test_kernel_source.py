"""Kernels whose source is a string (exec, compile, generated code) and `_unsafe_update_src`:
minitriton re-compiles kernel source, so it must find the text of a kernel that no file holds,
as Triton's test suite (`patch_kernel`) and code generators make them."""
import numpy as np
import pytest

import minitriton
import minitriton.language as tl

SCALE_SRC = '''
@minitriton.jit
def scale(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * FACTOR)
'''


def _exec(src):
    namespace = {}
    exec(src, {"minitriton": minitriton, "tl": tl}, namespace)
    return next(v for v in namespace.values() if isinstance(v, minitriton.JITFunction))


@pytest.mark.parametrize("factor", ["2", "3.5"])
def test_a_kernel_exec_from_a_string_runs(factor):
    kernel = _exec(SCALE_SRC.replace("FACTOR", factor))
    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[(1,)](x, out, 8)
    np.testing.assert_array_equal(out, x * np.float32(float(factor)))


def test_a_kernel_from_compile_with_a_file_name_shows_its_lines_in_errors():
    src = SCALE_SRC.replace("FACTOR", "2").replace("N: tl.constexpr", "N: tl.constexpr, M")
    src = src.replace("tl.arange(0, N)", "tl.arange(0, M)")  # M is not a constexpr
    namespace = {}
    exec(compile(src, "generated_kernels.py", "exec"), {"minitriton": minitriton, "tl": tl},
         namespace)
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(minitriton.CompilationError) as e:
        namespace["scale"][(1,)](x, np.zeros_like(x), 8, 8)
    assert "offs = tl.arange(0, M)" in str(e.value)  # the line, read from the string


def test_unsafe_update_src_replaces_the_kernel_text():
    kernel = _exec(SCALE_SRC.replace("FACTOR", "2"))
    assert "* 2)" in kernel.src
    kernel._unsafe_update_src(kernel.src.replace("* 2)", "* 10)"))
    x = np.arange(4, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[(1,)](x, out, 4)
    np.testing.assert_array_equal(out, x * 10)


def test_a_kernel_whose_source_is_gone_says_how_to_give_it():
    code = compile(SCALE_SRC.replace("FACTOR", "2"), "<nowhere>", "exec")

    def run_without_the_string():
        namespace = {}
        exec(code, {"minitriton": minitriton, "tl": tl}, namespace)
        return namespace["scale"]

    kernel = run_without_the_string()
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(minitriton.CompilationError, match="_unsafe_update_src"):
        kernel[(1,)](x, np.zeros_like(x), 4)
