"""tl.swizzle2d, tl.cat, tl.ravel, tl.reduce_or and tensor.logical_and / logical_or (Triton 3.6's
standard library and tensor methods) against NumPy, with Triton's errors."""
import numpy as np
import pytest

import minitriton
import minitriton.language as tl
from minitriton import PaddingError, Settings
from minitriton.errors import CompilationError

pytestmark = pytest.mark.usefixtures("executor")


@minitriton.jit
def swizzle_kernel(i_ptr, j_ptr, SIZE_I: tl.constexpr, SIZE_J: tl.constexpr,
                   SIZE_G: tl.constexpr):
    # every (i, j) of the grid at once, and one program id pair as scalars
    i = tl.arange(0, SIZE_I)[:, None] + tl.zeros([SIZE_I, SIZE_J], tl.int32)
    j = tl.arange(0, SIZE_J)[None, :] + tl.zeros([SIZE_I, SIZE_J], tl.int32)
    ni, nj = tl.swizzle2d(i, j, SIZE_I, SIZE_J, SIZE_G)
    offs = tl.arange(0, SIZE_I)[:, None] * SIZE_J + tl.arange(0, SIZE_J)[None, :]
    tl.store(i_ptr + offs, ni)
    tl.store(j_ptr + offs, nj)
    si, sj = tl.swizzle2d(tl.program_id(0), tl.program_id(1), SIZE_I, SIZE_J, SIZE_G)
    tl.store(i_ptr + SIZE_I * SIZE_J + tl.program_id(0) * SIZE_J + tl.program_id(1), si)
    tl.store(j_ptr + SIZE_I * SIZE_J + tl.program_id(0) * SIZE_J + tl.program_id(1), sj)


def _swizzled(size_i, size_j, size_g):
    """NumPy's reference: number the grid's elements group of size_g rows by group, column by
    column within a group; element (i, j) goes where that number sits in row-major order."""
    new_i, new_j = np.zeros((size_i, size_j), int), np.zeros((size_i, size_j), int)
    k = 0
    for first in range(0, size_i, size_g):
        rows = min(size_g, size_i - first)
        for col in range(size_j):
            for r in range(rows):
                new_i.flat[k], new_j.flat[k] = first + r, col
                k += 1
    return new_i, new_j


@pytest.mark.parametrize("size_i,size_j,size_g", [(4, 4, 2), (8, 4, 3), (8, 8, 8), (4, 8, 1)])
def test_swizzle2d(size_i, size_j, size_g):
    ni = np.full(2 * size_i * size_j, -1, np.int32)
    nj = np.full(2 * size_i * size_j, -1, np.int32)
    swizzle_kernel[(size_i, size_j)](ni, nj, SIZE_I=size_i, SIZE_J=size_j, SIZE_G=size_g)
    want_i, want_j = _swizzled(size_i, size_j, size_g)
    for part in (slice(0, size_i * size_j), slice(size_i * size_j, None)):
        np.testing.assert_array_equal(ni[part].reshape(size_i, size_j), want_i)
        np.testing.assert_array_equal(nj[part].reshape(size_i, size_j), want_j)
    if (size_i, size_j, size_g) == (4, 4, 2):  # Triton's docstring example: where each
        landed = np.zeros((4, 4), int)  # row-major index lands
        landed[want_i.reshape(-1), want_j.reshape(-1)] = np.arange(16)
        np.testing.assert_array_equal(landed, [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14],
                                               [9, 11, 13, 15]])


@minitriton.jit
def cat_kernel(a_ptr, b_ptr, out_ptr, sum_ptr, A: tl.constexpr, B: tl.constexpr):
    c = tl.cat(tl.load(a_ptr + tl.arange(0, A)), tl.load(b_ptr + tl.arange(0, B)),
               can_reorder=True)
    tl.store(out_ptr + tl.arange(0, A + B), c)
    tl.store(sum_ptr, tl.sum(c, axis=0))


@minitriton.jit
def cat_error_kernel(a_ptr, out_ptr, CASE: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, 8))
    if CASE == 0:
        c = tl.cat(a, a)
    elif CASE == 1:
        c = tl.cat(tl.reshape(a, (2, 4)), tl.reshape(a, (2, 4)), can_reorder=True)
    else:
        c = tl.cat(a, a.to(tl.int64), can_reorder=True)
    tl.store(out_ptr + tl.arange(0, 16), c)


