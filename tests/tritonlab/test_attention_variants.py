"""FlashAttention's faster variants (kernels/attention.py, issue 36) against float64 PyTorch
attention, beside the baseline kernels that test_attention.py covers: the TMA forward
(`impl="tma"`: descriptors made in the kernel, `"tma-ws"`: the same with warp specialization,
`"tma-host"`: host TensorDescriptors) and the one-pass backward (`impl="atomic"`: P and dS
computed once, dQ added with tl.atomic_add), on the active backend (minitriton here, real
Triton on a GPU machine). GPU-only cases (autotuned shapes) carry the `gpu` marker."""
import dataclasses

import pytest
import torch

import minitriton
from test_attention import assert_matches, inputs, reference
from torch_references import ATTENTION_TOLERANCES, DEV, DTYPES, rel_err
from tritonlab import backend
from tritonlab.kernels import attention as fa
from tritonlab.kernels import tuning

# (batch, n_queries, n_keys, head dim), in the simulator's 32 x 16 forward and 16 x 32 dK/dV
# tiles: whole tiles at d = 16; tails in both sequences with Nq < Nk at d = 64; Nq > Nk
# (causal: the last queries see every key) at d = 48, padded to 64 by TMA's zero fill (and
# the pointer kernels' masks); d = 128 with a key tail
SHAPES = [(1, 32, 32, 16), (2, 47, 61, 64), (1, 50, 21, 48), (1, 20, 36, 128)]


def forward_matches(q, k, v, do, causal, impl, **kw):
    o, lse = fa.attention_forward(q.detach(), k.detach(), v.detach(), causal, impl=impl, **kw)
    assert o.dtype == q.dtype and lse.dtype == torch.float32
    want = reference(q, k, v, do, causal)
    for name, got, w in (("O", o, want[0]), ("L", lse, want[1])):
        assert rel_err(got, w) < ATTENTION_TOLERANCES[q.dtype], name
    return o, lse


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_tma_forward(shape, dtype, causal):
    q, k, v, do = inputs(*shape, dtype=dtype)
    forward_matches(q, k, v, do, causal, "tma")


# the other two TMA variants: the same tiles and masks, other descriptors (ws: the same
# kernel with warp_specialize on its loops, which the simulator runs as the plain loop)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("impl", ["tma-ws", "tma-host"])
def test_tma_forward_variants(impl, dtype, causal):
    q, k, v, do = inputs(2, 47, 61, 48, dtype=dtype)
    if impl == "tma-ws" and q.is_cuda and not fa._warp_specialization_compiles(q.get_device()):
        with pytest.raises(NotImplementedError, match="does not compile with Triton"):
            fa.attention_forward(q.detach(), k.detach(), v.detach(), causal, impl=impl)
        return
    forward_matches(q, k, v, do, causal, impl)


@pytest.mark.parametrize("impl", ["tma", "tma-host"])
def test_tma_forward_four_d_strided_views(impl):
    """(batch, heads, seq, d) views of (batch, seq, heads, d) tensors, k every other row of a
    longer sequence: TMA takes any strides that are 16-byte multiples."""
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 33, 3, 32, generator=g).to(DEV).transpose(1, 2)
    k = torch.randn(2, 50, 3, 32, generator=g).to(DEV).transpose(1, 2)[:, :, ::2]
    v = torch.randn(2, 3, 25, 48, generator=g).to(DEV)[..., 16:48]
    assert not any(t.is_contiguous() for t in (q, k, v))
    for causal in (False, True):
        o, lse = forward_matches(q, k, v, torch.zeros_like(q), causal, impl)
        assert lse.shape == (2, 3, 33)


@pytest.mark.parametrize("impl", ["two-kernel-tma", "atomic-tma"])
def test_tma_backward_four_d_strided_views(impl):
    """The TMA backwards on the forward's strided views (q and dO (batch, heads, seq, d) views
    of (batch, seq, heads, d), k every other row, v a column slice), under the race and padding
    sanitizers: the per-head descriptors follow any 16-byte-multiple strides."""
    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 33, 3, 32, generator=g).to(DEV).transpose(1, 2)
    k = torch.randn(2, 50, 3, 32, generator=g).to(DEV).transpose(1, 2)[:, :, ::2]
    v = torch.randn(2, 3, 25, 48, generator=g).to(DEV)[..., 16:48]
    do = torch.randn(2, 33, 3, 32, generator=g).to(DEV).transpose(1, 2)
    assert fa._bwd_tma_problem(impl, q, k, v) is None
    for causal in (False, True):
        o, lse = fa.attention_forward(q, k, v, causal)
        with minitriton.configure(races=True, padding=True):
            grads = fa.attention_backward(do, q, k, v, o, lse, causal, impl=impl)
        assert_matches((o, lse, *grads), reference(q, k, v, do, causal), torch.float32)


def test_tma_backward_takes_a_sum_and_a_single_query_of_odd_strides():
    """An explicit TMA backward under `.sum().backward()` (autograd's dO is an expanded view,
    stride 0: copied, not refused), and a single query (and key) sliced from rows whose
    strides are not 16-byte multiples (a size-1 dimension's stride is never stepped along:
    the descriptors get an aligned one)."""
    q, k, v, _ = inputs(1, 24, 40, 16, heads=2)
    for impl in ("two-kernel-tma", "atomic-tma"):
        for t in (q, k, v):
            t.grad = None
        fa.flash_attention(q, k, v, True, None, None, impl).sum().backward()
        got = [t.grad for t in (q, k, v)]
        want = reference(q.detach(), k.detach(), v.detach(), torch.ones_like(q), True)
        assert_matches((want[0], want[1], *got), want, torch.float32)
    g = torch.Generator().manual_seed(2)
    wide = [torch.randn(1, 2, 1, 12, generator=g).to(DEV) for _ in range(4)]
    q1, k1, v1, do1 = (t[..., :8] for t in wide)  # rows of 8 in 12: stride 12 x 4 = 48 bytes
    o1, lse1 = fa.attention_forward(q1, k1, v1, False)
    want = reference(q1, k1, v1, do1, False)
    for impl in ("two-kernel-tma", "atomic-tma"):
        assert fa._bwd_tma_problem(impl, q1, k1, v1) is None
        grads = fa.attention_backward(do1, q1, k1, v1, o1, lse1, False, impl=impl)
        assert_matches((o1, lse1, *grads), want, torch.float32)


