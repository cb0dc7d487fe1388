"""`python -m minitriton script.py`: unmodified Triton programs on the CPU.

Each test writes a small program under tmp_path and runs it, in a subprocess as a user would
(`run`) or, where what matters is not the process, in this one through `runner.run`
(`run_here`, faster); the programs print what they saw and the tests read it back. Programs
that need torch skip where torch is missing (minitriton's own tests run without it)."""
import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import minitriton
from minitriton import runner
from minitriton.runtime import gpus

PYPROJECT = Path(__file__).resolve().parents[2] / "packages" / "minitriton" / "pyproject.toml"


def run(tmp_path, source, *args, runner_args=(), name="script.py"):
    script = tmp_path / name
    script.write_text(textwrap.dedent(source))
    return subprocess.run([sys.executable, "-m", "minitriton", *runner_args, str(script), *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)


def run_here(tmp_path, capsys, source, *args, **options):
    """(exit status, stdout, stderr) of the program run by runner.run in this process."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    rc = runner.run(str(script), args, **options)
    out = capsys.readouterr()
    return rc, out.out, out.err


NUMPY_ADD = """
    import sys
    import numpy as np
    import triton
    import triton.language as tl
    import minitriton

    @triton.jit
    def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)  # read 2N; write N
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(output_ptr + offsets, x + y, mask=mask)

    x, y = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    out = np.empty_like(x)
    add_kernel[(triton.cdiv(1000, 256),)](x, y, out, 1000, BLOCK_SIZE=256)
    assert np.array_equal(out, x + y)
    print(triton.__version__, minitriton.__version__, "torch" in sys.modules, sys.argv[1:])
"""


def test_a_numpy_program_runs_without_importing_torch(tmp_path):
    done = run(tmp_path, NUMPY_ADD, "a", "--gpu", "b")  # options after the script are its own
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().split(maxsplit=3) == ["3.6.0", minitriton.__version__,
                                             "False", "['a', '--gpu', 'b']"]


def test_triton_version_option(tmp_path, capsys):
    rc, out, _ = run_here(tmp_path, capsys, "import triton; print(triton.__version__)",
                          triton_version="3.4.0")
    assert (rc, out) == (0, "3.4.0\n")


DRIVER = """
    import json
    import triton
    from triton.runtime import driver
    from triton.backends.compiler import GPUTarget
    from triton.compiler import CompilationError
    import triton.runtime.driver, triton.runtime.jit, triton.runtime.autotuner
    import triton.tools.tensor_descriptor, triton.language.math, triton.language.core
    active = triton.runtime.driver.active
    t = active.get_current_target()
    assert isinstance(t, GPUTarget) and driver is triton.runtime.driver
    print(json.dumps({"backend": t.backend, "arch": t.arch, "warp": t.warp_size,
                      "device": active.get_current_device(),
                      "props": active.utils.get_device_properties(None),
                      "backends": triton.backends.backends}))
