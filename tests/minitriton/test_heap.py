"""Settings.keep_heap (runtime/heap.py): the first launch has glibc's malloc keep freed
memory for the next launch; MINITRITON_KEEP_HEAP=0 leaves malloc alone."""
import ctypes
import sys

import numpy as np
import pytest

import minitriton
import minitriton.language as tl
from minitriton.runtime import heap, launch


@minitriton.jit
def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_the_setting_and_its_variable():
    assert minitriton.Settings().keep_heap is True
    assert minitriton.Settings.from_env({"MINITRITON_KEEP_HEAP": "0"}).keep_heap is False
    assert minitriton.Settings.from_env({"MINITRITON_KEEP_HEAP": "1"}).keep_heap is True


def test_a_launch_asks_only_when_the_setting_says_so(monkeypatch):
    calls = []
    monkeypatch.setattr(launch, "keep_heap", lambda: calls.append(1) or True)
    x, y = np.arange(300, dtype=np.float32), np.zeros(300, np.float32)
    with minitriton.configure(keep_heap=False):
        double[(3,)](x, y, 300, BLOCK=128)
    assert calls == [] and np.array_equal(y, 2 * x)
    double[(3,)](x, y, 300, BLOCK=128)
    assert calls == [1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_glibc_takes_the_thresholds_once():
    try:
        ctypes.CDLL(None).mallopt
    except AttributeError:
        pytest.skip("not glibc")
    assert heap.keep_heap() is True and heap.keep_heap() is True
    assert heap._DONE == [True]  # asked once per process
