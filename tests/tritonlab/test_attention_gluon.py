"""The Gluon forward (kernels/attention_gluon.py, `fwd_impl="gluon"`) against float64: O and L
on the active backend (minitriton's Gluon here, real Triton's on a Hopper GPU), under both
executors and the race sanitizer, its gradients through the backward, which inputs it takes
(and the default's fallback where it cannot), and on the GPU against SDPA at the speed rows'
shapes."""
import types

import pytest
import torch

import minitriton
from test_attention import assert_matches, inputs, reference
from torch_references import ATTENTION_TOLERANCES, DEV, rand
from tritonlab.kernels import attention as fa
from tritonlab.kernels import attention_gluon as fg
from tritonlab.kernels import tuning

SIM = DEV == "cpu"
DTYPES16 = [torch.float16, torch.bfloat16]
GLUON_BWD = ["gluon", "gluon-atomic"]  # the two kernels, the one pass
GLUON_WS_BWD = ["gluon-ws", "gluon-ws-atomic"]  # both warp-specialized (128 keys a program)
on_sim = pytest.mark.skipif(not SIM, reason="the simulator's tiles and executors")


def forward(q, k, v, causal, impl="gluon", **kw):
    return fa.attention_forward(q.detach(), k.detach(), v.detach(), causal, impl=impl, **kw)


@on_sim
@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("dtype", DTYPES16)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [
    (1, 2, 128, 64),   # two query tiles, four key tiles: the ring of 2 slots refilled
    (2, 64, 32),       # (batch, seq, d): one query tile; causal masks its two key tiles
    (1, 1, 192, 128),  # three query tiles: causal's longest-rows-first order
    (1, 1, 64, 16),    # the smallest head dim: 32-byte rows
])
def test_forward_against_float64(shape, dtype, causal):
    *lead, n, d = shape
    q, k, v, do = inputs(lead[0], n, n, d, dtype=dtype, heads=lead[1] if len(lead) > 1 else None)
    o, lse = forward(q, k, v, causal)
    want = reference(q, k, v, do, causal)
    assert_matches((o, lse), want[:2], dtype)


@on_sim
def test_the_race_sanitizer_passes_it():
    q, k, v, do = inputs(1, 128, 128, 64, dtype=torch.bfloat16, heads=2)
    with minitriton.configure(races=True, order=True):
        o, lse = forward(q, k, v, True)
    assert_matches((o, lse), reference(q, k, v, do, True)[:2], torch.bfloat16)


@on_sim
@pytest.mark.parametrize("causal", [False, True])
def test_the_overlap_schedule_too(causal):
    """FlashAttention-3's intra-warpgroup overlap (the probe's other schedule): S of the next
    tile issued with P V of this one, its softmax run while P V is in flight; 3 stages;
    causal, the diagonal's tiles masked in the loop after the free ones."""
    q, k, v, do = inputs(1, 128, 128, 64, dtype=torch.float16, heads=2)
    o, lse = torch.empty_like(q), torch.empty(q.shape[:-1])
    fg.forward(q.detach(), k.detach(), v.detach(), o, lse, causal, 64 ** -0.5,
               tiles=(64, 32, 4, 3), overlap=True)
    assert_matches((o, lse), reference(q, k, v, do, causal)[:2], torch.float16)


def ws_forward(q, k, v, causal, tiles=(128, 64, 4, 2), overlap=False, pingpong=False, ws=True,
               persistent=False):
    o, lse = torch.empty_like(q), torch.empty(q.shape[:-1], device=q.device)
    return fg.forward(q.detach(), k.detach(), v.detach(), o, lse, causal, q.shape[-1] ** -0.5,
                      tiles=tiles, ws=ws, overlap=overlap, pingpong=pingpong,
                      persistent=persistent)


@on_sim
@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("causal, overlap, pingpong", [
    (False, False, False), (True, False, False), (False, True, False), (False, False, True),
    (True, False, True), (False, True, True), (True, True, False), (True, True, True)])
