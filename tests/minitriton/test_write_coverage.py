"""Write coverage (issue 21, section 4): with Settings(coverage=True), each argument stored to
gets how many elements of its view the launch wrote and where the unwritten ones are, in the
launch record; an output written only partly warns. Off (the default), nothing is recorded."""
import warnings

import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import Settings
from minitriton.observe.coverage import PartialWriteWarning


@triton.jit
def fill_rows(y, n_cols, stride, BLOCK: tl.constexpr):
    # the planted bug of a mask that drops the last columns: `cols < n_cols - 2`
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.store(y + row * stride + cols, 1.0, mask=cols < n_cols - 2)


@triton.jit
def fill(y, n, start, BLOCK: tl.constexpr):
    # an offset that skips the first `start` elements
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + o, 1.0, mask=(o >= start) & (o < n))


@triton.jit
def count(y, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.atomic_add(y + o % 4, 1.0)


@triton.jit
def branchy(x, y, BLOCK: tl.constexpr):
    # programs diverge on a Python `if`: lockstep re-runs them, the coverage stays exact
    pid = tl.program_id(0)
    o = pid * BLOCK + tl.arange(0, BLOCK)
    if tl.load(x + pid) > 0:
        tl.store(y + o, 1.0)


def on(executor):
    return Settings(executor=executor, coverage=True)


def test_mask_that_drops_the_last_columns(executor):
    y = np.zeros((3, 8), np.float32)
    with pytest.warns(PartialWriteWarning, match=r"wrote 18 of the 24 elements of argument `y`"
                      r".*\[6, 8\), \[14, 16\), \[22, 24\); the first at index \(0, 6\)"):
        rec = fill_rows[(3,)](y, 8, 8, BLOCK=8, minitriton_settings=on(executor))
    cov = rec.args["y"].coverage
    assert (cov.written, cov.total, cov.complete) == (18, 24, False)
    assert cov.unwritten == [(6, 8), (14, 16), (22, 24)] and cov.unwritten_ranges == 3
    assert cov.first_unwritten == (0, 6)
    assert "coverage of y: 18 of 24 written" in rec.table()


def test_offset_that_skips_the_first_elements(executor):
    y = np.zeros(1000, np.float32)
    with pytest.warns(PartialWriteWarning, match=r"unwritten \(C order over its shape\): "
                      r"\[0, 3\)\."):
        rec = fill[(4,)](y, 1000, 3, BLOCK=256, minitriton_settings=on(executor))
    assert rec.args["y"].coverage.written == 997


def test_complete_output_is_quiet_and_inputs_get_no_coverage(executor):
    x, y = np.ones(8, np.float32), np.zeros(1000, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PartialWriteWarning)
        rec = fill[(4,)](y, 1000, 0, BLOCK=256, minitriton_settings=on(executor))
        assert rec.args["y"].coverage.complete and str(rec.args["y"].coverage) == \
            "1,000 of 1,000 written"
        rec = branchy[(8,)](x, np.zeros(64, np.float32), BLOCK=8,
                            minitriton_settings=on(executor))
    assert rec.args["y"].coverage.complete
    assert rec.args["x"].coverage is None  # loaded only


def test_diverged_programs_keep_the_coverage_exact(executor):
    x = np.array([1, -1, 1, 1, -1, 1, 1, 1], np.float32)
    y = np.zeros(64, np.float32)
    with pytest.warns(PartialWriteWarning, match=r"\[8, 16\), \[32, 40\)"):
        rec = branchy[(8,)](x, y, BLOCK=8, minitriton_settings=on(executor))
    assert rec.args["y"].coverage.written == 48


def test_atomics_count_as_writes(executor):
    y = np.zeros(8, np.float32)
    with pytest.warns(PartialWriteWarning, match=r"wrote 4 of the 8 .*\[4, 8\)"):
        rec = count[(1,)](y, BLOCK=16, minitriton_settings=on(executor))
    assert rec.args["y"].coverage.written == 4


def test_coverage_counts_the_view_not_its_storage(executor):
    base = np.zeros((4, 8), np.float32)
    block = base[1:3, 2:6]  # (2, 4), rows 8 apart
    with warnings.catch_warnings():
        warnings.simplefilter("error", PartialWriteWarning)
        rec = fill_rows[(2,)](block, 6, 8, BLOCK=4, minitriton_settings=on(executor))
    assert (rec.args["y"].coverage.written, rec.args["y"].coverage.total) == (8, 8)
    with pytest.warns(PartialWriteWarning, match=r"\[3, 4\), \[7, 8\)"):
        fill_rows[(2,)](block, 5, 8, BLOCK=4, minitriton_settings=on(executor))


def test_off_by_default_records_nothing():
    y = np.zeros(16, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PartialWriteWarning)
        rec = fill[(1,)](y, 16, 3, BLOCK=16)
    assert rec.args["y"].coverage is None
    assert "coverage" not in rec.table()
