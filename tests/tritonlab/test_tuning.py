"""The kernels' tuning (tritonlab/kernels/tuning.py): configs per GPU architecture, frozen, looked
up once per device, and read by the launch functions (checked on the simulator by giving them
small tunings that change which kernels run)."""
import dataclasses

import pytest
import torch

from tritonlab.kernels import _launch, _native
from tritonlab.kernels import matmul as mm
from tritonlab.kernels import rmsnorm as rn
from tritonlab.kernels import rowsum
from tritonlab.kernels import softmax as sm
from tritonlab.kernels import tuning

from torch_references import rand, rel_err

KINDS = tuple(tuning.TUNINGS)


@pytest.mark.parametrize("kind", KINDS)
def test_hopper_has_its_entry_and_other_devices_the_default(kind, monkeypatch):
    other = dataclasses.replace(tuning.DEFAULTS[kind])  # equal values, another object
    monkeypatch.setitem(tuning.DEFAULTS, kind, other)
    assert tuning.tuning_for_capability(kind, (9, 0)) is tuning.TUNINGS[kind][9]
    for capability in ((8, 0), (8, 9), (10, 0), (12, 0), None):  # None: the CPU
        assert tuning.tuning_for_capability(kind, capability) is other


def test_tuning_for_looks_each_device_up_once(monkeypatch):
    asked = []

    def capability(device):
        asked.append(device)
        return {0: (9, 0), 1: (8, 6)}[device]
    monkeypatch.setattr(torch.cuda, "get_device_capability", capability)
    tuning.tuning_for.cache_clear()
    try:
        for _ in range(3):
            assert tuning.tuning_for("matmul", 0) is tuning.TUNINGS["matmul"][9]
            assert tuning.tuning_for("matmul", 1) is tuning.DEFAULTS["matmul"]
            assert tuning.tuning_for("rmsnorm", -1) is tuning.DEFAULTS["rmsnorm"]  # a CPU tensor
    finally:
        tuning.tuning_for.cache_clear()
    assert asked == [0, 1]


@pytest.mark.parametrize("kind", KINDS)
def test_configs_are_frozen(kind):
    config = tuning.TUNINGS[kind][9]
    field = dataclasses.fields(config)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(config, field, 1)


