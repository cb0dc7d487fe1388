"""Issue 36: the Gluon backwards (kernels/attention_gluon.py) against the tl backwards through
TMA and cuDNN's, on the speed rows' shapes, per tile: the two kernels (dK/dV per key tile, dQ
per query tile, each stepping the other's tiles through a TMA ring with wgmma), the same with
both kernels warp-specialized ("ws": two consumer warp groups of 64 keys or queries and a
loader warp) and
the one pass ("gluon-atomic": dK/dV per key tile, each query step's share of dQ added by a TMA
reduction).

    python benchmarks/probes/gluon_attention_bwd.py [--rows SHAPE:DTYPE:CAUSAL,...] [--out DIR]
        on a Hopper GPU: checks each variant against the tl backward, then times the
        backward alone (do_bench: dQ, dK, dV from saved O, L; D included) beside the tl ones
        and cuDNN's (SDPA's autograd backward, its forward excluded); DIR/gluon_attention_bwd.json
    python benchmarks/probes/gluon_attention_bwd.py --compile-only [--triton DIR]
        anywhere: compiles the one-pass and warp-specialized kernels' tiles for sm_90
        with Triton's wheel (no GPU) and prints registers, spilled bytes and shared memory
"""
import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
from gluon_attention import compiled_row, print_rows, tensordesc  # noqa: E402 - the probe beside

ROWS = "4x32x4096x128:fp16:0,4x32x4096x128:fp16:1,1x16x16384x64:bf16:1,1x1x65536x128:bf16:1"
# (dkdv tiles, dq tiles), each (BLOCK_M, BLOCK_N, warps, stages), per head dim class: spill-free
# for sm_90 in an offline compile (Triton 3.6's wheel, 2026-12-06) but d = 128's (64, 128, 8, 2)
# dK/dV tile, 8 bytes
PAIRS = {64: [((64, 128, 8, 2), (128, 64, 8, 2)), ((32, 128, 8, 2), (128, 64, 8, 2)),
              ((64, 128, 8, 2), (64, 64, 4, 2))],
         128: [((64, 128, 8, 2), (128, 64, 8, 2)), ((32, 128, 8, 2), (128, 64, 8, 2)),
               ((32, 128, 8, 2), (128, 32, 8, 2))]}
# the one pass's tiles (BLOCK_M = 64 queries a step, BLOCK_N keys a program, warps, stages)
ONE_PASS = {64: [(64, 128, 8, 2), (64, 128, 8, 3), (64, 64, 4, 2)],
            128: [(64, 128, 8, 2), (64, 64, 4, 2), (64, 128, 8, 1)]}
# the warp-specialized two kernels' (dK/dV: 128 keys a program, dQ: 128 queries, each on two
# consumer warp groups of 4 warps and a loader warp)
WS_PAIRS = {64: [((64, 128, 4, 2), (128, 64, 4, 2)), ((128, 128, 4, 2), (128, 128, 4, 2)),
                 ((128, 128, 4, 3), (128, 64, 4, 3)), ((64, 128, 4, 4), (128, 64, 4, 4))],
            128: [((64, 128, 4, 2), (128, 64, 4, 2)), ((64, 128, 4, 3), (128, 64, 4, 3)),
                  ((64, 128, 4, 4), (128, 64, 4, 4))]}
# the warp-specialized one pass's (64 queries a step, 128 keys a program on two consumer warp
# groups of 4 warps and a loader warp)
# (d = 128 at 3 stages takes 247680 B of shared memory: more than an SM has)
WS_ONE_PASS = {64: [(64, 128, 4, 2), (64, 128, 4, 3), (128, 128, 4, 2)], 128: [(64, 128, 4, 2)]}
# ... with dQ's columns split between the two warp groups (d = 128 only: "split"; its default)
WS_ONE_PASS_SPLIT = [(64, 128, 4, 2), (64, 128, 4, 3)]


