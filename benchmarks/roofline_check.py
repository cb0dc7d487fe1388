"""Check the hardware model on a GPU: roofline time predicted from minitriton's simulated
traffic against the time measured with real Triton, and occupancy from the compiled kernels.

    python benchmarks/roofline_check.py [--ledger PATH] [--out DIR]

Each kernel runs at >= 256 MB per tensor: once on the simulator (CPU tensors, traffic and
unique footprint counted), once on the GPU (timed with do_bench, median). The prediction uses
the datasheet bandwidth and, separately, the copy bandwidth measured in the same run.
Appends the measured times (the copy's too) to the results ledger, the predictions and the
compiled kernels' resources in each row's note; writes DIR/roofline.json with every field.
"""
import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _src in ("src", "packages/minitriton/src"):  # run from a checkout, installed or not
    sys.path.insert(0, str(ROOT / _src))

import torch  # noqa: E402

import minitriton  # noqa: E402
from tritonlab import backend  # noqa: E402
from tritonlab import hardware as hw  # noqa: E402
from tritonlab.bench import export  # noqa: E402
from tritonlab.kernels import elementwise as ew  # noqa: E402
from tritonlab.kernels import rmsnorm as rn  # noqa: E402
from tritonlab.kernels import softmax as sm  # noqa: E402


def simulate(module, call):
    sim = backend.with_backend(module, "sim")
    with minitriton.configure(footprint=True), minitriton.record() as rec:
        call(sim)
    return rec[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ledger", type=Path, default=ROOT / "docs" / "results" / "ledger.csv",
                        help="results ledger to append to (default: %(default)s)")
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = parser.parse_args()
    tl = backend.tl
    bench = backend.triton.testing.do_bench
    gpu = hw.current() or hw.get("H200")
    big = torch.empty(1 << 28, device="cuda")  # 1 GiB copy for the measured ceiling
    dst = torch.empty_like(big)
    copy_ms = bench(lambda: dst.copy_(big), return_mode="median")
    copy_bw = 2 * big.numel() * 4 / (copy_ms / 1e3)  # bytes/s: read 1 GiB, write 1 GiB
    ledger_rows = [{"op": "copy", "shape": "2^28", "dtype": "float32",
                    "implementation": "torch copy_", "median_ms": copy_ms,
                    "rate": copy_bw / 1e9, "unit": "GB/s",
                    "note": "the measured copy ceiling; benchmarks/roofline_check.py, do_bench "
                            "median"}]
    n, (M, N) = 1 << 26, (16384, 4096)
    cases = [
        ("add", f"2^26 fp32 ({n * 4 >> 20} MB per tensor)", "tritonlab.kernels.elementwise",
         lambda m: m.add(torch.randn(n), torch.randn(n)),
         lambda: (torch.randn(n, device="cuda"), torch.randn(n, device="cuda")),
         lambda a, b: ew.add(a, b),
         lambda a, b: ew.add_kernel[(n // 1024,)](a, b, torch.empty_like(a), n, BLOCK_SIZE=1024)),
        ("softmax", f"{M}x{N} fp32 ({M * N * 4 >> 20} MB)", "tritonlab.kernels.softmax",
         lambda m: m.softmax(torch.randn(M, N)),
         lambda: (torch.randn(M, N, device="cuda"),),
         lambda x: sm.softmax(x),
         lambda x: sm.softmax_kernel[(M,)](x, torch.empty_like(x), N, N, N, BLOCK_SIZE=N,
                                           ACC=tl.float32, num_warps=8)),
        ("rmsnorm fwd", f"{M}x{N} fp32 ({M * N * 4 >> 20} MB)", "tritonlab.kernels.rmsnorm",
         lambda m: m.rmsnorm_forward(torch.randn(M, N), torch.randn(N)),
         lambda: (torch.randn(M, N, device="cuda"), torch.randn(N, device="cuda")),
         lambda x, g: rn.rmsnorm_forward(x, g),
         lambda x, g: rn.rmsnorm_fwd_kernel[(M,)](x, g, torch.empty_like(x),
                                                  torch.empty(M, device="cuda"), N, 1e-6,
                                                  BLOCK_SIZE=N, ACC=tl.float32, num_warps=8)),
    ]
    rows = []
    print(f"{gpu.name}: datasheet {gpu.hbm_bandwidth / 1e12:.2f} TB/s, measured copy "
          f"{copy_bw / 1e12:.2f} TB/s; torch {torch.__version__}, triton "
          f"{backend.triton.__version__}")
    for name, shape, module, sim_call, make, run, launch in cases:
        record = simulate(module, sim_call)
        inputs = make()
        measured = bench(lambda: run(*inputs), return_mode="median") / 1e3
        handle = launch(*inputs)
        occ, spills = hw.compiled_occupancy(handle, gpu)
        sheet = hw.roofline(record, gpu, "fp32")
        real = hw.roofline(record, gpu, "fp32", bandwidth=copy_bw)
        row = {"kernel": name, "shape": shape, "bytes_total": sheet.bytes_total,
               "bytes_unique": sheet.bytes_unique, "measured_us": measured * 1e6,
               "predicted_datasheet_us": sheet.predicted[0] * 1e6,
               "predicted_measured_bw_us": real.predicted[0] * 1e6,
               "ratio_datasheet": measured / sheet.predicted[0],
               "ratio_measured_bw": measured / real.predicted[0],
               "registers": handle.n_regs, "spills": spills, "shared_bytes": handle.metadata.shared,
               "num_warps": handle.metadata.num_warps, "occupancy": occ.occupancy,
               "blocks_per_sm": occ.blocks_per_sm, "limiter": occ.limiter}
        rows.append(row)
        ledger_rows.append({"op": name, "shape": shape.split()[0], "dtype": "float32",
                       "implementation": "triton", "median_ms": measured * 1e3,
                       # GB/s = unique bytes / s / 1e9: each byte the op must move, once
                       "rate": sheet.bytes_unique / measured / 1e9, "unit": "GB/s",
                       "note": f"benchmarks/roofline_check.py, do_bench median; roofline "
                               f"{row['predicted_datasheet_us']:.1f} us (datasheet), "
                               f"{row['predicted_measured_bw_us']:.1f} us (copy rate); "
                               f"{handle.n_regs} registers, {spills} spills, "
                               f"{handle.metadata.shared} B shared, "
                               f"{handle.metadata.num_warps} warps, {occ}"})
        print(f"{name:<12} {shape:<26} moved {sheet.bytes_total / 1e6:8.1f} MB (unique "
              f"{sheet.bytes_unique / 1e6:8.1f}); measured {measured * 1e6:8.1f} us; predicted "
              f"{sheet.predicted[0] * 1e6:8.1f} us (datasheet, x{row['ratio_datasheet']:.2f}) / "
              f"{real.predicted[0] * 1e6:8.1f} us (copy rate, x{row['ratio_measured_bw']:.2f}); "
              f"{handle.n_regs} regs, {spills} spills, {handle.metadata.shared} B shared, "
              f"{handle.metadata.num_warps} warps -> {occ}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "roofline.json").write_text(json.dumps(
        {"gpu": gpu.name, "copy_bandwidth": copy_bw, "rows": rows}, indent=1))
    export.append_ledger(args.ledger, ledger_rows, {
        "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
        "triton": backend.triton.__version__, "commit": export.git_commit(ROOT)})


if __name__ == "__main__":
    main()
