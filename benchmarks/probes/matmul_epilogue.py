"""Probe: the persistent TMA matmul (fused ReLU) with its epilogue stored in sub-tiles (so the
C tile's shared-memory buffer shrinks and a fourth pipeline stage fits at 128x256x64), with
and without Triton's warp specialisation of the tile loop, against cuBLAS + ReLU and
mm.matmul measured in the same run (before and after the variants, to show the drift), at
4096^3 and 8192^3 in bf16 and fp16; do_bench medians, each variant checked against fp32 first.
Decided: docs/decisions.md#matmul-tma-configs."""
from statistics import median

from _common import do_bench, dtype_name, relu_matmul_inputs, tflops, tl, torch, triton, variant
from tritonlab.backend import TensorDescriptor
from tritonlab.kernels import matmul as mm

# BM, BN, BK, warps, stages, epilogue sub-tiles, warp specialisation, GROUP_M
VARIANTS = [(128, 256, 64, 8, 3, 1, False, 8), (128, 256, 64, 8, 3, 2, False, 8),
            (128, 256, 64, 8, 3, 2, False, 16), (128, 256, 64, 8, 4, 2, False, 16),
            (128, 256, 64, 8, 4, 4, False, 8), (128, 256, 64, 8, 3, 1, True, 8),
            (128, 256, 64, 8, 3, 2, True, 8),
            # not yet run: K steps of 128 (two stages of 96 KiB fit beside a half C buffer),
            # and 256 x 128 tiles with their C in halves
            (128, 256, 128, 8, 2, 2, False, 8), (128, 256, 128, 8, 2, 4, False, 8),
            (256, 128, 64, 8, 4, 2, False, 8)]
ROUNDS = 5  # each round times torch, mm.matmul and every variant once, in that order


@triton.jit
def mm_sub_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SUB: tl.constexpr,
                  WS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0),
                         flatten=True, warp_specialize=WS):
        first_m = (tile // in_group) * GROUP_M
        size_m = tl.minimum(num_pid_m - first_m, GROUP_M)
        off_m = (first_m + (tile % in_group) % size_m) * BLOCK_M
        off_n = ((tile % in_group) // size_m) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BLOCK_K)):
            acc = tl.dot(a_desc.load([off_m, ki * BLOCK_K]), b_desc.load([ki * BLOCK_K, off_n]),
                         acc)
        acc = tl.maximum(acc, 0.0)
        if SUB == 1:
            c_desc.store([off_m, off_n], acc.to(c_desc.dtype))
        elif SUB == 2:
            acc = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            c0, c1 = tl.split(acc)
            c_desc.store([off_m, off_n], c0.to(c_desc.dtype))
            c_desc.store([off_m, off_n + BLOCK_N // 2], c1.to(c_desc.dtype))
        else:
            acc = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            h0, h1 = tl.split(acc)
            h0 = tl.permute(tl.reshape(h0, (BLOCK_M, 2, BLOCK_N // 4)), (0, 2, 1))
            c0, c1 = tl.split(h0)
            h1 = tl.permute(tl.reshape(h1, (BLOCK_M, 2, BLOCK_N // 4)), (0, 2, 1))
            c2, c3 = tl.split(h1)
            q = BLOCK_N // 4
            c_desc.store([off_m, off_n], c0.to(c_desc.dtype))
            c_desc.store([off_m, off_n + q], c1.to(c_desc.dtype))
            c_desc.store([off_m, off_n + 2 * q], c2.to(c_desc.dtype))
            c_desc.store([off_m, off_n + 3 * q], c3.to(c_desc.dtype))


def rel(c, want):
    return ((c.float() - want).norm() / want.norm()).item()


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for n in (8192, 4096):
        for dtype in (torch.float16, torch.bfloat16):
            a, b, c = relu_matmul_inputs(n, dtype)
            want = torch.relu(a.float() @ b.float())
            runs = {"torch relu(a@b)": lambda: torch.relu(a @ b),
                    "mm.matmul": lambda: mm.matmul(a, b, "relu")}
            for bm, bn, bk, w, s, sub, ws, gm in VARIANTS:
                progs = min(sms, triton.cdiv(n, bm) * triton.cdiv(n, bn))
                ad = TensorDescriptor.from_tensor(a, [bm, bk])
                bd = TensorDescriptor.from_tensor(b, [bk, bn])
                cd = TensorDescriptor.from_tensor(c, [bm, bn // sub])
                label = f"{bm}x{bn}x{bk} w{w} s{s} sub{sub} ws={ws} g{gm}"

                def fn(ad=ad, bd=bd, cd=cd, progs=progs, bm=bm, bn=bn, bk=bk, gm=gm, sub=sub,
                       ws=ws, w=w, s=s):
                    mm_sub_kernel[(progs,)](ad, bd, cd, n, n, n, BLOCK_M=bm, BLOCK_N=bn,
                                            BLOCK_K=bk, GROUP_M=gm, SUB=sub, WS=ws,
                                            num_warps=w, num_stages=s)
                us, _, err = variant("", fn, lambda: f"{rel(c, want):.1e}", graph=False)
                if us == float("inf"):
                    print(f"{n}^3 {dtype_name(dtype)} {label}: {err}", flush=True)
                else:
                    runs[label + f" err {err}"] = fn
            times = {k: [] for k in runs}
            for _ in range(ROUNDS):
                for k, fn in runs.items():
                    times[k].append(do_bench(fn))
            ref = times["torch relu(a@b)"]
            for k, ts in times.items():
                ratios = [r / t for r, t in zip(ref, ts)]
                print(f"{n}^3 {dtype_name(dtype)} {k:<44} median {tflops(n, median(ts)):4.0f} "
                      f"TFLOP/s, vs torch median {median(ratios):.3f}x "
                      f"min {min(ratios):.3f}x max {max(ratios):.3f}x", flush=True)


if __name__ == "__main__":
    main()
