"""Row kernels that keep each row, or each program's piece of it, in shared memory (Gluon,
Hopper): softmax's and RMSNorm's forwards reading a row from DRAM once, with the next rows
already on their way.

Issue 37's wide rows (bf16 1024×65536: 0.87-0.88 of a same-bytes copy on an H100 for both
forwards; 256×262144 0.74-0.78) are slow for a reason their kernels share: a row's statistic
needs the whole row before its first output, so the two-pass kernels read it twice (the second
time from L2, which the rows in flight at once overflow), and the exchange kernels, which read
it once, hold nothing in flight while a row's pieces meet in memory
(docs/decisions.md#rows-resident). A piece of up to about 200 KiB fits in one SM's shared
memory. Here programs come in groups of PIECES (one program per SM at most), program p of a
group holding piece p of the group's rows, rows group, group + groups, ...; a piece arrives by
TMA as CHUNKS boxes of (BOX_ROWS, 256) elements (the row viewed as rows of 256) into a ring of
SLOTS slots, each signalled on its own mbarrier. The program reads its piece from shared memory
for its statistic (softmax: the maximum, then the sum of exponentials; RMSNorm: the sum of
squares; each taken elementwise across the chunks in registers and reduced across the threads
once), meets its row-mates in memory where PIECES > 1 (kernels/_exchange.py's meeting, in
Gluon), then reads the piece once more to write y chunk by chunk through two output buffers by
TMA store; as soon as a chunk has been read for the last time its slot is refilled with the
chunk SLOTS on, a chunk of a later row, so DRAM keeps reading while the program computes,
meets and writes.

The same source runs on minitriton (which models shared memory, mbarriers, TMA and programs
that wait for each other), so the CPU tests check it. `rows_problem` says which inputs it
cannot take.
"""
import torch

from ..backend import require_gluon
from . import _exchange as exchange
from ._checks import sm_count

GLUON = require_gluon()
gluon, gl = GLUON.gluon, GLUON.gl
mbarrier, tma = GLUON.hopper.mbarrier, GLUON.hopper.tma
fence_async_shared = GLUON.hopper.fence_async_shared

BOX_COLS = 256  # a TMA box's widest dimension: a row is viewed as rows of 256 elements
# shared memory a Hopper program may take (232448 bytes), less what the mbarriers and the
# reductions' scratch take beside the buffers
SHARED_LIMIT = 227 * 1024 - 1024
OPS = ("softmax", "rmsnorm")


