"""minitriton's settings, in one frozen dataclass.

Three ways to set them, the later winning:
  * the environment: `MINITRITON_EXECUTOR=sequential`, `MINITRITON_SANITIZE=races,order`
    (any check that is off by default, by its field name: races, order, padding, footprint,
    view_bounds, coverage, trace, sectors;
    `uninitialized=y_ptr+tmp_ptr` poisons those arguments), `MINITRITON_SEED`,
    `MINITRITON_STRICT_GLOBALS=0`, `MINITRITON_EXACT_DOT=0`, `MINITRITON_DOT_ENGINE=numpy`, `MINITRITON_AUTOTUNE_GPU=H200`;
  * for a block of code, or from now on: `minitriton.configure(races=True)` (a context manager,
    or a plain call);
  * for one launch: `kernel[grid](..., minitriton_settings=Settings(races=True))`.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import os
from typing import Literal, get_args

Executor = Literal["lockstep", "sequential"]
DotEngine = Literal["auto", "numba", "numpy"]
AutotuneRank = Literal["roofline", "model"]
EXECUTORS, DOT_ENGINES = get_args(Executor), get_args(DotEngine)
AUTOTUNE_RANKS = get_args(AutotuneRank)


@dataclasses.dataclass(frozen=True)
class Settings:
    """How launches run and what they check. Every check is off by default except `bounds`;
    none changes a correct kernel's results.

    executor: "lockstep" (default) runs all programs of a launch together, every value carrying
        a leading program axis: fast, and a racy kernel loses updates as on a GPU. Programs whose
        Python control flow diverges are re-run in groups, so results equal the sequential ones.
        "sequential" runs one program after another, like a debugger: `print` and `breakpoint()`
        work per program.
    chunk_bytes: the memory budget for one lockstep chunk; large grids run in chunks of programs.
    rollback_limit: buffers up to this size are restored if a launch fails (bigger ones keep the
        writes of programs that ran before the error, and the error says so).
    bounds: raise OutOfBoundsError on any access outside the storage of the argument a pointer
        came from (a torch tensor's untyped storage, a NumPy view's base array: a GPU faults
        or reads foreign memory there). Off, such lanes read 0 and are not written.
    view_bounds: an access outside the view passed in but inside its storage (a slice
        `base[1:]` read at offset -1, a column block read past its last column) is legal on a
        GPU and warns (OutsideViewWarning, once per argument and launch); True makes it an
        OutOfBoundsError (for teaching).
    coverage: after the launch, record for each argument stored to how many elements of its
        view were written and where the unwritten ones are (`LaunchRecord.args[name].coverage`),
        and warn (PartialWriteWarning) when an argument was written only partly; costs a
        bitmap per written argument.
    trace: record who touched what (observe/trace.py; `with minitriton.trace() as t:`): per
        argument, which program read and wrote each element, at which kernel line and step,
        masked-off lanes and the offsets they would have addressed, atomics; the record is
        `LaunchRecord.trace`, drawn by `minitriton.viz` (docs/visualization.md).
    trace_limit: the most element accesses (masked lanes included, about 24 bytes each) one
        launch's trace may hold; the record is exact, never sampled: a bigger launch raises
        TraceLimitError, its writes undone.
    sectors: memory insight per kernel line (observe/sectors.py): for each load and store line,
        elements requested, bytes moved, distinct 32-byte sectors per program (coalescing
        efficiency) and unique against total bytes across programs (`LaunchRecord.lines`).
    races: raise RaceError when one program writes an address that another program of the same
        launch reads or writes without atomics.
    order: run the launch a second time, sequentially in a shuffled order (seeded by `seed`),
        and raise OrderError if any output differs.
    uninitialized: names of arguments to poison before the launch (NaN for floats, the minimum
        value for ints); loading an element of them that no program wrote raises
        UninitializedReadError.
    padding: raise PaddingError when masked-out lanes reach a reduction or `tl.dot` with a value
        that changes the result (e.g. `other=0.0` feeding `tl.max` instead of `-inf`).
    footprint: also count the distinct elements each argument had read and written (the
        unique footprint, for roofline bounds); costs a bitmap per argument.
    strict_globals: compile kernels under Triton's rules for the names a kernel uses (on by
        default): a global or closure variable must be a `tl.constexpr(...)` value, a dtype, a
        module, a @jit function or a triton.language builtin; no plain Python function may be
        referenced; of Python's builtins only those Triton knows. A kernel that breaks them
        raises CompilationError at its first launch, as on the GPU. False runs such kernels as
        Triton's interpreter (TRITON_INTERPRET=1) does, leniently.
    autotune_gpu: the emulated GPU whose roofline (memory bandwidth, tl.dot throughput) the
        autotuner ranks configurations on: "H100" (default), "H200", "A100".
    autotune_rank: what the autotuner ranks configurations by: "model" (default),
        runtime/perf_model.py's predicted time where it has constants for `autotune_gpu` (the
        H100 and H200; elsewhere the roofline), or "roofline" (`MINITRITON_AUTOTUNE_RANK`). On
        20 autotuned kernels it was not fitted on (benchmarks/perf_model_validate.py, an H100)
        the model's picks from the simulator alone ran within 10 % of the best configuration
        in 12 and no slower than the median in 19; on the sweep's matmuls the roofline's ran
        6-11x the best (docs/hardware.md).
    autotune_sample: how many of a grid's programs each autotuning trial runs (the ranking
        needs counts per program; launch.sampling), 0 for all (`MINITRITON_AUTOTUNE_SAMPLE`);
        the chosen config then runs in full.
    exact_dot: `tl.dot` of fp16/bf16/fp32 operands sums as the H200's tensor cores do, bit for
        bit (on by default; language/dot.py). It costs 10 to 50 times NumPy's matmul on the
        CPU; False (`MINITRITON_EXACT_DOT=0`) sums with NumPy's fp32 matmul instead, within an
        fp32 rounding of the sum but not the GPU's bits.
    dot_engine: how the exact dot is computed, never what it gives: "auto" (default) uses the
        compiled kernels of language/dot_compiled.py when numba is installed (`pip install
        minitriton[fast]`), "numba" requires them, "numpy" keeps to the NumPy reference
        (`MINITRITON_DOT_ENGINE`). Both give the same bits.
    triton_version: the Triton release whose language rules kernels follow where releases
        differ (docs/limitations.md lists where): "3.6.0" by default, the GPU's; the runner's
        and the pytest plugin's --triton-version set it (MINITRITON_TRITON_VERSION).
    keep_heap: on the first launch, have malloc keep freed memory for the next launch instead
        of giving it back to the OS and faulting it in again (Linux with glibc; process-wide,
        once; runtime/heap.py): launches of megabyte blocks take 1.5-2x less time. False
        (`MINITRITON_KEEP_HEAP=0`) leaves malloc as it is.
    """

    executor: Executor = "lockstep"
    chunk_bytes: int = 256 << 20
    rollback_limit: int = 256 << 20
    bounds: bool = True
    view_bounds: bool = False
    races: bool = False
    order: bool = False
    seed: int = 0
    uninitialized: tuple = ()
    padding: bool = False
    footprint: bool = False
    coverage: bool = False
    trace: bool = False
    trace_limit: int = 1 << 24
    sectors: bool = False
    strict_globals: bool = True
    autotune_gpu: str = "H100"
    autotune_sample: int = 16
    autotune_rank: AutotuneRank = "model"
    exact_dot: bool = True
    dot_engine: DotEngine = "auto"
    triton_version: str = "3.6.0"
    keep_heap: bool = True

    def __post_init__(self):
        if self.executor not in EXECUTORS:
            raise ValueError(f"unknown executor {self.executor!r}; choose one of {EXECUTORS}")
        if isinstance(self.uninitialized, str):
            object.__setattr__(self, "uninitialized", (self.uninitialized,))
        if self.autotune_sample < 0:
            raise ValueError(f"autotune_sample must be 0 (every program) or more, got "
                             f"{self.autotune_sample}")
        if self.autotune_rank not in AUTOTUNE_RANKS:
            raise ValueError(f"unknown autotune_rank {self.autotune_rank!r}; choose one of "
                             f"{AUTOTUNE_RANKS}")
        if self.dot_engine not in DOT_ENGINES:
            raise ValueError(f"unknown dot_engine {self.dot_engine!r}; choose one of "
                             f"{DOT_ENGINES}")

    @classmethod
    def from_env(cls, env=None):
        env = os.environ if env is None else env
        kwargs = {}
        if env.get("MINITRITON_EXECUTOR"):
            kwargs["executor"] = env["MINITRITON_EXECUTOR"].strip()
        if env.get("MINITRITON_SEED"):
            kwargs["seed"] = int(env["MINITRITON_SEED"])
        for name in ("strict_globals", "exact_dot", "keep_heap"):
            value = env.get(f"MINITRITON_{name.upper()}")
            if value:
                kwargs[name] = value.strip().lower() not in ("0", "false", "no", "off")
        if env.get("MINITRITON_TRITON_VERSION"):
            kwargs["triton_version"] = env["MINITRITON_TRITON_VERSION"].strip()
        if env.get("MINITRITON_AUTOTUNE_SAMPLE"):
            kwargs["autotune_sample"] = int(env["MINITRITON_AUTOTUNE_SAMPLE"])
        if env.get("MINITRITON_DOT_ENGINE"):
            kwargs["dot_engine"] = env["MINITRITON_DOT_ENGINE"].strip().lower()
        if env.get("MINITRITON_AUTOTUNE_RANK"):
            kwargs["autotune_rank"] = env["MINITRITON_AUTOTUNE_RANK"].strip().lower()
        if env.get("MINITRITON_AUTOTUNE_GPU"):
            kwargs["autotune_gpu"] = env["MINITRITON_AUTOTUNE_GPU"].strip()
        for item in filter(None, (s.strip() for s in env.get("MINITRITON_SANITIZE", "").split(","))):
            name, _, value = item.partition("=")
            if name in _CHECKS:
                kwargs[name] = True
            elif name == "uninitialized" and value:
                kwargs["uninitialized"] = tuple(value.split("+"))
            else:
                raise ValueError(f"MINITRITON_SANITIZE: unknown check {item!r} "
                                 f"({', '.join(_CHECKS)}, uninitialized=ARG+ARG)")
        return cls(**kwargs)


@functools.lru_cache(maxsize=64)  # (a dot asks at every call: parse each string once)
def version_tuple(version):
    """(major, minor, patch) of a release string: "3.6.0" -> (3, 6, 0), "3.9.0+git" too."""
    parts = []
    for piece in str(version).split(".")[:3]:
        digits = ""
        for c in piece:
            if not c.isdigit():
                break
            digits += c
        parts.append(int(digits or 0))
    return tuple(parts + [0] * (3 - len(parts)))


def triton_release():
    """The emulated Triton release's (major, minor, patch) for the current settings."""
    return version_tuple(current_settings().triton_version)


