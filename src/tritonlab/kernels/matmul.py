"""Tiled matmul with a fused epilogue (lecture §8, exercises 4 and 8d).

`matmul_relu_kernel` is the lecture's kernel as written: a 2-D grid, one output tile per
program, a loop along K with `tl.dot`, ReLU on the accumulator before the single write. Its
traffic for n = 256 reproduces the lecture's table (lectures/04_triton_matmul.py).

`matmul_kernel` is the tuned version behind `matmul()`: a 1-D grid in grouped order (GROUP_M
row-tiles share the B columns they read, so neighbours hit L2), `@triton.autotune` over tile
sizes, warps and pipeline stages on the GPU, strides for transposed or non-contiguous inputs,
and `ACTIVATION` none/relu/gelu applied before the write. fp32 accumulation throughout.
"""
from __future__ import annotations

import functools

import torch

from ..backend import DEVICE, TensorDescriptor, tl, triton
from ._launch import FLOAT_DTYPES, check_inputs, launch, sm_count

ACTIVATIONS = ("none", "relu", "gelu")


@triton.jit
def matmul_relu_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                       stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)  # which output tile
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak  # (BM, BK)
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn  # (BK, BN)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] + k < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)  # read BM*BK + BK*BN per step
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    acc = tl.maximum(acc, 0.0)  # fused ReLU: no round trip of C through memory
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _config(bm, bn, bk, warps, stages):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                         num_warps=warps, num_stages=stages)


# Pruned for Hopper: 8 configurations keep tuning well under 30 s per shape (128x256x64 with 8
# warps ran at cuBLAS speed for bf16 4096^3 on an H200; 64x128 and 128x64 tiles give a 1024^2
# output 128 programs, about one per SM, where 128x128 gives 64). The simulator runs the first
# one (timing means nothing there), so it is the smallest.
CONFIGS = [_config(64, 64, 32, 4, 4), _config(128, 128, 64, 4, 4), _config(64, 128, 64, 4, 4),
           _config(128, 64, 64, 4, 4), _config(128, 256, 64, 8, 3), _config(128, 256, 64, 8, 4),
           _config(128, 256, 32, 8, 4), _config(256, 128, 64, 8, 3)]


def _prune(configs, named_args, **kwargs):
    """Drop tiles far larger than the problem (a 16x16 matmul needs no 256x128 tile)."""
    M, N = named_args["M"], named_args["N"]
    kept = [c for c in configs if c.kwargs["BLOCK_M"] <= max(64, triton.next_power_of_2(M))
            and c.kwargs["BLOCK_N"] <= max(64, triton.next_power_of_2(N))]
    return kept or configs[:1]


@triton.jit
def _activate(acc, ACTIVATION: tl.constexpr):
    """The fused epilogue, applied to the fp32 accumulator before the single write of C."""
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "gelu":  # tanh form: x * sigmoid(2 * sqrt(2/pi) * (x + 0.044715 x^3))
        acc = acc * tl.sigmoid(1.5957691216057308 * (acc + 0.044715 * acc * acc * acc))
    return acc


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n  # grouped order: GROUP_M row tiles sweep N together
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    # rows/columns past the edge wrap around (valid memory); their results are masked on store
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :].to(tl.int64) * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    acc = _activate(acc, ACTIVATION)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None].to(tl.int64) * stride_cm + offs_cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


matmul_kernel_tuned = triton.autotune(configs=CONFIGS, key=["M", "N", "K"],
                                      prune_configs_by={"early_config_prune": _prune})(
    matmul_kernel)


