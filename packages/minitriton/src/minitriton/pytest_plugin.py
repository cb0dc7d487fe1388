"""A Triton library's own test suite on a CPU-only machine: minitriton as `triton` in every
process pytest starts, xdist's workers included.

    pytest --minitriton [-n auto]                 # or: pytest -p minitriton [-n auto]
           [--minitriton-gpu H100] [--minitriton-triton-version 3.6.0]
           [--minitriton-sanitize races,order,padding,...]
           [--minitriton-no-cuda-on-cpu] [--minitriton-no-torch-patch]

minitriton registers this module as the pytest11 entry point `minitriton`, so pytest loads it in
every process, and it does nothing unless `--minitriton` or `-p minitriton` asks (`-p minitriton`
also works with PYTEST_DISABLE_PLUGIN_AUTOLOAD=1; where minitriton is importable but not
installed, from PYTHONPATH, the spelling is `-p minitriton.pytest_plugin`). Asked, it installs,
before the first conftest.py is imported, what the runner installs for a program
(`python -m minitriton`, runner/__init__.py):

  * `import triton` (and triton.language, triton.testing, ...) gives minitriton, whose driver
    reports the emulated GPU (standin/modules.py), even where a real Triton is installed;
  * torch.cuda reports that GPU (runner/torch_patch.py), and tensors the tests ask for on
    'cuda' are made on the CPU, since libraries' tests hard-code device='cuda'; the rootdir's
    files (the tests and a library checked out under it) see `torch.cuda.is_available()` and
    `tensor.is_cuda` as True, torch's and installed packages' code sees them False;
  * the sanitizers named by --minitriton-sanitize (settings.py: races, order, padding,
    footprint, view_bounds, coverage, trace, sectors; uninitialized=ARG+ARG) check every launch.

Under pytest-xdist each worker is a pytest process of its own, started with the same command
line, so it installs its own minitriton. Everything is put back when pytest unconfigures.
torch is patched only once something imports it, so a NumPy-only suite never loads torch.
"""
from __future__ import annotations

import contextlib
import dataclasses
import sys

import pytest

from . import __version__
from .runner import emulated
from .runtime.gpus import DEFAULT_GPU, GPUS
from .settings import Settings, configure
from .standin.modules import TRITON_VERSION

NAME = "minitriton"  # the entry point's name: `-p minitriton`, `-p no:minitriton`
MODULE = __name__  # `-p minitriton.pytest_plugin`, where no entry point is installed
_HEADER = pytest.StashKey[str]()


def pytest_addoption(parser):
    group = parser.getgroup("minitriton", "minitriton: Triton kernels on the CPU")
    group.addoption("--minitriton", action="store_true",
                    help="run the suite on minitriton: `import triton` gives minitriton in "
                         "every process (xdist workers too), torch.cuda reports an emulated "
                         "GPU and CUDA tensors are made on the CPU (the same as -p minitriton)")
    group.addoption("--minitriton-gpu", default=DEFAULT_GPU, type=str.upper, choices=list(GPUS),
                    help=f"the GPU Triton's driver and torch.cuda report (default {DEFAULT_GPU})")
    group.addoption("--minitriton-triton-version", default=TRITON_VERSION, metavar="VERSION",
                    help=f"what triton.__version__ says (default {TRITON_VERSION})")
    group.addoption("--minitriton-sanitize", default="", metavar="CHECKS",
                    help="checks every launch makes, comma-separated, as in MINITRITON_SANITIZE:"
                         " races, order, padding, footprint, view_bounds, coverage, trace, "
                         "sectors, uninitialized=ARG+ARG (a sanitizer's error fails the test)")
    group.addoption("--minitriton-no-cuda-on-cpu", action="store_true",
                    help="stop a test that asks for a CUDA tensor with what to change, instead "
                         "of making the tensor on the CPU")
    group.addoption("--minitriton-no-torch-patch", action="store_true",
                    help="leave torch alone: torch.cuda answers as torch does on this machine, "
                         "so device-picking code picks the CPU")


def pytest_plugin_registered(plugin, plugin_name, manager):
    # `-p minitriton.pytest_plugin` registers this module under its module name before pytest
    # loads the entry points; the entry point would then register the same module again, as
    # `minitriton`, which pluggy refuses: keep the entry point from loading a second time
    if plugin is sys.modules[__name__] and plugin_name != NAME:
        manager.set_blocked(NAME)


def _asked(config):
    """--minitriton, or the plugin named with -p (on the command line, in addopts)."""
    ns = config.known_args_namespace
    named = {p.strip() for p in ns.plugins}
    return ns.minitriton or NAME in named or MODULE in named


def _sanitizers(text):
    """The settings --minitriton-sanitize changes, as MINITRITON_SANITIZE reads them."""
    try:
        chosen = Settings.from_env({"MINITRITON_SANITIZE": text})
    except ValueError as e:
        raise pytest.UsageError(f"--minitriton-sanitize={text}: "
                                f"{str(e).partition(': ')[2]}") from None
    default = Settings()
    return {f.name: getattr(chosen, f.name) for f in dataclasses.fields(Settings)
            if getattr(chosen, f.name) != getattr(default, f.name)}


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    # before any conftest.py: a library's conftest often imports triton (or its own package,
    # which does) at import time
    if not _asked(early_config):
        return
    ns = early_config.known_args_namespace
    checks = _sanitizers(ns.minitriton_sanitize)
    torch_patch, cuda_on_cpu = not ns.minitriton_no_torch_patch, not ns.minitriton_no_cuda_on_cpu
    stack = contextlib.ExitStack()
    stack.enter_context(emulated(ns.minitriton_gpu, ns.minitriton_triton_version,
                                 torch_patch=torch_patch, program_dir=str(early_config.rootpath),
                                 cuda_on_cpu=torch_patch and cuda_on_cpu))
    if checks:
        stack.enter_context(configure(**checks))
    early_config.add_cleanup(stack.close)
    torch_line = ("torch untouched" if not torch_patch else
                  f"torch.cuda reports the {ns.minitriton_gpu}" +
                  (", CUDA tensors made on the CPU" if cuda_on_cpu else ""))
    early_config.stash[_HEADER] = (
        f"minitriton {__version__} as triton {ns.minitriton_triton_version} on an emulated "
        f"{ns.minitriton_gpu}; {torch_line}; sanitizers: "
        f"{', '.join(checks) if checks else 'none'}")


def pytest_report_header(config):
    return config.stash.get(_HEADER, None)
