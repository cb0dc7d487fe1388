"""Autotuning on the CPU from a sample of each config's programs: does it choose as full trials do?

    python benchmarks/autotune_sampling.py [--samples 4 16 64] [--json FILE]

minitriton's autotuner ranks configs by their roofline time on the emulated GPU, from the
traffic the simulator counts; a trial runs `Settings.autotune_sample` programs of the grid
(16 by default) and scales their counts to the grid (runtime/autotune.py). Here every
autotuned kernel below is tuned once with full trials (autotune_sample=0) and once per sample
size, on the same inputs, and the table gives: whether the same config is chosen, the
Spearman correlation of the configs' ranks, the largest relative error of a config's time
against its full trial, and the tuning's wall time. The kernels are the project's matmul
(masked edges), a split-K matmul (atomics, reset_to_zero), causal attention (programs of
unequal work) and a row-blocked softmax whose grid depends on the config.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "packages/minitriton/src")]

import numpy as np  # noqa: E402

import minitriton as triton  # noqa: E402
import minitriton.language as tl  # noqa: E402


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def split_k_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr, SPLIT: tl.constexpr):
    pid_m, pid_n, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in range(pid_k * BK, K, BK * SPLIT):
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def causal_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, L, scale, D: tl.constexpr,
                            BM: tl.constexpr, BN: tl.constexpr):
    pid, head = tl.program_id(0), tl.program_id(1)
    base = head * L * D
    rm = pid * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + base + rm[:, None] * D + rd[None, :], mask=rm[:, None] < L, other=0.0)
    m_i = tl.full([BM], float("-inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for start in range(0, (pid + 1) * BM, BN):  # the causal rows of this block only
        rn = start + tl.arange(0, BN)
        k = tl.load(k_ptr + base + rn[:, None] * D + rd[None, :], mask=rn[:, None] < L, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where((rn[None, :] <= rm[:, None]) & (rn[None, :] < L), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        v = tl.load(v_ptr + base + rn[:, None] * D + rd[None, :], mask=rn[:, None] < L, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
    tl.store(o_ptr + base + rm[:, None] * D + rd[None, :], (acc / l_i[:, None]).to(o_ptr.dtype.element_ty),
             mask=rm[:, None] < L)


@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, R, C, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < R) & (cols[None, :] < C)
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=mask, other=float("-inf"))
    x = x - tl.max(x, 1)[:, None]
    e = tl.exp(x)
    tl.store(y_ptr + rows[:, None] * C + cols[None, :], e / tl.sum(e, 1)[:, None], mask=mask)


def tiles(*shapes, warps=(4, 8)):
    return [triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=w)
            for bm, bn, bk in shapes for w in warps]


TILES = [(32, 32, 32), (64, 64, 32), (64, 128, 32), (128, 64, 32), (128, 128, 32),
         (32, 128, 64), (128, 32, 64), (64, 64, 64)]


def matmul_case(M, N, K, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    c = np.empty((M, N), np.float32)
    tuned = triton.autotune(tiles(*TILES), key=["M", "N", "K"])(matmul_kernel)
    grid = lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))  # noqa: E731
    return tuned, lambda: tuned[grid](a, b, c, M, N, K)


def split_k_case(M, N, K):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    configs = [triton.Config({"BM": bm, "BN": bn, "BK": 32, "SPLIT": s})
               for bm, bn in ((32, 32), (64, 64), (128, 64)) for s in (1, 2, 4, 8)]
    tuned = triton.autotune(configs, key=["M", "N", "K"], reset_to_zero=["c_ptr"])(split_k_kernel)
    grid = lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]), meta["SPLIT"])  # noqa: E731
    return tuned, lambda: tuned[grid](a, b, c, M, N, K)


def attention_case(H, L, D):
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((H, L, D)).astype(np.float16) for _ in range(3))
    o = np.empty_like(q)
    configs = [triton.Config({"BM": bm, "BN": bn}, num_warps=w)
               for bm, bn in ((16, 16), (32, 32), (64, 32), (64, 64), (128, 64), (128, 128))
               for w in (4, 8)]
    tuned = triton.autotune(configs, key=["L"])(causal_attention_kernel)
    grid = lambda meta: (triton.cdiv(L, meta["BM"]), H)  # noqa: E731
    return tuned, lambda: tuned[grid](q, k, v, o, L, D ** -0.5, D=D)


def softmax_case(R, C):
    x = np.random.default_rng(3).standard_normal((R, C)).astype(np.float32)
    y = np.empty_like(x)
    block = triton.next_power_of_2(C)
    configs = [triton.Config({"ROWS": r, "BLOCK": block}, num_warps=w)
               for r in (1, 2, 4, 8, 16) for w in (1, 4, 8)]
    tuned = triton.autotune(configs, key=["R", "C"])(softmax_rows_kernel)
    grid = lambda meta: (triton.cdiv(R, meta["ROWS"]),)  # noqa: E731
    return tuned, lambda: tuned[grid](x, y, R, C)


CASES = [
    ("matmul fp16 256x256x256", lambda: matmul_case(256, 256, 256, np.float16)),
    ("matmul fp16 1000x700x300", lambda: matmul_case(1000, 700, 300, np.float16)),
    ("matmul fp32 512x384x128", lambda: matmul_case(512, 384, 128, np.float32)),
    ("split-K fp16 256x256x2048", lambda: split_k_case(256, 256, 2048)),
    ("split-K fp16 200x136x1000", lambda: split_k_case(200, 136, 1000)),
    ("causal attention fp16 4x1024x64", lambda: attention_case(4, 1024, 64)),
    ("causal attention fp16 2x777x32", lambda: attention_case(2, 777, 32)),
    ("softmax rows fp32 1000x300", lambda: softmax_case(1000, 300)),
]


def spearman(a, b):
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    if ra.std() == 0 or rb.std() == 0:
        return 1.0
    return float(np.corrcoef(ra, rb)[0, 1])


def tune(make, sample):
    tuned, launch = make()
    with triton.configure(autotune_sample=sample):
        t0 = time.perf_counter()
        launch()
        wall = time.perf_counter() - t0
    timings = {str(c): t[0] for c, t in tuned.configs_timings.items()}
    return str(tuned.best_config), timings, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--only", help="run only the cases whose label contains this text")
    args = parser.parse_args()
    print(f"{'case':<34}{'sample':>7}{'same':>6}{'rho':>7}{'max err':>9}{'wall s':>9}"
          f"{'full s':>8}  chosen (full)")
    rows = []
    for label, make in CASES:
        if args.only and args.only not in label:
            continue
        tune(make, 1)  # compiles every config: the walls below are the trials' own
        best, full, full_wall = tune(make, 0)
        names = list(full)
        for sample in args.samples:
            chosen, got, wall = tune(make, sample)
            finite = [n for n in names if np.isfinite(full[n]) and np.isfinite(got[n])]
            err = max(abs(got[n] / full[n] - 1) for n in finite)
            rho = spearman([full[n] for n in finite], [got[n] for n in finite])
            # "same": the same config, or one the full trials time within 1 % of the best
            same = chosen == best or full[chosen] <= full[best] * 1.01
            rows.append({"case": label, "sample": sample, "same": same, "rho": rho,
                         "max_err": err, "wall": wall, "full_wall": full_wall,
                         "chosen": chosen, "best": best, "configs": len(names)})
            print(f"{label:<34}{sample:>7}{'yes' if same else 'NO':>6}{rho:>7.3f}{err:>9.3f}"
                  f"{wall:>9.2f}{full_wall:>8.2f}  {best}", flush=True)
    for sample in args.samples:
        mine = [r for r in rows if r["sample"] == sample]
        print(f"sample {sample}: same choice {sum(r['same'] for r in mine)}/{len(mine)}, "
              f"median rho {statistics.median(r['rho'] for r in mine):.3f}, tuning "
              f"{sum(r['full_wall'] for r in mine) / sum(r['wall'] for r in mine):.1f}x faster")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