@triton.jit
def matmul_tma_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                      ACTIVATION: tl.constexpr):
    # Persistent: as many programs as SMs walk the output tiles in grouped order. Tiles of A and
    # B arrive through TMA descriptors (zero-filled past the edges, so no masks), C leaves
    # through one (clipped at the edges).
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0),
                         flatten=True):
        first_pid_m = (tile // num_pid_in_group) * GROUP_M
        group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
        off_m = (first_pid_m + (tile % num_pid_in_group) % group_size_m) * BLOCK_M
        off_n = ((tile % num_pid_in_group) // group_size_m) * BLOCK_N
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            acc = tl.dot(a_desc.load([off_m, k * BLOCK_K]), b_desc.load([k * BLOCK_K, off_n]),
                         acc)
        c_desc.store([off_m, off_n], _activate(acc, ACTIVATION).to(c_desc.dtype))


def _set_tma_blocks(nargs):
    """Autotuner pre-hook: the descriptors' blocks follow the configuration's tile sizes."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bk, bn]
    nargs["c_desc"].block_shape = [bm, bn]


def _tma_config(bm, bn, bk, warps, stages):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                         num_warps=warps, num_stages=stages, pre_hook=_set_tma_blocks)


# H200 probe (2026-11-29, benchmarks/probe_variants.py matmul_tma): 128x256x64, 8 warps, 3 stages
# ran bf16 4096^3 at 760 TFLOP/s (1.08x cuBLAS + ReLU); 128x128x64 with 4 warps was best at
# 1024^3; 4 stages of 128x256x64 need more shared memory than an SM has.
TMA_CONFIGS = [_tma_config(128, 128, 64, 4, 4), _tma_config(128, 256, 64, 8, 3),
               _tma_config(256, 128, 64, 8, 3)]
matmul_tma_kernel_tuned = triton.autotune(configs=TMA_CONFIGS, key=["M", "N", "K"],
                                          prune_configs_by={"early_config_prune": _prune})(
    matmul_tma_kernel)
TUNE_ABOVE = 1 << 27  # M*N*K: smaller products run one fixed tile (tuning them buys nothing)
_TUNED: dict = {}  # (M, N, K, dtype, activation, kernel) -> kwargs of the autotuner's choice
_FIXED = {"pointers": CONFIGS[0].all_kwargs(), "tma": TMA_CONFIGS[0].all_kwargs()}
KERNELS = ("pointers", "tma")
# M*N*K from which matmul() takes the TMA kernel by default: building three descriptors and
# encoding them at launch costs the host ~30-50 us, as much as a 2048^3 matmul takes the GPU
TMA_ABOVE = 1 << 34


def _tma_ok(*tensors):
    """TMA needs a contiguous last dimension, 16-byte aligned rows and base addresses (and we
    ask for rows that do not overlap: no broadcast, stride-0 rows)."""
    for t in tensors:
        size = t.element_size()
        if (t.stride(1) != 1 or t.stride(0) < max(1, t.shape[1]) or t.stride(0) * size % 16
                or t.data_ptr() % 16):
            return False
    return True


@functools.lru_cache(maxsize=None)
def _has_tma(device_index):
    return torch.cuda.get_device_capability(device_index)[0] >= 9  # Hopper or newer


def _default_kernel(a, b):
    M, K = a.shape
    if (DEVICE != "cuda" or a.dtype == torch.float32 or M * K * b.shape[1] < TMA_ABOVE
            or not _tma_ok(a, b)):
        return "pointers"
    return "tma" if _has_tma(a.get_device()) else "pointers"


def _chosen(M, N, K, dtype, activation, kernel):
    """The tile configuration (kwargs) `kernel` runs with, or None where the autotuner has not
    chosen yet: fixed up to TUNE_ABOVE, the autotuner's choice above."""
    if M * N * K <= TUNE_ABOVE:
        return _FIXED[kernel]
    return _TUNED.get((M, N, K, dtype, activation, kernel))


def _tiles(M, N, meta):
    return triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])


