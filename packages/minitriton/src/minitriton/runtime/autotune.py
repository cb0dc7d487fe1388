"""`triton.autotune`, `triton.Config` and `triton.heuristics` for the simulator.

The autotuner follows Triton 3.6's: one tuning per key (the values of the `key` arguments and
the dtypes of the arguments that have one), cached in `Autotuner.cache`; `prune_configs_by`
(`early_config_prune(configs, named_args, **kwargs)`, with the launch's keyword arguments as
Triton passes them, `grid` and `warmup` included; then `perf_model`/`top_k`); `reset_to_zero`,
`restore_value`, `pre_hook`/`post_hook` (the autotuner's and each Config's), called when Triton
calls them; every pruned config runs, and one that fails fails the launch, as on the GPU (only
what Triton counts as out of resources, shared memory over the GPU's or a failed
`static_assert`, times as infinite).

What is timed is not the CPU: each config's launch is ranked by its roofline time on the
emulated GPU `Settings.autotune_gpu` (runtime/gpus.py: H100 by default), max(bytes read and
written / bandwidth, tl.dot FLOPs / tensor-core rate), from the traffic the simulator counted.
Ties (elementwise kernels move the same bytes in every config; times equal to 9 significant
digits, perf_model.rank_key) go to the first config. With
`Settings.autotune_rank="model"` the rank is runtime/perf_model.py's predicted time instead
(occupancy, latency, tile efficiency, spills from the estimated resources), where the model
has constants for the GPU.
`configs_timings` maps each config to [t, t, t] in milliseconds (Triton's median, p20, p80).

A trial runs only a sample of its grid's programs (`Settings.autotune_sample`, 16 by
default: evenly spread over the launch order, first and last included; launch.sampling) and
its counts are scaled to the grid: what ranks the configs is traffic per program, which the
sample gives (benchmarks/autotune_sampling.py measures the agreement with full trials).
Then only the chosen config runs in full. Configs that differ only in `num_warps` and
`num_stages` share one trial (the simulated launch and its counts do not depend on them; each
config's shared memory is checked with its own stages): the autotuner's and the configs'
pre- and post-hooks run once per such group. Trials sum their dots with NumPy's matmul
(`exact_dot=False`): their outputs are thrown away, and the counts are the same. A kernel that spins on other programs (a `while`
loop and an atomic) has full trials, and so does a sampled trial that deadlocks.

Outputs hold only the chosen config's results: every tensor argument is copied before the
trials and put back after each one, then the chosen config runs on the arguments as they came
(after `reset_to_zero`, as Triton). The copy costs the arguments' size once more. A GPU puts
back only the arguments of `restore_value` (and zeroes those of `reset_to_zero`): its trials,
and each timing repetition, run on the same buffers one after the other. So where a trial
reads an argument it writes (an update in place, an atomic accumulation) and neither list
names it, the tuner runs the chosen config once more on its own output, then puts back the
first run's result; if the second run changed it, it warns (`InPlaceAutotuneWarning`, once
per autotuned kernel) that the GPU's result would be that of many launches, and names the
arguments for `restore_value`.
"""
from __future__ import annotations

import builtins
import sys
import warnings

import numpy as np

from ..context import Observer
from ..errors import CompilationError, DeadlockError
from ..errors import OutOfResources, PTXASError  # noqa: F401 - triton.runtime.autotuner's
from ..host import as_numpy
from ..settings import configure, current_settings
from ..source import internal_frame
from .compiled import estimate
from .gpus import gpu, roofline_seconds
from .jit import KernelInterface
from .launch import sampling, scaling, watching
from .resources import ResourceWatcher
from .perf_model import CONSTANTS, launch_of, predict, rank_key
from .predicting import PREDICTING


# A config's options that the simulated launch and its counts do not depend on: configs that
# differ only in these share one trial (their timings differ through the shared-memory check).
_PERFORMANCE_ONLY = ("num_warps", "num_stages")


class InPlaceAutotuneWarning(UserWarning):
    """An autotuned kernel updates an argument in place that `restore_value` does not name:
    minitriton puts it back after each trial, a GPU does not."""


class _Touched(Observer, check=False):
    """A watcher that notes the arguments a launch read and those it wrote."""

    def __init__(self):
        self.read, self.written = set(), set()

    def on_load(self, access):
        self.read.add(access.buf.name)

    def on_store(self, access):
        self.written.add(access.buf.name)

    def on_atomic(self, access):
        self.read.add(access.buf.name)
        self.written.add(access.buf.name)