def test_hopper_rules_give_the_measured_choices():
    """The rules read from the sm_90 tuning reproduce the choices made on the H200: backward
    warps of 16384-wide rows (32 in fp32, 16 in bf16), programs per SM for short and long
    rows, and the smallest matmul tile first (the fixed one and the simulator's)."""
    t = tuning.TUNINGS["rmsnorm"][9]
    assert t.bwd_warps(16384, 4) == 32 and t.bwd_warps(16384, 2) == 16
    assert t.bwd_warps(256, 2) == 4 and t.bwd_warps(32768, 4) == 32
    # holding the next row too: twice the warps, still at most bwd_max_warps
    assert t.bwd_warps(4096, 2, prefetch=True) == 8
    assert t.bwd_warps(16384, 4, prefetch=True) == 32
    h200, cpu = tuning.Device(0, 132), tuning.device_of(-1)
    assert t.bwd_programs(10**6, 1024, h200) == 4 * 132  # short rows: 4 programs per SM
    assert t.bwd_programs(10**6, 16384, h200) == 132  # long rows: clamped to 1 per SM
    assert t.bwd_programs(3, 1024, h200) == 3 and t.bwd_programs(10**6, 1024, cpu) == 8
    # the tiled backward: 8 // 2 = 4 programs per SM in bf16 (528 in all: 8 row blocks of the
    # 64 column blocks, so 8192 / 8 rows each), 2 in fp32 (4 row blocks)
    assert t.tiled_rows(8192, 65536, 4, 1024, 2, h200) == 1024
    assert t.tiled_rows(8192, 65536, 4, 1024, 4, h200) == 2048
    assert not cpu.on_gpu and cpu.sms == 0
    # the exchange kernels whose groups walk rows: whole groups, about per_sm programs per SM,
    # at least one, at most a group per row; the simulator's own count
    assert tuning.exchange_groups(2, 3, 8, 1024, h200) == 33  # 264 programs // 8 pieces
    assert tuning.exchange_groups(1, 3, 32, 256, h200) == 4
    assert tuning.exchange_groups(1, 3, 132, 256, h200) == 1  # 132 // 132
    assert tuning.exchange_groups(4, 3, 2, 5, h200) == 5  # no more groups than rows
    assert tuning.exchange_groups(2, 3, 8, 1024, cpu) == 3
    assert tuning.exchange_groups(2, 3, 8, 2, cpu) == 2
    # the backward's wide rows (H100 2026-12-06): the exchange from 16384 columns, its pieces
    # widening with the row in fp32, split meetings for bf16 rows past 65536
    assert t.bwd_register_max == 8192
    # (session 46: bf16 rows up to 65536 with the step loop pipelined over 3 stages)
    assert [t.bwd_exchange_tile(4, n) for n in (16384, 65536, 262144)] == [
        (2048, 4, False, None), (4096, 2, False, None), (8192, 1, False, None)]
    assert [t.bwd_exchange_tile(2, n) for n in (16384, 65536, 262144)] == [
        (4096, 2, False, 3), (4096, 2, False, 3), (2048, 4, True, None)]
    assert t.bwd_exchange_tile(8, 16384) is None  # fp64: the tiled backward
    x, g = rand(2, 16384), rand(16384)  # on the backend's device: the plans check it
    assert rn._Plan(x, g, tuning=t).bwd.kernel is rn.rmsnorm_bwd_exchange_kernel
    assert rn._Plan(x[:, :8192], g[:8192], tuning=t).bwd.kernel is rn.rmsnorm_bwd_kernel
    m = tuning.TUNINGS["matmul"][9]
    assert m.configs[0] == min(m.configs, key=lambda c: c[0] * c[1] * c[2])
    assert m.tune_above == 1 << 27 and m.tma_above == 1 << 34


def _recording(monkeypatch, module):
    """The kernels `module` launches from now on, in order: through `launch` and through the
    `Bound` launches of its plans (whose cache starts empty, so that new plans read the
    patched tuning)."""
    launched = []
    if hasattr(module, "launch"):
        real = module.launch
        monkeypatch.setattr(module, "launch",
                            lambda k, *a, **kw: launched.append(k) or real(k, *a, **kw))
        if not hasattr(module, "Bound"):
            return launched

    class Recording(_launch.Bound):
        __slots__ = ()

        def __call__(self, *args):
            launched.append(self.kernel)
            return super().__call__(*args)
    monkeypatch.setattr(module, "Bound", Recording)
    for name in ("_PLANS", "_LAUNCHES", "_ACT_GRAD", "_BOUNDS"):
        if hasattr(module, name):
            monkeypatch.setattr(module, name, _launch.PlanCache())
    for op in vars(module).values():  # the native path's plans hold the old tuning's launches
        if isinstance(op, _native.NativeOp):
            op.clear()
    return launched


def test_rmsnorm_reads_its_tuning(monkeypatch):
    """A tuning with small register limits sends the autograd path through the wide-row
    kernels: gradcheck in float64 through them, with chunks and tiles that leave tails."""
    small = dataclasses.replace(tuning.DEFAULTS["rmsnorm"], fwd_register_max=16,
                                bwd_register_max=16, wide_chunk=8, wide_fwd_chunk=8, tile_m=2,
                                tile_n=8)
    monkeypatch.setattr(rn, "tuning_for", lambda kind, device: small)
    launched = _recording(monkeypatch, rn)
    x = rand(2, 2, 20, dtype=torch.float64).requires_grad_()
    g = rand(20, dtype=torch.float64, seed=1).requires_grad_()
    assert torch.autograd.gradcheck(rn.rmsnorm, (x, g))
    assert set(launched) == {rn.rmsnorm_fwd_wide_kernel, rn.rmsnorm_bwd_dot_kernel,
                             rn.rmsnorm_bwd_tiled_kernel, rn.rmsnorm_dg_sum_kernel}


