"""`pytest --minitriton`: a Triton library's own test suite on the CPU (minitriton/pytest_plugin.py).

Each test writes a tiny "library" under tmp_path (a conftest.py that imports triton at import
time, as libraries' conftests do, and a test file with @triton.jit kernels) and runs pytest on
it in a subprocess, as a CI job would; the outcome is read from pytest's summary line. Where
minitriton is not installed as a distribution (PYTHONPATH checkouts) the plugin has no entry
point and is loaded as `-p minitriton.pytest_plugin`."""
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[2] / "packages" / "minitriton" / "pyproject.toml"
ENTRY_POINT = any(ep.name == "minitriton" and ep.value == "minitriton.pytest_plugin"
                  for ep in importlib.metadata.entry_points(group="pytest11"))
LOAD = [] if ENTRY_POINT else ["-p", "minitriton.pytest_plugin"]
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_XDIST = importlib.util.find_spec("xdist") is not None


def _installed(dist):
    try:
        importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


CONFTEST = """
    import sys

    import pytest
    import triton  # at import time: the plugin must be in place before conftests load

    LOADED_AT_START = sorted(m for m in ("torch", "tritonlab") if m in sys.modules)


    @pytest.fixture
    def loaded_at_start():
        return LOADED_AT_START
"""

LIBRARY = """
    import numpy as np
    import pytest
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


    @triton.jit
    def last_program_kernel(out_ptr):
        tl.store(out_ptr, tl.program_id(0))  # every program writes the one element: a race


    def test_triton_is_minitriton(loaded_at_start):
        assert triton.jit is minitriton.jit and tl is minitriton.language
        assert loaded_at_start == []  # torch is patched only once something imports it


    # one element; a partial block; whole blocks; several blocks and a partial one
    @pytest.mark.parametrize("n", [1, 1000, 4096, 5000])
    def test_add_numpy(n):
        rng = np.random.default_rng(n)
        x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
        out = np.empty_like(x)
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
        np.testing.assert_array_equal(out, x + y)


    def test_add_torch_on_cuda():
        torch = pytest.importorskip("torch")
        x = torch.randn(3000, device="cuda")  # as libraries' tests write it
        y = torch.randn(3000, device="cuda")
        out = torch.empty_like(x)
        add_kernel[(triton.cdiv(3000, 1024),)](x, y, out, 3000, BLOCK_SIZE=1024)
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)
        assert torch.cuda.is_available() and x.is_cuda
        assert torch.cuda.get_device_capability() == (9, 0)


    def test_racy_kernel():
        out = np.zeros(1, np.int32)
        last_program_kernel[(8,)](out)
        assert 0 <= out[0] < 8


    def test_options():
        assert triton.__version__ == "3.2.0"
        assert triton.runtime.driver.active.get_current_target().arch == 80
"""

NO_TRITON = """
    import pytest


    def test_import_triton():
        with pytest.raises(ModuleNotFoundError):
            import triton  # noqa: F401
"""

REAL_TRITON = """
    def test_import_triton():
        import triton
        assert not hasattr(triton, "install_as_triton")  # Triton's own, not minitriton
"""

# what the default run of LIBRARY gives: test_options is run only with its options
LIBRARY_OUTCOME = {"passed": 7} if HAS_TORCH else {"passed": 6, "skipped": 1}


def library(tmp_path, conftest=CONFTEST, tests=LIBRARY):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the rootdir: nothing above it counts
    (tmp_path / "conftest.py").write_text(textwrap.dedent(conftest))
    (tmp_path / "test_library.py").write_text(textwrap.dedent(tests))
    return tmp_path


def run_pytest(directory, *args, load=LOAD, env=None):
    """pytest run on `directory` in a subprocess: (exit status, output, outcome counts)."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("PYTEST_", "MINITRITON_")) and k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *load,
                           *args], cwd=directory, capture_output=True, text=True, timeout=300,
                          env={**clean, **(env or {})})
    output = done.stdout + done.stderr
    last = output.strip().splitlines()[-1] if output.strip() else ""
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|error)", last)}
    return done.returncode, output, counts


def test_the_plugin_is_minitritons_pytest11_entry_point():
    assert '[project.entry-points.pytest11]\nminitriton = "minitriton.pytest_plugin"' in \
        PYPROJECT.read_text()


def test_a_library_suite_runs_on_minitriton(tmp_path):
    rc, output, counts = run_pytest(library(tmp_path), "--minitriton", "-k", "not options")
    assert rc == 0, output
    assert counts == LIBRARY_OUTCOME, output
    assert "minitriton 0.1.0 as triton 3.6.0 on an emulated H100" in output  # the header


@pytest.mark.skipif(not HAS_XDIST, reason="pytest-xdist is not installed here")
def test_every_xdist_worker_installs_minitriton(tmp_path):
    rc, output, counts = run_pytest(library(tmp_path), "--minitriton", "-n", "2",
                                    "-k", "not options")
    assert rc == 0, output
    assert counts == LIBRARY_OUTCOME, output


@pytest.mark.skipif(not ENTRY_POINT, reason="`-p minitriton` names the entry point, which a "
                    "PYTHONPATH checkout does not have (it uses -p minitriton.pytest_plugin)")
def test_p_minitriton_switches_it_on_with_its_options(tmp_path):
    rc, output, counts = run_pytest(library(tmp_path), "-p", "minitriton", "--minitriton-gpu",
                                    "a100", "--minitriton-triton-version", "3.2.0",
                                    "-k", "options", env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert (rc, counts) == (0, {"passed": 1}), output


def test_p_minitriton_pytest_plugin_switches_it_on(tmp_path):
    rc, output, counts = run_pytest(library(tmp_path), "-k", "minitriton",
                                    load=["-p", "minitriton.pytest_plugin"])
    assert (rc, counts) == (0, {"passed": 1}), output


def test_a_sanitizer_from_the_command_line_catches_a_race(tmp_path):
    directory = library(tmp_path)
    rc, output, counts = run_pytest(directory, "--minitriton", "-k", "racy")
    assert (rc, counts) == (0, {"passed": 1}), output  # lockstep loses updates, as a GPU does
    rc, output, counts = run_pytest(directory, "--minitriton", "--minitriton-sanitize", "races",
                                    "-k", "racy")
    assert (rc, counts) == (1, {"failed": 1}), output
    assert "RaceError" in output and "sanitizers: races" in output


def test_an_unknown_sanitizer_is_a_usage_error(tmp_path):
    rc, output, _ = run_pytest(library(tmp_path), "--minitriton", "--minitriton-sanitize",
                               "races,nonsense")
    assert rc == pytest.ExitCode.USAGE_ERROR
    assert "unknown check 'nonsense'" in output and "padding" in output


def test_without_the_option_it_does_nothing(tmp_path):
    real = _installed("triton")
    directory = library(tmp_path, conftest="", tests=REAL_TRITON if real else NO_TRITON)
    rc, output, counts = run_pytest(directory)
    assert (rc, counts) == (0, {"passed": 1}), output
    assert "as triton" not in output
