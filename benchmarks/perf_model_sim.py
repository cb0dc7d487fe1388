"""The performance model from the simulator alone, judged by a GPU's measurements: which
configuration would minitriton's autotuner pick, by the model and by today's roofline?

    python benchmarks/perf_model_sim.py [--csv docs/results/config-sweep-h100-2026-12-05.csv]
                                        [--only NAME] [--programs 16]

For every case of benchmarks/config_sweep.py (the same kernels, shapes and configurations that
the sweep measured on the GPU), each configuration runs on minitriton as the autotuner's trials
do: a sample of `--programs` programs, the counts scaled to the grid, the compiled program's
registers, spills and shared memory estimated as `warmup()` does (runtime/compiled.py). The
model (runtime/perf_model.py, the GPU's fitted constants) and the roofline (runtime/gpus.py)
each rank the configurations; the measured median of the configuration each picks is compared
with the best and the median configuration measured. Unlike perf_model_fit.py, nothing here
comes from the GPU's compiler: this is the path a user without a GPU gets.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _src in ("src", "packages/minitriton/src", "benchmarks"):
    sys.path.insert(0, str(ROOT / _src))

import minitriton  # noqa: E402
from minitriton.runtime.gpus import gpu, roofline_seconds  # noqa: E402
from minitriton.runtime.launch import sampling, watching  # noqa: E402
from minitriton.runtime.resources import ResourceWatcher  # noqa: E402
from minitriton.runtime.compiled import dot_register_terms  # noqa: E402
from minitriton.runtime.perf_model import launch_of, predict  # noqa: E402

import config_sweep  # noqa: E402
from perf_model_fit import load  # noqa: E402


def measured(path):
    """{(kernel, shape, dtype): {config json: median seconds}} and the GPU key of a sweep CSV
    (perf_model_fit.load's rows, keyed as the sweep writes each configuration)."""
    cases, key = load(path)
    return {case: {json.dumps(config, sort_keys=True): t for _, t, config in rows}
            for case, rows in cases.items()}, key


def simulate(case, config, args, programs, target):
    """(Launch for the model, roofline seconds, the register estimate's terms or None, whether
    its tiles came through tensor descriptors) of one configuration from a sampled run, as the
    autotuner's trials make them (perf_model.launch_of, runtime/autotune.py;
    compiled.dot_register_terms)."""
    probe = ResourceWatcher()
    with minitriton.record() as rec, sampling(programs), watching(probe):
        case.kernel[case.grid(config)](*args, **{**case.fixed, **config})
    record = rec[-1]
    ran, total = record.sampled or (1, 1)
    options = {"num_warps": config.get("num_warps", 4), "num_stages": config.get("num_stages", 3)}
    arg_bytes = sum(a.numel() * a.element_size() for a in args if hasattr(a, "element_size"))
    launch = launch_of(record, probe.dots, probe.max_block, probe.reductions, options,
                       arg_bytes, probe.dot_sites, probe.special,
                       probe.rounds, probe.tma)
    threads = 32 * options["num_warps"]
    terms = dot_register_terms(threads, probe.dot_sites) if probe.dots else \
        [-(-probe.max_block // threads)]  # (compiled.estimate's terms)
    return launch, roofline_seconds(target, record, probe.dots) * total / ran, terms, probe.tma


def save_launches(args):
    """{"kernel shape dtype": {config json: Launch fields}} of every sweep case (or --only's),
    as the autotuner's sampled trials see them: what the fit uses in place of the compiler's
    registers when it fits the path a user without a GPU gets."""
    import dataclasses
    path = Path(args.save)
    out = json.loads(path.read_text()) if path.exists() else {}
    for case in config_sweep.cases():
        label = " ".join((case.kernel_name, case.shape, case.dtype))
        if (args.only and args.only not in label) or label in out:
            continue
        t0 = time.perf_counter()
        data = case.args("cpu")
        out[label] = {}
        for config in case.configs:
            launch, _, terms, tma = simulate(case, config, data, args.programs, gpu("H100"))
            out[label][json.dumps(config, sort_keys=True)] = {**dataclasses.asdict(launch),
                                                              "register_terms": terms,
                                                              "tma": tma}
        path.write_text(json.dumps(out, indent=0))
        print(f"{label}: {len(case.configs)} configurations in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--csv", default=str(ROOT / "docs/results/config-sweep-h100-2026-12-05.csv"))
    p.add_argument("--only", help="only the cases whose kernel name contains this text")
    p.add_argument("--programs", type=int, default=16, help="programs per sampled trial")
    p.add_argument("--save", help="write every case's simulated Launches to this JSON file "
                                  "(perf_model_fit.py --launches fits on them)")
    p.add_argument("--all", action="store_true",
                   help="simulate every configuration of the sweep, measured in the CSV or not")
    args = p.parse_args(argv)
    if args.save:
        return save_launches(args)
    times, key = measured(args.csv)
    target = gpu(key)
    print(f"{'case':<40}{'configs':>8}{'model pick/best':>17}{'roofline pick/best':>20}"
          f"{'model/median':>14}{'sim s':>7}")
    good = [0, 0]
    cases = [c for c in config_sweep.cases() if not args.only or args.only in c.kernel_name]
    for case in cases:
        t0 = time.perf_counter()
        data = case.args("cpu")
        got = times.get((case.kernel_name, case.shape, case.dtype))
        if not got:
            continue
        model, roof = {}, {}
        for config in case.configs:
            label = json.dumps(config, sort_keys=True)
            if label not in got:
                continue
            launch, roof[label], *_ = simulate(case, config, data, args.programs, target)
            model[label] = predict(launch, key).seconds
        best, median = min(got.values()), statistics.median(got.values())
        pick_model = got[min(model, key=model.get)]
        pick_roof = got[min(roof, key=roof.get)]  # ties: the first, as the autotuner takes it
        good[0] += pick_model <= 1.10 * best
        good[1] += pick_roof <= 1.10 * best
        print(f"{' '.join((case.kernel_name, case.shape, case.dtype)):<40}{len(model):>8}"
              f"{pick_model / best:>17.2f}{pick_roof / best:>20.2f}{pick_model / median:>14.2f}"
              f"{time.perf_counter() - t0:>7.1f}", flush=True)
    print(f"picks within 10 % of the best measured: model {good[0]}, roofline {good[1]}, "
          f"of {len(cases)} cases ({key} measurements, {args.csv})")


if __name__ == "__main__":
    main()
