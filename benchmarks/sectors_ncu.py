"""Check minitriton's memory insight per kernel line (observe/sectors.py) against Nsight Compute.

    python benchmarks/sectors_ncu.py --out DIR          # on a GPU machine with ncu
    python benchmarks/sectors_ncu.py --predict-only     # anywhere: the simulator's predictions
    python benchmarks/sectors_ncu.py --run-kernel NAME  # one launch (what ncu profiles)

Four kernels: a row-major copy, a strided column load (a column of a row-major matrix per
program), the lecture's matmul (`matmul_relu_kernel`) and the same with A transposed (strides
(1, M)). Each runs once on the simulator with `Settings(sectors=True)`, then once on the GPU in
a child process under `ncu --csv --page raw --metrics ...` (one launch: `--kernel-name`,
`--launch-count 1`), and for loads and stores apart we compare

  sectors per request   predicted: the lane-order warp model (warps of 32 threads along the
                        block's last axis, each thread a vector of up to 16 bytes); measured:
                        l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st} / ..._requests_...
                        (plus op_ldgsts, the cp.async copies Triton's pipeliner makes of
                        loads that feed tl.dot)
  efficiency            requested bytes / (sectors * 32): predicted by the block model
                        (distinct sectors of each program's access, whatever the thread
                        layout) and by the warp model; measured with the requested bytes the
                        simulator counted (the same kernel on the same shapes requests the same
                        bytes: an architectural count, not a model) and ncu's sectors
  DRAM bytes            unique sectors * 32 (a perfect L2) against dram__bytes_{read,write}

Where the block and warp models differ (the transposed A), the measurement says which thread
layout Triton chose. Writes DIR/sectors_ncu.json (rows, predictions, raw ncu values, the GPU,
versions and date). ncu needs access to the GPU's performance counters: ERR_NVGPUCTRPERM means
they are restricted to administrators (run as root, or load the driver with
NVreg_RestrictProfilingToAdminUsers=0); the predictions are written anyway.
"""
import argparse
import csv
import functools
import importlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _src in ("src", "packages/minitriton/src"):  # run from a checkout, installed or not
    sys.path.insert(0, str(ROOT / _src))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # this file as a module, for the sim copy

import torch  # noqa: E402

import minitriton  # noqa: E402
from tritonlab import backend  # noqa: E402
from tritonlab.backend import tl, triton  # noqa: E402
from tritonlab.bench import export  # noqa: E402

MODULE = "sectors_ncu"  # this file imported as a module (backend.with_backend re-runs it)
KINDS = ("load", "store")
NCU_OPS = {"load": ("ld", "ldgsts"), "store": ("st",)}
NCU_TIMEOUT = 900  # seconds for one profiled child (compiles the kernel, replays it)


@triton.jit
def copy_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)  # read n, contiguous
    tl.store(y_ptr + offsets, x, mask=mask)  # write n


@triton.jit
def column_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    # program (i, j): rows [i * BLOCK_SIZE, (i + 1) * BLOCK_SIZE) of column j of a row-major x,
    # written as a row of y = x.T
    pid_r, col = tl.program_id(0), tl.program_id(1)
    rows = pid_r * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = rows < n_rows
    column = tl.load(x_ptr + rows * n_cols + col, mask=mask)  # stride n_cols: a sector each
    tl.store(y_ptr + col * n_rows + rows, column, mask=mask)  # contiguous


