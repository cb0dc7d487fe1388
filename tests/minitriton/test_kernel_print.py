"""Kernel prints before an error: what the programs printed up to the failure is shown, program
by program as the sequential executor runs them, and then the error is raised. A student adds
prints exactly when a launch fails, so neither executor may swallow them."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import DeviceAssertionError, OutOfBoundsError, Settings


@triton.jit
def print_then_assert(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    print("sum", tl.sum(x, axis=0))
    tl.device_assert(x < 5, "x too big")
    tl.device_print("checked")


@triton.jit
def print_then_unmasked_load(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.device_print("first offset", tl.min(offs, axis=0))
    x = tl.load(x_ptr + offs)  # the bug: no mask, the last program reads past n
    print("loaded", tl.sum(x, axis=0))


def test_prints_before_a_failing_device_assert_are_shown(executor, capsys):
    # programs 1, 2 and 3 all fail the assert; sequentially, program 0 runs to its end and
    # program 1 prints, then stops: programs 2 and 3 never run
    with pytest.raises(DeviceAssertionError, match="x too big") as e:
        print_then_assert[(4,)](np.arange(16, dtype=np.float32), BLOCK=4)
    assert "program (1, 0, 0)" in str(e.value)
    assert e.value.__context__ is None  # no "during handling of the above exception"
    assert capsys.readouterr().out.splitlines() == [
        "pid (0, 0, 0) sum 6.0", "pid (0, 0, 0) checked", "pid (1, 0, 0) sum 22.0"]


def test_prints_before_an_out_of_bounds_load_are_shown(executor, capsys):
    with pytest.raises(OutOfBoundsError, match="program \\(2, 0, 0\\)"):
        print_then_unmasked_load[(3,)](np.ones(10, np.float32), 10, BLOCK=4)
    assert capsys.readouterr().out.splitlines() == [
        "pid (0, 0, 0) first offset 0", "pid (0, 0, 0) loaded 4.0",
        "pid (1, 0, 0) first offset 4", "pid (1, 0, 0) loaded 4.0",
        "pid (2, 0, 0) first offset 8"]


def test_a_launch_that_fails_without_printing_reports_the_same_program(executor, capsys):
    with pytest.raises(DeviceAssertionError) as e:
        print_then_assert[(4,)](np.arange(16, dtype=np.float32)[::-1].copy(), BLOCK=4)
    # reversed: programs 0 and 1 hold 15..8 and fail; program 0 is the first to
    assert "program (0, 0, 0)" in str(e.value)
    assert capsys.readouterr().out.splitlines() == ["pid (0, 0, 0) sum 54.0"]


@triton.jit
def print_sum(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    print("sum", tl.sum(x, axis=0))


def test_the_order_checks_rerun_does_not_print_again(executor, capsys):
    print_sum[(2,)](np.arange(8, dtype=np.float32), BLOCK=4,
                    minitriton_settings=Settings(executor=executor, order=True))
    assert capsys.readouterr().out.splitlines() == ["pid (0, 0, 0) sum 6.0",
                                                    "pid (1, 0, 0) sum 22.0"]