class Config:
    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None,
                 pre_hook=None, ir_override=None):
        self.kwargs = dict(kwargs)
        self.num_warps, self.num_stages, self.num_ctas = num_warps, num_stages, num_ctas
        self.maxnreg, self.pre_hook, self.ir_override = maxnreg, pre_hook, ir_override

    def all_kwargs(self):
        opts = (("num_warps", self.num_warps), ("num_ctas", self.num_ctas),
                ("num_stages", self.num_stages), ("maxnreg", self.maxnreg),
                ("ir_override", self.ir_override))
        return {**self.kwargs, **{k: v for k, v in opts if v is not None}}

    def _identity(self):
        return (*self.all_kwargs().items(), self.pre_hook)

    def __hash__(self):
        return hash(self._identity())

    def __eq__(self, other):
        return isinstance(other, Config) and self._identity() == other._identity()

    def __str__(self):
        body = [f"{k}: {v}" for k, v in self.kwargs.items()]
        body += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}",
                 f"num_stages: {self.num_stages}", f"maxnreg: {self.maxnreg}"]
        return ", ".join(body)

    __repr__ = __str__


def _is_array(x):
    return isinstance(x, np.ndarray) or (type(x).__module__.startswith("torch")
                                         and hasattr(x, "data_ptr"))


def _user_level():
    """warnings.warn's stacklevel that points at the caller's launch, out of minitriton."""
    frame, level = sys._getframe(1), 1
    while frame is not None and internal_frame(frame.f_code):
        frame, level = frame.f_back, level + 1
    return level


def _array_of(value):
    """The tensor an argument passes (a descriptor's base), else the value."""
    return getattr(value, "base", None) if type(value).__name__ == "TensorDescriptor" \
        else value


def _zero(x):
    if hasattr(x, "zero_"):
        x.zero_()
    else:
        x[...] = 0


class _Snapshot:
    """Copies of every tensor argument (and descriptor base), to put back after a trial."""

    def __init__(self, named):
        self.saved, seen = [], set()
        for name, value in named.items():
            value = getattr(value, "base", None) if type(value).__name__ == "TensorDescriptor" \
                else value
            if _is_array(value) and id(value) not in seen:
                seen.add(id(value))
                view = as_numpy(value, name)
                if view.flags.writeable:
                    self.saved.append((view, view.copy()))

    def restore(self):
        for view, copy in self.saved:
            np.copyto(view, copy)


