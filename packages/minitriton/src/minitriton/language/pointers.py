"""`tl.load` and `tl.store` on pointers and on block pointers."""
from __future__ import annotations

from ..context import current
from ..errors import CompilationError
from ..types import _unwrap
from .access import Lanes, check_mask, gather, poll, scatter
from .block_pointers import block_pointer
from .core import broadcast_to, cast, tensor_member, to_tensor


def validate_pointer(pointer, op):
    if isinstance(pointer, block_pointer):
        return pointer
    pointer = to_tensor(pointer)
    if not pointer.dtype.is_ptr():
        raise CompilationError(f"Unsupported ptr type {pointer.dtype!r} in `tl.{op}`: the first "
                               "argument must be a pointer (a tensor argument plus offsets)")
    if op != "load" and getattr(pointer.dtype, "const", False):
        raise CompilationError(f"Cannot store to a constant pointer (`tl.{op}` on an argument "
                               f"annotated `tl.const`)")
    return pointer


def load(pointer, mask=None, other=None, boundary_check=(), padding_option="",
         cache_modifier="", eviction_policy="", volatile=False):
    ctx = current()
    pointer = validate_pointer(_unwrap(pointer), "load")
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
        mask = check_mask(mask, shape)
    if other is not None:
        other = broadcast_to(cast(check_mask(other, shape, "Other"), pointer.dtype.element_ty),
                             shape)
    lanes = Lanes(ctx, pointer, mask, (other,) if other is not None else (), shared_ok=True)
    if not _unwrap(volatile):
        return gather(ctx, lanes, other)
    # a volatile load is how a program polls a flag another program sets: a spin on it is a
    # wait, as a spin on an atomic (access.poll), so the executors let the others run
    accesses = []
    out = gather(ctx, lanes, other, accesses=accesses)
    for acc in accesses:
        idx = acc.offsets().ravel()
        poll(ctx, acc.buf, idx, acc.buf.flat[idx].copy(), None)
    return out


@tensor_member
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    ctx = current()
    pointer = validate_pointer(_unwrap(pointer), "store")
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
        mask = check_mask(mask, shape)
    scatter(ctx, Lanes(ctx, pointer, mask, (value,)), value)
