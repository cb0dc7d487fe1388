"""Probe: softmax's and RMSNorm's forwards with each row (or each program's piece of it)
resident in shared memory (Gluon).

Issue 37's wide rows are short of a same-bytes copy on an H100 for both forwards (session 47:
bf16 1024x65536 0.87-0.88, 256x262144 0.74-0.78; fp32 0.87-0.89, do_bench): the online softmax
and the chunked RMSNorm forward read each row twice (the second time from an L2 that the rows
in flight overflow), and the exchange kernels, which read it once, hold nothing in flight while
a row's pieces meet. `kernels/rows_gluon.py` keeps a row, or a program's piece of a row (its
pieces meeting in memory), in one SM's shared memory: read from DRAM once by TMA into a ring of
chunk slots whose spare slots already hold the next rows' chunks (in flight through the
meeting), y written by TMA store (docs/decisions.md#rows-resident).

At 1024x65536 and 256x262144, bf16 and fp32, each forward against today's plan and a copy of
the same 2·MN bytes, over pieces of 128 and 64 KiB (whole rows where shorter), rings of one
piece and as many slots as fit, boxes of 16 KiB (and 8 KiB, 4 warps, two programs per SM for
whole rows): checked against today's output within rounding, CUDA-graph replays and do_bench
(L2 flushed), interleaved, three repeats. Other MxN on the command line (2048x32768 and
4096x16384: rows that fit whole in both dtypes).
Decides: whether the plans take the row-resident forwards, for which rows, with which pieces,
boxes, slots and warps (docs/decisions.md#rows-resident).

    python benchmarks/probes/rows_resident.py [MxN ...]      ($OUT/rows_resident.json)
"""
import os

from _common import (against_same_bytes, dtype_name, rms_inputs, save_rows, shapes_from_argv,
                     torch)
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import rows_gluon as rg
from tritonlab.kernels import softmax as sm


SHAPES = ((1024, 65536), (256, 262144))  # kernels.py's rows short of the copy
PIECE_BYTES = (131072, 65536)  # a program's piece of a row: as much of it as it holds


def configs(x):
    """(pieces a row, box rows, slots, warps, programs per SM) that rows_gluon takes for x:
    rows cut into pieces of 128 and 64 KiB (a whole row where it is no longer), boxes of 16
    KiB, a ring of one piece and the largest ring that fits, 8 warps; for whole rows also
    boxes of 8 KiB with 4 and 8 warps, and two programs per SM where two rings of a row fit."""
    item, out = x.element_size(), []
    row_bytes = x.shape[-1] * item
    for piece_bytes in sorted({min(b, row_bytes) for b in PIECE_BYTES}, reverse=True):
        pieces = row_bytes // piece_bytes
        for box_bytes in (16384, 8192) if pieces == 1 else (16384,):
            box = box_bytes // (rg.BOX_COLS * item)
            chunks = piece_bytes // box_bytes
            for slots in sorted({chunks, rg.SHARED_LIMIT // box_bytes - 2}):
                if rg.rows_problem(x, box, slots, pieces) is None:
                    out += [(pieces, box, slots, w, 1)
                            for w in ((4, 8) if box_bytes == 8192 else (8,))]
            if pieces == 1 and 2 * rg.shared_bytes(box, chunks, item) <= rg.SHARED_LIMIT:
                out.append((1, box, chunks, 8, 2))
    return out


def variants(op, x, g):
    """(label, fn, check) rows: today's forward, then rows_gluon's configurations."""
    y, rstd = torch.empty_like(x), torch.empty(x.shape[0], device=x.device)
    if op == "softmax":
        today = sm._Launch("softmax", -1, None, None, None, x)
        want = torch.empty_like(x)
        today.forward(x, want)
        rows = [(f"today ({today.kernel.kernel.__name__})", lambda: today.forward(x, y), None)]
    else:
        plan = rn._Plan(x, g)
        want, want_rstd = plan.forward(x, g, 1e-6)
        rows = [(f"today ({plan.fwd.kernel.__name__})", lambda: plan.forward(x, g, 1e-6), None)]
    tol = 2e-2 if x.dtype == torch.bfloat16 else 1e-5

    def check():
        torch.testing.assert_close(y.float(), want.float(), rtol=tol, atol=tol * 1e-2)
        if op == "rmsnorm":
            torch.testing.assert_close(rstd, want_rstd, rtol=1e-5, atol=0)
        same = torch.equal(y, want)
        y.fill_(float("nan"))
        return "same bits" if same else "within rounding"
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for pieces, box, slots, warps, per_sm in configs(x):
        kw = dict(box_rows=box, slots=slots, warps=warps, pieces=pieces,
                  programs=per_sm * sms)
        if op == "rmsnorm":
            kw.update(g=g, rstd=rstd, eps=1e-6)
        rows.append((f"resident {pieces} piece{'s' if pieces > 1 else ''} {box}x256 ring "
                     f"{slots} w{warps}" + (f" {per_sm}/SM" if per_sm > 1 else ""),
                     lambda kw=kw: rg.forward(op, x, y, **kw), check))
    return rows


def main(shapes=SHAPES):
    rows = []
    for M, N in shapes:
        for dtype in (torch.bfloat16, torch.float32):
            x, g, _ = rms_inputs(M, N, dtype)
            if not configs(x):
                print(f"{M}x{N} {dtype_name(dtype)}: a row does not fit in shared memory")
                continue
            for op in rg.OPS:
                rows += against_same_bytes(x, 2, f"{op} {M}x{N} {dtype_name(dtype)}",
                                           variants(op, x, g), op=op, shape=f"{M}x{N}",
                                           dtype=dtype_name(dtype))
    save_rows(os.environ.get("OUT", "out"), "rows_resident.json", rows)


if __name__ == "__main__":  # rows_resident.py [MxN ...]: these shapes only
    main(shapes_from_argv(SHAPES))
