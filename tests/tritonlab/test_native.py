"""The native autograd node (kernels/_native.py, _native.cpp): RMSNorm's training step with
its backward in C++. The build and the launch packing are checked wherever a C++ compiler is
(CI included); the node itself launches Triton kernels, so its tests carry the gpu marker and
compare it, bit for bit, with the registered op on real Triton."""
import struct

import pytest
import torch
import torch.nn.functional as F

from tritonlab.kernels import _native
from tritonlab.kernels import rmsnorm as rn

NAME = "TritonlabRMSNormBackward"


def _module():
    mod = _native.module()
    if mod is None:
        pytest.skip(f"the native module is not built here: {_native.why()}")
    return mod


def test_launch_packs_parameters_as_triton_passes_them():
    """One 8-byte cell per non-constexpr parameter (pointers, i32, i64, fp32 bits, the call's
    float), then Triton 3.6's two null scratch pointers."""
    mod = _module()
    k = mod.KINDS
    launch = mod.Launch("k", 0, [3, 1, 1], 128, 0,
                        [k["slot"], k["i32"], k["i64"], k["f32"], k["scalar"], k["slot"]],
                        [1, -5, 1 << 40, struct.unpack("<I", struct.pack("<f", 2.5))[0], 0, 0])
    cells = launch.pack([0x1000, 0x2000], 0.25)
    # launched with cuLaunchKernelEx and programmatic dependent launch only where asked
    assert launch.pdl is False
    assert mod.Launch("k", 0, [1, 1, 1], 32, 0, [], [], pdl=True).pdl is True
    f32 = lambda v: struct.unpack("<I", struct.pack("<f", v))[0]  # noqa: E731
    assert cells == [0x2000, 2 ** 32 - 5, 1 << 40, f32(2.5), f32(0.25), 0x1000, 0, 0]
    with pytest.raises(IndexError, match="bad slot"):
        mod.Launch("k", 0, [1, 1, 1], 32, 0, [k["slot"]], [7]).pack([1])
    with pytest.raises(ValueError, match="grid"):
        mod.Launch("k", 0, [1, 1], 32, 0, [], [])
    with pytest.raises(ValueError, match="kind"):
        mod.Launch("k", 0, [1, 1, 1], 32, 0, [9], [0])
    names = dict(mod.slots())
    assert len(set(names.values())) == len(names)
    assert {"x", "dy", "dg", "stats", "counters"} <= set(names)
    # an exchange pass's statistics are (rows, pieces) of the plan's rows
    none = mod.Launch("k", 0, [1, 1, 1], 32, 0, [], [])
    mod.RMSNormPlan(none, [none], none, 4, [1, 8], False, False, [4, 3], [4, 5])
    for bad in ([3, 3], [4], [4, 3, 1], [4, 0]):
        with pytest.raises(ValueError, match="rows, pieces"):
            mod.RMSNormPlan(none, [none], none, 4, [1, 8], False, False, [], bad)
    # a backward and a dg sum, or the fused backward alone (RMSNormTuning.bwd_fuse_dg) in
    # place of the whole-row one
    mod.RMSNormPlan(none, [], None, 4, [1, 8], False, False, [], [], [none])
    for backward, dg_sum, coef, bwd_stats, fused in (
            ([], None, False, [], []), ([none], None, False, [], []),
            ([], none, False, [], []), ([none], None, False, [], [none]),
            ([], none, False, [], [none]), ([], None, True, [], [none]),
            ([], None, False, [4, 5], [none])):
        with pytest.raises(ValueError, match="a fused backward alone"):
            mod.RMSNormPlan(none, backward, dg_sum, 4, [1, 8], coef, False, [], bwd_stats,
                            fused)


