"""tritonlab's kernels on the simulator with every sanitizer on, under both executors: correct
kernels report nothing (no race, no order dependence, no padded lane that changes a result) and
still compute the reference."""
import pytest
import torch
import torch.nn.functional as F

import minitriton
import torch_references as ref
from torch_references import rel_err
from tritonlab import backend

ALL_CHECKS = dict(races=True, order=True, padding=True)


def test_elementwise_kernels_report_nothing(executor):
    ew = backend.with_backend("tritonlab.kernels.elementwise", "sim")
    x = torch.randn(3000, generator=torch.Generator().manual_seed(0))
    with minitriton.configure(**ALL_CHECKS):
        added, gelu, silu = ew.add(x, x), ew.gelu(x), ew.silu(x)
    assert torch.equal(added, x + x)
    tol = ref.ELEMENTWISE_TOLERANCES[torch.float32] * x.abs().max().item()
    assert (gelu.double() - ref.gelu(x)).abs().max() <= tol
    assert (silu.double() - F.silu(x.double())).abs().max() <= tol


def test_persistent_tma_matmul_is_clean_under_the_sanitizers(executor):
    """The persistent TMA matmul: programs striding over tiles (their loops run different trip
    counts: divergent control flow under lockstep), zero-filled edge tiles feeding tl.dot,
    clipped stores."""
    mm = backend.with_backend("tritonlab.kernels.matmul", "sim")
    g = torch.Generator().manual_seed(0)
    a = torch.randn(100, 40, generator=g).half()
    b = torch.randn(40, 72, generator=g).half()
    with minitriton.configure(**ALL_CHECKS):
        c = mm.matmul(a, b, "relu", kernel="tma")
    assert rel_err(c, ref.matmul(a, b, "relu")) < 1e-3


def test_softmax_variants_report_nothing(executor):
    """Every softmax variant, forward and backward, with every sanitizer: the split variant's
    two kernels (chunk statistics written by one program each, then read by every program of
    the row) and the persistent one (programs striding over rows) included."""
    sm = backend.with_backend("tritonlab.kernels.softmax", "sim")
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(5, 300, generator=g) * 3).requires_grad_()
    dy = torch.randn(5, 300, generator=g)
    want = torch.softmax(x.detach().double(), -1)
    for variant, block in ((None, None), ("rows", None), ("online", 64), ("split", 64),
                           ("loop", None)):
        with minitriton.configure(**ALL_CHECKS):
            y = sm.softmax(x, -1, variant, block)
            (dx,) = torch.autograd.grad(y, x, dy)
        assert rel_err(y, want) < 1e-6, variant
        assert rel_err(dx, want * (dy - (dy * want).sum(-1, keepdim=True))) < 1e-5, variant


def test_rmsnorm_and_row_sum_report_nothing(executor):
    """RMSNorm through its lean eager autograd path (plans, the forward's dg buffer, the
    partial-dg rows) and row_sum, with every sanitizer: no race on dg, the reference's values
    and gradients."""
    rn = backend.with_backend("tritonlab.kernels.rmsnorm", "sim")
    rowsum = backend.with_backend("tritonlab.kernels.rowsum", "sim")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 9, 40, generator=g).requires_grad_()
    w = torch.randn(40, generator=g).requires_grad_()
    dy = torch.randn(2, 9, 40, generator=g)
    with minitriton.configure(**ALL_CHECKS):
        y = rn.rmsnorm(x, w)
        dx, dw = torch.autograd.grad(y, (x, w), dy)
        sums = rowsum.row_sum(x.detach())
    xr, wr = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    yr = F.rms_norm(xr, (40,), wr, 1e-6)
    dxr, dwr = torch.autograd.grad(yr, (xr, wr), dy.double())
    assert rel_err(y, yr) < 1e-6 and rel_err(dx, dxr) < 1e-5 and rel_err(dw, dwr) < 1e-5
    assert rel_err(sums, x.detach().double().sum(-1)) < 1e-6