def compile_one_pass(dtype_name="bf16"):
    """Rows (label, registers, spilled bytes, shared bytes, error) of the one-pass kernel and
    the warp-specialized kernels (the dK/dV one also as the one pass)."""
    from tritonlab.kernels import attention_gluon as fg

    rows = []
    ws_dkdv = {d: [dkdv for dkdv, _ in pairs] for d, pairs in WS_PAIRS.items()}
    ws_dq = {d: [dq for _, dq in pairs] for d, pairs in WS_PAIRS.items()}
    # (name, kernel, tiles per head dim, K and V rows a box, Q and dO rows a box, pointers)
    kernels = (("one-pass", fg.gluon_attn_bwd_one_pass_kernel, ONE_PASS, 1, 1, ("dk", "dv")),
               ("ws dK/dV", fg.gluon_attn_bwd_dkdv_ws_kernel, ws_dkdv, 2, 1, ("dk", "dv")),
               ("ws dQ", fg.gluon_attn_bwd_dq_ws_kernel, ws_dq, 1, 2, ("dq",)),
               ("ws one-pass", fg.gluon_attn_bwd_one_pass_ws_kernel, WS_ONE_PASS, 2, 1,
                ("dk", "dv")),
               ("ws one-pass split", fg.gluon_attn_bwd_one_pass_ws_kernel,
                {128: WS_ONE_PASS_SPLIT}, 2, 1, ("dk", "dv")))
    for name, kernel, table, kv_split, q_split, outs in kernels:
        split = name.endswith("split")
        for d, tiles in table.items():
            for causal in (False, True):
                for bm, bn, warps, stages in tiles:
                    label = f"{name} d={d} causal={int(causal)} ({bm}, {bn}, {warps}, {stages})"
                    sig = {"q_desc": tensordesc(dtype_name, [bm // q_split, d]),
                           "k_desc": tensordesc(dtype_name, [bn // kv_split, d]),
                           "v_desc": tensordesc(dtype_name, [bn // kv_split, d]),
                           "do_desc": tensordesc(dtype_name, [bm // q_split, d]),
                           **{f"{o}_ptr": f"*{dtype_name}" for o in outs},
                           "lse_ptr": "*fp32", "delta_ptr": "*fp32", "n_ctx": "i32",
                           "qk_scale": "fp32", "scale": "fp32", "STAGES": "constexpr",
                           "CAUSAL": "constexpr", "num_warps": "constexpr"}
                    if "one-pass" in name:
                        sig["dq_desc"] = tensordesc("fp32", [bm, d // 2 if split else d])
                    consts = {"STAGES": stages, "CAUSAL": causal, "num_warps": warps}
                    if name.startswith("ws one-pass"):
                        sig["SPLIT"] = "constexpr"
                        consts["SPLIT"] = split
                    divisible = (*(f"{o}_ptr" for o in outs), "lse_ptr", "delta_ptr", "n_ctx")
                    rows.append(compiled_row(label, kernel, sig, consts, divisible, warps))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default=ROWS)
    p.add_argument("--out", default=os.environ.get("OUT", "out"))
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--triton", help="folder of Triton's wheel (--compile-only, no GPU)")
    args = p.parse_args(argv)
    if args.compile_only:
        return print_rows(compile_one_pass(), 40)

    import torch
    import torch.nn.functional as F
    import triton
    from tritonlab.kernels import attention as fa
    from tritonlab.kernels import attention_gluon as fg

    results = []
    for row in args.rows.split(","):
        shape, dtype_name, causal = row.split(":")
        b, h, n, d = map(int, shape.split("x"))
        causal = causal == "1"
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype_name]
        q, k, v, do = (torch.randn(b, h, n, d, device="cuda", dtype=dtype) for _ in range(4))
        scale = d ** -0.5
        o, lse = fa.attention_forward(q, k, v, causal)
        flops = 2.5 * 4 * b * h * n * n * d // (2 if causal else 1)  # the backward's 5 matmuls

        def timed(label, fn):
            ms = triton.testing.do_bench(fn, warmup=25, rep=100)
            results.append({"row": row, "label": label, "ms": ms,
                            "tflops": flops / ms / 1e9})
            print(f"{row:<28} {label:<58} {ms:8.3f} ms {flops / ms / 1e9:6.0f} TFLOP/s",
                  flush=True)

        want = fa.attention_backward(do, q, k, v, o, lse, causal, scale, impl="two-kernel-tma")
        timed("tl two-kernel-tma", lambda: fa.attention_backward(
            do, q, k, v, o, lse, causal, scale, impl="two-kernel-tma"))
        qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
            out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
            timed("cudnn", lambda: torch.autograd.grad(out, (qg, kg, vg), do,
                                                       retain_graph=True))
        timed("tl atomic-tma", lambda: fa.attention_backward(
            do, q, k, v, o, lse, causal, scale, impl="atomic-tma"))

        def check(label, run):
            try:
                got = run()
                for name, g, w in zip(("dQ", "dK", "dV"), got, want):
                    err = ((g.float() - w.float()).norm() / w.float().norm()).item()
                    if not err < 2e-2:
                        raise AssertionError(f"{name}: relative error {err:.2e}")
            except Exception as e:  # noqa: BLE001 - a failing variant is a finding
                results.append({"row": row, "label": label, "error": str(e)[-300:]})
                print(f"{row:<28} {label:<58} failed: {type(e).__name__}: {str(e)[-160:]}",
                      flush=True)
                return
            timed(label, run)

        for dkdv, dq in PAIRS[64 if d <= 64 else 128]:
            tiles = {"dkdv": dkdv, "dq": dq}

            def run(tiles=tiles):
                delta = fa._delta(o, do, h, n, d)
                grads = [torch.empty_like(q) for _ in range(3)]
                return fg.backward(do, q, k, v, lse, delta, *grads, causal, scale, tiles)
            check(f"gluon dkdv {dkdv} dq {dq}", run)
        for dkdv, dq in WS_PAIRS[64 if d <= 64 else 128]:
            tiles = {"dkdv": dkdv, "dq": dq}

            def run_ws(tiles=tiles):
                delta = fa._delta(o, do, h, n, d)
                grads = [torch.empty_like(q) for _ in range(3)]
                return fg.backward(do, q, k, v, lse, delta, *grads, causal, scale, tiles,
                                   ws=True)
            check(f"gluon ws dkdv {dkdv} dq {dq}", run_ws)
        for tiles in ONE_PASS[64 if d <= 64 else 128]:
            check(f"gluon one-pass {tiles}", lambda t=tiles: fa.attention_backward(
                do, q, k, v, o, lse, causal, scale, tiles={"dkdv": t}, impl="gluon-atomic"))
        for split in ((False, True) if d == 128 else (False,)):
            for tiles in (WS_ONE_PASS_SPLIT if split else WS_ONE_PASS[64 if d <= 64 else 128]):
                def run_one_pass(t=tiles, split=split):
                    delta = fa._delta(o, do, h, n, d)
                    dq32 = torch.zeros(q.shape, device=q.device, dtype=torch.float32)
                    dk, dv = torch.empty_like(k), torch.empty_like(v)
                    fg.backward_one_pass(do, q, k, v, lse, delta, dq32, dk, dv, causal, scale,
                                         t, ws=True, split=split)
                    return dq32.to(q.dtype), dk, dv
                check(f"gluon ws one-pass{' split' if split else ''} {tiles}", run_one_pass)
    os.makedirs(args.out, exist_ok=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "triton": triton.__version__}
    with open(os.path.join(args.out, "gluon_attention_bwd.json"), "w") as f:
        json.dump({**meta, "rows": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
