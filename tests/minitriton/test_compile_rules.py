"""Triton's compile rules (runtime/rules.py, runtime/jit.py): for the names a kernel uses, the
syntax it accepts and the types of loop-carried variables, what Triton 3.6 rejects when it
compiles a kernel minitriton rejects at the first launch, with Triton's words and the fix;
Settings(strict_globals=False) runs such kernels as Triton's interpreter does."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl

GROUP = 8
GROUP_C = tl.constexpr(8)
DTYPE = tl.float32


def helper(x):
    return x * 2


@triton.jit
def jit_helper(x):
    return x * 2


@triton.jit
def reads_global(x_ptr):
    tl.store(x_ptr, GROUP)


@triton.jit
def reads_constexpr_global(x_ptr):
    tl.store(x_ptr, tl.full((), GROUP_C, DTYPE))


@triton.jit
def calls_plain_function(x_ptr):
    tl.store(x_ptr, helper(tl.load(x_ptr)))


@triton.jit
def calls_jit_function(x_ptr, BLOCK: tl.constexpr = GROUP):
    offs = tl.arange(0, BLOCK)  # a global as a parameter default is allowed
    tl.store(x_ptr + offs, jit_helper(tl.load(x_ptr + offs)) + triton.cdiv(BLOCK, 4))


@triton.jit
def calls_unknown_builtin(x_ptr):
    tl.store(x_ptr, abs(tl.load(x_ptr)))


@triton.jit
def nested_bad(x_ptr):
    calls_into_bad(x_ptr)


@triton.jit
def calls_into_bad(x_ptr):
    tl.store(x_ptr, GROUP)


def _closure_kernel():
    scale = 3

    @triton.jit
    def reads_closure(x_ptr):
        tl.store(x_ptr, scale)
    return reads_closure


def test_non_constexpr_global_is_rejected_with_triton_words_and_the_fix():
    with pytest.raises(triton.CompilationError) as info:
        reads_global[(1,)](np.zeros(1, np.float32))
    msg = str(info.value)
    assert "Cannot access global variable GROUP from within @jit'ed function" in msg
    assert "`GROUP = tl.constexpr(8)`" in msg and "`GROUP: tl.constexpr`" in msg
    assert "reads_global" in msg and "tl.store(x_ptr, GROUP)" in msg


def test_constexpr_globals_dtypes_jit_functions_and_defaults_are_allowed():
    x = np.zeros(1, np.float32)
    reads_constexpr_global[(1,)](x)
    assert x[0] == 8
    y = np.ones(8, np.float32)
    calls_jit_function[(1,)](y)
    assert (y == 4).all()


def test_plain_python_function_is_rejected():
    with pytest.raises(triton.CompilationError, match="Unsupported function referenced: "
                                                      "<function helper"):
        calls_plain_function[(1,)](np.zeros(1, np.float32))


def test_python_builtin_triton_does_not_know_is_not_defined():
    with pytest.raises(triton.CompilationError, match="abs is not defined(.|\n)*tl.abs"):
        calls_unknown_builtin[(1,)](np.zeros(1, np.float32))


def test_closure_variables_count_as_globals():
    with pytest.raises(triton.CompilationError, match="Cannot access global variable scale"):
        _closure_kernel()[(1,)](np.zeros(1, np.float32))


def test_nested_jit_function_is_checked_with_its_caller():
    with pytest.raises(triton.CompilationError, match="in kernel `calls_into_bad`"):
        nested_bad[(1,)](np.zeros(1, np.float32))


def test_lenient_setting_runs_them_as_the_interpreter_does():
    lenient = triton.Settings(strict_globals=False)
    x = np.ones(1, np.float32)
    reads_global[(1,)](x, minitriton_settings=lenient)
    calls_plain_function[(1,)](x, minitriton_settings=lenient)
    assert x[0] == 16
    with triton.configure(strict_globals=False):
        nested_bad[(1,)](x)


def test_env_var_relaxes_the_rules():
    assert triton.Settings.from_env({"MINITRITON_STRICT_GLOBALS": "0"}).strict_globals is False
    assert triton.Settings.from_env({}).strict_globals is True


@triton.jit
def loop_changes_type(x_ptr, out_ptr, N: tl.constexpr):
    acc = 0
    for i in range(N):
        acc += tl.load(x_ptr + i)  # int32 + fp32: the loop-carried acc becomes fp32
    tl.store(out_ptr, acc)


@triton.jit
def while_changes_shape(x_ptr, out_ptr, n):
    acc = tl.zeros([4], tl.float32)
    i = 0
    while i < n:
        acc = tl.sum(acc[:, None] + tl.zeros([4, 4], tl.float32), axis=0)[None, :]
        i += 1
    tl.store(out_ptr + tl.arange(0, 4)[None, :], acc)


@triton.jit
def loop_keeps_types(x_ptr, out_ptr, N: tl.constexpr):
    acc = tl.zeros([N], tl.float32)
    for i in range(3):
        acc += tl.load(x_ptr + tl.arange(0, N))
    for j in tl.static_range(2):  # unrolled by Triton: a variable may change type here
        acc = acc.to(tl.float16)
    tl.store(out_ptr + tl.arange(0, N), acc)


@triton.jit
def breaks(x_ptr, out_ptr, n):
    acc = 0.0
    for i in range(n):
        if i > 2:
            break
        acc += tl.load(x_ptr + i)
    tl.store(out_ptr, acc)


@triton.jit
def scans_with_lambda(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr + tl.arange(0, N), tl.associative_scan(x, 0, lambda a, b: a + b))


@pytest.mark.parametrize("kernel, args, words", [
    (loop_changes_type, (4,), "Loop-carried variable acc has initial type int32 but is "
                              "re-assigned to fp32 in loop"),
    (while_changes_shape, (2,), "Loop-carried variable acc has initial type <[4], fp32> but is "
                                "re-assigned to <[1, 4], fp32>"),
    (breaks, (8,), "unsupported AST node type: Break"),
    (scans_with_lambda, (8,), "unsupported AST node type: Lambda"),
])
def test_what_the_gpu_compiler_rejects_is_rejected(kernel, args, words):
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(triton.CompilationError, match=words.replace("[", r"\[")):
        kernel[(1,)](x, np.zeros(8, np.float32), *args)


def test_loops_that_keep_their_types_run():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    loop_keeps_types[(1,)](x, out, 8)
    np.testing.assert_array_equal(out, 3 * x)


@triton.jit
def scalar_as_block(out_ptr, c, N: tl.constexpr):
    row = (c > 0)[:, None]  # a scalar indexed as a block
    tl.store(out_ptr + tl.arange(0, N)[None, :], tl.arange(0, N)[None, :] + row)


def test_a_scalar_indexed_as_a_block_follows_the_emulated_release(monkeypatch):
    out = np.zeros(4, np.int32)
    scalar_as_block[(1,)](out, 3, 4)  # Triton 3.6 (the default): a block of shape [1]
    np.testing.assert_array_equal(out, [1, 2, 3, 4])
    monkeypatch.setenv("MINITRITON_TRITON_VERSION", "3.9.0")
    with pytest.raises(triton.CompilationError, match="too many indices for tensor of rank 0"):
        scalar_as_block[(1,)](out, 3, 4)


def test_a_const_pointer_argument_reads_and_refuses_stores_and_atomics():
    @triton.jit
    def copy(src: tl.const, dst, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)

    @triton.jit
    def write_back(src: tl.const, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(src + offs, tl.load(src + offs) + 1.0)

    @triton.jit
    def bump(src: tl.const):
        tl.atomic_add(src, 1.0)

    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    copy[(1,)](x, y, 8, BLOCK=8)
    np.testing.assert_array_equal(y, x)
    for kernel, args in ((write_back, (x,)), (bump, (x,))):
        with pytest.raises(triton.CompilationError, match="Cannot store to a constant pointer"):
            kernel[(1,)](*args, **({"BLOCK": 8} if kernel is write_back else {}))
    np.testing.assert_array_equal(x, np.arange(8))
    assert tl.pointer_type(tl.float32, const=True) != tl.pointer_type(tl.float32)


@triton.jit
def loop_variables_are_tensors(out_ptr, n, N: tl.constexpr):
    # Triton's induction variable is a scalar tensor whatever the bounds: int32, int64 where a
    # bound is; .to() and .dtype work on it
    for i in range(N):
        tl.static_assert(i.dtype == tl.int32)
        tl.store(out_ptr + i, i.to(tl.int64) * 10)
    for j in tl.range(tl.program_id(0), n, 2, num_stages=3):
        tl.static_assert(j.dtype == tl.int32)
        tl.store(out_ptr + N + j, j.to(tl.int64) + 100)
    for k in range(0, n.to(tl.int64)):
        tl.static_assert(k.dtype == tl.int64)
    for u in range(2**31, 2**31 + 1):  # a bound past int32: uint32, as Triton types it
        tl.static_assert(u.dtype == tl.uint32)
    for w in range(tl.program_id(0), 2**31 + 2, 2**30):  # the per-program path promotes too
        tl.static_assert(w.dtype == tl.uint32)


def test_loop_variables_are_tensors_as_on_the_gpu():
    out = np.zeros(10, np.int64)
    loop_variables_are_tensors[(1,)](out, 6, 4)
    np.testing.assert_array_equal(out, [0, 10, 20, 30, 100, 0, 102, 0, 104, 0])