@pytest.mark.parametrize("shape, tiles", [
    ((1, 2, 256, 64), (128, 64, 4, 2)),   # two programs, four key tiles through 2 slots
    ((1, 1, 128, 16), (128, 32, 4, 3)),   # one program: both consumers on every tile
])
def test_the_warp_specialized_forward(shape, tiles, causal, overlap, pingpong):
    """Two consumer partitions of 64 query rows each and a loader partition (warp_specialize:
    minitriton runs them as threads that switch at mbarrier waits), in the plain schedule (and
    with the consumers' S in turn: both waiting for a turn neither has passed would be the
    GPU's hang, a DeadlockError here) and the overlap one (with and without the turns: the
    whole of FlashAttention-3's consumer loop), against float64."""
    b, h, n, d = shape
    q, k, v, do = inputs(b, n, n, d, dtype=torch.bfloat16, heads=h)
    assert_matches(ws_forward(q, k, v, causal, tiles, overlap, pingpong),
                   reference(q, k, v, do, causal)[:2], torch.bfloat16)


@on_sim
@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("shape", [
    (2, 2, 256, 32),   # 8 query tiles on the simulator's 2 programs
    (1, 3, 128, 64),   # 3 on 2
])
def test_the_persistent_warp_specialized_forward(shape, overlap, causal):
    """Persistent: each program takes the next query tile nobody has taken (an atomic count
    the loader reads and posts to the consumers) until none is left; the rings' positions,
    the turns and Q's buffer carry on from one tile to the next, and O leaves through a
    buffer of its own while the next Q loads."""
    b, h, n, d = shape
    q, k, v, do = inputs(b, n, n, d, dtype=torch.float16, heads=h)
    got = ws_forward(q, k, v, causal, (128, 64, 4, 2), overlap, overlap, persistent=True)
    assert_matches(got, reference(q, k, v, do, causal)[:2], torch.float16)


@on_sim
def test_the_race_sanitizer_passes_the_warp_specialized_forward():
    q, k, v, do = inputs(1, 256, 256, 32, dtype=torch.float16, heads=1)
    for overlap in (False, True):  # the plain schedule, FlashAttention-3's consumer loop
        with minitriton.configure(races=True, order=True):
            got = ws_forward(q, k, v, True, overlap=overlap, pingpong=overlap)
        assert_matches(got, reference(q, k, v, do, True)[:2], torch.float16)
    q, k, v, do = inputs(2, 256, 256, 32, dtype=torch.float16, heads=2)
    with minitriton.configure(races=True, order=True):  # persistent: 8 tiles on 2 programs
        got = ws_forward(q, k, v, True, overlap=True, pingpong=True, persistent=True)
    assert_matches(got, reference(q, k, v, do, True)[:2], torch.float16)


@on_sim
@pytest.mark.parametrize("impl", ["gluon", "gluon-ws"])
def test_gradients_through_the_backward(impl):
    q, k, v, do = inputs(1, 128, 128, 32, dtype=torch.float16, heads=2)
    o = fa.flash_attention(q, k, v, True, None, impl)
    o.backward(do)
    o_ref, lse_ref, *grads = reference(q, k, v, do, True)
    assert_matches((o, q.grad, k.grad, v.grad), (o_ref, *grads), torch.float16)


def test_the_warp_specialized_forward_says_what_it_cannot_take():
    q = rand(1, 64, 64, dtype=torch.float16)  # fewer queries than a program's 128
    with pytest.raises(ValueError, match="impl='gluon-ws' cannot take .* forward tiles "
                                         "\\(128 queries a program"):
        fa.attention_forward(q, q, q, impl="gluon-ws")


