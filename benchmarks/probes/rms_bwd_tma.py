"""Probe: the whole-row RMSNorm backward with its rows brought in by TMA.

The whole-row backward (`rmsnorm_bwd_kernel`) is what keeps RMSNorm's training step from the
copy at the middle shapes: 0.86-0.92 of a copy of its 3·MN bytes on an H100 in every L2
state, while the forward reaches the copy (docs/results/step-state-h100-2026-12-08-s47.txt).
Its loads in flight are registers: the next row (PREFETCH) takes the whole register file at
8192x4096 bf16, and Triton's staged loop over pointer loads (cp.async, `bwd_stages`) lost
(docs/decisions.md#row-loop-stages). `rmsnorm_bwd_tma_kernel` holds the next STAGES - 1 rows
in shared memory instead, brought by TMA (one bulk copy a row and tensor, an mbarrier to wait
on, no thread busy with them), and may store dx by TMA too.

At 8192x4096 and 32768x1024 (rows of 1-16 KiB, the whole-row kernel's), bf16 and fp32, against
today's launch and a copy of the same 3·MN bytes: the kernel and the dg sum, checked against
today's within rounding (its row sums in another layout), CUDA-graph replays and do_bench (L2
flushed), interleaved, three repeats.
Decides: whether RMSNorm's plan takes the TMA backward, with which stages, warps and programs
per SM (docs/decisions.md#rmsnorm-backward-tma).

    [DTYPES=bf16,fp32] python benchmarks/probes/rms_bwd_tma.py [MxN ...]
        ($OUT/rms_bwd_tma.json)
"""
import os

from _common import best_against_today, dtype_name, save_rows, shapes_from_argv, tl, torch, triton
from rms_bwd_depth import cases, launcher, timed, whole_row_today
from tritonlab.kernels import rmsnorm as rn

SHAPES = ((8192, 4096), (32768, 1024))
# (stages, warps, programs per SM, dx by TMA) for rows of up to 2 KiB, and for wider ones
SHORT = ((3, 4, 4, True), (4, 4, 4, True), (6, 4, 4, True), (4, 4, 4, False), (4, 8, 4, True),
         (4, 4, 8, True), (3, 4, 2, True))
LONG = ((2, 8, 2, True), (3, 8, 2, True), (3, 8, 2, False), (4, 8, 1, True), (3, 16, 1, True),
        (3, 4, 2, True), (2, 16, 2, True))


def tma_launcher(x, g, rstd, dy, dx, dg, stages, warps, per_sm, tma_store):
    """rmsnorm_bwd_tma_kernel and the dg sum, `per_sm` programs per SM."""
    M, N = x.shape
    programs = min(M, per_sm * torch.cuda.get_device_properties(0).multi_processor_count)
    rows = triton.cdiv(M, programs)
    programs = triton.cdiv(M, rows)
    partial = torch.empty(programs, N, device="cuda", dtype=torch.float32)

    def run():
        rn.rmsnorm_bwd_tma_kernel[(programs,)](
            x, g, rstd, dy, dx, partial, M, N, rows, BLOCK_SIZE=triton.next_power_of_2(N),
            ACC=tl.float32, STAGES=stages, TMA_STORE=tma_store, num_warps=warps)
        rn.rmsnorm_dg_sum_kernel[(triton.cdiv(N, rn.DG_BLOCK_N),)](
            partial, dg, programs, N, BLOCK_P=rn.DG_BLOCK_P, BLOCK_N=rn.DG_BLOCK_N,
            ACC=tl.float32)
    return run


def main(shapes=SHAPES):
    # the descriptors are made on the device, in Triton's global scratch
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8,
                                                                     device="cuda"))
    rows = []
    for x, g, dy, rstd in cases(shapes):
        whole = whole_row_today(x, g, dy, rstd)
        if whole is None:
            print(f"{x.shape[0]}x{x.shape[1]} {dtype_name(x.dtype)}: not the whole-row "
                  f"backward today")
            continue
        today, settings, dx, dg, check = whole
        variants = [(today, launcher(x, g, rstd, dy, dx, dg, *settings))]
        for s, w, p, store in SHORT if x.shape[1] * x.element_size() <= 2048 else LONG:
            variants.append((f"tma s{s} w{w} {p}/SM" + ("" if store else " st.global"),
                             tma_launcher(x, g, rstd, dy, dx, dg, s, w, p, store)))
        rows += timed(x, [(label, fn, check) for label, fn in variants], today)
    best_against_today(rows)
    save_rows(os.environ.get("OUT", "out"), "rms_bwd_tma.json", rows)


if __name__ == "__main__":  # rms_bwd_tma.py [MxN ...]: these shapes only
    main(shapes_from_argv(SHAPES))
