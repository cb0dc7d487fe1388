"""Bounds against the storage, not the view (issue 21, section 3).

A GPU kernel may touch any element of the memory a view lies in: the hard OutOfBoundsError is
outside the storage (a torch tensor's untyped storage, a NumPy view's base array); outside the
view but inside the storage is an OutsideViewWarning, an error under Settings.view_bounds.
Expanded (stride-0) tensors keep a storage of their real size. Objects that carry a pointer
through `data_ptr()` pass as pointers into the memory they wrap."""
import contextlib
import warnings

import numpy as np
import pytest

import minitriton as triton
import minitriton.language as tl
from minitriton import LaunchError, OutOfBoundsError, Settings
from minitriton.errors import OutsideViewWarning

from corpus import SEMANTICS, load

K = load(triton, tl, SEMANTICS)  # `prev` and `rows`, shared with the GPU parity test



@triton.jit
def copy(x, y, n, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)



@triton.jit
def shift_store(y, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y + o - 1, o.to(tl.float32))


@triton.jit
def store_then_fault(y, x, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y + o - 1, o.to(tl.float32))
    tl.store(y + o, tl.load(x + o + 100))


def strict(executor):
    return Settings(executor=executor, view_bounds=True)


@contextlib.contextmanager
def quiet():
    """No OutsideViewWarning may come out of the block."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutsideViewWarning)
        yield


# --------------------------------------------------------------------------- the example

def test_slice_read_before_its_start_reads_the_storage(executor):
    torch = pytest.importorskip("torch")
    base = torch.arange(9.)
    y = torch.empty(8)
    with pytest.warns(OutsideViewWarning, match=r"load outside the view of argument `x`.*"
                      r"offsets \[-1\].*the view spans \[0, 7\], its storage \[-1, 7\].*"
                      r"kernel `prev`, program \(0, 0, 0\), at .*semantics.py:\d+"):
        K.prev[(1,)](base[1:], y, B=8)
    assert y.tolist() == base[:8].tolist()  # what the H200 gives


def test_view_bounds_turns_the_warning_into_an_error(executor):
    torch = pytest.importorskip("torch")
    base = torch.arange(9.)
    y = torch.zeros(8)
    with pytest.raises(OutOfBoundsError) as e:
        K.prev[(1,)](base[1:], y, B=8, minitriton_settings=strict(executor))
    msg = str(e.value)
    for part in ("kernel `prev`", "program (0, 0, 0)", "tl.load(x + o - 1)", "argument `x`",
                 "offsets [-1]", "the view spans [0, 7], its storage [-1, 7]",
                 "Settings.view_bounds"):
        assert part in msg
    assert not y.any()


def test_outside_the_storage_stays_an_error_with_both_ranges(executor):
    torch = pytest.importorskip("torch")
    base = torch.arange(9.)
    with pytest.raises(OutOfBoundsError) as e:
        K.prev[(1,)](base[:8], torch.empty(8), B=8)
    msg = str(e.value)
    assert "load out of bounds on argument `x`" in msg and "program (0, 0, 0)" in msg
    assert "offsets [-1]" in msg
    assert "valid offsets are [0, 8] (its storage: 9 elements; the view passed in spans [0, 7])" \
        in msg


# --------------------------------------------------------------------------- wider storages

def test_column_block_read_past_its_last_column(executor):
    torch = pytest.importorskip("torch")
    m = torch.arange(32.).reshape(4, 8)
    block = m[:, 2:4]  # (4, 2), strides (8, 1): the last row's span ends at element 27
    y = torch.empty(4, 4)
    with pytest.warns(OutsideViewWarning, match=r"offsets \[26, 27\]"):  # row 3, columns 4, 5
        K.rows[(4,)](block, y, 8, C=4)
    assert y.tolist() == m[:, 2:6].tolist()
    with pytest.raises(OutOfBoundsError, match=r"offsets \[26, 27\].*valid offsets are "
                       r"\[-6, 25\]"):  # m[:, 6:8] read 4 columns: past the storage
        K.rows[(4,)](m[:, 6:8], y, 8, C=4)


def test_narrow_and_as_strided_views(executor):
    torch = pytest.importorskip("torch")
    base = torch.arange(16.)
    y = torch.empty(8)
    with pytest.warns(OutsideViewWarning, match=r"offsets \[4, 5, 6, 7\]"):
        copy[(1,)](base.narrow(0, 4, 4), y, 8, B=8)
    assert y.tolist() == base[4:12].tolist()
    strided = base.as_strided((3,), (2,), 1)  # elements 1, 3, 5: the span is [0, 4]
    with pytest.warns(OutsideViewWarning, match=r"offsets \[5, 6, 7\]"):
        copy[(1,)](strided, y, 8, B=8)
    assert y.tolist() == base[1:9].tolist()
    with pytest.raises(OutOfBoundsError, match=r"offsets \[7\].*valid offsets are \[-9, 6\]"):
        copy[(1,)](base.as_strided((3,), (2,), 9), y, 8, B=8)  # element 16: past the storage


def test_numpy_views_are_bounded_by_their_base_array(executor):
    base = np.arange(12, dtype=np.float32)
    y = np.zeros(8, np.float32)
    with pytest.warns(OutsideViewWarning, match=r"its storage \[-1, 10\]"):
        K.prev[(1,)](base[1:], y, B=8)
    np.testing.assert_array_equal(y, base[:8])
    strided = np.lib.stride_tricks.as_strided(base[2:], shape=(3,), strides=(8,))
    with pytest.warns(OutsideViewWarning, match=r"offsets \[5, 6, 7\]"):
        copy[(1,)](strided, y, 8, B=8)  # as_strided's base is a DummyArray over the slice
    np.testing.assert_array_equal(y, base[2:10])
    with pytest.raises(OutOfBoundsError, match=r"valid offsets are \[-8, 3\]"):
        copy[(1,)](base[8:], y, 8, B=8)


def test_the_storage_lets_no_read_only_view_be_written(executor):
    base = np.zeros(4, np.float32)
    with pytest.raises(LaunchError, match="read-only"):
        copy[(1,)](base, np.broadcast_to(base, (2, 4)), 4, B=4)


# --------------------------------------------------------------------------- expanded tensors

def test_expanded_tensor_read_as_contiguous_names_the_expansion(executor):
    torch = pytest.importorskip("torch")
    e = torch.arange(4.).expand(3, 4)  # strides (0, 1): a storage of 4 elements
    with pytest.raises(OutOfBoundsError, match=r"(?s)offsets \[4, 5, 6, 7, 8, 9, 10, 11\].*"
                       r"valid offsets are \[0, 3\].*`x` is an expanded tensor \(stride 0 in "
                       r"dimension\(s\) 0\).*\.contiguous\(\)"):
        copy[(1,)](e, torch.empty(16), 12, B=16)
    y = torch.empty(3, 4)
    with quiet():
        K.rows[(3,)](e, y, 0, C=4)  # read with its strides: fine
    assert y.tolist() == [[0., 1., 2., 3.]] * 3


def test_numpy_broadcast_is_expanded_too(executor):
    b = np.broadcast_to(np.arange(4, dtype=np.float32), (3, 4))
    with pytest.raises(OutOfBoundsError, match="expanded tensor"):
        copy[(1,)](b, np.zeros(16, np.float32), 12, B=16)


# --------------------------------------------------------------------------- stores, undo

def test_store_before_a_view_lands_in_the_storage(executor):
    base = np.zeros(9, np.float32)
    with pytest.warns(OutsideViewWarning, match="store outside the view"):
        shift_store[(1,)](base[1:], B=8)
    np.testing.assert_array_equal(base, np.r_[np.arange(8), 0].astype(np.float32))


def test_a_failing_launch_restores_the_storage_outside_the_view(executor):
    base = np.full(9, 5.0, np.float32)
    with pytest.warns(OutsideViewWarning), pytest.raises(OutOfBoundsError):
        store_then_fault[(1,)](base[1:], np.zeros(8, np.float32), B=8)
    assert (base == 5.0).all()


def test_bounds_off_drops_lanes_outside_the_storage_only(executor):
    base = np.arange(9, dtype=np.float32)
    y = np.full(8, -1.0, np.float32)
    K.prev[(1,)](base[:8], y, B=8, minitriton_settings=Settings(executor=executor, bounds=False))
    np.testing.assert_array_equal(y, np.r_[0, np.arange(7)].astype(np.float32))  # lane 0: 0


def test_uninitialized_poisons_the_view_not_its_storage(executor):
    base = np.arange(8, dtype=np.float32)
    y, x = base[:4], base[4:]
    copy[(1,)](x, y, 4, B=4, minitriton_settings=Settings(executor=executor,
                                                           uninitialized=("y",)))
    np.testing.assert_array_equal(base, [4, 5, 6, 7, 4, 5, 6, 7])


# --------------------------------------------------------------------------- data_ptr() carriers

class Strided:
    """A library's wrapper: a tensor with its own shape and strides, passed by data_ptr()."""

    def __init__(self, t, shape, strides, offset=0):
        self.t, self.shape, self.strides, self.offset = t, shape, strides, offset
        self.dtype = t.dtype

    def data_ptr(self):
        return self.t.data_ptr() + self.offset * self.t.element_size()

    def stride(self):
        return self.strides


