"""tl.dot's sums as the H200's tensor cores compute them (language/dot.py): every term of a
step cut toward zero at 2**(e - 25), e the largest exponent among the accumulator's and the
products' (operand exponents summed), the step rounded toward zero to fp32; 16 products per step
for fp16/bf16, 8 for TF32; ieee fp32 a sequential fma. GPU bit-exactness: test_gpu_parity.py's
case_dot_chain_* and benchmarks/probes/dot_order.py (112 of 112 dots)."""
import ml_dtypes
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton.language.dot import mma_chain


@triton.jit
def one_dot(a_ptr, b_ptr, c_ptr, d_ptr, K: tl.constexpr, PREC: tl.constexpr):
    rm, rn, rk = tl.arange(0, 16), tl.arange(0, 16), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * 16 + rn[None, :])
    acc = tl.load(c_ptr + rm[:, None] * 16 + rn[None, :])
    tl.store(d_ptr + rm[:, None] * 16 + rn[None, :], tl.dot(a, b, acc, input_precision=PREC))


def _run(a, b, acc, prec="ieee", **settings):
    out = np.zeros((16, 16), np.float32)
    with triton.configure(**settings):
        one_dot[(1,)](a, b, acc, out, K=a.shape[1], PREC=prec)
    return out


def test_small_products_are_cut_below_the_accumulators_bits():
    # acc 1.0 and sixteen products 2**-26: each is below 2**(0 - 25), the step's grid, so the
    # tensor cores drop them all; the exact sum 1 + 2**-22 is an fp32 number the GPU never gives
    a = np.full((16, 16), 2.0 ** -13, np.float16)
    b = np.full((16, 16), 2.0 ** -13, np.float16)
    acc = np.ones((16, 16), np.float32)
    assert np.all(_run(a, b, acc) == 1.0)
    assert np.all(_run(a, b, acc, exact_dot=False) == np.float32(1 + 2.0 ** -22))


def test_a_step_rounds_toward_zero():
    # 1 + 3 * 2**-25 is between fp32 neighbours 1 and 1 + 2**-23: cut to 1 (nearest would too);
    # -(1 + 3 * 2**-24): nearest is -(1 + 2**-22), toward zero -(1 + 2**-23)
    a = np.zeros((16, 16), np.float16)
    a[:, 0], a[:, 1] = 1.0, -1.0
    b = np.zeros((16, 16), np.float16)
    b[0, :], b[1, :] = 1.0, 3 * 2.0 ** -24
    out = _run(a, b, np.zeros((16, 16), np.float32))
    assert np.all(out == np.float32(1.0 - 3 * 2.0 ** -24))  # exact: one binade below 1
    acc = np.full((16, 16), -1.0, np.float32)
    b[0, :] = 0.0
    out = _run(a, b, acc)
    assert np.all(out == -np.float32(1 + 2.0 ** -23))


def test_steps_of_16_then_the_next_step_starts_from_the_rounded_sum():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 64)).astype(np.float16)
    b = (rng.standard_normal((64, 16)) * np.exp2(rng.integers(-8, 8, (64, 16)))).astype(np.float16)
    acc = rng.standard_normal((16, 16)).astype(np.float32)
    out = _run(a, b, acc)
    step = acc.copy()
    for k in range(0, 64, 16):  # the chain, step by step, from the accumulator
        step = mma_chain(a[None, :, k:k + 16].astype(np.float64),
                         b[None, k:k + 16].astype(np.float64), step[None], 16)[0]
    np.testing.assert_array_equal(out, step)
    exact = a.astype(np.float64) @ b.astype(np.float64) + acc
    assert np.abs(out - exact).max() < 1e-4 * np.abs(exact).max()