def test_unbuildable_module_says_why(monkeypatch, tmp_path):
    """No compiler, or the switch off: module() is None and why() names the reason, and the
    public function still runs (the Python path)."""
    monkeypatch.setattr(_native, "_state", {})
    monkeypatch.setenv("TRITONLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    assert _native.module() is None and "did not run" in _native.why()
    monkeypatch.setattr(_native, "_state", {})
    monkeypatch.setattr(_native, "ENABLED", False)
    assert _native.module() is None and _native.why() == "TRITONLAB_NATIVE=0"


gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _inputs(shape, dtype, seed=0, layout="contiguous"):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    if layout == "transposed":
        x = torch.randn(shape[::-1], generator=gen, device="cuda", dtype=dtype).t()
    else:
        x = torch.randn(shape, generator=gen, device="cuda", dtype=dtype)
    g = torch.randn(shape[-1], generator=gen, device="cuda", dtype=dtype)
    dy = torch.randn(shape, generator=gen, device="cuda", dtype=dtype)
    return x, g, dy


def _step(call, x, g, dy, frozen=False):
    x = x.detach().clone().requires_grad_()
    g = g.detach().clone().requires_grad_(not frozen)
    y = call(x, g)
    y.backward(dy)
    return y, x.grad, g.grad, y.grad_fn.name()


def _captured_step(x, g, dy):
    """A CUDA graph of one training step on copies of x and g, the native node's (its
    allocations warmed on a side stream first): (graph, y, x's copy, g's copy)."""
    xs, gs = x.clone().requires_grad_(), g.clone().requires_grad_()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        rn.rmsnorm(xs, gs).backward(dy)
    torch.cuda.current_stream().wait_stream(side)
    xs.grad = gs.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = rn.rmsnorm(xs, gs)
        y.backward(dy)
    assert y.grad_fn.name() == NAME
    return graph, y, xs, gs


def _warm(x, g, dy):
    """A first step through the Python Function, which compiles the kernels the native plan
    launches."""
    _step(rn.rmsnorm, x, g, dy)


@gpu
@needs_cuda
@pytest.mark.parametrize("shape,dtype,layout", [
    ((6, 8), torch.float32, "contiguous"),
    ((64, 4096), torch.bfloat16, "contiguous"),
    ((2, 3, 1000), torch.float16, "contiguous"),
    ((40, 24), torch.float32, "transposed"),
    ((4, 40000), torch.float32, "contiguous"),  # the exchange forward and backward
    ((3, 20000), torch.bfloat16, "contiguous"),  # the exchange backward
    ((2, 140000), torch.bfloat16, "contiguous"),  # both, the backward's meetings split
    ((5, 64), torch.float64, "contiguous"),
])
def test_native_step_matches_the_registered_op(shape, dtype, layout):
    _module()
    x, g, dy = _inputs(shape, dtype, layout=layout)
    _warm(x, g, dy)
    y1, dx1, dg1, name = _step(rn.rmsnorm, x, g, dy)
    assert name == NAME, rn._plan(x, g).native_why
    # again: the exchange kernels' counters, kept, were left zero by the first step
    for got, want in zip(_step(rn.rmsnorm, x, g, dy)[:3], (y1, dx1, dg1)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    y2, dx2, dg2, _ = _step(lambda a, b: rn.rmsnorm_op.custom_op(a, b, 1e-6)[0], x, g, dy)
    for got, want in ((y1, y2), (dx1, dx2), (dg1, dg2)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    ref = F.rms_norm(x.float(), (shape[-1],), g.float(), 1e-6)
    torch.testing.assert_close(y1.float(), ref, rtol=2e-2, atol=2e-2)


def _retuned(monkeypatch, shape, dtype, seed, **changes):
    """(x, g, dy, other dy, the steps on dy and on other): the steps with the device's
    RMSNorm tuning, then that tuning with `changes` in place of it (plans made anew) and a
    first step through the Python path, which compiles the kernels it chose."""
    import dataclasses

    from tritonlab.kernels import tuning
    _module()
    x, g, dy = _inputs(shape, dtype, seed=seed)
    other = _inputs(shape, dtype, seed=seed + 1)[2]
    _warm(x, g, dy)
    want, want_other = _step(rn.rmsnorm, x, g, dy), _step(rn.rmsnorm, x, g, other)
    changed = dataclasses.replace(tuning.tuning_for("rmsnorm", 0), **changes)
    monkeypatch.setattr(rn, "tuning_for", lambda kind, device: changed)
    monkeypatch.setattr(rn, "_PLANS", rn.PlanCache())
    _warm(x, g, dy)
    return x, g, dy, other, want, want_other


@gpu
@needs_cuda
@pytest.mark.parametrize("shape,dtype", [((512, 1024), torch.bfloat16),
                                         ((300, 4096), torch.float32), ((7, 100), torch.float16)])
def test_native_step_with_the_dg_sum_fused(shape, dtype, monkeypatch):
    """RMSNormTuning.bwd_fuse_dg set: the native node launches rmsnorm_bwd_fused_kernel (the
    last programs sum dg): dx bit for bit the two-kernel backward's, dg within rounding of it
    (tl.sum's order follows the warps) and the same bits on every step; steps with another dy
    in between (a reducer that read its partial rows too early would see the other step's);
    a frozen weight through the same native node."""
    x, g, dy, other, want, want_other = _retuned(monkeypatch, shape, dtype, 7, bwd_fuse_dg=16)
    assert rn._plan(x, g).bwd_fused is not None
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-2, atol=1e-2)
    first = None
    for d, w in ((dy, want), (other, want_other), (dy, want)):
        got = _step(rn.rmsnorm, x, g, d)
        assert got[3] == NAME, rn._plan(x, g).native_why
        torch.testing.assert_close(got[0], w[0], rtol=0, atol=0)
        torch.testing.assert_close(got[1], w[1], rtol=0, atol=0)
        torch.testing.assert_close(got[2], w[2], **tol)
        if d is dy:
            first = got[2] if first is None else first
            torch.testing.assert_close(got[2], first, rtol=0, atol=0)
    frozen = _step(rn.rmsnorm, x, g, dy, frozen=True)
    assert frozen[2] is None and frozen[3] == NAME
    torch.testing.assert_close(frozen[1], want[1], rtol=0, atol=0)


@gpu
@needs_cuda
@pytest.mark.parametrize("shape,dtype", [((4, 40000), torch.float32),
                                         ((3, 20000), torch.bfloat16),
                                         ((2, 140000), torch.bfloat16),
                                         ((1000, 16384), torch.bfloat16)])
def test_native_step_with_the_exchanges_pipelined(shape, dtype, monkeypatch):
    """RMSNormTuning.fwd_exchange_stages and bwd_exchange_stages set: the exchange kernels'
    row loops pipelined by Triton, their meetings in inline PTX
    (_exchange.arrive_and_wait(PTX=True)): y, dx and dg bit for bit the unpipelined kernels',
    through the Python path and the native node, on steps with another dy in between (a piece
    that read the others' shares before the meeting would see the other step's)."""
    import dataclasses

    from tritonlab.kernels import tuning
    # the steps to match: every exchange unpipelined (Hopper's bf16 entry has stages of its
    # own since session 46)
    t = tuning.tuning_for("rmsnorm", 0)
    plain = dataclasses.replace(t, bwd_exchange=tuple(e[:5] for e in t.bwd_exchange))
    monkeypatch.setattr(rn, "tuning_for", lambda kind, device: plain)
    monkeypatch.setattr(rn, "_PLANS", rn.PlanCache())
    x, g, dy, other, want, want_other = _retuned(monkeypatch, shape, dtype, 3,
                                                 fwd_exchange_stages=3, bwd_exchange_stages=3)
    plan = rn._plan(x, g)
    # the backward pipelined where its meetings are not split (Hopper's bf16 past 65536)
    assert plan.bwd_exchange is not None
    assert plan.bwd.kw.get("SPLIT") or plan.bwd.kw["PTX"] is True
    if shape[1] > 32768:  # Hopper's exchange forward: fp32 rows past 32768, bf16 from 131072
        assert plan.exchange is not None and plan.fwd.kw["PTX"] is True
    for d, w in ((dy, want), (other, want_other), (dy, want)):
        got = _step(rn.rmsnorm, x, g, d)
        for a, b in zip(got[:3], w[:3]):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


@gpu
@needs_cuda
@pytest.mark.parametrize("shape,dtype", [((8192, 4096), torch.bfloat16),  # kernels.py's rows
                                         ((300, 1024), torch.float32),
                                         ((4, 40000), torch.float32),  # the exchanges
                                         ((2, 140000), torch.bfloat16)])
def test_native_step_with_dependent_launches(shape, dtype, monkeypatch):
    """RMSNormTuning.pdl set: every kernel of the step compiled with Triton's launch_pdl and
    launched with programmatic dependent launch (the native node through cuLaunchKernelEx),
    each waiting (griddepcontrol.wait) before it touches memory. y, dx and dg bit for bit the
    step without it, on steps with another dy in between (a backward that read dy or rstd
    before the kernel ahead of it finished would see the other step's), and in a CUDA graph
    of the whole step replayed after another step ran."""
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("griddepcontrol is Hopper's (compute capability 9) and newer")
    x, g, dy, other, want, want_other = _retuned(monkeypatch, shape, dtype, 11, pdl=True)
    plan = rn._plan(x, g)
    assert plan.fwd.kw["launch_pdl"] is True and plan.bwd.kw["PDL"] is True
    assert _native.launch(plan.dg_sum, (_native.Slot(0), _native.Slot(1), 1, 1)).pdl is True
    for d, w in ((dy, want), (other, want_other), (dy, want)):
        got = _step(rn.rmsnorm, x, g, d)
        assert got[3] == NAME, plan.native_why
        for a, b in zip(got[:3], w[:3]):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    graph, y, xs, gs = _captured_step(x, g, dy)
    _step(rn.rmsnorm, x, g, other)
    xs.grad.zero_(), gs.grad.zero_()
    graph.replay()
    torch.cuda.synchronize()
    for a, b in zip((y, xs.grad, gs.grad), want[:3]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@gpu
@needs_cuda
@pytest.mark.parametrize("shape,dtype,changes,exact", [
    # the whole-row backward's PREFETCH rows: L2 asked ahead, two rows ahead in registers
    # (enough rows that each program has several, the last programs fewer)
    ((8192, 4096), torch.bfloat16, {"bwd_l2_ahead": 4}, True),
    ((4000, 2048), torch.float32, {"bwd_l2_ahead": 2}, True),
    ((2000, 3000), torch.float16, {"bwd_l2_ahead": 3}, True),
    ((8192, 4096), torch.bfloat16, {"bwd_prefetch_rows": 2}, False),
    ((4000, 2048), torch.float32, {"bwd_prefetch_rows": 2, "bwd_l2_ahead": 3}, False),
    ((2000, 3000), torch.float16, {"bwd_prefetch_rows": 2}, False),
    # the exchange backward's steps (many a group): plain meetings, pipelined (bf16 up to
    # 65536 columns), split (bf16 past 65536)
    ((1000, 40000), torch.float32, {"bwd_exchange_l2_ahead": 1}, True),
    ((2000, 20000), torch.bfloat16, {"bwd_exchange_l2_ahead": 2}, True),
    ((200, 140000), torch.bfloat16, {"bwd_exchange_l2_ahead": 2}, True)])
def test_native_step_with_more_rows_in_flight(shape, dtype, changes, exact, monkeypatch):
    """RMSNormTuning.bwd_l2_ahead and bwd_exchange_l2_ahead (each step of the whole-row or
    exchange backward asks L2 for later rows: inline PTX, GPU only) and bwd_prefetch_rows 2
    (two rows ahead in registers, with more warps): the native step's y, dx and dg as the
    default's, bit for bit where only the L2 hint differs, within rounding where the warps
    do (tl.sum's order), on steps with another dy in between."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the shapes' kernels are Hopper's tuning's")
    x, g, dy, other, want, want_other = _retuned(monkeypatch, shape, dtype, 13, **changes)
    plan = rn._plan(x, g)
    assert plan.rows_per_program > 2  # the hints and the second row ahead reach rows
    kw = plan.bwd.kw
    assert kw.get("L2_AHEAD", 0) == (changes.get("bwd_l2_ahead", 0)
                                     or changes.get("bwd_exchange_l2_ahead", 0))
    if "bwd_prefetch_rows" in changes:
        assert kw["PREFETCH"] == 2
    tol = {} if exact else {"rtol": 1e-2, "atol": 1e-2}
    for d, w in ((dy, want), (other, want_other), (dy, want)):
        got = _step(rn.rmsnorm, x, g, d)
        assert got[3] == NAME, rn._plan(x, g).native_why
        for a, b in zip(got[:3], w[:3]):
            torch.testing.assert_close(a, b, **(tol or {"rtol": 0, "atol": 0}))


@gpu
@needs_cuda
@pytest.mark.parametrize("shape,dtype", [((300, 65536), torch.float32),
                                         ((64, 262144), torch.bfloat16)])
def test_exchange_forwards_asking_l2_for_later_rows(shape, dtype, monkeypatch):
    """SoftmaxTuning.exchange_l2_next and RMSNormTuning.fwd_exchange_l2_next: each program of
    the exchange forward asks L2 (inline PTX, GPU only) for its piece of a later wave's row;
    softmax's y and the RMSNorm step's y, dx and dg bit for bit the plain kernels'."""
    import dataclasses

    from tritonlab.kernels import _launch, tuning
    from tritonlab.kernels import softmax as sm
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the shapes' kernels are Hopper's tuning's")
    x, g, dy = _inputs(shape, dtype, seed=17)
    want = sm.softmax(x)
    hinted = dataclasses.replace(tuning.tuning_for("softmax", 0), exchange_l2_next=2)
    monkeypatch.setattr(sm, "tuning_for", lambda kind, device: hinted)
    monkeypatch.setattr(sm, "_LAUNCHES", _launch.PlanCache())
    for op in vars(sm).values():  # the native forward's plans hold the old tuning's launches
        if isinstance(op, _native.NativeOp):
            op.clear()
    plan = sm._launch_for("softmax", -1, None, None, None, x)
    assert plan.kernel.kw["L2_NEXT"] == tuning.l2_rows_ahead(2, shape[1] // 8192,
                                                             tuning.device_of(0))
    torch.testing.assert_close(sm.softmax(x), want, rtol=0, atol=0)
    x, g, dy, other, want, want_other = _retuned(monkeypatch, shape, dtype, 17,
                                                 fwd_exchange_l2_next=2)
    assert rn._plan(x, g).fwd.kw["L2_NEXT"] >= 1
    for d, w in ((dy, want), (other, want_other)):
        got = _step(rn.rmsnorm, x, g, d)
        assert got[3] == NAME, rn._plan(x, g).native_why
        for a, b in zip(got[:3], w[:3]):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


@gpu
@needs_cuda
def test_native_frozen_weight_twice_and_released_graph():
    """A frozen weight gets no gradient; retain_graph gives a second backward its own buffers;
    without it, a second backward says the graph was freed."""
    _module()
    x, g, dy = _inputs((16, 256), torch.float32, seed=1)
    _warm(x, g, dy)
    _, dx_frozen, dg_frozen, name = _step(rn.rmsnorm, x, g, dy, frozen=True)
    _, dx_ref, _, _ = _step(lambda a, b: rn.rmsnorm_op.custom_op(a, b, 1e-6)[0], x, g, dy)
    assert name == NAME and dg_frozen is None
    torch.testing.assert_close(dx_frozen, dx_ref, rtol=0, atol=0)
    xr, gr = x.clone().requires_grad_(), g.clone().requires_grad_()
    y = rn.rmsnorm(xr, gr)
    assert y.grad_fn.name() == NAME
    first = torch.autograd.grad(y, (xr, gr), dy, retain_graph=True)
    kept = [t.clone() for t in first]
    second = torch.autograd.grad(y, (xr, gr), 2 * dy)
    for a, b, c in zip(first, kept, second):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
        torch.testing.assert_close(c, 2 * b, rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="second time"):
        torch.autograd.grad(y, (xr, gr), dy)


@gpu
@needs_cuda
def test_native_in_place_change_and_create_graph():
    """x changed in place after the forward: autograd's version check; create_graph: the
    first-order gradient as before, and the second order raises NotImplementedError."""
    _module()
    x, g, dy = _inputs((8, 128), torch.float32, seed=2)
    _warm(x, g, dy)
    xr, gr = x.clone().requires_grad_(), g.clone().requires_grad_()
    base = xr * 1.0
    y = rn.rmsnorm(base, gr)
    assert y.grad_fn.name() == NAME
    base.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(dy)
    y = rn.rmsnorm(xr, gr)
    (dx,) = torch.autograd.grad(y, xr, dy, create_graph=True)
    _, want, _, _ = _step(lambda a, b: rn.rmsnorm_op.custom_op(a, b, 1e-6)[0], x, g, dy)
    torch.testing.assert_close(dx, want, rtol=0, atol=0)
    with pytest.raises(NotImplementedError, match="double backward"):
        dx.sum().backward()


@gpu
@needs_cuda
@pytest.mark.parametrize("shape,dtype", [((32, 512), torch.bfloat16),
                                         ((4, 40000), torch.float32)])  # exchange kernels
def test_native_side_stream_cuda_graph_and_misaligned_input(shape, dtype):
    """The node launches on its forward's stream; a CUDA graph captures the whole step (the
    exchange kernels' counters made and zeroed inside it); an x that is not 16-byte aligned
    takes the Python Function (same values)."""
    _module()
    x, g, dy = _inputs(shape, dtype, seed=3)
    _warm(x, g, dy)
    _, dx_ref, dg_ref, _ = _step(lambda a, b: rn.rmsnorm_op.custom_op(a, b, 1e-6)[0], x, g, dy)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        _, dx, dg, name = _step(rn.rmsnorm, x, g, dy)
    torch.cuda.current_stream().wait_stream(side)
    assert name == NAME
    torch.testing.assert_close(dx, dx_ref, rtol=0, atol=0)
    torch.testing.assert_close(dg, dg_ref, rtol=0, atol=0)

    graph, _, xs, gs = _captured_step(x, g, dy)
    xs.grad.zero_(), gs.grad.zero_()
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(xs.grad, dx_ref, rtol=0, atol=0)
    torch.testing.assert_close(gs.grad, dg_ref, rtol=0, atol=0)

    buf = torch.empty(x.numel() + 1, device="cuda", dtype=x.dtype)
    odd = buf[1:].view(x.shape).copy_(x).requires_grad_()
    assert odd.data_ptr() % 16 and odd.is_leaf
    go = g.clone().requires_grad_()
    y = rn.rmsnorm(odd, go)
    assert y.grad_fn.name() != NAME
    y.backward(dy)
    torch.testing.assert_close(odd.grad, dx_ref, rtol=0, atol=0)
    torch.testing.assert_close(go.grad, dg_ref, rtol=0, atol=0)


# -- any op's native path (NativeOp, OpTable): the table's mechanics on the CPU (plans without
# launches), the ops' plans against their registered ops on the GPU

def _table(mod, create_graph=None):
    return mod.OpTable("TestBackward", create_graph, None, None, _native.MISS)


def test_op_table_misses_declines_and_records_the_backward():
    """A signature without a plan misses; a plan allocates its result and, where a gradient
    is wanted, records a node whose gradients follow the plan (dy itself; dy broadcast over a
    last dimension); non-contiguous inputs and a plan without a backward decline or miss."""
    mod = _module()
    grads = mod.GRADS
    x, y = torch.randn(4, 3), torch.randn(4, 3, 1)
    table = _table(mod)
    assert mod.call(table, x, y) is _native.MISS and len(table) == 0
    forward_only = mod.OpPlan(2, [([4, 3], torch.float64)], [], 2)
    table.add(forward_only, x, y)
    out = mod.call(table, x, y)
    assert out.shape == (4, 3) and out.dtype == torch.float64 and not out.requires_grad
    xr, yr = x.clone().requires_grad_(), y.clone().requires_grad_()
    assert mod.call(table, xr, yr) is _native.MISS  # a gradient wanted, no backward yet
    with torch.no_grad():
        assert mod.call(table, xr, yr) is not _native.MISS
    both = mod.OpPlan(2, [([4, 3], torch.float32)], [], 2, True, [0, 2], [], [],
                      [(grads["dy"], 0), (grads["expand_dy"], 0)], [[4, 3], [4, 3, 1]])
    table.add(both, xr, yr)
    out = mod.call(table, xr, yr)
    assert out.grad_fn.name() == "TestBackward"
    dy = torch.randn(4, 3)
    out.backward(dy)
    assert torch.equal(xr.grad, dy) and torch.equal(yr.grad, dy.unsqueeze(-1))
    # create_graph with no backward launches: the gradients' own graph (expand is linear)
    dyr = dy.clone().requires_grad_()
    (gy,) = torch.autograd.grad(mod.call(table, xr, yr), yr, dyr, create_graph=True)
    (back,) = torch.autograd.grad(gy.sum(), dyr)
    assert torch.equal(back, torch.ones_like(dy))
    assert mod.call(table, torch.randn(3, 4).t(), y) is None  # not contiguous: the Python path
    assert mod.call(table, x.double(), y) is _native.MISS  # another signature
    table.add(None, x.double(), y)  # refused: declines from now on
    assert mod.call(table, x.double(), y) is None
    assert mod.call(table, x, torch.nn.Parameter(y)) is not None  # a Parameter is a plain tensor
    for odd in (x.to_sparse(), torch._neg_view(x)):  # a plan's key, not its kind of tensor
        assert mod.call(table, odd, y) is None


def test_a_plan_without_a_backward_records_the_python_backward():
    """A signature whose backward kernels have not compiled still takes the native forward
    where a gradient is wanted, if the op has a Python backward: the node runs it on
    (dy, *saved), under no_grad as autograd runs a backward, and gives each input that wants
    one its gradient."""
    mod = _module()
    seen = []

    def python_backward(dy, x, y, out):
        seen.append((torch.is_grad_enabled(), dy.is_contiguous(), x.shape, y.shape, out.shape))
        return dy * x, dy * 3

    table = _table(mod, python_backward)
    x, y = torch.randn(6), torch.randn(6)
    table.add(mod.OpPlan(2, [([6], torch.float32)], [], 2, False, [0, 1, 2]), x, y)
    xr = x.clone().requires_grad_()
    out = mod.call(table, xr, y)  # only x wants a gradient
    assert out.grad_fn.name() == "TestBackward" and out.shape == (6,)
    dy = torch.randn(12)[::2]  # a strided dy: the Python backward gets it contiguous
    out.backward(dy)
    assert seen == [(False, True, (6,), (6,), (6,))]
    torch.testing.assert_close(xr.grad, dy * x, rtol=0, atol=0)
    yr = y.clone().requires_grad_()
    mod.call(table, xr, yr).backward(dy)
    torch.testing.assert_close(yr.grad, dy * 3, rtol=0, atol=0)
    # an op without a Python backward misses there, as before
    bare = _table(mod)
    bare.add(mod.OpPlan(2, [([6], torch.float32)], [], 2, False, [0, 1, 2]), x, y)
    assert mod.call(bare, xr, y) is _native.MISS


def test_native_op_describes_again_once_the_python_backward_compiled_its_kernels():
    """NativeOp: the first call wanting a gradient runs the native forward and the Python
    backward (standing for the path that compiles the backward's kernels); the next call
    describes its signature again and, its backward now described, runs the plan's own."""
    _module()
    described = []

    def describe(options, x):
        ready = bool(described)  # the backward's kernels "compiled" by the first backward
        described.append(ready)
        S = _native.Slot
        return _native.plan((x,), [(x.shape, x.dtype)], [], S(1), saved=[S(0)],
                            backward=[] if ready else None, grads=[_native.GRAD_DY])

    op = _native.NativeOp("TestStaleBackward", describe,
                          lambda options: lambda dy, x: (dy * 2,))
    x = torch.randn(5, requires_grad=True)
    dy = torch.randn(5)
    for step, python in enumerate((True, False, False)):
        out = op(("opt",), x)
        assert out is not None and out.grad_fn.name() == "TestStaleBackward"
        x.grad = None
        out.backward(dy)
        torch.testing.assert_close(x.grad, dy * 2 if python else dy, rtol=0, atol=0)
    assert described == [False, True]  # described twice: first call, then after the backward
    op(("opt",), x).backward(dy)  # the plan's own backward: nothing stale
    assert described == [False, True] and not op.stale


def test_native_op_describes_again_until_the_backward_is_described_a_few_times_at_most():
    """A backward that needs two Python runs before its plan can describe it (an autotuned
    launch) still joins the plan; a signature whose plan never gets one stops being
    described again after PYTHON_BACKWARDS Python backwards (no description every step), and
    `clear()` starts the count again."""
    _module()
    described, ready_after = [], {"n": 2}

    def describe(options, x):
        ready = len(described) >= ready_after["n"]
        described.append(ready)
        S = _native.Slot
        return _native.plan((x,), [(x.shape, x.dtype)], [], S(1), saved=[S(0)],
                            backward=[] if ready else None, grads=[_native.GRAD_DY])

    op = _native.NativeOp("TestSlowBackward", describe, lambda options: lambda dy, x: (dy * 2,))
    x = torch.randn(5, requires_grad=True)
    dy = torch.randn(5)

    def step():
        x.grad = None
        op(("opt",), x).backward(dy)
        return torch.equal(x.grad, dy)  # the plan's own backward (dy), not the Python one

    assert [step() for _ in range(4)] == [False, False, True, True]
    assert described == [False, False, True]
    ready_after["n"] = 10 ** 9  # from now on no plan ever gets its backward
    op.clear()
    described.clear()
    assert not any(step() for _ in range(6))
    assert len(described) == 1 + _native.PYTHON_BACKWARDS  # the first, then one per run


def test_op_table_keeps_saved_outputs_without_a_cycle_and_checks_plans():
    import gc
    import weakref
    mod = _module()
    grads = mod.GRADS
    x = torch.randn(5, requires_grad=True)
    table = _table(mod)
    table.add(mod.OpPlan(1, [([5], torch.float32)], [], 1, True, [1], [], [],
                         [(grads["dy"], 0)], [[5]]), x)
    out = mod.call(table, x)
    ref = weakref.ref(out)
    del out
    gc.collect()
    assert ref() is None  # the saved output does not keep itself alive
    with pytest.raises(ValueError, match="result must be an allocation"):
        mod.OpPlan(1, [([5], torch.float32)], [], 0)
    with pytest.raises(ValueError, match="gradient slot"):
        mod.OpPlan(1, [([5], torch.float32)], [], 1, True, [], [], [], [(grads["slot"], 0)],
                   [[5]])
    launch = mod.Launch("k", 0, [1, 1, 1], 32, 0, [mod.KINDS["slot"]], [3])
    with pytest.raises(ValueError, match="out of range"):
        mod.OpPlan(1, [([5], torch.float32)], [launch], 1)
    with pytest.raises(ValueError, match="CUDA"):
        table.add(mod.OpPlan(1, [([5], torch.float32)],
                             [mod.Launch("k", 0, [1, 1, 1], 32, 0, [], [])], 1), x)
    # meeting counters (the split attention forward's): a 1-d int32 allocation, not the
    # result, of a forward that launches something
    bare = mod.Launch("k", 0, [1, 1, 1], 32, 0, [], [])
    counted = [([5], torch.float32), ([3], torch.int32)]
    mod.OpPlan(1, counted, [bare], 1, counters_alloc=1)
    for allocs, forward, which in ((counted, [bare], 0), (counted, [bare], 2),
                                   (counted, [], 1), ([([5], torch.float32), ([3, 1],
                                                       torch.int32)], [bare], 1)):
        with pytest.raises(ValueError, match="counters must be"):
            mod.OpPlan(1, allocs, forward, 1, counters_alloc=which)
    with pytest.raises(ValueError, match="counters must be"):
        mod.OpPlan(1, [([3], torch.int32)], [bare], 1, counters_alloc=0)  # the result


def test_native_ops_stay_off_on_the_simulator():
    """On the CPU backend the ops never build or ask the native module."""
    from tritonlab import backend
    from tritonlab.kernels import elementwise, rowsum, softmax
    if backend.DEVICE == "cuda":
        pytest.skip("the CUDA backend")
    from tritonlab.kernels import attention
    for op in (elementwise._add_native, elementwise._gelu_native, softmax._native_softmax,
               rowsum._native_row_sum):
        assert not op.enabled and op((1024,), torch.randn(4)) is None and not op.tables
    q = torch.randn(1, 2, 16, 16)
    out = attention.flash_attention(q, q, q)
    assert type(out.grad_fn).__name__ != "TritonlabFlashAttentionBackward"
    assert not attention._native_attention.enabled and not attention._native_attention.tables


def _native_cases():
    from tritonlab.kernels import elementwise as ew
    from tritonlab.kernels import rowsum, softmax
    return {
        "add": (ew.add, lambda a, b: ew.add_op.custom_op(a, b, 1024), 2),
        "gelu": (ew.gelu, lambda a: ew.gelu_op.custom_op(a, 1024), 1),
        "silu": (ew.silu, lambda a: ew.silu_op.custom_op(a, 1024), 1),
        "softmax": (softmax.softmax,
                    lambda a: softmax.softmax_op.custom_op(a, -1, None, None, None), 1),
        "softmax online": (lambda a: softmax.softmax(a, variant="online"),
                           lambda a: softmax.softmax_op.custom_op(a, -1, "online", None, None),
                           1),
        "row_sum": (rowsum.row_sum, lambda a: rowsum.row_sum_op.custom_op(a, None), 1),
    }


@gpu
@needs_cuda
@pytest.mark.parametrize("case", ["add", "gelu", "silu", "softmax", "softmax online",
                                  "row_sum"])
@pytest.mark.parametrize("shape,dtype", [((4096,), torch.float32), ((64, 4096), torch.bfloat16),
                                         ((3, 5, 1000), torch.float16),
                                         ((7, 33), torch.float32)])
def test_native_op_matches_the_registered_op(case, shape, dtype):
    """Forward without and with a gradient, and the backward, bit for bit the registered op's
    (the same kernels), with the native node recording the step once the kernels ran."""
    _module()
    ours, registered, arity = _native_cases()[case]
    gen = torch.Generator(device="cuda").manual_seed(4)
    inputs = [torch.randn(shape, generator=gen, device="cuda", dtype=dtype)
              for _ in range(arity)]
    want = registered(*inputs)
    dy = torch.randn(want.shape, generator=gen, device="cuda", dtype=dtype)

    def step(fn):
        leaves = [t.clone().requires_grad_() for t in inputs]
        out = fn(*leaves)
        return out, torch.autograd.grad(out, leaves, dy), out.grad_fn.name()

    for _ in range(3):  # the first calls compile through Triton and describe the plan
        got = ours(*inputs)
        out, grads, name = step(ours)
    assert name.startswith("Tritonlab") and name.endswith("Backward") and "Function" not in name
    ref_out, ref_grads, _ = step(registered)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=0)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@gpu
@needs_cuda
def test_native_ops_decline_what_they_were_not_planned_for():
    """Misaligned, non-contiguous, broadcast and mixed inputs take the Python path with its
    results and errors; create_graph: GeLU's second order raises as the registered op's,
    add's and row_sum's work; a CUDA graph captures a native step."""
    from tritonlab.kernels import elementwise as ew
    from tritonlab.kernels import rowsum
    _module()
    x = torch.randn(64, 256, device="cuda")
    for _ in range(3):
        ew.gelu(x.requires_grad_(False).clone().requires_grad_()).sum().backward()
    buf = torch.empty(x.numel() + 1, device="cuda")
    odd = buf[1:].view(x.shape).copy_(x)
    torch.testing.assert_close(ew.gelu(odd), ew.gelu(x), rtol=0, atol=0)
    torch.testing.assert_close(ew.gelu(x.t()), ew.gelu(x).t(), rtol=0, atol=0)
    torch.testing.assert_close(ew.add(x, x[0]), x + x[0], rtol=0, atol=0)
    with pytest.raises(TypeError, match="dtypes differ"):
        ew.add(x, x.half())
    with pytest.raises(TypeError, match="dtype"):
        ew.gelu(x.int())
    xr = x.clone().requires_grad_()
    (g,) = torch.autograd.grad(ew.gelu(xr), xr, torch.ones_like(x), create_graph=True)
    with pytest.raises(NotImplementedError, match="double backward"):
        g.sum().backward()
    for _ in range(3):
        y = rowsum.row_sum(xr)
    assert y.grad_fn.name() == "TritonlabRowSumBackward"
    (g,) = torch.autograd.grad(y, xr, torch.ones(64, device="cuda"), create_graph=True)
    (gg,) = torch.autograd.grad((g * xr).sum(), xr)
    torch.testing.assert_close(gg, torch.ones_like(x), rtol=0, atol=0)

    xs = x.clone().requires_grad_()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        ew.silu(xs).sum().backward()
    torch.cuda.current_stream().wait_stream(side)
    xs.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ew.silu(xs)
        y.backward(torch.ones_like(y))
    assert y.grad_fn.name() == "TritonlabSiluBackward"
    xs.grad.zero_()
    graph.replay()
    torch.cuda.synchronize()
    ref = x.clone().requires_grad_()
    ew.silu_op.custom_op(ref, 1024).backward(torch.ones_like(x))
    torch.testing.assert_close(xs.grad, ref.grad, rtol=0, atol=0)


@gpu
@needs_cuda
@pytest.mark.parametrize("activation", ["none", "relu", "gelu"])
@pytest.mark.parametrize("m,k,n,dtype", [(48, 40, 56, torch.float32),
                                         (256, 256, 256, torch.bfloat16),
                                         (100, 64, 72, torch.float16)])
def test_native_matmul_matches_the_registered_op(activation, m, k, n, dtype):
    """The pointer kernel's product and its three backward launches, bit for bit the
    registered op's; a frozen b gets no gradient (its launch skipped); without an activation
    the gradient's own gradient works (create_graph through the registered op)."""
    from tritonlab.kernels import matmul as mm
    _module()
    gen = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randn(m, k, generator=gen, device="cuda", dtype=dtype)
    b = torch.randn(k, n, generator=gen, device="cuda", dtype=dtype)
    dc = torch.randn(m, n, generator=gen, device="cuda", dtype=dtype)

    def step(fn, frozen=False):
        ar, br = a.clone().requires_grad_(), b.clone().requires_grad_(not frozen)
        c = fn(ar, br)
        c.backward(dc)
        return c, ar.grad, br.grad, c.grad_fn.name()

    ours = lambda x, y: mm.matmul(x, y, activation)  # noqa: E731
    registered = lambda x, y: mm.matmul_op.custom_op(x, y, activation, None)  # noqa: E731
    for _ in range(3):
        got = ours(a, b)
        c, da, db, name = step(ours)
    assert name == "TritonlabMatmulBackward"
    c_ref, da_ref, db_ref, _ = step(registered)
    for x, y in ((got, c_ref), (c, c_ref), (da, da_ref), (db, db_ref)):
        torch.testing.assert_close(x, y, rtol=0, atol=0)
    _, da_frozen, db_frozen, name = step(ours, frozen=True)
    assert name == "TritonlabMatmulBackward" and db_frozen is None
    torch.testing.assert_close(da_frozen, da_ref, rtol=0, atol=0)
    if activation == "none":
        ar, br = a.clone().requires_grad_(), b.clone().requires_grad_()
        (ga,) = torch.autograd.grad(ours(ar, br), ar, dc, create_graph=True)
        (gb,) = torch.autograd.grad(ga.float().sum(), br)  # d/db sum(dc @ b^T) = colsum(dc)
        torch.testing.assert_close(gb.float(), dc.float().sum(0).unsqueeze(0).expand(k, n),
                                   rtol=2e-2, atol=2e-2)


@gpu
@needs_cuda
@pytest.mark.parametrize("shape,dtype", [((64, 4096), torch.float32),
                                         ((3, 7, 1000), torch.bfloat16),
                                         ((2, 40000), torch.float16)])
def test_native_rmsnorm_forward_without_gradient(shape, dtype):
    """A call that wants no gradient: the forward kernel from C++ with the call's eps, bit for
    bit the registered op's."""
    _module()
    x, g, _ = _inputs(shape, dtype, seed=6)
    for eps in (1e-6, 0.5):
        for _ in range(3):
            got = rn.rmsnorm(x, g, eps)
        want = rn.rmsnorm_op.custom_op(x, g, eps)[0]
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert len(rn._native_forward_only.tables) == 2


def test_op_table_declines_while_a_launch_hook_listens():
    """A profiler listening to Triton's launches (a hook chain holding a hook, or a bare hook)
    sends calls to the Python path, whose launches Triton reports."""
    from types import SimpleNamespace
    mod = _module()
    x = torch.randn(8)
    knobs = SimpleNamespace(launch_enter_hook=SimpleNamespace(calls=[]), launch_exit_hook=None)
    table = mod.OpTable("TestBackward", None, None, knobs, _native.MISS)
    table.add(mod.OpPlan(1, [([8], torch.float32)], [], 1), x)
    assert mod.call(table, x) is not None
    knobs.launch_enter_hook.calls.append(print)
    assert mod.call(table, x) is None
    knobs.launch_enter_hook, knobs.launch_exit_hook = None, print
    assert mod.call(table, x) is None
    knobs.launch_exit_hook = None
    assert mod.call(table, x) is not None


def _same_grads(grads, want, one_pass):
    """Attention's (dQ, dK, dV) as `want`'s bit for bit, but for dQ where the one-pass
    backward ran ("atomic": each key tile's share of dQ added with atomics, in an order, so
    with roundings, that differ from run to run): within a hundredth of its largest value."""
    for i, (x, y) in enumerate(zip(grads, want)):
        if x is None:  # a gradient not asked for
            continue
        if i == 0 and one_pass:
            torch.testing.assert_close(x.float(), y.float(), rtol=0,
                                       atol=1e-2 * y.float().abs().max().item())
        else:
            torch.testing.assert_close(x, y, rtol=0, atol=0)


@gpu
@needs_cuda
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape,dtype", [((1, 1, 1024, 64), torch.float16),
                                         ((2, 3, 100, 32), torch.bfloat16),
                                         ((2, 77, 40), torch.float32),
                                         ((1, 1, 4096, 64), torch.bfloat16),
                                         ((1, 2, 256, 128), torch.bfloat16)])