def test_cat_keeps_its_elements():
    a, b = np.arange(8, dtype=np.int32), np.arange(100, 108, dtype=np.int32)
    out, total = np.zeros(16, np.int32), np.zeros(1, np.int32)
    cat_kernel[(1,)](a, b, out, total, A=8, B=8)
    np.testing.assert_array_equal(np.sort(out), np.concatenate([a, b]))  # any order (reorder)
    assert total[0] == a.sum() + b.sum()


@minitriton.jit
def cat_max_kernel(x_ptr, out_ptr, n):
    cols = tl.arange(0, 8)
    x = tl.load(x_ptr + cols, mask=cols < n, other=0.0)  # wrong `other` for a max
    tl.store(out_ptr, tl.max(tl.cat(x, x, can_reorder=True), axis=0))


def test_cat_keeps_padding_marks(executor):
    """The padding check still sees a masked load's padding through tl.cat (the reduction
    that cat's reordering is meant for)."""
    x, out = -np.ones(8, np.float32), np.zeros(1, np.float32)
    with pytest.raises(PaddingError, match="tl.max"):
        cat_max_kernel[(1,)](x, out, 5, minitriton_settings=Settings(executor=executor,
                                                                     padding=True))


@pytest.mark.parametrize("case,match", [(0, "can_reorder=True"), (1, "1-D blocks only"),
                                        (2, "types differ")])
def test_cat_errors(case, match):
    with pytest.raises(CompilationError, match=match):
        cat_error_kernel[(1,)](np.zeros(8, np.int32), np.zeros(16, np.int32), CASE=case)


@minitriton.jit
def ravel_or_kernel(x_ptr, flat_ptr, or_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(flat_ptr + tl.arange(0, M * N), tl.ravel(x))
    tl.store(or_ptr + tl.arange(0, N), tl.reduce_or(x, 0))
    tl.store(or_ptr + N + tl.arange(0, M), x.reduce_or(axis=1))


def test_ravel_and_reduce_or():
    rng = np.random.default_rng(1)
    x = (1 << rng.integers(0, 31, (4, 8))).astype(np.int32) | rng.integers(0, 4, (4, 8),
                                                                           dtype=np.int32)
    flat, ors = np.zeros(32, np.int32), np.zeros(12, np.int32)
    ravel_or_kernel[(1,)](x, flat, ors, M=4, N=8)
    np.testing.assert_array_equal(flat, x.reshape(-1))
    np.testing.assert_array_equal(ors[:8], np.bitwise_or.reduce(x, axis=0))
    np.testing.assert_array_equal(ors[8:], np.bitwise_or.reduce(x, axis=1))


@minitriton.jit
def reduce_or_float_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, tl.reduce_or(tl.load(x_ptr + tl.arange(0, 8)), 0))


def test_reduce_or_needs_integers():
    with pytest.raises(CompilationError, match="reduce_or only supported for integers"):
        reduce_or_float_kernel[(1,)](np.zeros(8, np.float32), np.zeros(1, np.float32))


@minitriton.jit
def logical_kernel(x_ptr, y_ptr, and_ptr, or_ptr, BAD: tl.constexpr):
    offs = tl.arange(0, 16)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    if BAD:
        tl.store(and_ptr + offs, x.logical_and(y).to(tl.int32))  # int32 operands: an error
    else:
        tl.store(and_ptr + offs, (x > 0).logical_and(y > 0).to(tl.int32))
        tl.store(or_ptr + offs, (x > 0).logical_or(y > 0).to(tl.int32))
        # a pointer operand counts as `p != 0`, as in Triton
        tl.store(or_ptr + 16 + offs, (x_ptr + offs).logical_and(x > 0).to(tl.int32))


def test_logical_and_or():
    rng = np.random.default_rng(2)
    x, y = rng.integers(-2, 3, 16).astype(np.int32), rng.integers(-2, 3, 16).astype(np.int32)
    got_and, got_or = np.zeros(16, np.int32), np.zeros(32, np.int32)
    logical_kernel[(1,)](x, y, got_and, got_or, BAD=False)
    np.testing.assert_array_equal(got_and, (x > 0) & (y > 0))
    np.testing.assert_array_equal(got_or[:16], (x > 0) | (y > 0))
    np.testing.assert_array_equal(got_or[16:], x > 0)
    with pytest.raises(CompilationError, match="Cannot bitcast data-type of size 32"):
        logical_kernel[(1,)](x, y, got_and, got_or, BAD=True)


