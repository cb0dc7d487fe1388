"""Softmax over the last dimension (lecture §6, exercise 8b, and the online form of §5).

Six kernels, one pattern each:
  * `softmax_kernel`: one program per row, the whole row in one block (read MN, write MN);
  * `softmax_rows_kernel`: ROWS rows per program (thread coarsening for short rows);
  * `softmax_online_kernel`: rows longer than a block, in an in-program loop with a running
    max and sum (online softmax), then a second pass to write (read 2MN, write MN);
  * `softmax_exchange_kernel` (variant="exchange"): long rows read once, cut into pieces of
    8192 columns, one program each, that keep their piece in registers and combine their
    maxima and sums through memory (kernels/_exchange.py) before writing (read MN, write MN);
    the default for fp32 rows longer than 32768 and 16-bit rows from 262144
    (docs/decisions.md#softmax-exchange);
  * variant="split" (`softmax_split_stats_kernel`, `softmax_split_write_kernel`): long rows
    cut into chunks, more than one program per row so that a few rows still fill the GPU: each
    chunk's online max and sum, then a second kernel that combines its row's and writes its
    chunk (read 2MN, write MN; the rows in reverse, so that the first it reads are in L2).
    Chosen only when asked for: it loses to the online kernel (docs/decisions.md#softmax-split);
  * `softmax_loop_kernel` (variant="loop"): whole rows as `softmax_kernel`'s, by a few
    persistent programs per SM stepping through rows in a loop that Triton software-pipelines
    (the next rows' loads in flight while this one is written); the default of whole rows
    only where the tuning says so (docs/decisions.md#row-loop-stages).
Masked lanes load -inf, whose exp is 0, so they change neither the max nor the sum. Math is
fp32 (fp64 for fp64 inputs); the output has the input's dtype. Which kernel a row length
takes, and its rows, block and warps, are the device's `SoftmaxTuning` (kernels/tuning.py).

The backward, dx = y * (dy - sum(dy * y)) per row, has the same two shapes: whole rows (ROWS
of them per program; read 2MN, write MN) and, for long rows, a loop for the sum and a second
for dx (read 4MN, write MN); rows the forward ran by exchange or split take the second.
`softmax` is a custom operator with autograd (kernels/ops.py).
"""
from __future__ import annotations

import math

import torch

from ..backend import DEVICE, tl, triton
from . import _exchange, _native, _prefetch, ops
from ._checks import (FLOAT64_DTYPES, check_inputs, compute_dtype, num_warps_for, sm_count,
                      stats_dtype)
from ._launch import Bound, PlanCache
from .tuning import (device_of, exchange_groups, fit_stages, l2_rows_ahead, stages_kw,
                     takes_row, tuning_for)


@triton.jit
def _row(x_ptr, y_ptr, row, n_cols, x_row_stride, y_row_stride, BLOCK_SIZE: tl.constexpr,
         ACC: tl.constexpr, STREAM: tl.constexpr):
    # one whole row, in one block; STREAM: the row stored with .cs (streaming: evict first
    # from L2), as Liger's softmax stores (SoftmaxTuning.row_stream)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=float("-inf")).to(ACC)  # read N
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    # one reciprocal per row, not a division per element (docs/decisions.md#softmax-sfu)
    y = num * (1.0 / tl.sum(num, axis=0))
    if STREAM:
        tl.store(y_ptr + row * y_row_stride + cols, y, mask=mask, cache_modifier=".cs")  # write N
    else:
        tl.store(y_ptr + row * y_row_stride + cols, y, mask=mask)  # write N


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK_SIZE: tl.constexpr,
                   ACC: tl.constexpr, STREAM: tl.constexpr = False):
    _row(x_ptr, y_ptr, tl.program_id(0).to(tl.int64), n_cols, x_row_stride, y_row_stride,
         BLOCK_SIZE, ACC, STREAM)