@pytest.mark.parametrize("make, why", [
    (lambda: [rand(1, 128, 64)] * 3, "fp16 and bf16"),
    (lambda: [rand(1, 128, 64, dtype=torch.float16)] + [rand(1, 256, 64,
                                                              dtype=torch.float16)] * 2,
     "as many keys as queries"),
    (lambda: [rand(1, 100, 64, dtype=torch.float16)] * 3, "must divide the sequence length"),
    (lambda: [rand(1, 128, 48, dtype=torch.float16)] * 3, "power of two"),
    (lambda: [rand(1, 64, 128, dtype=torch.float16).transpose(1, 2)] * 3, "contiguous"),
])
def test_what_it_cannot_take_is_said(make, why):
    q, k, v = make()
    with pytest.raises(ValueError, match=why):
        fa.attention_forward(q, k, v, impl="gluon")


def test_the_default_falls_back_where_gluon_cannot(monkeypatch):
    """With "gluon" the tuning's default, inputs it cannot take run the TMA forward (and
    those TMA cannot, the pointer one); host-bound small problems keep the pointer kernel.
    gluon_min_waves 0 here: on a GPU these two programs are fewer than the Gluon forward's
    minimum (test_the_default_leaves_gluon_where_it_runs_few_programs)."""
    t = tuning.tuning_for("attention", None)
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: t.__class__(
        **{**t.__dict__, "fwd_impl": "gluon", "tune_above": 0, "host_bound_upto": 0,
           "gluon_min_waves": 0}))
    fp16 = rand(1, 2, 128, 64, dtype=torch.float16)
    assert fa.forward_impl(fp16, fp16, fp16) == ("gluon" if SIM or _hopper() else "tma")
    ragged = rand(1, 2, 100, 64, dtype=torch.float16)
    assert fa.forward_impl(ragged, ragged, ragged) == "tma"
    fp32 = rand(1, 2, 128, 64)
    assert fa.forward_impl(fp32, fp32, fp32) == "tma"
    narrow = rand(1, 2, 128, 20, dtype=torch.float16)  # rows of 40 bytes: not for TMA
    assert fa.forward_impl(narrow, narrow, narrow) == "pointers"


def _hopper():
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


@pytest.mark.gpu
@pytest.mark.skipif(not _hopper(), reason="Gluon's wgmma kernels are written for Hopper")
@pytest.mark.parametrize("dtype", DTYPES16)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 4, 1024, 64), (1, 2, 2048, 128), (1, 1, 4096, 32)])
def test_gpu_against_float64_and_sdpa(shape, dtype, causal):
    """The forward (O, L; SDPA as a check on the reference), then the backward."""
    b, h, n, d = shape
    q, k, v, do = inputs(b, n, n, d, dtype=dtype, heads=h)
    want = reference(q, k, v, do, causal)
    assert_matches(forward(q, k, v, causal), want[:2], dtype)
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert ((sdpa.double() - want[0]).norm() / want[0].norm()).item() < \
        ATTENTION_TOLERANCES[dtype]
    assert_matches(ws_forward(q, k, v, causal), want[:2], dtype)  # warp-specialized
    assert_matches(ws_forward(q, k, v, causal, pingpong=True), want[:2], dtype)
    # FlashAttention-3's consumer loop at the tuning's tiles, and its overlap without
    # specialization
    assert_matches(forward(q, k, v, causal, "gluon-ws"), want[:2], dtype)
    assert_matches(ws_forward(q, k, v, causal, (128, 64, 8, 3), overlap=True, ws=False),
                   want[:2], dtype)
    for bwd in (*GLUON_BWD, *GLUON_WS_BWD):
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        o = fa.flash_attention(*leaves, causal, None, "gluon", bwd)
        o.backward(do)
        assert_matches((o, *(t.grad for t in leaves)), (want[0], *want[2:]), dtype)

@pytest.mark.gpu
@pytest.mark.skipif(not _hopper(), reason="Gluon's wgmma kernels are written for Hopper")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_warp_specialized_backward(d, causal):
    q, k, v, do = inputs(2, 1024, 1024, d, dtype=torch.bfloat16, heads=4)
    got = ws_backward(q, k, v, do, causal, {"dkdv": (64, 128, 4, 2), "dq": (128, 64, 4, 2)})
    assert_matches(got, reference(q, k, v, do, causal)[2:], torch.bfloat16)


