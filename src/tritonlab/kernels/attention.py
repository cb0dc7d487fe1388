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
and loops over key tiles, so neither ever shares an output with another program. The teaching
variants put dQ into the dK/dV kernel instead: `attention_backward_atomic` with `tl.atomic_add`
(correct, non-deterministic order on a GPU) and `attention_backward_racy` with a plain
load-add-store, which loses updates; the simulator's race sanitizer names it.

Causal (top-left aligned, as the assignment: query i keeps key j when i >= j, also for
Nq != Nk): tiles above the diagonal are skipped by the loop bounds, and only tiles that cross
the diagonal or the sequence tail run with masks. Every loop is split into an unmasked stage
and a masked stage with the same inner function (`MASKED: tl.constexpr`). Head dims that are
not powers of two are padded to BLOCK_D with masked loads (zeros change neither S nor O).
Inputs are (batch, seq, d) or (batch, heads, seq, d), any strides; fp32 inputs multiply in
TF32 on the tensor cores (Triton's default for tl.dot).

On a GPU the tiles, warps and stages are autotuned per head dim from the configs of
kernels/tuning.py's AttentionTuning; the simulator runs one small config of it, the CPU being
no place for tuning. The launch
goes through torch.library custom ops under torch.compile, so that tracing sees one opaque op
(no graph break); eager calls launch directly.
"""
import functools
import math

import torch

from ..backend import DEVICE, tl, triton
from ._checks import FLOAT_DTYPES, check_inputs
from . import ops
from ._launch import launch
from .tuning import tuning_for

MAX_HEAD_DIM = 128
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
def _fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n, offs_d,
               n_keys, lo, hi, qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
               BLOCK_D: tl.constexpr, IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr):
    """Online softmax over the key tiles lo, lo + BLOCK_N, ... < hi. MASKED: the tiles that
    cross the diagonal (causal) or the end of the keys."""
    k_ptrs += lo * stride_kn
    v_ptrs += lo * stride_vn
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        k = _load_tile(k_ptrs, cols, n_keys, offs_d, HEAD_DIM, BLOCK_D, MASKED)  # read BN*d
        v = _load_tile(v_ptrs, cols, n_keys, offs_d, HEAD_DIM, BLOCK_D, MASKED)  # read BN*d
        s = tl.dot(q, tl.trans(k)) * qk_scale  # (BM, BN) scores in log2 units, on chip only
        if MASKED:
            keep = cols[None, :] < n_keys
            if IS_CAUSAL:
                keep = keep & (offs_m[:, None] >= cols[None, :])
            s = tl.where(keep, s, float("-inf"))
        # every row meets key 0 in its first tile, so m_new is finite: no -inf - -inf
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)  # rescales what was summed under the old maximum
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    return acc, l_i, m_i


@triton.jit
def attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr,
                    stride_qz, stride_qh, stride_qm, stride_qd,
                    stride_kz, stride_kh, stride_kn, stride_kd,
                    stride_vz, stride_vh, stride_vn, stride_vd,
                    stride_oz, stride_oh, stride_om, stride_od,
                    n_heads, n_queries, n_keys, qk_scale,
                    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, IS_CAUSAL: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    if IS_CAUSAL:  # the longest rows of keys first: the grid's tail is then short programs
        pid_m = tl.num_programs(0) - 1 - pid_m
    pid_zh = tl.program_id(1)
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
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    full = n_keys - n_keys % BLOCK_N  # key tiles below this need no tail mask
    if IS_CAUSAL:  # BLOCK_M is a multiple of BLOCK_N: tiles below start_m are all visible,
        mid = tl.minimum(start_m, full)  # those up to start_m + BLOCK_M cross the diagonal,
        hi = tl.minimum(start_m + BLOCK_M, n_keys)  # the rest are skipped
    else:
        mid = full
        hi = n_keys
    acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m,
                               offs_n, offs_d, n_keys, 0, mid, qk_scale, BLOCK_N, HEAD_DIM,
                               BLOCK_D, IS_CAUSAL, False)
    acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m,
                               offs_n, offs_d, n_keys, mid, hi, qk_scale, BLOCK_N, HEAD_DIM,
                               BLOCK_D, IS_CAUSAL, True)
    o_ptrs = (o_ptr + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om
              + offs_d[None, :] * stride_od)
    _store_tile(o_ptrs, acc / l_i[:, None], offs_m, n_queries, offs_d, HEAD_DIM)  # write BM*d
    lse = (m_i + tl.log2(l_i)) * 0.6931471805599453  # back to natural-log units
    tl.store(lse_ptr + pid_zh.to(tl.int64) * n_queries + offs_m, lse,
             mask=offs_m < n_queries)  # write BM


@triton.jit
def attn_bwd_preprocess_kernel(o_ptr, do_ptr, delta_ptr,
                               stride_oz, stride_oh, stride_om, stride_od,
                               stride_doz, stride_doh, stride_dom, stride_dod,
                               n_heads, n_queries, HEAD_DIM: tl.constexpr,
                               BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr):
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


@triton.jit
def _bwd_dkdv_inner(dk, dv, k, v, q_ptrs, do_ptrs, dq_ptrs, lse_ptr, delta_ptr, stride_qm,
                    stride_dom, stride_dqm, offs_m, offs_n, offs_d, n_queries, lo, hi, qk_scale,
                    scale, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr,
                    BLOCK_D: tl.constexpr, IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr,
                    DQ_MODE: tl.constexpr):
    """dK and dV of one key tile from the query tiles lo, lo + BLOCK_M, ... < hi, working on
    transposed tiles (keys along rows) so that dV += P^T dO and dK += dS^T Q need no
    transposes of the accumulators. DQ_MODE 1 (atomic) / 2 (racy): also add dS K into dQ."""
    for start_m in range(lo, hi, BLOCK_M):
        rows = start_m + offs_m
        q = _load_tile(q_ptrs + start_m * stride_qm, rows, n_queries, offs_d, HEAD_DIM, BLOCK_D,
                       MASKED)  # read BM*d
        do = _load_tile(do_ptrs + start_m * stride_dom, rows, n_queries, offs_d, HEAD_DIM,
                        BLOCK_D, MASKED)  # read BM*d
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
            dq_tile = dq_ptrs + start_m * stride_dqm
            dq_mask = (rows[:, None] < n_queries) & (offs_d[None, :] < HEAD_DIM)
            if DQ_MODE == 1:
                tl.atomic_add(dq_tile, dq, mask=dq_mask)  # every key tile adds into the rows
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
                         DQ_MODE: tl.constexpr):
    # dq_ptr (fp32, contiguous like (batch*heads, n_queries, BLOCK_D)'s first HEAD_DIM
    # columns: row stride HEAD_DIM) is only touched when DQ_MODE != 0
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
    q_ptrs = (q_ptr + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm
              + offs_d[None, :] * stride_qd)
    do_ptrs = (do_ptr + off_z * stride_doz + off_h * stride_doh + offs_m[:, None] * stride_dom
               + offs_d[None, :] * stride_dod)
    dq_ptrs = dq_ptr + pid_zh.to(tl.int64) * n_queries * HEAD_DIM + offs_m[:, None] * HEAD_DIM \
        + offs_d[None, :]
    lse_ptr += pid_zh.to(tl.int64) * n_queries
    delta_ptr += pid_zh.to(tl.int64) * n_queries
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    full = n_queries - n_queries % BLOCK_M  # query tiles below this need no tail mask
    lo = 0
    if IS_CAUSAL:  # queries before start_n see none of these keys: skipped. BLOCK_N is a
        # multiple of BLOCK_M, so the diagonal tiles are start_n ... start_n + BLOCK_N
        dk, dv = _bwd_dkdv_inner(dk, dv, k, v, q_ptrs, do_ptrs, dq_ptrs, lse_ptr, delta_ptr,
                                 stride_qm, stride_dom, HEAD_DIM, offs_m, offs_n, offs_d,
                                 n_queries, start_n, tl.minimum(start_n + BLOCK_N, n_queries),
                                 qk_scale, scale, BLOCK_M, HEAD_DIM, BLOCK_D, IS_CAUSAL, True,
                                 DQ_MODE)
        lo = start_n + BLOCK_N
    mid = tl.maximum(lo, full)
    dk, dv = _bwd_dkdv_inner(dk, dv, k, v, q_ptrs, do_ptrs, dq_ptrs, lse_ptr, delta_ptr,
                             stride_qm, stride_dom, HEAD_DIM, offs_m, offs_n, offs_d, n_queries,
                             lo, mid, qk_scale, scale, BLOCK_M, HEAD_DIM, BLOCK_D, IS_CAUSAL,
                             False, DQ_MODE)
    dk, dv = _bwd_dkdv_inner(dk, dv, k, v, q_ptrs, do_ptrs, dq_ptrs, lse_ptr, delta_ptr,
                             stride_qm, stride_dom, HEAD_DIM, offs_m, offs_n, offs_d, n_queries,
                             mid, n_queries, qk_scale, scale, BLOCK_M, HEAD_DIM, BLOCK_D,
                             IS_CAUSAL, True, DQ_MODE)
    _store_tile(dk_ptr + off_z * stride_dkz + off_h * stride_dkh + offs_n[:, None] * stride_dkn
                + offs_d[None, :] * stride_dkd, dk * scale, offs_n, n_keys, offs_d,
                HEAD_DIM)  # write BN*d
    _store_tile(dv_ptr + off_z * stride_dvz + off_h * stride_dvh + offs_n[:, None] * stride_dvn
                + offs_d[None, :] * stride_dvd, dv, offs_n, n_keys, offs_d, HEAD_DIM)


@triton.jit
def _bwd_dq_inner(dq, q, do, lse, delta, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n,
                  offs_d, n_keys, lo, hi, qk_scale, BLOCK_N: tl.constexpr,
                  HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, IS_CAUSAL: tl.constexpr,
                  MASKED: tl.constexpr):
    """dQ of one query tile from the key tiles lo, lo + BLOCK_N, ... < hi."""
    k_ptrs += lo * stride_kn
    v_ptrs += lo * stride_vn
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        k = _load_tile(k_ptrs, cols, n_keys, offs_d, HEAD_DIM, BLOCK_D, MASKED)  # read BN*d
        v = _load_tile(v_ptrs, cols, n_keys, offs_d, HEAD_DIM, BLOCK_D, MASKED)  # read BN*d
        s = tl.dot(q, tl.trans(k)) * qk_scale
        p = tl.exp2(s - lse[:, None])
        if MASKED:  # a padded key has k = 0, s = 0: not P = 0 by itself
            keep = cols[None, :] < n_keys
            if IS_CAUSAL:
                keep = keep & (offs_m[:, None] >= cols[None, :])
            p = tl.where(keep, p, 0.0)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
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
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
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
                       IS_CAUSAL, False)
    dq = _bwd_dq_inner(dq, q, do, lse, delta, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m,
                       offs_n, offs_d, n_keys, mid, hi, qk_scale, BLOCK_N, HEAD_DIM, BLOCK_D,
                       IS_CAUSAL, True)
    _store_tile(dq_ptr + off_z * stride_dqz + off_h * stride_dqh + offs_m[:, None] * stride_dqm
                + offs_d[None, :] * stride_dqd, dq * scale, offs_m, n_queries, offs_d,
                HEAD_DIM)  # write BM*d


# --------------------------------------------------------------------------------------------
# tiles: one small config on the simulator, autotuned configs per head dim on a GPU

def _autotune_bench(fn, quantiles=None):
    """Short timings for the autotuner: 80 configs x 3 kernels in the benchmark's table."""
    return triton.testing.do_bench(fn, warmup=5, rep=20, quantiles=quantiles)


@functools.lru_cache(maxsize=None)
def _tuned(kernel_name, block_d, device):
    """The autotuned launcher of one kernel for a head-dim class and a GPU."""
    kernel = {"fwd": attn_fwd_kernel, "dkdv": attn_bwd_dkdv_kernel, "dq": attn_bwd_dq_kernel}[
        kernel_name]
    configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
               for bm, bn, w, s in tuning_for("attention", device).configs(kernel_name, block_d)]
    return triton.autotune(configs=configs, key=["n_queries", "n_keys", "HEAD_DIM", "IS_CAUSAL"],
                           do_bench=_autotune_bench)(kernel)