@triton.jit
def softmax_loop_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, n_rows,
                        BLOCK_SIZE: tl.constexpr, ACC: tl.constexpr,
                        STAGES: tl.constexpr = None):
    # Persistent (variant="loop"): a few programs per SM stepping through rows pid,
    # pid + programs, ..., the loop software-pipelined over STAGES rows (the next rows' loads
    # in flight in shared memory while this one is reduced and written;
    # docs/decisions.md#row-loop-stages)
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=STAGES):
        # tl.cast, not .to: Triton's interpreter runs the loop over Python ints
        _row(x_ptr, y_ptr, tl.cast(row, tl.int64), n_cols, x_row_stride, y_row_stride,
             BLOCK_SIZE, ACC, False)


@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride,
                        BLOCK_SIZE: tl.constexpr, ROWS: tl.constexpr, ACC: tl.constexpr,
                        STREAM: tl.constexpr = False):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask,
                other=float("-inf")).to(ACC)  # read ROWS * N
    x = x - tl.max(x, axis=1, keep_dims=True)
    num = tl.exp(x)
    y = num * (1.0 / tl.sum(num, axis=1, keep_dims=True))
    out = y_ptr + rows[:, None] * y_row_stride + cols[None, :]
    if STREAM:  # as _row's
        tl.store(out, y, mask=mask, cache_modifier=".cs")  # write ROWS * N
    else:
        tl.store(out, y, mask=mask)  # write ROWS * N


@triton.jit
def softmax_online_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride,
                          BLOCK_SIZE: tl.constexpr, ACC: tl.constexpr,
                          STAGES: tl.constexpr = None):
    # STAGES: both loops software-pipelined (docs/decisions.md#row-loop-stages)
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    m = tl.full([BLOCK_SIZE], float("-inf"), dtype=ACC)  # running max, per lane
    s = tl.zeros([BLOCK_SIZE], dtype=ACC)  # running sum of exp(x - m), per lane
    for start in tl.range(0, n_cols, BLOCK_SIZE, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK_SIZE)
        # read N, kept in L2 for the second pass (docs/decisions.md#softmax-online-hints)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"),
                    eviction_policy="evict_last").to(ACC)
        # a NaN sticks (torch's row is all NaN): max.f32 alone would drop it
        m_new = tl.maximum(m, x, propagate_nan=tl.PropagateNan.ALL)
        never = m_new == float("-inf")  # nothing finite seen yet: keep exp out of -inf - -inf
        # one exp per element: exp(-|x - m|) rescales the sum where x is the new max and is
        # x's own term where it is not (a NaN x makes d NaN, which sticks in s)
        d = tl.exp(tl.minimum(m, x) - m_new)
        s = tl.where(never, 0.0, tl.where(x > m, s * d + 1.0, s + d))
        m = m_new
    m_row = tl.max(m, axis=0)
    s_row = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - m_row)), axis=0)
    r_row = 1.0 / s_row
    for start in tl.range(0, n_cols, BLOCK_SIZE, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf"),
                    eviction_policy="evict_first").to(ACC)  # read N again: its last use
        tl.store(y_ptr + row * y_row_stride + cols, tl.exp(x - m_row) * r_row, mask=mask,
                 cache_modifier=".cs")  # write N, streamed past L2's kept rows


@triton.jit
def softmax_split_stats_kernel(x_ptr, m_ptr, s_ptr, n_cols, row_stride, chunk, chunks,
                               BLOCK_SIZE: tl.constexpr, ACC: tl.constexpr):
    # Long rows, more than one program per row (step 1 of 2): program row * chunks + c runs
    # the online max and sum over columns [c * chunk, (c + 1) * chunk) of its row and stores
    # them, one pair per chunk. A 1-D grid (CUDA's second dimension stops at 65535), programs
    # starting row after row.
    pid = tl.program_id(0)
    c, row = pid % chunks, (pid // chunks).to(tl.int64)
    x_row = x_ptr + row * row_stride
    m = tl.full([BLOCK_SIZE], float("-inf"), dtype=ACC)
    s = tl.zeros([BLOCK_SIZE], dtype=ACC)
    for start in range(c * chunk, tl.minimum(c * chunk + chunk, n_cols), BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(ACC)  # read N
        m_new = tl.maximum(m, x, propagate_nan=tl.PropagateNan.ALL)
        never = m_new == float("-inf")
        s = tl.where(never, 0.0, s * tl.exp(m - m_new) + tl.exp(x - m_new))
        m = m_new
    # a NaN lane may drop out of the max, but its exp(NaN) makes the sum NaN, which sticks
    m_chunk = tl.max(m, axis=0)
    s_chunk = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - m_chunk)), axis=0)
    tl.store(m_ptr + row * chunks + c, m_chunk)
    tl.store(s_ptr + row * chunks + c, s_chunk)