@pytest.mark.parametrize("scale", [0.0, -0.3])
def test_zero_and_negative_scales(scale):
    """softmax(scale * q k^T) for a scale <= 0 (0: uniform over the kept keys): the forwards
    scale the scores before masking them (the folded scale would make -inf * 0 a NaN), and
    the backwards follow, causal and not, with a key tail."""
    q, k, v, do = (t.detach() for t in inputs(1, 40, 40, 16, heads=2))
    for causal in (False, True):
        want = reference(q, k, v, do, causal, scale)
        for impl in ("pointers", "tma"):
            o, lse = fa.attention_forward(q, k, v, causal, scale, impl=impl)
            assert rel_err(o, want[0]) < ATTENTION_TOLERANCES[torch.float32], (impl, causal)
        grads = fa.attention_backward(do, q, k, v, o, lse, causal, scale)
        assert_matches((o, lse, *grads), want, torch.float32)


def test_tma_forward_causal_groups(monkeypatch):
    """Causal programs go by groups of heads, longest rows first: with a budget for 2 heads'
    K and V, 5 heads make groups of 2, 2 and 1 (the last one short); 1 head a group; and
    all 5 at once. Every (query tile, head) runs once: the outputs match."""
    q, k, v, do = inputs(5, 45, 45, 16)
    per_head = 2 * 45 * 16 * 4  # K and V bytes of one head
    defaults = tuning.tuning_for("attention", -1)
    for heads in (2, 1, 5):
        budget = dataclasses.replace(defaults, causal_group_bytes=heads * per_head)
        monkeypatch.setattr(fa, "tuning_for", lambda kind, device, t=budget: t)
        assert fa._causal_group(5, 45, 16, 4, True, -1) == heads
        forward_matches(q, k, v, do, True, "tma")


