"""The trace of a launch that failed (observe/trace.py): what the programs did up to the error,
the same under both executors (as the sequential executor reaches the error), with the failing
access marked; the error carries it (`err.trace`) and a `minitriton.trace()` block keeps it
(`Tracing.failed`), so that minitriton.viz can draw the failing launch and say what happened."""
import json
import re

import numpy as np
import pytest

import minitriton
import minitriton.language as tl
from minitriton import DeviceAssertionError, OutOfBoundsError, Settings, UninitializedReadError
from minitriton import viz

from test_trace import _line


@minitriton.jit
def unmasked_copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))  # the bug: no mask


@minitriton.jit
def copy_then_assert(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x)
    tl.device_assert(x < 6, "x too big")


@minitriton.jit
def unmasked_rows(x_ptr, y_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)  # the bug: BLOCK > N and no mask
    tl.store(y_ptr + row * N + cols, tl.load(x_ptr + row * N + cols))


def _copy_failure():
    x, y = np.arange(10, dtype=np.float32), np.zeros(10, np.float32)
    with minitriton.trace() as t:
        with pytest.raises(OutOfBoundsError) as e:
            unmasked_copy[(3,)](x, y, BLOCK=4)
    return t, e.value, y


def test_the_error_carries_the_trace_up_to_the_failing_access(executor):
    t, err, y = _copy_failure()
    assert np.count_nonzero(y) == 0  # the launch's writes are undone, as always
    trace = err.trace
    assert trace.kernel == "unmasked_copy" and trace.executor == executor
    f = trace.failure
    assert (f.error, f.program, f.pid, f.arg, f.kind) == ("OutOfBoundsError", 2, (2,),
                                                          "x_ptr", "load")
    assert f.offsets.tolist() == [10, 11] and f.index.tolist() == [-1, -1]  # past the end
    assert f.site.line == _line(unmasked_copy, "tl.load(x_ptr + offs)")
    assert "load out of bounds" in f.message and "in kernel" not in f.message
    # programs 0 and 1 ran to their end, program 2 stopped at its first access
    x_tr, y_tr = trace.args["x_ptr"], trace.args["y_ptr"]
    assert sorted(set(x_tr.program.tolist())) == [0, 1] and len(x_tr) == 8
    assert y_tr.writer().tolist() == [0] * 4 + [1] * 4 + [-1] * 2
    assert y_tr.values.tolist() == list(range(8)) + [0, 0]  # as the launch left it at the error
    assert trace.program(2).steps == []
    assert t.failed == [trace] and t.launches == [] and t.all == [trace]


def test_the_failure_is_said_in_the_summary():
    _, err, _ = _copy_failure()
    text = err.trace.summary()
    assert "stopped by OutOfBoundsError in program 2" in text
    assert "load of `x_ptr` at element offsets [10, 11]" in text


def test_a_failed_device_assert_marks_the_line_and_the_program(executor):
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    with pytest.raises(DeviceAssertionError) as e:
        copy_then_assert[(2,)](x, y, BLOCK=4, minitriton_settings=Settings(trace=True))
    f = e.value.trace.failure
    assert (f.error, f.program, f.arg) == ("DeviceAssertionError", 1, None)
    assert f.site.line == _line(copy_then_assert, "tl.device_assert")
    assert len(e.value.trace.program(1).steps) == 2  # its load and store ran


def test_an_uninitialized_read_marks_the_elements_it_read(executor):
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)

    @minitriton.jit
    def reads_output(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(y_ptr + offs) + tl.load(x_ptr + offs))

    with pytest.raises(UninitializedReadError) as e:
        reads_output[(2,)](x, y, BLOCK=4, minitriton_settings=Settings(
            trace=True, uninitialized=("y_ptr",)))
    f = e.value.trace.failure
    assert (f.program, f.arg, f.kind) == (0, "y_ptr", "load")
    assert f.index.tolist() == [0, 1, 2, 3]


def test_the_trace_limit_keeps_what_was_recorded():
    x, y = np.arange(10, dtype=np.float32), np.zeros(10, np.float32)
    with minitriton.trace(limit=10) as t:
        with pytest.raises(minitriton.observe.trace.TraceLimitError) as e:
            unmasked_copy[(2,)](x, y, BLOCK=4)
    trace = e.value.trace
    assert trace.failure.error == "TraceLimitError" and t.failed == [trace]
    assert sum(len(a) for a in trace.args.values()) <= 10


def test_a_failed_launch_is_drawn_with_its_failure(tmp_path):
    pytest.importorskip("matplotlib")
    _, err, _ = _copy_failure()
    paths = viz.save(err.trace, tmp_path, html=True)
    names = [p.name for p in paths]
    # the failing argument, what ran before, and the failing program's view
    assert names == ["unmasked_copy.x_ptr.png", "unmasked_copy.y_ptr.png",
                     "unmasked_copy.program2.png", "unmasked_copy.html"]
    text = (tmp_path / "unmasked_copy.html").read_text()
    data = json.loads(re.search(r'type="application/json">(.*?)</script>', text, re.S).group(1))
    assert data["failure"]["program"] == 2 and data["failure"]["arg"] == "x_ptr"
    assert data["failure"]["offsets"] == [10, 11]
    assert "stopped by OutOfBoundsError in program 2" in data["failure"]["text"]
    assert 'id="failure"' in text


def test_a_failed_2d_launch_marks_the_cells_it_read_out_of_row(tmp_path):
    pytest.importorskip("matplotlib")
    # rows of 6 read 8 wide: row 0 reads into row 1 (inside the tensor), the last row past it
    x, y = np.ones((3, 6), np.float32), np.zeros((3, 6), np.float32)
    with pytest.raises(OutOfBoundsError) as e:
        unmasked_rows[(3,)](x, y, N=6, BLOCK=8, minitriton_settings=Settings(trace=True))
    f = e.value.trace.failure
    assert f.program == 2 and f.offsets.tolist() == [18, 19]
    paths = viz.save(e.value.trace, tmp_path)
    assert [p.name for p in paths][-1] == "unmasked_rows.program2.png"