@pytest.mark.parametrize("shape,dtype,changes", [
    ((6, 300), torch.float32, {}),  # the whole-row kernels
    ((5, 40), torch.bfloat16, {"bwd_fuse_dg": 2}),  # the backward with dg's sum fused
    ((3, 40), torch.float32, {"fwd_register_max": 16, "bwd_register_max": 16,
                              "wide_chunk": 8, "wide_fwd_chunk": 8, "tile_m": 2,
                              "tile_n": 8}),  # chunked forward, coefficient and tiles
    ((4, 40), torch.bfloat16, {"fwd_register_max": 16, "bwd_register_max": 16,
                               "fwd_exchange": ((2, 0),), "exchange_block": 16,
                               "bwd_exchange": ((2, 16, 2, 1 << 31),)}),  # the exchanges
])
def test_rmsnorm_with_dependent_launches_gives_the_same_bits(shape, dtype, changes):
    """RMSNormTuning.pdl (programmatic dependent launch, off by default): every kernel of the
    plan launched with Triton's launch_pdl and its PDL constexpr (griddepcontrol.wait first,
    no-ops on the simulator), y, rstd, dx and dg bit for bit the plan without it."""
    assert tuning.TUNINGS["rmsnorm"][9].pdl is False
    plain = dataclasses.replace(tuning.DEFAULTS["rmsnorm"], **changes)
    on = dataclasses.replace(plain, pdl=True)
    x, g, dy = rand(*shape, dtype=dtype), rand(shape[1], dtype=dtype, seed=1), rand(
        *shape, dtype=dtype, seed=2)
    plan = rn._Plan(x, g, tuning=on)
    bounds = [b for b in (plan.fwd, plan.dot, plan.bwd, plan.dg_sum,
                          (plan.bwd_fused or (None,))[0]) if b is not None]
    assert all(b.kw["PDL"] is True and b.kw["launch_pdl"] is True for b in bounds)
    assert not any("PDL" in b.kw for b in (rn._Plan(x, g, tuning=plain).fwd,))
    want = rn._forward(x, g, 1e-6, tuning=plain)
    got = rn._forward(x, g, 1e-6, tuning=on)
    want += rn._backward(dy, x, g, want[1], tuning=plain)
    got += rn._backward(dy, x, g, got[1], tuning=on)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_rmsnorm_backward_rows_ahead_from_the_tuning(monkeypatch):
    """RMSNormTuning.bwd_prefetch_rows 2: the whole-row backward's prefetch two rows ahead
    with four times the warps (two: twice); the L2 hints (bwd_l2_ahead,
    bwd_exchange_l2_ahead, fwd_exchange_l2_next, SoftmaxTuning.exchange_l2_next) on a GPU
    only (inline PTX the simulator has no use for); other depths are refused. All off on
    Hopper."""
    hopper = tuning.TUNINGS["rmsnorm"][9]
    assert hopper.bwd_prefetch_rows == 1 and hopper.bwd_l2_ahead == 0
    x, g = rand(64, 2048), rand(2048, seed=1)
    one = dataclasses.replace(tuning.DEFAULTS["rmsnorm"], bwd_stages=None)
    plan = rn._Plan(x, g, tuning=one)
    assert plan.bwd.kw["PREFETCH"] is True and "L2_AHEAD" not in plan.bwd.kw
    two = rn._Plan(x, g, tuning=dataclasses.replace(one, bwd_prefetch_rows=2, bwd_l2_ahead=4))
    assert two.bwd.kw["PREFETCH"] == 2 and "L2_AHEAD" not in two.bwd.kw
    assert two.bwd.kw["num_warps"] == 2 * plan.bwd.kw["num_warps"]
    dy = rand(64, 2048, seed=2)
    _, rstd = rn._forward(x, g, 1e-6)
    want = rn._backward(dy, x, g, rstd, tuning=one)
    got = rn._backward(dy, x, g, rstd, tuning=dataclasses.replace(one, bwd_prefetch_rows=2))
    for a, b in zip(got, want):  # other warps: tl.sum's order, within rounding
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="bwd_prefetch_rows must be 1 or 2"):
        rn._Plan(x, g, tuning=dataclasses.replace(one, bwd_prefetch_rows=3))
    # the exchange backward's L2 hint: a GPU's only
    assert tuning.TUNINGS["rmsnorm"][9].bwd_exchange_l2_ahead == 0
    wide = rand(4, 40000)
    plan = rn._Plan(wide, rand(40000, seed=1), tuning=dataclasses.replace(
        tuning.DEFAULTS["rmsnorm"], bwd_exchange_l2_ahead=2))
    assert plan.bwd_exchange is not None and "L2_AHEAD" not in plan.bwd.kw
    # the exchange forwards' L2 hint for a later wave's rows: a GPU's only, about k programs
    # per SM's worth of rows ahead
    gpu = tuning.Device(0, sms=132)
    assert tuning.l2_rows_ahead(2, 8, gpu) == 33 and tuning.l2_rows_ahead(1, 200, gpu) == 1
    assert tuning.l2_rows_ahead(2, 8, tuning.Device(None)) == 0
    assert tuning.l2_rows_ahead(0, 8, gpu) == 0
    assert plan.exchange is not None and "L2_NEXT" not in plan.fwd.kw
    hinted = rn._Plan(wide, rand(40000, seed=1), tuning=dataclasses.replace(
        tuning.DEFAULTS["rmsnorm"], fwd_exchange_l2_next=2))
    assert hinted.exchange is not None and "L2_NEXT" not in hinted.fwd.kw
    soft = dataclasses.replace(tuning.DEFAULTS["softmax"], exchange_l2_next=2)
    monkeypatch.setattr(sm, "tuning_for", lambda kind, device: soft)
    assert "L2_NEXT" not in sm._Launch("softmax", -1, "exchange", None, None, wide).kernel.kw


