"""Fused RMSNorm, forward and backward, wired into autograd (lecture §9, exercises 5, 6, 8c).

Forward, one program per row: r = 1 / sqrt(mean(x^2) + eps), y = x * r * g; r is saved (one
number per row) for the backward. Backward, per row:
    dx = r * (dy * g) - r^3 * x / N * sum(dy * g * x)
    dg = sum over rows of dy * x * r
dg sums over every row, so programs must not all add into one dg (exercise 6's data race).
Each program handles `rows_per_program` rows (exercise 8c's ROWS_PER_PROGRAM, passed at run time
so that new shapes do not compile new kernels), accumulates their dg in registers and writes one
row of a partial buffer, (programs, N), summed afterwards by `rmsnorm_dg_sum_kernel` (which
stores dg in g's dtype): the buffer has as many rows as programs, not as input rows
(exercise 8c). `rmsnorm_bwd_racy_kernel` keeps the race, for
teaching: the simulator's race sanitizer names it. Statistics are fp32 (fp64 for fp64 inputs).

Rows of any length: rows wider than what the forward keeps in registers run a chunked forward,
which loops over the row in chunks twice (the second pass reads the row back from L2). Rows
too wide for the backward's registers run a two-step backward: a chunked kernel computes each
row's coefficient r^3 / N * sum(dy * g * x), then a 2-D grid of (rows, columns) tiles writes dx
and keeps dg for its columns in registers, one partial row per row block. The limits, blocks,
warps and programs are the device's `RMSNormTuning` (kernels/tuning.py), which may also turn
on loops software-pipelined by Triton, a persistent whole-row forward and, for wide rows,
exchange kernels that read each row once, its pieces meeting in memory as softmax's
exchange does: the forward's sums of squares, the backward's sum(dy * g * x) row by row
(docs/decisions.md#row-loop-stages).

`rmsnorm` is a custom operator with autograd (kernels/ops.py); its backward kernels have no
derivative themselves, so a second-order gradient raises NotImplementedError. Calls check
their inputs and choose their kernels once per input signature (`_Plan`, cached); the public
function's eager autograd path is a lean Function of its own (`_EagerRMSNorm`), because an
RMSNorm training step is launch-bound (docs/ops.md#host-cost).
"""
from __future__ import annotations

import math

import torch

from ..backend import DEVICE, NAME, tl, triton
from . import _exchange, _native, _prefetch, ops
from ._checks import (FLOAT_DTYPES, check_inputs, compute_dtype, num_warps_for, pdl_kw,
                      stats_dtype)
from ._launch import Bound, PlanCache, current_device, raw_stream, scratch
from .tuning import device_of, exchange_groups, fit_stages, l2_rows_ahead, stages_kw, tuning_for

# the dg reduction's tile: BLOCK_P partial rows by BLOCK_N columns per step, a program per
# BLOCK_N columns (4096 columns: 128 programs)
DG_BLOCK_P, DG_BLOCK_N = 64, 32


@triton.jit
def _dependent_launch(PDL: tl.constexpr):
    # PDL (programmatic dependent launch, kernels/_checks.py's pdl_kw): wait until the grids
    # this launch follows have finished and their stores are visible, before any access to
    # memory, then let the launch after this one place its programs while this one runs
    if PDL:
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()


@triton.jit
def _fwd_row(x_ptr, g, y_ptr, rstd_ptr, row, cols, mask, n_cols, eps, ACC: tl.constexpr):
    # one row of the forward: its statistic and y, g already loaded
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(ACC)  # read N
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)  # write 1
    tl.store(y_ptr + row * n_cols + cols, x * rstd * g, mask=mask)  # write N


@triton.jit
def rmsnorm_fwd_kernel(x_ptr, g_ptr, y_ptr, rstd_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr,
                       ACC: tl.constexpr, PDL: tl.constexpr = False):
    _dependent_launch(PDL)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    g = tl.load(g_ptr + cols, mask=mask, other=0.0).to(ACC)  # read N (shared, cached)
    _fwd_row(x_ptr, g, y_ptr, rstd_ptr, tl.program_id(0).to(tl.int64), cols, mask, n_cols, eps,
             ACC)


@triton.jit
def rmsnorm_fwd_loop_kernel(x_ptr, g_ptr, y_ptr, rstd_ptr, n_cols, eps, n_rows,
                            BLOCK_SIZE: tl.constexpr, ACC: tl.constexpr,
                            STAGES: tl.constexpr = None, PDL: tl.constexpr = False):
    # Persistent: a few programs per SM, each loading g once and stepping through rows
    # pid, pid + programs, ... with the loop software-pipelined over STAGES rows: Triton's
    # pipeliner issues the next rows' loads (cp.async into shared memory) while this row is
    # reduced and written, which it does for loads that feed no dot only in a loop given
    # num_stages itself (docs/decisions.md#row-loop-stages)
    _dependent_launch(PDL)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    g = tl.load(g_ptr + cols, mask=mask, other=0.0).to(ACC)
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=STAGES):
        # tl.cast, not .to: Triton's interpreter runs the loop over Python ints
        _fwd_row(x_ptr, g, y_ptr, rstd_ptr, tl.cast(row, tl.int64), cols, mask, n_cols, eps,
                 ACC)


@triton.jit
def _row_ahead(x_ptr, dy_ptr, row, i, k, cols, col_mask, n_rows, n_cols, rows_per_program):
    # x and dy of row + k, the program's i + k-th row (none past its last or the input's)
    ahead = col_mask & (row + k < n_rows) & (i + k < rows_per_program)
    return (tl.load(x_ptr + (row + k) * n_cols + cols, mask=ahead, other=0.0),
            tl.load(dy_ptr + (row + k) * n_cols + cols, mask=ahead, other=0.0))


@triton.jit
def _l2_prefetch_rows(x_ptr, dy_ptr, row0, col0, n_cols, end, ROWS: tl.constexpr,
                      BLOCK_SIZE: tl.constexpr):
    # x's and dy's lines of rows row0 .. row0 + ROWS - 1 (those before `end`), columns col0 ..
    # col0 + BLOCK_SIZE (those before n_cols), asked of L2 (kernels/_prefetch.py, GPU only)
    for r in tl.static_range(ROWS):
        row = row0 + r
        _prefetch.l2_prefetch(x_ptr + row * n_cols + col0, n_cols - col0, row < end, BLOCK_SIZE)
        _prefetch.l2_prefetch(dy_ptr + row * n_cols + col0, n_cols - col0, row < end, BLOCK_SIZE)


