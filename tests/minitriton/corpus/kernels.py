# A corpus of small kernels written as users write them, run by minitriton on the CPU and, on a
# GPU machine, by real Triton too (tests/minitriton/test_gpu_parity.py), to check that both accept
# and reject the same kernels and compute the same values. Kernels that several test files use
# live here too.
# This file is executed by tests/minitriton/corpus/__init__.py with `triton` and `tl` (either
# Triton's or minitriton's) already in its namespace; it is not imported directly.
# Each `case_*(xp, rng)` returns a dict of output arrays; each `bad_*(xp, rng)` must raise
# (`bad_launch_*`: the arguments do not bind; the others: the kernel does not compile). `rng(n)`
# draws NumPy fp32 inputs; `xp` (corpus.NumpyArrays or TorchArrays) puts them where the
# kernel runs and allocates the outputs there.
# ruff: noqa: F821
import ml_dtypes
import numpy as np


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


def case_add(xp, rng):
    x, y = xp.put(rng(1000)), xp.put(rng(1000))
    out = xp.empty(1000)
    add_kernel[(triton.cdiv(1000, 128),)](x, y, out, 1000, BLOCK=128)
    return {"out": out}


@triton.jit
def promote_kernel(h_ptr, b_ptr, i_ptr, scale, out_h, out_b, out_f, out_i, out_d, out_m,
                   BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    h = tl.load(h_ptr + offs)  # fp16
    b = tl.load(b_ptr + offs)  # bf16
    i = tl.load(i_ptr + offs)  # int32
    tl.store(out_h + offs, h * 3.0 + h)  # literal does not promote: fp16 math
    tl.store(out_b + offs, b * b + b)  # bf16 math
    tl.store(out_f + offs, h * scale)  # fp32 argument promotes to fp32
    tl.store(out_i + offs, i // 7 + i % 7 * 1000)  # C division and remainder
    tl.store(out_d + offs, i / 3)  # int / int -> fp32
    tl.store(out_m + offs, i * 1000003)  # int32 wrap-around


def case_promote(xp, rng):
    n = 64
    h = xp.put((rng(n) * 4).astype(np.float16))
    b = xp.put((rng(n) * 4).astype(ml_dtypes.bfloat16))
    i = xp.put((rng(n) * 1e6).astype(np.int32))
    outs = {"h": xp.empty(n, np.float16), "b": xp.empty(n, ml_dtypes.bfloat16),
            "f": xp.empty(n), "i": xp.empty(n, np.int32), "d": xp.empty(n),
            "m": xp.empty(n, np.int32)}
    promote_kernel[(1,)](h, b, i, 0.3, *outs.values(), BLOCK=n)
    return outs


@triton.jit
def math_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    ax = tl.abs(x) + 0.5
    tl.store(out_ptr + 0 * BLOCK + offs, tl.exp(x))
    tl.store(out_ptr + 1 * BLOCK + offs, tl.log(ax))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.sqrt(ax))
    tl.store(out_ptr + 3 * BLOCK + offs, tl.rsqrt(ax))
    tl.store(out_ptr + 4 * BLOCK + offs, tl.sigmoid(x))
    tl.store(out_ptr + 5 * BLOCK + offs, tl.erf(x))
    tl.store(out_ptr + 6 * BLOCK + offs, tl.cos(x) + tl.sin(x))
    tl.store(out_ptr + 7 * BLOCK + offs, tl.exp2(x) + tl.log2(ax))
    tl.store(out_ptr + 8 * BLOCK + offs, tl.fma(x, x, ax))
    tl.store(out_ptr + 9 * BLOCK + offs, tl.clamp(x, -0.5, 0.5))
    tl.store(out_ptr + 10 * BLOCK + offs, tl.maximum(x, 0.0) - tl.minimum(x, -0.25))
    tl.store(out_ptr + 11 * BLOCK + offs, tl.where(x > 0, x, 0.1 * x))


def case_math(xp, rng):
    x = xp.put(rng(128))
    out = xp.empty(12 * 128)
    math_kernel[(1,)](x, out, BLOCK=128)
    return {"out": out}


@triton.jit
def reduce_kernel(x_ptr, out_ptr, idx_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    tl.store(out_ptr + rows, tl.sum(x, axis=1))
    tl.store(out_ptr + M + cols, tl.max(x, axis=0))
    tl.store(out_ptr + M + N + cols, tl.min(x, axis=0, keep_dims=True).reshape(N))
    tl.store(out_ptr + M + 2 * N, tl.sum(x))
    tl.store(idx_ptr + rows, tl.argmax(x, axis=1))
    tl.store(idx_ptr + M + cols, tl.argmin(x, axis=0))


def case_reduce(xp, rng):
    x = xp.put(rng(16 * 32))
    out = xp.empty(16 + 2 * 32 + 1)
    idx = xp.empty(16 + 32, np.int32)
    reduce_kernel[(1,)](x, out, idx, M=16, N=32)
    return {"out": out, "idx": idx}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(y_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


def case_softmax(xp, rng):
    x = xp.put(rng(30 * 77).reshape(30, 77))
    y = xp.empty((30, 77))
    softmax_kernel[(30,)](x, y, xp.strides(x)[0], 77, BLOCK=128)
    return {"y": y}


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, IEEE: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * sam + offs_k[None, :] * sak
    b_ptrs = b_ptr + offs_k[:, None] * sbk + offs_n[None, :] * sbn
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] + k < K) & (offs_n[None, :] < N), other=0.0)
        if IEEE:
            acc += tl.dot(a, b, input_precision="ieee")
        else:
            acc += tl.dot(a, b)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    acc = tl.maximum(acc, 0.0)
    tl.store(c_ptr + offs_m[:, None] * scm + offs_n[None, :] * scn, acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _matmul(xp, rng, dtype, ieee=False, transpose_a=False):
    M, N, K = 70, 50, 90
    a = rng(M * K).reshape(M, K).astype(dtype)
    a = xp.put(np.asfortranarray(a) if transpose_a else a)  # column-major: strides (1, M)
    b = xp.put(rng(K * N).reshape(K, N).astype(dtype))
    c = xp.empty((M, N))
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    matmul_kernel[grid](a, b, c, M, N, K, *xp.strides(a), *xp.strides(b), *xp.strides(c),
                        BM=32, BN=32, BK=32, IEEE=ieee)
    return {"c": c}


@triton.jit
def dot_chain_kernel(a_ptr, b_ptr, c_ptr, d_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr, PREC: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    acc2 = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc, input_precision=PREC)
        acc2 += tl.dot(a, b, input_precision=PREC)  # Triton folds the add into the dot
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)
    tl.store(d_ptr + rm[:, None] * BN + rn[None, :], acc2)