def test_softmax_reads_its_tuning(monkeypatch):
    small = dataclasses.replace(tuning.DEFAULTS["softmax"], max_row_block=64, online_block=32,
                                online_block_fp32=64, online_bwd_block=16, exchange_block=32,
                                max_bwd_row_block=128)
    monkeypatch.setattr(sm, "tuning_for", lambda kind, device: small)
    launched = _recording(monkeypatch, sm)
    x = rand(5, 200, scale=3)
    # long fp32 rows: the exchange, in pieces of exchange_block; 16-bit rows: online
    assert rel_err(sm.softmax(x), torch.softmax(x.double(), -1)) < 2e-6
    assert rel_err(sm.softmax(x.half()), torch.softmax(x.half().double(), -1)) < 2e-3
    assert launched == [sm.softmax_exchange_kernel, sm.softmax_online_kernel]
    assert sm._plan(200, x, None, None, None) == ("exchange", 32, 1)
    assert sm._plan(200, x.half(), None, None, None) == ("online", 32, 1)
    # the backward's own widest whole row, then the online block
    assert sm._plan(100, x, None, None, None, backward=True)[:2] == ("rows", 128)
    assert sm._plan(200, x, None, None, None, backward=True) == ("online", 16, 1)
    assert sm._plan(200, x, "exchange", None, None, backward=True) == ("online", 16, 1)
    # 16-bit rows from exchange_rows' narrowest (Hopper's: from 262144 columns)
    wide16 = dataclasses.replace(small, exchange_rows=((4, 0), (2, 150)))
    monkeypatch.setattr(sm, "tuning_for", lambda kind, device: wide16)
    assert sm._plan(200, x.half(), None, None, None) == ("exchange", 32, 1)
    assert sm._plan(149, x.half(), None, None, None) == ("online", 32, 1)
    assert rel_err(sm.softmax(x.bfloat16(), variant="exchange", block_size=32),
                   torch.softmax(x.bfloat16().double(), -1)) < 8e-3
    assert tuning.TUNINGS["softmax"][9].exchange_rows == ((4, 0), (2, 262144))
    # exchange_stages: groups of a row's pieces walk rows in a pipelined loop (the meeting in
    # PTX on a GPU only), the same bits as a row per group; off by default
    assert tuning.TUNINGS["softmax"][9].exchange_stages is None
    one_row = sm.softmax(x)
    piped = dataclasses.replace(small, exchange_stages=2, simulator_loop_programs=2)
    monkeypatch.setattr(sm, "tuning_for", lambda kind, device: piped)
    monkeypatch.setattr(sm, "_LAUNCHES", sm.PlanCache())  # plans are made once per signature
    launch = sm._launch_for("softmax", -1, None, None, None, x)
    assert launch.kernel.kw["STAGES"] == 2 and launch.kernel.kw["PTX"] is x.is_cuda
    # groups of 7 pieces: 2 on the simulator (simulator_loop_programs), every row on a GPU
    groups = launch.tail[-1]
    assert launch.kernel.grid == (groups * 7,) and groups == (5 if x.is_cuda else 2)
    assert torch.equal(sm.softmax(x), one_row)
    monkeypatch.setattr(sm, "tuning_for", lambda kind, device: small)
    monkeypatch.setattr(sm, "_LAUNCHES", sm.PlanCache())
    # the online block of fp32 rows where the exchange would need too many programs
    monkeypatch.setattr(sm._exchange, "max_pieces", lambda x: 4)
    assert sm._plan(200, x, None, None, None) == ("online", 64, 1)


