"""Python `and`, `or` and `not` inside @jit code, lowered as Triton's code generator lowers them
(visit_BoolOp, visit_UnaryOp): runtime operands become int1 and combine elementwise, every one
evaluated; a constexpr operand still short-circuits; block operands draw Triton's warning."""
import warnings

import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import CompilationError, Settings

WARNING = "Logical operators 'and' and 'or' are deprecated for non-scalar tensors"


def run(kernel, grid, *args, executor="lockstep", **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel[grid](*args, **kwargs, minitriton_settings=Settings(executor=executor))


@triton.jit
def issue_kernel(out, M, N, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    tl.store(out + r * BN + c, (r < M and c < N).to(tl.int32))


def test_issue_example_is_elementwise(executor):
    out = np.full(16, -1, np.int32)
    run(issue_kernel, (1,), out, 2, 3, BM=4, BN=4, executor=executor)
    # the H200's result
    assert out.reshape(4, 4).tolist() == [[1, 1, 1, 0], [1, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]]


def test_block_operands_warn_as_triton_does():
    out = np.zeros(16, np.int32)
    with pytest.warns(UserWarning, match=WARNING) as record:
        issue_kernel[(1,)](out, 2, 3, BM=4, BN=4)
    assert record[0].filename == __file__
    assert record[0].lineno == issue_kernel.fn.__code__.co_firstlineno + 4


@triton.jit
def chain_kernel(x_ptr, out_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    x = tl.load(x_ptr + o)
    both = x > 0 and x < 10 and x != 5  # a chain folds pairwise
    either = x < 0 or x > 10 or x == 5
    tl.store(out_ptr + o, both.to(tl.int32) + 2 * either.to(tl.int32) + 4 * (not x > 0 and
                                                                          x > -5).to(tl.int32))


def test_chains_and_not(executor):
    x = np.array([-7, -2, 0, 3, 5, 9, 10, 12], np.int32)
    out = np.zeros(8, np.int32)
    run(chain_kernel, (1,), x, out, B=8, executor=executor)
    both = (x > 0) & (x < 10) & (x != 5)
    either = (x < 0) | (x > 10) | (x == 5)
    low = ~(x > 0) & (x > -5)
    np.testing.assert_array_equal(out, both + 2 * either + 4 * low)


@triton.jit
def scalar_kernel(x_ptr, y_ptr, out_ptr, hits_ptr):
    pid = tl.program_id(0)
    # no short-circuit on runtime scalars: the load runs in every program, as on the GPU
    if pid % 2 == 0 and tl.atomic_add(hits_ptr, 1) >= 0:
        tl.store(out_ptr + pid, 1)
    if not pid % 2 == 0 or tl.load(y_ptr + pid) > 100:
        tl.store(out_ptr + pid, tl.load(out_ptr + pid) + 10)
    tl.store(x_ptr + pid, (pid > 1 and pid < 4).to(tl.int32))


def test_per_program_scalars_evaluate_every_operand(executor):
    x, out, hits = np.zeros(6, np.int32), np.zeros(6, np.int32), np.zeros(1, np.int32)
    y = np.array([0, 0, 200, 0, 0, 0], np.int32)
    run(scalar_kernel, (6,), x, y, out, hits, executor=executor)
    assert hits.tolist() == [6]  # Python's `and` would have skipped it in programs 1, 3, 5
    assert out.tolist() == [1, 10, 11, 10, 1, 10]
    assert x.tolist() == [0, 0, 1, 1, 0, 0]


@triton.jit
def constexpr_kernel(x_ptr, out_ptr, DEBUG: tl.constexpr, ON: tl.constexpr):
    pid = tl.program_id(0)
    # a constexpr that decides the result short-circuits: the out-of-bounds load never runs
    if DEBUG and tl.load(x_ptr + 1_000_000) > 0:
        tl.store(out_ptr + pid, -1)
    if ON or tl.load(x_ptr + 1_000_000) > 0:
        tl.store(out_ptr + pid, 1)
    # one that does not decide it is dropped: the result is the runtime operand itself
    v = tl.load(x_ptr + pid) and ON
    tl.store(out_ptr + 2 + pid, v)
    w = True and DEBUG  # only constexprs: Python's value
    tl.static_assert(w == DEBUG)


def test_constexpr_operands_short_circuit(executor):
    x, out = np.array([5, 7], np.int32), np.zeros(4, np.int32)
    run(constexpr_kernel, (2,), x, out, DEBUG=False, ON=True, executor=executor)
    assert out.tolist() == [1, 1, 5, 7]  # `x and True` is x, an int32, as in Triton


@triton.jit
def wide_kernel(x_ptr, out_ptr, NOT: tl.constexpr):
    x = tl.load(x_ptr)
    if NOT:
        r = not x
    else:
        r = x and x > 1
    tl.store(out_ptr, r)


@pytest.mark.parametrize("use_not", [False, True])
def test_non_boolean_tensors_are_rejected_as_by_triton(use_not):
    # Triton bitcasts the operands to int1: a 32-bit tensor fails to compile
    x, out = np.array([3], np.int32), np.zeros(1, np.int32)
    with pytest.raises(CompilationError, match="Cannot bitcast data-type of size 32"):
        run(wide_kernel, (1,), x, out, NOT=use_not)


@triton.jit
def lockstep_kernel(x_ptr, out_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    if x > 0 and pid < 3 or not x < 5:  # per-program scalars that differ: programs diverge
        tl.store(out_ptr + pid, 1)
    else:
        tl.store(out_ptr + pid, 2)


def test_diverging_conditions_match_sequential():
    x = np.array([1, -1, 2, 9, 0, -3, 4, 7], np.int32)
    outs = []
    for executor in ("sequential", "lockstep"):
        out = np.zeros(8, np.int32)
        run(lockstep_kernel, (8,), x, out, executor=executor)
        outs.append(out)
    expected = np.where(((x > 0) & (np.arange(8) < 3)) | ~(x < 5), 1, 2)
    np.testing.assert_array_equal(outs[0], expected)
    np.testing.assert_array_equal(outs[1], expected)
