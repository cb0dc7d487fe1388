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
                  tile_half=4096.0, l2_ratio=2.5, spill_factor=0.02, step_latency=5e-7,
                  program_cost=2e-7, overlap_loss=0.1, fill=1e-6, sharpness=4.0,
                  special_rate=3e10, round_latency=1e-6)
ITEMSIZE = {"fp32": 4, "fp16": 2, "bf16": 2}
NAMES = [f for f in START.as_dict()]
# a configuration's weight in its case's error: (the case's best time / its time) ** this, so
# that the fast configurations, those an autotuner keeps, decide the constants (0: all alike)
FAST_WEIGHT = 4.0
SLOW_FLOOR = 0.1  # ... but never under this: the slow ones teach what makes them slow (spills)


def gpu_key(name):
    """H100, H200...: the model's table key in the GPU's name as torch reports it."""
    for key in ("H100", "H200", "A100", "B200"):
        if key in name:
            return key
    raise ValueError(f"no model GPU in {name!r}")


def rows_of(paths):
    """The measured rows of sweep CSVs (one path or several), those that ran."""
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        for row in csv.DictReader(open(path)):
            if not row["error"] and row["median_ms"]:
                yield row


# do_bench's median less the kernel's device time, the median over the H100's 846 sweep rows
# of 2026-12-05 (10th-90th percentile 2.0-3.6 us for kernels under 100 us): the events and the
# launch around each timed call
DO_BENCH_GAP = 2.8e-6


def seconds_of(row):
    """A sweep row's measured time: the kernel's device time where the sweep has it (CUPTI:
    what the model predicts), else do_bench's median less DO_BENCH_GAP."""
    if row.get("device_ms"):
        return float(row["device_ms"]) / 1e3
    return float(row["median_ms"]) / 1e3 - DO_BENCH_GAP


def load(paths, launches=None):
    """{(kernel, shape, dtype): [(Launch, measured seconds, config), ...]} and the GPU key.
    `launches`: the simulator's Launches of the sweep (perf_model_sim.py --save), used in
    place of the compiler's registers and the matmul formula's traffic (the path a user
    without a GPU gets)."""
    cases, key = defaultdict(list), None
    for row in rows_of(paths):
        key = key or gpu_key(row["gpu"])
        config = json.loads(row["config"])
        if launches is not None:
            simulated = launches[" ".join((row["kernel"], row["shape"], row["dtype"]))]
            fields = dict(simulated[row["config"]])
            fields.pop("register_terms", None)
            fields.pop("tma", None)
            cases[(row["kernel"], row["shape"], row["dtype"])].append(
                (Launch(**fields), seconds_of(row), config))
            continue
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
            (launch, seconds_of(row), config))
    return cases, key


def loss(params, cases, key):
    """The mean absolute log error per case, summed over the cases: robust to the rows the
    model cannot explain (a squared error let a few 3-5x outliers pull every memory-bound
    prediction 15-20 % slow)."""
    c = Constants(*np.exp(params))
    total = 0.0
    for rows in cases.values():
        best = min(t for _, t, _ in rows)
        weights = [max((best / t) ** FAST_WEIGHT, SLOW_FLOOR) for _, t, _ in rows]
        err = [w * abs(math.log(predict(launch, key, c).seconds / t))
               for w, (launch, t, _) in zip(weights, rows)]
        total += sum(err) / sum(weights)
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


def fit(cases, key, steps, restarts=2):
    """The constants that minimise `loss`: Nelder-Mead from START, then started again
    `restarts` times from where it stopped (a fresh simplex escapes the collapsed one)."""
    x = np.log(list(START.as_dict().values()))
    for _ in range(1 + restarts):
        x, _ = nelder_mead(lambda p: loss(p, cases, key), x, steps)
    return Constants(*np.exp(x))


def evaluate(rows, key, c):
    """(predictions within 1.3x, rows, measured time of the model's pick / best, / median)."""
    within = sum(1 for launch, t, _ in rows
                 if 1 / 1.3 <= predict(launch, key, c).seconds / t <= 1.3)
    picked = min(rows, key=lambda r: predict(r[0], key, c).seconds)[1]
    times = [t for _, t, _ in rows]
    return within, len(rows), picked / min(times), picked / statistics.median(times)


def fit_registers(paths, launches):
    """compiled.DOT_REGISTERS and ELEMENT_REGISTERS by least squares: the compiler's
    registers per thread of every configuration that did not reach the 255 cap, against the
    estimate's terms the simulator found for it (perf_model_sim.py --save: a dot kernel's
    three, another kernel's elements per thread). Kernels whose tiles came through tensor
    descriptors are left out: their registers are compiled.TMA_DOT_REGISTERS' (docs/
    hardware.md "Tiles through TMA"). Prints the coefficients and the error per kernel."""
    rows = {3: ([], [], []), 1: ([], [], [])}
    for row in rows_of(paths):
        simulated = launches.get(" ".join((row["kernel"], row["shape"], row["dtype"])), {})
        seen = simulated.get(row["config"]) or {}
        terms = seen.get("register_terms")
        if terms is None or seen.get("tma") or not row["n_regs"] or int(row["n_regs"]) >= 255:
            continue
        x, y, kernels = rows[len(terms)]
        x.append([1.0, *terms])
        y.append(float(row["n_regs"]))
        kernels.append(row["kernel"])
    out = {}
    for n, name in ((3, "DOT_REGISTERS"), (1, "ELEMENT_REGISTERS")):
        x, y, kernels = rows[n]
        if not y:
            continue
        x, y = np.array(x), np.array(y)
        coef = np.linalg.lstsq(x, y, rcond=None)[0]
        err = x @ coef - y
        print(f"{name} = ({', '.join(f'{c:.3g}' for c in coef)})  # {len(y)} compilations")
        for kernel in sorted(set(kernels)):
            e = err[[k == kernel for k in kernels]]
            print(f"  {kernel}: {len(e)} rows, median |error| {np.median(abs(e)):.1f}, "
                  f"mean {e.mean():+.1f}, largest {abs(e).max():.0f} registers")
        out[name] = coef
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--csv", nargs="+",
                   default=[str(ROOT / "docs/results/config-sweep-h100-2026-12-05.csv")])
    p.add_argument("--launches", help="the simulator's Launches of the sweep "
                                      "(perf_model_sim.py --save): fit the path without a GPU")
    p.add_argument("--registers", action="store_true",
                   help="fit the register estimate (compiled.DOT_REGISTERS) instead; needs "
                        "--launches")
    p.add_argument("--steps", type=int, default=500, help="Nelder-Mead iterations per fit")
    p.add_argument("--no-holdout", action="store_true", help="skip leave-one-case-out")
    args = p.parse_args(argv)
    launches = json.loads(Path(args.launches).read_text()) if args.launches else None
    if args.registers:
        if launches is None:
            p.error("--registers needs --launches")
        fit_registers(args.csv, launches)
        return
    cases, key = load(args.csv, launches)
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
