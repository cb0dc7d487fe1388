"""Probe: more of the whole-row RMSNorm backward's rows in flight.

The whole-row backward (`rmsnorm_bwd_kernel`) is issue 37's step's loss: 0.91-0.92 of a copy
of its 3·MN bytes in every L2 state on an H100 while the forward reaches the copy
(docs/results/step-state-h100-2026-12-08-s47.txt). Its programs are persistent, a few per SM
(dg summed in registers across their rows), and hold at most two rows of x and dy in flight
(PREFETCH, in registers: at 8192x4096 bf16 its 2 programs of 8 warps take 128 registers a
thread, the whole register file). Two ways to have more rows on their way:

  * PREFETCH=2: the next two rows' loads in registers (three rows in flight a program), with
    more warps to hold them (fewer programs per SM);
  * L2_AHEAD=k: each step also asks L2 for the x and dy of the row k on (prefetch.global.L2,
    one instruction a thread, no register held), so that the register loads find them in L2.

Wide rows take the exchange backward (x and dy read once, a row's pieces meeting in memory
every few rows), whose pieces hold no load in flight while they meet unless its step loop is
pipelined (Hopper's bf16 entry up to 65536 columns): with RMSNormTuning.bwd_exchange_l2_ahead
= k each step first asks L2 for its piece of the rows k steps on, so DRAM works through the
meeting.

At 8192x4096 and 32768x1024, bf16 and fp32, against today's launch (the plan's programs per
SM, warps, PREFETCH or stages) and a copy of the same 3·MN bytes: the kernel and the dg sum,
checked against today's (dx and dg bit for bit where the warps are today's: the same
arithmetic; within rounding elsewhere, tl.sum's order following the warps), CUDA-graph
replays and do_bench (L2 flushed), interleaved, three repeats. At 4096x16384, 1024x65536 and
256x262144 the exchange backward through the plan (today's, and with L2 1, 2 and 3 steps
ahead), checked against today's within rounding.
Decides: RMSNormTuning.bwd_prefetch_rows, bwd_l2_ahead and bwd_exchange_l2_ahead
(docs/decisions.md#rmsnorm-backward-prefetch-depth).

    [DTYPES=bf16,fp32] python benchmarks/probes/rms_bwd_depth.py [MxN ...]
        ($OUT/rms_bwd_depth.json)
"""
import dataclasses
import os

from _common import (against_same_bytes, best_against_today, dtype_name, rms_inputs, save_rows,
                     shapes_from_argv, tl, torch, triton)
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels.tuning import tuning_for


SHAPES = ((8192, 4096), (32768, 1024), (4096, 16384), (1024, 65536), (256, 262144))
AHEAD = (2, 3, 4, 6, 8)
STEPS_AHEAD = (1, 2, 3)


def exchange_variants(x, g, dy, rstd):
    """(label, fn, check) of the exchange backward through the plan: today's, then with L2
    asked 1, 2, 3 steps ahead (bwd_exchange_l2_ahead); None where the plan takes another."""
    t = tuning_for("rmsnorm", x.get_device())
    today = rn._Plan(x, g)
    if today.bwd_exchange is None:
        return None
    want = today.backward(dy, x, g, rstd)

    def check(plan):
        def run():
            dx, dg = plan.backward(dy, x, g, rstd)
            same = torch.equal(dx, want[0]) and torch.equal(dg, want[1])
            tol = 1e-4 if x.dtype == torch.float32 else 2e-2
            torch.testing.assert_close(dx, want[0], rtol=tol, atol=tol)
            torch.testing.assert_close(dg, want[1], rtol=tol, atol=tol * x.shape[0] ** 0.5)
            return "same bits" if same else "within rounding"
        return run
    kw = today.bwd.kw
    label = (f"today exchange {kw['BLOCK_SIZE']}x{kw['ROWS']}"
             + (" split" if kw.get("SPLIT") else f" s{kw['STAGES']}" if kw.get("STAGES")
                else ""))
    rows = [(label, lambda: today.backward(dy, x, g, rstd), check(today))]
    for ahead in STEPS_AHEAD:
        plan = rn._Plan(x, g, tuning=dataclasses.replace(t, bwd_exchange_l2_ahead=ahead))
        assert plan.bwd.kw["L2_AHEAD"] == ahead
        rows.append((f"{label} L2+{ahead} steps",
                     lambda plan=plan: plan.backward(dy, x, g, rstd), check(plan)))
    return label, rows


def launcher(x, g, rstd, dy, dx, dg, per_sm, warps, prefetch=False, stages=None, ahead=0):
    """The whole-row backward and the dg sum with these settings, `per_sm` programs per SM."""
    M, N = x.shape
    programs = min(M, per_sm * torch.cuda.get_device_properties(0).multi_processor_count)
    rows = triton.cdiv(M, programs)
    programs = triton.cdiv(M, rows)
    partial = torch.empty(programs, N, device="cuda", dtype=torch.float32)
    kw = dict(BLOCK_SIZE=triton.next_power_of_2(N), ACC=tl.float32, PREFETCH=prefetch,
              num_warps=warps, **({"STAGES": stages} if stages else {}),
              **({"L2_AHEAD": ahead} if ahead else {}))

    def run():
        rn.rmsnorm_bwd_kernel[(programs,)](x, g, rstd, dy, dx, partial, M, N, rows, **kw)
        rn.rmsnorm_dg_sum_kernel[(triton.cdiv(N, rn.DG_BLOCK_N),)](
            partial, dg, programs, N, BLOCK_P=rn.DG_BLOCK_P, BLOCK_N=rn.DG_BLOCK_N,
            ACC=tl.float32)
    return run


