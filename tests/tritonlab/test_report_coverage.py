"""`tritonlab roofline`'s report shows write coverage (issue 21 section 4): one `coverage` line
per argument the launch wrote, and where the unwritten elements are when it wrote part of one."""
import warnings

import minitriton
import minitriton.language as tl
import torch

from tritonlab.cli import main
from tritonlab.cli.hardware import launch_report


@minitriton.jit
def _first_columns(x, y, N, C: tl.constexpr, B: tl.constexpr):
    """Copies a [rows, N] matrix but its mask keeps only the first C columns of each row."""
    row = tl.program_id(0)
    cols = tl.arange(0, B)
    v = tl.load(x + row * N + cols, mask=cols < N)
    tl.store(y + row * N + cols, v, mask=cols < C)


def _record(C):
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    y = torch.empty_like(x)
    with minitriton.configure(coverage=True), minitriton.record() as rec, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", minitriton.PartialWriteWarning)
        _first_columns[(3,)](x, y, 4, C=C, B=4)
    return rec[0]


def test_a_partly_written_output_shows_its_unwritten_ranges():
    lines = launch_report(_record(3), "H100", "fp32").splitlines()
    coverage = [line for line in lines if line.lstrip().startswith("coverage")]
    assert coverage == ["  coverage of y: 9 of 12 written; unwritten (C order) [3, 4), [7, 8), "
                        "[11, 12); the first at index (0, 3) (PARTIAL: the rest keeps what "
                        "memory held)"]


def test_a_fully_written_output_is_one_plain_line():
    lines = launch_report(_record(4), "H100", "fp32").splitlines()
    assert [line for line in lines if "coverage" in line] == ["  coverage of y: 12 of 12 written"]
    assert lines[0].startswith("_first_columns: grid (3,), read 48 B, written 48 B")


def test_the_roofline_command_reports_coverage(capsys):
    assert main(["roofline", "add", "--shape", "100"]) == 0
    out = capsys.readouterr().out
    assert "  coverage of out_ptr: 100 of 100 written\n" in out