def test_tma_forward_skips_the_tiles_above_the_diagonal():
    """The pointer forward's loop bounds (test_attention.py), through descriptors: N = 128 in
    16 x 16 tiles runs 36 of the 64 tile pairs and reads K and V 36 tiles' worth."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    q, k, v, _ = (t.detach().cpu() for t in inputs(1, 128, 128, 16))
    with minitriton.record() as rec:
        sim.attention_forward(q, k, v, True, tiles=(16, 16, 4, 1), impl="tma")
    per_pair = 2 * (2 * 16 * 16 * 16)
    assert rec[0].dot_flops == 36 * per_pair
    assert rec[0].args["k_desc"].loaded == rec[0].args["v_desc"].loaded == 36 * 16 * 16
    assert rec[0].args["o_desc"].stored == 128 * 16


# (n_queries, n_keys, forward and dQ tiles, dK/dV tiles) -> whether the keys (forward, dQ)
# and the queries (dK/dV) split into whole tiles: 48 rows into 16-row tiles but not into
# 32-row ones, whose tail tile would be lost if a flag followed a narrower tile; Nq != Nk and
# tiles that are not square, so that a flag computed from the other sequence or the other
# block would be wrong somewhere
TAIL_CASES = [(48, 48, (16, 16, 4, 1), (16, 16, 4, 1), True, True),
              (48, 48, (32, 32, 4, 1), (32, 32, 4, 1), False, False),
              (32, 48, (32, 16, 4, 1), (16, 32, 4, 1), True, True),
              (48, 32, (32, 16, 4, 1), (16, 32, 4, 1), True, True),
              (48, 32, (32, 32, 4, 1), (32, 32, 4, 1), True, False),
              (32, 48, (32, 32, 4, 1), (32, 32, 4, 1), False, True)]


@pytest.mark.parametrize("bwd_impl", ["two-kernel", "atomic"])
def test_masked_tail_loops_are_dropped_only_where_every_tile_is_whole(bwd_impl):
    """EVEN_KEYS (forward, dQ; not causal) and EVEN_QUERIES (dK/dV, causal or not): the
    launch's widest block divides the sequence, so the masked tail loop is not compiled; the
    outputs and gradients match float64 each time."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    for n_q, n_k, tiles, dkdv, keys_whole, queries_whole in TAIL_CASES:
        q, k, v, do = (t.detach().cpu() for t in inputs(1, n_q, n_k, 16))
        for causal in (False, True):
            with minitriton.record() as rec:
                o, lse = sim.attention_forward(q, k, v, causal, tiles=tiles, impl="tma")
                grads = sim.attention_backward(do, q, k, v, o, lse, causal, impl=bwd_impl,
                                               tiles={"dkdv": dkdv, "dq": tiles})
            flags = {r.kernel: (r.constexprs.get("EVEN_KEYS"), r.constexprs.get("EVEN_QUERIES"))
                     for r in rec if r.kernel != "attn_bwd_preprocess_kernel"}
            want = {"attn_fwd_tma_kernel": (keys_whole and not causal, None),
                    "attn_bwd_dkdv_kernel": (None, queries_whole)}
            if bwd_impl == "two-kernel":
                want["attn_bwd_dq_kernel"] = (keys_whole and not causal, None)
            assert flags == want, (n_q, n_k, tiles, causal)
            assert_matches((o, lse, *grads), reference(q, k, v, do, causal), q.dtype)
    # untuned: the widest block of the device's configs and the simulator's decides
    t = tuning.tuning_for("attention", -1)
    for name, axis in (("fwd_tma", 1), ("dkdv", 0), ("dq", 1)):
        widest = max(c[axis] for c in (*t.configs(name, 16), t.simulator(name)))
        assert fa._whole_tiles(widest, name, 16, None, -1, axis)
        assert not fa._whole_tiles(widest // 2, name, 16, None, -1, axis)
    assert not fa._whole_tiles(32, "fwd_tma", 16, (16, 64, 4, 1), -1, 1)
    assert fa._whole_tiles(32, "dkdv", 16, (16, 64, 4, 1), -1, 0)


@pytest.mark.parametrize("bwd,dtype", [("two-kernel", torch.float32),
                                       ("atomic", torch.float32), ("atomic", torch.float16)])
def test_native_plan_describes_the_backward_launches_the_python_path_made(monkeypatch, bwd,
                                                                          dtype):
    """_describe rebuilds the keys of the Python path's backward launches (their tail flags
    included) to find them: with the pointer forward and the device's first configs (and D
    pass block) made the simulator's, it finds for sequences of whole tiles and of a tail
    the D pass, dK/dV and dQ (the two kernels), or the D pass zeroing an fp32 dQ, the one
    pass adding into it and, in 16 bits, dQ's cast, the last only where q's gradient is
    wanted and the fp32 dQ one more allocation ("atomic")."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    t = sim.tuning_for("attention", -1)
    names = ("fwd", "dkdv", "dq", "dkdv_atomic")
    first = dataclasses.replace(t, fwd_impl="pointers", bwd_impl=bwd, bwd_impl_small="",
                                preprocess_block=t.simulator_preprocess_block,
                                **{f"{name}_{size}": (t.simulator(name),)
                                   for name in names for size in ("small", "large")})
    monkeypatch.setattr(sim, "tuning_for", lambda kind, device: first)
    monkeypatch.setattr(sim, "_BOUNDS", sim.PlanCache())
    for name in names:
        monkeypatch.setitem(sim._FITS, (name, 16, dtype), 0)
    seen = {}
    monkeypatch.setattr(sim._native, "plan", lambda *a, **kw: seen.update(kw) or "described")
    kernels = {"two-kernel": [sim.attn_bwd_preprocess_kernel, sim.attn_bwd_dkdv_kernel,
                              sim.attn_bwd_dq_kernel],
               "atomic": [sim.attn_bwd_preprocess_kernel, sim.attn_bwd_dkdv_kernel]
               + [sim.attn_bwd_dq_cast_kernel] * (dtype != torch.float32)}[bwd]
    for n in (48, 40):
        q, k, v, do = (x.detach().cpu() for x in inputs(1, n, n, 16, dtype=dtype))
        for causal in (False, True):
            o, lse = sim.attention_forward(q, k, v, causal)
            sim.attention_backward(do, q, k, v, o, lse, causal)
            seen.clear()
            assert sim._describe((causal, None), q, k, v) == "described", (n, causal)
            assert seen["backward"] is not None, (n, causal)
            assert [b.kernel for b, _ in seen["backward"]] == kernels
            assert seen["backward_for"] == [-1, -1, 0][:len(kernels)]
            extra = [((1, n, 16), torch.float32)] if len(kernels) == 3 and bwd == "atomic" else []
            assert seen["bwd_allocs"][4:] == extra


@pytest.fixture(params=["last", "kernel"])
def shares(monkeypatch, request):
    """The split forward in up to 3 shares of at least 8 keys on the simulator's tiles,
    combined by the last share or by a second kernel."""
    t = dataclasses.replace(tuning.tuning_for("attention", -1), split_programs_below=64,
                            split_min_keys=8, max_splits=3, split_combine=request.param)
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: t)
    return t


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_split_forward(shape, dtype, causal, shares):
    """impl="split": keys in shares, one program each, combined by the last share to finish
    or by a second kernel: O and L as float64 attention's (causal: the diagonal's tiles all
    in the last share; shares without keys weigh nothing), and the backward from them."""
    q, k, v, do = inputs(*shape, dtype=dtype)
    assert fa.fwd_splits(1, 1, shape[1], shape[2], shape[3], shares, asked=True) >= 2
    o, lse = forward_matches(q, k, v, do, causal, "split")
    grads = fa.attention_backward(do, q.detach(), k.detach(), v.detach(), o, lse, causal)
    assert_matches((o, lse, *grads), reference(q, k, v, do, causal), dtype)


def test_split_shares_and_the_default():
    """fwd_splits: shares enough to bring the query blocks to split_programs_below, at most
    max_splits, each of at least split_min_keys keys; none by default where the tuning's
    threshold is 0 (Hopper's, until measured); at least 2 when asked for."""
    hopper = tuning.TUNINGS["attention"][9]
    assert hopper.split_programs_below == 0
    assert fa.fwd_splits(1, 1, 1024, 1024, 64, hopper) == 1
    assert fa.fwd_splits(1, 1, 1024, 1024, 64, hopper, asked=True) == 2
    on = dataclasses.replace(hopper, split_programs_below=132, max_splits=16)
    # 8 query blocks of 128: 17 shares wanted, max_splits 16, 1024 // 256 = 4 keys' worth
    assert fa.fwd_splits(1, 1, 1024, 1024, 64, on) == 4
    assert fa.fwd_splits(1, 1, 1024, 8192, 64, on) == 16
    assert fa.fwd_splits(1, 1, 1024, 8192, 64, dataclasses.replace(on, max_splits=4)) == 4
    assert fa.fwd_splits(1, 1, 8192, 8192, 64, on) == 3  # 64 query blocks: 132 // 64 + 1
    assert fa.fwd_splits(4, 32, 4096, 4096, 128, on) == 1  # 4096 query blocks
    assert fa.fwd_splits(1, 1, 1024, 100, 64, on) == 1  # too few keys to share
    assert fa.fwd_splits(0, 8, 128, 4096, 64, on) == 1  # an empty batch
    assert fa.fwd_splits(2, 8, 0, 4096, 64, on, asked=True) == 2  # no queries
    # the grid's second axis (batch*heads*shares) stays within CUDA's 65535
    assert fa.fwd_splits(1, 40000, 64, 4096, 64, on, asked=True) == 1
    assert fa.fwd_splits(1, 30000, 64, 4096, 64, on, asked=True) == 2


@pytest.mark.parametrize("combine", ["last", "kernel"])
def test_split_forward_sanitizers(executor, monkeypatch, combine):
    """No race (each share its own rows of the partials; the combination, by the last share
    to arrive at its query block's counter or by a second kernel, its rows of O and L, after
    every share's partials) and no padded lane that changes a max, a sum or a dot, on both
    executors."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    t = dataclasses.replace(sim.tuning_for("attention", -1), split_programs_below=64,
                            split_min_keys=8, max_splits=3, split_combine=combine)
    monkeypatch.setattr(sim, "tuning_for", lambda kind, device: t)
    q, k, v, do = (x.detach().cpu() for x in inputs(2, 37, 45, 48))
    with minitriton.configure(races=True, padding=True):
        for causal in (False, True):
            o = sim.attention_forward(q, k, v, causal, impl="split")[0]
            want = reference(q, k, v, do, causal)[0]
            assert rel_err(o, want) < ATTENTION_TOLERANCES[torch.float32], causal


def test_split_forward_leaves_its_counters_zero(monkeypatch):
    """split_combine "last": one counter per query block, which every share counts in and
    the combining share puts back to zero; the same O and L, bit for bit, as a second
    kernel's combination (the shares in the same order); an unknown split_combine raises."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    base = dataclasses.replace(sim.tuning_for("attention", -1), max_splits=3,
                               split_min_keys=8, split_combine="last")
    tuned = {"t": base}
    monkeypatch.setattr(sim, "tuning_for", lambda kind, device: tuned["t"])
    seen = []
    counted = sim._exchange.counted

    def spy(name, count, device, run):
        def kept(sync):
            seen.append(sync)
            return run(sync)
        return counted(name, count, device, kept)
    monkeypatch.setattr(sim._exchange, "counted", spy)
    q, k, v, _ = (x.detach().cpu() for x in inputs(2, 37, 45, 48))
    last = sim.attention_forward(q, k, v, True, impl="split")
    tuned["t"] = dataclasses.replace(base, split_combine="kernel")
    kernel = sim.attention_forward(q, k, v, True, impl="split")
    assert len(seen) == 1 and seen[0].dtype == torch.int32
    # 2 heads x cdiv(37, 16) query blocks at the smallest BLOCK_M, all zero again
    assert seen[0].shape == (2 * 3,) and not seen[0].any()
    for x, y in zip(last, kernel):
        torch.testing.assert_close(x, y, rtol=0, atol=0)
    tuned["t"] = dataclasses.replace(base, split_combine="first")
    with pytest.raises(ValueError, match="split_combine 'first'"):
        sim.attention_forward(q, k, v, True, impl="split")


