"""FlashAttention-2 (kernels/attention.py) and its tiled PyTorch reference against float64
PyTorch attention: O, L and dQ, dK, dV, on the active backend (minitriton here, real Triton on a
GPU machine), plus the assignment's saved-tensor contract, torch.compile, the race sanitizer on
the dQ variants, and the traffic the tiles imply. GPU-only cases (bigger shapes, against SDPA)
carry the `gpu` marker. The faster variants (TMA forward, one-pass backward) have their own file,
test_attention_variants.py; the tests here that count a kernel's traffic name the baseline's."""
import dataclasses
import math
import types

import pytest
import torch

import minitriton
from torch_references import ATTENTION_TOLERANCES, DEV, DTYPES, rand, rel_err
from tritonlab import backend
from tritonlab.kernels import attention as fa
from tritonlab.kernels import attention_reference as far
from tritonlab.kernels import tuning



def inputs(b, n_q, n_k, d, dtype=torch.float32, heads=None, seed=0):
    """q (b, [heads,] n_q, d), k and v (.., n_k, d) and a dO, seeded, requiring grad."""
    lead = (b,) if heads is None else (b, heads)
    q = rand(*lead, n_q, d, dtype=dtype, seed=seed).requires_grad_()
    k = rand(*lead, n_k, d, dtype=dtype, seed=seed + 1).requires_grad_()
    v = rand(*lead, n_k, d, dtype=dtype, seed=seed + 2).requires_grad_()
    return q, k, v, rand(*lead, n_q, d, dtype=dtype, seed=seed + 3)


def reference(q, k, v, do, causal, scale=None):
    """float64 (O, L, dQ, dK, dV); causal keeps key j for query i when i >= j."""
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(-1, -2) * scale
    if causal:
        keep = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    o = torch.softmax(s, -1) @ v
    o.backward(do.double())
    return o.detach(), torch.logsumexp(s, -1).detach(), q.grad, k.grad, v.grad


def run(q, k, v, do, causal, scale=None):
    """(O, L, dQ, dK, dV) through flash_attention and autograd; L from the Function's saved
    tensors, or, where the call took the native path (a C++ node: small problems on a GPU),
    from the forward."""
    o = fa.flash_attention(q, k, v, causal, scale)
    saved = getattr(o.grad_fn, "saved_tensors", None)
    lse = saved[0] if saved is not None else fa.attention_forward(
        q.detach(), k.detach(), v.detach(), causal, scale)[1]
    o.backward(do)
    return o, lse, q.grad, k.grad, v.grad


def assert_matches(got, want, dtype):
    """Norm-relative errors within ATTENTION_TOLERANCES; a reference whose RMS is under 0.1 (the dQ of a
    query that sees one key is exactly 0) is measured against RMS 0.1 instead, about the size
    of the terms that cancel in it (the inputs are unit normal)."""
    for name, g, w in zip(("O", "L", "dQ", "dK", "dV"), got, want):
        assert g.shape == w.shape, name
        g, w = g.double(), w.double()
        err = ((g - w).norm() / max(w.norm().item(), 0.1 * w.numel() ** 0.5)).item()
        assert err < ATTENTION_TOLERANCES[dtype], f"{name}: relative error {err:.2e}"


# (batch, n_queries, n_keys, head dim): whole tiles; tails in both sequences with Nq < Nk;
# Nq > Nk (causal: the last queries see every key); one query row; a non-power-of-two head
# dim (padded to 64 with masks)
SHAPES = [(1, 32, 32, 16), (2, 47, 61, 32), (2, 80, 33, 64), (1, 1, 20, 32), (1, 20, 20, 48)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_values_lse_and_gradients(shape, dtype, causal):
    q, k, v, do = inputs(*shape, dtype=dtype)
    got = run(q, k, v, do, causal)
    assert got[0].dtype == dtype and got[1].dtype == torch.float32
    assert all(g.dtype == dtype for g in got[2:])
    assert_matches(got, reference(q, k, v, do, causal), dtype)


# every power-of-two head dim 16..128 and two more that pad (80 -> 128, 24 -> 32)
@pytest.mark.parametrize("d", [16, 32, 64, 128, 80, 24])
def test_head_dims(d):
    q, k, v, do = inputs(1, 40, 24, d, dtype=torch.float16)
    assert_matches(run(q, k, v, do, True), reference(q, k, v, do, True), torch.float16)


@pytest.mark.parametrize("causal", [False, True])
def test_both_executors(causal, executor):
    q, k, v, do = inputs(2, 37, 45, 32)
    assert_matches(run(q, k, v, do, causal), reference(q, k, v, do, causal), torch.float32)


@pytest.mark.parametrize("causal", [False, True])
def test_four_d_layout_and_strided_inputs(causal):
    """(batch, heads, seq, d), as views of (batch, seq, heads, d) tensors (the layout after a
    fused QKV projection): every stride differs from the contiguous one; v is also a slice of
    a wider last dimension, k every other row of a longer sequence."""
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 33, 3, 32, generator=g).to(DEV).transpose(1, 2).requires_grad_()
    k_wide = torch.randn(2, 50, 3, 32, generator=g).to(DEV)
    k = k_wide.transpose(1, 2)[:, :, ::2].detach().requires_grad_()
    v = torch.randn(2, 3, 25, 48, generator=g).to(DEV)[..., 8:40].detach().requires_grad_()
    do = torch.randn(2, 3, 33, 64, generator=g).to(DEV)[..., ::2]
    assert not any(t.is_contiguous() for t in (q, k, v, do))
    got = run(q, k, v, do, causal)
    assert got[1].shape == (2, 3, 33)
    assert_matches(got, reference(q, k, v, do, causal), torch.float32)


