"""The kernel corpus on minitriton, against NumPy/PyTorch float64 references."""
import math

import numpy as np
import pytest
import torch

import minitriton
import minitriton.language as tl
from corpus import load, make_rng, names, run_case

corpus = load(minitriton, tl)


def outputs(name):
    return run_case(corpus, name, "cpu")


def inputs(n_calls):
    rng = make_rng("cpu")
    return [rng(n) for n in n_calls]


def test_add():
    x, y = inputs([1000, 1000])
    assert torch.equal(outputs("case_add")["out"], x + y)


def test_promotion_and_integer_semantics():
    n = 64
    h, b, i = inputs([n, n, n])
    h, b, i = (h * 4).half(), (b * 4).bfloat16(), (i * 1e6).int()
    out = outputs("case_promote")
    assert out["h"].dtype == torch.float16
    assert torch.equal(out["h"], h * 3.0 + h)  # fp16 math, rounded after each op
    assert torch.equal(out["b"], b * b + b)
    assert torch.equal(out["f"], (h.float() * torch.tensor(0.3)).float())
    iv = i.numpy().astype(np.int64)
    q = np.trunc(iv / 7).astype(np.int64)
    r = iv - q * 7
    assert np.array_equal(out["i"].numpy(), (q + r * 1000).astype(np.int32))
    assert torch.equal(out["d"], i.float() / 3)
    assert np.array_equal(out["m"].numpy(), (iv * 1000003).astype(np.int32))  # wraps


def test_math():
    (x,) = inputs([128])
    x = x.double()
    ax = x.abs() + 0.5
    ref = torch.cat([x.exp(), ax.log(), ax.sqrt(), ax.rsqrt(), torch.sigmoid(x),
                     torch.erf(x), x.cos() + x.sin(), torch.exp2(x) + torch.log2(ax),
                     x * x + ax, x.clamp(-0.5, 0.5), x.clamp(min=0) - x.clamp(max=-0.25),
                     torch.where(x > 0, x, 0.1 * x)])
    torch.testing.assert_close(outputs("case_math")["out"].double(), ref, rtol=2e-6, atol=2e-7)


def test_reductions():
    (x,) = inputs([16 * 32])
    x = x.reshape(16, 32)
    out = outputs("case_reduce")
    ref = torch.cat([x.double().sum(1), x.max(0).values.double(), x.min(0).values.double(),
                     x.double().sum().reshape(1)])
    torch.testing.assert_close(out["out"].double(), ref, rtol=1e-6, atol=1e-5)
    assert torch.equal(out["idx"].long(), torch.cat([x.argmax(1), x.argmin(0)]))


def test_softmax():
    (x,) = inputs([30 * 77])
    ref = torch.softmax(x.reshape(30, 77).double(), dim=1)
    torch.testing.assert_close(outputs("case_softmax")["y"].double(), ref, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,dtype,tol", [
    ("case_matmul_fp16", torch.float16, 1e-5),
    ("case_matmul_bf16_transposed", torch.bfloat16, 1e-5),
    ("case_matmul_fp32_ieee", torch.float32, 1e-5),
])
def test_matmul(name, dtype, tol):
    a, b = inputs([70 * 90, 90 * 50])
    a = a.reshape(70, 90).to(dtype).double()
    b = b.reshape(90, 50).to(dtype).double()
    ref = torch.relu(a @ b)
    torch.testing.assert_close(outputs(name)["c"].double(), ref, rtol=tol, atol=tol)