@pytest.mark.parametrize("combine", ["last", "kernel"])
def test_native_plan_describes_the_split_forward(monkeypatch, combine):
    """_describe of a split forward: the shares' launch and the combination (in the same
    launch, its counters a zeroed allocation; or a second launch), as the Python path made
    them, and their two fp32 partials allocated before dO."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    t = sim.tuning_for("attention", -1)
    first = dataclasses.replace(t, fwd_impl="pointers", bwd_impl="two-kernel", bwd_impl_small="",
                                split_programs_below=64, split_min_keys=8, max_splits=3,
                                split_combine=combine,
                                preprocess_block=t.simulator_preprocess_block,
                                **{f"{name}_{size}": (t.simulator(name),)
                                   for name in ("fwd", "dkdv", "dq")
                                   for size in ("small", "large")})
    monkeypatch.setattr(sim, "tuning_for", lambda kind, device: first)
    monkeypatch.setattr(sim, "forward_impl", lambda q, k, v, impl=None, tiles=None:
                        impl or "split")
    monkeypatch.setattr(sim, "_BOUNDS", sim.PlanCache())
    for name in ("fwd_split", "dkdv", "dq"):
        monkeypatch.setitem(sim._FITS, (name, 16, torch.float32), 0)
    seen = {}
    monkeypatch.setattr(sim._native, "plan", lambda *a, **kw: seen.update(kw, args=a)
                        or "described")
    q, k, v, do = (x.detach().cpu() for x in inputs(1, 40, 40, 16))
    o, lse = sim.attention_forward(q, k, v, True)
    sim.attention_backward(do, q, k, v, o, lse, True)
    assert sim._describe((True, None), q, k, v) == "described"
    inputs_, allocs, forward, result = seen["args"]
    last = combine == "last"
    assert [b.kernel for b, _ in forward] == [sim.attn_fwd_split_kernel] + (
        [] if last else [sim.attn_fwd_combine_kernel])
    assert forward[0][0].kw["LAST_COMBINES"] is last
    partials = [((3, 1, 40, 16), torch.float32), ((3, 1, 40), torch.float32)]
    assert allocs[2:] == partials + ([((3,), torch.int32)] if last else [])
    # the split kernel's counters argument: that allocation, else l's partial (not read)
    assert forward[0][1][7].index == (7 if last else 6)
    assert (seen["counters"].index if last else seen["counters"]) == (7 if last else None)
    assert result.index == 3 and seen["bwd_allocs"][0] == ((1, 40), torch.float32)
    assert [b.kernel for b, _ in seen["backward"]] == [
        sim.attn_bwd_preprocess_kernel, sim.attn_bwd_dkdv_kernel, sim.attn_bwd_dq_kernel]
    do_slot = seen["backward"][0][1][1]  # the D pass reads O, then dO
    assert do_slot.index == 7 + last


def test_tma_forward_sanitizers(executor):
    """No race (every program writes its own rows of O and L), no padded lane that changes a
    max, a sum or a dot (TMA's zeros are masked in S), on both executors."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    q, k, v, do = (t.detach().cpu() for t in inputs(2, 37, 45, 48))
    want = reference(q, k, v, do, True)[0]
    with minitriton.configure(races=True, padding=True):
        for impl in ("tma", "tma-host"):
            o = sim.attention_forward(q, k, v, True, impl=impl)[0]
            assert rel_err(o, want) < ATTENTION_TOLERANCES[torch.float32], impl


def test_tma_needs_aligned_rows_and_the_default_falls_back(monkeypatch):
    """impl="tma" refuses inputs TMA cannot read (fp16 rows of d = 20: 40 bytes), naming the
    fix; a device whose default forward is a TMA one runs the pointer kernel for them (and
    for a base 2 bytes off alignment)."""
    q, k, v, do = inputs(1, 24, 24, 20, dtype=torch.float16)
    q, k, v = q.detach(), k.detach(), v.detach()
    with pytest.raises(ValueError, match="not a multiple of 16 bytes; use impl='pointers'"):
        fa.attention_forward(q, k, v, impl="tma")
    with pytest.raises(ValueError, match="unknown forward impl 'wgmma'"):
        fa.attention_forward(q, k, v, impl="wgmma")
    tma_default = dataclasses.replace(tuning.tuning_for("attention", -1), fwd_impl="tma",
                                      tune_above=0, host_bound_upto=0)
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: tma_default)
    assert fa.forward_impl(q, k, v) == "pointers"
    aligned = [t[..., :16].contiguous() for t in (q, k, v)]
    assert fa.forward_impl(*aligned) == "tma"
    small = dataclasses.replace(tma_default, tune_above=1 << 22)  # on a GPU: the pointers
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: small)
    assert fa.forward_impl(*aligned) == ("pointers" if q.is_cuda else "tma")
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: tma_default)
    shifted = torch.zeros(aligned[2].numel() + 1, dtype=torch.float16, device=DEV)[1:]
    assert fa.forward_impl(aligned[0], aligned[1], shifted.view(aligned[2].shape)) == "pointers"
    o = fa.attention_forward(q, k, v, True)[0]
    assert rel_err(o, reference(q, k, v, do, True)[0]) < ATTENTION_TOLERANCES[torch.float16]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("impl", ["atomic", "atomic-tma", "two-kernel-tma"])