def test_assignment_saved_tensor_contract():
    """The assignment's test: O is what .apply returned (its grad_fn is the Function's), and
    exactly one saved tensor has shape (batch, n_queries): L, fp32, the logsumexp of the
    scaled scores; Q, K, V and O are saved too."""
    q, k, v, _ = inputs(4, 48, 48, 32)
    o = fa.FlashAttentionTriton.apply(q, k, v, True)
    assert type(o.grad_fn).__name__ == "FlashAttentionTritonBackward"
    saved = o.grad_fn.saved_tensors
    lse = [t for t in saved if t.shape == (4, 48)]
    assert len(lse) == 1 and lse[0].dtype == torch.float32
    _, want, *_ = reference(q, k, v, torch.zeros_like(q), True)
    assert rel_err(lse[0], want) < ATTENTION_TOLERANCES[torch.float32]
    ptrs = {t.data_ptr() for t in saved}
    assert {q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr()} <= ptrs
    o2 = fa.flash_attention(q, k, v)  # the public function: the Function's output itself,
    # or on a GPU, once this signature's kernels ran, the native path's C++ node (test_native)
    names = {"FlashAttentionTritonBackward"} | ({"TritonlabFlashAttentionBackward"}
                                                if q.is_cuda else set())
    assert type(o2.grad_fn).__name__ in names


def test_module_scale_and_empty_queries():
    q, k, v, do = inputs(1, 20, 30, 16)
    module = fa.FlashAttention(causal=True, scale=0.3)
    assert "causal=True" in repr(module)
    o = module(q, k, v)
    o.backward(do)
    want = reference(q, k, v, do, True, scale=0.3)
    assert rel_err(o, want[0]) < 5e-3 and rel_err(q.grad, want[2]) < 5e-3
    empty = fa.flash_attention(q[:, :0].detach(), k, v)
    assert empty.shape == (1, 0, 16)


@pytest.mark.parametrize("fwd,dkdv,dq", [
    ((16, 16, 4, 1), (16, 16, 4, 1), (16, 16, 4, 1)),  # square tiles: one diagonal tile
    ((64, 16, 4, 1), (16, 64, 4, 1), (64, 16, 4, 1)),  # 4 steps cross the diagonal
    ((32, 32, 4, 1), (16, 32, 4, 1), (32, 16, 4, 1))])
def test_other_tiles(fwd, dkdv, dq):
    """The causal loop bounds for other tile shapes (each tile a multiple of the step)."""
    q, k, v, do = inputs(2, 70, 53, 32)
    o, lse = fa.attention_forward(q, k, v, True, tiles=fwd, impl="pointers")
    dqs = fa.attention_backward(do, q, k, v, o, lse, True, tiles={"dkdv": dkdv, "dq": dq},
                                impl="two-kernel")
    assert_matches((o, lse, *dqs), reference(q, k, v, do, True), torch.float32)


