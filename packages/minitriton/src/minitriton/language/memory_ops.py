"""`tl.load`, `tl.store`, the atomics, block pointers (`make_block_ptr`, `advance`) and tensor
descriptors (`make_tensor_descriptor`, host `TensorDescriptor` arguments, `desc.load/store`).

Every access goes through `AddressSpace.resolve`, which bounds-checks all active lanes before
anything is read or written, and through the launch record, which counts the active lanes.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompilationError, DeadlockError, GPUFaultError, MiniTritonError
from ..memory import count, offsets_array
from ..runtime.context import current
from . import dtypes as _t
from .arith import add as _add
from .core import broadcast_to, cast, expand_to_rank, is_tensor, tensor, to_tensor
from .dtypes import _unwrap


def _check_mask(mask, shape, what="Mask"):
    mask = to_tensor(mask)
    if not shape and mask.shape:
        raise CompilationError(f"{what} argument cannot be block type if pointer argument is not "
                               "a block")
    if what == "Mask" and not mask.dtype.is_bool():
        raise CompilationError("Mask must have boolean scalar type")
    return broadcast_to(mask, shape)


def _full(t, lanes, shape):
    return np.broadcast_to(expand_to_rank(t, len(shape)), (lanes, *shape))


class _Access:
    """Pointer addresses and active lanes for one memory operation, already broadcast.

    Every program of the group performs the access, even with a uniform pointer, so that
    traffic, atomics and sanitizers see one access per program. A load that is the same in
    every program (uniform pointer and mask) is done once and counted `repeat` times."""

    def __init__(self, ptr, mask, extra=(), shared_ok=False):
        ctx = current()
        self.shape = ptr.shape
        programs = len(ctx.pids)
        uniform = all(t.data.shape[0] == 1 for t in (ptr, mask, *extra) if t is not None)
        if shared_ok and uniform and ctx.sanitizer is None:
            self.lanes, self.repeat = 1, programs
        else:
            self.lanes, self.repeat = programs, 1
        self.ptr = tensor(_full(ptr, self.lanes, self.shape), ptr.dtype, self.shape, ptr.origin)
        self.active = None if mask is None else np.array(_full(mask, self.lanes, self.shape),
                                                         dtype=bool)
        self.elt = ptr.dtype.element_ty

    def groups(self, ctx, op):
        ctx.note_block(max(1, self.ptr.numel))
        return ctx.memory.resolve(self.ptr, self.active, op, ctx.settings.bounds)

    def full(self, lanes, idx):
        """(bool lane mask, offsets array) for the slow paths that need them explicitly."""
        if lanes is None:
            lanes = np.ones((self.lanes, *self.shape), dtype=bool)
        return lanes, offsets_array(idx)


def _validate_pointer(pointer, op):
    if isinstance(pointer, block_pointer):
        return pointer
    pointer = to_tensor(pointer)
    if not pointer.dtype.is_ptr():
        raise CompilationError(f"Unsupported ptr type {pointer.dtype!r} in `tl.{op}`: the first "
                               "argument must be a pointer (a tensor argument plus offsets)")
    return pointer


def load(pointer, mask=None, other=None, boundary_check=(), padding_option="",
         cache_modifier="", eviction_policy="", volatile=False):
    ctx = current()
    pointer = _validate_pointer(_unwrap(pointer), "load")
    mask, other = _unwrap(mask), _unwrap(other)
    if isinstance(pointer, block_pointer):
        if mask is not None or other is not None:
            raise CompilationError("`mask` and `other` arguments cannot be specified for loading "
                                   "block pointers")
        return pointer._load(ctx, boundary_check, padding_option)
    if _unwrap(padding_option):
        raise CompilationError("`padding_option` can only be used with block pointers")
    if mask is None and other is not None:
        raise CompilationError("`other` cannot be provided without `mask`")
    shape = pointer.shape
    if mask is not None:
        mask = _check_mask(mask, shape)
    if other is not None:
        other = broadcast_to(cast(_check_mask(other, shape, "Other"), pointer.dtype.element_ty),
                             shape)
    acc = _Access(pointer, mask, (other,) if other is not None else (), shared_ok=True)
    return _gather(ctx, acc, other, "load")


def _gather(ctx, acc, other, op):
    result = None
    if other is not None:
        result = np.array(_full(other, acc.lanes, acc.shape), dtype=acc.elt.np)
    read = None
    for buf, lanes, idx in acc.groups(ctx, op):
        if ctx.sanitizer is not None:
            ctx.sanitizer.on_read(buf, *acc.full(lanes, idx))
        values = buf.flat[idx]
        if lanes is None:
            result = values.reshape((acc.lanes, *acc.shape))
            if isinstance(idx, slice):
                result = result.copy()  # a load is a snapshot, not a view of memory
        else:
            if result is None:
                result = np.zeros((acc.lanes, *acc.shape), dtype=acc.elt.np)
            result[lanes] = values
        ctx.stats.count(buf, "load", count(idx) * acc.repeat)
        if ctx.settings.footprint:
            ctx.stats.touch(buf, "read", idx)
        if ctx.settings.padding:
            lane_mask = acc.full(lanes, idx)[0]
            read = lane_mask if read is None else read | lane_mask
    if result is None:
        result = np.zeros((acc.lanes, *acc.shape), dtype=acc.elt.np)
    out = tensor(result, acc.elt, acc.shape)
    if ctx.settings.padding and acc.shape:
        if read is None:
            read = np.zeros((acc.lanes, *acc.shape), bool)
        if not read.all():
            out.pad = ~read
    return out


def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    ctx = current()
    pointer = _validate_pointer(_unwrap(pointer), "store")
    value, mask = _unwrap(value), _unwrap(mask)
    if isinstance(pointer, block_pointer):
        if mask is not None:
            raise CompilationError("`mask` argument cannot be specified for storing block "
                                   "pointers")
        return pointer._store(ctx, value, boundary_check)
    shape = pointer.shape
    value = to_tensor(value)
    if not shape and value.shape:
        raise CompilationError("Value argument cannot be block type if pointer argument is not a "
                               "block")
    value = broadcast_to(cast(value, pointer.dtype.element_ty), shape)
    if mask is not None:
        mask = _check_mask(mask, shape)
    acc = _Access(pointer, mask, (value,))
    _scatter(ctx, acc, value)


def _scatter(ctx, acc, value):
    vals = np.broadcast_to(expand_to_rank(value, len(acc.shape)), (acc.lanes, *acc.shape))
    groups = acc.groups(ctx, "store")
    for buf, lanes, idx in groups:
        if ctx.sanitizer is not None:
            ctx.sanitizer.on_write(buf, *acc.full(lanes, idx))
        ctx.memory.before_write(buf, idx)
        buf.flat[idx] = vals.reshape(-1) if lanes is None else vals[lanes]
        ctx.stats.count(buf, "store", count(idx))
        if ctx.settings.footprint:
            ctx.stats.touch(buf, "write", idx)


# ----------------------------------------------------------------------------- atomics

def _rmw(op):
    def fn(old, val):
        if op == "add":
            return old + val
        if op == "max":
            return np.fmax(old, val) if old.dtype.kind in "fV" else np.maximum(old, val)
        if op == "min":
            return np.fmin(old, val) if old.dtype.kind in "fV" else np.minimum(old, val)
        if op == "and":
            return old & val
        if op == "or":
            return old | val
        if op == "xor":
            return old ^ val
        if op == "xchg":
            return val
        raise AssertionError(op)
    return fn


def _atomic_apply(buf, idx, vals, update):
    """Apply an RMW to every lane in lane order; return the value each lane saw."""
    flat = buf.flat
    _, first = np.unique(idx, return_index=True)
    with np.errstate(all="ignore"):
        if first.size == idx.size:
            old = flat[idx].copy()
            flat[idx] = update(old, vals).astype(flat.dtype)
            return old
        old = np.empty(idx.shape, dtype=flat.dtype)
        for i in range(idx.size):  # duplicates within one step: serialise, as the GPU does
            old[i] = flat[idx[i]]
            flat[idx[i]] = np.asarray(update(old[i:i + 1], vals[i:i + 1])).astype(flat.dtype)[0]
        return old


def _atomic(op, pointer, val, mask, sem, scope):
    ctx = current()
    pointer = _validate_pointer(_unwrap(pointer), f"atomic_{op}")
    if isinstance(pointer, block_pointer):
        raise CompilationError(f"tl.atomic_{op} does not take block pointers")
    _check_sem(sem, scope)
    elt = pointer.dtype.element_ty
    if elt.is_bool() or (op in ("and", "or", "xor") and not elt.is_int()):
        raise CompilationError(f"atomic_{op} does not support {elt}")
    shape = pointer.shape
    val = to_tensor(_unwrap(val))
    if not shape and val.shape:
        raise CompilationError("Value argument cannot be block type if pointer argument is not a "
                               "block")
    val = broadcast_to(cast(val, elt), shape)
    mask = _check_mask(_unwrap(mask), shape) if _unwrap(mask) is not None else None
    acc = _Access(pointer, mask, (val,))
    vals = np.broadcast_to(expand_to_rank(val, len(shape)), (acc.lanes, *shape))
    result = np.zeros((acc.lanes, *shape), dtype=elt.np)
    update = _rmw(op)
    for buf, lanes, idx in acc.groups(ctx, f"atomic_{op}"):
        lanes, idx = acc.full(lanes, idx)
        if ctx.sanitizer is not None:
            ctx.sanitizer.on_atomic(buf, lanes, idx)
        ctx.memory.before_write(buf, idx)
        compute = np.float32 if elt.is_floating() and elt.primitive_bitwidth < 32 else None
        v = vals[lanes] if compute is None else vals[lanes].astype(compute)
        upd = update if compute is None else (lambda o, x, u=update: u(o.astype(compute), x))
        result[lanes] = _atomic_apply(buf, idx.ravel(), v.ravel(), upd).reshape(idx.shape)
        ctx.stats.count(buf, "atomic", int(idx.size))
        if op == "xchg" and ctx.sanitizer is not None:
            ctx.sanitizer.on_xchg(buf, lanes, idx)
    return tensor(result, elt, shape)


def _check_sem(sem, scope):
    sem, scope = _unwrap(sem), _unwrap(scope)
    if sem not in (None, "acquire", "release", "acq_rel", "relaxed"):
        raise CompilationError(f"Memory semantic {sem} not supported")
    if scope not in (None, "gpu", "cta", "sys"):
        raise CompilationError(f"Memory scope {scope} not supported")


def _make_atomic(op):
    def fn(pointer, val, mask=None, sem=None, scope=None):
        return _atomic(op, pointer, val, mask, sem, scope)
    fn.__name__ = f"atomic_{op}"
    fn.__doc__ = f"Atomic {op}: returns the value each lane saw before its update."
    return fn


atomic_add = _make_atomic("add")
atomic_max = _make_atomic("max")
atomic_min = _make_atomic("min")
atomic_and = _make_atomic("and")
atomic_or = _make_atomic("or")
atomic_xor = _make_atomic("xor")
atomic_xchg = _make_atomic("xchg")


def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Compare-and-swap: where memory equals `cmp`, write `val`; returns the old value."""
    ctx = current()
    pointer = _validate_pointer(_unwrap(pointer), "atomic_cas")
    _check_sem(sem, scope)
    elt = pointer.dtype.element_ty
    if elt.primitive_bitwidth not in (16, 32, 64):
        raise CompilationError("atomic_cas only supports elements with width {16, 32, 64}")
    shape = pointer.shape
    cmp = broadcast_to(cast(to_tensor(_unwrap(cmp)), elt), shape)
    val = broadcast_to(cast(to_tensor(_unwrap(val)), elt), shape)
    acc = _Access(pointer, None, (cmp, val))
    c = np.broadcast_to(expand_to_rank(cmp, len(shape)), (acc.lanes, *shape))
    v = np.broadcast_to(expand_to_rank(val, len(shape)), (acc.lanes, *shape))
    result = np.zeros((acc.lanes, *shape), dtype=elt.np)
    for buf, lanes, idx in acc.groups(ctx, "atomic_cas"):
        lanes, idx = acc.full(lanes, idx)
        if ctx.sanitizer is not None:
            ctx.sanitizer.on_atomic(buf, lanes, idx)
        ctx.memory.before_write(buf, idx)
        flat_idx, cl, vl = idx.ravel(), c[lanes].ravel(), v[lanes].ravel()
        old = np.empty(flat_idx.shape, dtype=elt.np)
        for i in range(flat_idx.size):  # serialised: CAS order is what spin locks rely on
            old[i] = buf.flat[flat_idx[i]]
            if old[i] == cl[i]:
                buf.flat[flat_idx[i]] = vl[i]
        result[lanes] = old.reshape(idx.shape)
        ctx.stats.count(buf, "atomic", int(idx.size))
        if ctx.sanitizer is not None:
            ctx.sanitizer.on_cas(buf, lanes, flat_idx, old, cl, vl)
        _watch_spinning(ctx, buf, flat_idx, old, cl)
    return tensor(result, elt, shape)


