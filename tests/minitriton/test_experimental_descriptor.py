"""Triton 3.2/3.3's experimental TMA descriptors (tutorials 06 and 09 of that era): host
descriptors (`triton.tools.experimental_descriptor`, `driver.active.utils.fill_*d_tma_descriptor`)
read in kernels by `tl._experimental_descriptor_load/store`, and `tl._experimental_make_tensor_
descriptor`, against NumPy references. Triton 3.6 on our GPU has no such API: no `gpu` test."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
import references as ref
from minitriton import runner
from minitriton.standin.target import EmulatedDriver
from minitriton.runtime.gpus import DEFAULT_GPU, gpu
from minitriton.tools import experimental_descriptor as ed

runs_kernels = pytest.mark.usefixtures("executor")
UTILS = EmulatedDriver(gpu(DEFAULT_GPU)).utils


def aligned(shape, dtype=np.float32, alignment=64, values=None):
    """A C-contiguous array whose first byte is `alignment`-aligned (TMA wants 16 bytes for
    tensors, 64 for descriptors), registered so that kernels reach it by its address."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    raw = np.zeros(n + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    a = raw[start:start + n].view(dtype).reshape(shape)
    if values is not None:
        a[...] = values
    triton.register_memory(raw)  # held weakly; the view keeps `raw` alive
    return a


def box(x, offsets, shape):
    """The TMA box of `shape` at `offsets` of `x`: zeros where it falls outside."""
    out = np.zeros(shape, x.dtype)
    src = tuple(slice(max(o, 0), max(min(o + s, d), 0)) for o, s, d in zip(offsets, shape, x.shape))
    if all(sl.stop > sl.start for sl in src):
        out[tuple(slice(sl.start - o, sl.stop - o) for sl, o in zip(src, offsets))] = x[src]
    return out


def desc2d(x, block):
    return ed.create_2d_tma_descriptor(x.ctypes.data, *x.shape, *block, x.itemsize)


@triton.jit
def box_kernel(desc, out_ptr, m, n, BM: tl.constexpr, BN: tl.constexpr):
    tile = tl._experimental_descriptor_load(desc, [m, n], [BM, BN], tl.float32)
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + offs, tile)


@runs_kernels
@pytest.mark.parametrize("offsets", [(0, 0), (8, 16), (-3, 5), (15, 30), (-8, -16), (20, 40),
                                     (19, 39)])
def test_a_host_descriptor_loads_the_box_with_zeros_outside(offsets):
    x = aligned((20, 40), values=ref.rand((20, 40)))
    out = np.full((8, 16), -1.0, np.float32)
    box_kernel[(1,)](desc2d(x, [8, 16]), out, *offsets, BM=8, BN=16)
    np.testing.assert_array_equal(out, box(x, offsets, (8, 16)))


@triton.jit
def copy_kernel(x_desc, y_desc, BM: tl.constexpr, BN: tl.constexpr):
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    tile = tl._experimental_descriptor_load(x_desc, [m, n], [BM, BN], tl.float32)
    tl._experimental_descriptor_store(y_desc, tile + 1, [m, n])


@runs_kernels
def test_a_copy_through_host_descriptors_clips_the_edge_tiles_and_reads_no_descriptor_bytes():
    x = aligned((20, 40), values=ref.rand((20, 40)))
    y = aligned((20, 40))
    with triton.record() as rec:
        copy_kernel[(3, 3)](desc2d(x, [8, 16]), desc2d(y, [8, 16]), BM=8, BN=16)
    np.testing.assert_array_equal(y, x + 1)
    (launch,) = rec
    assert launch.elements_read == 20 * 40 and launch.elements_written == 20 * 40