@pytest.mark.gpu
@pytest.mark.skipif(not _hopper(), reason="Gluon's wgmma kernels are written for Hopper")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_persistent_forward(d, causal):
    """FlashAttention-3's consumer loop persistent: 512 query tiles on one program per SM
    (132 on an H100 or H200), each taking the next tile nobody has, against float64."""
    q, k, v, do = inputs(4, 1024, 1024, d, dtype=torch.bfloat16, heads=16)
    got = ws_forward(q, k, v, causal, (128, 128, 4, 2), True, True, persistent=True)
    assert_matches(got, reference(q, k, v, do, causal)[:2], torch.bfloat16)


@pytest.mark.parametrize("impl, fallback", [("gluon", "two-kernel-tma"),
                                            ("gluon-ws", "two-kernel-tma"),
                                            ("gluon-atomic", "atomic-tma"),
                                            ("gluon-ws-atomic", "atomic-tma")])
def test_a_gluon_default_backward_falls_back_to_the_tl_one_of_its_plan(monkeypatch, impl,
                                                                        fallback):
    """A Gluon backward as the tuning's default runs where it can take the inputs; elsewhere
    (fp32, a sequence its programs do not divide) the tl backward of the same plan runs: the
    two kernels through TMA for the two-kernel ones, the one pass through TMA for the one
    passes."""
    t = tuning.tuning_for("attention", None)
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: t.__class__(
        **{**t.__dict__, "bwd_impl": impl, "bwd_impl_small": "", "bwd_fallback": "",
           "bwd_fallback_small": "", "tune_above": 0, "host_bound_upto": 0}))
    fp16 = rand(1, 2, 256, 64, dtype=torch.float16)
    assert fa.backward_impl(fp16, None, fp16, fp16) == (impl if SIM or _hopper() else fallback)
    for q in (rand(1, 2, 256, 64), rand(1, 2, 200, 64, dtype=torch.float16)):
        assert fa.backward_impl(q, None, q, q) == fallback


def test_the_tunings_fallbacks_replace_the_plans_tl_backward(monkeypatch):
    """bwd_fallback / bwd_fallback_small name the tl backward a Gluon default gives way to,
    by head dim; a problem small enough to be the host's takes bwd_fallback's pointer form
    whatever the head dim (the native path's; host_one_pass_d off, whose one pass
    test_attention_variants.py checks)."""
    t = tuning.tuning_for("attention", None)
    fields = {**t.__dict__, "bwd_impl": "gluon-ws-atomic", "bwd_impl_small": "gluon-ws",
              "bwd_fallback": "two-kernel-tma", "bwd_fallback_small": "atomic-tma",
              "host_one_pass_d": 0}
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: t.__class__(
        **{**fields, "tune_above": 0, "host_bound_upto": 0}))
    for d, want in ((64, "atomic-tma"), (128, "two-kernel-tma"), (32, "atomic-tma")):
        q = rand(1, 2, 256, d)  # fp32: no Gluon kernel
        assert fa.backward_impl(q, None, q, q) == want, d
    monkeypatch.setattr(fa, "_host_bound", lambda q, k, t: True)
    q = rand(1, 2, 256, 64)
    assert fa.backward_impl(q, None, q, q) == "two-kernel"


@pytest.mark.gpu
@pytest.mark.skipif(not _hopper(), reason="Hopper's tuning")
def test_gpu_default_forward_by_head_dim():
    """Hopper's default forward: FlashAttention-3's consumer loop ("gluon-ws") for head dims
    above 64, causal or not, the plain Gluon forward for smaller ones (kernels/tuning.py)."""
    for d, want in ((128, "gluon-ws"), (64, "gluon")):
        q = torch.empty(4, 32, 4096, d, device="cuda", dtype=torch.float16)
        assert fa.forward_impl(q, q, q) == want


