"""Row kernels that keep each row in shared memory (Gluon, Hopper): softmax's and RMSNorm's
forwards reading a row from DRAM once, with the next rows already on their way.

Issue 37's wide rows (bf16 1024×65536: 0.87-0.88 of a same-bytes copy on an H100 for both
forwards) are slow for a reason their kernels share: a row's statistic needs the whole row
before its first output, so the two-pass kernels read it twice (the second time from L2, which
the rows in flight at once overflow), and the exchange kernels, which read it once, pay a
meeting in memory per row (docs/decisions.md#rows-resident). A row of up to about 200 KiB fits
in one SM's shared memory. Here one program per SM walks rows pid, pid + programs, ...; each
row arrives by TMA as CHUNKS boxes of (BOX_ROWS, 256) elements (the row viewed as rows of 256)
into a ring of SLOTS slots, each signalled on its own mbarrier. The program reads the row from
shared memory for its statistic (softmax: the maximum, then the sum of exponentials; RMSNorm:
the sum of squares; each taken elementwise across the row's chunks in registers and reduced
across the threads once), then once more to write y chunk by chunk through two output buffers by TMA
store; as soon as a chunk has been read for the last time its slot is refilled with the chunk
SLOTS on, a chunk of a later row, so DRAM keeps reading while the program computes and writes.

The same source runs on minitriton (which models shared memory, mbarriers and TMA), so the CPU
tests check it. `rows_problem` says which inputs it cannot take.
"""
import torch

from ..backend import require_gluon
from ._checks import sm_count

GLUON = require_gluon()
gluon, gl = GLUON.gluon, GLUON.gl
mbarrier, tma = GLUON.hopper.mbarrier, GLUON.hopper.tma
fence_async_shared = GLUON.hopper.fence_async_shared

BOX_COLS = 256  # a TMA box's widest dimension: a row is viewed as rows of 256 elements
SHARED_LIMIT = 227 * 1024  # shared memory a Hopper program may take (232448 bytes)
OPS = ("softmax", "rmsnorm")