SPIN_LIMIT = 10_000


def _watch_spinning(ctx, buf, idx, old, cmp):
    """Programs whose atomic_cas all keep failing wait for a program that cannot run while they
    spin (here the others run before or after them): report the deadlock instead of hanging."""
    key = (ctx.pids.tobytes(), buf.index, idx.tobytes())
    if np.any(old == cmp):
        ctx.spins.pop(key, None)
        return
    ctx.spins[key] = ctx.spins.get(key, 0) + 1
    if ctx.spins[key] >= SPIN_LIMIT:
        raise DeadlockError(
            f"atomic_cas on argument `{buf.name}` at offsets {idx.tolist()[:8]} failed "
            f"{SPIN_LIMIT:,} times in a row: this program spins on a lock that no program "
            "releases (a missing tl.atomic_xchg(lock, 0)?). On a GPU it would hang.")


# ----------------------------------------------------------------------------- block pointers

class block_pointer:
    """What `tl.make_block_ptr` returns: a base pointer plus a window on an N-d tensor."""

    _is_mt_tensor = True

    def __init__(self, base, shape, strides, offsets, block_shape, order):
        self.base, self.shape, self.strides = base, shape, strides
        self.offsets, self.block_shape, self.order = offsets, block_shape, order

    @property
    def dtype(self):
        return self.base.dtype

    @property
    def type(self):
        return _t.pointer_type(_t.block_type(self.base.dtype.element_ty, self.block_shape))

    def advance(self, offsets):
        return advance(self, offsets)

    def _indices(self):
        """Per-dimension element indices of the window, broadcastable to (L, *block_shape)."""
        rank = len(self.block_shape)
        out = []
        for d, (off, n) in enumerate(zip(self.offsets, self.block_shape)):
            view = [1] * rank
            view[d] = n
            lanes = off.data.shape[0]
            idx = off.data.astype(np.int64).reshape((lanes,) + (1,) * rank) + \
                np.arange(n, dtype=np.int64).reshape([1] + view)
            out.append(idx)
        return out

    def _access(self, boundary_check):
        return _Access(*self._pointers(boundary_check))

    def _pointers(self, boundary_check):
        """(addresses, mask or None) of the window, the mask from `boundary_check`."""
        checks = tuple(_unwrap(b) for b in (_unwrap(boundary_check) or ()))
        rank = len(self.block_shape)
        for b in checks:
            if not isinstance(b, int) or not 0 <= b < rank:
                raise CompilationError(f"boundary_check dimension {b!r} is out of range for a "
                                       f"block pointer of rank {rank}")
        idxs = self._indices()
        addr = self.base.data.reshape((-1,) + (1,) * rank).astype(np.int64)
        active = True
        for d, idx in enumerate(idxs):
            stride = self.strides[d].data.reshape((-1,) + (1,) * rank)
            addr = addr + idx * stride
            if d in checks:
                dim = self.shape[d].data.reshape((-1,) + (1,) * rank)
                active = active & (idx >= 0) & (idx < dim)
        lanes = addr.shape[0]
        if active is not True:
            lanes = max(lanes, active.shape[0])
        addr = np.broadcast_to(addr, (lanes, *self.block_shape))
        ptr = tensor(addr, self.base.dtype, self.block_shape, self.base.origin)
        mask = None if active is True else tensor(
            np.broadcast_to(active, (lanes, *self.block_shape)), _t.int1, self.block_shape)
        return ptr, mask

    def _load(self, ctx, boundary_check, padding_option):
        padding = _unwrap(padding_option) or ""
        if padding not in ("", "zero", "nan"):
            raise CompilationError(f"Padding option {padding} not supported")
        elt = self.base.dtype.element_ty
        if padding == "nan" and not elt.is_floating():
            raise CompilationError("Padding option `nan` is not supported for integer block "
                                   "pointers")
        acc = self._access(boundary_check)
        other = None
        if padding == "nan":
            other = tensor(np.full((1,), np.nan, dtype=elt.np), elt, [])
        return _gather(ctx, acc, other, "load")

    def _store(self, ctx, value, boundary_check):
        elt = self.base.dtype.element_ty
        value = broadcast_to(cast(to_tensor(value), elt), self.block_shape)
        acc = self._access(boundary_check)
        _scatter(ctx, acc, value)