@triton.jit
def _bwd_rows(x_ptr, g_ptr, rstd_ptr, dy_ptr, dx_ptr, pid, n_rows, n_cols, rows_per_program,
              BLOCK_SIZE: tl.constexpr, ACC: tl.constexpr, PREFETCH: tl.constexpr,
              STAGES: tl.constexpr, L2_AHEAD: tl.constexpr = 0):
    # program pid's rows_per_program whole rows: dx written, this program's share of dg
    # returned (in registers). PREFETCH: the next row's x and dy are loaded before this row is
    # reduced and written, two rows in flight per program
    # (docs/decisions.md#rmsnorm-backward-prefetch); PREFETCH=2: the next two rows', three
    # in flight (docs/decisions.md#rmsnorm-backward-prefetch-depth); STAGES: the row loop
    # software-pipelined by Triton instead, STAGES - 1 rows' loads ahead in shared memory
    # (docs/decisions.md#row-loop-stages). L2_AHEAD (GPU only): each step also asks L2 for
    # the x and dy of the row L2_AHEAD rows on (prefetch.global.L2: no registers held), so
    # that the loads above find them there (docs/decisions.md#rmsnorm-backward-prefetch-depth)
    cols = tl.arange(0, BLOCK_SIZE)
    col_mask = cols < n_cols
    g = tl.load(g_ptr + cols, mask=col_mask, other=0.0).to(ACC)
    dg = tl.zeros([BLOCK_SIZE], dtype=ACC)  # this program's share of dg, in registers
    first = pid.to(tl.int64) * rows_per_program
    if PREFETCH:
        mask = col_mask & (first < n_rows)
        x_next = tl.load(x_ptr + first * n_cols + cols, mask=mask, other=0.0)
        dy_next = tl.load(dy_ptr + first * n_cols + cols, mask=mask, other=0.0)
        if PREFETCH == 2:
            x_after, dy_after = _row_ahead(x_ptr, dy_ptr, first, 0, 1, cols, col_mask, n_rows,
                                           n_cols, rows_per_program)
    for i in tl.range(0, rows_per_program, num_stages=STAGES):
        row = first + i
        mask = col_mask & (row < n_rows)
        if L2_AHEAD:  # the program's rows only: those before first + rows_per_program
            _l2_prefetch_rows(x_ptr, dy_ptr, row + L2_AHEAD, 0, n_cols,
                              tl.minimum(n_rows, first + rows_per_program), 1, BLOCK_SIZE)
        if PREFETCH == 2:
            x = x_next.to(ACC)  # read N, two rows ahead
            dy = dy_next.to(ACC)
            x_next, dy_next = x_after, dy_after
            x_after, dy_after = _row_ahead(x_ptr, dy_ptr, row, i, 2, cols, col_mask, n_rows,
                                           n_cols, rows_per_program)
        elif PREFETCH:
            x = x_next.to(ACC)  # read N, one row ahead
            dy = dy_next.to(ACC)
            x_next, dy_next = _row_ahead(x_ptr, dy_ptr, row, i, 1, cols, col_mask, n_rows,
                                         n_cols, rows_per_program)
        else:
            x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(ACC)  # read N
            dy = tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0).to(ACC)  # read N
        rstd = tl.load(rstd_ptr + row, mask=row < n_rows, other=0.0).to(ACC)  # read 1
        dx = _bwd_dx(x, dy, g, rstd, n_cols)
        tl.store(dx_ptr + row * n_cols + cols, dx, mask=mask)  # write N
        dg += dy * x * rstd
    return dg


@triton.jit
def _bwd_dx(x, dy, g, rstd, n_cols):
    # one row's dx from x, dy and g in the accumulation dtype (zero past the row's end) and
    # the row's rstd; its term of dg is dy * x * rstd
    dyg = dy * g
    dot = tl.sum(dyg * x)
    return rstd * dyg - rstd * rstd * rstd * x * (dot / n_cols)


@triton.jit
def rmsnorm_bwd_kernel(x_ptr, g_ptr, rstd_ptr, dy_ptr, dx_ptr, dg_partial_ptr, n_rows, n_cols,
                       rows_per_program, BLOCK_SIZE: tl.constexpr, ACC: tl.constexpr,
                       PREFETCH: tl.constexpr = False, STAGES: tl.constexpr = None,
                       PDL: tl.constexpr = False, L2_AHEAD: tl.constexpr = 0):
    # the whole-row backward: each program's rows, then its share of dg into its row of the
    # partial buffer (rmsnorm_dg_sum_kernel sums them)
    _dependent_launch(PDL)
    pid = tl.program_id(0)
    dg = _bwd_rows(x_ptr, g_ptr, rstd_ptr, dy_ptr, dx_ptr, pid, n_rows, n_cols,
                   rows_per_program, BLOCK_SIZE, ACC, PREFETCH, STAGES, L2_AHEAD)
    cols = tl.arange(0, BLOCK_SIZE)
    tl.store(dg_partial_ptr + pid.to(tl.int64) * n_cols + cols, dg, mask=cols < n_cols)


@triton.jit
def rmsnorm_bwd_tma_kernel(x_ptr, g_ptr, rstd_ptr, dy_ptr, dx_ptr, dg_partial_ptr, n_rows,
                           n_cols, rows_per_program, BLOCK_SIZE: tl.constexpr,
                           ACC: tl.constexpr, STAGES: tl.constexpr, TMA_STORE: tl.constexpr):
    # the whole-row backward (rmsnorm_bwd_kernel's rows and partial row of dg) with x and dy
    # brought into shared memory by TMA: device-side descriptors of (n_rows, n_cols) in blocks
    # of a row (zero past its end), the row loop software-pipelined over STAGES, so STAGES - 1
    # rows are on their way without a register held for them; TMA_STORE: dx leaves the same
    # way (a TMA store from shared memory), else by plain stores. Needs 16-byte aligned bases
    # and rows (n_cols * element size) and Triton's global scratch for the descriptors
    # (docs/decisions.md#rmsnorm-backward-tma)
    pid = tl.program_id(0)
    x_desc = tl.make_tensor_descriptor(x_ptr, [n_rows, n_cols], [n_cols, 1], [1, BLOCK_SIZE])
    dy_desc = tl.make_tensor_descriptor(dy_ptr, [n_rows, n_cols], [n_cols, 1], [1, BLOCK_SIZE])
    dx_desc = tl.make_tensor_descriptor(dx_ptr, [n_rows, n_cols], [n_cols, 1], [1, BLOCK_SIZE])
    cols = tl.arange(0, BLOCK_SIZE)[None, :]
    col_mask = cols < n_cols
    g = tl.load(g_ptr + cols, mask=col_mask, other=0.0).to(ACC)
    dg = tl.zeros([1, BLOCK_SIZE], dtype=ACC)  # this program's share of dg, in registers
    first = pid * rows_per_program
    for row in tl.range(first, tl.minimum(first + rows_per_program, n_rows), num_stages=STAGES):
        x = x_desc.load([row, 0]).to(ACC)  # read N
        dy = dy_desc.load([row, 0]).to(ACC)  # read N
        rstd = tl.load(rstd_ptr + row).to(ACC)  # read 1
        dx = _bwd_dx(x, dy, g, rstd, n_cols)
        if TMA_STORE:  # write N
            dx_desc.store([row, 0], dx.to(dx_ptr.dtype.element_ty))
        else:
            tl.store(dx_ptr + row.to(tl.int64) * n_cols + cols, dx, mask=col_mask)
        dg += dy * x * rstd
    tl.store(dg_partial_ptr + pid.to(tl.int64) * n_cols + cols, dg, mask=col_mask)


@triton.jit
def _dg_sum_cols(partial_ptr, dg_ptr, n_partial, n_cols, cols, BLOCK_P: tl.constexpr,
                 BLOCK_N: tl.constexpr, ACC: tl.constexpr, FRESH: tl.constexpr):
    # dg[cols] = the partial buffer's rows summed over these BLOCK_N columns, in g's dtype,
    # BLOCK_P rows a step (one order of additions, whichever kernel runs it); FRESH: rows
    # other programs of this launch wrote, read from L2 (.cg), not from a stale L1 line
    col_mask = cols < n_cols
    acc = tl.zeros([BLOCK_P, BLOCK_N], dtype=ACC)
    for start in range(0, n_partial, BLOCK_P):
        rows = start + tl.arange(0, BLOCK_P)
        mask = (rows < n_partial)[:, None] & col_mask[None, :]
        ptrs = partial_ptr + rows[:, None].to(tl.int64) * n_cols + cols[None, :]
        if FRESH:
            acc += tl.load(ptrs, mask=mask, other=0.0, cache_modifier=".cg")
        else:
            acc += tl.load(ptrs, mask=mask, other=0.0)
    tl.store(dg_ptr + cols, tl.sum(acc, axis=0).to(dg_ptr.dtype.element_ty), mask=col_mask)


@triton.jit
def rmsnorm_dg_sum_kernel(partial_ptr, dg_ptr, n_partial, n_cols, BLOCK_P: tl.constexpr,
                          BLOCK_N: tl.constexpr, ACC: tl.constexpr, PDL: tl.constexpr = False):
    # dg = the partial buffer's rows summed, stored in g's dtype: one launch where
    # partial.sum(0).to(g.dtype) took two (a reduction and, for 16-bit g, a cast)
    _dependent_launch(PDL)
    _dg_sum_cols(partial_ptr, dg_ptr, n_partial, n_cols,
                 tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N), BLOCK_P, BLOCK_N, ACC,
                 False)


