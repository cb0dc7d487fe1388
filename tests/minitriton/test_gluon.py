"""Gluon kernels on minitriton: shared memory, mbarriers, TMA copies and warpgroup MMAs give the
numbers a float64 reference gives; layouts are carried and checked as Gluon's compiler checks
them; and the GPU's silent failures (a wait that never returns, a read of shared memory a copy
is still filling) are errors that say what is missing."""
import numpy as np
import pytest

import minitriton
from minitriton.errors import AsyncRaceError, CompilationError, DeadlockError
from minitriton.language.core import _aggregate
from minitriton.experimental import gluon
from minitriton.experimental.gluon import language as gl
from minitriton.experimental.gluon.language.nvidia.ampere import async_copy
from minitriton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)
from minitriton.experimental.gluon.nvidia.hopper import TensorDescriptor

runs_kernels = pytest.mark.usefixtures("executor")


def _desc(a, block):
    layout = gl.NVMMASharedLayout.get_default_for(block, gl.float16)
    return TensorDescriptor.from_tensor(a, block, layout)


@gluon.jit
def pipelined_matmul_kernel(a_desc, b_desc, c_ptr, M, N, K, STAGES: gl.constexpr,
                            WRONG_PHASE: gl.constexpr, num_warps: gl.constexpr):
    """C = A @ B^T (A (M, K), B (N, K), fp16; C fp32): A and B tiles through a ring of STAGES
    shared-memory slots filled by TMA, one mbarrier per slot, synchronous wgmma."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BN, 16])
    a_smem = gl.allocate_shared_memory(gl.float16, [STAGES, BM, BK], a_desc.layout)
    b_smem = gl.allocate_shared_memory(gl.float16, [STAGES, BN, BK], b_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(bars.index(s), count=1)
    fence_async_shared()
    off_m = gl.program_id(0) * BM
    off_n = gl.program_id(1) * BN
    n_k = gl.cdiv(K, BK)
    for s in gl.static_range(STAGES):  # the ring filled ahead
        mbarrier.expect(bars.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes,
                        pred=s < n_k)
        tma.async_copy_global_to_shared(a_desc, [off_m, s * BK], bars.index(s), a_smem.index(s),
                                        pred=s < n_k)
        tma.async_copy_global_to_shared(b_desc, [off_n, s * BK], bars.index(s), b_smem.index(s),
                                        pred=s < n_k)
    acc = gl.zeros([BM, BN], gl.float32, acc_layout)
    for k in range(n_k):
        slot = k % STAGES
        phase = (k // STAGES) & 1
        if WRONG_PHASE:
            phase = 0
        mbarrier.wait(bars.index(slot), phase)
        acc = warpgroup_mma(a_smem.index(slot), b_smem.index(slot).permute((1, 0)), acc)
        nxt = k + STAGES
        mbarrier.expect(bars.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes,
                        pred=nxt < n_k)
        tma.async_copy_global_to_shared(a_desc, [off_m, nxt * BK], bars.index(slot),
                                        a_smem.index(slot), pred=nxt < n_k)
        tma.async_copy_global_to_shared(b_desc, [off_n, nxt * BK], bars.index(slot),
                                        b_smem.index(slot), pred=nxt < n_k)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(s))
    rows = off_m + gl.arange(0, BM, layout=gl.SliceLayout(1, acc_layout))
    cols = off_n + gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    gl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=mask)


def _matmul(m, n, k, stages=2, wrong_phase=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    pipelined_matmul_kernel[(-(-m // 64), -(-n // 32))](
        _desc(a, [64, 16]), _desc(b, [32, 16]), c, m, n, k, STAGES=stages,
        WRONG_PHASE=wrong_phase, num_warps=4)
    return a, b, c


@runs_kernels
@pytest.mark.parametrize("m, n, k, stages", [
    (64, 32, 16, 2),    # one K step: the second slot's copies predicated off
    (128, 64, 80, 2),   # K not a multiple of the box: the last box zero-filled past K
    (100, 50, 112, 3),  # ragged M and N (masked store), slots refilled twice
])
def test_pipelined_wgmma_matmul_against_float64(m, n, k, stages):
    a, b, c = _matmul(m, n, k, stages)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


def test_the_race_sanitizer_passes_the_pipelined_matmul(executor):
    with minitriton.configure(races=True, order=True):
        a, b, c = _matmul(128, 64, 64, 2)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-5,
                               atol=1e-4)


def test_a_wait_on_a_phase_already_waited_for_is_the_gpus_hang():
    with pytest.raises(DeadlockError, match=r"phase=0\) never returns.*wrong phase parity") as e:
        _matmul(64, 32, 64, 2, wrong_phase=True)  # the third K step waits on phase 0 again
    assert "pipelined_matmul_kernel" in str(e.value) and "program (0, 0, 0)" in str(e.value)


@gluon.jit
def one_copy_kernel(x_desc, out_ptr, EXTRA_BYTES: gl.constexpr, WAIT: gl.constexpr,
                    num_warps: gl.constexpr):
    BM: gl.constexpr = x_desc.block_type.shape[0]
    BN: gl.constexpr = x_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [num_warps, 1], [1, 0])
    smem = gl.allocate_shared_memory(gl.float16, [BM, BN], x_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, x_desc.block_type.nbytes + EXTRA_BYTES)
    tma.async_copy_global_to_shared(x_desc, [0, 0], bar, smem)
    if WAIT:
        mbarrier.wait(bar, 0)
    tile = smem.load(layout)
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    gl.store(out_ptr + rows[:, None] * BN + cols[None, :], tile)


def _one_copy(extra=0, wait=True):
    x = np.arange(16 * 32, dtype=np.float16).reshape(16, 32)
    out = np.zeros_like(x)
    one_copy_kernel[(1,)](_desc(x, [16, 32]), out, EXTRA_BYTES=extra, WAIT=wait, num_warps=4)
    return x, out


def test_a_copy_waited_for_lands_whole():
    x, out = _one_copy()
    np.testing.assert_array_equal(out, x)


def test_expecting_more_bytes_than_the_copies_bring_hangs():
    with pytest.raises(DeadlockError, match="64 bytes announced by mbarrier.expect are still"):
        _one_copy(extra=64)


def test_reading_before_the_wait_is_a_race():
    with pytest.raises(AsyncRaceError, match="still filling: wait for the copy's barrier"):
        _one_copy(wait=False)


@gluon.jit
def layouts_kernel(out_ptr, CASE: gl.constexpr, num_warps: gl.constexpr):
    blocked: gl.constexpr = gl.BlockedLayout([1, 1], [4, 8], [num_warps, 1], [1, 0])
    other: gl.constexpr = gl.BlockedLayout([1, 1], [8, 4], [num_warps, 1], [1, 0])
    rows = gl.arange(0, 16, layout=gl.SliceLayout(1, blocked))
    cols = gl.arange(0, 32, layout=gl.SliceLayout(0, blocked))
    x = (rows[:, None] * 32 + cols[None, :]).to(gl.float32)  # in `blocked`
    gl.static_assert(x.type.layout == blocked)
    total = gl.sum(x, axis=1)
    gl.static_assert(total.type.layout == gl.SliceLayout(1, blocked))
    if CASE == 1:  # element-wise operands in two layouts
        x = x + gl.full([16, 32], 1.0, gl.float32, other)
    if CASE == 2:  # expand_dims of a slice along the other axis
        total = total[None, :]
    if CASE == 3:  # converted first: fine
        x = gl.convert_layout(x, other) + gl.full([16, 32], 1.0, gl.float32, other)
        x = gl.convert_layout(x, blocked) - 1.0
    gl.store(out_ptr + rows, total)
    gl.store(out_ptr + 16 + rows[:, None] * 32 + cols[None, :], x)


@pytest.mark.parametrize("case, error", [
    (1, "Layout mismatch in broadcast"),
    (2, "expected expand_dims input layout to be sliced in axis 0 but got 1"),
])
def test_layouts_are_checked_as_gluon_checks_them(case, error):
    with pytest.raises(CompilationError, match=error):
        layouts_kernel[(1,)](np.zeros(16 + 16 * 32, np.float32), CASE=case, num_warps=4)


def test_layouts_carried_through_reductions_and_conversions():
    out = np.zeros(16 + 16 * 32, np.float32)
    layouts_kernel[(1,)](out, CASE=3, num_warps=4)
    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    np.testing.assert_array_equal(out[:16], x.sum(axis=1))
    np.testing.assert_array_equal(out[16:].reshape(16, 32), x)


@gluon.jit
def async_misuse_kernel(x_desc, out_ptr, CASE: gl.constexpr, num_warps: gl.constexpr):
    BM: gl.constexpr = x_desc.block_type.shape[0]
    layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BM, 16])
    smem = gl.allocate_shared_memory(gl.float16, [BM, BM], x_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    if CASE != 1:
        mbarrier.init(bar, count=1)
    mbarrier.expect(bar, x_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(x_desc, [0, 0], bar, smem)
    mbarrier.wait(bar, 0)
    acc = warpgroup_mma(smem, smem.permute((1, 0)), gl.zeros([BM, BM], gl.float32, layout),
                        is_async=True)
    if CASE == 2:
        acc = acc * 2.0
    if CASE == 3:  # the MMA's operand refilled while it may still read it
        mbarrier.expect(bar, x_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(x_desc, [0, 0], bar, smem)
    if CASE == 4:
        smem.store(gl.zeros([BM, BM], gl.float16, layout))
    acc = warpgroup_mma_wait(0, deps=(acc,))
    if CASE == 5:  # retired: refilling is fine now
        mbarrier.expect(bar, x_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(x_desc, [0, 0], bar, smem)
        mbarrier.wait(bar, 1)
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, BM, layout=gl.SliceLayout(0, layout))
    gl.store(out_ptr + rows[:, None] * BM + cols[None, :], acc)


@pytest.mark.parametrize("case, error", [
    (1, "mbarrier.expect on a barrier that is not initialised"),
    (2, "unsupported operand type"),  # an asynchronous MMA's token is no block, as in Gluon
    (3, "tma.async_copy_global_to_shared overwrites shared memory that an asynchronous "
        "warpgroup_mma"),
    (4, "shared_memory_descriptor.store overwrites shared memory that an asynchronous"),
])
def test_barrier_and_async_mma_misuse(case, error):
    x = np.ones((64, 64), np.float16)
    with pytest.raises(minitriton.errors.MiniTritonError, match=error):
        async_misuse_kernel[(1,)](_desc(x, [64, 64]), np.zeros((64, 64), np.float32), CASE=case,
                                  num_warps=4)


@pytest.mark.parametrize("case", [0, 5])
def test_async_mma_waited_for(case):
    x = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float16)
    out = np.zeros((64, 64), np.float32)
    async_misuse_kernel[(1,)](_desc(x, [64, 64]), out, CASE=case, num_warps=4)
    want = x.astype(np.float64) @ x.astype(np.float64).T
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


@gluon.jit
def retire_order_kernel(x_desc, out_ptr, REFILL: gl.constexpr, num_warps: gl.constexpr):
    """Two asynchronous MMAs on two slots; a wait that leaves one outstanding retires the
    older, whose slot may then be refilled, not the newer's."""
    BM: gl.constexpr = x_desc.block_type.shape[0]
    layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BM, 16])
    smem = gl.allocate_shared_memory(gl.float16, [2, BM, BM], x_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, 2 * x_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(x_desc, [0, 0], bar, smem.index(0))
    tma.async_copy_global_to_shared(x_desc, [0, 0], bar, smem.index(1))
    mbarrier.wait(bar, 0)
    zeros = gl.zeros([BM, BM], gl.float32, layout)
    first = warpgroup_mma(smem.index(0), smem.index(0).permute((1, 0)), zeros, is_async=True)
    second = warpgroup_mma(smem.index(1), smem.index(1).permute((1, 0)), zeros, is_async=True)
    first = warpgroup_mma_wait(num_outstanding=1, deps=(first,))
    mbarrier.expect(bar, x_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(x_desc, [0, 0], bar, smem.index(REFILL))
    second = warpgroup_mma_wait(num_outstanding=0, deps=(second,))
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, BM, layout=gl.SliceLayout(0, layout))
    gl.store(out_ptr + rows[:, None] * BM + cols[None, :], first + second)


def test_waits_retire_the_oldest_mmas_first():
    x = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float16)
    out = np.zeros((64, 64), np.float32)
    retire_order_kernel[(1,)](_desc(x, [64, 64]), out, REFILL=0, num_warps=4)
    xx = x.astype(np.float64)
    np.testing.assert_allclose(out, 2 * xx @ xx.T, rtol=1e-5, atol=1e-4)
    with pytest.raises(AsyncRaceError, match="may still be reading"):
        retire_order_kernel[(1,)](_desc(x, [64, 64]), out, REFILL=1, num_warps=4)