def test_rmsnorm_exchange_and_persistent_forwards_report_nothing(executor, monkeypatch):
    """The exchange forward and backward (wide rows read once, a row's programs meeting in
    memory, the backward's row by row): programs that wait for each other run under either
    executor, no race on the statistics the others read after the wait, counters left zero
    for the next launch; the persistent forward and the staged backward
    (docs/decisions.md#row-loop-stages) likewise."""
    import dataclasses

    from tritonlab.kernels import tuning
    rn = backend.with_backend("tritonlab.kernels.rmsnorm", "sim")
    small = dataclasses.replace(tuning.DEFAULTS["rmsnorm"], fwd_register_max=64,
                                fwd_exchange=((4, 0),), exchange_block=64,
                                bwd_register_max=64, bwd_exchange=((4, 128, 2, 1 << 20),))
    loop = dataclasses.replace(tuning.DEFAULTS["rmsnorm"], fwd_loop=True, bwd_stages=2)
    kept = {}  # the scratch buffers reused across launches, as on a GPU stream

    def scratch(name, shape, dtype, device, zeroed=False):
        return kept.setdefault(name, (torch.zeros if zeroed else torch.empty)(shape, dtype=dtype))
    monkeypatch.setattr(rn._exchange, "scratch", scratch)
    g0 = torch.Generator().manual_seed(0)
    x, w = torch.randn(5, 300, generator=g0), torch.randn(300, generator=g0)
    x2 = torch.randn(5, 300, generator=g0) + 1
    with minitriton.configure(**ALL_CHECKS):
        y, rstd = rn._forward(x, w, 1e-6, tuning=small)
        y2, _ = rn._forward(x2, w, 1e-6, tuning=small)  # the counters reused
        # groups of rows in the forward's pipelined loop (the meeting in PTX on a GPU only)
        y_staged, rstd_staged = rn._forward(x, w, 1e-6, tuning=dataclasses.replace(
            small, fwd_exchange_stages=2, simulator_programs=2))
        # the exchange backward: groups of 4 rows in steps of 2 (the last group one row of 4),
        # 3 pieces each
        dx, dw = rn._backward(x2, x, w, rstd, rows_per_program=4, tuning=small)
        # and with its meetings split around the next step's loads: one counter per group
        split = dataclasses.replace(small, bwd_exchange_split=True)
        dx_split, dw_split = rn._backward(x2, x, w, rstd, rows_per_program=4, tuning=split)
        # and its step loop pipelined (bwd_exchange_stages; the meeting in PTX on a GPU only)
        staged = dataclasses.replace(small, bwd_exchange_stages=2)
        dx_staged, dw_staged = rn._backward(x2, x, w, rstd, rows_per_program=4, tuning=staged)
    counters = [k for k in kept if k.endswith("counters")]
    assert len(counters) == 2 and all(not kept[k].any() for k in counters)  # left zero
    assert torch.equal(dx_split, dx) and torch.equal(dw_split, dw)
    assert torch.equal(dx_staged, dx) and torch.equal(dw_staged, dw)
    assert torch.equal(y_staged, y) and torch.equal(rstd_staged, rstd)
    want = F.rms_norm(x.double(), (300,), w.double(), 1e-6)
    assert rel_err(y, want) < 1e-6
    xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
    dxr, dwr = torch.autograd.grad(F.rms_norm(xr, (300,), wr, 1e-6), (xr, wr), x2.double())
    assert rel_err(dx, dxr) < 1e-5 and rel_err(dw, dwr) < 1e-5
    assert rel_err(y2, F.rms_norm(x2.double(), (300,), w.double(), 1e-6)) < 1e-6
    assert rel_err(rstd, x.double().pow(2).mean(-1).add(1e-6).rsqrt()) < 1e-6
    # and the persistent forward (programs striding over rows), with the staged backward
    with minitriton.configure(**ALL_CHECKS):
        y, rstd = rn._forward(x, w, 1e-6, tuning=loop)
        dx, dw = rn._backward(x2, x, w, rstd, tuning=loop)
    xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
    yr = F.rms_norm(xr, (300,), wr, 1e-6)
    dxr, dwr = torch.autograd.grad(yr, (xr, wr), x2.double())
    assert rel_err(y, yr) < 1e-6 and rel_err(dx, dxr) < 1e-5 and rel_err(dw, dwr) < 1e-5