def _copy(mod, mm, device):
    n = 1 << 22
    x = torch.randn(n, device=device)
    y = torch.empty_like(x)
    return lambda: mod.copy_kernel[(n // 1024,)](x, y, n, BLOCK_SIZE=1024)


def _column(mod, mm, device):
    n = 2048
    x = torch.randn(n, n, device=device)
    y = torch.empty_like(x)
    return lambda: mod.column_kernel[(n // 256, n)](x, y, n, n, BLOCK_SIZE=256)


def _matmul(transposed):
    def make(mod, mm, device):
        n = 512
        a = torch.randn(n, n, device=device)
        a = a.t() if transposed else a  # strides (1, n): contiguous along M
        b = torch.randn(n, n, device=device)
        return lambda: mm.matmul_relu_lecture(a, b)
    return make


# name -> (the kernel's name, what builds a call of it, what it shows)
CASES = {
    "copy": ("copy_kernel", _copy, "row-major copy, 2^22 fp32, BLOCK_SIZE 1024"),
    "column": ("column_kernel", _column, "column loads of a row-major 2048^2 fp32, 256 rows "
                                         "per program"),
    "matmul": ("matmul_relu_kernel", _matmul(False), "lecture matmul 512^3 fp32, 64x64x32"),
    "matmul_at": ("matmul_relu_kernel", _matmul(True), "lecture matmul with A transposed "
                                                       "(strides (1, 512))"),
}


def modules(name):
    """(kernels of this file, tritonlab's matmul module) bound to a backend."""
    return (backend.with_backend(MODULE, name),
            backend.with_backend("tritonlab.kernels.matmul", name))


# ----- prediction (the simulator)
def predict(case):
    kernel, make, _ = CASES[case]
    mod, mm = modules("sim")
    fn = make(mod, mm, "cpu")
    with minitriton.configure(sectors=True, exact_dot=False), minitriton.record() as rec:
        fn()
    record = next(r for r in rec if r.kernel == kernel)
    out = {"lines": record.lines, "grid": list(record.grid)}
    for kind in KINDS:
        rows = [r for r in record.lines if r["kind"] == kind]
        nbytes = sum(r["bytes"] for r in rows)
        sectors = sum(r["sectors"] for r in rows)
        req_sectors = sum(r["request_sectors"] for r in rows)
        requests = sum(r["requests"] for r in rows)
        out[kind] = {
            "bytes": nbytes, "sectors": sectors, "request_sectors": req_sectors,
            "requests": requests, "unique_bytes": sum(r["unique_bytes"] for r in rows),
            "unique_sector_bytes": 32 * sum(r["unique_sectors"] for r in rows),
            "efficiency_block": nbytes / (32 * sectors) if sectors else None,
            "efficiency_warp": nbytes / (32 * req_sectors) if req_sectors else None,
            "sectors_per_request": req_sectors / requests if requests else None}
    return out


# ----- measurement (Nsight Compute)
def metrics_for(kinds=KINDS):
    names = []
    for kind in kinds:
        for op in NCU_OPS[kind]:
            names += [f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum",
                      f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum"]
    return names + ["dram__bytes_read.sum", "dram__bytes_write.sum"]


class NcuError(RuntimeError):
    pass


def find_ncu(given=None):
    if given:
        return given
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu",
                    "/usr/local/cuda-*/bin/ncu"):
        hits = sorted(Path("/").glob(pattern.lstrip("/")))
        if hits:
            return str(hits[-1])
    return None


def _permission(text):
    if "ERR_NVGPUCTRPERM" in text:
        raise NcuError(
            "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): they are "
            "restricted to administrators on this machine. Run as root, or load the NVIDIA "
            "driver with NVreg_RestrictProfilingToAdminUsers=0 "
            "(https://developer.nvidia.com/ERR_NVGPUCTRPERM).")


@functools.lru_cache(maxsize=None)
def known_metrics(ncu, wanted):
    """The wanted metrics (a tuple) this ncu knows (by `ncu --query-metrics`); all of them when
    the query fails (the profile run then drops any it rejects)."""
    try:
        run = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True,
                             timeout=300)
    except (OSError, subprocess.SubprocessError):
        return list(wanted)
    _permission(run.stdout + run.stderr)
    if run.returncode != 0 or "l1tex__" not in run.stdout:
        return list(wanted)
    listed = set(re.findall(r"^\s*([a-z0-9_]+__[a-z0-9_]+)", run.stdout, re.M))
    known = [m for m in wanted if m.rsplit(".", 1)[0] in listed]
    return known if 2 * len(known) >= len(wanted) else list(wanted)  # else: a listing we misread


def parse_csv(text, wanted):
    """{metric: value} from ncu's --csv output (the raw page: a header row of metric names, a
    row of units, a row per kernel; or the details page: a row per metric)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return {}
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    values = {}
    if rows and "Metric Name" in rows[0]:
        for row in rows:
            if row["Metric Name"] in wanted:
                values[row["Metric Name"]] = _number(row["Metric Value"])
        return values
    for row in rows:
        if (row.get("ID") or "").strip().isdigit():  # the first kernel row (units row has none)
            return {m: _number(row[m]) for m in wanted if m in row}
    return values


def _number(text):
    text = (text or "").replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return None


def measure(case, ncu):
    """ncu's metrics of one launch of a case, run in a child process."""
    kernel = CASES[case][0]
    wanted = known_metrics(ncu, tuple(metrics_for()))
    for _ in range(4):
        cmd = [ncu, "--csv", "--page", "raw", "--print-units", "base", "--metrics",
               ",".join(wanted), "--kernel-name", f"regex:{kernel}", "--launch-count", "1",
               "--target-processes", "all", "--clock-control", "none",  # leave the clocks alone
               sys.executable, str(Path(__file__).resolve()), "--run-kernel", case]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=NCU_TIMEOUT,
                                 env={**os.environ, "TRITONLAB_BACKEND": "triton"})
        except subprocess.TimeoutExpired as e:
            raise NcuError(f"ncu ran past {NCU_TIMEOUT} s on {case}") from e
        text = run.stdout + run.stderr
        _permission(text)
        rejected = set(re.findall(
            r"[Ff]ailed to find metrics?\W*(?:regex:)?\^?([a-z0-9_]+__[a-z0-9_.]+)", text))
        rejected = {m for m in wanted if m in rejected or m.rsplit(".", 1)[0] in rejected}
        if rejected:
            wanted = [m for m in wanted if m not in rejected]
            continue
        values = parse_csv(run.stdout, wanted)
        if run.returncode != 0 or not values:
            raise NcuError(f"ncu gave no metrics for {case} (exit {run.returncode}):\n"
                           + "\n".join(text.splitlines()[-25:]))
        return values, " ".join(cmd)
    raise NcuError(f"ncu rejected the metrics for {case}:\n" + "\n".join(text.splitlines()[-25:]))


def measured(values, kind):
    def total(what):
        found = [values.get(f"l1tex__t_{what}_pipe_lsu_mem_global_op_{op}.sum")
                 for op in NCU_OPS[kind]]
        found = [v for v in found if v is not None]
        return sum(found) if found else None
    return total("sectors"), total("requests")


def compare(case, pred, values):
    rows = []
    for kind in KINDS:
        p = pred[kind]
        if not p["bytes"]:
            continue
        row = {"kernel": case, "kind": kind, "requested_bytes": p["bytes"],
               "predicted_efficiency_block": p["efficiency_block"],
               "predicted_efficiency_warp": p["efficiency_warp"],
               "predicted_sectors_per_request": p["sectors_per_request"],
               "predicted_sectors_block": p["sectors"],
               "predicted_sectors_warp": p["request_sectors"],
               "predicted_requests": p["requests"],
               "predicted_dram_bytes": p["unique_sector_bytes"]}
        if values is not None:
            sectors, requests = measured(values, kind)
            dram = values.get("dram__bytes_read.sum" if kind == "load" else
                              "dram__bytes_write.sum")
            row.update({
                "measured_sectors": sectors, "measured_requests": requests,
                "measured_sectors_per_request": sectors / requests if sectors and requests
                else None,
                "measured_efficiency": p["bytes"] / (32 * sectors) if sectors else None,
                "measured_dram_bytes": dram})
            eff = row["measured_efficiency"]
            if sectors is not None and sectors * 32 < p["bytes"]:
                row["note"] = ("fewer sectors than the bytes requested need: these accesses took a "
                               "path the l1tex lsu metrics do not count (TMA? a metric dropped?)")
            for model in ("block", "warp"):
                guess = row[f"predicted_efficiency_{model}"]
                row[f"ratio_{model}"] = eff / guess if eff and guess else None
        rows.append(row)
    return rows


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_rows(rows):
    print(f"{'kernel':<10}{'kind':<6}{'eff block':>10}{'eff warp':>9}{'eff ncu':>9}"
          f"{'sec/req':>9}{'ncu':>7}{'requests':>11}{'ncu':>11}{'DRAM pred':>12}{'ncu':>12}")
    for r in rows:
        print(f"{r['kernel']:<10}{r['kind']:<6}{_fmt(r['predicted_efficiency_block'], '.3f'):>10}"
              f"{_fmt(r['predicted_efficiency_warp'], '.3f'):>9}"
              f"{_fmt(r.get('measured_efficiency'), '.3f'):>9}"
              f"{_fmt(r['predicted_sectors_per_request'], '.1f'):>9}"
              f"{_fmt(r.get('measured_sectors_per_request'), '.1f'):>7}"
              f"{_fmt(r['predicted_requests'], ',.0f'):>11}"
              f"{_fmt(r.get('measured_requests'), ',.0f'):>11}"
              f"{_fmt(r['predicted_dram_bytes'], ',.0f'):>12}"
              f"{_fmt(r.get('measured_dram_bytes'), ',.0f'):>12}")


def run_kernel(case):
    """One launch of a case on the GPU (the child that ncu profiles)."""
    if backend.NAME != "triton":
        sys.exit(f"--run-kernel needs real Triton on a CUDA GPU (backend: {backend.describe()})")
    torch.manual_seed(0)
    mod = importlib.import_module(MODULE)
    mm = importlib.import_module("tritonlab.kernels.matmul")
    fn = CASES[case][1](mod, mm, "cuda")
    fn()
    torch.cuda.synchronize()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "out"),
                        help="where sectors_ncu.json goes (default: $OUT or out)")
    parser.add_argument("--predict-only", action="store_true",
                        help="the simulator's predictions only (no GPU, no ncu)")
    parser.add_argument("--run-kernel", choices=list(CASES), help=argparse.SUPPRESS)
    parser.add_argument("--kernels", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--ncu", help="path of the ncu executable (default: found on PATH)")
    args = parser.parse_args()
    if args.run_kernel:
        run_kernel(args.run_kernel)
        return 0
    torch.manual_seed(0)
    ncu, problem = None, None
    if not args.predict_only:
        ncu = find_ncu(args.ncu)
        if backend.NAME != "triton":
            problem = f"no GPU run: kernels run on {backend.describe()}"
        elif ncu is None:
            problem = ("ncu (Nsight Compute) not found: put it on PATH or pass --ncu PATH "
                       "(it ships with the CUDA toolkit, e.g. /usr/local/cuda/bin/ncu)")
        if problem:
            print(f"warning: {problem}; writing the predictions only", file=sys.stderr)
    rows, details = [], {}
    for case in args.kernels:
        pred = predict(case)
        values, command = None, None
        if ncu and not problem:
            try:
                values, command = measure(case, ncu)
            except NcuError as e:
                problem = str(e)
                print(f"error: {problem}\nwriting the predictions only", file=sys.stderr)
        rows += compare(case, pred, values)
        details[case] = {"what": CASES[case][2], "grid": pred["grid"], "ncu": values,
                         "ncu_command": command, "lines": pred["lines"]}
    print("eff: requested bytes / (sectors x 32); block: distinct sectors per program access; "
          "warp: warps along the block's last axis; ncu: measured (l1tex sectors)")
    print_rows(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {**export.environment("cuda" if backend.NAME == "triton" else None),
            "commit": export.git_commit(ROOT), "ncu": ncu, "problem": problem,
            "command": " ".join([Path(sys.executable).name] + sys.argv)}
    path = out / "sectors_ncu.json"
    path.write_text(json.dumps({"meta": meta, "rows": rows, "kernels": details}, indent=1,
                               default=str))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
