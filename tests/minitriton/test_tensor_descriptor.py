"""minitriton's TMA tensor descriptors: host TensorDescriptor checks, in-kernel
make_tensor_descriptor, NaN padding, traffic, and the errors a user gets."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minitriton as triton
import minitriton.language as tl
import references as ref
from minitriton.tools.tensor_descriptor import TensorDescriptor

runs_kernels = pytest.mark.usefixtures("executor")


def zeros(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


@triton.jit
def copy_kernel(x_desc, y_desc, BM: tl.constexpr, BN: tl.constexpr):
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    y_desc.store([m, n], x_desc.load([m, n]))


@runs_kernels
def test_copy_through_descriptors_counts_only_the_tensor():
    x = ref.rand((50, 40))
    y = zeros(50, 40)
    with triton.record() as rec:
        copy_kernel[(4, 2)](TensorDescriptor.from_tensor(x, [16, 32]),
                            TensorDescriptor.from_tensor(y, [16, 32]), BM=16, BN=32)
    np.testing.assert_array_equal(x, y)
    (launch,) = rec
    assert launch.elements_read == 50 * 40 and launch.elements_written == 50 * 40


@pytest.mark.parametrize("make, rule", [
    (lambda: TensorDescriptor.from_tensor(zeros(64)[1:], [16]), "16-byte aligned"),
    (lambda: TensorDescriptor.from_tensor(zeros(8, 45), [8, 16]), "strides must be"),
    (lambda: TensorDescriptor.from_tensor(zeros(16, 8).T, [8, 8]), "contiguous"),
    (lambda: TensorDescriptor.from_tensor(zeros(8, 16), [8, 12]), "powers of two"),
    (lambda: TensorDescriptor.from_tensor(zeros(8, 512), [8, 512]), "at most 256"),
    (lambda: TensorDescriptor.from_tensor(zeros(8, 16), [8, 16], "one"), "padding"),
    (lambda: TensorDescriptor(zeros(8, 16), [8, 0], [16, 1], [8, 16]), "positive"),
])
def test_host_descriptor_rules(make, rule):
    with pytest.raises(ValueError, match=rule):
        make()


@triton.jit
def nan_pad_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN],
                                     padding_option="nan")
    tile = desc.load([M - BM // 2, 0])  # the lower half is past the last row
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + offs, tile)


@runs_kernels
def test_make_tensor_descriptor_in_kernel_with_nan_padding():
    x = ref.rand((20, 16))
    out = zeros(8, 16)
    nan_pad_kernel[(1,)](x, out, 20, 16, BM=8, BN=16)
    np.testing.assert_array_equal(out[:4], x[16:20])
    assert np.isnan(out[4:]).all()


@triton.jit
def small_block_kernel(x_ptr, BN: tl.constexpr):
    tl.make_tensor_descriptor(x_ptr, shape=[8, 8], strides=[8, 1], block_shape=[8, BN])


def test_make_tensor_descriptor_needs_16_bytes_per_row():
    with pytest.raises(triton.CompilationError, match="at least 16 bytes"):
        small_block_kernel[(1,)](zeros(64), BN=2)


@runs_kernels
def test_descriptor_claiming_more_than_its_tensor_is_out_of_bounds():
    x = zeros(16, 32)
    y = zeros(16, 32)
    big = TensorDescriptor(x, [32, 32], [32, 1], [16, 32])  # says 32 rows, holds 16
    with pytest.raises(triton.OutOfBoundsError, match="x_desc"):
        copy_kernel[(2, 1)](big, TensorDescriptor.from_tensor(y, [16, 32]), BM=16, BN=32)


@triton.jit
def offsets_kernel(x_desc):
    x_desc.load([0])


def test_descriptor_offsets_must_match_rank():
    x = zeros(16, 32)
    with pytest.raises(triton.CompilationError, match="expected 2 offsets"):
        offsets_kernel[(1,)](TensorDescriptor.from_tensor(x, [16, 32]))


@triton.jit
def runtime_stride_kernel(x_ptr, stride, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[4, 8], strides=[stride, 1],
                                     block_shape=[4, BN])
    desc.load([0, 0])


@runs_kernels
def test_make_tensor_descriptor_strides_must_be_16_byte_aligned():
    with pytest.raises(triton.GPUFaultError, match="multiple of 16 bytes"):
        runtime_stride_kernel[(2,)](zeros(64), 10, BN=8)  # 40-byte rows
    runtime_stride_kernel[(2,)](zeros(64), 12, BN=8)  # 48-byte rows: fine


@triton.jit
def window_kernel(x_desc, y_desc, out_ptr, om, on, BM: tl.constexpr, BN: tl.constexpr):
    tile = x_desc.load([om, on])
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + offs, tile)
    y_desc.store([om, on], tile + 1)


def _window(x, om, on, bm, bn):
    """Reference: the (bm, bn) window of x at (om, on), zeros outside x."""
    padded = zeros(x.shape[0] + 2 * bm, x.shape[1] + 2 * bn, dtype=x.dtype)
    padded[bm:bm + x.shape[0], bn:bn + x.shape[1]] = x
    return padded[om + bm:om + 2 * bm, on + bn:on + 2 * bn]


@runs_kernels
@given(m=st.integers(1, 40), n8=st.integers(1, 6), bm=st.sampled_from([1, 2, 8, 16]),
       bn=st.sampled_from([8, 16, 32]), data=st.data(),
       dtype=st.sampled_from([np.float16, np.float32]), seed=st.integers(0, 2**16))
@settings(max_examples=60, deadline=None)
def test_descriptor_windows_match_zero_padded_slices(m, n8, bm, bn, data, dtype, seed):
    n = 8 * n8  # rows of 16-byte multiples in fp16 and fp32
    om = data.draw(st.integers(-bm, m))
    on = data.draw(st.integers(-bn, n))
    x = ref.rand((m, n), seed=seed, dtype=dtype)
    y = zeros(m, n, dtype=dtype)
    out = np.empty(bm * bn, dtype)
    window_kernel[(1,)](TensorDescriptor.from_tensor(x, [bm, bn]),
                        TensorDescriptor.from_tensor(y, [bm, bn]), out, om, on, BM=bm, BN=bn)
    want = _window(x, om, on, bm, bn)
    np.testing.assert_array_equal(out.reshape(bm, bn), want)
    stored = np.zeros_like(y)  # the store lands only inside y, at the window
    r0, c0 = max(om, 0), max(on, 0)
    r1, c1 = min(om + bm, m), min(on + bn, n)
    if r0 < r1 and c0 < c1:
        stored[r0:r1, c0:c1] = x[r0:r1, c0:c1] + dtype(1)
    np.testing.assert_array_equal(y, stored)


@triton.jit
def scatter_add_kernel(acc_desc, top_desc, BM: tl.constexpr, BN: tl.constexpr):
    # programs add overlapping windows, the last ones partly outside the tensor
    pid = tl.program_id(0)
    acc_desc.atomic_add([pid * (BM // 2), pid * (BN // 2)], tl.full([BM, BN], 1.0, tl.float32))
    top_desc.atomic_max([0, 0], tl.full([BM, BN], pid, tl.int32))


@runs_kernels
def test_descriptor_atomics_add_overlapping_windows_without_races():
    acc = zeros(20, 24)
    top = np.full((20, 24), -1, np.int32)
    with triton.configure(races=True):
        scatter_add_kernel[(5,)](TensorDescriptor.from_tensor(acc, [8, 16]),
                                 TensorDescriptor.from_tensor(top, [8, 16]), BM=8, BN=16)
    want = zeros(20, 24)
    for p in range(5):
        want[p * 4:p * 4 + 8, p * 8:p * 8 + 16] += 1  # slices clip like the hardware
    np.testing.assert_array_equal(acc, want)
    want_top = np.full((20, 24), -1, np.int32)
    want_top[:8, :16] = 4
    np.testing.assert_array_equal(top, want_top)


@triton.jit
def bad_atomic_kernel(d, VALUE_FP16: tl.constexpr):
    v = tl.zeros([8, 8], dtype=tl.float16 if VALUE_FP16 else tl.float32)
    d.atomic_xor([0, 0], v)


def test_descriptor_atomics_check_types():
    x = zeros(8, 8)
    with pytest.raises(triton.CompilationError, match="atomic_xor: unsupported dtype fp32"):
        bad_atomic_kernel[(1,)](TensorDescriptor.from_tensor(x, [8, 8]), VALUE_FP16=False)
    x = zeros(8, 8, dtype=np.int32)
    with pytest.raises(triton.CompilationError, match="value is fp16 but the descriptor holds"):
        bad_atomic_kernel[(1,)](TensorDescriptor.from_tensor(x, [8, 8]), VALUE_FP16=True)


@triton.jit
def shifted_atomic_kernel(d, OM: tl.constexpr, ON: tl.constexpr):
    pid = tl.program_id(0)
    d.atomic_add([pid * 8 + OM, ON], tl.full([8, 16], 1.0, tl.float32))


@runs_kernels
@pytest.mark.parametrize("om,on,bad", [(0, 4, False), (3, 0, False), (0, 3, True), (-8, 0, True),
                                       (0, -4, True)])
def test_descriptor_atomics_refuse_what_faults_on_the_gpu(om, on, bad):
    """H200, Triton 3.6: TMA reductions at negative offsets, or at a last-dimension offset that
    is not a multiple of 16 bytes, die with cudaErrorIllegalInstruction (loads do not)."""
    x = zeros(32, 64)
    launch = lambda: shifted_atomic_kernel[(2,)](TensorDescriptor.from_tensor(x, [8, 16]),  # noqa: E731
                                                 OM=om, ON=on)
    if not bad:
        launch()
        assert x.sum() == 2 * 8 * 16 - (8 * max(0, on + 16 - 64) * 2)
        return
    with pytest.raises(triton.GPUFaultError, match=r"program \(0, 0, 0\)[\s\S]*atomic_add at "
                       rf"offsets \[{om}, {on}\].*multiple of 16 bytes \(4 fp32 elements\)"):
        launch()


@triton.jit
def overlapping_store_kernel(d, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    d.store([pid * (BM // 2), 0], tl.full([BM, BN], pid, tl.float32))


@runs_kernels
def test_overlapping_descriptor_stores_are_a_race():
    x = zeros(16, 16)
    with pytest.raises(triton.RaceError, match="argument `d`"):
        with triton.configure(races=True):
            overlapping_store_kernel[(3,)](TensorDescriptor.from_tensor(x, [8, 16]), BM=8, BN=16)