def test_backward_variants(impl, shape, dtype, causal):
    """dQ, dK, dV of the one-pass backward (dQ by atomics or TMA reductions) and of the
    two-kernel backward reading its tiles through TMA, under the race sanitizer: the atomics
    into dQ and the zeros the D pass writes there first are no race."""
    q, k, v, do = inputs(*shape, dtype=dtype)
    q, k, v = q.detach(), k.detach(), v.detach()
    o, lse = fa.attention_forward(q, k, v, causal)
    if impl == "atomic-tma" and q.shape[-1] % 4:
        with pytest.raises(ValueError, match="not a multiple of 4.*use impl='atomic'"):
            fa.attention_backward(do, q, k, v, o, lse, causal, impl=impl)
        return
    with minitriton.configure(races=True):
        grads = fa.attention_backward(do, q, k, v, o, lse, causal, impl=impl)
    assert all(g.dtype == dtype and g.is_contiguous() for g in grads)
    assert_matches((o, lse, *grads), reference(q, k, v, do, causal), dtype)


def test_atomic_tma_backward_needs_rows_of_16_bytes(monkeypatch):
    """dQ's fp32 rows must be 16-byte multiples for TMA: head dim 18 is refused by name, with
    the fix; a device default of "atomic-tma" falls back to "atomic" for it."""
    q, k, v, do = (t.detach() for t in inputs(1, 24, 24, 18))
    o, lse = fa.attention_forward(q, k, v, True)
    with pytest.raises(ValueError, match="head dim 18, not a multiple of 4.*use impl='atomic'"):
        fa.attention_backward(do, q, k, v, o, lse, True, impl="atomic-tma")
    with pytest.raises(ValueError, match="unknown backward impl 'tma'"):
        fa.attention_backward(do, q, k, v, o, lse, True, impl="tma")
    default = dataclasses.replace(tuning.tuning_for("attention", -1), bwd_impl="atomic-tma",
                                  bwd_impl_small="")
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: default)
    assert fa.backward_impl(q) == "atomic"
    assert fa.backward_impl(torch.zeros(1, 4, 16, device=DEV)) == "atomic-tma"


