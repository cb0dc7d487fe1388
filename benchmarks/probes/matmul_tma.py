"""Probe: a persistent matmul through TMA descriptors (fused ReLU) over tile, warps, stages,
persistence and loop flattening, against cuBLAS + ReLU and mm.matmul, at 4096^3, 8192^3 and
1024^3 in bf16 and fp16; do_bench medians, each variant checked against fp32 first.
Decided: docs/decisions.md#matmul-tma-configs and #matmul-tma-threshold."""
from _common import do_bench, dtype_name, relu_matmul_inputs, tflops, tl, torch, triton, variant
from tritonlab.kernels import matmul as mm

# BM, BN, BK, warps, stages, persistent, flatten
VARIANTS = [(128, 256, 64, 8, 3, True, True), (128, 256, 64, 8, 4, True, True),
            (128, 256, 64, 8, 3, True, False), (128, 256, 64, 8, 3, False, False),
            (256, 128, 64, 8, 3, True, True), (128, 128, 64, 8, 4, True, True),
            (128, 128, 64, 4, 4, True, True), (128, 256, 128, 8, 2, True, True)]


@triton.jit
def mm_tma_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr,
                  FLATTEN: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    in_group = GROUP_M * num_pid_n
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_PROGRAMS, flatten=FLATTEN):
        group = tile // in_group
        first_m = group * GROUP_M
        size_m = min(num_pid_m - first_m, GROUP_M)
        off_m = (first_m + tile % size_m) * BLOCK_M
        off_n = ((tile % in_group) // size_m) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            acc = tl.dot(a_desc.load([off_m, ki * BLOCK_K]), b_desc.load([ki * BLOCK_K, off_n]),
                         acc)  # read BM*BK + BK*BN per step
        acc = tl.maximum(acc, 0.0)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))  # write BM*BN


def main():
    from triton.tools.tensor_descriptor import TensorDescriptor
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for n in (4096, 8192, 1024):
        for dtype in (torch.bfloat16, torch.float16):
            a, b, c = relu_matmul_inputs(n, dtype)
            want = torch.relu(a.float() @ b.float())
            ref = do_bench(lambda: torch.relu(a @ b))
            ours = do_bench(lambda: mm.matmul(a, b, "relu"))
            print(f"{n}^3 {dtype_name(dtype)}: torch relu(a@b) {tflops(n, ref):.0f} TFLOP/s,"
                  f" mm.matmul {tflops(n, ours):.0f} ({ref / ours:.3f}x)", flush=True)
            for bm, bn, bk, w, s, persistent, flat in VARIANTS:
                tiles = triton.cdiv(n, bm) * triton.cdiv(n, bn)
                progs = min(sms, tiles) if persistent else tiles
                ad = TensorDescriptor.from_tensor(a, [bm, bk])
                bd = TensorDescriptor.from_tensor(b, [bk, bn])
                cd = TensorDescriptor.from_tensor(c, [bm, bn])
                us, _, err = variant("", lambda: mm_tma_kernel[(progs,)](
                    ad, bd, cd, n, n, n, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                    NUM_PROGRAMS=progs, FLATTEN=flat, num_warps=w, num_stages=s),
                    lambda: f"{((c.float() - want).norm() / want.norm()).item():.1e}",
                    graph=False)
                label = f"  tma {bm}x{bn}x{bk} w{w} s{s}"
                if us == float("inf"):
                    print(f"{label}: {err}", flush=True)
                else:
                    print(f"{label} persistent={persistent} flat={flat}: "
                          f"{tflops(n, us / 1e3):.0f} TFLOP/s {ref * 1e3 / us:.3f}x  err {err}",
                          flush=True)


if __name__ == "__main__":
    main()
