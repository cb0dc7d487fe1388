"""The kernel corpus on minitriton, against float64 NumPy references."""
import math

import ml_dtypes
import numpy as np
import pytest

import minitriton
import minitriton.language as tl
import references as ref
from corpus import arrays, load, make_rng, run_case

pytestmark = pytest.mark.usefixtures("executor")  # every test runs kernels
corpus = load(minitriton, tl)


def outputs(name):
    return run_case(corpus, name, arrays())


def inputs(n_calls):
    """The values the case's rng(n) calls drew, in order."""
    rng = make_rng()
    return [rng(n) for n in n_calls]


def close(out, want, rtol, atol):
    np.testing.assert_allclose(ref.f64(out), want, rtol=rtol, atol=atol)


def test_add():
    x, y = inputs([1000, 1000])
    np.testing.assert_array_equal(outputs("case_add")["out"], x + y)


def test_promotion_and_integer_semantics():
    n = 64
    h, b, i = inputs([n, n, n])
    h, b, i = (h * 4).astype(np.float16), (b * 4).astype(ml_dtypes.bfloat16), \
        (i * 1e6).astype(np.int32)
    out = outputs("case_promote")
    assert out["h"].dtype == np.float16 and out["b"].dtype == ml_dtypes.bfloat16
    # fp16/bf16: `a * b + c` is one fma (rounded once), as NVPTX's aggressive fusion emits it
    # in every float type (docs/numerics.md)
    np.testing.assert_array_equal(out["h"], (h.astype(np.float64) * 3 + h).astype(np.float16))
    np.testing.assert_array_equal(out["b"],
                                  (b.astype(np.float64) * b + b).astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(out["f"], h.astype(np.float32) * np.float32(0.3))
    q, r = ref.trunc_divmod(i, 7)
    np.testing.assert_array_equal(out["i"], (q + r * 1000).astype(np.int32))
    np.testing.assert_array_equal(out["d"], i.astype(np.float32) / np.float32(3))
    np.testing.assert_array_equal(out["m"], (i.astype(np.int64) * 1000003).astype(np.int32))


def test_math():
    (x,) = inputs([128])
    x = ref.f64(x)
    ax = np.abs(x) + 0.5
    want = np.concatenate([np.exp(x), np.log(ax), np.sqrt(ax), 1 / np.sqrt(ax),
                           1 / (1 + np.exp(-x)), ref.erf(x), np.cos(x) + np.sin(x),
                           np.exp2(x) + np.log2(ax), x * x + ax, np.clip(x, -0.5, 0.5),
                           np.maximum(x, 0) - np.minimum(x, -0.25), np.where(x > 0, x, 0.1 * x)])
    close(outputs("case_math")["out"], want, rtol=2e-6, atol=2e-7)


def test_reductions():
    (x,) = inputs([16 * 32])
    x = x.reshape(16, 32)
    out = outputs("case_reduce")
    x64 = ref.f64(x)
    want = np.concatenate([x64.sum(1), x64.max(0), x64.min(0), [x64.sum()]])
    close(out["out"], want, rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(out["idx"], np.concatenate([x.argmax(1), x.argmin(0)]))


def test_softmax():
    (x,) = inputs([30 * 77])
    close(outputs("case_softmax")["y"], ref.softmax(x.reshape(30, 77)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,dtype", [("case_matmul_fp16", np.float16),
                                        ("case_matmul_bf16_transposed", ml_dtypes.bfloat16),
                                        ("case_matmul_fp32_ieee", np.float32)])
def test_matmul(name, dtype):
    a, b = inputs([70 * 90, 90 * 50])
    a = ref.f64(a.reshape(70, 90).astype(dtype))
    b = ref.f64(b.reshape(90, 50).astype(dtype))
    close(outputs(name)["c"], np.maximum(a @ b, 0), rtol=1e-5, atol=1e-5)


def test_tf32_drops_the_low_mantissa_bits_like_the_h200():
    a = corpus.tf32_rounding_input(16)
    np.testing.assert_array_equal(outputs("case_tf32_rounding")["out"], ref.tf32(a))


def test_dot_with_n_8_is_accepted():
    a, b = inputs([256, 128])
    a, b = (ref.f64(v.astype(np.float16)) for v in (a.reshape(16, 16), b.reshape(16, 8)))
    want = a @ b
    close(outputs("case_dot_small_n")["out"], want, rtol=1e-6, atol=1e-6)


def test_block_pointers():
    (x,) = inputs([37 * 45])
    np.testing.assert_array_equal(outputs("case_block_ptr")["y"],
                                  x.reshape(37, 45) * np.float32(2) + np.float32(1))


def test_atomics():
    (x,) = inputs([1000])
    x = (x * 100).astype(np.int32)
    out = outputs("case_atomics")
    assert out["total"].tolist() == [x.sum()]
    assert out["ticket"].tolist() == [0, 8]
    assert out["max"].tolist() == [x.max()]


def test_misc_constexpr_nested_static_range_cumsum():
    (x,) = inputs([300])
    blocks = math.ceil(300 / 64)
    x2 = ref.f64(x) * 2
    acc = x2 * 0 + x2 * 1 + x2 * 2 + sum(range(blocks))
    padded = np.zeros(blocks * 64)
    padded[:300] = x2
    cums = padded.reshape(blocks, 64).cumsum(1).reshape(-1)[:300]
    close(outputs("case_misc")["out"], acc + cums, rtol=1e-6, atol=1e-5)


def test_casts():
    (x,) = inputs([128])
    x = x * 3
    out = outputs("case_casts")
    np.testing.assert_array_equal(out["b"], x.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(out["h"], x.astype(np.float16))
    np.testing.assert_array_equal(out["i"], (x * 100).astype(np.int32))  # truncation toward 0
    np.testing.assert_array_equal(out["flag"], x > 0)


def test_trans():
    (x,) = inputs([16 * 32])
    np.testing.assert_array_equal(outputs("case_trans")["y"].reshape(32, 16), x.reshape(16, 32).T)


def test_gelu_row_sum_rmsnorm():
    (x,) = inputs([3000])
    close(outputs("case_gelu")["y"], ref.gelu_tanh(x), rtol=1e-6, atol=1e-6)
    (x,) = inputs([16 * 3000])
    close(outputs("case_row_sum")["out"], ref.f64(x).reshape(16, 3000).sum(1), rtol=1e-5,
          atol=1e-4)
    x, g = inputs([32 * 1000, 1000])
    y, rstd = ref.rmsnorm(x.reshape(32, 1000), g)
    out = outputs("case_rmsnorm_fwd")
    close(out["rstd"], rstd, rtol=1e-5, atol=1e-6)
    close(out["y"], y, rtol=1e-5, atol=1e-6)


def test_tensor_descriptor_loads_zero_fill_and_stores_clip():
    (x,) = inputs([37 * 64])
    x = x.reshape(37, 64).astype(np.float16)
    out = outputs("case_tensor_descriptor")
    # every row written once, nothing past row 37
    np.testing.assert_array_equal(out["y"], x * np.float16(2) + np.float16(1))
    edge = out["edge"].reshape(3, 16, 32)
    for p in range(3):  # window rows p*16-8 .. p*16+7, columns -16 .. 15
        want = np.zeros((16, 32), np.float16)
        for i, r in enumerate(range(p * 16 - 8, p * 16 + 8)):
            if 0 <= r < 37:
                want[i, 16:] = x[r, :16]
        np.testing.assert_array_equal(edge[p], want)


def test_descriptor_atomics_update_the_window_inside_the_tensor():
    f0, m0, x0 = inputs([30 * 52] * 3)
    f = ref.f64((f0 * 10).round()).reshape(30, 52)
    m = (m0 * 8).round().astype(np.int32).astype(np.int64).reshape(30, 52)
    x = (x0 * 1000).round().astype(np.int32).astype(np.int64).reshape(30, 52)
    r, c = np.arange(16)[:, None], np.arange(32)[None, :]
    for pid in range(5):
        om, on = pid * 5, pid * 8
        rows, cols = np.broadcast_arrays(r + om, c + on)
        inside = (rows < 30) & (cols < 52)
        rr, cc = rows[inside], cols[inside]
        f[rr, cc] += np.broadcast_to(r * 32 + c + pid, (16, 32))[inside]
        mod = np.fmod(r * 3 - c * 2 + pid * 11, 17)  # Triton's % truncates, like C
        m[rr, cc] = np.maximum(m[rr, cc], np.broadcast_to(mod, (16, 32))[inside])
        x[rr, cc] ^= np.broadcast_to((r * 32 + c) * (pid + 1), (16, 32))[inside]
    out = outputs("case_descriptor_atomics")
    np.testing.assert_array_equal(ref.f64(out["f"]), f)
    np.testing.assert_array_equal(out["m"], m)
    np.testing.assert_array_equal(out["x"], x)