# the on/off checks MINITRITON_SANITIZE can name: every boolean field that is off by default
_CHECKS = tuple(f.name for f in dataclasses.fields(Settings) if f.default is False)
_SETTINGS: contextvars.ContextVar = contextvars.ContextVar("minitriton_settings", default=None)


# the variables Settings.from_env reads: the settings of the environment are made again only
# when one of them changed (current_settings runs at every launch and dot)
_ENV_NAMES = ("MINITRITON_EXECUTOR", "MINITRITON_SEED", "MINITRITON_STRICT_GLOBALS",
              "MINITRITON_EXACT_DOT", "MINITRITON_TRITON_VERSION", "MINITRITON_AUTOTUNE_SAMPLE",
              "MINITRITON_DOT_ENGINE", "MINITRITON_AUTOTUNE_GPU", "MINITRITON_AUTOTUNE_RANK",
              "MINITRITON_SANITIZE")
_FROM_ENV: dict = {}


def current_settings() -> Settings:
    s = _SETTINGS.get()
    if s is not None:
        return s
    key = tuple(map(os.environ.get, _ENV_NAMES))
    found = _FROM_ENV.get(key)
    if found is None:
        if len(_FROM_ENV) > 64:
            _FROM_ENV.clear()
        found = _FROM_ENV[key] = Settings.from_env()
    return found


class configure(contextlib.AbstractContextManager):
    """`minitriton.configure(races=True)`: change settings for a `with` block, or from now on."""

    def __init__(self, **changes):
        self._token = _SETTINGS.set(dataclasses.replace(current_settings(), **changes))

    def __exit__(self, *exc):
        _SETTINGS.reset(self._token)
        return False