def test_causal_skips_the_tiles_above_the_diagonal():
    """Loop bounds, not masks: for N = 128 in 16 x 16 tiles a causal forward runs 36 of the 64
    tile pairs (8 * 9 / 2), each two tl.dot calls, and reads K and V 36 tiles' worth."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    q, k, v, _ = (t.detach().cpu() for t in inputs(1, 128, 128, 16))
    counts = {}
    for causal in (False, True):
        with minitriton.record() as rec:
            sim.attention_forward(q, k, v, causal, tiles=(16, 16, 4, 1), impl="pointers")
        counts[causal] = rec[0]
    per_pair = 2 * (2 * 16 * 16 * 16)
    assert counts[False].dot_flops == 64 * per_pair and counts[True].dot_flops == 36 * per_pair
    assert counts[True].args["k_ptr"].loaded == 36 * 16 * 16
    assert counts[False].args["v_ptr"].loaded == 64 * 16 * 16


def test_forward_traffic_is_the_tile_model():
    """What the lecture's table extrapolates (lectures/07): Q, O read and written once, K and V
    read once per query tile, L written once (non-causal, whole tiles)."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    n, d, bm = 96, 32, 32
    q, k, v, _ = (t.detach().cpu() for t in inputs(2, n, n, d))
    with minitriton.record() as rec:
        sim.attention_forward(q, k, v, tiles=(bm, 16, 4, 1), impl="pointers")
    a = rec[0].args
    assert a["q_ptr"].loaded == 2 * n * d and a["o_ptr"].stored == 2 * n * d
    assert a["k_ptr"].loaded == a["v_ptr"].loaded == 2 * (n // bm) * n * d
    assert a["lse_ptr"].stored == 2 * n


def test_naive_attention_and_the_tile_configs():
    """The naive three-kernel attention (lecture 07's comparison) computes attention and moves
    what naive_traffic says; every GPU config keeps the multiple-of rule the causal bounds use."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    q, k, v, do = (t.detach().cpu() for t in inputs(1, 64, 64, 32))
    with minitriton.record() as rec:
        o = sim.attention_naive(q, k, v)
    assert rel_err(o, reference(q, k, v, do, False)[0]) < ATTENTION_TOLERANCES[torch.float32]
    assert rec.elements_read + rec.elements_written == fa.naive_traffic(64, 32, 32, 32)
    for name in ("fwd", "dq", "dkdv"):
        for block_d in (64, 128):
            for bm, bn, _, _ in tuning.TUNINGS["attention"][9].configs(name, block_d):
                assert (bn % bm if name == "dkdv" else bm % bn) == 0, (name, bm, bn)


def test_sanitizers_atomic_clean_racy_caught(executor):
    """dQ inside the dK/dV kernel: with tl.atomic_add the race and padding sanitizers find
    nothing and dQ is right; with load-add-store the race sanitizer names the kernel and dQ."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    q, k, v, do = (t.detach().cpu() for t in inputs(2, 50, 70, 32))
    want = reference(q, k, v, do, True)
    o, lse = sim.attention_forward(q, k, v, True)
    with minitriton.configure(races=True, padding=True):
        for impl in ("two-kernel", "atomic"):
            dq, dk, dv = sim.attention_backward(do, q, k, v, o, lse, True, impl=impl)
            assert max(rel_err(a, b) for a, b in zip((dq, dk, dv), want[2:])) < 5e-3
        with pytest.raises(minitriton.RaceError, match="attn_bwd_dkdv_kernel.*\n.*\n.*dq_ptr"):
            sim.attention_backward_racy(do, q, k, v, o, lse, True)


def test_racy_dq_loses_updates_in_lockstep_only():
    """Without the sanitizer the racy dQ is right one program at a time and wrong when programs
    run together, as on a GPU (four key tiles, four programs adding into the same rows)."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    q, k, v, do = (t.detach().cpu() for t in inputs(1, 32, 64, 16))
    o, lse = sim.attention_forward(q, k, v)
    want = reference(q, k, v, do, False)[2]
    errors = {}
    for executor in ("sequential", "lockstep"):
        with minitriton.configure(executor=executor):
            dq = sim.attention_backward_racy(do, q, k, v, o, lse, tiles={"dkdv": (16, 16, 4, 1)})[0]
        errors[executor] = rel_err(dq, want)
    assert errors["sequential"] < 5e-3 < errors["lockstep"]


@pytest.mark.parametrize("causal", [False, True])
def test_tiled_torch_reference(causal):
    """FlashAttentionTorch (the assignment's first part): same contract, float64 exact."""
    q, k, v, do = inputs(2, 45, 37, 16, dtype=torch.float64, heads=2)
    o = far.FlashAttentionTorch.apply(q, k, v, causal)
    lse = o.grad_fn.saved_tensors[0]
    o.backward(do)
    want = reference(q, k, v, do, causal)
    for got, w in zip((o, lse, q.grad, k.grad, v.grad), want):
        torch.testing.assert_close(got, w, rtol=1e-10, atol=1e-10)
    o32, lse32 = far.tiled_forward(q.float(), k.float(), v.float(), causal, tile_q=32, tile_k=8)
    assert lse32.dtype == torch.float32 and rel_err(o32, want[0]) < 1e-5


def test_torch_compile_without_graph_breaks():
    """torch.compile(FlashAttentionTriton.apply), as the assignment's leaderboard times it:
    one graph (fullgraph) through the custom ops, forward and backward."""
    q, k, v, do = inputs(1, 24, 40, 16)
    compiled = torch.compile(fa.FlashAttentionTriton.apply, backend="aot_eager", fullgraph=True)
    o = compiled(q, k, v, True)
    o.backward(do)
    assert_matches((o, fa.attention_forward(q, k, v, True)[1], q.grad, k.grad, v.grad),
                   reference(q, k, v, do, True), torch.float32)
    explanation = torch._dynamo.explain(fa.flash_attention)(q, k, v, True)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


def test_bad_inputs():
    q = rand(1, 8, 16)
    with pytest.raises(ValueError, match="agree in every dimension but the sequence"):
        fa.flash_attention(q, rand(1, 8, 32), rand(1, 8, 32))
    with pytest.raises(ValueError, match="k has 8 keys, v 9"):
        fa.flash_attention(q, rand(1, 8, 16), rand(1, 9, 16))
    with pytest.raises(TypeError, match="dtypes differ"):
        fa.flash_attention(q, q.half(), q)
    with pytest.raises(TypeError, match="float64; supported: float32, float16, bfloat16"):
        fa.flash_attention(q.double(), q.double(), q.double())
    with pytest.raises(ValueError, match="head dim 256 is not supported"):
        big = rand(1, 8, 256)
        fa.flash_attention(big, big, big)
    with pytest.raises(ValueError, match=r"expected \(batch, seq, d\)"):
        fa.flash_attention(q[0], q[0], q[0])
    with pytest.raises(ValueError, match="no keys"):
        fa.flash_attention(q, q[:, :0], q[:, :0])
    with pytest.raises(ValueError, match="is on meta"):
        fa.flash_attention(q, q.to("meta"), q)


# -- GPU only: the autotuned path at shapes the simulator cannot afford, against SDPA

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 4, 1024, 1024, 64), (1, 2, 2048, 2048, 128),
                                   (1, 3, 1000, 1531, 80), (1, 1, 4096, 4096, 32)])
