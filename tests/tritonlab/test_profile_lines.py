"""`tritonlab profile --lines` and tritonlab.profile.memory_lines: the memory insight per kernel
line (minitriton's Settings.sectors) of tritonlab's kernels, on the simulator."""
import torch
from rich.console import Console

from tritonlab import backend
from tritonlab.cli import main
from tritonlab.profile import lines_table, memory_lines


def test_gelu_lines_are_whole_sectors():
    ew = backend.with_backend("tritonlab.kernels.elementwise", "sim")
    x = torch.randn(64, 64)
    record, = memory_lines(lambda: ew.gelu(x))
    load, store = record.lines
    # 4096 fp32 = 512 sectors in 4 programs of 1024 lanes; 8 per thread, 16-byte vectors:
    # a warp request covers 128 lanes, 16 sectors
    assert (load["kind"], load["arg"], load["elements"], load["sectors"]) == \
        ("load", "x_ptr", 4096, 512)
    assert (load["efficiency"], load["sectors_per_request"], load["reuse"]) == (1.0, 16.0, 1.0)
    assert (store["kind"], store["sectors"], store["efficiency"]) == ("store", 512, 1.0)
    console = Console(width=200, record=True)
    console.print(lines_table(record))
    text = console.export_text()
    assert "gelu_kernel: grid (4,) = 4 programs" in text
    assert "x = tl.load(x_ptr + offsets, mask=mask)" in text  # the source, cut at 40 columns


def test_profile_lines_prints_the_table(capsys):
    assert main(["profile", "matmul", "--size", "64", "--lines", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "matmul_relu_kernel: grid (1, 1) = 1 programs, memory per kernel line" in out
    assert "a = tl.load(a_ptrs" in out and "warp eff" in out