class Autotuner(KernelInterface):
    def __init__(self, fn, configs, key, prune_configs_by=None, reset_to_zero=None,
                 restore_value=None, pre_hook=None, post_hook=None, **ignored):
        self.fn = fn
        self.configs = list(configs) or [Config({})]
        self.keys = list(key)
        self.cache = {}
        self.configs_timings = None
        self.best_config = None
        self.nargs = None
        base = fn
        while not hasattr(base, "arg_names") or base.arg_names is None:
            base = base.fn
        self.arg_names = base.arg_names
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.reset_to_zero = list(reset_to_zero or ())
        self.restore_value = list(restore_value or ())
        self._restore_copies = {}
        self._in_place_checked = False  # whether the chosen config ran twice on its output
        self._suspects = []  # arguments a trial read and wrote that neither list names
        self._spins = _may_spin(base)
        self.pre_hook = pre_hook or self._default_pre_hook
        self.post_hook = post_hook or self._default_post_hook
        prune = prune_configs_by or {}
        self.early_config_prune = prune.get("early_config_prune")
        self.perf_model = prune.get("perf_model")
        self.configs_top_k = prune.get("top_k", 1.0)

    def _default_pre_hook(self, kwargs, reset_only=False):
        for name in self.reset_to_zero:
            _zero(kwargs[name])
        if not reset_only:
            self._restore_copies = {n: as_numpy(kwargs[n], n).copy() for n in self.restore_value}

    def _default_post_hook(self, kwargs, exception):
        for name in self.restore_value:
            np.copyto(as_numpy(kwargs[name], name), self._restore_copies[name])
        self._restore_copies = {}

    def _key(self, kwargs):
        named = {k: v for k, v in {**self.nargs, **kwargs}.items() if k in self.arg_names}
        key = [named[k] for k in self.keys if k in named]
        key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        return tuple(key)

    def prune_configs(self, kwargs):
        """Triton's pruning: `early_config_prune`, then the `top_k` best by `perf_model`."""
        pruned = self.configs
        if self.early_config_prune:
            pruned = self.early_config_prune(self.configs, self.nargs, **kwargs)
            if not pruned:
                raise ValueError("No valid autotuner configs after pruning. "
                                 "`early_config_prune` should return at least one config.")
        if self.perf_model:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = int(len(self.configs) * top_k)
            elif not isinstance(top_k, int):
                raise TypeError("Error while pruning configs, top_k must be either 1) a float "
                                "<= 1.0 or 2) an int")
            if len(pruned) > top_k:
                est = {c: self.perf_model(**self.nargs, **kwargs, **c.all_kwargs())
                       for c in pruned}
                pruned = sorted(est, key=est.get)[:top_k]
        return list(pruned)

    def _trial(self, args, config, kwargs, snapshot, sample):
        conflicts = kwargs.keys() & config.kwargs.keys()
        if conflicts:
            raise ValueError(f"Conflicting meta-parameters: {', '.join(conflicts)}. Make sure "
                             "that you don't re-define auto-tuned symbols.")
        current = dict(kwargs, **config.all_kwargs())
        full_nargs = {**self.nargs, **current}
        if config.pre_hook:
            config.pre_hook(full_nargs)
        self.pre_hook(full_nargs)
        probe, touched = ResourceWatcher(), _Touched()
        try:
            # the trial's results are thrown away: its dots need the GPU's counts, not its bits;
            # its time is not part of a `--small` benchmark's estimate (scaling)
            with watching(probe, touched), sampling(sample), scaling(), \
                    configure(exact_dot=False):
                record = self.fn.run(*args, **current)
            record.trial = True  # not one of the program's launches (predicting leaves it out)
            self.post_hook(full_nargs, exception=None)
        except Exception as e:
            try:
                self.post_hook(full_nargs, exception=e)
            finally:
                snapshot.restore()
            if isinstance(e, DeadlockError) and sample:  # it waits on programs not sampled
                return self._trial(args, config, kwargs, snapshot, 0)
            if isinstance(e, CompilationError) and "Static assertion failed" in e.message:
                return None  # Triton's CompileTimeAssertionFailure: timed as infinite
            raise
        snapshot.restore()
        self._note_in_place(touched, full_nargs)
        probe.arg_bytes = sum(_array_of(v).nbytes for v in full_nargs.values()
                              if _is_array(_array_of(v)))
        return record, probe

    @staticmethod
    def _time(trial, config, target, rank="roofline", launches=None):
        """A config's [t, t, t] in ms from a trial of its group (the counts of its launch
        under this config's warps and stages); infinite when the trial failed as Triton's
        compile-time checks do, or the config's shared memory exceeds the GPU's."""
        if trial is None:
            return [float("inf")] * 3
        record, probe = trial
        options = {**record.options, **{k: v for k, v in config.all_kwargs().items()
                                        if k in _PERFORMANCE_ONLY}}
        shared = estimate(options, probe.max_block, probe.dots, probe.reductions,
                          probe.dot_sites, probe.tma)[2]
        if shared > target.shared_per_block_optin:  # Triton's OutOfResources
            return [float("inf")] * 3
        if rank == "model" and target.key in CONSTANTS:  # the model, where it has constants
            launch = launch_of(record, probe.dots, probe.max_block, probe.reductions, options,
                               getattr(probe, "arg_bytes", None), probe.dot_sites,
                               probe.special, probe.rounds, probe.tma)
            ms = predict(launch, target.key).seconds * 1e3
            if launches is not None:  # what minitriton.predicting shows of each config
                launches[config] = launch
        else:
            ran, total = record.sampled or (1, 1)
            ms = roofline_seconds(target, record, probe.dots) * 1e3 * total / ran
        return [ms, ms, ms]

    def _note_in_place(self, touched, full_nargs):
        """The arguments a trial read and wrote that neither `restore_value` nor
        `reset_to_zero` names (checked after the chosen config's run: _check_in_place)."""
        if self._in_place_checked or self._suspects:
            return
        kept = set(self.restore_value) | set(self.reset_to_zero)
        self._suspects = [n for n in self.arg_names if n in touched.read and n in touched.written
                          and n not in kept and _is_array(_array_of(full_nargs.get(n)))]

    def _check_in_place(self, args, config, current):
        """After the chosen config ran on arguments it read and wrote (_note_in_place): run it
        again on its own output, as the GPU's next trial or timing repetition would, put the
        first run's result back, and warn if the second changed it (see the module)."""
        suspects, self._suspects = self._suspects, []
        self._in_place_checked = True
        full_nargs = {**self.nargs, **current}
        once = {n: as_numpy(_array_of(full_nargs[n]), n).copy() for n in suspects}
        if config.pre_hook:
            config.pre_hook(full_nargs)
        self.pre_hook(full_nargs)
        try:
            self.fn.run(*args, **current)
        except Exception as e:  # it fails on its own output: the GPU's next trial would too
            self.post_hook(full_nargs, exception=e)
            changed = suspects
        else:
            self.post_hook(full_nargs, exception=None)
            changed = [n for n in suspects if not np.array_equal(
                once[n], as_numpy(_array_of(full_nargs[n]), n),
                equal_nan=once[n].dtype.kind in "fc")]
        for n in suspects:
            np.copyto(as_numpy(_array_of(full_nargs[n]), n), once[n])
        if not changed:
            return
        names = ", ".join(f"`{n}`" for n in changed)
        listed = ", ".join(repr(n) for n in changed)
        several = len(changed) > 1
        warnings.warn(
            f"autotuning `{self.__name__}`: it reads and writes {names} (in place), and a second "
            f"run of a config on {'their' if several else 'its'} output gives a different "
            f"result. minitriton puts {'them' if several else 'it'} back after each trial, so "
            f"the result here is one launch's; on a GPU every trial (and every timing "
            f"repetition of do_bench) runs on the same buffer, one after the other, and "
            f"{'they' if several else 'it'} would hold the result of many launches. Pass "
            f"restore_value=[{listed}] to triton.autotune (or reset_to_zero=[...] for an "
            f"accumulator that starts from zero).", InPlaceAutotuneWarning,
            stacklevel=_user_level())

    def _tune(self, key, args, kwargs):
        configs = self.prune_configs(kwargs)
        settings = kwargs.get("minitriton_settings") or current_settings()
        target = gpu(settings.autotune_gpu, "autotune_gpu")
        snapshot = _Snapshot({**self.nargs, **kwargs})
        sample = 0 if self._spins or len(configs) < 2 else settings.autotune_sample
        trials, timings, launches = {}, {}, {}
        for c in configs:  # configs that differ in warps and stages only share one trial
            group = (*((k, v) for k, v in c.all_kwargs().items() if k not in _PERFORMANCE_ONLY),
                     c.pre_hook)
            if group not in trials:
                trials[group] = self._trial(args, c, kwargs, snapshot, sample)
            elif trials[group] is not None:
                trials[group][0].stands_for += 1
            timings[c] = self._time(trials[group], c, target, settings.autotune_rank, launches)
        self.cache[key] = builtins.min(timings, key=lambda c: rank_key(timings[c][0]))
        self.configs_timings = timings
        watcher = PREDICTING.get()
        if watcher is not None:  # minitriton.predicting: the ranking goes with the next launch
            watcher.tuned(self.__name__, timings, launches)
        self.pre_hook({**self.nargs, **kwargs, **self.cache[key].all_kwargs()}, reset_only=True)

    def run(self, *args, grid, warmup=False, **kwargs):
        kwargs = {"grid": grid, "warmup": warmup, **kwargs}  # what Triton's run receives
        self.nargs = dict(zip(self.arg_names, args))
        if len(self.configs) > 1:
            key = self._key(kwargs)
            if key not in self.cache:
                self._tune(key, args, kwargs)
            config = self.cache[key]
        else:
            config = self.configs[0]
        self.best_config = config
        if config.pre_hook is not None:
            config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
        try:
            record = self.fn.run(*args, **kwargs, **config.all_kwargs())
            if self._suspects and not self._in_place_checked:
                self._check_in_place(args, config, dict(kwargs, **config.all_kwargs()))
            return record
        finally:
            self.nargs = None

    def warmup(self, *args, grid, **kwargs):
        """One CompiledKernel per pruned config, as Triton's `Autotuner.warmup`."""
        self.nargs = dict(zip(self.arg_names, args))
        try:
            return [self.fn.warmup(*args, grid=grid, **kwargs, **c.all_kwargs())
                    for c in self.prune_configs({"grid": grid, **kwargs})]
        finally:
            self.nargs = None


