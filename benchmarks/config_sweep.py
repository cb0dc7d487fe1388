"""GPU: every launch configuration of the project's kernels timed at several shapes, the data
issue 38's performance model is fitted on and checked against (which configuration is fastest,
and by how much).

    python benchmarks/config_sweep.py [--out DIR] [--budget S] [--only NAME] [--list]

For each (kernel, shape, dtype): every configuration of a grid (block sizes, num_warps,
num_stages, tiles) is launched once through Triton's JIT (compiling it; a configuration Triton
rejects, out of shared memory say, is recorded with its error), then timed with do_bench (L2
flushed, 10 ms warm-up, 40 ms of repetitions; median, p20, p80) and by its device time (CUPTI,
L2 flushed: benchmarks/device_time.py, the time the model predicts). The compiled kernel's
resources (registers, spills, shared memory) go in the same row. Rows go to
DIR/config_sweep.csv as they are measured (a run cut short keeps them); `--budget` stops
starting new cases after S seconds. `--list` prints the cases and their configuration counts
(any machine). The same cases (`cases()`) run on minitriton for the model's counts.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import itertools
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _src in ("src", "packages/minitriton/src"):  # run from a checkout, installed or not
    sys.path.insert(0, str(ROOT / _src))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402

from device_time import device_ms  # noqa: E402
from tritonlab import backend  # noqa: E402
from tritonlab.kernels import attention as at  # noqa: E402
from tritonlab.kernels import elementwise as ew  # noqa: E402
from tritonlab.kernels import matmul as mm  # noqa: E402
from tritonlab.kernels import rmsnorm as rn  # noqa: E402
from tritonlab.kernels import rowsum as rs  # noqa: E402
from tritonlab.kernels import softmax as sm  # noqa: E402

FIELDS = ("kernel", "shape", "dtype", "config", "grid", "median_ms", "p20_ms", "p80_ms",
          "device_ms", "bytes", "flops", "n_regs", "n_spills", "shared", "error", "gpu", "torch",
          "triton", "date")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@dataclasses.dataclass
class Case:
    """One (kernel, shape, dtype): `args(dev)` makes the positional arguments, `grid(config)`
    the launch grid, `configs` the keyword dicts (constexprs, num_warps, num_stages) tried."""
    kernel_name: str
    kernel: object
    shape: str
    dtype: str
    args: object
    grid: object
    configs: list
    bytes: int = 0
    flops: int = 0
    fixed: dict = dataclasses.field(default_factory=dict)  # constexprs every config shares


def _warps(block, options=(1, 2, 4, 8, 16, 32)):
    """num_warps choices that give each thread 1 to 64 elements of a `block`-wide row."""
    return [w for w in options if 32 * w <= block and block // (32 * w) <= 64]


def cases():
    tl = backend.tl
    out = []
    for n, dt in ((1 << 20, "fp32"), (1 << 24, "fp32"), (1 << 27, "fp32"), (1 << 24, "bf16")):
        configs = [dict(BLOCK_SIZE=b, num_warps=w) for b in (256, 512, 1024, 2048, 4096, 8192)
                   for w in _warps(b, (1, 2, 4, 8, 16))]
        size = DTYPES[dt].itemsize
        out.append(Case("add_kernel", ew.add_kernel, f"{n}", dt,
                        lambda dev, n=n, dt=dt: (*(torch.randn(n, device=dev, dtype=DTYPES[dt])
                                                   for _ in range(3)), n),
                        lambda c, n=n: (-(-n // c["BLOCK_SIZE"]),), configs, 3 * n * size))
    for n, dt in ((1 << 24, "fp32"), (1 << 24, "bf16")):
        configs = [dict(BLOCK_SIZE=b, num_warps=w) for b in (512, 1024, 2048, 4096)
                   for w in _warps(b, (2, 4, 8))]
        size = DTYPES[dt].itemsize
        out.append(Case("gelu_kernel", ew.gelu_kernel, f"{n}", dt,
                        lambda dev, n=n, dt=dt: (*(torch.randn(n, device=dev, dtype=DTYPES[dt])
                                                   for _ in range(2)), n),
                        lambda c, n=n: (-(-n // c["BLOCK_SIZE"]),), configs, 2 * n * size))
    rows = ((4096, 1024, "fp32"), (8192, 4096, "fp32"), (8192, 4096, "bf16"), (1024, 16384, "fp32"),
            (32768, 1024, "bf16"))
    for M, N, dt in rows:
        block = 1 << (N - 1).bit_length()
        size = DTYPES[dt].itemsize
        two = lambda dev, M=M, N=N, dt=dt: (torch.randn(M, N, device=dev, dtype=DTYPES[dt]),  # noqa: E731
                                            torch.empty(M, N, device=dev, dtype=DTYPES[dt]))
        out.append(Case("softmax_kernel", sm.softmax_kernel, f"{M}x{N}", dt,
                        lambda dev, two=two, N=N: (*two(dev), N, N, N),
                        lambda c, M=M: (M,), [dict(num_warps=w) for w in _warps(block)],
                        2 * M * N * size, fixed=dict(BLOCK_SIZE=block, ACC=tl.float32)))
        out.append(Case("rmsnorm_fwd_kernel", rn.rmsnorm_fwd_kernel, f"{M}x{N}", dt,
                        lambda dev, two=two, M=M, N=N, dt=dt: (
                            two(dev)[0], torch.randn(N, device=dev, dtype=DTYPES[dt]),
                            torch.empty(M, N, device=dev, dtype=DTYPES[dt]),
                            torch.empty(M, device=dev), N, 1e-6),
                        lambda c, M=M: (M,), [dict(num_warps=w) for w in _warps(block)],
                        (2 * M * N + N) * size + 4 * M,
                        fixed=dict(BLOCK_SIZE=block, ACC=tl.float32)))
    for M, N in ((8192, 4096), (1024, 65536), (65536, 256)):
        configs = [dict(BLOCK_SIZE=b, num_warps=w) for b in (256, 1024, 4096, 8192)
                   if b <= max(256, 1 << (N - 1).bit_length()) for w in _warps(b, (1, 2, 4, 8, 16))]
        out.append(Case("row_sum_kernel", rs.row_sum_kernel, f"{M}x{N}", "fp32",
                        lambda dev, M=M, N=N: (torch.randn(M, N, device=dev),
                                               torch.empty(M, device=dev), N, N),
                        lambda c, M=M: (M,), configs, 4 * M * N + 4 * M,
                        fixed=dict(ACC=tl.float32)))
    tiles = [(bm, bn, bk, w, s) for bm, bn, bk, w, s in itertools.product(
        (64, 128, 256), (64, 128, 256), (32, 64), (4, 8), (3, 4))
        if bm * bn <= 128 * 256 and s * (bm + bn) * bk * 2 <= 224 * 1024
        and not (bm * bn >= 128 * 128 and w == 4 and bk == 64 and s == 4)]
    for n, dt in ((1024, "bf16"), (4096, "bf16"), (2048, "fp32")):
        configs = [dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=w, num_stages=s)
                   for bm, bn, bk, w, s in tiles if dt != "fp32" or bk == 32]
        size = DTYPES[dt].itemsize
        out.append(Case("matmul_kernel", mm.matmul_kernel, f"{n}x{n}x{n}", dt,
                        lambda dev, n=n, dt=dt: _matmul_args(dev, n, DTYPES[dt]),
                        lambda c, n=n: (-(-n // c["BLOCK_M"]) * -(-n // c["BLOCK_N"]),),
                        configs, 3 * n * n * size, 2 * n ** 3,
                        fixed=dict(GROUP_M=8, ACTIVATION="relu")))
    out += _hopper_matmul_cases() + _attention_cases() + _round_cases()
    return out


def _round_cases():
    """Kernels whose programs wait for memory more than once: RMSNorm's backward, a row loop
    (rows_per_program rows a program, each loaded after the last was reduced and written;
    PREFETCH loads the next row first), and the two-pass online softmax over wide rows (its
    second pass loads each chunk after the first pass's statistics and the last chunk's
    store)."""
    tl = backend.tl
    out = []
    for M, N, dt in ((8192, 4096, "bf16"), (32768, 1024, "bf16")):
        size, block = DTYPES[dt].itemsize, 1 << (N - 1).bit_length()
        configs = [dict(rows_per_program=r, PREFETCH=f, num_warps=w) for r in (1, 8, 64)
                   for f in (False, True) for w in _warps(block, (4, 8, 16))]
        out.append(Case("rmsnorm_bwd_kernel", rn.rmsnorm_bwd_kernel, f"{M}x{N}", dt,
                        lambda dev, M=M, N=N, dt=dt: (
                            torch.randn(M, N, device=dev, dtype=DTYPES[dt]),
                            torch.randn(N, device=dev, dtype=DTYPES[dt]),
                            torch.rand(M, device=dev) + 0.5,
                            torch.randn(M, N, device=dev, dtype=DTYPES[dt]),
                            torch.empty(M, N, device=dev, dtype=DTYPES[dt]),
                            torch.empty(M, N, device=dev), M, N),
                        lambda c, M=M: (-(-M // c["rows_per_program"]),), configs,
                        3 * M * N * size + N * size + 4 * M,
                        fixed=dict(BLOCK_SIZE=block, ACC=tl.float32)))
    for M, N, dt in ((1024, 65536, "bf16"), (4096, 16384, "fp32")):
        configs = [dict(BLOCK_SIZE=b, num_warps=w) for b in (1024, 4096, 8192)
                   for w in _warps(b, (4, 8, 16))]
        out.append(Case("softmax_online_kernel", sm.softmax_online_kernel, f"{M}x{N}", dt,
                        lambda dev, M=M, N=N, dt=dt: (
                            torch.randn(M, N, device=dev, dtype=DTYPES[dt]),
                            torch.empty(M, N, device=dev, dtype=DTYPES[dt]), N, N, N),
                        lambda c, M=M: (M,), configs, 2 * M * N * DTYPES[dt].itemsize,
                        fixed=dict(ACC=tl.float32)))
    return out


# Hopper-sized tiles (wgmma): the choices Hopper autotuners weigh (2-4 stages, BLOCK_K up to
# 128, 128x256 tiles that fit one program per SM) at a short, a middle and a long K
HOPPER_TILES = [(bm, bn, bk, w, s) for bm, bn in ((64, 64), (64, 128), (128, 64), (128, 128),
                                                  (64, 256), (128, 256))
                for bk in (32, 64, 128) for w in (4, 8) for s in (2, 3, 4)
                if s * (bm + bn) * bk * 2 <= 227 * 1024]
HOPPER_SHAPES = ((6144, 6144, 256), (8192, 4096, 1024), (3072, 3072, 6144), (1536, 1536, 1536))


def _hopper_matmul_cases():
    out = []
    for m, n, k in HOPPER_SHAPES:
        configs = [dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=w, num_stages=s)
                   for bm, bn, bk, w, s in HOPPER_TILES]
        out.append(Case("matmul_kernel", mm.matmul_kernel, f"{m}x{n}x{k}", "fp16",
                        lambda dev, m=m, n=n, k=k: _matmul_args(dev, m, torch.float16, n, k),
                        lambda c, m=m, n=n: (-(-m // c["BLOCK_M"]) * -(-n // c["BLOCK_N"]),),
                        configs, (m * k + k * n + m * n) * 2, 2 * m * n * k,
                        fixed=dict(GROUP_M=8, ACTIVATION="relu")))
    return out


def _attention_cases():
    """The project's FlashAttention forward (pointer loads) over its tiles, warps and stages:
    a causal BLOCK_M is a multiple of BLOCK_N (the kernel's diagonal split)."""
    out = []
    for z, h, n, d, causal, dt in ((4, 16, 2048, 64, False, "fp16"),
                                   (2, 16, 2048, 128, True, "fp16"),
                                   (1, 8, 8192, 64, True, "bf16")):
        configs = [dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=w, num_stages=s)
                   for bm in (64, 128) for bn in (32, 64, 128) for w in (4, 8) for s in (2, 3, 4)
                   if not (causal and bm % bn) and not (d == 128 and bm * bn > 128 * 64 and w == 4)]
        flops = 4 * z * h * n * n * d // (2 if causal else 1)
        out.append(Case("attn_fwd_kernel", at.attn_fwd_kernel,
                        f"{z}x{h}x{n}x{d}{' causal' if causal else ''}", dt,
                        lambda dev, z=z, h=h, n=n, d=d, dt=dt: _attention_args(dev, z, h, n, d,
                                                                                DTYPES[dt]),
                        lambda c, n=n, zh=z * h: (-(-n // c["BLOCK_M"]), zh), configs,
                        4 * z * h * n * d * DTYPES[dt].itemsize + 4 * z * h * n, flops,
                        fixed=dict(HEAD_DIM=d, BLOCK_D=d, IS_CAUSAL=causal, FOLD=True)))
    return out


def _attention_args(dev, z, h, n, d, dtype):
    q, k, v = (torch.randn(z, h, n, d, device=dev, dtype=dtype) for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(z, h, n, device=dev, dtype=torch.float32)
    return (q, k, v, o, lse, *q.stride(), *k.stride(), *v.stride(), *o.stride(), h, n, n,
            d ** -0.5 * at.LOG2E)


def _matmul_args(dev, m, dtype, n=None, k=None):
    n, k = n or m, k or m
    a, b = torch.randn(m, k, device=dev, dtype=dtype), torch.randn(k, n, device=dev, dtype=dtype)
    c = torch.empty(m, n, device=dev, dtype=dtype)
    return (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
            c.stride(1))


def measure(case, dev, writer, info):
    from triton.testing import do_bench
    args = case.args(dev)  # (freed when this returns, before the next case's)
    for config in case.configs:
        row = dict(info, kernel=case.kernel_name, shape=case.shape, dtype=case.dtype,
                   config=json.dumps(config, sort_keys=True), bytes=case.bytes, flops=case.flops)
        grid = case.grid(config)
        row["grid"] = "x".join(map(str, grid))
        kw = {**case.fixed, **config}
        try:
            compiled = case.kernel[grid](*args, **kw)
            torch.cuda.synchronize()
            row.update(n_regs=getattr(compiled, "n_regs", ""),
                       n_spills=getattr(compiled, "n_spills", ""),
                       shared=getattr(compiled.metadata, "shared", ""))
            med, p20, p80 = do_bench(lambda: case.kernel[grid](*args, **kw), warmup=10, rep=40,
                                     quantiles=[0.5, 0.2, 0.8])
            row.update(median_ms=med, p20_ms=p20, p80_ms=p80,
                       device_ms=device_ms(lambda: case.kernel[grid](*args, **kw)))
        except Exception as err:  # noqa: BLE001 - recorded: Triton rejects some configurations
            row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
        writer.writerow(row)
    torch.cuda.empty_cache()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "tritonlab-out"))
    p.add_argument("--budget", type=float, default=540, help="seconds before no new case starts")
    p.add_argument("--only", help="only the cases whose 'kernel shape' contains one of these "
                                  "(comma-separated)")
    p.add_argument("--list", action="store_true", help="print the cases and stop")
    args = p.parse_args(argv)
    wanted = args.only.split(",") if args.only else [""]
    chosen = [c for c in cases() if any(w in f"{c.kernel_name} {c.shape}" for w in wanted)]
    if args.list:
        for c in chosen:
            print(f"{c.kernel_name:20} {c.shape:16} {c.dtype:5} {len(c.configs):4} configurations")
        print(f"{sum(len(c.configs) for c in chosen)} configurations in {len(chosen)} cases")
        return 0
    if not torch.cuda.is_available():
        print("benchmarks/config_sweep.py needs a CUDA GPU (--list runs anywhere)", file=sys.stderr)
        return 1
    import triton
    info = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                triton=triton.__version__, date=datetime.date.today().isoformat())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    done = 0
    with open(out / "config_sweep.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        for case in chosen:
            if time.perf_counter() - t0 > args.budget:
                print(f"budget spent: {len(chosen) - done} cases not run", flush=True)
                break
            start = time.perf_counter()
            measure(case, "cuda", writer, info)
            f.flush()
            done += 1
            print(f"{case.kernel_name:20} {case.shape:16} {case.dtype:5} {len(case.configs):4} "
                  f"configs in {time.perf_counter() - start:5.1f} s", flush=True)
    print(f"wrote {out / 'config_sweep.csv'}: {done} cases in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
