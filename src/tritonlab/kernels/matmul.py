"""Tiled matmul with a fused epilogue (lecture §8, exercises 4 and 8d).

`matmul_relu_kernel` is the lecture's kernel as written: a 2-D grid, one output tile per
program, a loop along K with `tl.dot`, ReLU on the accumulator before the single write. Its
traffic for n = 256 reproduces the lecture's table (lectures/04_triton_matmul.py).

`matmul_kernel` is the tuned version behind `matmul()`: a 1-D grid in grouped order (GROUP_M
row-tiles share the B columns they read, so neighbours hit L2), `@triton.autotune` over tile
sizes, warps and pipeline stages on the GPU, strides for transposed or non-contiguous inputs,
and `ACTIVATION` none/relu/gelu applied before the write. fp32 accumulation throughout.
The tiles and the sizes that choose tuning and the TMA kernel are the device's `MatmulTuning`
(kernels/tuning.py).

`matmul` is a custom operator with autograd (kernels/ops.py): dA = dZ B^T and dB = A^T dZ are
two more calls of `matmul_kernel` (transposes are strides, no copies), and dZ = dC * act'(Z)
comes from `matmul_act_grad_kernel`, which recomputes Z's tile and applies the activation's
derivative before its single write.
"""
from __future__ import annotations

import functools

import torch

from ..backend import DEVICE, TensorDescriptor, tl, triton
from . import _native, ops
from ._checks import FLOAT_DTYPES, check_inputs, sm_count
from ._launch import Bound, PlanCache, launch
from .tuning import tuning_for

ACTIVATIONS = ("none", "relu", "gelu")
KERNELS = ("pointers", "tma")


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


def _configs(tiles, group_m, pre_hook=None):
    """triton.Configs from a tuning's (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)."""
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m},
                          num_warps=warps, num_stages=stages, pre_hook=pre_hook)
            for bm, bn, bk, warps, stages in tiles]


def _prune(configs, named_args, **kwargs):
    """Drop tiles far larger than the problem (a 16x16 matmul needs no 256x128 tile)."""
    M, N = named_args["M"], named_args["N"]
    kept = [c for c in configs if c.kwargs["BLOCK_M"] <= max(64, triton.next_power_of_2(M))
            and c.kwargs["BLOCK_N"] <= max(64, triton.next_power_of_2(N))]
    return kept or configs[:1]


@triton.jit
def _activate(acc, ACTIVATION: tl.constexpr):
    """The fused epilogue, applied to the fp32 accumulator before the single write of C."""
    if ACTIVATION == "relu":  # NaN stays NaN, as in torch.relu (max.f32 alone would give 0)
        acc = tl.maximum(acc, 0.0, propagate_nan=tl.PropagateNan.ALL)
    elif ACTIVATION == "gelu":  # tanh form: x * sigmoid(2 * sqrt(2/pi) * (x + 0.044715 x^3))
        acc = acc * tl.sigmoid(1.5957691216057308 * (acc + 0.044715 * acc * acc * acc))
    return acc


@triton.jit
def _activate_grad(z, dc, ACTIVATION: tl.constexpr):
    """dZ = dC * act'(Z), torch's formulas (relu: dC where Z > 0 or Z is NaN, as torch's
    threshold_backward on relu's output gives)."""
    if ACTIVATION == "relu":
        dz = tl.where(z <= 0.0, 0.0, dc)
    else:  # gelu' = s + x s (1 - s) 2a', s = sigmoid(2a), a' = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
        s = tl.sigmoid(1.5957691216057308 * (z + 0.044715 * z * z * z))
        dz = dc * (s + z * s * (1.0 - s) * 1.5957691216057308 * (1.0 + 0.134145 * z * z))
    return dz


@triton.jit
def _tile_ids(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of this program's output tile, in grouped order."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n  # grouped order: GROUP_M row tiles sweep N together
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _tile_product(a_ptr, b_ptr, pid_m, pid_n, M, N, K, stride_am, stride_ak, stride_bk,
                  stride_bn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    """The fp32 (BLOCK_M, BLOCK_N) tile (pid_m, pid_n) of A @ B, a loop along K."""
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
    return acc


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr):
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _tile_product(a_ptr, b_ptr, pid_m, pid_n, M, N, K, stride_am, stride_ak, stride_bk,
                        stride_bn, BLOCK_M, BLOCK_N, BLOCK_K)  # read (BM + BN) * K
    acc = _activate(acc, ACTIVATION)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None].to(tl.int64) * stride_cm + offs_cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))  # write BM * BN


