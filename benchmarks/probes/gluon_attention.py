"""Issue 36: does Triton 3.6's Gluon (its lower-level language: explicit layouts, shared memory,
mbarriers, TMA and asynchronous warpgroup MMAs) reach further toward cuDNN's forward than the
tl-level kernel? A FlashAttention forward for Hopper written in Gluon (the project's kernel,
kernels/attention_gluon.py, which minitriton also runs), in these schedules:

- "plain": one K/V ring of STAGES slots filled by TMA, each key tile's S = Q K^T and O += P V
  issued as asynchronous wgmma and waited for at once;
- "overlap": FlashAttention-3's intra-warpgroup overlap in its order: a step issues the next
  tile's S and then this tile's P V, and runs the next tile's softmax while P V is on the
  tensor cores;
- "ws", "ws-overlap": the same two schedules warp-specialized (two consumer warp groups of
  64 query rows, a loader warp); "ws-pingpong", "ws-overlap-pingpong": with the consumers'
  MMAs issued in turn (FlashAttention-3's ping-pong; the last is its whole consumer loop);
  "ws-overlap-pingpong-persistent": that loop in one program per SM, each taking the next
  query tile nobody has taken (an atomic count) until none is left.

Contiguous (batch, heads, seq, d) fp16/bf16, seq a multiple of both blocks; causal (--causal):
the key tiles below the diagonal unmasked, those on it masked, the longest query rows started
first.

    python benchmarks/probes/gluon_attention.py [--shapes 4x32x4096x128,...] [--causal]
                                                [--tiles plain:128x64x8x2,...] [--out DIR]
        on a Hopper GPU: checks each schedule against SDPA, then times it against cuDNN
        (SDPA) and the project's TMA forward in the same run; writes DIR/gluon_attention.json
    python benchmarks/probes/gluon_attention.py --compile-only [--triton DIR]
        anywhere: compiles every schedule and tile for sm_90 with Triton's wheel (no GPU) and
        prints registers, spilled bytes and shared memory (cuobjdump)
"""
import argparse
import json
import os
import sys
from pathlib import Path

# (BLOCK_M, BLOCK_N, warps, stages); the overlap schedule needs 3 stages or more
TILES = [(128, 128, 8, 2), (128, 64, 8, 2), (128, 64, 8, 3), (128, 128, 8, 3), (128, 64, 4, 3),
         (128, 128, 4, 2)]
# "ws", "ws-overlap", "ws-pingpong", "ws-overlap-pingpong": the warp-specialized kernel (two
# consumer warp groups of 4 warps, a loader warp) in either schedule, with or without the
# consumers' MMAs in turn, and the last persistent
WS_TILES = [(128, 64, 4, 2), (128, 64, 4, 3), (128, 128, 4, 2)]
SCHEDULES = ("plain", "overlap", "ws", "ws-overlap", "ws-pingpong", "ws-overlap-pingpong",
             "ws-overlap-pingpong-persistent")


def _overlap(schedule):
    return "overlap" in schedule


def _variants():
    """(schedule, tiles) pairs: the overlap schedule refills a slot a step late, so it needs
    3 stages or more."""
    return ([(s, t) for s in ("plain", "overlap") for t in TILES
             if s == "plain" or t[3] >= 3]
            + [(s, t) for s in SCHEDULES[2:] for t in WS_TILES])


def _parse_tiles(text):
    """--tiles "plain:128x64x8x2,overlap:128x128x8x3" -> [(schedule, (bm, bn, warps,
    stages)), ...]."""
    out = []
    for item in text.split(","):
        schedule, _, tile = item.partition(":")
        if schedule not in SCHEDULES or len(tile.split("x")) != 4:
            raise SystemExit(f"--tiles: {item!r} is not SCHEDULE:BMxBNxWARPSxSTAGES with "
                             f"SCHEDULE one of {', '.join(SCHEDULES)}")
        out.append((schedule, tuple(map(int, tile.split("x")))))
    return out