def test_atomic_backward_sanitizers_both_executors(executor):
    """Both executors, race and padding sanitizers, fp16 (dQ through the fp32 scratch) and
    fp32 (atomics straight into dQ), tiles where four key programs add into each query row."""
    sim = backend.with_backend("tritonlab.kernels.attention", "sim")
    q, k, v, do = (t.detach().cpu() for t in inputs(2, 45, 70, 32, dtype=torch.float16))
    want = reference(q, k, v, do, True)
    with minitriton.configure(races=True, padding=True):
        for dtype in (torch.float16, torch.float32):
            args = [t.to(dtype) for t in (q, k, v)]
            o, lse = sim.attention_forward(*args, True)
            for impl in ("atomic", "atomic-tma", "two-kernel-tma"):
                grads = sim.attention_backward(do.to(dtype), *args, o, lse, True, impl=impl,
                                               tiles={"dkdv": (16, 16, 4, 1)})
                assert_matches((o, lse, *grads), want, dtype)


def test_autograd_and_compile_with_the_variants():
    """flash_attention's fwd_impl/bwd_impl reach the kernels, eagerly and under torch.compile
    (one graph through the custom ops, which take the implementations' names)."""
    q, k, v, do = inputs(1, 24, 40, 16)
    with minitriton.record() as rec:
        o = fa.flash_attention(q, k, v, True, None, "tma-host", "atomic")
        lse = o.grad_fn.saved_tensors[0]
        o.backward(do)
    if backend.NAME == "sim":  # the forward, then D with dQ's zeros and the one pass
        assert [r.kernel for r in rec] == ["attn_fwd_tma_kernel", "attn_bwd_preprocess_kernel",
                                           "attn_bwd_dkdv_kernel"]
    assert_matches((o, lse, q.grad, k.grad, v.grad), reference(q, k, v, do, True),
                   torch.float32)
    q.grad = k.grad = v.grad = None
    compiled = torch.compile(fa.FlashAttentionTriton.apply, backend="aot_eager", fullgraph=True)
    o = compiled(q, k, v, True, None, "tma", "atomic")
    o.backward(do)
    assert_matches((o, fa.attention_forward(q, k, v, True)[1], q.grad, k.grad, v.grad),
                   reference(q, k, v, do, True), torch.float32)
    with pytest.raises(ValueError, match="unknown backward impl 'fused'"):
        fa.flash_attention(q, k, v, bwd_impl="fused")


def test_variant_configs():
    """Every config keeps the multiple-of rule its causal bounds use (the TMA forward: BLOCK_M
    a multiple of BLOCK_N; the one-pass dK/dV: BLOCK_N of BLOCK_M), and the defaults name
    implementations that exist."""
    t = tuning.TUNINGS["attention"][9]
    for name in ("fwd_tma", "dkdv_atomic"):
        for block_d in (64, 128):
            configs = t.configs(name, block_d)
            assert configs
            for bm, bn, _, _ in configs:
                assert (bn % bm if name == "dkdv_atomic" else bm % bn) == 0, (name, bm, bn)
    assert t.fwd_impl in fa.FWD_IMPLS and t.bwd_impl in fa.BWD_IMPLS


# -- GPU only: real Triton, at shapes the simulator cannot afford

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 2, 512, 512, 64), (1, 2, 1000, 1531, 80),
                                   (1, 1, 1024, 2048, 128), (1, 1, 300, 200, 32)])
def test_gpu_variants(shape, dtype, causal):
    """Each TMA forward and the one-pass backward below the tuning's tune_above (the first
    config that fits: one compile each), odd lengths, Nq != Nk, a padded head dim, against
    float64 math."""
    check_gpu_variants(shape, dtype, causal)


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gpu_variants_autotuned(causal):
    """Above tune_above: every config of each variant compiles and runs (the host
    descriptors' blocks set by the autotuner's pre-hook, dQ reset between the one-pass
    backward's trials)."""
    check_gpu_variants((2, 4, 1024, 1024, 64), torch.bfloat16, causal)


def check_gpu_variants(shape, dtype, causal):
    b, h, n_q, n_k, d = shape
    q, k, v, do = inputs(b, n_q, n_k, d, dtype=dtype, heads=h)
    want = reference(q, k, v, do, causal)
    q, k, v = q.detach(), k.detach(), v.detach()
    for impl in ("split", "tma", "tma-ws", "tma-host"):
        if impl == "tma-ws" and not fa._warp_specialization_compiles(q.get_device()):
            with pytest.raises(NotImplementedError, match="does not compile with Triton"):
                fa.attention_forward(q, k, v, causal, impl=impl)
            continue
        o, lse = fa.attention_forward(q, k, v, causal, impl=impl)
        assert rel_err(o, want[0]) < ATTENTION_TOLERANCES[dtype], impl
        assert rel_err(lse, want[1]) < ATTENTION_TOLERANCES[dtype], impl
    for impl in ("atomic", "atomic-tma", "two-kernel-tma"):
        if fa._bwd_tma_problem(impl, q, k, v):
            continue
        grads = fa.attention_backward(do, q, k, v, o, lse, causal, impl=impl)
        assert_matches((o, lse, *grads), want, dtype)


@pytest.fixture
def emulated_gpu(monkeypatch):
    """A GPU above tune_above emulated on the simulator: device 0 with Hopper's attention
    tuning, tune_above and host_bound_upto 0 (every launch autotuned, by minitriton's
    autotuner), no kept choices and no cached autotuners before or after. Yields the tuning."""
    emulated = dataclasses.replace(tuning.TUNINGS["attention"][9], tune_above=0,
                                   host_bound_upto=0)
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: emulated)
    run = fa._run
    monkeypatch.setattr(fa, "_run", lambda *a, **kw: run(*a[:6], 0, *a[7:], **kw))
    monkeypatch.setattr(fa, "_CHOSEN", {})
    tuned = fa._tuned  # a test may wrap it
    tuned.cache_clear()
    yield emulated
    tuned.cache_clear()