"""


@pytest.mark.parametrize("gpu, arch, sms", [(None, 90, 132), ("H200", 90, 132),
                                            ("a100", 80, 108), ("B200", 100, 148)])
def test_the_driver_reports_the_emulated_gpu(tmp_path, capsys, gpu, arch, sms):
    rc, out, err = run_here(tmp_path, capsys, DRIVER, **({"gpu": gpu} if gpu else {}))
    assert rc == 0, err
    seen = json.loads(out)
    spec = gpus.gpu(gpu or "H100")
    assert (seen["backend"], seen["arch"], seen["warp"], seen["device"]) == ("cuda", arch, 32, 0)
    assert seen["props"]["multiprocessor_count"] == sms
    assert seen["props"]["max_shared_mem"] == spec.shared_per_block_optin
    assert (seen["props"]["max_num_regs"], seen["props"]["warpSize"]) == (65536, 32)
    assert seen["backends"] == {}


def test_an_unknown_gpu_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit:
        runner.main(["--gpu", "V100", "script.py"])
    assert exit.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_a_module_minitriton_lacks_is_named_in_the_error(tmp_path, capsys):
    rc, _, err = run_here(tmp_path, capsys, "import triton.no_such_module")
    assert rc == 1
    assert "No module named 'triton.no_such_module'" in err and "minitriton.no_such_module" in err


TUTORIAL_01 = """
    import torch
    import triton
    import triton.language as tl

    DEVICE = triton.runtime.driver.active.get_active_torch_device()


    @triton.jit
    def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(output_ptr + offsets, x + y, mask=mask)


    def add(x, y):
        output = torch.empty_like(x)
        assert x.device == DEVICE and y.device == DEVICE and output.device == DEVICE
        n_elements = output.numel()
        grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']), )
        add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
        return output


    torch.manual_seed(0)
    size = 98432
    x = torch.rand(size, device=DEVICE)
    y = torch.rand(size, device=DEVICE)
    print(f'The maximum difference between torch and triton is '
          f'{torch.max(torch.abs(x + y - add(x, y)))}')


    @triton.testing.perf_report(
        triton.testing.Benchmark(
            x_names=['size'], x_vals=[2**i for i in range(12, 15)], x_log=True,
            line_arg='provider', line_vals=['triton', 'torch'], line_names=['Triton', 'Torch'],
            styles=[('blue', '-'), ('green', '-')], ylabel='GB/s',
            plot_name='vector-add-performance', args={}))
    def benchmark(size, provider):
        x = torch.rand(size, device=DEVICE, dtype=torch.float32)
        y = torch.rand(size, device=DEVICE, dtype=torch.float32)
        quantiles = [0.5, 0.2, 0.8]
        if provider == 'torch':
            ms, min_ms, max_ms = triton.testing.do_bench(lambda: x + y, quantiles=quantiles,
                                                         warmup=1, rep=5)
        if provider == 'triton':
            ms, min_ms, max_ms = triton.testing.do_bench(lambda: add(x, y), quantiles=quantiles,
                                                         warmup=1, rep=5)
        gbps = lambda ms: 3 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)
        return gbps(ms), gbps(max_ms), gbps(min_ms)


    benchmark.run(print_data=True, save_path='results')
"""


def test_a_tutorial_style_program_runs_and_benchmarks(tmp_path):
    pytest.importorskip("torch")
    done = run(tmp_path, TUTORIAL_01)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "The maximum difference between torch and triton is 0.0"
    assert lines[1] == "vector-add-performance:"
    assert lines[2].split() == ["size", "Triton", "Torch"]
    assert [line.split()[1] for line in lines[3:]] == ["4096", "8192", "16384"]
    assert (tmp_path / "results" / "vector-add-performance.csv").exists()


TORCH_CUDA = """
    import json
    import torch
    import triton
    props = torch.cuda.get_device_properties(0)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(); end.record()
    torch.cuda.synchronize()
    torch.cuda.set_device(0)
    print(json.dumps({"available": torch.cuda.is_available(), "name": torch.cuda.get_device_name(),
                      "capability": torch.cuda.get_device_capability(), "sms":
                      props.multi_processor_count, "props_name": props.name,
                      "memory": props.total_memory, "current": torch.cuda.current_device(),
                      "elapsed": start.elapsed_time(end),
                      "device": str(triton.runtime.driver.active.get_active_torch_device())}))