def test_softmax_row_stream_stores_the_same_bits(monkeypatch):
    """SoftmaxTuning.row_stream (off on every device until measured): the one-row and
    several-rows kernels launch with STREAM (their stores .cs, as Liger's) and give the same
    bits as without it."""
    assert not tuning.DEFAULTS["softmax"].row_stream
    x = rand(6, 40, scale=3)  # a short row: several rows a program
    wide = rand(3, 1500, scale=3)  # one row a program (a block past rows_below)
    plain = [sm.softmax(x), sm.softmax(wide)]
    streamed = dataclasses.replace(tuning.DEFAULTS["softmax"], row_stream=True)
    monkeypatch.setattr(sm, "tuning_for", lambda kind, device: streamed)
    monkeypatch.setattr(sm, "_LAUNCHES", sm.PlanCache())
    kinds = []
    real = _launch.Bound.__init__

    def bound(self, kernel, grid, **kw):
        kinds.append((kernel, kw.get("STREAM")))
        real(self, kernel, grid, **kw)
    monkeypatch.setattr(_launch.Bound, "__init__", bound)
    for want, got in zip(plain, (sm.softmax(x), sm.softmax(wide))):
        assert torch.equal(want, got)
    assert (sm.softmax_rows_kernel, True) in kinds and (sm.softmax_kernel, True) in kinds


