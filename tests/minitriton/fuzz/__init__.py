"""A differential fuzzer for minitriton: generated kernels run on minitriton and on real Triton.

    from fuzz import generate_seeded, run_cases, summarize
    records = run_cases(range(100), real="minitriton-sequential")  # no GPU: the other executor

gen.py writes the kernels (hypothesis or a seed draws every choice), data.py their inputs,
run.py runs them on both sides, compare.py says when two outputs agree. Imports need only
numpy, ml_dtypes (and hypothesis for `HypothesisDraw`); torch and triton only for `Gpu`.
"""
from .compare import TOLERANCE
from .gen import CATEGORIES, Case, HypothesisDraw, RandomDraw, generate, generate_seeded
from .run import decode, module_source, run_cases, run_group, summarize

__all__ = ["CATEGORIES", "Case", "HypothesisDraw", "RandomDraw", "TOLERANCE", "decode",
           "generate", "generate_seeded", "module_source", "run_cases", "run_group",
           "summarize"]