@triton.jit
def matmul_act_grad_kernel(a_ptr, b_ptr, dc_ptr, dz_ptr, M, N, K, stride_am, stride_ak,
                           stride_bk, stride_bn, stride_dcm, stride_dcn, stride_dzm, stride_dzn,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr):
    # The epilogue's backward: Z's tile is recomputed rather than saved by the forward (which
    # stays one write of C), at the price of a third matmul in the backward; act'(Z) never
    # leaves registers.
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    z = _tile_product(a_ptr, b_ptr, pid_m, pid_n, M, N, K, stride_am, stride_ak, stride_bk,
                      stride_bn, BLOCK_M, BLOCK_N, BLOCK_K)  # read (BM + BN) * K
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M))[:, None].to(tl.int64)
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N))[None, :]
    mask = (offs_m < M) & (offs_n < N)
    dc = tl.load(dc_ptr + offs_m * stride_dcm + offs_n * stride_dcn, mask=mask,
                 other=0.0).to(tl.float32)  # read BM * BN
    dz = _activate_grad(z, dc, ACTIVATION)
    tl.store(dz_ptr + offs_m * stride_dzm + offs_n * stride_dzn,
             dz.to(dz_ptr.dtype.element_ty), mask=mask)  # write BM * BN


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
        acc = _activate(acc, ACTIVATION)
        if BLOCK_N >= 256:  # two halves: half the C staging buffer in shared memory, and
            # each half's store overlaps the next (docs/decisions.md#matmul-tma-configs)
            left, right = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)),
                                              (0, 2, 1)))
            c_desc.store([off_m, off_n], left.to(c_desc.dtype))
            c_desc.store([off_m, off_n + BLOCK_N // 2], right.to(c_desc.dtype))
        else:
            c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


def _c_block(bm, bn):
    """The C descriptor's block of a BLOCK_M x BLOCK_N tile: its stores (matmul_tma_kernel)."""
    return [bm, bn // 2 if bn >= 256 else bn]


def _set_tma_blocks(nargs):
    """Autotuner pre-hook: the descriptors' blocks follow the configuration's tile sizes."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bk, bn]
    nargs["c_desc"].block_shape = _c_block(bm, bn)


class _Dispatch:
    """One matmul kernel on one tuning's configs, and the configs it has chosen: products up
    to `tune_above` run the first config; a larger one runs the autotuner on its first call,
    which records its choice, and that config directly from then on."""

    def __init__(self, kernel, configs, tune_above):
        self.kernel, self.tune_above = kernel, tune_above
        self.tuned = triton.autotune(configs=configs, key=["M", "N", "K"],
                                     prune_configs_by={"early_config_prune": _prune})(kernel)
        self.first = configs[0]
        self.fixed = configs[0].all_kwargs()
        self.chosen = {}  # (M, N, K, dtype, activation) -> kwargs of the autotuner's choice
        self.bounds = PlanCache()  # (key, integer arguments) -> the pointer kernel's launch

    def get(self, key):
        """The config (kwargs) of key = (M, N, K, dtype, activation); None where the autotuner
        has not chosen yet."""
        M, N, K = key[:3]
        return self.fixed if M * N * K <= self.tune_above else self.chosen.get(key)

    def run(self, config, grid, args, key):
        """Launch `args` with `config` (from `get`), or tune where it is None and record the
        choice. `grid(meta)` is the grid of a config."""
        activation = key[4]
        if config is None:
            self.tuned[grid](*args, ACTIVATION=activation)
            self.chosen[key] = self.tuned.best_config.all_kwargs()
        elif isinstance(args[0], torch.Tensor):  # pointers: a launch bound per signature
            self.bounds.get((key, args[3:]), lambda: Bound(
                self.kernel, grid(config), ACTIVATION=activation, **config))(*args)
        else:  # the chosen config directly: the autotuner's per-call work is not free
            launch(self.kernel, grid(config), *args, ACTIVATION=activation, **config)


_BY_TUNING: dict = {}  # MatmulTuning -> {kernel: _Dispatch}: one autotuner per tuning


@functools.lru_cache(maxsize=None)
def _dispatches(device):
    """(tuning, {kernel: _Dispatch}) of a device index (-1: the CPU)."""
    t = tuning_for("matmul", device)
    if t not in _BY_TUNING:
        _BY_TUNING[t] = {
            "pointers": _Dispatch(matmul_kernel, _configs(t.configs, t.group_m), t.tune_above),
            "tma": _Dispatch(matmul_tma_kernel, _configs(t.tma_configs, t.group_m,
                                                         _set_tma_blocks), t.tune_above)}
    return t, _BY_TUNING[t]


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


def _default_kernel(a, b, tuning):
    M, K = a.shape
    if (DEVICE != "cuda" or a.dtype == torch.float32 or M * K * b.shape[1] < tuning.tma_above
            or not _tma_ok(a, b)):
        return "pointers"
    return "tma" if _has_tma(a.get_device()) else "pointers"


def _tiles(M, N, meta):
    return triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])


def _check(a, b, activation, kernel):
    """(M, K, N) of checked inputs."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"matmul: activation must be one of {ACTIVATIONS}, got {activation!r}")
    for name, t in (("a", a), ("b", b)):
        if t.dim() != 2:
            raise ValueError(f"matmul: {name} must be a 2-D tensor, got {t.dim()}-D")
    check_inputs("matmul", a, b, device=DEVICE, dtypes=FLOAT_DTYPES, same_shape=False,
                 contiguous=False)  # the kernels take strides: no copy of transposed inputs
    if a.dtype != b.dtype:
        raise TypeError(f"matmul: dtypes differ: {a.dtype} and {b.dtype}")
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2:
        raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} do not chain")
    if kernel is not None and kernel not in KERNELS:
        raise ValueError(f"matmul: kernel must be one of {KERNELS}, got {kernel!r}")
    return M, K, N


def _matmul_impl(a, b, activation, kernel):
    M, K, N = _check(a, b, activation, kernel)
    c = torch.empty(M, N, dtype=a.dtype, device=a.device)
    if M == 0 or N == 0:
        return c
    if K == 0:
        return c.zero_()  # act(0) = 0 for all three activations
    tuning, dispatches = _dispatches(a.get_device())
    kernel = kernel or _default_kernel(a, b, tuning)
    key = (M, N, K, a.dtype, activation)
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
        return _matmul_tma(a, b, c, key, tuning, dispatches["tma"])
    args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
            c.stride(1))
    pointers = dispatches["pointers"]
    pointers.run(pointers.get(key), lambda meta: (_tiles(M, N, meta),), args, key)
    return c


def _matmul_fake(a, b, activation, kernel):
    M, _, N = _check(a, b, activation, kernel)
    return a.new_empty(M, N)


def _check_grad(a, b, dc, activation):
    M, _, N = _check(a, b, activation, None)
    check_inputs("matmul backward", dc, device=DEVICE, dtypes=(a.dtype,), contiguous=False)
    if dc.shape != (M, N):
        raise ValueError(f"matmul backward: dC has shape {tuple(dc.shape)}, not {(M, N)}")
    if activation == "none":
        raise ValueError("matmul backward: activation 'none' has no epilogue gradient")
    return M, N


def _act_grad_impl(a, b, dc, activation):
    M, N = _check_grad(a, b, dc, activation)
    K = a.shape[1]
    dz = torch.empty(M, N, dtype=a.dtype, device=a.device)
    if M and N:
        pointers = _dispatches(a.get_device())[1]["pointers"]
        config = pointers.get((M, N, K, a.dtype, activation)) or pointers.fixed
        ints = (M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), dc.stride(0),
                dc.stride(1), dz.stride(0), dz.stride(1))
        _ACT_GRAD.get((a.dtype, activation, ints), lambda: Bound(
            matmul_act_grad_kernel, (_tiles(M, N, config),), ACTIVATION=activation,
            **config))(a, b, dc, dz, *ints)
    return dz