@triton.jit
def store_box_kernel(desc, src_ptr, m, n, BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl._experimental_descriptor_store(desc, tl.load(src_ptr + offs), [m, n])


@runs_kernels
@pytest.mark.parametrize("offsets", [(4, 8), (-5, -7), (14, 30), (30, 0)])
def test_a_store_writes_only_the_part_of_the_box_inside_the_tensor(offsets):
    y = aligned((20, 40), values=-1.0)
    src = ref.rand((8, 16), seed=1)
    expect = np.full((20, 40), -1.0, np.float32)
    m, n = offsets
    for i in range(8):
        for j in range(16):
            if 0 <= m + i < 20 and 0 <= n + j < 40:
                expect[m + i, n + j] = src[i, j]
    store_box_kernel[(1,)](desc2d(y, [8, 16]), src, m, n, BM=8, BN=16)
    np.testing.assert_array_equal(y, expect)


@triton.jit
def box1d_kernel(desc, out_ptr, start, B: tl.constexpr):
    v = tl._experimental_descriptor_load(desc, [start], [B], tl.float16)
    tl.store(out_ptr + tl.arange(0, B), v)
    tl._experimental_descriptor_store(desc, v * 2, [start])


@runs_kernels
@pytest.mark.parametrize("start", [0, 24, 40, -4])
def test_1d_descriptors_load_and_store_boxes(start):
    x0 = ref.rand(50, dtype=np.float16)
    x = aligned(50, np.float16, values=x0)
    out = np.zeros(16, np.float16)
    box1d_kernel[(1,)](ed.create_1d_tma_descriptor(x.ctypes.data, 50, 16, 2), out, start, B=16)
    np.testing.assert_array_equal(out, box(x0, (start,), (16,)))
    inside = np.arange(50)
    inside = (inside >= start) & (inside < start + 16)
    np.testing.assert_array_equal(x, np.where(inside, x0 * 2, x0))


@triton.jit
def two_descs_kernel(descs, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)  # each program reads its own descriptor: 128 bytes further
    tile = tl._experimental_descriptor_load(descs + pid * 128, [4, 0], [BM, BN], tl.float32)
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + pid * BM * BN + offs, tile)


@runs_kernels
def test_descriptors_filled_by_the_driver_into_a_buffer_argument_per_program():
    a = aligned((12, 8), values=ref.rand((12, 8), seed=2))
    b = aligned((16, 16), values=ref.rand((16, 16), seed=3))
    descs = aligned(256, np.uint8)
    UTILS.fill_2d_tma_descriptor(a.ctypes.data, 12, 8, 8, 8, 4, descs.ctypes.data)
    UTILS.fill_2d_tma_descriptor(b.ctypes.data, 16, 16, 8, 8, 4, descs.ctypes.data + 128)
    out = np.zeros((2, 8, 8), np.float32)
    two_descs_kernel[(2,)](descs, out, BM=8, BN=8)
    np.testing.assert_array_equal(out[0], box(a, (4, 0), (8, 8)))
    np.testing.assert_array_equal(out[1], box(b, (4, 0), (8, 8)))


def test_the_descriptor_layout_is_the_documented_one():
    x = aligned((20, 40))
    fields = desc2d(x, [8, 16]).desc.view(np.int64)
    assert fields[0].tobytes() == b"mtTMAv1\0"
    assert fields[1:10].tolist() == [x.ctypes.data, 2, 4, 20, 40, 8, 16, 40, 1]
    assert not fields[10:].any()
    d1 = ed.create_1d_tma_descriptor(x.ctypes.data, 800, 64, 4)
    assert d1.desc.view(np.int64)[1:10].tolist() == [x.ctypes.data, 1, 4, 800, 0, 64, 0, 1, 0]
    assert d1.tma_desc_cpu_ptr() % 64 == 0 and d1.tma_desc_cpu_ptr() == d1.desc.ctypes.data


@triton.jit
def device_desc_kernel(x_ptr, y_ptr, M, N, m, n, BM: tl.constexpr, BN: tl.constexpr,
                       VIA_LOAD: tl.constexpr):
    xd = tl._experimental_make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1],
                                                 block_shape=[BM, BN])
    yd = tl._experimental_make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1],
                                                 block_shape=[BM, BN])
    if VIA_LOAD:
        tile = tl._experimental_descriptor_load(xd, [m, n], [BM, BN], tl.float32)
        tl._experimental_descriptor_store(yd, tile * 2, [m, n])
    else:
        yd.store([m, n], xd.load([m, n]) * 2)


@runs_kernels
@pytest.mark.parametrize("via_load", [False, True])
@pytest.mark.parametrize("offsets", [(0, 0), (-3, 10), (16, 32)])
def test_descriptors_made_in_the_kernel(via_load, offsets):
    x = ref.rand((20, 40))
    y = np.full((20, 40), -1.0, np.float32)
    device_desc_kernel[(1,)](x, y, 20, 40, *offsets, BM=8, BN=16, VIA_LOAD=via_load)
    expect = np.full((20, 40), -1.0, np.float32)
    window = box(x, offsets, (8, 16)) * 2
    m, n = offsets
    for i in range(8):
        for j in range(16):
            if 0 <= m + i < 20 and 0 <= n + j < 40:
                expect[m + i, n + j] = window[i, j]
    np.testing.assert_array_equal(y, expect)