def _dot_chain(xp, rng, dtype, prec, K=96, BK=32):
    # exponents spread over 2**-6..2**5, so that the tensor cores' truncation shows
    scale_a = np.exp2(np.round(rng(32 * K) * 3)).reshape(32, K)
    scale_b = np.exp2(np.round(rng(K * 32) * 3)).reshape(K, 32)
    a = xp.put((rng(32 * K).reshape(32, K) * scale_a).astype(dtype))
    b = xp.put((rng(K * 32).reshape(K, 32) * scale_b).astype(dtype))
    c, d = xp.empty((32, 32)), xp.empty((32, 32))
    dot_chain_kernel[(1,)](a, b, c, d, K, BM=32, BN=32, BK=BK, PREC=prec)
    return {"c": c, "d": d}


def case_dot_chain_fp16(xp, rng):
    return _dot_chain(xp, rng, np.float16, "ieee")


def case_dot_chain_bf16(xp, rng):
    return _dot_chain(xp, rng, ml_dtypes.bfloat16, "ieee", BK=16)


def case_dot_chain_tf32(xp, rng):
    return _dot_chain(xp, rng, np.float32, "tf32", BK=64, K=128)


def case_dot_chain_fp32_ieee(xp, rng):
    return _dot_chain(xp, rng, np.float32, "ieee")


def case_matmul_fp16(xp, rng):
    return _matmul(xp, rng, np.float16)


def case_matmul_bf16_transposed(xp, rng):
    return _matmul(xp, rng, ml_dtypes.bfloat16, transpose_a=True)


def case_matmul_fp32_ieee(xp, rng):
    return _matmul(xp, rng, np.float32, ieee=True)