_ACT_GRAD = PlanCache()  # (dtype, activation, integer arguments) -> the launch


def _act_grad_fake(a, b, dc, activation):
    return a.new_empty(_check_grad(a, b, dc, activation))


def _setup(ctx, inputs, output):
    a, b, ctx.activation, _ = inputs
    ctx.save_for_backward(a, b)


def _backward(ctx, dc):
    a, b = ctx.saved_tensors
    dz = dc if ctx.activation == "none" else act_grad_op(a, b, dc, ctx.activation)
    da = matmul_op(dz, b.t(), "none", None) if ctx.needs_input_grad[0] else None
    db = matmul_op(a.t(), dz, "none", None) if ctx.needs_input_grad[1] else None
    return da, db, None, None


def _no_setup(ctx, inputs, output):
    pass


act_grad_op = ops.define(__name__, "matmul_activation_grad",
                         "(Tensor a, Tensor b, Tensor dc, str activation) -> Tensor",
                         _act_grad_impl, _act_grad_fake,
                         ops.no_double_backward("tritonlab matmul (relu/gelu epilogue)"),
                         _no_setup)
matmul_op = ops.define(__name__, "matmul",
                       "(Tensor a, Tensor b, str activation, str? kernel) -> Tensor",
                       _matmul_impl, _matmul_fake, _backward, _setup)