def _int_list(values, what, dtype, op="make_block_ptr"):
    out = []
    for v in values:
        v = _unwrap(v)
        if is_tensor(v):
            if not v.dtype.is_int() or v.shape:
                raise CompilationError(f"{op}: {what} must be integer scalars")
            out.append(cast(v, dtype))
        elif isinstance(v, (int, np.integer)):
            out.append(to_tensor(int(v)) if dtype is None else cast(to_tensor(int(v)), dtype))
        else:
            raise CompilationError(f"{op}: {what} must be integers, got {v!r}")
    return out


def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    from .core import validate_block_shape
    base = to_tensor(_unwrap(base))
    if not base.dtype.is_ptr() or base.shape:
        raise CompilationError("Expected `base` to be a scalar pointer (a tensor argument)")
    shape, strides, offsets = (list(_unwrap(v)) for v in (shape, strides, offsets))
    block_shape = validate_block_shape(list(_unwrap(block_shape)))
    order = [int(_unwrap(o)) for o in _unwrap(order)]
    n = len(shape)
    if not (len(strides) == len(offsets) == len(block_shape) == n):
        raise CompilationError("Expected shape/strides/offsets/block_shape to have the same length")
    if sorted(order) != list(range(n)):
        raise CompilationError(f"Expected a permutation of (0, 1, ..., len(order)-1) in order, "
                               f"got {order}")
    return block_pointer(base, _int_list(shape, "shape", _t.int64),
                         _int_list(strides, "strides", _t.int64),
                         _int_list(offsets, "offsets", _t.int32), block_shape, order)