@triton.jit
def device_1d_kernel(x_ptr, N, B: tl.constexpr):
    tl._experimental_make_tensor_descriptor(x_ptr, shape=[N], strides=[1], block_shape=[B])


def test_the_device_side_experimental_descriptor_has_2_to_5_dimensions():
    with pytest.raises(triton.CompilationError, match="Expected 2 <= ndim <= 5 but got 1"):
        device_1d_kernel[(1,)](np.zeros(64, np.float32), 64, B=16)


@triton.jit
def any_load_kernel(desc, BM: tl.constexpr, BN: tl.constexpr, DTYPE: tl.constexpr):
    tl._experimental_descriptor_load(desc, [0, 0], [BM, BN], DTYPE)


@runs_kernels
def test_bytes_that_are_not_a_descriptor():
    with pytest.raises(triton.GPUFaultError, match="not a TMA descriptor.*fill_2d_tma_descriptor"):
        any_load_kernel[(2,)](np.zeros(128, np.int8), BM=8, BN=16, DTYPE=tl.float32)


def test_a_descriptor_buffer_of_the_wrong_dtype():
    x = aligned((8, 16))
    with pytest.raises(triton.CompilationError, match="points to fp32.*int8/uint8"):
        any_load_kernel[(1,)](x, BM=8, BN=16, DTYPE=tl.float32)


def test_a_descriptor_buffer_smaller_than_128_bytes():
    with pytest.raises(triton.OutOfBoundsError, match="128 bytes, and the one at desc_ptr runs "
                                                      "past the end of `desc`"):
        any_load_kernel[(1,)](np.zeros(64, np.uint8), BM=8, BN=16, DTYPE=tl.float32)


def test_a_descriptor_of_memory_nobody_knows():
    with pytest.raises(triton.OutOfBoundsError, match="global address 0x7000000 is in no memory"):
        any_load_kernel[(1,)](ed.create_2d_tma_descriptor(0x7000000, 64, 16, 8, 16, 4), BM=8,
                              BN=16, DTYPE=tl.float32)


@pytest.mark.parametrize("block, dtype, message", [
    ([8, 16], tl.float16, "filled for 4-byte elements, but the kernel moves fp16"),
    ([16, 16], tl.float32, r"box is \[8, 16\] but the kernel moves a block of \[16, 16\]"),
])
def test_a_load_that_does_not_match_its_descriptor(block, dtype, message):
    x = aligned((32, 32))
    with pytest.raises(triton.GPUFaultError, match=message):
        any_load_kernel[(1,)](desc2d(x, [8, 16]), BM=block[0], BN=block[1], DTYPE=dtype)


def test_a_1d_descriptor_read_as_2d():
    x = aligned(64)
    with pytest.raises(triton.GPUFaultError, match="descriptor is 1-D but the block"):
        any_load_kernel[(1,)](ed.create_1d_tma_descriptor(x.ctypes.data, 64, 16, 4), BM=8,
                              BN=16, DTYPE=tl.float32)


def test_2d_boxes_need_8_rows_and_32_bytes_per_row():
    x = aligned((32, 32))
    with pytest.raises(triton.CompilationError, match="at least 8 rows, but got 4"):
        any_load_kernel[(1,)](desc2d(x, [4, 16]), BM=4, BN=16, DTYPE=tl.float32)
    with pytest.raises(triton.CompilationError, match="fp16 tensor descriptor block shape must "
                                                      "have at least 16 columns, but got 8"):
        any_load_kernel[(1,)](np.zeros(128, np.uint8), BM=8, BN=8, DTYPE=tl.float16)


@triton.jit
def scalar_desc_kernel(x):
    tl._experimental_descriptor_load(x, [0, 0], [8, 16], tl.float32)


def test_desc_ptr_must_be_a_pointer():
    with pytest.raises(triton.CompilationError, match="desc_ptr must be a pointer"):
        scalar_desc_kernel[(1,)](3)


