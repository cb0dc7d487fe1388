"""Pointers made from integers (`int_to_ptr`) and back (`ptr_to_int`), as Triton's grouped GEMM
(tutorial 08) uses them: a tensor of `data_ptr()` values, loaded and cast to a pointer type."""
import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import OutOfBoundsError, CompilationError


@triton.jit
def gather_groups(addrs, out, n, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    src = tl.load(addrs + g).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n, other=0.0)
    tl.store(out + g * BLOCK + offs, x * 2, mask=offs < n)
    tl.store(src + offs, x + 1, mask=offs < n)  # and write back through the same pointer


@triton.jit
def round_trip(x, out):
    a = x.to(tl.int64)
    tl.store(out, a)
    tl.store(out + 1, (x + 3).to(tl.int64) - a)  # ptr + 3 floats is 12 bytes further
    tl.store(out + 2, tl.load((a + 8).to(tl.pointer_type(tl.float32))).to(tl.int64))
    tl.store(out + 3, (x.to(tl.pointer_type(tl.int8)) + 4).to(tl.int64) - a)
    tl.store(out + 4, x.to(tl.int1).to(tl.int64))


def test_numpy_arrays_registered_are_reached_and_written():
    groups = [np.arange(8, dtype=np.float32) * (i + 1) for i in range(3)]
    before = [g.copy() for g in groups]
    triton.register_memory(*groups)
    addrs = np.array([g.ctypes.data for g in groups], dtype=np.int64)
    out = np.zeros(3 * 8, np.float32)
    with triton.record() as rec:
        gather_groups[(3,)](addrs, out, 8, BLOCK=8)
    np.testing.assert_array_equal(out.reshape(3, 8), np.stack(before) * 2)
    for g, b in zip(groups, before):
        np.testing.assert_array_equal(g, b + 1)
    launch = rec.launches[-1]
    reached = [a for name, a in launch.args.items() if name.startswith("[0x")]
    assert len(reached) == 3 and all(a.loaded == 8 and a.stored == 8 for a in reached)


def test_bounds_are_the_memory_reached():
    group = np.zeros(8, np.float32)
    triton.register_memory(group)
    addrs = np.array([group.ctypes.data], dtype=np.int64)
    with pytest.raises(OutOfBoundsError, match=r"reached through an integer address.*offsets \[8"):
        gather_groups[(1,)](addrs, np.zeros(16, np.float32), 9, BLOCK=16)
    np.testing.assert_array_equal(group, 0)  # the failed launch wrote nothing


def test_unknown_address_fails_where_it_is_used():
    addrs = np.array([12345678], dtype=np.int64)
    with pytest.raises(OutOfBoundsError, match="outside every buffer.*data_ptr"):
        gather_groups[(1,)](addrs, np.zeros(8, np.float32), 8, BLOCK=8)


def test_misaligned_address():
    group = np.zeros(8, np.float32)
    triton.register_memory(group)
    with pytest.raises(OutOfBoundsError, match="misaligned"):
        gather_groups[(1,)](np.array([group.ctypes.data + 2], np.int64),
                            np.zeros(8, np.float32), 8, BLOCK=8)


def test_pointer_to_int_is_the_byte_address(executor):
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(5, np.int64)
    round_trip[(1,)](x, out)
    assert out.tolist() == [x.ctypes.data, 12, 2, 4, 1]


def test_only_64_bit_integers_become_pointers():
    @triton.jit
    def bad(addrs):
        p = tl.load(addrs).to(tl.pointer_type(tl.float32))
        tl.store(p, 1.0)

    with pytest.raises(CompilationError, match="64-bit"):
        bad[(1,)](np.zeros(1, np.int32))


def test_torch_tensors_are_found_without_registering():
    torch = pytest.importorskip("torch")
    groups = [torch.randn(8) for _ in range(2)]
    before = [g.clone() for g in groups]
    addrs = torch.tensor([g.data_ptr() for g in groups])
    out = torch.zeros(16)
    gather_groups[(2,)](addrs, out, 8, BLOCK=8)
    assert torch.equal(out.view(2, 8), torch.stack(before) * 2)
    assert all(torch.equal(g, b + 1) for g, b in zip(groups, before))
    view = torch.zeros(16)[4:]  # an address inside a storage: bounded by the whole storage
    gather_groups[(1,)](torch.tensor([view.data_ptr()]), torch.zeros(8), 8, BLOCK=8)
    assert torch.equal(view[:8], torch.ones(8))


@triton.jit
def _store_wider(out_ptr):
    val = tl.full([], 1e50, tl.float64)
    tl.store(out_ptr.to(tl.pointer_type(val.dtype)), val)


def test_a_pointer_cast_to_a_type_wider_than_the_memory_fails_where_it_is_used():
    out = np.zeros(1, np.float32)  # 4 bytes: no fp64 fits
    _store_wider.warmup(out, grid=(1,))  # compiles (Triton's test_constexpr does this)
    with pytest.raises(OutOfBoundsError):
        _store_wider[(1,)](out)