@gluon.jit
def hazards_kernel(x_desc, out_ptr, CASE: gl.constexpr, num_warps: gl.constexpr):
    """One mistake per CASE, each wrong on the GPU (or refused by Gluon's compiler) and an
    error here; CASE 0 makes none of them."""
    BM: gl.constexpr = x_desc.block_type.shape[0]
    mma: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BM, 16])
    blocked: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [num_warps, 1], [1, 0])
    smem = gl.allocate_shared_memory(gl.float16, [2, BM, BM], x_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    mbarrier.init(bars.index(1), count=1)
    mbarrier.expect(bars.index(0), x_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(x_desc, [0, 0], bars.index(0), smem.index(0))
    if CASE == 1:  # a second copy into the buffer before the first one's wait
        mbarrier.expect(bars.index(1), x_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(x_desc, [0, 0], bars.index(1), smem.index(0))
        mbarrier.wait(bars.index(1), 0)
    if CASE == 2:  # a register store into it meanwhile
        smem.index(0).store(gl.zeros([BM, BM], gl.float16, blocked))
    mbarrier.wait(bars.index(0), 0)
    acc = gl.zeros([BM, BM], gl.float32, mma)
    tok = warpgroup_mma(smem.index(0), smem.index(0).permute((1, 0)), acc, is_async=True)
    if CASE == 3:  # its result taken while the wait leaves it in flight
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(tok,))
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(tok,))
    tile = smem.index(0).load(blocked)
    smem.index(1).store(tile)
    fence_async_shared()
    tma.async_copy_shared_to_global(x_desc, [0, 0], smem.index(1))
    if CASE == 4:  # the store's source rewritten before store_wait
        smem.index(1).store(tile)
    tma.store_wait(pendings=0)
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, mma))
    cols = gl.arange(0, BM, layout=gl.SliceLayout(0, mma))
    offs = rows[:, None] * BM + cols[None, :]
    if CASE == 5:  # pointers in one layout, the value in another
        gl.store(out_ptr + offs, gl.convert_layout(acc, blocked))
    if CASE == 6:  # a CoalescedLayout is a layout of its own, not AutoLayout
        acc = acc + gl.full([BM, BM], 0.0, gl.float32, gl.CoalescedLayout())
    if CASE == 7:  # A in registers in the wrong layout
        acc = warpgroup_mma(tile, smem.index(0), acc)
    if CASE == 8:  # a runtime byte count
        mbarrier.expect(bars.index(1), gl.program_id(0) + 64)
    gl.store(out_ptr + offs, acc)


