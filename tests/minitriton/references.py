"""What minitriton's tests compare with: float64 NumPy references and small helpers, shared by
the test files (NumPy only: these tests run without torch)."""
import math

import numpy as np


def rand(shape, seed=0, dtype=np.float32, scale=1.0):
    """Standard-normal values (times `scale`), drawn in float64 and rounded once to `dtype`."""
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def strides(a):
    """A NumPy array's strides in elements, as a kernel takes them (NumPy counts bytes)."""
    return tuple(s // a.itemsize for s in a.strides)


def f64(a):
    return np.asarray(a).astype(np.float64)


def softmax(x, axis=-1):
    x = f64(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def logsumexp(x, axis=-1):
    x = f64(x)
    m = x.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def gelu_tanh(x):
    """GeLU, tanh approximation (the lecture's, torch's approximate="tanh")."""
    x = f64(x)
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(f64(x))


def leaky_relu(x, slope=0.01):
    x = f64(x)
    return np.where(x >= 0, x, slope * x)


def trunc_divmod(a, b):
    """Integer // and % as C (and Triton) do them: the quotient truncates toward zero."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    q = np.trunc(a / b).astype(np.int64)
    return q, a - q * b


def tf32(x):
    """fp32 values rounded as tl.dot's TF32 inputs on the H200: the low 13 mantissa bits
    dropped (truncation toward zero, 10 explicit bits kept)."""
    x = np.asarray(x, np.float32)
    return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def rmsnorm(x, g, eps=1e-6):
    """(y, rstd) of RMSNorm over the last axis."""
    x = f64(x)
    rstd = 1 / np.sqrt((x * x).mean(-1) + eps)
    return x * rstd[..., None] * f64(g), rstd


def layer_norm(x, w, b, eps=1e-5):
    """(y, mean, rstd) of LayerNorm over the last axis."""
    x = f64(x)
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    return (x - mean) * rstd * f64(w) + f64(b), mean[..., 0], rstd[..., 0]


def layer_norm_backward(x, w, dy, eps=1e-5):
    """(dx, dw, db) of LayerNorm over the last axis of a 2-D x, for the output gradient dy."""
    x, w, dy = f64(x), f64(w), f64(dy)
    _, mean, rstd = layer_norm(x, w, np.zeros_like(w), eps)
    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    dx = (wdy - xhat * (xhat * wdy).mean(-1, keepdims=True) - wdy.mean(-1, keepdims=True)) * \
        rstd[:, None]
    return dx, (dy * xhat).sum(0), dy.sum(0)


def attention(q, k, v, scale, causal=False):
    """(out, logsumexp) of softmax(q k^T * scale) v over (B, N, D) inputs; causal: query i sees
    keys 0..i."""
    s = f64(q) @ f64(k).transpose(0, 2, 1) * scale  # (B, Nq, Nk)
    if causal:
        s = np.where(np.triu(np.ones(s.shape[1:], bool), 1), -np.inf, s)
    return softmax(s) @ f64(v), logsumexp(s)
