"""Probe: softmax on long rows read once (variant="exchange": a row's programs keep their
pieces in registers and combine their maxima and sums through memory, kernels/_exchange.py)
over block and warps, against the online kernel (the default past 16384 columns: two passes,
the second from L2), Liger-Kernel where it imports and torch.softmax, at 4096x16384,
2048x32768, 1024x65536, 512x131072 and 256x262144 in bf16 and fp32, and the one-row kernel
(whole rows in registers) up to 65536 columns, and a copy of the same bytes; each checked
against a float64 softmax first, then timed by CUDA-graph replays (the GPU's time) and by the
median of three do_bench medians (L2 flushed before each call), interleaved. `--shapes`,
`--configs`, `--div` (the write's division per element, as before 2026-12-07) and `--hints`
(its load's evict_first and store's .cs off) narrow or widen it.
Decides: docs/decisions.md#softmax-exchange (which rows take the exchange, its block and
warps)."""
import argparse
import os
import sys

from _common import ROOT, against_copy, dtype_name, save_rows, softmax_check, torch, triton
from tritonlab.kernels import _exchange
from tritonlab.kernels import softmax as sm

sys.path.insert(0, str(ROOT / "benchmarks"))
from kernels import same_bytes_copy  # noqa: E402 - benchmarks/kernels.py's ceiling

try:
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
except ImportError:
    LigerSoftmaxFunction = None


def exchange(x, y, block, warps, **kw):
    """A launch of the exchange kernel over x into y in pieces of `block` columns (`kw`: its
    other constexprs, e.g. DIV=True, a division per element)."""
    n_rows, n_cols = x.shape
    pieces = triton.cdiv(n_cols, block)
    stats = torch.empty(n_rows, pieces, 2, device=x.device)
    sync = torch.zeros(2 * n_rows, device=x.device, dtype=torch.int32)
    return lambda: sm.softmax_exchange_kernel[(n_rows * pieces,)](
        x, y, stats, sync, n_rows, n_cols, n_cols, pieces, n_rows, BLOCK_SIZE=block,
        PIECES=triton.next_power_of_2(pieces), ACC=sm.tl.float32, num_warps=warps, **kw)


# the exchange's cache hints turned off (--hints, benchmarks/probes/flush_state.py)
HINTS = {"plain": {"EVICT": "", "STORE": ""}, "plain load": {"EVICT": ""},
         "plain store": {"STORE": ""}}


def whole_row(x, y, warps):
    n_rows, n_cols = x.shape
    return lambda: sm.softmax_kernel[(n_rows,)](x, y, n_cols, n_cols, n_cols,
                                                BLOCK_SIZE=triton.next_power_of_2(n_cols),
                                                ACC=sm.tl.float32, num_warps=warps)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="1024x65536,256x262144,2048x32768,512x131072,"
                        "4096x16384", help="MxN,... (default: %(default)s)")
    parser.add_argument("--configs", default="", help="block:warps,... of the exchange (default: "
                        "every block 4096-32768 with 4-32 warps)")
    parser.add_argument("--div", action="store_true", help="also the exchange with a division "
                        "per element (DIV=True, before 2026-12-07) at each config")
    parser.add_argument("--hints", action="store_true", help="also the exchange with plain loads "
                        "and stores, and with each of its two cache hints alone, at each config")
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = parser.parse_args(argv or [])
    configs = ([tuple(map(int, c.split(":"))) for c in args.configs.split(",")] if args.configs
               else [(b, w) for b in (4096, 8192, 16384, 32768) for w in (4, 8, 16, 32)])
    results = []
    for M, N in (tuple(map(int, s.split("x"))) for s in args.shapes.split(",")):
        for dtype in (torch.bfloat16, torch.float32):
            x = torch.randn(M, N, device="cuda", dtype=dtype) * 3
            y = torch.empty_like(x)
            check = softmax_check(x, y)
            impls = [("default (sm.softmax)", lambda: sm.softmax(x), lambda: check(sm.softmax(x))),
                     ("online", lambda: sm.softmax(x, variant="online"),
                      lambda: check(sm.softmax(x, variant="online"))),
                     ("torch.softmax", lambda: torch.softmax(x, -1), None),
                     ("copy", same_bytes_copy(x, 2 * x.numel() * x.element_size()), None)]
            if LigerSoftmaxFunction is not None and N <= 65536:
                impls.append(("Liger", lambda: LigerSoftmaxFunction.apply(x), None))
            if N <= 65536 and not args.configs:  # the whole row in one program's registers
                for warps in (16, 32):
                    impls.append((f"row {N} w{warps}", whole_row(x, y, warps), check))
            for block, warps in configs:
                pieces = triton.cdiv(N, block)
                if block > N or pieces > _exchange.max_pieces(x) or pieces < 2:
                    continue
                impls.append((f"exchange {block} w{warps}", exchange(x, y, block, warps), check))
                if args.div:
                    impls.append((f"exchange {block} w{warps} div",
                                  exchange(x, y, block, warps, DIV=True), check))
                if args.hints:  # the load's evict_first and the store's .cs, off in turn
                    for tag, kw in HINTS.items():
                        impls.append((f"exchange {block} w{warps} {tag}",
                                      exchange(x, y, block, warps, **kw), check))
            results += against_copy(f"softmax {M}x{N} {dtype_name(dtype)}", impls,
                                    shape=f"{M}x{N}", dtype=dtype_name(dtype))
            torch.cuda.empty_cache()
    save_rows(args.out, "softmax_exchange.json", results)


if __name__ == "__main__":
    main(sys.argv[1:])
