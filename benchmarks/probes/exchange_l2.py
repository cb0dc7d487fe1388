"""Probe: the exchange forwards asking L2 for a later wave's rows (RMSNormTuning.
fwd_exchange_l2_next, SoftmaxTuning.exchange_l2_next; off by default).

The exchange forwards' one-row form (softmax's and RMSNorm's wide rows: a program per piece
of a row, the row's pieces meeting in memory) holds no load in flight while a program waits
for its row-mates, and runs 0.74-0.90 of a copy of the same bytes on an H100 in do_bench
(docs/performance.md, session 44-47). With the hint on, each program, once its piece is
loaded, asks L2 (prefetch.global.L2, inline PTX, no register held) for the same piece of the
row about k programs per SM on (`tuning.l2_rows_ahead`): the row a program of a later wave
will read, so DRAM works while the resident programs meet. At 1024x65536 and 256x262144, fp32
and bf16, for k in 1, 2, 4, against today's plan (where bf16 rows of 65536 take the online
softmax and the chunked RMSNorm forward, the exchange forced as well) and a copy of the same
2·MN bytes: each variant checked bit for bit against the plain exchange, CUDA-graph replays and
do_bench (L2 flushed), interleaved, three repeats.
Decides: fwd_exchange_l2_next and exchange_l2_next
(docs/decisions.md#rmsnorm-backward-prefetch-depth).

    python benchmarks/probes/exchange_l2.py [MxN ...]      ($OUT/exchange_l2.json)
"""
import dataclasses
import os

from _common import against_same_bytes, dtype_name, rms_inputs, save_rows, shapes_from_argv, torch
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import softmax as sm
from tritonlab.kernels.tuning import tuning_for


SHAPES = ((1024, 65536), (256, 262144))
NEXT = (1, 2, 4)


def softmax_launch(x, **changes):
    """softmax's launch plan for x under its tuning with `changes` (made now, not cached)."""
    kept = sm.tuning_for
    t = dataclasses.replace(kept("softmax", x.get_device()), **changes)
    sm.tuning_for = lambda kind, device: t
    try:
        return sm._Launch("softmax", -1, None, None, None, x)
    finally:
        sm.tuning_for = kept


def softmax_variants(x):
    """(label, fn, check) rows of softmax: today's plan, the exchange (forced where today's is
    another) and the exchange with the hint k ahead."""
    y = torch.empty_like(x)
    today = softmax_launch(x)
    exchange = softmax_launch(x, exchange_rows=((x.element_size(), 0),))
    want = torch.empty_like(x)
    exchange.forward(x, want)

    def check(plan):
        def run():
            plan.forward(x, y)
            assert torch.equal(y, want), "not the plain exchange's bits"
            return "same bits"
        return run
    rows = [(f"today ({today.kernel.kernel.__name__})", lambda: today.forward(x, y), None)]
    if exchange.kernel.kernel is not today.kernel.kernel:
        rows.append(("exchange", lambda: exchange.forward(x, y), None))
    for k in NEXT:
        plan = softmax_launch(x, exchange_rows=((x.element_size(), 0),), exchange_l2_next=k)
        rows.append((f"exchange L2 next {k}/SM ({plan.kernel.kw['L2_NEXT']} rows)",
                     lambda plan=plan: plan.forward(x, y), check(plan)))
    return rows


def rmsnorm_variants(x, g):
    """The same for RMSNorm's forward."""
    t = tuning_for("rmsnorm", x.get_device())
    forced = dataclasses.replace(t, fwd_exchange=((x.element_size(), 0),))
    today, exchange = rn._Plan(x, g), rn._Plan(x, g, tuning=forced)
    want = exchange.forward(x, g, 1e-6)

    def check(plan):
        def run():
            got = plan.forward(x, g, 1e-6)
            assert all(torch.equal(a, b) for a, b in zip(got, want)), "not the plain bits"
            return "same bits"
        return run
    rows = [(f"today ({today.fwd.kernel.__name__})", lambda: today.forward(x, g, 1e-6), None)]
    if today.exchange is None:
        rows.append(("exchange", lambda: exchange.forward(x, g, 1e-6), None))
    for k in NEXT:
        plan = rn._Plan(x, g, tuning=dataclasses.replace(forced, fwd_exchange_l2_next=k))
        rows.append((f"exchange L2 next {k}/SM ({plan.fwd.kw['L2_NEXT']} rows)",
                     lambda plan=plan: plan.forward(x, g, 1e-6), check(plan)))
    return rows


def main(shapes=SHAPES):
    rows = []
    for M, N in shapes:
        for dtype in (torch.float32, torch.bfloat16):
            x, g, _ = rms_inputs(M, N, dtype)
            for op, impls in (("softmax", softmax_variants(x)),
                              ("rmsnorm fwd", rmsnorm_variants(x, g))):
                rows += against_same_bytes(x, 2, f"{op} {M}x{N} {dtype_name(dtype)}", impls,
                                           op=op, shape=f"{M}x{N}", dtype=dtype_name(dtype))
    save_rows(os.environ.get("OUT", "out"), "exchange_l2.json", rows)


if __name__ == "__main__":  # exchange_l2.py [MxN ...]: these shapes only
    main(shapes_from_argv(SHAPES))