@triton.jit
def rmsnorm_bwd_fused_kernel(x_ptr, g_ptr, rstd_ptr, dy_ptr, dx_ptr, dg_partial_ptr, dg_ptr,
                             sync_ptr, n_rows, n_cols, rows_per_program, reducers,
                             BLOCK_SIZE: tl.constexpr, ACC: tl.constexpr,
                             BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
                             PREFETCH: tl.constexpr = False, STAGES: tl.constexpr = None,
                             PDL: tl.constexpr = False, L2_AHEAD: tl.constexpr = 0):
    # the whole-row backward with dg's sum in the same launch (RMSNormTuning.bwd_fuse_dg):
    # each program stores its partial row of dg and counts itself in at sync_ptr[0]; the
    # last `reducers` to arrive wait until all have, then sum dg's column blocks r, r +
    # reducers, ... with rmsnorm_dg_sum_kernel's helper (the same bits where both run with
    # the same warps: tl.sum's order follows the tile's layout), and the last of them to
    # leave zeroes both counters for the next launch. The others never wait. Only programs
    # already running wait, never more than `reducers` of them, so the programs still to
    # arrive find room on the GPU as long as it holds more than `reducers` at once (the plan
    # keeps reducers to half the SMs; the GPU holds one or more programs per SM). The
    # ticket's release (after the CTA's barrier) and wait_for's acquire order the partial
    # rows before their sum, as in _exchange.arrive_and_wait
    _dependent_launch(PDL)
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    dg = _bwd_rows(x_ptr, g_ptr, rstd_ptr, dy_ptr, dx_ptr, pid, n_rows, n_cols,
                   rows_per_program, BLOCK_SIZE, ACC, PREFETCH, STAGES, L2_AHEAD)
    cols = tl.arange(0, BLOCK_SIZE)
    tl.store(dg_partial_ptr + pid.to(tl.int64) * n_cols + cols, dg, mask=cols < n_cols)
    tl.debug_barrier()  # every thread's partial stored before the program counts itself in
    ticket = tl.atomic_add(sync_ptr, 1, sem="acq_rel")
    first = programs - reducers
    if ticket >= first:
        _exchange.wait_for(sync_ptr, programs)
        tl.debug_barrier()  # no thread reads the partial rows before the wait is over
        for block in range(ticket - first, tl.cdiv(n_cols, BLOCK_N), reducers):
            _dg_sum_cols(dg_partial_ptr, dg_ptr, programs, n_cols,
                         block * BLOCK_N + tl.arange(0, BLOCK_N), BLOCK_P, BLOCK_N, ACC, True)
        _exchange.leave(sync_ptr, sync_ptr + 1, reducers)


@triton.jit
def rmsnorm_fwd_wide_kernel(x_ptr, g_ptr, y_ptr, rstd_ptr, n_cols, eps, CHUNK: tl.constexpr,
                            ACC: tl.constexpr, STAGES: tl.constexpr = None,
                            PDL: tl.constexpr = False):
    # Rows too long for one block of registers: an in-program loop over chunks (lecture §7),
    # twice: the sum of squares, then y. The second pass finds the row in L2: the first
    # asks L2 to keep it, the second lets it go, y streams past (docs/decisions.md#softmax-
    # online-hints, where the same hints were measured). STAGES: both loops software-pipelined
    # (docs/decisions.md#row-loop-stages).
    _dependent_launch(PDL)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, CHUNK)
    squares = tl.zeros([CHUNK], dtype=ACC)
    for start in tl.range(0, n_cols, CHUNK, num_stages=STAGES):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=mask, other=0.0,
                    eviction_policy="evict_last").to(ACC)
        squares += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    for start in tl.range(0, n_cols, CHUNK, num_stages=STAGES):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=mask, other=0.0,
                    eviction_policy="evict_first").to(ACC)
        g = tl.load(g_ptr + start + cols, mask=mask, other=0.0).to(ACC)
        tl.store(y_ptr + row * n_cols + start + cols, x * rstd * g, mask=mask,
                 cache_modifier=".cs")


@triton.jit
def _fwd_exchange_share(x_ptr, stats_ptr, r, p, cols, mask, n_rows, n_cols, pieces,
                        ACC: tl.constexpr, PTX: tl.constexpr, BLOCK_SIZE: tl.constexpr,
                        L2_NEXT: tl.constexpr = 0):
    # row r's piece p of the exchange forward: read, its sum of squares stored for the others;
    # returns x and the store's token (kernels/_exchange.py). L2_NEXT (GPU only): the same
    # piece of row r + L2_NEXT asked of L2, for the program that will read it
    row = r.to(tl.int64)
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0,
                eviction_policy="evict_first").to(ACC)  # read N, once
    if L2_NEXT:
        _prefetch.l2_prefetch(x_ptr + (row + L2_NEXT) * n_cols + p * BLOCK_SIZE,
                              n_cols - p * BLOCK_SIZE, row + L2_NEXT < n_rows, BLOCK_SIZE)
    return x, _exchange.publish(stats_ptr + row * pieces + p, tl.sum(x * x, axis=0), PTX=PTX)


@triton.jit
def _fwd_exchange_finish(x, g, y_ptr, rstd_ptr, stats_ptr, sync_ptr, r, p, cols, mask, n_rows,
                         n_cols, eps, pieces, shared, PIECES: tl.constexpr, PTX: tl.constexpr):
    # the meeting, then row r's rstd (its first piece) and piece p of y
    row = r.to(tl.int64)
    seen = _exchange.arrive_and_wait(sync_ptr + row, pieces, PTX, shared)
    j = tl.arange(0, PIECES)
    # the others' sums, from L2 (not an L1 line older than their stores)
    squares = _exchange.read_after(stats_ptr, row * pieces + j, j < pieces, 0.0, PTX, seen)
    rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd, mask=p == 0)
    tl.store(y_ptr + row * n_cols + cols, x * rstd * g, mask=mask, cache_modifier=".cs")
    _exchange.leave(sync_ptr + row, sync_ptr + n_rows + row, pieces, PTX, seen)


@triton.jit
def rmsnorm_fwd_exchange_kernel(x_ptr, g_ptr, y_ptr, rstd_ptr, n_cols, eps, stats_ptr, sync_ptr,
                                n_rows, pieces, groups, BLOCK_SIZE: tl.constexpr,
                                PIECES: tl.constexpr, ACC: tl.constexpr,
                                STAGES: tl.constexpr = None, PTX: tl.constexpr = False,
                                PDL: tl.constexpr = False, L2_NEXT: tl.constexpr = 0):
    # Wide rows read once: `pieces` programs per row (consecutive in a 1-D grid), each keeping
    # its BLOCK_SIZE columns in registers, store their sums of squares and meet in memory
    # (kernels/_exchange.py, as softmax_exchange_kernel), then each writes its piece of y;
    # the row's first program writes its statistic. A 1-D grid of `groups` groups of `pieces`
    # programs: a row each (STAGES None, groups == rows), or group g takes rows g, g + groups,
    # ... in a loop Triton software-pipelines over STAGES rows, the next rows' pieces in
    # flight in shared memory while this row's meet (PTX: the meeting in inline PTX, which
    # that needs; GPU only; docs/decisions.md#exchange-pipelined)
    _dependent_launch(PDL)
    pid = tl.program_id(0)
    p, group = pid % pieces, pid // pieces
    cols = p * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    if STAGES is None:
        x, shared = _fwd_exchange_share(x_ptr, stats_ptr, group, p, cols, mask, n_rows,
                                        n_cols, pieces, ACC, PTX, BLOCK_SIZE, L2_NEXT)
        g = tl.load(g_ptr + cols, mask=mask, other=0.0).to(ACC)  # in flight while waiting
        _fwd_exchange_finish(x, g, y_ptr, rstd_ptr, stats_ptr, sync_ptr, group, p, cols, mask,
                             n_rows, n_cols, eps, pieces, shared, PIECES, PTX)
    else:
        g = tl.load(g_ptr + cols, mask=mask, other=0.0).to(ACC)
        for r in tl.range(group, n_rows, groups, num_stages=STAGES):
            x, shared = _fwd_exchange_share(x_ptr, stats_ptr, r, p, cols, mask, n_rows,
                                            n_cols, pieces, ACC, PTX, BLOCK_SIZE)
            _fwd_exchange_finish(x, g, y_ptr, rstd_ptr, stats_ptr, sync_ptr, r, p, cols, mask,
                                 n_rows, n_cols, eps, pieces, shared, PIECES, PTX)