@triton.jit
def dot_identity_kernel(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(out_ptr + r[:, None] * N + r[None, :], tl.dot(a, b))


def tf32_rounding_input(n=16):
    """fp32 values a tenth of a TF32 ulp (2**-10) or so off the TF32 grid, both signs."""
    base = np.tile([1.0, -1.0, 1.5, 3.0], n * n // 4)
    frac = np.array([0.5, 0.25, 0.75, 0.5 + 2 ** -12, 0.125, 0.999])[np.arange(n * n) % 6]
    return (base * (1 + frac * 2.0 ** -10)).astype(np.float32).reshape(n, n)


def case_tf32_rounding(xp, rng):
    # a @ I == a exactly except for the rounding of a's fp32 values to TF32
    n = 16
    a = xp.put(tf32_rounding_input(n))
    eye = xp.put(np.eye(n, dtype=np.float32))
    out = xp.empty((n, n))
    dot_identity_kernel[(1,)](a, eye, out, N=n)
    return {"out": out}


@triton.jit
def small_dot_kernel(a_ptr, b_ptr, out_ptr):
    i16 = tl.arange(0, 16)
    i8 = tl.arange(0, 8)
    a = tl.load(a_ptr + i16[:, None] * 16 + i16[None, :])  # (16, 16)
    b = tl.load(b_ptr + i16[:, None] * 8 + i8[None, :])  # (16, 8): N = 8 is allowed
    tl.store(out_ptr + i16[:, None] * 8 + i8[None, :], tl.dot(a, b))


def case_dot_small_n(xp, rng):
    a = xp.put(rng(256).reshape(16, 16).astype(np.float16))
    b = xp.put(rng(128).reshape(16, 8).astype(np.float16))
    out = xp.empty((16, 8))
    small_dot_kernel[(1,)](a, b, out)
    return {"out": out}


@triton.jit
def block_ptr_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(N, 1), offsets=(pid * BM, 0),
                            block_shape=(BM, BN), order=(1, 0))
    dst = tl.make_block_ptr(y_ptr, shape=(M, N), strides=(N, 1), offsets=(pid * BM, 0),
                            block_shape=(BM, BN), order=(1, 0))
    for _ in range(0, tl.cdiv(N, BN)):
        x = tl.load(src, boundary_check=(0, 1), padding_option="zero")
        tl.store(dst, x * 2.0 + 1.0, boundary_check=(0, 1))
        src = tl.advance(src, (0, BN))
        dst = tl.advance(dst, (0, BN))


def case_block_ptr(xp, rng):
    x = xp.put(rng(37 * 45).reshape(37, 45))
    y = xp.full((37, 45), -7.0)
    block_ptr_kernel[(triton.cdiv(37, 16),)](x, y, 37, 45, BM=16, BN=16)
    return {"y": y}


@triton.jit
def atomic_kernel(x_ptr, total_ptr, ticket_ptr, max_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(total_ptr, tl.sum(x, axis=0))
    tl.atomic_max(max_ptr, tl.max(x, axis=0))
    tl.atomic_add(ticket_ptr + 1, 1)


def case_atomics(xp, rng):
    x = xp.put((rng(1000) * 100).astype(np.int32))
    total = xp.full(1, 0, np.int32)
    ticket = xp.full(2, 0, np.int32)
    mx = xp.full(1, -2**31, np.int32)
    atomic_kernel[(8,)](x, total, ticket, mx, 1000, BLOCK=128)
    return {"total": total, "ticket": ticket, "max": mx}


@triton.jit
def helper_scale(x, factor: tl.constexpr):
    return x * factor


@triton.jit
def misc_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr = "double"):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if MODE == "double":
        x = helper_scale(x, 2.0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.static_range(3):
        acc += x * i
    for j in tl.range(0, tl.num_programs(0)):
        acc += j
    acc += tl.cumsum(x, axis=0)
    tl.store(out_ptr + offs, acc, mask=mask)


def case_misc(xp, rng):
    x = xp.put(rng(300))
    out = xp.empty(300)
    misc_kernel[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](x, out, 300, BLOCK=64)
    return {"out": out}


@triton.jit
def cast_kernel(x_ptr, b_ptr, h_ptr, i_ptr, flag_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(b_ptr + offs, x.to(tl.bfloat16))
    tl.store(h_ptr + offs, x.to(tl.float16))
    tl.store(i_ptr + offs, (x * 100).to(tl.int32))
    tl.store(flag_ptr + offs, x > 0)


def case_casts(xp, rng):
    x = xp.put(rng(128) * 3)
    outs = {"b": xp.empty(128, ml_dtypes.bfloat16), "h": xp.empty(128, np.float16),
            "i": xp.empty(128, np.int32), "flag": xp.empty(128, np.bool_)}
    cast_kernel[(1,)](x, *outs.values(), BLOCK=128)
    return outs


@triton.jit
def trans_kernel(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)
    c = tl.arange(0, N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :])
    t = tl.trans(x)
    tl.store(y_ptr + c[:, None] * M + r[None, :], t)


def case_trans(xp, rng):
    x = xp.put(rng(16 * 32))
    y = xp.empty(16 * 32)
    trans_kernel[(1,)](x, y, M=16, N=32)
    return {"y": y}


# ----------------------------------------------------------------------------- must be rejected

@triton.jit
def arange3_kernel(x_ptr):
    tl.store(x_ptr + tl.arange(0, 3), 1.0)


def bad_arange_not_power_of_two(xp, rng):
    arange3_kernel[(1,)](xp.empty(4))


@triton.jit
def arange_runtime_kernel(x_ptr, n):
    tl.store(x_ptr + tl.arange(0, n), 1.0)


def bad_arange_runtime_bound(xp, rng):
    arange_runtime_kernel[(1,)](xp.empty(16), 16)


@triton.jit
def shapes_kernel(x_ptr):
    a = tl.arange(0, 16)
    b = tl.arange(0, 32)
    tl.store(x_ptr + a, (a + b).to(tl.float32))


def bad_incompatible_shapes(xp, rng):
    shapes_kernel[(1,)](xp.empty(32))


@triton.jit
def exp_half_kernel(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


def bad_exp_fp16(xp, rng):
    exp_half_kernel[(1,)](xp.full(16, 1.0, np.float16))


@triton.jit
def dot_small_k_kernel(a_ptr, out_ptr):
    i16 = tl.arange(0, 16)
    i8 = tl.arange(0, 8)
    a = tl.load(a_ptr + i16[:, None] * 8 + i8[None, :])  # (16, 8): K = 8
    b = tl.load(a_ptr + i8[:, None] * 16 + i16[None, :])  # (8, 16)
    tl.store(out_ptr + i16[:, None] * 16 + i16[None, :], tl.dot(a, b))


def bad_dot_k_under_16(xp, rng):
    dot_small_k_kernel[(1,)](xp.full(128, 1.0, np.float16), xp.empty(256))


@triton.jit
def block_bool_kernel(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    if x > 0:
        tl.store(x_ptr + offs, x * 2)


def bad_block_as_bool(xp, rng):
    block_bool_kernel[(1,)](xp.full(16, 1.0))


def bad_launch_missing_constexpr(xp, rng):
    x = xp.full(16, 1.0)
    add_kernel[(1,)](x, x, x, 16)


def bad_launch_too_many_arguments(xp, rng):
    x = xp.full(16, 1.0)
    add_kernel[(1,)](x, x, x, 16, 16, 16)


@triton.jit
def zeros3_kernel(x_ptr):
    z = tl.zeros([3], dtype=tl.float32)
    tl.store(x_ptr + tl.arange(0, 4), tl.sum(z, axis=0))


def bad_zeros_not_power_of_two(xp, rng):
    zeros3_kernel[(1,)](xp.empty(4))


# ----------------------------------------------------------------------------- more lecture kernels

@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    a = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    tl.store(y_ptr + offs, x * tl.sigmoid(2.0 * a), mask=mask)


def case_gelu(xp, rng):
    x = xp.put(rng(3000))
    y = xp.empty(3000)
    gelu_kernel[(triton.cdiv(3000, 1024),)](x, y, 3000, BLOCK=1024)
    return {"y": y}


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def case_row_sum(xp, rng):
    x = xp.put(rng(16 * 3000).reshape(16, 3000))
    out = xp.empty(16)
    row_sum_kernel[(16,)](x, out, 3000, xp.strides(x)[0], BLOCK=1024)
    return {"out": out}


@triton.jit
def rmsnorm_fwd_kernel(x_ptr, g_ptr, y_ptr, rstd_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * n_cols + cols, x * rstd * g, mask=mask)


def case_rmsnorm_fwd(xp, rng):
    x = xp.put(rng(32 * 1000).reshape(32, 1000))
    g = xp.put(rng(1000))
    y, rstd = xp.empty((32, 1000)), xp.empty(32)
    rmsnorm_fwd_kernel[(32,)](x, g, y, rstd, 1000, 1e-6, BLOCK=1024)
    return {"y": y, "rstd": rstd}


def _descriptor_class():
    import importlib
    return importlib.import_module(triton.__name__ + ".tools.tensor_descriptor").TensorDescriptor


@triton.jit
def descriptor_kernel(x_desc, y_desc, edge_ptr, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    for j in range(0, 2):
        x = x_desc.load([pid * BM, j * BN])  # zeros past the last row
        y_desc.store([pid * BM, j * BN], x * 2.0 + 1.0)  # clipped at the last row
    e = x_desc.load([pid * BM - BM // 2, -(BN // 2)])  # half above, half left of the tensor
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(edge_ptr + pid * BM * BN + offs, e)


def case_tensor_descriptor(xp, rng):
    TD = _descriptor_class()
    x = xp.put(rng(37 * 64).reshape(37, 64).astype(np.float16))
    y = xp.full((37, 64), -7.0, np.float16)
    programs = triton.cdiv(37, 16)
    edge = xp.empty(programs * 16 * 32, np.float16)
    descriptor_kernel[(programs,)](TD.from_tensor(x, [16, 32]), TD.from_tensor(y, [16, 32]),
                                   edge, BM=16, BN=32)
    return {"y": y, "edge": edge}


@triton.jit
def descriptor_atomic_kernel(f_desc, m_desc, x_desc, BM: tl.constexpr, BN: tl.constexpr):
    # Overlapping windows, the last ones past the tensors' ends: TMA reductions update only the
    # part inside. Offsets >= 0 and column offsets of 32 bytes (the GPU faults otherwise, see
    # GPUFaultError). Integer-valued floats: the sums are exact in any order.
    pid = tl.program_id(0)
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    om, on = pid * 5, pid * 8
    f_desc.atomic_add([om, on], (r * BN + c + pid).to(tl.float32))
    m_desc.atomic_max([om, on], (r * 3 - c * 2 + pid * 11) % 17)
    x_desc.atomic_xor([om, on], (r * BN + c) * (pid + 1))


def case_descriptor_atomics(xp, rng):
    TD = _descriptor_class()
    f = xp.put((rng(30 * 52) * 10).round().reshape(30, 52))
    m = xp.put((rng(30 * 52) * 8).round().astype(np.int32).reshape(30, 52))
    x = xp.put((rng(30 * 52) * 1000).round().astype(np.int32).reshape(30, 52))
    descriptor_atomic_kernel[(5,)](TD.from_tensor(f, [16, 32]), TD.from_tensor(m, [16, 32]),
                                   TD.from_tensor(x, [16, 32]), BM=16, BN=32)
    return {"f": f, "m": m, "x": x}


@triton.jit
def descriptor_store_shape_kernel(x_desc, BM: tl.constexpr, BN: tl.constexpr):
    x_desc.store([0, 0], tl.zeros([BM, BN // 2], dtype=tl.float16))


def bad_descriptor_store_shape(xp, rng):
    x = xp.full((32, 64), 0.0, np.float16)
    descriptor_store_shape_kernel[(1,)](_descriptor_class().from_tensor(x, [16, 32]), BM=16,
                                        BN=32)


# ----------------------------------------------------------------------------- shared by the tests

@triton.jit
def spin_lock_kernel(lock_ptr, counter_ptr, order_ptr):
    # each program takes the next ticket under an atomic_cas spin lock: order[t] is the t-th in
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    ticket = tl.load(counter_ptr)
    tl.store(order_ptr + ticket, tl.program_id(0))
    tl.store(counter_ptr, ticket + 1)
    tl.atomic_xchg(lock_ptr, 0)


@triton.jit
def copy2d_kernel(x_ptr, y_ptr, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr):
    # y = x for (M, N <= BN) arrays of any strides: rows in blocks of BM per program
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.arange(0, BN)
    mask = (m[:, None] < M) & (n[None, :] < N)
    x = tl.load(x_ptr + m[:, None] * sxm + n[None, :] * sxn, mask=mask)
    tl.store(y_ptr + m[:, None] * sym + n[None, :] * syn, x, mask=mask)


@triton.jit
def rand_kernel(seed, base, ints_ptr, u_ptr, n_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    r0, r1, r2, r3 = tl.randint4x(seed, base + offs)
    tl.store(ints_ptr + 0 * n + offs, r0.to(tl.int32, bitcast=True), mask=mask)
    tl.store(ints_ptr + 1 * n + offs, r1.to(tl.int32, bitcast=True), mask=mask)
    tl.store(ints_ptr + 2 * n + offs, r2.to(tl.int32, bitcast=True), mask=mask)
    tl.store(ints_ptr + 3 * n + offs, r3.to(tl.int32, bitcast=True), mask=mask)
    tl.store(ints_ptr + 4 * n + offs, tl.randint(seed, base + offs).to(tl.int32, bitcast=True),
             mask=mask)
    tl.store(u_ptr + offs, tl.rand(seed, base + offs), mask=mask)
    tl.store(n_ptr + offs, tl.randn(seed, base + offs), mask=mask)


def _rand_runs(xp):
    outs = {}
    for seed, base in ((0, 0), (42, 1000), (-5, 2**31 - 300), (2**31 - 1, 7)):
        n = 300
        ints, u, z = xp.empty(5 * n, np.int32), xp.empty(n), xp.empty(n)
        rand_kernel[(triton.cdiv(n, 128),)](seed, base, ints, u, z, n, BLOCK=128)
        outs.update({f"ints_{seed}": ints, f"u_{seed}": u, f"n_{seed}": z})
    return outs


def case_rand(xp, rng):
    # Philox integers and rand: bit-exact with the GPU
    return {k: v for k, v in _rand_runs(xp).items() if not k.startswith("n_")}


def case_randn(xp, rng):
    # randn goes through the GPU's approximate log/sqrt/cos: equal to a few ulp, not bit for bit
    return {k: v for k, v in _rand_runs(xp).items() if k.startswith("n_")}


@triton.jit
def _corpus_add(a, b):
    return a + b


@triton.jit
def _corpus_argmax(va, ia, vb, ib):
    take_b = vb > va
    return tl.where(take_b, vb, va), tl.where(take_b, ib, ia)


@triton.jit
def scan_sort_kernel(x_ptr, i_ptr, idx_ptr, out_ptr, int_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    offs = rows * N + cols
    x = tl.load(x_ptr + offs)  # fp32, with repeats and -0.0/+0.0
    i = tl.load(i_ptr + offs)  # int32
    tl.store(out_ptr + 0 * M * N + offs, tl.sort(x))
    tl.store(out_ptr + 1 * M * N + offs, tl.sort(x, descending=True))
    tl.store(out_ptr + 2 * M * N + offs, tl.flip(x, 1))
    tl.store(out_ptr + 3 * M * N + offs, tl.associative_scan(x, 1, _corpus_argmax_value))
    tl.store(out_ptr + 4 * M * N + offs, tl.sort(tl.flip(x, 1)))  # the same network, other input
    tl.store(out_ptr + 5 * M * N + offs, tl.gather(x, tl.load(idx_ptr + offs), 1))
    tl.store(int_ptr + 0 * M * N + offs, tl.associative_scan(i, 1, _corpus_add))
    tl.store(int_ptr + 1 * M * N + offs, tl.associative_scan(i, 0, _corpus_add, reverse=True))
    v, arg = tl.associative_scan((x, cols + rows * 0), 1, _corpus_argmax)
    tl.store(int_ptr + 2 * M * N + offs, arg)
    tl.store(int_ptr + 3 * M * N + offs, tl.sort(i, descending=True))
    flat = tl.arange(0, N)
    tl.store(int_ptr + 4 * M * N + tl.arange(0, 2 * N),
             tl.interleave(tl.load(i_ptr + flat), tl.load(i_ptr + N + flat)))
    h = tl.histogram(tl.load(i_ptr + flat) & 15, 16, mask=flat < N - 3)
    tl.store(int_ptr + 5 * M * N + tl.arange(0, 16), h)


@triton.jit
def _corpus_argmax_value(a, b):
    return tl.maximum(a, b)


def case_scan_sort(xp, rng):
    m, n = 4, 64
    x = np.round(rng(m * n) * 4) / 4  # repeats, so ties and zeros of both signs occur
    x[::7] = -0.0
    i = (rng(m * n) * 1000).astype(np.int32)
    idx = ((rng(m * n) * 1e4).astype(np.int64) % n).astype(np.int32)
    out, ints = xp.full(6 * m * n, 0.0), xp.full(6 * m * n, 0, np.int32)
    scan_sort_kernel[(1,)](xp.put(x.reshape(m, n)), xp.put(i), xp.put(idx), out, ints,
                           M=m, N=n)
    return {"out": out, "ints": ints}