@pytest.mark.parametrize("case, error", [
    (1, "writes shared memory that an earlier TMA copy may still be filling"),
    (2, "store writes shared memory that an earlier TMA copy"),
    (3, r"num_outstanding=1\) hands back the result of an MMA that may still be in flight"),
    (4, "overwrites shared memory that a TMA store"),
    (5, "Layout mismatch in broadcast"),
    (6, "Layout mismatch in broadcast"),
    (7, "operand a in registers needs a DotOperandLayout"),
    (8, "byte count must be a constexpr int"),
])
def test_gluon_hazards_are_errors(case, error):
    x = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float16)
    with pytest.raises(minitriton.errors.MiniTritonError, match=error):
        hazards_kernel[(1,)](_desc(x, [64, 64]), np.zeros((64, 64), np.float32), CASE=case,
                             num_warps=4)


def test_gluon_hazards_kernel_without_a_hazard():
    x = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float16)
    out = np.zeros((64, 64), np.float32)
    hazards_kernel[(1,)](_desc(x, [64, 64]), out, CASE=0, num_warps=4)
    xx = x.astype(np.float64)
    np.testing.assert_allclose(out, xx @ xx.T, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("warps, rows", [(4, 16), (4, 32), (8, 32)])
def test_wgmma_takes_64_rows_a_warp_group(warps, rows):
    x = np.ones((rows, rows), np.float16)
    with pytest.raises(CompilationError, match="make BLOCK_M a multiple of 64"):
        async_misuse_kernel[(1,)](_desc(x, [rows, rows]), np.zeros((rows, rows), np.float32),
                                  CASE=0, num_warps=warps)


@gluon.jit
def cp_async_kernel(x_ptr, out_ptr, n, CASE: gl.constexpr, BLOCK: gl.constexpr):
    """Two blocks through a ring of two buffers by cp.async in two commit groups; CASE 1 reads
    the second buffer when the wait leaves its group in flight, CASE 2 reads before any
    commit."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    smem = gl.allocate_shared_memory(gl.float32, [2, BLOCK],
                                     gl.SwizzledSharedLayout(1, 1, 1, order=[0]))
    offs = gl.arange(0, BLOCK, layout=layout)
    for i in gl.static_range(2):
        async_copy.async_copy_global_to_shared(smem.index(i), x_ptr + i * BLOCK + offs,
                                               mask=i * BLOCK + offs < n)
        if CASE != 2:
            async_copy.commit_group()
    async_copy.wait_group(1)  # the first group has landed, the second may not have
    first = smem.index(0).load(layout)
    if CASE == 1:
        first = first + smem.index(1).load(layout)
    async_copy.wait_group(0)
    second = smem.index(1).load(layout)
    gl.store(out_ptr + offs, first)
    gl.store(out_ptr + BLOCK + offs, second)


@pytest.mark.parametrize("case, error", [
    (0, None),
    (1, "reads shared memory that an async_copy.async_copy_global_to_shared may still be "
        "writing: wait_group with num_outstanding low enough first"),
    (2, "commit_group, then wait_group"),
])
def test_cp_async_groups(case, error):
    x = np.arange(200, dtype=np.float32)
    out = np.full(256, -1.0, np.float32)
    if error is not None:
        with pytest.raises(AsyncRaceError, match=error):
            cp_async_kernel[(1,)](x, out, 200, CASE=case, BLOCK=128)
        return
    cp_async_kernel[(1,)](x, out, 200, CASE=case, BLOCK=128)
    np.testing.assert_array_equal(out, np.concatenate([x, np.zeros(56, np.float32)]))


@gluon.jit
def _ws_producer(x_desc, smem, empty, ready, n_tiles, BM: gl.constexpr):
    for i in range(n_tiles):
        slot = i % 2
        mbarrier.wait(empty.index(slot), ((i // 2) & 1) ^ 1)  # a fresh barrier passes phase 1
        mbarrier.expect(ready.index(slot), x_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(x_desc, [i * BM, 0], ready.index(slot), smem.index(slot))


@gluon.jit
def _ws_consumer(out_ptr, smem, empty, ready, n_tiles, layout: gl.constexpr,
                 RELEASE: gl.constexpr):
    BM: gl.constexpr = smem.shape[1]
    BN: gl.constexpr = smem.shape[2]
    total = gl.zeros([BM, BN], gl.float32, layout)
    for i in range(n_tiles):
        slot = i % 2
        mbarrier.wait(ready.index(slot), (i // 2) & 1)
        total += smem.index(slot).load(layout).to(gl.float32)
        mbarrier.arrive(empty.index(slot), count=1, pred=RELEASE)
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    gl.store(out_ptr + rows[:, None] * BN + cols[None, :], total)
    return total


@gluon.jit
def ws_sum_kernel(x_desc, out_ptr, n_tiles, RELEASE: gl.constexpr, num_warps: gl.constexpr):
    """The sum of n_tiles row blocks: a producer partition streams them by TMA into two slots,
    the default partition adds them up and hands each slot back (RELEASE), on barriers."""
    BM: gl.constexpr = x_desc.block_type.shape[0]
    BN: gl.constexpr = x_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [num_warps, 1], [1, 0])
    smem = gl.allocate_shared_memory(gl.float16, [2, BM, BN], x_desc.layout)
    empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(2):
        mbarrier.init(empty.index(s), count=1)
        mbarrier.init(ready.index(s), count=1)
    total = gl.warp_specialize([
        (_ws_consumer, (out_ptr, smem, empty, ready, n_tiles, layout, RELEASE)),
        (_ws_producer, (x_desc, smem, empty, ready, n_tiles, BM)),
    ], [1], [24])
    gl.store(out_ptr + BM * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, layout)),
             gl.sum(total, axis=0))


@pytest.mark.usefixtures("executor")
def test_warp_specialized_partitions_meet_at_barriers():
    x = np.random.default_rng(4).standard_normal((5 * 16, 32)).astype(np.float16)
    out = np.zeros(16 * 32 + 32, np.float32)
    ws_sum_kernel[(1,)](_desc(x, [16, 32]), out, 5, RELEASE=True, num_warps=4)
    want = x.astype(np.float64).reshape(5, 16, 32).sum(axis=0)
    np.testing.assert_allclose(out[:16 * 32].reshape(16, 32), want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(out[16 * 32:], want.sum(axis=0), rtol=1e-5, atol=1e-3)


def test_partitions_that_all_wait_are_the_gpus_hang():
    x = np.ones((5 * 16, 32), np.float16)
    with pytest.raises(DeadlockError, match="every other partition of the warp-specialized "
                                            "region waits too"):
        ws_sum_kernel[(1,)](_desc(x, [16, 32]), np.zeros(16 * 32 + 32, np.float32), 5,
                            RELEASE=False, num_warps=4)


@_aggregate
class Staged:
    """A buffer and the count of blocks staged in it: the kind of state Gluon kernels pass
    between @jit functions (Triton's tutorials 07 and 08)."""
    buf: gl.shared_memory_descriptor
    count: gl.tensor

    @gluon.constexpr_function
    def __init__(self, buf, count):
        self.buf = buf
        self.count = count

    @gluon.jit
    def create(BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, order=[0])
        return Staged(gl.allocate_shared_memory(gl.float32, [BLOCK], layout), gl.to_tensor(0))

    @gluon.jit
    def stage(self, value):
        self.buf.store(value)
        return Staged(self.buf, self.count + 1)


@gluon.jit
def aggregate_kernel(x_ptr, out_ptr, bits_ptr, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    offs = gl.arange(0, BLOCK, layout=layout)
    staged = Staged.create(BLOCK)
    staged = staged.stage(gl.load(x_ptr + offs))
    gl.store(out_ptr + offs, staged.buf.load(layout) * staged.count.to(gl.float32))
    # the same bytes as int32 (a buffer reused for another type)
    bits = staged.buf._reinterpret(gl.int32, [BLOCK], staged.buf.layout)
    gl.store(bits_ptr + offs, bits.load(layout))


def test_aggregates_and_reinterpreted_buffers():
    x = np.random.default_rng(5).standard_normal(128).astype(np.float32)
    out, bits = np.zeros_like(x), np.zeros(128, np.int32)
    aggregate_kernel[(1,)](x, out, bits, BLOCK=128)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(bits, x.view(np.int32))
    with pytest.raises(AttributeError, match="Staged has no attribute 'other'"):
        Staged(1, 2).other = 3


def test_gluon_through_the_triton_standin():
    """A program written for Triton imports Gluon under Triton's names."""
    with minitriton.install_as_triton():
        from triton.experimental import gluon as g
        from triton.experimental.gluon.language.nvidia.hopper import tma as t
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as D
        assert g.jit is gluon.jit and t is tma and D is TensorDescriptor
        with pytest.raises(ImportError, match="not in minitriton"):
            exec("from triton.experimental.gluon.language import bank_conflicts")


@gluon.jit
def tma_reduce_kernel(x_desc, acc_desc, CASE: gl.constexpr, num_warps: gl.constexpr):
    """Every program adds its (BM, BM) block of x into the fp32 box of `acc_desc` at
    (program_id, program_id) * BM/2 by the TMA unit's bulk reduction through two shared
    buffers; CASE 1 rewrites a buffer the reduction may still be reading, CASE 2 names no
    reduction minitriton knows, CASE 3 starts the box before the tensor."""
    BM: gl.constexpr = x_desc.block_type.shape[0]
    blocked: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [num_warps, 1], [1, 0])
    smem = gl.allocate_shared_memory(gl.float16, [BM, BM], x_desc.layout)
    out = gl.allocate_shared_memory(gl.float32, [2, BM, BM], acc_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, x_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(x_desc, [gl.program_id(0) * BM, 0], bar, smem)
    mbarrier.wait(bar, 0)
    tile = smem.load(blocked).to(gl.float32)
    at = gl.program_id(0) * (BM // 2)
    if CASE == 3:
        at -= BM // 2
    for step in gl.static_range(2):  # the tile, then twice the tile: three times it in all
        buf = out.index(step % 2)
        if CASE != 1:
            tma.store_wait(1)
        buf.store(tile * (step + 1))
        fence_async_shared()
        if CASE == 2:
            tma.async_reduce_shared_to_global(acc_desc, [at, at], buf, kind="mul")
        tma.async_reduce_shared_to_global(acc_desc, [at, at], buf)
        if CASE == 1:
            buf.store(tile)
    tma.store_wait(0)


@runs_kernels
def test_tma_reductions_add_into_global_memory_clipped_at_its_edges():
    """Programs' boxes overlap (every BM/2 rows and columns): each element receives every
    covering program's three times its block, the last box's part past the (64, 64) tensor
    dropped, as the TMA unit does; the reductions are atomic."""
    bm, programs = 32, 4
    x = np.random.default_rng(5).standard_normal((programs * bm, bm)).astype(np.float16)
    acc = np.zeros((64, 64), np.float32)
    layout = gl.NVMMASharedLayout.get_default_for([bm, bm], gl.float32)
    tma_reduce_kernel[(programs,)](_desc(x, [bm, bm]),
                                   TensorDescriptor.from_tensor(acc, [bm, bm], layout), CASE=0,
                                   num_warps=4)
    want = np.zeros((64 + bm, 64 + bm))  # room for the last box's clipped half
    for p in range(programs):
        at = p * bm // 2
        want[at:at + bm, at:at + bm] += 3 * x[p * bm:(p + 1) * bm].astype(np.float64)
    np.testing.assert_allclose(acc, want[:64, :64], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case, error", [
    (1, "overwrites shared memory that a TMA store"),
    (2, "kind 'mul' is not one of add, min, max, and, or, xor"),
    (3, "TMA reductions need offsets >= 0"),
])
def test_tma_reduction_mistakes_are_errors(case, error):
    x = np.ones((32, 32), np.float16)
    acc = np.zeros((64, 64), np.float32)
    layout = gl.NVMMASharedLayout.get_default_for([32, 32], gl.float32)
    with pytest.raises(minitriton.errors.MiniTritonError, match=error):
        tma_reduce_kernel[(1,)](_desc(x, [32, 32]),
                                TensorDescriptor.from_tensor(acc, [32, 32], layout), CASE=case,
                                num_warps=4)