@gluon.jit
def _fill(x_desc, ring, bars, k, n_chunks, first, step, piece, PIECES: gl.constexpr,
          CHUNKS: gl.constexpr, SLOTS: gl.constexpr, BOX_ROWS: gl.constexpr):
    """Chunk k of the program's stream (chunk k % CHUNKS of piece `piece` of its row first +
    (k // CHUNKS) * step), if it has one, into ring slot k % SLOTS by TMA, the slot's barrier
    told its bytes. The caller has made sure (a CTA barrier) that no thread still reads the
    slot."""
    slot = k % SLOTS
    live = k < n_chunks
    row = first + (k // CHUNKS) * step
    mbarrier.expect(bars.index(slot), x_desc.block_type.nbytes, pred=live)
    tma.async_copy_global_to_shared(
        x_desc, [((row * PIECES + piece) * CHUNKS + k % CHUNKS) * BOX_ROWS, 0],
        bars.index(slot), ring.index(slot), pred=live)


@gluon.jit
def _chunk(ring, bars, k, layout: gl.constexpr, SLOTS: gl.constexpr, WAIT: gl.constexpr):
    """Chunk k of the stream from its ring slot into registers in `layout`, as fp32; WAIT:
    first wait for its copy to land (its slot's (k // SLOTS)-th phase)."""
    slot = k % SLOTS
    if WAIT:
        mbarrier.wait(bars.index(slot), (k // SLOTS) & 1)
    return ring.index(slot).load(layout).to(gl.float32)


@gluon.jit
def _meet(stats_ptr, count_ptr, row, piece, a, b, target, PIECES: gl.constexpr):
    """This piece's statistics (a, b) of `row` stored for its row-mates, then the meeting at
    the group's counter, which only grows (the group's i-th row is met at (i + 1) * PIECES
    arrivals): the CTA barrier has every thread's stores issued before one counts the program
    in (release); after the wait (acquire) the others' statistics are read from L2 (.cg).
    Returns every piece's (a, b), a vector of PIECES each (as kernels/_exchange.py's
    meeting, in Gluon)."""
    gl.store(stats_ptr + (row * PIECES + piece) * 2, a)
    gl.store(stats_ptr + (row * PIECES + piece) * 2 + 1, b)
    gl.thread_barrier()
    gl.atomic_add(count_ptr, 1, sem="release")
    while gl.atomic_add(count_ptr, 0, sem="acquire") < target:
        pass
    pieces: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    j = (row * PIECES + gl.arange(0, PIECES, layout=pieces)) * 2
    return (gl.load(stats_ptr + j, cache_modifier=".cg"),
            gl.load(stats_ptr + j + 1, cache_modifier=".cg"))


@gluon.jit
def rows_resident_kernel(x_desc, y_desc, g_ptr, rstd_ptr, stats_ptr, sync_ptr, n_rows, n_cols,
                         eps, OP: gl.constexpr, PIECES: gl.constexpr, CHUNKS: gl.constexpr,
                         BOX_ROWS: gl.constexpr, SLOTS: gl.constexpr, WARPS: gl.constexpr):
    # OP "softmax": y = exp(x - max) / sum(exp(x - max)) per row; "rmsnorm": y = x * rstd * g
    # with rstd = 1 / sqrt(mean(x^2) + eps) stored per row. A row is PIECES pieces of CHUNKS
    # chunks of (BOX_ROWS, 256) elements: x_desc and y_desc are the (n_rows, n_cols) tensors
    # viewed as (n_rows * PIECES * CHUNKS * BOX_ROWS, 256), boxes of (BOX_ROWS, 256)
    # unswizzled. Programs come in groups of PIECES consecutive ones, program p of a group
    # holding piece p of the group's rows; SLOTS >= CHUNKS (a whole piece resident, SLOTS -
    # CHUNKS chunks of the next rows ahead). PIECES > 1: the pieces of a row meet in memory
    # (_meet) with their statistics in stats_ptr ((n_rows, PIECES, 2) fp32) at the group's
    # counter, sync_ptr[group] (and sync_ptr[groups + group] to leave by), zero before the
    # launch and left zero by it; every program must be resident at once (`forward` launches
    # at most one program per SM)
    gl.static_assert(SLOTS >= CHUNKS, "rows_resident_kernel: a piece must fit in the ring")
    pid = gl.program_id(0)
    groups = gl.num_programs(0) // PIECES
    group, piece = pid // PIECES, pid % PIECES
    # the program's rows' chunks (none where the group has no row)
    n_chunks = gl.maximum(gl.cdiv(n_rows - group, groups), 0) * CHUNKS
    ring = gl.allocate_shared_memory(x_desc.dtype, [SLOTS, BOX_ROWS, 256], x_desc.layout)
    outs = gl.allocate_shared_memory(y_desc.dtype, [2, BOX_ROWS, 256], y_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [SLOTS, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(SLOTS):
        mbarrier.init(bars.index(s), count=1)
    fence_async_shared()  # the barriers' initialisation seen by the TMA unit
    for ahead in gl.static_range(SLOTS):  # the first SLOTS chunks on their way
        _fill(x_desc, ring, bars, ahead, n_chunks, group, groups, piece, PIECES, CHUNKS, SLOTS,
              BOX_ROWS)
    # 8 consecutive elements a thread (16-byte reads of shared memory for 16-bit inputs)
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [WARPS, 1], [1, 0])
    offs = (gl.arange(0, BOX_ROWS, layout=gl.SliceLayout(1, layout))[:, None] * 256
            + gl.arange(0, 256, layout=gl.SliceLayout(0, layout))[None, :])
    for k0 in range(0, n_chunks, CHUNKS):
        row = group + (k0 // CHUNKS) * groups
        # the piece's statistic: elementwise across its chunks in registers, then one
        # reduction across the program's threads (not one a chunk)
        if OP == "softmax":
            top = _chunk(ring, bars, k0, layout, SLOTS, True)
            for j in gl.static_range(1, CHUNKS):
                top = gl.maximum(top, _chunk(ring, bars, k0 + j, layout, SLOTS, True))
            m = gl.max(gl.max(top, axis=1), axis=0)
            acc = gl.zeros([BOX_ROWS, 256], gl.float32, layout)
            for j in gl.static_range(CHUNKS):
                x = _chunk(ring, bars, k0 + j, layout, SLOTS, False)
                acc += gl.where(x == float("-inf"), 0.0, gl.exp(x - m))
            total = gl.sum(gl.sum(acc, axis=1), axis=0)
            if PIECES > 1:  # the row's maximum and sum from every piece's
                ms, ss = _meet(stats_ptr, sync_ptr + group, row, piece, m, total,
                               (k0 // CHUNKS + 1) * PIECES, PIECES)
                m = gl.max(ms, axis=0)
                total = gl.sum(gl.where(ms == float("-inf"), 0.0, ss * gl.exp(ms - m)), axis=0)
            scale = 1.0 / total
        else:
            acc = gl.zeros([BOX_ROWS, 256], gl.float32, layout)
            for j in gl.static_range(CHUNKS):
                x = _chunk(ring, bars, k0 + j, layout, SLOTS, True)
                acc += x * x
            total = gl.sum(gl.sum(acc, axis=1), axis=0)
            if PIECES > 1:  # the row's sum of squares from every piece's
                total = gl.sum(_meet(stats_ptr, sync_ptr + group, row, piece, total, 0.0,
                                     (k0 // CHUNKS + 1) * PIECES, PIECES)[0], axis=0)
            scale = 1.0 / gl.sqrt(total / n_cols + eps)
            if piece == 0:
                gl.store(rstd_ptr + row, scale)
        for j in gl.static_range(CHUNKS):
            k = k0 + j
            x = _chunk(ring, bars, k, layout, SLOTS, False)
            if OP == "softmax":
                y = gl.exp(x - m) * scale
            else:
                y = x * scale * gl.load(
                    g_ptr + (piece * CHUNKS + j) * (BOX_ROWS * 256) + offs).to(gl.float32)
            out = outs.index(k % 2)
            tma.store_wait(pendings=1)  # this buffer's store before last has read it
            gl.thread_barrier()  # ... for every thread, and every thread has read slot k
            out.store(y.to(y_desc.dtype))
            fence_async_shared()  # the writes seen by the TMA unit
            gl.thread_barrier()
            tma.async_copy_shared_to_global(
                y_desc, [((row * PIECES + piece) * CHUNKS + j) * BOX_ROWS, 0], out)
            _fill(x_desc, ring, bars, k + SLOTS, n_chunks, group, groups, piece, PIECES, CHUNKS,
                  SLOTS, BOX_ROWS)
    tma.store_wait(pendings=0)
    for s in gl.static_range(SLOTS):
        mbarrier.invalidate(bars.index(s))
    if PIECES > 1:  # the last of the group to leave zeroes its counters for the next launch
        gl.thread_barrier()  # no thread of this program still waits at the counter
        if gl.atomic_add(sync_ptr + groups + group, 1, sem="acq_rel") == PIECES - 1:
            gl.atomic_xchg(sync_ptr + group, 0, sem="relaxed")
            gl.atomic_xchg(sync_ptr + groups + group, 0, sem="relaxed")


def shared_bytes(box_rows, slots, item):
    """The shared memory a program takes: the ring and the two output buffers."""
    return (slots + 2) * box_rows * BOX_COLS * item


def rows_problem(x, box_rows, slots, pieces=1):
    """Why rows_resident_kernel cannot take x (rows of its last dimension) in `pieces` pieces
    a row, boxes of `box_rows` rows of 256 and a ring of `slots`, or None."""
    chunk = box_rows * BOX_COLS
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        return f"a {x.dtype} input (fp16, bf16 or fp32)"
    if not x.is_contiguous():
        return "a non-contiguous input"
    if x.dim() == 0 or x.shape[-1] == 0:
        return "no columns"
    if pieces < 1 or pieces & (pieces - 1):
        return f"{pieces} pieces a row (a power of two)"
    if x.shape[-1] % (pieces * chunk):
        return (f"rows of {x.shape[-1]} elements, not a multiple of {pieces * chunk} ({pieces} "
                f"pieces of {box_rows} x 256)")
    if x.shape[-1] // (pieces * chunk) > slots:
        return (f"pieces of {x.shape[-1] // (pieces * chunk)} chunks, more than the ring's "
                f"{slots} slots")
    if shared_bytes(box_rows, slots, x.element_size()) > SHARED_LIMIT:
        return (f"{shared_bytes(box_rows, slots, x.element_size())} bytes of shared memory, "
                f"more than a program may take ({SHARED_LIMIT})")
    if pieces > exchange.max_pieces(x):
        return f"{pieces} pieces a row, more programs than the GPU holds at once"
    if x.data_ptr() % 16:
        return "an input TMA cannot address (not 16-byte aligned)"
    return None


def _others_problem(op, x, y, g, rstd):
    """Why y, g and rstd do not go with x for `op`, or None."""
    if y.shape != x.shape or y.dtype != x.dtype or not y.is_contiguous():
        return "y is not a contiguous tensor of x's shape and dtype"
    if y.data_ptr() % 16:
        return "an output TMA cannot address (not 16-byte aligned)"
    if op == "rmsnorm":
        if g is None or rstd is None:
            return "RMSNorm needs g and rstd"
        if g.shape != x.shape[-1:] or not g.is_contiguous():
            return f"g is not a contiguous vector of {x.shape[-1]}"
        if rstd.numel() != x.numel() // x.shape[-1] or rstd.dtype != torch.float32:
            return f"rstd does not hold {x.numel() // x.shape[-1]} fp32 values, one a row"
    return None


def _descriptor(t, box_rows):
    flat = t.view(-1, BOX_COLS)
    dtype = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16,
             torch.float32: gl.float32}[t.dtype]
    layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=dtype.primitive_bitwidth,
                                  rank=2)
    return GLUON.TensorDescriptor.from_tensor(flat, [box_rows, BOX_COLS], layout)


def forward(op, x, y, g=None, rstd=None, eps=0.0, box_rows=32, slots=12, warps=8, pieces=1,
            programs=None):
    """y (like x) = softmax or RMSNorm (op) of contiguous x's rows by rows_resident_kernel,
    each row in `pieces` pieces on as many programs (meeting in memory where more than one);
    RMSNorm takes g (its row's length) and stores each row's rstd (fp32) in `rstd`. At most
    one program per SM (`programs` fewer; a multiple of `pieces`), two groups on the CPU."""
    if op not in OPS:
        raise ValueError(f"rows_gluon.forward: op {op!r} is not one of {OPS}")
    problem = rows_problem(x, box_rows, slots, pieces) or _others_problem(op, x, y, g, rstd)
    if problem:
        raise ValueError(f"rows_gluon.forward: cannot take these inputs: {problem}")
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    if n_rows == 0:
        return y
    most = sm_count(x.get_device()) if x.is_cuda else 2 * pieces
    programs = max(pieces, min(programs or most, most, n_rows * pieces) // pieces * pieces)
    stats = (torch.empty(n_rows, pieces, 2, device=x.device) if pieces > 1 else y)
    exchange.counted("rows resident counters", 2 * (programs // pieces), x.device,
                     lambda sync: rows_resident_kernel[(programs,)](
                         _descriptor(x, box_rows), _descriptor(y, box_rows),
                         x if g is None else g, y if rstd is None else rstd, stats, sync,
                         n_rows, n_cols, float(eps), OP=op, PIECES=pieces,
                         CHUNKS=n_cols // (pieces * box_rows * BOX_COLS), BOX_ROWS=box_rows,
                         SLOTS=slots, WARPS=warps, num_warps=warps,
                         # a row's pieces wait for each other: all programs resident at
                         # once, or the launch fails (not a hang beside other kernels)
                         launch_cooperative_grid=pieces > 1))
    return y
