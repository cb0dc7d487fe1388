"""Traffic counting: the lecture's figures come out of the counter."""
import pytest
import torch

import minitriton as triton
import minitriton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def test_add_1000_block_256():
    x, y, out = torch.randn(1000), torch.randn(1000), torch.empty(1000)
    rec = add_kernel[(triton.cdiv(1000, 256),)](x, y, out, 1000, BLOCK_SIZE=256)
    assert rec.num_programs == 4 and rec.grid == (4,)
    assert rec.elements_read == 2000 and rec.elements_written == 1000
    assert rec.bytes_read == 8000 and rec.bytes_written == 4000
    assert rec.args["x_ptr"].loaded == 1000 and rec.args["out_ptr"].stored == 1000
    assert rec.constexprs == {"BLOCK_SIZE": 256}


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] + k < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@pytest.mark.parametrize("block,programs,read", [(16, 256, 2_097_152), (32, 64, 1_048_576),
                                                 (64, 16, 524_288), (128, 4, 262_144)])
def test_lecture_matmul_read_table(block, programs, read):
    n = 256
    a, b, c = torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)
    with triton.record() as rec:
        matmul_kernel[(n // block, n // block)](a, b, c, n, n, n, BM=block, BN=block, BK=16)
    (launch,) = rec
    assert launch.num_programs == programs
    assert launch.elements_read == read and launch.elements_written == n * n
    assert launch.dot_flops == 2 * n ** 3


def test_record_collects_every_launch_and_nests():
    x = torch.randn(100)
    with triton.record() as outer:
        add_kernel[(1,)](x, x, x.clone(), 100, BLOCK_SIZE=128)
        with triton.record() as inner:
            add_kernel[(2,)](x, x, x.clone(), 100, BLOCK_SIZE=64)
    assert len(outer) == 2 and len(inner) == 1
    assert outer.elements_read == 400 and inner[0].num_programs == 2
    assert "add_kernel" in outer.table()
