"""The runner: an unmodified Triton program on a CPU-only machine.

    python -m minitriton [--gpu H100] [--triton-version 3.6.0] [--no-torch-patch] [--small]
                         [--strict-cuda | --cuda-on-cpu] [--shrink N] script.py [args]
                                                        # or -m MODULE [args]
    minitriton run script.py [args]                     # the same, as a console script

Like `TRITON_INTERPRET=1`, but anywhere: `import triton` gives minitriton (standin/modules.py),
Triton's driver reports the CPU as the device and an emulated GPU as the target
(standin/target.py), and torch.cuda answers for that GPU; tensors the program asks for on CUDA
are made on the CPU (`--strict-cuda`: refused, with a message that says what to change;
runner/torch_patch.py). The program runs as `__main__` with `sys.argv` set; everything is put
back when it ends.
"""
from __future__ import annotations

import argparse
import contextlib
import linecache
import os
import runpy
import sys
import traceback
import types

import minitriton

from .. import testing
from . import shrink
from ..standin.modules import TRITON_VERSION, aliases
from ..runtime.gpus import DEFAULT_GPU, GPUS, gpu as get_gpu
from ..standin.target import EmulatedDriver
from .torch_patch import CUDATensorError, patched

_OWN_FILES = {os.path.normcase(os.path.abspath(runpy.__file__))} | {
    os.path.normcase(os.path.join(os.path.dirname(os.path.abspath(__file__)), f))
    for f in os.listdir(os.path.dirname(os.path.abspath(__file__))) if f.endswith(".py")}