@pytest.mark.gpu
@pytest.mark.skipif(not _hopper(), reason="Hopper's tuning")
def test_gpu_fp32_small_head_dims_take_the_pointer_forward():
    """Hopper's fp32 forwards (no Gluon kernel takes fp32) at head dims up to 32 run the
    pointer kernel where the TMA one was the slower (kernels/tuning.py's fp32_pointers_*),
    and the TMA one at d = 32 from 65536 keys and at d = 64."""
    for n, d, want in ((32768, 16, "pointers"), (65536, 16, "pointers"),
                       (32768, 32, "pointers"), (65536, 32, "tma"), (32768, 64, "tma")):
        q = torch.empty(1, 1, n, d, device="cuda", dtype=torch.float32)
        assert fa.forward_impl(q, q, q) == want, (n, d)


@pytest.mark.gpu
@pytest.mark.skipif(not _hopper(), reason="Hopper's tuning")
def test_gpu_default_backward_by_head_dim():
    """Hopper's default backward: the warp-specialized Gluon one pass ("gluon-ws-atomic",
    dQ's columns split) for head dims above 64, the warp-specialized two kernels for smaller
    ones; fp32 (no Gluon kernel) and sequences its 128-row programs do not divide take the two
    kernels through TMA above 64, the one pass through TMA up to 64."""
    for d, n, dtype, want in ((128, 4096, torch.float16, "gluon-ws-atomic"),
                              (64, 4096, torch.float16, "gluon-ws"),
                              (32, 4096, torch.bfloat16, "gluon-ws"),
                              (128, 4096, torch.float32, "two-kernel-tma"),
                              (64, 4096, torch.float32, "atomic-tma"),
                              (128, 4032, torch.bfloat16, "two-kernel-tma")):
        q = torch.empty(4, 32, n, d, device="cuda", dtype=dtype)
        assert fa.backward_impl(q, None, q, q) == want, (d, n, dtype)


def test_the_default_leaves_gluon_where_it_runs_few_programs(monkeypatch):
    """Gluon's programs wait for each key tile's MMAs in turn: with fewer than the tuning's
    gluon_min_waves programs per SM (batch 1, one head, 32768 keys: 256 on 132 SMs) the
    default takes the TMA forward, which pipelines its loop."""
    t = tuning.tuning_for("attention", None)
    monkeypatch.setattr(fa, "sm_count", lambda device: 132)
    gpu = types.SimpleNamespace(is_cuda=True, shape=(1, 1, 32768, 64), get_device=lambda: 0)
    assert fa._few_programs(gpu, t)
    gpu.shape = (1, 1, 65536, 64)  # 512 programs
    assert not fa._few_programs(gpu, t)
    gpu.shape = (4, 32, 4096, 128)
    assert not fa._few_programs(gpu, t)
    assert not fa._few_programs(torch.zeros(1, 1, 128, 64, dtype=torch.float16), t)  # the CPU


@on_sim
@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("dtype", DTYPES16)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [
    (1, 2, 128, 64),   # dK/dV: two key tiles of 64, four query steps through a ring of 2
    (2, 192, 32),      # (batch, seq, d): causal's diagonal tiles masked in both kernels
    (1, 1, 64, 16),    # one tile of each: the rings predicated off past the first step
])
@pytest.mark.parametrize("bwd", GLUON_BWD)
def test_backward_against_float64(shape, dtype, causal, bwd):
    *lead, n, d = shape
    q, k, v, do = inputs(lead[0], n, n, d, dtype=dtype, heads=lead[1] if len(lead) > 1 else None)
    o = fa.flash_attention(q, k, v, causal, None, "gluon", bwd)
    o.backward(do)
    o_ref, _, *grads = reference(q, k, v, do, causal)
    assert_matches((o, q.grad, k.grad, v.grad), (o_ref, *grads), dtype)