def test_gpu_against_sdpa(shape, dtype, causal):
    """Shapes above the attention tuning's tune_above (autotuned) and below it, odd lengths,
    Nq != Nk, a padded head dim, against float64 math; SDPA (top-left causal needs Nq == Nk there) as a check on
    the reference."""
    b, h, n_q, n_k, d = shape
    q, k, v, do = inputs(b, n_q, n_k, d, dtype=dtype, heads=h)
    got = run(q, k, v, do, causal)
    want = reference(q, k, v, do, causal)
    assert_matches(got, want, dtype)
    if n_q == n_k:
        sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        assert rel_err(sdpa, want[0]) < ATTENTION_TOLERANCES[dtype]


@pytest.mark.gpu
def test_gpu_torch_compile_inductor():
    q, k, v, do = inputs(1, 2048, 2048, 64, dtype=torch.bfloat16, heads=4)
    compiled = torch.compile(fa.FlashAttentionTriton.apply, fullgraph=True)
    o = compiled(q, k, v, True)
    o.backward(do)
    assert_matches((o, fa.attention_forward(q, k, v, True)[1], q.grad, k.grad, v.grad),
                   reference(q, k, v, do, True), torch.bfloat16)


def test_untuned_gpu_launch_skips_configs_that_do_not_fit(monkeypatch):
    """The untuned GPU path (small problems) takes the first config of the head-dim class
    that fits the SM's shared memory: fp32 at d=128 overflows with the first 16-bit config
    (262144 > 232448 bytes on an H200). Emulated here: configs raising OutOfResources are
    skipped, the fitting one is remembered per (kernel, BLOCK_D, dtype), none fitting raises."""
    class OutOfResources(Exception):
        pass

    tried = []

    def fake_launch(kernel, grid_rows, n_zh, along, args, tiles, constexprs):
        tried.append(tiles)
        if tiles[0] * tiles[1] * tiles[3] > limit[0]:  # BM * BN * stages as the "bytes"
            raise OutOfResources()

    monkeypatch.setattr(fa, "_launch_tiles", fake_launch)
    monkeypatch.setattr(fa, "_FITS", {})
    errors = types.SimpleNamespace(OutOfResources=OutOfResources)
    monkeypatch.setattr(fa, "triton", types.SimpleNamespace(
        runtime=types.SimpleNamespace(errors=errors)))
    configs = tuning.TUNINGS["attention"][9].configs("fwd", 128)
    limit = [configs[2][0] * configs[2][1] * configs[2][3]]
    args = (torch.empty(1, dtype=torch.float32),)
    fa._first_fitting("fwd", None, 64, 1, "BLOCK_M", args, {"BLOCK_D": 128}, configs)
    fits = [c for c in configs if c[0] * c[1] * c[3] <= limit[0]][0]
    assert tried[-1] == fits and fa._FITS[("fwd", 128, torch.float32)] == configs.index(fits)
    tried.clear()
    fa._first_fitting("fwd", None, 64, 1, "BLOCK_M", args, {"BLOCK_D": 128}, configs)
    assert tried == [fits]  # remembered: no retry of the configs that did not fit
    limit[0] = 0
    monkeypatch.setattr(fa, "_FITS", {})
    with pytest.raises(RuntimeError, match="no fwd config"):
        fa._first_fitting("fwd", None, 64, 1, "BLOCK_M", args, {"BLOCK_D": 128}, configs)


