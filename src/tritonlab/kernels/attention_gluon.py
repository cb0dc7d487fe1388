"""FlashAttention's forward in Gluon for Hopper (`flash_attention(..., fwd_impl="gluon")`).

Gluon is Triton's lower-level language: the kernel lays out its blocks, allocates shared memory
and drives the TMA unit, mbarriers and warpgroup MMAs (wgmma) itself, where tl-level Triton
leaves them to the compiler. That reaches cuDNN's forward where the tl kernels of
kernels/attention.py do not (H100, 2026-12-06: docs/attention.md "Gluon"). One program per
(query tile, batch*head):
  - Q arrives once by TMA; K and V stream through a ring of STAGES shared-memory slots, each
    filled by TMA and signalled on its own mbarrier, refilled with the tile STAGES ahead as
    soon as both of the tile's MMAs have read it;
  - S = Q K^T and O += P V are asynchronous wgmma (P stays in registers as the A operand);
  - the online softmax runs in the accumulators' own layout, the scale folded into exp2;
  - causal: the key tiles wholly below the diagonal unmasked, then those it crosses masked,
    and the longest query rows first (the programs of the last query tiles start first);
  - O leaves by TMA through Q's shared buffer (the warp-specialized kernel: a buffer of its
    own), L = m + log(l) (natural log) per row, fp32.
FlashAttention-3's forward is `gluon_attn_fwd_ws_kernel` ("gluon-ws", Hopper's default for
head dims above 64): two consumer warp groups in its intra-warpgroup overlap (the next tile's
S issued before this tile's softmax, `OVERLAP`) taking turns at the tensor cores (`PINGPONG`),
a loader warp, and one program per SM taking query tiles as it frees (`PERSISTENT`). Without
the specialization the overlap schedule was 0.77-0.88x the plain one on an H100; it stays
selectable for the probe (benchmarks/probes/gluon_attention.py).

The backward: D by the tl pass, then either two kernels (dK/dV per key tile, dQ per query
tile: `backward`; `ws=True`, each warp-specialized as the forward: two consumer warp groups
and a loader warp) or one pass (`backward_one_pass`: each key tile's share of dQ added into
an fp32 dQ by the TMA unit's bulk reduction, `GLUON.tma_reduce`).

The same source runs on minitriton, which models shared memory, mbarriers (phases and
transaction bytes), TMA copies and wgmma (minitriton/experimental/gluon), so the simulator runs
and checks it like every other kernel (CPU tests, the race sanitizer). It takes contiguous
fp16/bf16 inputs with as many keys as queries, a sequence length that is a multiple of both
tiles and a power-of-two head dim; `gluon_problem` says why others cannot, and the default
then falls back to the TMA forward.
"""
import functools

import torch

from ..backend import require_gluon
from ._checks import sm_count
from .tuning import tuning_for

GLUON = require_gluon()
gluon, gl = GLUON.gluon, GLUON.gl
mbarrier, tma = GLUON.hopper.mbarrier, GLUON.hopper.tma
fence_async_shared = GLUON.hopper.fence_async_shared
warpgroup_mma, warpgroup_mma_init = GLUON.hopper.warpgroup_mma, GLUON.hopper.warpgroup_mma_init
warpgroup_mma_wait = GLUON.hopper.warpgroup_mma_wait
tma_reduce = GLUON.tma_reduce  # the TMA unit's bulk reduction into global memory (dQ)

LOG2E = 1.4426950408889634
LN2 = gl.constexpr(0.6931471805599453)  # natural log of 2


