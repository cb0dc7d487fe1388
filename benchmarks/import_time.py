"""Start-up time: how long `import minitriton` takes, against `import numpy` alone.

    python benchmarks/import_time.py [--repeats N] [--json FILE] [--importtime]

Each figure is a fresh interpreter (`python -c "import ..."`), timed from outside, so it
includes the interpreter's own start; the difference between the two rows is what minitriton
adds (goal: under 0.3 s). The last row times `import minitriton` inside a process that has
already imported numpy, which a busy machine disturbs less. A third row imports ml_dtypes too, the cost that bf16/fp8 pay on
first use (minitriton imports it lazily). `--importtime` also prints the ten slowest modules
of `python -X importtime -c "import minitriton"` (self time, microseconds).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [str(ROOT / "packages/minitriton/src"), os.environ.get("PYTHONPATH", "")]))
STATEMENTS = {"numpy": "import numpy",
              "minitriton": "import minitriton",
              "minitriton + ml_dtypes": "import minitriton, ml_dtypes"}


def wall(statement):
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], env=ENV, check=True)
    return time.perf_counter() - start


_AFTER_NUMPY = ("import time; import numpy; t = time.perf_counter(); import minitriton; "
                "print(time.perf_counter() - t)")


def after_numpy():
    """Seconds `import minitriton` takes once numpy is imported, timed inside the process."""
    done = subprocess.run([sys.executable, "-c", _AFTER_NUMPY], env=ENV, capture_output=True,
                          text=True, check=True)
    return float(done.stdout)


def quantiles(times):
    q = statistics.quantiles(times, n=10, method="inclusive")  # deciles: q[1] = p20, q[7] = p80
    return statistics.median(times), q[1], q[7]


def slowest_modules(n=10):
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import minitriton"],
                          env=ENV, capture_output=True, text=True, check=True)
    rows = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            rows.append((int(parts[0]), int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:n]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--importtime", action="store_true")
    args = parser.parse_args()
    for statement in STATEMENTS.values():
        wall(statement)  # warm the file cache
    rows = []
    times = {label: [] for label in STATEMENTS}
    inside = []
    for _ in range(args.repeats):  # interleaved, so that a busy moment hits every row alike
        for label, statement in STATEMENTS.items():
            times[label].append(wall(statement))
        inside.append(after_numpy())
    base = statistics.median(times["numpy"])
    print(f"{'import':<24}{'median s':>10}{'p20':>8}{'p80':>8}{'over numpy':>12}")
    for label, t in times.items():
        med, p20, p80 = quantiles(t)
        print(f"{label:<24}{med:>10.3f}{p20:>8.3f}{p80:>8.3f}{med - base:>12.3f}")
        rows.append(dict(statement=STATEMENTS[label], median_s=med, p20_s=p20, p80_s=p80,
                         over_numpy_s=med - base, repeats=args.repeats))
    med, p20, p80 = quantiles(inside)
    print(f"{'minitriton after numpy':<24}{med:>10.3f}{p20:>8.3f}{p80:>8.3f}"
          f"{'(in-process)':>12}")
    rows.append(dict(statement=_AFTER_NUMPY, median_s=med, p20_s=p20, p80_s=p80,
                     repeats=args.repeats))
    if args.importtime:
        print("\nslowest modules (self us, cumulative us):")
        for self_us, cumulative, name in slowest_modules():
            print(f"  {self_us:>9} {cumulative:>9} {name}")
    if args.json:
        meta = dict(date=datetime.date.today().isoformat(), python=platform.python_version(),
                    machine=platform.machine(), cpus=os.cpu_count(),
                    processor=platform.processor())
        Path(args.json).write_text(json.dumps([dict(r, **meta) for r in rows], indent=1))


if __name__ == "__main__":
    main()