def matmul(a, b, activation="none", kernel=None):
    """activation(a @ b) for 2-D fp32/fp16/bf16 a (M, K) and b (K, N), any strides.

    fp32 inputs use TF32 tensor cores, as `torch.backends.cuda.matmul.allow_tf32 = True` would.
    `kernel`: "pointers" (`matmul_kernel`, any strides) or "tma" (`matmul_tma_kernel`,
    persistent, TMA descriptors: rows must be 16-byte aligned with a contiguous last
    dimension, fp16/bf16); by default TMA for large 16-bit products (M*N*K >= 2^34) on a
    Hopper or newer GPU where the layout allows it, else pointers.
    """
    if activation not in ACTIVATIONS:
        raise ValueError(f"matmul: activation must be one of {ACTIVATIONS}, got {activation!r}")
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor) or t.dim() != 2:
            raise ValueError(f"matmul: {name} must be a 2-D tensor")
    check_inputs("matmul", a, b, device=DEVICE, dtypes=FLOAT_DTYPES, same_shape=False,
                 contiguous=False)  # the kernels take strides: no copy of transposed inputs
    if a.dtype != b.dtype:
        raise TypeError(f"matmul: dtypes differ: {a.dtype} and {b.dtype}")
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2:
        raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} do not chain")
    if kernel is not None and kernel not in KERNELS:
        raise ValueError(f"matmul: kernel must be one of {KERNELS}, got {kernel!r}")
    c = torch.empty(M, N, dtype=a.dtype, device=a.device)
    if M == 0 or N == 0:
        return c
    if K == 0:
        return c.zero_()
    kernel = kernel or _default_kernel(a, b)
    if kernel == "tma":
        if a.dtype == torch.float32:
            raise ValueError("matmul: kernel='tma' takes fp16/bf16 inputs (its tiles do not fit "
                             "in shared memory in fp32); use kernel='pointers'")
        if not _tma_ok(a, b, c):
            raise ValueError(
                f"matmul: kernel='tma' needs 16-byte aligned, distinct rows with a contiguous "
                f"last dimension; got a {tuple(a.shape)} strides {a.stride()}, b {tuple(b.shape)} "
                f"strides {b.stride()} ({a.dtype}): use kernel='pointers' or .contiguous(), and "
                f"K and N multiples of {16 // a.element_size()}")
        return _matmul_tma(a, b, c, activation)
    args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
            c.stride(1))
    kw = _chosen(M, N, K, a.dtype, activation, "pointers")
    if kw is None:
        matmul_kernel_tuned[lambda meta: (_tiles(M, N, meta),)](*args, ACTIVATION=activation)
        _TUNED[(M, N, K, a.dtype, activation, "pointers")] = \
            matmul_kernel_tuned.best_config.all_kwargs()
    else:  # launch the chosen config directly: the autotuner's per-call work is not free
        launch(matmul_kernel, (_tiles(M, N, kw),), *args, ACTIVATION=activation, **kw)
    return c


def matmul_plan(a, b, activation="none", kernel=None):
    """(kernel, config) that `matmul(a, b, activation, kernel)` runs: "pointers" or "tma", and
    the tile configuration (None for a large shape the autotuner has not seen yet)."""
    kernel = kernel or _default_kernel(a, b)
    (M, K), N = a.shape, b.shape[1]
    return kernel, _chosen(M, N, K, a.dtype, activation, kernel)


def _matmul_tma(a, b, c, activation):
    (M, K), N = a.shape, b.shape[1]
    programs = sm_count(a.get_device()) if DEVICE == "cuda" else 4  # 4 on the simulator
    kw = _chosen(M, N, K, a.dtype, activation, "tma")
    blocks = kw or TMA_CONFIGS[0].kwargs  # while tuning, the pre-hook sets each config's blocks
    bm, bn, bk = blocks["BLOCK_M"], blocks["BLOCK_N"], blocks["BLOCK_K"]
    descriptor = TensorDescriptor.from_tensor
    descs = (descriptor(a, [bm, bk]), descriptor(b, [bk, bn]), descriptor(c, [bm, bn]))
    if kw is None:
        matmul_tma_kernel_tuned[lambda meta: (min(programs, _tiles(M, N, meta)),)](
            *descs, M, N, K, ACTIVATION=activation)
        _TUNED[(M, N, K, a.dtype, activation, "tma")] = \
            matmul_tma_kernel_tuned.best_config.all_kwargs()
    else:
        launch(matmul_tma_kernel, (min(programs, _tiles(M, N, kw)),), *descs, M, N, K,
               ACTIVATION=activation, **kw)
    return c


def matmul_relu_lecture(a, b, block_m=64, block_n=64, block_k=32):
    """The lecture's 2-D-grid kernel, for its traffic table and exercise 4."""
    check_inputs("matmul_relu_lecture", a, b, device=DEVICE, dtypes=FLOAT_DTYPES,
                 same_shape=False, contiguous=False)
    (M, K), (_, N) = a.shape, b.shape
    c = torch.empty(M, N, dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
    matmul_relu_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                             b.stride(1), c.stride(0), c.stride(1), BLOCK_M=block_m,
                             BLOCK_N=block_n, BLOCK_K=block_k)
    return c