@minitriton.jit
def named_ops_kernel(x_ptr, y_ptr, out_ptr, item_ptr, BAD: tl.constexpr):
    offs = tl.arange(0, 8)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.add(x, y))
    tl.store(out_ptr + 8 + offs, tl.sub(x, y, sanitize_overflow=False))
    tl.store(out_ptr + 16 + offs, tl.mul(x, 3))
    one = tl.sum(x, axis=0, keep_dims=True)  # a block of shape [1]
    tl.store(item_ptr, one.item() + tl.item(tl.reshape(one, (1, 1))))
    if BAD:
        tl.store(item_ptr, x.item())


def test_named_arithmetic_and_item():
    x, y = np.arange(8, dtype=np.int32), np.arange(8, dtype=np.int32)[::-1].copy()
    out, it = np.zeros(24, np.int32), np.zeros(1, np.int32)
    named_ops_kernel[(1,)](x, y, out, it, BAD=False)
    np.testing.assert_array_equal(out, np.concatenate([x + y, x - y, 3 * x]))
    assert it[0] == 2 * x.sum()
    with pytest.raises(CompilationError, match="can only unsplat single-element tensors"):
        named_ops_kernel[(1,)](x, y, out, it, BAD=True)


@minitriton.jit
def selu_scalar(x, alpha):
    if x > 0:  # differs from element to element
        return x
    else:
        return alpha * (tl.exp(x) - 1)


@minitriton.jit
def halvings(x):  # a loop whose trip count differs per element; two results
    n = 0
    while x >= 2.0:
        x = x / 2.0
        n += 1
    return x, n


@minitriton.jit
def swap_pairs(a, b, c, d):  # pack=2: (x0, x1), (y0, y1) in; (out0 x2) out
    return a + d, b + c


@minitriton.jit
def map_kernel(x_ptr, y_ptr, m_ptr, n_ptr, p_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.map_elementwise(selu_scalar, x, 1.5))
    m, n = tl.map_elementwise(halvings, tl.abs(x) * 4.0)
    tl.store(m_ptr + offs, m)
    tl.store(n_ptr + offs, n)
    tl.store(p_ptr + offs, tl.map_elementwise(swap_pairs, x, offs.to(tl.float32), pack=2))


def test_map_elementwise_with_control_flow_per_element():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(32).astype(np.float32) * 3
    y, m, p = (np.zeros(32, np.float32) for _ in range(3))
    n = np.zeros(32, np.int32)
    map_kernel[(2,)](x, y, m, n, p, N=16)
    np.testing.assert_allclose(y, np.where(x > 0, x, 1.5 * (np.exp(x) - 1)), rtol=1e-6)
    a = np.abs(x) * np.float32(4.0)
    want_n = np.where(a >= 2, np.floor(np.log2(np.maximum(a, 1e-30))).astype(np.int32), 0)
    np.testing.assert_array_equal(n, want_n)
    np.testing.assert_allclose(m, a / 2.0 ** want_n, rtol=1e-6)
    offs = np.arange(32, dtype=np.float32)
    pairs_x, pairs_o = x.reshape(16, 2), offs.reshape(16, 2)
    want_p = np.stack([pairs_x[:, 0] + pairs_o[:, 1], pairs_x[:, 1] + pairs_o[:, 0]], 1)
    np.testing.assert_allclose(p, want_p.reshape(-1), rtol=1e-6)


@minitriton.jit
def map_block_kernel(x_ptr, CASE: tl.constexpr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    if CASE == 0:
        y = tl.map_elementwise(swap_pairs, x, x, pack=3)  # 8 is not a multiple of 3
    else:
        y = tl.map_elementwise(swap_pairs, x, x, x, x)  # 2 results, pack 1: a tuple
        y = y[0]
    tl.store(x_ptr + offs, y)


def test_map_elementwise_errors_and_tuples():
    with pytest.raises(CompilationError, match="pack=3 does not divide"):
        map_block_kernel[(1,)](np.zeros(8, np.float32), CASE=0)
    x = np.arange(8, dtype=np.float32)
    map_block_kernel[(1,)](x, CASE=1)
    np.testing.assert_array_equal(x, 2 * np.arange(8))


@minitriton.jit
def cast_max_kernel(x_ptr, out_ptr, n):
    cols = tl.arange(0, 8)
    x = tl.load(x_ptr + cols, mask=cols < n, other=0.0)  # wrong `other` for a max
    tl.store(out_ptr, tl.max(x.to(tl.float32), axis=0))


def test_padding_marks_survive_a_cast(executor):
    """tl.cast (x.to) carries padding marks like every element-wise op."""
    x, out = -np.ones(8, np.float16), np.zeros(1, np.float32)
    with pytest.raises(PaddingError, match="tl.max"):
        cast_max_kernel[(1,)](x, out, 5, minitriton_settings=Settings(executor=executor,
                                                                      padding=True))