def test_autotuned_launches_on_the_simulator(emulated_gpu):
    """The GPU's autotuned path, run by minitriton's autotuner (a GPU above tune_above
    emulated): every Hopper config of the TMA forwards, of the split forward and of the
    one-pass backward runs, the host descriptors' blocks set by the pre-hook per config, dQ
    zeroed between the one-pass backward's trials (reset_to_zero), and the results match."""
    q, k, v, do = inputs(1, 40, 72, 32, dtype=torch.float16, heads=2)
    q, k, v = q.detach(), k.detach(), v.detach()
    want = reference(q, k, v, do, True)
    for impl in ("split", "tma", "tma-host"):
        o, lse = fa.attention_forward(q, k, v, True, impl=impl)
        assert rel_err(o, want[0]) < ATTENTION_TOLERANCES[torch.float16], impl
    for impl in ("atomic", "atomic-tma", "two-kernel-tma"):
        grads = fa.attention_backward(do, q, k, v, o, lse, True, impl=impl)
        assert_matches((o, lse, *grads), want, torch.float16)


def test_autotuner_tunes_each_fold_of_the_forward_on_its_own(emulated_gpu):
    """FOLD (a positive scale folded into the softmax, or not) is in the autotuner's key: a
    forward with a negative scale after one with a positive scale at the same shape runs its
    own trials rather than taking the choice timed for the other code (a GPU above tune_above
    emulated), and both match float64."""
    q, k, v, do = inputs(1, 40, 72, 32, dtype=torch.float16, heads=2)
    q, k, v = q.detach(), k.detach(), v.detach()
    for scale in (0.2, -0.2):
        o, lse = fa.attention_forward(q, k, v, True, scale, impl="pointers")
        want = reference(q, k, v, do, True, scale)
        assert rel_err(o, want[0]) < ATTENTION_TOLERANCES[torch.float16], scale
    tuner = fa._tuned("fwd", 32, 0, torch.float16)
    assert len(tuner.cache) == 2
    assert sorted(key[4] for key in tuner.cache) == [False, True]  # FOLD, after IS_CAUSAL


def test_autotuned_launches_keep_the_tuners_choice(emulated_gpu, monkeypatch):
    """An autotuned launch runs the autotuner on its key's first call only: later calls launch
    the config it chose (kept in _CHOSEN, a Bound launch the native path can describe), with
    the same results, forward and backward (a GPU above tune_above emulated, as above)."""
    emulated = emulated_gpu
    tuned, asked = fa._tuned, []
    monkeypatch.setattr(fa, "_tuned", lambda *a: asked.append(a[0]) or tuned(*a))
    q, k, v, do = inputs(1, 40, 72, 32, dtype=torch.float16, heads=2)
    q, k, v = q.detach(), k.detach(), v.detach()
    first = fa.attention_forward(q, k, v, True, impl="pointers")
    grads = fa.attention_backward(do, q, k, v, *first, True, impl="two-kernel")
    assert asked == ["fwd", "dkdv", "dq"]
    configs = {name: [tuple(c) for c in emulated.configs(name, 32)]
               for name in ("fwd", "dkdv", "dq")}
    assert sorted(key[0] for key in fa._CHOSEN) == ["dkdv", "dq", "fwd"]
    assert {key[1] for key in fa._CHOSEN} == {0}  # the emulated device's
    assert all(tiles in configs[key[0]] for key, tiles in fa._CHOSEN.items())
    again = fa.attention_forward(q, k, v, True, impl="pointers")
    grads_again = fa.attention_backward(do, q, k, v, *again, True, impl="two-kernel")
    assert len(asked) == 3  # no autotuner on the later calls
    for a, b in zip((*first, *grads), (*again, *grads_again)):
        assert torch.equal(a, b)
    assert_matches((*first, *grads), reference(q, k, v, do, True), torch.float16)


def test_host_bound_sizes_grow_with_the_head_dim_and_dtype():
    """A problem is the host's (the pointer kernels, the native path) up to tune_above's
    batch*heads*Nq*Nk, or up to host_bound_upto's batch*heads*Nq*Nk*BLOCK_D*element size:
    the assignment's batch-1 rows up to 16384 keys at d <= 64 in bf16, 32768 at d = 16,
    half of that in fp32; the speed rows never."""
    t = tuning.TUNINGS["attention"][9]
    bound = fa.host_bound_size
    assert bound(1, 1, 16384, 16384, 64, 2, t) and bound(1, 1, 32768, 32768, 16, 2, t)
    assert not bound(1, 1, 16384, 16384, 128, 2, t)
    assert not bound(1, 1, 32768, 32768, 32, 2, t)
    assert bound(1, 1, 16384, 16384, 32, 4, t) and not bound(1, 1, 16384, 16384, 64, 4, t)
    assert bound(1, 1, 8192, 8192, 128, 4, t)
    assert bound(1, 1, 16384, 16384, 10, 2, t) == bound(1, 1, 16384, 16384, 16, 2, t)  # BLOCK_D
    for speed_row in ((4, 32, 4096, 4096, 128, 2), (16, 1, 16384, 16384, 64, 2),
                      (1, 1, 65536, 65536, 128, 2)):
        assert not bound(*speed_row, t)
    no_native = dataclasses.replace(t, host_bound_upto=0)
    assert bound(1, 1, 2048, 2048, 128, 4, no_native)  # tune_above's
    assert not bound(1, 1, 4096, 4096, 16, 2, no_native)


