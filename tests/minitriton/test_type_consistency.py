"""Triton compiles both sides of a branch on a runtime value, and every `return` of a @jit
function, and stops where their types disagree (language/control.py): minitriton, which runs
one side only, raises the same errors at the first launch, whichever side the programs take,
and runs the kernels whose sides agree as before."""
import re

import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import CompilationError

N = 16


@triton.jit
def pick(a, b, choose_b):
    if choose_b:
        return b
    else:
        return a


@triton.jit
def one_or_two(c):
    if c:
        return 1
    return 2


@triton.jit
def sixteen(c):
    if c:
        return 16
    return 16


@triton.jit
def if_kernel(in_ptr: tl.const, out, c_out: tl.const, choose, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    val = tl.load(in_ptr + offsets)
    if choose:
        final_out = c_out
    else:
        final_out = out
    tl.store(final_out + offsets, val)


@triton.jit
def ternary_kernel(in_ptr: tl.const, out, c_out: tl.const, choose, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    val = tl.load(in_ptr + offsets)
    final_out = c_out if choose else out
    tl.store(final_out + offsets, val)


@triton.jit
def call_kernel(in_ptr: tl.const, out, c_out: tl.const, choose, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    val = tl.load(in_ptr + offsets)
    final_out = pick(out, c_out, choose)
    tl.store(final_out + offsets, val)


@triton.jit
def constexpr_choice_kernel(in_ptr: tl.const, out, c_out: tl.const, choose: tl.constexpr,
                            BLOCK: tl.constexpr):
    # a constexpr condition compiles one side only: no disagreement
    offsets = tl.arange(0, BLOCK)
    val = tl.load(in_ptr + offsets)
    if choose:
        final_out = c_out
    else:
        final_out = out
    tl.store((out if choose else final_out) + offsets, val)


@triton.jit
def load_either_kernel(x_ptr, y_ptr, out_ptr, threshold, BLOCK: tl.constexpr):
    # per program: program 0 reads x, the others y; the loaded types must agree
    pid = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    if pid < threshold:
        v = tl.load(x_ptr + offsets)
    else:
        v = tl.load(y_ptr + offsets) * 2
    tl.store(out_ptr + pid * BLOCK + offsets, v)


@triton.jit
def redefine_kernel(x_ptr, out_ptr, c, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offsets)
    if c:
        acc = acc.to(tl.float16)
    tl.store(out_ptr + offsets, acc)


@triton.jit
def nested_kernel(x_ptr, out_ptr, a, b, BLOCK: tl.constexpr):
    # the mismatch is in the inner `if`, inside the branch that does not run
    offsets = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offsets)
    if a:
        if b:
            w = v
        else:
            w = v.to(tl.int32)
        tl.store(out_ptr + offsets, w)
    else:
        tl.store(out_ptr + offsets, v)


@triton.jit
def one_side_kernel(x_ptr, out_ptr, c, BLOCK: tl.constexpr):
    # a name bound on one side only, and code the probe cannot follow (a reduction)
    offsets = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offsets)
    if c:
        extra = tl.sum(v, axis=0)
        v = v + extra
    else:
        v = v - tl.max(v, axis=0)
    tl.store(out_ptr + offsets, v)


@triton.jit
def loop_local_kernel(x_ptr, y_ptr, out_ptr, c, BLOCK: tl.constexpr):
    # `v` belongs to each iteration (Triton does not carry it): at the `if` of the second
    # iteration, the fp32 `v` the first one left behind is no initial value
    offsets = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(3):
        if c:
            v = tl.load(x_ptr + offsets)
        else:
            v = tl.load(y_ptr + offsets)
        v = v.to(tl.float32) * (i + 1)
        acc += v
    if c:
        t = acc
    tl.store(out_ptr + offsets, acc)
    if c:  # `t`, bound on one side of the `if` above only, is no initial value either
        t = acc.to(tl.float16)
    else:
        t = acc.to(tl.float16)
    tl.store(out_ptr + offsets, t + acc)


@triton.jit
def scalar_ternary_kernel(out_ptr, c, FLOAT: tl.constexpr):
    v = (1 if c else 2.0) if FLOAT else (1 if c else 2)
    tl.static_assert(v.dtype == tl.int32)  # a tensor, as Triton makes it
    tl.store(out_ptr, v)


@triton.jit
def constexpr_returns_kernel(out_ptr, c):
    v = one_or_two(c)
    tl.static_assert(v.dtype == tl.int32)  # two constexprs: made an int32 tensor
    offsets = tl.arange(0, sixteen(c))  # one constexpr: stays one
    tl.store(out_ptr + offsets, v + offsets * 0)


def arrays():
    x = np.arange(N, dtype=np.float32) - 3.5
    return x, np.zeros(N, np.float32)


@pytest.mark.parametrize("choose", [True, False])
@pytest.mark.parametrize("kernel, words", [
    (if_kernel, "Mismatched type for final_out between then block (const_pointer<fp32>) and "
                "else block (pointer<fp32>)"),
    (ternary_kernel, "Ternary expression with dynamic condition has inconsistent types "
                     "const_pointer<fp32> and pointer<fp32>"),
    (call_kernel, "Return type mismatch: const_pointer<fp32> and pointer<fp32>"),
], ids=["if", "ternary", "call"])
def test_const_and_plain_pointers_disagree_whichever_side_runs(executor, kernel, words,
                                                               choose):
    # test_core.py::test_const's cases: Triton's words, at the first launch and at warmup
    x, out = arrays()
    with pytest.raises(CompilationError, match=re.escape(words)):
        kernel[(1,)](x, out, out, choose, BLOCK=N)
    with pytest.raises(CompilationError, match=re.escape(words)):
        kernel.warmup(x, out, out, choose, BLOCK=N, grid=(1,))
    assert not out.any()


def test_a_constexpr_condition_compiles_one_side(executor):
    x, out = arrays()
    constexpr_choice_kernel[(1,)](x, out, out, False, BLOCK=N)
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("threshold", [0, 1, 4])  # all take else, diverging, all take then
def test_branches_that_agree_run_with_diverging_conditions(executor, threshold):
    x = np.arange(N, dtype=np.float32)
    y = -np.arange(N, dtype=np.float32)
    out = np.zeros(4 * N, np.float32)
    load_either_kernel[(4,)](x, y, out, threshold, BLOCK=N)
    want = [x if pid < threshold else 2 * y for pid in range(4)]
    np.testing.assert_array_equal(out, np.concatenate(want))


def test_each_specialisation_is_checked(executor):
    # fp32 and fp32 agree; the same kernel with an fp16 `y` is another specialisation
    x = np.arange(N, dtype=np.float32)
    out = np.zeros(2 * N, np.float32)
    load_either_kernel[(2,)](x, x, out, 1, BLOCK=N)
    np.testing.assert_array_equal(out, np.concatenate([x, 2 * x]))
    with pytest.raises(CompilationError, match=re.escape(
            "Mismatched type for v between then block (<[16], fp32>) and else block "
            "(<[16], fp16>)")):
        load_either_kernel[(2,)](x, x.astype(np.float16), out, 1, BLOCK=N)


def test_a_name_bound_before_keeps_its_type(executor):
    x, out = arrays()
    with pytest.raises(CompilationError, match=re.escape(
            "initial value for `acc` is of type fp32[16], but the then block redefines it as "
            "fp16[16]")):
        redefine_kernel[(1,)](x, out, False, BLOCK=N)


@pytest.mark.parametrize("a", [True, False])
def test_a_branch_not_taken_is_checked_inside(executor, a):
    x, out = arrays()
    with pytest.raises(CompilationError, match="Mismatched type for w between then block "
                                               r"\(<\[16\], fp32>\) and else block "
                                               r"\(<\[16\], int32>\)"):
        nested_kernel[(1,)](x, out, a, True, BLOCK=N)


@pytest.mark.parametrize("c", [True, False])
def test_one_sided_names_and_reductions_are_no_error(executor, c):
    x, out = arrays()
    one_side_kernel[(1,)](x, out, c, BLOCK=N)
    np.testing.assert_allclose(out, x + x.sum() if c else x - x.max())


@pytest.mark.parametrize("c", [True, False])
def test_names_triton_does_not_see_are_no_initial_values(executor, c):
    x = np.arange(N, dtype=np.float16)
    y = -x
    out = np.zeros(N, np.float32)
    loop_local_kernel[(1,)](x, y, out, c, BLOCK=N)
    acc = 6 * (x if c else y).astype(np.float32)
    np.testing.assert_array_equal(out, 2 * acc)


@pytest.mark.parametrize("c", [True, False])
def test_ternary_on_a_runtime_value_is_a_tensor(executor, c):
    out = np.zeros(1, np.int32)
    scalar_ternary_kernel[(1,)](out, c, FLOAT=False)
    assert out.tolist() == [1 if c else 2]
    with pytest.raises(CompilationError, match="inconsistent types int32 and fp32"):
        scalar_ternary_kernel[(1,)](out, c, FLOAT=True)


@pytest.mark.parametrize("c", [True, False])
def test_returns_decide_one_type(executor, c):
    out = np.zeros(N, np.int32)
    constexpr_returns_kernel[(1,)](out, c)
    assert out.tolist() == [1 if c else 2] * N


@pytest.mark.parametrize("choose", [True, False])
def test_returns_that_agree_run(executor, choose):
    @triton.jit
    def kernel(x_ptr, y_ptr, out_ptr, choose, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(pick(x_ptr, y_ptr, choose) + offsets))

    x, out = arrays()
    y = x * 10
    kernel[(1,)](x, y, out, choose, BLOCK=N)
    np.testing.assert_array_equal(out, y if choose else x)


@triton.jit
def constexpr_types_kernel(out, value: tl.constexpr, other: tl.constexpr):
    """`.type` of constexpr arguments and literals is their constexpr_type (equal values, equal
    types); a constexpr assigned to a plain name is a tensor of its type."""
    tl.static_assert(value.type == (10).type)
    tl.static_assert(value.type == tl.constexpr(10).type)
    tl.static_assert(value.type != other.type)
    lifted = value
    tl.static_assert(lifted.type == tl.int32)
    tl.store(out, lifted)


@pytest.mark.parametrize("executor", ["lockstep", "sequential"])
def test_constexpr_type_of_arguments_and_literals(executor):
    from minitriton.language.core import constexpr_type
    assert tl.constexpr(5).type == constexpr_type(5) != constexpr_type(6)
    assert repr(constexpr_type(5)) == "constexpr_type[5]"
    out = np.zeros(1, np.int32)
    with triton.configure(executor=executor):
        constexpr_types_kernel[(1,)](out, 10, 11)
    assert out[0] == 10
    with pytest.raises(CompilationError, match="Static assertion"):
        constexpr_types_kernel[(1,)](out, 11, 11)  # value.type != (10).type