def test_row_loop_stages_and_persistent_rows_follow_the_tuning(monkeypatch):
    """The pipelined row loops (docs/decisions.md#row-loop-stages): off in the devices'
    tunings (today's kernels, no STAGES); where a tuning sets them, RMSNorm's whole rows take
    the persistent forward and a staged backward, its wide rows staged chunk loops, softmax's
    whole rows the persistent kernel and its long rows staged online loops, and gradients
    still check in float64."""
    x = rand(4, 20, dtype=torch.float64).requires_grad_()
    g = rand(20, dtype=torch.float64, seed=1).requires_grad_()
    default = rn._Plan(x, g)
    assert default.fwd.kernel is rn.rmsnorm_fwd_kernel and "STAGES" not in default.fwd.kw
    assert sm._plan(40, x, None, None, None)[0] == "rows" and not tuning.DEFAULTS["softmax"].loop
    # Hopper's measured choice: the whole-row backward's loop in 3 stages for rows of at most
    # 2 KiB (PREFETCH off), not for longer ones
    assert default.bwd.kw["STAGES"] == 3 and default.bwd.kw["PREFETCH"] is False
    long_rows = rn._Plan(rand(4, 1024, dtype=torch.float64), rand(1024, dtype=torch.float64))
    assert "STAGES" not in long_rows.bwd.kw and long_rows.bwd.kw["PREFETCH"] is True

    staged = dataclasses.replace(tuning.DEFAULTS["rmsnorm"], fwd_loop=True, fwd_loop_stages=3,
                                 bwd_stages=2)
    monkeypatch.setattr(rn, "tuning_for", lambda kind, device: staged)
    launched = _recording(monkeypatch, rn)
    assert torch.autograd.gradcheck(rn.rmsnorm, (x, g))
    assert set(launched) == {rn.rmsnorm_fwd_loop_kernel, rn.rmsnorm_bwd_kernel,
                             rn.rmsnorm_dg_sum_kernel}
    plan = rn._plan(x.detach(), g.detach())
    assert plan.fwd.kw["STAGES"] == 3 and plan.fwd_tail == (4,)
    device = tuning.device_of(x.get_device())
    assert plan.fwd.grid == (staged.fwd_loop_programs(4, device),)
    assert plan.fwd.grid == ((4,) if device.on_gpu else (min(4, staged.simulator_programs),))
    assert plan.bwd.kw["STAGES"] == 2 and plan.bwd.kw["PREFETCH"] is False

    wide = dataclasses.replace(staged, fwd_register_max=16, bwd_register_max=16, wide_chunk=8,
                               wide_fwd_chunk=8, tile_m=2, tile_n=8, wide_stages=3)
    monkeypatch.setattr(rn, "tuning_for", lambda kind, device: wide)
    launched.clear()
    monkeypatch.setattr(rn, "_PLANS", _launch.PlanCache())
    assert torch.autograd.gradcheck(rn.rmsnorm, (x, g))
    plan = rn._plan(x.detach(), g.detach())
    assert [b.kw["STAGES"] for b in (plan.fwd, plan.dot, plan.bwd)] == [3, 3, 3]

    # wide rows of fp64 (8 bytes) read once by the exchange forward, in pieces of 8 columns
    exchange = dataclasses.replace(wide, fwd_exchange=((8, 0),), exchange_block=8)
    monkeypatch.setattr(rn, "tuning_for", lambda kind, device: exchange)
    monkeypatch.setattr(rn, "_PLANS", _launch.PlanCache())
    launched.clear()
    assert torch.autograd.gradcheck(rn.rmsnorm, (x, g))
    assert rn.rmsnorm_fwd_exchange_kernel in launched
    plan = rn._plan(x.detach(), g.detach())
    assert plan.exchange == (4, 3) and plan.fwd.grid == (12,)
    assert plan.fwd_tail == (4, 3, 4) and "STAGES" not in plan.fwd.kw  # a row per group
    # fwd_exchange_stages: groups walk rows in a pipelined loop (the meeting in PTX on a GPU
    # only), the same bits; off by default
    assert all(t.fwd_exchange_stages is None for t in tuning.TUNINGS["rmsnorm"].values())
    one_row = rn._forward(x.detach(), g.detach(), 1e-6, tuning=exchange)
    piped = dataclasses.replace(exchange, fwd_exchange_stages=2, fwd_exchange_per_sm=1,
                                simulator_programs=2)
    staged_plan = rn._Plan(x.detach(), g.detach(), tuning=piped)
    assert staged_plan.fwd.kw["STAGES"] == 2 and staged_plan.fwd.kw["PTX"] is x.is_cuda
    # groups of 3 pieces: 2 on the simulator (simulator_programs), every row on a GPU
    groups = staged_plan.fwd_tail[-1]
    assert staged_plan.fwd.grid == (groups * 3,) and groups == (4 if x.is_cuda else 2)
    for a, b in zip(rn._forward(x.detach(), g.detach(), 1e-6, tuning=piped), one_row):
        assert torch.equal(a, b)
    # no refusal for the exchange: the native node makes its buffers (test_native). On a GPU
    # the launches above ran through Triton's launcher, so the plan is made (or refused for a
    # reason of the machine's, never the exchange); on the simulator none did: no plan yet
    made = plan.native_plan()
    if device.on_gpu:
        assert made is not None and "exchange" not in plan.native_why
    else:
        assert made is None and plan.native_why == ""
    assert rn._Plan(x.float(), g.float(), tuning=exchange).exchange is None  # fp32: chunked
    # and the exchange backward: x and dy read once, pieces of 8 columns meeting row by row
    both = dataclasses.replace(exchange, bwd_exchange=((8, 8, 2, 1 << 20),))
    monkeypatch.setattr(rn, "tuning_for", lambda kind, device: both)
    monkeypatch.setattr(rn, "_PLANS", _launch.PlanCache())
    launched.clear()
    assert torch.autograd.gradcheck(rn.rmsnorm, (x, g))
    assert rn.rmsnorm_bwd_exchange_kernel in launched and rn.rmsnorm_bwd_dot_kernel not in launched
    split = dataclasses.replace(both, bwd_exchange_split=True)
    monkeypatch.setattr(rn, "tuning_for", lambda kind, device: split)
    monkeypatch.setattr(rn, "_PLANS", _launch.PlanCache())
    assert torch.autograd.gradcheck(rn.rmsnorm, (x, g))
    assert rn._plan(x.detach(), g.detach()).bwd.kw["SPLIT"] is True
    # an entry's own split flag wins over the table's
    entry = dataclasses.replace(both, bwd_exchange=((8, 8, 2, 1 << 20, True),))
    assert rn._Plan(x.detach(), g.detach(), tuning=entry).bwd.kw["SPLIT"] is True
    entry = dataclasses.replace(split, bwd_exchange=((8, 8, 2, 1 << 20, False),))
    assert "SPLIT" not in rn._Plan(x.detach(), g.detach(), tuning=entry).bwd.kw
    # the step loop pipelined where meetings are not split, its meeting in PTX on a GPU only
    piped = dataclasses.replace(entry, bwd_exchange_stages=3)
    kw = rn._Plan(x.detach(), g.detach(), tuning=piped).bwd.kw
    assert kw["STAGES"] == 3 and kw["PTX"] is x.is_cuda
    kw = rn._Plan(x.detach(), g.detach(), tuning=dataclasses.replace(split,
                                                                   bwd_exchange_stages=3)).bwd.kw
    assert "STAGES" not in kw and kw["SPLIT"] is True
    monkeypatch.setattr(rn, "tuning_for", lambda kind, device: both)
    monkeypatch.setattr(rn, "_PLANS", _launch.PlanCache())
    plan = rn._plan(x.detach(), g.detach())
    assert "SPLIT" not in plan.bwd.kw
    # rows per group rounded up to the step: two groups of two rows
    assert plan.bwd_exchange == (4, 3) and plan.partial_shape == (2, 20)
    assert plan.bwd.kw["ROWS"] == 2 and plan.bwd.grid == (6,)
    # more pieces than may wait for each other at once: the chunked forward, the tiled backward
    monkeypatch.setattr(rn._exchange, "max_pieces", lambda t: 2)
    plan = rn._Plan(x.detach(), g.detach(), tuning=both)
    assert plan.exchange is None and plan.bwd_exchange is None
    assert plan.bwd.kernel is rn.rmsnorm_bwd_tiled_kernel

    # stages capped by shared memory: fp32 rows of 32768 do not take 3 stages of 128 KiB
    assert tuning.fit_stages(3, 64 << 10) == 3 and tuning.fit_stages(4, 64 << 10) == 3
    assert tuning.fit_stages(3, 128 << 10) is None and tuning.fit_stages(None, 1) is None
    big = rand(2, 32768)
    assert rn._Plan(big, big[0], tuning=staged).fwd.kw["STAGES"] is None
    assert rn._Plan(big.half(), big[0].half(), tuning=staged).fwd.kw["STAGES"] == 3

    loops = dataclasses.replace(tuning.DEFAULTS["softmax"], loop=True, rows_below=16,
                                max_row_block=64, max_bwd_row_block=64, online_block=32,
                                online_bwd_block=16, online_stages=2)
    monkeypatch.setattr(sm, "tuning_for", lambda kind, device: loops)
    launched = _recording(monkeypatch, sm)
    for n_cols in (40, 200):  # whole rows: the persistent kernel; long rows: online
        xs = rand(5, n_cols, dtype=torch.float64, scale=3).requires_grad_()
        assert torch.autograd.gradcheck(lambda t: sm.softmax(t), (xs,))
    assert sm.softmax_loop_kernel in launched and sm.softmax_bwd_kernel in launched
    assert sm.softmax_online_kernel in launched and sm.softmax_bwd_online_kernel in launched
    half = rand(5, 200).half()
    assert sm._launch_for("softmax", -1, None, None, None, half).kernel.kw["STAGES"] == 2
    plan = sm._launch_for("softmax", -1, None, None, None, rand(5, 40))
    assert plan.kernel.kernel is sm.softmax_loop_kernel and plan.tail[-1] == 5
    programs = (loops.loop_per_sm * device.sms if device.on_gpu
                else loops.simulator_loop_programs)
    assert plan.kernel.grid == (min(5, programs),)


