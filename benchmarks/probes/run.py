"""Run the GPU probes by name (all of them when none is named; `--list` names them):

    python benchmarks/probes/run.py [--list] [PROBE ...]

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
    if sys.argv[1:] == ["--list"]:
        sys.exit(print("\n".join(PROBES)))
    unknown = [n for n in sys.argv[1:] if n not in PROBES]
    if unknown:
        sys.exit(f"unknown probes {unknown}; choose from {PROBES}")
    for name in sys.argv[1:] or PROBES:
        print(f"== {name}", flush=True)
        importlib.import_module(name).main()