def advance(base, offsets):
    if not isinstance(base, block_pointer):
        raise CompilationError("tl.advance expects a block pointer made by tl.make_block_ptr")
    offsets = list(_unwrap(offsets))
    if len(offsets) != len(base.offsets):
        raise CompilationError(f"tl.advance: expected {len(base.offsets)} offsets, got "
                               f"{len(offsets)}")
    new = [_add(o, cast(to_tensor(_unwrap(d)), _t.int32)) for o, d in zip(base.offsets, offsets)]
    return block_pointer(base.base, base.shape, base.strides, new, base.block_shape, base.order)


# ----------------------------------------------------------------------------- tensor descriptors

class tensor_descriptor:
    """A TMA tensor descriptor inside a kernel: a base pointer, the tensor's shape and strides,
    and the block every load and store moves. What a host `TensorDescriptor` argument becomes,
    and what `tl.make_tensor_descriptor` returns. Like the hardware, loads fill the part of the
    block outside the tensor with zeros (or NaN) and stores drop it: no access is out of bounds
    unless the descriptor claims more than its tensor holds."""

    def __init__(self, base, shape, strides, block_shape, padding="zero"):
        self.base, self.shape, self.strides = base, shape, strides
        self.block_shape, self.padding = block_shape, padding

    @property
    def dtype(self):
        return self.base.dtype.element_ty

    @property
    def block_type(self):
        return _t.block_type(self.dtype, self.block_shape)

    def _window(self, offsets, op):
        offsets = list(_unwrap(offsets))
        if len(offsets) != len(self.block_shape):
            raise CompilationError(f"tensor descriptor {op}: expected {len(self.block_shape)} "
                                   f"offsets, but got {len(offsets)}")
        rank = len(self.block_shape)
        return block_pointer(self.base, self.shape, self.strides,
                             _int_list(offsets, "offsets", _t.int32, f"descriptor {op}"),
                             self.block_shape,
                             list(reversed(range(rank))))

    def load(self, offsets):
        return self._window(offsets, "load")._load(current(), range(len(self.block_shape)),
                                                   self.padding)

    def _value(self, value, op):
        value = to_tensor(_unwrap(value))
        if list(value.shape) != list(self.block_shape):
            raise CompilationError(f"tensor descriptor {op}: expected value shape "
                                   f"{list(self.block_shape)}, got {list(value.shape)}")
        return value

    def store(self, offsets, value):
        value = self._value(value, "store")  # cast to the descriptor's type, as Triton does
        self._window(offsets, "store")._store(current(), value, range(len(self.block_shape)))

    def _reduce(self, op, offsets, value):
        """TMA reductions: every element of the window inside the tensor is updated
        atomically; nothing is returned."""
        value = self._value(value, f"atomic_{op}")
        allowed = _DESCRIPTOR_ATOMIC_TYPES[op]
        if self.dtype.name not in allowed:
            raise CompilationError(f"tensor descriptor atomic_{op}: unsupported dtype "
                                   f"{self.dtype} (supported: {', '.join(sorted(allowed))})")
        if value.dtype != self.dtype:
            raise CompilationError(f"tensor descriptor atomic_{op}: the value is {value.dtype} "
                                   f"but the descriptor holds {self.dtype}; cast it with "
                                   f".to(desc.dtype)")
        window = self._window(offsets, f"atomic_{op}")
        self._check_reduce_offsets(window.offsets, op)
        ptr, mask = window._pointers(range(len(self.block_shape)))
        _atomic(op, ptr, value, mask, None, None)

    def _check_reduce_offsets(self, offsets, op):
        """On an H200 with Triton 3.6, a TMA reduction whose window starts at a negative offset,
        or at an inner (last-dimension) offset that is not a multiple of 16 bytes, stops the
        kernel with cudaErrorIllegalInstruction; windows past the end of the tensor are clipped
        and fine (probe of 2026-11-29, docs/limitations.md). Loads take any offset."""
        data = np.broadcast_arrays(*[np.atleast_1d(np.asarray(o.data, dtype=np.int64))
                                     for o in offsets])
        size = self.dtype.primitive_bitwidth // 8
        bad = np.zeros(data[0].shape, dtype=bool)
        for d in data:
            bad |= d < 0
        bad |= data[-1] * size % 16 != 0
        if not bad.any():
            return
        row = int(np.argmax(bad))
        at = [int(d[row]) for d in data]
        err = GPUFaultError(
            f"tensor descriptor atomic_{op} at offsets {at}: on the GPU, TMA reductions need "
            f"offsets >= 0 and a last offset that is a multiple of 16 bytes ({16 // size} "
            f"{self.dtype} elements); this one stops the kernel there with "
            f"cudaErrorIllegalInstruction. Align the window, or use tl.atomic_{op} on pointers")
        err.failing_row = row
        raise err


