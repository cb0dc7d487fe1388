"""`async_copy` (Ampere's cp.async): element-wise asynchronous copies from global memory into
shared memory, in commit groups that `wait_group` retires, oldest first.

A copy lands at once here; until a `wait_group` has retired its group (or a wait on the
mbarrier that `mbarrier_arrive` tied it to has returned) no read or write of those elements is
safe, and doing one is an error (language/_barriers.py). Masked-off elements are filled with
zeros, as cp.async's zero-size source makes them.
"""
from __future__ import annotations

from ... import _barriers
from ......errors import CompilationError
from ......language import load as _tl_load
from ......language.core import is_tensor
from ......language.glayouts import joined_glayout
from ......types import _unwrap

__all__ = ["async_copy_global_to_shared", "mbarrier_arrive", "commit_group", "wait_group"]


def async_copy_global_to_shared(smem, pointer, mask=None, cache_modifier="", eviction_policy="",
                                volatile=False):
    mask = _unwrap(mask)
    joined_glayout([x for x in (pointer, mask) if is_tensor(x)], None)
    if list(smem.shape) != list(_unwrap(pointer).shape):
        raise CompilationError(f"expected smem shape to match pointer shape but got smem.shape "
                               f"= {smem.shape}, pointer.shape = {list(pointer.shape)}")
    _barriers.check_unread(smem, "async_copy.async_copy_global_to_shared")
    _barriers.check_unfilled(smem, "async_copy.async_copy_global_to_shared")
    block = _tl_load(pointer, mask, None if mask is None else 0, (), "", cache_modifier,
                     eviction_policy, volatile)
    smem.write(block.data)
    _barriers.copying(smem)


def commit_group():
    """The copies issued since the last commit form a group."""
    _barriers.commit_copies()


def wait_group(num_outstanding=0):
    """All but the `num_outstanding` most recently committed groups have landed."""
    _barriers.wait_copies(int(_unwrap(num_outstanding)))


def mbarrier_arrive(mbarrier, increment_count=True):
    """The barrier's phase waits for every copy issued so far; with increment_count=False
    their completion is also one of its arrivals."""
    _barriers.copies_arrive(mbarrier, bool(_unwrap(increment_count)))
