"""A newcomer's path without surprises: the messages, numbers and files that the
README's commands and the lectures produce, checked as a newcomer sees them (the text printed,
the exit code, the files written, the figure drawn, stderr left clean)."""
import csv
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tritonlab import bench, compilation
from tritonlab import hardware as hw
from tritonlab.bench.compare import describe_exponent
from tritonlab.bench.export import meta_path
from tritonlab.cli import main
from tritonlab.cli.lecture import DEFAULT_OUT, _match, available_lectures, output_dir
from tritonlab.profile import count_ops, profile
from tritonlab.units import format_bytes, format_flops, format_time

LECTURES = Path(__file__).resolve().parents[2] / "lectures"


# --- 1. the roofline: one definition of the bound for its label, its time and its intensity

def launch(read, written, unique, flops):
    """What hw.roofline reads of a minitriton launch record."""
    return SimpleNamespace(bytes_read=read, bytes_written=written, unique_bytes=unique,
                           dot_flops=flops)


# minitriton's counts for matmul --shape 1024x1024x1024 --dtype bf16 (64x64 tiles)
MATMUL_1024 = launch(67_108_864, 2_097_152, 6_291_456, 2 * 1024 ** 3)


def test_matmul_1024_bf16_on_h100_is_compute_bound_at_its_compute_time():
    r = hw.roofline(MATMUL_1024, "H100", "bf16")
    # 2.147 GFLOP / 989.4 TFLOP/s = 2.17 us > 6.29 MB / 3.35 TB/s = 1.88 us
    assert r.bound == "compute" and r.intensity > r.ridge
    assert r.predicted[0] == pytest.approx(2 * 1024 ** 3 / 989.4e12)
    assert r.bound_without_reuse == "memory"  # 69.2 MB / 3.35 TB/s = 20.7 us
    assert str(r) == (
        "H100-SXM5-80GB, bf16: 69.2 MB moved, 6.29 MB unique, 2.15 GFLOP, 341 FLOP per unique "
        "byte (ridge 295): compute-bound, at least 2.17 µs (compute 2.17 µs > memory 1.88 µs, "
        "1.16x); up to 20.7 µs if nothing is reused from cache (then memory-bound)")


@pytest.mark.parametrize("record", [
    MATMUL_1024,
    launch(3 * 4 << 16, 4 << 16, 4 * 4 << 16, 0),  # add: no FLOPs at all
    launch(10 ** 6, 10 ** 6, None, 10 ** 9),  # no footprint recorded: total traffic decides
    launch(10 ** 9, 10 ** 6, 10 ** 7, 10 ** 10),  # compute-bound only thanks to the cache
])
@pytest.mark.parametrize("gpu, dtype", [("H100", "bf16"), ("A100", "fp32"), ("L4", "tf32")])
def test_label_time_and_intensity_come_from_the_same_bytes(record, gpu, dtype):
    r = hw.roofline(record, gpu, dtype)
    compute_wins = r.time_compute > r.time_memory_bound
    assert (r.bound == "compute") == compute_wins == (r.intensity > r.ridge)
    assert r.predicted[0] == max(r.time_memory_bound, r.time_compute)
    assert f"{r.bound}-bound, at least {format_time(r.predicted[0])} (" in str(r)


def test_roofline_command_prints_the_compute_bound(capsys):
    """The CLI on a compute-bound case cheap to simulate (the A100's ridge is lower than the
    H100's, so 512^3 is already compute-bound there)."""
    assert main(["roofline", "matmul", "--shape", "512x512x512", "--gpu", "A100",
                 "--dtype", "bf16"]) == 0
    out = capsys.readouterr().out
    assert "unique 1,572,864 B, 268,435,456 FLOP (simulated)" in out
    assert "compute-bound, at least 860 ns (compute 860 ns > memory 771 ns, 1.12x)" in out


