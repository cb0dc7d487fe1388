"""Run the GPU probes by name (all of them when none is named):

    python benchmarks/probes/run.py [add|autograd_threads|descriptor_atomics|dot_order|
                                     l2_hints|matmul_epilogue|matmul_small|matmul_tiles|
                                     matmul_tma|reduce_order|rms_bwd_wide|rms_wide|
                                     rms_wide_bwd|rowsum|softmax_exchange|softmax_long ...]

Each probe is one module here with a `main()`, also runnable on its own. A probe times
variants of a kernel to choose a default; what each one decided, with its figures and date,
is in docs/decisions.md.
"""
import importlib
import sys
from pathlib import Path

PROBES = sorted(p.stem for p in Path(__file__).parent.glob("*.py")
                if not p.stem.startswith("_") and p.stem != "run")

if __name__ == "__main__":
    unknown = [n for n in sys.argv[1:] if n not in PROBES]
    if unknown:
        sys.exit(f"unknown probes {unknown}; choose from {PROBES}")
    for name in sys.argv[1:] or PROBES:
        print(f"== {name}", flush=True)
        importlib.import_module(name).main()