def test_native_attention_matches_the_function(shape, dtype, causal):
    """Host-bound attention (the pointer kernels: the untuned sizes, and the autotuned ones
    up to host_bound_upto, 1x1x4096x64 here, which launch the autotuner's choice): forward
    without and with a gradient and the backward's launches (D, then dK/dV and dQ: d = 128
    on Hopper; up to d = 64 there the one pass and, in 16 bits, dQ's cast), bit for bit the
    Function's but for the one pass's dQ (_same_grads), the plan's own backward running from
    the third step at the latest (fewer Python backwards than PYTHON_BACKWARDS, which a plan
    that never had one would reach); a frozen q skips the dQ launch (the cast); the
    gradient's own gradient raises as the registered backward op's."""
    from tritonlab.kernels import attention as fa
    _module()
    gen = torch.Generator(device="cuda").manual_seed(7)
    q, k, v, do = (torch.randn(shape, generator=gen, device="cuda", dtype=dtype)
                   for _ in range(4))

    def step(fn, frozen_q=False):
        leaves = [t.clone().requires_grad_(not (frozen_q and i == 0))
                  for i, t in enumerate((q, k, v))]
        o = fn(*leaves)
        o.backward(do)
        return o, [t.grad for t in leaves], o.grad_fn.name()

    ours = lambda a, b, c: fa.flash_attention(a, b, c, causal)  # noqa: E731
    function = lambda a, b, c: fa.FlashAttentionTriton.apply(a, b, c, causal)  # noqa: E731
    python_backwards = lambda: sum(fa._native_attention._python_backwards.values())  # noqa
    before = python_backwards()
    for _ in range(_native.PYTHON_BACKWARDS + 1):  # the first calls compile through Triton
        got = ours(q, k, v)                        # and describe the plan
        o, grads, name = step(ours)
    assert name == "TritonlabFlashAttentionBackward", fa._native_attention.why
    assert python_backwards() - before < _native.PYTHON_BACKWARDS, "no backward of its own"
    o_ref, grads_ref, ref_name = step(function)
    assert ref_name == "FlashAttentionTritonBackward"
    for x in (got, o):
        torch.testing.assert_close(x, o_ref, rtol=0, atol=0)
    _same_grads(grads, grads_ref, fa.backward_impl(q, None, k, v) == "atomic")
    _, frozen, _ = step(ours, frozen_q=True)
    assert frozen[0] is None
    _same_grads([None, *frozen[1:]], grads_ref, True)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    (gq,) = torch.autograd.grad(ours(*leaves), leaves[0], do, create_graph=True)
    with pytest.raises(NotImplementedError, match="flash_attention"):
        gq.float().sum().backward()


