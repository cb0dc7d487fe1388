"""Probe: the exchange forwards (softmax's and RMSNorm's: a wide row cut into pieces, one
program each, that keep their piece in registers and meet in memory) with split meetings:
groups of pieces walking rows, each piece's next row loaded while it waits for the others
(`SPLIT`, `SoftmaxTuning.exchange_per_sm`, `RMSNormTuning.exchange_per_sm`), over block, warps
and programs per SM, against today's default, the online softmax, the plain exchange (a
program per piece of every row), Liger-Kernel where it takes the rows (at most 65536) and a
copy of the same bytes (read MN, write MN); at 1024x65536 and 256x262144 in bf16 and fp32
(`--shapes` for others). Every variant is checked against float64 first, then timed by
CUDA-graph replays and by the median of three do_bench medians (L2 flushed), interleaved.
Decides: docs/decisions.md#softmax-exchange (exchange_items, exchange_per_sm, exchange_block,
exchange_warps of both ops)."""
import argparse
import os

from _common import (dtype_name, interleaved, save_rows, softmax_check, tl, torch, triton)
from tritonlab.kernels import _exchange
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import softmax as sm

try:
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
except ImportError:
    LigerRMSNormFunction = LigerSoftmaxFunction = None

EPS = 1e-6


def sms():
    return torch.cuda.get_device_properties(0).multi_processor_count


def exchange(op, x, out, g, block, warps, per_sm):
    """A launch of op's exchange forward over x in pieces of `block` columns: per_sm 0 a
    program per piece of every row, else SPLIT with about per_sm programs per SM; None where
    the row has fewer than 2 pieces or more than the GPU holds at once."""
    n_rows, n_cols = x.shape
    pieces = triton.cdiv(n_cols, block)
    if pieces < 2 or pieces > _exchange.max_pieces(x):
        return None
    groups = max(1, min(n_rows, per_sm * sms() // pieces)) if per_sm else n_rows
    kw = dict(BLOCK_SIZE=block, PIECES=triton.next_power_of_2(pieces), ACC=tl.float32,
              num_warps=warps, **({"SPLIT": True} if per_sm else {}))
    sync = torch.zeros(2 * n_rows, device=x.device, dtype=torch.int32)
    grid = (groups * pieces,)
    if op == "softmax":
        stats = torch.empty(n_rows, pieces, 2, device=x.device)
        return lambda: sm.softmax_exchange_kernel[grid](x, out, stats, sync, n_rows, n_cols,
                                                        n_cols, pieces, **kw)
    stats = torch.empty(n_rows, pieces, device=x.device)
    rstd = torch.empty(n_rows, device=x.device)
    return lambda: rn.rmsnorm_fwd_exchange_kernel[grid](x, g, out, rstd, n_cols, EPS, stats, sync,
                                                        n_rows, pieces, **kw)


def same_bytes_copy(x):
    """A copy of x's bytes (read MN, write MN): the ceiling of a forward that reads x once."""
    src, dst = torch.empty_like(x), torch.empty_like(x)
    return lambda: dst.copy_(src)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="1024x65536,256x262144")
    parser.add_argument("--ops", default="softmax,rmsnorm")
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = parser.parse_args(argv if argv is not None else [])
    results, summary = [], []
    for op in args.ops.split(","):
        for M, N in (tuple(map(int, s.split("x"))) for s in args.shapes.split(",")):
            for dtype in (torch.bfloat16, torch.float32):
                x = torch.randn(M, N, device="cuda", dtype=dtype) * (3 if op == "softmax" else 1)
                g = torch.randn(N, device="cuda", dtype=dtype)
                out = torch.empty_like(x)
                if op == "softmax":
                    check = softmax_check(x, out)
                    impls = [("default", lambda: sm.softmax(x), lambda: check(sm.softmax(x))),
                             ("online", lambda: sm.softmax(x, variant="online"),
                              lambda: check(sm.softmax(x, variant="online")))]
                    if LigerSoftmaxFunction is not None and N <= 65536:
                        impls.append(("Liger", lambda: LigerSoftmaxFunction.apply(x), None))
                else:
                    want = torch.nn.functional.rms_norm(x.double(), (N,), g.double(), EPS)
                    tol = 1e-5 if dtype == torch.float32 else 2e-2

                    def check(y=None):
                        err = ((out if y is None else y).double() - want).abs().max().item()
                        err /= want.abs().max().item()
                        assert err < tol, err
                        return f"{err:.1e}"
                    impls = [("default", lambda: rn.rmsnorm(x, g),
                              lambda: check(rn.rmsnorm(x, g)))]
                    if LigerRMSNormFunction is not None and N <= 65536:
                        impls.append(("Liger", lambda: LigerRMSNormFunction.apply(
                            x, g, EPS, 0.0, "llama", False), None))
                impls.append(("copy", same_bytes_copy(x), None))
                configs = [(8192, 8, 0)] + [(b, w, p) for b, w in ((4096, 4), (8192, 4),
                                                                  (8192, 8), (16384, 8),
                                                                  (16384, 16))
                                            for p in (1, 2, 4)]
                for block, warps, per_sm in configs:
                    fn = exchange(op, x, out, g, block, warps, per_sm)
                    if fn is not None:
                        label = (f"split {block} w{warps} {per_sm}/SM" if per_sm
                                 else f"exchange {block} w{warps}")
                        impls.append((label, fn, check))
                rows = interleaved(impls)
                copy = next(r for r in rows if r[0] == "copy")
                name = f"{op} {M}x{N} {dtype_name(dtype)}"
                rows.sort(key=lambda r: r[4])
                print(f"== {name}: label, graph us, do_bench us, of the copy graph / do_bench",
                      flush=True)
                for label, _, err, graph, cold in rows:
                    print(f"  {label:<24} {graph:8.1f} {cold:8.1f}  {copy[3] / graph:5.2f} "
                          f"{copy[4] / cold:5.2f}  {err}", flush=True)
                    results.append({"op": op, "shape": f"{M}x{N}", "dtype": dtype_name(dtype),
                                    "label": label, "graph_us": graph, "do_bench_us": cold,
                                    "copy_graph_us": copy[3], "copy_do_bench_us": copy[4]})
                best = min((r for r in rows if r[0].startswith("split")), key=lambda r: r[4],
                           default=None)
                default = next(r for r in rows if r[0] == "default")
                if best is not None:
                    summary.append(f"{name:<28} default {copy[4] / default[4]:.2f} "
                                   f"({copy[3] / default[3]:.2f})  best split {best[0]} "
                                   f"{copy[4] / best[4]:.2f} ({copy[3] / best[3]:.2f})")
                torch.cuda.empty_cache()
    save_rows(args.out, "exchange_split.json", results)
    print("\nof the same-bytes copy, do_bench (graph):")
    print("\n".join(summary))


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
