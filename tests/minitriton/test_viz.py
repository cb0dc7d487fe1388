"""minitriton.viz: the pictures (PNG files of the expected size, drawn from the trace) and the
HTML report (one self-contained file with the kernel source and the data)."""
import json
import re
import subprocess
import sys

import numpy as np
import pytest

import minitriton
from minitriton import viz

from test_trace import add_kernel, matmul_kernel, racy_sum


def _add_trace():
    x, y, out = np.arange(10, dtype=np.float32), np.ones(10, np.float32), np.zeros(10, np.float32)
    with minitriton.trace() as t:
        add_kernel[(3,)](x, y, out, 10, BLOCK_SIZE=4)
    return t


def _matmul_trace():
    a = np.ones((32, 64), np.float32)
    b = np.ones((64, 48), np.float32)
    c = np.zeros((32, 48), np.float32)
    with minitriton.trace() as t:
        matmul_kernel[(2, 3)](a, b, c, 32, 48, 64, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    return t.last


def test_import_minitriton_does_not_import_matplotlib():
    code = "import sys, minitriton, minitriton.viz; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_save_draws_every_argument_and_one_program(tmp_path):
    pytest.importorskip("matplotlib")
    png = pytest.importorskip("matplotlib.image")
    paths = viz.save(_add_trace(), tmp_path)
    assert [p.name for p in paths] == ["add_kernel.x_ptr.png", "add_kernel.y_ptr.png",
                                      "add_kernel.out_ptr.png", "add_kernel.program0.png"]
    for p in paths:
        image = png.imread(p)
        assert image.shape[1] == 1000 and image.shape[0] > 150  # 10 inches at 100 dpi
        assert len(np.unique(image.reshape(-1, image.shape[-1]), axis=0)) > 10  # drawn, not blank


def test_the_argument_picture_has_each_programs_colour(tmp_path):
    pytest.importorskip("matplotlib")
    png = pytest.importorskip("matplotlib.image")
    trace = _add_trace().last
    path = viz.draw_argument(trace, "out_ptr", tmp_path / "out.png")
    image = png.imread(path)[..., :3]
    colours = viz.pictures.program_colours(3)
    for p in range(3):
        hits = np.all(np.abs(image - colours[p]) < 0.01, axis=-1).sum()
        assert hits > 1000, f"program {p}'s colour is missing"


def test_races_and_program_views_draw(tmp_path):
    pytest.importorskip("matplotlib")
    x, out = np.ones(12, np.float32), np.zeros(1, np.float32)
    with minitriton.trace() as t:
        racy_sum[(3,)](x, out, BLOCK=4)
    paths = viz.save(t, tmp_path, program=2)
    assert {p.name for p in paths} >= {"racy_sum.out_ptr.png", "racy_sum.program2.png"}
    trace = _matmul_trace()
    (view,) = viz.save(trace, tmp_path / "mm")[-1:]
    assert view.name == "matmul_kernel.program1-1.png"  # the middle program of a 2-D grid
    assert view.stat().st_size > 10_000


def test_html_report_is_self_contained_with_source_and_data(tmp_path):
    trace = _matmul_trace()
    path = viz.html_report(trace, tmp_path / "mm.html")
    text = path.read_text()
    assert not re.search(r"<[^>]*\s(src|href)\s*=|https?://|<link", text)  # nothing fetched
    assert "tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))" in text  # the kernel source
    data = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>',
                                text, re.S).group(1))
    assert data["grid"] == [2, 3] and data["programs"] == 6
    a = next(arg for arg in data["args"] if arg["name"] == "a_ptr")
    assert a["shape"] == [32, 64] and len(a["acc"]["p"]) == len(trace.args["a_ptr"])
    assert a["values"][0] == "1"
    assert data["lines"] is None  # no per-line memory table unless Settings.sectors made one


def test_html_report_shows_the_per_line_table_when_the_record_has_one(tmp_path):
    trace = _add_trace().last
    trace.record.lines = [{"line": 7, "kind": "load", "elements": 10, "bytes": 40,
                           "sectors": 2, "efficiency": 0.625, "unique_bytes": 40}]
    text = viz.html_report(trace, tmp_path / "add.html").read_text()
    data = json.loads(re.search(r'type="application/json">(.*?)</script>', text, re.S).group(1))
    assert data["lines"][0]["efficiency"] == 0.625
    assert "memory per kernel line" in text


def test_save_refuses_what_is_not_a_trace(tmp_path):
    x = np.ones(8, np.float32)
    record = add_kernel[(2,)](x, x, np.zeros(8, np.float32), 8, BLOCK_SIZE=4)
    with pytest.raises(TypeError, match="minitriton.trace"):
        viz.save(record, tmp_path)


def test_layouts_follow_the_tensors_shape():
    (title, strip), = viz.pictures.panels((10,))
    assert strip.tolist() == [list(range(10))] and title == ""
    (_, wrapped), = viz.pictures.panels((5000,))
    assert wrapped.shape == (5, 1024) and wrapped[4, 903] == 4999 and wrapped[4, 904] == -1
    (_, grid), = viz.pictures.panels((3, 4))
    assert grid[2, 1] == 9
    slices = viz.pictures.panels((6, 3, 4))
    assert len(slices) == 4 and slices[1][0] == "[1, :, :]" and slices[1][1][0, 0] == 12
    assert "first 4 of 6 slices" in slices[-1][0]
