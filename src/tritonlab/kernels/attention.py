"""FlashAttention-2, forward and backward, in Triton (CS336 assignment 2; docs/attention.md).

O = softmax(Q K^T * scale) V without ever writing the (Nq, Nk) scores S or probabilities P to
memory. Forward, one program per (query tile, batch*head): walk the key tiles keeping the
running row maximum m, the running row sum l and the unnormalised output on chip in fp32
(online softmax), divide once at the end and save the logsumexp L = m + log(l) per query row,
fp32. Scores are kept in log2 units (scale * log2(e) folded into one multiply) so that the
exponentials are `exp2`, as in Triton's fused-attention tutorial.

Backward, FlashAttention-2's Algorithm 2 with P recomputed from L:
    D  = rowsum(dO * O)                                  attn_bwd_preprocess_kernel
    P  = exp(S - L);  dV = P^T dO;  dP = dO V^T
    dS = P * (dP - D);  dK = scale * dS^T Q              attn_bwd_dkdv_kernel, per key tile
    dQ = scale * dS K                                    attn_bwd_dq_kernel, per query tile
The dK/dV kernel owns one key tile and loops over query tiles; the dQ kernel owns one query tile
and loops over key tiles, so neither ever shares an output with another program. The one-pass
backward (`impl="atomic"`, `attention_backward_atomic`) puts dQ into the dK/dV kernel instead,
added with `tl.atomic_add` into fp32 (P and dS computed once, not twice; the order of the adds,
and so dQ's last bits, vary from run to run on a GPU), after one pass that computes D and clears
dQ. The `-tma` backwards (`"two-kernel-tma"`, `"atomic-tma"`; Hopper or newer) read the tiles
their loops step through by TMA, and `"atomic-tma"` adds each dQ tile with one TMA reduction.
`attention_backward_racy` does it with a plain load-add-store, kept wrong on purpose: it
loses updates, and the simulator's race sanitizer names it.

The TMA forward (`attn_fwd_tma_kernel`, `impl="tma"`, `"tma-ws"`, `"tma-host"`) is the same
algorithm with Q, K, V and O moved by tensor descriptors (Hopper's TMA: asynchronous bulk copies,
zero-filled past the edges, so no load masks), its key loop software-pipelined (num_stages) or
warp-specialized, and its causal programs ordered longest rows first across groups of heads.

Causal (top-left aligned, as the assignment: query i keeps key j when i >= j, also for
Nq != Nk): tiles above the diagonal are skipped by the loop bounds, and only tiles that cross
the diagonal or the sequence tail run with masks. Every loop is split into an unmasked stage
and a masked stage with the same inner function (`MASKED: tl.constexpr`). Head dims that are
not powers of two are padded to BLOCK_D with masked loads (zeros change neither S nor O).
Inputs are (batch, seq, d) or (batch, heads, seq, d), any strides; fp32 inputs multiply in
TF32 on the tensor cores (Triton's default for tl.dot).

On a GPU the tiles, warps and stages are autotuned per head dim from the configs of
kernels/tuning.py's AttentionTuning, which also names the implementations that run by default
(fwd_impl, bwd_impl); the simulator runs one small config of it, the CPU being no place for
tuning. The launch goes through torch.library custom ops under torch.compile, so that tracing
sees one opaque op (no graph break); eager calls launch directly.
"""
import functools
import math

import torch

from ..backend import DEVICE, TensorDescriptor, tl, triton
from ._checks import FLOAT_DTYPES, check_inputs, sm_count
from . import _exchange, _native, ops
from ._launch import Bound, PlanCache, launch, scratch
from .tuning import tuning_for

try:
    from . import attention_gluon
    _NO_GLUON = None
except ImportError as _e:  # Triton's interpreter, or a Triton without Gluon
    attention_gluon, _NO_GLUON = None, str(_e)

MAX_HEAD_DIM = 128
GRID_Y_MAX = 65535  # CUDA's limit on a grid's second axis
LOG2E = 1.4426950408889634


# --------------------------------------------------------------------------------------------
# kernels

@triton.jit
def _load_tile(ptrs, rows, n_rows, cols, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
               MASK_ROWS: tl.constexpr):
    """A (rows, BLOCK_D) tile: rows past n_rows (when MASK_ROWS) and columns past HEAD_DIM read
    0. Unmasked where neither can happen, so the full tiles of a loop load without masks."""
    if MASK_ROWS:
        if HEAD_DIM == BLOCK_D:
            tile = tl.load(ptrs, mask=rows[:, None] < n_rows, other=0.0)
        else:
            tile = tl.load(ptrs, mask=(rows[:, None] < n_rows) & (cols[None, :] < HEAD_DIM),
                           other=0.0)
    else:
        if HEAD_DIM == BLOCK_D:
            tile = tl.load(ptrs)
        else:
            tile = tl.load(ptrs, mask=cols[None, :] < HEAD_DIM, other=0.0)
    return tile


@triton.jit
def _store_tile(ptrs, value, rows, n_rows, cols, HEAD_DIM: tl.constexpr):
    tl.store(ptrs, value.to(ptrs.dtype.element_ty),
             mask=(rows[:, None] < n_rows) & (cols[None, :] < HEAD_DIM))


@triton.jit
def _rows_tile(src, row, rows, n_rows, offs_d, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
               MASKED: tl.constexpr, TMA: tl.constexpr):
    """The tile of rows `row`, row + 1, ... (`rows`) of one head: through `src` a tensor
    descriptor (TMA: an asynchronous copy, zero-filled past the rows and the head dim), or
    from `src` pointers to row `row` (_rows_at; masked loads where MASKED, zeros there too)."""
    if TMA:
        tile = src.load([row, 0])
    else:
        tile = _load_tile(src, rows, n_rows, offs_d, HEAD_DIM, BLOCK_D, MASKED)
    return tile


@triton.jit
def _rows_at(src, rows, stride_row, TMA: tl.constexpr):
    """`src` pointers moved `rows` rows on, by a 64-bit offset (docs/attention.md#limitations);
    a descriptor (TMA) as it is: its loads name their row."""
    if TMA:
        moved = src
    else:
        moved = src + tl.cast(rows, tl.int64) * stride_row
    return moved


@triton.jit
def _keep(offs_m, cols, n_keys, IS_CAUSAL: tl.constexpr):
    """Which (query, key) pairs of a tile count: keys before n_keys, and, causal, not after the
    query."""
    keep = cols[None, :] < n_keys
    if IS_CAUSAL:
        keep = keep & (offs_m[:, None] >= cols[None, :])
    return keep


@triton.jit
def _scores(q, k, qk_scale, offs_m, cols, n_keys, IS_CAUSAL: tl.constexpr,
            MASKED: tl.constexpr, FOLD: tl.constexpr):
    """S = q k^T of one tile for _softmax_step, -inf where _keep says no (MASKED): raw scores
    (FOLD), or scaled first, for a scale <= 0, whose product with a masked -inf would be NaN
    or +inf."""
    s = tl.dot(q, tl.trans(k))
    if not FOLD:
        s = s * qk_scale
    if MASKED:
        s = tl.where(_keep(offs_m, cols, n_keys, IS_CAUSAL), s, float("-inf"))
    return s


@triton.jit
def _softmax_step(s, m_i, l_i, qk_scale, FOLD: tl.constexpr):
    """One key tile of the online softmax on scores s (masked ones -inf): the tile's P under
    the new row maximum, the factor alpha that rescales what was summed under the old one, the
    new maximum and row sum, all in log2 units (qk_scale = scale * log2 e). FOLD (a positive
    scale): s are the raw scores, and the scale is applied to the row maxima and inside exp2's
    argument (one FMA per score), not as a pass over the tile of its own: 1.02-1.03x the
    forward on an H100 (docs/attention.md); else s are already scaled (_scores). Every row
    meets key 0 in its first tile, so the maximum is finite: no -inf - -inf."""
    if FOLD:
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.exp2(s * qk_scale - m_new[:, None])
    else:
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp2(s - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    return p, alpha, m_new, l_i * alpha + tl.sum(p, 1)


@triton.jit
def _fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n, offs_d,
               n_keys, lo, hi, qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
               BLOCK_D: tl.constexpr, IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr,
               FOLD: tl.constexpr):
    """Online softmax over the key tiles lo, lo + BLOCK_N, ... < hi. MASKED: the tiles that
    cross the diagonal (causal) or the end of the keys. FOLD: a positive scale
    (_softmax_step)."""
    k_ptrs += lo * stride_kn
    v_ptrs += lo * stride_vn
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        k = _load_tile(k_ptrs, cols, n_keys, offs_d, HEAD_DIM, BLOCK_D, MASKED)  # read BN*d
        v = _load_tile(v_ptrs, cols, n_keys, offs_d, HEAD_DIM, BLOCK_D, MASKED)  # read BN*d
        s = _scores(q, k, qk_scale, offs_m, cols, n_keys, IS_CAUSAL, MASKED,
                    FOLD)  # (BM, BN), on chip only
        p, alpha, m_new, l_i = _softmax_step(s, m_i, l_i, qk_scale, FOLD)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    return acc, l_i, m_i


@triton.jit
def _fwd_query_block(q_ptr, k_ptr, v_ptr, pid_m, pid_zh,
                     stride_qz, stride_qh, stride_qm, stride_qd,
                     stride_kz, stride_kh, stride_kn, stride_kd,
                     stride_vz, stride_vh, stride_vn, stride_vd,
                     n_heads, n_queries, n_keys, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                     IS_CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """A pointer forward's query block pid_m of head pid_zh: its Q tile (read BM*d), the
    pointers to its head's first K and V tiles, the offsets, and the key bounds: tiles below
    `mid` need no mask, those from `mid` to `hi` do (the diagonal's, causal; the keys'
    tail), the rest are skipped; and the online softmax's start (acc, l, m)."""
    off_z = (pid_zh // n_heads).to(tl.int64)
    off_h = (pid_zh % n_heads).to(tl.int64)
    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    q_ptrs = (q_ptr + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm
              + offs_d[None, :] * stride_qd)
    k_ptrs = (k_ptr + off_z * stride_kz + off_h * stride_kh + offs_n[:, None] * stride_kn
              + offs_d[None, :] * stride_kd)
    v_ptrs = (v_ptr + off_z * stride_vz + off_h * stride_vh + offs_n[:, None] * stride_vn
              + offs_d[None, :] * stride_vd)
    q = _load_tile(q_ptrs, offs_m, n_queries, offs_d, HEAD_DIM, BLOCK_D, True)  # read BM*d
    full = n_keys - n_keys % BLOCK_N  # key tiles below this need no tail mask
    if IS_CAUSAL:  # BLOCK_M is a multiple of BLOCK_N: tiles below start_m are all visible,
        mid = tl.minimum(start_m, full)  # those up to start_m + BLOCK_M cross the diagonal,
        hi = tl.minimum(start_m + BLOCK_M, n_keys)  # the rest are skipped
    else:
        mid = full
        hi = n_keys
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # the online softmax's start
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    return q, k_ptrs, v_ptrs, offs_m, offs_n, offs_d, mid, hi, acc, l_i, m_i


@triton.jit
def attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr,
                    stride_qz, stride_qh, stride_qm, stride_qd,
                    stride_kz, stride_kh, stride_kn, stride_kd,
                    stride_vz, stride_vh, stride_vn, stride_vd,
                    stride_oz, stride_oh, stride_om, stride_od,
                    n_heads, n_queries, n_keys, qk_scale,
                    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, IS_CAUSAL: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, FOLD: tl.constexpr):
    pid_m = tl.program_id(0)
    if IS_CAUSAL:  # the longest rows of keys first: the grid's tail is then short programs
        pid_m = tl.num_programs(0) - 1 - pid_m
    pid_zh = tl.program_id(1)
    q, k_ptrs, v_ptrs, offs_m, offs_n, offs_d, mid, hi, acc, l_i, m_i = _fwd_query_block(
        q_ptr, k_ptr, v_ptr, pid_m, pid_zh, stride_qz, stride_qh, stride_qm, stride_qd,
        stride_kz, stride_kh, stride_kn, stride_kd, stride_vz, stride_vh, stride_vn, stride_vd,
        n_heads, n_queries, n_keys, HEAD_DIM, BLOCK_D, IS_CAUSAL, BLOCK_M, BLOCK_N)
    acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m,
                               offs_n, offs_d, n_keys, 0, mid, qk_scale, BLOCK_N, HEAD_DIM,
                               BLOCK_D, IS_CAUSAL, False, FOLD)
    acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m,
                               offs_n, offs_d, n_keys, mid, hi, qk_scale, BLOCK_N, HEAD_DIM,
                               BLOCK_D, IS_CAUSAL, True, FOLD)
    off_z = (pid_zh // n_heads).to(tl.int64)
    off_h = (pid_zh % n_heads).to(tl.int64)
    o_ptrs = (o_ptr + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om
              + offs_d[None, :] * stride_od)
    _store_tile(o_ptrs, acc / l_i[:, None], offs_m, n_queries, offs_d, HEAD_DIM)  # write BM*d
    lse = (m_i + tl.log2(l_i)) * 0.6931471805599453  # back to natural-log units
    tl.store(lse_ptr + pid_zh.to(tl.int64) * n_queries + offs_m, lse,
             mask=offs_m < n_queries)  # write BM


@triton.jit
def attn_fwd_split_kernel(q_ptr, k_ptr, v_ptr, op_ptr, lp_ptr, o_ptr, lse_ptr, count_ptr,
                          stride_qz, stride_qh, stride_qm, stride_qd,
                          stride_kz, stride_kh, stride_kn, stride_kd,
                          stride_vz, stride_vh, stride_vn, stride_vd,
                          stride_oz, stride_oh, stride_om, stride_od,
                          n_heads, n_queries, n_keys, qk_scale, n_splits,
                          HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, IS_CAUSAL: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, FOLD: tl.constexpr,
                          LAST_COMBINES: tl.constexpr):
    # Keys split across programs (impl "split", flash-decoding's cut): program (i, zh * S + s)
    # runs query block i of head zh over the s-th of n_splits shares of its unmasked key
    # tiles, the last share also over the tiles that need a mask (the diagonal's, the keys'
    # tail: kept whole, so that every row meets a key in its share's first tile, as the
    # online softmax needs); it writes its normalised O and its log2-sum-exp to the fp32
    # partials (n_splits, batch*heads, Nq, HEAD_DIM) and (n_splits, batch*heads, Nq). A share
    # without keys writes 0 and -inf. LAST_COMBINES: the last of a query block's shares to
    # arrive at its counter (count_ptr, one int32 per query block, zero before the launch)
    # combines them into O and L (_combine_shares) and puts the counter back to zero; else
    # attn_fwd_combine_kernel does, in a second launch (o_ptr, lse_ptr, count_ptr unused).
    pid_m = tl.program_id(0)
    if IS_CAUSAL:  # the longest rows of keys first, as attn_fwd_kernel
        pid_m = tl.num_programs(0) - 1 - pid_m
    split = tl.program_id(1) % n_splits
    pid_zh = tl.program_id(1) // n_splits
    q, k_ptrs, v_ptrs, offs_m, offs_n, offs_d, mid, hi, acc, l_i, m_i = _fwd_query_block(
        q_ptr, k_ptr, v_ptr, pid_m, pid_zh, stride_qz, stride_qh, stride_qm, stride_qd,
        stride_kz, stride_kh, stride_kn, stride_kd, stride_vz, stride_vh, stride_vn, stride_vd,
        n_heads, n_queries, n_keys, HEAD_DIM, BLOCK_D, IS_CAUSAL, BLOCK_M, BLOCK_N)
    tiles = mid // BLOCK_N  # the unmasked tiles, shared out in whole tiles
    share = tl.cdiv(tiles, n_splits)
    lo = tl.minimum(split * share, tiles) * BLOCK_N
    up = tl.minimum(split * share + share, tiles) * BLOCK_N
    acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m,
                               offs_n, offs_d, n_keys, lo, up, qk_scale, BLOCK_N, HEAD_DIM,
                               BLOCK_D, IS_CAUSAL, False, FOLD)
    last = split == n_splits - 1
    acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m,
                               offs_n, offs_d, n_keys, tl.where(last, mid, hi), hi, qk_scale,
                               BLOCK_N, HEAD_DIM, BLOCK_D, IS_CAUSAL, True, FOLD)
    empty = l_i == 0.0
    n_zh = tl.num_programs(1) // n_splits
    row0 = (tl.cast(split, tl.int64) * n_zh + pid_zh) * n_queries
    op_ptrs = op_ptr + (row0 + offs_m[:, None]) * HEAD_DIM + offs_d[None, :]
    _store_tile(op_ptrs, acc / tl.where(empty, 1.0, l_i)[:, None], offs_m, n_queries, offs_d,
                HEAD_DIM)  # write BM*d (fp32)
    tl.store(lp_ptr + row0 + offs_m, tl.where(empty, float("-inf"), m_i + tl.log2(l_i)),
             mask=offs_m < n_queries)  # write BM
    if LAST_COMBINES:
        counter = count_ptr + pid_zh * tl.num_programs(0) + pid_m
        tl.debug_barrier()  # every thread's stores issued before the program arrives
        # release: this share's partials before the count; acquire: the others' after it
        if tl.atomic_add(counter, 1, sem="acq_rel") == n_splits - 1:
            tl.debug_barrier()  # the whole program reads after the count was seen
            _combine_shares(op_ptr, lp_ptr, o_ptr, lse_ptr, pid_zh, offs_m, offs_d,
                            stride_oz, stride_oh, stride_om, stride_od, n_heads, n_zh,
                            n_queries, n_splits, HEAD_DIM, BLOCK_D, BLOCK_M)
            tl.atomic_xchg(counter, 0, sem="relaxed")  # every share arrived: none reads it