def ws_backward(q, k, v, do, causal, tiles, forward="gluon"):
    """dQ, dK, dV by the Gluon two kernels warp-specialized (attention_gluon.backward's `ws`),
    from O and L of the `forward` impl (by default the Gluon one)."""
    q, k, v, do = (t.detach() for t in (q, k, v, do))
    o, lse = fa.attention_forward(q, k, v, causal, impl=forward)
    heads, n, d = q.shape[-3] if q.dim() == 4 else 1, q.shape[-2], q.shape[-1]
    grads = [torch.empty_like(q) for _ in range(3)]
    return fg.backward(do, q, k, v, lse, fa._delta(o, do, heads, n, d), *grads, causal,
                       d ** -0.5, tiles, ws=True)


@on_sim
@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape, dkdv, dq", [
    # two key (query) tiles a head, four query (key) steps through 2 slots
    ((1, 2, 256, 64), (64, 128, 4, 2), (128, 64, 4, 2)),
    # one tile of each: both consumers on every step
    ((2, 1, 128, 32), (32, 128, 4, 3), (128, 32, 4, 3)),
])
def test_the_warp_specialized_backward(shape, dkdv, dq, causal):
    """dK and dV by two consumer warp groups of 64 keys each and a loader warp streaming Q, dO,
    L and D; dQ by two of 64 queries each and a loader streaming K and V (warp_specialize:
    minitriton runs the partitions as threads that switch at mbarrier waits), against
    float64; causal, both consumers mask the tiles of the program's whole tile."""
    b, h, n, d = shape
    q, k, v, do = inputs(b, n, n, d, dtype=torch.bfloat16, heads=h)
    got = ws_backward(q, k, v, do, causal, {"dkdv": dkdv, "dq": dq})
    assert_matches(got, reference(q, k, v, do, causal)[2:], torch.bfloat16)


@on_sim
@pytest.mark.parametrize("bwd", GLUON_BWD)
def test_the_race_sanitizer_passes_the_backward(bwd):
    """The one pass's dQ shares meet in the fp32 dQ through TMA reductions: atomic, so no
    race (a plain store there would be one)."""
    q, k, v, do = inputs(1, 128, 128, 32, dtype=torch.float16, heads=1)
    with minitriton.configure(races=True, order=True):
        o = fa.flash_attention(q, k, v, True, None, "gluon", bwd)
        o.backward(do)
    o_ref, _, *grads = reference(q, k, v, do, True)
    assert_matches((o, q.grad, k.grad, v.grad), (o_ref, *grads), torch.float16)


@on_sim
@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("impl, d, tiles", [("gluon-ws", 64, None),
                                             ("gluon-ws-atomic", 64, None),
                                             ("gluon-ws-atomic", 32, None),
                                             ("gluon-ws-atomic", 64, (128, 128, 4, 2)),
                                             ("gluon-ws-atomic", 128, None)])
def test_the_warp_specialized_backward_as_bwd_impl(impl, d, tiles, causal):
    """bwd_impl="gluon-ws" (the two kernels, 128 keys and 128 queries a program) and
    "gluon-ws-atomic" (the one pass: each consumer warp group adds its 64 keys' share of dQ
    by TMA reductions; 64 queries a step, or 128; d = 128, half the columns of both's share
    each) through autograd, at the tuning's simulator tiles or `tiles`, against float64."""
    q, k, v, do = inputs(1, 256, 256, d, dtype=torch.float16, heads=2)
    assert fa.backward_impl(q, impl, k, v) == impl
    if tiles:
        o, lse = fa.attention_forward(q, k, v, causal, impl="gluon")
        got = fa.attention_backward(do, q, k, v, o, lse, causal, tiles={"dkdv": tiles},
                                    impl=impl)
        assert_matches(got, reference(q, k, v, do, causal)[2:], torch.float16)
        return
    o = fa.flash_attention(q, k, v, causal, None, "gluon", impl)
    o.backward(do)
    o_ref, _, *grads = reference(q, k, v, do, causal)
    assert_matches((o, q.grad, k.grad, v.grad), (o_ref, *grads), torch.float16)