def test_acc_plus_dot_is_the_dot_with_acc():
    @triton.jit
    def both(a_ptr, b_ptr, c_ptr, d_ptr, e_ptr):
        r = tl.arange(0, 16)
        a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
        b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
        acc = tl.load(c_ptr + r[:, None] * 16 + r[None, :])
        tl.store(d_ptr + r[:, None] * 16 + r[None, :], acc + tl.dot(a, b))
        tl.store(e_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b, acc))

    rng = np.random.default_rng(2)
    a = (rng.standard_normal((16, 16)) * 64).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((16, 16)).astype(ml_dtypes.bfloat16)
    acc = (rng.standard_normal((16, 16)) * 2.0 ** -10).astype(np.float32)
    d, e = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    both[(1,)](a, b, acc, d, e)
    np.testing.assert_array_equal(d, e)


def test_ieee_fp32_is_a_sequential_fma():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 16)).astype(np.float32)
    acc = np.zeros((16, 16), np.float32)
    out = _run(a, b, acc, "ieee")
    ref = acc.copy()
    for k in range(32):
        ref = (ref.astype(np.float64) + np.outer(a[:, k].astype(np.float64), b[k])).astype(np.float32)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("prec", ["tf32", "ieee"])
def test_zeros_and_infinities(prec):
    a = np.zeros((16, 16), np.float32)
    acc = np.zeros((16, 16), np.float32)
    assert np.all(_run(a, a, acc, prec) == 0)
    a[0, 0] = np.inf
    b = np.ones((16, 16), np.float32)
    out = _run(a, b, acc, prec)
    assert np.all(np.isposinf(out[0])) and np.all(out[1:] == 0)


@triton.jit
def _dot_nd(X, Y, Z, RANK: tl.constexpr, TRANS_B: tl.constexpr):
    # 2 ** (RANK - 2) blocks of 16 x 16 (`64 << RANK` inline: assigned, it would be a tensor)
    x = tl.load(X + tl.arange(0, 64 << RANK)).reshape([2] * (RANK - 2) + [16, 16])
    y = tl.load(Y + tl.arange(0, 64 << RANK)).reshape([2] * (RANK - 2) + [16, 16])
    if TRANS_B:
        y = tl.trans(y)  # the last two axes, whatever the rank
    tl.store(Z + tl.arange(0, 64 << RANK), tl.dot(x, y).reshape([64 << RANK]))


@pytest.mark.parametrize("rank", [2, 3, 4, 5])
@pytest.mark.parametrize("trans_b", [False, True])
def test_dot_of_any_rank_folds_the_batch_dimensions(rank, trans_b):
    """Triton 3.6's tl.dot takes equal ranks >= 2: the leading dimensions are a batch."""
    shape = (2,) * (rank - 2) + (16, 16)
    rng = np.random.default_rng(rank)
    a = rng.integers(-4, 5, shape).astype(np.float16)
    b = rng.integers(-4, 5, shape).astype(np.float16)
    c = np.empty(shape, np.float32)
    _dot_nd[(1,)](a, b, c, rank, trans_b)
    want = a.astype(np.float64) @ (np.swapaxes(b, -1, -2) if trans_b else b).astype(np.float64)
    np.testing.assert_array_equal(c, want)  # small integers: exact


def test_dot_of_rank_4_checks_the_batch_shapes_and_trans_needs_rank_2():
    @triton.jit
    def batches(X, Z):
        x = tl.load(X + tl.arange(0, 1024)).reshape([2, 2, 16, 16])
        y = tl.load(X + tl.arange(0, 1024)).reshape([4, 1, 16, 16])
        tl.store(Z + tl.arange(0, 1024), tl.dot(x, y).reshape([1024]))

    @triton.jit
    def trans_1d(X):
        tl.store(X + tl.arange(0, 16), tl.trans(tl.load(X + tl.arange(0, 16))))

    x, z = np.zeros(1024, np.float16), np.zeros(1024, np.float32)
    with pytest.raises(triton.CompilationError, match="equal batch shapes"):
        batches[(1,)](x, z)
    with pytest.raises(triton.CompilationError, match="0- or 1-dimensional"):
        trans_1d[(1,)](x)
