"""What the pictures and the HTML report say (minitriton.viz): grammatical, with counts that
match what is drawn; the report's map has a legend of its program colours and marks the
elements that several programs read or wrote."""
import json
import re

import numpy as np
import pytest

import minitriton
import minitriton.language as tl
from minitriton import viz
from minitriton.viz import pictures

from test_trace import add_kernel, matmul_kernel, racy_sum


@minitriton.jit
def masked_rows(x_ptr, y_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N  # rows of N read BLOCK wide: the masked tail points at the next row
    tl.store(y_ptr + row * N + cols, tl.load(x_ptr + row * N + cols, mask=mask), mask=mask)


def _trace(kernel, grid, *args, **constexprs):
    with minitriton.trace() as t:
        kernel[grid](*args, **constexprs)
    return t.last


def _add(n=10, programs=3):
    x = np.arange(n, dtype=np.float32)
    return _trace(add_kernel, (programs,), x, x, np.zeros(n, np.float32), n, BLOCK_SIZE=4)


def _all_text(d):
    return " ".join([d["title"], *d["notes"], *d["legend"]])


def test_a_one_step_view_names_its_k_step_once():
    d = pictures.describe_program(_add(), 0)
    assert [s for s in d["legend"] if "k-step" in s] == ["k-step 0 (each line ran once)"]
    assert "how-manieth" not in _all_text(d)
    assert "3 memory operations" in d["title"]


def test_counts_agree_with_their_nouns():
    one = _add(n=4, programs=1)
    assert "= 1 program (" in one.summary()
    x, out = np.ones(12, np.float32), np.zeros(1, np.float32)
    d = pictures.describe_argument(_trace(racy_sum, (3,), x, out, BLOCK=4), "out_ptr")
    text = _all_text(d)
    assert "wrote by" not in text and "1 programs" not in text
    assert "1 element written by several programs (up to 3)" in d["notes"]


def test_a_single_memory_operation_is_singular():
    @minitriton.jit
    def fill(y_ptr, BLOCK: tl.constexpr):
        tl.store(y_ptr + tl.arange(0, BLOCK), 1.0)

    d = pictures.describe_program(_trace(fill, (1,), np.zeros(4, np.float32), BLOCK=4), 0)
    assert "(1 memory operation)" in d["title"]


def test_the_masked_lane_note_counts_what_is_hatched():
    # rows of 6 read 8 wide with a mask: rows 0 and 1 mask lanes that point at the next row
    # (elements other lanes read: not hatched), the last row's point past the tensor
    x, y = np.ones((3, 6), np.float32), np.zeros((3, 6), np.float32)
    d = pictures.describe_argument(_trace(masked_rows, (3,), x, y, N=6, BLOCK=8), "x_ptr")
    assert d["hatched"] == 0
    assert not any("hatched" in n for n in d["notes"])
    assert "masked lane (not accessed)" not in d["legend"]
    assert "6 masked-off lanes not drawn (4 at elements other lanes accessed, 2 outside the " \
           "tensor)" in d["notes"]
    # a 1-D strip draws its masked lanes past the end as extra hatched cells, and says so
    d = pictures.describe_argument(_add(), "x_ptr")
    assert d["hatched"] == 2 and "2 hatched cells past the end: elements only masked-off " \
                                 "lanes addressed" in d["notes"]


def _report(trace, tmp_path):
    text = viz.html_report(trace, tmp_path / "report.html").read_text()
    data = json.loads(re.search(r'type="application/json">(.*?)</script>', text, re.S).group(1))
    return text, data


def test_the_report_has_a_legend_of_program_colours(tmp_path):
    a, b = np.ones((32, 64), np.float32), np.ones((64, 48), np.float32)
    trace = _trace(matmul_kernel, (2, 3), a, b, np.zeros((32, 48), np.float32), 32, 48, 64,
                   BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    text, data = _report(trace, tmp_path)
    legend = re.search(r'<div id="legend">(.*?)</div>\s*<main>', text, re.S).group(1)
    for p in range(6):
        pid = trace.pid_of(p)
        entry = next(e for e in data["legend"] if e["program"] == p)
        assert entry["label"] == f"program ({pid[0]}, {pid[1]})"
        assert entry["label"] in legend and entry["colour"] in legend
    assert "several programs" in legend
    assert "6 programs" in text and "1 programs" not in text


def test_the_report_marks_elements_several_programs_read(tmp_path):
    a, b = np.ones((32, 64), np.float32), np.ones((64, 48), np.float32)
    trace = _trace(matmul_kernel, (2, 3), a, b, np.zeros((32, 48), np.float32), 32, 48, 64,
                   BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    _, data = _report(trace, tmp_path)
    arg = {x["name"]: x for x in data["args"]}
    # each row of A is read by the 3 programs of its row of C, each column of B by 2
    assert len(arg["a_ptr"]["several"]) == 32 * 64 and arg["a_ptr"]["most"] == 3
    assert "2,048 elements read by several programs (up to 3)" in arg["a_ptr"]["heading"]
    assert arg["b_ptr"]["most"] == 2
    assert arg["c_ptr"]["several"] == [] and "several" not in arg["c_ptr"]["heading"]


@pytest.mark.parametrize("n", [1, 3])
def test_the_report_subtitle_counts_programs(tmp_path, n):
    text, _ = _report(_add(n=4 * n, programs=n), tmp_path)
    subtitle = re.search(r'<div id="subtitle">(.*?)</div>', text).group(1)
    assert f"= {n} program{'s' if n > 1 else ''}," in subtitle
