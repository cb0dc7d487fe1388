"""`gluon.language.nvidia.hopper`: fences, warpgroup MMAs, mbarriers with transaction bytes, TMA.

`warpgroup_mma` is `tl.dot` (the tensor cores' numerics, language/dot.py) on operands read from
shared memory or registers; asynchronous ones are computed at once and handed back as an
accumulator token that only `warpgroup_mma_wait` turns back into a block, as in Gluon, where
the token cannot be used in arithmetic.
"""
from __future__ import annotations

from . import mbarrier, tma
from ... import _barriers, _layouts
from ......errors import AsyncRaceError, CompilationError
from ......language.arith import where
from ......language.core import is_tensor, tensor, to_tensor
from ......language.creation import zeros
from ......language.dot import dot
from ......types import _unwrap

__all__ = ["fence_async_shared", "mbarrier", "tma", "warpgroup_mma", "warpgroup_mma_init",
           "warpgroup_mma_wait", "warpgroup_mma_accumulator"]


def fence_async_shared(cluster=False):
    """Order this thread's shared-memory writes before later asynchronous reads (TMA, wgmma):
    the programs here run in order."""
    _unwrap(cluster)


class warpgroup_mma_accumulator:
    """An asynchronous warpgroup MMA's result, not usable until `warpgroup_mma_wait`;
    `order`: when it was issued (None: `warpgroup_mma_init`'s, nothing in flight)."""

    def __init__(self, value, order=None):
        self.value, self.order = value, order

    @property
    def type(self):
        return self.value.type

    def __repr__(self):
        return f"<warpgroup_mma_accumulator of {self.value!r}>"


def warpgroup_mma_init(value):
    value = _unwrap(value)
    if not is_tensor(value):
        raise CompilationError(f"warpgroup_mma_init: expected a tensor, got {value!r}")
    return warpgroup_mma_accumulator(value)


def _operand(x, name):
    if hasattr(x, "alloc"):  # a shared memory descriptor
        return tensor(x.read(f"warpgroup_mma operand {name}"), x.dtype, x.shape)
    if isinstance(x, warpgroup_mma_accumulator):
        raise CompilationError(f"warpgroup_mma: operand {name} is an asynchronous MMA's result; "
                               f"warpgroup_mma_wait for it first")
    x = to_tensor(x)
    if name == "b":
        raise CompilationError("warpgroup_mma: operand b must be in shared memory (a shared "
                               "memory descriptor)")
    return x


def _check_layouts(a, acc):
    """Hopper's wgmma: the accumulator's rows a multiple of a warp group's 64 (more warps than
    its rows need share the columns), and an A operand in registers in the DotOperandLayout
    of that accumulator."""
    acc_layout = acc.glayout
    if isinstance(acc_layout, _layouts.NVMMADistributedLayout) and acc.shape[0] % 64:
        raise CompilationError(
            f"warpgroup_mma: the accumulator has {acc.shape[0]} rows; a warp group's wgmma "
            f"computes 64 (m64nNk16): make BLOCK_M a multiple of 64")
    layout = getattr(a, "glayout", None)
    if hasattr(a, "alloc") or layout is None or isinstance(layout, _layouts.AutoLayout):
        return
    want = "a DotOperandLayout(operand_index=0, parent=the accumulator's layout)"
    if not isinstance(layout, _layouts.DotOperandLayout) or layout.operand_index != 0:
        raise CompilationError(f"warpgroup_mma: operand a in registers needs {want}, got "
                               f"{layout}")
    if acc_layout is not None and not isinstance(acc_layout, _layouts.AutoLayout) \
            and layout.parent != acc_layout:
        raise CompilationError(f"warpgroup_mma: operand a's DotOperandLayout has parent "
                               f"{layout.parent}, the accumulator's layout is {acc_layout}")


def warpgroup_mma(a, b, acc, *, use_acc=True, precision=None, max_num_imprecise_acc=None,
                  is_async=False):
    """acc = a @ b + (acc if use_acc else 0), the accumulator's layout kept."""
    a, b, acc = _unwrap(a), _unwrap(b), _unwrap(acc)
    start = acc.value if isinstance(acc, warpgroup_mma_accumulator) else to_tensor(acc)
    layout = start.glayout
    a_t, b_t = _operand(a, "a"), _operand(b, "b")
    _check_layouts(a, start)
    use = _unwrap(use_acc)
    if isinstance(use, bool) or not is_tensor(use):
        if not use:
            start = zeros(start.shape, start.dtype)
    else:
        start = where(use, start, zeros(start.shape, start.dtype))
    out = dot(a_t, b_t, start, input_precision=_unwrap(precision),
              max_num_imprecise_acc=_unwrap(max_num_imprecise_acc), out_dtype=start.dtype)
    out.glayout = layout  # the accumulator's, also where use_acc=False replaced it by zeros
    if not _unwrap(is_async):  # issued and waited for, with every MMA before it
        _barriers.retire("mma")
        return out
    order = _barriers.in_flight("mma", [x for x in (a, b) if hasattr(x, "alloc")])
    return warpgroup_mma_accumulator(out, order)


def warpgroup_mma_wait(num_outstanding=0, deps=None):
    """The MMAs have completed here: `deps` back as blocks (one dep: the block itself)."""
    if deps is None:
        raise ValueError("warpgroup_mma_wait deps must be given")
    outstanding = int(_unwrap(num_outstanding))
    still = _barriers.retire("mma", outstanding)
    for d in deps:
        if isinstance(d, warpgroup_mma_accumulator) and d.order in still:
            err = AsyncRaceError(
                f"warpgroup_mma_wait(num_outstanding={outstanding}) hands back the result of "
                f"an MMA that may still be in flight (one of the {outstanding} issued last): "
                f"lower num_outstanding, or wait for it later; on the GPU its registers are "
                f"still being written")
            err.failing_row = 0
            raise err
    values = [d.value if isinstance(d, warpgroup_mma_accumulator) else d for d in deps]
    return values[0] if len(values) == 1 else tuple(values)