@triton.jit
def _combine_shares(op_ptr, lp_ptr, o_ptr, lse_ptr, pid_zh, offs_m, offs_d,
                    stride_oz, stride_oh, stride_om, stride_od, n_heads, n_zh, n_queries,
                    n_splits, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                    BLOCK_M: tl.constexpr):
    """The split forward's rows offs_m of head pid_zh: O and L from the n_splits partials,
    each weighted by exp2(its log2-sum-exp - the rows' running maximum) (a share without
    keys, -inf, weighs 0), in share order whichever program combines them. The partials are
    read past L1 (.cg): where the last share combines, other programs wrote them in the same
    launch."""
    off_z = (pid_zh // n_heads).to(tl.int64)
    off_h = (pid_zh % n_heads).to(tl.int64)
    rows = offs_m < n_queries
    mask = rows[:, None] & (offs_d[None, :] < HEAD_DIM)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for split in range(0, n_splits):
        row0 = (tl.cast(split, tl.int64) * n_zh + pid_zh) * n_queries
        lse = tl.load(lp_ptr + row0 + offs_m, mask=rows, other=float("-inf"),
                      cache_modifier=".cg")  # read BM
        part = tl.load(op_ptr + (row0 + offs_m[:, None]) * HEAD_DIM + offs_d[None, :],
                       mask=mask, other=0.0, cache_modifier=".cg")  # read BM*d
        m_new = tl.maximum(m_i, lse)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - m_safe)
        weight = tl.exp2(lse - m_safe)
        acc = acc * alpha[:, None] + part * weight[:, None]
        l_i = l_i * alpha + weight
        m_i = m_new
    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    o_ptrs = (o_ptr + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om
              + offs_d[None, :] * stride_od)
    _store_tile(o_ptrs, acc / l_safe[:, None], offs_m, n_queries, offs_d, HEAD_DIM)  # write BM*d
    tl.store(lse_ptr + pid_zh.to(tl.int64) * n_queries + offs_m,
             (m_i + tl.log2(l_safe)) * 0.6931471805599453, mask=rows)  # write BM


@triton.jit
def attn_fwd_combine_kernel(op_ptr, lp_ptr, o_ptr, lse_ptr,
                            stride_oz, stride_oh, stride_om, stride_od,
                            n_heads, n_zh, n_queries, n_splits,
                            HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                            BLOCK_M: tl.constexpr):
    # The split forward's second launch (tuning split_combine="kernel"): BLOCK_M rows a
    # program
    pid_zh = tl.program_id(1)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    _combine_shares(op_ptr, lp_ptr, o_ptr, lse_ptr, pid_zh, offs_m, tl.arange(0, BLOCK_D),
                    stride_oz, stride_oh, stride_om, stride_od, n_heads, n_zh, n_queries,
                    n_splits, HEAD_DIM, BLOCK_D, BLOCK_M)


@triton.jit
def _desc_tile(desc, off_z, off_h, row, ROWS: tl.constexpr, BLOCK_D: tl.constexpr,
               HOST_DESC: tl.constexpr):
    """The (ROWS, BLOCK_D) tile of one head from `row` on: a host descriptor spans (batch,
    heads, seq, d), an in-kernel one the head's own (seq, d). Rows past the sequence and
    columns past the head dim arrive as zeros (TMA's fill): no masks."""
    if HOST_DESC:
        tile = desc.load([off_z, off_h, row, 0]).reshape([ROWS, BLOCK_D])
    else:
        tile = desc.load([row, 0])
    return tile


@triton.jit
def _fwd_tma_inner(acc, l_i, m_i, q, k_desc, v_desc, off_z, off_h, offs_m, offs_n, n_keys, lo,
                   hi, qk_scale, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                   IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr,
                   WARP_SPECIALIZE: tl.constexpr, HOST_DESC: tl.constexpr, FOLD: tl.constexpr):
    """_fwd_inner with K and V tiles through TMA: the loads are asynchronous copies into
    shared memory, num_stages of them in flight (software pipelining), or issued by a
    producer warp of their own (WARP_SPECIALIZE). The masks remain only on S."""
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        k = _desc_tile(k_desc, off_z, off_h, start_n, BLOCK_N, BLOCK_D, HOST_DESC)  # read BN*d
        # padded keys read 0, so s = 0 there: masked like the causal part
        s = _scores(q, k, qk_scale, offs_m, start_n + offs_n, n_keys, IS_CAUSAL, MASKED,
                    FOLD)  # (BM, BN)
        p, alpha, m_new, l_i = _softmax_step(s, m_i, l_i, qk_scale, FOLD)
        v = _desc_tile(v_desc, off_z, off_h, start_n, BLOCK_N, BLOCK_D, HOST_DESC)  # read BN*d
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _head_desc(base, off_z, off_h, stride_z, stride_h, n_rows, stride_row,
               HEAD_DIM: tl.constexpr, BLOCK_ROWS: tl.constexpr, BLOCK_D: tl.constexpr):
    """A device-side tensor descriptor of one head's (n_rows, HEAD_DIM) matrix, in tiles of
    (BLOCK_ROWS, BLOCK_D): TMA fills and clips at the sequence's end."""
    return tl.make_tensor_descriptor(
        base + off_z.to(tl.int64) * stride_z + off_h.to(tl.int64) * stride_h,
        shape=[n_rows, HEAD_DIM], strides=[stride_row, 1], block_shape=[BLOCK_ROWS, BLOCK_D])


@triton.jit
def attn_fwd_tma_kernel(q_desc, k_desc, v_desc, o_desc, lse_ptr,
                        stride_qz, stride_qh, stride_qm, stride_kz, stride_kh, stride_kn,
                        stride_vz, stride_vh, stride_vn, stride_oz, stride_oh, stride_om,
                        n_heads, n_queries, n_keys, group_zh, qk_scale,
                        HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                        IS_CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
                        HOST_DESC: tl.constexpr, FOLD: tl.constexpr,
                        EVEN_KEYS: tl.constexpr = False):
    # attn_fwd_kernel with Q, K, V and O through TMA descriptors. HOST_DESC: q_desc ... o_desc
    # are host TensorDescriptors of (batch, heads, seq, d); else they are pointers (with the
    # strides) and each program describes its own head's (seq, d) here.
    # Programs in launch order go by groups of group_zh heads; within a group, the last query
    # tiles (causal: the longest rows of keys) of every head first, so the grid's tail is
    # short programs while the group's K and V stay in L2. group_zh = 1: one head at a time.
    # EVEN_KEYS (the host's promise, made only where not causal, that BLOCK_N divides n_keys:
    # _tail_flags): no key tile needs a mask, and the masked loop is not compiled at all.
    # Compiled for sm_90 at d = 128 on 128x64 tiles and 4 warps, its values live across the
    # first loop spilled (32 B, a local load each key tile); without it, none
    # (docs/attention.md#tiles-and-tuning).
    n_m = tl.num_programs(0)
    pid = tl.program_id(1) * n_m + tl.program_id(0)
    first_zh = pid // (group_zh * n_m) * group_zh
    size = tl.minimum(tl.num_programs(1) - first_zh, group_zh)  # the last group: fewer
    rank = pid % (group_zh * n_m)
    pid_m = n_m - 1 - rank // size
    pid_zh = first_zh + rank % size
    off_z = pid_zh // n_heads
    off_h = pid_zh % n_heads
    if not HOST_DESC:  # the tile's own head: TMA fills and clips at its sequence's end
        q_desc = _head_desc(q_desc, off_z, off_h, stride_qz, stride_qh, n_queries, stride_qm,
                            HEAD_DIM, BLOCK_M, BLOCK_D)
        k_desc = _head_desc(k_desc, off_z, off_h, stride_kz, stride_kh, n_keys, stride_kn,
                            HEAD_DIM, BLOCK_N, BLOCK_D)
        v_desc = _head_desc(v_desc, off_z, off_h, stride_vz, stride_vh, n_keys, stride_vn,
                            HEAD_DIM, BLOCK_N, BLOCK_D)
        o_desc = _head_desc(o_desc, off_z, off_h, stride_oz, stride_oh, n_queries, stride_om,
                            HEAD_DIM, BLOCK_M, BLOCK_D)
    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = _desc_tile(q_desc, off_z, off_h, start_m, BLOCK_M, BLOCK_D, HOST_DESC)  # read BM*d
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    full = n_keys - n_keys % BLOCK_N
    if IS_CAUSAL:  # attn_fwd_kernel's bounds (BLOCK_M a multiple of BLOCK_N)
        mid = tl.minimum(start_m, full)
        hi = tl.minimum(start_m + BLOCK_M, n_keys)
    else:
        mid = full
        hi = n_keys
    acc, l_i, m_i = _fwd_tma_inner(acc, l_i, m_i, q, k_desc, v_desc, off_z, off_h, offs_m,
                                   offs_n, n_keys, 0, mid, qk_scale, BLOCK_N, BLOCK_D,
                                   IS_CAUSAL, False, WARP_SPECIALIZE, HOST_DESC, FOLD)
    if IS_CAUSAL or not EVEN_KEYS:  # the tail's (or the diagonal's) masked key tiles
        acc, l_i, m_i = _fwd_tma_inner(acc, l_i, m_i, q, k_desc, v_desc, off_z, off_h,
                                       offs_m, offs_n, n_keys, mid, hi, qk_scale, BLOCK_N,
                                       BLOCK_D, IS_CAUSAL, True, WARP_SPECIALIZE, HOST_DESC,
                                       FOLD)
    out = (acc / l_i[:, None]).to(o_desc.dtype)
    if HOST_DESC:  # rows past the sequence and columns past the head dim are clipped
        o_desc.store([off_z, off_h, start_m, 0],
                     out.reshape([1, 1, BLOCK_M, BLOCK_D]))  # write BM*d
    else:
        o_desc.store([start_m, 0], out)  # write BM*d
    lse = (m_i + tl.log2(l_i)) * 0.6931471805599453
    tl.store(lse_ptr + pid_zh.to(tl.int64) * n_queries + offs_m, lse,
             mask=offs_m < n_queries)  # write BM