def _run(kernel_name, kernel, grid_rows, n_zh, work, args, tiles, device, **constexprs):
    """Launch one tiled kernel on `device` (`tensor.get_device()`): `tiles` (BLOCK_M, BLOCK_N,
    warps, stages) if given, else the tuning's simulator config on a CPU, and on a GPU the
    first config that fits (_first_fitting) for `work` = batch*heads*Nq*Nk up to the tuning's
    tune_above, the autotuner above.
    grid = (cdiv(grid_rows, row block), n_zh) where the row block is BLOCK_M (fwd, dq) or
    BLOCK_N (dkdv)."""
    along = "BLOCK_N" if kernel_name == "dkdv" else "BLOCK_M"
    t = tuning_for("attention", device)
    if tiles is None and device >= 0:
        if work > t.tune_above:
            tuned = _tuned(kernel_name, constexprs["BLOCK_D"], device)
            tuned[lambda meta: (triton.cdiv(grid_rows, meta[along]), n_zh)](*args, **constexprs)
            return
        _first_fitting(kernel_name, kernel, grid_rows, n_zh, along, args, constexprs,
                       t.configs(kernel_name, constexprs["BLOCK_D"]))
        return
    _launch_tiles(kernel, grid_rows, n_zh, along, args, tiles or t.simulator(kernel_name),
                  constexprs)