@gpu
@needs_cuda
def test_native_forward_wanting_a_gradient_before_any_backward_compiled():
    """A signature's forward that wants a gradient before its backward ever ran (a training
    step's first call, or forwards timed without a backward) takes the native forward, whose
    node runs the Python backward, which compiles the backward's kernels; the next call's
    plan has its own backward. Both give the Function's outputs and gradients, bit for bit
    (dQ as _same_grads says)."""
    from tritonlab.kernels import attention as fa
    _module()
    gen = torch.Generator(device="cuda").manual_seed(11)
    shape = (1, 3, 333, 48)  # a signature no other test compiles
    q, k, v, do = (torch.randn(shape, generator=gen, device="cuda", dtype=torch.float16)
                   for _ in range(4))
    op = fa._native_attention
    ran = sum(op._python_backwards.values())
    fa.flash_attention(q, k, v, True)  # no gradient wanted: compiles the forward alone
    results = []
    for fn in (lambda *a: fa.flash_attention(*a, True),) * 2 + (
            lambda *a: fa.FlashAttentionTriton.apply(*a, True),):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        o = fn(*leaves)
        name = o.grad_fn.name()
        o.backward(do)
        results.append((name, o, [t.grad for t in leaves]))
    # the first is native with the Python backward; the second native with its own
    assert [r[0] for r in results] == ["TritonlabFlashAttentionBackward"] * 2 + [
        "FlashAttentionTritonBackward"], op.why
    assert sum(op._python_backwards.values()) == ran + 1
    _, o_ref, grads_ref = results[-1]
    for _, o, grads in results[:-1]:
        torch.testing.assert_close(o, o_ref, rtol=0, atol=0)
        _same_grads(grads, grads_ref, fa.backward_impl(q, None, k, v) == "atomic")