@triton.jit
def attn_bwd_preprocess_kernel(o_ptr, do_ptr, delta_ptr, dq_ptr,
                               stride_oz, stride_oh, stride_om, stride_od,
                               stride_doz, stride_doh, stride_dom, stride_dod,
                               n_heads, n_queries, HEAD_DIM: tl.constexpr,
                               BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
                               ZERO_DQ: tl.constexpr):
    # ZERO_DQ (the one-pass backward): also clear the fp32 dQ rows (batch*heads, n_queries,
    # HEAD_DIM) that its atomics add into, in this pass rather than a memset of its own
    pid_m, pid_zh = tl.program_id(0), tl.program_id(1)
    off_z = (pid_zh // n_heads).to(tl.int64)
    off_h = (pid_zh % n_heads).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    o = _load_tile(o_ptr + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om
                   + offs_d[None, :] * stride_od, offs_m, n_queries, offs_d, HEAD_DIM, BLOCK_D,
                   True)  # read BM*d
    do = _load_tile(do_ptr + off_z * stride_doz + off_h * stride_doh
                    + offs_m[:, None] * stride_dom + offs_d[None, :] * stride_dod, offs_m,
                    n_queries, offs_d, HEAD_DIM, BLOCK_D, True)  # read BM*d
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), axis=1)
    tl.store(delta_ptr + pid_zh.to(tl.int64) * n_queries + offs_m, delta,
             mask=offs_m < n_queries)  # write BM
    if ZERO_DQ:
        tl.store(dq_ptr + pid_zh.to(tl.int64) * n_queries * HEAD_DIM
                 + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
                 tl.zeros([BLOCK_M, BLOCK_D], tl.float32),
                 mask=(offs_m[:, None] < n_queries) & (offs_d[None, :] < HEAD_DIM))  # write BM*d


@triton.jit
def attn_bwd_dq_cast_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    # the one-pass backward's fp32 dQ into q's 16-bit dtype, both contiguous
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    keep = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=keep).to(dst_ptr.dtype.element_ty),
             mask=keep)  # read 4n bytes, write 2n


DQ_CAST_BLOCK = 2048


def _dq_cast_launch(n):
    """(grid, keywords) of attn_bwd_dq_cast_kernel over n elements."""
    return (triton.cdiv(n, DQ_CAST_BLOCK),), dict(BLOCK=DQ_CAST_BLOCK, num_warps=4)


def _cast_dq(dq32, dq):
    """A one-pass backward's fp32 dQ into dQ (q's 16-bit dtype, contiguous): read N*d fp32,
    write N*d; nothing where dQ is the fp32 buffer itself (fp32 inputs)."""
    if dq32 is dq:
        return
    grid, kw = _dq_cast_launch(dq.numel())
    _bound_launch(attn_bwd_dq_cast_kernel, grid, (dq32, dq, dq.numel()), kw)


@triton.jit
def _bwd_dkdv_inner(dk, dv, k, v, q_ptrs, do_ptrs, dq_ptrs, dq_desc, lse_ptr, delta_ptr,
                    stride_qm, stride_dom, stride_dqm, offs_m, offs_n, offs_d, n_queries, lo, hi,
                    qk_scale, scale, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr,
                    BLOCK_D: tl.constexpr, IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr,
                    DQ_MODE: tl.constexpr, LOAD_TMA: tl.constexpr):
    """dK and dV of one key tile from the query tiles lo, lo + BLOCK_M, ... < hi, working on
    transposed tiles (keys along rows) so that dV += P^T dO and dK += dS^T Q need no
    transposes of the accumulators. DQ_MODE 1 (atomic) / 2 (racy) / 3 (atomic-tma): also add
    dS K into dQ. LOAD_TMA: q_ptrs and do_ptrs are the head's descriptors (_rows_tile)."""
    for start_m in tl.range(lo, hi, BLOCK_M):
        rows = start_m + offs_m
        q = _rows_tile(_rows_at(q_ptrs, start_m, stride_qm, LOAD_TMA), start_m, rows,
                       n_queries, offs_d, HEAD_DIM, BLOCK_D, MASKED, LOAD_TMA)  # read BM*d
        do = _rows_tile(_rows_at(do_ptrs, start_m, stride_dom, LOAD_TMA), start_m, rows,
                        n_queries, offs_d, HEAD_DIM, BLOCK_D, MASKED, LOAD_TMA)  # read BM*d
        if MASKED:  # a padded query row gets L = +inf, so P = 0 there
            lse = tl.load(lse_ptr + rows, mask=rows < n_queries, other=float("inf"))
            delta = tl.load(delta_ptr + rows, mask=rows < n_queries, other=0.0)
        else:
            lse = tl.load(lse_ptr + rows)  # read BM
            delta = tl.load(delta_ptr + rows)  # read BM
        s_t = tl.dot(k, tl.trans(q)) * qk_scale  # (BN, BM): S^T in log2 units
        p_t = tl.exp2(s_t - lse[None, :] * 1.4426950408889634)
        if MASKED:
            if IS_CAUSAL:
                p_t = tl.where(rows[None, :] >= offs_n[:, None], p_t, 0.0)
        dv += tl.dot(p_t.to(do.dtype), do)
        dp_t = tl.dot(v, tl.trans(do))  # (BN, BM): dP^T
        ds_t = p_t * (dp_t - delta[None, :])
        dk += tl.dot(ds_t.to(q.dtype), q)
        if DQ_MODE != 0:
            dq = tl.dot(tl.trans(ds_t).to(k.dtype), k) * scale  # this key tile's share of dQ
        if DQ_MODE == 3:  # one TMA reduction of the tile, done in L2 (FlashAttention-3's way):
            # no per-element atomics from the registers; rows past the queries are clipped
            dq_desc.atomic_add([start_m, 0], dq)
        elif DQ_MODE != 0:
            dq_tile = dq_ptrs + start_m * stride_dqm
            dq_mask = (rows[:, None] < n_queries) & (offs_d[None, :] < HEAD_DIM)
            if DQ_MODE == 1:  # every key tile adds into the rows; relaxed: only the sum
                # matters, no order with other memory (the default acq_rel fences each add)
                tl.atomic_add(dq_tile, dq, mask=dq_mask, sem="relaxed")
            else:  # the race: two key tiles read the same dQ rows before either writes
                old = tl.load(dq_tile, mask=dq_mask, other=0.0)
                tl.store(dq_tile, old + dq, mask=dq_mask)
    return dk, dv


@triton.jit
def attn_bwd_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, dq_ptr,
                         stride_qz, stride_qh, stride_qm, stride_qd,
                         stride_kz, stride_kh, stride_kn, stride_kd,
                         stride_vz, stride_vh, stride_vn, stride_vd,
                         stride_doz, stride_doh, stride_dom, stride_dod,
                         stride_dkz, stride_dkh, stride_dkn, stride_dkd,
                         stride_dvz, stride_dvh, stride_dvn, stride_dvd,
                         n_heads, n_queries, n_keys, qk_scale, scale,
                         HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                         IS_CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         DQ_MODE: tl.constexpr, LOAD_TMA: tl.constexpr,
                         EVEN_QUERIES: tl.constexpr = False):
    # dq_ptr (fp32, contiguous (batch*heads, n_queries, HEAD_DIM), zeroed by the D pass) is
    # only touched when DQ_MODE != 0: 1 the one-pass backward's atomics, 2 the racy variant,
    # 3 the one-pass backward's TMA reductions (HEAD_DIM a multiple of 4: 16-byte rows)
    pid_n, pid_zh = tl.program_id(0), tl.program_id(1)
    off_z = (pid_zh // n_heads).to(tl.int64)
    off_h = (pid_zh % n_heads).to(tl.int64)
    start_n = pid_n * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    k = _load_tile(k_ptr + off_z * stride_kz + off_h * stride_kh + offs_n[:, None] * stride_kn
                   + offs_d[None, :] * stride_kd, offs_n, n_keys, offs_d, HEAD_DIM, BLOCK_D,
                   True)  # read BN*d, once
    v = _load_tile(v_ptr + off_z * stride_vz + off_h * stride_vh + offs_n[:, None] * stride_vn
                   + offs_d[None, :] * stride_vd, offs_n, n_keys, offs_d, HEAD_DIM, BLOCK_D,
                   True)  # read BN*d, once
    if LOAD_TMA:  # the query tiles through the head's descriptors (stride_qd = stride_dod = 1)
        q_ptrs = _head_desc(q_ptr, off_z, off_h, stride_qz, stride_qh, n_queries, stride_qm,
                            HEAD_DIM, BLOCK_M, BLOCK_D)
        do_ptrs = _head_desc(do_ptr, off_z, off_h, stride_doz, stride_doh, n_queries,
                             stride_dom, HEAD_DIM, BLOCK_M, BLOCK_D)
    else:
        q_ptrs = (q_ptr + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm
                  + offs_d[None, :] * stride_qd)
        do_ptrs = (do_ptr + off_z * stride_doz + off_h * stride_doh
                   + offs_m[:, None] * stride_dom + offs_d[None, :] * stride_dod)
    dq_ptrs = dq_ptr + pid_zh.to(tl.int64) * n_queries * HEAD_DIM + offs_m[:, None] * HEAD_DIM \
        + offs_d[None, :]
    if DQ_MODE == 3:  # this head's (n_queries, HEAD_DIM) rows of the contiguous fp32 dQ
        dq_desc = _head_desc(dq_ptr, off_z, off_h, n_heads * n_queries * HEAD_DIM,
                             n_queries * HEAD_DIM, n_queries, HEAD_DIM, HEAD_DIM, BLOCK_M,
                             BLOCK_D)
    else:
        dq_desc = dq_ptr
    lse_ptr += pid_zh.to(tl.int64) * n_queries
    delta_ptr += pid_zh.to(tl.int64) * n_queries
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    full = n_queries - n_queries % BLOCK_M  # query tiles below this need no tail mask
    lo = 0
    if IS_CAUSAL:  # queries before start_n see none of these keys: skipped. BLOCK_N is a
        # multiple of BLOCK_M, so the diagonal tiles are start_n ... start_n + BLOCK_N
        dk, dv = _bwd_dkdv_inner(dk, dv, k, v, q_ptrs, do_ptrs, dq_ptrs, dq_desc, lse_ptr,
                                 delta_ptr, stride_qm, stride_dom, HEAD_DIM, offs_m, offs_n,
                                 offs_d, n_queries, start_n,
                                 tl.minimum(start_n + BLOCK_N, n_queries), qk_scale, scale,
                                 BLOCK_M, HEAD_DIM, BLOCK_D, IS_CAUSAL, True, DQ_MODE,
                                 LOAD_TMA)
        lo = start_n + BLOCK_N
    mid = tl.maximum(lo, full)
    dk, dv = _bwd_dkdv_inner(dk, dv, k, v, q_ptrs, do_ptrs, dq_ptrs, dq_desc, lse_ptr,
                             delta_ptr, stride_qm, stride_dom, HEAD_DIM, offs_m, offs_n, offs_d,
                             n_queries, lo, mid, qk_scale, scale, BLOCK_M, HEAD_DIM, BLOCK_D,
                             IS_CAUSAL, False, DQ_MODE, LOAD_TMA)
    if not EVEN_QUERIES:  # the query tail's masked tile
        dk, dv = _bwd_dkdv_inner(dk, dv, k, v, q_ptrs, do_ptrs, dq_ptrs, dq_desc, lse_ptr,
                                 delta_ptr, stride_qm, stride_dom, HEAD_DIM, offs_m, offs_n,
                                 offs_d, n_queries, mid, n_queries, qk_scale, scale, BLOCK_M,
                                 HEAD_DIM, BLOCK_D, IS_CAUSAL, True, DQ_MODE, LOAD_TMA)
    _store_tile(dk_ptr + off_z * stride_dkz + off_h * stride_dkh + offs_n[:, None] * stride_dkn
                + offs_d[None, :] * stride_dkd, dk * scale, offs_n, n_keys, offs_d,
                HEAD_DIM)  # write BN*d
    _store_tile(dv_ptr + off_z * stride_dvz + off_h * stride_dvh + offs_n[:, None] * stride_dvn
                + offs_d[None, :] * stride_dvd, dv, offs_n, n_keys, offs_d, HEAD_DIM)


@triton.jit
def _bwd_dq_inner(dq, q, do, lse, delta, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n,
                  offs_d, n_keys, lo, hi, qk_scale, BLOCK_N: tl.constexpr,
                  HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, IS_CAUSAL: tl.constexpr,
                  MASKED: tl.constexpr, LOAD_TMA: tl.constexpr):
    """dQ of one query tile from the key tiles lo, lo + BLOCK_N, ... < hi. LOAD_TMA: k_ptrs
    and v_ptrs are the head's descriptors (_rows_tile). Pointers move a tile a step (loop-
    carried, unlike dK/dV's): compiled for sm_90 with each step's own 64-bit offset from row
    0, causal 16-bit launches waited after every wgmma of a step (3 to 20 waits; 2 now:
    benchmarks/probes/sass_loops.py, docs/attention.md "The dQ loop's waits")."""
    k_ptrs = _rows_at(k_ptrs, lo, stride_kn, LOAD_TMA)
    v_ptrs = _rows_at(v_ptrs, lo, stride_vn, LOAD_TMA)
    for start_n in tl.range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        k = _rows_tile(k_ptrs, start_n, cols, n_keys, offs_d, HEAD_DIM, BLOCK_D, MASKED,
                       LOAD_TMA)  # read BN*d
        v = _rows_tile(v_ptrs, start_n, cols, n_keys, offs_d, HEAD_DIM, BLOCK_D, MASKED,
                       LOAD_TMA)  # read BN*d
        s = tl.dot(q, tl.trans(k)) * qk_scale
        p = tl.exp2(s - lse[:, None])
        if MASKED:  # a padded key has k = 0, s = 0: not P = 0 by itself
            p = tl.where(_keep(offs_m, cols, n_keys, IS_CAUSAL), p, 0.0)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)
        k_ptrs = _rows_at(k_ptrs, BLOCK_N, stride_kn, LOAD_TMA)
        v_ptrs = _rows_at(v_ptrs, BLOCK_N, stride_vn, LOAD_TMA)
    return dq


