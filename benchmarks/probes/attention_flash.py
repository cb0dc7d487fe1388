"""Issue 36: where FlashAttention's forward and backward lose to cuDNN, by variant and tile.

    python benchmarks/probes/attention_flash.py [--rows 0,2] [--bwd-rows 0,2]
                                                [--tutorial DIR] [--out DIR]

Forward: the project's TMA forward per config (attention_forward(..., tiles=)), and a probe
kernel beside it with one change at a time: FOLD (the row maximum taken on the raw scores,
the scale folded into exp2's argument as one FMA), LAZY (the accumulator rescaled only when a
row's maximum grew by more than 2^8: FlashAttention-4's conditional rescaling), WS (the loop
warp-specialized: a producer warp issues the TMA loads), and descriptors over the whole
(batch*heads*seq, d) tensor instead of one per head. Backward: the two kernels' configs one at
a time (the other kernel at its first config), and the one-pass backward per tile with dQ
added by atomics ("atomic") or by one TMA reduction per tile with its tiles read through TMA
("atomic-tma"), and the two kernels reading through TMA ("two-kernel-tma"). cuDNN (SDPA)
and, with --tutorial, Triton's tutorial 06 in the same run. Every variant is checked against
SDPA before it is timed. Prints one table; writes DIR/attention_flash.json.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the speed rows
from _common import triton, tl  # noqa: E402  (the checkout on sys.path)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from attention import SPEED_ROWS, flops, load_tutorial  # noqa: E402
from tritonlab.kernels import attention as fa  # noqa: E402

FWD_TILES = [(128, 64, 4, 3), (128, 64, 4, 2), (128, 128, 8, 2), (128, 128, 8, 3),
             (128, 64, 4, 4), (128, 32, 4, 3), (64, 64, 4, 3), (128, 128, 8, 4)]
DKDV_TILES = [(32, 128, 8, 3), (32, 128, 4, 3), (64, 128, 8, 2), (64, 128, 8, 3),
              (32, 128, 8, 4), (16, 128, 8, 3), (64, 128, 4, 2), (32, 64, 4, 3)]
DQ_TILES = [(128, 32, 8, 3), (128, 32, 4, 3), (128, 64, 8, 2), (128, 64, 8, 3),
            (128, 32, 8, 4), (64, 64, 4, 3), (128, 128, 8, 2), (64, 32, 4, 3)]
# the one-pass backward's dK/dV(+dQ) tiles (BLOCK_N a multiple of BLOCK_M)
ATOMIC_TILES = [(64, 128, 8, 2), (32, 128, 8, 3), (64, 128, 8, 3), (32, 128, 4, 3),
                (64, 64, 4, 2)]
# probe variants: (label, FOLD, LAZY, WS, PIPE). PIPE: the main loop pipelined by hand, the
# scores of key tile j + 1 issued (an asynchronous wgmma on Hopper) before tile j's softmax,
# so that the tensor cores work while the softmax runs (FlashAttention-3's intra-warpgroup
# overlap, written in the source rather than scheduled by the compiler)
FWD_VARIANTS = [("probe+fold", True, False, False, False), ("probe+ws", True, False, True, False),
                ("probe+pipe", True, False, False, True)]
# measured first (H100, 2026-12-05): FOLD 1.02-1.03x the unfolded probe (now ours), LAZY
# 0.73-1.0x; ("probe", False, False, False) and ("probe+lazy", True, True, False) remain
# for --all-variants
MORE_VARIANTS = [("probe", False, False, False, False),
                 ("probe+lazy", True, True, False, False)]


@triton.jit
def _probe_inner(acc, l_i, m_i, q, k_desc, v_desc, row0, offs_m, offs_n, lo, hi, qk_scale,
                 BLOCK_N: tl.constexpr, MASK: tl.constexpr, FOLD: tl.constexpr,
                 LAZY: tl.constexpr, WS: tl.constexpr):
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WS):
        k = k_desc.load([row0 + start_n, 0])
        qk = tl.dot(q, k.T)
        if MASK:
            qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, float("-inf"))
        if FOLD:
            m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        else:
            qk = qk * qk_scale
            m_new = tl.maximum(m_i, tl.max(qk, 1))
        if LAZY:  # rescale only when some row's maximum grew past 2^8 (p <= 256 otherwise)
            if tl.max(m_new - m_i, 0) > 8.0:
                alpha = tl.exp2(m_i - m_new)
                acc = acc * alpha[:, None]
                l_i = l_i * alpha
                m_i = m_new
            p = tl.exp2(qk * qk_scale - m_i[:, None])
            l_i += tl.sum(p, 1)
        else:
            if FOLD:
                p = tl.exp2(qk * qk_scale - m_new[:, None])
            else:
                p = tl.exp2(qk - m_new[:, None])
            alpha = tl.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None]
            m_i = m_new
        v = v_desc.load([row0 + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
    return acc, l_i, m_i


@triton.jit
def _probe_inner_pipe(acc, l_i, m_i, q, k_desc, v_desc, row0, lo, hi, qk_scale,
                      BLOCK_N: tl.constexpr):
    """_probe_inner (FOLD, no mask) over at least one key tile, pipelined by hand."""
    s = tl.dot(q, k_desc.load([row0 + lo, 0]).T)
    for start_n in tl.range(lo + BLOCK_N, hi, BLOCK_N):
        s_next = tl.dot(q, k_desc.load([row0 + start_n, 0]).T)  # in flight during the softmax
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = v_desc.load([row0 + start_n - BLOCK_N, 0])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
        s = s_next
    m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)  # the last tile
    p = tl.exp2(s * qk_scale - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    v = v_desc.load([row0 + hi - BLOCK_N, 0])
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, l_i, m_new


@triton.jit
def probe_fwd_kernel(Q, K, V, O, LSE, n_rows, N, qk_scale, HEAD_DIM: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                     FOLD: tl.constexpr, LAZY: tl.constexpr, WS: tl.constexpr,
                     PIPE: tl.constexpr):
    # contiguous (batch*heads*N, HEAD_DIM) rows, N a multiple of BLOCK_M: one descriptor each
    pid_m = tl.program_id(0)
    if CAUSAL:  # the longest rows first
        pid_m = tl.num_programs(0) - 1 - pid_m
    row0 = tl.program_id(1) * N
    q_desc = tl.make_tensor_descriptor(Q, [n_rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(K, [n_rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V, [n_rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(O, [n_rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = q_desc.load([row0 + start_m, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    hi = start_m if CAUSAL else N
    if PIPE:
        if hi > 0:  # causal: the first query tile has no key tile below the diagonal
            acc, l_i, m_i = _probe_inner_pipe(acc, l_i, m_i, q, k_desc, v_desc, row0, 0, hi,
                                              qk_scale, BLOCK_N)
    else:
        acc, l_i, m_i = _probe_inner(acc, l_i, m_i, q, k_desc, v_desc, row0, offs_m, offs_n, 0,
                                     hi, qk_scale, BLOCK_N, False, FOLD, LAZY, WS)
    if CAUSAL:
        acc, l_i, m_i = _probe_inner(acc, l_i, m_i, q, k_desc, v_desc, row0, offs_m, offs_n,
                                     start_m, start_m + BLOCK_M, qk_scale, BLOCK_N, True, FOLD,
                                     LAZY, False)
    o_desc.store([row0 + start_m, 0], (acc / l_i[:, None]).to(o_desc.dtype))
    tl.store(LSE + row0 + offs_m, (m_i + tl.log2(l_i)) * 0.6931471805599453)


def _scratch(size, alignment, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda" if torch.cuda.is_available()
                       else "cpu")


def probe_forward(q, k, v, causal, tiles, fold, lazy, ws, pipe=False):
    bm, bn, warps, stages = tiles
    b, h, n, d = q.shape
    o = torch.empty_like(q)
    lse = torch.empty(b, h, n, device=q.device, dtype=torch.float32)
    triton.set_allocator(_scratch)
    probe_fwd_kernel[(n // bm, b * h)](q, k, v, o, lse, b * h * n, n, d ** -0.5 * fa.LOG2E,
                                       HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
                                       FOLD=fold, LAZY=lazy, WS=ws, PIPE=pipe,
                                       num_warps=warps, num_stages=stages)
    return o


def _bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def _rel(a, b):
    return ((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1.0)).item()


def timed(label, fn, want, tol, results, row, work):
    """Check fn() against want (O or (dQ, dK, dV)), time it, record a row; a failure is a row
    too."""
    try:
        got = fn()
        err = max(_rel(a, b) for a, b in zip(got, want)) if isinstance(got, tuple) \
            else _rel(got, want)
        if not err <= tol:  # NaN fails too
            raise AssertionError(f"max rel err {err:.2e} > {tol}")
        ms = _bench(fn)
        tf = work / ms / 1e9
        results.append({"row": row, "label": label, "ms": ms, "tflops": tf, "err": err})
        print(f"  {label:<44} {ms:8.3f} ms {tf:6.0f} TFLOP/s  err {err:.1e}", flush=True)
    except Exception as e:  # noqa: BLE001 - a variant may not compile, fit or agree
        results.append({"row": row, "label": label, "error": f"{type(e).__name__}: {e}"[:300]})
        print(f"  {label:<44} failed: {type(e).__name__}: {str(e)[:160]}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default="0,2")
    p.add_argument("--bwd-rows", default="0,2")
    p.add_argument("--tutorial", help="folder of Triton's tutorials (06-fused-attention.py)")
    p.add_argument("--all-variants", action="store_true", help="also the probe unfolded, lazy")
    p.add_argument("--out", default="tritonlab-out/attention-flash")
    # run.py calls main() with its own argv: the defaults then
    args = p.parse_args(argv if argv is not None or __name__ == "__main__" else [])
    from torch.nn.attention import SDPBackend, sdpa_kernel
    tut = load_tutorial(args.tutorial) if args.tutorial else None
    results = []
    rows = sorted({int(r) for r in args.rows.split(",") if r} |
                  {int(r) for r in args.bwd_rows.split(",") if r})
    for i in rows:
        label, batch, heads, n, d, dtype, causal = SPEED_ROWS[i]
        dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v, do = (torch.randn(batch, heads, n, d, device="cuda", dtype=dt, generator=g)
                       for _ in range(4))
        ref = [t.detach().requires_grad_() for t in (q, k, v)]
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            o_ref = F.scaled_dot_product_attention(*ref, is_causal=causal)
            grads_ref = torch.autograd.grad(o_ref, ref, do)
        tol = 3e-2 if dt == torch.bfloat16 else 1e-2
        print(f"== row {i}: {label}", flush=True)
        wf, wb = flops(batch, heads, n, d, causal, "fwd"), flops(batch, heads, n, d, causal, "bwd")
        if i in {int(r) for r in args.rows.split(",") if r}:
            def cudnn_fwd():
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            timed("fwd cudnn", cudnn_fwd, o_ref, tol, results, i, wf)
            timed("fwd ours (autotuned)", lambda: fa.attention_forward(q, k, v, causal)[0],
                  o_ref, tol, results, i, wf)
            for t in FWD_TILES:
                timed(f"fwd ours-tma {t}",
                      lambda t=t: fa.attention_forward(q, k, v, causal, tiles=t, impl="tma")[0],
                      o_ref, tol, results, i, wf)
            for name, fold, lazy, ws, pipe in FWD_VARIANTS + (
                    MORE_VARIANTS if args.all_variants else []):
                if ws and causal:
                    continue
                for t in FWD_TILES:
                    timed(f"fwd {name} {t}",
                          lambda t=t, f=fold, z=lazy, w=ws, pp=pipe: probe_forward(
                              q, k, v, causal, t, f, z, w, pp),
                          o_ref, tol, results, i, wf)
            if tut is not None and dt == torch.float16:
                for ws in ([True, False] if not causal else [False]):
                    timed(f"fwd tutorial06 ws={ws} (autotuned)",
                          lambda w=ws: tut.attention(q, k, v, causal, d ** -0.5, w),
                          o_ref, tol, results, i, wf)
                    print(f"    tutorial's pick: {tut._attn_fwd.best_config}", flush=True)
        if i in {int(r) for r in args.bwd_rows.split(",") if r}:
            o, lse = fa.attention_forward(q, k, v, causal)

            def cudnn_bwd():
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    out = F.scaled_dot_product_attention(*ref, is_causal=causal)
                return torch.autograd.grad(out, ref, do)
            # cuDNN's backward alone: its forward+backward minus its forward
            timed("f+b cudnn", cudnn_bwd, grads_ref, tol, results, i, wf + wb)
            timed("bwd ours (autotuned)",
                  lambda: fa.attention_backward(do, q, k, v, o, lse, causal), grads_ref, tol,
                  results, i, wb)
            for t in DKDV_TILES:
                timed(f"bwd dkdv {t} dq {DQ_TILES[0]}",
                      lambda t=t: fa.attention_backward(do, q, k, v, o, lse, causal,
                                                        tiles={"dkdv": t, "dq": DQ_TILES[0]},
                                                        impl="two-kernel"),
                      grads_ref, tol, results, i, wb)
            for impl in ("atomic", "atomic-tma"):  # one pass: dQ by atomics, through TMA
                for t in ATOMIC_TILES:
                    timed(f"bwd {impl} {t}",
                          lambda t=t, m=impl: fa.attention_backward(do, q, k, v, o, lse, causal,
                                                                    tiles={"dkdv": t}, impl=m),
                          grads_ref, tol, results, i, wb)
            for t in DKDV_TILES[:4]:  # the two kernels reading their tiles through TMA
                timed(f"bwd two-kernel-tma dkdv {t} dq {DQ_TILES[0]}",
                      lambda t=t: fa.attention_backward(do, q, k, v, o, lse, causal,
                                                        tiles={"dkdv": t, "dq": DQ_TILES[0]},
                                                        impl="two-kernel-tma"),
                      grads_ref, tol, results, i, wb)
            for t in DQ_TILES[1:]:
                timed(f"bwd dkdv {DKDV_TILES[0]} dq {t}",
                      lambda t=t: fa.attention_backward(do, q, k, v, o, lse, causal,
                                                        tiles={"dkdv": DKDV_TILES[0], "dq": t},
                                                        impl="two-kernel"),
                      grads_ref, tol, results, i, wb)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "triton": triton.__version__}
    (out / "attention_flash.json").write_text(json.dumps({**meta, "rows": results}, indent=1))
    print(f"\n{meta}")
    for i in rows:
        ok = [r for r in results if r["row"] == i and "ms" in r]
        for kind in ("fwd", "bwd"):
            best = sorted((r for r in ok if r["label"].startswith(kind + " ")),
                          key=lambda r: r["ms"])[:4]
            for r in best:
                print(f"row {i} best {r['label']:<44} {r['ms']:8.3f} ms {r['tflops']:5.0f}")


if __name__ == "__main__":
    main()
