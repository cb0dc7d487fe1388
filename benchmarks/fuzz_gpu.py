"""Differential fuzzing: generated kernels on minitriton against real Triton on the GPU.

    python benchmarks/fuzz_gpu.py --cases 3000 --out fuzz.json [--start 0] [--workers 12]
        [--avoid-known] [--seeds tests/minitriton/fuzz_seeds.json --seeds-out seeds.json]
    python benchmarks/fuzz_gpu.py --cases 200 --real minitriton-sequential   # no GPU: dry run
    python benchmarks/fuzz_gpu.py --cases 200 --real interpret   # Triton's interpreter, no GPU

Cases `start .. start + cases - 1` are the fuzzer's seeds (tests/minitriton/fuzz): each is
generated, run on minitriton (lockstep executor) and on `--real`, and compared (bit for bit, or
within the tolerance that tests/minitriton/fuzz/compare.py states for its category). Cases run
eight to a kernel, in `--workers` processes, since real Triton's compile time per kernel is
what limits the rate. Writes a JSON summary: the machine and versions, cases and mismatches per
category (those of cases using a construct of fuzz/known.py counted apart from the unexplained
ones), bit-exact cases, the largest ulp difference and the largest fraction of the tolerance
used, per category and per approximate function; then the cases that failed, with source,
inputs and both outputs. `--avoid-known` generates none of the known constructs (as the GPU
test does); `--seeds` also runs the regression cases and `--seeds-out` writes them back with
the outputs of `--real` (how fuzz_seeds.json got the GPU's). docs/fuzzing.md has the results.
"""
import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "packages/minitriton/src"), str(ROOT / "tests/minitriton")]
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "packages/minitriton/src"), str(ROOT / "tests/minitriton")]
    + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

from fuzz import generate_seeded, run_cases, summarize  # noqa: E402
from fuzz.known import KNOWN  # noqa: E402


def machine(real):
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "python": platform.python_version(), "host": platform.node(), "real": real}
    import numpy
    info["numpy"] = numpy.__version__
    if real == "triton":
        import torch
        import triton
        info.update(gpu=torch.cuda.get_device_name(0), torch=torch.__version__,
                    triton=triton.__version__, cuda=torch.version.cuda)
    return info


def tolerance_use(records):
    """The largest fraction of its tolerance that any case of a category used."""
    out = {}
    for r in records:
        if "tol_used" in r:
            out[r["category"]] = max(out.get(r["category"], 0.0), r["tol_used"])
    return dict(sorted(out.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=2500)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--group", type=int, default=8, help="cases per kernel")
    ap.add_argument("--workers", type=int, default=min(12, max(1, (os.cpu_count() or 2) - 2)))
    ap.add_argument("--real", default="triton", help="triton | minitriton-sequential")
    ap.add_argument("--out", default="fuzz.json")
    ap.add_argument("--keep", type=int, default=80, help="failing cases kept with evidence")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds: groups not started by then are left out")
    ap.add_argument("--avoid-known", action="store_true",
                    help="generate no case that uses a construct of fuzz/known.py")
    ap.add_argument("--seeds", help="also run these regression cases (fuzz_seeds.json)")
    ap.add_argument("--seeds-out", help="write them back here, with the outputs of --real")
    args = ap.parse_args()

    t0 = time.perf_counter()
    info = machine(args.real)
    deadline = time.time() + args.budget if args.budget else None
    seeds = range(args.start, args.start + args.cases)
    items = [generate_seeded(s, avoid=KNOWN).to_json() for s in seeds] if args.avoid_known \
        else seeds
    records = run_cases(items, real=args.real, group=args.group, workers=args.workers,
                        deadline=deadline)
    elapsed = time.perf_counter() - t0
    summary = summarize(records)
    failures = [r for r in records if r["status"] != "ok" or r.get("group_differs")]
    light = ("case", "inputs", "sim", "real")
    kept, size = [], 0
    for r in failures:  # the evidence of the first --keep, within 12 MB (what $OUT brings back)
        n = len(json.dumps(r, default=str))
        if len(kept) < args.keep and size + n < 12e6:
            kept.append(r)
            size += n
        else:
            kept.append({k: v for k, v in r.items() if k not in light})
    report = {"machine": info, "args": vars(args), "elapsed_s": round(elapsed, 1),
              "summary": summary, "tolerance_used": tolerance_use(records),
              "failures": kept,
              "records": [{k: r.get(k) for k in ("cid", "category", "status", "bit_exact",
                                                  "max_ulp", "tol_used", "ops", "group_s",
                                                  "group_differs")}
                          for r in records]}
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    total = summary["total"]
    print(f"{total['cases']} cases in {elapsed:.0f} s on {info.get('gpu', args.real)}: "
          f"{total['mismatches']} mismatches, {total['bit_exact']} bit-exact, "
          f"{total['both_error']} refused by both, {total['group_differs']} agreeing alone "
          f"but not inside a group kernel")
    print(f"{'category':14} {'cases':>6} {'mismatch':>8} {'exact':>6} {'max ulp':>10} {'tol used':>8}")
    used = report["tolerance_used"]
    for cat, c in summary["categories"].items():
        print(f"{cat:14} {c['cases']:6} {c['mismatches']:8} {c['bit_exact']:6} "
              f"{c['max_ulp']:10.4g} {used.get(cat, 0):8.3g}")
    for op, o in summary["approx_ops"].items():
        print(f"  {op:12} {o['cases']:6} {o['mismatches']:8} {'':6} {o['max_ulp']:10.4g}")
    print("mismatches of cases with a known divergence (fuzz/known.py):",
          {k: v["mismatches"] for k, v in summary["known"].items() if v["mismatches"]})
    unexplained = [r for r in failures if not set(r["ops"]) & KNOWN.keys()]
    for r in unexplained[:25]:
        err = r.get("sim_error") or r.get("real_error") or r.get("detail")
        print(f"  UNEXPLAINED {r['cid']} {r['category']} {r['status']}: {str(err)[:300]}")
    if args.seeds:
        run_seeds(args)


def run_seeds(args):
    """The regression cases, with the outputs of --real recorded for the CPU test."""
    doc = json.loads(Path(args.seeds).read_text())
    cases = []
    for i, entry in enumerate(doc["seeds"]):
        case = dict(entry["case"], cid=10**6 + i)
        cases.append(case)
    records = {r["cid"]: r for r in run_cases(cases, real=args.real, group=len(cases) + 1,
                                              keep=True)}
    for i, entry in enumerate(doc["seeds"]):
        r = records[10**6 + i]
        err = r.get("real_error")
        entry["gpu"] = {"status": r["status"], "error": err, "outputs": r.get("real"),
                        "sim_error": r.get("sim_error"), "machine": machine(args.real)}
        if entry["gpu"]["outputs"] is None:
            entry["gpu"].pop("outputs")
        print(f"  seed {entry['id']:28} {r['status']:11} {str(err or r.get('sim_error') or '')[-120:]}")
    if args.seeds_out:
        Path(args.seeds_out).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