@triton.jit
def attn_bwd_dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr,
                       stride_qz, stride_qh, stride_qm, stride_qd,
                       stride_kz, stride_kh, stride_kn, stride_kd,
                       stride_vz, stride_vh, stride_vn, stride_vd,
                       stride_doz, stride_doh, stride_dom, stride_dod,
                       stride_dqz, stride_dqh, stride_dqm, stride_dqd,
                       n_heads, n_queries, n_keys, qk_scale, scale,
                       HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, IS_CAUSAL: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, LOAD_TMA: tl.constexpr,
                       EVEN_KEYS: tl.constexpr = False):
    pid_m = tl.program_id(0)
    if IS_CAUSAL:
        pid_m = tl.num_programs(0) - 1 - pid_m
    pid_zh = tl.program_id(1)
    off_z = (pid_zh // n_heads).to(tl.int64)
    off_h = (pid_zh % n_heads).to(tl.int64)
    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    q = _load_tile(q_ptr + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm
                   + offs_d[None, :] * stride_qd, offs_m, n_queries, offs_d, HEAD_DIM, BLOCK_D,
                   True)  # read BM*d
    do = _load_tile(do_ptr + off_z * stride_doz + off_h * stride_doh
                    + offs_m[:, None] * stride_dom + offs_d[None, :] * stride_dod, offs_m,
                    n_queries, offs_d, HEAD_DIM, BLOCK_D, True)  # read BM*d
    row_mask = offs_m < n_queries
    lse = tl.load(lse_ptr + pid_zh.to(tl.int64) * n_queries + offs_m, mask=row_mask,
                  other=0.0) * 1.4426950408889634
    delta = tl.load(delta_ptr + pid_zh.to(tl.int64) * n_queries + offs_m, mask=row_mask,
                    other=0.0)
    if LOAD_TMA:  # the key tiles through the head's descriptors (stride_kd = stride_vd = 1)
        k_ptrs = _head_desc(k_ptr, off_z, off_h, stride_kz, stride_kh, n_keys, stride_kn,
                            HEAD_DIM, BLOCK_N, BLOCK_D)
        v_ptrs = _head_desc(v_ptr, off_z, off_h, stride_vz, stride_vh, n_keys, stride_vn,
                            HEAD_DIM, BLOCK_N, BLOCK_D)
    else:
        k_ptrs = (k_ptr + off_z * stride_kz + off_h * stride_kh + offs_n[:, None] * stride_kn
                  + offs_d[None, :] * stride_kd)
        v_ptrs = (v_ptr + off_z * stride_vz + off_h * stride_vh + offs_n[:, None] * stride_vn
                  + offs_d[None, :] * stride_vd)
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    full = n_keys - n_keys % BLOCK_N
    if IS_CAUSAL:  # the forward's bounds: BLOCK_M is a multiple of BLOCK_N
        mid = tl.minimum(start_m, full)
        hi = tl.minimum(start_m + BLOCK_M, n_keys)
    else:
        mid = full
        hi = n_keys
    dq = _bwd_dq_inner(dq, q, do, lse, delta, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m,
                       offs_n, offs_d, n_keys, 0, mid, qk_scale, BLOCK_N, HEAD_DIM, BLOCK_D,
                       IS_CAUSAL, False, LOAD_TMA)
    if IS_CAUSAL or not EVEN_KEYS:  # the tail's (or the diagonal's) masked key tiles
        dq = _bwd_dq_inner(dq, q, do, lse, delta, k_ptrs, v_ptrs, stride_kn, stride_vn,
                           offs_m, offs_n, offs_d, n_keys, mid, hi, qk_scale, BLOCK_N, HEAD_DIM,
                           BLOCK_D, IS_CAUSAL, True, LOAD_TMA)
    _store_tile(dq_ptr + off_z * stride_dqz + off_h * stride_dqh + offs_m[:, None] * stride_dqm
                + offs_d[None, :] * stride_dqd, dq * scale, offs_m, n_queries, offs_d,
                HEAD_DIM)  # write BM*d


# --------------------------------------------------------------------------------------------
# tiles: one small config on the simulator, autotuned configs per head dim on a GPU

def _autotune_bench(fn, quantiles=None):
    """Short timings for the autotuner (80 configs x 3 kernels in the benchmark's table), with
    Triton's own 25 ms warm-up: with 5 ms the first config, timed while the GPU warms up, lost
    to slower ones (the leaderboard forward picked a config 7 % slower than its first one on an
    H100, docs/attention.md)."""
    return triton.testing.do_bench(fn, warmup=25, rep=20, quantiles=quantiles)


# The launches that _run knows, by name: (kernel, tuning config set). The three TMA forward
# variants share one kernel and one config set, and each has its own autotuner and choices
_LAUNCHES = {"fwd": (attn_fwd_kernel, "fwd"), "dkdv": (attn_bwd_dkdv_kernel, "dkdv"),
             "dq": (attn_bwd_dq_kernel, "dq"), "fwd_tma": (attn_fwd_tma_kernel, "fwd_tma"),
             "fwd_tma_ws": (attn_fwd_tma_kernel, "fwd_tma"),
             "fwd_tma_host": (attn_fwd_tma_kernel, "fwd_tma"),
             "dkdv_atomic": (attn_bwd_dkdv_kernel, "dkdv_atomic"),
             "dkdv_atomic_tma": (attn_bwd_dkdv_kernel, "dkdv_atomic"),
             "dkdv_tma": (attn_bwd_dkdv_kernel, "dkdv"), "dq_tma": (attn_bwd_dq_kernel, "dq"),
             "fwd_split": (attn_fwd_split_kernel, "fwd")}


def _set_desc_blocks(q_desc, k_desc, v_desc, o_desc, block_m, block_n):
    """Host descriptors' blocks follow the tiles: (1, 1, rows, BLOCK_D) of (batch, heads, seq,
    d). No-op for pointers (the in-kernel descriptors' variants)."""
    if isinstance(q_desc, torch.Tensor):
        return
    block_d = q_desc.block_shape[-1]
    q_desc.block_shape = o_desc.block_shape = [1, 1, block_m, block_d]
    k_desc.block_shape = v_desc.block_shape = [1, 1, block_n, block_d]


def _desc_blocks_hook(nargs):
    """Autotuner pre-hook of the TMA forward: each config's tiles set the blocks."""
    _set_desc_blocks(nargs["q_desc"], nargs["k_desc"], nargs["v_desc"], nargs["o_desc"],
                     nargs["BLOCK_M"], nargs["BLOCK_N"])


@functools.lru_cache(maxsize=None)
def _tuned(name, block_d, device, dtype):
    """The autotuned launcher of one launch of _LAUNCHES for a head-dim class, a GPU and a
    dtype (host descriptors do not show their dtype to the autotuner's key). The one-pass
    backward's trials add into dQ: the autotuner zeroes it before each (reset_to_zero)."""
    kernel, config_set = _LAUNCHES[name]
    hook = _desc_blocks_hook if name == "fwd_tma_host" else None
    configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s,
                             pre_hook=hook)
               for bm, bn, w, s in tuning_for("attention", device).configs(config_set, block_d)]
    # FOLD and LAST_COMBINES in the key: each value compiles other code, with its own timings
    # (a forward of a negative scale once took the choice tuned for a positive one's)
    return triton.autotune(configs=configs, key=["n_queries", "n_keys", "HEAD_DIM", "IS_CAUSAL",
                                                 "FOLD", "LAST_COMBINES"],
                           do_bench=_autotune_bench,
                           reset_to_zero=["dq_ptr"] if name.startswith("dkdv_atomic") else None
                           )(kernel)


def _run(name, grid_rows, n_zh, work, args, tiles, device, dtype, **constexprs):
    """Launch `name` (_LAUNCHES) on `device` (`tensor.get_device()`): `tiles` (BLOCK_M,
    BLOCK_N, warps, stages) if given, else the tuning's simulator config on a CPU, and on a
    GPU the first config that fits (_first_fitting) for `work` = batch*heads*Nq*Nk up to the
    tuning's tune_above, the autotuner above.
    grid = (cdiv(grid_rows, row block), n_zh) where the row block is BLOCK_M (forward, dQ) or
    BLOCK_N (dK/dV)."""
    kernel, config_set = _LAUNCHES[name]
    along = "BLOCK_N" if config_set.startswith("dkdv") else "BLOCK_M"
    t = tuning_for("attention", device)
    if tiles is None and device >= 0:
        tiles = _kept_tiles(name, device, dtype, grid_rows, n_zh, work, constexprs, t)
        if tiles is None and work > t.tune_above:  # the autotuner, its choice kept
            tuned = _tuned(name, constexprs["BLOCK_D"], device, dtype)
            tuned[lambda meta: (triton.cdiv(grid_rows, meta[along]), n_zh)](*args, **constexprs)
            best = tuned.best_config
            _CHOSEN[_chosen_key(name, device, dtype, grid_rows, n_zh, work, constexprs)] = (
                best.kwargs["BLOCK_M"], best.kwargs["BLOCK_N"], best.num_warps,
                best.num_stages)
            return
        if tiles is None:
            configs, few = _untuned_configs(name, t.configs(config_set, constexprs["BLOCK_D"]),
                                            grid_rows, n_zh, device, t)
            _first_fitting(name, kernel, grid_rows, n_zh, along, args, constexprs, configs,
                           dtype, few)
            return
    _launch_tiles(kernel, grid_rows, n_zh, along, args, tiles or t.simulator(config_set),
                  constexprs)


def _launch_tiles(kernel, grid_rows, n_zh, along, args, tiles, constexprs):
    bm, bn, warps, stages = tiles
    block = bn if along == "BLOCK_N" else bm
    grid = (triton.cdiv(grid_rows, block), n_zh)
    kw = dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages, **constexprs)
    if constexprs.get("HOST_DESC"):  # descriptors, not tensors: no Bound
        _set_desc_blocks(*args[:4], bm, bn)
        launch(kernel, grid, *args, **kw)
        return
    _bound_launch(kernel, grid, args, kw)


# (kernel, grid, _arg_keys, the keywords) -> its Bound launch: a signature's later calls skip
# Triton's dispatch, and the native path describes them
_BOUNDS = PlanCache()


def _arg_keys(args):
    """What a Bound launch of `args` is specialised on besides its keywords: each tensor's
    dtype and device (a Bound follows whichever it was called with last), every other
    argument itself."""
    return tuple((a.dtype, a.device) if isinstance(a, torch.Tensor) else a for a in args)


def _bound_key(kernel, grid, arg_keys, kw):
    return (kernel, grid, arg_keys, tuple(sorted(kw.items())))


def _bound_launch(kernel, grid, args, kw):
    _BOUNDS.get(_bound_key(kernel, grid, _arg_keys(args), kw),
                lambda: Bound(kernel, grid, **kw))(*args)


# (launch name, BLOCK_D, dtype[, "few"]) -> index of the first config whose shared memory
# fits, in _untuned_configs' order ("few": its order for few programs)
_FITS = {}
# _chosen_key -> the tiles (BLOCK_M, BLOCK_N, warps, stages) the autotuner chose for an
# autotuned launch: its later calls are Bound launches of them (no autotuner and JIT dispatch
# on the host), which the native path describes
_CHOSEN = {}


def _chosen_key(name, device, dtype, grid_rows, n_zh, work, constexprs):
    """What an autotuned launch's choice is kept under: per device, as the autotuner (_tuned),
    and finer than its key (which has no batch*heads), so a choice is looked up, never shared
    wrongly."""
    return name, device, dtype, grid_rows, n_zh, work, tuple(sorted(constexprs.items()))


def _kept_tiles(name, device, dtype, grid_rows, n_zh, work, constexprs, t):
    """The tiles a GPU launch of `name` runs once they are known, or None before: the
    autotuner's choice above the tuning `t`'s tune_above, the first config that fits up to it.
    One rule for the Python path (_run) and the native plan (_describe)."""
    if work > t.tune_above:
        return _CHOSEN.get(_chosen_key(name, device, dtype, grid_rows, n_zh, work, constexprs))
    configs, few = _untuned_configs(name, t.configs(_LAUNCHES[name][1], constexprs["BLOCK_D"]),
                                    grid_rows, n_zh, device, t)
    fit = _FITS.get(_fits_key(name, constexprs["BLOCK_D"], dtype, few))
    return None if fit is None else configs[fit]


