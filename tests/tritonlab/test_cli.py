"""The command line: help, info, lecture selection, dtype spellings, one-line user errors."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tritonlab.cli import build_parser, main
from tritonlab.cli.lecture import available_lectures, lectures_dir


def one_error_line(err, command):
    """The single stderr line of a user error, checked for the `tritonlab <command>: error:`
    prefix and the absence of a traceback."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{command}: error: ")
    return lines[0]


def test_help_and_info(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    assert "lecture" in capsys.readouterr().out
    assert main([]) == 0
    assert "roofline" in capsys.readouterr().out
    assert main(["info"]) == 0
    assert "backend" in capsys.readouterr().out


def test_help_and_hardware_commands_do_not_import_torch():
    # torch takes seconds to import; the parser and the hardware model need none of it
    code = ("import sys; from tritonlab.cli import build_parser, main; "
            "build_parser().format_help(); main(['waves', '--blocks', '149']); "
            "print('torch' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert run.stdout.splitlines()[-1] == "False"


def test_lecture_selection(capsys, monkeypatch):
    monkeypatch.delenv("TRITONLAB_LECTURES", raising=False)
    assert lectures_dir() == Path(__file__).resolve().parents[2] / "lectures"
    names = list(available_lectures())
    assert names[:7] == ["01_benchmarking_profiling", "02_triton_elementwise",
                         "03_triton_reductions", "04_triton_matmul", "05_triton_rmsnorm",
                         "06_torch_compile", "07_flash_attention"]
    assert main(["lecture", "list"]) == 0
    capsys.readouterr()
    assert main(["lecture", "nope"]) == 2
    line = one_error_line(capsys.readouterr().err, "tritonlab lecture")
    assert line.endswith(f"lecture 'nope' matches none of: {', '.join(names)}")
    assert main(["lecture", "elementwise"]) == 0
    out = capsys.readouterr().out
    assert "4 programs; program 3 masks its last 24 lanes" in out
    assert "elements read 2,000, written 1,000" in out


def test_no_lectures_is_a_user_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITONLAB_LECTURES", str(tmp_path))
    assert main(["lecture"]) == 2
    assert "no lecture scripts found in" in one_error_line(capsys.readouterr().err,
                                                            "tritonlab lecture")


@pytest.mark.parametrize("command", ["bench", "profile", "compile-report"])
@pytest.mark.parametrize("text, name", [
    ("fp32", "float32"), ("fp16", "float16"), ("bf16", "bfloat16"),  # the short forms
    ("BF16", "bfloat16"), ("Float16", "float16"),  # any case
    ("float32", "float32"), ("bfloat16", "bfloat16"),  # the canonical names pass through
])
def test_dtype_short_forms_give_the_canonical_name(command, text, name):
    argv = {"bench": ["bench", "matmul"], "profile": ["profile", "gelu"],
            "compile-report": ["compile-report", "m:f", "--shapes", "4"]}[command]
    assert build_parser().parse_args(argv + ["--dtype", text]).dtype == name


@pytest.mark.parametrize("text, name", [("fp32", "float32"), ("tf32", "tfloat32"),
                                        ("TF32", "tfloat32"), ("tfloat32", "tfloat32"),
                                        ("bf16", "bfloat16"), ("fp16", "float16")])
def test_roofline_dtypes(text, name):
    assert build_parser().parse_args(["roofline", "add", "--shape", "8", "--dtype", text]
                                     ).dtype == name
    assert build_parser().parse_args(["roofline", "add", "--shape", "8"]).dtype == "float32"


@pytest.mark.parametrize("argv, command", [
    (["bench", "matmul", "--dtype", "tf32"], "tritonlab bench"),  # tf32 is roofline's only
    (["profile", "gelu", "--dtype", "int8"], "tritonlab profile"),
    (["bench", "nope"], "tritonlab bench"),  # bad choice
    (["bench", "matmul", "--sizes", "0"], "tritonlab bench"),
    (["waves", "--blocks", "x"], "tritonlab waves"),  # bad int
    (["waves", "--blocks", "8", "--blocks-per-sm", "0"], "tritonlab waves"),
    (["waves", "--blocks", "8", "--gpu", "Z80"], "tritonlab waves"),  # unknown GPU
    (["occupancy", "--threads", "256"], "tritonlab occupancy"),  # missing required flag
    (["nope"], "tritonlab"),  # unknown command
])
def test_bad_flag_value_is_one_line_and_exit_2(capsys, argv, command):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    one_error_line(captured.err, command)


def test_occupancy_the_gpu_cannot_run_is_a_user_error(capsys):
    assert main(["occupancy", "--threads", "4096", "--registers", "32"]) == 2
    assert one_error_line(capsys.readouterr().err, "tritonlab occupancy").endswith(
        "threads per block must be in 1..1024")


def test_compile_report_user_errors(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # compile-report puts the cwd first
    (tmp_path / "cli_target_module.py").write_text("def double(x):\n    return 2 * x\n")
    cases = [
        (["no_such_module_here:f"], "no module named 'no_such_module_here' in "),
        (["cli_target_module:triple"], "module 'cli_target_module' has no function 'triple'"),
        (["cli_target_module"], "give the function as module:function"),
        (["cli_target_module:double", "--shapes", "4y8"], "bad shape '4y8'; write it like 8x16"),
    ]
    for argv, message in cases:
        shapes = [] if "--shapes" in argv else ["--shapes", "4"]
        assert main(["compile-report", *argv, *shapes]) == 2
        assert message in one_error_line(capsys.readouterr().err, "tritonlab compile-report")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("argv", [["bench", "matmul", "--sizes", "8"], ["profile", "gelu"],
                                  ["compile-report", "cli_device_target:f", "--shapes", "4"]])
def test_device_cuda_without_cuda(capsys, monkeypatch, tmp_path, argv):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "cli_device_target.py").write_text("def f(x):\n    return x\n")
    assert main(argv + ["--device", "cuda"]) == 2
    line = one_error_line(capsys.readouterr().err, f"tritonlab {argv[0]}")
    assert line.endswith("--device cuda: CUDA is not available here "
                         "(torch.cuda.is_available() is False); use --device cpu")


def test_unknown_device(capsys):
    assert main(["bench", "matmul", "--sizes", "8", "--device", "tpu"]) == 2
    assert one_error_line(capsys.readouterr().err, "tritonlab bench").endswith(
        "unknown device 'tpu'; use cuda, mps or cpu")


def test_roofline_tf32_uses_the_tf32_rate(capsys):
    rates = {}
    for dtype in ("fp32", "tf32"):
        assert main(["roofline", "matmul", "--shape", "64x64x64", "--dtype", dtype]) == 0
        out = capsys.readouterr().out
        assert "matmul_kernel: grid" in out and f"H100-SXM5-80GB, {dtype}: " in out
        rates[dtype] = int(out.split("(ridge ")[1].split(")")[0])
    # H100: 66.9 and 494.7 TFLOP/s over 3.35 TB/s
    assert rates == {"fp32": 20, "tf32": 148}


def test_roofline_matmul_needs_three_dims(capsys):
    assert main(["roofline", "matmul", "--shape", "64x64"]) == 2
    assert one_error_line(capsys.readouterr().err, "tritonlab roofline").endswith(
        "matmul takes --shape MxKxN")


def test_a_bad_backend_name_is_one_line_and_code_2():
    """TRITONLAB_BACKEND is read when the backend is first imported: in a fresh process."""
    env = dict(os.environ, TRITONLAB_BACKEND="bogus")
    done = subprocess.run([sys.executable, "-m", "tritonlab", "info"], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "tritonlab info: error: TRITONLAB_BACKEND='bogus': choose one of triton, sim, interpret"]


PREDICT_SCRIPT = '''
import torch, triton
import triton.language as tl

@triton.autotune([triton.Config({"B": 256}, num_warps=2), triton.Config({"B": 1024}, num_warps=8)],
                 key=["n"])
@triton.jit
def double(x, y, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)

x = torch.randn(1 << 16, device="cuda")
y = torch.empty_like(x)
for _ in range(2):
    double[lambda m: (triton.cdiv(x.numel(), m["B"]),)](x, y, x.numel())
assert torch.equal(y, x * 2)
print("checked")
'''


def test_predict_runs_a_script_and_prints_each_launch_once(tmp_path, capsys):
    script = tmp_path / "double.py"
    script.write_text(PREDICT_SCRIPT)
    assert main(["predict", "--gpu", "h100", str(script)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("checked\n")
    assert "predicted on the H100" in out
    heads = [line for line in out.splitlines() if line.startswith("double grid")]
    assert len(heads) == 1 and "(x2: " in heads[0] and "-bound" in heads[0]
    assert "autotuned: 2 configurations, by predicted time:" in out
    assert out.count("<- chosen") == 1
    assert "total: 2 launches" in out


def test_predict_of_a_script_whose_first_launch_fails(tmp_path, capsys):
    """The kernel's error is reported, and the report does not claim that nothing was
    launched."""
    script = tmp_path / "oob.py"
    script.write_text(PREDICT_SCRIPT.replace("mask=i < n) * 2, mask=i < n)", ") * 2)")
                      .replace("x.numel())\n", "x.numel() - 1)\n")
                      .replace("x = torch.randn(1 << 16", "x = torch.randn((1 << 16) - 1"))
    assert main(["predict", str(script)]) != 0
    captured = capsys.readouterr()
    assert "OutOfBoundsError" in captured.err + captured.out
    assert "no launch completed before the script stopped" in captured.out
    assert "launched no kernel" not in captured.out


def test_predict_errors_are_one_line(tmp_path, capsys):
    assert main(["predict", str(tmp_path / "missing.py")]) == 2
    one_error_line(capsys.readouterr().err, "tritonlab predict")
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    assert main(["predict", "--gpu", "A100", str(script)]) == 2
    assert "no fitted constants for A100" in one_error_line(capsys.readouterr().err,
                                                            "tritonlab predict")
