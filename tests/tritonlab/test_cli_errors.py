"""Issue 34, the command line: a newcomer's mistake is one line on stderr and exit code 2, checked
before anything runs; nonsense values are refused; `roofline` reports the configuration an
autotuned kernel chose; noisy timings say so."""
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tritonlab import bench
from tritonlab import hardware as hw
from tritonlab.cli import hardware as cli_hardware
from tritonlab.cli import main
from tritonlab.cli.options import backend_problem

LECTURES = Path(__file__).resolve().parents[2] / "lectures"
HAS_TRITON = importlib.util.find_spec("triton") is not None


def one_error_line(err, prefix):
    """The single stderr line of a user error: `<prefix>: error: ...`, no traceback."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{prefix}: error: "), err
    return lines[0]


def refused(capsys, argv, command):
    """Run the CLI with argv; the error line of a refusal (argparse's or a handler's), after
    checking that nothing ran (nothing on stdout) and that the code is 2."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return one_error_line(captured.err, f"tritonlab {command}")


# --- Broken: a traceback before

def test_compile_report_says_how_many_arguments_the_function_takes(capsys, monkeypatch,
                                                                     tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # compile-report puts the cwd first
    (tmp_path / "arity_target.py").write_text(textwrap.dedent("""
        def fn(x):
            return 2 * x
        def maybe(x, y=None):
            return x
        def scaled(x, *, scale):
            return x * scale
    """))
    cases = [
        (["arity_target:fn", "--shapes", "8x16", "8x16"],
         "arity_target:fn takes 1 argument but --shapes gave 2 shapes (one shape per tensor "
         "argument)"),
        (["arity_target:maybe", "--shapes", "4", "4", "4"],
         "arity_target:maybe takes 1 to 2 arguments but --shapes gave 3 shapes"),
        (["arity_target:scaled", "--shapes", "4"],
         "arity_target:scaled also needs the keyword-only argument(s) scale, which --shapes "
         "cannot give"),
    ]
    for argv, message in cases:
        assert message in refused(capsys, ["compile-report", *argv], "compile-report")


@pytest.mark.parametrize("argv, message", [
    (["bench", "gelu", "--sizes", "64", "--plot", "/nonexistent/dir/x.png"],
     "argument --plot: /nonexistent/dir/x.png: there is no folder /nonexistent/dir"),
    (["bench", "gelu", "--sizes", "64", "--plot", "out.txt"],
     "argument --plot: out.txt: '.txt' is not a format the picture can be saved in; end the "
     "name with .png or another of "),
    (["bench", "gelu", "--sizes", "64", "--plot", "plot"],
     "argument --plot: plot: the name has no suffix to say the picture's format; end the name "
     "with .png or another of "),
    (["bench", "gelu", "--csv", "/nonexistent/dir/x.csv"], "argument --csv: /nonexistent/dir/"),
    (["bench", "gelu", "--json", "/nonexistent/dir/x.json"], "argument --json: /nonexistent/"),
    (["profile", "gelu", "--size", "64", "--csv", "/nonexistent/dir/x.csv"],
     "argument --csv: /nonexistent/dir/x.csv: there is no folder /nonexistent/dir"),
    (["profile", "gelu", "--trace", "/nonexistent/dir/t.json"], "argument --trace: "),
    (["compile-report", "m:f", "--shapes", "4", "--code", "/nonexistent/dir/k.py"],
     "argument --code: "),
])
def test_output_files_are_checked_before_anything_runs(capsys, argv, message):
    assert message in refused(capsys, argv, argv[0])


def test_an_output_file_that_is_a_folder_is_refused(capsys, tmp_path):
    assert refused(capsys, ["bench", "gelu", "--plot", str(tmp_path)], "bench").endswith(
        f"argument --plot: {tmp_path} is a folder; name a file in it")


def test_bench_writes_a_plot_in_another_format(capsys, tmp_path):
    assert main(["bench", "gelu", "--sizes", "8", "--trials", "2", "--warmup", "0",
                 "--plot", str(tmp_path / "g.svg")]) == 0
    assert (tmp_path / "g.svg").read_text().lstrip().startswith("<?xml")


@pytest.mark.skipif(HAS_TRITON, reason="needs a machine without triton")
@pytest.mark.parametrize("backend", ["triton", "interpret"])
@pytest.mark.parametrize("argv", [["info"], ["roofline", "add", "--shape", "8"]])
def test_a_backend_that_cannot_run_here_is_one_line_and_code_2(backend, argv):
    """TRITONLAB_BACKEND is read when the backend is first imported: in a fresh process.
    `info` checks first; other commands fail on the import, and main says the same."""
    env = dict(os.environ, TRITONLAB_BACKEND=backend)
    done = subprocess.run([sys.executable, "-m", "tritonlab", *argv], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 2
    line = one_error_line(done.stderr, f"tritonlab {argv[0]}")
    assert f"TRITONLAB_BACKEND={backend} asks for " in line
    assert line.endswith("but triton is not installed here; unset it (or set it to sim) to run "
                         "the kernels on minitriton, the simulator, or install triton")


def test_backend_problem_names_what_is_missing(monkeypatch):
    import torch
    monkeypatch.delenv("TRITONLAB_BACKEND", raising=False)
    assert backend_problem() is None
    for name in ("sim", "bogus"):  # bogus: backend.py's own BackendError says so
        monkeypatch.setenv("TRITONLAB_BACKEND", name)
        assert backend_problem() is None
    # triton installed, no CUDA: the interpreter runs, real Triton cannot
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("TRITONLAB_BACKEND", "interpret")
    assert backend_problem() is None
    monkeypatch.setenv("TRITONLAB_BACKEND", "triton")
    assert backend_problem() == (
        "TRITONLAB_BACKEND=triton asks for real Triton on a CUDA GPU, but CUDA is not available "
        "here (torch.cuda.is_available() is False); TRITONLAB_BACKEND=interpret runs Triton's "
        "interpreter on the CPU, or unset it (or set it to sim) to run the kernels on "
        "minitriton, the simulator")


# --- Accepted nonsense before

@pytest.mark.parametrize("argv, message", [
    (["occupancy", "--threads", "256", "--registers", "32", "--shared", "-5"],
     "argument --shared: '-5' is not an integer of 0 or more"),
    (["occupancy", "--threads", "256", "--registers", "-4"],
     "argument --registers: '-4' is not a positive integer"),
    (["occupancy", "--threads", "256", "--registers", "0"],
     "argument --registers: '0' is not a positive integer"),
    (["occupancy", "--threads", "0", "--registers", "32"],
     "argument --threads: '0' is not a positive integer"),
    (["bench", "gelu", "--warmup", "-1"], "argument --warmup: '-1' is not an integer of 0 or more"),
    (["profile", "gelu", "--limit", "0"], "argument --limit: '0' is not a positive integer"),
    (["waves", "--blocks", "-3"], "argument --blocks: '-3' is not an integer of 0 or more"),
    (["viz", "script.py", "--limit", "0"], "argument --limit: '0' is not a positive integer"),
    (["viz", "script.py", "--max-launches", "-1"],
     "argument --max-launches: '-1' is not a positive integer"),
])
def test_nonsense_values_are_refused(capsys, argv, message):
    assert refused(capsys, argv, argv[0]).endswith(message)


def test_waves_checks_blocks_per_sm_against_the_gpu(capsys):
    assert refused(capsys, ["waves", "--blocks", "100", "--blocks-per-sm", "100", "--gpu", "L4"],
                   "waves").endswith("100 blocks per SM: L4 holds 1 to 24 resident blocks per SM")
    assert main(["waves", "--blocks", "100", "--blocks-per-sm", "24", "--gpu", "L4"]) == 0
    assert "100 blocks, 1392 per wave" in capsys.readouterr().out  # 58 SMs x 24
    with pytest.raises(ValueError, match="33 blocks per SM: H100-SXM5-80GB holds 1 to 32"):
        hw.waves(10, 33, "H100")


def test_the_occupancy_model_refuses_negative_resources():
    with pytest.raises(ValueError, match="-5 bytes of shared memory per block"):
        hw.occupancy(256, 32, -5, "H100")
    with pytest.raises(ValueError, match="-4 registers per thread"):
        hw.occupancy(256, -4, 0, "H100")


def test_roofline_of_an_empty_shape_is_refused(capsys):
    assert refused(capsys, ["roofline", "softmax", "--shape", "0x5"], "roofline").endswith(
        "shape '0x5': every dimension must be at least 1 (a tensor with no elements launches "
        "no kernel)")


def test_a_lecture_script_refuses_an_unknown_option(tmp_path):
    """`--outt` (a typo of --out) used to be ignored, and the files went to ./tritonlab-out."""
    done = subprocess.run([sys.executable, str(LECTURES / "02_triton_elementwise.py"),
                           "--outt", str(tmp_path / "mine")], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"02_triton_elementwise.py: error: unrecognized arguments: --outt {tmp_path / 'mine'}"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("lecture", sorted(p.name for p in LECTURES.glob("0*.py")))
@pytest.mark.parametrize("backend", ["bogus", "triton"])
def test_a_lecture_script_with_a_backend_that_cannot_run_is_one_line(lecture, backend, tmp_path):
    """Run directly (`python lectures/NN.py`), a lecture checks TRITONLAB_BACKEND before it
    imports the backend, whose import would fail with a traceback."""
    if backend == "triton" and HAS_TRITON:
        pytest.skip("needs a machine without triton")
    done = subprocess.run([sys.executable, str(LECTURES / lecture)], cwd=tmp_path,
                          env=dict(os.environ, TRITONLAB_BACKEND=backend),
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    line = one_error_line(done.stderr, lecture)
    assert f"TRITONLAB_BACKEND={backend!r}: choose one of" in line if backend == "bogus" else \
        "but triton is not installed here" in line


def test_a_lecture_script_has_help_and_takes_out_only_where_it_writes(tmp_path):
    done = subprocess.run([sys.executable, str(LECTURES / "07_flash_attention.py"), "--help"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and "FlashAttention-2" in done.stdout
    assert "--out" not in done.stdout  # lecture 07 writes no files
    source = (LECTURES / "07_flash_attention.py").read_text()
    assert "lecture_options(__file__, __doc__, writes_files=False)" in source
    for script in sorted(LECTURES.glob("0[1-6]_*.py")):
        assert re.search(r"^lecture_options\(__file__, __doc__\)(  #.*)?$", script.read_text(),
                         re.M), script.name


# --- roofline: the chosen configuration of an autotuned kernel, the trials on request

AUTOTUNED = textwrap.dedent("""
    from tritonlab.backend import triton, tl

    @triton.autotune(configs=[triton.Config({"BLOCK": 16}, num_warps=2),
                              triton.Config({"BLOCK": 64}, num_warps=4),
                              triton.Config({"BLOCK": 32}, num_warps=4)], key=["n"])
    @triton.jit
    def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    def copy(x):
        y = x.new_empty(x.shape)
        copy_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
        return y
""")


@pytest.fixture
def autotuned_kernel(tmp_path, monkeypatch, request):
    """`roofline add` runs a fresh module's autotuned copy kernel (3 configurations)."""
    name = f"autotuned_copy_{request.node.name.replace('[', '_').replace(']', '')}"
    (tmp_path / f"{name}.py").write_text(AUTOTUNED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli_hardware.ROOFLINE_KERNELS, "add",
                        (name, lambda m, s, r: m.copy(r(s))))


def test_roofline_reports_the_chosen_configuration_only(autotuned_kernel, capsys):
    assert main(["roofline", "add", "--shape", "100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if "copy_kernel: grid" in line] == [
        "copy_kernel: grid (7,), read 400 B, written 400 B, unique 800 B, 0 FLOP (simulated)"]
    # every configuration moves the same bytes: the tie goes to the first, as in minitriton
    assert lines[-1] == ("  autotuned: this is the configuration chosen (BLOCK=16, num_warps=2, "
                         "num_stages=3) of 3 tried; --all-configs prints the bound of each")


def test_roofline_all_configs_prints_each_trial(autotuned_kernel, capsys):
    assert main(["roofline", "add", "--shape", "100", "--all-configs"]) == 0
    out = capsys.readouterr().out
    assert out.count("copy_kernel: grid") == 4  # the chosen one, then the 3 trials
    assert "copy_kernel: the 3 configurations the autotuner tried" in out
    labels = [line for line in out.splitlines() if line.startswith("- ")]
    assert labels == ["- BLOCK=16, num_warps=2, num_stages=3 (chosen)",
                      "- BLOCK=64, num_warps=4, num_stages=3",
                      "- BLOCK=32, num_warps=4, num_stages=3"]


def test_roofline_matmul_prints_one_verdict(capsys):
    """Above tune_above (2^27 multiply-adds) the matmul autotunes over 8 configurations; the
    report is the chosen one's (it printed nine verdicts before). Two of them differ only in
    num_warps and num_stages, which share one trial launch."""
    assert main(["roofline", "matmul", "--shape", "512x528x512"]) == 0
    out = capsys.readouterr().out
    assert out.count("compute-bound, at least") == 1
    assert out.count("matmul_kernel: grid") == 1
    assert ("of 8 configurations (7 trial launches: those that differ only in num_warps and "
            "num_stages share one); --all-configs prints the bound of each") in out


def test_roofline_of_a_kernel_that_is_not_autotuned_says_so_with_all_configs(capsys):
    assert main(["roofline", "softmax", "--shape", "4x5", "--all-configs"]) == 0
    out = capsys.readouterr().out
    assert out.count("softmax_rows_kernel: grid") == 1 and "autotuned" not in out
    assert out.endswith("(no autotuning ran: softmax at this shape launches one "
                        "configuration)\n")


# --- Confusing before

def test_viz_without_a_script_does_not_call_arg_required(capsys):
    assert refused(capsys, ["viz"], "viz") == (
        "tritonlab viz: error: give the script to run: tritonlab viz KERNEL_SCRIPT [ARG ...] "
        "(tritonlab viz --help says more)")


@pytest.mark.parametrize("text", ["abc", "-1", "1,x", "1,2,3,4", ""])
def test_viz_program_that_is_not_a_program_id(capsys, text):
    assert refused(capsys, ["viz", "script.py", "--program", text], "viz").endswith(
        f"argument --program: {text!r} is not a program id; give a linear id (e.g. 5) or one per "
        "grid axis (e.g. 1,2)")


@pytest.mark.parametrize("text, pid", [("5", 5), ("1,2", (1, 2)), ("(1, 2)", (1, 2))])
def test_viz_program_ids(text, pid):
    from tritonlab.cli import build_parser
    assert build_parser().parse_args(["viz", "s.py", "--program", text]).program == pid


def test_noisy_timings_say_so():
    quiet = bench.BenchResult([1.0e-3, 1.01e-3, 1.02e-3, 1.0e-3, 1.01e-3], "cpu", 1, label="n=8")
    noisy = bench.BenchResult([1e-3, 1e-3, 3e-3, 3e-3, 3e-3], "cpu", 1, label="n=64")
    assert quiet.spread < 1.1 and noisy.spread == pytest.approx(3.0)
    assert bench.noise_warning(quiet.spread) == ""
    assert bench.Pitfall("no warm-up", 2e-3, 1e-3, "why", quiet.spread).__str__().endswith("why")
    text = str(bench.Pitfall("no warm-up", 1e-3, 2e-3, "why", noisy.spread))
    assert text.endswith("why Noisy: p80/p20 of the timings is 3 (over 1.5), so other work on "
                         "this machine is in them and they may contradict the lesson; run again "
                         "on an idle machine.")
    assert bench.Sweep([8, 64], [quiet, noisy]).table().caption == (
        "Noisy: p80/p20 3 at n=64. Other work on this machine is in these times; run again "
        "when it is idle.")
    assert bench.Sweep([8], [quiet]).table().caption is None
    comparison = bench.Comparison({"a": quiet, "b": noisy}, "a")
    assert comparison.table().caption.startswith("Noisy: p80/p20 3 at n=64.")