def _launch_tiles(kernel, grid_rows, n_zh, along, args, tiles, constexprs):
    bm, bn, warps, stages = tiles
    block = bn if along == "BLOCK_N" else bm
    launch(kernel, (triton.cdiv(grid_rows, block), n_zh), *args, BLOCK_M=bm, BLOCK_N=bn,
           num_warps=warps, num_stages=stages, **constexprs)


# (kernel, BLOCK_D, dtype) -> index of the first tuning config whose shared memory fits
_FITS = {}


def _first_fitting(kernel_name, kernel, grid_rows, n_zh, along, args, constexprs, configs):
    """Untuned GPU launch: the first config of the head-dim class that fits the SM's shared
    memory (fp32 operands need twice the bytes of 16-bit ones: the first 16-bit config can
    be too large), as the autotuner skips configs that raise OutOfResources. Nothing runs
    before a config compiles and fits, so trying the next one is safe."""
    key = (kernel_name, constexprs["BLOCK_D"], args[0].dtype)
    for i in range(_FITS.get(key, 0), len(configs)):
        try:
            _launch_tiles(kernel, grid_rows, n_zh, along, args, configs[i], constexprs)
        except triton.runtime.errors.OutOfResources:
            continue
        _FITS[key] = i
        return
    raise RuntimeError(f"flash_attention: no {kernel_name} config of {configs} fits this GPU "
                       f"for head dim block {constexprs['BLOCK_D']} and {args[0].dtype}")


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


