"""Probe: softmax on long rows read once (variant="exchange": a row's programs keep their
pieces in registers and combine their maxima and sums through memory, kernels/_exchange.py)
over block and warps, against the online kernel (the default past 16384 columns: two passes,
the second from L2), Liger-Kernel where it imports and torch.softmax, at 4096x16384,
2048x32768, 1024x65536, 512x131072 and 256x262144 in bf16 and fp32, and the one-row kernel
(whole rows in registers) up to 65536 columns; each checked against a
float64 softmax first, then timed by CUDA-graph replays (the GPU's time) and by do_bench
(L2 flushed before each call).
Decides: docs/decisions.md#softmax-exchange (which rows take the exchange, its block and
warps)."""
from _common import do_bench, dtype_name, report, softmax_check, torch, triton, variant
from tritonlab.kernels import _exchange
from tritonlab.kernels import softmax as sm

try:
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
except ImportError:
    LigerSoftmaxFunction = None


def exchange(x, y, block, warps, kernel=None):
    """A launch of the exchange kernel (`kernel`: a variant of it with the same signature) over
    x into y in pieces of `block` columns."""
    kernel = kernel or sm.softmax_exchange_kernel
    n_rows, n_cols = x.shape
    pieces = triton.cdiv(n_cols, block)
    stats = torch.empty(n_rows, pieces, 2, device=x.device)
    sync = torch.zeros(2 * n_rows, device=x.device, dtype=torch.int32)
    return lambda: kernel[(n_rows * pieces,)](
        x, y, stats, sync, n_rows, n_cols, n_cols, pieces, BLOCK_SIZE=block,
        PIECES=triton.next_power_of_2(pieces), ACC=sm.tl.float32, num_warps=warps)


def whole_row(x, y, warps):
    n_rows, n_cols = x.shape
    return lambda: sm.softmax_kernel[(n_rows,)](x, y, n_cols, n_cols, n_cols,
                                                BLOCK_SIZE=triton.next_power_of_2(n_cols),
                                                ACC=sm.tl.float32, num_warps=warps)


def main():
    for M, N in ((1024, 65536), (256, 262144), (2048, 32768), (512, 131072), (4096, 16384)):
        for dtype in (torch.bfloat16, torch.float32):
            x = torch.randn(M, N, device="cuda", dtype=dtype) * 3
            y = torch.empty_like(x)
            check = softmax_check(x, y)
            impls = [("default (sm.softmax)", lambda: sm.softmax(x), lambda: check(sm.softmax(x))),
                     ("torch.softmax", lambda: torch.softmax(x, -1), None)]
            if LigerSoftmaxFunction is not None:
                impls.append(("Liger", lambda: LigerSoftmaxFunction.apply(x), None))
            if N <= 65536:  # the whole row in one program's registers (Liger's way to 65536)
                for warps in (16, 32):
                    impls.append((f"row {N} w{warps}", whole_row(x, y, warps), check))
            for block in (4096, 8192, 16384, 32768):
                for warps in (4, 8, 16, 32):
                    pieces = triton.cdiv(N, block)
                    if block > N or pieces > _exchange.max_pieces(x) or pieces < 2:
                        continue
                    impls.append((f"exchange {block} w{warps}", exchange(x, y, block, warps),
                                  check))
            graph, cold = [], []
            for label, fn, chk in impls:
                row = variant(label, fn, chk)
                graph.append(row)
                if row[0] != float("inf"):
                    cold.append((do_bench(fn) * 1e3, label, row[2]))
            name = f"{M}x{N} {dtype_name(dtype)}"
            nbytes = 2 * M * N * x.element_size()
            report("softmax graph", name, graph, nbytes, best=12)
            report("softmax cold", name, cold, nbytes, best=5)


if __name__ == "__main__":
    main()
