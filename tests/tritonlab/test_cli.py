"""The command line: help, info, lecture selection."""
import pytest

from tritonlab.cli import available_lectures, main


def test_help_and_info(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    assert "lecture" in capsys.readouterr().out
    assert main(["info"]) == 0
    assert "backend" in capsys.readouterr().out


def test_lecture_selection(capsys):
    names = list(available_lectures())
    assert names[:5] == ["01_benchmarking_profiling", "02_triton_elementwise",
                         "03_triton_reductions", "04_triton_matmul", "05_triton_rmsnorm"]
    assert main(["lecture", "list"]) == 0
    assert main(["lecture", "nope"]) == 2
    assert main(["lecture", "elementwise"]) == 0
    out = capsys.readouterr().out
    assert "4 programs; program 3 masks its last 24 lanes" in out
    assert "elements read 2,000, written 1,000" in out