@pytest.mark.parametrize("impl, problem, refused", [
    ("gluon-ws", fg.ws_backward_problem,
     [({"dkdv": (64, 64, 4, 2), "dq": (128, 64, 4, 2)}, "128 keys"),
      ({"dkdv": (64, 128, 4, 2), "dq": (128, 64, 8, 2)}, "128 queries")]),
    ("gluon-ws-atomic", fg.ws_one_pass_problem,
     [((64, 64, 4, 2), "128 keys"), ((32, 128, 4, 2), "64 or 128 queries"),
      ((64, 128, 8, 2), "4 warps")]),
])
def test_the_warp_specialized_backward_says_what_it_cannot_take(impl, problem, refused):
    """Its programs are 128 keys (queries) on two warp groups of 4 warps: other tiles, and
    sequences those do not divide, are refused with the reason."""
    q = rand(1, 192, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match=f"bwd impl '{impl}' cannot take.*192"):
        fa.attention_backward(q, q, q, q, q, rand(1, 192), impl=impl)
    q = rand(1, 256, 64, dtype=torch.float16)
    for tiles, what in refused:
        assert what in problem(q, q, q, tiles)
    assert problem(q, q, q) is None


@on_sim
def test_the_race_sanitizer_passes_the_warp_specialized_backward():
    q, k, v, do = inputs(1, 256, 256, 32, dtype=torch.float16, heads=1)
    with minitriton.configure(races=True, order=True):
        got = ws_backward(q, k, v, do, True, {"dkdv": (64, 128, 4, 2), "dq": (128, 64, 4, 2)})
    assert_matches(got, reference(q, k, v, do, True)[2:], torch.float16)


@on_sim
@pytest.mark.parametrize("d", [32, 128])
def test_the_race_sanitizer_passes_the_warp_specialized_one_pass(d):
    """Both consumers add dQ shares of the same query rows: TMA reductions, atomic, so no
    race; each reuses its one dQ buffer only after its last reduction has read it; d = 128
    (split), each reads the other's dS^T only once the step's barrier says it is written,
    and overwrites its own only two steps later."""
    q, k, v, do = inputs(1, 256, 256, d, dtype=torch.float16, heads=1)
    with minitriton.configure(races=True, order=True):
        o = fa.flash_attention(q, k, v, True, None, "gluon", "gluon-ws-atomic")
        o.backward(do)
    o_ref, _, *grads = reference(q, k, v, do, True)
    assert_matches((o, q.grad, k.grad, v.grad), (o_ref, *grads), torch.float16)


@pytest.mark.parametrize("bwd", GLUON_BWD)
def test_the_backward_says_what_it_cannot_take(bwd):
    q = rand(1, 128, 64)
    with pytest.raises(ValueError, match=f"bwd impl '{bwd}' cannot take.*fp16 and bf16"):
        fa.attention_backward(q, q, q, q, q, rand(1, 128), impl=bwd)