def _descriptor_atomic(op):
    def fn(self, offsets, value):
        self._reduce(op, offsets, value)
    fn.__name__ = f"atomic_{op}"
    fn.__doc__ = f"`desc.atomic_{op}(offsets, value)`: a TMA reduction into the window."
    return fn


for _op in ("add", "min", "max", "and", "or", "xor"):
    setattr(tensor_descriptor, f"atomic_{_op}", _descriptor_atomic(_op))

_BITWISE = {"uint32", "int32", "uint64", "int64"}
# the element types Triton 3.6 allows for each descriptor reduction (semantic.py)
_DESCRIPTOR_ATOMIC_TYPES = {"add": {"uint32", "int32", "uint64", "fp32", "fp16", "bf16"},
                            "min": _BITWISE | {"fp16", "bf16"}, "max": _BITWISE | {"fp16", "bf16"},
                            "and": _BITWISE, "or": _BITWISE, "xor": _BITWISE}


def load_tensor_descriptor(desc, offsets):
    return desc.load(offsets)


def store_tensor_descriptor(desc, offsets, value):
    return desc.store(offsets, value)


def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """`tl.make_tensor_descriptor`: a descriptor built inside the kernel (Triton's rules: 1 to 5
    dimensions, a contiguous last dimension, at least 16 bytes of it per block)."""
    from .core import validate_block_shape
    base = to_tensor(_unwrap(base))
    if not base.dtype.is_ptr() or base.shape:
        raise CompilationError("make_tensor_descriptor: base must be a scalar pointer (a tensor "
                               "argument)")
    shape, strides = list(_unwrap(shape)), list(_unwrap(strides))
    block_shape = validate_block_shape(list(_unwrap(block_shape)))
    n = len(shape)
    if not 1 <= n <= 5 or len(strides) != n or len(block_shape) != n:
        raise CompilationError(f"make_tensor_descriptor: shape, strides and block_shape need the "
                               f"same rank, 1 to 5 (got {n}, {len(strides)}, {len(block_shape)})")
    elem = base.dtype.element_ty.primitive_bitwidth // 8
    if block_shape[-1] * elem < 16:
        raise CompilationError(f"Descriptor block shape must have at least 16 bytes in the last "
                               f"dimension, but got {block_shape[-1]} * {elem} = "
                               f"{block_shape[-1] * elem} bytes")
    last = _unwrap(strides[-1])
    if not is_tensor(last) and int(last) != 1:
        raise CompilationError(f"Tensor descriptor last dim must be 1 but got {last}")
    for i, stride in enumerate(strides[:-1]):  # TMA: 16-byte aligned strides
        stride = _unwrap(stride)
        values = np.unique(stride.data) if is_tensor(stride) else [int(stride)]
        bad = [int(v) for v in values if int(v) * elem % 16]
        if bad:
            error = CompilationError if not is_tensor(stride) else MiniTritonError
            raise error(f"make_tensor_descriptor: stride {i} is {bad[0]} elements = "
                        f"{bad[0] * elem} bytes; TMA needs every stride but the last to be a "
                        f"multiple of 16 bytes (pad the rows, or use pointers)")
    padding = _unwrap(padding_option)
    if padding not in ("zero", "nan"):
        raise CompilationError(f"Illegal value for padding: {padding!r} (zero or nan)")
    op = "make_tensor_descriptor"
    return tensor_descriptor(base, _int_list(shape, "shape", _t.int32, op),
                             _int_list(strides, "strides", _t.int64, op), block_shape, padding)
