"""Load the kernel corpus (kernels.py) bound to a Triton implementation."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

PATH = Path(__file__).with_name("kernels.py")


def load(triton, tl):
    name = f"tests_corpus_{triton.__name__}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, PATH)
    module = importlib.util.module_from_spec(spec)
    module.triton, module.tl, module.torch = triton, tl, torch
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def names(prefix):
    text = PATH.read_text()
    return [line.split("(")[0][4:] for line in text.splitlines()
            if line.startswith(f"def {prefix}")]


def make_rng(device, seed=0):
    gen = torch.Generator().manual_seed(seed)

    def rng(n):
        return torch.randn(n, generator=gen).to(device)
    return rng


def run_case(module, name, device, seed=0):
    outs = getattr(module, name)(device, make_rng(device, seed))
    return {k: v.detach().cpu() for k, v in outs.items()}