def test_roofline_of_a_tiny_shape_prints_units_that_fit(capsys):
    assert main(["roofline", "add", "--shape", "8"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == ["  H100-SXM5-80GB, fp32: 96 B moved, 96 B unique, no tl.dot FLOPs (ridge "
                         "20): memory-bound, at least 0.0287 ns (bytes / bandwidth)",
                         "  coverage of out_ptr: 8 of 8 written"]


# --- 2. compile-report counts the kernels Inductor generated, by kind

CPP_SOURCE = """
cpp_fused_add_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''
extern "C" void kernel(const float* in_ptr0, float* out_ptr0) {}
''')
cpp_fused_gelu_1 = async_compile.cpp_pybinding(['float*'], r'''...''')
def call(args):
    cpp_fused_add_0(arg0_1, buf0)
    extern_kernels.addmm(arg1_1, buf0, arg2_1, out=buf1)
    cpp_fused_gelu_1(buf1)
"""
TRITON_SOURCE = """
triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', '''
@triton.jit
def triton_poi_fused_add_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    pass
''', device_str='cuda')
"""


def test_count_kernels_by_kind():
    assert compilation.count_kernels([CPP_SOURCE]) == {"C++": 2}
    assert compilation.count_kernels([TRITON_SOURCE, CPP_SOURCE]) == {"Triton": 1, "C++": 2}
    assert compilation.count_kernels(["def call(args): pass"]) == {}
    assert compilation.describe_kernels({"C++": 3}) == "3 C++ kernels"
    assert compilation.describe_kernels({"Triton": 1, "C++": 2}) == \
        "1 Triton kernel and 2 C++ kernels"
    assert compilation.describe_kernels({}) == "no kernels"


@pytest.mark.skipif(torch.cuda.is_available(), reason="the C++ kernels of Inductor on a CPU")
def test_compile_report_code_on_the_cpu_counts_its_cpp_kernels(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "newcomer_target.py").write_text(
        "import torch\n\ndef f(x):\n    return torch.relu(x * 2 + 1).sum(-1) + x.mean()\n")
    assert main(["compile-report", "newcomer_target:f", "--shapes", "8x16", "--code",
                 "gen.py"]) == 0
    message = capsys.readouterr().out.splitlines()[-1]
    kernels = set(re.findall(r"^(cpp_fused_\w+) = ", (tmp_path / "gen.py").read_text(), re.M))
    assert kernels  # Inductor fused the element-wise work into C++ kernels
    plural = "" if len(kernels) == 1 else "s"
    assert message == f"generated code: gen.py ({len(kernels)} C++ kernel{plural})"


# --- 3. and 4. lecture selection, and where the lectures write their files

@pytest.mark.parametrize("name", ["2", "02", "02_triton_elementwise",
                                  "02_triton_elementwise.py", "lectures/02_triton_elementwise.py",
                                  "elementwise", "02_triton"])
def test_a_lecture_by_number_or_script_name(name):
    lectures = available_lectures()
    assert _match(name, lectures) == [lectures["02_triton_elementwise"]]


@pytest.fixture
def fake_lectures(tmp_path, monkeypatch):
    """Two quick lecture scripts; the second writes a file where the lectures write theirs."""
    folder = tmp_path / "lectures"
    folder.mkdir()
    (folder / "01_first.py").write_text("print('first ran')\n")
    (folder / "02_writes.py").write_text(
        "from tritonlab.cli.lecture import output_dir\n"
        "path = output_dir() / 'x.txt'\npath.write_text('x')\nprint('wrote', path)\n")
    monkeypatch.setenv("TRITONLAB_LECTURES", str(folder))
    monkeypatch.delenv("TRITONLAB_OUT", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("name", ["2", "02", "02_writes", "02_writes.py"])
def test_lecture_command_runs_one_by_number_or_name(fake_lectures, capsys, name):
    assert main(["lecture", name]) == 0
    out = capsys.readouterr().out
    assert "=== 02_writes ===" in out and "first ran" not in out


def test_lecture_number_that_does_not_exist_is_a_user_error(fake_lectures, capsys):
    assert main(["lecture", "7"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "tritonlab lecture: error: lecture '7' matches none of: 01_first, 02_writes"]


def test_lectures_write_into_tritonlab_out_by_default(fake_lectures, capsys):
    assert main(["lecture", "2"]) == 0
    assert (fake_lectures / DEFAULT_OUT / "x.txt").read_text() == "x"
    assert not (fake_lectures / "out").exists()
    assert f"wrote {DEFAULT_OUT}/x.txt" in capsys.readouterr().out


def test_lecture_out_flag_and_environment_choose_the_folder(fake_lectures, monkeypatch):
    assert main(["lecture", "2", "--out", str(fake_lectures / "mine")]) == 0
    assert (fake_lectures / "mine" / "x.txt").exists()
    monkeypatch.setenv("TRITONLAB_OUT", str(fake_lectures / "env"))
    assert output_dir() == fake_lectures / "env" and output_dir().is_dir()


@pytest.mark.parametrize("script", ["01_benchmarking_profiling.py", "06_torch_compile.py"])
def test_the_lectures_that_write_files_use_the_output_folder_and_say_where(script):
    # each writes plots, CSV, a trace or generated code (02-05 write nothing)
    source = (LECTURES / script).read_text()
    assert "out_dir = output_dir()" in source and '"out"' not in source
    assert 'print(f"files: {out_dir.resolve()} (choose with --out DIR or TRITONLAB_OUT)' in source
    for other in sorted(LECTURES.glob("0[2-5]_*.py")):
        assert "write_text" not in other.read_text() and "savefig" not in other.read_text()


# --- 5. text: plurals, exponents, units, the occupancy limits

@pytest.mark.parametrize("blocks, per_sm, text", [
    (132, 1, "132 blocks, 132 per wave: 1 full wave, no tail (1 wave, 0% of the SM time idle)"),
    (133, 1, "133 blocks, 132 per wave: 1 full wave + a tail of 1 block (2 waves, 50% of the SM "
             "time idle)"),
    (1, 1, "1 block, 132 per wave: 0 full waves + a tail of 1 block (1 wave, 99% of the SM time "
           "idle)"),
    (300, 2, "300 blocks, 264 per wave: 1 full wave + a tail of 36 blocks (2 waves, 43% of the "
             "SM time idle)"),
])
def test_waves_text(blocks, per_sm, text):
    assert str(hw.waves(blocks, per_sm, "H100")) == text


def test_occupancy_command_prints_the_limits_as_text(capsys):
    assert main(["occupancy", "--threads", "256", "--registers", "96", "--shared", "49152"]) == 0
    assert capsys.readouterr().out == (
        "2 blocks/SM, 16 warps, occupancy 25% (limited by registers; blocks per SM each "
        "resource allows: registers 2, shared memory 4, threads 8, warps 8, blocks 32)\n")


@pytest.mark.parametrize("n, text", [(0, "0 B"), (96, "96 B"), (999, "999 B"),
                                     (1000, "1 KB"), (51_856, "51.9 KB"),
                                     (6_291_456, "6.29 MB"), (69_206_016, "69.2 MB"),
                                     (999_999, "1 MB"), (2.5e9, "2.5 GB")])
def test_format_bytes(n, text):
    assert format_bytes(n) == text


@pytest.mark.parametrize("seconds, text", [(0, "0 ns"), (2.87e-11, "0.0287 ns"),
                                           (15.5e-9, "15.5 ns"), (2.17e-6, "2.17 µs"),
                                           (999.99e-6, "1 ms"), (0.0123, "12.3 ms"),
                                           (5.46, "5.46 s"), (75.0, "75 s")])
def test_format_time(seconds, text):
    assert format_time(seconds) == text


def test_format_flops():
    assert (format_flops(2 * 64 ** 3), format_flops(2 * 1024 ** 3)) == ("524 kFLOP",
                                                                         "2.15 GFLOP")


def sweep_of(sizes, medians):
    return bench.Sweep(list(sizes), [bench.BenchResult([m * 0.9, m, m * 1.1], "cpu", 1)
                                     for m in medians])


def test_growth_exponent_of_equal_or_tiny_times_reads_flat():
    sw = sweep_of([64, 256, 1024], [1e-5, 0.99e-5, 0.99e-5 * 4 ** 3])
    e = sw.exponents()
    assert e[0] < 0 and [describe_exponent(x) for x in e] == ["flat", "~n^3.0"]
    assert describe_exponent(-0.0) == "flat" and describe_exponent(None) == "n/a"
    equal = sweep_of([8, 16], [2e-6, 2e-6]).exponents()
    assert equal == [0.0] and math.copysign(1, equal[0]) == 1  # never "-0.0"
    assert sweep_of([8, 16], [0.0, 1e-6]).exponents() == [None]  # below the clock's resolution
    table = sw.table()
    assert list(table.columns[-1]._cells) == ["", "flat", "~n^3.0"]
    assert list(table.columns[1]._cells) == ["10 µs", "9.9 µs", "634 µs"]


def test_bench_and_pitfall_texts_use_adaptive_units():
    r = bench.BenchResult([2e-6, 3e-6, 4e-6], "cpu", 1, label="tiny")
    assert str(r) == "tiny: median 3 µs (p20 2.4 µs, p80 3.6 µs; 3 trials on cpu)"
    p = bench.Pitfall("no warm-up", 0.25, 1.5e-4, "why")
    assert str(p) == "no warm-up: wrong 250 ms, right 150 µs (ratio 1.67e+03). why"


# --- 6. CSV export: a plain CSV, the metadata beside it

def test_csv_starts_with_its_header_and_keeps_metadata_in_a_sidecar(tmp_path):
    sw = sweep_of([8, 16], [1e-6, 2e-6])
    sw.export(tmp_path / "x.csv")
    with open(tmp_path / "x.csv", newline="") as f:
        first = next(csv.reader(f))
    assert first == list(sw.rows()[0])  # the header, not a comment line
    with open(tmp_path / "x.csv", newline="") as f:
        assert [row["n"] for row in csv.DictReader(f)] == ["8", "16"]
    assert meta_path(tmp_path / "x.csv") == tmp_path / "x.meta.json"
    meta = json.loads((tmp_path / "x.meta.json").read_text())
    assert meta["torch"] == torch.__version__ and "date" in meta
    rows, read_meta = bench.read_csv(tmp_path / "x.csv")
    assert [r["n"] for r in rows] == [8, 16] and read_meta == meta


def test_read_csv_still_reads_the_older_comment_lines(tmp_path):
    (tmp_path / "old.csv").write_text("# torch: 2.5.0\n# date: 2026-01-01\nn,median_s\n8,1e-06\n")
    assert bench.read_csv(tmp_path / "old.csv") == ([{"n": 8, "median_s": 1e-06}],
                                                    {"torch": "2.5.0", "date": "2026-01-01"})


# --- 7. a one-point plot: sensible ticks, no legend entry for a line that is not drawn

def test_one_point_plot_has_decade_ticks_and_only_what_is_drawn():
    import matplotlib.pyplot as plt
    fig = sweep_of([256], [2.2e-5]).figure()
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["median time"]
    labelled = [line.get_label() for line in ax.get_lines() if line.get_label()[0] != "_"]
    assert labelled == ["median time"] and len(ax.texts) == 0  # no reference line, no slope label
    lo, hi = ax.get_ylim()
    assert hi / lo >= 100  # a decade either side of the point, not a zoom onto it
    ticks = [t for t in ax.get_yticks() if lo <= t <= hi]
    assert ticks and all(math.log10(t) == round(math.log10(t)) for t in ticks)
    plt.close(fig)


def test_several_points_keep_the_band_the_slopes_and_the_reference():
    import matplotlib.pyplot as plt
    fig = sweep_of([64, 128, 256], [1e-5, 1e-5, 8e-5]).figure()
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "median time", "p20-p80", "n^3 (for reference)"]
    assert [t.get_text() for t in ax.texts] == ["flat", "~n^3.0"]
    plt.close(fig)


# --- 8. stderr: the profiler's chatter and Dynamo's logs of what tritonlab reports itself

def test_profile_and_count_ops_leave_stderr_to_real_warnings(capfd):
    x = torch.randn(64, 64)

    def fn():
        os.write(2, b"a real warning\n")  # written to fd 2 while the profiler runs
        return x * 2

    profile(fn, warmup=0)
    count_ops(fn)
    err = capfd.readouterr().err
    assert "USDT" not in err and "profiler_st" not in err
    assert err == "a real warning\n" * 2


def test_profile_command_prints_nothing_to_stderr():
    done = subprocess.run([sys.executable, "-m", "tritonlab", "profile", "gelu-manual", "--size",
                           "32"], capture_output=True, text=True, check=True)
    assert done.stderr == "" and "operators per call: 9 (6 aten::mul, 2 aten::add, 1 aten::tanh)" \
        in done.stdout


def with_item(x):
    y = x * 2
    if y.sum().item() > 0:
        y = y + 1
    return y * 3


def test_dynamo_logs_what_compilation_reports_only_when_asked(capfd, monkeypatch):
    monkeypatch.delenv("TORCH_LOGS", raising=False)
    # Dynamo warns about .item() once per process: forget that it did, so that it would again
    warn = getattr(torch._dynamo.variables.tensor.TensorVariable,
                   "_warn_capture_scalar_outputs", None)
    if hasattr(warn, "cache_clear"):
        warn.cache_clear()
    r = compilation.explain(with_item, torch.randn(16))
    plain = compilation.count_compiles(lambda x: (x * 2).sum(),
                                       [torch.randn(n) for n in (100, 117)])
    assert r.graph_breaks == 1 and "item()" in r.break_reasons[0]
    assert "size mismatch" in plain.reasons[0]  # still collected
    assert capfd.readouterr().err == ""