@gpu
@needs_cuda
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("combine", ["last", "kernel"])
def test_native_split_attention_matches_the_function(causal, combine, monkeypatch):
    """With a tuning that splits few-program forwards (split_programs_below), the default
    forward of 1x1x1024x64 is the split one, and its native plan (the shares, their
    combination by the last share, its counters kept zero, or by a second kernel; two
    partials) gives the Function's outputs and gradients, bit for bit (dQ as _same_grads
    says)."""
    import dataclasses

    from tritonlab.kernels import attention as fa
    _module()
    t = dataclasses.replace(fa.tuning_for("attention", torch.cuda.current_device()),
                            split_programs_below=132, split_combine=combine)
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: t)
    monkeypatch.setattr(fa._native_attention, "tables", {})  # no plan of the default tuning
    from tritonlab.kernels import _launch
    monkeypatch.setattr(_launch, "_SCRATCH", {})  # this test's scratch alone
    gen = torch.Generator(device="cuda").manual_seed(5)
    q, k, v, do = (torch.randn(1, 1, 1024, 64, generator=gen, device="cuda",
                               dtype=torch.float16) for _ in range(4))
    assert fa.forward_impl(q, k, v) == "split" and fa.fwd_splits(1, 1, 1024, 1024, 64, t) == 4

    def step(fn, scale=1.0):
        leaves = [x.clone().requires_grad_() for x in (q * scale, k, v)]
        o = fn(*leaves)
        o.backward(do)
        return o, [x.grad for x in leaves], o.grad_fn.name()

    for scale in (0.5, 2.0, 1.0):  # other inputs first: a stale O would not pass
        o, grads, name = step(lambda *a: fa.flash_attention(*a, causal), scale)
    assert name == "TritonlabFlashAttentionBackward", fa._native_attention.why
    o_ref, grads_ref, _ = step(lambda *a: fa.FlashAttentionTriton.apply(*a, causal))
    torch.testing.assert_close(o, o_ref, rtol=0, atol=0)
    _same_grads(grads, grads_ref, fa.backward_impl(q, None, k, v) == "atomic")
    # the Python path's counters, reused scratch, are zero again (the native plan's own are
    # checked by the three calls above: a count left behind would combine too early or never)
    kept = [b for key, b in _launch._SCRATCH.items() if key[0] == "attention split"]
    assert len(kept) == (combine == "last") and not any(b.any() for b in kept)