def test_objects_with_data_ptr_pass_as_pointers(executor):
    torch = pytest.importorskip("torch")
    m = torch.arange(32.).reshape(4, 8)
    y = torch.empty(4, 4)
    with quiet():
        K.rows[(4,)](Strided(m, (4, 4), (8, 1), offset=2), y, 8, C=4)
    assert y.tolist() == m[:, 2:6].tolist()
    with pytest.raises(OutOfBoundsError, match=r"argument `x` \(Strided of fp32 at data_ptr"):
        K.rows[(4,)](Strided(m, (4, 4), (8, 1), offset=6), y, 8, C=4)  # past the storage
    out = torch.zeros(8)
    copy[(1,)](m, Strided(out, (8,), (1,)), 8, B=8)  # stores through a carrier reach `out`
    assert out.tolist() == list(range(8))


def test_reinterpret_wrapper_is_a_typed_pointer(executor):
    torch = pytest.importorskip("torch")
    if not hasattr(triton, "reinterpret"):
        pytest.skip("triton.reinterpret not in this minitriton")
    raw = torch.tensor([1.0, 2.0, -0.5, 448.0], dtype=torch.float8_e4m3fn).view(torch.uint8)
    y = torch.empty(4)

    with quiet():
        cast_copy[(1,)](triton.reinterpret(raw, tl.float8e4nv), y, B=4)
    assert y.tolist() == [1.0, 2.0, -0.5, 448.0]


@triton.jit
def cast_copy(x, y, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y + o, tl.load(x + o).to(tl.float32))