def test_row_sum_reads_its_tuning_and_a_block_size_runs_the_lecture_kernel(monkeypatch):
    small = dataclasses.replace(tuning.DEFAULTS["rowsum"], block=64, short_cols=16,
                                short_rows=4, bytes_per_warp=64, short_bytes_per_warp=128)
    monkeypatch.setattr(rowsum, "tuning_for", lambda kind, device: small)
    launched = _recording(monkeypatch, rowsum)
    for shape in ((7, 300), (9, 13), (5, 64)):  # steps of 64; 4 rows a program; one step
        x = rand(*shape)
        assert rel_err(rowsum.row_sum(x), x.double().sum(-1)) < 1e-6
        assert rel_err(rowsum.row_sum(x, 32), x.double().sum(-1)) < 1e-6
    assert launched == [rowsum.row_sum_rows_kernel, rowsum.row_sum_kernel] * 3
    x = rand(2, 300)
    for n_cols, dtype, want in ((300, torch.float32, (64, 1, 4)), (300, torch.float64, (64, 1, 8)),
                                (13, torch.float32, (16, 4, 4)), (13, torch.bfloat16, (16, 4, 4)),
                                (3000, torch.bfloat16, (64, 1, 4))):
        bound, tail = rowsum._bound(x.to(dtype), 10, n_cols, None)
        kw = bound.kw
        assert bound.kernel is rowsum.row_sum_rows_kernel and tail == (10, n_cols, n_cols)
        assert (kw["BLOCK_SIZE"], kw["ROWS"], kw["num_warps"]) == want