@triton.jit
def softmax_split_write_kernel(x_ptr, y_ptr, m_ptr, s_ptr, n_rows, n_cols, row_stride, chunk,
                               chunks, BLOCK_SIZE: tl.constexpr, CHUNKS: tl.constexpr,
                               ACC: tl.constexpr):
    # Step 2 of 2: each program combines its row's chunk statistics into the row's max and
    # sum, then writes its chunk. Rows run last to first, so that the first rows written are
    # the last that step 1 read, still in L2.
    pid = tl.program_id(0)
    c, row = pid % chunks, (n_rows - 1 - pid // chunks).to(tl.int64)
    j = tl.arange(0, CHUNKS)
    mj = tl.load(m_ptr + row * chunks + j, mask=j < chunks, other=float("-inf"))
    sj = tl.load(s_ptr + row * chunks + j, mask=j < chunks, other=0.0)
    m_row = tl.max(mj, axis=0)
    # a chunk of -inf only (m -inf, s 0) adds nothing; one whose only other values are NaN
    # (m -inf after max.f32 drops the NaN, s NaN) must still make the row NaN
    empty = (mj == float("-inf")) & (sj == 0.0)
    r_row = 1.0 / tl.sum(tl.where(empty, 0.0, sj * tl.exp(mj - m_row)), axis=0)
    x_row = x_ptr + row * row_stride
    for start in range(c * chunk, tl.minimum(c * chunk + chunk, n_cols), BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(ACC)  # read N again
        tl.store(y_ptr + row * row_stride + cols, tl.exp(x - m_row) * r_row, mask=mask)


@triton.jit
def _exchange_row(x_ptr, y_ptr, stats_ptr, sync_ptr, r, p, cols, mask, n_rows, n_cols,
                  row_stride, pieces, PIECES: tl.constexpr, ACC: tl.constexpr,
                  DIV: tl.constexpr, EVICT: tl.constexpr, STORE: tl.constexpr,
                  MEET: tl.constexpr, PTX: tl.constexpr, BLOCK_SIZE: tl.constexpr,
                  L2_NEXT: tl.constexpr = 0):
    # row r's piece p: read, its maximum and sum shared with the row's other pieces, written.
    # L2_NEXT (GPU only): the same piece of row r + L2_NEXT asked of L2 after this one's
    # loads, for the program that will read it, while this one meets
    # (docs/decisions.md#rmsnorm-backward-prefetch-depth)
    row = r.to(tl.int64)
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=float("-inf"),
                eviction_policy=EVICT).to(ACC)  # read N, once
    if L2_NEXT:
        _prefetch.l2_prefetch(x_ptr + (row + L2_NEXT) * row_stride + p * BLOCK_SIZE,
                              n_cols - p * BLOCK_SIZE, row + L2_NEXT < n_rows, BLOCK_SIZE)
    m = tl.max(x, axis=0)
    # -inf lanes add 0 even where m is -inf (a piece of padding); a NaN makes the sum NaN,
    # which sticks where max.f32 dropped it from m. (Keeping these exps for the output, one
    # exp per element, is 20 % slower: docs/decisions.md#softmax-sfu)
    s = tl.sum(tl.where(x == float("-inf"), 0.0, tl.exp(x - m)), axis=0)
    m_row, s_row = m, s
    if MEET > 0:
        slot = stats_ptr + (row * pieces + p) * 2
        # (PTX: each step of the meeting takes the one before's token, kernels/_exchange.py)
        shared = (_exchange.publish(slot, m, PTX=PTX) + _exchange.publish(slot + 1, s, PTX=PTX))
        seen = shared
        if MEET > 1:
            seen = _exchange.arrive_and_wait(sync_ptr + row, pieces, PTX, shared)
        # the others' statistics, from L2
        j = tl.arange(0, PIECES)
        mine = (row * pieces + j) * 2
        mj = _exchange.read_after(stats_ptr, mine, j < pieces, float("-inf"), PTX, seen)
        sj = _exchange.read_after(stats_ptr, mine + 1, j < pieces, 0.0, PTX, seen)
        m_row = tl.max(mj, axis=0)
        empty = (mj == float("-inf")) & (sj == 0.0)  # as in softmax_split_write_kernel
        s_row = tl.sum(tl.where(empty, 0.0, sj * tl.exp(mj - m_row)), axis=0)
    # one reciprocal per row, as the other kernels (docs/decisions.md#softmax-sfu); DIV: a
    # division per element, as before 2026-12-07 (for benchmarks/probes/softmax_exchange.py)
    y = tl.exp(x - m_row) / s_row if DIV else tl.exp(x - m_row) * (1.0 / s_row)
    tl.store(y_ptr + row * row_stride + cols, y, mask=mask, cache_modifier=STORE)  # write N
    if MEET > 1:
        _exchange.leave(sync_ptr + row, sync_ptr + n_rows + row, pieces, PTX, seen)


@triton.jit
def softmax_exchange_kernel(x_ptr, y_ptr, stats_ptr, sync_ptr, n_rows, n_cols, row_stride,
                            pieces, groups, BLOCK_SIZE: tl.constexpr, PIECES: tl.constexpr,
                            ACC: tl.constexpr, DIV: tl.constexpr = False,
                            EVICT: tl.constexpr = "evict_first", STORE: tl.constexpr = ".cs",
                            MEET: tl.constexpr = 2, STAGES: tl.constexpr = None,
                            PTX: tl.constexpr = False, L2_NEXT: tl.constexpr = 0):
    # Long rows read once (variant="exchange"): `pieces` programs per row, each keeping its
    # BLOCK_SIZE columns in registers, meet in memory (kernels/_exchange.py) to combine their
    # maxima and sums, then write their piece (read MN, write MN). A 1-D grid of `groups`
    # groups of `pieces` programs, a group's consecutive: a row each (STAGES None, groups ==
    # rows), or group g takes rows g, g + groups, ... in a loop software-pipelined by Triton
    # over STAGES rows, the next rows' pieces in flight in shared memory while this row's meet
    # (PTX: the meeting in inline PTX, which that needs; GPU only;
    # docs/decisions.md#exchange-pipelined). The loop is not the one-row form's: it costs
    # registers (80 against 53-64 at 8 warps, sm_90). EVICT, STORE: the read's and the
    # write's cache hints; MEET below 2 (probes only, a wrong result:
    # benchmarks/probes/flush_state.py): 1 the statistics stored and read back without the
    # wait, 0 no exchange at all, each piece its own softmax
    pid = tl.program_id(0)
    p, group = pid % pieces, pid // pieces
    cols = p * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    if STAGES is None:  # L2_NEXT: a later row's piece asked of L2 (GPU only)
        _exchange_row(x_ptr, y_ptr, stats_ptr, sync_ptr, group, p, cols, mask, n_rows, n_cols,
                      row_stride, pieces, PIECES, ACC, DIV, EVICT, STORE, MEET, PTX,
                      BLOCK_SIZE, L2_NEXT)
    else:
        for r in tl.range(group, n_rows, groups, num_stages=STAGES):
            _exchange_row(x_ptr, y_ptr, stats_ptr, sync_ptr, r, p, cols, mask, n_rows, n_cols,
                          row_stride, pieces, PIECES, ACC, DIV, EVICT, STORE, MEET, PTX,
                          BLOCK_SIZE)


@triton.jit
def softmax_bwd_kernel(dy_ptr, y_ptr, dx_ptr, n_rows, n_cols, row_stride,
                       BLOCK_SIZE: tl.constexpr, ROWS: tl.constexpr, ACC: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * row_stride + cols[None, :]
    y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(ACC)  # read ROWS * N
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(ACC)  # read ROWS * N
    dot = tl.sum(y * dy, axis=1, keep_dims=True)
    tl.store(dx_ptr + offs, y * (dy - dot), mask=mask)  # write ROWS * N


@triton.jit
def softmax_bwd_online_kernel(dy_ptr, y_ptr, dx_ptr, n_cols, row_stride,
                              BLOCK_SIZE: tl.constexpr, ACC: tl.constexpr,
                              STAGES: tl.constexpr = None):
    row = tl.program_id(0).to(tl.int64)
    dots = tl.zeros([BLOCK_SIZE], dtype=ACC)
    for start in tl.range(0, n_cols, BLOCK_SIZE, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        y = tl.load(y_ptr + row * row_stride + cols, mask=mask, other=0.0,
                    eviction_policy="evict_last").to(ACC)  # read N, kept in L2
        dy = tl.load(dy_ptr + row * row_stride + cols, mask=mask, other=0.0,
                     eviction_policy="evict_last").to(ACC)  # read N, kept in L2
        dots += y * dy
    dot = tl.sum(dots, axis=0)
    for start in tl.range(0, n_cols, BLOCK_SIZE, num_stages=STAGES):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        y = tl.load(y_ptr + row * row_stride + cols, mask=mask, other=0.0,
                    eviction_policy="evict_first").to(ACC)  # again, the last use
        dy = tl.load(dy_ptr + row * row_stride + cols, mask=mask, other=0.0,
                     eviction_policy="evict_first").to(ACC)
        tl.store(dx_ptr + row * row_stride + cols, y * (dy - dot), mask=mask,
                 cache_modifier=".cs")  # write N


VARIANTS = ("row", "rows", "online", "split", "exchange", "loop")


def _plan(n_cols, x, variant, block_size, rows_per_program, backward=False):
    """(variant, block, rows per program) for rows of n_cols elements (of the backward's
    kernels where `backward`)."""
    block = triton.next_power_of_2(n_cols)
    t = tuning_for("softmax", x.get_device())
    if backward and variant in ("split", "exchange"):  # long rows: the online backward
        variant = "online"
    if backward and variant == "loop":  # whole rows: the whole-row backward
        variant = "row"
    if variant is None:
        widest = t.max_bwd_row_block if backward else t.max_row_block
        variant = (("exchange" if _exchanges(n_cols, x, t, backward) else "online")
                   if block > widest else "rows" if block < t.rows_below
                   else "loop" if t.loop and not backward else "row")
    if variant == "rows":
        rows = rows_per_program or max(1, min(t.max_rows, t.rows_elements // block))
        return variant, block, rows
    if variant == "online":
        step = (t.online_bwd_block if backward else t.online_block_fp32
                if x.dtype == torch.float32 else t.online_block)
        return variant, block_size or min(block, step), 1
    if variant == "split":
        return variant, block_size or min(block, t.split_block), 1
    if variant == "exchange":
        return variant, block_size or min(block, t.exchange_block), 1
    return variant, block, 1


def _exchanges(n_cols, x, t, backward):
    """Whether a forward over rows too long for one program reads them once, by the exchange:
    the tuning's rows (fp32, and 16-bit rows from 262144 columns on Hopper), in no more pieces
    than may wait for each other (docs/decisions.md#softmax-exchange)."""
    return (not backward and takes_row(t.exchange_rows, x.element_size(), n_cols)
            and triton.cdiv(n_cols, t.exchange_block) <= _exchange.max_pieces(x))


def _chunks(n_rows, n_cols, block, x, t):
    """(chunks per row, chunk length, a multiple of block) of the split variant: about
    split_programs_per_sm programs per SM in all (a handful on the simulator), no empty
    chunk."""
    target = (t.split_programs_per_sm * sm_count(x.get_device()) if x.is_cuda else 4)
    chunks = max(1, min(triton.cdiv(n_cols, block), triton.cdiv(target, n_rows)))
    chunk = triton.cdiv(triton.cdiv(n_cols, chunks), block) * block
    return triton.cdiv(n_cols, chunk), chunk


def _check(name, dim, variant, *tensors):
    """Validate; returns the shape of a softmax row block: inputs moved to (..., N)."""
    check_inputs(name, *tensors, device=DEVICE, dtypes=FLOAT64_DTYPES, contiguous=False)
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"softmax: unknown variant {variant!r} ({', '.join(VARIANTS)})")
    return tensors[0].movedim(dim, -1).shape  # IndexError for a bad dim, as in torch


def _as_rows(t, dim):
    """t with `dim` last, contiguous, as (rows, N)."""
    t = t.movedim(dim, -1).contiguous()
    n_cols = t.shape[-1] if t.dim() else 1
    return t.reshape(math.prod(t.shape[:-1]), n_cols)


def _from_rows(t2, shape, dim):
    """A (rows, N) result back to the input's shape, contiguous like torch's."""
    t = t2.view(shape)
    return t if dim in (-1, t.dim() - 1) or t.dim() == 0 else t.movedim(-1, dim).contiguous()


class _Launch:
    """One signature of a softmax call or its backward (the tensors' shapes, dtypes and
    devices, dim and the options): checked, its kernel chosen and bound, once
    (`_launch.PlanCache`)."""

    def __init__(self, name, dim, variant, block_size, rows_per_program, *tensors):
        x = tensors[0]
        self.shape = _check(name, dim, variant, *tensors)  # x's shape with `dim` moved last
        n_cols = self.shape[-1] if len(self.shape) else 1
        n_rows = math.prod(self.shape[:-1])
        self.dim, self.rows2d = dim, (n_rows, n_cols)
        # x itself is the (rows, N) block where it is 2-D with dim last
        self.direct = x.dim() == 2 and dim in (-1, 1)
        self.kernel, self.tail, self.stats, self.exchange = None, (), None, None
        if not n_rows * n_cols:
            return
        backward = name == "softmax backward"
        variant, block, rows = _plan(n_cols, x, variant, block_size, rows_per_program, backward)
        acc = compute_dtype(x, tl)
        t = tuning_for("softmax", x.get_device())
        # the online loops' stages, as many as fit in shared memory: only where set (a
        # constexpr None is the loop as written); the backward's steps load y and dy
        item = x.element_size()
        online = stages_kw(t.online_stages, block * item * (2 if backward else 1))
        stream = {"STREAM": True} if t.row_stream else {}  # the row kernels' stores
        if backward:
            if variant == "online":
                self.kernel = Bound(softmax_bwd_online_kernel, (n_rows,), BLOCK_SIZE=block,
                                    ACC=acc, num_warps=t.online_bwd_warps, **online)
                self.tail = (n_cols, n_cols)
            else:
                self.kernel = Bound(softmax_bwd_kernel, (triton.cdiv(n_rows, rows),),
                                    BLOCK_SIZE=block, ROWS=rows, ACC=acc,
                                    num_warps=num_warps_for(block * rows))
                self.tail = (n_rows, n_cols, n_cols)
        elif variant in ("row", "loop"):
            warps = t.wide_row_warps if block >= t.wide_row_block else num_warps_for(block)
            if variant == "row":
                self.kernel = Bound(softmax_kernel, (n_rows,), BLOCK_SIZE=block, ACC=acc,
                                    num_warps=warps, **stream)
                self.tail = (n_cols, n_cols, n_cols)
            else:
                self.kernel = Bound(softmax_loop_kernel,
                                    (t.loop_programs(n_rows, device_of(x.get_device())),),
                                    BLOCK_SIZE=block, ACC=acc, num_warps=warps,
                                    STAGES=fit_stages(t.loop_stages, block * item))
                self.tail = (n_cols, n_cols, n_cols, n_rows)
        elif variant == "split":
            chunks, chunk = _chunks(n_rows, n_cols, block, x, t)
            grid = (chunks * n_rows,)
            self.stats = Bound(softmax_split_stats_kernel, grid, BLOCK_SIZE=block, ACC=acc,
                               num_warps=t.split_warps)
            self.kernel = Bound(softmax_split_write_kernel, grid, BLOCK_SIZE=block,
                                CHUNKS=triton.next_power_of_2(chunks), ACC=acc,
                                num_warps=t.split_warps)
            self.partial = ((n_rows, chunks), stats_dtype(x))
            self.tail = (n_rows, n_cols, n_cols, chunk, chunks)
        elif variant == "exchange":
            pieces = triton.cdiv(n_cols, block)
            limit = _exchange.max_pieces(x)
            if pieces > limit:
                raise ValueError(
                    f"softmax: variant='exchange' cuts a row of {n_cols} columns into {pieces} "
                    f"programs of {block}, more than the {limit} that are sure to be resident "
                    f"at once (they wait for each other); pass a larger block_size or another "
                    f"variant")
            # a row per group, or groups walking rows in a pipelined loop (exchange_stages;
            # about exchange_per_sm programs per SM, the meeting in PTX on a GPU)
            piped = {}
            groups = n_rows
            device = device_of(x.get_device())
            if t.exchange_stages:
                groups = exchange_groups(t.exchange_per_sm, t.simulator_loop_programs, pieces,
                                         n_rows, device)
                piped = {"STAGES": t.exchange_stages, "PTX": x.is_cuda}
            elif rows_ahead := l2_rows_ahead(t.exchange_l2_next, pieces, device):  # a GPU's hint
                piped = {"L2_NEXT": rows_ahead}
            self.kernel = Bound(softmax_exchange_kernel, (groups * pieces,), BLOCK_SIZE=block,
                                PIECES=triton.next_power_of_2(pieces), ACC=acc,
                                num_warps=t.exchange_warps, **piped)
            self.exchange = ((n_rows, pieces, 2), stats_dtype(x))
            self.tail = (n_rows, n_cols, n_cols, pieces, groups)
        elif variant == "rows":
            self.kernel = Bound(softmax_rows_kernel, (triton.cdiv(n_rows, rows),),
                                BLOCK_SIZE=block, ROWS=rows, ACC=acc,
                                num_warps=num_warps_for(block * rows), **stream)
            self.tail = (n_rows, n_cols, n_cols, n_cols)
        else:
            self.kernel = Bound(softmax_online_kernel, (n_rows,), BLOCK_SIZE=block, ACC=acc,
                                num_warps=t.online_warps, **online)
            self.tail = (n_cols, n_cols, n_cols)

    def forward(self, x2, y2):
        """y2 = softmax of the (rows, N) block x2."""
        if self.stats is not None:  # split: each chunk's max and sum, then the rows written
            shape, dtype = self.partial
            m = torch.empty(shape, dtype=dtype, device=x2.device)
            s = torch.empty(shape, dtype=dtype, device=x2.device)
            n_rows, n_cols, stride, chunk, chunks = self.tail
            self.stats(x2, m, s, n_cols, stride, chunk, chunks)
            self.kernel(x2, y2, m, s, *self.tail)
        elif self.exchange is not None:  # long rows read once: statistics meet in memory
            shape, dtype = self.exchange
            _exchange.launch(self.kernel, "softmax", shape, dtype, x2.device, (x2, y2),
                             self.tail)
        elif self.kernel is not None:
            self.kernel(x2, y2, *self.tail)

    def rows(self, t):
        """t as the contiguous (rows, N) block the kernels read."""
        return t.contiguous() if self.direct else _as_rows(t, self.dim)

    def result(self, t2):
        """A (rows, N) result in the input's shape and layout."""
        return t2 if self.direct else _from_rows(t2, self.shape, self.dim)


_LAUNCHES = PlanCache()


def _signature(name, dim, variant, block_size, rows_per_program, *tensors):
    return (name, dim, variant, block_size, rows_per_program,
            *[(t.shape, t.dtype, t.device) for t in tensors])


def _launch_for(name, dim, variant, block_size, rows_per_program, *tensors):
    return _LAUNCHES.of(_signature, _Launch, name, dim, variant, block_size, rows_per_program,
                        *tensors)


def _softmax_impl(x, dim, variant, block_size, rows_per_program):
    plan = _launch_for("softmax", dim, variant, block_size, rows_per_program, x)
    x2 = plan.rows(x)
    y2 = torch.empty_like(x2)
    plan.forward(x2, y2)
    return plan.result(y2)


def _softmax_bwd_impl(dy, y, dim, variant, block_size, rows_per_program):
    plan = _launch_for("softmax backward", dim, variant, block_size, rows_per_program, dy, y)
    dy2, y2 = plan.rows(dy), plan.rows(y)
    dx2 = torch.empty_like(y2)
    if plan.kernel is not None:
        plan.kernel(dy2, y2, dx2, *plan.tail)
    return plan.result(dx2)


def _softmax_fake(x, dim, variant, block_size, rows_per_program):
    _check("softmax", dim, variant, x)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _softmax_bwd_fake(dy, y, dim, variant, block_size, rows_per_program):
    _check("softmax backward", dim, variant, dy, y)
    return torch.empty_like(y, memory_format=torch.contiguous_format)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(output)
    ctx.options = inputs[1:]


def _backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return softmax_backward_op(dy, y, *ctx.options), None, None, None, None


def _no_setup(ctx, inputs, output):
    pass


_SCHEMA = "int dim, str? variant, int? block_size, int? rows_per_program) -> Tensor"
softmax_backward_op = ops.define(__name__, "softmax_backward", "(Tensor dy, Tensor y, " + _SCHEMA,
                                 _softmax_bwd_impl, _softmax_bwd_fake,
                                 ops.no_double_backward("tritonlab softmax"), _no_setup)
softmax_op = ops.define(__name__, "softmax", "(Tensor x, " + _SCHEMA, _softmax_impl,
                        _softmax_fake, _backward, _setup)


def _describe(options, x):
    """The native plan (kernels/_native.py) of softmax over the last dimension of x, with the
    one-kernel variants (row, rows, online); the backward launches the backward kernel on the
    saved output."""
    dim = options[0]
    if x.dim() == 0 or dim not in (-1, x.dim() - 1):
        return "a 0-d x, or softmax over another dimension than the last"
    fwd, bwd = _launch_for("softmax", *options, x), _launch_for("softmax backward", *options, x, x)
    if fwd.kernel is None or fwd.stats is not None or fwd.exchange is not None:
        return "an empty x, or the split or exchange variant (scratch buffers)"
    S = _native.Slot
    x_, y, dy, dx = S(0), S(1), S(2), S(3)
    return _native.plan(
        (x,), [(x.shape, x.dtype)], [(fwd.kernel, (x_, y, *fwd.tail))], y, saved=[y],
        bwd_allocs=[(x.shape, x.dtype)],
        backward=[(bwd.kernel, (dy, y, dx, *bwd.tail))] if bwd.kernel.runner else None,
        grads=[dx])


_native_softmax = _native.NativeOp(
    "TritonlabSoftmaxBackward", _describe,
    lambda options: lambda dy, y: (softmax_backward_op(dy, y, *options),),
    enabled=DEVICE == "cuda")


def softmax(x, dim=-1, variant=None, block_size=None, rows_per_program=None):
    """softmax(x, dim) for fp32/fp16/bf16/fp64 tensors of any shape, in x's dtype;
    differentiable (first order).

    `variant` ("row", "rows", "online", "split", "exchange", "loop") and `block_size` force a
    kernel (for teaching and tests; the backward takes the same variant, the online one for
    "split" and "exchange", the whole-row one for "loop"); by default rows up to 32768
    elements use one program per row (several rows per program below 1024), longer fp32 rows
    and 16-bit rows from 262144 elements the exchange (pieces of 8192 columns that meet in
    memory), other long rows the online kernel."""
    y = _native_softmax((dim, variant, block_size, rows_per_program), x)
    if y is not None:
        return y
    ops.require_tensors("softmax", x)
    return softmax_op(x, dim, variant, block_size, rows_per_program)
