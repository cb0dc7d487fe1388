"""`import triton` under the runner: minitriton, under the names real programs import.

While `aliases(...)` is active, sys.modules holds:

    triton                          a front module: minitriton's names (jit, autotune, Config,
                                    cdiv...), with __version__ the emulated Triton release
    triton.language                 minitriton.language itself (so `tl` is the very module)
    triton.language.math | core     minitriton.language.math | core
    triton.language.extra[.X]       minitriton.language.extra[.X] (libdevice, cuda), looked up
                                    only when the program imports it
    triton.runtime                  driver (the emulated GPU, runner/target.py), jit,
                                    autotuner, cache (FileCacheManager), errors
    triton.testing                  minitriton.testing
    triton.tools.tensor_descriptor  minitriton.tools.tensor_descriptor
    triton.compiler                 CompilationError (minitriton's)
    triton.backends                 `backends` (empty) and compiler.GPUTarget
    triton._C.libtriton.nvidia      cublas.CublasLt, the tutorials' cuBLAS baseline on torch
                                    (runner/cublas.py)

Any other `triton.X.Y` is found on import by a meta path finder as `minitriton.X.Y` if that
exists (so modules added to minitriton later are found without changing this file), and is
reported as missing otherwise. On exit every `triton*` entry is removed and whatever was there
before (a real Triton, say) is put back.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import types

import minitriton

from .. import errors, language, testing, tools
from ..language import core as language_core
from ..runtime import autotune, jit
from ..tools import tensor_descriptor
from ..runtime.gpus import DEFAULT_GPU, gpu as get_gpu
from . import cublas
from .target import DriverConfig, EmulatedDriver, GPUTarget

TRITON_VERSION = "3.6.0"

# triton.X -> minitriton's module of another name; the rest map name for name
RENAMED = {"triton.runtime.autotuner": "minitriton.runtime.autotune"}


def _module(name, doc, package=False, fallback=None, **attrs):
    """A stand-in module; `fallback` answers the attributes it does not have."""
    mod = types.ModuleType(name, doc)
    # so that probes like importlib.util.find_spec("triton") find it, as a real module
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=package)
    if package:
        mod.__path__ = []  # a package, so that the finder is asked for its submodules
    mod.__dict__.update(attrs)
    if fallback is not None:
        def __getattr__(attr):
            if attr.startswith("__"):
                raise AttributeError(f"module {name!r} has no attribute {attr!r}")
            return fallback(attr)
        mod.__getattr__ = __getattr__
    return mod


class OutOfResources(Exception):
    """As `triton.runtime.errors.OutOfResources`; the simulator never raises it."""

    def __init__(self, required=0, limit=0, name="shared memory"):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(f"out of resource: {name}, Required: {required}, "
                         f"Hardware limit: {limit}")


class FileCacheManager:
    """As `triton.runtime.cache.FileCacheManager`: a directory of files by name; minitriton
    compiles nothing, so only programs that use the cache for their own files need it."""

    def __init__(self, key, override=False, dump=False):
        self.key = key
        self.cache_dir = os.path.join(default_cache_dir(), key)
        os.makedirs(self.cache_dir, exist_ok=True)

    def _path(self, filename):
        return os.path.join(self.cache_dir, filename)

    def has_file(self, filename):
        return os.path.exists(self._path(filename))

    def get_file(self, filename):
        return self._path(filename) if self.has_file(filename) else None

    def put(self, data, filename, binary=True):
        mode = "wb" if isinstance(data, bytes) else "w"
        with open(self._path(filename), mode) as f:
            f.write(data)
        return self._path(filename)

    def get_group(self, filename):
        return None

    def put_group(self, filename, group):
        return None


def default_cache_dir():
    return os.environ.get("TRITON_CACHE_DIR", os.path.join(tempfile.gettempdir(),
                                                            "minitriton-cache"))


def _set_allocator(allocator):
    """`triton.set_allocator`: the simulator needs no scratch memory, so this only records."""
    _set_allocator.allocator = allocator


def stand_ins(triton_version, driver_config):
    """The modules installed at once, by name."""
    driver_mod = _module("triton.runtime.driver", "The emulated GPU's driver.",
                         driver=driver_config, DriverConfig=DriverConfig)
    cache = _module("triton.runtime.cache", "Stand-in for triton.runtime.cache.",
                    FileCacheManager=FileCacheManager, default_cache_dir=default_cache_dir,
                    get_cache_manager=FileCacheManager)
    runtime_errors = _module("triton.runtime.errors", "Stand-in for triton.runtime.errors.",
                             OutOfResources=OutOfResources)
    runtime = _module("triton.runtime", "minitriton's runtime under Triton's names.",
                      package=True, fallback=lambda attr: getattr(minitriton.runtime, attr),
                      driver=driver_config, jit=jit, autotuner=autotune, cache=cache,
                      errors=runtime_errors, JITFunction=jit.JITFunction,
                      KernelInterface=jit.KernelInterface, Autotuner=autotune.Autotuner,
                      Heuristics=autotune.Heuristics, Config=autotune.Config,
                      OutOfResources=OutOfResources)
    compiler_errors = _module("triton.compiler.errors", "Stand-in.",
                              CompilationError=errors.CompilationError)
    compiler = _module("triton.compiler", "Stand-in for triton.compiler.", package=True,
                       CompilationError=errors.CompilationError, errors=compiler_errors)
    backends_compiler = _module("triton.backends.compiler", "Stand-in.", GPUTarget=GPUTarget)
    backends = _module("triton.backends", "No backends: minitriton executes, it compiles "
                       "nothing.", package=True, backends={}, compiler=backends_compiler)
    cublas_mod = _module("triton._C.libtriton.nvidia.cublas", "cuBLAS on torch (runner/"
                         "cublas.py).", CublasLt=cublas.CublasLt)
    nvidia = _module("triton._C.libtriton.nvidia", "Stand-in.", package=True, cublas=cublas_mod)
    libtriton = _module("triton._C.libtriton", "Triton's C++ extension: only the cuBLAS "
                        "baseline the tutorials call.", package=True, nvidia=nvidia)
    c_ext = _module("triton._C", "Stand-in.", package=True, libtriton=libtriton)
    front = _module("triton", f"minitriton {minitriton.__version__}, standing in for Triton "
                    f"{triton_version} (python -m minitriton).", package=True,
                    fallback=lambda attr: getattr(minitriton, attr),
                    __version__=triton_version, language=language, runtime=runtime,
                    testing=testing, tools=tools, compiler=compiler, backends=backends,
                    set_allocator=getattr(minitriton, "set_allocator", _set_allocator),
                    OutOfResources=OutOfResources)
    return {
        "triton": front,
        "triton.language": language,
        "triton.language.math": language.math,
        "triton.language.core": language_core,
        "triton.runtime": runtime,
        "triton.runtime.driver": driver_mod,
        "triton.runtime.jit": jit,
        "triton.runtime.autotuner": autotune,
        "triton.runtime.cache": cache,
        "triton.runtime.errors": runtime_errors,
        "triton.testing": testing,
        "triton.tools": tools,
        "triton.tools.tensor_descriptor": tensor_descriptor,
        "triton.compiler": compiler,
        "triton.compiler.errors": compiler_errors,
        "triton.backends": backends,
        "triton.backends.compiler": backends_compiler,
        "triton._C": c_ext,
        "triton._C.libtriton": libtriton,
        "triton._C.libtriton.nvidia": nvidia,
        "triton._C.libtriton.nvidia.cublas": cublas_mod,
    }


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import triton.X.Y` -> minitriton.X.Y, for the names that are not installed at once."""

    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith("triton."):
            return None
        source = RENAMED.get(fullname, "minitriton" + fullname[len("triton"):])
        try:
            found = importlib.util.find_spec(source)
        except ModuleNotFoundError:
            found = None
        if found is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: under `python -m minitriton`, triton is "
                f"minitriton, which has no {source}", name=fullname)
        spec = importlib.util.spec_from_loader(
            fullname, self, is_package=found.submodule_search_locations is not None)
        spec.loader_state = source
        return spec

    def create_module(self, spec):
        module = importlib.import_module(spec.loader_state)
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state  # the import system set the alias's spec


@contextlib.contextmanager
def aliases(triton_version=TRITON_VERSION, driver=None):
    """minitriton installed as `triton` for the duration (see the module's docstring)."""
    driver_config = DriverConfig(driver if driver is not None else
                                 EmulatedDriver(get_gpu(DEFAULT_GPU)))
    saved = {name: mod for name, mod in sys.modules.items()
             if name == "triton" or name.startswith("triton.")}
    for name in saved:
        del sys.modules[name]
    sys.modules.update(stand_ins(triton_version, driver_config))
    finder = _AliasFinder()
    sys.meta_path.insert(0, finder)
    try:
        yield sys.modules["triton"]
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
            del sys.modules[name]
        sys.modules.update(saved)
