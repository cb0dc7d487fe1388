"""Gluon's own builtins: blocks made in a layout, and shared memory.

A Gluon kernel says where each block lives. minitriton holds every block whole, so a layout
changes no number; it is carried (`x.type.layout`) and checked where Gluon's compiler checks it
(language/glayouts.py). Shared memory is real here: `allocate_shared_memory`
gives each running program its own buffer, views of it (`index`, `slice`, `permute`,
`reshape`) share it, `load` and `store` move whole blocks, and the mbarriers and asynchronous
copies of nvidia/hopper work on it (they keep their state beside the buffer: `Allocation`).
"""
from __future__ import annotations

import numpy as np

from ....context import current
from ....errors import CompilationError, GPUFaultError
from ....language import creation
from ....language.core import is_tensor, tensor, to_tensor
from ....language.reduce import launch_num_warps
from ....types import _unwrap, dtype as _dtype
from . import _barriers, _layouts


def _layout(layout, want, what):
    layout = _unwrap(layout)
    if layout is not None and not isinstance(layout, want):
        raise CompilationError(f"expected '{what}' to be a {want.__name__} but got {layout}")
    return layout


def _laid_out(t, layout):
    t.glayout = _layouts.AutoLayout() if layout is None else layout
    return t


def arange(start, end, layout=None):
    """`tl.arange` in `layout` (a DistributedLayout; AutoLayout when None)."""
    layout = _layout(layout, _layouts.DistributedLayout, "layout")
    return _laid_out(creation.arange(start, end), layout)


def full(shape, value, dtype, layout=None):
    layout = _layout(layout, _layouts.DistributedLayout, "layout")
    out = creation.full(shape, value, dtype)
    return _laid_out(out, layout) if out.shape else out


def zeros(shape, dtype, layout=None):
    return full(shape, 0, dtype, layout)


def full_like(input, value, shape=None, dtype=None, layout=None):
    input = to_tensor(_unwrap(input))
    return full(input.shape if shape is None else shape, value,
                input.dtype if dtype is None else dtype,
                input.glayout if layout is None else layout)


def zeros_like(input, shape=None, dtype=None, layout=None):
    return full_like(input, 0, shape, dtype, layout)


def convert_layout(value, layout, assert_trivial=False):
    """The same block in another layout: on the GPU a shuffle through registers or shared
    memory, here the same numbers."""
    value = to_tensor(_unwrap(value))
    if not value.shape:
        raise CompilationError(f"expected convert_layout input to be a distributed_type but got: "
                               f"{value.dtype}")
    layout = _layout(layout, _layouts.DistributedLayout, "layout")
    out = type(value)(value.data, value.dtype, value.shape, value.origin)
    out.layout, out.glayout = value.layout, layout
    return out


def set_auto_layout(value, layout):
    value = to_tensor(_unwrap(value))
    if not isinstance(value.glayout, _layouts.AutoLayout):
        raise CompilationError(f"set_auto_layout input must have auto layout, but got "
                               f"{value.glayout}")
    return convert_layout(value, layout)


def thread_barrier():
    """`bar.sync` of the CTA: the programs here run their threads as one, in order."""


def num_warps():
    return launch_num_warps()


def num_ctas():
    return 1


class Allocation:
    """One program-private shared-memory buffer of the running programs: `data` (programs,
    elements). An mbarrier allocation also keeps, per barrier, its arrival count, pending
    arrivals, transaction bytes still expected, completed phases and the phases a wait has
    seen (`barriers`); a buffer an asynchronous copy fills keeps, until its barrier's phase has
    been waited for, which elements it is still filling (`filling`)."""

    def __init__(self, dtype, shape, data):
        self.dtype, self.shape, self.data = dtype, list(shape), data
        self.barriers = None
        self.filling = []  # [barrier view, completions it must have seen (programs,), mask]

    def view(self, layout):
        """The whole allocation, in `layout`."""
        return shared_memory_descriptor(
            self, np.arange(self.data.shape[1], dtype=np.int64).reshape(self.shape), layout)


