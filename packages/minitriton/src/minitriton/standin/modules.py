"""`import triton` as minitriton, under the names real programs import.

`Installed(front, ...)` (the runner's `aliases(...)` context, `minitriton.install_as_triton()`
for a program or a test session of its own, and the pytest plugin) puts into sys.modules:

    triton                          a front module: minitriton's names (jit, autotune, Config,
                                    cdiv...), with __version__ the emulated Triton release
    triton.language                 minitriton.language itself (so `tl` is the very module)
    triton.language.math | core     minitriton.language.math | core; for an emulated release
                                    before 3.0, math is 2.x's module: libdevice and math
    triton.language.extra[.X]       minitriton.language.extra[.X] (libdevice, cuda[.libdevice]),
                                    looked up only when the program imports it; hip.libdevice
                                    is the same libdevice; cuda.gdc and cuda.utils
    triton.language.standard |      standard: the language's names; target_info: is_cuda,
      target_info | semantic        cuda_capability_geq... on the emulated target; semantic: a
                                    placeholder
    triton.knobs                    the namespaces (cache, compilation, runtime...), env-read
    triton.runtime                  driver (the emulated GPU, standin/target.py), jit,
                                    autotuner, cache (FileCacheManager), errors
    triton.testing                  minitriton.testing
    triton.tools.tensor_descriptor  minitriton.tools.tensor_descriptor
    triton.compiler                 CompilationError (minitriton's)
    triton.backends                 `backends` (empty) and compiler.GPUTarget
    triton._C.libtriton.nvidia      cublas.CublasLt, the tutorials' cuBLAS baseline on torch
                                    (standin/cublas.py)
    placeholders                    the rest of Triton 3.6's public modules (compiler.compiler,
                                    runtime.build, tools.compile...: PLACEHOLDERS) import; each
                                    of their names raises the "not in minitriton" error

Any other `triton.X.Y` is found on import by a meta path finder as `minitriton.X.Y` if that
exists (so modules added to minitriton later are found without changing this file), and is
reported as missing otherwise (with docs/limitations.md); so is a name a module lacks, also
inside `from triton.X import name`. On exit every `triton*` entry is removed and whatever was there
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

from .. import errors, language, testing, tools
from ..language import core as language_core, extra as language_extra
from ..language.extra import cuda as extra_cuda, libdevice
from ..language.extra._extern import called_by_from_import, missing_name
from .. import runtime as runtime_package
from ..runtime import autotune, compiled, jit
from ..tools import tensor_descriptor
from ..runtime.gpus import DEFAULT_GPU, gpu as get_gpu
from ..settings import version_tuple
from . import cublas
from .target import DriverConfig, EmulatedDriver, GPUTarget

TRITON_VERSION = "3.6.0"

# triton.X -> minitriton's module of another name; the rest map name for name
RENAMED = {"triton.runtime.autotuner": "minitriton.runtime.autotune",
           "triton.runtime._allocation": "minitriton.runtime.allocation",
           "triton._internal_testing": "minitriton.standin.internal_testing"}

# Triton 3.6's public modules that minitriton has no counterpart for: they import (libraries
# import them at the top of a file for one name they may never use), and each name in them is
# the "not in minitriton" error
PLACEHOLDERS = {
    "triton.compiler.compiler": "compile(), ASTSource, CompiledKernel: minitriton compiles "
                                "nothing (the launch executes the kernel's Python source)",
    "triton.compiler.code_generator": "the AST to TTIR generator",
    "triton.compiler.make_launcher": "the C launcher generator",
    "triton.backends.driver": "DriverBase/GPUDriver (triton.runtime.driver.active is the "
                              "emulated GPU)",
    "triton.backends.nvidia": "the CUDA backend",
    "triton.backends.nvidia.compiler": "the CUDA backend's compiler (PTX, cubin)",
    "triton.backends.nvidia.driver": "the CUDA driver (triton.runtime.driver.active is the "
                                     "emulated GPU)",
    "triton.language.semantic": "the IR builder behind the language",
    "triton.language.extra.hip.utils": "AMD intrinsics",
    "triton.runtime.build": "the C compiler driver for launchers",
    "triton.runtime.interpreter": "TRITON_INTERPRET=1's interpreter (minitriton is the "
                                  "alternative)",
    "triton.runtime._async_compile": "asynchronous compilation",
    "triton.tools.build_extern": "the libdevice wrapper generator",
    "triton.tools.compile": "ahead-of-time compilation",
    "triton.tools.disasm": "SASS disassembly",
    "triton.tools.link": "ahead-of-time kernel linking",
    "triton.tools.ragged_tma": "ragged tensor descriptors",
}


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
            try:
                return fallback(attr)
            except AttributeError as e:
                if called_by_from_import(1):  # else Python says only "cannot import name"
                    raise ImportError(str(e), name=name) from None
                raise
        mod.__getattr__ = __getattr__
    return mod


def _placeholder(name, what):
    def fallback(attr):
        raise AttributeError(missing_name(name, attr).args[0] + f" ({name}: {what})")
    return _module(name, f"Placeholder for {name} ({what}); minitriton has no counterpart.",
                   package=True, fallback=fallback)


def _missing_in(name):
    def fallback(attr):
        raise missing_name(name, attr)
    return fallback


def _language_or_missing(name):
    def fallback(attr):
        try:
            return getattr(language, attr)
        except AttributeError:
            raise missing_name(name, attr) from None
    return fallback


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


def _math_module(triton_version):
    """`triton.language.math`: minitriton's (Triton 3's) module, or for an emulated release
    before 3.0 that release's, which held the whole libdevice (`from triton.language.math
    import tanh` is how 2.x programs get tanh)."""
    if version_tuple(triton_version) >= (3, 0):
        return language.math
    names = {n: getattr(libdevice, n) for n in dir(libdevice) if not n.startswith("_") and
             callable(getattr(libdevice, n)) and not isinstance(getattr(libdevice, n), type)}
    names.update({n: getattr(language.math, n) for n in dir(language.math)
                  if not n.startswith("_")})
    return _module("triton.language.math", f"Triton {triton_version}'s math module: libdevice's"
                   " functions and tl.math's.", fallback=_missing_in("triton.language.math"),
                   **names)


def _target_info(driver_config):
    """`triton.language.target_info` on the emulated target; the predicates are Triton's
    constexpr functions, so kernels may call them."""
    def current_target():
        try:
            return driver_config.active.get_current_target()
        except (RuntimeError, AttributeError):
            return None

    def is_cuda():
        target = current_target()
        return target is not None and target.backend == "cuda"

    def cuda_capability_geq(major, minor=0):
        target = current_target()
        if target is None or target.backend != "cuda":
            return False
        return int(target.arch) >= int(major) * 10 + int(minor)

    def is_hip():
        target = current_target()
        return target is not None and target.backend == "hip"

    def is_hip_cdna3():
        target = current_target()
        return target is not None and target.arch == "gfx942"

    def is_hip_cdna4():
        target = current_target()
        return target is not None and target.arch == "gfx950"

    fns = dict(current_target=current_target, is_cuda=is_cuda,
               cuda_capability_geq=cuda_capability_geq, is_hip=is_hip,
               is_hip_cdna3=is_hip_cdna3, is_hip_cdna4=is_hip_cdna4)
    for fn in fns.values():
        fn.__triton_builtin__ = True
    return _module("triton.language.target_info", "The emulated target's predicates.",
                   fallback=_missing_in("triton.language.target_info"), **fns)


def _env_flag(name, default=False):
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in ("1", "true", "on", "yes")


def _knobs():
    """`triton.knobs` (Triton 3.4+): the namespaces, each knob read once from its environment
    variable as Triton does; they are settable and minitriton reads none of them."""
    ns = types.SimpleNamespace
    home = os.environ.get("TRITON_HOME", os.path.expanduser("~/"))
    cache = ns(home_dir=home, dir=default_cache_dir(),
               dump_dir=os.environ.get("TRITON_DUMP_DIR", os.path.join(home, ".triton", "dump")),
               override_dir=os.environ.get("TRITON_OVERRIDE_DIR",
                                           os.path.join(home, ".triton", "override")),
               manager_class=FileCacheManager, remote_manager_class=None)
    cache.get_triton_dir = lambda dirname: os.path.join(cache.home_dir, ".triton", dirname)
    return _module(
        "triton.knobs", "Stand-in for triton.knobs.", fallback=_missing_in("triton.knobs"),
        cache=cache,
        compilation=ns(override=False, dump_ir=False, store_binary_only=False,
                       always_compile=_env_flag("TRITON_ALWAYS_COMPILE"), use_ir_loc=None,
                       enable_asan=False, disable_line_info=False, front_end_debugging=False,
                       allow_non_constexpr_globals=_env_flag(
                           "TRITON_ALLOW_NON_CONSTEXPR_GLOBALS"),
                       instrumentation_mode="", listener=None),
        autotuning=ns(cache=_env_flag("TRITON_CACHE_AUTOTUNING"),
                      print=_env_flag("TRITON_PRINT_AUTOTUNING")),
        runtime=ns(interpret=_env_flag("TRITON_INTERPRET"), debug=_env_flag("TRITON_DEBUG"),
                   override_arch=os.environ.get("TRITON_OVERRIDE_ARCH"),
                   launch_enter_hook=None, launch_exit_hook=None, jit_cache_hook=None,
                   jit_post_compile_hook=None, add_stages_inspection_hook=None),
        language=ns(fp32_default=os.environ.get("TRITON_F32_DEFAULT"),
                    default_fp_fusion=_env_flag("TRITON_DEFAULT_FP_FUSION", True)),
        build=ns(backend_dirs=set(), impl=None), redis=ns(key_format="", host="", port=0),
        nvidia=ns(libdevice_path=None, libcuda_path=None, ptxas_options=None,
                  dump_nvptx=False, disable_ptxas_opt=False, mock_ptx_version=None),
        amd=ns(), proton=ns())


def stand_ins(front_names, triton_version, driver_config):
    """The modules installed at once, by name; `front_names`: the module whose names `triton`
    answers (minitriton's front door)."""
    driver_mod = _module("triton.runtime.driver", "The emulated GPU's driver.",
                         driver=driver_config, DriverConfig=DriverConfig)
    cache = _module("triton.runtime.cache", "Stand-in for triton.runtime.cache.",
                    FileCacheManager=FileCacheManager, default_cache_dir=default_cache_dir,
                    get_cache_manager=FileCacheManager,
                    triton_key=lambda: f"minitriton-{front_names.__version__}")
    runtime_errors = _module("triton.runtime.errors", "Stand-in for triton.runtime.errors.",
                             OutOfResources=errors.OutOfResources,
                             InterpreterError=errors.InterpreterError,
                             PTXASError=errors.PTXASError, AutotunerError=errors.AutotunerError)
    triton_errors = _module("triton.errors", "Triton's base error.", TritonError=errors.TritonError)
    runtime = _module("triton.runtime", "minitriton's runtime under Triton's names.",
                      package=True, fallback=lambda attr: getattr(runtime_package, attr),
                      driver=driver_config, jit=jit, autotuner=autotune, cache=cache,
                      errors=runtime_errors, JITFunction=jit.JITFunction,
                      KernelInterface=jit.KernelInterface, Autotuner=autotune.Autotuner,
                      Heuristics=autotune.Heuristics, Config=autotune.Config,
                      OutOfResources=errors.OutOfResources)
    compiler_errors = _module("triton.compiler.errors", "Stand-in.",
                              CompilationError=errors.CompilationError)
    compiler = _module("triton.compiler", "Stand-in for triton.compiler.", package=True,
                       CompilationError=errors.CompilationError, errors=compiler_errors,
                       CompiledKernel=compiled.CompiledKernel)
    backends_compiler = _module("triton.backends.compiler", "Stand-in.", GPUTarget=GPUTarget)
    backends = _module("triton.backends", "No backends: minitriton executes, it compiles "
                       "nothing.", package=True, backends={}, compiler=backends_compiler,
                       fallback=_missing_in("triton.backends"))
    cuda_gdc = _module("triton.language.extra.cuda.gdc", "Programmatic dependent launch.",
                       fallback=_missing_in("triton.language.extra.cuda.gdc"),
                       gdc_wait=extra_cuda.gdc_wait,
                       gdc_launch_dependents=extra_cuda.gdc_launch_dependents)
    cuda_utils = _module("triton.language.extra.cuda.utils", "NVIDIA intrinsics.",
                         fallback=_missing_in("triton.language.extra.cuda.utils"),
                         **{n: getattr(extra_cuda, n) for n in ("globaltimer", "num_threads",
                                                                "num_warps", "smid")})
    hip_utils = _placeholder("triton.language.extra.hip.utils",
                             PLACEHOLDERS["triton.language.extra.hip.utils"])
    hip = _module("triton.language.extra.hip", "AMD's math library: here the same libdevice.",
                  package=True, fallback=_missing_in("triton.language.extra.hip"),
                  libdevice=libdevice, utils=hip_utils)
    standard = _module("triton.language.standard", "The language's standard library.",
                       fallback=_language_or_missing("triton.language.standard"))
    placeholders = {name: _placeholder(name, what) for name, what in PLACEHOLDERS.items()
                    if name != "triton.language.extra.hip.utils"}
    cublas_mod = _module("triton._C.libtriton.nvidia.cublas", "cuBLAS on torch (standin/"
                         "cublas.py).", CublasLt=cublas.CublasLt)
    nvidia = _module("triton._C.libtriton.nvidia", "Stand-in.", package=True, cublas=cublas_mod)
    libtriton = _module("triton._C.libtriton", "Triton's C++ extension: only the cuBLAS "
                        "baseline the tutorials call.", package=True, nvidia=nvidia)
    c_ext = _module("triton._C", "Stand-in.", package=True, libtriton=libtriton)
    front = _module("triton", f"minitriton {front_names.__version__}, standing in for Triton "
                    f"{triton_version}.", package=True,
                    fallback=lambda attr: getattr(front_names, attr),
                    __version__=triton_version, language=language, runtime=runtime,
                    testing=testing, tools=tools, compiler=compiler, backends=backends,
                    OutOfResources=errors.OutOfResources, errors=triton_errors)
    knobs = _knobs()
    front.knobs = knobs
    return {
        **placeholders,
        "triton": front,
        "triton.knobs": knobs,
        "triton.language": language,
        "triton.language.math": _math_module(triton_version),
        "triton.language.core": language_core,
        "triton.language.standard": standard,
        "triton.language.target_info": _target_info(driver_config),
        "triton.language.extra": language_extra,
        "triton.language.extra.libdevice": libdevice,
        "triton.language.extra.cuda": extra_cuda,
        "triton.language.extra.cuda.libdevice": extra_cuda.libdevice,
        "triton.language.extra.cuda.gdc": cuda_gdc,
        "triton.language.extra.cuda.utils": cuda_utils,
        "triton.language.extra.hip": hip,
        "triton.language.extra.hip.libdevice": libdevice,
        "triton.language.extra.hip.utils": hip_utils,
        "triton.runtime": runtime,
        "triton.runtime.driver": driver_mod,
        "triton.runtime.jit": jit,
        "triton.runtime.autotuner": autotune,
        "triton.runtime.cache": cache,
        "triton.runtime.errors": runtime_errors,
        "triton.errors": triton_errors,
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
                f"No module named {fullname!r}: triton is minitriton here (python -m "
                f"minitriton, or minitriton.install_as_triton()), which has no {source}; "
                f"docs/limitations.md lists what is supported and what is not", name=fullname)
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


def _link_submodules(installed):
    """Each installed module as an attribute of its parent, as the import system leaves a
    package after importing a submodule: `import triton.compiler.compiler` finds the module in
    sys.modules and binds only `triton`, so `triton.compiler.compiler.X` (torch's inductor
    probes it) needs the attribute. A parent that is minitriton's own module (triton.language)
    gets only the names it lacks, and loses them again on exit: returns those (module, name)."""
    linked = []
    for name, module in installed.items():
        parent_name, _, child = name.rpartition(".")
        parent = installed.get(parent_name)
        if parent is None or child in vars(parent):
            continue
        if parent.__name__.startswith("minitriton"):
            if hasattr(parent, child):
                continue
            linked.append((parent, child))
        setattr(parent, child, module)
    return linked


def _forget_torchs_answer():
    """torch caches whether `triton` can be imported (torch.utils._triton); installing and
    uninstalling changes the answer, so its cache is cleared (else torch.compile, after an
    uninstall, imports a triton that is gone)."""
    module = sys.modules.get("torch.utils._triton")
    for name in ("has_triton_package", "has_triton"):
        clear = getattr(getattr(module, name, None), "cache_clear", None)
        if clear is not None:
            clear()


_VERSION_VARIABLE = "MINITRITON_TRITON_VERSION"
_ACTIVE: list = []  # what is installed now, innermost last: kept alive until uninstalled


class Installed:
    """minitriton installed as `triton` (see the module's docstring) until `uninstall()`, the
    end of a `with` block, or the end of the process; it stays whether or not the caller keeps
    this object (`minitriton.install_as_triton()` as a statement in a conftest.py)."""

    def __init__(self, front_names, triton_version=TRITON_VERSION, driver=None):
        self.driver_config = DriverConfig(driver if driver is not None else
                                          EmulatedDriver(get_gpu(DEFAULT_GPU)))
        self._saved = {name: mod for name, mod in sys.modules.items()
                       if name == "triton" or name.startswith("triton.")}
        for name in self._saved:
            del sys.modules[name]
        installed = stand_ins(front_names, triton_version, self.driver_config)
        sys.modules.update(installed)
        self._linked = _link_submodules(installed)
        self._finder = _AliasFinder()
        sys.meta_path.insert(0, self._finder)
        self.triton = sys.modules["triton"]
        # the language follows this release's rules where releases differ (Settings); in the
        # environment, so that processes the program starts (pytest-xdist workers) follow too
        self._saved_version = os.environ.get(_VERSION_VARIABLE)
        os.environ[_VERSION_VARIABLE] = str(triton_version)
        _ACTIVE.append(self)
        _forget_torchs_answer()

    def uninstall(self):
        """Remove every `triton*` module and put back what was there before (once)."""
        if self not in _ACTIVE:
            return
        _ACTIVE.remove(self)
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        for parent, child in self._linked:
            with contextlib.suppress(AttributeError):
                delattr(parent, child)
        for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
            del sys.modules[name]
        sys.modules.update(self._saved)
        if self._saved_version is None:
            os.environ.pop(_VERSION_VARIABLE, None)
        else:
            os.environ[_VERSION_VARIABLE] = self._saved_version
        _forget_torchs_answer()

    def __enter__(self):
        return self.triton

    def __exit__(self, *exc):
        self.uninstall()


@contextlib.contextmanager
def aliases(front_names, triton_version=TRITON_VERSION, driver=None):
    """minitriton installed as `triton` for the duration of a `with` block."""
    installed = Installed(front_names, triton_version, driver)
    try:
        yield installed.triton
    finally:
        installed.uninstall()
