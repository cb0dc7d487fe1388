"""Launch API and kernels written the way the lecture and the CS336 handouts write them."""
import math

import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import Settings
import references as ref
from corpus import load

pytestmark = pytest.mark.usefixtures("executor")  # every test runs kernels
corpus = load(triton, tl)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr, SHIFT: tl.constexpr = 0.0):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + SHIFT, mask=mask)


def test_grids_positional_constexprs_defaults_and_options():
    x = ref.rand(300)
    out = np.empty(300, np.float32)
    scale_kernel[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](x, out, 300, 2.0, 128)
    np.testing.assert_array_equal(out, x * np.float32(2))
    rec = scale_kernel[(3,)](x_ptr=x, out_ptr=out, n=300, alpha=0.5, BLOCK=128, SHIFT=1.0,
                             num_warps=8, num_stages=2)
    np.testing.assert_array_equal(out, x * np.float32(0.5) + np.float32(1))
    assert rec.options == {"num_warps": 8, "num_stages": 2}
    assert triton.cdiv(300, 128) == 3 and triton.next_power_of_2(300) == 512
    assert triton.next_power_of_2(1) == 1


@triton.jit
def grid3_kernel(out_ptr):
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    nx, ny = tl.num_programs(0), tl.num_programs(1)
    tl.store(out_ptr + (z * ny + y) * nx + x, x * 100 + y * 10 + z)


def test_three_dimensional_grid():
    out = np.zeros(2 * 3 * 4, np.int32)
    grid3_kernel[(2, 3, 4)](out)
    ref = [x * 100 + y * 10 + z for z in range(4) for y in range(3) for x in range(2)]
    assert out.tolist() == ref


@triton.jit
def print_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    print("x =", x)
    tl.device_print("sum", tl.sum(x, axis=0))


def test_print_is_prefixed_with_the_program_id(capsys):
    print_kernel[(2,)](np.arange(8, dtype=np.float32), BLOCK=4)
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["pid (0, 0, 0) x = [0. 1. 2. 3.]", "pid (0, 0, 0) sum 6.0",
                     "pid (1, 0, 0) x = [4. 5. 6. 7.]", "pid (1, 0, 0) sum 22.0"]


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2),
                          triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
