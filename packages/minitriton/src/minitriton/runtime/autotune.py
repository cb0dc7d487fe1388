"""`triton.autotune`, `triton.Config` and `triton.heuristics` for the simulator.

Timing means nothing on a CPU simulator, so the autotuner runs the first configuration that
survives `prune_configs_by` and records it as `best_config`; the kernel's results are the same
for every valid configuration, which is what the simulator is for.
"""
from __future__ import annotations

from .jit import KernelInterface


class Config:
    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None,
                 pre_hook=None, **extra):
        self.kwargs = dict(kwargs)
        self.num_warps, self.num_stages, self.num_ctas = num_warps, num_stages, num_ctas
        self.maxnreg, self.pre_hook = maxnreg, pre_hook

    def all_kwargs(self):
        opts = {"num_warps": self.num_warps, "num_stages": self.num_stages,
                "num_ctas": self.num_ctas}
        if self.maxnreg is not None:
            opts["maxnreg"] = self.maxnreg
        return {**self.kwargs, **opts}

    def __repr__(self):
        body = ", ".join(f"{k}: {v}" for k, v in self.kwargs.items())
        return f"{body}, num_warps: {self.num_warps}, num_stages: {self.num_stages}"


def _arg_dict(fn, args, kwargs):
    base = fn
    while not hasattr(base, "arg_names"):
        base = base.fn
    named = dict(zip(base.arg_names, args))
    named.update(kwargs)
    return named


class Autotuner(KernelInterface):
    def __init__(self, fn, configs, key, prune_configs_by=None, reset_to_zero=None,
                 restore_value=None, **ignored):
        self.fn = fn
        self.configs = list(configs) or [Config({})]
        self.key = list(key)
        self.prune_configs_by = prune_configs_by or {}
        self.best_config = None
        self.arg_names = getattr(fn, "arg_names", None)
        self.__name__ = getattr(fn, "__name__", "kernel")

    def run(self, *args, grid, **kwargs):
        configs = self.configs
        prune = self.prune_configs_by.get("early_config_prune")
        if prune is not None:
            configs = list(prune(configs, _arg_dict(self.fn, args, kwargs))) or configs
        config = configs[0]
        self.best_config = config
        if config.pre_hook is not None:
            config.pre_hook({**_arg_dict(self.fn, args, kwargs), **config.all_kwargs()})
        return self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())


class Heuristics(KernelInterface):
    def __init__(self, fn, values):
        self.fn = fn
        self.values = values
        self.arg_names = getattr(fn, "arg_names", None)
        self.__name__ = getattr(fn, "__name__", "kernel")

    def run(self, *args, grid, **kwargs):
        named = _arg_dict(self.fn, args, kwargs)
        for name, rule in self.values.items():
            kwargs[name] = rule(named)
            named[name] = kwargs[name]
        return self.fn.run(*args, grid=grid, **kwargs)


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
             do_bench=None, cache_results=False):
    def decorate(fn):
        return Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value)
    return decorate


def heuristics(values):
    def decorate(fn):
        return Heuristics(fn, values)
    return decorate
