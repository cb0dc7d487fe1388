"""Reductions and scans combine in the GPU's order (docs/numerics.md, "Reductions and scans: the
GPU's order"): checked here against a thread-by-thread replay of the model, on inputs whose
result shows the order; against the H200's bits of the wider cases (num_warps 16 and 32, rows
up to 65536, reductions of dot results) that benchmarks/probes/reduce_order_wide.py measured,
committed as reduce_order_wide.npz; and, on a GPU, bit for bit against Triton with the kernels
of the probe that measured the model (benchmarks/probes/reduce_order.py)."""
import importlib
import zlib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import minitriton
import minitriton.language as tl
from corpus import PATH, load

order = importlib.import_module("minitriton.language.reduce")  # the module, not tl.reduce
PROBE = PATH.parents[3] / "benchmarks" / "probes" / "reduce_order.py"
NUMPY = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
         "int16": np.int16, "int32": np.int32}


# ----- the model, replayed one thread at a time


def replay_fold(values, geometry, combine):
    """A reduction as the GPU runs it: thread (w, t) folds its elements
    ((r * W + w) * T + t) * S + j in order, then every lane combines with lane t ^ d
    (d = T/2 .. 1), then every warp with warp w ^ d; lane 0 of warp 0 holds the result."""
    reps, warps, lanes, regs = geometry
    acc = {}
    for w in range(warps):
        for t in range(lanes):
            held = [values[((r * warps + w) * lanes + t) * regs + j]
                    for r in range(reps) for j in range(regs)]
            acc[w, t] = held[0]
            for v in held[1:]:
                acc[w, t] = combine(acc[w, t], v)
    for d, axis in [(1 << k, 1) for k in reversed(range(lanes.bit_length() - 1))] + \
            [(1 << k, 0) for k in reversed(range(warps.bit_length() - 1))]:
        acc = {(w, t): combine(acc[w, t], acc[(w ^ d, t) if axis == 0 else (w, t ^ d)])
               for (w, t) in acc}
    return acc[0, 0]


def replay_scan(values, geometry, combine):
    """An inclusive scan as the GPU runs it, chunk k = r * W + w, lane t, element j: each
    thread scans its S elements; lanes scan their totals (Hillis-Steele: lane t takes lane
    t - d's, d = 1, 2, 4...); the chunks' totals fold in order into each chunk's carry; the
    last element of a thread is combine(carry, lane prefix), the others combine(the previous
    lane's last element, or the carry for lane 0, the thread's own prefix)."""
    reps, warps, lanes, regs = geometry
    chunks = reps * warps
    pos = {(k, t, j): (k * lanes + t) * regs + j
           for k in range(chunks) for t in range(lanes) for j in range(regs)}
    own = {}
    for k in range(chunks):
        for t in range(lanes):
            for j in range(regs):
                v = values[pos[k, t, j]]
                own[k, t, j] = v if j == 0 else combine(own[k, t, j - 1], v)
    prefix = {(k, t): own[k, t, regs - 1] for k in range(chunks) for t in range(lanes)}
    d = 1
    while d < lanes:
        prefix = {(k, t): combine(prefix[k, t - d], prefix[k, t]) if t >= d else prefix[k, t]
                  for (k, t) in prefix}
        d *= 2
    carry, total = {}, None
    for k in range(chunks):
        carry[k] = total
        last = prefix[k, lanes - 1]
        total = last if total is None else combine(total, last)
    final = {(k, t): p if carry[k] is None else combine(carry[k], p)
             for (k, t), p in prefix.items()}
    out = [None] * len(values)
    for (k, t), f in final.items():
        out[pos[k, t, regs - 1]] = f
        before = final[k, t - 1] if t > 0 else carry[k]
        for j in range(regs - 1):
            out[pos[k, t, j]] = own[k, t, j] if before is None else combine(before, own[k, t, j])
    return out