def _forward(q, k, v, causal, scale, tiles=None):
    """(O, L) for checked inputs: O like q (contiguous), L fp32 of shape q.shape[:-1]."""
    batch, heads, n_q, n_k, d = check_attention_inputs(q, k, v)
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
    if o.numel():
        args = (q, k, v, o, lse, *_strides4(q), *_strides4(k), *_strides4(v), *_strides4(o),
                heads, n_q, n_k, scale * LOG2E)
        _run("fwd", attn_fwd_kernel, n_q, batch * heads, batch * heads * n_q * n_k, args, tiles,
             q.get_device(), HEAD_DIM=d, BLOCK_D=_block_d(d), IS_CAUSAL=bool(causal))
    return o, lse


def _delta(o, do, heads, n_q, d):
    """D = rowsum(dO * O), fp32 (batch*heads, n_queries)."""
    zh = o.numel() // max(1, n_q * d)
    delta = torch.empty(zh, n_q, dtype=torch.float32, device=o.device)
    t = tuning_for("attention", o.get_device())
    block = t.preprocess_block if o.is_cuda else t.simulator_preprocess_block
    launch(attn_bwd_preprocess_kernel, (triton.cdiv(n_q, block), zh), o, do, delta,
           *_strides4(o), *_strides4(do), heads, n_q, HEAD_DIM=d, BLOCK_D=_block_d(d),
           BLOCK_M=block)
    return delta