@triton.jit
def rmsnorm_bwd_dot_kernel(x_ptr, g_ptr, dy_ptr, rstd_ptr, coef_ptr, n_cols, CHUNK: tl.constexpr,
                           ACC: tl.constexpr, STAGES: tl.constexpr = None,
                           PDL: tl.constexpr = False):
    # Wide rows, backward step 1, a program per row: coef = r^3 / N * sum(dy * g * x), the
    # coefficient of x in dx, with an in-program loop over chunks (lecture §7).
    _dependent_launch(PDL)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, CHUNK)
    dots = tl.zeros([CHUNK], dtype=ACC)
    for start in tl.range(0, n_cols, CHUNK, num_stages=STAGES):
        mask = start + cols < n_cols
        offs = row * n_cols + start + cols
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(ACC)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(ACC)
        g = tl.load(g_ptr + start + cols, mask=mask, other=0.0).to(ACC)
        dots += dy * g * x
    rstd = tl.load(rstd_ptr + row).to(ACC)
    tl.store(coef_ptr + row, rstd * rstd * rstd * tl.sum(dots, axis=0) / n_cols)


@triton.jit
def rmsnorm_bwd_tiled_kernel(x_ptr, g_ptr, rstd_ptr, coef_ptr, dy_ptr, dx_ptr, dg_partial_ptr,
                             n_rows, n_cols, rows_per_program, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, ACC: tl.constexpr,
                             STAGES: tl.constexpr = None, PDL: tl.constexpr = False):
    # Wide rows, backward step 2: program (i, j) owns columns j*BLOCK_N... and rows
    # i*rows_per_program... (a multiple of BLOCK_M), walks its rows in (BLOCK_M, BLOCK_N)
    # tiles writing dx = r * dy * g - coef * x, keeps dg for its columns in registers and
    # writes it once, into row i of the partial buffer (exercise 8c, in two dimensions).
    _dependent_launch(PDL)
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    g = tl.load(g_ptr + cols, mask=col_mask, other=0.0).to(ACC)
    dg = tl.zeros([BLOCK_N], dtype=ACC)
    for start in tl.range(0, rows_per_program, BLOCK_M, num_stages=STAGES):
        rows = pid_m.to(tl.int64) * rows_per_program + start + tl.arange(0, BLOCK_M)
        row_mask = rows < n_rows
        mask = row_mask[:, None] & col_mask[None, :]
        offs = rows[:, None] * n_cols + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(ACC)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(ACC)
        rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0.0).to(ACC)[:, None]
        coef = tl.load(coef_ptr + rows, mask=row_mask, other=0.0).to(ACC)[:, None]
        tl.store(dx_ptr + offs, rstd * dy * g[None, :] - coef * x, mask=mask)
        dg += tl.sum(dy * x * rstd, axis=0)
    tl.store(dg_partial_ptr + pid_m.to(tl.int64) * n_cols + cols, dg, mask=col_mask)


@triton.jit
def _exchange_step_load(x_ptr, dy_ptr, rstd_ptr, row0, cols, col_mask, n_rows, n_cols,
                        ROWS: tl.constexpr, ACC: tl.constexpr):
    # one step of the exchange backward: the step's ROWS rows of x and dy (this piece's
    # columns) and their statistics
    rows = row0 + tl.arange(0, ROWS)
    row_mask = rows < n_rows
    offs = rows[:, None] * n_cols + cols[None, :]
    mask = row_mask[:, None] & col_mask[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0,
                eviction_policy="evict_first").to(ACC)  # read N, once
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0,
                 eviction_policy="evict_first").to(ACC)  # read N, once
    rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0.0).to(ACC)
    return x, dy, rstd


@triton.jit
def _exchange_step_share(x, dy, g, stats_ptr, row0, p, pieces, n_rows, ROWS: tl.constexpr,
                         PTX: tl.constexpr = False):
    # this piece's share of sum(dy * g * x) for each of the step's rows, stored for the
    # others; returns the stores' token (kernels/_exchange.py)
    rows = row0 + tl.arange(0, ROWS)
    return _exchange.publish(stats_ptr + rows * pieces + p, tl.sum(dy * g[None, :] * x, axis=1),
                             rows < n_rows, PTX)


@triton.jit
def _exchange_step_finish(x, dy, g, rstd, dx_ptr, stats_ptr, row0, cols, col_mask, pieces,
                          n_rows, n_cols, ROWS: tl.constexpr, PIECES: tl.constexpr,
                          PTX: tl.constexpr = False, seen=0):
    # after the meeting: every piece's share read back, this piece of dx written; returns the
    # step's contribution to dg
    rows = row0 + tl.arange(0, ROWS)
    row_mask = rows < n_rows
    j = tl.arange(0, PIECES)
    # the others' shares, from L2
    parts = _exchange.read_after(stats_ptr, rows[:, None] * pieces + j[None, :],
                                 row_mask[:, None] & (j < pieces)[None, :], 0.0, PTX, seen)
    coef = rstd * rstd * rstd * tl.sum(parts, axis=1) / n_cols
    tl.store(dx_ptr + rows[:, None] * n_cols + cols[None, :],
             rstd[:, None] * dy * g[None, :] - coef[:, None] * x,
             mask=row_mask[:, None] & col_mask[None, :], cache_modifier=".cs")  # write N
    return tl.sum(dy * x * rstd[:, None], axis=0)


