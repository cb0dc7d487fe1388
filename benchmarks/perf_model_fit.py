"""Fit minitriton's performance model (runtime/perf_model.py) on a stored configuration sweep and
say how well it predicts: every row, cases left out of the fit, and which configuration it picks.

    python benchmarks/perf_model_fit.py [--csv docs/results/config-sweep-h100-2026-12-05.csv]

The sweep (benchmarks/config_sweep.py, measured on a GPU) gives per row a kernel, shape, dtype,
configuration, grid, median time, the bytes and FLOPs of the case, and the compiled program's
registers and shared memory. The fit minimises the absolute log error of the predicted time,
each (kernel, shape, dtype) case weighted alike whatever its number of configurations, by
Nelder-Mead over the logarithms of the constants. Leave-one-case-out: the constants fitted on
every other case predict the case left out. Prints the constants (for perf_model.CONSTANTS) and
a table per case: predictions within 1.3x of the measured median, and the measured time of the
configuration the model ranks first against the best and the median configuration measured.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "packages/minitriton/src"))

from minitriton.runtime.perf_model import Constants, Launch, predict  # noqa: E402

START = Constants(launch=4e-6, latency=1e-6, warp_bytes=1024.0, mem_eff=0.85, tc_eff=0.7,
                  tile_half=4096.0, l2_ratio=2.5, spill_factor=5.0, step_latency=5e-7,
                  program_cost=2e-7)
ITEMSIZE = {"fp32": 4, "fp16": 2, "bf16": 2}
NAMES = [f for f in START.as_dict()]


def gpu_key(name):
    """H100, H200...: the model's table key in the GPU's name as torch reports it."""
    for key in ("H100", "H200", "A100", "B200"):
        if key in name:
            return key
    raise ValueError(f"no model GPU in {name!r}")


def load(path):
    """{(kernel, shape, dtype): [(Launch, measured seconds, config), ...]} and the GPU key."""
    cases, key = defaultdict(list), None
    for row in csv.DictReader(open(path)):
        if row["error"] or not row["median_ms"]:
            continue
        key = key or gpu_key(row["gpu"])
        config = json.loads(row["config"])
        matmul = "BLOCK_M" in config
        traffic = iterations = 0
        if matmul:  # every program loads its BM x K and K x BN operand tiles, stores BM x BN
            m, n, k = (int(v) for v in row["shape"].split("x"))
            bm, bn, size = config["BLOCK_M"], config["BLOCK_N"], ITEMSIZE[row["dtype"]]
            traffic = int(row["grid"]) * (k * (bm + bn) + bm * bn) * size
            iterations = -(-k // config["BLOCK_K"])
        launch = Launch(bytes=int(row["bytes"]), programs=int(row["grid"]),
                        num_warps=config.get("num_warps", 4),
                        num_stages=config.get("num_stages", 1),
                        registers=int(row["n_regs"]), shared=int(row["shared"]),
                        flops=int(row["flops"]), dot_dtype=row["dtype"],
                        tile=config["BLOCK_M"] * config["BLOCK_N"] if matmul else 0,
                        pipelined=matmul, traffic=traffic,
                        spills=int(row["n_spills"]), iterations=iterations)
        cases[(row["kernel"], row["shape"], row["dtype"])].append(
            (launch, float(row["median_ms"]) / 1e3, config))
    return cases, key


def loss(params, cases, key):
    """The mean absolute log error per case, summed over the cases: robust to the rows the
    model cannot explain (a squared error let a few 3-5x outliers pull every memory-bound
    prediction 15-20 % slow)."""
    c = Constants(*np.exp(params))
    total = 0.0
    for rows in cases.values():
        err = [abs(math.log(predict(launch, key, c).seconds / t)) for launch, t, _ in rows]
        total += sum(err) / len(err)
    return total


def nelder_mead(f, x0, steps=600, scale=0.5):
    """Minimise f from x0 (NumPy's reference Nelder-Mead: reflect, expand, contract, shrink)."""
    n = len(x0)
    simplex = [np.array(x0, float)] + [np.array(x0, float) + scale * np.eye(n)[i]
                                      for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(steps):
        order = np.argsort(values)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        centre = np.mean(simplex[:-1], axis=0)
        worst = simplex[-1]
        reflected = centre + (centre - worst)
        fr = f(reflected)
        if fr < values[0]:
            expanded = centre + 2 * (centre - worst)
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = centre + 0.5 * (worst - centre)
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best] + [best + 0.5 * (x - best) for x in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    i = int(np.argmin(values))
    return simplex[i], values[i]


def fit(cases, key, steps):
    x, _ = nelder_mead(lambda p: loss(p, cases, key), np.log(list(START.as_dict().values())),
                       steps)
    return Constants(*np.exp(x))


def evaluate(rows, key, c):
    """(predictions within 1.3x, rows, measured time of the model's pick / best, / median)."""
    within = sum(1 for launch, t, _ in rows
                 if 1 / 1.3 <= predict(launch, key, c).seconds / t <= 1.3)
    picked = min(rows, key=lambda r: predict(r[0], key, c).seconds)[1]
    times = [t for _, t, _ in rows]
    return within, len(rows), picked / min(times), picked / statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--csv", default=str(ROOT / "docs/results/config-sweep-h100-2026-12-05.csv"))
    p.add_argument("--steps", type=int, default=500, help="Nelder-Mead iterations per fit")
    p.add_argument("--no-holdout", action="store_true", help="skip leave-one-case-out")
    args = p.parse_args(argv)
    cases, key = load(args.csv)
    c = fit(cases, key, args.steps)
    print(f"{key}: Constants({', '.join(f'{k}={v:.3g}' for k, v in c.as_dict().items())})")
    print(f"{'case':<44}{'rows':>5}{'in-fit 1.3x':>13}{'held-out 1.3x':>15}"
          f"{'pick/best':>11}{'pick/median':>13}")
    totals = [0, 0, 0, 0]
    for case, rows in cases.items():
        w_in, n, _, _ = evaluate(rows, key, c)
        if args.no_holdout:
            held, ratio_best, ratio_median = w_in, *evaluate(rows, key, c)[2:]
        else:
            others = {k: v for k, v in cases.items() if k != case}
            held, _, ratio_best, ratio_median = evaluate(rows, key, fit(others, key, args.steps))
        totals = [totals[0] + w_in, totals[1] + held, totals[2] + n,
                  totals[3] + (ratio_best <= 1.10)]
        print(f"{' '.join(case):<44}{n:>5}{w_in:>13}{held:>15}{ratio_best:>11.2f}"
              f"{ratio_median:>13.2f}")
    print(f"within 1.3x: {totals[0]}/{totals[2]} in the fit, {totals[1]}/{totals[2]} held out; "
          f"pick within 10 % of the best configuration in {totals[3]}/{len(cases)} cases")


if __name__ == "__main__":
    main()