def add_in(np_type):
    """One float add rounded to `np_type`, as the GPU's add.f16 / add.bf16 / add.f32."""
    return lambda a, b: np_type(np.float32(a) + np.float32(b))


def hash_int(a, b):
    """The kernels' `_hash` on int32: a * 31 + b, wrapping."""
    v = (int(a) * 31 + int(b)) & 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


# ----- kernels


@minitriton.jit
def _hash(a, b):
    return a * 31 + b  # neither commutative nor associative: the value names the order


@minitriton.jit
def reduce_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                  HASH: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    if HASH:
        x = x.to(tl.int32, bitcast=True)
    if AXIS == 0:
        out = tl.reduce(x, 0, _hash) if HASH else tl.sum(x, 0)
        tl.store(out_ptr + tl.arange(0, N), out)
    else:
        out = tl.reduce(x, 1, _hash) if HASH else tl.sum(x, 1)
        tl.store(out_ptr + tl.arange(0, M), out)


@minitriton.jit
def scan_kernel(x_ptr, sum_ptr, hash_ptr, M: tl.constexpr, N: tl.constexpr,
                AXIS: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(sum_ptr + offs, tl.cumsum(x, AXIS, reverse=REVERSE))
    tl.store(hash_ptr + offs,
             tl.associative_scan(x.to(tl.int32, bitcast=True), AXIS, _hash, reverse=REVERSE))


@minitriton.jit
def row_sum_kernel(x_ptr, out_ptr, N: tl.constexpr):
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + tl.arange(0, N))))


@minitriton.jit
def bf16_cumsum_kernel(x_ptr, out_ptr, N: tl.constexpr):
    y = tl.cumsum(tl.load(x_ptr + tl.arange(0, N)), 0)
    tl.static_assert(y.dtype == tl.float32)  # Triton scans bf16 in fp32
    tl.store(out_ptr + tl.arange(0, N), y)


@minitriton.jit
def _argmax(va, ia, vb, ib):
    right = (vb > va) | ((vb == va) & (ib < ia))
    return tl.where(right, vb, va), tl.where(right, ib, ia)