@triton.jit
def rmsnorm_bwd_exchange_kernel(x_ptr, g_ptr, rstd_ptr, dy_ptr, dx_ptr, dg_partial_ptr,
                                stats_ptr, sync_ptr, n_rows, n_cols, rows_per_group, pieces,
                                BLOCK_SIZE: tl.constexpr, PIECES: tl.constexpr,
                                ROWS: tl.constexpr, ACC: tl.constexpr,
                                SPLIT: tl.constexpr = False, STAGES: tl.constexpr = None,
                                PTX: tl.constexpr = False, PDL: tl.constexpr = False,
                                L2_AHEAD: tl.constexpr = 0):
    # Wide rows, x and dy read once: `pieces` programs per group of rows (consecutive in a
    # 1-D grid), each owning BLOCK_SIZE columns of the group's rows, which it walks ROWS at a
    # time (rows_per_group a multiple of ROWS). Step by step, each stores its piece's share of
    # sum(dy * g * x) for the step's rows, meets the group's other pieces in memory
    # (kernels/_exchange.py), and writes its piece of dx; dg for its columns stays in
    # registers and goes once into row `group` of the partial buffer (exercise 8c).
    # The meeting: at the counter of the step's first row (arrive, wait, leave), or, SPLIT,
    # split in two around the next step's loads, which are then in flight while the piece
    # waits: one counter per group that only grows (step k's meeting is over at (k + 1) *
    # pieces arrivals), left once at the end. Or (not SPLIT) the loop software-pipelined by
    # Triton over STAGES steps, the next steps' loads in flight in shared memory through the
    # meeting, which is then in inline PTX (PTX, GPU only: _exchange.arrive_and_wait).
    # L2_AHEAD (GPU only): each step first asks L2 for this piece of the rows L2_AHEAD steps
    # on (prefetch.global.L2, no registers held), which DRAM then serves while the pieces
    # meet (docs/decisions.md#rmsnorm-backward-prefetch-depth)
    _dependent_launch(PDL)
    pid = tl.program_id(0)
    p, group = pid % pieces, pid // pieces
    cols = p * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    col_mask = cols < n_cols
    g = tl.load(g_ptr + cols, mask=col_mask, other=0.0).to(ACC)
    dg = tl.zeros([BLOCK_SIZE], dtype=ACC)
    first = group.to(tl.int64) * rows_per_group
    end = tl.minimum(n_rows, first + rows_per_group)  # past the group's rows
    if SPLIT:
        count = sync_ptr + group
        x, dy, rstd = _exchange_step_load(x_ptr, dy_ptr, rstd_ptr, first, cols, col_mask,
                                          n_rows, n_cols, ROWS, ACC)
        for start in range(0, rows_per_group, ROWS):
            row0 = first + start
            if L2_AHEAD:
                _l2_prefetch_rows(x_ptr, dy_ptr, row0 + L2_AHEAD * ROWS, p * BLOCK_SIZE,
                                  n_cols, end, ROWS, BLOCK_SIZE)
            _exchange_step_share(x, dy, g, stats_ptr, row0, p, pieces, n_rows, ROWS)
            _exchange.arrive(count)
            # the next step's rows (past the group's last: masked, nothing read)
            x_next, dy_next, rstd_next = _exchange_step_load(
                x_ptr, dy_ptr, rstd_ptr, tl.where(start + ROWS < rows_per_group, row0 + ROWS,
                                                  n_rows), cols, col_mask, n_rows, n_cols,
                ROWS, ACC)
            _exchange.wait_for(count, (start // ROWS + 1) * pieces)
            dg += _exchange_step_finish(x, dy, g, rstd, dx_ptr, stats_ptr, row0, cols,
                                        col_mask, pieces, n_rows, n_cols, ROWS, PIECES)
            x, dy, rstd = x_next, dy_next, rstd_next
        _exchange.leave(count, sync_ptr + n_rows + group, pieces)
    else:
        for start in tl.range(0, rows_per_group, ROWS, num_stages=STAGES):
            row0 = first + start
            valid = row0 < n_rows  # the same for every piece of the group: they meet together
            if L2_AHEAD:
                _l2_prefetch_rows(x_ptr, dy_ptr, row0 + L2_AHEAD * ROWS, p * BLOCK_SIZE,
                                  n_cols, end, ROWS, BLOCK_SIZE)
            x, dy, rstd = _exchange_step_load(x_ptr, dy_ptr, rstd_ptr, row0, cols, col_mask,
                                              n_rows, n_cols, ROWS, ACC)
            shared = _exchange_step_share(x, dy, g, stats_ptr, row0, p, pieces, n_rows, ROWS,
                                          PTX)
            # (PTX: each step of the meeting takes the one before's token; a step past the
            # last row has no meeting and no rows)
            seen = pieces + shared
            if valid:
                seen = _exchange.arrive_and_wait(sync_ptr + row0, pieces, PTX, shared)
            dg += _exchange_step_finish(x, dy, g, rstd, dx_ptr, stats_ptr, row0, cols,
                                        col_mask, pieces, n_rows, n_cols, ROWS, PIECES, PTX,
                                        seen)
            if valid:
                _exchange.leave(sync_ptr + row0, sync_ptr + n_rows + row0, pieces, PTX, seen)
    tl.store(dg_partial_ptr + group.to(tl.int64) * n_cols + cols, dg, mask=col_mask)


@triton.jit
def rmsnorm_bwd_racy_kernel(x_ptr, g_ptr, rstd_ptr, dy_ptr, dx_ptr, dg_ptr, n_cols,
                            BLOCK_SIZE: tl.constexpr):
    # Exercise 6, kept wrong on purpose: every program does load-add-store on one dg.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.load(rstd_ptr + row)
    dot = tl.sum(dy * g * x, axis=0)
    tl.store(dx_ptr + row * n_cols + cols, rstd * dy * g - rstd * rstd * rstd * x * dot / n_cols,
             mask=mask)
    old = tl.load(dg_ptr + cols, mask=mask, other=0.0)
    tl.store(dg_ptr + cols, old + dy * x * rstd, mask=mask)  # lost updates on a GPU


def _check(x, g, contiguous=False):
    """x and g checked: on the backend's device, float dtypes, g of shape (N,)."""
    x, g = check_inputs("rmsnorm", x, g, device=DEVICE, dtypes=FLOAT_DTYPES + (torch.float64,),
                        same_shape=False, contiguous=contiguous)
    if g.dim() != 1 or x.dim() == 0 or g.shape[0] != x.shape[-1]:
        raise ValueError(f"rmsnorm: weight of shape {tuple(g.shape)} does not match the last "
                         f"dimension of x {tuple(x.shape)}")
    return x, g


def _flatten(x, g):
    """x as contiguous (rows, N) and g, checked."""
    x, g = _check(x, g, contiguous=True)
    return _rows(x), g


def _rows(t):
    """A contiguous t as (rows, N)."""
    return t if t.dim() == 2 else t.view(math.prod(t.shape[:-1]), t.shape[-1])


class _Plan:
    """What a call on inputs of one signature (x's shape, dtype and device, g's the same) needs,
    worked out once: the checks passed, which kernels run with which grids, blocks and warps,
    the partial-dg buffer's shape. `_plan` keeps one per signature, so a call that finds its
    plan makes no checks and no tuning lookups, only its allocations and one `Bound` launch
    per kernel (the host cost of a small step: docs/ops.md#host-cost). `rows_per_program`,
    `chunk` and `tile` force the backward's rows per program or the wide-row kernels with
    those blocks, `tuning` an RMSNormTuning in place of the device's (tests, probes)."""

    def __init__(self, x, g, rows_per_program=None, chunk=None, tile=None, tuning=None):
        x, g = _check(x, g)
        self.shape, self.flat = x.shape, x.dim() != 2
        n_rows, n_cols = self.rows2d = (math.prod(x.shape[:-1]), x.shape[-1])
        self.rstd_dtype = stats_dtype(x)
        self.fwd = self.dot = self.bwd = self.dg_sum = None
        self.bwd_fused = None  # the whole-row backward with dg's sum: (Bound, reducers)
        # the forward's arguments after eps: the persistent one's rows; the exchange's rows,
        # pieces and groups (after its statistics and counters)
        self.fwd_tail = ()
        self.exchange = None  # the exchange forward's (rows, pieces)
        self.bwd_exchange = None  # the exchange backward's (rows, pieces)
        # the native module's plan (`native_plan`): None until made, False where it cannot
        # be, and why not
        self.native, self.native_why = None, ""
        if not (n_rows and n_cols):
            return
        acc, t = compute_dtype(x, tl), tuning or tuning_for("rmsnorm", x.get_device())
        pdl = pdl_kw(t.pdl, x, NAME)  # every launch, where on (docs/decisions.md#rmsnorm-pdl)
        device, item = device_of(x.get_device()), x.element_size()
        pieces = triton.cdiv(n_cols, t.exchange_block)
        if (not chunk and n_cols > t.fwd_register_max and t.fwd_exchanges(item, n_cols)
                and 2 <= pieces <= _exchange.max_pieces(x)):
            # a row per group, or groups walking rows in a pipelined loop (fwd_exchange_stages;
            # about fwd_exchange_per_sm programs per SM, the meeting in PTX on a GPU)
            groups, piped = n_rows, {}
            if t.fwd_exchange_stages:
                groups = exchange_groups(t.fwd_exchange_per_sm, t.simulator_programs, pieces,
                                         n_rows, device)
                piped = {"STAGES": t.fwd_exchange_stages, "PTX": x.is_cuda}
            elif rows_ahead := l2_rows_ahead(t.fwd_exchange_l2_next, pieces, device):  # GPU hint
                piped = {"L2_NEXT": rows_ahead}
            self.fwd = Bound(rmsnorm_fwd_exchange_kernel, (groups * pieces,),
                             BLOCK_SIZE=t.exchange_block, PIECES=triton.next_power_of_2(pieces),
                             ACC=acc, num_warps=t.exchange_warps, **piped, **pdl)
            self.exchange = (n_rows, pieces)
            self.fwd_tail = (n_rows, pieces, groups)
        elif chunk or n_cols > t.fwd_register_max:
            fwd_chunk = chunk or t.wide_fwd_chunk
            self.fwd = Bound(rmsnorm_fwd_wide_kernel, (n_rows,), CHUNK=fwd_chunk, ACC=acc,
                             num_warps=t.wide_warps,
                             **stages_kw(t.wide_stages, fwd_chunk * item), **pdl)
        elif t.fwd_loop:
            block = triton.next_power_of_2(n_cols)
            self.fwd = Bound(rmsnorm_fwd_loop_kernel, (t.fwd_loop_programs(n_rows, device),),
                             BLOCK_SIZE=block, ACC=acc, num_warps=num_warps_for(block),
                             STAGES=fit_stages(t.fwd_loop_stages, block * item), **pdl)
            self.fwd_tail = (n_rows,)
        else:
            block = triton.next_power_of_2(n_cols)
            self.fwd = Bound(rmsnorm_fwd_kernel, (n_rows,), BLOCK_SIZE=block, ACC=acc,
                             num_warps=num_warps_for(block), **pdl)
        exchange_tile = (None if chunk or tile or n_cols <= t.bwd_register_max
                         else t.bwd_exchange_tile(item, n_cols))
        bwd_block, step, split, bwd_stages = exchange_tile or (n_cols, 1, False, None)
        bwd_pieces = triton.cdiv(n_cols, bwd_block)
        if exchange_tile and 2 <= bwd_pieces <= _exchange.max_pieces(x):
            # groups of rows, each with a program per piece: bwd_exchange_per_sm programs
            # per SM in all (a handful of groups on the simulator)
            groups = exchange_groups(t.bwd_exchange_per_sm, t.simulator_programs, bwd_pieces,
                                     n_rows, device)
            rows = triton.cdiv(rows_per_program or triton.cdiv(n_rows, groups),
                               step) * step
            grid = (triton.cdiv(n_rows, rows) * bwd_pieces,)
            # split meetings, or the step loop pipelined with the meeting in PTX (on a GPU);
            # later steps' pieces asked of L2 (a GPU's hint)
            pipelined = {"STAGES": bwd_stages, "PTX": x.is_cuda} if bwd_stages else {}
            if t.bwd_exchange_l2_ahead and x.is_cuda:
                pipelined["L2_AHEAD"] = t.bwd_exchange_l2_ahead
            self.bwd = Bound(rmsnorm_bwd_exchange_kernel, grid, BLOCK_SIZE=bwd_block,
                             PIECES=triton.next_power_of_2(bwd_pieces), ROWS=step, ACC=acc,
                             num_warps=t.bwd_exchange_warps, **({"SPLIT": True} if split else {}),
                             **pipelined, **pdl)
            self.bwd_exchange = (n_rows, bwd_pieces)
            grid = (triton.cdiv(n_rows, rows),)  # the partial buffer: a row per group
        elif chunk or tile or n_cols > t.bwd_register_max:
            block_m, block_n = tile or (t.tile_m, t.tile_n)
            dot_chunk = chunk or t.wide_chunk
            self.dot = Bound(rmsnorm_bwd_dot_kernel, (n_rows,), CHUNK=dot_chunk, ACC=acc,
                             num_warps=t.wide_warps,
                             **stages_kw(t.wide_stages, 2 * dot_chunk * item), **pdl)
            rows = (triton.cdiv(rows_per_program, block_m) * block_m if rows_per_program else
                    t.tiled_rows(n_rows, n_cols, block_m, block_n, item, device))
            grid = (triton.cdiv(n_rows, rows), triton.cdiv(n_cols, block_n))
            self.bwd = Bound(rmsnorm_bwd_tiled_kernel, grid, BLOCK_M=block_m, BLOCK_N=block_n,
                             ACC=acc, num_warps=t.tile_warps,
                             **stages_kw(t.wide_stages, 2 * block_m * block_n * item), **pdl)
        else:
            rows = rows_per_program or triton.cdiv(n_rows, t.bwd_programs(n_rows, n_cols, device))
            grid = (triton.cdiv(n_rows, rows),)
            block = triton.next_power_of_2(n_cols)
            stages = (stages_kw(t.bwd_stages, 2 * block * item)  # x and dy
                      if block * item <= t.bwd_stages_bytes else {})
            prefetch = not stages and block * item <= t.bwd_prefetch_bytes
            if t.bwd_prefetch_rows not in (1, 2):
                raise ValueError(f"RMSNormTuning.bwd_prefetch_rows must be 1 or 2, not "
                                 f"{t.bwd_prefetch_rows}")
            # the next row (True, as before), or the next two; rows asked of L2 ahead (GPU)
            ahead = (True if t.bwd_prefetch_rows == 1 else 2) if prefetch else False
            l2 = ({"L2_AHEAD": t.bwd_l2_ahead}
                  if t.bwd_l2_ahead and x.is_cuda and block * item >= 128 else {})
            kw = dict(BLOCK_SIZE=block, ACC=acc, PREFETCH=ahead,
                      num_warps=t.bwd_warps(block, item, prefetch), **stages, **l2)
            self.bwd = Bound(rmsnorm_bwd_kernel, grid, **kw, **pdl)
            if t.bwd_fuse_dg < 0:
                raise ValueError(f"RMSNormTuning.bwd_fuse_dg must be 0 (off) or the number of "
                                 f"programs that sum dg, not {t.bwd_fuse_dg}")
            # at most half the SMs wait (deadlock-free with room to spare, other streams'
            # fused launches included), and no more than the programs
            reducers = min(t.bwd_fuse_dg, grid[0],
                           max(1, device.sms // 2) if device.on_gpu else grid[0])
            if reducers:
                self.bwd_fused = (Bound(rmsnorm_bwd_fused_kernel, grid, BLOCK_P=DG_BLOCK_P,
                                        BLOCK_N=DG_BLOCK_N, **kw, **pdl), reducers)
        self.rows_per_program, self.partial_shape = rows, (grid[0], n_cols)
        self.dg_sum = Bound(rmsnorm_dg_sum_kernel, (triton.cdiv(n_cols, DG_BLOCK_N),),
                            BLOCK_P=DG_BLOCK_P, BLOCK_N=DG_BLOCK_N, ACC=acc, num_warps=4, **pdl)

    def native_plan(self):
        """The native module's RMSNormPlan of these launches (kernels/_native.py), for the
        eager autograd path: None while some launch has not yet run through Triton (the
        first training step), False where the module cannot make them."""
        if self.bwd is None:
            self.native_why = "no kernels (an empty input)"
            return False
        # the backward with dg's sum fused runs whether or not dg is wanted (a frozen weight's
        # dg summed into a buffer of its own and dropped): no backward and dg sum of its own
        fused_bound, reducers = self.bwd_fused or (None, 0)
        needed = ((self.fwd, fused_bound) if fused_bound is not None else
                  (self.fwd, self.dot, self.bwd, self.dg_sum))
        if any(b is not None and b.runner is None for b in needed):
            return None
        mod = _native.module()
        if mod is None:
            self.native_why = f"no native module: {_native.why()}"
            return False
        s = {name: _native.Slot(i) for name, i in mod.slots()}
        (n_rows, n_cols), parts = self.rows2d, self.partial_shape[0]
        exchange = (s["stats"], s["counters"])  # the module's buffers for exchange kernels
        fwd_tail = self.fwd_tail if self.exchange is None else (*exchange, *self.fwd_tail)
        fwd = _native.launch(self.fwd, (s["x"], s["g"], s["y"], s["rstd"], n_cols,
                                        _native.SCALAR, *fwd_tail))
        fused, dg_sum = [], None
        if fused_bound is not None:  # its counters in "counters"
            bwd = []
            fused = [_native.launch(fused_bound, (s["x"], s["g"], s["rstd"], s["dy"], s["dx"],
                                                  s["partial"], s["dg"], s["counters"], n_rows,
                                                  n_cols, self.rows_per_program, reducers))]
        elif self.bwd_exchange is not None:
            bwd = [_native.launch(self.bwd, (s["x"], s["g"], s["rstd"], s["dy"], s["dx"],
                                             s["partial"], *exchange, n_rows, n_cols,
                                             self.rows_per_program, self.bwd_exchange[1]))]
        elif self.dot is not None:
            bwd = [_native.launch(self.dot, (s["x"], s["g"], s["dy"], s["rstd"], s["coef"],
                                             n_cols)),
                   _native.launch(self.bwd, (s["x"], s["g"], s["rstd"], s["coef"], s["dy"],
                                             s["dx"], s["partial"], n_rows, n_cols,
                                             self.rows_per_program))]
        else:
            bwd = [_native.launch(self.bwd, (s["x"], s["g"], s["rstd"], s["dy"], s["dx"],
                                             s["partial"], n_rows, n_cols,
                                             self.rows_per_program))]
        if not fused:
            dg_sum = _native.launch(self.dg_sum, (s["partial"], s["dg"], parts, n_cols))
        refused = [r for r in (fwd, *bwd, dg_sum, *fused) if isinstance(r, str)]
        if refused:
            self.native_why = "; ".join(refused)
            return False
        mod.set_create_graph_backward(_create_graph_backward)
        return mod.RMSNormPlan(fwd, bwd, dg_sum, n_rows, list(self.partial_shape),
                               self.dot is not None, self.rstd_dtype == torch.float64,
                               list(self.exchange or ()), list(self.bwd_exchange or ()),
                               fused)

    def rows(self, t):
        """A contiguous t of the plan's shape as (rows, N)."""
        return t.view(self.rows2d) if self.flat else t

    def forward(self, x2, g, eps):
        """(y, rstd) for contiguous (rows, N) x2 and contiguous g of the plan's signature; y
        in the plan's shape (a tensor of its own, not a view: in-place ops on it work)."""
        n_rows, n_cols = self.rows2d
        y = torch.empty(self.shape, dtype=x2.dtype, device=x2.device)
        rstd = torch.empty(n_rows, dtype=self.rstd_dtype, device=x2.device)
        if self.exchange is not None:  # wide rows read once: statistics meet in memory
            _exchange.launch(self.fwd, "rmsnorm", self.exchange, rstd.dtype, x2.device,
                             (x2, g, self.rows(y), rstd, n_cols, float(eps)), self.fwd_tail)
        elif self.fwd is not None:
            # one specialisation: eps always a float
            self.fwd(x2, g, self.rows(y), rstd, n_cols, float(eps), *self.fwd_tail)
        elif n_rows:
            rstd.fill_(float("nan"))  # the mean of no squares is 0/0, as in torch's formula
        return y, rstd

    def backward(self, dy2, x2, g, rstd, dg=None, want_dg=True):
        """(dx, dg) for contiguous (rows, N) dy2 and x2 and contiguous g of the plan's
        signature and the forward's rstd; dx in the plan's shape, dg None unless `want_dg`
        (a frozen weight skips its sum). `dg`, where given (the eager autograd path), is an
        uninitialised tensor of g's shape and dtype to write dg into, and the partial-dg rows
        (and the wide rows' coefficients) then go to reused scratch buffers
        (`_launch.scratch`): on autograd's worker thread every allocator call costs tens of us
        on the H200. Elsewhere (compiled graphs, whose CUDA-graph pools must own every
        buffer, and the launch functions) they are allocated."""
        dx = torch.empty(self.shape, dtype=x2.dtype, device=x2.device)
        if self.bwd is None:
            return dx, torch.zeros_like(g) if want_dg else None
        n_rows, n_cols = self.rows2d
        device, dx2 = x2.device, self.rows(dx)
        temp = scratch if dg is not None else _allocate
        partial = temp("rmsnorm.partial", self.partial_shape, rstd.dtype, device)
        if self.bwd_exchange is not None:  # wide rows read once: the pieces meet in memory
            _exchange.launch(self.bwd, "rmsnorm backward", self.bwd_exchange, rstd.dtype,
                             device, (x2, g, rstd, dy2, dx2, partial),
                             (n_rows, n_cols, self.rows_per_program, self.bwd_exchange[1]))
        elif self.bwd_fused is not None:  # dg summed in the same launch
            # (a frozen weight's too, into a buffer dropped after: the native node runs this
            # one kernel either way, and it compiles on whichever step comes first)
            kernel, reducers = self.bwd_fused
            if not want_dg:
                dropped = scratch("rmsnorm fused dg dropped", (n_cols,), g.dtype, device)
            elif dg is None:
                dg = torch.empty(n_cols, dtype=g.dtype, device=g.device)
            _exchange.counted("rmsnorm fused dg counters", 2, device, lambda sync: kernel(
                x2, g, rstd, dy2, dx2, partial, dg if want_dg else dropped, sync, n_rows, n_cols,
                self.rows_per_program, reducers))
            return dx, dg if want_dg else None
        elif self.dot is not None:
            coef = temp("rmsnorm.coef", rstd.shape, rstd.dtype, device)
            self.dot(x2, g, dy2, rstd, coef, n_cols)
            self.bwd(x2, g, rstd, coef, dy2, dx2, partial, n_rows, n_cols,
                     self.rows_per_program)
        else:
            self.bwd(x2, g, rstd, dy2, dx2, partial, n_rows, n_cols, self.rows_per_program)
        if not want_dg:
            return dx, None
        if dg is None:
            dg = torch.empty(n_cols, dtype=g.dtype, device=g.device)
        self.dg_sum(partial, dg, self.partial_shape[0], n_cols)
        return dx, dg


def _allocate(name, shape, dtype, device):
    return torch.empty(shape, dtype=dtype, device=device)


_PLANS = PlanCache()


def _signature(x, g):
    return x.shape, x.dtype, x.device, g.shape, g.dtype, g.device


def _plan(x, g):
    """The cached `_Plan` of x's and g's signature (checked and built on its first call)."""
    return _PLANS.of(_signature, _Plan, x, g)


def _forward(x2, g, eps, chunk=None, tuning=None):
    """(y, rstd) for contiguous (rows, N) x2; `chunk` forces the chunked kernel with that
    chunk, `tuning` an RMSNormTuning in place of the device's (tests, probes)."""
    plan = _Plan(x2, g, chunk=chunk, tuning=tuning) if chunk or tuning else _plan(x2, g)
    return plan.forward(x2, g.contiguous(), eps)


def _backward(dy2, x2, g, rstd, rows_per_program=None, chunk=None, tile=None, tuning=None):
    """(dx, dg) for checked 2-D contiguous x2 and dy2 of the same shape and dtype. `chunk` or
    `tile` (block_m, block_n) force the wide-row kernels with those blocks, `tuning` an
    RMSNormTuning in place of the device's (tests, probes)."""
    plan = (_Plan(x2, g, rows_per_program, chunk, tile, tuning)
            if rows_per_program or chunk or tile or tuning else _plan(x2, g))
    return plan.backward(dy2, x2, g.contiguous(), rstd)


def rmsnorm_forward(x, g, eps=1e-6):
    """(y, rstd): y = x / rms(x) * g over the last dimension; rstd is fp32 (fp64), one per row."""
    return _op_impl(x, g, eps)


def rmsnorm_backward(dy, x, g, rstd, rows_per_program=None):
    """(dx, dg) from the saved rstd, with a partial-dg buffer of one row per program."""
    x2, g = _flatten(x, g)
    (dy2,) = check_inputs("rmsnorm backward", dy.reshape(x2.shape), device=DEVICE,
                          dtypes=(x.dtype,))
    _check_rstd(x2, rstd)
    dx, dg = _backward(dy2, x2, g, rstd, rows_per_program)
    return dx.view(x.shape), dg


def rmsnorm_backward_racy(dy, x, g, rstd):
    """Exercise 6's racy backward (for teaching): dg accumulated by load-add-store."""
    x2, g = _flatten(x, g)
    dy2 = dy.reshape(x2.shape).contiguous()
    dx = torch.empty_like(x2)
    dg = torch.zeros(x2.shape[1], dtype=torch.float32, device=x.device)
    rmsnorm_bwd_racy_kernel[(x2.shape[0],)](x2, g, rstd, dy2, dx, dg, x2.shape[1],
                                            BLOCK_SIZE=triton.next_power_of_2(x2.shape[1]))
    return dx.reshape(x.shape), dg


def _op_impl(x, g, eps):
    plan = _plan(x, g)
    return plan.forward(plan.rows(x.contiguous()), g.contiguous(), eps)


def _op_fake(x, g, eps):
    _check(x, g)
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            x.new_empty(math.prod(x.shape[:-1]), dtype=stats_dtype(x)))


def _check_bwd(dy, x, g, rstd):
    _check(x, g)
    check_inputs("rmsnorm backward", dy, device=DEVICE, dtypes=(x.dtype,), contiguous=False)
    if dy.shape != x.shape:
        raise ValueError(f"rmsnorm backward: dy has shape {tuple(dy.shape)}, x "
                         f"{tuple(x.shape)}")


def _check_rstd(x, rstd):
    """rstd as the forward makes it from x: one fp32 (fp64) number per row, contiguous."""
    rows, dtype = math.prod(x.shape[:-1]), stats_dtype(x)
    if (not isinstance(rstd, torch.Tensor) or rstd.dtype != dtype or rstd.shape != (rows,)
            or not rstd.is_contiguous() or rstd.device != x.device):
        got = (f"{rstd.dtype} of shape {tuple(rstd.shape)} on {rstd.device}"
               if isinstance(rstd, torch.Tensor) else type(rstd).__name__)
        raise ValueError(f"rmsnorm backward: rstd must be the forward's, a contiguous "
                         f"{str(dtype)[6:]} tensor of shape ({rows},) on {x.device}, got "
                         f"{got}")


def _op_bwd_impl(dy, x, g, rstd):
    plan = _plan(x, g)  # x and g checked, on their first call
    if dy.shape != x.shape or dy.dtype != x.dtype or dy.device != x.device:
        _check_bwd(dy, x, g, rstd)
        raise ValueError(f"rmsnorm backward: dy is on {dy.device}, x on {x.device}")
    _check_rstd(x, rstd)
    return plan.backward(plan.rows(dy.contiguous()), plan.rows(x.contiguous()),
                         g.contiguous(), rstd)


def _op_bwd_fake(dy, x, g, rstd):
    _check_bwd(dy, x, g, rstd)
    _check_rstd(x, rstd)
    return torch.empty_like(x, memory_format=torch.contiguous_format), torch.empty_like(g)


def _setup(ctx, inputs, output):
    x, g, _ = inputs
    ctx.save_for_backward(x, g, output[1])
    # rstd is internal: no gradient, and none materialised (autograd would otherwise allocate
    # and fill a zero tensor for it, a GPU launch, on every backward)
    ctx.mark_non_differentiable(output[1])
    ctx.set_materialize_grads(False)


def _op_backward(ctx, dy, _drstd):
    if dy is None:  # y's gradient is zero: nothing to launch
        return None, None, None
    dx, dg = rmsnorm_backward_op(dy, *ctx.saved_tensors)
    return dx, dg, None


def _no_setup(ctx, inputs, output):
    pass


rmsnorm_backward_op = ops.define(__name__, "rmsnorm_backward",
                                 "(Tensor dy, Tensor x, Tensor g, Tensor rstd) -> "
                                 "(Tensor, Tensor)", _op_bwd_impl, _op_bwd_fake,
                                 ops.no_double_backward("tritonlab rmsnorm"), _no_setup)
rmsnorm_op = ops.define(__name__, "rmsnorm", "(Tensor x, Tensor g, float eps) -> "
                        "(Tensor, Tensor)", _op_impl, _op_fake, _op_backward, _setup)


class _EagerRMSNorm(torch.autograd.Function):
    """`rmsnorm`'s eager path when a gradient is wanted: what `rmsnorm_op`'s eager
    autograd.Function (ops.Op) does, with the host steps of a training step cut to the fewest,
    because RMSNorm's step is launch-bound and its backward runs on autograd's worker thread,
    where each Python step and allocation costs more (docs/ops.md#host-cost): y is the only
    output (rstd is saved, not returned), the forward keeps its launch plan and allocates dg,
    and the backward launches straight from the plan, without dispatch or checks (autograd
    hands it dy with y's shape, dtype and device). A second-order gradient goes through
    `rmsnorm_backward_op`, whose own gradient raises NotImplementedError."""

    @staticmethod
    def forward(ctx, x, g, eps):
        plan = _plan(x, g)
        y, rstd = plan.forward(plan.rows(x.contiguous()), g.contiguous(), eps)
        ctx.save_for_backward(x, g, rstd)
        ctx.plan, ctx.dg = plan, torch.empty(g.shape, dtype=g.dtype, device=g.device)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, g, rstd = ctx.saved_tensors
        if torch.is_grad_enabled() or torch.compiler.is_compiling():
            # create_graph: through the op, whose gradient raises; compiled autograd: the op
            # is what Dynamo traces
            dx, dg = rmsnorm_backward_op(dy, x, g, rstd)
            return dx, dg, None
        plan, dg = ctx.plan, ctx.dg
        ctx.dg = None  # a second backward of this graph (retain_graph) allocates its own
        dx, dg = plan.backward(plan.rows(dy.contiguous()), plan.rows(x.contiguous()),
                               g.contiguous(), rstd, dg, ctx.needs_input_grad[1])
        return dx, dg, None


def _create_graph_backward(dy, x, g, rstd):
    """The native node's backward under create_graph: the registered op, whose own gradient
    raises NotImplementedError."""
    dx, dg = rmsnorm_backward_op(dy, x, g, rstd)
    return dx, dg


def _native_forward(x, g, eps):
    """y with the native module's C++ autograd node (kernels/_native.py), or None where this
    call takes the Python Function: before the signature's first training step has run
    through Triton, where the module or its launches cannot be made, under compiled autograd
    (which traces Python nodes), while a profiler listens to Triton's launches, with x on
    another device than the current one, or with
    tensors the kernels were not compiled for (not 16-byte aligned, forward-mode AD)."""
    plan = _plan(x, g)
    native = plan.native
    if native is None:
        native = plan.native = plan.native_plan()
    if (not native or ops.compiled_autograd() or current_device() != x.device.index
            or _native.listening()):
        return None
    return _native.module().rmsnorm_forward(native, x, g, eps, raw_stream(x.device.index))


def _describe_forward(options, x, g):
    """The native plan (kernels/_native.py) of the forward alone, for calls that want no
    gradient (those that do record the C++ node of `_native_forward`): y and rstd allocated,
    the forward kernel launched with the table's eps."""
    plan = _plan(x, g)
    if plan.fwd is None or plan.exchange is not None:
        return "an empty input, or the exchange forward (scratch buffers)"
    S = _native.Slot
    return _native.plan((x, g), [(plan.shape, x.dtype), ((plan.rows2d[0],), plan.rstd_dtype)],
                        [(plan.fwd, (S(0), S(1), S(2), S(3), plan.rows2d[1], float(options[0]),
                                     *plan.fwd_tail))],
                        S(2))


_native_forward_only = _native.NativeOp("TritonlabRMSNormForward", _describe_forward,
                                        enabled=DEVICE == "cuda")


def rmsnorm(x, g, eps=1e-6):
    """Differentiable (first order) fused RMSNorm over the last dimension: y in x's dtype,
    for fp32/fp16/bf16/fp64 x and a weight g of shape (N,)."""
    ops.require_tensors("rmsnorm", x, g)
    if ops.eager_grad(x, g):
        if x.is_cuda and _native.ENABLED:
            y = _native_forward(x, g, eps)
            if y is not None:
                return y
        return _EagerRMSNorm.apply(x, g, eps)
    y = _native_forward_only((eps,), x, g)
    if y is not None:
        return y
    return rmsnorm_op(x, g, eps)[0]


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps=1e-6, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(d, device=device, dtype=dtype))

    def forward(self, x):
        return rmsnorm(x, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.weight.shape[0]}, eps={self.eps}"