def test_tf32_drops_the_low_mantissa_bits_like_the_h200():
    out = outputs("case_tf32_rounding")["out"].numpy()
    n = 16
    base = np.tile([1.0, -1.0, 1.5, 3.0], n * n // 4)
    frac = np.array([0.5, 0.25, 0.75, 0.5 + 2 ** -12, 0.125, 0.999])[np.arange(n * n) % 6]
    a = (base * (1 + frac * 2.0 ** -10)).astype(np.float32)
    m, e = np.frexp(a.astype(np.float64))  # a = m * 2**e, 0.5 <= |m| < 1
    scaled = np.abs(m) * 2.0 ** 11  # 11 significant bits: TF32's 10 + the implicit one
    rounded = np.sign(m) * np.floor(scaled) / 2.0 ** 11 * 2.0 ** e  # truncated toward zero
    assert np.array_equal(out.ravel(), rounded.astype(np.float32))


def test_dot_with_n_8_is_accepted():
    a, b = inputs([256, 128])
    ref = a.reshape(16, 16).half().double() @ b.reshape(16, 8).half().double()
    torch.testing.assert_close(outputs("case_dot_small_n")["out"].double(), ref,
                               rtol=1e-6, atol=1e-6)


def test_block_pointers():
    (x,) = inputs([37 * 45])
    assert torch.equal(outputs("case_block_ptr")["y"], x.reshape(37, 45) * 2.0 + 1.0)


def test_atomics():
    (x,) = inputs([1000])
    x = (x * 100).int()
    out = outputs("case_atomics")
    assert out["total"].item() == x.sum().item()
    assert out["ticket"].tolist() == [0, 8]
    assert out["max"].item() == x.max().item()


def test_misc_constexpr_nested_static_range_cumsum():
    (x,) = inputs([300])
    blocks = math.ceil(300 / 64)
    x2 = x * 2.0
    acc = x2 * 0 + x2 * 1 + x2 * 2 + sum(range(blocks))
    padded = torch.zeros(blocks * 64)
    padded[:300] = x2
    cums = padded.reshape(blocks, 64).cumsum(1).reshape(-1)[:300]
    torch.testing.assert_close(outputs("case_misc")["out"], acc + cums, rtol=1e-6, atol=1e-5)


def test_casts():
    (x,) = inputs([128])
    x = x * 3
    out = outputs("case_casts")
    assert torch.equal(out["b"], x.bfloat16())
    assert torch.equal(out["h"], x.half())
    assert torch.equal(out["i"], (x * 100).int())  # truncation toward zero
    assert torch.equal(out["flag"], x > 0)


def test_trans():
    (x,) = inputs([16 * 32])
    assert torch.equal(outputs("case_trans")["y"].reshape(32, 16), x.reshape(16, 32).t())


@pytest.mark.parametrize("name", names("bad_"))
def test_rejected(name):
    with pytest.raises((minitriton.MiniTritonError, TypeError)):
        getattr(corpus, name)("cpu", make_rng("cpu"))


def test_gelu_row_sum_rmsnorm():
    rng = make_rng("cpu")
    x = rng(3000).double()
    ref = torch.nn.functional.gelu(x, approximate="tanh")
    torch.testing.assert_close(outputs("case_gelu")["y"].double(), ref, rtol=1e-6, atol=1e-6)
    (x,) = inputs([16 * 3000])
    torch.testing.assert_close(outputs("case_row_sum")["out"].double(),
                               x.reshape(16, 3000).double().sum(1), rtol=1e-5, atol=1e-4)
    x, g = inputs([32 * 1000, 1000])
    x = x.reshape(32, 1000).double()
    rstd = 1 / torch.sqrt((x * x).mean(1) + 1e-6)
    out = outputs("case_rmsnorm_fwd")
    torch.testing.assert_close(out["rstd"].double(), rstd, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out["y"].double(), x * rstd[:, None] * g.double(), rtol=1e-5,
                               atol=1e-6)


def test_tensor_descriptor_loads_zero_fill_and_stores_clip():
    (x,) = inputs([37 * 64])
    x = x.reshape(37, 64).half()
    out = outputs("case_tensor_descriptor")
    assert torch.equal(out["y"], x * 2.0 + 1.0)  # every row written once, nothing past row 37
    edge = out["edge"].reshape(3, 16, 32)
    for p in range(3):  # window rows p*16-8 .. p*16+7, columns -16 .. 15
        want = torch.zeros(16, 32, dtype=torch.float16)
        for i, r in enumerate(range(p * 16 - 8, p * 16 + 8)):
            if 0 <= r < 37:
                want[i, 16:] = x[r, :16]
        assert torch.equal(edge[p], want)


def test_descriptor_atomics_update_the_window_inside_the_tensor():
    f0, m0, x0 = inputs([30 * 52] * 3)
    f = (f0 * 10).round().reshape(30, 52).double()
    m = (m0 * 8).round().int().reshape(30, 52).long()
    x = (x0 * 1000).round().int().reshape(30, 52).long()
    r, c = torch.arange(16)[:, None], torch.arange(32)[None, :]
    for pid in range(5):
        om, on = pid * 5, pid * 8
        rows, cols = r + om, c + on
        inside = (rows >= 0) & (rows < 30) & (cols >= 0) & (cols < 52)
        rr, cc = rows.expand(16, 32)[inside], cols.expand(16, 32)[inside]
        f[rr, cc] += (r * 32 + c + pid).expand(16, 32)[inside].double()
        mod = torch.fmod(r * 3 - c * 2 + pid * 11, 17)  # Triton's % truncates, like C
        m[rr, cc] = torch.maximum(m[rr, cc], mod[inside])
        x[rr, cc] ^= ((r * 32 + c) * (pid + 1)).expand(16, 32)[inside]
    out = outputs("case_descriptor_atomics")
    assert torch.equal(out["f"].double(), f)
    assert torch.equal(out["m"].long(), m) and torch.equal(out["x"].long(), x)