def _backward(do, q, k, v, o, lse, causal, scale, dq_mode="kernel", tiles=None):
    """(dQ, dK, dV), contiguous, in q's dtype. dq_mode: "kernel" (the dQ kernel), "atomic" or
    "racy" (dQ added inside the dK/dV kernel; the teaching variants). `tiles`: {"dkdv": ...,
    "dq": ...} configs instead of the simulator's or the autotuner's."""
    check_attention_inputs(q, k, v, op="flash_attention backward")
    check_inputs("flash_attention backward", do, o, device=DEVICE, dtypes=(q.dtype,),
                 same_shape=False, contiguous=False)
    if do.shape != q.shape or o.shape != q.shape:
        raise ValueError(f"flash_attention backward: dO {tuple(do.shape)} and O "
                         f"{tuple(o.shape)} must have q's shape {tuple(q.shape)}")
    return _backward_checked(do, q, k, v, o, lse, causal, scale, dq_mode, tiles)


def _backward_checked(do, q, k, v, o, lse, causal, scale, dq_mode="kernel", tiles=None):
    """`_backward` for inputs known good: the autograd Function's saved tensors, checked by
    its forward, and a dO that autograd gave the output's shape, dtype and device."""
    batch, heads, n_q, n_k, d = _dims(q, k)
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
    if n_k == 0 or q.numel() == 0:
        return dq.zero_(), dk.zero_(), dv.zero_()
    tiles = tiles or {}
    zh, block_d = batch * heads, _block_d(d)
    delta = _delta(o, do, heads, n_q, d)
    consts = dict(HEAD_DIM=d, BLOCK_D=block_d, IS_CAUSAL=bool(causal))
    mode = {"kernel": 0, "atomic": 1, "racy": 2}[dq_mode]
    dq32 = (torch.zeros(zh, n_q, d, dtype=torch.float32, device=q.device) if mode else dq)
    args = (q, k, v, do, lse, delta, dk, dv, dq32, *_strides4(q), *_strides4(k), *_strides4(v),
            *_strides4(do), *_strides4(dk), *_strides4(dv), heads, n_q, n_k, scale * LOG2E,
            scale)
    if mode:  # teaching variants: one config, never autotuned (atomics would need resets)
        bm, bn, warps, stages = (tiles.get("dkdv") or
                                 tuning_for("attention", q.get_device()).simulator("dkdv"))
        launch(attn_bwd_dkdv_kernel, (triton.cdiv(n_k, bn), zh), *args, **consts, BLOCK_M=bm,
               BLOCK_N=bn, DQ_MODE=mode, num_warps=warps, num_stages=stages)
        return dq32.view(q.shape).to(q.dtype), dk, dv
    work = zh * n_q * n_k
    _run("dkdv", attn_bwd_dkdv_kernel, n_k, zh, work, args, tiles.get("dkdv"), q.get_device(),
         DQ_MODE=0, **consts)
    _run("dq", attn_bwd_dq_kernel, n_q, zh, work,
         (q, k, v, do, lse, delta, dq, *_strides4(q), *_strides4(k), *_strides4(v),
          *_strides4(do), *_strides4(dq), heads, n_q, n_k, scale * LOG2E, scale),
         tiles.get("dq"), q.get_device(), **consts)
    return dq, dk, dv