"""


def test_torch_cuda_answers_for_the_emulated_gpu(tmp_path, capsys):
    pytest.importorskip("torch")
    rc, out, err = run_here(tmp_path, capsys, TORCH_CUDA, gpu="H200")
    assert rc == 0, err
    seen = json.loads(out)
    assert seen["available"] is False  # no device torch could put tensors on: programs pick cpu
    assert seen["name"] == seen["props_name"] == "NVIDIA H200"
    assert seen["capability"] == [9, 0] and seen["sms"] == 132 and seen["current"] == 0
    assert seen["memory"] == gpus.GPUS["H200"].total_memory
    assert seen["elapsed"] >= 0 and seen["device"] == "cpu"


@pytest.mark.parametrize("line", ["torch.rand(4).cuda()", "torch.rand(4, device='cuda')",
                                  "torch.rand(4).to('cuda')"])
def test_a_cuda_tensor_under_strict_cuda_gets_a_message_that_says_what_to_change(
        tmp_path, capsys, line):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA: with a GPU, torch makes the CUDA tensor")
    rc, _, err = run_here(tmp_path, capsys, f"import torch\n\ndef make():\n    return {line}\n\n"
                          "make()\n", strict_cuda=True)
    assert rc == 1
    assert f"script.py:4: return {line}" in err
    assert "get_active_torch_device()" in err and "device='cpu'" in err
    assert "without --strict-cuda" in err
    assert "not compiled with CUDA" not in err and "Traceback" not in err


def test_the_cuda_message_from_the_command_line(tmp_path):
    pytest.importorskip("torch")
    source = "import torch\nx = torch.zeros(2, device='cuda')\nprint(x.device)\n"
    done = run(tmp_path, source, runner_args=("--strict-cuda",))
    assert done.returncode == 1 and "script.py:2: x = torch.zeros" in done.stderr
    done = run(tmp_path, source)  # by default made on the CPU, which stands for the GPU
    assert done.returncode == 0 and done.stdout.strip() == "cpu", done.stderr


def test_strict_cuda_and_cuda_on_cpu_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exit:
        runner.main(["--strict-cuda", "--cuda-on-cpu", "script.py"])
    assert exit.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_a_torch_cuda_call_without_a_cpu_stand_in_says_what_to_do(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA: with a GPU, torch has a stream to give")
    rc, _, err = run_here(tmp_path, capsys, "import torch\ntorch.cuda.current_stream()\n")
    assert rc == 1 and "script.py:2: torch.cuda.current_stream()" in err
    assert "torch.cuda.current_stream(), which needs a CUDA device" in err
    assert "torch.cuda.is_available()" in err and "Traceback" not in err


def test_no_torch_patch_leaves_torch_alone(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    rc, out, err = run_here(tmp_path, capsys, "import torch\nprint(torch.cuda.Event)",
                            torch_patch=False)
    assert (rc, out.strip()) == (0, str(torch.cuda.Event)), err


def test_an_error_exits_non_zero_with_the_programs_traceback(tmp_path):
    done = run(tmp_path, "def f():\n    raise ValueError('boom')\n\nf()\n")
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback (most recent call last):\n")
    assert 'script.py", line 4, in <module>' in done.stderr
    assert 'script.py", line 2, in f' in done.stderr and "ValueError: boom" in done.stderr
    assert "runner" not in done.stderr.split("ValueError")[0]  # the runner's frames are left out


@pytest.mark.parametrize("code, rc", [("3", 3), ("0", 0), ("None", 0), ("'bye'", 1)])
def test_sys_exit_passes_through(tmp_path, capsys, code, rc):
    assert run_here(tmp_path, capsys, f"import sys\nsys.exit({code})")[0] == rc


def test_the_script_directory_comes_first_on_sys_path(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 42\n")
    sub = tmp_path / "elsewhere"
    sub.mkdir()
    script = tmp_path / "script.py"
    script.write_text("import helper\nprint(helper.VALUE, __name__)\n")
    done = subprocess.run([sys.executable, "-m", "minitriton", str(script)], cwd=sub,
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "42 __main__", done.stderr


def test_minitriton_run_is_the_console_script(tmp_path):
    script = tmp_path / "script.py"
    script.write_text("import sys, triton\nprint(triton.__version__, sys.argv[1:])\n")
    done = subprocess.run([sys.executable, "-c", "import sys; from minitriton.runner import main; "
                           f"sys.exit(main(['run', {str(script)!r}, 'x']))"],
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "3.6.0 ['x']", done.stderr
    if PYPROJECT.exists():  # in the repository, not in an installed wheel's test run
        assert 'minitriton = "minitriton.runner:main"' in PYPROJECT.read_text()


def test_emulated_puts_everything_back():
    before = {name: mod for name, mod in sys.modules.items() if name.split(".")[0] == "triton"}
    with runner.emulated("A100") as triton:
        import triton.types  # found by the finder: minitriton.types under triton's name
        assert triton.__version__ == "3.6.0"
        assert triton.runtime.driver.active.get_current_target().arch == 80
        assert sys.modules["triton.types"] is sys.modules["minitriton.types"]
        assert importlib.util.find_spec("triton") is not None  # how programs probe for Triton
    after = {name: mod for name, mod in sys.modules.items() if name.split(".")[0] == "triton"}
    assert after == before
    assert sys.modules["minitriton.types"].__spec__.name == "minitriton.types"


def test_emulated_restores_torch():
    torch = pytest.importorskip("torch")
    is_available, lazy_init = torch.cuda.is_available, torch.cuda._lazy_init
    with runner.emulated():
        assert torch.cuda.get_device_capability() == (9, 0)
    assert torch.cuda.is_available is is_available and torch.cuda._lazy_init is lazy_init


def test_triton_language_extra_is_minitritons_once_it_exists():
    if importlib.util.find_spec("minitriton.language.extra") is None:
        pytest.skip("minitriton.language.extra is not there yet")
    with runner.emulated():
        from triton.language.extra import libdevice
        import minitriton.language.extra
        assert libdevice is minitriton.language.extra.libdevice


IS_CUDA = """
    import torch
    import triton
    DEVICE = triton.runtime.driver.active.get_active_torch_device()
    x = torch.rand(4, device=DEVICE)
    assert x.is_cuda  # as tutorial 07 checks: the driver's device stands for the GPU here
    print(x.is_cuda, torch.zeros(1).is_cuda, x.device.type)