def whole_row_today(x, g, dy, rstd):
    """Today's whole-row backward of x's plan (kernel and dg sum), which a probe's variants
    are held to: (label, its launch settings (programs per SM, warps, PREFETCH, stages) as
    `launcher` takes them, dx and dg for the variants to write, check), or None where the
    plan takes another kernel. check() holds dx and dg, as the variant run last wrote them, to
    today's (within rounding: tl.sum's order follows the warps), says whether the bits are
    the same, and fills dx with NaN for the next."""
    plan = rn._Plan(x, g)
    if plan.bwd.kernel is not rn.rmsnorm_bwd_kernel:
        return None
    kw, sms = plan.bwd.kw, torch.cuda.get_device_properties(0).multi_processor_count
    settings = (max(1, round(plan.partial_shape[0] / sms)), kw["num_warps"], kw["PREFETCH"],
                kw.get("STAGES"))
    dx, dg = torch.empty_like(x), torch.empty_like(g)
    want_dx, want_dg = torch.empty_like(x), torch.empty_like(g)
    launcher(x, g, rstd, dy, want_dx, want_dg, *settings)()

    def check():
        same = torch.equal(dx, want_dx) and torch.equal(dg, want_dg)
        if not same:
            tol = 2e-2 if x.dtype == torch.bfloat16 else 1e-4
            torch.testing.assert_close(dx.float(), want_dx.float(), rtol=tol, atol=tol)
            big = want_dg.float().abs().max().item()
            diff = (dg.float() - want_dg.float()).abs().max().item()
            assert diff <= tol * max(big, 1.0), f"dg {diff:.1e} apart"
        dx.fill_(float("nan"))  # each variant writes every element anew
        return "same bits" if same else "within rounding"
    per_sm, warps, prefetch, stages = settings
    label = (f"today {per_sm}/SM w{warps} "
             + (f"s{stages}" if stages else "prefetch" if prefetch else "plain"))
    return label, settings, dx, dg, check


def cases(shapes):
    """(x, g, dy, rstd): RMSNorm's backward inputs on the GPU at each shape, in each of
    $DTYPES (bf16,fp32 by default)."""
    for M, N in shapes:
        for dtype in [{"bf16": torch.bfloat16, "fp32": torch.float32}[d]
                      for d in os.environ.get("DTYPES", "bf16,fp32").split(",")]:
            x, g, dy = rms_inputs(M, N, dtype)
            yield x, g, dy, torch.rsqrt(x.float().pow(2).mean(-1) + 1e-6)


def timed(x, impls, today, what="kernel + dg sum"):
    """`against_copy`'s rows of a backward's variants `impls` at x's shape and dtype, with a
    copy of the backward's 3·MN bytes."""
    (M, N), dtype = x.shape, dtype_name(x.dtype)
    return against_same_bytes(x, 3, f"rms bwd {M}x{N} {dtype} ({what})", impls,
                              shape=f"{M}x{N}", dtype=dtype, today=today)


def main(shapes=SHAPES):
    rows = []
    for x, g, dy, rstd in cases(shapes):
        whole = whole_row_today(x, g, dy, rstd)
        if whole is None:
            wide = exchange_variants(x, g, dy, rstd)
            if wide is None:
                print(f"{x.shape[0]}x{x.shape[1]} {dtype_name(x.dtype)}: neither the whole-row "
                      f"nor the exchange backward")
                continue
            today, impls = wide
            rows += timed(x, impls, today, "exchange + dg sum")
            continue
        today, settings, dx, dg, check = whole
        per_sm, warps, prefetch, stages = settings
        variants = [(today, launcher(x, g, rstd, dy, dx, dg, *settings))]
        for ahead in AHEAD:  # today's launch, rows asked of L2 ahead
            variants.append((f"{today} L2+{ahead}", launcher(
                x, g, rstd, dy, dx, dg, per_sm, warps, prefetch, stages, ahead)))
        if stages:  # today stages (short rows): the register prefetch with L2 as well
            for ahead in (0, 4):
                w = 2 * warps
                variants.append((f"{per_sm}/SM w{w} prefetch" + (f" L2+{ahead}" if ahead
                                                                else ""), launcher(
                    x, g, rstd, dy, dx, dg, per_sm, w, True, None, ahead)))
        for p, w in ((1, 2 * warps), (2, 2 * warps), (1, 4 * warps), (2, warps)):
            if w > 32 or w < 4:
                continue
            for ahead in (0, 4):  # two rows ahead in registers
                variants.append((f"{p}/SM w{w} prefetch 2" + (f" L2+{ahead}" if ahead
                                                              else ""), launcher(
                    x, g, rstd, dy, dx, dg, p, w, 2, None, ahead)))
        rows += timed(x, [(label, fn, check) for label, fn in variants], today)
    best_against_today(rows)
    save_rows(os.environ.get("OUT", "out"), "rms_bwd_depth.json", rows)


if __name__ == "__main__":  # rms_bwd_depth.py [MxN ...]: these shapes only
    main(shapes_from_argv(SHAPES))