@pytest.mark.parametrize("call, rule", [
    (lambda x: desc2d(x.view(np.float64)[:, :4], [8, 4]), "elementSize must be 1, 2, or 4"),
    (lambda x: ed.create_2d_tma_descriptor(x.ctypes.data + 4, 8, 16, 8, 8, 4), "16-byte aligned"),
    (lambda x: ed.create_2d_tma_descriptor(x.ctypes.data, 8, 10, 8, 8, 4), "row stride"),
    (lambda x: ed.create_2d_tma_descriptor(x.ctypes.data, 8, 16, 8, 4, 4), "block size too small"),
    (lambda x: ed.create_1d_tma_descriptor(x.ctypes.data, 256, 512, 4), "between 1 and 256"),
    (lambda x: ed.create_1d_tma_descriptor(x.ctypes.data, 0, 16, 4), "between 1 and 2"),
    (lambda x: ed.create_1d_tma_descriptor(x, 64, 16, 4), "integer address.*ctypes.data"),
    (lambda x: ed.TmaDescKernelParam(x.ctypes.data, [2, 4, 16], [1, 1, 16], 4), "1 or 2 dim"),
])
def test_host_descriptor_rules(call, rule):
    x = aligned((16, 16))
    with pytest.raises((ValueError, TypeError), match=rule):
        call(x)


def test_the_driver_fills_only_aligned_live_memory():
    x = aligned((16, 16))
    descs = aligned(256, np.uint8)
    with pytest.raises(ValueError, match="64-byte aligned"):
        UTILS.fill_2d_tma_descriptor(x.ctypes.data, 16, 16, 8, 8, 4, descs.ctypes.data + 16)
    with pytest.raises(ValueError, match="not all in one live CPU tensor.*register_memory"):
        UTILS.fill_1d_tma_descriptor(x.ctypes.data, 256, 16, 4, 64)
    raw = descs
    while raw.base is not None:  # `aligned`'s allocation: 64 bytes more than the view
        raw = raw.base
    end = raw.ctypes.data + raw.nbytes
    with pytest.raises(ValueError, match="not all in one live CPU tensor"):  # the end is past
        UTILS.fill_1d_tma_descriptor(x.ctypes.data, 256, 16, 4, (end - 64) // 64 * 64)


def test_the_runner_offers_the_experimental_api_under_triton_names():
    with runner.emulated() as triton_:
        import triton.language as tl_
        import triton.tools.experimental_descriptor as ted
        assert ted is ed and "nv_tma_desc_type" in dir(tl_)
        utils = triton_.runtime.driver.active.utils
        assert callable(utils.fill_1d_tma_descriptor) and callable(utils.fill_2d_tma_descriptor)


@triton.jit
def attention_like_kernel(desc_q, desc_o, N_CTX, BM: tl.constexpr, D: tl.constexpr):
    start = tl.program_id(0) * BM
    q = tl._experimental_descriptor_load(desc_q, [start, 0], [BM, D], tl.float16)
    tl._experimental_descriptor_store(desc_o, (q * 2).to(tl.float16), [start, 0])


class KernelParamWrapper:  # tutorial 06's duck type for TmaDescKernelParam
    def __init__(self, desc):
        self.desc = desc

    def tma_desc_cpu_ptr(self):
        return self.desc.data_ptr()


@runs_kernels
def test_tutorial_06_style_torch_descriptors_reach_unpassed_tensors():
    torch = pytest.importorskip("torch")
    q = torch.randn(3, 40, 32).half()  # 120 rows of 32 (the last box is partly outside)
    o = torch.zeros_like(q)
    descs = {name: torch.empty(128, dtype=torch.int8) for name in "qo"}
    for name, t in (("q", q), ("o", o)):
        assert descs[name].data_ptr() % 64 == 0
        UTILS.fill_2d_tma_descriptor(t.data_ptr(), 120, 32, 16, 32, t.element_size(),
                                     descs[name].data_ptr())
    attention_like_kernel[(8,)](KernelParamWrapper(descs["q"]), KernelParamWrapper(descs["o"]),
                                120, BM=16, D=32)
    torch.testing.assert_close(o, q * 2, rtol=0, atol=0)
    o.zero_()  # and with a descriptor tensor passed as it is
    attention_like_kernel[(8,)](descs["q"], descs["o"], 120, BM=16, D=32)
    torch.testing.assert_close(o, q * 2, rtol=0, atol=0)


def test_tensors_without_storage_do_not_stop_the_search_for_an_address():
    """Live tensors that have no storage to read (a FakeTensor that a traced torch.compile
    left behind) are passed over while minitriton looks for the memory an address is in."""
    torch = pytest.importorskip("torch")
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fakes = [torch.empty(64)]  # alive during the search below
    with pytest.raises(triton.OutOfBoundsError, match="global address 0x7000000 is in no memory"):
        any_load_kernel[(1,)](ed.create_2d_tma_descriptor(0x7000000, 64, 16, 8, 16, 4), BM=8,
                              BN=16, DTYPE=tl.float32)
    assert fakes[0].shape == (64,)