class shared_memory_descriptor:
    """A view of an `Allocation`: the flat element numbers it covers, in its own shape."""

    def __init__(self, alloc, flat, layout):
        self.alloc, self.flat, self.layout = alloc, flat, layout

    @property
    def dtype(self):
        return self.alloc.dtype

    @property
    def shape(self):
        return list(self.flat.shape)

    @property
    def rank(self):
        return self.flat.ndim

    @property
    def numel(self):
        return int(self.flat.size)

    @property
    def type(self):
        return shared_memory_descriptor_type(self.dtype, self.shape, self.layout,
                                             self.alloc.shape)

    def __repr__(self):
        return f"<minitriton shared memory: {self.shape} of {self.dtype}>"

    def _view(self, flat):
        return shared_memory_descriptor(self.alloc, flat, self.layout)

    def read(self, what):
        """The view's elements, (programs, *shape): an error where an asynchronous copy may
        still be writing them."""
        _barriers.check_filled(self, what)
        return self.alloc.data[:, self.flat]

    def load(self, layout):
        layout = _layout(layout, _layouts.DistributedLayout, "layout")
        out = tensor(self.read("shared_memory_descriptor.load"), self.dtype, self.shape)
        out.glayout = layout
        return out

    def store(self, value):
        _barriers.check_unread(self, "shared_memory_descriptor.store")
        _barriers.check_unfilled(self, "shared_memory_descriptor.store")
        value = _unwrap(value)
        if not is_tensor(value):
            raise CompilationError(f"expected 'value' to be a tensor, but got a {type(value)}")
        if list(value.shape) != self.shape:
            raise CompilationError(f"source shape {value.shape} and destination shape "
                                   f"{self.shape} must match")
        if value.dtype != self.dtype:
            raise CompilationError(f"source dtype {value.dtype} and destination dtype "
                                   f"{self.dtype} must match")
        self.write(value.data)

    def write(self, data):
        """Every running program's block (1 or programs rows) into the view."""
        data = np.asarray(data)
        rows = self.alloc.data.shape[0]
        self.alloc.data[:, self.flat] = np.broadcast_to(data, (rows, *self.shape))

    def index(self, index):
        if not self.shape:
            raise CompilationError("cannot index a shared memory descriptor of rank 0")
        i = int(_unwrap(index))  # a value the programs disagree on regroups them (Divergence)
        if not 0 <= i < self.shape[0]:  # an address: a fault only where it is used
            return _outside(self, i)
        return self._view(self.flat[i])

    def slice(self, start, length, dim=0):
        start, length, dim = (int(_unwrap(v)) for v in (start, length, dim))
        if not 0 <= dim < self.rank or start < 0 or start + length > self.shape[dim]:
            raise CompilationError(f"slice [{start}, {start + length}) of dimension {dim} is "
                                   f"outside the shared memory descriptor's shape {self.shape}")
        cut = [slice(None)] * self.rank
        cut[dim] = slice(start, start + length)
        return self._view(self.flat[tuple(cut)])

    def permute(self, order):
        order = [int(_unwrap(o)) for o in _unwrap(order)]
        if sorted(order) != list(range(self.rank)):
            raise CompilationError(f"permute order {order} is not a permutation of the "
                                   f"descriptor's {self.rank} dimensions")
        return self._view(self.flat.transpose(order))

    def reshape(self, shape):
        shape = [int(_unwrap(s)) for s in _unwrap(shape)]
        if int(np.prod(shape)) != self.numel:
            raise CompilationError(f"cannot reshape a shared memory descriptor of shape "
                                   f"{self.shape} to {shape}")
        return self._view(self.flat.reshape(shape))

    def _reinterpret(self, dtype, shape, layout):
        """The same bytes as another element type, shape and layout (a buffer reused: Triton's
        tutorial 07 stores its epilogue in the B ring's slots). The view must be one
        contiguous run of its allocation, and the new one may run past it into the rest of the
        allocation (the next slots); hazards are watched per allocation, so the new view's
        are its own."""
        dtype, layout = _unwrap(dtype), _unwrap(layout)
        shape = [int(_unwrap(x)) for x in _unwrap(shape)]
        flat = self.flat.ravel()
        start = int(flat[0]) if flat.size else 0
        if not np.array_equal(flat, np.arange(start, start + flat.size)):
            raise CompilationError("_reinterpret: the view is not one contiguous run of its "
                                   "allocation")
        size = self.dtype.primitive_bitwidth // 8
        n_bytes = (self.alloc.data.shape[1] - start) * size  # to the allocation's end
        want = int(np.prod(shape, dtype=np.int64)) * (dtype.primitive_bitwidth // 8)
        if want > n_bytes:
            raise GPUFaultError(f"_reinterpret: {shape} of {dtype} is {want} bytes, more than "
                                f"the {n_bytes} from the view to its allocation's end")
        raw = self.alloc.data[:, start:].view(np.uint8)
        return Allocation(dtype, shape, raw[:, :want].view(dtype.np)).view(layout)

    def _keep_alive(self):
        pass


class shared_memory_descriptor_type:
    """The type of a shared-memory view: element type, shape, layout and the shape of the
    allocation it is a view of."""

    def __init__(self, element_ty, shape, layout, alloc_shape):
        self.element_ty, self.shape = element_ty, list(shape)
        self.layout, self.alloc_shape = layout, list(alloc_shape)

    def __eq__(self, other):
        return isinstance(other, shared_memory_descriptor_type) and (
            self.element_ty, self.shape, self.layout, self.alloc_shape) == (
            other.element_ty, other.shape, other.layout, other.alloc_shape)

    def __repr__(self):
        return f"shared_memory_descriptor<{self.element_ty}, {self.shape}, {self.layout}>"


def allocate_shared_memory(element_ty, shape, layout, value=None):
    """A buffer of `shape` in every running program's shared memory, zero-filled (the GPU's
    is whatever was there: nothing may read it before writing), or holding `value`."""
    element_ty, layout = _unwrap(element_ty), _unwrap(layout)
    if not isinstance(element_ty, _dtype):
        raise CompilationError(f"expected 'element_ty' to be a dtype but got {element_ty}")
    shape = [_unwrap(s) for s in _unwrap(shape)]
    if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in shape):
        raise CompilationError(f"all elements of 'shape' must be integers but got {shape}")
    layout = _layout(layout, _layouts.SharedLayout, "layout")
    if layout is None:
        raise CompilationError("expected 'layout' to be a SharedLayout but got None")
    data = np.zeros((len(current().pids), int(np.prod(shape, dtype=np.int64))), element_ty.np)
    view = Allocation(element_ty, shape, data).view(layout)
    if value is not None:
        view.store(value)
    return view


class _outside(shared_memory_descriptor):
    """`index(i)` past the descriptor's first dimension: a view whose every use is the GPU's
    out-of-bounds access (making it, like an address, is not; a predicated-off barrier
    operation on it neither)."""

    def __init__(self, parent, i):
        self.alloc, self.layout, self.parent, self.i = parent.alloc, parent.layout, parent, i

    shape = property(lambda self: self.parent.shape[1:])
    rank = property(lambda self: self.parent.rank - 1)
    numel = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @property
    def flat(self):
        err = GPUFaultError(f"index {self.i} is outside the shared memory descriptor's first "
                            f"dimension (shape {self.parent.shape}); on the GPU it reaches "
                            f"other shared memory")
        err.failing_row = 0
        raise err