def _untuned_configs(name, configs, grid_rows, n_zh, device, t):
    """(configs, few): the order in which an untuned GPU launch of `name` tries the tuning's
    `configs`. The pointer forward ("fwd") of fewer programs, n_zh * cdiv(grid_rows,
    BLOCK_M) at the first config's BLOCK_M, than the tuning's `untuned_fwd_fill` times the
    SMs (`few`) tries those of the smallest BLOCK_M first: each of its programs walks every
    key one tile after another, so its time is that walk's latency, and twice the programs
    of half the queries each finish in about half the time (tuning.py's figures)."""
    smallest = min(c[0] for c in configs)
    if (name != "fwd" or not t.untuned_fwd_fill or configs[0][0] == smallest
            or n_zh * -(-grid_rows // configs[0][0]) >= t.untuned_fwd_fill * sm_count(device)):
        return configs, False
    return tuple(sorted(configs, key=lambda c: c[0] != smallest)), True


def _fits_key(name, block_d, dtype, few=False):
    return (name, block_d, dtype, "few") if few else (name, block_d, dtype)


def _first_fitting(name, kernel, grid_rows, n_zh, along, args, constexprs, configs, dtype=None,
                   few=False):
    """Untuned GPU launch: the first of `configs` (in _untuned_configs' order, `few` its
    order for few programs) that fits the SM's shared
    memory (fp32 operands need twice the bytes of 16-bit ones: the first 16-bit config can
    be too large), as the autotuner skips configs that raise OutOfResources. Nothing runs
    before a config compiles and fits, so trying the next one is safe. `dtype`: the
    inputs' (default: the first argument's, a tensor)."""
    dtype = args[0].dtype if dtype is None else dtype
    key = _fits_key(name, constexprs["BLOCK_D"], dtype, few)
    for i in range(_FITS.get(key, 0), len(configs)):
        try:
            _launch_tiles(kernel, grid_rows, n_zh, along, args, configs[i], constexprs)
        except triton.runtime.errors.OutOfResources:
            continue
        _FITS[key] = i
        return
    raise RuntimeError(f"flash_attention: no {name} config of {configs} fits this GPU "
                       f"for head dim block {constexprs['BLOCK_D']} and {dtype}")


# --------------------------------------------------------------------------------------------
# launch functions

def _strides4(t):
    """(batch, heads, seq, d) strides of a 3-D or 4-D tensor (heads stride 0 for 3-D)."""
    s = t.stride()
    return (s[0], 0, s[1], s[2]) if len(s) == 3 else s


def check_attention_inputs(q, k, v, op="flash_attention"):
    """Check q, k, v: (batch, seq, d) or (batch, heads, seq, d) alike but for the sequence
    lengths, one float dtype, the backend's device, 1 <= d <= 128, at least one key. Strides
    are free. Returns (batch, heads, n_queries, n_keys, d)."""
    check_inputs(op, q, k, v, device=DEVICE, dtypes=FLOAT_DTYPES, same_shape=False,
                 contiguous=False)
    if q.dim() not in (3, 4):
        raise ValueError(f"{op}: q has shape {tuple(q.shape)}; expected (batch, seq, d) or "
                         f"(batch, heads, seq, d)")
    for name, t in (("k", k), ("v", v)):
        if t.dim() != q.dim() or t.shape[:-2] != q.shape[:-2] or t.shape[-1] != q.shape[-1]:
            raise ValueError(f"{op}: {name} has shape {tuple(t.shape)}, q {tuple(q.shape)}: "
                             f"they must agree in every dimension but the sequence length")
        if t.dtype != q.dtype:
            raise TypeError(f"{op}: dtypes differ: q {q.dtype}, {name} {t.dtype}")
        if t.device != q.device:
            raise ValueError(f"{op}: q is on {q.device}, {name} on {t.device}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"{op}: k has {k.shape[-2]} keys, v {v.shape[-2]} values")
    d = q.shape[-1]
    if not 1 <= d <= MAX_HEAD_DIM:
        raise ValueError(f"{op}: head dim {d} is not supported (1 to {MAX_HEAD_DIM}); split "
                         f"larger heads or use torch.nn.functional.scaled_dot_product_attention")
    if k.shape[-2] == 0 and q.shape[-2] > 0:
        raise ValueError(f"{op}: no keys: the softmax of an empty row is undefined")
    return _dims(q, k)


def _dims(q, k):
    """(batch, heads, n_queries, n_keys, d) of 3-D or 4-D q and k (heads 1 for 3-D)."""
    return (q.shape[0], q.shape[1] if q.dim() == 4 else 1, q.shape[-2], k.shape[-2],
            q.shape[-1])


def _block_d(d):
    return max(16, triton.next_power_of_2(d))  # tl.dot needs K >= 16


FWD_IMPLS = ("pointers", "split", "tma", "tma-ws", "tma-host", "gluon", "gluon-ws")
# the Gluon forwards' schedules (kernels/attention_gluon.py): "gluon-ws" warp-specialized, in
# FlashAttention-3's consumer loop (intra-warpgroup overlap, the two consumers in ping-pong),
# persistent (a program per SM taking the next query tile: 1.03-1.09x a program per tile on
# 4x32x4096x128 fp16, H100, 2026-12-06, docs/attention.md)
_GLUON_FWD = {"gluon": {},
              "gluon-ws": {"ws": True, "overlap": True, "pingpong": True, "persistent": True}}
BWD_IMPLS = ("two-kernel", "two-kernel-tma", "atomic", "atomic-tma", "gluon", "gluon-ws",
             "gluon-atomic", "gluon-ws-atomic")
_POINTER_BWD = {"two-kernel-tma": "two-kernel", "atomic-tma": "atomic"}
# the Gluon backwards: what says why one cannot take the inputs (kernels/attention_gluon.py),
# and the tl backward of the same plan a default falls back to there
_GLUON_BWD = {"gluon": ("backward_problem", "two-kernel-tma"),
              "gluon-ws": ("ws_backward_problem", "two-kernel-tma"),
              "gluon-atomic": ("one_pass_problem", "atomic-tma"),
              "gluon-ws-atomic": ("ws_one_pass_problem", "atomic-tma")}


def tma_problem(*tensors):
    """Why TMA descriptors cannot read or write these (batch, [heads,] seq, d) tensors (and
    an output laid out like the first), or None: TMA needs a Hopper or newer GPU, a
    contiguous last dimension, a 16-byte aligned base and 16-byte multiples for every other
    stride that is stepped along (dimensions of size 1 never are)."""
    first = tensors[0]
    if first.is_cuda and not _has_tma(first.get_device()):
        return "TMA needs a Hopper or newer GPU (compute capability 9+)"
    if first.shape[-1] * first.element_size() % 16:
        return (f"the output's rows of {first.shape[-1]} x {first.element_size()} bytes are "
                f"not a multiple of 16 bytes")
    for t in tensors:
        size = t.element_size()
        if t.stride(-1) != 1 and t.shape[-1] > 1:
            return f"a last dimension of stride {t.stride(-1)}, not 1"
        if t.data_ptr() % 16:
            return "a base address not 16-byte aligned"
        for extent, stride in zip(t.shape[:-1], t.stride()[:-1]):
            if extent > 1 and (stride == 0 or stride * size % 16):
                return f"a stride of {stride} x {size} bytes, not a nonzero multiple of 16"
    return None


@functools.lru_cache(maxsize=None)
def _has_tma(device_index):
    return torch.cuda.get_device_capability(device_index)[0] >= 9  # Hopper or newer


def _host_bound(q, k, t):
    """A problem small enough on a GPU that a call's time is the host's: batch*heads*Nq*Nk up
    to the tuning's tune_above (the untuned sizes), or batch*heads*Nq*Nk*BLOCK_D*element size
    up to its `host_bound_upto` (the GPU's work grows with the head dim and the dtype, the
    host's does not). The defaults then take the pointer kernels, which need no descriptor
    scratch, so the native path (issue 37) can launch them: a Python call of the TMA and
    Gluon kernels costs 0.25 ms of host time a forward and 1 ms a forward+backward on the
    H200 machine, where these problems need 0.04-0.8 ms of the GPU."""
    return q.is_cuda and host_bound_size(*_dims(q, k), q.element_size(), t)


def host_bound_size(batch, heads, n_q, n_k, d, element_size, t):
    """_host_bound's rule for a problem's sizes and the attention tuning `t`."""
    work = batch * heads * n_q * n_k
    return work <= t.tune_above or work * _block_d(d) * element_size <= t.host_bound_upto


def _fold(scale, q, impl, t):
    """FOLD for forward `impl` of q: the scale folded into the softmax (_softmax_step) where it
    is positive, but in the pointer and split forwards of the fp32 head dims the tuning keeps
    unfolded (`fp32_unfolded_d`, head dims as their BLOCK_D)."""
    return bool(scale > 0) and not (impl in ("pointers", "split") and q.element_size() == 4
                                    and _block_d(q.shape[-1]) in t.fp32_unfolded_d)


def fp32_pointers_size(batch, heads, n_q, n_k, d, element_size, t):
    """Whether an fp32 problem of a small head dim takes the pointer forward where the
    default would be the TMA one: head dims up to the tuning's `fp32_pointers_d`, up to
    batch*heads*Nq*Nk*BLOCK_D*4 = its `fp32_pointers_upto` (the TMA forward's fp32 tiles are
    the slower there; tuning.py has the figures)."""
    return (element_size == 4 and d <= t.fp32_pointers_d
            and batch * heads * n_q * n_k * _block_d(d) * 4 <= t.fp32_pointers_upto)


def forward_impl(q, k, v, impl=None, tiles=None):
    """The forward implementation that runs for these inputs: `impl` if given (one of
    FWD_IMPLS; a TMA one raises ValueError where tma_problem finds one, a Gluon one where
    its tiles, the caller's `tiles` if given, cannot take them), else the device
    tuning's `fwd_impl` (on a GPU for head dims above 64, its `fwd_impl_large` where
    set), or "pointers" where that is a TMA one and TMA
    cannot take them, or on a GPU where the problem is small (batch*heads*Nq*Nk up to the
    tuning's tune_above, the untuned sizes): there a call's time is the host's, and the
    pointer kernel needs no descriptor scratch, so the native path (issue 37) can launch it;
    and on a GPU for the fp32 problems of small head dims where the pointer forward is the
    faster (fp32_pointers_size)."""
    if impl is None:
        t = tuning_for("attention", q.get_device())
        impl = t.fwd_impl
        if impl == "pointers" or _host_bound(q, k, t):
            return "split" if q.is_cuda and fwd_splits(*_dims(q, k), t) > 1 else "pointers"
        if q.is_cuda and q.shape[-1] > 64 and t.fwd_impl_large:
            impl = t.fwd_impl_large
        if impl in _GLUON_FWD and (_gluon_problem(q, k, v, impl == "gluon-ws", tiles)
                                   or _few_programs(q, t)):
            impl = "tma"
        if impl == "tma" and q.is_cuda and fp32_pointers_size(*_dims(q, k), q.element_size(),
                                                              t):
            return "pointers"
        return "pointers" if tma_problem(q, k, v) else impl
    if impl not in FWD_IMPLS:
        raise ValueError(f"flash_attention: unknown forward impl {impl!r}; one of "
                         f"{', '.join(FWD_IMPLS)}")
    problem = impl in _GLUON_FWD and _gluon_problem(q, k, v, impl == "gluon-ws", tiles)
    if problem:
        raise ValueError(f"flash_attention: impl={impl!r} cannot take these inputs: {problem}; "
                         f"use impl='tma' or 'pointers'")
    problem = impl not in ("pointers", "split") and tma_problem(q, k, v)
    if problem:
        raise ValueError(f"flash_attention: impl={impl!r} reads through TMA descriptors, which "
                         f"these inputs do not allow: {problem}; use impl='pointers'")
    if impl == "tma-ws" and q.is_cuda and not _warp_specialization_compiles(q.get_device()):
        raise NotImplementedError(
            f"flash_attention: impl='tma-ws' does not compile with Triton {triton.__version__} "
            f"on this GPU (compute capability 9: its NVGPUWarpSpecialization pass fails on "
            f"this kernel, seen on an H100 on 2026-12-05); use impl='tma', the same kernel "
            f"without warp specialization (docs/attention.md#measured)")
    return impl


def fwd_splits(batch, heads, n_q, n_k, d, t, asked=False):
    """The shares of keys the split forward (impl "split") cuts a problem into, from the
    tuning `t`: enough that batch*heads*cdiv(Nq, BLOCK_M) query blocks (BLOCK_M of the first
    forward config) times the shares reach its `split_programs_below`, at most `max_splits`,
    each of at least `split_min_keys` keys; 1: none (no split by default). `asked`
    (impl="split" given): at least 2. Never more than CUDA's grid allows (batch*heads*shares
    programs on its second axis, at most 65535): 1 share (the split forward's kernels as one
    program per query block, then the combination) where batch*heads passes 32767."""
    programs = batch * heads * -(-n_q // t.configs("fwd", _block_d(d))[0][0])
    shares = (-(-t.split_programs_below // programs)
              if 0 < programs < t.split_programs_below else 1)
    shares = min(shares, t.max_splits, max(1, n_k // t.split_min_keys))
    shares = max(shares, 2) if asked else shares
    # the grid's second axis holds batch*heads*shares programs: at most 65535 on CUDA
    return max(1, min(shares, GRID_Y_MAX // max(1, batch * heads)))


def _few_programs(q, t):
    """Whether the Gluon forward would run fewer programs on this GPU than the tuning's
    `gluon_min_waves` per SM: each program waits for its MMAs one key tile after another, so
    it needs other programs on the SM to hide that latency, where the TMA forward pipelines
    its loop (batch 1, one head, 32768 keys: 256 programs, 0.73-0.88x the TMA forward)."""
    if not q.is_cuda:
        return False
    programs = math.prod(q.shape[:-2]) * -(-q.shape[-2] // attention_gluon.tiles_for(q, t)[0])
    return programs < t.gluon_min_waves * sm_count(q.get_device())


def _gluon_problem(q, k, v, ws=False, tiles=None):
    """Why the Gluon forward (kernels/attention_gluon.py; `ws`: the warp-specialized one)
    cannot take q, k, v with `tiles` (None: its own), or None."""
    if attention_gluon is None:
        return _NO_GLUON
    return attention_gluon.gluon_problem(q, k, v, tiles, ws=ws)


@functools.lru_cache(maxsize=None)
def _warp_specialization_compiles(device_index):
    """Whether the warp-specialized TMA forward compiles here: not with Triton 3.6 on Hopper
    (compute capability 9), where Triton's own tutorial 06 also specializes only its
    non-causal forward with other tiles; untried elsewhere, so allowed."""
    hopper = torch.cuda.get_device_capability(device_index)[0] == 9
    return not (hopper and str(getattr(triton, "__version__", "")).startswith("3.6."))


def backward_impl(q, impl=None, *others, tiles=None):
    """The backward implementation that runs: `impl` if given (one of BWD_IMPLS; a TMA one
    raises ValueError where TMA cannot read q and `others` (k, v) or, "atomic-tma", add into
    dQ's fp32 rows), else the device tuning's `bwd_impl` (`bwd_impl_small` for head dims up to
    64 where it has one); a Gluon one that cannot take the inputs gives way to the tuning's
    `bwd_fallback` (`bwd_fallback_small` up to 64), by default the tl backward of its plan
    (_GLUON_BWD); then a TMA one to its pointer counterpart where
    TMA cannot take these tensors, or on a GPU where the problem is
    small (_host_bound: batch*heads*Nq*Nk up to the tuning's tune_above, or with the head dim
    and dtype up to its host_bound_upto; from q and `others`' k): there, as forward_impl
    says, a call's time is the host's and the native path launches the pointer kernels.
    Such a problem's head dim up to the tuning's host_one_pass_d takes the one pass
    ("atomic") first, before any of the above. A dO TMA cannot read is copied. `tiles`: the
    caller's ({"dkdv": ..., "dq": ...}), which a Gluon backward is checked with."""
    if impl is None:
        t = tuning_for("attention", q.get_device())
        small = bool(others) and _host_bound(q, others[0], t)
        if small and q.shape[-1] <= t.host_one_pass_d:
            return "atomic"
        impl = t.bwd_impl_small if t.bwd_impl_small and q.shape[-1] <= 64 and not small \
            else t.bwd_impl
        if impl in _GLUON_BWD:
            if not small and not _gluon_bwd_problem(impl, q, *others, tiles=tiles):
                return impl
            impl = (t.bwd_fallback_small if t.bwd_fallback_small and q.shape[-1] <= 64
                    and not small else t.bwd_fallback or _GLUON_BWD[impl][1])
        if impl not in _POINTER_BWD:
            return impl
        return _POINTER_BWD[impl] if small or _bwd_tma_problem(impl, q, *others) else impl
    if impl not in BWD_IMPLS:
        raise ValueError(f"flash_attention: unknown backward impl {impl!r}; one of "
                         f"{', '.join(BWD_IMPLS)}")
    if impl in _GLUON_BWD:
        problem = _gluon_bwd_problem(impl, q, *others, tiles=tiles)
        if problem:
            raise ValueError(f"flash_attention: bwd impl {impl!r} cannot take these inputs: "
                             f"{problem}; use impl='two-kernel-tma' or 'two-kernel'")
        return impl
    problem = _bwd_tma_problem(impl, q, *others)
    if problem:
        raise ValueError(f"flash_attention: bwd impl {impl!r} reads (and, 'atomic-tma', adds "
                         f"dQ) through TMA descriptors, which these inputs do not allow: "
                         f"{problem}; use impl={_POINTER_BWD[impl]!r}")
    return impl


def _gluon_bwd_problem(impl, q, *others, tiles=None):
    """Why the Gluon backward `impl` cannot take q and `others` (k, v) with `tiles` (the
    caller's {"dkdv": ..., "dq": ...}; None: its own), or None (also when k and v are not
    given)."""
    if attention_gluon is None:
        return _NO_GLUON
    if not others:
        return None
    name = _GLUON_BWD[impl][0]
    if tiles and "one_pass" in name:  # the one pass runs the dK/dV kernel alone
        tiles = tiles.get("dkdv")
    return getattr(attention_gluon, name)(q, *others, tiles=tiles or None)


def _bwd_tma_problem(impl, q, *others):
    """Why the TMA backward `impl` cannot take q and `others` (k, v), or None (also for a
    pointer impl)."""
    if impl not in _POINTER_BWD:
        return None
    if impl == "atomic-tma" and q.shape[-1] % 4:
        return (f"dQ's fp32 rows need a multiple of 16 bytes (head dim {q.shape[-1]}, not a "
                f"multiple of 4)")
    return tma_problem(q, *others) or None


def _forward(q, k, v, causal, scale, tiles=None, impl=None):
    """(O, L) for checked inputs: O like q (contiguous), L fp32 of shape q.shape[:-1]."""
    batch, heads, n_q, n_k, d = check_attention_inputs(q, k, v)
    impl = forward_impl(q, k, v, impl, tiles)
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
    if not o.numel():
        return o, lse
    t = tuning_for("attention", q.get_device())
    consts = dict(HEAD_DIM=d, BLOCK_D=_block_d(d), IS_CAUSAL=bool(causal),
                  FOLD=_fold(scale, q, impl, t))
    work = batch * heads * n_q * n_k
    if impl in _GLUON_FWD:
        return attention_gluon.forward(q, k, v, o, lse, causal, scale, tiles, **_GLUON_FWD[impl])
    if impl == "pointers":
        args = (q, k, v, o, lse, *_strides4(q), *_strides4(k), *_strides4(v), *_strides4(o),
                heads, n_q, n_k, scale * LOG2E)
        _run("fwd", n_q, batch * heads, work, args, tiles, q.get_device(), q.dtype, **consts)
        return o, lse
    if impl == "split":
        splits = fwd_splits(batch, heads, n_q, n_k, d, t, asked=True)
        zh = batch * heads
        o_part, l_part = (torch.empty(shape, dtype=dtype, device=q.device)
                          for shape, dtype in _split_partials(splits, zh, n_q, d))
        last = _last_combines(t)

        def shares(count):
            args = (q, k, v, o_part, l_part, o, lse, count, *_strides4(q), *_strides4(k),
                    *_strides4(v), *_strides4(o), heads, n_q, n_k, scale * LOG2E, splits)
            _run("fwd_split", n_q, zh * splits, work, args, tiles, q.get_device(), q.dtype,
                 LAST_COMBINES=last, **consts)
        if last:
            _exchange.counted("attention split", _split_counters(zh, n_q, tiles), q.device,
                              shares)
            return o, lse
        shares(l_part)  # (no counter read)
        block, kw = _combine_kw(d, t)
        _bound_launch(attn_fwd_combine_kernel, (triton.cdiv(n_q, block), zh),
                      (o_part, l_part, o, lse, *_strides4(o), heads, zh, n_q, splits), kw)
        return o, lse
    host = impl == "tma-host"
    if host:  # blocks set per config before each launch (_set_desc_blocks)
        tensors = [_descriptor4(t, consts["BLOCK_D"]) for t in (q, k, v, o)]
    else:  # in-kernel descriptors: their global scratch comes from Triton's allocator
        triton.set_allocator(_tma_scratch)
        tensors = [q, k, v, o]
    args = (*tensors, lse, *_tma_strides(q)[:3], *_tma_strides(k)[:3], *_tma_strides(v)[:3],
            *_tma_strides(o)[:3], heads, n_q, n_k,
            _causal_group(batch * heads, n_k, d, q.element_size(), causal, q.get_device()),
            scale * LOG2E)
    _run({"tma": "fwd_tma", "tma-ws": "fwd_tma_ws", "tma-host": "fwd_tma_host"}[impl], n_q,
         batch * heads, work, args, tiles, q.get_device(), q.dtype,
         WARP_SPECIALIZE=impl == "tma-ws", HOST_DESC=host,
         **_tail_flags("fwd_tma", n_k, causal, consts["BLOCK_D"], tiles, q.get_device()),
         **consts)
    return o, lse


def _split_partials(splits, zh, n_q, d):
    """(shape, dtype) of the split forward's two partials: O and the log2-sum-exp per share."""
    return [((splits, zh, n_q, d), torch.float32), ((splits, zh, n_q), torch.float32)]


def _last_combines(t):
    """Whether the split forward's last share combines the shares (tuning split_combine)."""
    if t.split_combine not in ("last", "kernel"):
        raise ValueError(f"flash_attention: tuning split_combine {t.split_combine!r}: \"last\" "
                         f"or \"kernel\"")
    return t.split_combine == "last"


def _split_counters(zh, n_q, tiles=None):
    """How many counters the split forward takes (split_combine "last"): one per query block
    of the given tiles, else enough for every config (BLOCK_M at least 16, tl.dot's least)."""
    return zh * triton.cdiv(n_q, tiles[0] if tiles else 16)


def _combine_kw(d, t):
    """(rows a program, the launch keywords) of the split forward's combine kernel."""
    block = t.split_combine_block
    return block, dict(BLOCK_M=block, HEAD_DIM=d, BLOCK_D=_block_d(d), num_warps=4)


def _tail_flags(name, n, causal, block_d, tiles, device):
    """The constexpr that lets launch `name` (_LAUNCHES) of a sequence of n rows (the keys of
    the forward and dQ, the queries of dK/dV) leave out its masked tail loop: EVEN_QUERIES for
    dK/dV (causal or not: its diagonal loop is apart), EVEN_KEYS for the TMA forward and dQ,
    False where causal (their masked loop also covers the diagonal), so that causal launches
    compile one variant. One rule for the Python path and the native plan (_describe)."""
    config_set = _LAUNCHES[name][1]
    if config_set.startswith("dkdv"):
        return {"EVEN_QUERIES": _whole_tiles(n, config_set, block_d, tiles, device, 0)}
    return {"EVEN_KEYS": not causal and _whole_tiles(n, config_set, block_d, tiles, device, 1)}


def _whole_tiles(n, config_set, block_d, tiles, device, axis):
    """Whether n rows (queries: axis 0, BLOCK_M; keys: axis 1, BLOCK_N) split into whole tiles
    in every config a launch of `config_set` may run: the given tiles, else the device's
    configs and the simulator's. The widest block decides: the blocks are powers of two. The
    kernels' EVEN_KEYS / EVEN_QUERIES: then their masked tail loop is not compiled."""
    if tiles is None:
        t = tuning_for("attention", device)
        widest = max(c[axis] for c in (*t.configs(config_set, block_d),
                                        t.simulator(config_set)))
    else:
        widest = tiles[axis]
    return n % widest == 0


def _tma_scratch(size, alignment, stream):
    return torch.empty(size, dtype=torch.int8, device=DEVICE)


def _shape4(t):
    return [t.shape[0], t.shape[1] if t.dim() == 4 else 1, t.shape[-2], t.shape[-1]]


def _tma_strides(t):
    """(batch, heads, seq, d) strides of a tensor that tma_problem accepts, where each
    dimension of size 1 has the stride it would have if contiguous: nothing steps along it,
    but TMA checks every stride's alignment, and its own may be anything."""
    shape, strides = _shape4(t), list(_strides4(t))
    for i in (2, 1, 0):
        if shape[i] == 1:
            strides[i] = shape[i + 1] * strides[i + 1]
    return strides


def _descriptor4(t, block_d):
    """A host TensorDescriptor of a 3-D or 4-D tensor as (batch, heads, seq, d); its block is
    set per launch."""
    return TensorDescriptor(t, _shape4(t), _tma_strides(t), [1, 1, 16, block_d])


def _causal_group(n_zh, n_k, d, element_size, causal, device):
    """Heads whose causal programs the TMA forward orders together, longest rows first: as
    many as keep their K and V within the tuning's causal_group_bytes (1: not causal)."""
    if not causal:
        return 1
    budget = tuning_for("attention", device).causal_group_bytes
    return max(1, min(n_zh, budget // max(1, 2 * n_k * d * element_size)))


def _preprocess_kw(d, block, zero_dq):
    return dict(HEAD_DIM=d, BLOCK_D=_block_d(d), BLOCK_M=block, ZERO_DQ=zero_dq)


def _delta(o, do, heads, n_q, d, dq32=None):
    """D = rowsum(dO * O), fp32 (batch*heads, n_queries); `dq32` (the one-pass backward's fp32
    dQ) is zeroed in the same pass."""
    zh = o.numel() // max(1, n_q * d)
    delta = torch.empty(zh, n_q, dtype=torch.float32, device=o.device)
    t = tuning_for("attention", o.get_device())
    block = t.preprocess_block if o.is_cuda else t.simulator_preprocess_block
    _bound_launch(attn_bwd_preprocess_kernel, (triton.cdiv(n_q, block), zh),
                  (o, do, delta, delta if dq32 is None else dq32, *_strides4(o),
                   *_strides4(do), heads, n_q),
                  _preprocess_kw(d, block, dq32 is not None))
    return delta


def _backward(do, q, k, v, o, lse, causal, scale, impl=None, tiles=None):
    """(dQ, dK, dV), contiguous, in q's dtype. impl: "two-kernel" (the dK/dV and dQ
    kernels), "atomic" (one pass: dQ added inside the dK/dV kernel), "racy" (the teaching
    variant that loses updates), None (the device's default). `tiles`: {"dkdv": ..., "dq":
    ...} configs instead of the simulator's or the autotuner's."""
    check_attention_inputs(q, k, v, op="flash_attention backward")
    check_inputs("flash_attention backward", do, o, device=DEVICE, dtypes=(q.dtype,),
                 same_shape=False, contiguous=False)
    if do.shape != q.shape or o.shape != q.shape:
        raise ValueError(f"flash_attention backward: dO {tuple(do.shape)} and O "
                         f"{tuple(o.shape)} must have q's shape {tuple(q.shape)}")
    return _backward_checked(do, q, k, v, o, lse, causal, scale,
                             impl if impl == "racy" else backward_impl(q, impl, k, v,
                                                                       tiles=tiles),
                             tiles)


def _backward_checked(do, q, k, v, o, lse, causal, scale, impl="two-kernel", tiles=None):
    """`_backward` for inputs known good (and an impl already resolved): the autograd
    Function's saved tensors, checked by its forward, and a dO that autograd gave the
    output's shape, dtype and device."""
    batch, heads, n_q, n_k, d = _dims(q, k)
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
    if n_k == 0 or q.numel() == 0:
        return dq.zero_(), dk.zero_(), dv.zero_()
    tiles = tiles or {}
    zh, block_d = batch * heads, _block_d(d)
    consts = dict(HEAD_DIM=d, BLOCK_D=block_d, IS_CAUSAL=bool(causal))
    work, device = zh * n_q * n_k, q.get_device()
    tma = impl in _POINTER_BWD
    st = _strides4
    if not do.is_contiguous():  # autograd's dO of a sum is an expanded view (stride 0): one
        do = do.contiguous()  # layout for every backward, as the native node's (_describe)
    if tma:  # in-kernel descriptors: their global scratch comes from Triton's allocator
        triton.set_allocator(_tma_scratch)
        st = _tma_strides  # the strides of size-1 dimensions made aligned: TMA checks them
        if tma_problem(do):  # a misaligned view
            do = do.clone(memory_format=torch.contiguous_format)
    if impl in _GLUON_BWD and do.data_ptr() % 16:  # a misaligned view: TMA reads it from
        do = do.clone(memory_format=torch.contiguous_format)  # an aligned copy
    if impl in ("gluon", "gluon-ws"):
        return attention_gluon.backward(do, q, k, v, lse, _delta(o, do, heads, n_q, d), dq, dk,
                                        dv, causal, scale, tiles or None, impl == "gluon-ws")
    if impl in ("two-kernel", "two-kernel-tma"):
        delta = _delta(o, do, heads, n_q, d)
        args = (q, k, v, do, lse, delta, dk, dv, dq, *st(q), *st(k), *st(v), *st(do),
                *_strides4(dk), *_strides4(dv), heads, n_q, n_k, scale * LOG2E, scale)
        name = "dkdv_tma" if tma else "dkdv"
        _run(name, n_k, zh, work, args, tiles.get("dkdv"), device, q.dtype, DQ_MODE=0,
             LOAD_TMA=tma, **consts,
             **_tail_flags(name, n_q, causal, block_d, tiles.get("dkdv"), device))
        name = "dq_tma" if tma else "dq"
        _run(name, n_q, zh, work,
             (q, k, v, do, lse, delta, dq, *st(q), *st(k), *st(v), *st(do), *_strides4(dq),
              heads, n_q, n_k, scale * LOG2E, scale),
             tiles.get("dq"), device, q.dtype, LOAD_TMA=tma, **consts,
             **_tail_flags(name, n_k, causal, block_d, tiles.get("dq"), device))
        return dq, dk, dv
    # dQ in fp32, (batch*heads, n_queries, d) contiguous: fp32 inputs add straight into the
    # output (laid out so), 16-bit ones into a scratch buffer converted at the end
    dq32 = dq if q.dtype == torch.float32 else scratch(
        "attention_dq32", (zh, n_q, d), torch.float32, q.device)
    delta = _delta(o, do, heads, n_q, d, dq32)
    if impl in ("gluon-atomic", "gluon-ws-atomic"):
        attention_gluon.backward_one_pass(do, q, k, v, lse, delta, dq32, dk, dv, causal, scale,
                                          tiles.get("dkdv"), impl == "gluon-ws-atomic")
        _cast_dq(dq32, dq)
        return dq, dk, dv
    args = (q, k, v, do, lse, delta, dk, dv, dq32, *st(q), *st(k), *st(v), *st(do),
            *_strides4(dk), *_strides4(dv), heads, n_q, n_k, scale * LOG2E, scale)
    if impl in ("atomic", "atomic-tma"):
        name = "dkdv_atomic_tma" if tma else "dkdv_atomic"
        _run(name, n_k, zh, work, args, tiles.get("dkdv"), device, q.dtype,
             DQ_MODE=3 if tma else 1, LOAD_TMA=tma, **consts,
             **_tail_flags(name, n_q, causal, block_d, tiles.get("dkdv"), device))
    else:  # racy, the teaching variant: one config, never autotuned
        bm, bn, warps, stages = (tiles.get("dkdv") or
                                 tuning_for("attention", device).simulator("dkdv"))
        launch(attn_bwd_dkdv_kernel, (triton.cdiv(n_k, bn), zh), *args, **consts, BLOCK_M=bm,
               BLOCK_N=bn, DQ_MODE=2, LOAD_TMA=False, num_warps=warps, num_stages=stages,
               **_tail_flags("dkdv", n_q, causal, block_d, (bm, bn, warps, stages), device))
    _cast_dq(dq32, dq)
    return dq, dk, dv


def default_scale(q):
    return 1.0 / math.sqrt(q.shape[-1])


def attention_forward(q, k, v, causal=False, scale=None, tiles=None, impl=None):
    """(O, L): O = softmax(q k^T * scale [causal mask]) v and L = logsumexp of the scaled
    scores per query row (fp32, shape q.shape[:-1]). `tiles` (BLOCK_M, BLOCK_N, warps, stages)
    replaces the simulator's config or the autotuner (tests, probes). `impl`: "pointers"
    (attn_fwd_kernel), "tma" (attn_fwd_tma_kernel, descriptors made in the kernel),
    "tma-ws" (the same with warp specialization), "tma-host" (host TensorDescriptors),
    "gluon" (kernels/attention_gluon.py: wgmma on a TMA ring, Hopper), "gluon-ws" (the same
    warp-specialized in FlashAttention-3's consumer loop), or None: the device's default
    (forward_impl)."""
    return _forward(q, k, v, causal, default_scale(q) if scale is None else scale, tiles, impl)


def attention_backward(do, q, k, v, o, lse, causal=False, scale=None, tiles=None, impl=None):
    """(dQ, dK, dV) from the forward's O and L. `impl`: "two-kernel" (D, then the dK/dV and
    dQ kernels: deterministic), "atomic" (D and dQ's zeros, then one pass that recomputes P
    once and adds dQ with atomics: attention_backward_atomic), "two-kernel-tma" and
    "atomic-tma" (the same with the tiles the loops step through read by TMA, and
    "atomic-tma" adding each dQ tile with one TMA reduction: Hopper or newer, inputs TMA can
    read, head dims a multiple of 4), "gluon" (the two kernels in Gluon, wgmma on TMA rings:
    kernels/attention_gluon.py, the Gluon forward's inputs), "gluon-ws" (the same two kernels
    warp-specialized as FlashAttention-3's: a loader warp, two consumer warp groups),
    "gluon-atomic" (one Gluon pass, each key tile's share of dQ added by TMA reductions),
    "gluon-ws-atomic" (that pass warp-specialized as "gluon-ws"'s dK/dV kernel), or None: the
    device's default."""
    return _backward(do, q, k, v, o, lse, causal, default_scale(q) if scale is None else scale,
                     impl, tiles)


def attention_backward_atomic(do, q, k, v, o, lse, causal=False, scale=None, tiles=None):
    """The one-pass backward: every dK/dV program adds its share of dQ with tl.atomic_add into
    an fp32 dQ, so P and dS are computed once (the two-kernel backward computes them twice).
    On a GPU the order of the adds varies from run to run: dQ is not bitwise deterministic."""
    return _backward(do, q, k, v, o, lse, causal, default_scale(q) if scale is None else scale,
                     "atomic", tiles)


def attention_backward_racy(do, q, k, v, o, lse, causal=False, scale=None, tiles=None):
    """Kept wrong on purpose: dQ accumulated by load-add-store from every key tile (updates are
    lost on a GPU and under the lockstep executor; the race sanitizer names it)."""
    return _backward(do, q, k, v, o, lse, causal, default_scale(q) if scale is None else scale,
                     "racy", tiles)


# --------------------------------------------------------------------------------------------
# naive attention for comparison (lectures/07): S and P go through memory

@triton.jit
def attn_naive_scores_kernel(q_ptr, k_ptr, s_ptr, n_queries, n_keys, scale,
                             HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # S = Q K^T * scale, one (BM, BN) tile per program, contiguous (batch, seq, d) inputs
    pid_m, pid_n, b = tl.program_id(0), tl.program_id(1), tl.program_id(2).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    q = _load_tile(q_ptr + b * n_queries * HEAD_DIM + offs_m[:, None] * HEAD_DIM
                   + offs_d[None, :], offs_m, n_queries, offs_d, HEAD_DIM, BLOCK_D,
                   True)  # read BM*d
    k = _load_tile(k_ptr + b * n_keys * HEAD_DIM + offs_n[:, None] * HEAD_DIM + offs_d[None, :],
                   offs_n, n_keys, offs_d, HEAD_DIM, BLOCK_D, True)  # read BN*d
    s = tl.dot(q, tl.trans(k)) * scale
    tl.store(s_ptr + b * n_queries * n_keys + offs_m[:, None] * n_keys + offs_n[None, :],
             s.to(s_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < n_queries) & (offs_n[None, :] < n_keys))  # write BM*BN


@triton.jit
def attn_naive_softmax_kernel(s_ptr, p_ptr, n_keys, BLOCK: tl.constexpr):
    # P = softmax(S) along a row, one row per program
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    s = tl.load(s_ptr + row * n_keys + cols, mask=cols < n_keys,
                other=float("-inf")).to(tl.float32)  # read Nk
    e = tl.exp(s - tl.max(s, 0))
    tl.store(p_ptr + row * n_keys + cols, (e / tl.sum(e, 0)).to(p_ptr.dtype.element_ty),
             mask=cols < n_keys)  # write Nk


@triton.jit
def attn_naive_pv_kernel(p_ptr, v_ptr, o_ptr, n_queries, n_keys, HEAD_DIM: tl.constexpr,
                         BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # O = P V, BM rows of O per program, walking the key tiles
    pid_m, b = tl.program_id(0), tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for start_n in range(0, n_keys, BLOCK_N):
        cols = start_n + offs_n
        p = tl.load(p_ptr + b * n_queries * n_keys + offs_m[:, None] * n_keys + cols[None, :],
                    mask=(offs_m[:, None] < n_queries) & (cols[None, :] < n_keys),
                    other=0.0)  # read BM*BN
        v = _load_tile(v_ptr + b * n_keys * HEAD_DIM + cols[:, None] * HEAD_DIM
                       + offs_d[None, :], cols, n_keys, offs_d, HEAD_DIM, BLOCK_D,
                       True)  # read BN*d
        acc = tl.dot(p.to(v.dtype), v, acc)
    _store_tile(o_ptr + b * n_queries * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
                acc, offs_m, n_queries, offs_d, HEAD_DIM)  # write BM*d


def attention_naive(q, k, v, scale=None, block_m=32, block_n=32):
    """softmax(q k^T * scale) v in three kernels that write S and P to memory (in q's dtype,
    as torch eager does): the traffic FlashAttention avoids. (batch, seq, d) inputs, not
    causal; the softmax kernel holds a whole row of keys."""
    check_attention_inputs(q, k, v, op="attention_naive")
    q, k, v = (t.contiguous() for t in (q, k, v))
    (batch, n_q, d), n_k = q.shape, k.shape[1]
    scale = default_scale(q) if scale is None else scale
    s = torch.empty(batch, n_q, n_k, dtype=q.dtype, device=q.device)
    p = torch.empty_like(s)
    o = torch.empty_like(q)
    launch(attn_naive_scores_kernel, (triton.cdiv(n_q, block_m), triton.cdiv(n_k, block_n),
                                      batch), q, k, s, n_q, n_k, scale, HEAD_DIM=d,
           BLOCK_D=_block_d(d), BLOCK_M=block_m, BLOCK_N=block_n)
    launch(attn_naive_softmax_kernel, (batch * n_q,), s, p, n_k,
           BLOCK=triton.next_power_of_2(n_k))
    launch(attn_naive_pv_kernel, (triton.cdiv(n_q, block_m), batch), p, v, o, n_q, n_k,
           HEAD_DIM=d, BLOCK_D=_block_d(d), BLOCK_M=block_m, BLOCK_N=block_n)
    return o


def naive_traffic(n, d, block_m, block_n):
    """Elements the three naive kernels read and write for one head, N queries and keys (whole
    tiles): scores read Q N/BN times and K N/BM times and write S; the softmax reads S, writes
    P; the PV kernel reads P once, V N/BM times, writes O."""
    scores = n * d * (n // block_n) + n * d * (n // block_m) + n * n
    return scores + 2 * n * n + (n * n + n * d * (n // block_m) + n * d)


def flash_forward_traffic(n, d, block_m, block_n, causal=False):
    """Elements the FlashAttention forward reads and writes for one head (whole tiles, BM a
    multiple of BN): Q and O once, L once, K and V once per query tile, or (causal) only the
    key tiles at or below each query tile's diagonal."""
    tiles_m = n // block_m
    key_tiles = (sum((i + 1) * block_m // block_n for i in range(tiles_m)) if causal
                 else tiles_m * (n // block_n))
    return 2 * n * d + n + 2 * key_tiles * block_n * d


# --------------------------------------------------------------------------------------------
# torch.compile: custom ops, so that tracing sees one op and no Triton (or simulator) code.
# A copy of this module bound to another backend (backend.with_backend) registers its own ops.

_NAMESPACE = "tritonlab"
_SUFFIX = __name__.rsplit("__", 1)[1] if "__" in __name__.rsplit(".", 1)[-1] else ""
_FWD_OP = f"{_NAMESPACE}::flash_attention_fwd{'_' + _SUFFIX if _SUFFIX else ''}"
_BWD_OP = f"{_NAMESPACE}::flash_attention_bwd{'_' + _SUFFIX if _SUFFIX else ''}"


@torch.library.custom_op(_FWD_OP, mutates_args=())
def _fwd_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float,
            impl: str) -> tuple[torch.Tensor, torch.Tensor]:
    return _forward(q, k, v, causal, scale, impl=impl or None)


@_fwd_op.register_fake
def _(q, k, v, causal, scale, impl):
    return (q.new_empty(q.shape), q.new_empty(q.shape[:-1], dtype=torch.float32))


@torch.library.custom_op(_BWD_OP, mutates_args=())
def _bwd_op(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
            o: torch.Tensor, lse: torch.Tensor, causal: bool, scale: float,
            impl: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _backward(do, q, k, v, o, lse, causal, scale, impl or None)


@_bwd_op.register_fake
def _(do, q, k, v, o, lse, causal, scale, impl):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _no_setup(ctx, inputs, output):
    pass


# the backward kernels have no derivative: a gradient of the gradient raises, saying so
_bwd_op.register_autograd(ops.no_double_backward("tritonlab flash_attention"),
                          setup_context=_no_setup)


def _compiling():
    return torch.compiler.is_compiling()


# --------------------------------------------------------------------------------------------
# autograd and the module

class FlashAttentionTriton(torch.autograd.Function):
    """The assignment's interface: forward(ctx, Q, K, V, is_causal=False) -> O, saving L (fp32,
    (batch, n_queries) for 3-D inputs), Q, K, V and O. `scale` (default 1/sqrt(d)) is an extra,
    optional argument, and so are `fwd_impl` and `bwd_impl` (attention_forward's and
    attention_backward's `impl`; default: the device's)."""

    @staticmethod
    def forward(ctx, Q, K, V, is_causal=False, scale=None, fwd_impl=None, bwd_impl=None):
        scale = default_scale(Q) if scale is None else float(scale)
        if bwd_impl is not None and bwd_impl not in BWD_IMPLS:
            raise ValueError(f"flash_attention: unknown backward impl {bwd_impl!r}; one of "
                             f"{', '.join(BWD_IMPLS)}")
        # the ops take a string, "" for the device's default, and resolve it themselves
        O, L = (_fwd_op(Q, K, V, bool(is_causal), scale, fwd_impl or "") if _compiling() else
                _forward(Q, K, V, is_causal, scale, impl=fwd_impl))
        ctx.save_for_backward(L, Q, K, V, O)
        ctx.is_causal, ctx.scale, ctx.bwd_impl = bool(is_causal), scale, bwd_impl
        return O

    @staticmethod
    def backward(ctx, dO):
        L, Q, K, V, O = ctx.saved_tensors
        # through the op when compiling, and under create_graph (grad mode on in a backward),
        # whose own gradient raises rather than being silently zero
        through_op = _compiling() or torch.is_grad_enabled()
        dQ, dK, dV = (_bwd_op(dO, Q, K, V, O, L, ctx.is_causal, ctx.scale, ctx.bwd_impl or "")
                      if through_op else
                      _backward_checked(dO, Q, K, V, O, L, ctx.is_causal, ctx.scale,
                                        backward_impl(Q, ctx.bwd_impl, K, V)))
        return dQ, dK, dV, None, None, None, None


def _describe(options, q, k, v):
    """The native plan (kernels/_native.py) of flash_attention on contiguous q, k, v where the
    device's default implementations are the pointer kernels (the host-bound sizes,
    _host_bound), once their launches ran through Triton with the config they keep (the
    first that fits, or the autotuner's choice): the pointer forward (O and L); the
    backward's D pass, then the dK/dV kernel and the dQ kernel (launched only where q's
    gradient is wanted) or the one pass ("atomic": D's pass zeroes an fp32 dQ that the dK/dV
    kernel adds into, cast to q's 16-bit dtype where q's gradient is wanted), as
    _backward_checked launches them for a contiguous dO."""
    causal, scale = options
    batch, heads, n_q, n_k, d = check_attention_inputs(q, k, v)
    if not (q.numel() and n_k):
        return "an empty q or no keys"
    t = tuning_for("attention", q.get_device())
    impl = forward_impl(q, k, v)
    if impl not in ("pointers", "split"):
        return "a TMA or Gluon forward: its descriptors are made per call"
    bwd = backward_impl(q, None, k, v)
    if bwd not in ("two-kernel", "atomic"):
        return f"the {bwd!r} backward: not the pointer kernels"
    one_pass = bwd == "atomic"
    scale = default_scale(q) if scale is None else scale
    zh, block_d, dtype = batch * heads, _block_d(d), q.dtype
    consts = dict(HEAD_DIM=d, BLOCK_D=block_d, IS_CAUSAL=bool(causal))
    S = _native.Slot
    # the split forward's partials are two more allocations of the forward, before dO, and
    # its counters a third where the last share combines
    splits = fwd_splits(batch, heads, n_q, n_k, d, t, asked=True) if impl == "split" else 0
    last = bool(splits) and _last_combines(t)
    parts = (2 + last) if splits else 0
    q_, k_, v_, o, lse = map(S, range(5))
    o_part, l_part, count = S(5), S(6), S(7)  # (the split forward's)
    do, delta, dq, dk, dv = map(S, range(5 + parts, 10 + parts))
    # the one pass's fp32 dQ: dQ itself in fp32, one more allocation of the backward else
    cast = one_pass and dtype != torch.float32
    dq32 = S(10 + parts) if cast else dq
    # each slot's tensor as a Bound's key sees it (_arg_keys): dtype and device
    typed, fp32 = (dtype, q.device), (torch.float32, q.device)
    slot_keys = ((typed,) * 4 + (fp32,) * (3 if splits else 1)
                 + ((torch.int32, q.device),) * last + (typed, fp32) + (typed,) * 3
                 + (fp32,) * cast)

    def strides(x):  # a contiguous tensor's, as the Python path allocates O, dO, dQ, dK, dV
        return _strides4(torch.empty(x.shape, device="meta"))

    def bound(kernel, grid, args, kw):  # the launch the Python path made, if it ran
        keys = tuple(slot_keys[a.index] if isinstance(a, S) else a for a in args)
        return _BOUNDS.plans.get(_bound_key(kernel, grid, keys, kw))

    work = zh * n_q * n_k

    def chosen(name, rows, args, n_zh=zh, **more):  # a launch of _first_fitting's or the
        kernel, config_set = _LAUNCHES[name]          # tuner's config
        tiles = _kept_tiles(name, q.get_device(), dtype, rows, n_zh, work, {**more, **consts},
                            t)
        if tiles is None:
            return None
        bm, bn, warps, stages = tiles
        grid = (triton.cdiv(rows, bn if config_set.startswith("dkdv") else bm), n_zh)
        return bound(kernel, grid, args, dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=warps,
                                              num_stages=stages, **more, **consts))

    sq, sk, sv = strides(q), strides(k), strides(v)
    fold = _fold(scale, q, "split" if splits else "pointers", t)
    if splits:  # the split forward: the shares' partials, then their combination
        split_args = (q_, k_, v_, o_part, l_part, o, lse, count if last else l_part, *sq, *sk,
                      *sv, *sq, heads, n_q, n_k, scale * LOG2E, splits)
        forward = [(chosen("fwd_split", n_q, split_args, n_zh=zh * splits, FOLD=fold,
                           LAST_COMBINES=last), split_args)]
        allocs = _split_partials(splits, zh, n_q, d)
        if last:
            allocs.append(((_split_counters(zh, n_q),), torch.int32))
        else:
            block, kw = _combine_kw(d, t)
            combine_args = (o_part, l_part, o, lse, *sq, heads, zh, n_q, splits)
            forward.append((bound(attn_fwd_combine_kernel, (triton.cdiv(n_q, block), zh),
                                  combine_args, kw), combine_args))
    else:
        fwd_args = (q_, k_, v_, o, lse, *sq, *sk, *sv, *sq, heads, n_q, n_k, scale * LOG2E)
        forward, allocs = [(chosen("fwd", n_q, fwd_args, FOLD=fold), fwd_args)], []
    if any(b is None for b, _ in forward):
        return None
    grads = (heads, n_q, n_k, scale * LOG2E, scale)
    block = t.preprocess_block
    args = {"delta": (o, do, delta, dq32 if one_pass else delta, *sq, *sq, heads, n_q),
            "dkdv": (q_, k_, v_, do, lse, delta, dk, dv, dq32, *sq, *sk, *sv, *sq, *sk, *sv,
                     *grads),
            "dq": (q_, k_, v_, do, lse, delta, dq, *sq, *sk, *sv, *sq, *sq, *grads),
            "cast": (dq32, dq, q.numel())}
    dkdv = "dkdv_atomic" if one_pass else "dkdv"
    launches = [
        (bound(attn_bwd_preprocess_kernel, (triton.cdiv(n_q, block), zh), args["delta"],
               _preprocess_kw(d, block, one_pass)), "delta", -1),
        (chosen(dkdv, n_k, args["dkdv"], DQ_MODE=int(one_pass), LOAD_TMA=False,
                **_tail_flags(dkdv, n_q, causal, block_d, None, q.get_device())), "dkdv", -1)]
    if not one_pass:
        launches.append((chosen("dq", n_q, args["dq"], LOAD_TMA=False,
                                **_tail_flags("dq", n_k, causal, block_d, None,
                                              q.get_device())), "dq", 0))
    elif cast:
        cast_grid, cast_kw = _dq_cast_launch(q.numel())
        launches.append((bound(attn_bwd_dq_cast_kernel, cast_grid, args["cast"], cast_kw),
                         "cast", 0))
    ready = all(b is not None for b, _, _ in launches)
    return _native.plan(
        (q, k, v), [(q.shape, dtype), (q.shape[:-1], torch.float32), *allocs],
        forward, o, saved=[q_, k_, v_, o, lse],
        bwd_allocs=[((zh, n_q), torch.float32), (q.shape, dtype), (k.shape, dtype),
                    (v.shape, dtype)] + [((zh, n_q, d), torch.float32)] * cast,
        backward=[(b, args[name]) for b, name, _ in launches] if ready else None,
        grads=[dq, dk, dv], backward_for=[i for _, _, i in launches],
        counters=count if last else None)


def _create_graph(options):
    causal, scale = options

    def backward(do, q, k, v, o, lse):  # through the op, whose own gradient raises
        return _bwd_op(do, q, k, v, o, lse, causal,
                       default_scale(q) if scale is None else scale, "")
    return backward


_native_attention = _native.NativeOp("TritonlabFlashAttentionBackward", _describe,
                                     _create_graph, enabled=DEVICE == "cuda")


def flash_attention(q, k, v, causal=False, scale=None, fwd_impl=None, bwd_impl=None):
    """softmax(q k^T * scale) v, differentiable; q, k, v (batch, seq, d) or (batch, heads, seq,
    d). `fwd_impl`/`bwd_impl` choose the implementations (FWD_IMPLS, BWD_IMPLS; default: the
    device tuning's).

    Small problems on a GPU with the default implementations take the native path
    (kernels/_native.py: checks, allocation, launches and the autograd node in C++), whose
    output's grad_fn is a C++ node without `saved_tensors`; every other call returns the
    Function's output itself (no view), whose `grad_fn.saved_tensors` holds L, as
    `FlashAttentionTriton.apply` always does (the assignment's contract)."""
    if fwd_impl is None and bwd_impl is None and type(causal) is bool and (
            scale is None or type(scale) is float):
        o = _native_attention((causal, scale), q, k, v)
        if o is not None:
            return o
    return FlashAttentionTriton.apply(q, k, v, causal, scale, fwd_impl, bwd_impl)


class FlashAttention(torch.nn.Module):
    """Attention over given q, k, v (no projections): `FlashAttention(causal=True)(q, k, v)`."""

    def __init__(self, causal=False, scale=None):
        super().__init__()
        self.causal, self.scale = causal, scale

    def forward(self, q, k, v):
        return flash_attention(q, k, v, self.causal, self.scale)

    def extra_repr(self):
        return f"causal={self.causal}, scale={self.scale}"
