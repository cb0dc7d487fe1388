"""Reductions and scans along a block axis: sum, max, min, argmax, argmin, cumsum, reduce.

Types follow Triton's standard library: `sum` of ints narrower than 32 bits accumulates in
(u)int32, floats are not widened (an fp16 sum adds in fp16, rounding at every step, as on the
GPU); `max`/`min` of fp16/bf16 return fp32 and of narrow ints return int32, and order -0.0
below +0.0 like the GPU's max.f32/min.f32; arg-reductions return int32 indices, ties broken
toward the lowest index, and need an axis (Triton 3.6 refuses axis=None). `cumsum` widens ints
below 32 bits to (u)int32, `cumprod` keeps every int type (wrapping); both scan bf16 in fp32.

Float sums and products, `reduce` and the scans combine in the GPU's order (Triton 3.6,
ReduceOpToLLVM/ScanOpToLLVM; docs/numerics.md, "Reductions and scans: the GPU's order"). The
block is spread over the num_warps * 32 threads of a program by Triton's blocked layout
(`blocked_layout`): along an axis of n elements, thread (warp w, lane t) holds the
`R x S` elements ((r * W + w) * T + t) * S + j. A reduction folds each thread's elements in
that order, combines the lanes in a butterfly (shfl.xor T/2, ..., 2, 1) and then the warps
(through shared memory, again a butterfly); `fold_in_gpu_order`. A scan scans each thread's
S elements, the lanes' totals by Hillis-Steele (shfl.up 1, 2, 4, ...), folds the (r, w)
totals in order and adds the carries; `scan_in_gpu_order`. Integer sums and scans wrap, so
any order gives the GPU's bits: NumPy's is used. Where the GPU fuses a float32 product into
the first add that takes it (`tl.sum(x * y)`), so does the model.

The layout is the one the reduced values were made in (`tensor.layout`, core.py): a load's
blocked layout for its element width, kept through casts and element-wise operations (so the
fp32 sum of `x.to(tl.float32)`, x an fp16 load, takes the fp16 load's 8 elements per thread), or
the MMA accumulator's layout of a tensor-core `tl.dot`'s result and of what is computed from it
element by element (`mma_layout`, `mma_bases`: wgmma's or mma.sync's registers, lanes and
warps): `fold_in_mma_order` folds each thread's registers in their order, then the butterflies
run over the lanes and warps that move along the axis. A block of no known layout (made by
reshape, trans, broadcast...) takes the blocked layout of its own element width. A scan does not
read the record: Triton gives it the layout of the store that takes its result (a scan of an
MMA block is converted to it), which is the scanned type's where it is stored as it is; so
`scan_in_gpu_order` lays the block out by the scanned element width.

Length: over 600 lines because the GPU's orders (the blocked and MMA layouts, the butterflies,
the scans' carries) and the reductions that follow them are one model; apart, each half would
only be read with the other.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import types as _t
from ..context import active
from ..errors import CompilationError
from ..types import _unwrap
from .arith import _expand, _finish, _fusing, fma_exact
from .core import (_convert, cast, compute_array, join_layouts, tensor, tensor_member,
                   to_tensor)
from .glayouts import sliced_glayout
from .shape import expand_dims

THREADS_PER_WARP = 32
VECTOR_BITS = 128  # the widest load a thread issues: 16 bytes


def _axis(x, axis):
    axis = _unwrap(axis)
    rank = len(x.shape)
    if axis is None:
        return None
    if not isinstance(axis, (int, np.integer)) or not -rank <= axis < builtins.max(rank, 1):
        raise CompilationError(f"invalid axis {axis} for a tensor of shape {x.shape}")
    if rank == 0:
        raise CompilationError("cannot reduce a scalar")
    return int(axis) % rank


# ----- the GPU's layout and order


def launch_num_warps():
    """The launch's num_warps (Triton's default, 4, outside a launch or when not given)."""
    ctx = active()
    return int((ctx.record.options.get("num_warps") if ctx is not None else None) or 4)


def blocked_layout(shape, bits, num_warps):
    """(sizePerThread, threadsPerWarp, warpsPerCTA) of the layout Triton gives a block of
    `shape` whose elements of `bits` bits were loaded from rows contiguous along the last
    dim, at addresses proven 16-byte aligned: the coalesce pass gives each thread
    min(128 bits, the last dim, elements / threads) consecutive elements, then
    BlockedEncodingAttr::get spreads lanes and warps over the dims, the last one first."""
    rank = len(shape)
    threads = THREADS_PER_WARP * num_warps
    numel = math.prod(shape)
    vec = builtins.min(builtins.max(VECTOR_BITS // bits, 1), shape[-1],
                       builtins.max(numel // threads, 1))
    spt = [1] * (rank - 1) + [vec]
    tpw, wpc = [1] * rank, [1] * rank
    lanes, warps = THREADS_PER_WARP, num_warps
    for d in range(rank - 1, 0, -1):
        per_cta = builtins.min(threads, builtins.max(1, shape[d] // spt[d]))
        tpw[d] = builtins.min(per_cta, lanes)
        wpc[d] = builtins.min(builtins.max(per_cta // tpw[d], 1), warps)
        lanes, warps, threads = lanes // tpw[d], warps // wpc[d], threads // per_cta
    tpw[0], wpc[0] = lanes, warps
    return spt, tpw, wpc


def _split(n, spt, tpw, wpc):
    """(R, W, T, S) along an axis of n elements: the threads that hold distinct elements (a
    block smaller than the layout is replicated over the rest) and each one's R x S."""
    s = builtins.min(spt, n)
    t = builtins.min(tpw, n // s)
    w = builtins.min(wpc, n // (s * t))
    return n // (s * t * w), w, t, s


def axis_geometry(shape, axis, bits, num_warps):
    """(R, W, T, S) of the threads along `axis` of a block (see the module's docstring)."""
    spt, tpw, wpc = blocked_layout(shape, bits, num_warps)
    return _split(shape[axis], spt[axis], tpw[axis], wpc[axis])


def register_order(shape, bits, num_warps):
    """(W, T, K) flat indices of the elements each thread (warp, lane) holds, in its register
    order (its sizePerThread elements, then the repetitions; the last dim fastest): what a
    reduction over the whole block (axis=None, a reshape that keeps every thread's registers)
    folds, before the butterflies over lanes and warps."""
    spt, tpw, wpc = blocked_layout(shape, bits, num_warps)
    geo = [_split(n, *layout) for n, layout in zip(shape, zip(spt, tpw, wpc))]
    rank = len(shape)
    # one axis per (dim, role), roles grouped: warps, lanes, repetitions, sizePerThread
    sizes = [g[role] for role in (1, 2, 0, 3) for g in geo]
    grid = np.indices(sizes, sparse=True)
    flat = 0
    for d, (r_, w_, t_, s_) in enumerate(geo):
        w, t, r, j = (grid[role * rank + d] for role in range(4))
        flat = flat * shape[d] + ((r * w_ + w) * t_ + t) * s_ + j
    n_w, n_t = int(np.prod(sizes[:rank])), int(np.prod(sizes[rank:2 * rank]))
    return np.broadcast_to(flat, sizes).reshape(n_w, n_t, -1)


def _threads_view(a, axis, geometry):
    """A (lanes, *block) array as (its last `geometry` factor, lanes, *other dims, the other
    factors): the block `axis` split into `geometry` (e.g. R, W, T, S), the last factor (a
    thread's consecutive elements) first, so that each of them is one contiguous array."""
    a = np.moveaxis(a, axis + 1, -1)
    a = a.reshape(a.shape[:-1] + tuple(geometry))
    return np.ascontiguousarray(np.moveaxis(a, -1, 0))


def _halve(acc, combine, axis, fused=None):
    """The butterfly over `axis` (-1 lanes, -2 warps) as lane 0 sees it: at distance d, lane
    t < d combines its own value with lane t + d's. `fused(own, other)` takes the first step
    where the own value is still an unrounded product."""
    size = acc[0].shape[axis]
    while size > 1:
        size //= 2
        cut = (slice(None),) * (acc[0].ndim + axis) + (slice(0, size),)
        rest = (slice(None),) * (acc[0].ndim + axis) + (slice(size, 2 * size),)
        own, other = [a[cut] for a in acc], [a[rest] for a in acc]
        acc = fused(own, other) if fused is not None else combine(own, other)
        fused = None
    return acc


def fold_in_gpu_order(arrays, shape, axis, bits, combine, exact=None, fma=None, mma=False,
                      num_warps=None):
    """Reduce (lanes, *shape) arrays (one per operand of a tuple reduction) along block
    `axis` (None: all of it) in the GPU's order; `combine(a, b)` takes and returns lists of
    arrays. `exact`: the unrounded values of a product that the GPU fuses into the first add
    taking each element, `fma(a, exact)` that add (LLVM's contraction: of two products, the
    first operand's, the running value's). `mma`: the block is a tensor-core dot's result, in
    the MMA layout (`fold_in_mma_order`); `num_warps`: the launch's unless given. Returns
    (lanes, *other dims) arrays."""
    warps = num_warps or launch_num_warps()
    if mma:
        return fold_in_mma_order(arrays, shape, axis, combine, warps)
    if axis is None and len(shape) > 1:
        idx = register_order(shape, bits, warps)  # (W, T, K)

        def regs(a):  # (K, lanes, W, T)
            return np.ascontiguousarray(np.moveaxis(a.reshape(a.shape[0], -1)[:, idx], -1, 0))
    else:
        reps, w_, t_, s_ = axis_geometry(shape, axis or 0, bits, warps)

        def regs(a):  # R * S views (lanes, *other dims, W, T): a thread's registers in order
            a = np.moveaxis(a, axis + 1 if axis else 1, -1)
            a = np.moveaxis(a.reshape(a.shape[:-1] + (reps, w_, t_, s_)), (-4, -1), (0, 1))
            return [a[r, k] for r in range(reps) for k in range(s_)]  # no reordered copy
    views = [regs(a) for a in arrays]
    exact = None if exact is None else regs(exact)
    acc = [v[0] for v in views]
    for k in range(1, len(views[0])):
        if exact is None:
            acc = combine(acc, [v[k] for v in views])
        else:  # both operands are products at the first add: the first is fused
            acc = fma([views[0][1]], exact[0]) if k == 1 else fma(acc, exact[k])
    first = exact[0] if exact is not None and len(views[0]) == 1 else None
    acc = _halve(acc, combine, -1, None if first is None else (
        lambda own, other: fma(other, first[..., :own[0].shape[-1]])))
    acc = _halve(acc, combine, -2)
    return [a[..., 0, 0] for a in acc]


# ----- the MMA accumulator layout of a tensor-core dot's result (Triton 3.6 on Hopper)

_WGMMA_N = range(256, 7, -8)  # wgmma's instruction widths, the widest first


def mma_layout(shape, num_warps):
    """(version, warpsPerCTA, instruction N) of the MMA layout Triton 3.6 gives a tensor-core
    `tl.dot`'s (M, N) result on Hopper (AccelerateMatmul, BlockedToMMA): wgmma (version 3)
    where M is a multiple of 64 and num_warps of 4, its warps (4, 1) doubled along M while M
    is larger than 16 per warp, else along N, and the widest N that divides N and is at most
    N / (num_warps / (M / 16)); otherwise mma.sync (version 2, 16 x 8 tiles), its warps
    doubled along whichever of M / 16 and N / 8 repeats more (M on a tie). (A dot whose result
    feeds another dot gets all warps along M with wgmma: not modelled.)"""
    m, n = shape
    if m % 64 == 0 and n % 8 == 0 and num_warps % 4 == 0:
        most = builtins.max(n // builtins.max(num_warps // builtins.max(m // 16, 1), 1), 8)
        instr_n = next(w for w in _WGMMA_N if n % w == 0 and w <= most)
        warps = [4, 1]
        while warps[0] * warps[1] < num_warps:
            warps[0 if m > 16 * warps[0] else 1] *= 2
        return 3, warps, instr_n
    reps, warps = [-(-m // 16), -(-n // 8)], [1, 1]
    while warps[0] * warps[1] < num_warps:
        if reps[0] >= reps[1]:
            warps[0] *= 2
            reps[0] = builtins.max(reps[0] // 2, 1)
        else:
            warps[1] *= 2
            reps[1] //= 2
    return 2, warps, 8


def _log2(n):
    return int(n).bit_length() - 1


def mma_bases(shape, num_warps):
    """The MMA layout of an (M, N) dot result as a linear layout: the (row, col) offsets that
    each bit of a thread's register index, of its lane and of its warp adds. Registers: col +1,
    row +8, then col +8, +16, ... across the instruction's N, then the repetitions over N and
    then over M; lanes: col +2, +4, row +1, +2, +4; warps: along M first for wgmma, along N
    first for mma.sync. Offsets past the block are 0 (those threads hold copies)."""
    version, (wm, wn), tile_n = mma_layout(shape, num_warps)
    m, n = shape
    reg = [(0, 1), (8, 0)] + [(0, 8 << i) for i in range(_log2(tile_n // 8))]
    reg += [(0, tile_n * wn << i) for i in range(_log2(builtins.max(n // (tile_n * wn), 1)))]
    reg += [(16 * wm << i, 0) for i in range(_log2(builtins.max(m // (16 * wm), 1)))]
    lane = [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]
    along_m = [(16 << i, 0) for i in range(_log2(wm))]
    along_n = [(0, tile_n << i) for i in range(_log2(wn))]
    warp = along_m + along_n if version == 3 else along_n + along_m

    def inside(bases):
        return [(r if r < m else 0, c if c < n else 0) for r, c in bases]
    return inside(reg), inside(lane), inside(warp)


def _span(bases):
    """(2**len(bases), 2) offsets of every combination of the bases (bit i: bases[i])."""
    out = np.zeros((1 << len(bases), 2), np.int64)
    for i, b in enumerate(bases):
        out ^= ((np.arange(len(out)) >> i) & 1)[:, None] * np.array(b, np.int64)
    return out


def _bit_view(a, n, groups):
    """(lanes, M, N) `a` as a contiguous (lanes, 2**len(g) for g in groups) array: each group
    of bases (lists of (row, col) offsets, bit i of the group's index adding bases[i]) one
    axis. The layout permutes the bits of the element index (a zero base repeats the same
    elements), so this is one strided copy."""
    a = np.ascontiguousarray(a).reshape(a.shape[0], -1)

    def axes(bases):  # (size, stride) of each bit, the highest first, runs of bits merged
        out = []
        for r, c in reversed(bases):
            stride = (r * n + c) * a.itemsize
            if out and stride and out[-1][1] == 2 * stride:
                out[-1] = (2 * out[-1][0], stride)
            else:
                out.append((2, stride))
        return out
    dims = [(a.shape[0], a.strides[0])] + [d for g in groups for d in axes(g)]
    view = np.lib.stride_tricks.as_strided(a, [d[0] for d in dims], [d[1] for d in dims],
                                           writeable=False)
    return np.ascontiguousarray(view).reshape((a.shape[0],) + tuple(1 << len(g) for g in groups))


def fold_in_mma_order(arrays, shape, axis, combine, num_warps):
    """`fold_in_gpu_order` for a block in the MMA layout (`mma_bases`), as ReduceOpToLLVM runs
    it: each thread folds, per output, the registers holding it in register order; then every
    lane combines with lane t ^ 2**b, for the lane bits b that move along the axis from the
    highest down; then the warps, through shared memory, alike. axis=None reshapes the block
    keeping each thread's registers: all of them fold, then all lanes and warps. The result
    is the one of lane 0 and warp 0 along the axis (a non-commutative combine, whose lanes
    disagree, may be stored from another lane)."""
    reg, lane, warp = mma_bases(shape, num_warps)
    reg = [b for b in reg if any(b)]  # (copies in registers are not folded twice)

    def moves(b):
        return any(b) if axis is None else b[axis] != 0
    along = [b for b in reg if moves(b)]  # in register order
    rest = [b for b in reg if not moves(b)]
    views = [_bit_view(a, shape[1], (along, rest, warp, lane)) for a in arrays]  # (., K, G, W, T)
    acc = [v[:, 0] for v in views]
    for k in range(1, views[0].shape[1]):
        acc = combine(acc, [v[:, k] for v in views])
    for bases, at in ((lane, -1), (warp, -2)):
        for b in reversed([i for i, base in enumerate(bases) if moves(base)]):
            partner = np.arange(acc[0].shape[at]) ^ (1 << b)
            acc = combine(acc, [np.take(a, partner, axis=at) for a in acc])
    if axis is None:
        return [a[:, 0, 0, 0] for a in acc]

    def first(bases):  # the lanes or warps at position 0 along the axis, not copies
        ids = np.arange(1 << len(bases))
        return np.all([(ids >> i) & 1 == 0 for i, base in enumerate(bases)
                       if moves(base) or not any(base)] + [ids >= 0], axis=0)
    chosen = first(warp)[:, None] & first(lane)  # (W, T): one thread per output
    keep = 1 - axis
    where = _span(rest)[:, None, None] ^ _span(warp)[:, None] ^ _span(lane)  # (G, W, T, 2)
    out_index = where[..., keep][:, chosen].reshape(-1)
    outs = []
    for a in acc:
        o = np.empty((a.shape[0], shape[keep]), a.dtype)
        o[:, out_index] = a[:, :, chosen].reshape(a.shape[0], -1)
        outs.append(o)
    return outs


def scan_in_gpu_order(arrays, shape, axis, bits, combine, reverse=False, exact=None, fma=None):
    """Inclusive scans of (lanes, *shape) arrays along block `axis` in the GPU's order, for
    the chunks k = r * W + w of T lanes of S elements: each thread scans its S elements; the
    lanes scan their totals by Hillis-Steele (lane t takes lane t - d's, d = 1, 2, 4...); the
    chunks' totals are folded in order into each chunk's carry; a thread's last element is
    combine(carry, its lane prefix), its others combine(the previous lane's last element, or
    for lane 0 the carry, own prefix). `combine(earlier, later)` takes and returns lists of
    arrays. A reverse scan is the forward scan of the flipped block. `exact`, `fma`: as in
    `fold_in_gpu_order`, but in the first repetition (r = 0) of the first two products the
    second is fused (the first has more uses: it is also the block's first element)."""
    reps, warps, lanes, regs = axis_geometry(shape, axis, bits, launch_num_warps())
    chunks = reps * warps
    geometry = (chunks, lanes, regs)
    flip = (lambda a: np.flip(a, axis + 1)) if reverse else (lambda a: a)
    views = [_threads_view(flip(a), axis, geometry) for a in arrays]  # (S, ..., K, T)
    if exact is not None:
        exact = _threads_view(flip(exact), axis, geometry)
    prefixes = [[v[0] for v in views]]  # within each thread: elements 0..j
    for j in range(1, regs):
        if exact is None:
            prefixes.append(combine(prefixes[-1], [v[j] for v in views]))
        elif j == 1:  # two products: the second is fused where the first is also an output
            second = fma(prefixes[-1], exact[1])[0]  # (the block's first: repetition 0)
            first = fma([views[0][1]], exact[0])[0]
            second[..., warps:, :] = first[..., warps:, :]
            prefixes.append([second])
        else:
            prefixes.append(fma(prefixes[-1], exact[j]))
    own = exact[0] if exact is not None and regs == 1 else None  # a total still a product
    last = prefixes[-1]
    d = 1
    while d < lanes:  # across the lanes
        earlier = [a[..., :-d] for a in last]
        later = (combine(earlier, [a[..., d:] for a in last]) if own is None
                 else fma(earlier, own[..., d:]))
        last, own = [np.concatenate([a[..., :d], b], axis=-1) for a, b in zip(last, later)], None
        d *= 2
    carry = None
    if chunks > 1 and own is not None and warps == 1:
        # one lane, one element a chunk, all in one thread: each chunk's product is fused
        # into the previous chunk's result (its carry)
        done = [last[0][..., :1, :]]
        for k in range(1, chunks):
            done.append(fma([done[-1]], own[..., k:k + 1, :])[0])
        last = [np.concatenate(done, axis=-2)]
    elif chunks > 1:  # across the chunks: carry[k - 1] for chunk k
        folded = [[a[..., 0, -1] for a in last]]
        for k in range(1, chunks - 1):
            folded.append(combine(folded[-1], [a[..., k, -1] for a in last]))
        carry = [np.stack([f[i] for f in folded], axis=-1)[..., None] for i in range(len(last))]
        wide = [np.broadcast_to(c, a[..., 1:, :].shape) for c, a in zip(carry, last)]
        later = (combine(wide, [a[..., 1:, :] for a in last]) if own is None
                 else fma(wide, own[..., 1:, :]))
        last = [np.concatenate([a[..., :1, :], b], axis=-2) for a, b in zip(last, later)]
    out = [[] for _ in last]  # per operand, its S elements' (..., K, T) arrays
    if regs > 1:
        before = []  # each thread's prefix: the previous lane's last, lane 0's the carry
        for i, a in enumerate(last):
            lane0 = a[..., :1, :1]  # (the block's first thread has none: left as it is)
            if carry is not None:
                lane0 = np.concatenate([lane0, carry[i]], axis=-2)
            before.append(np.concatenate([lane0, a[..., :-1]], axis=-1))
        for j in range(regs - 1):
            mine = prefixes[j]
            done = (fma(before, exact[0]) if exact is not None and j == 0 else
                    combine(before, mine))
            for i, (c, m) in enumerate(zip(done, mine)):
                c = c if c.flags.writeable else c.copy()
                c[..., 0, 0] = m[..., 0, 0]
                out[i].append(c)
    for i, a in enumerate(last):
        out[i].append(a)
    return [flip(np.moveaxis(np.stack(o, axis=-1).reshape(o[0].shape[:-2] + (shape[axis],)),
                             -1, axis + 1)) for o in out]


def _round_to_fp16(a):
    """float32 values rounded to fp16 (to nearest even), kept in float32: `astype(float16)`
    and back, in integer operations (twice as fast: a reduction rounds at every step)."""
    u = a.view(np.uint32)
    r = u + ((u >> np.uint32(13)) & np.uint32(1))
    r += np.uint32(0x0FFF)
    r &= np.uint32(0xFFFFE000)  # 10 mantissa bits left, a carry bumps the exponent
    r = r.view(np.float32)
    mag = np.abs(a)
    if not mag.max(initial=0) <= 65504:  # beyond fp16's range: inf; NaN stays NaN
        r = np.where(np.isnan(a), a,
                     np.where(np.abs(r) > 65504, np.copysign(np.float32(np.inf), a), r))
    tiny = mag < np.float32(2.0 ** -14)
    if tiny.any():  # subnormal in fp16: a multiple of 2**-24
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.where(tiny, np.rint(a * np.float32(2.0 ** 24)) * np.float32(2.0 ** -24), r)
    return r


def _round_to_bf16(a):
    """float32 values rounded to bf16 (to nearest even), kept in float32."""
    u = a.view(np.uint32)
    r = u + ((u >> np.uint32(16)) & np.uint32(1))
    r += np.uint32(0x7FFF)
    r &= np.uint32(0xFFFF0000)
    return np.where(np.isnan(a), a, r.view(np.float32))


def _rounding(ty):
    """float32 -> float32 rounded to `ty` (fp16, bf16, fp8), or None for the wide types."""
    if ty == _t.float16:
        return _round_to_fp16
    if ty == _t.bfloat16:
        return _round_to_bf16
    if ty.is_floating() and ty.primitive_bitwidth < 32:
        return lambda a: a.astype(ty.np).astype(np.float32)
    return None


def _arithmetic(ufunc, ty):
    """combine(a, b) for a float sum or product in `ty`: one operation, rounded to `ty`."""
    rnd = _rounding(ty)
    if rnd is None:
        return lambda a, b: [ufunc(a[0], b[0])]
    return lambda a, b: [rnd(ufunc(a[0], b[0]))]


def _dtype_name(t):
    """`tl.<name>` of a dtype, as a kernel spells it."""
    return next((f"tl.{n}" for n in ("bfloat16", "float16", "float32", "float64", "int8", "int16",
                                     "int32", "int64", "uint8", "uint16", "uint32", "uint64")
                 if getattr(_t, n, None) == t), str(t))


def _user_combine(fn, dtypes, what):
    """combine(a, b) calling the kernel's @jit `fn(*a, *b)` on blocks of these types."""
    def combine(a, b):
        block = list(a[0].shape[1:])
        out = fn(*(tensor(v, t, block) for v, t in zip(list(a) + list(b), dtypes + dtypes)))
        out = out if isinstance(out, tuple) else (out,)
        out = [to_tensor(_unwrap(o)) for o in out]
        if len(out) != len(dtypes):  # Triton's message: the verifier of tt.reduce / tt.scan
            raise CompilationError(f"expected combine operation to return {len(dtypes)} values "
                                   f"but got {len(out)}: the {what}'s combine_fn must return "
                                   f"one value per input")
        for i, (o, t) in enumerate(zip(out, dtypes)):
            if o.dtype != t:
                raise CompilationError(
                    f"type mismatch on combine operation. Expected argument {i} to have type {t} "
                    f"but got {o.dtype}: the {what}'s combine_fn must return its inputs' types "
                    f"(tl.maximum/tl.minimum of bf16 return fp32, for one): cast the result "
                    f"back, e.g. `.to({_dtype_name(t)})`, or {what} an fp32 copy of the input")
        return [np.broadcast_to(o.data, a[0].shape) for o in out]
    return combine


def _product_of(x):
    """(exact, fma) for a float32 product `x` whose multiplications the GPU fuses into the adds
    of a sum or scan of it, else (None, None): `exact` its float64 value broadcast to
    (lanes, *block), `fma(a, exact)` the fused add, rounded once. (fp16 and bf16 products are
    multiplied in f16x2/bf16x2 pairs, whose contraction depends on how LLVM packs them: not
    modelled; docs/numerics.md.)"""
    if x.fused is None or not x.shape or x.dtype != _t.float32 or not _fusing(x.dtype):
        return None, None
    f, g = x.fused  # fp32 factors: their product is exact in float64
    exact = np.broadcast_to(_expand(f.astype(np.float64) * g, x, len(x.shape)), x.data.shape)
    return exact, lambda acc, e: [fma_exact(e, 1.0, acc[0], _t.float32).astype(np.float32)]


# ----- the operations


def _reduction_layout(xs):
    """(bits, mma) of the layout the GPU reduces the operands `xs` in (one layout for all of
    them): the layout their values were made in (core.py, `tensor.layout`: a load's blocked
    layout, kept through casts and element-wise operations, or a tensor-core dot's MMA layout),
    else the blocked layout of the first operand's own element width. `bits`: the element
    width whose blocked layout it is; `mma`: the block is in the MMA layout of a 2-D dot's
    result of its shape."""
    layout = None
    for x in xs:
        layout = join_layouts(layout, x.layout)
    if type(layout) is tuple:
        if len(xs[0].shape) == 2 and layout[1:] == tuple(xs[0].shape):
            return None, True
        layout = None
    return (xs[0].dtype.primitive_bitwidth if layout is None else layout), False


def _reduce(x, axis, keep_dims, fn, out_dtype, kind=None):
    """fn(data, ax) -> (lanes, *result) of a (lanes, *block) array, ax None for all of it."""
    x = to_tensor(_unwrap(x))
    ax = _axis(x, axis)
    keep = bool(_unwrap(keep_dims))
    with np.errstate(all="ignore"):
        out = np.asarray(fn(compute_array(x), ax))
    shape = [] if ax is None else [n for d, n in enumerate(x.shape) if d != ax]
    if keep:
        shape = [1] * len(x.shape) if ax is None else list(x.shape[:ax]) + [1] + shape[ax:]
    out = out.reshape((out.shape[0], *shape))
    if out.dtype != out_dtype.np:
        out = _convert(out, out_dtype)
    result = tensor(out, out_dtype, shape)
    if x.glayout is not None and ax is not None:  # Gluon: the reduced axis sliced away
        result.glayout = x.glayout if keep else sliced_glayout(x.glayout, ax)
    if kind is not None:
        ctx = active()
        for hook in (ctx.hooks["on_reduce"] if ctx is not None else ()):
            result = hook(x, ax, kind, result)
    return result


def _unordered(ufunc):
    """fn for `_reduce` of an operation whose result does not depend on the order."""
    return lambda a, ax: ufunc(a.reshape(a.shape[0], -1) if ax is None else a,
                               axis=1 if ax is None else ax + 1)


@tensor_member
def sum(input, axis=None, keep_dims=False, dtype=None):  # noqa: A001 - Triton's name
    x = to_tensor(_unwrap(input))
    dtype = _unwrap(dtype)
    bits, mma = _reduction_layout([x])  # the block's, before the cast to `dtype`
    if dtype is None:
        dtype = x.dtype
        if x.dtype.is_int() and x.dtype.int_bitwidth < 32:
            dtype = _t.int32 if x.dtype.is_int_signed() else _t.uint32
    exact, fma = _product_of(x) if dtype == x.dtype else (None, None)
    x = cast(x, dtype)
    if not dtype.is_floating():
        return _reduce(x, axis, keep_dims, _unordered(np.add.reduce), dtype, "sum")
    add = _arithmetic(np.add, dtype)

    def fn(a, ax):
        return fold_in_gpu_order([a], x.shape, ax, bits, add, exact, fma, mma)[0]
    return _reduce(x, axis, keep_dims, fn, dtype, "sum")


def _widen_for_minmax(x):
    if x.dtype.primitive_bitwidth < 32:
        return cast(x, _t.float32 if x.dtype.is_floating() else _t.int32)
    return x


def _signed_zeros(fn, is_max):
    """fn for `_reduce` of fmax/fmin with the GPU's zeros: max.f32/min.f32 order -0.0 below
    +0.0 (IEEE 754-2019 maximumNumber/minimumNumber), so a max over -0.0 and +0.0 is +0.0
    and a min -0.0, in any order; NumPy's fmax/fmin keep whichever zero came first."""
    def signed(a, ax):
        out = fn(a, ax)
        preferred = (a == 0) & (np.signbit(a) != is_max)  # +0.0 for max, -0.0 for min
        any_preferred = np.any(preferred.reshape(a.shape[0], -1) if ax is None else preferred,
                               axis=1 if ax is None else ax + 1)
        zero = np.where(any_preferred, 0.0 if is_max else -0.0,
                        -0.0 if is_max else 0.0).astype(out.dtype)
        return np.where(out == 0, zero, out)
    return signed


def _minmax(np_fn, arg_fn, name):
    def op(input, axis=None, return_indices=False, return_indices_tie_break_left=True,
           keep_dims=False):
        x = to_tensor(_unwrap(input))
        if _unwrap(return_indices):
            values = op(x, axis, keep_dims=keep_dims)
            return values, _arg(x, axis, keep_dims, arg_fn)
        x = _widen_for_minmax(x)
        fn = _unordered(np_fn.reduce)
        if x.dtype.is_floating():
            fn = _signed_zeros(fn, np_fn is np.fmax)
        return _reduce(x, axis, keep_dims, fn, x.dtype, name)
    op.__name__ = name
    return tensor_member(op)


def _arg(x, axis, keep_dims, arg_fn):
    x = to_tensor(_unwrap(x))
    if _unwrap(axis) is None:
        what = "argmax" if arg_fn is np.argmax else "argmin"
        raise CompilationError(
            f"{what} (or max/min with return_indices=True) needs an axis: Triton 3.6 refuses "
            f"axis=None (`_reduce_with_indices` indexes `input.shape[axis]`: TypeError: list "
            f"indices must be integers or slices, not NoneType); pass axis=0, after "
            f"`tl.reshape(x, [x.numel])` to take the index over the whole block")

    def fn(a, ax):
        if a.dtype.kind == "f":
            a = np.where(np.isnan(a), -np.inf if arg_fn is np.argmax else np.inf, a)
        return arg_fn(a.reshape(a.shape[0], -1) if ax is None else a,
                      axis=1 if ax is None else ax + 1)
    return _reduce(x, axis, keep_dims, fn, _t.int32, "max" if arg_fn is np.argmax else "min")


max = _minmax(np.fmax, np.argmax, "max")  # noqa: A001
min = _minmax(np.fmin, np.argmin, "min")  # noqa: A001


@tensor_member
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    return _arg(input, axis, keep_dims, np.argmax)


@tensor_member
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    return _arg(input, axis, keep_dims, np.argmin)


@tensor_member
def xor_sum(input, axis=None, keep_dims=False):
    x = to_tensor(_unwrap(input))
    if not x.dtype.is_int():
        raise CompilationError("xor_sum only supported for integers")
    return _reduce(x, axis, keep_dims, _unordered(np.bitwise_xor.reduce), x.dtype)


@tensor_member
def reduce_or(input, axis, keep_dims=False):
    x = to_tensor(_unwrap(input))
    if not x.dtype.is_int():
        raise CompilationError("reduce_or only supported for integers")
    return _reduce(x, axis, keep_dims, _unordered(np.bitwise_or.reduce), x.dtype)


def _scan_impl(ufunc, input, axis, reverse, dtype):
    """A cumsum (np.add) or cumprod (np.multiply) of `input` after Triton's type rules: bf16
    is scanned in fp32 (`_promote_bfloat16_to_float32`), then cast to `dtype` if given."""
    x = to_tensor(_unwrap(input))
    bits = x.dtype.primitive_bitwidth
    exact, fma = (None, None)
    if ufunc is np.add and dtype is None:
        exact, fma = _product_of(x)
    if x.dtype == _t.bfloat16:
        x, exact, fma = cast(x, _t.float32), None, None
    if dtype is not None:
        x = cast(x, dtype)
    if not x.shape:
        raise CompilationError("cannot scan a scalar")
    ax = _axis(x, axis)
    data = compute_array(x)
    with np.errstate(all="ignore"):
        if not x.dtype.is_floating():  # wrapping integers: any order gives the same bits
            flip = (lambda a: np.flip(a, ax + 1)) if _unwrap(reverse) else (lambda a: a)
            out = flip(ufunc.accumulate(flip(data), axis=ax + 1, dtype=data.dtype))
        else:
            out = scan_in_gpu_order([data], x.shape, ax, bits, _arithmetic(ufunc, x.dtype),
                                    bool(_unwrap(reverse)), exact, fma)[0]
    return _finish(np.ascontiguousarray(out), x.dtype, x.shape)


@tensor_member
def cumsum(input, axis=0, reverse=False, dtype=None):
    """Inclusive sum along `axis`: bf16 in fp32, ints narrower than 32 bits in (u)int32
    (Triton's `_pick_sum_dtype`), wrapping."""
    dtype = _unwrap(dtype)
    if dtype is None:
        x = to_tensor(_unwrap(input))
        if x.dtype.is_int() and x.dtype.int_bitwidth < 32:
            dtype = _t.int32 if x.dtype.is_int_signed() else _t.uint32
    return _scan_impl(np.add, input, axis, reverse, dtype)


@tensor_member
def cumprod(input, axis=0, reverse=False):
    """Inclusive product along `axis`: bf16 in fp32; every other type, narrow ints too, keeps
    its own and wraps (Triton 3.6's cumprod takes no dtype and widens no int)."""
    return _scan_impl(np.multiply, input, axis, reverse, None)


@tensor_member
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduce one tensor or a tuple of tensors with the kernel's @jit `combine_fn(*a, *b)`, in
    the GPU's order (`fold_in_gpu_order`)."""
    single = not isinstance(input, tuple)
    xs = [to_tensor(_unwrap(v)) for v in ((input,) if single else input)]
    shape = xs[0].shape
    if any(x.shape != shape for x in xs):
        raise CompilationError("all reduce inputs must have the same shape")
    ax = _axis(xs[0], axis)
    if not shape:
        raise CompilationError("cannot reduce a scalar")
    lanes = builtins.max(x.data.shape[0] for x in xs)
    arrays = [np.broadcast_to(x.data, (lanes, *shape)) for x in xs]
    dtypes = [x.dtype for x in xs]
    bits, mma = _reduction_layout(xs)
    out = fold_in_gpu_order(arrays, shape, ax, bits,
                            _user_combine(combine_fn, dtypes, "reduction"), mma=mma)
    rest = [] if ax is None else [n for d, n in enumerate(shape) if d != ax]
    result = []
    for o, t in zip(out, dtypes):
        r = tensor(np.ascontiguousarray(o).reshape((lanes, *rest)), t, rest)
        if _unwrap(keep_dims):  # as Triton: a reduction over all of a block keeps one dim
            r = expand_dims(r, 0 if ax is None else ax)
        result.append(r)
    return result[0] if single else tuple(result)
