"""Every message says what happened and the fix that works for that case (issue 18): the order
check names the orders it compared and who wrote the element, static_print prints once per
compilation, out-of-bounds errors list distinct sorted offsets with the advice that fits the
pointer (mask, `offsets >= 0`, block pointer's `boundary_check`), and non-constexpr shapes say
"a runtime value" without showing a value that means nothing at compile time."""
import re

import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import CompilationError, OrderError, OutOfBoundsError, Settings

# --------------------------------------------------------------------------- the order check


@triton.jit
def count_kernel(c_ptr):
    tl.store(c_ptr, tl.load(c_ptr) + 1)  # no atomic: every program writes element 0


@triton.jit
def chain_kernel(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid > 0:  # reads the block the previous program writes
        prev = tl.load(x_ptr + (pid - 1) * BLOCK + offs)
        tl.store(x_ptr + pid * BLOCK + offs, prev + 1)


def test_order_names_lockstep_and_every_writer():
    c = np.zeros(1, np.float32)
    with pytest.raises(OrderError) as e:
        count_kernel[(100,)](c, minitriton_settings=Settings(executor="lockstep", order=True))
    msg = str(e.value)
    # lockstep loses updates (programs together); sequential in any order counts all 100
    assert ("differs between the launch as it ran (lockstep: programs together) and a re-run "
            "sequential in a shuffled order (seed 0), at 1 element(s) [0: ") in msg
    assert " vs 100.0] (as it ran vs shuffled)" in msg
    assert ("the first, element 0, is written by program(s) (0, 0, 0), (1, 0, 0), (2, 0, 0), "
            "(3, 0, 0), (4, 0, 0), (5, 0, 0), (6, 0, 0), (7, 0, 0), ... (100 programs).") in msg
    assert "100 programs write element 0" in msg and "tl.atomic_add" in msg
    assert "program-id order" not in msg  # nothing ran in program-id order sequentially
    assert "program (" not in msg.splitlines()[0]  # the whole launch's error, no one program
    assert c.tolist() == [0.0]


@pytest.mark.parametrize("executor,ran", [("lockstep", "lockstep: programs together"),
                                          ("sequential", "sequential, program-id order")])
def test_order_names_the_orders_and_the_writer(executor, ran):
    x = np.zeros(8 * 16, np.float32)
    with pytest.raises(OrderError) as e:
        chain_kernel[(8,)](x, BLOCK=16, minitriton_settings=Settings(executor=executor,
                                                                     order=True))
    msg = str(e.value)
    assert f"the launch as it ran ({ran}) and a re-run sequential in a shuffled order" in msg
    first = re.search(r"the first, element (\d+), is written by program\(s\) \((\d+), 0, 0\)\.",
                      msg)
    assert first, msg
    assert int(first[2]) == int(first[1]) // 16  # program k writes block k, and only it
    assert "must not read what another program of the same launch writes" in msg
    assert np.count_nonzero(x) == 0


# --------------------------------------------------------------------------- static_print


@triton.jit
def static_print_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_print("compiling for BLOCK =", BLOCK)
    tl.store(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), 1.0)


def test_static_print_prints_once_per_specialisation(capsys):
    x = np.zeros(3 * 32, np.float32)
    for executor in ("lockstep", "sequential"):
        for _ in range(2):
            static_print_kernel[(3,)](x, BLOCK=16, minitriton_settings=Settings(executor=executor))
    assert capsys.readouterr().out == "compiling for BLOCK = 16\n"  # 3 programs, 4 launches
    static_print_kernel[(3,)](x, BLOCK=32)  # a new constexpr: a new compilation
    assert capsys.readouterr().out == "compiling for BLOCK = 32\n"


# --------------------------------------------------------------------------- out of bounds


@triton.jit
def block_ptr_copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, CHECK_LOAD: tl.constexpr):
    pid = tl.program_id(0)
    x_block = tl.make_block_ptr(x_ptr, (n,), (1,), (pid * BLOCK,), (BLOCK,), (0,))
    y_block = tl.make_block_ptr(y_ptr, (n,), (1,), (pid * BLOCK,), (BLOCK,), (0,))
    if CHECK_LOAD:
        x = tl.load(x_block, boundary_check=(0,), padding_option="zero")
    else:
        x = tl.load(x_block)
    tl.store(y_block, x)


@triton.jit
def block_ptr_2d_kernel(x_ptr, M, N, BLOCK: tl.constexpr):
    block = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (tl.program_id(0) * BLOCK, 8),
                              (BLOCK, BLOCK), (1, 0))
    tl.store(block, tl.load(block, boundary_check=(0,)) + 1)  # dimension 1 is not checked


@pytest.mark.usefixtures("executor")
def test_block_pointer_overflow_suggests_boundary_check():
    x, y = np.zeros(1500, np.float32), np.zeros(1500, np.float32)
    with pytest.raises(OutOfBoundsError) as e:
        block_ptr_copy_kernel[(2,)](x, y, 1500, BLOCK=1024, CHECK_LOAD=False)
    msg = str(e.value)
    assert "program (1, 0, 0)" in msg
    assert ("load out of bounds on argument `x_ptr` (numpy float32 array of shape (1500,)): "
            "548 lane(s) at element offsets [1500, 1501, 1502, 1503, 1504, 1505, 1506, 1507, "
            "..., 2047] (548 distinct, sorted), valid offsets are [0, 1499].") in msg
    assert ("hint: the block overflows the block pointer's shape in dimension 0 (the block "
            "covers [1024, 2048), the shape is 1500); a block pointer takes no mask: pass "
            "`boundary_check=(0,)` to tl.load, and `padding_option=\"zero\"` (or `\"nan\"`) "
            "for the value of the lanes outside (undefined on a GPU without it); nothing was "
            "read or written.") in msg
    assert "mask" not in msg.replace("takes no mask", "")

    with pytest.raises(OutOfBoundsError) as e:
        block_ptr_copy_kernel[(2,)](x, y, 1500, BLOCK=1024, CHECK_LOAD=True)
    assert ("store out of bounds on argument `y_ptr`" in str(e.value)
            and "pass `boundary_check=(0,)` to tl.store (the lanes outside the shape are then "
                "not written)" in str(e.value))