@minitriton.jit
def tuple_reduce_kernel(x_ptr, v_ptr, i_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    v, i = tl.reduce((tl.load(x_ptr + offs), offs), 0, _argmax)
    tl.store(v_ptr, v)
    tl.store(i_ptr, i)


def _values(shape, dtype, seed=0):
    """Values whose sums round at most steps: uniform mantissas over 2**-4 .. 2**4."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, shape) * 2.0 ** rng.integers(-4, 4, shape)
    return x.astype(dtype)


GEOMETRY_CASES = [  # (M, N, num_warps): 1 row, replicated blocks, many registers, warps on both
    (1, 16, 4), (1, 64, 1), (1, 256, 2), (1, 1024, 8), (1, 4096, 4), (2, 16, 1), (16, 2, 8),
    (4, 4, 1), (16, 16, 4), (8, 64, 2), (64, 8, 8), (4, 256, 4), (256, 4, 1), (32, 32, 2)]


@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("m,n,warps", GEOMETRY_CASES)
def test_reductions_follow_the_replayed_order(m, n, warps, axis):
    x = _values((m, n), np.float16, seed=m * n + warps)
    x32 = x.astype(np.float32)  # the hash runs on fp32 bits
    size = n if axis == 0 else m
    sums, hashes = np.empty(size, np.float16), np.empty(size, np.int32)
    reduce_kernel[(1,)](x, sums, M=m, N=n, AXIS=axis, HASH=False, num_warps=warps)
    reduce_kernel[(1,)](x32, hashes, M=m, N=n, AXIS=axis, HASH=True, num_warps=warps)
    g16 = order.axis_geometry([m, n], axis, 16, warps)
    g32 = order.axis_geometry([m, n], axis, 32, warps)
    want = [replay_fold(list(line), g16, add_in(np.float16)) for line in np.moveaxis(x, axis, -1)]
    np.testing.assert_array_equal(sums, np.array(want, np.float16))
    assert hashes.tolist() == [replay_fold(list(line), g32, hash_int)
                               for line in np.moveaxis(x32.view(np.int32), axis, -1)]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("m,n,warps", GEOMETRY_CASES)
def test_scans_follow_the_replayed_order(m, n, warps, axis, reverse):
    x = _values((m, n), np.float32, seed=m + n + warps)
    csum, chash = np.empty_like(x), np.empty((m, n), np.int32)
    scan_kernel[(1,)](x, csum, chash, M=m, N=n, AXIS=axis, REVERSE=reverse, num_warps=warps)
    geo = order.axis_geometry([m, n], axis, 32, warps)
    flip = (lambda a: a[::-1]) if reverse else (lambda a: a)
    for line, got_sum, got_hash, bits in zip(np.moveaxis(x, axis, -1),
                                             np.moveaxis(csum, axis, -1),
                                             np.moveaxis(chash, axis, -1),
                                             np.moveaxis(x.view(np.int32), axis, -1)):
        want = flip(replay_scan(flip(list(line)), geo, add_in(np.float32)))
        np.testing.assert_array_equal(got_sum, np.array(want, np.float32))
        assert got_hash.tolist() == flip(replay_scan(flip(list(bits)), geo, hash_int))


def test_an_fp16_sum_rounds_at_every_step_in_the_threads_order():
    """256 fp16 values, one warp: thread 0 holds x[0:8] = 1024, 0.25 * 7, and adds in fp16, so
    its 0.25s vanish (1024.25 rounds to 1024); the other 31 threads' 2.0 each survive the
    butterfly: 1024 + 62 = 1086, where the exact sum is 1087.75 (1088 in fp16)."""
    x = np.full(256, 0.25, np.float16)
    x[0] = 1024
    out = np.empty(1, np.float16)
    row_sum_kernel[(1,)](x, out, N=256, num_warps=1)
    assert out[0] == 1086
    for warps in (2, 4, 8):  # other threads per element, other roundings
        row_sum_kernel[(1,)](x, out, N=256, num_warps=warps)
        assert out[0] == replay_fold(list(x), order.axis_geometry([256], 0, 16, warps),
                                     add_in(np.float16))


def test_the_fast_roundings_are_numpys_casts():
    """The per-step roundings to fp16 and bf16 (integer operations) against astype, on float32
    bit patterns of every exponent: subnormals, overflow to inf, NaN, -0."""
    bits = (np.arange(0, 1 << 32, 997, dtype=np.uint64) & 0xFFFFFFFF).astype(np.uint32)
    a = bits.view(np.float32)
    for ty, np_type in ((tl.float16, np.float16), (tl.bfloat16, ml_dtypes.bfloat16)):
        with np.errstate(all="ignore"):
            want = a.astype(np_type).astype(np.float32)
        got = order._rounding(ty)(a)
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), a[~same][:5]


def test_the_layout_is_triton_36s():
    """sizePerThread, threadsPerWarp, warpsPerCTA as Triton 3.6 chose them on the H200
    (the probe's TTGIR): 128-bit vectors, capped by the elements per thread; lanes, then warps,
    along the last dim first."""
    cases = {((4096,), 16, 4): ([8], [32], [4]), ((1024,), 32, 4): ([4], [32], [4]),
             ((64,), 16, 4): ([1], [32], [4]), ((256,), 16, 2): ([4], [32], [2]),
             ((64, 64), 16, 4): ([1, 8], [4, 8], [4, 1]), ((64, 64), 32, 4): ([1, 4], [2, 16],
                                                                               [4, 1]),
             ((4, 256), 32, 1): ([1, 4], [1, 32], [1, 1]),
             ((16, 16), 32, 1): ([1, 4], [8, 4], [1, 1]), ((16, 2), 16, 8): ([1, 1], [16, 2],
                                                                             [8, 1]),
             ((4, 256), 128, 4): ([1, 1], [1, 32], [1, 4])}  # 128: an unaligned row stride
    for (shape, bits, warps), want in cases.items():
        assert order.blocked_layout(list(shape), bits, warps) == tuple(map(list, want))


def test_a_float32_product_is_fused_into_the_first_add_that_takes_it():
    """tl.sum(x * y) in fp32: thread-local adds are fmas (the first of the first two products
    fused), a thread holding one product fuses it into the first lane exchange."""
    kernel = load(minitriton, tl, PROBE).dot_kernel
    for n, warps in ((256, 1), (32, 1), (64, 4)):  # 8, 1 and 1 products per thread
        x, y = _values((8, n), np.float32, 1), _values((8, n), np.float32, 2)
        out = np.empty(8, np.float32)
        kernel[(8,)](x, y, out, M=1, N=n, AXIS=1, SCAN=False, num_warps=warps)
        exact = x.astype(np.float64) * y
        geo = order.axis_geometry([1, n], 1, 32, warps)
        want = [replay_fold([Product(p) for p in row], geo, fused_add).value for row in exact]
        np.testing.assert_array_equal(out, want)
        unfused = [replay_fold(list(row.astype(np.float32)), geo, add_in(np.float32))
                   for row in exact]
        assert (out != unfused).any()  # the fusion shows


class Product:
    """A product not yet rounded (the GPU may fuse it into the add that takes it)."""

    def __init__(self, exact):
        self.exact, self.value = exact, np.float32(exact)


class Sum:
    def __init__(self, value):
        self.value = np.float32(value)


def fused_add(a, b):
    """a + b as LLVM contracts it: a product operand (the first, where both are) is exact."""
    if isinstance(a, Product):
        return Sum(np.float64(a.exact) + np.float64(b.value))
    if isinstance(b, Product):
        return Sum(np.float64(a.value) + np.float64(b.exact))
    return Sum(np.float64(a.value) + np.float64(b.value))


def test_a_tuple_reduction_and_bf16_scans():
    x = _values(256, np.float32, 3)
    v, i = np.empty(1, np.float32), np.empty(1, np.int32)
    tuple_reduce_kernel[(1,)](x, v, i, N=256, num_warps=2)
    assert (v[0], i[0]) == (x.max(), x.argmax())
    b = _values(128, ml_dtypes.bfloat16, 4)
    out = np.empty(128, np.float32)
    bf16_cumsum_kernel[(1,)](b, out, N=128, num_warps=1)
    geo = order.axis_geometry([128], 0, 16, 1)
    np.testing.assert_array_equal(out, replay_scan(list(b.astype(np.float32)), geo,
                                                   add_in(np.float32)))


# ----- the wider cases, against the H200's bits (reduce_order_wide.py, 2026-12-03)

WIDE = load(minitriton, tl, PROBE.with_name("reduce_order_wide.py"))
with np.load(Path(__file__).with_name("reduce_order_wide.npz")) as _digests:
    H200 = dict(_digests)  # the probe's `digest` of the GPU's outputs


def _another_layout(v):
    """The outputs of variant v whose operand the GPU holds in a layout other than the blocked
    layout of the operand's own element width: sums and bit hashes of values computed from a
    16-bit load (the load's 8 elements per thread, not fp32's or int32's 4), and values computed
    from a dot's result (the MMA layout). minitriton's tensors carry it (`tensor.layout`)."""
    kind, dtype = v[0], v[1]
    if kind == "dot":
        return ("h1", "h0", "hall", "e1", "s1h")
    if dtype == "float32":
        return ()
    return {"row": ("wide", "hred"), "tile": ("h1", "hall")}.get(kind, ())


@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("v", WIDE.variants(), ids=WIDE.key)
def test_wider_cases_give_the_h200s_bits(v):
    """Rows of 256..65536 at 8, 16 and 32 warps (1-D sums, `x - y`, `x.to(tl.float32)`,
    cumsums, masked too), [ROWS, COLS] blocks along each axis and all, a dot's result summed
    along each axis and all (wgmma and mma.sync layouts), what is computed from it (`acc * 0.5
    + 1.0`, `acc.to(tl.float16)`, its bits), a dot's result scanned (converted to a blocked
    layout); bit hashes of 16-bit loads. All of them but the lane choices (LANE_CHOICE)."""
    got = WIDE.digest(WIDE.launch(WIDE, v, NumpyArrays())[0])
    for name, bits in got.items():
        if (WIDE.key(v), name) not in LANE_CHOICE:
            np.testing.assert_array_equal(bits, H200[f"{WIDE.key(v)}/{name}"],
                                          err_msg=f"{WIDE.key(v)} {name}")


@minitriton.jit
def dot_result_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    pid = tl.program_id(0)
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + pid * M * K + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + pid * K * N + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + pid * M * N + rm[:, None] * N + rn[None, :], tl.dot(a, b))


def _hash_lists(a, b):
    return [a[0] * np.int32(31) + b[0]]  # the kernels' `_hash`, wrapping


def _float(bits, dtype):
    return bits.view(NUMPY[dtype]).astype(np.float32)


def _bits(values, dtype):
    return NumpyArrays().bits(np.asarray(values).astype(NUMPY[dtype]))


# a non-commutative combine along an axis that one warp's lanes hold: every lane ends with its
# own result, and here the GPU stored another lane's than lane 0's (lane 4 or 6 of the 8 along
# the axis; sums, commutative, agree in every lane)
LANE_CHOICE = {("dot_float16_16x64x32_w4", "h0"), ("dot_float16_32x32x32_w2", "h0"),
               ("dot_float16_64x64x32_w2", "h0"), ("dot_float16_32x64x32_w4", "h0"),
               ("dot_float16_16x16x16_w1", "h0"), ("tile_float16_64x256_w16", "h1"),
               ("tile_bfloat16_64x256_w16", "h1")}


@pytest.mark.parametrize("v", [v for v in WIDE.variants() if _another_layout(v)],
                         ids=WIDE.key)
def test_the_order_in_the_layout_the_gpu_used(v):
    """The outputs of `_another_layout`, through the model given the layout the GPU gave their
    operand (the 16-bit load's blocked layout, or the dot's MMA layout), without a kernel."""
    kind, dtype, shape, warps, masked = v
    seed = zlib.crc32(WIDE.key(v).encode())
    if kind == "dot":
        m, n, k = shape
        a, b = (WIDE.inputs(dtype, 2, size, s).view(np.float16).reshape(-1)
                for size, s in ((m * k, seed), (k * n, seed + 1)))
        acc = np.empty((2, m, n), np.float32)
        dot_result_kernel[(2,)](a, b, acc, M=m, N=n, K=k, num_warps=warps)
        f32, f16 = order._arithmetic(np.add, tl.float32), order._arithmetic(np.add, tl.float16)

        def fold(values, axis, combine):
            return order.fold_in_mma_order([values], (m, n), axis, combine, warps)[0]
        want = {"h1": fold(acc.view(np.int32), 1, _hash_lists),
                "h0": fold(acc.view(np.int32), 0, _hash_lists),
                "hall": fold(acc.view(np.int32), None, _hash_lists),
                "e1": _bits(fold(acc * np.float32(0.5) + np.float32(1), 1, f32), "float32"),
                "s1h": _bits(fold(acc.astype(np.float16).astype(np.float32), 1, f16),
                             dtype)}
    else:
        programs = WIDE.programs_for(int(np.prod(shape)))
        x = WIDE.inputs(dtype, programs, int(np.prod(shape)), seed).reshape(programs, *shape)
        if masked:
            x[..., shape[-1] - 3:] = 0
        h = x.view(np.int16).astype(np.int32)  # the kernels' `_bits`

        def fold(values, axis, combine):
            return order.fold_in_gpu_order([values], list(shape), axis, 16, combine,
                                           num_warps=warps)[0]
        if kind == "row":
            want = {"wide": _bits(fold(_float(x, dtype), 0,
                                       order._arithmetic(np.add, tl.float32)), "float32"),
                    "hred": fold(h, 0, _hash_lists)}
        else:
            want = {"h1": fold(h, 1, _hash_lists), "hall": fold(h, None, _hash_lists)}
    for name, values in WIDE.digest(want).items():
        if (WIDE.key(v), name) not in LANE_CHOICE:
            np.testing.assert_array_equal(values, H200[f"{WIDE.key(v)}/{name}"],
                                          err_msg=f"{WIDE.key(v)} {name}")


def test_the_mma_layouts_are_triton_36s():
    """(version, warpsPerCTA, instruction N) as Triton 3.6 chose them on the H200 (the wide
    probe's TTGIR)."""
    cases = {((64, 64), 4): (3, [4, 1], 64), ((128, 128), 8): (3, [8, 1], 128),
             ((64, 128), 8): (3, [4, 2], 64), ((64, 256), 4): (3, [4, 1], 256),
             ((64, 64), 8): (3, [4, 2], 32), ((128, 128), 16): (3, [8, 2], 64),
             ((16, 64), 4): (2, [1, 4], 8), ((64, 64), 2): (2, [1, 2], 8),
             ((16, 16), 1): (2, [1, 1], 8)}
    for (shape, warps), want in cases.items():
        assert order.mma_layout(shape, warps) == want


# ----- the layout a block was made in, as minitriton's tensors carry it (core.py, `layout`)


@minitriton.jit
def layout_kernel(x_ptr, w_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, CASE: tl.constexpr):
    rows, cols = tl.arange(0, M), tl.arange(0, N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs)  # fp16
    w = tl.load(w_ptr + offs)  # fp32
    if CASE == 0:
        v = x.to(tl.float32)
    elif CASE == 1:
        v = x.to(tl.float32) * w
    elif CASE == 2:
        v = w * x.to(tl.float32)
    elif CASE == 3:
        v = tl.where(x > 0, w, 0.0)
    elif CASE == 4:
        v = tl.trans(tl.trans(x.to(tl.float32)))
    elif CASE == 5:
        v = tl.zeros((M, N), tl.float32) + tl.load(w_ptr + cols)[None, :]
    else:
        v = w
    tl.store(out_ptr + rows, tl.reduce(v.to(tl.int32, bitcast=True), 1, _hash))


# CASE: (the reduced value, the element width whose blocked layout the reduction takes)
LAYOUT_CASES = {0: ("a cast keeps the fp16 load's layout", 16),
                1: ("of two loads, the narrower element's", 16),
                2: ("in either operand order", 16),
                3: ("a condition's layout counts too", 16),
                4: ("tl.trans lays the block out afresh: its own element width's", 32),
                5: ("a broadcast row and a constant have none: the element width's", 32),
                6: ("an fp32 load", 32)}


@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("case", LAYOUT_CASES)
def test_a_reduction_takes_the_layout_its_values_were_made_in(case):
    m, n, warps = 4, 256, 4  # fp16: 8 elements per thread, fp32: 4
    x = _values((m, n), np.float16, 7)
    w = _values((m, n), np.float32, 8)
    out = np.empty(m, np.int32)
    layout_kernel[(1,)](x, w, out, M=m, N=n, CASE=case, num_warps=warps)
    v = {0: x.astype(np.float32), 1: x.astype(np.float32) * w, 2: w * x.astype(np.float32),
         3: np.where(x > 0, w, np.float32(0)), 4: x.astype(np.float32),
         5: np.broadcast_to(w[0], (m, n)), 6: w}[case]

    def fold(bits):
        return order.fold_in_gpu_order([np.ascontiguousarray(v, np.float32).view(np.int32)[None]],
                                       [m, n], 1, bits, _hash_lists, num_warps=warps)[0][0]
    bits = LAYOUT_CASES[case][1]
    np.testing.assert_array_equal(out, fold(bits), err_msg=LAYOUT_CASES[case][0])
    assert (fold(16) != fold(32)).any()  # the two layouts give other hashes


@minitriton.jit
def dot_layout_kernel(a_ptr, b_ptr, c_ptr, v_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr,
                      K: tl.constexpr, CASE: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    offs = rm[:, None] * N + rn[None, :]
    if CASE == 0:  # a K loop
        acc = tl.zeros((M, N), tl.float32)
        for _ in range(0, 2):
            acc += tl.dot(a, b)
        v = acc
    elif CASE == 1:
        v = tl.dot(a, b, tl.zeros((M, N), tl.float32))
    elif CASE == 2:  # the load becomes the dot's accumulator
        v = tl.dot(a, b) + tl.load(c_ptr + offs)
    elif CASE == 3:
        v = tl.exp(tl.dot(a, b) * tl.load(c_ptr + offs))
    else:
        v = tl.trans(tl.trans(tl.dot(a, b)))
    tl.store(v_ptr + offs, v)
    tl.store(out_ptr + rm, tl.reduce(v.to(tl.int32, bitcast=True), 1, _hash))


@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("m,n,warps", [(64, 64, 4), (32, 32, 2)])  # wgmma, mma.sync
@pytest.mark.parametrize("case", range(5))
def test_what_is_computed_from_a_dot_keeps_its_layout(case, m, n, warps):
    """The MMA layout survives a K loop, an accumulator, `+ load` (the load becomes the
    accumulator), element-wise math with a loaded block (the MMA layout wins); tl.trans drops
    it (the blocked layout of fp32)."""
    k = 32
    a, b = _values((m, k), np.float16, 9), _values((k, n), np.float16, 10)
    c = _values((m, n), np.float32, 11) / 16
    v, out = np.empty((m, n), np.float32), np.empty(m, np.int32)
    dot_layout_kernel[(1,)](a, b, c, v, out, M=m, N=n, K=k, CASE=case, num_warps=warps)
    h = v.view(np.int32)[None]
    mma = order.fold_in_mma_order([h], (m, n), 1, _hash_lists, warps)[0][0]
    blocked = order.fold_in_gpu_order([h], [m, n], 1, 32, _hash_lists, num_warps=warps)[0][0]
    np.testing.assert_array_equal(out, mma if case < 4 else blocked)
    assert (mma != blocked).any()


def test_the_layout_rules():
    """core.join_layouts: the MMA layout over a blocked one, the narrower load over the wider,
    a known layout over none."""
    join, mma = tl.core.join_layouts, tl.core.mma_layout_record([64, 64])
    assert join(None, 16) == join(16, None) == 16
    assert join(32, 16) == join(16, 32) == 16
    assert join(mma, 8) == join(8, mma) == join(None, mma) == mma
    assert join(None, None) is None


# ----- on the GPU: the probe's variants, minitriton against Triton


class NumpyArrays:
    """The probe's arrays as NumPy ones, for minitriton."""

    def put(self, bits, dtype):
        return bits.view(NUMPY[dtype]).copy()

    def zeros(self, shape, dtype):
        return np.zeros(shape, NUMPY[dtype])

    def bits(self, a):
        if a.dtype.kind in "iu":
            return a
        return a.view(np.int16 if a.itemsize == 2 else np.int32)


# outputs the model gives bit for bit where the layout is the default one (aligned rows):
# not the scanned hashes of 16-bit inputs (their int32 scan takes the int16 store's layout on
# the GPU, the int32 one here: a scan does not read the layout record), not 2-D hashes along
# an axis (the GPU stores one replica lane's result, not lane 0's), not the sums of x * x
# (their fusion depends on the product's other uses)
EXACT = {"row": ("sum", "max", "hred", "csum", "rcsum"),
         "tile": ("s0", "s1", "sall", "hall", "c0", "c1")}
EXACT_FP32 = {"row": ("hscan",), "tile": ("hs0", "hs1")}
GPU_VARIANTS = [v for v in load(minitriton, tl, PROBE).variants()
                if v[4] != 2 and v[3] in (1, 4) and v[2] in ((16,), (256,), (4096,), (16, 16),
                                                              (8, 64), (64, 8), (4, 256))]


def _compare(v):
    import triton
    import triton.language as ttl
    sim_mod, gpu_mod = load(minitriton, tl, PROBE), load(triton, ttl, PROBE)
    sim, _ = sim_mod.launch(sim_mod, v, NumpyArrays())
    gpu, _ = gpu_mod.launch(gpu_mod, v, gpu_mod.TorchArrays())
    assert np.array_equal(sim["x"], gpu["x"])
    return sim, gpu


@pytest.mark.gpu
@pytest.mark.parametrize("v", GPU_VARIANTS, ids=lambda v: "_".join(map(str, v)))
def test_same_bits_as_triton(v):
    sim, gpu = _compare(v)
    kind, dtype = v[0], v[1]
    names = EXACT[kind] + (EXACT_FP32[kind] if dtype == "float32" else ())
    n = int(gpu["n"])
    for name in names:
        s, g = sim[name], gpu[name]
        if s.ndim >= 2 and s.shape[-1] == v[2][-1] and name not in ("s0",):
            s, g = s[..., :n], g[..., :n]  # the lanes stored
        np.testing.assert_array_equal(s, g, err_msg=f"{v} {name}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_unaligned_rows_within_the_bound(dtype):
    """Rows at an odd stride: the GPU gives each thread one element (no alignment proven),
    minitriton the default layout; sums differ by at most 4 ulp of sum(|x|)."""
    v = ("row", dtype, (1024,), 4, 2)
    sim, gpu = _compare(v)
    x = sim["x"].view(NUMPY[dtype]).astype(np.float64)
    s = sim["sum"].view(NUMPY[dtype]).astype(np.float64)
    g = gpu["sum"].view(NUMPY[dtype]).astype(np.float64)
    ulp = np.spacing(np.abs(x).sum(1).astype(NUMPY[dtype])).astype(np.float64)
    assert (np.abs(s - g) <= 4 * ulp).all()


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,axis,scan,warps", [(1, 256, 1, False, 1), (1, 32, 1, False, 1),
                                                  (1, 1024, 1, False, 4), (16, 16, 0, False, 1),
                                                  (16, 16, 1, False, 4), (4, 256, 0, False, 4),
                                                  (1, 256, 1, True, 1), (1, 1024, 1, True, 4),
                                                  (16, 16, 0, True, 1), (4, 256, 0, True, 1)])
def test_fused_products_as_triton(m, n, axis, scan, warps):
    import torch
    import triton
    import triton.language as ttl
    x, y = _values((8, m, n), np.float32, 5), _values((8, m, n), np.float32, 6)
    size = (8, m, n) if scan else (8, n if axis == 0 else m)
    sim = np.empty(size, np.float32)
    load(minitriton, tl, PROBE).dot_kernel[(8,)](x, y, sim, M=m, N=n, AXIS=axis, SCAN=scan,
                                                 num_warps=warps)
    gpu = torch.empty(size, device="cuda")
    load(triton, ttl, PROBE).dot_kernel[(8,)](torch.from_numpy(x).cuda(),
                                              torch.from_numpy(y).cuda(), gpu, M=m, N=n,
                                              AXIS=axis, SCAN=scan, num_warps=warps)
    np.testing.assert_array_equal(sim, gpu.cpu().numpy())