def _tiles(args):
    """--tiles's variants, else every one the schedules allow."""
    return (args.tiles and _parse_tiles(args.tiles)) or _variants()


def _triton_path(argv):
    """--triton DIR (a `pip install --target DIR triton==3.6.0`) goes first on sys.path."""
    if "--triton" in argv:
        sys.path.insert(0, argv[argv.index("--triton") + 1])


_triton_path(sys.argv)
# the kernel is the project's, compiled by real Triton's Gluon (also without a GPU, in
# --compile-only): the backend named before tritonlab is imported
os.environ.setdefault("TRITONLAB_BACKEND", "triton")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
import triton  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from tritonlab.kernels import attention_gluon as fg  # noqa: E402


def _layout(block, dtype):
    return gl.NVMMASharedLayout.get_default_for(block, dtype)


def gluon_forward(q, k, v, tiles, schedule="plain", scale=None, causal=False):
    """(O, L) of attention on contiguous (batch, heads, seq, d) q, k, v by the project's Gluon
    kernel (kernels/attention_gluon.py) in `schedule`."""
    import torch

    bm, bn, warps, stages = tiles
    b, h, n, d = q.shape
    assert n % bm == 0 and n % bn == 0, "the probe takes whole tiles only"
    assert not (causal and bm % bn), "causal: BLOCK_N | BLOCK_M"
    o = torch.empty_like(q)
    lse = torch.empty(b, h, n, device=q.device, dtype=torch.float32)
    scale = d ** -0.5 if scale is None else scale
    return fg.forward(q, k, v, o, lse, causal, scale, tiles,
                      overlap=_overlap(schedule), ws=schedule.startswith("ws"),
                      pingpong="pingpong" in schedule, persistent="persistent" in schedule)


def tensordesc(dtype_name, block):
    """The type string of a Gluon tensor descriptor argument (its default shared layout)."""
    gdt = {"fp16": gl.float16, "bf16": gl.bfloat16, "fp32": gl.float32}[dtype_name]
    return f"tensordesc<{dtype_name}[{block[0]}, {block[1]}],{_layout(block, gdt)!r}>"


def compiled_resources(kernel, sig, consts, divisible, warps):
    """(registers, spilled bytes, shared bytes) of Gluon `kernel` compiled for sm_90 by
    Triton's wheel, no GPU: `sig` the arguments' types, `consts` the constexprs, `divisible`
    the arguments known multiples of 16 (read as make compile-check reads them)."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from compile_check import _resources

    cuobjdump = str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump")
    names = kernel.arg_names
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in divisible}
    src = GluonASTSource(kernel, sig, consts, attrs)
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    r = _resources(compiled, cuobjdump)
    return r["registers"], r["stack"], r["shared"]


def compiled_row(label, kernel, sig, consts, divisible, warps):
    """(label, registers, spilled bytes, shared bytes, None), or the compiler's error last."""
    try:
        return (label, *compiled_resources(kernel, sig, consts, divisible, warps), None)
    except Exception as e:  # noqa: BLE001 - the compiler's error is the finding
        return (label, None, None, None, f"{type(e).__name__}: {str(e).strip()[-2000:]}")


def print_rows(rows, width):
    """compile_only's rows, one a line; 1 where any failed to compile, else 0."""
    for label, regs, stack, shared, err in rows:
        print(f"{label:<{width}} " + (err or f"{regs} registers, {stack} B spilled, "
                                             f"{shared} B shared"))
    return 1 if any(err for *_, err in rows) else 0


