"""`JITFunction.warmup` returns a compiled kernel with Triton's metadata and resource estimates
(runtime/compiled.py) and launches nothing; `compiled[grid](*args)` launches it; Triton's
launch options are accepted and recorded; `set_allocator` keeps its allocator; float8 tensors
bind (memory.py)."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton.runtime.allocation import get_allocator, set_allocator
from minitriton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


@triton.jit
def tile_dot(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])  # read BM*BK
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])  # read BK*BN
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b))  # write BM*BN


@triton.jit
def row_max(x_ptr, out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.program_id(0), tl.max(tl.load(x_ptr + tl.arange(0, BLOCK)), axis=0))


def test_reductions_estimate_the_warps_exchange_in_shared_memory():
    """Triton's softmax tutorial divides the SM's shared memory by `metadata.shared`: a kernel
    that reduces across warps needs some, so it is never 0 there."""
    compiled = row_max.warmup(np.ones(256, np.float32), np.zeros(1, np.float32), BLOCK=256,
                              grid=(1,), num_warps=8)
    assert compiled.metadata.shared == 8 * 1 * 4


def test_warmup_compiles_without_launching_and_the_result_launches():
    x = np.zeros(100, np.float32)
    compiled = add_one.warmup(x, 100, BLOCK=64, grid=(2,), num_warps=2)
    assert (x == 0).all()  # the first program ran, its writes undone
    assert compiled.name == "add_one" and compiled.metadata.num_warps == 2
    assert compiled.metadata.num_stages == 3 and compiled.metadata.shared == 0
    # 64 elements over 64 threads: 15.7 + 1.29 x 1 registers, rounded up (the H200 compiles
    # such one-element-per-thread kernels to 13-18)
    assert (compiled.n_regs, compiled.n_spills) == (17, 0)
    rec = compiled[(2,)](x, 100, 64)
    assert (x == 1).all() and rec.options["num_warps"] == 2


def test_dot_estimates_shared_memory_from_the_tiles_and_stages():
    a, b = np.ones((64, 32), np.float16), np.ones((32, 64), np.float16)
    c = np.zeros((64, 64), np.float32)
    compiled = tile_dot.warmup(a, b, c, 64, 64, 32, grid=(1,), num_stages=2)
    assert compiled.shared == 2 * (64 * 32 + 32 * 64) * 2
    # 25.1 + 1.13 x accumulator 64*64/128 = 32 + 0.678 x operands (2*2048*2 bytes)/4/128 = 16
    # = 72.1, rounded up (Triton 3.6 on the H200: 64)
    assert compiled.n_regs == 73 and compiled.n_spills == 0
    capped = tile_dot.warmup(a, b, c, 64, 64, 32, grid=(1,), maxnreg=64)
    assert (capped.n_regs, capped.n_spills) == (64, 9)
    # Triton 3.6 on an H100 gives 128x256 fp32 accumulators on 4 warps 255 registers and
    # spills (docs/results/config-sweep-h100-2026-12-05.csv); the estimate spills too
    a, b = np.ones((128, 64), np.float16), np.ones((64, 256), np.float16)
    big = tile_dot.warmup(a, b, np.zeros((128, 256), np.float32), 128, 256, 64, grid=(1,))
    assert big.n_regs == 255 and big.n_spills > 0
    # 128x128 with BLOCK_K 128 on 4 warps: 240-246 registers and no spills on the H200 (wgmma
    # reads its operands from shared memory; docs/results/config-sweep-hopper-h200-2026-12-05.csv):
    # the estimate, registers and spills together, is within 20 of that (the fit's median error
    # is 6), where the first estimate (every operand fragment in registers) spilled 25
    a, b = np.ones((128, 128), np.float16), np.ones((128, 128), np.float16)
    wide_k = tile_dot.warmup(a, b, np.zeros((128, 128), np.float32), 128, 128, 128, grid=(1,))
    assert abs(wide_k.n_regs + wide_k.n_spills - 243) <= 20


@triton.jit
def gated(x_ptr, w_ptr, v_ptr, o_ptr, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    rm, rn, rd = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, D)
    x = tl.load(x_ptr + rm[:, None] * D + rd[None, :])  # read BM*D
    w = tl.load(w_ptr + rd[:, None] * BN + rn[None, :])  # read D*BN
    v = tl.load(v_ptr + rd[:, None] * BN + rn[None, :])  # read D*BN
    gate = tl.dot(x, w)  # a gated MLP: two products of the same input, two dot lines
    up = tl.dot(x, v)
    tl.store(o_ptr + rm[:, None] * BN + rn[None, :], gate * up)  # write BM*BN


@triton.jit
def chained(q_ptr, k_ptr, v_ptr, o_ptr, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    rm, rn, rd = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])  # read BM*D
    k = tl.load(k_ptr + rn[:, None] * D + rd[None, :])  # read BN*D
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])  # read BN*D
    p = tl.exp(tl.dot(q, tl.trans(k))).to(tl.float16)  # (BM, BN): attention's P
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], tl.dot(p, v))  # write BM*D


def test_the_estimate_counts_both_dot_lines_and_a_chained_operand():
    """Two dot lines' accumulators live together; a dot that takes an earlier dot's result as
    its A operand holds it in registers (compiled.dot_register_terms), a gated MLP's second
    product of the same input does not."""
    x, w = np.ones((64, 64), np.float16), np.ones((64, 32), np.float16)
    got = gated.warmup(x, w, w, np.zeros((64, 32), np.float32), 64, 32, 64, grid=(1,))
    # accumulators 2 x 64*32/128 = 32, fragments (64*64 + 64*32)*2/4/128 = 24
    assert got.n_regs == int(np.ceil(25.1 + 1.13 * 32 + 0.678 * 24))
    q, k = np.ones((64, 64), np.float16), np.ones((32, 64), np.float16)
    got = chained.warmup(q, k, k, np.zeros((64, 64), np.float32), 64, 32, 64, grid=(1,))
    # accumulators (64*32 + 64*64)/128 = 48, fragments of Q K^T 24, P's 64*32*2/4/128 = 8
    assert got.n_regs == int(np.ceil(25.1 + 1.13 * 48 + 0.678 * 24 + 2.42 * 8))


@triton.jit
def chained_tma(q_desc, k_desc, v_desc, o_ptr, BM: tl.constexpr, BN: tl.constexpr,
                D: tl.constexpr):
    q = q_desc.load([0, 0])  # through TMA: global memory to shared, no registers on the way
    k = k_desc.load([0, 0])
    v = v_desc.load([0, 0])
    p = tl.exp(tl.dot(q, tl.trans(k))).to(tl.float16)  # P stays in registers (the A operand)
    rm, rd = tl.arange(0, BM), tl.arange(0, D)
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], tl.dot(p, v))


def test_tiles_through_tma_hold_no_operand_fragments():
    """Tiles a kernel loads through tensor descriptors go to shared memory by TMA: the
    estimate counts the accumulators and a chained operand, one register each, and no operand
    fragments (compiled.TMA_DOT_REGISTERS). The tile of tritonlab's TMA attention forward
    (128 queries, 64 keys, d = 128, 4 warps) compiles to 253 registers and no spill with
    Triton 3.6 for sm_90 (benchmarks/compile_check.py --configs, 2026-12-06), where the
    pointer-kernel estimate has 385 and spills."""
    q, k = np.ones((128, 128), np.float16), np.ones((64, 128), np.float16)
    o = np.zeros((128, 128), np.float32)
    descs = [TensorDescriptor.from_tensor(t, list(t.shape)) for t in (q, k, k)]
    got = chained_tma.warmup(*descs, o, 128, 64, 128, grid=(1,), num_warps=4)
    # accumulators (128*64 + 128*128)/128 = 192, P's 128*64*2/4/128 = 32: 28 + 192 + 32
    assert (got.n_regs, got.n_spills) == (252, 0) and abs(got.n_regs - 253) <= 4
    pointers = chained.warmup(q, k, k, o, 128, 64, 128, grid=(1,), num_warps=4)
    assert pointers.n_regs + pointers.n_spills > 300  # the pointer kernels' fit


def test_repr_sees_tritons_signature_strings():
    """`@jit(repr=fn)` gets the launch's specialization with Triton 3.6's canonical type
    strings (`mangle_type`): "*i32" for an int32 pointer (not "*int32"), "*k" for a pointer
    annotated `tl.const`, i32/i64 by value, fp32 for a float, u1 for bools and their pointers,
    "tensordesc<...>" for a host descriptor, and the ints equal to 1 among the constants."""
    seen = []

    def name(spec):
        seen.append((dict(spec.signature), dict(spec.constants)))
        return "k"

    def kernel(x_ptr, idx_ptr, flag_ptr, w_ptr: tl.const, desc, n, big, one, scale, on,
               BLOCK: tl.constexpr):
        pass

    jitted = triton.jit(repr=name)(kernel)
    desc = TensorDescriptor.from_tensor(np.zeros((64, 64), np.float16), [16, 32])
    jitted.warmup(np.zeros(4, np.float32), np.zeros(4, np.int32), np.zeros(4, np.bool_),
                  np.zeros(4, np.uint8), desc, 4, 2**40, 1, 0.5, True, BLOCK=4, grid=(1,))
    assert seen == [({"x_ptr": "*fp32", "idx_ptr": "*i32", "flag_ptr": "*u1",
                      "w_ptr": "*ku8", "desc": "tensordesc<fp16[16, 32]>", "n": "i32",
                      "big": "i64", "one": "constexpr", "scale": "fp32", "on": "u1",
                      "BLOCK": "constexpr"},
                     {"one": 1, "BLOCK": 4})]