def test_rmsnorm_backward_with_the_dg_sum_fused_reports_nothing(executor, monkeypatch):
    """rmsnorm_bwd_fused_kernel (RMSNormTuning.bwd_fuse_dg): the last programs to finish sum
    dg's columns after waiting for the others, under either executor: no race on the partial
    rows they read; dx as the plain backward's, dg the same bits where both kernels run with
    4 warps (tl.sum's order follows the layout) and within rounding where the row kernel runs
    more; the same bits every launch (the counters, reused, left zero); more reducers than
    programs clamped; a frozen weight's dg summed into a dropped buffer by the same kernel."""
    import dataclasses

    from tritonlab.kernels import tuning
    rn = backend.with_backend("tritonlab.kernels.rmsnorm", "sim")
    kept = {}  # the scratch buffers reused across launches, as on a GPU stream

    def scratch(name, shape, dtype, device, zeroed=False):
        return kept.setdefault(name, (torch.zeros if zeroed else torch.empty)(shape, dtype=dtype))
    monkeypatch.setattr(rn, "scratch", scratch)
    monkeypatch.setattr(rn._exchange, "scratch", scratch)
    g0 = torch.Generator().manual_seed(3)
    for dtype, (m, n), reducers, warps in ((torch.float32, (37, 100), 3, 4),
                                           (torch.bfloat16, (9, 256), 2, 4),
                                           (torch.float32, (5, 40), 64, 4),
                                           (torch.float32, (12, 4096), 2, 8)):
        x, w, dy = (torch.randn(*shape, generator=g0).to(dtype) for shape in ((m, n), (n,), (m, n)))
        _, rstd = rn._forward(x, w, 1e-6)
        plain = rn._backward(dy, x, w, rstd, rows_per_program=4)
        fused_t = dataclasses.replace(tuning.DEFAULTS["rmsnorm"], bwd_fuse_dg=reducers)
        plan = rn._Plan(x, w, 4, tuning=fused_t)
        kernel, k = plan.bwd_fused
        assert kernel.kernel is rn.rmsnorm_bwd_fused_kernel and kernel.kw["num_warps"] == warps
        assert k == min(reducers, -(-m // 4))
        with minitriton.configure(**ALL_CHECKS):
            runs = [plan.backward(dy, x, w, rstd) for _ in range(2)]  # the counters reused
        assert not kept["rmsnorm fused dg counters"].any()  # left zero
        assert torch.equal(runs[0][1], runs[1][1]) and torch.equal(runs[0][0], plain[0])
        if warps == 4:
            assert torch.equal(runs[0][1], plain[1])
        else:
            torch.testing.assert_close(runs[0][1], plain[1], rtol=1e-5, atol=1e-5)
        frozen = plan.backward(dy, x, w, rstd, want_dg=False)
        assert torch.equal(frozen[0], plain[0]) and frozen[1] is None
        torch.testing.assert_close(kept["rmsnorm fused dg dropped"], plain[1], rtol=1e-5,
                                   atol=1e-5)
        kept.clear()
    with pytest.raises(ValueError, match="bwd_fuse_dg"):
        rn._Plan(x, w, 4, tuning=dataclasses.replace(fused_t, bwd_fuse_dg=-1))
    xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
    dxr, dwr = torch.autograd.grad(F.rms_norm(xr, (n,), wr, 1e-6), (xr, wr), dy.double())
    assert rel_err(runs[0][0], dxr) < 1e-5 and rel_err(runs[0][1], dwr) < 1e-5