def parser():
    p = argparse.ArgumentParser(
        prog="python -m minitriton",
        description="Run an unmodified Triton program on the CPU: `import triton` gives "
                    "minitriton, and Triton's driver reports an emulated GPU.")
    p.add_argument("--gpu", default=DEFAULT_GPU, type=str.upper, choices=list(GPUS),
                   help=f"the GPU that Triton's driver and torch.cuda report (default "
                        f"{DEFAULT_GPU})")
    p.add_argument("--triton-version", default=TRITON_VERSION, metavar="VERSION",
                   help=f"what triton.__version__ says (default {TRITON_VERSION})")
    p.add_argument("--no-torch-patch", action="store_true",
                   help="leave torch alone (by default torch.cuda reports the emulated GPU "
                        "and tensors asked for on CUDA are made on the CPU)")
    cuda = p.add_mutually_exclusive_group()
    cuda.add_argument("--strict-cuda", action="store_true",
                      help="stop the program where it asks for a CUDA tensor (device='cuda', "
                           ".cuda(), .to('cuda')), saying what to change; by default such "
                           "tensors are made on the CPU, which stands for the GPU")
    cuda.add_argument("--cuda-on-cpu", action="store_true",
                      help="also make torch.cuda.is_available() True for the program's own "
                           "files (it is False by default, so that programs keep off "
                           "CUDA-only torch paths); tensors asked for on CUDA are made on the "
                           "CPU either way")
    p.add_argument("--small", action="store_true",
                   help="benchmarks in a hurry: each triton.testing Benchmark measures its 2 "
                        "smallest x values, launches inside a benchmark point run 16 of their "
                        "programs (the point runs again in full if it fails that way), "
                        "do_bench times one call scaled to the whole grids; checks outside "
                        "benchmarks and the program's sizes are untouched")
    p.add_argument("--shrink", type=int, default=None, metavar="N",
                   help="divide the program's hard-coded sizes by N before it runs: power-of-"
                        "two integer literals from 1024 up in the script itself, not in kernels,"
                        " triton.Config or launch keywords (runner/shrink.py; the changes are "
                        "printed)")
    p.add_argument("-m", dest="module", metavar="MODULE",
                   help="run a module as `python -m MODULE` does, instead of a script")
    p.add_argument("script", nargs="?", help="the program to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return p


@contextlib.contextmanager
def emulated(gpu=DEFAULT_GPU, triton_version=TRITON_VERSION, torch_patch=True, program_dir=None,
             small=False, cuda_on_cpu=False, strict_cuda=False):
    """`import triton` gives minitriton, with the emulated `gpu`, for the duration.
    `program_dir`: the directory of the program's own files, whose code sees CPU tensors as
    `is_cuda`; `strict_cuda`, `cuda_on_cpu`: see runner/torch_patch.py."""
    spec = get_gpu(gpu)
    with contextlib.ExitStack() as stack:
        triton = stack.enter_context(aliases(minitriton, triton_version, EmulatedDriver(spec)))
        if torch_patch:
            stack.enter_context(patched(spec, program_dir, cuda_on_cpu, strict_cuda))
        if small:
            stack.enter_context(testing.small())
        yield triton


def _own(filename):
    return os.path.normcase(filename) in _OWN_FILES or filename.startswith("<frozen runpy")


def _script_frames(tb):
    """The traceback without the runner's (and runpy's) frames above the program's."""
    while tb is not None and _own(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


def _where(tb):
    """file:line: code of the program's innermost frame (not torch's, not the runner's)."""
    last = None
    for frame, line in traceback.walk_tb(tb):
        name = frame.f_code.co_filename
        if not _own(name) and f"{os.sep}torch{os.sep}" not in name:
            last = f"{name}:{line}: {linecache.getline(name, line).strip()}"
    return last


def _exit_code(code):
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1


def _run_shrunk(script, factor):
    """The script as runpy.run_path runs it, with its sizes divided by `factor` (shrink.py)."""
    path = os.path.abspath(script)
    with open(path, encoding="utf-8") as f:
        code, changes = shrink.rewrite(f.read(), path, factor)
    print(shrink.describe(changes, script), file=sys.stderr)
    main_module = types.ModuleType("__main__")
    main_module.__file__ = path
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main_module
    try:
        exec(code, main_module.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def run(script=None, args=(), module=None, gpu=DEFAULT_GPU, triton_version=TRITON_VERSION,
        torch_patch=True, small=False, cuda_on_cpu=False, shrink_by=None, strict_cuda=False):
    """Run a program (a script's path, or `module` as with `python -m`) under the emulation;
    returns its exit status. Its exceptions are printed, without the runner's frames.
    `shrink_by`: divide the script's hard-coded sizes by this (runner/shrink.py)."""
    target = module or script
    if shrink_by is not None and module:
        raise ValueError("--shrink rewrites a script; it cannot rewrite -m MODULE")
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [os.path.abspath(script) if script else module, *args]
    if script:  # as `python script.py`: the script's directory first, instead of the cwd
        sys.path[:1] = [os.path.dirname(os.path.abspath(script))]
    try:
        program_dir = os.path.dirname(os.path.abspath(script)) if script else os.getcwd()
        with emulated(gpu, triton_version, torch_patch, program_dir, small, cuda_on_cpu,
                      strict_cuda):
            if module:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            elif shrink_by is not None:
                _run_shrunk(script, shrink_by)
            else:
                runpy.run_path(script, run_name="__main__")
        return 0
    except SystemExit as e:
        return _exit_code(e.code)
    except CUDATensorError as e:
        where = _where(e.__traceback__)
        print(f"{where}\n" if where else "", end="", file=sys.stderr)
        asked = "the program asked for a CUDA tensor. " if e.api is None else ""
        print(f"minitriton: {asked}{e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException as e:  # the program's error: print it as Python would, and fail
        traceback.print_exception(type(e), e, _script_frames(e.__traceback__))
        print(f"minitriton: {target} failed under the emulated {get_gpu(gpu).key}",
              file=sys.stderr)
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _module_split(argv):
    """Where the arguments of `-m MODULE` begin, if -m comes before any script (else None)."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "-m":
            return i + 2 if i + 1 < len(argv) else None
        if not token.startswith("-"):
            return None  # the script: what follows is its own
        i += 2 if token in ("--gpu", "--triton-version", "--shrink") else 1
    return None


def main(argv=None):
    """`python -m minitriton ...` and the `minitriton` console script (`minitriton run ...`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"] and not os.path.isfile("run"):
        argv = argv[1:]
    # `-m MODULE args...`: everything after the module's name is the module's own
    cut, module_args = _module_split(argv), None
    if cut is not None:
        argv, module_args = argv[:cut], argv[cut:]
    opts = parser().parse_args(argv)
    if module_args is not None:
        opts.args = list(module_args)
        if opts.script is not None:
            parser().error("give a script or -m MODULE, not both")
    elif opts.script is None:
        parser().error("give a script to run (or -m MODULE)")
    return run(opts.script if opts.module is None else None, opts.args, module=opts.module,
               gpu=opts.gpu, triton_version=opts.triton_version,
               torch_patch=not opts.no_torch_patch, small=opts.small,
               cuda_on_cpu=opts.cuda_on_cpu, shrink_by=opts.shrink,
               strict_cuda=opts.strict_cuda)


__all__ = ["main", "run", "emulated", "GPUS", "CUDATensorError"]