def test_matmul_tunes_once_then_launches_the_choice(monkeypatch):
    """Above `tune_above` the first call runs the autotuner and records its choice, which
    matmul_plan reports and later calls launch directly; below it the first config runs."""
    small = dataclasses.replace(tuning.DEFAULTS["matmul"], tune_above=40 ** 3)
    monkeypatch.setattr(mm, "tuning_for", lambda kind, device: small)
    monkeypatch.setattr(mm, "_BY_TUNING", {})
    mm._dispatches.cache_clear()
    launched = _recording(monkeypatch, mm)
    try:
        a, b = rand(48, 40), rand(40, 56, seed=1)
        assert mm.matmul_plan(a, b) == ("pointers", None)
        for _ in range(2):
            assert rel_err(mm.matmul(a, b), a.double() @ b.double()) < 2e-3
        kernel, config = mm.matmul_plan(a, b)
        assert kernel == "pointers" and config["BLOCK_M"] == small.configs[0][0]
        assert launched == [mm.matmul_kernel]  # the second call, with the recorded choice
        assert mm.matmul_plan(a, b, "relu") == ("pointers", None)  # another key: not tuned
        assert mm.matmul_plan(a[:16], b)[1] == mm._dispatches(-1)[1]["pointers"].fixed
    finally:
        mm._dispatches.cache_clear()