@gpu
@needs_cuda
def test_split_attention_last_share_combines_as_the_kernel_does_under_load(monkeypatch):
    """Many query blocks in 16 shares each (programs beyond what the GPU holds at once, so
    that shares of one block finish far apart): the last share's combination gives the
    second kernel's O and L bit for bit on every one of 20 launches, and leaves its counters
    zero. Both run one fixed tile: the autotuner (this size is above Hopper's tune_above)
    times the two kernels apart and may choose each a different one, whose shares cut the
    keys elsewhere (other roundings, as on the H100 of 2026-12-07)."""
    import dataclasses

    from tritonlab.kernels import _launch
    from tritonlab.kernels import attention as fa
    base = dataclasses.replace(fa.tuning_for("attention", torch.cuda.current_device()),
                               split_programs_below=1 << 30, split_min_keys=1,
                               max_splits=16)
    tiles = base.configs("fwd", 64)[0]  # (BLOCK_M, BLOCK_N, warps, stages)
    monkeypatch.setattr(_launch, "_SCRATCH", {})
    gen = torch.Generator(device="cuda").manual_seed(7)
    q, k, v = (torch.randn(2, 48, 1024, 64, generator=gen, device="cuda",
                           dtype=torch.float16) for _ in range(3))
    results = {}
    for combine in ("kernel", "last"):
        t = dataclasses.replace(base, split_combine=combine)
        monkeypatch.setattr(fa, "tuning_for", lambda kind, device, t=t: t)
        assert fa.fwd_splits(2, 48, 1024, 1024, 64, t, asked=True) == 16
        results[combine] = [fa.attention_forward(q, k, v, causal, tiles=tiles, impl="split")
                            for causal in (False, True)]
    for _ in range(20):
        for causal, want in zip((False, True), results["kernel"]):
            got = fa.attention_forward(q, k, v, causal, tiles=tiles, impl="split")
            for x, y in zip(got, want):
                torch.testing.assert_close(x, y, rtol=0, atol=0)
    kept = [b for key, b in _launch._SCRATCH.items() if key[0] == "attention split"]
    assert len(kept) == 1 and not kept[0].any()


