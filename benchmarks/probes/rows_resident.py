"""Probe: softmax's and RMSNorm's forwards with each row resident in shared memory (Gluon).

Issue 37's bf16 rows of 65536 are 0.87-0.88 of a same-bytes copy on an H100 for both forwards
(the online softmax and the chunked RMSNorm forward read each row twice, the second time from an
L2 that the rows in flight overflow; the exchange kernels read it once but meet in memory per
row). `kernels/rows_gluon.py` keeps a whole row in one SM's shared memory, read from DRAM once
by TMA into a ring of chunk slots whose spare slots already hold the next row's first chunks,
and writes y by TMA store (docs/decisions.md#rows-resident).

At 1024x65536 bf16 (and any MxN given: 2048x32768 and 4096x16384 take fp32 rows as well),
each forward against today's plan and a copy of the same 2·MN bytes, over chunk sizes
(boxes of 8 and 16 KiB), ring sizes (a row exactly, and as many slots as fit), 4 or 8 warps
and one program per SM (two where two rings of a row fit): checked against today's output within rounding, CUDA-graph replays and do_bench (L2
flushed), interleaved, three repeats.
Decides: whether the plans take the row-resident forwards, for which rows, with which boxes,
slots and warps (docs/decisions.md#rows-resident).

    python benchmarks/probes/rows_resident.py [MxN ...]      ($OUT/rows_resident.json)
"""
import os
import sys

from _common import (ROOT, against_copy, dtype_name, rms_inputs, save_rows, shapes_from_argv,
                     torch)
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import rows_gluon as rg
from tritonlab.kernels import softmax as sm

sys.path.insert(0, str(ROOT / "benchmarks"))
from kernels import same_bytes_copy  # noqa: E402 - benchmarks/kernels.py's ceiling

SHAPES = ((1024, 65536),)  # kernels.py's row short of the copy; others on the command line
BOX_BYTES = (8192, 16384)  # a chunk: a box of (box rows, 256) elements
WARPS = (4, 8)


def configs(x):
    """(box rows, slots, warps, programs per SM) that rows_gluon takes for x: per chunk size,
    a ring of one row and the largest ring that fits, each with 4 and 8 warps, one program
    per SM; and a ring of one row at two programs per SM where two fit."""
    out = []
    for box_bytes in BOX_BYTES:
        box = box_bytes // (rg.BOX_COLS * x.element_size())
        chunks = x.shape[-1] // (box * rg.BOX_COLS)
        most = rg.SHARED_LIMIT // (box_bytes) - 2
        for slots in sorted({chunks, most}):
            if rg.rows_problem(x, box, slots) is None:
                out += [(box, slots, w, 1) for w in WARPS]
        if 2 * rg.shared_bytes(box, chunks, x.element_size()) <= rg.SHARED_LIMIT:
            out += [(box, chunks, w, 2) for w in WARPS]
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
    for box, slots, warps, per_sm in configs(x):
        kw = dict(box_rows=box, slots=slots, warps=warps, programs=per_sm * sms)
        if op == "rmsnorm":
            kw.update(g=g, rstd=rstd, eps=1e-6)
        rows.append((f"resident {box}x256 ring {slots} w{warps} {per_sm}/SM",
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
            copy = ("copy", same_bytes_copy(x, 2 * x.nbytes), None)
            for op in rg.OPS:
                rows += against_copy(f"{op} {M}x{N} {dtype_name(dtype)}",
                                     variants(op, x, g) + [copy], op=op, shape=f"{M}x{N}",
                                     dtype=dtype_name(dtype))
    save_rows(os.environ.get("OUT", "out"), "rows_resident.json", rows)


if __name__ == "__main__":  # rows_resident.py [MxN ...]: these shapes only
    main(shapes_from_argv(SHAPES))
