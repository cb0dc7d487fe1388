"""Probe: which window offsets a TMA reduction (`desc.atomic_add`, fp32, 8x32 blocks on a
32x64 tensor) survives on the GPU; each case in its own process, since a fault poisons the
CUDA context. A full in-bounds reduction sums to 2048.
Decided: docs/decisions.md#descriptor-atomics-gpu-fault."""
import subprocess
import sys
from pathlib import Path

CHILD = Path(__file__).with_name("_descriptor_atomic_child.py")
CASES = ((0, 0, 32), (3, 0, 32), (1, 4, 32), (0, 8, 32), (0, 0, 30), (0, 3, 32), (-8, 0, 32),
         (0, -4, 32), (0, -32, 32))  # (row offset, column offset, tensor rows)


def main():
    for om, on, m in CASES:
        r = subprocess.run([sys.executable, str(CHILD), str(om), str(on), str(m)],
                           capture_output=True, text=True)
        last = [line for line in (r.stdout + r.stderr).splitlines()
                if line.startswith("sum") or "Error" in line]
        print(f"offsets (+{om}, +{on}), tensor {m}x64: rc {r.returncode} "
              f"{last[-1] if last else ''}", flush=True)


if __name__ == "__main__":
    main()