@triton.jit
def tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def heur_kernel(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(x_ptr + offs, 1.0)
    else:
        tl.store(x_ptr + offs, 2.0, mask=offs < n)


def test_autotune_and_heuristics():
    x, out = ref.rand(200), np.empty(200, np.float32)
    rec = tuned_kernel[lambda meta: (triton.cdiv(200, meta["BLOCK"]),)](x, out, 200)
    np.testing.assert_array_equal(out, x + np.float32(1))
    assert rec.num_programs == 4 and tuned_kernel.best_config.kwargs == {"BLOCK": 64}
    y = np.zeros(128, np.float32)
    heur_kernel[(2,)](y, 128, BLOCK=64)
    assert (y == 1).all()
    heur_kernel[(3,)](y, 100, BLOCK=64)
    assert (y[:100] == 2).all() and (y[100:] == 1).all()


def test_spin_lock_and_atomic_return_values():
    lock, counter = np.zeros(1, np.int32), np.zeros(1, np.int32)
    order = np.full(5, -1, np.int32)
    corpus.spin_lock_kernel[(5,)](lock, counter, order)
    assert counter.tolist() == [5] and sorted(order.tolist()) == [0, 1, 2, 3, 4]
    assert lock.tolist() == [0]


@triton.jit
def ticket_kernel(count_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_add(count_ptr + offs * 0, 1)  # every lane hits the same counter
    tl.store(out_ptr + tl.program_id(0) * BLOCK + offs, old)


def test_atomic_add_returns_each_lanes_old_value():
    count = np.zeros(1, np.int32)
    out = np.empty(32, np.int32)
    ticket_kernel[(2,)](count, out, BLOCK=16)
    assert count.tolist() == [32] and sorted(out.tolist()) == list(range(32))


# --- CS336 assignment 2 style: block pointers, .advance, tl.cdiv loops
@triton.jit
def weighted_sum_fwd(x_ptr, weight_ptr, output_ptr, x_stride_row, x_stride_dim,
                     weight_stride_dim, output_stride_row, ROWS, D,
                     ROWS_TILE_SIZE: tl.constexpr, D_TILE_SIZE: tl.constexpr):
    row_tile_idx = tl.program_id(0)
    x_block_ptr = tl.make_block_ptr(x_ptr, shape=(ROWS, D,), strides=(x_stride_row, x_stride_dim),
                                    offsets=(row_tile_idx * ROWS_TILE_SIZE, 0),
                                    block_shape=(ROWS_TILE_SIZE, D_TILE_SIZE), order=(1, 0))
    weight_block_ptr = tl.make_block_ptr(weight_ptr, shape=(D,), strides=(weight_stride_dim,),
                                         offsets=(0,), block_shape=(D_TILE_SIZE,), order=(0,))
    output_block_ptr = tl.make_block_ptr(output_ptr, shape=(ROWS,), strides=(output_stride_row,),
                                         offsets=(row_tile_idx * ROWS_TILE_SIZE,),
                                         block_shape=(ROWS_TILE_SIZE,), order=(0,))
    output = tl.zeros((ROWS_TILE_SIZE,), dtype=tl.float32)
    for i in range(tl.cdiv(D, D_TILE_SIZE)):
        row = tl.load(x_block_ptr, boundary_check=(0, 1), padding_option="zero")
        weight = tl.load(weight_block_ptr, boundary_check=(0,), padding_option="zero")
        output += tl.sum(row * weight[None, :], axis=1)
        x_block_ptr = x_block_ptr.advance((0, D_TILE_SIZE))
        weight_block_ptr = weight_block_ptr.advance((D_TILE_SIZE,))
    tl.store(output_block_ptr, output, boundary_check=(0,))


def test_cs336_weighted_sum():
    x, w = ref.rand((100, 70)), ref.rand(70, seed=1)
    out = np.empty(100, np.float32)
    weighted_sum_fwd[(triton.cdiv(100, 16),)](x, w, out, *ref.strides(x), *ref.strides(w),
                                              *ref.strides(out), 100, 70, ROWS_TILE_SIZE=16,
                                              D_TILE_SIZE=32)
    np.testing.assert_allclose(out, ref.f64(x) @ w, rtol=1e-5, atol=1e-5)


@triton.jit
def flash_fwd_kernel(Q_ptr, K_ptr, V_ptr, O_ptr, L_ptr, stride_qb, stride_qq, stride_qd,
                     stride_kb, stride_kk, stride_kd, stride_vb, stride_vk, stride_vd,
                     stride_ob, stride_oq, stride_od, stride_lb, stride_lq, N_QUERIES, N_KEYS,
                     scale, D: tl.constexpr, Q_TILE_SIZE: tl.constexpr,
                     K_TILE_SIZE: tl.constexpr, is_causal: tl.constexpr):
    query_tile_index = tl.program_id(0)
    batch_index = tl.program_id(1)
    Q_block_ptr = tl.make_block_ptr(Q_ptr + batch_index * stride_qb, shape=(N_QUERIES, D),
                                    strides=(stride_qq, stride_qd),
                                    offsets=(query_tile_index * Q_TILE_SIZE, 0),
                                    block_shape=(Q_TILE_SIZE, D), order=(1, 0))
    K_block_ptr = tl.make_block_ptr(K_ptr + batch_index * stride_kb, shape=(N_KEYS, D),
                                    strides=(stride_kk, stride_kd), offsets=(0, 0),
                                    block_shape=(K_TILE_SIZE, D), order=(1, 0))
    V_block_ptr = tl.make_block_ptr(V_ptr + batch_index * stride_vb, shape=(N_KEYS, D),
                                    strides=(stride_vk, stride_vd), offsets=(0, 0),
                                    block_shape=(K_TILE_SIZE, D), order=(1, 0))
    q = tl.load(Q_block_ptr, boundary_check=(0, 1), padding_option="zero")
    m_i = tl.full((Q_TILE_SIZE,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((Q_TILE_SIZE,), dtype=tl.float32)
    acc = tl.zeros((Q_TILE_SIZE, D), dtype=tl.float32)
    q_idx = query_tile_index * Q_TILE_SIZE + tl.arange(0, Q_TILE_SIZE)
    for start in range(0, N_KEYS, K_TILE_SIZE):
        k = tl.load(K_block_ptr, boundary_check=(0, 1), padding_option="zero")
        v = tl.load(V_block_ptr, boundary_check=(0, 1), padding_option="zero")
        s = tl.dot(q, tl.trans(k)) * scale
        k_idx = start + tl.arange(0, K_TILE_SIZE)
        valid = k_idx[None, :] < N_KEYS
        if is_causal:
            valid = valid & (q_idx[:, None] >= k_idx[None, :])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = alpha * l_i + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc=acc)
        m_i = m_new
        K_block_ptr = K_block_ptr.advance((K_TILE_SIZE, 0))
        V_block_ptr = V_block_ptr.advance((K_TILE_SIZE, 0))
    O_block_ptr = tl.make_block_ptr(O_ptr + batch_index * stride_ob, shape=(N_QUERIES, D),
                                    strides=(stride_oq, stride_od),
                                    offsets=(query_tile_index * Q_TILE_SIZE, 0),
                                    block_shape=(Q_TILE_SIZE, D), order=(1, 0))
    tl.store(O_block_ptr, (acc / l_i[:, None]).to(O_block_ptr.type.element_ty.element_ty),
             boundary_check=(0, 1))
    L_block_ptr = tl.make_block_ptr(L_ptr + batch_index * stride_lb, shape=(N_QUERIES,),
                                    strides=(stride_lq,), offsets=(query_tile_index * Q_TILE_SIZE,),
                                    block_shape=(Q_TILE_SIZE,), order=(0,))
    tl.store(L_block_ptr, m_i + tl.log(l_i), boundary_check=(0,))


@pytest.mark.parametrize("causal", [False, True])
def test_cs336_flash_attention_forward(causal):
    B, Nq, Nk, D = 2, 50, 70 if not causal else 50, 32
    q, k, v = (ref.rand((B, n, D), seed=i) for i, n in enumerate((Nq, Nk, Nk)))
    o, lse = np.empty((B, Nq, D), np.float32), np.empty((B, Nq), np.float32)
    scale = 1 / math.sqrt(D)
    flash_fwd_kernel[(triton.cdiv(Nq, 16), B)](
        q, k, v, o, lse, *ref.strides(q), *ref.strides(k), *ref.strides(v), *ref.strides(o),
        *ref.strides(lse), Nq, Nk, scale, D=D, Q_TILE_SIZE=16, K_TILE_SIZE=16, is_causal=causal)
    o_ref, lse_ref = ref.attention(q, k, v, scale, causal)
    np.testing.assert_allclose(o, o_ref, rtol=2e-3, atol=2e-3)  # TF32 dots
    np.testing.assert_allclose(lse, lse_ref, rtol=2e-3, atol=2e-3)


@triton.jit
def rmw_kernel(x_ptr, vals_ptr, old_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(vals_ptr + tl.program_id(0) * BLOCK + offs)
    if OP == "min":
        old = tl.atomic_min(x_ptr + offs, v)
    elif OP == "and":
        old = tl.atomic_and(x_ptr + offs, v)
    elif OP == "or":
        old = tl.atomic_or(x_ptr + offs, v)
    else:
        old = tl.atomic_xor(x_ptr + offs, v)
    tl.store(old_ptr + tl.program_id(0) * BLOCK + offs, old)


@pytest.mark.parametrize("op,fn", [("min", np.minimum), ("and", np.bitwise_and),
                                   ("or", np.bitwise_or), ("xor", np.bitwise_xor)])
def test_atomic_read_modify_write_ops(op, fn):
    rng = np.random.default_rng(0)
    start = rng.integers(0, 1 << 20, 16).astype(np.int32)
    vals = rng.integers(0, 1 << 20, 3 * 16).astype(np.int32)
    x, old = start.copy(), np.zeros(48, np.int32)
    rmw_kernel[(3,)](x, vals, old, OP=op, BLOCK=16)
    expect = start.copy()
    for p in range(3):  # sequential programs: each sees the previous ones' updates
        np.testing.assert_array_equal(old[p * 16:(p + 1) * 16], expect)
        expect = fn(expect, vals[p * 16:(p + 1) * 16])
    np.testing.assert_array_equal(x, expect)


@triton.jit
def _tile_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + pid, tl.sum(x * x, axis=0))


def test_lockstep_first_chunk_is_sized_from_the_previous_launch():
    """A lockstep launch records its largest block per constexpr values; the next launch of the
    same kernel and constexprs sizes its first chunk from it (no 4-program probe chunk) and
    gives the same bits as the first launch and as the sequential executor."""
    lockstep = Settings(executor="lockstep")
    x = ref.rand(64 * 37 + 5)
    first, second, seq = (np.empty(38, np.float32) for _ in range(3))
    _tile_sum_kernel.block_sizes.clear()
    _tile_sum_kernel[(38,)](x, first, x.size, BLOCK=64, minitriton_settings=lockstep)
    assert list(_tile_sum_kernel.block_sizes.values()) and all(
        size >= 64 for size in _tile_sum_kernel.block_sizes.values())
    _tile_sum_kernel[(38,)](x, second, x.size, BLOCK=64, minitriton_settings=lockstep)
    _tile_sum_kernel[(38,)](x, seq, x.size, BLOCK=64,
                            minitriton_settings=Settings(executor="sequential"))
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, seq)
    padded = np.zeros(38 * 64)
    padded[:x.size] = x
    np.testing.assert_allclose(first, (padded.reshape(38, 64) ** 2).sum(1), rtol=1e-5)