@pytest.mark.usefixtures("executor")
def test_block_pointer_names_the_unchecked_dimension():
    x = np.zeros((20, 12), np.float32)
    with pytest.raises(OutOfBoundsError) as e:
        block_ptr_2d_kernel[(2,)](x, 20, 12, BLOCK=16)
    msg = str(e.value)
    assert ("in dimension 1 (the block covers [8, 24), the shape is 12); a block pointer takes "
            "no mask: pass `boundary_check=(0, 1)` to tl.load") in msg
    assert np.count_nonzero(x) == 0


@triton.jit
def gather_kernel(x_ptr, y_ptr, START: tl.constexpr, STEP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + START + STEP * (offs // 2)))


@pytest.mark.usefixtures("executor")
def test_offsets_are_distinct_sorted_and_counted():
    # lanes 0..15 read 1007, 1007, 1006, 1006, ...: duplicated and descending
    x, y = np.zeros(1000, np.float32), np.zeros(16, np.float32)
    with pytest.raises(OutOfBoundsError) as e:
        gather_kernel[(1,)](x, y, START=1007, STEP=-1, BLOCK=16)
    msg = str(e.value)
    assert ("16 lane(s) at element offsets [1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007] "
            "(8 distinct, sorted), valid offsets are [0, 999].") in msg
    assert "hint: guard the access with a mask, e.g. `mask = offsets < n_elements`" in msg


@pytest.mark.usefixtures("executor")
def test_negative_offsets_get_their_own_advice():
    x, y = np.zeros(1000, np.float32), np.zeros(16, np.float32)
    with pytest.raises(OutOfBoundsError) as e:
        gather_kernel[(1,)](x, y, START=-8, STEP=1, BLOCK=16)
    msg = str(e.value)
    assert ("16 lane(s) at element offsets [-8, -7, -6, -5, -4, -3, -2, -1] (8 distinct, "
            "sorted), valid offsets are [0, 999].") in msg
    assert ("hint: these offsets are below the start of `x_ptr` (negative: the pointer points "
            "before its first element), which a mask like `offsets < n_elements` does not "
            "catch; check the index arithmetic (a subtraction, a negative offset or stride, an "
            "int32 product that wrapped), or mask them with `mask = offsets >= 0` and "
            "`tl.load(ptr + offsets, mask=mask, other=0.0)`") in msg

    x = np.zeros(4, np.float32)
    with pytest.raises(OutOfBoundsError) as e:  # both ends: offsets -2 .. 5 of 4 elements
        gather_kernel[(1,)](x, y, START=-2, STEP=1, BLOCK=16)
    assert "element offsets [-2, -1, 4, 5] (4 distinct, sorted)" in str(e.value)
    assert ("some offsets are below the start of `x_ptr` (negative) and some past its end; "
            "check the index arithmetic, or mask both, e.g. `mask = (offsets >= 0) & (offsets "
            "< n_elements)`") in str(e.value)


# --------------------------------------------------------------------------- constexpr shapes


@triton.jit
def arange_runtime_end_kernel(x_ptr, n):
    tl.store(x_ptr + tl.arange(0, n), 1.0)


@triton.jit
def zeros_runtime_kernel(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((n,), tl.float32))


@triton.jit
def full_runtime_kernel(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.full((BLOCK, n), 1.0, tl.float32))


def test_runtime_arange_bound_is_not_shown_as_a_value():
    with pytest.raises(CompilationError) as e:
        arange_runtime_end_kernel[(1,)](np.zeros(16, np.float32), 16)
    msg = str(e.value)
    assert ("arange's arguments must be of type tl.constexpr, but `end` is a runtime value, not "
            "a constexpr; annotate the kernel parameter it comes from as `tl.constexpr` (e.g. "
            "`n: tl.constexpr`), or use a constexpr block size and mask the extra lanes") in msg
    assert "got 0" not in msg and "int32" not in msg


@pytest.mark.parametrize("kernel,op,dim", [(zeros_runtime_kernel, "zeros", 0),
                                           (full_runtime_kernel, "full", 1)])
def test_runtime_block_shape_is_not_shown_as_a_value(kernel, op, dim):
    with pytest.raises(CompilationError) as e:
        kernel[(1,)](np.zeros(16, np.float32), 16, BLOCK=16)
    assert (f"tl.{op}: shape element {dim} must have type `constexpr[int]`, but it is a runtime "
            "value, not a constexpr; block shapes are compile-time constants: annotate the "
            "kernel parameter it comes from as `tl.constexpr`") in str(e.value)


def test_a_missing_api_name_points_to_the_limitations():
    with pytest.raises(AttributeError, match=r"triton.language.not_there is not in minitriton "
                                             r"\(yet\): docs/limitations.md"):
        tl.not_there
    with pytest.raises(AttributeError, match="triton.knobs is not in minitriton"):
        triton.knobs
    assert not hasattr(tl, "__not_a_dunder__") and hasattr(tl, "load")
