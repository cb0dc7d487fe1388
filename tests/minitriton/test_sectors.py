"""Memory insight per kernel line (observe/sectors.py, `Settings(sectors=True)`): sectors per
program access, coalescing efficiency, the lane-order warp requests and unique against total
bytes, each worked out by hand below (fp32: 8 elements per 32-byte sector, buffers aligned)."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x, mask=mask)


@triton.jit
def column_kernel(x_ptr, y_ptr, R, C, BLOCK: tl.constexpr):
    col = tl.program_id(0)  # one column of a row-major (R, C) matrix per program
    rows = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + rows * C + col, mask=rows < R)
    tl.store(y_ptr + col * R + rows, v, mask=rows < R)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc)


@triton.jit
def diverging_kernel(x_ptr, s_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    scale = tl.load(s_ptr)  # the same scalar in every program: lockstep loads it once
    if pid % 2 == 0:  # programs diverge: lockstep undoes its first attempt and splits them
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets) * scale)
    else:
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets * 2 % (4 * BLOCK)))
    tl.atomic_add(y_ptr + pid % 2, 1.0)


def line_of(text):
    """The line number of a line of this file."""
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if line.strip() == text)


def by_line(record, kernel_line_text):
    """The rows whose kernel source line contains the text."""
    return [r for r in record.lines if kernel_line_text in r["source"]]


def run(kernel, grid, *args, **kwargs):
    with triton.configure(sectors=True):
        return kernel[grid](*args, **kwargs)


def matmul(a, b, block=32, block_k=32):
    (M, K), N = a.shape, b.shape[1]
    c = np.zeros((M, N), np.float32)
    item = a.itemsize
    return run(matmul_kernel, (M // block, N // block), a, b, c, M, N, K,
               a.strides[0] // item, a.strides[1] // item, b.strides[0] // item,
               b.strides[1] // item, N, 1, BLOCK_M=block, BLOCK_N=block, BLOCK_K=block_k)


def test_off_by_default_no_lines():
    x = np.zeros(256, np.float32)
    assert copy_kernel[(2,)](x, np.zeros_like(x), 256, BLOCK=128).lines is None


def test_row_major_copy_moves_full_sectors(executor):
    x = np.arange(1024, dtype=np.float32)
    rec = run(copy_kernel, (8,), x, np.zeros_like(x), 1024, BLOCK=128)
    load, = by_line(rec, "tl.load")
    store, = by_line(rec, "tl.store")
    # 128 fp32 = 512 bytes = 16 sectors per program; 4 warps of 32 threads hold one fp32
    # each: 4 requests of 128 bytes
    assert (load["kind"], load["arg"], load["elements"], load["bytes"]) == \
        ("load", "x_ptr", 1024, 4096)
    assert (load["sectors"], load["sectors_per_access"], load["efficiency"]) == (128, 16.0, 1.0)
    assert (load["requests"], load["sectors_per_request"], load["request_efficiency"]) == \
        (32, 4.0, 1.0)
    assert (load["programs"], load["accesses"], load["sectors_per_program"]) == (8, 8, 16.0)
    assert (load["unique_bytes"], load["total_bytes"], load["reuse"], load["unique_sectors"]) \
        == (4096, 4096, 1.0, 128)
    assert store["kind"] == "store" and store["sectors"] == 128 and store["efficiency"] == 1.0
    assert load["source"] == "x = tl.load(x_ptr + offsets, mask=mask)"
    assert load["line"] == line_of(load["source"]) and load["file"] == __file__


def test_masked_lanes_move_nothing(executor):
    x = np.arange(1152, dtype=np.float32)
    # 1000 of 9 x 128 lanes active: program 7 has 104 (13 sectors), program 8 none
    rec = run(copy_kernel, (9,), x, np.zeros_like(x), 1000, BLOCK=128)
    load, = by_line(rec, "tl.load")
    assert (load["elements"], load["bytes"], load["sectors"], load["efficiency"]) == \
        (1000, 4000, 7 * 16 + 13, 1.0)
    assert (load["programs"], load["accesses"], load["unique_bytes"]) == (8, 8, 4000)
    # requests of 32 lanes that hold an active lane: 4 per program, program 7's last has 8
    assert (load["requests"], load["request_sectors"]) == (7 * 4 + 4, 7 * 16 + 4 + 4 + 4 + 1)


def test_one_warp_loads_16_byte_vectors():
    x = np.arange(1024, dtype=np.float32)
    load, = by_line(run(copy_kernel, (8,), x, np.zeros_like(x), 1024, BLOCK=128, num_warps=1),
                    "tl.load")
    # 128 fp32 for 32 threads: 4 each, one 16-byte vector: a request covers the program
    assert (load["sectors"], load["requests"], load["sectors_per_request"]) == (128, 8, 16.0)


def test_column_load_of_a_row_major_matrix_uses_an_eighth_of_each_sector(executor):
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    rec = run(column_kernel, (64,), x, np.zeros_like(x), 64, 64, BLOCK=64)
    load, = by_line(rec, "tl.load")
    store, = by_line(rec, "tl.store")
    # each element in its own sector (rows 256 bytes apart): 64 sectors per program for 256
    # useful bytes; two requests of 32 scalar lanes, 32 sectors each
    assert (load["sectors"], load["sectors_per_access"], load["efficiency"]) == \
        (64 * 64, 64.0, 0.125)
    assert (load["requests"], load["sectors_per_request"], load["request_efficiency"]) == \
        (128, 32.0, 0.125)
    assert load["unique_sectors"] == 64 * 64 * 4 // 32  # every sector read 8 times in all
    assert (store["sectors"], store["efficiency"], store["sectors_per_request"]) == \
        (64 * 8, 1.0, 4.0)  # 64 contiguous fp32 per program: 8 sectors, 2 scalar requests


def test_matmul_reuse_of_shared_row_and_column_panels(executor):
    # (64 x 64) @ (64 x 128), 32 x 32 tiles, BLOCK_K = 32: grid (2, 4) = 8 programs, 2 steps.
    # Each A row panel (32 x 64) is read by the 4 programs of its row, each B column panel
    # (64 x 32) by the 2 programs of its column.
    a = np.ones((64, 64), np.float32)
    b = np.ones((64, 128), np.float32)
    rec = matmul(a, b)
    load_a, = by_line(rec, "a = tl.load")
    load_b, = by_line(rec, "b = tl.load")
    store, = by_line(rec, "tl.store")
    assert (load_a["elements"], load_a["total_bytes"], load_a["unique_bytes"],
            load_a["reuse"]) == (8 * 32 * 64, 65536, 64 * 64 * 4, 4.0)
    assert (load_b["elements"], load_b["total_bytes"], load_b["unique_bytes"],
            load_b["reuse"]) == (8 * 64 * 32, 65536, 64 * 128 * 4, 2.0)
    assert (load_a["unique_sectors"], load_b["unique_sectors"]) == (512, 1024)
    # a (32 x 32) fp32 tile: 32 rows of 128 aligned bytes = 128 sectors, 16 accesses; 8 fp32
    # per thread (4 warps), in 16-byte vectors
    for load in (load_a, load_b):
        assert (load["sectors"], load["efficiency"], load["accesses"],
                load["sectors_per_access"], load["sectors_per_program"]) == \
            (16 * 128, 1.0, 16, 128.0, 256.0)
        assert (load["requests"], load["sectors_per_request"], load["request_efficiency"]) \
            == (16 * 8, 16.0, 1.0)  # 32 threads x 4 fp32 = 4 tile rows per request
    assert (store["elements"], store["unique_bytes"], store["reuse"], store["sectors"]) == \
        (64 * 128, 64 * 128 * 4, 1.0, 8 * 128)


def test_transposed_a_loses_coalescing_along_the_last_axis(executor):
    a = np.ones((64, 64), np.float32)
    b = np.ones((64, 128), np.float32)
    normal, = by_line(matmul(a, b), "a = tl.load")
    transposed, = by_line(matmul(np.ascontiguousarray(a.T).T, b), "a = tl.load")
    # same elements and sectors per tile (32 columns of 128 contiguous bytes), but along the
    # tile's last axis (K) the addresses are 256 bytes apart: a warp request of 32 scalar
    # lanes (one tile row) touches 32 sectors for 128 useful bytes
    assert transposed["elements"] == normal["elements"] == 16384
    assert (transposed["sectors"], transposed["efficiency"]) == (normal["sectors"], 1.0)
    assert (transposed["requests"], transposed["request_sectors"],
            transposed["sectors_per_request"], transposed["request_efficiency"]) == \
        (16 * 32, 16 * 1024, 32.0, 0.125)
    assert transposed["request_efficiency"] < normal["request_efficiency"] == 1.0


def test_fp16_vectors_are_eight_lanes():
    x = np.arange(4096, dtype=np.float16)
    load, = by_line(run(copy_kernel, (4,), x, np.zeros_like(x), 4096, BLOCK=1024), "tl.load")
    # 1024 fp16 = 2 KiB = 64 sectors per program; 8 fp16 per thread, one 16-byte vector: a
    # request of 32 threads covers 256 lanes, 512 bytes, 16 sectors
    assert (load["sectors"], load["requests"], load["sectors_per_request"], load["bytes"]) == \
        (256, 16, 16.0, 8192)


def test_misaligned_start_costs_a_sector():
    x = np.arange(1025, dtype=np.float32)
    # the view starts 4 bytes into its storage: 128 fp32 span 17 sectors; no aligned vectors,
    # so 4 requests of 32 scalar lanes (128 bytes from byte 4 of a sector: 5 sectors each)
    load, = by_line(run(copy_kernel, (8,), x[1:], np.zeros(1024, np.float32), 1024,
                        BLOCK=128), "tl.load")
    assert (load["sectors"], load["efficiency"]) == (8 * 17, 4096 / (8 * 17 * 32))
    assert (load["requests"], load["request_sectors"]) == (8 * 4, 8 * 4 * 5)


@pytest.fixture
def diverging_rows():
    def rows(executor):
        x = np.arange(512, dtype=np.float32)
        y = np.zeros(512, np.float32)
        with triton.configure(executor=executor):
            return run(diverging_kernel, (4,), x, np.full(1, 2.0, np.float32), y,
                       BLOCK=128).lines
    return rows


def test_both_executors_give_identical_rows(diverging_rows):
    lockstep, sequential = diverging_rows("lockstep"), diverging_rows("sequential")
    assert lockstep == sequential
    kinds = [(r["kind"], r["arg"], r["elements"]) for r in lockstep]
    assert kinds == [("load", "s_ptr", 4), ("load", "x_ptr", 256), ("store", "y_ptr", 256),
                     ("load", "x_ptr", 256), ("store", "y_ptr", 256), ("atomic", "y_ptr", 4)]
    scale, = (r for r in lockstep if r["arg"] == "s_ptr")
    assert (scale["sectors"], scale["programs"], scale["unique_bytes"], scale["reuse"]) == \
        (4, 4, 4, 4.0)
    odd, = (r for r in lockstep if "offsets * 2" in r["source"] and r["kind"] == "load")
    # programs 1 and 3 both read the even elements of [256, 512): 512 of 1024 fetched bytes
    assert (odd["sectors"], odd["efficiency"], odd["unique_bytes"], odd["reuse"]) == \
        (2 * 32, 0.5, 128 * 4, 2.0)


def test_matmul_rows_identical_under_both_executors():
    a = np.ones((64, 64), np.float32)
    b = np.ones((64, 128), np.float32)
    rows = []
    for executor in ("lockstep", "sequential"):
        with triton.configure(executor=executor):
            rows.append(matmul(np.ascontiguousarray(a.T).T, b).lines)
    assert rows[0] == rows[1]


def test_the_record_text_shows_the_table():
    x = np.arange(1024, dtype=np.float32)
    text = run(copy_kernel, (8,), x, np.zeros_like(x), 1024, BLOCK=128).table()
    assert "req eff" in text and "x = tl.load(x_ptr + offsets, mask=mask)" in text