def test_an_untuned_forward_of_few_programs_takes_the_smallest_query_tiles_first(monkeypatch):
    """On a GPU (emulated: 132 SMs) an untuned pointer forward of fewer programs than SMs at
    the first config's 128 queries tries the configs of 64 queries first (twice the programs,
    each walking its keys in about half the time), the others after them in the tuning's
    order; with as many programs as SMs, or for another kernel, or with the tuning's
    untuned_fwd_fill 0, the tuning's order. The Python path and the native plan's lookup
    (_kept_tiles) agree on the tiles."""
    t = tuning.TUNINGS["attention"][9]
    monkeypatch.setattr(fa, "sm_count", lambda device: 132)
    configs = t.configs("fwd", 64)
    assert configs[0][0] == 128
    few, reordered = fa._untuned_configs("fwd", configs, 1024, 1, 0, t)  # 8 programs
    assert reordered and {c[0] for c in few[:2]} == {64} and sorted(few) == sorted(configs)
    assert [c for c in few if c[0] == 128] == [c for c in configs if c[0] == 128]
    assert [c for c in few if c[0] == 64] == [c for c in configs if c[0] == 64]
    assert fa._untuned_configs("fwd", configs, 1024, 17, 0, t) == (configs, False)  # 136
    assert fa._untuned_configs("fwd", configs, 1024, 16, 0, t)[1]  # 128 programs
    assert not fa._untuned_configs("dq", t.configs("dq", 64), 1024, 1, 0, t)[1]
    off = dataclasses.replace(t, untuned_fwd_fill=0)
    assert fa._untuned_configs("fwd", configs, 1024, 1, 0, off) == (configs, False)

    launched = []
    monkeypatch.setattr(fa, "_launch_tiles", lambda *a: launched.append(a[5]))
    monkeypatch.setattr(fa, "_FITS", {})
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: t)
    args = (torch.empty(1, dtype=torch.bfloat16),)
    for n_zh, want in ((1, few[0]), (64, configs[0]), (1, few[0])):
        # work: batch*heads*Nq*Nk as _run reads it, here only under tune_above (untuned)
        fa._run("fwd", 1024, n_zh, t.tune_above, args, None, 0, torch.bfloat16, BLOCK_D=64)
        assert launched[-1] == want
        assert fa._kept_tiles("fwd", 0, torch.bfloat16, 1024, n_zh, t.tune_above,
                              {"BLOCK_D": 64}, t) == want


def test_a_second_order_gradient_raises_instead_of_being_zero():
    """create_graph=True works (the gradient itself is right and part of a graph), but its own
    gradient raises: the backward kernels have no derivative (a gradient penalty through
    attention would otherwise be silently 0)."""
    q, k, v = (rand(1, 2, 16, 16, seed=i).requires_grad_() for i in range(3))
    (g,) = torch.autograd.grad(fa.flash_attention(q, k, v).sum(), q, create_graph=True)
    (g_plain,) = torch.autograd.grad(fa.flash_attention(q, k, v).sum(), q)
    torch.testing.assert_close(g.detach(), g_plain)
    assert g.requires_grad
    with pytest.raises(NotImplementedError, match="double backward"):
        (g ** 2).sum().backward()
