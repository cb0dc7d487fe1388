"""Autotuning a kernel that updates an argument in place: minitriton puts the argument back
after each trial, a GPU does not (every trial and every timing repetition runs on the same
buffer), so the tuner warns, once per autotuned kernel, naming the argument and the fix."""
import warnings

import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton.runtime.autotune import InPlaceAutotuneWarning

CONFIGS = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})]


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)  # x += 1


@triton.jit
def write_then_double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)  # reads what it wrote: the same result every run
    tl.store(y_ptr + offs, y * 2, mask=mask)


def _grid(meta):
    return (triton.cdiv(300, meta["BLOCK"]),)


def test_an_in_place_kernel_warns_once_naming_the_argument():
    tuned = triton.autotune(CONFIGS, key=["n"])(add_one)
    x = np.zeros(300, np.float32)
    with pytest.warns(InPlaceAutotuneWarning) as caught:
        tuned[_grid](x, 300)
    (w,) = caught
    text = str(w.message)
    assert "`add_one`" in text and "`x_ptr`" in text and "restore_value=['x_ptr']" in text
    assert "same buffer" in text
    assert (x == 1).all()  # minitriton still restores: only the chosen config's run counts
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tuned[_grid](x, 299)  # a new key tunes again: no second warning
    assert (x[:299] == 2).all() and x[299] == 1


def test_restore_value_or_reset_to_zero_silences_it():
    x = np.zeros(300, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        triton.autotune(CONFIGS, key=["n"], restore_value=["x_ptr"])(add_one)[_grid](x, 300)
        triton.autotune(CONFIGS, key=["n"], reset_to_zero=["x_ptr"])(add_one)[_grid](x, 300)
    assert (x == 1).all()


def test_a_kernel_that_reads_only_what_it_wrote_does_not_warn():
    x, y = np.arange(300, dtype=np.float32), np.zeros(300, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        triton.autotune(CONFIGS, key=["n"])(write_then_double)[_grid](x, y, 300)
    np.testing.assert_array_equal(y, 2 * x)