@gluon.jit
def _fill(x_desc, ring, bars, k, n_chunks, first, step, CHUNKS: gl.constexpr,
          SLOTS: gl.constexpr, BOX_ROWS: gl.constexpr):
    """Chunk k of the program's stream (chunk k % CHUNKS of its row first + (k // CHUNKS) *
    step), if it has one, into ring slot k % SLOTS by TMA, the slot's barrier told its bytes.
    The caller has made sure (a CTA barrier) that no thread still reads the slot."""
    slot = k % SLOTS
    live = k < n_chunks
    row = first + (k // CHUNKS) * step
    mbarrier.expect(bars.index(slot), x_desc.block_type.nbytes, pred=live)
    tma.async_copy_global_to_shared(x_desc, [(row * CHUNKS + k % CHUNKS) * BOX_ROWS, 0],
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
def rows_resident_kernel(x_desc, y_desc, g_ptr, rstd_ptr, n_rows, n_cols, eps,
                         OP: gl.constexpr, CHUNKS: gl.constexpr, BOX_ROWS: gl.constexpr,
                         SLOTS: gl.constexpr, WARPS: gl.constexpr):
    # OP "softmax": y = exp(x - max) / sum(exp(x - max)) per row; "rmsnorm": y = x * rstd * g
    # with rstd = 1 / sqrt(mean(x^2) + eps) stored per row. x_desc and y_desc: the (n_rows,
    # n_cols) inputs viewed as (n_rows * CHUNKS * BOX_ROWS, 256), boxes of (BOX_ROWS, 256)
    # unswizzled; SLOTS >= CHUNKS (a whole row resident, SLOTS - CHUNKS chunks of the next
    # rows ahead)
    gl.static_assert(SLOTS >= CHUNKS, "rows_resident_kernel: a row must fit in the ring")
    pid = gl.program_id(0)
    step = gl.num_programs(0)
    n_chunks = gl.cdiv(n_rows - pid, step) * CHUNKS  # the program's rows' chunks
    ring = gl.allocate_shared_memory(x_desc.dtype, [SLOTS, BOX_ROWS, 256], x_desc.layout)
    outs = gl.allocate_shared_memory(y_desc.dtype, [2, BOX_ROWS, 256], y_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [SLOTS, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(SLOTS):
        mbarrier.init(bars.index(s), count=1)
    fence_async_shared()  # the barriers' initialisation seen by the TMA unit
    for ahead in gl.static_range(SLOTS):  # the first SLOTS chunks on their way
        _fill(x_desc, ring, bars, ahead, n_chunks, pid, step, CHUNKS, SLOTS, BOX_ROWS)
    # 8 consecutive elements a thread (16-byte reads of shared memory for 16-bit inputs)
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [WARPS, 1], [1, 0])
    offs = (gl.arange(0, BOX_ROWS, layout=gl.SliceLayout(1, layout))[:, None] * 256
            + gl.arange(0, 256, layout=gl.SliceLayout(0, layout))[None, :])
    for k0 in range(0, n_chunks, CHUNKS):
        row = pid + (k0 // CHUNKS) * step
        # the row's statistic: elementwise across its chunks in registers, then one reduction
        # across the program's threads (not one a chunk)
        if OP == "softmax":
            top = _chunk(ring, bars, k0, layout, SLOTS, True)
            for j in gl.static_range(1, CHUNKS):
                top = gl.maximum(top, _chunk(ring, bars, k0 + j, layout, SLOTS, True))
            m = gl.max(gl.max(top, axis=1), axis=0)
            acc = gl.zeros([BOX_ROWS, 256], gl.float32, layout)
            for j in gl.static_range(CHUNKS):
                x = _chunk(ring, bars, k0 + j, layout, SLOTS, False)
                acc += gl.where(x == float("-inf"), 0.0, gl.exp(x - m))
            scale = 1.0 / gl.sum(gl.sum(acc, axis=1), axis=0)
        else:
            acc = gl.zeros([BOX_ROWS, 256], gl.float32, layout)
            for j in gl.static_range(CHUNKS):
                x = _chunk(ring, bars, k0 + j, layout, SLOTS, True)
                acc += x * x
            scale = 1.0 / gl.sqrt(gl.sum(gl.sum(acc, axis=1), axis=0) / n_cols + eps)
            gl.store(rstd_ptr + row, scale)
        for j in gl.static_range(CHUNKS):
            k = k0 + j
            x = _chunk(ring, bars, k, layout, SLOTS, False)
            if OP == "softmax":
                y = gl.exp(x - m) * scale
            else:
                y = x * scale * gl.load(g_ptr + j * (BOX_ROWS * 256) + offs).to(gl.float32)
            out = outs.index(k % 2)
            tma.store_wait(pendings=1)  # this buffer's store before last has read it
            gl.thread_barrier()  # ... for every thread, and every thread has read slot k
            out.store(y.to(y_desc.dtype))
            fence_async_shared()  # the writes seen by the TMA unit
            gl.thread_barrier()
            tma.async_copy_shared_to_global(y_desc, [(row * CHUNKS + j) * BOX_ROWS, 0], out)
            _fill(x_desc, ring, bars, k + SLOTS, n_chunks, pid, step, CHUNKS, SLOTS, BOX_ROWS)
    tma.store_wait(pendings=0)
    for s in gl.static_range(SLOTS):
        mbarrier.invalidate(bars.index(s))


def shared_bytes(box_rows, slots, item):
    """The shared memory a program takes: the ring and the two output buffers."""
    return (slots + 2) * box_rows * BOX_COLS * item


def rows_problem(x, box_rows, slots):
    """Why rows_resident_kernel cannot take x (rows of its last dimension) with boxes of
    `box_rows` rows of 256 and a ring of `slots`, or None."""
    chunk = box_rows * BOX_COLS
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        return f"a {x.dtype} input (fp16, bf16 or fp32)"
    if not x.is_contiguous():
        return "a non-contiguous input"
    if x.shape[-1] % chunk:
        return f"rows of {x.shape[-1]} elements, not a multiple of {chunk} ({box_rows} x 256)"
    if x.shape[-1] // chunk > slots:
        return f"rows of {x.shape[-1] // chunk} chunks, more than the ring's {slots} slots"
    if shared_bytes(box_rows, slots, x.element_size()) > SHARED_LIMIT:
        return (f"{shared_bytes(box_rows, slots, x.element_size())} bytes of shared memory, "
                f"more than a program may take ({SHARED_LIMIT})")
    if x.data_ptr() % 16:
        return "an input TMA cannot address (not 16-byte aligned)"
    return None


def _descriptor(t, box_rows):
    flat = t.view(-1, BOX_COLS)
    dtype = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16,
             torch.float32: gl.float32}[t.dtype]
    layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=dtype.primitive_bitwidth,
                                  rank=2)
    return GLUON.TensorDescriptor.from_tensor(flat, [box_rows, BOX_COLS], layout)


def forward(op, x, y, g=None, rstd=None, eps=0.0, box_rows=32, slots=12, warps=8,
            programs=None):
    """y (like x) = softmax or RMSNorm (op) of contiguous x's rows by rows_resident_kernel;
    RMSNorm takes g (its row's length) and stores each row's rstd (fp32) in `rstd`. One program
    per SM on a GPU (`programs` to choose; two on the CPU)."""
    if op not in OPS:
        raise ValueError(f"rows_gluon.forward: op {op!r} is not one of {OPS}")
    problem = rows_problem(x, box_rows, slots) or (
        y.shape != x.shape or y.dtype != x.dtype or not y.is_contiguous()) and (
        "y is not a contiguous tensor of x's shape and dtype")
    if problem:
        raise ValueError(f"rows_gluon.forward: cannot take these inputs: {problem}")
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    if n_rows == 0:
        return y
    if op == "rmsnorm" and (g is None or rstd is None):
        raise ValueError("rows_gluon.forward: RMSNorm needs g and rstd")
    programs = min(n_rows, programs or (sm_count(x.get_device()) if x.is_cuda else 2))
    rows_resident_kernel[(programs,)](
        _descriptor(x, box_rows), _descriptor(y, box_rows), x if g is None else g,
        y if rstd is None else rstd, n_rows, n_cols, float(eps), OP=op,
        CHUNKS=n_cols // (box_rows * BOX_COLS), BOX_ROWS=box_rows, SLOTS=slots, WARPS=warps,
        num_warps=warps)
    return y
