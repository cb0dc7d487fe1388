"""Python `and`, `or` and `not` inside @jit code, lowered as Triton's code generator lowers them
(visit_BoolOp, visit_UnaryOp): runtime operands become int1 and combine elementwise, every one
evaluated; a constexpr operand still short-circuits; block operands draw Triton's warning."""
import warnings

import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from corpus import SEMANTICS, load
from minitriton import CompilationError, Settings

K = load(triton, tl, SEMANTICS)  # the kernels, shared with the GPU parity test

WARNING = "Logical operators 'and' and 'or' are deprecated for non-scalar tensors"


def run(kernel, grid, *args, executor="lockstep", **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel[grid](*args, **kwargs, minitriton_settings=Settings(executor=executor))



def test_issue_example_is_elementwise(executor):
    out = np.full(16, -1, np.int32)
    run(K.issue_kernel, (1,), out, 2, 3, BM=4, BN=4, executor=executor)
    # the H200's result
    assert out.reshape(4, 4).tolist() == [[1, 1, 1, 0], [1, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]]


def test_block_operands_warn_as_triton_does():
    out = np.zeros(16, np.int32)
    with pytest.warns(UserWarning, match=WARNING) as record:
        K.issue_kernel[(1,)](out, 2, 3, BM=4, BN=4)
    assert record[0].filename == str(SEMANTICS)
    assert record[0].lineno == K.issue_kernel.fn.__code__.co_firstlineno + 4



def test_chains_and_not(executor):
    x = np.array([-7, -2, 0, 3, 5, 9, 10, 12], np.int32)
    out = np.zeros(8, np.int32)
    run(K.chain_kernel, (1,), x, out, B=8, executor=executor)
    both = (x > 0) & (x < 10) & (x != 5)
    either = (x < 0) | (x > 10) | (x == 5)
    low = ~(x > 0) & (x > -5)
    np.testing.assert_array_equal(out, both + 2 * either + 4 * low)



def test_per_program_scalars_evaluate_every_operand(executor):
    x, out, hits = np.zeros(6, np.int32), np.zeros(6, np.int32), np.zeros(1, np.int32)
    y = np.array([0, 0, 200, 0, 0, 0], np.int32)
    run(K.scalar_kernel, (6,), x, y, out, hits, executor=executor)
    assert hits.tolist() == [6]  # Python's `and` would have skipped it in programs 1, 3, 5
    assert out.tolist() == [1, 10, 11, 10, 1, 10]
    assert x.tolist() == [0, 0, 1, 1, 0, 0]



def test_constexpr_operands_short_circuit(executor):
    x, out = np.array([5, 7], np.int32), np.zeros(4, np.int32)
    run(K.constexpr_kernel, (2,), x, out, DEBUG=False, ON=True, executor=executor)
    assert out.tolist() == [1, 1, 5, 7]  # `x and True` is x, an int32, as in Triton



@pytest.mark.parametrize("use_not", [False, True])
def test_non_boolean_tensors_are_rejected_as_by_triton(use_not):
    # Triton bitcasts the operands to int1: a 32-bit tensor fails to compile
    x, out = np.array([3], np.int32), np.zeros(1, np.int32)
    with pytest.raises(CompilationError, match="Cannot bitcast data-type of size 32"):
        run(K.wide_kernel, (1,), x, out, NOT=use_not)



def test_diverging_conditions_match_sequential():
    x = np.array([1, -1, 2, 9, 0, -3, 4, 7], np.int32)
    outs = []
    for executor in ("sequential", "lockstep"):
        out = np.zeros(8, np.int32)
        run(K.lockstep_kernel, (8,), x, out, executor=executor)
        outs.append(out)
    expected = np.where(((x > 0) & (np.arange(8) < 3)) | ~(x < 5), 1, 2)
    np.testing.assert_array_equal(outs[0], expected)
    np.testing.assert_array_equal(outs[1], expected)