@gluon.constexpr_function
def _acc_layout(cols, dtype, warps, col_warps=1):
    """wgmma's accumulator layout for `cols` columns of products of 16-bit `dtype` inputs:
    `warps` stacked along the rows, 16 rows each (a warp group's 4 warps per 64 rows), further
    ones (`col_warps` of them across) splitting the columns."""
    return gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[warps, col_warps],
        instr_shape=[16, cols // col_warps, 256 // dtype.primitive_bitwidth])


@gluon.constexpr_function
def _operand_layout(acc_layout, dtype):
    """wgmma's A operand from registers (P, dS) for an accumulator in `acc_layout`."""
    return gl.DotOperandLayout(operand_index=0, parent=acc_layout,
                               k_width=32 // dtype.primitive_bitwidth)


@gluon.jit
def _load_rows(desc_a, desc_b, smem_a, smem_b, bars, tile, row0, n_tiles, STAGES: gl.constexpr,
               BLOCK: gl.constexpr):
    """Tile `tile` (if there is one) of two tensors (K and V, Q and dO) into its ring slot, its
    barrier told the bytes. The caller's warpgroups have each waited for their MMAs that read
    the slot; the CTA barrier makes sure all of them have before one thread issues the copy
    (8 warps: 2 warpgroups)."""
    gl.thread_barrier()
    slot = tile % STAGES
    live = tile < n_tiles
    mbarrier.expect(bars.index(slot), 2 * desc_a.block_type.nbytes, pred=live)
    tma.async_copy_global_to_shared(desc_a, [row0 + tile * BLOCK, 0], bars.index(slot),
                                    smem_a.index(slot), pred=live)
    tma.async_copy_global_to_shared(desc_b, [row0 + tile * BLOCK, 0], bars.index(slot),
                                    smem_b.index(slot), pred=live)


@gluon.jit
def _init_ring(bars, STAGES: gl.constexpr, ARRIVALS: gl.constexpr = 1):
    """One barrier per ring slot, each completing a phase at ARRIVALS arrivals (1: a copy's
    expect; 2: both consumer warp groups handing the slot back)."""
    for s in gl.static_range(STAGES):
        mbarrier.init(bars.index(s), count=ARRIVALS)


@gluon.jit
def _invalidate_ring(bars, STAGES: gl.constexpr):
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(s))


@gluon.jit
def _online_softmax(s, m_i, l_i, qk_scale):
    """One key tile of the online softmax on raw scores s (the scale folded into exp2's
    argument): (P, the new row maxima, the factor that rescales the accumulator to them, the
    new row sums)."""
    m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
    alpha = gl.exp2(m_i - m_new)
    p = gl.exp2(s * qk_scale - m_new[:, None])
    return p, m_new, alpha, l_i * alpha + gl.sum(p, axis=1)


@gluon.jit
def _take_turn(kv_bars, r, STAGES: gl.constexpr, turns, ME: gl.constexpr,
               PINGPONG: gl.constexpr):
    """Waits until K of the key tile at ring position r (the r-th the program streams; without
    WS, K and V) has landed in its slot (returned) and, PINGPONG, for consumer ME's turn to
    issue MMAs: one barrier each, consumer ME waits for its own (the r-th time, consumer 0
    first: a fresh barrier's parity-1 wait passes)."""
    slot = r % STAGES
    mbarrier.wait(kv_bars.index(slot), (r // STAGES) & 1)
    if PINGPONG:
        mbarrier.wait(turns.index(ME), (r & 1) ^ (1 - ME))
    return slot


@gluon.jit
def _v_ready(kv_bars, r, STAGES: gl.constexpr, WS: gl.constexpr):
    """WS: waits until V at ring position r has landed (its own barrier, after the STAGES of
    K's; without WS one barrier covers K and V, and _take_turn waited for it)."""
    if WS:
        mbarrier.wait(kv_bars.index(STAGES + r % STAGES), (r // STAGES) & 1)


@gluon.jit
def _k_done(empty, r, STAGES: gl.constexpr, WS: gl.constexpr):
    """WS: K at ring position r handed back to the loader (its S is done with it)."""
    if WS:
        mbarrier.arrive(empty.index(r % STAGES), count=1)


@gluon.jit
def _pass_turn(turns, ME: gl.constexpr, PINGPONG: gl.constexpr):
    """PINGPONG: the turn to issue MMAs passed to the other consumer."""
    if PINGPONG:
        mbarrier.arrive(turns.index(1 - ME), count=1)


@gluon.jit
def _causal_mask(s, j, offs_m, BLOCK_N: gl.constexpr):
    """Scores of key tile j with the keys past each query row's own (offs_m) set to -inf."""
    offs_n = j * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s.type.layout))
    return gl.where(offs_m[:, None] >= offs_n[None, :], s, float("-inf"))


@gluon.jit
def _plain_steps(q_smem, k_smem, v_smem, kv_bars, empty, k_desc, v_desc, acc, m_i, l_i, zeros_s,
                 lo, hi, n_tiles, row0, base, offs_m, qk_scale, p_layout: gl.constexpr,
                 rows_o: gl.constexpr, STAGES: gl.constexpr, BLOCK_N: gl.constexpr,
                 MASK: gl.constexpr, WS: gl.constexpr, turns=None, ME: gl.constexpr = 0,
                 PINGPONG: gl.constexpr = False):
    """Key tiles lo..hi-1 (at ring positions base + lo, ...) of the plain schedule: S waited
    for at once, then the softmax step (MASK: keys past each query row's own set to -inf
    first), P V waited for, the slot
    refilled with the tile STAGES ahead; WS (a consumer partition of the warp-specialized
    forward): K and V in rings of their own, each slot handed back to the loader partition
    as soon as its MMA is done (`empty`: K's STAGES, then V's). PINGPONG (WS):
    the two consumers take turns issuing S (`turns`: one barrier each, consumer ME waits for
    its own, then passes the turn on; consumer 0 goes first), so that one's softmax runs
    while the other's S is on the tensor cores (FlashAttention-3's ping-pong)."""
    for j in range(lo, hi):
        slot = _take_turn(kv_bars, base + j, STAGES, turns, ME, PINGPONG)
        s_cur = warpgroup_mma(q_smem, k_smem.index(slot).permute((1, 0)), zeros_s,
                              use_acc=False, is_async=True)
        _pass_turn(turns, ME, PINGPONG)
        s_cur = warpgroup_mma_wait(num_outstanding=0, deps=(s_cur,))
        _k_done(empty, base + j, STAGES, WS)
        if MASK:
            s_cur = _causal_mask(s_cur, j, offs_m, BLOCK_N)
        p, m_i, alpha, l_i = _online_softmax(s_cur, m_i, l_i, qk_scale)
        acc = acc * gl.convert_layout(alpha, rows_o)[:, None]
        _v_ready(kv_bars, base + j, STAGES, WS)
        acc = warpgroup_mma(gl.convert_layout(p.to(v_smem.dtype), p_layout),
                            v_smem.index(slot), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        _free_slot(k_desc, v_desc, k_smem, v_smem, kv_bars, empty, base + j, row0, n_tiles,
                   STAGES, BLOCK_N, WS)
    return acc, m_i, l_i


@gluon.jit
def _overlap_steps(q_smem, k_smem, v_smem, kv_bars, empty, k_desc, v_desc, acc, m_i, l_i,
                   zeros_s, n_free, n_tiles, row0, base, offs_m, qk_scale,
                   p_layout: gl.constexpr, rows_o: gl.constexpr, STAGES: gl.constexpr,
                   BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr, WS: gl.constexpr, turns=None,
                   ME: gl.constexpr = 0, PINGPONG: gl.constexpr = False):
    """Every key tile in FlashAttention-3's intra-warpgroup overlap, in its order: S_0 and its
    softmax before the loop; step j issues S_j = Q K_j^T and then O += P_{j-1} V_{j-1}, waits
    for S_j alone (wgmma groups retire in order) and runs its softmax while P V is on the
    tensor cores, then waits for P V (P_{j-1}'s registers kept alive until then: the wait's
    deps), frees tile j - 1's slot (refilled with tile j - 1 + STAGES; WS: handed back to the
    loader) and rescales O to tile j's row maxima; P_{n-1} V_{n-1} after the loop. Nothing
    crosses a step in flight (an in-flight value carried over the loop's back edge makes
    ptxas serialize every wgmma, C7515). CAUSAL: the tiles from n_free on masked (tile 0
    always: where it needs none, the mask changes nothing). PINGPONG (WS): a step's two MMAs
    are issued in the consumer's turn (`turns`, as in _plain_steps), so that one consumer's
    softmax runs while the other's MMAs are on the tensor cores (FlashAttention-3's
    ping-pong). Without WS, tile j + 1 is loaded a step after its slot frees: STAGES >= 3
    hides that copy."""
    slot = _take_turn(kv_bars, base, STAGES, turns, ME, PINGPONG)
    s_cur = warpgroup_mma(q_smem, k_smem.index(slot).permute((1, 0)), zeros_s, use_acc=False,
                          is_async=True)
    _pass_turn(turns, ME, PINGPONG)
    s_cur = warpgroup_mma_wait(num_outstanding=0, deps=(s_cur,))
    _k_done(empty, base, STAGES, WS)
    if CAUSAL:
        s_cur = _causal_mask(s_cur, 0, offs_m, BLOCK_N)
    p, m_i, _, l_i = _online_softmax(s_cur, m_i, l_i, qk_scale)  # the accumulator is zero
    p = gl.convert_layout(p.to(v_smem.dtype), p_layout)
    for j in range(1, n_free):
        acc, p, m_i, l_i = _overlap_step(q_smem, k_smem, v_smem, kv_bars, empty, k_desc,
                                         v_desc, acc, p, m_i, l_i, zeros_s, j, n_tiles, row0,
                                         base, offs_m, qk_scale, p_layout, rows_o, STAGES,
                                         BLOCK_N, False, WS, turns, ME, PINGPONG)
    if CAUSAL:
        for j in range(gl.maximum(n_free, 1), n_tiles):
            acc, p, m_i, l_i = _overlap_step(q_smem, k_smem, v_smem, kv_bars, empty, k_desc,
                                             v_desc, acc, p, m_i, l_i, zeros_s, j, n_tiles,
                                             row0, base, offs_m, qk_scale, p_layout, rows_o,
                                             STAGES, BLOCK_N, True, WS, turns, ME, PINGPONG)
    last = base + n_tiles - 1
    _v_ready(kv_bars, last, STAGES, WS)
    acc = warpgroup_mma(p, v_smem.index(last % STAGES), acc, is_async=True)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, p))[0]
    _free_slot(k_desc, v_desc, k_smem, v_smem, kv_bars, empty, last, row0, n_tiles, STAGES,
               BLOCK_N, WS)
    return acc, m_i, l_i


@gluon.jit
def _overlap_step(q_smem, k_smem, v_smem, kv_bars, empty, k_desc, v_desc, acc, p, m_i, l_i,
                  zeros_s, j, n_tiles, row0, base, offs_m, qk_scale, p_layout: gl.constexpr,
                  rows_o: gl.constexpr, STAGES: gl.constexpr, BLOCK_N: gl.constexpr,
                  MASK: gl.constexpr, WS: gl.constexpr, turns, ME: gl.constexpr,
                  PINGPONG: gl.constexpr):
    """Step j of _overlap_steps: (the accumulator with P_{j-1} V_{j-1} and rescaled, P_j in
    the MMA's operand layout, the row maxima and sums through tile j)."""
    r = base + j
    _v_ready(kv_bars, r - 1, STAGES, WS)
    slot = _take_turn(kv_bars, r, STAGES, turns, ME, PINGPONG)
    s_cur = warpgroup_mma(q_smem, k_smem.index(slot).permute((1, 0)), zeros_s, use_acc=False,
                          is_async=True)
    acc = warpgroup_mma(p, v_smem.index((r - 1) % STAGES), acc, is_async=True)
    _pass_turn(turns, ME, PINGPONG)
    s_cur = warpgroup_mma_wait(num_outstanding=1, deps=(s_cur,))
    _k_done(empty, r, STAGES, WS)
    if MASK:
        s_cur = _causal_mask(s_cur, j, offs_m, BLOCK_N)
    p_next, m_i, alpha, l_i = _online_softmax(s_cur, m_i, l_i, qk_scale)
    acc, p = warpgroup_mma_wait(num_outstanding=0, deps=(acc, p))
    _free_slot(k_desc, v_desc, k_smem, v_smem, kv_bars, empty, r - 1, row0, n_tiles, STAGES,
               BLOCK_N, WS)
    acc = acc * gl.convert_layout(alpha, rows_o)[:, None]
    return acc, gl.convert_layout(p_next.to(v_smem.dtype), p_layout), m_i, l_i


@gluon.jit
def _attend(q_smem, k_smem, v_smem, kv_bars, empty, k_desc, v_desc, acc, m_i, l_i, zeros_s,
            start_m, n_tiles, row0, base, offs_m, qk_scale, p_layout: gl.constexpr,
            rows_o: gl.constexpr, STAGES: gl.constexpr, BLOCK_N: gl.constexpr,
            CAUSAL: gl.constexpr, OVERLAP: gl.constexpr, WS: gl.constexpr, turns=None,
            ME: gl.constexpr = 0, PINGPONG: gl.constexpr = False):
    """Query rows offs_m (of a tile starting at start_m) against key tiles 0..n_tiles-1 in
    either schedule, streamed through the rings at positions base...base + n_tiles - 1 (the
    persistent kernel's later tiles continue its rings' count; 0 without WS); causal: the
    tiles wholly below the diagonal unmasked, then those it crosses masked. (acc, m_i, l_i)
    after the last tile."""
    n_free = start_m // BLOCK_N if CAUSAL else n_tiles
    if OVERLAP:
        acc, m_i, l_i = _overlap_steps(q_smem, k_smem, v_smem, kv_bars, empty, k_desc, v_desc,
                                       acc, m_i, l_i, zeros_s, n_free, n_tiles, row0, base,
                                       offs_m, qk_scale, p_layout, rows_o, STAGES, BLOCK_N,
                                       CAUSAL, WS, turns, ME, PINGPONG)
    else:
        acc, m_i, l_i = _plain_steps(q_smem, k_smem, v_smem, kv_bars, empty, k_desc, v_desc,
                                     acc, m_i, l_i, zeros_s, 0, n_free, n_tiles, row0, base,
                                     offs_m, qk_scale, p_layout, rows_o, STAGES, BLOCK_N, False,
                                     WS, turns, ME, PINGPONG)
        if CAUSAL:
            acc, m_i, l_i = _plain_steps(q_smem, k_smem, v_smem, kv_bars, empty, k_desc,
                                         v_desc, acc, m_i, l_i, zeros_s, n_free, n_tiles,
                                         n_tiles, row0, base, offs_m, qk_scale, p_layout,
                                         rows_o, STAGES, BLOCK_N, True, WS, turns, ME, PINGPONG)
    return acc, m_i, l_i


@gluon.jit
def _free_slot(k_desc, v_desc, k_smem, v_smem, kv_bars, empty, tile, row0, n_tiles,
               STAGES: gl.constexpr, BLOCK_N: gl.constexpr, WS: gl.constexpr):
    """The ring slot of position `tile` (without WS, the key tile itself), whose MMAs are
    done: WS, V's handed back to the loader partition (K's went at _k_done); else K's and
    V's refilled with the tile STAGES ahead."""
    if WS:
        mbarrier.arrive(empty.index(STAGES + tile % STAGES), count=1)
    else:
        _load_rows(k_desc, v_desc, k_smem, v_smem, kv_bars, tile + STAGES, row0, n_tiles,
                   STAGES, BLOCK_N)


@gluon.jit
def _fwd_epilogue(acc, m_i, l_i, o_smem, o_desc, lse_ptr, row, rows_o: gl.constexpr):
    """O = acc / l through `o_smem` (whose readers are done; the caller's last O store from
    it waited for first) by TMA to rows row.. of the output, L = m + log(l) (natural log) per
    row. The store is left in flight: tma.store_wait before the program ends."""
    out = acc / gl.convert_layout(l_i, rows_o)[:, None]
    tma.store_wait(pendings=0)
    o_smem.store(out.to(o_smem.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [row, 0], o_smem)
    offs = row + gl.arange(0, m_i.shape[0], layout=m_i.type.layout)
    gl.store(lse_ptr + offs, (m_i + gl.log2(l_i)) * LN2)


@gluon.jit
def _post_tile(tiles, tile_ready, tile_empty, i, t):
    """The loader's i-th query tile, t (n_query_tiles: no more), into slot i % 2 of the
    tile ring once both consumers have read what was there."""
    slot = i % 2
    mbarrier.wait(tile_empty.index(slot), ((i // 2) & 1) ^ 1)
    one_warp: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    tiles.index(slot).store(gl.full([1], t, gl.int32, one_warp))
    gl.thread_barrier()
    mbarrier.arrive(tile_ready.index(slot), count=1)


@gluon.jit
def _take_tile(tiles, tile_ready, tile_empty, i):
    """A consumer's i-th query tile, as the loader posted it."""
    slot = i % 2
    mbarrier.wait(tile_ready.index(slot), (i // 2) & 1)
    warp_group: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    t = gl.max(tiles.index(slot).load(warp_group), axis=0)
    mbarrier.arrive(tile_empty.index(slot), count=1)
    return t


@gluon.jit
def _next_tile(counter_ptr, n_query_tiles, PERSISTENT: gl.constexpr):
    """The program's next query tile: PERSISTENT, the next one nobody has taken (the launch's
    first `programs` went one each; `counter_ptr` counts those taken since), else none."""
    t = n_query_tiles
    if PERSISTENT:
        t = gl.num_programs(0) + gl.atomic_add(counter_ptr, 1)
    return t


@gluon.jit
def _ws_consumer(q_smem, o_smem, k_smem, v_smem, q_ready, q_empty, ready, empty, turns, tiles,
                 tile_ready, tile_empty, o_desc, lse_ptr, n_ctx, n_query_tiles, qk_scale,
                 HALF: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                 OVERLAP: gl.constexpr, PINGPONG: gl.constexpr):
    """One consumer partition (one warp group) of the warp-specialized forward: query rows
    HALF*64 ... of each query tile of 128 the loader posts (`tiles`), every key tile the
    loader hands it, in the plain schedule or (OVERLAP) the overlap one; PINGPONG: the
    consumers' MMAs issued in turn. Q's buffer goes back to the loader (`q_empty`) as soon as
    a tile's MMAs are done, so the next tile's Q loads under this one's epilogue."""
    ROWS: gl.constexpr = q_smem.shape[1]
    HEAD_DIM: gl.constexpr = q_smem.shape[2]
    BLOCK_N: gl.constexpr = k_smem.shape[1]
    s_layout: gl.constexpr = _acc_layout(BLOCK_N, q_smem.dtype, 4)  # one warp group
    o_layout: gl.constexpr = _acc_layout(HEAD_DIM, q_smem.dtype, 4)
    p_layout: gl.constexpr = _operand_layout(o_layout, q_smem.dtype)
    rows_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    rows_o: gl.constexpr = gl.SliceLayout(1, o_layout)
    q = q_smem.index(HALF)
    zeros_s = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    n_m = n_ctx // (2 * ROWS)  # query tiles a head
    base = 0  # ring position of the tile's first key tile
    i = 0  # the program's query tiles so far
    t = _take_tile(tiles, tile_ready, tile_empty, 0)
    while t < n_query_tiles:
        start_m, row0, n_tiles = _query_tile(t % n_m, t // n_m, n_ctx, 2 * ROWS, BLOCK_N,
                                             CAUSAL)
        m_i = gl.full([ROWS], float("-inf"), gl.float32, rows_s)
        l_i = gl.full([ROWS], 0.0, gl.float32, rows_s)
        acc = gl.zeros([ROWS, HEAD_DIM], gl.float32, o_layout)
        offs_m = start_m + HALF * ROWS + gl.arange(0, ROWS, layout=rows_s)
        mbarrier.wait(q_ready, i & 1)
        acc, m_i, l_i = _attend(q, k_smem, v_smem, ready, empty, None, None, acc, m_i, l_i,
                                zeros_s, start_m, n_tiles, row0, base, offs_m, qk_scale,
                                p_layout, rows_o, STAGES, BLOCK_N, CAUSAL, OVERLAP, True, turns,
                                HALF, PINGPONG)
        mbarrier.arrive(q_empty, count=1)
        _fwd_epilogue(acc, m_i, l_i, o_smem.index(HALF), o_desc, lse_ptr,
                      row0 + start_m + HALF * ROWS, rows_o)
        base += n_tiles
        i += 1
        t = _take_tile(tiles, tile_ready, tile_empty, i)
    tma.store_wait(pendings=0)


@gluon.jit
def _ws_consumer_1(q_smem, o_smem, k_smem, v_smem, q_ready, q_empty, ready, empty, turns,
                   tiles, tile_ready, tile_empty, o_desc, lse_ptr, n_ctx, n_query_tiles,
                   qk_scale, STAGES: gl.constexpr, CAUSAL: gl.constexpr, OVERLAP: gl.constexpr,
                   PINGPONG: gl.constexpr):
    _ws_consumer(q_smem, o_smem, k_smem, v_smem, q_ready, q_empty, ready, empty, turns, tiles,
                 tile_ready, tile_empty, o_desc, lse_ptr, n_ctx, n_query_tiles, qk_scale, 1,
                 STAGES, CAUSAL, OVERLAP, PINGPONG)


@gluon.jit
def _ws_loader(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_ready, q_empty, ready, empty,
               tiles, tile_ready, tile_empty, counter_ptr, n_ctx, n_query_tiles,
               STAGES: gl.constexpr, CAUSAL: gl.constexpr, PERSISTENT: gl.constexpr):
    """The loader partition (one warp), for each of the program's query tiles (the first
    program_id; PERSISTENT, then each the next nobody has taken, until none is left: the
    GPU's own order, tiles to whichever program frees first), posted to the consumers
    (`tiles`, a ring of two) as it starts on them: the tile's first K, both halves of Q once
    the consumers are done with the last tile's (`q_empty`, two arrivals), then every key
    tile's K and V, each into its own ring (barriers: K's STAGES, then V's), K of tile j + 1
    ahead of V of tile j as FlashAttention-3's producer (S_{j+1} needs it first, and K's
    slot frees first); a slot is refilled once both consumers have handed it back (`empty`,
    two arrivals; a fresh barrier's parity-1 wait passes, so the first STAGES go at once).
    The rings' positions run on across the tiles."""
    ROWS: gl.constexpr = q_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    n_m = n_ctx // (2 * ROWS)  # query tiles a head
    base = 0
    i = 0
    t = gl.program_id(0)
    while t < n_query_tiles:
        _post_tile(tiles, tile_ready, tile_empty, i, t)
        start_m, row0, n_tiles = _query_tile(t % n_m, t // n_m, n_ctx, 2 * ROWS, BLOCK_N,
                                             CAUSAL)
        _load_ring_tile(k_desc, k_smem, ready, empty, base, row0, 0, STAGES)
        mbarrier.wait(q_empty, (i & 1) ^ 1)
        mbarrier.expect(q_ready, 2 * q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [row0 + start_m, 0], q_ready, q_smem.index(0))
        tma.async_copy_global_to_shared(q_desc, [row0 + start_m + ROWS, 0], q_ready,
                                        q_smem.index(1))
        for j in range(1, n_tiles):
            _load_ring_tile(k_desc, k_smem, ready, empty, base + j, row0 + j * BLOCK_N, 0,
                            STAGES)
            _load_ring_tile(v_desc, v_smem, ready, empty, base + j - 1,
                            row0 + (j - 1) * BLOCK_N, STAGES, STAGES)
        _load_ring_tile(v_desc, v_smem, ready, empty, base + n_tiles - 1,
                        row0 + (n_tiles - 1) * BLOCK_N, STAGES, STAGES)
        base += n_tiles
        i += 1
        t = _next_tile(counter_ptr, n_query_tiles, PERSISTENT)
    _post_tile(tiles, tile_ready, tile_empty, i, t)  # none left: the consumers stop


@gluon.jit
def _load_ring_tile(desc, smem, ready, empty, r, row, BARS: gl.constexpr, STAGES: gl.constexpr):
    """Rows row.. of one tensor into the slot of ring position r once the slot is free, on
    the barriers from BARS on."""
    slot = r % STAGES
    mbarrier.wait(empty.index(BARS + slot), ((r // STAGES) & 1) ^ 1)
    mbarrier.expect(ready.index(BARS + slot), desc.block_type.nbytes)
    tma.async_copy_global_to_shared(desc, [row, 0], ready.index(BARS + slot), smem.index(slot))


@gluon.jit
def gluon_attn_fwd_ws_kernel(q_desc, k_desc, v_desc, o_desc, lse_ptr, counter_ptr, n_ctx,
                             n_query_tiles, qk_scale, STAGES: gl.constexpr,
                             OVERLAP: gl.constexpr, CAUSAL: gl.constexpr,
                             PINGPONG: gl.constexpr, PERSISTENT: gl.constexpr,
                             num_warps: gl.constexpr):
    """The forward warp-specialized (FlashAttention-3's split; PINGPONG its ping-pong order):
    a program owns query tiles of 128 rows (its program_id; PERSISTENT, then whichever is
    next, counted at counter_ptr: a zeroed int32, until the launch's n_query_tiles are
    taken), each as two consumer warp groups of 64 (the default partition and a worker), and
    a loader warp that streams Q and K and V through rings both consumers read. The consumers
    meet at no CTA-wide barrier, so one's softmax overlaps the other's MMAs; the loader's few
    registers leave the consumers up to 240. q_desc and o_desc have 64-row boxes; O leaves
    through a buffer of its own, so that the next tile's Q loads under a tile's epilogue."""
    ROWS: gl.constexpr = q_desc.block_type.shape[0]
    HEAD_DIM: gl.constexpr = q_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    q_smem = gl.allocate_shared_memory(dtype, [2, ROWS, HEAD_DIM], q_desc.layout)
    o_smem = gl.allocate_shared_memory(dtype, [2, ROWS, HEAD_DIM], o_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], v_desc.layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    # K's ring then V's: a barrier per slot that its copy has landed, one that it is free
    ready = gl.allocate_shared_memory(gl.int64, [2 * STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [2 * STAGES, 1], mbarrier.MBarrierLayout())
    turns = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    tiles = gl.allocate_shared_memory(gl.int32, [2, 1], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    tile_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    tile_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_ready, count=1)
    mbarrier.init(q_empty, count=2)  # both consumers hand Q back
    _init_ring(ready, 2 * STAGES)
    _init_ring(turns, 2)
    _init_ring(tile_ready, 2)
    _init_ring(empty, 2 * STAGES, 2)  # both consumers hand a slot back
    _init_ring(tile_empty, 2, 2)  # ... and a posted tile
    fence_async_shared()
    gl.warp_specialize([
        (_ws_consumer, (q_smem, o_smem, k_smem, v_smem, q_ready, q_empty, ready, empty, turns,
                        tiles, tile_ready, tile_empty, o_desc, lse_ptr, n_ctx, n_query_tiles,
                        qk_scale, 0, STAGES, CAUSAL, OVERLAP, PINGPONG)),
        (_ws_consumer_1, (q_smem, o_smem, k_smem, v_smem, q_ready, q_empty, ready, empty, turns,
                          tiles, tile_ready, tile_empty, o_desc, lse_ptr, n_ctx, n_query_tiles,
                          qk_scale, STAGES, CAUSAL, OVERLAP, PINGPONG)),
        (_ws_loader, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_ready, q_empty, ready,
                      empty, tiles, tile_ready, tile_empty, counter_ptr, n_ctx, n_query_tiles,
                      STAGES, CAUSAL, PERSISTENT)),
    ], [4, 1], [240, 24])
    mbarrier.invalidate(q_ready)
    mbarrier.invalidate(q_empty)
    _invalidate_ring(ready, 2 * STAGES)
    _invalidate_ring(empty, 2 * STAGES)
    _invalidate_ring(turns, 2)
    _invalidate_ring(tile_ready, 2)
    _invalidate_ring(tile_empty, 2)


@gluon.jit
def gluon_attn_fwd_kernel(q_desc, k_desc, v_desc, o_desc, lse_ptr, n_ctx, qk_scale,
                          STAGES: gl.constexpr, OVERLAP: gl.constexpr, CAUSAL: gl.constexpr,
                          num_warps: gl.constexpr):
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
    HEAD_DIM: gl.constexpr = q_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    s_layout: gl.constexpr = _acc_layout(BLOCK_N, dtype, num_warps)
    o_layout: gl.constexpr = _acc_layout(HEAD_DIM, dtype, num_warps)
    p_layout: gl.constexpr = _operand_layout(o_layout, dtype)  # P stays in registers
    rows_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    rows_o: gl.constexpr = gl.SliceLayout(1, o_layout)

    start_m, row0, n_tiles = _query_tile(gl.program_id(0), gl.program_id(1), n_ctx, BLOCK_M,
                                         BLOCK_N, CAUSAL)

    q_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, HEAD_DIM], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    kv_bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    _init_ring(kv_bars, STAGES)
    fence_async_shared()  # the barriers' initialisation seen by the TMA unit

    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(q_desc, [row0 + start_m, 0], q_bar, q_smem)
    for s in gl.static_range(STAGES):
        _load_rows(k_desc, v_desc, k_smem, v_smem, kv_bars, s, row0, n_tiles, STAGES, BLOCK_N)

    m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, rows_s)
    l_i = gl.full([BLOCK_M], 0.0, gl.float32, rows_s)
    acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, o_layout)
    zeros_s = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout)
    mbarrier.wait(q_bar, 0)

    offs_m = start_m + gl.arange(0, BLOCK_M, layout=rows_s)
    acc, m_i, l_i = _attend(q_smem, k_smem, v_smem, kv_bars, kv_bars, k_desc, v_desc, acc, m_i,
                            l_i, zeros_s, start_m, n_tiles, row0, 0, offs_m, qk_scale,
                            p_layout, rows_o, STAGES, BLOCK_N, CAUSAL, OVERLAP, False)

    mbarrier.invalidate(q_bar)
    _invalidate_ring(kv_bars, STAGES)
    gl.thread_barrier()  # every warpgroup's last S (which read Q) is done
    _fwd_epilogue(acc, m_i, l_i, q_smem, o_desc, lse_ptr, row0 + start_m, rows_o)  # O through Q's
    tma.store_wait(pendings=0)


def tiles_for(q, t=None, ws=False):
    """(BLOCK_M, BLOCK_N, warps, stages) for q's head dim: the tuning's (kernels/tuning.py; `t`,
    else the device's), the simulator's small one on the CPU; `ws`: the warp-specialized
    forward's (128 queries a program on two consumer warp groups of 4 warps)."""
    t = t or tuning_for("attention", q.get_device())
    name = "gluon_ws" if ws else "gluon"
    if not q.is_cuda:
        return t.simulator(name)
    return getattr(t, f"{name}_small" if q.shape[-1] <= 64 else f"{name}_large")


def _inputs_problem(q, k, v, *others):
    """Why the Gluon kernels cannot read these (batch, [heads,] seq, d) tensors, or None."""
    if GLUON is None:
        return "this backend has no Gluon"
    if q.is_cuda and torch.cuda.get_device_capability(q.get_device())[0] != 9:
        return "it is written for Hopper (compute capability 9: wgmma)"
    if q.dtype not in (torch.float16, torch.bfloat16):
        return f"it takes fp16 and bf16, not {q.dtype}"
    tensors = (q, k, v, *others)
    if not all(t.is_contiguous() for t in tensors):
        return "it takes contiguous tensors"
    if any(t.data_ptr() % 16 for t in tensors):
        return "its TMA descriptors need 16-byte aligned tensors"
    n, d = q.shape[-2], q.shape[-1]
    if k.shape[-2] != n:
        return f"it takes as many keys as queries ({k.shape[-2]} keys, {n} queries)"
    if d < 16 or d & (d - 1):
        return f"its head dim must be a power of two of at least 16, not {d}"
    return None


def _tiles_problem(n, outer, inner, kernel, outer_name, inner_name):
    """Why a kernel whose programs own `outer` rows and step `inner` rows cannot run a
    sequence of n (the causal diagonal needs the outer tile a multiple of the inner one)."""
    if n % outer or n % inner or outer % inner:
        return (f"its {kernel} tiles ({outer} {outer_name} a program, {inner} {inner_name} a "
                f"step) must divide the sequence length {n}, the first a multiple of the "
                f"second")
    return None


def gluon_problem(q, k, v, tiles=None, ws=False):
    """Why the Gluon forward (`ws`: the warp-specialized one) cannot take these inputs (with
    `tiles`, else its own), or None."""
    bm, bn, _, _ = tiles or tiles_for(q, ws=ws)
    return _inputs_problem(q, k, v) or _tiles_problem(q.shape[-2], bm, bn, "forward",
                                                      "queries", "keys")


def _descriptor(t, rows, cols=None):
    """A (batch*heads*seq, d) TMA descriptor of contiguous t, boxes of `rows` rows and `cols`
    columns (None: all d)."""
    flat = t.view(-1, t.shape[-1])
    cols = cols or t.shape[-1]
    return GLUON.TensorDescriptor.from_tensor(flat, [rows, cols],
                                              _box_layout(rows, cols, t.dtype))


@functools.lru_cache(maxsize=None)
def _box_layout(rows, cols, dtype):
    """The shared layout of a (rows, cols) box of a torch dtype: computed once (a third of a
    descriptor's host time with Triton 3.6, 9 of 12 us on this machine's CPU)."""
    gl_dtype = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16,
                torch.float32: gl.float32}[dtype]
    return gl.NVMMASharedLayout.get_default_for([rows, cols], gl_dtype)


def forward(q, k, v, o, lse, causal, scale, tiles=None, overlap=False, ws=False,
            pingpong=False, persistent=False):
    """O into `o` (like q) and L into `lse` (fp32, q.shape[:-1], natural-log logsumexp per
    query row) for contiguous, non-empty q, k, v that gluon_problem accepts; `ws`: the
    warp-specialized kernel (tiles of 128 queries on two consumer warp groups of 4 warps),
    `pingpong` its consumers' MMAs issued in turn (either schedule; with `overlap`, the whole
    of FlashAttention-3's consumer loop), `persistent` one program per SM (on the CPU, two),
    each taking the next query tile nobody has taken until none is left (the tiles in the
    order a program per tile would run them: causal, each head's longest rows first)."""
    tiles = tiles or tiles_for(q, ws=ws)
    bm, bn, warps, stages = tiles
    problem = gluon_problem(q, k, v, tiles) or (
        ws and (bm, warps) != (128, 4) and
        f"the warp-specialized forward takes 128 queries a program on two warp groups of 4 "
        f"warps, not {bm} on {warps}") or (
        (pingpong or persistent) and not ws and
        "ping-pong and persistence are the warp-specialized forward's")
    if problem:
        raise ValueError(f"flash_attention: the Gluon forward cannot take these inputs: "
                         f"{problem}")
    n = q.shape[-2]
    zh = q.shape[0] * (q.shape[1] if q.dim() == 4 else 1)
    if ws:
        n_query_tiles = n // bm * zh
        programs = n_query_tiles
        if persistent:
            programs = min(programs, sm_count(q.get_device()) if q.is_cuda else 2)
        # the tiles taken (without persistence not read: lse stands in)
        counter = torch.zeros(1, dtype=torch.int32, device=q.device) if persistent else lse
        gluon_attn_fwd_ws_kernel[(programs,)](
            _descriptor(q, bm // 2), _descriptor(k, bn), _descriptor(v, bn),
            _descriptor(o, bm // 2), lse, counter, n, n_query_tiles, scale * LOG2E,
            STAGES=stages, OVERLAP=overlap, CAUSAL=bool(causal), PINGPONG=bool(pingpong),
            PERSISTENT=bool(persistent), num_warps=warps)
        return o, lse
    gluon_attn_fwd_kernel[(n // bm, zh)](
        _descriptor(q, bm), _descriptor(k, bn), _descriptor(v, bn), _descriptor(o, bm), lse, n,
        scale * LOG2E, STAGES=stages, OVERLAP=overlap, CAUSAL=bool(causal), num_warps=warps)
    return o, lse


# --------------------------------------------------------------------------------------------
# backward: D = rowsum(dO * O) by the tl kernel (kernels/attention.py), then two Gluon kernels
# on transposed tiles, as the tl two-kernel backward: dK/dV per key tile stepping the query
# tiles through a TMA ring, dQ per query tile stepping the key tiles; P recomputed from L


@gluon.jit
def _program_start(own_a, own_b, ring_a, ring_b, own_row, ring_row, n_tiles,
                   STAGES: gl.constexpr):
    """A backward program's shared memory and first copies: its own tile of two tensors (K and
    V, or Q and dO) at row `own_row` (`bar` told their bytes), and the other two's ring of
    STAGES slots with its first STAGES steps (of `n_tiles`) issued from row `ring_row`:
    (own_a, own_b, ring_a, ring_b, bar, bars) in shared memory."""
    dtype: gl.constexpr = own_a.dtype
    HEAD_DIM: gl.constexpr = own_a.block_type.shape[1]
    OWN: gl.constexpr = own_a.block_type.shape[0]
    RING: gl.constexpr = ring_a.block_type.shape[0]
    a_smem = gl.allocate_shared_memory(dtype, [OWN, HEAD_DIM], own_a.layout)
    b_smem = gl.allocate_shared_memory(dtype, [OWN, HEAD_DIM], own_b.layout)
    ring_a_smem = gl.allocate_shared_memory(dtype, [STAGES, RING, HEAD_DIM], ring_a.layout)
    ring_b_smem = gl.allocate_shared_memory(dtype, [STAGES, RING, HEAD_DIM], ring_b.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    _init_ring(bars, STAGES)
    fence_async_shared()
    mbarrier.expect(bar, 2 * own_a.block_type.nbytes)
    tma.async_copy_global_to_shared(own_a, [own_row, 0], bar, a_smem)
    tma.async_copy_global_to_shared(own_b, [own_row, 0], bar, b_smem)
    for s in gl.static_range(STAGES):
        _load_rows(ring_a, ring_b, ring_a_smem, ring_b_smem, bars, s, ring_row, n_tiles, STAGES,
                   RING)
    return a_smem, b_smem, ring_a_smem, ring_b_smem, bar, bars


@gluon.jit
def _key_tile_start(kv_bar, start_n, first, st_layout: gl.constexpr, kv_layout: gl.constexpr,
                    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr,
                    CAUSAL: gl.constexpr, TILE_N: gl.constexpr):
    """The state of BLOCK_N keys from start_n (a key-tile program's, or a warp group's share
    of it) once its own K and V have landed (`kv_bar`): (their offsets, dK and dV zeroed, the
    first query tile past the diagonal's masked ones: causal, the rows of the program's whole
    key tile of TILE_N, from `first`'s, are masked)."""
    offs_n = start_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, st_layout))
    dk = gl.zeros([BLOCK_N, HEAD_DIM], gl.float32, kv_layout)
    dv = gl.zeros([BLOCK_N, HEAD_DIM], gl.float32, kv_layout)
    mbarrier.wait(kv_bar, 0)
    free = first + TILE_N // BLOCK_M if CAUSAL else first
    return offs_n, dk, dv, free


@gluon.jit
def _key_tile_end(dk, dv, dk_ptr, dv_ptr, kv_bar, bars, row0, start_n, scale,
                  STAGES: gl.constexpr):
    """The barriers invalidated, dK (scaled) and dV of the key tile written."""
    mbarrier.invalidate(kv_bar)
    _invalidate_ring(bars, STAGES)
    _store_dkdv(dk, dv, dk_ptr, dv_ptr, row0, start_n, scale)


@gluon.jit
def _store_dkdv(dk, dv, dk_ptr, dv_ptr, row0, start_n, scale):
    """dK (scaled) and dV of the keys from start_n written."""
    _store_rows(dk * scale, dk_ptr, row0 + start_n)  # write BN*d
    _store_rows(dv, dv_ptr, row0 + start_n)  # write BN*d


@gluon.jit
def _store_rows(x, ptr, row):
    """The fp32 block x in ptr's type to rows row.. of a contiguous (rows, x.shape[1])."""
    cols = gl.arange(0, x.shape[1], layout=gl.SliceLayout(0, x.type.layout))
    rows = row + gl.arange(0, x.shape[0], layout=gl.SliceLayout(1, x.type.layout))
    gl.store(ptr + rows[:, None] * x.shape[1] + cols[None, :], x.to(ptr.dtype.element_ty))


@gluon.jit
def _ds_t_step(k_smem, v_smem, q_smem, do_smem, bars, i, step, dv, lse_ptr, delta_ptr, offs_n,
               qk_scale, st_layout: gl.constexpr, ds_layout: gl.constexpr,
               STAGES: gl.constexpr, MASK: gl.constexpr, STAGED: gl.constexpr = False):
    """Query tile i (ring step `step`) of a key tile, once its copies have landed: S^T = K Q^T
    and dP^T = V dO^T issued together (retired in order: dP^T runs while P^T = exp2(S^T - L)
    is computed), dV += P^T dO issued and left in flight; MASK: queries before each key row's
    own zeroed. L and D come from memory (lse_ptr, delta_ptr: this head's rows) or, STAGED,
    from the ring slot's shared buffers (lse_ptr, delta_ptr), where the loader put them with
    Q and dO, each read when it is needed. (dS^T = P^T (dP^T - D), dV in flight, the step's
    Q in shared memory)."""
    BLOCK_N: gl.constexpr = k_smem.shape[0]
    BLOCK_M: gl.constexpr = q_smem.shape[1]
    cols: gl.constexpr = gl.SliceLayout(0, st_layout)
    slot = step % STAGES
    mbarrier.wait(bars.index(slot), (step // STAGES) & 1)
    q = q_smem.index(slot)
    do = do_smem.index(slot)
    rows = i * BLOCK_M + gl.arange(0, BLOCK_M, layout=cols)
    if not STAGED:
        lse = gl.load(lse_ptr + rows) * 1.4426950408889634  # read BM
        delta = gl.load(delta_ptr + rows)  # read BM
    zeros = gl.zeros([BLOCK_N, BLOCK_M], gl.float32, st_layout)
    s_t = warpgroup_mma(k_smem, q.permute((1, 0)), zeros, use_acc=False, is_async=True)
    dp_t = warpgroup_mma(v_smem, do.permute((1, 0)), zeros, use_acc=False, is_async=True)
    s_t = warpgroup_mma_wait(num_outstanding=1, deps=(s_t,))
    if STAGED:
        lse = lse_ptr.index(slot).load(cols) * 1.4426950408889634
    p_t = gl.exp2(s_t * qk_scale - lse[None, :])
    if MASK:
        p_t = gl.where(rows[None, :] >= offs_n[:, None], p_t, 0.0)
    dv = warpgroup_mma(gl.convert_layout(p_t.to(q.dtype), ds_layout), do, dv, is_async=True)
    dp_t = warpgroup_mma_wait(num_outstanding=1, deps=(dp_t,))
    if STAGED:
        delta = delta_ptr.index(slot).load(cols)
    return p_t * (dp_t - delta[None, :]), dv, q


@gluon.jit
def _dkdv_steps(k_smem, v_smem, q_smem, do_smem, bars, q_desc, do_desc, dk, dv, lse_ptr,
                delta_ptr, offs_n, lo, hi, first, n_tiles, row0, qk_scale,
                st_layout: gl.constexpr, ds_layout: gl.constexpr, STAGES: gl.constexpr,
                BLOCK_M: gl.constexpr, MASK: gl.constexpr, WS: gl.constexpr = False,
                empty=None):
    """Query tiles lo..hi-1 of one key tile (ring positions from `first`): S^T = K Q^T,
    P^T = exp2(S^T - L), dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - D), dK += dS^T Q;
    each ring slot refilled with the step STAGES ahead once its MMAs are done, or (WS: a
    consumer warp group of the warp-specialized kernel, L and D staged in shared memory by
    the loader: lse_ptr and delta_ptr the ring's buffers) handed back to the loader
    (`empty`)."""
    for i in range(lo, hi):
        step = i - first
        ds_t, dv, q = _ds_t_step(k_smem, v_smem, q_smem, do_smem, bars, i, step, dv, lse_ptr,
                                 delta_ptr, offs_n, qk_scale, st_layout, ds_layout, STAGES,
                                 MASK, WS)
        dk = warpgroup_mma(gl.convert_layout(ds_t.to(q.dtype), ds_layout), q, dk, is_async=True)
        dk, dv = warpgroup_mma_wait(num_outstanding=0, deps=(dk, dv))
        if WS:
            mbarrier.arrive(empty.index(step % STAGES), count=1)
        else:
            _load_rows(q_desc, do_desc, q_smem, do_smem, bars, step + STAGES,
                       row0 + first * BLOCK_M, n_tiles, STAGES, BLOCK_M)
    return dk, dv


@gluon.jit
def gluon_attn_bwd_dkdv_kernel(q_desc, k_desc, v_desc, do_desc, dk_ptr, dv_ptr, lse_ptr,
                               delta_ptr, n_ctx, qk_scale, scale, STAGES: gl.constexpr,
                               CAUSAL: gl.constexpr, num_warps: gl.constexpr):
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
    HEAD_DIM: gl.constexpr = q_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    # keys along the rows: dK and dV (BLOCK_N, d), S^T and dP^T (BLOCK_N, BLOCK_M)
    kv_layout: gl.constexpr = _acc_layout(HEAD_DIM, dtype, num_warps)
    st_layout: gl.constexpr = _acc_layout(BLOCK_M, dtype, num_warps)
    ds_layout: gl.constexpr = _operand_layout(kv_layout, dtype)
    start_n = gl.program_id(0) * BLOCK_N
    zh = gl.program_id(1)
    row0 = zh * n_ctx
    n_q_tiles = n_ctx // BLOCK_M
    # causal: query tiles before this key tile see none of its keys; those of its own rows
    # (start_n ... start_n + BLOCK_N, BLOCK_N a multiple of BLOCK_M) are masked
    first = start_n // BLOCK_M if CAUSAL else 0

    n_tiles = n_q_tiles - first  # the ring's tiles, counted from `first`
    k_smem, v_smem, q_smem, do_smem, kv_bar, bars = _program_start(
        k_desc, v_desc, q_desc, do_desc, row0 + start_n, row0 + first * BLOCK_M, n_tiles, STAGES)

    offs_n, dk, dv, free = _key_tile_start(kv_bar, start_n, first, st_layout, kv_layout, BLOCK_M,
                                           BLOCK_N, HEAD_DIM, CAUSAL, BLOCK_N)
    lse_ptr += row0  # this head's rows
    delta_ptr += row0
    if CAUSAL:
        dk, dv = _dkdv_steps(k_smem, v_smem, q_smem, do_smem, bars, q_desc, do_desc, dk, dv,
                             lse_ptr, delta_ptr, offs_n, first, free, first, n_tiles, row0,
                             qk_scale, st_layout, ds_layout, STAGES, BLOCK_M, True)
    dk, dv = _dkdv_steps(k_smem, v_smem, q_smem, do_smem, bars, q_desc, do_desc, dk, dv,
                         lse_ptr, delta_ptr, offs_n, free, n_q_tiles, first, n_tiles, row0,
                         qk_scale, st_layout, ds_layout, STAGES, BLOCK_M, False)
    _key_tile_end(dk, dv, dk_ptr, dv_ptr, kv_bar, bars, row0, start_n, scale, STAGES)


@gluon.jit
def _ws_program_start(own_a, own_b, ring_a, ring_b, STAGES: gl.constexpr):
    """A warp-specialized backward program's shared memory: its own tile of two tensors (K
    and V, or Q and dO) as two halves of 64 rows, one a consumer warp group (the descriptors'
    boxes), the other two's ring of STAGES slots, and their barriers (the own tile's, a ready
    and an empty one per slot, both consumers handing a slot back):
    (own_a, own_b, ring_a, ring_b, own_bar, ready, empty)."""
    dtype: gl.constexpr = own_a.dtype
    HEAD_DIM: gl.constexpr = own_a.block_type.shape[1]
    ROWS: gl.constexpr = own_a.block_type.shape[0]
    RING: gl.constexpr = ring_a.block_type.shape[0]
    a_smem = gl.allocate_shared_memory(dtype, [2, ROWS, HEAD_DIM], own_a.layout)
    b_smem = gl.allocate_shared_memory(dtype, [2, ROWS, HEAD_DIM], own_b.layout)
    ring_a_smem = gl.allocate_shared_memory(dtype, [STAGES, RING, HEAD_DIM], ring_a.layout)
    ring_b_smem = gl.allocate_shared_memory(dtype, [STAGES, RING, HEAD_DIM], ring_b.layout)
    own_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(own_bar, count=1)
    _init_ring(ready, STAGES)
    _init_ring(empty, STAGES, 2)
    fence_async_shared()
    return a_smem, b_smem, ring_a_smem, ring_b_smem, own_bar, ready, empty


@gluon.jit
def _load_own_halves(desc_a, desc_b, a_smem, b_smem, bar, row):
    """A warp-specialized backward program's own tile of two tensors from row `row`, each as
    its two halves (one a consumer warp group), on one barrier."""
    ROWS: gl.constexpr = desc_a.block_type.shape[0]
    mbarrier.expect(bar, 4 * desc_a.block_type.nbytes)
    for h in gl.static_range(2):
        tma.async_copy_global_to_shared(desc_a, [row + h * ROWS, 0], bar, a_smem.index(h))
        tma.async_copy_global_to_shared(desc_b, [row + h * ROWS, 0], bar, b_smem.index(h))


@gluon.jit
def _ws_program_end(own_bar, ready, empty, STAGES: gl.constexpr):
    mbarrier.invalidate(own_bar)
    _invalidate_ring(ready, STAGES)
    _invalidate_ring(empty, STAGES)


@gluon.jit
def _ws_dkdv_consumer(k_smem, v_smem, q_smem, do_smem, lse_smem, delta_smem, kv_bar, ready,
                      empty, dk_ptr, dv_ptr, row0, start_n, first, n_q_tiles, qk_scale, scale,
                      HALF: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                      ds_smem=None, dq_smem=None, dq_desc=None, ds_bars=None,
                      SPLIT: gl.constexpr = False):
    """One consumer partition (one warp group) of the warp-specialized dK/dV kernel: keys
    start_n + HALF*64 ... of the program's 128 against every query tile the loader hands it
    (Q, dO, and L and D in shared memory), dK and dV of those keys written at the end. Both
    consumers step the same ring; causal, both mask the query tiles of the program's whole
    key tile. With dq_desc (the one pass), each also adds its keys' share of every query
    tile's dQ into the fp32 dQ, through its own dS buffer (ds_smem's HALF) and dQ buffer
    (dq_smem's HALF); SPLIT, half the columns of the share of both (_one_pass_steps)."""
    ROWS: gl.constexpr = k_smem.shape[1]
    HEAD_DIM: gl.constexpr = k_smem.shape[2]
    BLOCK_M: gl.constexpr = q_smem.shape[1]
    dtype: gl.constexpr = q_smem.dtype
    kv_layout: gl.constexpr = _acc_layout(HEAD_DIM, dtype, 4)  # one warp group
    st_layout: gl.constexpr = _acc_layout(BLOCK_M, dtype, 4)
    ds_layout: gl.constexpr = _operand_layout(kv_layout, dtype)
    k = k_smem.index(HALF)
    v = v_smem.index(HALF)
    keys0 = start_n + HALF * ROWS
    n_tiles = n_q_tiles - first
    offs_n, dk, dv, free = _key_tile_start(kv_bar, keys0, first, st_layout, kv_layout, BLOCK_M,
                                           ROWS, HEAD_DIM, CAUSAL, 2 * ROWS)
    if dq_desc is None:
        if CAUSAL:
            dk, dv = _dkdv_steps(k, v, q_smem, do_smem, ready, None, None, dk, dv, lse_smem,
                                 delta_smem, offs_n, first, free, first, n_tiles, row0,
                                 qk_scale, st_layout, ds_layout, STAGES, BLOCK_M, True, True,
                                 empty)
        dk, dv = _dkdv_steps(k, v, q_smem, do_smem, ready, None, None, dk, dv, lse_smem,
                             delta_smem, offs_n, free, n_q_tiles, first, n_tiles, row0, qk_scale,
                             st_layout, ds_layout, STAGES, BLOCK_M, False, True, empty)
    else:  # dQ's share: BLOCK_M query rows, one warp group's wgmma
        dq_layout: gl.constexpr = _acc_layout(HEAD_DIM // (1 + SPLIT), dtype, 4)
        if SPLIT:
            ds = ds_smem
        else:
            ds = ds_smem.index(HALF)
        if CAUSAL:
            dk, dv = _one_pass_steps(k, v, q_smem, do_smem, ds, dq_smem, ready, None, None,
                                     dq_desc, dk, dv, lse_smem, delta_smem, offs_n, first, free,
                                     first, n_tiles, row0, qk_scale, scale, st_layout,
                                     dq_layout, ds_layout, STAGES, BLOCK_M, True, True, empty,
                                     HALF, 1, k_smem, ds_bars, SPLIT, HALF)
        dk, dv = _one_pass_steps(k, v, q_smem, do_smem, ds, dq_smem, ready, None, None, dq_desc,
                                 dk, dv, lse_smem, delta_smem, offs_n, free, n_q_tiles, first,
                                 n_tiles, row0, qk_scale, scale, st_layout, dq_layout, ds_layout,
                                 STAGES, BLOCK_M, False, True, empty, HALF, 1, k_smem, ds_bars,
                                 SPLIT, HALF)
        tma.store_wait(0)
    _store_dkdv(dk, dv, dk_ptr, dv_ptr, row0, keys0, scale)


@gluon.jit
def _ws_dkdv_consumer_1(k_smem, v_smem, q_smem, do_smem, lse_smem, delta_smem, kv_bar, ready,
                        empty, dk_ptr, dv_ptr, row0, start_n, first, n_q_tiles, qk_scale, scale,
                        STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    _ws_dkdv_consumer(k_smem, v_smem, q_smem, do_smem, lse_smem, delta_smem, kv_bar, ready,
                      empty, dk_ptr, dv_ptr, row0, start_n, first, n_q_tiles, qk_scale, scale, 1,
                      STAGES, CAUSAL)


@gluon.jit
def _ws_one_pass_consumer(k_smem, v_smem, q_smem, do_smem, lse_smem, delta_smem, kv_bar, ready,
                          empty, dk_ptr, dv_ptr, row0, start_n, first, n_q_tiles, qk_scale,
                          scale, ds_smem, dq_smem, dq_desc, ds_bars, STAGES: gl.constexpr,
                          CAUSAL: gl.constexpr, SPLIT: gl.constexpr, HALF: gl.constexpr = 0):
    """_ws_dkdv_consumer of the one pass (warp_specialize passes no None): also each query
    tile's dQ share of its keys (SPLIT: of half the columns, of both warp groups' keys)."""
    _ws_dkdv_consumer(k_smem, v_smem, q_smem, do_smem, lse_smem, delta_smem, kv_bar, ready,
                      empty, dk_ptr, dv_ptr, row0, start_n, first, n_q_tiles, qk_scale, scale,
                      HALF, STAGES, CAUSAL, ds_smem, dq_smem, dq_desc, ds_bars, SPLIT)


@gluon.jit
def _ws_one_pass_consumer_1(k_smem, v_smem, q_smem, do_smem, lse_smem, delta_smem, kv_bar,
                            ready, empty, dk_ptr, dv_ptr, row0, start_n, first, n_q_tiles,
                            qk_scale, scale, ds_smem, dq_smem, dq_desc, ds_bars,
                            STAGES: gl.constexpr, CAUSAL: gl.constexpr, SPLIT: gl.constexpr):
    _ws_one_pass_consumer(k_smem, v_smem, q_smem, do_smem, lse_smem, delta_smem, kv_bar, ready,
                          empty, dk_ptr, dv_ptr, row0, start_n, first, n_q_tiles, qk_scale,
                          scale, ds_smem, dq_smem, dq_desc, ds_bars, STAGES, CAUSAL, SPLIT, 1)


@gluon.jit
def _ws_dkdv_loader(k_desc, v_desc, q_desc, do_desc, k_smem, v_smem, q_smem, do_smem, lse_smem,
                    delta_smem, kv_bar, ready, empty, lse_ptr, delta_ptr, row0, start_n, first,
                    n_q_tiles, STAGES: gl.constexpr):
    """The loader partition (one warp) of the warp-specialized dK/dV kernel: both halves of
    the program's K and V once, then query tile first, first + 1, ... (Q and dO by TMA, L and
    D stored beside them before the slot's barrier is told to expect the copies: its arrival
    publishes them) into the ring, each slot refilled once both consumers have handed it back
    (`empty`, two arrivals)."""
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
    _load_own_halves(k_desc, v_desc, k_smem, v_smem, kv_bar, row0 + start_n)
    one_warp: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    for step in range(n_q_tiles - first):
        slot = step % STAGES
        row = row0 + (first + step) * BLOCK_M
        offs = row + gl.arange(0, BLOCK_M, layout=one_warp)
        lse = gl.load(lse_ptr + offs)  # read BM
        delta = gl.load(delta_ptr + offs)  # read BM
        mbarrier.wait(empty.index(slot), ((step // STAGES) & 1) ^ 1)
        lse_smem.index(slot).store(lse)
        delta_smem.index(slot).store(delta)
        gl.thread_barrier()
        mbarrier.expect(ready.index(slot), 2 * q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [row, 0], ready.index(slot), q_smem.index(slot))
        tma.async_copy_global_to_shared(do_desc, [row, 0], ready.index(slot),
                                        do_smem.index(slot))


@gluon.jit
def _ws_key_program(q_desc, k_desc, v_desc, do_desc, n_ctx, STAGES: gl.constexpr,
                    CAUSAL: gl.constexpr):
    """A warp-specialized key-tile program's place and shared memory: (start_n, row0,
    n_q_tiles, first, the staged L and D rings, then _ws_program_start's)."""
    ROWS: gl.constexpr = k_desc.block_type.shape[0]
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
    start_n = gl.program_id(0) * (2 * ROWS)
    row0 = gl.program_id(1) * n_ctx
    n_q_tiles = n_ctx // BLOCK_M
    first = start_n // BLOCK_M if CAUSAL else 0  # query tiles before see none of its keys
    rows_layout: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    lse_smem = gl.allocate_shared_memory(gl.float32, [STAGES, BLOCK_M], rows_layout)
    delta_smem = gl.allocate_shared_memory(gl.float32, [STAGES, BLOCK_M], rows_layout)
    k_smem, v_smem, q_smem, do_smem, kv_bar, ready, empty = _ws_program_start(
        k_desc, v_desc, q_desc, do_desc, STAGES)
    return (start_n, row0, n_q_tiles, first, lse_smem, delta_smem, k_smem, v_smem, q_smem,
            do_smem, kv_bar, ready, empty)


@gluon.jit
def gluon_attn_bwd_dkdv_ws_kernel(q_desc, k_desc, v_desc, do_desc, dk_ptr, dv_ptr, lse_ptr,
                                  delta_ptr, n_ctx, qk_scale, scale, STAGES: gl.constexpr,
                                  CAUSAL: gl.constexpr, num_warps: gl.constexpr):
    """The dK/dV kernel warp-specialized (FlashAttention-3's split of its backward): a
    program owns 128 keys as two consumer warp groups of 64 (the default partition and a
    worker), each with its own dK and dV, and a loader warp that streams Q and dO through a
    ring both read. The consumers meet at no CTA-wide barrier, so one's exponentials overlap
    the other's MMAs; the loader's few registers leave them up to 240. k_desc and v_desc have
    64-row boxes."""
    (start_n, row0, n_q_tiles, first, lse_smem, delta_smem, k_smem, v_smem, q_smem, do_smem,
     kv_bar, ready, empty) = _ws_key_program(q_desc, k_desc, v_desc, do_desc, n_ctx, STAGES,
                                             CAUSAL)
    gl.warp_specialize([
        (_ws_dkdv_consumer, (k_smem, v_smem, q_smem, do_smem, lse_smem, delta_smem, kv_bar,
                             ready, empty, dk_ptr, dv_ptr, row0, start_n, first, n_q_tiles,
                             qk_scale, scale, 0, STAGES, CAUSAL)),
        (_ws_dkdv_consumer_1, (k_smem, v_smem, q_smem, do_smem, lse_smem, delta_smem, kv_bar,
                               ready, empty, dk_ptr, dv_ptr, row0, start_n, first, n_q_tiles,
                               qk_scale, scale, STAGES, CAUSAL)),
        (_ws_dkdv_loader, (k_desc, v_desc, q_desc, do_desc, k_smem, v_smem, q_smem, do_smem,
                           lse_smem, delta_smem, kv_bar, ready, empty, lse_ptr, delta_ptr, row0,
                           start_n, first, n_q_tiles, STAGES)),
    ], [4, 1], [240, 24])
    _ws_program_end(kv_bar, ready, empty, STAGES)


@gluon.jit
def gluon_attn_bwd_one_pass_ws_kernel(q_desc, k_desc, v_desc, do_desc, dq_desc, dk_ptr, dv_ptr,
                                      lse_ptr, delta_ptr, n_ctx, qk_scale, scale,
                                      STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                                      SPLIT: gl.constexpr, num_warps: gl.constexpr):
    """The one pass warp-specialized: gluon_attn_bwd_dkdv_ws_kernel's program, each consumer
    warp group also adding its 64 keys' share of every query tile's dQ into the zeroed fp32
    dQ (dq_desc, BLOCK_M x d boxes) by TMA reductions, through its own dS^T and dQ
    buffers; SPLIT (dq_desc's boxes BLOCK_M x d/2), each adds half the columns of the query
    tile's whole share, both warp groups' keys (one reduction of the tile, as
    FlashAttention-3's)."""
    (start_n, row0, n_q_tiles, first, lse_smem, delta_smem, k_smem, v_smem, q_smem, do_smem,
     kv_bar, ready, empty) = _ws_key_program(q_desc, k_desc, v_desc, do_desc, n_ctx, STAGES,
                                             CAUSAL)
    ROWS: gl.constexpr = k_desc.block_type.shape[0]
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
    ds_smem = gl.allocate_shared_memory(
        q_desc.dtype, [2 * (1 + SPLIT), ROWS, BLOCK_M],
        gl.NVMMASharedLayout.get_default_for([ROWS, BLOCK_M], q_desc.dtype))
    dq_smem = gl.allocate_shared_memory(gl.float32, [2, BLOCK_M, dq_desc.block_type.shape[1]],
                                        dq_desc.layout)
    ds_bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    _init_ring(ds_bars, 2, 2)  # both consumers' dS^T of a step written
    gl.warp_specialize([
        (_ws_one_pass_consumer, (k_smem, v_smem, q_smem, do_smem, lse_smem, delta_smem, kv_bar,
                                 ready, empty, dk_ptr, dv_ptr, row0, start_n, first, n_q_tiles,
                                 qk_scale, scale, ds_smem, dq_smem, dq_desc, ds_bars, STAGES,
                                 CAUSAL, SPLIT)),
        (_ws_one_pass_consumer_1, (k_smem, v_smem, q_smem, do_smem, lse_smem, delta_smem,
                                   kv_bar, ready, empty, dk_ptr, dv_ptr, row0, start_n, first,
                                   n_q_tiles, qk_scale, scale, ds_smem, dq_smem, dq_desc,
                                   ds_bars, STAGES, CAUSAL, SPLIT)),
        (_ws_dkdv_loader, (k_desc, v_desc, q_desc, do_desc, k_smem, v_smem, q_smem, do_smem,
                           lse_smem, delta_smem, kv_bar, ready, empty, lse_ptr, delta_ptr, row0,
                           start_n, first, n_q_tiles, STAGES)),
    ], [4, 1], [240, 24])
    _ws_program_end(kv_bar, ready, empty, STAGES)
    _invalidate_ring(ds_bars, 2)


@gluon.jit
def _dq_steps(q_smem, do_smem, k_smem, v_smem, bars, k_desc, v_desc, dq, lse, delta, offs_m,
              lo, hi, n_tiles, row0, qk_scale, zeros_s, ds_layout: gl.constexpr,
              STAGES: gl.constexpr, BLOCK_N: gl.constexpr, MASK: gl.constexpr,
              WS: gl.constexpr = False, empty=None):
    """Key tiles lo..hi-1 of one query tile: S = Q K^T, P = exp2(S - L), dP = dO V^T,
    dS = P (dP - D), dQ += dS K; each ring slot refilled with the tile STAGES ahead once its
    MMAs are done, or (WS: a consumer warp group of the warp-specialized kernel) handed back
    to the loader (`empty`)."""
    for j in range(lo, hi):
        slot = j % STAGES
        mbarrier.wait(bars.index(slot), (j // STAGES) & 1)
        k = k_smem.index(slot)
        # dP runs while P is computed (asynchronous MMAs retire in order)
        s = warpgroup_mma(q_smem, k.permute((1, 0)), zeros_s, use_acc=False, is_async=True)
        dp = warpgroup_mma(do_smem, v_smem.index(slot).permute((1, 0)), zeros_s, use_acc=False,
                           is_async=True)
        s = warpgroup_mma_wait(num_outstanding=1, deps=(s,))
        p = gl.exp2(s * qk_scale - lse[:, None])
        if MASK:
            cols = j * BLOCK_N + gl.arange(0, BLOCK_N,
                                           layout=gl.SliceLayout(0, zeros_s.type.layout))
            p = gl.where(offs_m[:, None] >= cols[None, :], p, 0.0)
        dp = warpgroup_mma_wait(num_outstanding=0, deps=(dp,))
        ds = p * (dp - delta[:, None])
        dq = warpgroup_mma(gl.convert_layout(ds.to(k.dtype), ds_layout), k, dq)
        if WS:
            mbarrier.arrive(empty.index(slot), count=1)
        else:
            _load_rows(k_desc, v_desc, k_smem, v_smem, bars, j + STAGES, row0, n_tiles, STAGES,
                       BLOCK_N)
    return dq


@gluon.jit
def gluon_attn_bwd_dq_kernel(q_desc, k_desc, v_desc, do_desc, dq_ptr, lse_ptr, delta_ptr, n_ctx,
                             qk_scale, scale, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                             num_warps: gl.constexpr):
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
    HEAD_DIM: gl.constexpr = q_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    q_layout: gl.constexpr = _acc_layout(HEAD_DIM, dtype, num_warps)
    s_layout: gl.constexpr = _acc_layout(BLOCK_N, dtype, num_warps)
    ds_layout: gl.constexpr = _operand_layout(q_layout, dtype)
    start_m, row0, n_tiles = _query_tile(gl.program_id(0), gl.program_id(1), n_ctx, BLOCK_M,
                                         BLOCK_N, CAUSAL)
    q_smem, do_smem, k_smem, v_smem, q_bar, bars = _program_start(
        q_desc, do_desc, k_desc, v_desc, row0 + start_m, row0, n_tiles, STAGES)

    rows: gl.constexpr = gl.SliceLayout(1, s_layout)
    offs_m = start_m + gl.arange(0, BLOCK_M, layout=rows)
    lse = gl.load(lse_ptr + row0 + offs_m) * 1.4426950408889634  # read BM
    delta = gl.load(delta_ptr + row0 + offs_m)  # read BM
    dq = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, q_layout)
    zeros_s = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout)
    mbarrier.wait(q_bar, 0)
    n_free = start_m // BLOCK_N if CAUSAL else n_tiles
    dq = _dq_steps(q_smem, do_smem, k_smem, v_smem, bars, k_desc, v_desc, dq, lse, delta, offs_m,
                   0, n_free, n_tiles, row0, qk_scale, zeros_s, ds_layout, STAGES, BLOCK_N,
                   False)
    if CAUSAL:
        dq = _dq_steps(q_smem, do_smem, k_smem, v_smem, bars, k_desc, v_desc, dq, lse, delta,
                       offs_m, n_free, n_tiles, n_tiles, row0, qk_scale, zeros_s, ds_layout,
                       STAGES, BLOCK_N, True)
    mbarrier.invalidate(q_bar)
    _invalidate_ring(bars, STAGES)
    _store_rows(dq * scale, dq_ptr, row0 + start_m)


@gluon.jit
def _query_tile(m, head, n_ctx, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                CAUSAL: gl.constexpr):
    """Query tile m (of BLOCK_M rows) of head `head`: (its first query row, its head's first
    row in the (batch*heads*seq, d) view, its key tiles). Causal, the tiles count from the
    last, so that a launch's programs (or a persistent one's tiles, taken in order) start
    the longest query rows first, and the keys end at the tile's last query."""
    n_m = n_ctx // BLOCK_M
    if CAUSAL:
        m = n_m - 1 - m
    start_m = m * BLOCK_M
    if CAUSAL:
        n_tiles = (start_m + BLOCK_M) // BLOCK_N
    else:
        n_tiles = n_ctx // BLOCK_N
    return start_m, head * n_ctx, n_tiles


@gluon.jit
def _ws_dq_consumer(q_smem, do_smem, k_smem, v_smem, q_bar, ready, empty, dq_ptr, lse_ptr,
                    delta_ptr, row0, start_m, n_tiles, qk_scale, scale, HALF: gl.constexpr,
                    STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    """One consumer partition (one warp group) of the warp-specialized dQ kernel: query rows
    start_m + HALF*64 ... of the program's 128 against every key tile the loader hands it,
    their dQ written at the end; causal, both consumers mask the key tiles of the program's
    whole query tile."""
    ROWS: gl.constexpr = q_smem.shape[1]
    HEAD_DIM: gl.constexpr = q_smem.shape[2]
    BLOCK_N: gl.constexpr = k_smem.shape[1]
    dtype: gl.constexpr = q_smem.dtype
    q_layout: gl.constexpr = _acc_layout(HEAD_DIM, dtype, 4)  # one warp group
    s_layout: gl.constexpr = _acc_layout(BLOCK_N, dtype, 4)
    ds_layout: gl.constexpr = _operand_layout(q_layout, dtype)
    rows0 = start_m + HALF * ROWS
    offs_m = rows0 + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout))
    lse = gl.load(lse_ptr + row0 + offs_m) * 1.4426950408889634  # read BM
    delta = gl.load(delta_ptr + row0 + offs_m)  # read BM
    dq = gl.zeros([ROWS, HEAD_DIM], gl.float32, q_layout)
    zeros_s = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    q = q_smem.index(HALF)
    do = do_smem.index(HALF)
    mbarrier.wait(q_bar, 0)
    n_free = start_m // BLOCK_N if CAUSAL else n_tiles
    dq = _dq_steps(q, do, k_smem, v_smem, ready, None, None, dq, lse, delta, offs_m, 0, n_free,
                   n_tiles, row0, qk_scale, zeros_s, ds_layout, STAGES, BLOCK_N, False, True,
                   empty)
    if CAUSAL:
        dq = _dq_steps(q, do, k_smem, v_smem, ready, None, None, dq, lse, delta, offs_m, n_free,
                       n_tiles, n_tiles, row0, qk_scale, zeros_s, ds_layout, STAGES, BLOCK_N,
                       True, True, empty)
    _store_rows(dq * scale, dq_ptr, row0 + rows0)


@gluon.jit
def _ws_dq_consumer_1(q_smem, do_smem, k_smem, v_smem, q_bar, ready, empty, dq_ptr, lse_ptr,
                      delta_ptr, row0, start_m, n_tiles, qk_scale, scale, STAGES: gl.constexpr,
                      CAUSAL: gl.constexpr):
    _ws_dq_consumer(q_smem, do_smem, k_smem, v_smem, q_bar, ready, empty, dq_ptr, lse_ptr,
                    delta_ptr, row0, start_m, n_tiles, qk_scale, scale, 1, STAGES, CAUSAL)


@gluon.jit
def _ws_dq_loader(q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_smem, v_smem, q_bar,
                  ready, empty, row0, start_m, n_tiles, STAGES: gl.constexpr):
    """The loader partition (one warp) of the warp-specialized dQ kernel: both halves of the
    program's Q and dO once, then key tiles 0, 1, ... (K and V) into the ring, each slot
    refilled once both consumers have handed it back (`empty`, two arrivals)."""
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    _load_own_halves(q_desc, do_desc, q_smem, do_smem, q_bar, row0 + start_m)
    for j in range(n_tiles):
        slot = j % STAGES
        mbarrier.wait(empty.index(slot), ((j // STAGES) & 1) ^ 1)
        mbarrier.expect(ready.index(slot), 2 * k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [row0 + j * BLOCK_N, 0], ready.index(slot),
                                        k_smem.index(slot))
        tma.async_copy_global_to_shared(v_desc, [row0 + j * BLOCK_N, 0], ready.index(slot),
                                        v_smem.index(slot))


@gluon.jit
def gluon_attn_bwd_dq_ws_kernel(q_desc, k_desc, v_desc, do_desc, dq_ptr, lse_ptr, delta_ptr,
                                n_ctx, qk_scale, scale, STAGES: gl.constexpr,
                                CAUSAL: gl.constexpr, num_warps: gl.constexpr):
    """The dQ kernel warp-specialized, as the dK/dV one: a program owns 128 query rows as two
    consumer warp groups of 64, and a loader warp streams K and V through a ring both read.
    q_desc and do_desc have 64-row boxes."""
    ROWS: gl.constexpr = q_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    start_m, row0, n_tiles = _query_tile(gl.program_id(0), gl.program_id(1), n_ctx, 2 * ROWS,
                                         BLOCK_N, CAUSAL)
    q_smem, do_smem, k_smem, v_smem, q_bar, ready, empty = _ws_program_start(
        q_desc, do_desc, k_desc, v_desc, STAGES)
    gl.warp_specialize([
        (_ws_dq_consumer, (q_smem, do_smem, k_smem, v_smem, q_bar, ready, empty, dq_ptr,
                           lse_ptr, delta_ptr, row0, start_m, n_tiles, qk_scale, scale, 0,
                           STAGES, CAUSAL)),
        (_ws_dq_consumer_1, (q_smem, do_smem, k_smem, v_smem, q_bar, ready, empty, dq_ptr,
                             lse_ptr, delta_ptr, row0, start_m, n_tiles, qk_scale, scale,
                             STAGES, CAUSAL)),
        (_ws_dq_loader, (q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_smem, v_smem,
                         q_bar, ready, empty, row0, start_m, n_tiles, STAGES)),
    ], [4, 1], [240, 24])
    _ws_program_end(q_bar, ready, empty, STAGES)


@gluon.jit
def _one_pass_steps(k_smem, v_smem, q_smem, do_smem, ds_smem, dq_smem, bars, q_desc, do_desc,
                    dq_desc, dk, dv, lse_ptr, delta_ptr, offs_n, lo, hi, first, n_tiles, row0,
                    qk_scale, scale, st_layout: gl.constexpr, dq_layout: gl.constexpr,
                    ds_layout: gl.constexpr,
                    STAGES: gl.constexpr, BLOCK_M: gl.constexpr, MASK: gl.constexpr,
                    WS: gl.constexpr = False, empty=None, BUF0: gl.constexpr = 0,
                    NBUF: gl.constexpr = 2, k_all=None, ds_bars=None,
                    SPLIT: gl.constexpr = False, HALF: gl.constexpr = 0):
    """Query tiles lo..hi-1 of one key tile in one pass: _dkdv_steps' S^T, P^T, dV, dP^T and
    dS^T, then dS^T into shared memory, where both dK += dS^T Q and this tile's share of dQ,
    dS K, read it; that share leaves by a TMA reduction into the fp32 dQ through dq_smem's
    buffers BUF0 ... BUF0 + NBUF - 1 in turn (two: the reduction of one step runs while the
    next computes). WS: a consumer warp group of the warp-specialized one pass (its own dS
    and dQ buffers, L and D staged by the loader, each slot handed back to it: `empty`), as
    in _dkdv_steps; SPLIT, its warp group HALF's dQ share is half the head dim's columns
    over both warp groups' keys (FlashAttention-3's one reduction per query tile): the two
    write their dS^T into ds_smem's slots of the step's parity (2 x parity + HALF), meet at
    ds_bars (two arrivals a step), and multiply both by their halves of K (k_all) sliced to
    those columns."""
    HEAD_DIM: gl.constexpr = k_smem.shape[1]
    DQ_COLS: gl.constexpr = HEAD_DIM // (1 + SPLIT)
    COL0: gl.constexpr = HALF * DQ_COLS * SPLIT  # the first of the dQ share's columns
    for i in range(lo, hi):
        step = i - first
        ds_t, dv, q = _ds_t_step(k_smem, v_smem, q_smem, do_smem, bars, i, step, dv, lse_ptr,
                                 delta_ptr, offs_n, qk_scale, st_layout, ds_layout, STAGES,
                                 MASK, WS)
        if SPLIT:
            ds_buf = ds_smem.index((step % 2) * 2 + HALF)
        else:
            ds_buf = ds_smem
        ds_buf.store(ds_t.to(q.dtype))
        fence_async_shared()
        gl.thread_barrier()  # dS K reads the rows every warp group wrote
        dk = warpgroup_mma(ds_buf, q, dk, is_async=True)
        zeros = gl.zeros([BLOCK_M, DQ_COLS], gl.float32, dq_layout)
        if SPLIT:  # the other warp group's dS^T of this step written too
            mbarrier.arrive(ds_bars.index(step % 2), count=1)
            mbarrier.wait(ds_bars.index(step % 2), (step // 2) & 1)
            dq = warpgroup_mma(ds_smem.index((step % 2) * 2).permute((1, 0)),
                               k_all.index(0).slice(COL0, DQ_COLS, dim=1), zeros, use_acc=False,
                               is_async=True)
            dq = warpgroup_mma(ds_smem.index((step % 2) * 2 + 1).permute((1, 0)),
                               k_all.index(1).slice(COL0, DQ_COLS, dim=1), dq, is_async=True)
        else:
            dq = warpgroup_mma(ds_buf.permute((1, 0)), k_smem, zeros, use_acc=False,
                               is_async=True)
        dv, dk, dq = warpgroup_mma_wait(num_outstanding=0, deps=(dv, dk, dq))
        if WS:
            mbarrier.arrive(empty.index(step % STAGES), count=1)
        buf = dq_smem.index(BUF0 + step % NBUF)
        tma.store_wait(NBUF - 1)  # the reduction NBUF steps back has read this buffer
        gl.thread_barrier()
        buf.store(dq * scale)
        fence_async_shared()
        gl.thread_barrier()
        tma_reduce(dq_desc, [row0 + i * BLOCK_M, COL0], buf)  # read BM*d, add BM*d in L2
        if not WS:
            _load_rows(q_desc, do_desc, q_smem, do_smem, bars, step + STAGES,
                       row0 + first * BLOCK_M, n_tiles, STAGES, BLOCK_M)
    return dk, dv


@gluon.jit
def gluon_attn_bwd_one_pass_kernel(q_desc, k_desc, v_desc, do_desc, dq_desc, dk_ptr, dv_ptr,
                                   lse_ptr, delta_ptr, n_ctx, qk_scale, scale,
                                   STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                                   num_warps: gl.constexpr):
    """dK and dV of one key tile, and its share of every query tile's dQ added into the
    zeroed fp32 dQ (dq_desc) by TMA reductions: P^T and dS^T computed once (FlashAttention-3's
    Hopper backward, without its producer warps)."""
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
    HEAD_DIM: gl.constexpr = q_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    kv_layout: gl.constexpr = _acc_layout(HEAD_DIM, dtype, num_warps)
    st_layout: gl.constexpr = _acc_layout(BLOCK_M, dtype, num_warps)
    # dQ's share (BLOCK_M = 64 query rows, one warp group's wgmma): further warp groups
    # split its columns
    dq_layout: gl.constexpr = _acc_layout(HEAD_DIM, dtype, 4, num_warps // 4)
    ds_layout: gl.constexpr = _operand_layout(kv_layout, dtype)
    start_n = gl.program_id(0) * BLOCK_N
    row0 = gl.program_id(1) * n_ctx
    n_q_tiles = n_ctx // BLOCK_M
    first = start_n // BLOCK_M if CAUSAL else 0

    n_tiles = n_q_tiles - first
    k_smem, v_smem, q_smem, do_smem, kv_bar, bars = _program_start(
        k_desc, v_desc, q_desc, do_desc, row0 + start_n, row0 + first * BLOCK_M, n_tiles, STAGES)
    ds_smem = gl.allocate_shared_memory(
        dtype, [BLOCK_N, BLOCK_M], gl.NVMMASharedLayout.get_default_for([BLOCK_N, BLOCK_M],
                                                                         dtype))
    dq_smem = gl.allocate_shared_memory(gl.float32, [2, BLOCK_M, HEAD_DIM], dq_desc.layout)

    offs_n, dk, dv, free = _key_tile_start(kv_bar, start_n, first, st_layout, kv_layout, BLOCK_M,
                                           BLOCK_N, HEAD_DIM, CAUSAL, BLOCK_N)
    lse_ptr += row0  # this head's rows
    delta_ptr += row0
    if CAUSAL:
        dk, dv = _one_pass_steps(k_smem, v_smem, q_smem, do_smem, ds_smem, dq_smem, bars,
                                 q_desc, do_desc, dq_desc, dk, dv, lse_ptr, delta_ptr, offs_n,
                                 first, free, first, n_tiles, row0, qk_scale, scale, st_layout,
                                 dq_layout, ds_layout, STAGES, BLOCK_M, True)
    dk, dv = _one_pass_steps(k_smem, v_smem, q_smem, do_smem, ds_smem, dq_smem, bars, q_desc,
                             do_desc, dq_desc, dk, dv, lse_ptr, delta_ptr, offs_n, free,
                             n_q_tiles, first, n_tiles, row0, qk_scale, scale, st_layout,
                             dq_layout, ds_layout, STAGES, BLOCK_M, False)
    tma.store_wait(0)
    _key_tile_end(dk, dv, dk_ptr, dv_ptr, kv_bar, bars, row0, start_n, scale, STAGES)


def backward_tiles_for(q, ws=False):
    """{"dkdv": (BLOCK_M, BLOCK_N, warps, stages), "dq": ...} of the Gluon backward (`ws`: the
    warp-specialized one's) for q's head dim: the tuning's, the simulator's small ones on the
    CPU."""
    t = tuning_for("attention", q.get_device())
    kind = "gluon_ws" if ws else "gluon"
    if not q.is_cuda:
        return {"dkdv": t.simulator(f"{kind}_dkdv"), "dq": t.simulator(f"{kind}_dq")}
    size = "small" if q.shape[-1] <= 64 else "large"
    return {"dkdv": getattr(t, f"{kind}_dkdv_{size}"), "dq": getattr(t, f"{kind}_dq_{size}")}


def _backward_tiles(q, tiles, ws):
    """A caller's backward tiles ({"dkdv": ..., "dq": ...}, either may be left out) completed
    with backward_tiles_for's."""
    return {**backward_tiles_for(q, ws), **{k: c for k, c in (tiles or {}).items() if c}}


def backward_problem(q, k, v, tiles=None, do=None, ws=False):
    """Why the Gluon backward (`ws`: the warp-specialized one) cannot take these inputs (and
    dO, where given), or None: the forward's rules, and tiles that divide the sequence, the
    dK/dV kernel's key tile a multiple of its query step, the dQ kernel's query tile a multiple
    of its key step; warp-specialized, 128 keys (queries) a program on two warp groups of 4."""
    tiles = _backward_tiles(q, tiles, ws)
    (m1, n1, w1, _), (m2, n2, w2, _) = tiles["dkdv"], tiles["dq"]
    n = q.shape[-2]
    return (_inputs_problem(q, k, v, *([] if do is None else [do]))
            or (ws and (n1, w1) != (128, 4) and
                f"the warp-specialized dK/dV kernel takes 128 keys a program on two warp "
                f"groups of 4 warps, not {n1} on {w1}")
            or (ws and (m2, w2) != (128, 4) and
                f"the warp-specialized dQ kernel takes 128 queries a program on two warp "
                f"groups of 4 warps, not {m2} on {w2}")
            or _tiles_problem(n, n1, m1, "dK/dV", "keys", "queries")
            or _tiles_problem(n, m2, n2, "dQ", "queries", "keys")) or None


def ws_backward_problem(q, k, v, tiles=None, do=None):
    """backward_problem of the warp-specialized backward."""
    return backward_problem(q, k, v, tiles, do, ws=True)


def backward(do, q, k, v, lse, delta, dq, dk, dv, causal, scale, tiles=None, ws=False):
    """dQ, dK, dV into `dq`, `dk`, `dv` (contiguous, q's dtype) for contiguous, non-empty
    inputs that backward_problem accepts; `delta` = rowsum(dO * O), fp32 (batch*heads, seq);
    `ws`: both kernels warp-specialized (dK/dV 128 keys a program, dQ 128 queries, on two
    consumer warp groups of 4 warps)."""
    tiles = _backward_tiles(q, tiles, ws)
    problem = backward_problem(q, k, v, tiles, do, ws)
    if problem:
        raise ValueError(f"flash_attention backward: the Gluon backward cannot take these "
                         f"inputs: {problem}")
    bm, bn, warps, stages = tiles["dkdv"]
    n = q.shape[-2]
    zh = q.shape[0] * (q.shape[1] if q.dim() == 4 else 1)
    kernel = gluon_attn_bwd_dkdv_ws_kernel if ws else gluon_attn_bwd_dkdv_kernel
    rows = bn // 2 if ws else bn  # the warp-specialized kernel's K and V boxes: a warp group's
    kernel[(n // bn, zh)](
        _descriptor(q, bm), _descriptor(k, rows), _descriptor(v, rows), _descriptor(do, bm), dk,
        dv, lse, delta, n, scale * LOG2E, scale, STAGES=stages, CAUSAL=bool(causal),
        num_warps=warps)
    bm, bn, warps, stages = tiles["dq"]
    kernel = gluon_attn_bwd_dq_ws_kernel if ws else gluon_attn_bwd_dq_kernel
    rows = bm // 2 if ws else bm  # the warp-specialized kernel's Q and dO boxes: a warp group's
    kernel[(n // bm, zh)](
        _descriptor(q, rows), _descriptor(k, bn), _descriptor(v, bn), _descriptor(do, rows), dq,
        lse, delta, n, scale * LOG2E, scale, STAGES=stages, CAUSAL=bool(causal),
        num_warps=warps)
    return dq, dk, dv


def one_pass_tiles_for(q, ws=False):
    """(BLOCK_M, BLOCK_N, warps, stages) of the one-pass Gluon backward (`ws`: the
    warp-specialized one's) for q's head dim."""
    t = tuning_for("attention", q.get_device())
    kind = "gluon_ws_one_pass" if ws else "gluon_one_pass"
    if not q.is_cuda:
        return t.simulator(kind)
    return getattr(t, f"{kind}_small" if q.shape[-1] <= 64 else f"{kind}_large")


def one_pass_problem(q, k, v, tiles=None, do=None, ws=False):
    """Why the one-pass Gluon backward (`ws`: the warp-specialized one) cannot take these
    inputs, or None: the forward's rules, key tiles a multiple of the query step, and a query
    step of 64 rows on a multiple of 4 warps (dQ's share is one warp group's wgmma; more warp
    groups split its columns, at least 8 each); warp-specialized, 128 keys a program on two
    warp groups of 4 warps, each stepping 64 or 128 queries (its own dQ share)."""
    bm, bn, warps, _ = tiles or one_pass_tiles_for(q, ws)
    d = q.shape[-1]
    if ws and ((bn, warps) != (128, 4) or bm not in (64, 128)):
        return (f"the warp-specialized one pass takes 128 keys a program on two warp groups "
                f"of 4 warps, stepping 64 or 128 queries, not ({bm}, {bn}) on {warps}")
    if not ws and (bm != 64 or warps % 4 or d // (warps // 4) < 8):
        return (f"its tiles ({bm} queries a step on {warps} warps) must step 64 queries on a "
                f"multiple of 4 warps, with at least 8 of the {d} head-dim columns a warp group")
    return (_inputs_problem(q, k, v, *([] if do is None else [do]))
            or _tiles_problem(q.shape[-2], bn, bm, "one-pass", "keys", "queries"))


def ws_one_pass_problem(q, k, v, tiles=None, do=None):
    """one_pass_problem of the warp-specialized one pass."""
    return one_pass_problem(q, k, v, tiles, do, ws=True)


def backward_one_pass(do, q, k, v, lse, delta, dq32, dk, dv, causal, scale, tiles=None,
                      ws=False, split=None):
    """dK, dV into `dk`, `dv` and scale * dQ added into `dq32` (zeroed, fp32, (batch*heads,
    seq, d) contiguous) in one pass, for inputs one_pass_problem accepts; `delta` =
    rowsum(dO * O), fp32 (batch*heads, seq); `ws`: warp-specialized (the dK/dV kernel's two
    consumer warp groups of 64 keys and loader, each consumer adding its keys' share of dQ;
    `split`, default for d = 128: each adds half the columns of both's share instead, one
    reduction a query tile, its K columns 64 wide, the 128-byte swizzle's width in 16 bits).
    The adds' order varies on a GPU: dQ is not bitwise deterministic."""
    tiles = tiles or one_pass_tiles_for(q, ws)
    problem = one_pass_problem(q, k, v, tiles, do, ws)
    if problem:
        raise ValueError(f"flash_attention backward: the one-pass Gluon backward cannot take "
                         f"these inputs: {problem}")
    n, d = q.shape[-2], q.shape[-1]
    zh = q.shape[0] * (q.shape[1] if q.dim() == 4 else 1)
    bm, bn, warps, stages = tiles
    split = ws and (d == 128 if split is None else split)
    if split and d != 128:
        raise ValueError(f"flash_attention backward: the split one pass takes head dim 128 "
                         f"(K's columns sliced in halves of 64), not {d}")
    dq_desc = _descriptor(dq32, bm, d // 2 if split else d)
    if ws:  # K and V in boxes of 64 rows: one a consumer warp group
        gluon_attn_bwd_one_pass_ws_kernel[(n // bn, zh)](
            _descriptor(q, bm), _descriptor(k, bn // 2), _descriptor(v, bn // 2),
            _descriptor(do, bm), dq_desc, dk, dv, lse, delta, n, scale * LOG2E, scale,
            STAGES=stages, CAUSAL=bool(causal), SPLIT=split, num_warps=warps)
        return dk, dv
    gluon_attn_bwd_one_pass_kernel[(n // bn, zh)](
        _descriptor(q, bm), _descriptor(k, bn), _descriptor(v, bn), _descriptor(do, bm),
        dq_desc, dk, dv, lse, delta, n, scale * LOG2E, scale, STAGES=stages,
        CAUSAL=bool(causal), num_warps=warps)
    return dk, dv