"""


def test_cpu_tensors_are_cuda_in_the_programs_own_code(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    rc, out, err = run_here(tmp_path, capsys, IS_CUDA)
    assert rc == 0, err
    assert out.split() == ["True", "True", "cpu"]
    assert torch.zeros(1).is_cuda is False  # put back, and never so outside the program
    rc, _, err = run_here(tmp_path, capsys, IS_CUDA, torch_patch=False)
    assert rc == 1 and "AssertionError" in err


TORCH_MATMUL = """
    import numpy as np
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def mm(a, b, c, K: tl.constexpr, BK: tl.constexpr):
        r = tl.arange(0, 32)
        acc = tl.zeros((32, 32), tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(tl.load(a + r[:, None] * K + k + tl.arange(0, BK)[None, :]),
                         tl.load(b + (k + tl.arange(0, BK))[:, None] * 32 + r[None, :]), acc)
        tl.store(c + r[:, None] * 32 + r[None, :], acc.to(tl.float16))

    torch.manual_seed(0)
    a = torch.rand(32, 512, dtype=torch.float16)
    b = torch.rand(512, 32, dtype=torch.float16)
    c = torch.empty(32, 32, dtype=torch.float16)
    mm[(1,)](a, b, c, K=512, BK=64)
    ref = torch.matmul(a, b)
    exact = (a.double() @ b.double()).half()
    print(int((c != ref).sum()), int((c != exact).sum()))
"""


def test_torchs_fp16_matmul_has_the_gpus_numerics(tmp_path, capsys):
    pytest.importorskip("torch")
    rc, out, err = run_here(tmp_path, capsys, TORCH_MATMUL)
    assert rc == 0, err
    differ_from_torch, differ_from_exact = map(int, out.split())
    assert differ_from_torch == 0  # the kernel and torch.matmul: one tensor-core chain
    assert differ_from_exact > 0  # which is not the correctly rounded product
    rc, out, err = run_here(tmp_path, capsys, TORCH_MATMUL, torch_patch=False)
    assert rc == 0 and int(out.split()[0]) > 0, err  # torch's CPU matmul rounds otherwise


SMALL = """
    import triton
    import triton.testing

    calls = []

    @triton.testing.perf_report(triton.testing.Benchmark(
        x_names=["n"], x_vals=[4096, 64, 1024, 16], line_arg="p", line_vals=["a"],
        line_names=["A"], plot_name="p", args={}))
    def bench(n, p):
        return triton.testing.do_bench(lambda: calls.append(n), warmup=1000, rep=1000)

    bench.run(print_data=False)
    print(sorted(set(calls)), len(calls))
"""


def test_small_measures_the_smallest_points_once(tmp_path, capsys):
    rc, out, err = run_here(tmp_path, capsys, SMALL, small=True)
    assert rc == 0, err
    assert out.strip() == "[16, 64] 2"  # the 2 smallest x values, one call each
    rc, out, err = run_here(tmp_path, capsys, SMALL)
    assert rc == 0 and out.startswith("[16, 64, 1024, 4096]"), err


SMALL_SAMPLED = """
    import numpy as np
    import triton
    import triton.language as tl
    import minitriton

    @triton.jit
    def mark(x_ptr):
        tl.store(x_ptr + tl.program_id(0), 1.0)

    seen = []

    @triton.testing.perf_report(triton.testing.Benchmark(
        x_names=["n"], x_vals=[256], line_arg="p", line_vals=["timed", "checked"],
        line_names=["T", "C"], plot_name="p", args={}))
    def bench(n, p):
        x = np.zeros(n, np.float32)
        with minitriton.record() as rec:
            ms = triton.testing.do_bench(lambda: mark[(n,)](x))
        seen.append((p, rec[-1].sampled, int(x.sum())))
        if p == "checked":
            assert x.all(), "not every program ran"  # fails under sampling: runs in full
        return ms

    bench.run(print_data=False)
    x = np.zeros(256, np.float32)
    mark[(256,)](x)  # outside a benchmark point: every program
    print(seen, int(x.sum()))
"""


def test_small_samples_the_programs_of_benchmark_points(tmp_path, capsys):
    """Under --small a benchmark point's launches run 16 programs of their grid; a point
    whose own check fails that way runs again with every program."""
    rc, out, err = run_here(tmp_path, capsys, SMALL_SAMPLED, small=True)
    assert rc == 0, err
    assert out.strip() == ("[('timed', (16, 256), 16), ('checked', (16, 256), 16), "
                           "('checked', None, 256)] 256")


def test_scaling_adds_the_programs_a_sample_left_out():
    """testing.do_bench under --small: a sampled launch counts as its whole grid."""
    import numpy as np

    import minitriton.language as tl
    from minitriton.runtime.launch import sampling, scaling

    @minitriton.jit
    def mark(x_ptr):
        tl.store(x_ptr + tl.program_id(0), 1.0)

    x = np.zeros(100, np.float32)
    with scaling() as extra, sampling(10):
        first = mark[(100,)](x)
        second = mark[(100,)](x)
    assert extra[0] == pytest.approx((first.seconds + second.seconds) * 9)
    with scaling() as extra:
        mark[(100,)](x)  # not sampled: nothing to add
    assert extra == [0.0]


def test_module_arguments_are_the_modules(tmp_path):
    (tmp_path / "shout.py").write_text("import sys\nprint(sys.argv[1:])\n")
    done = subprocess.run([sys.executable, "-m", "minitriton", "--gpu", "h200", "-m", "shout",
                           "-x", "--gpu", "q"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['-x', '--gpu', 'q']"


LAYER_NORM = """
    import torch
    torch.manual_seed(0)
    x = (-2.3 + 0.5 * torch.randn(512, 1024)).half().requires_grad_()
    w = torch.rand(1024, dtype=torch.float16, requires_grad=True)
    b = torch.rand(1024, dtype=torch.float16, requires_grad=True)
    dy = 0.1 * torch.randn(512, 1024).half()
    torch.nn.functional.layer_norm(x, (1024,), w, b, 1e-5).backward(dy)
    xd = x.detach().double()
    xhat = (xd - xd.mean(-1, keepdim=True)) / torch.sqrt(xd.var(-1, unbiased=False,
                                                                keepdim=True) + 1e-5)
    print(float((w.grad.double() - (dy.double() * xhat).sum(0)).abs().max()),
          float((b.grad.double() - dy.double().sum(0)).abs().max()))
"""


def test_layer_norm_backward_accumulates_as_cuda(tmp_path, capsys):
    pytest.importorskip("torch")
    rc, out, err = run_here(tmp_path, capsys, LAYER_NORM)
    assert rc == 0, err
    dw, db = map(float, out.split())
    assert dw < 4e-3 and db < 4e-3  # one fp16 rounding of sums of about 2..4 (half ulp 2**-9)
    rc, out, err = run_here(tmp_path, capsys, LAYER_NORM, torch_patch=False)
    assert rc == 0 and max(map(float, out.split())) > 4e-3, err  # torch's CPU kernel, in fp16


def test_cuda_tensors_are_made_on_the_cpu(tmp_path, capsys):
    pytest.importorskip("torch")
    source = ("import torch\nx = torch.rand(3, device='cuda')\ny = torch.zeros(2, device=torch."
              "device('cuda', 0)).to('cuda')\nz = x.cuda().to('cuda:0', torch.float16)\n"
              "m = torch.nn.Linear(2, 2).cuda()\n"
              "print(x.device, y.device, z.device, z.dtype, x.is_cuda, m.weight.device)\n")
    want = ["cpu", "cpu", "cpu", "torch.float16", "True", "cpu"]
    for options in ({}, {"cuda_on_cpu": True}):  # the default, and as --cuda-on-cpu always did
        rc, out, err = run_here(tmp_path, capsys, source, **options)
        assert rc == 0, err
        assert out.split() == want
    rc, _, err = run_here(tmp_path, capsys, source, strict_cuda=True)
    assert rc == 1 and "--strict-cuda" in err


def test_cuda_autocast_casts_the_tensors_that_stand_for_cuda_ones(tmp_path, capsys):
    pytest.importorskip("torch")
    source = ("import torch\na = torch.randn(4, 4, device='cuda')\n"
              "with torch.autocast(device_type='cuda', dtype=torch.bfloat16):\n"
              "    c = a @ a\nprint(c.dtype, c.device)\n")
    rc, out, err = run_here(tmp_path, capsys, source)
    assert rc == 0, err
    assert out.split() == ["torch.bfloat16", "cpu"]


def test_cuda_on_cpu_makes_cuda_available_to_the_program_only(tmp_path, capsys):
    pytest.importorskip("torch")
    source = ("import torch\nprint(torch.cuda.is_available(), "  # code not of the program:
              "eval('torch.cuda.is_available()', {'torch': torch}))\n")  # "<string>"
    rc, out, err = run_here(tmp_path, capsys, source, cuda_on_cpu=True)
    assert rc == 0 and out.split() == ["True", "False"], err
    rc, out, err = run_here(tmp_path, capsys, source)
    assert rc == 0 and out.split() == ["False", "False"], err
    import torch
    from minitriton.runner.torch_patch import program_is_available
    assert program_is_available({__file__})() and not program_is_available(set())()


SHRINK = """
    import sys
    import numpy as np
    import triton
    import triton.language as tl

    GROUP = tl.constexpr(2048)  # a kernel constant: kept

    @triton.jit
    def fill(out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, 1024)  # inside a kernel: kept
        tl.store(out_ptr + offs, offs + GROUP, mask=offs < n)

    def check(M, N):
        out = np.zeros(M * N, np.int32)
        fill[(triton.cdiv(M * N, 1024),)](out, M * N, BLOCK=1024)  # a launch: kept
        assert np.array_equal(out, np.arange(M * N) + GROUP.value)
        return M, N

    configs = [triton.Config({"BLOCK": 4096}, num_warps=4)]  # kept
    print(check(8192, 4096), check(1000, 3), 2 ** 12, configs[0].kwargs["BLOCK"], 1536)
"""


def test_shrink_divides_the_programs_own_sizes(tmp_path, capsys):
    rc, out, err = run_here(tmp_path, capsys, SHRINK, shrink_by=16)
    assert rc == 0, err
    assert out.split("\n")[0] == "(512, 256) (1000, 3) 4096 4096 1536"
    assert "2 sizes in" in err and "8192 -> 512" in err and "4096 -> 256" in err
    rc, out, err = run_here(tmp_path, capsys, SHRINK)
    assert rc == 0 and out.startswith("(8192, 4096)"), err


def test_shrink_keeps_tracebacks_on_the_programs_lines(tmp_path):
    done = run(tmp_path, "x = 8192\n\n\nraise ValueError(x)\n", runner_args=("--shrink", "8"))
    assert done.returncode == 1
    assert 'script.py", line 4' in done.stderr and "ValueError: 1024" in done.stderr


def test_cublas_stand_in_matches_torch(tmp_path, capsys):
    pytest.importorskip("torch")
    source = """
        import torch
        from triton._C.libtriton import nvidia
        from triton.tools.mxfp import MXFP4Tensor, MXScaleTensor
        cublas = nvidia.cublas.CublasLt(torch.empty(1024, dtype=torch.uint8))
        torch.manual_seed(0)
        a, b = torch.randn(64, 32).half(), torch.randn(48, 32).half()
        c = torch.empty(64, 48, dtype=torch.float16)
        cublas.matmul(a, b, c)
        print(float((c.float() - a.float() @ b.float().T).abs().max()) < 0.05)
        M, N, K = 128, 128, 128
        a4, b4 = MXFP4Tensor(size=(M, K)).random(), MXFP4Tensor(size=(N, K)).random()
        sa = torch.rand(M // 128, K // 16 // 4, 32, 16) + 0.5
        sb = torch.rand(N // 128, K // 16 // 4, 32, 16) + 0.5
        sa8, sb8 = sa.to(torch.float8_e4m3fn), sb.to(torch.float8_e4m3fn)
        out = torch.empty(M, N, dtype=torch.float16)
        cublas.block_scaled_matmul_nvfp4(a4.to_packed_tensor(dim=1), b4.to_packed_tensor(dim=1),
                                         out, sa8.flatten(), sb8.flatten())
        def unpack(s):  # the tutorial's own reference layout
            s = s.reshape(*s.shape[:-2], 32, 4, 4)
            m, k = s.shape[:2]
            return s.permute(0, 3, 2, 1, 4).reshape(m * 128, k * 4)
        ref = (a4.to(torch.float32) * unpack(sa8.float()).repeat_interleave(16, 1)) @ \\
              (b4.to(torch.float32) * unpack(sb8.float()).repeat_interleave(16, 1)).T
        print(torch.allclose(out.float(), ref, atol=1e-3, rtol=1e-3))
    """
    rc, out, err = run_here(tmp_path, capsys, source)
    assert rc == 0, err
    assert out.split() == ["True", "True"]