def _may_spin(fn):
    """Whether the kernel's source has a `while` loop and an atomic: a program that may wait
    for others (a lock, a flag), which a sample of the programs could leave waiting."""
    src = getattr(fn, "src", None) or ""
    return "while" in src and "atomic" in src


class Heuristics(KernelInterface):
    def __init__(self, fn, values):
        self.fn = fn
        self.values = values
        self.arg_names = getattr(fn, "arg_names", None)
        self.__name__ = getattr(fn, "__name__", "kernel")

    def _apply(self, args, kwargs):
        named = {**dict(zip(self.arg_names, args)), **kwargs}
        for name, rule in self.values.items():
            kwargs[name] = named[name] = rule(named)
        return kwargs

    def run(self, *args, grid, **kwargs):
        return self.fn.run(*args, grid=grid, **self._apply(args, kwargs))

    def warmup(self, *args, grid, **kwargs):
        return self.fn.warmup(*args, grid=grid, **self._apply(args, kwargs))


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
             do_bench=None, cache_results=False):
    """Decorator: tune `configs` once per value of `key` (see the module's docstring)."""
    def decorate(fn):
        return Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value,
                         pre_hook, post_hook)
    return decorate


def heuristics(values):
    def decorate(fn):
        return Heuristics(fn, values)
    return decorate
