"""Gluon layouts, carried on blocks (`tensor.glayout`) and checked.

A Gluon kernel fixes each block's layout itself. Element-wise operations take blocks of one
layout and keep it (a layout-less scalar or an `AutoLayout` block takes the other's:
`broadcast_impl_value`; a `CoalescedLayout` one does not); a reduction along an axis gives `SliceLayout(axis, parent)` and
`x[:, None]` (expand_dims) needs such a slice and gives its parent back. minitriton holds
every block whole, so a layout changes no number: it is carried for `x.type.layout` and
checked where Gluon's compiler checks it. A block whose layout minitriton does not derive
(a permute, a reshape) has None, which takes the other operand's.
"""
from __future__ import annotations

import sys

from ..errors import CompilationError

_FREE_LAYOUTS = ("AutoLayout", "CoalescedLayout")  # what expand_dims and reductions pass on


def joined_glayout(operands, out):
    """The Gluon layout of an element-wise result: that of its block operands, which must
    agree (Gluon's "Layout mismatch in broadcast"), None where none has one."""
    found = None
    for a in operands:
        own = getattr(a, "glayout", None)
        if own is None or not a.shape or type(own).__name__ == "AutoLayout" and found:
            continue
        if found is None or type(found).__name__ == "AutoLayout":
            found = own
        elif own != found:
            raise CompilationError(f"Layout mismatch in broadcast: {found} vs {own} (a Gluon "
                                   f"kernel's element-wise operands need one layout: "
                                   f"gl.convert_layout one of them)")
    return found


def sliced_glayout(layout, axis):
    """The layout of a reduction along `axis` of a block in `layout`: `SliceLayout(axis,
    layout)`, made by the layout's own module (minitriton's Gluon package, above this one)."""
    if layout is None or type(layout).__name__ in _FREE_LAYOUTS:
        return layout
    return sys.modules[type(layout).__module__].SliceLayout(axis, layout)


def expanded_glayout(layout, axes):
    """The layout of `expand_dims` of a block in `layout` at `axes` (ascending): each must
    undo a slice along that axis, as Gluon's expand_dims requires."""
    for axis in axes:
        if layout is None or type(layout).__name__ in _FREE_LAYOUTS:
            return layout
        if type(layout).__name__ != "SliceLayout":
            raise CompilationError(f"expected expand_dims input to have a SliceLayout, but got: "
                                   f"{layout}")
        if layout.dim != axis:
            raise CompilationError(f"expected expand_dims input layout to be sliced in axis "
                                   f"{axis} but got {layout.dim}")
        layout = layout.parent
    return layout