def compile_only(dtype_name="fp16", head_dims=(64, 128), variants=None, causal=False):
    """Each schedule and tile compiled for sm_90 by Triton's wheel, no GPU: rows of (label,
    registers, spilled bytes, shared bytes or the compiler's error)."""
    rows = []
    for d in head_dims:
        for schedule, (bm, bn, warps, stages) in variants or _variants():
            label = f"{schedule} d={d} ({bm}, {bn}, {warps}, {stages})"
            ws = schedule.startswith("ws")
            rows_q = bm // 2 if ws else bm  # the warp-specialized kernel's boxes: a warp group's
            sig = {"q_desc": tensordesc(dtype_name, [rows_q, d]),
                   "k_desc": tensordesc(dtype_name, [bn, d]),
                   "v_desc": tensordesc(dtype_name, [bn, d]),
                   "o_desc": tensordesc(dtype_name, [rows_q, d]),
                   "lse_ptr": "*fp32", "n_ctx": "i32", "qk_scale": "fp32",
                   "STAGES": "constexpr", "OVERLAP": "constexpr", "CAUSAL": "constexpr",
                   "num_warps": "constexpr"}
            consts = {"STAGES": stages, "OVERLAP": _overlap(schedule),
                      "CAUSAL": causal, "num_warps": warps}
            if ws:
                sig.update(counter_ptr="*i32", n_query_tiles="i32", PINGPONG="constexpr",
                           PERSISTENT="constexpr")
                consts.update(PINGPONG="pingpong" in schedule,
                              PERSISTENT="persistent" in schedule)
            kernel = fg.gluon_attn_fwd_ws_kernel if ws else fg.gluon_attn_fwd_kernel
            rows.append(compiled_row(label, kernel, sig, consts, ("lse_ptr", "n_ctx"), warps))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="4x32x4096x128,16x16x16384x64")
    p.add_argument("--dtype", default="fp16", choices=("fp16", "bf16"))
    p.add_argument("--causal", action="store_true", help="causal attention")
    p.add_argument("--tiles", help="only these, e.g. plain:128x64x8x2,overlap:128x128x8x3")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--triton", help="folder of Triton's wheel (--compile-only, no GPU)")
    p.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = p.parse_args(argv)
    if args.compile_only:
        return print_rows(compile_only(args.dtype, variants=_tiles(args), causal=args.causal),
                          34)

    import torch
    import torch.nn.functional as F
    from tritonlab.kernels import attention as fa

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    results = []
    for shape in args.shapes.split(","):
        b, h, n, d = map(int, shape.split("x"))
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtype) for _ in range(3))
        want = F.scaled_dot_product_attention(q, k, v, is_causal=args.causal)
        flops = 4 * b * h * n * n * d // (2 if args.causal else 1)

        def timed(label, fn):
            ms = triton.testing.do_bench(fn, warmup=25, rep=100)
            results.append({"shape": shape, "label": label, "ms": ms,
                            "tflops": flops / ms / 1e9})
            print(f"{shape:<16} {label:<36} {ms:8.3f} ms {flops / ms / 1e9:6.0f} TFLOP/s",
                  flush=True)

        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
            timed("cudnn", lambda: F.scaled_dot_product_attention(q, k, v,
                                                                  is_causal=args.causal))
        timed("ours tma (tuned)", lambda: fa.attention_forward(q, k, v, args.causal,
                                                               impl="tma"))
        for schedule, tiles in _tiles(args):
            label = f"gluon {schedule} {tiles}"
            try:
                o, _ = gluon_forward(q, k, v, tiles, schedule, causal=args.causal)
                err = ((o.float() - want.float()).norm() / want.float().norm()).item()
                if not err < 1e-2:
                    raise AssertionError(f"relative error {err:.2e}")
            except Exception as e:  # noqa: BLE001 - a failing variant is a finding
                results.append({"shape": shape, "label": label, "error": str(e)[-300:]})
                print(f"{shape:<16} {label:<36} failed: {type(e).__name__}: "
                      f"{str(e)[-160:]}", flush=True)
                continue
            timed(label, lambda t=tiles, s=schedule: gluon_forward(q, k, v, t, s,
                                                                   causal=args.causal))
    os.makedirs(args.out, exist_ok=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "triton": triton.__version__}
    name = "gluon_attention_causal.json" if args.causal else "gluon_attention.json"
    with open(os.path.join(args.out, name), "w") as f:
        json.dump({**meta, "rows": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