@pytest.mark.parametrize("call, why", [
    # tiles given by the caller are checked as the defaults are
    (lambda q: fa.attention_forward(q, q, q, True, tiles=(128, 32, 4, 2), impl="gluon"),
     "forward tiles \\(128 queries a program, 32 keys a step\\) must divide"),
    (lambda q: fa.attention_forward(q, q, q, True, tiles=(32, 64, 4, 2), impl="gluon"),
     "the first a multiple of the second"),
    (lambda q: fa.attention_backward(q, q, q, q, q, torch.zeros(q.shape[:-1]), True,
                                     impl="gluon", tiles={"dkdv": (64, 32, 4, 2),
                                                          "dq": (64, 32, 4, 2)}),
     "dK/dV tiles \\(32 keys a program, 64 queries a step\\)"),
    (lambda q: fa.attention_backward(q, q, q, q, q, torch.zeros(q.shape[:-1]), True,
                                     impl="gluon-atomic", tiles={"dkdv": (32, 64, 4, 2)}),
     "must step 64 queries on a multiple of 4 warps"),
    (lambda q: ws_forward(q, q, q, False, (64, 32, 4, 2)),
     "takes 128 queries a program on two warp groups of 4 warps, not 64 on 4"),
    (lambda q: ws_forward(q, q, q, False, (64, 32, 4, 2), pingpong=True, ws=False),
     "ping-pong and persistence are the warp-specialized forward's"),
    (lambda q: ws_forward(q, q, q, False, (64, 32, 4, 2), persistent=True, ws=False),
     "ping-pong and persistence are the warp-specialized forward's"),
    # O and L from the pointer forward: on a GPU the Gluon forward's own tiles (128) do not
    # divide these 64 queries
    (lambda q: ws_backward(q, q, q, q, False, {"dkdv": (32, 64, 4, 2), "dq": (64, 32, 4, 2)},
                           "pointers"),
     "takes 128 keys a program on two warp groups of 4 warps, not 64 on 4"),
    (lambda _: ws_backward(*[rand(1, 128, 32, dtype=torch.float16)] * 4, False,
                           {"dkdv": (32, 128, 4, 2), "dq": (64, 32, 4, 2)}, "pointers"),
     "takes 128 queries a program on two warp groups of 4 warps, not 64 on 4"),
])
def test_caller_tiles_and_schedules_are_checked(call, why):
    with pytest.raises(ValueError, match=why):
        call(rand(1, 64, 32, dtype=torch.float16))


def test_caller_tiles_that_fit_are_taken_where_the_defaults_do_not(monkeypatch):
    """An explicit Gluon impl is checked with the caller's tiles, not its own: 64 queries
    run with tiles of 64 where the defaults, 128 a program (a GPU's; set so on the
    simulator too), would be refused, forward and backward, both against float64; a
    backward given only dK/dV tiles takes the rest from its defaults (at 256 queries, which
    those divide)."""
    if not torch.cuda.is_available():
        monkeypatch.setattr(fg, "tiles_for", lambda q, t=None, ws=False: (128, 128, 8, 2))
        monkeypatch.setattr(fg, "backward_tiles_for", lambda q, ws=False: {
            "dkdv": (64, 128, 8, 2), "dq": (64, 32, 4, 2)})
        with pytest.raises(ValueError, match="128 queries a program"):
            fa.attention_forward(*[rand(1, 64, 32, dtype=torch.float16)] * 3, impl="gluon")
    torch.manual_seed(0)
    for n, tiles in ((64, {"dkdv": (32, 64, 4, 2), "dq": (64, 32, 4, 2)}),
                     (256, {"dkdv": (32, 64, 4, 2)})):
        q, k, v, do = (rand(1, 2, n, 32, dtype=torch.float16) for _ in range(4))
        o_ref, lse_ref, *grads_ref = reference(q, k, v, do, True)
        o, lse = fa.attention_forward(q, k, v, True, tiles=(64, 32, 4, 2), impl="gluon")
        assert_matches((o,), (o_ref,), torch.float16)
        grads = fa.attention_backward(do, q, k, v, o, lse, True, tiles=tiles, impl="gluon")
        assert_matches(grads, grads_ref, torch.float16)


@pytest.mark.parametrize("bwd", GLUON_BWD)
def test_misaligned_inputs_are_refused_by_the_backward(bwd):
    """A contiguous view 2 bytes into its storage: TMA needs 16-byte aligned bases."""
    base = rand(1 * 128 * 64 + 1, dtype=torch.float16)
    q = base[1:].view(1, 128, 64)
    with pytest.raises(ValueError, match="16-byte aligned"):
        fa.attention_backward(q, q, q, q, q, torch.zeros(1, 128), impl=bwd)