def test_host_bound_small_head_dims_take_the_one_pass_backward(monkeypatch):
    """Hopper's host-bound problems (the native path's sizes) take the one-pass pointer
    backward ("atomic") up to host_one_pass_d (64: its kernels the faster there, H100
    2026-12-07) and the two kernels above it; never with the field 0, for a problem not the
    host's, or when an implementation is asked for."""
    t = tuning.TUNINGS["attention"][9]
    tuned = [t]
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: tuned[0])
    monkeypatch.setattr(fa, "_host_bound", lambda q, k, t: True)
    qs = {d: torch.zeros(1, 1, 64, d, dtype=torch.float16, device=DEV) for d in (16, 64, 128)}
    for d, want in ((16, "atomic"), (64, "atomic"), (128, "two-kernel")):
        assert fa.backward_impl(qs[d], None, qs[d], qs[d]) == want, d
    assert fa.backward_impl(qs[16], "two-kernel", qs[16], qs[16]) == "two-kernel"
    assert fa.backward_impl(qs[16]) != "atomic"  # no k: not known to be the host's
    tuned[0] = dataclasses.replace(t, host_one_pass_d=0)
    assert fa.backward_impl(qs[16], None, qs[16], qs[16]) == "two-kernel"
    tuned[0] = t
    monkeypatch.setattr(fa, "_host_bound", lambda q, k, t: False)
    assert fa.backward_impl(qs[16], None, qs[16], qs[16]) != "atomic"


def test_fp32_small_head_dims_take_the_pointer_forward_up_to_the_measured_size():
    """Hopper's fp32 forward at d <= 32 is the pointer kernel, not the TMA one, where the
    pointer one was the faster (d = 16 up to 65536 keys at batch 1, one head; d = 32 up to
    32768), and TMA's at d = 32 from 65536 keys and at every d = 64; never for 16-bit inputs
    or with the rule off."""
    t = tuning.TUNINGS["attention"][9]
    rule = fa.fp32_pointers_size
    assert rule(1, 1, 65536, 65536, 16, 4, t) and rule(1, 1, 32768, 32768, 32, 4, t)
    assert rule(1, 1, 32768, 32768, 20, 4, t)  # BLOCK_D 32
    assert not rule(1, 1, 65536, 65536, 32, 4, t)
    assert not rule(1, 1, 16384, 16384, 64, 4, t) and not rule(1, 1, 32768, 32768, 33, 4, t)
    assert not rule(1, 1, 32768, 32768, 16, 2, t)
    assert not rule(1, 1, 1024, 1024, 16, 4, dataclasses.replace(t, fp32_pointers_upto=0))


def test_fp32_forward_keeps_the_scale_unfolded_at_the_tunings_head_dims(monkeypatch):
    """The pointer and split forwards of fp32 inputs whose head dim (as BLOCK_D) the tuning
    lists in fp32_unfolded_d scale the scores as a pass of their own (FOLD off; Hopper: d = 32,
    whose folded tiles the autotuner took slower ones for); other dims and dtypes, the TMA
    forward and the rule off fold a positive scale; a negative scale never folds. Each
    forward against float64, folded or not."""
    here = fa.tuning_for("attention", torch.empty(0, device=DEV).get_device())
    tuned = [dataclasses.replace(here, fp32_unfolded_d=(32,))]
    monkeypatch.setattr(fa, "tuning_for", lambda kind, device: tuned[0])
    seen, run = [], fa._run
    monkeypatch.setattr(fa, "_run", lambda name, *a, **kw: seen.append(kw["FOLD"])
                        or run(name, *a, **kw))
    cases = [(32, torch.float32, "pointers", None, False),
             (20, torch.float32, "split", None, False),
             (32, torch.float32, "pointers", -0.3, False),
             (16, torch.float32, "pointers", None, True),
             (32, torch.float16, "pointers", None, True), (32, torch.float32, "tma", None, True)]
    for d, dtype, impl, scale, fold in cases:
        q, k, v, do = inputs(1, 40, 48, d, dtype=dtype, heads=2)
        o, lse = fa.attention_forward(q.detach(), k.detach(), v.detach(), True, scale, impl=impl)
        assert seen[-1] is fold, (d, dtype, impl, scale)
        want = reference(q, k, v, do, True, scale)
        assert rel_err(o, want[0]) < ATTENTION_TOLERANCES[dtype], (d, dtype, impl, scale)
        assert rel_err(lse, want[1]) < ATTENTION_TOLERANCES[dtype], (d, dtype, impl, scale)
    tuned[0] = dataclasses.replace(here, fp32_unfolded_d=())
    fa.attention_forward(*(t.detach() for t in inputs(1, 40, 48, 32, heads=2)[:3]), True,
                         impl="pointers")
    assert seen[-1] is True


@pytest.mark.parametrize("impl", ["tma", "tma-host"])
def test_tma_ignores_the_strides_of_size_one_dimensions(impl):
    """A single query of a single head, sliced from fp16 rows of 20 (40 bytes): its strides
    are not 16-byte multiples, but no tile steps along them, so TMA takes it (with the
    strides a contiguous tensor would have)."""
    q = torch.randn(1, 1, 1, 20, generator=torch.Generator().manual_seed(0)).to(DEV).half()
    q = q[..., :16]
    _, k, v, do = inputs(1, 40, 40, 16, dtype=torch.float16, heads=1)
    assert fa.tma_problem(q, k, v) is None and q.stride(2) * 2 % 16
    forward_matches(q, k, v, do[:, :, :1], False, impl)
