"""`tritonlab viz KERNEL_SCRIPT`: the script runs on minitriton with every launch traced, and
each launch gets its pictures and HTML report."""
import textwrap

import pytest

from tritonlab.cli import main

SCRIPT = textwrap.dedent("""
    import numpy as np
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) +
                 tl.load(y_ptr + offs, mask=mask), mask=mask)

    x = np.arange(50, dtype=np.float32)
    out = np.empty_like(x)
    for block in (16, 32):
        add_kernel[(triton.cdiv(50, block),)](x, x, out, 50, BLOCK=block)
    assert (out == 2 * x).all()
""")


def test_viz_draws_every_launch_of_a_script(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    script = tmp_path / "add.py"
    script.write_text(SCRIPT)
    out = tmp_path / "pictures"
    assert main(["viz", str(script), "--out", str(out)]) == 0
    for i in (0, 1):
        folder = out / f"{i:02d}_add_kernel"
        names = sorted(p.name for p in folder.iterdir())
        assert names == ["add_kernel.html", "add_kernel.out_ptr.png", "add_kernel.program0.png",
                         "add_kernel.x_ptr.png", "add_kernel.y_ptr.png"]
    text = capsys.readouterr().out
    assert "2 of 2 traced launches drawn" in text and "14 masked lanes" in text


def test_viz_draws_a_launch_over_the_limit_up_to_the_limit(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    script = tmp_path / "add.py"
    script.write_text(SCRIPT)
    out = tmp_path / "o"
    status = main(["viz", str(script), "--out", str(out), "--limit", "10", "--no-html"])
    assert status == 1  # the script's own failure
    captured = capsys.readouterr()
    assert "TraceLimitError" in captured.err and "trace_limit = 10" in captured.err
    assert "stopped by TraceLimitError" in captured.out
    assert "--limit N raises the limit" in captured.out


def test_viz_draws_the_launch_that_failed_and_says_what_happened(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    script = tmp_path / "oob.py"
    script.write_text(SCRIPT.replace("mask=mask) +\n", ") +\n"))  # x is read past its end
    out = tmp_path / "o"
    status = main(["viz", str(script), "--out", str(out), "--no-html"])
    assert status == 1
    text = capsys.readouterr().out
    assert "stopped by OutOfBoundsError" in text and "x_ptr" in text
    assert "--limit" not in text  # no hint about a limit that was not hit
    assert sorted(p.name for p in (out / "00_add_kernel").iterdir())
