"""The fast tensor-core chain (language/dot.py, `_fast_chain`: fp32 products, int32 sums) gives
the bits of the float64 chain (`_chain_slices`) on every input it takes, and declines the
inputs outside its range: operand exponents at the edges, tiny and huge accumulators, -0.0,
infinities and NaNs, equal products (the base-16/32 top), cancellations, K not a multiple of
the step."""
import importlib

import ml_dtypes
import numpy as np
import pytest

dot = importlib.import_module("minitriton.language.dot")


def _reference(x, y, acc, step):
    P, M, K = x.shape
    N = y.shape[-1]
    out = np.zeros((P, M, N), np.float32) if acc is None else acc.astype(np.float32).copy()
    with np.errstate(all="ignore"):
        dot._chain_slices(x.astype(np.float64), y.astype(np.float64), out, P, step, M, N, K)
    dot._canonical_nans(out)  # (mma_chain gives the GPU's NaN, 0x7fffffff)
    return out


def _operands(rng, kind, P, M, N, K, exps):
    """Values of `kind`'s precision (TF32, fp16, bf16) with exponents drawn from `exps`."""
    mx = rng.integers(1 << 10, 1 << 11, (P, M, K)) / 2.0 ** 10 * rng.choice([-1, 1], (P, M, K))
    my = rng.integers(1 << 10, 1 << 11, (P, K, N)) / 2.0 ** 10 * rng.choice([-1, 1], (P, K, N))
    x = mx * np.exp2(rng.integers(exps[0], exps[1] + 1, (P, M, K)))
    y = my * np.exp2(rng.integers(exps[0], exps[1] + 1, (P, K, N)))
    if kind == "tf32":
        return dot.round_to_tf32(x.astype(np.float32)), dot.round_to_tf32(y.astype(np.float32))
    np_type = np.float16 if kind == "fp16" else ml_dtypes.bfloat16
    with np.errstate(over="ignore"):
        return (x.astype(np_type).astype(np.float32), y.astype(np_type).astype(np.float32))


@pytest.mark.parametrize("kind,step", [("tf32", 8), ("fp16", 16), ("bf16", 16)])
@pytest.mark.parametrize("exps", [(-5, 5), (-37, -30), (33, 40), (-38, 40), (-37, 41)])
def test_fast_chain_matches_the_float64_chain(kind, step, exps):
    rng = np.random.default_rng([ord(kind[1]), exps[0] + 100, exps[1] + 100])
    for trial in range(12):
        P, M, N, K = 3, 16, 8, [16, 32, 24][trial % 3]
        x, y = _operands(rng, kind, P, M, N, K, exps)
        if trial % 4 == 1:  # equal products: every term at the top
            x[:], y[:] = x.flat[0], y.flat[0]
        if trial % 4 == 2:  # zero rows and cancelling columns
            x[:, :2] = 0.0
            y[:, K // 2:] = -y[:, :K - K // 2]
            x[:, :, K // 2:] = x[:, :, :K - K // 2]
        acc = None
        if trial % 3:
            e = rng.integers(-110, 110, (P, M, N)) if trial % 2 else \
                rng.integers(-20, 20, (P, M, N))
            acc = (rng.standard_normal((P, M, N)) * np.exp2(e)).astype(np.float32)
            acc[0, 0, :2] = 0.0
        got = dot.mma_chain(x, y, acc, step)
        want = _reference(x, y, acc, step)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_fast_chain_declines_what_it_cannot_take():
    rng = np.random.default_rng(5)
    x, y = _operands(rng, "tf32", 2, 16, 8, 16, (-3, 3))
    out = np.zeros((2, 16, 8), np.float32)
    assert dot._fast_chain(x, y, out.copy(), 8, True)
    for bad in (np.inf, np.nan, 1e-40, 2.0 ** 45, 1.0 + 2.0 ** -20):  # the last: 21 bits
        xb = x.copy()
        xb[0, 0, 0] = bad
        assert not dot._fast_chain(xb, y, out.copy(), 8, True)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(dot.mma_chain(xb, y, None, 8).view(np.uint32),
                                          _reference(xb, y, None, 8).view(np.uint32))
    for bad in (-0.0, 2.0 ** -110, 2.0 ** 110, np.inf):
        acc = np.ones((2, 16, 8), np.float32)
        acc[1, 2, 3] = bad
        assert not dot._fast_chain(x, y, acc.copy(), 8)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(dot.mma_chain(x, y, acc, 8).view(np.uint32),
                                          _reference(x, y, acc, 8).view(np.uint32))


def test_fast_chain_on_threads_gives_the_same_bits():
    # 64 programs of 64 x 64: more than one slice, so the slices run on the pool's threads
    rng = np.random.default_rng(6)
    x, y = _operands(rng, "tf32", 64, 64, 64, 16, (-6, 3))
    acc = rng.standard_normal((64, 64, 64)).astype(np.float32)
    np.testing.assert_array_equal(dot.mma_chain(x, y, acc, 8).view(np.uint32),
                                  _reference(x, y, acc, 8).view(np.uint32))