def _describe(options, a, b):
    """The native plan (kernels/_native.py) of the pointer kernel's product of contiguous a and
    b, once its launches ran through Triton: forward; backward dZ = dC * act'(a @ b) (the
    epilogue's gradient kernel; dC itself without an activation), dA = dZ @ b^T and
    dB = a^T @ dZ, each launched only where its gradient is wanted."""
    activation, kernel = options
    M, K, N = _check(a, b, activation, kernel)
    if not (M and N and K):
        return "an empty product"
    tuning, dispatches = _dispatches(a.get_device())
    if (kernel or _default_kernel(a, b, tuning)) != "pointers":
        return "the TMA kernel (its descriptors are made per call)"
    pointers, dtype = dispatches["pointers"], a.dtype

    def product(m, n, k, strides, act="none"):  # the pointer kernel's launch, once it ran
        return pointers.bounds.plans.get(((m, n, k, dtype, act), (m, n, k, *strides)))

    forward = product(M, N, K, (K, 1, N, 1, N, 1), activation)
    if forward is None:
        return None
    S = _native.Slot
    a_, b_, c, dy = S(0), S(1), S(2), S(3)
    dz, da, db = (S(4), S(5), S(6)) if activation != "none" else (dy, S(4), S(5))
    launches = []
    if activation != "none":
        ints = (M, N, K, K, 1, N, 1, N, 1, N, 1)
        launches.append((_ACT_GRAD.plans.get((dtype, activation, ints)),
                         (a_, b_, dy, dz, *ints), -1))
    launches += [(product(M, K, N, (N, 1, 1, N, K, 1)), (dz, b_, da, M, K, N, N, 1, 1, N, K, 1),
                  0),
                 (product(K, N, M, (1, K, N, 1, N, 1)), (a_, dz, db, K, N, M, 1, K, N, 1, N, 1),
                  1)]
    ready = all(bound is not None for bound, _, _ in launches)
    allocs = [((M, N), dtype)] if activation != "none" else []
    return _native.plan(
        (a, b), [((M, N), dtype)], [(forward, (a_, b_, c, M, N, K, K, 1, N, 1, N, 1))], c,
        saved=[a_, b_], bwd_allocs=allocs + [((M, K), dtype), ((K, N), dtype)],
        backward=[(bound, args) for bound, args, _ in launches] if ready else None,
        grads=[da, db], backward_for=[i for _, _, i in launches])


def _create_graph(options):
    activation = options[0]

    def backward(dc, a, b):
        dz = dc if activation == "none" else act_grad_op(a, b, dc, activation)
        return matmul_op(dz, b.t(), "none", None), matmul_op(a.t(), dz, "none", None)
    return backward


_native_matmul = _native.NativeOp("TritonlabMatmulBackward", _describe, _create_graph,
                                  enabled=DEVICE == "cuda")


def matmul(a, b, activation="none", kernel=None):
    """activation(a @ b) for 2-D fp32/fp16/bf16 a (M, K) and b (K, N), any strides;
    differentiable (any order without activation, first order with relu/gelu).

    fp32 inputs use TF32 tensor cores, as `torch.backends.cuda.matmul.allow_tf32 = True` would.
    `kernel`: "pointers" (`matmul_kernel`, any strides) or "tma" (`matmul_tma_kernel`,
    persistent, TMA descriptors: rows must be 16-byte aligned with a contiguous last
    dimension, fp16/bf16); by default TMA for large 16-bit products (M*N*K >= 2^34) on a
    Hopper or newer GPU where the layout allows it, else pointers.
    """
    c = _native_matmul((activation, kernel), a, b)
    if c is not None:
        return c
    ops.require_tensors("matmul", a, b)
    return matmul_op(a, b, activation, kernel)


def matmul_plan(a, b, activation="none", kernel=None):
    """(kernel, config) that `matmul(a, b, activation, kernel)` runs: "pointers" or "tma", and
    the tile configuration (None for a large shape the autotuner has not seen yet)."""
    tuning, dispatches = _dispatches(a.get_device())
    kernel = kernel or _default_kernel(a, b, tuning)
    (M, K), N = a.shape, b.shape[1]
    return kernel, dispatches[kernel].get((M, N, K, a.dtype, activation))


def _matmul_tma(a, b, c, key, tuning, dispatch):
    M, N, K = key[:3]
    programs = sm_count(a.get_device()) if DEVICE == "cuda" else tuning.simulator_tma_programs
    kw = dispatch.get(key)
    blocks = kw or dispatch.first.kwargs  # while tuning, the pre-hook sets each config's blocks
    bm, bn, bk = blocks["BLOCK_M"], blocks["BLOCK_N"], blocks["BLOCK_K"]
    descriptor = TensorDescriptor.from_tensor
    descs = (descriptor(a, [bm, bk]), descriptor(b, [bk, bn]), descriptor(c, _c_block(bm, bn)))
    dispatch.run(kw, lambda meta: (min(programs, _tiles(M, N, meta)),), (*descs, M, N, K), key)
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