def default_scale(q):
    return 1.0 / math.sqrt(q.shape[-1])


def attention_forward(q, k, v, causal=False, scale=None, tiles=None):
    """(O, L): O = softmax(q k^T * scale [causal mask]) v and L = logsumexp of the scaled
    scores per query row (fp32, shape q.shape[:-1]). `tiles` (BLOCK_M, BLOCK_N, warps, stages)
    replaces the simulator's config or the autotuner (tests, probes)."""
    return _forward(q, k, v, causal, default_scale(q) if scale is None else scale, tiles)


def attention_backward(do, q, k, v, o, lse, causal=False, scale=None, tiles=None):
    """(dQ, dK, dV) from the forward's O and L (two kernels after the D preprocess)."""
    return _backward(do, q, k, v, o, lse, causal, default_scale(q) if scale is None else scale,
                     tiles=tiles)


def attention_backward_atomic(do, q, k, v, o, lse, causal=False, scale=None, tiles=None):
    """The teaching variant: dQ accumulated with tl.atomic_add inside the dK/dV kernel."""
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
def _fwd_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
            scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    return _forward(q, k, v, causal, scale)


@_fwd_op.register_fake
def _(q, k, v, causal, scale):
    return (q.new_empty(q.shape), q.new_empty(q.shape[:-1], dtype=torch.float32))


@torch.library.custom_op(_BWD_OP, mutates_args=())
def _bwd_op(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
            o: torch.Tensor, lse: torch.Tensor, causal: bool,
            scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _backward(do, q, k, v, o, lse, causal, scale)


@_bwd_op.register_fake
def _(do, q, k, v, o, lse, causal, scale):
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
    optional argument."""

    @staticmethod
    def forward(ctx, Q, K, V, is_causal=False, scale=None):
        scale = default_scale(Q) if scale is None else float(scale)
        O, L = (_fwd_op(Q, K, V, bool(is_causal), scale) if _compiling() else
                _forward(Q, K, V, is_causal, scale))
        ctx.save_for_backward(L, Q, K, V, O)
        ctx.is_causal, ctx.scale = bool(is_causal), scale
        return O

    @staticmethod
    def backward(ctx, dO):
        L, Q, K, V, O = ctx.saved_tensors
        # through the op when compiling, and under create_graph (grad mode on in a backward),
        # whose own gradient raises rather than being silently zero
        through_op = _compiling() or torch.is_grad_enabled()
        dQ, dK, dV = (_bwd_op(dO, Q, K, V, O, L, ctx.is_causal, ctx.scale) if through_op else
                      _backward_checked(dO, Q, K, V, O, L, ctx.is_causal, ctx.scale))
        return dQ, dK, dV, None, None


def flash_attention(q, k, v, causal=False, scale=None):
    """softmax(q k^T * scale) v, differentiable; q, k, v (batch, seq, d) or (batch, heads, seq,
    d). The Function's output itself (no view), so `out.grad_fn.saved_tensors` holds L."""
    return FlashAttentionTriton.apply(q, k, v, causal, scale)


class FlashAttention(torch.nn.Module):
    """Attention over given q, k, v (no projections): `FlashAttention(causal=True)(q, k, v)`."""

    def __init__(self, causal=False, scale=None):
        super().__init__()
        self.causal, self.scale = causal, scale

    def forward(self, q, k, v):
        return flash_attention(q, k, v, self.causal, self.scale)

    def extra_repr(self):
        return f"causal={self.causal}, scale={self.scale}"