@gpu
@needs_cuda
@pytest.mark.parametrize("combine", ["last", "kernel"])
def test_split_attention_in_a_cuda_graph(combine, monkeypatch):
    """A CUDA graph captures the split forward and backward (the native plan, its counters
    made and zeroed inside the capture when the last share combines) and the Python path's
    forward; three replays on new inputs copied in give the eager results bit for bit each
    time (dQ as _same_grads says where the one pass ran): the shares' partials, the
    counters and the combination replay as captured."""
    import dataclasses

    from tritonlab.kernels import attention as fa
    _module()
    t = dataclasses.replace(fa.tuning_for("attention", torch.cuda.current_device()),
                            split_programs_below=132, split_combine=combine)
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: t)
    monkeypatch.setattr(fa._native_attention, "tables", {})
    gen = torch.Generator(device="cuda").manual_seed(11)
    shape = (1, 2, 1024, 64)
    ins = [[torch.randn(shape, generator=gen, device="cuda", dtype=torch.float16)
            for _ in range(4)] for _ in range(3)]
    assert fa.forward_impl(*ins[0][:3]) == "split"

    def eager(q, k, v, do):
        leaves = [x.clone().requires_grad_() for x in (q, k, v)]
        o = fa.flash_attention(*leaves, True)
        o.backward(do)
        return [o.detach(), *(x.grad for x in leaves),
                *fa.attention_forward(q, k, v, False, impl="split")]

    wants = [eager(*x) for x in ins]
    static = [x.clone() for x in ins[0]]
    leaves = [x.clone().requires_grad_() for x in static[:3]]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm the capture's allocations
        fa.flash_attention(*leaves, True).backward(static[3])
        fa.attention_forward(*static[:3], False, impl="split")
    torch.cuda.current_stream().wait_stream(side)
    for x in leaves:
        x.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o = fa.flash_attention(*leaves, True)
        o.backward(static[3])
        outs = fa.attention_forward(*static[:3], False, impl="split")
    assert o.grad_fn.name() == "TritonlabFlashAttentionBackward", fa._native_attention.why
    for new, want in zip(ins[::-1], wants[::-1]):
        with torch.no_grad():
            for s, n, leaf in zip(static, new, leaves + [None]):
                s.copy_(n)
                if leaf is not None:
                    leaf.copy_(n)
                    leaf.grad.zero_()
        graph.replay()
        torch.cuda.synchronize()
        for got, w in zip([o, *outs], [want[0], *want[4:]]):
            torch.testing.assert_close(got, w, rtol=0, atol=0)
        _same_grads([x.grad for x in leaves], want[1:4],
                    fa.backward_impl(static[0], None, static[1], static[2]) == "atomic")
